//! Table entries. Most keys hold small strings, so a string entry is one allocation laid out
//! as `[flags u8][lru u24][key len u32][expire u64, if flagged][key][value]`: one table bucket
//! of 24 bytes plus one heap block, instead of Redis's dictEntry + robj + two sds. Entries
//! of other types, and strings being edited in place, use the general `Obj` form.

use crate::value::Value;

const FLAG_EXPIRE: u8 = 1;
const HDR: usize = 8;

pub(crate) enum Slot {
    Packed(Box<[u8]>),
    Obj(Box<ObjEntry>),
}

pub(crate) struct ObjEntry {
    pub key: Box<[u8]>,
    /// Absolute expiry in Unix ms, 0 for none: a plain u64 (not an Option) keeps the
    /// entry within jemalloc's 64-byte class.
    expire: u64,
    pub lru: u32,
    pub value: Value,
}

impl ObjEntry {
    pub fn new(key: &[u8], expire_at: Option<u64>, lru: u32, value: Value) -> ObjEntry {
        ObjEntry {
            key: key.into(),
            expire: expire_at.unwrap_or(0),
            lru,
            value,
        }
    }

    pub fn expire_at(&self) -> Option<u64> {
        (self.expire != 0).then_some(self.expire)
    }

    pub fn set_expire_at(&mut self, at: Option<u64>) {
        // An expiry at the epoch itself is long past either way; keep it distinguishable.
        self.expire = at.map_or(0, |t| t.max(1));
    }
}

/// The type of a key's value, as TYPE names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    List,
    Set,
    ZSet,
    Hash,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Hash => "hash",
        }
    }

    /// Parses a TYPE name (SCAN ... TYPE), case-insensitively.
    pub fn parse(name: &[u8]) -> Option<Kind> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_slice() {
            b"string" => Kind::String,
            b"list" => Kind::List,
            b"set" => Kind::Set,
            b"zset" => Kind::ZSet,
            b"hash" => Kind::Hash,
            _ => return None,
        })
    }
}

impl Slot {
    pub fn packed(key: &[u8], value: &[u8], expire_at: Option<u64>, lru: u32) -> Slot {
        let exp_len = if expire_at.is_some() { 8 } else { 0 };
        let mut b = Vec::with_capacity(HDR + exp_len + key.len() + value.len());
        b.push(if expire_at.is_some() { FLAG_EXPIRE } else { 0 });
        b.extend_from_slice(&lru.to_le_bytes()[..3]);
        b.extend_from_slice(&(key.len() as u32).to_le_bytes());
        if let Some(at) = expire_at {
            b.extend_from_slice(&at.to_le_bytes());
        }
        b.extend_from_slice(key);
        b.extend_from_slice(value);
        Slot::Packed(b.into_boxed_slice())
    }

    /// Builds the compact form of a value: strings pack, everything else is an Obj.
    pub fn new(key: &[u8], value: Value, expire_at: Option<u64>, lru: u32) -> Slot {
        match value {
            Value::Str(s) => Slot::packed(key, &s, expire_at, lru),
            value => Slot::Obj(Box::new(ObjEntry::new(key, expire_at, lru, value))),
        }
    }

    fn key_start(b: &[u8]) -> usize {
        HDR + if b[0] & FLAG_EXPIRE != 0 { 8 } else { 0 }
    }

    fn key_len(b: &[u8]) -> usize {
        u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize
    }

    pub fn key(&self) -> &[u8] {
        match self {
            Slot::Packed(b) => {
                let s = Self::key_start(b);
                &b[s..s + Self::key_len(b)]
            }
            Slot::Obj(o) => &o.key,
        }
    }

    pub fn expire_at(&self) -> Option<u64> {
        match self {
            Slot::Packed(b) if b[0] & FLAG_EXPIRE != 0 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(&b[HDR..HDR + 8]);
                Some(u64::from_le_bytes(a))
            }
            Slot::Packed(_) => None,
            Slot::Obj(o) => o.expire_at(),
        }
    }

    pub fn is_expired(&self, now: u64) -> bool {
        matches!(self.expire_at(), Some(at) if at <= now)
    }

    pub fn lru(&self) -> u32 {
        match self {
            Slot::Packed(b) => u32::from_le_bytes([b[1], b[2], b[3], 0]),
            Slot::Obj(o) => o.lru,
        }
    }

    pub fn touch(&mut self, lru: u32) {
        match self {
            Slot::Packed(b) => b[1..4].copy_from_slice(&lru.to_le_bytes()[..3]),
            Slot::Obj(o) => o.lru = lru,
        }
    }

    /// Sets or clears the expiry. A packed entry is rebuilt only when the flag changes.
    pub fn set_expire(&mut self, expire_at: Option<u64>) {
        match self {
            Slot::Packed(b) => {
                let had = b[0] & FLAG_EXPIRE != 0;
                match (had, expire_at) {
                    (true, Some(at)) => b[HDR..HDR + 8].copy_from_slice(&at.to_le_bytes()),
                    (false, None) => {}
                    _ => {
                        let lru = self.lru();
                        let rebuilt = Slot::packed(self.key(), self.packed_str(), expire_at, lru);
                        *self = rebuilt;
                    }
                }
            }
            Slot::Obj(o) => o.set_expire_at(expire_at),
        }
    }

    fn packed_str(&self) -> &[u8] {
        match self {
            Slot::Packed(b) => &b[Self::key_start(b) + Self::key_len(b)..],
            Slot::Obj(_) => &[],
        }
    }

    pub fn view(&self) -> EntryRef<'_> {
        EntryRef { slot: self }
    }

    /// The general form of this entry, converting a packed string in place, for edits.
    pub fn obj_mut(&mut self) -> &mut ObjEntry {
        if let Slot::Packed(_) = self {
            let value = Value::Str(self.packed_str().to_vec());
            let obj = ObjEntry::new(self.key(), self.expire_at(), self.lru(), value);
            *self = Slot::Obj(Box::new(obj));
        }
        match self {
            Slot::Obj(o) => o,
            Slot::Packed(_) => unreachable!("converted above"),
        }
    }

    /// The entry's value and expiry, copied out.
    pub fn to_owned_value(&self) -> crate::value::Owned {
        crate::value::Owned {
            value: self.to_value(),
            expire_at: self.expire_at(),
        }
    }

    /// The value, copied out in its general form (RENAME, MOVE, COPY).
    pub fn to_value(&self) -> Value {
        match self {
            Slot::Packed(_) => Value::Str(self.packed_str().to_vec()),
            Slot::Obj(o) => o.value.clone(),
        }
    }

    pub fn into_value(self) -> Value {
        match self {
            Slot::Packed(_) => Value::Str(self.packed_str().to_vec()),
            Slot::Obj(o) => o.value,
        }
    }
}

/// A read-only view of an entry.
#[derive(Clone, Copy)]
pub struct EntryRef<'a> {
    slot: &'a Slot,
}

impl<'a> EntryRef<'a> {
    pub fn key(&self) -> &'a [u8] {
        self.slot.key()
    }

    pub fn kind(&self) -> Kind {
        match self.slot {
            Slot::Packed(_) => Kind::String,
            Slot::Obj(o) => match o.value {
                Value::Str(_) => Kind::String,
                Value::Hash(_) => Kind::Hash,
                Value::List(_) => Kind::List,
                Value::Set(_) => Kind::Set,
                Value::ZSet(_) => Kind::ZSet,
            },
        }
    }

    /// The string value, or None when the key holds another type.
    pub fn as_str(&self) -> Option<&'a [u8]> {
        match self.slot {
            Slot::Packed(_) => Some(self.slot.packed_str()),
            Slot::Obj(o) => match &o.value {
                Value::Str(s) => Some(s),
                _ => None,
            },
        }
    }

    /// The general-form value, or None for a packed string (use `as_str`).
    pub fn value(&self) -> Option<&'a Value> {
        match self.slot {
            Slot::Packed(_) => None,
            Slot::Obj(o) => Some(&o.value),
        }
    }

    pub fn expire_at(&self) -> Option<u64> {
        self.slot.expire_at()
    }

    pub fn lru(&self) -> u32 {
        self.slot.lru()
    }

    /// OBJECT ENCODING's answer, with Redis's names and thresholds for strings: a packed
    /// string that reads as an i64 is "int", one of up to 44 bytes "embstr", an edited or
    /// longer one "raw".
    pub fn encoding(&self) -> &'static str {
        match self.slot {
            Slot::Packed(_) => {
                let s = self.slot.packed_str();
                if s.len() <= 20 && is_canonical_i64(s) {
                    "int"
                } else if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Slot::Obj(o) => match &o.value {
                Value::Str(_) => "raw",
                Value::Hash(h) => h.encoding(),
                Value::List(l) => l.encoding(),
                Value::Set(s) => s.encoding(),
                Value::ZSet(z) => z.encoding(),
            },
        }
    }
}

/// True when `s` is the canonical decimal text of an i64 (what Redis would encode as int).
pub fn is_canonical_i64(s: &[u8]) -> bool {
    crate::int::parse_i64(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_round_trip() {
        let mut s = Slot::packed(b"key", b"value", None, 7);
        assert_eq!(s.key(), b"key");
        assert_eq!(s.view().as_str(), Some(&b"value"[..]));
        assert_eq!(s.expire_at(), None);
        assert_eq!(s.lru(), 7);
        s.set_expire(Some(1234));
        assert_eq!(s.expire_at(), Some(1234));
        assert_eq!(s.key(), b"key");
        assert_eq!(s.view().as_str(), Some(&b"value"[..]));
        s.set_expire(Some(99));
        assert_eq!(s.expire_at(), Some(99));
        s.touch(0xABCDEF);
        assert_eq!(s.lru(), 0xABCDEF);
        s.set_expire(None);
        assert_eq!(s.expire_at(), None);
        assert_eq!(s.lru(), 0xABCDEF);
        let o = s.obj_mut();
        assert_eq!(o.value, Value::Str(b"value".to_vec()));
        assert_eq!(s.key(), b"key");
    }

    #[test]
    fn encodings() {
        let enc = |v: &[u8]| Slot::packed(b"k", v, None, 0).view().encoding();
        assert_eq!(enc(b"123"), "int");
        assert_eq!(enc(b"-9223372036854775808"), "int");
        assert_eq!(enc(b"0123"), "embstr");
        assert_eq!(enc(&[b'x'; 44]), "embstr");
        assert_eq!(enc(&[b'x'; 45]), "raw");
    }
}

#[cfg(test)]
mod layout {
    /// Memory per key depends on these staying in jemalloc's small classes.
    #[test]
    fn entry_sizes() {
        assert_eq!(std::mem::size_of::<super::Slot>(), 16);
        assert_eq!(std::mem::size_of::<crate::value::Value>(), 32);
        assert!(std::mem::size_of::<super::ObjEntry>() <= 64);
    }
}
