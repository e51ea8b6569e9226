#!/usr/bin/env bash
# Restarting a tiered server: the time from start to the first PONG, and until the tier
# stops taking entries (its cold keys unchanged for a second: a rebuild goes on spilling
# after the first PONG), when a clean exit kept the tier, when a SIGKILL left it (after
# SETs of a tenth of the keys with other values, which the store holds and the snapshot
# does not: the start checks the store against the snapshot), and when the start must
# rebuild it (no marker and no ORIGIN file); and redis-server loading the same data set
# from an RDB file (`strata export` of the same directory), on this machine in the same
# run.
#
# usage: scripts/bench-tier-restart.sh
#
# Environment:
#   KEYS=2000000 VALUE=1024 MAXMEM=256mb   the data set and the tiered server's budget
#   ROUNDS=2                               restarts of each kind, alternating
#   STRATA=target/release/strata           (built unless NO_BUILD=1)
#   REDIS_SERVER=redis-server
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

KEYS=${KEYS:-2000000}
VALUE=${VALUE:-1024}
MAXMEM=${MAXMEM:-256mb}
ROUNDS=${ROUNDS:-2}
STRATA=${STRATA:-target/release/strata}
REDIS_SERVER=${REDIS_SERVER:-redis-server}

require_redis_tools "$REDIS_SERVER"
if [ -z "${NO_BUILD:-}" ] && [ "$STRATA" = target/release/strata ]; then
    cargo build --release -p strata >&2
fi
bench_workdir bench-tier-restart
PORT=$(free_port)
DIR=$WORK/data

# start: runs the tiered server on $DIR (SHUTDOWN saves a snapshot); MS is the time
# until it answered PING.
start() {
    T0=$(date +%s%N)
    "$STRATA" serve --port "$PORT" --dir "$DIR" --appendonly no --save "3600 1" \
        --maxmemory "$MAXMEM" --tiering yes >>"$WORK/strata.log" 2>&1 &
    SERVER=$!
    PIDS+=("$SERVER")
    until [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ]; do sleep 0.05; done
    MS=$((($(date +%s%N) - T0) / 1000000))
}

stop() {
    redis-cli -p "$PORT" shutdown >/dev/null 2>&1 || true
    wait "$SERVER" 2>/dev/null || true
}

field() { redis-cli -p "$PORT" info tiering | tr -d '\r' | awk -F: -v f="$1" '$1 == f { print $2 }'; }

# settle: waits until the cold keys stay the same for a second; SETTLED is the time from
# the start of `start` (T0) until then, less that second.
settle() {
    local before after
    after=$(field cold_keys)
    while :; do
        before=$after
        sleep 1
        after=$(field cold_keys)
        [ "$after" = "$before" ] && break
    done
    SETTLED=$((($(date +%s%N) - T0) / 1000000 - 1000))
}

mkdir -p "$DIR"
start
log "filling: $KEYS keys of $VALUE bytes, maxmemory $MAXMEM"
"$STRATA" bench kv -q -c 50 --threads 1 --rounds 1 -P 16 --ops set \
    --target "s=127.0.0.1:$PORT" --keys "seq:0..$KEYS" -d "$VALUE" >/dev/null
log "$(field cold_keys) cold keys; saving"
stop
"$STRATA" export "$WORK/dump.rdb" --dir "$DIR" >/dev/null

RESULTS=$WORK/results.txt
for round in $(seq "$ROUNDS"); do
    # Kept: the last exit was a SHUTDOWN.
    start
    settle
    echo "kept $MS $SETTLED $(field tier_bytes_written) $(field cold_keys)" >>"$RESULTS"
    log "round $round: kept tier, up in $MS ms, settled in $SETTLED ms"
    # Checked: a tenth of the keys written again (other values, which eviction moves to
    # the store), then a SIGKILL. Without a journal the writes are lost: the snapshot is
    # the truth the check restores.
    "$STRATA" bench kv -q -c 50 --threads 1 --rounds 1 -P 16 --ops set \
        --target "s=127.0.0.1:$PORT" --keys "seq:0..$((KEYS / 10))" -d "$((VALUE + 8))" >/dev/null
    kill -9 "$SERVER"
    wait "$SERVER" 2>/dev/null || true
    start
    settle
    echo "checked $MS $SETTLED $(field tier_bytes_written) $(field cold_keys) $(field tier_start_matched) $(field tier_start_rewritten) $(field tier_start_dropped)" >>"$RESULTS"
    log "round $round: checked tier ($(field tier_start)), up in $MS ms, settled in $SETTLED ms"
    stop
    # Rebuilt: the same snapshot without the marker or ORIGIN.
    rm -f "$DIR/tier/KEPT" "$DIR/tier/ORIGIN"
    start
    settle
    echo "rebuilt $MS $SETTLED $(field tier_bytes_written) $(field cold_keys)" >>"$RESULTS"
    log "round $round: rebuilt tier, up in $MS ms, settled in $SETTLED ms"
    stop
    # redis-server loading the same data from an RDB file, all in memory.
    t0=$(date +%s%N)
    $REDIS_SERVER --port "$PORT" --bind 127.0.0.1 --dir "$WORK" --dbfilename dump.rdb \
        --save '' --appendonly no >"$WORK/redis.log" 2>&1 &
    SERVER=$!
    PIDS+=("$SERVER")
    until [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ]; do sleep 0.05; done
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "redis $ms $ms 0 0" >>"$RESULTS"
    log "round $round: redis-server loaded the RDB in $ms ms"
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
    wait "$SERVER" 2>/dev/null || true
done

echo "Restart of $KEYS keys of $VALUE B, tiered with maxmemory $MAXMEM; best of $ROUNDS, $(date -u +%F)"
echo
echo "| start | ms to the first PONG | ms until the tier settled | bytes written to the tier | cold keys |"
echo "| --- | ---: | ---: | ---: | ---: |"
for kind in kept checked rebuilt redis; do
    sort -k3,3n "$RESULTS" | awk -v k="$kind" '$1 == k { print "| " $1 " | " $2 " | " $3 " | " $4 " | " $5 " |"; exit }'
done
echo
echo "Every round (checked rounds add the records the check found as they were, wrote anew, and dropped):"
sed 's/^/    /' "$RESULTS"
