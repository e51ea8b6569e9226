# Shared by the benchmark scripts (source it): checks for the peers' tools.

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
