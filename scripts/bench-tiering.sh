#!/usr/bin/env bash
# Tiering (`tiering yes`) against the same data held all in memory, and against SSDB (an
# LSM store on LevelDB), on this machine in the same run. Every server runs without
# persistence (appendonly no, no save rules; SSDB has its own LevelDB), so what is measured
# is the tier, not the journal.
#
# Shape "optane" (Redis on Optane memory's: hot data in RAM, the rest on SSD):
#   fill     KEYS = FACTOR x MAXMEM / VALUE keys written once each, in order
#            (strata bench kv --ops set --keys seq:..), against an in-memory Strata and a
#            tiered one with maxmemory MAXMEM: SETs per second
#   zipf     GETs for DURATION with zipfian (0.99) keys over all KEYS: ops/s and p99
#   uniform  GETs for DURATION with uniform keys: ops/s and p99, next to the disk's own
#            random 4 KiB read rate (O_DIRECT, one at a time) measured in the same run
#   rss      the tiered server's largest RSS, sampled every second
#   listing  a full SCAN (redis-cli --scan), KEYS of a pattern few keys match, and 2000
#            RANDOMKEYs: seconds each (ROUNDS rounds alternating the targets, the best),
#            and the bytes the tier read meanwhile (INFO tier_bytes_read)
# Shape "ssdb" (SSDB's write-up: small values, data many times RAM), when SSDB is set:
#   SKEYS keys of SVALUE bytes into a tiered Strata with maxmemory SMAXMEM, and into SSDB:
#   fill SETs/s, uniform GETs/s over all keys, and GETs/s over the last tenth written
#   (the write-up's "recent data" case), the last also against an in-memory Strata.
#
# Environment:
#   ROUNDS=3 DURATION=15s     read rounds (alternating targets) and each round's length
#   MAXMEM=256mb VALUE=1024 FACTOR=5
#   SSDB=                     path of ssdb-server (the "ssdb" shape runs only when set)
#   SHAPES=optane,ssdb        which shapes to run
#   SMAXMEM=64mb SKEYS=10000000 SVALUE=50
#   TIER_MEMCG=               e.g. 768mb: the tiered server runs in a memory cgroup of that
#                             size (root; cgroup v1 or v2), which charges it the page cache
#                             of the tier's files, so reads of a tier larger than what is
#                             left go to the device. Unset, a machine with more RAM than
#                             the tier keeps it all in the page cache.
#   STRATA=target/release/strata  (built unless NO_BUILD=1)
#   OUT=target/bench-tiering.md   the table (also printed); raw CSVs beside it
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-15s}
MAXMEM=${MAXMEM:-256mb}
VALUE=${VALUE:-1024}
FACTOR=${FACTOR:-5}
SMAXMEM=${SMAXMEM:-64mb}
SKEYS=${SKEYS:-10000000}
SVALUE=${SVALUE:-50}
SHAPES=${SHAPES:-optane,ssdb}
STRATA=${STRATA:-target/release/strata}
OUT=${OUT:-target/bench-tiering.md}
RAW=${OUT%.md}

if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -p strata >&2
fi
command -v redis-cli >/dev/null || { log "redis-cli is needed"; exit 1; }
bench_workdir bench-tiering
mkdir -p "$(dirname "$OUT")"

bytes() { # 256mb -> bytes
    local n=${1%[mMgGkK][bB]} u=${1: -2}
    case "$u" in
        mb|MB) echo $((n << 20)) ;; gb|GB) echo $((n << 30)) ;; kb|KB) echo $((n << 10)) ;;
        *) echo "$1" ;;
    esac
}


# strata_up NAME PORT ARGS...: a Strata server without persistence in $WORK/NAME.
strata_up() {
    local name=$1 port=$2
    shift 2
    mkdir -p "$WORK/$name"
    "$STRATA" serve --port "$port" --dir "$WORK/$name" --appendonly no --save "" "$@" \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    wait_ping "$port"
}

# memcg_join PID SIZE: PID into a new memory cgroup limited to SIZE (see TIER_MEMCG),
# removed at exit once PID is gone.
memcg_join() {
    local dir limit=memory.limit_in_bytes
    if [ -d /sys/fs/cgroup/memory ]; then
        dir=/sys/fs/cgroup/memory/strata-bench-$$
    elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        dir=/sys/fs/cgroup/strata-bench-$$
        limit=memory.max
    else
        log "TIER_MEMCG: no memory cgroup here"
        exit 1
    fi
    mkdir "$dir" && echo "$(bytes "$2")" >"$dir/$limit" && echo "$1" >"$dir/cgroup.procs" \
        || { log "TIER_MEMCG: cannot use $dir (root is needed)"; exit 1; }
    trap 'bench_cleanup; rmdir "'"$dir"'" 2>/dev/null || true' EXIT
}

# rss_watch PID FILE: the largest VmRSS (kB) of PID, sampled every second, into FILE.
rss_watch() {
    (
        local max=0 r
        while kill -0 "$1" 2>/dev/null; do
            r=$(awk '/VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0)
            [ "${r:-0}" -gt "$max" ] && max=$r && echo "$max" >"$2"
            sleep 1
        done
    ) &
    PIDS+=($!)
}

# bench ARGS...: strata bench kv, quiet, CSV rows (with a header) to standard output.
bench() {
    "$STRATA" bench kv -q -c 50 --threads 1 --csv - "$@" | grep -v '^ *$'
}

# best CSV TARGET COLUMN: the best (highest ops/s, or lowest latency) value over rounds.
best() {
    awk -F, -v t="$2" -v c="$3" 'NR > 1 && $1 == t {
        v = $c + 0
        if (c == 8) { if (v > b) b = v } else if (b == "" || v < b) b = v
    } END { print b + 0 }' "$1"
}

# disk_iops FILE: random 4 KiB reads per second of FILE with O_DIRECT, one at a time, 5 s.
disk_iops() {
    python3 - "$1" <<'PY'
import mmap, os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
blocks = os.fstat(fd).st_size // 4096
buf = mmap.mmap(-1, 4096)
n, end = 0, time.time() + 5
while time.time() < end:
    os.preadv(fd, [buf], random.randrange(blocks) * 4096)
    n += 1
print(int(n / 5))
PY
}

MEM_PORT=$(free_port)
TIER_PORT=$(free_port)
KEYS=$(( $(bytes "$MAXMEM") * FACTOR / VALUE ))
log "optane shape: $KEYS keys of $VALUE bytes, maxmemory $MAXMEM"
strata_up mem "$MEM_PORT"
MEM_PID=${PIDS[-1]}
strata_up tier "$TIER_PORT" --maxmemory "$MAXMEM" --tiering yes
TIER_PID=${PIDS[-1]}
[ -n "${TIER_MEMCG:-}" ] && memcg_join "$TIER_PID" "$TIER_MEMCG"
rss_watch "${PIDS[-1]}" "$WORK/tier.rss"
TARGETS=(--target "mem=127.0.0.1:$MEM_PORT" --target "tier=127.0.0.1:$TIER_PORT")

if [[ ",$SHAPES," == *,optane,* ]]; then
    # The CPU each server spent on the fill, and in the 5 s after it (the tier's flushes
    # and compactions catch up): a figure the machine's noise moves less than a rate.
    M0=$(cpu_ticks "$MEM_PID")
    T0=$(cpu_ticks "$TIER_PID")
    bench "${TARGETS[@]}" --rounds 1 -P 16 --ops set --keys "seq:0..$KEYS" -d "$VALUE" \
        >"$RAW-fill.csv"
    sleep 5
    FILL_CPU=$(awk -v m=$(( $(cpu_ticks "$MEM_PID") - M0 )) -v t=$(( $(cpu_ticks "$TIER_PID") - T0 )) \
        -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "in memory %.2f s, tiered %.2f s (%.1fx)", m / hz, t / hz, (m > 0 ? t / m : 0) }')
    bench "${TARGETS[@]}" --rounds "$ROUNDS" -P 1 --ops get --keys "zipf:$KEYS:0.99" \
        -d "$VALUE" --duration "$DURATION" >"$RAW-zipf.csv"
    bench "${TARGETS[@]}" --rounds "$ROUNDS" -P 1 --ops get --keys "random:$KEYS" \
        -d "$VALUE" --duration "$DURATION" >"$RAW-uniform.csv"
    # listing PORT: seconds of a full SCAN, of KEYS, and of 2000 RANDOMKEYs.
    listing() {
        local t0 t1 t2
        t0=$EPOCHREALTIME
        redis-cli -p "$1" --scan >/dev/null
        t1=$EPOCHREALTIME
        redis-cli -p "$1" keys '*99999*' >/dev/null
        t2=$EPOCHREALTIME
        for _ in $(seq 10); do
            yes RANDOMKEY | head -n 200 | redis-cli -p "$1" >/dev/null
        done
        awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$EPOCHREALTIME" \
            'BEGIN { printf "%.2f %.2f %.2f\n", b - a, c - b, d - c }'
    }
    READ0=$(redis-cli -p "$TIER_PORT" info tiering | tr -d '\r' | awk -F: '$1 == "tier_bytes_read" { print $2 }')
    for _ in $(seq "$ROUNDS"); do
        echo "mem $(listing "$MEM_PORT")"
        echo "tier $(listing "$TIER_PORT")"
    done >"$RAW-listing.txt"
    redis-cli -p "$TIER_PORT" info tiering | tr -d '\r' >"$WORK/tier.info"
    LISTING_READ=$(( $(awk -F: '$1 == "tier_bytes_read" { print $2 }' "$WORK/tier.info") - READ0 ))
    BIGGEST=$(find "$WORK/tier/tier" -type f -name '*' -size +1M -printf '%s %p\n' \
        | sort -n | tail -1 | cut -d' ' -f2)
    IOPS=$(disk_iops "$BIGGEST")

    row() { # NAME CSV COLUMN
        local m t
        m=$(best "$2" mem "$3")
        t=$(best "$2" tier "$3")
        echo "| $1 | $m | $t | $(awk -v a="$t" -v b="$m" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') |"
    }
    {
        echo "Tiering, optane shape: $KEYS keys of $VALUE B (${FACTOR}x maxmemory $MAXMEM), $(date -u +%F)"
        echo
        echo "| measure | in memory | tiered | tiered / in memory |"
        echo "| --- | ---: | ---: | ---: |"
        row "fill, SET/s (-P 16)" "$RAW-fill.csv" 8
        row "zipf 0.99 GET/s" "$RAW-zipf.csv" 8
        row "zipf 0.99 GET p99 us" "$RAW-zipf.csv" 12
        row "uniform GET/s" "$RAW-uniform.csv" 8
        row "uniform GET p99 us" "$RAW-uniform.csv" 12
        for col in 2:"full SCAN, s" 3:"KEYS, s" 4:"2000 RANDOMKEY, s"; do
            awk -v c="${col%%:*}" -v name="${col#*:}" '
                { v = $c + 0; if (!($1 in b) || v < b[$1]) b[$1] = v }
                END { printf "| %s | %.2f | %.2f | %.2f |\n", name, b["mem"], b["tier"], (b["mem"] > 0 ? b["tier"] / b["mem"] : 0) }
            ' "$RAW-listing.txt"
        done
        echo
        echo "The tier read $LISTING_READ bytes during the listings."
        echo "CPU of the fill (and the 5 s after it): $FILL_CPU."
        echo "Disk: $IOPS random 4 KiB reads/s (O_DIRECT, queue depth 1) of the tier's largest file."
        [ -n "${TIER_MEMCG:-}" ] && echo "The tiered server ran in a memory cgroup of $TIER_MEMCG (page cache included)."
        echo "Tiered server's largest RSS: $(( $(cat "$WORK/tier.rss") / 1024 )) MiB;" \
            "$(grep -E '^(hot_keys|cold_keys|tier_bytes_written|cold_disk_bytes):' "$WORK/tier.info" | tr '\n' ' ')"
    } | tee "$OUT"
fi

if [ -n "${SSDB:-}" ] && [[ ",$SHAPES," == *,ssdb,* ]]; then
    S_PORT=$(free_port)
    mkdir -p "$WORK/ssdb/var"
    printf 'work_dir = %s\npidfile = %s\nserver:\n\tip: 127.0.0.1\n\tport: %s\nlogger:\n\tlevel: error\n\toutput: %s\nleveldb:\n\tcache_size: 64\n\twrite_buffer_size: 64\n\tcompaction_speed: 1000\n\tcompression: yes\n' \
        "$WORK/ssdb/var" "$WORK/ssdb/var/ssdb.pid" "$S_PORT" "$WORK/ssdb/log.txt" \
        >"$WORK/ssdb/ssdb.conf"
    "$SSDB" "$WORK/ssdb/ssdb.conf" >/dev/null 2>&1 &
    PIDS+=($!)
    wait_ping "$S_PORT"
    redis-cli -p "$TIER_PORT" flushall >/dev/null
    redis-cli -p "$MEM_PORT" flushall >/dev/null
    # The tiered server keeps maxmemory MAXMEM from above: SMAXMEM applies from here.
    redis-cli -p "$TIER_PORT" config set maxmemory "$(bytes "$SMAXMEM")" >/dev/null
    log "ssdb shape: $SKEYS keys of $SVALUE bytes, maxmemory $SMAXMEM"
    T2=(--target "tier=127.0.0.1:$TIER_PORT" --target "ssdb=127.0.0.1:$S_PORT")
    bench "${T2[@]}" --rounds 1 -P 16 --ops set --keys "seq:0..$SKEYS" -d "$SVALUE" \
        >"$RAW-ssdb-fill.csv"
    bench --target "mem=127.0.0.1:$MEM_PORT" --rounds 1 -P 16 --ops set \
        --keys "seq:$((SKEYS * 9 / 10))..$SKEYS" -d "$SVALUE" >/dev/null
    bench "${T2[@]}" --rounds "$ROUNDS" -P 1 --ops get --keys "random:$SKEYS" \
        -d "$SVALUE" --duration "$DURATION" >"$RAW-ssdb-uniform.csv"
    # "Recent": the last tenth written. random:N covers 0..N, so the recent keys are
    # reached as a zipfian over the whole space would not; seq is one pass.
    bench "${T2[@]}" --target "mem=127.0.0.1:$MEM_PORT" --rounds "$ROUNDS" -P 1 --ops get \
        --keys "seq:$((SKEYS * 9 / 10))..$SKEYS" -d "$SVALUE" >"$RAW-ssdb-recent.csv"
    srow() { # NAME CSV COLUMN
        local t s
        t=$(best "$2" tier "$3")
        s=$(best "$2" ssdb "$3")
        echo "| $1 | $t | $s | $(awk -v a="$t" -v b="$s" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') |"
    }
    {
        echo
        echo "SSDB shape: $SKEYS keys of $SVALUE B, tiered maxmemory $SMAXMEM"
        echo
        echo "| measure | Strata tiered | SSDB | Strata / SSDB |"
        echo "| --- | ---: | ---: | ---: |"
        srow "fill, SET/s (-P 16)" "$RAW-ssdb-fill.csv" 8
        srow "uniform GET/s" "$RAW-ssdb-uniform.csv" 8
        srow "uniform GET p99 us" "$RAW-ssdb-uniform.csv" 12
        srow "recent tenth GET/s" "$RAW-ssdb-recent.csv" 8
        echo
        echo "Recent tenth, in-memory Strata: $(best "$RAW-ssdb-recent.csv" mem 8) GET/s" \
            "(tiered / in memory: $(awk -v a="$(best "$RAW-ssdb-recent.csv" tier 8)" \
                -v b="$(best "$RAW-ssdb-recent.csv" mem 8)" 'BEGIN { printf "%.2f", a / b }'))"
    } | tee -a "$OUT"
fi
