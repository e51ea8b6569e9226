//! `redis.register_function` while FUNCTION LOAD runs a library: positional or named
//! arguments, flags, and the functions registered so far.

use super::{raise_err, ret, Ctx};
use crate::resp;
use crate::shebang::{self, ScriptFlags};
use mlua::{Function, MultiValue, Value};

/// function_lua.c `luaRegisterFunction`.
pub(super) fn register_function(lua: &mlua::Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    if lua.app_data_ref::<Ctx>().is_none_or(|c| c.load.is_none()) {
        return raise_err(
            lua,
            "redis.register_function can only be called on FUNCTION LOAD command",
        );
    }
    let parsed = match args.len() {
        1 => read_named(&args[0]),
        2 => read_positional(&args[0], &args[1]),
        _ => Err("wrong number of arguments to redis.register_function"),
    };
    let (name, callback, desc, flags) = match parsed {
        Ok(p) => p,
        Err(e) => return raise_err(lua, e),
    };
    if !shebang::valid_name(name.as_bytes()) {
        return raise_err(lua, &shebang::BAD_NAME["ERR ".len()..]);
    }
    let dup = {
        let Some(mut c) = lua.app_data_mut::<Ctx>() else {
            return ret(lua, vec![]);
        };
        let Some(load) = c.load.as_mut() else {
            return ret(lua, vec![]);
        };
        if load.funcs.iter().any(|f| f.0 == name) {
            true
        } else {
            load.funcs.push((name, callback, desc, flags));
            false
        }
    };
    if dup {
        return raise_err(lua, "Function already exists in the library");
    }
    ret(lua, vec![])
}

type ReadArgs = Result<(String, Function, Option<String>, ScriptFlags), &'static str>;

fn read_positional(name: &Value, f: &Value) -> ReadArgs {
    let Some(name) = resp::lua_tostring(name) else {
        return Err("first argument to redis.register_function must be a string");
    };
    let Value::Function(f) = f else {
        return Err("second argument to redis.register_function must be a function");
    };
    Ok((
        String::from_utf8_lossy(&name).into_owned(),
        f.clone(),
        None,
        ScriptFlags::default(),
    ))
}

fn read_named(arg: &Value) -> ReadArgs {
    let Value::Table(t) = arg else {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
    };
    let (mut name, mut desc, mut callback, mut flags) = (None, None, None, ScriptFlags::default());
    for kv in t.pairs::<Value, Value>() {
        let Ok((k, v)) = kv else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        let Some(key) = resp::lua_tostring(&k) else {
            return Err("named argument key given to redis.register_function is not a string");
        };
        let key = key.to_ascii_lowercase();
        match key.as_slice() {
            b"function_name" => {
                match resp::lua_tostring(&v) {
                    Some(n) => name = Some(String::from_utf8_lossy(&n).into_owned()),
                    None => return Err(
                        "function_name argument given to redis.register_function must be a string",
                    ),
                }
            }
            b"description" => {
                match resp::lua_tostring(&v) {
                    Some(d) => desc = Some(String::from_utf8_lossy(&d).into_owned()),
                    None => return Err(
                        "description argument given to redis.register_function must be a string",
                    ),
                }
            }
            b"callback" => match v {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Err(
                        "callback argument given to redis.register_function must be a function",
                    )
                }
            },
            b"flags" => {
                let Value::Table(ft) = v else {
                    return Err("flags argument to redis.register_function must be a table representing function flags");
                };
                let mut j = 1;
                loop {
                    let fv: Value = ft.get(j).map_err(|_| "unknown flag given")?;
                    if fv.is_nil() {
                        break;
                    }
                    let Some(s) = resp::lua_tostring(&fv) else {
                        return Err("unknown flag given");
                    };
                    if !flags.set_by_name(&s.to_ascii_lowercase()) {
                        return Err("unknown flag given");
                    }
                    j += 1;
                }
            }
            _ => return Err("unknown argument given to redis.register_function"),
        }
    }
    let Some(name) = name else {
        return Err("redis.register_function must get a function name argument");
    };
    let Some(callback) = callback else {
        return Err("redis.register_function must get a callback argument");
    };
    Ok((name, callback, desc, flags))
}
