//! Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT.

use crate::exec::client::{Client, ClientInfo, ReplyMode};
use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;
use crate::server::Server;
use crate::services::tracking::mode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use strata_resp::Protocol;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "connection",
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[
    Command {
        name: "ping",
        arity: -1,
        flags: FAST | SUBSCRIBED,
        summary: "Returns the server's liveliness response.",
        since: "1.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: "[message]",
        handler: ping,
        ..FAMILY
    },
    Command {
        name: "echo",
        arity: 2,
        flags: FAST | LOADING | STALE,
        summary: "Returns the given string.",
        since: "1.0.0",
        args: "message",
        handler: echo,
        ..FAMILY
    },
    Command {
        name: "hello",
        arity: -1,
        flags: NO_AUTH | FAST | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        summary: "Handshakes with the Redis server.",
        since: "6.0.0",
        args: "[arguments=(protover#int [AUTH:username_password=(username password)] [SETNAME:clientname])]",
        handler: hello,
        ..FAMILY
    },
    Command {
        name: "auth",
        arity: -2,
        flags: NO_AUTH | FAST | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        summary: "Authenticates the connection.",
        since: "1.0.0",
        args: "[username] password",
        handler: auth,
        ..FAMILY
    },
    Command {
        name: "select",
        arity: 2,
        flags: FAST | LOADING | STALE,
        summary: "Changes the selected database.",
        since: "1.0.0",
        args: "index#int",
        handler: select,
        ..FAMILY
    },
    Command {
        name: "quit",
        arity: -1,
        flags: NO_AUTH | FAST | NOSCRIPT | LOADING | STALE | ALLOW_BUSY | SUBSCRIBED | NOT_QUEUED,
        summary: "Closes the connection.",
        since: "1.0.0",
        handler: quit,
        ..FAMILY
    },
    Command {
        name: "reset",
        arity: 1,
        flags: NO_AUTH | FAST | NOSCRIPT | LOADING | STALE | SUBSCRIBED | NOT_QUEUED | ALLOW_BUSY,
        summary: "Resets the connection.",
        since: "6.2.0",
        handler: reset,
        ..FAMILY
    },
    Command {
        name: "client",
        arity: -2,
        flags: 0,
        summary: "A container for client connection commands.",
        since: "2.4.0",
        handler: super::container,
        subcommands: CLIENT,
        ..FAMILY
    },
];

const CLIENT: &[Command] = &[
    Command {
        name: "id",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns the unique client ID of the connection.",
        since: "5.0.0",
        handler: client_id,
        ..FAMILY
    },
    Command {
        name: "setname",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Sets the connection name.",
        since: "2.6.9",
        args: "connection-name",
        handler: client_setname,
        ..FAMILY
    },
    Command {
        name: "getname",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns the name of the connection.",
        since: "2.6.9",
        handler: client_getname,
        ..FAMILY
    },
    Command {
        name: "list",
        arity: -2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Lists open connections.",
        since: "2.4.0",
        tips: &["nondeterministic_output"],
        args: "[TYPE:normal_master_replica_pubsub=(NORMAL | MASTER | REPLICA | PUBSUB)] [ID:id=(client-id#int...)]",
        handler: client_list,
        ..FAMILY
    },
    Command {
        name: "info",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns information about the connection.",
        since: "6.2.0",
        tips: &["nondeterministic_output"],
        handler: client_info,
        ..FAMILY
    },
    Command {
        name: "kill",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Terminates open connections.",
        since: "2.4.0",
        args: "filter=('ip:port' | new-format=([ID:client-id#int] | [TYPE:normal_master_slave_pubsub=(NORMAL | MASTER | SLAVE | REPLICA | PUBSUB)] | [USER:username] | [ADDR:'ip:port'] | [LADDR:'ip:port'] | [SKIPME:'yes/no'])...)",
        handler: client_kill,
        ..FAMILY
    },
    Command {
        name: "no-evict",
        arity: 3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Sets the client eviction mode of the connection.",
        since: "7.0.0",
        args: "enabled=(ON | OFF)",
        handler: client_no_evict,
        ..FAMILY
    },
    Command {
        name: "no-touch",
        arity: 3,
        flags: FAST | NOSCRIPT | LOADING | STALE,
        summary:
            "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
        since: "7.2.0",
        handler: client_no_touch,
        ..FAMILY
    },
    Command {
        name: "reply",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Instructs the server whether to reply to commands.",
        since: "3.2.0",
        args: "on_off_skip=(ON | OFF | SKIP)",
        handler: client_reply,
        ..FAMILY
    },
    Command {
        name: "unblock",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Unblocks a client blocked by a blocking command from a different connection.",
        since: "5.0.0",
        args: "client-id#int [timeout_error=(TIMEOUT | ERROR)]",
        handler: client_unblock,
        ..FAMILY
    },
    Command {
        name: "pause",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Suspends commands processing.",
        since: "2.9.50",
        args: "timeout#int [mode=(WRITE | ALL)]",
        handler: super::pause::client_pause,
        ..FAMILY
    },
    Command {
        name: "unpause",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Resumes processing commands from paused clients.",
        since: "6.2.0",
        complexity: "O(N) Where N is the number of paused clients",
        handler: super::pause::client_unpause,
        ..FAMILY
    },
    Command {
        name: "tracking",
        arity: -3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Controls server-assisted client-side caching for the connection.",
        since: "6.0.0",
        complexity: "O(1). Some options may introduce additional complexity.",
        args: "status=(ON | OFF) [REDIRECT:client-id#int] [PREFIX:prefix]...+ [BCAST] [OPTIN] [OPTOUT] [NOLOOP]",
        handler: super::caching::client_tracking,
        ..FAMILY
    },
    Command {
        name: "caching",
        arity: 3,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Instructs the server whether to track the keys in the next request.",
        since: "6.0.0",
        args: "mode=(YES | NO)",
        handler: super::caching::client_caching,
        ..FAMILY
    },
    Command {
        name: "getredir",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary:
            "Returns the client ID to which the connection's tracking notifications are redirected.",
        since: "6.0.0",
        handler: super::caching::client_getredir,
        ..FAMILY
    },
    Command {
        name: "trackinginfo",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary:
            "Returns information about server-assisted client-side caching for the connection.",
        since: "6.2.0",
        handler: super::caching::client_trackinginfo,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
        since: "5.0.0",
        handler: client_help,
        ..FAMILY
    },
];

fn ping(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 2 {
        return Err(CmdError::arity("ping"));
    }
    // A RESP2 subscriber gets a push-shaped ["pong", <message or "">], as Redis.
    if ctx.client.pubsub_mode {
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(ctx.argv.get(1).map_or(&b""[..], |m| &m[..]));
        return Ok(());
    }
    match ctx.argv.len() {
        1 => ctx.out.simple("PONG"),
        2 => ctx.out.bulk(ctx.arg(1)),
        _ => return Err(CmdError::arity("ping")),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.bulk(ctx.arg(1));
    Ok(())
}

fn auth(ctx: &mut Ctx<'_>) -> CmdResult {
    let (user, pass) = match ctx.argv.len() {
        2 => (&b"default"[..], ctx.arg(1)),
        3 => (ctx.arg(1), ctx.arg(2)),
        _ => return Err(CmdError::SYNTAX),
    };
    // MONITOR shows neither a user name nor a password.
    for i in 1..ctx.argv.len() {
        ctx.redact(i);
    }
    if ctx.argv.len() == 2 && ctx.server().acl.default_user().rules().nopass {
        return Err(CmdError::err("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
    }
    super::acl::authenticate(ctx, user, pass)?;
    ctx.out.ok();
    Ok(())
}

fn hello(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut proto = None;
    if ctx.argv.len() >= 2 {
        let v = ctx
            .int_arg(1)
            .map_err(|_| CmdError::err("Protocol version is not an integer or out of range"))?;
        proto = match v {
            2 => Some(Protocol::Resp2),
            3 => Some(Protocol::Resp3),
            _ => return Err(CmdError::Static("NOPROTO unsupported protocol version")),
        };
    }
    let mut name = None;
    let mut j = 2;
    while j < ctx.argv.len() {
        let more = ctx.argv.len() - 1 - j;
        let opt = ctx.lower(j);
        if opt == b"auth" && more >= 2 {
            ctx.redact(j + 1);
            ctx.redact(j + 2);
            super::acl::authenticate(ctx, ctx.arg(j + 1), ctx.arg(j + 2))?;
            j += 3;
        } else if opt == b"setname" && more >= 1 {
            validate_name(ctx.arg(j + 1))?;
            name = Some(ctx.argv[j + 1].clone());
            j += 2;
        } else {
            return Err(CmdError::err(format!(
                "Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(ctx.arg(j))
            )));
        }
    }
    if !ctx.client.authenticated {
        return Err(CmdError::Static("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(n) = name {
        *ctx.client.info.name.lock() = (!n.is_empty()).then_some(n);
    }
    if let Some(p) = proto {
        ctx.client.set_proto(p);
        ctx.out.proto = p;
    }
    let out = &mut ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(crate::commands::info::REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if ctx.client.proto == Protocol::Resp3 {
        3
    } else {
        2
    });
    out.bulk(b"id");
    out.int(ctx.client.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

fn select(ctx: &mut Ctx<'_>) -> CmdResult {
    let db = ctx.int_arg(1)?;
    if db < 0 || db as usize >= ctx.keyspace().db_count() {
        return Err(CmdError::DB_RANGE);
    }
    ctx.client.set_db(db as usize);
    ctx.out.ok();
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.ok();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>) -> CmdResult {
    if let Some(mut subs) = ctx.client.subs.take() {
        ctx.pubsub().remove_all(&mut subs);
    }
    super::transactions::forget(ctx.watches(), ctx.client);
    let server = ctx.server();
    server.monitors.remove(&ctx.client.info);
    server.tracking.disable(&ctx.client.info);
    let open = !server.acl.auth_required();
    ctx.client.set_user(server.acl.default_user().clone());
    let c = &mut *ctx.client;
    c.set_db(0);
    c.set_proto(Protocol::Resp2);
    c.reply = ReplyMode::On;
    c.no_evict = false;
    c.no_touch = false;
    c.caching = false;
    c.info.no_evict.store(false, Ordering::Relaxed);
    c.info.no_touch.store(false, Ordering::Relaxed);
    *c.info.name.lock() = None;
    c.authenticated = open;
    ctx.out.proto = Protocol::Resp2;
    ctx.out.simple("RESET");
    Ok(())
}

fn client_id(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.client.id as i64);
    Ok(())
}

/// Redis allows names of printable ASCII without spaces.
fn validate_name(name: &[u8]) -> CmdResult {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(CmdError::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

fn client_setname(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = ctx.argv[2].clone();
    validate_name(&name)?;
    *ctx.client.info.name.lock() = (!name.is_empty()).then_some(name);
    ctx.out.ok();
    Ok(())
}

fn client_getname(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.client.info.name.lock().as_ref() {
        Some(n) => ctx.out.bulk(n),
        None => ctx.out.null(),
    }
    Ok(())
}

/// One CLIENT LIST line, with Redis 7.0's fields. Buffer and memory figures come from the
/// connection (`net::clients`); tot-mem is our own estimate of what the client holds.
pub(crate) fn client_line(server: &Server, c: &ClientInfo) -> String {
    let name = c
        .name
        .lock()
        .as_ref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let cmd = server
        .table
        .fullnames
        .get(c.last_cmd.load(Ordering::Relaxed))
        .map(String::as_str)
        .unwrap_or("NULL");
    let mut flags = String::new();
    let (sub, psub, ssub) = (
        c.sub.load(Ordering::Relaxed),
        c.psub.load(Ordering::Relaxed),
        c.ssub.load(Ordering::Relaxed),
    );
    if c.monitor.load(Ordering::Relaxed) {
        flags.push('O');
    }
    match c.kind.load(Ordering::Relaxed) {
        crate::exec::client::kind::REPLICA => flags.push('S'),
        crate::exec::client::kind::MASTER => flags.push('M'),
        _ => {}
    }
    let multi = c.multi.load(Ordering::Relaxed);
    if sub + psub + ssub > 0 {
        flags.push('P');
    }
    if multi >= 0 {
        flags.push('x');
    }
    if c.blocked.load(Ordering::Relaxed) {
        flags.push('b');
    }
    let tracking = c.tracking.flags();
    for (bit, letter) in [
        (mode::ON, 't'),
        (mode::BROKEN_REDIRECT, 'R'),
        (mode::BCAST, 'B'),
    ] {
        if tracking & bit != 0 {
            flags.push(letter);
        }
    }
    if c.watch_dirty.load(Ordering::Relaxed) {
        flags.push('d');
    }
    if c.no_evict.load(Ordering::Relaxed) {
        flags.push('e');
    }
    if c.no_touch.load(Ordering::Relaxed) {
        flags.push('T');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    // Buffer figures as the connection last reported them (net::clients).
    let qbuf = c.qbuf.load(Ordering::Relaxed);
    let (obl, oll, omem) = c.mem.output_fields();
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs=16384 rbp=0 obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        name,
        c.created.elapsed().as_secs(),
        c.idle_secs(),
        flags,
        c.db.load(Ordering::Relaxed),
        sub,
        psub,
        ssub,
        multi,
        qbuf,
        c.mem.qbuf_cap.load(Ordering::Relaxed).saturating_sub(qbuf),
        c.mem.argv.load(Ordering::Relaxed),
        if multi >= 0 {
            c.multi_mem.load(Ordering::Relaxed)
        } else {
            0
        },
        obl,
        oll,
        omem,
        c.mem.total.load(Ordering::Relaxed),
        cmd,
        c.user_name(),
        c.tracking.redirect(),
        c.resp.load(Ordering::Relaxed)
    )
}

/// The calling client's argv-mem while CLIENT INFO/LIST runs: its own arguments, as Redis
/// counts them for the command being executed.
fn with_own_argv<T>(ctx: &Ctx<'_>, f: impl FnOnce() -> T) -> T {
    let argv = &ctx.client.info.mem.argv;
    argv.store(ctx.argv.iter().map(|a| a.len()).sum(), Ordering::Relaxed);
    let out = f();
    argv.store(0, Ordering::Relaxed);
    out
}

fn client_info(ctx: &mut Ctx<'_>) -> CmdResult {
    let line = with_own_argv(ctx, || client_line(ctx.server(), &ctx.client.info)) + "\n";
    ctx.out.verbatim("txt", line.as_bytes());
    Ok(())
}

fn client_list(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut class = None;
    let mut j = 2;
    while j < ctx.argv.len() {
        match ctx.lower(j).as_slice() {
            b"type" if j + 1 < ctx.argv.len() => {
                let t = ctx.lower(j + 1);
                match t.as_slice() {
                    b"normal" => class = Some(ClientClass::Normal),
                    b"pubsub" => class = Some(ClientClass::PubSub),
                    b"master" => class = Some(ClientClass::Master),
                    b"replica" | b"slave" => class = Some(ClientClass::Replica),
                    _ => {
                        return Err(CmdError::err(format!(
                            "Unknown client type '{}'",
                            String::from_utf8_lossy(ctx.arg(j + 1))
                        )))
                    }
                }
                j += 2;
            }
            b"id" if j + 1 < ctx.argv.len() => {
                let mut list = Vec::new();
                for a in &ctx.argv[j + 1..] {
                    match crate::exec::command::parse_i64(a) {
                        Some(id) if id > 0 => list.push(id as u64),
                        _ => return Err(CmdError::err("Invalid client ID")),
                    }
                }
                ids = Some(list);
                j = ctx.argv.len();
            }
            _ => return Err(CmdError::SYNTAX),
        }
    }
    let text = with_own_argv(ctx, || {
        let mut text = String::new();
        for c in ctx.server().clients.snapshot() {
            if ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
                && class.is_none_or(|k| k == ClientClass::of(&c))
            {
                text.push_str(&client_line(ctx.server(), &c));
                text.push('\n');
            }
        }
        text
    });
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

fn client_kill(ctx: &mut Ctx<'_>) -> CmdResult {
    let all = ctx.server().clients.snapshot();
    // The old form: CLIENT KILL addr:port.
    if ctx.argv.len() == 3 {
        let addr = ctx.arg(2);
        let Some(c) = all.iter().find(|c| c.addr.as_bytes() == addr) else {
            return Err(CmdError::err("No such client"));
        };
        kill(ctx.client, c);
        ctx.out.ok();
        return Ok(());
    }
    let (mut id, mut addr, mut laddr, mut skipme, mut maxage) = (None, None, None, true, None);
    let mut class = None;
    let mut user = None;
    let mut j = 2;
    while j < ctx.argv.len() {
        if j + 1 >= ctx.argv.len() {
            return Err(CmdError::SYNTAX);
        }
        let val = ctx.arg(j + 1);
        match ctx.lower(j).as_slice() {
            b"id" => match crate::exec::command::parse_i64(val) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return Err(CmdError::err("client-id should be greater than 0")),
            },
            b"addr" => addr = Some(val.to_vec()),
            b"laddr" => laddr = Some(val.to_vec()),
            b"user" => match ctx.server().acl.user(val) {
                Some(u) => user = Some(u),
                None => {
                    return Err(CmdError::err(format!(
                        "No such user '{}'",
                        String::from_utf8_lossy(val)
                    )))
                }
            },
            b"type" => match val.to_ascii_lowercase().as_slice() {
                b"normal" => class = Some(ClientClass::Normal),
                b"pubsub" => class = Some(ClientClass::PubSub),
                b"master" => class = Some(ClientClass::Master),
                b"replica" | b"slave" => class = Some(ClientClass::Replica),
                _ => {
                    return Err(CmdError::err(format!(
                        "Unknown client type '{}'",
                        String::from_utf8_lossy(val)
                    )))
                }
            },
            b"skipme" => match val.to_ascii_lowercase().as_slice() {
                b"yes" => skipme = true,
                b"no" => skipme = false,
                _ => return Err(CmdError::SYNTAX),
            },
            b"maxage" => {
                maxage = Some(crate::exec::command::parse_i64(val).ok_or(CmdError::NOT_INTEGER)?)
            }
            _ => return Err(CmdError::SYNTAX),
        }
        j += 2;
    }
    let mut killed = 0;
    for c in &all {
        let matches = class.is_none_or(|k| k == ClientClass::of(c))
            && id.is_none_or(|id| c.id == id)
            && addr
                .as_ref()
                .is_none_or(|a| c.addr.as_bytes() == a.as_slice())
            && laddr
                .as_ref()
                .is_none_or(|a| c.laddr.as_bytes() == a.as_slice())
            && maxage.is_none_or(|m| c.created.elapsed().as_secs() as i64 >= m)
            && user
                .as_ref()
                .is_none_or(|u| c.user().is_some_and(|cu| Arc::ptr_eq(&cu, u)))
            && !(skipme && c.id == ctx.client.id);
        if matches {
            kill(ctx.client, c);
            killed += 1;
        }
    }
    ctx.out.int(killed);
    Ok(())
}

/// CLIENT LIST/KILL TYPE: a replica's connection, this replica's link to its primary, a
/// client with subscriptions (pubsub), or a normal one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientClass {
    Normal,
    PubSub,
    Replica,
    Master,
}

impl ClientClass {
    fn of(c: &ClientInfo) -> ClientClass {
        match c.kind.load(Ordering::Relaxed) {
            crate::exec::client::kind::REPLICA => return ClientClass::Replica,
            crate::exec::client::kind::MASTER => return ClientClass::Master,
            _ => {}
        }
        if c.sub.load(Ordering::Relaxed)
            + c.psub.load(Ordering::Relaxed)
            + c.ssub.load(Ordering::Relaxed)
            > 0
        {
            ClientClass::PubSub
        } else {
            ClientClass::Normal
        }
    }
}

/// Kills a client; killing ourselves closes after this reply, as in Redis.
fn kill(me: &mut Client, c: &ClientInfo) {
    if c.id == me.id {
        me.close_after_reply = true;
    } else {
        c.kill();
    }
}

fn on_off(ctx: &Ctx<'_>, i: usize) -> Result<bool, CmdError> {
    match ctx.lower(i).as_slice() {
        b"on" => Ok(true),
        b"off" => Ok(false),
        _ => Err(CmdError::SYNTAX),
    }
}

fn client_no_evict(ctx: &mut Ctx<'_>) -> CmdResult {
    let on = on_off(ctx, 2)?;
    ctx.client.no_evict = on;
    ctx.client.info.no_evict.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn client_no_touch(ctx: &mut Ctx<'_>) -> CmdResult {
    let on = on_off(ctx, 2)?;
    ctx.client.no_touch = on;
    ctx.client.info.no_touch.store(on, Ordering::Relaxed);
    ctx.out.ok();
    Ok(())
}

fn client_reply(ctx: &mut Ctx<'_>) -> CmdResult {
    let mode = match ctx.lower(2).as_slice() {
        b"on" => ReplyMode::On,
        b"off" => ReplyMode::Off,
        b"skip" => ReplyMode::Skip,
        _ => return Err(CmdError::SYNTAX),
    };
    ctx.client.reply = mode;
    if mode == ReplyMode::On {
        ctx.out.ok();
    }
    Ok(())
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends another client's blocking command as if it
/// timed out, or with an UNBLOCKED error. Replies 1 if that client was blocked.
fn client_unblock(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 4 {
        return Err(CmdError::err(
            "unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.",
        ));
    }
    let mut error = false;
    if ctx.argv.len() == 4 {
        match ctx.lower(3).as_slice() {
            b"timeout" => {}
            b"error" => error = true,
            _ => {
                return Err(CmdError::err(
                    "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
                ))
            }
        }
    }
    let id = ctx.int_arg(2)?;
    let done = id > 0 && ctx.server().blocking.unblock(id as u64, error);
    ctx.out.int(done as i64);
    Ok(())
}

fn client_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "CLIENT", CLIENT)
}
