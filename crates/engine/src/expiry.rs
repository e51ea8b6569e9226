//! Active expiry, as Redis 7.0's slow cycle (`activeExpireCycle`): each database that
//! holds keys with a TTL gets rounds of 20 such keys (more at a higher
//! `active-expire-effort`), walked in turn from where the last round stopped through the
//! shards that hold some (`Occupancy`'s volatile map); the expired ones go, and another
//! round follows while more than a tenth of a round (less at a higher effort) had expired
//! and the budget lasts.
//!
//! A cycle's work thus follows how many keys are due, not how many exist. The pass before
//! this one walked every entry of every shard with a TTL key: a server holding 2M keys
//! with a TTL, none of them due, spent a quarter of a core on it while idle (Redis: 0.3%),
//! and held each shard's lock for a walk of its whole table.

use crate::clock;
use crate::keyspace::{Db, Keyspace};
use crate::shard::{hash, ShardData};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// How hard a cycle works, from `active-expire-effort` (1 to 10) as Redis derives it: keys
/// a round looks at (20 at effort 1, 5 more each step), and the percent of expired keys
/// in a round under which a database's rounds stop (10 at effort 1, one less each step).
#[derive(Clone, Copy, Debug)]
struct Effort {
    per_round: usize,
    stale: usize,
}

impl Effort {
    fn of(effort: u32) -> Effort {
        let e = effort.clamp(1, 10) as usize - 1;
        Effort {
            per_round: 20 + 5 * e,
            stale: 10 - e,
        }
    }
}

/// The share of each cron period, in percent, a cycle may use at `effort` (Redis: 25 at
/// effort 1, 2 more each step).
pub fn expire_cycle_percent(effort: u32) -> u32 {
    25 + 2 * (effort.clamp(1, 10) - 1)
}

impl Keyspace {
    /// One active-expiry cycle over the databases, from the one the last cycle ran out of
    /// time in, until `budget` is spent, at `effort` (`active-expire-effort`, 1 to 10).
    /// Returns the number of keys removed.
    pub fn active_expire_cycle(&self, budget: Duration, effort: u32) -> usize {
        let effort = Effort::of(effort);
        let start = Instant::now();
        let now = clock::now_ms();
        if !self.dbs[0].may_expire(now) {
            return 0;
        }
        let n = self.dbs.len();
        let first = self.expire_cursor.load(Relaxed) % n;
        let out_of_time = || start.elapsed() >= budget;
        let mut removed = 0;
        for i in 0..n {
            let at = (first + i) % n;
            let (gone, done) = self.dbs[at].expire_rounds(now, effort, &out_of_time);
            removed += gone;
            if !done {
                self.expire_cursor.store(at, Relaxed);
                break;
            }
        }
        removed
    }

    /// Removes every expired key of every database, whatever it takes (the embedded
    /// table's `purge_expired`). Returns how many.
    pub fn purge_all_expired(&self) -> usize {
        let now = clock::now_ms();
        if !self.dbs[0].may_expire(now) {
            return 0;
        }
        let shards = self
            .dbs
            .iter()
            .flat_map(|db| db.allocated().iter().map(move |s| (db, s)));
        shards
            .map(|(db, s)| db.purge_expired(&mut s.acquire(), now))
            .sum()
    }
}

impl Db {
    /// Removes `key` if its TTL has passed, even while the keyspace keeps expired keys
    /// (`Keyspace::set_keep_expired`): on a writable replica, the keys its own clients
    /// wrote expire there, as Redis's expireSlaveKeys does. Some(true): removed (reported
    /// to the expired hook); Some(false): not due yet; None: not in RAM, or no TTL.
    pub fn expire_if_due(&self, key: &[u8]) -> Option<bool> {
        let h = hash(key);
        let mut g = self.shards()[self.shard_index(h)].acquire();
        let at = g.find(h, key)?.expire_at()?;
        if at > clock::now_ms() {
            return Some(false);
        }
        self.remove_expired(&mut g, h, key);
        Some(true)
    }

    /// This database's rounds of a cycle: (keys removed, whether it ended for want of
    /// expired keys rather than of time).
    fn expire_rounds(
        &self,
        now: u64,
        effort: Effort,
        out_of_time: &dyn Fn() -> bool,
    ) -> (usize, bool) {
        let mut removed = 0;
        loop {
            let (sampled, expired) = self.expire_round(now, effort.per_round);
            removed += expired;
            if sampled == 0 || expired * 100 <= sampled * effort.stale {
                return (removed, true);
            }
            if out_of_time() {
                return (removed, false);
            }
        }
    }

    /// One round: walks on from where the last one stopped, through the shards that hold
    /// keys with a TTL in order and their buckets, until it has seen `per_round` such keys
    /// or that many shards. Walking, not sampling at random, reaches every key in turn, as
    /// Redis's cursor over its expires table does. Returns (keys seen, of which expired,
    /// removed).
    fn expire_round(&self, now: u64, per_round: usize) -> (usize, usize) {
        let cursor = self.expire_cursor.load(Relaxed);
        let (mut shard, mut pos) = ((cursor >> 32) as usize, cursor as u32 as usize);
        let (mut seen, mut expired) = (0, 0);
        for _ in 0..per_round {
            let Some(i) = self.occupancy.next(true, shard % self.shard_count()) else {
                break;
            };
            if i != shard {
                (shard, pos) = (i, 0);
            }
            let mut g = self.shards()[i].acquire();
            // A shard whose keys with a TTL are all gone leaves the map here.
            g.refresh_marks();
            let (s, e, next) = self.expire_walk(&mut g, now, pos, per_round - seen);
            seen += s;
            expired += e;
            match next {
                Some(p) => pos = p,
                None => (shard, pos) = (i + 1, 0),
            }
            if seen >= per_round {
                break;
            }
        }
        let shard = shard % self.shard_count();
        self.expire_cursor
            .store((shard as u64) << 32 | pos as u64, Relaxed);
        (seen, expired)
    }

    /// Walks the shard's buckets from `pos` until it has seen `n` keys with a TTL or
    /// `n * 20` buckets (Redis's bound), and removes the expired ones: (seen, removed,
    /// where to go on in this shard, or None at its end).
    fn expire_walk(
        &self,
        g: &mut ShardData,
        now: u64,
        pos: usize,
        n: usize,
    ) -> (usize, usize, Option<usize>) {
        // Only the block table holds entries with an expiry (inline strings have none).
        let end = g.table.num_buckets().min(pos.saturating_add(n * 20));
        let (mut seen, mut due, mut p) = (0, Vec::<Vec<u8>>::new(), pos);
        while p < end && seen < n {
            if let Some(s) = g.table.get_bucket(p) {
                if let Some(at) = s.expire_at() {
                    seen += 1;
                    if at <= now {
                        due.push(s.key().to_vec());
                    }
                }
            }
            p += 1;
        }
        for key in &due {
            self.remove_expired(g, hash(key), key);
        }
        let next = (p < g.table.num_buckets()).then_some(p);
        (seen, due.len(), next)
    }

    /// Removes `key`, found expired, from its locked shard `g`: with its store copy if
    /// clean, counted, and reported to the expired hook (its event, its DEL).
    pub(crate) fn remove_expired(&self, g: &mut ShardData, h: u64, key: &[u8]) {
        g.remove(h, key);
        self.forget_copy(g, h, key);
        g.expired += 1;
        self.expired(key);
    }
}
