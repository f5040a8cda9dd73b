package groupsbench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// load fills the outbox: events of domain iu over 1,000 streams and four types (three
// routed dry_run on some streams, one disabled, the rest unrouted: the common path), a
// little noise of another domain, then VACUUM ANALYZE.
func load(ctx context.Context, b *testing.B, db *pgtest.DB, events int) {
	b.Helper()
	stmts := []string{
		fmt.Sprintf(`INSERT INTO event_outbox (event_domain, event_type, event_stream, event_subject_table, event_subject_ref)
		 SELECT 'iu', (ARRAY['unit_version_created', 'unit_version_published', 'unit_archived', 'unit_flagged'])[1 + g %% 4],
		        's' || (g %% 1000), 'unit', 'u-' || g
		   FROM generate_series(1, %d) g`, events),
		fmt.Sprintf(`INSERT INTO event_outbox (event_domain, event_type, event_stream)
		 SELECT 'ops', 'noise', 'alert' FROM generate_series(1, %d) g`, events/10),
		`INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, route_kind, enabled, dry_run)
		 SELECT 'iu', t, 's' || s, t || '_' || s, 'outbound', t <> 'unit_flagged', true
		   FROM unnest(ARRAY['unit_version_created', 'unit_version_published', 'unit_flagged']) t,
		        generate_series(0, 499) s`,
		`UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`,
		`VACUUM ANALYZE`,
	}
	for _, s := range stmts {
		if _, err := db.Pool.Exec(ctx, s); err != nil {
			b.Fatalf("loading: %v", err)
		}
	}
}

// cloneDB copies the loaded database into a fresh one for one measurement and returns its URL.
func cloneDB(ctx context.Context, b *testing.B, h *pgtest.Harness, src, name string) string {
	b.Helper()
	admin, err := pgx.Connect(ctx, h.Server.AdminURL)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close(ctx)
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{src}.Sanitize()
	if _, err := admin.Exec(ctx, stmt+" STRATEGY FILE_COPY"); err != nil {
		if _, err := admin.Exec(ctx, stmt); err != nil { // before PostgreSQL 15
			b.Fatalf("cloning %s: %v", src, err)
		}
	}
	b.Cleanup(func() {
		if err := h.DropDB(context.Background(), name); err != nil {
			b.Logf("dropping %s: %v", name, err)
		}
	})
	return h.Server.DBURL(name)
}

// connect opens a session and warms it: the iu heap rows and the claim index.
func connect(ctx context.Context, b *testing.B, url string) *pgx.Conn {
	b.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `SELECT count(event_type) FROM event_outbox WHERE event_domain = 'iu'`); err != nil {
		b.Fatal(err)
	}
	return conn
}

// drain runs worker until a run is idle (nothing to do: no window open, the one it opened
// empty; a member's run that only passed the others' events is not idle); it returns the
// events it routed.
func drain(ctx context.Context, conn *pgx.Conn, worker string, batch int) (int, error) {
	routed := 0
	for i := 0; i < 1_000_000; i++ {
		var raw []byte
		if err := conn.QueryRow(ctx, `SELECT fn_iu_route_worker_run($1, $2)`, worker, batch).Scan(&raw); err != nil {
			return routed, fmt.Errorf("%s: %w", worker, err)
		}
		var s struct {
			Claimed  int  `json:"claimed"`
			Idle     bool `json:"idle"`
			CaughtUp bool `json:"caught_up"`
			Busy     bool `json:"busy"`
			Gated    bool `json:"gated"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return routed, err
		}
		if s.Busy || s.Gated {
			return routed, fmt.Errorf("%s: busy or gated: %s", worker, raw)
		}
		routed += s.Claimed
		if s.Idle {
			return routed, nil
		}
	}
	return routed, fmt.Errorf("%s: never caught up", worker)
}

// exactlyOnce checks one attempt per iu event under name.
func exactlyOnce(ctx context.Context, b *testing.B, conn *pgx.Conn, name string, events int) {
	b.Helper()
	var attempts, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT event_ref) FROM iu_route_attempt WHERE worker_name = $1`, name).
		Scan(&attempts, &distinct); err != nil {
		b.Fatal(err)
	}
	if attempts != events || distinct != events {
		b.Fatalf("%s wrote %d attempts for %d distinct events, want %d each", name, attempts, distinct, events)
	}
}

// single times one worker draining the backlog of a fresh clone.
func single(ctx context.Context, b *testing.B, url string, batch, events int) time.Duration {
	b.Helper()
	conn := connect(ctx, b, url)
	if _, err := conn.Exec(ctx, `SELECT fn_iu_route_worker_register('w')`); err != nil {
		b.Fatal(err)
	}
	c0 := backendCPU(ctx, conn)
	t0 := time.Now()
	n, err := drain(ctx, conn, "w", batch)
	d := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	cpu := backendCPU(ctx, conn) - c0
	if n != events {
		b.Fatalf("worker routed %d of %d events", n, events)
	}
	exactlyOnce(ctx, b, conn, "w", events)
	singleCPU = append(singleCPU, cpu)
	return d
}

// CPU time of the backends per measurement (see backendCPU).
var singleCPU, groupCPU, aloneCPU []time.Duration

// group times two members, each on its own session, draining the backlog of a fresh clone.
func group(ctx context.Context, b *testing.B, url string, batch, events int) (time.Duration, [2]int) {
	b.Helper()
	members := []string{"g-1", "g-2"}
	conns := make([]*pgx.Conn, len(members))
	for i, m := range members {
		conns[i] = connect(ctx, b, url)
		if _, err := conns[i].Exec(ctx, `SELECT fn_iu_route_worker_register_member('g', $1)`, m); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var routed [2]int
	errs := make([]error, len(members))
	start := make(chan struct{})
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			routed[i], errs[i] = drain(ctx, conns[i], m, batch)
		}()
	}
	c0 := backendCPU(ctx, conns[0]) + backendCPU(ctx, conns[1])
	t0 := time.Now()
	close(start)
	wg.Wait()
	d := time.Since(t0)
	groupCPU = append(groupCPU, backendCPU(ctx, conns[0])+backendCPU(ctx, conns[1])-c0)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if routed[0]+routed[1] != events {
		b.Fatalf("members routed %d + %d of %d events", routed[0], routed[1], events)
	}
	exactlyOnce(ctx, b, conns[0], "g", events)
	return d, routed
}

// alone times member g-1 of a two-member group draining its share of a fresh clone while
// g-2 does not run: one member's work (its scans walk every event, it routes its share) on
// one session. single / alone is what two members can reach on two otherwise idle cores.
func alone(ctx context.Context, b *testing.B, url string, batch int) (time.Duration, int) {
	b.Helper()
	conn := connect(ctx, b, url)
	for _, m := range []string{"g-1", "g-2"} {
		if _, err := conn.Exec(ctx, `SELECT fn_iu_route_worker_register_member('g', $1)`, m); err != nil {
			b.Fatal(err)
		}
	}
	c0 := backendCPU(ctx, conn)
	t0 := time.Now()
	n, err := drain(ctx, conn, "g-1", batch)
	d := time.Since(t0)
	aloneCPU = append(aloneCPU, backendCPU(ctx, conn)-c0)
	if err != nil {
		b.Fatal(err)
	}
	return d, n
}

// backendCPU is the CPU time (user + system) the session's backend process has used so far,
// read from /proc (the harness's server runs on this machine); 0 when unreadable. CPU time
// moves far less than wall time with what else the machine runs.
func backendCPU(ctx context.Context, conn *pgx.Conn) time.Duration {
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which is in parentheses): utime and stime are the
	// 12th and 13th of them, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var u, st int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &st)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// median is the middle of xs (the upper one of an even count): the durations' and the
// per-round ratios'.
func median[T cmp.Ordered](xs []T) T {
	x := slices.Clone(xs)
	slices.Sort(x)
	return x[len(x)/2]
}

// BenchmarkGroupVsSingle: the same backlog drained by one worker and by a group of two
// members on two sessions, interleaved; medians and the ratio of rates (target >= 1.6).
func BenchmarkGroupVsSingle(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	events := pgtest.EnvInt(b, "BENCH_GROUP_EVENTS", 200_000, 10_000)
	reps := pgtest.EnvInt(b, "BENCH_GROUP_REPS", 3, 1)
	batch := pgtest.EnvInt(b, "BENCH_GROUP_BATCH", 1000, 100)
	db := pgtest.NewDB(b)
	load(ctx, b, db, events)
	db.Pool.Close() // a template may have no other sessions
	h := db.Harness()

	var singles, groups, alones []time.Duration
	var split [2]int
	var share int
	for range b.N {
		for r := 0; r < reps; r++ {
			// The three measurements rotate their order from pair to pair, so each goes
			// first, second and last as often as the others.
			kinds := []string{"single", "group", "alone"}
			k := r % len(kinds)
			kinds = append(kinds[k:], kinds[:k]...)
			for _, kind := range kinds {
				url := cloneDB(ctx, b, h, db.Name, fmt.Sprintf("%s_%d_%s", db.Name, r, kind))
				switch kind {
				case "group":
					d, s := group(ctx, b, url, batch, events)
					groups = append(groups, d)
					split = s
				case "alone":
					d, n := alone(ctx, b, url, batch)
					alones = append(alones, d)
					share = n
				default:
					singles = append(singles, single(ctx, b, url, batch, events))
				}
			}
		}
	}
	sRate := float64(events) / median(singles).Seconds()
	gRate := float64(events) / median(groups).Seconds()
	work := median(singles).Seconds() / median(alones).Seconds()
	b.ReportMetric(sRate, "single-events/s")
	b.ReportMetric(gRate, "group-events/s")
	b.ReportMetric(gRate/sRate, "ratio")
	b.ReportMetric(work, "bound")
	// The same ratio taken within each round (its single worker's time over its group's,
	// measured minutes apart at most) and the median of those: the host this runs on drifts
	// (one worker's backend CPU for the same work has ranged 2.4-3.6 s between runs of this
	// bench), and a ratio of medians can pair a fast round's group with a slow round's worker.
	paired := make([]float64, len(groups))
	for i := range groups {
		paired[i] = singles[i].Seconds() / groups[i].Seconds()
	}
	b.ReportMetric(median(paired), "paired-ratio")

	var load1 string
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		load1 = strings.Fields(string(raw))[0]
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "groups: %d iu events over 1,000 streams, batch %d, %d rounds, %d CPUs, load average %s at the end\n", events, batch, reps, runtime.NumCPU(), load1)
	fmt.Fprintf(&tbl, "  single worker:        median %v (%.0f events/s), runs %v\n", median(singles).Round(time.Millisecond), sRate, roundAll(singles))
	fmt.Fprintf(&tbl, "  group of 2 (2 sessions): median %v (%.0f events/s), runs %v, split %d / %d\n", median(groups).Round(time.Millisecond), gRate, roundAll(groups), split[0], split[1])
	fmt.Fprintf(&tbl, "  one member alone:     median %v for its %d events (reads all %d), runs %v\n", median(alones).Round(time.Millisecond), share, events, roundAll(alones))
	fmt.Fprintf(&tbl, "  bound on 2 idle cores, single / one member alone: %.2f (wall), %.2f (backend CPU)\n", work,
		median(singleCPU).Seconds()/median(aloneCPU).Seconds())
	fmt.Fprintf(&tbl, "  backend CPU medians: single %v, group (both members) %v, one member alone %v\n",
		median(singleCPU), median(groupCPU), median(aloneCPU))
	fmt.Fprintf(&tbl, "  paired per round, single / group: %s, median %.2f\n", fmtRatios(paired), median(paired))
	fmt.Fprintf(&tbl, "  ratio group/single: %.2f (target >= 1.60)", gRate/sRate)
	fmt.Println(tbl.String())
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
