//! `strata check DIR [--truncate]`: verify a data directory, or cut the journal back to its
//! last good block.

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::format::{fsync_dir, journal_dir, list_segments, segment_path, SEG_HEADER_LEN};
use crate::recovery::{read_blocks, scan_only, Position, Problem, RecoveryError};
use crate::snapshot::{list_snapshots, load_snapshot};

/// The first thing wrong with the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckProblem {
    pub path: PathBuf,
    pub segment: u64,
    pub offset: u64,
    pub reason: String,
    /// A torn tail (dropped on start-up with a warning) rather than corruption (start-up
    /// refuses until `--truncate`).
    pub torn: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotCheck {
    pub path: PathBuf,
    pub epoch: u64,
    pub entries: u64,
    pub bytes: u64,
    /// None when every chunk, the footer and the entry count check out.
    pub error: Option<String>,
    /// Where start-up resumes the journal after loading it (when the file is valid).
    pub replay_from: Option<Position>,
    /// Why start-up could not replay the journal from there (a segment missing, a position
    /// past the journal's end...): None when it can.
    pub replay_error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub dir: PathBuf,
    pub segments: u64,
    /// Valid blocks before the first problem.
    pub blocks: u64,
    /// Bytes in segment files.
    pub bytes: u64,
    pub first_lsn: u64,
    pub last_lsn: u64,
    /// The newest snapshot file, fully verified.
    pub snapshot: Option<SnapshotCheck>,
    pub problem: Option<CheckProblem>,
}

impl CheckReport {
    /// True when start-up would succeed (a torn tail is fine, it is cut on open).
    pub fn ok(&self) -> bool {
        self.problem.as_ref().is_none_or(|p| p.torn)
            && self
                .snapshot
                .as_ref()
                .is_none_or(|s| s.error.is_none() && s.replay_error.is_none())
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "data directory: {}", self.dir.display())?;
        writeln!(
            f,
            "journal: {} segments, {} bytes, {} valid blocks (lsn {}..={})",
            self.segments, self.bytes, self.blocks, self.first_lsn, self.last_lsn
        )?;
        match &self.snapshot {
            None => writeln!(f, "snapshot: none")?,
            Some(s) => match &s.error {
                None => {
                    writeln!(
                        f,
                        "snapshot: {} epoch {} valid, {} entries, {} bytes",
                        s.path.display(),
                        s.epoch,
                        s.entries,
                        s.bytes
                    )?;
                    if let Some(from) = s.replay_from {
                        match &s.replay_error {
                            None => writeln!(f, "snapshot: replays the journal from {from}")?,
                            Some(e) => {
                                writeln!(f, "snapshot: cannot replay the journal from {from}: {e}")?
                            }
                        }
                    }
                }
                Some(e) => writeln!(f, "snapshot: {} INVALID: {e}", s.path.display())?,
            },
        }
        match &self.problem {
            None => writeln!(f, "journal: ok"),
            Some(p) if p.torn => writeln!(
                f,
                "journal: torn tail in {} at offset {}: {} (dropped on start-up)",
                p.path.display(),
                p.offset,
                p.reason
            ),
            Some(p) => writeln!(
                f,
                "journal corrupt: {} at offset {}: {} (run `strata check --truncate` to cut the journal there)",
                p.path.display(),
                p.offset,
                p.reason
            ),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TruncateReport {
    /// Where the journal was cut (file and length kept), if anything was wrong.
    pub cut: Option<(PathBuf, u64)>,
    pub bytes_removed: u64,
    pub segments_removed: u64,
    pub blocks_kept: u64,
}

impl fmt::Display for TruncateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cut {
            None => write!(f, "journal is clean; nothing truncated"),
            Some((p, at)) => write!(
                f,
                "cut {} at offset {at}: removed {} bytes and {} later segments; {} blocks kept",
                p.display(),
                self.bytes_removed,
                self.segments_removed,
                self.blocks_kept
            ),
        }
    }
}

/// Walks the journal up to its first problem.
fn walk(dir: &Path) -> io::Result<(CheckReport, Vec<u64>)> {
    let segs = list_segments(dir)?;
    let mut rep = CheckReport {
        dir: dir.to_path_buf(),
        segments: segs.len() as u64,
        blocks: 0,
        bytes: 0,
        first_lsn: 0,
        last_lsn: 0,
        snapshot: None,
        problem: None,
    };
    let mut expect: Option<u64> = None;
    for (i, &n) in segs.iter().enumerate() {
        let path = segment_path(dir, n);
        let bytes = std::fs::read(&path)?;
        rep.bytes += bytes.len() as u64;
        if rep.problem.is_some() {
            continue;
        }
        if i > 0 && n != segs[i - 1] + 1 {
            rep.problem = Some(CheckProblem {
                path,
                segment: n,
                offset: 0,
                reason: format!("segment {} is missing", segs[i - 1] + 1),
                torn: false,
            });
            continue;
        }
        let scan = scan_only(&bytes, n, i + 1 == segs.len());
        if scan.first_lsn != 0 {
            if let Some(e) = expect.filter(|&e| e != scan.first_lsn) {
                rep.problem = Some(CheckProblem {
                    path,
                    segment: n,
                    offset: 0,
                    reason: format!(
                        "segment starts at lsn {} but the previous one ended before {e}",
                        scan.first_lsn
                    ),
                    torn: false,
                });
                continue;
            }
            if i == 0 {
                rep.first_lsn = scan.first_lsn;
            }
            if scan.blocks > 0 {
                rep.last_lsn = scan.first_lsn + scan.blocks - 1;
            }
            expect = Some(scan.first_lsn + scan.blocks);
        }
        rep.blocks += scan.blocks;
        if let Some((kind, offset, reason)) = scan.problem {
            rep.problem = Some(CheckProblem {
                path,
                segment: n,
                offset,
                reason,
                torn: kind == Problem::Torn,
            });
        }
    }
    Ok((rep, segs))
}

/// Verifies the journal and the newest snapshot. Only I/O failures are errors; damage is
/// described in the report.
pub fn check(dir: &Path) -> io::Result<CheckReport> {
    let (mut rep, _) = walk(dir)?;
    if let Some((epoch, path)) = list_snapshots(dir)?.into_iter().next() {
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let enc = strata_engine::Encodings::default();
        let (entries, error, replay_from) = match load_snapshot(&path, &enc, |_, _, _, _| {}) {
            Ok(m) => (m.entries, None, Some(m.replay_from)),
            Err(RecoveryError::Io { err, .. }) => return Err(err),
            Err(e) => (0, Some(e.to_string()), None),
        };
        // Start-up replays from the snapshot's position: the journal must have it. (Damage
        // in the journal itself is the report's `problem` already.)
        let journal_ok = rep.problem.as_ref().is_none_or(|p| p.torn);
        let replay_error = match replay_from {
            Some(from) if journal_ok => {
                match read_blocks(dir, Some(from), |_| Ok::<(), Infallible>(())) {
                    Ok(_) => None,
                    Err(RecoveryError::Io { err, .. }) => return Err(err),
                    Err(e) => Some(e.to_string()),
                }
            }
            _ => None,
        };
        rep.snapshot = Some(SnapshotCheck {
            path,
            epoch,
            entries,
            bytes,
            error,
            replay_from,
            replay_error,
        });
    }
    Ok(rep)
}

/// Cuts the journal back to its last good block: the damaged segment is truncated there (or
/// removed if its header is bad) and every later segment is deleted.
pub fn truncate(dir: &Path) -> io::Result<TruncateReport> {
    let (rep, segs) = walk(dir)?;
    let mut out = TruncateReport {
        blocks_kept: rep.blocks,
        ..TruncateReport::default()
    };
    let Some(p) = rep.problem else {
        return Ok(out);
    };
    let len = std::fs::metadata(&p.path)?.len();
    // A segment with a bad header, or one that starts at the wrong LSN, cannot be kept.
    if p.offset < SEG_HEADER_LEN {
        std::fs::remove_file(&p.path)?;
        out.segments_removed += 1;
        out.bytes_removed += len;
        out.cut = Some((p.path.clone(), 0));
    } else {
        let f = std::fs::OpenOptions::new().write(true).open(&p.path)?;
        f.set_len(p.offset)?;
        f.sync_all()?;
        out.bytes_removed += len - p.offset;
        out.cut = Some((p.path.clone(), p.offset));
    }
    for &n in segs.iter().filter(|&&n| n > p.segment) {
        let path = segment_path(dir, n);
        out.bytes_removed += std::fs::metadata(&path)?.len();
        std::fs::remove_file(&path)?;
        out.segments_removed += 1;
    }
    fsync_dir(&journal_dir(dir))?;
    Ok(out)
}
