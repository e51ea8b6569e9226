#!/usr/bin/env bash
# SET and GET over a Unix socket and over TCP: Strata against redis-server, both listening
# on both (`unixsocket`), without persistence, in the same run.
#
# usage: scripts/bench-unix-socket.sh
#
# Each round runs, for -P 1 and -P 16, `redis-benchmark -n N -c 50 -r 100000 -t set|get`
# over each transport against each server. Prints one line per run, then per
# (transport, test, -P) each server's best round and Strata / Redis.
# Environment: ROUNDS=3  N=300000
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

ROUNDS=${ROUNDS:-3}
N=${N:-300000}
require_redis_tools redis-server
bench_workdir bench-unix-socket
REDIS_CMD="redis-server --unixsocket $WORK/redis.sock"
STRATA_ARGS="--unixsocket $WORK/strata.sock"
start_pair

for round in $(seq "$ROUNDS"); do
    for p in 1 16; do
        for test in set get; do
            for transport in unix tcp; do
                for server in redis strata; do
                    if [ "$server" = redis ]; then
                        port=$REDIS_PORT pid=$REDIS_PID
                    else
                        port=$STRATA_PORT pid=$STRATA_PID
                    fi
                    socket=()
                    [ "$transport" = tcp ] || socket=(-s "$WORK/$server.sock")
                    rb_run "$port" "$pid" "$N" "${socket[@]}" -c 50 -P "$p" -r 100000 -t "$test"
                    [ -z "$RB_ERR" ] || { log "$server $transport $test: $RB_ERR"; exit 1; }
                    echo "round $round $transport $test P$p $server ${RB_RPS%%,*}"
                done
            done
        done
    done
done | tee "$WORK/runs.txt"

echo
echo "transport test -P redis_best strata_best strata/redis"
awk '{ k = $3 " " $4 " " $5; if ($7 > best[k, $6]) best[k, $6] = $7; keys[k] = 1 }
     END { for (k in keys) printf "%s %.0f %.0f %.2f\n", k, best[k, "redis"],
           best[k, "strata"], best[k, "strata"] / best[k, "redis"] }' "$WORK/runs.txt" | sort
