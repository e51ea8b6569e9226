#!/usr/bin/env bash
# Two server binaries (or two option sets) side by side under redis-benchmark, rounds
# alternating between them: throughput, the workers' CPU per request (from /proc, the
# figure this machine's noise moves least) and p99, as medians over the rounds. Made to
# compare connection placements (`worker-placement`), for any A/B of the request path.
#
# usage: scripts/placement-ab.sh A_BINARY B_BINARY
# Environment:
#   ROUNDS=5
#   A_ARGS= B_ARGS=       extra `strata serve` options of each side
#   CONFIGS="16:50:set 16:50:get 1:50:set 1:50:get 16:4:set 16:2:get 1:8:get"
#                         pipeline:clients:test, each a redis-benchmark run of N16
#                         requests at -P 16, N1 at -P 1, over 1M random keys
#   N16=2000000 N1=400000 PORT=7821
#   OUT=target/placement-ab.csv   the raw rows (round,side,test,pipeline,clients,ticks,
#                         then redis-benchmark's --csv line)
set -euo pipefail
cd "$(dirname "$0")/.."

A=${1:?A binary}
B=${2:?B binary}
ROUNDS=${ROUNDS:-5}
CONFIGS=${CONFIGS:-16:50:set 16:50:get 1:50:set 1:50:get 16:4:set 16:2:get 1:8:get}
N16=${N16:-2000000}
N1=${N1:-400000}
PORT=${PORT:-7821}
OUT=${OUT:-target/placement-ab.csv}
mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d)
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT

# CPU ticks of the server's worker threads.
ticks() {
    local s=0 t
    for t in /proc/"$1"/task/*; do
        case "$(cat "$t/comm")" in
        strata-worker*) s=$((s + $(awk '{print $14 + $15}' "$t/stat"))) ;;
        esac
    done
    echo "$s"
}

: >"$OUT"
for r in $(seq "$ROUNDS"); do
    for side in A B; do
        bin=$A args=${A_ARGS:-}
        [ "$side" = B ] && bin=$B args=${B_ARGS:-}
        rm -rf "$WORK/data"
        # shellcheck disable=SC2086
        "$bin" serve --port "$PORT" --dir "$WORK/data" --appendonly no --save '' $args \
            >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 100); do
            redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
            sleep 0.05
        done
        for cfg in $CONFIGS; do
            IFS=: read -r p c t <<<"$cfg"
            n=$N1
            [ "$p" != 1 ] && n=$N16
            t0=$(ticks "$pid")
            line=$(redis-benchmark -p "$PORT" -t "$t" -n "$n" -r 1000000 -P "$p" -c "$c" \
                --csv 2>/dev/null | tail -1)
            echo "$r,$side,$t,$p,$c,$(($(ticks "$pid") - t0)),$line" >>"$OUT"
        done
        redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
        wait "$pid" 2>/dev/null || true
    done
done

python3 - "$OUT" "$N16" "$N1" "$(getconf CLK_TCK)" <<'PY'
import csv, statistics, sys
out, n16, n1, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
runs = {}
for r in csv.reader(open(out)):
    side, test, p, c, ticks = r[1], r[2], r[3], r[4], int(r[5])
    n = n1 if p == "1" else n16
    runs.setdefault((test, p, c), {}).setdefault(side, []).append(
        (float(r[7]), ticks / hz / n * 1e6, float(r[12])))
print("| test | -P | clients | A ops/s | B ops/s | B / A | A / B CPU µs per request | A / B p99 ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for (test, p, c), sides in runs.items():
    med = {s: [statistics.median(x[i] for x in v) for i in range(3)] for s, v in sides.items()}
    a, b = med["A"], med["B"]
    print(f"| {test.upper()} | {p} | {c} | {a[0]:,.0f} | {b[0]:,.0f} | {b[0] / a[0]:.2f} "
          f"| {a[1]:.2f} / {b[1]:.2f} | {a[2]:.2f} / {b[2]:.2f} |")
PY
