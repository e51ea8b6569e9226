//! The scalable ("hashtable") form shared by hashes and sets, and the small byte strings
//! it stores.
//!
//! Redis keeps a large hash or set as a `dict`: per element a bucket pointer (8 bytes),
//! a `dictEntry` (24 bytes, 32 with jemalloc's size classes) and one sds string per field
//! and value (header + bytes + NUL, rounded up to a size class). [`Dense`] keeps instead
//!
//! - the elements themselves in position order ([`Segments`], which grows without
//!   copying), each a [`Small`] string that holds
//!   up to N bytes inline (22 in a 24-byte slot for set members, 30 in a 32-byte slot for
//!   a hash's field+value pair) and spills longer ones to one heap block, and
//! - a hash index of `u32` positions, each with 32 bits of its element's hash (9 bytes per
//!   bucket), which grows without a pause ([`IdIndex`]).
//!
//! A set member of up to 22 bytes thus costs 24 bytes plus 5-10 bytes of index, against
//! 56 or more in Redis. Deletion swaps the last element into the hole, so elements stay
//! dense: a random element is one uniform index (SPOP, SRANDMEMBER, HRANDFIELD are fair,
//! unlike Redis's bucket sampling), and SCAN walks positions downward (see [`Dense::scan`]).
//!
//! Positions are `u32`: one collection holds at most 2^32 - 1 elements (over 100 GB of
//! members), far beyond any practical size.

use crate::shard::hash;
use crate::types::id_index::IdIndex;
use crate::types::segments::{Iter, Segments};

/// A byte string of up to `N` bytes stored inline, longer ones on the heap. `N < 256`.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Small<const N: usize> {
    Inline(u8, [u8; N]),
    Heap(Box<[u8]>),
}

impl<const N: usize> Small<N> {
    /// Heap bytes held beyond the inline slot (a spilled string's block).
    pub fn heap(&self) -> usize {
        match self {
            Small::Inline(..) => 0,
            Small::Heap(b) => crate::memory::heap_of_capacity(b.len()),
        }
    }

    pub fn new(b: &[u8]) -> Self {
        Self::from_parts(&[b])
    }

    /// The concatenation of `parts`.
    pub fn from_parts(parts: &[&[u8]]) -> Self {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total <= N && N < 256 {
            let mut buf = [0u8; N];
            let mut at = 0;
            for p in parts {
                buf[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            Small::Inline(total as u8, buf)
        } else {
            let mut v = Vec::with_capacity(total);
            for p in parts {
                v.extend_from_slice(p);
            }
            Small::Heap(v.into_boxed_slice())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Small::Inline(n, b) => &b[..(*n as usize).min(N)],
            Small::Heap(b) => b,
        }
    }
}

impl<const N: usize> std::fmt::Debug for Small<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

// ---------------------------------------------------------------------------------------
// Varints: LEB128 lengths, used by the hash's listpack and its field+value pairs.

/// The bytes `put_varint` writes for `n`.
pub(crate) fn varint_len(n: usize) -> usize {
    (usize::BITS - (n | 1).leading_zeros()).div_ceil(7) as usize
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// The varint of `n` in a small buffer: (bytes, length).
pub(crate) fn varint_bytes(mut n: usize) -> ([u8; 10], usize) {
    let mut buf = [0u8; 10];
    let mut i = 0;
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 || i == 9 {
            buf[i] = b;
            return (buf, i + 1);
        }
        buf[i] = b | 0x80;
        i += 1;
    }
}

/// Reads a varint at the start of `b`: (value, bytes used). Malformed input (which only
/// our own encoder produces, so never) reads as what was decoded so far.
#[inline]
pub(crate) fn get_varint(b: &[u8]) -> (usize, usize) {
    // Lengths below 128 (nearly all of a listpack's) take one byte.
    if let Some(&first) = b.first().filter(|&&x| x < 0x80) {
        return (first as usize, 1);
    }
    let mut n: usize = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        n |= ((byte & 0x7f) as usize)
            .checked_shl(7 * i as u32)
            .unwrap_or(0);
        if byte & 0x80 == 0 {
            return (n, i + 1);
        }
    }
    (n, b.len().min(10))
}

// ---------------------------------------------------------------------------------------
// Dense

/// An element of a [`Dense`] table: it knows its own key.
pub(crate) trait Keyed {
    fn key(&self) -> &[u8];

    /// Heap bytes the element holds outside its slot.
    fn heap(&self) -> usize;
}

impl Keyed for Small<22> {
    fn key(&self) -> &[u8] {
        self.as_bytes()
    }

    fn heap(&self) -> usize {
        Small::heap(self)
    }
}

/// A hash field and its value in one string: `[varint field length][field][value]`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Pair(Small<30>);

impl Pair {
    pub fn new(field: &[u8], value: &[u8]) -> Pair {
        let (v, n) = varint_bytes(field.len());
        Pair(Small::from_parts(&[&v[..n], field, value]))
    }

    fn split(&self) -> (&[u8], &[u8]) {
        let b = self.0.as_bytes();
        let (flen, used) = get_varint(b);
        let rest = b.get(used..).unwrap_or_default();
        let flen = flen.min(rest.len());
        rest.split_at(flen)
    }

    pub fn field(&self) -> &[u8] {
        self.split().0
    }

    pub fn value(&self) -> &[u8] {
        self.split().1
    }

    pub fn parts(&self) -> (&[u8], &[u8]) {
        self.split()
    }
}

impl Keyed for Pair {
    fn key(&self) -> &[u8] {
        self.field()
    }

    fn heap(&self) -> usize {
        self.0.heap()
    }
}

/// Elements in a dense `Vec`, found through a hash index of positions.
#[derive(Clone)]
pub(crate) struct Dense<E> {
    index: IdIndex,
    items: Segments<E>,
}

impl<E: Keyed> Dense<E> {
    pub fn with_capacity(n: usize) -> Self {
        Dense {
            index: IdIndex::with_capacity(n),
            items: Segments::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Heap bytes: this table, its index, its element slots, and what the elements hold
    /// outside their slots, estimated from the first `samples` (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        let len = self.items.len();
        let taken = crate::memory::sample_len(samples, len);
        let spilled: usize = self.items.iter_range(0..taken).map(E::heap).sum();
        crate::memory::size_class(std::mem::size_of::<Self>())
            + self.index.heap_bytes()
            + self.items.heap_bytes()
            + crate::memory::extrapolate(spilled, taken, len)
    }

    /// The elements, in storage order.
    pub fn items(&self) -> &Segments<E> {
        &self.items
    }

    pub fn position(&self, key: &[u8]) -> Option<usize> {
        let items = &self.items;
        self.index
            .find(hash(key), |i| {
                items.get(i as usize).is_some_and(|e| e.key() == key)
            })
            .map(|i| i as usize)
    }

    pub fn get(&self, key: &[u8]) -> Option<&E> {
        self.position(key).and_then(|p| self.items.get(p))
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        self.position(key).is_some()
    }

    /// Replaces the element with `e`'s key; returns false (and inserts) when there was none.
    pub fn upsert(&mut self, e: E) -> bool {
        match self.position(e.key()) {
            Some(p) => {
                self.items[p] = e;
                true
            }
            None => {
                self.push_new(e);
                false
            }
        }
    }

    /// Replaces the element at `pos` with `e`, which has the same key.
    pub fn replace_at(&mut self, pos: usize, e: E) {
        debug_assert!(self.items.get(pos).is_some_and(|old| old.key() == e.key()));
        if let Some(slot) = self.items.get_mut(pos) {
            *slot = e;
        }
    }

    /// Inserts `e` unless its key is present; true if inserted.
    pub fn insert(&mut self, e: E) -> bool {
        if self.contains(e.key()) {
            return false;
        }
        self.push_new(e);
        true
    }

    /// Appends an element whose key is known to be absent.
    pub fn push_new(&mut self, e: E) {
        let h = hash(e.key());
        let pos = u32::try_from(self.items.len())
            .ok()
            .filter(|&p| p != u32::MAX)
            .expect("strata-engine: a collection is limited to 2^32-1 elements");
        self.items.push(e);
        self.index.insert(h, pos);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<E> {
        let p = self.position(key)?;
        self.remove_at(p)
    }

    /// Removes the element at `pos`, moving the last element into its place.
    pub fn remove_at(&mut self, pos: usize) -> Option<E> {
        let last = self.items.len().checked_sub(1)?;
        let h = hash(self.items.get(pos)?.key());
        self.index.remove(h, |i| i as usize == pos);
        let removed = self.items.swap_remove(pos)?;
        if pos != last {
            // The former last element now lives at `pos`.
            let h = hash(self.items[pos].key());
            if let Some(slot) = self.index.find_mut(h, |i| i as usize == last) {
                *slot = pos as u32;
            }
        }
        self.maybe_shrink();
        Some(removed)
    }

    /// Like Redis's dictResize after deletions: give memory back once mostly empty.
    fn maybe_shrink(&mut self) {
        let len = self.items.len();
        if self.items.capacity() > 64 && len * 8 < self.items.capacity() {
            self.items.shrink_to(len * 2);
        }
        if self.index.capacity() > 64 && len * 8 < self.index.capacity() {
            self.index.shrink_to(len);
        }
    }

    /// One SCAN step. The cursor is a position bound walking downward: 0 starts at the
    /// end, a call returns the elements at `[lo, hi)` and the cursor `lo` (0 when done).
    ///
    /// Redis's guarantee holds: an element present for the whole iteration is returned.
    /// Insertions append above every bound still to come (they may be missed, as Redis
    /// allows); a deletion moves the last element, which was already visited or is still
    /// below the bound, into the hole: an unvisited element only moves downward, staying
    /// unvisited, and a visited one may come back (a duplicate, as Redis allows).
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Iter<'_, E>) {
        let len = self.items.len();
        let hi = match usize::try_from(cursor) {
            Ok(0) | Err(_) => len,
            Ok(c) => c.min(len),
        };
        let lo = hi.saturating_sub(count.max(1));
        (lo as u64, self.items.iter_range(lo..hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn sizes() {
        assert_eq!(std::mem::size_of::<Small<22>>(), 24);
        assert_eq!(std::mem::size_of::<Pair>(), 32);
    }

    #[test]
    fn varints() {
        for n in [0usize, 1, 127, 128, 300, 16383, 16384, 1 << 20, usize::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, n);
            assert_eq!(get_varint(&v), (n, v.len()));
            let (b, l) = varint_bytes(n);
            assert_eq!(&b[..l], &v[..]);
            assert_eq!(varint_len(n), v.len(), "{n}");
        }
    }

    #[test]
    fn pairs() {
        for (f, v) in [(&b""[..], &b""[..]), (b"f", b"v"), (&[7u8; 200][..], b"x")] {
            let p = Pair::new(f, v);
            assert_eq!(p.parts(), (f, v));
        }
    }

    #[test]
    fn dense_insert_remove() {
        let mut d: Dense<Small<22>> = Dense::with_capacity(0);
        for i in 0..1000 {
            assert!(d.insert(Small::new(format!("m{i}").as_bytes())));
        }
        assert!(!d.insert(Small::new(b"m5")));
        for i in (0..1000).step_by(3) {
            assert!(d.remove(format!("m{i}").as_bytes()).is_some());
        }
        for i in 0..1000 {
            assert_eq!(d.contains(format!("m{i}").as_bytes()), i % 3 != 0);
        }
        while d.len() > 0 {
            d.remove_at(d.len() / 2);
        }
        assert!(!d.contains(b"m1"));
    }

    /// Past the sizes where the index grows by moving entries and the elements span
    /// several segments: inserts and removes (each moving the last element) against a
    /// model, then a full scan.
    #[test]
    fn dense_matches_a_model_while_its_index_moves() {
        let mut d: Dense<Small<22>> = Dense::with_capacity(0);
        let mut model = BTreeSet::new();
        let mut x = 0x0bad_cafe_u32;
        for step in 0..300_000u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let m = format!("m{}", x % 60_000).into_bytes();
            // Mostly inserts until 200k steps, then mostly removes: grows, then shrinks.
            if (x >> 20) % 10 < if step < 200_000 { 7 } else { 1 } {
                assert_eq!(d.insert(Small::new(&m)), model.insert(m));
            } else {
                assert_eq!(d.remove(&m).is_some(), model.remove(&m));
            }
            assert_eq!(d.len(), model.len());
            if step % 49_999 == 0 {
                for i in (0..60_000).step_by(7) {
                    let m = format!("m{i}").into_bytes();
                    assert_eq!(d.contains(&m), model.contains(&m), "step {step}: {i}");
                }
            }
        }
        let (next, items) = d.scan(0, usize::MAX);
        assert_eq!(next, 0);
        let all: BTreeSet<Vec<u8>> = items.map(|e| e.as_bytes().to_vec()).collect();
        assert_eq!(all, model);
    }

    #[test]
    fn scan_contract_under_deletes() {
        let mut d: Dense<Small<22>> = Dense::with_capacity(0);
        for i in 0..500 {
            d.insert(Small::new(format!("{i}").as_bytes()));
        }
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            let (next, items) = d.scan(cursor, 7);
            for e in items {
                seen.insert(e.as_bytes().to_vec());
            }
            // Delete some elements (multiples of 5) while scanning; add new ones.
            let kill = format!("{}", step * 5);
            d.remove(kill.as_bytes());
            d.insert(Small::new(format!("new{step}").as_bytes()));
            step += 1;
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            let deleted = i % 5 == 0 && i / 5 < step;
            if !deleted {
                assert!(seen.contains(format!("{i}").as_bytes()), "missed {i}");
            }
        }
    }
}
