//! How the differential tests compare two servers' replies (`differential.rs`), and the
//! pair of connections a comparison runs over.
#![allow(dead_code)]

use crate::common::{Proc, RawReply, RespConn};

/// How two replies are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Exact,
    Sort,
    Approx,
    Ms,
    Any,
}

/// `same`, and the TTL rule of `differential.rs`'s module comment for command `name`.
pub fn matching(mode: Mode, name: &[u8], a: &RawReply, b: &RawReply) -> bool {
    same(mode, a, b) || (name.eq_ignore_ascii_case(b"ttl") && both_positive_within_one(a, b))
}

pub fn same(mode: Mode, a: &RawReply, b: &RawReply) -> bool {
    match mode {
        Mode::Exact => a.raw == b.raw,
        Mode::Any => a.kind == b.kind,
        Mode::Sort => {
            if a.is_aggregate() && b.is_aggregate() {
                a.kind == b.kind && sorted(a) == sorted(b)
            } else {
                a.raw == b.raw
            }
        }
        Mode::Approx => approx(a, b, 1),
        Mode::Ms => approx(a, b, 100),
    }
}

/// The elements' raw bytes in sorted order (a map's key-value pairs as units).
pub fn sorted(r: &RawReply) -> Vec<Vec<u8>> {
    sorted_elems(r, r.kind == b'%')
}

/// The elements' raw bytes in sorted order; `pairs`: each two elements as one unit.
pub fn sorted_elems(r: &RawReply, pairs: bool) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = if pairs {
        r.elems
            .chunks(2)
            .map(|p| p.iter().flat_map(|e| e.raw.clone()).collect())
            .collect()
    } else {
        r.elems.iter().map(|e| e.raw.clone()).collect()
    };
    v.sort();
    v
}

/// An integer reply's value.
pub fn int_of(r: &RawReply) -> Option<i64> {
    if r.kind != b':' {
        return None;
    }
    String::from_utf8_lossy(&r.raw[1..r.raw.len() - 2])
        .parse::<i64>()
        .ok()
}

pub fn both_positive_within_one(a: &RawReply, b: &RawReply) -> bool {
    matches!((int_of(a), int_of(b)), (Some(x), Some(y)) if x > 0 && y > 0 && x.abs_diff(y) <= 1)
}

/// Integers may differ by `slack`, or by 1% of the larger.
pub fn approx(a: &RawReply, b: &RawReply, slack: u64) -> bool {
    if a.kind != b.kind {
        return false;
    }
    if a.kind == b':' {
        return match (int_of(a), int_of(b)) {
            (Some(x), Some(y)) => {
                x.abs_diff(y) <= slack.max(x.unsigned_abs().max(y.unsigned_abs()) / 100)
            }
            _ => a.raw == b.raw,
        };
    }
    if a.is_aggregate() && b.is_aggregate() {
        return a.elems.len() == b.elems.len()
            && a.elems
                .iter()
                .zip(&b.elems)
                .all(|(x, y)| approx(x, y, slack));
    }
    a.raw == b.raw
}

/// The two connections of one file.
pub struct Pair {
    pub redis: RespConn,
    pub strata: RespConn,
}

impl Pair {
    pub fn new(redis: &Proc, strata: &Proc) -> Pair {
        Pair {
            redis: RespConn::new(redis),
            strata: RespConn::new(strata),
        }
    }
}

pub fn shown(r: &std::io::Result<RawReply>) -> String {
    match r {
        Ok(r) => r.shown(),
        Err(e) => format!("<no reply: {e}>"),
    }
}
