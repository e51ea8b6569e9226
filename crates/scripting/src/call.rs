//! redis.call and redis.pcall (script_lua.c `luaRedisGenericCommand`): one C function that
//! reads its arguments off the Lua stack and pushes the command's reply onto it. Going
//! through mlua values instead cost about 1,500 instructions per call in conversions
//! (docs/benchmarks.md, "Where an EVALSHA's instructions go").

use crate::resp;
use crate::Host;
use bytes::Bytes;
use mlua::ffi;
use std::any::Any;
use std::cell::Cell;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What redis.call needs from the script run in progress. The engine sets it for each run;
/// the C function reaches it through its first upvalue (a light userdata), so it lives as
/// long as the Lua state.
pub(crate) struct CallState {
    /// The host running the script; None outside a run.
    pub host: Cell<Option<*mut (dyn Host + 'static)>>,
    /// The protocol replies are converted from (redis.setresp; 2 at the start of a run).
    pub resp: Cell<u8>,
    /// A panic raised by the host during a call: carried over Lua's C frames (which cannot
    /// unwind) as a Lua error, and resumed once the run ends.
    pub panic: Cell<Option<Box<dyn Any + Send>>>,
    /// The buffer replies are written into, kept from call to call.
    pub reply: Cell<Vec<u8>>,
}

impl Default for CallState {
    fn default() -> CallState {
        CallState {
            host: Cell::new(None),
            resp: Cell::new(2),
            panic: Cell::new(None),
            reply: Cell::new(Vec::new()),
        }
    }
}

/// Pushes redis.call (`raise_errors`) or redis.pcall as a C closure over `state`.
///
/// # Safety
/// `l` is a live Lua state; `state` outlives it.
pub(crate) unsafe fn push_function(
    l: *mut ffi::lua_State,
    state: *const CallState,
    raise_errors: bool,
) {
    ffi::lua_pushlightuserdata(l, state as *mut std::ffi::c_void);
    ffi::lua_pushboolean(l, c_int::from(raise_errors));
    ffi::lua_pushcclosure(l, redis_call, 2);
}

/// Upvalue 1: the CallState; upvalue 2: whether error replies are raised (redis.call) or
/// returned (redis.pcall). An error is raised from this C frame, as Redis raises it, so
/// the error handler reports the script's line.
unsafe extern "C-unwind" fn redis_call(l: *mut ffi::lua_State) -> c_int {
    let state = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *const CallState);
    let raise_errors = ffi::lua_toboolean(l, ffi::lua_upvalueindex(2)) != 0;
    // `call` has dropped every Rust value it made before lua_error longjmps.
    if call(l, state, raise_errors) {
        ffi::lua_error(l);
    }
    1
}

/// Leaves one value on top of the stack: the reply, or an error table. True if it is to be
/// raised.
unsafe fn call(l: *mut ffi::lua_State, state: &CallState, raise_errors: bool) -> bool {
    let Some(host) = state.host.get() else {
        resp::push_error_table(
            l,
            b"redis.call/pcall can only be called inside a script invocation",
        );
        return true;
    };
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        resp::push_error_table(
            l,
            b"Please specify at least one argument for this redis lib call",
        );
        return raise_errors;
    }
    let mut argv = Vec::with_capacity(argc as usize);
    for i in 1..=argc {
        match ffi::lua_type(l, i) {
            ffi::LUA_TSTRING => {
                let mut len = 0;
                let p = ffi::lua_tolstring(l, i, &mut len);
                let s = std::slice::from_raw_parts(p.cast::<u8>(), len);
                argv.push(Bytes::copy_from_slice(s));
            }
            // "%.17g", not Lua's "%.14g", so numbers keep their precision.
            ffi::LUA_TNUMBER => {
                let n = ffi::lua_tonumber(l, i);
                argv.push(Bytes::from(strata_resp::format_g17(n)));
            }
            _ => {
                ffi::lua_settop(l, 0);
                resp::push_error_table(
                    l,
                    b"Lua redis lib command arguments must be strings or integers",
                );
                return raise_errors;
            }
        }
    }
    // The arguments are copied: their stack slots go, so that a call made with nearly the
    // whole Lua stack (unpack of ~8000 values) still has room for its reply.
    ffi::lua_settop(l, 0);
    // SAFETY: the engine clears `host` before the borrow it came from ends.
    let mut reply = state.reply.take();
    reply.clear();
    let called = catch_unwind(AssertUnwindSafe(|| {
        (*host).call(argv, state.resp.get(), &mut reply)
    }));
    if let Err(p) = called {
        state.panic.set(Some(p));
        resp::push_error_table(l, b"-ERR internal error while running the command");
        return true;
    }
    resp::push_reply(l, &reply);
    let raise = raise_errors && matches!(reply.first(), Some(b'-' | b'!'));
    // A large reply's buffer is not worth keeping.
    if reply.capacity() <= 64 * 1024 {
        state.reply.set(reply);
    }
    raise
}
