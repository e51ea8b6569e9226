//! `cjson`: Lua CJSON 2.1.0 as Redis bundles it.

use std::ffi::{c_char, c_int, c_void};

use mlua::ffi;

use super::{
    arg_err, c_i32, check_bytes, check_integer, finish, msg, push_bytes, to_bytes, type_error,
    typename, State, R,
};

extern "C" {
    fn snprintf(buf: *mut c_char, n: usize, fmt: *const c_char, ...) -> c_int;
    fn strtod(nptr: *const c_char, endptr: *mut *mut c_char) -> f64;
}

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

// ===== encoding =====

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

type Raise2 = super::Raise;

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

unsafe fn encode_impl(l: State) -> R<c_int> {
    let cfg = *fetch_config(l)?;
    if ffi::lua_gettop(l) != 1 {
        return Err(arg_err(1, "expected 1 argument"));
    }
    let mut json = Vec::new();
    append_data(l, &cfg, 0, &mut json)?;
    push_bytes(l, &json);
    Ok(1)
}

// ===== decoding =====

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    String,
    Number,
    Boolean,
    Null,
    Colon,
    Comma,
    End,
    Whitespace,
    Error,
    Unknown,
}

fn tok_name(t: Tok) -> &'static str {
    match t {
        Tok::ObjBegin => "T_OBJ_BEGIN",
        Tok::ObjEnd => "T_OBJ_END",
        Tok::ArrBegin => "T_ARR_BEGIN",
        Tok::ArrEnd => "T_ARR_END",
        Tok::String => "T_STRING",
        Tok::Number => "T_NUMBER",
        Tok::Boolean => "T_BOOLEAN",
        Tok::Null => "T_NULL",
        Tok::Colon => "T_COLON",
        Tok::Comma => "T_COMMA",
        Tok::End => "T_END",
        Tok::Whitespace => "T_WHITESPACE",
        Tok::Error => "T_ERROR",
        Tok::Unknown => "T_UNKNOWN",
    }
}

fn ch2token(c: u8) -> Tok {
    match c {
        b'{' => Tok::ObjBegin,
        b'}' => Tok::ObjEnd,
        b'[' => Tok::ArrBegin,
        b']' => Tok::ArrEnd,
        b',' => Tok::Comma,
        b':' => Tok::Colon,
        0 => Tok::End,
        b' ' | b'\t' | b'\n' | b'\r' => Tok::Whitespace,
        b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'"' | b'+' | b'-' | b'0'..=b'9' => Tok::Unknown,
        _ => Tok::Error,
    }
}

fn escape2char(c: u8) -> u8 {
    match c {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 8,
        b't' => b'\t',
        b'n' => b'\n',
        b'f' => 12,
        b'r' => b'\r',
        b'u' => b'u',
        _ => 0,
    }
}

struct Token {
    kind: Tok,
    index: usize,
    error: &'static str,
    number: f64,
    boolean: bool,
}

struct Parser<'a> {
    /// The whole Lua string, which Lua keeps NUL-terminated.
    data: &'a [u8],
    base: *const c_char,
    ptr: usize,
    tmp: Vec<u8>,
    cfg: Config,
    depth: c_int,
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn set_error(&self, t: &mut Token, what: &'static str) {
        t.kind = Tok::Error;
        t.index = self.ptr;
        t.error = what;
    }

    fn decode_hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0u32;
        for i in 0..4 {
            let d = (self.at(at + i) as char).to_digit(16)?;
            v = (v << 4) | d;
        }
        Some(v)
    }

    fn append_unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.decode_hex4(self.ptr + 2) else {
            return false;
        };
        let mut escape_len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.ptr + 6) != b'\\' || self.at(self.ptr + 7) != b'u' {
                return false;
            }
            let Some(low) = self.decode_hex4(self.ptr + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            escape_len = 12;
        }
        if cp <= 0x7F {
            self.tmp.push(cp as u8);
        } else if cp <= 0x7FF {
            self.tmp.push(((cp >> 6) | 0xC0) as u8);
            self.tmp.push(((cp & 0x3F) | 0x80) as u8);
        } else if cp <= 0xFFFF {
            self.tmp.push(((cp >> 12) | 0xE0) as u8);
            self.tmp.push((((cp >> 6) & 0x3F) | 0x80) as u8);
            self.tmp.push(((cp & 0x3F) | 0x80) as u8);
        } else {
            self.tmp.push(((cp >> 18) | 0xF0) as u8);
            self.tmp.push((((cp >> 12) & 0x3F) | 0x80) as u8);
            self.tmp.push((((cp >> 6) & 0x3F) | 0x80) as u8);
            self.tmp.push(((cp & 0x3F) | 0x80) as u8);
        }
        self.ptr += escape_len;
        true
    }

    fn next_string_token(&mut self, t: &mut Token) {
        self.ptr += 1;
        self.tmp.clear();
        loop {
            let mut ch = self.at(self.ptr);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                self.set_error(t, "unexpected end of string");
                return;
            }
            if ch == b'\\' {
                ch = escape2char(self.at(self.ptr + 1));
                if ch == b'u' {
                    if self.append_unicode_escape() {
                        continue;
                    }
                    self.set_error(t, "invalid unicode escape code");
                    return;
                }
                if ch == 0 {
                    self.set_error(t, "invalid escape code");
                    return;
                }
                self.ptr += 1;
            }
            self.tmp.push(ch);
            self.ptr += 1;
        }
        self.ptr += 1;
        t.kind = Tok::String;
    }

    fn is_invalid_number(&self) -> bool {
        let mut p = self.ptr;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        if self.at(p) == b'0' {
            let ch2 = self.at(p + 1);
            return (ch2 | 0x20) == b'x' || ch2.is_ascii_digit();
        } else if self.at(p) <= b'9' {
            return false;
        }
        let word = |w: &[u8]| (0..3).all(|i| self.at(p + i).to_ascii_lowercase() == w[i]);
        word(b"inf") || word(b"nan")
    }

    fn next_number_token(&mut self, t: &mut Token) {
        t.kind = Tok::Number;
        let mut end: *mut c_char = std::ptr::null_mut();
        // SAFETY: `base` points at the NUL-terminated Lua string and `ptr` is within it.
        let start = unsafe { self.base.add(self.ptr) };
        t.number = unsafe { strtod(start, &mut end) };
        if std::ptr::eq(end, start) {
            self.set_error(t, "invalid number");
        } else {
            self.ptr += end as usize - start as usize;
        }
    }

    fn starts_with(&self, w: &[u8]) -> bool {
        w.iter()
            .enumerate()
            .all(|(i, &c)| self.at(self.ptr + i) == c)
    }

    fn next_token(&mut self, t: &mut Token) {
        let ch = loop {
            let ch = self.at(self.ptr);
            t.kind = ch2token(ch);
            if t.kind != Tok::Whitespace {
                break ch;
            }
            self.ptr += 1;
        };
        t.index = self.ptr;
        if t.kind == Tok::Error {
            self.set_error(t, "invalid token");
            return;
        }
        if t.kind == Tok::End {
            return;
        }
        if t.kind != Tok::Unknown {
            self.ptr += 1;
            return;
        }
        if ch == b'"' {
            self.next_string_token(t);
        } else if ch == b'-' || ch.is_ascii_digit() {
            if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                self.set_error(t, "invalid number");
                return;
            }
            self.next_number_token(t);
        } else if self.starts_with(b"true") {
            t.kind = Tok::Boolean;
            t.boolean = true;
            self.ptr += 4;
        } else if self.starts_with(b"false") {
            t.kind = Tok::Boolean;
            t.boolean = false;
            self.ptr += 5;
        } else if self.starts_with(b"null") {
            t.kind = Tok::Null;
            self.ptr += 4;
        } else if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() {
            self.next_number_token(t);
        } else {
            self.set_error(t, "invalid token");
        }
    }

    fn parse_error(&self, exp: &str, t: &Token) -> super::Raise {
        let found = if t.kind == Tok::Error {
            t.error
        } else {
            tok_name(t.kind)
        };
        msg(format!(
            "Expected {} but found {} at character {}",
            exp,
            found,
            t.index + 1
        ))
    }

    unsafe fn descend(&mut self, l: State, slots: c_int) -> R<()> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth && ffi::lua_checkstack(l, slots) != 0 {
            return Ok(());
        }
        Err(msg(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.ptr
        )))
    }

    unsafe fn parse_object(&mut self, l: State) -> R<()> {
        self.descend(l, 3)?;
        ffi::lua_createtable(l, 0, 0);
        let mut t = new_token();
        self.next_token(&mut t);
        if t.kind == Tok::ObjEnd {
            self.depth -= 1;
            return Ok(());
        }
        loop {
            if t.kind != Tok::String {
                return Err(self.parse_error("object key string", &t));
            }
            push_bytes(l, &self.tmp);
            self.next_token(&mut t);
            if t.kind != Tok::Colon {
                return Err(self.parse_error("colon", &t));
            }
            self.next_token(&mut t);
            self.process_value(l, &t)?;
            ffi::lua_rawset(l, -3);
            self.next_token(&mut t);
            if t.kind == Tok::ObjEnd {
                self.depth -= 1;
                return Ok(());
            }
            if t.kind != Tok::Comma {
                return Err(self.parse_error("comma or object end", &t));
            }
            self.next_token(&mut t);
        }
    }

    unsafe fn parse_array(&mut self, l: State) -> R<()> {
        self.descend(l, 2)?;
        ffi::lua_createtable(l, 0, 0);
        let mut t = new_token();
        self.next_token(&mut t);
        if t.kind == Tok::ArrEnd {
            self.depth -= 1;
            return Ok(());
        }
        let mut i: c_int = 1;
        loop {
            self.process_value(l, &t)?;
            ffi::lua_rawseti_(l, -2, i);
            self.next_token(&mut t);
            if t.kind == Tok::ArrEnd {
                self.depth -= 1;
                return Ok(());
            }
            if t.kind != Tok::Comma {
                return Err(self.parse_error("comma or array end", &t));
            }
            self.next_token(&mut t);
            i = i.wrapping_add(1);
        }
    }

    unsafe fn process_value(&mut self, l: State, t: &Token) -> R<()> {
        match t.kind {
            Tok::String => push_bytes(l, &self.tmp),
            Tok::Number => ffi::lua_pushnumber(l, t.number),
            Tok::Boolean => ffi::lua_pushboolean(l, t.boolean as c_int),
            Tok::ObjBegin => self.parse_object(l)?,
            Tok::ArrBegin => self.parse_array(l)?,
            Tok::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut::<c_void>()),
            _ => return Err(self.parse_error("value", t)),
        }
        Ok(())
    }
}

fn new_token() -> Token {
    Token {
        kind: Tok::End,
        index: 0,
        error: "",
        number: 0.0,
        boolean: false,
    }
}

unsafe fn decode_impl(l: State) -> R<c_int> {
    if ffi::lua_gettop(l) != 1 {
        return Err(arg_err(1, "expected 1 argument"));
    }
    let cfg = *fetch_config(l)?;
    let mut len = 0usize;
    let base = ffi::lua_tolstring(l, 1, &mut len);
    if base.is_null() {
        return Err(type_error(l, 1, "string"));
    }
    let data = std::slice::from_raw_parts(base as *const u8, len);
    if len >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(msg("JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut p = Parser {
        data,
        base,
        ptr: 0,
        tmp: Vec::new(),
        cfg,
        depth: 0,
    };
    let mut t = new_token();
    p.next_token(&mut t);
    p.process_value(l, &t)?;
    p.next_token(&mut t);
    if t.kind != Tok::End {
        return Err(p.parse_error("the end", &t));
    }
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
