//! Pub/sub: the server-wide registry of channel, pattern and shard channel subscriptions.
//!
//! A publisher on any worker thread encodes a message straight into every receiving
//! client's mailbox (`services::mailbox`, in that client's protocol) and wakes its
//! connection task, which writes what arrived. A message for the publishing client itself
//! (PUBLISH, or a keyspace event of its own command, in RESP3) goes to `Client::self_push`
//! instead and is placed before the command's reply, as Redis 7.0 does.
//!
//! The pubsub class of `client-output-buffer-limit <class> <hard> <soft> <secs>` bounds a
//! subscriber's mailbox (see `services::mailbox`).

use crate::exec::client::ClientInfo;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use strata_resp::{Protocol, Reply};

/// Output-buffer limits of one client class (0 = no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// Parses `client-output-buffer-limit` as Redis does: `<class> <hard> <soft> <secs>`
/// triples, class one of normal, replica (slave) and pubsub, sizes with memory units.
/// Returns the (normal, replica, pubsub) limits after applying `new` over `old`.
pub fn parse_buffer_limits(old: &str, new: &str) -> Result<[BufferLimit; 3], String> {
    let limits = parse_triples(old).unwrap_or([
        BufferLimit::default(),
        BufferLimit {
            hard: 256 << 20,
            soft: 64 << 20,
            soft_secs: 60,
        },
        BufferLimit {
            hard: 32 << 20,
            soft: 8 << 20,
            soft_secs: 60,
        },
    ]);
    let words: Vec<&str> = new.split_whitespace().collect();
    crate::config::update_buffer_limits(limits, &words)
}

fn parse_triples(s: &str) -> Option<[BufferLimit; 3]> {
    let w: Vec<&str> = s.split_whitespace().collect();
    if w.len() != 12 {
        return None;
    }
    let mut out = [BufferLimit::default(); 3];
    for (i, t) in w.chunks(4).enumerate() {
        out[i] = BufferLimit {
            hard: t[1].parse().ok()?,
            soft: t[2].parse().ok()?,
            soft_secs: t[3].parse().ok()?,
        };
    }
    Some(out)
}

/// The canonical text CONFIG GET shows: "normal 0 0 0 slave 268435456 67108864 60 pubsub ...".
pub fn render_buffer_limits(l: &[BufferLimit; 3]) -> String {
    let mut s = String::new();
    for (name, l) in ["normal", "slave", "pubsub"].iter().zip(l) {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&format!("{name} {} {} {}", l.hard, l.soft, l.soft_secs));
    }
    s
}

/// `client-output-buffer-limit`'s text after applying `new` over `old`.
pub fn normalize_buffer_limits(old: &str, new: &str) -> Result<String, String> {
    parse_buffer_limits(old, new).map(|l| render_buffer_limits(&l))
}

/// Encodes a message push: `*N`/`>N` of bulk strings.
pub fn encode(buf: &mut Vec<u8>, proto: Protocol, parts: &[&[u8]]) {
    let mut r = Reply::new(buf, proto);
    r.push(parts.len());
    for p in parts {
        r.bulk(p);
    }
}

/// The two channel namespaces: SUBSCRIBE/PUBLISH channels, and SSUBSCRIBE/SPUBLISH shard
/// channels. A name in one is unrelated to the same name in the other, as in Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shard,
}

/// A client's own subscriptions (kept on its `Client`, created at its first SUBSCRIBE).
pub struct Subscriptions {
    /// The subscriber, whose mailbox receives the messages.
    pub client: Arc<ClientInfo>,
    /// In subscription order (UNSUBSCRIBE without arguments answers in this order).
    pub channels: Vec<Bytes>,
    pub patterns: Vec<Bytes>,
    pub shard: Vec<Bytes>,
}

impl Subscriptions {
    /// Channels and patterns: what SUBSCRIBE and PSUBSCRIBE replies count (shard
    /// channels are counted apart, as in Redis 7.0).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    pub fn names(&self, space: Space) -> &Vec<Bytes> {
        match space {
            Space::Global => &self.channels,
            Space::Shard => &self.shard,
        }
    }

    fn names_mut(&mut self, space: Space) -> &mut Vec<Bytes> {
        match space {
            Space::Global => &mut self.channels,
            Space::Shard => &mut self.shard,
        }
    }
}

/// Who receives a published message and how to reach the publisher itself.
pub struct Publisher<'a> {
    pub id: u64,
    /// Messages for the publishing client, placed before its command's reply.
    pub self_push: &'a mut Vec<u8>,
    pub proto: Protocol,
    /// The server, when `maxmemory-clients` is on: a subscriber's memory then counts
    /// each message queued for it, as Redis's does, so that clients are evicted before
    /// keys are.
    pub clients_limit: Option<&'a crate::server::Server>,
}

impl Publisher<'_> {
    /// Hands one message to a subscriber: the publisher's own goes before its reply.
    fn send(&mut self, to: &ClientInfo, parts: &[&[u8]], limit: BufferLimit) {
        if to.id == self.id {
            encode(self.self_push, self.proto, parts);
        } else {
            to.send(limit, |buf, proto| encode(buf, proto, parts));
            if let Some(server) = self.clients_limit {
                crate::net::clients::mail_grew(server, to);
            }
        }
    }
}

/// Channel name -> subscribers, for one namespace.
#[derive(Default)]
struct Channels {
    map: RwLock<HashMap<Bytes, Vec<Arc<ClientInfo>>, foldhash::fast::RandomState>>,
    /// Channels with at least one subscriber.
    active: AtomicUsize,
}

impl Channels {
    fn add(&self, channel: &Bytes, client: &Arc<ClientInfo>) {
        let mut map = self.map.write();
        let list = map.entry(channel.clone()).or_default();
        if list.is_empty() {
            self.active.fetch_add(1, Ordering::Relaxed);
        }
        list.push(client.clone());
    }

    fn remove(&self, channel: &[u8], client: &Arc<ClientInfo>) {
        let mut map = self.map.write();
        if let Some(list) = map.get_mut(channel) {
            list.retain(|m| !Arc::ptr_eq(m, client));
            if list.is_empty() {
                map.remove(channel);
                self.active.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Sends `kind channel message` to the channel's subscribers; returns how many.
    fn publish(
        &self,
        kind: &[u8],
        channel: &[u8],
        message: &[u8],
        me: &mut Publisher<'_>,
        limit: BufferLimit,
    ) -> usize {
        let map = self.map.read();
        let Some(list) = map.get(channel) else {
            return 0;
        };
        for m in list {
            me.send(m, &[kind, channel, message], limit);
        }
        list.len()
    }

    fn matching(&self, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.map
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| strata_engine::glob::matches(p, c, false)))
            .cloned()
            .collect()
    }

    fn numsub(&self, channel: &[u8]) -> usize {
        self.map.read().get(channel).map_or(0, Vec::len)
    }
}

/// The server-wide subscription registry.
pub struct Hub {
    channels: Channels,
    shard: Channels,
    /// Pattern -> subscribers, in the order patterns were first subscribed.
    patterns: RwLock<Vec<(Bytes, Vec<Arc<ClientInfo>>)>>,
    /// Subscriptions of all clients (of every kind): zero means nobody listens.
    total: AtomicUsize,
    npatterns: AtomicUsize,
    hard: AtomicU64,
    soft: AtomicU64,
    soft_secs: AtomicU64,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            channels: Channels::default(),
            shard: Channels::default(),
            patterns: RwLock::new(Vec::new()),
            total: AtomicUsize::new(0),
            npatterns: AtomicUsize::new(0),
            hard: AtomicU64::new(32 << 20),
            soft: AtomicU64::new(8 << 20),
            soft_secs: AtomicU64::new(60),
        }
    }
}

impl Hub {
    pub fn set_limit(&self, l: BufferLimit) {
        self.hard.store(l.hard, Ordering::Relaxed);
        self.soft.store(l.soft, Ordering::Relaxed);
        self.soft_secs.store(l.soft_secs, Ordering::Relaxed);
    }

    fn limit(&self) -> BufferLimit {
        BufferLimit {
            hard: self.hard.load(Ordering::Relaxed),
            soft: self.soft.load(Ordering::Relaxed),
            soft_secs: self.soft_secs.load(Ordering::Relaxed),
        }
    }

    fn space(&self, space: Space) -> &Channels {
        match space {
            Space::Global => &self.channels,
            Space::Shard => &self.shard,
        }
    }

    /// True when some client is subscribed to something (keyspace events skip work if not).
    pub fn anyone(&self) -> bool {
        self.total.load(Ordering::Relaxed) > 0
    }

    /// Channels of `space` with at least one subscriber (INFO pubsub_channels and
    /// pubsubshard_channels).
    pub fn channel_count(&self, space: Space) -> usize {
        self.space(space).active.load(Ordering::Relaxed)
    }

    /// Distinct patterns subscribed (INFO pubsub_patterns, PUBSUB NUMPAT).
    pub fn pattern_count(&self) -> usize {
        self.npatterns.load(Ordering::Relaxed)
    }

    /// Adds a channel subscription; false if the client already had it.
    pub fn subscribe(&self, space: Space, subs: &mut Subscriptions, channel: &Bytes) -> bool {
        let names = subs.names_mut(space);
        if names.contains(channel) {
            return false;
        }
        names.push(channel.clone());
        self.space(space).add(channel, &subs.client);
        self.total.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub fn unsubscribe(&self, space: Space, subs: &mut Subscriptions, channel: &[u8]) -> bool {
        let names = subs.names_mut(space);
        let Some(pos) = names.iter().position(|c| c == channel) else {
            return false;
        };
        names.remove(pos);
        self.space(space).remove(channel, &subs.client);
        self.total.fetch_sub(1, Ordering::Relaxed);
        true
    }

    pub fn psubscribe(&self, subs: &mut Subscriptions, pattern: &Bytes) -> bool {
        if subs.patterns.contains(pattern) {
            return false;
        }
        subs.patterns.push(pattern.clone());
        let mut pats = self.patterns.write();
        match pats.iter_mut().find(|(p, _)| p == pattern) {
            Some((_, list)) => list.push(subs.client.clone()),
            None => {
                pats.push((pattern.clone(), vec![subs.client.clone()]));
                self.npatterns.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.total.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub fn punsubscribe(&self, subs: &mut Subscriptions, pattern: &[u8]) -> bool {
        let Some(pos) = subs.patterns.iter().position(|p| p == pattern) else {
            return false;
        };
        subs.patterns.remove(pos);
        let mut pats = self.patterns.write();
        if let Some(i) = pats.iter().position(|(p, _)| p == pattern) {
            pats[i].1.retain(|m| !Arc::ptr_eq(m, &subs.client));
            if pats[i].1.is_empty() {
                pats.remove(i);
                self.npatterns.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.total.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Drops every subscription of a client (disconnect, RESET).
    pub fn remove_all(&self, subs: &mut Subscriptions) {
        for space in [Space::Global, Space::Shard] {
            for c in subs.names(space).clone() {
                self.unsubscribe(space, subs, &c);
            }
        }
        for p in subs.patterns.clone() {
            self.punsubscribe(subs, &p);
        }
    }

    /// Delivers `message` on `channel` to its subscribers and to matching patterns;
    /// returns how many clients received it (PUBLISH's reply).
    pub fn publish(&self, channel: &[u8], message: &[u8], me: &mut Publisher<'_>) -> usize {
        if !self.anyone() {
            return 0;
        }
        let limit = self.limit();
        let mut n = self
            .channels
            .publish(b"message", channel, message, me, limit);
        if self.npatterns.load(Ordering::Relaxed) > 0 {
            let pats = self.patterns.read();
            for (pat, list) in pats.iter() {
                if !strata_engine::glob::matches(pat, channel, false) {
                    continue;
                }
                for m in list {
                    me.send(m, &[b"pmessage", pat, channel, message], limit);
                    n += 1;
                }
            }
        }
        n
    }

    /// SPUBLISH: to the shard channel's subscribers only (patterns do not see it).
    pub fn spublish(&self, channel: &[u8], message: &[u8], me: &mut Publisher<'_>) -> usize {
        if !self.anyone() {
            return 0;
        }
        self.shard
            .publish(b"smessage", channel, message, me, self.limit())
    }

    /// Active channels of `space` matching `pattern` (PUBSUB CHANNELS, SHARDCHANNELS).
    pub fn channels_matching(&self, space: Space, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.space(space).matching(pattern)
    }

    /// Calls `f` with every subscription of every client: the channel (of either space) or
    /// pattern, whether it is a pattern, and the subscriber (ACL finds the subscriptions a
    /// user lost this way).
    pub fn for_each_subscription(&self, mut f: impl FnMut(&[u8], bool, &ClientInfo)) {
        for space in [&self.channels, &self.shard] {
            for (name, list) in space.map.read().iter() {
                for m in list {
                    f(name, false, m);
                }
            }
        }
        for (pattern, list) in self.patterns.read().iter() {
            for m in list {
                f(pattern, true, m);
            }
        }
    }

    /// Subscribers of one channel, patterns excluded (PUBSUB NUMSUB, SHARDNUMSUB).
    pub fn numsub(&self, space: Space, channel: &[u8]) -> usize {
        self.space(space).numsub(channel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_limit_syntax() {
        let d = normalize_buffer_limits("", "").unwrap();
        assert_eq!(
            d,
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let v = normalize_buffer_limits(&d, "pubsub 1mb 512kb 1").unwrap();
        assert_eq!(
            v,
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 1"
        );
        let v = normalize_buffer_limits(&v, "replica 1 2 3 normal 4 5 6").unwrap();
        assert_eq!(v, "normal 4 5 6 slave 1 2 3 pubsub 1048576 524288 1");
        assert!(normalize_buffer_limits(&v, "pubsub 1 2")
            .unwrap_err()
            .starts_with("Wrong number"));
        assert!(normalize_buffer_limits(&v, "foo 1 2 3")
            .unwrap_err()
            .starts_with("Invalid client class"));
        assert!(normalize_buffer_limits(&v, "pubsub 1 2 -3")
            .unwrap_err()
            .starts_with("Error in hard"));
        assert_eq!(
            normalize_buffer_limits(&v, "pubsub 1k 2K 3").unwrap(),
            "normal 4 5 6 slave 1 2 3 pubsub 1000 2000 3"
        );
    }
}
