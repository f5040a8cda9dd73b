package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func call(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return out.String(), errb.String(), code
}

// Rule: usage errors exit 2 with a message on stderr; --help exits 0 with usage on stdout.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"tick", "--batch", "0"}, {"tick", "--bogus"}, {"run", "--mode", "x"},
		{"run", "--poll-interval", "0s"}, {"health", "x"}, {"migrate"}, {"migrate", "sideways"}, {"tick", "--log-level", "loud"}} {
		if _, errOut, code := call(args...); code != ExitUsage || errOut == "" {
			t.Errorf("%v: exit %d (stderr %q), want 2", args, code, errOut)
		}
	}
	for _, cmd := range []string{"tick", "run", "health", "migrate"} {
		if out, _, code := call(cmd, "--help"); code != ExitOK || !strings.HasPrefix(out, "Usage: iu-runner "+cmd) {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, out)
		}
	}
	if out, _, code := call("help"); code != ExitOK || !strings.Contains(out, "Exit codes") {
		t.Errorf("help: %d %s", code, out)
	}
}

// Rule: an unreachable database exits 1 with one clear line, and tick still prints one
// JSON line on stdout.
func TestUnreachable(t *testing.T) {
	out, errOut, code := call("tick", "--database-url", "postgres://x@127.0.0.1:1/db?sslmode=disable", "--connect-timeout", "2s")
	if code != ExitFailure || !strings.HasPrefix(errOut, "iu-runner tick: error: connecting to the database") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil || s["ok"] != false {
		t.Fatalf("stdout %q: %v", out, err)
	}
}
