//! The embedded table's own memory accounting. A [`Table`](crate::Table) runs inside
//! someone else's process, whose allocator it cannot count, so with a memory budget it
//! adds up what its entries take (`crate::memory::entry_bytes`) instead.
//!
//! Each shard keeps its exact sum under its lock, measuring a key before and after every
//! change of it; collections edited in place through a [`Locked`](crate::Locked) guard are
//! measured when the guard lets go (or before the key's next change). A shard folds its
//! changes into the table's total once they reach `fold` bytes, so writers touch the shared
//! counter rarely; the total is within `fold` bytes a shard of the exact sum. Collections
//! are measured from their first `samples` elements (as MEMORY USAGE): the same value
//! always measures the same, so sums never drift.

use crate::shard::ShardData;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

/// What the shards of one accounted table share: the table's bytes, as folded in by its
/// shards.
#[derive(Debug, Default)]
pub(crate) struct Books {
    total: AtomicI64,
}

impl Books {
    pub(crate) fn total(&self) -> usize {
        self.total.load(Relaxed).max(0) as usize
    }
}

/// One shard's part of the books.
pub(crate) struct Ledger {
    books: Arc<Books>,
    /// The shard folds its changes in once they reach this many bytes.
    fold: usize,
    /// Elements a collection is measured from.
    samples: usize,
    /// The shard's entries' bytes, exactly (as last measured).
    bytes: usize,
    /// Changes not yet folded into `books.total`.
    unfolded: isize,
    /// Keys being edited in place: (hash, key, bytes before the edit).
    dirty: Vec<(u64, Box<[u8]>, usize)>,
}

impl Ledger {
    pub(crate) fn samples(&self) -> usize {
        self.samples
    }

    /// Moves the changes not yet folded into the table's total.
    fn fold_in(&mut self) {
        self.books.total.fetch_add(self.unfolded as i64, Relaxed);
        self.unfolded = 0;
    }
}

impl ShardData {
    /// Starts accounting this shard in `books`, counting what it holds now; it folds its
    /// changes in every `fold` bytes and measures collections from `samples` elements.
    pub(crate) fn open_ledger(&mut self, books: &Arc<Books>, fold: usize, samples: usize) {
        self.close_ledger();
        let bytes: usize = self
            .iter()
            .map(|e| crate::memory::entry_bytes(&e, samples))
            .sum();
        books.total.fetch_add(bytes as i64, Relaxed);
        self.ledger = Some(Box::new(Ledger {
            books: books.clone(),
            fold: fold.max(1),
            samples,
            bytes,
            unfolded: 0,
            dirty: Vec::new(),
        }));
    }

    /// The shard's bytes, exactly (0 when not accounted).
    pub(crate) fn ledger_bytes(&self) -> usize {
        self.ledger.as_ref().map_or(0, |l| l.bytes)
    }

    /// Stops accounting this shard, taking its bytes out of the total.
    pub(crate) fn close_ledger(&mut self) {
        self.settle_all();
        if let Some(l) = self.ledger.take() {
            let folded = l.bytes as i64 - l.unfolded as i64;
            l.books.total.fetch_sub(folded, Relaxed);
        }
    }

    /// Runs `f`, a change of `key` (hash `h`), charging the change of the key's bytes.
    #[inline]
    pub(crate) fn accounted<R>(&mut self, h: u64, key: &[u8], f: impl FnOnce(&mut Self) -> R) -> R {
        let Some(samples) = self.ledger.as_ref().map(|l| l.samples) else {
            return f(self);
        };
        self.settle(h, key);
        let before = self.key_bytes(h, key, samples);
        let r = f(self);
        let after = self.key_bytes(h, key, samples);
        self.charge(after as isize - before as isize);
        r
    }

    fn key_bytes(&self, h: u64, key: &[u8], samples: usize) -> usize {
        self.find(h, key)
            .map_or(0, |e| crate::memory::entry_bytes(&e, samples))
    }

    /// Adds `delta` bytes to the shard's sum, folding into the total when due.
    pub(crate) fn charge(&mut self, delta: isize) {
        let Some(l) = &mut self.ledger else {
            return;
        };
        l.bytes = l.bytes.saturating_add_signed(delta);
        l.unfolded += delta;
        if l.unfolded.unsigned_abs() >= l.fold {
            l.fold_in();
        }
    }

    /// Before `key` is edited in place: remembers its bytes, to charge the difference when
    /// the edit is over (`settle`). True when the shard is accounted (the edit must then
    /// be settled).
    #[inline]
    pub(crate) fn mark_dirty(&mut self, h: u64, key: &[u8]) -> bool {
        let Some(samples) = self.ledger.as_ref().map(|l| l.samples) else {
            return false;
        };
        let dirty = self
            .ledger
            .as_ref()
            .is_some_and(|l| l.dirty.iter().any(|(dh, k, _)| *dh == h && **k == *key));
        if dirty {
            return true; // the bytes before the first edit are the ones to compare with
        }
        let before = self.key_bytes(h, key, samples);
        if let Some(l) = &mut self.ledger {
            l.dirty.push((h, key.into(), before));
        }
        true
    }

    /// Charges the edit of `key` in place, if one is pending.
    fn settle(&mut self, h: u64, key: &[u8]) {
        let Some(l) = &mut self.ledger else {
            return;
        };
        let Some(i) = l
            .dirty
            .iter()
            .position(|(dh, k, _)| *dh == h && **k == *key)
        else {
            return;
        };
        let (_, key, before) = l.dirty.swap_remove(i);
        let samples = l.samples;
        let now = self.key_bytes(h, &key, samples);
        self.charge(now as isize - before as isize);
    }

    /// Charges every pending edit in place (a `Locked` guard letting go).
    #[inline]
    pub(crate) fn settle_all(&mut self) {
        let Some(l) = &mut self.ledger else {
            return;
        };
        if l.dirty.is_empty() {
            return;
        }
        let samples = l.samples;
        for (h, key, before) in std::mem::take(&mut l.dirty) {
            let now = self.key_bytes(h, &key, samples);
            self.charge(now as isize - before as isize);
        }
    }

    /// Folds the shard's pending changes into the total now, so that the total is exact
    /// for this shard (eviction that finds nothing left in RAM asks for it: the pending
    /// changes of many shards together can exceed a small limit).
    pub(crate) fn fold_now(&mut self) {
        self.settle_all();
        if let Some(l) = &mut self.ledger {
            l.fold_in();
        }
    }

    /// The shard is being emptied: its bytes leave the total.
    pub(crate) fn forget_bytes(&mut self) {
        let bytes = match &mut self.ledger {
            Some(l) => {
                l.dirty.clear();
                l.bytes
            }
            None => return,
        };
        self.charge(-(bytes as isize));
    }

    /// SWAPDB: the shards exchanged their entries, so they exchange their sums (their
    /// books are the keyspace's, so the total stands).
    pub(crate) fn swap_bytes(&mut self, other: &mut ShardData) {
        self.settle_all();
        other.settle_all();
        let mine = self.ledger.as_ref().map_or(0, |l| l.bytes);
        let theirs = other.ledger.as_ref().map_or(0, |l| l.bytes);
        self.charge(theirs as isize - mine as isize);
        other.charge(mine as isize - theirs as isize);
    }
}

#[cfg(test)]
mod tests {
    use crate::locked::Ttl;
    use crate::{Budget, Policy, Table};
    use std::time::Duration;

    /// The running sums stay equal to a count from scratch through every kind of change:
    /// strings moving between the inline and block forms, expiries set and cleared,
    /// collections edited in place (growing past their compact forms, emptied), deletes,
    /// expiry, transactions editing the same key twice, and a flush.
    #[test]
    fn the_books_match_a_recount_after_every_kind_of_change() {
        let t = Table::with_shards(3);
        let budget = Budget::new(1 << 30, Policy::NoEviction);
        t.set_memory_budget(Some(budget));
        let recount = |t: &Table| {
            let running = t.memory_used();
            t.set_memory_budget(Some(budget));
            assert_eq!(running, t.memory_used(), "running sum against a recount");
            running
        };
        for i in 0..300u32 {
            let k = format!("k{}", i % 50);
            match i % 10 {
                0 => t.set(k.as_bytes(), b"short"),
                1 => t.set(k.as_bytes(), &vec![b'x'; (i % 90) as usize]),
                2 => t.set_with_ttl(k.as_bytes(), b"v", Duration::from_millis(u64::from(i % 3))),
                3 => drop(t.incr(k.as_bytes(), 1)),
                4 => drop(t.with_hash_mut(format!("h{}", i % 7).as_bytes(), |h, enc| {
                    for f in 0..(i % 200) {
                        h.set(
                            format!("field:{f}").as_bytes(),
                            &vec![b'v'; (f % 70) as usize],
                            enc,
                        );
                    }
                })),
                5 => drop(t.with_set_mut(format!("s{}", i % 5).as_bytes(), |s, enc| {
                    for m in 0..(i % 600) {
                        s.add(format!("{m}").as_bytes(), enc);
                    }
                })),
                6 => drop(t.delete(k.as_bytes())),
                7 => drop(t.expire(k.as_bytes(), Duration::from_secs(100))),
                8 => drop(t.persist(k.as_bytes())),
                _ => t.transaction(&[k.as_str(), "h1", "t"], |l| {
                    if let Ok(Some(s)) = l.str_mut(k.as_bytes()) {
                        s.extend_from_slice(b"appended");
                    }
                    if let Ok(h) = l.hash_mut_or_create(b"h1") {
                        h.set(b"f", b"1", &Default::default());
                    }
                    if let Ok(Some(h)) = l.hash_mut(b"h1") {
                        h.remove(b"f");
                    }
                    l.set_str(b"t", b"moved", Ttl::Clear);
                }),
            }
            if i % 50 == 49 {
                recount(&t);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
        t.purge_expired();
        assert!(recount(&t) > 0);
        t.clear();
        assert_eq!(recount(&t), 0);
        t.set_memory_budget(None);
        assert_eq!(t.memory_used(), 0);
    }
}
