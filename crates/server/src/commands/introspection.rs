//! COMMAND and its subcommands: what clients and redis-cli learn about the command table.
//! Everything here is read from the declarations in the other families.

use crate::exec::command::{
    flags, flags::*, ks, Begin, CmdError, CmdResult, Command, Find, KeySpec, Keys,
};
use crate::exec::ctx::Ctx;
use crate::exec::docs;
use crate::exec::keyspec::legacy_range;
use bytes::Bytes;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    flags: LOADING | STALE,
    group: "server",
    acl: &["@connection"],
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[Command {
    name: "command",
    arity: -1,
    summary: "Returns detailed information about all commands.",
    since: "2.8.13",
    tips: &["nondeterministic_output_order"],
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
        tips: &["nondeterministic_output_order"],
        args: "[command-name]...",
        handler: command_info,
        ..FAMILY
    },
    Command {
        name: "docs",
        arity: -2,
        summary: "Returns documentary information about one, multiple or all commands.",
        since: "7.0.0",
        tips: &["nondeterministic_output_order"],
        args: "[command-name]...",
        handler: command_docs,
        ..FAMILY
    },
    Command {
        name: "list",
        arity: -2,
        summary: "Returns a list of command names.",
        since: "7.0.0",
        tips: &["nondeterministic_output_order"],
        args:
            "[FILTERBY:filterby=(MODULE:module-name | ACLCAT:category | PATTERN:pattern#pattern)]",
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
        name: "getkeysandflags",
        arity: -4,
        summary: "Extracts the key names and access flags from an arbitrary command.",
        since: "7.0.0",
        handler: command_getkeysandflags,
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
            None => ctx.out.null(),
        }
    }
    Ok(())
}

fn write_info(ctx: &mut Ctx<'_>, cmd: &Command, fullname: &str) {
    let specs = cmd.key_specs();
    let (first, last, step) = match cmd.keys {
        Keys::Range { first, last, step } => (first, last, step),
        _ => legacy_range(&specs),
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
    // Tips are bulk strings, where flags and categories are status replies (as in Redis).
    out.set(cmd.tips.len());
    for t in cmd.tips {
        out.bulk(t.as_bytes());
    }
    out.array(specs.len());
    for spec in specs.iter() {
        write_key_spec(out, spec);
    }
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

/// A key spec's flags, as a set of their names.
fn write_key_flags(out: &mut strata_resp::Reply<'_>, bits: u16) {
    let names: Vec<&str> = ks::NAMES
        .iter()
        .filter(|(f, _)| bits & f != 0)
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(n);
    }
}

/// One key spec as COMMAND INFO gives it: flags, begin_search and find_keys maps.
fn write_key_spec(out: &mut strata_resp::Reply<'_>, spec: &KeySpec) {
    out.map(3);
    out.bulk(b"flags");
    write_key_flags(out, spec.flags);
    out.bulk(b"begin_search");
    out.map(2);
    out.bulk(b"type");
    match spec.begin {
        Begin::Index(i) => {
            out.bulk(b"index");
            out.bulk(b"spec");
            out.map(1);
            out.bulk(b"index");
            out.int(i64::from(i));
        }
        Begin::Keyword { keyword, startfrom } => {
            out.bulk(b"keyword");
            out.bulk(b"spec");
            out.map(2);
            out.bulk(b"keyword");
            out.bulk(keyword.as_bytes());
            out.bulk(b"startfrom");
            out.int(i64::from(startfrom));
        }
        Begin::Unknown => {
            out.bulk(b"unknown");
            out.bulk(b"spec");
            out.map(0);
        }
    }
    out.bulk(b"find_keys");
    out.map(2);
    out.bulk(b"type");
    let fields: Vec<(&str, i32)> = match spec.find {
        Find::Range {
            lastkey,
            step,
            limit,
        } => {
            out.bulk(b"range");
            vec![("lastkey", lastkey), ("keystep", step), ("limit", limit)]
        }
        Find::Keynum {
            keynumidx,
            firstkey,
            step,
        } => {
            out.bulk(b"keynum");
            vec![
                ("keynumidx", keynumidx),
                ("firstkey", firstkey),
                ("keystep", step),
            ]
        }
        Find::Unknown => {
            out.bulk(b"unknown");
            Vec::new()
        }
    };
    out.bulk(b"spec");
    out.map(fields.len());
    for (k, v) in fields {
        out.bulk(k.as_bytes());
        out.int(i64::from(v));
    }
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
    // Declarations are checked to parse (exec::docs's tests); one that did not would
    // list no arguments rather than fail the command.
    let args = docs::parse(cmd.args).unwrap_or_default();
    out.map(4 + !args.is_empty() as usize + has_subs as usize);
    for (k, v) in [
        ("summary", cmd.summary),
        ("since", cmd.since),
        ("group", cmd.group),
        ("complexity", cmd.complexity),
    ] {
        out.bulk(k.as_bytes());
        out.bulk(v.as_bytes());
    }
    if !args.is_empty() {
        out.bulk(b"arguments");
        write_args(out, &args);
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

/// Arguments as COMMAND DOCS gives them: a map each (name, type, the key spec of a key,
/// token, flags, and the arguments of a group).
fn write_args(out: &mut strata_resp::Reply<'_>, args: &[docs::Arg]) {
    out.array(args.len());
    for a in args {
        let flags: Vec<&str> = [
            (a.optional, "optional"),
            (a.multiple, "multiple"),
            (a.multiple_token, "multiple_token"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let inner = match &a.kind {
            docs::Kind::OneOf(v) | docs::Kind::Block(v) => Some(v),
            _ => None,
        };
        let key = match a.kind {
            docs::Kind::Key(i) | docs::Kind::Pattern(Some(i)) => Some(i),
            _ => None,
        };
        out.map(
            2 + key.is_some() as usize
                + a.token.is_some() as usize
                + !flags.is_empty() as usize
                + inner.is_some() as usize,
        );
        out.bulk(b"name");
        out.bulk(a.name.as_bytes());
        out.bulk(b"type");
        out.bulk(a.kind.name().as_bytes());
        if let Some(i) = key {
            out.bulk(b"key_spec_index");
            out.int(i64::from(i));
        }
        if let Some(t) = &a.token {
            out.bulk(b"token");
            out.bulk(t.as_bytes());
        }
        if !flags.is_empty() {
            out.bulk(b"flags");
            out.set(flags.len());
            for f in flags {
                out.simple(f);
            }
        }
        if let Some(v) = inner {
            out.bulk(b"arguments");
            write_args(out, v);
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
    getkeys(ctx, false)
}

fn command_getkeysandflags(ctx: &mut Ctx<'_>) -> CmdResult {
    getkeys(ctx, true)
}

/// GETKEYS and GETKEYSANDFLAGS: the keys of the command given, each with its flags when
/// asked; Redis's errors, in its order (an unknown command, one without keys, a wrong
/// argument count, arguments where no key is found).
fn getkeys(ctx: &mut Ctx<'_>, with_flags: bool) -> CmdResult {
    let argv = &ctx.argv[2..];
    let table = &ctx.commands();
    let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
    let found = table.lookup(&name).map(|id| {
        let sub = argv
            .get(1)
            .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase());
        match sub {
            Some(sub) if !table.commands[id].subcommands.is_empty() => {
                table.lookup(&format!("{name}|{sub}"))
            }
            _ => Some(id),
        }
    });
    let Some(Some(id)) = found else {
        return Err(CmdError::err("Invalid command specified"));
    };
    let cmd = table.commands[id];
    if !cmd.has_keys() {
        return Err(CmdError::err("The command has no key arguments"));
    }
    if table.resolve(argv).is_err() {
        return Err(CmdError::err(
            "Invalid number of arguments specified for command",
        ));
    }
    let keys = cmd.keys_and_flags(argv);
    if keys.is_empty() && !cmd.has(NO_MANDATORY_KEYS) {
        return Err(CmdError::err("Invalid arguments specified for command"));
    }
    ctx.out.array(keys.len());
    for k in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(&argv[k.pos]);
            write_key_flags(&mut ctx.out, k.flags);
        } else {
            ctx.out.bulk(&argv[k.pos]);
        }
    }
    Ok(())
}

fn command_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "COMMAND", SUBCOMMANDS)
}
