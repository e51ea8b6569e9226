//! CLIENT PAUSE and CLIENT UNPAUSE (declared in the CLIENT container,
//! `commands/connection.rs`); the pause itself is `services::pause`.

use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use crate::services::pause::Kind;

/// CLIENT PAUSE timeout [WRITE|ALL]: the timeout in milliseconds.
pub(super) fn client_pause(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 4 {
        return Err(super::wrong_subcommand_args(ctx));
    }
    let kind = match ctx.argv.get(3).map(|a| a.to_ascii_lowercase()) {
        None => Kind::All,
        Some(m) if m == b"write" => Kind::Write,
        Some(m) if m == b"all" => Kind::All,
        Some(_) => return Err(CmdError::err("CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let ms = parse_i64(ctx.arg(2)).ok_or(CmdError::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    // Redis's timeout 0 is an end of 0: a pause already over.
    let end = if ms == 0 {
        0
    } else {
        ctx.now_ms.saturating_add(ms as u64)
    };
    let server = ctx.server();
    let until = server.pause.pause(kind, end, ctx.now_ms);
    server.keyspace.freeze_expiry_until(until);
    ctx.out.ok();
    Ok(())
}

pub(super) fn client_unpause(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = ctx.server();
    server.pause.unpause();
    server.keyspace.freeze_expiry_until(0);
    ctx.out.ok();
    Ok(())
}
