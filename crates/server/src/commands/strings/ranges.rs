//! Lengths and parts of a string: APPEND STRLEN GETRANGE (and SUBSTR) SETRANGE.

use super::{check_string_length, max_string_len};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::Ttl;

pub(super) fn append(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let val = ctx.arg(2);
    let max = max_string_len(ctx);
    let mut l = ctx.lock1(key);
    let len = match l.str_mut(key)? {
        Some(s) => {
            check_string_length(s.len() as u64, val.len() as u64, max)?;
            s.extend_from_slice(val);
            s.len()
        }
        None => {
            l.set_str(key, val, Ttl::Clear);
            val.len()
        }
    };
    drop(l);
    ctx.notify(notify::STRING, "append", key);
    ctx.out.int(len as i64);
    Ok(())
}

pub(super) fn strlen(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let len = ctx.lock1(key).get_str(key)?.map_or(0, |v| v.len());
    ctx.out.int(len as i64);
    Ok(())
}

pub(super) fn getrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let start = ctx.int_arg(2)?;
    let end = ctx.int_arg(3)?;
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let Some(s) = l.get_str(key)? else {
        ctx.out.bulk(b"");
        return Ok(());
    };
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return Ok(());
    }
    let len = s.len() as i128;
    let (mut start, mut end) = (start as i128, end as i128);
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        ctx.out.bulk(b"");
    } else {
        ctx.out.bulk(&s[start as usize..=end as usize]);
    }
    Ok(())
}

pub(super) fn setrange(ctx: &mut Ctx<'_>) -> CmdResult {
    let offset = ctx.int_arg(2)?;
    if offset < 0 {
        return Err(CmdError::err("offset is out of range"));
    }
    let offset = offset as u64;
    let key = ctx.arg(1);
    let val = ctx.arg(3);
    let max = max_string_len(ctx);
    let mut l = ctx.lock1(key);
    let exists = match l.peek(key) {
        None => false,
        Some(e) => {
            let s = e.as_str().ok_or(CmdError::WRONG_TYPE)?;
            if val.is_empty() {
                ctx.no_effect();
                ctx.out.int(s.len() as i64);
                return Ok(());
            }
            true
        }
    };
    if !exists && val.is_empty() {
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    }
    check_string_length(offset, val.len() as u64, max)?;
    // Both fit in usize: their sum is at most proto-max-bulk-len.
    let start = offset as usize;
    let end = start + val.len();
    let len = if exists {
        let Some(s) = l.str_mut(key)? else {
            return Err(CmdError::NO_SUCH_KEY);
        };
        if s.len() < end {
            s.resize(end, 0);
        }
        s[start..end].copy_from_slice(val);
        s.len()
    } else {
        let mut s = vec![0u8; end];
        s[start..end].copy_from_slice(val);
        l.set_value(key, strata_engine::Value::Str(s), Ttl::Clear);
        end
    };
    drop(l);
    ctx.notify(notify::STRING, "setrange", key);
    ctx.out.int(len as i64);
    Ok(())
}
