//! Collections of byte strings stored back to back in one buffer: two allocations per
//! collection however many members it has, which is what makes bulk loading fast.

use std::fmt;

/// A sequence of byte strings (list elements, set members).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Members {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Members {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `items` members totalling `bytes` bytes.
    pub fn with_capacity(items: usize, bytes: usize) -> Self {
        Members {
            data: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(items),
        }
    }

    /// Emptied, with room for `items` members totalling `bytes` bytes: a buffer reused
    /// from one value to the next.
    pub(crate) fn reused(mut self, items: usize, bytes: usize) -> Self {
        self.data.clear();
        self.ends.clear();
        self.data.reserve(bytes);
        self.ends.reserve(items);
        self
    }

    /// Bytes this holds room for (what keeping it for reuse costs).
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.data.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    pub fn push(&mut self, s: &[u8]) {
        self.data.extend_from_slice(s);
        self.ends.push(self.data.len());
    }

    /// Appends a member written by `f` onto the end of the buffer (nothing is added if
    /// `f` fails).
    pub(crate) fn push_with<E>(
        &mut self,
        f: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<(), E> {
        let start = self.data.len();
        match f(&mut self.data) {
            Ok(()) => {
                self.ends.push(self.data.len());
                Ok(())
            }
            Err(e) => {
                self.data.truncate(start);
                Err(e)
            }
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Total bytes of all members.
    pub fn byte_len(&self) -> usize {
        self.data.len()
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.data[start..end])
    }

    pub fn iter(&self) -> MembersIter<'_> {
        MembersIter {
            m: self,
            front: 0,
            back: self.ends.len(),
        }
    }

    /// The members reordered by `order` (a permutation of indices).
    fn permuted(&self, order: &[usize]) -> Members {
        let mut out = Members::with_capacity(self.len(), self.data.len());
        for &i in order {
            out.push(&self[i]);
        }
        out
    }

    fn sorted_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| self[a].cmp(&self[b]));
        order
    }
}

impl std::ops::Index<usize> for Members {
    type Output = [u8];

    fn index(&self, i: usize) -> &[u8] {
        match self.get(i) {
            Some(s) => s,
            None => panic!("member {i} of {}", self.len()),
        }
    }
}

/// Iterates over [`Members`] as byte slices.
#[derive(Clone)]
pub struct MembersIter<'a> {
    m: &'a Members,
    front: usize,
    back: usize,
}

impl<'a> Iterator for MembersIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.front == self.back {
            return None;
        }
        self.front += 1;
        self.m.get(self.front - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.back - self.front, Some(self.back - self.front))
    }

    fn nth(&mut self, n: usize) -> Option<&'a [u8]> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for MembersIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        self.m.get(self.back)
    }
}

impl ExactSizeIterator for MembersIter<'_> {}

impl<'a> IntoIterator for &'a Members {
    type Item = &'a [u8];
    type IntoIter = MembersIter<'a>;

    fn into_iter(self) -> MembersIter<'a> {
        self.iter()
    }
}

impl<T: AsRef<[u8]>> FromIterator<T> for Members {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut m = Members::new();
        for s in iter {
            m.push(s.as_ref());
        }
        m
    }
}

impl<T: AsRef<[u8]>> From<Vec<T>> for Members {
    fn from(v: Vec<T>) -> Self {
        v.into_iter().collect()
    }
}

/// Writes bytes as a quoted string with non-printable bytes escaped.
struct Escaped<'a>(&'a [u8]);

impl fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &b in self.0 {
            write!(f, "{}", std::ascii::escape_default(b))?;
        }
        f.write_str("\"")
    }
}

impl fmt::Debug for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter().map(Escaped)).finish()
    }
}

/// Field/value pairs (hashes).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Pairs {
    /// Fields at even indices, values at odd ones.
    flat: Members,
}

impl Pairs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `pairs` pairs totalling `bytes` bytes.
    pub fn with_capacity(pairs: usize, bytes: usize) -> Self {
        Pairs {
            flat: Members::with_capacity(pairs.saturating_mul(2), bytes),
        }
    }

    pub fn push(&mut self, field: &[u8], value: &[u8]) {
        self.flat.push(field);
        self.flat.push(value);
    }

    /// Built from members alternating field, value (the count must be even).
    pub(crate) fn from_flat(flat: Members) -> Self {
        debug_assert!(flat.len().is_multiple_of(2));
        Pairs { flat }
    }

    /// The members alternating field, value.
    pub(crate) fn into_flat(self) -> Members {
        self.flat
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.flat.len() / 2
    }

    pub fn is_empty(&self) -> bool {
        self.flat.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        Some((self.flat.get(2 * i)?, self.flat.get(2 * i + 1)?))
    }

    pub fn field(&self, i: usize) -> &[u8] {
        &self.flat[2 * i]
    }

    /// The pairs in order: a walk of the ends, each pair's start the end before it.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> + Clone + '_ {
        let Members { data, ends } = &self.flat;
        ends.chunks_exact(2).enumerate().map(move |(i, e)| {
            let start = if i == 0 { 0 } else { ends[2 * i - 1] };
            (&data[start..e[0]], &data[e[0]..e[1]])
        })
    }

    /// Total bytes of fields and values.
    pub fn byte_len(&self) -> usize {
        self.flat.byte_len()
    }

    fn sorted(&self) -> Pairs {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| self.field(a).cmp(self.field(b)));
        let flat: Vec<usize> = order.iter().flat_map(|&i| [2 * i, 2 * i + 1]).collect();
        Pairs {
            flat: self.flat.permuted(&flat),
        }
    }
}

impl<A: AsRef<[u8]>, B: AsRef<[u8]>> FromIterator<(A, B)> for Pairs {
    fn from_iter<I: IntoIterator<Item = (A, B)>>(iter: I) -> Self {
        let mut p = Pairs::new();
        for (a, b) in iter {
            p.push(a.as_ref(), b.as_ref());
        }
        p
    }
}

impl<A: AsRef<[u8]>, B: AsRef<[u8]>> From<Vec<(A, B)>> for Pairs {
    fn from(v: Vec<(A, B)>) -> Self {
        v.into_iter().collect()
    }
}

impl fmt::Debug for Pairs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (Escaped(k), Escaped(v))))
            .finish()
    }
}

/// Members with scores (sorted sets).
#[derive(Clone, Default, PartialEq)]
pub struct Scored {
    members: Members,
    scores: Vec<f64>,
}

impl Scored {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, member: &[u8], score: f64) {
        self.members.push(member);
        self.scores.push(score);
    }

    pub(crate) fn from_parts(members: Members, scores: Vec<f64>) -> Self {
        debug_assert_eq!(members.len(), scores.len());
        Scored { members, scores }
    }

    pub(crate) fn into_parts(self) -> (Members, Vec<f64>) {
        (self.members, self.scores)
    }

    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<(&[u8], f64)> {
        Some((self.members.get(i)?, *self.scores.get(i)?))
    }

    pub fn members(&self) -> &Members {
        &self.members
    }

    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], f64)> + Clone + '_ {
        self.members.iter().zip(self.scores.iter().copied())
    }

    fn sorted(&self) -> Scored {
        let order = self.members.sorted_order();
        Scored {
            members: self.members.permuted(&order),
            scores: order.iter().map(|&i| self.scores[i]).collect(),
        }
    }
}

impl<A: AsRef<[u8]>> FromIterator<(A, f64)> for Scored {
    fn from_iter<I: IntoIterator<Item = (A, f64)>>(iter: I) -> Self {
        let mut s = Scored::new();
        for (m, score) in iter {
            s.push(m.as_ref(), score);
        }
        s
    }
}

impl<A: AsRef<[u8]>> From<Vec<(A, f64)>> for Scored {
    fn from(v: Vec<(A, f64)>) -> Self {
        v.into_iter().collect()
    }
}

impl fmt::Debug for Scored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (Escaped(k), v)))
            .finish()
    }
}

/// Sorting for [`crate::RdbValue::normalized`].
pub(crate) trait Sorted {
    fn sorted(&self) -> Self;
}

impl Sorted for Members {
    fn sorted(&self) -> Self {
        self.permuted(&self.sorted_order())
    }
}

impl Sorted for Pairs {
    fn sorted(&self) -> Self {
        Pairs::sorted(self)
    }
}

impl Sorted for Scored {
    fn sorted(&self) -> Self {
        Scored::sorted(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_order_and_bytes() {
        let m: Members = ["b", "", "a", "ccc"].iter().collect();
        assert_eq!(m.len(), 4);
        assert_eq!(m.iter().collect::<Vec<_>>(), [&b"b"[..], b"", b"a", b"ccc"]);
        assert_eq!(m.iter().next_back(), Some(&b"ccc"[..]));
        assert_eq!(m.get(4), None);
        assert_eq!(
            m.sorted().iter().collect::<Vec<_>>(),
            [&b""[..], b"a", b"b", b"ccc"]
        );
        let p: Pairs = vec![("z", "1"), ("a", "2")].into();
        assert_eq!(
            p.sorted().iter().collect::<Vec<_>>(),
            [(&b"a"[..], &b"2"[..]), (b"z", b"1")]
        );
        let s: Scored = vec![("z", 1.0), ("a", 2.0)].into();
        assert_eq!(
            s.sorted().iter().collect::<Vec<_>>(),
            [(&b"a"[..], 2.0), (b"z", 1.0)]
        );
        assert_eq!(format!("{p:?}"), r#"{"z": "1", "a": "2"}"#);
    }
}
