//! EVAL EVALSHA EVAL_RO EVALSHA_RO, SCRIPT LOAD|EXISTS|FLUSH|KILL, FUNCTION
//! LOAD|DELETE|FLUSH|LIST|DUMP|RESTORE|STATS|KILL, FCALL FCALL_RO. How scripts run:
//! crate::services::scripting.

use crate::exec::command::{flags::*, ks, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::exec::script::{self, Script};
use crate::services::scripting::{self, Library, Target};
use bytes::Bytes;
use strata_scripting::ScriptFlags;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "scripting",
    ..Command::DEFAULT
};

const EVAL_FLAGS: u32 =
    NOSCRIPT | SKIP_MONITOR | MAY_REPLICATE | NO_MANDATORY_KEYS | STALE | MOVABLEKEYS;
const RO_FLAGS: u32 = NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | READONLY | MOVABLEKEYS;

pub static COMMANDS: &[Command] = &[
    Command {
        name: "eval",
        arity: -3,
        flags: EVAL_FLAGS,
        keys: Keys::Specs(&[KeySpec::keynum(ks::RW | ks::ACCESS | ks::UPDATE, 2)]),
        summary: "Executes a server-side Lua script.",
        since: "2.6.0",
        args: "script numkeys#int [key#key]... [arg]...",
        handler: eval,
        call_flags: Some(super::script_flags::eval),
        ..FAMILY
    },
    Command {
        name: "evalsha",
        arity: -3,
        flags: EVAL_FLAGS,
        keys: Keys::Specs(&[KeySpec::keynum(ks::RW | ks::ACCESS | ks::UPDATE, 2)]),
        summary: "Executes a server-side Lua script by SHA1 digest.",
        since: "2.6.0",
        args: "sha1 numkeys#int [key#key]... [arg]...",
        handler: evalsha,
        call_flags: Some(super::script_flags::evalsha),
        ..FAMILY
    },
    Command {
        name: "eval_ro",
        arity: -3,
        flags: RO_FLAGS,
        keys: Keys::Specs(&[KeySpec::keynum(ks::RO | ks::ACCESS, 2)]),
        summary: "Executes a read-only server-side Lua script.",
        since: "7.0.0",
        args: "script numkeys#int [key#key]... [arg]...",
        handler: eval_ro,
        call_flags: Some(super::script_flags::eval),
        ..FAMILY
    },
    Command {
        name: "evalsha_ro",
        arity: -3,
        flags: RO_FLAGS,
        keys: Keys::Specs(&[KeySpec::keynum(ks::RO | ks::ACCESS, 2)]),
        summary: "Executes a read-only server-side Lua script by SHA1 digest.",
        since: "7.0.0",
        args: "sha1 numkeys#int [key#key]... [arg]...",
        handler: evalsha_ro,
        call_flags: Some(super::script_flags::evalsha),
        ..FAMILY
    },
    Command {
        name: "fcall",
        arity: -3,
        flags: EVAL_FLAGS,
        keys: Keys::Specs(&[KeySpec::keynum(ks::RW | ks::ACCESS | ks::UPDATE, 2)]),
        summary: "Invokes a function.",
        since: "7.0.0",
        args: "function numkeys#int [key#key]... [arg]...",
        handler: fcall,
        call_flags: Some(super::script_flags::fcall),
        ..FAMILY
    },
    Command {
        name: "fcall_ro",
        arity: -3,
        flags: RO_FLAGS,
        keys: Keys::Specs(&[KeySpec::keynum(ks::RO | ks::ACCESS, 2)]),
        summary: "Invokes a read-only function.",
        since: "7.0.0",
        args: "function numkeys#int [key#key]... [arg]...",
        handler: fcall_ro,
        call_flags: Some(super::script_flags::fcall),
        ..FAMILY
    },
    Command {
        name: "script",
        arity: -2,
        flags: 0,
        summary: "A container for Lua scripts management commands.",
        since: "2.6.0",
        handler: super::container,
        subcommands: SCRIPT,
        ..FAMILY
    },
    Command {
        name: "function",
        arity: -2,
        flags: 0,
        summary: "A container for function commands.",
        since: "7.0.0",
        handler: super::container,
        subcommands: FUNCTION,
        ..FAMILY
    },
];

const SCRIPT: &[Command] = &[
    Command {
        name: "load",
        arity: 3,
        flags: NOSCRIPT | STALE,
        summary: "Loads a server-side Lua script to the script cache.",
        since: "2.6.0",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        args: "script",
        handler: script_load,
        ..FAMILY
    },
    Command {
        name: "exists",
        arity: -3,
        flags: NOSCRIPT,
        summary: "Determines whether server-side Lua scripts exist in the script cache.",
        since: "2.6.0",
        tips: &[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ],
        args: "sha1...",
        handler: script_exists,
        ..FAMILY
    },
    Command {
        name: "flush",
        arity: -2,
        flags: NOSCRIPT,
        summary: "Removes all server-side Lua scripts from the script cache.",
        since: "2.6.0",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        args: "[async=(ASYNC | SYNC)]",
        handler: script_flush,
        ..FAMILY
    },
    Command {
        name: "kill",
        arity: 2,
        flags: NOSCRIPT | ALLOW_BUSY,
        summary: "Terminates a server-side Lua script during execution.",
        since: "2.6.0",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        handler: script_kill,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
        since: "5.0.0",
        handler: script_help,
        ..FAMILY
    },
];

const FUNCTION: &[Command] = &[
    Command {
        name: "load",
        arity: -3,
        flags: WRITE | DENYOOM | NOSCRIPT,
        summary: "Creates a library.",
        since: "7.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: "[REPLACE] function-code",
        handler: function_load,
        ..FAMILY
    },
    Command {
        name: "delete",
        arity: 3,
        flags: WRITE | NOSCRIPT,
        summary: "Deletes a library and its functions.",
        since: "7.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: "library-name",
        handler: function_delete,
        ..FAMILY
    },
    Command {
        name: "flush",
        arity: -2,
        flags: WRITE | NOSCRIPT,
        summary: "Deletes all libraries and functions.",
        since: "7.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: "[async=(ASYNC | SYNC)]",
        handler: function_flush,
        ..FAMILY
    },
    Command {
        name: "list",
        arity: -2,
        flags: NOSCRIPT,
        summary: "Returns information about all libraries.",
        since: "7.0.0",
        tips: &["nondeterministic_output_order"],
        args: "[LIBRARYNAME:library-name-pattern] [WITHCODE]",
        handler: function_list,
        ..FAMILY
    },
    Command {
        name: "dump",
        arity: 2,
        flags: NOSCRIPT,
        summary: "Dumps all libraries into a serialized binary payload.",
        since: "7.0.0",
        handler: function_dump,
        ..FAMILY
    },
    Command {
        name: "restore",
        arity: -3,
        flags: WRITE | DENYOOM | NOSCRIPT,
        summary: "Restores all libraries from a payload.",
        since: "7.0.0",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: "serialized-value [policy=(FLUSH | APPEND | REPLACE)]",
        handler: function_restore,
        ..FAMILY
    },
    Command {
        name: "stats",
        arity: 2,
        flags: NOSCRIPT | ALLOW_BUSY,
        summary: "Returns information about a function during execution.",
        since: "7.0.0",
        tips: &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
        handler: function_stats,
        ..FAMILY
    },
    Command {
        name: "kill",
        arity: 2,
        flags: NOSCRIPT | ALLOW_BUSY,
        summary: "Terminates a function during execution.",
        since: "7.0.0",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        handler: function_kill,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
        since: "7.0.0",
        handler: function_help,
        ..FAMILY
    },
];

/// numkeys, keys and args of EVAL/FCALL; `bad_numkeys` is the error for a non-integer.
fn split_args<'a>(
    ctx: &Ctx<'a>,
    bad_numkeys: fn() -> CmdError,
) -> Result<(&'a [Bytes], &'a [Bytes]), CmdError> {
    let n = crate::exec::command::parse_i64(ctx.arg(2)).ok_or_else(bad_numkeys)?;
    let rest = ctx.argv.len() as i64 - 3;
    if n > rest {
        return Err(CmdError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(CmdError::err("Number of keys can't be negative"));
    }
    let n = n as usize;
    let argv: &'a [Bytes] = ctx.argv;
    Ok(argv[3..].split_at(n))
}

fn eval_body(ctx: &mut Ctx<'_>, sha: String, body: Bytes, ro: bool) -> CmdResult {
    let flags = strata_scripting::Lua::script_flags(&body).unwrap_or_default();
    run_script(ctx, &sha, Some(&body), flags, ro)
}

/// Runs an EVAL body (`None`: the one this thread compiled for `sha`).
fn run_script(
    ctx: &mut Ctx<'_>,
    sha: &str,
    body: Option<&[u8]>,
    flags: ScriptFlags,
    ro: bool,
) -> CmdResult {
    let (keys, args) = split_args(ctx, || CmdError::NOT_INTEGER)?;
    check_flags(ctx, &flags, ro)?;
    let read_only = ro || (!flags.eval_compat_mode && flags.no_writes);
    let reply = script::run(
        ctx,
        Script {
            target: Target::Eval(sha, body),
            name: sha,
            keys,
            args,
            read_only,
            deny_oom: deny_oom(ctx, &flags),
        },
    );
    ctx.out.raw(&reply);
    ctx.no_effect();
    Ok(())
}

/// Redis's scriptPrepareForRun checks for a script that may write.
fn check_flags(ctx: &Ctx<'_>, flags: &ScriptFlags, ro: bool) -> CmdResult {
    if flags.eval_compat_mode || flags.no_writes {
        return Ok(());
    }
    if let Some(r) = crate::services::disk_refusal::DiskRefusal::now(ctx.server()) {
        return Err(r.script_error());
    }
    if ro {
        return Err(CmdError::err(
            "Can not execute a script with write flag using *_ro command.",
        ));
    }
    // A script with flags that may write counts as a command that needs memory (Redis
    // derives its DENYOOM flag from them), unless it is flagged `allow-oom`.
    if ctx.client.oom_at_start && !flags.allow_oom && ctx.server().evict.maxmemory() != 0 {
        return Err(CmdError::Static(crate::services::evict::OOM));
    }
    Ok(())
}

/// Whether the script's writes are refused while memory was over the limit at its start:
/// any script but one with flags including `allow-oom` (Redis's SCRIPT_ALLOW_OOM).
fn deny_oom(ctx: &Ctx<'_>, flags: &ScriptFlags) -> bool {
    ctx.client.oom_at_start && (flags.eval_compat_mode || !flags.allow_oom)
}

/// EVAL's body, remembered for EVALSHA.
fn by_body(ctx: &Ctx<'_>) -> (String, Bytes) {
    let body = ctx.argv[1].clone();
    let sha = strata_scripting::sha1hex(&body);
    ctx.scripts().remember(sha.clone(), body.clone());
    (sha, body)
}

fn eval(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.show_to_monitors();
    let (sha, body) = by_body(ctx);
    eval_body(ctx, sha, body, false)
}

fn eval_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.show_to_monitors();
    let (sha, body) = by_body(ctx);
    eval_body(ctx, sha, body, true)
}

/// EVALSHA: a script this thread has compiled runs without the shared registry (no lock
/// or reference count that other threads touch); otherwise its body comes from there.
fn by_sha(ctx: &mut Ctx<'_>, ro: bool) -> CmdResult {
    ctx.show_to_monitors();
    // from_utf8 first: from_utf8_lossy's scan was 1% of an EVALSHA's instructions.
    let arg = ctx.arg(1);
    let sha = std::str::from_utf8(arg).map_or_else(
        |_| String::from_utf8_lossy(arg).to_ascii_lowercase(),
        str::to_ascii_lowercase,
    );
    if let Some(flags) = scripting::with_lua(ctx.scripts(), |lua| lua.script_flags_of(&sha)) {
        return run_script(ctx, &sha, None, flags, ro);
    }
    let body = ctx.scripts().body(&sha).ok_or(CmdError::Static(
        "NOSCRIPT No matching script. Please use EVAL.",
    ))?;
    eval_body(ctx, sha, body, ro)
}

fn evalsha(ctx: &mut Ctx<'_>) -> CmdResult {
    by_sha(ctx, false)
}

fn evalsha_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    by_sha(ctx, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, ro: bool) -> CmdResult {
    ctx.show_to_monitors();
    let name = String::from_utf8_lossy(ctx.arg(1));
    // This thread's Lua state mirrors the registry's libraries (with_lua catches up).
    let flags = scripting::with_lua(ctx.scripts(), |lua| lua.function_flags(&name));
    let Some(flags) = flags else {
        return Err(CmdError::err("Function not found"));
    };
    let (keys, args) = split_args(ctx, || CmdError::err("Bad number of keys provided"))?;
    check_flags(ctx, &flags, ro)?;
    let read_only = ro || flags.no_writes;
    let reply = script::run(
        ctx,
        Script {
            target: Target::Function(&name),
            name: &name,
            keys,
            args,
            read_only,
            deny_oom: deny_oom(ctx, &flags),
        },
    );
    ctx.out.raw(&reply);
    ctx.no_effect();
    Ok(())
}

fn fcall(ctx: &mut Ctx<'_>) -> CmdResult {
    fcall_generic(ctx, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>) -> CmdResult {
    fcall_generic(ctx, true)
}

// ---------------------------------------------------------------------------------------
// SCRIPT

fn script_load(ctx: &mut Ctx<'_>) -> CmdResult {
    let body = ctx.argv[2].clone();
    match scripting::with_lua(ctx.scripts(), |lua| lua.load_script(&body)) {
        Ok(sha) => {
            ctx.scripts().remember(sha.clone(), body);
            ctx.out.bulk(sha.as_bytes());
        }
        Err(reply) => ctx.out.raw(&reply),
    }
    Ok(())
}

fn script_exists(ctx: &mut Ctx<'_>) -> CmdResult {
    let n = ctx.argv.len() - 2;
    ctx.out.array(n);
    for i in 2..ctx.argv.len() {
        let sha = String::from_utf8_lossy(ctx.arg(i)).to_ascii_lowercase();
        let has = ctx.scripts().has(&sha);
        ctx.out.int(has as i64);
    }
    Ok(())
}

/// The [ASYNC|SYNC] argument of SCRIPT FLUSH and FUNCTION FLUSH.
fn flush_mode(ctx: &Ctx<'_>, err: &'static str) -> CmdResult {
    match ctx.argv.len() {
        2 => Ok(()),
        3 if ctx.arg(2).eq_ignore_ascii_case(b"sync")
            || ctx.arg(2).eq_ignore_ascii_case(b"async") =>
        {
            Ok(())
        }
        _ => Err(CmdError::err(err)),
    }
}

fn script_flush(ctx: &mut Ctx<'_>) -> CmdResult {
    flush_mode(ctx, "SCRIPT FLUSH only support SYNC|ASYNC option")?;
    ctx.scripts().flush();
    ctx.out.ok();
    Ok(())
}

fn script_kill(ctx: &mut Ctx<'_>) -> CmdResult {
    scripting::kill(ctx.scripts(), true)?;
    ctx.out.ok();
    Ok(())
}

fn script_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "SCRIPT", SCRIPT)
}

fn function_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help(ctx, "FUNCTION", FUNCTION)
}

// ---------------------------------------------------------------------------------------
// FUNCTION

/// FUNCTION LOAD's registration, with Redis's error replies.
fn load_library(ctx: &Ctx<'_>, code: Bytes, replace: bool) -> Result<String, CmdError> {
    ctx.scripts()
        .load_library(code, replace)
        .map_err(CmdError::Custom)
}

fn function_load(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut replace = false;
    let mut i = 2;
    while i < ctx.argv.len() - 1 {
        if ctx.arg(i).eq_ignore_ascii_case(b"replace") {
            replace = true;
            i += 1;
            continue;
        }
        return Err(CmdError::Custom(format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(ctx.arg(i))
        )));
    }
    if i >= ctx.argv.len() {
        return Err(CmdError::err("Function code is missing"));
    }
    let name = load_library(ctx, ctx.kept_arg(i), replace)?;
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

fn function_delete(ctx: &mut Ctx<'_>) -> CmdResult {
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    if ctx.scripts().libraries.write().remove(&name).is_none() {
        return Err(CmdError::err("Library not found"));
    }
    ctx.scripts().functions_changed();
    ctx.out.ok();
    Ok(())
}

fn function_flush(ctx: &mut Ctx<'_>) -> CmdResult {
    // Redis answers extra arguments as a wrong subcommand (SCRIPT FLUSH does not).
    if ctx.argv.len() > 3 {
        return Err(crate::exec::table::wrong_subcommand_args(ctx.argv));
    }
    flush_mode(ctx, "FUNCTION FLUSH only supports SYNC|ASYNC option")?;
    ctx.scripts().libraries.write().clear();
    ctx.scripts().functions_changed();
    ctx.out.ok();
    Ok(())
}

fn function_list(ctx: &mut Ctx<'_>) -> CmdResult {
    let (mut with_code, mut pattern) = (false, None);
    let mut i = 2;
    while i < ctx.argv.len() {
        let a = ctx.arg(i);
        if !with_code && a.eq_ignore_ascii_case(b"withcode") {
            with_code = true;
        } else if pattern.is_none() && a.eq_ignore_ascii_case(b"libraryname") {
            if i >= ctx.argv.len() - 1 {
                return Err(CmdError::err("library name argument was not given"));
            }
            i += 1;
            pattern = Some(ctx.argv[i].clone());
        } else {
            return Err(CmdError::Custom(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    let libs = ctx.scripts().libraries.read();
    let chosen: Vec<&Library> = libs
        .values()
        .filter(|l| {
            pattern
                .as_ref()
                .is_none_or(|p| strata_engine::glob::matches(p, l.info.name.as_bytes(), false))
        })
        .collect();
    let out = &mut ctx.out;
    out.array(chosen.len());
    for l in chosen {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(l.info.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(l.info.functions.len());
        for f in &l.info.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d.as_bytes()),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names = flag_names(&f.flags);
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&l.code);
        }
    }
    Ok(())
}

/// A function's flags as FUNCTION LIST names them, in Redis's table order.
fn flag_names(f: &ScriptFlags) -> Vec<&'static str> {
    [
        (f.no_writes, "no-writes"),
        (f.allow_oom, "allow-oom"),
        (f.allow_stale, "allow-stale"),
        (f.no_cluster, "no-cluster"),
        (f.allow_cross_slot_keys, "allow-cross-slot-keys"),
    ]
    .into_iter()
    .filter_map(|(on, n)| on.then_some(n))
    .collect()
}

fn function_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let running: Option<(String, Vec<Bytes>, u64)> = ctx
        .scripts()
        .running
        .lock()
        .iter()
        .find(|r| !r.eval)
        .map(|r| {
            (
                r.name.clone(),
                r.argv.clone(),
                crate::tick::Tick::now().micros_since(r.started) / 1000,
            )
        });
    let (libs, funcs) = {
        let l = ctx.scripts().libraries.read();
        (
            l.len(),
            l.values().map(|l| l.info.functions.len()).sum::<usize>(),
        )
    };
    let out = &mut ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        None => out.null(),
        Some((name, argv, ms)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name.as_bytes());
            out.bulk(b"command");
            out.array(argv.len());
            for a in &argv {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(ms as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libs as i64);
    out.bulk(b"functions_count");
    out.int(funcs as i64);
    Ok(())
}

fn function_kill(ctx: &mut Ctx<'_>) -> CmdResult {
    scripting::kill(ctx.scripts(), false)?;
    ctx.out.ok();
    Ok(())
}

/// FUNCTION DUMP: every library's code as Redis's payload (FUNCTION2 records, the RDB
/// version, a CRC64), which redis-server's FUNCTION RESTORE takes too.
fn function_dump(ctx: &mut Ctx<'_>) -> CmdResult {
    let libs = ctx.scripts().libraries.read();
    let payload = strata_rdb::dump_functions(libs.values().map(|l| &l.code[..]));
    drop(libs);
    ctx.out.bulk(&payload);
    Ok(())
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: all of the payload's libraries or
/// none, with Redis's errors.
fn function_restore(ctx: &mut Ctx<'_>) -> CmdResult {
    use crate::services::scripting::RestorePolicy;
    if ctx.argv.len() > 4 {
        return Err(super::wrong_subcommand_args(ctx));
    }
    let policy =
        match ctx.argv.len() {
            3 => RestorePolicy::Append,
            _ => match ctx.lower(3).as_slice() {
                b"append" => RestorePolicy::Append,
                b"replace" => RestorePolicy::Replace,
                b"flush" => RestorePolicy::Flush,
                _ => return Err(CmdError::err(
                    "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
                )),
            },
        };
    let verify = crate::rdb::verify(ctx.server());
    let codes = strata_rdb::restore_functions_with(ctx.arg(2), verify).map_err(|e| match e {
        strata_rdb::PayloadError::BadData(e) => CmdError::Custom(format!("ERR {}", e.kind())),
        e => CmdError::Custom(format!("ERR {e}")),
    })?;
    ctx.scripts()
        .restore_libraries(codes, policy)
        .map_err(CmdError::Custom)?;
    ctx.out.ok();
    Ok(())
}
