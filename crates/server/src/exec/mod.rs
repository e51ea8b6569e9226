//! One command's life, in one place. Every command enters through [`execute`]: a client's
//! request, a command EXEC runs, a script's `redis.call`, a blocked client's command served
//! later, and a journal record replayed at start. It goes through these stages:
//!
//! 1. resolve: the name (and subcommand) to a declaration in the command table; arity.
//! 2. admit (`admit.rs`): may this client run it now? Auth, ACL, the subscribed context,
//!    a busy script, MULTI queueing, journal errors, script rules.
//! 3. plan and lock (`plan.rs`): a write holds the shards of its keys until its effect is
//!    recorded, so every consumer of effects sees writes to a key in the order memory did.
//! 4. run: the handler, with a narrow context (`ctx.rs`).
//! 5. record (`sink.rs`): the write's effect goes to the effect sinks (the journal), or
//!    into the group of the EXEC or script it runs inside.
//! 6. reply: errors, statistics, the slow log, CLIENT REPLY.

pub mod admit;
pub mod blocked;
pub mod client;
pub mod command;
pub mod ctx;
pub mod docs;
pub mod effects;
pub mod keyspec;
pub mod plan;
pub mod replay;
pub mod script;
pub mod sink;
pub mod table;
pub(crate) mod tracking;

use crate::exec::client::{Client, ReplyMode};
use crate::exec::command::{flags, CmdError, Command};
use crate::exec::ctx::Ctx;
use crate::exec::effects::{Effect, Group};
use crate::server::Server;
use crate::services::blocking::BlockRequest;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::Bytes;
use strata_resp::Reply;

/// A worker thread's means to run commands: the server, the thread's statistics, and the
/// clock of the batch (advanced as each command ends, so a command costs one clock read).
pub struct Worker<'a> {
    pub server: &'a Server,
    pub stats: &'a ThreadStats,
    pub clock: Tick,
}

/// Where a command comes from. It decides which admission rules apply, whether the caller
/// holds the shards already, and where the effect goes.
pub enum Origin<'n> {
    /// A client's request (or a blocked client's, re-run when a key it waits on is ready).
    Client,
    /// A command of the primary's stream, applied by this replica: no client rule applies
    /// (read-only replica, authentication, a busy script), nothing expires for it (the
    /// primary sends its DELs), and its effect is recorded as a client's is (the replica
    /// journals what it applies; its own replicas get the primary's stream itself).
    Master,
    /// A journal record replayed at start-up: nothing expires, nothing is recorded again.
    Replay,
    /// A command of an EXEC or a script: the caller holds the shards, and the effects
    /// gather in its group to become one block.
    Nested(&'n mut Nest),
}

/// The state of a running EXEC or script that its commands share.
pub struct Nest {
    /// The effects of the commands run so far.
    pub group: Group,
    /// The snapshot epoch the EXEC or script saw when it locked its shards.
    pub epoch: u64,
    /// Set for a script's `redis.call`: the rules scripts run under.
    pub script: Option<ScriptRules>,
}

/// What a script may call.
#[derive(Clone, Copy)]
pub struct ScriptRules {
    /// A read-only script (EVAL_RO, FCALL_RO, `no-writes`): no write commands.
    pub read_only: bool,
    /// Memory was over the limit when the script started and it may not change that:
    /// commands flagged DENYOOM are refused until its first write (Redis's
    /// scriptVerifyOOM; a script flagged `allow-oom` is never refused).
    pub deny_oom: bool,
    /// The script has written: from then on no refusal for the server's state (memory,
    /// the disk) may stop it halfway (Redis's SCRIPT_WRITE_DIRTY).
    pub wrote: bool,
    /// When the script started (Unix ms): its commands all run at that time, so no key
    /// expires while it runs (as Redis blocks the time for a script).
    pub started_ms: u64,
}

/// What a command leaves for its connection to do after it: its own push messages, to be
/// placed before its reply; keys it made ready for blocked clients; its request to block;
/// work to run off the worker thread before the command runs again (`Ctx::defer`).
/// Invalidations for the client itself (`tracking`) are placed after the reply by
/// `execute`, once the outermost command ends.
#[derive(Default)]
pub struct After {
    pub self_push: Vec<u8>,
    pub ready_keys: Vec<(usize, Bytes)>,
    pub block: Option<Box<BlockRequest>>,
    /// The command's reply comes later, from this future (WAIT): the connection writes
    /// what came before, awaits it, then goes on with the commands after.
    pub later: Option<LaterReply>,
    /// The connection becomes a replica's (SYNC, PSYNC): it leaves the request path.
    pub handoff: Option<Box<crate::services::replication::Handoff>>,
    pub tracking: Vec<u8>,
    pub defer: Option<Deferred>,
}

/// Blocking work a command hands to the worker's blocking pool (MIGRATE's network round
/// trips). Its result is given back to the command, run again as the same client, in
/// `Client::resume`.
pub type Deferred = Box<dyn FnOnce() -> Box<dyn std::any::Any + Send> + Send>;

/// A reply produced later (see [`After::later`]).
pub type LaterReply = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>>>>;

impl After {
    /// True when there is nothing to do (checked after every command).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.self_push.is_empty()
            && self.ready_keys.is_empty()
            && self.block.is_none()
            && self.defer.is_none()
            && self.later.is_none()
            && self.handoff.is_none()
    }
}

/// What became of a command.
pub enum Outcome {
    /// It ran (its reply, an error included, is written).
    Ran(&'static Command),
    /// Queued inside MULTI.
    Queued,
    /// Held back by CLIENT PAUSE: nothing is written; the connection waits for the pause
    /// to end and submits it again.
    Paused,
    /// Not run yet: its keys are being read from the tier (`After::defer`); it runs when
    /// they are in.
    Deferred,
    /// Not run. The error is written already, except for a script's call, whose host
    /// turns it into a Lua error.
    Refused(CmdError),
}

/// One request: its arguments and, when it arrived as canonical RESP, the frame it was
/// parsed from (then it is its own journal record).
pub struct Call<'a> {
    pub argv: &'a [Bytes],
    pub frame: Option<Bytes>,
    /// What of its first argument started loading while the request before it ran.
    pub ahead: Ahead,
}

/// What started loading for a request's first argument while the request before it ran
/// (`tracking::prefetch_next`, in a pipeline).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ahead {
    #[default]
    Nothing,
    /// Its keyspace slots.
    Keyspace,
    /// Its keyspace slots and, for a client that records its reads, its tracking table
    /// slots, for the key of this tracking table hash.
    Tracked(u64),
}

impl<'a> Call<'a> {
    pub fn new(argv: &'a [Bytes]) -> Call<'a> {
        Call::framed(argv, None)
    }

    pub fn framed(argv: &'a [Bytes], frame: Option<Bytes>) -> Call<'a> {
        Call {
            argv,
            frame,
            ahead: Ahead::Nothing,
        }
    }
}

/// Runs one command and writes its reply (or error) into `out`.
pub fn execute(
    w: &mut Worker<'_>,
    client: &mut Client,
    call: Call<'_>,
    mut origin: Origin<'_>,
    out: &mut Vec<u8>,
    after: &mut After,
) -> Outcome {
    let top = matches!(origin, Origin::Client);
    if top && w.server.tracking.active() {
        // Before a client's command, as Redis's processCommand: keys past the tracking
        // table's limit go, their invalidations for this client before its reply.
        tracking::before(w.server, client, out);
    }
    let mode_before = client.reply;
    let start_len = out.len();
    let fed = crate::services::replication::backlog::fed_here();
    let resolved = w.server.table.resolve(call.argv);
    let id = resolved.as_ref().ok().copied();
    let outcome = match resolved {
        Ok(id) => run(w, client, id, call, &mut origin, out, after),
        Err(e) => refuse_unresolved(w, client, call.argv, &origin, out, e),
    };
    // A paused command has not run: it comes back as if it had just arrived.
    if top && !matches!(outcome, Outcome::Paused) {
        // The write (EXEC, script...) reached the replication stream: WAIT covers it.
        let now = crate::services::replication::backlog::fed_here();
        if now != fed {
            client.woff = now;
        }
        // What the (un)subscribe commands answer are push messages, which Redis sends
        // whatever CLIENT REPLY says.
        if suppress_reply(client, mode_before)
            && !matches!(outcome, Outcome::Ran(c) if c.has(flags::PUBSUB) && c.has(flags::SUBSCRIBED))
        {
            out.truncate(start_len);
        }
        if w.server.tracking.active() || !after.tracking.is_empty() {
            tracking::after(w.server, client, id, out, after);
        }
    }
    outcome
}

/// CLIENT REPLY OFF/SKIP: whether to drop this command's reply. SKIP applies to the one
/// command after it.
fn suppress_reply(client: &mut Client, mode_before: ReplyMode) -> bool {
    match mode_before {
        ReplyMode::On => false,
        // The command after SKIP is not answered, unless it is CLIENT REPLY ON (which
        // clears SKIP first, as in Redis).
        ReplyMode::Skip => match client.reply {
            ReplyMode::Skip => {
                client.reply = ReplyMode::On;
                true
            }
            ReplyMode::On => false,
            ReplyMode::Off => true,
        },
        ReplyMode::Off => client.reply != ReplyMode::On,
    }
}

/// An unknown command or subcommand, or a wrong argument count (which counts as a
/// rejected call of the command, as in Redis).
#[cold]
fn refuse_unresolved(
    w: &Worker<'_>,
    client: &mut Client,
    argv: &[Bytes],
    origin: &Origin<'_>,
    out: &mut Vec<u8>,
    e: CmdError,
) -> Outcome {
    let server = w.server;
    if admit::is_arity_error(&e) {
        if let Some(id) = server.table.lookup_call(argv) {
            w.stats.rejected(server.table.stat_id(id));
        }
    }
    if let Origin::Nested(Nest {
        script: Some(_), ..
    }) = origin
    {
        let e = admit::script_resolve_error(&e);
        server.stats.count_error(&e.text());
        return Outcome::Refused(e);
    }
    let e = admit::abort_transaction(server, client, &argv[0], e);
    write_error(server, client, out, &e);
    Outcome::Refused(e)
}

/// Runs resolved command `id` through admission, locking, the handler and recording.
fn run(
    w: &mut Worker<'_>,
    client: &mut Client,
    id: usize,
    call: Call<'_>,
    origin: &mut Origin<'_>,
    out: &mut Vec<u8>,
    after: &mut After,
) -> Outcome {
    let server = w.server;
    let cmd = server.table.commands[id];
    // What its statistics count it as (DEBUG's subcommands as DEBUG).
    let sid = server.table.stat_id(id);
    // CLIENT LIST's cmd=: the client's own last command, queued or refused ones included
    // (not those EXEC or a script runs for it).
    if matches!(origin, Origin::Client) {
        client
            .info
            .last_cmd
            .store(sid, std::sync::atomic::Ordering::Relaxed);
    }
    let admitted = admit::admit(server, client, id, call.argv, origin);
    if matches!(origin, Origin::Client) {
        tracking::after_admission(server, client, out);
    }
    match admitted {
        admit::Admit::Run => {}
        admit::Admit::Queue => {
            crate::commands::transactions::queue(client, id, call.argv, out);
            return Outcome::Queued;
        }
        admit::Admit::Pause => return Outcome::Paused,
        admit::Admit::Refuse(e) => return refuse(w, client, id, origin, out, e),
    }
    // Keys in the on-disk tier are read on the blocking pool first, so the worker serves
    // its other clients meanwhile; the command then runs again and finds them cached.
    if matches!(origin, Origin::Client) && client.resume.is_none() {
        if let Some(work) = crate::services::tiering::prefetch(server, client.db, cmd, call.argv) {
            after.defer = Some(work);
            return Outcome::Deferred;
        }
    }
    let started = w.clock;
    let db = client.db;
    let write = cmd.has(flags::WRITE);
    let replaying = matches!(origin, Origin::Replay);
    // A replayed or replicated command runs with the clock stopped: nothing expires.
    let frozen = replaying || matches!(origin, Origin::Master);
    let by_script = matches!(
        origin,
        Origin::Nested(Nest {
            script: Some(_),
            ..
        })
    );
    let hold = match plan::hold(w, db, id, call.argv, origin) {
        Ok(h) => h,
        Err(e) => return refuse(w, client, id, origin, out, e),
    };
    // A tracking client's read records its keys before it runs (see services::tracking).
    if server.tracking.active() && !by_script && cmd.has(flags::READONLY) {
        tracking::remember(server, client, id, &call);
    }
    let proto = client.proto;
    let (result, (effect, redacted, failures)) = {
        let nest = match origin {
            Origin::Nested(n) => Some(&mut **n),
            _ => None,
        };
        // Nothing expires while the journal replays: its records already say which keys
        // expired (as DELs), and when.
        let now_ms = match nest.as_ref().and_then(|n| n.script) {
            _ if frozen => 1,
            Some(rules) => rules.started_ms,
            None => server.clock.unix_ms(started),
        };
        let out = Reply::new(out, proto);
        let mut ctx = Ctx::new(w, client, call.argv, out, now_ms, frozen, after, nest);
        let r = (cmd.handler)(&mut ctx);
        (r, ctx.into_effect())
    };
    // A command that writes nothing may still record an effect for some sinks (PUBLISH).
    if (write || effect.is_targeted()) && result.is_ok() && after.block.is_none() {
        if write && !matches!(effect, Effect::Skip) && !replaying {
            w.stats.changed();
        }
        record(server, client, db, &call, effect, origin, &hold);
    }
    drop(hold);
    w.clock = Tick::now();
    let took = w.clock.micros_since(started);
    if client
        .info
        .blocked
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        w.stats.ran_again(sid, took);
    } else {
        let histogram = server
            .stats
            .latency_tracking
            .load(std::sync::atomic::Ordering::Relaxed);
        w.stats.called(sid, took, histogram);
    }
    if !replaying {
        let who = (!by_script).then_some(&*client.info);
        server
            .slowlog
            .observe(took, &server.table.fullnames[id], call.argv, redacted, who);
        let event = if cmd.has(flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        server.latency.observe(event, took / 1000);
        if server.monitors.active() && !client.rerun && !cmd.has(flags::SKIP_MONITOR | flags::ADMIN)
        {
            show_to_monitors(server, client, by_script, call.argv, redacted);
        }
    }
    if failures > 0 {
        w.stats.failed_by(sid, failures);
    }
    if let Err(e) = result {
        w.stats.failed(sid);
        write_error(server, client, out, &e);
    }
    Outcome::Ran(cmd)
}

/// A command refused before it ran. A script's refused call raises a Lua error instead
/// (its host writes it); anything else is answered with the error, and inside MULTI it
/// dooms the transaction. Either way the refusal counts in the error statistics, as
/// Redis counts a script's refused call when it happens.
fn refuse(
    w: &Worker<'_>,
    client: &mut Client,
    id: usize,
    origin: &Origin<'_>,
    out: &mut Vec<u8>,
    e: CmdError,
) -> Outcome {
    w.stats.rejected(w.server.table.stat_id(id));
    if let Origin::Nested(Nest {
        script: Some(_), ..
    }) = origin
    {
        w.server.stats.count_error(&e.text());
        return Outcome::Refused(e);
    }
    let name = w.server.table.fullnames[id].as_bytes();
    let e = admit::abort_transaction(w.server, client, name, e);
    write_error(w.server, client, out, &e);
    Outcome::Refused(e)
}

/// Stage 5: a write's effect goes into the group of the EXEC or script it runs in, or, for
/// a write that holds its own shards, to the sinks, while it still holds them.
fn record(
    server: &Server,
    client: &mut Client,
    db: usize,
    call: &Call<'_>,
    effect: Effect,
    origin: &mut Origin<'_>,
    hold: &plan::Hold<'_>,
) {
    if server.repl.is_replica() && !client.is_master() && !matches!(origin, Origin::Replay) {
        crate::services::replication::own_keys::note(server, db, call.argv);
    }
    match origin {
        // With no sink (fixed at start) a group's records would go nowhere.
        Origin::Nested(n) if server.sinks.any() => n.group.add(db, call.argv, effect),
        Origin::Nested(_) | Origin::Replay => {}
        Origin::Client | Origin::Master => {
            // A command that writes nothing holds no shards, and no epoch: what it records
            // concerns no data a snapshot holds, so the current epoch serves.
            let epoch = match hold.epoch() {
                Some(epoch) => epoch,
                None if effect.is_targeted() && server.sinks.any() => server
                    .persist
                    .epoch
                    .load(std::sync::atomic::Ordering::SeqCst),
                None => return,
            };
            let lsn =
                server
                    .sinks
                    .record_command(db, epoch, call.argv, call.frame.as_deref(), effect);
            if lsn != 0 {
                client.last_lsn = lsn;
            }
        }
    }
}

/// Sends a command's MONITOR line (run in the client's current database, as Redis).
#[cold]
pub(crate) fn show_to_monitors(
    server: &Server,
    client: &Client,
    by_script: bool,
    argv: &[Bytes],
    redacted: u64,
) {
    use crate::services::monitor::Source;
    let source = if by_script {
        Source::Script
    } else {
        Source::Client(&client.info)
    };
    server.monitors.feed(client.db, source, argv, redacted);
}

/// Writes an error reply and counts it (INFO errorstats).
pub(crate) fn write_error(server: &Server, client: &Client, out: &mut Vec<u8>, e: &CmdError) {
    let text = e.text();
    server.stats.count_error(&text);
    Reply::new(out, client.proto).error(&text);
}
