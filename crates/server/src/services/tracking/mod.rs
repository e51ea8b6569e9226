//! Client-side caching (CLIENT TRACKING), as Redis 7.0's tracking.c.
//!
//! A tracking client's reads record, per key, that it may cache the key (`table.rs`); a
//! write to the key removes the record and sends each recorded client an `invalidate`
//! message: a RESP3 push on its own connection, or, with REDIRECT, a push to the client it
//! redirects to, or a `__redis__:invalidate` pub/sub message when that client speaks RESP2
//! and is subscribed. In BCAST mode a client records nothing and is told about every
//! changed key under its prefixes instead (`bcast.rs`). FLUSHDB and FLUSHALL send every
//! tracking client a null ("everything"); keys removed to keep the table under
//! `tracking-table-max-keys` are invalidated as if written.
//!
//! Reads record their keys before they run, not after: a write then either comes before
//! the read (which sees the new value) or finds the record, so no read can cache a value
//! no invalidation will cover, whatever threads the reader and writer run on.
//!
//! Writers reach this through `Ctx::notify` (every changed key, the place WATCH learns of
//! it too) and the expired-key hook; with no tracking client that costs one relaxed load.
//! A message for the client whose command causes it waits in `Current::deferred` and is
//! written after that command's reply (after EXEC's whole reply), as Redis does.

mod bcast;
mod table;

use crate::exec::client::ClientInfo;
use crate::services::pubsub::BufferLimit;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use strata_resp::{Protocol, Reply};

/// A client's tracking flags (`ClientTracking::flags`).
pub mod mode {
    pub const ON: u32 = 1;
    pub const BCAST: u32 = 1 << 1;
    pub const OPTIN: u32 = 1 << 2;
    pub const OPTOUT: u32 = 1 << 3;
    pub const NOLOOP: u32 = 1 << 4;
    /// The client it redirects to is gone.
    pub const BROKEN_REDIRECT: u32 = 1 << 5;
}

/// Whether a read by a client in mode `flags` records its keys: tracking on, not BCAST,
/// and OPTIN with CLIENT CACHING YES given, OPTOUT without CLIENT CACHING NO, or neither.
#[inline]
pub fn records_reads(flags: u32, caching: bool) -> bool {
    if flags & mode::ON == 0 || flags & mode::BCAST != 0 {
        return false;
    }
    !((flags & mode::OPTIN != 0 && !caching) || (flags & mode::OPTOUT != 0 && caching))
}

/// The pub/sub channel RESP2 clients receive redirected invalidations on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// A client's tracking state, in its `ClientInfo` so writers on any thread can read it.
#[derive(Default)]
pub struct ClientTracking {
    flags: AtomicU32,
    /// The client invalidations go to (0: its own connection).
    redirect_id: AtomicU64,
    redirect: Mutex<Weak<ClientInfo>>,
    /// BCAST prefixes, sorted.
    prefixes: Mutex<Vec<Bytes>>,
}

impl ClientTracking {
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags() & flag != 0
    }

    /// CLIENT GETREDIR's answer: the redirect id, 0 for none, -1 when not tracking.
    pub fn redirect(&self) -> i64 {
        if self.has(mode::ON) {
            self.redirect_id.load(Ordering::Relaxed) as i64
        } else {
            -1
        }
    }

    pub fn prefixes(&self) -> Vec<Bytes> {
        self.prefixes.lock().clone()
    }

    /// The bytes its BCAST prefixes hold, each with `overhead` more: part of the client's
    /// memory (`maxmemory-clients`). `last` keeps (count, bytes) between calls, so a count
    /// that did not change is not summed again; a client not tracking takes no lock.
    pub fn prefixes_mem(&self, last: &mut (usize, usize), overhead: usize) -> usize {
        if last.0 == 0 && !self.has(mode::ON) {
            return 0;
        }
        let p = self.prefixes.lock();
        if p.len() != last.0 {
            *last = (p.len(), p.iter().map(|b| b.len() + overhead).sum());
        }
        last.1
    }
}

/// The client running the command that causes an invalidation: NOLOOP spares its own
/// changes, and a message for its own connection waits in `deferred` until its reply is
/// out (or, for keys evicted before a command runs, goes right before that reply).
pub struct Current<'a> {
    pub id: u64,
    pub deferred: &'a mut Vec<u8>,
}

/// What an invalidation names.
#[derive(Clone, Copy)]
enum Payload<'a> {
    Key(&'a [u8]),
    /// Keys already encoded as a RESP array (BCAST).
    Keys(&'a [u8]),
    /// Every key (a flush), as a null in the tracking client's protocol.
    All,
}

type Directory = HashMap<u64, Arc<ClientInfo>, foldhash::fast::RandomState>;

/// The server's tracking state.
#[derive(Default)]
pub struct Tracking {
    /// Clients with tracking on (INFO tracking_clients); 0 lets writers skip everything.
    on: AtomicUsize,
    /// Clients that turned tracking on, until they disconnect: the table holds ids.
    directory: RwLock<Directory>,
    /// The lowest id in the directory (u64::MAX when empty): ids below it are clients that
    /// are gone, whose records the table may drop (`table::Ids::add`).
    oldest: AtomicU64,
    table: table::KeyTable,
    prefixes: bcast::Prefixes,
    /// `tracking-table-max-keys` (0: no limit).
    max_keys: AtomicU64,
    /// Passes in a row that ended still over the limit: each evicts more (Redis's effort).
    over_passes: AtomicU32,
    rng: AtomicU64,
}

impl Tracking {
    /// True when some client tracks: writers and readers skip everything else otherwise.
    #[inline]
    pub fn active(&self) -> bool {
        self.on.load(Ordering::Relaxed) != 0
    }

    /// INFO: (tracking_clients, tracking_total_keys, tracking_total_items,
    /// tracking_total_prefixes).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.on.load(Ordering::Relaxed),
            self.table.keys(),
            self.table.items(),
            self.prefixes.count(),
        )
    }

    pub fn set_max_keys(&self, n: u64) {
        self.max_keys.store(n, Ordering::Relaxed);
    }

    /// Turns tracking on for `info` (CLIENT TRACKING ON, already validated), replacing
    /// the options of an earlier ON but keeping its BCAST prefixes, as Redis does.
    pub fn enable(
        &self,
        info: &Arc<ClientInfo>,
        redirect: Option<&Arc<ClientInfo>>,
        options: u32,
        prefixes: &[Bytes],
    ) {
        let t = &info.tracking;
        if !t.has(mode::ON) {
            self.on.fetch_add(1, Ordering::Relaxed);
            let mut dir = self.directory.write();
            dir.insert(info.id, info.clone());
            self.note_oldest(&dir, info.id, true);
        }
        *t.redirect.lock() = redirect.map(Arc::downgrade).unwrap_or_default();
        t.redirect_id
            .store(redirect.map_or(0, |r| r.id), Ordering::Relaxed);
        t.flags.store(mode::ON | options, Ordering::Relaxed);
        if options & mode::BCAST != 0 {
            let empty = [Bytes::new()];
            let wanted = if prefixes.is_empty() {
                &empty[..]
            } else {
                prefixes
            };
            let mut mine = t.prefixes.lock();
            for p in wanted {
                if self.prefixes.subscribe(p, info.id) && !mine.contains(p) {
                    mine.push(p.clone());
                }
            }
            mine.sort();
        }
    }

    /// CLIENT TRACKING OFF (and RESET, and a disconnect). The client's records stay in the
    /// table and are dropped as their keys change, as in Redis.
    pub fn disable(&self, info: &ClientInfo) {
        let t = &info.tracking;
        for p in std::mem::take(&mut *t.prefixes.lock()) {
            self.prefixes.unsubscribe(&p, info.id);
        }
        if t.flags.swap(0, Ordering::Relaxed) & mode::ON != 0 {
            self.on.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The client disconnected.
    pub fn forget(&self, info: &ClientInfo) {
        if info.tracking.flags() != 0 {
            self.disable(info);
        }
        if self.directory.read().contains_key(&info.id) {
            let mut dir = self.directory.write();
            dir.remove(&info.id);
            self.note_oldest(&dir, info.id, false);
        }
    }

    /// Publishes the directory's lowest id after `id` joined it or left it (the caller
    /// holds its write lock). Ids grow, so a join rarely lowers it, and only the oldest
    /// client's leaving makes it look through the directory.
    fn note_oldest(&self, dir: &Directory, id: u64, joined: bool) {
        let now = self.oldest.load(Ordering::Relaxed);
        let oldest = match joined {
            true if dir.len() == 1 => id,
            true => now.min(id),
            false if id == now => dir.keys().min().copied().unwrap_or(u64::MAX),
            false => now,
        };
        self.oldest.store(oldest, Ordering::Relaxed);
    }

    /// Redis's check that no two prefixes of one client overlap (one is a prefix of the
    /// other): with the client's existing ones first, then among the new ones.
    pub fn check_prefixes(info: &ClientInfo, new: &[Bytes]) -> Result<(), String> {
        let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
        let mine = info.tracking.prefixes();
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        for (i, p) in new.iter().enumerate() {
            if let Some(old) = mine.iter().find(|o| overlap(o, p)) {
                return Err(format!(
                    "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(old)
                ));
            }
            if let Some(other) = new[i + 1..].iter().find(|o| overlap(o, p)) {
                return Err(format!(
                    "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(other)
                ));
            }
        }
        Ok(())
    }

    /// A read of `key` by a tracking client is coming: see `KeyTable::prefetch`. Returns
    /// the key's hash in the table, for `remember_hashed`.
    pub fn prefetch(&self, key: &[u8]) -> u64 {
        let h = table::hash(key);
        self.table.prefetch(h);
        h
    }

    /// Records that the client `id` may cache `keys` (a read by a tracking client, before it
    /// runs).
    pub fn remember<'k>(&self, id: u64, keys: impl IntoIterator<Item = &'k [u8]>) {
        for k in keys {
            self.remember_hashed(id, k, table::hash(k));
        }
    }

    /// `remember` of one key whose hash `prefetch` gave.
    #[inline]
    pub fn remember_hashed(&self, id: u64, key: &[u8], h: u64) {
        debug_assert_eq!(h, table::hash(key), "a hash of another key");
        let oldest = self.oldest.load(Ordering::Relaxed);
        self.table.add(h, key, id, oldest);
    }

    /// A key changed (a write, an expiry): invalidates it for the clients that may cache
    /// it, and notes it for BCAST prefixes. `by` is the client whose command changed it.
    pub fn touched(&self, key: &[u8], mut by: Option<Current<'_>>) {
        if self.prefixes.count() > 0 {
            self.prefixes.note(key, by.as_ref().map_or(0, |c| c.id));
        }
        self.invalidate_recorded(key, &mut by);
    }

    fn invalidate_recorded(&self, key: &[u8], by: &mut Option<Current<'_>>) {
        if let Some(ids) = self.table.take(key) {
            self.invalidate_for(key, &ids, by);
        }
    }

    /// Sends `key`'s invalidation to the clients `ids` that recorded it.
    fn invalidate_for(&self, key: &[u8], ids: &table::Ids, by: &mut Option<Current<'_>>) {
        let dir = self.directory.read();
        for id in &ids.to_vec() {
            let Some(target) = dir.get(id) else { continue };
            let flags = target.tracking.flags();
            // A client that switched to BCAST gets nothing for the keys it read before.
            if flags & mode::ON == 0 || flags & mode::BCAST != 0 {
                continue;
            }
            let own = by.as_ref().is_some_and(|c| c.id == *id);
            if own && flags & mode::NOLOOP != 0 {
                continue;
            }
            send(target, Payload::Key(key), by);
        }
    }

    /// FLUSHDB, FLUSHALL: every tracking client is told that every key changed, and the
    /// table empties (its memory freed by the caller, who may do it in the background).
    pub fn flushed(&self, mut by: Option<Current<'_>>) -> impl Send + 'static {
        if self.active() {
            let targets: Vec<Arc<ClientInfo>> = self.directory.read().values().cloned().collect();
            for t in targets.iter().filter(|t| t.tracking.has(mode::ON)) {
                send(t, Payload::All, &mut by);
            }
        }
        self.table.clear()
    }

    /// Whether BCAST messages wait to be sent (`broadcast`).
    #[inline]
    pub fn broadcast_pending(&self) -> bool {
        self.prefixes.pending()
    }

    /// Sends the BCAST messages of keys changed since the last call.
    pub fn broadcast(&self, mut by: Option<Current<'_>>) {
        if !self.prefixes.pending() {
            return;
        }
        for batch in self.prefixes.take() {
            let Some(common) = bcast::keys_array(&batch.keys, None) else {
                continue;
            };
            let dir = self.directory.read();
            for id in &batch.clients {
                let Some(target) = dir.get(id) else { continue };
                if target.tracking.has(mode::NOLOOP) {
                    if let Some(own) = bcast::keys_array(&batch.keys, Some(*id)) {
                        send(target, Payload::Keys(&own), &mut by);
                    }
                } else {
                    send(target, Payload::Keys(&common), &mut by);
                }
            }
        }
    }

    /// True when the table holds more keys than `tracking-table-max-keys` allows.
    #[inline]
    pub fn over_limit(&self) -> bool {
        let max = self.max_keys.load(Ordering::Relaxed);
        max != 0 && self.table.keys() as u64 > max
    }

    /// Evicts keys until the table is under its limit, invalidating them for their clients,
    /// with an effort that grows while passes end still over it (Redis's
    /// trackingLimitUsedSlots). Runs before commands and in the background cycle.
    pub fn enforce_limit(&self, mut by: Option<Current<'_>>) {
        if !self.active() || !self.over_limit() {
            self.over_passes.store(0, Ordering::Relaxed);
            return;
        }
        let mut effort = 100 * (self.over_passes.load(Ordering::Relaxed) + 1);
        while effort > 0 {
            effort -= 1;
            let pick = self.random();
            let Some((key, ids)) = self.table.take_any(pick) else {
                break;
            };
            // As a write would, but BCAST clients hear nothing: the key did not change.
            self.invalidate_for(&key, &ids, &mut by);
            if !self.over_limit() {
                self.over_passes.store(0, Ordering::Relaxed);
                return;
            }
        }
        self.over_passes.fetch_add(1, Ordering::Relaxed);
    }

    fn random(&self) -> u64 {
        let mut x = self.rng.load(Ordering::Relaxed) | 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        x.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// Sends one invalidation for `target` (a tracking client): to the client it redirects to,
/// or to itself in RESP3; a RESP2 client without a redirect gets nothing (its protocol has
/// no pushes), as in Redis.
fn send(target: &ClientInfo, payload: Payload<'_>, by: &mut Option<Current<'_>>) {
    let t = &target.tracking;
    let tracker_proto = target.proto();
    let redirect_id = t.redirect_id.load(Ordering::Relaxed);
    let dest_arc;
    let (dest, redirected) = if redirect_id == 0 {
        (target, false)
    } else {
        match t.redirect.lock().upgrade().filter(|d| !d.is_closed()) {
            Some(d) => {
                dest_arc = d;
                (&*dest_arc, true)
            }
            None => {
                // Tell the client its redirect is gone (RESP3 only: RESP2 has no pushes).
                t.flags.fetch_or(mode::BROKEN_REDIRECT, Ordering::Relaxed);
                if tracker_proto == Protocol::Resp3 {
                    deliver(target, by, |buf, proto| {
                        let mut r = Reply::new(buf, proto);
                        r.push(2);
                        r.bulk(b"tracking-redir-broken");
                        r.int(redirect_id as i64);
                    });
                }
                return;
            }
        }
    };
    let pubsub = match dest.proto() {
        Protocol::Resp3 => false,
        Protocol::Resp2 if redirected && dest.subscribed() => true,
        Protocol::Resp2 => return,
    };
    deliver(dest, by, |buf, proto| {
        let mut r = Reply::new(buf, proto);
        if pubsub {
            r.push(3);
            r.bulk(b"message");
            r.bulk(CHANNEL);
        } else {
            r.push(2);
            r.bulk(b"invalidate");
        }
        match payload {
            Payload::Key(k) => {
                r.array(1);
                r.bulk(k);
            }
            Payload::Keys(raw) => r.raw(raw),
            // Redis sends its null in the tracking client's protocol, whatever the
            // receiver's.
            Payload::All => Reply::new(&mut *r.buf, tracker_proto).null(),
        }
    });
}

/// Hands an encoded message to `dest`: into the deferred buffer of the command running for
/// it, or its mailbox. Tracking messages go to every client class, without a limit
/// (Redis's default for normal clients).
fn deliver(
    dest: &ClientInfo,
    by: &mut Option<Current<'_>>,
    write: impl FnOnce(&mut Vec<u8>, Protocol),
) {
    match by {
        Some(cur) if cur.id == dest.id => write(cur.deferred, dest.proto()),
        _ => {
            dest.send(BufferLimit::default(), write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u64, resp3: bool) -> Arc<ClientInfo> {
        let c = Arc::new(ClientInfo::new(id, format!("c{id}"), "s".into(), -1));
        c.resp.store(if resp3 { 3 } else { 2 }, Ordering::Relaxed);
        c
    }

    fn mail(c: &ClientInfo) -> Vec<u8> {
        let mut out = Vec::new();
        c.mail.drain_into(&mut out);
        out
    }

    /// Past `tracking-table-max-keys`, keys are evicted (as many as it takes, with more
    /// effort on each pass that ends still over) and invalidated for their clients.
    #[test]
    fn the_table_limit_evicts_and_invalidates() {
        let t = Tracking::default();
        let a = client(1, true);
        t.enable(&a, None, 0, &[]);
        let keys: Vec<String> = (0..250).map(|i| format!("key{i}")).collect();
        t.remember(1, keys.iter().map(|k| k.as_bytes()));
        assert_eq!(t.counts(), (1, 250, 250, 0));
        t.enforce_limit(None);
        assert_eq!(t.counts().1, 250, "no limit set");
        t.set_max_keys(1);
        assert!(t.over_limit());
        // The first pass evicts 100, the next 200 (stopping once under the limit).
        t.enforce_limit(None);
        assert_eq!(t.counts().1, 150);
        t.enforce_limit(None);
        assert_eq!(t.counts().1, 1);
        assert!(!t.over_limit());
        let got = mail(&a);
        let pushes = got
            .windows(13)
            .filter(|w| w == b">2\r\n$10\r\ninva")
            .count();
        assert_eq!(pushes, 249, "one invalidation per evicted key");
        // A client's own evictions before its command go to the caller's buffer.
        t.remember(1, [&b"x"[..]]);
        let mut before = Vec::new();
        t.enforce_limit(Some(Current {
            id: 1,
            deferred: &mut before,
        }));
        assert!(before.starts_with(b">2\r\n$10\r\ninvalidate\r\n*1\r\n"));
        assert!(mail(&a).is_empty());
    }

    /// Tracking state follows ON/OFF and disconnects, and a client's records are skipped
    /// once it stopped tracking.
    #[test]
    fn off_and_gone_clients_get_nothing() {
        let t = Tracking::default();
        let (a, b) = (client(1, true), client(2, true));
        t.enable(&a, None, 0, &[]);
        t.enable(&b, None, mode::BCAST, &[Bytes::from_static(b"p")]);
        assert_eq!(t.counts(), (2, 0, 0, 1));
        t.remember(1, [&b"k"[..]]);
        t.disable(&a);
        t.touched(b"k", None);
        assert!(mail(&a).is_empty());
        assert_eq!(t.counts().1, 0, "the record went with the write");
        t.touched(b"pk", None);
        t.broadcast(None);
        assert_eq!(mail(&b), b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\npk\r\n");
        t.forget(&b);
        assert_eq!(t.counts(), (0, 0, 0, 0));
    }
}
