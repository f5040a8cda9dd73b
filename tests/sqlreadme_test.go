package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

var (
	// A literal or NULL default's cast as pg_get_function_arguments prints it
	// ('standard'::text, NULL::text[]): the index writes the default without it.
	defaultCast = regexp.MustCompile(`('(?:[^']|'')*'|NULL)::[a-z][a-z ]*(?:\[\])?`)
	readmeLink  = regexp.MustCompile(`\]\(([^)#]+)(?:#[^)]*)?\)`)
)

// apiEntry is one granted object as the index must show it: the first cell of its row and
// the roles (second cell).
type apiEntry struct{ cell, who string }

// sql/README.md is the index of the public SQL API. Rule: it has exactly one row per
// function, view or table in public that a group role may execute or read, whose first
// cell is the object as the catalog has it (a function's signature as \df shows it, a
// literal default without its cast; its result type after "→" unless jsonb), whose second
// cell names exactly the roles granted it, and whose last cell links at least one test
// file; no row names anything else, and every relative link leads to a file that exists.
func TestSQLReadme_IndexesThePublicAPI(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	readme, err := os.ReadFile("../sql/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]apiEntry{} // keyed by the first cell
	rows, err := db.Pool.Query(ctx(t), `
		SELECT p.proname || '(' || pg_get_function_arguments(p.oid) || ')', pg_get_function_result(p.oid),
		       concat_ws(', ', CASE WHEN has_function_privilege('dot_executor', p.oid, 'EXECUTE') THEN 'dot_executor' END,
		                       CASE WHEN has_function_privilege('workflow_admin', p.oid, 'EXECUTE') THEN 'workflow_admin' END)
		  FROM pg_proc p
		 WHERE p.pronamespace = 'public'::regnamespace
		   AND (has_function_privilege('dot_executor', p.oid, 'EXECUTE')
		        OR has_function_privilege('workflow_admin', p.oid, 'EXECUTE'))
		UNION ALL
		SELECT c.relname, NULL,
		       concat_ws(', ', CASE WHEN has_table_privilege('dot_executor', c.oid, 'SELECT') THEN 'dot_executor' END,
		                       CASE WHEN has_table_privilege('workflow_admin', c.oid, 'SELECT') THEN 'workflow_admin' END)
		  FROM pg_class c
		 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'r', 'p')
		   AND (has_table_privilege('dot_executor', c.oid, 'SELECT')
		        OR has_table_privilege('workflow_admin', c.oid, 'SELECT'))`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var obj, who string
		var result *string
		if err := rows.Scan(&obj, &result, &who); err != nil {
			t.Fatal(err)
		}
		obj = strings.ReplaceAll(defaultCast.ReplaceAllString(obj, "$1"), "timestamp with time zone", "timestamptz")
		cell := "`" + obj + "`"
		if result != nil && *result != "jsonb" {
			cell += " → " + *result
		}
		want[cell] = apiEntry{cell, who}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) < 40 {
		t.Fatalf("only %d granted functions and views found: the query is wrong", len(want))
	}

	seen := map[string]bool{}
	for i, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Errorf("sql/README.md:%d: a row of the index needs object | who | what | tests", i+1)
			continue
		}
		cell, who := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		e, ok := want[cell]
		switch {
		case !ok:
			t.Errorf("sql/README.md:%d lists %s, which is no function or view in public that a group role may call or read (dropped, renamed, its signature changed, or not granted?)", i+1, cell)
		case seen[cell]:
			t.Errorf("sql/README.md:%d lists %s twice", i+1, cell)
		case who != e.who:
			t.Errorf("sql/README.md:%d: %s may be called by %q (sql/grants.sql), the index says %q", i+1, cell, e.who, who)
		}
		seen[cell] = true
		if !strings.Contains(cells[len(cells)-2], "](../tests/") {
			t.Errorf("sql/README.md:%d: %s links no test (its last cell: [name](../tests/...))", i+1, cell)
		}
	}
	var missing []string
	for cell := range want {
		if !seen[cell] {
			missing = append(missing, cell+" | "+want[cell].who)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("sql/README.md does not index (add a row: | object | who | what | tests |):\n%s", strings.Join(missing, "\n"))
	}

	for _, m := range readmeLink.FindAllStringSubmatch(string(readme), -1) {
		target := m[1]
		if strings.Contains(target, "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join("../sql", target)); err != nil {
			t.Errorf("sql/README.md links %s, which does not exist", target)
		}
	}
}
