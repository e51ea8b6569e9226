//! Command families, one file each. Each file declares its commands in a `COMMANDS` table
//! next to their handlers; `FAMILIES` lists every table.

use crate::command::{CmdError, CmdResult, Command, Ctx};

pub mod admin;
pub mod bitmap;
pub mod blocking;
pub mod config;
pub mod connection;
pub mod hash;
pub mod hyperloglog;
pub mod introspection;
pub mod keys;
pub mod list;
pub mod pubsub;
pub mod set;
pub mod sort;
pub mod strings;
pub mod zset;

pub const FAMILIES: &[&[Command]] = &[
    connection::COMMANDS,
    admin::COMMANDS,
    config::COMMANDS,
    introspection::COMMANDS,
    strings::COMMANDS,
    bitmap::COMMANDS,
    keys::COMMANDS,
    hash::COMMANDS,
    list::COMMANDS,
    set::COMMANDS,
    zset::COMMANDS,
    blocking::COMMANDS,
    hyperloglog::COMMANDS,
    sort::COMMANDS,
    pubsub::COMMANDS,
];

/// The handler of a container (CLIENT, CONFIG...). Dispatch resolves subcommands before
/// handlers run, so this only answers when a container is called in a way it can't resolve.
pub fn container(ctx: &mut Ctx<'_>) -> CmdResult {
    Err(CmdError::arity(
        &String::from_utf8_lossy(ctx.arg(0)).to_ascii_lowercase(),
    ))
}

/// A container's HELP: one line per subcommand, from the declarations themselves.
pub fn help(ctx: &mut Ctx<'_>, container: &str, subs: &[Command]) -> CmdResult {
    let mut lines = vec![format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    )];
    for s in subs {
        lines.push(s.name.to_ascii_uppercase());
        lines.push(format!("    {}", s.summary));
    }
    ctx.out.array(lines.len());
    for l in &lines {
        ctx.out.simple(l);
    }
    Ok(())
}
