//! Frees large values on a background thread, as Redis's lazyfree does: UNLINK's values of
//! more than LAZYFREE_THRESHOLD allocations, and FLUSHDB/FLUSHALL ASYNC's tables. Freeing a
//! 2M-member sorted set takes a worker tens of milliseconds, with its other clients waiting.

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Redis's LAZYFREE_THRESHOLD: values needing more allocations than this to free are freed
/// in the background; smaller ones cost less to free than to hand over.
pub const LAZYFREE_THRESHOLD: usize = 64;

type Garbage = Box<dyn Send>;

/// The background thread's queue, started on first use. None if the thread could not start.
fn queue() -> Option<&'static Sender<Garbage>> {
    static QUEUE: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Garbage>();
            let spawned = std::thread::Builder::new()
                .name("strata-lazyfree".into())
                .spawn(move || rx.into_iter().for_each(drop));
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

/// Drops `garbage` on the background thread, or here if that thread is not running (a
/// failed send hands the value back, and it is dropped with the error).
pub fn free_later<T: Send + 'static>(garbage: T) {
    match queue() {
        Some(tx) => drop(tx.send(Box::new(garbage))),
        None => drop(garbage),
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
        for _ in 0..3 {
            super::free_later(Tattler(tx.clone()));
        }
        for _ in 0..3 {
            let name = rx.recv_timeout(std::time::Duration::from_secs(10));
            assert_eq!(name, Ok(Some("strata-lazyfree".to_string())));
        }
    }
}
