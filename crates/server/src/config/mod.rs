//! Configuration with Redis's names and syntax: a redis.conf-style file, `--name value`
//! arguments, and CONFIG GET/SET/REWRITE at run time.
//!
//! Each directive is declared once, in `table.rs`: its typed field, syntax and bounds,
//! default, name and aliases, whether CONFIG SET may change it, and the hook its change
//! runs. From that one table the `directives!` macro makes both [`Values`] (a struct with
//! one typed field per directive, so code reads `server.config.get().maxmemory` and a
//! misspelt name does not compile) and [`DIRECTIVES`], which the paths that meet
//! directives by name (files, the command line, CONFIG) walk.
//!
//! Reading: [`Config::get`] returns the current `Values` through an `ArcSwap`, a few
//! uncontended atomic operations, no lock, no copy, nothing parsed. Writing (start-up,
//! CONFIG SET): a copy of the values is changed, checked whole and swapped in, so a
//! multi-directive CONFIG SET is all or nothing and readers never see half of it.
//!
//! Effects: a directive read where it is used (`hz`, `maxclients`) needs nothing more.
//! Components that keep their own copy (the engine's encoding thresholds, the journal's
//! fsync policy, pub/sub limits, the slow log) get it from a [`Hook`] named in the
//! declaration, run at start and then only when one of its directives changed, instead of
//! one function re-pushing everything after any change: the declaration shows what a
//! directive does, and a directive with neither reader nor hook is marked INERT
//! (accepted, kept, shown; docs/compatibility.md lists them).

mod choices;
mod declare;
mod file;
pub mod hooks;
mod special;
mod table;
mod value;

pub use choices::*;
pub use declare::{Directive, HIDDEN, INERT, LIVE, OWN, PROTECTED, SENSITIVE};
pub use file::Load;
pub use hooks::Hook;
pub use special::*;
pub use table::{Values, DIRECTIVES};
pub use value::{memtoull, Kind};

use arc_swap::{ArcSwap, Guard};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Looks a directive up by its name or an alias, in any case. Returns the directive and
/// the name it was found under (Redis reports errors under that name).
pub fn lookup(name: &str) -> Option<(&'static Directive, &'static str)> {
    position(name).map(|(i, under)| (&DIRECTIVES[i], under))
}

/// [`lookup`], with the directive's index in DIRECTIVES.
fn position(name: &str) -> Option<(usize, &'static str)> {
    DIRECTIVES.iter().enumerate().find_map(|(i, d)| {
        std::iter::once(d.name)
            .chain(d.aliases.iter().copied())
            .find(|n| n.eq_ignore_ascii_case(name))
            .map(|n| (i, n))
    })
}

/// Redis's config directives from before 7.0 that a file may still hold: accepted and
/// ignored there (and on the command line), unknown to CONFIG.
const DEPRECATED: &[&str] = &[
    "list-max-ziplist-entries",
    "list-max-ziplist-value",
    "lua-replicate-commands",
];

/// The live configuration.
pub struct Config {
    current: ArcSwap<Values>,
    /// Bumped by every change: hot readers that derive something from the values (a
    /// connection's protocol limits) redo it only when this moved.
    epoch: AtomicU64,
    /// Serialises writers (two CONFIG SETs must not both start from the same copy).
    writer: Mutex<()>,
    /// The file the server was started with (CONFIG REWRITE needs one).
    pub file: Option<String>,
    /// `user` lines (name, then rules): ACL users created at start.
    users: Mutex<Vec<Vec<Vec<u8>>>>,
}

impl Config {
    /// Every directive at its default.
    pub fn new(file: Option<String>) -> Config {
        Config {
            current: ArcSwap::from_pointee(defaults()),
            epoch: AtomicU64::new(0),
            writer: Mutex::new(()),
            file,
            users: Mutex::new(Vec::new()),
        }
    }

    /// The `user` lines loaded: each the user's name and its rules.
    pub fn users(&self) -> Vec<Vec<Vec<u8>>> {
        self.users.lock().clone()
    }

    /// The current values.
    #[inline]
    pub fn get(&self) -> Guard<Arc<Values>> {
        self.current.load()
    }

    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The values as they are now, to put back with `restore`.
    pub fn snapshot(&self) -> Arc<Values> {
        self.current.load_full()
    }

    /// Puts back values taken by `snapshot` (a CONFIG SET whose hook failed).
    pub fn restore(&self, values: Arc<Values>) {
        let _writer = self.writer.lock();
        self.current.store(values);
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    fn store(&self, values: Values) {
        self.current.store(Arc::new(values));
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Starts a load (a config file, then command-line directives), applied by
    /// [`Load::finish`].
    pub fn load(&self) -> Load<'_> {
        Load::new(self)
    }

    /// Loads a config file's text (see [`Load::text`]).
    pub fn load_text(&self, text: &str) -> Result<(), String> {
        let mut load = self.load();
        load.text(text)?;
        load.finish();
        Ok(())
    }

    /// Sets one directive as a config file line would (`at_runtime`: with CONFIG SET's
    /// rules instead). Hooks are not run: that is the caller's business once the server
    /// exists.
    pub fn set(&self, name: &str, value: &str, at_runtime: bool) -> Result<(), String> {
        if at_runtime {
            return self.set_many(&[(name, value)], true).map(|_| ());
        }
        let mut load = self.load();
        load.directive(name, &[value])?;
        load.finish();
        Ok(())
    }

    /// CONFIG SET: every (name, value) pair or none. `local` says the client is on
    /// loopback (`enable-protected-configs local`). Returns the hooks to run, or the
    /// error text (without "ERR ") Redis 7.0 gives.
    pub fn set_many(&self, pairs: &[(&str, &str)], local: bool) -> Result<Vec<Hook>, String> {
        let _writer = self.writer.lock();
        let now = self.get();
        // Checks come first, in argument order; the first failure is the one reported.
        let mut found: Vec<(&Directive, &str)> = Vec::with_capacity(pairs.len());
        for &(name, _) in pairs {
            let failed = |why: &str| {
                format!("CONFIG SET failed (possibly related to argument '{name}') - {why}")
            };
            let Some((d, under)) = lookup(name) else {
                return Err(format!(
                    "Unknown option or number of arguments for CONFIG SET - '{name}'"
                ));
            };
            // Strata's own start-only directives may be "set" to the value they have, so
            // what replays CONFIG GET * through CONFIG SET works; Redis's are refused.
            if !d.has(LIVE) && !d.has(OWN) {
                return Err(failed("can't set immutable config"));
            }
            if d.has(PROTECTED) && !protected_allowed(now.enable_protected_configs, local) {
                return Err(failed("can't set protected config"));
            }
            if found.iter().any(|(f, _)| std::ptr::eq(*f, d)) {
                return Err(failed("duplicate parameter"));
            }
            found.push((d, under));
        }
        let mut next = Values::clone(&now);
        let mut hooks = Vec::new();
        for (&(d, under), &(_, value)) in found.iter().zip(pairs) {
            let words: Vec<&str> = if !d.multi {
                vec![value]
            } else if value.is_empty() {
                Vec::new()
            } else {
                value.split(' ').collect()
            };
            let failed = |e: &str| {
                format!("CONFIG SET failed (possibly related to argument '{under}') - {e}")
            };
            let changed = d.set(&mut next, &words, false).map_err(|e| failed(&e))?;
            if changed && !d.has(LIVE) {
                return Err(failed("can't set immutable config"));
            }
            if changed {
                hooks.extend(d.hook);
            }
        }
        self.store(next);
        Ok(hooks)
    }

    /// CONFIG GET: (name, value) for every directive a pattern matches. A plain name
    /// matches that directive (hidden ones too) and is shown as given; a glob matches
    /// names and aliases, each listed under its own name. Each name is listed once.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let values = self.get();
        let mut out: Vec<(String, String)> = Vec::new();
        let mut add = |shown: &str, d: &Directive| {
            if !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(shown)) {
                out.push((shown.to_string(), d.get(&values)));
            }
        };
        for pattern in patterns {
            if !pattern.iter().any(|c| matches!(c, b'*' | b'?' | b'[')) {
                let name = String::from_utf8_lossy(pattern);
                if let Some((d, _)) = lookup(&name) {
                    add(&name, d);
                }
                continue;
            }
            for d in DIRECTIVES.iter().filter(|d| !d.has(HIDDEN)) {
                for name in std::iter::once(&d.name).chain(d.aliases) {
                    if strata_engine::glob::matches(pattern, name.as_bytes(), true) {
                        add(name, d);
                    }
                }
            }
        }
        out
    }

    /// CONFIG REWRITE's file: every directive whose value is not its default, under its
    /// canonical name, in a form a load reads back to the same value.
    pub fn rewrite_text(&self) -> String {
        let values = self.get();
        let defaults = defaults();
        let mut text = String::from("# Written by Strata's CONFIG REWRITE\n");
        for d in DIRECTIVES {
            let v = d.get(&values);
            if v != d.get(&defaults) {
                text.push_str(&file::line(d, &v));
                text.push('\n');
            }
        }
        text
    }
}

/// A protected feature's setting (`enable-protected-configs`, `enable-debug-command`...)
/// allows a client that is `local` (connected over loopback) or not.
pub fn protected_allowed(setting: ProtectedAction, local: bool) -> bool {
    match setting {
        ProtectedAction::Yes => true,
        ProtectedAction::Local => local,
        ProtectedAction::No => false,
    }
}

/// Every directive at its declared default.
fn defaults() -> Values {
    let mut v = Values::default();
    for d in DIRECTIVES {
        // Declared defaults parse (a test checks each); a failure would leave the type's
        // own default.
        let _ = d.set(&mut v, &d.default_words(), false);
    }
    v
}

#[cfg(test)]
mod tests;
