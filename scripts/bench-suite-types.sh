#!/usr/bin/env bash
# Streams, geo and client tracking: Strata against Redis in the same run, both without
# persistence, with redis-benchmark (the same client for both), interleaved (A B, B A, ...)
# for ROUNDS rounds. Throughput is each side's best round, with the median of the
# same-round ratios beside it; CPU is each server's least utime+stime (all threads) per
# million requests.
#
# usage: scripts/bench-suite-types.sh [streams|geo|tracking]...    (default: all three)
#
#   streams   at -P 1 and -P 16, -c 50:
#             XADD stream:xadd * a <rand> b 42 c ok            (the stream emptied before each run)
#             XRANGE stream:mem - + COUNT 10, and COUNT 100    (stream:mem holds ENTRIES entries)
#             XREADGROUP GROUP g c1 COUNT 1 STREAMS stream:group >   then, as the next run,
#             XACK stream:group g 1-<rand> with -r as many as the XREADGROUP run read: the
#               entries are 1-0, 1-1, ... so these are IDs of the entries just read (random
#               ones, as redis-benchmark has no counter: about 63% are still pending and
#               acked, the rest were acked already and XACK answers 0). The group is made
#               anew before each XREADGROUP run. The pair's rate is 1 / (1/read + 1/ack).
#             memory: ENTRIES x `XADD stream:mem * a <i> b <i % 100> c ok` through
#               redis-cli --pipe into a fresh pair: growth of INFO used_memory (both count
#               jemalloc's size classes of what is allocated) and of VmRSS
#   geo       POINTS random points (lon -10..30, lat 35..60) GEOADDed to geo:points through
#             redis-cli --pipe (memory growth reported as above), then at -P 1 and -P 16:
#             GEOADD geo:add 1.<rand> 50.<rand> m:<rand>, -r POINTS (emptied before each run)
#             GEOSEARCH geo:points FROMLONLAT 1.<rand> 50.<rand> BYRADIUS RADIUS_KM km
#               COUNT GEO_COUNT ASC   (the report says how many points lie within the radius)
#   tracking  TRACK_KEYS keys of 64 bytes loaded, then GET key:<rand> -r TRACK_KEYS in
#             RESP3 (-3) with and without --enable-tracking (CLIENT TRACKING on on every
#             connection), at -P 1 and -P 16; no writes, so no invalidations are sent
#
# Environment:
#   ROUNDS=3          rounds per test (each round runs both servers once, order alternating)
#   N1=300000         requests per -P 1 run (a quarter of it for XRANGE COUNT 100)
#   N16=1000000       requests per -P 16 run (the same)
#   ENTRIES=1000000   stream entries for the memory figure and XRANGE's stream
#   POINTS=1000000    geo points
#   RADIUS_KM=10 GEO_COUNT=20
#   TRACK_KEYS=100000
#   OUT=target/bench-suite-types.md   the markdown table (also printed); every run's raw
#                     figures go to the same name with .csv
#   REDIS_CMD="redis-server"                 the peer
#   STRATA_CMD="target/release/strata serve" the server under test (`--port N --appendonly no
#                     --save "" --dir <fresh dir>` appended)
#   STRATA_ARGS=      extra arguments for Strata
#   NO_BUILD=1        do not run cargo build --release first
# Quick check of the script: N1=5000 N16=20000 ENTRIES=20000 POINTS=20000 ROUNDS=1 \
#   scripts/bench-suite-types.sh
set -euo pipefail

cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
N1=${N1:-300000}
N16=${N16:-1000000}
ENTRIES=${ENTRIES:-1000000}
POINTS=${POINTS:-1000000}
RADIUS_KM=${RADIUS_KM:-10}
GEO_COUNT=${GEO_COUNT:-20}
TRACK_KEYS=${TRACK_KEYS:-100000}
OUT=${OUT:-target/bench-suite-types.md}
CLK_TCK=$(getconf CLK_TCK)

SUITES=("$@")
[ ${#SUITES[@]} -eq 0 ] && SUITES=(streams geo tracking)
for s in "${SUITES[@]}"; do
    case "$s" in
    streams | geo | tracking) ;;
    *)
        echo "unknown suite '$s' (choose from streams geo tracking)" >&2
        exit 2
        ;;
    esac
done
for v in ROUNDS N1 N16 ENTRIES POINTS RADIUS_KM GEO_COUNT TRACK_KEYS; do
    case "${!v}" in '' | *[!0-9]* | 0)
        echo "$v must be a positive integer" >&2
        exit 2
        ;;
    esac
done

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
require_redis_tools "$REDIS_CMD"

if [ "$STRATA_CMD" = "$DEFAULT_STRATA" ] && [ -z "${NO_BUILD:-}" ]; then
    log "building strata (release)..."
    cargo build --release -p strata >&2
fi

bench_workdir bench-suite-types

RAW="${OUT%.md}.csv"
mkdir -p "$(dirname "$OUT")" "$(dirname "$RAW")"
echo "suite,test,pipeline,round,server,requests,rps,p99_ms,cpu_ticks,clk_tck,error,client_cpu_s,client_wall_s" >"$RAW"
MEMRAW=$WORK/mem.csv
: >"$MEMRAW"

# to_resp: each input line's space-separated words as one RESP command (for redis-cli --pipe).
to_resp() {
    awk '{ printf "*%d\r\n", NF; for (i = 1; i <= NF; i++) printf "$%d\r\n%s\r\n", length($i), $i }'
}

# load NAME PORT PID FILE LABEL: pipes FILE into the server; records the growth of
# used_memory and VmRSS under LABEL.
load() {
    local name=$1 port=$2 pid=$3 file=$4 label=$5 used0 rss0 used1 rss1 out
    used0=$(used_memory "$port")
    rss0=$(rss_kb "$pid")
    out=$(redis-cli -p "$port" --pipe <"$file" 2>&1 | tail -n 1 | tr ',' ' ')
    case "$out" in *"errors: 0"*) ;; *)
        log "loading $label into $name failed: $out"
        exit 1
        ;;
    esac
    sleep 1
    used1=$(used_memory "$port")
    rss1=$(rss_kb "$pid")
    log "  $label $name: used_memory +$(((used1 - used0) / 1024)) kB, VmRSS +$((rss1 - rss0)) kB ($out)"
    echo "$label,$name,$((used1 - used0)),$(((rss1 - rss0) * 1024))" >>"$MEMRAW"
}

used_memory() {
    redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}

# cli PORT ARGS...: a setup command whose reply must not be an error.
cli() {
    local port=$1 out
    shift
    out=$(redis-cli -p "$port" "$@" 2>&1)
    case "$out" in ERR* | WRONGTYPE* | NOGROUP* | *"Could not connect"*)
        log "setup command failed on port $port: $* -> $out"
        exit 1
        ;;
    esac
}

# run SUITE TEST PIPELINE ROUND NAME ARGS...: setup for TEST, one redis-benchmark run, one row.
run() {
    local suite=$1 test=$2 p=$3 round=$4 name=$5 port pid n
    shift 5
    if [ "$name" = redis ]; then port=$REDIS_PORT pid=$REDIS_PID; else port=$STRATA_PORT pid=$STRATA_PID; fi
    n=$(requests "$test" "$p")
    case "$test" in
    xadd) cli "$port" del stream:xadd ;;
    xreadgroup)
        cli "$port" xgroup destroy stream:group g
        cli "$port" xgroup create stream:group g 0
        ;;
    geoadd) cli "$port" del geo:add ;;
    esac
    rb_run "$port" "$pid" "$n" -c 50 -P "$p" "$@"
    if [ -n "$RB_ERR" ]; then
        log "  $test -P $p round $round $name: ERROR $RB_ERR"
    else
        log "  $test -P $p round $round $name: $RB_RPS req/s, p99 $RB_P99 ms, $RB_TICKS ticks, client ${RB_CLIENT}s of ${RB_WALL}s"
    fi
    echo "$suite,$test,$p,$round,$name,$n,$RB_RPS,$RB_P99,$RB_TICKS,$CLK_TCK,$RB_ERR,$RB_CLIENT,$RB_WALL" >>"$RAW"
}

# requests TEST PIPELINE: N1 or N16, a quarter of it for XRANGE COUNT 100 (each reply
# carries 100 entries: the run takes as long as the others).
requests() {
    local n
    if [ "$2" = 1 ]; then n=$N1; else n=$N16; fi
    if [ "$1" = xrange100 ]; then n=$((n / 4)); fi
    echo "$n"
}

# test_args TEST PIPELINE: the redis-benchmark arguments of TEST (after -n -c -P).
test_args() {
    local n
    n=$(requests "$1" "$2")
    case "$1" in
    xadd) echo "-r 1000000 XADD stream:xadd * a __rand_int__ b 42 c ok" ;;
    xrange10) echo "XRANGE stream:mem - + COUNT 10" ;;
    xrange100) echo "XRANGE stream:mem - + COUNT 100" ;;
    xreadgroup) echo "XREADGROUP GROUP g c1 COUNT 1 STREAMS stream:group >" ;;
    xack) echo "-r $n XACK stream:group g 1-__rand_int__" ;;
    geoadd) echo "-r $POINTS GEOADD geo:add 1.__rand_int__ 50.__rand_int__ m:__rand_int__" ;;
    geosearch) echo "-r 1000000 GEOSEARCH geo:points FROMLONLAT 1.__rand_int__ 50.__rand_int__ BYRADIUS $RADIUS_KM km COUNT $GEO_COUNT ASC" ;;
    get) echo "-3 -r $TRACK_KEYS GET key:__rand_int__" ;;
    get_tracking) echo "-3 --enable-tracking -r $TRACK_KEYS GET key:__rand_int__" ;;
    esac
}

# rounds SUITE GROUP...: each group (tests run back to back on one server, e.g.
# "xreadgroup xack") at -P 1 and -P 16, ROUNDS times, the server order alternating.
rounds() {
    local suite=$1 round i p group first second name t
    shift
    local -a args
    for round in $(seq 1 "$ROUNDS"); do
        i=0
        for p in 1 16; do
            for group in "$@"; do
                if [ $(((round + i) % 2)) = 1 ]; then first=redis second=strata; else first=strata second=redis; fi
                for name in $first $second; do
                    for t in $group; do
                        read -r -a args <<<"$(test_args "$t" "$p")"
                        run "$suite" "$t" "$p" "$round" "$name" "${args[@]}"
                    done
                done
                i=$((i + 1))
            done
        done
    done
}

streams_suite() {
    local n_group=$((N1 > N16 ? N1 : N16)) name
    log "== streams: $ENTRIES entries loaded, then $ROUNDS rounds"
    awk -v n="$ENTRIES" 'BEGIN { for (i = 0; i < n; i++) print "XADD stream:mem * a " i " b " i % 100 " c ok" }' |
        to_resp >"$WORK/mem.resp"
    awk -v n="$n_group" 'BEGIN { for (i = 0; i < n; i++) print "XADD stream:group 1-" i " a " i " b " i % 100 " c ok" }' |
        to_resp >"$WORK/group.resp"
    start_pair
    for name in redis strata; do
        if [ $name = redis ]; then
            load redis "$REDIS_PORT" "$REDIS_PID" "$WORK/mem.resp" "stream entries"
            load redis "$REDIS_PORT" "$REDIS_PID" "$WORK/group.resp" group
        else
            load strata "$STRATA_PORT" "$STRATA_PID" "$WORK/mem.resp" "stream entries"
            load strata "$STRATA_PORT" "$STRATA_PID" "$WORK/group.resp" group
        fi
    done
    rounds streams xadd xrange10 xrange100 "xreadgroup xack"
    stop_pair
}

geo_suite() {
    log "== geo: $POINTS points loaded, then $ROUNDS rounds"
    awk -v n="$POINTS" 'BEGIN {
        srand(1)
        for (i = 0; i < n; i++) printf "GEOADD geo:points %.6f %.6f p:%d\n", -10 + rand() * 40, 35 + rand() * 25, i
    }' | to_resp >"$WORK/geo.resp"
    start_pair
    load redis "$REDIS_PORT" "$REDIS_PID" "$WORK/geo.resp" "geo points"
    load strata "$STRATA_PORT" "$STRATA_PID" "$WORK/geo.resp" "geo points"
    local r s
    r=$(redis-cli -p "$REDIS_PORT" geosearch geo:points fromlonlat 1.5 50.5 byradius "$RADIUS_KM" km asc | wc -l)
    s=$(redis-cli -p "$STRATA_PORT" geosearch geo:points fromlonlat 1.5 50.5 byradius "$RADIUS_KM" km asc | wc -l)
    log "  points within $RADIUS_KM km of (1.5, 50.5): Redis $r, Strata $s"
    [ "$r" = "$s" ] || {
        log "Strata and Redis disagree on the GEOSEARCH"
        exit 1
    }
    GEO_HITS=$r
    rounds geo geoadd geosearch
    stop_pair
}

tracking_suite() {
    log "== tracking: $TRACK_KEYS keys loaded, then $ROUNDS rounds"
    gen_keys "$TRACK_KEYS" >"$WORK/keys.resp"
    start_pair
    load redis "$REDIS_PORT" "$REDIS_PID" "$WORK/keys.resp" keys
    load strata "$STRATA_PORT" "$STRATA_PID" "$WORK/keys.resp" keys
    rounds tracking get get_tracking
    stop_pair
}

for s in "${SUITES[@]}"; do
    "${s}_suite"
done

# ---- the report
# goal TEST PIPELINE: the issue's goal for Strata / Redis ("" when it set none).
goal() {
    case "$1" in
    xadd | xrange10 | xrange100 | xreadgroup+xack) if [ "$2" = 1 ]; then echo 1.0; else echo 1.3; fi ;;
    geoadd | geosearch | get_tracking) echo 1.0 ;;
    esac
}
GOALS=$(for t in xadd xrange10 xrange100 xreadgroup+xack geoadd geosearch get_tracking; do
    for p in 1 16; do printf "%s,%s,%s;" "$t" "$p" "$(goal "$t" "$p")"; done
done)

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
if ! git diff --quiet HEAD 2>/dev/null; then rev="$rev+changes"; fi
redis_version=$(${REDIS_CMD%% *} --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
{
    echo "### Streams, geo and client tracking: Strata vs Redis $redis_version, $(date -u +%Y-%m-%d)"
    echo
    echo "Machine: ${cpu_model:-unknown CPU}, $(nproc) cores. Strata $rev (\`$STRATA_CMD${STRATA_ARGS:+ $STRATA_ARGS}\`) vs"
    echo "\`$REDIS_CMD --save '' --appendonly no\`, loopback, redis-benchmark -c 50 against each in turn,"
    echo "$ROUNDS round(s), order alternating. Made by: \`ROUNDS=$ROUNDS N1=$N1 N16=$N16 ENTRIES=$ENTRIES POINTS=$POINTS scripts/bench-suite-types.sh ${SUITES[*]}\`."
    echo "req/s: each side's best round; median: of the same-round ratios; CPU: each server's least"
    echo "utime+stime per million requests; client busy: redis-benchmark's CPU over wall time in the"
    echo "best round (near 1.00 the client set the pace)."
    echo
    echo "| test | -P | Redis req/s | Strata req/s | Strata / Redis | median of rounds | CPU per request, Strata / Redis | client busy, Redis / Strata | goal | met |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    awk -F, -v goals="$GOALS" '
        BEGIN {
            ng = split(goals, gl, ";")
            for (i = 1; i <= ng; i++) { split(gl[i], g, ","); goal[g[1], g[2]] = g[3] }
        }
        NR == 1 { next }
        {
            t = $2; p = $3; r = $4; s = $5
            key = t SUBSEP p
            if (!(key in seen)) { seen[key] = 1; order[++n] = key; tn[key] = t; pn[key] = p }
            if ($11 != "") { err[key, s] = 1; next }
            rps[key, r, s] = $7; ticks[key, r, s] = ($9 / $10) / $6 * 1000000
            busy[key, r, s] = $13 > 0 ? $12 / $13 : 0
            rounds[key, r] = 1; if (r > maxr) maxr = r
            # The XREADGROUP and XACK runs of a round make one pair row.
            if (t == "xack") {
                pk = "xreadgroup+xack" SUBSEP p
                if (!(pk in seen)) { seen[pk] = 1; pair[++np] = pk; tn[pk] = "xreadgroup+xack"; pn[pk] = p }
                rk = "xreadgroup" SUBSEP p
                if ((rk, r, s) in rps && rps[rk, r, s] > 0 && $7 > 0) {
                    rps[pk, r, s] = 1 / (1 / rps[rk, r, s] + 1 / $7)
                    ticks[pk, r, s] = ticks[rk, r, s] + ticks[key, r, s]
                    busy[pk, r, s] = (busy[rk, r, s] + busy[key, r, s]) / 2
                    rounds[pk, r] = 1
                }
            }
        }
        function median(a, k,   i, j, t) {
            for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        }
        function row(key,   r, br, bs, cr, cs, k, q, s, ratio, med, g, met, bur, bus) {
            br = 0; bs = 0; cr = ""; cs = ""; k = 0
            for (r = 1; r <= maxr; r++) {
                if (!((key, r) in rounds)) continue
                if ((key, r, "redis") in rps && rps[key, r, "redis"] > br) { br = rps[key, r, "redis"]; bur = busy[key, r, "redis"] }
                if ((key, r, "strata") in rps && rps[key, r, "strata"] > bs) { bs = rps[key, r, "strata"]; bus = busy[key, r, "strata"] }
                if ((key, r, "redis") in ticks && (cr == "" || ticks[key, r, "redis"] < cr)) cr = ticks[key, r, "redis"]
                if ((key, r, "strata") in ticks && (cs == "" || ticks[key, r, "strata"] < cs)) cs = ticks[key, r, "strata"]
                if (((key, r, "redis") in rps) && ((key, r, "strata") in rps) && rps[key, r, "redis"] > 0) q[++k] = rps[key, r, "strata"] / rps[key, r, "redis"]
            }
            if (br == 0 || bs == 0) {
                printf "| %s | %s | %s | %s | error | | | | | |\n", toupper(tn[key]), pn[key], br ? sprintf("%.0f", br) : "error", bs ? sprintf("%.0f", bs) : "error"
                return
            }
            ratio = bs / br; med = median(q, k)
            g = goal[tn[key], pn[key]]
            met = g == "" ? "" : (ratio >= g ? (med >= g ? "yes" : "best round only") : "no")
            printf "| %s | %s | %.0f | %.0f | %.2f | %.2f | %s | %.2f / %.2f | %s | %s |\n", toupper(tn[key]), pn[key], br, bs, ratio, med,
                (cr > 0 ? sprintf("%.2f", cs / cr) : "-"), bur, bus, (g == "" ? "" : ">= " g), met
        }
        END {
            for (i = 1; i <= n; i++) { row(order[i]); if (tn[order[i]] == "xack") for (j = 1; j <= np; j++) if (pn[pair[j]] == pn[order[i]]) row(pair[j]) }
        }' "$RAW"
    echo
    if awk -F, '$2 == "get_tracking" { f = 1 } END { exit !f }' "$RAW"; then
        echo "| GET with tracking on / off, same server | -P | Redis | Strata | goal (Strata) | met |"
        echo "| --- | ---: | ---: | ---: | ---: | --- |"
        awk -F, '
            NR > 1 && $11 == "" && ($2 == "get" || $2 == "get_tracking") {
                if ($7 > best[$2, $3, $5]) best[$2, $3, $5] = $7; ps[$3] = 1
            }
            END {
                for (p in ps) {
                    r = best["get", p, "redis"] ? best["get_tracking", p, "redis"] / best["get", p, "redis"] : 0
                    s = best["get", p, "strata"] ? best["get_tracking", p, "strata"] / best["get", p, "strata"] : 0
                    printf "| best rounds | %s | %.2f | %.2f | >= 0.9 | %s |\n", p, r, s, (s >= 0.9 ? "yes" : "no")
                }
            }' "$RAW" | sort -t'|' -k3n
        echo
    fi
    if [ -s "$MEMRAW" ]; then
        echo "| memory growth | Redis used_memory MiB | Strata used_memory MiB | Strata / Redis | Redis VmRSS MiB | Strata VmRSS MiB | Strata / Redis | goal (used_memory) | met |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        awk -F, '
            $1 == "stream entries" || $1 == "geo points" {
                if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
                used[$1, $2] = $3; rss[$1, $2] = $4
            }
            function mib(v) { return sprintf("%.1f", v / 1048576) }
            function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
            END {
                for (i = 1; i <= n; i++) {
                    k = order[i]
                    # The issue set a goal for streams only.
                    g = k == "stream entries" ? "<= 1.0" : ""
                    met = g == "" ? "" : (used[k, "redis"] > 0 && used[k, "strata"] <= used[k, "redis"] ? "yes" : "no")
                    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k, mib(used[k, "redis"]), mib(used[k, "strata"]),
                        ratio(used[k, "strata"], used[k, "redis"]), mib(rss[k, "redis"]), mib(rss[k, "strata"]),
                        ratio(rss[k, "strata"], rss[k, "redis"]), g, met
                }
            }' "$MEMRAW"
        echo
        echo "Stream entries: $ENTRIES x \`XADD stream:mem * a <i> b <i % 100> c ok\`; geo points: $POINTS x \`GEOADD geo:points <lon> <lat> p:<i>\`;"
        echo "each piped through \`redis-cli --pipe\` into a fresh server; growth of INFO used_memory and of VmRSS."
        if [ -n "${GEO_HITS:-}" ]; then
            echo "GEOSEARCH: $GEO_HITS points lie within $RADIUS_KM km of (1.5, 50.5), the middle of the searches' centres."
        fi
        echo
    fi
    echo "Commands (redis-benchmark -h 127.0.0.1 -p PORT -c 50 --csv, then):"
    echo
    for s in "${SUITES[@]}"; do
        case "$s" in
        streams) tests="xadd xrange10 xrange100 xreadgroup xack" ;;
        geo) tests="geoadd geosearch" ;;
        tracking) tests="get get_tracking" ;;
        esac
        for t in $tests; do
            echo "- $t: \`-n $(requests "$t" 1) -P 1 $(test_args "$t" 1)\`; \`-n $(requests "$t" 16) -P 16 $(test_args "$t" 16)\`"
        done
    done
} >"$OUT"

cat "$OUT"
log "written to $OUT (every run: $RAW)"
