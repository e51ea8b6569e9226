//! REPLICAOF SLAVEOF ROLE SYNC PSYNC REPLCONF WAIT FAILOVER (see
//! crate::services::replication, docs/replication.md).

use crate::exec::command::{flags::*, parse_i64, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;
use crate::services::replication::{self as repl, ClientRepl, FailoverArgs, Handoff, RoleReply};
use std::sync::Arc;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

pub static COMMANDS: &[Command] = &[
    Command {
        name: "replicaof",
        arity: 3,
        flags: ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        args: "args=(host-port=(host port#int) | no-one=(NO ONE))",
        summary: "Make the server a replica of another instance, or promote it as master.",
        since: "5.0.0",
        handler: replicaof,
        ..FAMILY
    },
    Command {
        name: "slaveof",
        arity: 3,
        flags: ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING,
        args: "args=(host-port=(host port#int) | no-one=(NO ONE))",
        summary: "Make the server a replica of another instance, or promote it as master.",
        since: "1.0.0",
        handler: replicaof,
        ..FAMILY
    },
    Command {
        name: "role",
        arity: 1,
        flags: NOSCRIPT | LOADING | STALE | FAST,
        acl: &["@admin", "@dangerous"],
        summary: "Return the role of the instance in the context of replication",
        since: "2.8.12",
        handler: role,
        ..FAMILY
    },
    Command {
        name: "sync",
        arity: 1,
        flags: ADMIN | NOSCRIPT | NO_MULTI | NO_ASYNC_LOADING,
        summary: "Internal command used for replication",
        since: "1.0.0",
        handler: sync,
        ..FAMILY
    },
    Command {
        name: "psync",
        arity: -3,
        flags: ADMIN | NOSCRIPT | NO_MULTI | NO_ASYNC_LOADING,
        args: "replicationid offset#int",
        summary: "Internal command used for replication",
        since: "2.8.0",
        handler: sync,
        ..FAMILY
    },
    Command {
        name: "replconf",
        arity: -1,
        flags: ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        summary: "An internal command for configuring the replication stream",
        since: "3.0.0",
        handler: replconf,
        ..FAMILY
    },
    Command {
        name: "wait",
        arity: 3,
        flags: NOSCRIPT,
        group: "generic",
        acl: &["@connection"],
        tips: &["request_policy:all_shards", "response_policy:agg_min"],
        args: "numreplicas#int timeout#int",
        summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
        since: "3.0.0",
        handler: wait,
        ..FAMILY
    },
    Command {
        name: "failover",
        arity: -1,
        flags: ADMIN | NOSCRIPT | STALE,
        summary: "Start a coordinated failover between this server and one of its replicas.",
        since: "6.2.0",
        complexity: "O(N) where N is the number of replicas",
        args: "[TO:target=(host port#int [FORCE])] [ABORT] [TIMEOUT:milliseconds#int]",
        handler: failover,
        ..FAMILY
    },
];

fn arc(ctx: &Ctx<'_>) -> Result<Arc<crate::server::Server>, CmdError> {
    ctx.server()
        .arc()
        .ok_or(CmdError::Static("ERR server is shutting down"))
}

fn replicaof(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = arc(ctx)?;
    if server.repl.failover.active() {
        return Err(CmdError::err("REPLICAOF not allowed while failing over."));
    }
    let (host, port) = (ctx.arg(1), ctx.arg(2));
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        if server.repl.is_replica() {
            repl::become_master(&server);
            tracing::info!(
                "MASTER MODE enabled (user request from 'id={} addr={}')",
                ctx.client.id,
                ctx.client.info.addr
            );
        }
        ctx.out.ok();
        return Ok(());
    }
    let port = parse_i64(port)
        .filter(|p| (0..=65535).contains(p))
        .ok_or(CmdError::Static("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(host).into_owned();
    match repl::become_replica(&server, &host, port as u16) {
        repl::Switched::Already => {
            tracing::info!("REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.");
            ctx.out.simple("OK Already connected to specified master");
        }
        repl::Switched::Now => {
            tracing::info!(
                "REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')",
                ctx.client.id,
                ctx.client.info.addr
            );
            ctx.out.ok();
        }
    }
    Ok(())
}

fn role(ctx: &mut Ctx<'_>) -> CmdResult {
    match repl::role_reply(ctx.server()) {
        RoleReply::Master(offset, replicas) => {
            ctx.out.array(3);
            ctx.out.bulk(b"master");
            ctx.out.int(offset as i64);
            ctx.out.array(replicas.len());
            for (ip, port, off) in replicas {
                ctx.out.array(3);
                ctx.out.bulk(ip.as_bytes());
                ctx.out.bulk(port.to_string().as_bytes());
                ctx.out.bulk(off.to_string().as_bytes());
            }
        }
        RoleReply::Replica(host, port, state, off) => {
            ctx.out.array(5);
            ctx.out.bulk(b"slave");
            ctx.out.bulk(host.as_bytes());
            ctx.out.int(i64::from(port));
            ctx.out.bulk(state.as_bytes());
            ctx.out.int(off);
        }
    }
    Ok(())
}

/// SYNC and PSYNC: once checked, the connection leaves the request path to serve the
/// replica (`replication::primary::serve_replica`).
fn sync(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = arc(ctx)?;
    let r = &server.repl;
    let psync = ctx.arg(0).eq_ignore_ascii_case(b"psync");
    if psync && ctx.argv.len() > 3 && ctx.arg(3).eq_ignore_ascii_case(b"failover") {
        let asked = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        tracing::warn!("Failover request received for replid {asked}.");
        if !r.is_replica() {
            return Err(CmdError::err("PSYNC FAILOVER can't be sent to a master."));
        }
        if !asked.eq_ignore_ascii_case(&r.ids().replid) {
            return Err(CmdError::err("PSYNC FAILOVER replid must match my replid."));
        }
        repl::become_master(&server);
        tracing::info!(
            "MASTER MODE enabled (failover request from 'id={} addr={}')",
            ctx.client.id,
            ctx.client.info.addr
        );
    }
    if r.failover.active() {
        return Err(CmdError::Static(
            "NOMASTERLINK Can't SYNC while failing over",
        ));
    }
    if r.is_replica() && !r.link_up() {
        return Err(CmdError::Static(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    // A filtered RDB is made for its replica alone, so it goes over the socket.
    if ctx
        .client
        .repl
        .as_ref()
        .is_some_and(|c| c.rdb_filter.is_some() && !c.capa_eof)
    {
        return Err(CmdError::err("Filtered replica requires EOF capability"));
    }
    let conf = ctx.client.repl.take().map(|c| *c).unwrap_or_default();
    let psync = if psync {
        let offset = ctx.int_arg(2)?;
        Some((String::from_utf8_lossy(ctx.arg(1)).into_owned(), offset))
    } else {
        None
    };
    ctx.hand_off(Handoff { psync, conf });
    Ok(())
}

fn replconf(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len().is_multiple_of(2) {
        return Err(CmdError::SYNTAX);
    }
    let mut conf = ctx.client.repl.as_deref().cloned().unwrap_or_default();
    let mut j = 1;
    while j < ctx.argv.len() {
        let val = ctx.arg(j + 1);
        match ctx.lower(j).as_slice() {
            b"listening-port" => {
                let port = ctx.int_arg(j + 1)?;
                conf.listening_port = u16::try_from(port).unwrap_or(0);
            }
            b"ip-address" => {
                if val.len() >= 256 {
                    return Err(CmdError::err(format!(
                        "REPLCONF ip-address provided by replica instance is too long: {} bytes",
                        val.len()
                    )));
                }
                conf.ip_address = Some(String::from_utf8_lossy(val).into_owned());
            }
            b"capa" => {
                if val.eq_ignore_ascii_case(b"eof") {
                    conf.capa_eof = true;
                } else if val.eq_ignore_ascii_case(b"psync2") {
                    conf.capa_psync2 = true;
                }
            }
            // From a replica, ACKs are read by its connection (`serve_replica`); on a
            // client connection, and GETACK outside a primary's stream, they do nothing
            // and get no reply.
            b"ack" | b"getack" => return Ok(()),
            b"rdb-only" => match parse_i64(val) {
                Some(v @ 0..=1) => conf.rdb_only = v == 1,
                Some(_) => {
                    return Err(CmdError::err(
                        "value is out of range, value must between 0 and 1",
                    ))
                }
                None => return Err(CmdError::NOT_INTEGER),
            },
            b"rdb-filter-only" => {
                let mut filter = repl::RdbFilter::default();
                for part in val.split(u8::is_ascii_whitespace).filter(|p| !p.is_empty()) {
                    if !part.eq_ignore_ascii_case(b"functions") {
                        return Err(CmdError::err(format!(
                            "Unsupported rdb-filter-only option: {}",
                            String::from_utf8_lossy(part)
                        )));
                    }
                    filter.functions = true;
                }
                conf.rdb_filter = Some(filter);
            }
            _ => {
                return Err(CmdError::err(format!(
                    "Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(ctx.arg(j))
                )))
            }
        }
        j += 2;
    }
    ctx.client.repl = Some(Box::new(ClientRepl {
        master: false,
        ..conf
    }));
    ctx.out.ok();
    Ok(())
}

fn wait(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = arc(ctx)?;
    let r = &server.repl;
    if r.is_replica() {
        return Err(CmdError::err("WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let numreplicas = ctx.int_arg(1)?;
    let timeout = parse_i64(ctx.arg(2)).ok_or(CmdError::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    if timeout < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    let offset = ctx.client.woff;
    let acked = r.acked(offset);
    if acked as i64 >= numreplicas || !ctx.may_block() {
        ctx.out.int(acked as i64);
        return Ok(());
    }
    // Replicas acknowledge at once what they applied so far.
    r.backlog.feed_command(&[b"REPLCONF", b"GETACK", b"*"]);
    let deadline = (timeout > 0)
        .then(|| tokio::time::Instant::now() + std::time::Duration::from_millis(timeout as u64));
    let want = usize::try_from(numreplicas).unwrap_or(0);
    let proto = ctx.out.proto;
    ctx.reply_later(repl::primary::wait_for_acks(
        server.clone(),
        offset,
        want,
        deadline,
        proto,
    ));
    Ok(())
}

fn failover(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = arc(ctx)?;
    let mut a = FailoverArgs::default();
    if ctx.argv.len() == 2 && ctx.arg(1).eq_ignore_ascii_case(b"abort") {
        a.abort = true;
    } else {
        let mut j = 1;
        while j < ctx.argv.len() {
            let word = ctx.lower(j);
            if word == b"timeout" && j + 1 < ctx.argv.len() && a.timeout_ms == 0 {
                let t = ctx.int_arg(j + 1)?;
                if t <= 0 {
                    return Err(CmdError::err("FAILOVER timeout must be greater than 0"));
                }
                a.timeout_ms = t as u64;
                j += 2;
            } else if word == b"to" && j + 2 < ctx.argv.len() && a.to.is_none() {
                let port = ctx.int_arg(j + 2)?;
                let host = String::from_utf8_lossy(ctx.arg(j + 1)).into_owned();
                a.to = Some((host, u16::try_from(port).unwrap_or(0)));
                j += 3;
            } else if word == b"force" && !a.force {
                a.force = true;
                j += 1;
            } else {
                return Err(CmdError::SYNTAX);
            }
        }
    }
    repl::failover_command(&server, a)?;
    ctx.out.ok();
    Ok(())
}
