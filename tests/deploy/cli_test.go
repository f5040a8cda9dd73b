package deploy

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// runBin runs the built iu-runner with args and no database settings from the test
// process, and returns stdout, stderr and the exit code.
func runBin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runnerBin.Path(t), args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// Rule: `migrate status` and `migrate check` exit 3 while migrations are pending (so a
// deploy pipeline or an init container can gate on them) and 0 once they are applied.
func TestMigrateStatusAndCheckGateOnPending(t *testing.T) {
	db := pgtest.NewEmptyDB(t)
	for _, action := range []string{"status", "check"} {
		out, errOut, code := runBin(t, "migrate", action, "--database-url", db.URL)
		if code != 3 || !strings.Contains(out, "pending") {
			t.Fatalf("migrate %s on an empty database: exit %d, want 3\n%s%s", action, code, out, errOut)
		}
	}
	if _, errOut, code := runBin(t, "migrate", "up", "--database-url", db.URL); code != 0 {
		t.Fatalf("migrate up: exit %d\n%s", code, errOut)
	}
	for _, action := range []string{"status", "check"} {
		out, errOut, code := runBin(t, "migrate", action, "--database-url", db.URL)
		if code != 0 {
			t.Fatalf("migrate %s after up: exit %d, want 0\n%s%s", action, code, out, errOut)
		}
	}
	// one step back: pending again
	if _, errOut, code := runBin(t, "migrate", "down", "--database-url", db.URL); code != 0 {
		t.Fatalf("migrate down: exit %d\n%s", code, errOut)
	}
	if out, _, code := runBin(t, "migrate", "check", "--database-url", db.URL); code != 3 || !strings.Contains(out, "1 migration(s) pending") {
		t.Fatalf("migrate check after down: exit %d\n%s", code, out)
	}
}

// Rule: the built binary names its build: `version` and `--version` print the module
// version and the VCS revision the toolchain stamped, as `make build` builds it
// (-buildvcs=auto, whatever GOFLAGS says); and -ldflags -X stamps them where the toolchain
// cannot (deploy/Dockerfile: no .git in the image's build context).
func TestVersionNamesTheRevision(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "iu-runner")
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "./cmd/iu-runner")
	build.Dir = repoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stamped := ""
	if m, err := exec.Command("go", "version", "-m", bin).Output(); err == nil {
		for _, l := range strings.Split(string(m), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
				stamped = strings.TrimPrefix(f[1], "vcs.revision=")
			}
		}
	}
	for _, args := range []string{"version", "--version"} {
		out, err := exec.Command(bin, args).Output()
		if err != nil || !strings.HasPrefix(string(out), "iu-runner ") {
			t.Fatalf("%s: %v %q", args, err, out)
		}
		if stamped == "" {
			// a git worktree (or no git): the toolchain stamped nothing, and says so
			t.Logf("no VCS stamp in this checkout; %s prints %q", args, out)
			if !strings.Contains(string(out), "revision unknown") {
				t.Errorf("%s: %q", args, out)
			}
		} else if !strings.Contains(string(out), "revision "+stamped) {
			t.Errorf("%s: %q does not name the stamped revision %s", args, out, stamped)
		}
	}
	x := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "-ldflags",
		"-X github.com/iu-core/event-worker/internal/buildinfo.version=v9.8.7 -X github.com/iu-core/event-worker/internal/buildinfo.revision=cafe123",
		"./cmd/iu-runner")
	x.Dir = repoRoot()
	if out, err := x.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags: %v\n%s", err, out)
	}
	if out, _ := exec.Command(bin, "--version").Output(); !strings.HasPrefix(string(out), "iu-runner v9.8.7 (revision cafe123") {
		t.Errorf("-ldflags -X stamps are not shown: %q", out)
	}
}
