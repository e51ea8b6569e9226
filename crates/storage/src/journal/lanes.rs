//! Appending threads' lanes and the `Appender` that gathers them: each thread encodes its
//! blocks into a lane of its own; whoever flushes takes every lane's blocks and places them
//! in LSN order at the journal's end, so offsets are fixed and the file has no LSN gap.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::{Chunk, Shared, CHUNK_BYTES};
use crate::format::SEG_HEADER_LEN;
use crate::recovery::Position;

/// Encoded blocks in LSN order: one thread's lane, or what a gather took from one.
#[derive(Default)]
pub(super) struct Run {
    /// The blocks, back to back.
    pub(super) bytes: Vec<u8>,
    /// Each block's LSN and length (LSNs increase: one thread took them in turn).
    pub(super) blocks: VecDeque<(u64, u32)>,
    /// Bytes at the front of `bytes` already placed.
    pub(super) done: usize,
}

/// The placed blocks and where the journal's end is, under the `app` lock, which the
/// thread gathering the lanes holds (appenders do not take it).
pub(super) struct Appender {
    pub(super) chunks: Vec<Chunk>,
    /// LSN of the next block placed.
    pub(super) next_lsn: u64,
    pub(super) pos: Position,
    pub(super) seg_first_lsn: u64,
    /// Gathered blocks that wait for an earlier LSN, still in its thread's lane.
    pub(super) held: Vec<Run>,
    /// Emptied runs, swapped into lanes by the next gather.
    pub(super) free: Vec<Run>,
    /// `sync()` wants everything up to this LSN fsynced whatever the policy.
    pub(super) force_sync_to: u64,
    /// Since when blocks wait (the flusher backs leaders up after `BACKSTOP`).
    pub(super) pending_since: Option<Instant>,
}

thread_local! {
    /// This thread's lane in each journal it appended to, by `Shared::id`.
    static LANES: RefCell<Vec<(u64, Arc<Mutex<Run>>)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the calling thread's lane of `sh`, locked (made and registered on first use).
pub(super) fn with_lane<R>(sh: &Shared, f: impl FnOnce(&mut Run) -> R) -> R {
    LANES.with_borrow_mut(|lanes| {
        let i = match lanes.iter().position(|(id, _)| *id == sh.id) {
            Some(i) => i,
            None => {
                // Lanes of journals since closed are held by this thread alone.
                lanes.retain(|(_, l)| Arc::strong_count(l) > 1);
                let lane = Arc::new(Mutex::new(Run::default()));
                sh.lanes.lock().push(lane.clone());
                lanes.push((sh.id, lane));
                lanes.len() - 1
            }
        };
        let r = f(&mut lanes[i].1.lock());
        r
    })
}

/// Gathers a flush makes while a block it wants is still in a thread's lane.
pub(super) const GATHER_TRIES: usize = 64;
/// Emptied runs kept for reuse (about one per appending thread).
const SPARE_RUNS: usize = 16;

impl Appender {
    /// Takes every lane's blocks and places those that continue the LSN sequence. Blocks
    /// after a gap (an LSN whose thread is still inside its lane) wait in `held`.
    pub(super) fn gather(&mut self, sh: &Shared) {
        sh.lanes.lock().retain(|lane| {
            let mut run = lane.lock();
            if run.blocks.is_empty() {
                // A lane only the registry holds belongs to a thread that has exited.
                return Arc::strong_count(lane) > 1;
            }
            let mut fresh = self.free.pop().unwrap_or_default();
            std::mem::swap(&mut *run, &mut fresh);
            self.held.push(fresh);
            true
        });
        let mut runs = std::mem::take(&mut self.held);
        loop {
            let before = self.next_lsn;
            for r in &mut runs {
                while let Some(&(lsn, len)) = r.blocks.front() {
                    if lsn != self.next_lsn {
                        break;
                    }
                    r.blocks.pop_front();
                    let end = r.done + len as usize;
                    self.place(sh, &r.bytes[r.done..end], false);
                    r.done = end;
                }
            }
            if self.next_lsn == before {
                break;
            }
        }
        for mut r in runs {
            if !r.blocks.is_empty() {
                self.held.push(r);
            } else if self.free.len() < SPARE_RUNS && r.bytes.capacity() <= 4 * CHUNK_BYTES {
                r.bytes.clear();
                r.done = 0;
                self.free.push(r);
            }
        }
    }

    /// Gathers until every block before `lsn` is placed, at most `tries` times.
    pub(super) fn gather_to(&mut self, sh: &Shared, lsn: u64, tries: usize) {
        for _ in 0..tries {
            self.gather(sh);
            if self.next_lsn >= lsn {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Puts one encoded block at the journal's end, with the next LSN, in a new segment
    /// when it would take the current one past its size, or when `new_segment` asks for
    /// one (an empty segment is never left behind). Returns where it starts.
    pub(super) fn place(&mut self, sh: &Shared, block: &[u8], new_segment: bool) -> Position {
        let blen = block.len() as u64;
        let lsn = self.next_lsn;
        if self.pos.offset > SEG_HEADER_LEN
            && (new_segment || self.pos.offset + blen > sh.segment_bytes)
        {
            self.pos = Position {
                segment: self.pos.segment + 1,
                offset: SEG_HEADER_LEN,
            };
            self.seg_first_lsn = lsn;
        }
        let pos = self.pos;
        let extend = self.chunks.last().is_some_and(|c| {
            c.segment == pos.segment && c.offset + c.bytes.len() as u64 == pos.offset
        });
        if !extend {
            let bytes = sh
                .spare
                .lock()
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK_BYTES.max(block.len())));
            self.chunks.push(Chunk {
                segment: pos.segment,
                seg_first_lsn: self.seg_first_lsn,
                offset: pos.offset,
                bytes,
                last_lsn: lsn,
                counted: false,
            });
        }
        if let Some(c) = self.chunks.last_mut() {
            c.bytes.extend_from_slice(block);
            c.last_lsn = lsn;
        }
        self.next_lsn = lsn + 1;
        self.pos.offset += blen;
        sh.pending.fetch_add(blen, Relaxed);
        pos
    }
}
