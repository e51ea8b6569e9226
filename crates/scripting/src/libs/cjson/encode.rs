//! cjson.encode: Lua values to JSON text, with Lua CJSON's escapes, number formatting,
//! sparse-array rules and depth limit.

use std::ffi::{c_char, c_int};

use mlua::ffi;

use super::{fetch_config, Config};
use crate::libs::{arg_err, c_i32, msg, push_bytes, to_bytes, typename, State, R};

extern "C" {
    fn snprintf(buf: *mut c_char, n: usize, fmt: *const c_char, ...) -> c_int;
}

static CHAR2ESCAPE: [Option<&str>; 256] = {
    let mut t: [Option<&str>; 256] = [None; 256];
    const LOW: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011",
        "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019",
        "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    ];
    let mut i = 0;
    while i < 32 {
        t[i] = Some(LOW[i]);
        i += 1;
    }
    t[b'"' as usize] = Some("\\\"");
    t[b'/' as usize] = Some("\\/");
    t[b'\\' as usize] = Some("\\\\");
    t[127] = Some("\\u007f");
    t
};

unsafe fn encode_exception(l: State, lindex: c_int, reason: &str) -> Raise2 {
    msg(format!(
        "Cannot serialise {}: {}",
        typename(l, lindex),
        reason
    ))
}

type Raise2 = crate::libs::Raise;

fn append_string(json: &mut Vec<u8>, s: &[u8]) {
    json.push(b'"');
    for &c in s {
        match CHAR2ESCAPE[c as usize] {
            Some(e) => json.extend_from_slice(e.as_bytes()),
            None => json.push(c),
        }
    }
    json.push(b'"');
}

/// -1 for an object, else the array length. The table is at the top of the stack.
unsafe fn array_length(l: State, cfg: &Config) -> R<c_int> {
    let mut max: c_int = 0;
    let mut items: c_int = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, -2);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k > max as f64 {
                    max = c_i32(k);
                }
                items += 1;
                ffi::lua_settop(l, -2);
                continue;
            }
        }
        ffi::lua_settop(l, -3);
        return Ok(-1);
    }
    if cfg.encode_sparse_ratio > 0
        && max > items.wrapping_mul(cfg.encode_sparse_ratio)
        && max > cfg.encode_sparse_safe
    {
        if cfg.encode_sparse_convert == 0 {
            return Err(encode_exception(l, -1, "excessively sparse array"));
        }
        return Ok(-1);
    }
    Ok(max)
}

unsafe fn check_encode_depth(l: State, cfg: &Config, depth: c_int) -> R<()> {
    if depth <= cfg.encode_max_depth && ffi::lua_checkstack(l, 3) != 0 {
        return Ok(());
    }
    Err(msg(format!(
        "Cannot serialise, excessive nesting ({depth})"
    )))
}

fn format_g(num: f64, precision: c_int) -> Vec<u8> {
    let mut buf = [0 as c_char; 64];
    let fmt = format!("%.{precision}g\0");
    // SAFETY: the buffer is large enough for any %.14g rendering and snprintf truncates.
    let n = unsafe {
        snprintf(
            buf.as_mut_ptr(),
            buf.len(),
            fmt.as_ptr() as *const c_char,
            num,
        )
    };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    buf[..n].iter().map(|&c| c as u8).collect()
}

unsafe fn append_number(l: State, cfg: &Config, json: &mut Vec<u8>, lindex: c_int) -> R<()> {
    let num = ffi::lua_tonumber(l, lindex);
    if cfg.encode_invalid_numbers == 0 {
        if num.is_infinite() || num.is_nan() {
            return Err(encode_exception(l, lindex, "must not be NaN or Inf"));
        }
    } else if cfg.encode_invalid_numbers == 1 {
        if num.is_nan() {
            json.extend_from_slice(b"nan");
            return Ok(());
        }
    } else if num.is_infinite() || num.is_nan() {
        json.extend_from_slice(b"null");
        return Ok(());
    }
    json.extend_from_slice(&format_g(num, cfg.encode_number_precision));
    Ok(())
}

unsafe fn append_data(l: State, cfg: &Config, depth: c_int, json: &mut Vec<u8>) -> R<()> {
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => append_string(json, to_bytes(l, -1).unwrap_or(&[])),
        ffi::LUA_TNUMBER => append_number(l, cfg, json, -1)?,
        ffi::LUA_TBOOLEAN => {
            if ffi::lua_toboolean(l, -1) != 0 {
                json.extend_from_slice(b"true");
            } else {
                json.extend_from_slice(b"false");
            }
        }
        ffi::LUA_TTABLE => {
            let depth = depth + 1;
            check_encode_depth(l, cfg, depth)?;
            let len = array_length(l, cfg)?;
            if len > 0 {
                json.push(b'[');
                for i in 1..=len {
                    if i > 1 {
                        json.push(b',');
                    }
                    ffi::lua_rawgeti_(l, -1, i);
                    append_data(l, cfg, depth, json)?;
                    ffi::lua_settop(l, -2);
                }
                json.push(b']');
            } else {
                json.push(b'{');
                ffi::lua_pushnil(l);
                let mut comma = false;
                while ffi::lua_next(l, -2) != 0 {
                    if comma {
                        json.push(b',');
                    } else {
                        comma = true;
                    }
                    match ffi::lua_type(l, -2) {
                        ffi::LUA_TNUMBER => {
                            json.push(b'"');
                            append_number(l, cfg, json, -2)?;
                            json.extend_from_slice(b"\":");
                        }
                        ffi::LUA_TSTRING => {
                            append_string(json, to_bytes(l, -2).unwrap_or(&[]));
                            json.push(b':');
                        }
                        _ => {
                            return Err(encode_exception(
                                l,
                                -2,
                                "table key must be a number or string",
                            ))
                        }
                    }
                    append_data(l, cfg, depth, json)?;
                    ffi::lua_settop(l, -2);
                }
                json.push(b'}');
            }
        }
        ffi::LUA_TNIL => json.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
            json.extend_from_slice(b"null")
        }
        _ => return Err(encode_exception(l, -1, "type not supported")),
    }
    Ok(())
}

pub(super) unsafe fn encode_impl(l: State) -> R<c_int> {
    let cfg = *fetch_config(l)?;
    if ffi::lua_gettop(l) != 1 {
        return Err(arg_err(1, "expected 1 argument"));
    }
    let mut json = Vec::new();
    append_data(l, &cfg, 0, &mut json)?;
    push_bytes(l, &json);
    Ok(1)
}
