//! The hash index of a large collection: `u32` ids of elements kept in the collection's
//! own storage (a hash's or set's elements, a sorted set's slab), found by hash.
//!
//! It grows without a pause. A full hashbrown table moves every entry into one twice its
//! size at once: with the entries hashed again from their elements, that was 170 ms for a
//! hash of 2M fields, during which the shard stays locked (docs/benchmarks.md, "Large
//! collections grow without a pause"). Here, as in Redis's incremental rehashing, the
//! bigger table is allocated and the old one's entries move over a few at a time with each
//! insert and remove that follows; until they have all moved, a lookup looks in both.

use hashbrown::HashTable;

/// Tables below this many entries grow at once, as hashbrown does: the pause is at most
/// tens of microseconds, and small collections carry no second table.
const GROW_AT_ONCE_BELOW: usize = 8192;
/// At most this many entries move per insert or remove, looking at no more than
/// VISIT_PER_STEP buckets of the old table. The new table has room for twice the old
/// table's entries, and the move ends within len / MOVE_PER_STEP operations, so it never
/// fills (and grows at once) while the move runs. Two per operation, as Redis moves about
/// one bucket per operation: 16 at a time raised SADD's and ZADD's p99 at -P 16 by half
/// (docs/benchmarks.md).
const MOVE_PER_STEP: usize = 2;
/// Buckets looked at cost little (their control bytes, read in order); a table left by a
/// shrink is at most 1/8 full, so a step must look past many empty ones.
const VISIT_PER_STEP: usize = 64;

/// An entry: the element's id and 32 bits of its hash. Keeping the hash (4 bytes more a
/// bucket) lets entries move without reading their elements, which are scattered in
/// memory: moving two entries at a time, reading each element to hash it again cost 1.6x
/// what hashbrown's one-shot rehash did, and SADD lost 12% of its throughput while sets
/// grew (docs/benchmarks.md). The stored hash also rules out most elements a probe would
/// otherwise compare.
type Entry = (u32, u32);

/// The table hash of an entry with stored hash `x`: its low bits place the entry, its top 7
/// (x's top bits) are hashbrown's tag, independent of the place below 2^25 buckets.
#[inline]
fn spread(x: u32) -> u64 {
    (x as u64) << 32 | x as u64
}

#[inline]
fn rehash(e: &Entry) -> u64 {
    spread(e.1)
}

#[derive(Clone, Default)]
pub(crate) struct IdIndex {
    cur: HashTable<Entry>,
    /// The table being emptied into `cur`, while a move is running.
    old: Option<Box<Old>>,
}

#[derive(Clone)]
struct Old {
    table: HashTable<Entry>,
    /// The next bucket of `table` to move: the ones below it are empty.
    next: usize,
}

impl IdIndex {
    pub fn with_capacity(n: usize) -> Self {
        IdIndex {
            cur: HashTable::with_capacity(n),
            old: None,
        }
    }

    /// Heap bytes of the tables (both during a move): hashbrown's slots, a control byte
    /// each and a group's worth more.
    pub fn heap_bytes(&self) -> usize {
        let table = |t: &HashTable<Entry>| match t.num_buckets() {
            0 => 0,
            n => crate::memory::size_class(n * (std::mem::size_of::<Entry>() + 1) + 16),
        };
        table(&self.cur) + self.old.as_ref().map_or(0, |o| table(&o.table))
    }

    /// Entries the tables have room for without growing (both tables during a move).
    pub fn capacity(&self) -> usize {
        self.cur.capacity() + self.old.as_ref().map_or(0, |o| o.table.capacity())
    }

    /// The id under hash `h` that `eq` accepts (it is asked only about ids whose stored
    /// hash matches).
    pub fn find(&self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let x = h as u32;
        let mut is = |e: &Entry| e.1 == x && eq(e.0);
        if let Some(e) = self.cur.find(spread(x), &mut is) {
            return Some(e.0);
        }
        Some(self.old.as_ref()?.table.find(spread(x), is)?.0)
    }

    pub fn find_mut(&mut self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<&mut u32> {
        let x = h as u32;
        let mut is = |e: &Entry| e.1 == x && eq(e.0);
        let IdIndex { cur, old } = self;
        if let Some(e) = cur.find_mut(spread(x), &mut is) {
            return Some(&mut e.0);
        }
        Some(&mut old.as_mut()?.table.find_mut(spread(x), is)?.0)
    }

    /// Adds `id`, known to be absent, under hash `h`.
    pub fn insert(&mut self, h: u64, id: u32) {
        if self.old.is_some() {
            self.step();
        } else if self.cur.len() == self.cur.capacity() && self.cur.len() >= GROW_AT_ONCE_BELOW {
            self.start_move(self.cur.len() * 2);
        }
        let x = h as u32;
        self.cur.insert_unique(spread(x), (id, x), rehash);
    }

    /// Removes and returns the id under hash `h` that `eq` accepts.
    pub fn remove(&mut self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let x = h as u32;
        let mut is = |e: &Entry| e.1 == x && eq(e.0);
        let IdIndex { cur, old } = self;
        let (id, _) = match cur.find_entry(spread(x), &mut is) {
            Ok(e) => e.remove().0,
            Err(_) => {
                old.as_mut()?
                    .table
                    .find_entry(spread(x), is)
                    .ok()?
                    .remove()
                    .0
            }
        };
        self.step();
        Some(id)
    }

    /// Gives memory back after deletions: the entries move into a table for `min` (at least
    /// the current entries), in the same steps as growth. During a move this waits: the
    /// caller asks again after later removals.
    pub fn shrink_to(&mut self, min: usize) {
        if self.old.is_some() {
            return;
        }
        let len = self.cur.len();
        let room = min.max(len) * 2;
        if len < GROW_AT_ONCE_BELOW {
            self.cur.shrink_to(min, rehash);
        } else if room < self.cur.capacity() {
            self.start_move(room);
        }
    }

    /// Makes `cur` a new table with room for `room` entries, and the present one the table
    /// to empty.
    fn start_move(&mut self, room: usize) {
        let table = std::mem::replace(&mut self.cur, HashTable::with_capacity(room));
        self.old = Some(Box::new(Old { table, next: 0 }));
        self.step();
    }

    /// Moves up to MOVE_PER_STEP entries of the old table into `cur`; drops the old table
    /// once it is empty.
    fn step(&mut self) {
        let IdIndex { cur, old } = self;
        let Some(o) = old.as_deref_mut() else { return };
        let end = o.table.num_buckets().min(o.next + VISIT_PER_STEP);
        let mut moved = 0;
        while o.next < end && moved < MOVE_PER_STEP {
            if let Ok(e) = o.table.get_bucket_entry(o.next) {
                let (e, _) = e.remove();
                cur.insert_unique(rehash(&e), e, rehash);
                moved += 1;
            }
            o.next += 1;
        }
        if o.table.is_empty() {
            *old = None;
        }
    }

    #[cfg(test)]
    fn moving(&self) -> bool {
        self.old.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// An id's hash, with bits 4-7 cleared so that ids share stored hashes and probes meet
    /// other ids' groups.
    fn h(id: &u32) -> u64 {
        (*id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & !0xF0
    }

    #[test]
    fn a_growing_index_moves_a_few_entries_per_insert_and_finds_all_meanwhile() {
        let mut ix = IdIndex::with_capacity(0);
        // (entries when the move started, inserts it took) for each move.
        let mut moves: Vec<(usize, usize)> = Vec::new();
        for id in 0..200_000u32 {
            let before = ix.moving();
            let (len, cap) = (ix.cur.len(), ix.cur.capacity());
            ix.insert(h(&id), id);
            match (before, ix.moving()) {
                (false, true) => {
                    moves.push((len, 1));
                    // Every entry is still found, in one table or the other.
                    for k in (0..=id).step_by(97) {
                        assert_eq!(ix.find(h(&k), |x| x == k), Some(k));
                    }
                }
                (true, _) => {
                    if let Some(m) = moves.last_mut() {
                        m.1 += 1;
                    }
                    // The new table never grows by itself while the old one empties.
                    assert_eq!(ix.cur.capacity(), cap, "grew during a move at {id}");
                }
                (false, false) => {}
            }
        }
        assert!(
            moves.len() >= 4,
            "grew incrementally only {} times",
            moves.len()
        );
        for &(len, took) in &moves {
            assert!(len >= GROW_AT_ONCE_BELOW);
            // About len / MOVE_PER_STEP (more where a step's visits find fewer entries),
            // and always under len, the room the new table keeps for inserts.
            assert!(took <= len * 6 / 10, "{len} entries took {took} inserts");
        }
        for id in 0..200_000u32 {
            assert_eq!(ix.find(h(&id), |x| x == id), Some(id), "lost {id}");
        }
    }

    /// Random inserts, removes, re-numberings and shrinks against a HashMap model.
    #[test]
    fn matches_a_model_through_growth_and_shrinking() {
        let mut ix = IdIndex::with_capacity(0);
        let mut model: HashMap<u32, ()> = HashMap::new();
        let mut x = 0x1234_5678u32;
        let mut rand = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for round in 0..6 {
            // Grow to ~60k, then delete down to a few thousand, shrinking along the way.
            for _ in 0..60_000 {
                let id = rand() % 1_000_000;
                if model.insert(id, ()).is_none() {
                    ix.insert(h(&id), id);
                }
            }
            let mut ids: Vec<u32> = model.keys().copied().collect();
            ids.sort_unstable();
            for (n, id) in ids.into_iter().enumerate() {
                if n % 16 == round {
                    continue;
                }
                assert_eq!(ix.remove(h(&id), |x| x == id), Some(id));
                model.remove(&id);
                // As the collections do: once the table is mostly empty.
                if model.len() * 8 < ix.capacity() {
                    ix.shrink_to(model.len());
                }
            }
            // Re-numbering in place (as a compaction does): the entry keeps its hash.
            let some: Vec<u32> = model.keys().take(100).copied().collect();
            for id in some {
                let slot = ix.find_mut(h(&id), |x| x == id).expect("present");
                assert_eq!(*slot, id);
            }
            for id in 0..1_000_000u32 {
                let want = model.contains_key(&id).then_some(id);
                if want.is_some() || id % 101 == 0 {
                    assert_eq!(ix.find(h(&id), |x| x == id), want, "round {round} id {id}");
                }
            }
            assert_eq!(ix.remove(h(&1_000_001), |x| x == 1_000_001), None);
            // A move runs only as operations come: a few thousand more end the shrink.
            for id in 2_000_000..2_005_000u32 {
                ix.insert(h(&id), id);
                assert_eq!(ix.remove(h(&id), |x| x == id), Some(id));
            }
            assert!(!ix.moving());
            let most = 8 * model.len().max(GROW_AT_ONCE_BELOW);
            assert!(ix.capacity() < most, "round {round}: {}", ix.capacity());
        }
    }
}
