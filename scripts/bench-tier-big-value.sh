#!/usr/bin/env bash
# One value larger than maxmemory, in use: redis-benchmark's list tests (every push and
# pop goes to one key, `mylist`; 200,000 elements of 200 bytes, about 40 MB) against a
# tiered Strata with `maxmemory 30mb`, an in-memory Strata and redis-server, one after
# the other in the same run. The tiered server's INFO says how often the list came back
# from the tier.
#
# usage: scripts/bench-tier-big-value.sh   (STRATA=path/to/strata, default the release build)
set -euo pipefail
B=${STRATA:-target/release/strata}
N=${N:-200000}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
run() {
    timeout 600 redis-benchmark -p "$1" -q -n "$N" -d 200 -P 8 -t lpush,rpush,lpop,rpop,lrange_100 2>&1 |
        tr '\r' '\n' | grep "per second" | sed "s/^/$2 /"
}
start() {
    "$@" > "$D/log" 2>&1 &
    sleep 1
}
mkdir "$D/tiered" "$D/memory"
start "$B" serve --port 7321 --dir "$D/tiered" --tiering yes --maxmemory 30mb
run 7321 tiered
redis-cli -p 7321 info tiering | grep -E "moved_to_ram|tier_bytes_read"
redis-cli -p 7321 shutdown nosave > /dev/null || true
start "$B" serve --port 7322 --dir "$D/memory"
run 7322 memory
redis-cli -p 7322 shutdown nosave > /dev/null || true
start redis-server --port 7323 --save '' --appendonly no --dir "$D"
run 7323 redis
redis-cli -p 7323 shutdown nosave > /dev/null || true
