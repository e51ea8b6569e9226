//! Stage 1: the command table built from every family's declarations; resolving a request
//! to its command or subcommand, and the arity check.

use crate::exec::command::{flags, CmdError, Command, KeyAt, KeyShape};
use bytes::Bytes;
use std::collections::HashMap;

pub struct Table {
    /// Every command and subcommand; a command's id is its index here.
    pub commands: Vec<&'static Command>,
    /// "get", "config|get": as Redis names them in errors and INFO commandstats.
    pub fullnames: Vec<String>,
    /// Index of every command by its lower-case fullname ("get", "config|get").
    by_name: HashMap<Box<[u8]>, usize, foldhash::fast::FixedState>,
    /// The container (CONFIG, CLIENT...) of each subcommand, by id.
    parent: Vec<Option<usize>>,
    /// Each command's ACL categories (`Command::acl_category_bits`), by id: ACL rules
    /// and descriptions test them many times over.
    categories: Vec<u32>,
    /// Each command's `Command::key_shape`, by id (a restricted user's every command
    /// checks its keys).
    shapes: Vec<KeyShape>,
    /// The id each command's statistics are kept under (`stat_id`).
    stat_ids: Vec<usize>,
    /// Distinguishes tables in `find`'s per-thread cache (tests build several).
    serial: u64,
}

impl Table {
    pub fn new(families: &[&'static [Command]]) -> Table {
        let mut t = Table {
            commands: Vec::new(),
            fullnames: Vec::new(),
            by_name: HashMap::default(),
            parent: Vec::new(),
            categories: Vec::new(),
            shapes: Vec::new(),
            stat_ids: Vec::new(),
            serial: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        };
        for family in families {
            for cmd in family.iter() {
                let id = t.add(cmd, cmd.name.to_string(), None);
                for sub in cmd.subcommands {
                    t.add(sub, format!("{}|{}", cmd.name, sub.name), Some(id));
                }
            }
        }
        t
    }

    fn add(&mut self, cmd: &'static Command, fullname: String, parent: Option<usize>) -> usize {
        let id = self.commands.len();
        let key: Box<[u8]> = fullname.as_bytes().into();
        debug_assert!(
            !self.by_name.contains_key(&key),
            "{fullname} declared twice"
        );
        self.commands.push(cmd);
        self.by_name.insert(key, id);
        self.fullnames.push(fullname);
        self.parent.push(parent);
        self.categories.push(cmd.acl_category_bits());
        self.shapes.push(cmd.key_shape());
        let opaque = parent.is_some_and(|p| self.commands[p].has(flags::OPAQUE));
        self.stat_ids.push(match parent {
            Some(p) if opaque => p,
            _ => id,
        });
        id
    }

    /// The id command `id`'s runs count under (INFO commandstats and latencystats,
    /// LATENCY HISTOGRAM, CLIENT LIST's cmd=): its own, but for the subcommands of an
    /// OPAQUE container, which are one command to Redis (DEBUG SLEEP counts as `debug`).
    #[inline]
    pub fn stat_id(&self, id: usize) -> usize {
        self.stat_ids.get(id).copied().unwrap_or(id)
    }

    /// Where command `id`'s keys are (`Command::key_shape`).
    #[inline]
    pub fn key_shape(&self, id: usize) -> KeyShape {
        self.shapes.get(id).copied().unwrap_or(KeyShape::Walk)
    }

    /// Each place in `argv` command `id` has a key (`Command::for_each_key_position`),
    /// read from its fixed place where it has one: walking a command's own key finder
    /// (SET's) cost more than what the callers then do with the key.
    #[inline]
    pub fn for_each_key_position(&self, id: usize, argv: &[Bytes], mut f: impl FnMut(usize)) {
        match self.key_shape(id) {
            KeyShape::None => {}
            KeyShape::One(KeyAt { pos, .. }) | KeyShape::OneVarying(pos) => {
                if pos < argv.len() {
                    f(pos)
                }
            }
            KeyShape::Walk => self.commands[id].for_each_key_position(argv, f),
        }
    }

    pub fn lookup(&self, fullname: &str) -> Option<usize> {
        self.by_name.get(fullname.as_bytes()).copied()
    }

    /// Looks a name up case-insensitively without allocating (this runs for every command).
    /// The last few names this thread resolved, spelled as the client spelled them, are
    /// checked first: a connection or a script sends the same handful over and over, and
    /// comparing bytes costs less than lowercasing and hashing them.
    fn find(&self, name: &[u8]) -> Option<usize> {
        let table = self.serial;
        let hit = RECENT.with_borrow(|r| {
            r.iter()
                .find(|e| e.table == table && e.name[..usize::from(e.len)] == *name)
                .map(|e| e.id)
        });
        if hit.is_some() {
            return hit;
        }
        let mut buf = [0u8; 64];
        let lower = buf.get_mut(..name.len())?;
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        let id = self.by_name.get(&*lower).copied()?;
        if name.len() <= RECENT_NAME {
            RECENT.with_borrow_mut(|r| {
                let mut e = Recent {
                    table,
                    name: [0; RECENT_NAME],
                    len: name.len() as u8,
                    id,
                };
                e.name[..name.len()].copy_from_slice(name);
                if r.len() == RECENT_SLOTS {
                    r.pop();
                }
                r.insert(0, e);
            });
        }
        Some(id)
    }

    /// Command `id`'s ACL categories, as bits of `command::ACL_CATEGORIES`.
    pub fn categories(&self, id: usize) -> u32 {
        self.categories.get(id).copied().unwrap_or(0)
    }

    /// The container of subcommand `id`.
    pub fn parent(&self, id: usize) -> Option<usize> {
        self.parent.get(id).copied().flatten()
    }

    /// The ids of container `id`'s subcommands (added right after it).
    pub fn subcommand_ids(&self, id: usize) -> std::ops::Range<usize> {
        let n = self.commands.get(id).map_or(0, |c| c.subcommands.len());
        id + 1..id + 1 + n
    }

    /// Resolves a name as ACL rules and DRYRUN spell it: "get", or "config|get" for a
    /// subcommand, in any case. A container's unknown subcommand, a subcommand of a
    /// command without any, or more than one `|`, resolve to nothing.
    pub fn lookup_rule_name(&self, name: &[u8]) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        let mut parts = lower.splitn(3, |&b| b == b'|');
        let base = parts.next()?;
        let sub = parts.next();
        if parts.next().is_some() {
            return None;
        }
        let id = self.by_name.get(base).copied()?;
        match sub {
            None => Some(id),
            Some(_) if self.commands[id].subcommands.is_empty() => None,
            Some(_) => self.by_name.get(lower.as_slice()).copied(),
        }
    }

    /// The command a call names, without checking its arity (Redis's lookupCommand for
    /// ACL DRYRUN and redis.acl_check_cmd): a container's subcommand when one is given.
    pub fn lookup_call(&self, argv: &[Bytes]) -> Option<usize> {
        let name = argv.first()?;
        if name.contains(&b'|') {
            return None;
        }
        let id = self.lookup_rule_name(name)?;
        match argv.get(1) {
            Some(sub) if !self.commands[id].subcommands.is_empty() => {
                self.lookup_rule_name(&[&name[..], b"|", sub].concat())
            }
            _ => Some(id),
        }
    }

    /// Whether COMMAND lists this command: every one but the subcommands of an OPAQUE
    /// container.
    pub fn is_listed(&self, id: usize) -> bool {
        self.parent[id].is_none_or(|p| !self.commands[p].has(flags::OPAQUE))
    }

    /// Top-level commands, in declaration order.
    pub fn top_level(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.commands.len()).filter(|&i| self.parent[i].is_none())
    }

    /// Resolves argv to a command id, or the error Redis gives for an unknown command,
    /// an unknown subcommand or a wrong argument count.
    pub fn resolve(&self, argv: &[Bytes]) -> Result<usize, CmdError> {
        // A subcommand's full name (`config|get`) is not something a client can call.
        let Some(id) = self.find(&argv[0]).filter(|_| !argv[0].contains(&b'|')) else {
            return Err(unknown_command(argv));
        };
        let cmd = self.commands[id];
        if cmd.subcommands.is_empty() {
            return check_arity(cmd, argv, &self.fullnames[id]).map(|_| id);
        }
        if argv.len() < 2 {
            // A bare container runs its own handler where its arity allows (COMMAND).
            return check_arity(cmd, argv, &self.fullnames[id]).map(|_| id);
        }
        let full = [cmd.name.as_bytes(), b"|", &argv[1]].concat();
        match self.find(&full) {
            Some(sid) if cmd.has(flags::OPAQUE) => {
                check_arity(self.commands[sid], argv, &self.fullnames[sid])
                    .map(|_| sid)
                    .map_err(|_| wrong_subcommand_args(argv))
            }
            Some(sid) => check_arity(self.commands[sid], argv, &self.fullnames[sid]).map(|_| sid),
            // One command to Redis: ACL checks it before its handler refuses the argument.
            None if cmd.has(flags::OPAQUE) => Ok(id),
            None => Err(CmdError::Custom(format!(
                "ERR unknown subcommand '{}'. Try {} HELP.",
                truncate(&argv[1], 128),
                cmd.name.to_ascii_uppercase()
            ))),
        }
    }
}

/// Names kept per thread by `Table::find`, and their longest spelling.
const RECENT_SLOTS: usize = 8;
const RECENT_NAME: usize = 24;

struct Recent {
    /// The `serial` of the table the id belongs to.
    table: u64,
    name: [u8; RECENT_NAME],
    len: u8,
    id: usize,
}

thread_local! {
    static RECENT: std::cell::RefCell<Vec<Recent>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn check_arity(cmd: &Command, argv: &[Bytes], fullname: &str) -> Result<(), CmdError> {
    let argc = argv.len() as i32;
    if (cmd.arity > 0 && argc != cmd.arity) || argc < -cmd.arity {
        return Err(CmdError::arity(fullname));
    }
    Ok(())
}

/// Redis's answer to a subcommand it parses itself given the wrong number of arguments:
/// "ERR unknown subcommand or wrong number of arguments for 'x'. Try DEBUG HELP."
pub fn wrong_subcommand_args(argv: &[Bytes]) -> CmdError {
    CmdError::Custom(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        truncate(argv.get(1).map_or(&[][..], |a| a), 128),
        String::from_utf8_lossy(&argv[0]).to_ascii_uppercase()
    ))
}

fn truncate(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

/// Redis 7's text: "ERR unknown command 'foo', with args beginning with: 'a' 'b' ".
fn unknown_command(argv: &[Bytes]) -> CmdError {
    let mut args = String::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push_str(&format!("'{}' ", truncate(a, room)));
    }
    CmdError::Custom(format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        truncate(&argv[0], 128)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-thread cache of `find` answers as the table does: for any spelling, after
    /// other names pushed it out, and never with another table's ids.
    #[test]
    fn recent_names_resolve_as_the_table_does() {
        let all = Table::new(crate::commands::FAMILIES);
        let some = Table::new(&crate::commands::FAMILIES[1..]);
        let names: Vec<&str> = all.fullnames.iter().take(40).map(String::as_str).collect();
        for round in 0..3 {
            for n in &names {
                for spelled in [n.to_string(), n.to_ascii_uppercase()] {
                    assert_eq!(
                        all.find(spelled.as_bytes()),
                        all.lookup(n),
                        "{spelled}, round {round}"
                    );
                    assert_eq!(
                        some.find(spelled.as_bytes()),
                        some.lookup(n),
                        "{spelled} in the smaller table"
                    );
                }
            }
        }
        assert_eq!(all.find(b"nosuchcommand"), None);
    }

    /// A fixed key shape finds what walking the command's keys finds, for every command
    /// and any number of arguments; and most commands have one (the ACL check's fast way).
    #[test]
    fn key_shapes_find_the_keys_the_walk_finds() {
        let t = Table::new(crate::commands::FAMILIES);
        let mut fixed = 0;
        for (id, cmd) in t.commands.iter().enumerate() {
            let shape = t.key_shape(id);
            if shape == KeyShape::Walk {
                continue;
            }
            fixed += 1;
            // Plain arguments, and words that options are made of (SET's GET).
            for word in ["", "get", "store", "keys", "2"] {
                for argc in 1..8 {
                    let argv: Vec<Bytes> = (0..argc)
                        .map(|i| match word {
                            "" => Bytes::from(format!("a{i}")),
                            w => Bytes::from(w),
                        })
                        .collect();
                    // A finder may name a place past the end (callers look it up).
                    let mut found = cmd.keys_and_flags(&argv);
                    found.retain(|k| k.pos < argc);
                    let what = format!("{} {:?}", t.fullnames[id], argv);
                    match shape {
                        KeyShape::One(k) if k.pos < argc => assert_eq!(found, vec![k], "{what}"),
                        KeyShape::OneVarying(pos) if pos < argc => {
                            let at: Vec<usize> = found.iter().map(|k| k.pos).collect();
                            assert_eq!(at, vec![pos], "{what}");
                        }
                        _ => assert_eq!(found, vec![], "{what}"),
                    }
                }
            }
        }
        assert!(
            fixed * 2 > t.commands.len(),
            "{fixed} of {}",
            t.commands.len()
        );
    }
}
