//! A user: its name, and its rules (on/off, passwords, selectors) behind one swap, so
//! that ACL SETUSER changes them for the user's connected clients at once.

use super::rules::{merge_selectors, split_args, Env, RuleError};
use super::selector::{Denied, Selector};
use arc_swap::ArcSwap;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A SHA-256 digest of a password (Redis stores and shows passwords only so).
pub type PassHash = [u8; 32];

pub fn hash_password(pass: &[u8]) -> PassHash {
    Sha256::digest(pass).into()
}

/// Lowercase hex, as GETUSER and ACL LIST show a password.
pub fn hex(h: &PassHash) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// `#<hash>`'s hash: exactly 64 lowercase hex digits.
fn parse_hex(s: &[u8]) -> Result<PassHash, RuleError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if s.len() != 64 {
        return Err(RuleError::BadHash);
    }
    let mut h = [0u8; 32];
    for (i, pair) in s.chunks(2).enumerate() {
        match (digit(pair[0]), digit(pair[1])) {
            (Some(a), Some(b)) => h[i] = a << 4 | b,
            _ => return Err(RuleError::BadHash),
        }
    }
    Ok(h)
}

/// Compares two digests in time independent of where they differ.
fn same_hash(a: &PassHash, b: &PassHash) -> bool {
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Everything ACL rules set on a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub enabled: bool,
    /// Any password works.
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)) or `skip-sanitize-payload` (Some(false)).
    pub sanitize: Option<bool>,
    pub passwords: Vec<PassHash>,
    /// The root selector first, then those added with `(...)`.
    pub selectors: Vec<Selector>,
}

impl Rules {
    /// A new user's: off, no password, no permission.
    pub fn new(env: &Env<'_>) -> Rules {
        Rules {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(env)],
        }
    }

    /// A removed user's: off, and no permission at all.
    pub fn revoked() -> Rules {
        Rules {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::default()],
        }
    }

    /// Redis's default user: on, nopass, every command, key and channel.
    pub fn default_user(env: &Env<'_>) -> Rules {
        let mut r = Rules::new(env);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            // These rules always apply.
            let _ = r.apply(env, op.as_bytes());
        }
        r
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    /// Applies one rule (Redis's ACLSetUser).
    pub fn apply(&mut self, env: &Env<'_>, op: &[u8]) -> Result<(), RuleError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if op.is_empty() {
            return Ok(());
        }
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Some(false);
        } else if is("sanitize-payload") {
            self.sanitize = Some(true);
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let h = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                parse_hex(&op[1..])?
            };
            if !self.passwords.contains(&h) {
                self.passwords.push(h);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let h = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                parse_hex(&op[1..])?
            };
            let at = self.passwords.iter().position(|p| *p == h);
            self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
        } else if op[0] == b'(' && op.last() == Some(&b')') {
            let inside = &op[1..op.len() - 1];
            let mut sel = Selector::new(env);
            // Unbalanced quotes inside leave the selector empty, as in redis-server.
            for word in split_args(inside).unwrap_or_default() {
                sel.apply(env, &word)?;
            }
            self.selectors.push(sel);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.passwords.clear();
            self.nopass = false;
            let root = &mut self.selectors[0];
            root.apply(env, b"resetkeys")?;
            root.apply(env, b"resetchannels")?;
            if env.pubsub_all {
                root.apply(env, b"allchannels")?;
            }
            self.enabled = false;
            self.sanitize = Some(true);
            self.selectors.truncate(1);
            self.selectors[0].apply(env, b"-@all")?;
        } else {
            self.selectors[0].apply(env, op)?;
        }
        Ok(())
    }

    /// Applies rules as ACL SETUSER and files give them (selectors may spread over several
    /// words); all or nothing. The error names the rule, as Redis's does.
    pub fn apply_all(&mut self, env: &Env<'_>, words: &[Bytes]) -> Result<(), String> {
        let merged = merge_selectors(words).map_err(|i| {
            format!(
                "Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(&words[i])
            )
        })?;
        let mut next = self.clone();
        for op in &merged {
            next.apply(env, op).map_err(|e| {
                format!(
                    "Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.text()
                )
            })?;
        }
        *self = next;
        Ok(())
    }

    /// Grants exactly what `other` grants, to the same logins: what a description read
    /// back (ACL SAVE then LOAD) must give. `all_commands` is left out: it only says
    /// whether the check may skip the bitmap.
    pub fn same_permissions(&self, other: &Rules) -> bool {
        self.enabled == other.enabled
            && self.nopass == other.nopass
            && self.sanitize == other.sanitize
            && self.passwords == other.passwords
            && self.selectors.len() == other.selectors.len()
            && self
                .selectors
                .iter()
                .zip(&other.selectors)
                .all(|(a, b)| a.same_permissions(b))
    }

    /// May any selector do everything?
    pub fn unrestricted(&self) -> bool {
        self.selectors.iter().any(Selector::unrestricted)
    }

    /// Can log in with `pass`.
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let h = hash_password(pass);
        // Every stored hash is compared, so the time says nothing of which one matched.
        self.passwords
            .iter()
            .fold(false, |ok, p| same_hash(p, &h) | ok)
    }

    /// The rules that rebuild this user (ACL LIST, ACL SAVE, CONFIG REWRITE).
    pub fn describe(&self, table: &crate::exec::table::Table) -> String {
        let mut s = String::from(if self.enabled { "on " } else { "off " });
        if self.nopass {
            s.push_str("nopass ");
        }
        match self.sanitize {
            Some(false) => s.push_str("skip-sanitize-payload "),
            Some(true) => s.push_str("sanitize-payload "),
            None => {}
        }
        for p in &self.passwords {
            s.push('#');
            s.push_str(&hex(p));
            s.push(' ');
        }
        for (i, sel) in self.selectors.iter().enumerate() {
            if i == 0 {
                s.push_str(&sel.describe(table));
            } else {
                s.push_str(&format!(" ({})", sel.describe(table)));
            }
        }
        s
    }

    /// GETUSER's flags, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            v.push("nopass");
        }
        match self.sanitize {
            Some(false) => v.push("skip-sanitize-payload"),
            Some(true) => v.push("sanitize-payload"),
            None => {}
        }
        v
    }
}

/// A user. Clients hold it by `Arc`: the same object for as long as the user exists.
pub struct User {
    pub name: Bytes,
    /// Some selector may do everything: the check is one load of this flag.
    unrestricted: AtomicBool,
    rules: ArcSwap<Rules>,
    /// Changes with every change of the rules; drawn from one counter for all users, so a
    /// connection's copy of one user's rules is never taken for another's.
    version: AtomicU64,
}

static VERSIONS: AtomicU64 = AtomicU64::new(1);

/// A connection's copy of its user's rules, renewed when their version changes: the check
/// of each command then reads one counter that only ACL changes write, instead of taking
/// a reference to rules that every worker thread shares.
#[derive(Default)]
pub struct CachedRules(Option<(u64, Arc<Rules>)>);

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User").field("name", &self.name).finish()
    }
}

impl User {
    pub fn new(name: Bytes, rules: Rules) -> User {
        User {
            name,
            unrestricted: AtomicBool::new(rules.unrestricted()),
            rules: ArcSwap::from_pointee(rules),
            version: AtomicU64::new(VERSIONS.fetch_add(1, Ordering::Relaxed)),
        }
    }

    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Acquire)
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.rules.load_full()
    }

    pub fn set_rules(&self, rules: Rules) {
        let open = rules.unrestricted();
        self.rules.store(Arc::new(rules));
        self.unrestricted.store(open, Ordering::Release);
        // After the store: whoever sees the new version loads the new rules.
        self.version
            .store(VERSIONS.fetch_add(1, Ordering::Relaxed), Ordering::Release);
    }

    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }

    /// May this user run command `id` with `argv`? Any selector allowing it whole allows
    /// it; otherwise the most relevant denial (Redis's ACLCheckAllUserCommandPerm).
    pub fn check(
        &self,
        table: &crate::exec::table::Table,
        id: usize,
        argv: &[Bytes],
    ) -> Result<(), Denied> {
        if self.unrestricted() {
            return Ok(());
        }
        // A guard, not a clone: every worker checks the same user, and a shared
        // reference count would bounce its cache line between them on every command.
        self.rules.load().check(table, id, argv)
    }

    /// [`User::check`] through a connection's copy of the rules.
    #[inline]
    pub fn check_cached(
        &self,
        cache: &mut CachedRules,
        table: &crate::exec::table::Table,
        id: usize,
        argv: &[Bytes],
    ) -> Result<(), Denied> {
        if self.unrestricted() {
            return Ok(());
        }
        let version = self.version.load(Ordering::Acquire);
        let rules = match &mut cache.0 {
            Some((v, rules)) if *v == version => rules,
            slot => &slot.insert((version, self.rules.load_full())).1,
        };
        rules.check(table, id, argv)
    }
}

impl User {
    /// Some selector allows this call and lets it read every key (Redis's
    /// ACLUserCheckCmdWithUnrestrictedKeyAccess, for SORT's BY and GET).
    pub fn may_read_all_keys(
        &self,
        table: &crate::exec::table::Table,
        id: usize,
        argv: &[Bytes],
    ) -> bool {
        if self.unrestricted() {
            return true;
        }
        let rules = self.rules.load();
        rules
            .selectors
            .iter()
            .any(|s| s.check(table, id, argv).is_ok() && s.all_keys_with(super::selector::READ))
    }
}

impl Rules {
    /// See [`User::check`]. Inlined with the selector's check into the admission's: on
    /// a restricted user's every command, calls cost more than the checks.
    #[inline(always)]
    pub fn check(
        &self,
        table: &crate::exec::table::Table,
        id: usize,
        argv: &[Bytes],
    ) -> Result<(), Denied> {
        // Most users have the root selector alone: no loop, and its refusal is the answer.
        if let [root] = self.selectors.as_slice() {
            return root.check(table, id, argv);
        }
        let mut worst = Denied::Command;
        for sel in &self.selectors {
            match sel.check(table, id, argv) {
                Ok(()) => return Ok(()),
                Err(d) => worst = worst.max(d),
            }
        }
        Err(worst)
    }
}
