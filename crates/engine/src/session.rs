//! A thread's hold on a set of shards for the length of a transaction, a script or one write
//! command that must reach the journal before anyone else touches its keys.
//!
//! While a [`Session`] is open, every shard lock the same thread asks for (through `Locked`,
//! `Db::len`, `Db::scan`...) is served from the session's own guard instead of locking again:
//! parking_lot mutexes are not reentrant, and the commands inside an EXEC or a script lock
//! their keys exactly as they do outside one. Shards are always taken in ascending
//! (database, shard) order, as every other multi-shard lock in the engine, so sessions never
//! deadlock with each other or with multi-key commands.
//!
//! The sticky scope's per-thread state and its public face ([`Keyspace::sticky`]) are in
//! `sticky`; keeping a shard and letting it go, on the lock path, are here.

use crate::keyspace::{Keyspace, Shard};
use crate::shard::ShardData;
use parking_lot::{Mutex, MutexGuard};
use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::time::Instant;

mod sticky;

pub(crate) use sticky::thread_holds_shards;
pub use sticky::OneShard;
use sticky::STICKY;

/// A shard held by this thread's open session: its address, and whether a guard lent from
/// it is alive (two at once would alias one `&mut ShardData`).
struct Held {
    addr: usize,
    lent: bool,
}

thread_local! {
    /// Sorted by address. Empty when no session is open (the common case: one TLS read)
    /// and while a one-shard session is (that one is in ONE).
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// The open session when it holds exactly one shard, as most writes' sessions do: kept in
/// one Cell so that opening it, lending its guard and closing it touch no list
/// (`Keyspace::session1`). `shard` is null otherwise.
#[derive(Clone, Copy)]
struct One {
    shard: *const Shard,
    id: ShardId,
    lent: bool,
}

const NO_ONE: One = One {
    shard: std::ptr::null(),
    id: (0, 0),
    lent: false,
};

thread_local! {
    static ONE: Cell<One> = const { Cell::new(NO_ONE) };
}

/// A locked shard: owned by this guard, or lent from the thread's open session (dropping a
/// lent guard leaves the shard locked; the session unlocks it). An owned guard dropped in
/// a sticky scope may leave its shard locked for the thread's next command (`Sticky`).
pub(crate) enum ShardGuard<'a> {
    Own(ManuallyDrop<MutexGuard<'a, ShardData>>),
    /// Lent from the session's HELD entry at this address, or from ONE when it is 0 (no
    /// shard lives there; a third variant would make every guard 8 bytes larger).
    Lent(ManuallyDrop<MutexGuard<'a, ShardData>>, usize),
}

/// `ShardGuard::Lent`'s address for a guard lent from ONE.
const LENT_FROM_ONE: usize = 0;

/// After this many commands on a kept shard, it is handed to a waiting thread (if any)
/// before this thread takes it again, so a long pipeline on one key cannot starve others.
const STICKY_REUSES: u32 = 64;
/// After this many kept shards let go unused in a row, nothing is kept for COOLDOWN
/// commands.
const UNUSED_LIMIT: u8 = 4;
const COOLDOWN: u8 = 64;

impl Keyspace {
    /// Unlocks the shard this thread keeps (if any). Call it before taking a lock under
    /// which someone may wait for a shard.
    pub fn release_sticky() {
        let held = STICKY.with(|c| {
            let mut s = c.get();
            let h = std::mem::replace(&mut s.held, std::ptr::null());
            if !h.is_null() {
                if s.reuses == 0 {
                    s.unused += 1;
                    if s.unused >= UNUSED_LIMIT {
                        s.unused = 0;
                        s.cooldown = COOLDOWN;
                    }
                }
                s.reuses = 0;
            }
            c.set(s);
            h
        });
        if !held.is_null() {
            // SAFETY: `held` was locked by this thread, its guard forgotten in
            // `ShardGuard::drop`, and nothing else refers to that lock; the keyspace it
            // belongs to outlives the sticky scope that allowed keeping it.
            unsafe { (*held).force_unlock() };
        }
    }
}

/// Marks a session open or closed on this thread (no shard is kept meanwhile: the session
/// took over any kept shard it needed and let the others go).
fn set_session(open: bool, one: bool) {
    STICKY.with(|c| {
        let mut s = c.get();
        s.session = open;
        s.one = one;
        c.set(s);
    });
}

/// Keeps `m` (locked by this thread, of keyspace `owner`) locked as the thread's sticky
/// shard, if a sticky scope of that keyspace is open, no session is, and none is kept yet.
/// True if kept: the caller must then not unlock it.
fn keep(m: &Mutex<ShardData>, owner: usize) -> bool {
    STICKY.with(|c| {
        let mut s = c.get();
        if s.owner == 0 || s.owner != owner || s.session || !s.held.is_null() {
            return false;
        }
        if s.cooldown > 0 {
            s.cooldown -= 1;
            c.set(s);
            return false;
        }
        s.held = m;
        c.set(s);
        true
    })
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        match self {
            ShardGuard::Own(g) => {
                if !keep(MutexGuard::mutex(g), g.owner) {
                    // SAFETY: dropped exactly once, here.
                    unsafe { ManuallyDrop::drop(g) };
                }
            }
            ShardGuard::Lent(_, LENT_FROM_ONE) => ONE.set(One {
                lent: false,
                ..ONE.get()
            }),
            ShardGuard::Lent(_, addr) => {
                let addr = *addr;
                HELD.with_borrow_mut(|held| {
                    if let Ok(i) = held.binary_search_by_key(&addr, |h| h.addr) {
                        held[i].lent = false;
                    }
                });
            }
        }
    }
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

impl Shard {
    /// Locks this shard, or borrows it from the thread's open session if that holds it.
    #[inline]
    pub(crate) fn acquire(&self) -> ShardGuard<'_> {
        match self.held_by_thread() {
            Ok(g) => g,
            Err(keeping_another) => {
                if keeping_another {
                    // Never wait while keeping another shard.
                    Keyspace::release_sticky();
                }
                let (mut g, waited) = match self.0.try_lock() {
                    Some(g) => (g, false),
                    None => (self.0.lock(), true),
                };
                self.seen_in_scope(&mut g, waited);
                ShardGuard::Own(ManuallyDrop::new(g))
            }
        }
    }

    /// Notes in the open sticky scope (if any) that its commands locked this shard (`data`,
    /// locked), and marks the shard as this thread's.
    #[inline]
    fn seen_in_scope(&self, data: &mut ShardData, waited: bool) {
        STICKY.with(|c| {
            let mut s = c.get();
            if s.owner == 0 {
                return;
            }
            if s.seen.is_null() {
                s.seen = self;
            } else if !std::ptr::eq(s.seen, self) {
                s.mixed = true;
            }
            s.waited |= waited;
            if data.last_scope != s.thread {
                s.shared |= data.last_scope != 0;
                data.last_scope = s.thread;
            }
            c.set(s);
        });
    }

    /// `acquire` without waiting: None if another thread holds the shard.
    fn try_acquire(&self) -> Option<ShardGuard<'_>> {
        match self.held_by_thread() {
            Ok(g) => Some(g),
            Err(_) => {
                let mut g = self.0.try_lock()?;
                self.seen_in_scope(&mut g, false);
                Some(ShardGuard::Own(ManuallyDrop::new(g)))
            }
        }
    }

    /// A guard for this shard if this thread holds it already (its open session's, or kept
    /// sticky); otherwise whether the thread keeps another shard. One look at the thread's
    /// state serves the common case: no session, nothing kept.
    fn held_by_thread(&self) -> Result<ShardGuard<'_>, bool> {
        let st = STICKY.with(Cell::get);
        if st.session {
            let lent = if st.one { self.lend_one() } else { self.lend() };
            if let Some(g) = lent {
                return Ok(g);
            }
        }
        if st.held.is_null() {
            return Err(false);
        }
        self.take_kept().ok_or(true)
    }

    /// The guard for this shard if this thread keeps it locked (sticky). Every
    /// STICKY_REUSES commands it is first handed to a waiting thread, if one waits.
    fn take_kept(&self) -> Option<ShardGuard<'_>> {
        let me: *const Mutex<ShardData> = &self.0;
        let fair = STICKY.with(|c| {
            let mut s = c.get();
            if s.held != me {
                return None;
            }
            s.held = std::ptr::null();
            s.reuses += 1;
            s.unused = 0;
            let fair = s.reuses >= STICKY_REUSES;
            if fair {
                s.reuses = 1;
            }
            c.set(s);
            Some(fair)
        })?;
        if fair {
            // SAFETY: this thread holds the lock (kept above, guard forgotten).
            unsafe { self.0.force_unlock_fair() };
            return Some(ShardGuard::Own(ManuallyDrop::new(self.0.lock())));
        }
        // SAFETY: this thread holds the lock and no guard for it exists (the kept lock's
        // guard was forgotten); the one made here takes over unlocking it.
        Some(ShardGuard::Own(ManuallyDrop::new(unsafe {
            self.0.make_guard_unchecked()
        })))
    }
}

/// Locks `shards` (ascending order) without ever waiting while holding one: the first is
/// waited for, the others only tried; if one is busy, everything is released, that one is
/// waited for alone, and the whole set is tried again. A command that locks several shards
/// therefore never holds one while waiting for another, so a script that must take a shard
/// out of order (a key it did not declare) can always get it once the holder finishes.
pub(crate) fn acquire_all<'a>(shards: &[&'a Shard]) -> Vec<ShardGuard<'a>> {
    // A kept shard in the set is taken over (by `acquire`/`try_acquire`); one outside it is
    // let go, since this may wait.
    let kept = STICKY.with(|c| c.get().held);
    if !kept.is_null() && !shards.iter().any(|s| std::ptr::eq(&s.0, kept)) {
        Keyspace::release_sticky();
    }
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
    /// `lend` for a one-shard session.
    #[inline]
    fn lend_one(&self) -> Option<ShardGuard<'_>> {
        let one = ONE.get();
        if !std::ptr::eq(one.shard, self) {
            return None;
        }
        // A second live guard on one shard would alias it: a bug in the caller.
        assert!(!one.lent, "strata-engine: shard borrowed twice");
        ONE.set(One { lent: true, ..one });
        // SAFETY: this thread's open one-shard session locked this shard (ONE is only set
        // by `session1`, which locked it first), and the `lent` flag guarantees this is the
        // only guard made from it. ManuallyDrop keeps the guard from unlocking.
        let g = unsafe { self.0.make_guard_unchecked() };
        Some(ShardGuard::Lent(ManuallyDrop::new(g), LENT_FROM_ONE))
    }

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
        // No session is open on this thread (asserted above), so the guards are owned or
        // a kept shard taken over; forgetting them keeps the shards locked until the
        // session drops.
        match shards.as_slice() {
            [] => Self::release_sticky(),
            [id] => return self.session1(*id),
            _ => {
                let refs: Vec<&Shard> = shards.iter().map(|id| self.shard_at(*id)).collect();
                for g in acquire_all(&refs) {
                    std::mem::forget(g);
                }
            }
        }
        self.opened(&shards)
    }

    /// `session` of one shard, as most writes need: nothing to order, no list to build.
    pub fn session1(&self, id: ShardId) -> Session<'_> {
        assert!(!Self::in_session(), "strata-engine: nested session");
        let shard = self.shard_at(id);
        // No session is open, so the guard is owned (or a kept shard taken over); the
        // session unlocks it.
        std::mem::forget(shard.acquire());
        set_session(true, true);
        ONE.set(One {
            shard,
            id,
            lent: false,
        });
        Session { ks: self }
    }

    /// Records the session whose shards (sorted, locked) are `ids`.
    fn opened(&self, ids: &[ShardId]) -> Session<'_> {
        set_session(true, false);
        // Reuse the thread's buffers: a write opens one session per command.
        IDS.with_borrow_mut(|held| {
            held.clear();
            held.extend_from_slice(ids);
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
        !ONE.get().shard.is_null() || IDS.with_borrow(|ids| !ids.is_empty())
    }

    /// The shards this thread's open session holds, in lock order.
    pub fn session_shards() -> Vec<ShardId> {
        IDS.with_borrow(|held| match ONE.get() {
            one if held.is_empty() && !one.shard.is_null() => vec![one.id],
            _ => held.clone(),
        })
    }

    /// True when this thread's open session holds every shard of `ids`.
    pub fn session_holds(ids: &[ShardId]) -> bool {
        IDS.with_borrow(|held| {
            if held.is_empty() {
                let one = ONE.get();
                !one.shard.is_null() && ids.iter().all(|id| *id == one.id)
            } else {
                ids.iter().all(|id| held.binary_search(id).is_ok())
            }
        })
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
        // A one-shard session goes over to the list form (`publish` below fills HELD).
        let one = ONE.replace(NO_ONE);
        if !one.shard.is_null() {
            debug_assert!(!one.lent, "session extended while its guard is lent");
            set_session(true, false);
            IDS.with_borrow_mut(|ids| {
                ids.clear();
                ids.push(one.id);
            });
        }
        // The shards below are locked directly: this thread must keep none of them.
        Keyspace::release_sticky();
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
        let one = ONE.replace(NO_ONE);
        if !one.shard.is_null() {
            debug_assert!(!one.lent, "guard outlived its session");
            set_session(false, false);
            // SAFETY: `one.shard` points into `self.ks`, which this session borrows.
            let shard = unsafe { &*one.shard };
            // In a sticky scope a one-shard session (a plain write) leaves its shard
            // locked for the thread's next command, as an owned guard would.
            if !keep(&shard.0, self.ks.id()) {
                // SAFETY: `session1` locked this shard on this thread and forgot the
                // guard; no lent guard is alive (checked above), so nothing uses it.
                unsafe { shard.0.force_unlock() };
            }
            return;
        }
        HELD.with_borrow_mut(|held| {
            debug_assert!(held.iter().all(|h| !h.lent), "guard outlived its session");
            held.clear();
        });
        set_session(false, false);
        IDS.with_borrow_mut(|ids| {
            // In a sticky scope a one-shard session (a plain write) leaves its shard locked
            // for the thread's next command, as an owned guard would.
            let kept = match ids.as_slice() {
                [one] => keep(&self.ks.shard_at(*one).0, self.ks.id()),
                _ => false,
            };
            for id in ids.iter().rev().skip(usize::from(kept)) {
                // SAFETY: the session locked each of these shards on this thread and forgot
                // the guard; no lent guard is alive (checked above), so nothing uses it.
                unsafe { self.ks.shard_at(*id).0.force_unlock() };
            }
            ids.clear();
        });
    }
}

#[cfg(test)]
mod sticky_tests;
