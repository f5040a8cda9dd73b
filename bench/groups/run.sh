#!/usr/bin/env bash
# Re-take the group-vs-single figures: one worker against a group of two members, the same
# backlog, interleaved, medians, the ratio printed last. Serialised with the other heavy
# runs on this machine (flock on /tmp/bench.lock). Environment: BENCH_GROUP_EVENTS
# (default 200000), BENCH_GROUP_REPS (pairs, default 3), BENCH_GROUP_BATCH (default 1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec flock -o /tmp/bench.lock go test -count=1 -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/groups/
