package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// emitEvents is fn_iu_emit_events with every array passed (payloads as text, cast to jsonb
// element by element, so a NULL element stays NULL).
const emitEvents = `SELECT fn_iu_emit_events($1, $2, $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]::jsonb[])`

// eventSet is one call's arguments: element i of each slice is event i; a nil slice is the
// NULL array (every event takes fn_iu_emit_event's default); a nil element, a NULL element.
type eventSet struct {
	domain, typ                        any
	streams, lanes, severities, tables []*string
	refs, payloads                     []*string
}

func (s eventSet) args() []any {
	arr := func(v []*string) any {
		if v == nil {
			return nil
		}
		return v
	}
	return []any{s.domain, s.typ, arr(s.streams), arr(s.lanes), arr(s.severities), arr(s.tables), arr(s.refs), arr(s.payloads)}
}

func sp(s string) *string { return &s }

// each returns n copies of v, so a set is valid but for the element a case changes.
func each(n int, v string) []*string {
	out := make([]*string, n)
	for i := range out {
		out[i] = sp(v)
	}
	return out
}

// Rule: fn_iu_emit_events writes a set of events of one type, all or nothing, with exactly
// fn_iu_emit_event's rules and refusals, each refusal naming the first element that breaks
// a rule (fn_iu_emit_events: p_delivery_lanes[2] ...), and nothing stored when any event is
// refused: every argument rule of fn_iu_emit_event (stream, lane, severity, subjects,
// payload shape and hygiene, the stale-check's reserved alert types with 42501, an
// unregistered type, blank or over-long names), NULL elements, and hostile shapes (NULL
// p_event_streams, arrays of different lengths, two dimensions, more than 10,000 events).
// Mutation caught: without `p_event_type <> ALL ('{queue_worker_silent,...}')` in the
// INSERT's WHERE the reserved types, registered in domain system for the stale-check, are
// stored (the outbox's own rule lets the package, whose rights the function runs in,
// through) and both "reserved type, registered" cases fail.
func TestEmitEvents_RefusesLikeEmitAllOrNothing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	conn := db.Conn(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'many')`)
	long := func(n int) string { return strings.Repeat("x", n) }
	count := func() int {
		var n int
		db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE event_domain IN ('iu', 'system')`, nil, &n)
		return n
	}
	// Three valid events; each case breaks event 2 (or the whole call).
	ok := func() eventSet {
		return eventSet{"iu", "many", each(3, "s"), each(3, "standard"), each(3, "info"),
			each(3, "unit"), []*string{sp("u-1"), sp("u-2"), sp("u-3")}, each(3, `{"n": 1}`)}
	}
	with := func(f func(*eventSet)) eventSet { s := ok(); f(&s); return s }
	cases := []struct {
		name, code, msg string
		s               eventSet
	}{
		{"empty stream", "22023", "fn_iu_emit_events: p_event_streams[2] required", with(func(s *eventSet) { s.streams[1] = sp("") })},
		{"blank stream", "22023", "fn_iu_emit_events: p_event_streams[2] required", with(func(s *eventSet) { s.streams[1] = sp(" \t\n") })},
		{"NULL stream", "22023", "fn_iu_emit_events: p_event_streams[2] required", with(func(s *eventSet) { s.streams[1] = nil })},
		{"long stream", "22023", "fn_iu_emit_events: p_event_streams[2] is 201 bytes long", with(func(s *eventSet) { s.streams[1] = sp(long(201)) })},
		{"lane", "22023", "fn_iu_emit_events: p_delivery_lanes[2] 'urgent' is not one of", with(func(s *eventSet) { s.lanes[1] = sp("urgent") })},
		{"lane, letter case", "22023", "fn_iu_emit_events: p_delivery_lanes[2] 'Standard' is not one of", with(func(s *eventSet) { s.lanes[1] = sp("Standard") })},
		{"NULL lane", "22023", "fn_iu_emit_events: p_delivery_lanes[2] NULL is not one of", with(func(s *eventSet) { s.lanes[1] = nil })},
		{"severity", "22023", "fn_iu_emit_events: p_event_severities[2] 'fatal' is not one of", with(func(s *eventSet) { s.severities[1] = sp("fatal") })},
		{"NULL severity", "22023", "fn_iu_emit_events: p_event_severities[2] NULL is not one of", with(func(s *eventSet) { s.severities[1] = nil })},
		{"long subject table", "22023", "fn_iu_emit_events: p_event_subject_tables[2] is 201 bytes long", with(func(s *eventSet) { s.tables[1] = sp(long(201)) })},
		{"long subject ref", "22023", "fn_iu_emit_events: p_event_subject_refs[2] is 1001 bytes long", with(func(s *eventSet) { s.refs[1] = sp(" " + long(1000)) })},
		{"payload NULL", "22023", "fn_iu_emit_events: p_safe_payloads[2] must be a JSON object", with(func(s *eventSet) { s.payloads[1] = nil })},
		{"payload array", "22023", "fn_iu_emit_events: p_safe_payloads[2] must be a JSON object", with(func(s *eventSet) { s.payloads[1] = sp(`[{"n": 1}]`) })},
		{"payload scalar", "22023", "fn_iu_emit_events: p_safe_payloads[2] must be a JSON object", with(func(s *eventSet) { s.payloads[1] = sp(`"x"`) })},
		{"hygiene, deep, any case", "22023", "fn_iu_emit_events: p_safe_payloads[2] carries denylisted keys at $.a.b[1].PassWord",
			with(func(s *eventSet) { s.payloads[1] = sp(`{"a": {"b": [1, {"PassWord": 1}]}}`) })},
		{"hygiene, top level", "22023", "fn_iu_emit_events: p_safe_payloads[2] carries denylisted keys at $.token",
			with(func(s *eventSet) { s.payloads[1] = sp(`{"token": "x", "tokenizer": 1}`) })},
		{"hygiene, size", "22023", fmt.Sprintf("fn_iu_emit_events: p_safe_payloads[2] is %d bytes as text", payloadMaxBytes+1),
			with(func(s *eventSet) { s.payloads[1] = sp(fmt.Sprintf(`{"a": "%s"}`, long(payloadMaxBytes-8))) })},
		{"hygiene, depth", "22023", "fn_iu_emit_events: p_safe_payloads[2] nests deeper than 32 levels",
			with(func(s *eventSet) { s.payloads[1] = sp(nested(payloadMaxDepth, `{"b": 1}`)) })},
		{"first broken event is named", "22023", "fn_iu_emit_events: p_delivery_lanes[2] 'urgent'",
			with(func(s *eventSet) { s.lanes[1] = sp("urgent"); s.payloads[2] = sp(`{"secret": 1}`) })},
		{"reserved type", "42501", "fn_iu_emit_events: iu/queue_worker_silent events are written only by the package",
			with(func(s *eventSet) { s.typ = "queue_worker_silent" })},
		{"reserved type, registered", "42501", "fn_iu_emit_events: system/queue_worker_recovered events are written only by the package",
			with(func(s *eventSet) { s.domain = "system"; s.typ = "queue_worker_recovered" })},
		{"reserved type, registered, silent", "42501", "fn_iu_emit_events: system/queue_worker_silent events are written only by the package",
			with(func(s *eventSet) { s.domain = "system"; s.typ = "queue_worker_silent" })},
		{"unregistered", "22023", "fn_iu_emit_events: event type iu/never_registered is not registered", with(func(s *eventSet) { s.typ = "never_registered" })},
		{"unregistered, empty set", "22023", "fn_iu_emit_events: event type iu/never_registered is not registered",
			with(func(s *eventSet) {
				s.typ = "never_registered"
				*s = eventSet{s.domain, s.typ, []*string{}, nil, nil, nil, nil, nil}
			})},
		{"blank type", "22023", "fn_iu_emit_events: p_event_type required", with(func(s *eventSet) { s.typ = "  " })},
		{"NULL domain", "22023", "fn_iu_emit_events: p_event_domain required", with(func(s *eventSet) { s.domain = nil })},
		{"long domain", "22023", "fn_iu_emit_events: p_event_domain is 201 bytes long", with(func(s *eventSet) { s.domain = long(201) })},
		{"NULL streams", "22023", "fn_iu_emit_events: p_event_streams required", with(func(s *eventSet) { s.streams = nil })},
		{"lengths differ", "22023", "fn_iu_emit_events: p_safe_payloads has 2 elements, p_event_streams 3",
			with(func(s *eventSet) { s.payloads = s.payloads[:2] })},
		{"lengths differ, longer", "22023", "fn_iu_emit_events: p_delivery_lanes has 4 elements, p_event_streams 3",
			with(func(s *eventSet) { s.lanes = append(s.lanes, sp("standard")) })},
		{"lengths differ, empty", "22023", "fn_iu_emit_events: p_event_subject_refs has 0 elements, p_event_streams 3",
			with(func(s *eventSet) { s.refs = []*string{} })},
		{"too many", "22023", "fn_iu_emit_events: 10001 events, at most 10000 per call",
			eventSet{"iu", "many", each(10001, "s"), nil, nil, nil, nil, nil}},
	}
	before := count()
	for _, tc := range cases {
		_, err := conn.Exec(c, emitEvents, tc.s.args()...)
		if e := requireSQLState(t, err, tc.code); !strings.HasPrefix(e.Message, tc.msg) {
			t.Errorf("%s: got %q, want it to start with %q", tc.name, e.Message, tc.msg)
		}
	}
	// Shapes pgx cannot send as a slice: two dimensions, numbered from 2.
	for name, q := range map[string]string{
		"two dimensions":  `SELECT fn_iu_emit_events('iu', 'many', '{{a,b},{c,d}}')`,
		"numbered from 2": `SELECT fn_iu_emit_events('iu', 'many', '[2:3]={a,b}')`,
		"payloads numbered from 2": `SELECT fn_iu_emit_events('iu', 'many', '{a,b}', NULL, NULL, NULL, NULL,
		                                   '[2:3]={"{}","{}"}'::jsonb[])`,
	} {
		_, err := conn.Exec(c, q)
		if e := requireSQLState(t, err, "22023"); !strings.Contains(e.Message, "must be a one-dimensional array numbered from 1") {
			t.Errorf("%s: got %q", name, e.Message)
		}
	}
	if n := count(); n != before {
		t.Fatalf("refused sets stored %d rows: all or nothing", n-before)
	}
	// A direct INSERT of a dirty payload in the same session is still the domain's refusal.
	_, err := conn.Exec(c, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
	                        VALUES ('iu', 'many', 's', '{"a": [{"Secret": 1}]}')`)
	if e := requireSQLState(t, err, "23514"); e.ConstraintName != "event_outbox_safe_payload_hygiene" {
		t.Fatalf("direct INSERT of a dirty payload after refused sets: refused by %q", e.ConstraintName)
	}
}

// Rule: an accepted set is stored exactly as fn_iu_emit_event would store each event: the
// fields given, fn_iu_emit_event's defaults where an array is NULL, a blank subject of any
// length as NULL; the ids come back in input order, are time-ordered uuids (version 7,
// variant 10) that sort in input order, and are the stored rows' ids. An empty set writes
// nothing and returns an empty array; 10,000 events, the limit, are accepted.
func TestEmitEvents_StoresTheSetInOrder(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	conn := db.Conn(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'many')`)

	s := eventSet{"iu", "many",
		[]*string{sp("s1"), sp("s2"), sp("s3"), sp("s4")},
		[]*string{sp("immediate"), sp("batch"), sp("standard"), sp("batch")},
		[]*string{sp("debug"), sp("critical"), sp("warning"), sp("info")},
		[]*string{sp("unit"), sp(" \t" + strings.Repeat(" ", 300)), nil, sp("")},
		[]*string{sp("r1"), sp("r2"), sp(strings.Repeat("\n", 2000)), nil},
		[]*string{sp(`{"n": 1}`), sp(`{}`), sp(`{"a": {"b": [1]}}`), sp(`{"n": 4}`)},
	}
	var ids []string
	if err := conn.QueryRow(c, emitEvents+`::text[]`, s.args()...).Scan(&ids); err != nil {
		t.Fatalf("a valid set: %v", err)
	}
	if len(ids) != 4 {
		t.Fatalf("%d ids for 4 events", len(ids))
	}
	type row struct {
		Stream, Lane, Severity string
		Table, Ref             *string
		Payload                string
		Version, Variant       string
	}
	for i, id := range ids {
		var r row
		db.QueryRow(t, `SELECT event_stream, delivery_lane, event_severity, event_subject_table, event_subject_ref, safe_payload::text,
		                       substr(id::text, 15, 1), substr(id::text, 20, 1)
		                  FROM event_outbox WHERE id = $1::uuid`, []any{id},
			&r.Stream, &r.Lane, &r.Severity, &r.Table, &r.Ref, &r.Payload, &r.Version, &r.Variant)
		if r.Stream != *s.streams[i] || r.Lane != *s.lanes[i] || r.Severity != *s.severities[i] {
			t.Errorf("event %d stored as %+v", i+1, r)
		}
		if r.Version != "7" || !strings.Contains("89ab", r.Variant) {
			t.Errorf("event %d: id %s is not a version 7 uuid of variant 10", i+1, id)
		}
		for k, pair := range [][2]*string{{s.tables[i], r.Table}, {s.refs[i], r.Ref}} {
			given, got := pair[0], pair[1]
			blank := given == nil || strings.TrimSpace(*given) == ""
			if blank != (got == nil) || (got != nil && *got != *given) {
				t.Errorf("event %d, subject %d: %v stored as %v (a blank subject is NULL, any other as given)", i+1, k, given, got)
			}
		}
		if i > 0 && ids[i-1] >= id {
			t.Errorf("ids do not sort in input order: %s then %s", ids[i-1], id)
		}
	}
	var payload3 string
	db.QueryRow(t, `SELECT safe_payload::text FROM event_outbox WHERE id = $1::uuid`, []any{ids[2]}, &payload3)
	if payload3 != `{"a": {"b": [1]}}` {
		t.Errorf("event 3's payload stored as %s", payload3)
	}

	// NULL arrays: fn_iu_emit_event's defaults for every event. (Counted in a statement of
	// its own: one that calls the function does not see the rows it writes.)
	var dids []string
	if err := conn.QueryRow(c, `SELECT fn_iu_emit_events('iu', 'many', '{d1,d2}')::text[]`).Scan(&dids); err != nil || len(dids) != 2 {
		t.Fatalf("NULL arrays: %v, %v", dids, err)
	}
	var defaults int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox e
	                 WHERE e.id = ANY ($1::uuid[]) AND e.delivery_lane = 'standard' AND e.event_severity = 'info'
	                   AND e.safe_payload = '{}' AND e.event_subject_table IS NULL AND e.event_subject_ref IS NULL`, []any{dids}, &defaults)
	if defaults != 2 {
		t.Fatalf("NULL arrays: %d events with emit's defaults, want 2", defaults)
	}
	// An empty set: nothing written, an empty array back.
	var n int
	for _, q := range []string{
		`SELECT cardinality(fn_iu_emit_events('iu', 'many', '{}'))`,
		`SELECT cardinality(fn_iu_emit_events('iu', 'many', '{}', '{}', '{}', '{}', '{}', '{}'))`,
	} {
		if err := conn.QueryRow(c, q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("an empty set (%s): %d ids, %v", q, n, err)
		}
	}
	// The limit itself.
	if err := conn.QueryRow(c, `SELECT cardinality(fn_iu_emit_events('iu', 'many', array_fill('big'::text, ARRAY[10000])))`).Scan(&n); err != nil || n != 10000 {
		t.Fatalf("10,000 events: %d ids, %v", n, err)
	}
	var distinct int
	db.QueryRow(t, `SELECT count(DISTINCT id)::int FROM event_outbox WHERE event_stream = 'big'`, nil, &distinct)
	if distinct != 10000 {
		t.Fatalf("10,000 events stored with %d distinct ids", distinct)
	}
}

// Rule: fn_iu_emit_events is callable by exactly fn_iu_emit_event's callers (dot_executor,
// workflow_admin); a direct producer, who may INSERT, may not call it (42501), and a member
// of dot_executor writes through it.
func TestEmitEvents_Privileges(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'many')`)
	var same bool
	db.QueryRow(t, `SELECT bool_and(has_function_privilege(r, 'public.fn_iu_emit_events(text,text,text[],text[],text[],text[],text[],jsonb[])', 'EXECUTE')
	                                = has_function_privilege(r, 'public.fn_iu_emit_event(text,text,text,text,text,text,text,jsonb)', 'EXECUTE'))
	                  FROM unnest(ARRAY['dot_executor', 'workflow_admin', 'public']) r`, nil, &same)
	if !same {
		t.Fatal("fn_iu_emit_events is not granted exactly as fn_iu_emit_event")
	}
	p, role := producer(t, db)
	_, err := p.Exec(c, `SELECT fn_iu_emit_events('iu', 'many', '{s}')`)
	requireSQLState(t, err, "42501")
	db.Exec(t, `GRANT dot_executor TO `+pgx.Identifier{role}.Sanitize())
	if _, err := p.Exec(c, `SELECT fn_iu_emit_events('iu', 'many', '{s}')`); err != nil {
		t.Fatalf("a member of dot_executor: %v", err)
	}
}

// Rule (017): event_outbox.id stays a uuid and defaults to a time-ordered one (UUID version
// 7, variant 10) on the partitioned parent and on every partition, the default partition
// included, so a row gets it whichever way it is routed; ids drawn one after another in a
// session sort in that order; and an id drawn twice is refused by the partition's primary
// key (23505), never stored twice or merged. Mutation caught: a parent-only
// default (ALTER TABLE ONLY) leaves the partitions at gen_random_uuid() and the first
// check fails.
func TestEventOutbox_IdDefaultIsTimeOrderedOnEveryPartition(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	var bad []string
	var n int
	rows, err := db.Pool.Query(c, `
		SELECT t.relid::regclass::text || ': ' || coalesce(pg_get_expr(d.adbin, d.adrelid), 'no default') || ' (' || format_type(a.atttypid, a.atttypmod) || ')'
		  FROM pg_partition_tree('public.event_outbox') t
		  JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = 'id'
		  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		 WHERE coalesce(pg_get_expr(d.adbin, d.adrelid), '') NOT LIKE '%clock_timestamp()%'
		    OR a.atttypid <> 'uuid'::regtype`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("event_outbox relations whose id is not a uuid with the time-ordered default:\n%s", strings.Join(bad, "\n"))
	}
	db.QueryRow(t, `SELECT count(*)::int FROM pg_partition_tree('public.event_outbox') t
	                  JOIN pg_class k ON k.oid = t.relid AND k.relkind = 'r'
	                  JOIN pg_inherits i ON i.inhrelid = t.relid
	                  JOIN pg_class p ON p.oid = i.inhparent
	                 WHERE pg_get_expr(k.relpartbound, k.oid) = 'DEFAULT'`, nil, &n)
	if n != 1 {
		t.Fatalf("%d default partitions checked, want 1: the premise is gone", n)
	}

	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'ids')`)
	conn := db.Conn(t)
	var ids []string
	for range 50 {
		var id string
		if err := conn.QueryRow(c, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'ids', 's') RETURNING id::text`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("default id %s is not a version 7 uuid of variant 10", id)
		}
		if len(ids) > 0 && ids[len(ids)-1] >= id {
			t.Fatalf("ids drawn in a row do not sort in that order: %s then %s", ids[len(ids)-1], id)
		}
		ids = append(ids, id)
	}
	_, err = conn.Exec(c, `INSERT INTO event_outbox (id, event_domain, event_type, event_stream) VALUES ($1::uuid, 'iu', 'ids', 'dup')`, ids[0])
	requireSQLState(t, err, "23505")
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE id = $1::uuid`, []any{ids[0]}, &n)
	if n != 1 {
		t.Fatalf("an id drawn twice is stored %d times", n)
	}
}
