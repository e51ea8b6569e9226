//! The few C functions that must be real C frames so error positions match Redis: raising a
//! table from a Rust callback, Redis's `pcall`, and the instruction-count hook.
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
