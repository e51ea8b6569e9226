//! CONFIG GET/SET/RESETSTAT/REWRITE/HELP.

use crate::config::param;
use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[Command {
    name: "config",
    arity: -2,
    flags: 0,
    summary: "A container for server configuration commands.",
    since: "2.0.0",
    handler: super::container,
    subcommands: CONFIG,
    ..FAMILY
}];

const CONFIG: &[Command] = &[
    Command {
        name: "get",
        arity: -3,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Returns the effective values of configuration parameters.",
        since: "2.0.0",
        handler: config_get,
        ..FAMILY
    },
    Command {
        name: "set",
        arity: -4,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Sets configuration parameters in-flight.",
        since: "2.0.0",
        handler: config_set,
        ..FAMILY
    },
    Command {
        name: "resetstat",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Resets the server's statistics.",
        since: "2.0.0",
        handler: config_resetstat,
        ..FAMILY
    },
    Command {
        name: "rewrite",
        arity: 2,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Persists the effective configuration to file.",
        since: "2.8.0",
        handler: config_rewrite,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
        since: "5.0.0",
        handler: config_help,
        ..FAMILY
    },
];

fn config_get(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut pairs: Vec<(&str, String, String)> = Vec::new();
    for pattern in &ctx.argv[2..] {
        // A plain name is echoed as the client spelled it, as Redis does.
        let exact = !pattern.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
        for (k, v) in ctx.config().matching(pattern) {
            if !pairs.iter().any(|(n, _, _)| *n == k) {
                let shown = if exact {
                    String::from_utf8_lossy(pattern).into_owned()
                } else {
                    k.to_string()
                };
                pairs.push((k, shown, v));
            }
        }
    }
    ctx.out.map(pairs.len());
    for (_, shown, v) in pairs {
        ctx.out.bulk(shown.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
    Ok(())
}

fn config_set(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = &ctx.argv[2..];
    if !args.len().is_multiple_of(2) {
        return Err(unknown_option(&args[args.len() - 1]));
    }
    // Validate everything first so a failing pair leaves the config untouched, as Redis 7.
    let mut checked = Vec::new();
    for pair in args.chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).into_owned();
        let value = String::from_utf8_lossy(&pair[1]).into_owned();
        let Some(p) = param(&name) else {
            return Err(unknown_option(&pair[0]));
        };
        if checked.iter().any(|(n, _)| *n == p.name) {
            return Err(CmdError::err(format!(
                "CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
            )));
        }
        let refuse = |why: String| {
            CmdError::err(format!(
                "CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ))
        };
        if !p.mutable {
            return Err(refuse("can't set immutable config".into()));
        }
        crate::config::normalize(p, &value).map_err(refuse)?;
        checked.push((p.name, value));
    }
    for (name, value) in checked {
        ctx.server()
            .config
            .set(name, &value, true)
            .map_err(CmdError::err)?;
    }
    ctx.server().apply_config();
    ctx.out.ok();
    Ok(())
}

fn unknown_option(name: &[u8]) -> CmdError {
    CmdError::err(format!(
        "Unknown option or number of arguments for CONFIG SET - '{}'",
        String::from_utf8_lossy(name)
    ))
}

fn config_resetstat(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.server().stats.reset();
    for i in 0..ctx.keyspace().db_count() {
        ctx.keyspace().db(i).reset_stats();
    }
    ctx.out.ok();
    Ok(())
}

fn config_rewrite(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(path) = ctx.config().file.clone() else {
        return Err(CmdError::err("The server is running without a config file"));
    };
    let mut text = String::from("# Written by Strata's CONFIG REWRITE\n");
    for (k, v) in ctx.config().matching(b"*") {
        text.push_str(&format!(
            "{k} \"{}\"\n",
            v.replace('\\', "\\\\").replace('"', "\\\"")
        ));
    }
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| CmdError::err(format!("Rewriting config file: {e}")))?;
    ctx.out.ok();
    Ok(())
}

fn config_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "CONFIG", CONFIG)
}
