#!/usr/bin/env bash
# Does a busy run's cost stay flat as history grows? Instructions per busy run of 100 events
# (valgrind's callgrind on a single-user backend, as count.sh counts), in two databases that
# differ only in the history partitions they keep:
#   flat     the install's own partitions (legacy, the current one, those ahead, default)
#   history  the same and 100 closed partitions of 1,000 txids below the worker's position
# Both in the steady state a worker lives in: caught up, then 30 transactions of 1,000 new
# events each, so done_snapshot is recent and a run pages through the new window. Each
# figure is (11 runs - 3 runs) / 8, on fresh copies of the database, so the first run's
# planning cancels out. Prints both figures and their ratio (history / flat; 1.00 is flat).
#
#   bench/instr/history.sh [MIGRATIONS_DIR]     (default: sql/iu-core of this checkout)
#
# Needs valgrind, the PostgreSQL server binaries (pg_config --bindir) and bin/goose (make
# goose). As root the cluster runs as the postgres OS user.
set -euo pipefail
cd "$(dirname "$0")/../.."
MIG="${1:-sql/iu-core}"
BIN="$(pg_config --bindir)"
GOOSE="${GOOSE_BIN:-bin/goose}"
work="$(mktemp -d /tmp/iu-history.XXXXXX)"
trap 'rm -rf "$work"' EXIT
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; runuser -u postgres -- "$@"; else "$@"; fi; }
as_pg "$BIN/initdb" -D "$work/data" -U postgres -A trust >/dev/null
as_pg "$BIN/pg_ctl" -D "$work/data" -o "-k $work -p 5432 -c listen_addresses='' -c fsync=off" -l "$work/log" -w start >/dev/null
sql() { psql -X -q -o /dev/null -h "$work" -U postgres -v ON_ERROR_STOP=1 "$@"; }

for db in flat history; do
  sql -d postgres -c "CREATE DATABASE $db"
  "$GOOSE" -dir "$MIG" postgres "postgres://postgres@/$db?host=$work&port=5432" up >/dev/null 2>&1 ||
    { echo "migrations failed" >&2; exit 1; }
  sql -d "$db" <<'SQL'
INSERT INTO event_type_registry (event_domain, event_type, description) VALUES ('iu', 'bench', 'history');
INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, route_kind, enabled, dry_run) VALUES
  ('iu', 'bench', 'main', 'bench_main', 'outbound', true, true),
  ('iu', 'bench', 'side', 'bench_side', 'outbound', true, true);
UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');
SELECT fn_iu_route_worker_register('bench_worker');
-- no beat falls due while a count runs (count.sh says why)
UPDATE queue_heartbeat SET stale_threshold_seconds = 864000, expected_cadence_seconds = 86400 WHERE executor_id = 'bench_worker';
SQL
done
# 100 closed partitions of 1,000 txids (each txid a rolled-back subtransaction: the
# partitions are empty, as retention leaves none), maintenance after each, as a runner's
# tick runs it; then the default width again, so the partitions ahead are the install's.
sql -d history <<'SQL'
-- the install's first partitions are empty here and 100,000,000 txids wide: dropped, so the
-- narrow ones start at the txids in use
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT partition_name FROM iu_history_partition WHERE lower_txid IS NOT NULL LOOP
    EXECUTE format('DROP TABLE %I', r.partition_name);
  END LOOP;
  DELETE FROM iu_history_partition WHERE lower_txid IS NOT NULL;
END $$;
UPDATE dot_config SET value = '1000' WHERE key = 'retention.partition_txids';
SELECT fn_iu_partition_maintain();
CREATE TABLE bench_burn (x int);
DO $$
BEGIN
  FOR w IN 1 .. 100 LOOP
    FOR i IN 1 .. 1000 LOOP
      BEGIN
        INSERT INTO bench_burn VALUES (i);
        RAISE EXCEPTION USING ERRCODE = 'P0001';
      EXCEPTION WHEN raise_exception THEN NULL;
      END;
    END LOOP;
    PERFORM fn_iu_partition_maintain();
    COMMIT;
  END LOOP;
END $$;
DROP TABLE bench_burn;
UPDATE dot_config SET value = '100000000' WHERE key = 'retention.partition_txids';
SQL
for db in flat history; do
  sql -d "$db" -c "SELECT fn_iu_partition_maintain()"
  # caught up, then the backlog in a window of its own
  for _ in 1 2 3; do sql -d "$db" -c "SELECT fn_iu_route_worker_run('bench_worker', 10000)"; done
  sql -d "$db" -c "DO \$\$ BEGIN FOR i IN 1 .. 30 LOOP PERFORM fn_iu_emit_events('iu', 'bench', ARRAY(SELECT (ARRAY['main', 'side'])[1 + g % 2] FROM generate_series(1, 1000) g)); COMMIT; END LOOP; END \$\$" \
    -c "VACUUM ANALYZE" -c "SELECT fn_iu_route_worker_run('bench_worker', 100)"
  for n in 3 11; do sql -d postgres -c "CREATE DATABASE ${db}_$n TEMPLATE $db"; done
done
parts=$(psql -X -qAt -h "$work" -U postgres -d history -c "SELECT count(*) FROM iu_history_partition WHERE table_name = 'event_outbox'")
flatparts=$(psql -X -qAt -h "$work" -U postgres -d flat -c "SELECT count(*) FROM iu_history_partition WHERE table_name = 'event_outbox'")
sql -d postgres -c CHECKPOINT
as_pg "$BIN/pg_ctl" -D "$work/data" -w stop >/dev/null

count() { # database runs -> instructions
  local f="$work/in.$1" out="$work/cg.$1"
  { echo "PREPARE p AS SELECT fn_iu_route_worker_run(\$1, \$2);"; for _ in $(seq "$2"); do echo "EXECUTE p('bench_worker', 100);"; done; } > "$f"
  as_pg valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN/postgres" --single -D "$work/data" -c max_parallel_workers_per_gather=0 "$1" < "$f" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}'
}
declare -A per
for db in flat history; do
  a=$(count "${db}_3" 3); b=$(count "${db}_11" 11)
  per[$db]=$(echo "($b - $a) / 8 / 1000" | bc -l)
done
printf 'busy run of 100, %d outbox partitions (flat)       %8.1f k instructions per run\n' "$flatparts" "${per[flat]}"
printf 'busy run of 100, %d outbox partitions (history)   %8.1f k instructions per run\n' "$parts" "${per[history]}"
printf 'history / flat: %.2f (1.00: flat)\n' "$(echo "${per[history]} / ${per[flat]}" | bc -l)"
