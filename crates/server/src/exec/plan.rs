//! Stage 3: the shards a command holds while it runs. A write holds the shards of its keys
//! until its effect is recorded, so the effect sinks see writes to a key in the order
//! memory did; and while a snapshot is taken, it first keeps aside what it will change.

use crate::exec::command::{flags, CmdError, Command};
use crate::exec::{Origin, Worker};
use crate::server::Server;
use crate::services::snapshot::{self, WriteHold};
use bytes::Bytes;
use std::time::{Duration, Instant};
use strata_engine::{Keyspace, ShardId};

/// The shards a command must hold for its whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockPlan {
    /// One shard: most writes name one key (no list to allocate).
    One(ShardId),
    /// These shards (possibly none).
    Shards(Vec<ShardId>),
    /// Every shard of one database: commands flagged DB_SHARDS, which touch keys they do
    /// not name in the database they run in (FLUSHDB, SORT ... BY...).
    /// (database, its shard count)
    Db(usize, usize),
    /// Every shard of every database: commands flagged ALL_SHARDS, which touch keys they do
    /// not name in any database (FLUSHALL, MOVE, SWAPDB...).
    World,
}

/// The shard of each key command `id` names in `argv`.
fn for_each_shard(
    server: &Server,
    db: usize,
    id: usize,
    argv: &[Bytes],
    mut f: impl FnMut(ShardId),
) {
    server.table.for_each_key_position(id, argv, |i| {
        if let Some(k) = argv.get(i) {
            f(server.keyspace.shard_of(db, k));
        }
    });
}

impl LockPlan {
    /// What command `id` with `argv` run in database `db` must hold.
    pub fn of(server: &Server, db: usize, id: usize, argv: &[Bytes]) -> LockPlan {
        let cmd = server.table.commands[id];
        if cmd.has(flags::ALL_SHARDS) {
            return LockPlan::World;
        }
        if cmd.has(flags::DB_SHARDS) {
            return LockPlan::Db(db, server.keyspace.db(db).shard_count());
        }
        let (mut first, mut more) = (None, Vec::new());
        for_each_shard(server, db, id, argv, |id| match first {
            None => first = Some(id),
            Some(_) => more.push(id),
        });
        match first {
            Some(id) if more.is_empty() => LockPlan::One(id),
            Some(id) => {
                more.push(id); // the session sorts them
                LockPlan::Shards(more)
            }
            None => LockPlan::Shards(more),
        }
    }

    /// The shards named, or None for the whole keyspace.
    pub fn shard_ids(self) -> Option<Vec<ShardId>> {
        match self {
            LockPlan::One(id) => Some(vec![id]),
            LockPlan::Shards(ids) => Some(ids),
            LockPlan::Db(db, n) => Some((0..n).map(|i| (db, i)).collect()),
            LockPlan::World => None,
        }
    }

    /// Whether the command reaches keys it does not name: a snapshot being taken then keeps
    /// aside every shard the command holds, not only its keys.
    pub fn reaches_unnamed(&self) -> bool {
        matches!(self, LockPlan::Db(..) | LockPlan::World)
    }

    /// Whether this thread's session already holds all that [`LockPlan::of`] would name:
    /// a script's call on a key it declared, checked without building the plan.
    pub fn held(server: &Server, db: usize, id: usize, argv: &[Bytes]) -> bool {
        if server.table.commands[id].has(flags::ALL_SHARDS | flags::DB_SHARDS) {
            return false;
        }
        let mut held = true;
        for_each_shard(server, db, id, argv, |id| {
            held = held && Keyspace::session_holds(&[id]);
        });
        held
    }

    /// Adds `other`'s shards to this plan.
    pub fn merge(&mut self, other: LockPlan) {
        // Either side World makes the merge World.
        let mine = std::mem::replace(self, LockPlan::World);
        if let (Some(mut a), Some(b)) = (mine.shard_ids(), other.shard_ids()) {
            a.extend(b);
            *self = LockPlan::Shards(a);
        }
    }

    /// Locks what the plan names.
    pub fn open<'k>(self, server: &'k Server) -> strata_engine::Session<'k> {
        match self {
            LockPlan::World => server.keyspace.session_all(),
            LockPlan::One(id) => server.keyspace.session1(id),
            LockPlan::Shards(ids) => server.keyspace.session(ids),
            plan @ LockPlan::Db(..) => server
                .keyspace
                .session(plan.shard_ids().unwrap_or_default()),
        }
    }
}

/// Every shard of every database.
pub fn world(server: &Server) -> Vec<ShardId> {
    let ks = &server.keyspace;
    (0..ks.db_count())
        .flat_map(|d| (0..ks.db(d).shard_count()).map(move |i| (d, i)))
        .collect()
}

/// What one command holds while it runs.
pub struct Hold<'a> {
    write: Option<WriteHold<'a>>,
}

impl Hold<'_> {
    /// The snapshot epoch of a write that holds its own shards: its effect is recorded to
    /// the sinks, tagged with it. None for anything else.
    pub fn epoch(&self) -> Option<u64> {
        self.write.as_ref().map(|w| w.epoch)
    }
}

/// How long a script's call on a key it did not declare waits for a shard below the ones
/// the script holds before giving up (waiting longer could deadlock with another script).
pub const UNDECLARED_WAIT: Duration = Duration::from_secs(1);

/// Takes what command `id` must hold, before its handler runs.
pub fn hold<'a>(
    w: &Worker<'a>,
    db: usize,
    id: usize,
    argv: &[Bytes],
    origin: &Origin<'_>,
) -> Result<Hold<'a>, CmdError> {
    let server = w.server;
    let cmd = server.table.commands[id];
    // A shard kept from the previous command (sticky shards, docs/scaling.md) carries over
    // only between data commands: anything else may wait for something that a thread
    // waiting for that shard holds (SAVE waits for the writes in flight, for one).
    if !cmd.has(flags::WRITE | flags::READONLY) || cmd.has(flags::ADMIN | flags::BLOCKING) {
        Keyspace::release_sticky();
    }
    let write = cmd.has(flags::WRITE);
    let none = Hold { write: None };
    match origin {
        Origin::Replay => Ok(none),
        Origin::Nested(nest) => {
            // A key the script did not declare: take its shard into the session now.
            if nest.script.is_some() && !LockPlan::held(server, db, id, argv) {
                let ids = LockPlan::of(server, db, id, argv)
                    .shard_ids()
                    .unwrap_or_else(|| world(server));
                if !server
                    .keyspace
                    .extend_session(&ids, Instant::now() + UNDECLARED_WAIT)
                {
                    return Err(CmdError::Static("ERR Script accessed a key it did not declare while another script held it; declare every key in KEYS"));
                }
            }
            if write && server.persist.snapshots.active() {
                let whole = LockPlan::of(server, db, id, argv).reaches_unnamed();
                keep_for_snapshot(server, nest.epoch, db, cmd, whole, argv);
            }
            Ok(none)
        }
        Origin::Client | Origin::Master => {
            if !write || !server.orders_writes() {
                return Ok(none);
            }
            let plan = LockPlan::of(server, db, id, argv);
            let whole = plan.reaches_unnamed();
            let hold = snapshot::open_write(server, w.stats, plan);
            // Read under the locks, after the write's epoch: a snapshot (or a replica's
            // full sync) that began while this write waited for its shards needs what it
            // changes as it was (else the write is both in the capture and after its cut).
            if server.persist.snapshots.active() {
                keep_for_snapshot(server, hold.epoch, db, cmd, whole, argv);
            }
            Ok(Hold { write: Some(hold) })
        }
    }
}

/// A snapshot is being taken: keep what this write changes as it was when it began.
fn keep_for_snapshot(
    server: &Server,
    epoch: u64,
    db: usize,
    cmd: &Command,
    world: bool,
    argv: &[Bytes],
) {
    let mut keys: Vec<&[u8]> = Vec::new();
    cmd.for_each_key_position(argv, |i| keys.extend(argv.get(i).map(|k| k.as_ref())));
    snapshot::before_write(server, epoch, db, world, &keys);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_plans_hold_both_sides_and_world_wins() {
        let mut p = LockPlan::One((0, 3));
        p.merge(LockPlan::One((0, 1)));
        assert_eq!(p, LockPlan::Shards(vec![(0, 3), (0, 1)]));
        p.merge(LockPlan::Shards(vec![(1, 2)]));
        assert_eq!(p.clone().shard_ids(), Some(vec![(0, 3), (0, 1), (1, 2)]));
        p.merge(LockPlan::Db(2, 2));
        assert_eq!(
            p.clone().shard_ids(),
            Some(vec![(0, 3), (0, 1), (1, 2), (2, 0), (2, 1)])
        );
        p.merge(LockPlan::World);
        assert_eq!(p, LockPlan::World);
        p.merge(LockPlan::One((0, 0)));
        assert_eq!(p, LockPlan::World);
    }
}
