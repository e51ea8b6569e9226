//! Glob-style matching with Redis's `stringmatchlen` semantics (KEYS, SCAN MATCH, CONFIG GET,
//! and later PSUBSCRIBE): `*`, `?`, `[abc]`, `[^a-z]`, and `\` escapes.

/// Does `s` match `pattern`? `nocase` folds ASCII case.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    // Redis bounds the recursion depth of `*`; the iterative backtracking here needs no bound.
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    while i < s.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class(pattern, p, s[i], nocase) {
                        if matched {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], s[i]) {
                        p += 2;
                        i += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, s[i]) {
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: backtrack to the last star, letting it swallow one more byte.
        match star {
            Some((sp, si)) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches byte `c` against the class starting at `pattern[start] == b'['`.
/// Returns (matched, index after the class). An unterminated class runs to the end, as Redis.
fn class(pattern: &[u8], start: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut p = start + 1;
    let not = pattern.get(p) == Some(&b'^');
    if not {
        p += 1;
    }
    let fold = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = fold(c);
    let mut matched = false;
    loop {
        match pattern.get(p) {
            None => {
                // Redis treats a missing ']' as the end of the pattern.
                p = pattern.len();
                break;
            }
            Some(b']') => {
                p += 1;
                break;
            }
            Some(b'\\') if p + 1 < pattern.len() => {
                if fold(pattern[p + 1]) == c {
                    matched = true;
                }
                p += 2;
            }
            Some(&lo) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                let hi = pattern[p + 2];
                let (mut a, mut b) = (fold(lo), fold(hi));
                if a > b {
                    std::mem::swap(&mut a, &mut b);
                }
                if c >= a && c <= b {
                    matched = true;
                }
                p += 3;
            }
            Some(&b) => {
                if fold(b) == c {
                    matched = true;
                }
                p += 1;
            }
        }
    }
    Some((matched != not, p))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_glob_cases() {
        let m = |p: &str, s: &str| matches(p.as_bytes(), s.as_bytes(), false);
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("h\\*llo", "h*llo"));
        assert!(!m("h\\*llo", "hello"));
        assert!(m("key:*:x", "key:12:x"));
        assert!(!m("key:*:x", "key:12:y"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(matches(b"HELLO", b"hello", true));
    }
}
