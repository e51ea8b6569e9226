//! `struct`: Roberto Ierusalimschy's struct library 0.2 as Redis bundles it (with Redis's
//! overflow and offset fixes). Native layout is x86-64: little endian, `long`/`size_t` of 8
//! bytes, `int` of 4, maximum alignment 8.

use std::ffi::c_int;

use mlua::ffi;

use super::{
    arg_err, c_i64, c_u64, check_bytes, check_number, finish, msg, opt_integer, push_bytes, set_fn,
    State, R,
};

const MAXINTSIZE: i32 = 32;
const MAXALIGN: i32 = 8;
const BIG: u8 = 0;
const LITTLE: u8 = 1;
const NATIVE: u8 = LITTLE;

struct Header {
    endian: u8,
    align: i32,
}

impl Header {
    fn new() -> Header {
        Header {
            endian: NATIVE,
            align: 1,
        }
    }
}

fn isp2(x: i32) -> bool {
    x > 0 && (x & (x - 1)) == 0
}

/// Reads the format character at `*i` (NUL past the end, like the C string).
fn at(fmt: &[u8], i: usize) -> u8 {
    fmt.get(i).copied().unwrap_or(0)
}

fn getnum(fmt: &[u8], i: &mut usize, df: i32) -> R<i32> {
    if !at(fmt, *i).is_ascii_digit() {
        return Ok(df);
    }
    let mut a: i32 = 0;
    loop {
        let d = (at(fmt, *i) - b'0') as i32;
        if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
            return Err(msg("integral size overflow"));
        }
        a = a * 10 + d;
        *i += 1;
        if !at(fmt, *i).is_ascii_digit() {
            return Ok(a);
        }
    }
}

fn optsize(opt: u8, fmt: &[u8], i: &mut usize) -> R<usize> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' => 8,
        b'T' => 8,
        b'f' => 4,
        b'd' => 8,
        b'x' => 1,
        b'c' => getnum(fmt, i, 1)? as isize as usize,
        b'i' | b'I' => {
            let sz = getnum(fmt, i, 4)?;
            if sz > MAXINTSIZE {
                return Err(msg(format!(
                    "integral size {sz} is larger than limit of {MAXINTSIZE}"
                )));
            }
            sz as isize as usize
        }
        _ => 0,
    })
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let mut size = size;
    if size > h.align as usize {
        size = h.align as usize;
    }
    (size.wrapping_sub(len & size.wrapping_sub(1))) & size.wrapping_sub(1)
}

fn controloptions(opt: u8, fmt: &[u8], i: &mut usize, h: &mut Header) -> R<()> {
    match opt {
        b' ' => Ok(()),
        b'>' => {
            h.endian = BIG;
            Ok(())
        }
        b'<' => {
            h.endian = LITTLE;
            Ok(())
        }
        b'!' => {
            let a = getnum(fmt, i, MAXALIGN)?;
            if !isp2(a) {
                return Err(msg(format!("alignment {a} is not a power of 2")));
            }
            h.align = a;
            Ok(())
        }
        _ => {
            let mut m = b"invalid format option '".to_vec();
            m.push(opt);
            m.push(b'\'');
            Err(arg_err(1, m))
        }
    }
}

/// The C format string: stops at the first NUL like `const char *` does.
unsafe fn check_fmt<'a>(l: State) -> R<&'a [u8]> {
    let f = check_bytes(l, 1)?;
    Ok(match f.iter().position(|&c| c == 0) {
        Some(p) => &f[..p],
        None => f,
    })
}

fn put_integer(out: &mut Vec<u8>, n: f64, endian: u8, size: usize) {
    let mut value: u64 = if n < 0.0 { c_i64(n) as u64 } else { c_u64(n) };
    let mut buff = [0u8; MAXINTSIZE as usize];
    if endian == LITTLE {
        for b in buff.iter_mut().take(size) {
            *b = (value & 0xff) as u8;
            value >>= 8;
        }
    } else {
        for b in buff[..size].iter_mut().rev() {
            *b = (value & 0xff) as u8;
            value >>= 8;
        }
    }
    out.extend_from_slice(&buff[..size]);
}

fn correct(bytes: &mut [u8], endian: u8) {
    if endian != NATIVE {
        bytes.reverse();
    }
}

unsafe fn pack_impl(l: State) -> R<c_int> {
    let fmt = check_fmt(l)?;
    let mut h = Header::new();
    let mut arg: c_int = 2;
    let mut totalsize: usize = 0;
    let mut out: Vec<u8> = Vec::new();
    // b_pack pushes a nil mark after its arguments: a missing argument is seen as nil.
    ffi::lua_pushnil(l);
    let mut i = 0usize;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, fmt, &mut i)?;
        let toalign = gettoalign(totalsize, &h, opt, size);
        totalsize = totalsize.wrapping_add(toalign);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(l, arg)?;
                arg += 1;
                put_integer(&mut out, n, h.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(l, arg)? as f32;
                arg += 1;
                let mut b = f.to_ne_bytes();
                correct(&mut b, h.endian);
                out.extend_from_slice(&b[..size]);
            }
            b'd' => {
                let d = check_number(l, arg)?;
                arg += 1;
                let mut b = d.to_ne_bytes();
                correct(&mut b, h.endian);
                out.extend_from_slice(&b[..size]);
            }
            b'c' | b's' => {
                let s = check_bytes(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_err(arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => controloptions(opt, fmt, &mut i, &mut h)?,
        }
        totalsize = totalsize.wrapping_add(size);
    }
    push_bytes(l, &out);
    Ok(1)
}

fn get_integer(buff: &[u8], endian: u8, issigned: bool, size: usize) -> f64 {
    let mut v: u64 = 0;
    if endian == BIG {
        for &b in &buff[..size] {
            v = v.wrapping_shl(8) | b as u64;
        }
    } else {
        for &b in buff[..size].iter().rev() {
            v = v.wrapping_shl(8) | b as u64;
        }
    }
    if !issigned {
        v as f64
    } else {
        // C shifts by (size*8 - 1) mod 64 on x86-64 for sizes above 8.
        let mask = (!0u64).wrapping_shl((size * 8).wrapping_sub(1) as u32);
        if v & mask != 0 {
            v |= mask;
        }
        v as i64 as f64
    }
}

unsafe fn unpack_impl(l: State) -> R<c_int> {
    let fmt = check_fmt(l)?;
    let data = check_bytes(l, 2)?;
    let ld = data.len();
    let mut pos = opt_integer(l, 3, 1)? as usize;
    if pos == 0 {
        return Err(arg_err(3, "offset must be 1 or greater"));
    }
    pos -= 1;
    let mut n: c_int = 0;
    let mut h = Header::new();
    let mut i = 0usize;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(opt, fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(arg_err(2, "data string too short"));
        }
        super::check_stack(l, 2, "too many results")?;
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let issigned = opt.is_ascii_lowercase();
                let res = get_integer(&data[pos..], h.endian, issigned, size);
                ffi::lua_pushnumber(l, res);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                correct(&mut b, h.endian);
                ffi::lua_pushnumber(l, f32::from_ne_bytes(b) as f64);
                n += 1;
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                correct(&mut b, h.endian);
                ffi::lua_pushnumber(l, f64::from_ne_bytes(b));
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(msg("format 'c0' needs a previous size"));
                    }
                    size = c_u64(ffi::lua_tonumber(l, -1)) as usize;
                    ffi::lua_settop(l, -2);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return Err(arg_err(2, "data string too short"));
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(msg("unfinished string in data"));
                };
                size = e + 1;
                push_bytes(l, &data[pos..pos + e]);
                n += 1;
            }
            _ => controloptions(opt, fmt, &mut i, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos.wrapping_add(1) as ffi::lua_Integer);
    Ok(n + 1)
}

unsafe fn size_impl(l: State) -> R<c_int> {
    let fmt = check_fmt(l)?;
    let mut h = Header::new();
    let mut pos: usize = 0;
    let mut i = 0usize;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(opt, fmt, &mut i)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(arg_err(1, "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(arg_err(1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, fmt, &mut i, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
    Ok(1)
}

unsafe extern "C-unwind" fn struct_pack(l: State) -> c_int {
    let r = pack_impl(l);
    finish(l, r)
}
unsafe extern "C-unwind" fn struct_unpack(l: State) -> c_int {
    let r = unpack_impl(l);
    finish(l, r)
}
unsafe extern "C-unwind" fn struct_size(l: State) -> c_int {
    let r = size_impl(l);
    finish(l, r)
}

/// Builds the `struct` table and leaves it on the stack.
pub(crate) unsafe extern "C-unwind" fn luaopen_struct(l: State) -> c_int {
    ffi::lua_createtable(l, 0, 3);
    set_fn(l, b"pack\0", struct_pack);
    set_fn(l, b"unpack\0", struct_unpack);
    set_fn(l, b"size\0", struct_size);
    1
}
