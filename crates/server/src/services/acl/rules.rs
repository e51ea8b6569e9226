//! The words ACL rules are made of: what they are applied with ([`Env`]), their errors
//! with Redis's texts, and how selector rules spread over several words are put back
//! together.

use crate::exec::table::Table;
use bytes::Bytes;

/// What rules are applied against: the command table, and whether new selectors get
/// every channel (`acl-pubsub-default allchannels`).
pub struct Env<'a> {
    pub table: &'a Table,
    pub pubsub_all: bool,
}

/// A rule that can't be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// Not a rule, or a bad pattern.
    Syntax,
    /// No such command or category.
    Unknown,
    /// A key pattern after `allkeys`.
    KeysAfterAll,
    /// A channel pattern after `allchannels`.
    ChannelsAfterAll,
    /// `<pass` or `!hash` of a password the user does not have.
    NoSuchPassword,
    /// `#hash` or `!hash` that is not 64 lowercase hex digits.
    BadHash,
    /// A user defined twice in the configuration.
    Duplicate,
    /// `+container|sub|arg`.
    FirstArgOfSubcommand,
}

impl RuleError {
    /// Redis's description (ACLSetUserStringError).
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::Duplicate => {
                "Duplicate user found. A user can only be defined once in config files"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// Joins a selector written over several words (`(+get` `~k)`) back into one
/// (`(+get ~k)`), as Redis accepts it in ACL SETUSER, config files and ACL files. On an
/// opening parenthesis never closed, returns the index of the word that opened it.
pub fn merge_selectors(words: &[Bytes]) -> Result<Vec<Bytes>, usize> {
    let mut out = Vec::with_capacity(words.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, w) in words.iter().enumerate() {
        if let Some((_, sel)) = &mut open {
            sel.push(b' ');
            sel.extend_from_slice(w);
            if w.last() == Some(&b')') {
                if let Some((_, sel)) = open.take() {
                    out.push(Bytes::from(sel));
                }
            }
            continue;
        }
        if w.first() == Some(&b'(') && w.last() != Some(&b')') {
            open = Some((i, w.to_vec()));
            continue;
        }
        out.push(w.clone());
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(out),
    }
}

/// Splits a selector's inside into rules, with Redis's argument quoting: "double quotes"
/// (with \n \r \t \b \a \\ \" and \xHH escapes) and 'single quotes' (with \'). None on
/// unbalanced quotes, or a closing quote not followed by a space. A NUL outside quotes
/// ends the text, as it ends Redis's C string.
pub fn split_args(s: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == s.len() || s[i] == 0 {
            return Some(out);
        }
        let mut word = Vec::new();
        let mut quote: Option<u8> = None;
        loop {
            let Some(&c) = s.get(i) else {
                if quote.is_some() {
                    return None;
                }
                break;
            };
            match quote {
                Some(b'"') => match c {
                    b'\\'
                        if s.get(i + 1) == Some(&b'x')
                            && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
                            && s.get(i + 3).is_some_and(u8::is_ascii_hexdigit) =>
                    {
                        let hex = std::str::from_utf8(&s[i + 2..i + 4]).ok()?;
                        word.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 3;
                    }
                    b'\\' if i + 1 < s.len() => {
                        i += 1;
                        word.push(match s[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    b'"' => {
                        if s.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    _ => word.push(c),
                },
                Some(_) => match c {
                    b'\\' if s.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        word.push(b'\'');
                    }
                    b'\'' => {
                        if s.get(i + 1).is_some_and(|n| !n.is_ascii_whitespace()) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    _ => word.push(c),
                },
                None => match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' | b'\'' => quote = Some(c),
                    _ => word.push(c),
                },
            }
            i += 1;
        }
        out.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<Bytes> {
        w.iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    #[test]
    fn selectors_spread_over_words_are_joined() {
        let merged = merge_selectors(&words(&["on", "(~a", "+get", ")", "(+set)", "~b"])).unwrap();
        assert_eq!(merged, words(&["on", "(~a +get )", "(+set)", "~b"]));
        assert_eq!(merge_selectors(&words(&["on", "(~a", "+get"])), Err(1));
    }

    #[test]
    fn arguments_split_with_quotes() {
        let split = |s: &str| split_args(s.as_bytes());
        assert_eq!(
            split(" ~a  \"b c\" 'd\\'e' \"\\x41\\n\" "),
            Some(vec![
                b"~a".to_vec(),
                b"b c".to_vec(),
                b"d'e".to_vec(),
                b"A\n".to_vec()
            ])
        );
        assert_eq!(split("\"open"), None);
        assert_eq!(split("a\0b c"), Some(vec![b"a".to_vec()]));
        assert_eq!(split("\"a\"b"), None);
        assert_eq!(split(""), Some(vec![]));
    }
}
