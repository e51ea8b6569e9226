#!/usr/bin/env bash
# Writes past `maxmemory` under allkeys-lru: Redis and one or more Strata builds, each round
# a fresh server of each (rounds alternate the targets), all without persistence. Each
# fill writes KEYS sequential keys of VALUE bytes (`strata bench kv`, -P 16, 50
# connections), several times `maxmemory`, so nearly every SET first evicts a key.
#
# usage: scripts/bench-eviction.sh [STRATA_BINARY...]   (default: target/release/strata)
#
# Environment: KEYS=327680 VALUE=1024 MAXMEM=64mb ROUNDS=3
#   TIERING=1: the Strata servers tier instead of deleting (`--tiering yes`); Redis as ever.
# Prints per round and target: SET/s, server CPU ticks over the fill and the 3 s after it,
# evicted keys (moved to the tier, with TIERING=1).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
require_redis_tools redis-server
KEYS=${KEYS:-327680}
VALUE=${VALUE:-1024}
MAXMEM=${MAXMEM:-64mb}
ROUNDS=${ROUNDS:-3}
TIERING=${TIERING:-0}
binaries=("$@")
[ ${#binaries[@]} -eq 0 ] && binaries=(target/release/strata)
bench_workdir bench-eviction
CLIENT=${binaries[0]}

# fill NAME KIND: one fresh server (STRATA_CMD set for a Strata build), one fill, one line.
fill() {
    local name=$1 kind=$2 pid port t0 rate evicted
    pair_server "$kind"
    pid=$SERVER_PID port=$SERVER_PORT
    t0=$(cpu_ticks "$pid")
    rate=$("$CLIENT" bench kv -q -c 50 --threads 1 --csv - --target "x=127.0.0.1:$port" \
        --rounds 1 -P 16 --ops set --keys "seq:0..$KEYS" -d "$VALUE" |
        awk -F, '$1 == "x" && $3 == "SET" { v = $8 } END { printf "%.0f SET/s", v }')
    sleep 3
    local ticks=$(($(cpu_ticks "$pid") - t0))
    if [ "$kind" = strata ] && [ "$TIERING" = 1 ]; then
        evicted=$(redis-cli -p "$port" info tiering | tr -d '\r' | awk -F: '$1 == "moved_to_disk" { print $2 }')
    else
        evicted=$(redis-cli -p "$port" info stats | tr -d '\r' | awk -F: '$1 == "evicted_keys" { print $2 }')
    fi
    echo "$name | $rate | ticks $ticks | evicted $evicted"
    stop_pid "$pid"
}

limit="--maxmemory $MAXMEM --maxmemory-policy allkeys-lru"
REDIS_CMD="redis-server $limit"
extra=""
[ "$TIERING" = 1 ] && extra="--tiering yes"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r"
    fill redis redis
    for b in "${binaries[@]}"; do
        STRATA_CMD="$b serve" STRATA_ARGS="$limit $extra" fill "$b" strata
    done
done
