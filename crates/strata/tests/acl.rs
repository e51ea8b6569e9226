//! ACL against the real binary: the permission matrix (commands, key patterns with read
//! and write intent, channels, selectors), AUTH and HELLO, ACL LOG, the ACL file,
//! scripts and transactions under a restricted user, disconnections (DELUSER, revoked
//! channels, CLIENT KILL USER), `requirepass` and `user` lines; and, against
//! redis-server, the categories and key-spec flags of every command Strata has.

mod common;

use common::{bulk_strings, cmd, int, query, strata, Proc, RespConn};
use redis::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::time::{Duration, Instant};

/// A connection logged in as `user`.
fn login(p: &Proc, user: &str, pass: &str) -> redis::Connection {
    let mut c = p.client();
    let _: () = query(&mut c, &["AUTH", user, pass]);
    c
}

/// The error text of a command that must fail.
fn err(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut r = redis::cmd(args[0]);
    for a in &args[1..] {
        r.arg(*a);
    }
    match r.query::<Value>(c) {
        Ok(v) => panic!("{args:?}: expected an error, got {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or_default();
            let detail = e.detail().unwrap_or_default();
            format!("{code} {detail}")
        }
    }
}

fn ok(c: &mut redis::Connection, args: &[&str]) {
    let v: Value = query(c, args);
    assert!(!matches!(v, Value::ServerError(_)), "{args:?}: {v:?}");
}

/// A map reply (RESP2 flat array or RESP3 map) as field -> value.
fn fields(v: Value) -> BTreeMap<String, Value> {
    let pairs: Vec<(Value, Value)> = match v {
        Value::Array(items) => items
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect(),
        Value::Map(m) => m,
        other => panic!("expected a map, got {other:?}"),
    };
    pairs
        .into_iter()
        .map(|(k, v)| match k {
            Value::BulkString(b) => (String::from_utf8(b).unwrap(), v),
            other => panic!("field name {other:?}"),
        })
        .collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => panic!("expected a string, got {other:?}"),
    }
}

fn log_entries(c: &mut redis::Connection) -> Vec<BTreeMap<String, Value>> {
    match cmd(c, &["ACL", "LOG"]) {
        Value::Array(v) => v.into_iter().map(fields).collect(),
        other => panic!("ACL LOG: {other:?}"),
    }
}

/// Waits until CLIENT LIST no longer shows a client named `name`.
fn gone(c: &mut redis::Connection, name: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let list: String = query(c, &["CLIENT", "LIST"]);
        if !list.contains(&format!("name={name} ")) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Waits until some client is blocked (CLIENT LIST flags=b).
fn blocked(c: &mut redis::Connection) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let list: String = query(c, &["CLIENT", "LIST"]);
        if list.contains("flags=b") {
            return;
        }
        assert!(Instant::now() < end, "no client blocked: {list}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True once the server closed `s` (a read returns EOF or fails).
fn closed(s: &mut std::net::TcpStream) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => continue,
        }
    }
}

#[test]
fn permission_matrix_over_commands_keys_channels_and_selectors() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "u",
            "on",
            ">pw",
            "+@read",
            "+@write",
            "-flushall",
            "~rw:*",
            "%R~ro:*",
            "%W~wo:*",
            "resetchannels",
            "&news.*",
            "+publish",
            "+subscribe",
            "+psubscribe",
        ],
    );
    let mut u = login(&p, "u", "pw");
    // (command, may it run)
    let cases: &[(&[&str], Option<&str>)] = &[
        (&["SET", "rw:1", "v"], None),
        (&["GET", "rw:1"], None),
        (&["GET", "ro:1"], None),
        (&["SET", "ro:1", "v"], Some("keys")),
        (&["SET", "wo:1", "v"], None),
        (&["GET", "wo:1"], Some("keys")),
        // SET with GET also reads its key.
        (&["SET", "wo:1", "v", "GET"], Some("keys")),
        (&["LPUSH", "wo:list", "a"], None),
        (&["LPOP", "wo:list"], Some("keys")),
        // Existence and length need some permission, either.
        (&["EXISTS", "ro:1", "wo:1"], None),
        (&["STRLEN", "wo:1"], None),
        (&["EXISTS", "other"], Some("keys")),
        (&["COPY", "ro:1", "wo:copy"], None),
        (&["COPY", "wo:1", "ro:copy"], Some("keys")),
        (&["MSET", "wo:a", "1", "rw:b", "2"], None),
        (&["MSET", "wo:a", "1", "ro:b", "2"], Some("keys")),
        (&["SUNIONSTORE", "wo:dst", "ro:s1", "rw:s2"], None),
        (&["SUNIONSTORE", "ro:dst", "ro:s1"], Some("keys")),
        (&["FLUSHALL"], Some("run")),
        (&["PING"], Some("run")),
        (&["PUBLISH", "news.today", "x"], None),
        (&["PUBLISH", "sports", "x"], Some("channels")),
    ];
    for (args, denied) in cases {
        let mut r = redis::cmd(args[0]);
        for a in &args[1..] {
            r.arg(*a);
        }
        match (r.query::<Value>(&mut u), denied) {
            (Ok(_), None) => {}
            (Err(e), Some(what)) => {
                assert_eq!(e.code(), Some("NOPERM"), "{args:?}: {e}");
                assert!(e.to_string().contains(what), "{args:?}: {e}");
            }
            (Ok(v), Some(_)) => panic!("{args:?} should be refused, got {v:?}"),
            (Err(e), None) => panic!("{args:?} should run: {e}"),
        }
    }
    // Selectors: each allows its own commands on its own keys, and they don't combine.
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "s",
            "on",
            "nopass",
            "resetkeys",
            "-@all",
            "(+get ~r*)",
            "(+set ~w*)",
        ],
    );
    let mut s = login(&p, "s", "x");
    ok(&mut s, &["SET", "w1", "v"]);
    ok(&mut s, &["GET", "r1"]);
    assert!(err(&mut s, &["GET", "w1"]).contains("keys"));
    assert!(err(&mut s, &["SET", "r1", "v"]).contains("keys"));
    assert!(err(&mut s, &["DEL", "w1"]).contains("'del' command"));
    // Patterns: a subscriber's pattern must be one of the user's, letter for letter.
    let mut sub = RespConn::new(&p);
    sub.call(&["AUTH", "u", "pw"]).unwrap();
    let r = sub.call(&["PSUBSCRIBE", "news.*"]).unwrap();
    assert!(r.shown().contains("psubscribe"), "{}", r.shown());
    let r = sub.call(&["PSUBSCRIBE", "news.a*"]).unwrap();
    assert!(r.shown().contains("NOPERM"), "{}", r.shown());
    // Commands and subcommands; first arguments.
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "c",
            "on",
            "nopass",
            "allkeys",
            "+@all",
            "-client",
            "+client|id",
            "-select",
            "+select|0",
        ],
    );
    let mut c = login(&p, "c", "x");
    ok(&mut c, &["CLIENT", "ID"]);
    assert!(err(&mut c, &["CLIENT", "LIST"]).contains("'client|list'"));
    ok(&mut c, &["SELECT", "0"]);
    assert!(err(&mut c, &["SELECT", "1"]).contains("'select'"));
}

/// DEBUG is one command to Redis: `+debug|x` allows its first argument x, known to Strata
/// or not, and a refused DEBUG call is refused by ACL before its argument is looked at.
#[test]
fn debug_arguments_are_first_arguments_to_acl() {
    let p = strata(&["--enable-debug-command", "yes"]);
    let mut admin = p.client();
    let rules = ["-@all", "+incr", "+debug|object", "+debug|segfault"];
    let setuser = [
        &["ACL", "SETUSER", "dbg", "on", ">pw", "~*"][..],
        &rules[..],
    ]
    .concat();
    ok(&mut admin, &setuser);
    let user = fields(cmd(&mut admin, &["ACL", "GETUSER", "dbg"]));
    let commands = text(&user["commands"]);
    for rule in ["+debug|object", "+debug|segfault"] {
        assert!(commands.contains(rule), "{commands}");
    }
    let mut c = login(&p, "dbg", "pw");
    ok(&mut c, &["INCR", "k"]);
    ok(&mut c, &["DEBUG", "OBJECT", "k"]);
    let refused = err(&mut c, &["DEBUG", "DIGEST"]);
    assert!(
        refused.starts_with("NOPERM") && refused.contains("debug"),
        "{refused}"
    );
    // Unknown to DEBUG, but allowed: DEBUG itself answers.
    assert!(err(&mut c, &["DEBUG", "SEGFAULT"]).contains("unknown subcommand"));
    let refused = err(&mut c, &["DEBUG", "NOSUCH"]);
    assert!(refused.starts_with("NOPERM"), "{refused}");
    // For a user who may run DEBUG, an unknown argument is DEBUG's own error.
    assert!(err(&mut admin, &["DEBUG", "NOSUCH"]).contains("unknown subcommand"));
}

#[test]
fn auth_and_hello_log_in_as_users() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "alice", ">secret", "+@all", "~*"],
    );
    // Users start off.
    let mut c = p.client();
    assert_eq!(
        err(&mut c, &["AUTH", "alice", "secret"]),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    ok(&mut admin, &["ACL", "SETUSER", "alice", "on"]);
    assert!(err(&mut c, &["AUTH", "alice", "wrong"]).starts_with("WRONGPASS"));
    assert!(err(&mut c, &["AUTH", "nobody", "secret"]).starts_with("WRONGPASS"));
    let _: () = query(&mut c, &["AUTH", "alice", "secret"]);
    let who: String = query(&mut c, &["ACL", "WHOAMI"]);
    assert_eq!(who, "alice");
    let list: String = query(&mut admin, &["CLIENT", "LIST"]);
    assert!(list.contains("user=alice"), "{list}");
    // HELLO AUTH, and RESET back to the default user.
    let mut h = RespConn::new(&p);
    let r = h.call(&["HELLO", "3", "AUTH", "alice", "wrong"]).unwrap();
    assert!(r.shown().contains("WRONGPASS"), "{}", r.shown());
    let r = h.call(&["HELLO", "3", "AUTH", "alice", "secret"]).unwrap();
    assert_eq!(r.kind, b'%');
    let r = h.call(&["ACL", "WHOAMI"]).unwrap();
    assert!(r.shown().contains("alice"), "{}", r.shown());
    h.call(&["RESET"]).unwrap();
    let r = h.call(&["ACL", "WHOAMI"]).unwrap();
    assert!(r.shown().contains("default"), "{}", r.shown());
    // Passwords are kept as SHA-256 digests, shown in hex.
    let user = fields(cmd(&mut admin, &["ACL", "GETUSER", "alice"]));
    let passwords = bulk_strings(user["passwords"].clone());
    assert_eq!(passwords.len(), 1);
    let hex = String::from_utf8(passwords[0].clone()).unwrap();
    assert_eq!(hex.len(), 64);
    assert!(!hex.contains("secret"));
    // A hash given directly works as the password it is the hash of.
    ok(
        &mut admin,
        &["ACL", "SETUSER", "bob", "on", "+@all", &format!("#{hex}")],
    );
    let _ = login(&p, "bob", "secret");
    // A default user that needs a password makes new connections unauthenticated.
    ok(
        &mut admin,
        &["ACL", "SETUSER", "default", "resetpass", ">pw"],
    );
    let mut fresh = p.client();
    assert!(err(&mut fresh, &["GET", "k"]).starts_with("NOAUTH"));
    let _: () = query(&mut fresh, &["AUTH", "pw"]);
    ok(&mut fresh, &["GET", "k"]);
}

#[test]
fn requirepass_sets_the_default_users_password_live() {
    let p = strata(&["--requirepass", "first"]);
    let mut c = p.client();
    assert!(err(&mut c, &["PING"]).starts_with("NOAUTH"));
    let _: () = query(&mut c, &["AUTH", "first"]);
    let _: () = query(&mut c, &["CONFIG", "SET", "requirepass", "second"]);
    let mut d = p.client();
    assert!(err(&mut d, &["AUTH", "first"]).starts_with("WRONGPASS"));
    let _: () = query(&mut d, &["AUTH", "default", "second"]);
    let user = fields(cmd(&mut d, &["ACL", "GETUSER", "default"]));
    assert_eq!(bulk_strings(user["passwords"].clone()).len(), 1);
    let _: () = query(&mut d, &["CONFIG", "SET", "requirepass", ""]);
    let mut e = p.client();
    ok(&mut e, &["PING"]);
    assert!(err(&mut e, &["AUTH", "x"]).contains("without any password configured"));
}

#[test]
fn the_log_records_refusals_with_their_context() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "ann",
            "on",
            ">pw",
            "+get",
            "+set",
            "+multi",
            "+exec",
            "+eval",
            "~ok:*",
            "resetchannels",
            "+publish",
        ],
    );
    let mut u = login(&p, "ann", "pw");
    let _ = err(&mut u, &["INCR", "ok:1"]);
    let _ = err(&mut u, &["INCR", "ok:1"]);
    let _ = err(&mut u, &["GET", "secret"]);
    let _ = err(&mut u, &["PUBLISH", "chan", "m"]);
    let _ = err(&mut u, &["AUTH", "ann", "bad"]);
    let log = log_entries(&mut admin);
    let seen: Vec<(String, String, String, String, i64)> = log
        .iter()
        .map(|e| {
            (
                text(&e["reason"]),
                text(&e["context"]),
                text(&e["object"]),
                text(&e["username"]),
                text(&e["count"]).parse().unwrap(),
            )
        })
        .collect();
    let expect =
        |r: &str, c: &str, o: &str, n: i64| (r.into(), c.into(), o.into(), "ann".into(), n);
    assert_eq!(
        seen,
        vec![
            expect("auth", "toplevel", "AUTH", 1),
            expect("channel", "toplevel", "chan", 1),
            expect("key", "toplevel", "secret", 1),
            expect("command", "toplevel", "incr", 2),
        ]
    );
    let first = &log[3];
    assert!(text(&first["client-info"]).contains("user=ann"));
    assert!(text(&first["client-info"]).contains("cmd=incr"));
    let created: i64 = text(&first["timestamp-created"]).parse().unwrap();
    let updated: i64 = text(&first["timestamp-last-updated"]).parse().unwrap();
    assert!(updated >= created && created > 0);
    let ids: Vec<i64> = log
        .iter()
        .map(|e| text(&e["entry-id"]).parse().unwrap())
        .collect();
    assert_eq!(ids, [3, 2, 1, 0]);
    // MULTI: refused while queueing (context multi), then EXECABORT.
    let _: () = query(&mut u, &["MULTI"]);
    assert!(err(&mut u, &["INCR", "ok:1"]).starts_with("NOPERM"));
    assert!(err(&mut u, &["EXEC"]).starts_with("EXECABORT"));
    assert_eq!(text(&log_entries(&mut admin)[0]["context"]), "multi");
    // A script's call: the Lua error, and context lua.
    let e = err(&mut u, &["EVAL", "return redis.call('incr', 'ok:1')", "0"]);
    assert!(
        e.contains("The user executing the script can't run this command or subcommand"),
        "{e}"
    );
    let e = err(&mut u, &["EVAL", "return redis.call('get', 'nope')", "0"]);
    assert!(e.contains("can't access at least one of the keys"), "{e}");
    let top = &log_entries(&mut admin)[0];
    assert_eq!(
        (text(&top["context"]), text(&top["object"])),
        ("lua".into(), "nope".into())
    );
    // LOG count, the length limit and RESET.
    assert_eq!(log_entries(&mut admin).len(), 7);
    match cmd(&mut admin, &["ACL", "LOG", "2"]) {
        Value::Array(v) => assert_eq!(v.len(), 2),
        other => panic!("{other:?}"),
    }
    let _: () = query(&mut admin, &["CONFIG", "SET", "acllog-max-len", "3"]);
    for i in 0..5 {
        let _ = err(&mut u, &["GET", &format!("k{i}")]);
    }
    assert_eq!(log_entries(&mut admin).len(), 3);
    let _: () = query(&mut admin, &["ACL", "LOG", "RESET"]);
    assert!(log_entries(&mut admin).is_empty());
}

#[test]
fn a_connection_sees_rule_changes_and_user_switches_at_its_next_command() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "a", "on", ">pw", "+get", "~k*"],
    );
    ok(
        &mut admin,
        &["ACL", "SETUSER", "b", "on", ">pw", "+set", "~*"],
    );
    let mut u = login(&p, "a", "pw");
    ok(&mut u, &["GET", "k1"]);
    ok(&mut admin, &["ACL", "SETUSER", "a", "-get"]);
    assert!(err(&mut u, &["GET", "k1"]).starts_with("NOPERM"));
    ok(
        &mut admin,
        &["ACL", "SETUSER", "a", "+get", "resetkeys", "~other*"],
    );
    assert!(err(&mut u, &["GET", "k1"]).starts_with("NOPERM"));
    ok(&mut u, &["GET", "other1"]);
    // Another user on the same connection: its rules, not the ones checked last.
    let _: () = query(&mut u, &["AUTH", "b", "pw"]);
    assert!(err(&mut u, &["GET", "other1"]).starts_with("NOPERM"));
    ok(&mut u, &["SET", "k1", "v"]);
}

#[test]
fn exec_checks_its_commands_again() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &[
            "ACL", "SETUSER", "t", "on", ">pw", "+multi", "+exec", "+incr", "+get", "~*",
        ],
    );
    let mut u = RespConn::new(&p);
    u.call(&["AUTH", "t", "pw"]).unwrap();
    u.call(&["MULTI"]).unwrap();
    u.call(&["INCR", "n"]).unwrap();
    u.call(&["GET", "n"]).unwrap();
    ok(&mut admin, &["ACL", "SETUSER", "t", "-incr"]);
    // INCR was allowed when queued: at EXEC it fails alone, the rest runs.
    let r = u.call(&["EXEC"]).unwrap();
    assert_eq!(r.elems.len(), 2, "{}", r.shown());
    assert!(
        String::from_utf8_lossy(&r.elems[0].raw).starts_with("-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand"),
        "{}",
        r.shown()
    );
    assert_eq!(r.elems[1].raw, b"$-1\r\n");
    let top = &log_entries(&mut admin)[0];
    assert_eq!(
        (text(&top["context"]), text(&top["object"])),
        ("multi".into(), "incr".into())
    );
}

#[test]
fn scripts_ask_the_host_with_acl_check_cmd() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "sc", "on", ">pw", "+eval", "+get", "~a*"],
    );
    let mut u = login(&p, "sc", "pw");
    let check = |u: &mut redis::Connection, args: &str| -> Value {
        query(
            u,
            &["EVAL", &format!("return redis.acl_check_cmd({args})"), "0"],
        )
    };
    assert_eq!(check(&mut u, "'get', 'a1'"), Value::Int(1));
    assert_eq!(check(&mut u, "'get', 'b1'"), Value::Nil);
    assert_eq!(check(&mut u, "'set', 'a1', 'v'"), Value::Nil);
    let e = err(
        &mut u,
        &["EVAL", "return redis.acl_check_cmd('nosuch')", "0"],
    );
    assert!(
        e.contains("Invalid command passed to redis.acl_check_cmd()"),
        "{e}"
    );
    // The default user may do anything.
    let v: Value = query(
        &mut admin,
        &["EVAL", "return redis.acl_check_cmd('flushall')", "0"],
    );
    assert_eq!(v, Value::Int(1));
}

#[test]
fn sort_by_and_get_need_every_key() {
    let p = strata(&[]);
    let mut admin = p.client();
    let _: i64 = query(&mut admin, &["RPUSH", "mylist", "1", "2"]);
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "so",
            "on",
            "nopass",
            "(+sort ~mylist)",
            "(+sort ~mylist %R~*)",
        ],
    );
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "sn",
            "on",
            "nopass",
            "(+sort ~mylist ~v*)",
        ],
    );
    let mut allowed = login(&p, "so", "x");
    let sorted: Vec<String> = query(&mut allowed, &["SORT", "mylist", "BY", "v*"]);
    assert_eq!(sorted.len(), 2);
    let mut denied = login(&p, "sn", "x");
    assert_eq!(
        err(&mut denied, &["SORT", "mylist", "BY", "v*"]),
        "ERR BY option of SORT denied due to insufficient ACL permissions."
    );
    assert_eq!(
        err(&mut denied, &["SORT", "mylist", "GET", "#"]),
        "ERR GET option of SORT denied due to insufficient ACL permissions."
    );
    let plain: Vec<String> = query(&mut denied, &["SORT", "mylist", "BY", "nosort"]);
    assert_eq!(plain, ["1", "2"]);
}

#[test]
fn users_losing_access_are_disconnected() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "ps",
            "on",
            ">pw",
            "+@all",
            "allkeys",
            "resetchannels",
            "&foo:*",
            "&bar",
        ],
    );
    // A subscriber keeps its connection while its channels stay allowed.
    let mut sub = RespConn::new(&p);
    sub.call(&["AUTH", "ps", "pw"]).unwrap();
    sub.call(&["CLIENT", "SETNAME", "subscriber"]).unwrap();
    sub.call(&["SUBSCRIBE", "foo:1"]).unwrap();
    ok(&mut admin, &["ACL", "SETUSER", "ps", "&more"]);
    let list: String = query(&mut admin, &["CLIENT", "LIST"]);
    assert!(list.contains("name=subscriber"), "{list}");
    // Losing the channel closes it, at once.
    ok(
        &mut admin,
        &["ACL", "SETUSER", "ps", "resetchannels", "&bar"],
    );
    let list: String = query(&mut admin, &["CLIENT", "LIST"]);
    assert!(!list.contains("name=subscriber"), "{list}");
    assert!(closed(sub.stream()));
    // Turning a user off does not disconnect it.
    let mut idle = login(&p, "ps", "pw");
    let _: () = query(&mut idle, &["CLIENT", "SETNAME", "idle"]);
    ok(&mut admin, &["ACL", "SETUSER", "ps", "off"]);
    ok(&mut idle, &["PING"]);
    // CLIENT KILL USER, and its error for an unknown user.
    assert!(
        err(&mut admin, &["CLIENT", "KILL", "USER", "nobody"]).contains("No such user 'nobody'")
    );
    assert_eq!(int(&mut admin, &["CLIENT", "KILL", "USER", "ps"]), 1);
    assert!(gone(&mut admin, "idle"));
    // Deleting a user closes its connections; its own ACL DELUSER still gets its reply.
    ok(&mut admin, &["ACL", "SETUSER", "ps", "on"]);
    let mut other = login(&p, "ps", "pw");
    let _: () = query(&mut other, &["CLIENT", "SETNAME", "other"]);
    let mut me = RespConn::new(&p);
    me.call(&["AUTH", "ps", "pw"]).unwrap();
    let r = me.call(&["ACL", "DELUSER", "ps"]).unwrap();
    assert_eq!(r.raw, b":1\r\n");
    assert!(closed(me.stream()));
    assert!(gone(&mut admin, "other"));
}

#[test]
fn the_acl_file_loads_and_saves() {
    let dir = common::temp_dir("aclfile");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("users.acl"),
        "user alice on >alice ~* &* +@all\nuser bob on nopass -@all +get ~b* (+set %W~w*)\n",
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let p = strata(&["--dir", d, "--aclfile", "users.acl"]);
    let mut admin = p.client();
    let users = bulk_strings(cmd(&mut admin, &["ACL", "USERS"]));
    assert_eq!(
        users,
        [b"alice".to_vec(), b"bob".to_vec(), b"default".to_vec()]
    );
    let mut bob = login(&p, "bob", "x");
    ok(&mut bob, &["GET", "b1"]);
    ok(&mut bob, &["SET", "w1", "v"]);
    assert!(err(&mut bob, &["SET", "b1", "v"]).starts_with("NOPERM"));
    // SAVE writes what LIST shows; LOAD reads it back and closes the users' clients.
    ok(
        &mut admin,
        &["ACL", "SETUSER", "eve", "on", ">eve", "+get", "allkeys"],
    );
    let before = bulk_strings(cmd(&mut admin, &["ACL", "LIST"]));
    let _: () = query(&mut admin, &["ACL", "SAVE"]);
    let saved = std::fs::read_to_string(dir.join("users.acl")).unwrap();
    let lines: Vec<Vec<u8>> = saved.lines().map(|l| l.as_bytes().to_vec()).collect();
    assert_eq!(lines, before);
    let _: () = query(&mut admin, &["ACL", "LOAD"]);
    assert_eq!(bulk_strings(cmd(&mut admin, &["ACL", "LIST"])), before);
    assert!(redis::cmd("PING").query::<String>(&mut bob).is_err());
    let _ = login(&p, "eve", "eve");
    // A broken file changes nothing and says why.
    std::fs::write(
        dir.join("users.acl"),
        "user alice on +nosuch\nuser alice on\n",
    )
    .unwrap();
    let e = err(&mut admin, &["ACL", "LOAD"]);
    assert!(
        e.contains("users.acl:1: Error in applying operation '+nosuch'"),
        "{e}"
    );
    assert!(e.contains("Duplicate user 'alice' found on line 2"), "{e}");
    assert_eq!(bulk_strings(cmd(&mut admin, &["ACL", "LIST"])), before);
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn user_lines_in_the_config_survive_config_rewrite() {
    let dir = common::temp_dir("userconf");
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("strata.conf");
    std::fs::write(
        &conf,
        "user default on nopass ~* &* +@all -flushdb\nuser carol on >c +get ~c*\n",
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let c = conf.to_str().unwrap();
    let p = strata(&[c, "--dir", d]);
    let mut admin = p.client();
    assert!(err(&mut admin, &["FLUSHDB"]).starts_with("NOPERM"));
    ok(&mut admin, &["ACL", "SETUSER", "dave", "on", ">d", "+ping"]);
    let _: () = query(&mut admin, &["CONFIG", "REWRITE"]);
    let before = bulk_strings(cmd(&mut admin, &["ACL", "LIST"]));
    drop(p);
    let p = strata(&[c, "--dir", d]);
    let mut admin = p.client();
    assert!(err(&mut admin, &["FLUSHDB"]).starts_with("NOPERM"));
    assert_eq!(bulk_strings(cmd(&mut admin, &["ACL", "LIST"])), before);
    let _ = login(&p, "dave", "d");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn duplicate_users_and_users_with_an_acl_file_do_not_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--port", "0", "--user", "foo", "--user", "foo"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(all.contains("Duplicate user"), "{all}");
    let dir = common::temp_dir("both");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "serve",
            "--port",
            "0",
            "--dir",
            dir.to_str().unwrap(),
            "--aclfile",
            "x.acl",
            "--user",
            "foo",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(all.contains("not both"), "{all}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blocked_clients_are_checked_when_served_and_closed_with_their_user() {
    let p = strata(&[]);
    let mut admin = p.client();
    ok(
        &mut admin,
        &["ACL", "SETUSER", "b", "on", ">pw", "+blpop", "~q*"],
    );
    // Permission revoked while blocked: served with the refusal, the element stays.
    let mut waiter = RespConn::new(&p);
    waiter.call(&["AUTH", "b", "pw"]).unwrap();
    waiter
        .send(&common::encode_command(&["BLPOP", "q1", "0"]))
        .unwrap();
    blocked(&mut admin);
    ok(&mut admin, &["ACL", "SETUSER", "b", "resetkeys", "~other*"]);
    let _: i64 = query(&mut admin, &["RPUSH", "q1", "x"]);
    let r = waiter.read().unwrap();
    assert!(
        String::from_utf8_lossy(&r.raw).starts_with("-NOPERM"),
        "{}",
        r.shown()
    );
    assert_eq!(int(&mut admin, &["LLEN", "q1"]), 1);
    // A blocked client whose user is deleted is disconnected.
    ok(&mut admin, &["ACL", "SETUSER", "b", "~q*"]);
    waiter
        .send(&common::encode_command(&["BLPOP", "q2", "0"]))
        .unwrap();
    blocked(&mut admin);
    assert_eq!(int(&mut admin, &["ACL", "DELUSER", "b"]), 1);
    assert!(closed(waiter.stream()));
}
