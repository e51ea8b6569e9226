//! The sorted set's ordered view: an order-statistic B+tree of slab ids. Leaves hold ids
//! sorted by (score, member); inner nodes keep each child's element count and first id, so
//! rank lookups and rank ranges are O(log n). Insert splits, removal merges or rebalances.

use super::{cmp_key, Id, Slot};
use crate::types::segments::Segments;

/// Most ids in a leaf (capacity is one more, so an insert before a split never reallocates).
const LEAF_MAX: usize = 127;
const LEAF_MIN: usize = LEAF_MAX / 4;
/// Most children of an inner node.
const INNER_MAX: usize = 32;
const INNER_MIN: usize = INNER_MAX / 4;

pub(super) enum Node {
    Leaf(Vec<Id>),
    Inner(Box<Inner>),
}

pub(super) struct Inner {
    pub(super) len: usize,
    pub(super) kids: Vec<Node>,
    pub(super) sizes: Vec<usize>,
    pub(super) firsts: Vec<Id>,
}

pub(super) fn new_leaf() -> Vec<Id> {
    Vec::with_capacity(LEAF_MAX + 1)
}

impl Node {
    pub(super) fn len(&self) -> usize {
        match self {
            Node::Leaf(v) => v.len(),
            Node::Inner(n) => n.len,
        }
    }

    /// The first id; only called on non-empty nodes.
    pub(super) fn first(&self) -> Id {
        match self {
            Node::Leaf(v) => v.first().copied().unwrap_or(0),
            Node::Inner(n) => n.firsts.first().copied().unwrap_or(0),
        }
    }

    fn underfull(&self) -> bool {
        match self {
            Node::Leaf(v) => v.len() < LEAF_MIN,
            Node::Inner(n) => n.kids.len() < INNER_MIN,
        }
    }

    pub(super) fn insert(&mut self, slots: &Segments<Slot>, id: Id) -> Option<Node> {
        let s = &slots[id as usize];
        let (score, member) = (s.score, &*s.member);
        match self {
            Node::Leaf(v) => {
                let pos =
                    v.partition_point(|&x| cmp_key(&slots[x as usize], score, member).is_lt());
                v.insert(pos, id);
                if v.len() <= LEAF_MAX {
                    return None;
                }
                // Appending at the end (rising scores) or the front keeps the full leaf full.
                let mid = if pos + 1 == v.len() {
                    LEAF_MAX
                } else if pos == 0 {
                    1
                } else {
                    v.len() / 2
                };
                let mut right = new_leaf();
                right.extend(v.drain(mid..));
                Some(Node::Leaf(right))
            }
            Node::Inner(n) => {
                let i = n.child_for(slots, score, member);
                let split = n.kids[i].insert(slots, id);
                n.len += 1;
                n.sizes[i] = n.kids[i].len();
                n.firsts[i] = n.kids[i].first();
                if let Some(right) = split {
                    n.firsts.insert(i + 1, right.first());
                    n.sizes.insert(i + 1, right.len());
                    n.kids.insert(i + 1, right);
                    if n.kids.len() > INNER_MAX {
                        let mid = n.kids.len() / 2;
                        let kids: Vec<Node> = n.kids.drain(mid..).collect();
                        let sizes: Vec<usize> = n.sizes.drain(mid..).collect();
                        let firsts: Vec<Id> = n.firsts.drain(mid..).collect();
                        let moved: usize = sizes.iter().sum();
                        n.len -= moved;
                        return Some(Node::Inner(Box::new(Inner {
                            len: moved,
                            kids,
                            sizes,
                            firsts,
                        })));
                    }
                }
                None
            }
        }
    }

    /// Removes the element with this key; returns its id.
    pub(super) fn remove(
        &mut self,
        slots: &Segments<Slot>,
        score: f64,
        member: &[u8],
    ) -> Option<Id> {
        match self {
            Node::Leaf(v) => {
                let pos =
                    v.partition_point(|&x| cmp_key(&slots[x as usize], score, member).is_lt());
                match v.get(pos) {
                    Some(&x) if cmp_key(&slots[x as usize], score, member).is_eq() => {
                        Some(v.remove(pos))
                    }
                    _ => None,
                }
            }
            Node::Inner(n) => {
                let i = n.child_for(slots, score, member);
                let id = n.kids[i].remove(slots, score, member)?;
                n.removed_under(i);
                Some(id)
            }
        }
    }

    /// Removes the element at `rank` (relative to this node); returns its id. Finds it by
    /// the children's sizes alone: no element is read or compared, so popping the ends
    /// (ZPOPMIN, ZREMRANGEBYRANK) costs no cache miss in the slab.
    pub(super) fn remove_at(&mut self, rank: usize) -> Option<Id> {
        match self {
            Node::Leaf(v) => (rank < v.len()).then(|| v.remove(rank)),
            Node::Inner(n) => {
                let (i, within) = n.child_at(rank)?;
                let id = n.kids[i].remove_at(within)?;
                n.removed_under(i);
                Some(id)
            }
        }
    }

    /// Replaces the id stored for this key (slab compaction).
    pub(super) fn replace(
        &mut self,
        slots: &Segments<Slot>,
        score: f64,
        member: &[u8],
        new_id: Id,
    ) {
        match self {
            Node::Leaf(v) => {
                let pos =
                    v.partition_point(|&x| cmp_key(&slots[x as usize], score, member).is_lt());
                if let Some(x) = v.get_mut(pos) {
                    *x = new_id;
                }
            }
            Node::Inner(n) => {
                let i = n.child_for(slots, score, member);
                n.kids[i].replace(slots, score, member, new_id);
                n.firsts[i] = n.kids[i].first();
            }
        }
    }

    /// Calls `f` for the ids at ranks `start..end` (relative to this node) until it
    /// returns false; returns false if stopped.
    pub(super) fn walk(
        &self,
        start: usize,
        end: usize,
        rev: bool,
        f: &mut dyn FnMut(Id) -> bool,
    ) -> bool {
        match self {
            Node::Leaf(v) => {
                let part = &v[start.min(v.len())..end.min(v.len())];
                if rev {
                    part.iter().rev().all(|&x| f(x))
                } else {
                    part.iter().all(|&x| f(x))
                }
            }
            Node::Inner(n) => {
                let mut visit = |k: usize, off: usize| {
                    let size = n.sizes[k];
                    if off < end && off + size > start {
                        let s = start.saturating_sub(off);
                        let e = (end - off).min(size);
                        n.kids[k].walk(s, e, rev, f)
                    } else {
                        true
                    }
                };
                if rev {
                    let mut off = n.len;
                    for k in (0..n.kids.len()).rev() {
                        off -= n.sizes[k];
                        if off + n.sizes[k] <= start {
                            break;
                        }
                        if !visit(k, off) {
                            return false;
                        }
                    }
                } else {
                    let mut off = 0;
                    for k in 0..n.kids.len() {
                        if off >= end {
                            break;
                        }
                        if !visit(k, off) {
                            return false;
                        }
                        off += n.sizes[k];
                    }
                }
                true
            }
        }
    }
}

impl Inner {
    /// The child holding `rank` (relative to this node), and the rank within it.
    pub(super) fn child_at(&self, mut rank: usize) -> Option<(usize, usize)> {
        let mut k = 0;
        while k < self.sizes.len() && rank >= self.sizes[k] {
            rank -= self.sizes[k];
            k += 1;
        }
        (k < self.kids.len()).then_some((k, rank))
    }

    /// After one element went from child `i`: the counts, its first id, and its size.
    fn removed_under(&mut self, i: usize) {
        self.len -= 1;
        self.sizes[i] -= 1;
        if self.sizes[i] == 0 {
            self.kids.remove(i);
            self.sizes.remove(i);
            self.firsts.remove(i);
        } else {
            self.firsts[i] = self.kids[i].first();
            self.rebalance(i);
        }
    }

    /// The child whose key range holds (score, member).
    pub(super) fn child_for(&self, slots: &Segments<Slot>, score: f64, member: &[u8]) -> usize {
        self.firsts
            .partition_point(|&f| !cmp_key(&slots[f as usize], score, member).is_gt())
            .saturating_sub(1)
    }

    /// After a removal under child `i`: merge it with a neighbour or even them out.
    fn rebalance(&mut self, i: usize) {
        if !self.kids[i].underfull() || self.kids.len() < 2 {
            return;
        }
        let a = if i + 1 < self.kids.len() { i } else { i - 1 };
        let (left, right) = self.kids.split_at_mut(a + 1);
        let (l, r) = (&mut left[a], &mut right[0]);
        let merged = match (l, r) {
            (Node::Leaf(l), Node::Leaf(r)) => {
                if l.len() + r.len() <= LEAF_MAX {
                    l.append(r);
                    true
                } else {
                    let target = (l.len() + r.len()) / 2;
                    if l.len() > target {
                        let moved: Vec<Id> = l.drain(target..).collect();
                        r.splice(0..0, moved);
                    } else {
                        let k = target - l.len();
                        l.extend(r.drain(..k));
                    }
                    false
                }
            }
            (Node::Inner(l), Node::Inner(r)) => {
                if l.kids.len() + r.kids.len() <= INNER_MAX {
                    l.kids.append(&mut r.kids);
                    l.sizes.append(&mut r.sizes);
                    l.firsts.append(&mut r.firsts);
                    l.len += r.len;
                    true
                } else {
                    let target = (l.kids.len() + r.kids.len()) / 2;
                    if l.kids.len() > target {
                        let kids: Vec<Node> = l.kids.drain(target..).collect();
                        let sizes: Vec<usize> = l.sizes.drain(target..).collect();
                        let firsts: Vec<Id> = l.firsts.drain(target..).collect();
                        let moved: usize = sizes.iter().sum();
                        l.len -= moved;
                        r.len += moved;
                        r.kids.splice(0..0, kids);
                        r.sizes.splice(0..0, sizes);
                        r.firsts.splice(0..0, firsts);
                    } else {
                        let k = target - l.kids.len();
                        let moved: usize = r.sizes[..k].iter().sum();
                        l.kids.extend(r.kids.drain(..k));
                        l.sizes.extend(r.sizes.drain(..k));
                        l.firsts.extend(r.firsts.drain(..k));
                        l.len += moved;
                        r.len -= moved;
                    }
                    false
                }
            }
            // Siblings are always at the same depth.
            _ => false,
        };
        if merged {
            self.kids.remove(a + 1);
            self.sizes.remove(a + 1);
            self.firsts.remove(a + 1);
        } else {
            self.sizes[a + 1] = self.kids[a + 1].len();
            self.firsts[a + 1] = self.kids[a + 1].first();
        }
        self.sizes[a] = self.kids[a].len();
        self.firsts[a] = self.kids[a].first();
    }
}

/// Builds a tree over ids 0..n, already in order.
pub(super) fn bulk_load(n: usize) -> Node {
    if n <= LEAF_MAX {
        let mut v = new_leaf();
        v.extend(0..n as Id);
        return Node::Leaf(v);
    }
    let mut level: Vec<Node> = (0..n)
        .step_by(LEAF_MAX)
        .map(|s| {
            let mut v = new_leaf();
            v.extend(s as Id..(s + LEAF_MAX).min(n) as Id);
            Node::Leaf(v)
        })
        .collect();
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len() / INNER_MAX + 1);
        let mut it = level.into_iter().peekable();
        while it.peek().is_some() {
            let kids: Vec<Node> = it.by_ref().take(INNER_MAX).collect();
            let sizes: Vec<usize> = kids.iter().map(Node::len).collect();
            let firsts: Vec<Id> = kids.iter().map(Node::first).collect();
            next.push(Node::Inner(Box::new(Inner {
                len: sizes.iter().sum(),
                kids,
                sizes,
                firsts,
            })));
        }
        level = next;
    }
    level.pop().unwrap_or(Node::Leaf(new_leaf()))
}
