//! The command table built from every family's declarations, and dispatch: lookup, arity,
//! authentication, execution, CLIENT REPLY suppression and per-command statistics.

use crate::commands::transactions;
use crate::exec::client::{Client, ReplyMode};
use crate::exec::command::{flags, CmdError, Command, Ctx};
use crate::exec::effects::{Effect, LockPlan};
use crate::server::Server;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::Bytes;
use std::collections::HashMap;
use strata_resp::Reply;

pub struct Table {
    /// Every command and subcommand; a command's id is its index here.
    pub commands: Vec<&'static Command>,
    /// "get", "config|get": as Redis names them in errors and INFO commandstats.
    pub fullnames: Vec<String>,
    /// Index of every command by its lower-case fullname ("get", "config|get").
    by_name: HashMap<Box<[u8]>, usize, foldhash::fast::FixedState>,
    /// The container (CONFIG, CLIENT...) of each subcommand, by id.
    parent: Vec<Option<usize>>,
    /// Distinguishes tables in `find`'s per-thread cache (tests build several).
    serial: u64,
}

impl Table {
    pub fn new(families: &[&'static [Command]]) -> Table {
        let mut t = Table {
            commands: Vec::new(),
            fullnames: Vec::new(),
            by_name: HashMap::default(),
            parent: Vec::new(),
            serial: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        };
        for family in families {
            for cmd in family.iter() {
                let id = t.add(cmd, cmd.name.to_string(), None);
                for sub in cmd.subcommands {
                    t.add(sub, format!("{}|{}", cmd.name, sub.name), Some(id));
                }
            }
        }
        t
    }

    fn add(&mut self, cmd: &'static Command, fullname: String, parent: Option<usize>) -> usize {
        let id = self.commands.len();
        let key: Box<[u8]> = fullname.as_bytes().into();
        debug_assert!(
            !self.by_name.contains_key(&key),
            "{fullname} declared twice"
        );
        self.commands.push(cmd);
        self.by_name.insert(key, id);
        self.fullnames.push(fullname);
        self.parent.push(parent);
        id
    }

    pub fn lookup(&self, fullname: &str) -> Option<usize> {
        self.by_name.get(fullname.as_bytes()).copied()
    }

    /// Looks a name up case-insensitively without allocating (this runs for every command).
    /// The last few names this thread resolved, spelled as the client spelled them, are
    /// checked first: a connection or a script sends the same handful over and over, and
    /// comparing bytes costs less than lowercasing and hashing them.
    fn find(&self, name: &[u8]) -> Option<usize> {
        let table = self.serial;
        let hit = RECENT.with_borrow(|r| {
            r.iter()
                .find(|e| e.table == table && e.name[..usize::from(e.len)] == *name)
                .map(|e| e.id)
        });
        if hit.is_some() {
            return hit;
        }
        let mut buf = [0u8; 64];
        let lower = buf.get_mut(..name.len())?;
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        let id = self.by_name.get(&*lower).copied()?;
        if name.len() <= RECENT_NAME {
            RECENT.with_borrow_mut(|r| {
                let mut e = Recent {
                    table,
                    name: [0; RECENT_NAME],
                    len: name.len() as u8,
                    id,
                };
                e.name[..name.len()].copy_from_slice(name);
                if r.len() == RECENT_SLOTS {
                    r.pop();
                }
                r.insert(0, e);
            });
        }
        Some(id)
    }

    /// Top-level commands, in declaration order.
    pub fn top_level(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.commands.len()).filter(|&i| self.parent[i].is_none())
    }

    /// Resolves argv to a command id, or the error Redis gives for an unknown command,
    /// an unknown subcommand or a wrong argument count.
    pub fn resolve(&self, argv: &[Bytes]) -> Result<usize, CmdError> {
        let Some(id) = self.find(&argv[0]) else {
            return Err(unknown_command(argv));
        };
        let cmd = self.commands[id];
        if cmd.subcommands.is_empty() {
            return check_arity(cmd, argv, &self.fullnames[id]).map(|_| id);
        }
        if argv.len() < 2 {
            // A bare container runs its own handler where its arity allows (COMMAND).
            return check_arity(cmd, argv, &self.fullnames[id]).map(|_| id);
        }
        let full = [cmd.name.as_bytes(), b"|", &argv[1]].concat();
        match self.find(&full) {
            Some(sid) => check_arity(self.commands[sid], argv, &self.fullnames[sid]).map(|_| sid),
            None => Err(CmdError::Custom(format!(
                "ERR unknown subcommand '{}'. Try {} HELP.",
                truncate(&argv[1], 128),
                cmd.name.to_ascii_uppercase()
            ))),
        }
    }
}

/// Names kept per thread by `Table::find`, and their longest spelling.
const RECENT_SLOTS: usize = 8;
const RECENT_NAME: usize = 24;

struct Recent {
    /// The `serial` of the table the id belongs to.
    table: u64,
    name: [u8; RECENT_NAME],
    len: u8,
    id: usize,
}

thread_local! {
    static RECENT: std::cell::RefCell<Vec<Recent>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn check_arity(cmd: &Command, argv: &[Bytes], fullname: &str) -> Result<(), CmdError> {
    let argc = argv.len() as i32;
    if (cmd.arity > 0 && argc != cmd.arity) || argc < -cmd.arity {
        return Err(CmdError::arity(fullname));
    }
    Ok(())
}

fn truncate(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

/// Redis 7's text: "ERR unknown command 'foo', with args beginning with: 'a' 'b' ".
fn unknown_command(argv: &[Bytes]) -> CmdError {
    let mut args = String::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push_str(&format!("'{}' ", truncate(a, room)));
    }
    CmdError::Custom(format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        truncate(&argv[0], 128)
    ))
}

/// Runs one command and writes its reply (or error) into `out`. `clock` is when the
/// previous command of the batch finished (or the batch began); it is advanced to when this
/// one finishes, so each command costs one clock read.
pub fn execute(
    server: &Server,
    client: &mut Client,
    stats: &ThreadStats,
    argv: &[Bytes],
    out: &mut Vec<u8>,
    clock: &mut Tick,
) {
    let mode_before = client.reply;
    let start_len = out.len();
    let id = match server.table.resolve(argv) {
        Ok(id) => Some(id),
        Err(e) => {
            let e = abort_transaction(server, client, &argv[0], e);
            write_error(server, client, out, &e);
            None
        }
    };
    if let Some(id) = id {
        let took = run(server, client, stats, id, argv, out, clock);
        log_slow(server, client, id, argv, took, false);
    }
    // CLIENT REPLY OFF/SKIP: drop the reply. SKIP applies to the one command after it.
    let suppress = match mode_before {
        ReplyMode::On => false,
        ReplyMode::Skip => {
            if client.reply == ReplyMode::Skip {
                client.reply = ReplyMode::On;
            }
            true
        }
        ReplyMode::Off => client.reply != ReplyMode::On,
    };
    if suppress {
        out.truncate(start_len);
    }
}

/// Hands the time `run` measured for command `id` to the slow log (None: it did not run).
/// `by_script`: a script's redis.call, which Redis logs as its Lua client's, not the
/// caller's. Nothing is logged while the journal replays.
pub(crate) fn log_slow(
    server: &Server,
    client: &Client,
    id: usize,
    argv: &[Bytes],
    took: Option<u64>,
    by_script: bool,
) {
    if let Some(took) = took.filter(|_| !client.replaying) {
        let who = (!by_script).then_some(&*client.info);
        server
            .slowlog
            .observe(took, &server.table.fullnames[id], argv, who);
    }
}

/// Runs command `id`: checks what the client may run, queues it inside MULTI, or executes
/// it. A write holds the shards of its keys until its effect is in the journal, so the
/// journal's order of writes to a key is the order they happened in memory.
pub(crate) fn run(
    server: &Server,
    client: &mut Client,
    stats: &ThreadStats,
    id: usize,
    argv: &[Bytes],
    out: &mut Vec<u8>,
    clock: &mut Tick,
) -> Option<u64> {
    let cmd = server.table.commands[id];
    // Only the command the frame was parsed for may use it, not any it runs in turn.
    let frame = client.frame.take();
    if !client.authenticated && !cmd.has(flags::NO_AUTH) {
        reject(
            server,
            client,
            stats,
            id,
            out,
            CmdError::Static("NOAUTH Authentication required."),
        );
        return None;
    }
    if client.pubsub_mode && !allowed_in_pubsub(&server.table.fullnames[id]) {
        let e = CmdError::Custom(format!("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", server.table.fullnames[id]));
        reject(server, client, stats, id, out, e);
        return None;
    }
    if client.multi.is_some() && !transactions::runs_in_multi(&server.table.fullnames[id]) {
        if cmd.has(flags::NO_MULTI) {
            let e = CmdError::Static("ERR Command not allowed inside a transaction");
            reject(server, client, stats, id, out, e);
        } else {
            transactions::queue(client, id, argv, out);
        }
        return None;
    }
    // A script past busy-reply-threshold: others may only kill it or shut down.
    if server
        .scripts
        .busy
        .load(std::sync::atomic::Ordering::Relaxed)
        && !cmd.has(flags::ALLOW_BUSY)
        && client.group.is_none()
    {
        let e = server.scripts.busy_error();
        reject(server, client, stats, id, out, e);
        return None;
    }
    // A shard kept from the previous command (sticky shards, docs/scaling.md) carries over
    // only between data commands: anything else may wait for something that a thread
    // waiting for that shard holds (SAVE waits for the writes in flight, for one).
    if !cmd.has(flags::WRITE | flags::READONLY) || cmd.has(flags::ADMIN | flags::BLOCKING) {
        strata_engine::Keyspace::release_sticky();
    }
    client
        .info
        .last_cmd
        .store(id, std::sync::atomic::Ordering::Relaxed);
    let started = *clock;
    let proto = client.proto;
    let db = client.db;
    let write = cmd.has(flags::WRITE);
    if write && server.persist.journal_on() && !client.replaying {
        if let Some(e) = server.persist.write_error() {
            reject(server, client, stats, id, out, CmdError::Custom(e));
            return None;
        }
    }
    // Inside an EXEC or a script the caller already holds the shards (client.group is set).
    let ordered = write && client.group.is_none() && server.orders_writes();
    let snapshotting = write && server.persist.snapshots.active();
    let mut plan = (ordered || snapshotting)
        .then(|| LockPlan::of(server, db, cmd, &server.table.fullnames[id], argv));
    let session = if ordered {
        // The plan is needed again below only while a snapshot is taken.
        let p = if snapshotting {
            plan.clone()
        } else {
            plan.take()
        };
        p.map(|p| crate::services::snapshot::open_write(server, stats, client, p))
    } else {
        None
    };
    // A snapshot is being taken: keep what this write changes as it was when it began.
    if let Some(p) = plan.as_ref().filter(|_| snapshotting) {
        let mut keys: Vec<&[u8]> = Vec::new();
        cmd.for_each_key_position(argv, |i| keys.extend(argv.get(i).map(|k| k.as_ref())));
        crate::services::snapshot::before_write(server, client.write_epoch, db, p, &keys);
    }
    let (result, effect) = {
        let mut ctx = Ctx {
            server,
            client,
            argv,
            out: Reply::new(out, proto),
            now_ms: server.clock.unix_ms(started),
            effect: Effect::Argv,
            stats,
        };
        if ctx.client.replaying {
            // Nothing expires while the journal replays: its records already say which
            // keys expired (as DELs), and when.
            ctx.now_ms = 1;
        }
        let r = (cmd.handler)(&mut ctx);
        (r, ctx.effect)
    };
    if write && result.is_ok() && client.block.is_none() {
        if !matches!(effect, Effect::Skip) && !client.replaying {
            stats.changed();
        }
        match &mut client.group {
            // Without a journal (fixed at start) a group's records would go nowhere.
            Some(g) if server.persist.journal_on() => g.add(db, argv, effect),
            Some(_) => {}
            None if ordered => server
                .persist
                .log(client, db, argv, effect, frame.as_deref()),
            None => {}
        }
    }
    drop(session);
    *clock = Tick::now();
    let took = clock.micros_since(started);
    stats.called(id, took);
    if let Err(e) = result {
        stats.failed(id);
        write_error(server, client, out, &e);
    }
    Some(took)
}

/// Refuses a command before it runs (auth, pub/sub context, not allowed in MULTI); inside
/// MULTI that also dooms the transaction, as Redis's rejectCommand does.
fn reject(
    server: &Server,
    client: &mut Client,
    stats: &ThreadStats,
    id: usize,
    out: &mut Vec<u8>,
    e: CmdError,
) {
    stats.rejected(id);
    let e = abort_transaction(server, client, server.table.fullnames[id].as_bytes(), e);
    write_error(server, client, out, &e);
}

/// A command refused inside MULTI dooms the transaction (EXEC will answer EXECABORT); a
/// refused EXEC discards it at once and says why (Redis's execCommandAbort).
fn abort_transaction(server: &Server, client: &mut Client, name: &[u8], e: CmdError) -> CmdError {
    if let Some(m) = &mut client.multi {
        m.aborted = true;
    }
    // Redis words a refused EXEC so even outside MULTI.
    if !name.eq_ignore_ascii_case(b"exec") {
        return e;
    }
    transactions::forget(server, client);
    let text = e.text();
    let reason = text.strip_prefix("ERR ").unwrap_or(&text);
    CmdError::Custom(format!(
        "EXECABORT Transaction discarded because of: {reason}"
    ))
}

/// What a RESP2 client may run while subscribed.
#[cold]
fn allowed_in_pubsub(fullname: &str) -> bool {
    matches!(
        fullname,
        "ping"
            | "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "quit"
            | "reset"
    )
}

pub(crate) fn write_error(server: &Server, client: &Client, out: &mut Vec<u8>, e: &CmdError) {
    let text = e.text();
    server.stats.count_error(&text);
    Reply::new(out, client.proto).error(&text);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-thread cache of `find` answers as the table does: for any spelling, after
    /// other names pushed it out, and never with another table's ids.
    #[test]
    fn recent_names_resolve_as_the_table_does() {
        let all = Table::new(crate::commands::FAMILIES);
        let some = Table::new(&crate::commands::FAMILIES[1..]);
        let names: Vec<&str> = all.fullnames.iter().take(40).map(String::as_str).collect();
        for round in 0..3 {
            for n in &names {
                for spelled in [n.to_string(), n.to_ascii_uppercase()] {
                    assert_eq!(
                        all.find(spelled.as_bytes()),
                        all.lookup(n),
                        "{spelled}, round {round}"
                    );
                    assert_eq!(
                        some.find(spelled.as_bytes()),
                        some.lookup(n),
                        "{spelled} in the smaller table"
                    );
                }
            }
        }
        assert_eq!(all.find(b"nosuchcommand"), None);
    }
}
