//! XADD, XTRIM, XDEL, XLEN, XSETID.

use super::{id_bytes, parse_id, parse_strict_ids, reply_id, stream_err};
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::stream::{AddId, StreamError, Trim, TrimStrategy};
use strata_engine::StreamValue;

/// A single entry's fields and values may not total more than a node can hold.
const ENTRY_MAX_BYTES: u64 = 1 << 30;

/// The options XADD and XTRIM share (Redis's streamParseAddOrTrimArgsOrReply).
struct TrimArgs {
    trim: Option<Trim>,
    /// Where the MAXLEN/MINID value is, and its `~` or `=` (journal records rewrite them).
    value_at: usize,
    op_at: Option<usize>,
    /// Where each LIMIT keyword is (a record of an exact trim drops them).
    limits: Vec<usize>,
    nomkstream: bool,
    /// XADD: the ID (None when the arguments ran out first) and where the parsing stopped.
    id: Option<AddId>,
    end: usize,
}

fn parse_trim_args(ctx: &Ctx<'_>, xadd: bool) -> Result<TrimArgs, CmdError> {
    const BOTH: CmdError = CmdError::Static(
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
    );
    let argv = ctx.argv;
    let mut strategy = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut a = TrimArgs {
        trim: None,
        value_at: 0,
        op_at: None,
        limits: Vec::new(),
        nomkstream: false,
        id: None,
        end: argv.len(),
    };
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = &argv[i][..];
        if xadd && opt == b"*" {
            a.id = Some(AddId::Auto);
            a.end = i;
            break;
        }
        let lower = opt.to_ascii_lowercase();
        match lower.as_slice() {
            s @ (b"maxlen" | b"minid") if more > 0 => {
                if strategy.is_some() {
                    return Err(BOTH);
                }
                approx = false;
                a.op_at = None;
                let next = &argv[i + 1][..];
                if more >= 2 && (next == b"~" || next == b"=") {
                    approx = next == b"~";
                    a.op_at = Some(i + 1);
                    i += 1;
                }
                let value = &argv[i + 1];
                strategy = Some(if s == b"maxlen" {
                    let n = parse_i64(value).ok_or(CmdError::NOT_INTEGER)?;
                    if n < 0 {
                        return Err(CmdError::Static("ERR The MAXLEN argument must be >= 0."));
                    }
                    TrimStrategy::MaxLen(n as u64)
                } else {
                    TrimStrategy::MinId(parse_id(value, 0, true)?)
                });
                i += 1;
                a.value_at = i;
            }
            b"limit" if more > 0 => {
                let n = parse_i64(&argv[i + 1]).ok_or(CmdError::NOT_INTEGER)?;
                if n < 0 {
                    return Err(CmdError::Static("ERR The LIMIT argument must be >= 0."));
                }
                limit = Some(n);
                a.limits.push(i);
                i += 1;
            }
            b"nomkstream" if xadd => a.nomkstream = true,
            _ if xadd => {
                a.id = Some(AddId::parse(opt).ok_or(stream_err(StreamError::InvalidId))?);
                a.end = i;
                break;
            }
            _ => return Err(CmdError::SYNTAX),
        }
        i += 1;
    }
    if limit.is_some_and(|n| n != 0) && strategy.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && strategy.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit.is_some() && !approx {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT cannot be used without the special ~ option",
        ));
    }
    a.trim = strategy.map(|strategy| Trim {
        strategy,
        approx,
        // An exact trim has no limit; a `~` one Redis's default unless given.
        limit: match (approx, limit) {
            (false, _) => 0,
            (true, Some(n)) => n as u64,
            (true, None) => Trim::default_limit(ctx.keyspace().encodings.stream_node_entries()),
        },
    });
    Ok(a)
}

impl TrimArgs {
    /// The journal's form of a command that trimmed approximately: `~` becomes `=`, the
    /// value what the trim came to (the length, or the first ID left, deleted entries
    /// included, as Redis records it), and LIMIT goes; `id` replaces a generated XADD ID.
    fn exact_record(&self, argv: &[Bytes], s: &StreamValue, id: Option<Bytes>) -> Vec<Bytes> {
        let value = match self.trim.map(|t| t.strategy) {
            Some(TrimStrategy::MaxLen(_)) => Bytes::from(s.len().to_string()),
            _ => id_bytes(s.edge_id(true, false)),
        };
        let approx = self.trim.is_some_and(|t| t.approx);
        argv.iter()
            .enumerate()
            .filter(|(i, _)| !self.limits.iter().any(|&l| *i == l || *i == l + 1))
            .map(|(i, a)| match i {
                _ if approx && Some(i) == self.op_at => Bytes::from_static(b"="),
                _ if approx && i == self.value_at => value.clone(),
                _ if id.is_some() && i == self.end => id.clone().unwrap_or_default(),
                _ => a.clone(),
            })
            .collect()
    }
}

pub(super) fn xadd(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let a = parse_trim_args(ctx, true)?;
    let fields = a.end + 1;
    let Some(id) =
        a.id.filter(|_| fields + 2 <= argv.len() && (argv.len() - fields).is_multiple_of(2))
    else {
        return Err(CmdError::arity("xadd"));
    };
    if id.is_zero() {
        return Err(stream_err(StreamError::IdZero));
    }
    // Checked before the key is created, so a refused entry never leaves an empty stream.
    let size: u64 = argv[fields..].iter().map(|f| f.len() as u64).sum();
    if size > ENTRY_MAX_BYTES {
        return Err(stream_err(StreamError::TooLarge));
    }
    let key = ctx.arg(1);
    let enc = &ctx.keyspace().encodings;
    let mut l = ctx.lock1(key);
    if a.nomkstream && l.stream_peek(key)?.is_none() {
        drop(l);
        ctx.no_effect();
        ctx.out.null();
        return Ok(());
    }
    let s = l.stream_mut_or_create(key)?;
    let added = s
        .add(id, &argv[fields..], ctx.now_ms, enc)
        .map_err(stream_err)?;
    let trimmed = a.trim.map_or(0, |t| s.trim(&t));
    let generated = !matches!(id, AddId::Exact(_));
    if (generated || a.trim.is_some_and(|t| t.approx)) && ctx.effects_wanted() {
        let id = generated.then(|| id_bytes(added));
        let record = a.exact_record(argv, s, id);
        ctx.rewrite1(record);
    }
    drop(l);
    reply_id(&mut ctx.out, added);
    ctx.notify(notify::STREAM, "xadd", key);
    if trimmed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    ctx.signal_key_ready(key);
    Ok(())
}

pub(super) fn xtrim(ctx: &mut Ctx<'_>) -> CmdResult {
    let a = parse_trim_args(ctx, false)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let (Some(s), Some(trim)) = (l.stream_mut(key)?, a.trim) else {
        drop(l);
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    let removed = s.trim(&trim);
    if removed == 0 {
        ctx.no_effect();
    } else if trim.approx && ctx.effects_wanted() {
        let record = a.exact_record(ctx.argv, s, None);
        ctx.rewrite1(record);
    }
    drop(l);
    if removed > 0 {
        ctx.notify(notify::STREAM, "xtrim", key);
    }
    ctx.out.int(removed as i64);
    Ok(())
}

pub(super) fn xdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(s) = l.stream_mut(key)? else {
        drop(l);
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    };
    // Every ID must parse before anything is deleted (but after the key's type is checked).
    let ids = parse_strict_ids(&ctx.argv[2..])?;
    let deleted = s.delete(&ids);
    drop(l);
    if deleted > 0 {
        ctx.notify(notify::STREAM, "xdel", key);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(deleted as i64);
    Ok(())
}

pub(super) fn xlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let len = ctx.lock1(key).stream_get(key)?.map_or(0, |s| s.len());
    ctx.out.int(len as i64);
    Ok(())
}

pub(super) fn xsetid(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let id = parse_id(&argv[2], 0, true)?;
    let mut entries_added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        match ctx.lower(i).as_slice() {
            b"entriesadded" if more > 0 => {
                let n = parse_i64(&argv[i + 1]).ok_or(CmdError::NOT_INTEGER)?;
                if n < 0 {
                    return Err(CmdError::Static("ERR entries_added must be positive"));
                }
                entries_added = Some(n as u64);
            }
            b"maxdeletedid" if more > 0 => {
                let m = parse_id(&argv[i + 1], 0, true)?;
                if id < m {
                    return Err(stream_err(StreamError::SetIdBelowMaxDeleted));
                }
                max_deleted = Some(m);
            }
            _ => return Err(CmdError::SYNTAX),
        }
        i += 2;
    }
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let s = l.stream_mut(key)?.ok_or(CmdError::NO_SUCH_KEY)?;
    s.set_id(id, entries_added, max_deleted)
        .map_err(stream_err)?;
    drop(l);
    ctx.notify(notify::STREAM, "xsetid", key);
    ctx.out.ok();
    Ok(())
}
