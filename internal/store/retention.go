package store

import "encoding/json"

// RetentionRun is what fn_iu_retention_run(false) returns. Two shapes:
//
//	busy   another session holds the partition-maintenance lock (waited for 2 s): nothing
//	       was decided or dropped; holder names that session when it could be read
//	done   the run decided: dropped lists the partitions that went (with their ranges and
//	       row counts), kept why each other one stays
//
// A done run that could not have the tables' locks at once dropped nothing: lock_timeout,
// with blocked_by naming who held them and the partitions it meant to drop kept with reason
// lock_timeout. more says it stopped at its per-run bound and the next run goes on.
type RetentionRun struct {
	Busy        bool                `json:"busy"`
	Holder      *HistoryLockHolder  `json:"holder,omitempty"`
	DryRun      bool                `json:"dry_run"`
	Dropped     []RetentionDrop     `json:"dropped"`
	Kept        []RetentionKept     `json:"kept"`
	LockTimeout bool                `json:"lock_timeout"`
	BlockedBy   []HistoryLockHolder `json:"blocked_by,omitempty"`
	More        bool                `json:"more"`
	Retention   RetentionSettings   `json:"retention"`
	Raw         json.RawMessage     `json:"-"` // the document as the SQL returned it
}

// RetentionDrop is one partition a run dropped (or, dry, would drop).
type RetentionDrop struct {
	Table     string  `json:"table"`
	Partition string  `json:"partition"`
	LowerTxid *string `json:"lower_txid"`
	UpperTxid string  `json:"upper_txid"`
	Rows      int64   `json:"rows"`
	ClosedAt  *string `json:"closed_at"`
}

// RetentionKept is one partition a run kept, and why (retention_not_configured, not_closed,
// younger_than_retention, cursor_not_passed with the workers behind, events_still_kept,
// open_dead_letter, next_run, lock_timeout).
type RetentionKept struct {
	Table     string   `json:"table"`
	Partition string   `json:"partition"`
	Reason    string   `json:"reason"`
	Workers   []string `json:"workers,omitempty"`
}

// RetentionSettings echoes the retention keys the run read (nil: keep forever).
type RetentionSettings struct {
	EventOutboxDays  *int64 `json:"event_outbox_days"`
	RouteAttemptDays *int64 `json:"route_attempt_days"`
}

func (r RetentionRun) contractShape() string {
	if r.Busy {
		return "busy"
	}
	return "done"
}

// Outcome names the answer for logs and metrics: busy, lock_timeout (nothing dropped this
// run), or ok.
func (r RetentionRun) Outcome() string {
	switch {
	case r.Busy:
		return "busy"
	case r.LockTimeout:
		return "lock_timeout"
	}
	return "ok"
}

// ParseRetentionRun reads a retention result (missing keys fail, unknown keys are ignored).
func ParseRetentionRun(raw []byte) (RetentionRun, error) {
	return parseRetentionRun(raw, lenient)
}

func parseRetentionRun(raw []byte, strictKeys bool) (RetentionRun, error) {
	var r RetentionRun
	if err := decode("fn_iu_retention_run() result", raw, &r, strictKeys); err != nil {
		return RetentionRun{}, err
	}
	r.Raw = append(json.RawMessage(nil), raw...)
	return r, nil
}
