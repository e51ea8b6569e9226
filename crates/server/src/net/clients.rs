//! What clients hold in memory, and the limits on clients that are not about one batch:
//! `maxmemory-clients` (client eviction, as Redis 7 does it), `timeout` (idle clients), and
//! INFO's recent peaks of input and output buffers. The connection reports its figures
//! after each batch (`MemFigures`); the background cycle and the connection that pushed
//! the total over the limit act on them.

use crate::exec::client::{Client, ClientInfo};
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One client's memory as its connection last reported it.
#[derive(Default)]
pub struct MemFigures {
    /// The query buffer's allocation (CLIENT LIST qbuf-free is this less `qbuf`).
    pub qbuf_cap: AtomicUsize,
    /// Arguments of a command the client holds while blocked (argv-mem).
    pub argv: AtomicUsize,
    /// Output bytes on their way to the socket: replies not written yet and what the
    /// socket (or the TLS session) has not taken (omem).
    pub omem: AtomicUsize,
    /// Everything the connection holds (tot-mem), counted in `ClientsMem::total`.
    pub total: AtomicUsize,
    /// The mailbox's queued bytes as `total` counts them (`mail_grew`).
    pub mail: AtomicUsize,
    /// The reply buffer's size and recent peak (rbs, rbp; `net::replybuf`).
    pub rbs: AtomicUsize,
    pub rbp: AtomicUsize,
}

/// Redis's reply buffer is 16 KB before it spills into a list of blocks: CLIENT LIST shows
/// a client's pending output as that buffer (obl) and blocks of that size (oll).
const REPLY_CHUNK: usize = 16 * 1024;

impl MemFigures {
    /// (obl, oll, omem) for CLIENT LIST, with `mail` bytes of the client's mailbox
    /// pending (pub/sub messages, invalidations: their limits count them). Mail the
    /// connection took may sit in its reply buffer too, so the larger of the two is
    /// shown rather than their sum.
    pub fn output_fields(&self, mail: usize) -> (usize, usize, usize) {
        let omem = self.omem.load(Ordering::Relaxed).max(mail);
        let obl = omem.min(REPLY_CHUNK);
        let oll = (omem - obl).div_ceil(REPLY_CHUNK);
        (obl, oll, omem)
    }
}

/// Server-wide client memory figures.
#[derive(Default)]
pub struct ClientsMem {
    /// The sum of every connected client's `MemFigures::total`.
    total: AtomicUsize,
    /// Peaks of the last seconds, one slot per second (INFO client_recent_max_*).
    recent: Mutex<Recent>,
    /// One eviction pass at a time.
    evicting: Mutex<()>,
}

/// Seconds over which INFO's `client_recent_max_*` figures are the peak.
const RECENT_SLOTS: usize = 8;

#[derive(Default)]
struct Recent {
    input: [usize; RECENT_SLOTS],
    output: [usize; RECENT_SLOTS],
}

impl ClientsMem {
    pub fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// (input, output): the largest query buffer and pending output any client had over
    /// the last few seconds, as sampled each second.
    pub fn recent_max(&self) -> (usize, usize) {
        let r = self.recent.lock();
        (
            r.input.iter().copied().max().unwrap_or(0),
            r.output.iter().copied().max().unwrap_or(0),
        )
    }
}

/// Fixed cost of a connection: its state on both sides and the bookkeeping around it.
const CLIENT_BASE: usize = std::mem::size_of::<Client>() + std::mem::size_of::<ClientInfo>() + 1024;
/// What one queued argument, subscription, watched key or tracking prefix costs beyond
/// its bytes.
const ENTRY_OVERHEAD: usize = 48;

/// A connection's running estimate of its memory: the parts that need a walk (queued
/// transaction commands, subscriptions, watched keys, tracking prefixes) are recounted
/// only when they change.
#[derive(Default)]
pub(crate) struct MemTracker {
    multi: (usize, usize),
    subs: (usize, usize),
    watch: (usize, usize),
    prefixes: (usize, usize),
}

impl MemTracker {
    /// The client's memory now: its buffers (`buffers`: query and output buffer
    /// allocations plus output the socket holds) and what its state holds.
    pub fn measure(&mut self, client: &Client, buffers: usize) -> usize {
        let mut total = CLIENT_BASE + buffers;
        match &client.multi {
            Some(m) => {
                let (seen, bytes) = &mut self.multi;
                if *seen > m.queued.len() {
                    (*seen, *bytes) = (0, 0);
                }
                for (_, argv) in &m.queued[*seen..] {
                    *bytes += argv.iter().map(|a| a.len() + ENTRY_OVERHEAD).sum::<usize>();
                }
                *seen = m.queued.len();
                total += *bytes;
            }
            None => self.multi = (0, 0),
        }
        if let Some(s) = &client.subs {
            let n = s.channels.len() + s.patterns.len() + s.shard.len();
            if n != self.subs.0 {
                let names = s.channels.iter().chain(&s.patterns).chain(&s.shard);
                self.subs = (n, names.map(|c| c.len() + ENTRY_OVERHEAD).sum());
            }
            total += self.subs.1;
        }
        let mail = client.info.mail.queued();
        client.info.mem.mail.store(mail, Ordering::Relaxed);
        total += mail;
        total += client
            .info
            .tracking
            .prefixes_mem(&mut self.prefixes, ENTRY_OVERHEAD);
        let keys = &client.watch.keys;
        if keys.len() != self.watch.0 {
            let bytes = keys.iter().map(|(_, k)| k.len() + ENTRY_OVERHEAD).sum();
            self.watch = (keys.len(), bytes);
        }
        total + self.watch.1
    }
}

/// Records a client's new total (`report`) and evicts clients if the sum passed
/// `maxmemory-clients`. Cheap when nothing changed: buffers keep their size between batches.
pub(crate) fn report(server: &Server, info: &ClientInfo, total: usize) {
    let before = info.mem.total.swap(total, Ordering::Relaxed);
    if before == total {
        return;
    }
    let mem = &server.clients.mem;
    if total > before {
        let sum = mem.total.fetch_add(total - before, Ordering::Relaxed) + (total - before);
        if let Some(limit) = eviction_limit(server) {
            if sum > limit {
                evict(server, limit);
            }
        }
    } else {
        mem.total.fetch_sub(before - total, Ordering::Relaxed);
    }
}

/// A client that goes away takes its memory out of the total.
pub(crate) fn forget(server: &Server, info: &ClientInfo) {
    let before = info.mem.total.swap(0, Ordering::Relaxed);
    server
        .clients
        .mem
        .total
        .fetch_sub(before, Ordering::Relaxed);
}

/// Messages were queued for `info` by another client: its total counts them at once,
/// and past `maxmemory-clients` clients are evicted (Redis updates a subscriber's memory
/// on every message it is sent). Its connection, which may not run for a while (a
/// client that does not read), recounts everything when it does.
pub(crate) fn mail_grew(server: &Server, info: &ClientInfo) {
    let now = info.mail.queued();
    let before = info.mem.mail.swap(now, Ordering::Relaxed);
    if now != before {
        let total = info.mem.total.load(Ordering::Relaxed);
        report(server, info, (total + now).saturating_sub(before));
    }
}

/// Whether `maxmemory-clients` is on.
pub(crate) fn limited(server: &Server) -> bool {
    eviction_limit(server).is_some()
}

/// `maxmemory-clients` in bytes (a percentage is of `maxmemory`); None when off.
fn eviction_limit(server: &Server) -> Option<usize> {
    let c = server.config.get();
    let limit = match c.maxmemory_clients {
        0 => return None,
        v if v > 0 => v as u64,
        pct => c.maxmemory.saturating_mul(pct.unsigned_abs()) / 100,
    };
    (limit > 0).then_some(limit as usize)
}

/// Closes the clients that hold the most memory until the rest fit under `limit`. Clients
/// with CLIENT NO-EVICT on and replicas are never chosen; clients already closing count
/// as gone.
fn evict(server: &Server, limit: usize) {
    let mem = &server.clients.mem;
    // One pass at a time, and a caller waits for the pass under way rather than return
    // before it is done: CONFIG SET maxmemory-clients replied while another thread's pass
    // (a growing client's report) was still choosing whom to close, and the next command
    // still listed the client it closed. The clients that pass closed count as gone here.
    let _one = mem.evicting.lock();
    let clients = server.clients.snapshot();
    let closing: usize = clients
        .iter()
        .filter(|c| c.is_killed())
        .map(|c| c.mem.total.load(Ordering::Relaxed))
        .sum();
    let mut over = mem.total().saturating_sub(closing).saturating_sub(limit);
    if over == 0 {
        return;
    }
    let mut candidates: Vec<_> = clients
        .into_iter()
        .filter(|c| {
            !c.is_killed() && !c.no_evict.load(Ordering::Relaxed) && !c.is_replication_link()
        })
        .map(|c| (c.mem.total.load(Ordering::Relaxed), c))
        .collect();
    candidates.sort_by_key(|b| std::cmp::Reverse(b.0));
    for (size, c) in candidates {
        if over == 0 {
            break;
        }
        tracing::info!(
            "Evicting client: id={} addr={} tot-mem={size}",
            c.id,
            c.addr
        );
        server.stats.evicted_clients.fetch_add(1, Ordering::Relaxed);
        c.kill();
        over = over.saturating_sub(size);
    }
}

/// The background cycle's once-a-second pass over the clients: idle timeouts, eviction
/// after the limit went down, and the recent peaks INFO shows.
pub(crate) fn cron(server: &Server) {
    let timeout = server.config.get().timeout;
    let clients = server.clients.snapshot();
    let (mut input, mut output) = (0, 0);
    for c in &clients {
        input = input.max(c.mem.qbuf_cap.load(Ordering::Relaxed));
        output = output.max(c.mem.omem.load(Ordering::Relaxed).max(c.mail.pending()));
        if timeout > 0 && may_time_out(c) && c.idle_secs() > timeout {
            tracing::debug!("Closing idle client id={} addr={}", c.id, c.addr);
            c.kill();
        }
    }
    {
        let slot = (Server::now_unix() as usize) % RECENT_SLOTS;
        let mut r = server.clients.mem.recent.lock();
        r.input[slot] = input;
        r.output[slot] = output;
    }
    evict_if_over(server);
}

/// Evicts clients if their total passed `maxmemory-clients` (a limit that went down).
pub(crate) fn evict_if_over(server: &Server) {
    if let Some(limit) = eviction_limit(server) {
        if server.clients.mem.total() > limit {
            evict(server, limit);
        }
    }
}

/// Redis's `timeout` spares replicas, clients blocked in a command (whatever their own
/// timeout) and clients subscribed to anything.
fn may_time_out(c: &ClientInfo) -> bool {
    let subscribed = c.sub.load(Ordering::Relaxed)
        + c.psub.load(Ordering::Relaxed)
        + c.ssub.load(Ordering::Relaxed)
        > 0;
    !subscribed && !c.blocked.load(Ordering::Relaxed) && !c.is_replication_link()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_fields_split_pending_bytes_like_redis_reply_blocks() {
        let m = MemFigures::default();
        assert_eq!(m.output_fields(0), (0, 0, 0));
        m.omem.store(100, Ordering::Relaxed);
        assert_eq!(m.output_fields(0), (100, 0, 100));
        assert_eq!(m.output_fields(150), (150, 0, 150), "pending mail shows");
        m.omem.store(REPLY_CHUNK * 3 + 1, Ordering::Relaxed);
        assert_eq!(m.output_fields(10), (REPLY_CHUNK, 3, REPLY_CHUNK * 3 + 1));
    }

    #[test]
    fn timeout_spares_blocked_subscribed_and_replica_clients() {
        let c = ClientInfo::new(1, "a".into(), "b".into(), -1);
        assert!(may_time_out(&c));
        c.blocked.store(true, Ordering::Relaxed);
        assert!(!may_time_out(&c));
        c.blocked.store(false, Ordering::Relaxed);
        c.psub.store(1, Ordering::Relaxed);
        assert!(!may_time_out(&c));
        c.psub.store(0, Ordering::Relaxed);
        c.kind
            .store(crate::exec::client::kind::REPLICA, Ordering::Relaxed);
        assert!(!may_time_out(&c));
    }
}
