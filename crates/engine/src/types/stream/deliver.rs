//! Delivering entries to a group's consumers: XREADGROUP, XCLAIM, XAUTOCLAIM.
//!
//! Each takes a callback that receives what the command replies with, in order: an ID
//! and its entry (None where Redis replies with the ID alone: JUSTID, or a pending entry
//! that no longer exists in a history read). The callback sees the stream's entries while
//! the group is being updated, so nothing is copied.

use super::group::{Group, Nack};
use super::id::StreamId;
use super::range::{Entry, Range};
use super::StreamValue;
use std::ops::Bound;

/// Where XREADGROUP reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFrom {
    /// `>`: entries never delivered to the group.
    New,
    /// An ID: the consumer's own pending entries above it. (Redis reads the ID
    /// 18446744073709551615-18446744073709551615 as `>`; the caller maps it to `New`.)
    History(StreamId),
}

/// An XREADGROUP read of one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadGroup<'a> {
    pub group: &'a [u8],
    pub consumer: &'a [u8],
    pub from: ReadFrom,
    /// Most entries to deliver (0: no limit).
    pub count: usize,
    /// NOACK: new entries do not become pending.
    pub noack: bool,
}

/// What XREADGROUP changed besides what it delivered (the journal records it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupRead {
    pub consumer_created: bool,
    /// The group's last delivered ID (and read counter) moved.
    pub last_id_moved: bool,
}

/// XCLAIM's delivery time: IDLE (ms before now) or TIME (Unix ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimTime {
    Idle(i64),
    At(i64),
}

/// XCLAIM's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClaimOpts {
    /// Only entries idle at least this long (ms) are claimed (negative: 0).
    pub min_idle: i64,
    /// The delivery time to set (default: now; a time in the future or before the epoch
    /// also means now).
    pub time: Option<ClaimTime>,
    /// RETRYCOUNT: the delivery count to set (default: one more, but unchanged with JUSTID).
    pub retry_count: Option<u64>,
    /// FORCE: create pending entries for IDs that exist but are not pending.
    pub force: bool,
    /// JUSTID: reply with IDs only.
    pub justid: bool,
    /// LASTID: raise the group's last delivered ID to this (0-0: not given).
    pub last_id: StreamId,
}

/// What XCLAIM changed besides what it claimed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimOutcome {
    pub consumer_created: bool,
    /// LASTID raised the group's last delivered ID.
    pub last_id_moved: bool,
    /// Pending entries dropped because their entries no longer exist.
    pub dropped: Vec<StreamId>,
}

/// An XAUTOCLAIM request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoClaim {
    /// Only entries idle at least this long (ms) are claimed (negative: 0).
    pub min_idle: i64,
    /// The PEL is walked from this ID.
    pub start: StreamId,
    /// Most entries to claim (and examine 10 times as many at most); at least 1.
    pub count: usize,
    /// JUSTID: reply with IDs only, and leave delivery counts alone.
    pub justid: bool,
}

/// XAUTOCLAIM's answer besides the claimed entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AutoClaimOutcome {
    /// Where the next call should start (0-0: the PEL was scanned to its end).
    pub cursor: StreamId,
    /// Pending entries dropped because their entries no longer exist.
    pub deleted: Vec<StreamId>,
    pub consumer_created: bool,
}

/// The callback type the delivering operations reply through.
pub type Emit<'e> = dyn FnMut(StreamId, Option<Entry<'_>>) + 'e;

impl StreamValue {
    /// XREADGROUP for one stream: delivers to the consumer (created if needed, its seen
    /// time set to `now` either way) up to `count` entries, passing each to `emit`. New entries advance the group's last delivered ID and read counter and,
    /// unless `noack`, become pending (owned by `consumer`, delivered now, count 1); a
    /// history read re-delivers the consumer's pending entries (count + 1, delivered
    /// now). None if there is no such group.
    ///
    /// For `>`, Redis serves a reader at once only when `has_entries_after(group's last
    /// ID)`; otherwise the reader blocks (or gets nil) and no consumer is created. That
    /// decision is the caller's.
    pub fn read_group(
        &mut self,
        req: &ReadGroup<'_>,
        now: u64,
        emit: &mut Emit<'_>,
    ) -> Option<GroupRead> {
        let now = now as i64;
        let count = if req.count == 0 {
            usize::MAX
        } else {
            req.count
        };
        let StreamValue {
            nodes,
            groups,
            meta,
        } = self;
        let g = groups.0.get_mut(req.group)?;
        let (slot, consumer_created) = g.touch_consumer(req.consumer, now);
        let mut out = GroupRead {
            consumer_created,
            last_id_moved: false,
        };
        match req.from {
            ReadFrom::History(after) => {
                let Some(lo) = after.incr() else {
                    return Some(out);
                };
                let ids: Vec<StreamId> = match g.consumer(slot) {
                    Some(c) => c.pel.range(lo..).take(count).copied().collect(),
                    None => Vec::new(),
                };
                for id in ids {
                    let entry = Range::new(nodes, id, id, false).next();
                    if entry.is_some() {
                        if let Some(n) = g.pel.get_mut(&id) {
                            n.delivery_time = now;
                            n.delivery_count = n.delivery_count.wrapping_add(1);
                        }
                    }
                    emit(id, entry);
                }
            }
            ReadFrom::New => {
                let Some(lo) = g.last_id.incr() else {
                    return Some(out);
                };
                for e in Range::new(nodes, lo, StreamId::MAX, false).take(count) {
                    let id = e.id();
                    if id > g.last_id {
                        meta.advance(g, id);
                        out.last_id_moved = true;
                    }
                    if !req.noack {
                        deliver_new(g, id, slot, now);
                    }
                    emit(id, Some(e));
                }
            }
        }
        Some(out)
    }

    /// XCLAIM: gives `consumer` the pending entries among `ids` idle at least
    /// `opts.min_idle`, passing each to `emit`. Pending entries whose entries were
    /// deleted are dropped from the PEL instead (Redis 7.0); FORCE makes entries that
    /// exist pending first. The consumer is created (or its seen time refreshed) at the
    /// first claim. None: no such group.
    pub fn claim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        opts: &ClaimOpts,
        now: u64,
        emit: &mut Emit<'_>,
    ) -> Option<ClaimOutcome> {
        let now = now as i64;
        let min_idle = opts.min_idle.max(0);
        let delivery_time = match opts.time {
            None => now,
            Some(t) => {
                let at = match t {
                    ClaimTime::Idle(ms) => now.saturating_sub(ms),
                    ClaimTime::At(at) => at,
                };
                if at < 0 || at > now {
                    now
                } else {
                    at
                }
            }
        };
        let StreamValue { nodes, groups, .. } = self;
        let g = groups.0.get_mut(group)?;
        let mut out = ClaimOutcome::default();
        if opts.last_id > g.last_id {
            g.last_id = opts.last_id;
            out.last_id_moved = true;
        }
        let mut slot = None;
        for &id in ids {
            let Some(entry) = Range::new(nodes, id, id, false).next() else {
                if g.drop_nack(id).is_some() {
                    out.dropped.push(id);
                }
                continue;
            };
            let forced = opts.force && !g.pel.contains_key(&id);
            if forced {
                // An owner-less entry until it is given to the consumer below.
                g.pel.insert(
                    id,
                    Nack {
                        delivery_time: now,
                        delivery_count: 1,
                        consumer: u32::MAX,
                    },
                );
            }
            let Some(nack) = g.pel.get(&id) else {
                continue;
            };
            if !forced && min_idle != 0 && now.wrapping_sub(nack.delivery_time) < min_idle {
                continue;
            }
            let s = *slot.get_or_insert_with(|| {
                let (s, created) = g.touch_consumer(consumer, now);
                out.consumer_created = created;
                s
            });
            g.move_nack(id, s);
            if let Some(n) = g.pel.get_mut(&id) {
                n.delivery_time = delivery_time;
                match opts.retry_count {
                    Some(c) => n.delivery_count = c,
                    None if !opts.justid => n.delivery_count = n.delivery_count.wrapping_add(1),
                    None => {}
                }
            }
            emit(id, (!opts.justid).then_some(entry));
        }
        Some(out)
    }

    /// XAUTOCLAIM: walks the group's PEL from `req.start`, giving `consumer` the entries
    /// idle at least `req.min_idle` until `req.count` are claimed, examining at most 10
    /// times `req.count` pending entries. Pending entries whose entries were deleted are
    /// dropped (and count towards `req.count`). Each claim sets the delivery time to now
    /// and, unless JUSTID, adds one to the delivery count. None: no such group.
    pub fn autoclaim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        req: &AutoClaim,
        now: u64,
        emit: &mut Emit<'_>,
    ) -> Option<AutoClaimOutcome> {
        let now = now as i64;
        let AutoClaim {
            min_idle,
            start,
            count,
            justid,
        } = *req;
        let min_idle = min_idle.max(0);
        let StreamValue { nodes, groups, .. } = self;
        let g = groups.0.get_mut(group)?;
        let mut out = AutoClaimOutcome::default();
        let mut left = count;
        let mut attempts = count.saturating_mul(10);
        let mut from = Bound::Included(start);
        let mut slot = None;
        let next_after = |g: &Group, from: Bound<StreamId>| {
            g.pel
                .range((from, Bound::Unbounded))
                .next()
                .map(|(id, n)| (*id, n.delivery_time))
        };
        while attempts > 0 && left > 0 {
            attempts -= 1;
            let Some((id, delivered)) = next_after(g, from) else {
                break;
            };
            from = Bound::Excluded(id);
            let Some(entry) = Range::new(nodes, id, id, false).next() else {
                g.drop_nack(id);
                out.deleted.push(id);
                left -= 1;
                continue;
            };
            if min_idle != 0 && now.wrapping_sub(delivered) < min_idle {
                continue;
            }
            let s = *slot.get_or_insert_with(|| {
                let (s, created) = g.touch_consumer(consumer, now);
                out.consumer_created = created;
                s
            });
            g.move_nack(id, s);
            if let Some(n) = g.pel.get_mut(&id) {
                n.delivery_time = now;
                if !justid {
                    n.delivery_count = n.delivery_count.wrapping_add(1);
                }
            }
            emit(id, (!justid).then_some(entry));
            left -= 1;
        }
        out.cursor = next_after(g, from).map_or(StreamId::MIN, |(id, _)| id);
        Some(out)
    }
}

/// A new entry delivered to consumer `slot`: pending for it, delivered now, once. An entry
/// already pending (after XGROUP SETID moved the group back) changes owner.
fn deliver_new(g: &mut Group, id: StreamId, slot: u32, now: i64) {
    let fresh = Nack {
        delivery_time: now,
        delivery_count: 1,
        consumer: slot,
    };
    match g.pel.insert(id, fresh) {
        None => {
            if let Some(c) = g.consumer_mut(slot) {
                c.pel.insert(id);
            }
        }
        Some(old) => {
            // Back to the old owner so move_nack takes it from its PEL.
            if let Some(n) = g.pel.get_mut(&id) {
                n.consumer = old.consumer;
            }
            g.move_nack(id, slot);
        }
    }
}
