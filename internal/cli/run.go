package cli

import (
	"context"
	"errors"
	"flag"
	"os"
	"time"

	"github.com/iu-core/event-worker/internal/config"
	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/notifier"
	"github.com/iu-core/event-worker/internal/service"
	"github.com/iu-core/event-worker/internal/store"
)

func runRun(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var c common
	c.register(fs, "info", true)
	var workers, domains stringList
	fs.Var(&workers, "worker", "route worker to run (repeatable or comma-separated; default "+DefaultWorker+")")
	fs.Var(&domains, "domain", "LISTEN on queue_wake_<domain> (repeatable; default iu)")
	batch := fs.Int("batch", DefaultBatch, "events per fn_iu_route_worker_run call (at least 1; the bound is fn_iu_route_worker_batch_limits())")
	mode := fs.String("mode", service.ModeHybrid, "poll | notify | hybrid (NOTIFY wake-ups plus the fallback poll)")
	poll := fs.Duration("poll-interval", 5*time.Second, "fallback poll interval (±10% jitter)")
	stale := fs.Duration("stale-check-interval", 30*time.Second, "fn_queue_stale_check() and v_queue_health gauge cadence; keep it under half the smallest stale threshold")
	reap := fs.Duration("reap-interval", 30*time.Second, "fn_job_reap_expired_leases() cadence")
	retention := fs.Duration("retention-interval", 0, "fn_iu_retention_run(false) cadence (needs workflow_admin; 0: never, leave retention to cron)")
	passBudget := fs.Duration("pass-budget", 10*time.Second, "longest drain before housekeeping gets a turn (the drain then continues at once)")
	grace := fs.Duration("shutdown-grace", 15*time.Second, "on SIGINT/SIGTERM, how long the call in flight may run before it is cancelled and rolled back")
	checkEvery := fs.Duration("notify-check-interval", 15*time.Second, "NOTIFY round-trip check of the LISTEN connection")
	httpAddr := fs.String("http-addr", config.DefaultHTTPAddr, "address serving /metrics, /healthz and /readyz (loopback by default; port 0 picks a free one; the bound address is logged as http_addr)")
	host, _ := os.Hostname()
	executorID := fs.String("executor-id", "iu-runner:"+host, "the runner's own heartbeat row (fn_queue_runner_beat: bound to the runner's login, held by one live runner at a time; a second runner of the same id is its standby; empty disables)")
	synopsis := "iu-runner run [flags]\n\n" +
		"The long-running loop. hybrid (default): LISTEN queue_wake_<domain> on a dedicated\n" +
		"connection plus a fallback poll; notify: poll only while the listener is down; poll: no\n" +
		"LISTEN (PgBouncer transaction pooling). A full batch is followed at once by the next.\n" +
		"SIGINT/SIGTERM: no new batch starts, the call in flight finishes (or is cancelled and\n" +
		"rolled back after --shutdown-grace), exit 0. A second SIGINT/SIGTERM exits at once\n" +
		"(the abandoned call then commits or rolls back whole on the server, never half).\n" +
		"Several --worker are served round-robin: one batch of each in turn.\n" +
		"Connections: up to --max-conns in the pool, plus the LISTEN connection (hybrid, notify)."
	if code, done := parse(fs, args, env, synopsis); done {
		return code
	}
	c.db.Parsed(fs)
	if fs.NArg() > 0 {
		return usageErr(env, "run", "unexpected argument %q", fs.Arg(0))
	}
	switch *mode {
	case service.ModePoll, service.ModeNotify, service.ModeHybrid:
	default:
		return usageErr(env, "run", "--mode %q: want poll, notify or hybrid", *mode)
	}
	if *batch < 1 {
		return usageErr(env, "run", "--batch %d: want at least 1", *batch)
	}
	for name, d := range map[string]time.Duration{"--poll-interval": *poll, "--stale-check-interval": *stale,
		"--reap-interval": *reap, "--pass-budget": *passBudget, "--notify-check-interval": *checkEvery} {
		if d <= 0 {
			return usageErr(env, "run", "%s must be positive", name)
		}
	}
	if *grace < 0 {
		return usageErr(env, "run", "--shutdown-grace must not be negative")
	}
	if *retention < 0 {
		return usageErr(env, "run", "--retention-interval must not be negative")
	}
	if *httpAddr == "" {
		return usageErr(env, "run", "--http-addr is required")
	}
	if err := c.db.Validate(); err != nil {
		return usageErr(env, "run", "%v", err)
	}
	log, err := c.logger(env)
	if err != nil {
		return usageErr(env, "run", "%v", err)
	}
	if len(workers) == 0 {
		workers = stringList{DefaultWorker}
	}
	if len(domains) == 0 {
		domains = stringList{"iu"}
	}

	pool, st, err := c.connect(ctx, env, log)
	if err != nil {
		return fail(env, "run", err)
	}
	defer pool.Close()
	if err := checkBatch(ctx, st, "run", *batch); err != nil {
		if errors.Is(err, store.ErrCall) {
			return fail(env, "run", err)
		}
		return usageErr(env, "run", "%v", err)
	}

	m := metrics.New()
	m.Mode.WithLabelValues(*mode).Set(1)
	svc := (*service.Service)(nil)
	var listener service.Listener
	var n *notifier.Notifier
	if *mode != service.ModePoll {
		var channels []string
		for _, d := range domains {
			channels = append(channels, "queue_wake_"+d)
		}
		n = notifier.New(pool, notifier.Config{Channels: channels, CheckInterval: *checkEvery}, log.With("component", "notifier"),
			notifier.Hooks{
				Wake:      func(src string) { svc.Wake(src) },
				State:     func(up bool) { svc.ListenerChanged(up) },
				Reconnect: func() { m.ListenerReconnects.Inc() },
				Notified:  func(k int) { m.Notifications.Add(float64(k)) },
			})
		listener = n
	}
	svc = service.New(service.Config{
		Mode: *mode, Workers: workers, Batch: *batch,
		PollInterval: *poll, StaleCheckInterval: *stale, ReapInterval: *reap, RetentionInterval: *retention, PassBudget: *passBudget,
		ShutdownGrace: *grace, CallTimeout: st.CallTimeout,
		ExecutorID: *executorID, HTTPAddr: *httpAddr,
	}, st, listener, log, m)
	if err := svc.Run(ctx); err != nil {
		return fail(env, "run", err)
	}
	return ExitOK
}
