//! Shebang / library metadata parsing, as eval.c `evalExtractShebangFlags` and functions.c
//! `functionExtractLibMetaData` do it (same split rules and error texts).

/// Script / function flags (Redis's `scripts_flags_def`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
    /// EVAL body without a shebang: Redis's `SCRIPT_FLAG_EVAL_COMPAT_MODE` (pre-7.0 rules).
    pub eval_compat_mode: bool,
}

impl ScriptFlags {
    /// Sets the flag named `name` (case-sensitive, as Redis's strcmp); false if unknown.
    pub(crate) fn set_by_name(&mut self, name: &[u8]) -> bool {
        match name {
            b"no-writes" => self.no_writes = true,
            b"allow-oom" => self.allow_oom = true,
            b"allow-stale" => self.allow_stale = true,
            b"no-cluster" => self.no_cluster = true,
            b"allow-cross-slot-keys" => self.allow_cross_slot_keys = true,
            _ => return false,
        }
        true
    }
}

/// Redis `sdssplitargs`: splits on whitespace honouring "..." (with \xHH and \n-style escapes)
/// and '...' quoting. None on unbalanced quotes or a closing quote not followed by a space.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut p = 0;
    let n = line.len();
    loop {
        while p < n && line[p].is_ascii_whitespace() {
            p += 1;
        }
        if p >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if p >= n {
                    return None;
                }
                if line[p] == b'\\'
                    && p + 3 < n
                    && line[p + 1] == b'x'
                    && line[p + 2].is_ascii_hexdigit()
                    && line[p + 3].is_ascii_hexdigit()
                {
                    let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                    cur.push(hex(line[p + 2]) * 16 + hex(line[p + 3]));
                    p += 3;
                } else if line[p] == b'\\' && p + 1 < n {
                    p += 1;
                    cur.push(match line[p] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        c => c,
                    });
                } else if line[p] == b'"' {
                    if p + 1 < n && !line[p + 1].is_ascii_whitespace() {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    cur.push(line[p]);
                }
            } else if insq {
                if p >= n {
                    return None;
                }
                if line[p] == b'\\' && p + 1 < n && line[p + 1] == b'\'' {
                    p += 1;
                    cur.push(b'\'');
                } else if line[p] == b'\'' {
                    if p + 1 < n && !line[p + 1].is_ascii_whitespace() {
                        return None;
                    }
                    p += 1;
                    break;
                } else {
                    cur.push(line[p]);
                }
            } else {
                if p >= n {
                    break;
                }
                match line[p] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            p += 1;
        }
        out.push(cur);
    }
}

/// EVAL shebang: returns the flags and how many bytes of the body precede the code (the
/// code keeps the shebang's '\n' so line numbers stay right).
pub(crate) fn eval_flags(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        let flags = ScriptFlags {
            eval_compat_mode: true,
            ..ScriptFlags::default()
        };
        return Ok((flags, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let parts = match split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("ERR Invalid engine in script shebang".into()),
    };
    if parts[0] != b"#!lua" {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = ScriptFlags::default();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        if list.is_empty() {
            continue;
        }
        for f in list.split(|&b| b == b',') {
            if !flags.set_by_name(f) {
                return Err(format!(
                    "ERR Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(f)
                ));
            }
        }
    }
    Ok((flags, end))
}

/// FUNCTION LOAD metadata: (library name, offset of the code, which starts at the '\n').
pub(crate) fn library_meta(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let parts = match split_args(&code[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("ERR Invalid library metadata".into()),
    };
    let mut name: Option<Vec<u8>> = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(format!(
            "ERR Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if !valid_name(&name) {
        return Err(BAD_NAME.into());
    }
    let engine = &parts[0][2..];
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!(
            "ERR Engine '{}' not found",
            String::from_utf8_lossy(engine)
        ));
    }
    Ok((String::from_utf8_lossy(&name).into_owned(), end))
}

/// Redis 7.0.15 uses this text for bad library and bad function names alike.
pub(crate) const BAD_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// functions.c `functionsVerifyName`.
pub(crate) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split() {
        assert_eq!(
            split_args(b"#!lua  flags=a,b \"x y\" 'z'").unwrap(),
            vec![
                b"#!lua".to_vec(),
                b"flags=a,b".to_vec(),
                b"x y".to_vec(),
                b"z".to_vec()
            ]
        );
        assert!(split_args(b"\"unterminated").is_none());
        assert!(split_args(b"\"a\"b").is_none());
        assert_eq!(split_args(b"\"\\x41\\n\"").unwrap(), vec![b"A\n".to_vec()]);
    }

    #[test]
    fn eval_shebang() {
        let (f, off) = eval_flags(b"return 1").unwrap();
        assert!(f.eval_compat_mode && off == 0);
        let (f, off) = eval_flags(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.no_writes && f.allow_oom && !f.eval_compat_mode);
        assert_eq!(off, 31);
        assert_eq!(
            eval_flags(b"#!lua flags=bad\n").unwrap_err(),
            "ERR Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            eval_flags(b"#!lua name=x\n").unwrap_err(),
            "ERR Unknown lua shebang option: name=x"
        );
        assert_eq!(
            eval_flags(b"#!luax\n").unwrap_err(),
            "ERR Unexpected engine in script shebang: #!luax"
        );
        assert_eq!(
            eval_flags(b"#!lua").unwrap_err(),
            "ERR Invalid script shebang"
        );
        assert!(eval_flags(b"#!lua flags=\n").is_ok());
    }
}
