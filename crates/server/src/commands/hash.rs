//! The hash commands: HSET HSETNX HGET HMSET HMGET HGETALL HDEL HLEN HEXISTS HKEYS HVALS
//! HINCRBY HINCRBYFLOAT HSTRLEN HRANDFIELD HSCAN. Semantics follow Redis 7.0's t_hash.c;
//! the value type (listpack / hashtable forms) is `strata_engine::HashValue`.
//!
//! Also here, shared with the set (and sorted set) commands: the random source of the
//! sampling commands, distinct sampling, and the *SCAN argument parsing.
//!
//! Each write command changes the keyspace in one place (between its lock and its reply)
//! and then emits its keyspace events where Redis 7.0's t_hash.c calls notifyKeyspaceEvent:
//! hset (HSET, HMSET, HSETNX when it sets), hdel (then del when the hash is emptied),
//! hincrby, hincrbyfloat.

use super::random::{random_count_arg, sample_distinct, Picks, Rng};
use super::scan;
use crate::exec::command::{flags, ks, parse_i64, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::num::longdouble;
use crate::services::notify;
use strata_engine::HashValue;
use strata_resp::Protocol;

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

const SCAN_COMPLEXITY: &str = "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..";

pub const COMMANDS: &[Command] = &[
    Command {
    name: "hset",
    arity: -4,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "hash",
    summary: "Set the string value of a hash field",
    since: "2.0.0",
    complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
    args: "key#key field_value=(field value)...",
    handler: hset,
    ..Command::DEFAULT
},
    Command {
    name: "hsetnx",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::INSERT, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Set the value of a hash field, only if the field does not exist",
    since: "2.0.0",
    complexity: "O(1)",
    args: "key#key field value",
    handler: hsetnx,
    ..Command::DEFAULT
},
    Command {
    name: "hget",
    arity: 3,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "hash",
    summary: "Get the value of a hash field",
    since: "2.0.0",
    complexity: "O(1)",
    args: "key#key field",
    handler: hget,
    ..Command::DEFAULT
},
    Command {
    name: "hmset",
    arity: -4,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: KEY1,
    group: "hash",
    summary: "Set multiple hash fields to multiple values",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields being set.",
    args: "key#key field_value=(field value)...",
    handler: hset,
    ..Command::DEFAULT
},
    Command {
    name: "hmget",
    arity: -3,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "hash",
    summary: "Get the values of all the given hash fields",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields being requested.",
    args: "key#key field...",
    handler: hmget,
    ..Command::DEFAULT
},
    Command {
    name: "hgetall",
    arity: 2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "hash",
    summary: "Get all the fields and values in a hash",
    since: "2.0.0",
    complexity: "O(N) where N is the size of the hash.",
    tips: &["nondeterministic_output_order"],
    args: "key#key",
    handler: hgetall,
    ..Command::DEFAULT
},
    Command {
    name: "hdel",
    arity: -3,
    flags: flags::WRITE | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Delete one or more hash fields",
    since: "2.0.0",
    complexity: "O(N) where N is the number of fields to be removed.",
    args: "key#key field...",
    handler: hdel,
    ..Command::DEFAULT
},
    Command {
    name: "hlen",
    arity: 2,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Get the number of fields in a hash",
    since: "2.0.0",
    complexity: "O(1)",
    args: "key#key",
    handler: hlen,
    ..Command::DEFAULT
},
    Command {
    name: "hexists",
    arity: 3,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Determine if a hash field exists",
    since: "2.0.0",
    complexity: "O(1)",
    args: "key#key field",
    handler: hexists,
    ..Command::DEFAULT
},
    Command {
    name: "hkeys",
    arity: 2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "hash",
    summary: "Get all the fields in a hash",
    since: "2.0.0",
    complexity: "O(N) where N is the size of the hash.",
    tips: &["nondeterministic_output_order"],
    args: "key#key",
    handler: hkeys,
    ..Command::DEFAULT
},
    Command {
    name: "hvals",
    arity: 2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "hash",
    summary: "Get all the values in a hash",
    since: "2.0.0",
    complexity: "O(N) where N is the size of the hash.",
    tips: &["nondeterministic_output_order"],
    args: "key#key",
    handler: hvals,
    ..Command::DEFAULT
},
    Command {
    name: "hincrby",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Increment the integer value of a hash field by the given number",
    since: "2.0.0",
    complexity: "O(1)",
    args: "key#key field increment#int",
    handler: hincrby,
    ..Command::DEFAULT
},
    Command {
    name: "hincrbyfloat",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Increment the float value of a hash field by the given amount",
    since: "2.6.0",
    complexity: "O(1)",
    args: "key#key field increment#double",
    handler: hincrbyfloat,
    ..Command::DEFAULT
},
    Command {
    name: "hstrlen",
    arity: 3,
    flags: flags::READONLY | flags::FAST,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RO, 1, 0, 1),
    ]),
    group: "hash",
    summary: "Get the length of the value of a hash field",
    since: "3.2.0",
    complexity: "O(1)",
    args: "key#key field",
    handler: hstrlen,
    ..Command::DEFAULT
},
    Command {
    name: "hrandfield",
    arity: -2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "hash",
    summary: "Get one or multiple random fields from a hash",
    since: "6.2.0",
    complexity: "O(N) where N is the number of fields returned",
    tips: &["nondeterministic_output"],
    args: "key#key [options=(count#int [WITHVALUES])]",
    handler: hrandfield,
    ..Command::DEFAULT
},
    Command {
    name: "hscan",
    arity: -3,
    flags: flags::READONLY,
    keys: KEY1,
    group: "hash",
    summary: "Incrementally iterate hash fields and associated values",
    since: "2.8.0",
    complexity: SCAN_COMPLEXITY,
    tips: &["nondeterministic_output"],
    args: "key#key cursor#int [MATCH:pattern#pattern] [COUNT:count#int]",
    handler: hscan,
    ..Command::DEFAULT
},
];

fn resp3(ctx: &Ctx<'_>) -> bool {
    ctx.out.proto == Protocol::Resp3
}

// ---------------------------------------------------------------------------------------
// HSET HMSET HSETNX HDEL HINCRBY HINCRBYFLOAT

/// HSET and HMSET (the same but for the reply).
fn hset(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = ctx.lower(0);
    if ctx.argv.len() % 2 == 1 {
        return Err(CmdError::arity(&String::from_utf8_lossy(&name)));
    }
    let key = ctx.arg(1);
    let enc = &ctx.keyspace().encodings;
    let pairs = &ctx.argv[2..];
    let mut l = ctx.lock1(key);
    let h = l.hash_mut_or_create(key)?;
    h.prepare_write(pairs.iter().map(|a| a.len()), enc);
    let mut created = 0;
    for p in pairs.chunks_exact(2) {
        created += !h.set(&p[0], &p[1], enc) as i64;
    }
    drop(l);
    ctx.notify(notify::HASH, "hset", key);
    if name == b"hmset" {
        ctx.out.ok();
    } else {
        ctx.out.int(created);
    }
    Ok(())
}

fn hsetnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, field, value) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let h = l.hash_mut_or_create(key)?;
    let added = if h.contains(field) {
        false
    } else {
        h.prepare_write([field.len(), value.len()], enc);
        h.set(field, value, enc);
        true
    };
    drop(l);
    if added {
        ctx.notify(notify::HASH, "hset", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(added as i64);
    Ok(())
}

fn hdel(ctx: &mut Ctx<'_>) -> CmdResult {
    super::remove_members(
        ctx,
        strata_engine::Locked::hash_mut,
        HashValue::remove,
        HashValue::is_empty,
        notify::HASH,
        "hdel",
    )
}

fn hincrby(ctx: &mut Ctx<'_>) -> CmdResult {
    let incr = ctx.int_arg(3)?;
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let h = l.hash_mut_or_create(key)?;
    let new = h.update(field, enc, |old| {
        let old = match old {
            None => 0,
            Some(v) => parse_i64(v).ok_or(CmdError::Static("ERR hash value is not an integer"))?,
        };
        let new = old
            .checked_add(incr)
            .ok_or_else(|| CmdError::err("increment or decrement would overflow"))?;
        Ok::<_, CmdError>(strata_resp::Digits::of(new))
    })?;
    let new = new.value;
    drop(l);
    ctx.notify(notify::HASH, "hincrby", key);
    ctx.out.int(new);
    Ok(())
}

fn hincrbyfloat(ctx: &mut Ctx<'_>) -> CmdResult {
    let incr = longdouble::parse(ctx.arg(3)).ok_or(CmdError::NOT_FLOAT)?;
    if !incr.is_finite() {
        return Err(CmdError::err("value is NaN or Infinity"));
    }
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    let h = l.hash_mut_or_create(key)?;
    let old = match h.get(field) {
        None => longdouble::Ld::Zero,
        Some(v) => longdouble::parse(v).ok_or(CmdError::Static("ERR hash value is not a float"))?,
    };
    let sum = longdouble::add(old, incr);
    if !sum.is_finite() {
        return Err(CmdError::err("increment would produce NaN or Infinity"));
    }
    let text = longdouble::to_human(sum);
    h.set(field, text.as_bytes(), enc);
    drop(l);
    // Journaled and replicated as the HSET of the result, as Redis propagates it: float
    // arithmetic need not give the same digits on another machine.
    if ctx.effects_wanted() {
        let argv = ctx.argv;
        let value = bytes::Bytes::from(text.clone().into_bytes());
        ctx.rewrite1(vec![
            bytes::Bytes::from_static(b"HSET"),
            argv[1].clone(),
            argv[2].clone(),
            value,
        ]);
    }
    ctx.notify(notify::HASH, "hincrbyfloat", key);
    ctx.out.bulk(text.as_bytes());
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Reads

fn hget(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    match l.get_hash(key)?.and_then(|h| h.get(field)) {
        Some(v) => ctx.out.bulk(v),
        None => ctx.out.null(),
    }
    Ok(())
}

fn hmget(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let fields = &ctx.argv[2..];
    let mut l = ctx.lock1(key);
    let h = l.get_hash(key)?;
    ctx.out.array(fields.len());
    for f in fields {
        match h.and_then(|h| h.get(f)) {
            Some(v) => ctx.out.bulk(v),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn hlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.get_hash(key)?.map_or(0, HashValue::len);
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

fn hexists(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    let found = l.get_hash(key)?.is_some_and(|h| h.contains(field));
    drop(l);
    ctx.out.int(found as i64);
    Ok(())
}

fn hstrlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, field) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    let n = l
        .get_hash(key)?
        .and_then(|h| h.get(field))
        .map_or(0, <[u8]>::len);
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

const WITH_FIELDS: u8 = 1;
const WITH_VALUES: u8 = 2;

/// HGETALL (a map), HKEYS and HVALS (arrays), in storage order.
fn getall_generic(ctx: &mut Ctx<'_>, what: u8) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let h = l.get_hash(key)?;
    let n = h.map_or(0, HashValue::len);
    if what == WITH_FIELDS | WITH_VALUES {
        ctx.out.map(n);
    } else {
        ctx.out.array(n);
    }
    for (f, v) in h.into_iter().flat_map(HashValue::iter) {
        if what & WITH_FIELDS != 0 {
            ctx.out.bulk(f);
        }
        if what & WITH_VALUES != 0 {
            ctx.out.bulk(v);
        }
    }
    Ok(())
}

fn hgetall(ctx: &mut Ctx<'_>) -> CmdResult {
    getall_generic(ctx, WITH_FIELDS | WITH_VALUES)
}

fn hkeys(ctx: &mut Ctx<'_>) -> CmdResult {
    getall_generic(ctx, WITH_FIELDS)
}

fn hvals(ctx: &mut Ctx<'_>) -> CmdResult {
    getall_generic(ctx, WITH_VALUES)
}

// ---------------------------------------------------------------------------------------
// HRANDFIELD HSCAN

/// HRANDFIELD key [count [WITHVALUES]]
fn hrandfield(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    if ctx.argv.len() < 3 {
        let mut rng = Rng::new(ctx);
        let mut l = ctx.lock1(key);
        match l.get_hash(key)? {
            Some(h) => match h.nth(rng.below(h.len())) {
                Some((f, _)) => ctx.out.bulk(f),
                None => ctx.out.null(),
            },
            None => ctx.out.null(),
        }
        return Ok(());
    }
    let l = random_count_arg(ctx, 2)?;
    let argc = ctx.argv.len();
    if argc > 4 || (argc == 4 && ctx.lower(3) != b"withvalues") {
        return Err(CmdError::SYNTAX);
    }
    let withvalues = argc == 4;
    if withvalues && !(-i64::MAX / 2..=i64::MAX / 2).contains(&l) {
        return Err(CmdError::err("value is out of range"));
    }
    hrandfield_count(ctx, l, withvalues)
}

fn hrandfield_count(ctx: &mut Ctx<'_>, l: i64, withvalues: bool) -> CmdResult {
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let nested = withvalues && resp3(ctx);
    let mut lk = ctx.lock1(key);
    let Some(h) = lk.get_hash(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let uniq = l >= 0;
    let count = l.unsigned_abs();
    if count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    let size = h.len();
    let emit = |ctx: &mut Ctx<'_>, (f, v): (&[u8], &[u8])| {
        if nested {
            ctx.out.array(2);
        }
        ctx.out.bulk(f);
        if withvalues {
            ctx.out.bulk(v);
        }
    };
    let header = |ctx: &mut Ctx<'_>, n: u64| {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if withvalues && !nested {
            ctx.out.array(n.saturating_mul(2));
        } else {
            ctx.out.array(n);
        }
    };
    // CASE 1: repeats allowed (or a single pick): independent uniform picks.
    if !uniq || count == 1 {
        header(ctx, count);
        // A listpack is walked once into positions; a hashtable picks in O(1).
        let pairs: Option<Vec<(&[u8], &[u8])>> =
            (h.encoding() == "listpack").then(|| h.iter().collect());
        let picks = Picks::new(ctx);
        for _ in 0..count {
            let i = rng.below(size);
            let pick = match &pairs {
                Some(p) => p.get(i).copied(),
                None => h.nth(i),
            };
            if let Some(p) = pick {
                emit(ctx, p);
            }
            if picks.stop(ctx) {
                break;
            }
        }
        return Ok(());
    }
    // CASE 2: at least the whole hash: all of it, in storage order.
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count >= size {
        header(ctx, size as u64);
        for p in h.iter() {
            emit(ctx, p);
        }
        return Ok(());
    }
    // CASES 3 and 4: distinct positions.
    header(ctx, count as u64);
    let pairs: Vec<(&[u8], &[u8])> = if h.encoding() == "listpack" {
        h.iter().collect()
    } else {
        Vec::new()
    };
    for i in sample_distinct(&mut rng, size, count) {
        let pick = if pairs.is_empty() {
            h.nth(i)
        } else {
            pairs.get(i).copied()
        };
        if let Some(p) = pick {
            emit(ctx, p);
        }
    }
    Ok(())
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]
fn hscan(ctx: &mut Ctx<'_>) -> CmdResult {
    let cursor = scan::parse_cursor(ctx.arg(2))?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(h) = l.get_hash(key)? else {
        drop(l);
        scan::empty_scan(ctx);
        return Ok(());
    };
    let opts = scan::ScanOptions::parse(ctx, 3, false)?;
    let count = opts.count;
    let (next, pairs) = h.scan(cursor, count);
    let matching: Vec<(&[u8], &[u8])> =
        pairs.into_iter().filter(|(f, _)| opts.matches(f)).collect();
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(matching.len() * 2);
    for (f, v) in matching {
        ctx.out.bulk(f);
        ctx.out.bulk(v);
    }
    Ok(())
}
