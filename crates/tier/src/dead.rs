//! The tier's records its store could not delete after a write failed (a disk filled by
//! another process beyond the tier's reserve). fjall takes no write after one fails (it
//! poisons itself until reopened), so from then on a DEL or a write of a cold key cannot
//! remove the store's copy. Stopping the server would lose nothing (the restart rebuilds
//! the tier from the snapshot and the journal) but would stop every client; instead those
//! records read as gone here until the restart, and the tier takes no more entries (the
//! eviction policy applies, as when the tier is full).

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct Dead {
    /// Set once a write failed; until then nothing below is looked at.
    broken: AtomicBool,
    /// Per database.
    dbs: Mutex<Vec<DbDead>>,
}

#[derive(Default)]
struct DbDead {
    /// A clear failed: every record of the database is gone.
    all: bool,
    /// Record keys whose removal failed.
    keys: HashSet<Vec<u8>>,
}

impl Dead {
    /// Whether a write of the store has failed (it takes no more until a restart).
    #[inline]
    pub fn broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// A write failed; `record`, a record of database `db`, was to be removed by it.
    pub fn failed(&self, db: usize, record: Option<&[u8]>) {
        self.broken.store(true, Ordering::SeqCst);
        if let Some(r) = record {
            self.with(db, |d| {
                d.keys.insert(r.to_vec());
            });
        }
    }

    /// A clear of database `db` failed: none of its records is live any more.
    pub fn failed_all(&self, db: usize) {
        self.broken.store(true, Ordering::SeqCst);
        self.with(db, |d| {
            d.all = true;
            d.keys.clear();
        });
    }

    /// A clear of database `db` succeeded: its records are gone for real.
    pub fn cleared(&self, db: usize) {
        if self.broken() {
            self.with(db, |d| *d = DbDead::default());
        }
    }

    /// Whether `record` of database `db` reads as gone.
    #[inline]
    pub fn is_dead(&self, db: usize, record: &[u8]) -> bool {
        self.broken()
            && self
                .dbs
                .lock()
                .get(db)
                .is_some_and(|d| d.all || d.keys.contains(record))
    }

    /// SWAPDB: the databases' records change places, and so do their dead ones.
    pub fn swap(&self, a: usize, b: usize) {
        if self.broken() {
            let mut dbs = self.dbs.lock();
            let n = a.max(b) + 1;
            if dbs.len() < n {
                dbs.resize_with(n, DbDead::default);
            }
            dbs.swap(a, b);
        }
    }

    fn with(&self, db: usize, f: impl FnOnce(&mut DbDead)) {
        let mut dbs = self.dbs.lock();
        if dbs.len() <= db {
            dbs.resize_with(db + 1, DbDead::default);
        }
        f(&mut dbs[db]);
    }
}

#[cfg(test)]
mod tests {
    use super::Dead;

    #[test]
    fn records_read_as_gone_once_their_removal_failed() {
        let d = Dead::default();
        assert!(!d.broken() && !d.is_dead(0, b"k"));
        d.failed(1, None);
        assert!(d.broken() && !d.is_dead(1, b"k"));
        d.failed(1, Some(b"k"));
        assert!(d.is_dead(1, b"k") && !d.is_dead(0, b"k") && !d.is_dead(1, b"j"));
        d.swap(0, 1);
        assert!(d.is_dead(0, b"k") && !d.is_dead(1, b"k"));
        d.failed_all(2);
        assert!(d.is_dead(2, b"anything"));
        d.cleared(2);
        d.cleared(0);
        assert!(!d.is_dead(2, b"anything") && !d.is_dead(0, b"k"));
        assert!(d.broken(), "the store stays broken until a restart");
    }
}
