package service

import (
	"context"
	"errors"
	"log/slog"

	"github.com/iu-core/event-worker/internal/store"
)

// The history partitions: what the runner says about fn_iu_partition_maintain and
// fn_iu_retention_run answers. A call that could not take its lock is not an error (the SQL
// answers busy or lock_timeout and the next call tries again), so the runner must say so
// itself: at WARN, naming who held the lock, and in iu_runner_partition_maintenance_total /
// iu_runner_retention_runs_total by outcome.

// holderAttrs are the log attributes naming a lock holder (prefix "holder" or "blocked_by").
func holderAttrs(prefix string, h *store.HistoryLockHolder) []any {
	if h == nil {
		return []any{prefix, "unknown (not visible to the function owner)"}
	}
	a := []any{}
	if h.Pid != nil {
		a = append(a, prefix+"_pid", *h.Pid)
	}
	if h.PreparedGID != nil {
		a = append(a, prefix+"_prepared_gid", *h.PreparedGID)
	}
	if h.Login != nil {
		a = append(a, prefix+"_login", *h.Login)
	}
	if h.ApplicationName != nil && *h.ApplicationName != "" {
		a = append(a, prefix+"_application_name", *h.ApplicationName)
	}
	if h.Relation != nil {
		a = append(a, prefix+"_relation", *h.Relation)
	}
	if h.XactAgeSeconds != nil {
		a = append(a, prefix+"_xact_age_seconds", *h.XactAgeSeconds)
	}
	return a
}

// firstBlocker is the first session a lock_timeout answer names (nil: none read).
func firstBlocker(b []store.HistoryLockHolder) *store.HistoryLockHolder {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}

// LogMaintenance reports a partition maintenance answer at the level it deserves. WARN:
// the call could not take its lock (busy: the holder is named; lock_timeout: the first
// session that held a table's lock is named), or lost a race, or rows sit in a default
// partition it could not turn into a partition (they are routed, but no partition is
// dropped while they are there). INFO: partitions created, or rows of the default
// partitions made a partition of their own. DEBUG otherwise.
func LogMaintenance(log *slog.Logger, res store.PartitionMaintenance) {
	const runbook = "runbooks/retention.md"
	switch res.Outcome() {
	case "busy":
		log.Warn("partition maintenance could not take its lock: another session holds it (nothing done; the next call tries again)",
			append(holderAttrs("holder", res.Holder), "runbook", runbook)...)
		return
	case "lock_timeout":
		log.Warn("partition maintenance could not take the history tables' locks at once (nothing changed; the next call tries again)",
			append(holderAttrs("blocked_by", firstBlocker(res.BlockedBy)), "ahead_txids", res.AheadTxids, "runbook", runbook)...)
	case "raced":
		log.Warn("partition maintenance lost a race with the txids in use (nothing changed; the next call takes the locked way)",
			"ahead_txids", res.AheadTxids)
	case "error":
		log.Warn("partition maintenance failed on a lock or a race (nothing changed; the next call tries again)",
			"sqlstate", res.Error.SQLState, "error", res.Error.Message)
	}
	switch {
	case res.DefaultRowsLeft():
		log.Warn("partition maintenance: rows in the default partitions (maintenance fell behind; the next call makes them a partition)",
			"event_outbox", res.DefaultRows.EventOutbox, "iu_route_attempt", res.DefaultRows.IuRouteAttempt,
			"default_stuck", res.DefaultStuck, "ahead_txids", res.AheadTxids, "runbook", runbook)
	case len(res.DefaultAttached) > 0:
		log.Info("partition maintenance caught up: the default partitions' rows are a partition of their own",
			"default_attached", res.DefaultAttached, "created", res.Created, "ahead_txids", res.AheadTxids)
	case len(res.Created) > 0 || len(res.Recut) > 0:
		log.Info("partition maintenance: partitions created", "created", res.Created, "recut", res.Recut, "ahead_txids", res.AheadTxids)
	case res.Outcome() == "ok":
		log.Debug("partition maintenance", "result", string(res.Raw))
	}
}

// LogRetention reports a retention answer: WARN when it could not take its lock (busy,
// holder named) or the tables' locks (lock_timeout, the first holder named; nothing was
// dropped), INFO for what it dropped, DEBUG otherwise.
func LogRetention(log *slog.Logger, res store.RetentionRun) {
	switch res.Outcome() {
	case "busy":
		log.Warn("retention could not take the partition-maintenance lock: another session holds it (nothing dropped; the next run tries again)",
			append(holderAttrs("holder", res.Holder), "runbook", "runbooks/retention.md")...)
		return
	case "lock_timeout":
		log.Warn("retention could not take the history tables' locks at once (nothing dropped; the next run tries again)",
			append(holderAttrs("blocked_by", firstBlocker(res.BlockedBy)), "runbook", "runbooks/retention.md")...)
		return
	}
	if len(res.Dropped) > 0 {
		names := make([]string, 0, len(res.Dropped))
		for _, d := range res.Dropped {
			names = append(names, d.Partition)
		}
		log.Info("retention dropped history partitions", "dropped", names, "more", res.More)
		return
	}
	log.Debug("retention", "result", string(res.Raw))
}

// observeMaintenance counts, logs and exports one maintenance call.
func (s *Service) observeMaintenance(res store.PartitionMaintenance, err error) {
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.m.PartitionMaintenance.WithLabelValues("failed").Inc()
		}
		s.dbError("partitions", err)
		return
	}
	s.m.PartitionMaintenance.WithLabelValues(res.Outcome()).Inc()
	if res.DefaultRows != nil {
		s.m.PartitionDefaultRows.WithLabelValues("event_outbox").Set(float64(res.DefaultRows.EventOutbox))
		s.m.PartitionDefaultRows.WithLabelValues("iu_route_attempt").Set(float64(res.DefaultRows.IuRouteAttempt))
	}
	if !res.Busy {
		s.m.PartitionAheadTxids.Set(float64(res.AheadTxids))
	}
	LogMaintenance(s.log, res)
}

// observeRetention counts, logs and exports one retention run.
func (s *Service) observeRetention(res store.RetentionRun, err error) {
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.m.RetentionRuns.WithLabelValues("failed").Inc()
		}
		s.dbError("retention", err)
		return
	}
	s.m.RetentionRuns.WithLabelValues(res.Outcome()).Inc()
	for _, d := range res.Dropped {
		s.m.RetentionDropped.WithLabelValues(d.Table).Inc()
	}
	LogRetention(s.log, res)
}
