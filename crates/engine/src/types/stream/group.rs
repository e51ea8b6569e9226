//! Consumer groups: each has a last-delivered ID, a read counter, a pending entries list
//! (PEL: delivered, not yet acknowledged entries, each owned by one consumer) and its
//! consumers, each with its own PEL (a subset of the group's).
//!
//! Groups and consumers are ordered by name bytes, and PELs by ID, as Redis's radix trees
//! order them, so listings come out in Redis's order.

use super::id::{StreamError, StreamId};
use super::{Meta, StreamValue};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Redis's SCG_INVALID_ENTRIES_READ: the read counter is unknown.
const INVALID: i64 = -1;

/// A pending entry: last delivery time and count, and the owner (a consumer slot).
#[derive(Clone, Copy, Debug)]
pub(super) struct Nack {
    pub delivery_time: i64,
    pub delivery_count: u64,
    pub consumer: u32,
}

#[derive(Clone, Debug)]
pub(super) struct Consumer {
    pub name: Box<[u8]>,
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Clone, Default)]
pub(super) struct Group {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    /// Consumers in slots (NACKs name their owner by slot), freed slots reused.
    slots: Vec<Option<Consumer>>,
    free: Vec<u32>,
    by_name: BTreeMap<Box<[u8]>, u32>,
}

/// The groups of a stream, by name. Most streams have none: then this is an empty map,
/// which allocates nothing.
#[derive(Clone, Default)]
pub(super) struct Groups(pub BTreeMap<Box<[u8]>, Group>);

impl Group {
    fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            ..Group::default()
        }
    }

    pub fn slot(&self, name: &[u8]) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    pub fn consumer(&self, slot: u32) -> Option<&Consumer> {
        self.slots.get(slot as usize)?.as_ref()
    }

    pub fn consumer_mut(&mut self, slot: u32) -> Option<&mut Consumer> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    /// A new consumer (the name must be free); its slot.
    pub fn add_consumer(&mut self, name: &[u8], seen_time: i64) -> u32 {
        let c = Consumer {
            name: name.into(),
            seen_time,
            pel: BTreeSet::new(),
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(c);
                s
            }
            None => {
                self.slots.push(Some(c));
                (self.slots.len() - 1) as u32
            }
        };
        self.by_name.insert(name.into(), slot);
        slot
    }

    /// The consumer's slot, its seen time refreshed (streamLookupConsumer), or a new
    /// consumer's; and whether it was created.
    pub fn touch_consumer(&mut self, name: &[u8], now: i64) -> (u32, bool) {
        match self.slot(name) {
            Some(s) => {
                if let Some(c) = self.consumer_mut(s) {
                    c.seen_time = now;
                }
                (s, false)
            }
            None => (self.add_consumer(name, now), true),
        }
    }

    fn remove_consumer(&mut self, name: &[u8]) -> Option<Consumer> {
        let slot = self.by_name.remove(name)?;
        let c = self.slots.get_mut(slot as usize)?.take()?;
        self.free.push(slot);
        Some(c)
    }

    /// Removes a pending entry from the group's PEL and its owner's.
    pub fn drop_nack(&mut self, id: StreamId) -> Option<Nack> {
        let nack = self.pel.remove(&id)?;
        if let Some(c) = self.consumer_mut(nack.consumer) {
            c.pel.remove(&id);
        }
        Some(nack)
    }

    /// Gives the pending entry `id` (which must be in the group PEL) to consumer `slot`.
    pub fn move_nack(&mut self, id: StreamId, slot: u32) {
        let Some(nack) = self.pel.get_mut(&id) else {
            return;
        };
        let old = std::mem::replace(&mut nack.consumer, slot);
        if old != slot {
            if let Some(c) = self.consumer_mut(old) {
                c.pel.remove(&id);
            }
        }
        if let Some(c) = self.consumer_mut(slot) {
            c.pel.insert(id);
        }
    }

    fn consumers(&self) -> impl Iterator<Item = &Consumer> {
        self.by_name.values().filter_map(|&s| self.consumer(s))
    }
}

impl PartialEq for Group {
    /// Groups are equal when what they hold is: slot numbers do not matter.
    fn eq(&self, other: &Self) -> bool {
        let owner = |g: &Group, n: &Nack| g.consumer(n.consumer).map(|c| c.name.clone());
        self.last_id == other.last_id
            && self.entries_read == other.entries_read
            && self.pel.len() == other.pel.len()
            && self.pel.iter().zip(&other.pel).all(|((ia, a), (ib, b))| {
                ia == ib
                    && a.delivery_time == b.delivery_time
                    && a.delivery_count == b.delivery_count
                    && owner(self, a) == owner(other, b)
            })
            && self.by_name.len() == other.by_name.len()
            && self
                .consumers()
                .zip(other.consumers())
                .all(|(a, b)| a.name == b.name && a.seen_time == b.seen_time && a.pel == b.pel)
    }
}

impl std::fmt::Debug for Group {
    /// What the group holds, consumers by name (slot numbers do not matter).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |n: &[u8]| String::from_utf8_lossy(n).into_owned();
        let owner = |n: &Nack| self.consumer(n.consumer).map(|c| name(&c.name));
        f.debug_struct("Group")
            .field("last_id", &self.last_id)
            .field("entries_read", &self.entries_read)
            .field(
                "pel",
                &self
                    .pel
                    .iter()
                    .map(|(id, n)| (id, owner(n), n.delivery_time, n.delivery_count))
                    .collect::<Vec<_>>(),
            )
            .field(
                "consumers",
                &self
                    .consumers()
                    .map(|c| (name(&c.name), c.seen_time, &c.pel))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(n, g)| (String::from_utf8_lossy(n), g)))
            .finish()
    }
}

impl PartialEq for Groups {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Groups {
    pub fn heap_bytes(&self) -> usize {
        // B-tree slots run about 8/11 full; a set entry is its ID, a PEL entry ID + NACK.
        let tree = |n: usize, item: usize| n * item * 11 / 8;
        self.0
            .iter()
            .map(|(name, g)| {
                name.len()
                    + std::mem::size_of::<Group>()
                    + tree(g.pel.len(), std::mem::size_of::<(StreamId, Nack)>())
                    + g.slots.capacity() * std::mem::size_of::<Option<Consumer>>()
                    + g.consumers()
                        .map(|c| 2 * c.name.len() + tree(c.pel.len(), 16) + 16)
                        .sum::<usize>()
            })
            .sum()
    }

    pub fn free_effort(&self) -> usize {
        match self.0.values().next() {
            Some(g) => self.0.len() * (1 + g.pel.len()),
            None => 0,
        }
    }
}

/// A read-only view of a group.
#[derive(Clone, Copy)]
pub struct GroupRef<'a> {
    name: &'a [u8],
    g: &'a Group,
    s: &'a StreamValue,
}

/// A pending entry: its ID, owner, last delivery time (Unix ms) and delivery count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRef<'a> {
    pub id: StreamId,
    pub consumer: &'a [u8],
    pub delivery_time: i64,
    pub delivery_count: u64,
}

/// A read-only view of a consumer.
#[derive(Clone, Copy)]
pub struct ConsumerRef<'a> {
    c: &'a Consumer,
    g: &'a Group,
}

/// XPENDING's summary: how many entries are pending, the smallest and largest pending
/// IDs, and the consumers with pending entries (name order) and how many each has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingSummary<'a> {
    pub count: usize,
    pub bounds: Option<(StreamId, StreamId)>,
    pub consumers: Vec<(&'a [u8], usize)>,
}

impl<'a> GroupRef<'a> {
    pub fn name(&self) -> &'a [u8] {
        self.name
    }

    /// "last-delivered-id".
    pub fn last_id(&self) -> StreamId {
        self.g.last_id
    }

    /// "entries-read": None when unknown.
    pub fn entries_read(&self) -> Option<i64> {
        (self.g.entries_read != INVALID).then_some(self.g.entries_read)
    }

    /// "lag": entries not yet delivered, None when it cannot be known (Redis's
    /// streamReplyWithCGLag).
    pub fn lag(&self) -> Option<i64> {
        self.s.meta.lag(self.g)
    }

    /// How many entries are pending.
    pub fn pending_len(&self) -> usize {
        self.g.pel.len()
    }

    pub fn consumer_count(&self) -> usize {
        self.g.by_name.len()
    }

    /// The pending entries with IDs in `lo..=hi`, in ID order.
    pub fn pending(&self, lo: StreamId, hi: StreamId) -> impl Iterator<Item = PendingRef<'a>> + 'a {
        let g = self.g;
        let range = if lo <= hi {
            Some(g.pel.range(lo..=hi))
        } else {
            None
        };
        range
            .into_iter()
            .flatten()
            .map(move |(&id, n)| pending_ref(g, id, n))
    }

    /// Consumers, in name order.
    pub fn consumers(&self) -> impl Iterator<Item = ConsumerRef<'a>> + 'a {
        let g = self.g;
        g.consumers().map(move |c| ConsumerRef { c, g })
    }

    pub fn consumer(&self, name: &[u8]) -> Option<ConsumerRef<'a>> {
        let c = self.g.consumer(self.g.slot(name)?)?;
        Some(ConsumerRef { c, g: self.g })
    }

    /// XPENDING key group.
    pub fn pending_summary(&self) -> PendingSummary<'a> {
        let pel = &self.g.pel;
        let bounds = pel
            .first_key_value()
            .zip(pel.last_key_value())
            .map(|((a, _), (b, _))| (*a, *b));
        PendingSummary {
            count: pel.len(),
            bounds,
            consumers: self
                .g
                .consumers()
                .filter(|c| !c.pel.is_empty())
                .map(|c| (&*c.name, c.pel.len()))
                .collect(),
        }
    }

    /// XPENDING's extended form: up to `count` pending entries in `lo..=hi` (of
    /// `consumer` only, when given: none if it does not exist), skipping those idle less
    /// than `min_idle` ms when it is not 0. Idle times are `now` minus the delivery time.
    pub fn pending_extended(
        &self,
        lo: StreamId,
        hi: StreamId,
        count: usize,
        consumer: Option<&[u8]>,
        min_idle: i64,
        now: u64,
    ) -> Vec<PendingRef<'a>> {
        let now = now as i64;
        let keep =
            |p: &PendingRef<'_>| min_idle == 0 || now.wrapping_sub(p.delivery_time) >= min_idle;
        match consumer {
            None => self.pending(lo, hi).filter(keep).take(count).collect(),
            Some(name) => match self.consumer(name) {
                None => Vec::new(),
                Some(c) => c.pending(lo, hi).filter(keep).take(count).collect(),
            },
        }
    }
}

fn pending_ref<'a>(g: &'a Group, id: StreamId, n: &Nack) -> PendingRef<'a> {
    PendingRef {
        id,
        consumer: g.consumer(n.consumer).map_or(&[][..], |c| &c.name),
        delivery_time: n.delivery_time,
        delivery_count: n.delivery_count,
    }
}

impl<'a> ConsumerRef<'a> {
    pub fn name(&self) -> &'a [u8] {
        &self.c.name
    }

    /// "seen-time": when the consumer last read or claimed (Unix ms).
    pub fn seen_time(&self) -> i64 {
        self.c.seen_time
    }

    /// Idle ms at `now` (XINFO CONSUMERS), never negative.
    pub fn idle(&self, now: u64) -> i64 {
        (now as i64).wrapping_sub(self.c.seen_time).max(0)
    }

    pub fn pending_len(&self) -> usize {
        self.c.pel.len()
    }

    /// This consumer's pending entries with IDs in `lo..=hi`, in ID order.
    pub fn pending(&self, lo: StreamId, hi: StreamId) -> impl Iterator<Item = PendingRef<'a>> + 'a {
        let g = self.g;
        let range = if lo <= hi {
            Some(self.c.pel.range(lo..=hi))
        } else {
            None
        };
        range
            .into_iter()
            .flatten()
            .filter_map(move |id| Some(pending_ref(g, *id, g.pel.get(id)?)))
    }
}

impl StreamValue {
    pub fn group(&self, name: &[u8]) -> Option<GroupRef<'_>> {
        let (name, g) = self.groups.0.get_key_value(name)?;
        Some(GroupRef { name, g, s: self })
    }

    /// Groups, in name order.
    pub fn groups(&self) -> impl Iterator<Item = GroupRef<'_>> {
        self.groups
            .0
            .iter()
            .map(move |(name, g)| GroupRef { name, g, s: self })
    }

    pub fn group_count(&self) -> usize {
        self.groups.0.len()
    }

    pub(super) fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.0.get_mut(name)
    }

    /// XGROUP CREATE: a group whose last delivered ID is `id` (the caller resolves `$` to
    /// `last_id()`), with this read counter (None: unknown).
    pub fn create_group(
        &mut self,
        name: &[u8],
        id: StreamId,
        entries_read: Option<i64>,
    ) -> Result<(), StreamError> {
        if self.groups.0.contains_key(name) {
            return Err(StreamError::BusyGroup);
        }
        let g = Group::new(id, entries_read.unwrap_or(INVALID));
        self.groups.0.insert(name.into(), g);
        Ok(())
    }

    /// XGROUP SETID (`entries_read` None makes the counter unknown). False: no group.
    pub fn set_group_id(&mut self, name: &[u8], id: StreamId, entries_read: Option<i64>) -> bool {
        let Some(g) = self.group_mut(name) else {
            return false;
        };
        g.last_id = id;
        g.entries_read = entries_read.unwrap_or(INVALID);
        true
    }

    /// XGROUP DESTROY. False: no group.
    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.0.remove(name).is_some()
    }

    /// XGROUP CREATECONSUMER: Some(true) if created, Some(false) if it existed, None if
    /// there is no such group.
    pub fn create_consumer(&mut self, group: &[u8], consumer: &[u8], now: u64) -> Option<bool> {
        let g = self.group_mut(group)?;
        if g.slot(consumer).is_some() {
            return Some(false);
        }
        g.add_consumer(consumer, now as i64);
        Some(true)
    }

    /// XGROUP DELCONSUMER: removes the consumer and its pending entries (from the group's
    /// PEL too); how many it had (0 if no such consumer). None: no such group.
    pub fn delete_consumer(&mut self, group: &[u8], consumer: &[u8]) -> Option<usize> {
        let g = self.group_mut(group)?;
        let Some(c) = g.remove_consumer(consumer) else {
            return Some(0);
        };
        for id in &c.pel {
            g.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// XACK: removes these IDs from the group's PEL (and their owners'); how many were
    /// pending. 0 when there is no such group.
    pub fn ack(&mut self, group: &[u8], ids: &[StreamId]) -> usize {
        let Some(g) = self.group_mut(group) else {
            return 0;
        };
        ids.iter().filter(|&&id| g.drop_nack(id).is_some()).count()
    }
}

impl Meta {
    /// Redis's streamRangeHasTombstones from `start` to the end: whether a deleted entry
    /// may lie at or after `start` (Redis assumes `start` is below the last ID).
    pub(super) fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted
    }

    /// Redis's streamEstimateDistanceFromFirstEverEntry: the read counter of `id`, when it
    /// can be known.
    pub(super) fn estimate_distance(&self, id: StreamId) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(added);
        }
        match id.cmp(&self.last_id) {
            Ordering::Equal => return Some(added),
            Ordering::Greater => return None,
            Ordering::Less => {}
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            let before_first = added.wrapping_sub(self.length as i64);
            match id.cmp(&self.first_id) {
                Ordering::Less => return Some(before_first),
                Ordering::Equal => return Some(before_first.wrapping_add(1)),
                Ordering::Greater => {}
            }
        }
        None
    }

    /// The group delivers `id`, above its last delivered ID (in Redis's
    /// streamReplyWithRange): the read counter counts it if it is known and no deleted
    /// entry may follow, else it is estimated afresh.
    pub(super) fn advance(&self, g: &mut Group, id: StreamId) {
        if g.entries_read != INVALID && !self.range_has_tombstones(id) {
            g.entries_read = g.entries_read.wrapping_add(1);
        } else if self.entries_added != 0 {
            g.entries_read = self.estimate_distance(id).unwrap_or(INVALID);
        }
        g.last_id = id;
    }

    /// The lag of a group (Redis's streamReplyWithCGLag): entries not yet delivered, None
    /// when it cannot be known.
    fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let added = self.entries_added as i64;
        if g.entries_read != INVALID && !self.range_has_tombstones(g.last_id) {
            return Some(added.wrapping_sub(g.entries_read));
        }
        self.estimate_distance(g.last_id)
            .map(|read| added.wrapping_sub(read))
    }
}
