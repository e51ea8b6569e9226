#!/usr/bin/env bash
# Is `strata bench` a load generator as good as redis-benchmark? (issue 3: "against Redis,
# `strata bench kv` with the same clients and pipeline reaches >= 0.95x the throughput
# redis-benchmark reports in the same run (interleaved), and its p50 is within 15% of
# redis-benchmark's".)
#
# One redis-server; for each pipeline depth, in each round, both tools in turn, the order
# alternating between rounds (A B, B A, A B, ...):
#   A  redis-benchmark -t get,set -n N -r 100000 -c 50 -P {1,16} --csv
#   B  strata bench kv --ops set,get -n N --keys random:100000 -c 50 -P {1,16} -d 3 --threads 1
# (redis-benchmark runs SET before GET whatever the order of -t; -d 3 and one thread are
# redis-benchmark's defaults, the same key names key:NNNNNNNNNNNN.)
#
# Prints a markdown table: each tool's best throughput over the rounds (noise on a shared
# machine only slows a run down), the ratio, each tool's best (lowest) p50 for the same
# reason, the ratio, and the median over rounds of the same-round p50 ratio.
#
# Environment:
#   ROUNDS=5           rounds (>= 3 for figures you quote)
#   N1=200000          requests per test at -P 1
#   N16=1000000        requests per test at -P 16
#   PORT=6391          the redis-server's port (started and stopped by this script)
#   STRATA=target/release/strata   the binary (built with cargo build --release unless NO_BUILD=1)
#   OUT=target/bench-client-vs-redis-benchmark.md   the table (also printed); raw rows in .csv
set -euo pipefail

cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
N1=${N1:-200000}
N16=${N16:-1000000}
PORT=${PORT:-6391}
STRATA=${STRATA:-target/release/strata}
OUT=${OUT:-target/bench-client-vs-redis-benchmark.md}
RAW=${OUT%.md}.csv
CLIENTS=50
KEYSPACE=100000

if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -p strata >&2
fi
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not found" >&2; exit 1; }

mkdir -p "$(dirname "$OUT")"
DIR=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no --logfile "$DIR/redis.log" &
REDIS_PID=$!
cleanup() {
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
for _ in $(seq 100); do
    redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
done
redis-cli -p "$PORT" ping >/dev/null

# Raw rows: tool,pipeline,round,op,ops_per_sec,p50_ms
echo "tool,pipeline,round,op,ops_per_sec,p50_ms" >"$RAW"

run_rb() { # pipeline round
    local p=$1 r=$2 n=$N1
    [ "$p" -gt 1 ] && n=$N16
    redis-benchmark -p "$PORT" -t get,set -n "$n" -r "$KEYSPACE" -c "$CLIENTS" -P "$p" --csv |
        tr -d '"' | awk -F, -v p="$p" -v r="$r" \
        '$1=="SET"||$1=="GET" { printf "redis-benchmark,%s,%s,%s,%s,%s\n", p, r, $1, $2, $5 }' >>"$RAW"
}

run_sb() { # pipeline round
    local p=$1 r=$2 n=$N1
    [ "$p" -gt 1 ] && n=$N16
    "$STRATA" bench kv -p "$PORT" --ops set,get -n "$n" --keys "random:$KEYSPACE" \
        -c "$CLIENTS" -P "$p" -d 3 --threads 1 -q --csv - 2>/dev/null |
        awk -F, -v p="$p" -v r="$r" \
        '$4=="SET"||$4=="GET" { printf "strata-bench,%s,%s,%s,%s,%.3f\n", p, r, $4, $8, $10/1000 }' >>"$RAW"
}

START=$(date +%s)
for r in $(seq "$ROUNDS"); do
    for p in 1 16; do
        if [ $((r % 2)) -eq 1 ]; then
            run_rb "$p" "$r"
            run_sb "$p" "$r"
        else
            run_sb "$p" "$r"
            run_rb "$p" "$r"
        fi
    done
    echo "round $r/$ROUNDS done ($(($(date +%s) - START)) s)" >&2
done

python3 - "$RAW" <<'PY' | tee "$OUT"
import csv, statistics, sys

rows = list(csv.DictReader(open(sys.argv[1])))
print("| -P | test | redis-benchmark ops/s | strata bench ops/s | ratio "
      "| redis-benchmark p50 ms | strata bench p50 ms | ratio | median same-round p50 ratio |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for p in sorted({int(r["pipeline"]) for r in rows}):
    for op in ("SET", "GET"):
        sel = [r for r in rows if int(r["pipeline"]) == p and r["op"] == op]
        a = [r for r in sel if r["tool"] == "redis-benchmark"]
        b = [r for r in sel if r["tool"] == "strata-bench"]
        if not a or not b:
            continue
        ta = max(float(r["ops_per_sec"]) for r in a)
        tb = max(float(r["ops_per_sec"]) for r in b)
        la = min(float(r["p50_ms"]) for r in a)
        lb = min(float(r["p50_ms"]) for r in b)
        pa = {r["round"]: float(r["p50_ms"]) for r in a}
        pb = {r["round"]: float(r["p50_ms"]) for r in b}
        same = [pb[k] / pa[k] for k in pa if k in pb and pa[k] > 0]
        print(f"| {p} | {op} | {ta:.0f} | {tb:.0f} | {tb / ta:.2f} | {la:.3f} | {lb:.3f} "
              f"| {lb / la:.2f} | {statistics.median(same):.2f} |")
PY
echo >&2
echo "$ROUNDS rounds in $(($(date +%s) - START)) s; raw rows in $RAW" >&2
