//! What a write command leaves for the effect sinks (the journal): its record, as RESP.
//!
//! The journal records effects, not requests (docs/persistence.md): by default a write
//! is logged as its own argv, and a command whose outcome depends on the clock or on
//! chance (EXPIRE, SET EX, SPOP...) rewrites its record with `Ctx::rewrite1` into the
//! deterministic commands that reproduce it.

use bytes::Bytes;
use std::ops::Range;

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
    /// These commands, each for the sinks of one audience only (see [`Audience`]). A
    /// command that writes nothing records an effect only so (PUBLISH).
    Targeted(Vec<(Audience, Vec<Bytes>)>),
}

/// Which sinks a record is for. Redis propagates some commands to its replicas and not
/// to its AOF (PUBLISH), and Strata journals some records its replicas are not sent, to
/// keep the replication stream Redis's (a consumer group's read counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    All,
    /// The journal only.
    Journal,
    /// The replication stream only.
    Replicas,
}

impl Audience {
    /// Whether a record for `self` goes to a sink serving `sink`.
    fn reaches(self, sink: Audience) -> bool {
        self == Audience::All || self == sink
    }
}

impl Effect {
    /// Appends this effect's records for a command that ran with `argv` (every audience's).
    pub fn encode(&self, buf: &mut Vec<u8>, argv: &[Bytes]) {
        match self {
            Effect::Argv => encode(buf, argv),
            Effect::Skip => {}
            Effect::Commands(cmds) => cmds.iter().for_each(|c| encode(buf, c)),
            Effect::Targeted(cmds) => cmds.iter().for_each(|(_, c)| encode(buf, c)),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Effect::Argv => false,
            Effect::Skip => true,
            Effect::Commands(cmds) => cmds.is_empty(),
            Effect::Targeted(cmds) => cmds.is_empty(),
        }
    }

    /// Whether the handler chose its records and their audiences (`Ctx::rewrite_targeted`,
    /// `Ctx::replicate_only`): the only records a command that writes nothing makes
    /// (PUBLISH's for the replicas, PFCOUNT's stored count for every sink).
    pub fn is_targeted(&self) -> bool {
        matches!(self, Effect::Targeted(cmds) if !cmds.is_empty())
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
    buf: Vec<u8>,
    /// The records of `buf` for one audience only, by byte range, in order (rarely any).
    only: Vec<(Range<usize>, Audience)>,
}

impl Group {
    pub fn new(db: usize) -> Group {
        Group {
            db,
            cur_db: db,
            buf: Vec::new(),
            only: Vec::new(),
        }
    }

    /// Empties the group for reuse, keeping its buffer.
    pub fn reset(&mut self, db: usize) {
        self.db = db;
        self.cur_db = db;
        self.buf.clear();
        self.only.clear();
    }

    /// Appends the records for sinks serving `sink` to `out`.
    pub fn write_for(&self, sink: Audience, out: &mut Vec<u8>) {
        let mut at = 0;
        for (range, audience) in &self.only {
            if !audience.reaches(sink) {
                out.extend_from_slice(&self.buf[at..range.start]);
                at = range.end;
            }
        }
        out.extend_from_slice(&self.buf[at..]);
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
        if effect.is_empty() {
            return;
        }
        self.select(db);
        match effect {
            Effect::Targeted(cmds) => {
                for (audience, cmd) in cmds {
                    let start = self.buf.len();
                    encode(&mut self.buf, &cmd);
                    if audience != Audience::All {
                        self.only.push((start..self.buf.len(), audience));
                    }
                }
            }
            effect => effect.encode(&mut self.buf, argv),
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
        let base = self.buf.len();
        self.buf.extend_from_slice(&inner.buf);
        self.only.extend(
            inner
                .only
                .into_iter()
                .map(|(r, a)| (r.start + base..r.end + base, a)),
        );
        self.cur_db = inner.cur_db;
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
