//! `oom-score-adj` and `oom-score-adj-values`: the process's /proc/self/oom_score_adj as
//! Redis sets it, so that under memory pressure the kernel kills a replica before its
//! primary. `yes`/`relative` adds the value of the server's role (primary, then replica;
//! the third, for a forked child, has no use here) to the score the process started with,
//! `absolute` writes it as is; `no` puts the starting score back. Applied at start, after
//! CONFIG SET of either directive, and when the role changes.

use crate::config::OomScoreAdj;
use crate::server::Server;
use parking_lot::Mutex;

const PATH: &str = "/proc/self/oom_score_adj";

/// The score before Strata first changed it (a property of the process, hence static).
static BASE: Mutex<Option<i32>> = Mutex::new(None);

/// What CONFIG SET answers when the score cannot be written.
pub const FAILED: &str = "Failed to set current oom_score_adj. Check server logs.";

/// Writes the score the configuration and the role ask for. Err is logged.
pub fn apply(server: &Server) -> Result<(), String> {
    let c = server.config.get();
    let mut base = BASE.lock();
    let score = match c.oom_score_adj {
        OomScoreAdj::No => match base.take() {
            Some(b) => b,
            None => return Ok(()),
        },
        mode => {
            let b = match *base {
                Some(b) => b,
                None => {
                    let read = std::fs::read_to_string(PATH)
                        .map_err(|e| e.to_string())
                        .and_then(|s| s.trim().parse::<i32>().map_err(|e| e.to_string()));
                    let b = read.map_err(|e| {
                        tracing::warn!("Unable to read oom_score_adj: {e}");
                        FAILED.to_string()
                    })?;
                    *base = Some(b);
                    b
                }
            };
            let class = usize::from(server.repl.is_replica());
            let value = c.oom_score_adj_values.0[class];
            let value = match mode {
                OomScoreAdj::Absolute => value,
                _ => value.saturating_add(b),
            };
            value.clamp(-1000, 1000)
        }
    };
    std::fs::write(PATH, format!("{score}\n")).map_err(|e| {
        tracing::warn!("Unable to write oom_score_adj: {e}");
        FAILED.to_string()
    })
}
