//! Client-side caching: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (declared in
//! the CLIENT container, `commands/connection.rs`). The tracking itself lives in
//! `services::tracking`.

use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::tracking::{mode, Tracking};
use bytes::Bytes;

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]... [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
pub(super) fn client_tracking(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut options = 0;
    let mut redirect: Option<i64> = None;
    let mut prefixes: Vec<Bytes> = Vec::new();
    let mut j = 3;
    while j < ctx.argv.len() {
        let more = j + 1 < ctx.argv.len();
        match ctx.lower(j).as_slice() {
            b"redirect" if more => {
                j += 1;
                if redirect.is_some() {
                    return Err(CmdError::err(
                        "A client can only redirect to a single other client",
                    ));
                }
                let id = parse_i64(ctx.arg(j)).ok_or(CmdError::NOT_INTEGER)?;
                redirect = Some(id);
                // The client must exist now, though it may go away later.
                let exists = u64::try_from(id)
                    .ok()
                    .and_then(|id| ctx.server().clients.get(id))
                    .is_some();
                if !exists {
                    return Err(CmdError::err(
                        "The client ID you want redirect to does not exist",
                    ));
                }
            }
            b"bcast" => options |= mode::BCAST,
            b"optin" => options |= mode::OPTIN,
            b"optout" => options |= mode::OPTOUT,
            b"noloop" => options |= mode::NOLOOP,
            b"prefix" if more => {
                j += 1;
                prefixes.push(ctx.kept_arg(j));
            }
            _ => return Err(CmdError::SYNTAX),
        }
        j += 1;
    }
    let server = ctx.server();
    let info = ctx.client.info.clone();
    match ctx.lower(2).as_slice() {
        b"on" => {
            check_on(ctx, options, &prefixes)?;
            let target = redirect
                .and_then(|id| u64::try_from(id).ok())
                .and_then(|id| server.clients.get(id));
            server
                .tracking
                .enable(&info, target.as_ref(), options, &prefixes);
        }
        b"off" => {
            server.tracking.disable(&info);
            ctx.client.caching = false;
        }
        _ => return Err(CmdError::SYNTAX),
    }
    ctx.out.ok();
    Ok(())
}

/// The rules CLIENT TRACKING ON's options follow, alone and against the client's current
/// mode, in Redis's order.
fn check_on(ctx: &Ctx<'_>, options: u32, prefixes: &[Bytes]) -> CmdResult {
    let bcast = options & mode::BCAST != 0;
    if !bcast && !prefixes.is_empty() {
        return Err(CmdError::err(
            "PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let now = ctx.client.info.tracking.flags();
    if now & mode::ON != 0 && (now & mode::BCAST != 0) != bcast {
        return Err(CmdError::err("You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if bcast && options & (mode::OPTIN | mode::OPTOUT) != 0 {
        return Err(CmdError::err(
            "OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if options & mode::OPTIN != 0 && options & mode::OPTOUT != 0 {
        return Err(CmdError::err(
            "You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if (options & mode::OPTIN != 0 && now & mode::OPTOUT != 0)
        || (options & mode::OPTOUT != 0 && now & mode::OPTIN != 0)
    {
        return Err(CmdError::err("You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
    }
    if bcast {
        Tracking::check_prefixes(&ctx.client.info, prefixes).map_err(CmdError::err)?;
    }
    Ok(())
}

/// CLIENT CACHING YES|NO: whether the next command (or transaction) records its keys, in
/// OPTIN or OPTOUT mode.
pub(super) fn client_caching(ctx: &mut Ctx<'_>) -> CmdResult {
    let flags = ctx.client.info.tracking.flags();
    if flags & mode::ON == 0 {
        return Err(CmdError::err("CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    }
    match ctx.lower(2).as_slice() {
        b"yes" if flags & mode::OPTIN != 0 => ctx.client.caching = true,
        b"yes" => {
            return Err(CmdError::err(
                "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ))
        }
        b"no" if flags & mode::OPTOUT != 0 => ctx.client.caching = true,
        b"no" => {
            return Err(CmdError::err(
                "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ))
        }
        _ => return Err(CmdError::SYNTAX),
    }
    ctx.out.ok();
    Ok(())
}

pub(super) fn client_getredir(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.client.info.tracking.redirect());
    Ok(())
}

pub(super) fn client_trackinginfo(ctx: &mut Ctx<'_>) -> CmdResult {
    let t = &ctx.client.info.tracking;
    let flags = t.flags();
    let has = |f| flags & f != 0;
    let mut names: Vec<&str> = vec![if has(mode::ON) { "on" } else { "off" }];
    if has(mode::BCAST) {
        names.push("bcast");
    }
    if has(mode::OPTIN) {
        names.push("optin");
        if ctx.client.caching {
            names.push("caching-yes");
        }
    }
    if has(mode::OPTOUT) {
        names.push("optout");
        if ctx.client.caching {
            names.push("caching-no");
        }
    }
    if has(mode::NOLOOP) {
        names.push("noloop");
    }
    if has(mode::BROKEN_REDIRECT) {
        names.push("broken_redirect");
    }
    let redirect = t.redirect();
    let prefixes = t.prefixes();
    let out = &mut ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(names.len());
    for n in names {
        out.bulk(n.as_bytes());
    }
    out.bulk(b"redirect");
    out.int(redirect);
    out.bulk(b"prefixes");
    out.array(prefixes.len());
    for p in &prefixes {
        out.bulk(p);
    }
    Ok(())
}
