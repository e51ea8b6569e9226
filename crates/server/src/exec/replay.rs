//! Journal records re-enter here at start-up: each block's commands run through
//! [`exec::execute`](crate::exec::execute) as `Origin::Replay` (nothing expires, nothing is
//! recorded again), in the order they were written.

use crate::exec::client::{Client, ClientInfo};
use crate::exec::{execute, After, Call, Origin, Worker};
use crate::server::Server;
use crate::services::persist::{journal_bytes, LoadReport};
use crate::services::stats::ThreadStats;
use bytes::BytesMut;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_resp::{Limits, Parser};
use strata_storage::Position;

/// Replays journal blocks from `from` (the start when None), skipping blocks tagged with
/// an epoch below `min_epoch` (a snapshot already holds them).
pub fn replay(
    server: &Arc<Server>,
    dir: &Path,
    from: Option<Position>,
    min_epoch: u64,
) -> Result<LoadReport, String> {
    let started = Instant::now();
    let total = journal_bytes(dir);
    let stats = ThreadStats::new(server.table.commands.len());
    let info = Arc::new(ClientInfo::new(0, "journal".into(), "journal".into(), -1));
    let mut client = Client::new(info, None, true);
    let mut parser = Parser::new(Limits {
        max_bulk_len: usize::MAX / 2,
        max_multibulk_len: usize::MAX / 2,
        ..Limits::default()
    });
    let mut out = Vec::new();
    let mut after = After::default();
    let mut w = Worker {
        server,
        stats: &stats,
        clock: crate::tick::Tick::now(),
    };
    let mut report = LoadReport::default();
    let mut read = 0u64;
    let mut last_log = Instant::now();
    let summary = strata_storage::read_blocks(dir, from, |block| {
        read += block.payload.len() as u64;
        if block.epoch < min_epoch {
            return Ok(());
        }
        client.set_db(block.db as usize);
        let mut buf = BytesMut::from(&block.payload[..]);
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(argv)) => {
                    execute(
                        &mut w,
                        &mut client,
                        Call::new(&argv),
                        Origin::Replay,
                        &mut out,
                        &mut after,
                    );
                    after = After::default();
                    out.clear();
                    report.commands += 1;
                }
                Ok(None) if buf.is_empty() => break,
                Ok(None) => return Err(format!("block {} ends inside a command", block.lsn)),
                Err(e) => return Err(format!("block {}: {e:?}", block.lsn)),
            }
        }
        report.blocks += 1;
        if report.blocks % 256 == 0 {
            crate::services::tiering::spill_while_loading(server);
        }
        if last_log.elapsed() >= Duration::from_secs(1) {
            last_log = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(0.001);
            tracing::info!(
                "loading the journal: {} records, {:.0} records/s, {:.0}%",
                report.blocks,
                report.blocks as f64 / secs,
                100.0 * read as f64 / total.max(1) as f64
            );
        }
        Ok(())
    })
    .map_err(|e| format!("{e}. Run `strata check {}` to inspect it.", dir.display()))?;
    report.millis = started.elapsed().as_millis() as u64;
    report.torn_tail = summary.torn.as_ref().map(|t| t.to_string());
    if report.blocks > 0 {
        tracing::info!(
            "journal loaded: {} records ({} commands) in {} ms",
            report.blocks,
            report.commands,
            report.millis
        );
    }
    Ok(report)
}
