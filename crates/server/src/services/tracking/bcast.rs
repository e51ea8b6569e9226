//! BCAST mode: clients subscribe to key prefixes instead of the keys they read. Writes note
//! the keys that match a prefix; the notes are sent as one message per prefix when the
//! command (or EXEC, or script) that wrote them ends, or after an expiry pass, as Redis
//! sends them once per event-loop turn.

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Prefix {
    /// Subscribed client ids.
    clients: Vec<u64>,
    /// Keys changed since the last flush, with the id of the client that changed each last
    /// (0: no client, an expiry), for NOLOOP.
    changed: Mutex<BTreeMap<Bytes, u64>>,
}

/// One prefix's changes, taken for sending.
pub(crate) struct Batch {
    pub clients: Vec<u64>,
    pub keys: BTreeMap<Bytes, u64>,
}

#[derive(Default)]
pub(crate) struct Prefixes {
    map: RwLock<BTreeMap<Bytes, Prefix>>,
    /// Prefixes with subscribers (INFO tracking_total_prefixes); 0 lets writers skip.
    count: AtomicUsize,
    /// Some prefix has changed keys to send.
    pending: AtomicBool,
}

impl Prefixes {
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// Subscribes client `id` to `prefix`; false if it already was.
    pub(crate) fn subscribe(&self, prefix: &Bytes, id: u64) -> bool {
        let mut map = self.map.write();
        let p = map.entry(prefix.clone()).or_insert_with(|| {
            self.count.fetch_add(1, Ordering::Relaxed);
            Prefix {
                clients: Vec::new(),
                changed: Mutex::default(),
            }
        });
        if p.clients.contains(&id) {
            return false;
        }
        p.clients.push(id);
        true
    }

    /// Unsubscribes client `id`; a prefix left without subscribers goes, with its notes.
    pub(crate) fn unsubscribe(&self, prefix: &[u8], id: u64) {
        let mut map = self.map.write();
        if let Some(p) = map.get_mut(prefix) {
            p.clients.retain(|c| *c != id);
            if p.clients.is_empty() {
                map.remove(prefix);
                self.count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// `key` changed, by client `by` (0: none): notes it under every prefix it starts with.
    pub(crate) fn note(&self, key: &[u8], by: u64) {
        let map = self.map.read();
        for (prefix, p) in map.iter() {
            if key.starts_with(prefix) {
                p.changed.lock().insert(Bytes::copy_from_slice(key), by);
                self.pending.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Takes every prefix's notes.
    pub(crate) fn take(&self) -> Vec<Batch> {
        if !self.pending.swap(false, Ordering::Relaxed) {
            return Vec::new();
        }
        let map = self.map.read();
        map.values()
            .filter_map(|p| {
                let keys = std::mem::take(&mut *p.changed.lock());
                (!keys.is_empty()).then(|| Batch {
                    clients: p.clients.clone(),
                    keys,
                })
            })
            .collect()
    }
}

/// The RESP array of a batch's keys, leaving out those `skip` changed last (NOLOOP);
/// None when nothing is left.
pub(crate) fn keys_array(keys: &BTreeMap<Bytes, u64>, skip: Option<u64>) -> Option<Vec<u8>> {
    let kept = || keys.iter().filter(move |(_, by)| skip != Some(**by));
    let n = kept().count();
    if n == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(16 + keys.len() * 16);
    // Both protocols carry the keys as an array.
    let mut r = strata_resp::Reply::new(&mut out, strata_resp::Protocol::Resp2);
    r.array(n);
    for (k, _) in kept() {
        r.bulk(k);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_go_to_matching_prefixes_once_each() {
        let p = Prefixes::default();
        assert!(p.subscribe(&Bytes::from_static(b"a:"), 1));
        assert!(!p.subscribe(&Bytes::from_static(b"a:"), 1));
        assert!(p.subscribe(&Bytes::from_static(b""), 2));
        assert_eq!(p.count(), 2);
        p.note(b"a:1", 1);
        p.note(b"b", 0);
        p.note(b"a:1", 3);
        assert!(p.pending());
        let batches = p.take();
        assert_eq!(batches.len(), 2);
        let all = &batches[0];
        assert_eq!(all.clients, vec![2]);
        assert_eq!(all.keys.len(), 2);
        let a = &batches[1];
        assert_eq!(a.keys.get(&b"a:1"[..]), Some(&3), "the last writer counts");
        assert!(p.take().is_empty(), "taken once");
        assert_eq!(
            keys_array(&a.keys, Some(3)),
            None,
            "NOLOOP leaves out the client's own change"
        );
        assert_eq!(
            keys_array(&all.keys, Some(0)).as_deref(),
            Some(&b"*1\r\n$3\r\na:1\r\n"[..])
        );
        p.unsubscribe(b"a:", 1);
        p.unsubscribe(b"", 2);
        assert_eq!(p.count(), 0);
    }
}
