//! `cjson`: Lua CJSON 2.1.0 as Redis bundles it. The per-table configuration and the module
//! table are here; the encoder and the decoder are `encode` and `decode`.

use std::ffi::{c_char, c_int};

use mlua::ffi;

use super::{arg_err, check_bytes, check_integer, finish, msg, push_bytes, State, R};

mod decode;
mod encode;

use decode::decode_impl;
use encode::encode_impl;

/// Per-instance configuration, stored in a userdata shared (as upvalue 1) by the functions
/// of one `cjson` table.
#[derive(Clone, Copy)]
#[repr(C)]
struct Config {
    encode_sparse_convert: c_int,
    encode_sparse_ratio: c_int,
    encode_sparse_safe: c_int,
    encode_max_depth: c_int,
    encode_invalid_numbers: c_int,
    encode_number_precision: c_int,
    encode_keep_buffer: c_int,
    decode_invalid_numbers: c_int,
    decode_max_depth: c_int,
}

const DEFAULT_CONFIG: Config = Config {
    encode_sparse_convert: 0,
    encode_sparse_ratio: 2,
    encode_sparse_safe: 10,
    encode_max_depth: 1000,
    encode_invalid_numbers: 0,
    encode_number_precision: 14,
    encode_keep_buffer: 1,
    decode_invalid_numbers: 1,
    decode_max_depth: 1000,
};

unsafe fn fetch_config(l: State) -> R<*mut Config> {
    let p = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config;
    if p.is_null() {
        return Err(msg("BUG: Unable to fetch CJSON configuration"));
    }
    Ok(p)
}

// ===== configuration =====

unsafe fn arg_init(l: State, args: c_int) -> R<*mut Config> {
    if ffi::lua_gettop(l) > args {
        return Err(arg_err(args + 1, "found too many arguments"));
    }
    while ffi::lua_gettop(l) < args {
        ffi::lua_pushnil(l);
    }
    fetch_config(l)
}

unsafe fn integer_option(
    l: State,
    optindex: c_int,
    setting: &mut c_int,
    min: c_int,
    max: c_int,
) -> R<()> {
    if ffi::lua_type(l, optindex) != ffi::LUA_TNIL {
        let value = check_integer(l, optindex)? as c_int;
        if !(min <= value && value <= max) {
            return Err(arg_err(
                1,
                format!("expected integer between {min} and {max}"),
            ));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, *setting as ffi::lua_Integer);
    Ok(())
}

/// `luaL_checkoption` with no default.
unsafe fn check_option(l: State, narg: c_int, options: &[&str]) -> R<c_int> {
    let name = check_bytes(l, narg)?;
    let name = match name.iter().position(|&c| c == 0) {
        Some(p) => &name[..p],
        None => name,
    };
    for (i, o) in options.iter().enumerate() {
        if o.as_bytes() == name {
            return Ok(i as c_int);
        }
    }
    let mut m = b"invalid option '".to_vec();
    m.extend_from_slice(name);
    m.push(b'\'');
    Err(arg_err(narg, m))
}

unsafe fn enum_option(
    l: State,
    optindex: c_int,
    setting: &mut c_int,
    options: Option<&[&str]>,
    bool_true: c_int,
) -> R<()> {
    let (options, bool_true): (&[&str], c_int) = match options {
        Some(o) => (o, bool_true),
        None => (&["off", "on"], 1),
    };
    if ffi::lua_type(l, optindex) != ffi::LUA_TNIL {
        if bool_true != 0 && ffi::lua_type(l, optindex) == ffi::LUA_TBOOLEAN {
            *setting = ffi::lua_toboolean(l, optindex) * bool_true;
        } else {
            *setting = check_option(l, optindex, options)?;
        }
    }
    if bool_true != 0 && (*setting == 0 || *setting == bool_true) {
        ffi::lua_pushboolean(l, *setting);
    } else {
        push_bytes(l, options[*setting as usize].as_bytes());
    }
    Ok(())
}

unsafe fn cfg_encode_sparse_array(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 3)?;
    enum_option(l, 1, &mut cfg.encode_sparse_convert, None, 1)?;
    integer_option(l, 2, &mut cfg.encode_sparse_ratio, 0, c_int::MAX)?;
    integer_option(l, 3, &mut cfg.encode_sparse_safe, 0, c_int::MAX)?;
    Ok(3)
}

unsafe fn cfg_encode_max_depth(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 1)?;
    integer_option(l, 1, &mut cfg.encode_max_depth, 1, c_int::MAX)?;
    Ok(1)
}

unsafe fn cfg_decode_max_depth(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 1)?;
    integer_option(l, 1, &mut cfg.decode_max_depth, 1, c_int::MAX)?;
    Ok(1)
}

unsafe fn cfg_encode_number_precision(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 1)?;
    integer_option(l, 1, &mut cfg.encode_number_precision, 1, 14)?;
    Ok(1)
}

unsafe fn cfg_encode_keep_buffer(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 1)?;
    enum_option(l, 1, &mut cfg.encode_keep_buffer, None, 1)?;
    Ok(1)
}

unsafe fn cfg_encode_invalid_numbers(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 1)?;
    enum_option(
        l,
        1,
        &mut cfg.encode_invalid_numbers,
        Some(&["off", "on", "null"]),
        1,
    )?;
    Ok(1)
}

unsafe fn cfg_decode_invalid_numbers(l: State) -> R<c_int> {
    let cfg = &mut *arg_init(l, 1)?;
    enum_option(l, 1, &mut cfg.decode_invalid_numbers, None, 1)?;
    Ok(1)
}

// ===== module =====

macro_rules! cfn {
    ($name:ident, $imp:ident) => {
        unsafe extern "C-unwind" fn $name(l: State) -> c_int {
            let r = $imp(l);
            finish(l, r)
        }
    };
}

cfn!(json_encode, encode_impl);
cfn!(json_decode, decode_impl);
cfn!(json_cfg_encode_sparse_array, cfg_encode_sparse_array);
cfn!(json_cfg_encode_max_depth, cfg_encode_max_depth);
cfn!(json_cfg_decode_max_depth, cfg_decode_max_depth);
cfn!(
    json_cfg_encode_number_precision,
    cfg_encode_number_precision
);
cfn!(json_cfg_encode_keep_buffer, cfg_encode_keep_buffer);
cfn!(json_cfg_encode_invalid_numbers, cfg_encode_invalid_numbers);
cfn!(json_cfg_decode_invalid_numbers, cfg_decode_invalid_numbers);

/// `cjson.new()`, also the module opener: a fresh table with its own configuration.
pub(crate) unsafe extern "C-unwind" fn luaopen_cjson(l: State) -> c_int {
    let reg: [(&[u8], ffi::lua_CFunction); 10] = [
        (b"encode\0", json_encode),
        (b"decode\0", json_decode),
        (b"encode_sparse_array\0", json_cfg_encode_sparse_array),
        (b"encode_max_depth\0", json_cfg_encode_max_depth),
        (b"decode_max_depth\0", json_cfg_decode_max_depth),
        (
            b"encode_number_precision\0",
            json_cfg_encode_number_precision,
        ),
        (b"encode_keep_buffer\0", json_cfg_encode_keep_buffer),
        (b"encode_invalid_numbers\0", json_cfg_encode_invalid_numbers),
        (b"decode_invalid_numbers\0", json_cfg_decode_invalid_numbers),
        (b"new\0", luaopen_cjson),
    ];
    ffi::lua_createtable(l, 0, 0);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    cfg.write(DEFAULT_CONFIG);
    for (name, f) in reg {
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushcclosure(l, f, 1);
        ffi::lua_setfield(l, -3, name.as_ptr() as *const c_char);
    }
    ffi::lua_settop(l, -2);
    ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    super::set_str(l, b"_NAME\0", "cjson");
    super::set_str(l, b"_VERSION\0", "2.1.0");
    1
}
