//! The `redis` global table scripts call: redis.call/pcall, log, setresp, sha1hex, the
//! reply helpers and the constants, with Redis 7.0.15's error texts.

use super::{raise_err, raising, ret, to_number, Ctx, Engine};
use crate::call::CallState;
use crate::resp::{self, error_table};
use crate::Host;
use mlua::{Function, IntoLua, MultiValue, Table, Value};
use std::rc::Rc;

impl Engine {
    pub(super) fn redis_api(lua: &mlua::Lua, call: &Rc<CallState>) -> mlua::Result<Table> {
        let r = lua.create_table()?;
        for (name, raise_errors) in [("call", true), ("pcall", false)] {
            let state = Rc::as_ptr(call);
            // SAFETY: the state is kept by the engine and Ctx as long as the Lua state.
            let f: Function = unsafe {
                lua.exec_raw((), |l| crate::call::push_function(l, state, raise_errors))?
            };
            r.raw_set(name, f)?;
        }
        r.raw_set("log", raising(lua, redis_log)?)?;
        for (k, v) in [
            ("LOG_DEBUG", 0),
            ("LOG_VERBOSE", 1),
            ("LOG_NOTICE", 2),
            ("LOG_WARNING", 3),
            ("REPL_NONE", 0),
            ("REPL_AOF", 1),
            ("REPL_SLAVE", 2),
            ("REPL_REPLICA", 2),
            ("REPL_ALL", 3),
        ] {
            r.raw_set(k, v)?;
        }
        r.raw_set("REDIS_VERSION_NUM", 0x07_00_0f)?;
        r.raw_set("REDIS_VERSION", "7.0.15")?;
        r.raw_set("setresp", raising(lua, redis_setresp)?)?;
        r.raw_set(
            "sha1hex",
            raising(lua, |lua, a| {
                if a.len() != 1 {
                    return raise_err(lua, "wrong number of arguments");
                }
                let data = match &a[0] {
                    Value::String(s) => s.as_bytes().to_vec(),
                    v => resp::lua_tostring(v).unwrap_or_default(),
                };
                ret(lua, vec![crate::sha1hex(&data).into_lua(lua)?])
            })?,
        )?;
        r.raw_set(
            "error_reply",
            lua.create_function(|lua, a: MultiValue| match (a.len(), a.front()) {
                (1, Some(Value::String(s))) => {
                    let s = s.as_bytes();
                    let mut e = Vec::with_capacity(s.len() + 1);
                    if s.first() != Some(&b'-') {
                        e.push(b'-');
                    }
                    e.extend_from_slice(&s);
                    error_table(lua, &e)
                }
                _ => error_table(lua, b"wrong number or type of arguments"),
            })?,
        )?;
        r.raw_set(
            "status_reply",
            lua.create_function(|lua, a: MultiValue| match (a.len(), a.front()) {
                (1, Some(Value::String(s))) => {
                    let t = lua.create_table()?;
                    t.raw_set("ok", s.clone())?;
                    Ok(t)
                }
                _ => error_table(lua, b"wrong number or type of arguments"),
            })?,
        )?;
        r.raw_set(
            "set_repl",
            raising(lua, |lua, a| {
                if !has_host(lua) {
                    return raise_err(
                        lua,
                        "redis.set_repl can only be called inside a script invocation",
                    );
                }
                if a.len() != 1 {
                    return raise_err(lua, "redis.set_repl() requires two arguments.");
                }
                let flags = to_number(&a[0]).map_or(0, resp::lua_num_to_i64);
                if flags & !3 != 0 {
                    return raise_err(
                        lua,
                        "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                    );
                }
                ret(lua, vec![])
            })?,
        )?;
        r.raw_set(
            "replicate_commands",
            lua.create_function(|_, _: MultiValue| Ok(true))?,
        )?;
        r.raw_set(
            "breakpoint",
            lua.create_function(|_, _: MultiValue| Ok(false))?,
        )?;
        r.raw_set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
        r.raw_set(
            "acl_check_cmd",
            raising(lua, |lua, a| {
                if !has_host(lua) {
                    return raise_err(
                        lua,
                        "redis.acl_check_cmd can only be called inside a script invocation",
                    );
                }
                if a.is_empty() {
                    return raise_err(
                        lua,
                        "Please specify at least one argument for this redis lib call",
                    );
                }
                let mut argv = Vec::with_capacity(a.len());
                for v in a.iter() {
                    match v {
                        Value::String(s) => argv.push(bytes::Bytes::copy_from_slice(&s.as_bytes())),
                        Value::Integer(i) => argv.push(bytes::Bytes::from(i.to_string())),
                        Value::Number(n) => {
                            argv.push(bytes::Bytes::from(strata_resp::format_g17(*n)))
                        }
                        _ => {
                            return raise_err(
                                lua,
                                "Lua redis lib command arguments must be strings or integers",
                            )
                        }
                    }
                }
                let Some(host) = host_ptr(lua) else {
                    return raise_err(
                        lua,
                        "redis.acl_check_cmd can only be called inside a script invocation",
                    );
                };
                // SAFETY: see Engine::run.
                match unsafe { (*host).acl_check_cmd(&argv) } {
                    Some(ok) => ret(lua, vec![Value::Boolean(ok)]),
                    None => raise_err(lua, "Invalid command passed to redis.acl_check_cmd()"),
                }
            })?,
        )?;
        Ok(r)
    }
}

pub(super) fn has_host(lua: &mlua::Lua) -> bool {
    lua.app_data_ref::<Ctx>()
        .is_some_and(|c| c.call.host.get().is_some())
}

pub(super) fn host_ptr(lua: &mlua::Lua) -> Option<*mut (dyn Host + 'static)> {
    lua.app_data_ref::<Ctx>().and_then(|c| c.call.host.get())
}

fn redis_log(lua: &mlua::Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    if args.len() < 2 {
        return raise_err(lua, "redis.log() requires two arguments or more.");
    }
    let Some(level) = to_number(&args[0]) else {
        return raise_err(lua, "First argument must be a number (log level).");
    };
    let level = resp::lua_num_to_i64(level);
    if !(0..=3).contains(&level) {
        return raise_err(lua, "Invalid debug level.");
    }
    let mut msg = Vec::new();
    for (j, a) in args.iter().enumerate().skip(1) {
        if let Some(s) = resp::lua_tostring(a) {
            if j != 1 {
                msg.push(b' ');
            }
            msg.extend_from_slice(&s);
        }
    }
    if let Some(host) = host_ptr(lua) {
        // SAFETY: see Engine::run.
        unsafe { (*host).log(level as u8, &String::from_utf8_lossy(&msg)) };
    }
    ret(lua, vec![])
}

fn redis_setresp(lua: &mlua::Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    if !has_host(lua) {
        return raise_err(
            lua,
            "redis.setresp can only be called inside a script invocation",
        );
    }
    if args.len() != 1 {
        return raise_err(lua, "redis.setresp() requires one argument.");
    }
    let v = to_number(&args[0]).map_or(0, resp::lua_num_to_i64);
    if v != 2 && v != 3 {
        return raise_err(lua, "RESP version must be 2 or 3.");
    }
    if let Some(c) = lua.app_data_ref::<Ctx>() {
        c.call.resp.set(v as u8);
    }
    ret(lua, vec![])
}
