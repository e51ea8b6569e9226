//! What a write command leaves in the journal, and which shards a command must hold while it
//! runs so that its journal record lands in the same order as its change in memory.
//!
//! The journal records effects, not requests (DESIGN.md, "Durability"): by default a write
//! is logged as its own argv, and a command whose outcome depends on the clock or on
//! chance (EXPIRE, SET EX, SPOP...) rewrites its record with `Ctx::rewrite` into the
//! deterministic commands that reproduce it.

use crate::exec::command::{Command, Ctx};
use crate::server::Server;
use bytes::Bytes;
use strata_engine::ShardId;

/// A write command's journal record.
#[derive(Debug, Default)]
pub enum Effect {
    /// The command's own argv (deterministic commands).
    #[default]
    Argv,
    /// Nothing to log (the command changed nothing).
    Skip,
    /// These commands instead, in order.
    Commands(Vec<Vec<Bytes>>),
}

impl Effect {
    /// Appends this effect's records for a command that ran with `argv`.
    pub fn encode(&self, buf: &mut Vec<u8>, argv: &[Bytes]) {
        match self {
            Effect::Argv => encode(buf, argv),
            Effect::Skip => {}
            Effect::Commands(cmds) => cmds.iter().for_each(|c| encode(buf, c)),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Effect::Argv => false,
            Effect::Skip => true,
            Effect::Commands(cmds) => cmds.is_empty(),
        }
    }
}

impl Ctx<'_> {
    /// Logs `argv` instead of this command's argv.
    pub fn rewrite1(&mut self, argv: Vec<Bytes>) {
        self.effect = Effect::Commands(vec![argv]);
    }

    /// Logs nothing for this command (it changed nothing).
    pub fn no_effect(&mut self) {
        self.effect = Effect::Skip;
    }
}

/// An argv for `Ctx::rewrite1` built from byte strings.
pub fn cmd(args: &[&[u8]]) -> Vec<Bytes> {
    args.iter().map(|a| Bytes::copy_from_slice(a)).collect()
}

/// Appends `argv` as a RESP array of bulk strings.
pub fn encode<A: AsRef<[u8]>>(buf: &mut Vec<u8>, argv: &[A]) {
    // One reservation for the whole record (a header takes at most 23 bytes), so the
    // appends below only store.
    buf.reserve(argv.iter().map(|a| a.as_ref().len() + 25).sum::<usize>() + 23);
    header(buf, b'*', argv.len());
    for a in argv {
        let a = a.as_ref();
        header(buf, b'$', a.len());
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

/// Whether `frame` is the canonical RESP request `argv` was sliced from, whole: then it is
/// byte for byte what `encode(argv)` writes. Checked by where the arguments lie in it, so
/// a frame of another request, or a part of this one's arguments, never passes.
pub fn is_frame_of(frame: &[u8], argv: &[Bytes]) -> bool {
    let (Some(first), Some(last)) = (argv.first(), argv.last()) else {
        return false;
    };
    let start = frame.as_ptr() as usize;
    let count = header_len(argv.len());
    let encoded = count
        + argv
            .iter()
            .map(|a| header_len(a.len()) + a.len() + 2)
            .sum::<usize>();
    frame.len() == encoded
        && first.as_ptr() as usize == start + count + header_len(first.len())
        && last.as_ptr() as usize + last.len() + 2 == start + frame.len()
}

/// Bytes of the header line `header` writes for `n`.
fn header_len(n: usize) -> usize {
    match n {
        0..=9 => 4,
        10..=99 => 5,
        100..=999 => 6,
        _ => 4 + n.ilog10() as usize,
    }
}

fn header(buf: &mut Vec<u8>, prefix: u8, n: usize) {
    strata_resp::push_header(buf, prefix, n as i64);
}

/// The records of one journal block: a plain command's effect, or everything an EXEC or a
/// script wrote (one block, so the group is all-or-nothing on disk). The block starts in
/// database `db`; a later record in another database is preceded by a SELECT.
#[derive(Debug)]
pub struct Group {
    pub db: usize,
    cur_db: usize,
    pub buf: Vec<u8>,
}

impl Group {
    pub fn new(db: usize) -> Group {
        Group {
            db,
            cur_db: db,
            buf: Vec::new(),
        }
    }

    /// Empties the group for reuse, keeping its buffer.
    pub fn reset(&mut self, db: usize) {
        self.db = db;
        self.cur_db = db;
        self.buf.clear();
    }

    pub fn push<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A]) {
        self.select(db);
        encode(&mut self.buf, argv);
    }

    /// Switches the records that follow to database `db`.
    fn select(&mut self, db: usize) {
        if db != self.cur_db {
            encode(
                &mut self.buf,
                &[b"SELECT".to_vec(), db.to_string().into_bytes()],
            );
            self.cur_db = db;
        }
    }

    /// Adds the effect of a command that ran in database `db` with `argv`.
    pub fn add(&mut self, db: usize, argv: &[Bytes], effect: Effect) {
        if !effect.is_empty() {
            self.select(db);
            effect.encode(&mut self.buf, argv);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Adds a nested group's records (an EXEC inside a script).
    pub fn append(&mut self, inner: Group) {
        if inner.is_empty() {
            return;
        }
        self.select(inner.db);
        self.buf.extend_from_slice(&inner.buf);
        self.cur_db = inner.cur_db;
    }
}

/// The shards a command must hold for its whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockPlan {
    /// One shard: most writes name one key (no list to allocate).
    One(ShardId),
    /// These shards (possibly none).
    Shards(Vec<ShardId>),
    /// Every shard of every database: commands that touch keys they do not name (FLUSHALL,
    /// KEYS, SORT ... BY, MOVE to another database...).
    World,
}

/// Commands without key arguments that still read or write the keyspace, and commands
/// whose keys reach beyond their declared positions (another database, patterns).
fn touches_unnamed_keys(name: &str) -> bool {
    matches!(
        name,
        "flushall"
            | "flushdb"
            | "swapdb"
            | "keys"
            | "scan"
            | "randomkey"
            | "dbsize"
            | "move"
            | "copy"
            | "sort"
            | "sort_ro"
            | "debug"
    )
}

/// The shard of each key `cmd` names in `argv`.
fn for_each_shard(
    server: &Server,
    db: usize,
    cmd: &Command,
    argv: &[Bytes],
    mut f: impl FnMut(ShardId),
) {
    cmd.for_each_key_position(argv, |i| {
        if let Some(k) = argv.get(i) {
            f(server.keyspace.shard_of(db, k));
        }
    });
}

impl LockPlan {
    /// What `cmd` (named `name`) with `argv` run in database `db` must hold.
    pub fn of(server: &Server, db: usize, cmd: &Command, name: &str, argv: &[Bytes]) -> LockPlan {
        if touches_unnamed_keys(name) {
            return LockPlan::World;
        }
        let (mut first, mut more) = (None, Vec::new());
        for_each_shard(server, db, cmd, argv, |id| match first {
            None => first = Some(id),
            Some(_) => more.push(id),
        });
        match first {
            Some(id) if more.is_empty() => LockPlan::One(id),
            Some(id) => {
                more.push(id); // the session sorts them
                LockPlan::Shards(more)
            }
            None => LockPlan::Shards(more),
        }
    }

    /// The shards named, or None for the whole keyspace.
    pub fn shard_ids(self) -> Option<Vec<ShardId>> {
        match self {
            LockPlan::One(id) => Some(vec![id]),
            LockPlan::Shards(ids) => Some(ids),
            LockPlan::World => None,
        }
    }

    /// Whether this thread's session already holds all that [`LockPlan::of`] would name:
    /// a script's call on a key it declared, checked without building the plan.
    pub fn held(server: &Server, db: usize, cmd: &Command, name: &str, argv: &[Bytes]) -> bool {
        if touches_unnamed_keys(name) {
            return false;
        }
        let mut held = true;
        for_each_shard(server, db, cmd, argv, |id| {
            held = held && strata_engine::Keyspace::session_holds(&[id]);
        });
        held
    }

    /// Adds `other`'s shards to this plan.
    pub fn merge(&mut self, other: LockPlan) {
        // Either side World makes the merge World.
        let mine = std::mem::replace(self, LockPlan::World);
        if let (Some(mut a), Some(b)) = (mine.shard_ids(), other.shard_ids()) {
            a.extend(b);
            *self = LockPlan::Shards(a);
        }
    }

    /// Locks what the plan names.
    pub fn open<'k>(self, server: &'k Server) -> strata_engine::Session<'k> {
        match self {
            LockPlan::World => server.keyspace.session_all(),
            LockPlan::One(id) => server.keyspace.session1(id),
            LockPlan::Shards(ids) => server.keyspace.session(ids),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use strata_resp::{Limits, Parser};

    /// A request's canonical frame is its record exactly when it is the whole of what its
    /// argv was parsed from: never for part of the arguments, or another request's frame.
    #[test]
    fn a_frame_is_the_record_only_of_its_own_whole_argv() {
        let long = vec![b'x'; 1234];
        for args in [
            vec![b"SET".as_slice(), b"key", &long],
            vec![b"PING".as_slice()],
            vec![b"MSET".as_slice(), b"", b"123456789", b"0123456789", b"v"],
        ] {
            let mut wire = Vec::new();
            encode(&mut wire, &args);
            let mut input = BytesMut::from(&wire[..]);
            let mut p = Parser::new(Limits::default());
            let argv = p.parse(&mut input).ok().flatten().unwrap_or_default();
            let frame = p.take_frame().unwrap_or_default();
            assert_eq!(&frame[..], &wire[..]);
            assert!(is_frame_of(&frame, &argv));
            assert!(!is_frame_of(&frame, &argv[1..]));
            assert!(!is_frame_of(&frame, &argv[..argv.len() - 1]));
            assert!(
                !is_frame_of(&wire, &argv),
                "a copy of the bytes is not the frame"
            );
            let copies: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
            assert!(!is_frame_of(&frame, &copies));
        }
    }

    #[test]
    fn merged_plans_hold_both_sides_and_world_wins() {
        let mut p = LockPlan::One((0, 3));
        p.merge(LockPlan::One((0, 1)));
        assert_eq!(p, LockPlan::Shards(vec![(0, 3), (0, 1)]));
        p.merge(LockPlan::Shards(vec![(1, 2)]));
        assert_eq!(p.clone().shard_ids(), Some(vec![(0, 3), (0, 1), (1, 2)]));
        p.merge(LockPlan::World);
        assert_eq!(p, LockPlan::World);
        p.merge(LockPlan::One((0, 0)));
        assert_eq!(p, LockPlan::World);
    }

    /// What `encode` writes is what the journal's replay parses back: the same argv, for
    /// every length form (one digit, several, empty).
    #[test]
    fn encoded_records_parse_back_to_their_argv() {
        let long = vec![b'x'; 1234];
        let argv: Vec<&[u8]> = vec![b"SET", b"", b"123456789", b"0123456789", &long];
        let mut buf = Vec::new();
        encode(&mut buf, &argv);
        encode(&mut buf, &argv[..1]);
        let mut input = BytesMut::from(&buf[..]);
        let mut p = Parser::new(Limits::default());
        for want in [&argv[..], &argv[..1]] {
            let got = p.parse(&mut input).ok().flatten().unwrap_or_default();
            let got: Vec<&[u8]> = got.iter().map(|b| b.as_ref()).collect();
            assert_eq!(got, want);
        }
        assert!(input.is_empty());
    }
}
