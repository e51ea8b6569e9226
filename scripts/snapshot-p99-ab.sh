#!/usr/bin/env bash
# Strata against Strata: SET and GET p99, steady and while snapshots run back to back, for
# two or more builds in turn (A B A B ...), on the same data. For changes to the snapshot
# path, where the run-to-run spread of this noisy machine is larger than most effects: only
# figures from interleaved cycles compare (docs/benchmarks.md, "How we compare").
#
# usage: scripts/snapshot-p99-ab.sh CYCLES BINARY...
#
# Once, KEYS keys (key:<12 digits>, 64-byte values) are loaded with the first binary and
# snapshotted (BGREWRITEAOF) into SEED. Each run copies SEED to a fresh directory, starts
# the binary on it (STRATA_ARGS, default journal everysec), and runs
# `redis-benchmark -t set|get -n N -r KEYS -d 64 -c 50 -P 1` twice: steady, then with
# BGSAVE started again each time the last one ends (polled over one redis-cli connection,
# as bench-durability.sh does). One line per binary and test:
#   <binary> <test> steady p99 <ms> snap p99 <ms> ratio <x> snapshots <n> rps <steady>/<snap>
#
# Environment: KEYS=10000000  N=1000000  PORT=7460  SEED=${TMPDIR:-/tmp}/strata-p99-seed
#   (kept between runs; delete it when KEYS changes)
#   STRATA_ARGS="--appendonly yes --appendfsync everysec"  RUN_DIR=${TMPDIR:-/tmp}/strata-p99-run
#   TRACE=DIR: in each run, 2 s after redis-benchmark starts, record 3 s of scheduler
#   events (`perf sched record -a -g`) and write where the workers waited
#   (scripts/worker-waits.py) to DIR/<binary>-<test>-<steady|snap>-<cycle>.txt. Tracing
#   slows every thread: a traced run's p99 says where the workers wait, not how long.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

[ $# -ge 2 ] || {
    sed -n '2,23p' "$0" >&2
    exit 2
}
cycles=$1
shift
KEYS=${KEYS:-10000000}
N=${N:-1000000}
PORT=${PORT:-7460}
SEED=${SEED:-${TMPDIR:-/tmp}/strata-p99-seed}
RUN_DIR=${RUN_DIR:-${TMPDIR:-/tmp}/strata-p99-run}
STRATA_ARGS=${STRATA_ARGS:---appendonly yes --appendfsync everysec}
require_redis_tools redis-server
if [ -n "${TRACE:-}" ]; then
    command -v perf >/dev/null || {
        echo "TRACE needs perf (apt-get install -y linux-perf)" >&2
        exit 1
    }
    mkdir -p "$TRACE"
fi
bench_workdir snapshot-p99-ab

cli() { redis-cli -p "$PORT" "$@"; }

# launch BINARY DIR ARGS...: starts a server (SPID) and waits for PONG.
launch() {
    local bin=$1 dir=$2
    shift 2
    "$bin" serve --dir "$dir" --port "$PORT" --save "" "$@" >>"$WORK/server.log" 2>&1 &
    SPID=$!
    PIDS+=("$SPID")
    until [ "$(cli PING 2>/dev/null || true)" = PONG ]; do alive_or_exit; sleep 0.1; done
}

alive_or_exit() {
    kill -0 "$SPID" 2>/dev/null && return
    tail -n 20 "$WORK/server.log" >&2
    exit 1
}

# start BINARY DIR ARGS...: launch, then wait until every key is loaded.
start() {
    launch "$@"
    until [ "$(cli DBSIZE 2>/dev/null || true)" = "$KEYS" ]; do alive_or_exit; sleep 0.5; done
}

stop() {
    kill "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
}

# Until no BGSAVE / BGREWRITEAOF runs: one connection polling every 20 ms.
wait_snapshot() {
    cli -r -1 -i 0.02 INFO persistence 2>/dev/null |
        awk -F: '{ sub(/\r$/, "") } $1 == "rdb_bgsave_in_progress" { bg = $2 }
                 $1 == "aof_rewrite_in_progress" { if (bg + $2 == 0) exit 0 }' || true
}

# trace NAME: 3 s of scheduler events from 2 s on, analysed into $TRACE/NAME.txt.
trace() {
    local tids
    tids=$(ps -L -o tid=,comm= -p "$SPID" | awk '$2 ~ /^strata-worker/ { print $1 }' | paste -sd,)
    sleep 2
    perf sched record -a -g -o "$WORK/sched.data" -- sleep 3 >/dev/null 2>&1
    perf script -i "$WORK/sched.data" 2>/dev/null | scripts/worker-waits.py "$tids" >"$TRACE/$1.txt"
}

# bench TEST SNAP: "p99 rps snapshots" of one redis-benchmark run.
bench() {
    local snaps=0 b t=
    sync
    rm -f "$WORK/rc"
    (
        rc=0
        redis-benchmark -p "$PORT" -n "$N" -t "$1" -r "$KEYS" -d 64 -c 50 -P 1 --csv >"$WORK/out.csv" 2>/dev/null || rc=$?
        echo "$rc" >"$WORK/rc"
    ) &
    b=$!
    if [ -n "${TRACE:-}" ]; then
        trace "$(basename "$BIN")-$1-$([ "$2" = 1 ] && echo snap || echo steady)-$CYCLE" &
        t=$!
    fi
    if [ "$2" = 1 ]; then
        sleep 0.05
        while [ ! -e "$WORK/rc" ]; do
            cli BGSAVE >/dev/null
            snaps=$((snaps + 1))
            wait_snapshot
        done
    fi
    wait "$b"
    [ -z "$t" ] || wait "$t"
    [ "$(cat "$WORK/rc")" = 0 ] || {
        log "redis-benchmark failed"
        exit 1
    }
    awk -F, -v s="$snaps" 'NR > 1 { gsub(/"/, ""); print $7, int($2), s; exit }' "$WORK/out.csv"
}

if [ ! -d "$SEED" ]; then
    log "loading $KEYS keys into $SEED"
    mkdir -p "$SEED"
    launch "$1" "$SEED" --appendonly yes
    gen_keys "$KEYS" | cli --pipe | tail -n 1 >&2
    cli BGREWRITEAOF >/dev/null
    sleep 1
    wait_snapshot
    stop
fi

for CYCLE in $(seq 1 "$cycles"); do
    for BIN in "$@"; do
        rm -rf "$RUN_DIR"
        cp -r "$SEED" "$RUN_DIR"
        # shellcheck disable=SC2086
        start "$BIN" "$RUN_DIR" $STRATA_ARGS
        for t in set get; do
            read -r p99 rps _ <<<"$(bench "$t" 0)"
            read -r sp99 srps snaps <<<"$(bench "$t" 1)"
            echo "$(basename "$BIN") $t steady p99 $p99 snap p99 $sp99 ratio $(awk -v a="$sp99" -v b="$p99" 'BEGIN { printf "%.2f", a / b }') snapshots $snaps rps $rps/$srps"
        done
        stop
        rm -rf "$RUN_DIR"
    done
done
