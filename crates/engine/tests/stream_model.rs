//! The stream type against a model: a BTreeMap of entries and, for each consumer group, a
//! map of pending entries and of consumers. Random sequences of adds, deletions, trims,
//! range reads, group reads, acks and claims must leave both in the same state and answer
//! the same. Nodes are kept small so that every operation crosses node boundaries.

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use strata_engine::stream::{
    AddId, AutoClaim, ClaimOpts, ReadFrom, ReadGroup, StreamBuilder, StreamId, Trim, TrimStrategy,
};
use strata_engine::{Encodings, StreamValue};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Clone, Debug)]
enum Op {
    /// Add with `*` at the clock, or an explicit ID some steps above the last.
    Add {
        explicit: Option<(u64, u64)>,
        fields: u8,
    },
    Delete(Vec<u16>),
    Trim {
        maxlen: Option<u16>,
        minid: u16,
        approx: bool,
        limit: u16,
    },
    Range {
        lo: u16,
        hi: u16,
        rev: bool,
        count: u8,
    },
    Read {
        group: u8,
        consumer: u8,
        count: u8,
        noack: bool,
    },
    History {
        group: u8,
        consumer: u8,
        after: u16,
        count: u8,
    },
    Ack {
        group: u8,
        ids: Vec<u16>,
    },
    Claim {
        group: u8,
        consumer: u8,
        ids: Vec<u16>,
        min_idle: u8,
        justid: bool,
    },
    AutoClaim {
        group: u8,
        consumer: u8,
        start: u16,
        count: u8,
        min_idle: u8,
    },
    SetGroup {
        group: u8,
        to: u16,
    },
    Tick(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let ids = || proptest::collection::vec(0u16..400, 0..6);
    prop_oneof![
        6 => (proptest::option::of((0u64..3, 0u64..3)), 0u8..4)
            .prop_map(|(explicit, fields)| Op::Add { explicit, fields }),
        2 => ids().prop_map(Op::Delete),
        1 => (proptest::option::of(0u16..40), 0u16..400, any::<bool>(), 0u16..12)
            .prop_map(|(maxlen, minid, approx, limit)| Op::Trim { maxlen, minid, approx, limit }),
        2 => (0u16..400, 0u16..400, any::<bool>(), 0u8..6)
            .prop_map(|(lo, hi, rev, count)| Op::Range { lo, hi, rev, count }),
        3 => (0u8..2, 0u8..3, 0u8..4, any::<bool>())
            .prop_map(|(group, consumer, count, noack)| Op::Read { group, consumer, count, noack }),
        1 => (0u8..2, 0u8..3, 0u16..400, 0u8..4)
            .prop_map(|(group, consumer, after, count)| Op::History { group, consumer, after, count }),
        2 => (0u8..2, ids()).prop_map(|(group, ids)| Op::Ack { group, ids }),
        2 => (0u8..2, 0u8..3, ids(), 0u8..4, any::<bool>())
            .prop_map(|(group, consumer, ids, min_idle, justid)| Op::Claim { group, consumer, ids, min_idle, justid }),
        2 => (0u8..2, 0u8..3, 0u16..400, 1u8..4, 0u8..4)
            .prop_map(|(group, consumer, start, count, min_idle)| Op::AutoClaim { group, consumer, start, count, min_idle }),
        1 => (0u8..2, 0u16..400).prop_map(|(group, to)| Op::SetGroup { group, to }),
        2 => (0u8..3).prop_map(Op::Tick),
    ]
}

#[derive(Clone, Debug, Default)]
struct MGroup {
    last: StreamId,
    /// id -> (consumer, delivery time, delivery count)
    pel: BTreeMap<StreamId, (Vec<u8>, i64, u64)>,
    /// consumer -> seen time
    consumers: BTreeMap<Vec<u8>, i64>,
}

#[derive(Default)]
struct Model {
    /// Every ID ever added, for operations to pick from.
    history: Vec<StreamId>,
    entries: BTreeMap<StreamId, Fields>,
    last: StreamId,
    added: u64,
    max_deleted: StreamId,
    groups: Vec<MGroup>,
}

const GROUPS: [&[u8]; 2] = [b"g0", b"g1"];
const CONSUMERS: [&[u8]; 3] = [b"alice", b"bob", b"carol"];

/// An ID from an index: small `ms-seq` parts.
fn nth(i: u16) -> StreamId {
    StreamId::new(u64::from(i / 4), u64::from(i % 4))
}

fn fields(kind: u8, n: u64) -> Fields {
    let v = n.to_string().into_bytes();
    match kind {
        0 | 1 => vec![(b"f1".to_vec(), v), (b"f2".to_vec(), b"x".to_vec())],
        2 => vec![(b"other".to_vec(), v)],
        _ => vec![],
    }
}

fn entry_fields(e: &strata_engine::stream::Entry<'_>) -> Fields {
    e.fields().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
}

impl Model {
    /// An ID for an operation: even indexes pick one ever added, odd ones any.
    fn pick(&self, i: u16) -> StreamId {
        match self.history.len() {
            n if n > 0 && i.is_multiple_of(2) => self.history[usize::from(i / 2) % n],
            _ => nth(i),
        }
    }

    fn touch(&mut self, g: usize, c: &[u8], now: i64) {
        self.groups[g].consumers.insert(c.to_vec(), now);
    }

    fn claim_one(&mut self, g: usize, c: &[u8], id: StreamId, now: i64, justid: bool) {
        if let Some(p) = self.groups[g].pel.get_mut(&id) {
            p.0 = c.to_vec();
            p.1 = now;
            if !justid {
                p.2 += 1;
            }
        }
    }
}

fn check(s: &StreamValue, m: &Model) -> Result<(), TestCaseError> {
    let got: Vec<(StreamId, Fields)> = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(|e| (e.id(), entry_fields(&e)))
        .collect();
    let want: Vec<(StreamId, Fields)> = m.entries.iter().map(|(k, v)| (*k, v.clone())).collect();
    prop_assert_eq!(got, want);
    prop_assert_eq!(s.len(), m.entries.len() as u64);
    prop_assert_eq!(s.last_id(), m.last);
    prop_assert_eq!(s.entries_added(), m.added);
    prop_assert_eq!(s.max_deleted_id(), m.max_deleted);
    let first = m.entries.keys().next().copied().unwrap_or(StreamId::MIN);
    prop_assert_eq!(s.recorded_first_id(), first);
    prop_assert_eq!(s.last_entry_id(), m.entries.keys().next_back().copied());
    for (k, mg) in m.groups.iter().enumerate() {
        let g = s
            .group(GROUPS[k])
            .ok_or_else(|| TestCaseError::fail("group missing"))?;
        prop_assert_eq!(g.last_id(), mg.last);
        let pel: Vec<(StreamId, Vec<u8>, i64, u64)> = g
            .pending(StreamId::MIN, StreamId::MAX)
            .map(|p| (p.id, p.consumer.to_vec(), p.delivery_time, p.delivery_count))
            .collect();
        let want: Vec<(StreamId, Vec<u8>, i64, u64)> = mg
            .pel
            .iter()
            .map(|(id, (c, t, n))| (*id, c.clone(), *t, *n))
            .collect();
        prop_assert_eq!(pel, want);
        let consumers: Vec<(Vec<u8>, i64, usize)> = g
            .consumers()
            .map(|c| (c.name().to_vec(), c.seen_time(), c.pending_len()))
            .collect();
        let want: Vec<(Vec<u8>, i64, usize)> = mg
            .consumers
            .iter()
            .map(|(c, t)| (c.clone(), *t, mg.pel.values().filter(|p| &p.0 == c).count()))
            .collect();
        prop_assert_eq!(consumers, want);
    }
    Ok(())
}

/// A copy through the snapshot builder.
fn rebuilt(s: &StreamValue) -> StreamValue {
    let mut b = StreamBuilder::new();
    for node in s.nodes() {
        for (k, e) in node.entries().enumerate() {
            let flat: Vec<&[u8]> = e.fields().flat_map(|(f, v)| [f, v]).collect();
            b.push(k == 0, e.id(), e.is_deleted(), &flat).unwrap();
        }
    }
    b.meta(
        s.last_id(),
        s.recorded_first_id(),
        s.max_deleted_id(),
        s.entries_added(),
    );
    for g in s.groups() {
        b.group(g.name(), g.last_id(), g.entries_read()).unwrap();
        for c in g.consumers() {
            b.consumer(g.name(), c.name(), c.seen_time()).unwrap();
        }
        for p in g.pending(StreamId::MIN, StreamId::MAX) {
            b.pending(
                g.name(),
                p.id,
                p.consumer,
                p.delivery_time,
                p.delivery_count,
            )
            .unwrap();
        }
    }
    b.finish().unwrap()
}

fn apply(
    s: &mut StreamValue,
    m: &mut Model,
    op: &Op,
    now: &mut i64,
    enc: &Encodings,
) -> Result<(), TestCaseError> {
    let t = *now;
    match op {
        Op::Add {
            explicit,
            fields: kind,
        } => {
            let f = fields(*kind, m.added);
            let flat: Vec<&[u8]> = f.iter().flat_map(|(a, b)| [&a[..], &b[..]]).collect();
            let (add, want) = match explicit {
                None => {
                    let want = if t as u64 > m.last.ms {
                        StreamId::new(t as u64, 0)
                    } else {
                        StreamId::new(m.last.ms, m.last.seq + 1)
                    };
                    (AddId::Auto, want)
                }
                Some((dms, seq)) => {
                    let want = StreamId::new(
                        m.last.ms + dms,
                        if *dms == 0 {
                            m.last.seq + 1 + seq
                        } else {
                            *seq
                        },
                    );
                    (AddId::Exact(want), want)
                }
            };
            prop_assert_eq!(s.add(add, &flat, t as u64, enc), Ok(want));
            m.entries.insert(want, f);
            m.history.push(want);
            m.last = want;
            m.added += 1;
        }
        Op::Delete(ids) => {
            let ids: Vec<StreamId> = ids.iter().map(|&i| m.pick(i)).collect();
            let mut want = 0;
            for id in &ids {
                if m.entries.remove(id).is_some() {
                    want += 1;
                    m.max_deleted = m.max_deleted.max(*id);
                }
            }
            prop_assert_eq!(s.delete(&ids), want);
        }
        Op::Trim {
            maxlen,
            minid,
            approx,
            limit,
        } => {
            let strategy = match maxlen {
                Some(n) => TrimStrategy::MaxLen(u64::from(*n)),
                None => TrimStrategy::MinId(m.pick(*minid)),
            };
            let limit = if *approx { u64::from(*limit) } else { 0 };
            let removed = s.trim(&Trim {
                strategy,
                approx: *approx,
                limit,
            });
            let before = m.entries.len() as u64;
            let target = match strategy {
                TrimStrategy::MaxLen(n) => before.saturating_sub(n),
                TrimStrategy::MinId(id) => m.entries.range(..id).count() as u64,
            };
            if *approx {
                // Whole nodes only, within the limit: a prefix of what an exact trim takes.
                prop_assert!(removed <= target);
                prop_assert!(limit == 0 || removed <= limit);
            } else {
                prop_assert_eq!(removed, target);
            }
            for _ in 0..removed {
                m.entries.pop_first();
            }
        }
        Op::Range { lo, hi, rev, count } => {
            let (lo, hi) = (m.pick(*lo), m.pick(*hi));
            let n = if *count == 0 {
                usize::MAX
            } else {
                usize::from(*count)
            };
            let got: Vec<StreamId> = s.range(lo, hi, *rev).take(n).map(|e| e.id()).collect();
            let mut want: Vec<StreamId> = if lo <= hi {
                m.entries.range(lo..=hi).map(|(k, _)| *k).collect()
            } else {
                Vec::new()
            };
            if *rev {
                want.reverse();
            }
            want.truncate(n);
            prop_assert_eq!(got, want);
        }
        Op::Read {
            group,
            consumer,
            count,
            noack,
        } => {
            let (g, c) = (usize::from(*group), CONSUMERS[usize::from(*consumer)]);
            let req = ReadGroup {
                group: GROUPS[g],
                consumer: c,
                from: ReadFrom::New,
                count: usize::from(*count),
                noack: *noack,
            };
            let mut got = Vec::new();
            s.read_group(&req, t as u64, &mut |id, e| {
                got.push((id, e.map(|e| entry_fields(&e))))
            });
            m.touch(g, c, t);
            let n = if *count == 0 {
                usize::MAX
            } else {
                usize::from(*count)
            };
            let last = m.groups[g].last;
            let want: Vec<(StreamId, Option<Fields>)> = m
                .entries
                .range((std::ops::Bound::Excluded(last), std::ops::Bound::Unbounded))
                .take(n)
                .map(|(k, v)| (*k, Some(v.clone())))
                .collect();
            for (id, _) in &want {
                m.groups[g].last = *id;
                if !noack {
                    m.groups[g].pel.insert(*id, (c.to_vec(), t, 1));
                }
            }
            prop_assert_eq!(got, want);
        }
        Op::History {
            group,
            consumer,
            after,
            count,
        } => {
            let (g, c) = (usize::from(*group), CONSUMERS[usize::from(*consumer)]);
            let after = m.pick(*after);
            let req = ReadGroup {
                group: GROUPS[g],
                consumer: c,
                from: ReadFrom::History(after),
                count: usize::from(*count),
                noack: false,
            };
            let mut got = Vec::new();
            s.read_group(&req, t as u64, &mut |id, e| got.push((id, e.is_some())));
            m.touch(g, c, t);
            let n = if *count == 0 {
                usize::MAX
            } else {
                usize::from(*count)
            };
            let mine: Vec<StreamId> = m.groups[g]
                .pel
                .iter()
                .filter(|(id, p)| **id > after && p.0 == c)
                .map(|(id, _)| *id)
                .take(n)
                .collect();
            let mut want = Vec::new();
            for id in mine {
                let exists = m.entries.contains_key(&id);
                if exists {
                    if let Some(p) = m.groups[g].pel.get_mut(&id) {
                        p.1 = t;
                        p.2 += 1;
                    }
                }
                want.push((id, exists));
            }
            prop_assert_eq!(got, want);
        }
        Op::Ack { group, ids } => {
            let g = usize::from(*group);
            let ids: Vec<StreamId> = ids.iter().map(|&i| m.pick(i)).collect();
            let want = ids
                .iter()
                .filter(|id| m.groups[g].pel.remove(id).is_some())
                .count();
            prop_assert_eq!(s.ack(GROUPS[g], &ids), want);
        }
        Op::Claim {
            group,
            consumer,
            ids,
            min_idle,
            justid,
        } => {
            let (g, c) = (usize::from(*group), CONSUMERS[usize::from(*consumer)]);
            let ids: Vec<StreamId> = ids.iter().map(|&i| m.pick(i)).collect();
            let opts = ClaimOpts {
                min_idle: i64::from(*min_idle),
                justid: *justid,
                ..ClaimOpts::default()
            };
            let mut got = Vec::new();
            let out = s
                .claim(GROUPS[g], c, &ids, &opts, t as u64, &mut |id, e| {
                    got.push((id, e.is_some()))
                })
                .unwrap();
            let mut want = Vec::new();
            let mut dropped = Vec::new();
            for id in ids {
                if !m.entries.contains_key(&id) {
                    if m.groups[g].pel.remove(&id).is_some() {
                        dropped.push(id);
                    }
                    continue;
                }
                let Some(p) = m.groups[g].pel.get(&id) else {
                    continue;
                };
                if *min_idle != 0 && t - p.1 < i64::from(*min_idle) {
                    continue;
                }
                m.touch(g, c, t);
                m.claim_one(g, c, id, t, *justid);
                want.push((id, !justid));
            }
            prop_assert_eq!(got, want);
            prop_assert_eq!(out.dropped, dropped);
        }
        Op::AutoClaim {
            group,
            consumer,
            start,
            count,
            min_idle,
        } => {
            let (g, c) = (usize::from(*group), CONSUMERS[usize::from(*consumer)]);
            let req = AutoClaim {
                min_idle: i64::from(*min_idle),
                start: m.pick(*start),
                count: usize::from(*count),
                justid: false,
            };
            let mut got = Vec::new();
            let out = s
                .autoclaim(GROUPS[g], c, &req, t as u64, &mut |id, e| {
                    got.push((id, e.is_some()))
                })
                .unwrap();
            let pending: Vec<StreamId> = m.groups[g]
                .pel
                .range(req.start..)
                .map(|(id, _)| *id)
                .collect();
            let (mut left, mut want, mut deleted) = (req.count, Vec::new(), Vec::new());
            let mut examined = 0;
            for &id in pending.iter().take(req.count * 10) {
                if left == 0 {
                    break;
                }
                examined += 1;
                if !m.entries.contains_key(&id) {
                    m.groups[g].pel.remove(&id);
                    deleted.push(id);
                    left -= 1;
                    continue;
                }
                if req.min_idle != 0 && t - m.groups[g].pel[&id].1 < req.min_idle {
                    continue;
                }
                m.touch(g, c, t);
                m.claim_one(g, c, id, t, false);
                want.push((id, true));
                left -= 1;
            }
            let cursor = pending.get(examined).copied().unwrap_or(StreamId::MIN);
            prop_assert_eq!(got, want);
            prop_assert_eq!(out.deleted, deleted);
            prop_assert_eq!(out.cursor, cursor);
        }
        Op::SetGroup { group, to } => {
            let g = usize::from(*group);
            let to = m.pick(*to);
            prop_assert!(s.set_group_id(GROUPS[g], to, None));
            m.groups[g].last = to;
        }
        Op::Tick(ms) => *now += i64::from(*ms),
    }
    Ok(())
}

fn run(ops: &[Op], node_entries: u64) -> Result<(), TestCaseError> {
    let enc = Encodings::default();
    enc.stream_node_max_entries.store(node_entries, Relaxed);
    let mut s = StreamValue::new();
    let mut m = Model::default();
    for name in GROUPS {
        s.create_group(name, StreamId::MIN, None).unwrap();
        m.groups.push(MGroup::default());
    }
    let mut now = 1;
    for op in ops {
        apply(&mut s, &mut m, op, &mut now, &enc)?;
        check(&s, &m)?;
    }
    prop_assert_eq!(&rebuilt(&s), &s);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn stream_matches_a_model(ops in proptest::collection::vec(op(), 1..150), node_entries in 1u64..6) {
        run(&ops, node_entries)?;
    }
}
