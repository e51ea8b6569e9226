//! When snapshots start by themselves, checked `hz` times a second: a BGSAVE or BGREWRITEAOF
//! asked for while another ran, the `save <seconds> <changes>` rules, and rewrites of a
//! journal grown past `auto-aof-rewrite-percentage` (a rewrite is the snapshot after which
//! the journal it covers is deleted: without one the journal only grows).

use super::start;
use crate::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// After a failed snapshot, the save rules try again only this long after it began
/// (Redis's CONFIG_BGSAVE_RETRY_DELAY): a full disk is not filled again every second.
const SAVE_RETRY_SECS: u64 = 5;
/// Automatic rewrites that fail this many times in a row wait before the next try ...
const REWRITE_FAILURES_BEFORE_DELAY: u64 = 3;
/// ... one minute, doubling with each further failure up to an hour (as Redis 7.0).
const REWRITE_DELAY_MAX_MINUTES: u64 = 60;

pub fn cron(server: &Arc<Server>) {
    let snap = &server.persist.snapshots;
    if snap.in_progress() {
        return;
    }
    let rewrite = snap.scheduled_rewrite.swap(false, Ordering::Relaxed);
    if snap.scheduled.swap(false, Ordering::Relaxed) || rewrite {
        let _ = start(server, true, rewrite);
        return;
    }
    let now = Server::now_unix();
    let tried = now.saturating_sub(snap.started_unix.load(Ordering::Relaxed));
    let dirty = server.persist.dirty(&server.stats);
    let since = now.saturating_sub(server.last_save.load(Ordering::Relaxed));
    let may_retry = !snap.last_failed.load(Ordering::Relaxed) || tried >= SAVE_RETRY_SECS;
    let config = server.config.get();
    let due = may_retry
        && config
            .save
            .0
            .iter()
            .any(|&(secs, changes)| dirty >= changes && since >= secs && dirty > 0);
    if due {
        tracing::info!("{dirty} changes in {since} seconds. Saving...");
        let _ = start(server, true, false);
        return;
    }
    let Some(size) = server.persist.with_journal(|j| j.size_bytes()) else {
        return;
    };
    let base = snap.rewrite_base.load(Ordering::Relaxed);
    let failures = snap.rewrite_failures.load(Ordering::Relaxed);
    if let Some(growth) = rewrite_due(
        size,
        base,
        config.auto_aof_rewrite_percentage,
        config.auto_aof_rewrite_min_size,
    ) {
        if rewrite_delay_secs(failures).is_some_and(|d| tried < d) {
            return;
        }
        tracing::info!("Starting automatic rewriting of AOF on {growth}% growth");
        let _ = start(server, true, true);
    }
}

/// The journal's growth in percent over `base` when it calls for a rewrite: the journal
/// is over `min_size` and has grown by `percent` (0: never).
fn rewrite_due(size: u64, base: u64, percent: u32, min_size: i64) -> Option<u64> {
    if percent == 0 || size <= min_size.max(0) as u64 {
        return None;
    }
    let growth = (size as u128 * 100 / base.max(1) as u128).saturating_sub(100) as u64;
    (growth >= percent as u64).then_some(growth)
}

/// How long after the last try an automatic rewrite waits, after `failures` in a row.
fn rewrite_delay_secs(failures: u64) -> Option<u64> {
    let over = failures.checked_sub(REWRITE_FAILURES_BEFORE_DELAY)?;
    let minutes = 1u64
        .checked_shl(over.min(16) as u32)
        .unwrap_or(u64::MAX)
        .min(REWRITE_DELAY_MAX_MINUTES);
    Some(minutes * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_is_due_past_the_minimum_and_the_growth() {
        // Redis's defaults: 100% over the base, and at least 64 MiB.
        let min = 64 << 20;
        assert_eq!(rewrite_due(10 << 20, 1 << 20, 100, min), None);
        assert_eq!(rewrite_due(100 << 20, 60 << 20, 100, min), None);
        assert_eq!(rewrite_due(120 << 20, 60 << 20, 100, min), Some(100));
        assert!(rewrite_due(100 << 20, 0, 100, min).is_some());
        assert_eq!(
            rewrite_due(u64::MAX, 1, 100, min).map(|g| g > 100),
            Some(true)
        );
        assert_eq!(rewrite_due(200 << 20, 1 << 20, 0, min), None);
        assert_eq!(rewrite_due(3, 1, 100, 0), Some(200));
    }

    #[test]
    fn repeated_rewrite_failures_wait_longer_up_to_an_hour() {
        let delays: Vec<_> = (0..12).map(rewrite_delay_secs).collect();
        assert_eq!(&delays[..3], &[None, None, None]);
        assert_eq!(delays[3], Some(60));
        assert_eq!(delays[4], Some(120));
        assert_eq!(delays[8], Some(32 * 60));
        assert_eq!(delays[9], Some(3600));
        assert_eq!(delays[11], Some(3600));
        assert_eq!(rewrite_delay_secs(u64::MAX), Some(3600));
    }
}
