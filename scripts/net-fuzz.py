#!/usr/bin/env python3
"""Network fuzzer: random traffic at a live server, which must stay up and answer PING.

usage: scripts/net-fuzz.py --port PORT [--tls-port PORT --cacert F [--cert F --key F]]
                           [--duration SECONDS] [--seed N] [--connections N] [--log FILE]

Drives many connections at once with random command sequences and random arguments
(binary, empty, huge, numeric edge cases), garbage frames, RESP headers with absurd
lengths, frames cut short or dribbled a byte at a time, pipelines, clients that stop
reading, that close mid-reply, that subscribe, block or open transactions. A checker
connects afresh every second and must get +PONG within 5 s (on the TLS port too when
given); otherwise the run stops, names the seed and step, and exits 1. With --log (the
server's log file), a line there saying a thread panicked fails the run the same way:
a panic in a command ends only its connection, so the server still answers PING.

Only loopback addresses are accepted. Commands that reach out to other hosts (MIGRATE,
REPLICAOF...), stop the server (SHUTDOWN, DEBUG) or change its limits are never sent.
The run is bounded by --duration and stops by itself.
"""

import argparse
import ipaddress
import random
import socket
import ssl
import sys
import time

KEYS = [b"k%d" % i for i in range(16)] + [b"", b"{tag}a", b"{tag}b", b"\x00\xff", b"x" * 300]

# name: argument shapes. "k" key, "v" value, "n" integer, "f" float, "s" score range,
# "*" any number of values, "w" a word from the command's own vocabulary.
COMMANDS = {
    b"GET": "k", b"SET": "kv*", b"SETEX": "knv", b"PSETEX": "knv", b"GETSET": "kv",
    b"APPEND": "kv", b"SETRANGE": "knv", b"GETRANGE": "knn", b"STRLEN": "k",
    b"INCR": "k", b"INCRBY": "kn", b"INCRBYFLOAT": "kf", b"DECRBY": "kn", b"MSET": "kvkv",
    b"MGET": "k*", b"GETDEL": "k", b"GETEX": "k*", b"SETBIT": "knn", b"GETBIT": "kn",
    b"BITCOUNT": "k*", b"BITPOS": "kn*", b"BITOP": "wkk", b"BITFIELD": "k*",
    b"DEL": "k*", b"UNLINK": "k*", b"EXISTS": "k*", b"EXPIRE": "kn", b"PEXPIRE": "kn",
    b"EXPIREAT": "kn", b"TTL": "k", b"PTTL": "k", b"PERSIST": "k", b"TYPE": "k",
    b"RENAME": "kk", b"COPY": "kk*", b"OBJECT": "wk", b"DUMP": "k", b"RESTORE": "knv*",
    b"SCAN": "n*", b"KEYS": "v", b"RANDOMKEY": "", b"DBSIZE": "", b"SELECT": "n",
    b"SWAPDB": "nn", b"MOVE": "kn", b"SORT": "k*", b"TOUCH": "k*",
    b"LPUSH": "kv*", b"RPUSH": "kv*", b"LPOP": "k*", b"RPOP": "k*", b"LRANGE": "knn",
    b"LINDEX": "kn", b"LSET": "knv", b"LREM": "knv", b"LTRIM": "knn", b"LINSERT": "kwvv",
    b"LPOS": "kv*", b"LMOVE": "kkww", b"BLPOP": "kn", b"BRPOP": "kn", b"BLMOVE": "kkwwn",
    b"HSET": "kvv*", b"HGET": "kv", b"HDEL": "kv*", b"HGETALL": "k", b"HINCRBY": "kvn",
    b"HINCRBYFLOAT": "kvf", b"HRANDFIELD": "k*", b"HSCAN": "kn*", b"HMGET": "kv*",
    b"SADD": "kv*", b"SREM": "kv*", b"SMEMBERS": "k", b"SPOP": "k*", b"SRANDMEMBER": "k*",
    b"SINTER": "k*", b"SUNIONSTORE": "kk*", b"SDIFF": "k*", b"SMOVE": "kkv", b"SSCAN": "kn*",
    b"ZADD": "k*", b"ZINCRBY": "kfv", b"ZRANGE": "k*", b"ZRANGEBYSCORE": "kss*",
    b"ZREM": "kv*", b"ZRANK": "kv", b"ZSCORE": "kv", b"ZPOPMIN": "k*", b"BZPOPMIN": "kn",
    b"ZUNIONSTORE": "kn*", b"ZRANDMEMBER": "k*", b"ZRANGESTORE": "kk*", b"ZCOUNT": "kss",
    b"XADD": "k*", b"XRANGE": "k*", b"XREAD": "*", b"XLEN": "k", b"XTRIM": "k*",
    b"XGROUP": "w*", b"XREADGROUP": "*", b"XACK": "k*", b"XCLAIM": "k*", b"XINFO": "wk",
    b"PFADD": "kv*", b"PFCOUNT": "k*", b"PFMERGE": "kk*",
    b"GEOADD": "k*", b"GEOSEARCH": "k*", b"GEODIST": "kvv*",
    b"PUBLISH": "kv", b"SUBSCRIBE": "k*", b"PSUBSCRIBE": "k*", b"UNSUBSCRIBE": "*",
    b"SSUBSCRIBE": "k*", b"SPUBLISH": "kv",
    b"MULTI": "", b"EXEC": "", b"DISCARD": "", b"WATCH": "k*", b"UNWATCH": "",
    b"EVAL": "vn*", b"EVALSHA": "vn*", b"SCRIPT": "w*", b"FUNCTION": "w*", b"FCALL": "vn*",
    b"PING": "*", b"ECHO": "v", b"HELLO": "*", b"CLIENT": "w*", b"RESET": "",
    b"COMMAND": "*", b"INFO": "*", b"TIME": "", b"LASTSAVE": "", b"MEMORY": "w*",
    b"SLOWLOG": "w*", b"LATENCY": "w*", b"WAIT": "nn", b"AUTH": "v*", b"QUIT": "",
    b"CONFIG": "w*", b"OBJECT FREQ": "k", b"GETDEL ": "k", b"NOSUCHCOMMAND": "*",
}

WORDS = [
    b"AND", b"OR", b"XOR", b"NOT", b"LEFT", b"RIGHT", b"BEFORE", b"AFTER", b"ENCODING",
    b"IDLETIME", b"REFCOUNT", b"GET", b"LIST", b"INFO", b"ID", b"SETNAME", b"GETNAME",
    b"REPLY", b"ON", b"OFF", b"SKIP", b"TRACKING", b"NO-EVICT", b"UNBLOCK", b"PAUSE",
    b"UNPAUSE", b"LOAD", b"FLUSH", b"EXISTS", b"STATS", b"DUMP", b"RESTORE", b"LEN",
    b"RESET", b"DOCTOR", b"USAGE", b"CREATE", b"DESTROY", b"SETID", b"STREAM", b"GROUPS",
    b"CONSUMERS", b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR", b"WITHSCORES", b"LIMIT",
    b"REV", b"BYSCORE", b"BYLEX", b"COUNT", b"MATCH", b"TYPE", b"STORE", b"ALPHA",
    b"DESC", b"BY", b"EX", b"PX", b"KEEPTTL", b"REPLACE", b"ABSTTL", b"MAXLEN", b"MINID",
    b"~", b"=", b"*", b"$", b">", b"+", b"-", b"(1", b"[a", b"inf", b"-inf", b"nan",
    b"FROMLONLAT", b"BYRADIUS", b"km", b"ASC", b"WITHCOORD", b"STREAMS", b"BLOCK",
    b"NOACK", b"MKSTREAM", b"JUSTID", b"FORCE", b"GETKEYS", b"DOCS", b"HELP",
]

# CONFIG and CLIENT subcommands that must not be sent (they change limits this run relies
# on, or close connections other than the sender's in ways that end the run).
BANNED_SUBCOMMANDS = {(b"CONFIG", b"SET"), (b"CONFIG", b"RESETSTAT"), (b"CONFIG", b"REWRITE"),
                      (b"CLIENT", b"KILL"), (b"CLIENT", b"PAUSE"), (b"SCRIPT", b"KILL"),
                      (b"FUNCTION", b"KILL")}

NUMBERS = [b"0", b"1", b"-1", b"2", b"10", b"100", b"-100", b"9223372036854775807",
           b"-9223372036854775808", b"9223372036854775808", b"18446744073709551615",
           b"4294967296", b"1e3", b"0x10", b" 1", b"1 ", b"", b"+1", b"007", b"3.5",
           b"-999999999", b"100000", b"1000000"]
# Commands whose count argument sizes the reply (negative: with repetition), and the
# counts they do not get.
COUNTED = {b"HRANDFIELD", b"SRANDMEMBER", b"ZRANDMEMBER", b"SPOP", b"LPOS"}
HUGE = {b"-999999999", b"-9223372036854775808", b"9223372036854775807", b"4294967296",
        b"18446744073709551615", b"9223372036854775808"}
FLOATS = [b"0", b"1.5", b"-1.5", b"inf", b"-inf", b"+inf", b"nan", b"1e308", b"1e-308",
          b"17e400", b".5", b"5.", b"1,5", b""]

LUA = [b"return 1", b"return redis.call('get', KEYS[1])", b"return {1,2,{3,'x'}}",
       b"redis.call('set', KEYS[1], ARGV[1]) return redis.status_reply('x')",
       b"return redis.error_reply('e')", b"local t = {} for i=1,1000 do t[i]=i end return t",
       b"return cjson.encode({a=1})", b"return struct.pack('HH', 1, 2)", b"error('x')",
       b"return tostring(tonumber('0x10'))", b"return redis.pcall('nosuch')"]


def value(rng):
    r = rng.random()
    if r < 0.3:
        return rng.choice(NUMBERS)
    if r < 0.5:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(16)))
    if r < 0.55:
        return rng.choice(LUA)
    if r < 0.57:
        return b"x" * rng.choice([1000, 10_000, 100_000])
    return rng.choice(KEYS + WORDS)


def command(rng):
    name = rng.choice(list(COMMANDS))
    argv = name.split()
    for shape in COMMANDS[name]:
        if shape == "k":
            argv.append(rng.choice(KEYS))
        elif shape == "v":
            argv.append(value(rng))
        elif shape == "n":
            argv.append(rng.choice(NUMBERS))
        elif shape == "f":
            argv.append(rng.choice(FLOATS))
        elif shape == "s":
            argv.append(rng.choice(FLOATS + [b"(1", b"-inf", b"+inf"]))
        elif shape == "w":
            argv.append(rng.choice(WORDS))
        elif shape == "*":
            for _ in range(rng.randrange(6)):
                argv.append(rng.choice([rng.choice(KEYS), value(rng), rng.choice(WORDS)]))
    if len(argv) > 1 and (argv[0].upper(), argv[1].upper()) in BANNED_SUBCOMMANDS:
        argv[1] = b"HELP"
    if argv[0] in COUNTED:
        # A count of millions asks for a reply of that many elements (Redis too builds
        # it whole): keep them to what a run can afford, errors for absurd ones included.
        argv = [b"-1000" if a in HUGE else a for a in argv]
    if argv[0] in (b"BLPOP", b"BRPOP", b"BLMOVE", b"BZPOPMIN") and rng.random() < 0.9:
        argv[-1] = b"0.01"  # mostly short blocks, sometimes forever (0)
    return argv


def encode(argv):
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def garbage(rng):
    """A frame the parser must reject or wait on, never crash on."""
    kind = rng.randrange(12)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if kind == 1:
        return b"*%d\r\n" % rng.choice([-2, 0, 1 << 31, 1 << 62, 10**30, 1024 * 1024 + 1])
    if kind == 2:
        return b"*1\r\n$%d\r\n" % rng.choice([-5, 1 << 31, 1 << 62, 10**20, 536870913])
    if kind == 3:
        return b"*1\r\n$" + rng.choice([b"abc", b"", b"-", b"1x", b"9" * 40]) + b"\r\n"
    if kind == 4:
        return rng.choice([b"%1\r\n", b"~2\r\n", b">3\r\n", b"#t\r\n", b",1.5\r\n",
                           b"(123\r\n", b"=5\r\ntxt:a\r\n", b"|1\r\n", b"_\r\n"])
    if kind == 5:
        return b'SET "unbalanced \'quote\r\n'
    if kind == 6:
        return b"x" * rng.choice([64 * 1024 + 10, 300_000]) + b"\r\n"  # inline too long
    if kind == 7:
        return b"*2\r\n$3\r\nGET\r\n$1\r\nab\r\n"  # bulk longer than declared
    if kind == 8:
        return b"*2\r\n$3\r\nGET\r\n:5\r\n"  # wrong element type
    if kind == 9:
        return b"\r\n" * rng.randrange(1, 100)
    if kind == 10:
        return b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (1 << 20) + b"y" * 1000  # partial
    return b"PING\x00\r\n"


class Conn:
    def __init__(self, sock, reads=True):
        self.sock = sock
        self.reads = reads
        self.received = 0

    def send(self, data, rng):
        if rng.random() < 0.1:
            # Dribbled: a frame in tiny pieces.
            step = rng.choice([1, 2, 7])
            for i in range(0, min(len(data), 200), step):
                self.sock.sendall(data[i:i + step])
            data = data[200:]
        self.sock.sendall(data)

    def drain(self):
        if not self.reads:
            return
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except (BlockingIOError, ssl.SSLWantReadError, socket.timeout):
                return
            if not chunk:
                raise ConnectionError("closed by server")
            self.received += len(chunk)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class Target:
    def __init__(self, args):
        self.host = args.host
        self.ports = [(args.port, False)]
        self.ctx = None
        if args.tls_port:
            self.ports.append((args.tls_port, True))
            self.ctx = ssl.create_default_context(cafile=args.cacert)
            self.ctx.check_hostname = False
            if args.cert:
                self.ctx.load_cert_chain(args.cert, args.key)

    def connect(self, port, tls, timeout=5.0):
        s = socket.create_connection((self.host, port), timeout=timeout)
        if tls:
            s = self.ctx.wrap_socket(s)
        return s


def ping(target, flush=False):
    """None if every port answers PING with +PONG within 5 s, else what went wrong.
    With `flush`, FLUSHALL first (the data set must not grow for the whole run)."""
    for port, tls in target.ports:
        try:
            s = target.connect(port, tls)
            s.settimeout(5)
            if flush:
                s.sendall(b"FLUSHALL\r\n")
                if not s.recv(64).startswith(b"+OK"):
                    return "FLUSHALL failed"
                flush = False
            s.sendall(b"PING\r\n")
            got = b""
            while not got.endswith(b"\r\n"):
                chunk = s.recv(64)
                if not chunk:
                    break
                got += chunk
            s.close()
            if got != b"+PONG\r\n":
                return "port %d%s answered %r" % (port, " (tls)" if tls else "", got)
        except (OSError, ssl.SSLError) as e:
            return "port %d%s: %s" % (port, " (tls)" if tls else "", e)
    return None


class LogWatch:
    """New lines of the server's log, looked at for panics."""

    def __init__(self, path):
        self.path = path
        self.offset = 0

    def panic(self):
        if not self.path:
            return None
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                new = f.read()
        except OSError as e:
            return "log %s: %s" % (self.path, e)
        self.offset += len(new)
        for line in new.splitlines():
            if b"panicked at" in line:
                return "the server's log: %s" % line.decode("utf-8", "replace").strip()
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls-port", type=int)
    ap.add_argument("--cacert")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--log", help="the server's log file, watched for panics")
    args = ap.parse_args()
    if not loopback(args.host):
        sys.exit("net-fuzz: only loopback targets (127.0.0.0/8, ::1, localhost)")
    rng = random.Random(args.seed)
    target = Target(args)
    log = LogWatch(args.log)
    print("net-fuzz: seed %d, %.0f s, %d connections" % (args.seed, args.duration,
                                                         args.connections), flush=True)
    conns = []
    stats = {"steps": 0, "commands": 0, "garbage": 0, "pipelines": 0, "closed_by_server": 0,
             "reconnects": 0, "silent": 0, "pings": 0}
    start = time.time()
    next_ping = start + 1
    step = 0
    while time.time() - start < args.duration:
        step += 1
        stats["steps"] = step
        if time.time() >= next_ping:
            why = ping(target, flush=stats["pings"] % 5 == 4) or log.panic()
            stats["pings"] += 1
            if why:
                print("net-fuzz: FAILED at step %d (seed %d): %s" % (step, args.seed, why))
                print("net-fuzz: %s" % stats)
                sys.exit(1)
            next_ping = time.time() + 1
        while len(conns) < args.connections:
            port, tls = rng.choice(target.ports)
            try:
                s = target.connect(port, tls)
            except (OSError, ssl.SSLError) as e:
                print("net-fuzz: connect failed at step %d: %s" % (step, e), flush=True)
                time.sleep(0.1)
                break
            s.setblocking(False) if not tls else s.settimeout(0.0)
            reads = rng.random() > 0.05  # a few never read their replies
            stats["silent"] += not reads
            conns.append(Conn(s, reads))
            stats["reconnects"] += 1
        if not conns:
            continue
        c = rng.choice(conns)
        r = rng.random()
        if r < 0.65:
            data = encode(command(rng))
            stats["commands"] += 1
        elif r < 0.8:
            data = b"".join(encode(command(rng)) for _ in range(rng.randrange(2, 200)))
            stats["pipelines"] += 1
        elif r < 0.85:
            argv = command(rng)
            data = b" ".join(a.replace(b"\r", b"").replace(b"\n", b"") for a in argv) + b"\r\n"
            stats["commands"] += 1
        elif r < 0.95:
            data = garbage(rng)
            stats["garbage"] += 1
        else:
            # Cut short: part of a frame, then the connection goes away.
            frame = encode(command(rng))
            data = frame[:rng.randrange(1, len(frame))]
        try:
            c.sock.settimeout(2.0)
            c.send(data, rng)
            c.sock.settimeout(0.0)
            c.drain()
            if r >= 0.95 or rng.random() < 0.01:
                raise ConnectionError("dropped on purpose")
        except (OSError, ssl.SSLError, ConnectionError) as e:
            if "on purpose" not in str(e):
                stats["closed_by_server"] += 1
            c.close()
            conns.remove(c)
    for c in conns:
        c.close()
    why = ping(target) or log.panic()
    print("net-fuzz: %s" % stats)
    if why:
        print("net-fuzz: FAILED at the end (seed %d): %s" % (args.seed, why))
        sys.exit(1)
    print("net-fuzz: server up after %d steps (seed %d)" % (step, args.seed))


if __name__ == "__main__":
    main()
