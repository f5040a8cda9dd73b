package sqlgen

import (
	"strings"
	"testing"
	"testing/fstest"
)

// release builds a source tree: area "a" with the given files (name -> SQL), grants, and the
// manifest; migrations are the files already in iu-core/.
func release(files map[string]string, grants, manifest string, migrations map[string][]byte) fstest.MapFS {
	fsys := fstest.MapFS{
		"generated.txt": {Data: []byte(manifest)},
		"grants.sql":    {Data: []byte(grants)},
	}
	var index []string
	for name, sql := range files {
		fsys["functions/a/"+name] = &fstest.MapFile{Data: []byte(sql)}
		index = append(index, "`"+name+"`")
	}
	fsys["functions/a/README.md"] = &fstest.MapFile{Data: []byte("# a\n\n" + strings.Join(index, "\n") + "\n")}
	for name, b := range migrations {
		fsys["iu-core/"+name] = &fstest.MapFile{Data: b}
	}
	return fsys
}

func generate(t *testing.T, fsys fstest.MapFS) map[string][]byte {
	t.Helper()
	tree, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tree.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Rule: a release after the first re-applies every function and view over the previous
// release, whose migrations stay exactly as they were released: a function that is gone is
// dropped, one whose result changed is dropped just before it is created again, new grants
// are added and old ones revoked, and the Down drops what is new and re-applies the previous
// release's Up, restoring every old body and grant.
func TestReapply_OverThePreviousRelease(t *testing.T) {
	v1 := map[string]string{
		"fn_f.sql": "CREATE OR REPLACE FUNCTION public.fn_f(p_x integer)\nRETURNS integer\nLANGUAGE sql\nAS $$ SELECT p_x $$;\n",
		"fn_h.sql": "CREATE OR REPLACE FUNCTION iu_core.fn_h()\nRETURNS text\nLANGUAGE sql\nAS $$ SELECT 'h' $$;\n",
		"v_x.sql":  "CREATE OR REPLACE VIEW public.v_x AS SELECT 1 AS one;\n",
	}
	grants1 := "GRANT EXECUTE ON FUNCTION public.fn_f(integer) TO dot_executor;\n"
	first := "001_functions.sql a\n002_grants.sql grants\n"
	released := generate(t, release(v1, grants1, first, nil))

	v2 := map[string]string{
		"fn_f.sql": "CREATE OR REPLACE FUNCTION public.fn_f(p_x integer)\nRETURNS bigint\nLANGUAGE sql\nAS $$ SELECT p_x::bigint $$;\n",
		"fn_g.sql": "CREATE OR REPLACE FUNCTION public.fn_g()\nRETURNS text\nLANGUAGE sql\nAS $$ SELECT 'g' $$;\n",
		"v_x.sql":  "CREATE OR REPLACE VIEW public.v_x AS SELECT 1 AS one;\n",
	}
	grants2 := "GRANT EXECUTE ON FUNCTION public.fn_f(integer) TO workflow_admin;\nGRANT EXECUTE ON FUNCTION public.fn_g() TO dot_executor;\n"
	out := generate(t, release(v2, grants2, first+"003_functions.sql *\n", released))

	for name, b := range released {
		if string(out[name]) != string(b) {
			t.Fatalf("%s is released: Generate must return it as it was", name)
		}
	}
	m := string(out["003_functions.sql"])

	up, down, ok := strings.Cut(m, "-- +goose Down\n")
	if !ok {
		t.Fatal("no Down section")
	}
	for _, want := range []string{
		"DROP FUNCTION IF EXISTS iu_core.fn_h();",
		"-- its arguments or result changed: CREATE OR REPLACE cannot change them\nDROP FUNCTION public.fn_f(integer);",
		"RETURNS bigint",
		"CREATE OR REPLACE FUNCTION public.fn_g()",
		"REVOKE EXECUTE ON FUNCTION public.fn_f(integer) FROM dot_executor;",
		"GRANT EXECUTE ON FUNCTION public.fn_g() TO dot_executor;",
		"CREATE OR REPLACE FUNCTION " + PackageFunctionsName + "()",
	} {
		if !strings.Contains(up, want) {
			t.Errorf("Up lacks %q:\n%s", want, up)
		}
	}
	if strings.Index(up, "DROP FUNCTION public.fn_f(integer)") > strings.Index(up, "RETURNS bigint") {
		t.Error("the changed function must be dropped before it is created again")
	}
	if strings.Contains(up, "DROP VIEW public.v_x") {
		t.Error("a view still there must not be dropped")
	}
	for _, want := range []string{
		"DROP FUNCTION public.fn_g();",
		"DROP FUNCTION public.fn_f(integer);",
		"REVOKE EXECUTE ON FUNCTION public.fn_g() FROM dot_executor;",
		"RETURNS integer",
		"CREATE OR REPLACE FUNCTION iu_core.fn_h()",
		"GRANT EXECUTE ON FUNCTION public.fn_f(integer) TO dot_executor;",
	} {
		if !strings.Contains(down, want) {
			t.Errorf("Down lacks %q:\n%s", want, down)
		}
	}
	if strings.Index(down, "DROP FUNCTION public.fn_f(integer);") > strings.Index(down, "RETURNS integer") {
		t.Error("Down must drop the changed function before the previous release creates it again")
	}
}
