//! Stage 2: may this client run this command now? Each rule is checked once, here, in
//! Redis's order: authentication, the ACL hook, memory (eviction, and the refusal of
//! commands that need memory when none can be freed), the subscribed context, a busy
//! script (before replication's rules, unlike Redis: see there), CLIENT PAUSE, MULTI
//! queueing, the cluster-slot hook; and for a script's `redis.call`, the rules scripts run
//! under. A disk that refuses writes (a failed snapshot, a journal that cannot be written)
//! is checked after memory, as Redis does.

use crate::commands::transactions;
use crate::exec::client::Client;
use crate::exec::command::{flags, CmdError, Command};
use crate::exec::{Nest, Origin};
use crate::server::Server;
use crate::services::acl::{self, Context, Reason, Refusal};
use crate::services::disk_refusal::DiskRefusal;
use crate::services::evict::{State, OOM};
use bytes::Bytes;
use std::sync::atomic::Ordering;

/// The verdict.
pub enum Admit {
    Run,
    /// Inside MULTI: queue it for EXEC.
    Queue,
    /// CLIENT PAUSE holds it back: the connection waits, then submits it again.
    Pause,
    Refuse(CmdError),
}

/// Decides whether command `id` runs now for `client`, coming from `origin`.
#[inline]
pub fn admit(
    server: &Server,
    client: &mut Client,
    id: usize,
    argv: &[Bytes],
    origin: &Origin<'_>,
) -> Admit {
    let cmd = server.table.commands[id];
    match origin {
        Origin::Replay => return Admit::Run,
        Origin::Nested(Nest {
            script: Some(rules),
            ..
        }) => {
            if cmd.has(flags::NOSCRIPT) && !server.debug.allow_noscript.load(Ordering::Relaxed) {
                return refuse("ERR This Redis command is not allowed from script");
            }
            // A script's call is checked against its caller's user before its other rules.
            if let Err(e) = acl_check(server, client, id, argv, origin) {
                return Admit::Refuse(e);
            }
            let write = cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE);
            if write && rules.read_only {
                return refuse("ERR Write commands are not allowed from read-only scripts.");
            }
            // Out of memory when the script started: it may not start writing (once it has
            // written, it must be let finish).
            if rules.deny_oom && cmd.has(flags::DENYOOM) && server.evict.maxmemory() != 0 {
                return refuse(OOM);
            }
            // Until the script has written: once it has, it must be let finish.
            if !rules.wrote && cmd.has(flags::WRITE) {
                if let Some(r) = DiskRefusal::now(server) {
                    return Admit::Refuse(r.command_error());
                }
            }
        }
        Origin::Master => return admit_master(client, cmd),
        Origin::Nested(_) | Origin::Client => {
            // As Redis, only a client's own request is checked (not a script's call, nor
            // EXEC's commands, which were checked when queued).
            if cmd.has(flags::PROTECTED) && matches!(origin, Origin::Client) {
                let setting = server.config.get().enable_debug_command;
                if !crate::config::protected_allowed(setting, client.info.is_local()) {
                    return refuse(DEBUG_NOT_ALLOWED);
                }
            }
            if !client.authenticated && !cmd.has(flags::NO_AUTH) && server.acl.auth_required() {
                return refuse("NOAUTH Authentication required.");
            }
            if let Err(e) = acl_check(server, client, id, argv, origin) {
                return Admit::Refuse(e);
            }
        }
    }
    if matches!(origin, Origin::Client) {
        if memory_check(server, client, id).is_err() {
            return refuse(OOM);
        }
        if let Err(e) = disk_check(server, client, cmd, id, argv) {
            return Admit::Refuse(e);
        }
    }
    if client.pubsub_mode && !cmd.has(flags::SUBSCRIBED) {
        return Admit::Refuse(CmdError::Custom(format!("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", server.table.fullnames[id])));
    }
    // A script past busy-reply-threshold: others may only kill it or shut down. Before
    // CLIENT PAUSE and MULTI queueing, as in Redis (a command refused here dooms the
    // transaction), and before anything that reads a script's flags (replication's rules
    // do, which Redis checks first): on the script's own worker this runs inside the
    // script's hook (`net::busy`), with its Lua state in use.
    if matches!(origin, Origin::Client)
        && server.scripts.busy.load(Ordering::Relaxed)
        && !cmd.has(flags::ALLOW_BUSY)
    {
        return Admit::Refuse(server.scripts.busy_error());
    }
    // Replication's rules (a read-only replica, min-replicas-to-write, a replica whose
    // link is down, loading a primary's data): one relaxed load while none applies.
    if server.repl.restricts() {
        let call = call_flags(server, client, id, argv);
        if let Err(e) = crate::services::replication::admit(server, client, cmd, call, origin) {
            return Admit::Refuse(e);
        }
    }
    // Only a client's own commands wait: an EXEC's or a script's run as part of theirs,
    // and a blocked client's command waited when it first arrived.
    if server.pause.active() && matches!(origin, Origin::Client) && !client.rerun {
        let now = server.clock.unix_ms(crate::tick::Tick::now());
        let writes =
            call_flags(server, client, id, argv) & (flags::WRITE | flags::MAY_REPLICATE) != 0;
        if server.pause.holds(now, writes) {
            return Admit::Pause;
        }
    }
    if client.multi.is_some() && !cmd.has(flags::NOT_QUEUED) {
        if cmd.has(flags::NO_MULTI) {
            return refuse("ERR Command not allowed inside a transaction");
        }
        return Admit::Queue;
    }
    if let Err(e) = cluster_check(server, client, id, argv) {
        return Admit::Refuse(e);
    }
    Admit::Run
}

/// A client's write (an EXEC with one queued included, and a write to be queued in MULTI,
/// which dooms the transaction) or PING, while the disk refuses writes (Redis checks
/// PING too, so that a health check sees the problem).
#[inline]
fn disk_check(
    server: &Server,
    client: &Client,
    cmd: &Command,
    id: usize,
    argv: &[Bytes],
) -> Result<(), CmdError> {
    let writes = match cmd.call_flags {
        None => cmd.has(flags::WRITE),
        Some(_) => call_flags(server, client, id, argv) & flags::WRITE != 0,
    };
    if !writes && cmd.name != "ping" {
        return Ok(());
    }
    match DiskRefusal::now(server) {
        Some(r) => Err(r.command_error()),
        None => Ok(()),
    }
}

/// The primary's stream: only MULTI queueing applies.
fn admit_master(client: &Client, cmd: &crate::exec::command::Command) -> Admit {
    if client.multi.is_some() && !cmd.has(flags::NOT_QUEUED) {
        return Admit::Queue;
    }
    Admit::Run
}

/// The flags of this call of command `id`: its declared ones, or those its arguments or
/// state give it (a script's declared flags, EXEC's queued commands), as Redis's
/// getCommandFlags.
pub fn call_flags(server: &Server, client: &Client, id: usize, argv: &[Bytes]) -> u32 {
    let cmd = server.table.commands[id];
    match cmd.call_flags {
        Some(f) => f(server, client, cmd.flags, argv),
        None => cmd.flags,
    }
}

/// Redis's refusal of DEBUG under `enable-debug-command no` (or `local`, to a remote client).
const DEBUG_NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

fn refuse(text: &'static str) -> Admit {
    Admit::Refuse(CmdError::Static(text))
}

/// maxmemory (Redis's processCommand): over the limit, evict first, whatever the command;
/// when nothing could be freed, refuse a command that may need memory: one flagged
/// DENYOOM, an EXEC with one queued, and anything but EXEC, DISCARD, QUIT and RESET
/// inside MULTI (queueing takes memory too). Remembers the verdict for scripts. Not while
/// a script is busy: its clients' evictions would mix with its effects.
#[inline]
fn memory_check(server: &Server, client: &mut Client, id: usize) -> Result<(), ()> {
    if server.evict.maxmemory() == 0 || server.scripts.busy.load(Ordering::Relaxed) || client.rerun
    {
        if client.oom_at_start {
            client.oom_at_start = false;
        }
        return Ok(());
    }
    let oom = server.evict.perform(server) == State::Fail;
    client.oom_at_start = oom;
    if !oom {
        return Ok(());
    }
    let cmd = server.table.commands[id];
    let name = server.table.fullnames[id].as_str();
    let exempt = matches!(name, "exec" | "discard" | "quit" | "reset");
    let refused = match &client.multi {
        Some(m) if name == "exec" => m
            .queued
            .iter()
            .any(|(q, _)| server.table.commands[*q].has(flags::DENYOOM)),
        Some(_) => !exempt,
        None => cmd.has(flags::DENYOOM),
    };
    if refused {
        Err(())
    } else {
        Ok(())
    }
}

/// The ACL hook: may the client's user run this command on these keys and channels?
/// A user that may do everything (the default user) costs one flag load.
#[inline]
fn acl_check(
    server: &Server,
    client: &mut Client,
    id: usize,
    argv: &[Bytes],
    origin: &Origin<'_>,
) -> Result<(), CmdError> {
    let Some(user) = &client.user else {
        return Ok(());
    };
    match user.check_cached(&mut client.acl_rules, &server.table, id, argv) {
        Ok(()) => Ok(()),
        Err(denied) => acl_refusal(server, client, denied, id, argv, origin),
    }
}

/// A refusal: logged (ACL LOG) and worded for where the command came from.
#[cold]
#[inline(never)]
fn acl_refusal(
    server: &Server,
    client: &Client,
    denied: acl::selector::Denied,
    id: usize,
    argv: &[Bytes],
    origin: &Origin<'_>,
) -> Result<(), CmdError> {
    let (wording, context) = match origin {
        Origin::Nested(Nest {
            script: Some(_), ..
        }) => (Context::Lua, Context::Lua),
        Origin::Nested(_) => (Context::Multi, Context::Multi),
        _ if client.multi.is_some() => (Context::Toplevel, Context::Multi),
        _ => (Context::Toplevel, Context::Toplevel),
    };
    let (reason, object) = acl::refusal_of(denied, &server.table, id, argv);
    // The entry's client info names the refused command, as Redis's does.
    client.info.last_cmd.store(
        server.table.stat_id(id),
        std::sync::atomic::Ordering::Relaxed,
    );
    log_refusal(server, client, reason, context, object);
    Err(CmdError::Custom(acl::denial_text(
        denied,
        wording,
        &server.table,
        id,
    )))
}

/// Adds a refusal of `client` to ACL LOG.
pub fn log_refusal(
    server: &Server,
    client: &Client,
    reason: Reason,
    context: Context,
    object: String,
) {
    let username = client
        .user
        .as_ref()
        .map_or_else(String::new, |u| u.name_lossy());
    log_refusal_as(server, client, reason, context, object, username);
}

/// [`log_refusal`] under another user's name (a failed AUTH names the user tried).
pub fn log_refusal_as(
    server: &Server,
    client: &Client,
    reason: Reason,
    context: Context,
    object: String,
    username: String,
) {
    let client_info = crate::commands::client_list::client_line(server, &client.info);
    let max = server.config.get().acllog_max_len as usize;
    let now = server.clock.unix_ms(crate::tick::Tick::now());
    server.acl.log(
        Refusal {
            reason,
            context,
            object,
            username,
            client_info,
        },
        now,
        max,
    );
}

/// The cluster hook: a key of a slot this node does not serve is redirected here (MOVED,
/// ASK). A server outside a cluster serves every slot.
#[inline]
fn cluster_check(
    _server: &Server,
    _client: &Client,
    _id: usize,
    _argv: &[Bytes],
) -> Result<(), CmdError> {
    Ok(())
}

/// What a script's `redis.call` of a name that does not resolve raises.
pub fn script_resolve_error(e: &CmdError) -> CmdError {
    if is_arity_error(e) {
        CmdError::Static("ERR Wrong number of args calling Redis command from script")
    } else {
        CmdError::Static("ERR Unknown Redis command called from script")
    }
}

/// Whether resolving a command failed on its argument count (the command exists).
pub fn is_arity_error(e: &CmdError) -> bool {
    e.text().starts_with("ERR wrong number")
}

/// A command refused inside MULTI dooms the transaction (EXEC will answer EXECABORT); a
/// refused EXEC discards it at once and says why (Redis's execCommandAbort).
pub fn abort_transaction(
    server: &Server,
    client: &mut Client,
    name: &[u8],
    e: CmdError,
) -> CmdError {
    if let Some(m) = &mut client.multi {
        m.aborted = true;
    }
    // Redis words a refused EXEC so even outside MULTI.
    if !name.eq_ignore_ascii_case(b"exec") {
        return e;
    }
    transactions::forget(&server.watches, client);
    let text = e.text();
    let reason = text.strip_prefix("ERR ").unwrap_or(&text);
    CmdError::Custom(format!(
        "EXECABORT Transaction discarded because of: {reason}"
    ))
}
