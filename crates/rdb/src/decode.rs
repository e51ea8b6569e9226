//! Reading one value of a given RDB type, in any encoding Redis ever wrote.

use crate::error::{BlobError, Error, ErrorKind};
use crate::listpack::Listpack;
use crate::num::parse_score;
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

/// Index of the first item whose key repeats an earlier one.
pub(crate) fn first_duplicate<T>(items: &[T], key: impl Fn(&T) -> &[u8]) -> Option<usize> {
    if items.len() <= 16 {
        return (1..items.len()).find(|&i| items[..i].iter().any(|x| key(x) == key(&items[i])));
    }
    let mut seen = hashbrown::HashSet::with_capacity(items.len());
    items.iter().position(|it| !seen.insert(key(it)))
}

/// A packed sequence: listpack or ziplist.
pub(crate) trait Packed {
    fn next_elem(&mut self) -> Result<Option<Elem>, BlobError>;
    fn count_hint(&self) -> Option<usize>;
}

impl Packed for Listpack<'_> {
    fn next_elem(&mut self) -> Result<Option<Elem>, BlobError> {
        self.next()
    }
    fn count_hint(&self) -> Option<usize> {
        self.header_count()
    }
}

impl Packed for Ziplist<'_> {
    fn next_elem(&mut self) -> Result<Option<Elem>, BlobError> {
        self.next()
    }
    fn count_hint(&self) -> Option<usize> {
        self.header_count()
    }
}

/// Appends every element of a packed blob to `out` as strings.
fn packed_elems<R: Read, P: Packed>(
    mut p: P,
    blob: &Bytes,
    src: &mut Source<R>,
    out: &mut Vec<Bytes>,
) -> Result<(), BlobError> {
    out.reserve(p.count_hint().unwrap_or(0).min(blob.len() / 2));
    while let Some(e) = p.next_elem()? {
        out.push(src.elem(blob, e));
    }
    Ok(())
}

/// The elements of a packed blob as (even, odd) pairs; an odd count is an error.
fn packed_pairs<R: Read, P: Packed, V>(
    mut p: P,
    blob: &Bytes,
    src: &mut Source<R>,
    mut second: impl FnMut(&mut Source<R>, Elem) -> Result<V, BlobError>,
) -> Result<Vec<(Bytes, V)>, BlobError> {
    let mut out = Vec::with_capacity(p.count_hint().unwrap_or(0).min(blob.len() / 4));
    while let Some(first) = p.next_elem()? {
        let first = src.elem(blob, first);
        match p.next_elem()? {
            Some(e) => out.push((first, second(src, e)?)),
            None => return Err(BlobError::new(0, "odd number of elements in a pair list")),
        }
    }
    Ok(out)
}

/// A sorted-set score stored as a packed element.
fn packed_score(blob: &Bytes, e: Elem) -> Result<f64, BlobError> {
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
            let mut items = Vec::with_capacity(prealloc(n));
            for _ in 0..n {
                items.push(src.string()?);
            }
            if ty == types::LIST {
                RdbValue::List(items)
            } else {
                if first_duplicate(&items, |m| m).is_some() {
                    return Err(dup("set member"));
                }
                RdbValue::Set(items)
            }
        }
        types::ZSET | types::ZSET_2 => {
            let n = src.length()?;
            let mut items = Vec::with_capacity(prealloc(n));
            for _ in 0..n {
                let member = src.string()?;
                let score_at = src.offset();
                let score = if ty == types::ZSET_2 {
                    f64::from_le_bytes(src.array()?)
                } else {
                    text_score(src)?
                };
                if score.is_nan() {
                    return Err(Error::corrupt(score_at, "sorted set score is NaN"));
                }
                items.push((member, score));
            }
            if first_duplicate(&items, |m| &m.0).is_some() {
                return Err(dup("sorted set member"));
            }
            RdbValue::SortedSet(items)
        }
        types::HASH => {
            let n = src.length()?;
            let mut items = Vec::with_capacity(prealloc(n));
            for _ in 0..n {
                let field = src.string()?;
                items.push((field, src.string()?));
            }
            if first_duplicate(&items, |f| &f.0).is_some() {
                return Err(dup("hash field"));
            }
            RdbValue::Hash(items)
        }
        types::HASH_ZIPMAP => {
            let blob = src.string()?;
            let pairs = zipmap::decode(&blob).map_err(|e| e.at_file(at, "zipmap"))?;
            let items: Vec<(Bytes, Bytes)> = pairs
                .into_iter()
                .map(|(f, v)| (blob.slice(f), blob.slice(v)))
                .collect();
            if first_duplicate(&items, |f| &f.0).is_some() {
                return Err(dup("hash field"));
            }
            RdbValue::Hash(items)
        }
        types::LIST_ZIPLIST => {
            let blob = src.string()?;
            let mut items = Vec::new();
            Ziplist::new(&blob)
                .and_then(|z| packed_elems(z, &blob, src, &mut items))
                .map_err(|e| e.at_file(at, "list ziplist"))?;
            RdbValue::List(items)
        }
        types::SET_INTSET => {
            let blob = src.string()?;
            let ints = intset::decode(&blob).map_err(|e| e.at_file(at, "intset"))?;
            RdbValue::Set(ints.into_iter().map(|v| src.int_bytes(v)).collect())
        }
        types::ZSET_ZIPLIST | types::ZSET_LISTPACK => {
            let blob = src.string()?;
            let score = |_: &mut Source<R>, e: Elem| packed_score(&blob, e);
            let items = if ty == types::ZSET_ZIPLIST {
                Ziplist::new(&blob).and_then(|z| packed_pairs(z, &blob, src, score))
            } else {
                Listpack::new(&blob).and_then(|l| packed_pairs(l, &blob, src, score))
            };
            let kind = if ty == types::ZSET_ZIPLIST {
                "sorted set ziplist"
            } else {
                "sorted set listpack"
            };
            let items = items.map_err(|e| e.at_file(at, kind))?;
            if first_duplicate(&items, |m| &m.0).is_some() {
                return Err(dup("sorted set member"));
            }
            RdbValue::SortedSet(items)
        }
        types::HASH_ZIPLIST | types::HASH_LISTPACK => {
            let blob = src.string()?;
            let value = |s: &mut Source<R>, e: Elem| Ok(s.elem(&blob, e));
            let items = if ty == types::HASH_ZIPLIST {
                Ziplist::new(&blob).and_then(|z| packed_pairs(z, &blob, src, value))
            } else {
                Listpack::new(&blob).and_then(|l| packed_pairs(l, &blob, src, value))
            };
            let kind = if ty == types::HASH_ZIPLIST {
                "hash ziplist"
            } else {
                "hash listpack"
            };
            let items = items.map_err(|e| e.at_file(at, kind))?;
            if first_duplicate(&items, |f| &f.0).is_some() {
                return Err(dup("hash field"));
            }
            RdbValue::Hash(items)
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
    let empty = match &value {
        RdbValue::String(_) | RdbValue::Stream(_) => false,
        RdbValue::List(v) | RdbValue::Set(v) => v.is_empty(),
        RdbValue::SortedSet(v) => v.is_empty(),
        RdbValue::Hash(v) => v.is_empty(),
    };
    Ok((!empty).then_some(value))
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
    let mut items = Vec::new();
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
            items.push(blob);
        } else if ty == types::LIST_QUICKLIST_2 {
            Listpack::new(&blob)
                .and_then(|l| packed_elems(l, &blob, src, &mut items))
                .map_err(|e| e.at_file(blob_at, "quicklist listpack node"))?;
        } else {
            Ziplist::new(&blob)
                .and_then(|z| packed_elems(z, &blob, src, &mut items))
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
