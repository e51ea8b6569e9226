#!/usr/bin/env bash
# User-space instructions per request of one server thread, under callgrind: for each
# redis-benchmark test, a run of SMALL and one of LARGE requests on a fresh server, and
# (LARGE - SMALL) / the difference in requests, so start-up, connection set-up and the
# server's once-a-second work cancel out. Deterministic, unlike timings on this machine.
#
# usage: scripts/callgrind-per-request.sh SERVER TEST...
#   SERVER: a strata binary (run with --threads 1; counted: its worker thread) or `redis`
#           (redis-server; counted: its event loop, aeMain)
#   e.g. scripts/callgrind-per-request.sh target/release/strata lpush sadd hset
#        scripts/callgrind-per-request.sh redis lpush sadd hset
# Prints "<test> <instructions per request>". Each test takes about a minute. An LRANGE
# test's figure includes the LPUSH that redis-benchmark runs first for each LRANGE.
# Environment: PORT=7490  SMALL=10000  LARGE=60000  CLIENTS=50  PIPELINE=1
#   KEYSPACE=N     redis-benchmark -r N (random keys); unset: one key
#   AS_USER=bench  run as the ACL benchmarks' restricted user (bench-lib.sh's rules)
#                  instead of the default user: the ACL check's cost per request
#   REPLICA=1      a Strata server: with a replica (the same binary, not under callgrind)
#                  synced to it first, so its writes feed a replication stream
#   RESP3=1        the requests in RESP3 (redis-benchmark -3)
#   TRACKING=1     every connection with CLIENT TRACKING on (--enable-tracking; RESP3)
#   PRELOAD=N      N SETs of random keys (-r KEYSPACE, -d 64, -P 16) before each run, so
#                  that GETs find values; the same in both runs, so it cancels
set -euo pipefail
source "$(dirname "$0")/bench-lib.sh"

[ $# -ge 2 ] || {
    sed -n '2,23p' "$0" >&2
    exit 2
}
server=$1
shift
PORT=${PORT:-7490}
SMALL=${SMALL:-10000}
LARGE=${LARGE:-60000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-1}
bench_args=(-c "$CLIENTS" -P "$PIPELINE")
[ -n "${KEYSPACE:-}" ] && bench_args+=(-r "$KEYSPACE")
[ -n "${AS_USER:-}" ] && bench_args+=(--user "$AS_USER" -a benchpw)
[ -n "${RESP3:-}${TRACKING:-}" ] && bench_args+=(-3)
[ -n "${TRACKING:-}" ] && bench_args+=(--enable-tracking)
work=$(mktemp -d)
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# Instructions of the counted function (inclusive) in one run of N requests of TEST.
count() {
    local test=$1 n=$2 out="$work/callgrind.out" pattern
    if [ "$server" = redis ]; then
        pattern=':aeMain '
        valgrind --tool=callgrind --callgrind-out-file="$out" \
            redis-server --port "$PORT" --save '' --appendonly no >/dev/null 2>&1 &
    else
        pattern=':strata_server::net::workers::worker( \[|$)'
        rm -rf "$work/data"
        valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$server" serve --port "$PORT" --appendonly no --save '' --threads 1 \
            --dir "$work/data" >/dev/null 2>&1 &
    fi
    local pid=$!
    for _ in $(seq 300); do
        redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
        sleep 0.2
    done
    local replica=""
    if [ -n "${REPLICA:-}" ] && [ "$server" != redis ]; then
        local rport=$((PORT + 1))
        rm -rf "$work/replica"
        "$server" serve --port "$rport" --appendonly no --save '' \
            --dir "$work/replica" >/dev/null 2>&1 &
        replica=$!
        for _ in $(seq 100); do
            redis-cli -p "$rport" ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        redis-cli -p "$rport" replicaof 127.0.0.1 "$PORT" >/dev/null
        for _ in $(seq 600); do
            redis-cli -p "$rport" info replication | grep -q 'master_link_status:up' && break
            sleep 0.2
        done
    fi
    if [ -n "${AS_USER:-}" ]; then
        redis-cli -p "$PORT" ACL SETUSER "$AS_USER" "${BENCH_ACL_RULES[@]}" >/dev/null
    fi
    if [ -n "${PRELOAD:-}" ]; then
        redis-benchmark -p "$PORT" -t set -n "$PRELOAD" -r "${KEYSPACE:-1}" -d 64 -P 16 \
            -q >/dev/null 2>&1
    fi
    redis-benchmark -p "$PORT" -t "$test" -n "$n" "${bench_args[@]}" -q >/dev/null 2>&1
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" || true
    if [ -n "$replica" ]; then
        redis-cli -p "$((PORT + 1))" shutdown nosave >/dev/null 2>&1 || true
        wait "$replica" || true
    fi
    callgrind_annotate --inclusive=yes --threshold=99 "$out" 2>/dev/null |
        grep -E "$pattern" | head -1 | awk '{gsub(",", "", $1); print $1}'
}

for test in "$@"; do
    small=$(count "$test" "$SMALL")
    large=$(count "$test" "$LARGE")
    echo "$test $(((large - small) / (LARGE - SMALL)))"
done
