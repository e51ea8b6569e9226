//! The hash type. Two forms, as Redis 7.0:
//!
//! - **listpack** (small hashes): one contiguous buffer `[count u32][entries]`, each entry
//!   `[varint length][bytes]`, fields and values alternating in insertion order (new
//!   fields append, updates stay in place, as Redis's listpack). One byte of overhead per
//!   string where Redis's listpack spends two. The buffer is kept at its exact size.
//! - **hashtable** (large hashes): a [`Dense`] table of field+value [`Pair`]s.
//!
//! A hash converts to the hashtable form when a write would give it more than
//! `hash-max-listpack-entries` fields or a field or value longer than
//! `hash-max-listpack-value` bytes, and never converts back (Redis's hashTypeTryConversion
//! and hashTypeSet).

#[path = "hash_table.rs"]
pub(crate) mod table;

use self::table::{get_varint, put_varint, varint_len, Dense, Pair};
use super::Encodings;
use crate::locked::{Locked, WrongType};
use crate::value::Value;

/// Redis's LISTPACK_MAX_SAFETY_SIZE: a listpack never grows past 1 GiB.
const PACK_MAX_BYTES: usize = 1 << 30;
const PACK_HDR: usize = 4;

/// A field and its value.
pub type FieldValue<'a> = (&'a [u8], &'a [u8]);

/// A hash value.
#[derive(Clone)]
pub struct HashValue(Repr);

#[derive(Clone)]
enum Repr {
    Pack(Pack),
    Table(Box<Dense<Pair>>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue(Repr::Pack(Pack::new()))
    }
}

impl HashValue {
    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        match self.0 {
            Repr::Pack(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Pack(p) => p.count(),
            Repr::Table(t) => t.len(),
        }
    }

    /// Heap bytes (MEMORY USAGE), fields and values outside their slots estimated from the
    /// first `samples` (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        match &self.0 {
            Repr::Pack(p) => crate::memory::heap_of_capacity(p.0.capacity()),
            Repr::Table(t) => t.heap_bytes(samples),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.0 {
            Repr::Pack(p) => p.find(field).map(|f| f.value),
            Repr::Table(t) => t.get(field).map(Pair::value),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// A hash of `pairs`, whose fields are distinct (loading a dump: its reader refuses
    /// repeated fields), in the form HSET would have given it under `enc`. Builds the
    /// listpack in one allocation instead of a search and a reallocation per field.
    pub fn from_distinct<'a, I>(pairs: I, enc: &Encodings) -> HashValue
    where
        I: ExactSizeIterator<Item = (&'a [u8], &'a [u8])> + Clone,
    {
        let max = enc.hash_value();
        let mut bytes = PACK_HDR;
        let mut fits = pairs.len() <= enc.hash_entries();
        for (f, v) in pairs.clone() {
            if !fits {
                break;
            }
            fits = f.len() <= max && v.len() <= max;
            // Exact, so the listpack is allocated once at its final size.
            bytes =
                bytes.saturating_add(varint_len(f.len()) + f.len() + varint_len(v.len()) + v.len());
        }
        if fits && bytes <= PACK_MAX_BYTES {
            let mut p = Pack(Vec::with_capacity(bytes));
            p.0.resize(PACK_HDR, 0);
            for (f, v) in pairs.clone() {
                put_varint(&mut p.0, f.len());
                p.0.extend_from_slice(f);
                put_varint(&mut p.0, v.len());
                p.0.extend_from_slice(v);
            }
            p.set_count(pairs.len());
            return HashValue(Repr::Pack(p));
        }
        let mut t = Dense::with_capacity(pairs.len());
        for (f, v) in pairs {
            t.push_new(Pair::new(f, v));
        }
        HashValue(Repr::Table(Box::new(t)))
    }

    /// Redis's hashTypeTryConversion, before a write of the strings whose lengths are
    /// `lens` (HSET's fields and values): any longer than `hash-max-listpack-value`, or a
    /// total that would push the listpack past its safety size, converts the hash.
    pub fn prepare_write(&mut self, lens: impl IntoIterator<Item = usize>, enc: &Encodings) {
        let Repr::Pack(p) = &self.0 else { return };
        let current = p.0.len();
        let max = enc.hash_value();
        let mut sum: usize = 0;
        for l in lens {
            if l > max {
                return self.convert();
            }
            sum = sum.saturating_add(l);
        }
        if current.saturating_add(sum) > PACK_MAX_BYTES {
            self.convert();
        }
    }

    /// Redis's hashTypeSet: sets `field` to `value`; true if the field existed (an update).
    pub fn set(&mut self, field: &[u8], value: &[u8], enc: &Encodings) -> bool {
        self.fit(field, value, enc);
        let updated = match &mut self.0 {
            Repr::Pack(p) => p.set(field, value),
            Repr::Table(t) => t.upsert(Pair::new(field, value)),
        };
        self.after_insert(enc);
        updated
    }

    /// Adds `field`, known to be absent.
    fn insert_new(&mut self, field: &[u8], value: &[u8], enc: &Encodings) {
        self.fit(field, value, enc);
        match &mut self.0 {
            Repr::Pack(p) => p.append(field, value),
            Repr::Table(t) => t.push_new(Pair::new(field, value)),
        }
        self.after_insert(enc);
    }

    /// Before a write: a listpack converts if the field or value is too long for it.
    fn fit(&mut self, field: &[u8], value: &[u8], enc: &Encodings) {
        if let Repr::Pack(p) = &self.0 {
            let max = enc.hash_value();
            let too_big =
                p.0.len()
                    .saturating_add(field.len())
                    .saturating_add(value.len())
                    > PACK_MAX_BYTES;
            if field.len() > max || value.len() > max || too_big {
                self.convert();
            }
        }
    }

    /// After a write: a listpack converts once it has too many fields.
    fn after_insert(&mut self, enc: &Encodings) {
        if matches!(&self.0, Repr::Pack(p) if p.count() > enc.hash_entries()) {
            self.convert();
        }
    }

    /// Sets `field` to what `f` makes of its current value (`None`: absent) and returns
    /// that. An existing field is found once and, when the form allows, written in place
    /// (HINCRBY's read-modify-write was a lookup for the read and another for the write).
    /// Nothing changes when `f` fails.
    pub fn update<V: AsRef<[u8]>, E>(
        &mut self,
        field: &[u8],
        enc: &Encodings,
        f: impl FnOnce(Option<&[u8]>) -> Result<V, E>,
    ) -> Result<V, E> {
        let new = match &mut self.0 {
            Repr::Table(t) => match t.position(field) {
                Some(p) => {
                    let new = f(t.items().get(p).map(Pair::value))?;
                    t.replace_at(p, Pair::new(field, new.as_ref()));
                    return Ok(new);
                }
                None => f(None)?,
            },
            Repr::Pack(p) => match p.find(field) {
                Some(found) => {
                    let (vstart, end, old_len) = (found.vstart, found.end, found.value.len());
                    let new = f(Some(found.value))?;
                    if new.as_ref().len() == old_len {
                        p.replace_value(vstart, end, new.as_ref());
                    } else {
                        // The new length may be too long for a listpack: as a write.
                        self.set(field, new.as_ref(), enc);
                    }
                    return Ok(new);
                }
                None => f(None)?,
            },
        };
        self.insert_new(field, new.as_ref(), enc);
        Ok(new)
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.0 {
            Repr::Pack(p) => p.remove(field),
            Repr::Table(t) => t.remove(field).is_some(),
        }
    }

    /// Field/value pairs in storage order (insertion order for a listpack).
    pub fn iter(&self) -> HashIter<'_> {
        HashIter(match &self.0 {
            Repr::Pack(p) => IterRepr::Pack(p.elems()),
            Repr::Table(t) => IterRepr::Table(t.items().iter()),
        })
    }

    /// The `i`-th pair in storage order: O(1) for a hashtable, O(n) for a listpack.
    pub fn nth(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.0 {
            Repr::Pack(_) => self.iter().nth(i),
            Repr::Table(t) => t.items().get(i).map(Pair::parts),
        }
    }

    /// One HSCAN step: a listpack returns everything with cursor 0 (as Redis); a hashtable
    /// walks positions (see `Dense::scan`), `count` fields per call.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<FieldValue<'_>>) {
        match &self.0 {
            Repr::Pack(_) => (0, self.iter().collect()),
            Repr::Table(t) => {
                let (next, items) = t.scan(cursor, count);
                (next, items.map(Pair::parts).collect())
            }
        }
    }

    fn convert(&mut self) {
        let Repr::Pack(p) = &self.0 else { return };
        let mut t = Dense::with_capacity(p.count());
        for (f, v) in p.elems() {
            t.push_new(Pair::new(f, v));
        }
        self.0 = Repr::Table(Box::new(t));
    }
}

impl PartialEq for HashValue {
    /// Same fields with the same values, whatever the form or order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl std::fmt::Debug for HashValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (lossy(k), lossy(v))))
            .finish()
    }
}

/// Iterator over a hash's field/value pairs.
pub struct HashIter<'a>(IterRepr<'a>);

enum IterRepr<'a> {
    Pack(PackPairs<'a>),
    Table(crate::types::segments::Iter<'a, Pair>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Pack(p) => p.next(),
            IterRepr::Table(t) => t.next().map(Pair::parts),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Pack(p) => (p.left, Some(p.left)),
            IterRepr::Table(t) => t.size_hint(),
        }
    }
}

impl ExactSizeIterator for HashIter<'_> {}

// ---------------------------------------------------------------------------------------
// The listpack form

#[derive(Clone)]
struct Pack(Vec<u8>);

/// Where a field and its value sit in a pack.
struct Found<'a> {
    /// Offset of the field's length prefix.
    start: usize,
    /// Offset of the value's length prefix.
    vstart: usize,
    /// Offset just past the value.
    end: usize,
    value: &'a [u8],
}

impl Pack {
    fn new() -> Pack {
        Pack(vec![0; PACK_HDR])
    }

    fn count(&self) -> usize {
        match self.0.get(..PACK_HDR) {
            Some(h) => u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize,
            None => 0,
        }
    }

    fn set_count(&mut self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(h) = self.0.get_mut(..PACK_HDR) {
            h.copy_from_slice(&n.to_le_bytes());
        }
    }

    /// The string at `at` and the offset after it.
    fn elem_at(&self, at: usize) -> Option<(&[u8], usize)> {
        let rest = self.0.get(at..)?;
        if rest.is_empty() {
            return None;
        }
        let (len, used) = get_varint(rest);
        let s = rest.get(used..used.checked_add(len)?)?;
        Some((s, at + used + len))
    }

    fn elems(&self) -> PackPairs<'_> {
        PackPairs {
            pack: self,
            at: PACK_HDR,
            left: self.count(),
        }
    }

    fn find(&self, field: &[u8]) -> Option<Found<'_>> {
        let mut at = PACK_HDR;
        loop {
            let (f, vstart) = self.elem_at(at)?;
            let (v, end) = self.elem_at(vstart)?;
            if f == field {
                return Some(Found {
                    start: at,
                    vstart,
                    end,
                    value: v,
                });
            }
            at = end;
        }
    }

    /// True if the field existed (its value is replaced in place).
    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        let Some(f) = self.find(field) else {
            self.append(field, value);
            return false;
        };
        let (vstart, end) = (f.vstart, f.end);
        self.replace_value(vstart, end, value);
        true
    }

    /// Replaces the value whose length prefix starts at `vstart` and which ends at `end`:
    /// in place when the length is the same, else by moving what follows.
    fn replace_value(&mut self, vstart: usize, end: usize, value: &[u8]) {
        let (old_len, used) = get_varint(&self.0[vstart..end]);
        if old_len == value.len() {
            self.0[vstart + used..end].copy_from_slice(value);
            return;
        }
        let mut enc = Vec::with_capacity(value.len() + 5);
        put_varint(&mut enc, value.len());
        enc.extend_from_slice(value);
        self.0.splice(vstart..end, enc);
        self.0.shrink_to_fit();
    }

    /// Appends a field known to be absent, keeping the buffer at its exact size.
    fn append(&mut self, field: &[u8], value: &[u8]) {
        self.0.reserve_exact(field.len() + value.len() + 10);
        put_varint(&mut self.0, field.len());
        self.0.extend_from_slice(field);
        put_varint(&mut self.0, value.len());
        self.0.extend_from_slice(value);
        self.set_count(self.count() + 1);
        self.0.shrink_to_fit();
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let Some(f) = self.find(field) else {
            return false;
        };
        let (start, end) = (f.start, f.end);
        self.0.drain(start..end);
        self.set_count(self.count().saturating_sub(1));
        self.0.shrink_to_fit();
        true
    }
}

struct PackPairs<'a> {
    pack: &'a Pack,
    at: usize,
    left: usize,
}

impl<'a> Iterator for PackPairs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (f, vstart) = self.pack.elem_at(self.at)?;
        let (v, end) = self.pack.elem_at(vstart)?;
        self.at = end;
        self.left = self.left.saturating_sub(1);
        Some((f, v))
    }
}

// ---------------------------------------------------------------------------------------
// Typed access through a lock

impl Locked<'_> {
    /// HGET's lookup (counts a hit or miss): the hash, a miss, or WRONGTYPE.
    pub fn get_hash(&mut self, key: &[u8]) -> Result<Option<&HashValue>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => match e.value() {
                Some(Value::Hash(h)) => Ok(Some(h)),
                _ => Err(WrongType),
            },
        }
    }

    /// The hash for editing, None when the key is missing, or WRONGTYPE.
    pub fn hash_mut(&mut self, key: &[u8]) -> Result<Option<&mut HashValue>, WrongType> {
        match self.collection_mut(key)? {
            None => Ok(None),
            Some(Value::Hash(h)) => Ok(Some(h)),
            Some(_) => Err(WrongType),
        }
    }

    /// The hash for editing, created empty when the key is missing (the caller must not
    /// leave it empty), or WRONGTYPE.
    pub fn hash_mut_or_create(&mut self, key: &[u8]) -> Result<&mut HashValue, WrongType> {
        match self.collection_mut_or_create(key, || Value::Hash(HashValue::default()))? {
            Value::Hash(h) => Ok(h),
            _ => Err(WrongType),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(entries: usize, value: usize) -> Encodings {
        let e = Encodings::default();
        e.hash_max_listpack_entries
            .store(entries, std::sync::atomic::Ordering::Relaxed);
        e.hash_max_listpack_value
            .store(value, std::sync::atomic::Ordering::Relaxed);
        e
    }

    #[test]
    fn pack_set_get_remove_keeps_order() {
        let e = enc(128, 64);
        let mut h = HashValue::default();
        assert!(!h.set(b"a", b"1", &e));
        assert!(!h.set(b"b", b"2", &e));
        assert!(!h.set(b"c", b"3", &e));
        assert!(h.set(b"b", &[b'x'; 300][..64], &e));
        assert_eq!(h.encoding(), "listpack");
        assert_eq!(h.len(), 3);
        let fields: Vec<&[u8]> = h.iter().map(|p| p.0).collect();
        assert_eq!(fields, vec![&b"a"[..], b"b", b"c"]);
        assert_eq!(h.get(b"b"), Some(&[b'x'; 64][..]));
        assert!(h.remove(b"a"));
        assert!(!h.remove(b"a"));
        assert_eq!(h.get(b"c"), Some(&b"3"[..]));
        assert_eq!(h.len(), 2);
        assert_eq!(h.nth(1), Some((&b"c"[..], &b"3"[..])));
    }

    #[test]
    fn a_loaded_hash_is_its_listpack_exactly() {
        let e = enc(128, 200);
        let long = [b'v'; 150];
        let pairs: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"field", &long), (b"", b"")];
        let h = HashValue::from_distinct(pairs.iter().copied(), &e);
        let Repr::Pack(p) = &h.0 else {
            panic!("expected a listpack")
        };
        assert_eq!(p.0.len(), p.0.capacity());
        assert_eq!(h.iter().collect::<Vec<_>>(), pairs);
    }

    #[test]
    fn converts_on_entries_and_value_length() {
        let e = enc(4, 8);
        let mut h = HashValue::default();
        for i in 0..4 {
            h.set(format!("f{i}").as_bytes(), b"v", &e);
        }
        assert_eq!(h.encoding(), "listpack");
        h.set(b"f9", b"v", &e);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 5);
        for i in 0..4 {
            assert_eq!(h.get(format!("f{i}").as_bytes()), Some(&b"v"[..]));
        }
        let mut h = HashValue::default();
        h.set(b"f", b"123456789", &e);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = HashValue::default();
        h.set(b"f", b"1", &e);
        h.prepare_write([1, 9], &e);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"f"), Some(&b"1"[..]));
    }

    /// `update` gives what `set` would, in both forms: in place for a value of the same
    /// length, through `set` for another length or a new field, nothing when `f` fails.
    #[test]
    fn update_matches_set_in_both_forms() {
        let e = enc(4, 8);
        for table in [false, true] {
            let mut h = HashValue::default();
            h.set(b"a", b"10", &e);
            h.set(b"b", b"7", &e);
            if table {
                h.convert();
            }
            let next = |old: Option<&[u8]>| -> Result<Vec<u8>, ()> {
                let n: u32 = old.map_or(Ok(0), |v| {
                    std::str::from_utf8(v).unwrap().parse().map_err(|_| ())
                })?;
                Ok((n + 1).to_string().into_bytes())
            };
            assert_eq!(h.update(b"a", &e, next), Ok(b"11".to_vec()));
            assert_eq!(h.update(b"b", &e, next), Ok(b"8".to_vec()));
            assert_eq!(h.update(b"c", &e, next), Ok(b"1".to_vec()));
            h.set(b"d", b"99", &e);
            assert_eq!(h.update(b"d", &e, next), Ok(b"100".to_vec()));
            h.set(b"x", b"no", &e);
            let fail = |_: Option<&[u8]>| -> Result<Vec<u8>, ()> { Err(()) };
            assert_eq!(h.update(b"x", &e, fail), Err(()));
            assert_eq!(h.update(b"y", &e, fail), Err(()));
            let mut want = HashValue::default();
            for (f, v) in [
                ("a", "11"),
                ("b", "8"),
                ("c", "1"),
                ("d", "100"),
                ("x", "no"),
            ] {
                want.set(f.as_bytes(), v.as_bytes(), &e);
            }
            assert!(h == want, "table form: {table}: {h:?}");
            // Past the entry limit either way.
            assert_eq!(h.encoding(), "hashtable");
        }
        // A new field that is too long converts a listpack, as set does.
        let mut h = HashValue::default();
        let long = |_: Option<&[u8]>| Ok::<_, ()>(b"123456789".to_vec());
        h.update(b"f", &e, long).unwrap();
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"f"), Some(&b"123456789"[..]));
    }

    #[test]
    fn equality_ignores_form() {
        let e = enc(128, 64);
        let mut a = HashValue::default();
        let mut b = HashValue::default();
        a.set(b"x", b"1", &e);
        a.set(b"y", b"2", &e);
        b.set(b"y", b"2", &e);
        b.set(b"x", b"1", &e);
        b.convert();
        assert_eq!(a, b);
        b.set(b"x", b"3", &e);
        assert_ne!(a, b);
    }
}
