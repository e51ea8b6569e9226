//! MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! EXEC locks the shards of every queued command's keys and of every watched key (ascending
//! order, one session), checks the watches, runs the commands, logs their effects as one
//! journal block and unlocks: no other client sees a state between two of its commands, and
//! transactions on disjoint keys run in parallel on different threads.

use crate::exec::client::Client;
use crate::exec::command::{flags::*, ks, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::exec::effects::Group;
use crate::exec::plan::LockPlan;
use crate::exec::{execute, Call, Nest, Origin};
use crate::server::Server;
use crate::services::snapshot::open_write;
use crate::services::watch::Watches;
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

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "transactions",
    ..Command::DEFAULT
};

pub static COMMANDS: &[Command] = &[
    Command {
        name: "multi",
        arity: 1,
        flags: NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED,
        summary: "Starts a transaction.",
        since: "1.2.0",
        handler: multi,
        ..FAMILY
    },
    Command {
        name: "exec",
        arity: 1,
        flags: NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | NOT_QUEUED,
        summary: "Executes all commands in a transaction.",
        since: "1.2.0",
        handler: exec,
        call_flags: Some(queued_flags),
        ..FAMILY
    },
    Command {
        name: "discard",
        arity: 1,
        flags: NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED,
        summary: "Discards a transaction.",
        since: "2.0.0",
        handler: discard,
        ..FAMILY
    },
    Command {
        name: "watch",
        arity: -2,
        flags: NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | NOT_QUEUED,
        keys: Keys::Specs(&[KeySpec::range(ks::RO, 1, -1, 1)]),
        summary: "Monitors changes to keys to determine the execution of a transaction.",
        since: "2.2.0",
        complexity: "O(1) for every key.",
        args: "key#key...",
        handler: watch,
        ..FAMILY
    },
    Command {
        name: "unwatch",
        arity: 1,
        flags: NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        summary: "Forgets about watched keys of a transaction.",
        since: "2.2.0",
        handler: unwatch,
        ..FAMILY
    },
];

/// EXEC's flags include those of the commands it will run (CLIENT PAUSE WRITE holds an
/// EXEC of writes), as Redis's mstate.cmd_flags.
fn queued_flags(server: &Server, client: &Client, declared: u32, _: &[Bytes]) -> u32 {
    let queued = client.multi.as_ref().map_or(&[][..], |m| &m.queued[..]);
    queued.iter().fold(declared, |f, (id, argv)| {
        f | crate::exec::admit::call_flags(server, client, *id, argv)
    })
}

/// Queues a command inside MULTI. Like Redis, a transaction that cannot run any more (a
/// command was refused, or a watched key changed) keeps nothing, but still answers QUEUED.
pub fn queue(client: &mut Client, id: usize, argv: &[Bytes], out: &mut Vec<u8>) {
    let doomed = client.watch.dirty.load(Ordering::Relaxed);
    if let Some(m) = client.multi.as_mut().filter(|m| !m.aborted && !doomed) {
        m.queued.push((id, argv.to_vec()));
        client
            .info
            .multi
            .store(m.queued.len() as i64, Ordering::Relaxed);
        let bytes: usize = argv.iter().map(|a| a.len()).sum();
        client.info.multi_mem.fetch_add(bytes, Ordering::Relaxed);
    }
    Reply::new(out, client.proto).simple("QUEUED");
}

fn multi(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(CmdError::err("MULTI calls can not be nested"));
    }
    ctx.client.info.multi_mem.store(0, Ordering::Relaxed);
    ctx.client.set_multi(Some(Box::default()));
    ctx.out.ok();
    Ok(())
}

fn discard(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(CmdError::err("DISCARD without MULTI"));
    }
    ctx.client.set_multi(None);
    ctx.watches().unwatch(&mut ctx.client.watch);
    ctx.out.ok();
    Ok(())
}

/// Forgets a client's transaction and watches (RESET, disconnect).
pub fn forget(watches: &Watches, client: &mut Client) {
    client.set_multi(None);
    watches.unwatch(&mut client.watch);
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
        ctx.server()
            .watches
            .watch(&mut ctx.client.watch, db, key.clone(), expired);
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.watches().unwatch(&mut ctx.client.watch);
    ctx.out.ok();
    Ok(())
}

fn exec(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(multi) = ctx.client.multi.take() else {
        return Err(CmdError::err("EXEC without MULTI"));
    };
    ctx.client.set_multi(None);
    let server = ctx.server();
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
        let cmd = server.table.commands[*id];
        if cmd.name == "select" {
            if let Some(n) = crate::exec::command::parse_i64(&argv[1]) {
                if (0..server.keyspace.db_count() as i64).contains(&n) {
                    db = n as usize;
                }
            }
        }
        plan.merge(LockPlan::of(server, db, *id, argv));
    }
    let watched: Vec<_> = ctx
        .client
        .watch
        .keys
        .iter()
        .map(|(d, k)| server.keyspace.shard_of(*d, k))
        .collect();
    plan.merge(LockPlan::Shards(watched));
    let mut worker = ctx.worker();
    let nested = strata_engine::Keyspace::in_session();
    let hold = (!nested).then(|| open_write(server, worker.stats, plan));
    let fails = ctx.client.watch.dirty.load(Ordering::Relaxed) || watched_key_expired(ctx);
    server.watches.unwatch(&mut ctx.client.watch);
    if fails {
        ctx.out.null_array();
        ctx.no_effect();
        return Ok(());
    }
    let parts = ctx.parts();
    let epoch = match (&hold, &parts.nest) {
        (Some(h), _) => h.epoch,
        (None, Some(outer)) => outer.epoch,
        (None, None) => 0,
    };
    let mut nest = Nest {
        group: Group::new(parts.client.db),
        epoch,
        script: None,
    };
    Reply::new(parts.out, parts.client.proto).array(multi.queued.len());
    for (_, argv) in &multi.queued {
        let origin = Origin::Nested(&mut nest);
        execute(
            &mut worker,
            parts.client,
            Call::new(argv),
            origin,
            parts.out,
            parts.after,
        );
    }
    // The transaction's effects: one block, recorded while its shards are still held.
    match parts.nest {
        Some(outer) => outer.group.append(nest.group),
        None => {
            let lsn = server.sinks.record_group(&nest.group, epoch);
            if lsn != 0 {
                parts.client.last_lsn = lsn;
            }
        }
    }
    drop(hold);
    ctx.no_effect();
    Ok(())
}

/// True when a watched key that was live at WATCH (or removed since) has expired: Redis
/// 7 fails the EXEC then, even though nothing wrote the key.
fn watched_key_expired(ctx: &Ctx<'_>) -> bool {
    let cw = &ctx.client.watch;
    cw.keys.iter().any(|(db, key)| {
        let mut l = ctx.keyspace().db(*db).lock1_at(ctx.now_ms, key);
        let expired = matches!(l.peek_raw_expire(key), Some(Some(at)) if at <= ctx.now_ms);
        drop(l);
        expired && !ctx.watches().is_stale(cw, *db, key)
    })
}
