package tests

import (
	"os"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// sql/iu-core/README.md is the index of the public SQL API: every function or view a group
// role may execute or read is named there, so a new public function cannot ship unlisted.
func TestSQLReadme_ListsEveryPublicFunctionAndView(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	readme, err := os.ReadFile("../sql/iu-core/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	db.QueryRow(t, `
		SELECT coalesce(array_agg(DISTINCT n ORDER BY n), '{}') FROM (
		    SELECT p.proname AS n FROM pg_proc p
		     WHERE p.pronamespace = 'public'::regnamespace
		       AND (has_function_privilege('dot_executor', p.oid, 'EXECUTE')
		            OR has_function_privilege('workflow_admin', p.oid, 'EXECUTE'))
		    UNION ALL
		    SELECT c.relname FROM pg_class c
		     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'r')
		       AND (has_table_privilege('dot_executor', c.oid, 'SELECT')
		            OR has_table_privilege('workflow_admin', c.oid, 'SELECT'))) x`, nil, &names)
	if len(names) < 40 {
		t.Fatalf("only %d public functions and views found: the query is wrong", len(names))
	}
	var missing []string
	for _, n := range names {
		if !strings.Contains(string(readme), "`"+n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("sql/iu-core/README.md does not list: %v", missing)
	}
}
