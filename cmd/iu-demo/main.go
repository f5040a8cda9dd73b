// Command iu-demo is a guided tour of iu-core with nothing to set up: it starts a throwaway
// PostgreSQL, migrates it with the real iu-runner, registers routes and executors, emits a
// few hundred events, runs `iu-runner tick` and `iu-runner health` (in-process, through
// the same entry point as the binary) and cleans up. `make demo` runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/cli"
	"github.com/iu-core/event-worker/internal/pgserver"
	"github.com/iu-core/event-worker/internal/store"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	err := run(ctx, os.Stdout)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\niu-demo: %v\n", err)
		os.Exit(1)
	}
}

type tour struct {
	w    io.Writer
	step int
	t0   time.Time
}

func (t *tour) say(title, why string) {
	t.step++
	bold, plain := "", ""
	if f, ok := t.w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			bold, plain = "\033[1m", "\033[0m"
		}
	}
	fmt.Fprintf(t.w, "\n%s%2d. %s%s  (%.1fs)\n    %s\n", bold, t.step, title, plain, time.Since(t.t0).Seconds(), why)
}

func (t *tour) out(s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintf(t.w, "    │ %s\n", l)
	}
}

// runner calls iu-runner's main-level function in-process and returns stdout and the exit code.
func runner(ctx context.Context, dsn string, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "DATABASE_URL" {
			return dsn
		}
		return os.Getenv(k)
	}}
	code := cli.Main(ctx, args, env)
	return out.String(), errb.String(), code
}

func run(ctx context.Context, w io.Writer) error {
	t := &tour{w: w, t0: time.Now()}
	fmt.Fprintln(w, "iu-core demo — a route worker over an append-only event log, run by iu-runner.")

	t.say("Start a throwaway PostgreSQL", "TEST_DATABASE_URL, else the local server binaries (initdb + pg_ctl in a temp dir).")
	srv, err := pgserver.Start(ctx, pgserver.Options{})
	if err != nil {
		return err
	}
	defer func() {
		t.say("Stop and clean up", "The server (or the demo database, on a server you gave us) goes away.")
		sctx, c := context.WithTimeout(context.Background(), 30*time.Second)
		defer c()
		if srv.Kind == pgserver.KindEnv {
			if conn, err := pgx.Connect(sctx, srv.AdminURL); err == nil {
				_, _ = conn.Exec(sctx, "DROP DATABASE IF EXISTS iu_demo WITH (FORCE)")
				conn.Close(sctx)
			}
		}
		_ = srv.Stop(sctx)
		fmt.Fprintf(w, "    done in %.1fs\n", time.Since(t.t0).Seconds())
	}()
	t.out(fmt.Sprintf("server: %s", srv.Kind))

	t.say("Create a database", "Everything below happens in a database of its own: iu_demo.")
	admin, err := pgx.Connect(ctx, srv.AdminURL)
	if err != nil {
		return fmt.Errorf("connecting to the server: %w", err)
	}
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS iu_demo WITH (FORCE)")
	if _, err := admin.Exec(ctx, "CREATE DATABASE iu_demo"); err != nil {
		admin.Close(ctx)
		return fmt.Errorf("creating iu_demo: %w", err)
	}
	admin.Close(ctx)
	dsn := srv.DBURL("iu_demo")

	t.say("iu-runner migrate up", "The goose migrations embedded in the binary, under goose's session lock.")
	out, errOut, code := runner(ctx, dsn, "migrate", "up")
	if code != 0 {
		return fmt.Errorf("migrate up: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	t.out(fmt.Sprintf("%d migrations applied; %s", len(lines)-1, lines[len(lines)-1]))

	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	exec := func(sql string, args ...any) error {
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(sql)[0]+" "+strings.Fields(sql)[1], err)
		}
		return nil
	}

	t.say("Register event types and routes", "Routes decide per (domain, type, stream). New routes are disabled and dry-run by default.")
	if err := exec(`INSERT INTO event_type_registry (event_domain, event_type, description) VALUES
	        ('iu','order.created','demo'), ('iu','order.shipped','demo'), ('iu','invoice.issued','demo'),
	        ('iu','payment.captured','demo'), ('iu','audit.logged','demo')`); err != nil {
		return err
	}
	if err := exec(`INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run, description) VALUES
	        ('iu','order.created','shop','orders_created', true,  true,  'enabled, dry-run: a logged decision'),
	        ('iu','order.shipped','shop','orders_shipped', true,  true,  'enabled, dry-run'),
	        ('iu','invoice.issued','billing','invoices',   false, true,  'disabled: decided as disabled'),
	        ('iu','payment.captured','psp','payments_live', true, false, 'enabled, NOT dry-run: the delivery seam fails closed')`); err != nil {
		return err
	}
	t.out("orders_created, orders_shipped  enabled + dry-run   -> status dry_run")
	t.out("invoices                        disabled            -> status disabled")
	t.out("payments_live                   enabled, live       -> fn_iu_route_deliver raises 0A000 -> failed + dead letter")
	t.out("audit.logged                    no route            -> status skipped")

	t.say("Register the worker and open both gates", "fn_iu_route_worker_register creates its cursor and a PG_worker heartbeat; the gates are fail-closed until set to exactly 'true'.")
	if err := exec(`SELECT fn_iu_route_worker_register('iu_outbound_default')`); err != nil {
		return err
	}
	if err := exec(`UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`); err != nil {
		return err
	}

	t.say("Register two executors", "billing-sync beats on time; legacy-export last beat an hour ago, so it is stale.")
	if err := exec(`SELECT fn_queue_heartbeat_register('billing-sync', 'external_worker', ARRAY['iu'], 60, 180)`); err != nil {
		return err
	}
	if err := exec(`SELECT fn_queue_heartbeat_tick('billing-sync', 'external_worker', 'ok', '{"queue_depth": 0}')`); err != nil {
		return err
	}
	if err := exec(`SELECT fn_queue_heartbeat_register('legacy-export', 'external_worker', ARRAY['iu'], 60, 180)`); err != nil {
		return err
	}
	if err := exec(`UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = 'legacy-export'`); err != nil {
		return err
	}

	t.say("Emit 400 iu events", "Through fn_iu_emit_event, the one sanctioned writer of the append-only event_outbox.")
	if err := exec(`SELECT fn_iu_emit_event('iu', x.t, x.s, 'standard', 'info', 'demo', g::text, jsonb_build_object('n', g))
	                  FROM generate_series(1, 400) g
	                  CROSS JOIN LATERAL (
	                        SELECT CASE WHEN g % 50 = 0 THEN 'payment.captured'
	                                    ELSE (ARRAY['order.created','order.shipped','invoice.issued','audit.logged'])[1 + g % 4] END AS t,
	                               CASE WHEN g % 50 = 0 THEN 'psp'
	                                    ELSE (ARRAY['shop','shop','billing','audit'])[1 + g % 4] END AS s) x`); err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT event_type, count(*) FROM event_outbox WHERE event_domain = 'iu' GROUP BY 1 ORDER BY 2 DESC`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var et string
		var n int64
		_ = rows.Scan(&et, &n)
		t.out(fmt.Sprintf("%-17s %d", et, n))
	}
	rows.Close()

	t.say("iu-runner tick --batch 100", "One cron pass: batches until one comes back short, then the stale-check and the lease reaper; --executor-id beats the runner's own heartbeat. One JSON line on stdout.")
	start := time.Now()
	out, errOut, code = runner(ctx, dsn, "tick", "--batch", "100", "--executor-id", "iu-runner:demo")
	if code != 0 {
		return fmt.Errorf("tick: exit %d: %s", code, errOut)
	}
	var sum struct {
		Workers []struct {
			Worker       string           `json:"worker"`
			Runs         int              `json:"runs"`
			Claimed      int64            `json:"claimed"`
			DeadLettered int64            `json:"dead_lettered"`
			ByStatus     map[string]int64 `json:"by_status"`
			Stopped      string           `json:"stopped"`
		} `json:"workers"`
		StaleCheck json.RawMessage `json:"stale_check"` // fn_queue_stale_check()'s document
		Reaper     json.RawMessage `json:"reaper"`      // fn_job_reap_expired_leases()'s document
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		return fmt.Errorf("tick printed no JSON: %w: %s", err, out)
	}
	for _, wr := range sum.Workers {
		t.out(fmt.Sprintf("worker %s: %d runs, %d events claimed, stopped: %s (%s)", wr.Worker, wr.Runs, wr.Claimed, wr.Stopped, time.Since(start).Round(time.Millisecond)))
		b, _ := json.Marshal(wr.ByStatus)
		t.out(fmt.Sprintf("  attempts by status %s, dead-lettered %d", b, wr.DeadLettered))
	}
	stale, err := store.ParseStaleCheck(sum.StaleCheck)
	if err != nil {
		return err
	}
	reap, err := store.ParseReap(sum.Reaper)
	if err != nil {
		return err
	}
	t.out(fmt.Sprintf("stale-check: checked %d, stale %d, alerts emitted %d", stale.Checked, stale.Stale, stale.Emitted))
	t.out(fmt.Sprintf("lease reaper: reaped %d", reap.Reaped))

	t.say("Run it again", "The cursor has moved: a second tick claims nothing. A concurrent one would return busy, so cron needs no flock.")
	out, _, code = runner(ctx, dsn, "tick", "--batch", "100", "--skip-stale-check")
	_ = json.Unmarshal([]byte(out), &sum)
	t.out(fmt.Sprintf("exit %d, claimed %d", code, sum.Workers[0].Claimed))

	t.say("Look at the audit trail", "Exactly one iu_route_attempt per event and decision; the live route's events wait in the dead letters with their SQLSTATE.")
	rows, err = pool.Query(ctx, `SELECT status, count(*) FROM iu_route_attempt GROUP BY 1 ORDER BY 2 DESC`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var s string
		var n int64
		_ = rows.Scan(&s, &n)
		t.out(fmt.Sprintf("%-9s %d", s, n))
	}
	rows.Close()
	var dlCode string
	var dlN int64
	_ = pool.QueryRow(ctx, `SELECT coalesce(max(error_code), '-'), count(*) FROM iu_route_dead_letter WHERE resolved_at IS NULL`).Scan(&dlCode, &dlN)
	t.out(fmt.Sprintf("open dead letters: %d (error_code %s: the delivery seam is unbuilt on purpose)", dlN, dlCode))
	var alerts int64
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM event_outbox WHERE event_domain = 'system' AND event_type = 'queue_worker_silent'`).Scan(&alerts)
	t.out(fmt.Sprintf("system/queue_worker_silent alerts in the log: %d (legacy-export)", alerts))

	t.say("iu-runner health", "v_queue_health, the single pane: cursors, heartbeats, dead letters, job backlog. '!' marks what needs attention.")
	out, errOut, code = runner(ctx, dsn, "health")
	if code != 0 && code != 3 {
		return fmt.Errorf("health: exit %d: %s", code, errOut)
	}
	t.out(out)
	t.out(fmt.Sprintf("exit code %d (3 = something is stale, critical or has open dead letters: cron or a monitor alerts on it)", code))
	return nil
}
