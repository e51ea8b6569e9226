//! Keys of a file stored by threads of their own while the caller's thread decodes the
//! next ones, each lane into a [`Sink`] of its own (the keyspace, or a snapshot file). A
//! load is mostly cache misses in the keyspace's tables (one lookup and one insert per key)
//! and decoding; with the two on different cores, and two lanes storing, a 10M-key file
//! loads in well under the time one thread takes.
//!
//! Each key goes to the lane its keyspace shard picks: a shard's lock and table header
//! stay in one core's cache instead of moving between the lanes' cores with every key,
//! and two records of one key (only a damaged file has them) are stored in file order. The first error a lane meets stops every lane
//! and is returned by the next `send` or by `finish`.

use super::load::{LoadError, Loaded, Sink, Tally};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use strata_engine::{clock, prefetch_line};
use strata_rdb::{Entry, RdbValue};

/// Keys handed to a lane at once: the channel's cost spread over many keys.
const BATCH: usize = 256;
/// Batches waiting per lane: bounds what decoding may run ahead by.
const QUEUED: usize = 8;
/// How many keys ahead of the one being stored a lane starts loading table slots: enough
/// for the cache misses to arrive while the keys between are stored.
const AHEAD: usize = 4;
/// How many keys ahead a lane starts loading the key's shard, whose lock and table header
/// the slots' prefetch reads (it stalled on them: a tenth of a collections load).
const FAR: usize = 2 * AHEAD;
/// How many keys ahead a lane starts loading the key's bytes, which the decoding thread
/// wrote on its own core and the shard's prefetch hashes.
const KEYS: usize = 3 * AHEAD;

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    error: Mutex<Option<LoadError>>,
    stored: AtomicU64,
}

impl Shared {
    fn fail(&self, e: LoadError) {
        self.error.lock().get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
    }
}

struct Lane {
    tx: Option<SyncSender<Vec<Entry>>>,
    /// Batches the lane has emptied, for reuse: a batch allocated here and freed on the
    /// lane's thread came back from the allocator as fresh pages, a page fault a batch.
    spare: Receiver<Vec<Entry>>,
    batch: Vec<Entry>,
    thread: Option<JoinHandle<Tally>>,
}

pub(super) struct Lanes {
    lanes: Vec<Lane>,
    shared: Arc<Shared>,
}

impl Lanes {
    /// `n` lanes, each storing into a sink `make` gives it (None if a thread cannot be
    /// started: the caller then stores keys itself).
    pub fn start(n: usize, make: impl Fn() -> Box<dyn Sink + 'static>) -> Option<Lanes> {
        let shared = Arc::new(Shared::default());
        let mut lanes = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = sync_channel(QUEUED);
            let (back, spare) = sync_channel(QUEUED + 1);
            let (sink, shared2) = (make(), shared.clone());
            let thread = std::thread::Builder::new()
                .name(format!("strata-load-{i}"))
                .spawn(move || store(sink, rx, &back, &shared2))
                .ok()?;
            lanes.push(Lane {
                tx: Some(tx),
                spare,
                batch: Vec::with_capacity(BATCH),
                thread: Some(thread),
            });
        }
        Some(Lanes { lanes, shared })
    }

    /// Keys the lanes have handled so far (stored, or skipped as expired).
    pub fn stored(&self) -> u64 {
        self.shared.stored.load(Ordering::Relaxed)
    }

    /// Queues `e` for its lane; a lane's error, once one has stopped.
    pub fn send(&mut self, e: Entry) -> Result<(), LoadError> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(self.take_error());
        }
        let i = (strata_engine::shard_pick(&e.key) % self.lanes.len() as u64) as usize;
        let lane = &mut self.lanes[i];
        lane.batch.push(e);
        if lane.batch.len() >= BATCH {
            let next = lane
                .spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            let full = std::mem::replace(&mut lane.batch, next);
            // A lane that ended has failed: its error is what `take_error` returns.
            if lane.tx.as_ref().is_none_or(|tx| tx.send(full).is_err()) {
                return Err(self.take_error());
            }
        }
        Ok(())
    }

    /// Stores what is queued, waits for the lanes and adds up what they did.
    pub fn finish(mut self) -> Result<Tally, LoadError> {
        for lane in &mut self.lanes {
            let rest = std::mem::take(&mut lane.batch);
            if let Some(tx) = lane.tx.take() {
                if !rest.is_empty() {
                    let _ = tx.send(rest);
                }
            }
        }
        let mut total = Tally::default();
        for lane in &mut self.lanes {
            match lane.thread.take().map(JoinHandle::join) {
                Some(Ok(t)) => total.add(&t),
                // A lane that panicked lost its keys: the load fails rather than keep less.
                Some(Err(_)) => self.shared.fail(LoadError::Stopped),
                None => {}
            }
        }
        if self.shared.stop.load(Ordering::SeqCst) {
            return Err(self.take_error());
        }
        Ok(total)
    }

    fn take_error(&self) -> LoadError {
        self.shared
            .error
            .lock()
            .take()
            .unwrap_or(LoadError::Stopped)
    }
}

impl Drop for Lanes {
    /// A load abandoned half-way (the caller met an error) stores nothing more once this
    /// returns: the caller may then discard what was stored.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for lane in &mut self.lanes {
            lane.tx = None;
        }
        for lane in &mut self.lanes {
            if let Some(t) = lane.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// A lane's thread: stores each batch's keys until the channel closes or a lane fails,
/// then lets its sink finish.
fn store(
    mut sink: Box<dyn Sink>,
    rx: Receiver<Vec<Entry>>,
    back: &SyncSender<Vec<Entry>>,
    shared: &Shared,
) -> Tally {
    let mut tally = Tally::default();
    for mut batch in rx {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        // One clock reading a batch: expiry is judged as of the batch's start.
        let now = clock::now_ms();
        for (i, e) in batch.iter().enumerate() {
            if let Some(farther) = batch.get(i + KEYS) {
                prefetch_line(farther.key.as_ptr());
            }
            if let Some(far) = batch.get(i + FAR) {
                sink.prefetch_far(far);
            }
            if let Some(next) = batch.get(i + AHEAD) {
                sink.prefetch(next);
                if let RdbValue::Packed(p) = &next.value {
                    let blob = p.blob().as_ptr();
                    prefetch_line(blob);
                    prefetch_line(blob.wrapping_add(64));
                }
            }
            match sink.put(e, now) {
                Ok(Loaded::Expired) => tally.expired += 1,
                Ok(Loaded::Stored) => tally.stored(e),
                Err(err) => {
                    shared.fail(err);
                    return tally;
                }
            }
        }
        shared
            .stored
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        batch.clear();
        // Full: the loader has spares enough, and this one is freed.
        let _ = back.try_send(batch);
    }
    if !shared.stop.load(Ordering::Relaxed) {
        if let Err(err) = sink.finish() {
            shared.fail(err);
        }
    }
    tally
}
