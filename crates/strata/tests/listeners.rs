//! CONFIG SET bind and port on the real binary: the listeners move at run time, the old
//! addresses refuse connections, established connections stay, and a change that cannot
//! bind keeps the old listeners and answers as redis-server does.

mod common;

use common::{free_port, read_reply, Proc, RawReply};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// A connection that sends a command and reads its reply.
struct Conn(BufReader<TcpStream>);

impl Conn {
    fn to(host: &str, port: u16) -> std::io::Result<Conn> {
        let addr: SocketAddr = format!("{host}:{port}").parse().expect("address");
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(Conn(BufReader::new(s)))
    }

    fn call(&mut self, args: &[&str]) -> RawReply {
        self.0
            .get_mut()
            .write_all(&common::encode_command(args))
            .expect("send");
        read_reply(&mut self.0).expect("reply")
    }

    /// A status or error reply's text, or a bulk string's.
    fn line(&mut self, args: &[&str]) -> String {
        text(&self.call(args))
    }

    /// One directive's value, as CONFIG GET shows it.
    fn config(&mut self, name: &str) -> String {
        let reply = self.call(&["CONFIG", "GET", name]);
        reply.elems.get(1).map(text).expect("a value")
    }

    /// INFO server's tcp_port.
    fn tcp_port(&mut self) -> u16 {
        let info = String::from_utf8_lossy(&self.call(&["INFO", "server"]).raw).into_owned();
        info.lines()
            .find_map(|l| l.strip_prefix("tcp_port:"))
            .and_then(|p| p.trim().parse().ok())
            .expect("tcp_port")
    }
}

/// A status or error reply's text, or a bulk string's.
fn text(r: &RawReply) -> String {
    let s = String::from_utf8_lossy(&r.raw).into_owned();
    match r.kind {
        b'$' => s.split_once("\r\n").map(|(_, v)| v).unwrap_or_default(),
        _ => s.get(1..).unwrap_or_default(),
    }
    .trim_end_matches("\r\n")
    .to_string()
}

/// A new connection to `host:port` answers PING.
fn serves(host: &str, port: u16) -> bool {
    Conn::to(host, port).is_ok_and(|mut c| c.line(&["PING"]) == "PONG")
}

fn strata() -> Proc {
    common::strata(&["--appendonly", "no", "--save", ""])
}

#[test]
fn config_set_bind_moves_the_listener_and_the_old_address_refuses() {
    let s = strata();
    let port = s.port;
    let mut kept = Conn::to("127.0.0.1", port).expect("connect");
    assert!(serves("127.0.0.1", port));
    assert!(!serves("127.0.0.2", port), "not listening there yet");

    assert_eq!(kept.line(&["CONFIG", "SET", "bind", "127.0.0.2"]), "OK");
    assert!(serves("127.0.0.2", port));
    assert!(!serves("127.0.0.1", port), "the old address still accepts");
    // Established connections are not the listener's: they stay.
    assert_eq!(kept.line(&["PING"]), "PONG");
    assert_eq!(kept.config("bind"), "127.0.0.2");
    assert_eq!(
        kept.tcp_port(),
        port,
        "port 0 at start: the OS's choice is kept"
    );

    assert_eq!(
        kept.line(&["CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2"]),
        "OK"
    );
    assert!(serves("127.0.0.1", port) && serves("127.0.0.2", port));

    // A wildcard cannot listen beside a specific address on the same port: the old
    // listeners make way for it.
    assert_eq!(kept.line(&["CONFIG", "SET", "bind", "*"]), "OK");
    assert!(serves("127.0.0.3", port) && serves("127.0.0.1", port));

    assert_eq!(kept.line(&["CONFIG", "SET", "bind", "127.0.0.1"]), "OK");
    assert!(serves("127.0.0.1", port));
    assert!(!serves("127.0.0.3", port));
}

#[test]
fn a_bind_that_fails_keeps_the_listeners_and_answers_as_redis() {
    let redis = common::redis(&[]);
    let strata = strata();
    let (mut r, mut s) = (
        Conn::to("127.0.0.1", redis.port).unwrap(),
        Conn::to("127.0.0.1", strata.port).unwrap(),
    );
    // 192.0.2.1 (TEST-NET-1) is no address of this host.
    let unavailable = ["CONFIG", "SET", "bind", "192.0.2.1"];
    let (rr, sr) = (r.call(&unavailable), s.call(&unavailable));
    assert!(
        text(&rr).starts_with("ERR CONFIG SET failed"),
        "{}",
        rr.shown()
    );
    assert_eq!(sr.raw, rr.raw, "strata {} redis {}", sr.shown(), rr.shown());
    for (c, p) in [(&mut r, &redis), (&mut s, &strata)] {
        assert_eq!(c.config("bind"), "127.0.0.1", "{}", p.name);
        assert!(serves("127.0.0.1", p.port), "{} stopped listening", p.name);
    }
    // An optional address ("-") that cannot be bound is skipped.
    let optional = ["CONFIG", "SET", "bind", "-192.0.2.1 127.0.0.1"];
    let (rr, sr) = (r.call(&optional), s.call(&optional));
    assert_eq!((text(&sr), text(&rr)), ("OK".into(), "OK".into()));
    for p in [&redis, &strata] {
        assert!(serves("127.0.0.1", p.port), "{}", p.name);
    }
}

#[test]
fn config_set_port_moves_the_listener_and_a_port_in_use_is_refused_as_redis() {
    let redis = common::redis(&[]);
    let strata = strata();
    let old = strata.port;
    let mut s = Conn::to("127.0.0.1", old).unwrap();
    let new = free_port();
    assert_eq!(s.line(&["CONFIG", "SET", "port", &new.to_string()]), "OK");
    assert!(serves("127.0.0.1", new));
    assert!(!serves("127.0.0.1", old), "the old port still accepts");
    assert_eq!(s.config("port"), new.to_string());
    assert_eq!(s.tcp_port(), new);

    // A port another socket listens on: the whole CONFIG SET is refused and undone.
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = held.local_addr().unwrap().port().to_string();
    let mut r = Conn::to("127.0.0.1", redis.port).unwrap();
    let set = ["CONFIG", "SET", "maxmemory", "10000001", "port", &busy];
    let (rr, sr) = (r.call(&set), s.call(&set));
    assert!(rr.shown().contains("'port'"), "{}", rr.shown());
    assert_eq!(sr.raw, rr.raw, "strata {} redis {}", sr.shown(), rr.shown());
    for (c, port, name) in [(&mut r, redis.port, "redis"), (&mut s, new, "strata")] {
        assert_eq!(c.config("maxmemory"), "0", "{name}");
        assert_eq!(c.config("port"), port.to_string(), "{name}");
        assert!(serves("127.0.0.1", port), "{name} stopped listening");
    }
}
