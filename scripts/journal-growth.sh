#!/usr/bin/env bash
# How large the journal grows under a long run of overwrites: Strata's journal directory
# (each binary given) against redis-server's appendonlydir, in the same run, both with the
# journal on and their default automatic rewrite settings (grow 100% past 64mb).
#
# usage: scripts/journal-growth.sh [STRATA_BINARY...]   (default target/release/strata)
#
# Each server takes N SETs of VALUE-byte values over KEYS keys (redis-benchmark -P 16), so
# the live data stays small while the log of writes grows. The directory is measured every
# second during the run and once more 3 s after it. One line per server:
#   <server> requests <n> data_bytes <live data> largest_mb <m> final_mb <m> rewrites <r>
# Environment: N=3000000  KEYS=1000  VALUE=100
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

N=${N:-3000000}
KEYS=${KEYS:-1000}
VALUE=${VALUE:-100}
[ $# -ge 1 ] || set -- target/release/strata
require_redis_tools redis-server
bench_workdir journal-growth

dir_mb() { du -sm "$1" 2>/dev/null | cut -f1; }

# measure NAME PORT DIR LOG REWRITE_PATTERN
measure() {
    local name=$1 port=$2 dir=$3 logf=$4 pattern=$5 largest=0 now bench
    redis-benchmark -p "$port" -t set -r "$KEYS" -n "$N" -d "$VALUE" -P 16 -q >/dev/null &
    bench=$!
    while kill -0 "$bench" 2>/dev/null; do
        now=$(dir_mb "$dir")
        [ "$now" -gt "$largest" ] && largest=$now
        sleep 1
    done
    wait "$bench"
    sleep 3
    now=$(dir_mb "$dir")
    [ "$now" -gt "$largest" ] && largest=$now
    echo "$name requests $N data_bytes $((KEYS * VALUE)) largest_mb $largest" \
        "final_mb $now rewrites $(grep -c "$pattern" "$logf" || true)"
}

for bin in "$@"; do
    port=$(free_port)
    mkdir -p "$WORK/$port"
    "$bin" serve --port "$port" --dir "$WORK/$port" --save '' >"$WORK/$port.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_ping "$port"
    measure "$bin" "$port" "$WORK/$port/journal" "$WORK/$port.log" \
        "Starting automatic rewriting"
    stop_pid "$pid"
done
port=$(free_port)
mkdir -p "$WORK/redis"
redis-server --port "$port" --bind 127.0.0.1 --dir "$WORK/redis" --save '' \
    --appendonly yes --daemonize no >"$WORK/redis.log" 2>&1 &
pid=$!
PIDS+=("$pid")
wait_ping "$port"
measure redis-server "$port" "$WORK/redis/appendonlydir" "$WORK/redis.log" \
    "Starting automatic rewriting"
stop_pid "$pid"
