//! Data directories and RDB files: `strata export` (a data directory to an RDB file),
//! `strata import` (an RDB file into a data directory) and `strata serve --rdb-import`
//! (an RDB file into the keyspace at start-up).
//!
//! Both directions open the data directory as start-up does (its lock, the newest
//! snapshot, the journal after it) in a server that never listens. An import only goes
//! into a directory that holds no data (no key, no function library), unless `--force`,
//! which replaces whatever it holds: the file becomes the whole data set, as a dump.rdb is
//! for redis-server. Its keys go straight into a new snapshot (`to_snapshot.rs`), with
//! the function libraries in the journal after it (docs/persistence.md); until that
//! snapshot is complete, the directory is unchanged, so a failed import leaves nothing.

use super::load::{LoadError, LoadOptions, Loader, Progress, Summary};
use super::save::write_rdb;
use crate::config::Config;
use crate::server::Server;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_rdb::Reader;

/// A server on the data directory of `config`, loaded as start-up loads it, not serving.
fn open_dir(config: Config) -> Result<Arc<Server>, String> {
    let server = Server::new(config);
    crate::services::persist::open(&server)?;
    server
        .loading
        .store(false, std::sync::atomic::Ordering::SeqCst);
    Ok(server)
}

/// True when the keyspace holds a key or a function library exists.
fn holds_data(server: &Server) -> bool {
    let ks = &server.keyspace;
    (0..ks.db_count()).any(|i| !ks.db(i).is_empty()) || !server.scripts.libraries.read().is_empty()
}

/// What an export wrote.
#[derive(Debug, Clone)]
pub struct Exported {
    pub keys: u64,
    pub functions: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl std::fmt::Display for Exported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} keys and {} function libraries, {} bytes, in {:.2} s",
            self.keys,
            self.functions,
            self.bytes,
            self.elapsed.as_secs_f64()
        )
    }
}

/// `strata export`: the data directory of `config` as an RDB file at `path` (written
/// beside it as `<path>.tmp`, fsynced, then renamed into place). Keys expired by now are
/// left out.
pub fn export(config: Config, path: &Path) -> Result<Exported, String> {
    let started = Instant::now();
    let dir = std::path::PathBuf::from(&config.get().dir);
    if !dir.is_dir() {
        return Err(format!("no data directory at {}", dir.display()));
    }
    // Reading only: the journal is replayed but not opened for appending.
    config.set("appendonly", "no", false)?;
    let server = open_dir(config)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let written = (|| -> std::io::Result<_> {
        let file = File::create(&tmp)?;
        let (out, written, functions) =
            write_rdb(&server, BufWriter::with_capacity(1 << 20, file))?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok((written, functions, file.metadata()?.len()))
    })();
    let (written, functions, bytes) = written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("writing {}: {e}", path.display())
    })?;
    Ok(Exported {
        keys: written.keys,
        functions,
        bytes,
        elapsed: started.elapsed(),
    })
}

/// Options of `strata import`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImportOptions {
    /// Replace the data the directory holds (otherwise such a directory is refused).
    pub force: bool,
}

/// Loads the RDB file at `path` into `server`, reporting progress about once a second.
fn load_file(
    server: &Server,
    path: &Path,
    progress: impl FnMut(&Progress, u64),
) -> Result<Summary, String> {
    load_with(Loader::new(server, LoadOptions::default()), path, progress).map_err(at(path))
}

/// Every item of the RDB file at `path` through `loader`.
fn load_with(
    loader: Loader<'_>,
    path: &Path,
    mut progress: impl FnMut(&Progress, u64),
) -> Result<Summary, LoadError> {
    let file = File::open(path).map_err(|e| LoadError::Io(format!("cannot open it: {e}")))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reader = Reader::new(file)?;
    loader.load(reader, |p| progress(p, size))
}

/// A load's error as a message that names the file.
fn at(path: &Path) -> impl Fn(LoadError) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// `dir`/`dbfilename`, when that file is a Redis RDB file (it starts with `REDIS`):
/// one a user or `redis-cli --rdb` put there, as Strata's own snapshots live apart.
pub fn rdb_in_dir(server: &Server) -> Option<std::path::PathBuf> {
    let c = server.config.get();
    let path = Path::new(&c.dir).join(&c.dbfilename);
    let mut magic = [0u8; 5];
    let mut f = File::open(&path).ok()?;
    std::io::Read::read_exact(&mut f, &mut magic).ok()?;
    (&magic == b"REDIS").then_some(path)
}

/// DEBUG RELOAD NOSAVE with a Redis RDB file at `dir`/`dbfilename`: empties the data set
/// and the function libraries (when `flush`) and loads the file, every shard held
/// meanwhile; with `merge` the file's keys and libraries replace those of their name.
/// Then a background snapshot makes the result durable, as for an import: until it is
/// written a restart finds the data set of before.
pub fn reload_from_rdb(
    server: &Arc<Server>,
    path: &Path,
    flush: bool,
    merge: bool,
) -> Result<Summary, String> {
    let summary = {
        let ks = &server.keyspace;
        let _all = (!strata_engine::Keyspace::in_session()).then(|| ks.session_all());
        if flush {
            drop(ks.flush_all());
            server.scripts.libraries.write().clear();
            server.scripts.functions_changed();
        }
        let opts = LoadOptions {
            skip_expired: true,
            replace: merge,
        };
        load_with(Loader::new(server, opts), path, |_, _| {}).map_err(at(path))?
    };
    if let Err(e) = crate::services::snapshot::start(server, true, true) {
        tracing::warn!(
            "DEBUG RELOAD: the snapshot after loading {} did not start: {e}",
            path.display()
        );
    }
    Ok(summary)
}

/// A progress line: keys so far, their rate, and how far into the file.
pub fn progress_line(p: &Progress, file_size: u64) -> String {
    format!(
        "{} keys, {:.0} keys/s, {:.0}% of the file",
        p.keys,
        p.keys_per_sec(),
        100.0 * p.offset as f64 / file_size.max(1) as f64
    )
}

/// `strata import`: the RDB file at `path` into the data directory of `config`, which
/// must hold no data unless `force`. `progress` gets a line about once a second.
pub fn import(
    config: Config,
    path: &Path,
    opts: ImportOptions,
    mut progress: impl FnMut(&str),
) -> Result<Summary, String> {
    // The journal carries the function libraries (in the snapshot's marker).
    config.set("appendonly", "yes", false)?;
    let server = open_dir(config)?;
    let dir = server.data_dir();
    if holds_data(&server) {
        if !opts.force {
            return Err(format!(
                "data directory {} already holds data; import into an empty directory, or \
                 add --force to replace what it holds",
                dir.display()
            ));
        }
        // Not journaled: until the snapshot below is written, the directory keeps its
        // data.
        for i in 0..server.keyspace.db_count() {
            drop(server.keyspace.db(i).flush());
        }
        server.scripts.libraries.write().clear();
        server.scripts.functions_changed();
    }
    let mut report = |p: &Progress, size| progress(&progress_line(p, size));
    // The keys go straight into the snapshot that keeps them, never into memory.
    let streamed = crate::services::snapshot::save_streamed(&server, |out| {
        load_with(super::to_snapshot::loader(&server, out), path, &mut report)
    });
    let summary = match streamed {
        Err(LoadError::HashTwice) => {
            // The streamed load keeps no key names: in memory, a key twice is named (and
            // two keys that only shared a hash load). Its libraries are loaded again.
            server.scripts.libraries.write().clear();
            let loader = Loader::new(&server, LoadOptions::default());
            let summary = load_with(loader, path, &mut report).map_err(at(path))?;
            crate::services::snapshot::start(&server, false, true)?;
            summary
        }
        r => r.map_err(at(path))?,
    };
    server.persist.close();
    Ok(summary)
}

/// `strata serve --rdb-import FILE`: loads the file after the data directory, which must
/// hold no data, then starts a background snapshot that makes the import durable (the
/// file stays the only copy until it is written).
pub fn import_at_start(server: &Arc<Server>, path: &Path) -> Result<(), String> {
    if holds_data(server) {
        return Err(format!(
            "--rdb-import {}: data directory {} already holds data; --rdb-import loads only \
             into an empty data directory (start without it, or use `strata import --force`)",
            path.display(),
            server.data_dir().display()
        ));
    }
    tracing::info!("importing {}", path.display());
    let summary = load_file(server, path, |p, size| {
        tracing::info!("importing: {}", progress_line(p, size))
    })?;
    for line in summary.to_string().lines() {
        tracing::info!("imported {}", line.trim_start());
    }
    crate::services::snapshot::start(server, true, true)
}
