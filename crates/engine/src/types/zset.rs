//! Sorted sets: a compact form ("listpack") up to `zset-max-listpack-entries` elements of at
//! most `zset-max-listpack-value` bytes, then a scalable form ("skiplist", see
//! `zset_tree.rs`). Conversion happens when a write exceeds the thresholds, never back,
//! except that the STORE commands pick the form for their result's final size, as Redis's
//! `zsetConvertToListpackIfNeeded` does.
//!
//! Order: by score as a double (-0 and +0 compare equal), ties by member bytes. Scores are
//! never NaN here; the commands refuse NaN before calling in.

#[path = "zset_tree.rs"]
mod tree;

use crate::entry::EntryRef;
use crate::locked::{Locked, WrongType};
use crate::types::hash::table::{put_varint, varint_len};
use crate::types::Encodings;
use crate::value::Value;
use tree::Tree;

/// The compact form: one contiguous buffer of entries sorted by (score, member). An entry
/// is `varint(member length) member score`, the score being one tag byte then:
/// - tag 0: 8 bytes, the f64 bits (little-endian);
/// - tag 1..=8: an integer of that many bytes (little-endian two's complement);
/// - tag 9..=255: the integer `tag - 9` (0..=246).
///
/// Like Redis's listpack, integral scores within +-2^62 are kept as integers, so -0 reads
/// back as 0 in this form (as in Redis).
#[derive(Clone, Default)]
struct Pack {
    buf: Vec<u8>,
    len: usize,
}

/// One decoded entry of a `Pack`: bytes `start..end` of the buffer.
#[derive(Clone, Copy)]
struct PEntry<'a> {
    member: &'a [u8],
    score: f64,
    start: usize,
    end: usize,
}

/// Redis's double2ll: an integral double within +-LLONG_MAX/2.
fn double_to_i64(d: f64) -> Option<i64> {
    const LIM: f64 = (i64::MAX / 2) as f64;
    if !(-LIM..=LIM).contains(&d) {
        return None;
    }
    let l = d as i64;
    (l as f64 == d).then_some(l)
}

fn get_varint(buf: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut v: usize = 0;
    let mut shift = 0;
    loop {
        let b = *buf.get(at)?;
        at += 1;
        v |= ((b & 0x7f) as usize).checked_shl(shift)?;
        if b < 0x80 {
            return Some((v, at));
        }
        shift += 7;
    }
}

fn encode_entry(out: &mut Vec<u8>, member: &[u8], score: f64) {
    put_varint(out, member.len());
    out.extend_from_slice(member);
    let (code, n) = score_code(score);
    out.extend_from_slice(&code[..n]);
}

/// Whether `len` members, the longest `maxlen` bytes, take the listpack form under `enc`.
fn fits_pack(len: usize, maxlen: usize, enc: &Encodings) -> bool {
    len <= enc.zset_entries() && maxlen <= enc.zset_value()
}

/// The bytes `encode_entry` writes.
fn entry_len(member: &[u8], score: f64) -> usize {
    varint_len(member.len()) + member.len() + score_code(score).1
}

/// A score as it is packed: its tag byte and what follows (the first `.1` bytes).
fn score_code(score: f64) -> ([u8; 9], usize) {
    let mut code = [0u8; 9];
    match double_to_i64(score) {
        Some(i) if (0..=246).contains(&i) => {
            code[0] = 9 + i as u8;
            (code, 1)
        }
        Some(i) => {
            let bytes = i.to_le_bytes();
            let mut n = 8;
            while n > 1 {
                let top = bytes[n - 1];
                let next_sign = bytes[n - 2] & 0x80;
                if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                    n -= 1;
                } else {
                    break;
                }
            }
            code[0] = n as u8;
            code[1..=n].copy_from_slice(&bytes[..n]);
            (code, n + 1)
        }
        None => {
            code[1..].copy_from_slice(&score.to_bits().to_le_bytes());
            (code, 9)
        }
    }
}

impl Pack {
    fn entry_at(&self, start: usize) -> Option<PEntry<'_>> {
        let (mlen, at) = get_varint(&self.buf, start)?;
        let mend = at.checked_add(mlen)?;
        let member = self.buf.get(at..mend)?;
        let tag = *self.buf.get(mend)?;
        let (score, end) = match tag {
            0 => {
                let b = self.buf.get(mend + 1..mend + 9)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                (f64::from_bits(u64::from_le_bytes(a)), mend + 9)
            }
            1..=8 => {
                let n = tag as usize;
                let b = self.buf.get(mend + 1..mend + 1 + n)?;
                let fill = if b[n - 1] & 0x80 != 0 { 0xff } else { 0 };
                let mut a = [fill; 8];
                a[..n].copy_from_slice(b);
                (i64::from_le_bytes(a) as f64, mend + 1 + n)
            }
            t => (f64::from(t - 9), mend + 1),
        };
        Some(PEntry {
            member,
            score,
            start,
            end,
        })
    }

    fn iter(&self) -> PackIter<'_> {
        PackIter { pack: self, at: 0 }
    }

    fn entries(&self) -> Vec<PEntry<'_>> {
        let mut v = Vec::with_capacity(self.len);
        v.extend(self.iter());
        v
    }

    fn find(&self, member: &[u8]) -> Option<PEntry<'_>> {
        self.iter().find(|e| e.member == member)
    }

    fn insert(&mut self, member: &[u8], score: f64) {
        let at = self
            .iter()
            .find(|e| e.score > score || (e.score == score && e.member > member))
            .map_or(self.buf.len(), |e| e.start);
        let mut enc = Vec::with_capacity(member.len() + 10);
        encode_entry(&mut enc, member, score);
        self.buf.splice(at..at, enc);
        self.len += 1;
    }

    fn delete(&mut self, start: usize, end: usize, n: usize) {
        self.buf.drain(start..end);
        self.len -= n;
    }
}

struct PackIter<'a> {
    pack: &'a Pack,
    at: usize,
}

impl<'a> Iterator for PackIter<'a> {
    type Item = PEntry<'a>;
    fn next(&mut self) -> Option<PEntry<'a>> {
        if self.at >= self.pack.buf.len() {
            return None;
        }
        let e = self.pack.entry_at(self.at)?;
        self.at = e.end;
        Some(e)
    }
}

enum Repr {
    Pack(Pack),
    Tree(Box<Tree>),
}

/// A sorted set value.
pub struct ZSetValue {
    repr: Repr,
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue {
            repr: Repr::Pack(Pack::default()),
        }
    }
}

impl Clone for ZSetValue {
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Pack(p) => ZSetValue {
                repr: Repr::Pack(p.clone()),
            },
            Repr::Tree(_) => {
                let mut items: Vec<(Box<[u8]>, f64)> = Vec::with_capacity(self.len());
                self.for_range(0, self.len(), false, |m, s| items.push((m.into(), s)));
                ZSetValue {
                    repr: Repr::Tree(Box::new(Tree::from_sorted(items))),
                }
            }
        }
    }
}

impl PartialEq for ZSetValue {
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let mut a = Vec::with_capacity(self.len());
        self.for_range(0, self.len(), false, |m, s| a.push((m.to_vec(), s)));
        let mut same = true;
        let mut i = 0;
        other.for_range(0, other.len(), false, |m, s| {
            same &= a.get(i).is_some_and(|(am, as_)| am == m && *as_ == s);
            i += 1;
        });
        same
    }
}

impl std::fmt::Debug for ZSetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut l = f.debug_list();
        self.for_range(0, self.len(), false, |m, s| {
            l.entry(&(String::from_utf8_lossy(m), s));
        });
        l.finish()
    }
}

impl ZSetValue {
    /// An empty set in the form Redis would create for `len_hint` elements whose longest
    /// member is `max_member_len` bytes (zaddGenericCommand / zrangeResultBeginStore).
    pub fn with_hint(len_hint: usize, max_member_len: usize, enc: &Encodings) -> ZSetValue {
        if enc.zset_entries() == 0
            || len_hint > enc.zset_entries()
            || max_member_len > enc.zset_value()
        {
            ZSetValue {
                repr: Repr::Tree(Box::default()),
            }
        } else {
            ZSetValue::default()
        }
    }

    /// A set of distinct members (any order), in the form for its final size, as the
    /// STORE commands build them (zsetConvertToListpackIfNeeded).
    pub fn from_members<M>(mut items: Vec<(M, f64)>, enc: &Encodings) -> ZSetValue
    where
        M: AsRef<[u8]> + Into<Box<[u8]>>,
    {
        items.sort_by(|a, b| {
            a.1.partial_cmp(&b.1)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.0.as_ref().cmp(b.0.as_ref()))
        });
        let maxlen = items
            .iter()
            .map(|(m, _)| m.as_ref().len())
            .max()
            .unwrap_or(0);
        if fits_pack(items.len(), maxlen, enc) {
            let size = items.iter().map(|(m, s)| entry_len(m.as_ref(), *s)).sum();
            return ZSetValue::packed(items.iter().map(|(m, s)| (m.as_ref(), *s)), size);
        }
        ZSetValue::tree(items.into_iter().map(|(m, s)| (m.into(), s)))
    }

    /// `from_members` of items that may already be in the set's order (by score, then
    /// member), as a dump's listpack holds them: those are packed as they come, with no
    /// copy to sort; any others go through `from_members`.
    pub fn from_ordered<'a, I>(items: I, enc: &Encodings) -> ZSetValue
    where
        I: ExactSizeIterator<Item = (&'a [u8], f64)> + Clone,
    {
        let (mut size, mut maxlen, mut prev) = (0, 0, None::<(&[u8], f64)>);
        for (m, s) in items.clone() {
            let ordered = prev.is_none_or(|(pm, ps)| ps < s || (ps == s && pm < m));
            if !ordered {
                return ZSetValue::from_members(items.collect(), enc);
            }
            size += entry_len(m, s);
            maxlen = maxlen.max(m.len());
            prev = Some((m, s));
        }
        if fits_pack(items.len(), maxlen, enc) {
            return ZSetValue::packed(items, size);
        }
        ZSetValue::tree(items.map(|(m, s)| (m.into(), s)))
    }

    /// The listpack form of `items`, in the set's order, whose entries take `size` bytes:
    /// sized exactly, one allocation, as a loaded set gets it.
    fn packed<'a>(items: impl ExactSizeIterator<Item = (&'a [u8], f64)>, size: usize) -> ZSetValue {
        let mut p = Pack {
            buf: Vec::with_capacity(size),
            len: items.len(),
        };
        for (m, s) in items {
            encode_entry(&mut p.buf, m, s);
        }
        ZSetValue {
            repr: Repr::Pack(p),
        }
    }

    /// The skiplist form of `items`, in the set's order.
    fn tree(items: impl Iterator<Item = (Box<[u8]>, f64)>) -> ZSetValue {
        ZSetValue {
            repr: Repr::Tree(Box::new(Tree::from_sorted(items))),
        }
    }

    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Pack(_) => "listpack",
            Repr::Tree(_) => "skiplist",
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Pack(p) => p.len,
            Repr::Tree(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes (MEMORY USAGE), members estimated from the first `samples` (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Pack(p) => crate::memory::heap_of_capacity(p.buf.capacity()),
            Repr::Tree(t) => {
                crate::memory::size_class(std::mem::size_of::<Tree>()) + t.heap_bytes(samples)
            }
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Pack(p) => p.find(member).map(|e| e.score),
            Repr::Tree(t) => t.score(member),
        }
    }

    fn convert(&mut self) {
        if let Repr::Pack(p) = &self.repr {
            let items: Vec<(Box<[u8]>, f64)> =
                p.iter().map(|e| (e.member.into(), e.score)).collect();
            self.repr = Repr::Tree(Box::new(Tree::from_sorted(items)));
        }
    }

    /// ZADD input flags for `add`.
    pub const NX: u8 = 1;
    pub const XX: u8 = 2;
    pub const GT: u8 = 4;
    pub const LT: u8 = 8;
    pub const INCR: u8 = 16;
    /// `add` outcomes (Redis's ZADD_OUT_*): the member was added / its score changed /
    /// skipped by NX, XX, GT or LT / INCR made NaN (nothing changed) / the scalable form is
    /// at its size limit of 4G - 2 elements. None of these: processed, score unchanged.
    pub const ADDED: u8 = 1;
    pub const UPDATED: u8 = 2;
    pub const NOP: u8 = 4;
    pub const NAN: u8 = 8;
    pub const FULL: u8 = 16;

    /// Redis's zsetAdd: add or update one member under ZADD's flags (`NX | XX | ...`).
    /// `score` must not be NaN. Converts to the scalable form when the thresholds would be
    /// exceeded. Returns the outcome flag (`ADDED`...) and the member's new score.
    pub fn add(&mut self, member: &[u8], score: f64, flags: u8, enc: &Encodings) -> (u8, f64) {
        let has = |f: u8| flags & f != 0;
        let cur = self.score(member);
        if let Some(cur) = cur {
            if has(Self::NX) {
                return (Self::NOP, cur);
            }
            let mut score = score;
            if has(Self::INCR) {
                score += cur;
                if score.is_nan() {
                    return (Self::NAN, cur);
                }
            }
            if (has(Self::LT) && score >= cur) || (has(Self::GT) && score <= cur) {
                return (Self::NOP, cur);
            }
            if score == cur {
                return (0, score);
            }
            match &mut self.repr {
                Repr::Pack(p) => {
                    if let Some(e) = p.find(member) {
                        let (s, en) = (e.start, e.end);
                        p.delete(s, en, 1);
                    }
                    p.insert(member, score);
                }
                Repr::Tree(t) => t.set_score(member, score),
            }
            return (Self::UPDATED, score);
        }
        if has(Self::XX) {
            return (Self::NOP, score);
        }
        if let Repr::Pack(p) = &self.repr {
            if p.len + 1 > enc.zset_entries() || member.len() > enc.zset_value() {
                self.convert();
            }
        }
        match &mut self.repr {
            Repr::Pack(p) => p.insert(member, score),
            Repr::Tree(t) => {
                if !t.insert_new(member, score) {
                    return (Self::FULL, score);
                }
            }
        }
        (Self::ADDED, score)
    }

    /// Removes a member; its score if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Pack(p) => {
                let e = p.find(member)?;
                let (s, en, score) = (e.start, e.end, e.score);
                p.delete(s, en, 1);
                Some(score)
            }
            Repr::Tree(t) => t.remove(member),
        }
    }

    /// 0-based rank in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Pack(p) => p.iter().position(|e| e.member == member),
            Repr::Tree(t) => t.rank(member),
        }
    }

    /// The element at an ascending rank.
    pub fn get(&self, rank: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Pack(p) => p.iter().nth(rank).map(|e| (e.member, e.score)),
            Repr::Tree(t) => t.get(rank),
        }
    }

    /// Calls `f` for ascending ranks `start..end`, in ascending order or (rev) descending.
    pub fn for_range<'a>(
        &'a self,
        start: usize,
        end: usize,
        rev: bool,
        mut f: impl FnMut(&'a [u8], f64),
    ) {
        self.walk(start, end, rev, |m, s| {
            f(m, s);
            true
        });
    }

    /// Like `for_range`, stopping as soon as `f` returns false.
    pub fn walk<'a>(
        &'a self,
        start: usize,
        end: usize,
        rev: bool,
        mut f: impl FnMut(&'a [u8], f64) -> bool,
    ) {
        let end = end.min(self.len());
        if start >= end {
            return;
        }
        match &self.repr {
            Repr::Pack(p) => {
                if rev {
                    let all = p.entries();
                    for e in all[start..end].iter().rev() {
                        if !f(e.member, e.score) {
                            return;
                        }
                    }
                } else {
                    for e in p.iter().skip(start).take(end - start) {
                        if !f(e.member, e.score) {
                            return;
                        }
                    }
                }
            }
            Repr::Tree(t) => t.for_range(start, end, rev, &mut f),
        }
    }

    /// The ascending ranks `lo..=hi` of the elements in `range`, found as Redis finds them:
    /// forward from the first element >= min while <= max, or (rev) backward from the last
    /// element <= max while >= min. In the compact form this is Redis's linear scan
    /// exactly, so even lex ranges over mixed scores answer as Redis does.
    ///
    /// `empty` is Redis's "always empty" pre-test (min > max...); `gte_min` and `lte_max`
    /// test an element against each end.
    pub fn span(
        &self,
        empty: bool,
        gte_min: &dyn Fn(&[u8], f64) -> bool,
        lte_max: &dyn Fn(&[u8], f64) -> bool,
        rev: bool,
    ) -> Option<(usize, usize)> {
        let n = self.len();
        if empty || n == 0 {
            return None;
        }
        let (lm, ls) = self.get(n - 1)?;
        let (fm, fs) = self.get(0)?;
        if !gte_min(lm, ls) || !lte_max(fm, fs) {
            return None;
        }
        match &self.repr {
            Repr::Pack(p) => {
                let all = p.entries();
                if rev {
                    let hi = all.iter().rposition(|e| lte_max(e.member, e.score))?;
                    if !gte_min(all[hi].member, all[hi].score) {
                        return None;
                    }
                    let mut lo = hi;
                    while lo > 0 && gte_min(all[lo - 1].member, all[lo - 1].score) {
                        lo -= 1;
                    }
                    Some((lo, hi))
                } else {
                    let lo = all.iter().position(|e| gte_min(e.member, e.score))?;
                    if !lte_max(all[lo].member, all[lo].score) {
                        return None;
                    }
                    let mut hi = lo;
                    while hi + 1 < n && lte_max(all[hi + 1].member, all[hi + 1].score) {
                        hi += 1;
                    }
                    Some((lo, hi))
                }
            }
            Repr::Tree(t) => {
                let lo = t.count_prefix(&|m, s| !gte_min(m, s));
                let end = t.count_prefix(&|m, s| lte_max(m, s));
                (lo < end).then(|| (lo, end - 1))
            }
        }
    }

    /// Removes ascending ranks `start..end`; returns how many went.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.len());
        if start >= end {
            return 0;
        }
        match &mut self.repr {
            Repr::Pack(p) => {
                let (from, to) = {
                    let all = p.entries();
                    (all[start].start, all[end - 1].end)
                };
                p.delete(from, to, end - start);
                end - start
            }
            Repr::Tree(t) => t.remove_ranks(start, end),
        }
    }

    /// Removes and returns up to `count` elements from the low end (or `max`: the high end),
    /// in pop order. ZPOPMIN/ZPOPMAX/ZMPOP and the blocking pops share this.
    pub fn pop(&mut self, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
        let n = self.len();
        let k = count.min(n);
        let (start, end) = if max { (n - k, n) } else { (0, k) };
        let mut out = Vec::with_capacity(k);
        self.for_range(start, end, max, |m, s| out.push((m.to_vec(), s)));
        self.remove_ranks(start, end);
        out
    }

    /// ZSCAN: the compact form answers everything at once (cursor 0); the scalable form walks
    /// its slab from the top in steps of about `count`. Returns the next cursor.
    pub fn scan<'a>(&'a self, cursor: u64, count: usize, mut f: impl FnMut(&'a [u8], f64)) -> u64 {
        match &self.repr {
            Repr::Pack(p) => {
                for e in p.iter() {
                    f(e.member, e.score);
                }
                0
            }
            Repr::Tree(t) => t.scan(cursor, count, &mut f),
        }
    }
}

impl Locked<'_> {
    /// A sorted set for editing: `Ok(None)` if the key is missing, WRONGTYPE for other types.
    pub fn zset_mut(&mut self, key: &[u8]) -> Result<Option<&mut ZSetValue>, WrongType> {
        match self.collection_mut(key)? {
            None => Ok(None),
            Some(Value::ZSet(z)) => Ok(Some(z)),
            Some(_) => Err(WrongType),
        }
    }

    /// A read lookup (counts a hit or miss, touches the key) of a sorted set.
    pub fn zset_get(&mut self, key: &[u8]) -> Result<Option<&ZSetValue>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => e.as_zset().map(Some),
        }
    }

    /// Read lookups of several keys at once (ZUNION, ZINTER...): each key is counted as a
    /// hit or miss and touched, then all values are lent together. WRONGTYPE at the first
    /// string; the caller checks the collection types it accepts.
    pub fn values_for_read<K: AsRef<[u8]>>(
        &mut self,
        keys: &[K],
    ) -> Result<Vec<Option<&Value>>, WrongType> {
        for k in keys {
            if let Some(e) = self.get(k.as_ref()) {
                if e.value().is_none_or(|v| matches!(v, Value::Str(_))) {
                    return Err(WrongType);
                }
            }
        }
        let this = &*self;
        Ok(keys.iter().map(|k| this.value_ref(k.as_ref())).collect())
    }

    /// A write-path lookup (no statistics) of a sorted set.
    pub fn zset_peek(&mut self, key: &[u8]) -> Result<Option<&ZSetValue>, WrongType> {
        match self.peek(key) {
            None => Ok(None),
            Some(e) => e.as_zset().map(Some),
        }
    }
}

impl<'a> EntryRef<'a> {
    /// The sorted set held here, or WRONGTYPE.
    pub fn as_zset(&self) -> Result<&'a ZSetValue, WrongType> {
        match self.value() {
            Some(Value::ZSet(z)) => Ok(z),
            _ => Err(WrongType),
        }
    }
}

#[cfg(test)]
#[path = "zset_tests.rs"]
mod tests;
