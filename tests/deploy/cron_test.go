package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// artifact is a shipped file under the repository, or the file an environment variable
// names instead (to run the same check against another version of the artifact).
func artifact(envVar string, rel ...string) string {
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	return filepath.Join(append([]string{repoRoot()}, rel...)...)
}

// cronJob is one job line of a cron.d file.
type cronJob struct {
	line    int
	user    string
	command string // what cron hands to the shell
	stdin   string // what follows the first unescaped %, with % turned into newlines
}

// crontab is a parsed /etc/cron.d file: its environment assignments and its jobs.
type crontab struct {
	env  []string
	jobs []cronJob
}

var cronEnvLine = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$`)

// parseCronD reads a system crontab (five time fields, a user, the command) the way
// Debian's cron does: NAME=value lines set the jobs' environment (surrounding quotes
// removed), and in a command an unescaped % ends the command; the rest is its stdin,
// each further % a newline.
func parseCronD(t *testing.T, path string) crontab {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ct crontab
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if m := cronEnvLine.FindStringSubmatch(l); m != nil {
			v := m[2]
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			ct.env = append(ct.env, m[1]+"="+v)
			continue
		}
		fields := strings.Fields(l)
		if len(fields) < 7 {
			t.Fatalf("%s:%d: not a system crontab job line (m h dom mon dow user command): %q", path, n, l)
		}
		// the command is everything after the sixth field, as written
		rest := l
		for range 6 {
			rest = strings.TrimLeft(rest, " \t")
			rest = rest[strings.IndexAny(rest, " \t"):]
		}
		cmd, stdin := splitPercent(strings.TrimLeft(rest, " \t"))
		ct.jobs = append(ct.jobs, cronJob{line: n, user: fields[5], command: cmd, stdin: stdin})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ct
}

// splitPercent applies cron's % rule: the first unescaped % ends the command, the rest is
// stdin with every unescaped % a newline; \% is a literal %.
func splitPercent(s string) (cmd, stdin string) {
	var b strings.Builder
	inCmd := true
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '%':
			b.WriteByte('%')
			i++
		case s[i] == '%' && inCmd:
			cmd, inCmd = b.String(), false
			b.Reset()
		case s[i] == '%':
			b.WriteByte('\n')
		default:
			b.WriteByte(s[i])
		}
	}
	if inCmd {
		return b.String(), ""
	}
	return cmd, b.String()
}

// cronEnv is the environment cron gives a job: SHELL, PATH, HOME and LOGNAME of the user,
// nothing inherited, then the crontab's own assignments.
func cronEnv(ct crontab, home string) []string {
	env := []string{"SHELL=/bin/sh", "PATH=/usr/bin:/bin", "HOME=" + home, "LOGNAME=iu-runner", "USER=iu-runner"}
	return append(env, ct.env...)
}

// writeEnvFile writes the shipped env file (deploy/env/iu-runner.env) with DATABASE_URL and
// PGPASSFILE replaced by ours, keeping the file's own quoting: the test URL contains an &,
// so a file that does not quote its values loses DATABASE_URL here as it would on a host.
func writeEnvFile(t *testing.T, dir, dbURL, passfile string) string {
	t.Helper()
	src, err := os.ReadFile(artifact("IU_DEPLOY_ENV_FILE", "deploy", "env", "iu-runner.env"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		for k, v := range map[string]string{"DATABASE_URL": dbURL, "PGPASSFILE": passfile} {
			if !strings.HasPrefix(l, k+"=") {
				continue
			}
			seen[k] = true
			old := strings.TrimPrefix(l, k+"=")
			if len(old) >= 2 && (old[0] == '\'' || old[0] == '"') {
				l = k + "=" + string(old[0]) + v + string(old[0])
			} else {
				l = k + "=" + v
			}
		}
		out = append(out, l)
	}
	for _, k := range []string{"DATABASE_URL", "PGPASSFILE"} {
		if !seen[k] {
			t.Fatalf("deploy/env/iu-runner.env sets no %s", k)
		}
	}
	p := filepath.Join(dir, "iu-runner.env")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runJob runs one crontab job the way cron does: `$SHELL -c command` in the user's home,
// with cron's environment, the %-stdin, and stdout and stderr captured together (what
// cron mails when it is not empty). Paths are pointed at the test's binary and env file.
func runJob(t *testing.T, ct crontab, j cronJob, home string, subst map[string]string) string {
	t.Helper()
	cmdline := j.command
	for from, to := range subst {
		cmdline = strings.ReplaceAll(cmdline, from, to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	cmd.Env = cronEnv(ct, home)
	cmd.Dir = home
	cmd.Stdin = strings.NewReader(j.stdin)
	var mail bytes.Buffer
	cmd.Stdout, cmd.Stderr = &mail, &mail
	_ = cmd.Run() // cron ignores the exit status: only the output is mailed
	return mail.String()
}

// closedPort returns a loopback port nothing listens on (a stopped database).
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// withParam adds a query parameter, so the URL carries an & as real ones do.
func withParam(t *testing.T, raw, k, v string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if len(q) == 0 {
		q.Set("sslmode", "disable")
	}
	q.Set(k, v)
	u.RawQuery = q.Encode()
	if !strings.Contains(u.String(), "&") {
		t.Fatalf("test URL %q has no &", u)
	}
	return u.String()
}

// Rule: the shipped crontab reaches the operator exactly when something is wrong. Every
// job line, run as cron runs it (/bin/sh -c, cron's minimal environment, the env file
// read from disk), prints something (cron mails it) against a stopped database, and
// prints nothing against a healthy one — with a DATABASE_URL that contains an &.
func TestCrontabMailsFailuresAndIsSilentWhenHealthy(t *testing.T) {
	ct := parseCronD(t, artifact("IU_DEPLOY_CRONTAB", "deploy", "cron", "iu-runner"))
	if len(ct.jobs) < 2 {
		t.Fatalf("deploy/cron/iu-runner: %d job lines, want the tick and the health line", len(ct.jobs))
	}
	// The crontab's /usr/local/bin/iu-runner is a wrapper that records the environment the
	// job hands the runner, then runs the real binary: DATABASE_URL must arrive whole (its
	// & included) and PGPASSFILE must arrive at all.
	dumps := t.TempDir()
	bin := filepath.Join(t.TempDir(), "iu-runner")
	wrapper := "#!/bin/sh\nenv > " + dumps + "/env.$$\nexec " + runnerBin.Path(t) + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	passfile := filepath.Join(home, "pgpass")
	if err := os.WriteFile(passfile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(dbURL string, each func(j cronJob, mail string)) {
		envFile := writeEnvFile(t, t.TempDir(), dbURL, passfile)
		subst := map[string]string{"/usr/local/bin/iu-runner": bin, "/etc/iu-runner/iu-runner.env": envFile,
			"/etc/iu-runner.env": envFile} // the second: where earlier runbooks kept it
		for _, j := range ct.jobs {
			if !strings.Contains(j.command, "/usr/local/bin/iu-runner") {
				t.Fatalf("line %d does not run /usr/local/bin/iu-runner: %q", j.line, j.command)
			}
			mail := runJob(t, ct, j, home, subst)
			got := map[string]string{}
			seen := 0
			files, _ := filepath.Glob(filepath.Join(dumps, "env.*"))
			for _, f := range files {
				data, _ := os.ReadFile(f)
				for _, kv := range strings.Split(string(data), "\n") {
					if k, v, ok := strings.Cut(kv, "="); ok && (k == "DATABASE_URL" || k == "PGPASSFILE") {
						got[k] = v
					}
				}
				os.Remove(f)
				seen++
			}
			if seen == 0 {
				t.Errorf("line %d never ran iu-runner", j.line)
			} else if got["DATABASE_URL"] != dbURL || got["PGPASSFILE"] != passfile {
				t.Errorf("line %d hands iu-runner DATABASE_URL=%q PGPASSFILE=%q; want %q and %q (unquoted & in the env file? not exported?)",
					j.line, got["DATABASE_URL"], got["PGPASSFILE"], dbURL, passfile)
			}
			each(j, mail)
		}
	}

	t.Run("stopped database: every line mails", func(t *testing.T) {
		stopped := fmt.Sprintf("postgres://iu_runner@127.0.0.1:%d/iu?sslmode=disable&connect_timeout=3", closedPort(t))
		run(stopped, func(j cronJob, mail string) {
			if strings.TrimSpace(mail) == "" {
				t.Errorf("line %d: the database is down and cron would mail nothing:\n  %s", j.line, j.command)
				return
			}
			if !strings.Contains(mail, "connecting to the database") {
				t.Errorf("line %d: the mail does not say what failed:\n%s", j.line, mail)
			}
			t.Logf("line %d mails:\n%s", j.line, mail)
		})
	})

	t.Run("healthy database: no line mails", func(t *testing.T) {
		db := pgtest.NewDB(t)
		db.Exec(t, `SELECT fn_iu_route_worker_register('iu_outbound_default')`)
		healthy := withParam(t, db.URL, "application_name", "iu-runner-cron")
		run(healthy, func(j cronJob, mail string) {
			if mail != "" {
				t.Errorf("line %d: a healthy run would mail every time it runs:\n  %s\nmail:\n%s", j.line, j.command, mail)
			}
		})
		// and it did its work: the tick's own heartbeat row exists
		var n int
		db.QueryRow(t, `SELECT count(*) FROM queue_heartbeat WHERE executor_id LIKE 'iu-runner-cron:%'`, nil, &n)
		if n != 1 {
			t.Errorf("the tick line did not run against the database (cron heartbeat rows: %d)", n)
		}
	})
}
