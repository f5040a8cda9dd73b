package metrics

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/iu-core/event-worker/internal/buildinfo"
)

// Metrics holds the runner's collectors and their registry.
type Metrics struct {
	Registry *prometheus.Registry

	EventsRouted       *prometheus.CounterVec
	DeadLetters        *prometheus.CounterVec
	WorkerRuns         *prometheus.CounterVec
	RunDuration        *prometheus.HistogramVec
	Wakeups            *prometheus.CounterVec
	Notifications      prometheus.Counter
	DBErrors           *prometheus.CounterVec
	ListenerUp         prometheus.Gauge
	ListenerReconnects prometheus.Counter
	Draining           prometheus.Gauge
	LastPass           prometheus.Gauge
	Mode               *prometheus.GaugeVec

	// StaleCheckContended is how many silent executors the last stale-check alerted without
	// their alert state, because another session holds it (a stale-check kept open).
	StaleCheckContended prometheus.Gauge

	// HeartbeatStandby is 1 while another live runner holds this runner's heartbeat row
	// (same --executor-id): this one works but beats nothing until the holder stops.
	HeartbeatStandby prometheus.Gauge
	// PartitionMaintenance counts fn_iu_partition_maintain calls by outcome: ok, busy (the
	// partition-maintenance lock was held elsewhere), lock_timeout (the tables' locks were
	// not free), raced, error (each: nothing changed; the next call tries again), failed
	// (the call itself failed).
	PartitionMaintenance *prometheus.CounterVec
	// PartitionDefaultRows is the rows (up to 1,000) the last maintenance call left in each
	// history table's default partition; PartitionAheadTxids how many txids the partitions
	// reach past the next one.
	PartitionDefaultRows *prometheus.GaugeVec
	PartitionAheadTxids  prometheus.Gauge
	// RetentionRuns counts fn_iu_retention_run(false) calls by outcome (ok, busy,
	// lock_timeout, failed); RetentionDropped the partitions they dropped, by table.
	RetentionRuns    *prometheus.CounterVec
	RetentionDropped *prometheus.CounterVec

	// StaleCheckTooLong is 1 when --stale-check-interval is not under half the smallest
	// stale threshold in v_queue_health (silences would be noticed late).
	StaleCheckTooLong prometheus.Gauge

	// BuildInfo is iu_runner_build_info{version,revision,goversion,modified} = 1.
	BuildInfo *prometheus.GaugeVec

	// health holds the iu_queue_health_* rows; SetHealth swaps them in one step.
	health *healthCollector
}

// HealthRow is one v_queue_health row as the gauges see it; nil values are not exported.
type HealthRow struct {
	Source, Subject, Domain, StatusHint string
	Age, Backlog, OpenDeadLetters       *float64
	// GatedWaiting is how long (seconds) a closed gate has kept events waiting for a
	// worker (cursor rows with status_hint gated); nil otherwise.
	GatedWaiting *float64
	Problem      bool
	// ErrorStatus: a heartbeat row whose executor beats on time but reports status error
	// (iu-runner health's error_status).
	ErrorStatus bool
}

// Health is one complete snapshot of the view.
type Health struct {
	Rows           []HealthRow
	StaleExecutors int
	// RefreshedAt is when the snapshot was read (zero: now). It is exported as
	// iu_queue_health_last_refresh_timestamp_seconds with the snapshot, so the gauge exists
	// only once a refresh has succeeded and says how old frozen figures are.
	RefreshedAt time.Time
}

var (
	healthLabels     = []string{"source", "subject", "domain"}
	descHealthAge    = prometheus.NewDesc("iu_queue_health_age_seconds", "v_queue_health.age_seconds per row.", healthLabels, nil)
	descHealthBacklg = prometheus.NewDesc("iu_queue_health_backlog", "Backlog per v_queue_health row that reports one (cursor backlog, queued jobs).", healthLabels, nil)
	descHealthOpenDL = prometheus.NewDesc("iu_queue_health_open_dead_letters", "Open dead letters per v_queue_health dead_letter_* row.", healthLabels, nil)
	descHealthStale  = prometheus.NewDesc("iu_queue_health_stale_executors", "Heartbeat rows of v_queue_health with status_hint = stale.", nil, nil)
	descHealthProbl  = prometheus.NewDesc("iu_queue_health_problem", "1 per v_queue_health row that iu-runner health calls a problem (stale, critical, open dead letters, gated past the grace, history, error_status, paused_too_long at the default grace).",
		append(append([]string{}, healthLabels...), "status_hint"), nil)
	descExecStale = prometheus.NewDesc("iu_queue_health_executor_stale",
		"1 per executor (queue_heartbeat row) that v_queue_health reports stale; the label is the executor id.", []string{"executor"}, nil)
	descExecError = prometheus.NewDesc("iu_queue_health_executor_error",
		"1 per executor that beats on time but reports status error (fresh in v_queue_health, severity warning); the label is the executor id.", []string{"executor"}, nil)
	descRefreshed = prometheus.NewDesc("iu_queue_health_last_refresh_timestamp_seconds",
		"Unix time of the last successful read of v_queue_health (absent until the first one): how old the iu_queue_health_* figures are.", nil, nil)
	descRows  = prometheus.NewDesc("iu_queue_health_rows", "Rows of v_queue_health at the last refresh.", nil, nil)
	descGated = prometheus.NewDesc("iu_queue_health_gated_waiting_seconds",
		"Per route worker whose closed gate keeps events waiting (v_queue_health status_hint gated): for how long; iu_queue_health_backlog says how many. Absent while its gates are open or nothing waits.", healthLabels, nil)
	descOmitted = prometheus.NewDesc("iu_queue_health_rows_omitted",
		"Rows of v_queue_health exported without per-row series (past MaxHealthRows: problem rows and cursors go first); the counts (iu_queue_health_stale_executors, iu_queue_health_rows) still cover them.", nil, nil)
)

// BacklogCap is where v_queue_health stops counting a route worker's backlog
// (iu_core.fn_iu_route_worker_backlog_cap(); a test holds the two equal): the exported
// backlog is exact up to it and reads BacklogCap beyond. Every rule over the backlog must fire
// below it, or it could never fire (deploy/check holds the rules and their tests to that).
const BacklogCap = 10000

// MaxHealthRows bounds the rows of v_queue_health that get series of their own (one per
// row and family: age, backlog, open dead letters, problem, executor_stale), so the number
// of series the runner exports does not follow the number of executors: a caller that
// created thousands of executors cannot make every scrape thousands of series larger.
// Problem rows come first, then the route workers' cursors, so what the alert rules read is
// exported first; the rest is counted (iu_queue_health_rows_omitted).
const MaxHealthRows = 500

// healthCollector exports the latest snapshot; a scrape sees the old rows or the new
// ones, never an empty or half-built set.
type healthCollector struct {
	mu      sync.RWMutex
	metrics []prometheus.Metric
}

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHealthAge, descHealthBacklg, descHealthOpenDL, descHealthStale, descHealthProbl, descExecStale, descExecError, descRefreshed, descRows, descOmitted, descGated} {
		ch <- d
	}
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, m := range c.metrics {
		ch <- m
	}
}

// SetHealth builds every iu_queue_health_* sample from h first and then replaces the
// previous snapshot at once (rows gone from the view are gone from the gauges).
func (m *Metrics) SetHealth(h Health) {
	seen := map[string]bool{}
	var out []prometheus.Metric
	add := func(d *prometheus.Desc, v float64, lv ...string) {
		key := d.String() + "\x00" + fmt.Sprint(lv)
		if seen[key] {
			return // a duplicate label set: the first row wins
		}
		seen[key] = true
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...))
	}
	rows := make([]HealthRow, len(h.Rows))
	copy(rows, h.Rows)
	rank := func(r HealthRow) int {
		switch {
		case r.Problem:
			return 0
		case r.Source == "cursor":
			return 1
		}
		return 2
	}
	sort.SliceStable(rows, func(i, j int) bool { return rank(rows[i]) < rank(rows[j]) })
	omitted := 0
	if len(rows) > MaxHealthRows {
		omitted = len(rows) - MaxHealthRows
		rows = rows[:MaxHealthRows]
	}
	for _, r := range rows {
		lv := []string{r.Source, r.Subject, r.Domain}
		if r.Age != nil {
			add(descHealthAge, *r.Age, lv...)
		}
		if r.Backlog != nil {
			add(descHealthBacklg, *r.Backlog, lv...)
		}
		if r.OpenDeadLetters != nil {
			add(descHealthOpenDL, *r.OpenDeadLetters, lv...)
		}
		if r.GatedWaiting != nil {
			add(descGated, *r.GatedWaiting, lv...)
		}
		if r.Problem {
			add(descHealthProbl, 1, r.Source, r.Subject, r.Domain, r.StatusHint)
		}
		if r.Source == "heartbeat" && r.StatusHint == "stale" {
			add(descExecStale, 1, r.Subject)
		}
		if r.Source == "heartbeat" && r.ErrorStatus {
			add(descExecError, 1, r.Subject)
		}
	}
	add(descHealthStale, float64(h.StaleExecutors))
	add(descRows, float64(len(h.Rows)))
	add(descOmitted, float64(omitted))
	at := h.RefreshedAt
	if at.IsZero() {
		at = time.Now()
	}
	add(descRefreshed, float64(at.UnixNano())/1e9)
	m.health.mu.Lock()
	m.health.metrics = out
	m.health.mu.Unlock()
}

// New creates and registers every metric on a fresh registry.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		EventsRouted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_events_routed_total", Help: "Route attempts written by the runner's worker passes, by status.",
		}, []string{"worker", "status"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_dead_letters_total", Help: "Events dead-lettered by the runner's worker passes.",
		}, []string{"worker"}),
		WorkerRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_worker_runs_total", Help: "fn_iu_route_worker_run calls by outcome (ok, gated, busy, error).",
		}, []string{"worker", "outcome"}),
		RunDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "iu_runner_run_duration_seconds", Help: "Duration of one fn_iu_route_worker_run call.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"worker"}),
		Wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_wakeups_total", Help: "Loop wake-ups by source (notify, poll, full_batch, reconnect, retry, startup).",
		}, []string{"source"}),
		Notifications: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iu_runner_notifications_total",
			Help: "NOTIFY messages received on the queue_wake_* channels; a burst is drained and becomes one wake-up (iu_runner_wakeups_total{source=\"notify\"}).",
		}),
		DBErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_db_errors_total", Help: "Failed database calls by operation.",
		}, []string{"op"}),
		ListenerUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_listener_up", Help: "1 while the LISTEN connection passes its NOTIFY round trip; 0 while the runner relies on polling.",
		}),
		ListenerReconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iu_runner_listener_reconnects_total", Help: "LISTEN connections established after a loss.",
		}),
		Draining: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_draining", Help: "1 after a stop signal, while the current pass finishes.",
		}),
		LastPass: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_last_pass_timestamp_seconds", Help: "Unix time of the last completed worker pass.",
		}),
		Mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_runner_mode", Help: "1 for the runner's --mode (poll, notify, hybrid).",
		}, []string{"mode"}),
		StaleCheckContended: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_stale_check_contended",
			Help: "Silent executors the last fn_queue_stale_check alerted without their alert state, because another session holds it (a stale-check's transaction kept open; the log names it).",
		}),
		HeartbeatStandby: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_heartbeat_standby",
			Help: "1 while another live runner holds this runner's heartbeat row (the same --executor-id): this one is its standby and beats nothing until that one stops.",
		}),
		PartitionMaintenance: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_partition_maintenance_total",
			Help: "fn_iu_partition_maintain calls by outcome: ok, busy (its lock held by another session), lock_timeout, raced, error (nothing changed), failed (the call failed).",
		}, []string{"outcome"}),
		PartitionDefaultRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_runner_partition_default_rows",
			Help: "Rows (up to 1,000) the last partition maintenance left in each history table's default partition.",
		}, []string{"table"}),
		PartitionAheadTxids: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_partition_ahead_txids",
			Help: "Transaction ids the history partitions reach past the next one, as of the last partition maintenance.",
		}),
		RetentionRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_retention_runs_total",
			Help: "fn_iu_retention_run(false) calls by outcome: ok, busy (the partition-maintenance lock held by another session), lock_timeout (nothing dropped), failed.",
		}, []string{"outcome"}),
		RetentionDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iu_runner_retention_dropped_partitions_total",
			Help: "History partitions fn_iu_retention_run dropped for the runner, by table.",
		}, []string{"table"}),
		StaleCheckTooLong: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_runner_stale_check_interval_too_long",
			Help: "1 when --stale-check-interval is not under half the smallest stale threshold of v_queue_health.",
		}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_runner_build_info",
			Help: "Always 1; the labels say which build runs: module version, VCS revision, Go version, modified work tree.",
		}, []string{"version", "revision", "goversion", "modified"}),
		health: &healthCollector{},
	}
	r.MustRegister(m.EventsRouted, m.DeadLetters, m.WorkerRuns, m.RunDuration, m.Wakeups, m.Notifications, m.DBErrors,
		m.ListenerUp, m.ListenerReconnects, m.Draining, m.LastPass, m.Mode,
		m.StaleCheckContended, m.HeartbeatStandby,
		m.PartitionMaintenance, m.PartitionDefaultRows, m.PartitionAheadTxids, m.RetentionRuns, m.RetentionDropped,
		m.StaleCheckTooLong, m.BuildInfo, m.health,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := buildinfo.Read()
	m.BuildInfo.WithLabelValues(bi.Version, bi.Revision, bi.GoVersion, strconv.FormatBool(bi.Modified)).Set(1)
	for _, s := range []string{"notify", "poll", "full_batch", "reconnect", "retry", "startup"} {
		m.Wakeups.WithLabelValues(s) // present from the start, so rate() works at once
	}
	for _, o := range []string{"ok", "busy", "lock_timeout", "raced", "error", "failed"} {
		m.PartitionMaintenance.WithLabelValues(o)
	}
	for _, o := range []string{"ok", "busy", "lock_timeout", "failed"} {
		m.RetentionRuns.WithLabelValues(o)
	}
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
