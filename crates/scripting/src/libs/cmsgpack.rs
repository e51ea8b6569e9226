//! `cmsgpack`: lua-cmsgpack 0.4.0 as Redis bundles it.

use std::ffi::c_int;

use mlua::ffi;

use super::{
    arg_err, c_i32, c_i64, check_bytes, check_integer, check_stack, finish, msg, opt_integer,
    push_bytes, set_fn, set_str, to_bytes, State, R,
};

const MAX_NESTING: i32 = 16;

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | (len & 0xff) as u8);
    } else if len <= 0xff {
        buf.push(0xd9);
        buf.push(len as u8);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f as f64 {
        buf.push(0xca);
        buf.extend_from_slice(&f.to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.push(0xcc);
            buf.push(n as u8);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as i8 as u8);
    } else if n >= -128 {
        buf.push(0xd0);
        buf.push(n as u8);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n >= -2147483648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&(n as u64).to_be_bytes());
    }
}

fn encode_header(buf: &mut Vec<u8>, n: u64, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        buf.push(fix | (n & 0xf) as u8);
    } else if n <= 65535 {
        buf.push(b16);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(b32);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

unsafe fn encode_number(l: State, buf: &mut Vec<u8>) {
    let n = ffi::lua_tonumber(l, -1);
    // IS_INT64_EQUIVALENT: !isinf(n) && (int64_t)n == n
    if !n.is_infinite() && c_i64(n) as f64 == n {
        encode_int(buf, ffi::lua_tointeger_(l, -1) as i64);
    } else {
        encode_double(buf, n);
    }
}

unsafe fn table_is_an_array(l: State) -> R<bool> {
    let mut count: i32 = 0;
    let mut max: i32 = 0;
    let stacktop = ffi::lua_gettop(l);
    check_stack(l, 2, "in function table_is_an_array")?;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_settop(l, -2);
        let is_index = ffi::lua_type(l, -1) == ffi::LUA_TNUMBER && {
            let k = ffi::lua_tonumber(l, -1);
            k > 0.0 && !k.is_infinite() && c_i32(k) as f64 == k
        };
        if !is_index {
            ffi::lua_settop(l, stacktop);
            return Ok(false);
        }
        let n = ffi::lua_tonumber(l, -1);
        max = if n > max as f64 { c_i32(n) } else { max };
        count += 1;
    }
    ffi::lua_settop(l, stacktop);
    Ok(max == count)
}

unsafe fn encode_table_as_array(l: State, buf: &mut Vec<u8>, level: i32) -> R<()> {
    let len = ffi::lua_objlen(l, -1);
    encode_header(buf, len as u64, 0x90, 0xdc, 0xdd);
    check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
    for j in 1..=len {
        ffi::lua_pushnumber(l, j as f64);
        ffi::lua_gettable_(l, -2);
        encode_type(l, buf, level + 1)?;
    }
    Ok(())
}

unsafe fn encode_table_as_map(l: State, buf: &mut Vec<u8>, level: i32) -> R<()> {
    let mut len: u64 = 0;
    check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_settop(l, -2);
        len += 1;
    }
    encode_header(buf, len, 0x80, 0xde, 0xdf);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pushvalue(l, -2);
        encode_type(l, buf, level + 1)?;
        encode_type(l, buf, level + 1)?;
    }
    Ok(())
}

unsafe fn encode_type(l: State, buf: &mut Vec<u8>, level: i32) -> R<()> {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => {
            let s = to_bytes(l, -1).unwrap_or(&[]);
            encode_bytes(buf, s);
        }
        ffi::LUA_TBOOLEAN => buf.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => encode_number(l, buf),
        ffi::LUA_TTABLE => {
            if table_is_an_array(l)? {
                encode_table_as_array(l, buf, level)?;
            } else {
                encode_table_as_map(l, buf, level)?;
            }
        }
        _ => buf.push(0xc0),
    }
    ffi::lua_settop(l, -2);
    Ok(())
}

unsafe fn pack_impl(l: State) -> R<c_int> {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return Err(arg_err(0, "MessagePack pack needs input."));
    }
    if ffi::lua_checkstack(l, nargs) == 0 {
        return Err(arg_err(0, "Too many arguments for MessagePack pack."));
    }
    let mut buf: Vec<u8> = Vec::new();
    for i in 1..=nargs {
        check_stack(l, 1, "in function mp_check")?;
        ffi::lua_pushvalue(l, i);
        encode_type(l, &mut buf, 0)?;
        push_bytes(l, &buf);
        buf.clear();
    }
    ffi::lua_concat(l, nargs);
    Ok(1)
}

const ERR_EOF: u8 = 1;
const ERR_BADFMT: u8 = 2;

struct Cur<'a> {
    p: &'a [u8],
    err: u8,
}

impl Cur<'_> {
    fn need(&mut self, n: usize) -> bool {
        if self.p.len() < n {
            self.err = ERR_EOF;
            false
        } else {
            true
        }
    }
    fn consume(&mut self, n: usize) {
        self.p = &self.p[n..];
    }
    fn be(&self, from: usize, n: usize) -> u64 {
        self.p[from..from + n]
            .iter()
            .fold(0u64, |a, &b| (a << 8) | b as u64)
    }
}

unsafe fn decode_array(l: State, c: &mut Cur, len: usize) -> R<()> {
    let mut index: i32 = 1;
    ffi::lua_createtable(l, 0, 0);
    check_stack(l, 1, "in function mp_decode_to_lua_array")?;
    for _ in 0..len {
        ffi::lua_pushnumber(l, index as f64);
        index = index.wrapping_add(1);
        decode_type(l, c)?;
        if c.err != 0 {
            return Ok(());
        }
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

unsafe fn decode_hash(l: State, c: &mut Cur, len: usize) -> R<()> {
    ffi::lua_createtable(l, 0, 0);
    for _ in 0..len {
        decode_type(l, c)?;
        if c.err != 0 {
            return Ok(());
        }
        decode_type(l, c)?;
        if c.err != 0 {
            return Ok(());
        }
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

/// A msgpack integer of `width` bytes after its tag, unsigned or sign-extended, pushed as a
/// Lua integer (nothing when the input is short: `need` records the error).
unsafe fn push_int(l: State, c: &mut Cur, width: usize, signed: bool) {
    if c.need(1 + width) {
        let raw = c.be(1, width);
        let v = if signed {
            let shift = 64 - 8 * width as u32;
            ((raw << shift) as i64) >> shift
        } else {
            raw as i64
        };
        ffi::lua_pushinteger(l, v as ffi::lua_Integer);
        c.consume(1 + width);
    }
}

unsafe fn decode_type(l: State, c: &mut Cur) -> R<()> {
    if !c.need(1) {
        return Ok(());
    }
    check_stack(
        l,
        1,
        "too many return values at once; use unpack_one or unpack_limit instead.",
    )?;
    let b = c.p[0];
    match b {
        0xcc => push_int(l, c, 1, false),
        0xd0 => push_int(l, c, 1, true),
        0xcd => push_int(l, c, 2, false),
        0xd1 => push_int(l, c, 2, true),
        0xce => push_int(l, c, 4, false),
        0xd2 => push_int(l, c, 4, true),
        // lua_pushinteger((lua_Integer)uint64): wraps, as the C does.
        0xcf => push_int(l, c, 8, false),
        0xd3 => {
            if c.need(9) {
                ffi::lua_pushnumber(l, c.be(1, 8) as i64 as f64);
                c.consume(9);
            }
        }
        0xc0 => {
            ffi::lua_pushnil(l);
            c.consume(1);
        }
        0xc3 => {
            ffi::lua_pushboolean(l, 1);
            c.consume(1);
        }
        0xc2 => {
            ffi::lua_pushboolean(l, 0);
            c.consume(1);
        }
        0xca => {
            if c.need(5) {
                let f = f32::from_bits(c.be(1, 4) as u32);
                ffi::lua_pushnumber(l, f as f64);
                c.consume(5);
            }
        }
        0xcb => {
            if c.need(9) {
                ffi::lua_pushnumber(l, f64::from_bits(c.be(1, 8)));
                c.consume(9);
            }
        }
        0xd9 => {
            if c.need(2) {
                let n = c.p[1] as usize;
                if c.need(2 + n) {
                    push_bytes(l, &c.p[2..2 + n]);
                    c.consume(2 + n);
                }
            }
        }
        0xda => {
            if c.need(3) {
                let n = c.be(1, 2) as usize;
                if c.need(3 + n) {
                    push_bytes(l, &c.p[3..3 + n]);
                    c.consume(3 + n);
                }
            }
        }
        0xdb => {
            if c.need(5) {
                let n = c.be(1, 4) as usize;
                c.consume(5);
                if c.need(n) {
                    push_bytes(l, &c.p[..n]);
                    c.consume(n);
                }
            }
        }
        0xdc => {
            if c.need(3) {
                let n = c.be(1, 2) as usize;
                c.consume(3);
                decode_array(l, c, n)?;
            }
        }
        0xdd => {
            if c.need(5) {
                let n = c.be(1, 4) as usize;
                c.consume(5);
                decode_array(l, c, n)?;
            }
        }
        0xde => {
            if c.need(3) {
                let n = c.be(1, 2) as usize;
                c.consume(3);
                decode_hash(l, c, n)?;
            }
        }
        0xdf => {
            if c.need(5) {
                let n = c.be(1, 4) as usize;
                c.consume(5);
                decode_hash(l, c, n)?;
            }
        }
        _ => {
            if b & 0x80 == 0 {
                ffi::lua_pushinteger(l, b as ffi::lua_Integer);
                c.consume(1);
            } else if b & 0xe0 == 0xe0 {
                ffi::lua_pushinteger(l, b as i8 as ffi::lua_Integer);
                c.consume(1);
            } else if b & 0xe0 == 0xa0 {
                let n = (b & 0x1f) as usize;
                if c.need(1 + n) {
                    push_bytes(l, &c.p[1..1 + n]);
                    c.consume(1 + n);
                }
            } else if b & 0xf0 == 0x90 {
                c.consume(1);
                decode_array(l, c, (b & 0xf) as usize)?;
            } else if b & 0xf0 == 0x80 {
                c.consume(1);
                decode_hash(l, c, (b & 0xf) as usize)?;
            } else {
                c.err = ERR_BADFMT;
            }
        }
    }
    Ok(())
}

unsafe fn unpack_full(l: State, limit: ffi::lua_Integer, offset: ffi::lua_Integer) -> R<c_int> {
    let decode_all = limit == 0 && offset == 0;
    let s = check_bytes(l, 1)?;
    let len = s.len();
    if offset < 0 || limit < 0 {
        return Err(msg(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        )));
    } else if offset as usize > len {
        return Err(msg(format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        )));
    }
    let limit = if decode_all {
        i32::MAX as ffi::lua_Integer
    } else {
        limit
    };
    let mut c = Cur {
        p: &s[offset as usize..],
        err: 0,
    };
    let mut cnt: c_int = 0;
    while !c.p.is_empty() && (cnt as ffi::lua_Integer) < limit {
        decode_type(l, &mut c)?;
        if c.err == ERR_EOF {
            return Err(msg("Missing bytes in input."));
        } else if c.err == ERR_BADFMT {
            return Err(msg("Bad data format in input."));
        }
        cnt += 1;
    }
    if !decode_all {
        let left = c.p.len();
        let new_offset = len - left;
        check_stack(l, 1, "in function mp_unpack_full")?;
        ffi::lua_pushinteger(
            l,
            if left == 0 {
                -1
            } else {
                new_offset as ffi::lua_Integer
            },
        );
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    Ok(cnt)
}

unsafe fn unpack_impl(l: State) -> R<c_int> {
    unpack_full(l, 0, 0)
}

unsafe fn unpack_one_impl(l: State) -> R<c_int> {
    let offset = opt_integer(l, 2, 0)?;
    ffi::lua_settop(l, -(ffi::lua_gettop(l) - 1) - 1);
    unpack_full(l, 1, offset)
}

unsafe fn unpack_limit_impl(l: State) -> R<c_int> {
    let limit = check_integer(l, 2)?;
    let offset = opt_integer(l, 3, 0)?;
    ffi::lua_settop(l, -(ffi::lua_gettop(l) - 1) - 1);
    unpack_full(l, limit, offset)
}

unsafe extern "C-unwind" fn mp_pack(l: State) -> c_int {
    let r = pack_impl(l);
    finish(l, r)
}
unsafe extern "C-unwind" fn mp_unpack(l: State) -> c_int {
    let r = unpack_impl(l);
    finish(l, r)
}
unsafe extern "C-unwind" fn mp_unpack_one(l: State) -> c_int {
    let r = unpack_one_impl(l);
    finish(l, r)
}
unsafe extern "C-unwind" fn mp_unpack_limit(l: State) -> c_int {
    let r = unpack_limit_impl(l);
    finish(l, r)
}

/// Builds the `cmsgpack` table and leaves it on the stack.
pub(crate) unsafe extern "C-unwind" fn luaopen_cmsgpack(l: State) -> c_int {
    ffi::lua_createtable(l, 0, 0);
    set_fn(l, b"pack\0", mp_pack);
    set_fn(l, b"unpack\0", mp_unpack);
    set_fn(l, b"unpack_one\0", mp_unpack_one);
    set_fn(l, b"unpack_limit\0", mp_unpack_limit);
    set_str(l, b"_NAME\0", "cmsgpack");
    set_str(l, b"_VERSION\0", "lua-cmsgpack 0.4.0");
    set_str(
        l,
        b"_COPYRIGHT\0",
        "Copyright (C) 2012, Salvatore Sanfilippo",
    );
    set_str(l, b"_DESCRIPTION\0", "MessagePack C implementation for Lua");
    1
}
