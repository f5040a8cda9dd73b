package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueHealthRow is one row of v_queue_health, column for column in the view's order.
// It is scanned by name (pgx.RowToStructByName): a column the view adds, renames or drops
// and this struct does not match is an error, never a value silently read as empty.
//
// Which columns are set depends on source:
//
//	cursor             one route worker: counters, backlog; status_hint never_run | backlog | caught_up
//	heartbeat          one executor: age, gap_ratio, threshold, kind; status_hint fresh | stale | paused,
//	                   severity warning | critical while stale
//	dead_letter_event  open route dead letters of one event domain: count in dead_lettered; status_hint open
//	dead_letter_job    open job dead letters of one job kind: count in dead_lettered; status_hint open
//	backlog_job_queue  queued jobs of one (kind, domain): count in events_seen and backlog; status_hint queued
//	job_kind_paused    a paused job kind: its queued jobs in backlog; status_hint paused
//	history            the history partitions (one row): status_hint ok | lock_held (a session holds the
//	                   partition-maintenance lock; age_seconds is how long its transaction has run and
//	                   detail.maintenance_lock_holder names it) | default_rows (rows in a default
//	                   partition, counted in backlog)
//
// Detail is a JSON object whose keys depend on the source; the runner passes it through
// to `health --json` and reads nothing from it.
type QueueHealthRow struct {
	Source                  string          `db:"source" json:"source"`
	Subject                 string          `db:"subject" json:"subject"`
	Domain                  *string         `db:"domain" json:"domain"`
	LastSeenAt              *time.Time      `db:"last_seen_at" json:"last_seen_at"`
	AgeSeconds              *int64          `db:"age_seconds" json:"age_seconds"`
	EventsSeen              *int64          `db:"events_seen" json:"events_seen"`
	AttemptsWritten         *int64          `db:"attempts_written" json:"attempts_written"`
	DeadLettered            *int64          `db:"dead_lettered" json:"dead_lettered"`
	StatusHint              string          `db:"status_hint" json:"status_hint"`
	Backlog                 *int64          `db:"backlog" json:"backlog"`
	OldestPendingAgeSeconds *int64          `db:"oldest_pending_age_seconds" json:"oldest_pending_age_seconds"`
	Severity                *string         `db:"severity" json:"severity"`
	Paused                  *bool           `db:"paused" json:"paused"`
	GapRatio                *float64        `db:"gap_ratio" json:"gap_ratio"`
	StaleThresholdSeconds   *int64          `db:"stale_threshold_seconds" json:"stale_threshold_seconds"`
	ExecutorKind            *string         `db:"executor_kind" json:"executor_kind"`
	Detail                  json.RawMessage `db:"detail" json:"detail"`
}

// Sources of v_queue_health rows.
const (
	SourceCursor          = "cursor"
	SourceHeartbeat       = "heartbeat"
	SourceDeadLetterEvent = "dead_letter_event"
	SourceDeadLetterJob   = "dead_letter_job"
	SourceBacklogJobQueue = "backlog_job_queue"
	SourceJobKindPaused   = "job_kind_paused"
	SourceHistory         = "history"
)

// Querier is what LoadQueueHealth needs (a pool, a connection or a transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LoadQueueHealth reads the whole view, in the view's row order.
func LoadQueueHealth(ctx context.Context, q Querier) ([]QueueHealthRow, error) {
	rows, err := q.Query(ctx, "SELECT * FROM public.v_queue_health")
	if err != nil {
		return nil, fmt.Errorf("reading v_queue_health: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[QueueHealthRow])
	if err != nil {
		return nil, fmt.Errorf("reading v_queue_health: %w", err)
	}
	return out, nil
}

// CursorDetail is the detail document of a cursor row of v_queue_health: what the runner
// reads of it (the rest passes through to health --json).
type CursorDetail struct {
	GatesOpen     *bool `json:"gates_open"`
	BacklogCapped *bool `json:"backlog_capped"`
	// GatedWaitingSeconds is how long a closed gate has kept events waiting (null when the
	// gates are open or nothing waits; status_hint is then not gated).
	GatedWaitingSeconds *int64 `json:"gated_waiting_seconds"`
	// LockHeldBy names the sessions holding the worker's lock right now (empty: nobody).
	LockHeldBy []LockHolder `json:"lock_held_by"`
}

// Cursor reads the detail of a cursor row (the zero value for other rows or no detail).
func (r QueueHealthRow) Cursor() (CursorDetail, error) {
	return rowDetail[CursorDetail](r, SourceCursor, "v_queue_health cursor detail")
}

// rowDetail decodes the detail document of a row of the given source, leniently (the zero
// value for rows of other sources, or with no detail).
func rowDetail[T any](r QueueHealthRow, source, what string) (T, error) {
	var d T
	if r.Source != source || len(r.Detail) == 0 || string(r.Detail) == "null" {
		return d, nil
	}
	if err := decode(what, r.Detail, &d, lenient); err != nil {
		var zero T
		return zero, err
	}
	return d, nil
}

// HeartbeatDetail is the detail document of a heartbeat row of v_queue_health, present when
// the row needs explaining (paused, alerted, or a status other than ok): what the runner
// reads of it (the rest passes through to health --json).
type HeartbeatDetail struct {
	// PausedSeconds is how long the executor has been paused (null when it is not).
	PausedSeconds *int64 `json:"paused_seconds"`
}

// Heartbeat reads the detail of a heartbeat row (the zero value for other rows or no detail).
func (r QueueHealthRow) Heartbeat() (HeartbeatDetail, error) {
	return rowDetail[HeartbeatDetail](r, SourceHeartbeat, "v_queue_health heartbeat detail")
}
