//! Inline request splitting, as Redis's `sdssplitargs`.

use bytes::Bytes;

/// One argument of an inline request: a plain slice of the line, or unescaped bytes.
pub(super) enum Token {
    Slice(usize, usize),
    Owned(Vec<u8>),
}

impl Token {
    pub(super) fn into_bytes(self, frame: &Bytes) -> Bytes {
        match self {
            Token::Slice(s, e) => frame.slice(s..e),
            Token::Owned(v) => Bytes::from(v),
        }
    }
}

/// C `isspace` in the C locale.
#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits `line` (which holds no NUL and no `\n`) into arguments; `None` on unbalanced
/// quotes. Reading past the end yields 0, like the C string's terminator.
pub(super) fn split_args(line: &[u8]) -> Option<Vec<Token>> {
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(out);
        }
        let start = i;
        // Unquoted tokens stay slices; a quote switches to an owned copy, and the token
        // ends at the closing quote.
        let mut owned: Option<Vec<u8>> = None;
        let (mut inq, mut insq) = (false, false);
        loop {
            let c = at(i);
            let mut done = false;
            if inq {
                let cur = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && at(i + 1) == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(at(i + 2)), hex_val(at(i + 3))) {
                        cur.push(h * 16 + l);
                        i += 3;
                    } else {
                        cur.push(b'x');
                        i += 1;
                    }
                } else if c == b'\\' && at(i + 1) != 0 {
                    i += 1;
                    cur.push(match at(i) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(i + 1) != 0 && !is_space(at(i + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else if insq {
                let cur = owned.get_or_insert_with(Vec::new);
                if c == b'\\' && at(i + 1) == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if at(i + 1) != 0 && !is_space(at(i + 1)) {
                        return None;
                    }
                    done = true;
                } else if c == 0 {
                    return None;
                } else {
                    cur.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        out.push(Token::Slice(start, i));
                        done = true;
                    }
                    b'"' | b'\'' => {
                        owned = Some(line[start..i].to_vec());
                        if c == b'"' {
                            inq = true;
                        } else {
                            insq = true;
                        }
                    }
                    _ => {}
                }
            }
            if at(i) != 0 {
                i += 1;
            }
            if done {
                if inq || insq {
                    out.push(Token::Owned(owned.take().unwrap_or_default()));
                }
                break;
            }
        }
    }
}

/// `split_args` with every argument copied out: for splitting a command line outside the
/// protocol (tools, tests).
pub fn split_owned(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let tokens = split_args(line)?;
    Some(
        tokens
            .into_iter()
            .map(|t| match t {
                Token::Slice(s, e) => line[s..e].to_vec(),
                Token::Owned(v) => v,
            })
            .collect(),
    )
}
