#!/usr/bin/env bash
# Instructions per operation, counted by callgrind inside strata_server::table::execute (the
# commands' own work: no parsing, no network, no scheduler noise). Deterministic, so it
# compares two builds on this noisy machine where throughput cannot.
#
# usage: scripts/callgrind.sh evalsha|voter|set [BINARY] [OUT]
#   (defaults: target/release/strata, target/callgrind.WORKLOAD); needs valgrind and
#   redis-cli, and redis-benchmark for evalsha.
# evalsha: 22,000 EVALSHA of a read-modify-write script (2,000 warm-up, 20,000 measured).
# voter:   `strata bench voter -n 20000 --partitions 16` (the library load and the final
#          check are left out of the per-vote figure).
# set:     22,000 SETs of 64-byte values at -P 16 (2,000 warm-up, 20,000 measured); with
#          APPENDFSYNC=everysec (or always) the journal is on, so the figure includes
#          ordering the write and encoding its record.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKLOAD=${1:?usage: scripts/callgrind.sh evalsha|voter|set [BINARY] [OUT]}
BIN=${2:-target/release/strata}
OUT=${3:-target/callgrind.$WORKLOAD}
PORT=${PORT:-7452}
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
rm -f "$OUT" "$OUT".*
if [ -n "${APPENDFSYNC:-}" ]; then JOURNAL_ARGS="--appendfsync $APPENDFSYNC"; else JOURNAL_ARGS="--appendonly no"; fi
valgrind --tool=callgrind --collect-atstart=no --toggle-collect='strata_server::table::execute*' \
    --callgrind-out-file="$OUT" "$BIN" serve --port "$PORT" $JOURNAL_ARGS --save "" \
    --dir "$DIR" --threads 1 >/dev/null 2>&1 &
PID=$!
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.3; done
case $WORKLOAD in
evalsha)
    S='local v = redis.call("get", KEYS[1]); redis.call("set", KEYS[1], (tonumber(v) or 0) + 1); return v'
    SHA=$(redis-cli -p "$PORT" script load "$S")
    for n in 2000 20000; do
        redis-benchmark -p "$PORT" -n "$n" -r 1000 -c 10 -P 16 -q evalsha "$SHA" 1 key:__rand_int__ >/dev/null
    done
    OPS=22001 ;;
set)
    for n in 2000 20000; do
        redis-benchmark -p "$PORT" -t set -n "$n" -r 1000 -d 64 -c 10 -P 16 -q >/dev/null
    done
    OPS=22000 ;;
voter)
    "$BIN" bench voter -p "$PORT" -n 20000 -q --partitions 16 >/dev/null
    OPS=20000 ;;
*) echo "unknown workload $WORKLOAD" >&2; exit 2 ;;
esac
callgrind_control -d "$PID" >/dev/null 2>&1
kill "$PID"
wait "$PID" 2>/dev/null || true
total=$(callgrind_annotate "$OUT".1 2>/dev/null | awk '/PROGRAM TOTALS/ && !n++ { gsub(",", "", $1); print $1 }')
# The voter's final check (FCALL_RO results) reads every table once: not part of a vote.
extra=0
if [ "$WORKLOAD" = voter ]; then
    extra=$(callgrind_annotate --inclusive=yes "$OUT".1 2>/dev/null | awk '/commands::scripting::fcall_ro \[/ && !n++ { gsub(",", "", $1); print $1 }')
fi
note=""
[ "$extra" = 0 ] || note=", leaving out the final check's $extra"
echo "instructions in table::execute: $total over $OPS operations ($(((total - extra) / OPS)) per operation$note); profile: $OUT.1"
