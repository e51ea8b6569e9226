//! DEL UNLINK EXISTS TYPE TOUCH: removing keys, and asking whether (and as what) they
//! exist.

use super::lock_notouch;
use crate::exec::command::CmdResult;
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;

/// DEL and UNLINK: the number of keys removed (a key named twice counts once). Under
/// `lazyfree-lazy-user-del yes` DEL frees as UNLINK does, as in Redis.
pub(super) fn del(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.config().get().lazyfree_lazy_user_del {
        return unlink(ctx);
    }
    let keys = &ctx.argv[1..];
    let mut l = ctx.lock(keys);
    if !ctx.notifying(notify::GENERIC) {
        let removed = keys.iter().filter(|k| l.remove(k)).count();
        drop(l);
        reply_removed(ctx, removed);
        return Ok(());
    }
    let gone: Vec<bool> = keys.iter().map(|k| l.remove(k)).collect();
    drop(l);
    let removed = notify_deleted(ctx, keys, gone.into_iter());
    reply_removed(ctx, removed);
    Ok(())
}

/// DEL's and UNLINK's reply; one that removed nothing changed nothing, so it is neither
/// journaled nor replicated (as Redis propagates only what changed the data).
fn reply_removed(ctx: &mut Ctx<'_>, removed: usize) {
    if removed == 0 {
        ctx.no_effect();
    }
    ctx.out.int(removed as i64);
}

/// UNLINK: DEL, with each value freed after the shards are unlocked, and on the lazyfree
/// thread when freeing it takes more than LAZYFREE_THRESHOLD allocations (as Redis).
pub(super) fn unlink(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.lock(keys);
    // (existed, its entry in RAM): a cold key is dropped from the tier unread.
    let gone: Vec<(bool, Option<strata_engine::Unlinked>)> =
        keys.iter().map(|k| l.delete(k)).collect();
    drop(l);
    let removed = notify_deleted(ctx, keys, gone.iter().map(|g| g.0));
    let large: Vec<_> = gone
        .into_iter()
        .filter_map(|g| g.1)
        .filter(|u| u.free_effort() > crate::services::lazyfree::LAZYFREE_THRESHOLD)
        .collect();
    if !large.is_empty() {
        let n = large.len() as u64;
        crate::services::lazyfree::free_later(large, n);
    }
    reply_removed(ctx, removed);
    Ok(())
}

/// Publishes `del` for each of `keys` that `gone` says was deleted (when anyone listens or
/// watches); returns how many were.
fn notify_deleted(ctx: &mut Ctx<'_>, keys: &[Bytes], gone: impl Iterator<Item = bool>) -> usize {
    let notifying = ctx.notifying(notify::GENERIC);
    let mut removed = 0;
    for (k, g) in keys.iter().zip(gone) {
        if g {
            removed += 1;
            if notifying {
                ctx.notify(notify::GENERIC, "del", k);
            }
        }
    }
    removed
}

/// EXISTS: the number of arguments naming a live key (repeats count each time).
pub(super) fn exists(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = lock_notouch(ctx, keys);
    let n = keys.iter().filter(|k| l.presence(k).is_some()).count();
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}

pub(super) fn type_(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = lock_notouch(ctx, &[key]);
    let name = l.kind(key).map_or("none", |k| k.name());
    drop(l);
    ctx.out.simple(name);
    Ok(())
}

/// TOUCH: reads each key as GET would, updating its access time. Like Redis 7.2, CLIENT
/// NO-TOUCH does not stop TOUCH itself.
pub(super) fn touch(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.db().lock_at(ctx.now_ms, keys);
    let n = keys.iter().filter(|k| l.get(k).is_some()).count();
    drop(l);
    ctx.out.int(n as i64);
    Ok(())
}
