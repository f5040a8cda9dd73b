package sqlgen

import (
	"strings"
	"testing"
)

// Rule: a parameter list is reduced to what DROP and GRANT name: input argument types only
// (names, defaults and OUT parameters dropped).
func TestInputArgs(t *testing.T) {
	cases := map[string]string{
		"(p_a text, p_b integer DEFAULT 100)": "text, integer",
		"()":                                  "",
		"(p_kind text, OUT expected integer, OUT stale integer)":      "text",
		"(p_payload jsonb DEFAULT '{}'::jsonb, p_ids uuid[] = NULL)":  "jsonb, uuid[]",
		"(\n    p_cursor public.iu_route_worker_cursor -- the row\n)": "public.iu_route_worker_cursor",
		"(VARIADIC p_parts text[])":                                   "text[]",
	}
	for in, want := range cases {
		got, err := inputArgs(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("inputArgs(%q) = %q, want %q", in, strings.Join(got, ", "), want)
		}
	}
}

// Rule: statements split at a line ending in ';' outside a $$ body, never inside one.
func TestSplitStatements(t *testing.T) {
	src := "CREATE OR REPLACE FUNCTION a.b() RETURNS int LANGUAGE sql AS $$\n  SELECT 1; -- not the end\n$$;\nCOMMENT ON FUNCTION a.b() IS 'x; y';\n"
	got := SplitStatements(src)
	if len(got) != 2 || !strings.HasPrefix(got[1], "COMMENT ON") {
		t.Fatalf("SplitStatements gave %d statements: %q", len(got), got)
	}
}
