#!/usr/bin/env bash
# Active expiry's cost and reach, Strata against Redis in the same run.
#
# usage: scripts/bench-active-expiry.sh [STRATA_BINARY...]
#   (default: target/release/strata; several binaries compare builds, Redis runs once a round)
#
# For each server, each round, on a fresh server without persistence:
#   1. N keys with a TTL none of which falls due during the run (SET key EX 1000000),
#   2. idle: the server's CPU over IDLE seconds with no client (% of one core),
#   3. busy: redis-benchmark -P 16 GETs of those keys (ops/s, p99 ms),
#   4. reach: SHORT more keys with a 1 s TTL; how many of them are still there (expired,
#      not yet removed) REACH seconds later.
# Prints one row per server and round, then the medians.
#
# Environment: N=2000000  SHORT=200000  IDLE=10  GETS=2000000  REACH=10  ROUNDS=3
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"
require_redis_tools redis-server
N=${N:-2000000}
SHORT=${SHORT:-200000}
IDLE=${IDLE:-10}
GETS=${GETS:-2000000}
ROUNDS=${ROUNDS:-3}
REACH=${REACH:-10}
binaries=("$@")
[ ${#binaries[@]} -eq 0 ] && binaries=(target/release/strata)
bench_workdir active-expiry
hz=$(getconf CLK_TCK)

# measure NAME: runs the four steps against a fresh server (STRATA_CMD set by the caller
# for a Strata build) and prints "NAME idle% ops/s p99 left".
measure() {
    local name=$1 kind=$2 pid port a b left
    pair_server "$kind"
    pid=$SERVER_PID port=$SERVER_PORT
    redis-benchmark -p "$port" -n "$N" -r 1000000000 -c 50 -P 32 -q \
        SET 'key:__rand_int__' xxxxxxxxxxxxxxxx EX 1000000 >/dev/null
    local keys
    keys=$(redis-cli -p "$port" DBSIZE)
    a=$(cpu_ticks "$pid")
    sleep "$IDLE"
    b=$(cpu_ticks "$pid")
    local idle
    idle=$(awk -v t=$((b - a)) -v hz="$hz" -v s="$IDLE" 'BEGIN { printf "%.1f", 100 * t / hz / s }')
    rb_run "$port" "$pid" "$GETS" -c 50 -P 16 -r 1000000000 GET 'key:__rand_int__'
    redis-benchmark -p "$port" -n "$SHORT" -r 1000000000 -c 50 -P 32 -q \
        SET 'short:__rand_int__' x EX 1 >/dev/null
    sleep "$REACH"
    left=$(($(redis-cli -p "$port" DBSIZE) - keys))
    stop_pid "$pid"
    echo "$name $idle $RB_RPS $RB_P99 $left"
}

results="$WORK/results"
for round in $(seq "$ROUNDS"); do
    line=$(measure redis redis)
    echo "round $round: $line" >&2
    echo "$line" >>"$results"
    for bin in "${binaries[@]}"; do
        STRATA_CMD="$bin serve"
        line=$(measure "$bin" strata)
        echo "round $round: $line" >&2
        echo "$line" >>"$results"
    done
done
echo "server | idle CPU, % of a core | GET -P 16 ops/s | p99 ms | 1 s keys left after ${REACH} s, of $SHORT (medians of $ROUNDS)"
for name in redis "${binaries[@]}"; do
    med() { awk -v n="$name" -v c="$1" '$1 == n { print $c }' "$results" | sort -n |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    echo "$name | $(med 2) | $(med 3) | $(med 4) | $(med 5)"
done
