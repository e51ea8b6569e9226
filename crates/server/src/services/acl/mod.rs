//! Access control as in Redis 7.0: users, their rules (`rules`, `user`), selectors of
//! command, key and channel permissions (`selector`), the rules written back
//! (`describe`), the log of refusals (`log`) and users from files (`file`).
//!
//! Every command is checked once, in `exec::admit`, against its client's user: a user
//! that may do everything (the default user) costs one flag load.

pub mod describe;
pub mod file;
pub mod log;
pub mod rules;
pub mod selector;
pub mod user;

#[cfg(test)]
mod tests;

use crate::exec::client::ClientInfo;
use crate::exec::table::Table;
use crate::server::Server;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use rules::Env;
use selector::{channel_allowed, Denied};
use std::collections::BTreeMap;
use std::sync::Arc;
use user::{Rules, User};

pub use log::{Context, Reason, Refusal};

/// Users, the default user and the log.
pub struct Acl {
    /// By name, in byte order (ACL LIST and USERS list them so).
    users: RwLock<BTreeMap<Bytes, Arc<User>>>,
    /// The default user: the same object for the server's life (ACL LOAD replaces its
    /// rules, not the user), so new connections and RESET find it without the map.
    default: Arc<User>,
    log: Mutex<log::Log>,
}

/// The result of ACL SETUSER on an existing user, for the caller to act on.
pub struct Changed {
    pub user: Arc<User>,
    pub before: Arc<Rules>,
}

impl Acl {
    pub fn new(table: &Table, pubsub_all: bool) -> Acl {
        let env = Env { table, pubsub_all };
        let default = Arc::new(User::new(
            Bytes::from_static(b"default"),
            Rules::default_user(&env),
        ));
        let mut users = BTreeMap::new();
        users.insert(default.name.clone(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            log: Mutex::new(log::Log::default()),
        }
    }

    pub fn default_user(&self) -> &Arc<User> {
        &self.default
    }

    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn all(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// Clients must authenticate: the default user has passwords or is off.
    pub fn auth_required(&self) -> bool {
        let d = self.default.rules();
        !d.nopass || !d.enabled
    }

    /// The user `name` if `pass` is one of its passwords (or it needs none) and it is on.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let user = self.user(name)?;
        user.rules().password_ok(pass).then_some(user)
    }

    /// `requirepass`: the default user's only password (or nopass when empty).
    pub fn set_default_password(&self, env: &Env<'_>, pass: &[u8]) {
        let mut r = Rules::clone(&self.default.rules());
        let _ = r.apply(env, b"resetpass");
        if pass.is_empty() {
            let _ = r.apply(env, b"nopass");
        } else {
            let _ = r.apply(env, &[b">", pass].concat());
        }
        self.default.set_rules(r);
    }

    /// ACL SETUSER: creates the user or changes it, all rules or none. Returns the
    /// previous rules of an existing user.
    pub fn set_user(
        &self,
        env: &Env<'_>,
        name: &[u8],
        words: &[Bytes],
    ) -> Result<Option<Changed>, String> {
        let mut users = self.users.write();
        match users.get(name) {
            Some(user) => {
                let before = user.rules();
                let mut next = Rules::clone(&before);
                next.apply_all(env, words)?;
                user.set_rules(next);
                Ok(Some(Changed {
                    user: user.clone(),
                    before,
                }))
            }
            None => {
                let mut rules = Rules::new(env);
                rules.apply_all(env, words)?;
                let name = Bytes::copy_from_slice(name);
                users.insert(name.clone(), Arc::new(User::new(name, rules)));
                Ok(None)
            }
        }
    }

    /// ACL DELUSER: removes the users that exist and returns them.
    pub fn delete(&self, names: &[Bytes]) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        names.iter().filter_map(|n| users.remove(n)).collect()
    }

    /// ACL LOAD and start-up: these users replace all others. The default user keeps its
    /// identity and takes the new rules (or the default ones when the set has none).
    /// Returns the users that went away.
    pub fn replace_all(&self, env: &Env<'_>, set: Vec<(Bytes, Rules)>) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        let mut next = BTreeMap::new();
        let mut default_rules = Rules::default_user(env);
        for (name, rules) in set {
            if name.as_ref() == b"default" {
                default_rules = rules;
            } else {
                next.insert(name.clone(), Arc::new(User::new(name, rules)));
            }
        }
        self.default.set_rules(default_rules);
        next.insert(self.default.name.clone(), self.default.clone());
        let old = std::mem::replace(&mut *users, next);
        old.into_values()
            .filter(|u| !Arc::ptr_eq(u, &self.default))
            .collect()
    }

    pub fn log(&self, r: Refusal, now_ms: u64, max: usize) {
        self.log.lock().add(r, now_ms, max);
    }

    pub fn log_entries(&self, n: usize) -> Vec<log::Entry> {
        self.log.lock().newest(n)
    }

    pub fn log_reset(&self) {
        self.log.lock().reset();
    }
}

/// The rules are applied under the server's current table and `acl-pubsub-default`.
pub fn env(server: &Server) -> Env<'_> {
    Env {
        table: &server.table,
        pubsub_all: server.config.get().acl_pubsub_default
            == crate::config::AclPubsubDefault::Allchannels,
    }
}

/// Closes every connection authenticated as one of `users` (deleted, or replaced by ACL
/// LOAD). The current client is closed after its reply instead; returns whether it was.
/// The users lose every permission first, so a connection still finishing its batch can
/// do nothing more as them.
pub fn kill_clients_of(server: &Server, users: &[Arc<User>], me: u64) -> bool {
    let mut me_too = false;
    if users.is_empty() {
        return false;
    }
    for u in users {
        u.set_rules(Rules::revoked());
    }
    for c in server.clients.snapshot() {
        let Some(u) = c.user() else { continue };
        if users.iter().any(|d| Arc::ptr_eq(d, &u)) {
            if c.id == me {
                me_too = true;
            } else {
                c.kill();
            }
        }
    }
    me_too
}

/// After ACL SETUSER changed a user's channel permissions: subscribers of that user
/// whose subscriptions the new rules no longer allow are disconnected, as Redis does
/// (nothing happens when the new channel patterns keep every old one).
pub fn kill_revoked_subscribers(server: &Server, changed: &Changed) {
    let now = changed.user.rules();
    if now.selectors.iter().any(|s| s.all_channels) {
        return;
    }
    let upcoming: Vec<Bytes> = now
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().cloned())
        .collect();
    let kept = changed
        .before
        .selectors
        .iter()
        .all(|s| !s.all_channels && s.channels.iter().all(|c| upcoming.contains(c)));
    if kept {
        return;
    }
    let mut doomed: Vec<u64> = Vec::new();
    server
        .pubsub
        .for_each_subscription(|name, pattern, info: &ClientInfo| {
            let theirs = info.user().is_some_and(|u| Arc::ptr_eq(&u, &changed.user));
            if theirs && !doomed.contains(&info.id) && !channel_allowed(&upcoming, name, pattern) {
                doomed.push(info.id);
            }
        });
    // Gone from CLIENT LIST at once, as Redis frees them before replying; the
    // connections close as they wake.
    for id in doomed {
        if let Some(c) = server.clients.get(id) {
            c.kill();
            server.clients.remove(id);
        }
    }
}

/// The error a refused call gets: Redis's texts for a client, an EXEC's queued command
/// and a script's call.
pub fn denial_text(d: Denied, context: Context, table: &Table, id: usize) -> String {
    match context {
        Context::Toplevel => match d {
            Denied::Command => format!(
                "NOPERM this user has no permissions to run the '{}' command",
                table.fullnames[id]
            ),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        },
        Context::Multi => {
            let reason = match d {
                Denied::Command => "no permission to execute the command or subcommand",
                Denied::Key(_) => "no permission to touch the specified keys",
                Denied::Channel(_) => {
                    "no permission to access one of the channels used as arguments"
                }
            };
            format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}")
        }
        Context::Lua => {
            let what = match d {
                Denied::Command => "can't run this command or subcommand",
                Denied::Key(_) => "can't access at least one of the keys mentioned in the command arguments",
                Denied::Channel(_) => "can't publish to the channel mentioned in the command",
            };
            format!("ERR The user executing the script {what}")
        }
    }
}

/// ACL DRYRUN's answer for a denial.
pub fn dryrun_text(d: Denied, table: &Table, id: usize, argv: &[Bytes]) -> String {
    let arg = |i: usize| String::from_utf8_lossy(argv.get(i).map_or(&b""[..], |a| a)).into_owned();
    match d {
        Denied::Command => format!(
            "This user has no permissions to run the '{}' command",
            table.fullnames[id]
        ),
        Denied::Key(i) => format!(
            "This user has no permissions to access the '{}' key",
            arg(i)
        ),
        Denied::Channel(i) => format!(
            "This user has no permissions to access the '{}' channel",
            arg(i)
        ),
    }
}

/// The log entry of a refused call: its reason and object.
pub fn refusal_of(d: Denied, table: &Table, id: usize, argv: &[Bytes]) -> (Reason, String) {
    let arg = |i: usize| String::from_utf8_lossy(argv.get(i).map_or(&b""[..], |a| a)).into_owned();
    match d {
        Denied::Command => (Reason::Command, table.fullnames[id].clone()),
        Denied::Key(i) => (Reason::Key, arg(i)),
        Denied::Channel(i) => (Reason::Channel, arg(i)),
    }
}
