//! SIGTERM and SIGINT stop the server cleanly, as redis-server does (`services::shutdown`,
//! with the flags of `shutdown-on-sigterm` / `shutdown-on-sigint`): replicas caught up, a
//! final snapshot where one is due, then every connection closes. A signal during loading
//! exits at once; what is on disk is intact, and the next start loads it again. A second
//! SIGINT while shutting down exits at once too (the journal holds every acknowledged
//! write).

use crate::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Starts the thread that waits for the signals.
pub fn watch(server: &Arc<Server>) -> std::io::Result<()> {
    let server = server.clone();
    std::thread::Builder::new()
        .name("strata-signals".into())
        .spawn(move || wait(server))?;
    Ok(())
}

fn wait(server: Arc<Server>) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            if server.loading.load(Ordering::SeqCst) {
                tracing::warn!("Received {name} during loading, exiting now");
                std::process::exit(0);
            }
            // The shutdown snapshot waits for the writes in flight, and a busy script's
            // may never end: as in Redis, a second SIGINT then exits at once.
            if name == "SIGINT" && server.shutdown.active() {
                tracing::warn!("You insist... exiting now.");
                std::process::exit(1);
            }
            tracing::warn!("Received {name} scheduling shutdown...");
            let config = server.config.get();
            let flags = match name {
                "SIGTERM" => config.shutdown_on_sigterm.0,
                _ => config.shutdown_on_sigint.0,
            };
            // A shutdown that is cancelled (SHUTDOWN ABORT, a failed snapshot) leaves the
            // server running: the next signal starts another, as in Redis.
            if let Err(e) = crate::services::shutdown::begin(&server, flags) {
                tracing::warn!("could not start the shutdown: {e}");
                server.stop();
                return;
            }
        }
    });
}
