//! Running Lua scripts and functions inside the server: the shared registry of script
//! bodies and function libraries, one Lua state per worker thread (strata-scripting), and
//! the `Host` through which `redis.call` runs commands.
//!
//! A script runs under one engine session: the shards of its declared keys are locked
//! before it starts and released after its writes reach the journal as one block, so no
//! client sees a state between two of its calls, and scripts on disjoint keys run in
//! parallel on different threads. A call on a key the script did not declare adds that
//! key's shard to the session on the spot (see `Keyspace::extend_session`); the cost is
//! documented in docs/compatibility.md.

use crate::exec::client::Client;
use crate::exec::command::{flags, CmdError};
use crate::exec::effects::LockPlan;
use crate::server::Server;
use crate::services::stats::ThreadStats;
use crate::tick::Tick;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_engine::Keyspace;
use strata_resp::Protocol;
use strata_scripting::{Host, LibraryInfo, Lua};

/// A loaded function library: its code (every thread loads it into its own state) and what
/// FUNCTION LOAD learnt from it.
pub struct Library {
    pub code: Bytes,
    pub info: LibraryInfo,
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
    next_id: AtomicU64,
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

    pub fn has(&self, sha: &str) -> bool {
        self.bodies.read().contains_key(sha)
    }

    pub fn remember(&self, sha: String, body: Bytes) {
        // A read lock first: EVAL of a known script (the common case) takes no write lock.
        if !self.has(&sha) {
            self.bodies.write().entry(sha).or_insert(body);
        }
    }

    pub fn flush(&self) {
        self.bodies.write().clear();
        self.scripts_version.fetch_add(1, Ordering::SeqCst);
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

    fn refresh_busy(&self) {
        let any = self
            .running
            .lock()
            .iter()
            .any(|r| r.busy.load(Ordering::Relaxed));
        self.busy.store(any, Ordering::Relaxed);
    }
}

/// Runs `f` with this thread's Lua state, first catching up with SCRIPT FLUSH and library
/// changes made on any thread.
pub fn with_lua<R>(server: &Server, f: impl FnOnce(&mut Lua) -> R) -> R {
    let s = &server.scripts;
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

/// Runs a script for `client` with `keys` and `args` and returns the reply bytes.
#[allow(clippy::too_many_arguments)]
pub fn run(
    server: &Server,
    client: &mut Client,
    stats: &ThreadStats,
    target: Target<'_>,
    name: &str,
    argv: &[Bytes],
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
) -> Vec<u8> {
    let db = client.db;
    // Declared keys locked up front; inside an EXEC the transaction holds them already.
    let plan = LockPlan::Shards(
        keys.iter()
            .map(|k| server.keyspace.shard_of(db, k))
            .collect(),
    );
    let nested = Keyspace::in_session();
    let session = if nested {
        if let LockPlan::Shards(ids) = &plan {
            server
                .keyspace
                .extend_session(ids, Instant::now() + UNDECLARED_WAIT);
        }
        None
    } else {
        Some(crate::services::snapshot::open_write(
            server, stats, client, plan,
        ))
    };
    let outer = crate::services::persist::Persist::begin_group(client, db);
    let proto = client.proto;
    let client_resp = if proto == Protocol::Resp3 { 3 } else { 2 };
    let key_refs: Vec<&[u8]> = keys.iter().map(|k| k.as_ref()).collect();
    let arg_refs: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
    let threshold = Duration::from_millis(server.scripts.busy_threshold_ms.load(Ordering::Relaxed));
    let (reply, registered) = {
        let now = Tick::now();
        let mut host = ScriptHost {
            server,
            client: &mut *client,
            stats,
            read_only,
            started: now,
            threshold,
            wrote: false,
            running: None,
            about: (name, argv, matches!(target, Target::Eval(..))),
            clock: now,
        };
        let reply = with_lua(server, |lua| match target {
            Target::Eval(sha, body) => {
                lua.eval_sha(sha, body, &key_refs, &arg_refs, client_resp, &mut host)
            }
            Target::Function(f) => lua.fcall(f, &key_refs, &arg_refs, client_resp, &mut host),
        });
        (reply, host.running.map(|r| r.id))
    };
    client.db = db;
    client.proto = proto;
    if let Some(id) = registered {
        server.scripts.running.lock().retain(|r| r.id != id);
        server.scripts.refresh_busy();
    }
    server.persist.end_group(client, outer);
    drop(session);
    reply
}

/// How long a call on an undeclared key waits for a shard below the ones the script holds
/// before giving up with an error (waiting longer could deadlock with another script).
const UNDECLARED_WAIT: Duration = Duration::from_secs(1);

struct ScriptHost<'a> {
    server: &'a Server,
    client: &'a mut Client,
    stats: &'a ThreadStats,
    read_only: bool,
    started: Tick,
    threshold: Duration,
    /// The script has written (SCRIPT KILL answers UNKILLABLE then).
    wrote: bool,
    /// Set once the script is busy: its entry in the registry (kill, wrote, busy flags).
    running: Option<RunningFlags>,
    /// (name, argv, is EVAL) for the registry entry.
    about: (&'a str, &'a [Bytes], bool),
    clock: Tick,
}

/// The flags a busy script shares with SCRIPT KILL and FUNCTION STATS.
struct RunningFlags {
    id: u64,
    wrote: Arc<AtomicBool>,
    kill: Arc<AtomicBool>,
}

/// A refusal of redis.call, written as an error reply.
type Refusal = std::borrow::Cow<'static, str>;

impl ScriptHost<'_> {
    /// redis.call's checks, then the command; its reply goes into `out`.
    fn try_call(&mut self, argv: &[Bytes], resp: u8, out: &mut Vec<u8>) -> Result<(), Refusal> {
        let server = self.server;
        let id = match server.table.resolve(argv) {
            Ok(id) => id,
            Err(e) if e.text().starts_with("ERR wrong number") => {
                return Err("ERR Wrong number of args calling Redis command from script".into())
            }
            Err(_) => return Err("ERR Unknown Redis command called from script".into()),
        };
        let cmd = server.table.commands[id];
        if cmd.has(flags::NOSCRIPT) {
            return Err("ERR This Redis command is not allowed from script".into());
        }
        let write = cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE);
        if write && self.read_only {
            return Err("ERR Write commands are not allowed from read-only scripts.".into());
        }
        if cmd.has(flags::WRITE) {
            if let Some(e) = server.persist.write_error() {
                return Err(e.into());
            }
        }
        // A key the script did not declare: take its shard into the session now.
        let (name, db) = (&server.table.fullnames[id], self.client.db);
        if !LockPlan::held(server, db, cmd, name, argv) {
            let plan = LockPlan::of(server, db, cmd, name, argv);
            let ids = plan.shard_ids().unwrap_or_else(|| world(server));
            if !server
                .keyspace
                .extend_session(&ids, Instant::now() + UNDECLARED_WAIT)
            {
                return Err("ERR Script accessed a key it did not declare while another script held it; declare every key in KEYS".into());
            }
        }
        self.client.proto = if resp == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        let took = crate::exec::table::run(
            server,
            self.client,
            self.stats,
            id,
            argv,
            out,
            &mut self.clock,
        );
        crate::exec::table::log_slow(server, self.client, id, argv, took, true);
        if cmd.has(flags::WRITE) {
            self.wrote = true;
            if let Some(r) = &self.running {
                r.wrote.store(true, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

impl Host for ScriptHost<'_> {
    fn call(&mut self, argv: Vec<Bytes>, resp: u8, reply: &mut Vec<u8>) {
        if let Err(msg) = self.try_call(&argv, resp, reply) {
            reply.clear();
            strata_resp::Reply::new(reply, Protocol::Resp2).error(&msg);
        }
    }

    fn log(&mut self, level: u8, msg: &str) {
        match level {
            0 => tracing::debug!("{msg}"),
            1 => tracing::debug!("{msg}"),
            2 => tracing::info!("{msg}"),
            _ => tracing::warn!("{msg}"),
        }
    }

    fn tick(&mut self) -> bool {
        let ran_us = || Tick::now().micros_since(self.started);
        if self.running.is_none() && u128::from(ran_us()) >= self.threshold.as_micros() {
            // Only a busy script is registered: SCRIPT KILL and FUNCTION STATS can only
            // reach one then, and a quick script costs no global lock.
            tracing::warn!(
                "Slow script detected: still in execution after {} milliseconds.",
                ran_us() / 1000
            );
            let scripts = &self.server.scripts;
            let (name, argv, eval) = self.about;
            let r = Running {
                id: scripts.next_id.fetch_add(1, Ordering::Relaxed),
                name: name.to_string(),
                argv: argv.to_vec(),
                eval,
                started: self.started,
                wrote: Arc::new(AtomicBool::new(self.wrote)),
                kill: Arc::default(),
                busy: Arc::new(AtomicBool::new(true)),
            };
            self.running = Some(RunningFlags {
                id: r.id,
                wrote: r.wrote.clone(),
                kill: r.kill.clone(),
            });
            scripts.running.lock().push(r);
            scripts.busy.store(true, Ordering::Relaxed);
        }
        self.running
            .as_ref()
            .is_some_and(|r| r.kill.load(Ordering::Relaxed))
    }
}

/// Every shard of every database.
fn world(server: &Server) -> Vec<strata_engine::ShardId> {
    let ks = &server.keyspace;
    (0..ks.db_count())
        .flat_map(|d| (0..ks.db(d).shard_count()).map(move |i| (d, i)))
        .collect()
}

/// SCRIPT KILL (`eval`) / FUNCTION KILL: Redis's scriptKill.
pub fn kill(server: &Server, eval: bool) -> Result<(), CmdError> {
    let running = server.scripts.running.lock();
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
        return Err(server.scripts.busy_error());
    }
    r.kill.store(true, Ordering::Relaxed);
    Ok(())
}
