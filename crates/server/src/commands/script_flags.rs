//! The flags of one EVAL, EVALSHA or FCALL (and their _RO forms) call, as Redis's
//! evalGetCommandFlags and fcallGetCommandFlags: a script that declares its flags (a
//! shebang, a function's flags) replaces the command's write flags with what it declared;
//! one that declares nothing keeps the command's. Admission reads them (CLIENT PAUSE WRITE
//! lets `no-writes` scripts run).

use crate::exec::client::Client;
use crate::exec::command::flags::*;
use crate::server::Server;
use crate::services::scripting::with_lua;
use bytes::Bytes;
use strata_scripting::{Lua, ScriptFlags};

/// Redis's scriptFlagsToCmdFlags.
fn apply(declared: u32, script: Option<ScriptFlags>) -> u32 {
    let Some(f) = script.filter(|f| !f.eval_compat_mode) else {
        return declared;
    };
    let mut flags = declared & !(STALE | DENYOOM | WRITE | MAY_REPLICATE);
    if !(f.allow_oom || f.no_writes) {
        flags |= DENYOOM;
    }
    if !f.no_writes {
        flags |= WRITE;
    }
    if f.allow_stale {
        flags |= STALE;
    }
    flags
}

/// EVAL, EVAL_RO: the body's shebang.
pub(super) fn eval(_: &Server, _: &Client, declared: u32, argv: &[Bytes]) -> u32 {
    let script = argv.get(1).and_then(|body| Lua::script_flags(body).ok());
    apply(declared, script)
}

/// EVALSHA, EVALSHA_RO: the flags of the script the digest names, if known.
pub(super) fn evalsha(server: &Server, _: &Client, declared: u32, argv: &[Bytes]) -> u32 {
    let sha = argv
        .get(1)
        .filter(|s| s.len() == 40)
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase());
    let script = sha.and_then(|sha| {
        with_lua(&server.scripts, |lua| lua.script_flags_of(&sha)).or_else(|| {
            let body = server.scripts.body(&sha)?;
            Lua::script_flags(&body).ok()
        })
    });
    apply(declared, script)
}

/// FCALL, FCALL_RO: the function's flags.
pub(super) fn fcall(server: &Server, _: &Client, declared: u32, argv: &[Bytes]) -> u32 {
    let name = argv.get(1).map(|n| String::from_utf8_lossy(n).into_owned());
    let script = name.and_then(|n| with_lua(&server.scripts, |lua| lua.function_flags(&n)));
    apply(declared, script)
}
