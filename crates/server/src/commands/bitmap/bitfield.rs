//! BITFIELD and BITFIELD_RO: typed integer fields at any bit offset of a string, with
//! Redis's overflow handling (WRAP, SAT, FAIL).

use super::{bit_offset, with_grown, BAD_OFFSET};
use crate::commands::strings::{is_opt, max_string_len};
use crate::exec::command::{ks, parse_i64, CmdError, CmdResult, KeyAt};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;

/// BITFIELD's key, read-only while only GETs (and OVERFLOWs) come first, as Redis's
/// bitfieldGetKeys judges it (anything else, a malformed one included, may write).
pub(super) fn bitfield_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    let mut i = 2;
    let mut readonly = true;
    while i < argv.len() {
        let rest = argv.len() - i - 1;
        let a = &argv[i];
        if a.eq_ignore_ascii_case(b"get") && rest >= 2 {
            i += 3;
        } else if a.eq_ignore_ascii_case(b"overflow") && rest >= 1 {
            i += 2;
        } else {
            readonly = false;
            break;
        }
    }
    let flags = if readonly {
        ks::RO | ks::ACCESS
    } else {
        ks::RW | ks::ACCESS | ks::UPDATE
    };
    f(KeyAt { pos: 1, flags })
}

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

pub(super) fn bitfield(ctx: &mut Ctx<'_>) -> CmdResult {
    bitfield_generic(ctx, false)
}

pub(super) fn bitfield_ro(ctx: &mut Ctx<'_>) -> CmdResult {
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
