//! Writing values in the encodings Redis 7.0 chooses for them.

use crate::listpack::ListpackWriter;
use crate::lzf::Compressor;
use crate::members::Members;
use crate::num::{format_score, parse_canonical_i64};
use crate::value::RdbValue;
use crate::{intset, stream, types};
use std::io;

/// Redis's ceiling for a listpack (`lpSafeToAdd`): bigger collections use plain forms.
pub(crate) const LISTPACK_MAX: usize = 1 << 30;

/// How values are written: the thresholds under which Redis keeps collections in their
/// compact forms (same names and meaning as the redis.conf settings, defaults as built
/// into redis-server 7.0), and whether strings are LZF-compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// `rdbcompression`: LZF-compress strings longer than 20 bytes when it saves space.
    pub compression: bool,
    /// `rdbchecksum`: end files with a CRC64 (otherwise 0, "not computed").
    pub checksum: bool,
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    /// Positive: elements per list node; -1 to -5: node size of 4, 8, 16, 32 or 64 KiB.
    pub list_max_listpack_size: i64,
    /// List elements at least this long get a node of their own ("plain" nodes; Redis
    /// uses 1 GiB, changeable only with DEBUG QUICKLIST-PACKED-THRESHOLD).
    pub list_packed_threshold: usize,
    pub stream_node_max_bytes: usize,
    pub stream_node_max_entries: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compression: true,
            checksum: true,
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            set_max_intset_entries: 512,
            list_max_listpack_size: -2,
            list_packed_threshold: 1 << 30,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
        }
    }
}

/// Where encoded bytes go: a buffer (DUMP payloads) or a file writer.
pub(crate) trait Sink {
    fn put(&mut self, b: &[u8]) -> io::Result<()>;
}

impl Sink for Vec<u8> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.extend_from_slice(b);
        Ok(())
    }
}

/// The encoder: options plus scratch buffers reused from value to value.
#[derive(Default)]
pub(crate) struct Encoder {
    pub opts: WriteOptions,
    pub lp: ListpackWriter,
    lzf: Compressor,
    lzf_out: Vec<u8>,
    blob: Vec<u8>,
    ints: Vec<i64>,
    pub nodes: Vec<u8>,
}

impl Encoder {
    pub fn new(opts: WriteOptions) -> Self {
        Encoder {
            opts,
            ..Default::default()
        }
    }

    pub fn write_len<S: Sink>(&mut self, out: &mut S, n: u64) -> io::Result<()> {
        if n < 1 << 6 {
            out.put(&[n as u8])
        } else if n < 1 << 14 {
            out.put(&[0x40 | (n >> 8) as u8, n as u8])
        } else if let Ok(n) = u32::try_from(n) {
            let b = n.to_be_bytes();
            out.put(&[0x80, b[0], b[1], b[2], b[3]])
        } else {
            out.put(&[0x81])?;
            out.put(&n.to_be_bytes())
        }
    }

    /// A string as Redis saves one: a small integer in 1, 2 or 4 bytes; else LZF when
    /// enabled, longer than 20 bytes and at least 4 bytes shorter; else raw.
    pub fn write_string<S: Sink>(&mut self, out: &mut S, s: &[u8]) -> io::Result<()> {
        if s.len() <= 11 {
            if let Some(v) = parse_canonical_i64(s) {
                if let Ok(v) = i8::try_from(v) {
                    return out.put(&[0xc0, v as u8]);
                }
                if let Ok(v) = i16::try_from(v) {
                    let b = v.to_le_bytes();
                    return out.put(&[0xc1, b[0], b[1]]);
                }
                if let Ok(v) = i32::try_from(v) {
                    let b = v.to_le_bytes();
                    return out.put(&[0xc2, b[0], b[1], b[2], b[3]]);
                }
            }
        }
        if self.opts.compression
            && s.len() > 20
            && self.lzf.compress(s, &mut self.lzf_out, s.len() - 4)
        {
            out.put(&[0xc3])?;
            let compressed = std::mem::take(&mut self.lzf_out);
            let r = self
                .write_len(out, compressed.len() as u64)
                .and_then(|()| self.write_len(out, s.len() as u64))
                .and_then(|()| out.put(&compressed));
            self.lzf_out = compressed;
            return r;
        }
        self.write_len(out, s.len() as u64)?;
        out.put(s)
    }

    /// Writes the finished listpack in `self.lp` as a string.
    fn write_listpack<S: Sink>(&mut self, out: &mut S) -> io::Result<()> {
        let mut blob = std::mem::take(&mut self.blob);
        blob.clear();
        blob.extend_from_slice(self.lp.finish());
        self.lp.clear();
        let r = self.write_string(out, &blob);
        self.blob = blob;
        r
    }

    /// The RDB type `v` is written as under these options.
    pub fn type_of(&self, v: &RdbValue) -> u8 {
        let o = &self.opts;
        match v {
            RdbValue::String(_) => types::STRING,
            RdbValue::List(_) => types::LIST_QUICKLIST_2,
            RdbValue::Set(m) => {
                if m.len() <= o.set_max_intset_entries
                    && m.iter().all(|x| parse_canonical_i64(x).is_some())
                {
                    types::SET_INTSET
                } else {
                    types::SET
                }
            }
            RdbValue::SortedSet(m) => {
                let fits = m.len() <= o.zset_max_listpack_entries
                    && m.iter().all(|(x, _)| x.len() <= o.zset_max_listpack_value)
                    && m.iter().map(|(x, _)| x.len() + 24).sum::<usize>() <= LISTPACK_MAX;
                if fits {
                    types::ZSET_LISTPACK
                } else {
                    types::ZSET_2
                }
            }
            RdbValue::Hash(f) => {
                // One pass: the lengths and their total.
                let mut bytes = 0usize;
                let fits = f.len() <= o.hash_max_listpack_entries
                    && f.iter().all(|(k, v)| {
                        bytes += k.len() + v.len();
                        k.len() <= o.hash_max_listpack_value && v.len() <= o.hash_max_listpack_value
                    })
                    && bytes <= LISTPACK_MAX;
                if fits {
                    types::HASH_LISTPACK
                } else {
                    types::HASH
                }
            }
            RdbValue::Stream(_) => types::STREAM_LISTPACKS_2,
            // Written as its decoded value would be (one that does not decode is refused
            // by `write_value`).
            RdbValue::Packed(p) => p.decode().map_or(types::HASH, |v| self.type_of(&v)),
        }
    }

    /// Writes `v` (without its type byte) in the form `type_of` chose.
    pub fn write_value<S: Sink>(&mut self, out: &mut S, v: &RdbValue, ty: u8) -> io::Result<()> {
        match v {
            RdbValue::Packed(p) => {
                let v = p
                    .decode()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.write_value(out, &v, ty)
            }
            RdbValue::String(s) => self.write_string(out, s),
            RdbValue::List(items) => self.write_list(out, items),
            RdbValue::Set(m) if ty == types::SET_INTSET => {
                let mut ints = std::mem::take(&mut self.ints);
                ints.clear();
                ints.extend(m.iter().filter_map(parse_canonical_i64));
                let mut blob = std::mem::take(&mut self.blob);
                intset::encode(&mut ints, &mut blob);
                let r = self.write_string(out, &blob);
                self.blob = blob;
                self.ints = ints;
                r
            }
            RdbValue::Set(m) => {
                self.write_len(out, m.len() as u64)?;
                m.iter().try_for_each(|x| self.write_string(out, x))
            }
            RdbValue::SortedSet(m) => {
                // Ascending by score then member, the order Redis keeps.
                let mut sorted: Vec<(&[u8], f64)> = m.iter().collect();
                sorted.sort_by(|a, b| {
                    a.1.partial_cmp(&b.1)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then_with(|| a.0.cmp(b.0))
                });
                if ty == types::ZSET_LISTPACK {
                    let mut text = Vec::new();
                    for (member, score) in sorted {
                        self.lp.push(member);
                        format_score(score, &mut text);
                        self.lp.push(&text);
                    }
                    self.write_listpack(out)
                } else {
                    // Greatest first, as Redis saves them (so loading appends at the head).
                    self.write_len(out, m.len() as u64)?;
                    for (member, score) in sorted.into_iter().rev() {
                        self.write_string(out, member)?;
                        out.put(&score.to_le_bytes())?;
                    }
                    Ok(())
                }
            }
            RdbValue::Hash(f) if ty == types::HASH_LISTPACK => {
                for (k, v) in f.iter() {
                    self.lp.push(k);
                    self.lp.push(v);
                }
                self.write_listpack(out)
            }
            RdbValue::Hash(f) => {
                self.write_len(out, f.len() as u64)?;
                for (k, v) in f.iter() {
                    self.write_string(out, k)?;
                    self.write_string(out, v)?;
                }
                Ok(())
            }
            RdbValue::Stream(s) => stream::write(self, out, s),
        }
    }

    /// A list as quicklist nodes, filled the way pushing each element at the tail would.
    fn write_list<S: Sink>(&mut self, out: &mut S, items: &Members) -> io::Result<()> {
        let fill = self.opts.list_max_listpack_size;
        let plain_from = self.opts.list_packed_threshold;
        // Node boundaries first: the node count is written before the nodes.
        let mut nodes: Vec<(bool, usize, usize)> = Vec::new(); // (plain, start, end)
        let mut cur: Option<(usize, usize, usize)> = None; // (start, count, estimated bytes)
        for (i, x) in items.iter().enumerate() {
            if x.len() >= plain_from {
                if let Some((s, n, _)) = cur.take() {
                    nodes.push((false, s, s + n));
                }
                nodes.push((true, i, i + 1));
                continue;
            }
            if let Some((s, n, sz)) = cur {
                if node_allows_insert(fill, sz, n, x.len()) {
                    cur = Some((s, n + 1, sz + entry_size(x)));
                    continue;
                }
                nodes.push((false, s, s + n));
            }
            cur = Some((i, 1, 7 + entry_size(x)));
        }
        if let Some((s, n, _)) = cur {
            nodes.push((false, s, s + n));
        }
        self.write_len(out, nodes.len() as u64)?;
        for (plain, start, end) in nodes {
            if plain {
                self.write_len(out, 1)?;
                self.write_string(out, &items[start])?;
            } else {
                self.write_len(out, 2)?;
                for i in start..end {
                    self.lp.push(&items[i]);
                }
                self.write_listpack(out)?;
            }
        }
        Ok(())
    }
}

/// Bytes an element takes in a listpack (as Redis would encode it).
fn entry_size(x: &[u8]) -> usize {
    let body = match parse_canonical_i64(x) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..=4095).contains(&v) => 2,
        Some(v) if i16::try_from(v).is_ok() => 3,
        Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => 4,
        Some(v) if i32::try_from(v).is_ok() => 5,
        Some(_) => 9,
        None if x.len() < 64 => 1 + x.len(),
        None if x.len() < 4096 => 2 + x.len(),
        None => 5 + x.len(),
    };
    body + match body {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// Redis's rule for adding an element of `sz` bytes to a list node of `node_bytes`
/// holding `count` elements: under the size class for a negative fill; for a positive
/// fill, under 8 KiB and fewer than `fill` elements.
fn node_allows_insert(fill: i64, node_bytes: usize, count: usize, sz: usize) -> bool {
    const SIZE_CLASSES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
    const SAFETY_LIMIT: usize = 8192;
    let new_sz = node_bytes + sz + 8;
    if fill < 0 {
        if let Some(&limit) = SIZE_CLASSES.get((-fill - 1) as usize) {
            if new_sz <= limit {
                return true;
            }
        }
    }
    new_sz <= SAFETY_LIMIT && (count as i64) < fill
}
