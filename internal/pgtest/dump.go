package pgtest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Dump is the database at url as pg_dump prints it (schema and data, or the schema only),
// less pg_dump's per-run \restrict key and the tables excluded (-T patterns): what a test
// compares to prove a database is exactly what it was, or what a fresh install is.
func Dump(t testing.TB, url string, schemaOnly bool, exclude ...string) string {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		Unavailable(t, "pg_dump is needed to compare databases: %v", err)
	}
	args := []string{"--no-sync", "-d", url}
	if schemaOnly {
		args = append(args, "--schema-only")
	}
	for _, x := range exclude {
		args = append(args, "-T", x)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, `\restrict `) || strings.HasPrefix(l, `\unrestrict `) {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// RequireSameDump fails t with the first differing lines of two dumps.
func RequireSameDump(t testing.TB, what, before, after string) {
	t.Helper()
	if before == after {
		return
	}
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	var diff []string
	for i := 0; i < len(b) || i < len(a); i++ {
		var lb, la string
		if i < len(b) {
			lb = b[i]
		}
		if i < len(a) {
			la = a[i]
		}
		if lb != la {
			diff = append(diff, fmt.Sprintf("line %d:\n  before: %s\n  after:  %s", i+1, lb, la))
			if len(diff) == 8 {
				break
			}
		}
	}
	t.Fatalf("%s: the dumps differ\n%s", what, strings.Join(diff, "\n"))
}
