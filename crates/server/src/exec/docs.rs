//! A command's arguments as COMMAND DOCS lists them, declared as one line of text next to
//! the command (`Command::args`) and parsed here when asked for.
//!
//! The notation, item by item, separated by spaces:
//!
//! - `name` a string argument; `name#int`, `#double`, `#pattern`, `#time` (unix-time),
//!   `#key` (a key of the command's first key spec; `#key1` of its second...; a pattern
//!   that names keys too: `#pattern1`)
//! - `TOKEN` a pure token named as the token in lower case; `name=TOKEN` one named otherwise
//!   (or whose token is no word: `equal==`, `auto_id=*`)
//! - `TOKEN:item` an argument (or group) that follows a token, as `EX:seconds#int`
//! - `name=(a | b | c)` one of; `name=(a b)` a block of arguments in order
//! - `[item]` optional; `item...` may repeat; `item+` repeats with its token
//! - `'ip:port'` a name holding characters the notation uses
//!
//! For example SET is `key#key value [condition=(NX | XX)] [GET] [expiration=(EX:seconds#int
//! | ... | KEEPTTL)]`.

/// One documented argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub name: String,
    pub kind: Kind,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    pub multiple_token: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    String,
    Integer,
    Double,
    /// A glob pattern, and the key spec of the keys it names, if it names keys.
    Pattern(Option<u32>),
    UnixTime,
    /// A key, and the index of the key spec that finds it.
    Key(u32),
    PureToken,
    OneOf(Vec<Arg>),
    Block(Vec<Arg>),
}

impl Kind {
    /// The type's name in COMMAND DOCS.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Integer => "integer",
            Kind::Double => "double",
            Kind::Pattern(_) => "pattern",
            Kind::UnixTime => "unix-time",
            Kind::Key(_) => "key",
            Kind::PureToken => "pure-token",
            Kind::OneOf(_) => "oneof",
            Kind::Block(_) => "block",
        }
    }
}

/// Parses a command's argument line.
pub fn parse(line: &str) -> Result<Vec<Arg>, String> {
    let words = lex(line)?;
    let mut p = Parser { words, at: 0 };
    let args = p.sequence()?;
    if p.at != p.words.len() {
        return Err(format!("unexpected {:?}", p.words[p.at]));
    }
    Ok(args)
}

/// Words and the notation's punctuation; a quoted name is one word, quotes kept.
fn lex(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        if quoted {
            cur.push(c);
            quoted = c != '\'';
            continue;
        }
        match c {
            '\'' => {
                cur.push(c);
                quoted = true;
            }
            '[' | ']' | '(' | ')' | '|' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                out.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if quoted {
        return Err("an unclosed quote".into());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

struct Parser {
    words: Vec<String>,
    at: usize,
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// Splits the repetition marks off the end of a word: (word, multiple, multiple_token).
fn marks(mut w: &str) -> (&str, bool, bool) {
    let (mut multiple, mut multiple_token) = (false, false);
    loop {
        if let Some(rest) = w.strip_suffix("...") {
            multiple = true;
            w = rest;
        } else if let Some(rest) = w.strip_suffix('+') {
            multiple_token = true;
            w = rest;
        } else {
            return (w, multiple, multiple_token);
        }
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(s)
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.words.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Result<String, String> {
        let w = self.words.get(self.at).cloned().ok_or("an early end")?;
        self.at += 1;
        Ok(w)
    }

    fn expect(&mut self, w: &str) -> Result<(), String> {
        match self.next()? {
            got if got == w => Ok(()),
            got => Err(format!("{w:?} expected, {got:?} found")),
        }
    }

    /// Items up to a `)`, `]` or `|` (or the end).
    fn sequence(&mut self) -> Result<Vec<Arg>, String> {
        let mut v = Vec::new();
        while !matches!(self.peek(), None | Some(")" | "]" | "|")) {
            v.push(self.item()?);
        }
        Ok(v)
    }

    fn item(&mut self) -> Result<Arg, String> {
        let mut arg = if self.peek() == Some("[") {
            self.at += 1;
            let mut a = self.inner()?;
            self.expect("]")?;
            a.optional = true;
            a
        } else {
            self.inner()?
        };
        // Marks after a bracket or a group come as a word of their own.
        if let Some(w) = self.peek() {
            if w.starts_with('.') || w.starts_with('+') {
                let (rest, m, mt) = marks(w);
                if !rest.is_empty() {
                    return Err(format!("bad marks {w:?}"));
                }
                arg.multiple |= m;
                arg.multiple_token |= mt;
                self.at += 1;
            }
        }
        Ok(arg)
    }

    fn inner(&mut self) -> Result<Arg, String> {
        let word = self.next()?;
        let (word, multiple, multiple_token) = marks(&word);
        let (token, rest) = match word.split_once(':') {
            Some((t, rest)) if is_token(t) && !word.starts_with('\'') => {
                (Some(t.to_string()), rest)
            }
            _ => (None, word),
        };
        let mut arg = Arg {
            name: String::new(),
            kind: Kind::String,
            token,
            optional: false,
            multiple,
            multiple_token,
        };
        // `name=(` opens a group; `equal==` is a token that is itself `=`.
        if let Some(name) = rest.strip_suffix('=').filter(|_| self.peek() == Some("(")) {
            arg.name = unquote(name).to_string();
            self.expect("(")?;
            let mut alts = vec![self.sequence()?];
            while self.peek() == Some("|") {
                self.at += 1;
                alts.push(self.sequence()?);
            }
            self.expect(")")?;
            arg.kind = if alts.len() > 1 {
                let mut one = Vec::new();
                for alt in alts {
                    match <[Arg; 1]>::try_from(alt) {
                        Ok([a]) => one.push(a),
                        Err(_) => return Err("a choice of several arguments".into()),
                    }
                }
                Kind::OneOf(one)
            } else {
                Kind::Block(alts.pop().unwrap_or_default())
            };
            return Ok(arg);
        }
        if let Some((name, tok)) = rest.split_once('=').filter(|_| !rest.starts_with('\'')) {
            arg.name = unquote(name).to_string();
            arg.token = Some(tok.to_string());
            arg.kind = Kind::PureToken;
            return Ok(arg);
        }
        if is_token(rest) && arg.token.is_none() {
            arg.name = rest.to_ascii_lowercase();
            arg.token = Some(rest.to_string());
            arg.kind = Kind::PureToken;
            return Ok(arg);
        }
        let (name, ty) = match rest.rsplit_once('#') {
            Some((n, t)) if !t.contains('\'') => (n, t),
            _ => (rest, ""),
        };
        arg.name = unquote(name).to_string();
        arg.kind = match ty {
            "" => Kind::String,
            "int" => Kind::Integer,
            "double" => Kind::Double,
            "pattern" => Kind::Pattern(None),
            "time" => Kind::UnixTime,
            t => {
                let index = |n: &str| n.parse().map_err(|_| format!("bad key index {t:?}"));
                if let Some(n) = t.strip_prefix("key") {
                    Kind::Key(if n.is_empty() { 0 } else { index(n)? })
                } else if let Some(n) = t.strip_prefix("pattern") {
                    Kind::Pattern(Some(index(n)?))
                } else {
                    return Err(format!("unknown type {t:?}"));
                }
            }
        };
        Ok(arg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(name: &str, kind: Kind) -> Arg {
        Arg {
            name: name.into(),
            kind,
            token: None,
            optional: false,
            multiple: false,
            multiple_token: false,
        }
    }

    #[test]
    fn the_notation_reads_as_documented() {
        let got = parse("key#key value [condition=(NX | XX)] [EX:seconds#int]... 'ip:port' ch=CH")
            .unwrap();
        let token = |t: &str| Arg {
            token: Some(t.into()),
            ..arg(&t.to_ascii_lowercase(), Kind::PureToken)
        };
        let want = vec![
            arg("key", Kind::Key(0)),
            arg("value", Kind::String),
            Arg {
                optional: true,
                ..arg("condition", Kind::OneOf(vec![token("NX"), token("XX")]))
            },
            Arg {
                token: Some("EX".into()),
                optional: true,
                multiple: true,
                ..arg("seconds", Kind::Integer)
            },
            arg("ip:port", Kind::String),
            Arg {
                token: Some("CH".into()),
                ..arg("ch", Kind::PureToken)
            },
        ];
        assert_eq!(got, want);
        let block =
            parse("LIMIT:limit=(offset#int count#int) dest#key1 [GET:pattern#pattern1]...+")
                .unwrap();
        assert_eq!(block[0].token.as_deref(), Some("LIMIT"));
        assert!(matches!(&block[0].kind, Kind::Block(v) if v.len() == 2));
        assert_eq!(block[1].kind, Kind::Key(1));
        assert!(block[2].optional && block[2].multiple && block[2].multiple_token);
        assert_eq!(block[2].kind, Kind::Pattern(Some(1)));
        let eq = parse("op=(equal== | approximately=~)").unwrap();
        let Kind::OneOf(alts) = &eq[0].kind else {
            panic!("{eq:?}")
        };
        assert_eq!(alts[0].token.as_deref(), Some("="));
        assert_eq!(alts[1].token.as_deref(), Some("~"));
    }

    #[test]
    fn bad_lines_are_refused() {
        for bad in ["x=(a", "[x", "'x", "x#bogus", "x=(a b | c)", "a ]"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    /// Every declared argument line parses (COMMAND DOCS would list nothing otherwise).
    #[test]
    fn every_declaration_parses() {
        let table = crate::exec::table::Table::new(crate::commands::FAMILIES);
        for (id, cmd) in table.commands.iter().enumerate() {
            if let Err(e) = parse(cmd.args) {
                panic!("{}: {e}", table.fullnames[id]);
            }
        }
    }
}
