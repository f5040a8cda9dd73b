package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the runner's collectors and their registry.
type Metrics struct {
	Registry *prometheus.Registry

	EventsRouted       *prometheus.CounterVec
	DeadLetters        *prometheus.CounterVec
	WorkerRuns         *prometheus.CounterVec
	RunDuration        *prometheus.HistogramVec
	Wakeups            *prometheus.CounterVec
	DBErrors           *prometheus.CounterVec
	ListenerUp         prometheus.Gauge
	ListenerReconnects prometheus.Counter
	Draining           prometheus.Gauge
	LastPass           prometheus.Gauge
	Mode               *prometheus.GaugeVec

	HealthAge            *prometheus.GaugeVec
	HealthBacklog        *prometheus.GaugeVec
	HealthOpenDeadLetter *prometheus.GaugeVec
	HealthStaleExecutors prometheus.Gauge
	HealthProblem        *prometheus.GaugeVec
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
		HealthAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_queue_health_age_seconds", Help: "v_queue_health.age_seconds per row.",
		}, []string{"source", "subject", "domain"}),
		HealthBacklog: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_queue_health_backlog", Help: "Backlog per v_queue_health row that reports one (cursor backlog, queued jobs).",
		}, []string{"source", "subject", "domain"}),
		HealthOpenDeadLetter: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_queue_health_open_dead_letters", Help: "Open dead letters per v_queue_health dead_letter_* row.",
		}, []string{"source", "subject", "domain"}),
		HealthStaleExecutors: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iu_queue_health_stale_executors", Help: "Heartbeat rows of v_queue_health with status_hint = stale.",
		}),
		HealthProblem: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iu_queue_health_problem", Help: "1 per v_queue_health row that is stale, critical or an open dead letter.",
		}, []string{"source", "subject", "domain", "status_hint"}),
	}
	r.MustRegister(m.EventsRouted, m.DeadLetters, m.WorkerRuns, m.RunDuration, m.Wakeups, m.DBErrors,
		m.ListenerUp, m.ListenerReconnects, m.Draining, m.LastPass, m.Mode,
		m.HealthAge, m.HealthBacklog, m.HealthOpenDeadLetter, m.HealthStaleExecutors, m.HealthProblem,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range []string{"notify", "poll", "full_batch", "reconnect", "retry", "startup"} {
		m.Wakeups.WithLabelValues(s) // present from the start, so rate() works at once
	}
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}
