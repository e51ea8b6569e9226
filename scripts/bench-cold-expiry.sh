#!/usr/bin/env bash
# The background expiry of cold keys: two Strata builds side by side in the same run, each
# tiered and filled with the same keys, a share of which carry an expiry spread evenly over
# a window. No client reads them, so only the background pass removes the tier's expired
# keys. Every second of the window and after it, each server's keys that are due but still
# there ("late": DBSIZE minus the keys not yet due) and its CPU.
#
# usage: scripts/bench-cold-expiry.sh BINARY_A BINARY_B
#
# Environment:
#   KEYS=2000000 VALUE=50 MAXMEM=48mb   the data set and the budget (most keys go cold)
#   TTL_EVERY=4                          every Nth key has an expiry (PXAT)
#   DUE_EVERY=1                          of those, every Nth falls in the window; the others
#                                        a day later (cold keys with a TTL that is far off)
#   LEAD=60                              seconds from the start of the fills to the first
#                                        expiry (both fills must be done by then)
#   SPREAD=120 TAIL=20                   seconds over which the expiries fall, and after
#                                        the last one (the run's end)
# Prints one line per 10 s, then per server: late keys (mean and largest over the window),
# keys left at the end that were due, and CPU over the window (% of one core).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

[ $# -eq 2 ] || {
    sed -n '2,20p' "$0" >&2
    exit 2
}
KEYS=${KEYS:-2000000}
VALUE=${VALUE:-50}
MAXMEM=${MAXMEM:-48mb}
TTL_EVERY=${TTL_EVERY:-4}
DUE_EVERY=${DUE_EVERY:-1}
LEAD=${LEAD:-60}
SPREAD=${SPREAD:-120}
TAIL=${TAIL:-20}
require_redis_tools redis-server

bench_workdir bench-cold-expiry
declare -A PORT PID
for side in a b; do
    bin=$1
    [ $side = b ] && bin=$2
    PORT[$side]=$(free_port)
    mkdir -p "$WORK/$side"
    "$bin" serve --port "${PORT[$side]}" --dir "$WORK/$side" --appendonly no --save '' \
        --maxmemory "$MAXMEM" --tiering yes >"$WORK/$side.log" 2>&1 &
    PID[$side]=$!
    PIDS+=($!)
    wait_ping "${PORT[$side]}"
done

now_ms() { date +%s%3N; }
T0=$(($(now_ms) + LEAD * 1000))
# The RESP of KEYS SETs; key i (when i % TTL_EVERY == 0) expires at T0 + a step of the
# spread that a multiplicative hash of i picks, so expiries do not follow key order (a
# day later unless i / TTL_EVERY % DUE_EVERY == 0).
gen() {
    awk -v n="$KEYS" -v size="$VALUE" -v every="$TTL_EVERY" -v due="$DUE_EVERY" -v t0="$T0" -v spread="$((SPREAD * 1000))" 'BEGIN {
        v = sprintf("%0" size "d", 0)
        for (i = 0; i < n; i++) {
            if (i % every == 0) {
                at = sprintf("%.0f", t0 + (i * 2654435761) % spread + ((i / every) % due ? 86400000 : 0))
                printf "*5\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n$4\r\nPXAT\r\n$%d\r\n%s\r\n", i, size, v, length(at), at
            } else
                printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, size, v
        }
    }'
}
# DUE: line b+1 holds how many keys are due by T0 + 10 b ms (computed once; a lookup per
# sample costs no CPU the servers would miss).
DUE=$WORK/due
awk -v n="$KEYS" -v every="$TTL_EVERY" -v due="$DUE_EVERY" -v spread="$((SPREAD * 1000))" 'BEGIN {
    for (i = 0; i < n; i += every) if ((i / every) % due == 0) c[int(((i * 2654435761) % spread) / 10)]++
    for (b = 0; b <= spread / 10; b++) { sum += c[b]; print sum }
}' >"$DUE"
DUE_LINES=$(wc -l <"$DUE")
# How many keys are not due at time T (ms): every key without an expiry, and those after T.
not_due() {
    local b=$((($1 - T0) / 10 + 1))
    [ "$b" -lt 1 ] && b=1
    [ "$b" -gt "$DUE_LINES" ] && b=$DUE_LINES
    echo $((KEYS - $(sed -n "${b}p" "$DUE")))
}
for side in a b; do
    log "filling $side: $KEYS keys of $VALUE bytes, every $TTL_EVERY-th expiring (maxmemory $MAXMEM)"
    gen | redis-cli -p "${PORT[$side]}" --pipe >/dev/null
    log "$side: $(redis-cli -p "${PORT[$side]}" info tiering | tr -d '\r' | grep -E '^(hot_keys|cold_keys):' | tr '\n' ' ')"
done
[ "$(now_ms)" -lt "$T0" ] || {
    log "the fills took longer than LEAD=$LEAD s: raise LEAD"
    exit 1
}
sleep "$(awk -v ms="$((T0 - $(now_ms)))" 'BEGIN { print ms / 1000 }')"

declare -A CPU0 SUM MAX
for side in a b; do
    CPU0[$side]=$(cpu_ticks "${PID[$side]}")
    SUM[$side]=0 MAX[$side]=0
done
samples=0
for s in $(seq 1 $((SPREAD + TAIL))); do
    sleep "$(awk -v ms="$((T0 + s * 1000 - $(now_ms)))" 'BEGIN { print (ms > 0 ? ms : 0) / 1000 }')"
    t=$(now_ms)
    expect=$(not_due "$t")
    line="t+${s}s"
    for side in a b; do
        late=$(($(redis-cli -p "${PORT[$side]}" dbsize) - expect))
        SUM[$side]=$((SUM[$side] + late))
        [ "$late" -gt "${MAX[$side]}" ] && MAX[$side]=$late
        line="$line $side late $late"
    done
    samples=$((samples + 1))
    [ $((s % 10)) -eq 0 ] && echo "$line"
done
hz=$(getconf CLK_TCK)
for side in a b; do
    cpu=$(awk -v t=$(($(cpu_ticks "${PID[$side]}") - CPU0[$side])) -v hz="$hz" -v s="$((SPREAD + TAIL))" \
        'BEGIN { printf "%.1f", 100 * t / hz / s }')
    echo "$side: late keys mean $((SUM[$side] / samples)), largest ${MAX[$side]}; due keys left at the end $(($(redis-cli -p "${PORT[$side]}" dbsize) - $(not_due "$(now_ms)"))); CPU ${cpu}% of a core; $(redis-cli -p "${PORT[$side]}" info stats | tr -d '\r' | grep '^expired_keys:')"
done
