package pgqbench

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// producer is one insert path: a statement run by each client in autocommit, writing
// perCall rows (1 unless set).
type producer struct {
	key, label string
	sql        string    // $1: a subject ref, distinct per call
	perCall    int       // rows one statement writes (0: 1)
	rates      []float64 // rows per second, one per round
}

// eventsPerCall is the set size of the fn_iu_emit_events path.
const eventsPerCall = 100

// bareTables: copies of event_outbox made in the bench database with
// CREATE TABLE ... (LIKE event_outbox ...), so they follow whatever the migrations
// install: columns, defaults and NOT NULLs always; the row rules (the table's CHECKs and
// its columns' domain constraints) only where asked: elsewhere a column whose type is a
// domain gets the domain's base type; triggers never (LIKE copies none), except the
// NOTIFY bridge's, copied explicitly when event_outbox carries them. Indexes are not
// taken from LIKE: event_outbox is partitioned, and LIKE of the parent copies only the
// parent's own index, not the PRIMARY KEY (id) every partition carries. Each copy gets
// instead the indexes of the partition a new outbox row lands in (landingIndexes), so
// "bare" maintains exactly the indexes a producer's INSERT into event_outbox maintains.
var bareTables = []struct {
	name, like string
	rules      bool
}{
	{"bench_bare", "INCLUDING DEFAULTS", false},
	{"bench_bare_checks", "INCLUDING DEFAULTS INCLUDING CONSTRAINTS", true},
	{"bench_bare_bridge", "INCLUDING DEFAULTS", false},
}

// BenchmarkPgqProducers: insert rates (single-row statements; fn_iu_emit_events 100 events
// a call, counted per event), 2 concurrent clients, synchronous_commit
// off, with as many rows already present in each target as in the outbox (default
// 1,000,000): pgq.insert_event, fn_iu_emit_event, a direct INSERT into event_outbox,
// bare copies of the outbox (no CHECKs, no triggers / with its CHECKs / with only the
// NOTIFY bridge's trigger, gate as installed). Each round measures every path for a
// fixed time, in a rotating order; the figure is the median of the rounds.
func BenchmarkPgqProducers(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := pgtest.EnvInt(b, "BENCH_OUTBOX_ROWS", defaultRows, 20_000)
	seconds := pgtest.EnvInt(b, "BENCH_PRODUCER_SECONDS", 5, 1)
	rounds := pgtest.EnvInt(b, "BENCH_PRODUCER_ROUNDS", 3, 1)

	db := pgtest.NewDB(b)
	requirePgq(ctx, b, db)
	loadStart := time.Now()
	loadOutbox(ctx, b, db, rows, false)
	conn := connect(ctx, b, db.URL)
	bridge := prepareProducers(ctx, b, conn, rows)
	exec(ctx, b, conn, "vacuum analyze", `VACUUM ANALYZE`)
	var gate string
	if err := conn.QueryRow(ctx, `SELECT coalesce((SELECT value FROM dot_config WHERE key = 'queue.notify.bridge_enabled'), '(unset)')`).Scan(&gate); err != nil {
		b.Fatal(err)
	}
	loadTime := time.Since(loadStart).Round(time.Millisecond)

	const outboxCols = `(event_domain, event_type, event_stream, event_subject_table, event_subject_ref, safe_payload)
	                    VALUES ('iu', 'unit_version_created', 'main', 'unit', $1, '{}'::jsonb)`
	producers := []*producer{
		{key: "pgq", label: "pgq.insert_event", sql: `SELECT pgq.insert_event('prod_q', 'unit_version_created', '{}', 'main', 'unit', $1, NULL)`},
		{key: "emit", label: "fn_iu_emit_event", sql: `SELECT fn_iu_emit_event('iu', 'unit_version_created', 'main', 'standard', 'info', 'unit', $1, '{}'::jsonb)`},
		{key: "direct", label: "INSERT event_outbox", sql: `INSERT INTO event_outbox ` + outboxCols},
		// 100 events a call, each its own subject ref ($1 || '-' || i), the rest emit's defaults
		// but the subject table; rows/s counts events.
		{key: "emits", label: fmt.Sprintf("fn_iu_emit_events x%d", eventsPerCall), perCall: eventsPerCall,
			sql: fmt.Sprintf(`SELECT fn_iu_emit_events('iu', 'unit_version_created', array_fill('main'::text, ARRAY[%[1]d]), NULL, NULL,
			                  array_fill('unit'::text, ARRAY[%[1]d]), ARRAY(SELECT $1 || '-' || g FROM generate_series(1, %[1]d) g), NULL)`, eventsPerCall)},
		{key: "bare", label: "bare (no CHECKs/triggers)", sql: `INSERT INTO bench_bare ` + outboxCols},
		{key: "checks", label: "bare + outbox CHECKs", sql: `INSERT INTO bench_bare_checks ` + outboxCols},
	}
	// Always measured: the bare copy with whatever bridge trigger event_outbox carries with
	// the gate as installed (closed: none, so this is the cost of a closed gate).
	producers = append(producers, &producer{key: "bridge", label: "bare + bridge (gate as is)",
		sql: `INSERT INTO bench_bare_bridge ` + outboxCols})

	clients := make([]*pgx.Conn, 2)
	for i := range clients {
		clients[i] = connect(ctx, b, db.URL)
		exec(ctx, b, clients[i], "synchronous_commit off", `SET synchronous_commit = off`)
	}
	// One untimed second per path first: statements prepared, the indexes' hot pages read.
	for _, p := range producers {
		insertRate(ctx, b, clients, p, time.Second)
	}
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			for k := range producers {
				p := producers[(r+k)%len(producers)]
				p.rates = append(p.rates, insertRate(ctx, b, clients, p, time.Duration(seconds)*time.Second))
			}
		}
	}
	b.StopTimer()
	rate := map[string]float64{}
	byKey := map[string]*producer{}
	for _, p := range producers {
		rate[p.key] = medianF(p.rates)
		byKey[p.key] = p
		b.ReportMetric(rate[p.key], p.key+"-rows/s")
	}
	// paired: the median of the per-round ratios. A round measures every path within a few
	// seconds of the others, so on a shared machine whose load drifts during the run this is
	// steadier than the ratio of the medians.
	paired := func(num, den string) float64 {
		var rs []float64
		for i := range byKey[num].rates {
			rs = append(rs, byKey[num].rates[i]/byKey[den].rates[i])
		}
		return medianF(rs)
	}
	b.ReportMetric(rate["emit"]/rate["pgq"], "emit/pgq")
	b.ReportMetric(rate["direct"]/rate["pgq"], "direct/pgq")
	b.ReportMetric(rate["emits"]/rate["pgq"], "emits/pgq")
	b.ReportMetric(rate["direct"]/rate["bare"], "direct/bare")
	b.ReportMetric(rate["bridge"]/rate["bare"], "bridge/bare")

	var tbl strings.Builder
	fmt.Fprintf(&tbl, "producer insert rates: autocommit statements (single-row; fn_iu_emit_events %d events a call, counted per event), %d clients, synchronous_commit off, ~%d rows present in each target, %d rounds x %ds, loaded in %s; NOTIFY gate %q\n",
		eventsPerCall, len(clients), rows, rounds, seconds, loadTime, gate)
	fmt.Fprintf(&tbl, "%-27s | %10s | %s\n", "path", "rows/s", "each round")
	for _, p := range producers {
		var each []string
		for _, x := range p.rates {
			each = append(each, fmt.Sprintf("%.0f", x))
		}
		fmt.Fprintf(&tbl, "%-27s | %10.0f | %s\n", p.label, rate[p.key], strings.Join(each, " "))
	}
	fmt.Fprintf(&tbl, "producers vs pgq.insert_event (rows/s, medians): direct INSERT %s (target >= 0.9), fn_iu_emit_event %s (target >= 0.75), fn_iu_emit_events per event at %d/call %s (target >= 2.0)\n",
		fmtRatio(rate["direct"]/rate["pgq"]), fmtRatio(rate["emit"]/rate["pgq"]), eventsPerCall, fmtRatio(rate["emits"]/rate["pgq"]))
	fmt.Fprintf(&tbl, "ratios: direct/bare %s, bare+CHECKs/bare %s",
		fmtRatio(rate["direct"]/rate["bare"]), fmtRatio(rate["checks"]/rate["bare"]))
	if bridge == "" {
		bridge = "none on event_outbox: a closed gate installs no trigger"
	}
	fmt.Fprintf(&tbl, ", bare+bridge/bare %s (closed gate: target ~1.00; trigger copied: %s)", fmtRatio(rate["bridge"]/rate["bare"]), bridge)
	fmt.Fprintf(&tbl, "\npaired (median of the per-round ratios): direct/PgQ %s, emit/PgQ %s, emits/PgQ %s, direct/bare %s, bare+CHECKs/bare %s, bare+bridge/bare %s",
		fmtRatio(paired("direct", "pgq")), fmtRatio(paired("emit", "pgq")), fmtRatio(paired("emits", "pgq")),
		fmtRatio(paired("direct", "bare")), fmtRatio(paired("checks", "bare")), fmtRatio(paired("bridge", "bare")))
	fmt.Println(tbl.String())
}

// prepareProducers builds the PgQ queue and the bare copies with `rows` rows each and
// returns the name of the NOTIFY bridge's trigger copied onto bench_bare_bridge ("" when
// event_outbox has none).
func prepareProducers(ctx context.Context, b *testing.B, conn *pgx.Conn, rows int) string {
	b.Helper()
	exec(ctx, b, conn, "pgq.create_queue", `SELECT pgq.create_queue('prod_q')`)
	var table, seq string
	if err := conn.QueryRow(ctx, `SELECT queue_data_pfx || '_' || queue_cur_table, queue_event_seq FROM pgq.queue WHERE queue_name = 'prod_q'`).Scan(&table, &seq); err != nil {
		b.Fatalf("finding the PgQ event table: %v", err)
	}
	// The queue's current event table directly, in one statement (what pgq.insert_event
	// writes, without a function call per row).
	exec(ctx, b, conn, "preloading the PgQ queue", `
		INSERT INTO `+table+` (ev_id, ev_time, ev_txid, ev_type, ev_data, ev_extra1, ev_extra2, ev_extra3)
		SELECT nextval($2), now(), txid_current(), 'unit_version_created', '{}', 'main', 'unit', 'u-' || g
		  FROM generate_series(1, $1::int) g`, rows, seq)
	indexes := landingIndexes(ctx, b, conn)
	for _, t := range bareTables {
		exec(ctx, b, conn, "creating "+t.name, `CREATE TABLE `+t.name+` (LIKE event_outbox `+t.like+`)`)
		for _, def := range indexes {
			// "CREATE [UNIQUE] INDEX <name> ON <partition> USING ..." re-pointed at the copy,
			// the name left to PostgreSQL.
			exec(ctx, b, conn, "indexing "+t.name, indexTarget.ReplaceAllString(def, "CREATE ${1}INDEX ON "+t.name+" "))
		}
		if !t.rules {
			// No row rules: each domain-typed column becomes its base type (the table is
			// still empty, so nothing is rewritten).
			exec(ctx, b, conn, "stripping the domains of "+t.name, pgtest.StripDomainsSQL(t.name))
		}
		// The outbox's rows as they are, txid included. Where the row rules are kept, every
		// column has the same domain in both tables, so the copy coerces nothing and the txid
		// rule (the stored txid is the inserter's) does not refuse the old rows; the timed
		// inserts pay for it.
		exec(ctx, b, conn, "preloading "+t.name, `INSERT INTO `+t.name+` SELECT * FROM event_outbox LIMIT $1`, rows)
	}
	// The bridge's trigger, as the migrations define it, re-pointed at the bare copy.
	var name, def string
	err := conn.QueryRow(ctx, `
		SELECT t.tgname, pg_get_triggerdef(t.oid)
		  FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
		 WHERE t.tgrelid = 'event_outbox'::regclass AND NOT t.tgisinternal
		   AND (p.proname LIKE '%notify%' OR p.proname LIKE '%wake%')
		 ORDER BY t.tgname LIMIT 1`).Scan(&name, &def)
	if err == pgx.ErrNoRows {
		return ""
	}
	if err != nil {
		b.Fatalf("finding the NOTIFY bridge trigger: %v", err)
	}
	moved := strings.Replace(def, " ON public.event_outbox ", " ON public.bench_bare_bridge ", 1)
	moved = strings.Replace(moved, " ON event_outbox ", " ON bench_bare_bridge ", 1)
	if moved == def {
		b.Fatalf("cannot re-point the bridge trigger: %s", def)
	}
	exec(ctx, b, conn, "copying the bridge trigger", moved)
	return name
}

// indexTarget matches the head of pg_get_indexdef's answer up to the indexed table's name.
var indexTarget = regexp.MustCompile(`^CREATE (UNIQUE )?INDEX \S+ ON \S+ `)

// landingIndexes returns the definitions (pg_get_indexdef) of the indexes of the partition
// a producer's row inserted into event_outbox now lands in: found by inserting one row in a
// transaction that is rolled back, so it follows the partitioning whatever the migrations
// make of it (a partition's own PRIMARY KEY, the parent's partitioned indexes).
func landingIndexes(ctx context.Context, b *testing.B, conn *pgx.Conn) []string {
	b.Helper()
	tx, err := conn.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var part string
	if err := tx.QueryRow(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
		VALUES ('bench', 'landing_probe', 'main') RETURNING tableoid::regclass::text`).Scan(&part); err != nil {
		b.Fatalf("finding the partition a new outbox row lands in: %v", err)
	}
	rows, err := tx.Query(ctx, `SELECT pg_get_indexdef(x.indexrelid) FROM pg_index x
		WHERE x.indrelid = $1::regclass ORDER BY x.indexrelid`, part)
	if err != nil {
		b.Fatalf("reading the indexes of %s: %v", part, err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatalf("reading the indexes of %s: %v", part, err)
	}
	for _, d := range defs {
		if !indexTarget.MatchString(d) {
			b.Fatalf("cannot re-point index definition %q", d)
		}
	}
	if len(defs) == 0 {
		b.Fatalf("partition %s has no index: the bare copies would have none either", part)
	}
	fmt.Printf("bare copies carry the indexes of %s, where a new outbox row lands: %s\n", part, strings.Join(defs, "; "))
	return defs
}

// insertRate runs p from every client for d and returns the total rows per second.
func insertRate(ctx context.Context, b *testing.B, clients []*pgx.Conn, p *producer, d time.Duration) float64 {
	b.Helper()
	var wg sync.WaitGroup
	counts := make([]int, len(clients))
	errs := make([]error, len(clients))
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				if _, err := c.Exec(ctx, p.sql, fmt.Sprintf("u-%d-%d", i, n)); err != nil {
					errs[i] = fmt.Errorf("%s: %w", p.label, err)
					return
				}
				counts[i] += max(p.perCall, 1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for i := range clients {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		total += counts[i]
	}
	return float64(total) / elapsed.Seconds()
}
