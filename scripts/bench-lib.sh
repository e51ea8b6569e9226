# Shared by the benchmark scripts (source it): checks for the peers' tools, the work
# directory and server cleanup, free ports, process CPU.

# Exits unless redis-benchmark, redis-cli, awk and the redis-server command in $1 exist.
require_redis_tools() {
    local redis_cmd=$1 tool
    for tool in redis-benchmark redis-cli awk; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "$tool is required: apt-get install -y redis-server redis-tools" >&2
            exit 1
        fi
    done
    if ! command -v "${redis_cmd%% *}" >/dev/null 2>&1; then
        echo "${redis_cmd%% *} is required: apt-get install -y redis-server" >&2
        exit 1
    fi
}

log() { echo "$*" >&2; }

# bench_workdir NAME: a fresh $WORK directory; every pid added to PIDS is killed and waited
# for, and $WORK removed, when the script exits.
bench_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}

# A loopback port nobody listens on, below the ephemeral range (where outgoing connections
# take their local ports, which a connect probe cannot see).
EPHEMERAL_LOW=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$EPHEMERAL_LOW" -gt 12000 ] || EPHEMERAL_LOW=32768
free_port() {
    local p
    while :; do
        p=$((10000 + RANDOM % (EPHEMERAL_LOW - 10000)))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
}

# CPU ticks (utime+stime, all threads) of a process: fields 14 and 15 of /proc/PID/stat,
# counted after the ")" that ends the command name (which may hold spaces).
cpu_ticks() {
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# gen_keys N: the RESP for N SETs of key:<12 digits> (the key names redis-benchmark's -r
# uses) to 64 bytes, deterministic, for redis-cli --pipe. The values are pseudo-random
# letters and digits (windows into a fixed random pool), which RDB's LZF cannot compress:
# with repetitive values (zeros, redis-benchmark's "xxx...") Redis's RDB would be a fraction
# of the size of Strata's uncompressed snapshot, and a restart would compare different work.
gen_keys() {
    awk -v n="$1" 'BEGIN {
        srand(1)
        chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        pool = ""
        for (i = 0; i < 4160; i++) pool = pool substr(chars, int(rand() * 62) + 1, 1)
        for (i = 0; i < n; i++)
            printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$64\r\n%s\r\n", i, substr(pool, (i * 61) % 4096 + 1, 64)
    }'
}

# wait_ping PORT: waits up to 20 s for a server to answer PING on PORT, else exits.
wait_ping() {
    local i
    for i in $(seq 400); do
        redis-cli -p "$1" ping >/dev/null 2>&1 && return
        sleep 0.05
    done
    log "server on port $1 did not start"
    exit 1
}
