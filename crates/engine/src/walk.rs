//! Walking one shard's entries a batch per hold of its lock (an RDB export), cold ones
//! (tiering) included.

use crate::keyspace::{Captured, Db};
use crate::shard::hash;

impl Db {
    /// Starts a walk of shard `idx` for a reader that must not hold its lock for long (an
    /// RDB export, a replica's full sync): the keys not expired at `now` are listed under
    /// one hold of the lock, then [`ShardWalk::next_batch`] reads their entries a batch per
    /// hold. Each entry is read whole under the lock and given once; keys deleted or
    /// expired meanwhile are skipped, keys added meanwhile are not seen. Not a point in
    /// time across shards or batches: the snapshot capture is.
    pub fn walk_shard(&self, idx: usize, now: u64) -> ShardWalk<'_> {
        let mut walk = ShardWalk {
            db: self,
            idx,
            now,
            keys: Vec::new(),
            ends: Vec::new(),
            next: 0,
        };
        if let Some(shard) = self.allocated().get(idx) {
            let g = shard.acquire();
            for e in g.iter().filter(|e| !e.is_expired(now)) {
                walk.keys.extend_from_slice(e.key());
                walk.ends.push(walk.keys.len());
            }
            self.each_cold_key(&g, idx, &mut |key| {
                walk.keys.extend_from_slice(key);
                walk.ends.push(walk.keys.len());
                true
            });
        }
        walk
    }
}

/// A walk of one shard's entries in batches (see [`Db::walk_shard`]).
pub struct ShardWalk<'a> {
    db: &'a Db,
    idx: usize,
    now: u64,
    /// The keys listed at the start, back to back; `ends[i]` is where key i ends.
    keys: Vec<u8>,
    ends: Vec<usize>,
    next: usize,
}

impl ShardWalk<'_> {
    /// Keys listed at the start of the walk.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Calls `f` with the entries of the next `batch` keys still present and live, all
    /// under one hold of the shard's lock (cold ones read in place, as `Captured::Value`).
    /// False once every key has been visited.
    pub fn next_batch(&mut self, batch: usize, mut f: impl FnMut(Captured<'_>)) -> bool {
        if self.next >= self.ends.len() {
            return false;
        }
        let end = self.next.saturating_add(batch.max(1)).min(self.ends.len());
        let g = self.db.shard_ref(self.idx).acquire();
        for i in self.next..end {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            let key = &self.keys[start..self.ends[i]];
            if let Some(e) = g.find(hash(key), key) {
                if !e.is_expired(self.now) {
                    f(Captured::Entry(e));
                }
            } else if g.cold != 0 {
                if let Some(o) = self.db.get_cold(self.idx, key) {
                    if o.expire_at.is_none_or(|at| at > self.now) {
                        f(Captured::Value(key, &o));
                    }
                }
            }
        }
        self.next = end;
        true
    }
}
