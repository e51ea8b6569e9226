//! Snapshot files: `<dir>/snapshot-<epoch>.snap`, written as `.tmp`, fsynced and renamed.
//! Header, then CRC-framed chunks of entries, then a footer (see docs/persistence.md).

use crate::capped::{Capped, MAX_WRITE};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use strata_engine::{Encodings, EntryRef, Value};

use crate::format::{fsync_dir, u32_at, u64_at};
use crate::recovery::{journal_end, Position, RecoveryError};
pub use crate::snapshot_decode::{decode_entries, entry_kind, same_entry};
use crate::snapshot_decode::{decode_head, decode_value, skip_value, Cur};

const MAGIC: &[u8; 4] = b"STRS";
/// Version 2 added the place flags (F_COLD, F_CLEAN), version 3 the function libraries'
/// record (T_FUNCTIONS); older files load as ever.
const VERSION: u32 = 3;
/// magic 4, version 4, epoch 8, replay segment 8, replay offset 8, created ms 8, crc 4.
const HEADER_LEN: usize = 44;
/// marker (0) 4, entries 8, file length 8, crc 4.
const FOOTER_LEN: usize = 24;
/// Entries are grouped into chunks of about this size.
const CHUNK_TARGET: usize = 256 << 10;

pub(crate) const T_STR: u8 = 0;
pub(crate) const T_HASH: u8 = 1;
pub(crate) const T_LIST: u8 = 2;
pub(crate) const T_SET: u8 = 3;
pub(crate) const T_ZSET: u8 = 4;
pub(crate) const T_STREAM: u8 = 5;
/// Not an entry: the function libraries' code, in one record (database 0, empty key), not
/// counted among the entries.
pub(crate) const T_FUNCTIONS: u8 = 6;
pub(crate) const F_EXPIRE: u8 = 0x80;
pub(crate) const F_COLD: u8 = 0x40;
pub(crate) const F_CLEAN: u8 = 0x20;

/// Where an entry was when a server with tiering captured it. Only a restart that keeps
/// the tier (docs/tiering.md, "Restarts") reads this; to every other reader an entry is
/// its key and value, wherever it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In RAM only.
    Ram,
    /// In the tier's store only.
    Cold,
    /// In RAM, with the same value in the tier's store.
    Clean,
}

/// Records `place` on the entry encoded at `buf[start..]` (by `encode_entry`,
/// `encode_value` or `put_str`).
pub fn mark_place(buf: &mut [u8], start: usize, place: Place) {
    if let Some(tag) = buf.get_mut(start) {
        *tag |= match place {
            Place::Ram => 0,
            Place::Cold => F_COLD,
            Place::Clean => F_CLEAN,
        };
    }
}

/// A snapshot's header facts, plus its size and (after a full load) entry count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotMeta {
    pub path: PathBuf,
    pub epoch: u64,
    /// Replay the journal from here after loading.
    pub replay_from: Position,
    pub created_ms: u64,
    pub entries: u64,
    pub bytes: u64,
    /// The function libraries' code, when the file holds them (written from version 3
    /// on; known after a full load only, not from [`snapshot_meta`]).
    pub functions: Option<Vec<Vec<u8>>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub path: PathBuf,
    pub bytes: u64,
    pub entries: u64,
}

pub fn snapshot_path(dir: &Path, epoch: u64) -> PathBuf {
    dir.join(format!("snapshot-{epoch:020}.snap"))
}

/// The epoch in `snapshot-<epoch>.snap` (or `.snap.tmp` when `tmp`).
fn parse_name(name: &str, tmp: bool) -> Option<u64> {
    let rest = name.strip_prefix("snapshot-")?;
    let digits = if tmp {
        rest.strip_suffix(".snap.tmp")?
    } else {
        rest.strip_suffix(".snap")?
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

pub(crate) fn put_bytes(buf: &mut Vec<u8>, b: &[u8]) {
    put_varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

fn put_head(buf: &mut Vec<u8>, tag: u8, db: u32, key: &[u8], expire_at: Option<u64>) {
    buf.push(tag | if expire_at.is_some() { F_EXPIRE } else { 0 });
    put_varint(buf, u64::from(db));
    if let Some(at) = expire_at {
        buf.extend_from_slice(&at.to_le_bytes());
    }
    put_bytes(buf, key);
}

/// The collection types an entry may be encoded as item by item (see [`put_collection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    /// Items: field, value, field, value...; `len` counts pairs.
    Hash,
    List,
    Set,
    /// Items: member then [`put_score`]; `len` counts members.
    ZSet,
}

/// Encodes a string entry.
pub fn put_str(buf: &mut Vec<u8>, db: u32, key: &[u8], expire_at: Option<u64>, s: &[u8]) {
    put_head(buf, T_STR, db, key, expire_at);
    put_bytes(buf, s);
}

/// Starts a collection entry of `len` elements; the caller then adds each with
/// [`put_item`] (and a sorted set's scores with [`put_score`]), exactly `len` of them.
pub fn put_collection(
    buf: &mut Vec<u8>,
    kind: Collection,
    db: u32,
    key: &[u8],
    expire_at: Option<u64>,
    len: usize,
) {
    let tag = match kind {
        Collection::Hash => T_HASH,
        Collection::List => T_LIST,
        Collection::Set => T_SET,
        Collection::ZSet => T_ZSET,
    };
    put_head(buf, tag, db, key, expire_at);
    put_varint(buf, len as u64);
}

/// One member, field or value of a collection started with [`put_collection`].
pub fn put_item(buf: &mut Vec<u8>, b: &[u8]) {
    put_bytes(buf, b);
}

/// A sorted set member's score, after its [`put_item`].
pub fn put_score(buf: &mut Vec<u8>, score: f64) {
    buf.extend_from_slice(&score.to_bits().to_le_bytes());
}

/// Encodes one entry (for `SnapshotWriter::raw_chunk`: a server may encode a shard under its
/// lock and write the bytes outside it).
pub fn encode_entry(
    buf: &mut Vec<u8>,
    db: u32,
    key: &[u8],
    expire_at: Option<u64>,
    value: EntryRef<'_>,
) {
    if let Some(s) = value.as_str() {
        put_str(buf, db, key, expire_at, s);
    } else if let Some(v) = value.value() {
        encode_value(buf, db, key, expire_at, v);
    }
}

/// Encodes one entry from a general-form value.
pub fn encode_value(buf: &mut Vec<u8>, db: u32, key: &[u8], expire_at: Option<u64>, v: &Value) {
    let mut ib = [0u8; 20];
    let head = |buf: &mut Vec<u8>, kind, len| put_collection(buf, kind, db, key, expire_at, len);
    match v {
        Value::Str(s) => put_str(buf, db, key, expire_at, s),
        Value::Hash(h) => {
            head(buf, Collection::Hash, h.len());
            for (f, v) in h.iter() {
                put_item(buf, f);
                put_item(buf, v);
            }
        }
        Value::List(l) => {
            head(buf, Collection::List, l.len());
            for e in l.iter() {
                put_item(buf, e.bytes(&mut ib));
            }
        }
        Value::Set(s) => {
            head(buf, Collection::Set, s.len());
            for e in s.iter() {
                put_item(buf, e.bytes(&mut ib));
            }
        }
        Value::ZSet(z) => {
            head(buf, Collection::ZSet, z.len());
            z.for_range(0, z.len(), false, |m, s| {
                put_item(buf, m);
                put_score(buf, s);
            });
        }
        Value::Stream(s) => {
            put_head(buf, T_STREAM, db, key, expire_at);
            crate::snapshot_stream::encode_stream(buf, s);
        }
    }
}

/// Writes a snapshot to `<dir>/snapshot-<epoch>.snap.tmp`; `finish` publishes it.
pub struct SnapshotWriter {
    out: BufWriter<Capped<File>>,
    tmp: PathBuf,
    path: PathBuf,
    dir: PathBuf,
    chunk: Vec<u8>,
    entries: u64,
    bytes: u64,
    done: bool,
}

impl SnapshotWriter {
    /// Starts `snapshot-<epoch>.snap` (as a `.tmp` until `finish`). `replay_from` is where
    /// recovery resumes the journal after loading it: the snapshot's marker block when a
    /// journal is open. `Position::default()` says no journal is open: the snapshot then
    /// holds every block on disk, and it records the journal's end ([`journal_end`]),
    /// where a journal opened later goes on, so that recovery replays exactly those blocks.
    pub fn create(dir: &Path, epoch: u64, replay_from: Position) -> io::Result<SnapshotWriter> {
        std::fs::create_dir_all(dir)?;
        let replay_from = if replay_from == Position::default() {
            journal_end(dir)?
        } else {
            replay_from
        };
        let path = snapshot_path(dir, epoch);
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = File::create(&tmp)?;
        let mut out = BufWriter::with_capacity(MAX_WRITE, Capped(file));
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&epoch.to_le_bytes());
        h.extend_from_slice(&replay_from.segment.to_le_bytes());
        h.extend_from_slice(&replay_from.offset.to_le_bytes());
        h.extend_from_slice(&created.to_le_bytes());
        let crc = crc32fast::hash(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        out.write_all(&h)?;
        Ok(SnapshotWriter {
            out,
            tmp,
            path,
            dir: dir.to_path_buf(),
            chunk: Vec::with_capacity(CHUNK_TARGET + 4096),
            entries: 0,
            bytes: HEADER_LEN as u64,
            done: false,
        })
    }

    pub fn entry(
        &mut self,
        db: u32,
        key: &[u8],
        expire_at: Option<u64>,
        value: EntryRef<'_>,
    ) -> io::Result<()> {
        encode_entry(&mut self.chunk, db, key, expire_at, value);
        self.entries += 1;
        self.maybe_flush()
    }

    /// Records the function libraries' code (once, before the entries): a load gives it
    /// back in [`SnapshotMeta::functions`].
    pub fn functions<'a>(
        &mut self,
        codes: impl ExactSizeIterator<Item = &'a [u8]>,
    ) -> io::Result<()> {
        put_head(&mut self.chunk, T_FUNCTIONS, 0, b"", None);
        put_varint(&mut self.chunk, codes.len() as u64);
        for code in codes {
            put_bytes(&mut self.chunk, code);
        }
        self.maybe_flush()
    }

    /// Like `entry` for a value already out of the table.
    pub fn value(
        &mut self,
        db: u32,
        key: &[u8],
        expire_at: Option<u64>,
        value: &Value,
    ) -> io::Result<()> {
        encode_value(&mut self.chunk, db, key, expire_at, value);
        self.entries += 1;
        self.maybe_flush()
    }

    /// Writes `entries` entries pre-encoded with `encode_entry`/`encode_value` (whole
    /// entries only).
    pub fn raw_chunk(&mut self, bytes: &[u8], entries: u64) -> io::Result<()> {
        self.flush_chunk()?;
        self.write_chunk(bytes)?;
        self.entries += entries;
        Ok(())
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.chunk.len() >= CHUNK_TARGET {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> io::Result<()> {
        if !self.chunk.is_empty() {
            let chunk = std::mem::take(&mut self.chunk);
            let r = self.write_chunk(&chunk);
            self.chunk = chunk;
            self.chunk.clear();
            r?;
        }
        Ok(())
    }

    fn write_chunk(&mut self, body: &[u8]) -> io::Result<()> {
        if body.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(body.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "snapshot chunk over 4 GiB")
        })?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&crc32fast::hash(body).to_le_bytes())?;
        self.out.write_all(body)?;
        self.bytes += 8 + body.len() as u64;
        Ok(())
    }

    /// Writes the footer, fsyncs, renames into place and fsyncs the directory.
    pub fn finish(mut self) -> io::Result<SnapshotInfo> {
        self.flush_chunk()?;
        let total = self.bytes + FOOTER_LEN as u64;
        let mut f = Vec::with_capacity(FOOTER_LEN);
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&self.entries.to_le_bytes());
        f.extend_from_slice(&total.to_le_bytes());
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_le_bytes());
        self.out.write_all(&f)?;
        self.out.flush()?;
        self.out.get_ref().0.sync_all()?;
        std::fs::rename(&self.tmp, &self.path)?;
        fsync_dir(&self.dir)?;
        self.done = true;
        Ok(SnapshotInfo {
            path: self.path.clone(),
            bytes: total,
            entries: self.entries,
        })
    }
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        if !self.done {
            // An abandoned snapshot must not linger as a half-written file.
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

struct Header {
    epoch: u64,
    replay_from: Position,
    created_ms: u64,
}

fn decode_header(h: &[u8]) -> Result<Header, &'static str> {
    if h.len() < HEADER_LEN {
        return Err("short header");
    }
    if &h[0..4] != MAGIC {
        return Err("bad magic");
    }
    if u32_at(h, 40) != crc32fast::hash(&h[0..40]) {
        return Err("header crc mismatch");
    }
    if !(1..=VERSION).contains(&u32_at(h, 4)) {
        return Err("unsupported version");
    }
    Ok(Header {
        epoch: u64_at(h, 8),
        replay_from: Position {
            segment: u64_at(h, 16),
            offset: u64_at(h, 24),
        },
        created_ms: u64_at(h, 32),
    })
}

/// Footer check: returns the entry count.
fn decode_footer(f: &[u8], file_len: u64) -> Result<u64, &'static str> {
    if f.len() < FOOTER_LEN || u32_at(f, 0) != 0 {
        return Err("missing footer (truncated file?)");
    }
    if u32_at(f, 20) != crc32fast::hash(&f[0..20]) {
        return Err("footer crc mismatch");
    }
    if u64_at(f, 12) != file_len {
        return Err("footer length does not match the file size (truncated file?)");
    }
    Ok(u64_at(f, 4))
}

fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> RecoveryError {
    RecoveryError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

/// Reads header and footer only: enough to know the file is complete (chunk CRCs are
/// checked when it is loaded).
pub fn snapshot_meta(path: &Path) -> Result<SnapshotMeta, RecoveryError> {
    let io_err = |err| RecoveryError::Io {
        path: path.to_path_buf(),
        err,
    };
    use std::os::unix::fs::FileExt;
    let f = File::open(path).map_err(io_err)?;
    let len = f.metadata().map_err(io_err)?.len();
    if len < (HEADER_LEN + FOOTER_LEN) as u64 {
        return Err(corrupt(path, 0, "file too short (truncated?)"));
    }
    let mut h = [0u8; HEADER_LEN];
    f.read_exact_at(&mut h, 0).map_err(io_err)?;
    let hd = decode_header(&h).map_err(|r| corrupt(path, 0, r))?;
    let mut ft = [0u8; FOOTER_LEN];
    let foff = len - FOOTER_LEN as u64;
    f.read_exact_at(&mut ft, foff).map_err(io_err)?;
    let entries = decode_footer(&ft, len).map_err(|r| corrupt(path, foff, r))?;
    Ok(SnapshotMeta {
        path: path.to_path_buf(),
        epoch: hd.epoch,
        replay_from: hd.replay_from,
        created_ms: hd.created_ms,
        entries,
        bytes: len,
        functions: None,
    })
}

/// Snapshot files in `dir` as (epoch, path), newest first.
pub fn list_snapshots(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for ent in rd {
        let ent = ent?;
        if let Some(ep) = ent.file_name().to_str().and_then(|n| parse_name(n, false)) {
            out.push((ep, ent.path()));
        }
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok(out)
}

/// The newest complete snapshot (valid header and footer); damaged newer ones are skipped
/// with a warning, `*.tmp` files ignored.
pub fn latest_snapshot(dir: &Path) -> io::Result<Option<SnapshotMeta>> {
    for (_, path) in list_snapshots(dir)? {
        match snapshot_meta(&path) {
            Ok(m) => return Ok(Some(m)),
            Err(RecoveryError::Io { err, .. }) => return Err(err),
            Err(e) => tracing::warn!("skipping snapshot: {e}"),
        }
    }
    Ok(None)
}

/// Removes `.snap.tmp` files: snapshots a crash interrupted. Call it holding the directory
/// lock (no snapshot can be in progress then). Returns how many were removed.
pub fn remove_unfinished_snapshots(dir: &Path) -> io::Result<usize> {
    let mut removed = 0;
    for ent in std::fs::read_dir(dir)? {
        let ent = ent?;
        if ent
            .file_name()
            .to_str()
            .and_then(|n| parse_name(n, true))
            .is_some()
        {
            std::fs::remove_file(ent.path())?;
            removed += 1;
        }
    }
    if removed > 0 {
        fsync_dir(dir)?;
    }
    Ok(removed)
}

/// Removes snapshots (and leftover `.tmp` files) older than `keep_epoch`.
pub fn remove_older_snapshots(dir: &Path, keep_epoch: u64) -> io::Result<()> {
    let mut removed = false;
    for ent in std::fs::read_dir(dir)? {
        let ent = ent?;
        let Some(name) = ent.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let ep = parse_name(&name, false).or_else(|| parse_name(&name, true));
        if ep.is_some_and(|e| e < keep_epoch) {
            std::fs::remove_file(ent.path())?;
            removed = true;
        }
    }
    if removed {
        fsync_dir(dir)?;
    }
    Ok(())
}

/// Loads a snapshot, calling `f(db, key, expire_at, value)` per entry. Every chunk CRC, the
/// footer and the entry count are checked; damage is a `Corrupt` error naming the offset.
pub fn load_snapshot(
    path: &Path,
    enc: &Encodings,
    mut f: impl FnMut(u32, Vec<u8>, Option<u64>, Value),
) -> Result<SnapshotMeta, RecoveryError> {
    load_snapshot_placed(
        path,
        enc,
        |_| Want::Value,
        |_, db, key, exp, value| {
            if let Loaded::Value(v) = value {
                f(db, key, exp, v)
            }
        },
    )
}

/// What `load_snapshot_placed` gives of an entry's value, by where the entry was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// The value, built.
    Value,
    /// Nothing: the value is checked and skipped.
    Skip,
    /// The entry's bytes as the file holds them (checked, not built), for comparing with
    /// another copy of the entry (`same_entry`).
    Raw,
}

/// An entry's value as `load_snapshot_placed` gives it.
pub enum Loaded<'a> {
    Value(Value),
    Skipped,
    Raw(&'a [u8]),
}

/// `load_snapshot`, telling `f` where each entry was when it was captured, and giving of
/// each value what `wanted` asks for its place: a start that keeps the tier needs only the
/// cold entries' keys, one that checks the tier after a crash their bytes.
pub fn load_snapshot_placed(
    path: &Path,
    enc: &Encodings,
    wanted: impl Fn(Place) -> Want,
    f: impl FnMut(Place, u32, Vec<u8>, Option<u64>, Loaded<'_>),
) -> Result<SnapshotMeta, RecoveryError> {
    let io_err = |err| RecoveryError::Io {
        path: path.to_path_buf(),
        err,
    };
    let file = File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    load_from(
        BufReader::with_capacity(4 << 20, file),
        len,
        path,
        enc,
        wanted,
        f,
    )
}

/// `load_snapshot` over bytes in memory (the fuzz target uses it).
pub fn load_snapshot_bytes(
    bytes: &[u8],
    enc: &Encodings,
    mut f: impl FnMut(u32, Vec<u8>, Option<u64>, Value),
) -> Result<SnapshotMeta, RecoveryError> {
    load_from(
        bytes,
        bytes.len() as u64,
        Path::new("<memory>.snap"),
        enc,
        |_| Want::Value,
        |_, db, key, exp, value| {
            if let Loaded::Value(v) = value {
                f(db, key, exp, v)
            }
        },
    )
}

fn load_from(
    mut r: impl Read,
    len: u64,
    path: &Path,
    enc: &Encodings,
    wanted: impl Fn(Place) -> Want,
    mut f: impl FnMut(Place, u32, Vec<u8>, Option<u64>, Loaded<'_>),
) -> Result<SnapshotMeta, RecoveryError> {
    let mut off: u64 = 0;
    let read = |r: &mut dyn Read, buf: &mut [u8], off: &mut u64, what: &str| {
        r.read_exact(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                corrupt(path, *off, format!("truncated file: {what} cut short"))
            } else {
                RecoveryError::Io {
                    path: path.to_path_buf(),
                    err: e,
                }
            }
        })?;
        *off += buf.len() as u64;
        Ok::<(), RecoveryError>(())
    };
    let mut h = [0u8; HEADER_LEN];
    read(&mut r, &mut h, &mut off, "header")?;
    let hd = decode_header(&h).map_err(|e| corrupt(path, 0, e))?;
    let mut entries: u64 = 0;
    let mut functions = None;
    let mut body = Vec::new();
    loop {
        let at = off;
        let mut fr = [0u8; 4];
        read(&mut r, &mut fr, &mut off, "chunk header")?;
        let clen = u32::from_le_bytes(fr);
        if clen == 0 {
            let mut ft = [0u8; FOOTER_LEN];
            ft[0..4].copy_from_slice(&fr);
            read(&mut r, &mut ft[4..], &mut off, "footer")?;
            let count = decode_footer(&ft, len).map_err(|e| corrupt(path, at, e))?;
            if off != len {
                return Err(corrupt(path, off, "data after the footer"));
            }
            if count != entries {
                return Err(corrupt(
                    path,
                    at,
                    format!("footer says {count} entries but {entries} were read"),
                ));
            }
            return Ok(SnapshotMeta {
                path: path.to_path_buf(),
                epoch: hd.epoch,
                replay_from: hd.replay_from,
                created_ms: hd.created_ms,
                entries,
                bytes: len,
                functions,
            });
        }
        let mut cr = [0u8; 4];
        read(&mut r, &mut cr, &mut off, "chunk header")?;
        // Bound the allocation by what the file can hold, so a damaged length cannot ask
        // for gigabytes.
        if u64::from(clen) > len.saturating_sub(off) {
            return Err(corrupt(
                path,
                at,
                "chunk extends past end of file (truncated?)",
            ));
        }
        body.resize(clen as usize, 0);
        let body_at = off;
        read(&mut r, &mut body, &mut off, "chunk")?;
        if crc32fast::hash(&body) != u32::from_le_bytes(cr) {
            return Err(corrupt(path, at, "chunk crc mismatch"));
        }
        let mut c = Cur { b: &body, p: 0 };
        while c.p < body.len() {
            let start = c.p;
            let eat = body_at + start as u64;
            let head = decode_head(&mut c).map_err(|r| corrupt(path, eat, r))?;
            if head.kind == T_FUNCTIONS {
                functions = Some(decode_functions(&mut c).map_err(|r| corrupt(path, eat, r))?);
                continue;
            }
            let want = wanted(head.place);
            let value = if want == Want::Value {
                Loaded::Value(
                    decode_value(&mut c, head.kind, enc).map_err(|r| corrupt(path, eat, r))?,
                )
            } else {
                skip_value(&mut c, head.kind).map_err(|r| corrupt(path, eat, r))?;
                match want {
                    Want::Raw => Loaded::Raw(&body[start..c.p]),
                    _ => Loaded::Skipped,
                }
            };
            entries += 1;
            f(head.place, head.db, head.key, head.expire_at, value);
        }
    }
}

/// The code of each library in a T_FUNCTIONS record.
fn decode_functions(c: &mut Cur<'_>) -> Result<Vec<Vec<u8>>, &'static str> {
    let n = c.count()?;
    let mut codes = Vec::with_capacity(n);
    for _ in 0..n {
        codes.push(c.bytes()?.to_vec());
    }
    Ok(codes)
}
