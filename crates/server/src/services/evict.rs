//! maxmemory: keeping used memory under the limit by evicting keys, as Redis's
//! performEvictions does. Admission (`exec/admit.rs`) calls [`Evictor::perform`] before a
//! client's command while memory is over the limit; a command that needs memory is refused
//! when nothing could be evicted. Which keys go is the engine's choice
//! (`strata_engine::evict`: sampling into a pool of the best candidates); here are the
//! policy's settings, how much to free, how long one call may take, and what an eviction
//! entails: the journal records a DEL (so a replay or a replica drops the key too), WATCH
//! is touched, the `evicted` keyspace event is published.
//!
//! A call evicts for a bounded time (`maxmemory-eviction-tenacity`); when it stops short,
//! a background thread carries on between clients' commands (Redis's eviction time event)
//! until memory is under the limit or nothing is left to evict.

use crate::config::MaxmemoryPolicy;
use crate::server::Server;
use crate::services::lazyfree::{self, LAZYFREE_THRESHOLD};
use crate::services::memory;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use strata_engine::{Policy, Pool, ToCold};

/// What [`Evictor::perform`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Memory is under the limit (or eviction is not possible now).
    Ok,
    /// Still over the limit; the background eviction carries on.
    Running,
    /// Over the limit and nothing can be evicted: commands that need memory are refused.
    Fail,
}

/// Redis's reply to a command refused for lack of memory.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Picks in one eviction call that may be keys too long for the tier before the policy
/// applies to them (`perform`).
const UNMOVABLE_SKIPS: usize = 64;

/// For this long after an entry was spared, a command finds memory under the limit
/// while the hot bytes are within the limit plus that entry, without sampling the
/// keyspace again only to find the same entry.
const SPARED_FOR: Duration = Duration::from_millis(100);

/// The eviction settings (pushed by the configuration's hook), the pool, the counters.
pub struct Evictor {
    maxmemory: AtomicU64,
    policy: AtomicU8,
    samples: AtomicU32,
    tenacity: AtomicU32,
    lazy: AtomicBool,
    /// The candidates kept between calls. Held for a whole call: one thread evicts at a
    /// time, and the others wait for its result instead of evicting the same memory.
    pool: Mutex<Pool>,
    /// Keys evicted since the start (INFO evicted_keys).
    pub evicted: AtomicU64,
    /// The background eviction is asked for, or running.
    background: Mutex<bool>,
    wake: Condvar,
    /// `background`, readable without the lock.
    running: AtomicBool,
    started: AtomicBool,
    /// When an entry in use was last left over the limit, and its bytes (`SPARED_FOR`).
    spared: Mutex<Option<(Instant, u64)>>,
}

impl Default for Evictor {
    fn default() -> Self {
        Evictor {
            maxmemory: AtomicU64::new(0),
            policy: AtomicU8::new(0),
            samples: AtomicU32::new(5),
            tenacity: AtomicU32::new(10),
            lazy: AtomicBool::new(false),
            pool: Mutex::new(Pool::default()),
            spared: Mutex::new(None),
            evicted: AtomicU64::new(0),
            background: Mutex::new(false),
            wake: Condvar::new(),
            running: AtomicBool::new(false),
            started: AtomicBool::new(false),
        }
    }
}

/// The engine's policy for the configured one.
pub fn policy_of(p: MaxmemoryPolicy) -> Policy {
    match p {
        MaxmemoryPolicy::VolatileLru => Policy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu => Policy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom => Policy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl => Policy::VolatileTtl,
        MaxmemoryPolicy::AllkeysLru => Policy::AllKeysLru,
        MaxmemoryPolicy::AllkeysLfu => Policy::AllKeysLfu,
        MaxmemoryPolicy::AllkeysRandom => Policy::AllKeysRandom,
        MaxmemoryPolicy::Noeviction => Policy::NoEviction,
    }
}

/// How long one call may evict: 50 µs per tenacity step up to 10, then 15% more per step,
/// about two minutes at 99, and no limit at 100 (Redis's evictionTimeLimitUs).
pub fn time_limit(tenacity: u32) -> Option<Duration> {
    match tenacity {
        0..=10 => Some(Duration::from_micros(50 * u64::from(tenacity))),
        11..=99 => Some(Duration::from_secs_f64(
            500e-6 * 1.15f64.powi(tenacity as i32 - 10),
        )),
        _ => None,
    }
}

impl Evictor {
    /// The settings, from the configuration (its hook calls this).
    pub fn configure(
        &self,
        maxmemory: u64,
        policy: MaxmemoryPolicy,
        samples: u32,
        tenacity: u32,
        lazy: bool,
    ) {
        self.policy.store(policy_of(policy).code(), Relaxed);
        self.samples.store(samples.max(1), Relaxed);
        self.tenacity.store(tenacity, Relaxed);
        self.lazy.store(lazy, Relaxed);
        self.maxmemory.store(maxmemory, Relaxed);
    }

    /// The limit in bytes; 0: none.
    #[inline]
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Relaxed)
    }

    fn policy(&self) -> Policy {
        Policy::from_code(self.policy.load(Relaxed))
    }

    /// Memory the limit does not count, as Redis leaves it out: the journal's buffered
    /// records (those not yet written, and those written and kept until their fsync) and
    /// the replication stream replicas have still to read beyond the backlog,
    /// so that the DELs of evictions cannot feed more evictions, nor a slow replica
    /// empty its primary; also messages to clients that their connections have not yet
    /// taken (`mailbox::in_transit`).
    pub fn not_counted(server: &Server) -> u64 {
        Self::journal_buffers(server)
            + server.repl.buffers().2
            + crate::services::mailbox::in_transit()
    }

    /// The journal's buffered records: not yet written, or written and kept until their
    /// fsync (Redis's AOF buffer).
    pub fn journal_buffers(server: &Server) -> u64 {
        server.persist.journal().map_or(0, |j| {
            let stats = j.stats();
            stats.pending_bytes + stats.held_bytes
        })
    }

    /// What `maxmemory` bounds: used memory, or with tiering the hot entries' bytes
    /// (docs/tiering.md: the tier's caches come on top).
    pub fn counted(server: &Server) -> u64 {
        match server.tier.get() {
            Some(tier) => tier.hot_bytes(),
            None => memory::used(),
        }
    }

    /// Bytes to free to be under the limit; 0 when under it. Values queued for the
    /// lazy-free thread count as freed already: otherwise every command until that thread
    /// caught up would evict more.
    fn to_free(server: &Server, max: u64) -> u64 {
        if let Some(tier) = server.tier.get() {
            return tier.hot_bytes().saturating_sub(max);
        }
        let used = memory::used();
        if used <= max {
            return 0;
        }
        used.saturating_sub(Self::not_counted(server))
            .saturating_sub(LAZY_BYTES.load(Relaxed))
            .saturating_sub(max)
    }

    /// Evicts until memory is under the limit, nothing is left to evict, or this call's
    /// time is up (then the background eviction carries on). See [`State`].
    pub fn perform(&self, server: &Server) -> State {
        let max = self.maxmemory();
        if max == 0 || Self::counted(server) <= max || self.still_spared(server, max) {
            return State::Ok;
        }
        // A replica under `replica-ignore-maxmemory` (the default) deletes nothing itself:
        // its primary's evictions reach it as DELs, as in Redis. Moving entries to its own
        // tier deletes nothing, so that goes on.
        let keeps_keys = server.repl.is_replica() && server.config.get().replica_ignore_maxmemory;
        if keeps_keys && server.tier.get().is_none() {
            return State::Ok;
        }
        // Eviction locks shards while holding the pool: a shard this thread kept locked
        // from its last command (sticky shards) must go first, or a thread waiting for the
        // pool while keeping one would deadlock with the one evicting.
        strata_engine::Keyspace::release_sticky();
        let tier = server.tier.get();
        let mut pool = match self.pool.try_lock() {
            Some(pool) => pool,
            // With tiering, the thread that holds the pool is moving entries out: a
            // command does not queue behind it unless the hot bytes run well over (the
            // bound is a sixteenth loose already, `tiering::open_at_start`).
            None if tier.is_some() && Self::counted(server) <= max + max / 16 => return State::Ok,
            None => self.pool.lock(),
        };
        // Another thread may have freed enough while this one waited for the pool.
        let to_free = Self::to_free(server, max);
        if to_free == 0 {
            return State::Ok;
        }
        let policy = match (self.policy(), tier) {
            // With tiering the policy picks what goes to disk; noeviction lets LRU pick.
            (Policy::NoEviction, Some(_)) => Policy::AllKeysLru,
            (p, _) => p,
        };
        if policy == Policy::NoEviction {
            return State::Fail;
        }
        let full = tier
            .is_some_and(|t| !crate::services::tiering::has_room(server, t) && !t.dead.broken());
        if full && Self::drop_clean(server, max) {
            return State::Ok;
        }
        let limit = time_limit(self.tenacity.load(Relaxed));
        let samples = self.samples.load(Relaxed) as usize;
        let lazy = self.lazy.load(Relaxed);
        let start = Instant::now();
        let _cycle = LatencyEvent(server, "eviction-cycle", start);
        let (mut freed, mut keys, mut unmovable) = (0i64, 0u64, 0usize);
        let mut timed_out = false;
        let spared = std::cell::Cell::new(0);
        // With tiering, a large entry in use may stay (`spares_in_use`).
        let spare = |bytes: usize| {
            spared.set(bytes as u64);
            strata_engine::spares_in_use(max, Self::counted(server), bytes as u64)
        };
        while freed < to_free as i64 {
            let picked = server.keyspace.evict_pick(policy, samples, &mut pool);
            let Some((db, key)) = picked else {
                drop(pool);
                if tier.is_some() {
                    // Nothing is left to move: the hot bytes' total may be only the shards'
                    // changes not yet folded in (a maxmemory of a few KB).
                    server.keyspace.fold_hot_bytes();
                    if Self::to_free(server, max) == 0 {
                        return State::Ok;
                    }
                }
                return self.cannot_free(server, max, lazy, start, limit);
            };
            // What removing and freeing the entry gave back on this thread, less what
            // recording the removal took (a journal record, a keyspace event).
            let before = memory::thread_net();
            let tiered = tier.filter(|t| crate::services::tiering::has_room(server, t));
            let movable = tiered.filter(|_| strata_tier::Tier::takes_key(&key));
            if tiered.is_some() && movable.is_none() {
                // Too long for the store: it stays in RAM and others move instead. Should
                // only such keys be left, the policy applies to them as to a full tier.
                unmovable += 1;
                if unmovable <= UNMOVABLE_SKIPS {
                    pool.recycle(key);
                    continue;
                }
            }
            if let Some(tier) = movable {
                let d = server.keyspace.db(db);
                match d.evict_to_cold_unless_in_use(&key, policy.volatile(), &spare) {
                    Ok(ToCold::Moved(entry)) => {
                        drop(entry);
                        if keys == 0 {
                            // The entry spared last may be the one that went.
                            *self.spared.lock() = None;
                        }
                        keys += 1;
                        if Self::to_free(server, max) == 0 {
                            break;
                        }
                    }
                    Ok(ToCold::Absent) => {}
                    Ok(ToCold::InUse) => {
                        // The rest fits: only this entry is over the limit.
                        *self.spared.lock() = Some((Instant::now(), spared.get()));
                        return State::Ok;
                    }
                    Err(e) => {
                        tier.errors.fetch_add(1, Relaxed);
                        tracing::warn!("tiering: {e}; writes that need memory are refused");
                        drop(pool);
                        return State::Fail;
                    }
                }
                pool.recycle(key);
                if keys % 16 == 0 && limit.is_some_and(|l| start.elapsed() > l) {
                    timed_out = true;
                    break;
                }
                continue;
            }
            if tier.is_some() && self.policy() == Policy::NoEviction {
                // The tier is full and the policy keeps keys: nothing more can go.
                drop(pool);
                return State::Fail;
            }
            if keeps_keys {
                pool.recycle(key);
                return State::Ok;
            }
            let mut recording = 0;
            let del = LatencyEvent(server, "eviction-del", Instant::now());
            let gone = server
                .keyspace
                .evict_remove(db, &key, policy.volatile(), || {
                    let at = memory::thread_net();
                    server.removed_by_server(db, &key, "evicted", lazy);
                    recording = memory::thread_net() - at;
                });
            if let Some(entry) = gone {
                let mut queued = 0;
                if lazy && entry.free_effort() > LAZYFREE_THRESHOLD {
                    queued = LazyEntry::free_later(entry);
                } else {
                    drop(entry);
                }
                drop(del);
                freed += before - memory::thread_net() + recording + queued;
                keys += 1;
                self.evicted.fetch_add(1, Relaxed);
                if keys % 16 == 0 {
                    // Values freed on the lazy-free thread count only once freed.
                    if lazy && Self::to_free(server, max) == 0 {
                        break;
                    }
                    if limit.is_some_and(|l| start.elapsed() > l) {
                        timed_out = true;
                        break;
                    }
                }
            }
            pool.recycle(key);
        }
        // Only a call out of time leaves eviction running. One that freed what it set out
        // to free ends it even though memory may be over again: the evictions' own
        // messages (tracking invalidations, keyspace events) wait in clients' output
        // buffers until their connections write them, and evicting for those would feed
        // itself until the database was empty. Redis's eviction time event likewise runs
        // again only after the event loop has written its clients' replies.
        if timed_out {
            self.start_background(server);
            State::Running
        } else {
            State::Ok
        }
    }

    /// Whether an entry in use was spared lately and the hot bytes are still within the
    /// limit plus that entry (`SPARED_FOR`).
    fn still_spared(&self, server: &Server, max: u64) -> bool {
        let spared = *self.spared.lock();
        spared.is_some_and(|(at, bytes)| {
            at.elapsed() < SPARED_FOR && Self::counted(server) <= max.saturating_add(bytes)
        })
    }

    /// A full tier: entries that reads brought back from it leave RAM again, which writes
    /// nothing and loses nothing, until memory is under `max` (true) or none is left.
    fn drop_clean(server: &Server, max: u64) -> bool {
        let from = server.keyspace.random() as usize;
        let mut enough = false;
        for db in 0..server.keyspace.db_count() {
            server.keyspace.db(db).drop_clean_entries(from, &mut |e| {
                drop(e);
                enough = Self::to_free(server, max) == 0;
                !enough
            });
            if enough {
                break;
            }
        }
        enough
    }

    /// Nothing is left to evict: unless values being freed in the background bring memory
    /// under the limit within this call's time, it fails.
    fn cannot_free(
        &self,
        server: &Server,
        max: u64,
        lazy: bool,
        start: Instant,
        limit: Option<Duration>,
    ) -> State {
        let limit = limit.unwrap_or(Duration::from_millis(10));
        while lazy && start.elapsed() < limit {
            if Self::to_free(server, max) == 0 {
                return State::Ok;
            }
            std::thread::sleep(limit.min(Duration::from_millis(1)));
        }
        State::Fail
    }

    /// Asks the background eviction to run (Redis's startEvictionTimeProc): CONFIG SET
    /// maxmemory below usage, and a call that ran out of time.
    pub fn start_background(&self, server: &Server) {
        let mut asked = self.background.lock();
        if *asked {
            return;
        }
        *asked = true;
        self.running.store(true, Relaxed);
        if !self.started.swap(true, Relaxed) {
            if let Some(me) = server.arc() {
                let weak = Arc::downgrade(&me);
                let spawned = std::thread::Builder::new()
                    .name("strata-evict".into())
                    .spawn(move || background(weak));
                if let Err(e) = spawned {
                    tracing::warn!("eviction thread: {e}");
                    self.started.store(false, Relaxed);
                }
            }
        }
        self.wake.notify_one();
    }

    /// The background eviction is done (memory is under the limit, or nothing is left).
    fn background_done(&self) {
        *self.background.lock() = false;
        self.running.store(false, Relaxed);
    }
}

/// Bytes of evicted values queued for the lazy-free thread and not yet freed (the thread
/// counts the values, INFO lazyfree_pending_objects).
static LAZY_BYTES: AtomicU64 = AtomicU64::new(0);

/// An evicted value on its way to the lazy-free thread, counted until freed.
/// Records its event in the latency monitor when dropped, as Redis samples
/// `eviction-cycle` (one call's eviction) and `eviction-del` (one key's removal).
struct LatencyEvent<'a>(&'a Server, &'static str, Instant);

impl Drop for LatencyEvent<'_> {
    fn drop(&mut self) {
        let ms = self.2.elapsed().as_millis() as u64;
        self.0.latency.observe(self.1, ms);
    }
}

struct LazyEntry(#[allow(dead_code)] strata_engine::Unlinked, u64);

impl LazyEntry {
    /// Queues `entry` to be freed in the background; returns the bytes it holds.
    fn free_later(entry: strata_engine::Unlinked) -> i64 {
        let bytes = entry.memory_usage() as u64;
        LAZY_BYTES.fetch_add(bytes, Relaxed);
        lazyfree::free_later(LazyEntry(entry, bytes), 1);
        bytes as i64
    }
}

impl Drop for LazyEntry {
    fn drop(&mut self) {
        LAZY_BYTES.fetch_sub(self.1, Relaxed);
    }
}

/// The background eviction's thread: waits to be asked, then evicts in rounds (each as
/// long as a command's call may take, yielding between them) until memory is under the
/// limit or nothing can be evicted.
fn background(server: Weak<Server>) {
    loop {
        let Some(s) = server.upgrade() else { return };
        let ev = &s.evict;
        {
            let mut asked = ev.background.lock();
            while !*asked {
                if s.shutting_down.load(Relaxed) {
                    return;
                }
                ev.wake.wait_for(&mut asked, Duration::from_millis(200));
            }
        }
        loop {
            if s.shutting_down.load(Relaxed) {
                return;
            }
            // No eviction under a busy script (its DELs would mix with its effects).
            if s.scripts.busy.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            match ev.perform(&s) {
                State::Running => std::thread::yield_now(),
                State::Ok | State::Fail => break,
            }
        }
        ev.background_done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenacity_bounds_a_call_as_redis_does() {
        assert_eq!(time_limit(0), Some(Duration::ZERO));
        assert_eq!(time_limit(10), Some(Duration::from_micros(500)));
        let t11 = time_limit(11).expect("bounded");
        assert!(t11 > Duration::from_micros(570) && t11 < Duration::from_micros(580));
        let t99 = time_limit(99).expect("bounded").as_secs_f64();
        assert!((100.0..150.0).contains(&t99), "{t99}");
        assert_eq!(time_limit(100), None);
    }
}
