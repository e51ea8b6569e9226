//! LOLWUT [VERSION v]: Redis's command of computer art, one piece per Redis version. For
//! the version Strata follows (7.0) Redis shows no art, only its version line, and so does
//! Strata, for every VERSION.

use crate::commands::info::REDIS_VERSION;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;

pub const COMMANDS: &[Command] = &[Command {
    name: "lolwut",
    arity: -1,
    flags: READONLY | FAST,
    group: "server",
    summary: "Displays computer art and the Redis version",
    since: "5.0.0",
    handler: lolwut,
    ..Command::DEFAULT
}];

fn lolwut(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() >= 3 && ctx.arg(1).eq_ignore_ascii_case(b"version") {
        // Redis checks the version is a number even where it draws nothing for it.
        ctx.int_arg(2).map_err(|_| CmdError::NOT_INTEGER)?;
    }
    let text = format!("Redis ver. {REDIS_VERSION}\n");
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}
