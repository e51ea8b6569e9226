//! SLOWLOG GET|LEN|RESET|HELP. The log itself lives in crate::services::slowlog.

use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;

pub const COMMANDS: &[Command] = &[Command {
    name: "slowlog",
    arity: -2,
    flags: 0,
    group: "server",
    summary: "A container for slow log commands",
    since: "2.2.12",
    handler: super::container,
    subcommands: SLOWLOG_SUBS,
    ..Command::DEFAULT
}];

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    flags: ADMIN | LOADING | STALE,
    group: "server",
    since: "2.2.12",
    ..Command::DEFAULT
};

const SLOWLOG_SUBS: &[Command] = &[
    Command {
        name: "get",
        arity: -2,
        summary: "Get the slow log's entries",
        tips: &["request_policy:all_nodes", "nondeterministic_output"],
        args: "[count#int]",
        handler: slowlog_get,
        ..FAMILY
    },
    Command {
        name: "len",
        arity: 2,
        summary: "Get the slow log's length",
        tips: &[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ],
        handler: slowlog_len,
        ..FAMILY
    },
    Command {
        name: "reset",
        arity: 2,
        summary: "Clear all entries from the slow log",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        handler: slowlog_reset,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Show helpful text about the different subcommands",
        handler: slowlog_help,
        ..FAMILY
    },
];

fn slowlog_get(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 3 {
        return Err(super::wrong_subcommand_args(ctx));
    }
    let count = match ctx.argv.get(2) {
        None => Some(10),
        Some(a) => match std::str::from_utf8(a)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
        {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                return Err(CmdError::Static(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
    };
    let entries = ctx.slowlog().newest(count);
    ctx.out.array(entries.len());
    for e in &entries {
        ctx.out.array(6);
        ctx.out.int(e.id as i64);
        ctx.out.int(e.time as i64);
        ctx.out.int(e.micros as i64);
        ctx.out.array(e.argv.len());
        for a in &e.argv {
            ctx.out.bulk(a);
        }
        ctx.out.bulk(e.addr.as_bytes());
        ctx.out.bulk(&e.name);
    }
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.slowlog().entries() as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.slowlog().reset();
    ctx.out.simple("OK");
    Ok(())
}

/// Redis's own SLOWLOG HELP text.
fn slowlog_help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    ];
    super::help_text(ctx, LINES)
}
