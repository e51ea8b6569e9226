//! SAVE BGSAVE BGREWRITEAOF LASTSAVE: snapshots on demand (see crate::services::snapshot).

use crate::exec::command::{flags::*, CmdError, CmdResult, Command, Ctx};
use crate::services::snapshot;
use std::sync::atomic::Ordering;

/// Declares a command of this family (doc group "server").
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::exec::command::Handler,
) -> Command {
    Command::new(name, arity, flags, "server", summary, since, handler)
}

pub static COMMANDS: &[Command] = &[
    cmd(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_MULTI,
        "Synchronously saves the database(s) to disk.",
        "1.0.0",
        save,
    ),
    cmd(
        "bgsave",
        -1,
        ADMIN | NOSCRIPT,
        "Asynchronously saves the database(s) to disk.",
        "1.0.0",
        bgsave,
    ),
    cmd(
        "bgrewriteaof",
        1,
        ADMIN | NOSCRIPT,
        "Asynchronously rewrites the append-only file to disk.",
        "1.0.0",
        bgrewriteaof,
    ),
    cmd(
        "lastsave",
        1,
        LOADING | STALE | FAST,
        "Returns the Unix timestamp of the last successful save to disk.",
        "1.0.0",
        lastsave,
    ),
];

fn run(ctx: &Ctx<'_>, background: bool, rewrite: bool) -> Result<(), String> {
    let server = ctx.server.arc().ok_or("ERR server is shutting down")?;
    snapshot::start(&server, background, rewrite)
}

fn save(ctx: &mut Ctx<'_>) -> CmdResult {
    run(ctx, false, false).map_err(CmdError::Custom)?;
    ctx.out.ok();
    Ok(())
}

fn bgsave(ctx: &mut Ctx<'_>) -> CmdResult {
    let schedule = match ctx.argv.len() {
        1 => false,
        2 if ctx.arg(1).eq_ignore_ascii_case(b"schedule") => true,
        _ => return Err(CmdError::SYNTAX),
    };
    let snaps = &ctx.server.persist.snapshots;
    if snaps.in_progress() {
        if schedule {
            snaps.scheduled.store(true, Ordering::Relaxed);
            ctx.out.simple("Background saving scheduled");
            return Ok(());
        }
        return Err(CmdError::Static(snapshot::ALREADY));
    }
    run(ctx, true, false).map_err(CmdError::Custom)?;
    ctx.out.simple("Background saving started");
    Ok(())
}

fn bgrewriteaof(ctx: &mut Ctx<'_>) -> CmdResult {
    let snaps = &ctx.server.persist.snapshots;
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
    run(ctx, true, true).map_err(CmdError::Custom)?;
    ctx.out
        .simple("Background append only file rewriting started");
    Ok(())
}

fn lastsave(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out
        .int(ctx.server.last_save.load(Ordering::Relaxed) as i64);
    Ok(())
}
