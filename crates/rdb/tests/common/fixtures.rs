//! Small encoders for test fixtures: the legacy packed formats Redis 7 no longer writes
//! (zipmap, ziplist), a minimal listpack, and an RDB file builder for hand-made files.

use strata_rdb::crc64;

fn canonical_int(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?;
    let v: i64 = t.parse().ok()?;
    (v.to_string() == t).then_some(v)
}

/// A ziplist of `items`, integers packed in the smallest integer encoding like Redis did.
pub fn ziplist(items: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0u8; 10];
    let mut prev = 0usize;
    let mut tail = 10usize;
    for it in items {
        let start = out.len();
        tail = start;
        if prev < 254 {
            out.push(prev as u8);
        } else {
            out.push(0xfe);
            out.extend_from_slice(&(prev as u32).to_le_bytes());
        }
        match canonical_int(it) {
            Some(v @ 0..=12) => out.push(0xf1 + v as u8),
            Some(v) if i8::try_from(v).is_ok() => out.extend_from_slice(&[0xfe, v as u8]),
            Some(v) if i16::try_from(v).is_ok() => {
                out.push(0xc0);
                out.extend_from_slice(&(v as i16).to_le_bytes());
            }
            Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => {
                out.push(0xf0);
                out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            Some(v) if i32::try_from(v).is_ok() => {
                out.push(0xd0);
                out.extend_from_slice(&(v as i32).to_le_bytes());
            }
            Some(v) => {
                out.push(0xe0);
                out.extend_from_slice(&v.to_le_bytes());
            }
            None => {
                let n = it.len();
                if n <= 0x3f {
                    out.push(n as u8);
                } else if n <= 0x3fff {
                    out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
                } else {
                    out.push(0x80);
                    out.extend_from_slice(&(n as u32).to_be_bytes());
                }
                out.extend_from_slice(it);
            }
        }
        prev = out.len() - start;
    }
    out.push(0xff);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    out[4..8].copy_from_slice(&(tail as u32).to_le_bytes());
    out[8..10].copy_from_slice(&(items.len().min(65535) as u16).to_le_bytes());
    out
}

/// A zipmap of `pairs`; every value is followed by `free` unused bytes.
pub fn zipmap(pairs: &[(&[u8], &[u8])], free: u8) -> Vec<u8> {
    let len = |out: &mut Vec<u8>, n: usize| {
        if n < 254 {
            out.push(n as u8);
        } else {
            out.push(254);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
    };
    let mut out = vec![pairs.len().min(254) as u8];
    for (f, v) in pairs {
        len(&mut out, f.len());
        out.extend_from_slice(f);
        len(&mut out, v.len());
        out.push(free);
        out.extend_from_slice(v);
        out.extend(std::iter::repeat_n(0u8, free as usize));
    }
    out.push(0xff);
    out
}

/// A listpack element for [`listpack`].
pub enum Lp<'a> {
    Int(i64),
    Str(&'a [u8]),
}

/// A minimal listpack writer: 7-bit and 64-bit integers, 6- and 12-bit strings.
pub fn listpack(items: &[Lp]) -> Vec<u8> {
    let mut out = vec![0u8; 6];
    for it in items {
        let start = out.len();
        match it {
            Lp::Int(v @ 0..=127) => out.push(*v as u8),
            Lp::Int(v) => {
                out.push(0xf4);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Lp::Str(s) if s.len() < 64 => {
                out.push(0x80 | s.len() as u8);
                out.extend_from_slice(s);
            }
            Lp::Str(s) => {
                out.extend_from_slice(&[0xe0 | (s.len() >> 8) as u8, s.len() as u8]);
                out.extend_from_slice(s);
            }
        }
        let n = out.len() - start;
        if n <= 127 {
            out.push(n as u8);
        } else {
            out.extend_from_slice(&[(n >> 7) as u8, (n & 127) as u8 | 128]);
        }
    }
    out.push(0xff);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    out[4..6].copy_from_slice(&(items.len() as u16).to_le_bytes());
    out
}

/// The module id of a 9-character module type name and encoding version.
pub fn module_id(name: &str, encver: u64) -> u64 {
    const CHARSET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut id = 0u64;
    for c in name.chars() {
        id = id << 6 | CHARSET.find(c).expect("module name char") as u64;
    }
    id << 10 | encver
}

/// Builds an RDB file (or a DUMP payload body) byte by byte.
pub struct Rdb {
    pub buf: Vec<u8>,
    version: u32,
}

impl Rdb {
    pub fn new(version: u32) -> Rdb {
        Rdb {
            buf: format!("REDIS{version:04}").into_bytes(),
            version,
        }
    }

    /// A body without a header, for DUMP payloads.
    pub fn payload() -> Rdb {
        Rdb {
            buf: Vec::new(),
            version: 10,
        }
    }

    pub fn byte(&mut self, b: u8) -> &mut Self {
        self.buf.push(b);
        self
    }

    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }

    pub fn len(&mut self, n: u64) -> &mut Self {
        if n < 64 {
            self.byte(n as u8)
        } else if n < 16384 {
            self.raw(&[0x40 | (n >> 8) as u8, n as u8])
        } else if n <= u32::MAX as u64 {
            self.byte(0x80).raw(&(n as u32).to_be_bytes())
        } else {
            self.byte(0x81).raw(&n.to_be_bytes())
        }
    }

    /// A raw (unencoded) string.
    pub fn str(&mut self, s: &[u8]) -> &mut Self {
        self.len(s.len() as u64).raw(s)
    }

    /// An LZF-compressed string.
    pub fn lzf(&mut self, s: &[u8]) -> &mut Self {
        let mut out = Vec::new();
        assert!(strata_rdb::lzf::Compressor::default().compress(s, &mut out, s.len()));
        self.byte(0xc3)
            .len(out.len() as u64)
            .len(s.len() as u64)
            .raw(&out)
    }

    pub fn key(&mut self, ty: u8, key: &[u8]) -> &mut Self {
        self.byte(ty).str(key)
    }

    /// EOF, plus the CRC64 footer from version 5 on.
    pub fn finish(&mut self) -> Vec<u8> {
        self.byte(0xff);
        if self.version >= 5 {
            let crc = crc64::crc64(&self.buf);
            self.buf.extend_from_slice(&crc.to_le_bytes());
        }
        std::mem::take(&mut self.buf)
    }

    /// The body sealed as a DUMP payload (version 10 footer and CRC64).
    pub fn seal(&mut self) -> Vec<u8> {
        seal_version(std::mem::take(&mut self.buf), 10)
    }
}

/// A DUMP payload body completed with an RDB version and a correct CRC64.
pub fn seal_version(mut body: Vec<u8>, version: u16) -> Vec<u8> {
    body.extend_from_slice(&version.to_le_bytes());
    let crc = crc64::crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// A DUMP payload body completed with version 10 and a correct CRC64.
pub fn seal(body: Vec<u8>) -> Vec<u8> {
    seal_version(body, 10)
}
