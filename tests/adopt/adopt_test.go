package adopt

// The adoption tests: the package installed onto the first generation's database (the
// fixture of fixture_test.go), as an operator does it, with the real iu-runner binary.

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/legacydb"
	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/runnertest"
)

// runner is the iu-runner binary, built once for the package's tests.
var runner runnertest.Binary

// The runner's exit codes the tests read (internal/cli): 0 done, 3 refused by the plan.
const (
	exitOK      = 0
	exitRefused = 3
)

// iu runs iu-runner with args against url and returns its output and exit code.
func iu(t testing.TB, url string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner.Path(t), append(args, "--database-url", url)...)
	cmd.Env = append(os.Environ(), "PGOPTIONS=", "DATABASE_URL=", "DATABASE_URL_FILE=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("iu-runner %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// iuOK runs iu-runner and fails the test unless it exits 0.
func iuOK(t testing.TB, url string, args ...string) string {
	t.Helper()
	out, errs, code := iu(t, url, args...)
	if code != exitOK {
		t.Fatalf("iu-runner %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// pgDump and requireSameDump: pgtest's, under the names these tests read best with.
func pgDump(t testing.TB, url string, schemaOnly bool, exclude ...string) string {
	t.Helper()
	return pgtest.Dump(t, url, schemaOnly, exclude...)
}

func requireSameDump(t testing.TB, what, before, after string) {
	t.Helper()
	pgtest.RequireSameDump(t, what, before, after)
}

// legacyTables are the first generation's tables and the columns it gave them, with the
// names adoption renames them to (the fingerprints read a row by either name).
var legacyTables = []struct {
	table, key, key2 string // key2: the second column of a two-column key
	cols             []string
	renamed          map[string]string
	// minus are keys adoption adds inside a legacy jsonb column, left out of the print.
	minus map[string]string
}{
	{table: "event_outbox", key: "id", cols: []string{"id", "event_domain", "event_type", "event_stream", "delivery_lane",
		"event_severity", "event_subject_table", "event_subject_ref", "safe_payload", "occurred_at", "created_at"}},
	{table: "iu_route_attempt", key: "id", cols: []string{"id", "event_ref", "route_kind", "status", "idempotency_key",
		"attempt_no", "detail", "error", "created_at"}},
	{table: "iu_route_dead_letter", key: "id", cols: []string{"id", "worker_name", "event_id", "event_domain", "event_type",
		"event_stream", "route_key", "idempotency_key", "event_snapshot", "error_code", "error_message", "failed_attempts",
		"first_failed_at", "last_failed_at", "resolved_at", "resolution"},
		minus: map[string]string{"event_snapshot": "txid"}},
	{table: "queue_heartbeat", key: "executor_name", cols: []string{"executor_name", "executor_kind", "status", "last_tick_at",
		"ticks_total", "metadata", "created_at"},
		renamed: map[string]string{"executor_name": "executor_id", "last_tick_at": "last_beat_at", "metadata": "last_beat_payload",
			"created_at": "registered_at"}},
	{table: "iu_route_worker_cursor", key: "worker_name", cols: []string{"worker_name", "event_domain", "events_seen",
		"attempts_written", "dead_lettered", "runs_total", "created_at"},
		renamed: map[string]string{"created_at": "registered_at"}},
	{table: "iu_outbound_route", key: "id", cols: []string{"id", "event_domain", "event_type", "event_stream", "route_key",
		"route_kind", "enabled", "dry_run", "created_at"}},
	{table: "event_type_registry", key: "event_domain", key2: "event_type", cols: []string{"event_domain", "event_type", "ratified_by", "ratified_at"}},
	{table: "dot_config", key: "key", cols: []string{"key", "value"}},
}

// fingerprints are, per legacy table, the md5 of its legacy rows (each row's legacy
// columns, under either name), and their count. keys limits each table to the rows whose
// key is listed (the legacy rows, when the table has gained rows since).
type fingerprints map[string]struct {
	md5  string
	rows int64
}

func takeFingerprints(t testing.TB, db *pgtest.DB, keys map[string][]string) fingerprints {
	t.Helper()
	out := fingerprints{}
	for _, lt := range legacyTables {
		col := columnNamer(t, db, lt.table, lt.renamed)
		var parts []string
		for _, c := range lt.cols {
			e := col(c) + "::text"
			if m, ok := lt.minus[c]; ok {
				e = fmt.Sprintf("(%s - '%s')::text", col(c), m)
			}
			parts = append(parts, e)
		}
		// The rows come to the test and are hashed here: limiting them to a list of keys in
		// SQL (93,001 of them) costs some planners a nested loop.
		q := fmt.Sprintf(`SELECT %s, ROW(%s)::text FROM public.%s t`, keyOf(col, lt.key, lt.key2), strings.Join(parts, ", "), lt.table)
		var limit map[string]bool
		if keys != nil && keys[lt.table] != nil {
			limit = map[string]bool{}
			for _, k := range keys[lt.table] {
				limit[k] = true
			}
		}
		rows, err := db.Pool.Query(pgtest.Ctx(t), q)
		if err != nil {
			t.Fatalf("fingerprint of %s: %v", lt.table, err)
		}
		var texts []string
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatalf("fingerprint of %s: %v", lt.table, err)
			}
			if limit == nil || limit[k] {
				texts = append(texts, v)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("fingerprint of %s: %v", lt.table, err)
		}
		sort.Strings(texts)
		sum := md5.Sum([]byte(strings.Join(texts, "\n")))
		fp := struct {
			md5  string
			rows int64
		}{hex.EncodeToString(sum[:]), int64(len(texts))}
		out[lt.table] = fp
	}
	return out
}

// columnNamer returns, for a legacy column name, the SQL naming it in table t today: the
// name adoption renamed it to, when the table has that one instead.
func columnNamer(t testing.TB, db *pgtest.DB, table string, renamed map[string]string) func(string) string {
	t.Helper()
	var have []string
	db.QueryRow(t, `SELECT array_agg(attname::text) FROM pg_attribute
	                 WHERE attrelid = ('public.' || $1)::regclass AND attnum > 0 AND NOT attisdropped`, []any{table}, &have)
	return func(c string) string {
		for _, h := range have {
			if h == c {
				return "t." + c
			}
		}
		if r, ok := renamed[c]; ok {
			return "t." + r
		}
		return "t." + c // missing: the query fails, naming it
	}
}

// keyOf is the SQL of a row's key as text.
func keyOf(col func(string) string, key, key2 string) string {
	if key2 == "" {
		return col(key) + "::text"
	}
	return col(key) + "::text || '/' || " + col(key2) + "::text"
}

// legacyKeys lists every row's key per legacy table (to fingerprint exactly those later).
func legacyKeys(t testing.TB, db *pgtest.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, lt := range legacyTables {
		var keys []string
		col := columnNamer(t, db, lt.table, lt.renamed)
		db.QueryRow(t, fmt.Sprintf(`SELECT coalesce(array_agg(%s), '{}') FROM public.%s t`,
			keyOf(col, lt.key, lt.key2), lt.table), nil, &keys)
		out[lt.table] = keys
	}
	return out
}

func requireSameFingerprints(t testing.TB, what string, before, after fingerprints) {
	t.Helper()
	for _, lt := range legacyTables {
		if before[lt.table] != after[lt.table] {
			t.Errorf("%s: %s: legacy rows were %d (md5 %s), now %d (md5 %s)", what, lt.table,
				before[lt.table].rows, before[lt.table].md5, after[lt.table].rows, after[lt.table].md5)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// owedEvents are the events of worker's domain that the legacy worker never audited (no
// attempt 1 under its key): those after its keyset, and those its keyset skipped.
func owedEvents(t testing.TB, db *pgtest.DB, worker string) (owed []string, afterKeyset, skipped int64) {
	t.Helper()
	db.QueryRow(t, `
		SELECT coalesce(array_agg(e.id::text ORDER BY e.id::text), '{}'),
		       count(*) FILTER (WHERE c.last_created_at IS NULL OR (e.created_at, e.id) > (c.last_created_at, c.last_event_id)),
		       count(*) FILTER (WHERE (e.created_at, e.id) <= (c.last_created_at, c.last_event_id))
		  FROM public.iu_route_worker_cursor c
		  JOIN public.event_outbox e ON e.event_domain = c.event_domain
		 WHERE c.worker_name = $1
		   AND NOT EXISTS (SELECT 1 FROM public.iu_route_attempt a
		                    WHERE a.event_ref = e.id AND a.attempt_no = 1
		                      AND a.idempotency_key LIKE 'iu_wrk:' || $1 || ':%')`,
		[]any{worker}, &owed, &afterKeyset, &skipped)
	return owed, afterKeyset, skipped
}

// adoptSeedDatabase is the whole adoption of the seeds' database on h, step by step as an
// operator runs it: plan, up with producers inserting, the first ticks, the legacy callers,
// and the rollback.
func adoptSeedDatabase(t *testing.T, h *pgtest.Harness, rows int) {
	ctx := pgtest.Ctx(t)
	db := h.NewDBOn(t, false)
	loadLegacy(t, db, rows)
	keys := legacyKeys(t, db)
	before := takeFingerprints(t, db, nil)
	owed, afterKeyset, skipped := owedEvents(t, db, legacyWorker)
	if afterKeyset == 0 || skipped == 0 {
		t.Fatalf("the fixture owes %d events after the keyset and %d it skipped: both must be there to prove anything", afterKeyset, skipped)
	}
	var maxAttempt int64
	db.QueryRow(t, `SELECT max(id) FROM public.iu_route_attempt`, nil, &maxAttempt)
	var gooseBefore string
	db.QueryRow(t, `SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM public.goose_db_version t`, nil, &gooseBefore)

	// The plan: nothing refused, the tables adopted.
	out := iuOK(t, db.URL, "migrate", "plan")
	for _, want := range []string{"adopt    table event_outbox", "adopt    table iu_route_attempt", "adopt    table queue_heartbeat"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plan: no %q line:\n%s", want, out)
		}
	}

	// up, while the legacy producer inserts and emits from two sessions.
	prods := legacydb.Start([]*pgx.Conn{db.ConnAs(t, "cutter_agent", "cutter_agent"), db.ConnAs(t, "cutter_agent", "cutter_agent")})
	start := time.Now()
	upOut, upErr, code := iu(t, db.URL, "migrate", "up")
	took := time.Since(start)
	prod := prods.Finish()
	if code != exitOK {
		t.Fatalf("migrate up: exit %d\n%s\n%s", code, upOut, upErr)
	}
	t.Logf("adoption of %d rows: migrate up %v; producers: %d calls, 0 may fail, longest %v (at +%v)",
		rows, took.Round(time.Millisecond), prod.Calls(), prod.Max.Round(time.Millisecond), prod.MaxAt.Round(time.Millisecond))
	if len(prod.Errs) > 0 {
		t.Fatalf("%d producer calls failed during adoption; first: %v", len(prod.Errs), prod.Errs[0])
	}
	if prod.Max > maxStall {
		t.Fatalf("a producer call waited %v during adoption: the bound is %v", prod.Max, maxStall)
	}
	var produced []string
	db.QueryRow(t, `SELECT coalesce(array_agg(id::text), '{}') FROM public.event_outbox
	                 WHERE safe_payload->>'n' IS NOT NULL AND (safe_payload->>'n')::int = ANY ($1::int[])`, []any{prod.Ns}, &produced)
	if len(produced) != len(prod.Ns) {
		t.Fatalf("producers inserted %d events, %d are in event_outbox", len(prod.Ns), len(produced))
	}

	// Every legacy row kept, as it was; the project's own goose history untouched.
	requireSameFingerprints(t, "after adoption", before, takeFingerprints(t, db, keys))
	var gooseAfter string
	db.QueryRow(t, `SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM public.goose_db_version t`, nil, &gooseAfter)
	if gooseAfter != gooseBefore {
		t.Fatal("goose_db_version changed: the package must record itself in iu_core_db_version only")
	}
	requireTrue(t, db, "the package recorded itself in its own version table",
		`SELECT max(version_id) >= 14 FROM public.iu_core_db_version`)

	// The adopted worker routes exactly what the legacy one never audited, and what was
	// produced during and after adoption, each once; a second pass finds nothing.
	var claimed int64
	for i := 0; i < 50; i++ {
		r := jsonOf(t, db, `SELECT public.fn_iu_route_worker_run($1, 10000)`, legacyWorker)
		if r["gated"] == true || r["busy"] == true {
			t.Fatalf("worker run: %v", r)
		}
		if num(t, r, "claimed") == 0 {
			break
		}
		claimed += num(t, r, "claimed")
	}
	want := append(append([]string{}, owed...), produced...)
	sort.Strings(want)
	var routed []string
	db.QueryRow(t, `SELECT coalesce(array_agg(event_ref::text ORDER BY event_ref::text), '{}') FROM public.iu_route_attempt
	                 WHERE id > $1 AND attempt_no = 1 AND idempotency_key LIKE 'iu_wrk:' || $2 || ':%'`,
		[]any{maxAttempt, legacyWorker}, &routed)
	if strings.Join(routed, ",") != strings.Join(want, ",") || claimed != int64(len(want)) {
		t.Fatalf("the adopted worker claimed %d and audited %d events; owed %d (%d after the keyset, %d skipped) + %d produced = %d",
			claimed, len(routed), len(owed), afterKeyset, skipped, len(produced), len(want))
	}
	t.Logf("first ticks routed %d events: %d after the legacy keyset, %d it had skipped, %d produced during adoption",
		claimed, afterKeyset, skipped, len(produced))
	r := jsonOf(t, db, `SELECT public.fn_iu_route_worker_run($1, 10000)`, legacyWorker)
	if num(t, r, "claimed") != 0 {
		t.Fatalf("a second pass claimed again: %v", r)
	}
	requireTrue(t, db, "no event audited twice by the legacy worker and the adopted one together", `
		SELECT NOT EXISTS (SELECT 1 FROM public.iu_route_attempt WHERE attempt_no = 1
		                   GROUP BY event_ref, split_part(idempotency_key, ':', 2) HAVING count(*) > 1)`)

	legacyCallersStillWork(t, db)

	// The rollback gives the legacy shape back, with every row: those written since too.
	// The configuration and the vocabulary keep their legacy rows (with today's values);
	// the package's own keys and event types go with it.
	only := map[string][]string{"dot_config": keys["dot_config"], "event_type_registry": keys["event_type_registry"]}
	rowsNow := takeFingerprints(t, db, only)
	start = time.Now()
	iuOK(t, db.URL, "migrate", "down", "--to", "0")
	t.Logf("rollback: %v", time.Since(start).Round(time.Millisecond))
	requireSameFingerprints(t, "after the rollback", rowsNow, takeFingerprints(t, db, nil))
	requireTrue(t, db, "the rollback left no package schema", `SELECT to_regnamespace('iu_core') IS NULL`)
	legacyWorkerRoutesAgain(t, db, ctx)
}

// legacyWorkerRoutesAgain: after the rollback the first generation's worker is back, from
// its own keyset cursor (which adoption never moved): it runs and audits without error.
func legacyWorkerRoutesAgain(t *testing.T, db *pgtest.DB, ctx context.Context) {
	t.Helper()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'unit_cut_completed', 'cut')`); err != nil {
		t.Fatalf("insert after the rollback: %v", err)
	}
	r := jsonOf(t, db, `SELECT fn_iu_route_worker_run('iu_outbound_default', 100000)`)
	if r["gated"] == true || num(t, r, "claimed") == 0 {
		t.Fatalf("the legacy worker after the rollback: %v", r)
	}
}

// maxStall bounds the longest a producer's call may wait while the package adopts the
// table, here, where other tests share the machine: it fails when a lock is held across
// the whole adoption (as an ALTER TABLE queued behind a long transaction would). The
// figure against the product's target (1 s on a 1,000,000-row outbox) is measured with
// nothing else running, by bench/adopt; this test prints what it saw.
const maxStall = 5 * time.Second

// legacyCallersStillWork: every call the seeds show keeps working after adoption, with the
// same meaning, under the same roles.
func legacyCallersStillWork(t *testing.T, db *pgtest.DB) {
	t.Helper()
	ctx := pgtest.Ctx(t)
	cutter := db.ConnAs(t, "cutter_agent", "cutter_agent")
	var id string
	if err := cutter.QueryRow(ctx, `SELECT fn_iu_emit_event('system', 'alert', 'healthcheck', 'immediate', 'warning', 'queue_heartbeat',
	                                                 'iu_outbound_default', '{"age_seconds": 363600}')::text`).Scan(&id); err != nil {
		t.Fatalf("the positional emit, as the legacy producer: %v", err)
	}
	requireTrue(t, db, "the positional emit stored every argument in its column", `
		SELECT event_domain = 'system' AND event_type = 'alert' AND event_stream = 'healthcheck' AND delivery_lane = 'immediate'
		   AND event_severity = 'warning' AND event_subject_table = 'queue_heartbeat' AND event_subject_ref = 'iu_outbound_default'
		   AND safe_payload = '{"age_seconds": 363600}'
		  FROM public.event_outbox WHERE id = $1`, id)

	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE workflow_admin`); err != nil {
		t.Fatal(err)
	}
	var pc1, pc2 string
	if err := tx.QueryRow(ctx, `SELECT fn_cut_heartbeat_ping('iu_outbound_default', 'PG_worker', 'ok', '{}')::text`).Scan(&pc1); err != nil {
		t.Fatalf("ping, protected executor: %v", err)
	}
	if !strings.Contains(pc1, `"refused": true`) || !strings.Contains(pc1, "protected_legacy_silent_passive") {
		t.Fatalf("PC.1: the silent legacy worker must not be healed by a ping: %s", pc1)
	}
	if err := tx.QueryRow(ctx, `SELECT fn_cut_heartbeat_ping('cut_pipeline_operator_test', 'external_worker', 'ok', '{"phase": "053_proof"}')::text`).Scan(&pc2); err != nil {
		t.Fatalf("ping, new executor: %v", err)
	}
	if !strings.Contains(pc2, `"ticks_total": 1`) {
		t.Fatalf("PC.2: %s", pc2)
	}
	_, err = tx.Exec(ctx, `SELECT fn_cut_heartbeat_ping('cut_pipeline_operator_test', 'MOT_invalid')`)
	// The same refusal and message; the package's SQLSTATE names the fault (invalid parameter).
	if e := pgtest.RequireSQLState(t, err, "22023"); !strings.HasPrefix(e.Message, "fn_cut_heartbeat_ping: p_executor_kind 'MOT_invalid' not in 7-vocab") {
		t.Fatalf("PC.3: %s", e.Message)
	}
	_ = tx.Rollback(ctx)

	tx, err = db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE dot_executor`); err != nil {
		t.Fatal(err)
	}
	var ticks int64
	if err := tx.QueryRow(ctx, `SELECT (fn_queue_heartbeat_tick('dieu45_phase3_pilot', 'external_worker', 'ok', '{"phase": "3"}') ->> 'ticks_total')::bigint`).Scan(&ticks); err != nil {
		t.Fatalf("the legacy tick, as dot_executor: %v", err)
	}
	if ticks != 38 {
		t.Fatalf("the legacy executor dieu45_phase3_pilot had 37 ticks: one more is 38, got %d", ticks)
	}
	_ = tx.Rollback(ctx)

	// hc_executor_last_run is a heartbeat row, beaten by each write of the key.
	db.Exec(t, `UPDATE public.dot_config SET value = now()::text WHERE key = 'hc_executor_last_run'`)
	requireTrue(t, db, "a write of hc_executor_last_run beats hc_executor",
		`SELECT now() - last_beat_at < interval '1 minute' FROM public.queue_heartbeat WHERE executor_id = 'hc_executor'`)
	// So does a write that keeps a value that is no timestamp (the writer's "done", say):
	// dot_config's updated_at moves only when the value changes, and the beat is the write's.
	db.Exec(t, `UPDATE public.dot_config SET value = 'done' WHERE key = 'hc_executor_last_run'`)
	// An hour passes (the row's and the heartbeat's moments move back; the triggers are
	// kept out of that write).
	db.Exec(t, `DO $$ BEGIN
	                SET LOCAL session_replication_role = replica;
	                UPDATE public.dot_config SET updated_at = now() - interval '1 hour' WHERE key = 'hc_executor_last_run';
	                UPDATE public.queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = 'hc_executor';
	            END $$`)
	db.Exec(t, `UPDATE public.dot_config SET value = 'done' WHERE key = 'hc_executor_last_run'`)
	requireTrue(t, db, "a write of the same non-timestamp value beats hc_executor",
		`SELECT now() - last_beat_at < interval '1 minute' FROM public.queue_heartbeat WHERE executor_id = 'hc_executor'`)

	// A view the user built on event_outbox sees new rows; the legacy dead letters replay.
	requireTrue(t, db, "the user's view reads the adopted table", `
		SELECT sum(events) = (SELECT count(*) FROM public.event_outbox) FROM public.v_event_outbox_daily`)
	var dl string
	db.QueryRow(t, `SELECT id::text FROM public.iu_route_dead_letter WHERE resolved_at IS NULL ORDER BY id LIMIT 1`, nil, &dl)
	rep := jsonOf(t, db, `SELECT public.fn_iu_route_dead_letter_replay($1::uuid)`, dl)
	if rep["replayed"] != true || num(t, rep, "attempt_no") < 2 {
		t.Fatalf("a legacy dead letter replays: %v", rep)
	}
}

// Rule: the seeds' database (93,001 rows) is adopted in place while its producer inserts
// and emits: no call fails or waits more than a second, every legacy row and id is kept,
// the project's goose history is untouched, the adopted worker routes exactly the events
// the legacy worker never audited (after its keyset, and those it skipped) plus the new
// ones, each once, the legacy callers and views keep working, and the rollback gives the
// legacy shape back with every row, including those written since.
func TestAdopt_SeedDatabase(t *testing.T) {
	t.Parallel()
	h, err := pgtest.Current()
	if err != nil {
		t.Fatal(err)
	}
	adoptSeedDatabase(t, h, seedRows)
}

// Rule: the same on PostgreSQL 13, the oldest version the package supports.
func TestAdopt_SeedDatabase_PostgreSQL13(t *testing.T) {
	t.Parallel()
	adoptSeedDatabase(t, majorHarness(t, pgtest.PG13BinDir(t), "13"), seedRows)
}
