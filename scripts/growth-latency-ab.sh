#!/usr/bin/env bash
# Strata against Strata while one collection grows large: throughput, p99, the slowest
# request and the server's CPU time, for two or more builds in turn (A B A B ...), each run
# on a fresh server, so that only figures from interleaved runs compare
# (docs/benchmarks.md, "How we compare"). Made for growth pauses (docs/benchmarks.md, "Large
# collections grow without a pause").
#
# usage: scripts/growth-latency-ab.sh ROUNDS BINARY... -- REDIS-BENCHMARK-ARGS...
#   e.g. scripts/growth-latency-ab.sh 4 /tmp/a /tmp/b -- -t sadd -n 3000000 -r 100000000 -P 16 -c 50
#
# One line per run: <round> <binary> cpu=<server utime+stime, s> <redis-benchmark --csv
# line of the last test: name, rps, avg, min, p50, p95, p99, max (ms)>.
# Environment: PORT=7470  RUN_DIR=${TMPDIR:-/tmp}/strata-growth-run
set -euo pipefail

[ $# -ge 4 ] || {
    sed -n '2,13p' "$0" >&2
    exit 2
}
ROUNDS=$1
shift
BINS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    BINS+=("$1")
    shift
done
[ "${1:-}" = "--" ] || {
    echo "missing -- before the redis-benchmark arguments" >&2
    exit 2
}
shift
PORT=${PORT:-7470}
RUN_DIR=${RUN_DIR:-${TMPDIR:-/tmp}/strata-growth-run}
CLK_TCK=$(getconf CLK_TCK)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$RUN_DIR"' EXIT

for r in $(seq "$ROUNDS"); do
    for b in "${BINS[@]}"; do
        rm -rf "$RUN_DIR"
        mkdir -p "$RUN_DIR"
        "$b" serve --port "$PORT" --appendonly no --save "" --dir "$RUN_DIR" >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 100); do
            redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
            sleep 0.05
        done
        out=$(redis-benchmark -p "$PORT" "$@" --csv 2>/dev/null | tail -1)
        cpu=$(awk -v t="$CLK_TCK" '{printf "%.2f", ($14 + $15) / t}' "/proc/$pid/stat")
        echo "$r $b cpu=$cpu $out"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        pid=
    done
done
