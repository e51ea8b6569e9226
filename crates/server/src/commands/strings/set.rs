//! The GET and SET family: GET SET SETNX SETEX PSETEX MGET MSET MSETNX GETSET GETDEL
//! GETEX, with the SET/GETEX option parsing and the expiry they share.

use super::opt_name;
use crate::exec::command::{ks, parse_i64, CmdError, CmdResult, KeyAt};
use crate::exec::ctx::Ctx;
use crate::services::notify;
use bytes::Bytes;
use strata_engine::{Locked, Ttl};

fn invalid_expire(cmd: &str) -> CmdError {
    CmdError::Static(match cmd {
        "set" => "ERR invalid expire time in 'set' command",
        "setex" => "ERR invalid expire time in 'setex' command",
        "psetex" => "ERR invalid expire time in 'psetex' command",
        _ => "ERR invalid expire time in 'getex' command",
    })
}

// SET/GETEX option flags, as Redis's OBJ_* flags.
const NX: u32 = 1;
const XX: u32 = 1 << 1;
const EX: u32 = 1 << 2;
const PX: u32 = 1 << 3;
const KEEPTTL: u32 = 1 << 4;
const GET: u32 = 1 << 5;
const EXAT: u32 = 1 << 6;
const PXAT: u32 = 1 << 7;
const PERSIST: u32 = 1 << 8;
const ANY_EXPIRE: u32 = EX | PX | EXAT | PXAT;

/// Parsed SET/GETEX options: flags and the index of the expire argument.
struct ExtOpts {
    flags: u32,
    expire: Option<usize>,
}

/// Redis's parseExtendedStringArgumentsOrReply for SET (`is_set`) or GETEX.
fn parse_ext(argv: &[bytes::Bytes], is_set: bool) -> Result<ExtOpts, CmdError> {
    let mut f = 0u32;
    let mut expire = None;
    let mut j = if is_set { 3 } else { 2 };
    while j < argv.len() {
        let opt = opt_name(&argv[j]);
        let has_next = j + 1 < argv.len();
        let eq = |name: &[u8]| opt.eq_ignore_ascii_case(name);
        let mut expire_flag = 0;
        if eq(b"nx") && f & XX == 0 && is_set {
            f |= NX;
        } else if eq(b"xx") && f & NX == 0 && is_set {
            f |= XX;
        } else if eq(b"get") && is_set {
            f |= GET;
        } else if eq(b"keepttl") && f & (PERSIST | ANY_EXPIRE) == 0 && is_set {
            f |= KEEPTTL;
        } else if eq(b"persist") && !is_set && f & (ANY_EXPIRE | KEEPTTL) == 0 {
            f |= PERSIST;
        } else if eq(b"ex") && f & (KEEPTTL | PERSIST | EXAT | PX | PXAT) == 0 && has_next {
            expire_flag = EX;
        } else if eq(b"px") && f & (KEEPTTL | PERSIST | EX | EXAT | PXAT) == 0 && has_next {
            expire_flag = PX;
        } else if eq(b"exat") && f & (KEEPTTL | PERSIST | EX | PX | PXAT) == 0 && has_next {
            expire_flag = EXAT;
        } else if eq(b"pxat") && f & (KEEPTTL | PERSIST | EX | EXAT | PX) == 0 && has_next {
            expire_flag = PXAT;
        } else {
            return Err(CmdError::SYNTAX);
        }
        if expire_flag != 0 {
            f |= expire_flag;
            j += 1;
            expire = Some(j);
        }
        j += 1;
    }
    Ok(ExtOpts { flags: f, expire })
}

/// Redis's getExpireMillisecondsOrReply: the absolute expiry in Unix ms. `flags` says
/// the unit (EX/EXAT seconds) and whether it is relative to `now` (EX/PX).
fn expire_ms(arg: &[u8], flags: u32, now: u64, cmd: &str) -> Result<u64, CmdError> {
    let mut ms = parse_i64(arg).ok_or(CmdError::NOT_INTEGER)?;
    let seconds = flags & (EX | EXAT) != 0;
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid_expire(cmd));
    }
    if seconds {
        ms *= 1000;
    }
    if flags & (EX | PX) != 0 {
        ms = ms.wrapping_add(now as i64);
    }
    if ms <= 0 {
        return Err(invalid_expire(cmd));
    }
    Ok(ms as u64)
}

/// SET's key: overwritten, or read and updated when GET returns the old value (Redis's
/// setGetKeys: an argument spelled GET, in any case, from the third on).
pub(super) fn set_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    let get = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
    let flags = if get {
        ks::RW | ks::ACCESS | ks::UPDATE
    } else {
        ks::OW | ks::UPDATE
    };
    f(KeyAt { pos: 1, flags })
}

pub(super) fn get(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    match l.get_str(key)? {
        Some(v) => ctx.out.bulk(v),
        None => ctx.out.null(),
    }
    Ok(())
}

pub(super) fn set(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let val = ctx.arg(2);
    if ctx.argv.len() == 3 {
        ctx.lock1(key).set_str(key, val, Ttl::Clear);
        ctx.notify(notify::STRING, "set", key);
        ctx.out.ok();
        return Ok(());
    }
    let opts = parse_ext(ctx.argv, true)?;
    let f = opts.flags;
    let mut l = ctx.lock1(key);
    let ttl = match opts.expire {
        Some(i) => Ttl::At(expire_ms(ctx.arg(i), f, l.now(), "set")?),
        None if f & KEEPTTL != 0 => Ttl::Keep,
        None => Ttl::Clear,
    };
    let found = if f & GET != 0 {
        match l.get_str(key)? {
            Some(v) => {
                ctx.out.bulk(v);
                true
            }
            None => {
                ctx.out.null();
                false
            }
        }
    } else {
        l.contains(key)
    };
    if (f & NX != 0 && found) || (f & XX != 0 && !found) {
        if f & GET == 0 {
            ctx.out.null();
        }
        ctx.no_effect();
        return Ok(());
    }
    l.set_str(key, val, ttl);
    drop(l);
    if let Ttl::At(at) = ttl {
        // The journal gets the absolute time, not "EX 10" counted from the replay.
        ctx.rewrite1(set_pxat(key, val, at));
    } else if f & GET != 0 && ctx.effects_wanted() {
        // Propagated without its GETs, as Redis does.
        let argv = ctx.argv;
        let kept = argv
            .iter()
            .enumerate()
            .filter(|(i, a)| *i < 3 || !a.eq_ignore_ascii_case(b"get"));
        ctx.rewrite1(kept.map(|(_, a)| a.clone()).collect());
    }
    ctx.notify(notify::STRING, "set", key);
    if opts.expire.is_some() {
        ctx.notify(notify::GENERIC, "expire", key);
    }
    if f & GET == 0 {
        ctx.out.ok();
    }
    Ok(())
}

pub(super) fn setnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    if l.contains(key) {
        ctx.no_effect();
        ctx.out.int(0);
    } else {
        l.set_str(key, ctx.arg(2), Ttl::Clear);
        drop(l);
        ctx.notify(notify::STRING, "set", key);
        ctx.out.int(1);
    }
    Ok(())
}

fn setex_generic(ctx: &mut Ctx<'_>, unit_flag: u32, cmd: &str) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    let at = expire_ms(ctx.arg(2), unit_flag, l.now(), cmd)?;
    l.set_str(key, ctx.arg(3), Ttl::At(at));
    drop(l);
    ctx.rewrite1(set_pxat(key, ctx.arg(3), at));
    ctx.notify(notify::STRING, "set", key);
    ctx.notify(notify::GENERIC, "expire", key);
    ctx.out.ok();
    Ok(())
}

/// The journal's form of a string write with an expiry: SET key value PXAT <unix ms>.
fn set_pxat(key: &[u8], val: &[u8], at: u64) -> Vec<Bytes> {
    vec![
        Bytes::from_static(b"SET"),
        Bytes::copy_from_slice(key),
        Bytes::copy_from_slice(val),
        Bytes::from_static(b"PXAT"),
        Bytes::from(at.to_string()),
    ]
}

pub(super) fn setex(ctx: &mut Ctx<'_>) -> CmdResult {
    setex_generic(ctx, EX, "setex")
}

pub(super) fn psetex(ctx: &mut Ctx<'_>) -> CmdResult {
    setex_generic(ctx, PX, "psetex")
}

pub(super) fn mget(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = &ctx.argv[1..];
    let mut l = ctx.lock(keys);
    ctx.out.array(keys.len());
    for k in keys {
        // Redis answers nil for a key of another type rather than failing.
        match l.get(k).and_then(|e| e.as_str()) {
            Some(v) => ctx.out.bulk(v),
            None => ctx.out.null(),
        }
    }
    Ok(())
}

/// The keys of MSET/MSETNX, after Redis's check that the arguments come in pairs.
fn mset_keys<'a>(ctx: &Ctx<'a>, name: &str) -> Result<Vec<&'a [u8]>, CmdError> {
    if ctx.argv.len().is_multiple_of(2) {
        return Err(CmdError::arity(name));
    }
    Ok(ctx.argv[1..].iter().step_by(2).map(|k| &k[..]).collect())
}

pub(super) fn mset(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = mset_keys(ctx, "mset")?;
    let mut l = ctx.lock(&keys);
    set_each(ctx, &mut l);
    drop(l);
    ctx.out.ok();
    Ok(())
}

pub(super) fn msetnx(ctx: &mut Ctx<'_>) -> CmdResult {
    let keys = mset_keys(ctx, "msetnx")?;
    let mut l = ctx.lock(&keys);
    if keys.iter().any(|k| l.contains(k)) {
        ctx.no_effect();
        ctx.out.int(0);
        return Ok(());
    }
    set_each(ctx, &mut l);
    drop(l);
    ctx.out.int(1);
    Ok(())
}

/// MSET/MSETNX: stores each pair and sends its `set` event, in argument order (a key's
/// `new` event, sent as it is created, comes right before its `set`, as in Redis).
fn set_each(ctx: &mut Ctx<'_>, l: &mut Locked<'_>) {
    let argv = ctx.argv;
    for pair in argv[1..].chunks_exact(2) {
        l.set_str(&pair[0], &pair[1], Ttl::Clear);
        ctx.notify(notify::STRING, "set", &pair[0]);
    }
}

/// Redis's getGenericCommand: replies with the value or nil; false when there is none.
fn reply_value(l: &mut Locked<'_>, key: &[u8], ctx: &mut Ctx<'_>) -> Result<bool, CmdError> {
    match l.get_str(key)? {
        Some(v) => {
            ctx.out.bulk(v);
            Ok(true)
        }
        None => {
            ctx.out.null();
            Ok(false)
        }
    }
}

pub(super) fn getset(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    reply_value(&mut l, key, ctx)?;
    l.set_str(key, ctx.arg(2), Ttl::Clear);
    drop(l);
    // Journaled and replicated as a SET, as Redis propagates it.
    if ctx.effects_wanted() {
        let argv = ctx.argv;
        ctx.rewrite1(vec![
            Bytes::from_static(b"SET"),
            argv[1].clone(),
            argv[2].clone(),
        ]);
    }
    ctx.notify(notify::STRING, "set", key);
    Ok(())
}

pub(super) fn getdel(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let mut l = ctx.lock1(key);
    if reply_value(&mut l, key, ctx)? {
        l.remove(key);
        drop(l);
        // Journaled and replicated as the DEL it amounts to, as Redis propagates it.
        ctx.rewrite1(vec![Bytes::from_static(b"DEL"), ctx.argv[1].clone()]);
        ctx.notify(notify::GENERIC, "del", key);
    } else {
        ctx.no_effect();
    }
    Ok(())
}

pub(super) fn getex(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(1);
    let opts = parse_ext(ctx.argv, false)?;
    let f = opts.flags;
    let mut l = ctx.lock1(key);
    let now = l.now();
    ctx.no_effect();
    let Some(v) = l.get_str(key)? else {
        ctx.out.null();
        return Ok(());
    };
    let at = match opts.expire {
        Some(i) => Some(expire_ms(ctx.arg(i), f, now, "getex")?),
        None => None,
    };
    ctx.out.bulk(v);
    match at {
        // An absolute time already past deletes the key, as Redis does.
        Some(at) if f & (EXAT | PXAT) != 0 && at <= now => {
            l.remove(key);
            drop(l);
            ctx.rewrite1(crate::exec::effects::cmd(&[b"DEL", key]));
            ctx.notify(notify::GENERIC, "del", key);
        }
        Some(at) => {
            l.set_expire(key, Some(at));
            drop(l);
            let at = at.to_string();
            ctx.rewrite1(crate::exec::effects::cmd(&[
                b"PEXPIREAT",
                key,
                at.as_bytes(),
            ]));
            ctx.notify(notify::GENERIC, "expire", key);
        }
        None if f & PERSIST != 0 => {
            let had = l.expire_at(key).flatten().is_some();
            l.set_expire(key, None);
            drop(l);
            ctx.rewrite1(crate::exec::effects::cmd(&[b"PERSIST", key]));
            if had {
                ctx.notify(notify::GENERIC, "persist", key);
            }
        }
        None => {}
    }
    Ok(())
}
