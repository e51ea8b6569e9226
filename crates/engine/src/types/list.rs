//! The list type, shaped like Redis's quicklist: a deque of nodes, each a contiguous byte
//! buffer of listpack-encoded entries (see `list_node.rs`; the node table is in
//! `list_table.rs`), bounded by `list-max-listpack-size` (negative: a byte class, -2 =
//! 8 KiB; positive: an entry count).
//! Pushes and pops at both ends are O(1) amortized; an index is found by walking node
//! counts from the nearer end, then entries from the nearer end of one node.
//!
//! Redis 7.0 always reports this as "quicklist", however small the list.
//!
//! Ends are named by `head: bool` (true = LEFT/head, false = RIGHT/tail), the one shape the
//! server's LPUSH/RPOP/LMOVE and the blocking commands share.

#[path = "list_node.rs"]
mod node;
#[path = "list_table.rs"]
mod table;

use crate::entry::EntryRef;
use crate::locked::{Locked, WrongType};
use crate::value::Value;
use node::{decode, Node};
use table::{Iter, Nodes};

pub use node::Elem;
/// Listpack entry sizes, which the stream type counts to split nodes where Redis does, and
/// allocator size classes, for its memory estimate.
pub(crate) use node::{class_round, Enc};

/// quicklist's FILL_MAX: the largest entry count per node.
const FILL_MAX: i64 = (1 << 15) - 1;

/// A list value: 48 bytes, plus its nodes' buffers (and a node table once it has more
/// than one node).
#[derive(Clone)]
pub struct ListValue {
    nodes: Nodes,
    /// The length in the low 48 bits; in the high 16, list-max-listpack-size as it was when
    /// the list was created (Redis fixes it per list too), clamped to -5..=32767.
    meta: u64,
}

const LEN_BITS: u32 = 48;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;

impl Default for ListValue {
    fn default() -> Self {
        ListValue::new(-2)
    }
}

impl PartialEq for ListValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for ListValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|e| String::from_utf8_lossy(&e.to_vec()).into_owned()),
            )
            .finish()
    }
}

impl ListValue {
    /// An empty list whose nodes follow `list-max-listpack-size` = `fill` (clamped to
    /// -5..=32767 as quicklistSetFill does).
    pub fn new(fill: i64) -> ListValue {
        let fill = fill.clamp(-5, FILL_MAX) as i16;
        ListValue {
            nodes: Nodes::One(Node::default()),
            meta: u64::from(fill as u16) << LEN_BITS,
        }
    }

    fn fill(&self) -> i32 {
        i32::from((self.meta >> LEN_BITS) as u16 as i16)
    }

    fn set_len(&mut self, n: usize) {
        self.meta = (self.meta & !LEN_MASK) | (n as u64 & LEN_MASK);
    }

    /// A list of `elems`, head first.
    pub fn from_elems<I, E>(fill: i64, elems: I) -> ListValue
    where
        I: IntoIterator<Item = E>,
        E: AsRef<[u8]>,
    {
        let mut l = ListValue::new(fill);
        for e in elems {
            l.push(false, e.as_ref());
        }
        l
    }

    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    pub fn len(&self) -> usize {
        (self.meta & LEN_MASK) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What DEBUG OBJECT reports of a quicklist: the number of nodes, their listpack bytes
    /// (entries and listpack header, as Redis counts a node's size) and the list's
    /// `list-max-listpack-size`.
    pub fn shape(&self) -> (usize, usize, i32) {
        let bytes = self
            .nodes
            .iter()
            .map(|n| n.bytes() + node::LP_OVERHEAD)
            .sum();
        (self.nodes.len(), bytes, self.fill())
    }

    /// Its nodes (listpacks of up to 8 KiB at the default `list-max-listpack-size`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Heap bytes held by the list (its node table and node buffers), the buffers
    /// estimated from the first `samples` nodes (0: all), as Redis's MEMORY USAGE samples
    /// a quicklist's nodes. Memory accounting measures a list before and after each
    /// change: walking every node made a push to a list of 40 MB cost 20 µs.
    pub fn heap_bytes(&self, samples: usize) -> usize {
        use crate::memory::{extrapolate, sample_len};
        let len = self.nodes.len();
        let taken = sample_len(samples, len);
        let buffers = self.nodes.iter().take(taken).map(Node::capacity).sum();
        self.nodes.table_bytes() + extrapolate(buffers, taken, len)
    }

    /// Pushes at the head (`head`) or the tail.
    pub fn push(&mut self, head: bool, elem: &[u8]) {
        let enc = Enc::new(Elem::of(elem));
        let (t, fill) = (enc.total(), self.fill());
        let end = if head {
            self.nodes.front_mut()
        } else {
            self.nodes.back_mut()
        };
        match end {
            Some(n) if n.allows(t, fill) => {
                if head {
                    n.push_front(&enc)
                } else {
                    n.push_back(&enc)
                }
            }
            // The end node is full: it stops being an end, and a new one starts.
            Some(n) => {
                n.seal();
                self.push_node(head, Node::spill(&enc, head, fill));
            }
            None => self.push_node(head, Node::with(&enc)),
        }
        self.set_len(self.len() + 1);
    }

    fn push_node(&mut self, head: bool, node: Node) {
        if head {
            self.nodes.push_front(node)
        } else {
            self.nodes.push_back(node)
        }
    }

    /// Removes and returns the element at the head (`head`) or the tail.
    pub fn pop(&mut self, head: bool) -> Option<Vec<u8>> {
        let n = if head {
            self.nodes.front_mut()?
        } else {
            self.nodes.back_mut()?
        };
        let v = if head { n.first() } else { n.last() }.to_vec();
        if head {
            n.pop_front();
        } else {
            n.pop_back();
        }
        if n.count() == 0 {
            if head {
                self.nodes.pop_front();
            } else {
                self.nodes.pop_back();
            }
        }
        self.set_len(self.len() - 1);
        Some(v)
    }

    /// The element at the head (`head`) or the tail.
    pub fn peek(&self, head: bool) -> Option<Elem<'_>> {
        if head {
            self.nodes.front().map(Node::first)
        } else {
            self.nodes.back().map(Node::last)
        }
    }

    /// (node, entry within node) of element `index` (< len), walking from the nearer end.
    fn locate(&self, index: usize) -> (usize, usize) {
        let len = self.len();
        if index < len / 2 {
            let mut i = index;
            for k in 0..self.nodes.len() {
                let c = self.nodes[k].count();
                if i < c {
                    return (k, i);
                }
                i -= c;
            }
        } else {
            let mut i = len - 1 - index;
            for k in (0..self.nodes.len()).rev() {
                let c = self.nodes[k].count();
                if i < c {
                    return (k, c - 1 - i);
                }
                i -= c;
            }
        }
        unreachable!("list index {index} beyond the node counts")
    }

    /// The element at `index`, if any.
    pub fn get(&self, index: usize) -> Option<Elem<'_>> {
        if index >= self.len() {
            return None;
        }
        let (k, i) = self.locate(index);
        let n = &self.nodes[k];
        Some(decode(n.buf(), n.seek(i)).0)
    }

    /// All elements, head first (reverse with `.rev()`).
    pub fn iter(&self) -> Iter<'_> {
        self.range(0, self.len())
    }

    /// Elements `start..stop` (clamped to the list), head first; `.rev()` walks back.
    pub fn range(&self, start: usize, stop: usize) -> Iter<'_> {
        let stop = stop.min(self.len());
        let mut it = Iter {
            nodes: &self.nodes,
            fnode: 0,
            fpos: 0,
            bnode: 0,
            bpos: 0,
            left: 0,
        };
        if start >= stop {
            return it;
        }
        let (k, i) = self.locate(start);
        it.fnode = k;
        it.fpos = self.nodes[k].seek(i);
        if stop == self.len() {
            it.bnode = self.nodes.len() - 1;
            it.bpos = self.nodes[it.bnode].end();
        } else {
            let (k, i) = self.locate(stop);
            it.bnode = k;
            it.bpos = self.nodes[k].seek(i);
        }
        it.left = stop - start;
        it
    }

    /// `elem` in its stored form, to compare with the elements this list yields
    /// (`e == needle`).
    pub fn needle(elem: &[u8]) -> Elem<'_> {
        Elem::of(elem)
    }

    /// Index of the first element equal to `elem`, searching from the head.
    pub fn position(&self, elem: &[u8]) -> Option<usize> {
        let needle = Elem::of(elem);
        self.iter().position(|e| e == needle)
    }

    /// Replaces the element at `index`; false when out of range.
    pub fn set(&mut self, index: usize, elem: &[u8]) -> bool {
        if index >= self.len() {
            return false;
        }
        let (k, i) = self.locate(index);
        let enc = Enc::new(Elem::of(elem));
        let n = &mut self.nodes[k];
        let p = n.seek(i);
        let old = decode(n.buf(), p).1;
        n.replace(p, old, &enc);
        self.split_if_oversized(k);
        true
    }

    /// Inserts `elem` so that it becomes element `index` (0..=len).
    pub fn insert(&mut self, index: usize, elem: &[u8]) {
        if index == 0 {
            return self.push(true, elem);
        }
        if index >= self.len() {
            return self.push(false, elem);
        }
        let (k, i) = self.locate(index);
        let enc = Enc::new(Elem::of(elem));
        let (t, fill) = (enc.total(), self.fill());
        if i == 0 && k > 0 && !self.nodes[k].allows(t, fill) && self.nodes[k - 1].allows(t, fill) {
            // At a full node's head: the previous node's tail is the same place.
            self.nodes[k - 1].push_back(&enc);
        } else {
            let n = &mut self.nodes[k];
            let p = n.seek(i);
            n.insert(p, &enc);
            self.split_if_oversized(k);
        }
        self.set_len(self.len() + 1);
    }

    /// LINSERT: inserts `elem` before (or `after`) the first element equal to `pivot`;
    /// false when there is none.
    pub fn insert_at_pivot(&mut self, pivot: &[u8], elem: &[u8], after: bool) -> bool {
        match self.position(pivot) {
            Some(i) => {
                self.insert(i + usize::from(after), elem);
                true
            }
            None => false,
        }
    }

    fn split_if_oversized(&mut self, k: usize) {
        let fill = self.fill();
        let more = self.nodes[k].split_oversized(fill);
        for (j, n) in more.into_iter().enumerate() {
            self.nodes.insert(k + 1 + j, n);
        }
    }

    /// Removes `n` elements starting at `start` (clamped to the list).
    pub fn remove_range(&mut self, start: usize, n: usize) {
        if start >= self.len() {
            return;
        }
        let n = n.min(self.len() - start);
        if n == 0 {
            return;
        }
        let (mut k, i) = self.locate(start);
        let mut left = n;
        // The first node, from entry i.
        let node = &mut self.nodes[k];
        let take = left.min(node.count() - i);
        let p = node.seek(i);
        let q = if i + take == node.count() {
            node.end()
        } else {
            skip(node, p, take)
        };
        node.remove_bytes(p, q, take);
        left -= take;
        if node.count() == 0 {
            self.nodes.remove(k);
        } else {
            k += 1;
        }
        // Whole nodes.
        let mut j = k;
        while j < self.nodes.len() && self.nodes[j].count() <= left {
            left -= self.nodes[j].count();
            j += 1;
        }
        self.nodes.drain(k, j);
        // The head of the last node.
        if left > 0 {
            let node = &mut self.nodes[k];
            let p = node.start();
            let q = skip(node, p, left);
            node.remove_bytes(p, q, left);
        }
        self.set_len(self.len() - n);
    }

    /// LTRIM: keeps elements `start..=end` (already clamped by the caller); removes all when
    /// `keep` is None.
    pub fn trim(&mut self, keep: Option<(usize, usize)>) {
        match keep {
            None => self.remove_range(0, self.len()),
            Some((start, end)) => {
                let len = self.len();
                if end + 1 < len {
                    self.remove_range(end + 1, len - end - 1);
                }
                self.remove_range(0, start);
            }
        }
    }

    /// LREM: removes up to `limit` elements equal to `elem` (0 = all), scanning from the
    /// head, or from the tail when `from_tail`. Returns how many were removed.
    pub fn remove_matching(&mut self, elem: &[u8], limit: usize, from_tail: bool) -> usize {
        let needle = Elem::of(elem);
        let mut removed = 0;
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut k = if from_tail { self.nodes.len() } else { 0 };
        loop {
            if from_tail {
                if k == 0 {
                    break;
                }
                k -= 1;
            } else if k >= self.nodes.len() {
                break;
            }
            let node = &mut self.nodes[k];
            ranges.clear();
            let mut p = node.start();
            while p < node.end() {
                let (e, t) = decode(node.buf(), p);
                if e == needle {
                    ranges.push((p, p + t));
                }
                p += t;
            }
            if limit != 0 {
                let room = limit - removed;
                if ranges.len() > room {
                    if from_tail {
                        ranges.drain(..ranges.len() - room);
                    } else {
                        ranges.truncate(room);
                    }
                }
            }
            removed += ranges.len();
            node.remove_ranges(&ranges);
            if node.count() == 0 {
                self.nodes.remove(k);
            } else if !from_tail {
                k += 1;
            }
            if limit != 0 && removed == limit {
                break;
            }
        }
        self.set_len(self.len() - removed);
        removed
    }

    /// Checks the internal invariants (tests).
    #[cfg(test)]
    fn check(&self) {
        let mut total = 0;
        for n in self.nodes.iter() {
            assert!(n.count() > 0, "empty node");
            let mut p = n.start();
            let mut c = 0;
            while p < n.end() {
                p += decode(n.buf(), p).1;
                c += 1;
            }
            assert_eq!(p, n.end());
            assert_eq!(c, n.count());
            total += c;
        }
        assert_eq!(total, self.len());
    }
}

/// Byte offset `n` entries after `p`.
fn skip(node: &Node, mut p: usize, n: usize) -> usize {
    for _ in 0..n {
        p += decode(node.buf(), p).1;
    }
    p
}

impl<'a> EntryRef<'a> {
    /// The list value, or WRONGTYPE when the key holds another type.
    pub fn as_list(&self) -> Result<&'a ListValue, WrongType> {
        match self.value() {
            Some(Value::List(l)) => Ok(l),
            _ => Err(WrongType),
        }
    }
}

impl Locked<'_> {
    /// A read lookup of a list (counts a hit or miss, touches the access time).
    pub fn list(&mut self, key: &[u8]) -> Result<Option<&ListValue>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => e.as_list().map(Some),
        }
    }

    /// A list for editing in place; `Ok(None)` when the key is missing.
    pub fn list_mut(&mut self, key: &[u8]) -> Result<Option<&mut ListValue>, WrongType> {
        match self.collection_mut(key)? {
            None => Ok(None),
            Some(Value::List(l)) => Ok(Some(l)),
            Some(_) => Err(WrongType),
        }
    }

    /// A list to push into, created empty (nodes following `fill`) when the key is missing.
    /// The caller must push before unlocking: an empty list must not stay in the keyspace.
    pub fn list_mut_or_create(
        &mut self,
        key: &[u8],
        fill: i64,
    ) -> Result<&mut ListValue, WrongType> {
        match self.collection_mut_or_create(key, || Value::List(Box::new(ListValue::new(fill))))? {
            Value::List(l) => Ok(l),
            _ => Err(WrongType),
        }
    }

    /// Deletes `key` if it holds an empty list (Redis never keeps one); true if deleted.
    pub fn remove_if_empty_list(&mut self, key: &[u8]) -> bool {
        match self.list_mut(key) {
            Ok(Some(l)) if l.is_empty() => self.remove(key),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn elem(r: &mut Rng) -> Vec<u8> {
        match r.below(6) {
            0 => r.below(200).to_string().into_bytes(),
            1 => (r.next() as i64).to_string().into_bytes(),
            2 => vec![b'a' + r.below(3) as u8; r.below(5)],
            3 => vec![b'x'; r.below(3000)],
            4 => format!("-{}", r.below(100000)).into_bytes(),
            _ => format!("e{}", r.below(10)).into_bytes(),
        }
    }

    fn contents(l: &ListValue) -> Vec<Vec<u8>> {
        l.iter().map(|e| e.to_vec()).collect()
    }

    #[test]
    fn random_operations_match_a_model() {
        for (seed, fill) in [
            (1u64, -2i64),
            (2, -1),
            (3, 1),
            (4, 3),
            (5, 0),
            (6, -5),
            (7, 128),
        ] {
            let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut l = ListValue::new(fill);
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for step in 0..4000 {
                let len = m.len();
                match r.below(12) {
                    0 | 1 => {
                        let e = elem(&mut r);
                        l.push(true, &e);
                        m.push_front(e);
                    }
                    2 | 3 => {
                        let e = elem(&mut r);
                        l.push(false, &e);
                        m.push_back(e);
                    }
                    4 => assert_eq!(l.pop(true), m.pop_front()),
                    5 => assert_eq!(l.pop(false), m.pop_back()),
                    6 => {
                        let i = r.below(len + 1);
                        let e = elem(&mut r);
                        l.insert(i, &e);
                        m.insert(i, e);
                    }
                    7 if len > 0 => {
                        let i = r.below(len);
                        let e = elem(&mut r);
                        assert!(l.set(i, &e));
                        m[i] = e;
                    }
                    8 => {
                        let s = r.below(len + 1);
                        let n = r.below(len + 1) / 4;
                        l.remove_range(s, n);
                        let end = (s + n).min(len);
                        m.drain(s.min(len)..end);
                    }
                    9 => {
                        let e = elem(&mut r);
                        let limit = r.below(3);
                        let tail = r.below(2) == 0;
                        let got = l.remove_matching(&e, limit, tail);
                        let mut idx: Vec<usize> = (0..len).filter(|&i| m[i] == e).collect();
                        if limit != 0 && idx.len() > limit {
                            if tail {
                                idx.drain(..idx.len() - limit);
                            } else {
                                idx.truncate(limit);
                            }
                        }
                        for &i in idx.iter().rev() {
                            m.remove(i);
                        }
                        assert_eq!(got, idx.len());
                    }
                    10 if len > 0 => {
                        let a = r.below(len);
                        let b = r.below(len + 1);
                        let got: Vec<Vec<u8>> = l.range(a, b).map(|e| e.to_vec()).collect();
                        let want: Vec<Vec<u8>> = m.iter().take(b).skip(a).cloned().collect();
                        assert_eq!(got, want);
                        let got: Vec<Vec<u8>> = l.range(a, b).rev().map(|e| e.to_vec()).collect();
                        let want: Vec<Vec<u8>> = want.into_iter().rev().collect();
                        assert_eq!(got, want);
                        assert_eq!(l.get(a).map(|e| e.to_vec()), m.get(a).cloned());
                    }
                    _ => {
                        let e = elem(&mut r);
                        assert_eq!(l.position(&e), m.iter().position(|x| *x == e));
                    }
                }
                l.check();
                assert_eq!(l.len(), m.len(), "seed {seed} step {step}");
                if step % 97 == 0 {
                    assert_eq!(contents(&l), Vec::from(m.clone()));
                    assert_eq!(l.clone(), l);
                }
            }
            assert_eq!(contents(&l), Vec::from(m));
        }
    }

    #[test]
    fn a_list_is_small() {
        assert_eq!(std::mem::size_of::<ListValue>(), 48);
        let mut l = ListValue::new(-2);
        l.push(false, b"a");
        assert_eq!(l.nodes.table_bytes(), 0);
        for i in 0..10_000 {
            l.push(true, format!("{i:0100}").as_bytes());
        }
        assert!(matches!(l.nodes, Nodes::Many(_)));
        while l.len() > 1 {
            l.pop(true);
        }
        assert!(matches!(l.nodes, Nodes::One(_)));
        assert_eq!(l.peek(true), Some(Elem::Str(b"a")));
        l.check();
        let l = ListValue::new(-100);
        assert_eq!(l.fill(), -5);
        let l = ListValue::new(i64::MAX);
        assert_eq!(l.fill(), 32767);
    }

    #[test]
    fn trim_and_peek() {
        let mut l = ListValue::from_elems(-2, (0..1000).map(|i| i.to_string()));
        assert_eq!(l.peek(true), Some(Elem::Int(0)));
        assert_eq!(l.peek(false), Some(Elem::Int(999)));
        l.trim(Some((10, 19)));
        l.check();
        let want: Vec<Vec<u8>> = (10..20).map(|i| i.to_string().into_bytes()).collect();
        assert_eq!(contents(&l), want);
        l.trim(None);
        assert!(l.is_empty());
        l.check();
    }

    #[test]
    fn sampled_heap_bytes_are_close_to_the_walk() {
        let l = ListValue::from_elems(-2, (0..100_000).map(|i: u32| i.to_be_bytes()));
        let (all, sampled) = (l.heap_bytes(0), l.heap_bytes(5));
        assert!(l.node_count() > 50, "{} nodes", l.node_count());
        assert!(
            sampled.abs_diff(all) < all / 20,
            "{sampled} sampled, {all} walked"
        );
        assert_eq!(sampled, l.heap_bytes(5), "the same list measures the same");
    }

    #[test]
    fn nodes_fill_to_their_limit() {
        let l = ListValue::from_elems(-2, (0..100_000).map(|_| b"0123456789"));
        // 12 bytes an entry, about 680 entries a 8 KiB node.
        assert!(l.nodes.len() < 100_000 / 600, "{} nodes", l.nodes.len());
        assert!(l.heap_bytes(0) < 100_000 * 13, "{} bytes", l.heap_bytes(0));
        let l = ListValue::from_elems(5, (0..100).map(|_| b"x"));
        assert_eq!(l.nodes.len(), 20);
        let l = ListValue::from_elems(0, (0..10).map(|_| b"x"));
        assert_eq!(l.nodes.len(), 10);
    }

    /// A node started at either end of a full one gets a whole node's capacity at once; a
    /// list's first node still grows from small.
    #[test]
    fn spilled_nodes_start_at_full_capacity() {
        for head in [false, true] {
            let mut l = ListValue::new(-2);
            l.push(head, b"first");
            assert!(l.heap_bytes(0) < 1024, "{} bytes", l.heap_bytes(0));
            while l.nodes.len() < 2 {
                l.push(head, b"0123456789");
            }
            let new = if head { &l.nodes[0] } else { &l.nodes[1] };
            assert_eq!(new.count(), 1);
            assert!(
                new.capacity() >= 8192 - 7,
                "head {head}: {}",
                new.capacity()
            );
            l.push(head, b"next");
            l.check();
            let (first, last) = (
                l.get(0).map(|e| e.to_vec()),
                l.get(l.len() - 1).map(|e| e.to_vec()),
            );
            let (want_first, want_last) = if head {
                (b"next".to_vec(), b"first".to_vec())
            } else {
                (b"first".to_vec(), b"next".to_vec())
            };
            assert_eq!((first, last), (Some(want_first), Some(want_last)));
        }
    }

    #[test]
    fn lpush_leaves_sealed_nodes_compact() {
        let mut l = ListValue::new(-2);
        for i in 0..100_000 {
            l.push(true, format!("element:{i}").as_bytes());
        }
        l.check();
        assert!(l.heap_bytes(0) < 100_000 * 18, "{} bytes", l.heap_bytes(0));
        assert_eq!(
            l.get(0).map(|e| e.to_vec()),
            Some(b"element:99999".to_vec())
        );
        assert_eq!(
            l.get(99_999).map(|e| e.to_vec()),
            Some(b"element:0".to_vec())
        );
    }
}
