// Package runnertest builds the real iu-runner binary once per test process, for the
// end-to-end tests (tests/runner) and the benchmarks (bench/runner) that drive it as an
// operator would: flags, environment, exit codes, signals.
package runnertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Binary is a lazily built ./cmd/iu-runner. The zero value is ready to use.
type Binary struct {
	// Race builds the binary itself under the race detector.
	Race bool

	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the binary on first use and returns its path; a build failure fails tb.
func (b *Binary) Path(tb testing.TB) string {
	tb.Helper()
	b.once.Do(b.build)
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// Cleanup removes the built binary; call it from TestMain after m.Run.
func (b *Binary) Cleanup() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

func (b *Binary) build() {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if b.dir, b.err = os.MkdirTemp("", "iu-runner-bin-"); b.err != nil {
		return
	}
	b.path = filepath.Join(b.dir, "iu-runner")
	args := []string{"build", "-o", b.path}
	if b.Race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/iu-runner")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go build ./cmd/iu-runner: %v\n%s", err, out)
	}
}
