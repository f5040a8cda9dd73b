package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
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

// errorLine finds the JSON error record on stderr; every line that is JSON must parse.
func errorLine(t *testing.T, stderr string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %v\n%s", err, l)
		}
		if m["level"] == "ERROR" {
			found = m
		}
	}
	if found == nil {
		t.Fatalf("no JSON error line on stderr:\n%s", stderr)
	}
	return found
}

// Rule: errors go to stderr as one JSON log line (slog), usage errors included.
func TestErrorsAreJSONLines(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"tick", "--batch", "0"}, {"run", "--bogus"}} {
		_, errOut, code := call(args...)
		m := errorLine(t, errOut)
		if code != ExitUsage || m["exit_code"] != float64(ExitUsage) || m["error"] == "" {
			t.Errorf("%v: exit %d, %v", args, code, m)
		}
	}
}

// Rule: an unreachable database exits 1 with one clear JSON error line, and tick still
// prints one JSON line on stdout.
func TestUnreachable(t *testing.T) {
	out, errOut, code := call("tick", "--database-url", "postgres://x@127.0.0.1:1/db?sslmode=disable", "--connect-timeout", "2s")
	m := errorLine(t, errOut)
	if code != ExitFailure || m["msg"] != "iu-runner tick: error" || !strings.HasPrefix(m["error"].(string), "connecting to the database") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil || s["ok"] != false {
		t.Fatalf("stdout %q: %v", out, err)
	}
}

// Rule: migrate applies --connect-timeout: a server that accepts the TCP connection and
// never answers fails the command within the timeout instead of hanging it; and migrate
// does not take the pool flags it would ignore.
func TestMigrateConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // hold them open, say nothing
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	done := make(chan int, 1)
	var errOut string
	go func() {
		var code int
		_, errOut, code = call("migrate", "version", "--database-url", "postgres://x@"+ln.Addr().String()+"/db?sslmode=disable", "--connect-timeout", "500ms")
		done <- code
	}()
	select {
	case code := <-done:
		if code != ExitFailure {
			t.Fatalf("exit %d, want 1\n%s", code, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("migrate ignored --connect-timeout: still waiting for a silent server after 10s")
	}
	for _, f := range []string{"--statement-timeout", "--max-conns", "--call-timeout"} {
		if _, _, code := call("migrate", "version", f, "1"); code != ExitUsage {
			t.Errorf("migrate accepts %s (exit %d), a flag it would ignore", f, code)
		}
	}
}

// Rule: `iu-runner version` and `iu-runner --version` print the build (module version and
// VCS revision) and exit 0; --json gives the same as one object.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := call(args...)
		if code != ExitOK || !strings.HasPrefix(out, "iu-runner ") || !strings.Contains(out, "revision ") || errOut != "" {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
	out, _, code := call("version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != ExitOK || v["version"] == "" || v["revision"] == "" {
		t.Fatalf("version --json: exit %d %q (%v)", code, out, err)
	}
	if _, _, code := call("version", "extra"); code != ExitUsage {
		t.Errorf("version extra: exit %d, want 2", code)
	}
}

// Rule: `iu-runner help <command>` prints that command's usage on stdout and exits 0, like
// `<command> --help`; an unknown command is a usage error.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range []string{"tick", "run", "health", "migrate", "version"} {
		out, _, code := call("help", cmd)
		want, _, _ := call(cmd, "--help")
		if code != ExitOK || !strings.HasPrefix(out, "Usage: iu-runner "+cmd) || out != want {
			t.Errorf("help %s: exit %d\n%s", cmd, code, out)
		}
	}
	if _, errOut, code := call("help", "frobnicate"); code != ExitUsage || errOut == "" {
		t.Errorf("help frobnicate: exit %d", code)
	}
	if out, _, _ := call("help"); !strings.Contains(out, "migrate plan|up|down|status|check|version") {
		t.Errorf("help does not list migrate check:\n%s", out)
	}
}
