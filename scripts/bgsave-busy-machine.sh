#!/usr/bin/env bash
# How long a BGSAVE takes on an idle server while other processes keep every core busy:
# Strata (each binary given) against redis-server, in the same run. A background snapshot's
# capture runs under SCHED_IDLE in Strata, which such a machine starves; Redis's forked
# child runs at normal priority.
#
# usage: scripts/bgsave-busy-machine.sh [STRATA_BINARY...]   (default target/release/strata)
#
# Each server gets KEYS keys (redis-benchmark -t set -r KEYS -n 2xKEYS, 3-byte values),
# then HOGS busy shell loops start (default: the number of cores + 1), and ROUNDS BGSAVEs
# run one after the other, each timed from the command until INFO persistence shows
# rdb_bgsave_in_progress:0 (polled every 20 ms). One line per server and round:
#   <server> round <n> bgsave_ms <ms>
# Environment: KEYS=10000  ROUNDS=3  HOGS=<cores+1>
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

KEYS=${KEYS:-10000}
ROUNDS=${ROUNDS:-3}
HOGS=${HOGS:-$(($(nproc) + 1))}
[ $# -ge 1 ] || set -- target/release/strata
require_redis_tools redis-server
bench_workdir bgsave-busy

# time_bgsaves NAME PORT: the ROUNDS timings, with the hogs running.
time_bgsaves() {
    local name=$1 port=$2 hogs=() i r t0 t1
    redis-benchmark -p "$port" -t set -r "$KEYS" -n $((2 * KEYS)) -q >/dev/null
    for i in $(seq "$HOGS"); do
        (while :; do :; done) &
        hogs+=($!)
    done
    sleep 0.5
    for r in $(seq "$ROUNDS"); do
        t0=$EPOCHREALTIME
        redis-cli -p "$port" bgsave >/dev/null
        sleep 0.01
        while redis-cli -p "$port" info persistence | grep -q 'rdb_bgsave_in_progress:1'; do
            sleep 0.02
        done
        t1=$EPOCHREALTIME
        awk -v n="$name" -v r="$r" -v a="$t0" -v b="$t1" \
            'BEGIN { printf "%s round %d bgsave_ms %d\n", n, r, (b - a) * 1000 }'
    done
    kill "${hogs[@]}"
    wait "${hogs[@]}" 2>/dev/null || true
}

for bin in "$@"; do
    port=$(free_port)
    mkdir -p "$WORK/$port"
    "$bin" serve --port "$port" --dir "$WORK/$port" --appendonly yes --save '' \
        >"$WORK/$port.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_ping "$port"
    time_bgsaves "$bin" "$port"
    stop_pid "$pid"
done
port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --dir "$WORK" --save '' --appendonly no \
    --daemonize no >"$WORK/redis.log" 2>&1 &
pid=$!
PIDS+=("$pid")
wait_ping "$port"
time_bgsaves redis-server "$port"
stop_pid "$pid"
