//! The libraries Redis bundles with its Lua: cjson, cmsgpack, bit and struct.
//!
//! They are written against the raw Lua C API (`mlua::ffi`) so that they behave exactly like
//! the C modules Redis links in: same stack discipline, same argument checks, same error
//! texts (including the `user_script:N:` position prefix `luaL_error` adds) and errors raised
//! as plain Lua strings.
//!
//! Error discipline: every exported `extern "C-unwind"` function calls an inner `*_impl`
//! function returning [`R`]; when it fails, [`finish`] raises the Lua error only after every
//! Rust value has been dropped, so the `longjmp` performed by `lua_error` never skips a
//! destructor.

use std::ffi::{c_char, c_int};

use mlua::ffi;

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structlib;

pub(crate) type State = *mut ffi::lua_State;

/// A Lua error to raise once the Rust frames have been unwound normally.
pub(crate) enum Raise {
    /// `luaL_error`: position of the caller (level 1) prepended.
    Msg(Vec<u8>),
    /// `luaL_argerror(narg, msg)`.
    Arg(c_int, Vec<u8>),
}

pub(crate) type R<T> = Result<T, Raise>;

pub(crate) fn msg(s: impl Into<Vec<u8>>) -> Raise {
    Raise::Msg(s.into())
}

pub(crate) fn arg_err(narg: c_int, s: impl Into<Vec<u8>>) -> Raise {
    Raise::Arg(narg, s.into())
}

/// Returns the result of a C function, raising the pending error if there is one.
pub(crate) unsafe fn finish(l: State, r: R<c_int>) -> c_int {
    match r {
        Ok(n) => n,
        Err(e) => raise(l, e),
    }
}

#[inline(never)]
unsafe fn raise(l: State, e: Raise) -> ! {
    // The stack is discarded by the error anyway; emptying it guarantees room for the message.
    ffi::lua_settop(l, 0);
    match e {
        Raise::Msg(m) => {
            ffi::luaL_where(l, 1);
            push_bytes(l, &m);
            drop(m);
            ffi::lua_concat(l, 2);
            ffi::lua_error(l)
        }
        Raise::Arg(narg, m) => {
            push_bytes(l, &m);
            drop(m);
            let p = ffi::lua_tolstring(l, -1, std::ptr::null_mut());
            ffi::luaL_argerror(l, narg, p);
            unreachable!()
        }
    }
}

pub(crate) unsafe fn push_bytes(l: State, b: &[u8]) {
    ffi::lua_pushlstring_(l, b.as_ptr() as *const c_char, b.len());
}

/// The bytes of the string (or number, converted in place) at `idx`, if it is one.
pub(crate) unsafe fn to_bytes<'a>(l: State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p as *const u8, len))
    }
}

pub(crate) unsafe fn typename(l: State, idx: c_int) -> String {
    let p = ffi::lua_typename(l, ffi::lua_type(l, idx));
    std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
}

/// `luaL_typerror`.
pub(crate) unsafe fn type_error(l: State, narg: c_int, tname: &str) -> Raise {
    arg_err(
        narg,
        format!("{} expected, got {}", tname, typename(l, narg)),
    )
}

/// `luaL_checknumber`.
pub(crate) unsafe fn check_number(l: State, narg: c_int) -> R<f64> {
    let d = ffi::lua_tonumber(l, narg);
    if d == 0.0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(type_error(l, narg, "number"));
    }
    Ok(d)
}

/// `luaL_checkinteger`.
pub(crate) unsafe fn check_integer(l: State, narg: c_int) -> R<ffi::lua_Integer> {
    let d = ffi::lua_tointeger_(l, narg);
    if d == 0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(type_error(l, narg, "number"));
    }
    Ok(d)
}

/// `luaL_optinteger`.
pub(crate) unsafe fn opt_integer(
    l: State,
    narg: c_int,
    def: ffi::lua_Integer,
) -> R<ffi::lua_Integer> {
    if ffi::lua_type(l, narg) <= ffi::LUA_TNIL {
        Ok(def)
    } else {
        check_integer(l, narg)
    }
}

/// `luaL_checklstring`.
pub(crate) unsafe fn check_bytes<'a>(l: State, narg: c_int) -> R<&'a [u8]> {
    match to_bytes(l, narg) {
        Some(b) => Ok(b),
        None => Err(type_error(l, narg, "string")),
    }
}

/// `luaL_checkstack`.
pub(crate) unsafe fn check_stack(l: State, n: c_int, what: &str) -> R<()> {
    if ffi::lua_checkstack(l, n) == 0 {
        return Err(msg(format!("stack overflow ({what})")));
    }
    Ok(())
}

pub(crate) unsafe fn set_fn(l: State, name: &[u8], f: ffi::lua_CFunction) {
    ffi::lua_pushcfunction(l, f);
    ffi::lua_setfield(l, -2, name.as_ptr() as *const c_char);
}

pub(crate) unsafe fn set_str(l: State, name: &[u8], v: &str) {
    push_bytes(l, v.as_bytes());
    ffi::lua_setfield(l, -2, name.as_ptr() as *const c_char);
}

const TWO63: f64 = 9_223_372_036_854_775_808.0;

/// C's `(int64_t)d` as x86-64 computes it (out of range and NaN give `INT64_MIN`).
pub(crate) fn c_i64(d: f64) -> i64 {
    if !(-TWO63..TWO63).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// C's `(int)d` as x86-64 computes it.
pub(crate) fn c_i32(d: f64) -> i32 {
    if d.is_nan() || d >= 2147483648.0 || d <= -2147483649.0 {
        i32::MIN
    } else {
        d as i32
    }
}

/// C's `(unsigned long)d` as gcc compiles it on x86-64.
pub(crate) fn c_u64(d: f64) -> u64 {
    if d < TWO63 || d.is_nan() {
        c_i64(d) as u64
    } else {
        (c_i64(d - TWO63) as u64) ^ (1u64 << 63)
    }
}

/// Installs every bundled library as a global table in `lua`.
pub fn register_all(lua: &mlua::Lua) -> mlua::Result<()> {
    let openers: [(&str, ffi::lua_CFunction); 4] = [
        ("cjson", cjson::luaopen_cjson),
        ("struct", structlib::luaopen_struct),
        ("cmsgpack", cmsgpack::luaopen_cmsgpack),
        ("bit", bit::luaopen_bit),
    ];
    for (name, open) in openers {
        // SAFETY: the opener only uses the Lua C API on the state it is given, inside the
        // protected call `exec_raw` sets up.
        let table: mlua::Table = unsafe {
            lua.exec_raw((), |l| {
                ffi::lua_pushcfunction(l, open);
                ffi::lua_call(l, 0, 1);
            })
        }?;
        lua.globals().raw_set(name, table)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
