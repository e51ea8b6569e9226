//! The journal's writing side: the flusher thread, and the flush that it or a leader runs
//! (`Flusher`): placed chunks written with `pwrite`, fsynced per the policy, segments
//! rotated, zeros laid ahead under `always`, write errors kept for a retry.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

use super::lanes::GATHER_TRIES;
use super::{create_segment, error_text, Chunk, Fsync, Shared, CHUNK_BYTES};
use crate::format::SEG_HEADER_LEN;

/// The writing state (see `Shared::flusher`).
pub(super) struct Flusher {
    /// Appended bytes not yet written (kept across write errors: nothing acknowledged may
    /// be lost).
    pub(super) retained: VecDeque<Chunk>,
    /// Written but not fsynced: rewritten if an fsync fails, since after a failed fsync the
    /// kernel may have dropped the dirty pages.
    pub(super) unsynced: Vec<Chunk>,
    pub(super) file: Option<(u64, File)>,
    /// The current file's data end (just past its last written block) and how far it is
    /// already filled with zeros (see `prezero`).
    pub(super) data_end: u64,
    pub(super) zeroed_to: u64,
    pub(super) last_sync: Instant,
    pub(super) synced_lsn: u64,
    pub(super) written_lsn: u64,
}

const RETRY: Duration = Duration::from_millis(100);
/// Buffers kept for reuse.
const SPARE_BUFFERS: usize = 8;
/// Under everysec/no the flusher gathers appends this long before writing, instead of
/// being woken by each one (a wake-up costs the appender a futex call).
const BATCH: Duration = Duration::from_millis(1);
/// Written-but-unsynced bytes kept for a rewrite after a failed fsync; past this an early
/// fsync bounds the memory (everysec would otherwise keep up to a second of writes).
const MAX_UNSYNCED: usize = 32 << 20;
const EVERYSEC: Duration = Duration::from_secs(1);
/// Under `always`, the live segment is filled with zeros this far ahead of its data.
/// Writing over bytes that exist already changes no file size, so an fdatasync then writes
/// the data alone, not also the inode (measured on this machine's ext4: 93 µs instead of
/// 123 µs per fsync). Recovery reads a run of zeros to the end of the last segment as its
/// end (`scan_segment`); a segment is cut to its data before the next one is created, and
/// at close.
const PREZERO: u64 = 1 << 20;
/// With leaders under `always`: the flusher thread writes what no leader flushed within
/// this long (appends from threads that are not leaders), and looks at least this often
/// when idle, since leaders' appends do not wake it.
const BACKSTOP: Duration = Duration::from_millis(2);
const IDLE_BACKSTOP: Duration = Duration::from_millis(50);

/// Records the outcome of a flush: the error for MISCONF and INFO, or the recovery.
fn record(sh: &Shared, res: &io::Result<()>) {
    match res {
        Ok(()) => {
            if sh.failing.swap(false, Relaxed) && sh.last_error.lock().take().is_some() {
                tracing::info!("journal: writes succeed again");
            }
        }
        Err(e) => {
            let text = error_text(e);
            tracing::error!("journal: write failed, retrying: {text}");
            *sh.last_error.lock() = Some(text);
            sh.failing.store(true, Relaxed);
        }
    }
}

/// Hands a chunk buffer whose bytes are on disk back to the appenders, emptied, unless
/// enough are kept or it grew too large (then it is freed).
fn recycle(sh: &Shared, mut bytes: Vec<u8>) {
    let mut spare = sh.spare.lock();
    if spare.len() < SPARE_BUFFERS && bytes.capacity() <= 4 * CHUNK_BYTES {
        bytes.clear();
        spare.push(bytes);
    }
}

/// The flusher thread: waits for appends (or a leader's failure, or `sync`, or the
/// everysec clock), writes and fsyncs per the policy, and does the final flush at close.
pub(super) fn flusher_thread(sh: &Shared) -> io::Result<()> {
    loop {
        let (stopping, force) = wait(sh);
        // Chunks are taken under the flusher lock, so a leader that gets the lock next
        // knows that whatever is no longer in `app` is on disk.
        let mut f = sh.flusher.lock();
        f.take_new(sh);
        let policy = Fsync::from_u8(sh.fsync.load(Relaxed));
        let want_sync = stopping
            || force > f.synced_lsn
            || match policy {
                Fsync::Always => true,
                Fsync::EverySec => f.last_sync.elapsed() >= EVERYSEC,
                Fsync::No => false,
            };
        let failing = f.flush_recorded(sh, policy, want_sync);
        if stopping {
            if failing {
                // One more try after a pause, then give up: SHUTDOWN must not hang.
                std::thread::sleep(RETRY);
                f.take_new(sh);
                let r = f.flush_once(sh, policy, true);
                f.publish(sh, policy);
                return r;
            }
            let settled = {
                let mut a = sh.app.lock();
                a.gather(sh);
                a.chunks.is_empty() && a.next_lsn == sh.next_lsn.load(SeqCst)
            };
            if settled {
                // A clean stop leaves the segment exactly as long as its data.
                f.trim_zeros()?;
                return f.sync_file(sh);
            }
            continue;
        }
        let synced = f.synced_lsn;
        drop(f);
        if !failing && policy != Fsync::Always && force <= synced {
            // Not idle yet, so appenders don't wake us: let a batch gather.
            std::thread::sleep(BATCH);
        }
    }
}

/// Waits for work (or a retry after a failed write, ours or a leader's); returns
/// (stopping, force_sync_to).
fn wait(sh: &Shared) -> (bool, u64) {
    let (unsynced, last_sync, synced_lsn) = {
        let f = sh.flusher.lock();
        (!f.unsynced.is_empty(), f.last_sync, f.synced_lsn)
    };
    let mut a = sh.app.lock();
    let start = Instant::now();
    loop {
        let stopping = sh.stop.load(SeqCst);
        let failing = sh.failing.load(Relaxed);
        let policy = Fsync::from_u8(sh.fsync.load(Relaxed));
        let leaders = sh.leaders.load(Relaxed) && policy == Fsync::Always;
        let sync_due = unsynced
            && policy != Fsync::No
            && (policy == Fsync::Always || last_sync.elapsed() >= EVERYSEC);
        let retry_due = failing && start.elapsed() >= RETRY;
        // With leaders, appended chunks are theirs to flush unless they wait too long.
        // Set before reading `next_lsn`: see `append`.
        sh.flusher_idle.store(true, SeqCst);
        let pending = !a.chunks.is_empty() || sh.next_lsn.load(SeqCst) > a.next_lsn;
        if pending && a.pending_since.is_none() {
            a.pending_since = Some(Instant::now());
        }
        let age = a.pending_since.map(|t| t.elapsed());
        let chunks_due = pending && (!leaders || age >= Some(BACKSTOP));
        let work = chunks_due || a.force_sync_to > synced_lsn || sync_due;
        if stopping || retry_due || (work && !failing) {
            sh.flusher_idle.store(false, Relaxed);
            return (stopping, a.force_sync_to);
        }
        let timeout = if failing {
            RETRY.saturating_sub(start.elapsed())
        } else if leaders {
            match age {
                Some(age) => BACKSTOP.saturating_sub(age),
                None => IDLE_BACKSTOP,
            }
        } else if unsynced && policy == Fsync::EverySec {
            EVERYSEC.saturating_sub(last_sync.elapsed())
        } else {
            Duration::from_secs(3600)
        };
        sh.wake.wait_for(&mut a, timeout);
    }
}

impl Flusher {
    pub(super) fn take_new(&mut self, sh: &Shared) {
        let new = {
            let mut a = sh.app.lock();
            // A thread inside its lane holds back every later block: give it a moment.
            let next = sh.next_lsn.load(SeqCst);
            a.gather_to(sh, next, GATHER_TRIES);
            a.pending_since = None;
            std::mem::take(&mut a.chunks)
        };
        self.merge(new);
    }

    fn merge(&mut self, new: Vec<Chunk>) {
        for c in new {
            match self.retained.back_mut() {
                Some(b)
                    if b.segment == c.segment
                        && b.offset + b.bytes.len() as u64 == c.offset
                        && b.counted == c.counted =>
                {
                    b.bytes.extend_from_slice(&c.bytes);
                    b.last_lsn = c.last_lsn;
                }
                _ => self.retained.push_back(c),
            }
        }
    }

    fn injected(&self, sh: &Shared) -> io::Result<()> {
        let n = sh.inject_errors.load(SeqCst);
        if n > 0 {
            sh.inject_errors.store(n - 1, SeqCst);
            return Err(io::Error::other("injected write error"));
        }
        Ok(())
    }

    /// Fills the live segment with zeros past `end` (PREZERO at a time), so the writes up to
    /// there overwrite existing bytes. Best effort: on an error (a full disk) the writes
    /// simply extend the file, as without it.
    fn prezero(&mut self, sh: &Shared, end: u64) {
        static ZEROS: [u8; crate::capped::MAX_WRITE] = [0; crate::capped::MAX_WRITE];
        let Some((_, f)) = &self.file else {
            return;
        };
        // Only `always` fsyncs often enough to gain; under everysec the zeros would only
        // double what is written.
        if end <= self.zeroed_to || Fsync::from_u8(sh.fsync.load(Relaxed)) != Fsync::Always {
            return;
        }
        let target = end.max(self.zeroed_to) + PREZERO;
        let mut at = self.zeroed_to.max(self.data_end);
        while at < target {
            let n = (target - at).min(ZEROS.len() as u64) as usize;
            if f.write_all_at(&ZEROS[..n], at).is_err() {
                break;
            }
            at += n as u64;
        }
        self.zeroed_to = at;
    }

    /// Cuts the live segment back to its data (dropping the zeros `prezero` wrote).
    fn trim_zeros(&mut self) -> io::Result<()> {
        if let Some((_, f)) = &self.file {
            if self.zeroed_to > self.data_end {
                f.set_len(self.data_end)?;
                self.zeroed_to = self.data_end;
            }
        }
        Ok(())
    }

    /// fsyncs the current file; on failure the unsynced chunks go back to be rewritten.
    fn sync_file(&mut self, sh: &Shared) -> io::Result<()> {
        let Some((_, f)) = &self.file else {
            return Ok(());
        };
        let t = Instant::now();
        let r = self.injected(sh).and_then(|()| f.sync_data());
        if let Err(e) = r {
            for c in self.unsynced.drain(..).rev() {
                self.retained.push_front(c);
            }
            sh.unsynced.store(0, Relaxed);
            return Err(e);
        }
        sh.fsyncs.fetch_add(1, Relaxed);
        sh.last_fsync_us
            .store(t.elapsed().as_micros() as u64, Relaxed);
        self.last_sync = Instant::now();
        for c in self.unsynced.drain(..) {
            recycle(sh, c.bytes);
        }
        sh.unsynced.store(0, Relaxed);
        self.synced_lsn = self.written_lsn;
        sh.synced.store(self.synced_lsn, Release);
        Ok(())
    }

    fn flush_once(&mut self, sh: &Shared, policy: Fsync, want_sync: bool) -> io::Result<()> {
        while let Some(c) = self.retained.front() {
            let (seg, first, off) = (c.segment, c.seg_first_lsn, c.offset);
            if self.file.as_ref().is_none_or(|(s, _)| *s != seg) {
                // Rotation: the old segment must be complete on disk, without its zeros,
                // before a later one exists, so only the last segment can ever have a torn
                // or zero tail.
                self.trim_zeros()?;
                self.sync_file(sh)?;
                let f = create_segment(&sh.dir, seg, first)?;
                self.file = Some((seg, f));
                (self.data_end, self.zeroed_to) = (SEG_HEADER_LEN, SEG_HEADER_LEN);
                sh.live_segment.store(seg, Release);
                sh.segments.fetch_add(1, Relaxed);
                sh.disk_bytes.fetch_add(SEG_HEADER_LEN, Relaxed);
                continue;
            }
            self.injected(sh)?;
            let len = self.retained.front().map_or(0, |c| c.bytes.len() as u64);
            self.prezero(sh, off + len);
            let (Some((_, f)), Some(c)) = (&self.file, self.retained.front()) else {
                break;
            };
            let r = crate::capped::write_all_at(f, &c.bytes, off);
            if let Err(e) = r {
                // Cut any partial block so a crash now leaves a clean tail; the whole chunk
                // is rewritten at the same offset on retry.
                let _ = f.set_len(off);
                self.zeroed_to = self.zeroed_to.min(off);
                return Err(e);
            }
            let Some(mut c) = self.retained.pop_front() else {
                break;
            };
            self.data_end = off + c.bytes.len() as u64;
            self.written_lsn = c.last_lsn;
            sh.written.store(c.last_lsn, Release);
            if !c.counted {
                c.counted = true;
                let n = c.bytes.len() as u64;
                sh.pending.fetch_sub(n, Relaxed);
                sh.disk_bytes.fetch_add(n, Relaxed);
            }
            if policy != Fsync::No || want_sync {
                // Kept only to be rewritten if the fsync fails: a buffer mostly empty
                // (writes spaced out, each written at once) is swapped for an exact copy
                // and reused now, or each small write would hold a whole chunk buffer
                // until the next fsync, a second later under everysec.
                if c.bytes.len() * 4 < c.bytes.capacity() {
                    let copy = c.bytes.clone();
                    recycle(sh, std::mem::replace(&mut c.bytes, copy));
                }
                self.unsynced.push(c);
            } else {
                recycle(sh, c.bytes);
            }
        }
        let unsynced: usize = self.unsynced.iter().map(|c| c.bytes.len()).sum();
        let want_sync = want_sync || unsynced > MAX_UNSYNCED;
        if want_sync && self.synced_lsn < self.written_lsn {
            self.sync_file(sh)?;
        }
        let held: usize = self.unsynced.iter().map(|c| c.bytes.capacity()).sum();
        sh.unsynced.store(held as u64, Relaxed);
        Ok(())
    }

    /// `flush_once`, its outcome recorded (`record`) and published; true if it failed.
    pub(super) fn flush_recorded(&mut self, sh: &Shared, policy: Fsync, want_sync: bool) -> bool {
        let res = self.flush_once(sh, policy, want_sync);
        record(sh, &res);
        self.publish(sh, policy);
        res.is_err()
    }

    /// Advances durable_lsn, runs the callbacks and wakes `sync()` waiters.
    fn publish(&mut self, sh: &Shared, policy: Fsync) {
        let d = if policy == Fsync::No {
            self.written_lsn
        } else {
            self.synced_lsn
        };
        let prev = sh.durable.fetch_max(d, AcqRel);
        if d > prev {
            for cb in sh.callbacks.read().iter() {
                cb(d);
            }
        }
        let _g = sh.durable_mx.lock();
        sh.durable_cv.notify_all();
    }
}
