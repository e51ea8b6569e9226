//! XREAD and XREADGROUP, blocking included (Redis's xreadCommand).
//!
//! A read that finds nothing to serve and was given BLOCK asks to block on its keys; it
//! is re-run as the waiter when a key is signalled (XADD, and for XREADGROUP also XGROUP
//! DESTROY and any deletion or replacement of the key: see `Ctx::notify_db`). XREAD's `$`
//! is resolved when it blocks: the waiter re-runs with the IDs it stood for. A re-run
//! answers as Redis's blocked clients are answered: at most 1000 entries a stream unless
//! COUNT says otherwise, a key now of another type is not ready for XREAD, and XREADGROUP
//! whose stream or group went away gets Redis's UNBLOCKED or NOGROUP error.

use super::claim::{written_by_redis_if, Records};
use super::{count_arg, id_bytes, no_group, parse_id, reply_counted, reply_entry, reply_id};
use crate::commands::blocking::rerun;
use crate::exec::command::{ks, parse_i64, CmdError, CmdResult, KeyAt};
use crate::exec::ctx::Ctx;
use crate::exec::effects::Audience;
use crate::services::blocking::BlockRequest;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::stream::{ReadFrom, ReadGroup, StreamId};
use strata_engine::{Locked, StreamValue};
use strata_resp::{Protocol, Reply};

/// Entries a blocked reader takes at most from a stream when it gave no COUNT.
const BLOCKED_DEFAULT_COUNT: usize = 1000;

/// XREAD/XREADGROUP key positions: the first half of the arguments after STREAMS (none
/// when the options before it do not parse, or the keys and IDs do not pair up).
pub(super) fn stream_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    let mut i = 1;
    while i < argv.len() {
        match argv[i].to_ascii_lowercase().as_slice() {
            b"block" | b"count" => i += 2,
            b"group" => i += 3,
            b"noack" => i += 1,
            b"streams" => {
                let rest = argv.len() - i - 1;
                if rest > 0 && rest.is_multiple_of(2) {
                    for pos in i + 1..=i + rest / 2 {
                        f(KeyAt {
                            pos,
                            flags: ks::RO | ks::ACCESS,
                        });
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

/// The options of one XREAD or XREADGROUP.
struct ReadArgs<'a> {
    /// BLOCK: the deadline in Unix ms (0 = forever).
    block: Option<u64>,
    /// COUNT (0: no limit).
    count: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    /// Where the keys start, and how many there are (the IDs follow them).
    streams_at: usize,
    n: usize,
}

fn parse_args<'a>(ctx: &Ctx<'a>, xreadgroup: bool) -> Result<ReadArgs<'a>, CmdError> {
    let argv = ctx.argv;
    let name = String::from_utf8_lossy(&argv[0]);
    let mut a = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        streams_at: 0,
        n: 0,
    };
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        match ctx.lower(i).as_slice() {
            b"block" if more > 0 => {
                if ctx.in_script() {
                    return Err(CmdError::Custom(format!(
                        "ERR {name} command is not allowed with BLOCK option from scripts"
                    )));
                }
                i += 1;
                let ms = parse_i64(&argv[i]).ok_or(CmdError::Static(
                    "ERR timeout is not an integer or out of range",
                ))?;
                if ms < 0 {
                    return Err(CmdError::Static("ERR timeout is negative"));
                }
                a.block = Some(match ms {
                    0 => 0,
                    ms => ctx.now_ms.saturating_add(ms as u64),
                });
            }
            b"count" if more > 0 => {
                i += 1;
                a.count = usize::try_from(count_arg(&argv[i])?).unwrap_or(usize::MAX);
            }
            b"streams" if more > 0 => {
                a.streams_at = i + 1;
                let rest = argv.len() - a.streams_at;
                if !rest.is_multiple_of(2) {
                    return Err(CmdError::Static("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
                }
                a.n = rest / 2;
                break;
            }
            b"group" if more >= 2 => {
                if !xreadgroup {
                    return Err(CmdError::Static("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."));
                }
                a.group = Some((&argv[i + 1], &argv[i + 2]));
                i += 2;
            }
            b"noack" => {
                if !xreadgroup {
                    return Err(CmdError::Static("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."));
                }
                a.noack = true;
            }
            _ => return Err(CmdError::SYNTAX),
        }
        i += 1;
    }
    if a.streams_at == 0 {
        return Err(CmdError::SYNTAX);
    }
    if xreadgroup && a.group.is_none() {
        return Err(CmdError::Static("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(a)
}

/// Where one stream is read from.
#[derive(Clone, Copy)]
enum From {
    /// Entries above this ID (XREAD; XREADGROUP's history of the consumer).
    After(StreamId),
    /// XREADGROUP's `>`.
    New,
}

pub(super) fn xread(ctx: &mut Ctx<'_>) -> CmdResult {
    read_generic(ctx, false)
}

pub(super) fn xreadgroup(ctx: &mut Ctx<'_>) -> CmdResult {
    read_generic(ctx, true)
}

fn read_generic(ctx: &mut Ctx<'_>, xreadgroup: bool) -> CmdResult {
    let mut a = parse_args(ctx, xreadgroup)?;
    let rerun = rerun(ctx);
    if rerun && a.count == 0 {
        a.count = BLOCKED_DEFAULT_COUNT;
    }
    let argv = ctx.argv;
    let keys = &argv[a.streams_at..a.streams_at + a.n];
    let id_args = &argv[a.streams_at + a.n..];
    let now = ctx.clock_ms();
    let mut l = ctx.lock(keys);
    let from = resolve_ids(&mut l, keys, id_args, a.group, rerun)?;

    let proto = ctx.out.proto;
    let mut body = Vec::new();
    let mut served = 0;
    let mut records = Records::default();
    let mut created = Vec::new();
    for (key, &f) in keys.iter().zip(&from) {
        let mut out = Reply::new(&mut body, proto);
        match a.group {
            None => {
                let (Ok(Some(s)), From::After(after)) = (l.stream_peek(key), f) else {
                    continue;
                };
                if !s.has_entries_after(after) {
                    continue;
                }
                stream_header(&mut out, key);
                let take = if a.count == 0 { usize::MAX } else { a.count };
                reply_counted(&mut out, |out| {
                    s.after(after)
                        .take(take)
                        .map(|e| reply_entry(out, &e))
                        .count()
                });
            }
            Some((group, consumer)) => {
                let Ok(Some(s)) = l.stream_mut(key) else {
                    continue;
                };
                let from = match f {
                    From::New => {
                        let last = s.group(group).map_or(StreamId::MAX, |g| g.last_id());
                        if !s.has_entries_after(last) {
                            continue;
                        }
                        ReadFrom::New
                    }
                    From::After(id) => ReadFrom::History(id),
                };
                let req = ReadGroup {
                    group,
                    consumer,
                    from,
                    count: a.count,
                    noack: a.noack,
                };
                stream_header(&mut out, key);
                if serve_group(&mut out, s, key, &req, now, &mut records) {
                    created.push(key.clone());
                }
            }
        }
        served += 1;
    }
    drop(l);
    for key in &created {
        ctx.notify(notify::STREAM, "xgroup-createconsumer", key);
    }
    if xreadgroup {
        records.finish(ctx);
    }
    if served > 0 {
        match proto {
            Protocol::Resp2 => ctx.out.array(served),
            Protocol::Resp3 => ctx.out.map(served),
        }
        ctx.out.raw(&body);
        return Ok(());
    }
    let Some(deadline) = a.block else {
        ctx.out.null_array();
        return Ok(());
    };
    let mut req = BlockRequest::new(keys.to_vec(), deadline, |out| out.null_array());
    // `$` means the last ID at the time of blocking: the waiter re-runs with it.
    if id_args.iter().any(|id| &id[..] == b"$") {
        let mut argv = argv.to_vec();
        for (i, f) in from.iter().enumerate() {
            if let (From::After(id), b"$") = (f, &id_args[i][..]) {
                argv[a.streams_at + a.n + i] = id_bytes(*id);
            }
        }
        req.argv = Some(argv);
    }
    // XREADGROUP must answer when its stream or group goes away.
    req.wake_on_change = xreadgroup;
    ctx.block(req);
    Ok(())
}

/// Where each stream is read from, checking each key's type and the group before its ID,
/// in Redis's order. A re-run of a blocked reader treats a key of another type as not
/// ready (XREAD) or gone (XREADGROUP).
fn resolve_ids(
    l: &mut Locked<'_>,
    keys: &[Bytes],
    id_args: &[Bytes],
    group: Option<(&[u8], &[u8])>,
    rerun: bool,
) -> Result<Vec<From>, CmdError> {
    let xreadgroup = group.is_some();
    let mut from = Vec::with_capacity(keys.len());
    for (key, arg) in keys.iter().zip(id_args) {
        let s = match l.stream_get(key) {
            Ok(s) => s,
            Err(_) if rerun && !xreadgroup => None,
            Err(_) if rerun => return Err(gone()),
            Err(e) => return Err(e.into()),
        };
        if let Some((group, _)) = group {
            if s.and_then(|s| s.group(group)).is_none() {
                return Err(match (rerun, s) {
                    (true, None) => gone(),
                    (true, Some(_)) => CmdError::Static(
                        "NOGROUP the consumer group this client was blocked on no longer exists",
                    ),
                    (false, _) => no_group(key, group, " in XREADGROUP with GROUP option"),
                });
            }
        }
        from.push(match &arg[..] {
            b"$" if xreadgroup => return Err(CmdError::Static("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")),
            b"$" => From::After(s.map_or(StreamId::MIN, |s| s.last_id())),
            b">" if !xreadgroup => return Err(CmdError::Static("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")),
            b">" => From::New,
            // Redis reads the largest ID as `>`.
            _ => match parse_id(arg, 0, true)? {
                StreamId::MAX if xreadgroup => From::New,
                id => From::After(id),
            },
        });
    }
    Ok(from)
}

/// Delivers one stream's entries to a group's consumer, replying them and gathering the
/// journal records; true if the consumer was created.
fn serve_group(
    out: &mut Reply<'_>,
    s: &mut StreamValue,
    key: &[u8],
    req: &ReadGroup<'_>,
    now: u64,
    records: &mut Records,
) -> bool {
    let mut delivered = Vec::new();
    let mut read = None;
    reply_counted(out, |out| {
        let mut n = 0;
        read = s.read_group(req, now, &mut |id, entry| {
            n += 1;
            match entry {
                Some(e) => {
                    reply_entry(out, &e);
                    delivered.push(id);
                }
                // A pending entry since deleted: its ID and a null.
                None => {
                    out.array(2);
                    reply_id(out, id);
                    out.null_array();
                }
            }
        });
        n
    });
    let read = read.unwrap_or_default();
    // New entries read with NOACK do not become pending. Redis writes no XCLAIM for a
    // history read's deliveries.
    let history = req.from != ReadFrom::New;
    let claims = (!req.noack || history) && !delivered.is_empty();
    // Replaying an XCLAIM creates its consumer.
    if read.consumer_created && (req.noack || !claims) {
        let to = written_by_redis_if(req.noack);
        records.consumer_created(to, key, req.group, req.consumer);
    }
    if claims {
        for id in delivered {
            if history {
                records.claimed(Audience::Journal, key, req.group, s, id);
            } else {
                records.delivered_new(key, req.group, s, id);
            }
        }
    }
    if read.last_id_moved {
        records.group_moved(written_by_redis_if(req.noack), key, req.group, s);
    }
    read.consumer_created
}

/// What XREADGROUP answers when the stream it blocked on was deleted or replaced.
fn gone() -> CmdError {
    CmdError::Static("UNBLOCKED the stream key no longer exists")
}

/// A served stream's name: in RESP2 `[key, entries]`, in RESP3 a map's key.
fn stream_header(out: &mut Reply<'_>, key: &[u8]) {
    if out.proto == Protocol::Resp2 {
        out.array(2);
    }
    out.bulk(key);
}
