package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSecret writes content to a file of mode perm owned by uid (when the test may
// chown: as root), and returns its path.
func writeSecret(t *testing.T, content string, perm os.FileMode, uid int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "database-url")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // WriteFile's mode is masked by the umask
		t.Fatal(err)
	}
	if uid >= 0 && os.Geteuid() == 0 {
		if err := os.Chown(p, uid, -1); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// nobody is a non-root uid for files the root test process hands away.
const nobody = 65534

// Rule: a connection string file is read the way an operator's secret files are: the
// trailing newline (and any surrounding blank) trimmed; a file other users may read is
// refused with its mode and the chmod that fixes it, as libpq refuses a loose password
// file or SSL key (group read is allowed only for a root-owned file: 0640, which is also
// what a Kubernetes secret volume with fsGroup gives); no error quotes the content.
func TestReadSecretFile(t *testing.T) {
	const secret = "Zq9-s3cret"
	url := "postgres://iu_runner:" + secret + "@db.example/iu?sslmode=verify-full"
	for _, c := range []struct {
		name    string
		content string
		perm    os.FileMode
		uid     int // -1: leave the owner as created
		rootRun bool
		err     string
	}{
		{"0600, trailing newline", url + "\n", 0o600, nobody, false, ""},
		{"0400, CRLF and blanks", "  " + url + "\r\n", 0o400, nobody, false, ""},
		{"0644: other users read it", url, 0o644, nobody, false, "readable by other users"},
		{"0604: other users read it", url, 0o604, nobody, false, "readable by other users"},
		{"0640 not owned by root", url, 0o640, nobody, false, "not owned by root"},
		{"0440 owned by root (Kubernetes secret volume with fsGroup)", url, 0o440, 0, true, ""},
		{"0640 owned by root", url, 0o640, 0, true, ""},
		{"0660 owned by root: the group may write it", url, 0o660, 0, true, "group write"},
		{"empty", "\n", 0o600, -1, false, "is empty"},
		{"two lines", url + "\n" + url + "\n", 0o600, -1, false, "more than one line"},
		{"a shell assignment", "DATABASE_URL='" + url + "'\n", 0o600, -1, false, "shell assignment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.rootRun && os.Geteuid() != 0 {
				t.Skip("a root-owned file needs a root test process")
			}
			got, err := ReadSecretFile(writeSecret(t, c.content, c.perm, c.uid))
			if c.err == "" {
				if err != nil || got != url {
					t.Fatalf("ReadSecretFile = %q, %v; want the URL", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("ReadSecretFile = %q, %v; want an error saying %q", got, err, c.err)
			}
			if strings.Contains(c.err, "readable") && !errors.Is(err, errLoosePermissions) {
				t.Fatalf("error %v does not wrap errLoosePermissions", err)
			}
			for _, leak := range []string{secret, "s3cret"} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("the error quotes the file's content: %v", err)
				}
			}
		})
	}
	if _, err := ReadSecretFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
	if _, err := ReadSecretFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file: no error")
	}
	big := writeSecret(t, strings.Repeat("x", MaxSecretFileBytes+1), 0o600, -1)
	if _, err := ReadSecretFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a file over the bound: %v", err)
	}
}

// Rule: a connection string read from a file is completed by the libpq variables like any
// other: a URL without a password takes it from PGPASSFILE, so the password can live in a
// libpq password file while the URL lives in DATABASE_URL_FILE.
func TestDatabaseURLFileWithPassfile(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pgpass")
	if err := os.WriteFile(pass, []byte("db.example:5432:iu:iu_runner:from-passfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", pass)
	urlFile := writeSecret(t, "postgres://iu_runner@db.example:5432/iu\n", 0o600, -1)
	d := DB{StatementTimeout: 30 * time.Second, ConnectTimeout: time.Second, MaxConns: 4}
	cfg, src, err := d.PoolConfig(env(map[string]string{"DATABASE_URL_FILE": urlFile}))
	if err != nil {
		t.Fatal(err)
	}
	if src != SourceDatabaseURLFile || cfg.ConnConfig.Host != "db.example" || cfg.ConnConfig.Password != "from-passfile" {
		t.Fatalf("source %s host %q password from the passfile: %v", src, cfg.ConnConfig.Host, cfg.ConnConfig.Password == "from-passfile")
	}
	// a loose file is refused before anything connects, saying which file and why
	loose := writeSecret(t, "postgres://iu_runner@db.example:5432/iu\n", 0o644, nobody)
	_, _, err = d.PoolConfig(env(map[string]string{"DATABASE_URL_FILE": loose}))
	if err == nil || !strings.Contains(err.Error(), loose) || !errors.Is(err, errLoosePermissions) {
		t.Fatalf("a world-readable DATABASE_URL_FILE: %v", err)
	}
}

// Rule: only a password given on the command line is reported (it is in ps for every
// local user); a password-free flag, and the environment and files, are not.
func TestPasswordOnCommandLine(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u:pw@h/db":                  true,
		"postgres://u@h/db?password=pw":         true,
		"host=h user=u password=pw dbname=db":   true,
		"host=h sslpassword=pw dbname=db":       true,
		"postgres://u@h/db?sslmode=verify-full": false,
		"host=h user=u dbname=db":               false,
		"":                                      false,
	} {
		if got := (&DB{URL: dsn}).PasswordOnCommandLine(); got != want {
			t.Errorf("PasswordOnCommandLine(%q) = %v, want %v", dsn, got, want)
		}
	}
	if (&DB{URLFile: "/etc/iu-runner/database-url"}).PasswordOnCommandLine() {
		t.Error("a file path is reported as a password on the command line")
	}
}
