//! A replica applies its primary's stream in runs: writes that each name one key (SET,
//! HSET, LPUSH, DEL of one key, ...). While one write of a run runs, the next one's key
//! starts loading its table slots, as a client's pipeline does (`Db::prefetch`).
//! Everything else (a command with no key or several, MULTI ... EXEC, a script, SELECT,
//! PING, REPLCONF) ends the run: what came before it is applied before it runs, in order,
//! on the link.
//!
//! With `replica-apply-lanes` above 1 (0: one per worker), a run is split into lanes by
//! its keys' shards (`strata_engine::shard_pick`, the same for every database), so a
//! key's writes stay in one lane, in stream order, and lanes never share a shard. Lane 0
//! runs on the link's own worker, the others on the next workers (each as a task, as a
//! connection runs there), and the link waits for all. During such a run, writes to
//! different keys may become visible in another order than the stream's, which is why
//! the default, 1, applies everything in stream order, as Redis does. A run shorter than
//! `PARALLEL_FROM` is applied in order anyway: handing it out would cost more than it
//! saves.
//!
//! The stream's bytes of a run enter this replica's backlog once the whole run is
//! applied, under the apply gate (`Replication::apply_gate`), which a full sync's cut also
//! takes: a chained replica's RDB then holds a run entirely or not at all.

use crate::exec::client::{Client, ClientInfo};
use crate::exec::command::flags;
use crate::exec::table::Table;
use crate::exec::{execute, After, Call, Origin, Worker};
use crate::server::Server;
use crate::tick::Tick;
use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use strata_resp::{Limits, Parser};

/// A run this long or longer is handed out; a shorter one runs in order on the link.
const PARALLEL_FROM: usize = 64;

/// A run this long is applied before more of the stream is read into it.
const MAX_RUN: usize = 4096;

/// One command of a run.
struct Cmd {
    argv: Vec<Bytes>,
    frame: Option<Bytes>,
    /// Where its key is in `argv`.
    key: usize,
    /// Where its bytes end in the run's.
    end: usize,
}

/// A lane handed to another worker: its commands' bytes, copied out of the link's read
/// buffer, and their keys' positions. The worker parses them again: arguments cut from
/// the link's buffer share its reference count, which the two cores would then trade on
/// every argument.
struct Handed {
    bytes: BytesMut,
    keys: Vec<usize>,
}

/// The run being collected.
#[derive(Default)]
pub(super) struct Run {
    /// Lanes for this run (1: in order), fixed at the run's first command.
    lanes: usize,
    cmds: Vec<(usize, Cmd)>,
    /// The run's bytes in the primary's stream.
    bytes: BytesMut,
}

/// How many lanes the link may use now: `replica-apply-lanes` (0: one per worker), at
/// most one per worker.
fn lanes_now(server: &Server) -> usize {
    let workers = server.workers.get().map_or(1, |w| w.len()).max(1);
    match server.config.get().replica_apply_lanes as usize {
        0 => workers,
        n => n.min(workers),
    }
}

impl Run {
    pub(super) fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    pub(super) fn is_full(&self) -> bool {
        self.cmds.len() >= MAX_RUN
    }

    /// Takes `argv` into the run when it is a write of exactly one key; gives it back
    /// otherwise (it ends the run).
    pub(super) fn take(
        &mut self,
        server: &Server,
        argv: Vec<Bytes>,
        frame: Option<Bytes>,
        raw: &[u8],
    ) -> Result<(), (Vec<Bytes>, Option<Bytes>)> {
        let Some(key) = single_key(&server.table, &argv) else {
            return Err((argv, frame));
        };
        if self.cmds.is_empty() {
            self.lanes = lanes_now(server);
        }
        let lane = match self.lanes {
            1 => 0,
            n => (strata_engine::shard_pick(&argv[key]) % n as u64) as usize,
        };
        self.bytes.extend_from_slice(raw);
        let end = self.bytes.len();
        self.cmds.push((
            lane,
            Cmd {
                argv,
                frame,
                key,
                end,
            },
        ));
        Ok(())
    }

    /// Applies the run: in order on the link when it is short or lanes are off, else each
    /// lane on its worker. Returns the run's bytes, for the backlog and the offset.
    pub(super) async fn apply(
        &mut self,
        server: &Arc<Server>,
        link: &mut Worker<'_>,
        client: &mut Client,
        link_worker: usize,
    ) -> Bytes {
        let cmds = std::mem::take(&mut self.cmds);
        let bytes = self.bytes.split().freeze();
        let mut out = Vec::new();
        if self.lanes <= 1 || cmds.len() < PARALLEL_FROM {
            let cmds: Vec<Cmd> = cmds.into_iter().map(|(_, c)| c).collect();
            apply_lane(link, client, &cmds, &mut out);
            return bytes;
        }
        let counters = &server.repl.counters;
        counters.split_runs.fetch_add(1, Ordering::Relaxed);
        counters
            .split_writes
            .fetch_add(cmds.len() as u64, Ordering::Relaxed);
        let mut own = Vec::new();
        let mut handed: Vec<Handed> = (1..self.lanes)
            .map(|_| Handed {
                bytes: BytesMut::new(),
                keys: Vec::new(),
            })
            .collect();
        let mut start = 0;
        for (lane, c) in cmds {
            let (from, to) = (start, c.end);
            start = c.end;
            match lane.checked_sub(1).and_then(|i| handed.get_mut(i)) {
                None => own.push(c),
                Some(h) => {
                    h.bytes.extend_from_slice(&bytes[from..to]);
                    h.keys.push(c.key);
                }
            }
        }
        let mut waits = Vec::new();
        for (i, lane) in handed.into_iter().enumerate() {
            if !lane.keys.is_empty() {
                waits.push(hand_out(server, client, link_worker + 1 + i, lane));
            }
        }
        apply_lane(link, client, &own, &mut out);
        for (slot, done) in waits {
            let _ = done.await;
            // A worker that stopped before it ran its lane (shutdown) left it here.
            if let Some(left) = slot.lock().take() {
                apply_handed(link, client, left, &mut out);
            }
        }
        bytes
    }
}

/// A lane handed to another worker, until that worker takes it.
type Slot = Arc<Mutex<Option<Handed>>>;

/// Sends `lane` to run on worker `worker` (modulo their number). Returns where the lane
/// waits to be taken and a receiver that ends once the worker is done with it.
fn hand_out(
    server: &Arc<Server>,
    client: &Client,
    worker: usize,
    lane: Handed,
) -> (Slot, tokio::sync::oneshot::Receiver<()>) {
    let slot = Arc::new(Mutex::new(Some(lane)));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let info = client.info.clone();
    let db = client.db;
    let taken = slot.clone();
    let task = crate::net::conn::Incoming::Task(Box::new(move |server, stats| {
        Box::pin(async move {
            let lane = taken.lock().take();
            if let Some(lane) = lane {
                let mut w = Worker {
                    server: &server,
                    stats: &stats,
                    clock: Tick::now(),
                };
                let mut client = master_client(info);
                client.set_db(db);
                apply_handed(&mut w, &mut client, lane, &mut Vec::new());
            }
            let _ = tx.send(());
        })
    }));
    if let Some(queues) = server.workers.get() {
        if let Some(q) = queues.get(worker % queues.len().max(1)) {
            let _ = q.send(task);
        }
    }
    (slot, rx)
}

/// The client the primary's stream is applied as, on the link and in each lane: no user,
/// no ACL rule, marked as the primary.
pub(super) fn master_client(info: Arc<ClientInfo>) -> Client {
    let mut client = Client::new(info, None, true);
    client.repl = Some(Box::new(super::ClientRepl {
        master: true,
        ..super::ClientRepl::default()
    }));
    client
}

/// The parser of the primary's stream: it is trusted with any length.
pub(super) fn stream_parser() -> Parser {
    Parser::new(Limits {
        max_bulk_len: usize::MAX / 2,
        max_multibulk_len: usize::MAX / 2,
        ..Limits::default()
    })
}

/// Parses a handed lane's commands again, then runs them.
fn apply_handed(w: &mut Worker<'_>, client: &mut Client, lane: Handed, out: &mut Vec<u8>) {
    let mut parser = stream_parser();
    let mut buf = lane.bytes;
    let mut cmds = Vec::with_capacity(lane.keys.len());
    for key in lane.keys {
        match parser.parse(&mut buf) {
            Ok(Some(argv)) if key < argv.len() => {
                let frame = parser.take_frame();
                cmds.push(Cmd {
                    argv,
                    frame,
                    key,
                    end: 0,
                });
            }
            // They parsed once on the link: nothing else can come back.
            _ => {
                tracing::error!("a lane of the primary's stream did not parse again");
                break;
            }
        }
    }
    apply_lane(w, client, &cmds, out);
}

/// Runs a lane's commands in order. Each command's key starts loading its table slots
/// while the command before it runs, as a client's pipeline does (`Db::prefetch`), and its
/// shard while the one before that runs (`Db::prefetch_shard`): the stream's keys are
/// known ahead, and their lookups' cache misses are most of a write.
fn apply_lane(w: &mut Worker<'_>, client: &mut Client, cmds: &[Cmd], out: &mut Vec<u8>) {
    let db = w.server.keyspace.db(client.db);
    for (i, c) in cmds.iter().enumerate() {
        if let Some(far) = cmds.get(i + 2) {
            db.prefetch_shard(&far.argv[far.key]);
        }
        if let Some(next) = cmds.get(i + 1) {
            db.prefetch(&next.argv[next.key]);
        }
        apply_one(w, client, &c.argv, c.frame.clone(), out);
    }
}

/// Runs one command of the primary's stream; replies go nowhere (REPLCONF ACK aside,
/// which the link writes itself).
pub(super) fn apply_one(
    w: &mut Worker<'_>,
    client: &mut Client,
    argv: &[Bytes],
    frame: Option<Bytes>,
    out: &mut Vec<u8>,
) {
    let mut after = After::default();
    execute(
        w,
        client,
        Call::framed(argv, frame),
        Origin::Master,
        out,
        &mut after,
    );
    if out.first() == Some(&b'-') {
        diverged(w.server, argv, out);
    }
    out.clear();
    if !after.ready_keys.is_empty() {
        crate::exec::blocked::serve_ready(w, after.ready_keys);
    }
}

/// A command of the primary's stream failed here: the data sets may have diverged. Logged
/// and counted as Redis does; with `propagation-error-behavior panic` or
/// `panic-on-replicas`, a read-only replica stops rather than serve diverged data.
fn diverged(server: &Server, argv: &[Bytes], reply: &[u8]) {
    let text = String::from_utf8_lossy(&reply[1..reply.len().min(4096)]);
    let name = server
        .table
        .resolve(argv)
        .ok()
        .and_then(|id| server.table.fullnames.get(id))
        .map_or("<unknown>", String::as_str);
    tracing::warn!(
        "== CRITICAL == This replica is sending an error to its master: '{}' after processing the command '{name}'",
        text.trim_end()
    );
    server
        .stats
        .unexpected_error_replies
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let config = server.config.get();
    let panics = !matches!(
        config.propagation_error_behavior,
        crate::config::PropagationErrorBehavior::Ignore
    );
    if panics && config.replica_read_only {
        tracing::error!(
            "This replica panicked sending an error to its master after processing the command '{name}'"
        );
        std::process::exit(1);
    }
}

/// The position of the one key of a write that touches nothing else, if `argv` is one.
/// Scripts, commands whose keys depend on their arguments and those that reach every
/// shard are never split.
fn single_key(table: &Table, argv: &[Bytes]) -> Option<usize> {
    let id = table.resolve(argv).ok()?;
    let cmd = table.commands[id];
    let excluded = flags::MOVABLEKEYS | flags::NOSCRIPT | flags::ALL_SHARDS | flags::DB_SHARDS;
    if !cmd.has(flags::WRITE) || cmd.flags & excluded != 0 {
        return None;
    }
    let mut keys = 0;
    let mut first = 0;
    cmd.for_each_key_position(argv, |i| {
        keys += 1;
        first = i;
    });
    (keys == 1 && first < argv.len()).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which commands of a stream may run in a lane: writes of one key, and nothing that
    /// reaches beyond its key.
    #[test]
    fn only_writes_of_one_key_join_a_run() {
        let table = Table::new(crate::commands::FAMILIES);
        let key = |words: &str| {
            let argv: Vec<Bytes> = words
                .split(' ')
                .map(|w| Bytes::copy_from_slice(w.as_bytes()))
                .collect();
            single_key(&table, &argv)
        };
        assert_eq!(key("SET k v"), Some(1));
        assert_eq!(key("del k"), Some(1));
        assert_eq!(key("HSET h f v g w"), Some(1));
        assert_eq!(key("XGROUP CREATE s g $"), Some(2));
        for other in [
            "DEL a b",
            "MSET a 1 b 2",
            "RENAME a b",
            "MOVE k 1",
            "GET k",
            "SELECT 1",
            "PING",
            "MULTI",
            "EXEC",
            "PUBLISH c m",
            "SPUBLISH c m",
            "FLUSHALL",
            "EVAL return 1 1 k",
            "FCALL f 1 k",
            "SORT k",
            "REPLCONF GETACK *",
            "NOSUCH k",
            "SET k",
        ] {
            assert_eq!(key(other), None, "{other}");
        }
    }
}
