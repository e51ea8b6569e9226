//! The set type. Two forms, as Redis 7.0 (which has no listpack sets):
//!
//! - **intset**: while every member is the canonical text of an i64 and there are at most
//!   `set-max-intset-entries` of them: sorted integers in one buffer at 16, 32 or 64 bits
//!   each (see `set_intset`). Iteration is ascending, as Redis's.
//! - **hashtable**: a [`Dense`] table of members, each stored inline up to 22 bytes.
//!
//! A set converts to the hashtable when a non-integer member arrives or the intset grows
//! past the limit (capped at 2^30 as Redis caps it), and never back.

#[path = "set_intset.rs"]
mod intset;

use self::intset::IntSet;
use super::hash::table::{Dense, Small};
use super::Encodings;
use crate::int;
use crate::locked::{Guards, Locked, WrongType};
use crate::shard::{hash, ShardData};
use crate::value::Value;

type Member = Small<22>;

/// A set value.
#[derive(Clone)]
pub struct SetValue(Repr);

#[derive(Clone)]
enum Repr {
    Ints(IntSet),
    Table(Box<Dense<Member>>),
}

impl Default for SetValue {
    /// An empty intset (Redis's createIntsetObject).
    fn default() -> Self {
        SetValue(Repr::Ints(IntSet::default()))
    }
}

/// A member as stored: an intset integer or the bytes of a hashtable member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Elem<'_> {
    /// The member's bytes (an integer's decimal text written into `buf`).
    pub fn bytes<'b>(&'b self, buf: &'b mut [u8; 20]) -> &'b [u8] {
        match self {
            Elem::Bytes(b) => b,
            Elem::Int(n) => {
                let start = itoa(*n, buf);
                &buf[start..]
            }
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        let mut buf = [0u8; 20];
        self.bytes(&mut buf).to_vec()
    }
}

fn itoa(n: i64, buf: &mut [u8; 20]) -> usize {
    let mut v = n.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    i
}

/// Redis's cap on set-max-intset-entries.
fn intset_max(enc: &Encodings) -> usize {
    enc.set_intset_entries().min(1 << 30)
}

impl SetValue {
    /// Redis's setTypeCreate: an intset if `first` (the first member to be added) is an
    /// integer, else a hashtable.
    pub fn new_for(first: &[u8]) -> SetValue {
        Self::sized_for(first, 0)
    }

    /// `new_for` with room for `n` members if it is a hashtable (a set being loaded whole).
    fn sized_for(first: &[u8], n: usize) -> SetValue {
        if int::parse_i64(first).is_some() {
            SetValue::default()
        } else {
            SetValue(Repr::Table(Box::new(Dense::with_capacity(n))))
        }
    }

    /// A set of `members`, which are distinct (loading a dump: its reader refuses repeated
    /// members), in the form SADD would have given it under `enc`. A hashtable is sized
    /// once and each member hashed once, with no search for it first.
    pub fn from_distinct<'a, I>(members: I, enc: &Encodings) -> SetValue
    where
        I: ExactSizeIterator<Item = &'a [u8]> + Clone,
    {
        let Some(first) = members.clone().next() else {
            return SetValue::default();
        };
        let mut set = SetValue::sized_for(first, members.len());
        if let Repr::Table(t) = &mut set.0 {
            for m in members {
                debug_assert!(!t.contains(m), "a member twice");
                t.push_new(Member::new(m));
            }
        } else {
            for m in members {
                set.add(m, enc);
            }
        }
        set
    }

    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        match self.0 {
            Repr::Ints(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Ints(i) => i.len(),
            Repr::Table(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes (MEMORY USAGE), members outside their slots estimated from the first
    /// `samples` (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        match &self.0 {
            Repr::Ints(i) => i.heap_bytes(),
            Repr::Table(t) => t.heap_bytes(samples),
        }
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match &self.0 {
            Repr::Ints(i) => int::parse_i64(m).is_some_and(|v| i.contains(v)),
            Repr::Table(t) => t.contains(m),
        }
    }

    /// Membership of an element of another set, without a round trip through text where
    /// both sides are integers.
    pub fn contains_elem(&self, e: Elem<'_>) -> bool {
        match (&self.0, e) {
            (Repr::Ints(i), Elem::Int(v)) => i.contains(v),
            (_, e) => {
                let mut buf = [0u8; 20];
                self.contains(e.bytes(&mut buf))
            }
        }
    }

    /// Redis's setTypeAdd: true if `m` was not a member.
    pub fn add(&mut self, m: &[u8], enc: &Encodings) -> bool {
        match &mut self.0 {
            Repr::Ints(i) => match int::parse_i64(m) {
                Some(v) => {
                    if !i.add(v) {
                        return false;
                    }
                    if i.len() > intset_max(enc) {
                        self.convert();
                    }
                    true
                }
                None => {
                    self.convert();
                    if let Repr::Table(t) = &mut self.0 {
                        t.push_new(Member::new(m));
                    }
                    true
                }
            },
            Repr::Table(t) => t.insert(Member::new(m)),
        }
    }

    /// True if `m` was a member.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match &mut self.0 {
            Repr::Ints(i) => int::parse_i64(m).is_some_and(|v| i.remove(v)),
            Repr::Table(t) => t.remove(m).is_some(),
        }
    }

    /// The `i`-th member in storage order, in O(1).
    pub fn nth(&self, i: usize) -> Option<Elem<'_>> {
        match &self.0 {
            Repr::Ints(s) => s.get(i).map(Elem::Int),
            Repr::Table(t) => t.items().get(i).map(|m| Elem::Bytes(m.as_bytes())),
        }
    }

    /// Removes and returns the `i`-th member in storage order.
    pub fn remove_nth(&mut self, i: usize) -> Option<Vec<u8>> {
        match &mut self.0 {
            Repr::Ints(s) => s.remove_at(i).map(|v| Elem::Int(v).to_vec()),
            Repr::Table(t) => t.remove_at(i).map(|m| m.as_bytes().to_vec()),
        }
    }

    /// Members in storage order (ascending for an intset).
    pub fn iter(&self) -> SetIter<'_> {
        SetIter {
            set: self,
            i: 0,
            n: self.len(),
        }
    }

    /// One SSCAN step: an intset returns everything with cursor 0 (as Redis); a hashtable
    /// walks positions (see `Dense::scan`).
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Elem<'_>>) {
        match &self.0 {
            Repr::Ints(_) => (0, self.iter().collect()),
            Repr::Table(t) => {
                let (next, items) = t.scan(cursor, count);
                (next, items.map(|m| Elem::Bytes(m.as_bytes())).collect())
            }
        }
    }

    fn convert(&mut self) {
        let Repr::Ints(i) = &self.0 else { return };
        let mut t = Dense::with_capacity(i.len());
        let mut buf = [0u8; 20];
        for v in i.iter() {
            let start = itoa(v, &mut buf);
            t.push_new(Member::new(&buf[start..]));
        }
        self.0 = Repr::Table(Box::new(t));
    }
}

impl PartialEq for SetValue {
    /// Same members, whatever the form.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.iter().all(|e| {
                let mut buf = [0u8; 20];
                other.contains(e.bytes(&mut buf))
            })
    }
}

impl std::fmt::Debug for SetValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(
                self.iter()
                    .map(|e| String::from_utf8_lossy(&e.to_vec()).into_owned()),
            )
            .finish()
    }
}

/// Iterator over a set's members.
pub struct SetIter<'a> {
    set: &'a SetValue,
    i: usize,
    n: usize,
}

impl<'a> Iterator for SetIter<'a> {
    type Item = Elem<'a>;

    fn next(&mut self) -> Option<Elem<'a>> {
        if self.i >= self.n {
            return None;
        }
        self.i += 1;
        self.set.nth(self.i - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.n.saturating_sub(self.i);
        (left, Some(left))
    }
}

impl ExactSizeIterator for SetIter<'_> {}

// ---------------------------------------------------------------------------------------
// Typed access through a lock

impl<'a> Locked<'a> {
    /// A read lookup (counts a hit or miss): the set, a miss, or WRONGTYPE.
    pub fn get_set(&mut self, key: &[u8]) -> Result<Option<&SetValue>, WrongType> {
        match self.get(key) {
            None => Ok(None),
            Some(e) => match e.value() {
                Some(Value::Set(s)) => Ok(Some(s)),
                _ => Err(WrongType),
            },
        }
    }

    /// Read lookups of several keys at once (SINTER, SUNION...), in order: WRONGTYPE at
    /// the first key of another type, as Redis's loop answers.
    pub fn get_sets<K: AsRef<[u8]>>(
        &mut self,
        keys: &[K],
    ) -> Result<Vec<Option<&SetValue>>, WrongType> {
        for k in keys {
            if let Some(e) = self.get(k.as_ref()) {
                if !matches!(e.value(), Some(Value::Set(_))) {
                    return Err(WrongType);
                }
            }
        }
        let this = &*self;
        Ok(keys
            .iter()
            .map(|k| match this.value_ref(k.as_ref()) {
                Some(Value::Set(s)) => Some(s),
                _ => None,
            })
            .collect())
    }

    /// A shared view of a key's value for a key already looked up through this guard
    /// (expired keys were removed then). No statistics.
    pub(crate) fn value_ref(&self, key: &[u8]) -> Option<&Value> {
        let h = hash(key);
        let idx = self.db.shard_index(h);
        let shard: &ShardData = match &self.guards {
            Guards::One(i, g) if *i == idx => g,
            Guards::Many(v) => {
                let pos = v.binary_search_by_key(&idx, |(i, _)| *i).ok()?;
                &v[pos].1
            }
            Guards::One(..) => return None,
        };
        match shard.find(h, key)? {
            e if e.is_expired(self.now()) => None,
            e => e.value(),
        }
    }

    /// The set for editing, None when the key is missing, or WRONGTYPE.
    pub fn set_mut(&mut self, key: &[u8]) -> Result<Option<&mut SetValue>, WrongType> {
        match self.collection_mut(key)? {
            None => Ok(None),
            Some(Value::Set(s)) => Ok(Some(s)),
            Some(_) => Err(WrongType),
        }
    }

    /// The set for editing, created (as `SetValue::new_for(first)`) when missing; the
    /// caller must not leave it empty. WRONGTYPE for another type.
    pub fn set_mut_or_create(
        &mut self,
        key: &[u8],
        first: &[u8],
    ) -> Result<&mut SetValue, WrongType> {
        match self.collection_mut_or_create(key, || Value::Set(SetValue::new_for(first)))? {
            Value::Set(s) => Ok(s),
            _ => Err(WrongType),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(max: usize) -> Encodings {
        let e = Encodings::default();
        e.set_max_intset_entries
            .store(max, std::sync::atomic::Ordering::Relaxed);
        e
    }

    #[test]
    fn intset_then_hashtable() {
        let e = enc(3);
        let mut s = SetValue::new_for(b"3");
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"3", &e));
        assert!(s.add(b"1", &e));
        assert!(!s.add(b"1", &e));
        assert!(s.add(b"2", &e));
        let v: Vec<Vec<u8>> = s.iter().map(|e| e.to_vec()).collect();
        assert_eq!(v, vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]);
        assert!(!s.contains(b"01"));
        assert!(s.add(b"4", &e));
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"4") && s.contains(b"1") && !s.contains(b"5"));
        let mut s = SetValue::new_for(b"1");
        s.add(b"1", &e);
        s.add(b"x", &e);
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"1") && s.contains(b"x"));
        assert!(s.remove(b"1") && !s.remove(b"1"));
        assert_eq!(s.remove_nth(0), Some(b"x".to_vec()));
        assert!(s.is_empty());
    }
}
