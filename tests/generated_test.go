package tests

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/sqlgen"
)

// Rule: sql/iu-core holds the migrations generated from the sources exactly as the sources
// give them, and every file that claims to be generated is named in sql/generated.txt. A
// function changed in sql/functions but not regenerated (`make generate`) fails here, as
// does a generated file edited by hand. UPDATE_GENERATED=1 rewrites them.
func TestGeneratedMigrations_AreFresh(t *testing.T) {
	tree, err := sqlgen.Load(os.DirFS("../sql"))
	if err != nil {
		t.Fatalf("loading the SQL sources: %v", err)
	}
	want, err := tree.Generate()
	if err != nil {
		t.Fatalf("generating: %v", err)
	}
	dir := "../sql/iu-core"
	if os.Getenv("UPDATE_GENERATED") != "" {
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var stale []string
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, b) {
			stale = append(stale, name)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || e.IsDir() {
			continue
		}
		if _, ok := want[e.Name()]; !ok && strings.HasPrefix(string(b), sqlgen.GeneratedHeader) {
			stale = append(stale, e.Name()+" (not in sql/generated.txt)")
		}
		// Hand-written migrations may include a source file (the install plan in 001).
		expanded, has, err := sqlgen.ExpandIncludes(os.DirFS("../sql"), string(b))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if has && os.Getenv("UPDATE_GENERATED") != "" {
			if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(expanded), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if has && expanded != string(b) {
			stale = append(stale, e.Name()+" (an included file changed)")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Fatalf("generated migrations differ from their sources: %s\nrun `make generate` (and review the diff)", strings.Join(stale, ", "))
	}
}
