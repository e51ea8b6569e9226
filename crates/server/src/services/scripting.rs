//! The scripts service: the shared registry of script bodies and function libraries, one
//! Lua state per worker thread (strata-scripting) kept in step with it, and the scripts
//! running now (SCRIPT KILL, FUNCTION STATS, -BUSY). Running a script is the request
//! path's business (`exec::script`).

use crate::exec::command::CmdError;
use crate::tick::Tick;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use strata_scripting::{LibraryInfo, Lua};

/// A loaded function library: its code (every thread loads it into its own state) and what
/// FUNCTION LOAD learnt from it.
#[derive(Clone)]
pub struct Library {
    pub code: Bytes,
    pub info: LibraryInfo,
}

/// How FUNCTION RESTORE treats the libraries already loaded: APPEND refuses a name
/// taken, REPLACE swaps libraries of the same name, FLUSH drops them all first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Append,
    Replace,
    Flush,
}

/// A script or function running now (SCRIPT KILL, FUNCTION STATS, -BUSY).
pub struct Running {
    pub id: u64,
    pub name: String,
    pub argv: Vec<Bytes>,
    pub eval: bool,
    pub started: Tick,
    pub wrote: Arc<AtomicBool>,
    pub kill: Arc<AtomicBool>,
    /// Past `busy-reply-threshold`: other clients get -BUSY.
    pub busy: Arc<AtomicBool>,
}

#[derive(Default)]
pub struct Scripts {
    /// EVAL bodies by sha1, for EVALSHA and SCRIPT EXISTS.
    bodies: RwLock<HashMap<String, Bytes>>,
    /// Bumped by SCRIPT FLUSH: threads drop their compiled scripts.
    scripts_version: AtomicU64,
    /// Library name -> library. Sorted, as FUNCTION LIST is stable then.
    pub libraries: RwLock<BTreeMap<String, Library>>,
    /// Bumped by every change to `libraries`: threads reload them.
    functions_version: AtomicU64,
    pub running: Mutex<Vec<Running>>,
    pub(crate) next_id: AtomicU64,
    /// Some script is past the busy threshold (one relaxed load per command otherwise).
    pub busy: AtomicBool,
    /// `busy-reply-threshold` in ms, pushed here by CONFIG SET (read once per script).
    pub busy_threshold_ms: AtomicU64,
}

thread_local! {
    /// This thread's Lua state and the registry versions it reflects.
    static LUA: RefCell<Option<(Lua, u64, u64)>> = const { RefCell::new(None) };
}

impl Scripts {
    pub fn body(&self, sha: &str) -> Option<Bytes> {
        self.bodies.read().get(sha).cloned()
    }

    /// EVAL scripts remembered (INFO number_of_cached_scripts).
    pub fn cached(&self) -> usize {
        self.bodies.read().len()
    }

    pub fn has(&self, sha: &str) -> bool {
        self.bodies.read().contains_key(sha)
    }

    pub fn remember(&self, sha: String, body: Bytes) {
        // A read lock first: EVAL of a known script (the common case) takes no write lock.
        // A copy is kept: `body` is a slice of the client's input buffer, which it would
        // otherwise keep whole.
        if !self.has(&sha) {
            self.bodies
                .write()
                .entry(sha)
                .or_insert_with(|| Bytes::copy_from_slice(&body));
        }
    }

    pub fn flush(&self) {
        self.bodies.write().clear();
        self.scripts_version.fetch_add(1, Ordering::SeqCst);
    }

    /// Validates library `code` in a fresh state and adds it to the registry (`replace`
    /// swaps a library of the same name). Every thread reloads the libraries on its next
    /// call. The error is the reply Redis gives (FUNCTION LOAD, loading a dump).
    pub fn load_library(&self, code: Bytes, replace: bool) -> Result<String, String> {
        let mut libs = self.libraries.write();
        // A fresh state holding every other library checks name clashes exactly as Redis.
        let mut lua = Lua::new();
        let name_hint = library_name(&code);
        for (n, l) in libs.iter() {
            if replace && Some(n.as_str()) == name_hint.as_deref() {
                continue;
            }
            let _ = lua.load_library(&l.code);
        }
        let info = lua.load_library(&code)?;
        if libs.contains_key(&info.name) && !replace {
            return Err(format!("ERR Library '{}' already exists", info.name));
        }
        let name = info.name.clone();
        libs.insert(name.clone(), Library { code, info });
        drop(libs);
        self.functions_changed();
        Ok(name)
    }

    /// FUNCTION RESTORE: the libraries of `codes` (checked together in a fresh state),
    /// joined to the loaded ones by `policy`, all or none. The error is Redis's reply.
    pub fn restore_libraries(
        &self,
        codes: Vec<Bytes>,
        policy: RestorePolicy,
    ) -> Result<(), String> {
        let mut fresh = Lua::new();
        let mut new = Vec::with_capacity(codes.len());
        for code in codes {
            let info = fresh.load_library(&code)?;
            new.push(Library { code, info });
        }
        let mut libs = self.libraries.write();
        let mut next: BTreeMap<String, Library> = match policy {
            RestorePolicy::Flush => BTreeMap::new(),
            RestorePolicy::Append => {
                if let Some(l) = new.iter().find(|l| libs.contains_key(&l.info.name)) {
                    return Err(format!("ERR Library {} already exists", l.info.name));
                }
                libs.clone()
            }
            RestorePolicy::Replace => libs
                .iter()
                .filter(|(n, _)| !new.iter().any(|l| &l.info.name == *n))
                .map(|(n, l)| (n.clone(), l.clone()))
                .collect(),
        };
        let kept: std::collections::HashSet<&str> = next
            .values()
            .flat_map(|l| l.info.functions.iter().map(|f| f.name.as_str()))
            .collect();
        let clash = new
            .iter()
            .flat_map(|l| &l.info.functions)
            .find(|f| kept.contains(f.name.as_str()));
        if let Some(f) = clash {
            return Err(format!("ERR Function {} already exists", f.name));
        }
        next.extend(new.into_iter().map(|l| (l.info.name.clone(), l)));
        *libs = next;
        drop(libs);
        self.functions_changed();
        Ok(())
    }

    pub fn functions_changed(&self) {
        self.functions_version.fetch_add(1, Ordering::SeqCst);
    }

    /// The -BUSY error for a client arriving while a script is busy.
    #[cold]
    pub fn busy_error(&self) -> CmdError {
        let eval = self
            .running
            .lock()
            .iter()
            .find(|r| r.busy.load(Ordering::Relaxed))
            .is_none_or(|r| r.eval);
        CmdError::Static(if eval {
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        } else {
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        })
    }

    pub(crate) fn refresh_busy(&self) {
        let any = self
            .running
            .lock()
            .iter()
            .any(|r| r.busy.load(Ordering::Relaxed));
        self.busy.store(any, Ordering::Relaxed);
    }
}

/// The library name of a `#!lua name=<lib>` shebang, if it parses.
fn library_name(code: &[u8]) -> Option<String> {
    let line = code.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    line.strip_prefix("#!")?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("name="))
        .map(str::to_string)
}

/// Runs `f` with this thread's Lua state, first catching up with SCRIPT FLUSH and library
/// changes made on any thread.
pub fn with_lua<R>(s: &Scripts, f: impl FnOnce(&mut Lua) -> R) -> R {
    let fv = s.functions_version.load(Ordering::SeqCst);
    let sv = s.scripts_version.load(Ordering::SeqCst);
    LUA.with_borrow_mut(|slot| {
        let stale = slot
            .as_ref()
            .is_none_or(|(_, f2, s2)| *f2 != fv || *s2 != sv);
        if stale {
            let mut lua = Lua::new();
            for lib in s.libraries.read().values() {
                if let Err(e) = lua.load_library(&lib.code) {
                    tracing::warn!("reloading library {}: {e}", lib.info.name);
                }
            }
            *slot = Some((lua, fv, sv));
        }
        match slot {
            Some((lua, ..)) => f(lua),
            None => unreachable!("set above"),
        }
    })
}

/// What to run: an EVAL body by its sha1 (the body: None once this thread compiled it) or
/// a function.
pub enum Target<'a> {
    Eval(&'a str, Option<&'a [u8]>),
    Function(&'a str),
}

/// SCRIPT KILL (`eval`) / FUNCTION KILL: Redis's scriptKill.
pub fn kill(scripts: &Scripts, eval: bool) -> Result<(), CmdError> {
    let running = scripts.running.lock();
    let Some(r) = running.iter().find(|r| r.busy.load(Ordering::Relaxed)) else {
        return Err(CmdError::Static(
            "NOTBUSY No scripts in execution right now.",
        ));
    };
    if r.wrote.load(Ordering::Relaxed) {
        return Err(CmdError::Static("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."));
    }
    if eval != r.eval {
        drop(running);
        return Err(scripts.busy_error());
    }
    r.kill.store(true, Ordering::Relaxed);
    Ok(())
}
