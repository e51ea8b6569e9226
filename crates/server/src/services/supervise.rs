//! `supervised`: telling a service manager how the server is doing, as Redis does. Under
//! systemd (`systemd`, or `auto` with NOTIFY_SOCKET set) the server sends sd_notify
//! datagrams to $NOTIFY_SOCKET: a status while it loads, READY=1 once it serves (so a
//! `Type=notify` unit starts what depends on it only then), STOPPING=1 when a shutdown
//! begins. Under upstart (`upstart`, or `auto` with UPSTART_JOB set) it stops itself
//! with SIGSTOP at start, which upstart's `expect stop` takes as the signal.

use crate::config::{Config, Supervised};
use std::os::unix::net::UnixDatagram;
use std::sync::OnceLock;

/// $NOTIFY_SOCKET when systemd supervises (the environment is the process's: static).
static SYSTEMD: OnceLock<Option<String>> = OnceLock::new();

/// Reads `supervised` and the environment once, at start.
pub fn begin(config: &Config) {
    let mode = config.get().supervised;
    let upstart = std::env::var_os("UPSTART_JOB").is_some();
    let systemd = std::env::var("NOTIFY_SOCKET").ok();
    let mode = match mode {
        Supervised::Auto if upstart => Supervised::Upstart,
        Supervised::Auto if systemd.is_some() => Supervised::Systemd,
        m => m,
    };
    match mode {
        Supervised::Upstart if upstart => {
            tracing::info!("supervised by upstart, will stop to signal readiness.");
            // SAFETY: raise(3) sends a signal to this process; no memory is involved.
            unsafe { libc::raise(libc::SIGSTOP) };
        }
        Supervised::Upstart => {
            tracing::warn!("upstart supervision requested, but UPSTART_JOB not found!")
        }
        Supervised::Systemd => match systemd {
            Some(socket) => {
                let _ = SYSTEMD.set(Some(socket));
                if notify("STATUS=Strata is loading...\n") {
                    tracing::info!("Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.");
                }
            }
            None => tracing::warn!("systemd supervision requested, but NOTIFY_SOCKET not found!"),
        },
        Supervised::Auto | Supervised::No => {}
    }
}

/// The server serves: READY=1, with Redis's status (a replica's says it waits for a sync).
pub fn ready(replica: bool) {
    let status = match replica {
        false => "STATUS=Ready to accept connections\n",
        true => "STATUS=Ready to accept connections in read-only mode. Waiting for MASTER <-> REPLICA sync\n",
    };
    notify(status);
    notify("READY=1\n");
}

/// Sends one sd_notify message if systemd supervises; true if it was sent.
pub fn notify(message: &str) -> bool {
    let Some(Some(socket)) = SYSTEMD.get() else {
        return false;
    };
    let sent = UnixDatagram::unbound().and_then(|d| match socket.strip_prefix('@') {
        // An abstract socket (Linux): its name follows the '@'.
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            d.send_to_addr(message.as_bytes(), &addr)
        }
        None => d.send_to(message.as_bytes(), socket),
    });
    if let Err(e) = &sent {
        tracing::warn!("Can't send notification to systemd: {e}");
    }
    sent.is_ok()
}
