//! Conversions between RESP replies and Lua values (script_lua.c `redisProtocolToLuaType*`
//! and `luaReplyToRedisReply`).

use mlua::{ffi, Lua, Table, Value};
use std::os::raw::c_int;
use strata_resp::{Protocol, Reply};

/// Lua 5.1's LUAI_MAXCSTACK: `luaReplyToRedisReply` answers "reached lua stack limit" where
/// `lua_checkstack(lua, 4)` would fail, so deep or cyclic tables end the same way as in Redis.
const MAX_CSTACK: usize = 8000;
/// Nesting cap for host replies (they come from the server, so this is only a backstop).
const MAX_REPLY_DEPTH: usize = 512;

/// `luaPushErrorBuff`'s message: "-CODE msg" keeps its code, anything without a space gets
/// "ERR".
fn error_message(err: &[u8]) -> Vec<u8> {
    let mut msg: Vec<u8>;
    if let Some(rest) = err.strip_prefix(b"-") {
        match rest.iter().position(|&b| b == b' ') {
            Some(sp) => {
                msg = rest[..sp].to_vec();
                msg.push(b' ');
                msg.extend_from_slice(trim_crlf(&rest[sp + 1..]));
            }
            None => {
                msg = b"ERR ".to_vec();
                msg.extend_from_slice(trim_crlf(rest));
            }
        }
    } else {
        msg = b"ERR ".to_vec();
        msg.extend_from_slice(trim_crlf(err));
    }
    msg
}

/// `luaPushErrorBuff`: the table {err = message}.
pub(crate) fn error_table(lua: &Lua, err: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_message(err))?)?;
    Ok(t)
}

/// `error_table`, pushed onto the stack of `l`.
///
/// # Safety
/// `l` is a live Lua state with a free stack slot.
pub(crate) unsafe fn push_error_table(l: *mut ffi::lua_State, err: &[u8]) {
    ffi::lua_createtable(l, 0, 1);
    push_bytes(l, &error_message(err));
    ffi::lua_setfield(l, -2, c"err".as_ptr());
}

/// `sdstrim(s, "\r\n")`: both ends.
fn trim_crlf(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b'\r' && b != b'\n')
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Pushes the Lua value Redis gives scripts for the one complete reply in `buf`
/// (`redisProtocolToLuaType`), straight onto the stack of `l`: redis.call's result.
///
/// # Safety
/// `l` is a live Lua state with a free stack slot. As mlua does when no memory limit is
/// set, allocations are not protected: an out-of-memory error would unwind past this frame.
pub(crate) unsafe fn push_reply(l: *mut ffi::lua_State, buf: &[u8]) {
    let mut pos = 0;
    if !push_parsed(l, buf, &mut pos, 0) {
        push_error_table(l, b"-ERR Protocol error: invalid reply from the command");
    }
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = buf.get(*pos..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    *pos += end + 2;
    Some(&rest[..end])
}

fn num(s: &[u8]) -> Option<i64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn bulk<'a>(buf: &'a [u8], pos: &mut usize, len: usize) -> Option<&'a [u8]> {
    let end = pos.checked_add(len)?;
    let data = buf.get(*pos..end)?;
    if buf.get(end..end + 2)? != b"\r\n" {
        return None;
    }
    *pos = end + 2;
    Some(data)
}

/// Pushes `b` as a Lua string. (May raise a memory error, as every push here.)
pub(crate) unsafe fn push_bytes(l: *mut ffi::lua_State, b: &[u8]) {
    ffi::lua_pushlstring(l, b.as_ptr().cast(), b.len());
}

/// Pushes a new table holding `items` as strings at 1..n (KEYS, ARGV). Needs two free
/// stack slots.
pub(crate) unsafe fn push_seq(l: *mut ffi::lua_State, items: &[&[u8]]) {
    ffi::lua_createtable(l, c_int::try_from(items.len()).unwrap_or(0), 0);
    for (i, it) in items.iter().enumerate() {
        push_bytes(l, it);
        ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
    }
}

/// Wraps the value on top of the stack in a table as its one field `name`.
unsafe fn wrap_top(l: *mut ffi::lua_State, name: &std::ffi::CStr) {
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_insert(l, -2);
    ffi::lua_setfield(l, -2, name.as_ptr());
}

/// A table size for `n` elements still to be read from `buf[pos..]`: each takes at least
/// three bytes, so a count the buffer cannot hold preallocates nothing extravagant.
fn size_hint(n: i64, buf: &[u8], pos: usize) -> c_int {
    let most = buf.len().saturating_sub(pos) / 3;
    c_int::try_from(n.clamp(0, most as i64)).unwrap_or(0)
}

/// Pushes one reply parsed at `pos`; false (nothing pushed) on a malformed reply. RESP3
/// null pushes nil.
unsafe fn push_parsed(l: *mut ffi::lua_State, buf: &[u8], pos: &mut usize, depth: usize) -> bool {
    // A table under construction and its key and value: three slots per level.
    if depth > MAX_REPLY_DEPTH || ffi::lua_checkstack(l, 3) == 0 {
        return false;
    }
    let Some(&kind) = buf.get(*pos) else {
        return false;
    };
    *pos += 1;
    let Some(l1) = line(buf, pos) else {
        return false;
    };
    match kind {
        b'+' => {
            push_bytes(l, l1);
            wrap_top(l, c"ok");
        }
        b'-' | b'!' => {
            let msg = if kind == b'!' {
                let Some(b) = num(l1)
                    .and_then(|n| usize::try_from(n).ok())
                    .and_then(|n| bulk(buf, pos, n))
                else {
                    return false;
                };
                b
            } else {
                l1
            };
            let mut e = Vec::with_capacity(msg.len() + 1);
            e.push(b'-');
            e.extend_from_slice(msg);
            push_error_table(l, &e);
            ffi::lua_pushboolean(l, 1);
            ffi::lua_setfield(l, -2, c"ignore_error_stats_update".as_ptr());
        }
        b':' => match num(l1) {
            Some(n) => ffi::lua_pushnumber(l, n as f64),
            None => return false,
        },
        b'$' => match num(l1) {
            Some(n) if n < 0 => ffi::lua_pushboolean(l, 0),
            Some(n) => match bulk(buf, pos, n as usize) {
                Some(b) => push_bytes(l, b),
                None => return false,
            },
            None => return false,
        },
        b'*' | b'>' | b'~' => {
            let Some(n) = num(l1) else { return false };
            if n < 0 {
                ffi::lua_pushboolean(l, 0);
                return true;
            }
            let set = kind == b'~';
            let hint = size_hint(n, buf, *pos);
            if set {
                ffi::lua_createtable(l, 0, hint);
            } else {
                ffi::lua_createtable(l, hint, 0);
            }
            for j in 0..n {
                if !push_parsed(l, buf, pos, depth + 1) {
                    ffi::lua_pop(l, 1);
                    return false;
                }
                if !set {
                    ffi::lua_rawseti(l, -2, j + 1);
                } else if ffi::lua_isnil(l, -1) != 0 {
                    ffi::lua_pop(l, 1);
                } else {
                    ffi::lua_pushboolean(l, 1);
                    ffi::lua_rawset(l, -3);
                }
            }
            if set {
                wrap_top(l, c"set");
            }
        }
        b'%' | b'|' => {
            let Some(n) = num(l1) else { return false };
            ffi::lua_createtable(l, 0, size_hint(n, buf, *pos));
            for _ in 0..n.max(0) {
                if !push_parsed(l, buf, pos, depth + 1) {
                    ffi::lua_pop(l, 1);
                    return false;
                }
                if !push_parsed(l, buf, pos, depth + 1) {
                    ffi::lua_pop(l, 2);
                    return false;
                }
                if ffi::lua_isnil(l, -2) != 0 {
                    ffi::lua_pop(l, 2);
                } else {
                    ffi::lua_rawset(l, -3);
                }
            }
            if kind == b'|' {
                // Attributes are not shown to scripts: the reply that follows is.
                ffi::lua_pop(l, 1);
                return push_parsed(l, buf, pos, depth + 1);
            }
            wrap_top(l, c"map");
        }
        b'_' => ffi::lua_pushnil(l),
        b'#' => ffi::lua_pushboolean(l, c_int::from(l1 == b"t")),
        b',' => {
            let d = std::str::from_utf8(l1)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            let Some(d) = d else { return false };
            ffi::lua_pushnumber(l, d);
            wrap_top(l, c"double");
        }
        b'(' => {
            push_bytes(l, l1);
            wrap_top(l, c"big_number");
        }
        b'=' => {
            let Some(b) = num(l1)
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| bulk(buf, pos, n))
                .filter(|b| b.len() >= 4)
            else {
                return false;
            };
            ffi::lua_createtable(l, 0, 2);
            push_bytes(l, &b[4..]);
            ffi::lua_setfield(l, -2, c"string".as_ptr());
            push_bytes(l, &b[..3]);
            ffi::lua_setfield(l, -2, c"format".as_ptr());
            wrap_top(l, c"verbatim_string");
        }
        _ => return false,
    }
    true
}

/// `(long long)lua_Number` as x86-64 does it: out of range and NaN give i64::MIN.
pub(crate) fn lua_num_to_i64(d: f64) -> i64 {
    let min = i64::MIN as f64; // -2^63, exact
    if d.is_nan() || !(min..-min).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// Writes `-msg\r\n` the way `addReplyErrorFormat` does: trailing CR/LF trimmed, inner
/// ones turned into spaces. `msg` is written as given (it starts with its code).
pub(crate) fn push_error(buf: &mut Vec<u8>, msg: &[u8]) {
    let mut end = msg.len();
    while end > 0 && (msg[end - 1] == b'\r' || msg[end - 1] == b'\n') {
        end -= 1;
    }
    buf.push(b'-');
    buf.extend(
        msg[..end]
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    buf.extend_from_slice(b"\r\n");
}

/// The errors a script's reply carries, in order: each one's text (without the '-') and
/// whether it was counted already (see [`crate::Host::reply_error`]).
pub(crate) type ReplyErrors = Vec<(Vec<u8>, bool)>;

/// `push_error`, noting the error in `errors`.
pub(crate) fn push_noted_error(
    buf: &mut Vec<u8>,
    msg: &[u8],
    counted: bool,
    errors: &mut ReplyErrors,
) {
    let start = buf.len();
    push_error(buf, msg);
    let text = buf.get(start + 1..buf.len() - 2).unwrap_or_default();
    errors.push((text.to_vec(), counted));
}

/// `ignore_error_stats_update` of an error table: the error came from a command the script
/// called, whose failure was counted then.
fn counted_already(t: &Table) -> mlua::Result<bool> {
    Ok(matches!(
        t.raw_get::<Value>("ignore_error_stats_update")?,
        Value::Boolean(true)
    ))
}

fn map_crlf(s: &[u8]) -> Vec<u8> {
    s.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

/// A string field, read raw (as Redis's conversions do: a table with an `__index` that
/// raises, such as `_G` under the globals protection, converts like any other).
fn get_str(t: &Table, key: &str) -> mlua::Result<Option<mlua::String>> {
    match t.raw_get::<Value>(key)? {
        Value::String(s) => Ok(Some(s)),
        _ => Ok(None),
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `lua_isstring` then `lua_tostring`: strings, and numbers formatted as Lua does ("%.14g").
pub(crate) fn lua_tostring(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(fmt_g14(*n).into_bytes()),
        _ => None,
    }
}

/// C's "%.14g" (LUA_NUMBER_FMT).
pub(crate) fn fmt_g14(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf" } else { "inf" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:.13e}", d);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..14).contains(&exp) {
        let decimals = (13 - exp).max(0) as usize;
        let s = format!("{:.*}", decimals, d);
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        s
    } else {
        let m = if mant.contains('.') {
            mant.trim_end_matches('0').trim_end_matches('.')
        } else {
            mant
        };
        format!("{}e{}{:02}", m, if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// The error reply for a Lua error object: `luaExtractErrorInformation` plus the
/// " script: NAME, on SOURCE:LINE." suffix of `luaCallFunction`.
pub(crate) fn script_error_reply(
    buf: &mut Vec<u8>,
    err: &Value,
    name: &str,
    errors: &mut ReplyErrors,
) -> mlua::Result<()> {
    let Value::Table(t) = err else {
        let msg = lua_tostring(err).unwrap_or_else(|| b"execution failure".to_vec());
        let mut m = format!("ERR Error running script {name}, ").into_bytes();
        m.extend_from_slice(&msg[..msg.len().min(100)]);
        push_noted_error(buf, &m, false, errors);
        return Ok(());
    };
    let mut msg = match lua_tostring(&t.get::<Value>("err")?) {
        Some(m) => m,
        // Redis would format a NULL here; give a stable text instead.
        None => b"ERR unknown error".to_vec(),
    };
    let source = lua_tostring(&t.get::<Value>("source")?);
    let line = lua_tostring(&t.get::<Value>("line")?);
    if let (Some(source), Some(line)) = (source, line) {
        msg.extend_from_slice(format!(" script: {name}, on ").as_bytes());
        msg.extend_from_slice(&source);
        msg.push(b':');
        msg.extend_from_slice(&line);
        msg.push(b'.');
    }
    push_noted_error(buf, &msg, counted_already(t)?, errors);
    Ok(())
}

/// `luaReplyToRedisReply` for the value a script returned. `script_resp` is what the script
/// set with redis.setresp (it decides how booleans map), `client` the client's protocol.
/// Iterative so deep tables cannot overflow the Rust stack; `used` mirrors Lua stack slots.
/// Fields are read raw, as Redis reads them: metatables play no part. The errors the reply
/// holds, at any depth, are noted in `errors`.
pub(crate) fn lua_to_reply(
    buf: &mut Vec<u8>,
    v: Value,
    script_resp: u8,
    client: Protocol,
    errors: &mut ReplyErrors,
) -> mlua::Result<()> {
    let mut work: Vec<(Value, usize)> = vec![(v, 2)];
    while let Some((v, used)) = work.pop() {
        let mut r = Reply::new(buf, client);
        if used + 4 > MAX_CSTACK {
            push_noted_error(r.buf, b"ERR reached lua stack limit", false, errors);
            continue;
        }
        match v {
            Value::String(s) => r.bulk(&s.as_bytes()),
            Value::Boolean(b) => {
                if script_resp == 2 {
                    if b {
                        r.int(1);
                    } else {
                        r.null();
                    }
                } else {
                    r.boolean(b);
                }
            }
            Value::Integer(i) => r.int(i),
            Value::Number(n) => r.int(lua_num_to_i64(n)),
            Value::Table(t) => {
                if let Some(e) = get_str(&t, "err")? {
                    // addReplyErrorFormat("-%s", err): written as is, no "ERR " added.
                    push_noted_error(r.buf, &e.as_bytes(), counted_already(&t)?, errors);
                    continue;
                }
                if let Some(ok) = get_str(&t, "ok")? {
                    r.buf.push(b'+');
                    r.buf.extend_from_slice(&map_crlf(&ok.as_bytes()));
                    r.buf.extend_from_slice(b"\r\n");
                    continue;
                }
                if let Some(d) = as_number(&t.raw_get::<Value>("double")?) {
                    r.double(d);
                    continue;
                }
                if let Some(b) = get_str(&t, "big_number")? {
                    let b = map_crlf(&b.as_bytes());
                    if client == Protocol::Resp3 {
                        r.buf.push(b'(');
                        r.buf.extend_from_slice(&b);
                        r.buf.extend_from_slice(b"\r\n");
                    } else {
                        r.bulk(&b);
                    }
                    continue;
                }
                if let Value::Table(vt) = t.raw_get::<Value>("verbatim_string")? {
                    if let Some(fmt) = get_str(&vt, "format")? {
                        if let Some(s) = get_str(&vt, "string")? {
                            let s = s.as_bytes();
                            if client == Protocol::Resp3 {
                                r.buf.push(b'=');
                                r.buf
                                    .extend_from_slice((s.len() + 4).to_string().as_bytes());
                                r.buf.extend_from_slice(b"\r\n");
                                // C string semantics: the format stops at a NUL.
                                let f = fmt.as_bytes();
                                let mut it = f.iter().copied().take_while(|&c| c != 0);
                                for _ in 0..3 {
                                    r.buf.push(it.next().unwrap_or(b' '));
                                }
                                r.buf.push(b':');
                                r.buf.extend_from_slice(&s);
                                r.buf.extend_from_slice(b"\r\n");
                            } else {
                                r.bulk(&s);
                            }
                            continue;
                        }
                    }
                }
                if let Value::Table(m) = t.raw_get::<Value>("map")? {
                    let pairs: Vec<(Value, Value)> =
                        m.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
                    r.map(pairs.len());
                    for (k, v) in pairs.into_iter().rev() {
                        work.push((v, used + 3));
                        work.push((k, used + 4));
                    }
                    continue;
                }
                if let Value::Table(s) = t.raw_get::<Value>("set")? {
                    let keys: Vec<Value> = s
                        .pairs::<Value, Value>()
                        .map(|kv| kv.map(|(k, _)| k))
                        .collect::<mlua::Result<_>>()?;
                    r.set(keys.len());
                    for k in keys.into_iter().rev() {
                        work.push((k, used + 3));
                    }
                    continue;
                }
                let mut items = Vec::new();
                let mut j: i64 = 1;
                loop {
                    let v: Value = t.raw_get(j)?;
                    if v.is_nil() {
                        break;
                    }
                    items.push(v);
                    j += 1;
                }
                r.array(items.len());
                for v in items.into_iter().rev() {
                    work.push((v, used + 1));
                }
            }
            _ => r.null(),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g14() {
        assert_eq!(fmt_g14(1.5), "1.5");
        assert_eq!(fmt_g14(1e15), "1e+15");
        assert_eq!(fmt_g14(123456789012345.0), "1.2345678901234e+14");
        assert_eq!(fmt_g14(0.0001), "0.0001");
        assert_eq!(fmt_g14(0.00001), "1e-05");
        assert_eq!(fmt_g14(100.0), "100");
        assert_eq!(fmt_g14(-2.25), "-2.25");
    }

    #[test]
    fn casts() {
        assert_eq!(lua_num_to_i64(3.99), 3);
        assert_eq!(lua_num_to_i64(-1.9), -1);
        assert_eq!(lua_num_to_i64(1e300), i64::MIN);
        assert_eq!(lua_num_to_i64(f64::NAN), i64::MIN);
    }

    #[test]
    fn errors() {
        let lua = Lua::new();
        let e = |s: &[u8]| -> String { error_table(&lua, s).unwrap().get("err").unwrap() };
        assert_eq!(e(b"-My Error"), "My Error");
        assert_eq!(e(b"-oops"), "ERR oops");
        assert_eq!(e(b"plain text\r\n"), "ERR plain text");
        assert_eq!(e(b"-WRONGTYPE Operation\r\n"), "WRONGTYPE Operation");
    }
}
