//! Where a hashbrown table's probes start, kept in atomics beside the table's lock, so that
//! a prefetch for a lookup some work away needs neither the lock nor a look at the table.
//! For tables outside the keyspace (the server's tracking table); the keyspace's shards
//! keep the same figures in their data.

use crate::shard::{hint, hint_ahead, slots_end};
use hashbrown::HashTable;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A table's slot-0 end and bucket count as last noted under its lock. Read without the
/// lock they may be stale: a hint is only ever a prefetch (wrapping arithmetic, never
/// dereferenced), so a stale one loads the wrong line and nothing else.
pub struct ProbeHint<T> {
    end: AtomicUsize,
    buckets: AtomicUsize,
    entries: PhantomData<fn() -> T>,
}

impl<T> Default for ProbeHint<T> {
    fn default() -> Self {
        ProbeHint {
            end: AtomicUsize::new(0),
            buckets: AtomicUsize::new(0),
            entries: PhantomData,
        }
    }
}

impl<T> ProbeHint<T> {
    /// Notes `table`'s allocation, under its lock, if it moved since the last note: after
    /// every change that may have grown or replaced it (an insert, a clear). hashbrown
    /// keeps its allocation until it grows, so an unchanged bucket count is the same one.
    #[inline]
    pub fn note(&self, table: &HashTable<T>) {
        let buckets = table.num_buckets();
        if buckets != self.buckets.load(Ordering::Relaxed) || self.end() == 0 {
            self.end.store(slots_end(table), Ordering::Relaxed);
            self.buckets.store(buckets, Ordering::Relaxed);
        }
    }

    fn end(&self) -> usize {
        self.end.load(Ordering::Relaxed)
    }

    /// Starts loading the control bytes and the first slots a lookup of hash `h` reads.
    #[inline]
    pub fn prefetch_probe(&self, h: u64) {
        hint_ahead::<T>(self.end(), self.buckets.load(Ordering::Relaxed), h);
    }

    /// Starts loading the first slots a lookup of hash `h` reads, so that its two misses,
    /// control bytes then slot, overlap instead of following one another.
    #[inline]
    pub fn prefetch_slot(&self, h: u64) {
        hint::<T>(self.end(), self.buckets.load(Ordering::Relaxed), h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The noted figures follow the table through growth and a clear.
    #[test]
    fn follows_the_allocation() {
        let hint = ProbeHint::<u64>::default();
        let mut t: HashTable<u64> = HashTable::new();
        hint.note(&t);
        assert_eq!(hint.end(), 0, "an empty table has no slot to point at");
        for v in 0..1000u64 {
            t.insert_unique(v, v, |x| *x);
            hint.note(&t);
            assert_eq!(hint.end(), slots_end(&t));
            assert_eq!(hint.buckets.load(Ordering::Relaxed), t.num_buckets());
            hint.prefetch_probe(v);
            hint.prefetch_slot(v);
        }
        t = HashTable::new();
        hint.note(&t);
        assert_eq!(hint.end(), 0);
        hint.prefetch_probe(7);
    }
}
