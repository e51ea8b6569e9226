//! The scalable form of a sorted set (OBJECT ENCODING calls it "skiplist", as Redis does).
//!
//! Redis pairs a dict (member -> score) with a skiplist whose nodes carry spans, so ZRANK
//! and rank ranges are O(log n). This form keeps the same two views, but:
//!
//! - Elements live once, in a slab (`slots`: score + boxed member, 24 bytes), addressed by
//!   a `u32` id. Both views hold ids, so a member's bytes are stored once. The slab and
//!   the index grow without pausing (`Segments`, `IdIndex`).
//! - The member -> score view is a hash index of ids hashed by member bytes (4 bytes, 4
//!   of the hash and 1 control byte a bucket).
//! - The ordered view is an order-statistic B+tree of ids (`zset_btree.rs`): leaves hold
//!   up to 127 ids sorted by (score, member); inner nodes keep each child's element count
//!   and first id, so rank lookups, rank ranges and "how many elements sort before this
//!   bound" are O(log n).
//!
//! Why a counted B+tree rather than Redis's skiplist: a skiplist node costs a backward
//! pointer plus 1.33 (forward, span) pairs on average, ~40 bytes an element once allocator
//! rounding is counted, and each step is a cache miss. A B+tree leaf costs 4-6 bytes an
//! element and a rank walk touches ~log_64(n) nodes. The hash table and the tree together
//! cost ~15 bytes an element against ~60 for Redis's dictEntry + skiplist node.
//!
//! ZSCAN walks slab ids from the top down; compaction (after the set shrank to a quarter
//! of its slots) only moves elements from high ids to low ones, so an element present for
//! a whole scan is returned at least once, as Redis promises.

use crate::types::id_index::IdIndex;
use crate::types::segments::Segments;
use std::cmp::Ordering;
use std::sync::OnceLock;

#[path = "zset_btree.rs"]
mod btree;

use btree::{bulk_load, new_leaf, Inner, Node};

pub(super) type Id = u32;

/// The id space is u32; the last value marks "no free slot".
const NO_SLOT: u64 = u32::MAX as u64;
/// The bits of a free slot's score: a NaN (live scores never are) carrying the next free id.
const FREE_NAN: u64 = 0x7ff8_0000_0000_0000;

pub(super) fn hash(member: &[u8]) -> u64 {
    static STATE: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    use std::hash::BuildHasher;
    STATE.get_or_init(Default::default).hash_one(member)
}

struct Slot {
    score: f64,
    member: Box<[u8]>,
}

impl Slot {
    fn is_free(&self) -> bool {
        self.score.is_nan()
    }
}

/// (score, member) order: scores compare as doubles (-0 == +0), ties by member bytes.
#[inline]
fn cmp_key(s: &Slot, score: f64, member: &[u8]) -> Ordering {
    if s.score < score {
        Ordering::Less
    } else if s.score > score {
        Ordering::Greater
    } else {
        (*s.member).cmp(member)
    }
}

/// The scalable sorted set: slab + member index + counted B+tree.
pub(super) struct Tree {
    slots: Segments<Slot>,
    /// Head of the free-slot chain (`NO_SLOT` when empty). While a compaction runs, the
    /// chain holds only slots below `hole`, which it never visits again.
    free: u64,
    index: IdIndex,
    root: Node,
    /// A running compaction's cursor: the slots below it are live or in the free chain.
    /// `NOT_COMPACTING` otherwise.
    hole: usize,
}

const NOT_COMPACTING: usize = usize::MAX;
/// A compaction moves one element per operation on the set (Redis-like smoothness: each
/// move is a tree descent), and looks at no more than SCAN_PER_MOVE slots for it.
const SCAN_PER_MOVE: usize = 64;

impl Default for Tree {
    fn default() -> Self {
        Tree {
            slots: Segments::default(),
            free: NO_SLOT,
            index: IdIndex::default(),
            root: Node::Leaf(new_leaf()),
            hole: NOT_COMPACTING,
        }
    }
}

impl Tree {
    /// Builds from elements already sorted by (score, member), members distinct.
    pub(super) fn from_sorted<I>(items: I) -> Tree
    where
        I: IntoIterator<Item = (Box<[u8]>, f64)>,
    {
        let slots: Segments<Slot> = items
            .into_iter()
            .map(|(member, score)| Slot { score, member })
            .collect();
        let n = slots.len().min(u32::MAX as usize - 1);
        let mut t = Tree {
            slots,
            free: NO_SLOT,
            index: IdIndex::with_capacity(n),
            root: Node::Leaf(new_leaf()),
            hole: NOT_COMPACTING,
        };
        t.slots.truncate(n);
        for id in 0..n as Id {
            let h = hash(&t.slots[id as usize].member);
            t.index.insert(h, id);
        }
        t.root = bulk_load(n);
        t
    }

    pub(super) fn len(&self) -> usize {
        self.root.len()
    }

    fn find(&self, member: &[u8]) -> Option<Id> {
        let slots = &self.slots;
        self.index
            .find(hash(member), |i| *slots[i as usize].member == *member)
    }

    pub(super) fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|id| self.slots[id as usize].score)
    }

    /// Adds a member known to be absent. False if the set is at its size limit (4G - 2).
    pub(super) fn insert_new(&mut self, member: &[u8], score: f64) -> bool {
        let id = if self.free != NO_SLOT {
            let id = self.free as Id;
            let slot = &mut self.slots[id as usize];
            self.free = slot.score.to_bits() & !FREE_NAN;
            slot.score = score;
            slot.member = member.into();
            id
        } else {
            if self.slots.len() >= u32::MAX as usize - 1 {
                return false;
            }
            self.slots.push(Slot {
                score,
                member: member.into(),
            });
            (self.slots.len() - 1) as Id
        };
        self.index.insert(hash(member), id);
        self.tree_insert(id);
        if self.hole != NOT_COMPACTING {
            self.compact_step(1);
        }
        true
    }

    fn tree_insert(&mut self, id: Id) {
        if let Some(right) = self.root.insert(&self.slots, id) {
            let left = std::mem::replace(&mut self.root, Node::Leaf(Vec::new()));
            self.root = Node::Inner(Box::new(Inner {
                len: left.len() + right.len(),
                sizes: vec![left.len(), right.len()],
                firsts: vec![left.first(), right.first()],
                kids: vec![left, right],
            }));
        }
    }

    /// Takes element `id` out of the ordered view (it stays in the slab and the index).
    fn tree_remove(&mut self, id: Id) {
        let Tree { slots, root, .. } = self;
        let s = &slots[id as usize];
        root.remove(slots, s.score, &s.member);
        self.collapse_root();
    }

    /// A root left with one child (or none) after a removal gives way to it.
    fn collapse_root(&mut self) {
        let root = &mut self.root;
        loop {
            match root {
                Node::Inner(n) if n.kids.len() == 1 => {
                    *root = n.kids.pop().unwrap_or(Node::Leaf(new_leaf()));
                }
                Node::Inner(n) if n.kids.is_empty() => *root = Node::Leaf(new_leaf()),
                _ => break,
            }
        }
    }

    /// Changes an existing member's score (moving it in the order).
    pub(super) fn set_score(&mut self, member: &[u8], score: f64) {
        let Some(id) = self.find(member) else { return };
        self.tree_remove(id);
        self.slots[id as usize].score = score;
        self.tree_insert(id);
    }

    pub(super) fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let slots = &self.slots;
        let id = self
            .index
            .remove(hash(member), |i| *slots[i as usize].member == *member)?;
        let score = self.slots[id as usize].score;
        self.tree_remove(id);
        self.free_slot(id);
        self.maybe_compact(1);
        Some(score)
    }

    fn free_slot(&mut self, id: Id) {
        let slot = &mut self.slots[id as usize];
        slot.member = Box::default();
        if (id as usize) < self.hole {
            slot.score = f64::from_bits(FREE_NAN | self.free);
            self.free = u64::from(id);
        } else {
            // A running compaction will find it (or drop it from the top).
            slot.score = f64::from_bits(FREE_NAN | NO_SLOT);
        }
    }

    /// 0-based ascending rank of a member.
    pub(super) fn rank(&self, member: &[u8]) -> Option<usize> {
        let id = self.find(member)?;
        let s = &self.slots[id as usize];
        let (score, member) = (s.score, &*s.member);
        let mut node = &self.root;
        let mut acc = 0;
        loop {
            match node {
                Node::Leaf(v) => {
                    let pos = v.partition_point(|&x| {
                        cmp_key(&self.slots[x as usize], score, member).is_lt()
                    });
                    return (pos < v.len()).then_some(acc + pos);
                }
                Node::Inner(n) => {
                    let i = n.child_for(&self.slots, score, member);
                    acc += n.sizes[..i].iter().sum::<usize>();
                    node = &n.kids[i];
                }
            }
        }
    }

    fn nth_id(&self, mut rank: usize) -> Option<Id> {
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(v) => return v.get(rank).copied(),
                Node::Inner(n) => {
                    let (k, within) = n.child_at(rank)?;
                    rank = within;
                    node = &n.kids[k];
                }
            }
        }
    }

    pub(super) fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        let s = &self.slots[self.nth_id(rank)? as usize];
        Some((&s.member, s.score))
    }

    /// How many leading elements satisfy `pred`, which must hold for a prefix of the order.
    pub(super) fn count_prefix(&self, pred: &dyn Fn(&[u8], f64) -> bool) -> usize {
        let test = |id: Id| {
            let s = &self.slots[id as usize];
            pred(&s.member, s.score)
        };
        let mut node = &self.root;
        let mut acc = 0;
        loop {
            match node {
                Node::Leaf(v) => return acc + v.partition_point(|&x| test(x)),
                Node::Inner(n) => {
                    let j = n.firsts.partition_point(|&f| test(f));
                    if j == 0 {
                        return acc;
                    }
                    acc += n.sizes[..j - 1].iter().sum::<usize>();
                    node = &n.kids[j - 1];
                }
            }
        }
    }

    /// Calls `f` for ranks `start..end`, ascending or (rev) descending, until it returns
    /// false.
    pub(super) fn for_range<'a>(
        &'a self,
        start: usize,
        end: usize,
        rev: bool,
        f: &mut dyn FnMut(&'a [u8], f64) -> bool,
    ) {
        if start >= end {
            return;
        }
        let slots = &self.slots;
        self.root.walk(start, end, rev, &mut |id| {
            let s = &slots[id as usize];
            f(&s.member, s.score)
        });
    }

    /// Removes ranks `start..end`; returns how many went.
    pub(super) fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let mut removed = 0;
        for _ in start..end.min(self.len()) {
            let Some(id) = self.root.remove_at(start) else {
                break;
            };
            let h = hash(&self.slots[id as usize].member);
            self.index.remove(h, |i| i == id);
            self.free_slot(id);
            removed += 1;
        }
        self.collapse_root();
        self.maybe_compact(removed);
        removed
    }

    /// Elements in slab order from `cursor` down (ZSCAN): up to `count` live elements,
    /// visiting at most `count * 10` slots. Returns the next cursor (0: done).
    pub(super) fn scan<'a>(
        &'a self,
        cursor: u64,
        count: usize,
        f: &mut dyn FnMut(&'a [u8], f64),
    ) -> u64 {
        let top = self.slots.len() as u64;
        let mut hi = if cursor == 0 || cursor > top {
            top
        } else {
            cursor
        };
        let mut found = 0;
        let mut visited = 0;
        let budget = count.saturating_mul(10).max(1);
        while hi > 0 && found < count && visited < budget {
            hi -= 1;
            visited += 1;
            let s = &self.slots[hi as usize];
            if !s.is_free() {
                f(&s.member, s.score);
                found += 1;
            }
        }
        hi
    }

    /// Renumbers when three quarters of the slab are free: live elements from the top move
    /// into the lowest holes (never upwards, see the module note on ZSCAN). The moves are
    /// spread over the operations that follow, `ops` at a time: all at once, a set shrunk
    /// from 630k to 158k members held its shard for 96 ms (docs/benchmarks.md).
    fn maybe_compact(&mut self, ops: usize) {
        if self.hole != NOT_COMPACTING {
            self.compact_step(ops);
            return;
        }
        let live = self.len();
        if self.slots.len() <= 64 || live * 4 >= self.slots.len() {
            return;
        }
        if live == 0 {
            *self = Tree::default();
            return;
        }
        // The free slots leave the chain: the compaction finds them by looking.
        self.free = NO_SLOT;
        self.hole = 0;
        self.compact_step(ops);
    }

    /// Up to `moves` moves of a running compaction; ends it when no hole is left below the
    /// top live element.
    fn compact_step(&mut self, moves: usize) {
        let mut hole = self.hole;
        let mut top = self.slots.len();
        let mut budget = moves.saturating_mul(SCAN_PER_MOVE);
        for _ in 0..moves {
            while hole < top && !self.slots[hole].is_free() && budget > 0 {
                hole += 1;
                budget -= 1;
            }
            while top > hole && self.slots[top - 1].is_free() && budget > 0 {
                top -= 1;
                budget -= 1;
            }
            if budget == 0 {
                break;
            }
            if hole + 1 >= top {
                self.slots.truncate(top);
                self.hole = NOT_COMPACTING;
                self.slots.shrink_to(top);
                self.index.shrink_to(self.len());
                return;
            }
            // Move slot top-1 into hole.
            let from = (top - 1) as Id;
            let Tree {
                slots, root, index, ..
            } = self;
            let s = &slots[from as usize];
            root.replace(slots, s.score, &s.member, hole as Id);
            if let Some(e) = index.find_mut(hash(&s.member), |i| i == from) {
                *e = hole as Id;
            }
            self.slots.swap(hole, from as usize);
            top -= 1;
            hole += 1;
        }
        self.slots.truncate(top);
        self.hole = hole;
    }

    /// Heap bytes: the slots, the member index, the B+tree (about 6 bytes an element)
    /// and the members' blocks, estimated from the first `samples` live slots (0: all).
    pub(super) fn heap_bytes(&self, samples: usize) -> usize {
        let len = self.len();
        let want = crate::memory::sample_len(samples, len);
        let (mut taken, mut members) = (0, 0);
        for s in self.slots.iter().filter(|s| !s.is_free()).take(want) {
            taken += 1;
            members += crate::memory::heap_of_capacity(s.member.len());
        }
        self.slots.heap_bytes()
            + self.index.heap_bytes()
            + len * 6
            + crate::memory::extrapolate(members, taken, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn key(s: f64, m: &[u8]) -> (u64, Vec<u8>) {
        // Order-preserving bits for non-negative test scores.
        (s.to_bits(), m.to_vec())
    }

    #[test]
    fn random_ops_match_a_model() {
        random_ops_against_a_model(3000, 60_000, 997);
    }

    /// Enough members that the slab spans several segments and the index grows (and
    /// shrinks) by moving entries over later operations.
    #[test]
    fn random_ops_match_a_model_while_the_index_moves() {
        random_ops_against_a_model(40_000, 150_000, 4999);
    }

    fn random_ops_against_a_model(members: u64, steps: usize, check_every: usize) {
        let mut t = Tree::default();
        let mut model: BTreeMap<(u64, Vec<u8>), ()> = BTreeMap::new();
        let mut scores: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..steps {
            let r = rnd();
            let m = format!("m{}", r % members).into_bytes();
            let s = ((r >> 20) % 500) as f64;
            match r % 5 {
                0..=2 => {
                    if let Some(&old) = scores.get(&m) {
                        model.remove(&key(old, &m));
                        t.set_score(&m, s);
                    } else {
                        assert!(t.insert_new(&m, s));
                    }
                    model.insert(key(s, &m), ());
                    scores.insert(m, s);
                }
                3 => {
                    let got = t.remove(&m);
                    let want = scores.remove(&m);
                    if let Some(w) = want {
                        model.remove(&key(w, &m));
                    }
                    assert_eq!(got, want);
                }
                _ => {
                    if !model.is_empty() {
                        let a = (rnd() as usize) % model.len();
                        let b = (a + (rnd() as usize) % 40).min(model.len());
                        let removed = t.remove_ranks(a, b);
                        assert_eq!(removed, b - a);
                        let gone: Vec<_> = model.keys().skip(a).take(b - a).cloned().collect();
                        for k in gone {
                            model.remove(&k);
                            scores.remove(&k.1);
                        }
                    }
                }
            }
            assert_eq!(t.len(), model.len());
            if step % check_every == 0 {
                let mut all = Vec::new();
                t.for_range(0, t.len(), false, &mut |m, s| {
                    all.push(key(s, m));
                    true
                });
                let want: Vec<_> = model.keys().cloned().collect();
                assert_eq!(all, want);
                for (i, (_, m)) in want.iter().enumerate().step_by(7) {
                    assert_eq!(t.rank(m), Some(i));
                    assert_eq!(t.get(i).map(|(mm, _)| mm.to_vec()), Some(m.clone()));
                }
                let mut rev = Vec::new();
                t.for_range(3, t.len(), true, &mut |m, s| {
                    rev.push(key(s, m));
                    true
                });
                let mut w2: Vec<_> = want.iter().skip(3).cloned().collect();
                w2.reverse();
                assert_eq!(rev, w2);
                let below = t.count_prefix(&|_, s| s < 250.0);
                assert_eq!(
                    below,
                    want.iter().filter(|k| f64::from_bits(k.0) < 250.0).count()
                );
            }
        }
    }

    #[test]
    fn scan_visits_every_live_element() {
        let mut t = Tree::default();
        for i in 0..1000 {
            t.insert_new(format!("{i}").as_bytes(), i as f64);
        }
        for i in 0..900 {
            t.remove(format!("{i}").as_bytes());
        }
        let mut seen = std::collections::HashSet::new();
        let mut c = 0;
        loop {
            c = t.scan(c, 10, &mut |m, _| {
                seen.insert(m.to_vec());
            });
            if c == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 100);
    }

    /// A compaction runs over the operations after the set fell to a quarter of its slots:
    /// inserts, removals and scans meanwhile see the right set, an element present for a
    /// whole scan is returned, and the slab ends no larger than the live elements.
    #[test]
    fn a_compaction_spreads_over_later_operations() {
        let mut t = Tree::default();
        let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let m = |i: u32| format!("member-{i}").into_bytes();
        for i in 0..20_000u32 {
            let s = f64::from(i.wrapping_mul(2_654_435_761) % 1000);
            assert!(t.insert_new(&m(i), s));
            model.insert(m(i), s);
        }
        // Remove 4 in 5 (interleaved ids, so holes are everywhere).
        for i in (0..20_000u32).filter(|i| i % 5 != 0) {
            assert_eq!(t.remove(&m(i)), model.remove(&m(i)));
        }
        assert_ne!(t.hole, NOT_COMPACTING, "compaction did not start");
        let survivors: Vec<Vec<u8>> = model.keys().take(500).cloned().collect();
        let (mut cursor, mut seen, mut ops) = (0, std::collections::HashSet::new(), 0);
        let mut next = 20_000u32;
        while t.hole != NOT_COMPACTING {
            // One insert and one removal of an element not among `survivors`, one scan step.
            let s = f64::from(next % 777);
            assert!(t.insert_new(&m(next), s));
            model.insert(m(next), s);
            let victim = model.keys().nth(600).cloned().expect("enough members");
            assert_eq!(t.remove(&victim), model.remove(&victim));
            next += 1;
            ops += 1;
            cursor = t.scan(cursor, 20, &mut |mm, _| {
                seen.insert(mm.to_vec());
            });
            if ops % 97 == 0 {
                for (mm, &sc) in model.iter().step_by(13) {
                    assert_eq!(t.score(mm), Some(sc));
                }
            }
            assert!(ops < 20_000, "the compaction never ended");
        }
        assert_eq!(t.len(), model.len());
        // Left: the live elements, and slots freed below the cursor while it ran, each in
        // the free chain for the next insert.
        let free_in_slab = (0..t.slots.len()).filter(|&i| t.slots[i].is_free()).count();
        let (mut chain, mut f) = (0, t.free);
        while f != NO_SLOT {
            chain += 1;
            f = t.slots[f as usize].score.to_bits() & !FREE_NAN;
        }
        assert_eq!(chain, free_in_slab, "a free slot is out of the chain");
        assert_eq!(t.slots.len(), model.len() + chain);
        assert!(chain <= ops);
        let mut all = Vec::new();
        t.for_range(0, t.len(), false, &mut |mm, sc| {
            all.push((sc.to_bits(), mm.to_vec()));
            true
        });
        let mut want: Vec<_> = model
            .iter()
            .map(|(mm, sc)| (sc.to_bits(), mm.clone()))
            .collect();
        want.sort();
        assert_eq!(all, want);
        for (i, (_, mm)) in want.iter().enumerate().step_by(11) {
            assert_eq!(t.rank(mm), Some(i));
        }
        // The scan that ran through the compaction, finished, saw every survivor.
        while cursor != 0 {
            cursor = t.scan(cursor, 20, &mut |mm, _| {
                seen.insert(mm.to_vec());
            });
        }
        for sv in &survivors {
            assert!(
                seen.contains(sv),
                "scan missed {}",
                String::from_utf8_lossy(sv)
            );
        }
    }
}
