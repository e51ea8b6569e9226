//! cjson.decode: JSON text to Lua values, Lua CJSON's tokenizer and parser with its error
//! texts, invalid-number handling and depth limit.

use std::ffi::{c_char, c_int, c_void};

use mlua::ffi;

use super::{fetch_config, Config};
use crate::libs::{arg_err, msg, push_bytes, type_error, State, R};

extern "C" {
    fn strtod(nptr: *const c_char, endptr: *mut *mut c_char) -> f64;
}

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

    fn parse_error(&self, exp: &str, t: &Token) -> crate::libs::Raise {
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

pub(super) unsafe fn decode_impl(l: State) -> R<c_int> {
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
