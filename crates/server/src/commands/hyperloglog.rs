//! The HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST, as Redis 7.0's
//! hyperloglog.c. The value is a plain string in Redis's exact representation (see
//! `crate::commands::hll`), so GET, DUMP and the cached cardinality are byte-identical to Redis's.
//!
//! Lookups mirror Redis's: PFADD and PFDEBUG use write lookups (no hit/miss statistics),
//! PFCOUNT and PFMERGE read lookups. PFCOUNT of one key refreshes the cached cardinality in
//! the stored value, as Redis does (the value changes; the key's TTL does not).

use crate::commands::hll;
use crate::exec::command::{flags, ks, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::exec::effects::Audience;
use strata_engine::{Locked, Ttl};

const NOT_HLL: CmdError =
    CmdError::Static("WRONGTYPE Key is not a valid HyperLogLog string value.");
const CORRUPT: CmdError = CmdError::Static("INVALIDOBJ Corrupted HLL object detected");

impl From<hll::Corrupt> for CmdError {
    fn from(_: hll::Corrupt) -> Self {
        CORRUPT
    }
}

pub const COMMANDS: &[Command] = &[
    Command {
    name: "pfadd",
    arity: -2,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "hyperloglog",
    summary: "Adds the specified elements to the specified HyperLogLog.",
    since: "2.8.9",
    complexity: "O(1) to add every element.",
    args: "key#key [element]...",
    handler: pfadd,
    ..Command::DEFAULT
},
    Command {
    name: "pfcount",
    arity: -2,
    flags: flags::READONLY | flags::MAY_REPLICATE,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS, 1, -1, 1),
    ]),
    group: "hyperloglog",
    summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
    since: "2.8.9",
    complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
    args: "key#key...",
    handler: pfcount,
    ..Command::DEFAULT
},
    Command {
    name: "pfmerge",
    arity: -2,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::INSERT, 1, 0, 1),
        KeySpec::range(ks::RO | ks::ACCESS, 2, -1, 1),
    ]),
    group: "hyperloglog",
    summary: "Merge N different HyperLogLogs into a single one.",
    since: "2.8.9",
    complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
    args: "destkey#key sourcekey#key1...",
    handler: pfmerge,
    ..Command::DEFAULT
},
    Command {
    name: "pfdebug",
    arity: 3,
    flags: flags::WRITE | flags::DENYOOM | flags::ADMIN,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS, 2, 0, 1),
    ]),
    group: "hyperloglog",
    summary: "Internal commands for debugging HyperLogLog values",
    since: "2.8.9",
    complexity: "N/A",
    args: "subcommand key#key",
    handler: pfdebug,
    ..Command::DEFAULT
},
    Command {
    name: "pfselftest",
    arity: 1,
    flags: flags::ADMIN,
    group: "hyperloglog",
    summary: "An internal command for testing HyperLogLog values",
    since: "2.8.9",
    complexity: "N/A",
    handler: pfselftest,
    ..Command::DEFAULT
},
];

fn sparse_max_bytes(ctx: &Ctx<'_>) -> u64 {
    ctx.config().get().hll_sparse_max_bytes
}

/// The stored HLL for editing: None when missing; Redis's errors for other types and for
/// strings that are not HLLs.
fn hll_mut<'l>(l: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l mut Vec<u8>>, CmdError> {
    match l.str_mut(key)? {
        None => Ok(None),
        Some(s) if hll::is_valid(s) => Ok(Some(s)),
        Some(_) => Err(NOT_HLL),
    }
}

/// A read lookup (hit/miss statistics) of an HLL.
fn hll_read<'l>(l: &'l mut Locked<'_>, key: &[u8]) -> Result<Option<&'l [u8]>, CmdError> {
    match l.get_str(key)? {
        None => Ok(None),
        Some(s) if hll::is_valid(s) => Ok(Some(s)),
        Some(_) => Err(NOT_HLL),
    }
}

fn pfadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let elements = &ctx.argv[2..];
    let max = sparse_max_bytes(ctx);
    let mut l = ctx.lock1(key);
    let updated = match hll_mut(&mut l, key)? {
        Some(s) => {
            let mut updated = false;
            for e in elements {
                // An error leaves the registers already raised in place, as Redis does.
                updated |= hll::add(s, e, max)?;
            }
            if updated {
                hll::invalidate(s);
            }
            updated
        }
        None => {
            let mut s = hll::new_sparse();
            for e in elements {
                hll::add(&mut s, e, max)?;
            }
            hll::invalidate(&mut s);
            l.set_str(key, &s, Ttl::Clear);
            true
        }
    };
    drop(l);
    if updated {
        ctx.notify(crate::services::notify::STRING, "pfadd", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(i64::from(updated));
    Ok(())
}

fn pfcount(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 2 {
        // The cardinality of the union: merge into plain byte registers.
        let keys = &ctx.argv[1..];
        let mut max = vec![0u8; hll::REGISTERS];
        let mut l = ctx.lock(keys);
        for k in keys {
            if let Some(s) = hll_read(&mut l, k)? {
                hll::merge_into(&mut max, s)?;
            }
        }
        drop(l);
        ctx.out.int(hll::count_raw(&max) as i64);
        return Ok(());
    }
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let mut stored = false;
    let card = match hll_read(&mut l, key)? {
        None => 0,
        Some(s) => match hll::cached(s) {
            Some(c) => c,
            None => {
                let c = hll::count(s)?;
                if let Some(s) = l.str_mut(key)? {
                    hll::set_cached(s, c);
                    stored = true;
                }
                c
            }
        },
    };
    drop(l);
    if stored {
        // The key's bytes changed: as Redis, PFCOUNT goes to the journal and the replicas
        // (run again, it stores the same cardinality), and WATCH sees the key modified.
        ctx.modified(key);
        let argv = ctx.argv.to_vec();
        ctx.rewrite_targeted(vec![(Audience::All, argv)]);
    }
    ctx.out.int(card as i64);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let dest = ctx.arg(1);
    let max_bytes = sparse_max_bytes(ctx);
    let mut max = vec![0u8; hll::REGISTERS];
    let mut use_dense = false;
    let mut l = ctx.lock(keys);
    for k in keys {
        if let Some(s) = hll_read(&mut l, k)? {
            use_dense |= hll::encoding(s) == hll::DENSE;
            hll::merge_into(&mut max, s)?;
        }
    }
    // The destination was validated by the loop above (it is the first source).
    let apply = |s: &mut Vec<u8>| -> CmdResult {
        if use_dense {
            hll::to_dense(s)?;
        }
        for (i, &m) in max.iter().enumerate() {
            if m != 0 {
                // As Redis, a failure here (a corrupt sparse target) is ignored.
                let _ = hll::set_register(s, i, m, max_bytes);
            }
        }
        hll::invalidate(s);
        Ok(())
    };
    match hll_mut(&mut l, dest)? {
        Some(s) => apply(s)?,
        None => {
            let mut s = hll::new_sparse();
            apply(&mut s)?;
            l.set_str(dest, &s, Ttl::Clear);
        }
    }
    drop(l);
    // Redis announces a merge as a PFADD.
    ctx.notify(crate::services::notify::STRING, "pfadd", dest);
    ctx.out.ok();
    Ok(())
}

fn pfdebug(ctx: &mut Ctx<'_>) -> CmdResult {
    let cmd = ctx.arg(1);
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let Some(s) = hll_mut(&mut l, key)? else {
        return Err(CmdError::err("The specified key does not exist"));
    };
    match cmd.to_ascii_lowercase().as_slice() {
        b"getreg" => {
            hll::to_dense(s)?;
            let regs: Vec<u8> = (0..hll::REGISTERS)
                .map(|i| hll::dense_get(&s[hll::HDR_SIZE..], i))
                .collect();
            drop(l);
            ctx.out.array(regs.len());
            for r in regs {
                ctx.out.int(i64::from(r));
            }
        }
        b"decode" => {
            if hll::encoding(s) != hll::SPARSE {
                return Err(CmdError::err("HLL encoding is not sparse"));
            }
            let text = hll::decode(s);
            drop(l);
            ctx.out.bulk(text.as_bytes());
        }
        b"encoding" => {
            let enc = if hll::encoding(s) == hll::DENSE {
                "dense"
            } else {
                "sparse"
            };
            drop(l);
            ctx.out.simple(enc);
        }
        b"todense" => {
            let conv = hll::encoding(s) == hll::SPARSE;
            hll::to_dense(s)?;
            drop(l);
            ctx.out.int(i64::from(conv));
        }
        _ => {
            return Err(CmdError::err(format!(
                "Unknown PFDEBUG subcommand '{}'",
                String::from_utf8_lossy(cmd)
            )))
        }
    }
    Ok(())
}

/// PFSELFTEST: register access and estimator error, dense and sparse side by side.
fn pfselftest(ctx: &mut Ctx<'_>) -> CmdResult {
    let max_bytes = sparse_max_bytes(ctx);
    let mut seed = ctx.now_ms ^ 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id());
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let result = (|| -> Result<(), String> {
        let mut dense = hll::new_sparse();
        hll::to_dense(&mut dense).map_err(|_| "TESTFAILED conversion".to_string())?;
        let mut bytes = vec![0u8; hll::REGISTERS];
        for _ in 0..1000 {
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = (rand() & 63) as u8;
                hll::dense_put(&mut dense[hll::HDR_SIZE..], i, *b);
            }
            for (i, b) in bytes.iter().enumerate() {
                let v = hll::dense_get(&dense[hll::HDR_SIZE..], i);
                if v != *b {
                    return Err(format!("TESTFAILED Register {i} should be {b} but is {v}"));
                }
            }
        }
        let mut dense = hll::new_sparse();
        hll::to_dense(&mut dense).map_err(|_| "TESTFAILED conversion".to_string())?;
        let mut sparse = hll::new_sparse();
        let relerr = 1.04 / (hll::REGISTERS as f64).sqrt();
        let mut checkpoint: u64 = 1;
        let salt = rand();
        for j in 1..=10_000_000u64 {
            let ele = (j ^ salt).to_le_bytes();
            let _ = hll::add(&mut dense, &ele, max_bytes);
            let _ = hll::add(&mut sparse, &ele, max_bytes);
            if j != checkpoint {
                continue;
            }
            if j < max_bytes / 2 && hll::encoding(&sparse) != hll::SPARSE {
                return Err("TESTFAILED sparse encoding not used".into());
            }
            let d = hll::count(&dense).unwrap_or(0);
            if Ok(d) != hll::count(&sparse) {
                return Err("TESTFAILED dense/sparse disagree".into());
            }
            let abserr = checkpoint.abs_diff(d);
            let maxerr = if j == 10 {
                1
            } else {
                (relerr * 6.0 * checkpoint as f64).ceil() as u64
            };
            if abserr > maxerr {
                return Err(format!(
                    "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
                ));
            }
            checkpoint *= 10;
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            ctx.out.ok();
            Ok(())
        }
        Err(e) => Err(CmdError::Custom(e)),
    }
}
