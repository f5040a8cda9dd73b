#!/usr/bin/env bash
# Instructions per call of the package's hot paths, counted by valgrind's callgrind on a
# single-user backend (`postgres --single`): deterministic to ~0.1 % for the same binaries
# and inputs, whatever else the machine is doing, where wall time on a shared 2-core machine
# moves 10-20 % between runs. Each figure is (instructions for 500 calls - for 100 calls) /
# 400, so start-up and the first call's planning cancel out. Every call is a prepared
# statement executed again, as pgx does.
#
#   bench/instr/count.sh [MIGRATIONS_DIR]     (default: sql/iu-core of this checkout)
#   IU_INSTR_ONLY='enqueue|job_queue' bench/instr/count.sh     (only the figures whose name matches, a bash ERE)
#   IU_INSTR_ONLY='busy run' bench/instr/count.sh               (a busy run of 100 and of 1,000 events against PgQ's consumer)
#   IU_INSTR_WAL=1 IU_INSTR_ONLY='busy run' bench/instr/count.sh (also the WAL bytes each busy run writes, ours and PgQ's)
#   IU_INSTR_ONLY='idle|next_batch' bench/instr/count.sh        (the idle run and PgQ's empty next_batch, in the small
#                                                              database and in one shaped as bench/pgq's, analyzed;
#                                                              IU_INSTR_IDLE_ROWS sets that one's outbox, default 1,000,000)
#   IU_INSTR_ONLY='fn_queue_stale_check' bench/instr/count.sh   (the stale-check's fresh path over 10,000 executors)
#
# Needs valgrind, the PostgreSQL server binaries (pg_config --bindir) and bin/goose (make
# goose). As root the cluster runs as the postgres OS user. Prints one line per figure.
set -euo pipefail
cd "$(dirname "$0")/../.."
MIG="${1:-sql/iu-core}"
BIN="$(pg_config --bindir)"
GOOSE="${GOOSE_BIN:-bin/goose}"
TABLE="${GOOSE_TABLE:-}"
work="$(mktemp -d /tmp/iu-instr.XXXXXX)"
trap 'rm -rf "$work"' EXIT
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$work"; runuser -u postgres -- "$@"; else "$@"; fi; }
as_pg "$BIN/initdb" -D "$work/data" -U postgres -A trust >/dev/null
as_pg "$BIN/pg_ctl" -D "$work/data" -o "-k $work -p 5432 -c listen_addresses=''" -l "$work/log" -w start >/dev/null
url="postgres://postgres@/instr?host=$work&port=5432"
psql -X -q -h "$work" -U postgres -d postgres -c 'CREATE DATABASE instr'
"$GOOSE" ${TABLE:+-table "$TABLE"} -dir "$MIG" postgres "$url" up >/dev/null 2>&1 || { echo "migrations failed" >&2; "$GOOSE" ${TABLE:+-table "$TABLE"} -dir "$MIG" postgres "$url" up; exit 1; }
psql -X -q -o /dev/null -h "$work" -U postgres -d instr -v ON_ERROR_STOP=1 <<'SQL'
INSERT INTO event_type_registry (event_domain, event_type, description) VALUES ('iu', 'bench', 'instr');
SELECT fn_iu_route_worker_register('iu_outbound_default');
UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');
SELECT fn_iu_emit_event('iu', 'bench', 's') FROM generate_series(1, 10);
SELECT fn_iu_route_worker_run('iu_outbound_default', 500);
SELECT fn_iu_route_worker_run('iu_outbound_default', 500);
-- No beat falls due while a count runs: a beat is due a quarter of the expected cadence of
-- wall time after the last (15 s at the default), and a callgrind run of 500 idle calls
-- can take that long, so one of the two runs would otherwise make a beat (a full pass,
-- ~45 k per call of the difference) depending on the machine's speed that minute.
UPDATE queue_heartbeat SET stale_threshold_seconds = 864000, expected_cadence_seconds = 86400
 WHERE executor_id = 'iu_outbound_default';
-- Partition maintenance, as a runner's tick runs it after its workers (internal/tick): it
-- records that the install's first partition closed and moves the bounds the idle path
-- plans the outbox by (fn_iu_outbox_hot_refresh). Without it the idle figure would be a
-- fresh install's until its first tick: one partition more in the plan (~23 k), and the
-- partitions ahead pruned as each poll starts.
SELECT fn_iu_partition_maintain();
SQL
# PgQ, the producers' baseline, where the server can install it (bench/deps/pgq.sh).
pgq=$(psql -X -qAt -h "$work" -U postgres -d instr -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgq'")
if [ "$pgq" = 1 ]; then
  psql -X -q -o /dev/null -h "$work" -U postgres -d instr -v ON_ERROR_STOP=1 \
    -c "CREATE EXTENSION pgq" -c "SELECT pgq.create_queue('bench_q')" \
    -c "SELECT pgq.create_queue('idle_q')" -c "SELECT pgq.register_consumer('idle_q', 'idle_c')"
fi
many=$(psql -X -qAt -h "$work" -U postgres -d instr -c "SELECT count(*) FROM pg_proc WHERE proname = 'fn_iu_emit_events'")
# The job claim's backlog, in a database of its own (a copy of instr) so that no other figure
# counts against it: 100,000 due jobs of four kinds (claimed: 'a', 40,000) and 1,000,000
# finished ones, analyzed, as a queue that has run for a while holds them.
if [[ -z "${IU_INSTR_ONLY:-}" || "fn_job_claim" =~ $IU_INSTR_ONLY ]]; then
  psql -X -q -h "$work" -U postgres -d postgres -c 'CREATE DATABASE claims TEMPLATE instr'
  psql -X -q -o /dev/null -h "$work" -U postgres -d claims -v ON_ERROR_STOP=1 <<'SQL'
INSERT INTO job_queue (job_kind, event_domain, process_after)
SELECT (ARRAY['a', 'a', 'b', 'c', 'd'])[1 + g % 5], 'iu', now() - interval '1 day' + make_interval(secs => g * 0.5)
  FROM generate_series(1, 100000) g;
INSERT INTO job_queue (job_kind, event_domain, status, finished_at)
SELECT (ARRAY['a', 'b', 'c', 'd'])[1 + g % 4], 'iu', 'succeeded', now() FROM generate_series(1, 1000000) g;
VACUUM ANALYZE job_queue;
SQL
fi
# The stale-check's fresh path, in a database of its own: 10,000 registered executors, each
# beaten at registration with a threshold no count outlasts (a day), so every call finds them
# all fresh and writes nothing (bench/queuehealth times the same call).
stale="fn_queue_stale_check, 10,000 fresh executors"
if [[ -z "${IU_INSTR_ONLY:-}" || "$stale" =~ $IU_INSTR_ONLY ]]; then
  psql -X -q -h "$work" -U postgres -d postgres -c 'CREATE DATABASE stale TEMPLATE instr'
  psql -X -q -o /dev/null -h "$work" -U postgres -d stale -v ON_ERROR_STOP=1 \
    -c "SELECT fn_queue_heartbeat_register('ex' || g, 'external_worker', '{iu}', 60, 86400, 'instr') FROM generate_series(1, 10000) g" \
    -c "UPDATE queue_heartbeat SET stale_threshold_seconds = 864000, expected_cadence_seconds = 86400" \
    -c "VACUUM ANALYZE"
fi
# load_outbox DB ROWS WHERE: bench/pgq's loadOutbox in SQL: generated rows 1..ROWS, every
# 20th an iu event (four types, streams main and side), the rest other domains' noise, 1,000
# generated rows per transaction as producers write; WHERE "WHERE g % 20 = 0" keeps only the
# iu ones (the iu-only outbox), "" keeps all (the shared outbox).
load_outbox() {
  psql -X -q -o /dev/null -h "$work" -U postgres -d "$1" -v ON_ERROR_STOP=1 <<SQL
DO \$load\$
BEGIN
    FOR c IN 0 .. ($2 - 1) / 1000 LOOP
        INSERT INTO event_outbox (event_domain, event_type, event_stream, event_subject_table, event_subject_ref)
        SELECT CASE WHEN g % 20 = 0 THEN 'iu' ELSE (ARRAY['system', 'ops', 'cut'])[1 + g % 3] END,
               CASE WHEN g % 20 = 0 THEN (ARRAY['unit_version_created', 'unit_version_published', 'unit_archived', 'unit_flagged'])[1 + (g / 20) % 4]
                    ELSE 'noise_' || (g % 7) END,
               CASE WHEN g % 20 = 0 THEN (ARRAY['main', 'side'])[1 + (g / 80) % 2] ELSE 'alert' END,
               'unit', 'u-' || g
          FROM generate_series(c * 1000 + 1, least((c + 1) * 1000, $2)) g $3;
        COMMIT;
    END LOOP;
END
\$load\$;
SQL
}
# bench_routes DB: the benches' route table (bench/benchdata/routes.sql, the one bench/pgq
# times against).
bench_routes() {
  psql -X -q -o /dev/null -h "$work" -U postgres -d "$1" -v ON_ERROR_STOP=1 -f bench/benchdata/routes.sql   # the script runs from the repository root
}
# catch_up DB: runs the bench worker iu_outbound_default with large batches until a run
# claims nothing; fails when 1,000 runs have not caught it up.
catch_up() {
  local c
  for _ in $(seq 1000); do
    c=$(psql -X -qAt -h "$work" -U postgres -d "$1" -c "SELECT fn_iu_route_worker_run('iu_outbound_default', 10000) ->> 'claimed'")
    [ "$c" = 0 ] && return 0
  done
  echo "$1: the worker has not caught up after 1,000 runs" >&2
  exit 1
}
# A busy run against PgQ's consumer doing the same work (bench/pgq's BenchmarkPgqThroughput
# in instructions): databases busy<B> of their own, each an outbox of only iu events as
# bench/pgq loads it (1,000 generated rows per transaction, the same types, streams and
# routes), worker bench_worker registered, and a PgQ queue of the same events in claim order
# with one tick per B events (61 batches of 100, as bench/pgq's; 30 of 1,000, bench/pgq's 21
# and room for the WAL figure's runs), and the bench's consumer (bench/pgq/common_test.go's
# pgqSetup, a plain INSERT of the audit rows in the batch's transaction). Each figure is per
# run: (14 runs - 6 runs) / 8, from the middle of the queue. Both counts are fresh backends
# with six runs or more: PgQ's consumer is PL/pgSQL under the default plan_cache_mode, so a
# session plans each of its statements anew on their first five executions before it
# settles on a generic plan (the worker pins force_generic_plan and plans once); with fewer
# runs in the smaller count, the difference would charge PgQ for planning a long-running
# consumer no longer does (it did until this stop: 3 and 11 runs, ~2.2 M instructions a run
# at batch 100).
busy_sizes=()
for b in 100 1000; do
  if [[ "$pgq" = 1 && ( -z "${IU_INSTR_ONLY:-}" || "busy run of $b" =~ $IU_INSTR_ONLY ) ]]; then busy_sizes+=("$b"); fi
done
if [ "${#busy_sizes[@]}" -gt 0 ]; then
  consumer=$(awk '/^const pgqSetup = `/ {on = 1; sub(/^const pgqSetup = `/, ""); print; next} on && /`$/ {sub(/`$/, ""); print; exit} on' bench/pgq/common_test.go)
fi
for b in "${busy_sizes[@]}"; do
  chunks=$([ "$b" = 100 ] && echo 61 || echo 30)
  psql -X -q -h "$work" -U postgres -d postgres -c "CREATE DATABASE busy$b TEMPLATE instr"
  load_outbox "busy$b" $((b * chunks * 20)) "WHERE g % 20 = 0"
  bench_routes "busy$b"
  psql -X -q -o /dev/null -h "$work" -U postgres -d "busy$b" -v ON_ERROR_STOP=1 <<SQL
SELECT fn_iu_route_worker_register('bench_worker');
UPDATE queue_heartbeat SET stale_threshold_seconds = 864000, expected_cadence_seconds = 86400 WHERE executor_id = 'bench_worker';
SELECT pgq.set_queue_config('bench_q', 'ticker_max_count', '1');
SELECT pgq.register_consumer('bench_q', 'bench_worker');
SQL
  printf '%s\n' "$consumer" | psql -X -q -o /dev/null -h "$work" -U postgres -d "busy$b" -v ON_ERROR_STOP=1
  for i in $(seq 0 $((chunks - 1))); do
    psql -X -q -o /dev/null -h "$work" -U postgres -d "busy$b" -v ON_ERROR_STOP=1 \
      -c "SELECT pgq.insert_event('bench_q', o.event_type, o.safe_payload::text, o.event_stream, o.id::text, o.event_subject_ref, NULL)
            FROM (SELECT * FROM event_outbox WHERE event_domain = 'iu' ORDER BY txid, id OFFSET $((i * b)) LIMIT $b) o" \
      -c "SELECT pgq.ticker('bench_q')"
  done
  psql -X -q -o /dev/null -h "$work" -U postgres -d "busy$b" -c "VACUUM ANALYZE"
done
# The idle run where bench/pgq's BenchmarkPgqIdle times it, against PgQ's empty next_batch in
# the same database: a copy of instr with the bench's shared outbox (IU_INSTR_IDLE_ROWS rows,
# default 1,000,000, 5 % iu, loaded as bench/pgq loads it), the worker caught up over its
# events, VACUUM ANALYZE (as the bench does and autovacuum would), then partition maintenance
# (a runner's tick after its workers). The idle figures above run in instr, which is small and
# never analyzed: there the outbox's domain index is one page (the new-rows question's
# descent costs almost nothing) and the small tables' plans are the unanalyzed ones, so the
# pair below is the one the wall-time figure follows.
idle_big="idle run, shared outbox analyzed"
have_idlebig=
if [[ "$pgq" = 1 && ( -z "${IU_INSTR_ONLY:-}" || "$idle_big" =~ $IU_INSTR_ONLY || "next_batch" =~ $IU_INSTR_ONLY ) ]]; then
  rows="${IU_INSTR_IDLE_ROWS:-1000000}"
  psql -X -q -h "$work" -U postgres -d postgres -c "CREATE DATABASE idlebig TEMPLATE instr"
  load_outbox idlebig "$rows" ""
  bench_routes idlebig
  catch_up idlebig
  psql -X -q -o /dev/null -h "$work" -U postgres -d idlebig -v ON_ERROR_STOP=1 -c "VACUUM ANALYZE" -c "SELECT fn_iu_partition_maintain()"
  idle_now=$(psql -X -qAt -h "$work" -U postgres -d idlebig -c "SELECT fn_iu_route_worker_run('iu_outbound_default', 100) ->> 'idle'")
  [ "$idle_now" = true ] || { echo "idlebig: the worker is not idle after catching up" >&2; exit 1; }
  have_idlebig=1
fi
# The WAL a busy run writes, ours against PgQ's consumer (opt-in: IU_INSTR_WAL=1), on the
# running server before the counts: five runs of each, alternating, each its own session
# and transaction, the bytes between the insert position before the call and after its
# commit (a session of its own on an otherwise idle cluster, so the bytes are the run's).
# The counts below then start five runs further into the queues, still inside them (61 and
# 30 batches deep; the counts take 20). Prints each size's medians and ours / PgQ's.
if [[ -n "${IU_INSTR_WAL:-}" ]]; then
  for b in "${busy_sizes[@]}"; do
    ours=(); theirs=()
    for _ in 1 2 3 4 5; do
      for who in ours pgq; do
        if [ "$who" = ours ]; then call="SELECT fn_iu_route_worker_run('bench_worker', $b)"; else call="SELECT bench_pgq_consume('bench_q', 'bench_worker')"; fi
        bytes=$(printf '%s\n' "SELECT pg_current_wal_insert_lsn() AS l0 \gset" "$call \g /dev/null" \
          "SELECT pg_current_wal_insert_lsn() - :'l0';" | psql -X -qAt -h "$work" -U postgres -d "busy$b" -v ON_ERROR_STOP=1)
        if [ "$who" = ours ]; then ours+=("$bytes"); else theirs+=("$bytes"); fi
      done
    done
    mo=$(printf '%s\n' "${ours[@]}" | sort -n | sed -n 3p); mp=$(printf '%s\n' "${theirs[@]}" | sort -n | sed -n 3p)
    printf '%-40s %8d bytes of WAL per run, PgQ consumer %d (ours / PgQ %.3f; runs %s / %s)\n' "busy run of $b, WAL" "$mo" "$mp" \
      "$(echo "$mo / $mp" | bc -l)" "${ours[*]}" "${theirs[*]}"
  done
fi
psql -X -q -o /dev/null -h "$work" -U postgres -d instr -c CHECKPOINT
as_pg "$BIN/pg_ctl" -D "$work/data" -w stop >/dev/null

count() { # name prepare execute n [database]
  local f="$work/in.$1.$4" out="$work/cg.$1.$4"
  { echo "$2"; for _ in $(seq "$4"); do echo "$3"; done; } > "$f"
  as_pg valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN/postgres" --single -D "$work/data" -c max_parallel_workers_per_gather=0 "${5:-instr}" < "$f" >/dev/null 2>&1
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}'
}
per_call() { # name prepare execute [events per call] [database]
  local a b per="${4:-1}"
  [[ -z "${IU_INSTR_ONLY:-}" || "$1" =~ $IU_INSTR_ONLY ]] || return 0
  a=$(count "$1" "$2" "$3" 100 "${5:-}"); b=$(count "$1" "$2" "$3" 500 "${5:-}")
  if [ "$per" = 1 ]; then
    printf '%-40s %8.1f k instructions per call\n' "$1" "$(echo "($b - $a) / 400 / 1000" | bc -l)"
  else
    printf '%-40s %8.1f k instructions per event (%d events per call)\n' "$1" "$(echo "($b - $a) / 400 / 1000 / $per" | bc -l)" "$per"
  fi
}
per_call "SELECT 1" "PREPARE p AS SELECT 1;" "EXECUTE p;"
per_run() { # name database prepare execute batch: instructions per run, (14 runs - 6 runs) / 8
  local a b
  a=$(count "$1" "$3" "$4" 6 "$2"); b=$(count "$1" "$3" "$4" 14 "$2")
  printf '%-40s %8.1f k instructions per run (%.1f k per event)\n' "$1" "$(echo "($b - $a) / 8 / 1000" | bc -l)" "$(echo "($b - $a) / 8 / 1000 / $5" | bc -l)"
}
for b in "${busy_sizes[@]}"; do
  per_run "busy run of $b, fn_iu_route_worker_run" "busy$b" "PREPARE p AS SELECT fn_iu_route_worker_run(\$1, \$2);" "EXECUTE p('bench_worker', $b);" "$b"
  per_run "busy run of $b, PgQ consumer" "busy$b" "PREPARE p AS SELECT bench_pgq_consume(\$1, \$2);" "EXECUTE p('bench_q', 'bench_worker');" "$b"
done
# A stale-check call over 10,000 executors is ~50 M instructions: (11 calls - 3) / 8.
if [[ -z "${IU_INSTR_ONLY:-}" || "$stale" =~ $IU_INSTR_ONLY ]]; then
  a=$(count stale "" "SELECT fn_queue_stale_check() IS NOT NULL;" 3 stale); b=$(count stale "" "SELECT fn_queue_stale_check() IS NOT NULL;" 11 stale)
  printf '%-40s %8.1f k instructions per call\n' "$stale" "$(echo "($b - $a) / 8 / 1000" | bc -l)"
fi
per_call "idle fn_iu_route_worker_run" "PREPARE p AS SELECT fn_iu_route_worker_run(\$1, \$2);" "EXECUTE p('iu_outbound_default', 500);"
per_call "fn_iu_emit_event" "PREPARE p AS SELECT fn_iu_emit_event(\$1, \$2, \$3, \$4, \$5, \$6, \$7, \$8);" "EXECUTE p('iu', 'bench', 's', 'standard', 'info', NULL, NULL, '{\"k\": 1}');"
per_call "direct INSERT into event_outbox" "PREPARE p AS INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload) VALUES (\$1, \$2, \$3, \$4);" "EXECUTE p('iu', 'bench', 's', '{\"k\": 1}');"
per_row() { # name prepare(statement over generate_series(1, $1))
  local a b
  [[ -z "${IU_INSTR_ONLY:-}" || "$1" =~ $IU_INSTR_ONLY ]] || return 0
  a=$(count "$1" "$2" "EXECUTE p(400);" 1); b=$(count "$1" "$2" "EXECUTE p(2000);" 1)
  printf '%-40s %8.1f k instructions per call\n' "$1" "$(echo "($b - $a) / 1600 / 1000" | bc -l)"
}
# The job queue's single enqueue as triggers and INSERT ... SELECT call it: many calls in one
# statement, against the rows of one plain INSERT ... SELECT into job_queue (every row rule,
# no argument checks). Per row: (one statement of 2,000 rows - one of 400) / 1,600, so what
# a statement costs once cancels out, as it does over 20,000 rows. Keyed calls get distinct
# keys, so every one inserts.
per_row "fn_job_enqueue, no dedupe key" "PREPARE p AS SELECT count(fn_job_enqueue('bench', 'iu', jsonb_build_object('n', g))) FROM generate_series(1, \$1) g;"
per_row "fn_job_enqueue, dedupe key" "PREPARE p AS SELECT count(fn_job_enqueue('bench', 'iu', jsonb_build_object('n', g), NULL, gen_random_uuid()::text)) FROM generate_series(1, \$1) g;"
per_row "plain INSERT row into job_queue" "PREPARE p AS INSERT INTO job_queue (job_kind, event_domain, payload) SELECT 'bench', 'iu', jsonb_build_object('n', g) FROM generate_series(1, \$1) g;"
per_row "plain INSERT row into job_queue, key" "PREPARE p AS INSERT INTO job_queue (job_kind, event_domain, payload, dedupe_key) SELECT 'bench', 'iu', jsonb_build_object('n', g), gen_random_uuid()::text FROM generate_series(1, \$1) g;"
# One event emitted and routed: each step is two statements (each its own transaction), the
# emit and a worker run that routes it (the full pass, one page of one event).
per_call "emit + route one event" "PREPARE e AS SELECT fn_iu_emit_event(\$1, \$2, \$3); PREPARE r AS SELECT fn_iu_route_worker_run(\$1, \$2);" $'EXECUTE e(\'iu\', \'bench\', \'s\');\nEXECUTE r(\'iu_outbound_default\', 500);'
if [ "$pgq" = 1 ]; then
  per_call "pgq.insert_event" "PREPARE p AS SELECT pgq.insert_event(\$1, \$2, \$3, \$4, \$5, \$6, \$7);" "EXECUTE p('bench_q', 'bench', '{\"k\": 1}', 's', NULL, NULL, NULL);"
  # The idle baseline: a consumer asking for its next batch when no tick is new (the idle run's peer).
  per_call "empty pgq.next_batch" "PREPARE p AS SELECT pgq.next_batch(\$1, \$2);" "EXECUTE p('idle_q', 'idle_c');"
  # The same pair in the database shaped as bench/pgq's (set up above), the one wall time follows.
  if [ -n "$have_idlebig" ]; then
    per_call "$idle_big" "PREPARE p AS SELECT fn_iu_route_worker_run(\$1, \$2);" "EXECUTE p('iu_outbound_default', 100);" 1 idlebig
    per_call "empty pgq.next_batch, the same database" "PREPARE p AS SELECT pgq.next_batch(\$1, \$2);" "EXECUTE p('idle_q', 'idle_c');" 1 idlebig
  fi
else
  echo "pgq.insert_event: PgQ is not installable here (bench/deps/pgq.sh installs it)"
fi
if [ "$many" != 0 ]; then
  per_call "fn_iu_emit_events, 100 per call" "PREPARE p AS SELECT fn_iu_emit_events(\$1, \$2, \$3, NULL, NULL, NULL, NULL, \$4);" \
    "EXECUTE p('iu', 'bench', array_fill('s'::text, ARRAY[100]), array_fill('{\"k\": 1}'::jsonb, ARRAY[100]));" 100
fi
# The job claim against that backlog, one job and 100 jobs, as a worker loops on it. Each
# claim is rolled back, so every call finds the same backlog (claims that committed would
# leave the due index a longer run of dead entries to step over at each call); the figure
# includes the BEGIN and ROLLBACK. count(*): the single-user backend prints every column of
# every row returned, which for 100 rows costs more than the claim's planning did.
if [[ -z "${IU_INSTR_ONLY:-}" || "fn_job_claim" =~ $IU_INSTR_ONLY ]]; then
  per_call "fn_job_claim, 1 job" "PREPARE p AS SELECT count(*) FROM fn_job_claim(\$1, \$2, \$3, \$4);" $'BEGIN;\nEXECUTE p(\'w\', \'{a}\', 1, 60);\nROLLBACK;' 1 claims
  per_call "fn_job_claim, 100 jobs" "PREPARE p AS SELECT count(*) FROM fn_job_claim(\$1, \$2, \$3, \$4);" $'BEGIN;\nEXECUTE p(\'w\', \'{a}\', 100, 60);\nROLLBACK;' 1 claims
fi

# Last (it leaves a prepared transaction in the cluster): an idle run whose stored position
# lists a transaction still running, so every run reports who holds it (held_open_by). A
# single-user backend has no other session; a prepared transaction stands for another
# session's long one (it survives the restart). It is held, then one event is committed and
# routed: the window that routes it lists the held transaction, and so does the position.
# The worker routes until it has caught up: the figures before this one leave it a backlog
# (the emit figures' events, ~62,000 in a full run), which the counted runs would otherwise
# route (the figure came out negative).
held="idle fn_iu_route_worker_run, position held"
if [[ -z "${IU_INSTR_ONLY:-}" || "$held" =~ $IU_INSTR_ONLY ]]; then
  echo "max_prepared_transactions = 2" >> "$work/data/postgresql.conf"
  as_pg "$BIN/pg_ctl" -D "$work/data" -o "-k $work -p 5432 -c listen_addresses=''" -l "$work/log" -w start >/dev/null
  psql -X -q -o /dev/null -h "$work" -U postgres -d instr -v ON_ERROR_STOP=1 \
    -c "BEGIN; SELECT pg_current_xact_id(); PREPARE TRANSACTION 'instr_hold'" \
    -c "SELECT fn_iu_emit_event('iu', 'bench', 's')"
  catch_up instr
  psql -X -q -o /dev/null -h "$work" -U postgres -d instr -v ON_ERROR_STOP=1 \
    -c "SELECT fn_iu_route_worker_run('iu_outbound_default', 500)" -c CHECKPOINT
  n=$(psql -X -qAt -h "$work" -U postgres -d instr -c "SELECT fn_iu_route_worker_run('iu_outbound_default', 500) ->> 'held_open_count'")
  as_pg "$BIN/pg_ctl" -D "$work/data" -w stop >/dev/null
  [ "$n" = 1 ] || { echo "$held: the position is held by $n transactions, want 1" >&2; exit 1; }
  per_call "$held" "PREPARE p AS SELECT fn_iu_route_worker_run(\$1, \$2);" "EXECUTE p('iu_outbound_default', 500);"
fi
