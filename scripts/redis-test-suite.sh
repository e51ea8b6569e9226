#!/usr/bin/env bash
# Redis's own test suite as a conformance yardstick.
#
# usage: scripts/redis-test-suite.sh REDIS_SRC [UNIT...]
#
# REDIS_SRC is a checkout of the redis/redis repository at tag 7.0.15 (never committed
# here). Each unit (default: every unit the suite lists) runs in external mode against a
# fresh Strata started for it alone, then against a fresh redis-server run the same way,
# with `--tags -slow`, and the script prints each unit's passed/failed/exception counts
# side by side. docs/compatibility.md keeps the table it prints.
#
# Environment:
#   STRATA=target/release/strata   the binary under test (built first unless NO_BUILD=1)
#   STRATA_ARGS=                   extra options for Strata
#   REDIS_SERVER=redis-server      the reference; REDIS_SERVER= (empty) skips it
#   OUT=target/redis-test-suite    per-unit logs and the result table (.tsv, .md)
#   TIMEOUT=900                    seconds a unit may take
set -uo pipefail

if [ $# -lt 1 ] || [ ! -f "$1/tests/test_helper.tcl" ]; then
    echo "usage: $0 REDIS_SRC [UNIT...]   (REDIS_SRC: redis/redis at 7.0.15)" >&2
    exit 2
fi
SRC=$(cd "$1" && pwd)
shift
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STRATA=${STRATA:-$ROOT/target/release/strata}
STRATA_ARGS=${STRATA_ARGS:-}
REDIS_SERVER=${REDIS_SERVER-redis-server}
OUT=${OUT:-$ROOT/target/redis-test-suite}
TIMEOUT=${TIMEOUT:-900}
mkdir -p "$OUT"

command -v tclsh >/dev/null || { echo "tclsh is needed (Debian: tcl)" >&2; exit 2; }
if [ -z "${NO_BUILD:-}" ] && [ "$STRATA" = "$ROOT/target/release/strata" ]; then
    cargo build --release -p strata >&2 || exit 1
fi
# The suite runs src/redis-cli and src/redis-benchmark in some tests: use the system's.
for b in redis-cli redis-benchmark redis-check-aof redis-check-rdb redis-server; do
    if [ ! -e "$SRC/src/$b" ] && command -v "$b" >/dev/null; then
        ln -s "$(command -v "$b")" "$SRC/src/$b"
    fi
done

if [ $# -gt 0 ]; then
    UNITS=("$@")
else
    # The suite's own list of units (all_tests in test_helper.tcl).
    mapfile -t UNITS < <(sed -n '/^set ::all_tests/,/^}/p' "$SRC/tests/test_helper.tcl" |
        grep -oE '(unit|integration)/[a-z0-9/_-]+')
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_unit SIDE UNIT -> prints "ok err exception ignored"
run_unit() {
    local side=$1 unit=$2 port dir pid log
    port=$(free_port)
    dir=$(mktemp -d)
    if [ "$side" = strata ]; then
        # shellcheck disable=SC2086
        "$STRATA" serve --port "$port" --dir "$dir" --enable-debug-command yes \
            --enable-protected-configs yes --enable-module-command yes $STRATA_ARGS \
            >"$dir/server.log" 2>&1 &
    else
        "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' \
            --appendonly no --enable-debug-command yes --enable-protected-configs yes \
            --enable-module-command yes >"$dir/server.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    log="$OUT/$side-$(echo "$unit" | tr / _).log"
    (cd "$SRC" && timeout "$TIMEOUT" ./runtest --host 127.0.0.1 --port "$port" \
        --tags -slow --timeout 60 --single "$unit" >"$log" 2>&1)
    # A server a unit left busy (a script in a loop) may not stop on SIGTERM: then kill it.
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf "$dir"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
        /^\[ok\]/ {ok++} /^\[err\]/ {err++} /^\[exception\]/ {exc++} /^\[ignore\]/ {ign++}
        END {printf "%d %d %d %d\n", ok, err, exc, ign}'
}

TSV=$OUT/results.tsv
printf 'unit\tstrata_ok\tstrata_err\tstrata_exception\tredis_ok\tredis_err\tredis_exception\n' >"$TSV"
for u in "${UNITS[@]}"; do
    read -r s_ok s_err s_exc _ < <(run_unit strata "$u")
    r_ok=- r_err=- r_exc=-
    if [ -n "$REDIS_SERVER" ]; then
        read -r r_ok r_err r_exc _ < <(run_unit redis "$u")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$u" "$s_ok" "$s_err" "$s_exc" "$r_ok" "$r_err" "$r_exc" | tee -a "$TSV"
done

# The markdown table for docs/compatibility.md, with totals over units where Redis passed
# anything (a unit with no test in external mode counts for neither).
{
    echo "| unit | Strata passed | failed | exception | Redis passed |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    awk -F'\t' 'NR > 1 && $5 != "0" {
        printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5
        so += $2; ro += $5; if ($4 > 0) ex++ }
        END { printf "| **all** | **%d** | | **%d units** | **%d** |\n", so, ex, ro }' "$TSV"
} >"$OUT/results.md"
cat "$OUT/results.md"
