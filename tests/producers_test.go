package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: the outbox's row rules (names non-empty and at most 200 bytes, lane and severity from their lists, the
// payload a JSON object free of denylisted keys at any depth and in any letter case, the
// stale-check's alert types queue_worker_silent and queue_worker_recovered reserved to the
// package in every domain) hold on every write path a producer with INSERT has: one row, a
// bad row behind a good one in a multi-row VALUES, INSERT ... SELECT, a data-modifying CTE,
// explicit casts to the base type, and COPY. The rules are enforced by the columns'
// domains, not by table CHECKs or row triggers (those are re-planned for every statement);
// this test is the attempt to get around them. Nothing of a refused statement is stored.
func TestProducers_RowRulesHoldOnEveryWritePath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	p, _ := producer(t, db)
	c := ctx(t)
	good := `('iu', 'prod', 's', 'standard', 'info', '{"ok": 1}'::jsonb)`
	bad := map[string]string{
		"empty domain":            `('', 'prod', 's', 'standard', 'info', '{}'::jsonb)`,
		"empty type":              `('iu', '', 's', 'standard', 'info', '{}'::jsonb)`,
		"empty stream":            `('iu', 'prod', '', 'standard', 'info', '{}'::jsonb)`,
		"domain over 200 bytes":   `(repeat('d', 201), 'prod', 's', 'standard', 'info', '{}'::jsonb)`,
		"type over 200 bytes":     `('iu', repeat('t', 201), 's', 'standard', 'info', '{}'::jsonb)`,
		"stream over 200 bytes":   `('iu', 'prod', repeat('s', 201), 'standard', 'info', '{}'::jsonb)`,
		"stream of 20 MB":         `('iu', 'prod', repeat('s', 20000000), 'standard', 'info', '{}'::jsonb)`,
		"lane":                    `('iu', 'prod', 's', 'urgent', 'info', '{}'::jsonb)`,
		"lane, letter case":       `('iu', 'prod', 's', 'Standard', 'info', '{}'::jsonb)`,
		"severity":                `('iu', 'prod', 's', 'standard', 'fatal', '{}'::jsonb)`,
		"payload not an object":   `('iu', 'prod', 's', 'standard', 'info', '[1]'::jsonb)`,
		"payload scalar":          `('iu', 'prod', 's', 'standard', 'info', '"x"'::jsonb)`,
		"hygiene, deep, any case": `('iu', 'prod', 's', 'standard', 'info', '{"a": [1, {"b": {"PassWord": 1}}]}'::jsonb)`,
	}
	const cols = `(event_domain, event_type, event_stream, delivery_lane, event_severity, safe_payload)`
	count := func() int {
		var n int
		db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE event_type <> 'good_copy'`, nil, &n)
		return n
	}
	before := count()
	for name, row := range bad {
		for path, stmt := range map[string]string{
			"VALUES":             `INSERT INTO event_outbox ` + cols + ` VALUES ` + row,
			"behind a good row":  `INSERT INTO event_outbox ` + cols + ` VALUES ` + good + `, ` + row,
			"INSERT ... SELECT":  `INSERT INTO event_outbox ` + cols + ` SELECT * FROM (VALUES ` + row + `) v`,
			"CTE":                `WITH w AS (INSERT INTO event_outbox ` + cols + ` VALUES ` + row + `) SELECT 1`,
			"cast to base types": `INSERT INTO event_outbox ` + cols + ` SELECT a::text, b::text, c::text, d::text, e::text, f::jsonb FROM (VALUES ` + row + `) v(a, b, c, d, e, f)`,
		} {
			_, err := p.Exec(c, stmt)
			if e := requireSQLState(t, err, "23514"); e == nil {
				t.Fatalf("%s via %s: accepted", name, path)
			}
		}
		// COPY: the same rules on the bulk path (text format; the row as psql would send it).
		var fields []string
		if err := db.Pool.QueryRow(c, `SELECT ARRAY[a, b, c, d, e, f::text] FROM (VALUES `+row+`) v(a, b, c, d, e, f)`).Scan(&fields); err != nil {
			t.Fatal(err)
		}
		_, err := p.PgConn().CopyFrom(c, strings.NewReader(strings.Join(fields, "\t")+"\n"),
			`COPY event_outbox `+cols+` FROM STDIN`)
		requireSQLState(t, err, "23514")
	}
	if n := count(); n != before {
		t.Fatalf("refused statements stored %d rows", n-before)
	}

	// The stale-check's alerts: refused on every path (42501), however they are written, in
	// domain system and in any other (the type names are reserved); near misses are
	// ordinary events.
	alert := `('system', 'queue_worker_silent', 'alert', 'immediate', 'critical', '{}'::jsonb)`
	for path, stmt := range map[string]string{
		"VALUES":            `INSERT INTO event_outbox ` + cols + ` VALUES ` + alert,
		"behind a good row": `INSERT INTO event_outbox ` + cols + ` VALUES ` + good + `, ` + alert,
		"INSERT ... SELECT": `INSERT INTO event_outbox ` + cols + ` SELECT 'system', 'queue_worker_' || 'recovered', 'alert', 'standard', 'info', '{}'::jsonb`,
		"another domain":    `INSERT INTO event_outbox ` + cols + ` VALUES ('ops', 'queue_worker_silent', 'alert', 'standard', 'info', '{}'::jsonb)`,
		"cast to text":      `INSERT INTO event_outbox ` + cols + ` SELECT 'system', 'queue_worker_silent'::text, 'alert', 'standard', 'info', '{}'::jsonb`,
	} {
		_, err := p.Exec(c, stmt)
		if e := requireSQLState(t, err, "42501"); !strings.HasPrefix(e.Message, "fn_iu_event_outbox_package_only: ") {
			t.Fatalf("alert via %s: refused by %q", path, e.Message)
		}
	}
	_, err := p.PgConn().CopyFrom(c, strings.NewReader("system\tqueue_worker_silent\talert\tstandard\tinfo\t{}\n"),
		`COPY event_outbox `+cols+` FROM STDIN`)
	requireSQLState(t, err, "42501")
	for _, ok := range []string{
		`('ops', 'queue_worker_silenced', 'alert', 'standard', 'info', '{}'::jsonb)`,
		`('system', 'queue_worker_silenced', 'alert', 'standard', 'info', '{}'::jsonb)`,
		`('system', 'queue_worker', 'alert', 'standard', 'info', '{}'::jsonb)`,
	} {
		if _, err := p.Exec(c, `INSERT INTO event_outbox `+cols+` VALUES `+ok); err != nil {
			t.Fatalf("%s is an ordinary event: %v", ok, err)
		}
	}
	if n := count(); n != before+3 {
		t.Fatalf("stored %d rows, want only the 3 ordinary ones", n-before)
	}
}

// Rule: a writable public schema never hands out the package owner's rights through
// fn_iu_emit_event: it searches only pg_catalog (search_path = pg_catalog, pg_temp) and
// names the package's objects with their schema, so it resolves nothing a planted object
// could win. An untrusted role that may CREATE in public plants overloads of the functions
// and operators emit (and a careless edit of it) would use, each logging the role it ran as,
// and an executor emits: the event is stored and nothing planted ran. The refusing paths
// (a broken argument rule, an unregistered type) give their own errors, and run nothing
// planted either.
func TestSchemaAttack_EmitResolvesNothingPlanted(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	attacker, executor := "atk_"+db.Name, "exe_"+db.Name
	for _, r := range []string{attacker, executor} {
		db.Exec(t, `CREATE ROLE `+pgx.Identifier{r}.Sanitize()+` LOGIN PASSWORD 'pw'`)
	}
	t.Cleanup(func() {
		for _, r := range []string{attacker, executor} {
			_, _ = db.Pool.Exec(context.Background(), `DROP OWNED BY `+pgx.Identifier{r}.Sanitize())
			_, _ = db.Pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+pgx.Identifier{r}.Sanitize())
		}
	})
	db.Exec(t, `GRANT dot_executor TO `+pgx.Identifier{executor}.Sanitize())
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'planted')`)
	db.Exec(t, `GRANT CREATE ON SCHEMA public TO `+pgx.Identifier{attacker}.Sanitize())

	atk := db.ConnAs(t, attacker, "pw")
	logAs := `BEGIN INSERT INTO public.attack_log VALUES (current_user); RETURN %s; END`
	plant := []string{
		`CREATE TABLE public.attack_log (ran_as text)`,
		`GRANT INSERT ON public.attack_log TO PUBLIC`,
		// A jsonb_build_object that beats the built-in VARIADIC "any" one (the classic).
		`CREATE FUNCTION public.jsonb_build_object(k1 text, v1 boolean, k2 text, v2 text) RETURNS jsonb LANGUAGE plpgsql AS $$` +
			strings.Replace(logAs, "%s", "pg_catalog.jsonb_build_object(k1, v1, k2, v2)", 1) + `$$`,
		// Overloads that would beat format(text, VARIADIC "any") and concat(VARIADIC "any").
		`CREATE FUNCTION public.format(f text, a text, b text) RETURNS text LANGUAGE plpgsql AS $$` +
			strings.Replace(logAs, "%s", "pg_catalog.format(f, a, b)", 1) + `$$`,
		`CREATE FUNCTION public.concat(a text, b text) RETURNS text LANGUAGE plpgsql AS $$` +
			strings.Replace(logAs, "%s", "a || b", 1) + `$$`,
		// Same-signature twins of what the accepting path calls: they would switch the checks
		// off if they were ever chosen.
		`CREATE FUNCTION public.octet_length(v text) RETURNS integer LANGUAGE plpgsql AS $$` + strings.Replace(logAs, "%s", "0", 1) + `$$`,
		`CREATE FUNCTION public.btrim(v text, s text) RETURNS text LANGUAGE plpgsql AS $$` + strings.Replace(logAs, "%s", "'x'", 1) + `$$`,
		`CREATE FUNCTION public.jsonb_typeof(v jsonb) RETURNS text LANGUAGE plpgsql AS $$` + strings.Replace(logAs, "%s", "'object'", 1) + `$$`,
		`CREATE FUNCTION public.atk_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$` + strings.Replace(logAs, "%s", "false", 1) + `$$`,
		`CREATE FUNCTION public.atk_gt(a integer, b integer) RETURNS boolean LANGUAGE plpgsql AS $$` + strings.Replace(logAs, "%s", "false", 1) + `$$`,
		`CREATE FUNCTION public.atk_re(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$` + strings.Replace(logAs, "%s", "false", 1) + `$$`,
		`CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.atk_eq)`,
		`CREATE OPERATOR public.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.atk_eq)`,
		`CREATE OPERATOR public.> (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.atk_gt)`,
		`CREATE OPERATOR public.~* (LEFTARG = text, RIGHTARG = text, FUNCTION = public.atk_re)`,
	}
	for _, stmt := range plant {
		mustExec(t, atk, stmt)
	}
	ranAs := func() string {
		var s string
		db.QueryRow(t, `SELECT coalesce(string_agg(ran_as, ','), '') FROM public.attack_log`, nil, &s)
		return s
	}

	exe := db.ConnAs(t, executor, "pw")
	var id string
	if err := exe.QueryRow(c, `SELECT fn_iu_emit_event('iu', 'planted', 's', 'immediate', 'warning', 'unit', 'u-1', '{"n": 1}')::text`).Scan(&id); err != nil {
		t.Fatalf("emit with planted overloads around: %v", err)
	}
	if got := ranAs(); got != "" {
		t.Fatalf("the accepting path ran planted objects as %q", got)
	}
	var stored int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE id = $1::uuid AND event_type OPERATOR(pg_catalog.=) 'planted'
	                 AND delivery_lane OPERATOR(pg_catalog.=) 'immediate' AND event_subject_ref OPERATOR(pg_catalog.=) 'u-1'`, []any{id}, &stored)
	if stored != 1 {
		t.Fatalf("the emitted event %s was not stored as given", id)
	}

	// The refusing paths resolve nothing planted either: each gives its own refusal.
	for name, stmt := range map[string]string{
		"broken rule":  `SELECT fn_iu_emit_event('iu', 'planted', 's', 'standard', 'info', NULL, NULL, '{"Token": 1}')`,
		"blank stream": `SELECT fn_iu_emit_event('iu', 'planted', '  ', 'standard', 'info')`,
		"unregistered": `SELECT fn_iu_emit_event('iu', 'never_registered', 's')`,
	} {
		_, err := exe.Exec(c, stmt)
		e := requirePgErr(t, err, "22023")
		if !strings.HasPrefix(e.Message, "fn_iu_emit_event: ") {
			t.Fatalf("%s: want emit's own refusal, got %s", name, e.Message)
		}
	}
	if got := ranAs(); got != "" {
		t.Fatalf("a refusing path ran planted objects as %q", got)
	}
}

// Rule: the event type registry holds only names by the package's name rule (not blank, at
// most 200 bytes), so a registration proves fn_iu_emit_event's domain and type valid and its
// accepting path does not test them again. A blank or over-long domain or type is refused
// at registration (23514, naming the rule), and an emit of one is refused with the
// argument's own message (22023), never stored.
func TestProducers_RegistryHoldsOnlyNames(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	long := strings.Repeat("x", 201)
	for _, bad := range [][2]string{{"iu", "   "}, {"iu", "\t\n"}, {" ", "prod"}, {"iu", long}, {long, "prod"}} {
		_, err := db.Pool.Exec(c, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ($1, $2)`, bad[0], bad[1])
		e := requireSQLState(t, err, "23514")
		if !strings.HasPrefix(e.ConstraintName, "event_type_registry_") {
			t.Fatalf("registering %q/%q: refused by %q", bad[0], bad[1], e.ConstraintName)
		}
		_, err = db.Pool.Exec(c, `SELECT fn_iu_emit_event($1, $2, 's')`, bad[0], bad[1])
		e = requireSQLState(t, err, "22023")
		if !strings.HasPrefix(e.Message, "fn_iu_emit_event: p_event_") {
			t.Fatalf("emitting %q/%q: %s", bad[0], bad[1], e.Message)
		}
	}
	var n int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE iu_core.fn_iu_is_blank(event_type) OR iu_core.fn_iu_is_blank(event_domain)
	                   OR octet_length(event_type) > 200 OR octet_length(event_domain) > 200`, nil, &n)
	if n != 0 {
		t.Fatalf("%d events with a blank or over-long domain or type stored", n)
	}
	// The longest valid names register and emit.
	max := strings.Repeat("y", 200)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ($1, $2)`, max, max)
	if _, err := db.Pool.Exec(c, `SELECT fn_iu_emit_event($1, $2, 's')`, max, max); err != nil {
		t.Fatalf("200-byte names: %v", err)
	}
}

// Rule: every argument rule of fn_iu_emit_event keeps its own error however the accepting
// path tests it: a function-prefixed message naming the argument, 22023 (42501 for the
// stale-check's alert types), and nothing stored. The accepting path tests only what the
// table's domains do not; payload hygiene is tested by the payload's domain alone, whose
// refusing branch raises emit's error when the writer is fn_iu_emit_event (told by the call
// stack). So in the same session a direct INSERT of a dirty payload, before and after a
// refused emit, is still the domain's 23514 naming the hygiene constraint: the sign does
// not outlive the call; a producer that fakes the sign is still refused. The edges that are not errors: a blank subject of any length is stored as
// NULL, and names at their bounds are accepted.
func TestProducers_EmitArgumentRulesKeepTheirErrors(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	conn := db.Conn(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'args')`)
	long := func(n int) string { return strings.Repeat("x", n) }
	direct := func() {
		t.Helper()
		_, err := conn.Exec(c, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
		                        VALUES ('iu', 'args', 's', '{"a": [{"Secret": 1}]}')`)
		if e := requireSQLState(t, err, "23514"); e.ConstraintName != "event_outbox_safe_payload_hygiene" {
			t.Fatalf("direct INSERT of a dirty payload: refused by %q", e.ConstraintName)
		}
	}
	direct()
	const emit = `SELECT fn_iu_emit_event('iu', $1, $2, $3, $4, $5, $6, $7::jsonb)`
	type args struct {
		typ, stream, lane, severity string
		table, ref, payload         any
	}
	ok := args{"args", "s", "standard", "info", "unit", "u-1", `{"n": 1}`}
	with := func(f func(*args)) args { a := ok; f(&a); return a }
	cases := []struct {
		name, code, msg string
		a               args
	}{
		{"empty stream", "22023", "fn_iu_emit_event: p_event_stream required", with(func(a *args) { a.stream = "" })},
		{"blank stream", "22023", "fn_iu_emit_event: p_event_stream required", with(func(a *args) { a.stream = " \t\n" })},
		{"long stream", "22023", "fn_iu_emit_event: p_event_stream is 201 bytes long", with(func(a *args) { a.stream = long(201) })},
		{"lane", "22023", "fn_iu_emit_event: p_delivery_lane 'urgent' is not one of", with(func(a *args) { a.lane = "urgent" })},
		{"lane, letter case", "22023", "fn_iu_emit_event: p_delivery_lane 'Standard' is not one of", with(func(a *args) { a.lane = "Standard" })},
		{"severity", "22023", "fn_iu_emit_event: p_event_severity 'fatal' is not one of", with(func(a *args) { a.severity = "fatal" })},
		{"long subject table", "22023", "fn_iu_emit_event: p_event_subject_table is 201 bytes long", with(func(a *args) { a.table = long(201) })},
		{"long subject ref", "22023", "fn_iu_emit_event: p_event_subject_ref is 1001 bytes long", with(func(a *args) { a.ref = " " + long(1000) })},
		{"payload NULL", "22023", "fn_iu_emit_event: p_safe_payload must be a JSON object", with(func(a *args) { a.payload = nil })},
		{"payload array", "22023", "fn_iu_emit_event: p_safe_payload must be a JSON object", with(func(a *args) { a.payload = `[{"n": 1}]` })},
		{"payload scalar", "22023", "fn_iu_emit_event: p_safe_payload must be a JSON object", with(func(a *args) { a.payload = `"x"` })},
		{"hygiene, deep, any case", "22023", "fn_iu_emit_event: p_safe_payload carries denylisted keys at $.a.b[1].PassWord",
			with(func(a *args) { a.payload = `{"a": {"b": [1, {"PassWord": 1}]}}` })},
		{"hygiene, top level", "22023", "fn_iu_emit_event: p_safe_payload carries denylisted keys at $.token",
			with(func(a *args) { a.payload = `{"token": "x", "tokenizer": 1}` })},
		{"reserved type", "42501", "fn_iu_emit_event: iu/queue_worker_silent events are written only by the package",
			with(func(a *args) { a.typ = "queue_worker_silent" })},
	}
	count := func() int {
		var n int
		db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE event_domain = 'iu'`, nil, &n)
		return n
	}
	before := count()
	for _, tc := range cases {
		a := tc.a
		_, err := conn.Exec(c, emit, a.typ, a.stream, a.lane, a.severity, a.table, a.ref, a.payload)
		if e := requireSQLState(t, err, tc.code); !strings.HasPrefix(e.Message, tc.msg) {
			t.Errorf("%s: got %q, want it to start with %q", tc.name, e.Message, tc.msg)
		}
	}
	direct()
	if n := count(); n != before {
		t.Fatalf("refused emits stored %d rows", n-before)
	}

	// Not errors: blank subjects of any length become NULL (each one alone, beside a valid
	// other subject), names at their bounds pass.
	for _, subj := range [][2]any{
		{" \t" + strings.Repeat(" ", 300), "u-1"}, {"unit", strings.Repeat("\n", 2000)}, {"", " "}, {nil, "\t"},
	} {
		var id string
		if err := conn.QueryRow(c, emit+`::text`, "args", long(200), "batch", "critical", subj[0], subj[1], `{"ok": true}`).Scan(&id); err != nil {
			t.Fatalf("blank subject and a 200-byte stream: %v", err)
		}
		var table, ref *string
		db.QueryRow(t, `SELECT event_subject_table, event_subject_ref FROM event_outbox WHERE id = $1::uuid`, []any{id}, &table, &ref)
		for i, got := range []*string{table, ref} {
			given, _ := subj[i].(string)
			if blank := strings.TrimSpace(given) == ""; blank != (got == nil) || (got != nil && *got != given) {
				stored := "NULL"
				if got != nil {
					stored = fmt.Sprintf("%q", *got)
				}
				t.Fatalf("subject %q stored as %s: a blank subject is stored as NULL, any other as given", given, stored)
			}
		}
	}
	if _, err := conn.Exec(c, emit, "args", "s", "standard", "info", long(200), long(1000), `{}`); err != nil {
		t.Fatalf("subjects at their bounds: %v", err)
	}

	// A producer that fakes the sign (a function of its own named fn_iu_emit_event, same
	// argument types, first on its search_path, whose INSERT is the statement on the call
	// stack; or a statement text quoting emit's context line) only changes the wording of its
	// own refusal: the dirty row is still refused and nothing is stored.
	p, _ := producer(t, db)
	if _, err := p.Exec(c, `CREATE FUNCTION evil.fn_iu_emit_event(text, text, text, text, text, text, text, jsonb) RETURNS uuid
	    LANGUAGE plpgsql AS $f$
	    BEGIN
	        INSERT INTO public.event_outbox (event_domain, event_type, event_stream, safe_payload)
	        VALUES ('iu', 'args', 's', '{"a": [{"Secret": 1}]}');
	        RETURN NULL;
	    END $f$`); err != nil {
		t.Fatal(err)
	}
	before = count()
	// The second quotes emit's frame inside its own statement text, which the context shows.
	fakeFrame := "\nPL/pgSQL function public.fn_iu_emit_event(text,text,text,text,text,text,text,jsonb) line 36 at SQL statement\n"
	for _, spoof := range []string{
		`SET search_path = evil, public; SELECT fn_iu_emit_event('iu', 'args', 's', 'standard', 'info', NULL, NULL, '{}')`,
		`DO $d$ BEGIN INSERT INTO public.event_outbox (event_domain, event_type, event_stream, safe_payload)
		     VALUES ('iu', 'args', 's', '{"a": [{"Secret": 1}]}') /* ` + fakeFrame + ` */; END $d$`,
	} {
		if _, err := p.Exec(c, spoof); err == nil {
			t.Fatalf("a producer posing as fn_iu_emit_event stored a dirty payload: %s", spoof)
		} else if e := pgErr(err); e == nil || (e.Code != "23514" && e.Code != "22023" && e.Code != "42501") {
			t.Fatalf("a producer posing as fn_iu_emit_event: %v, want a refusal of the row (%s)", err, spoof)
		} else {
			t.Logf("posing as emit: %s %s", e.Code, e.Message)
		}
	}
	if n := count(); n != before {
		t.Fatalf("the refused INSERT stored %d rows", n-before)
	}
}

// Rule: fn_iu_emit_event's fast form (its first INSERT, whose tests are sufficient, not
// exact: a name or subject whose first byte is above the space is not blank, so a subject
// that passes is stored as given) writes nothing the exact form would not write, and what
// it leaves out the exact form still writes, exactly as the rules say. So every valid call
// is accepted with the row the rules give, whichever form wrote it: names and subjects that
// start with whitespace or a control character but are not blank are stored as given (not
// trimmed, not NULL), blank subjects are stored as NULL, and names with a multibyte first
// character or at their bounds pass. A call the fast form leaves out is still one event
// (the exact form runs only when the fast one wrote nothing).
func TestProducers_EmitFastFormLeavesNothingOut(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	conn := db.Conn(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'fast')`)
	const emit = `SELECT fn_iu_emit_event('iu', 'fast', $1, 'standard', 'info', $2, $3, '{"n": 1}')::text`
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct{ stream, table, ref any }{
		{" main", nil, nil},                 // the fast form leaves these out: whitespace first
		{"\tmain", " unit", "\nu-1"},        // not blank: stored as given
		{"\x01main", "\x1funit", "\x7fu-1"}, // control characters first (0x7f is above '!')
		{"main", "  ", "\t\r\n\f\v "},       // blank subjects: NULL
		{"main", "", nil},                   // empty subject: NULL
		{"main", "   ", "u-1"},              // one subject blank, the other as given
		{"main", "unit", " "},
		{" " + x(199), " " + x(199), " " + x(999)}, // at their bounds, whitespace first
		{"ü-main", "ünit", "é-1"},                  // a multibyte first character: the fast form
		{"!", "!", "!"},                            // the lowest first byte the fast form takes
		{x(200), x(200), x(1000)},                  // at their bounds
	} {
		var id string
		if err := conn.QueryRow(c, emit, tc.stream, tc.table, tc.ref).Scan(&id); err != nil {
			t.Fatalf("emit(%q, %q, %q): %v; a valid call is accepted", tc.stream, tc.table, tc.ref, err)
		}
		var n int
		var stream string
		var table, ref *string
		db.QueryRow(t, `SELECT count(*) OVER ()::int, event_stream, event_subject_table, event_subject_ref
		                  FROM event_outbox WHERE id = $1::uuid`, []any{id}, &n, &stream, &table, &ref)
		if n != 1 || stream != tc.stream {
			t.Fatalf("emit(%q, ...): %d rows, stream stored as %q", tc.stream, n, stream)
		}
		for i, got := range []*string{table, ref} {
			given, _ := []any{tc.table, tc.ref}[i].(string)
			blank := strings.Trim(given, " \t\r\n\f\v") == ""
			if blank != (got == nil) || (got != nil && *got != given) {
				stored := "NULL"
				if got != nil {
					stored = fmt.Sprintf("%q", *got)
				}
				t.Fatalf("emit(%q, ...): subject %q stored as %s: a blank subject is stored as NULL, any other as given", tc.stream, given, stored)
			}
		}
	}
	var events int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE event_type = 'fast'`, nil, &events)
	if events != 11 {
		t.Fatalf("%d events stored for 11 accepted calls", events)
	}
}

// Rule: a direct producer's names have emit's bound, at most 200 bytes (the refusals on every
// write path are in TestProducers_RowRulesHoldOnEveryWritePath): before 024 the outbox took
// any length, and a 200 MB stream of one repeated character (stored in ~2 MB) made every
// route-worker run that reached it unpack and hash it; enough of them stalled the worker for
// good. The bound is NOT VALID: rows already in the log when 024 is applied are kept whatever
// their length, and 024's Down takes the bound away again.
func TestProducers_NameBoundKeepsOlderRows(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	m, err := migrate.Open(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const cols = `(event_domain, event_type, event_stream)`
	// A row written before the bound: 024 and what follows it undone, the row written, the
	// migrations applied again.
	if _, err := m.DownTo(c, 23); err != nil {
		t.Fatalf("migrating down to 023: %v", err)
	}
	db.Exec(t, `INSERT INTO event_outbox `+cols+` VALUES ('iu', 'prod', repeat('s', 300))`)
	if _, err := m.Up(c); err != nil {
		t.Fatalf("migrating up over a long row: %v", err)
	}
	if n := rowCount(t, db, `SELECT count(*) FROM event_outbox WHERE octet_length(event_stream) = 300`); n != 1 {
		t.Fatalf("the row written before the bound: %d, want it kept", n)
	}
	p, _ := producer(t, db)
	_, err = p.Exec(c, `INSERT INTO event_outbox `+cols+` VALUES ('iu', 'prod', repeat('s', 201))`)
	if e := requireSQLState(t, err, "23514"); e.ConstraintName != "iu_event_name_bounded" {
		t.Fatalf("a 201-byte stream: refused by %q, want iu_event_name_bounded", e.ConstraintName)
	}
	if _, err := p.Exec(c, `INSERT INTO event_outbox `+cols+` VALUES (repeat('d', 200), repeat('t', 200), repeat('s', 200))`); err != nil {
		t.Fatalf("names of 200 bytes are within the bound: %v", err)
	}
	// The Down: without 024 the outbox takes any length again.
	if _, err := m.DownTo(c, 23); err != nil {
		t.Fatalf("migrating down to 023: %v", err)
	}
	db.Exec(t, `INSERT INTO event_outbox `+cols+` VALUES ('iu', 'prod', repeat('s', 201))`)
	if _, err := m.Up(c); err != nil {
		t.Fatal(err)
	}
}

func rowCount(t testing.TB, db *pgtest.DB, sql string) int {
	t.Helper()
	var n int
	db.QueryRow(t, sql, nil, &n)
	return n
}
