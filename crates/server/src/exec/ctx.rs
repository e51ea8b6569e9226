//! Stage 4's view for handlers: a command's arguments, its reply, the client's selected
//! database and key access, keyspace events, blocking, and its effect. Services are
//! reached through one accessor each; the few commands that need server-wide state (INFO,
//! CONFIG, CLIENT, DEBUG, SHUTDOWN...) ask for it explicitly with [`Ctx::server`].

use crate::config::Config;
use crate::exec::client::Client;
use crate::exec::command::{parse_i64, CmdError};
use crate::exec::effects::{Audience, Effect};
use crate::exec::table::Table;
use crate::exec::{After, Nest, Worker};
use crate::server::Server;
use crate::services::blocking::BlockRequest;
use crate::services::pubsub::{Hub, Publisher};
use crate::services::scripting::Scripts;
use crate::services::stats::ThreadStats;
use crate::services::tracking::Current;
use crate::services::watch::Watches;
use crate::services::{notify, slowlog::SlowLog};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use strata_engine::{Db, Keyspace, Locked};
use strata_resp::Reply;

/// See [`Ctx::parts`].
pub(crate) struct Parts<'c> {
    pub client: &'c mut Client,
    pub out: &'c mut Vec<u8>,
    pub after: &'c mut After,
    pub nest: Option<&'c mut Nest>,
}

/// Everything a handler may use.
pub struct Ctx<'a> {
    server: &'a Server,
    stats: &'a ThreadStats,
    pub client: &'a mut Client,
    /// The whole argv; argv[0] is the command name (argv[1] the subcommand for containers).
    pub argv: &'a [Bytes],
    pub out: Reply<'a>,
    /// The time this command runs at, in Unix milliseconds (read once per command).
    pub now_ms: u64,
    /// True while the journal replays or a replica applies its primary's stream (`now_ms`
    /// then stands still so nothing expires).
    replaying: bool,
    /// What this command leaves for the effect sinks (its argv unless it rewrites it).
    effect: Effect,
    after: &'a mut After,
    /// The EXEC or script this command runs inside, if any.
    nest: Option<&'a mut Nest>,
    /// Arguments MONITOR must not show (bit i: argv[i]).
    redacted: u64,
    /// Times the command counts as failed besides an `Err` it returns: a script's reply
    /// that holds errors (see `exec::script`).
    failures: u64,
}

impl<'a> Ctx<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        w: &Worker<'a>,
        client: &'a mut Client,
        argv: &'a [Bytes],
        out: Reply<'a>,
        now_ms: u64,
        replaying: bool,
        after: &'a mut After,
        nest: Option<&'a mut Nest>,
    ) -> Ctx<'a> {
        Ctx {
            server: w.server,
            stats: w.stats,
            client,
            argv,
            out,
            now_ms,
            replaying,
            effect: Effect::Argv,
            after,
            nest,
            redacted: 0,
            failures: 0,
        }
    }

    /// The effect the handler left (stage 5 records it), the arguments it redacted and
    /// the failures it counted (`count_failures`).
    pub(crate) fn into_effect(self) -> (Effect, u64, u64) {
        (self.effect, self.redacted, self.failures)
    }

    /// Counts the command as failed `n` more times in INFO commandstats although it
    /// answers `Ok` (a script whose reply is an error).
    pub(crate) fn count_failures(&mut self, n: u64) {
        self.failures += n;
    }

    /// Shows this command to MONITOR now: EVAL and FCALL (flagged skip_monitor) appear
    /// before the calls their scripts make, as in Redis.
    pub fn show_to_monitors(&self) {
        if self.server.monitors.active() && !self.client.rerun {
            crate::exec::show_to_monitors(
                self.server,
                self.client,
                false,
                self.argv,
                self.redacted,
            );
        }
    }

    /// Hides argument `i` from MONITOR (a password): it shows as `(redacted)`.
    pub fn redact(&mut self, i: usize) {
        if i < 64 {
            self.redacted |= 1 << i;
        }
    }

    /// The time to store in values that keep it (a stream's delivery and seen times):
    /// `now_ms`, but the wall clock while the journal replays, where `now_ms` stands
    /// still, so that a replayed XCLAIM's TIME is never in the future.
    pub fn clock_ms(&self) -> u64 {
        if self.replaying {
            self.server.clock.unix_ms(crate::tick::Tick::now())
        } else {
            self.now_ms
        }
    }

    /// Server-wide state, for the administration commands that need it.
    pub fn server(&self) -> &'a Server {
        self.server
    }

    /// A worker to run further commands with (EXEC's queued commands, a script's calls).
    pub fn worker(&self) -> Worker<'a> {
        Worker {
            server: self.server,
            stats: self.stats,
            clock: crate::tick::Tick::now(),
        }
    }

    /// The parts EXEC and EVAL run further commands with: the client, the reply buffer,
    /// what the commands leave for the connection, and the EXEC this runs inside, if any.
    pub(crate) fn parts(&mut self) -> Parts<'_> {
        Parts {
            client: &mut *self.client,
            out: &mut *self.out.buf,
            after: &mut *self.after,
            nest: self.nest.as_deref_mut(),
        }
    }

    pub fn keyspace(&self) -> &'a Keyspace {
        &self.server.keyspace
    }

    pub fn config(&self) -> &'a Config {
        &self.server.config
    }

    /// The command table (COMMAND, the scripts' ACL checks...).
    pub fn commands(&self) -> &'a Table {
        &self.server.table
    }

    pub fn scripts(&self) -> &'a Scripts {
        &self.server.scripts
    }

    pub fn pubsub(&self) -> &'a Hub {
        &self.server.pubsub
    }

    pub fn watches(&self) -> &'a Watches {
        &self.server.watches
    }

    pub fn slowlog(&self) -> &'a SlowLog {
        &self.server.slowlog
    }

    /// The client's selected database.
    pub fn db(&self) -> &'a Db {
        self.server.keyspace.db(self.client.db)
    }

    /// Locks the shards of `keys` in the selected database, honouring CLIENT NO-TOUCH.
    pub fn lock<K: AsRef<[u8]>>(&self, keys: &[K]) -> Locked<'a> {
        self.db()
            .lock_at(self.now_ms, keys)
            .no_touch(self.client.no_touch)
    }

    /// Locks one key's shard in the selected database.
    pub fn lock1(&self, key: &[u8]) -> Locked<'a> {
        self.db()
            .lock1_at(self.now_ms, key)
            .no_touch(self.client.no_touch)
    }

    /// Publishes a keyspace event for `key` in the selected database, if events of
    /// `class` (notify::STRING, GENERIC...) are enabled: one relaxed load when off.
    #[inline]
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        self.notify_db(class, event, key, self.client.db);
    }

    /// True when `notify` for `class` does anything: events of that class are published,
    /// some client WATCHes keys or tracks them, or XREADGROUP clients wait for their keys
    /// to change (callers use it to skip gathering what `notify` needs).
    #[inline]
    pub fn notifying(&self, class: u32) -> bool {
        self.server.notify_flags.load(Ordering::Relaxed) & class != 0
            || self.server.watches.active()
            || self.server.blocking.change_watchers() != 0
            || self.server.tracking.active()
    }

    /// A change no keyspace event announces (Redis's signalModifiedKey alone: PFCOUNT
    /// storing the cardinality it computed): WATCH and client-side caching learn of it.
    pub fn modified(&mut self, key: &[u8]) {
        self.server.watches.touch(self.client.db, key);
        if self.server.tracking.active() {
            self.invalidate(key);
        }
    }

    /// `notify` for a key of another database (MOVE's move_to, COPY ... DB). Every changed
    /// key passes here: WATCH and client-side caching learn of it here too.
    #[inline]
    pub fn notify_db(&mut self, class: u32, event: &str, key: &[u8], db: usize) {
        let flags = self.server.notify_flags.load(Ordering::Relaxed);
        if flags & class != 0 {
            self.notify_slow(flags, event, key, db);
        }
        self.server.watches.touch(db, key);
        // Every change of a key emits an event, so this is where a deletion or
        // replacement of a stream that XREADGROUP clients wait on is noticed (the stream
        // commands signal what concerns them themselves).
        if class != notify::STREAM && self.server.blocking.change_watchers() != 0 {
            self.after
                .ready_keys
                .push((db, Bytes::copy_from_slice(key)));
        }
        if self.server.tracking.active() {
            self.invalidate(key);
        }
    }

    /// Tells clients that may cache `key` that it changed. A message for this client itself
    /// goes out after its reply.
    #[cold]
    #[inline(never)]
    fn invalidate(&mut self, key: &[u8]) {
        let me = Current {
            id: self.client.id,
            deferred: &mut self.after.tracking,
        };
        self.server.tracking.touched(key, Some(me));
    }

    /// FLUSHDB, FLUSHALL: every tracking client learns that every key changed; returns the
    /// tracking table's old contents for the caller to free with the flushed data.
    pub fn invalidate_all(&mut self) -> impl Send + 'static {
        let me = Current {
            id: self.client.id,
            deferred: &mut self.after.tracking,
        };
        self.server.tracking.flushed(Some(me))
    }

    #[cold]
    #[inline(never)]
    fn notify_slow(&mut self, flags: u32, event: &str, key: &[u8], db: usize) {
        let hub = &self.server.pubsub;
        let mut me = self.publisher();
        notify::emit(hub, flags, event, key, db, Some(&mut me));
    }

    /// This client as the sender of messages: what it publishes to itself goes before
    /// its reply.
    pub fn publisher(&mut self) -> Publisher<'_> {
        let server = self.server;
        Publisher {
            id: self.client.id,
            self_push: &mut self.after.self_push,
            proto: self.out.proto,
            clients_limit: crate::net::clients::limited(server).then_some(server),
        }
    }

    /// Tells blocked clients waiting on `key` (selected database) that it may now serve
    /// them (LPUSH, ZADD, LMOVE's destination...). Call it after the write, under the
    /// lock. One relaxed load when no client is blocked.
    #[inline]
    pub fn signal_key_ready(&mut self, key: &[u8]) {
        self.signal_key_ready_db(key, self.client.db);
    }

    /// `signal_key_ready` for a key of another database (MOVE, COPY ... DB).
    #[inline]
    pub fn signal_key_ready_db(&mut self, key: &[u8], db: usize) {
        if self.server.blocking.count() != 0 {
            self.after
                .ready_keys
                .push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// Signals every key clients wait on in database `db` (SWAPDB changed its contents).
    pub fn signal_db_ready(&mut self, db: usize) {
        if self.server.blocking.count() != 0 {
            for key in self.server.blocking.keys_in_db(db) {
                self.after.ready_keys.push((db, key));
            }
        }
    }

    /// Asks to block on `keys` until `deadline_ms` (Unix ms, 0 = forever; see
    /// `blocking::parse_timeout`). The handler then returns Ok(()) without a reply; the
    /// command is re-run when a key is signalled, and `on_timeout` writes the reply if the
    /// deadline passes first.
    pub fn block_on(&mut self, keys: Vec<Bytes>, deadline_ms: u64, on_timeout: fn(&mut Reply<'_>)) {
        self.block(BlockRequest::new(keys, deadline_ms, on_timeout));
    }

    /// `block_on` with the request's other options (XREAD, XREADGROUP).
    pub fn block(&mut self, req: BlockRequest) {
        if !self.may_block() {
            (req.on_timeout)(&mut self.out);
            return;
        }
        self.after.block = Some(Box::new(req));
    }

    /// Leaves this command's reply to `reply`, which the connection awaits (WAIT); the
    /// handler writes none.
    pub fn reply_later(&mut self, reply: crate::exec::LaterReply) {
        self.after.later = Some(reply);
    }

    /// SYNC, PSYNC: the connection becomes a replica's once this command returns.
    pub fn hand_off(&mut self, h: crate::services::replication::Handoff) {
        self.after.handoff = Some(Box::new(h));
    }

    /// False inside EXEC or a script, where a blocking command that cannot be served at
    /// once answers as if it had timed out.
    pub fn may_block(&self) -> bool {
        self.nest.is_none()
    }

    /// The client's user may run this command while reading any key (SORT's BY and GET
    /// read keys the command does not name).
    pub fn may_read_all_keys(&self) -> bool {
        let Some(user) = &self.client.user else {
            return true;
        };
        let table = &self.server.table;
        match table.resolve(self.argv) {
            Ok(id) => user.may_read_all_keys(table, id, self.argv),
            Err(_) => false,
        }
    }

    /// Runs inside EXEC or a script.
    pub fn nested(&self) -> bool {
        self.nest.is_some()
    }

    /// True inside a script's `redis.call` (XREAD refuses BLOCK there).
    pub fn in_script(&self) -> bool {
        self.nest.as_ref().is_some_and(|n| n.script.is_some())
    }

    /// Hands blocking `work` (network I/O) to the worker's blocking pool: the connection
    /// waits for it without holding up the worker thread's other clients, then runs this
    /// command again, as this client, with `work`'s result in `client.resume`. The handler
    /// then returns Ok(()) without a reply (and records no effect). Only where
    /// `may_block` holds; elsewhere do the work in place.
    pub fn defer(&mut self, work: crate::exec::Deferred) {
        self.after.defer = Some(work);
        self.no_effect();
    }

    /// True when writes' effects go somewhere (a journal, a replication backlog). A
    /// handler may skip building a rewritten record when they do not: a sink added later
    /// takes its cut only after writes that began without it have ended.
    #[inline]
    pub fn effects_wanted(&self) -> bool {
        self.server.sinks.any()
    }

    /// Logs `argv` instead of this command's argv.
    pub fn rewrite1(&mut self, argv: Vec<Bytes>) {
        self.effect = Effect::Commands(vec![argv]);
    }

    /// Logs these commands instead of this command's argv.
    pub fn rewrite(&mut self, cmds: Vec<Vec<Bytes>>) {
        self.effect = Effect::Commands(cmds);
    }

    /// Sends this command to the replicas alone (not the journal), as Redis forces
    /// PUBLISH's propagation to its replicas though it writes nothing.
    pub fn replicate_only(&mut self) {
        if self.server.sinks.any() {
            self.effect = Effect::Targeted(vec![(Audience::Replicas, self.argv.to_vec())]);
        }
    }

    /// Logs these commands, each for the sinks of its audience.
    pub fn rewrite_targeted(&mut self, cmds: Vec<(Audience, Vec<Bytes>)>) {
        self.effect = Effect::Targeted(cmds);
    }

    /// Logs nothing for this command (it changed nothing).
    pub fn no_effect(&mut self) {
        self.effect = Effect::Skip;
    }

    /// Argument `i` (0 is the command name).
    pub fn arg(&self, i: usize) -> &'a [u8] {
        &self.argv[i]
    }

    /// A copy of argument `i`, for what outlives the command (a script's body, a channel,
    /// a client's name): the argument itself is a slice of the connection's input buffer,
    /// and keeping it would keep that whole buffer (megabytes, after a large request).
    pub fn kept_arg(&self, i: usize) -> Bytes {
        Bytes::copy_from_slice(&self.argv[i])
    }

    /// Argument `i` as an i64, or Redis's "value is not an integer" error.
    pub fn int_arg(&self, i: usize) -> Result<i64, CmdError> {
        parse_i64(&self.argv[i]).ok_or(CmdError::NOT_INTEGER)
    }

    /// Argument `i` lower-cased as ASCII, for matching options (EX, NX, ...).
    pub fn lower(&self, i: usize) -> Vec<u8> {
        self.argv[i].to_ascii_lowercase()
    }
}
