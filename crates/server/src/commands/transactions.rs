//! MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! EXEC locks the shards of every queued command's keys and of every watched key (ascending
//! order, one session), checks the watches, runs the commands, logs their effects as one
//! journal block and unlocks: no other client sees a state between two of its commands, and
//! transactions on disjoint keys run in parallel on different threads.

use crate::exec::client::Client;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command, Ctx, Keys};
use crate::exec::effects::LockPlan;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use strata_resp::Reply;

/// A client's transaction between MULTI and EXEC.
#[derive(Default)]
pub struct Multi {
    /// (command id, argv) in arrival order.
    pub queued: Vec<(usize, Vec<Bytes>)>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub aborted: bool,
}

/// Declares a command of this family (doc group "transactions").
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::exec::command::Handler,
) -> Command {
    Command::new(name, arity, flags, "transactions", summary, since, handler)
}

pub static COMMANDS: &[Command] = &[
    cmd(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "Starts a transaction.",
        "1.2.0",
        multi,
    ),
    cmd(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG,
        "Executes all commands in a transaction.",
        "1.2.0",
        exec,
    ),
    cmd(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "Discards a transaction.",
        "2.0.0",
        discard,
    ),
    Command {
        keys: Keys::Range {
            first: 1,
            last: -1,
            step: 1,
        },
        complexity: "O(1) for every key.",
        ..cmd(
            "watch",
            -2,
            NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
            "Monitors changes to keys to determine the execution of a transaction.",
            "2.2.0",
            watch,
        )
    },
    cmd(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "Forgets about watched keys of a transaction.",
        "2.2.0",
        unwatch,
    ),
];

/// Commands that run at once inside MULTI instead of being queued.
pub fn runs_in_multi(fullname: &str) -> bool {
    matches!(
        fullname,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Queues a command inside MULTI.
pub fn queue(client: &mut Client, id: usize, argv: &[Bytes], out: &mut Vec<u8>) {
    if let Some(m) = &mut client.multi {
        m.queued.push((id, argv.to_vec()));
    }
    Reply::new(out, client.proto).simple("QUEUED");
}

fn multi(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::err("MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Box::default());
    ctx.out.ok();
    Ok(())
}

fn discard(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.take().is_none() {
        return Err(CmdError::err("DISCARD without MULTI"));
    }
    ctx.server.watches.unwatch(&mut ctx.client.watch);
    ctx.out.ok();
    Ok(())
}

/// Forgets a client's transaction and watches (RESET, disconnect).
pub fn forget(server: &crate::server::Server, client: &mut Client) {
    client.multi = None;
    server.watches.unwatch(&mut client.watch);
}

fn watch(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::err("WATCH inside MULTI is not allowed"));
    }
    let db = ctx.client.db;
    for key in &ctx.argv[1..] {
        // Redis remembers whether the key had already expired, so that EXEC fails only
        // for a key that expires after the WATCH.
        let expired = {
            let mut l = ctx.db().lock1_at(ctx.now_ms, key);
            matches!(l.peek_raw_expire(key), Some(Some(at)) if at <= ctx.now_ms)
        };
        ctx.server
            .watches
            .watch(&mut ctx.client.watch, db, key.clone(), expired);
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.server.watches.unwatch(&mut ctx.client.watch);
    ctx.out.ok();
    Ok(())
}

fn exec(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(multi) = ctx.client.multi.take() else {
        return Err(CmdError::err("EXEC without MULTI"));
    };
    let server = ctx.server;
    if multi.aborted {
        server.watches.unwatch(&mut ctx.client.watch);
        return Err(CmdError::Static(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    // Everything the commands touch and every watched key, locked at once.
    let mut plan = LockPlan::Shards(Vec::new());
    let mut db = ctx.client.db;
    for (id, argv) in &multi.queued {
        let name = server.table.fullnames[*id].as_str();
        if name == "select" {
            if let Some(n) = crate::exec::command::parse_i64(&argv[1]) {
                if (0..server.keyspace.db_count() as i64).contains(&n) {
                    db = n as usize;
                }
            }
        }
        plan.merge(LockPlan::of(
            server,
            db,
            server.table.commands[*id],
            name,
            argv,
        ));
    }
    let watched: Vec<_> = ctx
        .client
        .watch
        .keys
        .iter()
        .map(|(d, k, _)| server.keyspace.shard_of(*d, k))
        .collect();
    plan.merge(LockPlan::Shards(watched));
    let nested = strata_engine::Keyspace::in_session();
    let session = (!nested)
        .then(|| crate::services::snapshot::open_write(server, ctx.stats, ctx.client, plan));
    let fails = ctx.client.watch.dirty.load(Ordering::Relaxed) || watched_key_expired(ctx);
    server.watches.unwatch(&mut ctx.client.watch);
    if fails {
        ctx.out.null_array();
        ctx.no_effect();
        return Ok(());
    }
    let client = &mut *ctx.client;
    let outer = crate::services::persist::Persist::begin_group(client, client.db);
    let out: &mut Vec<u8> = ctx.out.buf;
    Reply::new(out, client.proto).array(multi.queued.len());
    let mut clock = crate::tick::Tick::now();
    for (id, argv) in &multi.queued {
        let took = crate::exec::table::run(server, client, ctx.stats, *id, argv, out, &mut clock);
        crate::exec::table::log_slow(server, client, *id, argv, took, false);
        // Inside a transaction a blocking command does not block: it times out at once.
        if let Some(req) = client.block.take() {
            (req.on_timeout)(&mut Reply::new(out, client.proto));
        }
    }
    server.persist.end_group(client, outer);
    drop(session);
    ctx.no_effect();
    Ok(())
}

/// True when a watched key that was live at WATCH has expired since (Redis 7 fails the
/// EXEC then, even though nothing wrote the key).
fn watched_key_expired(ctx: &Ctx<'_>) -> bool {
    ctx.client.watch.keys.iter().any(|(db, key, was_expired)| {
        !was_expired && {
            let mut l = ctx.server.keyspace.db(*db).lock1_at(ctx.now_ms, key);
            matches!(l.peek_raw_expire(key), Some(Some(at)) if at <= ctx.now_ms)
        }
    })
}
