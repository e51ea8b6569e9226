//! Client-side caching (CLIENT TRACKING): scenarios run on Strata and on redis-server with
//! three connections, a tracking client `T`, a writer `W` and a receiver `R` that
//! invalidations may be redirected to. Everything each connection receives, replies and
//! pushes in arrival order, must be the same on both servers: RESP3 `invalidate` pushes
//! and where they fall around replies, RESP2 redirection over `__redis__:invalidate`,
//! BCAST prefixes, OPTIN/OPTOUT with CLIENT CACHING, NOLOOP, flushes, scripts, expiry and
//! a broken redirect.

mod common;

use common::{encode_command, Proc, RespConn};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Who {
    T,
    W,
    R,
}

/// One step: a command on a connection, commands sent in one write (a pipeline), or a
/// pause (for expiry).
enum Step<'a> {
    Call(Who, &'a [&'a str]),
    Pipe(Who, Vec<Vec<String>>),
    Sleep(u64),
}
use Step::{Call, Pipe, Sleep};
use Who::{R, T, W};

struct Session {
    t: RespConn,
    w: RespConn,
    r: RespConn,
    /// R's client id, written `{r}` in steps and in the log.
    r_id: String,
    /// R has not QUIT.
    r_open: bool,
    log: Vec<String>,
}

impl Session {
    /// Three fresh connections on a flushed server; R as `r_setup` leaves it (RESP2
    /// subscribed to the invalidation channel, RESP3, or plain).
    fn new(p: &Proc, r_setup: &[&[&str]]) -> Session {
        let mut w = RespConn::new(p);
        w.call(&["flushall"]).unwrap();
        let mut r = RespConn::new(p);
        let id = r.call(&["client", "id"]).unwrap();
        let r_id = String::from_utf8_lossy(&id.raw[1..id.raw.len() - 2]).into_owned();
        for c in r_setup {
            r.call(c).unwrap();
        }
        Session {
            t: RespConn::new(p),
            w,
            r,
            r_id,
            r_open: true,
            log: Vec::new(),
        }
    }

    fn conn(&mut self, who: Who) -> &mut RespConn {
        match who {
            T => &mut self.t,
            W => &mut self.w,
            R => &mut self.r,
        }
    }

    /// Logs a reply or push; where it may carry R's id (`about_r`), that reads `{r}`.
    fn note(&mut self, who: Who, what: &str, raw: &common::RawReply, about_r: bool) {
        let mut shown = raw.shown();
        if about_r || raw.raw.windows(21).any(|w| w == b"tracking-redir-broken") {
            shown = shown.replace(&format!(":{}\\r\\n", self.r_id), ":{r}\\r\\n");
        }
        self.log.push(format!("{who:?} {what} {shown}"));
    }

    /// Sends a command and reads up to its reply, logging the pushes that come first.
    /// HELLO's reply (server identity) is not logged.
    fn call(&mut self, who: Who, args: &[&str]) {
        self.log.push(format!("{who:?} > {}", args.join(" ")));
        if who == R && args[0].eq_ignore_ascii_case("quit") {
            self.r_open = false;
        }
        let args: Vec<String> = args.iter().map(|a| a.replace("{r}", &self.r_id)).collect();
        self.conn(who).send(&encode_command(&args)).unwrap();
        self.reply_to(who, &args);
    }

    /// Sends `cmds` in one write, then reads their replies and the pushes among them.
    fn pipe(&mut self, who: Who, cmds: &[Vec<String>]) {
        let mut wire = Vec::new();
        for c in cmds {
            self.log.push(format!("{who:?} >> {}", c.join(" ")));
            wire.extend(encode_command(c));
        }
        self.conn(who).send(&wire).unwrap();
        for c in cmds {
            self.reply_to(who, c);
        }
    }

    /// Reads up to the reply to `args`, logging the pushes that come first.
    fn reply_to(&mut self, who: Who, args: &[String]) {
        loop {
            let reply = self
                .conn(who)
                .read()
                .unwrap_or_else(|e| panic!("{who:?} {args:?}: {e}"));
            if reply.kind == b'>' {
                self.note(who, "push", &reply, false);
                continue;
            }
            if !args[0].eq_ignore_ascii_case("hello") {
                let about_r = args[0].eq_ignore_ascii_case("client");
                self.note(who, "reply", &reply, about_r);
            }
            break;
        }
    }

    /// What T and R received that no command of theirs asked for yet: T's pushes before
    /// a PING's reply, R's messages before its PING's reply.
    fn collect(&mut self) {
        self.call(T, &["ping"]);
        if !self.r_open {
            return;
        }
        self.log.push("R > ping".into());
        self.r.send(&encode_command(&["ping"])).unwrap();
        loop {
            let m = self.r.read().unwrap();
            let pong = m.raw == b"+PONG\r\n" || m.raw.starts_with(b"*2\r\n$4\r\npong\r\n");
            self.note(R, if pong { "reply" } else { "message" }, &m, false);
            if pong {
                break;
            }
        }
    }
}

fn run(p: &Proc, r_setup: &[&[&str]], steps: &[Step<'_>]) -> Vec<String> {
    let mut s = Session::new(p, r_setup);
    for step in steps {
        match step {
            Call(who, args) => s.call(*who, args),
            Pipe(who, cmds) => s.pipe(*who, cmds),
            Sleep(ms) => std::thread::sleep(Duration::from_millis(*ms)),
        }
    }
    s.collect();
    s.log
}

/// Runs `steps` on Strata and redis-server and compares what every connection received.
fn compare(r_setup: &[&[&str]], steps: &[Step<'_>], min_pushes: usize) {
    let s = common::strata(&["--threads", "4"]);
    let r = common::redis(&[]);
    let got = run(&s, r_setup, steps);
    let want = run(&r, r_setup, steps);
    let pushes = want
        .iter()
        .filter(|l| l.contains(" push ") || l.contains(" message "))
        .count();
    assert!(
        pushes >= min_pushes,
        "redis sent {pushes} messages: {want:#?}"
    );
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(a, b, "line {i}\nstrata: {got:#?}\nredis: {want:#?}");
    }
    assert_eq!(got.len(), want.len(), "strata: {got:#?}\nredis: {want:#?}");
}

const SUBSCRIBED: &[&[&str]] = &[&["subscribe", "__redis__:invalidate"]];

#[test]
fn resp3_invalidations_match_redis() {
    compare(
        &[],
        &[
            Call(T, &["hello", "3"]),
            Call(T, &["client", "tracking", "on"]),
            Call(W, &["set", "a", "1"]),
            Call(W, &["set", "b", "1"]),
            Call(T, &["get", "a"]),
            // b was not read: nothing for it.
            Call(W, &["incr", "b"]),
            Call(W, &["incr", "a"]),
            Call(T, &["mget", "a", "b", "c"]),
            Call(W, &["mset", "a", "2", "b", "2", "c", "2"]),
            // The client's own write: its reply first, then the invalidation.
            Call(T, &["get", "a"]),
            Call(T, &["set", "a", "3"]),
            // Inside a transaction, after EXEC's whole reply.
            Call(T, &["get", "a"]),
            Call(T, &["multi"]),
            Call(T, &["incr", "a"]),
            Call(T, &["get", "a"]),
            Call(T, &["exec"]),
            // A missing key is tracked too.
            Call(T, &["get", "nokey"]),
            Call(W, &["set", "nokey", "1"]),
            Call(T, &["hset", "h", "f", "1"]),
            Call(T, &["hget", "h", "f"]),
            Call(T, &["hdel", "h", "f"]),
            Call(T, &["get", "x"]),
            Call(W, &["flushall"]),
            Call(T, &["get", "a"]),
            Call(W, &["set", "a", "5"]),
            Call(W, &["del", "a"]),
            // Tracking off: the record stays, but nothing is sent.
            Call(T, &["get", "k1"]),
            Call(T, &["client", "tracking", "off"]),
            Call(W, &["set", "k1", "v"]),
            // NOLOOP: the client's own writes are not reported back to it.
            Call(T, &["client", "tracking", "on", "noloop"]),
            Call(T, &["get", "n"]),
            Call(T, &["set", "n", "1"]),
            Call(W, &["set", "n", "2"]),
            Call(T, &["get", "n"]),
            Call(W, &["set", "n", "3"]),
            Call(T, &["client", "trackinginfo"]),
            Call(T, &["client", "getredir"]),
        ],
        9,
    );
}

/// Reads in pipelines, where each request's key is looked up ahead while the one before
/// it runs: every key read is invalidated, whichever mode the pipeline switched to on the
/// way (tracking turned on, OPTIN with CLIENT CACHING YES, off again).
#[test]
fn pipelined_reads_are_tracked_as_in_redis() {
    let cmd = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let key = |i: usize| format!("k{i}");
    let mut first = vec![cmd(&["get", "k0"]), cmd(&["client", "tracking", "on"])];
    first.extend((0..40).map(|i| cmd(&["get", &key(i)])));
    first.push(cmd(&["mget", "k1", "m1", "m2"]));
    let mut optin = vec![cmd(&["client", "tracking", "on", "optin"])];
    for i in 40..60 {
        // Only the reads right after CLIENT CACHING YES are recorded.
        if i % 3 == 0 {
            optin.push(cmd(&["client", "caching", "yes"]));
        }
        optin.push(cmd(&["get", &key(i)]));
    }
    optin.push(cmd(&["client", "tracking", "off"]));
    optin.push(cmd(&["get", "k60"]));
    let mut writes = vec![cmd(&["set", "m1", "x"]), cmd(&["set", "m2", "x"])];
    writes.extend((0..61).map(|i| cmd(&["set", &key(i), "x"])));
    compare(
        &[],
        &[
            Call(T, &["hello", "3"]),
            Call(W, &["set", "k5", "v"]),
            Pipe(T, first),
            Pipe(W, writes.clone()),
            Call(T, &["client", "tracking", "off"]),
            Pipe(T, optin),
            Call(T, &["client", "tracking", "on"]),
            Pipe(W, writes),
        ],
        48,
    );
}

#[test]
fn optin_optout_and_caching_match_redis() {
    compare(
        &[],
        &[
            Call(T, &["hello", "3"]),
            Call(T, &["client", "caching", "yes"]),
            Call(T, &["client", "tracking", "on", "optin"]),
            Call(T, &["get", "a"]),
            Call(W, &["set", "a", "1"]),
            Call(T, &["client", "caching", "yes"]),
            Call(T, &["client", "trackinginfo"]),
            Call(T, &["get", "a"]),
            Call(W, &["set", "a", "2"]),
            // CACHING YES covered one command only.
            Call(T, &["get", "a"]),
            Call(W, &["set", "a", "3"]),
            // ... or one transaction.
            Call(T, &["client", "caching", "yes"]),
            Call(T, &["multi"]),
            Call(T, &["get", "b"]),
            Call(T, &["get", "c"]),
            Call(T, &["exec"]),
            Call(W, &["mset", "b", "1", "c", "1"]),
            Call(T, &["client", "caching", "no"]),
            Call(T, &["client", "tracking", "on", "optout"]),
            Call(T, &["client", "tracking", "off"]),
            Call(T, &["client", "tracking", "on", "optout"]),
            Call(T, &["get", "d"]),
            Call(W, &["set", "d", "1"]),
            Call(T, &["client", "caching", "no"]),
            Call(T, &["get", "d"]),
            Call(W, &["set", "d", "2"]),
            Call(T, &["client", "caching", "yes"]),
            Call(T, &["client", "tracking", "on", "optin", "optout"]),
            Call(T, &["client", "tracking", "on", "bcast"]),
            Call(T, &["client", "tracking", "off"]),
            Call(T, &["client", "trackinginfo"]),
        ],
        3,
    );
}

#[test]
fn bcast_prefixes_match_redis() {
    compare(
        &[],
        &[
            Call(T, &["hello", "3"]),
            Call(T, &["client", "tracking", "on", "prefix", "a:"]),
            Call(
                T,
                &[
                    "client", "tracking", "on", "bcast", "prefix", "a", "prefix", "ab",
                ],
            ),
            Call(
                T,
                &[
                    "client", "tracking", "on", "bcast", "prefix", "a:", "prefix", "b:",
                ],
            ),
            Call(T, &["client", "tracking", "on", "bcast", "prefix", "a:x"]),
            Call(T, &["client", "tracking", "on", "bcast", "optin"]),
            Call(T, &["client", "trackinginfo"]),
            // One message per prefix for all a transaction changed.
            Call(W, &["multi"]),
            Call(W, &["incr", "a:2"]),
            Call(W, &["incr", "a:1"]),
            Call(W, &["incr", "b:1"]),
            Call(W, &["incr", "c:1"]),
            Call(W, &["exec"]),
            Call(W, &["mset", "a:x", "1", "zz", "2", "b:y", "3"]),
            // Without NOLOOP the client hears of its own writes, after the reply.
            Call(T, &["set", "a:self", "1"]),
            Call(T, &["client", "tracking", "on", "bcast", "prefix", "c:"]),
            Call(W, &["incr", "c:9"]),
            Call(T, &["client", "tracking", "off"]),
            Call(T, &["client", "tracking", "on", "bcast", "noloop"]),
            Call(T, &["set", "mine", "1"]),
            Call(W, &["set", "theirs", "1"]),
            Call(T, &["client", "trackinginfo"]),
        ],
        6,
    );
}

#[test]
fn resp2_redirect_matches_redis() {
    compare(
        SUBSCRIBED,
        &[
            Call(T, &["client", "tracking", "on", "redirect", "{r}"]),
            Call(T, &["client", "getredir"]),
            Call(T, &["client", "trackinginfo"]),
            Call(T, &["get", "a"]),
            Call(W, &["set", "a", "1"]),
            Call(W, &["mset", "b", "0", "c", "0"]),
            Call(T, &["mget", "b", "c"]),
            Call(W, &["del", "b", "c"]),
            Call(T, &["get", "d"]),
            Call(W, &["flushdb"]),
            // A script's read records the keys the script declares.
            Call(
                T,
                &["eval", "redis.call('set', KEYS[1], 'x')", "2", "k1", "k2"],
            ),
            Call(W, &["mset", "k1", "1", "k2", "1"]),
            Call(
                T,
                &["eval", "return redis.call('get', 'zz')", "2", "k1", "k2"],
            ),
            Call(W, &["mset", "k2", "2", "k1", "2"]),
            Call(T, &["client", "tracking", "on", "redirect", "999999"]),
            Call(T, &["client", "tracking", "on", "redirect", "x"]),
            Call(T, &["client", "tracking", "off"]),
            Call(T, &["client", "getredir"]),
        ],
        6,
    );
}

#[test]
fn resp3_redirect_and_its_loss_match_redis() {
    compare(
        &[&["hello", "3"]],
        &[
            Call(T, &["hello", "3"]),
            Call(T, &["client", "tracking", "on", "redirect", "{r}"]),
            Call(T, &["get", "a"]),
            Call(W, &["set", "a", "1"]),
            Call(T, &["get", "a"]),
            Call(R, &["quit"]),
            Call(W, &["set", "a", "2"]),
            Call(T, &["client", "trackinginfo"]),
        ],
        1,
    );
}

#[test]
fn expired_keys_are_invalidated_as_in_redis() {
    compare(
        SUBSCRIBED,
        &[
            Call(T, &["client", "tracking", "on", "redirect", "{r}"]),
            Call(W, &["set", "e", "v", "px", "50"]),
            Call(W, &["set", "f", "v"]),
            Call(T, &["mget", "e", "f"]),
            Sleep(600),
        ],
        1,
    );
}

/// INFO's tracking fields, and CLIENT LIST's tracking flags, against redis-server's for
/// the same clients.
#[test]
fn counts_and_flags_match_redis() {
    let fields = |p: &Proc| {
        let mut s = Session::new(p, SUBSCRIBED);
        let mut b = RespConn::new(p);
        for (who, c) in [
            (T, &["client", "tracking", "on", "redirect", "{r}"][..]),
            (T, &["mget", "a", "b", "c"]),
            (W, &["client", "tracking", "on"]),
            (W, &["get", "a"]),
        ] {
            s.call(who, c);
        }
        b.call(&[
            "client", "tracking", "on", "bcast", "prefix", "x", "prefix", "y",
        ])
        .unwrap();
        let info = String::from_utf8_lossy(&s.w.call(&["info"]).unwrap().raw).into_owned();
        let mut out: Vec<String> = info
            .lines()
            .filter(|l| l.starts_with("tracking_"))
            .map(String::from)
            .collect();
        let list =
            String::from_utf8_lossy(&s.w.call(&["client", "list"]).unwrap().raw).into_owned();
        let mut flags: Vec<String> = list
            .lines()
            .filter_map(|l| {
                l.split(' ')
                    .find(|f| f.starts_with("flags="))
                    .map(String::from)
            })
            .collect();
        flags.sort();
        out.extend(flags);
        out
    };
    let s = common::strata(&[]);
    let r = common::redis(&[]);
    let got = fields(&s);
    assert!(got.iter().any(|l| l == "flags=t"), "{got:?}");
    assert_eq!(got, fields(&r));
}

/// Redis's suite case: with `maxmemory` 100 KB above the memory in use, a write of 200 KB
/// passes, and the next command evicts the only volatile key, whose invalidation reaches
/// its tracking client before that command's reply. Small writes just before the sample
/// (each written to the journal on its own) must not eat the margin.
fn evict_tracked(p: &Proc) -> Vec<String> {
    let mut s = Session::new(p, &[]);
    s.call(T, &["hello", "3"]);
    s.call(T, &["client", "tracking", "on"]);
    for i in 0..20 {
        s.w.call(&["set", &format!("warm{i}"), "x"]).unwrap();
        std::thread::sleep(Duration::from_millis(3));
    }
    let info = s.w.call(&["info", "memory"]).unwrap();
    let info = String::from_utf8_lossy(&info.raw).into_owned();
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in INFO memory"))
    };
    let limit = field("used_memory") - field("mem_not_counted_for_evict") + 100 * 1024;
    for (name, value) in [
        ("maxmemory", limit.to_string()),
        ("maxmemory-policy", "volatile-random".to_string()),
    ] {
        let ok = s.w.call(&["config", "set", name, &value]).unwrap();
        assert_eq!(ok.raw, b"+OK\r\n", "{}: {}", p.name, ok.shown());
    }
    s.call(T, &["setex", "volatile-key", "10000", "x"]);
    s.call(T, &["get", "volatile-key"]);
    s.call(T, &["setbit", "big-key", "1600000", "0"]);
    s.call(T, &["getbit", "big-key", "0"]);
    s.w.call(&["config", "set", "maxmemory", "0"]).unwrap();
    s.collect();
    s.log
}

#[test]
fn eviction_invalidates_before_the_evicting_reply_as_in_redis() {
    let s = common::strata(&[]);
    let r = common::redis(&[]);
    let got = evict_tracked(&s);
    let want = evict_tracked(&r);
    let getbit = want.iter().position(|l| l == "T > getbit big-key 0");
    let push = want.iter().position(|l| l.starts_with("T push "));
    assert!(
        push.is_some() && push > getbit,
        "redis did not evict: {want:#?}"
    );
    assert_eq!(got, want, "strata: {got:#?}\nredis: {want:#?}");
}
