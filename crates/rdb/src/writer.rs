//! The RDB file writer.

use crate::crc64;
use crate::encode::{Encoder, Sink, WriteOptions};
use crate::reader::KeyMeta;
use crate::value::RdbValue;
use crate::{opcodes, RDB_VERSION};
use std::io::{self, Write};

const BUF: usize = 64 * 1024;

/// Buffered output that folds everything written into the file's CRC64.
struct Out<W> {
    inner: W,
    buf: Vec<u8>,
    crc: u64,
    checksum: bool,
}

impl<W: Write> Out<W> {
    fn flush_buf(&mut self) -> io::Result<()> {
        if self.checksum {
            self.crc = crc64::update(self.crc, &self.buf);
        }
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

impl<W: Write> Sink for Out<W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        if self.buf.len() + b.len() > BUF {
            self.flush_buf()?;
            if b.len() >= BUF {
                if self.checksum {
                    self.crc = crc64::update(self.crc, b);
                }
                return self.inner.write_all(b);
            }
        }
        self.buf.extend_from_slice(b);
        Ok(())
    }
}

/// The AUX fields Redis writes at the start of every file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuxFields<'a> {
    /// `redis-ver`: the version the file claims to come from.
    pub redis_ver: &'a str,
    /// `ctime`: creation time, Unix seconds.
    pub ctime: i64,
    /// `used-mem`: memory in use when saving, in bytes.
    pub used_mem: u64,
    /// Replication fields, written for a replica's initial sync or a failover-safe save.
    pub repl: Option<ReplAux<'a>>,
    /// `aof-base`: the file is the base of a multi-part AOF.
    pub aof_base: bool,
}

/// `repl-stream-db`, `repl-id` and `repl-offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplAux<'a> {
    pub stream_db: i64,
    pub repl_id: &'a str,
    pub offset: i64,
}

/// Writes an RDB file (version 10) to any [`Write`] (buffered internally). Call, in
/// Redis's order: [`Writer::standard_aux`] (and/or [`Writer::aux`]), [`Writer::function`]
/// per library, then per non-empty database [`Writer::select_db`] and its keys, and
/// finally [`Writer::finish`].
pub struct Writer<W: Write> {
    out: Out<W>,
    enc: Encoder,
}

impl<W: Write> Writer<W> {
    /// Writes the header `REDIS0010`.
    pub fn new(inner: W, opts: WriteOptions) -> io::Result<Self> {
        let mut w = Writer {
            out: Out {
                inner,
                buf: Vec::with_capacity(BUF),
                crc: 0,
                checksum: opts.checksum,
            },
            enc: Encoder::new(opts),
        };
        w.out.put(format!("REDIS{RDB_VERSION:04}").as_bytes())?;
        Ok(w)
    }

    /// An AUX field (strings that look like small integers are packed as integers).
    pub fn aux(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.out.put(&[opcodes::AUX])?;
        self.enc.write_string(&mut self.out, key)?;
        self.enc.write_string(&mut self.out, value)
    }

    /// The fields Redis starts a file with, in its order: `redis-ver`, `redis-bits`,
    /// `ctime`, `used-mem`, the replication ones if given, `aof-base`.
    pub fn standard_aux(&mut self, a: &AuxFields<'_>) -> io::Result<()> {
        self.aux(b"redis-ver", a.redis_ver.as_bytes())?;
        self.aux(b"redis-bits", usize::BITS.to_string().as_bytes())?;
        self.aux(b"ctime", a.ctime.to_string().as_bytes())?;
        self.aux(b"used-mem", a.used_mem.to_string().as_bytes())?;
        if let Some(r) = &a.repl {
            self.aux(b"repl-stream-db", r.stream_db.to_string().as_bytes())?;
            self.aux(b"repl-id", r.repl_id.as_bytes())?;
            self.aux(b"repl-offset", r.offset.to_string().as_bytes())?;
        }
        self.aux(b"aof-base", if a.aof_base { b"1" } else { b"0" })
    }

    /// A function library: its full source, `#!<engine> name=<lib>` line included.
    pub fn function(&mut self, code: &[u8]) -> io::Result<()> {
        self.out.put(&[opcodes::FUNCTION2])?;
        self.enc.write_string(&mut self.out, code)
    }

    /// Starts database `db`, with its key and expiring-key counts (sizing hints for the
    /// loader; Redis writes both).
    pub fn select_db(&mut self, db: u64, db_size: u64, expires_size: u64) -> io::Result<()> {
        self.out.put(&[opcodes::SELECTDB])?;
        self.enc.write_len(&mut self.out, db)?;
        self.out.put(&[opcodes::RESIZEDB])?;
        self.enc.write_len(&mut self.out, db_size)?;
        self.enc.write_len(&mut self.out, expires_size)
    }

    /// A key with its value (in the encoding Redis would choose under the options) and
    /// attributes. Collections must not be empty (Redis skips empty ones when loading).
    pub fn key(&mut self, key: &[u8], value: &RdbValue, meta: &KeyMeta) -> io::Result<()> {
        if let Some(t) = meta.expire_ms {
            self.out.put(&[opcodes::EXPIRETIME_MS])?;
            self.out.put(&t.to_le_bytes())?;
        }
        if let Some(idle) = meta.idle_secs {
            self.out.put(&[opcodes::IDLE])?;
            self.enc.write_len(&mut self.out, idle)?;
        }
        if let Some(f) = meta.lfu_freq {
            self.out.put(&[opcodes::FREQ, f])?;
        }
        let ty = self.enc.type_of(value);
        self.out.put(&[ty])?;
        self.enc.write_string(&mut self.out, key)?;
        self.enc.write_value(&mut self.out, value, ty)
    }

    /// Writes the EOF record and the CRC64 (0 when checksums are off), flushes, and gives
    /// back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.put(&[opcodes::EOF])?;
        self.out.flush_buf()?;
        let crc = if self.out.checksum { self.out.crc } else { 0 };
        self.out.inner.write_all(&crc.to_le_bytes())?;
        self.out.inner.flush()?;
        Ok(self.out.inner)
    }
}
