//! Running a Lua script or function for EVAL/FCALL, and the `Host` through which its
//! `redis.call` re-enters [`exec::execute`](crate::exec::execute).
//!
//! A script runs under one engine session: the shards of its declared keys are locked
//! before it starts and released after its effects are recorded as one block, so no client
//! sees a state between two of its calls, and scripts on disjoint keys run in parallel on
//! different threads. A call on a key the script did not declare adds that key's shard to
//! the session on the spot (`plan::hold`; the cost is documented in docs/compatibility.md).

use crate::exec::client::Client;
use crate::exec::command::flags;
use crate::exec::ctx::Ctx;
use crate::exec::effects::Group;
use crate::exec::plan::{LockPlan, UNDECLARED_WAIT};
use crate::exec::{execute, After, Call, Nest, Origin, Outcome, ScriptRules, Worker};
use crate::services::scripting::{with_lua, Running, Target};
use crate::services::snapshot;
use crate::tick::Tick;
use bytes::Bytes;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_resp::Protocol;
use strata_scripting::Host;

/// What to run, and with what.
pub struct Script<'s> {
    pub target: Target<'s>,
    /// The sha1 or function name (SCRIPT KILL and FUNCTION STATS show it).
    pub name: &'s str,
    pub keys: &'s [Bytes],
    pub args: &'s [Bytes],
    /// EVAL_RO, FCALL_RO or a `no-writes` script.
    pub read_only: bool,
    /// Memory was over the limit when it started, and it is not flagged `allow-oom`.
    pub deny_oom: bool,
}

/// Runs `script` for the command in `ctx` (EVAL, FCALL...) and returns its reply bytes.
pub fn run(ctx: &mut Ctx<'_>, script: Script<'_>) -> Vec<u8> {
    let server = ctx.server();
    let worker = ctx.worker();
    let argv = ctx.argv;
    let parts = ctx.parts();
    let client = parts.client;
    let db = client.db;
    // Declared keys locked up front; inside an EXEC the transaction holds them already.
    let ids: Vec<_> = script
        .keys
        .iter()
        .map(|k| server.keyspace.shard_of(db, k))
        .collect();
    let (hold, epoch) = match &parts.nest {
        Some(outer) => {
            server
                .keyspace
                .extend_session(&ids, Instant::now() + UNDECLARED_WAIT);
            (None, outer.epoch)
        }
        None => {
            let hold = snapshot::open_write(server, worker.stats, LockPlan::Shards(ids));
            let epoch = hold.epoch;
            (Some(hold), epoch)
        }
    };
    let now = Tick::now();
    let mut nest = Nest {
        group: Group::new(db),
        epoch,
        script: Some(ScriptRules {
            read_only: script.read_only,
            deny_oom: script.deny_oom,
            wrote: false,
            started_ms: server.clock.unix_ms(now),
        }),
    };
    let proto = client.proto;
    let client_resp = if proto == Protocol::Resp3 { 3 } else { 2 };
    let key_refs: Vec<&[u8]> = script.keys.iter().map(|k| k.as_ref()).collect();
    let arg_refs: Vec<&[u8]> = script.args.iter().map(|a| a.as_ref()).collect();
    let threshold = Duration::from_millis(server.scripts.busy_threshold_ms.load(Ordering::Relaxed));
    let (reply, registered, failures) = {
        let mut host = ScriptHost {
            worker,
            client: &mut *client,
            after: parts.after,
            nest: &mut nest,
            started: now,
            threshold,
            wrote: false,
            running: None,
            about: (script.name, argv, matches!(script.target, Target::Eval(..))),
            keys: script.keys,
            failures: 0,
            counted_here: false,
        };
        let reply = with_lua(&server.scripts, |lua| match script.target {
            Target::Eval(sha, body) => {
                lua.eval_sha(sha, body, &key_refs, &arg_refs, client_resp, &mut host)
            }
            Target::Function(f) => lua.fcall(f, &key_refs, &arg_refs, client_resp, &mut host),
        });
        (reply, host.running.map(|r| r.id), host.failures)
    };
    client.db = db;
    client.proto = proto;
    if let Some(id) = registered {
        server.scripts.running.lock().retain(|r| r.id != id);
        server.scripts.refresh_busy();
    }
    // The script's effects: part of the EXEC it ran in, or one block of their own, recorded
    // while its shards are still held.
    match parts.nest {
        Some(outer) => outer.group.append(nest.group),
        None => {
            let lsn = server.sinks.record_group(&nest.group, epoch);
            if lsn != 0 {
                client.last_lsn = lsn;
            }
        }
    }
    drop(hold);
    ctx.count_failures(failures);
    reply
}

thread_local! {
    /// What serves this thread's other connections while its script is busy, and when it
    /// last did (`set_while_busy`).
    static WHILE_BUSY: Cell<(Option<WhileBusy>, Option<Tick>)> = const { Cell::new((None, None)) };
}

/// Serves the calling thread's other connections (`net::busy::serve_idle`).
pub type WhileBusy = fn(&crate::server::Server, &crate::services::stats::ThreadStats);

/// How often a busy script's hook serves the other connections: each round reads every
/// idle connection of the thread once.
const SERVE_EVERY_MICROS: u64 = 1000;

/// Installs, for the calling (worker) thread, what a busy script's hook calls to serve the
/// thread's other connections, as Redis processes events while a script is busy.
pub fn set_while_busy(f: WhileBusy) {
    WHILE_BUSY.set((Some(f), None));
}

fn serve_while_busy(worker: &Worker<'_>) {
    let (f, last) = WHILE_BUSY.get();
    let Some(f) = f else {
        return;
    };
    let now = Tick::now();
    if last.is_some_and(|l| now.micros_since(l) < SERVE_EVERY_MICROS) {
        return;
    }
    WHILE_BUSY.set((Some(f), Some(now)));
    f(worker.server, worker.stats);
}

struct ScriptHost<'a> {
    worker: Worker<'a>,
    client: &'a mut Client,
    after: &'a mut After,
    nest: &'a mut Nest,
    started: Tick,
    threshold: Duration,
    /// The script has written (SCRIPT KILL answers UNKILLABLE then).
    wrote: bool,
    /// Set once the script is busy: its entry in the registry (kill, wrote, busy flags).
    running: Option<RunningFlags>,
    /// (name, argv, is EVAL) for the registry entry.
    about: (&'a str, &'a [Bytes], bool),
    /// The keys the script declared: a tracking client's script that reads records them.
    keys: &'a [Bytes],
    /// Times the script's reply makes its command count as failed (`reply_error`).
    failures: u64,
    /// The reply held an error counted here.
    counted_here: bool,
}

/// The flags a busy script shares with SCRIPT KILL and FUNCTION STATS.
struct RunningFlags {
    id: u64,
    wrote: Arc<AtomicBool>,
    kill: Arc<AtomicBool>,
}

impl ScriptHost<'_> {
    /// A read call of a tracking client's script records the keys the script declared,
    /// before it runs, as Redis does (the script's reads may depend on any of them).
    #[cold]
    fn remember_keys(&self, argv: &[Bytes]) {
        let server = self.worker.server;
        let reads = server
            .table
            .resolve(argv)
            .is_ok_and(|id| server.table.commands[id].has(flags::READONLY));
        let mode = self.client.info.tracking.flags();
        if reads && crate::services::tracking::records_reads(mode, self.client.caching) {
            server
                .tracking
                .remember(self.client.id, self.keys.iter().map(|k| &k[..]));
        }
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, argv: Vec<Bytes>, resp: u8, reply: &mut Vec<u8>) {
        self.client.proto = if resp == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        if self.worker.server.tracking.active() {
            self.remember_keys(&argv);
        }
        let origin = Origin::Nested(&mut *self.nest);
        let call = Call::new(&argv);
        match execute(
            &mut self.worker,
            self.client,
            call,
            origin,
            reply,
            self.after,
        ) {
            Outcome::Ran(cmd) => {
                if cmd.has(flags::WRITE) {
                    self.wrote = true;
                    // Written once, it must be let finish whatever memory says.
                    if let Some(rules) = &mut self.nest.script {
                        rules.deny_oom = false;
                        rules.wrote = true;
                    }
                    if let Some(r) = &self.running {
                        r.wrote.store(true, Ordering::Relaxed);
                    }
                }
            }
            Outcome::Queued | Outcome::Paused | Outcome::Deferred => {}
            Outcome::Refused(e) => {
                reply.clear();
                strata_resp::Reply::new(reply, Protocol::Resp2).error(&e.text());
            }
        }
    }

    fn acl_check_cmd(&mut self, argv: &[Bytes]) -> Option<bool> {
        let table = &self.worker.server.table;
        let id = table.lookup_call(argv)?;
        Some(
            self.client
                .user
                .as_ref()
                .is_none_or(|u| u.check(table, id, argv).is_ok()),
        )
    }

    /// As Redis: an error counted already (a failed call's, passed on) makes the script's
    /// command count as failed once per such error; errors counted here make it count as
    /// failed once in all.
    fn reply_error(&mut self, text: &[u8], counted: bool) {
        if counted {
            self.failures += 1;
            return;
        }
        if !std::mem::replace(&mut self.counted_here, true) {
            self.failures += 1;
        }
        self.worker
            .server
            .stats
            .count_error(&String::from_utf8_lossy(text));
    }

    fn log(&mut self, level: u8, msg: &str) {
        match level {
            0 => tracing::debug!("{msg}"),
            1 => tracing::debug!("{msg}"),
            2 => tracing::info!("{msg}"),
            _ => tracing::warn!("{msg}"),
        }
    }

    fn tick(&mut self) -> bool {
        let ran_us = || Tick::now().micros_since(self.started);
        if self.running.is_some() {
            // Busy: the worker's other clients are answered from here (-BUSY, SCRIPT KILL...).
            serve_while_busy(&self.worker);
        }
        if self.running.is_none() && u128::from(ran_us()) >= self.threshold.as_micros() {
            // Only a busy script is registered: SCRIPT KILL and FUNCTION STATS can only
            // reach one then, and a quick script costs no global lock.
            tracing::warn!(
                "Slow script detected: still in execution after {} milliseconds.",
                ran_us() / 1000
            );
            let scripts = &self.worker.server.scripts;
            let (name, argv, eval) = self.about;
            let r = Running {
                id: scripts.next_id.fetch_add(1, Ordering::Relaxed),
                name: name.to_string(),
                argv: argv.to_vec(),
                eval,
                started: self.started,
                wrote: Arc::new(AtomicBool::new(self.wrote)),
                kill: Arc::default(),
                busy: Arc::new(AtomicBool::new(true)),
            };
            self.running = Some(RunningFlags {
                id: r.id,
                wrote: r.wrote.clone(),
                kill: r.kill.clone(),
            });
            scripts.running.lock().push(r);
            scripts.busy.store(true, Ordering::Relaxed);
        }
        self.running
            .as_ref()
            .is_some_and(|r| r.kill.load(Ordering::Relaxed))
    }
}
