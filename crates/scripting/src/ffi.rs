//! The few C functions that must be real C frames so error positions match Redis: raising a
//! table from a Rust callback, Redis's `pcall`, `tonumber`, and the instruction-count hook.
//! None of them keep Rust values alive across `lua_error` (it longjmps).

use mlua::ffi;
use std::os::raw::c_int;

/// Registry key of the Rust function the hook asks whether to stop the script.
pub(crate) const TICK_KEY: &std::ffi::CStr = c"strata.tick";
/// Instructions between two hook calls, as Redis.
pub(crate) const HOOK_COUNT: c_int = 100_000;

/// Calls upvalue 1 with all arguments; it returns (raise, values...). When `raise` is true the
/// second value is raised as the error, so the raiser is this C function (as `redis.call` is
/// in Redis) and the error handler reports the script's line.
pub(crate) unsafe extern "C-unwind" fn raising_shim(l: *mut ffi::lua_State) -> c_int {
    let n = ffi::lua_gettop(l);
    ffi::luaL_checkstack(l, 2, std::ptr::null());
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_insert(l, 1);
    ffi::lua_call(l, n, ffi::LUA_MULTRET);
    if ffi::lua_toboolean(l, 1) != 0 {
        ffi::lua_settop(l, 2);
        ffi::lua_error(l)
    }
    ffi::lua_remove(l, 1);
    ffi::lua_gettop(l)
}

/// Upvalue 1 is a guard called with the first argument: a non-nil result is raised; otherwise
/// upvalue 2 (the original function) is called with all arguments.
pub(crate) unsafe extern "C-unwind" fn guard_shim(l: *mut ffi::lua_State) -> c_int {
    let n = ffi::lua_gettop(l);
    ffi::luaL_checkstack(l, 3, std::ptr::null());
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_call(l, 1, 1);
    if ffi::lua_isnil(l, -1) == 0 {
        ffi::lua_error(l)
    }
    ffi::lua_pop(l, 1);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(2));
    ffi::lua_insert(l, 1);
    ffi::lua_call(l, n, ffi::LUA_MULTRET);
    ffi::lua_gettop(l)
}

/// script_lua.c `luaRedisPcall`: like pcall, but an error table {err=...} becomes its text.
pub(crate) unsafe extern "C-unwind" fn redis_pcall(l: *mut ffi::lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        return ffi::luaL_argerror(l, 1, c"value expected".as_ptr());
    }
    ffi::luaL_checkstack(l, 2, std::ptr::null());
    ffi::lua_pushboolean(l, 1);
    ffi::lua_insert(l, 1);
    if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        ffi::lua_remove(l, 1);
        if ffi::lua_istable(l, -1) != 0 {
            ffi::lua_getfield(l, -1, c"err".as_ptr());
            if ffi::lua_isstring(l, -1) != 0 {
                ffi::lua_replace(l, -2);
            }
        }
        ffi::lua_pushboolean(l, 0);
        ffi::lua_insert(l, 1);
    }
    ffi::lua_gettop(l)
}

extern "C" {
    fn strtoul(
        s: *const std::os::raw::c_char,
        end: *mut *mut std::os::raw::c_char,
        base: c_int,
    ) -> std::os::raw::c_ulong;
}

/// lbaselib.c `luaB_tonumber`, line for line, with one shortcut: a string of at most 15
/// decimal digits (and an optional minus) converts without `strtod`. Lua's own reads such a
/// string twice through `strtod` (lua_isnumber, then lua_tonumber), which was 4% of a voter
/// call's instructions. Fifteen digits are exact in a double, so the result is the same.
pub(crate) unsafe extern "C-unwind" fn tonumber(l: *mut ffi::lua_State) -> c_int {
    let base = ffi::luaL_optinteger(l, 2, 10) as c_int;
    if base == 10 {
        ffi::luaL_checkany(l, 1);
        if ffi::lua_type(l, 1) == ffi::LUA_TSTRING {
            let mut len = 0;
            let p = ffi::lua_tolstring(l, 1, &mut len);
            if let Some(n) = short_decimal(std::slice::from_raw_parts(p.cast::<u8>(), len)) {
                ffi::lua_pushnumber(l, n);
                return 1;
            }
        }
        if ffi::lua_isnumber(l, 1) != 0 {
            ffi::lua_pushnumber(l, ffi::lua_tonumber(l, 1));
            return 1;
        }
    } else {
        let s1 = ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        if !(2..=36).contains(&base) {
            return ffi::luaL_argerror(l, 2, c"base out of range".as_ptr());
        }
        let mut s2 = s1.cast_mut();
        let n = strtoul(s1, &mut s2, base);
        if s1 != s2.cast_const() {
            while matches!(*s2 as u8, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
                s2 = s2.add(1);
            }
            if *s2 == 0 {
                ffi::lua_pushnumber(l, n as ffi::lua_Number);
                return 1;
            }
        }
    }
    ffi::lua_pushnil(l);
    1
}

/// `[-]d{1,15}` as a double; anything else is None (left to `strtod`).
fn short_decimal(s: &[u8]) -> Option<f64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    let x = n as f64;
    Some(if neg { -x } else { x })
}

/// `luaMaskCountHook`: asks the tick function; a non-nil answer is the error to raise, and
/// the hook then fires on every line so a pcall in the script cannot swallow the kill.
pub(crate) unsafe extern "C-unwind" fn count_hook(
    l: *mut ffi::lua_State,
    _ar: *mut ffi::lua_Debug,
) {
    ffi::luaL_checkstack(l, 2, std::ptr::null());
    ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, TICK_KEY.as_ptr());
    ffi::lua_call(l, 0, 1);
    if ffi::lua_isnil(l, -1) != 0 {
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKLINE, 0);
    ffi::lua_error(l);
}

#[cfg(test)]
mod tests {
    use super::short_decimal;

    /// The shortcut agrees with Rust's exact parse (as strtod) wherever it answers, and
    /// leaves everything else alone.
    #[test]
    fn short_decimals_convert_exactly() {
        for s in [
            "0",
            "-0",
            "7",
            "-42",
            "007",
            "999999999999999",
            "-123456789012345",
        ] {
            let want: f64 = s.parse().unwrap();
            let got = short_decimal(s.as_bytes()).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{s}");
        }
        for s in [
            "",
            "-",
            "+1",
            " 1",
            "1 ",
            "1.5",
            "1e3",
            "0x10",
            "1234567890123456",
            "--1",
            "1-",
        ] {
            assert_eq!(short_decimal(s.as_bytes()), None, "{s}");
        }
    }
}
