package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store runs the package's SQL functions on a pool.
type Store struct {
	Pool *pgxpool.Pool
	// CallTimeout is the client-side deadline of every call (0: none but the caller's).
	// The runner sets it to the statement timeout plus 5s, so a connection that stopped
	// answering (a half-open TCP session) fails the call instead of hanging the runner;
	// the connection's context watcher then sends a cancel request to the server.
	CallTimeout time.Duration
}

// New wraps a pool.
func New(pool *pgxpool.Pool) *Store { return &Store{Pool: pool} }

// bound gives one call its deadline.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.CallTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.CallTimeout)
}

func (s *Store) jsonCall(ctx context.Context, what, sql string, args ...any) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var raw []byte
	if err := s.Pool.QueryRow(ctx, sql, args...).Scan(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return json.RawMessage(raw), nil
}

// RunWorker runs one pass of a route worker.
func (s *Store) RunWorker(ctx context.Context, worker string, batch int) (WorkerRun, error) {
	raw, err := s.jsonCall(ctx, fmt.Sprintf("running fn_iu_route_worker_run(%q, %d)", worker, batch),
		"SELECT public.fn_iu_route_worker_run($1::pg_catalog.text, $2::pg_catalog.int4)::pg_catalog.text", worker, batch)
	if err != nil {
		return WorkerRun{}, err
	}
	return ParseWorkerRun(raw)
}

// StaleCheck runs fn_queue_stale_check().
func (s *Store) StaleCheck(ctx context.Context) (StaleCheck, error) {
	raw, err := s.jsonCall(ctx, "running fn_queue_stale_check()", "SELECT public.fn_queue_stale_check()::pg_catalog.text")
	if err != nil {
		return StaleCheck{}, err
	}
	return ParseStaleCheck(raw)
}

// ReapLeases runs fn_job_reap_expired_leases().
func (s *Store) ReapLeases(ctx context.Context) (Reap, error) {
	raw, err := s.jsonCall(ctx, "running fn_job_reap_expired_leases()", "SELECT public.fn_job_reap_expired_leases()::pg_catalog.text")
	if err != nil {
		return Reap{}, err
	}
	return ParseReap(raw)
}

// PruneJobs runs fn_job_prune(): finished jobs past queue.job.retention_seconds, one
// bounded batch.
func (s *Store) PruneJobs(ctx context.Context) (json.RawMessage, error) {
	return s.jsonCall(ctx, "running fn_job_prune()", "SELECT public.fn_job_prune()::pg_catalog.text")
}

// MaintainPartitions runs fn_iu_partition_maintain(): history partitions of event_outbox
// and iu_route_attempt created ahead of the txids in use, rows in the default partitions
// made a partition of their own, closes recorded. Idempotent; a concurrent call returns
// {"busy": true} naming the holder, and a call that could not have its locks says so
// (lock_timeout): neither is an error.
func (s *Store) MaintainPartitions(ctx context.Context) (PartitionMaintenance, error) {
	raw, err := s.jsonCall(ctx, "running fn_iu_partition_maintain()", "SELECT public.fn_iu_partition_maintain()::pg_catalog.text")
	if err != nil {
		return PartitionMaintenance{}, err
	}
	return ParsePartitionMaintenance(raw)
}

// RunRetention runs fn_iu_retention_run(false): history partitions past their retention
// that every route worker has passed are dropped (workflow_admin). A run that cannot have
// its locks answers busy or lock_timeout and drops nothing.
func (s *Store) RunRetention(ctx context.Context) (RetentionRun, error) {
	raw, err := s.jsonCall(ctx, "running fn_iu_retention_run(false)", "SELECT public.fn_iu_retention_run(false)::pg_catalog.text")
	if err != nil {
		return RetentionRun{}, err
	}
	return ParseRetentionRun(raw)
}

// RunnerBeat writes the runner's own heartbeat through fn_queue_runner_beat: the row of
// executorID, bound to the runner's login and held by one runner process (instance, a uuid
// drawn once per process) at a time; release hands it back (a clean stop, a tick's one
// beat). Status is ok, warn or error; metadata must pass the payload-hygiene check (no
// body, content, raw, secret... keys). A row another live runner holds is answered Held,
// not an error: the caller is that runner's standby.
func (s *Store) RunnerBeat(ctx context.Context, executorID, instance, status string, metadata map[string]any, release bool) (RunnerBeat, error) {
	md, err := json.Marshal(metadata)
	if err != nil {
		return RunnerBeat{}, fmt.Errorf("encoding heartbeat metadata: %w", err)
	}
	raw, err := s.jsonCall(ctx, fmt.Sprintf("writing the runner heartbeat of %q via fn_queue_runner_beat", executorID),
		"SELECT public.fn_queue_runner_beat($1::pg_catalog.text, $2::pg_catalog.uuid, $3::pg_catalog.text, $4::pg_catalog.text::pg_catalog.jsonb, $5::pg_catalog.bool)::pg_catalog.text",
		executorID, instance, status, string(md), release)
	if err != nil {
		return RunnerBeat{}, err
	}
	return ParseRunnerBeat(raw)
}

// ErrCall marks an error of a database call (as opposed to an answer the caller refuses).
var ErrCall = errors.New("database call failed")

// BatchLimits is what one fn_iu_route_worker_run call accepts (fn_iu_route_worker_batch_limits).
type BatchLimits struct {
	MinBatch     int `json:"min_batch"`
	MaxBatch     int `json:"max_batch"`
	DefaultBatch int `json:"default_batch"`
}

// BatchLimits reads the batch bound and default from the SQL, where they are written.
func (s *Store) BatchLimits(ctx context.Context) (BatchLimits, error) {
	raw, err := s.jsonCall(ctx, "reading fn_iu_route_worker_batch_limits()", "SELECT public.fn_iu_route_worker_batch_limits()::pg_catalog.text")
	if err != nil {
		return BatchLimits{}, fmt.Errorf("%w: %w", ErrCall, err)
	}
	var l BatchLimits
	if err := decode("fn_iu_route_worker_batch_limits() result", raw, &l, lenient); err != nil {
		return BatchLimits{}, err
	}
	return l, nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var one int
	if err := s.Pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("pinging database: %w", err)
	}
	return nil
}

// DatabaseName returns current_database().
func (s *Store) DatabaseName(ctx context.Context) (string, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var name string
	if err := s.Pool.QueryRow(ctx, "SELECT pg_catalog.current_database()").Scan(&name); err != nil {
		return "", fmt.Errorf("reading current_database(): %w", err)
	}
	return name, nil
}

// QueueHealth reads v_queue_health.
func (s *Store) QueueHealth(ctx context.Context) ([]QueueHealthRow, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return LoadQueueHealth(ctx, s.Pool)
}
