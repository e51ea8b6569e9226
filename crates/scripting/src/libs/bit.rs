//! `bit`: LuaBitOp 1.0.2 as Redis bundles it (32-bit operations on Lua numbers).

use std::ffi::c_int;

use mlua::ffi;

use super::{finish, set_fn, type_error, State, R};

/// LuaBitOp's `barg`: the number's low 32 bits after adding 2^52+2^51, which normalises any
/// double to its integer value modulo 2^32 (rounding to nearest).
unsafe fn barg(l: State, idx: c_int) -> R<u32> {
    let n = ffi::lua_tonumber(l, idx);
    let b = (n + 6755399441055744.0).to_bits() as u32;
    if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
        return Err(type_error(l, idx, "number"));
    }
    Ok(b)
}

unsafe fn bret(l: State, b: u32) -> R<c_int> {
    ffi::lua_pushnumber(l, b as i32 as f64);
    Ok(1)
}

macro_rules! cfn {
    ($name:ident, $imp:ident) => {
        pub(crate) unsafe extern "C-unwind" fn $name(l: State) -> c_int {
            let r = $imp(l);
            finish(l, r)
        }
    };
}

unsafe fn tobit_impl(l: State) -> R<c_int> {
    let b = barg(l, 1)?;
    bret(l, b)
}
unsafe fn bnot_impl(l: State) -> R<c_int> {
    let b = barg(l, 1)?;
    bret(l, !b)
}
unsafe fn fold(l: State, op: fn(u32, u32) -> u32) -> R<c_int> {
    let mut b = barg(l, 1)?;
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = op(b, barg(l, i)?);
        i -= 1;
    }
    bret(l, b)
}
unsafe fn band_impl(l: State) -> R<c_int> {
    fold(l, |a, b| a & b)
}
unsafe fn bor_impl(l: State) -> R<c_int> {
    fold(l, |a, b| a | b)
}
unsafe fn bxor_impl(l: State) -> R<c_int> {
    fold(l, |a, b| a ^ b)
}
unsafe fn shift(l: State, op: fn(u32, u32) -> u32) -> R<c_int> {
    let b = barg(l, 1)?;
    let n = barg(l, 2)? & 31;
    bret(l, op(b, n))
}
unsafe fn lshift_impl(l: State) -> R<c_int> {
    shift(l, |b, n| b << n)
}
unsafe fn rshift_impl(l: State) -> R<c_int> {
    shift(l, |b, n| b >> n)
}
unsafe fn arshift_impl(l: State) -> R<c_int> {
    shift(l, |b, n| ((b as i32) >> n) as u32)
}
unsafe fn rol_impl(l: State) -> R<c_int> {
    shift(l, |b, n| b.rotate_left(n))
}
unsafe fn ror_impl(l: State) -> R<c_int> {
    shift(l, |b, n| b.rotate_right(n))
}
unsafe fn bswap_impl(l: State) -> R<c_int> {
    let b = barg(l, 1)?;
    bret(l, b.swap_bytes())
}
unsafe fn tohex_impl(l: State) -> R<c_int> {
    let mut b = barg(l, 1)?;
    let mut n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
        8
    } else {
        barg(l, 2)? as i32
    };
    let mut digits: &[u8; 16] = b"0123456789abcdef";
    if n < 0 {
        n = n.wrapping_neg();
        digits = b"0123456789ABCDEF";
    }
    // Redis's build treats the negation of INT_MIN as large, so it is clamped like any n > 8.
    if !(0..=8).contains(&n) {
        n = 8;
    }
    let mut buf = [0u8; 8];
    let len = if n < 0 { 0 } else { n as usize };
    for i in (0..len).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    super::push_bytes(l, &buf[..len]);
    Ok(1)
}

cfn!(bit_tobit, tobit_impl);
cfn!(bit_bnot, bnot_impl);
cfn!(bit_band, band_impl);
cfn!(bit_bor, bor_impl);
cfn!(bit_bxor, bxor_impl);
cfn!(bit_lshift, lshift_impl);
cfn!(bit_rshift, rshift_impl);
cfn!(bit_arshift, arshift_impl);
cfn!(bit_rol, rol_impl);
cfn!(bit_ror, ror_impl);
cfn!(bit_bswap, bswap_impl);
cfn!(bit_tohex, tohex_impl);

/// Builds the `bit` table and leaves it on the stack.
pub(crate) unsafe extern "C-unwind" fn luaopen_bit(l: State) -> c_int {
    ffi::lua_createtable(l, 0, 12);
    set_fn(l, b"tobit\0", bit_tobit);
    set_fn(l, b"bnot\0", bit_bnot);
    set_fn(l, b"band\0", bit_band);
    set_fn(l, b"bor\0", bit_bor);
    set_fn(l, b"bxor\0", bit_bxor);
    set_fn(l, b"lshift\0", bit_lshift);
    set_fn(l, b"rshift\0", bit_rshift);
    set_fn(l, b"arshift\0", bit_arshift);
    set_fn(l, b"rol\0", bit_rol);
    set_fn(l, b"ror\0", bit_ror);
    set_fn(l, b"bswap\0", bit_bswap);
    set_fn(l, b"tohex\0", bit_tohex);
    1
}
