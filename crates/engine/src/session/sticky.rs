//! The sticky scope's state: what this thread keeps locked between commands and what its
//! scope's commands locked ([`Sticky`], [`Keyspace::sticky`]). Keeping and letting go of
//! the shard is on the lock path, in the parent module.

use super::Shard;
use crate::keyspace::Keyspace;
use crate::shard::ShardData;
use parking_lot::Mutex;
use std::cell::Cell;

/// This thread's sticky state (see [`Keyspace::sticky`]).
#[derive(Clone, Copy)]
pub(super) struct StickyState {
    /// The keyspace of the open sticky scope (its id), 0 for none.
    pub(super) owner: usize,
    /// A session is open: its shards are unlocked by the session, never kept.
    pub(super) session: bool,
    /// The open session holds one shard, in ONE (not in HELD).
    pub(super) one: bool,
    /// The shard kept locked, null for none. Its guard was forgotten; the lock is ours.
    pub(super) held: *const Mutex<ShardData>,
    /// Commands served from `held` since it was last handed over fairly.
    pub(super) reuses: u32,
    /// Kept shards let go unused in a row, and commands left before keeping again: when
    /// consecutive commands rarely share a shard (random keys), keeping one only costs.
    pub(super) unused: u8,
    pub(super) cooldown: u8,
    /// The shard this scope's commands locked, while they all locked that one (null: none
    /// yet); `mixed` once they locked another. `waited`: a lock was held by another thread.
    /// `shared`: a shard was last locked (in a scope) by another thread.
    pub(super) seen: *const Shard,
    pub(super) mixed: bool,
    pub(super) waited: bool,
    pub(super) shared: bool,
    /// This thread's number in `ShardData::last_scope`, 0 until its first scope.
    pub(super) thread: u32,
}

thread_local! {
    pub(super) static STICKY: Cell<StickyState> = const {
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
}
