package pgtest

import (
	"sort"
	"strings"
	"testing"
)

// GrantMatrix maps a function signature ("fn_x(text,integer)", as regprocedure prints it)
// to the group roles that may execute it; nil means nobody (internal helpers, triggers).
type GrantMatrix map[string][]string

// groupRoles are the package's two NOLOGIN group roles.
var groupRoles = []string{"workflow_admin", "dot_executor"}

// RequireGrants proves the grant rule for one family of functions: PUBLIC executes none of
// them, each group role executes exactly its share, every SECURITY DEFINER one pins
// search_path = pg_catalog, pg_temp, and no function of the package (public or iu_core)
// whose name matches one of the LIKE patterns exists outside the matrix (a new function
// must be placed in it on purpose).
func RequireGrants(t testing.TB, db *DB, matrix GrantMatrix, likePatterns ...string) {
	t.Helper()
	sigs := make([]string, 0, len(matrix))
	for sig := range matrix {
		sigs = append(sigs, sig)
	}
	sort.Strings(sigs)
	for _, sig := range sigs {
		var public, secdef bool
		var config []string
		db.QueryRow(t, `SELECT p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0),
		                       p.prosecdef, coalesce(p.proconfig, '{}')
		                  FROM pg_proc p WHERE p.oid = $1::regprocedure`, []any{sig}, &public, &secdef, &config)
		if public {
			t.Errorf("%s: PUBLIC may execute it", sig)
		}
		if secdef && !pinsSearchPath(config) {
			t.Errorf("%s: SECURITY DEFINER without a pinned search_path: %v", sig, config)
		}
		allowed := map[string]bool{}
		for _, r := range matrix[sig] {
			allowed[r] = true
		}
		for _, role := range groupRoles {
			var can bool
			db.QueryRow(t, `SELECT has_function_privilege($1, $2::regprocedure, 'EXECUTE')`, []any{role, sig}, &can)
			if can != allowed[role] {
				t.Errorf("%s: %s may execute = %v, want %v", sig, role, can, allowed[role])
			}
		}
	}
	var unknown []string
	db.QueryRow(t, `SELECT coalesce(array_agg(p.oid::regprocedure::text ORDER BY 1), '{}') FROM pg_proc p
	                 WHERE p.pronamespace IN ('public'::regnamespace, 'iu_core'::regnamespace)
	                   AND p.proname LIKE ANY ($2::text[])
	                   AND p.oid <> ALL (ARRAY(SELECT s::regprocedure::oid FROM unnest($1::text[]) s))`,
		[]any{sigs, likePatterns}, &unknown)
	if len(unknown) > 0 {
		t.Errorf("functions matching %s missing from the grant matrix: %v", strings.Join(likePatterns, " or "), unknown)
	}
}

// PinnedSearchPath is the one search_path a package function may pin: schemas no untrusted
// role can write (everything of the package is named with its schema).
const PinnedSearchPath = "search_path=pg_catalog, pg_temp"

// pinsSearchPath reports whether a function's SET clauses pin search_path exactly; other
// settings (plan_cache_mode, say) may stand beside it.
func pinsSearchPath(config []string) bool {
	for _, c := range config {
		if strings.HasPrefix(c, "search_path=") {
			return c == PinnedSearchPath
		}
	}
	return false
}

// ProducerInsertGrant is the grant sql/README.md ("Producers") tells a DBA to give a
// producer that INSERTs into event_outbox directly: every column except id and created_at,
// which the log stamps itself. An id is unique only within a history partition, so a producer that could choose
// one could store a second row under a routed event's id in a later partition.
func ProducerInsertGrant(role string) string {
	return `GRANT INSERT (event_domain, event_type, event_stream, delivery_lane, event_severity,
	                      event_subject_table, event_subject_ref, safe_payload, occurred_at, txid)
	        ON event_outbox TO ` + role
}

// ProducerExecuteGrant is the other half of that grant: EXECUTE on the functions the
// outbox's row rules (its columns' domains) call in the writer's own rights. PostgreSQL
// checks EXECUTE on every function of a domain's check when a statement starts, so without
// it every INSERT of the producer is refused.
func ProducerExecuteGrant(role string) string {
	return `GRANT EXECUTE ON FUNCTION iu_core.fn_iu_payload_is_clean(jsonb), iu_core.fn_iu_event_outbox_package_only(text),
	        iu_core.fn_iu_event_outbox_refuse_payload(jsonb) TO ` + role
}

// StripDomainsSQL is a DO block that turns every domain-typed column of table (a freshly
// created, still empty copy such as CREATE TABLE t (LIKE event_outbox)) into the domain's
// base type. The outbox's row rules are domains on its columns and LIKE copies column
// types, so this is how a benchmark builds a baseline that carries no row rules.
func StripDomainsSQL(table string) string {
	return `DO $$ DECLARE r record; BEGIN
		FOR r IN SELECT a.attname, format_type(t.typbasetype, a.atttypmod) AS base
		           FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		          WHERE a.attrelid = '` + table + `'::regclass AND a.attnum > 0 AND NOT a.attisdropped AND t.typtype = 'd'
		LOOP
			EXECUTE format('ALTER TABLE ` + table + ` ALTER COLUMN %I TYPE %s', r.attname, r.base);
		END LOOP; END $$`
}
