package routeworker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// holdersByTheViews is what fn_iu_route_worker_holders said up to issue 24, when it read the
// views pg_stat_activity and pg_prepared_xacts, as one statement: the holders of two
// snapshots' in-progress lists ($1, $2), xact_age_seconds aside (clock_timestamp() moves
// between two statements; holdersObjects checks it on its own). The function reads the
// views' functions directly now; this is the answer it must keep.
const holdersByTheViews = `
	SELECT coalesce(jsonb_agg(jsonb_build_object(
	           'txid', r.txid::text,
	           'pid', a.pid,
	           'usename', a.usename,
	           'application_name', a.application_name,
	           'state', a.state,
	           'xact_start', coalesce(a.xact_start, px.prepared),
	           'prepared_gid', px.gid)
	       ORDER BY coalesce(a.xact_start, px.prepared) NULLS LAST, r.txid), '[]'::jsonb)
	  FROM (SELECT DISTINCT x.txid
	          FROM (SELECT pg_snapshot_xip($1::pg_snapshot) UNION ALL SELECT pg_snapshot_xip($2::pg_snapshot)) x(txid)
	         WHERE NOT pg_visible_in_snapshot(x.txid, pg_current_snapshot())) r
	  LEFT JOIN pg_stat_activity a ON a.backend_xid = r.txid::xid
	  LEFT JOIN pg_prepared_xacts px ON px.transaction = r.txid::xid
	 WHERE (a.datname IS NULL OR a.datname = current_database())
	   AND (px.database IS NULL OR px.database = current_database())`

// holdersObjects decodes a held_open_by array, checks each xact_age_seconds against its
// xact_start (now - xact_start, to the millisecond, allowing for the test's own time) and
// drops it, so the rest compares with holdersByTheViews' answer (which has none).
func holdersObjects(t *testing.T, what string, v any) []map[string]any {
	t.Helper()
	return decodeHolders(t, what, v, true)
}

func decodeHolders(t *testing.T, what string, v any, aged bool) []map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("%s: held_open_by is not an array of objects: %s", what, raw)
	}
	for _, h := range list {
		age, hasAge := h["xact_age_seconds"]
		if !aged {
			if hasAge {
				t.Fatalf("%s: an age: %v", what, h)
			}
			continue
		}
		start, _ := h["xact_start"].(string)
		switch {
		case start == "" && age != nil:
			t.Fatalf("%s: an age without a start: %v", what, h)
		case start != "":
			f, ok := age.(float64)
			ts, err := time.Parse(time.RFC3339Nano, start)
			if !ok || err != nil {
				t.Fatalf("%s: xact_start %q with xact_age_seconds %v (%v)", what, start, age, err)
			}
			if want := time.Since(ts).Seconds(); f < 0 || f > want+0.001 || f < want-120 || math.Abs(math.Round(f*1000)-f*1000) > 1e-6 {
				t.Fatalf("%s: xact_age_seconds %v for a transaction started %v ago (%v)", what, f, want, h)
			}
		case !hasAge:
			t.Fatalf("%s: no xact_age_seconds key: %v", what, h)
		}
		delete(h, "xact_age_seconds")
	}
	return list
}

// viewsSay evaluates holdersByTheViews on q (as q's role sees the views).
func viewsSay(t *testing.T, q querier, done, window *string) []map[string]any {
	t.Helper()
	var v any
	if err := q.QueryRow(pgtest.Ctx(t), holdersByTheViews, done, window).Scan(&v); err != nil {
		t.Fatalf("the views' answer: %v", err)
	}
	return decodeHolders(t, "the views", v, false)
}

func requireSameHolders(t *testing.T, what string, got, want []map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("%s says\n%s\nthe views said\n%s", what, g, w)
	}
}

// holdXID opens a transaction on c that takes a transaction id and stays open (rolled back
// at test end); it returns the txid and the session's pid.
func holdXID(t *testing.T, c *pgx.Conn, appName string) (txid string, pid int) {
	t.Helper()
	ctx := pgtest.Ctx(t)
	if _, err := c.Exec(ctx, `SELECT set_config('application_name', $1, false)`, appName); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text, pg_backend_pid()`).Scan(&txid, &pid); err != nil {
		t.Fatal(err)
	}
	return txid, pid
}

// prepareXID leaves a prepared transaction named gid in c's database (rolled back at test
// end) and returns its txid.
func prepareXID(t *testing.T, c *pgx.Conn, gid string) string {
	t.Helper()
	ctx := pgtest.Ctx(t)
	var txid string
	if _, err := c.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&txid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `PREPARE TRANSACTION '`+gid+`'`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Exec(context.Background(), `ROLLBACK PREPARED '`+gid+`'`) })
	return txid
}

// Rule (issue 24): held_open_by says what the views said. fn_iu_route_worker_holders reads
// pg_stat_get_activity and pg_prepared_xact (what the views pg_stat_activity and
// pg_prepared_xacts are made of) with the views' joins for the matching rows only; its
// answer, in the idle run's summary, in health and with two snapshots, is the views'
// answer, key for key, value for value and in the same order, for every kind of holder:
// a session of the superuser and one of another login (usename, application_name, state,
// xact_start), a forgotten prepared transaction (no pid, its gid, prepared time as
// xact_start), a session whose login was dropped while its transaction runs (no usename,
// where pg_get_userbyid alone would say 'unknown (OID=n)'), and none of the session and
// prepared transaction of another database of the cluster. And to an owner without
// superuser or pg_read_all_stats, as the views showed it: other logins' sessions with
// their pid and login, without state and start. On every supported major (the column sets
// of pg_stat_get_activity differ), each on a cluster of its own that allows prepared
// transactions.
func TestHolders_SayWhatTheViewsSaid(t *testing.T) {
	t.Parallel()
	for _, major := range []int{13, 14, 15, 16, 17, 18} {
		t.Run(fmt.Sprintf("postgresql%d", major), func(t *testing.T) {
			t.Parallel()
			h := pgtest.MajorHarnessWith(t, major, pgtest.LocalOptions{Settings: []string{"max_prepared_transactions=8"}})
			holdersSayWhatTheViewsSaid(t, h)
		})
	}
}

func holdersSayWhatTheViewsSaid(t *testing.T, h *pgtest.Harness) {
	db, b := setupOn(t, h.NewDBOn(t, true))
	other := h.NewDBOn(t, false) // another database of the cluster
	ctx := pgtest.Ctx(t)
	login, ghost, owner := "holder_"+db.Name, "ghost_"+db.Name, "owner_"+db.Name
	db.Exec(t, `CREATE ROLE `+login+` LOGIN PASSWORD 'pw'; CREATE ROLE `+ghost+` LOGIN PASSWORD 'pw';
	            CREATE ROLE `+owner+`; GRANT USAGE ON SCHEMA iu_core TO `+owner+`;
	            GRANT EXECUTE ON FUNCTION iu_core.fn_iu_route_worker_holders(pg_snapshot, pg_snapshot) TO `+owner)

	// Everything held before the worker routes an event: its stored position lists them all.
	superTxid, superPID := holdXID(t, db.Conn(t), "iu_holder_super")
	loginTxid, loginPID := holdXID(t, db.ConnAs(t, login, "pw"), "iu_holder_login")
	ghostTxid, ghostPID := holdXID(t, db.ConnAs(t, ghost, "pw"), "iu_holder_ghost")
	otherTxid, _ := holdXID(t, other.Conn(t), "iu_holder_other_db")
	gid := "iu_hold_" + db.Name
	preparedTxid := prepareXID(t, db.Conn(t), gid)
	otherPrepared := prepareXID(t, other.Conn(t), "iu_hold_other_"+db.Name)
	db.Exec(t, `DROP ROLE `+ghost) // its session and transaction run on
	emit1(t, db.Pool, typDry)
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})

	var done string
	db.QueryRow(t, `SELECT done_snapshot::text FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{b.worker}, &done)
	var listed int
	db.QueryRow(t, `SELECT count(*) FROM pg_snapshot_xip($1::pg_snapshot) x
	                 WHERE x::text = ANY ($2::text[])`, []any{done, []string{superTxid, loginTxid, ghostTxid, otherTxid, preparedTxid, otherPrepared}}, &listed)
	if listed != 6 {
		t.Fatalf("setup: the position %s lists %d of the 6 transactions held", done, listed)
	}
	want := viewsSay(t, db.Pool, &done, nil)

	// What the rule is about, spelled out: four holders, oldest first; nothing of the other
	// database.
	byTxid := map[string]map[string]any{}
	for _, o := range want {
		byTxid[o["txid"].(string)] = o
	}
	if len(want) != 4 || byTxid[otherTxid] != nil || byTxid[otherPrepared] != nil {
		t.Fatalf("setup: the views name %v, want the 4 holders of this database", want)
	}
	if o := byTxid[loginTxid]; o["pid"] != float64(loginPID) || o["usename"] != login ||
		o["application_name"] != "iu_holder_login" || o["state"] != "idle in transaction" || o["xact_start"] == nil {
		t.Fatalf("setup: another login's session: %v", o)
	}
	if o := byTxid[ghostTxid]; o["pid"] != float64(ghostPID) || o["usename"] != nil {
		t.Fatalf("setup: a dropped login's session: %v", o)
	}
	if o := byTxid[preparedTxid]; o["pid"] != nil || o["prepared_gid"] != gid || o["xact_start"] == nil {
		t.Fatalf("setup: a prepared transaction: %v", o)
	}
	if o := byTxid[superTxid]; o["pid"] != float64(superPID) || o["prepared_gid"] != nil {
		t.Fatalf("setup: a superuser's session: %v", o)
	}

	idle := run(t, db.Pool, b.worker, 100)
	if idle["idle"] != true || num(t, idle, "held_open_count") != 4 {
		t.Fatalf("the idle run: %v", idle)
	}
	requireSameHolders(t, "the idle run", holdersObjects(t, "the idle run", idle["held_open_by"]), want)
	var health map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_health($1)`, []any{b.worker}, &health)
	requireSameHolders(t, "health", holdersObjects(t, "health", health["held_open_by"]), want)

	// Two snapshots (a window's, as health and the full pass ask): the union of their
	// lists, each transaction once. The second is taken after one more transaction began,
	// so it lists one the position does not.
	laterTxid, _ := holdXID(t, db.Conn(t), "iu_holder_later")
	db.Exec(t, `SELECT pg_current_xact_id()`) // a later commit: a snapshot's list stops below its xmax
	var now string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &now)
	var both any
	db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_holders($1::pg_snapshot, $2::pg_snapshot)`, []any{done, now}, &both)
	wantBoth := viewsSay(t, db.Pool, &done, &now)
	if len(wantBoth) != 5 || wantBoth[4]["txid"] != laterTxid {
		t.Fatalf("setup: with the later snapshot the views name %v", wantBoth)
	}
	requireSameHolders(t, "two snapshots", holdersObjects(t, "two snapshots", both), wantBoth)

	// An owner without superuser or pg_read_all_stats (the function runs as its callers'
	// owner): the views showed it other logins' sessions without state and start.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+owner); err != nil {
		t.Fatal(err)
	}
	var asOwner any
	if err := tx.QueryRow(ctx, `SELECT iu_core.fn_iu_route_worker_holders($1::pg_snapshot, NULL)`, done).Scan(&asOwner); err != nil {
		t.Fatal(err)
	}
	wantOwner := viewsSay(t, tx, &done, nil)
	for _, o := range wantOwner {
		if o["txid"] == loginTxid && (o["pid"] != float64(loginPID) || o["usename"] != login || o["state"] != nil || o["xact_start"] != nil) {
			t.Fatalf("setup: the views show the owner another login's session as %v", o)
		}
	}
	requireSameHolders(t, "as an owner without superuser", holdersObjects(t, "as an owner without superuser", asOwner), wantOwner)
}
