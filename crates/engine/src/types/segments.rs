//! Storage for a large collection's elements, addressed by position, that grows without
//! copying: after a first segment that grows as a `Vec` does (small collections stay
//! small), elements go into segments of SEG each. A `Vec` of 2M hash fields doubling copies
//! all of them at once, a 41 ms pause on this machine with the shard locked
//! (docs/benchmarks.md, "Large collections grow without a pause"); here growing allocates
//! one more segment. Reaching an element costs one extra load, of a segment table that
//! stays in cache (8 bytes per SEG elements).

use std::ops::{Index, IndexMut};

const SEG_BITS: u32 = 12;
/// Elements per segment: 4096, so 96-128 KiB for the collections' 24-32 byte elements.
const SEG: usize = 1 << SEG_BITS;
const MASK: usize = SEG - 1;

#[derive(Clone)]
pub(crate) struct Segments<E> {
    /// Every segment but the last is full; all but the first have room for exactly SEG.
    segs: Vec<Vec<E>>,
    len: usize,
}

impl<E> Default for Segments<E> {
    fn default() -> Self {
        Segments {
            segs: Vec::new(),
            len: 0,
        }
    }
}

impl<E> Segments<E> {
    pub fn with_capacity(n: usize) -> Self {
        Segments {
            segs: if n == 0 {
                Vec::new()
            } else {
                vec![Vec::with_capacity(n.min(SEG))]
            },
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Elements held without allocating: the first segment's room while it is the only one
    /// (the part a shrink can give back), whole segments after that.
    pub fn capacity(&self) -> usize {
        match self.segs.last() {
            Some(last) => (self.segs.len() - 1) * SEG + last.capacity(),
            None => 0,
        }
    }

    /// Heap bytes of the segments (and of the table of them), as allocated.
    pub fn heap_bytes(&self) -> usize {
        let seg =
            |v: &Vec<E>| crate::memory::heap_of_capacity(v.capacity() * std::mem::size_of::<E>());
        let table =
            crate::memory::heap_of_capacity(self.segs.capacity() * std::mem::size_of::<Vec<E>>());
        table + self.segs.iter().map(seg).sum::<usize>()
    }

    pub fn get(&self, i: usize) -> Option<&E> {
        self.segs.get(i >> SEG_BITS)?.get(i & MASK)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut E> {
        self.segs.get_mut(i >> SEG_BITS)?.get_mut(i & MASK)
    }

    pub fn push(&mut self, e: E) {
        match self.segs.last_mut() {
            Some(s) if s.len() < SEG => {
                if s.len() == s.capacity() {
                    // Double, as a Vec would, but never past one segment.
                    s.reserve_exact(s.len().max(4).min(SEG - s.len()));
                }
                s.push(e);
            }
            _ => {
                let mut s = Vec::with_capacity(if self.segs.is_empty() { 4 } else { SEG });
                s.push(e);
                self.segs.push(s);
            }
        }
        self.len += 1;
    }

    pub fn pop(&mut self) -> Option<E> {
        let last = self.segs.last_mut()?;
        let e = last.pop()?;
        if last.is_empty() && self.segs.len() > 1 {
            self.segs.pop();
        }
        self.len -= 1;
        Some(e)
    }

    /// Removes the element at `pos`, moving the last one into its place (as
    /// `Vec::swap_remove`); None if `pos` is out of range.
    pub fn swap_remove(&mut self, pos: usize) -> Option<E> {
        if pos >= self.len {
            return None;
        }
        let last = self.pop()?;
        if pos == self.len {
            return Some(last);
        }
        self.get_mut(pos).map(|e| std::mem::replace(e, last))
    }

    pub fn swap(&mut self, a: usize, b: usize) {
        let (sa, sb) = (a >> SEG_BITS, b >> SEG_BITS);
        if sa == sb {
            self.segs[sa].swap(a & MASK, b & MASK);
        } else {
            let (lo, hi) = if sa < sb { (a, b) } else { (b, a) };
            let (head, tail) = self.segs.split_at_mut(hi >> SEG_BITS);
            std::mem::swap(
                &mut head[lo >> SEG_BITS][lo & MASK],
                &mut tail[0][hi & MASK],
            );
        }
    }

    /// Drops the elements from `n` on.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        let keep = n.div_ceil(SEG).max(1);
        self.segs.truncate(keep);
        if let Some(last) = self.segs.last_mut() {
            last.truncate(n - (keep - 1) * SEG);
        }
        self.len = n;
    }

    /// Gives back the first segment's spare room down to `n` elements, while it is the only
    /// segment (later ones are freed as they empty).
    pub fn shrink_to(&mut self, n: usize) {
        if let [only] = self.segs.as_mut_slice() {
            only.shrink_to(n);
        }
    }

    /// The elements at positions `range`, in order.
    pub fn iter_range(&self, range: std::ops::Range<usize>) -> Iter<'_, E> {
        Iter {
            s: self,
            at: range.start,
            end: range.end.min(self.len),
        }
    }

    pub fn iter(&self) -> Iter<'_, E> {
        self.iter_range(0..self.len)
    }
}

impl<E> Index<usize> for Segments<E> {
    type Output = E;
    fn index(&self, i: usize) -> &E {
        &self.segs[i >> SEG_BITS][i & MASK]
    }
}

impl<E> IndexMut<usize> for Segments<E> {
    fn index_mut(&mut self, i: usize) -> &mut E {
        &mut self.segs[i >> SEG_BITS][i & MASK]
    }
}

impl<E> FromIterator<E> for Segments<E> {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> Self {
        let mut s = Segments::default();
        for e in iter {
            s.push(e);
        }
        s
    }
}

pub(crate) struct Iter<'a, E> {
    s: &'a Segments<E>,
    at: usize,
    end: usize,
}

impl<'a, E> Iterator for Iter<'a, E> {
    type Item = &'a E;

    fn next(&mut self) -> Option<&'a E> {
        if self.at >= self.end {
            return None;
        }
        let e = self.s.get(self.at);
        self.at += 1;
        e
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end.saturating_sub(self.at);
        (n, Some(n))
    }
}

impl<E> ExactSizeIterator for Iter<'_, E> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes, pops, swap_removes, swaps and truncations across segment edges, against a Vec.
    #[test]
    fn behaves_as_a_vec_across_segment_edges() {
        let mut s = Segments::with_capacity(100);
        let mut v = Vec::new();
        let mut x = 0x2545_F491u32;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as usize
        };
        for step in 0..200_000usize {
            match rand() % 10 {
                0..=5 => {
                    s.push(step);
                    v.push(step);
                }
                6 if !v.is_empty() => {
                    let p = rand() % v.len();
                    assert_eq!(s.swap_remove(p), Some(v.swap_remove(p)));
                }
                7 => assert_eq!(s.pop(), v.pop()),
                8 if v.len() > 1 => {
                    let (a, b) = (rand() % v.len(), rand() % v.len());
                    s.swap(a, b);
                    v.swap(a, b);
                }
                _ => {}
            }
            if step % 25_000 == 24_999 {
                let n = v.len() - v.len() / 3;
                s.truncate(n);
                v.truncate(n);
            }
            assert_eq!(s.len(), v.len());
            if step % 4999 == 0 {
                assert!(s.iter().eq(v.iter()));
                let lo = v.len() / 3;
                assert!(s.iter_range(lo..v.len()).eq(v[lo..].iter()));
                assert_eq!(s.iter().len(), v.len());
            }
        }
        assert!(v.len() > 3 * SEG, "the test must span several segments");
        for (i, e) in v.iter().enumerate() {
            assert_eq!(s[i], *e);
            assert_eq!(s.get(i), Some(e));
        }
        assert_eq!(s.get(v.len()), None);
        assert_eq!(s.swap_remove(v.len()), None);
    }

    #[test]
    fn the_first_segment_grows_like_a_vec_and_later_ones_are_whole() {
        let mut s = Segments::with_capacity(129);
        for i in 0..SEG {
            s.push(i);
            assert!(s.capacity() <= SEG);
        }
        assert_eq!(s.capacity(), SEG, "the first segment stops at one segment");
        s.push(SEG);
        assert_eq!(s.capacity(), 2 * SEG);
        // Emptying the second segment frees it.
        s.pop();
        assert_eq!(s.capacity(), SEG);
        // A shrink gives back the first segment's room.
        s.truncate(10);
        s.shrink_to(20);
        assert!(s.capacity() < 100);
        assert!(s.iter().copied().eq(0..10));
        let collected: Segments<usize> = (0..3 * SEG + 5).collect();
        assert_eq!(collected.len(), 3 * SEG + 5);
        assert_eq!(collected[2 * SEG + 7], 2 * SEG + 7);
    }
}
