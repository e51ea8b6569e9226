//! Replication over TLS (`tls-replication yes`): a Strata replica of a Strata primary that
//! listens on its TLS port only and requires client certificates, Debian's redis-server
//! and Strata replicating each other over TLS, and a replica whose TLS link cannot come
//! up (a CA that does not know its primary, a primary that does not speak TLS): it keeps
//! serving its data, says why in its log, and retries until CONFIG SET fixes it.

mod common;
mod rdb_common;
mod repl_common;
mod tls_common;

use common::{free_port, Proc};
use rdb_common::{assert_same_values, populate};
use repl_common::{
    field, info, number, redis, run, strata, wait_acks, wait_synced, wait_until, write_mix,
    FAST_SYNC,
};
use tls_common::{tls_server, Pki};

fn replicaof_port(c: &mut redis::Connection, port: u16) {
    let _: () = run(c, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Log lines of `p` that contain `text`.
fn log_lines(p: &Proc, text: &str) -> Vec<String> {
    p.log
        .lock()
        .map(|l| l.iter().filter(|l| l.contains(text)).cloned().collect())
        .unwrap_or_default()
}

#[test]
fn strata_replica_of_a_tls_only_strata_primary() {
    let pki = Pki::new();
    let (p, tls_port) = tls_server(
        &pki,
        false,
        &[FAST_SYNC, &["--tls-auth-clients", "yes"]].concat(),
    );
    assert_eq!(p.port, tls_port, "the primary listens on its TLS port only");
    let mut pc = pki.client(tls_port);
    populate(&mut pc, true);
    write_mix(&mut pc, "before", 10);
    // Values larger than a TLS record and the socket buffers, in the RDB and the stream.
    let big = |c: char| c.to_string().repeat(3 << 20);
    let _: () = run(&mut pc, &["SET", "big-in-rdb", &big('r')]);

    // The replica has a TLS port of its own beside its plain one.
    let replica_tls = free_port();
    let mut args = pki.replica_args("a");
    args.extend(
        [
            "--port",
            &free_port().to_string(),
            "--tls-port",
            &replica_tls.to_string(),
        ]
        .map(String::from),
    );
    let r = strata(&as_strs(&args));
    let mut rc = r.client();
    replicaof_port(&mut rc, tls_port);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    assert_eq!(number(&mut pc, "stats", "sync_full"), 1);

    // The stream flows over the session, and the replica's ACKs come back over it.
    write_mix(&mut pc, "after", 30);
    let _: () = run(&mut pc, &["SET", "big-in-stream", &big('s')]);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    let got: String = run(&mut rc, &["GET", "big-in-stream"]);
    assert_eq!(got, big('s'));
    // With tls-replication, a replica announces its TLS port, as Redis's does.
    let slave0 = field(&mut pc, "replication", "slave0");
    assert!(
        slave0.contains(&format!("port={replica_tls},")) && slave0.contains("state=online"),
        "{slave0}"
    );

    // A dropped link comes back over TLS with a partial resynchronization.
    let _: i64 = run(&mut rc, &["CLIENT", "KILL", "TYPE", "master"]);
    write_mix(&mut pc, "while-down", 5);
    wait_until("the partial resynchronization", 30, || {
        number(&mut pc, "stats", "sync_partial_ok") == 1
    });
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    assert_eq!(number(&mut pc, "stats", "sync_full"), 1);
}

#[test]
fn redis_server_replicates_strata_over_tls() {
    let pki = Pki::new();
    let (p, tls_port) = tls_server(&pki, false, FAST_SYNC);
    let mut pc = pki.client(tls_port);
    populate(&mut pc, true);
    write_mix(&mut pc, "before", 10);
    let r = redis(&as_strs(&pki.replica_args("a")));
    let mut rc = r.client();
    replicaof_port(&mut rc, p.port);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    write_mix(&mut pc, "after", 30);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    assert_eq!(
        number(&mut rc, "replication", "master_repl_offset"),
        number(&mut pc, "replication", "master_repl_offset")
    );
}

#[test]
fn strata_replicates_redis_server_over_tls() {
    let pki = Pki::new();
    let tls_port = free_port();
    let mut args = vec!["--tls-port".to_string(), tls_port.to_string()];
    args.extend(pki.server_args("a"));
    let p = redis(&as_strs(&args));
    let mut pc = p.client();
    populate(&mut pc, true);
    write_mix(&mut pc, "before", 10);
    let r = strata(&as_strs(&pki.replica_args("a")));
    let mut rc = r.client();
    replicaof_port(&mut rc, tls_port);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    write_mix(&mut pc, "after", 30);
    assert_eq!(wait_acks(&mut pc, 1, 10_000), 1);
    wait_synced(&mut pc, &mut rc);
    assert_same_values(&mut pc, &mut rc, true);
    // The link is the one to the TLS port (which speaks nothing but TLS).
    assert_eq!(
        field(&mut rc, "replication", "master_port"),
        tls_port.to_string()
    );
    assert_eq!(field(&mut pc, "replication", "connected_slaves"), "1");
}

#[test]
fn a_replica_whose_tls_link_fails_keeps_its_data_says_why_and_retries() {
    let pki = Pki::new();
    let (p, tls_port) = tls_server(&pki, true, FAST_SYNC);
    assert_ne!(p.port, tls_port);
    let mut pc = p.client();
    let _: () = run(&mut pc, &["SET", "from-primary", "p"]);

    // The replica trusts CA "b" only: the primary's certificate (CA "a") is refused.
    let r = strata(&as_strs(&pki.replica_args("b")));
    let mut rc = r.client();
    let _: () = run(&mut rc, &["SET", "mine", "kept"]);
    replicaof_port(&mut rc, tls_port);
    let refused = "TLS handshake failed";
    wait_until("the replica to retry its failed handshake", 30, || {
        log_lines(&r, refused).len() >= 2
    });
    let lines = log_lines(&r, refused);
    assert!(
        lines
            .iter()
            .all(|l| l.contains(&format!("127.0.0.1:{tls_port}")) && l.contains("certificate")),
        "{lines:?}"
    );
    assert_eq!(field(&mut rc, "replication", "master_link_status"), "down");
    let v: String = run(&mut rc, &["GET", "mine"]);
    assert_eq!(
        v, "kept",
        "the replica serves its data while the link is down"
    );
    assert_eq!(number(&mut pc, "stats", "sync_full"), 0);

    // The right CA, set at run time, applies to the next attempt.
    let ca = pki.path("a-ca.crt");
    let _: () = run(&mut rc, &["CONFIG", "SET", "tls-ca-cert-file", &ca]);
    wait_synced(&mut pc, &mut rc);
    let v: String = run(&mut rc, &["GET", "from-primary"]);
    assert_eq!(v, "p");
    let gone: i64 = run(&mut rc, &["EXISTS", "mine"]);
    assert_eq!(gone, 0, "the full sync replaced the replica's data");

    // The plain port does not speak TLS: the handshake fails (it gets no answer, or one
    // that is not TLS) and the replica goes on serving what it has.
    let _: () = run(&mut rc, &["CONFIG", "SET", "repl-timeout", "2"]);
    replicaof_port(&mut rc, p.port);
    let plain = format!("127.0.0.1:{}: TLS handshake", p.port);
    wait_until("the handshake with the plain port to fail", 30, || {
        !log_lines(&r, &plain).is_empty()
    });
    assert_eq!(field(&mut rc, "replication", "master_link_status"), "down");
    let v: String = run(&mut rc, &["GET", "from-primary"]);
    assert_eq!(v, "p");

    // tls-replication no, at run time: the next connection is plain, and syncs.
    let _: () = run(&mut rc, &["CONFIG", "SET", "repl-timeout", "60"]);
    let _: () = run(&mut rc, &["CONFIG", "SET", "tls-replication", "no"]);
    let _: () = run(&mut pc, &["SET", "after-switch", "plain"]);
    wait_synced(&mut pc, &mut rc);
    let v: String = run(&mut rc, &["GET", "after-switch"]);
    assert_eq!(v, "plain");
    let r_info = info(&mut rc, "replication");
    assert_eq!(r_info["master_port"], p.port.to_string());
}
