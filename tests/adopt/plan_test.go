package adopt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// planOf runs `iu-runner migrate plan --json` and returns its lines by object, and the exit code.
func planOf(t *testing.T, url string) (map[string]migrate.PlanLine, int) {
	t.Helper()
	out, errs, code := iu(t, url, "migrate", "plan", "--json")
	lines := map[string]migrate.PlanLine{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue // the closing "up would refuse" sentence
		}
		var pl migrate.PlanLine
		if err := json.Unmarshal([]byte(l), &pl); err != nil {
			t.Fatalf("plan --json line %q: %v\n%s", l, err, errs)
		}
		switch pl.Verdict {
		case migrate.VerdictCreate, migrate.VerdictAdopt, migrate.VerdictReplace, migrate.VerdictKeep,
			migrate.VerdictRefuse, migrate.VerdictInstalled:
		default:
			t.Fatalf("plan: unknown verdict %q in %q", pl.Verdict, l)
		}
		if pl.Detail == "" {
			t.Fatalf("plan: %s says %s without saying why", pl.Object, pl.Verdict)
		}
		lines[pl.Object] = pl
	}
	if len(lines) == 0 {
		t.Fatalf("plan printed nothing (exit %d)\n%s", code, errs)
	}
	return lines, code
}

func requireVerdict(t *testing.T, plan map[string]migrate.PlanLine, object, verdict string) {
	t.Helper()
	l, ok := plan[object]
	if !ok {
		t.Fatalf("plan: no line for %s", object)
	}
	if l.Verdict != verdict {
		t.Fatalf("plan: %s is %s (%s), want %s", object, l.Verdict, l.Detail, verdict)
	}
}

// Rule: `migrate plan` gives one line per object with its verdict and why, changes
// nothing, and exits 0 when up would succeed and 3 when it would refuse: create on an empty
// database, adopt / replace / keep on the first generation's, refuse on a shape that
// cannot be adopted, installed once the package is there.
func TestPlan_EachVerdict(t *testing.T) {
	t.Parallel()
	t.Run("empty database: create", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewEmptyDB(t)
		plan, code := planOf(t, db.URL)
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		for _, tbl := range []string{"event_outbox", "iu_route_attempt", "queue_heartbeat", "job_queue"} {
			requireVerdict(t, plan, "table "+tbl, migrate.VerdictCreate)
		}
		requireVerdict(t, plan, "schema iu_core", migrate.VerdictCreate)
		requireVerdict(t, plan, "schema public", migrate.VerdictKeep)
		requireTrue(t, db, "the plan created nothing",
			`SELECT to_regnamespace('iu_core') IS NULL AND to_regclass('public.iu_core_db_version') IS NULL`)
	})
	t.Run("first generation: adopt, replace, keep", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewEmptyDB(t)
		loadLegacy(t, db, variantRows)
		before := pgDump(t, db.URL, false)
		plan, code := planOf(t, db.URL)
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		for _, tbl := range []string{"event_outbox", "iu_route_attempt", "iu_route_worker_cursor", "iu_route_dead_letter",
			"queue_heartbeat", "dot_config", "event_type_registry", "iu_outbound_route"} {
			requireVerdict(t, plan, "table "+tbl, migrate.VerdictAdopt)
		}
		requireVerdict(t, plan, "table job_queue", migrate.VerdictCreate)
		requireVerdict(t, plan, "function public.fn_iu_emit_event(text,text,text,text,text,text,text,jsonb)", migrate.VerdictReplace)
		requireVerdict(t, plan, "view public.v_iu_route_worker_status", migrate.VerdictReplace)
		requireVerdict(t, plan, "view public.v_event_outbox_daily", migrate.VerdictKeep)
		requireVerdict(t, plan, "table goose_db_version", migrate.VerdictKeep)
		if !strings.Contains(plan["table event_outbox"].Detail, "1000 rows kept") {
			t.Fatalf("the plan counts the rows it keeps: %s", plan["table event_outbox"].Detail)
		}
		requireSameDump(t, "after migrate plan", before, pgDump(t, db.URL, false))
	})
	t.Run("a shape that cannot be adopted: refuse, exit 3", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewEmptyDB(t)
		loadLegacy(t, db, variantRows, "refuse_outbox_id_bigint")
		plan, code := planOf(t, db.URL)
		if code != exitRefused {
			t.Fatalf("exit %d, want %d", code, exitRefused)
		}
		requireVerdict(t, plan, "table event_outbox", migrate.VerdictRefuse)
		if d := plan["table event_outbox"].Detail; !strings.Contains(d, "column id bigint, want uuid") {
			t.Fatalf("the refusal names the column, its type and the one wanted: %s", d)
		}
	})
	t.Run("installed: installed", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		plan, code := planOf(t, db.URL)
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		requireVerdict(t, plan, "iu-core", migrate.VerdictInstalled)
	})
}

// Rule: a rollback never destroys history. On a database the package created, `migrate
// down` over tables holding rows the package did not create (an event, a job) refuses with
// IU005 before any Down runs, naming each table, and the database is exactly as it was;
// with --drop-history it drops them on purpose. An install holding only the package's own
// rows rolls back without being told. Plain goose meets the same rule in the Down concerned.
func TestRollback_FreshInstallKeepsHistory(t *testing.T) {
	t.Parallel()
	t.Run("rows the package did not create", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		db.Exec(t, `INSERT INTO public.event_type_registry (event_domain, event_type, description) VALUES ('iu', 'rollback_probe', 'test')`)
		db.Exec(t, `SELECT public.fn_iu_emit_event('iu', 'rollback_probe', 'test')`)
		db.Exec(t, `SELECT public.fn_job_enqueue('rollback_probe', 'iu')`)
		before := pgDump(t, db.URL, false)
		out, errs, code := iu(t, db.URL, "migrate", "down", "--to", "0")
		if code == exitOK || !strings.Contains(errs, "IU005") {
			t.Fatalf("migrate down over history: exit %d\n%s%s", code, out, errs)
		}
		for _, tbl := range []string{"public.event_outbox", "public.job_queue", "public.event_type_registry"} {
			if !strings.Contains(errs, tbl) {
				t.Errorf("the refusal does not name %s: %s", tbl, errs)
			}
		}
		if !strings.Contains(errs, "--drop-history") {
			t.Errorf("the refusal does not say how to drop the rows on purpose: %s", errs)
		}
		requireSameDump(t, "after a refused rollback", before, pgDump(t, db.URL, false))

		err := (func() error {
			m, err := migrate.Open(db.URL)
			if err != nil {
				return err
			}
			defer m.Close()
			_, err = m.DownTo(context.Background(), 0)
			return err
		})()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "IU005" {
			t.Fatalf("plain goose down over history: want IU005, got %v", err)
		}
		requireTrue(t, db, "plain goose stopped before dropping the log",
			`SELECT count(*) = 1 FROM public.event_outbox`)

		iuOK(t, db.URL, "migrate", "down", "--to", "0", "--drop-history")
		requireTrue(t, db, "--drop-history dropped the tables",
			`SELECT to_regclass('public.event_outbox') IS NULL AND to_regclass('public.job_queue') IS NULL AND to_regnamespace('iu_core') IS NULL`)
	})
	t.Run("only the package's own rows", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		iuOK(t, db.URL, "migrate", "down", "--to", "0")
		requireTrue(t, db, "everything the package created is gone",
			`SELECT to_regclass('public.event_outbox') IS NULL AND to_regclass('public.dot_config') IS NULL AND to_regnamespace('iu_core') IS NULL`)
	})
}

// Rule: adoption replaces in place (keeping callers' grants, with no moment without the
// function) exactly the legacy functions whose signature is the package's, and drops the
// others: its map of the package's API (fn_iu_adopt_legacy_callables) must be the
// package's public functions as a fresh install has them, every name, argument list and
// result, or a changed signature would drop a legacy function the package then fails to
// replace (or keep one it cannot).
func TestAdopt_APIMapIsThePackagesSignatures(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("..", "..", "sql", "functions", "adopt", "fn_iu_adopt_legacy_callables.sql"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\s*\('(fn_[a-z_]+)', '((?:[^']|'')*)', '([^']*)'\)`)
	var inMap []string
	for _, m := range row.FindAllStringSubmatch(string(src), -1) {
		inMap = append(inMap, m[1]+"("+strings.ReplaceAll(m[2], "''", "'")+") -> "+m[3])
	}
	if len(inMap) < 30 {
		t.Fatalf("read %d entries of the API map: the pattern no longer matches the source", len(inMap))
	}
	sort.Strings(inMap)
	db := pgtest.NewDB(t)
	ctx := pgtest.Ctx(t)
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	// the map is compared under the adoption's own search_path, where types print qualified
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = pg_catalog, pg_temp`); err != nil {
		t.Fatal(err)
	}
	var installed []string
	if err := tx.QueryRow(ctx, `
		SELECT array_agg(p.proname || '(' || pg_get_function_arguments(p.oid) || ') -> ' || pg_get_function_result(p.oid) ORDER BY 1)
		  FROM pg_proc p
		 WHERE p.pronamespace = 'public'::regnamespace AND p.prokind = 'f'
		   AND p.prorettype <> 'trigger'::regtype`).Scan(&installed); err != nil {
		t.Fatal(err)
	}
	sort.Strings(installed)
	if strings.Join(inMap, "\n") != strings.Join(installed, "\n") {
		t.Fatalf("the adoption's API map differs from the installed API\nmap:\n  %s\ninstalled:\n  %s",
			strings.Join(inMap, "\n  "), strings.Join(installed, "\n  "))
	}
}

// Rule: the install plan announces a replacement for every legacy function adoption will
// replace or drop: its list of names is the API map's, plus the first generation's
// dead-letter trigger function (dropped by the dead letters' adoption). The plan is held
// verbatim by migration 001, frozen since v0.1.0, so names the API gained after that release
// are exempt, listed in the test (the first generation has no function of those names).
func TestPlan_NamesEveryFunctionAdoptionReplaces(t *testing.T) {
	t.Parallel()
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{"..", ".."}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	names := map[string]bool{"fn_iu_route_dead_letter_no_delete": true}
	for _, m := range regexp.MustCompile(`(?m)^\s*\('(fn_[a-z_]+)', '`).FindAllStringSubmatch(read("sql", "functions", "adopt", "fn_iu_adopt_legacy_callables.sql"), -1) {
		names[m[1]] = true
	}
	// The plan is included in 001, frozen since v0.1.0 (sql/iu-core.sha256), so it cannot
	// learn a name the API gained later. Such a name is new to the package; a first
	// generation could hold a function of it only by coincidence. Listed here, each with
	// the release that added it, so the exemption stays visible.
	for _, n := range []string{
		"fn_iu_emit_events",                  // after v0.1.0 (issue 23: a set of events in one call)
		"fn_iu_route_worker_register_member", // after v0.1.0 (issue 23: route-worker groups)
		"fn_iu_route_worker_remove_member",
		"fn_iu_route_group_health",
	} {
		if !names[n] {
			t.Errorf("%s is exempt from the frozen plan but is no longer in the API map: drop the exemption", n)
		}
		delete(names, n)
	}
	plan := read("sql", "adopt", "plan.sql")
	i := strings.Index(plan, "AND p.proname IN (")
	if i < 0 {
		t.Fatal("plan.sql: the list of replaced function names is not where the test looks")
	}
	list := plan[i : i+strings.Index(plan[i:], ")")]
	inPlan := map[string]bool{}
	for _, m := range regexp.MustCompile(`'(fn_[a-z_]+)'`).FindAllStringSubmatch(list, -1) {
		inPlan[m[1]] = true
	}
	for n := range names {
		if !inPlan[n] {
			t.Errorf("plan.sql does not announce the replacement of %s", n)
		}
	}
	for n := range inPlan {
		if !names[n] {
			t.Errorf("plan.sql announces %s, which adoption does not replace", n)
		}
	}
}

// Rule: the rollback tells the package's own configuration from the operator's by one
// list (iu_core.fn_iu_package_config_keys): it must hold exactly the keys a fresh install
// has, or a new key would make every rollback refuse (or an operator's key be dropped).
func TestRollback_PackageConfigKeysAreAFreshInstalls(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	requireTrue(t, db, "the package's key list is the fresh install's dot_config", `
		SELECT array(SELECT key FROM public.dot_config ORDER BY 1)
		     = array(SELECT k FROM unnest(iu_core.fn_iu_package_config_keys()) k ORDER BY 1)`)
}
