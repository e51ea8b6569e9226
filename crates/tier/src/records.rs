//! The tier's record layout: how cold entries, their expiries and the expiry order are
//! keyed in the store (`tiering.rs`), and how a record's bytes decode.
//!
//! Each key of a 4-byte big-endian prefix, then the key:
//! - `shard`: the entry (a flags byte, its access bits in 3 bytes, big-endian, then the
//!   entry in the snapshot file's encoding);
//! - `shard | TTL_BIT`: its expiry, when it has one (8 bytes, big-endian Unix ms), so that
//!   an expiry is read without the value;
//! - `shard | TTL_BIT | ORDER_BIT`, then the expiry (8 bytes, big-endian), then the key: an
//!   empty record per entry with an expiry, so a shard's due entries read in expiry order
//!   and the background pass reads only what is due.
//!
//! Shard numbers stay below 2^20, so the three prefixes of every shard are distinct and a
//! shard's entries sort before every expiry record.
//!
//! An entry record ends in up to 7 bytes of padding (their count in the flags byte) that
//! make its length, modulo 8, its value's type (`kind_of_len`): the store's index knows a
//! record's length without reading a value kept in a blob file, so TYPE and SCAN TYPE of a
//! large cold key read no value.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use strata_engine::{Encodings, Kind, Owned};

/// A record's flags byte: the value keeps the `raw` string encoding; bits 1-3: the bytes of
/// padding at its end.
const RAW: u8 = 1;
const PAD_SHIFT: u8 = 1;
const PAD_MASK: u8 = 7;

/// Bytes of the access bits (an LRU clock or an LFU pair: 24 bits) after the flags.
const ACCESS_BYTES: usize = 3;

/// The longest key the store takes: its keys are at most 65,535 bytes (fjall refuses
/// longer ones by panicking), and the longest of ours, an order key, adds 12 to the key.
/// A longer key never goes to the tier: it stays in RAM.
pub const MAX_KEY_LEN: usize = u16::MAX as usize - 12;

const TTL_BIT: u32 = 1 << 31;
const ORDER_BIT: u32 = 1 << 30;

/// The store's key of `key`'s entry in shard `shard`.
pub(crate) fn record_key(shard: usize, key: &[u8]) -> Vec<u8> {
    prefixed(shard as u32, &[], key)
}

/// The prefix of every entry record of shard `shard`.
pub(crate) fn record_prefix(shard: usize) -> [u8; 4] {
    (shard as u32).to_be_bytes()
}

/// The prefix of every expiry record of shard `shard`.
pub(crate) fn ttl_prefix(shard: usize) -> [u8; 4] {
    (shard as u32 | TTL_BIT).to_be_bytes()
}

/// The prefix of every place in shard `shard`'s expiry order.
pub(crate) fn order_prefix(shard: usize) -> [u8; 4] {
    (shard as u32 | TTL_BIT | ORDER_BIT).to_be_bytes()
}

/// The store's key of `key`'s expiry record.
pub(crate) fn ttl_key(shard: usize, key: &[u8]) -> Vec<u8> {
    prefixed(shard as u32 | TTL_BIT, &[], key)
}

/// The store's key of `key`'s place in its shard's expiry order, for expiry `at`.
pub(crate) fn order_key(shard: usize, at: u64, key: &[u8]) -> Vec<u8> {
    prefixed(shard as u32 | TTL_BIT | ORDER_BIT, &at.to_be_bytes(), key)
}

/// Every order key of shard `shard`.
pub(crate) fn order_range(shard: usize) -> std::ops::Range<Vec<u8>> {
    order_key(shard, 0, b"")..order_key(shard + 1, 0, b"")
}

/// The expiry and the key an order key names; None for a key too short to be one.
pub(crate) fn ordered(order: &[u8]) -> Option<(u64, &[u8])> {
    let at = order.get(4..12)?.try_into().ok()?;
    Some((u64::from_be_bytes(at), &order[12..]))
}

/// For each shard of each database, when its expiry order next has a cold entry due
/// (Unix ms): the background pass skips the shard until then without asking the store.
/// 0 (look now) at first; a pass over the shard sets it to the first expiry past its
/// time, and each cold entry with an earlier one lowers it.
pub(crate) struct NextDue {
    shards: usize,
    at: Vec<AtomicU64>,
}

impl NextDue {
    pub(crate) fn new(databases: usize, shards: usize) -> NextDue {
        let at = (0..databases * shards).map(|_| AtomicU64::new(0)).collect();
        NextDue { shards, at }
    }

    fn slot(&self, db: usize, shard: usize) -> Option<&AtomicU64> {
        self.at.get(db * self.shards + shard)
    }

    pub(crate) fn get(&self, db: usize, shard: usize) -> u64 {
        self.slot(db, shard).map_or(0, |a| a.load(Relaxed))
    }

    pub(crate) fn set(&self, db: usize, shard: usize, at: u64) {
        if let Some(a) = self.slot(db, shard) {
            a.store(at, Relaxed);
        }
    }

    /// A cold entry of the shard expires at `at`.
    pub(crate) fn lower(&self, db: usize, shard: usize, at: u64) {
        if let Some(a) = self.slot(db, shard) {
            a.fetch_min(at, Relaxed);
        }
    }

    /// SWAPDB (it holds both databases' shards).
    pub(crate) fn swap(&self, a: usize, b: usize) {
        for shard in 0..self.shards {
            let (x, y) = (self.get(a, shard), self.get(b, shard));
            self.set(a, shard, y);
            self.set(b, shard, x);
        }
    }
}

/// The first key past every entry record (`records`, `strata check`).
pub(crate) fn records_end() -> [u8; 4] {
    TTL_BIT.to_be_bytes()
}

fn prefixed(prefix: u32, middle: &[u8], key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + middle.len() + key.len());
    k.extend_from_slice(&prefix.to_be_bytes());
    k.extend_from_slice(middle);
    k.extend_from_slice(key);
    k
}

/// An entry record's bytes: the entry and its access bits, padded to say its type.
pub(crate) fn encode_record(entry: &Owned, access: u32) -> Vec<u8> {
    let mut buf = vec![if entry.raw { RAW } else { 0 }];
    buf.extend_from_slice(&access.to_be_bytes()[4 - ACCESS_BYTES..]);
    strata_storage::encode_value(&mut buf, 0, b"", entry.expire_at, &entry.value);
    let code = kind_code(entry.value.kind());
    let pad = (code + 8 - buf.len() % 8) % 8;
    buf.resize(buf.len() + pad, 0);
    buf[0] |= (pad as u8) << PAD_SHIFT;
    buf
}

/// The code a record's length gives its type (modulo 8; 0 and 7 are none).
fn kind_code(kind: Kind) -> usize {
    match kind {
        Kind::String => 1,
        Kind::List => 2,
        Kind::Set => 3,
        Kind::ZSet => 4,
        Kind::Hash => 5,
        Kind::Stream => 6,
    }
}

/// The type of the entry whose record is `len` bytes long (None: a length no record has).
pub(crate) fn kind_of_len(len: usize) -> Option<Kind> {
    [
        Kind::String,
        Kind::List,
        Kind::Set,
        Kind::ZSet,
        Kind::Hash,
        Kind::Stream,
    ]
    .into_iter()
    .find(|k| kind_code(*k) == len % 8)
}

/// An entry record's flags, its access bits, and the encoded entry after them (without
/// its padding).
pub(crate) fn split_record(bytes: &[u8]) -> Result<(u8, u32, &[u8]), String> {
    let (&flags, rest) = bytes.split_first().ok_or("empty record")?;
    let (access, rest) = rest
        .split_first_chunk::<ACCESS_BYTES>()
        .ok_or("a record cut short")?;
    let access = access.iter().fold(0, |a, &b| a << 8 | u32::from(b));
    let pad = usize::from(flags >> PAD_SHIFT & PAD_MASK);
    let body = rest
        .len()
        .checked_sub(pad)
        .ok_or("a record shorter than its padding")?;
    Ok((flags, access, &rest[..body]))
}

/// An entry record's type and expiry, its value left undecoded.
pub(crate) fn record_kind(bytes: &[u8]) -> Result<(Kind, Option<u64>), String> {
    strata_storage::entry_kind(split_record(bytes)?.2)
}

/// An entry record's entry, built under `enc`, and its access bits.
pub(crate) fn decode_record(bytes: &[u8], enc: &Encodings) -> Result<(Owned, u32), String> {
    let (flags, access, rest) = split_record(bytes)?;
    let mut out = None;
    strata_storage::decode_entries(rest, enc, |_, _, expire_at, value| {
        out = Some(Owned {
            value,
            expire_at,
            raw: flags & RAW != 0,
        })
    })?;
    out.map(|o| (o, access))
        .ok_or_else(|| "record without an entry".into())
}

/// An expiry record's expiry.
pub(crate) fn expiry_of(bytes: &[u8]) -> Result<u64, String> {
    let b: [u8; 8] = bytes
        .try_into()
        .map_err(|_| format!("an expiry record of {} bytes", bytes.len()))?;
    Ok(u64::from_be_bytes(b))
}

/// The number of entry records (not expiry records) in a store's tree (`strata check`).
pub(crate) fn records(tree: &fjall::Keyspace) -> Result<u64, fjall::Error> {
    let mut n = 0;
    for kv in tree.range(..records_end()) {
        kv.key()?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_engine::stream::AddId;
    use strata_engine::{HashValue, ListValue, SetValue, StreamValue, Value, ZSetValue};

    /// A value of every type with `n` elements (a string of `n` bytes).
    fn values(n: usize, enc: &Encodings) -> Vec<Value> {
        let items: Vec<Vec<u8>> = (0..n).map(|i| format!("item{i}").into_bytes()).collect();
        let slices = || items.iter().map(Vec::as_slice);
        let mut stream = StreamValue::new();
        for i in 0..n as u64 {
            stream
                .add(AddId::Auto, &[b"f", &items[i as usize][..]], i + 1, enc)
                .unwrap();
        }
        vec![
            Value::Str(vec![b'x'; n]),
            Value::List(Box::new(ListValue::from_elems(-2, slices()))),
            Value::Set(SetValue::from_distinct(slices(), enc)),
            Value::ZSet(Box::new(ZSetValue::from_members(
                slices()
                    .map(|m| (m.to_vec().into_boxed_slice(), 1.5))
                    .collect(),
                enc,
            ))),
            Value::Hash(HashValue::from_distinct(slices().map(|m| (m, m)), enc)),
            Value::Stream(Box::new(stream)),
        ]
    }

    /// Records of every type, short and long, with and without an expiry, decode to what
    /// was stored, and their lengths say their types.
    #[test]
    fn records_say_their_type_in_their_length() {
        let enc = Encodings::default();
        for n in [0, 1, 10, 40, 70, 100, 200, 600] {
            for value in values(n, &enc) {
                for expire_at in [None, Some(1 << 41)] {
                    let o = Owned {
                        value: value.clone(),
                        expire_at,
                        raw: n % 2 == 1,
                    };
                    let rec = encode_record(&o, 0xab_cdef);
                    let kind = value.kind();
                    assert_eq!(kind_of_len(rec.len()), Some(kind), "{n} {kind:?}");
                    assert_eq!(decode_record(&rec, &enc).unwrap(), (o, 0xab_cdef));
                    assert_eq!(record_kind(&rec).unwrap(), (kind, expire_at));
                }
            }
        }
    }

    /// TYPE of a tier's records reads no value, nor does SCAN TYPE of its long ones (it
    /// reads the short ones, which the index holds, for their expiry).
    #[test]
    fn a_tier_gives_types_unread() {
        use crate::Tier;
        use std::sync::atomic::Ordering::Relaxed;
        use strata_engine::ColdStore;
        let dir = std::env::temp_dir().join(format!("strata-kinds-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tier = Tier::open(&dir, 1, 8, 1 << 20, Default::default(), false).unwrap();
        let enc = Encodings::default();
        let mut expect = Vec::new();
        for (n, tag) in [(3, "short"), (600, "long")] {
            for (i, value) in values(n, &enc).into_iter().enumerate() {
                let key = format!("{tag}{i}");
                let expire_at = (i % 2 == 0).then_some(1 << 41);
                let kind = value.kind();
                let o = Owned {
                    value,
                    expire_at,
                    raw: false,
                };
                tier.put(0, 2, key.as_bytes(), &o, 0).unwrap();
                expect.push((key, kind, expire_at));
            }
        }
        expect.sort_by(|a, b| a.0.cmp(&b.0));
        let read = || tier.read_bytes.load(Relaxed);
        let check = || {
            let before = read();
            for (key, kind, _) in &expect {
                assert_eq!(tier.kind(0, 2, key.as_bytes()), Some(*kind));
            }
            assert_eq!(tier.kind(0, 2, b"missing"), None);
            assert_eq!(read(), before, "TYPE read nothing");
            let mut seen = Vec::new();
            tier.each_kind(0, 2, &|k| k.starts_with(b"long"), &mut |k, kind, at| {
                seen.push((String::from_utf8_lossy(k).into_owned(), kind, at));
                true
            });
            assert_eq!(read(), before, "SCAN TYPE of long records read nothing");
            tier.each_kind(0, 2, &|_| true, &mut |k, kind, at| {
                if k.starts_with(b"short") {
                    seen.push((String::from_utf8_lossy(k).into_owned(), kind, at));
                }
                true
            });
            assert!(read() > before, "short records are read");
            seen.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(seen, expect);
        };
        // In the write buffer, then flushed (the long values then in a blob file).
        check();
        tier.tree(0).unwrap().rotate_memtable_and_wait().unwrap();
        check();
        drop(tier);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_shorter_than_its_padding_is_refused() {
        let o = Owned {
            value: Value::Str(b"v".to_vec()),
            expire_at: None,
            raw: false,
        };
        let mut rec = encode_record(&o, 0);
        rec.truncate(6);
        rec[0] |= PAD_MASK << PAD_SHIFT;
        assert!(split_record(&rec).is_err());
        assert!(decode_record(&rec, &Encodings::default()).is_err());
    }

    #[test]
    fn due_order_keys_sort_by_expiry_inside_their_shard() {
        let range = order_range(7);
        let mut keys = Vec::new();
        for (at, key) in [
            (0, &b"z"[..]),
            (1_000, b"a"),
            (1_001, b""),
            (u64::MAX, b"a"),
        ] {
            let k = order_key(7, at, key);
            assert!(range.contains(&k), "{at}");
            assert_eq!(ordered(&k), Some((at, key)));
            keys.push(k);
        }
        assert!(keys.is_sorted(), "order keys sort by expiry first");
        assert_eq!(ordered(b"short"), None);
        // Other shards' order keys, and every shard's entry and expiry records, are outside.
        for k in [
            order_key(6, 5, b"a"),
            order_key(8, 5, b"a"),
            ttl_key(7, b"a"),
            record_key(7, b"a"),
        ] {
            assert!(!range.contains(&k));
        }
        assert!(record_key(1 << 19, b"\xff\xff") < records_end().to_vec());
        assert!(ttl_key(0, b"") >= records_end().to_vec());
        assert!(record_key(7, b"k").starts_with(&record_prefix(7)));
    }

    /// A store's due entries are exactly those put with an expiry at or before the time
    /// asked, in expiry order, whichever way the others left it.
    #[test]
    fn a_tier_gives_only_its_due_entries_in_expiry_order() {
        use crate::Tier;
        use strata_engine::{ColdStore, Value};
        let dir = std::env::temp_dir().join(format!("strata-due-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tier = Tier::open(&dir, 1, 8, 1 << 20, Default::default(), false).unwrap();
        let entry = |at: Option<u64>| Owned {
            value: Value::Str(b"v".to_vec()),
            expire_at: at,
            raw: false,
        };
        // Shard 3: k0..k99 due at 1000 + 7i mod 100 (put out of order), p0..p9 without.
        let at = |i: u64| 1000 + (i * 7) % 100;
        for i in 0..100 {
            tier.put(0, 3, format!("k{i}").as_bytes(), &entry(Some(at(i))), 0)
                .unwrap();
        }
        for i in 0..10 {
            tier.put(0, 3, format!("p{i}").as_bytes(), &entry(None), 0)
                .unwrap();
        }
        tier.put(0, 4, b"other", &entry(Some(0)), 0).unwrap();
        let due = |now: u64| {
            let mut out = Vec::new();
            tier.each_due(0, 3, now, &mut |k| {
                out.push(String::from_utf8_lossy(k).into_owned());
                true
            });
            out
        };
        let expect = |now: u64, gone: &dyn Fn(u64) -> bool| {
            let mut keys: Vec<u64> = (0..100).filter(|&i| at(i) <= now && !gone(i)).collect();
            keys.sort_by_key(|&i| at(i));
            keys.iter().map(|i| format!("k{i}")).collect::<Vec<_>>()
        };
        assert_eq!(due(1049), expect(1049, &|_| false));
        assert_eq!(due(999), Vec::<String>::new());
        // Dropped unread (a whole write), dropped as a clean copy, or read back: each
        // leaves the expiry order with its record.
        for i in 0..10 {
            assert!(tier.discard(0, 3, format!("k{i}").as_bytes(), true));
        }
        for i in 10..20 {
            tier.remove(0, 3, format!("k{i}").as_bytes());
        }
        assert_eq!(tier.expiry(0, 3, b"k20"), Some(at(20)));
        assert_eq!(due(u64::MAX), expect(u64::MAX, &|i| i < 20));
        assert_eq!(tier.expiry(0, 3, b"k5"), None);

        // A scan leaves the shard alone until its next expiry (none after the one above;
        // 1050 after the one at 1049): the due entries it gave stay, as the copies of keys
        // brought back to RAM do, and are not read again until one of them, or another
        // entry due by then, is cold again.
        assert!(due(1049).is_empty());
        tier.cold_again(0, 3, at(20));
        assert_eq!(due(1049), expect(1049, &|i| i < 20));
        assert!(due(1049).is_empty());
        assert_eq!(due(1050), expect(1050, &|i| i < 20));
        tier.put(0, 3, b"early", &entry(Some(5)), 0).unwrap();
        assert_eq!(due(1049).first().map(String::as_str), Some("early"));
        // Cut short, the scan comes back at once.
        let mut first = Vec::new();
        tier.each_due(0, 3, 1060, &mut |k| {
            first.push(k.to_vec());
            false
        });
        assert_eq!(first, [b"early".to_vec()]);
        assert_eq!(due(1055).len(), 1 + expect(1055, &|i| i < 20).len());
        drop(tier);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
