//! The cluster group with cluster mode off, compared with redis-server (run at test time):
//! COMMAND lists, describes and documents every CLUSTER subcommand, ASKING, READONLY and
//! READWRITE as Redis does, each answers that cluster support is disabled, arities and
//! unknown subcommands are refused alike, and scripts may not call CLUSTER RESET.

mod common;

use common::{redis, strata, RawReply, RespConn};

/// Both servers' reply to `cmd`.
fn both(s: &mut RespConn, r: &mut RespConn, cmd: &[&str]) -> (RawReply, RawReply) {
    (s.call(cmd).unwrap(), r.call(cmd).unwrap())
}

/// The names of an array reply, sorted (COMMAND LIST's order is a hash table's).
fn sorted_names(reply: &RawReply) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = reply.elems.iter().map(|e| e.raw.clone()).collect();
    names.sort();
    names
}

/// A bulk string reply's text.
fn bulk_text(reply: &RawReply) -> String {
    let raw = &reply.raw;
    let start = raw.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end = raw.len().saturating_sub(2).max(start);
    String::from_utf8_lossy(&raw[start..end]).into_owned()
}

#[test]
fn cluster_commands_as_redis_declares_them() {
    let s = strata(&[]);
    let r = redis(&[]);
    let (mut sc, mut rc) = (RespConn::new(&s), RespConn::new(&r));
    let (got, want) = both(
        &mut sc,
        &mut rc,
        &["COMMAND", "LIST", "FILTERBY", "PATTERN", "cluster*"],
    );
    assert!(
        want.elems.len() > 20,
        "redis-server lists its CLUSTER subcommands: {}",
        want.shown()
    );
    assert_eq!(sorted_names(&got), sorted_names(&want));
    let mut names: Vec<String> = want.elems.iter().map(bulk_text).collect();
    names.extend(["asking", "readonly", "readwrite"].map(String::from));
    for name in &names {
        let (got, want) = both(&mut sc, &mut rc, &["COMMAND", "INFO", name]);
        if name == "cluster" {
            // Its subcommands come in hash-table order: compare them as a set.
            let (g, w) = (&got.elems[0], &want.elems[0]);
            assert_eq!(g.elems.len(), w.elems.len(), "COMMAND INFO cluster");
            for (i, (ge, we)) in g.elems.iter().zip(&w.elems).enumerate() {
                if i == 9 {
                    assert_eq!(sorted_names(ge), sorted_names(we), "cluster's subcommands");
                } else {
                    assert_eq!(ge, we, "COMMAND INFO cluster, field {i}");
                }
            }
            continue;
        }
        assert_eq!(got, want, "COMMAND INFO {name}");
        let (got, want) = both(&mut sc, &mut rc, &["COMMAND", "DOCS", name]);
        // Strata's docs hold no history or deprecation notes: compare summary, since,
        // group, complexity, and the arguments where Redis notes nothing more.
        let (g, w) = (&got.elems[1].elems, &want.elems[1].elems);
        let noted = w
            .iter()
            .any(|e| e.raw.ends_with(b"\r\nhistory\r\n") || e.raw.ends_with(b"\r\ndoc_flags\r\n"));
        if noted {
            assert_eq!(g[..8], w[..8], "COMMAND DOCS {name}");
        } else {
            assert_eq!(got, want, "COMMAND DOCS {name}");
        }
    }
}

#[test]
fn cluster_commands_answer_as_with_cluster_mode_off() {
    let s = strata(&[]);
    let r = redis(&[]);
    let (mut sc, mut rc) = (RespConn::new(&s), RespConn::new(&r));
    let calls: &[&[&str]] = &[
        &["CLUSTER", "HELP"],
        &["CLUSTER", "INFO"],
        &["CLUSTER", "NODES"],
        &["CLUSTER", "KEYSLOT", "somekey"],
        &["CLUSTER", "SETSLOT", "1", "STABLE"],
        &["CLUSTER", "RESET", "HARD"],
        &["cluster", "myid"],
        &["ASKING"],
        &["READONLY"],
        &["READWRITE"],
        // Refused before they run: arity, an unknown subcommand, a bare container.
        &["CLUSTER", "INFO", "extra"],
        &["CLUSTER", "SETSLOT", "1"],
        &["CLUSTER", "NOSUCH"],
        &["CLUSTER"],
        &["ASKING", "extra"],
        // CLUSTER RESET is flagged noscript; CLUSTER INFO may run in a script.
        &["EVAL", "return redis.call('cluster', 'reset', 'hard')", "0"],
        &["EVAL", "return redis.pcall('cluster', 'info')", "0"],
        &["MULTI"],
        &["CLUSTER", "INFO"],
        &["EXEC"],
    ];
    for cmd in calls {
        let (got, want) = both(&mut sc, &mut rc, cmd);
        assert_eq!(got, want, "reply to {cmd:?}");
    }
}
