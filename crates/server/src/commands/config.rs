//! CONFIG GET/SET/RESETSTAT/REWRITE/HELP.

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
        args: "parameter=(parameter)...",
        handler: config_get,
        ..FAMILY
    },
    Command {
        name: "set",
        arity: -4,
        flags: ADMIN | NOSCRIPT | LOADING | STALE,
        summary: "Sets configuration parameters in-flight.",
        since: "2.0.0",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        args: "parameter_value=(parameter value)...",
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
    let patterns: Vec<&[u8]> = ctx.argv[2..].iter().map(|p| &p[..]).collect();
    let pairs = ctx.config().matching(&patterns);
    ctx.out.map(pairs.len());
    for (name, value) in pairs {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
    Ok(())
}

/// Redis 7's CONFIG SET: several directives at once, all or none.
fn config_set(ctx: &mut Ctx<'_>) -> CmdResult {
    let args = &ctx.argv[2..];
    if !args.len().is_multiple_of(2) {
        return Err(CmdError::SYNTAX);
    }
    // Passwords are hidden from the slow log and MONITOR, as Redis hides them.
    for i in (2..ctx.argv.len()).step_by(2) {
        let name = &ctx.argv[i];
        if name.eq_ignore_ascii_case(b"requirepass") || name.eq_ignore_ascii_case(b"masterauth") {
            ctx.redact(i + 1);
        }
    }
    let text: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let pairs: Vec<(&str, &str)> = text
        .chunks(2)
        .map(|p| (p[0].as_str(), p[1].as_str()))
        .collect();
    // `enable-protected-configs local` admits loopback clients.
    let local = ctx.client.info.is_local();
    let server = ctx.server();
    let before = server.config.snapshot();
    let hooks = server
        .config
        .set_many(&pairs, local)
        .map_err(CmdError::err)?;
    if let Err((failed, why)) = crate::config::hooks::run(server, hooks.iter().copied()) {
        // All or nothing: the old values come back, and what they drive with them.
        server.config.restore(before);
        let _ = crate::config::hooks::run(server, hooks);
        let name = pairs
            .iter()
            .find(|(n, _)| crate::config::lookup(n).is_some_and(|(d, _)| d.hook == Some(failed)))
            .map_or("", |(n, _)| *n);
        return Err(CmdError::err(format!(
            "CONFIG SET failed (possibly related to argument '{name}') - {why}"
        )));
    }
    ctx.out.ok();
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.server().stats.reset();
    ctx.server().repl.counters.reset();
    ctx.server()
        .evict
        .evicted
        .store(0, std::sync::atomic::Ordering::Relaxed);
    crate::services::lazyfree::reset_stats();
    for i in 0..ctx.keyspace().db_count() {
        ctx.keyspace().db(i).reset_stats();
    }
    ctx.out.ok();
    Ok(())
}

/// Writes every directive that differs from its default into the file the server was
/// started with, replacing it; and, without an ACL file, every ACL user as a `user` line.
fn config_rewrite(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(path) = ctx.config().file.clone() else {
        return Err(CmdError::err("The server is running without a config file"));
    };
    let mut text = ctx.config().rewrite_text();
    let server = ctx.server();
    if crate::services::acl::file::path(server).is_none() {
        text.push_str(&crate::services::acl::file::lines(
            &server.acl,
            &server.table,
        ));
    }
    strata_storage::replace_file(std::path::Path::new(&path), text.as_bytes())
        .map_err(|e| CmdError::err(format!("Rewriting config file: {e}")))?;
    ctx.out.ok();
    Ok(())
}

fn config_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "CONFIG", CONFIG)
}
