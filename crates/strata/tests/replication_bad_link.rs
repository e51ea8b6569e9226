//! A primary that misbehaves: the test plays the primary on a loopback socket and answers
//! the replica's handshake with garbage, a truncated RDB, a corrupt RDB, or silence. The
//! replica stays up, keeps serving its data where Redis does (everything but a corrupt
//! RDB, which Redis also leaves it empty after), and connects again.

mod common;
mod repl_common;

use common::read_reply;
use repl_common::{field, run, strata, wait_until};
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// The test's primary: a listener the replica connects to.
struct FakePrimary {
    listener: TcpListener,
}

impl FakePrimary {
    fn new() -> FakePrimary {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        FakePrimary { listener }
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().expect("addr").port()
    }

    /// Takes the replica's next connection and answers its handshake up to its PSYNC,
    /// which it returns with the connection.
    fn handshake(&self) -> (TcpStream, Vec<String>) {
        let (s, _) = self.listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut w = s.try_clone().expect("clone");
        let mut r = BufReader::new(s.try_clone().expect("clone"));
        loop {
            let req = read_reply(&mut r).expect("a command from the replica");
            let args: Vec<String> = req
                .elems
                .iter()
                .map(|e| {
                    let text = String::from_utf8_lossy(&e.raw).into_owned();
                    text.lines().last().unwrap_or_default().to_string()
                })
                .collect();
            let name = args
                .first()
                .map(|a| a.to_ascii_uppercase())
                .unwrap_or_default();
            match name.as_str() {
                "PING" => w.write_all(b"+PONG\r\n").unwrap(),
                "REPLCONF" | "AUTH" => w.write_all(b"+OK\r\n").unwrap(),
                "PSYNC" | "SYNC" => return (s, args),
                other => panic!("unexpected command in the handshake: {other} {args:?}"),
            }
        }
    }
}

/// The replica's link is down and it still answers, with `key` as expected.
fn assert_serving(c: &mut redis::Connection, key: &str, expected: Option<&str>) {
    wait_until("the link to be down", 20, || {
        field(c, "replication", "master_link_status") == "down"
    });
    let v: Option<String> = run(c, &["GET", key]);
    assert_eq!(v.as_deref(), expected);
}

#[test]
fn replica_survives_a_misbehaving_primary() {
    let fake = FakePrimary::new();
    let r = strata(&["--repl-timeout", "2"]);
    let mut rc = r.client();
    let _: () = run(&mut rc, &["SET", "stale", "1"]);
    let _: () = run(
        &mut rc,
        &["REPLICAOF", "127.0.0.1", &fake.port().to_string()],
    );

    // Garbage instead of PSYNC's answer.
    let (mut s, psync) = fake.handshake();
    assert_eq!(psync[0].to_ascii_uppercase(), "PSYNC", "{psync:?}");
    s.write_all(b"\x00\x01garbage\xff\r\n").unwrap();
    drop(s);
    assert_serving(&mut rc, "stale", Some("1"));
    // Unless told not to serve stale data (then only what Redis allows runs).
    let _: () = run(
        &mut rc,
        &["CONFIG", "SET", "replica-serve-stale-data", "no"],
    );
    let text = repl_common::error_text(&mut rc, &["GET", "stale"]);
    assert!(text.starts_with("MASTERDOWN"), "{text}");
    let _: String = run(&mut rc, &["INFO", "replication"]);
    let _: () = run(
        &mut rc,
        &["CONFIG", "SET", "replica-serve-stale-data", "yes"],
    );

    // A full sync whose RDB stops half way: the old data stays.
    let (mut s, _) = fake.handshake();
    s.write_all(format!("+FULLRESYNC {} 0\r\n$1000\r\nREDIS0010", "a".repeat(40)).as_bytes())
        .unwrap();
    drop(s);
    assert_serving(&mut rc, "stale", Some("1"));

    // A primary that says nothing after the handshake: the replica gives up after
    // repl-timeout and connects again.
    let (s, _) = fake.handshake();
    let started = std::time::Instant::now();
    let (s2, _) = fake.handshake();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "reconnected after {:?}",
        started.elapsed()
    );
    drop((s, s2));
    assert_serving(&mut rc, "stale", Some("1"));

    // A complete RDB that does not parse: loading fails, as with Redis the data set is
    // left empty, and the replica stays up.
    let (mut s, _) = fake.handshake();
    let body = b"REDIS0010\xfe\x00\xfb\x05\x00\x00\x03key\xc5garbage";
    s.write_all(format!("+FULLRESYNC {} 0\r\n${}\r\n", "b".repeat(40), body.len()).as_bytes())
        .unwrap();
    s.write_all(body).unwrap();
    s.flush().unwrap();
    // While it loads, the replica answers -LOADING, as Redis does.
    wait_until(
        "the failed load to empty the data set",
        20,
        || match redis::cmd("DBSIZE").query::<i64>(&mut rc) {
            Ok(n) => n == 0,
            Err(e) if e.kind() == redis::ErrorKind::BusyLoadingError => false,
            Err(e) => panic!("DBSIZE: {e}"),
        },
    );
    drop(s);
    assert_serving(&mut rc, "stale", None);
    let pong: String = run(&mut rc, &["PING"]);
    assert_eq!(pong, "PONG");
    let _: () = run(&mut rc, &["REPLICAOF", "NO", "ONE"]);
    let _: () = run(&mut rc, &["SET", "after", "1"]);
}
