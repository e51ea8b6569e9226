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
use parking_lot::{Mutex, MutexGuard};
use std::cell::{Cell, RefCell};
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

/// This thread's sticky state (see [`Keyspace::sticky`]).
#[derive(Clone, Copy)]
struct StickyState {
    /// The keyspace of the open sticky scope (its id), 0 for none.
    owner: usize,
    /// A session is open: its shards are unlocked by the session, never kept.
    session: bool,
    /// The open session holds one shard, in ONE (not in HELD).
    one: bool,
    /// The shard kept locked, null for none. Its guard was forgotten; the lock is ours.
    held: *const Mutex<ShardData>,
    /// Commands served from `held` since it was last handed over fairly.
    reuses: u32,
    /// Kept shards let go unused in a row, and commands left before keeping again: when
    /// consecutive commands rarely share a shard (random keys), keeping one only costs.
    unused: u8,
    cooldown: u8,
    /// The shard this scope's commands locked, while they all locked that one (null: none
    /// yet); `mixed` once they locked another. `waited`: a lock was held by another thread.
    /// `shared`: a shard was last locked (in a scope) by another thread.
    seen: *const Shard,
    mixed: bool,
    waited: bool,
    shared: bool,
    /// This thread's number in `ShardData::last_scope`, 0 until its first scope.
    thread: u32,
}

thread_local! {
    static STICKY: Cell<StickyState> = const {
        Cell::new(StickyState {
            owner: 0,
            session: false,
            one: false,
            held: std::ptr::null(),
            reuses: 0,
            unused: 0,
            cooldown: 0,
            seen: std::ptr::null(),
            mixed: false,
            waited: false,
            shared: false,
            thread: 0,
        })
    };
}

/// True when this thread has a session open or keeps a shard locked: its next shard lock
/// must go through `Shard::acquire`, which lends or releases those first.
#[inline]
pub(crate) fn thread_holds_shards() -> bool {
    let s = STICKY.with(Cell::get);
    s.session || !s.held.is_null()
}

/// After this many commands on a kept shard, it is handed to a waiting thread (if any)
/// before this thread takes it again, so a long pipeline on one key cannot starve others.
const STICKY_REUSES: u32 = 64;
/// After this many kept shards let go unused in a row, nothing is kept for COOLDOWN
/// commands.
const UNUSED_LIMIT: u8 = 4;
const COOLDOWN: u8 = 64;

/// While alive, the shard this thread's last command locked stays locked for the next
/// one: a pipeline of commands on one key (or on keys of one shard) locks it once instead
/// of once per command, so the shard's data stays in this core's cache instead of moving
/// between cores with each command (see docs/scaling.md, "Sticky shards"). Dropping it
/// unlocks the kept shard. The thread never waits for a lock while keeping one: asking
/// for any other shard, opening a session, and [`Keyspace::release_sticky`] let it go first.
pub struct Sticky<'k> {
    /// Borrows the keyspace (it outlives any shard kept) and is !Send (the state is this
    /// thread's).
    _ks: std::marker::PhantomData<(&'k Keyspace, *const ())>,
}

/// What [`Sticky::one_shard`] tells of the one shard a scope's commands locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneShard {
    /// The shard, as a number stable for the life of the keyspace (consecutive shards get
    /// consecutive numbers).
    pub index: usize,
    /// A lock had to wait for another thread to let it go.
    pub waited: bool,
    /// Another thread's scope had locked it last: its data was in another core's cache.
    pub shared: bool,
}

impl Sticky<'_> {
    /// When every shard lock this scope's commands took was of one shard: that shard and
    /// how it was shared. A server moves a connection whose batches keep sharing one shard
    /// with another thread to the thread that serves it.
    pub fn one_shard(&self) -> Option<OneShard> {
        let s = STICKY.with(Cell::get);
        (!s.mixed && !s.seen.is_null()).then(|| OneShard {
            index: s.seen as usize / std::mem::size_of::<Shard>(),
            waited: s.waited,
            shared: s.shared,
        })
    }
}

/// Numbers the threads that open sticky scopes, from 1.
static NEXT_THREAD: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

impl Drop for Sticky<'_> {
    fn drop(&mut self) {
        Keyspace::release_sticky();
        STICKY.with(|c| {
            let mut s = c.get();
            s.owner = 0;
            c.set(s);
        });
    }
}

impl Keyspace {
    /// Opens a sticky scope on this thread (see [`Sticky`]). Scopes do not nest.
    pub fn sticky(&self) -> Sticky<'_> {
        STICKY.with(|c| {
            let mut s = c.get();
            debug_assert_eq!(s.owner, 0, "strata-engine: nested sticky scope");
            s.owner = self.id();
            s.seen = std::ptr::null();
            s.mixed = false;
            s.waited = false;
            s.shared = false;
            if s.thread == 0 {
                s.thread = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            c.set(s);
        });
        Sticky {
            _ks: std::marker::PhantomData,
        }
    }

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
mod sticky_tests {
    use super::*;
    use crate::shard::hash;

    /// Whether another thread could lock `key`'s shard right now.
    fn free(ks: &Keyspace, key: &[u8]) -> bool {
        let db = ks.db(0);
        let shard = db.shard_ref(db.shard_index(hash(key)));
        std::thread::scope(|s| s.spawn(|| shard.0.try_lock().is_some()).join().unwrap())
    }

    /// Two keys in different shards.
    fn two_keys(ks: &Keyspace) -> (Vec<u8>, Vec<u8>) {
        let db = ks.db(0);
        let a = b"k0".to_vec();
        let b = (1..)
            .map(|i| format!("k{i}").into_bytes())
            .find(|k| db.shard_index(hash(k)) != db.shard_index(hash(&a)))
            .unwrap();
        (a, b)
    }

    #[test]
    fn a_scope_keeps_the_last_shard_until_another_is_asked_for() {
        let ks = Keyspace::new(1, 4);
        let (a, b) = two_keys(&ks);
        {
            let _s = ks.sticky();
            ks.db(0).lock1(&a).set_str(&a, b"1", crate::Ttl::Clear);
            assert!(!free(&ks, &a), "kept after the command");
            // The same shard again: served from the kept lock (no self-deadlock).
            assert_eq!(ks.db(0).lock1(&a).get_str(&a).unwrap(), Some(&b"1"[..]));
            // Another shard: the kept one is let go first, the new one kept.
            ks.db(0).lock1(&b).set_str(&b, b"2", crate::Ttl::Clear);
            assert!(free(&ks, &a));
            assert!(!free(&ks, &b));
            // A session (EXEC, scripts) over both: nothing kept meanwhile or after it.
            let ids = vec![ks.shard_of(0, &a), ks.shard_of(0, &b)];
            {
                let _session = ks.session(ids);
                ks.db(0).lock1(&a).set_str(&a, b"3", crate::Ttl::Clear);
            }
            assert!(free(&ks, &a) && free(&ks, &b));
            // A one-shard session (a journalled write) keeps its shard; the next session
            // on it takes the kept lock over, one elsewhere lets it go first.
            for _ in 0..2 {
                let _session = ks.session(vec![ks.shard_of(0, &a)]);
                ks.db(0).lock1(&a).set_str(&a, b"4", crate::Ttl::Clear);
            }
            assert!(!free(&ks, &a));
            drop(ks.session(vec![ks.shard_of(0, &b)]));
            assert!(free(&ks, &a) && !free(&ks, &b));
            ks.db(0).lock1(&a).get_str(&a).unwrap();
            assert!(!free(&ks, &a));
            Keyspace::release_sticky();
            assert!(free(&ks, &a));
            ks.db(0).lock1(&b).get_str(&b).unwrap();
        }
        // The scope's end lets go of what it kept.
        assert!(free(&ks, &b));
        // Outside a scope nothing is kept.
        ks.db(0).lock1(&a).get_str(&a).unwrap();
        assert!(free(&ks, &a));
    }

    /// A one-shard session (ONE, no lists) lends its lock to the thread's commands, says
    /// what it holds, goes over to the list form when a script extends it, and unlocks
    /// everything at its end.
    #[test]
    fn a_one_shard_session_lends_extends_and_unlocks() {
        let ks = Keyspace::new(1, 4);
        let (a, b) = two_keys(&ks);
        let (ia, ib) = (ks.shard_of(0, &a), ks.shard_of(0, &b));
        {
            let _session = ks.session1(ia);
            assert!(Keyspace::in_session());
            assert_eq!(Keyspace::session_shards(), vec![ia]);
            assert!(Keyspace::session_holds(&[ia]) && !Keyspace::session_holds(&[ib]));
            // Borrowed twice in a row: the first guard's drop gave the lock back.
            ks.db(0).lock1(&a).set_str(&a, b"1", crate::Ttl::Clear);
            assert_eq!(ks.db(0).lock1(&a).get_str(&a).unwrap(), Some(&b"1"[..]));
            assert!(!free(&ks, &a) && free(&ks, &b));
            let deadline = Instant::now() + std::time::Duration::from_secs(5);
            assert!(ks.extend_session(&[ib], deadline));
            let mut both = vec![ia, ib];
            both.sort_unstable();
            assert_eq!(Keyspace::session_shards(), both);
            assert!(Keyspace::session_holds(&[ia, ib]));
            ks.db(0).lock1(&b).set_str(&b, b"2", crate::Ttl::Clear);
            assert_eq!(ks.db(0).lock1(&a).get_str(&a).unwrap(), Some(&b"1"[..]));
            assert!(!free(&ks, &a) && !free(&ks, &b));
        }
        assert!(!Keyspace::in_session());
        assert!(free(&ks, &a) && free(&ks, &b));
        // `session` of one shard (after dedup) opens the same kind.
        {
            let _session = ks.session(vec![ia, ia]);
            assert_eq!(Keyspace::session_shards(), vec![ia]);
            ks.db(0).lock1(&a).get_str(&a).unwrap();
        }
        assert!(free(&ks, &a));
    }

    /// `one_shard` names the one shard a scope locked, says when another thread's scope
    /// locked it last, and has no answer for a scope that locked two.
    #[test]
    fn one_shard_says_when_another_thread_locked_it_last() {
        let ks = Keyspace::new(1, 4);
        let (a, b) = two_keys(&ks);
        let batch = |keys: &[&[u8]]| {
            let s = ks.sticky();
            for k in keys {
                ks.db(0).lock1(k).get_str(k).unwrap();
            }
            s.one_shard()
        };
        let first = batch(&[&a]).expect("one shard");
        let number = |s: &Shard| s as *const Shard as usize / std::mem::size_of::<Shard>();
        assert_eq!(first.index, number(ks.shard_at(ks.shard_of(0, &a))));
        assert!(!first.shared && !first.waited, "nobody had it before");
        assert!(!batch(&[&a, &a]).unwrap().shared, "still this thread's");
        std::thread::scope(|t| {
            let other = t.spawn(|| batch(&[&a]).unwrap().shared);
            assert!(
                other.join().unwrap(),
                "the other thread finds it this one's"
            );
        });
        assert!(
            batch(&[&a]).unwrap().shared,
            "and this one finds it the other's"
        );
        assert!(!batch(&[&a]).unwrap().shared);
        assert_eq!(batch(&[&a, &b]), None);
    }

    /// Commands that keep changing shards (random keys) soon stop keeping any, for a while.
    #[test]
    fn keeping_pauses_when_no_kept_shard_is_reused() {
        let ks = Keyspace::new(1, 4);
        let (a, b) = two_keys(&ks);
        let _s = ks.sticky();
        for i in 0..UNUSED_LIMIT as usize {
            let k = if i % 2 == 0 { &a } else { &b };
            ks.db(0).lock1(k).get_str(k).unwrap();
            assert!(!free(&ks, k), "command {i} keeps its shard");
        }
        // The last kept shard went unused too: keeping pauses.
        ks.db(0).lock1(&a).get_str(&a).unwrap();
        assert!(free(&ks, &a) && free(&ks, &b));
        for _ in 0..COOLDOWN {
            ks.db(0).lock1(&a).get_str(&a).unwrap();
        }
        ks.db(0).lock1(&a).get_str(&a).unwrap();
        assert!(!free(&ks, &a), "keeping resumes after the pause");
    }

    #[test]
    fn another_keyspace_is_never_kept() {
        let (ks, other) = (Keyspace::new(1, 2), Keyspace::new(1, 2));
        let _s = ks.sticky();
        other
            .db(0)
            .lock1(b"x")
            .set_str(b"x", b"1", crate::Ttl::Clear);
        assert!(free(&other, b"x"));
        drop(other);
        ks.db(0).lock1(b"x").get_str(b"x").unwrap();
        assert!(!free(&ks, b"x"));
    }

    /// A thread waiting for a kept shard gets it within STICKY_REUSES commands.
    #[test]
    fn a_waiting_thread_is_not_starved() {
        let ks = Keyspace::new(1, 0);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let _sticky = ks.sticky();
            ks.db(0).lock1(b"k").set_str(b"k", b"0", crate::Ttl::Clear);
            let waiter = s.spawn(|| {
                ks.db(0).lock1(b"k").set_str(b"k", b"w", crate::Ttl::Clear);
                done.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            // Give the waiter time to queue on the lock, then keep using the shard.
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut n = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                ks.db(0).lock1(b"k").get_str(b"k").unwrap();
                n += 1;
                assert!(n <= 10 * STICKY_REUSES, "waiter starved");
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            waiter.join().unwrap();
        });
    }

    /// Two keys in different shards of a keyspace: a = "1", b missing.
    fn a_set_b_missing() -> (Keyspace, Vec<u8>, Vec<u8>) {
        let ks = Keyspace::new(1, 4);
        let (a, b) = two_keys(&ks);
        ks.db(0).lock1(&a).set_str(&a, b"1", crate::Ttl::Clear);
        (ks, a, b)
    }

    /// The string at `k` through `Db::read1`.
    fn read1_str(db: &crate::Db, k: &[u8]) -> Option<Vec<u8>> {
        db.read1(k, |e| e.and_then(|e| e.as_str()).map(<[u8]>::to_vec))
    }

    /// `Db::read1`'s short path (no session, nothing kept, no TTL in the shard) counts
    /// hits and misses and unlocks; with a TTL in the shard it expires as `Locked::get`.
    #[test]
    fn read1_counts_reads_and_expires_through_the_general_path() {
        let (ks, a, b) = a_set_b_missing();
        let db = ks.db(0);
        let val = |k: &[u8]| read1_str(db, k);
        assert_eq!(val(&a), Some(b"1".to_vec()));
        assert_eq!(val(&b), None);
        assert!(free(&ks, &a) && free(&ks, &b));
        assert_eq!(db.stats(), (1, 1, 0));
        // An expired key in a shard with TTLs: removed and counted, as a GET would.
        db.lock1_at(1000, &b)
            .set_str(&b, b"2", crate::Ttl::At(1001));
        assert_eq!(val(&b), None);
        assert_eq!(db.stats(), (1, 2, 1));
        assert_eq!(db.len(), 1);
    }

    /// `Db::set_str1` stores as `set_str(.., Ttl::Clear)` on both its paths: the short one
    /// (unlocks after), and the general one for a shard with TTLs (clears the key's TTL),
    /// inside a session (borrows its lock) or with a shard kept (lets it go first).
    #[test]
    fn set_str1_stores_and_unlocks_on_both_paths() {
        let (ks, a, b) = a_set_b_missing();
        let db = ks.db(0);
        db.set_str1(&a, b"2");
        assert_eq!(read1_str(db, &a), Some(b"2".to_vec()));
        assert!(free(&ks, &a));
        db.lock1(&b).set_str(&b, b"x", crate::Ttl::At(u64::MAX));
        assert_eq!(db.volatile_len(), 1);
        db.set_str1(&b, b"3");
        assert_eq!(db.volatile_len(), 0, "the TTL is cleared");
        assert_eq!(read1_str(db, &b), Some(b"3".to_vec()));
        assert!(free(&ks, &b));
        {
            let _session = ks.session(vec![ks.shard_of(0, &a)]);
            db.set_str1(&a, b"4");
            assert!(!free(&ks, &a), "still the session's");
        }
        assert_eq!(read1_str(db, &a), Some(b"4".to_vec()));
        let _s = ks.sticky();
        db.lock1(&a).get_str(&a).unwrap();
        assert!(!free(&ks, &a), "kept");
        db.set_str1(&b, b"5");
        assert!(free(&ks, &a), "the kept shard was let go before locking b");
        assert_eq!(db.len(), 2);
    }

    /// Inside a session, or while a shard is kept, `read1` goes through `acquire`: it
    /// borrows the session's lock (no self-deadlock) and lets a kept shard go first.
    #[test]
    fn read1_borrows_the_sessions_shard_and_releases_a_kept_one() {
        let (ks, a, b) = a_set_b_missing();
        let db = ks.db(0);
        let val = |k: &[u8]| read1_str(db, k);
        {
            let _session = ks.session(vec![ks.shard_of(0, &a)]);
            assert_eq!(val(&a), Some(b"1".to_vec()));
            assert!(!free(&ks, &a), "still the session's");
        }
        let _s = ks.sticky();
        db.lock1(&a).get_str(&a).unwrap();
        assert!(!free(&ks, &a), "kept");
        assert_eq!(val(&b), None);
        // The kept shard was let go before locking b (which the scope now keeps).
        assert!(free(&ks, &a) && !free(&ks, &b));
    }
}
