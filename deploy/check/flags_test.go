package check

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

var runner struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// runnerBinary is $IU_RUNNER_BIN, or ./cmd/iu-runner built fresh from this checkout (a
// bin/iu-runner left from an earlier build could lack a flag the artifacts now use).
func runnerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("IU_RUNNER_BIN"); p != "" {
		return p
	}
	runner.once.Do(func() {
		dir, err := os.MkdirTemp("", "iu-runner-flags-")
		if err != nil {
			runner.err = err
			return
		}
		runner.path = filepath.Join(dir, "iu-runner")
		cmd := exec.Command("go", "build", "-o", runner.path, "./cmd/iu-runner")
		cmd.Dir = Root()
		runner.out, runner.err = cmd.CombinedOutput()
	})
	if runner.err != nil {
		t.Fatalf("go build ./cmd/iu-runner: %v\n%s", runner.err, runner.out)
	}
	return runner.path
}

var flagLine = regexp.MustCompile(`^\s+-([a-z0-9][a-z0-9-]*)`)

// flagsOf lists the flags `iu-runner help <command>` documents.
func flagsOf(t *testing.T, bin, command string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, "help", command).Output()
	if err != nil {
		t.Fatalf("iu-runner help %s: %v", command, err)
	}
	flags := map[string]bool{"help": true}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := flagLine.FindStringSubmatch(sc.Text()); m != nil {
			flags[m[1]] = true
		}
	}
	if len(flags) < 3 {
		t.Fatalf("iu-runner help %s lists no flags:\n%s", command, out)
	}
	return flags
}

// invocation is one iu-runner command line an artifact runs.
type invocation struct {
	where string
	args  []string // after the binary: the command, then its arguments
}

// artifactInvocations collects the iu-runner command lines of the systemd units, the
// crontab and the Kubernetes workloads.
func artifactInvocations(t *testing.T) []invocation {
	t.Helper()
	var out []invocation
	shellWords := func(where, line string) {
		_, rest, ok := strings.Cut(line, "/usr/local/bin/iu-runner ")
		if !ok {
			return
		}
		var args []string
		for _, w := range strings.Fields(rest) {
			if strings.ContainsAny(w[:1], "|;&)>") || w == "2>&1" {
				break // the shell takes over
			}
			args = append(args, w)
		}
		out = append(out, invocation{where, args})
	}
	units, _ := filepath.Glob(filepath.Join(Root(), "deploy", "systemd", "*.service"))
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "ExecStart=") {
				shellWords(filepath.Base(u), l)
			}
		}
	}
	cron, err := os.ReadFile(Artifact("IU_DEPLOY_CRONTAB", "deploy", "cron", "iu-runner"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(cron), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			shellWords("cron/iu-runner", l)
		}
	}
	for _, m := range manifests(t) {
		var specs []corev1.PodSpec
		switch o := m.Object.(type) {
		case *appsv1.Deployment:
			specs = append(specs, o.Spec.Template.Spec)
		case *batchv1.Job:
			specs = append(specs, o.Spec.Template.Spec)
		case *batchv1.CronJob:
			specs = append(specs, o.Spec.JobTemplate.Spec.Template.Spec)
		}
		for _, s := range specs {
			for _, c := range append(append([]corev1.Container{}, s.InitContainers...), s.Containers...) {
				out = append(out, invocation{m.File + " " + c.Name, c.Args})
			}
		}
	}
	return out
}

// Rule: every flag a deployment artifact passes is one the binary's command accepts, so a
// renamed or new flag cannot ship in a manifest, a unit or the crontab that the binary
// would refuse at start (exit 2, a restart loop).
func TestArtifactFlagsExist(t *testing.T) {
	bin := runnerBinary(t)
	known := map[string]map[string]bool{}
	invs := artifactInvocations(t)
	if len(invs) < 6 {
		t.Fatalf("found %d iu-runner command lines in the artifacts, want the units, the crontab and the workloads", len(invs))
	}
	for _, inv := range invs {
		if len(inv.args) == 0 {
			t.Errorf("%s: runs iu-runner without a command", inv.where)
			continue
		}
		cmd := inv.args[0]
		if known[cmd] == nil {
			known[cmd] = flagsOf(t, bin, cmd)
		}
		for _, a := range inv.args[1:] {
			if !strings.HasPrefix(a, "-") {
				continue // a value, or migrate's action
			}
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !known[cmd][name] {
				t.Errorf("%s: iu-runner %s has no flag --%s", inv.where, cmd, name)
			}
		}
	}
}
