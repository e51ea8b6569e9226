//! Users from files: the `aclfile` (ACL LOAD, ACL SAVE, start-up) and `user` lines of the
//! configuration (start-up, CONFIG REWRITE). Either one or the other, as Redis requires.

use super::rules::{merge_selectors, Env, RuleError};
use super::selector::has_spaces;
use super::user::Rules;
use super::Acl;
use crate::server::Server;
use bytes::Bytes;
use std::path::PathBuf;

/// The ACL file's path: `aclfile`, relative to `dir` (where redis-server runs).
pub fn path(server: &Server) -> Option<PathBuf> {
    let c = server.config.get();
    if c.aclfile.is_empty() {
        return None;
    }
    Some(PathBuf::from(&c.dir).join(&c.aclfile))
}

/// Parses an ACL file: `user <name> <rules>...` lines, words separated by single spaces,
/// blank lines allowed. Every problem of every line is reported, in Redis's words, and
/// then nothing is loaded.
pub fn parse(text: &str, filename: &str, env: &Env<'_>) -> Result<Vec<(Bytes, Rules)>, String> {
    let mut users: Vec<(Bytes, Rules)> = Vec::new();
    let mut errors = String::new();
    for (i, line) in text.split('\n').enumerate() {
        let n = i + 1;
        let line = line.trim_matches([' ', '\t', '\r', '\n']);
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split(' ').collect();
        if words[0] != "user" || words.len() < 2 {
            errors.push_str(&format!(
                "{filename}:{n} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = words[1];
        if has_spaces(name.as_bytes()) {
            errors.push_str(&format!(
                "'{filename}:{n}: username '{name}' contains invalid characters. "
            ));
            continue;
        }
        if users.iter().any(|(u, _)| u.as_ref() == name.as_bytes()) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{name}' found on line {n}. "
            ));
            continue;
        }
        let rest: Vec<Bytes> = words[2..]
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        let Ok(ops) = merge_selectors(&rest) else {
            errors.push_str(&format!(
                "{filename}:{n}: Unmatched parenthesis in selector definition."
            ));
            continue;
        };
        let mut rules = Rules::new(env);
        let mut syntax_error = false;
        for op in &ops {
            let op = trim(op);
            if let Err(e) = rules.apply(env, op) {
                if e == RuleError::Unknown {
                    errors.push_str(&format!(
                        "{filename}:{n}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(op),
                        e.text()
                    ));
                } else if !syntax_error {
                    // Only the first: later errors may follow from it.
                    errors.push_str(&format!("{filename}:{n}: {}. ", e.text()));
                    syntax_error = true;
                }
            }
        }
        users.push((Bytes::copy_from_slice(name.as_bytes()), rules));
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        Err(errors)
    }
}

fn trim(op: &[u8]) -> &[u8] {
    let ws = |c: &u8| matches!(c, b'\t' | b'\r' | b'\n');
    let start = op.iter().position(|c| !ws(c)).unwrap_or(op.len());
    let end = op.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    &op[start..end]
}

/// Every user as a `user <name> <rules>` line (ACL SAVE's file, CONFIG REWRITE's lines).
pub fn lines(acl: &Acl, table: &crate::exec::table::Table) -> String {
    let mut s = String::new();
    for u in acl.all() {
        s.push_str(&format!(
            "user {} {}\n",
            u.name_lossy(),
            u.rules().describe(table)
        ));
    }
    s
}

/// ACL LOAD: replaces every user with the file's. Clients of the users replaced are
/// disconnected (the caller's after its reply: returns true then).
pub fn load(server: &Server, me: u64) -> Result<bool, String> {
    let Some(path) = path(server) else {
        return Err(NO_FILE.into());
    };
    let filename = server.config.get().aclfile.clone();
    let text = std::fs::read(&path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{filename}': {}",
            strerror(&e)
        )
    })?;
    let env = super::env(server);
    let users = parse(&String::from_utf8_lossy(&text), &filename, &env)?;
    let gone = server.acl.replace_all(&env, users);
    Ok(super::kill_clients_of(server, &gone, me))
}

/// ACL SAVE: writes every user to the ACL file (a temporary file renamed over it).
pub fn save(server: &Server) -> Result<(), String> {
    let Some(path) = path(server) else {
        return Err(NO_FILE.into());
    };
    let text = lines(&server.acl, &server.table);
    if let Err(e) = strata_storage::replace_file(&path, text.as_bytes()) {
        tracing::warn!("Writing ACL file for ACL SAVE: {e}");
        return Err("There was an error trying to save the ACLs. Please check the server logs for more information".into());
    }
    Ok(())
}

/// Redis's refusal of ACL LOAD and SAVE without an `aclfile`.
pub const NO_FILE: &str = "This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// The text of an I/O error without Rust's " (os error N)".
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Start-up: the configuration's `user` lines, or the ACL file (not both).
pub fn load_at_start(server: &Server) -> Result<(), String> {
    let configured = server.config.users();
    let file = path(server);
    if file.is_some() && !configured.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let env = super::env(server);
    if !configured.is_empty() {
        let mut set: Vec<(Bytes, Rules)> = Vec::new();
        for words in &configured {
            let (name, ops) = words.split_first().ok_or("user without a name")?;
            if has_spaces(name) {
                return Err("Spaces not allowed in ACL usernames".into());
            }
            // The default user starts from its reset state, others from a new user's.
            let mut rules = Rules::new(&env);
            if name.as_slice() == b"default" {
                rules = Rules::default_user(&env);
                let _ = rules.apply(&env, b"reset");
            }
            let ops: Vec<Bytes> = ops.iter().map(|o| Bytes::copy_from_slice(o)).collect();
            let ops = merge_selectors(&ops)
                .map_err(|_| "Unmatched parenthesis in acl selector".to_string())?;
            for op in &ops {
                rules.apply(&env, op).map_err(|e| {
                    format!(
                        "Error loading ACL rule '{}' for the user named '{}': {}",
                        String::from_utf8_lossy(op),
                        String::from_utf8_lossy(name),
                        e.text()
                    )
                })?;
            }
            if !rules.enabled {
                tracing::info!("The user '{}' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.", String::from_utf8_lossy(name));
            }
            set.push((Bytes::copy_from_slice(name), rules));
        }
        // Keep the default user's current rules (requirepass) unless a line names it.
        if !set.iter().any(|(n, _)| n.as_ref() == b"default") {
            let d = server.acl.default_user().rules();
            set.push((Bytes::from_static(b"default"), Rules::clone(&d)));
        }
        server.acl.replace_all(&env, set);
    }
    if let Some(path) = file {
        let filename = server.config.get().aclfile.clone();
        let text = std::fs::read(&path).map_err(|e| {
            format!(
                "Aborting Redis startup because of ACL errors: Error loading ACLs, opening file '{filename}': {}",
                strerror(&e)
            )
        })?;
        let users = parse(&String::from_utf8_lossy(&text), &filename, &env)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
        server.acl.replace_all(&env, users);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::table::Table;

    #[test]
    fn a_file_reports_every_problem_and_loads_nothing_then() {
        let table = Table::new(crate::commands::FAMILIES);
        let env = Env {
            table: &table,
            pubsub_all: false,
        };
        let ok = parse(
            "user alice on >pw ~k* +get\n\nuser bob off (+set %W~w*)\r\n",
            "f.acl",
            &env,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert!(ok[0].1.enabled && ok[0].1.password_ok(b"pw"));
        assert_eq!(ok[1].1.selectors.len(), 2);
        let err = parse(
            "user a on +nosuch\nuser a on\nbob x\nuser c on %Q~x\n",
            "f.acl",
            &env,
        )
        .unwrap_err();
        assert_eq!(err, "f.acl:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. WARNING: Duplicate user 'a' found on line 2. f.acl:3 should start with user keyword followed by the username. f.acl:4: Syntax error. WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
    }
}
