//! The replication stream and its backlog, as Redis 7 keeps them: every byte sent to
//! replicas, numbered from the start of the replication history (`master_repl_offset` is
//! the number of the last one), kept in blocks while the backlog (`repl-backlog-size`) or
//! a replica still reading it needs them.
//!
//! On a primary the backlog is an effect sink: each block of effects becomes Redis's
//! stream, a SELECT when the database changes, a block of several commands (EXEC, a
//! script, a command that wrote several effects) wrapped in MULTI ... EXEC. On a replica it
//! holds the primary's stream itself, byte for byte, as the link applies it
//! ([`set_applying`]), so that its replicas and a promotion keep the primary's offsets.

use crate::exec::effects::Audience;
use crate::exec::sink::{Block, EffectSink};
use bytes::Bytes;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use tokio::sync::Notify;

/// Bytes per block: blocks fill up completely before the next starts, so the block of an
/// offset is found by division.
const BLOCK: usize = 16 * 1024;

/// What the backlog does with the blocks of effects it is given.
pub mod mode {
    /// Not a sink (no backlog, or detached).
    pub const OFF: u8 = 0;
    /// A primary: effects become the stream.
    pub const EFFECTS: u8 = 1;
    /// A replica: the primary's bytes being applied become the stream.
    pub const RAW: u8 = 2;
}

pub struct Backlog {
    buf: Mutex<Buf>,
    /// `master_repl_offset`, readable without the lock.
    end: AtomicU64,
    mode: AtomicU8,
    /// A sender waits for bytes past the end (see `wait_beyond`).
    waiting: AtomicBool,
    notify: Notify,
}

struct Buf {
    /// Redis's `repl_backlog != NULL`.
    active: bool,
    blocks: VecDeque<Vec<u8>>,
    /// Offset of the first byte kept (`end + 1` when none is).
    start: u64,
    end: u64,
    /// `repl-backlog-size`: history kept whoever reads it.
    size: u64,
    /// The database the stream's commands apply to (Redis's `slaveseldb`), -1 when the
    /// next command must be preceded by a SELECT.
    db: i64,
    /// The next offset each replica sender will read: their bytes are kept until read.
    pins: Vec<(u64, u64)>,
}

/// What a read found.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes were copied.
    Data(usize),
    /// Nothing past the end yet.
    Empty,
    /// The offset is no longer (or not yet) kept.
    Gone,
}

impl Default for Backlog {
    fn default() -> Self {
        Backlog {
            buf: Mutex::new(Buf {
                active: false,
                blocks: VecDeque::new(),
                start: 1,
                end: 0,
                size: 1 << 20,
                db: -1,
                pins: Vec::new(),
            }),
            end: AtomicU64::new(0),
            mode: AtomicU8::new(mode::OFF),
            waiting: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }
}

/// The shape of the backlog for INFO.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub active: bool,
    pub first_byte: u64,
    pub histlen: u64,
    pub size: u64,
}

impl Backlog {
    /// `master_repl_offset`.
    pub fn end(&self) -> u64 {
        self.end.load(Ordering::Acquire)
    }

    pub fn mode(&self) -> u8 {
        self.mode.load(Ordering::SeqCst)
    }

    pub fn set_mode(&self, m: u8) {
        self.mode.store(m, Ordering::SeqCst);
    }

    pub fn is_active(&self) -> bool {
        self.buf.lock().active
    }

    pub fn shape(&self) -> Shape {
        let b = self.buf.lock();
        Shape {
            active: b.active,
            first_byte: if b.active { b.start } else { 0 },
            histlen: if b.active { b.end + 1 - b.start } else { 0 },
            size: b.size,
        }
    }

    /// Memory the stream's blocks take (Redis's `repl_buffer_mem`: the backlog's history
    /// and what replicas have still to read share them) and `repl-backlog-size`.
    pub fn memory(&self) -> (u64, u64) {
        let b = self.buf.lock();
        let held: usize = b.blocks.iter().map(Vec::capacity).sum();
        (held as u64, b.size)
    }

    /// `repl-backlog-size`.
    pub fn set_size(&self, size: u64) {
        let mut b = self.buf.lock();
        b.size = size.max(1);
        b.trim();
    }

    /// Starts keeping history from the next byte (Redis's createReplicationBacklog).
    pub fn create(&self) {
        let mut b = self.buf.lock();
        b.active = true;
        b.blocks.clear();
        b.start = b.end + 1;
    }

    /// Drops the history and stops keeping it (the offset stays where it is).
    pub fn free(&self) {
        let mut b = self.buf.lock();
        b.active = false;
        b.blocks.clear();
        b.start = b.end + 1;
        b.pins.clear();
    }

    /// A replica after a full sync: the history starts again after `offset`, in database
    /// `db` (-1: unknown, the next SELECT says).
    pub fn restart_at(&self, offset: u64, db: i64) {
        let mut b = self.buf.lock();
        b.active = true;
        b.blocks.clear();
        b.end = offset;
        b.start = offset + 1;
        b.db = db;
        b.pins.clear();
        self.end.store(offset, Ordering::SeqCst);
    }

    /// The next command must be preceded by a SELECT (after a full sync's cut, or a
    /// promotion).
    pub fn forget_db(&self) {
        self.buf.lock().db = -1;
    }

    /// Runs `f` with (offset, stream database) under the backlog's lock, and pins the
    /// bytes after the offset for each of `pin_ids` (a full sync's cut).
    pub fn cut(&self, pin_ids: &[u64], forget_db: bool) -> (u64, i64) {
        let mut b = self.buf.lock();
        let at = (b.end, b.db);
        let next = b.end + 1;
        for &id in pin_ids {
            b.pins.retain(|p| p.0 != id);
            b.pins.push((id, next));
        }
        if forget_db {
            b.db = -1;
        }
        at
    }

    /// Whether bytes from `offset` on can be sent (a partial resync).
    pub fn holds(&self, offset: u64) -> bool {
        let b = self.buf.lock();
        b.active && offset >= b.start && offset <= b.end + 1
    }

    /// Keeps the bytes from `next` on until replica `id` has read them.
    pub fn pin(&self, id: u64, next: u64) {
        let mut b = self.buf.lock();
        b.pins.retain(|p| p.0 != id);
        b.pins.push((id, next));
    }

    pub fn unpin(&self, id: u64) {
        let mut b = self.buf.lock();
        b.pins.retain(|p| p.0 != id);
        b.trim();
    }

    /// Copies up to `max` bytes from offset `from` into `out`, and moves the pin of
    /// replica `id` past them.
    pub fn read(&self, id: u64, from: u64, max: usize, out: &mut Vec<u8>) -> Read {
        let mut b = self.buf.lock();
        if !b.active || from < b.start {
            return Read::Gone;
        }
        if from > b.end {
            return Read::Empty;
        }
        let mut off = (from - b.start) as usize;
        let mut left = max.min((b.end + 1 - from) as usize);
        let mut copied = 0;
        while left > 0 {
            let Some(block) = b.blocks.get(off / BLOCK) else {
                break;
            };
            let piece = block.get(off % BLOCK..).unwrap_or(&[]);
            let n = piece.len().min(left);
            if n == 0 {
                break;
            }
            out.extend_from_slice(&piece[..n]);
            copied += n;
            off += n;
            left -= n;
        }
        let next = from + copied as u64;
        if let Some(p) = b.pins.iter_mut().find(|p| p.0 == id) {
            p.1 = next;
        }
        b.trim();
        Read::Data(copied)
    }

    /// Bytes each pinned replica has still to read, by id.
    pub fn pending(&self) -> Vec<(u64, u64)> {
        let b = self.buf.lock();
        b.pins
            .iter()
            .map(|&(id, next)| (id, (b.end + 1).saturating_sub(next)))
            .collect()
    }

    /// Appends bytes of the stream as they are (a replica's primary's stream, PING). The
    /// SELECTs among them move the stream's database, which a full sync's RDB names.
    pub fn feed(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let selected = last_select(bytes);
        let mut b = self.buf.lock();
        if !b.active {
            return;
        }
        b.put(bytes);
        if let Some(db) = selected {
            b.db = db;
        }
        self.published(&b);
    }

    /// Appends one command that concerns no database (PING, REPLCONF GETACK): no SELECT.
    pub fn feed_command(&self, argv: &[&[u8]]) {
        let mut cmd = Vec::new();
        crate::exec::effects::encode(&mut cmd, argv);
        // No client's write: WAIT's offset (`fed_here`) stays where it was.
        let before = FED.get();
        self.feed(&cmd);
        FED.set(before);
    }

    /// Appends a block of effects recorded in database `db`, as Redis propagates it;
    /// `single`: the writer knows it is one command, not a SELECT.
    fn feed_effects(&self, db: usize, block: &[u8], single: bool) {
        // Most blocks are one command that is not a SELECT: no list of records for them,
        // and for a plain write's record not even the parse that finds that out.
        if single || matches!(record(block, 0), Some((to, None)) if to == block.len()) {
            let mut b = self.buf.lock();
            if b.active {
                b.select(db as i64);
                b.put(block);
                self.published(&b);
            }
            return;
        }
        let ops = records(block, db as i64);
        let mut b = self.buf.lock();
        if !b.active {
            return;
        }
        match ops.as_slice() {
            [] => return,
            [op] => {
                b.select(op.db);
                b.put(&block[op.from..op.to]);
            }
            [first, ..] => {
                b.select(first.db);
                b.put(b"*1\r\n$5\r\nMULTI\r\n");
                for op in &ops {
                    b.select(op.db);
                    b.put(&block[op.from..op.to]);
                }
                b.put(b"*1\r\n$4\r\nEXEC\r\n");
            }
        }
        self.published(&b);
    }

    /// After an append, under the lock: the new end becomes visible, senders waiting for
    /// it wake. `waiting` is read and written only under the lock, so these need no fence:
    /// a full one here, on every write, cost the primary more than the append itself.
    fn published(&self, b: &Buf) {
        self.end.store(b.end, Ordering::Release);
        FED.set(b.end);
        if self.waiting.load(Ordering::Relaxed) {
            self.waiting.store(false, Ordering::Relaxed);
            self.notify.notify_waiters();
        }
    }

    /// Resolves once the stream holds offset `offset` (or at once if it does).
    pub async fn wait_beyond(&self, offset: u64) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let _b = self.buf.lock();
                if self.end.load(Ordering::Relaxed) >= offset {
                    return;
                }
                self.waiting.store(true, Ordering::Relaxed);
            }
            notified.await;
        }
    }
}

impl Buf {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        // A write's record nearly always fits in the block being filled.
        if let Some(last) = self.blocks.back_mut() {
            if BLOCK - last.len() >= bytes.len() {
                last.extend_from_slice(bytes);
                self.end += bytes.len() as u64;
                return;
            }
        }
        self.put_across(bytes);
    }

    /// `put` of bytes that start a block: history past `size` is dropped a block at a
    /// time, so it is checked here.
    #[cold]
    fn put_across(&mut self, mut bytes: &[u8]) {
        self.end += bytes.len() as u64;
        while !bytes.is_empty() {
            if self.blocks.back().is_none_or(|b| b.len() >= BLOCK) {
                self.blocks.push_back(Vec::with_capacity(BLOCK));
            }
            let Some(last) = self.blocks.back_mut() else {
                return;
            };
            let n = (BLOCK - last.len()).min(bytes.len());
            last.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if self.blocks.len() > 1 {
            self.trim();
        }
    }

    fn select(&mut self, db: i64) {
        if self.db != db && db >= 0 {
            let mut cmd = Vec::with_capacity(24);
            crate::exec::effects::encode(
                &mut cmd,
                &[b"SELECT".as_slice(), db.to_string().as_bytes()],
            );
            self.put(&cmd);
            self.db = db;
        }
    }

    /// Drops whole blocks nobody needs: past `size` of history, and read by every replica.
    fn trim(&mut self) {
        while self.blocks.len() > 1 {
            let first = self.blocks.front().map_or(0, |b| b.len()) as u64;
            let hist = self.end + 1 - self.start;
            let after = self.start + first;
            if hist - first < self.size || self.pins.iter().any(|p| p.1 < after) {
                break;
            }
            self.blocks.pop_front();
            self.start = after;
        }
    }
}

/// One command of a block of effects.
struct Op {
    from: usize,
    to: usize,
    db: i64,
}

/// The commands of a block recorded in database `db`, with the database each applies
/// to: the SELECTs a block holds (`effects::Group`) move the following ones.
fn records(block: &[u8], mut db: i64) -> Vec<Op> {
    let mut ops = Vec::with_capacity(1);
    let mut at = 0;
    while at < block.len() {
        let Some((to, select)) = record(block, at) else {
            // Never from our own encoder; keep the bytes rather than lose them.
            ops.push(Op {
                from: at,
                to: block.len(),
                db,
            });
            break;
        };
        match select {
            Some(n) => db = n,
            None => ops.push(Op { from: at, to, db }),
        }
        at = to;
    }
    ops
}

/// The database the last SELECT among the commands of `bytes` names, if any.
fn last_select(bytes: &[u8]) -> Option<i64> {
    let mut at = 0;
    let mut db = None;
    while at < bytes.len() {
        let (to, select) = record(bytes, at)?;
        db = select.or(db);
        at = to;
    }
    db
}

/// The end of the RESP command at `at`, and its database if it is a SELECT.
fn record(b: &[u8], at: usize) -> Option<(usize, Option<i64>)> {
    let (n, mut p) = header(b, at, b'*')?;
    let mut select = None;
    for i in 0..n {
        let (len, start) = header(b, p, b'$')?;
        let end = start.checked_add(len as usize)?;
        let arg = b.get(start..end)?;
        if i == 0 && n == 2 && arg.eq_ignore_ascii_case(b"SELECT") {
            select = Some(-1);
        } else if i == 1 && select.is_some() {
            select = crate::exec::command::parse_i64(arg).filter(|d| *d >= 0);
        }
        p = end.checked_add(2)?;
    }
    if p > b.len() {
        return None;
    }
    Some((p, select.filter(|d| *d >= 0)))
}

/// A `<prefix><n>\r\n` line at `at`: n and where the line ends.
fn header(b: &[u8], at: usize, prefix: u8) -> Option<(u64, usize)> {
    if *b.get(at)? != prefix {
        return None;
    }
    // Digits by hand: this runs for every argument of every write a primary or a
    // replica streams, and a str parse (with its UTF-8 check) cost more than the rest.
    let mut n: u64 = 0;
    let mut p = at + 1;
    loop {
        match *b.get(p)? {
            c @ b'0'..=b'9' => n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?,
            b'\r' if p > at + 1 => return Some((n, p + 2)),
            _ => return None,
        }
        p += 1;
    }
}

thread_local! {
    /// The stream's offset after the last append made on this thread (`fed_here`).
    static FED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The primary's bytes of what the link on this thread is applying (see `set_applying`).
    static APPLYING: RefCell<Option<Bytes>> = const { RefCell::new(None) };
    /// A block of effects, encoded before the backlog's lock is taken.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The stream's offset after the last append this thread made: a command that moved it
/// wrote to the stream, up to there (WAIT's offset).
pub fn fed_here() -> u64 {
    FED.get()
}

/// A replica's link, before it runs a command of its primary's stream: these are its
/// bytes (with the MULTI block it ends, if any). A write records them into the backlog
/// while it holds its shards, so that a full sync's cut finds every write either in its
/// data or after its offset; the link feeds what no write took (`take_applying`).
pub fn set_applying(bytes: Bytes) {
    APPLYING.with_borrow_mut(|a| *a = Some(bytes));
}

/// What no write took of `set_applying`'s bytes.
pub fn take_applying() -> Option<Bytes> {
    APPLYING.with_borrow_mut(|a| a.take())
}

impl EffectSink for Backlog {
    fn append(
        &self,
        db: u32,
        _epoch: u64,
        block: Block<'_>,
        write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> u64 {
        match (self.mode(), block) {
            // A plain write's request goes into the stream as it came, with no copy between.
            (mode::EFFECTS, Block::Ready(bytes)) => self.feed_effects(db as usize, bytes, true),
            (mode::EFFECTS, _) => SCRATCH.with_borrow_mut(|buf| {
                buf.clear();
                write(buf);
                if !buf.is_empty() {
                    self.feed_effects(db as usize, buf, matches!(block, Block::One));
                }
                if buf.capacity() > 1 << 20 {
                    *buf = Vec::new();
                }
            }),
            (mode::RAW, _) => {
                if let Some(raw) = take_applying() {
                    self.feed(&raw);
                }
            }
            _ => {}
        }
        0
    }

    fn audience(&self) -> Audience {
        Audience::Replicas
    }

    fn write_error(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Vec<u8> {
        let mut v = Vec::new();
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        crate::exec::effects::encode(&mut v, &a);
        v
    }

    fn all(b: &Backlog) -> Vec<u8> {
        let mut out = Vec::new();
        let s = b.shape();
        b.read(0, s.first_byte, usize::MAX, &mut out);
        out
    }

    /// A block of one command gets a SELECT only when the database changes; a block of
    /// several is wrapped in MULTI/EXEC, the SELECT before MULTI, as Redis 7 writes them.
    #[test]
    fn blocks_become_redis_stream() {
        let b = Backlog::default();
        b.create();
        // Known to be one command, and found to be by parsing: the same stream.
        b.feed_effects(0, &cmd(&["SET", "a", "1"]), true);
        b.feed_effects(0, &cmd(&["SET", "b", "2"]), false);
        let mut group = cmd(&["SET", "c", "3"]);
        group.extend(cmd(&["SELECT", "2"]));
        group.extend(cmd(&["DEL", "d"]));
        b.feed_effects(1, &group, false);
        let mut want = cmd(&["SELECT", "0"]);
        want.extend(cmd(&["SET", "a", "1"]));
        want.extend(cmd(&["SET", "b", "2"]));
        want.extend(cmd(&["SELECT", "1"]));
        want.extend(cmd(&["MULTI"]));
        want.extend(cmd(&["SET", "c", "3"]));
        want.extend(cmd(&["SELECT", "2"]));
        want.extend(cmd(&["DEL", "d"]));
        want.extend(cmd(&["EXEC"]));
        assert_eq!(
            String::from_utf8_lossy(&all(&b)),
            String::from_utf8_lossy(&want)
        );
        assert_eq!(b.end(), want.len() as u64);
        // A group whose first record selects another database starts there.
        let mut g2 = cmd(&["SELECT", "5"]);
        g2.extend(cmd(&["SET", "x", "1"]));
        let before = all(&b).len();
        b.feed_effects(2, &g2, false);
        let mut tail = cmd(&["SELECT", "5"]);
        tail.extend(cmd(&["SET", "x", "1"]));
        assert_eq!(&all(&b)[before..], &tail[..]);
    }

    /// Length lines: digits up to CR; anything else (no digits, a sign, a stray byte, an
    /// overflow, a missing CR) is not a record.
    #[test]
    fn header_lines_are_read_strictly() {
        assert_eq!(header(b"*3\r\n", 0, b'*'), Some((3, 4)));
        assert_eq!(header(b"xx$12345\r\n", 2, b'$'), Some((12345, 10)));
        for bad in [
            &b"*\r\n"[..],
            b"*-1\r\n",
            b"*+1\r\n",
            b"*1x\r\n",
            b"*12",
            b"$3\r\n",
            b"*99999999999999999999\r\n",
        ] {
            assert_eq!(
                header(bad, 0, b'*'),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// History beyond the configured size is dropped a block at a time, unless a reader
    /// has not read it yet; offsets keep counting every byte.
    #[test]
    fn trims_to_size_but_keeps_what_readers_need() {
        let b = Backlog::default();
        b.set_size(BLOCK as u64);
        b.create();
        b.pin(7, 1);
        let chunk = vec![b'x'; 1000];
        for _ in 0..100 {
            b.feed(&chunk);
        }
        assert_eq!(b.end(), 100_000);
        assert_eq!(b.shape().first_byte, 1, "the reader at 1 keeps everything");
        let mut out = Vec::new();
        assert_eq!(b.read(7, 1, 60_000, &mut out), Read::Data(60_000));
        let s = b.shape();
        assert!(s.first_byte > 1 && s.first_byte <= 60_001, "{s:?}");
        assert!(s.histlen >= BLOCK as u64);
        b.unpin(7);
        let s = b.shape();
        assert!(
            s.histlen < 2 * BLOCK as u64 && s.histlen >= BLOCK as u64,
            "{s:?}"
        );
        assert_eq!(s.first_byte + s.histlen - 1, 100_000);
        assert!(!b.holds(1));
        assert!(b.holds(100_001) && b.holds(s.first_byte));
        out.clear();
        assert_eq!(b.read(8, s.first_byte - 1, 10, &mut out), Read::Gone);
        assert_eq!(b.read(8, 100_001, 10, &mut out), Read::Empty);
    }
}
