//! FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: a primary hands its role to one
//! of its replicas without losing a write. Writes are held off, the primary waits until a
//! replica (the one named, or any) has acknowledged its whole stream, then turns into a
//! replica of it with `PSYNC <replid> <offset> FAILOVER`, which makes that replica a
//! primary and resumes its stream at once.
//!
//! Redis pauses writing clients meanwhile; here a write arriving during the failover is
//! refused with an error instead (a failover takes milliseconds once the replica is
//! caught up).

use super::{peer, role};
use crate::exec::command::CmdError;
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    #[default]
    None,
    /// Waiting for a replica to catch up.
    WaitForSync,
    /// Turned into a replica of the target; its answer to PSYNC FAILOVER is awaited.
    InProgress,
}

#[derive(Default)]
struct State {
    phase: Phase,
    target: Option<(String, u16)>,
    end: Option<Instant>,
    force: bool,
}

#[derive(Default)]
pub(crate) struct Failover {
    state: Mutex<State>,
    pausing: AtomicBool,
}

/// FAILOVER's arguments, parsed.
#[derive(Debug, Default)]
pub struct FailoverArgs {
    pub to: Option<(String, u16)>,
    pub force: bool,
    pub abort: bool,
    pub timeout_ms: u64,
}

impl Failover {
    /// Writes are held off (INFO, admission).
    pub fn pausing(&self) -> bool {
        self.pausing.load(Ordering::Relaxed)
    }

    pub fn state_name(&self) -> &'static str {
        match self.state.lock().phase {
            Phase::None => "no-failover",
            Phase::WaitForSync => "waiting-for-sync",
            Phase::InProgress => "failover-in-progress",
        }
    }

    pub fn active(&self) -> bool {
        self.state.lock().phase != Phase::None
    }

    /// The link's PSYNC carries FAILOVER.
    pub(crate) fn psync_failover(&self) -> bool {
        self.state.lock().phase == Phase::InProgress
    }

    /// The target answered our PSYNC FAILOVER: done if it accepted, else we are the
    /// primary again.
    pub(crate) fn psync_answered(&self, server: &Arc<Server>, accepted: bool) {
        if accepted {
            clear(server);
        } else {
            abort(server, "Failover target rejected psync request");
        }
    }
}

fn clear(server: &Server) {
    let f = &server.repl.failover;
    *f.state.lock() = State::default();
    f.pausing.store(false, Ordering::SeqCst);
    server.repl.refresh_restrict(server);
}

fn abort(server: &Arc<Server>, why: &str) {
    let phase = {
        let s = server.repl.failover.state.lock();
        match &s.target {
            Some((h, p)) => tracing::info!("FAILOVER to {h}:{p} aborted: {why}"),
            None => tracing::info!("FAILOVER to any replica aborted: {why}"),
        }
        s.phase
    };
    if phase == Phase::InProgress {
        role::become_master(server);
    }
    clear(server);
}

/// The FAILOVER command.
pub fn failover_command(server: &Arc<Server>, a: FailoverArgs) -> Result<(), CmdError> {
    let repl = &server.repl;
    if a.abort {
        if !repl.failover.active() {
            return Err(CmdError::err("No failover in progress."));
        }
        abort(server, "Failover manually aborted");
        return Ok(());
    }
    if repl.failover.active() {
        return Err(CmdError::err("FAILOVER already in progress."));
    }
    if repl.is_replica() {
        return Err(CmdError::err(
            "FAILOVER is not valid when server is a replica.",
        ));
    }
    let peers = repl.peers();
    if peers.is_empty() {
        return Err(CmdError::err("FAILOVER requires connected replicas."));
    }
    if a.force && (a.timeout_ms == 0 || a.to.is_none()) {
        return Err(CmdError::err(
            "FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    if let Some((host, port)) = &a.to {
        let Some(p) = peers
            .iter()
            .find(|p| p.addr.eq_ignore_ascii_case(host) && p.listening_port == *port)
        else {
            return Err(CmdError::err(
                "FAILOVER target HOST and PORT is not a replica.",
            ));
        };
        if p.state.load(Ordering::Relaxed) != peer::ONLINE {
            return Err(CmdError::err("FAILOVER target replica is not online."));
        }
        tracing::info!("FAILOVER requested to {host}:{port}.");
    } else {
        tracing::info!("FAILOVER requested to any replica.");
    }
    {
        let mut s = repl.failover.state.lock();
        *s = State {
            phase: Phase::WaitForSync,
            target: a.to,
            end: (a.timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(a.timeout_ms)),
            force: a.force,
        };
    }
    repl.failover.pausing.store(true, Ordering::SeqCst);
    repl.refresh_restrict(server);
    let s = server.clone();
    let spawned = std::thread::Builder::new()
        .name("strata-failover".into())
        .spawn(move || {
            while s.repl.failover.state.lock().phase == Phase::WaitForSync {
                step(&s);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
    if let Err(e) = spawned {
        clear(server);
        return Err(CmdError::err(format!("cannot start the failover: {e}")));
    }
    Ok(())
}

/// From the replication cron too: the failover's progress.
pub(crate) fn cron(server: &Arc<Server>) {
    if server.repl.failover.state.lock().phase == Phase::WaitForSync {
        step(server);
    }
}

/// Checks the timeout and whether the target caught up; switches over when it did.
fn step(server: &Arc<Server>) {
    let repl = &server.repl;
    let offset = repl.backlog.end() as i64;
    let go = {
        let mut s = repl.failover.state.lock();
        if s.phase != Phase::WaitForSync {
            return;
        }
        if s.end.is_some_and(|e| Instant::now() >= e) {
            if s.force {
                if let Some((h, p)) = &s.target {
                    tracing::info!("FAILOVER to {h}:{p} time out exceeded, failing over.");
                }
                s.phase = Phase::InProgress;
                s.target.clone()
            } else {
                drop(s);
                abort(server, "Replica never caught up before timeout");
                return;
            }
        } else {
            let peers = repl.peers();
            let caught_up = |p: &super::Peer| p.ack_off.load(Ordering::Relaxed) == offset;
            let found = match &s.target {
                Some((h, port)) => peers
                    .iter()
                    .find(|p| p.addr.eq_ignore_ascii_case(h) && p.listening_port == *port)
                    .filter(|p| caught_up(p))
                    .map(|p| (p.addr.clone(), p.listening_port)),
                None => peers
                    .iter()
                    .find(|p| caught_up(p))
                    .map(|p| (p.addr.clone(), p.listening_port)),
            };
            if let Some(t) = &found {
                tracing::info!("Failover target {}:{} is synced, failing over.", t.0, t.1);
                s.phase = Phase::InProgress;
                s.target = Some(t.clone());
            }
            found
        }
    };
    if let Some((host, port)) = go {
        role::become_replica(server, &host, port);
    }
}
