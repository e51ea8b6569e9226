#!/usr/bin/env bash
# Whole writes of cold keys: uniform random SETs over a tier several times `maxmemory`,
# against two Strata builds side by side in the same run (for example the build before a
# change and the build with it). Each server is filled with KEYS sequential keys of VALUE
# bytes, then `strata bench kv` alternates rounds of uniform SETs between them.
#
# usage: scripts/bench-tier-overwrite.sh BINARY_A BINARY_B
#
# Environment:
#   KEYS=327680 VALUE=1024 MAXMEM=64mb   the data set (5x the budget) and the budget
#   ROUNDS=3 DURATION=15s                 rounds of SETs, alternating, and their length
#   TTL_EVERY=0                           if N > 0, the fill is redis-cli --pipe of SETs in
#                                         which every Nth key gets a TTL (EX, a day), so
#                                         cold keys with and without one share the shards
#   IDLE=10                               seconds, after the fill, over which each idle
#                                         server's CPU and tier reads are measured
#   SNAPSHOTS=0                           if 1, each server takes snapshots back to back
#                                         (a BGSAVE whenever none runs) during the SETs
# Prints strata bench's table (B against A), then each server's INFO tiering counters of
# what came back to RAM and what was replaced unread.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

[ $# -eq 2 ] || {
    sed -n '2,20p' "$0" >&2
    exit 2
}
A=$1
B=$2
KEYS=${KEYS:-327680}
VALUE=${VALUE:-1024}
MAXMEM=${MAXMEM:-64mb}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-15s}
TTL_EVERY=${TTL_EVERY:-0}
IDLE=${IDLE:-10}
SNAPSHOTS=${SNAPSHOTS:-0}
require_redis_tools redis-server

bench_workdir bench-tier-overwrite
PORT_A=$(free_port)
PORT_B=$(free_port)
for side in a b; do
    bin=$A port=$PORT_A
    [ $side = b ] && bin=$B port=$PORT_B
    mkdir -p "$WORK/$side"
    "$bin" serve --port "$port" --dir "$WORK/$side" --appendonly no --save '' \
        --maxmemory "$MAXMEM" --tiering yes >"$WORK/$side.log" 2>&1 &
    PIDS+=($!)
    wait_ping "$port"
done
TARGETS=(--target "a=127.0.0.1:$PORT_A" --target "b=127.0.0.1:$PORT_B")
kv() { "$B" bench kv -q -c 50 --threads 1 "${TARGETS[@]}" "$@"; }

log "filling each with $KEYS keys of $VALUE bytes (maxmemory $MAXMEM)"
if [ "$TTL_EVERY" -gt 0 ]; then
    # The keys with a TTL are set among the others, so they go cold as the others do.
    for port in "$PORT_A" "$PORT_B"; do
        gen_keys "$KEYS" "$VALUE" "$TTL_EVERY" | redis-cli -p "$port" --pipe >/dev/null
    done
else
    kv --rounds 1 -P 16 --ops set --keys "seq:0..$KEYS" -d "$VALUE" >/dev/null
fi
sleep 5
tier_read() { redis-cli -p "$1" info tiering | tr -d '\r' | awk -F: '$1 == "tier_bytes_read" { print $2 }'; }
declare -A CPU0 READ0
for side in a b; do
    port=$PORT_A pid=${PIDS[0]}
    [ $side = b ] && port=$PORT_B pid=${PIDS[1]}
    CPU0[$side]=$(cpu_ticks "$pid")
    READ0[$side]=$(tier_read "$port")
done
sleep "$IDLE"
for side in a b; do
    port=$PORT_A pid=${PIDS[0]}
    [ $side = b ] && port=$PORT_B pid=${PIDS[1]}
    echo "$side idle for $IDLE s: $(awk -v t=$(( $(cpu_ticks "$pid") - CPU0[$side] )) -v hz="$(getconf CLK_TCK)" -v s="$IDLE" \
        'BEGIN { printf "%.1f%% of a core", 100 * t / hz / s }'), tier reads $(( ($(tier_read "$port") - READ0[$side]) >> 20 )) MiB"
done
if [ "$SNAPSHOTS" = 1 ]; then
    # A refused BGSAVE (one is running) is the loop waiting for the next turn.
    (while :; do
        for port in "$PORT_A" "$PORT_B"; do redis-cli -p "$port" bgsave >/dev/null 2>&1 || true; done
        sleep 0.1
    done) &
    PIDS+=($!)
fi
kv --rounds "$ROUNDS" -P 1 --ops set --keys "random:$KEYS" -d "$VALUE" --duration "$DURATION"
for side in a b; do
    port=$PORT_A pid=${PIDS[0]}
    [ $side = b ] && port=$PORT_B pid=${PIDS[1]}
    echo "$side: largest RSS $(awk '/VmHWM/ { print int($2 / 1024) " MiB" }' "/proc/$pid/status")"
    echo "$side: $(redis-cli -p "$port" info tiering | tr -d '\r' \
        | grep -E '^(cold_keys|moved_to_ram|tier_bytes_read|cold_replaced_unread):' | tr '\n' ' ')"
    if [ "$SNAPSHOTS" = 1 ]; then
        echo "$side snapshots, ms each: $(grep -o 'saved: [0-9]* keys in [0-9]* ms' "$WORK/$side.log" \
            | awk '{ printf "%s ", $5 }')"
    fi
done
