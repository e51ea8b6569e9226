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
# With SPAWN=1 the suite starts the servers itself instead, as it does by default (each
# `start_server` a fresh one with its own config file): units whose tests are all tagged
# external:skip (unit/acl, unit/acl-v2, unit/auth...) run only so. A scratch copy of
# the suite gets a `src/redis-server` that starts Strata (or the reference).
#
# Environment:
#   STRATA=target/release/strata   the binary under test (built first unless NO_BUILD=1)
#   STRATA_ARGS=                   extra options for Strata
#   REDIS_SERVER=redis-server      the reference; REDIS_SERVER= (empty) skips it
#   OUT=target/redis-test-suite    per-unit logs and the result table (.tsv, .md)
#   TIMEOUT=900                    seconds a unit may take
#   SPAWN=                         1: the suite spawns the servers (see above)
#   REPLICA=                       1: each unit's Strata has a Strata replica; once the unit
#                                  is done and the replica has caught up, their DEBUG
#                                  DIGESTs are compared ($OUT/digests.tsv: unit, primary's,
#                                  replica's, same or DIFFERENT)
#   TLS=1                          the suite's own TLS mode: both servers listen on a TLS
#                                  port only, with the suite's test certificates (made with
#                                  REDIS_SRC/utils/gen-test-certs.sh when missing), and the
#                                  suite connects over TLS (needs Debian's tcl-tls). Units
#                                  guarded by `if {$::tls}` (unit/tls) only run this way.
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
SPAWN=${SPAWN:-}
REPLICA=${REPLICA:-}
mkdir -p "$OUT"

command -v tclsh >/dev/null || { echo "tclsh is needed (Debian: tcl)" >&2; exit 2; }
TLS=${TLS:-}
TLS_SERVER=()
TLS_CLI=()
RUNTEST_TLS=()
if [ -n "$TLS" ]; then
    echo 'package require tls' | tclsh >/dev/null 2>&1 ||
        { echo "TLS=1 needs Tcl's tls package (Debian: tcl-tls)" >&2; exit 2; }
    [ -f "$SRC/tests/tls/ca.crt" ] || (cd "$SRC" && ./utils/gen-test-certs.sh >/dev/null 2>&1)
    T=$SRC/tests/tls
    TLS_SERVER=(--tls-cert-file "$T/server.crt" --tls-key-file "$T/server.key"
        --tls-client-cert-file "$T/client.crt" --tls-client-key-file "$T/client.key"
        --tls-ca-cert-file "$T/ca.crt")
    TLS_CLI=(--tls --cacert "$T/ca.crt" --cert "$T/client.crt" --key "$T/client.key")
    RUNTEST_TLS=(--tls)
fi
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

# spawn_suite SIDE -> a scratch copy of the suite whose src/redis-server starts SIDE's
# server with the config file and options the suite gives it.
spawn_suite() {
    local side=$1 dir
    dir=$(mktemp -d)
    cp -r "$SRC/tests" "$SRC/runtest" "$dir/"
    mkdir "$dir/src"
    for b in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
        [ -e "$SRC/src/$b" ] && ln -s "$(readlink -f "$SRC/src/$b")" "$dir/src/$b"
    done
    if [ "$side" = strata ]; then
        # The suite waits for " PID: <pid>" in the log (Redis's logo prints it).
        printf '#!/bin/sh\necho "strata PID: $$"\nexec %q serve %s "$@"\n' \
            "$STRATA" "$STRATA_ARGS" >"$dir/src/redis-server"
    else
        printf '#!/bin/sh\nexec %q "$@"\n' "$(command -v "$REDIS_SERVER")" >"$dir/src/redis-server"
    fi
    chmod +x "$dir/src/redis-server"
    echo "$dir"
}

# count_results LOG -> "ok err exception ignored"
count_results() {
    sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
        /^\[ok\]/ {ok++} /^\[err\]/ {err++} /^\[exception\]/ {exc++} /^\[ignore\]/ {ign++}
        END {printf "%d %d %d %d\n", ok, err, exc, ign}'
}

# replication_field PORT FIELD: a field of INFO replication.
replication_field() {
    redis-cli -p "$1" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"
}

# compare_digests UNIT PRIMARY_PORT REPLICA_PORT -> "unit primary replica same|DIFFERENT"
# once the replica has applied all the primary wrote (or 30 s have passed).
compare_digests() {
    local unit=$1 p=$2 r=$3 want got pd rd
    for _ in $(seq 300); do
        want=$(replication_field "$p" master_repl_offset)
        got=$(replication_field "$r" slave_repl_offset)
        [ -n "$want" ] && [ "$want" = "$got" ] && break
        sleep 0.1
    done
    pd=$(redis-cli -p "$p" debug digest 2>&1)
    rd=$(redis-cli -p "$r" debug digest 2>&1)
    printf '%s\t%s\t%s\t%s\n' "$unit" "$pd" "$rd" "$([ "$pd" = "$rd" ] && echo same || echo DIFFERENT)"
}

# run_unit SIDE UNIT -> prints "ok err exception ignored"
run_unit() {
    if [ -n "$SPAWN" ]; then
        run_unit_spawned "$@"
        return
    fi
    local side=$1 unit=$2 port dir pid log rport rpid
    local listen
    port=$(free_port)
    dir=$(mktemp -d)
    listen=(--port "$port")
    [ -n "$TLS" ] && listen=(--port 0 --tls-port "$port" "${TLS_SERVER[@]}")
    if [ "$side" = strata ]; then
        # shellcheck disable=SC2086
        "$STRATA" serve "${listen[@]}" --dir "$dir" --enable-debug-command yes \
            --enable-protected-configs yes --enable-module-command yes $STRATA_ARGS \
            >"$dir/server.log" 2>&1 &
    else
        "$REDIS_SERVER" "${listen[@]}" --bind 127.0.0.1 --dir "$dir" --save '' \
            --appendonly no --enable-debug-command yes --enable-protected-configs yes \
            --enable-module-command yes >"$dir/server.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 100); do
        [ "$(redis-cli "${TLS_CLI[@]}" -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    if [ -n "$REPLICA" ] && [ "$side" = strata ]; then
        rport=$(free_port)
        mkdir "$dir/replica"
        # shellcheck disable=SC2086
        "$STRATA" serve --port "$rport" --dir "$dir/replica" --enable-debug-command yes \
            --replicaof "127.0.0.1 $port" $STRATA_ARGS >"$dir/replica.log" 2>&1 &
        rpid=$!
    fi
    log="$OUT/$side-$(echo "$unit" | tr / _).log"
    (cd "$SRC" && timeout "$TIMEOUT" ./runtest --host 127.0.0.1 --port "$port" \
        --tags -slow --timeout 60 "${RUNTEST_TLS[@]}" --single "$unit" >"$log" 2>&1)
    if [ -n "${rpid:-}" ]; then
        compare_digests "$unit" "$port" "$rport" >>"$OUT/digests.tsv"
        kill "$rpid" 2>/dev/null
        wait "$rpid" 2>/dev/null
    fi
    # A server a unit left busy (a script in a loop) may not stop on SIGTERM: then kill it.
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf "$dir"
    count_results "$log"
}

# run_unit_spawned SIDE UNIT: the suite starts its own servers (SPAWN=1).
run_unit_spawned() {
    local side=$1 unit=$2 suite log
    suite=$(spawn_suite "$side")
    log="$OUT/$side-$(echo "$unit" | tr / _).log"
    (cd "$suite" && timeout "$TIMEOUT" ./runtest --tags -slow --timeout 60 --clients 1 \
        "${RUNTEST_TLS[@]}" --baseport "$(( ($(free_port) % 20000) + 30000 ))" --single "$unit" >"$log" 2>&1)
    rm -rf "$suite"
    count_results "$log"
}

TSV=$OUT/results.tsv
[ -n "$REPLICA" ] && : >"$OUT/digests.tsv"
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
