"""Drives a Strata server with redis-py, the way a Python application would.

Run by crates/strata/tests/clients.rs with the server's port as the only argument;
exits non-zero with a message on the first reply that is not what Redis would give.
"""
import sys

import redis


def check(what, got, want):
    if got != want:
        sys.exit(f"redis-py: {what}: got {got!r}, want {want!r}")


def main(port):
    # RESP2, with the handshake redis-py does (CLIENT SETNAME via client_name).
    r = redis.Redis(host="127.0.0.1", port=port, client_name="py-check", decode_responses=True)
    check("ping", r.ping(), True)
    check("client getname", r.client_getname(), "py-check")
    check("set", r.set("py:k", "v", ex=100), True)
    check("get", r.get("py:k"), "v")
    check("ttl", r.ttl("py:k"), 100)
    check("incr", r.incr("py:n"), 1)
    check("incrby", r.incrby("py:n", 41), 42)
    check("mset", r.mset({"py:a": "1", "py:b": "2"}), True)
    check("mget", r.mget("py:a", "py:b", "py:missing"), ["1", "2", None])
    check("exists", r.exists("py:a", "py:b", "py:missing"), 2)
    check("delete", r.delete("py:a", "py:b"), 2)
    check("type", r.type("py:k"), "string")
    pipe = r.pipeline(transaction=False)
    for i in range(100):
        pipe.set(f"py:p{i}", i)
    pipe.get("py:p99")
    check("pipeline", pipe.execute()[-1], "99")
    check("scan_iter", len(set(r.scan_iter("py:p*", count=10))), 100)
    check("info keyspace", r.info("keyspace")["db0"]["keys"] >= 100, True)
    check("config get", r.config_get("maxclients"), {"maxclients": "10000"})
    try:
        r.execute_command("NOSUCHCOMMAND")
        sys.exit("redis-py: unknown command did not raise")
    except redis.ResponseError as e:
        check("unknown command error", str(e).startswith("unknown command 'NOSUCHCOMMAND'"), True)

    # RESP3 handshake (HELLO 3).
    r3 = redis.Redis(host="127.0.0.1", port=port, protocol=3, decode_responses=True)
    check("resp3 get", r3.get("py:k"), "v")
    check("resp3 hello proto", r3.execute_command("HELLO", "3")["proto"], 3)
    print("redis-py checks passed")


if __name__ == "__main__":
    main(int(sys.argv[1]))
