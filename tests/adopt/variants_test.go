package adopt

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// variantRows is the log's size for the variant tests (the fixture's least).
const variantRows = 1000

// variantsOf lists the variants whose header says verdict (ADOPT or REFUSE).
func variantsOf(t *testing.T, verdict string) []string {
	t.Helper()
	var out []string
	for _, name := range variantNames(t) {
		h := readVariantHeader(t, variantFile(t, name))
		if strings.HasPrefix(h.adoption, verdict) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s variant", verdict)
	}
	return out
}

// Rule: a legacy shape the package cannot adopt safely is refused before anything changes.
// `migrate plan` exits 3 with a refuse line per object; `migrate up` exits 3 and the
// database is byte-for-byte as it was (pg_dump of schema and data); plain goose (no
// runner) stops at the first migration with IU004, naming every refused object in one
// message, and leaves nothing of the package but goose's own version table.
func TestAdopt_RefusedShapesLeaveTheDatabaseAsItWas(t *testing.T) {
	t.Parallel()
	for _, name := range variantsOf(t, "REFUSE") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewEmptyDB(t)
			loadLegacy(t, db, variantRows, name)
			before := pgDump(t, db.URL, false)

			out, errs, code := iu(t, db.URL, "migrate", "plan")
			if code != exitRefused {
				t.Fatalf("migrate plan: exit %d, want %d\n%s%s", code, exitRefused, out, errs)
			}
			var refused []string
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) > 2 && f[0] == "refuse" {
					refused = append(refused, f[1]+" "+f[2])
				}
			}
			if len(refused) == 0 {
				t.Fatalf("migrate plan exits 3 but lists no refuse line:\n%s", out)
			}
			out, errs, code = iu(t, db.URL, "migrate", "up")
			if code != exitRefused {
				t.Fatalf("migrate up: exit %d, want %d\n%s%s", code, exitRefused, out, errs)
			}
			requireSameDump(t, "after a refused migrate up", before, pgDump(t, db.URL, false))

			err := migrate.Up(context.Background(), db.URL)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "IU004" {
				t.Fatalf("plain goose up: want IU004, got %v", err)
			}
			for _, obj := range refused {
				if !strings.Contains(pe.Message, obj) {
					t.Errorf("the refusal does not name %s: %s", obj, pe.Message)
				}
			}
			if pe.Hint == "" {
				t.Error("the refusal gives no hint")
			}
			requireSameDump(t, "after a refused goose up", before, pgDump(t, db.URL, false, "iu_core_db_version"))
		})
	}
}

// Rule: every drift marked ADOPT is adopted: `migrate plan` exits 0 with no refusal, up
// succeeds, the producer inserts and emits, each legacy worker routes exactly the events
// it never audited, each once; and the rollback gives the database back its legacy schema
// exactly (pg_dump) with every legacy row.
func TestAdopt_EveryAdoptVariant(t *testing.T) {
	t.Parallel()
	for _, name := range variantsOf(t, "ADOPT") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewEmptyDB(t)
			loadLegacy(t, db, variantRows, name)
			schema := pgDump(t, db.URL, true)
			keys := legacyKeys(t, db)
			before := takeFingerprints(t, db, nil)
			var workers []string
			db.QueryRow(t, `SELECT array_agg(worker_name ORDER BY worker_name) FROM public.iu_route_worker_cursor`, nil, &workers)
			owed := map[string][]string{}
			for _, w := range workers {
				owed[w], _, _ = owedEvents(t, db, w)
			}
			var maxAttempt int64
			db.QueryRow(t, `SELECT coalesce(max(id), 0) FROM public.iu_route_attempt`, nil, &maxAttempt)

			if out, errs, code := iu(t, db.URL, "migrate", "plan"); code != exitOK || strings.Contains(out, "\nrefuse ") {
				t.Fatalf("migrate plan: exit %d\n%s%s", code, out, errs)
			}
			iuOK(t, db.URL, "migrate", "up")
			requireSameFingerprints(t, "after adoption", before, takeFingerprints(t, db, keys))

			ctx := pgtest.Ctx(t)
			p := db.ConnAs(t, "cutter_agent", "cutter_agent")
			if _, err := p.Exec(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
			                          VALUES ('iu', 'unit_version_published', 'cut', '{"unit_id": "U-variant"}')`); err != nil {
				t.Fatalf("producer insert after adoption: %v", err)
			}
			var emitted string
			if err := p.QueryRow(ctx, `SELECT fn_iu_emit_event('iu', 'unit_cut_completed', 'cut', 'standard', 'info')::text`).Scan(&emitted); err != nil {
				t.Fatalf("emit after adoption: %v", err)
			}
			var fresh []string
			db.QueryRow(t, `SELECT array_agg(id::text) FROM public.event_outbox
			                 WHERE safe_payload->>'unit_id' = 'U-variant' OR id = $1::uuid`, []any{emitted}, &fresh)
			for _, w := range workers {
				var claimed int64
				for i := 0; i < 20; i++ {
					r := jsonOf(t, db, `SELECT public.fn_iu_route_worker_run($1, 10000)`, w)
					if r["gated"] == true || r["busy"] == true {
						t.Fatalf("%s: %v", w, r)
					}
					n := num(t, r, "claimed")
					if n == 0 {
						break
					}
					claimed += n
				}
				var domain string
				db.QueryRow(t, `SELECT event_domain FROM public.iu_route_worker_cursor WHERE worker_name = $1`, []any{w}, &domain)
				want := append([]string{}, owed[w]...)
				if domain == "iu" {
					want = append(want, fresh...)
				}
				sort.Strings(want)
				var routed []string
				db.QueryRow(t, `SELECT coalesce(array_agg(event_ref::text ORDER BY event_ref::text), '{}') FROM public.iu_route_attempt
				                 WHERE id > $1 AND attempt_no = 1 AND idempotency_key LIKE 'iu_wrk:' || $2 || ':%'`,
					[]any{maxAttempt, w}, &routed)
				if strings.Join(routed, ",") != strings.Join(want, ",") || claimed != int64(len(want)) {
					t.Fatalf("worker %s claimed %d, audited %d; it owed %d and %d are new", w, claimed, len(routed), len(owed[w]), len(want)-len(owed[w]))
				}
			}

			only := map[string][]string{"dot_config": keys["dot_config"], "event_type_registry": keys["event_type_registry"]}
			rowsNow := takeFingerprints(t, db, only)
			iuOK(t, db.URL, "migrate", "down", "--to", "0")
			requireSameDump(t, "the schema after the rollback", schema, pgDump(t, db.URL, true, "iu_core_db_version"))
			requireSameFingerprints(t, "after the rollback", rowsNow, takeFingerprints(t, db, nil))
		})
	}
}
