//! Reads of a list: LLEN LRANGE LINDEX LPOS.

use super::{clamp_range, non_negative, reply_range, resolve_index};
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::ListValue;

pub(super) fn llen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let n = l.list(key)?.map_or(0, ListValue::len);
    ctx.out.int(n as i64);
    Ok(())
}

pub(super) fn lrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    match clamp_range(start, end, list.len()) {
        Some((s, e)) => reply_range(&mut ctx.out, list, s, e + 1, false),
        None => ctx.out.array(0),
    }
    Ok(())
}

pub(super) fn lindex(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(list) = l.list(key)? else {
        ctx.out.null();
        return Ok(());
    };
    let index = ctx.int_arg(2)?;
    match resolve_index(index, list.len()).and_then(|i| list.get(i)) {
        Some(e) => {
            let mut buf = [0u8; 20];
            ctx.out.bulk(e.bytes(&mut buf));
        }
        None => ctx.out.null(),
    }
    Ok(())
}

pub(super) fn lpos(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let (mut rank, mut count, mut maxlen): (i64, i64, i64) = (1, -1, 0);
    let mut j = 3;
    while j < argv.len() {
        let opt = &argv[j];
        let more = j + 1 < argv.len();
        if opt.eq_ignore_ascii_case(b"rank") && more {
            j += 1;
            rank = parse_i64(&argv[j]).ok_or(CmdError::NOT_INTEGER)?;
            if rank == 0 {
                return Err(CmdError::Static(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if opt.eq_ignore_ascii_case(b"count") && more {
            j += 1;
            count = non_negative(&argv[j], "ERR COUNT can't be negative")?;
        } else if opt.eq_ignore_ascii_case(b"maxlen") && more {
            j += 1;
            maxlen = non_negative(&argv[j], "ERR MAXLEN can't be negative")?;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    // A negative rank searches from the tail. Redis 7.0 negates i64::MIN to itself, which
    // then matches from the first match on and never stops at COUNT: wrapping arithmetic
    // below reproduces that.
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let key = &argv[1];
    let mut l = ctx.lock1(key);
    let Some(list) = l.list(key)? else {
        if count != -1 {
            ctx.out.array(0);
        } else {
            ctx.out.null();
        }
        return Ok(());
    };
    let llen = i64::try_from(list.len()).unwrap_or(i64::MAX);
    let needle = ListValue::needle(&argv[2]);
    let it: Box<dyn Iterator<Item = _>> = if from_tail {
        Box::new(list.iter().rev())
    } else {
        Box::new(list.iter())
    };
    let (mut index, mut matches) = (0i64, 0i64);
    let mut found = Vec::new();
    for e in it {
        if maxlen != 0 && index >= maxlen {
            break;
        }
        if e == needle {
            matches += 1;
            let at = if from_tail { llen - index - 1 } else { index };
            if matches >= rank {
                found.push(at);
                if count == -1
                    || (count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count)
                {
                    break;
                }
            }
        }
        index += 1;
    }
    if count != -1 {
        ctx.out.array(found.len());
        for i in found {
            ctx.out.int(i);
        }
    } else {
        match found.first() {
            Some(&i) => ctx.out.int(i),
            None => ctx.out.null(),
        }
    }
    Ok(())
}
