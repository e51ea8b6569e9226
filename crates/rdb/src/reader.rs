//! The streaming RDB file reader.

use crate::decode::{module_name, read_value};
use crate::error::{Error, ErrorKind};
use crate::source::Source;
use crate::value::RdbValue;
use crate::{opcodes, types, RDB_VERSION};
use bytes::Bytes;
use std::io::Read;

/// Per-key attributes that precede a key in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyMeta {
    /// Absolute expiry, Unix time in milliseconds.
    pub expire_ms: Option<i64>,
    /// LRU idle time in seconds (written under an LRU `maxmemory-policy`).
    pub idle_secs: Option<u64>,
    /// LFU logarithmic access counter (written under an LFU `maxmemory-policy`).
    pub lfu_freq: Option<u8>,
}

/// A key and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The database selected by the last SELECTDB (0 before any).
    pub db: u64,
    pub key: Bytes,
    pub value: RdbValue,
    pub meta: KeyMeta,
}

/// One record of an RDB file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An auxiliary field (`redis-ver`, `ctime`, `repl-id`, ...). Unknown ones must be
    /// ignored, by the format's contract.
    Aux {
        key: Bytes,
        value: Bytes,
    },
    /// Following keys belong to this database.
    SelectDb(u64),
    /// Size hints for the current database.
    ResizeDb {
        db_size: u64,
        expires_size: u64,
    },
    /// A function library (FUNCTION2): its source code, starting with `#!<engine> name=`.
    Function(Bytes),
    /// Module auxiliary data, skipped: only the named module could interpret it.
    ModuleAux {
        module: String,
        when: u64,
    },
    Key(Entry),
}

enum State {
    Running,
    Done,
    Failed,
}

/// Reads an RDB file one [`Item`] at a time from any [`Read`] (it buffers internally;
/// do not wrap the input in a `BufReader`).
pub struct Reader<R> {
    src: Source<R>,
    version: u32,
    db: u64,
    meta: KeyMeta,
    state: State,
    verify: bool,
    empty_skipped: u64,
    /// The names of the empty keys skipped since the caller last took them (the first
    /// `SKIPPED_NAMES` of them).
    skipped_names: Vec<Bytes>,
    stored_checksum: Option<u64>,
}

/// Names of skipped empty keys a reader keeps until taken: a file of millions of them
/// must not grow a list.
const SKIPPED_NAMES: usize = 64;

impl<R: Read> Reader<R> {
    /// Reads and checks the header (`REDIS` and a 4-digit version from 1 to 10).
    pub fn new(inner: R) -> Result<Self, Error> {
        let mut src = Source::new(inner);
        let sig: [u8; 9] = src.array()?;
        if &sig[..5] != b"REDIS" || !sig[5..].iter().all(u8::is_ascii_digit) {
            return Err(Error::new(0, ErrorKind::BadSignature));
        }
        let version = sig[5..]
            .iter()
            .fold(0u32, |v, d| v * 10 + (d - b'0') as u32);
        if !(1..=RDB_VERSION as u32).contains(&version) {
            return Err(Error::new(5, ErrorKind::UnsupportedVersion(version)));
        }
        Ok(Reader {
            src,
            version,
            db: 0,
            meta: KeyMeta::default(),
            state: State::Running,
            verify: true,
            empty_skipped: 0,
            skipped_names: Vec::new(),
            stored_checksum: None,
        })
    }

    /// The file's RDB version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Bytes consumed so far (for progress reports).
    pub fn offset(&self) -> u64 {
        self.src.offset()
    }

    /// Keys that held an empty collection: Redis skips them (old versions could save
    /// them), and so does this reader.
    pub fn empty_keys_skipped(&self) -> u64 {
        self.empty_skipped
    }

    /// The names of the empty keys skipped since the last call (at most 64 are kept
    /// between calls), for a log line each as Redis writes.
    pub fn take_skipped_keys(&mut self) -> Vec<Bytes> {
        std::mem::take(&mut self.skipped_names)
    }

    /// Whether to hand small hashes and sorted sets out undecoded, as
    /// [`RdbValue::Packed`], for the caller to decode elsewhere (off by default). Their
    /// elements are then checked when decoded, so a file's damage inside one is reported
    /// by [`crate::PackedValue::decode_in`], not by `next_item`.
    pub fn set_defer_packed(&mut self, on: bool) {
        self.src.defer_packed = on;
    }

    /// Whether to check the CRC64 at the end (on by default; Redis's `rdbchecksum no`
    /// skips it). Turning it off also saves computing it.
    pub fn set_verify_checksum(&mut self, on: bool) {
        self.verify = on;
        self.src.set_checksum(on);
    }

    /// The checksum stored in the footer, once the end has been read (None before, and
    /// for versions before 5, which have none). 0 means "not computed".
    pub fn stored_checksum(&self) -> Option<u64> {
        self.stored_checksum
    }

    /// The next item; `Ok(None)` once the EOF record and checksum have been read and
    /// checked. After an error, returns `Ok(None)`.
    pub fn next_item(&mut self) -> Result<Option<Item>, Error> {
        if !matches!(self.state, State::Running) {
            return Ok(None);
        }
        let r = self.step();
        if r.is_err() {
            self.state = State::Failed;
        }
        r
    }

    /// The input and what was buffered past the end of the RDB data (an AOF tail, or the
    /// end mark and replication stream after a diskless transfer).
    pub fn into_parts(self) -> (R, Vec<u8>) {
        self.src.into_parts()
    }

    fn step(&mut self) -> Result<Option<Item>, Error> {
        let src = &mut self.src;
        loop {
            let at = src.offset();
            let op = src.u8()?;
            let item = match op {
                opcodes::EXPIRETIME_MS => {
                    self.meta.expire_ms = Some(src.i64_le()?);
                    continue;
                }
                opcodes::EXPIRETIME => {
                    let secs = i32::from_le_bytes(src.array()?);
                    self.meta.expire_ms = Some(secs as i64 * 1000);
                    continue;
                }
                opcodes::FREQ => {
                    self.meta.lfu_freq = Some(src.u8()?);
                    continue;
                }
                opcodes::IDLE => {
                    self.meta.idle_secs = Some(src.length()?);
                    continue;
                }
                opcodes::EOF => {
                    let computed = src.crc();
                    if self.version >= 5 {
                        let stored = u64::from_le_bytes(src.array()?);
                        self.stored_checksum = Some(stored);
                        if self.verify && stored != 0 && stored != computed {
                            return Err(Error::new(
                                at + 1,
                                ErrorKind::Checksum { stored, computed },
                            ));
                        }
                    }
                    self.state = State::Done;
                    return Ok(None);
                }
                opcodes::SELECTDB => {
                    self.db = src.length()?;
                    Item::SelectDb(self.db)
                }
                opcodes::RESIZEDB => Item::ResizeDb {
                    db_size: src.length()?,
                    expires_size: src.length()?,
                },
                opcodes::AUX => Item::Aux {
                    key: src.string()?,
                    value: src.string()?,
                },
                opcodes::MODULE_AUX => {
                    let module = module_name(src.length()?);
                    let when_at = src.offset();
                    if src.length()? != MODULE_OP_UINT {
                        return Err(Error::corrupt(
                            when_at,
                            "module aux data without its 'when' field",
                        ));
                    }
                    let when = src.length()?;
                    skip_module_value(src)?;
                    Item::ModuleAux { module, when }
                }
                opcodes::FUNCTION_PRE_GA => {
                    return Err(Error::new(at, ErrorKind::PreReleaseFunctions));
                }
                opcodes::FUNCTION2 => Item::Function(src.string()?),
                ty if types::is_value_type(ty) => {
                    let key = src.string()?;
                    let meta = std::mem::take(&mut self.meta);
                    match read_value(src, ty, Some(&key))? {
                        Some(value) => Item::Key(Entry {
                            db: self.db,
                            key,
                            value,
                            meta,
                        }),
                        None => {
                            self.empty_skipped += 1;
                            if self.skipped_names.len() < SKIPPED_NAMES {
                                self.skipped_names.push(key);
                            }
                            continue;
                        }
                    }
                }
                other => {
                    return Err(Error::corrupt(at, format!("unknown record type {other}")));
                }
            };
            return Ok(Some(item));
        }
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Item, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}

const MODULE_OP_EOF: u64 = 0;
const MODULE_OP_SINT: u64 = 1;
const MODULE_OP_UINT: u64 = 2;
const MODULE_OP_FLOAT: u64 = 3;
const MODULE_OP_DOUBLE: u64 = 4;
const MODULE_OP_STRING: u64 = 5;

/// Skips module data written with typed opcodes, up to its EOF opcode.
fn skip_module_value<R: Read>(src: &mut Source<R>) -> Result<(), Error> {
    loop {
        let at = src.offset();
        match src.length()? {
            MODULE_OP_EOF => return Ok(()),
            MODULE_OP_SINT | MODULE_OP_UINT => {
                src.length()?;
            }
            MODULE_OP_FLOAT => {
                src.array::<4>()?;
            }
            MODULE_OP_DOUBLE => {
                src.array::<8>()?;
            }
            MODULE_OP_STRING => {
                src.string()?;
            }
            op => {
                return Err(Error::corrupt(
                    at,
                    format!("unknown module data opcode {op}"),
                ))
            }
        }
    }
}
