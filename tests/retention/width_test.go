package retention

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// installWith migrates an empty database with the session setting iu.partition_txids set
// to value on the migrating connection ("" : not set), and returns the migration's error.
func installWith(t *testing.T, db *pgtest.DB, value string) error {
	t.Helper()
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if value != "" {
		cfg.RuntimeParams[migrate.PartitionTxidsSetting] = value
	}
	m, err := migrate.OpenConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Up(pgtest.Ctx(t))
	return err
}

// widths returns the width of every regular partition of event_outbox, in range order.
func widths(t *testing.T, db *pgtest.DB) []int64 {
	t.Helper()
	rows, err := db.Pool.Query(pgtest.Ctx(t), `SELECT (upper_txid::text::numeric - lower_txid::text::numeric)::bigint
	                                            FROM iu_history_partition WHERE table_name = 'event_outbox' AND lower_txid IS NOT NULL
	                                           ORDER BY lower_txid`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Rule (issue 22, item 4): the partition width is a setting at install. A new install
// chooses it with the session setting iu.partition_txids on the migrating connection
// (PGOPTIONS='-c iu.partition_txids=N', iu-runner migrate up --partition-txids N): the
// first partitions the partitioning migration makes are that wide (the first one covers
// the few txids the migration itself used as well), and the setting is kept in dot_config
// for every later partition. A value that is not a whole number in range stops the
// migration with 22023 naming the setting.
func TestPartitions_WidthIsASettingAtInstall(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDB(t)
	if err := installWith(t, db, "5000"); err != nil {
		t.Fatalf("install with iu.partition_txids = 5000: %v", err)
	}
	var kept string
	db.QueryRow(t, `SELECT value FROM dot_config WHERE key = 'retention.partition_txids'`, nil, &kept)
	ws := widths(t, db)
	if kept != "5000" || len(ws) < 2 {
		t.Fatalf("retention.partition_txids = %q, partitions %v: want 5000 kept and the first partitions made", kept, ws)
	}
	for i, w := range ws {
		if w < 5000 || w > 5000+200 || (i > 0 && w != 5000) {
			t.Fatalf("partitions at install are %v txids wide, want 5000 (the first up to 200 more)", ws)
		}
	}

	bad := pgtest.NewEmptyDB(t)
	err := installWith(t, bad, "5k")
	e := pgtest.RequireSQLState(t, err, "22023")
	if !strings.Contains(e.Message, "iu.partition_txids") {
		t.Fatalf("the refusal must name the setting: %q", e.Message)
	}
}

// Rule (issue 22, item 4): maintenance narrows the next partitions when the setting
// changes: the partitions wholly ahead of the txids in use (none of their txids assigned
// yet, so empty) that are not of the new width are dropped and made again at the new
// width; the partition in use keeps its range; nothing else moves.
//
// On a cluster of its own: the test steers the next transaction id to within 1,500 of the
// partition's end, and on the shared cluster other tests' transactions (some burn
// thousands) carried it past the end before maintenance ran.
func TestPartitions_MaintenanceNarrowsTheNextPartitions(t *testing.T) {
	t.Parallel()
	db := privateHarness(t).NewDBOn(t, false)
	if err := installWith(t, db, "20000"); err != nil {
		t.Fatal(err)
	}
	seed(t, db)
	before := widths(t, db)
	emitWithoutMaintenance(t, db, "dry", 3)
	db.Exec(t, `UPDATE dot_config SET value = '1000' WHERE key = 'retention.partition_txids'`)
	m := maintain(t, db)
	recut, _ := m["recut"].([]any)
	if len(recut) == 0 {
		t.Fatalf("the partitions ahead (widths %v) must be re-cut to the new width: %v", before, m)
	}
	var bad int
	db.QueryRow(t, `SELECT count(*) FROM iu_history_partition
	                 WHERE lower_txid::text::numeric > pg_snapshot_xmax(pg_current_snapshot())::text::numeric
	                   AND upper_txid::text::numeric - lower_txid::text::numeric <> 1000`, nil, &bad)
	if bad != 0 {
		t.Fatalf("%d partitions ahead are not 1,000 txids wide after the change: %v (answer %v)", bad, widths(t, db), m)
	}
	// As txids approach the end of the partition in use, the next ones are 1,000 wide.
	var room int
	db.QueryRow(t, `SELECT (max(upper_txid::text::numeric) - pg_snapshot_xmax(pg_current_snapshot())::text::numeric)::int
	                  FROM iu_history_partition`, nil, &room)
	if room > 1500 {
		burn(t, db, room-1500)
	}
	m = maintain(t, db)
	if c, _ := m["created"].([]any); len(c) == 0 {
		t.Fatalf("maintenance created nothing near the end of the partition in use: %v", m)
	}
	ws := widths(t, db)
	if last := ws[len(ws)-1]; last != 1000 {
		t.Fatalf("the partitions made after the change must be 1,000 wide: %v", ws)
	}
	if n := scalar(t, db, `SELECT count(*) FROM ONLY event_outbox_default`); n != 0 {
		t.Fatalf("nothing may reach the default partition: %d rows", n)
	}
	runUntilCaughtUp(t, db, "w")
	requireExactlyOnce(t, db, "w")
}
