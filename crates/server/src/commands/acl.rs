//! ACL: users and their rules (SETUSER GETUSER DELUSER LIST USERS WHOAMI), categories
//! (CAT), DRYRUN, GENPASS, the log (LOG) and the ACL file (LOAD SAVE). The rules
//! themselves live in `services::acl`.

use crate::exec::command::{
    acl_category_bit, flags::*, CmdError, CmdResult, Command, ACL_CATEGORIES,
};
use crate::exec::ctx::Ctx;
use crate::services::acl::{self, file, selector::has_spaces, user::hex};
use bytes::Bytes;

const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

/// The flags of the subcommands that manage users.
const MANAGE: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

pub const COMMANDS: &[Command] = &[Command {
    name: "acl",
    arity: -2,
    summary: "A container for Access List Control commands",
    since: "6.0.0",
    complexity: "Depends on subcommand.",
    handler: super::container,
    subcommands: ACL,
    ..FAMILY
}];

const ACL: &[Command] = &[
    Command {
        name: "cat",
        arity: -2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "List the ACL categories or the commands inside a category",
        complexity: "O(1) since the categories and commands are a fixed set.",
        args: "[categoryname]",
        handler: acl_cat,
        ..SUB
    },
    Command {
        name: "deluser",
        arity: -3,
        summary: "Remove the specified ACL users and the associated rules",
        complexity: "O(1) amortized time considering the typical user.",
        args: "username...",
        handler: acl_deluser,
        ..SUB
    },
    Command {
        name: "dryrun",
        arity: -4,
        summary:
            "Returns whether the user can execute the given command without executing the command.",
        since: "7.0.0",
        args: "username command [arg]...",
        handler: acl_dryrun,
        ..SUB
    },
    Command {
        name: "genpass",
        arity: -2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Generate a pseudorandom secure password to use for ACL users",
        args: "[bits#int]",
        handler: acl_genpass,
        ..SUB
    },
    Command {
        name: "getuser",
        arity: 3,
        summary: "Get the rules for a specific ACL user",
        complexity:
            "O(N). Where N is the number of password, command and pattern rules that the user has.",
        args: "username",
        handler: acl_getuser,
        ..SUB
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Show helpful text about the different subcommands",
        handler: acl_help,
        ..SUB
    },
    Command {
        name: "list",
        arity: 2,
        summary: "List the current ACL rules in ACL config file format",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_list,
        ..SUB
    },
    Command {
        name: "load",
        arity: 2,
        summary: "Reload the ACLs from the configured ACL file",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_load,
        ..SUB
    },
    Command {
        name: "log",
        arity: -2,
        summary: "List latest events denied because of ACLs in place",
        complexity: "O(N) with N being the number of entries shown.",
        args: "[operation=(count#int | RESET)]",
        handler: acl_log,
        ..SUB
    },
    Command {
        name: "save",
        arity: 2,
        summary: "Save the current ACL rules in the configured ACL file",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_save,
        ..SUB
    },
    Command {
        name: "setuser",
        arity: -3,
        summary: "Modify or create the rules for a specific ACL user",
        complexity: "O(N). Where N is the number of rules provided.",
        args: "username [rule]...",
        handler: acl_setuser,
        ..SUB
    },
    Command {
        name: "users",
        arity: 2,
        summary: "List the username of all the configured ACL rules",
        complexity: "O(N). Where N is the number of configured users.",
        handler: acl_users,
        ..SUB
    },
    Command {
        name: "whoami",
        arity: 2,
        flags: NOSCRIPT | LOADING | STALE,
        summary: "Return the name of the user associated to the current connection",
        handler: acl_whoami,
        ..SUB
    },
];

/// Defaults of the subcommands: those that manage users.
const SUB: Command = Command {
    flags: MANAGE,
    since: "6.0.0",
    ..FAMILY
};

fn acl_cat(ctx: &mut Ctx<'_>) -> CmdResult {
    match ctx.argv.len() {
        2 => {
            ctx.out.array(ACL_CATEGORIES.len());
            for n in ACL_CATEGORIES {
                ctx.out.bulk(&n.as_bytes()[1..]);
            }
        }
        3 => {
            let Some(c) = acl_category_bit(ctx.arg(2)) else {
                let name = ctx.arg(2);
                return Err(CmdError::err(format!(
                    "Unknown category '{}'",
                    String::from_utf8_lossy(&name[..name.len().min(128)])
                )));
            };
            let table = ctx.commands();
            let names: Vec<&String> = (0..table.commands.len())
                .filter(|&id| table.is_listed(id) && table.categories(id) & c != 0)
                .map(|id| &table.fullnames[id])
                .collect();
            ctx.out.array(names.len());
            for n in names {
                ctx.out.bulk(n.as_bytes());
            }
        }
        _ => return Err(super::wrong_subcommand_args(ctx)),
    }
    Ok(())
}

fn acl_setuser(ctx: &mut Ctx<'_>) -> CmdResult {
    // A user's rules may hold passwords: the slow log and MONITOR hide the name and every
    // rule, as Redis does.
    for i in 2..ctx.argv.len() {
        ctx.redact(i);
    }
    let name = ctx.arg(2);
    if has_spaces(name) {
        return Err(CmdError::err(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let server = ctx.server();
    let env = acl::env(server);
    let changed = server
        .acl
        .set_user(&env, name, &ctx.argv[3..])
        .map_err(|e| CmdError::err(e.replace(['\r', '\n'], " ")))?;
    if let Some(c) = changed {
        acl::kill_revoked_subscribers(server, &c);
    }
    ctx.out.ok();
    Ok(())
}

fn acl_deluser(ctx: &mut Ctx<'_>) -> CmdResult {
    let names = &ctx.argv[2..];
    if names.iter().any(|n| n.as_ref() == b"default") {
        return Err(CmdError::err("The 'default' user cannot be removed"));
    }
    let server = ctx.server();
    let gone = server.acl.delete(names);
    if acl::kill_clients_of(server, &gone, ctx.client.id) {
        ctx.client.close_after_reply = true;
    }
    ctx.out.int(gone.len() as i64);
    Ok(())
}

fn acl_getuser(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(user) = ctx.server().acl.user(ctx.arg(2)) else {
        ctx.out.null();
        return Ok(());
    };
    let rules = user.rules();
    let table = ctx.commands();
    let out = &mut ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = rules.flag_names();
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(rules.passwords.len());
    for p in &rules.passwords {
        out.bulk(hex(p).as_bytes());
    }
    let describe = |out: &mut strata_resp::Reply<'_>, s: &acl::selector::Selector| {
        out.bulk(b"commands");
        out.bulk(acl::describe::command_rules(s, table).as_bytes());
        out.bulk(b"keys");
        out.bulk(s.describe_keys().as_bytes());
        out.bulk(b"channels");
        out.bulk(s.describe_channels().as_bytes());
    };
    describe(out, rules.root());
    out.bulk(b"selectors");
    out.array(rules.selectors.len() - 1);
    for s in &rules.selectors[1..] {
        out.map(3);
        describe(out, s);
    }
    Ok(())
}

fn acl_list(ctx: &mut Ctx<'_>) -> CmdResult {
    let users = ctx.server().acl.all();
    let table = ctx.commands();
    ctx.out.array(users.len());
    for u in users {
        let line = format!("user {} {}", u.name_lossy(), u.rules().describe(table));
        ctx.out.bulk(line.as_bytes());
    }
    Ok(())
}

fn acl_users(ctx: &mut Ctx<'_>) -> CmdResult {
    let users = ctx.server().acl.all();
    ctx.out.array(users.len());
    for u in users {
        ctx.out.bulk(&u.name);
    }
    Ok(())
}

fn acl_whoami(ctx: &mut Ctx<'_>) -> CmdResult {
    match &ctx.client.user {
        Some(u) => ctx.out.bulk(&u.name),
        None => ctx.out.null(),
    }
    Ok(())
}

fn acl_load(ctx: &mut Ctx<'_>) -> CmdResult {
    let me = ctx.client.id;
    let close_me = file::load(ctx.server(), me).map_err(CmdError::err)?;
    if close_me {
        ctx.client.close_after_reply = true;
    }
    ctx.out.ok();
    Ok(())
}

fn acl_save(ctx: &mut Ctx<'_>) -> CmdResult {
    file::save(ctx.server()).map_err(CmdError::err)?;
    ctx.out.ok();
    Ok(())
}

/// Longest password GENPASS makes, in bits.
const GENPASS_MAX_BITS: i64 = 4096;

fn acl_genpass(ctx: &mut Ctx<'_>) -> CmdResult {
    let bits = match ctx.argv.len() {
        2 => 256,
        3 => ctx.int_arg(2)?,
        _ => return Err(super::wrong_subcommand_args(ctx)),
    };
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(CmdError::err(format!("ACL GENPASS argument must be the number of bits for the output password, a positive number up to {GENPASS_MAX_BITS}")));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    getrandom::fill(&mut bytes)
        .map_err(|e| CmdError::err(format!("cannot read random bytes: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    ctx.out.bulk(&hex.as_bytes()[..chars]);
    Ok(())
}

fn acl_log(ctx: &mut Ctx<'_>) -> CmdResult {
    let acl = &ctx.server().acl;
    let count = match ctx.argv.len() {
        2 => 10,
        3 if ctx.arg(2).eq_ignore_ascii_case(b"reset") => {
            acl.log_reset();
            ctx.out.ok();
            return Ok(());
        }
        3 => ctx.int_arg(2)?.max(0) as usize,
        _ => return Err(super::wrong_subcommand_args(ctx)),
    };
    let entries = acl.log_entries(count);
    let now = ctx.now_ms;
    let out = &mut ctx.out;
    out.array(entries.len());
    for e in entries {
        out.map(10);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(e.object.as_bytes());
        out.bulk(b"username");
        out.bulk(e.username.as_bytes());
        out.bulk(b"age-seconds");
        out.double(now.saturating_sub(e.updated) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
        out.bulk(b"entry-id");
        out.int(e.entry_id as i64);
        out.bulk(b"timestamp-created");
        out.int(e.created as i64);
        out.bulk(b"timestamp-last-updated");
        out.int(e.updated as i64);
    }
    Ok(())
}

fn acl_dryrun(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = ctx.server();
    let Some(user) = server.acl.user(ctx.arg(2)) else {
        return Err(CmdError::err(format!(
            "User '{}' not found",
            String::from_utf8_lossy(ctx.arg(2))
        )));
    };
    let argv: &[Bytes] = &ctx.argv[3..];
    let table = ctx.commands();
    let not_found = || {
        CmdError::err(format!(
            "Command '{}' not found",
            String::from_utf8_lossy(&argv[0])
        ))
    };
    let id = table.lookup_call(argv).ok_or_else(not_found)?;
    let arity = table.commands[id].arity;
    let argc = argv.len() as i32;
    if (arity > 0 && arity != argc) || argc < -arity {
        return Err(CmdError::err(format!(
            "wrong number of arguments for '{}' command",
            table.fullnames[id]
        )));
    }
    match user.check(table, id, argv) {
        Ok(()) => ctx.out.ok(),
        Err(d) => ctx
            .out
            .bulk(acl::dryrun_text(d, table, id, argv).as_bytes()),
    }
    Ok(())
}

fn acl_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "ACL", ACL)
}

/// Logs in as `user` with `pass` (AUTH, HELLO AUTH); a failure is logged in ACL LOG.
pub(super) fn authenticate(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> CmdResult {
    let server = ctx.server();
    match server.acl.authenticate(user, pass) {
        Some(u) => {
            ctx.client.set_user(u);
            ctx.client.authenticated = true;
            Ok(())
        }
        None => {
            let context = if ctx.nested() || ctx.client.multi.is_some() {
                acl::Context::Multi
            } else {
                acl::Context::Toplevel
            };
            let object = String::from_utf8_lossy(ctx.arg(0)).into_owned();
            let name = String::from_utf8_lossy(user).into_owned();
            crate::exec::admit::log_refusal_as(
                server,
                ctx.client,
                acl::Reason::Auth,
                context,
                object,
                name,
            );
            Err(CmdError::Static(
                "WRONGPASS invalid username-password pair or user is disabled.",
            ))
        }
    }
}
