//! SPOP and SRANDMEMBER: members picked at random, the way Redis picks them.

use super::union_of;
use crate::commands::random::{random_count_arg, sample_distinct, Picks, Rng};
use crate::exec::command::{CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use strata_engine::SetValue;

/// Redis's SPOP_MOVE_STRATEGY_MUL.
const SPOP_MOVE_STRATEGY_MUL: usize = 5;

/// SPOP key [count]
pub(super) fn spop(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argv.len() {
        3 => return spop_count(ctx),
        n if n > 3 => return Err(CmdError::SYNTAX),
        _ => {}
    }
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    let Some(s) = l.set_mut(key)? else {
        // Nothing popped: nothing to journal or replicate (as Redis).
        drop(l);
        ctx.no_effect();
        ctx.out.null();
        return Ok(());
    };
    let popped = s.remove_nth(rng.below(s.len()));
    let removed = s.is_empty() && l.remove(key);
    drop(l);
    // The journal gets which member went, not "pop one at random".
    match &popped {
        Some(m) => ctx.rewrite1(crate::exec::effects::cmd(&[b"SREM", key, m])),
        None => ctx.no_effect(),
    }
    ctx.notify(notify::SET, "spop", key);
    if removed {
        ctx.notify(notify::GENERIC, "del", key);
    }
    match popped {
        Some(m) => ctx.out.bulk(&m),
        None => ctx.out.null(),
    }
    Ok(())
}

fn spop_count(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis's getPositiveLongFromObjectOrReply: one message for any failure.
    let Some(count) =
        crate::exec::command::parse_i64(ctx.arg(2)).and_then(|n| usize::try_from(n).ok())
    else {
        return Err(CmdError::err("value is out of range, must be positive"));
    };
    let key = ctx.arg(1);
    let enc = &ctx.keyspace().encodings;
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    let Some(s) = l.set_mut(key)? else {
        drop(l);
        ctx.no_effect();
        ctx.out.set(0);
        return Ok(());
    };
    if count == 0 {
        drop(l);
        ctx.no_effect();
        ctx.out.set(0);
        return Ok(());
    }
    let size = s.len();
    // CASE 1: everything. Redis answers through SUNION of the one set (whose result
    // decides the order) and deletes the key.
    if count >= size {
        let all = union_of(std::iter::once(&*s), enc);
        l.remove(key);
        drop(l);
        ctx.rewrite1(crate::exec::effects::cmd(&[b"DEL", key]));
        ctx.notify(notify::SET, "spop", key);
        ctx.notify(notify::GENERIC, "del", key);
        ctx.out.set(all.len());
        for e in all.iter() {
            bulk_elem!(ctx, e);
        }
        return Ok(());
    }
    ctx.out.set(count);
    let remaining = size - count;
    // The journal gets the members that went: SREM key m1 m2 ...
    let mut srem = crate::exec::effects::cmd(&[b"SREM", key]);
    if remaining * SPOP_MOVE_STRATEGY_MUL > count {
        // CASE 2: pop `count` random members one by one.
        for _ in 0..count {
            if let Some(m) = s.remove_nth(rng.below(s.len())) {
                ctx.out.bulk(&m);
                srem.push(m.into());
            }
        }
    } else {
        // CASE 3: move the `remaining` members that stay into a new set (which decides
        // the encoding the key ends with), and reply with what is left in the old one.
        let mut kept: Option<SetValue> = None;
        for _ in 0..remaining {
            if let Some(m) = s.remove_nth(rng.below(s.len())) {
                kept.get_or_insert_with(|| SetValue::new_for(&m))
                    .add(&m, enc);
            }
        }
        for e in s.iter() {
            bulk_elem!(ctx, e);
            srem.push(e.to_vec().into());
        }
        if let Some(kept) = kept {
            // In place: the key keeps its expiry, as Redis's dbOverwrite.
            *s = kept;
        }
    }
    drop(l);
    ctx.rewrite1(srem);
    // Redis emits it before popping (the reply above is written already; the event
    // reaches the client itself, if subscribed, ahead of it anyway).
    ctx.notify(notify::SET, "spop", key);
    Ok(())
}

/// SRANDMEMBER key [count]
pub(super) fn srandmember(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argv.len() {
        3 => return srandmember_count(ctx),
        n if n > 3 => return Err(CmdError::SYNTAX),
        _ => {}
    }
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    match l.get_set(key)?.and_then(|s| s.nth(rng.below(s.len()))) {
        Some(e) => bulk_elem!(ctx, e),
        None => ctx.out.null(),
    }
    Ok(())
}

fn srandmember_count(ctx: &mut Ctx<'_>) -> CmdResult {
    let n = random_count_arg(ctx, 2)?;
    let key = ctx.arg(1);
    let mut rng = Rng::new(ctx);
    let mut l = ctx.lock1(key);
    let Some(s) = l.get_set(key)? else {
        ctx.out.array(0);
        return Ok(());
    };
    let (uniq, count) = (n >= 0, n.unsigned_abs());
    if count == 0 {
        ctx.out.array(0);
        return Ok(());
    }
    let size = s.len();
    // CASE 1: repeats allowed (or one pick): independent uniform picks.
    if !uniq || count == 1 {
        ctx.out.array(usize::try_from(count).unwrap_or(usize::MAX));
        let picks = Picks::new(ctx);
        for _ in 0..count {
            if let Some(e) = s.nth(rng.below(size)) {
                bulk_elem!(ctx, e);
            }
            if picks.stop(ctx) {
                break;
            }
        }
        return Ok(());
    }
    // CASE 2: the whole set, in storage order.
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count >= size {
        ctx.out.array(size);
        for e in s.iter() {
            bulk_elem!(ctx, e);
        }
        return Ok(());
    }
    // CASES 3 and 4: distinct members.
    ctx.out.array(count);
    for i in sample_distinct(&mut rng, size, count) {
        if let Some(e) = s.nth(i) {
            bulk_elem!(ctx, e);
        }
    }
    Ok(())
}
