package upgrade

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/sqlgen"
)

// root is the repository's root directory.
func root(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// release is one line of sql/releases.txt.
type release struct{ tag, commit string }

// releases reads sql/releases.txt: `<tag> <commit> <date>` per line, oldest first.
func releases(t testing.TB) []release {
	t.Helper()
	f, err := os.Open(filepath.Join(root(t), "sql", "releases.txt"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no release recorded yet (sql/releases.txt): nothing to upgrade from, nothing frozen")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []release
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if fs := strings.Fields(line); len(fs) >= 2 {
			out = append(out, release{fs[0], fs[1]})
		}
	}
	if len(out) == 0 {
		t.Skip("sql/releases.txt lists no release yet: nothing to upgrade from, nothing frozen")
	}
	return out
}

// extract writes the release's sql/iu-core (git archive of its commit) into a temporary
// directory and returns it. The commit must be in this clone's history (a fresh clone of
// main has it: the release is an ancestor).
func extract(t testing.TB, r release) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		pgtest.Unavailable(t, "git is needed to extract release %s: %v", r.tag, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", root(t), "archive", r.commit, "sql/iu-core")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("git archive %s (release %s): %v\n%s", r.commit, r.tag, err, ee.Stderr)
		}
		t.Fatalf("git archive %s: %v", r.commit, err)
	}
	dir := t.TempDir()
	tr := tar.NewReader(strings.NewReader(string(out)))
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || filepath.Dir(h.Name) != "sql/iu-core" || !strings.HasSuffix(h.Name, ".sql") {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(h.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("release %s (%s) holds no migration", r.tag, r.commit)
	}
	return dir
}

// Rule: a released migration never changes. sql/iu-core.sha256 holds the hash of every
// migration of every release; a change to one (a table migration edited in place, a
// generated function migration regenerated from changed sources) fails here: the change
// belongs in a new migration. The list is also checked against the release's own commit.
func TestReleasedMigrations_AreFrozen(t *testing.T) {
	rs := releases(t)
	f, err := os.Open(filepath.Join(root(t), "sql", "iu-core.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	frozen := map[string]string{}
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 2 && !strings.HasPrefix(fs[0], "#") {
			frozen[fs[1]] = fs[0]
		}
	}
	if len(frozen) == 0 {
		t.Fatal("sql/iu-core.sha256 freezes nothing")
	}
	for file, want := range frozen {
		b, err := os.ReadFile(filepath.Join(root(t), "sql", "iu-core", file))
		if err != nil {
			t.Errorf("%s was released and is gone: %v", file, err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("sql/iu-core/%s was released and has changed (sha256 %s, released %s): a released migration is never edited; put the change in a new migration (a function change: the next release's function migration, generated from the sources)", file, got, want)
		}
	}
	dir := extract(t, rs[len(rs)-1])
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := frozen[e.Name()]; !ok {
			t.Errorf("release %s holds %s, which sql/iu-core.sha256 does not freeze", rs[len(rs)-1].tag, e.Name())
		}
	}
}

// Partition names and bounds are transaction ids, which differ between any two databases.
var (
	partitionName  = regexp.MustCompile(`_p[0-9]{20}`)
	partitionBound = regexp.MustCompile(`FOR VALUES FROM \((MINVALUE|'[0-9]+')\) TO \('[0-9]+'\)`)
)

// withoutTxids is a dump with the partitions' txids taken out of their names and bounds.
func withoutTxids(dump string) string {
	return partitionBound.ReplaceAllString(partitionName.ReplaceAllString(dump, "_p<txid>"), "FOR VALUES FROM (<txid>) TO (<txid>)")
}

// load writes, through the release's API, what a database in use holds: events routed
// (attempts), a delivery that failed (route dead letters), jobs queued and a dead job.
const load = `
INSERT INTO event_type_registry (event_domain, event_type, description) VALUES ('iu', 'upgrade_probe', 'upgrade test');
INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, route_kind, enabled, dry_run)
VALUES ('iu', 'upgrade_probe', 'live', 'r_upgrade_live', 'outbound', true, false),
       ('iu', 'upgrade_probe', 'dry', 'r_upgrade_dry', 'outbound', true, true);
UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');
SELECT fn_iu_route_worker_register('upgrade_worker', 'iu');
SELECT fn_iu_emit_event('iu', 'upgrade_probe', CASE WHEN g % 5 = 0 THEN 'live' ELSE 'dry' END, 'standard', 'info', NULL, NULL,
                        jsonb_build_object('n', g)) FROM generate_series(1, 50) g;
SELECT fn_iu_route_worker_run('upgrade_worker', 1000);
SELECT fn_job_enqueue('upgrade_probe', 'iu', jsonb_build_object('n', g)) FROM generate_series(1, 20) g;
SELECT fn_job_enqueue('upgrade_dead', 'iu', '{}', now(), NULL, 1);
SELECT fn_job_fail(j.job_id, 'w', 'boom', j.lease_token) FROM fn_job_claim('w', ARRAY['upgrade_dead'], 1, 60) j;
`

// counts is what the upgrade must keep, table by table.
const counts = `
SELECT jsonb_build_object(
  'events', (SELECT count(*) FROM event_outbox),
  'event_ids', (SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM event_outbox),
  'attempts', (SELECT count(*) FROM iu_route_attempt),
  'dead_letters', (SELECT count(*) FROM iu_route_dead_letter WHERE resolved_at IS NULL),
  'jobs', (SELECT count(*) FROM job_queue WHERE status = 'queued'),
  'dead_jobs', (SELECT count(*) FROM job_dead_letter))::text`

// Rule: an install of the latest release, in use (events routed, dead letters, jobs, a
// dead job), upgrades to this version with every row kept, ends with exactly the schema a
// fresh install has (pg_dump), and works on: the worker routes new events once and a
// dead letter replays.
func TestUpgrade_FromLatestRelease(t *testing.T) {
	rs := releases(t)
	r := rs[len(rs)-1]
	dir := extract(t, r)
	db := pgtest.NewEmptyDB(t)
	ctx := pgtest.Ctx(t)
	if err := migrate.UpFS(ctx, db.URL, os.DirFS(dir)); err != nil {
		t.Fatalf("installing release %s: %v", r.tag, err)
	}
	// one statement at a time: each its own transaction, as callers make them (the worker
	// routes what committed before its run)
	for _, st := range strings.Split(load, ";\n") {
		if strings.TrimSpace(st) == "" {
			continue
		}
		if _, err := db.Pool.Exec(ctx, st); err != nil {
			t.Fatalf("using release %s: %s: %v", r.tag, strings.TrimSpace(st), err)
		}
	}
	var before, after string
	db.QueryRow(t, counts, nil, &before)
	if !strings.Contains(before, `"dead_jobs": 1`) || strings.Contains(before, `"dead_letters": 0`) {
		t.Fatalf("the load did not produce what the test upgrades (a dead letter, a dead job): %s", before)
	}
	if err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatalf("upgrading release %s to this version: %v", r.tag, err)
	}
	db.QueryRow(t, counts, nil, &after)
	if after != before {
		t.Fatalf("the upgrade changed what the database held:\nbefore %s\nafter  %s", before, after)
	}
	fresh := pgtest.NewDB(t)
	pgtest.RequireSameDump(t, "the upgraded schema against a fresh install's",
		withoutTxids(pgtest.Dump(t, fresh.URL, true, "iu_core_db_version")), withoutTxids(pgtest.Dump(t, db.URL, true, "iu_core_db_version")))

	var claimed, replayed string
	db.Exec(t, `SELECT fn_iu_emit_event('iu', 'upgrade_probe', 'dry') FROM generate_series(1, 7)`)
	db.QueryRow(t, `SELECT (fn_iu_route_worker_run('upgrade_worker', 1000) ->> 'claimed')`, nil, &claimed)
	if claimed != "7" {
		t.Fatalf("after the upgrade the worker claimed %s of 7 new events", claimed)
	}
	db.QueryRow(t, `SELECT fn_iu_route_dead_letter_replay((SELECT id FROM iu_route_dead_letter WHERE resolved_at IS NULL ORDER BY id LIMIT 1)) ->> 'replayed'`, nil, &replayed)
	if replayed != "true" {
		t.Fatalf("a dead letter of the release did not replay after the upgrade: %s", replayed)
	}
}

// Rule: the next release's function migration (`<NNN>_functions.sql *`: every function and
// view re-applied from the sources over the previous release, which stays as it was)
// upgrades a database of this version and its Down gives it back exactly. Proved on a
// next release made up here from the real sources: one function's body changed, one
// function added, one grant added.
func TestReapply_NextReleaseUpgradesAndRollsBack(t *testing.T) {
	src := t.TempDir()
	if err := os.CopyFS(src, os.DirFS(filepath.Join(root(t), "sql"))); err != nil {
		t.Fatal(err)
	}
	edit := func(rel string, f func(string) string) {
		p := filepath.Join(src, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("functions/config/fn_iu_gate_open.sql", func(s string) string {
		return strings.Replace(s, "AS $$", "AS $$\n    -- next release: this body changed", 1)
	})
	if err := os.WriteFile(filepath.Join(src, "functions", "config", "fn_iu_next_release_probe.sql"), []byte(
		"CREATE OR REPLACE FUNCTION public.fn_iu_next_release_probe()\nRETURNS text\nLANGUAGE sql\nSET search_path = pg_catalog, pg_temp\nAS $$ SELECT 'next'::text $$;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit("functions/config/README.md", func(s string) string {
		return s + "\n| `fn_iu_next_release_probe.sql` | a function of the next release |\n"
	})
	edit("grants.sql", func(s string) string {
		return s + "GRANT EXECUTE ON FUNCTION public.fn_iu_next_release_probe() TO workflow_admin;\n"
	})
	edit("generated.txt", func(s string) string { return s + "099_functions.sql *\n" })
	tree, err := sqlgen.Load(os.DirFS(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tree.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range out {
		if name == "099_functions.sql" {
			continue
		}
		disk, err := os.ReadFile(filepath.Join(root(t), "sql", "iu-core", name))
		if err != nil || string(disk) != string(b) {
			t.Fatalf("%s: a released migration must come back as it is on disk", name)
		}
	}
	migs := filepath.Join(src, "iu-core")
	if err := os.WriteFile(filepath.Join(migs, "099_functions.sql"), out["099_functions.sql"], 0o644); err != nil {
		t.Fatal(err)
	}

	db := pgtest.NewDB(t) // this version
	before := pgtest.Dump(t, db.URL, true, "iu_core_db_version")
	ctx := pgtest.Ctx(t)
	if err := migrate.UpFS(ctx, db.URL, os.DirFS(migs)); err != nil {
		t.Fatalf("the next release's function migration: %v", err)
	}
	requireTrue(t, db, "the next release is in: its new function (granted), its changed body", `
		SELECT public.fn_iu_next_release_probe() = 'next'
		   AND has_function_privilege('workflow_admin', 'public.fn_iu_next_release_probe()', 'EXECUTE')
		   AND pg_get_functiondef('public.fn_iu_gate_open(text)'::regprocedure) LIKE '%next release: this body changed%'
		   AND 'public.fn_iu_next_release_probe()' = ANY (iu_core.fn_iu_package_functions())`)
	m, err := migrate.OpenFS(db.URL, os.DirFS(migs))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Down(ctx); err != nil {
		t.Fatalf("the next release's Down: %v", err)
	}
	pgtest.RequireSameDump(t, "after the next release's Down", before, pgtest.Dump(t, db.URL, true, "iu_core_db_version"))
}

func requireTrue(t *testing.T, db *pgtest.DB, what, sql string) {
	t.Helper()
	var ok bool
	db.QueryRow(t, sql, nil, &ok)
	if !ok {
		t.Fatalf("%s: false", what)
	}
}
