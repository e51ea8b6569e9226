//! Where the effects of writes go. The request path records each write's effect (or an
//! EXEC's or script's group of them) into every registered [`EffectSink`] while the write
//! still holds its shards, so each sink sees the writes to a key in the order memory saw
//! them. The journal is the first sink; a replication backlog is the next. Handlers never
//! know who consumes effects.

use crate::exec::effects::{is_frame_of, Audience, Effect, Group};
use bytes::Bytes;
use parking_lot::RwLock;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A consumer of effects.
pub trait EffectSink: Send + Sync {
    /// Appends one block of records for database `db`, tagged with the snapshot epoch the
    /// write saw (`services::snapshot`). `write` appends the block's records, RESP commands,
    /// to the buffer it is given; a block it leaves empty is dropped. `block` says what
    /// the writer knows of the block (a sink need not parse it to learn that), and gives
    /// its bytes when they are ready-made. Returns the position a reply covering this
    /// write must wait for under `appendfsync always` (0: none).
    fn append(
        &self,
        db: u32,
        epoch: u64,
        block: Block<'_>,
        write: &mut dyn FnMut(&mut Vec<u8>),
    ) -> u64;

    /// Which records this sink takes (the journal, or the replication stream).
    fn audience(&self) -> Audience;

    /// The error that keeps it from taking writes now (a journal that cannot be written):
    /// writes are refused while there is one (`services::disk_refusal`).
    fn write_error(&self) -> Option<String>;
}

/// What a block of records is, as far as its writer knows.
#[derive(Clone, Copy, Debug)]
pub enum Block<'a> {
    /// One command other than SELECT, these bytes: a plain write's request as it came,
    /// which `write` would only copy.
    Ready(&'a [u8]),
    /// One command other than SELECT.
    One,
    /// Any records, SELECTs among them (an EXEC's, a script's).
    Many,
}

impl Block<'_> {
    /// Appends the block to `buf`: the ready bytes, else what `write` appends.
    pub fn write_to(self, buf: &mut Vec<u8>, write: &mut dyn FnMut(&mut Vec<u8>)) {
        match self {
            Block::Ready(bytes) => buf.extend_from_slice(bytes),
            Block::One | Block::Many => write(buf),
        }
    }
}

type List = Arc<[Arc<dyn EffectSink>]>;

/// The registered sinks. Writers read the list through a per-thread copy that is renewed
/// when the list changes, so a write touches no cache line another core writes.
pub struct Sinks {
    list: RwLock<List>,
    /// Changes with every registration; drawn from one counter for all `Sinks`, so a
    /// thread's copy is never mistaken for another server's list (tests run several).
    version: AtomicU64,
    count: AtomicUsize,
}

static VERSIONS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static COPY: RefCell<(u64, List)> = RefCell::new((0, Arc::new([])));
}

impl Default for Sinks {
    fn default() -> Sinks {
        Sinks {
            list: RwLock::new(Arc::new([])),
            version: AtomicU64::new(VERSIONS.fetch_add(1, Ordering::Relaxed)),
            count: AtomicUsize::new(0),
        }
    }
}

impl Sinks {
    /// Registers a sink: every write recorded after this reaches it.
    pub fn add(&self, sink: Arc<dyn EffectSink>) {
        let mut list = self.list.write();
        let mut v: Vec<_> = list.iter().cloned().collect();
        v.push(sink);
        self.publish(&mut list, v);
    }

    /// Unregisters a sink (compared by address).
    pub fn remove(&self, sink: &Arc<dyn EffectSink>) {
        let mut list = self.list.write();
        let v: Vec<_> = list
            .iter()
            .filter(|s| !Arc::ptr_eq(s, sink))
            .cloned()
            .collect();
        self.publish(&mut list, v);
    }

    fn publish(&self, list: &mut List, v: Vec<Arc<dyn EffectSink>>) {
        self.count.store(v.len(), Ordering::SeqCst);
        *list = v.into();
        self.version
            .store(VERSIONS.fetch_add(1, Ordering::Relaxed), Ordering::Release);
    }

    /// True when some sink consumes effects (writes must then be ordered and recorded).
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    fn with<R>(&self, f: impl FnOnce(&[Arc<dyn EffectSink>]) -> R) -> R {
        let version = self.version.load(Ordering::Acquire);
        COPY.with_borrow_mut(|c| {
            if c.0 != version {
                *c = (version, self.list.read().clone());
            }
            f(&c.1)
        })
    }

    /// Appends one block to every sink, each given the records for its audience; returns
    /// the highest position to wait for.
    fn append(
        &self,
        db: usize,
        epoch: u64,
        block: Block<'_>,
        write: &mut dyn FnMut(Audience, &mut Vec<u8>),
    ) -> u64 {
        self.with(|sinks| {
            sinks
                .iter()
                .map(|s| {
                    let audience = s.audience();
                    s.append(db as u32, epoch, block, &mut |buf| write(audience, buf))
                })
                .max()
                .unwrap_or(0)
        })
    }

    /// Records one command's effect as a block of its own. `frame` is the request as it
    /// arrived, if canonical RESP: a write logged as its own argv is then copied, not
    /// encoded again (`Block::Ready`).
    pub fn record_command(
        &self,
        db: usize,
        epoch: u64,
        argv: &[Bytes],
        frame: Option<&[u8]>,
        effect: Effect,
    ) -> u64 {
        if let Effect::Targeted(_) = effect {
            // A group keeps each record's audience.
            let mut group = Group::new(db);
            group.add(db, argv, effect);
            return self.record_group(&group, epoch);
        }
        let one = match &effect {
            Effect::Argv => is_plain(argv),
            Effect::Commands(cmds) => matches!(cmds.as_slice(), [one] if is_plain(one)),
            _ => false,
        };
        let frame = frame.filter(|f| matches!(effect, Effect::Argv) && is_frame_of(f, argv));
        let block = match (frame, one) {
            (Some(f), true) => Block::Ready(f),
            (None, true) => Block::One,
            _ => Block::Many,
        };
        self.append(db, epoch, block, &mut |_, buf| effect.encode(buf, argv))
    }

    /// Records an EXEC's or a script's effects as one block (all-or-nothing on replay).
    pub fn record_group(&self, group: &Group, epoch: u64) -> u64 {
        if group.is_empty() {
            return 0;
        }
        self.append(group.db, epoch, Block::Many, &mut |audience, buf| {
            group.write_for(audience, buf)
        })
    }

    /// A key the server removed by itself (it expired, or was evicted), recorded as a DEL
    /// (UNLINK if its value is freed `lazy`ly), so that a replay (which expires and evicts
    /// nothing) and a replica end with the same keys, as Redis propagates these deletions.
    pub fn record_removed(&self, db: usize, epoch: u64, key: &[u8], lazy: bool) {
        if self.any() {
            let mut g = Group::new(db);
            let cmd: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
            g.push(db, &[cmd, key]);
            self.record_group(&g, epoch);
        }
    }

    /// The first sink's reason to refuse writes, if any.
    #[inline]
    pub fn write_error(&self) -> Option<String> {
        if !self.any() {
            return None;
        }
        self.with(|sinks| sinks.iter().find_map(|s| s.write_error()))
    }
}

/// Whether `argv` is a command other than SELECT (which moves a stream's database).
fn is_plain(argv: &[Bytes]) -> bool {
    argv.first()
        .is_some_and(|name| !name.eq_ignore_ascii_case(b"select"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::effects::encode;
    use parking_lot::Mutex;

    /// A sink that keeps what it was given: each block's shape (as a word) and bytes.
    #[derive(Default)]
    struct Kept(Mutex<Vec<(&'static str, Vec<u8>)>>);

    impl EffectSink for Kept {
        fn append(
            &self,
            _db: u32,
            _epoch: u64,
            block: Block<'_>,
            write: &mut dyn FnMut(&mut Vec<u8>),
        ) -> u64 {
            let kind = match block {
                Block::Ready(_) => "ready",
                Block::One => "one",
                Block::Many => "many",
            };
            let mut buf = Vec::new();
            block.write_to(&mut buf, write);
            self.0.lock().push((kind, buf));
            0
        }

        fn audience(&self) -> Audience {
            Audience::All
        }

        fn write_error(&self) -> Option<String> {
            None
        }
    }

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    fn resp(words: &[&str]) -> Vec<u8> {
        let mut v = Vec::new();
        encode(&mut v, words);
        v
    }

    /// The shape a sink is told matches the block it gets: the backlog trusts "one
    /// command, not a SELECT" and skips its own parse (a wrong word would send a group
    /// without its MULTI/EXEC, or miss a SELECT).
    #[test]
    fn blocks_are_told_their_shape() {
        let sinks = Sinks::default();
        let kept = Arc::new(Kept::default());
        sinks.add(kept.clone());
        // A request as it arrived: its arguments lie in its frame.
        let frame = Bytes::from(resp(&["SET", "k", "v"]));
        let argv = vec![frame.slice(8..11), frame.slice(17..18), frame.slice(24..25)];
        assert_eq!(argv, args(&["SET", "k", "v"]));
        sinks.record_command(0, 0, &argv, Some(&frame), Effect::Argv);
        // The same arguments with a frame they were not cut from.
        sinks.record_command(0, 0, &args(&["SET", "k", "v"]), Some(&frame), Effect::Argv);
        sinks.record_command(0, 0, &args(&["SET", "k", "v"]), None, Effect::Argv);
        let one = Effect::Commands(vec![args(&["PEXPIREAT", "k", "1"])]);
        sinks.record_command(0, 0, &args(&["EXPIRE", "k", "1"]), None, one);
        let two = Effect::Commands(vec![args(&["SET", "a", "1"]), args(&["SET", "b", "2"])]);
        sinks.record_command(0, 0, &args(&["X"]), None, two);
        let select = Effect::Commands(vec![args(&["SELECT", "1"])]);
        sinks.record_command(0, 0, &args(&["X"]), None, select);
        let mut both = resp(&["SET", "a", "1"]);
        both.extend(resp(&["SET", "b", "2"]));
        let want = vec![
            ("ready", resp(&["SET", "k", "v"])),
            ("one", resp(&["SET", "k", "v"])),
            ("one", resp(&["SET", "k", "v"])),
            ("one", resp(&["PEXPIREAT", "k", "1"])),
            ("many", both),
            ("many", resp(&["SELECT", "1"])),
        ];
        assert_eq!(*kept.0.lock(), want);
    }
}
