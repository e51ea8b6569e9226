#!/usr/bin/env python3
"""Replication lag, write by write: SETs a probe key on the primary, and from the moment
its reply arrives polls the replica with GET until the value shows. Prints the p50 and
p99 of those delays in microseconds, and the number of probes.

usage: scripts/repl-lag.py PRIMARY_PORT REPLICA_PORT SECONDS [INTERVAL_MS]
       scripts/repl-lag.py catchup PRIMARY_PORT REPLICA_PORT REPLICA_PID

`catchup`: the replica (stopped with SIGSTOP) is sent SIGCONT, and its offset polled every
5 ms over one connection until it reaches the primary's; prints the milliseconds
from SIGCONT. One connection polls, where a redis-cli per poll took CPU from the replica.

The probes run one at a time, INTERVAL_MS (default 2) apart, while something else loads
the primary, for SECONDS or until SIGTERM, whichever comes first. A poll is one round trip to the replica, so the figures are as fine as that
round trip (tens of microseconds on loopback). Plain sockets: no client library needed.
"""

import os
import signal
import socket
import sys
import time

STOP = []


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n", 1)
        return head

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        head = self.line()
        if head[:1] == b"$":
            n = int(head[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("server closed the connection")
                self.buf += chunk
            value, self.buf = self.buf[:n], self.buf[n + 2:]
            return value
        if head[:1] == b"-":
            raise RuntimeError(head.decode(errors="replace"))
        return head[1:]


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    i = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[i]


def offset(conn, field):
    """A field of INFO replication, as an integer."""
    for line in conn.call(b"INFO", b"replication").split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name == field:
            return int(value)
    return -1


def catchup(primary_port, replica_port, pid):
    primary, replica = Conn(primary_port), Conn(replica_port)
    want = offset(primary, b"master_repl_offset")
    start = time.monotonic()
    os.kill(pid, signal.SIGCONT)
    while offset(replica, b"slave_repl_offset") < want:
        if time.monotonic() - start > 600:
            sys.exit("the replica did not catch up within 600 s")
        time.sleep(0.005)
    print("%d" % ((time.monotonic() - start) * 1000))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "catchup":
        catchup(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    primary, replica = Conn(int(sys.argv[1])), Conn(int(sys.argv[2]))
    seconds = float(sys.argv[3])
    interval = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 0.002
    lags = []
    end = time.monotonic() + seconds
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(True))
    i = 0
    while time.monotonic() < end and not STOP:
        i += 1
        value = b"%d" % i
        primary.call(b"SET", b"repl-lag-probe", value)
        replied = time.monotonic()
        while replica.call(b"GET", b"repl-lag-probe") != value:
            if time.monotonic() - replied > 10:
                sys.exit("a probe did not reach the replica within 10 s")
        lags.append((time.monotonic() - replied) * 1e6)
        time.sleep(interval)
    lags.sort()
    print("%d %d %d" % (percentile(lags, 50), percentile(lags, 99), len(lags)))


if __name__ == "__main__":
    main()
