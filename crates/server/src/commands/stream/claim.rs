//! XCLAIM and XAUTOCLAIM, and the journal records of everything that delivers entries to
//! a group's consumers.

use super::{id_bytes, no_group, reply_counted, reply_entry, reply_id};
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::exec::effects::Audience;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::stream::{AutoClaim, ClaimOpts, ClaimTime, StreamId};
use strata_engine::StreamValue;

/// The journal records of XREADGROUP, XCLAIM and XAUTOCLAIM: what Redis propagates to its
/// AOF and replicas, so that replaying them rebuilds the group exactly.
///
/// - A pending entry delivered or claimed: `XCLAIM key group owner 0 id TIME <delivery
///   time> RETRYCOUNT <count> FORCE JUSTID LASTID <group's last ID>`, which gives it that
///   owner, time and count whatever the replaying group holds.
/// - A new consumer: `XGROUP CREATECONSUMER`, where no XCLAIM record creates it (Redis
///   writes it only for NOACK reads; a history read can create one too).
/// - A pending entry dropped because its entry is gone: `XACK`.
/// - A group whose last delivered ID moved: `XGROUP SETID ... ENTRIESREAD <n>` (Redis
///   writes it only for NOACK reads and claims of nothing; XCLAIM's LASTID does not carry
///   the read counter).
///
/// Records Redis does not write go to the journal alone, so that the replication stream
/// is Redis's and a replay rebuilds the group exactly. Redis leaves out the new delivery
/// times and counts of a history read; they are journaled here.
#[derive(Default)]
pub(super) struct Records(Vec<(Audience, Vec<Bytes>)>);

fn record(args: &[&[u8]]) -> Vec<Bytes> {
    args.iter().map(|a| Bytes::copy_from_slice(a)).collect()
}

/// The audience of a record Redis writes only `if redis_writes`.
pub(super) fn written_by_redis_if(redis_writes: bool) -> Audience {
    if redis_writes {
        Audience::All
    } else {
        Audience::Journal
    }
}

impl Records {
    pub fn consumer_created(&mut self, to: Audience, key: &[u8], group: &[u8], consumer: &[u8]) {
        let r = record(&[b"XGROUP", b"CREATECONSUMER", key, group, consumer]);
        self.0.push((to, r));
    }

    /// The pending entry `id` of `group` as it is now.
    pub fn claimed(
        &mut self,
        to: Audience,
        key: &[u8],
        group: &[u8],
        s: &StreamValue,
        id: StreamId,
    ) {
        self.xclaim(to, key, group, s, id, None);
    }

    /// A new entry a read delivered: its LASTID is its own ID, the group's last delivered
    /// ID when it was read (as Redis writes one XCLAIM per entry as it delivers it).
    pub fn delivered_new(&mut self, key: &[u8], group: &[u8], s: &StreamValue, id: StreamId) {
        self.xclaim(Audience::All, key, group, s, id, Some(id));
    }

    /// The XCLAIM record of pending entry `id`, with LASTID `last_id` (default: the group's).
    fn xclaim(
        &mut self,
        to: Audience,
        key: &[u8],
        group: &[u8],
        s: &StreamValue,
        id: StreamId,
        last_id: Option<StreamId>,
    ) {
        let Some(g) = s.group(group) else { return };
        let Some(p) = g.pending(id, id).next() else {
            return;
        };
        let mut r = record(&[b"XCLAIM", key, group, p.consumer, b"0"]);
        r.extend([
            id_bytes(id),
            Bytes::from_static(b"TIME"),
            Bytes::from(p.delivery_time.to_string()),
            Bytes::from_static(b"RETRYCOUNT"),
            Bytes::from(p.delivery_count.to_string()),
            Bytes::from_static(b"FORCE"),
            Bytes::from_static(b"JUSTID"),
            Bytes::from_static(b"LASTID"),
            id_bytes(last_id.unwrap_or(g.last_id())),
        ]);
        self.0.push((to, r));
    }

    pub fn dropped(&mut self, key: &[u8], group: &[u8], ids: &[StreamId]) {
        if !ids.is_empty() {
            let mut r = record(&[b"XACK", key, group]);
            r.extend(ids.iter().map(|id| id_bytes(*id)));
            self.0.push((Audience::All, r));
        }
    }

    pub fn group_moved(&mut self, to: Audience, key: &[u8], group: &[u8], s: &StreamValue) {
        let Some(g) = s.group(group) else { return };
        let read = g.entries_read().unwrap_or(-1).to_string();
        let mut r = record(&[b"XGROUP", b"SETID", key, group]);
        r.extend([
            id_bytes(g.last_id()),
            Bytes::from_static(b"ENTRIESREAD"),
            Bytes::from(read),
        ]);
        self.0.push((to, r));
    }

    /// Leaves the records as the command's effect (nothing when nothing changed).
    pub fn finish(self, ctx: &mut Ctx<'_>) {
        if self.0.is_empty() {
            ctx.no_effect();
        } else if self.0.iter().all(|(to, _)| *to == Audience::All) {
            ctx.rewrite(self.0.into_iter().map(|(_, r)| r).collect());
        } else {
            ctx.rewrite_targeted(self.0);
        }
    }
}

/// Checks that the key holds a stream with this group (XCLAIM, XAUTOCLAIM).
fn check_group(ctx: &Ctx<'_>) -> CmdResult {
    let (key, group) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock1(key);
    match l.stream_get(key)? {
        Some(s) if s.group(group).is_some() => Ok(()),
        _ => Err(no_group(key, group, "")),
    }
}

/// A min-idle-time argument (negative means 0).
fn min_idle(ctx: &Ctx<'_>, cmd: &str) -> Result<i64, CmdError> {
    let n = parse_i64(ctx.arg(4))
        .ok_or_else(|| CmdError::Custom(format!("ERR Invalid min-idle-time argument for {cmd}")))?;
    Ok(n.max(0))
}

pub(super) fn xclaim(ctx: &mut Ctx<'_>) -> CmdResult {
    check_group(ctx)?;
    let argv = ctx.argv;
    let (key, group, consumer) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let mut opts = ClaimOpts {
        min_idle: min_idle(ctx, "XCLAIM")?,
        ..ClaimOpts::default()
    };
    // The IDs run until the first argument that is not one; options follow.
    let ids: Vec<StreamId> = argv[5..]
        .iter()
        .map_while(|a| StreamId::parse(a, 0, true))
        .collect();
    let mut j = 5 + ids.len();
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = ctx.lower(j);
        let int = |name: &str| {
            parse_i64(&argv[j + 1]).ok_or_else(|| {
                CmdError::Custom(format!("ERR Invalid {name} option argument for XCLAIM"))
            })
        };
        match opt.as_slice() {
            b"force" => opts.force = true,
            b"justid" => opts.justid = true,
            b"idle" if more > 0 => {
                opts.time = Some(ClaimTime::Idle(int("IDLE")?));
                j += 1;
            }
            b"time" if more > 0 => {
                opts.time = Some(ClaimTime::At(int("TIME")?));
                j += 1;
            }
            b"retrycount" if more > 0 => {
                opts.retry_count = u64::try_from(int("RETRYCOUNT")?).ok();
                j += 1;
            }
            b"lastid" if more > 0 => {
                opts.last_id = super::parse_id(&argv[j + 1], 0, true)?;
                j += 1;
            }
            _ => {
                return Err(CmdError::Custom(format!(
                    "ERR Unrecognized XCLAIM option '{}'",
                    String::from_utf8_lossy(&argv[j])
                )))
            }
        }
        j += 1;
    }
    let now = ctx.clock_ms();
    let mut l = ctx.lock1(key);
    let Some(s) = l.stream_mut(key)? else {
        return Err(no_group(key, group, ""));
    };
    let mut claimed = Vec::new();
    let mut outcome = None;
    reply_counted(&mut ctx.out, |out| {
        outcome = s.claim(group, consumer, &ids, &opts, now, &mut |id, entry| {
            match entry {
                Some(e) => reply_entry(out, &e),
                None => reply_id(out, id),
            }
            claimed.push(id);
        });
        claimed.len()
    });
    let outcome = outcome.unwrap_or_default();
    let mut records = Records::default();
    for id in &claimed {
        records.claimed(Audience::All, key, group, s, *id);
    }
    records.dropped(key, group, &outcome.dropped);
    if outcome.last_id_moved {
        let to = written_by_redis_if(claimed.is_empty());
        records.group_moved(to, key, group, s);
    }
    drop(l);
    records.finish(ctx);
    if outcome.consumer_created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    Ok(())
}

pub(super) fn xautoclaim(ctx: &mut Ctx<'_>) -> CmdResult {
    /// COUNT's bound: Redis sizes a buffer of COUNT IDs and examines 10 times COUNT.
    const COUNT_MAX: i64 = i64::MAX / 16;
    let argv = ctx.argv;
    let min_idle = min_idle(ctx, "XAUTOCLAIM")?;
    let start = StreamId::parse_bound(&argv[5], 0, true).map_err(super::stream_err)?;
    let mut count = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        match ctx.lower(j).as_slice() {
            b"count" if more > 0 => {
                count = parse_i64(&argv[j + 1])
                    .filter(|n| (1..=COUNT_MAX).contains(n))
                    .ok_or(CmdError::Static("ERR COUNT must be > 0"))?;
                j += 1;
            }
            b"justid" => justid = true,
            _ => return Err(CmdError::SYNTAX),
        }
        j += 1;
    }
    check_group(ctx)?;
    let (key, group, consumer) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let req = AutoClaim {
        min_idle,
        start,
        count: usize::try_from(count).unwrap_or(usize::MAX),
        justid,
    };
    let now = ctx.clock_ms();
    let mut l = ctx.lock1(key);
    let Some(s) = l.stream_mut(key)? else {
        return Err(no_group(key, group, ""));
    };
    let mut body = Vec::new();
    let mut claimed = Vec::new();
    let mut outcome = None;
    reply_counted(
        &mut strata_resp::Reply::new(&mut body, ctx.out.proto),
        |out| {
            outcome = s.autoclaim(group, consumer, &req, now, &mut |id, entry| {
                match entry {
                    Some(e) => reply_entry(out, &e),
                    None => reply_id(out, id),
                }
                claimed.push(id);
            });
            claimed.len()
        },
    );
    let outcome = outcome.unwrap_or_default();
    let mut records = Records::default();
    for id in &claimed {
        records.claimed(Audience::All, key, group, s, *id);
    }
    records.dropped(key, group, &outcome.deleted);
    drop(l);
    records.finish(ctx);
    if outcome.consumer_created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    ctx.out.array(3);
    reply_id(&mut ctx.out, outcome.cursor);
    ctx.out.raw(&body);
    ctx.out.array(outcome.deleted.len());
    for id in &outcome.deleted {
        reply_id(&mut ctx.out, *id);
    }
    Ok(())
}
