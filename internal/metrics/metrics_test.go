package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// gather returns the registry's families by name.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Rule: iu_runner_build_info is exported from the start, value 1, with the build's labels.
func TestBuildInfo(t *testing.T) {
	f := gather(t, New())["iu_runner_build_info"]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("iu_runner_build_info: %v", f)
	}
	l := labels(f.GetMetric()[0])
	for _, k := range []string{"version", "revision", "goversion", "modified"} {
		if l[k] == "" {
			t.Errorf("iu_runner_build_info label %s empty: %v", k, l)
		}
	}
}

// Rule: the last-refresh gauge is absent until a refresh succeeds, then carries the
// snapshot's time; every stale executor is a series labelled with its id, and a fresh or
// paused one is not.
func TestHealthSnapshot(t *testing.T) {
	m := New()
	if f := gather(t, m)["iu_queue_health_last_refresh_timestamp_seconds"]; f != nil {
		t.Fatalf("last-refresh gauge exported before any refresh: %v", f)
	}
	at := time.Unix(1700000000, 0)
	m.SetHealth(Health{RefreshedAt: at, StaleExecutors: 1, Rows: []HealthRow{
		{Source: "heartbeat", Subject: "worker-a", StatusHint: "stale", Problem: true},
		{Source: "heartbeat", Subject: "worker-b", StatusHint: "fresh"},
		{Source: "heartbeat", Subject: "worker-c", StatusHint: "paused"},
	}})
	fams := gather(t, m)
	if f := fams["iu_queue_health_last_refresh_timestamp_seconds"]; f == nil || f.GetMetric()[0].GetGauge().GetValue() != 1.7e9 {
		t.Fatalf("last refresh: %v", f)
	}
	f := fams["iu_queue_health_executor_stale"]
	if f == nil || len(f.GetMetric()) != 1 || labels(f.GetMetric()[0])["executor"] != "worker-a" {
		t.Fatalf("executor_stale: %v", f)
	}
}
