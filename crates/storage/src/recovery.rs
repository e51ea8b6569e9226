//! Reading the journal back: block iteration, torn-tail detection and the corruption errors
//! that stop start-up.
//!
//! Torn tail vs corruption (see docs/persistence.md): only the LAST segment can have a torn
//! tail, because the writer fsyncs a segment before it creates the next one. In the last
//! segment, when the block at offset X is bad (short header, length past end of file, or CRC
//! mismatch), the bytes from X to the end are a torn tail if no complete, CRC-valid block
//! starts at any later offset: nothing acknowledged can be there, since every durable block
//! was followed only by blocks written after it. If a valid block does start later, the bad
//! block is corruption. Everything wrong in an earlier segment is corruption. Zeros from a
//! block boundary to the end of the last segment are no damage at all: the writer fills the
//! live segment with zeros ahead of its data (a crash leaves them; a clean close cuts them).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::format::{
    block_crc_in, decode_seg_header, list_segments, segment_path, u32_at, u64_at, BLOCK_HEADER_LEN,
    SEG_HEADER_LEN,
};

/// A place in the journal: a segment number and a byte offset in that segment's file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub segment: u64,
    pub offset: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.segment, self.offset)
    }
}

/// One journal block as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub lsn: u64,
    pub db: u32,
    pub epoch: u64,
    pub payload: Vec<u8>,
    /// Where the block starts (its header).
    pub pos: Position,
}

/// A torn final block that recovery dropped (or would drop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    pub path: PathBuf,
    /// Where the torn bytes start: the file is cut back to this length.
    pub offset: u64,
    /// How many bytes are dropped.
    pub len: u64,
    pub reason: String,
}

impl fmt::Display for TornTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "torn tail in {} at offset {} ({} bytes): {}",
            self.path.display(),
            self.offset,
            self.len,
            self.reason
        )
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadSummary {
    /// Segment files read.
    pub segments: u64,
    /// Blocks passed to the callback.
    pub blocks: u64,
    /// Payload bytes passed to the callback.
    pub payload_bytes: u64,
    /// LSN of the last valid block in the journal (0 when there is none).
    pub last_lsn: u64,
    /// Where the next block goes: just after the last valid block (segment 0 if there are no
    /// segments at all).
    pub end: Position,
    /// The torn tail found at the end of the last segment, if any (not cut by `read_blocks`).
    pub torn: Option<TornTail>,
}

#[derive(Debug)]
pub enum RecoveryError {
    Io {
        path: PathBuf,
        err: io::Error,
    },
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The callback refused a block.
    Apply {
        pos: Position,
        lsn: u64,
        message: String,
    },
}

impl fmt::Display for RecoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecoveryError::Io { path, err } => write!(f, "{}: {err}", path.display()),
            RecoveryError::Corrupt {
                path,
                offset,
                reason,
            } => {
                let what = if path.extension().is_some_and(|e| e == "seg") {
                    "journal"
                } else {
                    "snapshot"
                };
                write!(
                    f,
                    "{what} corrupt: {} at offset {offset}: {reason}",
                    path.display()
                )
            }
            RecoveryError::Apply { pos, lsn, message } => {
                write!(f, "replaying journal block {lsn} at {pos}: {message}")
            }
        }
    }
}

impl std::error::Error for RecoveryError {}

impl From<RecoveryError> for io::Error {
    fn from(e: RecoveryError) -> io::Error {
        match e {
            RecoveryError::Io { err, .. } => err,
            other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// A block borrowed from a segment's bytes.
pub struct BlockRef<'a> {
    pub lsn: u64,
    pub db: u32,
    pub epoch: u64,
    pub payload: &'a [u8],
    pub offset: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    Torn,
    Corrupt,
}

/// What scanning one segment's bytes found.
#[derive(Clone, Debug)]
pub struct SegScan {
    /// 0 when the header itself is unusable.
    pub first_lsn: u64,
    /// Offset just past the last valid block (0 when the header is unusable).
    pub end: u64,
    pub blocks: u64,
    /// The header's format version (0 when the header is unusable).
    pub version: u32,
    /// The first problem: kind, offset, reason.
    pub problem: Option<(Problem, u64, String)>,
}

/// How many bytes the torn-tail look-ahead may checksum before giving up and calling the
/// damage corruption (the safe answer: the operator can still `strata check --truncate`).
const RESYNC_CRC_BUDGET: u64 = 256 << 20;

/// Is there a complete, CRC-valid block starting anywhere in `b[from..]`?
/// `None` when the budget ran out before an answer.
fn valid_block_after(b: &[u8], from: usize, version: u32) -> Option<bool> {
    let mut budget = RESYNC_CRC_BUDGET;
    let mut o = from;
    while o + BLOCK_HEADER_LEN <= b.len() {
        let plen = u32_at(b, o) as usize;
        let end = o + BLOCK_HEADER_LEN;
        if plen <= b.len() - end {
            let cost = plen as u64 + 12;
            if cost > budget {
                return None;
            }
            budget -= cost;
            if block_crc_in(version, &b[o + 8..end + plen]) == u32_at(b, o + 4) {
                return Some(true);
            }
        }
        o += 1;
    }
    Some(false)
}

/// Scans one segment file's bytes. `segment` is the number its name says; `is_last` allows a
/// torn tail. Blocks before `skip_to` are checked but not passed to `f`. `f` returning Err
/// stops the scan with that error.
pub fn scan_segment<E>(
    b: &[u8],
    segment: u64,
    is_last: bool,
    skip_to: u64,
    mut f: impl FnMut(BlockRef<'_>) -> Result<(), E>,
) -> Result<SegScan, E> {
    let mut scan = SegScan {
        first_lsn: 0,
        end: 0,
        blocks: 0,
        version: 0,
        problem: None,
    };
    let hdr = match decode_seg_header(b) {
        Ok(h) => h,
        Err(reason) => {
            // A segment created just before a crash may be empty, short or zero-filled.
            let blank = b.len() < SEG_HEADER_LEN as usize || b.iter().all(|&x| x == 0);
            let kind = if is_last && blank {
                Problem::Torn
            } else {
                Problem::Corrupt
            };
            scan.problem = Some((kind, 0, reason.to_string()));
            return Ok(scan);
        }
    };
    if hdr.segment != segment {
        scan.problem = Some((
            Problem::Corrupt,
            8,
            format!(
                "segment header says segment {} but the file name says {segment}",
                hdr.segment
            ),
        ));
        return Ok(scan);
    }
    scan.first_lsn = hdr.first_lsn;
    scan.version = hdr.version;
    let mut off = SEG_HEADER_LEN as usize;
    scan.end = off as u64;
    while off < b.len() {
        let rem = b.len() - off;
        let bad = if rem < BLOCK_HEADER_LEN {
            Some("short block header")
        } else {
            let plen = u32_at(b, off) as usize;
            let start = off + BLOCK_HEADER_LEN;
            if plen > b.len() - start {
                Some("block extends past end of file")
            } else {
                let db = u32_at(b, off + 8);
                let epoch = u64_at(b, off + 12);
                let payload = &b[start..start + plen];
                if block_crc_in(hdr.version, &b[off + 8..start + plen]) != u32_at(b, off + 4) {
                    Some("crc mismatch")
                } else {
                    let lsn = hdr.first_lsn.wrapping_add(scan.blocks);
                    if off as u64 >= skip_to {
                        f(BlockRef {
                            lsn,
                            db,
                            epoch,
                            payload,
                            offset: off as u64,
                        })?;
                    }
                    scan.blocks += 1;
                    off = start + plen;
                    scan.end = off as u64;
                    None
                }
            }
        };
        if let Some(reason) = bad {
            if is_last && b[off..].iter().all(|&x| x == 0) {
                // The zeros the writer lays ahead of its data (journal::PREZERO): the end.
                break;
            }
            let torn = is_last && valid_block_after(b, off + 1, hdr.version) == Some(false);
            let kind = if torn {
                Problem::Torn
            } else {
                Problem::Corrupt
            };
            scan.problem = Some((kind, off as u64, reason.to_string()));
            break;
        }
    }
    Ok(scan)
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RecoveryError + '_ {
    move |err| RecoveryError::Io {
        path: path.to_path_buf(),
        err,
    }
}

/// `scan_segment` without a callback.
pub fn scan_only(b: &[u8], segment: u64, is_last: bool) -> SegScan {
    match scan_segment(b, segment, is_last, u64::MAX, |_| {
        Ok::<(), std::convert::Infallible>(())
    }) {
        Ok(s) => s,
        Err(never) => match never {},
    }
}

/// Iterates every valid block of the journal in `<dir>/journal` from `from` (None = the first
/// segment), calling `f` for each. A torn tail of the last segment ends the iteration with a
/// warning and is reported in the summary (use [`truncate_torn_tail`] or `Journal::open` to
/// cut it); any other damage is a `RecoveryError::Corrupt` naming the file and offset.
pub fn read_blocks<E: fmt::Display>(
    dir: &Path,
    from: Option<Position>,
    mut f: impl FnMut(Block) -> Result<(), E>,
) -> Result<ReadSummary, RecoveryError> {
    let jdir = crate::format::journal_dir(dir);
    let all = list_segments(dir).map_err(io_err(&jdir))?;
    let mut sum = ReadSummary::default();
    let segs: Vec<u64> = match from {
        Some(p) => {
            let later: Vec<u64> = all.iter().copied().filter(|&n| n >= p.segment).collect();
            if later.first().is_some_and(|&n| n != p.segment) {
                return Err(RecoveryError::Corrupt {
                    path: segment_path(dir, p.segment),
                    offset: 0,
                    reason: format!(
                        "segment {} (replay start {p}) is missing but later segments exist",
                        p.segment
                    ),
                });
            }
            later
        }
        None => all,
    };
    let last_idx = segs.len().saturating_sub(1);
    let mut expect_lsn: Option<u64> = None;
    for (i, &n) in segs.iter().enumerate() {
        let path = segment_path(dir, n);
        if i > 0 && n != segs[i - 1] + 1 {
            return Err(RecoveryError::Corrupt {
                path,
                offset: 0,
                reason: format!("segment {} is missing", segs[i - 1] + 1),
            });
        }
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        let skip_to = match from {
            Some(p) if i == 0 => p.offset,
            _ => 0,
        };
        let is_last = i == last_idx;
        let mut boundary_ok = skip_to <= SEG_HEADER_LEN;
        let scan = scan_segment(&bytes, n, is_last, skip_to, |b| {
            if b.offset == skip_to {
                boundary_ok = true;
            }
            let blk = Block {
                lsn: b.lsn,
                db: b.db,
                epoch: b.epoch,
                payload: b.payload.to_vec(),
                pos: Position {
                    segment: n,
                    offset: b.offset,
                },
            };
            sum.payload_bytes += b.payload.len() as u64;
            sum.blocks += 1;
            sum.last_lsn = b.lsn;
            f(blk).map_err(|e| RecoveryError::Apply {
                pos: Position {
                    segment: n,
                    offset: b.offset,
                },
                lsn: b.lsn,
                message: e.to_string(),
            })
        })?;
        sum.segments += 1;
        if let Some(exp) = expect_lsn {
            if scan.first_lsn != 0 && scan.first_lsn != exp {
                return Err(RecoveryError::Corrupt {
                    path,
                    offset: 16,
                    reason: format!(
                        "segment starts at lsn {} but the previous one ended before {exp}",
                        scan.first_lsn
                    ),
                });
            }
        }
        if scan.blocks > 0 {
            sum.last_lsn = scan.first_lsn + scan.blocks - 1;
        }
        expect_lsn = Some(scan.first_lsn + scan.blocks);
        sum.end = Position {
            segment: n,
            offset: scan.end,
        };
        if let Some((kind, offset, reason)) = scan.problem {
            if kind == Problem::Corrupt {
                return Err(RecoveryError::Corrupt {
                    path,
                    offset,
                    reason,
                });
            }
            let torn = TornTail {
                len: bytes.len() as u64 - offset,
                path,
                offset,
                reason,
            };
            tracing::warn!("journal: dropping {torn}");
            sum.torn = Some(torn);
        }
        if i == 0 && !boundary_ok && skip_to < scan.end {
            return Err(RecoveryError::Corrupt {
                path: segment_path(dir, n),
                offset: skip_to,
                reason: "replay position is not on a block boundary".into(),
            });
        }
        if i == 0 && skip_to > scan.end {
            return Err(RecoveryError::Corrupt {
                path: segment_path(dir, n),
                offset: scan.end,
                reason: format!(
                    "replay position {} is past the end of the journal",
                    from.unwrap_or_default()
                ),
            });
        }
    }
    Ok(sum)
}

/// Where a journal opened on `dir` now would write its next block: just past the last
/// valid block of the last segment (a torn tail there is cut when the journal opens), or
/// the start of segment 1 when there is no segment yet. A snapshot taken while no journal
/// is open replays from here: it holds every block already on disk, and whatever a journal
/// opened later appends comes after this point.
pub fn journal_end(dir: &Path) -> io::Result<Position> {
    let Some(&last) = list_segments(dir)?.last() else {
        return Ok(Position {
            segment: 1,
            offset: 0,
        });
    };
    let bytes = std::fs::read(segment_path(dir, last))?;
    Ok(Position {
        segment: last,
        offset: scan_only(&bytes, last, true).end,
    })
}

/// Cuts a torn tail off the last segment (a segment whose header is torn is removed).
/// Returns what was cut. Corruption is left alone and reported as an error.
pub fn truncate_torn_tail(dir: &Path) -> Result<Option<TornTail>, RecoveryError> {
    let segs = list_segments(dir).map_err(io_err(dir))?;
    let Some(&last) = segs.last() else {
        return Ok(None);
    };
    let path = segment_path(dir, last);
    let bytes = std::fs::read(&path).map_err(io_err(&path))?;
    let scan = scan_only(&bytes, last, true);
    match scan.problem {
        None => Ok(None),
        Some((Problem::Corrupt, offset, reason)) => Err(RecoveryError::Corrupt {
            path,
            offset,
            reason,
        }),
        Some((Problem::Torn, offset, reason)) => {
            cut_file(&path, offset).map_err(io_err(&path))?;
            let torn = TornTail {
                len: bytes.len() as u64 - offset,
                path,
                offset,
                reason,
            };
            tracing::warn!("journal: cut {torn}");
            Ok(Some(torn))
        }
    }
}

/// Truncates a segment to `len` bytes, or removes it when not even its header survives.
pub(crate) fn cut_file(path: &Path, len: u64) -> io::Result<()> {
    if len < SEG_HEADER_LEN {
        std::fs::remove_file(path)?;
    } else {
        let f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.set_len(len)?;
        f.sync_all()?;
    }
    if let Some(parent) = path.parent() {
        crate::format::fsync_dir(parent)?;
    }
    Ok(())
}
