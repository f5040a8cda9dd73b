package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// packageFunctions lists every function the migrations created in the database:
// all non-extension functions of the public schema.
func packageFunctions(t *testing.T, db *pgtest.DB) (oids []uint32, sigs []string, callable []string) {
	t.Helper()
	rows, err := db.Pool.Query(ctx(t), `
		SELECT p.oid, p.oid::regprocedure::text,
		       p.prorettype = 'trigger'::regtype AS is_trigger,
		       p.proname,
		       coalesce((SELECT string_agg('NULL::' || format_type(a, NULL), ', ' ORDER BY i)
		                   FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(a, i)), '') AS nulls
		  FROM pg_proc p
		 WHERE p.pronamespace = 'public'::regnamespace
		   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		 ORDER BY 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var oid uint32
		var sig, name, nulls string
		var isTrigger bool
		if err := rows.Scan(&oid, &sig, &isTrigger, &name, &nulls); err != nil {
			t.Fatal(err)
		}
		oids, sigs = append(oids, oid), append(sigs, sig)
		if !isTrigger {
			callable = append(callable, fmt.Sprintf("SELECT %s(%s)", pgx.Identifier{name}.Sanitize(), nulls))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(sigs) == 0 {
		t.Fatal("found no package functions: the migrations did not run?")
	}
	return oids, sigs, callable
}

// Rule: PUBLIC executes none of the package's functions.
func TestRoles_PublicExecutesNothing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	_, sigs, _ := packageFunctions(t, db)
	var offenders []string
	rows, err := db.Pool.Query(ctx(t), `
		SELECT p.oid::regprocedure::text
		  FROM pg_proc p
		 WHERE p.pronamespace = 'public'::regnamespace
		   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		   AND (p.proacl IS NULL  -- NULL acl means the default: PUBLIC may execute
		        OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		offenders = append(offenders, s)
	}
	rows.Close()
	if len(offenders) > 0 {
		t.Fatalf("PUBLIC can execute %d of %d functions: %s", len(offenders), len(sigs), strings.Join(offenders, ", "))
	}
}

// Rule: a login role that holds neither group role gets 42501 on every function.
func TestRoles_UngrantedLoginGets42501(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	oids, sigs, callable := packageFunctions(t, db)
	role := "iu_nogrants_" + db.Name
	db.Exec(t, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN`)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(ctx(t), `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize())
	})

	for i, oid := range oids {
		var can bool
		db.QueryRow(t, `SELECT has_function_privilege($1, $2::oid, 'EXECUTE')`, []any{role, oid}, &can)
		if can {
			t.Errorf("%s may execute %s", role, sigs[i])
		}
	}

	conn := db.Conn(t)
	if _, err := conn.Exec(ctx(t), `SET ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	for _, call := range callable {
		_, err := conn.Exec(ctx(t), call)
		e := requireSQLState(t, err, "42501")
		if !strings.Contains(e.Message, "permission denied") {
			t.Errorf("%s: %s", call, e.Message)
		}
	}
	// Tables are reached only through functions.
	for _, tbl := range []string{"event_outbox", "dot_config", "iu_route_attempt", "iu_outbound_route", "event_type_registry", "queue_heartbeat", "iu_route_worker_cursor", "iu_route_dead_letter"} {
		_, err := conn.Exec(ctx(t), `SELECT 1 FROM `+tbl+` LIMIT 1`)
		requireSQLState(t, err, "42501")
	}
}
