//! strata-storage: the journal (numbered segment files of CRC-framed blocks, group commit),
//! snapshots and recovery. It knows nothing of networking; the server appends effect records
//! and replays them. Formats and rules: docs/persistence.md.

mod capped;
pub mod check;
mod crc32c;
mod format;
pub mod journal;
pub mod recovery;
pub mod snapshot;
mod snapshot_decode;
mod snapshot_stream;

pub use check::{check, truncate, CheckReport, TruncateReport};
pub use format::{
    fsync_dir, journal_dir, list_segments, replace_file, segment_path, BLOCK_HEADER_LEN,
    SEG_HEADER_LEN,
};
pub use journal::{Fsync, Journal, JournalOptions, JournalStats, DEFAULT_SEGMENT_BYTES};
pub use recovery::{
    journal_end, read_blocks, scan_segment, truncate_torn_tail, Block, BlockRef, Position, Problem,
    ReadSummary, RecoveryError, SegScan, TornTail,
};
pub use snapshot::{
    decode_entries, encode_entry, encode_value, entry_kind, latest_snapshot, load_snapshot,
    load_snapshot_bytes, load_snapshot_placed, mark_place, remove_older_snapshots,
    remove_unfinished_snapshots, same_entry, snapshot_meta, snapshot_path, Loaded, Place,
    SnapshotInfo, SnapshotMeta, SnapshotWriter, Want,
};

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// An exclusive lock on a data directory, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Creates `dir` if needed and locks `<dir>/LOCK` (flock, non-blocking), writing our pid in
/// it. Fails with a message naming the holder's pid when another process has it.
pub fn lock_dir(dir: &Path) -> io::Result<DirLock> {
    std::fs::create_dir_all(dir)?;
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("LOCK"))?;
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut s = String::new();
            let _ = f.read_to_string(&mut s);
            let pid = s.trim();
            let pid = if pid.is_empty() { "unknown" } else { pid };
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "data directory {} is in use by another strata process (pid {pid})",
                    dir.display()
                ),
            ));
        }
        return Err(err);
    }
    f.set_len(0)?;
    f.rewind()?;
    writeln!(f, "{}", std::process::id())?;
    f.sync_all()?;
    Ok(DirLock { _file: f })
}
