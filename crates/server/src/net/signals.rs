//! SIGTERM and SIGINT stop the server cleanly, as redis-server does: a final snapshot where
//! one is due, then every connection closes. A signal during loading exits at once; what is
//! on disk is intact, and the next start loads it again. A second SIGINT while shutting
//! down exits at once too (the journal holds every acknowledged write).

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
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        if server.loading.load(Ordering::SeqCst) {
            tracing::warn!("Received {name} during loading, exiting now");
            std::process::exit(0);
        }
        tracing::warn!("Received {name} scheduling shutdown...");
        // The shutdown snapshot waits for the writes in flight, and a busy script's may
        // never end: as in Redis, a second SIGINT then exits at once.
        let shutdown = server.clone();
        let spawned = std::thread::Builder::new()
            .name("strata-shutdown".into())
            .spawn(move || {
                if let Err(e) = crate::services::snapshot::on_shutdown(&shutdown, false) {
                    tracing::warn!("shutdown snapshot failed: {e}");
                }
                shutdown.stop();
            });
        if spawned.is_err() {
            server.stop();
            return;
        }
        int.recv().await;
        tracing::warn!("You insist... exiting now.");
        std::process::exit(1);
    });
}
