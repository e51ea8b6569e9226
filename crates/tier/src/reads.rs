//! Reads of the same cold key merge: while one read ahead of a key is on its way, commands
//! that need the same key wait for it instead of reading the store again (a key that turns
//! hot is asked for by many clients at once).

use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// (database, shard, key): a cold key's place.
type Place = (usize, usize, bytes::Bytes);

#[derive(Default)]
struct Read {
    done: Mutex<bool>,
    cv: Condvar,
}

#[derive(Default)]
pub struct ReadMerger {
    inflight: Mutex<HashMap<Place, Arc<Read>>>,
    /// Reads that waited for another's instead of reading.
    pub merged: AtomicU64,
}

impl ReadMerger {
    /// Runs `read` for `place` unless a read of it is in flight, then waits for that one.
    pub fn read(&self, place: Place, read: impl FnOnce()) {
        let (mine, read_state) = {
            let mut inflight = self.inflight.lock();
            match inflight.get(&place) {
                Some(r) => (false, r.clone()),
                None => {
                    let r = Arc::new(Read::default());
                    inflight.insert(place.clone(), r.clone());
                    (true, r)
                }
            }
        };
        if !mine {
            self.merged.fetch_add(1, Relaxed);
            let mut done = read_state.done.lock();
            while !*done {
                read_state.cv.wait(&mut done);
            }
            return;
        }
        // The entry leaves the map even if `read` unwinds, so no one waits forever.
        struct Finish<'a>(&'a ReadMerger, Option<Place>, Arc<Read>);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                if let Some(place) = self.1.take() {
                    self.0.inflight.lock().remove(&place);
                }
                *self.2.done.lock() = true;
                self.2.cv.notify_all();
            }
        }
        let _finish = Finish(self, Some(place), read_state);
        read();
    }

    /// Reads in flight now (for tests).
    #[cfg(test)]
    fn waiting_on(&self, place: &Place) -> bool {
        self.inflight.lock().contains_key(place)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn count(n: &AtomicUsize) {
        n.fetch_add(1, Relaxed);
    }

    #[test]
    fn readers_of_one_key_share_one_read() {
        let m = Arc::new(ReadMerger::default());
        let reads = Arc::new(AtomicUsize::new(0));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let place: Place = (0, 3, bytes::Bytes::from_static(b"k"));
        let first = {
            let (m, reads, place) = (m.clone(), reads.clone(), place.clone());
            std::thread::spawn(move || {
                m.read(place, || {
                    count(&reads);
                    wait.recv().ok();
                })
            })
        };
        while !m.waiting_on(&place) {
            std::thread::yield_now();
        }
        let others: Vec<_> = (0..4)
            .map(|_| {
                let (m, reads, place) = (m.clone(), reads.clone(), place.clone());
                std::thread::spawn(move || m.read(place, || count(&reads)))
            })
            .collect();
        while m.merged.load(Relaxed) < 4 {
            std::thread::yield_now();
        }
        release.send(()).unwrap();
        first.join().unwrap();
        for t in others {
            t.join().unwrap();
        }
        assert_eq!(reads.load(Relaxed), 1);
        assert!(!m.waiting_on(&place));
        // Another key, or the same key once its read is over, reads afresh.
        m.read(place, || count(&reads));
        m.read((0, 3, bytes::Bytes::from_static(b"j")), || count(&reads));
        assert_eq!(reads.load(Relaxed), 3);
    }
}
