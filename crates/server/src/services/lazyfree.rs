//! Frees large values on a background thread, as Redis's lazyfree does: UNLINK's values of
//! more than LAZYFREE_THRESHOLD allocations, and FLUSHDB/FLUSHALL ASYNC's tables. Freeing a
//! 2M-member sorted set takes a worker tens of milliseconds, with its other clients waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Redis's LAZYFREE_THRESHOLD: values needing more allocations than this to free are freed
/// in the background; smaller ones cost less to free than to hand over.
pub const LAZYFREE_THRESHOLD: usize = 64;

/// Something to drop, and how many objects Redis would count in it (a value: one; a
/// flushed database: its keys).
type Garbage = (Box<dyn Send>, u64);

/// Objects handed to the thread and not freed yet (INFO `lazyfree_pending_objects`).
static PENDING: AtomicU64 = AtomicU64::new(0);
/// Objects the thread has freed (INFO `lazyfreed_objects`; CONFIG RESETSTAT zeroes it).
static FREED: AtomicU64 = AtomicU64::new(0);

pub fn pending_objects() -> u64 {
    PENDING.load(Ordering::Relaxed)
}

pub fn freed_objects() -> u64 {
    FREED.load(Ordering::Relaxed)
}

pub fn reset_stats() {
    FREED.store(0, Ordering::Relaxed);
}

/// The background thread's queue, started on first use. None if the thread could not start.
fn queue() -> Option<&'static Sender<Garbage>> {
    static QUEUE: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Garbage>();
            let spawned = std::thread::Builder::new()
                .name("strata-lazyfree".into())
                .spawn(move || {
                    for (garbage, objects) in rx {
                        drop(garbage);
                        PENDING.fetch_sub(objects, Ordering::Relaxed);
                        FREED.fetch_add(objects, Ordering::Relaxed);
                    }
                });
            match spawned {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::warn!("lazyfree thread: {e}; freeing in place");
                    None
                }
            }
        })
        .as_ref()
}

/// Drops `garbage`, holding `objects` objects as Redis counts them, on the background
/// thread, or here if that thread is not running (a failed send hands the value back, and
/// it is dropped with the error).
pub fn free_later<T: Send + 'static>(garbage: T, objects: u64) {
    let Some(tx) = queue() else {
        return drop(garbage);
    };
    PENDING.fetch_add(objects, Ordering::Relaxed);
    if tx.send((Box::new(garbage), objects)).is_err() {
        PENDING.fetch_sub(objects, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{channel, Sender};

    /// Reports the name of the thread that drops it.
    struct Tattler(Sender<Option<String>>);

    impl Drop for Tattler {
        fn drop(&mut self) {
            let _ = self
                .0
                .send(std::thread::current().name().map(str::to_owned));
        }
    }

    #[test]
    fn values_are_dropped_on_the_lazyfree_thread() {
        let (tx, rx) = channel();
        let freed = super::freed_objects();
        for _ in 0..3 {
            super::free_later(Tattler(tx.clone()), 2);
        }
        for _ in 0..3 {
            let name = rx.recv_timeout(std::time::Duration::from_secs(10));
            assert_eq!(name, Ok(Some("strata-lazyfree".to_string())));
        }
        // Counted once each is dropped (other tests may free more meanwhile).
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while super::freed_objects() < freed + 6 {
            assert!(std::time::Instant::now() < end, "freed objects not counted");
            std::thread::yield_now();
        }
    }
}
