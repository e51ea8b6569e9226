//! Config files and command-line directives: loading them (redis.conf syntax: one
//! `name value...` per line, `#` comments, quoted values) and the lines CONFIG REWRITE
//! writes.

use super::{position, Config, Directive, Values, DEPRECATED, DIRECTIVES};

/// A load in progress, applied to a copy of the configuration and stored by `finish`
/// (at start, before anything else changes the configuration). As in redis-server, where
/// command-line directives are appended to the file's text, the first `save` of a load
/// (file or command line) replaces the default rules and later ones add to them.
pub struct Load<'c> {
    config: &'c Config,
    values: Values,
    /// Directives set so far, by index in DIRECTIVES.
    seen: Vec<bool>,
    /// `user` lines: the name and rules of each (ACL users to create at start).
    users: Vec<Vec<Vec<u8>>>,
}

impl<'c> Load<'c> {
    pub(super) fn new(config: &'c Config) -> Load<'c> {
        Load {
            config,
            values: Values::clone(&config.get()),
            seen: vec![false; DIRECTIVES.len()],
            users: config.users(),
        }
    }

    /// One directive and the words after its name, with Redis's error texts.
    pub fn directive(&mut self, name: &str, words: &[&str]) -> Result<(), String> {
        if name.eq_ignore_ascii_case("user") {
            return self.user(words);
        }
        let Some((index, _)) = position(name) else {
            if words.len() == 1 && DEPRECATED.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                return Ok(());
            }
            return Err("Bad directive or wrong number of arguments".into());
        };
        let d = &DIRECTIVES[index];
        let split;
        let words = match words {
            // One word for a multi-word directive (`--save "900 1"`): its words.
            [one] if d.multi && !one.is_empty() => {
                split = split_directive(one).ok_or("Unbalanced quotes in configuration line")?;
                split.iter().map(String::as_str).collect()
            }
            _ if !d.multi && words.len() != 1 => {
                return Err("wrong number of arguments".into());
            }
            _ => words.to_vec(),
        };
        let seen = std::mem::replace(&mut self.seen[index], true);
        d.set(&mut self.values, &words, seen)?;
        Ok(())
    }

    /// `user <name> <rules>...`: kept for start-up, which creates the user (the rules are
    /// checked then, against the command table). One word holding them all
    /// (`--user "alice on"`) is split.
    fn user(&mut self, words: &[&str]) -> Result<(), String> {
        let split;
        let words: Vec<&str> = match words {
            [one] => {
                split = split_directive(one).ok_or("Unbalanced quotes in configuration line")?;
                split.iter().map(String::as_str).collect()
            }
            _ => words.to_vec(),
        };
        let Some(name) = words.first() else {
            return Err("Bad directive or wrong number of arguments".into());
        };
        if self
            .users
            .iter()
            .any(|u| u.first().map(Vec::as_slice) == Some(name.as_bytes()))
        {
            return Err(
                "Duplicate user found. A user can only be defined once in config files".into(),
            );
        }
        self.users
            .push(words.iter().map(|w| w.as_bytes().to_vec()).collect());
        Ok(())
    }

    /// A config file's text. Errors name the line, as Redis does.
    pub fn text(&mut self, text: &str) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |e: &str| format!("line {}: '{line}': {e}", i + 1);
            let words = split_directive(line)
                .ok_or_else(|| at("Unbalanced quotes in configuration line"))?;
            let Some((name, rest)) = words.split_first() else {
                continue;
            };
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            self.directive(name, &rest).map_err(|e| at(&e))?;
        }
        Ok(())
    }

    /// Stores what was loaded.
    pub fn finish(self) {
        *self.config.users.lock() = self.users;
        self.config.store(self.values);
    }
}

/// Splits a config line into words, honouring double quotes (with `\n`, `\t`, `\\` and
/// `\"` escapes) and single quotes. None on unbalanced quotes.
pub fn split_directive(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else {
            return Some(words);
        };
        let mut w = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            loop {
                match chars.next()? {
                    '\\' if c == '"' => match chars.next()? {
                        'n' => w.push('\n'),
                        't' => w.push('\t'),
                        other => w.push(other),
                    },
                    q if q == c => break,
                    other => w.push(other),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        words.push(w);
    }
}

/// A double-quoted word `split_directive` reads back as `s`.
fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '\\' => q.push_str("\\\\"),
            '"' => q.push_str("\\\""),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The config file line for directive `d` holding `value` (as CONFIG GET shows it).
pub(super) fn line(d: &Directive, value: &str) -> String {
    let words: Vec<String> = if d.multi && !value.is_empty() {
        value.split(' ').map(quoted).collect()
    } else {
        vec![quoted(value)]
    };
    format!("{} {}", d.name, words.join(" "))
}
