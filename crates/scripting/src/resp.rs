//! Conversions between RESP replies and Lua values (script_lua.c `redisProtocolToLuaType*`
//! and `luaReplyToRedisReply`).

use mlua::{Lua, Table, Value};
use strata_resp::{Protocol, Reply};

/// Lua 5.1's LUAI_MAXCSTACK: `luaReplyToRedisReply` answers "reached lua stack limit" where
/// `lua_checkstack(lua, 4)` would fail, so deep or cyclic tables end the same way as in Redis.
const MAX_CSTACK: usize = 8000;
/// Nesting cap for host replies (they come from the server, so this is only a backstop).
const MAX_REPLY_DEPTH: usize = 512;

/// `luaPushErrorBuff`: "-CODE msg" keeps its code, anything without a space gets "ERR".
pub(crate) fn error_table(lua: &Lua, err: &[u8]) -> mlua::Result<Table> {
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
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(&msg)?)?;
    Ok(t)
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

/// Parses one complete reply from `buf` into the Lua value Redis gives scripts.
pub(crate) fn reply_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<Value> {
    let mut pos = 0;
    match parse(lua, buf, &mut pos, 0)? {
        Some(v) => Ok(v),
        None => Ok(Value::Table(error_table(
            lua,
            b"-ERR Protocol error: invalid reply from the command",
        )?)),
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

/// None on a malformed reply; Some(Value::Nil) is RESP3 null.
fn parse(lua: &Lua, buf: &[u8], pos: &mut usize, depth: usize) -> mlua::Result<Option<Value>> {
    if depth > MAX_REPLY_DEPTH {
        return Ok(None);
    }
    let Some(&kind) = buf.get(*pos) else {
        return Ok(None);
    };
    *pos += 1;
    let Some(l) = line(buf, pos) else {
        return Ok(None);
    };
    let v = match kind {
        b'+' => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(l)?)?;
            Value::Table(t)
        }
        b'-' | b'!' => {
            let msg = if kind == b'!' {
                let Some(n) = num(l).and_then(|n| usize::try_from(n).ok()) else {
                    return Ok(None);
                };
                let Some(b) = bulk(buf, pos, n) else {
                    return Ok(None);
                };
                b
            } else {
                l
            };
            let mut e = Vec::with_capacity(msg.len() + 1);
            e.push(b'-');
            e.extend_from_slice(msg);
            let t = error_table(lua, &e)?;
            t.raw_set("ignore_error_stats_update", true)?;
            Value::Table(t)
        }
        b':' => match num(l) {
            Some(n) => Value::Number(n as f64),
            None => return Ok(None),
        },
        b'$' => match num(l) {
            Some(n) if n < 0 => Value::Boolean(false),
            Some(n) => match bulk(buf, pos, n as usize) {
                Some(b) => Value::String(lua.create_string(b)?),
                None => return Ok(None),
            },
            None => return Ok(None),
        },
        b'*' | b'>' | b'~' => {
            let Some(n) = num(l) else { return Ok(None) };
            if n < 0 {
                return Ok(Some(Value::Boolean(false)));
            }
            let set = kind == b'~';
            let t = lua.create_table()?;
            for j in 0..n {
                let Some(v) = parse(lua, buf, pos, depth + 1)? else {
                    return Ok(None);
                };
                if set {
                    if !v.is_nil() {
                        t.raw_set(v, true)?;
                    }
                } else {
                    t.raw_set(j + 1, v)?;
                }
            }
            if set {
                let w = lua.create_table()?;
                w.raw_set("set", t)?;
                Value::Table(w)
            } else {
                Value::Table(t)
            }
        }
        b'%' | b'|' => {
            let Some(n) = num(l) else { return Ok(None) };
            let t = lua.create_table()?;
            for _ in 0..n.max(0) {
                let Some(k) = parse(lua, buf, pos, depth + 1)? else {
                    return Ok(None);
                };
                let Some(v) = parse(lua, buf, pos, depth + 1)? else {
                    return Ok(None);
                };
                if !k.is_nil() {
                    t.raw_set(k, v)?;
                }
            }
            if kind == b'|' {
                // Attributes are not shown to scripts: the reply that follows is.
                return parse(lua, buf, pos, depth + 1);
            }
            let w = lua.create_table()?;
            w.raw_set("map", t)?;
            Value::Table(w)
        }
        b'_' => Value::Nil,
        b'#' => Value::Boolean(l == b"t"),
        b',' => {
            let d = std::str::from_utf8(l)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            let Some(d) = d else { return Ok(None) };
            let t = lua.create_table()?;
            t.raw_set("double", d)?;
            Value::Table(t)
        }
        b'(' => {
            let t = lua.create_table()?;
            t.raw_set("big_number", lua.create_string(l)?)?;
            Value::Table(t)
        }
        b'=' => {
            let Some(n) = num(l).and_then(|n| usize::try_from(n).ok()) else {
                return Ok(None);
            };
            let Some(b) = bulk(buf, pos, n) else {
                return Ok(None);
            };
            if b.len() < 4 {
                return Ok(None);
            }
            let inner = lua.create_table()?;
            inner.raw_set("string", lua.create_string(&b[4..])?)?;
            inner.raw_set("format", lua.create_string(&b[..3])?)?;
            let t = lua.create_table()?;
            t.raw_set("verbatim_string", inner)?;
            Value::Table(t)
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
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

fn map_crlf(s: &[u8]) -> Vec<u8> {
    s.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

fn get_str(t: &Table, key: &str) -> mlua::Result<Option<mlua::String>> {
    match t.get::<Value>(key)? {
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
pub(crate) fn script_error_reply(buf: &mut Vec<u8>, err: &Value, name: &str) -> mlua::Result<()> {
    let Value::Table(t) = err else {
        let msg = lua_tostring(err).unwrap_or_else(|| b"execution failure".to_vec());
        let mut m = format!("ERR Error running script {name}, ").into_bytes();
        m.extend_from_slice(&msg[..msg.len().min(100)]);
        push_error(buf, &m);
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
    push_error(buf, &msg);
    Ok(())
}

/// `luaReplyToRedisReply` for the value a script returned. `script_resp` is what the script
/// set with redis.setresp (it decides how booleans map), `client` the client's protocol.
/// Iterative so deep tables cannot overflow the Rust stack; `used` mirrors Lua stack slots.
pub(crate) fn lua_to_reply(
    buf: &mut Vec<u8>,
    v: Value,
    script_resp: u8,
    client: Protocol,
) -> mlua::Result<()> {
    let mut work: Vec<(Value, usize)> = vec![(v, 2)];
    while let Some((v, used)) = work.pop() {
        let mut r = Reply::new(buf, client);
        if used + 4 > MAX_CSTACK {
            r.error("ERR reached lua stack limit");
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
                    push_error(r.buf, &e.as_bytes());
                    continue;
                }
                if let Some(ok) = get_str(&t, "ok")? {
                    r.buf.push(b'+');
                    r.buf.extend_from_slice(&map_crlf(&ok.as_bytes()));
                    r.buf.extend_from_slice(b"\r\n");
                    continue;
                }
                if let Some(d) = as_number(&t.get::<Value>("double")?) {
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
                if let Value::Table(vt) = t.get::<Value>("verbatim_string")? {
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
                if let Value::Table(m) = t.get::<Value>("map")? {
                    let pairs: Vec<(Value, Value)> =
                        m.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
                    r.map(pairs.len());
                    for (k, v) in pairs.into_iter().rev() {
                        work.push((v, used + 3));
                        work.push((k, used + 4));
                    }
                    continue;
                }
                if let Value::Table(s) = t.get::<Value>("set")? {
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
                    let v: Value = t.get(j)?;
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
