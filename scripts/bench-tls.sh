#!/usr/bin/env bash
# TLS and plain-path benchmarks, interleaved as docs/benchmarks.md ("How we compare") says:
# each round runs every side once, in alternating order; each side's best round for
# throughput, each server's least CPU time (utime+stime, all threads) per request.
#
# usage: scripts/bench-tls.sh tls     Strata's TLS port against Redis's (Debian's redis-server
#                                     is built with TLS), both started with --port 0
#                                     --tls-port P and the same certificates, mutual TLS on
#        scripts/bench-tls.sh ab      two Strata builds on the plain port: A=$A_BIN, B=$B_BIN
#
# Each side: redis-benchmark -t set (then get) -n $N -r 100000 -c 50 -P 1 and -P 16.
#
# Environment:
#   ROUNDS=5  N=300000
#   STRATA_BIN=target/release/strata   (tls mode)
#   A_BIN= B_BIN=                      (ab mode: the builds compared, both required)
#   OUT=target/bench-tls.md            the table (also printed); raw rounds in .csv
set -euo pipefail

cd "$(dirname "$0")/.."
MODE=${1:-}
ROUNDS=${ROUNDS:-5}
N=${N:-300000}
STRATA_BIN=${STRATA_BIN:-target/release/strata}
OUT=${OUT:-target/bench-tls.md}
RAW="${OUT%.md}.csv"
CLK_TCK=$(getconf CLK_TCK)

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
require_redis_tools redis-server
command -v openssl >/dev/null || { echo "openssl is required (Debian: openssl)" >&2; exit 1; }
bench_workdir bench-tls

case "$MODE" in
tls) SIDES=(strata redis) ;;
ab)
    [ -x "${A_BIN:-}" ] && [ -x "${B_BIN:-}" ] || { echo "ab needs A_BIN and B_BIN" >&2; exit 2; }
    SIDES=(A B)
    ;;
*) echo "usage: $0 tls|ab" >&2; exit 2 ;;
esac

# A CA and v3 server and client certificates, as any TLS deployment has.
make_certs() {
    local d=$WORK/tls
    mkdir -p "$d"
    openssl req -x509 -new -nodes -newkey rsa:2048 -sha256 -days 2 -subj "/CN=bench CA" \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    printf '[s]\nkeyUsage=digitalSignature,keyEncipherment\nsubjectAltName=IP:127.0.0.1\n' >"$d/ext.cnf"
    local n
    for n in server client; do
        openssl req -new -nodes -newkey rsa:2048 -sha256 -subj "/CN=$n" \
            -keyout "$d/$n.key" -out "$d/$n.csr" 2>/dev/null
        openssl x509 -req -sha256 -days 2 -in "$d/$n.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
            -CAcreateserial -extfile "$d/ext.cnf" -extensions s -out "$d/$n.crt" 2>/dev/null
    done
    SERVER_TLS=(--tls-cert-file "$d/server.crt" --tls-key-file "$d/server.key"
        --tls-ca-cert-file "$d/ca.crt")
    CLIENT_TLS=(--tls --cacert "$d/ca.crt" --cert "$d/client.crt" --key "$d/client.key")
}

CLIENT_TLS=()
[ "$MODE" = tls ] && make_certs

# start SIDE -> PID, PORT
start() {
    local side=$1 dir
    PORT=$(free_port)
    dir=$(mktemp -d "$WORK/data.XXXXXX")
    case "$side" in
    strata) set -- "$STRATA_BIN" serve --port 0 --tls-port "$PORT" "${SERVER_TLS[@]}" --dir "$dir" ;;
    redis) set -- redis-server --port 0 --tls-port "$PORT" "${SERVER_TLS[@]}" --dir "$dir" ;;
    A) set -- "$A_BIN" serve --port "$PORT" --dir "$dir" ;;
    B) set -- "$B_BIN" serve --port "$PORT" --dir "$dir" ;;
    esac
    ("$@" --bind 127.0.0.1 --save '' --appendonly no >"$WORK/$side.log" 2>&1) &
    PID=$!
    PIDS+=("$PID")
    local i
    for i in $(seq 200); do
        [ "$(redis-cli "${CLIENT_TLS[@]}" -p "$PORT" PING 2>/dev/null)" = PONG ] && return
        sleep 0.05
    done
    log "$side did not start: $(cat "$WORK/$side.log")"
    exit 1
}

echo "round,side,test,pipeline,rps,cpu_ticks,requests" >"$RAW"
for round in $(seq "$ROUNDS"); do
    order=("${SIDES[@]}")
    [ $((round % 2)) = 0 ] && order=("${SIDES[1]}" "${SIDES[0]}")
    for side in "${order[@]}"; do
        start "$side"
        for p in 1 16; do
            for t in set get; do
                before=$(cpu_ticks "$PID")
                rps=$(redis-benchmark "${CLIENT_TLS[@]}" -p "$PORT" -t "$t" -n "$N" \
                    -r 100000 -c 50 -P "$p" --csv 2>/dev/null |
                    awk -F, 'NR > 1 { gsub(/"/, ""); print $2 }' | tail -1)
                after=$(cpu_ticks "$PID")
                log "round $round $side $t -P $p: $rps req/s, $((after - before)) ticks"
                echo "$round,$side,$t,$p,$rps,$((after - before)),$N" >>"$RAW"
            done
        done
        kill "$PID"
        wait "$PID" 2>/dev/null || true
    done
done

# Best round per side and test; least CPU per request; the ratio first side / second.
awk -F, -v a="${SIDES[0]}" -v b="${SIDES[1]}" -v hz="$CLK_TCK" '
    NR > 1 {
        k = $3 " -P " $4; tests[k] = 1
        if ($5 > best[$2, k]) best[$2, k] = $5
        us = $6 / hz * 1e6 / $7
        if (!(($2, k) in cpu) || us < cpu[$2, k]) cpu[$2, k] = us
    }
    END {
        printf "| test | %s req/s | %s req/s | %s / %s | CPU µs per request, %s / %s |\n", a, b, a, b, a, b
        print "| --- | ---: | ---: | ---: | ---: |"
        n = split("set -P 1,get -P 1,set -P 16,get -P 16", order, ",")
        for (i = 1; i <= n; i++) {
            k = order[i]
            printf "| %s | %.0f | %.0f | %.2f | %.1f / %.1f = %.2f |\n", toupper(k), best[a, k], best[b, k],
                best[a, k] / best[b, k], cpu[a, k], cpu[b, k], cpu[a, k] / cpu[b, k]
        }
    }' "$RAW" | tee "$OUT"
