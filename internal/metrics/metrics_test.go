package metrics

import (
	"fmt"
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

// Rule (issue 21): the series the runner exports stay bounded whatever the number of
// executors. Before, every row of v_queue_health was a series of each family: one caller
// that created 2,000 executors added 2,000 series to every scrape (and as many
// executor_stale series once they fell silent). Now at most MaxHealthRows rows get series
// of their own, problem rows first (a stale executor is never crowded out by fresh ones),
// then the route workers' cursors; the counts still cover every row.
func TestHealthSeriesAreBounded(t *testing.T) {
	m := New()
	h := Health{StaleExecutors: 2000}
	age := 1.0
	for i := range 5000 {
		r := HealthRow{Source: "heartbeat", Subject: fmt.Sprintf("flood-%d", i), StatusHint: "fresh", Age: &age}
		if i%5 == 0 {
			continue // added below as stale
		}
		h.Rows = append(h.Rows, r)
	}
	backlog := 7.0
	h.Rows = append(h.Rows, HealthRow{Source: "cursor", Subject: "iu_outbound_default", Domain: "iu", StatusHint: "backlog", Age: &age, Backlog: &backlog})
	for i := range 1000 {
		h.Rows = append(h.Rows, HealthRow{Source: "heartbeat", Subject: fmt.Sprintf("stale-%d", i), StatusHint: "stale", Age: &age, Problem: true})
	}
	m.SetHealth(h)
	fams := gather(t, m)
	total := 0
	for _, name := range []string{"iu_queue_health_age_seconds", "iu_queue_health_backlog", "iu_queue_health_open_dead_letters",
		"iu_queue_health_problem", "iu_queue_health_executor_stale"} {
		if f := fams[name]; f != nil {
			if n := len(f.GetMetric()); n > MaxHealthRows {
				t.Errorf("%s: %d series, want at most %d", name, n, MaxHealthRows)
			}
			total += len(f.GetMetric())
		}
	}
	if total > 3*MaxHealthRows {
		t.Errorf("%d per-row series for %d rows", total, len(h.Rows))
	}
	if f := fams["iu_queue_health_executor_stale"]; f == nil || len(f.GetMetric()) != MaxHealthRows {
		t.Fatalf("stale executors must come first: %d series", len(f.GetMetric()))
	}
	if v := fams["iu_queue_health_rows_omitted"].GetMetric()[0].GetGauge().GetValue(); v != float64(len(h.Rows)-MaxHealthRows) {
		t.Fatalf("omitted %v, want %d", v, len(h.Rows)-MaxHealthRows)
	}
	if v := fams["iu_queue_health_stale_executors"].GetMetric()[0].GetGauge().GetValue(); v != 2000 {
		t.Fatalf("the stale count covers every row: %v", v)
	}
}
