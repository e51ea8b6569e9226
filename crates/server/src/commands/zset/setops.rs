//! ZUNION ZINTER ZDIFF, their STORE forms and ZINTERCARD: sorted-set algebra over
//! sorted and plain sets.

use super::spec::parse_score;
use super::{positive_arg, reply_pairs};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::{Ttl, Value, ZSetValue};

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// One input of a set operation: a sorted set, a plain set (every score 1), or missing.
#[derive(Clone, Copy)]
enum Src<'a> {
    None,
    Z(&'a ZSetValue),
    S(&'a strata_engine::SetValue),
}

impl<'a> Src<'a> {
    fn len(&self) -> usize {
        match self {
            Src::None => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }
    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::None => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }
    /// Every element (Redis's zuiNext walks sorted sets from the top down).
    fn each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::None => {}
            Src::Z(z) => z.for_range(0, z.len(), true, f),
            Src::S(s) => {
                let mut buf = [0u8; 20];
                for e in s.iter() {
                    f(e.bytes(&mut buf), 1.0);
                }
            }
        }
    }
    fn same(&self, other: &Src<'_>) -> bool {
        match (self, other) {
            (Src::Z(a), Src::Z(b)) => std::ptr::eq(*a, *b),
            (Src::S(a), Src::S(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

/// Redis's zunionInterDiffGenericCommand. `dst`: the STORE forms; `numkeys_idx`: where
/// numkeys is; `card_only`: ZINTERCARD.
fn set_op_generic(
    ctx: &mut Ctx<'_>,
    dst: bool,
    numkeys_idx: usize,
    op: SetOp,
    card_only: bool,
) -> CmdResult {
    let setnum = ctx.int_arg(numkeys_idx)?;
    if setnum < 1 {
        let name = String::from_utf8_lossy(ctx.arg(0)).to_ascii_lowercase();
        return Err(CmdError::Custom(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let argc = ctx.argv.len();
    let setnum = usize::try_from(setnum).unwrap_or(usize::MAX);
    if setnum > argc - (numkeys_idx + 1) {
        return Err(CmdError::SYNTAX);
    }
    let first = numkeys_idx + 1;
    let src_keys: Vec<&[u8]> = ctx.argv[first..first + setnum]
        .iter()
        .map(|b| &b[..])
        .collect();
    let dst_key = if dst { Some(ctx.arg(1)) } else { None };
    let mut lock_keys = src_keys.clone();
    if let Some(d) = dst_key {
        lock_keys.push(d);
    }
    let mut l = ctx.lock(&lock_keys);
    // Lookups first (WRONGTYPE before option errors, as Redis).
    let values = l.values_for_read(&src_keys)?;
    let mut srcs: Vec<(Src<'_>, f64)> = Vec::with_capacity(setnum);
    for v in &values {
        let s = match v {
            None => Src::None,
            Some(Value::ZSet(z)) => Src::Z(z),
            Some(Value::Set(s)) => Src::S(s),
            Some(_) => return Err(CmdError::WRONG_TYPE),
        };
        srcs.push((s, 1.0));
    }
    let mut how = Aggregate::Sum;
    let mut withscores = false;
    let mut limit: i64 = 0;
    let mut j = first + setnum;
    while j < argc {
        let remaining = argc - j;
        let opt = ctx.lower(j);
        if op != SetOp::Diff && !card_only && remaining > setnum && opt == b"weights" {
            j += 1;
            for src in srcs.iter_mut() {
                src.1 = parse_score(ctx.arg(j))
                    .ok_or(CmdError::Static("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && opt == b"aggregate" {
            how = match ctx.lower(j + 1).as_slice() {
                b"sum" => Aggregate::Sum,
                b"min" => Aggregate::Min,
                b"max" => Aggregate::Max,
                _ => return Err(CmdError::SYNTAX),
            };
            j += 2;
        } else if remaining >= 1 && !dst && !card_only && opt == b"withscores" {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && opt == b"limit" {
            limit = positive_arg(ctx, j + 1, 0, Some("LIMIT can't be negative"))?;
            j += 2;
        } else {
            return Err(CmdError::SYNTAX);
        }
    }
    if op != SetOp::Diff {
        // Smallest first (a stable sort, as glibc's qsort is a merge sort here).
        srcs.sort_by_key(|(s, _)| s.len());
    }
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut cardinality: u64 = 0;
    match op {
        SetOp::Inter => {
            let (s0, w0) = srcs[0];
            if s0.len() > 0 {
                let mut stop = false;
                s0.each(|m, sc| {
                    if stop {
                        return;
                    }
                    let mut score = w0 * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    for (sj, wj) in &srcs[1..] {
                        let value = if sj.same(&s0) {
                            Some(sc * wj)
                        } else {
                            sj.score(m).map(|v| v * wj)
                        };
                        match value {
                            Some(v) => aggregate(&mut score, v, how),
                            None => return,
                        }
                    }
                    if card_only {
                        cardinality += 1;
                        if limit > 0 && cardinality >= limit as u64 {
                            stop = true;
                        }
                    } else {
                        result.push((m.to_vec(), score));
                    }
                });
            }
        }
        SetOp::Union => {
            let mut acc: std::collections::HashMap<Vec<u8>, f64, foldhash::fast::RandomState> =
                Default::default();
            for (s, w) in &srcs {
                s.each(|m, sc| {
                    let mut score = w * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, how),
                        None => {
                            acc.insert(m.to_vec(), score);
                        }
                    }
                });
            }
            result = acc.into_iter().collect();
        }
        SetOp::Diff => {
            let (s0, _) = srcs[0];
            s0.each(|m, sc| {
                let exists = srcs[1..]
                    .iter()
                    .any(|(sj, _)| sj.same(&s0) || sj.score(m).is_some());
                if !exists {
                    result.push((m.to_vec(), sc));
                }
            });
        }
    }
    drop(values);
    if card_only {
        ctx.out.int(cardinality as i64);
        return Ok(());
    }
    match dst_key {
        Some(d) => {
            let z = ZSetValue::from_members(result, &ctx.keyspace().encodings);
            let n = z.len();
            // The one place the STORE forms write.
            let removed = if n > 0 {
                l.set_value(d, Value::ZSet(Box::new(z)), Ttl::Clear);
                false
            } else {
                l.remove(d)
            };
            drop(l);
            let event = match op {
                SetOp::Union => "zunionstore",
                SetOp::Inter => "zinterstore",
                SetOp::Diff => "zdiffstore",
            };
            crate::commands::stored(ctx, d, (notify::ZSET, event), n, removed, true);
            ctx.out.int(n as i64);
        }
        None => {
            // Redis replies from its skiplist, so a -0 score stays -0 (a listpack would not).
            result.sort_by(|a, b| {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            });
            let items: Vec<(&[u8], f64)> = result.iter().map(|(m, s)| (&m[..], *s)).collect();
            reply_pairs(&mut ctx.out, &items, withscores);
        }
    }
    Ok(())
}

pub(super) fn zunion(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Union, false)
}

pub(super) fn zinter(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Inter, false)
}

pub(super) fn zdiff(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Diff, false)
}

pub(super) fn zunionstore(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, true, 2, SetOp::Union, false)
}

pub(super) fn zinterstore(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, true, 2, SetOp::Inter, false)
}

pub(super) fn zdiffstore(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, true, 2, SetOp::Diff, false)
}

pub(super) fn zintercard(ctx: &mut Ctx<'_>) -> CmdResult {
    set_op_generic(ctx, false, 1, SetOp::Inter, true)
}
