#!/usr/bin/env bash
# The cost of ACL checks: server CPU per request with a restricted user (key patterns and
# categories: every command is checked against them) and with the default user (who may
# do everything), on Strata and on redis-server in the same run.
#
# usage: scripts/bench-acl.sh
#
# Environment:
#   STRATA=target/release/strata   the binary (built first unless NO_BUILD=1)
#   REDIS_SERVER=redis-server      the reference
#   N=2000000                      requests per redis-benchmark run
#   ROUNDS=3                       runs of each (server, user), the users alternating
#   TESTS=set,get                  redis-benchmark -t
#   THREADS=2                      Strata's worker threads
#
# Each run: redis-benchmark -P 16 -c 50 -r 100000 against one server as one user; the
# server's utime+stime (all threads) over the run, per million requests. Reported, not
# asserted: the figures depend on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh

STRATA=${STRATA:-target/release/strata}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
N=${N:-2000000}
ROUNDS=${ROUNDS:-3}
TESTS=${TESTS:-set,get}
THREADS=${THREADS:-2}
CLK_TCK=$(getconf CLK_TCK)

require_redis_tools "$REDIS_SERVER"
if [ -z "${NO_BUILD:-}" ] && [ "$STRATA" = target/release/strata ]; then
    cargo build --release -p strata >&2
fi
bench_workdir bench-acl

start_server() {
    local side=$1 port
    port=$(free_port)
    if [ "$side" = strata ]; then
        mkdir -p "$WORK/data-$port"
        "$STRATA" serve --port "$port" --dir "$WORK/data-$port" --appendonly no --save '' \
            --threads "$THREADS" >"$WORK/$side.log" 2>&1 &
    else
        $REDIS_SERVER --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            >"$WORK/$side.log" 2>&1 &
    fi
    PIDS+=($!)
    SERVER_PID=$!
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    redis-cli -p "$port" ACL SETUSER bench "${BENCH_ACL_RULES[@]}" >/dev/null
    SERVER_PORT=$port
}

# run_one PORT PID USER -> "requests cpu_ticks"
run_one() {
    local port=$1 pid=$2 user=$3 before after auth=()
    [ "$user" = bench ] && auth=(--user bench -a benchpw)
    before=$(cpu_ticks "$pid")
    redis-benchmark -p "$port" "${auth[@]}" -P 16 -c 50 -r 100000 -n "$N" -t "$TESTS" -q \
        >"$WORK/last.txt" 2>/dev/null
    after=$(cpu_ticks "$pid")
    echo "$N $((after - before))"
}

RESULTS=$WORK/results.tsv
for side in redis strata; do
    start_server "$side"
    for round in $(seq "$ROUNDS"); do
        # The order alternates: a run's place in its pair must not tilt the ratio.
        users="default bench"
        [ $((round % 2)) = 0 ] && users="bench default"
        for user in $users; do
            read -r reqs ticks < <(run_one "$SERVER_PORT" "$SERVER_PID" "$user")
            # Every test of -t ran N requests.
            total=$((reqs * $(echo "$TESTS" | tr ',' '\n' | wc -l)))
            printf '%s\t%s\t%s\t%s\t%s\n' "$side" "$user" "$round" "$total" "$ticks" >>"$RESULTS"
            log "$side $user round $round: $ticks ticks for $total requests ($(tr '\r' '\n' <"$WORK/last.txt" | grep -c 'requests per second') tests)"
        done
    done
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
done

echo "| server | default user: CPU s / 1M req | restricted user: CPU s / 1M req | restricted / default (least of each) | restricted / default (median of rounds) |"
echo "| --- | ---: | ---: | ---: | ---: |"
# Two estimates: the least CPU of each user over the rounds, and the median of each
# round's own ratio (its two runs are back to back, so they share the machine's state;
# one quiet or busy run does not move it).
awk -F'\t' -v tck="$CLK_TCK" '
    { cpu = ($5 / tck) / $4 * 1000000; k = $1 SUBSEP $2
      if (!(k in best) || cpu < best[k]) best[k] = cpu
      run[$1, $2, $3] = cpu; rounds[$3] = 1 }
    END {
        for (i = 1; i <= 2; i++) {
            s = (i == 1) ? "redis" : "strata"
            d = best[s, "default"]; b = best[s, "bench"]
            n = 0
            for (r in rounds) if (run[s, "default", r] > 0) v[++n] = run[s, "bench", r] / run[s, "default", r]
            for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (v[y] < v[x]) { t = v[x]; v[x] = v[y]; v[y] = t }
            med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            printf "| %s | %.3f | %.3f | %.3f | %.3f |\n", s, d, b, (d > 0) ? b / d : 0, med
        }
    }' "$RESULTS"
echo
echo "redis-benchmark -P 16 -c 50 -r 100000 -n $N -t $TESTS; $ROUNDS rounds; Strata with $THREADS worker threads."
