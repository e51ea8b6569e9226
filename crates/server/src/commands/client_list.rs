//! CLIENT LIST, CLIENT INFO and CLIENT KILL: the clients as Redis 7.0 lists them, and
//! their filters.

use crate::exec::client::{Client, ClientInfo};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::server::Server;
use crate::services::tracking::mode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
    if c.unix {
        flags.push('U');
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
    let (obl, oll, omem) = c.mem.output_fields(c.mail.pending());
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={}",
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
        c.mem.rbs.load(Ordering::Relaxed),
        c.mem.rbp.load(Ordering::Relaxed),
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

pub(super) fn client_info(ctx: &mut Ctx<'_>) -> CmdResult {
    let line = with_own_argv(ctx, || client_line(ctx.server(), &ctx.client.info)) + "\n";
    ctx.out.verbatim("txt", line.as_bytes());
    Ok(())
}

pub(super) fn client_list(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut class = None;
    let mut j = 2;
    while j < ctx.argv.len() {
        match ctx.lower(j).as_slice() {
            b"type" if j + 1 < ctx.argv.len() => {
                class = Some(ClientClass::parse(ctx.arg(j + 1))?);
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

pub(super) fn client_kill(ctx: &mut Ctx<'_>) -> CmdResult {
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
            b"type" => class = Some(ClientClass::parse(val)?),
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
    /// CLIENT LIST's and CLIENT KILL's TYPE argument.
    fn parse(arg: &[u8]) -> Result<ClientClass, CmdError> {
        Ok(match arg.to_ascii_lowercase().as_slice() {
            b"normal" => ClientClass::Normal,
            b"pubsub" => ClientClass::PubSub,
            b"master" => ClientClass::Master,
            b"replica" | b"slave" => ClientClass::Replica,
            _ => {
                return Err(CmdError::err(format!(
                    "Unknown client type '{}'",
                    String::from_utf8_lossy(arg)
                )))
            }
        })
    }

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
