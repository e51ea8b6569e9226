//! A thread's hold on a set of shards for the length of a transaction, a script or one write
//! command that must reach the journal before anyone else touches its keys.
//!
//! While a [`Session`] is open, every shard lock the same thread asks for (through `Locked`,
//! `Db::len`, `Db::scan`...) is served from the session's own guard instead of locking again:
//! parking_lot mutexes are not reentrant, and the commands inside an EXEC or a script lock
//! their keys exactly as they do outside one. Shards are always taken in ascending
//! (database, shard) order, as every other multi-shard lock in the engine, so sessions never
//! deadlock with each other or with multi-key commands.

use crate::keyspace::{Keyspace, Shard};
use crate::shard::ShardData;
use parking_lot::MutexGuard;
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::time::Instant;

/// A shard held by this thread's open session: its address, and whether a guard lent from
/// it is alive (two at once would alias one `&mut ShardData`).
struct Held {
    addr: usize,
    lent: bool,
}

thread_local! {
    /// Sorted by address. Empty when no session is open (the common case: one TLS read).
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// A locked shard: owned by this guard, or lent from the thread's open session (dropping a
/// lent guard leaves the shard locked; the session unlocks it).
pub(crate) enum ShardGuard<'a> {
    Own(MutexGuard<'a, ShardData>),
    Lent(ManuallyDrop<MutexGuard<'a, ShardData>>, usize),
}

impl Deref for ShardGuard<'_> {
    type Target = ShardData;
    fn deref(&self) -> &ShardData {
        match self {
            ShardGuard::Own(g) => g,
            ShardGuard::Lent(g, _) => g,
        }
    }
}

impl DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut ShardData {
        match self {
            ShardGuard::Own(g) => g,
            ShardGuard::Lent(g, _) => g,
        }
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        if let ShardGuard::Lent(_, addr) = self {
            let addr = *addr;
            HELD.with_borrow_mut(|held| {
                if let Ok(i) = held.binary_search_by_key(&addr, |h| h.addr) {
                    held[i].lent = false;
                }
            });
        }
    }
}

impl Shard {
    /// Locks this shard, or borrows it from the thread's open session if that holds it.
    #[inline]
    pub(crate) fn acquire(&self) -> ShardGuard<'_> {
        if let Some(g) = self.lend() {
            return g;
        }
        ShardGuard::Own(self.0.lock())
    }

    /// `acquire` without waiting: None if another thread holds the shard.
    fn try_acquire(&self) -> Option<ShardGuard<'_>> {
        if let Some(g) = self.lend() {
            return Some(g);
        }
        self.0.try_lock().map(ShardGuard::Own)
    }
}

/// Locks `shards` (ascending order) without ever waiting while holding one: the first is
/// waited for, the others only tried; if one is busy, everything is released, that one is
/// waited for alone, and the whole set is tried again. A command that locks several shards
/// therefore never holds one while waiting for another, so a script that must take a shard
/// out of order (a key it did not declare) can always get it once the holder finishes.
pub(crate) fn acquire_all<'a>(shards: &[&'a Shard]) -> Vec<ShardGuard<'a>> {
    let mut guards = Vec::with_capacity(shards.len());
    let mut first = 0;
    loop {
        guards.clear();
        guards.push(shards[first].acquire());
        let mut busy = None;
        for (i, s) in shards.iter().enumerate() {
            if i == first {
                continue;
            }
            match s.try_acquire() {
                Some(g) => guards.push(g),
                None => {
                    busy = Some(i);
                    break;
                }
            }
        }
        match busy {
            None => {
                // Back in ascending order (the first one taken may not be the lowest).
                let g = guards.remove(0);
                guards.insert(first, g);
                return guards;
            }
            Some(i) => {
                guards.clear();
                first = i;
            }
        }
    }
}

impl Shard {
    #[inline]
    fn lend(&self) -> Option<ShardGuard<'_>> {
        let addr = self as *const Shard as usize;
        HELD.with_borrow_mut(|held| {
            if held.is_empty() {
                return None;
            }
            let i = held.binary_search_by_key(&addr, |h| h.addr).ok()?;
            // A second live guard on one shard would alias it: a bug in the caller.
            assert!(!held[i].lent, "strata-engine: shard borrowed twice");
            held[i].lent = true;
            // SAFETY: this thread's open session holds the lock (it is in HELD, which only
            // the session that locked it fills), and the `lent` flag above guarantees this is
            // the only guard made from it. ManuallyDrop keeps the guard from unlocking.
            let g = unsafe { self.0.make_guard_unchecked() };
            Some(ShardGuard::Lent(ManuallyDrop::new(g), addr))
        })
    }
}

/// A shard's place in the global lock order.
pub type ShardId = (usize, usize);

/// Shards held by this thread until dropped; see the module docs. One per thread at a time.
/// The locks are held without guard objects (the guards are forgotten and the locks
/// released by `force_unlock` on drop), so code deeper in the same thread can add shards
/// through [`Keyspace::extend_session`] without a reference to this value.
pub struct Session<'k> {
    ks: &'k Keyspace,
}

thread_local! {
    /// The open session's shards, sorted by (database, shard).
    static IDS: RefCell<Vec<ShardId>> = const { RefCell::new(Vec::new()) };
}

impl Keyspace {
    /// Opens a session holding `shards` (any order, duplicates allowed), locked in ascending
    /// order. Panics if this thread already has one open (sessions do not nest: code inside
    /// one extends it instead).
    pub fn session(&self, mut shards: Vec<ShardId>) -> Session<'_> {
        assert!(!Self::in_session(), "strata-engine: nested session");
        shards.sort_unstable();
        shards.dedup();
        if !shards.is_empty() {
            let refs: Vec<&Shard> = shards.iter().map(|id| self.shard_at(*id)).collect();
            // No session is open on this thread (asserted above), so these are all owned
            // guards; forgetting them keeps the shards locked until the session drops.
            for g in acquire_all(&refs) {
                std::mem::forget(g);
            }
        }
        // Reuse the thread's buffers: a write opens one session per command.
        IDS.with_borrow_mut(|ids| {
            ids.clear();
            ids.extend_from_slice(&shards);
        });
        publish(self);
        Session { ks: self }
    }

    /// A session over every shard of every database (FLUSHALL, KEYS... inside EXEC).
    pub fn session_all(&self) -> Session<'_> {
        let ids = (0..self.db_count())
            .flat_map(|d| (0..self.db(d).shard_count()).map(move |i| (d, i)))
            .collect();
        self.session(ids)
    }

    /// True while this thread has a session open.
    pub fn in_session() -> bool {
        IDS.with_borrow(|ids| !ids.is_empty())
    }

    /// The shards this thread's open session holds, in lock order.
    pub fn session_shards() -> Vec<ShardId> {
        IDS.with_borrow(|ids| ids.clone())
    }

    /// True when this thread's open session holds every shard of `ids`.
    pub fn session_holds(ids: &[ShardId]) -> bool {
        IDS.with_borrow(|held| ids.iter().all(|id| held.binary_search(id).is_ok()))
    }

    /// Adds shards to this thread's open session (a script touching a key it did not
    /// declare). A shard above every held one is waited for (that keeps the global order);
    /// one below is only tried until `deadline`, because waiting for it while holding
    /// higher shards could deadlock with a session that holds it and waits for ours.
    /// False if one could not be taken by then; the shards taken stay held either way.
    pub fn extend_session(&self, ids: &[ShardId], deadline: Instant) -> bool {
        let mut want: Vec<ShardId> = ids
            .iter()
            .copied()
            .filter(|id| !Self::session_holds(&[*id]))
            .collect();
        if want.is_empty() {
            return true;
        }
        want.sort_unstable();
        want.dedup();
        let mut ok = true;
        for id in want {
            let top = IDS.with_borrow(|held| held.last().copied());
            let shard = self.shard_at(id);
            let got = if top.is_none_or(|t| id > t) {
                std::mem::forget(shard.0.lock());
                true
            } else {
                loop {
                    if let Some(g) = shard.0.try_lock() {
                        std::mem::forget(g);
                        break true;
                    }
                    if Instant::now() >= deadline {
                        break false;
                    }
                    std::thread::yield_now();
                }
            };
            if got {
                IDS.with_borrow_mut(|held| {
                    let pos = held.partition_point(|h| *h < id);
                    held.insert(pos, id);
                });
            } else {
                ok = false;
            }
        }
        publish(self);
        ok
    }

    /// The shard a key of database `db` lives in.
    pub fn shard_of(&self, db: usize, key: &[u8]) -> ShardId {
        (db, self.db(db).shard_index(crate::shard::hash(key)))
    }

    fn shard_at(&self, (db, idx): ShardId) -> &Shard {
        self.db(db).shard_ref(idx)
    }
}

/// Rewrites the thread's lending table from the session's shards.
fn publish(ks: &Keyspace) {
    IDS.with_borrow(|ids| {
        HELD.with_borrow_mut(|held| {
            held.clear();
            held.extend(ids.iter().map(|id| Held {
                addr: ks.shard_at(*id) as *const Shard as usize,
                lent: false,
            }));
            held.sort_unstable_by_key(|h| h.addr);
        })
    });
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        HELD.with_borrow_mut(|held| {
            debug_assert!(held.iter().all(|h| !h.lent), "guard outlived its session");
            held.clear();
        });
        IDS.with_borrow_mut(|ids| {
            for id in ids.iter().rev() {
                // SAFETY: the session locked each of these shards on this thread and forgot
                // the guard; no lent guard is alive (checked above), so nothing uses it.
                unsafe { self.ks.shard_at(*id).0.force_unlock() };
            }
            ids.clear();
        });
    }
}
