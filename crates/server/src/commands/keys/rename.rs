//! RENAME RENAMENX COPY MOVE: a value to another name or another database.

use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::Locked;

/// Redis's shared.sameobjecterr.
const SAME_OBJECT: CmdError = CmdError::Static("ERR source and destination objects are the same");

pub(super) fn rename(ctx: &mut Ctx<'_>) -> CmdResult {
    rename_generic(ctx, false)
}

pub(super) fn renamenx(ctx: &mut Ctx<'_>) -> CmdResult {
    rename_generic(ctx, true)
}

fn rename_generic(ctx: &mut Ctx<'_>, nx: bool) -> CmdResult {
    let (src, dst) = (ctx.arg(1), ctx.arg(2));
    let mut l = ctx.lock(&[src, dst]);
    if !l.contains(src) {
        return Err(CmdError::NO_SUCH_KEY);
    }
    // Same name: nothing to do, but a missing key was still an error above.
    let done = if src == dst {
        !nx
    } else if nx && l.contains(dst) {
        false
    } else {
        let Some(owned) = l.take(src) else {
            return Err(CmdError::NO_SUCH_KEY);
        };
        // The value keeps its expiry and encoding. Whatever `dst` held goes first, so the
        // name is created anew (a `new` event, as Redis's delete-then-add gives).
        l.remove(dst);
        l.put_owned(dst, owned);
        true
    };
    drop(l);
    if done && src != dst {
        ctx.signal_key_ready(dst);
        ctx.notify(notify::GENERIC, "rename_from", src);
        ctx.notify(notify::GENERIC, "rename_to", dst);
    } else {
        ctx.no_effect();
    }
    if nx {
        ctx.out.int(done as i64);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

/// A database index argument as Redis's getIntFromObjectOrReply + selectDb check it.
fn db_index_arg(ctx: &Ctx<'_>, i: usize) -> Result<usize, CmdError> {
    let n = ctx.int_arg(i)?;
    if n < i32::MIN as i64 || n > i32::MAX as i64 {
        return Err(CmdError::err(format_args!(
            "value is out of range, value must between {} and {}",
            i32::MIN,
            i32::MAX
        )));
    }
    match usize::try_from(n) {
        Ok(db) if db < ctx.keyspace().db_count() => Ok(db),
        _ => Err(CmdError::DB_RANGE),
    }
}

/// COPY source destination [DB destination-db] [REPLACE]
pub(super) fn copy(ctx: &mut Ctx<'_>) -> CmdResult {
    let src_db = ctx.client.db;
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < ctx.argv.len() {
        let more = ctx.argv.len() - j - 1;
        let opt = ctx.lower(j);
        if opt == b"replace" {
            replace = true;
        } else if opt == b"db" && more >= 1 {
            dst_db = db_index_arg(ctx, j + 1)?;
            j += 1;
        } else {
            return Err(CmdError::SYNTAX);
        }
        j += 1;
    }
    let (key, newkey) = (ctx.arg(1), ctx.arg(2));
    if src_db == dst_db && key == newkey {
        return Err(SAME_OBJECT);
    }
    let no_touch = ctx.client.no_touch;
    let copied = if src_db == dst_db {
        let mut l = ctx.lock(&[key, newkey]);
        copy_between(&mut l, key, None, newkey, replace)
    } else {
        let (ls, ld) = ctx.keyspace().lock_pair(src_db, key, dst_db, newkey);
        let (mut ls, mut ld) = (ls.no_touch(no_touch), ld.no_touch(no_touch));
        copy_between(&mut ls, key, Some(&mut ld), newkey, replace)
    };
    if copied {
        ctx.signal_key_ready_db(newkey, dst_db);
        ctx.notify_db(notify::GENERIC, "copy_to", newkey, dst_db);
    } else {
        ctx.no_effect();
    }
    ctx.out.int(copied as i64);
    Ok(())
}

/// Copies `key` from `src` to `newkey` in `dst` (or in `src` itself when `dst` is None).
fn copy_between<'a>(
    src: &mut Locked<'a>,
    key: &[u8],
    dst: Option<&mut Locked<'a>>,
    newkey: &[u8],
    replace: bool,
) -> bool {
    // lookupKeyRead: the source read counts as an access.
    if src.get(key).is_none() {
        return false;
    }
    let Some(owned) = src.clone_owned(key) else {
        return false;
    };
    let dst = match dst {
        Some(d) => d,
        None => src,
    };
    if dst.contains(newkey) && !replace {
        return false;
    }
    // As RENAME: what REPLACE replaces goes first, and the name is created anew.
    dst.remove(newkey);
    dst.put_owned(newkey, owned);
    true
}

/// MOVE key db
pub(super) fn move_(ctx: &mut Ctx<'_>) -> CmdResult {
    let src_db = ctx.client.db;
    let dst_db = db_index_arg(ctx, 2)?;
    if src_db == dst_db {
        return Err(SAME_OBJECT);
    }
    let key = ctx.arg(1);
    let (mut ls, mut ld) = ctx.keyspace().lock_pair(src_db, key, dst_db, key);
    let moved = if !ls.contains(key) || ld.contains(key) {
        false
    } else if let Some(owned) = ls.take(key) {
        ld.put_owned(key, owned);
        true
    } else {
        false
    };
    drop((ls, ld));
    if moved {
        ctx.signal_key_ready_db(key, dst_db);
        ctx.notify_db(notify::GENERIC, "move_from", key, src_db);
        ctx.notify_db(notify::GENERIC, "move_to", key, dst_db);
    }
    ctx.out.int(moved as i64);
    Ok(())
}
