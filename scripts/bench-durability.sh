#!/usr/bin/env bash
# Durability: Strata's journal and fork-less snapshots against Redis's AOF and RDB on this
# machine, compared as docs/benchmarks.md ("How we compare") describes for a noisy
# machine: the same redis-benchmark run against each server in turn, the order rotating
# from round to round, for ROUNDS rounds; each side's best round for throughput and p99
# (noise only slows a run down), each server's least CPU time (utime+stime, all threads)
# per million requests.
# Every server runs on a fresh data directory of its own under one temp dir, which is
# removed at the end; every server this script starts is stopped at the end.
#
# usage: scripts/bench-durability.sh [everysec|always|restart|snapshot-p99|all]...  (default: all)
#
#   everysec      redis-benchmark -t set -n N -r 1000000 -d 64 -c 50, with -P 16 and -P 1,
#                 against Strata --appendonly no, Strata (appendfsync everysec, the default)
#                 and Redis --appendonly yes --appendfsync everysec.
#                 Targets: Strata everysec >= 0.9x Strata without journal; >= 1.0x Redis.
#   always        redis-benchmark -t set -n N -r 1000000 -d 64 -c 50 -P 1 against Strata and
#                 Redis, both appendfsync always. Target: Strata >= 1.0x Redis throughput;
#                 p99 of both reported.
#   restart       KEYS keys (SET key:<12 digits> <64 bytes>, through redis-cli --pipe) loaded
#                 once per server; then each restart timed from exec until PING answers PONG
#                 and DBSIZE = KEYS (warm page cache: the files were just written):
#                   Strata replaying its journal only (no snapshot);
#                   Strata from a snapshot (after BGREWRITEAOF, rdb_bgsave_in_progress:0);
#                   Redis from its RDB (after SAVE; started with --appendonly no);
#                   Redis from its AOF (same load, started with --appendonly yes; no rewrite
#                   ever ran, so the AOF holds every SET: the like of Strata's journal).
#                 Strata's restarts are ratioed to Redis's RDB restart.
#   snapshot-p99  KEYS keys loaded into Strata (journal everysec) and Redis (AOF everysec);
#                 redis-benchmark -t set, then -t get, -n N -r KEYS -d 64 -c 50 -P 1: once
#                 steady, once while snapshots run: BGSAVE right after redis-benchmark starts
#                 and again each time the previous one ends (rdb_bgsave_in_progress:0),
#                 until redis-benchmark ends, so the whole run is under a snapshot (Redis's
#                 BGSAVE forks; Strata's does not). Ratio: p99 during snapshots / steady p99.
#                 (A side whose snapshots are quicker takes more of them in the same run.)
#
# Both sides run with `--save ''` (no automatic snapshots during a measurement) and Redis
# with --auto-aof-rewrite-percentage 0 (Strata never rewrites its journal on its own
# either), so each side's journal only ever appends. `sync` runs before every measurement,
# so one server's dirty pages are not written back during the next server's run.
#
# Environment:
#   ROUNDS=5          rounds (each round runs every server of the suite once, per test)
#   N=                requests per redis-benchmark run for every suite (defaults: everysec
#                     -P 16 2000000, -P 1 1000000; always 1000000; snapshot-p99 1000000)
#   KEYS=10000000     keys loaded by restart and snapshot-p99 (the full size needs about
#                     2 GB of RAM per loaded server, two at once in snapshot-p99, plus
#                     Redis's copy-on-write during BGSAVE, and a few GB of disk)
#   OUT=target/bench-durability.md   the markdown report (also printed); every round's raw
#                     figures go to the same name with .csv
#   REDIS_CMD=redis-server           the peer
#   STRATA_BIN=target/release/strata the server under test
#   STRATA_ARGS=      extra arguments for Strata (e.g. "--threads 2")
#   RESTART_TIMEOUT=900  seconds a restart may take before the script gives up
#   SNAPSHOT_MODE=loop   snapshot-p99: loop = BGSAVE back to back for the whole run; once =
#                     a single BGSAVE right after redis-benchmark starts (then the p99 also
#                     depends on how much of the run the snapshot covers, which is reported)
#   NO_BUILD=1        do not run cargo build --release first
#
# Smoke run (all four suites in about 15 s):
#   N=20000 KEYS=200000 ROUNDS=1 scripts/bench-durability.sh
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

ROUNDS=${ROUNDS:-5}
N=${N:-}
KEYS=${KEYS:-10000000}
OUT=${OUT:-target/bench-durability.md}
REDIS_CMD=${REDIS_CMD:-redis-server}
DEFAULT_STRATA=target/release/strata
STRATA_BIN=${STRATA_BIN:-$DEFAULT_STRATA}
STRATA_ARGS=${STRATA_ARGS:-}
RESTART_TIMEOUT=${RESTART_TIMEOUT:-900}
SNAPSHOT_MODE=${SNAPSHOT_MODE:-loop}
CLK_TCK=$(getconf CLK_TCK)

SUITES=("$@")
[ ${#SUITES[@]} -eq 0 ] && SUITES=(all)
if [ "${SUITES[*]}" = all ]; then SUITES=(everysec always restart snapshot-p99); fi
for s in "${SUITES[@]}"; do
    case "$s" in
    everysec | always | restart | snapshot-p99) ;;
    *)
        echo "unknown suite '$s' (choose from everysec always restart snapshot-p99 all)" >&2
        exit 2
        ;;
    esac
done
case "$SNAPSHOT_MODE" in loop | once) ;; *)
    echo "SNAPSHOT_MODE must be loop or once" >&2
    exit 2
    ;;
esac
for v in ROUNDS KEYS RESTART_TIMEOUT ${N:+N}; do
    case "${!v}" in '' | *[!0-9]* | 0)
        echo "$v must be a positive integer" >&2
        exit 2
        ;;
    esac
done

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh  # (the script has cd-ed to the repository root)
require_redis_tools "$REDIS_CMD"

if [ "$STRATA_BIN" = "$DEFAULT_STRATA" ] && [ -z "${NO_BUILD:-}" ]; then
    echo "building strata (release)..." >&2
    cargo build --release -p strata >&2
fi
[ -x "$STRATA_BIN" ] || {
    echo "$STRATA_BIN not found (build it, or unset NO_BUILD)" >&2
    exit 1
}
STRATA_BIN=$(cd "$(dirname "$STRATA_BIN")" && pwd)/$(basename "$STRATA_BIN")

# The server configurations. Each gets `--dir DIR --port PORT` appended.
STRATA_BASE="$STRATA_BIN serve --save '' $STRATA_ARGS"
REDIS_BASE="$REDIS_CMD --bind 127.0.0.1 --daemonize no --save '' --auto-aof-rewrite-percentage 0"
server_cmd() {
    case "$1" in
    strata-nojournal) echo "$STRATA_BASE --appendonly no" ;;
    strata-everysec | strata-journal | strata-snapshot | strata) echo "$STRATA_BASE --appendonly yes --appendfsync everysec" ;;
    strata-always) echo "$STRATA_BASE --appendonly yes --appendfsync always" ;;
    redis-everysec | redis-aof | redis) echo "$REDIS_BASE --appendonly yes --appendfsync everysec" ;;
    redis-always) echo "$REDIS_BASE --appendonly yes --appendfsync always" ;;
    redis-rdb) echo "$REDIS_BASE --appendonly no" ;;
    *)
        echo "no configuration named $1" >&2
        exit 1
        ;;
    esac
}

bench_workdir bench-durability

now_us() { echo "${EPOCHREALTIME/./}"; }

# A process that exists and has not exited (a child that exited stays a zombie until
# waited for, and kill -0 still succeeds on a zombie).
alive() {
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

forget_pid() {
    local keep=() p
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}


new_dir() { mktemp -d "$WORK/$1.XXXXXX"; }

# start_server CONFIG DIR [EXPECTED_KEYS]: starts the server and waits until it answers PONG
# (and, given EXPECTED_KEYS, until DBSIZE equals it). Sets SERVER_PID, SERVER_PORT and
# READY_MS (from exec to ready). A few tries with other ports, in case another process takes
# the port between the probe and the bind.
start_server() {
    local config=$1 dir=$2 expect=${3:-} try
    for try in 1 2 3 4 5; do
        SERVER_PORT=$(free_port)
        if start_server_on "$config" "$dir" "$SERVER_PORT" "$expect"; then
            return
        fi
    done
    log "$config did not start (command: $LAST_CMD); the end of its log:"
    tail -n 30 "$WORK/$config.log" >&2
    exit 1
}

start_server_on() {
    local config=$1 dir=$2 port=$3 expect=$4 cmd t0 r d deadline
    cmd="$(server_cmd "$config") --dir $dir --port $port"
    LAST_CMD=$cmd
    echo "=== $(date -u +%T) $cmd" >>"$WORK/$config.log"
    t0=$(now_us)
    # exec: $! is the server itself, not a shell around it.
    (eval "exec $cmd" >>"$WORK/$config.log" 2>&1) &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    deadline=$((t0 + RESTART_TIMEOUT * 1000000))
    while :; do
        r=$(redis-cli -p "$port" PING 2>/dev/null || true)
        if [ "$r" = PONG ]; then
            [ -z "$expect" ] && break
            d=$(redis-cli -p "$port" DBSIZE 2>/dev/null || true)
            [ "$d" = "$expect" ] && break
        fi
        if ! alive "$SERVER_PID"; then
            wait "$SERVER_PID" 2>/dev/null || true
            forget_pid "$SERVER_PID"
            return 1
        fi
        if [ "$(now_us)" -gt "$deadline" ]; then
            log "$config on port $port not ready (PONG${expect:+ and DBSIZE $expect}) within $RESTART_TIMEOUT s; last PING: $r${expect:+, DBSIZE: ${d:-}}"
            tail -n 30 "$WORK/$config.log" >&2
            exit 1
        fi
        sleep 0.01
    done
    READY_MS=$((($(now_us) - t0) / 1000))
}

# stop_server PID: SIGTERM (Redis and Strata both shut down cleanly on it: journal / AOF
# flushed and fsynced; neither saves a snapshot, as both run with save ''), then wait.
stop_server() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget_pid "$1"
}

cli() { redis-cli -p "$1" "${@:2}" 2>&1; }

info_field() {
    redis-cli -p "$1" INFO "$2" 2>/dev/null | tr -d '\r' | awk -F: -v f="$3" '$1 == f { print $2; exit }'
}

# wait_snapshot PORT: until no BGSAVE / BGREWRITEAOF is running. One redis-cli polls INFO
# every 20 ms over one connection (-r -1 -i): a new redis-cli, tr and awk per poll took
# enough of this 2-core machine to raise a GET run's p99 from 0.6 to 3.5 ms with no
# snapshot running at all (docs/benchmarks.md), which the p99 during snapshots then showed.
wait_snapshot() {
    if [ -z "$(info_field "$1" persistence rdb_bgsave_in_progress)" ]; then
        log "no rdb_bgsave_in_progress in INFO persistence on port $1"
        exit 1
    fi
    redis-cli -p "$1" -r -1 -i 0.02 INFO persistence 2>/dev/null |
        awk -F: '{ sub(/\r$/, "") } $1 == "rdb_bgsave_in_progress" { bg = $2 }
                 $1 == "aof_rewrite_in_progress" { if (bg + $2 == 0) exit 0 }' ||
        true # redis-cli ends on SIGPIPE once awk has seen both at 0 (pipefail)
}

RAW="${OUT%.md}.csv"
mkdir -p "$(dirname "$OUT")" "$(dirname "$RAW")"
echo "suite,test,round,server,requests,rps,p50_ms,p99_ms,cpu_ticks,clk_tck,value,note,error" >"$RAW"

row() { # suite test round server requests rps p50 p99 ticks value note error
    local note=${11//,/;} err=${12//,/;}
    echo "$1,$2,$3,$4,$5,$6,$7,$8,$9,$CLK_TCK,${10},$note,$err" >>"$RAW"
}

# run_bench SUITE TEST ROUND NAME PORT PID SNAP REQUESTS ARGS...: one redis-benchmark run,
# one row. SNAP=1: BGSAVE right after redis-benchmark starts and, with SNAPSHOT_MODE=loop,
# again each time the previous one ends, until redis-benchmark ends; the row's value is the
# number of snapshots, its note their mean duration and the share of the run they covered.
run_bench() {
    local suite=$1 test=$2 round=$3 name=$4 port=$5 pid=$6 snap=$7 n=$8
    shift 8
    local before after line rc err="" snaps="" snap_note="" t0 t1 ts snap_us=0
    sync
    rm -f "$WORK/bench.rc"
    before=$(cpu_ticks "$pid")
    t0=$(now_us)
    (
        rc=0
        redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" "$@" --csv >"$WORK/out.csv" 2>"$WORK/err.txt" || rc=$?
        echo "$rc" >"$WORK/bench.rc"
    ) &
    local bench=$!
    if [ "$snap" = 1 ]; then
        snaps=0
        sleep 0.05
        local r
        while [ ! -e "$WORK/bench.rc" ]; do
            ts=$(now_us)
            r=$(cli "$port" BGSAVE)
            case "$r" in
            *started*) snaps=$((snaps + 1)) ;;
            *)
                snap_note="BGSAVE: $r"
                log "  BGSAVE on $name: $r"
                break
                ;;
            esac
            wait_snapshot "$port"
            snap_us=$((snap_us + $(now_us) - ts))
            [ "$SNAPSHOT_MODE" = loop ] || break
        done
    fi
    wait "$bench" || true
    t1=$(now_us)
    after=$(cpu_ticks "$pid")
    rc=$(cat "$WORK/bench.rc" 2>/dev/null || echo 1)
    if ! alive "$pid"; then
        log "$name died during $suite/$test; the end of its log:"
        tail -n 30 "$WORK/"*"$name"*.log >&2 || true
        exit 1
    fi
    # "SET","68027.21","0.491","0.144","0.455","0.727","0.903","2.383": rps, avg, min, p50, p95, p99, max
    line=$(awk -F, 'NR > 1 { gsub(/"/, ""); print $2 "," $5 "," $7; exit }' "$WORK/out.csv")
    if [ "$rc" != 0 ] || [ -z "$line" ]; then
        err=$(head -c 200 "$WORK/err.txt" | tr '\n,' '  ')
        [ -z "$err" ] && err="redis-benchmark exit $rc"
        line=",,"
        log "  $suite/$test round $round $name: ERROR $err"
    else
        log "  $suite/$test round $round $name: ${line%%,*} req/s, p50 $(echo "$line" | cut -d, -f2) ms, p99 ${line##*,} ms, $((after - before)) ticks"
    fi
    if [ -n "$snaps" ]; then
        local run_ms=$(((t1 - t0) / 1000)) cover
        # The last snapshot may outlast the run: count only the part inside it.
        cover=$(awk -v s="$snap_us" -v r="$((t1 - t0))" 'BEGIN { c = r > 0 ? 100 * s / r : 0; printf "%.0f", (c > 100 ? 100 : c) }')
        snap_note="$snaps snapshot(s) of $((snap_us / 1000 / (snaps > 0 ? snaps : 1))) ms; ${cover}% of the ${run_ms} ms run${snap_note:+; $snap_note}"
        log "    $snap_note"
    fi
    row "$suite" "$test" "$round" "$name" "$n" "${line%%,*}" "$(echo "$line" | cut -d, -f2)" "${line##*,}" \
        "$((after - before))" "$snaps" "$snap_note" "$err"
}

# ---- everysec and always: one server per configuration for the whole suite, the order of
# the servers rotating from round to round.

# throughput_suite SUITE "CONFIGS" "TEST:REQUESTS:ARGS;..."
throughput_suite() {
    local suite=$1 configs=($2) tests=$3
    local names=() ports=() pids=() i c
    log "== $suite: ${configs[*]}, $ROUNDS round(s)"
    for c in "${configs[@]}"; do
        start_server "$c" "$(new_dir "$c")"
        names+=("$c") ports+=("$SERVER_PORT") pids+=("$SERVER_PID")
        log "  $c: port $SERVER_PORT, pid $SERVER_PID"
    done
    local round spec test n args k j t=0
    for round in $(seq 1 "$ROUNDS"); do
        IFS=';' read -ra specs <<<"$tests"
        for spec in "${specs[@]}"; do
            IFS=: read -r test n args <<<"$spec"
            for k in $(seq 0 $((${#names[@]} - 1))); do
                j=$(((k + t) % ${#names[@]}))
                # shellcheck disable=SC2086
                run_bench "$suite" "$test" "$round" "${names[$j]}" "${ports[$j]}" "${pids[$j]}" 0 "$n" $args
            done
            t=$((t + 1))
        done
    done
    for i in "${!pids[@]}"; do stop_server "${pids[$i]}"; done
}

# ---- loading KEYS keys (`gen_keys` in bench-lib.sh: the key names redis-benchmark's -r
# uses, so GET -r KEYS hits, and values RDB cannot compress).
load_keys() { # NAME PORT
    local t0 out d
    t0=$(now_us)
    out=$(gen_keys "$KEYS" | redis-cli -p "$2" --pipe 2>&1 | tail -n 1)
    d=$(cli "$2" DBSIZE)
    log "  loaded $1: $out; DBSIZE $d; $((($(now_us) - t0) / 1000)) ms"
    case "$out" in *"errors: 0,"*) ;; *)
        log "loading $1 failed: $out"
        exit 1
        ;;
    esac
    if [ "$d" != "$KEYS" ]; then
        log "loading $1: DBSIZE $d, expected $KEYS"
        exit 1
    fi
}

bytes() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

# What the server itself said about loading, from the newest start in its log.
load_line() {
    awk '/^=== /{ last = "" } /journal loaded|snapshot [0-9]+ loaded|DB loaded from|Done loading/ { last = last (last == "" ? "" : "; ") $0 } END { print last }' "$WORK/$1.log" |
        sed -E 's/[0-9T:.-]+Z +INFO +//g; s/^[0-9]+:M [^*]*\* //; s/; [0-9]+:M [^*]*\* /; /g' | tr ',' ';' | head -c 300
}

# timed_restart CONFIG DIR ROUND
timed_restart() {
    start_server "$1" "$2" "$KEYS"
    local ms=$READY_MS note
    sleep 0.2
    note=$(load_line "$1")
    log "  restart round $3 $1: ready (PONG, DBSIZE $KEYS) in $ms ms  [$note]"
    row restart ready "$3" "$1" "$KEYS" "" "" "" "" "$ms" "$note" ""
    stop_server "$SERVER_PID"
}

restart_suite() {
    log "== restart: $KEYS keys, $ROUNDS round(s)"
    local sdir rdir round
    sdir=$(new_dir strata) rdir=$(new_dir redis)
    sync

    start_server strata-journal "$sdir"
    load_keys strata "$SERVER_PORT"
    stop_server "$SERVER_PID"
    if ls "$sdir"/snapshot-* >/dev/null 2>&1; then
        log "strata wrote a snapshot during the load (save rules?): the journal-only restart would not be one"
        exit 1
    fi
    row restart disk 0 strata-journal "$KEYS" "" "" "" "" "$(bytes "$sdir/journal")" "journal bytes" ""

    start_server redis-aof "$rdir"
    load_keys redis "$SERVER_PORT"
    local r
    r=$(cli "$SERVER_PORT" SAVE)
    [ "$r" = OK ] || {
        log "redis SAVE: $r"
        exit 1
    }
    stop_server "$SERVER_PID"
    row restart disk 0 redis-rdb "$KEYS" "" "" "" "" "$(bytes "$rdir/dump.rdb")" "dump.rdb bytes" ""
    row restart disk 0 redis-aof "$KEYS" "" "" "" "" "$(bytes "$rdir/appendonlydir")" "appendonlydir bytes" ""
    sync

    # Phase 1: Strata from its journal only; Redis from its AOF and from its RDB.
    local order
    for round in $(seq 1 "$ROUNDS"); do
        case $((round % 3)) in
        1) order="strata-journal redis-rdb redis-aof" ;;
        2) order="redis-rdb redis-aof strata-journal" ;;
        0) order="redis-aof strata-journal redis-rdb" ;;
        esac
        for c in $order; do
            case $c in strata-*) timed_restart "$c" "$sdir" "$round" ;; *) timed_restart "$c" "$rdir" "$round" ;; esac
        done
    done

    # Phase 2: a snapshot (BGREWRITEAOF), then Strata from it against Redis from its RDB.
    start_server strata-snapshot "$sdir" "$KEYS"
    r=$(cli "$SERVER_PORT" BGREWRITEAOF)
    log "  strata BGREWRITEAOF: $r"
    sleep 0.05
    wait_snapshot "$SERVER_PORT"
    stop_server "$SERVER_PID"
    if ! ls "$sdir"/snapshot-*.snap >/dev/null 2>&1; then
        log "no snapshot file in $sdir after BGREWRITEAOF:"
        ls -la "$sdir" >&2
        exit 1
    fi
    row restart disk 0 strata-snapshot "$KEYS" "" "" "" "" "$(bytes "$sdir"/snapshot-*.snap "$sdir/journal")" "snapshot + journal bytes after BGREWRITEAOF" ""
    sync
    for round in $(seq 1 "$ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then order="strata-snapshot redis-rdb"; else order="redis-rdb strata-snapshot"; fi
        for c in $order; do
            case $c in strata-*) timed_restart "$c" "$sdir" "$round" ;; *) timed_restart "$c" "$rdir" "$round" ;; esac
        done
    done
}

snapshot_suite() {
    local n=${N:-1000000}
    log "== snapshot-p99: $KEYS keys, redis-benchmark -n $n, $ROUNDS round(s)"
    local spid sport rpid rport port pid
    start_server strata "$(new_dir strata)"
    spid=$SERVER_PID sport=$SERVER_PORT
    load_keys strata "$sport"
    start_server redis "$(new_dir redis)"
    rpid=$SERVER_PID rport=$SERVER_PORT
    load_keys redis "$rport"
    # A load can start a background rewrite (Redis's auto-aof-rewrite after 10M SETs): no
    # steady run may share the machine with it.
    wait_snapshot "$sport"
    wait_snapshot "$rport"
    log "  redis aof_rewrites after the load: $(info_field "$rport" persistence aof_rewrites)"
    local round t i=0 order name
    for round in $(seq 1 "$ROUNDS"); do
        for t in set get; do
            # Each test alternates A B, B A, A B ... from round to round.
            if [ $(((round + i) % 2)) = 1 ]; then order="strata redis"; else order="redis strata"; fi
            for name in $order; do
                if [ $name = strata ]; then port=$sport pid=$spid; else port=$rport pid=$rpid; fi
                run_bench snapshot-p99 "$t-steady" "$round" "$name" "$port" "$pid" 0 "$n" -t "$t" -r "$KEYS" -d 64 -c 50 -P 1
                run_bench snapshot-p99 "$t-snapshot" "$round" "$name" "$port" "$pid" 1 "$n" -t "$t" -r "$KEYS" -d 64 -c 50 -P 1
            done
            i=$((i + 1))
        done
    done
    local fork
    fork=$(info_field "$rport" stats latest_fork_usec)
    row snapshot-p99 fork 0 redis "" "" "" "" "" "$fork" "latest_fork_usec" ""
    log "  redis latest_fork_usec: $fork"
    stop_server "$spid"
    stop_server "$rpid"
}

STARTED=$(date -u +%s)
for s in "${SUITES[@]}"; do
    case "$s" in
    everysec)
        throughput_suite everysec "strata-nojournal strata-everysec redis-everysec" \
            "set-P16:${N:-2000000}:-t set -r 1000000 -d 64 -c 50 -P 16;set-P1:${N:-1000000}:-t set -r 1000000 -d 64 -c 50 -P 1"
        ;;
    always)
        throughput_suite always "strata-always redis-always" \
            "set-P1:${N:-1000000}:-t set -r 1000000 -d 64 -c 50 -P 1"
        ;;
    restart) restart_suite ;;
    snapshot-p99) snapshot_suite ;;
    esac
done

# ---- the report
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
if ! git diff --quiet HEAD 2>/dev/null; then rev="$rev+changes"; fi
redis_version=$(${REDIS_CMD%% *} --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
has() { awk -F, -v s="$1" '$1 == s { f = 1 } END { exit !f }' "$RAW"; }

# AWK helpers shared by the tables: best (highest) rps, lowest p99 and p50, least CPU per 1M.
AWK_BEST='
    NR == 1 || $1 != suite { next }
    {
        k = $2 SUBSEP $4
        if (!(($2) in seen)) { seen[$2] = 1; order[++n] = $2 }
        if ($13 != "") { err[k] = 1; next }
        if ($6 != "" && (!(k in rps) || $6 + 0 > rps[k] + 0)) rps[k] = $6
        if ($8 != "" && (!(k in p99) || $8 + 0 < p99[k] + 0)) p99[k] = $8
        if ($7 != "" && (!(k in p50) || $7 + 0 < p50[k] + 0)) p50[k] = $7
        if ($5 + 0 > 0 && $9 != "") { c = ($9 / $10) / $5 * 1000000; if (!(k in cpu) || c < cpu[k]) cpu[k] = c }
        if ($11 != "" && (!(k in val) || $11 + 0 < val[k] + 0)) val[k] = $11
        if ($12 != "") note[k] = $12
    }
    function get(a, t, s) { return ((t, s) in a) ? a[t, s] : "" }
    function f(v, fmt) { return v == "" ? "error" : sprintf(fmt, v) }
    function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
    function met(r, target, higher) { return r == "-" ? "-" : ((higher ? r + 0 >= target : r + 0 <= target) ? "yes" : "**no**") }
'
{
    echo "### Durability: Strata vs Redis $redis_version, $(date -u +%Y-%m-%d)"
    echo
    echo "Machine: ${cpu_model:-unknown CPU}, $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r); load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Strata $rev (\`strata serve --save ''${STRATA_ARGS:+ $STRATA_ARGS}\` + the options below) vs \`$REDIS_CMD --save '' --auto-aof-rewrite-percentage 0\` + the options below,"
    echo "each on a fresh data directory, on loopback, interleaved (the order rotating each round), $ROUNDS round(s); redis-benchmark on the same machine."
    echo "Made by: \`ROUNDS=$ROUNDS${N:+ N=$N} KEYS=$KEYS$([ "$SNAPSHOT_MODE" = loop ] || echo " SNAPSHOT_MODE=$SNAPSHOT_MODE") scripts/bench-durability.sh ${SUITES[*]}\` in $(($(date -u +%s) - STARTED)) s."
    echo "Throughput is each side's best round, latency each side's lowest round, CPU the server process's least utime+stime (all threads) per million requests."
    echo
    # The headline: every figure with a target.
    echo "| check | figure | target | met |"
    echo "| --- | ---: | ---: | --- |"
    if has everysec; then
        awk -F, -v suite=everysec "$AWK_BEST"'
            END {
                for (i = 1; i <= n; i++) {
                    t = order[i]
                    r1 = ratio(get(rps, t, "strata-everysec"), get(rps, t, "strata-nojournal"))
                    r2 = ratio(get(rps, t, "strata-everysec"), get(rps, t, "redis-everysec"))
                    printf "| everysec %s: Strata everysec / Strata no journal, req/s | %s | >= 0.90 | %s |\n", t, r1, met(r1, 0.9, 1)
                    printf "| everysec %s: Strata everysec / Redis everysec, req/s | %s | >= 1.00 | %s |\n", t, r2, met(r2, 1.0, 1)
                }
            }' "$RAW"
    fi
    if has always; then
        awk -F, -v suite=always "$AWK_BEST"'
            END {
                for (i = 1; i <= n; i++) {
                    t = order[i]
                    r = ratio(get(rps, t, "strata-always"), get(rps, t, "redis-always"))
                    printf "| always %s: Strata / Redis, req/s | %s | >= 1.00 | %s |\n", t, r, met(r, 1.0, 1)
                    printf "| always %s: Strata / Redis, p99 | %s | (reported) | |\n", t, ratio(get(p99, t, "strata-always"), get(p99, t, "redis-always"))
                }
            }' "$RAW"
    fi
    if has restart; then
        awk -F, -v suite=restart "$AWK_BEST"'
            END {
                printf "| restart: Strata journal only / Redis RDB, time to ready | %s | (reported) | |\n", ratio(get(val, "ready", "strata-journal"), get(val, "ready", "redis-rdb"))
                printf "| restart: Strata snapshot / Redis RDB, time to ready | %s | (reported) | |\n", ratio(get(val, "ready", "strata-snapshot"), get(val, "ready", "redis-rdb"))
            }' "$RAW"
    fi
    if has snapshot-p99; then
        awk -F, -v suite=snapshot-p99 "$AWK_BEST"'
            END {
                split("set get", ts, " ")
                for (i = 1; i <= 2; i++) for (j = 1; j <= 2; j++) {
                    s = j == 1 ? "strata" : "redis"
                    if (!((ts[i] "-steady", s) in p99)) continue
                    printf "| snapshot-p99 %s: %s p99 during snapshots / steady | %s | (reported) | |\n", toupper(ts[i]), s == "strata" ? "Strata" : "Redis",
                        ratio(get(p99, ts[i] "-snapshot", s), get(p99, ts[i] "-steady", s))
                }
            }' "$RAW"
    fi
    echo
    if has everysec; then
        echo "**everysec**: \`redis-benchmark -t set -r 1000000 -d 64 -c 50 -P {16,1} -n ${N:-2000000 (-P 16), 1000000 (-P 1)} --csv\` against"
        echo "Strata \`--appendonly no\`, Strata \`--appendonly yes --appendfsync everysec\` and Redis \`--appendonly yes --appendfsync everysec\`."
        echo
        echo "| test | Strata no journal req/s | Strata everysec req/s | Redis everysec req/s | everysec / no journal | Strata / Redis | p99 ms no journal / everysec / Redis | CPU s per 1M no journal / everysec / Redis | CPU Strata everysec / Redis |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        awk -F, -v suite=everysec "$AWK_BEST"'
            END {
                for (i = 1; i <= n; i++) {
                    t = order[i]
                    a = "strata-nojournal"; b = "strata-everysec"; c = "redis-everysec"
                    printf "| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s / %s / %s | %s |\n", t,
                        f(get(rps, t, a), "%.0f"), f(get(rps, t, b), "%.0f"), f(get(rps, t, c), "%.0f"),
                        ratio(get(rps, t, b), get(rps, t, a)), ratio(get(rps, t, b), get(rps, t, c)),
                        f(get(p99, t, a), "%.3f"), f(get(p99, t, b), "%.3f"), f(get(p99, t, c), "%.3f"),
                        f(get(cpu, t, a), "%.2f"), f(get(cpu, t, b), "%.2f"), f(get(cpu, t, c), "%.2f"),
                        ratio(get(cpu, t, b), get(cpu, t, c))
                }
            }' "$RAW"
        echo
    fi
    if has always; then
        echo "**always**: \`redis-benchmark -t set -r 1000000 -d 64 -c 50 -P 1 -n ${N:-1000000} --csv\` against Strata and Redis, both \`--appendonly yes --appendfsync always\`."
        echo
        echo "| test | Strata req/s | Redis req/s | Strata / Redis | Strata p50 / p99 ms | Redis p50 / p99 ms | CPU s per 1M Strata / Redis |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        awk -F, -v suite=always "$AWK_BEST"'
            END {
                for (i = 1; i <= n; i++) {
                    t = order[i]; a = "strata-always"; b = "redis-always"
                    printf "| %s | %s | %s | %s | %s / %s | %s / %s | %s / %s |\n", t,
                        f(get(rps, t, a), "%.0f"), f(get(rps, t, b), "%.0f"), ratio(get(rps, t, a), get(rps, t, b)),
                        f(get(p50, t, a), "%.3f"), f(get(p99, t, a), "%.3f"), f(get(p50, t, b), "%.3f"), f(get(p99, t, b), "%.3f"),
                        f(get(cpu, t, a), "%.2f"), f(get(cpu, t, b), "%.2f")
                }
            }' "$RAW"
        echo
    fi
    if has restart; then
        echo "**restart**: $KEYS keys (\`SET key:<12 digits> <64 bytes>\` through \`redis-cli --pipe\`), then the time from exec until PING answers PONG and DBSIZE = $KEYS (best of $ROUNDS; warm page cache)."
        echo
        echo "| restart from | Strata s | Redis s | Strata / Redis | on disk MiB Strata / Redis |"
        echo "| --- | ---: | ---: | ---: | ---: |"
        awk -F, -v suite=restart "$AWK_BEST"'
            function s(v) { return v == "" ? "error" : sprintf("%.2f", v / 1000) }
            function mib(v) { return v == "" ? "-" : sprintf("%.0f", v / 1048576) }
            function line(label, a, b) {
                printf "| %s | %s | %s | %s | %s / %s |\n", label, s(get(val, "ready", a)), s(get(val, "ready", b)),
                    ratio(get(val, "ready", a), get(val, "ready", b)), mib(get(val, "disk", a)), mib(get(val, "disk", b))
            }
            END {
                line("Strata journal only vs Redis RDB (SAVE)", "strata-journal", "redis-rdb")
                line("Strata snapshot (BGREWRITEAOF) vs Redis RDB (SAVE)", "strata-snapshot", "redis-rdb")
                line("Strata journal only vs Redis AOF (never rewritten)", "strata-journal", "redis-aof")
            }' "$RAW"
        echo
        echo "What each server logged about its last load:"
        echo
        awk -F, '$1 == "restart" && $2 == "ready" && $12 != "" { note[$4] = $12 } END { for (k in note) printf "- %s: %s\n", k, note[k] }' "$RAW" | sort
        echo
    fi
    if has snapshot-p99; then
        echo "**snapshot-p99**: $KEYS keys loaded; \`redis-benchmark -t {set,get} -r $KEYS -d 64 -c 50 -P 1 -n ${N:-1000000} --csv\`, steady and with $([ "$SNAPSHOT_MODE" = loop ] && echo "BGSAVE running back to back for the whole run" || echo "one BGSAVE started right after redis-benchmark")."
        echo "Strata \`--appendonly yes --appendfsync everysec\`, Redis \`--appendonly yes --appendfsync everysec\`."
        echo
        echo "| test | server | steady req/s | steady p50 / p99 ms | req/s during snapshots | p50 / p99 ms during snapshots | p99 during / steady | last run |"
        echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
        awk -F, -v suite=snapshot-p99 "$AWK_BEST"'
            END {
                split("set get", ts, " ")
                for (i = 1; i <= 2; i++) for (j = 1; j <= 2; j++) {
                    t = ts[i]; s = j == 1 ? "strata" : "redis"
                    printf "| %s | %s | %s | %s / %s | %s | %s / %s | %s | %s |\n", toupper(t), s == "strata" ? "Strata" : "Redis",
                        f(get(rps, t "-steady", s), "%.0f"), f(get(p50, t "-steady", s), "%.3f"), f(get(p99, t "-steady", s), "%.3f"),
                        f(get(rps, t "-snapshot", s), "%.0f"), f(get(p50, t "-snapshot", s), "%.3f"), f(get(p99, t "-snapshot", s), "%.3f"),
                        ratio(get(p99, t "-snapshot", s), get(p99, t "-steady", s)), get(note, t "-snapshot", s)
                }
                if (("fork", "redis") in val) printf "\nRedis latest_fork_usec at the end: %s.\n", val["fork", "redis"]
            }' "$RAW"
        echo
    fi
    errs=$(awk -F, 'NR > 1 && $13 != "" { n++ } END { print n + 0 }' "$RAW")
    if [ "$errs" -gt 0 ]; then
        echo "Note: $errs run(s) failed; see $RAW."
        echo
    fi
} >"$OUT"

cat "$OUT"
log "written to $OUT (every round: $RAW)"
