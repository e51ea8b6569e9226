#!/usr/bin/env bash
# Strata vs Redis on this machine, interleaved, as docs/benchmarks.md ("How we compare")
# describes for a noisy machine: the same redis-benchmark run against each server in turn
# (A B B A A B ...) for ROUNDS rounds; each side's best round for throughput and p99, each
# server's least CPU time (utime+stime of the whole process, all threads) per million
# requests for efficiency.
#
# usage: scripts/bench-vs-redis.sh [p1|p16|1k|100k|mem|all]...     (default: all)
#
#   p1    redis-benchmark -t set,get,incr -n 2000000 -r 1000000 -c 50 -P 1
#   p16   the same with -P 16
#   1k    redis-benchmark -t set,get -d 1024 -r 100000 -n 1000000 -c 50
#   100k  redis-benchmark -t set,get -d 102400 -r 1000 -n 20000 -c 50
#   mem   SET key:<i> <64 bytes> for i in 1..1000000 through redis-cli --pipe, then VmRSS
#   t1    redis-benchmark -t lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,
#         lrange_600,mset -n 1000000 -r 1000000 -c 50 -P 1    (the collection types, issue 4)
#   t16   the same with -P 16
#   e1    redis-benchmark -n 300000 -r 100000 -c 50 -P 1 evalsha <sha> 1 key:__rand_int__, the
#         script `local v = redis.call("get", KEYS[1]); redis.call("set", KEYS[1],
#         (tonumber(v) or 0) + 1); return v` (issue 6)
#   e16   the same with -P 16
#   typesmem  memory of a 1M-element hash, set, sorted set and list, and of 1M small hashes
#         of 10 fields, each loaded through redis-cli --pipe into a fresh server pair: growth
#         of VmRSS, of its anonymous part (RssAnon: the data; RssFile is the binary's code
#         paged in on first use), and VmRSS after the load
#
# Environment:
#   ROUNDS=5          rounds per test (each round runs both servers once)
#   N=                request count for every suite (and key count for mem), for quick runs:
#                     N=20000 ROUNDS=1 scripts/bench-vs-redis.sh p1
#   MEM_KEYS=1000000  keys loaded by the mem suite (N overrides it too)
#   OUT=target/bench-vs-redis.md   where the markdown table is written (also printed);
#                     every round's raw figures go to the same name with .csv
#   REDIS_CMD="redis-server"                 the peer
#   STRATA_CMD="target/release/strata serve" the server under test; `--port N --appendonly no
#                     --save "" --dir <fresh temp dir>` is appended (as Redis is configured).
#                     Pointing it at redis-server checks this script with two identical
#                     servers: STRATA_CMD="redis-server --save '' --appendonly no --bind 127.0.0.1"
#   STRATA_ARGS=      extra arguments for Strata (e.g. "--threads 2")
#   NO_BUILD=1        do not run cargo build --release first
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

ROUNDS=${ROUNDS:-5}
N=${N:-}
MEM_KEYS=${MEM_KEYS:-${N:-1000000}}
OUT=${OUT:-target/bench-vs-redis.md}
CLK_TCK=$(getconf CLK_TCK)

SUITES=("$@")
[ ${#SUITES[@]} -eq 0 ] && SUITES=(all)
if [ "${SUITES[*]}" = all ]; then SUITES=(p1 p16 1k 100k mem t1 t16 e1 e16 typesmem); fi
for s in "${SUITES[@]}"; do
    case "$s" in
    p1 | p16 | 1k | 100k | mem | t1 | t16 | e1 | e16 | typesmem) ;;
    *)
        echo "unknown suite '$s' (choose from p1 p16 1k 100k mem t1 t16 e1 e16 typesmem all)" >&2
        exit 2
        ;;
    esac
done
case "$ROUNDS" in '' | *[!0-9]* | 0)
    echo "ROUNDS must be a positive integer" >&2
    exit 2
    ;;
esac

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh  # (the script has cd-ed to the repository root)
require_redis_tools "$REDIS_CMD"

if [ "$STRATA_CMD" = "$DEFAULT_STRATA" ] && [ -z "${NO_BUILD:-}" ]; then
    echo "building strata (release)..." >&2
    cargo build --release -p strata >&2
fi

bench_workdir bench-vs-redis

RAW="${OUT%.md}.csv"
mkdir -p "$(dirname "$OUT")" "$(dirname "$RAW")"
echo "suite,test,round,server,requests,rps,p99_ms,cpu_ticks,clk_tck,rss_kb,error,client_cpu_s,client_wall_s" >"$RAW"

# run_one SUITE TEST ROUND NAME PORT PID REQUESTS ARGS... : one redis-benchmark run, one row.
run_one() {
    local suite=$1 test=$2 round=$3 name=$4 port=$5 pid=$6 n=$7
    shift 7
    local what=(-t "$test")
    # The script test is a command line, not a -t test (the suite loaded the script).
    [ "$test" = evalsha ] && what=(evalsha "$EVAL_SHA" 1 "key:__rand_int__")
    # For an LRANGE test the server's and the client's CPU figures include the LPUSHes that
    # fill its list first: no figure of one process can leave them out.
    rb_run "$port" "$pid" "$n" "$@" "${what[@]}"
    if [ -n "$RB_ERR" ]; then
        log "  $suite/$test round $round $name: ERROR $RB_ERR"
    else
        log "  $suite/$test round $round $name: $RB_RPS req/s, p99 $RB_P99 ms, $RB_TICKS ticks, client ${RB_CLIENT}s of ${RB_WALL}s"
    fi
    echo "$suite,$test,$round,$name,$n,$RB_RPS,$RB_P99,$RB_TICKS,$CLK_TCK,,$RB_ERR,$RB_CLIENT,$RB_WALL" >>"$RAW"
}

# run_suite SUITE TESTS REQUESTS ARGS...
run_suite() {
    local suite=$1 tests=$2 n=$3
    shift 3
    log "== $suite: redis-benchmark -t $tests -n $n $* ($ROUNDS rounds)"
    start_pair
    if [ "$tests" = evalsha ]; then
        EVAL_SHA=$(redis-cli -p "$REDIS_PORT" script load "$EVAL_SCRIPT")
        [ "$(redis-cli -p "$STRATA_PORT" script load "$EVAL_SCRIPT")" = "$EVAL_SHA" ] || {
            log "Strata and Redis disagree on the script's SHA1"
            exit 1
        }
    fi
    local round t i
    for round in $(seq 1 "$ROUNDS"); do
        i=0
        for t in ${tests//,/ }; do
            # Each test alternates A B, B A, A B ... from round to round, so neither side
            # always runs first (or always right after the other's load).
            if [ $(((round + i) % 2)) = 1 ]; then
                run_one "$suite" "$t" "$round" redis "$REDIS_PORT" "$REDIS_PID" "$n" "$@"
                run_one "$suite" "$t" "$round" strata "$STRATA_PORT" "$STRATA_PID" "$n" "$@"
            else
                run_one "$suite" "$t" "$round" strata "$STRATA_PORT" "$STRATA_PID" "$n" "$@"
                run_one "$suite" "$t" "$round" redis "$REDIS_PORT" "$REDIS_PID" "$n" "$@"
            fi
            i=$((i + 1))
        done
    done
    stop_pair
}

# RESP for SET key:<i> <64 bytes>, i = 1..keys.
gen_keys() {
    awk -v n="$1" 'BEGIN {
        for (i = 1; i <= n; i++) {
            k = "key:" i
            v = sprintf("%064d", i)
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n", length(k), k, v
        }
    }'
}

mem_suite() {
    local keys=$MEM_KEYS name port pid base after out
    log "== mem: $keys keys of 64-byte values through redis-cli --pipe"
    gen_keys "$keys" >"$WORK/keys.resp"
    start_pair
    for name in redis strata; do
        if [ $name = redis ]; then port=$REDIS_PORT pid=$REDIS_PID; else port=$STRATA_PORT pid=$STRATA_PID; fi
        base=$(rss_kb "$pid")
        out=$(redis-cli -p "$port" --pipe <"$WORK/keys.resp" 2>&1 | tail -n 1 | tr ',' ' ')
        sleep 1
        after=$(rss_kb "$pid")
        log "  mem $name: VmRSS $base -> $after kB ($out)"
        local err=""
        case "$out" in *"errors: 0"*) ;; *) err="$out" ;; esac
        echo "mem,load,1,$name,$keys,,,,$CLK_TCK,$after,$err" >>"$RAW"
        echo "mem,empty,1,$name,0,,,,$CLK_TCK,$base," >>"$RAW"
    done
    stop_pair
}

EVAL_SCRIPT='local v = redis.call("get", KEYS[1]); redis.call("set", KEYS[1], (tonumber(v) or 0) + 1); return v'
TYPE_TESTS=lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_600,mset

# RESP for one structure of TYPES_N elements (or TYPES_N small hashes), for typesmem.
gen_type() {
    awk -v kind="$1" -v n="$2" '
        function cmd(a, k,   i, out) {
            out = "*" k "\r\n"
            for (i = 1; i <= k; i++) out = out "$" length(a[i]) "\r\n" a[i] "\r\n"
            printf "%s", out
        }
        BEGIN {
            for (i = 1; i <= n; i++) {
                if (kind == "hash") { a[1] = "HSET"; a[2] = "bighash"; a[3] = "field:" i; a[4] = "value:" i; cmd(a, 4) }
                else if (kind == "set") { a[1] = "SADD"; a[2] = "bigset"; a[3] = "member:" i; cmd(a, 3) }
                else if (kind == "zset") { a[1] = "ZADD"; a[2] = "bigzset"; a[3] = i; a[4] = "member:" i; cmd(a, 4) }
                else if (kind == "list") { a[1] = "RPUSH"; a[2] = "biglist"; a[3] = "element:" i; cmd(a, 3) }
                else {
                    a[1] = "HSET"; a[2] = "h:" i
                    for (f = 1; f <= 10; f++) { a[1 + 2 * f] = "f" f; a[2 + 2 * f] = "v" i "_" f }
                    cmd(a, 22)
                }
            }
        }'
}

typesmem_suite() {
    local n=${TYPES_N:-1000000} kind name port pid base after out err
    log "== typesmem: $n elements per structure through redis-cli --pipe"
    for kind in hash set zset list smallhashes; do
        gen_type "$kind" "$n" >"$WORK/type.resp"
        start_pair
        for name in redis strata; do
            if [ $name = redis ]; then port=$REDIS_PORT pid=$REDIS_PID; else port=$STRATA_PORT pid=$STRATA_PID; fi
            base=$(rss_kb "$pid")
            anon=$(rss_kb "$pid" RssAnon)
            out=$(redis-cli -p "$port" --pipe <"$WORK/type.resp" 2>&1 | tail -n 1 | tr ',' ' ')
            sleep 1
            after=$(rss_kb "$pid")
            anon=$(($(rss_kb "$pid" RssAnon) - anon))
            err=""
            case "$out" in *"errors: 0"*) ;; *) err="$out" ;; esac
            log "  typesmem $kind $name: VmRSS $base -> $after kB, RssAnon +$anon kB ($out)"
            echo "typesmem,$kind,1,$name,$n,,,,$CLK_TCK,$((after - base)),$err" >>"$RAW"
            echo "typesanon,$kind,1,$name,$n,,,,$CLK_TCK,$anon,$err" >>"$RAW"
            echo "typesrss,$kind,1,$name,$n,,,,$CLK_TCK,$after,$err" >>"$RAW"
        done
        stop_pair
    done
}

for s in "${SUITES[@]}"; do
    case "$s" in
    t1) run_suite t1 "$TYPE_TESTS" "${N:-1000000}" -r 1000000 -c 50 -P 1 ;;
    t16) run_suite t16 "$TYPE_TESTS" "${N:-1000000}" -r 1000000 -c 50 -P 16 ;;
    e1) run_suite e1 evalsha "${N:-300000}" -r 100000 -c 50 -P 1 ;;
    e16) run_suite e16 evalsha "${N:-300000}" -r 100000 -c 50 -P 16 ;;
    typesmem) typesmem_suite ;;
    p1) run_suite p1 set,get,incr "${N:-2000000}" -r 1000000 -c 50 -P 1 ;;
    p16) run_suite p16 set,get,incr "${N:-2000000}" -r 1000000 -c 50 -P 16 ;;
    1k) run_suite 1k set,get "${N:-1000000}" -d 1024 -r 100000 -c 50 ;;
    100k) run_suite 100k set,get "${N:-20000}" -d 102400 -r 1000 -c 50 ;;
    mem) mem_suite ;;
    esac
done

# ---- the report
suite_cmd() {
    case "$1" in
    t1) echo "-t $TYPE_TESTS -n ${N:-1000000} -r 1000000 -c 50 -P 1" ;;
    t16) echo "-t $TYPE_TESTS -n ${N:-1000000} -r 1000000 -c 50 -P 16" ;;
    e1) echo "-n ${N:-300000} -r 100000 -c 50 -P 1 evalsha <sha> 1 key:__rand_int__" ;;
    e16) echo "-n ${N:-300000} -r 100000 -c 50 -P 16 evalsha <sha> 1 key:__rand_int__" ;;
    p1) echo "-t set,get,incr -n ${N:-2000000} -r 1000000 -c 50 -P 1" ;;
    p16) echo "-t set,get,incr -n ${N:-2000000} -r 1000000 -c 50 -P 16" ;;
    1k) echo "-t set,get -d 1024 -r 100000 -n ${N:-1000000} -c 50" ;;
    100k) echo "-t set,get -d 102400 -r 1000 -n ${N:-20000} -c 50" ;;
    esac
}

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
if ! git diff --quiet HEAD 2>/dev/null; then rev="$rev+changes"; fi
redis_version=$(${REDIS_CMD%% *} --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
{
    echo "### Strata vs Redis $redis_version, $(date -u +%Y-%m-%d)"
    echo
    echo "Machine: ${cpu_model:-unknown CPU}, $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)."
    echo "Strata $rev (\`$STRATA_CMD${STRATA_ARGS:+ $STRATA_ARGS}\`) vs \`$REDIS_CMD --save '' --appendonly no\`, both on loopback,"
    echo "measured in the same session, interleaved (A B B A ...), $ROUNDS round(s); redis-benchmark on the same machine."
    echo "Made by: \`ROUNDS=$ROUNDS${N:+ N=$N} scripts/bench-vs-redis.sh ${SUITES[*]}\`."
    echo "Throughput is each side's best round, p99 each side's lowest; CPU is the server process's least"
    echo "utime+stime (all threads) per million requests over one redis-benchmark run. Client CPU is"
    echo "redis-benchmark's own least utime+stime per request; client busy is its CPU over its wall time in"
    echo "each side's best round: near 1.00, the client was the bottleneck, not the server."
    echo
    if awk -F, 'NR > 1 && $1 != "mem" && $1 !~ /^types/ { found = 1 } END { exit !found }' "$RAW"; then
        echo "| suite | test | Redis req/s | Strata req/s | Strata/Redis | Redis p99 ms | Strata p99 ms | Redis CPU s/1M req | Strata CPU s/1M req | CPU Strata/Redis | client CPU µs/req, Redis / Strata | client busy, Redis / Strata |"
        echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        awk -F, '
            NR == 1 || $1 == "mem" || $1 ~ /^types/ { next }
            {
                key = $1 SUBSEP $2
                if (!(key in seen)) { seen[key] = 1; order[++n] = key; suite[key] = $1; test[key] = $2 }
                s = $4
                if ($11 != "") { err[key, s] = 1; next }
                if ($6 + 0 > best[key, s] + 0) { best[key, s] = $6; busy[key, s] = $13 > 0 ? $12 / $13 : "" }
                if ($12 != "" && (!((key, s) in mincl) || $12 / $5 < mincl[key, s])) mincl[key, s] = $12 / $5
                if (!((key, s) in p99) || $7 + 0 < p99[key, s] + 0) p99[key, s] = $7
                cpu = ($8 / $9) / $5 * 1000000
                if (!((key, s) in mincpu) || cpu < mincpu[key, s]) mincpu[key, s] = cpu
            }
            function cell(v, fmt) { return v == "" ? "error" : sprintf(fmt, v) }
            function opt(v, fmt) { return v == "" || v == 0 ? "-" : sprintf(fmt, v) }
            function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
            END {
                for (i = 1; i <= n; i++) {
                    k = order[i]
                    rb = ((k, "redis") in best) ? best[k, "redis"] : ""
                    sb = ((k, "strata") in best) ? best[k, "strata"] : ""
                    rp = ((k, "redis") in p99) ? p99[k, "redis"] : ""
                    sp = ((k, "strata") in p99) ? p99[k, "strata"] : ""
                    rc = ((k, "redis") in mincpu) ? mincpu[k, "redis"] : ""
                    sc = ((k, "strata") in mincpu) ? mincpu[k, "strata"] : ""
                    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", suite[k], toupper(test[k]),
                        cell(rb, "%.0f"), cell(sb, "%.0f"), ratio(sb, rb), cell(rp, "%.3f"), cell(sp, "%.3f"),
                        cell(rc, "%.2f"), cell(sc, "%.2f"), ratio(sc, rc),
                        opt(mincl[k, "redis"] * 1000000, "%.1f"), opt(mincl[k, "strata"] * 1000000, "%.1f"),
                        opt(busy[k, "redis"], "%.2f"), opt(busy[k, "strata"], "%.2f")
                }
            }' "$RAW"
        coarse=$(awk -F, 'NR > 1 && $1 != "mem" && $1 !~ /^types/ && $11 == "" && $8 < 100 { n++ } END { print n + 0 }' "$RAW")
        if [ "$coarse" -gt 0 ]; then
            echo
            echo "Note: $coarse run(s) used under 100 CPU clock ticks (1/$CLK_TCK s each): their CPU figures are coarse; use a larger N."
        fi
        echo
        echo "Commands (redis-benchmark against each server):"
        echo
        for s in "${SUITES[@]}"; do
            case "$s" in mem | typesmem) continue ;; esac
            echo "- $s: \`redis-benchmark $(suite_cmd "$s") --csv\`"
        done
        echo
    fi
    if awk -F, '$1 == "mem" { found = 1 } END { exit !found }' "$RAW"; then
        echo "| memory | Redis VmRSS MiB | Strata VmRSS MiB | Strata/Redis |"
        echo "| --- | ---: | ---: | ---: |"
        awk -F, -v keys="$MEM_KEYS" '
            $1 == "mem" { rss[$2, $4] = $10; err[$2, $4] = $11 }
            function mib(v) { return sprintf("%.1f", v / 1024) }
            END {
                printf "| empty server | %s | %s | %s |\n", mib(rss["empty", "redis"]), mib(rss["empty", "strata"]),
                    rss["empty", "redis"] ? sprintf("%.2f", rss["empty", "strata"] / rss["empty", "redis"]) : "-"
                printf "| %d keys, 64-byte values | %s | %s | %s |\n", keys, mib(rss["load", "redis"]),
                    mib(rss["load", "strata"]) (err["load", "strata"] != "" ? " (load errors)" : ""),
                    rss["load", "redis"] ? sprintf("%.2f", rss["load", "strata"] / rss["load", "redis"]) : "-"
            }' "$RAW"
        echo
        echo "Memory: \`SET key:<i> <64 bytes>\` for i in 1..$MEM_KEYS piped through \`redis-cli --pipe\` into a fresh server, then VmRSS from /proc/PID/status."
        echo
    fi
    if awk -F, '$1 == "typesmem" { found = 1 } END { exit !found }' "$RAW"; then
        echo "| structure (${TYPES_N:-1000000} elements) | Redis RSS growth MiB | Strata RSS growth MiB | Strata/Redis | anonymous growth Strata/Redis | RSS after, Strata/Redis |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: |"
        awk -F, '
            function ratio(t, k) { return v[t, k, "redis"] ? sprintf("%.3f", v[t, k, "strata"] / v[t, k, "redis"]) : "-" }
            $1 ~ /^types/ { v[$1, $2, $4] = $10 }
            $1 == "typesmem" { if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } err[$2, $4] = $11 }
            END {
                for (i = 1; i <= n; i++) {
                    k = order[i]
                    printf "| %s | %.1f | %.1f%s | %s | %s | %s |\n", k, v["typesmem", k, "redis"] / 1024,
                        v["typesmem", k, "strata"] / 1024, (err[k, "strata"] != "" ? " (load errors)" : ""),
                        ratio("typesmem", k), ratio("typesanon", k), ratio("typesrss", k)
                }
            }' "$RAW"
        echo
        echo "Memory: each structure built with HSET/SADD/ZADD/RPUSH (smallhashes: HSET h:<i> with 10 fields) through \`redis-cli --pipe\` into a fresh server pair; growth of VmRSS, growth of its anonymous part (RssAnon, the data; the rest is the binary's code paged in on first use), VmRSS after the load."
        echo
    fi
} >"$OUT"

cat "$OUT"
log "written to $OUT (every round: $RAW)"
