package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Both writers of the package, each as a producer calls it: one event, and a set of two.
const (
	emitOne = `SELECT fn_iu_emit_event($1, $2, 's')`
	emitSet = `SELECT fn_iu_emit_events($1, $2, ARRAY['s1', 's2'])`
)

// emitBoth emits one event and a set of domain/typ in transaction q and returns the two
// errors (nil: written). Each call runs in a savepoint of its own, so a refusal leaves the
// transaction usable.
func emitBoth(t *testing.T, q pgx.Tx, domain, typ string) (one, set error) {
	t.Helper()
	c := ctx(t)
	try := func(sql string) error {
		sp, err := q.Begin(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.Exec(c, sql, domain, typ); err != nil {
			if rb := sp.Rollback(c); rb != nil {
				t.Fatal(rb)
			}
			return err
		}
		if err := sp.Commit(c); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	return try(emitOne), try(emitSet)
}

// requireUnregistered fails unless both errors are the writers' "not registered" refusal.
func requireUnregistered(t *testing.T, what string, one, set error) {
	t.Helper()
	for i, err := range []error{one, set} {
		fn := []string{"fn_iu_emit_event", "fn_iu_emit_events"}[i]
		if err == nil {
			t.Fatalf("%s: %s wrote events of a type that is not registered", what, fn)
		}
		e := requireSQLState(t, err, "22023")
		if !strings.HasPrefix(e.Message, fn+": event type ") || !strings.HasSuffix(e.Message, " is not registered") {
			t.Fatalf("%s: %s refused with %q, want its not-registered refusal", what, fn, e.Message)
		}
	}
}

// Rule: the writers read the registry as their statement's snapshot has it, so a type
// removed from event_type_registry (DELETE, a renaming UPDATE, TRUNCATE) is refused by
// every emit that starts after the removal committed, and a type registered is accepted
// likewise, under READ COMMITTED even inside a producer's transaction that was already
// open and had already emitted that very type (its plans made and kept). A registry change
// is data, not a schema change: it waits for no producer and no producer waits for it.
// This is the rule that keeps the registered types out of a constant of emit's plans
// (bench/README.md, "Producers, issue 26, second round"): a session revalidates its kept
// plans only at its next transaction or its next new lock, so an open transaction holding
// its locks would keep accepting a type deleted after its plans were made, and only a
// removal that waited for every open producer transaction (and held new ones until it
// committed) would close that; TestProducers_RegistryChangeWaitsForNobody rules that out.
// Mutation caught: the registered types as a constant of a function body inlined into
// emit's fast form (a jsonb object of the pairs, rebuilt by a statement trigger on
// event_type_registry, writers serialized): the open transaction's emit of the deleted
// type is written (fn_iu_emit_event and fn_iu_emit_events), while every new transaction
// refuses it.
func TestProducers_EmitSeesRegistryChangesAtOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES
	              ('iu', 'reg_deleted'), ('iu', 'reg_renamed'), ('iu', 'reg_kept'), ('iu', 'reg_other_writer')`)
	producer := db.Conn(t)
	admin := db.Conn(t)
	other := db.Conn(t)

	// The producer's transaction is open and has emitted every type, more times than a
	// PL/pgSQL statement takes to settle on its kept (generic) plan.
	tx, err := producer.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for i := 0; i < 7; i++ {
		for _, typ := range []string{"reg_deleted", "reg_renamed", "reg_kept", "reg_other_writer"} {
			if one, set := emitBoth(t, tx, "iu", typ); one != nil || set != nil {
				t.Fatalf("emitting registered iu/%s: %v, %v", typ, one, set)
			}
		}
	}

	// Two registry writers at once, each in a transaction of its own: one deletes a type and
	// renames another, the other (started while the first is open, and free to wait for it)
	// deletes a third and registers a new one.
	atx, err := admin.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer atx.Rollback(context.Background())
	for _, st := range []string{
		`DELETE FROM event_type_registry WHERE event_domain = 'iu' AND event_type = 'reg_deleted'`,
		`UPDATE event_type_registry SET event_type = 'reg_renamed_to' WHERE event_domain = 'iu' AND event_type = 'reg_renamed'`} {
		if _, err := atx.Exec(c, st); err != nil {
			t.Fatalf("registry writer: %s: %v", st, err)
		}
	}
	otx, err := other.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer otx.Rollback(context.Background())
	second := make(chan error, 1)
	go func() {
		for _, st := range []string{
			`DELETE FROM event_type_registry WHERE event_domain = 'iu' AND event_type = 'reg_other_writer'`,
			`INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'reg_new')`} {
			if _, err := otx.Exec(c, st); err != nil {
				second <- fmt.Errorf("second registry writer: %s: %w", st, err)
				return
			}
		}
		second <- nil
	}()
	// Nothing committed yet: the producer sees the registry as it was.
	if one, set := emitBoth(t, tx, "iu", "reg_deleted"); one != nil || set != nil {
		t.Fatalf("a type whose deletion has not committed: %v, %v", one, set)
	}
	one, set := emitBoth(t, tx, "iu", "reg_new")
	requireUnregistered(t, "a type whose registration has not committed", one, set)
	if err := atx.Commit(c); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second registry writer still waits after the first committed")
	}
	if err := otx.Commit(c); err != nil {
		t.Fatal(err)
	}

	check := func(where string, q pgx.Tx) {
		t.Helper()
		for _, typ := range []string{"reg_deleted", "reg_renamed", "reg_other_writer"} {
			one, set := emitBoth(t, q, "iu", typ)
			requireUnregistered(t, where+": iu/"+typ+" removed", one, set)
		}
		for _, typ := range []string{"reg_kept", "reg_renamed_to", "reg_new"} {
			if one, set := emitBoth(t, q, "iu", typ); one != nil || set != nil {
				t.Fatalf("%s: iu/%s registered: %v, %v", where, typ, one, set)
			}
		}
	}
	check("the producer's open transaction", tx)
	if err := tx.Commit(c); err != nil {
		t.Fatal(err)
	}
	ntx, err := producer.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	check("the producer's next transaction", ntx)
	if err := ntx.Commit(c); err != nil {
		t.Fatal(err)
	}

	// TRUNCATE: nothing is registered any more, for the same session's next transaction.
	db.Exec(t, `TRUNCATE event_type_registry`)
	ttx, err := producer.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer ttx.Rollback(context.Background())
	for _, typ := range []string{"reg_kept", "reg_renamed_to", "reg_new"} {
		one, set := emitBoth(t, ttx, "iu", typ)
		requireUnregistered(t, "after TRUNCATE: iu/"+typ, one, set)
	}
	if err := ttx.Commit(c); err != nil {
		t.Fatal(err)
	}

	// Exactly the events written while their types were registered: 7 rounds of each type
	// and one more of the deleted type before its deletion committed (one event and a set
	// of two a round), then one round of each type registered at the end.
	r, err := db.Pool.Query(c, `SELECT event_type || ' ' || count(*) FROM event_outbox WHERE event_domain = 'iu'
	                             GROUP BY event_type ORDER BY event_type COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pgx.CollectRows(r, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rows, ", "), "reg_deleted 24, reg_kept 27, reg_new 6, reg_other_writer 21, reg_renamed 21, reg_renamed_to 6"; got != want {
		t.Fatalf("events stored per type: %s, want %s", got, want)
	}
}

// Rule: a change of the registry waits for no producer and no producer waits for one. A
// registration, a deletion and a renaming commit while producers' transactions that
// emitted are still open, and emits of other types go on while a registry writer's
// transaction is open; each side runs with a lock timeout of 1 s here, so a wait fails the
// test. (fn_iu_emit_event and fn_iu_emit_events pin no lock_timeout because their only wait
// is a retention drop's, which retention bounds itself: tests/locktimeout_test.go. A
// registry writer that emits wait for could keep every producer waiting for as long as its
// transaction stays open.)
// Mutation caught: a registry removal that takes SHARE on event_outbox until it commits (what
// would make the registered types safe to keep as a constant of emit's plans): the DELETE
// fails on its lock timeout behind the open producer transaction.
func TestProducers_RegistryChangeWaitsForNobody(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'live_a'), ('iu', 'live_b'), ('iu', 'live_c')`)
	producer := db.Conn(t)
	admin := db.Conn(t)
	for _, conn := range []*pgx.Conn{producer, admin} {
		if _, err := conn.Exec(c, `SET lock_timeout = '1s'`); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := producer.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if one, set := emitBoth(t, tx, "iu", "live_a"); one != nil || set != nil {
		t.Fatalf("emitting: %v, %v", one, set)
	}
	start := time.Now()
	for _, st := range []string{
		`DELETE FROM event_type_registry WHERE event_domain = 'iu' AND event_type = 'live_b'`,
		`UPDATE event_type_registry SET event_type = 'live_a2' WHERE event_domain = 'iu' AND event_type = 'live_a'`,
		`INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'live_d')`,
	} {
		if _, err := admin.Exec(c, st); err != nil {
			t.Fatalf("a registry change behind an open producer transaction: %s: %v", st, err)
		}
	}
	if err := tx.Commit(c); err != nil {
		t.Fatal(err)
	}

	atx, err := admin.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer atx.Rollback(context.Background())
	if _, err := atx.Exec(c, `DELETE FROM event_type_registry WHERE event_domain = 'iu' AND event_type = 'live_d'`); err != nil {
		t.Fatal(err)
	}
	ptx, err := producer.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer ptx.Rollback(context.Background())
	if one, set := emitBoth(t, ptx, "iu", "live_c"); one != nil || set != nil {
		t.Fatalf("emitting while a registry writer's transaction is open: %v, %v", one, set)
	}
	if err := ptx.Commit(c); err != nil {
		t.Fatal(err)
	}
	if err := atx.Commit(c); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the registry changes and emits took %s: something waited", d)
	}
}

// Rule: a registered name is matched exactly, byte for byte, whatever characters it holds:
// quotes, dollar quotes, backslashes, a separator-like "/" in the domain or the type, a
// newline, a multibyte character. Each is stored as given; a name that differs from a
// registered one only in how its parts are split or quoted is refused as not registered.
// Mutation caught: the registered pairs tested as one string, domain || '/' || type, against
// a list of such strings (a constant the planner can hash): iu/a + b is then accepted as a
// registration of iu + a/b.
func TestProducers_RegistryNamesMatchExactly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	c := ctx(t)
	names := [][2]string{
		{"iu", `it's "quoted"`},
		{"iu", `$$; SELECT 1; $$`},
		{"iu", `back\slash`},
		{"iu/a", "b"},
		{"iu", "line\nbreak"},
		{"iu", "ünï"},
	}
	for _, n := range names {
		db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ($1, $2)`, n[0], n[1])
	}
	tx, err := db.Pool.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for _, n := range names {
		if one, set := emitBoth(t, tx, n[0], n[1]); one != nil || set != nil {
			t.Fatalf("registered %q/%q: %v, %v", n[0], n[1], one, set)
		}
	}
	for _, n := range [][2]string{
		{"iu", "a/b"}, {"iu/", "a/b"}, {"iu", `it''s "quoted"`}, {"iu", `it's`},
		{"iu", `back\\slash`}, {"iu", "line"}, {"iu", "uni"}, {"IU", `it's "quoted"`},
	} {
		one, set := emitBoth(t, tx, n[0], n[1])
		requireUnregistered(t, n[0]+"/"+n[1], one, set)
	}
	if err := tx.Commit(c); err != nil {
		t.Fatal(err)
	}
	var n int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox o JOIN event_type_registry r USING (event_domain, event_type)`, nil, &n)
	if n != 3*len(names) {
		t.Fatalf("%d events of the registered names stored, want %d", n, 3*len(names))
	}
}
