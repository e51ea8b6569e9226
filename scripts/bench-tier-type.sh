#!/usr/bin/env bash
# TYPE and SCAN TYPE over cold keys: KEYS keys of VALUE bytes in a tiered Strata whose
# `maxmemory` holds about a tenth of them, against an in-memory Strata with the same keys,
# in the same run. Per server: redis-benchmark's TYPE of random keys (rate, server CPU),
# then a whole SCAN TYPE string, without a pattern and with one that matches 10,000
# keys (wall time); for the tiered server, what INFO tiering counted over each.
#
# usage: scripts/bench-tier-type.sh   (STRATA=path/to/strata, default the release build;
#        KEYS=327680, VALUE=1024, MAXMEMORY=32mb, N=200000 TYPEs)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh
require_redis_tools redis-server
B=${STRATA:-target/release/strata}
KEYS=${KEYS:-327680}
N=${N:-200000}
bench_workdir bench-tier-type

tiering() { redis-cli -p "$1" info tiering | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }

# scan_type PORT PATTERN: the number of string keys a whole SCAN MATCH PATTERN TYPE string
# returns (this redis-cli's --scan has no --type), over one connection.
scan_type() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb")
def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
def reply():
    line = f.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"*":
        return [reply() for _ in range(int(rest))]
    if kind == b"$":
        data = f.read(int(rest) + 2)
        return data[:-2]
    if kind == b"-":
        sys.exit(rest.decode())
    return rest
cursor, n = "0", 0
while True:
    command("SCAN", cursor, "MATCH", sys.argv[2], "TYPE", "string", "COUNT", "1000")
    cursor, keys = reply()
    cursor, n = cursor.decode(), n + len(keys)
    if cursor == "0":
        break
print(n)
PY
}

measure() {
    local name=$1 port=$2 pid=$3 moved read t0 t1 n
    moved=$(tiering "$port" moved_to_ram)
    read=$(tiering "$port" tier_bytes_read)
    rb_run "$port" "$pid" "$N" -P 16 -c 50 -r "$KEYS" TYPE key:__rand_int__
    echo "$name TYPE: ${RB_RPS}/s, server CPU $((RB_TICKS * 10)) ms, moved_to_ram +$(($(tiering "$port" moved_to_ram) - ${moved:-0})), tier_bytes_read +$(($(tiering "$port" tier_bytes_read) - ${read:-0}))" ${RB_ERR:+"error: $RB_ERR"}
    for pattern in '*' 'key:0000000*1'; do
        read=$(tiering "$port" tier_bytes_read)
        t0=$(date +%s%N)
        n=$(scan_type "$port" "$pattern")
        t1=$(date +%s%N)
        echo "$name SCAN TYPE string MATCH $pattern: $n keys, $(((t1 - t0) / 1000000)) ms, tier_bytes_read +$(($(tiering "$port" tier_bytes_read) - ${read:-0}))"
    done
}

for mode in tiered memory; do
    port=$(free_port)
    args=(serve --port "$port" --appendonly no --save '' --dir "$(mktemp -d "$WORK/s.XXXXXX")")
    [ "$mode" = tiered ] && args+=(--tiering yes --maxmemory "${MAXMEMORY:-32mb}")
    "$B" "${args[@]}" > "$WORK/$mode.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_ping "$port"
    gen_keys "$KEYS" "${VALUE:-1024}" | redis-cli -p "$port" --pipe > /dev/null
    [ "$mode" = tiered ] && echo "tiered: $(tiering "$port" cold_keys) cold keys of $KEYS"
    measure "$mode" "$port" "$pid"
    stop_pid "$pid"
done
