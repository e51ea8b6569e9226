//! The bit commands on string values: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD
//! BITFIELD_RO. Semantics, argument checks and error texts follow Redis 7.0's bitops.c.

use super::strings::{is_opt, max_string_len};
use crate::exec::command::{flags, parse_i64, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use crate::services::notify;
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
    keys: KEY1,
    group: "bitmap",
    summary: "Sets or clears the bit at offset in the string value stored at key",
    since: "2.2.0",
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
    handler: bitpos,
    ..Command::DEFAULT
},
    Command {
    name: "bitop",
    arity: -4,
    flags: flags::WRITE | flags::DENYOOM,
    keys: Keys::Range {
            first: 2,
            last: -1,
            step: 1,
        },
    group: "bitmap",
    summary: "Perform bitwise operations between strings",
    since: "2.6.0",
    complexity: "O(N)",
    handler: bitop,
    ..Command::DEFAULT
},
    Command {
    name: "bitfield",
    arity: -2,
    flags: flags::WRITE | flags::DENYOOM,
    keys: KEY1,
    group: "bitmap",
    summary: "Perform arbitrary bitfield integer operations on strings",
    since: "3.2.0",
    complexity: "O(1) for each subcommand specified",
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
    handler: bitfield_ro,
    ..Command::DEFAULT
},
];

const BAD_OFFSET: CmdError = CmdError::Static("ERR bit offset is not an integer or out of range");
const BAD_BIT: CmdError = CmdError::Static("ERR bit is not an integer or out of range");

/// Redis's getBitOffsetFromArgument: a bit offset whose byte lies below
/// proto-max-bulk-len; with `hash`, "#N" means N * `bits`.
fn bit_offset(arg: &[u8], hash: bool, bits: u32, max: u64) -> Result<u64, CmdError> {
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
fn with_grown<R>(
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
        if start < 0 {
            start += totlen;
        }
        if end < 0 {
            end += totlen;
        }
        start = start.max(0);
        end = end.max(0);
        if end >= totlen {
            end = totlen - 1;
        }
        if isbit && start <= end {
            (first_mask, last_mask) = bit_range_to_bytes(&mut start, &mut end);
        }
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
        if start < 0 {
            start += totlen;
        }
        if end < 0 {
            end += totlen;
        }
        start = start.max(0);
        end = end.max(0);
        if end >= totlen {
            end = totlen - 1;
        }
        if isbit && start <= end {
            (first_mask, last_mask) = bit_range_to_bytes(&mut start, &mut end);
        }
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

// ---------------------------------------------------------------------------------------
// BITFIELD

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    Incrby,
}

#[derive(Clone, Copy)]
struct Field {
    op: FieldOp,
    offset: u64,
    value: i64,
    overflow: Overflow,
    bits: u32,
    signed: bool,
}

/// "i1".."i64" or "u1".."u63".
fn field_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let err = || {
        CmdError::err(
            "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        )
    };
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    // C's strlen: the digits stop at a NUL byte.
    let rest = &arg[1..];
    let rest = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
    match parse_i64(rest) {
        Some(b) if b >= 1 && b <= if signed { 64 } else { 63 } => Ok((signed, b as u32)),
        _ => Err(err()),
    }
}

fn get_unsigned(p: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for _ in 0..bits {
        let byte = p.get((offset >> 3) as usize).copied().unwrap_or(0);
        let bit = 7 - (offset & 7);
        v = v << 1 | u64::from(byte >> bit & 1);
        offset += 1;
    }
    v
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut v = get_unsigned(p, offset, bits);
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        v |= u64::MAX << bits;
    }
    v as i64
}

fn set_unsigned(p: &mut [u8], mut offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let bitval = value >> (bits - 1 - j) & 1;
        let shift = 7 - (offset & 7);
        if let Some(b) = p.get_mut((offset >> 3) as usize) {
            *b = (*b & !(1 << shift)) | ((bitval as u8) << shift);
        }
        offset += 1;
    }
}

/// Redis's checkUnsignedBitfieldOverflow: whether value + incr leaves the type's range,
/// and the value to store instead under WRAP or SAT.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => max,
        })
    } else if incr < 0 && incr < minincr {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => 0,
        })
    } else {
        None
    }
}

/// Redis's checkSignedBitfieldOverflow.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => max,
        })
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => min,
        })
    } else {
        None
    }
}

/// Runs one SET or INCRBY on `p` (long enough), writing its reply; false if it failed
/// (OVERFLOW FAIL) and changed nothing.
/// One SET or INCRBY of BITFIELD: replies and writes; whether the field's bits changed
/// (false also when OVERFLOW FAIL left it alone).
fn field_write(p: &mut [u8], f: &Field, out: &mut strata_resp::Reply<'_>) -> bool {
    let (ret, new, overflow) = if f.signed {
        let old = get_signed(p, f.offset, f.bits);
        let (ov, new) = if f.op == FieldOp::Incrby {
            let ov = signed_overflow(old, f.value, f.bits, f.overflow);
            (ov, ov.unwrap_or(old.wrapping_add(f.value)))
        } else {
            let ov = signed_overflow(f.value, 0, f.bits, f.overflow);
            (ov, ov.unwrap_or(f.value))
        };
        let ret = if f.op == FieldOp::Incrby { new } else { old };
        (ret, new as u64, ov.is_some())
    } else {
        let old = get_unsigned(p, f.offset, f.bits);
        let (ov, new) = if f.op == FieldOp::Incrby {
            let ov = unsigned_overflow(old, f.value, f.bits, f.overflow);
            (ov, ov.unwrap_or(old.wrapping_add(f.value as u64)))
        } else {
            let ov = unsigned_overflow(f.value as u64, 0, f.bits, f.overflow);
            (ov, ov.unwrap_or(f.value as u64))
        };
        let ret = if f.op == FieldOp::Incrby { new } else { old };
        (ret as i64, new, ov.is_some())
    };
    if overflow && f.overflow == Overflow::Fail {
        out.null();
        false
    } else {
        out.int(ret);
        let before = get_unsigned(p, f.offset, f.bits);
        set_unsigned(p, f.offset, f.bits, new);
        get_unsigned(p, f.offset, f.bits) != before
    }
}

/// A GET on `src` (None: no key), reading past the end as zeros.
fn field_get(src: Option<&[u8]>, f: &Field) -> i64 {
    let mut buf = [0u8; 9];
    let byte = f.offset >> 3;
    if let Some(s) = src {
        for (i, b) in buf.iter_mut().enumerate() {
            match usize::try_from(byte + i as u64).ok().and_then(|k| s.get(k)) {
                Some(&v) => *b = v,
                None => break,
            }
        }
    }
    let off = f.offset - byte * 8;
    if f.signed {
        get_signed(&buf, off, f.bits)
    } else {
        get_unsigned(&buf, off, f.bits) as i64
    }
}

fn bitfield(ctx: &mut Ctx<'_>) -> CmdResult {
    bitfield_generic(ctx, false)
}

fn bitfield_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    bitfield_generic(ctx, true)
}

fn bitfield_generic(ctx: &mut Ctx<'_>, ro: bool) -> CmdResult {
    let max = max_string_len(ctx);
    let argc = ctx.argv.len();
    let mut ops: Vec<Field> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut readonly = true;
    let mut highest_write: u64 = 0;
    let mut j = 2;
    while j < argc {
        let rem = argc - j - 1;
        let sub = ctx.arg(j);
        let op = if is_opt(sub, b"get") && rem >= 2 {
            FieldOp::Get
        } else if is_opt(sub, b"set") && rem >= 3 {
            FieldOp::Set
        } else if is_opt(sub, b"incrby") && rem >= 3 {
            FieldOp::Incrby
        } else if is_opt(sub, b"overflow") && rem >= 1 {
            let t = ctx.arg(j + 1);
            overflow = if is_opt(t, b"wrap") {
                Overflow::Wrap
            } else if is_opt(t, b"sat") {
                Overflow::Sat
            } else if is_opt(t, b"fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::err("Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CmdError::SYNTAX);
        };
        let (signed, bits) = field_type(ctx.arg(j + 1))?;
        let offset = bit_offset(ctx.arg(j + 2), true, bits, max)?;
        let mut value = 0;
        if op != FieldOp::Get {
            readonly = false;
            highest_write = highest_write.max(offset + u64::from(bits) - 1);
            value = ctx.int_arg(j + 3)?;
        }
        ops.push(Field {
            op,
            offset,
            value,
            overflow,
            bits,
            signed,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    if readonly {
        let src = l.get_str(key)?;
        ctx.out.array(ops.len());
        for f in &ops {
            ctx.out.int(field_get(src, f));
        }
        return Ok(());
    }
    if ro {
        return Err(CmdError::err(
            "BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let min_len = usize::try_from((highest_write >> 3) + 1).map_err(|_| BAD_OFFSET)?;
    let out = &mut ctx.out;
    let mut changes = 0;
    let grew = with_grown(&mut l, key, min_len, |s| {
        out.array(ops.len());
        for f in &ops {
            if f.op == FieldOp::Get {
                out.int(field_get(Some(s), f));
            } else if field_write(s, f, out) {
                changes += 1;
            }
        }
    })?
    .1;
    drop(l);
    // As Redis: a change is a key created or grown, or a field whose bits changed.
    if changes > 0 || grew {
        ctx.notify(notify::STRING, "setbit", key);
    } else {
        ctx.no_effect();
    }
    Ok(())
}
