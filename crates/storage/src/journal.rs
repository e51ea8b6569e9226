//! The journal writer: appenders fill an in-memory buffer; one flusher thread writes it out
//! and fsyncs per the policy (group commit).
//!
//! Each appending thread has a lane of its own: it takes the block's LSN from a shared
//! counter and encodes the block into its lane, under a lock that only the flusher ever
//! contends for. Whoever flushes gathers the lanes and places their blocks in LSN order
//! (`Appender::gather`). Appending threads share nothing but the LSN counter: one shared
//! buffer and lock, written by every worker in turn, cost about a quarter of an everysec
//! SET's time (docs/benchmarks.md, "What the everysec journal costs per SET").
//!
//! Under `always`, threads that run an event loop can instead flush on their own before
//! they idle (`set_leaders`, `flush_pending`), as Redis writes and fsyncs its AOF in
//! beforeSleep: the batch a worker just appended is fsynced on that worker, with no hand-off
//! to the flusher thread and back. The flusher thread then only backs them up.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::format::{
    block_crc_of, decode_seg_header, encode_block, encode_seg_header, frame_block, fsync_dir,
    journal_dir, list_segments, segment_path, BLOCK_HEADER_LEN, SEG_HEADER_LEN, SEG_VERSION,
};
use crate::recovery::{cut_file, scan_only, Position, Problem};

mod flusher;
mod lanes;

use flusher::{flusher_thread, Flusher};
use lanes::{with_lane, Appender, Run};

/// appendfsync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    /// fdatasync before a block counts as durable (one fsync covers every block appended
    /// while the previous one ran).
    Always,
    /// Write within about a millisecond, fsync at most once a second.
    EverySec,
    /// Write, never fsync (the OS decides).
    No,
}

impl Fsync {
    fn to_u8(self) -> u8 {
        match self {
            Fsync::Always => 0,
            Fsync::EverySec => 1,
            Fsync::No => 2,
        }
    }
    fn from_u8(v: u8) -> Fsync {
        match v {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }
}

pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

#[derive(Clone, Debug)]
pub struct JournalOptions {
    /// The data directory; segments live in `<dir>/journal/`.
    pub dir: PathBuf,
    pub fsync: Fsync,
    /// A segment is closed once the next block would take it past this size (a block is
    /// never split, so one larger block gets a segment of its own).
    pub segment_bytes: u64,
}

impl JournalOptions {
    pub fn new(dir: impl Into<PathBuf>) -> JournalOptions {
        JournalOptions {
            dir: dir.into(),
            fsync: Fsync::EverySec,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Bytes in segment files on disk (written, not necessarily fsynced).
    pub size_bytes: u64,
    pub segments: u64,
    /// Blocks in the live segments (appended ones included even if not yet written).
    pub blocks: u64,
    /// fsyncs done by the flusher since open.
    pub fsyncs: u64,
    pub last_fsync_micros: u64,
    /// Bytes appended but not yet written to the OS.
    pub pending_bytes: u64,
    /// Memory the journal holds besides: written blocks kept until their fsync (to be
    /// rewritten should it fail; up to a second of writes under everysec) and spare
    /// buffers. With `pending_bytes`, what maxmemory leaves out as Redis leaves out its AOF
    /// buffer.
    pub held_bytes: u64,
    pub written_lsn: u64,
    pub durable_lsn: u64,
}

/// Bytes for one segment, contiguous from `offset`.
struct Chunk {
    segment: u64,
    /// LSN of the segment's first block (for its header when the flusher creates it).
    seg_first_lsn: u64,
    offset: u64,
    bytes: Vec<u8>,
    last_lsn: u64,
    /// Already added to the size statistics (a chunk may be rewritten after an fsync error).
    counted: bool,
}
/// Capacity of a new chunk buffer: a millisecond of heavy writing, so it rarely grows.
const CHUNK_BYTES: usize = 256 << 10;

type Callback = Box<dyn Fn(u64) + Send + Sync>;

struct Shared {
    /// Tells this journal's lanes apart in a thread's `LANES`.
    id: u64,
    dir: PathBuf,
    segment_bytes: u64,
    /// The LSN the next append takes.
    next_lsn: AtomicU64,
    /// Every thread's lane (see the module comment).
    lanes: Mutex<Vec<Arc<Mutex<Run>>>>,
    app: Mutex<Appender>,
    wake: Condvar,
    /// The flusher is (about to be) waiting: the next appender must notify it.
    flusher_idle: AtomicBool,
    fsync: AtomicU8,
    stop: AtomicBool,
    written: AtomicU64,
    durable: AtomicU64,
    /// Highest LSN fsynced, whatever the policy (`sync` waits for it: under `no`, durable
    /// means written).
    synced: AtomicU64,
    /// Newest segment whose header is on disk; `drop_before` never deletes it or later.
    live_segment: AtomicU64,
    oldest_first_lsn: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// Mirrors `last_error.is_some()`: writers check it on every command, lock-free.
    failing: AtomicBool,
    /// Emptied chunk buffers the flusher hands back, so appenders rarely allocate or grow one.
    spare: Mutex<Vec<Vec<u8>>>,
    callbacks: RwLock<Vec<Callback>>,
    durable_mx: Mutex<()>,
    durable_cv: Condvar,
    fsyncs: AtomicU64,
    last_fsync_us: AtomicU64,
    pending: AtomicU64,
    /// Capacity of the written chunks kept until their fsync (`JournalStats::held_bytes`).
    unsynced: AtomicU64,
    disk_bytes: AtomicU64,
    segments: AtomicU64,
    inject_errors: AtomicU32,
    /// The writing state. Whoever flushes holds it: the flusher thread, or a leader in
    /// `flush_pending`. Lock order: this, then `app`.
    flusher: Mutex<Flusher>,
    /// Leaders flush under `always` (see `set_leaders`).
    leaders: AtomicBool,
}

/// The write side of the journal. Send + Sync; share it through the `Arc` `open` returns.
pub struct Journal {
    sh: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<io::Result<()>>>>,
}

fn error_text(e: &io::Error) -> String {
    // MISCONF shows the bare reason, as Redis does ("No space left on device").
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Creates segment `n` with its header and makes it durable (file and directory entry).
fn create_segment(dir: &Path, n: u64, first_lsn: u64) -> io::Result<File> {
    let path = segment_path(dir, n);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    f.set_len(0)?;
    f.write_all_at(&encode_seg_header(n, first_lsn), 0)?;
    f.sync_all()?;
    fsync_dir(&journal_dir(dir))?;
    Ok(f)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Journal {
    /// Opens the journal for appending: cuts a torn tail off the last segment and continues
    /// it (or creates segment 1). Corruption in the last segment is an error; run recovery
    /// (`read_blocks`) first, which checks every segment.
    pub fn open(opts: JournalOptions) -> io::Result<Arc<Journal>> {
        let jdir = journal_dir(&opts.dir);
        std::fs::create_dir_all(&jdir)?;
        let segs = list_segments(&opts.dir)?;
        let (seg, first_lsn, end, next_lsn, file, version) = match segs.last() {
            None => (
                1,
                1,
                SEG_HEADER_LEN,
                1,
                create_segment(&opts.dir, 1, 1)?,
                SEG_VERSION,
            ),
            Some(&last) => {
                let path = segment_path(&opts.dir, last);
                let bytes = std::fs::read(&path)?;
                let scan = scan_only(&bytes, last, true);
                match scan.problem {
                    Some((Problem::Corrupt, off, reason)) => {
                        return Err(invalid(format!(
                            "journal corrupt: {} at offset {off}: {reason}",
                            path.display()
                        )))
                    }
                    Some((Problem::Torn, off, reason)) => {
                        tracing::warn!(
                            "journal: cutting torn tail of {} at offset {off} ({} bytes): {reason}",
                            path.display(),
                            bytes.len() as u64 - off
                        );
                        if scan.first_lsn == 0 {
                            // The header itself never made it: start the segment afresh,
                            // numbering on from the previous one.
                            let first = match segs.len().checked_sub(2).map(|i| segs[i]) {
                                Some(prev) => {
                                    let pb = std::fs::read(segment_path(&opts.dir, prev))?;
                                    let ps = scan_only(&pb, prev, false);
                                    if let Some((_, off, reason)) = ps.problem {
                                        return Err(invalid(format!(
                                            "journal corrupt: {} at offset {off}: {reason}",
                                            segment_path(&opts.dir, prev).display()
                                        )));
                                    }
                                    ps.first_lsn + ps.blocks
                                }
                                None => 1,
                            };
                            let f = create_segment(&opts.dir, last, first)?;
                            (last, first, SEG_HEADER_LEN, first, f, SEG_VERSION)
                        } else {
                            cut_file(&path, off)?;
                            let f = OpenOptions::new().read(true).write(true).open(&path)?;
                            let next = scan.first_lsn + scan.blocks;
                            (last, scan.first_lsn, off, next, f, scan.version)
                        }
                    }
                    None => {
                        let f = OpenOptions::new().read(true).write(true).open(&path)?;
                        let next = scan.first_lsn + scan.blocks;
                        (last, scan.first_lsn, scan.end, next, f, scan.version)
                    }
                }
            }
        };
        // Blocks are written with this version's crc only: an older segment is left as it
        // is and the journal goes on in a new one.
        let (seg, first_lsn, end, file) = if version == SEG_VERSION {
            (seg, first_lsn, end, file)
        } else {
            tracing::info!(
                "journal: segment {seg} has format version {version}; continuing in a new segment"
            );
            let f = create_segment(&opts.dir, seg + 1, next_lsn)?;
            (seg + 1, next_lsn, SEG_HEADER_LEN, f)
        };
        // Zeros a crash left past the data stay: they are overwritten next.
        let zeroed_to = file.metadata()?.len();
        let segs = list_segments(&opts.dir)?;
        let mut disk = 0;
        for &n in &segs {
            disk += std::fs::metadata(segment_path(&opts.dir, n))?.len();
        }
        disk -= zeroed_to.saturating_sub(end).min(disk);
        let oldest_first = match segs.first() {
            Some(&n) if n != seg => read_first_lsn(&opts.dir, n)?,
            _ => first_lsn,
        };
        let last_lsn = next_lsn - 1;
        static IDS: AtomicU64 = AtomicU64::new(1);
        let sh = Arc::new(Shared {
            id: IDS.fetch_add(1, Relaxed),
            dir: opts.dir.clone(),
            segment_bytes: opts.segment_bytes.max(SEG_HEADER_LEN + 1),
            next_lsn: AtomicU64::new(next_lsn),
            lanes: Mutex::new(Vec::new()),
            app: Mutex::new(Appender {
                chunks: Vec::new(),
                next_lsn,
                pos: Position {
                    segment: seg,
                    offset: end,
                },
                seg_first_lsn: first_lsn,
                held: Vec::new(),
                free: Vec::new(),
                force_sync_to: 0,
                pending_since: None,
            }),
            wake: Condvar::new(),
            flusher_idle: AtomicBool::new(false),
            fsync: AtomicU8::new(opts.fsync.to_u8()),
            stop: AtomicBool::new(false),
            written: AtomicU64::new(last_lsn),
            durable: AtomicU64::new(last_lsn),
            synced: AtomicU64::new(last_lsn),
            live_segment: AtomicU64::new(seg),
            oldest_first_lsn: AtomicU64::new(oldest_first),
            last_error: Mutex::new(None),
            failing: AtomicBool::new(false),
            spare: Mutex::new(Vec::new()),
            callbacks: RwLock::new(Vec::new()),
            durable_mx: Mutex::new(()),
            durable_cv: Condvar::new(),
            fsyncs: AtomicU64::new(0),
            last_fsync_us: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            unsynced: AtomicU64::new(0),
            disk_bytes: AtomicU64::new(disk),
            segments: AtomicU64::new(segs.len() as u64),
            inject_errors: AtomicU32::new(0),
            flusher: Mutex::new(Flusher {
                retained: VecDeque::new(),
                unsynced: Vec::new(),
                file: Some((seg, file)),
                data_end: end,
                zeroed_to: zeroed_to.max(end),
                last_sync: Instant::now(),
                synced_lsn: last_lsn,
                written_lsn: last_lsn,
            }),
            leaders: AtomicBool::new(false),
        });
        let fl = sh.clone();
        let handle = std::thread::Builder::new()
            .name("strata-journal".into())
            .spawn(move || flusher_thread(&fl))?;
        Ok(Arc::new(Journal {
            sh,
            thread: Mutex::new(Some(handle)),
        }))
    }

    /// Appends one block (no I/O; the flusher writes it). Returns its LSN. Blocks reach
    /// the file in LSN order, so a caller that appends while it holds what the block
    /// changed (a write's shards) orders the journal as memory saw the changes.
    pub fn append(&self, db: u32, epoch: u64, payload: &[u8]) -> u64 {
        let lsn = self.lane_append(db, epoch, true, |buf| buf.extend_from_slice(payload));
        lsn.unwrap_or_default() // always Some: empty payloads are kept
    }

    /// `append` of the payload `write` appends to the buffer it is given, encoded straight
    /// into this thread's lane (no copy in between). None, and no block, if `write` adds
    /// nothing.
    pub fn append_encoded(
        &self,
        db: u32,
        epoch: u64,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Option<u64> {
        self.lane_append(db, epoch, false, write)
    }

    fn lane_append(
        &self,
        db: u32,
        epoch: u64,
        keep_empty: bool,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Option<u64> {
        let sh = &*self.sh;
        let (lsn, idle) = with_lane(sh, |run| {
            let at = run.bytes.len();
            if frame_block(&mut run.bytes, db, epoch, write) == 0 && !keep_empty {
                run.bytes.truncate(at);
                return None;
            }
            // SeqCst pairs with the flusher's store of `flusher_idle` before it reads
            // `next_lsn` (`wait`): either it sees this LSN or this sees it idle.
            let lsn = sh.next_lsn.fetch_add(1, SeqCst);
            run.blocks.push_back((lsn, (run.bytes.len() - at) as u32));
            Some((lsn, sh.flusher_idle.load(SeqCst)))
        })?;
        // Leaders flush what they append before they idle: no wake-up for the flusher.
        if idle && !self.leading() && sh.flusher_idle.swap(false, SeqCst) {
            let _g = sh.app.lock();
            sh.wake.notify_one();
        }
        Some(lsn)
    }

    /// Appends one block after every block whose LSN was taken before it, running
    /// `f(lsn, position)` before anything is appended after it. The position is where
    /// this block starts: replaying from there includes it; from `position()` after it,
    /// excludes it. For rare blocks (a snapshot's marker): it waits for the lanes.
    pub fn append_with_pos<R>(
        &self,
        db: u32,
        epoch: u64,
        payload: &[u8],
        f: impl FnOnce(u64, Position) -> R,
    ) -> (u64, R) {
        self.append_placed(db, epoch, payload, false, f)
    }

    /// As [`Journal::append_with_pos`], and the block starts a new segment unless the
    /// current one is still empty: `drop_before` its position then deletes every block
    /// before it (a rewrite's marker, after which the journal before it is deleted).
    pub fn append_opening_segment<R>(
        &self,
        db: u32,
        epoch: u64,
        payload: &[u8],
        f: impl FnOnce(u64, Position) -> R,
    ) -> (u64, R) {
        self.append_placed(db, epoch, payload, true, f)
    }

    fn append_placed<R>(
        &self,
        db: u32,
        epoch: u64,
        payload: &[u8],
        new_segment: bool,
        f: impl FnOnce(u64, Position) -> R,
    ) -> (u64, R) {
        let sh = &*self.sh;
        let mut block = Vec::with_capacity(BLOCK_HEADER_LEN + payload.len());
        encode_block(
            &mut block,
            db,
            epoch,
            payload,
            block_crc_of(db, epoch, payload),
        );
        let mut a = sh.app.lock();
        let lsn = sh.next_lsn.fetch_add(1, SeqCst);
        // The earlier LSNs' threads are inside their lanes for a moment at most.
        a.gather_to(sh, lsn, usize::MAX);
        let pos = a.place(sh, &block, new_segment);
        // Blocks after this one are placed by a gather, which needs `app`: `f` runs first.
        let r = f(lsn, pos);
        if !self.leading() && sh.flusher_idle.swap(false, SeqCst) {
            sh.wake.notify_one();
        }
        (lsn, r)
    }

    /// Declares that the threads appending to this journal run event loops and call
    /// `flush_pending` before each idle wait. Under `always` they then write and fsync
    /// their own batches; the flusher thread only picks up what waits longer than
    /// `BACKSTOP` (appends from other threads). Under the other policies nothing changes.
    pub fn set_leaders(&self, on: bool) {
        self.sh.leaders.store(on, Relaxed);
        let _g = self.sh.app.lock();
        self.sh.wake.notify_one();
    }

    fn leading(&self) -> bool {
        self.sh.leaders.load(Relaxed) && self.fsync() == Fsync::Always
    }

    /// A leader about to idle: under `always`, writes and fsyncs everything appended so far
    /// (its own batch and whatever other threads appended), on the calling thread, and
    /// publishes it. Returns at once when there is nothing to do, under other policies,
    /// while writes are failing (the flusher thread retries those), once the journal is
    /// closing, and while another thread is flushing: rather than wait for the lock, the
    /// caller goes back to its loop, serves what arrives meanwhile, and is woken by that
    /// flush's publication, which wakes every waiter; its next idle flushes the rest.
    pub fn flush_pending(&self) {
        let sh = &*self.sh;
        if !self.leading()
            || sh.next_lsn.load(Acquire) <= sh.durable.load(Acquire) + 1
            || sh.failing.load(Relaxed)
            || sh.stop.load(Relaxed)
        {
            return;
        }
        let Some(mut f) = sh.flusher.try_lock() else {
            return;
        };
        f.take_new(sh);
        if f.retained.is_empty() && f.synced_lsn >= f.written_lsn {
            return; // another thread's flush covered it
        }
        let failed = f.flush_recorded(sh, Fsync::Always, true);
        drop(f);
        if failed {
            // The flusher thread retries (every RETRY) until the disk accepts writes.
            let _g = sh.app.lock();
            sh.wake.notify_one();
        }
    }

    /// Highest LSN on disk per the policy (fsynced for Always/EverySec, written for No).
    pub fn durable_lsn(&self) -> u64 {
        self.sh.durable.load(Acquire)
    }

    /// Highest LSN handed to the OS.
    pub fn written_lsn(&self) -> u64 {
        self.sh.written.load(Acquire)
    }

    /// `f(durable_lsn)` runs on the flusher thread after every flush or fsync that advanced it.
    pub fn on_durable(&self, f: Box<dyn Fn(u64) + Send + Sync>) {
        self.sh.callbacks.write().push(f);
    }

    pub fn set_fsync(&self, f: Fsync) {
        self.sh.fsync.store(f.to_u8(), Relaxed);
        let _g = self.sh.app.lock();
        self.sh.wake.notify_one();
    }

    pub fn fsync(&self) -> Fsync {
        Fsync::from_u8(self.sh.fsync.load(Relaxed))
    }

    /// The last write/fsync error text, until a retry succeeds.
    pub fn last_error(&self) -> Option<String> {
        if !self.sh.failing.load(Relaxed) {
            return None;
        }
        self.sh.last_error.lock().clone()
    }

    /// Bytes in segment files on disk, as `stats` counts them, without its gathering of
    /// the lanes (the server checks it every tick for automatic rewrites).
    pub fn size_bytes(&self) -> u64 {
        self.sh.disk_bytes.load(Relaxed)
    }

    pub fn stats(&self) -> JournalStats {
        let next = {
            let mut a = self.sh.app.lock();
            a.gather(&self.sh); // so that pending_bytes counts the lanes' blocks
            self.sh.next_lsn.load(SeqCst)
        };
        let spare: usize = self.sh.spare.lock().iter().map(Vec::capacity).sum();
        JournalStats {
            size_bytes: self.sh.disk_bytes.load(Relaxed),
            segments: self.sh.segments.load(Relaxed),
            blocks: next.saturating_sub(self.sh.oldest_first_lsn.load(Relaxed)),
            fsyncs: self.sh.fsyncs.load(Relaxed),
            last_fsync_micros: self.sh.last_fsync_us.load(Relaxed),
            pending_bytes: self.sh.pending.load(Relaxed),
            held_bytes: self.sh.unsynced.load(Relaxed) + spare as u64,
            written_lsn: self.written_lsn(),
            durable_lsn: self.durable_lsn(),
        }
    }

    /// Where the next block will be written (see `append_with_pos` for the exact rule at a
    /// segment boundary: reading from here yields exactly the blocks appended after this call).
    pub fn position(&self) -> Position {
        let mut a = self.sh.app.lock();
        let next = self.sh.next_lsn.load(SeqCst);
        a.gather_to(&self.sh, next, usize::MAX);
        a.pos
    }

    /// LSN the next appended block will get.
    pub fn next_lsn(&self) -> u64 {
        self.sh.next_lsn.load(SeqCst)
    }

    /// Deletes whole segments numbered below `pos.segment` (a snapshot replaying from `pos`
    /// covers them). The segment being written is never deleted.
    pub fn drop_before(&self, pos: Position) -> io::Result<()> {
        let limit = pos.segment.min(self.sh.live_segment.load(Acquire));
        let segs = list_segments(&self.sh.dir)?;
        let mut removed = false;
        for &n in segs.iter().filter(|&&n| n < limit) {
            let path = segment_path(&self.sh.dir, n);
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            std::fs::remove_file(&path)?;
            self.sh.disk_bytes.fetch_sub(len, Relaxed);
            self.sh.segments.fetch_sub(1, Relaxed);
            removed = true;
        }
        if removed {
            fsync_dir(&journal_dir(&self.sh.dir))?;
            if let Some(&first) = list_segments(&self.sh.dir)?.first() {
                if let Ok(lsn) = read_first_lsn(&self.sh.dir, first) {
                    self.sh.oldest_first_lsn.store(lsn, Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Writes and fsyncs everything appended so far, whatever the policy, and waits for it.
    /// Returns the durable LSN. Fails with the write error if the flusher cannot write now.
    pub fn sync(&self) -> io::Result<u64> {
        let target = {
            let mut a = self.sh.app.lock();
            let t = self.sh.next_lsn.load(SeqCst) - 1;
            a.force_sync_to = a.force_sync_to.max(t);
            self.sh.wake.notify_one();
            t
        };
        let mut g = self.sh.durable_mx.lock();
        loop {
            if self.sh.synced.load(Acquire) >= target {
                return Ok(target);
            }
            if let Some(e) = self.last_error() {
                return Err(io::Error::other(e));
            }
            if self.thread.lock().is_none() {
                return Err(io::Error::other("journal is closed"));
            }
            self.sh
                .durable_cv
                .wait_for(&mut g, Duration::from_millis(50));
        }
    }

    /// Writes and fsyncs everything, then stops the flusher. Appends after this are lost.
    pub fn close(&self) -> io::Result<()> {
        let Some(h) = self.thread.lock().take() else {
            return Ok(());
        };
        {
            let _g = self.sh.app.lock();
            self.sh.stop.store(true, SeqCst);
            self.sh.wake.notify_one();
        }
        match h.join() {
            Ok(r) => r,
            Err(_) => Err(io::Error::other("journal flusher thread panicked")),
        }
    }

    /// Test hook: the next `n` writes fail as if the disk returned an error.
    #[doc(hidden)]
    pub fn inject_write_errors(&self, n: u32) {
        self.sh.inject_errors.store(n, SeqCst);
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!("journal: closing on drop: {e}");
        }
    }
}

fn read_first_lsn(dir: &Path, n: u64) -> io::Result<u64> {
    let mut h = [0u8; SEG_HEADER_LEN as usize];
    File::open(segment_path(dir, n))?.read_exact_at(&mut h, 0)?;
    decode_seg_header(&h)
        .map(|h| h.first_lsn)
        .map_err(|r| invalid(format!("{}: {r}", segment_path(dir, n).display())))
}
