//! SAVE BGSAVE BGREWRITEAOF LASTSAVE: snapshots on demand (see crate::services::snapshot).

use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;
use crate::services::snapshot;
use std::sync::atomic::Ordering;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

pub static COMMANDS: &[Command] = &[
    Command {
        name: "save",
        arity: 1,
        flags: ADMIN | NOSCRIPT | NO_MULTI | NO_ASYNC_LOADING,
        summary: "Synchronously saves the database(s) to disk.",
        since: "1.0.0",
        handler: save,
        ..FAMILY
    },
    Command {
        name: "bgsave",
        arity: -1,
        flags: ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        summary: "Asynchronously saves the database(s) to disk.",
        since: "1.0.0",
        args: "[SCHEDULE]",
        handler: bgsave,
        ..FAMILY
    },
    Command {
        name: "bgrewriteaof",
        arity: 1,
        flags: ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        summary: "Asynchronously rewrites the append-only file to disk.",
        since: "1.0.0",
        handler: bgrewriteaof,
        ..FAMILY
    },
    Command {
        name: "lastsave",
        arity: 1,
        flags: LOADING | STALE | FAST,
        summary: "Returns the Unix timestamp of the last successful save to disk.",
        since: "1.0.0",
        tips: &["nondeterministic_output"],
        acl: &["@admin", "@dangerous"],
        handler: lastsave,
        ..FAMILY
    },
];

fn run(ctx: &Ctx<'_>, background: bool, rewrite: bool) -> Result<(), CmdError> {
    let server = ctx
        .server()
        .arc()
        .ok_or(CmdError::Static("ERR server is shutting down"))?;
    snapshot::start(&server, background, rewrite).map_err(start_error)
}

/// A snapshot's refusal to start, or a foreground one's failure (SAVE, DEBUG RELOAD), as
/// an ERR: Redis answers a failed SAVE with a bare `-ERR`; the reason is more use.
pub(crate) fn start_error(e: String) -> CmdError {
    if e.starts_with("ERR ") {
        CmdError::Custom(e)
    } else {
        CmdError::err(e)
    }
}

fn save(ctx: &mut Ctx<'_>) -> CmdResult {
    run(ctx, false, false)?;
    ctx.out.ok();
    Ok(())
}

fn bgsave(ctx: &mut Ctx<'_>) -> CmdResult {
    let schedule = match ctx.argv.len() {
        1 => false,
        2 if ctx.arg(1).eq_ignore_ascii_case(b"schedule") => true,
        _ => return Err(CmdError::SYNTAX),
    };
    let snaps = &ctx.server().persist.snapshots;
    if snaps.in_progress() {
        if schedule {
            snaps.scheduled.store(true, Ordering::Relaxed);
            ctx.out.simple("Background saving scheduled");
            return Ok(());
        }
        return Err(CmdError::Static(snapshot::ALREADY));
    }
    run(ctx, true, false)?;
    ctx.out.simple("Background saving started");
    Ok(())
}

fn bgrewriteaof(ctx: &mut Ctx<'_>) -> CmdResult {
    let snaps = &ctx.server().persist.snapshots;
    if snaps.rewriting.load(Ordering::Relaxed) {
        return Err(CmdError::err(
            "Background append only file rewriting already in progress",
        ));
    }
    if snaps.in_progress() {
        snaps.scheduled_rewrite.store(true, Ordering::Relaxed);
        ctx.out
            .simple("Background append only file rewriting scheduled");
        return Ok(());
    }
    run(ctx, true, true)?;
    ctx.out
        .simple("Background append only file rewriting started");
    Ok(())
}

fn lastsave(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out
        .int(ctx.server().last_save.load(Ordering::Relaxed) as i64);
    Ok(())
}
