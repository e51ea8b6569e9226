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

# The restricted user of the ACL benchmarks: only the benchmark's keys, only reads and
# writes (and what redis-benchmark asks at start), and no dangerous command.
BENCH_ACL_RULES=(on '>benchpw' '~key:*' '~counter:*' '%R~ro:*' +@read +@write +@connection
    -@dangerous +config\|get)

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

# gen_keys N [SIZE] [TTL_EVERY]: the RESP for N SETs of key:<12 digits> (the key names
# redis-benchmark's -r uses) to SIZE bytes (64), deterministic, for redis-cli --pipe; with
# TTL_EVERY, every TTL_EVERY-th key gets EX 86400. The values are pseudo-random letters and
# digits (windows into a fixed random pool), which RDB's LZF cannot compress: with
# repetitive values (zeros, redis-benchmark's "xxx...") Redis's RDB would be a fraction of
# the size of Strata's uncompressed snapshot, and a restart would compare different work.
gen_keys() {
    awk -v n="$1" -v size="${2:-64}" -v every="${3:-0}" 'BEGIN {
        srand(1)
        chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        pool = ""
        for (i = 0; i < 4096 + size; i++) pool = pool substr(chars, int(rand() * 62) + 1, 1)
        for (i = 0; i < n; i++) {
            v = substr(pool, (i * 61) % 4096 + 1, size)
            if (every > 0 && i % every == 0)
                printf "*5\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n$2\r\nEX\r\n$5\r\n86400\r\n", i, size, v
            else
                printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, size, v
        }
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

# ---- A Strata and a Redis side by side, both without persistence. The callers may set
# REDIS_CMD, STRATA_CMD and STRATA_ARGS (defaults below), and have called bench_workdir.
REDIS_CMD=${REDIS_CMD:-redis-server}
DEFAULT_STRATA="target/release/strata serve"
STRATA_CMD=${STRATA_CMD:-$DEFAULT_STRATA}
STRATA_ARGS=${STRATA_ARGS:-}

# pair_server NAME (redis|strata) -> sets SERVER_PID and SERVER_PORT; a few tries, in case
# another process takes the port between the probe and the bind.
pair_server() {
    local try
    for try in 1 2 3 4 5; do
        SERVER_PORT=$(free_port)
        if pair_server_on "$1" "$SERVER_PORT"; then
            return
        fi
    done
    log "$1 did not start (command: $LAST_CMD); its log:"
    cat "$WORK/$1.log" >&2
    exit 1
}

# pair_server_on NAME PORT: starts it and waits for PONG; false if it exited instead.
pair_server_on() {
    local name=$1 port=$2 cmd
    if [ "$name" = redis ]; then
        cmd="$REDIS_CMD --port $port --bind 127.0.0.1 --save '' --appendonly no --daemonize no"
    else
        # Configured as Redis is above (no journal, no snapshots), in a fresh directory:
        # the durable default would replay the previous server's data into this one.
        cmd="$STRATA_CMD --port $port --appendonly no --save '' --dir $(mktemp -d "$WORK/strata.XXXXXX") $STRATA_ARGS"
    fi
    # exec: $! is the server itself, not a shell around it.
    LAST_CMD=$cmd
    (eval "exec $cmd" >"$WORK/$name.log" 2>&1) &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    local i
    for i in $(seq 1 200); do
        if [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; then
            return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID" 2>/dev/null || true
            return 1
        fi
        sleep 0.05
    done
    log "$name did not answer PING on port $port within 10 s ($cmd); its log:"
    cat "$WORK/$name.log" >&2
    exit 1
}

stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# start_pair -> REDIS_PID REDIS_PORT STRATA_PID STRATA_PORT
start_pair() {
    pair_server redis
    REDIS_PID=$SERVER_PID REDIS_PORT=$SERVER_PORT
    pair_server strata
    STRATA_PID=$SERVER_PID STRATA_PORT=$SERVER_PORT
}

stop_pair() {
    stop_pid "$REDIS_PID"
    stop_pid "$STRATA_PID"
}

# rss_kb PID [FIELD]: a /proc/PID/status size in kB (VmRSS unless FIELD is given).
rss_kb() {
    awk -v f="${2:-VmRSS}:" '$1 == f { print $2 }' "/proc/$1/status"
}

# rb_run PORT PID REQUESTS ARGS...: one `redis-benchmark -n REQUESTS ARGS... --csv` against
# the server PID listens on. Sets RB_RPS and RB_P99 (of the last line: an LRANGE test first
# prints the line of the LPUSHes that fill its list), RB_TICKS (the server's CPU ticks over
# the run), RB_CLIENT and RB_WALL (the client's CPU and wall seconds: CPU near wall means
# the client was the bottleneck) and RB_ERR (empty on success). Exits if the server died.
rb_run() {
    local port=$1 pid=$2 n=$3 before after rc=0 csv
    shift 3
    local TIMEFORMAT='%3R %3U %3S'
    before=$(cpu_ticks "$pid")
    { time redis-benchmark -h 127.0.0.1 -p "$port" -n "$n" --csv "$@" \
        >"$WORK/out.csv" 2>"$WORK/err.txt"; } 2>"$WORK/time.txt" || rc=$?
    after=$(cpu_ticks "$pid")
    RB_TICKS=$((after - before))
    read -r RB_WALL RB_CLIENT < <(awk '{ print $1, $2 + $3 }' "$WORK/time.txt") || true
    if ! kill -0 "$pid" 2>/dev/null; then
        log "the server on port $port died during: redis-benchmark $*"
        exit 1
    fi
    # The test's line: "SET","68027.21","0.491",...,"p99","max".
    csv=$(awk -F, 'NR > 1 { gsub(/"/, ""); line = $2 "," $7 } END { print line }' "$WORK/out.csv")
    RB_ERR=""
    # An error reply makes redis-benchmark exit 1 (and print it on stderr).
    if [ "$rc" != 0 ] || [ -z "$csv" ]; then
        RB_ERR=$(head -c 200 "$WORK/err.txt" | tr '\n,' '  ')
        [ -z "$RB_ERR" ] && RB_ERR="redis-benchmark exit $rc"
        csv=","
    fi
    RB_RPS=${csv%,*} RB_P99=${csv#*,}
}
