//! The bit commands on string values: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD
//! BITFIELD_RO. Semantics, argument checks and error texts follow Redis 7.0's bitops.c.
//! The declarations, the bit commands and the helpers BITFIELD shares are here; BITFIELD
//! itself is in `bitfield.rs`.

mod bitfield;

use super::strings::{is_opt, max_string_len};
use crate::exec::command::{flags, ks, parse_i64, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bitfield::{bitfield, bitfield_keys, bitfield_ro};
use strata_engine::{Locked, Ttl, Value};

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};

pub const COMMANDS: &[Command] = &[
    Command {
    name: "setbit",
    arity: 4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::RW | ks::ACCESS | ks::UPDATE, 1, 0, 1),
    ]),
    group: "bitmap",
    summary: "Sets or clears the bit at offset in the string value stored at key",
    since: "2.2.0",
    args: "key#key offset#int value#int",
    handler: setbit,
    ..Command::DEFAULT
},
    Command {
    name: "getbit",
    arity: 3,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "bitmap",
    summary: "Returns the bit value at offset in the string value stored at key",
    since: "2.2.0",
    args: "key#key offset#int",
    handler: getbit,
    ..Command::DEFAULT
},
    Command {
    name: "bitcount",
    arity: -2,
    flags: flags::READONLY,
    keys: KEY1,
    group: "bitmap",
    summary: "Count set bits in a string",
    since: "2.6.0",
    complexity: "O(N)",
    args: "key#key [index=(start#int end#int [index_unit=(BYTE | BIT)])]",
    handler: bitcount,
    ..Command::DEFAULT
},
    Command {
    name: "bitpos",
    arity: -3,
    flags: flags::READONLY,
    keys: KEY1,
    group: "bitmap",
    summary: "Find first bit set or clear in a string",
    since: "2.8.7",
    complexity: "O(N)",
    args: "key#key bit#int [index=(start#int [end_index=(end#int [index_unit=(BYTE | BIT)])])]",
    handler: bitpos,
    ..Command::DEFAULT
},
    Command {
    name: "bitop",
    arity: -4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Specs(&[
        KeySpec::range(ks::OW | ks::UPDATE, 2, 0, 1),
        KeySpec::range(ks::RO | ks::ACCESS, 3, -1, 1),
    ]),
    group: "bitmap",
    summary: "Perform bitwise operations between strings",
    since: "2.6.0",
    complexity: "O(N)",
    args: "operation destkey#key key#key1...",
    handler: bitop,
    ..Command::DEFAULT
},
    Command {
    name: "bitfield",
    arity: -2,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Custom(
        bitfield_keys,
        &[KeySpec::range(
            ks::RW | ks::ACCESS | ks::UPDATE | ks::VARIABLE_FLAGS,
            1,
            0,
            1,
        )],
    ),
    group: "bitmap",
    summary: "Perform arbitrary bitfield integer operations on strings",
    since: "3.2.0",
    complexity: "O(1) for each subcommand specified",
    args: "key#key [operation=(GET:encoding_offset=(encoding offset#int) | write=([OVERFLOW:wrap_sat_fail=(WRAP | SAT | FAIL)] write_operation=(SET:encoding_offset_value=(encoding offset#int value#int) | INCRBY:encoding_offset_increment=(encoding offset#int increment#int))))]...",
    handler: bitfield,
    ..Command::DEFAULT
},
    Command {
    name: "bitfield_ro",
    arity: -2,
    flags: flags::READONLY | flags::FAST,
    keys: KEY1,
    group: "bitmap",
    summary: "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
    since: "6.0.0",
    complexity: "O(1) for each subcommand specified",
    args: "key#key [GET:encoding_offset=(encoding offset#int)]...+",
    handler: bitfield_ro,
    ..Command::DEFAULT
},
];

pub(super) const BAD_OFFSET: CmdError =
    CmdError::Static("ERR bit offset is not an integer or out of range");
const BAD_BIT: CmdError = CmdError::Static("ERR bit is not an integer or out of range");

/// Redis's getBitOffsetFromArgument: a bit offset whose byte lies below
/// proto-max-bulk-len; with `hash`, "#N" means N * `bits`.
pub(super) fn bit_offset(arg: &[u8], hash: bool, bits: u32, max: u64) -> Result<u64, CmdError> {
    let use_hash = hash && bits > 0 && arg.first() == Some(&b'#');
    let digits = if use_hash { &arg[1..] } else { arg };
    let mut off = parse_i64(digits).ok_or(BAD_OFFSET)?;
    if use_hash {
        off = off.wrapping_mul(i64::from(bits));
    }
    if off < 0 || (off as u64 >> 3) >= max {
        return Err(BAD_OFFSET);
    }
    Ok(off as u64)
}

/// Redis's lookupStringForBitCommand: runs `f` on the key's string grown (zero-padded)
/// to at least `min_len` bytes, creating the key if it does not exist. Also says whether
/// it created or grew the string (a change, whatever `f` does).
pub(super) fn with_grown<R>(
    l: &mut Locked<'_>,
    key: &[u8],
    min_len: usize,
    f: impl FnOnce(&mut Vec<u8>) -> R,
) -> Result<(R, bool), CmdError> {
    if let Some(s) = l.str_mut(key)? {
        let grew = s.len() < min_len;
        if grew {
            s.resize(min_len, 0);
        }
        return Ok((f(s), grew));
    }
    let mut v = vec![0u8; min_len];
    let r = f(&mut v);
    l.set_value(key, Value::Str(v), Ttl::Clear);
    Ok((r, true))
}

fn setbit(ctx: &mut Ctx<'_>) -> CmdResult {
    let max = max_string_len(ctx);
    let off = bit_offset(ctx.arg(2), false, 0, max)?;
    let on = parse_i64(ctx.arg(3)).ok_or(BAD_BIT)?;
    if on & !1 != 0 {
        return Err(BAD_BIT);
    }
    // The offset check bounds the byte index by proto-max-bulk-len.
    let byte = usize::try_from(off >> 3).map_err(|_| BAD_OFFSET)?;
    let shift = 7 - (off & 7) as u32;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let (old, grew) = with_grown(&mut l, key, byte + 1, |s| {
        let b = &mut s[byte];
        let old = *b >> shift & 1;
        if on == 1 {
            *b |= 1 << shift;
        } else {
            *b &= !(1 << shift);
        }
        old
    })?;
    drop(l);
    // As Redis: a change is a key created or grown, or the bit flipped; anything else
    // is not one (no event, no WATCH, no journal record, no `dirty`).
    if grew || i64::from(old) != on {
        ctx.notify(notify::STRING, "setbit", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(i64::from(old));
    Ok(())
}

fn getbit(ctx: &mut Ctx<'_>) -> CmdResult {
    let max = max_string_len(ctx);
    let off = bit_offset(ctx.arg(2), false, 0, max)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let bit = match l.get_str(key)? {
        None => 0,
        Some(s) => usize::try_from(off >> 3)
            .ok()
            .and_then(|i| s.get(i))
            .map_or(0, |b| b >> (7 - (off & 7)) & 1),
    };
    ctx.out.int(i64::from(bit));
    Ok(())
}

fn popcount(s: &[u8]) -> i64 {
    let mut chunks = s.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        n += u64::from(u64::from_ne_bytes(w).count_ones());
    }
    n += chunks
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>();
    n as i64
}

/// BIT or BYTE (the index unit of BITCOUNT and BITPOS); true for BIT.
fn unit_is_bit(arg: &[u8]) -> Result<bool, CmdError> {
    if is_opt(arg, b"bit") {
        Ok(true)
    } else if is_opt(arg, b"byte") {
        Ok(false)
    } else {
        Err(CmdError::SYNTAX)
    }
}

/// The masks of the bits outside a bit range in its first and last bytes, and the range
/// converted to bytes (Redis's first_byte_neg_mask / last_byte_neg_mask).
fn bit_range_to_bytes(start: &mut i64, end: &mut i64) -> (u8, u8) {
    let first = !((1u32 << (8 - (*start & 7))) - 1) as u8;
    let last = ((1u32 << (7 - (*end & 7))) - 1) as u8;
    *start >>= 3;
    *end >>= 3;
    (first, last)
}

/// BITCOUNT's and BITPOS's range over a string of `totlen` (bytes, or bits with `isbit`):
/// negative indexes count from the end, both are clamped to the string, and a bit range
/// becomes its bytes with the masks of its first and last byte ((0, 0): whole bytes).
fn clamp_range(start: &mut i64, end: &mut i64, totlen: i64, isbit: bool) -> (u8, u8) {
    if *start < 0 {
        *start += totlen;
    }
    if *end < 0 {
        *end += totlen;
    }
    *start = (*start).max(0);
    *end = (*end).max(0);
    if *end >= totlen {
        *end = totlen - 1;
    }
    if isbit && *start <= *end {
        return bit_range_to_bytes(start, end);
    }
    (0, 0)
}

fn bitcount(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let argc = ctx.argv.len();
    let mut l = ctx.lock1(key);
    // Redis 7.0 looks the key up before parsing the range: a missing key answers 0.
    let Some(s) = l.get_str(key)? else {
        ctx.out.int(0);
        return Ok(());
    };
    let strlen = s.len() as i64;
    let (mut start, mut end);
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if argc == 4 || argc == 5 {
        let mut totlen = strlen;
        start = ctx.int_arg(2)?;
        end = ctx.int_arg(3)?;
        let isbit = argc == 5 && unit_is_bit(ctx.arg(4))?;
        if isbit {
            totlen <<= 3;
        }
        if start < 0 && end < 0 && start > end {
            ctx.out.int(0);
            return Ok(());
        }
        (first_mask, last_mask) = clamp_range(&mut start, &mut end, totlen, isbit);
    } else if argc == 2 {
        start = 0;
        end = strlen - 1;
    } else {
        return Err(CmdError::SYNTAX);
    }
    let count = if start > end {
        0
    } else {
        let (a, b) = (start as usize, end as usize);
        let mut n = popcount(&s[a..=b]);
        n -= popcount(&[s[a] & first_mask, s[b] & last_mask]);
        n
    };
    ctx.out.int(count);
    Ok(())
}

/// Redis's redisBitpos: the first bit equal to `bit`; when there is none, -1 looking for
/// a set bit, or the first bit past the end looking for a clear one.
fn find_bit(s: &[u8], bit: bool) -> i64 {
    for (i, &b) in s.iter().enumerate() {
        let v = if bit { b } else { !b };
        if v != 0 {
            return i as i64 * 8 + i64::from(v.leading_zeros());
        }
    }
    if bit {
        -1
    } else {
        s.len() as i64 * 8
    }
}

fn bitpos(ctx: &mut Ctx<'_>) -> CmdResult {
    let bit = match parse_i64(ctx.arg(2)) {
        Some(0) => false,
        Some(1) => true,
        Some(_) => return Err(CmdError::err("The bit argument must be 1 or 0.")),
        None => return Err(CmdError::NOT_INTEGER),
    };
    let key = ctx.arg(1);
    let argc = ctx.argv.len();
    let mut l = ctx.lock1(key);
    // A missing key is an infinite run of zeros.
    let Some(s) = l.get_str(key)? else {
        ctx.out.int(if bit { -1 } else { 0 });
        return Ok(());
    };
    let strlen = s.len() as i64;
    let (mut start, mut end);
    let mut end_given = false;
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if (4..=6).contains(&argc) {
        let mut totlen = strlen;
        start = ctx.int_arg(3)?;
        let isbit = argc == 6 && unit_is_bit(ctx.arg(5))?;
        if argc >= 5 {
            end = ctx.int_arg(4)?;
            end_given = true;
        } else if isbit {
            end = (totlen << 3) + 7;
        } else {
            end = totlen - 1;
        }
        if isbit {
            totlen <<= 3;
        }
        (first_mask, last_mask) = clamp_range(&mut start, &mut end, totlen, isbit);
    } else if argc == 3 {
        start = 0;
        end = strlen - 1;
    } else {
        return Err(CmdError::SYNTAX);
    }
    if start > end {
        ctx.out.int(-1);
        return Ok(());
    }
    // From here 0 <= start <= end < strlen.
    let byte = |i: i64| s[i as usize];
    let mut bytes = end - start + 1;
    let mut pos = 'found: {
        if first_mask != 0 {
            let mut tmp = if bit {
                byte(start) & !first_mask
            } else {
                byte(start) | first_mask
            };
            if last_mask != 0 && bytes == 1 {
                tmp = if bit {
                    tmp & !last_mask
                } else {
                    tmp | last_mask
                };
            }
            let p = find_bit(&[tmp], bit);
            if bytes == 1 || (p != -1 && p != 8) {
                break 'found p;
            }
            start += 1;
            bytes -= 1;
        }
        let cur = bytes - i64::from(last_mask != 0);
        if cur > 0 {
            let p = find_bit(&s[start as usize..(start + cur) as usize], bit);
            if bytes == cur || (p != -1 && p != cur << 3) {
                break 'found p;
            }
            start += cur;
            bytes -= cur;
        }
        let tmp = if bit {
            byte(end) & !last_mask
        } else {
            byte(end) | last_mask
        };
        find_bit(&[tmp], bit)
    };
    // With an explicit end, the bits right of the range are not zeros to be found.
    if end_given && !bit && pos == bytes << 3 {
        ctx.out.int(-1);
        return Ok(());
    }
    if pos != -1 {
        pos += start << 3;
    }
    ctx.out.int(pos);
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

fn bitop(ctx: &mut Ctx<'_>) -> CmdResult {
    let op = match ctx.arg(1) {
        o if is_opt(o, b"and") => BitOp::And,
        o if is_opt(o, b"or") => BitOp::Or,
        o if is_opt(o, b"xor") => BitOp::Xor,
        o if is_opt(o, b"not") => BitOp::Not,
        _ => return Err(CmdError::SYNTAX),
    };
    if op == BitOp::Not && ctx.argv.len() != 4 {
        return Err(CmdError::err(
            "BITOP NOT must be called with a single source key.",
        ));
    }
    let dest = ctx.arg(2);
    let srcs = &ctx.argv[3..];
    let mut l = ctx.lock(&ctx.argv[2..]);
    // First pass: type checks, statistics and the result length.
    let mut maxlen = 0;
    for k in srcs {
        if let Some(e) = l.get(k) {
            let s = e.as_str().ok_or(CmdError::WRONG_TYPE)?;
            maxlen = maxlen.max(s.len());
        }
    }
    if maxlen == 0 {
        let existed = l.remove(dest);
        drop(l);
        if existed {
            ctx.notify(notify::GENERIC, "del", dest);
        } else {
            ctx.no_effect();
        }
        ctx.out.int(0);
        return Ok(());
    }
    let mut res = vec![0u8; maxlen];
    for (i, k) in srcs.iter().enumerate() {
        let s = l.peek(k).and_then(|e| e.as_str()).unwrap_or(&[]);
        if i == 0 {
            res[..s.len()].copy_from_slice(s);
            if op == BitOp::Not {
                res.iter_mut().for_each(|b| *b = !*b);
            }
            continue;
        }
        match op {
            BitOp::And => {
                res.iter_mut()
                    .zip(s.iter().chain(std::iter::repeat(&0u8)))
                    .for_each(|(r, b)| *r &= b);
            }
            BitOp::Or => res.iter_mut().zip(s).for_each(|(r, b)| *r |= b),
            BitOp::Xor => res.iter_mut().zip(s).for_each(|(r, b)| *r ^= b),
            BitOp::Not => {}
        }
    }
    l.set_value(dest, Value::Str(res), Ttl::Clear);
    drop(l);
    ctx.notify(notify::STRING, "set", dest);
    ctx.out.int(maxlen as i64);
    Ok(())
}
