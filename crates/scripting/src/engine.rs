//! One sandboxed Lua state: Redis's globals, the `redis` table, read-only protection and
//! running a script / library under the error handler and the kill hook.

use crate::call::CallState;
use crate::ffi as shim;
use crate::resp::{self, error_table, push_bytes, push_seq};
use crate::shebang::ScriptFlags;
use crate::Host;
use mlua::{ffi, Function, LuaOptions, MultiValue, StdLib, Table, Value};
use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::rc::Rc;
use std::time::{Duration, Instant};
use strata_resp::Protocol;

mod random;
mod readonly;
mod redis_table;
mod register;

use random::{math_random, math_randomseed};
use readonly::{errmt_of, Protector};
use register::register_function;

/// Globals Redis 7.0.15 leaves to scripts (checked against redis-server 7.0.15).
const ALLOWED_GLOBALS: &[&str] = &[
    "_G",
    "_VERSION",
    "assert",
    "bit",
    "cjson",
    "cmsgpack",
    "collectgarbage",
    "coroutine",
    "error",
    "gcinfo",
    "getmetatable",
    "ipairs",
    "load",
    "loadstring",
    "math",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawset",
    "select",
    "setmetatable",
    "string",
    "struct",
    "table",
    "tonumber",
    "tostring",
    "type",
    "unpack",
    "xpcall",
];

/// eval.c's `__redis__err__handler`: turns any error into {err=, source=, line=} pointing at
/// the caller when the error was raised by a C function.
const ERR_HANDLER: &str = r#"
local dbg = debug
return function(err)
  local i = dbg.getinfo(2,'nSl')
  if i and i.what == 'C' then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
"#;

/// Bytecode is refused as Redis's patched parser does (it reads it as source text).
const LOAD_WRAPPERS: &str = r#"
local loadstring0, load0, chunkid = ...
loadstring = function(s, name)
  if type(s) == 'string' and s:byte(1) == 27 then
    return nil, chunkid(name or s) .. ":1: unexpected symbol near 'char(27)'"
  end
  return loadstring0(s, name)
end
load = function(f, name)
  if type(f) ~= 'function' then return load0(f, name) end
  local parts = {}
  while true do
    local p = f()
    if p == nil or p == '' then break end
    if type(p) ~= 'string' then return nil, 'reader function must return a string' end
    parts[#parts + 1] = p
  end
  return loadstring(table.concat(parts), name or '=(load)')
end
"#;

const FUNCTION_LOAD_TIMEOUT: Duration = Duration::from_millis(500);
const GC_PERIOD: u32 = 50;

pub(crate) type Registered = (String, Function, Option<String>, ScriptFlags);

/// What a run hands its script: EVAL's KEYS and ARGV globals, or a function's two
/// arguments (keys, args). Built with the C API inside the run's protected call: through
/// mlua each table, string and assignment cost a conversion.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    Nothing,
    Globals(&'a [&'a [u8]], &'a [&'a [u8]]),
    Args(&'a [&'a [u8]], &'a [&'a [u8]]),
}

impl Input<'_> {
    /// Sets the globals or pushes the arguments; returns how many arguments it pushed.
    ///
    /// # Safety
    /// `l` is a live Lua state. Allocations may raise a memory error, so this runs under a
    /// protected call.
    unsafe fn apply(self, l: *mut ffi::lua_State) -> c_int {
        ffi::luaL_checkstack(l, 3, std::ptr::null());
        match self {
            Input::Nothing => 0,
            Input::Globals(keys, argv) => {
                push_bytes(l, REAL_G.as_bytes());
                ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
                for (name, items) in [("KEYS", keys), ("ARGV", argv)] {
                    push_bytes(l, name.as_bytes());
                    push_seq(l, items);
                    ffi::lua_rawset(l, -3);
                }
                ffi::lua_pop(l, 1);
                0
            }
            Input::Args(keys, args) => {
                push_seq(l, keys);
                push_seq(l, args);
                2
            }
        }
    }
}

/// Registry key of the real globals table (scripts see a read-only proxy).
const REAL_G: &str = "strata.real_g";

/// Per-state run context (mlua app data). The host pointer (in `call`) is only set during a
/// run.
#[derive(Default)]
struct Ctx {
    /// Shared with redis.call's C function and the engine.
    call: Rc<CallState>,
    killed: bool,
    load: Option<LoadCtx>,
    /// redisLrand48 state (48 bits).
    rand: u64,
}

struct LoadCtx {
    start: Instant,
    funcs: Vec<Registered>,
}

pub(crate) struct Engine {
    pub(crate) lua: mlua::Lua,
    handler: Function,
    /// Function mode: metatable of the (empty) globals whose __index switches between the
    /// library-load API and the runtime globals (`runtime_g`, the real globals table).
    fglobals_mt: Option<Table>,
    lib_api: Option<Table>,
    runtime_g: Table,
    runs: u32,
    call: Rc<CallState>,
    /// The main lua_State, for the few calls that need no protection (see `set_hook`).
    main: *mut ffi::lua_State,
}

/// luaL_where(L, level) as seen from a Rust callback behind a shim (0 = callback, 1 = shim).
fn where_prefix(lua: &mlua::Lua, level: usize) -> String {
    match lua.inspect_stack(level) {
        Some(d) => {
            let line = d.curr_line();
            if line > 0 {
                let src = d.source();
                format!("{}:{}: ", src.short_src.as_deref().unwrap_or("?"), line)
            } else {
                String::new()
            }
        }
        None => String::new(),
    }
}

fn raise(v: impl mlua::IntoLua, lua: &mlua::Lua) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_vec(vec![
        Value::Boolean(true),
        v.into_lua(lua)?,
    ]))
}

fn raise_err(lua: &mlua::Lua, msg: &str) -> mlua::Result<MultiValue> {
    raise(error_table(lua, msg.as_bytes())?, lua)
}

fn ret(lua: &mlua::Lua, vals: Vec<Value>) -> mlua::Result<MultiValue> {
    let _ = lua;
    let mut v = Vec::with_capacity(vals.len() + 1);
    v.push(Value::Boolean(false));
    v.extend(vals);
    Ok(MultiValue::from_vec(v))
}

/// Wraps a Rust function returning (raise, values...) in the C raising shim.
fn raising<F>(lua: &mlua::Lua, f: F) -> mlua::Result<Function>
where
    F: Fn(&mlua::Lua, MultiValue) -> mlua::Result<MultiValue> + 'static,
{
    let inner = lua.create_function(f)?;
    // SAFETY: pushes one C closure over `inner`; raising_shim keeps no Rust state.
    unsafe {
        lua.exec_raw(inner, |l| {
            ffi::lua_pushcclosure(l, shim::raising_shim, 1);
        })
    }
}

/// Wraps `orig` so it first runs `guard` on its first argument.
fn guarded(lua: &mlua::Lua, guard: &Function, orig: Function) -> mlua::Result<Function> {
    // SAFETY: as `raising`.
    unsafe {
        lua.exec_raw((guard.clone(), orig), |l| {
            ffi::lua_pushcclosure(l, shim::guard_shim, 2);
        })
    }
}

/// lua_isnumber + lua_tonumber.
fn to_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => {
            let s = s.to_str().ok()?;
            let t = s.trim();
            if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                return i64::from_str_radix(h, 16).ok().map(|n| n as f64);
            }
            t.parse::<f64>().ok()
        }
        _ => None,
    }
}

fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_)) | Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        _ => "userdata",
    }
}

/// Lua 5.1 `luaO_chunkid` for a string source, as loadstring error messages show it.
fn chunkid(src: &[u8]) -> String {
    const IDSIZE: usize = 60;
    let src = &src[..src.iter().position(|&b| b == 0).unwrap_or(src.len())];
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if let Some(rest) = src.strip_prefix(b"=") {
        return lossy(&rest[..rest.len().min(IDSIZE - 1)]);
    }
    if let Some(rest) = src.strip_prefix(b"@") {
        let max = IDSIZE - 1;
        if rest.len() > max {
            return format!("...{}", lossy(&rest[rest.len() - (max - 3)..]));
        }
        return lossy(rest);
    }
    let line_end = src
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .unwrap_or(src.len());
    let max = IDSIZE - 15;
    let mut first = &src[..line_end];
    let cut = line_end < src.len() || first.len() > max;
    if first.len() > max {
        first = &first[..max];
    }
    if cut {
        format!("[string \"{}...\"]", lossy(first))
    } else {
        format!("[string \"{}\"]", lossy(first))
    }
}

impl Engine {
    pub(crate) fn new(function_mode: bool) -> mlua::Result<Engine> {
        // SAFETY: `debug` is only used by the error handler and removed from the globals.
        let lua = unsafe {
            mlua::Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        let call = Rc::new(CallState::default());
        lua.set_app_data(Ctx {
            call: call.clone(),
            rand: 0x1234_ABCD_330E,
            ..Ctx::default()
        });
        crate::libs::register_all(&lua)?;
        let g = lua.globals();
        let handler: Function = lua
            .load(ERR_HANDLER)
            .set_name("@err_handler_def")
            .call(())?;

        let keys: Vec<Value> = g
            .pairs::<Value, Value>()
            .map(|kv| kv.map(|(k, _)| k))
            .collect::<mlua::Result<_>>()?;
        for k in keys {
            let keep = matches!(&k, Value::String(s) if ALLOWED_GLOBALS.iter().any(|a| s.as_bytes() == a.as_bytes()));
            if !keep {
                g.raw_set(k, Value::Nil)?;
            }
        }

        let redis = Self::redis_api(&lua, &call)?;
        lua.set_named_registry_value(REAL_G, g.clone())?;
        let mut main = std::ptr::null_mut();
        // SAFETY: only reads the state pointer; nothing runs on it.
        unsafe { lua.exec_raw::<()>((), |l| main = l)? };
        g.raw_set("redis", redis)?;
        // SAFETY: redis_pcall is a plain C function over the Lua API.
        g.raw_set("pcall", unsafe {
            lua.create_c_function(shim::redis_pcall)?
        })?;
        // SAFETY: a plain C function over the Lua API.
        g.raw_set("tonumber", unsafe {
            lua.create_c_function(shim::tonumber)?
        })?;
        let math: Table = g.raw_get("math")?;
        math.raw_set("random", raising(&lua, math_random)?)?;
        math.raw_set("randomseed", raising(&lua, math_randomseed)?)?;
        let chunkid_fn = lua.create_function(|_, s: mlua::String| Ok(chunkid(&s.as_bytes())))?;
        lua.load(LOAD_WRAPPERS).set_name("=[C]").call::<()>((
            g.raw_get::<Value>("loadstring")?,
            g.raw_get::<Value>("load")?,
            chunkid_fn,
        ))?;
        if !function_mode {
            g.raw_set("__redis__err__handler", handler.clone())?;
        }

        // Read-only protection: every table reachable from the globals is replaced by an
        // empty proxy whose __index is the real table and whose __newindex raises.
        let ro = lua.create_table()?;
        let newindex = raising(&lua, |lua, _| {
            raise(
                format!("{}Attempt to modify a readonly table", where_prefix(lua, 2)),
                lua,
            )
        })?;
        let missing = raising(&lua, |lua, args| {
            let key = args.get(1).and_then(resp::lua_tostring);
            let msg = match key {
                Some(k) => format!(
                    "{}Script attempted to access nonexistent global variable '{}'",
                    where_prefix(lua, 2),
                    String::from_utf8_lossy(&k)
                ),
                None => format!(
                    "{}Second argument to luaProtectedTableError must be a string or number",
                    where_prefix(lua, 2)
                ),
            };
            raise(msg, lua)
        })?;
        let ro_guard = ro.clone();
        let guard = lua.create_function(move |_, v: Value| {
            Ok(match &v {
                Value::Table(t) if ro_guard.raw_get::<Value>(t.clone())? != Value::Nil => {
                    Some("Attempt to modify a readonly table")
                }
                _ => None,
            })
        })?;
        g.raw_set("rawset", guarded(&lua, &guard, g.raw_get("rawset")?)?)?;
        g.raw_set(
            "setmetatable",
            guarded(&lua, &guard, g.raw_get("setmetatable")?)?,
        )?;

        let mut p = Protector {
            lua: &lua,
            ro: ro.clone(),
            newindex: newindex.clone(),
            seen: HashMap::new(),
        };
        let errmt = lua.create_table()?;
        errmt.raw_set("__index", missing.clone())?;
        g.set_metatable(Some(errmt));
        let proxy_g = p.protect(&g)?;
        g.raw_set("_G", proxy_g.clone())?;
        // getmetatable(_G) shows a read-only copy of what Redis has there.
        let decoy = lua.create_table()?;
        decoy.raw_set("__index", missing.clone())?;
        decoy.raw_set("__newindex", newindex.clone())?;
        let decoy = p.protect(&decoy)?;
        if let Some(mt) = proxy_g.metatable() {
            mt.raw_set("__metatable", decoy)?;
        }
        // The string metatable: methods go through the protected string table, and
        // getmetatable("") gives a read-only view.
        let string_proxy: Table = g.raw_get("string")?;
        // SAFETY: reads the metatable of strings.
        let smt: Value = unsafe {
            lua.exec_raw((), |l| {
                ffi::lua_pushstring(l, c"".as_ptr());
                if ffi::lua_getmetatable(l, -1) == 0 {
                    ffi::lua_pushnil(l);
                }
                ffi::lua_remove(l, -2);
            })?
        };
        if let Value::Table(smt) = smt {
            smt.raw_set("__index", string_proxy.clone())?;
            let sdecoy = lua.create_table()?;
            sdecoy.raw_set("__index", string_proxy)?;
            smt.raw_set("__metatable", p.protect(&sdecoy)?)?;
        }

        let (globals, fglobals_mt, lib_api) = if function_mode {
            // function_lua.c: an empty globals table whose metatable points at either the
            // load-time API (only `redis` with register_function/log) or the real globals.
            let lib_redis = lua.create_table()?;
            lib_redis.raw_set("register_function", raising(&lua, register_function)?)?;
            let redis_rt: Table = g.raw_get("redis")?;
            for k in [
                "log",
                "LOG_DEBUG",
                "LOG_VERBOSE",
                "LOG_NOTICE",
                "LOG_WARNING",
                "REDIS_VERSION",
                "REDIS_VERSION_NUM",
            ] {
                lib_redis.raw_set(k, redis_rt.get::<Value>(k)?)?;
            }
            lib_redis.set_metatable(Some(errmt_of(&lua, &missing)?));
            let lib_g = lua.create_table()?;
            lib_g.raw_set("redis", lib_redis)?;
            lib_g.set_metatable(Some(errmt_of(&lua, &missing)?));
            let lib_api = p.protect(&lib_g)?;
            let fg = lua.create_table()?;
            let mt = lua.create_table()?;
            // Reads go straight to the real globals: `fg` itself is the read-only layer
            // (its __newindex refuses, its metatable is hidden), so a second proxy would
            // only add a lookup to every global a function reads.
            mt.raw_set("__index", g.clone())?;
            mt.raw_set("__newindex", newindex.clone())?;
            mt.raw_set("__metatable", false)?;
            fg.set_metatable(Some(mt.clone()));
            ro.raw_set(fg.clone(), fg.clone())?;
            (fg, Some(mt), Some(lib_api))
        } else {
            (proxy_g.clone(), None, None)
        };
        // SAFETY: swaps the thread's globals table for the protected one.
        unsafe {
            lua.exec_raw::<()>(globals, |l| {
                ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
            })?;
        }

        let tick = lua.create_function(tick)?;
        lua.set_named_registry_value(shim::TICK_KEY.to_str().unwrap_or("strata.tick"), tick)?;

        Ok(Engine {
            lua,
            handler,
            fglobals_mt,
            lib_api,
            runtime_g: g,
            runs: 0,
            call,
            main,
        })
    }

    /// luaL_loadbuffer with Redis's chunk names; Ok(Err(message)) on a syntax error.
    pub(crate) fn compile(
        &self,
        code: &[u8],
        chunk: &CStr,
    ) -> mlua::Result<Result<Function, Vec<u8>>> {
        if code.first() == Some(&0x1b) {
            let name = chunk.to_bytes();
            let name = String::from_utf8_lossy(name.strip_prefix(b"@").unwrap_or(name));
            return Ok(Err(
                format!("{name}:1: unexpected symbol near 'char(27)'").into_bytes()
            ));
        }
        // SAFETY: luaL_loadbuffer reports errors by return code, it does not raise.
        let (f, msg): (Value, Value) = unsafe {
            self.lua.exec_raw((), |l| {
                let st = ffi::luaL_loadbuffer(l, code.as_ptr().cast(), code.len(), chunk.as_ptr());
                if st != 0 {
                    ffi::lua_pushnil(l);
                    ffi::lua_insert(l, -2);
                }
            })?
        };
        match f {
            Value::Function(f) => Ok(Ok(f)),
            _ => Ok(Err(resp::lua_tostring(&msg).unwrap_or_default())),
        }
    }

    pub(crate) fn copy_rand_from(&mut self, other: &Engine) {
        let r = other.lua.app_data_ref::<Ctx>().map(|c| c.rand);
        if let (Some(r), Some(mut c)) = (r, self.lua.app_data_mut::<Ctx>()) {
            c.rand = r;
        }
    }

    /// Installs or removes the count hook. Directly on the main state: through mlua's
    /// `exec_raw` each call allocated a C closure for its protected call (twice per run).
    fn set_hook(&self, on: bool) {
        // SAFETY: `main` lives as long as `lua`; lua_sethook only sets fields of the state
        // and never raises, and no Lua code runs on it while Rust calls this.
        unsafe {
            if on {
                ffi::lua_sethook(
                    self.main,
                    Some(shim::count_hook),
                    ffi::LUA_MASKCOUNT,
                    shim::HOOK_COUNT,
                );
            } else {
                ffi::lua_sethook(self.main, None, 0, 0);
            }
        }
    }

    /// lua_pcall(f, input) under `handler` (if any): (succeeded, result or error object).
    fn pcall(&self, f: &Function, input: Input, handler: bool) -> mlua::Result<(bool, Value)> {
        let h = if handler {
            Value::Function(self.handler.clone())
        } else {
            Value::Nil
        };
        // SAFETY: lua_pcall never raises; the stack ends as (ok, value). The input may raise
        // only a memory error, which mlua's protected call around this catches.
        unsafe {
            self.lua.exec_raw((h, f.clone()), |l| {
                let nargs = input.apply(l);
                let st = ffi::lua_pcall(l, nargs, 1, if handler { 1 } else { 0 });
                ffi::lua_pushboolean(l, c_int::from(st == 0));
                ffi::lua_replace(l, 1);
            })
        }
    }

    /// Runs an EVAL body or a function; returns the client's reply.
    pub(crate) fn run(
        &mut self,
        f: &Function,
        input: Input,
        name: &str,
        client_resp: u8,
        host: &mut dyn Host,
    ) -> Vec<u8> {
        let host_ptr: *mut (dyn Host + '_) = host;
        // SAFETY: the pointer is cleared before this function returns, so it never outlives
        // the borrow; only our callbacks dereference it, during this run.
        let host_ptr: *mut (dyn Host + 'static) = unsafe { std::mem::transmute(host_ptr) };
        self.call.host.set(Some(host_ptr));
        self.call.resp.set(2);
        if let Some(mut c) = self.lua.app_data_mut::<Ctx>() {
            c.killed = false;
        }
        let proto = if client_resp == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        let mut out = Vec::new();
        let mut errors = Vec::new();
        self.set_hook(true);
        let result = self.pcall(f, input, true);
        let conv = match result {
            Ok((true, v)) => {
                let script_resp = self.call.resp.get();
                resp::lua_to_reply(&mut out, v, script_resp, proto, &mut errors)
            }
            Ok((false, e)) => resp::script_error_reply(&mut out, &e, name, &mut errors),
            Err(e) => Err(e),
        };
        if let Err(e) = conv {
            out.clear();
            errors.clear();
            resp::push_noted_error(&mut out, format!("ERR {e}").as_bytes(), false, &mut errors);
        }
        self.set_hook(false);
        self.call.host.set(None);
        if let Some(p) = self.call.panic.take() {
            std::panic::resume_unwind(p);
        }
        for (text, counted) in &errors {
            host.reply_error(text, *counted);
        }
        self.runs += 1;
        if self.runs >= GC_PERIOD {
            self.runs = 0;
            let _ = self.lua.gc_step_kbytes(GC_PERIOD as c_int);
        }
        out
    }

    /// Runs library code with the load-time API; returns the functions it registered.
    pub(crate) fn run_library(&mut self, f: &Function) -> Result<Vec<Registered>, String> {
        let (Some(mt), Some(api)) = (&self.fglobals_mt, &self.lib_api) else {
            return Err("ERR not a function engine".into());
        };
        if let Some(mut c) = self.lua.app_data_mut::<Ctx>() {
            c.load = Some(LoadCtx {
                start: Instant::now(),
                funcs: Vec::new(),
            });
        }
        self.set_hook(true);
        let r = mt
            .raw_set("__index", api.clone())
            .and_then(|_| self.pcall(f, Input::Nothing, false));
        self.set_hook(false);
        let _ = mt.raw_set("__index", self.runtime_g.clone());
        let funcs = self
            .lua
            .app_data_mut::<Ctx>()
            .and_then(|mut c| c.load.take())
            .map(|l| l.funcs)
            .unwrap_or_default();
        match r {
            Ok((true, _)) => Ok(funcs),
            Ok((false, e)) => {
                let msg = match &e {
                    Value::Table(t) => t
                        .get::<Value>("err")
                        .ok()
                        .and_then(|v| resp::lua_tostring(&v))
                        .unwrap_or_else(|| b"ERR unknown error".to_vec()),
                    v => {
                        let mut m = b"ERR ".to_vec();
                        m.extend(
                            resp::lua_tostring(v).unwrap_or_else(|| b"unknown error".to_vec()),
                        );
                        m
                    }
                };
                Err(format!(
                    "ERR Error registering functions: {}",
                    String::from_utf8_lossy(&msg)
                ))
            }
            Err(e) => Err(format!("ERR {e}")),
        }
    }
}

/// Called by the count hook: nil to go on, or the error that ends the script.
fn tick(lua: &mlua::Lua, _: ()) -> mlua::Result<Value> {
    let (host, killed, load_start) = match lua.app_data_ref::<Ctx>() {
        Some(c) => (
            c.call.host.get(),
            c.killed,
            c.load.as_ref().map(|l| l.start),
        ),
        None => return Ok(Value::Nil),
    };
    if let Some(start) = load_start {
        if start.elapsed() > FUNCTION_LOAD_TIMEOUT {
            return Ok(Value::Table(error_table(lua, b"FUNCTION LOAD timeout")?));
        }
        return Ok(Value::Nil);
    }
    let kill = killed
        || match host {
            // SAFETY: see Engine::run.
            Some(h) => unsafe { (*h).tick() },
            None => false,
        };
    if !kill {
        return Ok(Value::Nil);
    }
    if let Some(mut c) = lua.app_data_mut::<Ctx>() {
        c.killed = true;
    }
    // Redis 7.0 uses this text for FUNCTION KILL too.
    Ok(Value::Table(error_table(
        lua,
        b"Script killed by user with SCRIPT KILL...",
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ids() {
        assert_eq!(chunkid(b"\x1bLuaQ\0\x01"), "[string \"\x1bLuaQ\"]");
        assert_eq!(chunkid(b"=name"), "name");
        assert_eq!(chunkid(b"a\nb"), "[string \"a...\"]");
    }
}
