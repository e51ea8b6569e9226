//! COMMAND and its subcommands: what clients and redis-cli learn about the command table.
//! Everything here is read from the declarations in the other families.

use crate::exec::command::{flags, flags::*, CmdError, CmdResult, Command, Keys};
use crate::exec::ctx::Ctx;
use bytes::Bytes;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    flags: LOADING | STALE,
    group: "server",
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[Command {
    name: "command",
    arity: -1,
    summary: "Returns detailed information about all commands.",
    since: "2.8.13",
    handler: command_all,
    subcommands: SUBCOMMANDS,
    ..FAMILY
}];

const SUBCOMMANDS: &[Command] = &[
    Command {
        name: "count",
        arity: 2,
        summary: "Returns a count of commands.",
        since: "2.8.13",
        handler: command_count,
        ..FAMILY
    },
    Command {
        name: "info",
        arity: -2,
        summary: "Returns information about one, multiple or all commands.",
        since: "2.8.13",
        handler: command_info,
        ..FAMILY
    },
    Command {
        name: "docs",
        arity: -2,
        summary: "Returns documentary information about one, multiple or all commands.",
        since: "7.0.0",
        handler: command_docs,
        ..FAMILY
    },
    Command {
        name: "list",
        arity: -2,
        summary: "Returns a list of command names.",
        since: "7.0.0",
        handler: command_list,
        ..FAMILY
    },
    Command {
        name: "getkeys",
        arity: -4,
        summary: "Extracts the key names from an arbitrary command.",
        since: "2.8.13",
        handler: command_getkeys,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        summary: "Returns helpful text about the different subcommands.",
        since: "5.0.0",
        handler: command_help,
        ..FAMILY
    },
];

/// Bare COMMAND (no subcommand) lists every command's info. Dispatch sends a bare
/// container call here because COMMAND alone is valid, unlike CONFIG or CLIENT.
fn command_all(ctx: &mut Ctx<'_>) -> CmdResult {
    let ids: Vec<usize> = ctx.commands().top_level().collect();
    ctx.out.array(ids.len());
    for id in ids {
        write_info(
            ctx,
            ctx.commands().commands[id],
            &ctx.commands().fullnames[id].clone(),
        );
    }
    Ok(())
}

fn command_count(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.commands().top_level().count() as i64);
    Ok(())
}

fn lookup<'a>(ctx: &Ctx<'a>, name: &[u8]) -> Option<(&'a Command, String)> {
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    let table = &ctx.commands();
    table
        .lookup(&name)
        .map(|id| (table.commands[id], table.fullnames[id].clone()))
}

fn command_info(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() == 2 {
        return command_all(ctx);
    }
    let names = &ctx.argv[2..];
    ctx.out.array(names.len());
    for n in names {
        match lookup(ctx, n) {
            Some((cmd, full)) => write_info(ctx, cmd, &full),
            None => ctx.out.null_array(),
        }
    }
    Ok(())
}

fn write_info(ctx: &mut Ctx<'_>, cmd: &Command, fullname: &str) {
    let (first, last, step) = match cmd.keys {
        Keys::Range { first, last, step } => (first, last, step),
        _ => (0, 0, 0),
    };
    let out = &mut ctx.out;
    out.array(10);
    out.bulk(fullname.as_bytes());
    out.int(cmd.arity as i64);
    let names: Vec<&str> = flags::NAMES
        .iter()
        .filter(|(f, _)| cmd.has(*f))
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(n);
    }
    out.int(first as i64);
    out.int(last as i64);
    out.int(step as i64);
    let cats = cmd.acl_categories();
    out.set(cats.len());
    for c in cats {
        out.simple(c);
    }
    out.array(0); // tips
    write_key_specs(out, cmd);
    let subs = if cmd.has(OPAQUE) {
        &[][..]
    } else {
        cmd.subcommands
    };
    out.array(subs.len());
    for s in subs {
        write_info(ctx, s, &format!("{fullname}|{}", s.name));
    }
}

fn write_key_specs(out: &mut strata_resp::Reply<'_>, cmd: &Command) {
    let Keys::Range { first, last, step } = cmd.keys else {
        out.array(0);
        return;
    };
    let access: &[&str] = if cmd.has(WRITE) {
        &["RW", "update"]
    } else {
        &["RO", "access"]
    };
    out.array(1);
    out.map(3);
    out.bulk(b"flags");
    out.set(access.len());
    for a in access {
        out.simple(a);
    }
    out.bulk(b"begin_search");
    out.map(2);
    out.bulk(b"type");
    out.bulk(b"index");
    out.bulk(b"spec");
    out.map(1);
    out.bulk(b"index");
    out.int(first as i64);
    out.bulk(b"find_keys");
    out.map(2);
    out.bulk(b"type");
    out.bulk(b"range");
    out.bulk(b"spec");
    out.map(3);
    out.bulk(b"lastkey");
    out.int(if last < 0 {
        last as i64
    } else {
        (last - first) as i64
    });
    out.bulk(b"keystep");
    out.int(step as i64);
    out.bulk(b"limit");
    out.int(0);
}

fn command_docs(ctx: &mut Ctx<'_>) -> CmdResult {
    let table = &ctx.commands();
    let found: Vec<(&Command, String)> = if ctx.argv.len() == 2 {
        table
            .top_level()
            .map(|id| (table.commands[id], table.fullnames[id].clone()))
            .collect()
    } else {
        ctx.argv[2..]
            .iter()
            .filter_map(|n| lookup(ctx, n))
            .collect()
    };
    ctx.out.map(found.len());
    for (cmd, full) in found {
        ctx.out.bulk(full.as_bytes());
        write_doc(&mut ctx.out, cmd, &full);
    }
    Ok(())
}

fn write_doc(out: &mut strata_resp::Reply<'_>, cmd: &Command, fullname: &str) {
    let has_subs = !cmd.subcommands.is_empty() && !cmd.has(OPAQUE);
    out.map(4 + has_subs as usize);
    for (k, v) in [
        ("summary", cmd.summary),
        ("since", cmd.since),
        ("group", cmd.group),
        ("complexity", cmd.complexity),
    ] {
        out.bulk(k.as_bytes());
        out.bulk(v.as_bytes());
    }
    if has_subs {
        out.bulk(b"subcommands");
        out.map(cmd.subcommands.len());
        for s in cmd.subcommands {
            let full = format!("{fullname}|{}", s.name);
            out.bulk(full.as_bytes());
            write_doc(out, s, &full);
        }
    }
}

fn command_list(ctx: &mut Ctx<'_>) -> CmdResult {
    let table = &ctx.commands();
    let filter: Option<(Vec<u8>, Bytes)> = match ctx.argv.len() {
        2 => None,
        5 if ctx.lower(2) == b"filterby" => Some((ctx.lower(3), ctx.argv[4].clone())),
        _ => return Err(CmdError::SYNTAX),
    };
    let names: Vec<&String> = (0..table.commands.len())
        .filter(|&id| table.is_listed(id))
        .filter(|&id| match &filter {
            None => true,
            Some((kind, v)) => match kind.as_slice() {
                b"pattern" => strata_engine::glob::matches(v, table.fullnames[id].as_bytes(), true),
                b"aclcat" => {
                    let want = format!("@{}", String::from_utf8_lossy(v).to_ascii_lowercase());
                    table.commands[id].acl_categories().contains(&want.as_str())
                }
                _ => false, // MODULE: no modules.
            },
        })
        .map(|id| &table.fullnames[id])
        .collect();
    if let Some((kind, _)) = &filter {
        if !matches!(kind.as_slice(), b"pattern" | b"aclcat" | b"module") {
            return Err(CmdError::SYNTAX);
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = &ctx.argv[2..];
    let table = &ctx.commands();
    let id = match table.resolve(argv) {
        Ok(id) => id,
        Err(e) if e.text().starts_with("ERR wrong number") => {
            return Err(CmdError::err(
                "Invalid number of arguments specified for command",
            ))
        }
        Err(_) => return Err(CmdError::err("Invalid command specified")),
    };
    let positions = table.commands[id].key_positions(argv);
    if positions.is_empty() {
        return Err(CmdError::err("The command has no key arguments"));
    }
    ctx.out.array(positions.len());
    for p in positions {
        ctx.out.bulk(&argv[p]);
    }
    Ok(())
}

fn command_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "COMMAND", SUBCOMMANDS)
}
