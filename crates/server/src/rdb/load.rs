//! RDB data into a server: one key ([`load_key`]), a function library, or every item of
//! a file with progress reports and a summary ([`Loader`]), its keys into the keyspace or
//! straight into a snapshot file (`to_snapshot.rs`).

use super::convert::rdb_to_value;
use super::lanes::Lanes;
use super::meta::loaded_stamp;
use crate::server::Server;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::ops::Deref;
use std::time::{Duration, Instant};
use strata_engine::{clock, Encodings, Keyspace, Locked, Owned, Ttl, Value};
use strata_rdb::{DecodeSpace, Entry, Item, RdbValue, Reader};

/// What to do with keys that cannot simply be added.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// Drop keys whose expiry has passed (a primary loading a file does; a replica keeps
    /// them and waits for its primary's DEL).
    pub skip_expired: bool,
    /// Replace a key that exists already (otherwise that is an error naming it, as for a
    /// file that holds a key twice) and a function library of the same name.
    pub replace: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            skip_expired: true,
            replace: false,
        }
    }
}

/// What [`load_key`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loaded {
    Stored,
    /// Its expiry had passed: dropped (`skip_expired`).
    Expired,
}

/// Why loading stopped.
#[derive(Debug)]
pub enum LoadError {
    /// The file is malformed or unreadable (what and where).
    Rdb(strata_rdb::Error),
    /// A key of a database this server does not have.
    NoSuchDb { db: u64, databases: usize },
    /// A key present already (twice in the file, or in the keyspace).
    Duplicate { db: u64, key: Bytes },
    /// Two keys of the file with the same 128-bit hash, found by `strata import`'s
    /// streamed load, which keeps no key names: a key twice, almost surely (see
    /// `to_snapshot.rs`).
    HashTwice,
    /// A value the engine cannot hold.
    BadValue {
        db: u64,
        key: Bytes,
        why: &'static str,
    },
    /// Module auxiliary data: only that module could interpret it.
    ModuleAux { module: String },
    /// A function library that does not load (the reason is Redis's error text).
    Function(String),
    /// A thread storing the keys stopped before the end (a bug: it says nothing more).
    Stopped,
    /// The file could not be opened, or what was loaded not written (an import's snapshot).
    Io(String),
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Rdb(e) => write!(f, "{e}"),
            LoadError::NoSuchDb { db, databases } => write!(
                f,
                "the file has keys in database {db}, but this server has {databases} \
                 databases (0 to {}): raise `databases`",
                databases - 1
            ),
            LoadError::Duplicate { db, key } => {
                write!(f, "key '{}' of database {db} is there twice", show(key))
            }
            LoadError::BadValue { db, key, why } => {
                write!(f, "key '{}' of database {db}: {why}", show(key))
            }
            LoadError::ModuleAux { module } => write!(
                f,
                "the file holds auxiliary data of module '{module}', which Strata cannot load \
                 (it has no modules)"
            ),
            LoadError::Function(e) => write!(f, "function library: {e}"),
            LoadError::Stopped => write!(f, "a loading thread stopped before the end"),
            LoadError::HashTwice => write!(f, "two keys of the file have the same hash"),
            LoadError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<String> for LoadError {
    fn from(e: String) -> Self {
        LoadError::Io(e)
    }
}

impl From<strata_rdb::Error> for LoadError {
    fn from(e: strata_rdb::Error) -> Self {
        LoadError::Rdb(e)
    }
}

/// Where key `e` goes as of `now_ms` (Unix ms) in a server of `databases` databases: its
/// database and expiry, or None when its expiry has passed and `opts` drops such keys.
pub(super) fn placement(
    e: &Entry,
    now_ms: u64,
    opts: &LoadOptions,
    databases: usize,
) -> Result<Option<(usize, Option<u64>)>, LoadError> {
    let expire_at = match e.meta.expire_ms {
        None => None,
        Some(t) if opts.skip_expired && t <= now_ms as i64 => return Ok(None),
        Some(t) => Some(u64::try_from(t).unwrap_or(0)),
    };
    let db = usize::try_from(e.db)
        .ok()
        .filter(|&d| d < databases)
        .ok_or(LoadError::NoSuchDb {
            db: e.db,
            databases,
        })?;
    Ok(Some((db, expire_at)))
}

/// Stores one key of a file or payload into `ks` as of `now_ms` (Unix ms): its value
/// built in the engine's form under `ks.encodings`, its expiry, and its idle time or LFU
/// counter when the file has the one the policy keeps.
pub fn load_key(
    ks: &Keyspace,
    e: &Entry,
    now_ms: u64,
    opts: &LoadOptions,
) -> Result<Loaded, LoadError> {
    load_key_in(ks, e, now_ms, opts, &mut DecodeSpace::default())
}

/// [`load_key`], decoding a packed value (`Reader::set_defer_packed`) in `space`.
fn load_key_in(
    ks: &Keyspace,
    e: &Entry,
    now_ms: u64,
    opts: &LoadOptions,
    space: &mut DecodeSpace,
) -> Result<Loaded, LoadError> {
    with_unpacked(&e.value, space, |v| store_key(ks, e, v, now_ms, opts))
}

/// Calls `f` with `v`, or with what it decodes to in `space` if it is still packed (its
/// buffers then go back to `space`). A packed value is decoded even for a key whose
/// expiry has passed, so a damaged file is refused whatever the clock says, as when the
/// reader decodes it.
pub(super) fn with_unpacked<T>(
    v: &RdbValue,
    space: &mut DecodeSpace,
    f: impl FnOnce(&RdbValue) -> Result<T, LoadError>,
) -> Result<T, LoadError> {
    let RdbValue::Packed(p) = v else {
        return f(v);
    };
    let decoded = p.decode_in(space)?;
    let out = f(&decoded);
    space.recycle(decoded);
    out
}

/// Stores key `e` with the value `v` (`e`'s own, or what it decoded to).
fn store_key(
    ks: &Keyspace,
    e: &Entry,
    v: &RdbValue,
    now_ms: u64,
    opts: &LoadOptions,
) -> Result<Loaded, LoadError> {
    let Some((db, expire_at)) = placement(e, now_ms, opts, ks.db_count())? else {
        return Ok(Loaded::Expired);
    };
    // Built before the lock is taken: a large value must not hold up the shard.
    let value = prepare(v, &ks.encodings).map_err(|why| LoadError::BadValue {
        db: e.db,
        key: e.key.clone(),
        why,
    })?;
    let mut l = ks.db(db).lock1_at(now_ms.max(1), &e.key);
    if !opts.replace && l.contains(&e.key) {
        return Err(LoadError::Duplicate {
            db: e.db,
            key: e.key.clone(),
        });
    }
    value.store(&mut l, &e.key, expire_at);
    let lfu = ks.access().is_lfu();
    if let Some(stamp) = loaded_stamp(&e.meta, lfu, now_ms) {
        l.set_lru(&e.key, stamp);
    }
    Ok(Loaded::Stored)
}

/// Where a load puts its keys, one per lane (or one on the loading thread).
pub(super) trait Sink: Send {
    /// Stores `e` as of `now_ms` (Unix ms).
    fn put(&mut self, e: &Entry, now_ms: u64) -> Result<Loaded, LoadError>;
    /// `e` will be stored soon: a sink may start loading what storing it reads.
    fn prefetch(&self, _e: &Entry) {}
    /// `e` will be stored after the keys `prefetch` was told of: a sink may start loading
    /// what that `prefetch` reads.
    fn prefetch_far(&self, _e: &Entry) {}
    /// After the last key of a load that met no error.
    fn finish(&mut self) -> Result<(), LoadError> {
        Ok(())
    }
}

/// Keys into the keyspace of a server (`&Server` or `Arc<Server>`).
pub(super) struct KeyspaceSink<S> {
    server: S,
    opts: LoadOptions,
    stored: u64,
    space: DecodeSpace,
}

impl<S: Deref<Target = Server>> KeyspaceSink<S> {
    /// The database `e` goes to, if the server has it.
    fn db_of(&self, e: &Entry) -> Option<&strata_engine::Db> {
        let ks = &self.server.keyspace;
        usize::try_from(e.db)
            .ok()
            .filter(|&d| d < ks.db_count())
            .map(|d| ks.db(d))
    }
}

impl<S> KeyspaceSink<S> {
    pub fn new(server: S, opts: LoadOptions) -> Self {
        KeyspaceSink {
            server,
            opts,
            stored: 0,
            space: DecodeSpace::default(),
        }
    }
}

/// A tier gets the chance to move entries out every this many keys a sink stores.
const SPILL_EVERY: u64 = 1024;

impl<S: Deref<Target = Server> + Send> Sink for KeyspaceSink<S> {
    fn put(&mut self, e: &Entry, now_ms: u64) -> Result<Loaded, LoadError> {
        self.stored += 1;
        if self.stored.is_multiple_of(SPILL_EVERY) {
            // An RDB larger than maxmemory loads into the tier (at start, with tiering).
            crate::services::tiering::spill_while_loading(&self.server);
        }
        load_key_in(
            &self.server.keyspace,
            e,
            now_ms,
            &self.opts,
            &mut self.space,
        )
    }

    fn prefetch(&self, e: &Entry) {
        if let Some(db) = self.db_of(e) {
            db.prefetch(&e.key);
        }
    }

    fn prefetch_far(&self, e: &Entry) {
        if let Some(db) = self.db_of(e) {
            db.prefetch_shard(&e.key);
        }
    }
}

/// A decoded value ready to store: a string stays in the decoder's bytes (copied once,
/// into the entry); any other type is built in the engine's form, before a lock is taken.
pub enum Prepared<'a> {
    Str(&'a [u8]),
    Value(Value),
}

/// Builds `v` for storing under `enc`, or says why the engine cannot hold it.
pub fn prepare<'a>(v: &'a RdbValue, enc: &Encodings) -> Result<Prepared<'a>, &'static str> {
    Ok(match v {
        RdbValue::String(s) => Prepared::Str(s),
        v => Prepared::Value(rdb_to_value(v, enc)?),
    })
}

impl Prepared<'_> {
    /// Stores it at `key` (replacing what is there) with its expiry (Unix ms).
    pub fn store(self, l: &mut Locked<'_>, key: &[u8], expire_at: Option<u64>) {
        match self {
            Prepared::Str(s) => l.set_str(key, s, expire_at.map_or(Ttl::Clear, Ttl::At)),
            Prepared::Value(value) => l.put_owned(
                key,
                Owned {
                    value,
                    expire_at,
                    raw: false,
                },
            ),
        }
    }
}

/// Where a load is, for progress reports.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub keys: u64,
    pub elapsed: Duration,
    /// Bytes of the file read so far.
    pub offset: u64,
}

impl Progress {
    pub fn keys_per_sec(&self) -> f64 {
        self.keys as f64 / self.elapsed.as_secs_f64().max(1e-3)
    }
}

const TYPES: [&str; 6] = ["string", "list", "set", "zset", "hash", "stream"];

/// What a load did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Keys stored per database, by type (in the order of `TYPES`).
    pub per_db: BTreeMap<u64, [u64; 6]>,
    /// Keys dropped because their expiry had passed.
    pub expired: u64,
    /// Keys holding an empty collection, which Redis too skips.
    pub empty: u64,
    pub functions: u64,
    /// The file's RDB version and its `redis-ver` field, if any.
    pub rdb_version: u32,
    pub redis_ver: Option<String>,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Summary {
    pub fn keys(&self) -> u64 {
        self.per_db.values().flatten().sum()
    }
}

/// What storing keys did: the part of a [`Summary`] each lane of a load keeps.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub per_db: BTreeMap<u64, [u64; 6]>,
    pub expired: u64,
}

impl Tally {
    /// `e` was stored.
    pub fn stored(&mut self, e: &Entry) {
        let t = TYPES
            .iter()
            .position(|&t| t == e.value.type_name())
            .unwrap_or(0);
        self.per_db.entry(e.db).or_default()[t] += 1;
    }

    pub fn add(&mut self, other: &Tally) {
        for (db, counts) in &other.per_db {
            let mine = self.per_db.entry(*db).or_default();
            for (m, o) in mine.iter_mut().zip(counts) {
                *m += o;
            }
        }
        self.expired += other.expired;
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "{} keys in {secs:.2} s ({:.0} keys/s) from {} bytes (RDB version {}",
            self.keys(),
            self.keys() as f64 / secs.max(1e-3),
            self.bytes,
            self.rdb_version
        )?;
        if let Some(v) = &self.redis_ver {
            write!(f, ", written by Redis {v}")?;
        }
        writeln!(f, ")")?;
        for (db, counts) in &self.per_db {
            let by_type: Vec<String> = TYPES
                .iter()
                .zip(counts)
                .filter(|(_, &n)| n > 0)
                .map(|(t, n)| format!("{n} {t}"))
                .collect();
            writeln!(f, "  db{db}: {}", by_type.join(", "))?;
        }
        write!(
            f,
            "  expired keys skipped: {}, empty keys skipped: {}, function libraries: {}",
            self.expired, self.empty, self.functions
        )
    }
}

/// Loads RDB items into a server, counting what it stores. Keys go to a [`Sink`] on lanes
/// of their own (`lanes.rs`) unless this thread holds shards (DEBUG RELOAD holds them all)
/// or the machine has one core; call [`Loader::finish`] for the summary.
pub struct Loader<'s> {
    server: &'s Server,
    opts: LoadOptions,
    summary: Summary,
    stores: Stores<'s>,
    /// Keys stored on this thread (`Stores::Here`).
    tally: Tally,
    /// Keys met so far.
    seen: u64,
    /// The clock as of the last 1024 keys: expiry is judged by it.
    now_ms: u64,
    /// Dropped after `stores`: the lanes have stored every key by then.
    expecting: Expecting<'s>,
}

/// The databases a load told how many keys to expect (`Db::expect`, from the file's
/// RESIZEDB), told that the load is over when this is dropped, as it ends or fails.
struct Expecting<'s> {
    /// None: this load does not tell (its keys go elsewhere, this thread holds the
    /// shards, or a tier takes keys out of RAM as they come).
    keyspace: Option<&'s Keyspace>,
    /// The database of the file's last SELECTDB.
    db: u64,
    told: Vec<usize>,
}

impl Expecting<'_> {
    fn resize(&mut self, keys: u64) {
        let Some(ks) = self.keyspace else { return };
        if let Some(db) = usize::try_from(self.db).ok().filter(|&d| d < ks.db_count()) {
            ks.db(db)
                .expect(usize::try_from(keys).unwrap_or(usize::MAX));
            self.told.push(db);
        }
    }
}

impl Drop for Expecting<'_> {
    fn drop(&mut self) {
        if let Some(ks) = self.keyspace {
            for &db in &self.told {
                ks.db(db).expect(0);
            }
        }
    }
}

/// Where a load's keys go: to lanes, or through one sink on the loading thread.
enum Stores<'s> {
    Lanes(Lanes),
    Here(Box<dyn Sink + 's>),
}

/// Lanes a load stores keys with: two take the lookups' cache misses side by side while
/// this thread decodes (more did not help on two cores).
const LANES: usize = 2;

impl<'s> Loader<'s> {
    /// A load into `server`'s keyspace.
    pub fn new(server: &'s Server, opts: LoadOptions) -> Self {
        let lanes = (!Keyspace::in_session())
            .then(|| server.arc())
            .flatten()
            .and_then(|arc| lanes(|| Box::new(KeyspaceSink::new(arc.clone(), opts))));
        let here = || Box::new(KeyspaceSink::new(server, opts)) as Box<dyn Sink + 's>;
        let tells = lanes.is_some() && server.tier.get().is_none();
        let mut loader = Self::with(server, opts, lanes, here);
        loader.expecting.keyspace = tells.then_some(&server.keyspace);
        loader
    }

    /// A load whose keys go through sinks `make` gives (on lanes, or one on this thread)
    /// instead of into the keyspace; function libraries still go to `server`.
    pub(super) fn with_sinks(
        server: &'s Server,
        opts: LoadOptions,
        make: impl Fn() -> Box<dyn Sink + 'static>,
    ) -> Self {
        let lanes = lanes(&make);
        Self::with(server, opts, lanes, || make() as Box<dyn Sink + 's>)
    }

    fn with(
        server: &'s Server,
        opts: LoadOptions,
        lanes: Option<Lanes>,
        here: impl FnOnce() -> Box<dyn Sink + 's>,
    ) -> Self {
        Loader {
            server,
            opts,
            summary: Summary::default(),
            stores: lanes.map_or_else(|| Stores::Here(here()), Stores::Lanes),
            tally: Tally::default(),
            seen: 0,
            now_ms: clock::now_ms(),
            expecting: Expecting {
                keyspace: None,
                db: 0,
                told: Vec::new(),
            },
        }
    }

    /// Keys handled so far (for progress reports).
    pub fn stored(&self) -> u64 {
        match &self.stores {
            Stores::Lanes(l) => l.stored(),
            Stores::Here(_) => self.tally.per_db.values().flatten().sum(),
        }
    }

    /// Waits for every key to be stored; what the load did.
    pub fn finish(mut self) -> Result<Summary, LoadError> {
        let tally = match self.stores {
            Stores::Lanes(lanes) => lanes.finish()?,
            Stores::Here(mut sink) => {
                sink.finish()?;
                std::mem::take(&mut self.tally)
            }
        };
        self.summary.per_db = tally.per_db;
        self.summary.expired = tally.expired;
        Ok(self.summary)
    }

    /// One item of a file: a key, a function library; auxiliary fields are noted,
    /// module data refused.
    pub fn item(&mut self, item: Item) -> Result<(), LoadError> {
        match item {
            Item::Key(e) => self.key(e),
            Item::Function(code) => self.function(&code),
            Item::ModuleAux { module, .. } => Err(LoadError::ModuleAux { module }),
            Item::Aux { key, value } => {
                if &key[..] == b"redis-ver" {
                    self.summary.redis_ver = Some(show(&value));
                }
                Ok(())
            }
            Item::SelectDb(db) => {
                self.expecting.db = db;
                Ok(())
            }
            Item::ResizeDb { db_size, .. } => {
                self.expecting.resize(db_size);
                Ok(())
            }
        }
    }

    pub fn key(&mut self, e: Entry) -> Result<(), LoadError> {
        let sink = match &mut self.stores {
            Stores::Lanes(lanes) => return lanes.send(e),
            Stores::Here(sink) => sink,
        };
        self.seen += 1;
        if self.seen.is_multiple_of(1024) {
            self.now_ms = clock::now_ms();
        }
        match sink.put(&e, self.now_ms)? {
            Loaded::Expired => self.tally.expired += 1,
            Loaded::Stored => self.tally.stored(&e),
        }
        Ok(())
    }

    pub fn function(&mut self, code: &[u8]) -> Result<(), LoadError> {
        self.server
            .scripts
            .load_library(Bytes::copy_from_slice(code), self.opts.replace)
            .map_err(LoadError::Function)?;
        self.summary.functions += 1;
        Ok(())
    }

    /// Every item of `r`, calling `progress` about once a second. The checksum at the
    /// end is checked before this returns Ok; on an error, what was loaded stays loaded
    /// (the caller discards it).
    pub fn load<R: Read>(
        mut self,
        mut r: Reader<R>,
        mut progress: impl FnMut(&Progress),
    ) -> Result<Summary, LoadError> {
        // Packed values are decoded where keys are stored: on the lanes, off this thread.
        r.set_defer_packed(true);
        let started = Instant::now();
        let mut next_report = Duration::from_secs(1);
        let mut n = 0u64;
        while let Some(item) = r.next_item()? {
            log_skipped(&mut r);
            self.item(item)?;
            n += 1;
            if n.is_multiple_of(1024) && started.elapsed() >= next_report {
                next_report += Duration::from_secs(1);
                progress(&Progress {
                    keys: self.stored(),
                    elapsed: started.elapsed(),
                    offset: r.offset(),
                });
            }
        }
        log_skipped(&mut r);
        self.summary.rdb_version = r.version();
        self.summary.empty = r.empty_keys_skipped();
        self.summary.bytes = r.offset();
        let mut summary = self.finish()?;
        summary.elapsed = started.elapsed();
        Ok(summary)
    }
}

/// A line for each empty key the reader skipped, in Redis's words.
fn log_skipped<R: Read>(r: &mut Reader<R>) {
    for key in r.take_skipped_keys() {
        let key = String::from_utf8_lossy(&key);
        tracing::warn!("rdbLoadObject skipping empty key: {key}");
    }
}

/// Lanes of sinks `make` gives, when the machine has cores for them.
fn lanes(make: impl Fn() -> Box<dyn Sink + 'static>) -> Option<Lanes> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores > 1).then(|| Lanes::start(LANES, make)).flatten()
}
