#!/usr/bin/env bash
# Redis's data format on this machine: loading RDB files redis-server wrote, and DUMP /
# RESTORE throughput, Strata against Redis 7.0.15 in the same run.
#
# usage: scripts/bench-rdb.sh [load|payloads|all]...  (default: all)
#
#   load      Two RDB files written by redis-server (SAVE): KEYS strings (SET
#             key:<12 digits> <64 bytes>, values RDB's LZF cannot compress) and MIX_KEYS
#             small collections (a third each: hashes of 8 fields, sets of 8 members,
#             sorted sets of 8 members). Per file and round, timed from exec:
#               redis     redis-server started on the file, until PING answers PONG and
#                         DBSIZE is the file's key count;
#               import    `strata import FILE --dir DIR` until it exits (the load and the
#                         snapshot that keeps it);
#               serve     `strata serve --rdb-import FILE` until PING answers PONG and
#                         DBSIZE is the key count (the snapshot then runs in the
#                         background);
#               restart   `strata serve` on the directory the import wrote, until the
#                         same: a restart, loading Strata's own snapshot of the file's keys.
#             Reported: each one's best round, and the ratios import / redis and serve /
#             redis (goal: <= 0.5), and restart / redis.
#   payloads  `strata bench rdb` against redis-server and Strata side by side (ROUNDS rounds,
#             each running redis then strata), -c 50, at -P 1 and at -P 16: DUMP of
#             random keys, and RESTORE <random key> 0 <payload> REPLACE, of a 1 KiB string
#             (PAYLOAD_KEYS keys) and of a 100-field hash (a tenth as many keys). Each server
#             restores its own DUMP of a template under every key first, and DUMP replies
#             are checked against it (--verify). Reported per test: each side's best
#             throughput, the median over rounds of the same-round Strata / Redis throughput
#             ratio (goal: >= 1.0), each side's median server CPU per request (user +
#             system, from INFO cpu before and after the test) and the median of their
#             same-round ratio: on a shared machine the CPU figure is the steadier one.
#
# Environment:
#   ROUNDS=3             rounds
#   KEYS=10000000        strings in the first file (about 1.2 GB of RAM per loaded server)
#   MIX_KEYS=3000000     collections in the second file
#   N=200000             requests per payloads test
#   PAYLOAD_KEYS=100000  string keys of the payloads tests (a tenth as many hashes)
#   OUT=target/bench-rdb.md   the report (also printed); raw figures in the .csv beside it
#   REDIS_CMD=redis-server    the peer
#   STRATA_BIN=target/release/strata  the server under test (built first unless NO_BUILD=1)
#   STRATA_ARGS=         extra arguments for `strata serve`
#   TIMEOUT=900          seconds a load may take before the script gives up
#   SETTLE=5             seconds of quiet before each timed load (redis, import, restart, serve)
#
# Smoke run: KEYS=200000 MIX_KEYS=60000 N=20000 PAYLOAD_KEYS=10000 ROUNDS=1 scripts/bench-rdb.sh
set -euo pipefail

cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-10000000}
MIX_KEYS=${MIX_KEYS:-3000000}
N=${N:-200000}
PAYLOAD_KEYS=${PAYLOAD_KEYS:-100000}
OUT=${OUT:-target/bench-rdb.md}
REDIS_CMD=${REDIS_CMD:-redis-server}
DEFAULT_STRATA=target/release/strata
STRATA_BIN=${STRATA_BIN:-$DEFAULT_STRATA}
STRATA_ARGS=${STRATA_ARGS:-}
TIMEOUT=${TIMEOUT:-900}
SETTLE=${SETTLE:-5}

SUITES=("$@")
[ ${#SUITES[@]} -eq 0 ] && SUITES=(all)
if [ "${SUITES[*]}" = all ]; then SUITES=(load payloads); fi
for s in "${SUITES[@]}"; do
    case "$s" in load | payloads) ;; *)
        echo "unknown suite '$s' (choose from load payloads all)" >&2
        exit 2
        ;;
    esac
done
for v in ROUNDS KEYS MIX_KEYS N PAYLOAD_KEYS TIMEOUT; do
    case "${!v}" in '' | *[!0-9]* | 0)
        echo "$v must be a positive integer" >&2
        exit 2
        ;;
    esac
done
MIX_KEYS=$((MIX_KEYS / 3 * 3))

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
require_redis_tools "$REDIS_CMD"

if [ "$STRATA_BIN" = "$DEFAULT_STRATA" ] && [ -z "${NO_BUILD:-}" ]; then
    log "building strata (release)..."
    cargo build --release -p strata >&2
fi
[ -x "$STRATA_BIN" ] || {
    echo "$STRATA_BIN not found (build it, or unset NO_BUILD)" >&2
    exit 1
}
STRATA_BIN=$(cd "$(dirname "$STRATA_BIN")" && pwd)/$(basename "$STRATA_BIN")

bench_workdir bench-rdb
now_us() { echo "${EPOCHREALTIME/./}"; }
RAW="${OUT%.md}.csv"
mkdir -p "$(dirname "$OUT")"
echo "suite,dataset,round,who,value,unit" >"$RAW"
row() { echo "$1,$2,$3,$4,$5,$6" >>"$RAW"; }

forget_pid() {
    local keep=() p
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget_pid "$1"
}

# launch LOG CMD...: starts a server in the background; sets PID.
launch() {
    local logf=$1
    shift
    ("$@" >>"$logf" 2>&1) &
    PID=$!
    PIDS+=("$PID")
}

# past_timeout WHAT: exits when the load has run for TIMEOUT seconds since T0.
past_timeout() {
    if [ "$(now_us)" -gt $((T0 + TIMEOUT * 1000000)) ]; then
        log "not ready within $TIMEOUT s ($1)"
        exit 1
    fi
}

# wait_ready PORT [KEYS]: until PING answers PONG (or, with KEYS, LOADING), then until
# DBSIZE is KEYS. Sets READY_MS from T0 (set by the caller just before the launch).
# DBSIZE is asked every 20 ms over one connection held by the shell: a new redis-cli for
# each poll took a share of a core from a server loading on both (and less from one
# loading on one).
wait_ready() {
    local port=$1 expect=${2:-} r line
    while :; do
        r=$(redis-cli -p "$port" PING 2>/dev/null || true)
        case "$r" in
        PONG) break ;;
        LOADING*) [ -n "$expect" ] && break ;;
        esac
        past_timeout "PING: $r"
        sleep 0.01
    done
    [ -n "$expect" ] || {
        READY_MS=$((($(now_us) - T0) / 1000))
        return
    }
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    while :; do
        printf 'DBSIZE\r\n' >&3
        IFS= read -r -t 60 line <&3 || line="(no reply)"
        [ "${line%$'\r'}" = ":$expect" ] && break
        past_timeout "DBSIZE: $line"
        sleep 0.02
    done
    exec 3>&-
    READY_MS=$((($(now_us) - T0) / 1000))
}

redis_on() { # DIR PORT [extra...]
    local dir=$1 port=$2
    shift 2
    launch "$WORK/redis.log" "$REDIS_CMD" --port "$port" --bind 127.0.0.1 --dir "$dir" \
        --dbfilename dump.rdb --save '' --appendonly no "$@"
}

strata_on() { # DIR PORT [extra...]
    local dir=$1 port=$2
    shift 2
    # shellcheck disable=SC2086
    launch "$WORK/strata.log" "$STRATA_BIN" serve --port "$port" --dir "$dir" --save '' \
        $STRATA_ARGS "$@"
}

# gen_mix N: the RESP for N/3 hashes, N/3 sets and N/3 sorted sets of 8 elements each.
gen_mix() {
    awk -v n="$(($1 / 3))" 'BEGIN {
        for (i = 0; i < n; i++) {
            printf "*18\r\n$4\r\nHSET\r\n$14\r\nhash:%09d\r\n", i
            for (j = 0; j < 8; j++) printf "$6\r\nfield%d\r\n$14\r\nvalue-%08d\r\n", j, i
            printf "*10\r\n$4\r\nSADD\r\n$13\r\nset:%09d\r\n", i
            for (j = 0; j < 8; j++) printf "$12\r\nmember%06d\r\n", (i * 8 + j) % 1000000
            printf "*18\r\n$4\r\nZADD\r\n$14\r\nzset:%09d\r\n", i
            for (j = 0; j < 8; j++) printf "$4\r\n%04d\r\n$12\r\nmember%06d\r\n", j * 7 + i % 13, (i + j) % 1000000
        }
    }'
}

# make_rdb NAME KEYS GENERATOR: redis-server loads the generator's RESP and SAVEs; sets
# RDB_FILE to the file's path.
make_rdb() {
    local name=$1 keys=$2 gen=$3 dir="$WORK/$1" port out d
    mkdir -p "$dir"
    port=$(free_port)
    redis_on "$dir" "$port"
    T0=$(now_us)
    wait_ready "$port"
    out=$($gen "$keys" | redis-cli -p "$port" --pipe 2>&1 | tail -n 1)
    d=$(redis-cli -p "$port" DBSIZE)
    case "$out" in *"errors: 0,"*) ;; *)
        log "loading $name into redis-server failed: $out"
        exit 1
        ;;
    esac
    [ "$d" = "$keys" ] || {
        log "loading $name: DBSIZE $d, expected $keys"
        exit 1
    }
    redis-cli -p "$port" SAVE >/dev/null
    stop "$PID"
    RDB_FILE=$dir/dump.rdb
    log "  $name: $keys keys, $(du -h "$RDB_FILE" | cut -f1) RDB"
}

# settle: before each timed load, the disk caught up and SETTLE seconds for the kernel to
# take back what the run before freed (started at once after `strata import`, which
# freed its memory and wrote a snapshot, a load took about a tenth longer, in CPU too).
settle() {
    sync
    sleep "$SETTLE"
}

load_suite() {
    local ds file keys round port dir t
    for ds in strings mix; do
        if [ "$ds" = strings ]; then
            keys=$KEYS
            make_rdb strings "$KEYS" gen_keys
        else
            keys=$MIX_KEYS
            make_rdb mix "$MIX_KEYS" gen_mix
        fi
        file=$RDB_FILE
        for round in $(seq 1 "$ROUNDS"); do
            settle
            # redis-server loading the file.
            port=$(free_port)
            T0=$(now_us)
            redis_on "$(dirname "$file")" "$port"
            wait_ready "$port" "$keys"
            stop "$PID"
            row load "$ds" "$round" redis "$READY_MS" ms
            log "  $ds round $round: redis-server loaded in $READY_MS ms"
            # strata import into a fresh directory.
            dir="$WORK/import-$ds"
            rm -rf "$dir"
            settle
            T0=$(now_us)
            "$STRATA_BIN" import "$file" --dir "$dir" >>"$WORK/import.log" 2>&1
            t=$((($(now_us) - T0) / 1000))
            row load "$ds" "$round" import "$t" ms
            log "  $ds round $round: strata import in $t ms"
            # strata serve on what the import wrote: a restart from Strata's own snapshot.
            settle
            port=$(free_port)
            T0=$(now_us)
            strata_on "$dir" "$port"
            wait_ready "$port" "$keys"
            stop "$PID"
            row load "$ds" "$round" restart "$READY_MS" ms
            log "  $ds round $round: strata serve on the imported directory ready in $READY_MS ms"
            rm -rf "$dir"
            # strata serve --rdb-import until it serves every key.
            dir="$WORK/serve-$ds"
            rm -rf "$dir"
            settle
            port=$(free_port)
            T0=$(now_us)
            strata_on "$dir" "$port" --rdb-import "$file"
            wait_ready "$port" "$keys"
            stop "$PID"
            row load "$ds" "$round" serve "$READY_MS" ms
            log "  $ds round $round: strata serve --rdb-import ready in $READY_MS ms"
            rm -rf "$dir"
        done
        rm -f "$file"
    done
}

# payloads_at P: one `strata bench rdb` run at pipeline depth P against both servers; its
# rows (throughput and server CPU per request) go into the raw figures.
payloads_at() {
    local p=$1 csv="$WORK/payloads-P$1.csv" out="$WORK/payloads-P$1.txt"
    if ! "$STRATA_BIN" bench rdb --target "redis=127.0.0.1:$REDIS_PORT" \
        --target "strata=127.0.0.1:$STRATA_PORT" --rounds "$ROUNDS" -n "$N" -c 50 -P "$p" \
        --string-keys "$PAYLOAD_KEYS" --hash-keys $((PAYLOAD_KEYS / 10)) --verify -q \
        --csv "$csv" >"$out" 2>&1; then
        log "strata bench rdb -P $p failed:"
        cat "$out" >&2
        exit 1
    fi
    # target,round,phase,op,count,errors,elapsed_s,ops_per_sec,...,server_cpu_us_per_op
    awk -F, -v p="$p" 'NR > 1 {
        t = tolower($4)
        gsub(/ /, "-", t)
        printf "payloads,%s-P%s,%s,%s,%s,rps\n", t, p, $2, $1, $8
        printf "payload-cpu,%s-P%s,%s,%s,%s,us\n", t, p, $2, $1, $15
    }' "$csv" >>"$RAW"
    log "$(sed -n '/^ratio to redis/,$p' "$out")"
}

payloads_suite() {
    mkdir -p "$WORK/p-redis"
    REDIS_PORT=$(free_port)
    redis_on "$WORK/p-redis" "$REDIS_PORT"
    local redis_pid=$PID
    STRATA_PORT=$(free_port)
    strata_on "$WORK/p-strata" "$STRATA_PORT" --appendonly no
    local strata_pid=$PID
    T0=$(now_us)
    wait_ready "$REDIS_PORT"
    T0=$(now_us)
    wait_ready "$STRATA_PORT"
    payloads_at 1
    payloads_at 16
    stop "$redis_pid"
    stop "$strata_pid"
}

for s in "${SUITES[@]}"; do
    log "== $s"
    "${s}_suite"
done

# The report: loads, each side's best round (least time); payloads, best throughput and the
# medians over rounds described above.
{
    echo "# bench-rdb: Strata against $($REDIS_CMD --version | awk '{ print $3 }' | tr -d 'v=')"
    echo
    echo "Machine: $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); ROUNDS=$ROUNDS."
    echo
    if grep -q '^load,' "$RAW"; then
        echo "| file | keys | redis-server loads (ms) | strata import (ms) | import / redis | strata serve --rdb-import (ms) | serve / redis | restart from the import (ms) | restart / redis |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        for ds in strings mix; do
            keys=$KEYS
            [ "$ds" = mix ] && keys=$MIX_KEYS
            awk -F, -v ds="$ds" -v keys="$keys" '
                $1 == "load" && $2 == ds { if (!($4 in best) || $5 < best[$4]) best[$4] = $5 }
                END {
                    if (!("redis" in best)) exit
                    printf "| %s | %d | %d | %d | %.2f | %d | %.2f | %d | %.2f |\n", ds, keys, best["redis"],
                        best["import"], best["import"] / best["redis"], best["serve"], best["serve"] / best["redis"],
                        best["restart"], best["restart"] / best["redis"]
                }' "$RAW"
        done
        echo
    fi
    if grep -q '^payloads,' "$RAW"; then
        echo "| test | redis-server (req/s) | Strata (req/s) | Strata / Redis | redis-server CPU (µs/req) | Strata CPU (µs/req) | CPU Strata / Redis |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        # Per test: best throughput of each side; medians over rounds of CPU per request
        # and of the same-round ratios.
        awk -F, '
            function median(list, n, a, i, j, t) {
                n = split(list, a, " ")
                for (i = 2; i <= n; i++)
                    for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            }
            $1 == "payloads" || $1 == "payload-cpu" {
                if (!($2 in seen)) { seen[$2] = 1; order[++tests] = $2 }
                v[$1, $2, $3, $4] = $5
                rounds[$2, $3] = 1
            }
            $1 == "payloads" && $5 > best[$2, $4] { best[$2, $4] = $5 }
            END {
                for (i = 1; i <= tests; i++) {
                    t = order[i]
                    tr = ""; cr = ""; rc = ""; sc = ""
                    for (k in rounds) {
                        split(k, key, SUBSEP)
                        if (key[1] != t) continue
                        r = key[2]
                        if (v["payloads", t, r, "redis"] > 0)
                            tr = tr " " v["payloads", t, r, "strata"] / v["payloads", t, r, "redis"]
                        rc = rc " " v["payload-cpu", t, r, "redis"]
                        sc = sc " " v["payload-cpu", t, r, "strata"]
                        if (v["payload-cpu", t, r, "redis"] > 0)
                            cr = cr " " v["payload-cpu", t, r, "strata"] / v["payload-cpu", t, r, "redis"]
                    }
                    printf "| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f |\n", t, best[t, "redis"],
                        best[t, "strata"], median(tr), median(rc), median(sc), median(cr)
                }
            }' "$RAW"
    fi
} | tee "$OUT"
