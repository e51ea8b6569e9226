#!/usr/bin/env bash
# Replication against Redis's, same run: a Strata primary with a Strata replica, and a
# redis-server primary with a redis-server replica, both without persistence, measured
# alternately (Strata first in odd rounds, Redis first in even ones):
#
#   sync     KEYS keys of 64 bytes loaded into the primary (redis-cli --pipe), then
#            REPLICAOF on the replica: milliseconds until the replica's link is up and its
#            offset equals the primary's (the full sync in RDB format, diskless, no delay)
#   alone    redis-benchmark -t set -n N -r 100000 -c 50 -P 16 against the primary with no
#            replica attached: requests per second
#   repl     the same with the replica attached: requests per second
#   lag      once that benchmark returns, milliseconds until the replica's offset reaches
#            the primary's (how far behind the stream the replica ends)
#   probe    during that benchmark, scripts/repl-lag.py: a probe SET on the primary every
#            2 ms, and the time from its reply until a GET on the replica sees it; p50 and
#            p99 in microseconds
#   repl2    the benchmark again with a second replica attached (synced first)
#   cpu      the primary's CPU seconds (utime+stime, all threads) per million SETs, alone
#            and with one replica: what feeding a replica costs the primary itself, apart
#            from the replica's own CPU taken from this machine's cores
#
# Prints a markdown table of each measure's median over the rounds and the ratio
# Strata/Redis (for sync and lag, lower is better).
#
# `scripts/bench-repl.sh apply` measures instead how fast a replica applies a stream it
# is behind on: the replica is stopped (SIGSTOP), redis-benchmark -t set -n N -r 1000000
# -d 64 -c 50 -P 16 runs against the primary, then the replica continues (SIGCONT):
# milliseconds until its offset reaches the primary's, and the replica's CPU seconds per
# million SETs meanwhile (polled every 5 ms over one connection). Three replicas each round: Strata with `replica-apply-lanes 1`
# (in stream order), Strata with its default (one lane per worker), redis-server.
#
# Environment:
#   ROUNDS=3           rounds (>= 3 for figures you quote)
#   KEYS=1000000       keys of the full sync
#   N=1000000          SETs per benchmark
#   STRATA=target/release/strata   the binary (built with cargo build --release unless NO_BUILD=1)
#   OUT=target/bench-repl.md       the table (also printed); raw rows in .csv
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh  # (the script has cd-ed to the repository root)

ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-1000000}
N=${N:-1000000}
STRATA=${STRATA:-target/release/strata}
OUT=${OUT:-target/bench-repl.md}
RAW=${OUT%.md}.csv

if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -p strata >&2
fi
require_redis_tools redis-server
bench_workdir bench-repl
mkdir -p "$(dirname "$OUT")"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# info_field PORT NAME: a field of INFO replication.
info_field() {
    redis-cli -p "$1" info replication | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'
}


# start KIND DIR: starts a server of KIND (strata or redis) without persistence; sets PORT
# to its port, and its pid joins PIDS.
start() {
    local kind=$1 dir=$2
    PORT=$(free_port)
    mkdir -p "$dir"
    if [ "$kind" = strata ]; then
        # shellcheck disable=SC2086 # EXTRA holds several options
        "$STRATA" serve --port "$PORT" --dir "$dir" --appendonly no --save '' \
            --repl-diskless-sync-delay 0 ${EXTRA:-} >"$dir/log" 2>&1 &
    else
        redis-server --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
            --repl-diskless-sync-delay 0 --logfile "$dir/log" >/dev/null 2>&1 &
    fi
    PIDS+=($!)
    SERVER_PID=$!
    wait_ping "$PORT"
}

stop() {
    redis-cli -p "$1" shutdown nosave >/dev/null 2>&1 || true
}

# wait_caught_up PRIMARY REPLICA: until the replica's link is up and its offset is the
# primary's.
wait_caught_up() {
    local want got
    while :; do
        if [ "$(info_field "$2" master_link_status)" = up ]; then
            want=$(info_field "$1" master_repl_offset)
            got=$(info_field "$2" slave_repl_offset)
            [ -n "$got" ] && [ "$got" -ge "$want" ] && return
        fi
        sleep 0.005
    done
}

rps() {
    redis-benchmark -p "$1" -t set -n "$N" -r 100000 -c 50 -P 16 -q --csv |
        awk -F, 'NR == 2 { gsub(/"/, "", $2); print $2 }'
}

# rps_probed PRIMARY REPLICA: rps, with the lag probe running against the pair meanwhile;
# prints "rps p50_us p99_us".
rps_probed() {
    local probe out=$WORK/probe.txt r
    python3 scripts/repl-lag.py "$1" "$2" 3600 >"$out" &
    probe=$!
    r=$(rps "$1")
    kill -TERM "$probe"
    wait "$probe"
    read -r p50 p99 _ <"$out"
    echo "$r $p50 $p99"
}

# one KIND ROUND: a primary and a replica of KIND; appends a CSV row.
one() {
    local kind=$1 round=$2 p r r2 t0 sync alone repl lag p50 p99 repl2 ppid c0 cpu1 cpu2
    start "$kind" "$WORK/$kind-$round-p"
    p=$PORT
    ppid=$SERVER_PID
    start "$kind" "$WORK/$kind-$round-r"
    r=$PORT
    start "$kind" "$WORK/$kind-$round-r2"
    r2=$PORT
    gen_keys "$KEYS" | redis-cli -p "$p" --pipe >/dev/null
    c0=$(cpu_ticks "$ppid")
    alone=$(rps "$p")
    cpu1=$(per_million "$(( $(cpu_ticks "$ppid") - c0 ))")
    t0=$(now_ms)
    redis-cli -p "$r" replicaof 127.0.0.1 "$p" >/dev/null
    wait_caught_up "$p" "$r"
    sync=$(( $(now_ms) - t0 ))
    c0=$(cpu_ticks "$ppid")
    read -r repl p50 p99 < <(rps_probed "$p" "$r")
    cpu2=$(per_million "$(( $(cpu_ticks "$ppid") - c0 ))")
    t0=$(now_ms)
    wait_caught_up "$p" "$r"
    lag=$(( $(now_ms) - t0 ))
    redis-cli -p "$r2" replicaof 127.0.0.1 "$p" >/dev/null
    wait_caught_up "$p" "$r2"
    repl2=$(rps "$p")
    stop "$r2"
    stop "$r"
    stop "$p"
    log "$kind round $round: sync ${sync} ms, alone ${alone} rps, with a replica ${repl} rps," \
        "lag ${lag} ms, probe p50 ${p50} us p99 ${p99} us, with two replicas ${repl2} rps," \
        "primary CPU s/1M alone ${cpu1}, with a replica ${cpu2}"
    echo "$kind,$round,$sync,$alone,$repl,$lag,$p50,$p99,$repl2,$cpu1,$cpu2" >>"$RAW"
}

# per_million TICKS: CPU seconds per million of the N requests.
per_million() {
    awk -v t="$1" -v hz="$(getconf CLK_TCK)" -v n="$N" 'BEGIN { printf "%.3f", t / hz / n * 1e6 }'
}

# median KIND COLUMN
median() {
    awk -F, -v k="$1" -v c="$2" 'NR > 1 && $1 == k { print $c }' "$RAW" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# apply_one KIND LANES ROUND: how fast a replica of KIND (Strata with
# `replica-apply-lanes LANES`, or redis) catches up N SETs; appends a CSV row.
apply_one() {
    local kind=$1 lanes=$2 round=$3 p r rpid c0 ms cpu name
    start "$kind" "$WORK/apply-$kind-$lanes-$round-p"
    p=$PORT
    EXTRA="--replica-apply-lanes $lanes" start "$kind" "$WORK/apply-$kind-$lanes-$round-r"
    r=$PORT
    rpid=$SERVER_PID
    redis-cli -p "$r" replicaof 127.0.0.1 "$p" >/dev/null
    wait_caught_up "$p" "$r"
    kill -STOP "$rpid"
    redis-benchmark -p "$p" -t set -n "$N" -r 1000000 -d 64 -c 50 -P 16 -q >/dev/null
    c0=$(cpu_ticks "$rpid")
    ms=$(python3 scripts/repl-lag.py catchup "$p" "$r" "$rpid")
    cpu=$(per_million "$(( $(cpu_ticks "$rpid") - c0 ))")
    stop "$r"
    stop "$p"
    name=$kind
    [ "$kind" = strata ] && name="strata-lanes-$lanes"
    log "$name round $round: caught up ${N} SETs in ${ms} ms, replica CPU s/1M ${cpu}"
    echo "$name,$round,$ms,$cpu" >>"$RAW"
}

if [ "${1:-}" = apply ]; then
    echo "kind,round,ms,cpu" >"$RAW"
    for round in $(seq "$ROUNDS"); do
        if [ $((round % 2)) -eq 1 ]; then
            apply_one strata 1 "$round"; apply_one strata 0 "$round"; apply_one redis 0 "$round"
        else
            apply_one redis 0 "$round"; apply_one strata 0 "$round"; apply_one strata 1 "$round"
        fi
    done
    {
        echo "| replica (median of $ROUNDS rounds) | catch-up of $N SETs (ms) | replica CPU s per 1M SETs | catch-up / Redis's |"
        echo "|---|---|---|---|"
        r=$(median redis 3)
        for k in strata-lanes-1 strata-lanes-0 redis; do
            ms=$(median "$k" 3)
            echo "| $k | $ms | $(median "$k" 4) | $(awk -v a="$ms" -v b="$r" 'BEGIN { printf "%.2f", a / b }') |"
        done
    } | tee "$OUT"
    exit 0
fi

echo "kind,round,sync_ms,alone_rps,repl_rps,lag_ms,probe_p50_us,probe_p99_us,repl2_rps,alone_cpu,repl_cpu" >"$RAW"
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) -eq 1 ]; then
        one strata "$round"; one redis "$round"
    else
        one redis "$round"; one strata "$round"
    fi
done

{
    echo "| measure (median of $ROUNDS rounds) | Strata | Redis 7.0 | Strata/Redis |"
    echo "|---|---|---|---|"
    for col in "3 full sync of $KEYS keys (ms)" "4 SET -P 16, no replica (rps)" \
        "5 SET -P 16, one replica (rps)" "6 replica catch-up after the benchmark (ms)" \
        "7 write-to-replica lag under that load, p50 (us)" \
        "8 write-to-replica lag under that load, p99 (us)" "9 SET -P 16, two replicas (rps)" \
        "10 primary CPU s per 1M SETs, no replica" "11 primary CPU s per 1M SETs, one replica"; do
        c=${col%% *}
        name=${col#* }
        s=$(median strata "$c")
        r=$(median redis "$c")
        ratio=$(awk -v s="$s" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", s / r; else print "-" }')
        echo "| $name | $s | $r | $ratio |"
    done
} | tee "$OUT"
