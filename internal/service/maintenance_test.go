package service

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/store"
)

func ptr[T any](v T) *T { return &v }

// sample is the value of one sample of a counter or gauge family (labels: name=value pairs).
func sample(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	if v := counter(t, m, name, labels...); v != 0 {
		return v
	}
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue samples
				}
			}
			return s.GetGauge().GetValue()
		}
	}
	return 0
}

// Rule: a maintenance call that could not take its lock (busy: another session holds the
// partition-maintenance lock; lock_timeout: the tables' locks were not free) is a WARN line
// that names the holder (pid, login), not a debug line nobody reads; so are a lost race and
// rows left in a default partition. Created partitions and caught-up defaults are INFO, a
// quiet call DEBUG.
func TestLogMaintenance_LevelsAndTheHolder(t *testing.T) {
	holder := &store.HistoryLockHolder{Pid: ptr[int64](4242), Login: ptr("mallory"), ApplicationName: ptr("psql")}
	for _, c := range []struct {
		name string
		res  store.PartitionMaintenance
		want []string
	}{
		{"busy", store.PartitionMaintenance{Busy: true, Holder: holder}, []string{"level=WARN", "holder_pid=4242", "holder_login=mallory"}},
		{"busy, holder not visible", store.PartitionMaintenance{Busy: true}, []string{"level=WARN", `holder="unknown`}},
		{"lock_timeout", store.PartitionMaintenance{LockTimeout: true, BlockedBy: []store.HistoryLockHolder{*holder}, DefaultRows: &store.DefaultPartitions{}},
			[]string{"level=WARN", "blocked_by_pid=4242", "blocked_by_login=mallory"}},
		{"raced", store.PartitionMaintenance{DefaultRaced: true, DefaultRows: &store.DefaultPartitions{}}, []string{"level=WARN"}},
		{"error", store.PartitionMaintenance{Error: &store.SQLFailure{SQLState: "40P01", Message: "deadlock"}, DefaultRows: &store.DefaultPartitions{}},
			[]string{"level=WARN", "sqlstate=40P01"}},
		{"behind", store.PartitionMaintenance{DefaultRows: &store.DefaultPartitions{EventOutbox: 3}}, []string{"level=WARN", "event_outbox=3"}},
		{"caught up", store.PartitionMaintenance{DefaultAttached: []string{"event_outbox_p1"}, DefaultRows: &store.DefaultPartitions{}}, []string{"level=INFO"}},
		{"created", store.PartitionMaintenance{Created: []string{"event_outbox_p1"}, DefaultRows: &store.DefaultPartitions{}}, []string{"level=INFO"}},
		{"quiet", store.PartitionMaintenance{DefaultRows: &store.DefaultPartitions{}}, []string{"level=DEBUG"}},
	} {
		var buf bytes.Buffer
		LogMaintenance(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), c.res)
		for _, w := range c.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: want %q in %q", c.name, w, buf.String())
			}
		}
		if !strings.Contains(strings.Join(c.want, " "), "WARN") && strings.Contains(buf.String(), "level=WARN") {
			t.Errorf("%s: no WARN wanted, got %q", c.name, buf.String())
		}
	}
}

// Rule: retention that cannot take its lock says so at WARN, naming the holder; what it
// dropped is INFO.
func TestLogRetention_LevelsAndTheHolder(t *testing.T) {
	holder := &store.HistoryLockHolder{Pid: ptr[int64](77), Login: ptr("exe")}
	for _, c := range []struct {
		name string
		res  store.RetentionRun
		want []string
	}{
		{"busy", store.RetentionRun{Busy: true, LockTimeout: true, Holder: holder}, []string{"level=WARN", "holder_pid=77", "holder_login=exe"}},
		{"lock_timeout", store.RetentionRun{LockTimeout: true, BlockedBy: []store.HistoryLockHolder{*holder}}, []string{"level=WARN", "blocked_by_pid=77"}},
		{"dropped", store.RetentionRun{Dropped: []store.RetentionDrop{{Table: "event_outbox", Partition: "event_outbox_p1"}}}, []string{"level=INFO", "event_outbox_p1"}},
	} {
		var buf bytes.Buffer
		LogRetention(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), c.res)
		for _, w := range c.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: want %q in %q", c.name, w, buf.String())
			}
		}
	}
}

// Rule: every maintenance and retention outcome is counted in a metric by outcome (busy
// and lock_timeout included: they are answers, not errors), a failed call as failed; the
// default rows and the room ahead are gauges.
func TestObserveMaintenance_Metrics(t *testing.T) {
	m := metrics.New()
	s := &Service{log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), m: m, out: newOutage(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), DefaultRetryMin, DefaultRetryMax)}
	s.observeMaintenance(store.PartitionMaintenance{Busy: true}, nil)
	s.observeMaintenance(store.PartitionMaintenance{LockTimeout: true, AheadTxids: 7, DefaultRows: &store.DefaultPartitions{EventOutbox: 5}}, nil)
	s.observeMaintenance(store.PartitionMaintenance{}, errors.New("boom"))
	s.observeRetention(store.RetentionRun{Busy: true}, nil)
	s.observeRetention(store.RetentionRun{Dropped: []store.RetentionDrop{{Table: "event_outbox"}, {Table: "iu_route_attempt"}}}, nil)
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"maintenance busy", sample(t, m, "iu_runner_partition_maintenance_total", "outcome", "busy"), 1},
		{"maintenance lock_timeout", sample(t, m, "iu_runner_partition_maintenance_total", "outcome", "lock_timeout"), 1},
		{"maintenance failed", sample(t, m, "iu_runner_partition_maintenance_total", "outcome", "failed"), 1},
		{"default rows", sample(t, m, "iu_runner_partition_default_rows", "table", "event_outbox"), 5},
		{"ahead", sample(t, m, "iu_runner_partition_ahead_txids"), 7},
		{"retention busy", sample(t, m, "iu_runner_retention_runs_total", "outcome", "busy"), 1},
		{"retention ok", sample(t, m, "iu_runner_retention_runs_total", "outcome", "ok"), 1},
		{"dropped outbox", sample(t, m, "iu_runner_retention_dropped_partitions_total", "table", "event_outbox"), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}
