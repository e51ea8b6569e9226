#!/usr/bin/env bash
# Instructions per EVALSHA, counted by callgrind inside strata_server::table::execute (the
# command's own work: no parsing, no network, no scheduler noise). Deterministic, so it
# compares two builds on this noisy machine where throughput cannot.
#
# usage: scripts/callgrind-evalsha.sh [BINARY] [OUT]   (defaults: target/release/strata,
#        target/callgrind.evalsha); needs valgrind, redis-cli and redis-benchmark.
# Prints the instruction total over 22,000 calls (2,000 warm-up, 20,000 measured) and per call.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/strata}
OUT=${2:-target/callgrind.evalsha}
PORT=${PORT:-7452}
S='local v = redis.call("get", KEYS[1]); redis.call("set", KEYS[1], (tonumber(v) or 0) + 1); return v'
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
rm -f "$OUT" "$OUT".*
valgrind --tool=callgrind --collect-atstart=no --toggle-collect='strata_server::table::execute*' \
    --callgrind-out-file="$OUT" "$BIN" serve --port "$PORT" --appendonly no --save "" \
    --dir "$DIR" --threads 1 >/dev/null 2>&1 &
PID=$!
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.3; done
SHA=$(redis-cli -p "$PORT" script load "$S")
for n in 2000 20000; do
    redis-benchmark -p "$PORT" -n "$n" -r 1000 -c 10 -P 16 -q evalsha "$SHA" 1 key:__rand_int__ >/dev/null
done
callgrind_control -d "$PID" >/dev/null 2>&1
kill "$PID"
wait "$PID" 2>/dev/null || true
total=$(callgrind_annotate "$OUT".1 2>/dev/null | awk '/PROGRAM TOTALS/ && !n++ { gsub(",", "", $1); print $1 }')
echo "instructions in table::execute: $total over 22001 commands ($((total / 22001)) per command); profile: $OUT.1"
