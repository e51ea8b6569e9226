//! Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT (CLIENT LIST, INFO
//! and KILL in client_list.rs).

use crate::exec::client::ReplyMode;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;
use std::sync::atomic::Ordering;
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
        handler: super::client_list::client_list,
        ..FAMILY
    },
    Command {
        name: "info",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Returns information about the connection.",
        since: "6.2.0",
        tips: &["nondeterministic_output"],
        handler: super::client_list::client_info,
        ..FAMILY
    },
    Command {
        name: "kill",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Terminates open connections.",
        since: "2.4.0",
        args: "filter=('ip:port' | new-format=([ID:client-id#int] | [TYPE:normal_master_slave_pubsub=(NORMAL | MASTER | SLAVE | REPLICA | PUBSUB)] | [USER:username] | [ADDR:'ip:port'] | [LADDR:'ip:port'] | [SKIPME:'yes/no'])...)",
        handler: super::client_list::client_kill,
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
            name = Some(ctx.kept_arg(j + 1));
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
    let name = ctx.kept_arg(2);
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
