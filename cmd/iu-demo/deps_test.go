package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Rule: the demo is a shipped binary, so it links neither the testing package nor the
// test harness's testcontainers (its throwaway server comes from internal/pgserver).
func TestDemoDoesNotLinkTheTestHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "testing" || strings.Contains(pkg, "testcontainers") || strings.HasSuffix(pkg, "/internal/pgtest") {
			t.Errorf("cmd/iu-demo links %s", pkg)
		}
	}
}
