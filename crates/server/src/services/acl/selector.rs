//! A selector: one set of permissions of a user (commands, key patterns, channel
//! patterns). Every user has a root selector; `(...)` rules add more, and a command is
//! allowed when any one selector allows it whole.

use super::rules::{Env, RuleError};
use crate::exec::command::{acl_category_bit, flags, ks, Channels, KeyShape};
use crate::exec::table::Table;
use bytes::Bytes;

/// A key pattern may be read from.
pub const READ: u8 = 1;
/// A key pattern may be written to.
pub const WRITE: u8 = 2;
const READ_WRITE: u8 = READ | WRITE;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Bytes,
    /// READ, WRITE or both.
    pub perm: u8,
    /// `Some(n)` when the pattern is n plain bytes and a final `*` (`~app:*`, the usual
    /// form): a key matches when it starts with them, with no glob to run per key.
    prefix: Option<usize>,
    /// A prefix of at most 8 bytes as a little-endian word, and the mask of its bytes:
    /// a key of 8 bytes or more is matched with one load and compare (a restricted
    /// user's every key goes through `matches`; the byte comparison cost 60 instructions).
    word: Option<(u64, u64)>,
}

impl KeyPattern {
    pub(super) fn new(pattern: &[u8], perm: u8) -> KeyPattern {
        let prefix = pattern.split_last().and_then(|(last, plain)| {
            let special = |c: &u8| matches!(c, b'*' | b'?' | b'[' | b'\\');
            (*last == b'*' && !plain.iter().any(special)).then_some(plain.len())
        });
        let word = prefix.filter(|&n| n <= 8).map(|n| {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&pattern[..n]);
            let mask = if n == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * n)) - 1
            };
            (u64::from_le_bytes(w), mask)
        });
        KeyPattern {
            pattern: Bytes::copy_from_slice(pattern),
            perm,
            prefix,
            word,
        }
    }

    /// Does `key` match the pattern (as a glob)?
    #[inline]
    pub fn matches(&self, key: &[u8]) -> bool {
        if let (Some((word, mask)), Some(head)) = (self.word, key.first_chunk::<8>()) {
            return (u64::from_le_bytes(*head) ^ word) & mask == 0;
        }
        match self.prefix {
            Some(n) => key.starts_with(&self.pattern[..n]),
            None => strata_engine::glob::matches(&self.pattern, key, false),
        }
    }

    /// As rules spell it: `~p`, `%R~p`, `%W~p`.
    pub fn describe(&self) -> String {
        let prefix = match self.perm {
            READ => "%R~",
            WRITE => "%W~",
            _ => "~",
        };
        format!("{prefix}{}", String::from_utf8_lossy(&self.pattern))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub all_keys: bool,
    pub all_channels: bool,
    /// Every command allowed, none taken away since (the check skips the bitmap).
    pub all_commands: bool,
    /// Set by `+@all`/`allcommands`, cleared only by `-@all`/`nocommands`: a description
    /// of the commands starts from `+@all` (subtracting) or `-@all` (adding).
    pub future: bool,
    /// One bit per command id of the table.
    commands: Vec<u64>,
    /// First arguments allowed for a command otherwise denied (`+select|0`), by id.
    firstargs: Vec<(usize, Vec<Bytes>)>,
    pub keys: Vec<KeyPattern>,
    pub channels: Vec<Bytes>,
}

/// Why a selector (or a user) denies a call. Ordered as Redis ranks them when several
/// selectors deny for different reasons: a channel over a key over the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    /// The argv position of the first key no pattern allows.
    Key(usize),
    /// The argv position of the first channel no pattern allows.
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (0, 0),
            Denied::Key(i) => (1, i),
            Denied::Channel(i) => (2, i),
        }
    }

    /// The more relevant of two denials: the higher reason, then the later argument.
    pub fn max(self, other: Denied) -> Denied {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// The permissions a key's spec flags ask for, as Redis's ACLSelectorCheckKey reads
/// them: using the value's data needs read, changing it write; a key spec with neither
/// (EXISTS, TYPE: RO alone) is allowed by any pattern.
fn needed(spec: u16) -> u8 {
    let mut p = 0;
    if spec & ks::ACCESS != 0 {
        p |= READ;
    }
    if spec & (ks::INSERT | ks::DELETE | ks::UPDATE) != 0 {
        p |= WRITE;
    }
    p
}

impl Selector {
    /// An empty selector (no command, key or channel), with `acl-pubsub-default`'s
    /// channels.
    pub fn new(env: &Env<'_>) -> Selector {
        Selector {
            all_channels: env.pubsub_all,
            commands: vec![0; env.table.commands.len().div_ceil(64)],
            ..Selector::default()
        }
    }

    /// May do everything: every command, key and channel.
    pub fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    pub fn bit(&self, id: usize) -> bool {
        self.commands
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.commands.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
            }
        }
        if !on {
            self.all_commands = false;
        }
    }

    /// Grants the same commands, keys and channels (see `Rules::same_permissions`).
    pub fn same_permissions(&self, other: &Selector) -> bool {
        self.all_keys == other.all_keys
            && self.all_channels == other.all_channels
            && self.future == other.future
            && self.commands == other.commands
            && self.live_firstargs() == other.live_firstargs()
            && self.keys == other.keys
            && self.channels == other.channels
    }

    /// First arguments of commands otherwise denied: those of an allowed command change
    /// nothing (and are not described).
    fn live_firstargs(&self) -> Vec<&(usize, Vec<Bytes>)> {
        self.firstargs
            .iter()
            .filter(|(id, _)| !self.bit(*id))
            .collect()
    }

    /// The command bitmaps are equal.
    pub fn same_commands(&self, other: &Selector) -> bool {
        self.commands == other.commands
    }

    pub fn firstargs(&self, id: usize) -> &[Bytes] {
        self.firstargs
            .iter()
            .find(|(i, _)| *i == id)
            .map_or(&[], |(_, a)| a.as_slice())
    }

    /// Allows or denies command `id`; a container takes its subcommands along.
    pub fn change(&mut self, table: &Table, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.firstargs.retain(|(i, _)| *i != id);
        for sub in table.subcommand_ids(id) {
            self.set_bit(sub, allow);
        }
    }

    /// `+@cat` / `-@cat`: every command of the category (a container in it takes all its
    /// subcommands), then the subcommands in it.
    pub fn change_category(&mut self, table: &Table, category: u32, allow: bool) {
        for id in table.top_level() {
            if table.categories(id) & category != 0 {
                self.change(table, id, allow);
            }
            for sub in table.subcommand_ids(id) {
                if table.categories(sub) & category != 0 {
                    self.change(table, sub, allow);
                }
            }
        }
    }

    /// Commands of `category` this selector allows and denies.
    pub fn count_category(&self, table: &Table, category: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for id in 0..table.commands.len() {
            if table.categories(id) & category != 0 {
                if self.bit(id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// A selector with no permission and a bitmap as wide as `other`'s.
    pub fn blank_like(other: &Selector) -> Selector {
        Selector {
            commands: vec![0; other.commands.len()],
            ..Selector::default()
        }
    }

    /// `+@all` (allow) or `-@all`.
    pub fn set_all(&mut self, allow: bool) {
        let fill = if allow { u64::MAX } else { 0 };
        self.commands.iter_mut().for_each(|w| *w = fill);
        self.all_commands = allow;
        self.future = allow;
        self.firstargs.clear();
    }

    /// Applies one selector rule (key, channel and command rules).
    pub fn apply(&mut self, env: &Env<'_>, op: &[u8]) -> Result<(), RuleError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        if is("allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            self.add_key_pattern(op)?;
        } else if op[0] == b'&' {
            if self.all_channels {
                return Err(RuleError::ChannelsAfterAll);
            }
            let pattern = &op[1..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pattern) {
                self.channels.push(Bytes::copy_from_slice(pattern));
            }
            self.all_channels = false;
        } else if op.len() > 1 && op[1] == b'@' && (op[0] == b'+' || op[0] == b'-') {
            let category = acl_category_bit(&op[2..]).ok_or(RuleError::Unknown)?;
            self.change_category(env.table, category, op[0] == b'+');
        } else if op[0] == b'+' {
            self.allow_command(env.table, &op[1..])?;
        } else if op[0] == b'-' {
            let id = env
                .table
                .lookup_rule_name(&op[1..])
                .ok_or(RuleError::Unknown)?;
            self.change(env.table, id, false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, or `%R~`, `%W~`, `%RW~` for read or write only.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeysAfterAll);
        }
        let (perm, start) = if op[0] == b'%' {
            let mut perm = 0;
            let mut i = 1;
            while i < op.len() {
                match op[i].to_ascii_uppercase() {
                    b'R' if perm & READ == 0 => perm |= READ,
                    b'W' if perm & WRITE == 0 => perm |= WRITE,
                    b'~' => {
                        i += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                i += 1;
            }
            // `%` alone grants nothing: a syntax error, as redis-server answers.
            if perm == 0 {
                return Err(RuleError::Syntax);
            }
            (perm, i)
        } else {
            (READ_WRITE, 1)
        };
        let pattern = op.get(start..).unwrap_or_default();
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => k.perm |= perm,
            None => self.keys.push(KeyPattern::new(pattern, perm)),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+name`, `+container|sub`, or `+name|firstarg` for a command without subcommands.
    fn allow_command(&mut self, table: &Table, name: &[u8]) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let id = table.lookup_rule_name(name).ok_or(RuleError::Unknown)?;
            self.change(table, id, true);
            return Ok(());
        };
        let (base, sub) = (&name[..bar], &name[bar + 1..]);
        let id = table.lookup_rule_name(base).ok_or(RuleError::Unknown)?;
        if table.parent(id).is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !table.commands[id].subcommands.is_empty() {
            match table.lookup_rule_name(name) {
                Some(sid) => {
                    self.change(table, sid, true);
                    return Ok(());
                }
                // DEBUG is one command to Redis: `+debug|x` allows its first argument x.
                None if table.commands[id].has(flags::OPAQUE) => {}
                None => return Err(RuleError::Unknown),
            }
        }
        // Redis allows this misuse (deprecated): one first argument of a denied command.
        tracing::warn!(
            "Deprecation warning: Allowing a first arg of an otherwise blocked command is a misuse of ACL and may get disabled in the future (offender: +{})",
            String::from_utf8_lossy(name)
        );
        match self.firstargs.iter_mut().find(|(i, _)| *i == id) {
            Some((_, args)) => {
                if !args.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                    args.push(Bytes::copy_from_slice(sub));
                }
            }
            None => self.firstargs.push((id, vec![Bytes::copy_from_slice(sub)])),
        }
        Ok(())
    }

    /// May this selector run command `id` with `argv`? The command, then its keys, then
    /// its channels. A restricted user's every command runs this: the usual case (an
    /// allowed command, one key at a fixed place, no channels) takes no call. The rest is
    /// in helpers, so this stays small enough to inline into the check of the user (a
    /// call cost 20 instructions of register saving).
    #[inline(always)]
    pub fn check(&self, table: &Table, id: usize, argv: &[Bytes]) -> Result<(), Denied> {
        if !self.bit(id) && !self.all_commands && !self.allowed_unlisted(table, id, argv) {
            return Err(Denied::Command);
        }
        if !self.all_keys {
            match table.key_shape(id) {
                KeyShape::None => {}
                KeyShape::One(k) => {
                    if let Some(key) = argv.get(k.pos) {
                        if !self.key_allowed(key, needed(k.flags)) {
                            return Err(Denied::Key(k.pos));
                        }
                    }
                }
                // Allowed whatever the command does to it, the key needs no closer look.
                KeyShape::OneVarying(pos) => {
                    if !argv
                        .get(pos)
                        .is_none_or(|k| self.key_allowed(k, READ_WRITE))
                    {
                        self.check_keys(table, id, argv)?;
                    }
                }
                KeyShape::Walk => self.check_keys(table, id, argv)?,
            }
        }
        if !self.all_channels && table.commands[id].channels != Channels::None {
            return self.check_channels(table, id, argv);
        }
        Ok(())
    }

    /// A command outside the selector's bitmap may still run: one that needs no
    /// authentication, or one allowed with its first argument (`+config|get` style).
    #[cold]
    #[inline(never)]
    fn allowed_unlisted(&self, table: &Table, id: usize, argv: &[Bytes]) -> bool {
        if table.commands[id].has(flags::NO_AUTH) {
            return true;
        }
        let first = argv.get(1);
        first.is_some_and(|f| self.firstargs(id).iter().any(|a| a.eq_ignore_ascii_case(f)))
    }

    /// The keys of a command whose keys' places depend on its arguments.
    #[inline(never)]
    fn check_keys(&self, table: &Table, id: usize, argv: &[Bytes]) -> Result<(), Denied> {
        let mut denied = None;
        table.commands[id].for_each_key_and_flags(argv, |k| {
            let Some(key) = argv.get(k.pos) else { return };
            if denied.is_none() && !self.key_allowed(key, needed(k.flags)) {
                denied = Some(k.pos);
            }
        });
        denied.map_or(Ok(()), |pos| Err(Denied::Key(pos)))
    }

    #[cold]
    #[inline(never)]
    fn check_channels(&self, table: &Table, id: usize, argv: &[Bytes]) -> Result<(), Denied> {
        let (names, patterns) = match table.commands[id].channels {
            Channels::None => return Ok(()),
            Channels::Publish => (argv.get(1..2).unwrap_or_default(), false),
            Channels::Subscribe => (argv.get(1..).unwrap_or_default(), false),
            Channels::Patterns => (argv.get(1..).unwrap_or_default(), true),
        };
        for (i, name) in names.iter().enumerate() {
            if !channel_allowed(&self.channels, name, patterns) {
                return Err(Denied::Channel(i + 1));
            }
        }
        Ok(())
    }

    /// A key pattern with (at least) `perm` matches `key`.
    #[inline(always)]
    pub fn key_allowed(&self, key: &[u8], perm: u8) -> bool {
        if self.all_keys {
            return true;
        }
        // A plain loop: `Iterator::any` here was a call of its own on every check.
        for p in &self.keys {
            if p.perm & perm == perm && p.matches(key) {
                return true;
            }
        }
        false
    }

    /// Some pattern with `perm` covers every key (SORT's BY and GET need it).
    pub fn all_keys_with(&self, perm: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|p| p.perm & perm == perm && p.pattern.as_ref() == b"*")
    }

    /// The key patterns as GETUSER shows them.
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let v: Vec<String> = self.keys.iter().map(KeyPattern::describe).collect();
        v.join(" ")
    }

    /// The channel patterns as GETUSER shows them.
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let v: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        v.join(" ")
    }

    /// The whole selector as rules (ACL LIST): keys, channels, commands.
    pub fn describe(&self, table: &Table) -> String {
        let mut s = String::new();
        if self.all_keys {
            s.push_str("~* ");
        } else {
            for k in &self.keys {
                s.push_str(&k.describe());
                s.push(' ');
            }
        }
        if self.all_channels {
            s.push_str("&* ");
        } else {
            s.push_str("resetchannels ");
            for c in &self.channels {
                s.push('&');
                s.push_str(&String::from_utf8_lossy(c));
                s.push(' ');
            }
        }
        s.push_str(&super::describe::command_rules(self, table));
        s
    }
}

/// A channel (or, with `pattern`, a PSUBSCRIBE pattern) against channel patterns: a
/// channel matches them as globs, a pattern only one spelled the same.
pub fn channel_allowed(allowed: &[Bytes], name: &[u8], pattern: bool) -> bool {
    allowed.iter().any(|p| {
        if pattern {
            p.as_ref() == name
        } else {
            strata_engine::glob::matches(p, name, false)
        }
    })
}

/// Usernames and patterns may hold neither white space nor NUL (Redis's rule, which
/// keeps rules one word each).
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}
