//! Reading one value of a given RDB type, in any encoding Redis ever wrote.

use crate::error::{BlobError, Error, ErrorKind};
use crate::listpack::Listpack;
use crate::members::{Members, Pairs, Scored};
use crate::num::{format_i64, parse_score, IntBuf};
use crate::packed::{DecodeSpace, PackedValue};
use crate::source::{Elem, Source};
use crate::value::RdbValue;
use crate::ziplist::Ziplist;
use crate::{intset, stream, types, zipmap};
use bytes::Bytes;
use std::io::Read;

/// Pre-allocation for a collection whose size the input declares: enough for typical
/// values, never so much that a lying length costs memory (each element takes at least a
/// byte of input, so the vector then grows only as elements really arrive).
pub(crate) const MAX_PREALLOC: usize = 4096;

pub(crate) fn prealloc(declared: u64) -> usize {
    declared.min(MAX_PREALLOC as u64) as usize
}

/// A packed sequence: listpack or ziplist.
pub(crate) trait Packed {
    fn next_elem(&mut self) -> Result<Option<Elem>, BlobError>;
    fn count_hint(&self) -> Option<usize>;
}

impl Packed for Listpack<'_> {
    // Inlined into the decoding loops, as `Listpack::next` is (see there).
    #[inline(always)]
    fn next_elem(&mut self) -> Result<Option<Elem>, BlobError> {
        self.next()
    }
    fn count_hint(&self) -> Option<usize> {
        self.header_count()
    }
}

impl Packed for Ziplist<'_> {
    #[inline(always)]
    fn next_elem(&mut self) -> Result<Option<Elem>, BlobError> {
        self.next()
    }
    fn count_hint(&self) -> Option<usize> {
        self.header_count()
    }
}

fn push_elem(out: &mut Members, blob: &[u8], e: Elem) {
    match e {
        Elem::Str(r) => out.push(&blob[r]),
        Elem::Int(v) => out.push(format_i64(v, &mut IntBuf::default())),
    }
}

/// Room for the elements of a packed blob (its header count, bounded by its size), from
/// `space`'s buffer.
fn packed_capacity<P: Packed>(p: &P, blob: &[u8], space: &mut DecodeSpace) -> Members {
    space.members(p.count_hint().unwrap_or(0).min(blob.len() / 2), blob.len())
}

/// Appends every element of a packed blob to `out`.
fn packed_into<P: Packed>(mut p: P, blob: &[u8], out: &mut Members) -> Result<(), BlobError> {
    while let Some(e) = p.next_elem()? {
        push_elem(out, blob, e);
    }
    Ok(())
}

/// The elements of a packed blob, whose count must be even (field/value pairs).
fn packed_pairs<P: Packed>(
    p: P,
    blob: &[u8],
    space: &mut DecodeSpace,
) -> Result<Members, BlobError> {
    let mut out = packed_capacity(&p, blob, space);
    packed_into(p, blob, &mut out)?;
    if out.len() % 2 == 1 {
        return Err(BlobError::new(0, "odd number of elements in a pair list"));
    }
    Ok(out)
}

/// Sorted-set members and scores from a packed blob of (member, score) pairs.
fn packed_scored<P: Packed>(
    mut p: P,
    blob: &[u8],
    space: &mut DecodeSpace,
) -> Result<Scored, BlobError> {
    let mut members = packed_capacity(&p, blob, space);
    let mut scores = space.scores(p.count_hint().unwrap_or(0).min(blob.len() / 4));
    while let Some(m) = p.next_elem()? {
        push_elem(&mut members, blob, m);
        let s = p
            .next_elem()?
            .ok_or_else(|| BlobError::new(0, "odd number of elements in a pair list"))?;
        scores.push(packed_score(blob, s)?);
    }
    Ok(Scored::from_parts(members, scores))
}

/// A sorted-set score stored as a packed element.
fn packed_score(blob: &[u8], e: Elem) -> Result<f64, BlobError> {
    let score = match e {
        Elem::Int(v) => v as f64,
        Elem::Str(r) => {
            let at = r.start;
            parse_score(&blob[r]).ok_or_else(|| BlobError::new(at, "score is not a number"))?
        }
    };
    if score.is_nan() {
        return Err(BlobError::new(0, "NaN score"));
    }
    Ok(score)
}

/// Reads a value of RDB type `ty`. `Ok(None)` is an empty collection, which Redis skips
/// when loading (older versions could write such keys) and refuses in RESTORE.
pub(crate) fn read_value<R: Read>(
    src: &mut Source<R>,
    ty: u8,
    key: Option<&Bytes>,
) -> Result<Option<RdbValue>, Error> {
    let at = src.offset();
    let dup = |what: &str| Error::corrupt(at, format!("duplicate {what}"));
    let value = match ty {
        types::STRING => RdbValue::String(src.string()?),
        types::LIST | types::SET => {
            let n = src.length()?;
            let mut items = Members::with_capacity(prealloc(n), 0);
            for _ in 0..n {
                items.push_with(|d| src.string_into(d))?;
            }
            if ty == types::LIST {
                RdbValue::List(items)
            } else {
                if src.space.dups.any(items.len(), |i| &items[i]) {
                    return Err(dup("set member"));
                }
                RdbValue::Set(items)
            }
        }
        types::ZSET | types::ZSET_2 => {
            let n = src.length()?;
            let mut members = Members::with_capacity(prealloc(n), 0);
            let mut scores = Vec::with_capacity(prealloc(n));
            for _ in 0..n {
                members.push_with(|d| src.string_into(d))?;
                let score_at = src.offset();
                let score = if ty == types::ZSET_2 {
                    f64::from_le_bytes(src.array()?)
                } else {
                    text_score(src)?
                };
                if score.is_nan() {
                    return Err(Error::corrupt(score_at, "sorted set score is NaN"));
                }
                scores.push(score);
            }
            if src.space.dups.any(members.len(), |i| &members[i]) {
                return Err(dup("sorted set member"));
            }
            RdbValue::SortedSet(Scored::from_parts(members, scores))
        }
        types::HASH => {
            let n = src.length()?;
            let mut flat = Members::with_capacity(prealloc(n.saturating_mul(2)), 0);
            for _ in 0..n {
                flat.push_with(|d| src.string_into(d))?;
                flat.push_with(|d| src.string_into(d))?;
            }
            hash(&mut src.space, flat).ok_or_else(|| dup("hash field"))?
        }
        types::HASH_ZIPMAP => {
            let blob = src.string()?;
            let pairs = zipmap::decode(&blob).map_err(|e| e.at_file(at, "zipmap"))?;
            let mut flat = Members::with_capacity(pairs.len() * 2, blob.len());
            for (f, v) in pairs {
                flat.push(&blob[f]);
                flat.push(&blob[v]);
            }
            hash(&mut src.space, flat).ok_or_else(|| dup("hash field"))?
        }
        types::LIST_ZIPLIST => {
            let blob = src.string()?;
            let items = Ziplist::new(&blob)
                .and_then(|z| {
                    let mut items = packed_capacity(&z, &blob, &mut src.space);
                    packed_into(z, &blob, &mut items).map(|()| items)
                })
                .map_err(|e| e.at_file(at, "list ziplist"))?;
            RdbValue::List(items)
        }
        types::SET_INTSET => {
            let blob = src.string()?;
            let ints = intset::decode(&blob).map_err(|e| e.at_file(at, "intset"))?;
            let mut items = Members::with_capacity(ints.len(), ints.len() * 4);
            for v in ints {
                items.push(format_i64(v, &mut IntBuf::default()));
            }
            RdbValue::Set(items)
        }
        types::ZSET_ZIPLIST | types::ZSET_LISTPACK | types::HASH_ZIPLIST | types::HASH_LISTPACK => {
            let blob = src.string()?;
            let blob = if src.defer_packed {
                match PackedValue::deferrable(ty, blob, at) {
                    Ok(p) => return Ok(Some(RdbValue::Packed(p))),
                    Err(blob) => blob,
                }
            } else {
                blob
            };
            packed_value(ty, &blob, at, &mut src.space)?
        }
        types::LIST_QUICKLIST | types::LIST_QUICKLIST_2 => read_quicklist(src, ty)?,
        types::STREAM_LISTPACKS | types::STREAM_LISTPACKS_2 => RdbValue::Stream(Box::new(
            stream::read(src, ty == types::STREAM_LISTPACKS_2)?,
        )),
        types::MODULE | types::MODULE_2 => {
            let id = src.length()?;
            return Err(Error::new(
                at,
                ErrorKind::ModuleValue {
                    key: key.cloned(),
                    module: module_name(id),
                },
            ));
        }
        _ => {
            return Err(Error::corrupt(
                at.saturating_sub(1),
                format!("unknown value type {ty}"),
            ))
        }
    };
    Ok((!value.is_empty_collection()).then_some(value))
}

/// A hash or sorted set of one packed blob (RDB types 10, 12, 16, 17) at input offset
/// `at`, decoded into buffers of `space` and checked. An empty one decodes to an empty
/// value (which `read_value` skips).
pub(crate) fn packed_value(
    ty: u8,
    blob: &[u8],
    at: u64,
    space: &mut DecodeSpace,
) -> Result<RdbValue, Error> {
    // Worded as Redis logs a packed value with a repeated member or field.
    let dup = |kind: &str, what: &str| {
        Error::corrupt(
            at,
            format!("{kind} integrity check failed: duplicate {what}"),
        )
    };
    match ty {
        types::ZSET_ZIPLIST | types::ZSET_LISTPACK => {
            let (items, kind) = if ty == types::ZSET_ZIPLIST {
                (
                    Ziplist::new(blob).and_then(|z| packed_scored(z, blob, space)),
                    "Zset ziplist",
                )
            } else {
                (
                    Listpack::new(blob).and_then(|l| packed_scored(l, blob, space)),
                    "Zset listpack",
                )
            };
            let items = items.map_err(|e| e.at_file(at, kind))?;
            let m = items.members();
            if space.dups.any(m.len(), |i| &m[i]) {
                return Err(dup(kind, "sorted set member"));
            }
            Ok(RdbValue::SortedSet(items))
        }
        _ => {
            let (flat, kind) = if ty == types::HASH_ZIPLIST {
                (
                    Ziplist::new(blob).and_then(|z| packed_pairs(z, blob, space)),
                    "Hash ziplist",
                )
            } else {
                (
                    Listpack::new(blob).and_then(|l| packed_pairs(l, blob, space)),
                    "Hash listpack",
                )
            };
            let flat = flat.map_err(|e| e.at_file(at, kind))?;
            hash(space, flat).ok_or_else(|| dup(kind, "hash field"))
        }
    }
}

/// A hash from alternating fields and values; `None` if a field repeats.
fn hash(space: &mut DecodeSpace, flat: Members) -> Option<RdbValue> {
    let dup = space.dups.any(flat.len() / 2, |i| &flat[2 * i]);
    (!dup).then(|| RdbValue::Hash(Pairs::from_flat(flat)))
}

/// A score of the old ZSET type: a length byte (253 NaN, 254 +inf, 255 -inf) and text.
fn text_score<R: Read>(src: &mut Source<R>) -> Result<f64, Error> {
    let at = src.offset();
    let len = src.u8()?;
    Ok(match len {
        255 => f64::NEG_INFINITY,
        254 => f64::INFINITY,
        253 => f64::NAN,
        n => {
            let mut buf = [0u8; 252];
            for b in buf.iter_mut().take(n as usize) {
                *b = src.u8()?;
            }
            parse_score(&buf[..n as usize])
                .ok_or_else(|| Error::corrupt(at, "sorted set score is not a number"))?
        }
    })
}

/// Lists as quicklists: a node count, then per node (type 18: a container kind, 1 plain
/// or 2 packed, then) a blob holding one element (plain) or a listpack/ziplist (packed).
fn read_quicklist<R: Read>(src: &mut Source<R>, ty: u8) -> Result<RdbValue, Error> {
    let nodes = src.length()?;
    let mut items = Members::new();
    for _ in 0..nodes {
        let at = src.offset();
        let plain = if ty == types::LIST_QUICKLIST_2 {
            match src.length()? {
                1 => true,
                2 => false,
                c => {
                    return Err(Error::corrupt(
                        at,
                        format!("unknown quicklist node container {c}"),
                    ))
                }
            }
        } else {
            false
        };
        let blob_at = src.offset();
        let blob = src.string()?;
        if blob.is_empty() {
            return Err(Error::corrupt(blob_at, "empty quicklist node"));
        }
        if plain {
            items.push(&blob);
        } else if ty == types::LIST_QUICKLIST_2 {
            Listpack::new(&blob)
                .and_then(|l| packed_into(l, &blob, &mut items))
                .map_err(|e| e.at_file(blob_at, "quicklist listpack node"))?;
        } else {
            Ziplist::new(&blob)
                .and_then(|z| packed_into(z, &blob, &mut items))
                .map_err(|e| e.at_file(blob_at, "quicklist ziplist node"))?;
        }
    }
    Ok(RdbValue::List(items))
}

/// The module type name packed into a module id: nine 6-bit characters above a 10-bit
/// encoding version.
pub(crate) fn module_name(id: u64) -> String {
    const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    (0..9)
        .rev()
        .map(|i| CHARSET[((id >> (10 + 6 * i)) & 63) as usize] as char)
        .collect()
}
