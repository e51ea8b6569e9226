//! Decoding a snapshot chunk's entries (the format: docs/persistence.md), and stepping over
//! the values a reader does not want.

use crate::format::u64_at;
use crate::snapshot::{
    Place, F_CLEAN, F_COLD, F_EXPIRE, T_HASH, T_LIST, T_SET, T_STR, T_STREAM, T_ZSET,
};
use strata_engine::{Encodings, HashValue, Kind, ListValue, SetValue, Value, ZSetValue};

pub(crate) struct Cur<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) p: usize,
}

pub(crate) type DecodeResult<T> = Result<T, &'static str>;

impl<'a> Cur<'a> {
    pub(crate) fn u8(&mut self) -> DecodeResult<u8> {
        let v = *self.b.get(self.p).ok_or("entry cut short")?;
        self.p += 1;
        Ok(v)
    }
    pub(crate) fn u64le(&mut self) -> DecodeResult<u64> {
        let s = self.take(8)?;
        Ok(u64_at(s, 0))
    }
    pub(crate) fn varint(&mut self) -> DecodeResult<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return Err("varint overflow");
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint overflow")
    }
    fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        if n > self.b.len() - self.p {
            return Err("entry cut short");
        }
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }
    pub(crate) fn bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| "length too large")?;
        self.take(n)
    }
    /// An element count, sanity-checked against the bytes left (each element takes at least
    /// one), so a damaged count cannot trigger a huge allocation.
    pub(crate) fn count(&mut self) -> DecodeResult<usize> {
        let n = self.varint()?;
        if n > (self.b.len() - self.p) as u64 {
            return Err("element count larger than the chunk");
        }
        Ok(n as usize)
    }
}

type Decoded = (Place, u32, Vec<u8>, Option<u64>, Value);

/// Decodes entries as [`encode_entry`]/[`encode_value`] wrote them into `bytes` (a chunk
/// for `SnapshotWriter::raw_chunk`), calling `f(db, key, expire_at, value)` for each.
/// Returns how many; an error names the offset of the entry that does not decode.
pub fn decode_entries(
    bytes: &[u8],
    enc: &Encodings,
    mut f: impl FnMut(u32, Vec<u8>, Option<u64>, Value),
) -> Result<u64, String> {
    let mut c = Cur { b: bytes, p: 0 };
    let mut n = 0;
    while c.p < bytes.len() {
        let at = c.p;
        let (_, db, key, exp, value) =
            decode_entry(&mut c, enc).map_err(|e| format!("entry at offset {at}: {e}"))?;
        f(db, key, exp, value);
        n += 1;
    }
    Ok(n)
}

/// An entry's tag, database, expiry and key: what precedes its value.
pub(crate) struct Head {
    pub(crate) place: Place,
    /// The value's type (T_*).
    pub(crate) kind: u8,
    pub(crate) db: u32,
    pub(crate) expire_at: Option<u64>,
    pub(crate) key: Vec<u8>,
}

pub(crate) fn decode_head(c: &mut Cur<'_>) -> DecodeResult<Head> {
    let tag = c.u8()?;
    let place = match (tag & F_COLD != 0, tag & F_CLEAN != 0) {
        (false, false) => Place::Ram,
        (true, false) => Place::Cold,
        (false, true) => Place::Clean,
        (true, true) => return Err("entry both cold and in RAM"),
    };
    let db = u32::try_from(c.varint()?).map_err(|_| "db number too large")?;
    let expire_at = if tag & F_EXPIRE != 0 {
        Some(c.u64le()?)
    } else {
        None
    };
    let key = c.bytes()?.to_vec();
    let kind = tag & !(F_EXPIRE | F_COLD | F_CLEAN);
    Ok(Head {
        place,
        kind,
        db,
        expire_at,
        key,
    })
}

/// The type and expiry of the entry at the start of `bytes`, its value left undecoded (a
/// cold entry's TYPE, SCAN TYPE): a tier record holds one entry.
pub fn entry_kind(bytes: &[u8]) -> Result<(Kind, Option<u64>), String> {
    let h = decode_head(&mut Cur { b: bytes, p: 0 }).map_err(String::from)?;
    let kind = match h.kind {
        T_STR => Kind::String,
        T_HASH => Kind::Hash,
        T_LIST => Kind::List,
        T_SET => Kind::Set,
        T_ZSET => Kind::ZSet,
        T_STREAM => Kind::Stream,
        _ => return Err("unknown value type".into()),
    };
    Ok((kind, h.expire_at))
}

/// Whether two encoded entries hold the same value with the same expiry, whatever their
/// databases, keys and places: a snapshot's copy of a cold entry against the tier's record
/// of it. Damage in either is a difference.
pub fn same_entry(a: &[u8], b: &[u8]) -> bool {
    let value = |bytes| {
        let mut c = Cur { b: bytes, p: 0 };
        let h = decode_head(&mut c).ok()?;
        Some((h.kind, h.expire_at, &bytes[c.p..]))
    };
    value(a).is_some_and(|a| value(b) == Some(a))
}

fn decode_entry(c: &mut Cur<'_>, enc: &Encodings) -> DecodeResult<Decoded> {
    let h = decode_head(c)?;
    let value = decode_value(c, h.kind, enc)?;
    Ok((h.place, h.db, h.key, h.expire_at, value))
}

/// Steps over a value of type `kind`, checking that it is all there.
pub(crate) fn skip_value(c: &mut Cur<'_>, kind: u8) -> DecodeResult<()> {
    let items = |c: &mut Cur<'_>, per: usize, score: bool| -> DecodeResult<()> {
        for _ in 0..c.count()? {
            for _ in 0..per {
                c.bytes()?;
            }
            if score {
                c.u64le()?;
            }
        }
        Ok(())
    };
    match kind {
        T_STR => c.bytes().map(drop),
        T_HASH => items(c, 2, false),
        T_LIST | T_SET => items(c, 1, false),
        T_ZSET => items(c, 1, true),
        // Rare among cold entries: read whole.
        T_STREAM => crate::snapshot_stream::decode_stream(c).map(drop),
        _ => Err("unknown value type"),
    }
}

pub(crate) fn decode_value(c: &mut Cur<'_>, kind: u8, enc: &Encodings) -> DecodeResult<Value> {
    Ok(match kind {
        T_STR => Value::Str(c.bytes()?.to_vec()),
        T_HASH => {
            let n = c.count()?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                pairs.push((c.bytes()?, c.bytes()?));
            }
            if distinct(pairs.iter().map(|p| p.0)) {
                Value::Hash(HashValue::from_distinct(pairs.iter().copied(), enc))
            } else {
                // Only a damaged file repeats a field: the last one wins, as HSET does.
                let mut h = HashValue::default();
                for (field, val) in pairs {
                    h.set(field, val, enc);
                }
                Value::Hash(h)
            }
        }
        T_LIST => {
            let n = c.count()?;
            let mut elems = Vec::with_capacity(n);
            for _ in 0..n {
                elems.push(c.bytes()?);
            }
            Value::List(Box::new(ListValue::from_elems(enc.list_size(), elems)))
        }
        T_SET => {
            let n = c.count()?;
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                members.push(c.bytes()?);
            }
            if distinct(members.iter().copied()) {
                Value::Set(SetValue::from_distinct(members.iter().copied(), enc))
            } else {
                // Only a damaged file repeats a member: SADD keeps it once.
                let mut s: Option<SetValue> = None;
                for m in members {
                    s.get_or_insert_with(|| SetValue::new_for(m)).add(m, enc);
                }
                Value::Set(s.unwrap_or_default())
            }
        }
        T_ZSET => {
            let n = c.count()?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                let m = c.bytes()?;
                let s = f64::from_bits(c.u64le()?);
                if s.is_nan() {
                    return Err("NaN score");
                }
                items.push((m, s));
            }
            // The engine's sorted sets want distinct members; only a damaged file repeats one.
            if !distinct(items.iter().map(|i| i.0)) {
                return Err("duplicate sorted set member");
            }
            // Written in score order, a set is packed as it comes (sorted first otherwise).
            Value::ZSet(Box::new(ZSetValue::from_ordered(
                items.iter().copied(),
                enc,
            )))
        }
        T_STREAM => Value::Stream(Box::new(crate::snapshot_stream::decode_stream(c)?)),
        _ => return Err("unknown value type"),
    })
}

/// Whether no two of `items` are equal: compared pairwise when there are few (a small
/// collection, the common case), sorted when there are more.
fn distinct<'a>(items: impl ExactSizeIterator<Item = &'a [u8]> + Clone) -> bool {
    const PAIRWISE: usize = 16;
    if items.len() <= PAIRWISE {
        let mut rest = items;
        while let Some(a) = rest.next() {
            if rest.clone().any(|b| b == a) {
                return false;
            }
        }
        return true;
    }
    let mut sorted: Vec<&[u8]> = items.collect();
    sorted.sort_unstable();
    sorted.windows(2).all(|w| w[0] != w[1])
}
