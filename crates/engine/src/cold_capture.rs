//! A snapshot's capture of cold entries (docs/tiering.md, invariant 3).
//!
//! A shard's cold entries go to the snapshot with its last chunk (`capture_cold`). Until
//! then a write to one of its cold keys must leave the snapshot that key's entry as it
//! was at the snapshot's start. Reading it first would cost every write that replaces a
//! cold key whole, which otherwise drops it unread. So the capture opens a read view of
//! the store (`ColdStore::open_view`), which later writes leave as it is, and a cold key
//! that a write reaches is saved aside as "in the view" (`Saved::InView`), unread; the
//! last chunk reads it from the view.
//!
//! The view opens once the writes from before the snapshot's cut are over (they belong to
//! the snapshot). From then on a key's value changes only by a write that saves it aside
//! first; moves between RAM and the store change no value, and a key that comes back from
//! the store and leaves again unchanged is not rewritten. So a key that has no saved entry
//! and a record both in the view and in the store has the same record in both: its value
//! at the snapshot's start. A key evicted since the view opened has no record in the view:
//! it is saved as usual.

use crate::cold::{is_clean, ColdStore};
use crate::keyspace::{Captured, Db};
use crate::shard::{Saved, ShardData};
use std::sync::atomic::Ordering::SeqCst;

impl crate::Keyspace {
    /// Called by snapshot `epoch` once the writes from before its cut are over: opens the
    /// store's view, if it has one, and writes may then save cold keys as in it.
    pub fn open_cold_view(&self, epoch: u64) {
        let hooks = self.hooks();
        if let Some(store) = hooks.cold.get() {
            if epoch != 0 && store.open_view() {
                hooks.capture.store(epoch, SeqCst);
            }
        }
    }

    /// The capture of the snapshot is over (or has stopped): the view closes.
    pub fn close_cold_view(&self) {
        let hooks = self.hooks();
        if hooks.capture.swap(0, SeqCst) != 0 {
            if let Some(store) = hooks.cold.get() {
                store.close_view();
            }
        }
    }
}

impl Db {
    /// Whether `key` (in the store, with nothing saved aside for it) is in the store's
    /// view of snapshot `epoch`, with the record the store has.
    pub(crate) fn in_view(
        &self,
        store: &dyn ColdStore,
        epoch: u64,
        idx: usize,
        key: &[u8],
    ) -> bool {
        self.hooks.capture.load(SeqCst) == epoch && store.view_contains(self.index(), idx, key)
    }

    /// For a write during snapshot `epoch` (`Db::preserve`, with the shard's capture state
    /// for `epoch` made): saves `key` aside as in the store's view if it is a cold key the
    /// view holds, without reading it. False: the caller saves it as usual.
    pub(crate) fn save_cold_unread(
        &self,
        g: &mut ShardData,
        h: u64,
        key: &[u8],
        epoch: u64,
    ) -> bool {
        if g.cold == 0 || self.hooks.capture.load(SeqCst) != epoch {
            return false;
        }
        let Some(store) = self.cold_store() else {
            return false;
        };
        if g.position(h, key).is_some() || !g.cold_filter.may_contain(h) {
            return false;
        }
        let idx = self.shard_index(h);
        let Some(pre) = g.pre.as_mut().filter(|p| p.epoch == epoch) else {
            return false;
        };
        if pre.map.contains_key(key) {
            return true;
        }
        if !store.contains(self.index(), idx, key) || !self.in_view(store, epoch, idx, key) {
            return false;
        }
        pre.map.insert(key.into(), Saved::InView);
        true
    }

    /// What writes saved aside, for the capture's last chunk: values as saved, cold keys
    /// from the store's view.
    pub(crate) fn give_saved(
        &self,
        idx: usize,
        saved: &hashbrown::HashMap<Box<[u8]>, Saved>,
        f: &mut impl FnMut(Captured<'_>),
    ) {
        let store = self.cold_store();
        for (key, old) in saved {
            match old {
                Saved::Value(o) => f(Captured::Value(key, o)),
                Saved::InView => {
                    if let Some(o) = store.and_then(|s| s.view_get(self.index(), idx, key)) {
                        f(Captured::Cold(key, &o));
                    }
                }
                Saved::Gone => {}
            }
        }
    }

    /// The shard's cold entries for its capture's last chunk, except keys saved aside.
    pub(crate) fn capture_cold(&self, g: &ShardData, idx: usize, f: &mut impl FnMut(Captured<'_>)) {
        let (Some(store), true) = (self.cold_store(), g.cold != 0) else {
            return;
        };
        let saved = g.pre.as_ref().map(|p| &p.map);
        store.each(self.index(), idx, &mut |key, owned| {
            // Clean keys are in RAM: the walk gave them.
            let in_ram = is_clean(g, key);
            if !in_ram && !saved.is_some_and(|m| m.contains_key(key)) {
                f(Captured::Cold(key, &owned));
            }
            true
        });
    }
}
