//! One node of a list: a contiguous byte buffer of entries in Redis's listpack encoding
//! (same header forms, so the same bytes per element: a small integer costs 2 bytes, a
//! short string its length plus 2). Each entry is `header [payload] backlen`, where the
//! backlen (the size of header+payload, 7 bits per byte) lets a reader step backwards, so
//! both ends of a node are reachable in O(1).
//!
//! Unlike a listpack, the entries need not start at offset 0: `start` leaves free room at
//! the front, so pushing at a node's head does not move the node (Redis memmoves the whole
//! listpack on every LPUSH). Buffers grow through allocator size classes, and a node that
//! stops being an end of its list is compacted (`seal`), so full nodes carry no slack.

/// Redis's quicklist SIZE_SAFETY_LIMIT: a count-limited node never exceeds this many bytes.
const SIZE_SAFETY_LIMIT: usize = 8192;
/// Node byte limits for list-max-listpack-size -1..-5.
const OPT_LEVEL: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// A listpack's header (6 bytes) and terminator (1): counted so nodes fill as Redis's do.
const LP_OVERHEAD: usize = 7;

/// An element as stored: the canonical decimal text of an i64 is kept as that integer (as
/// listpack does), anything else as bytes. So two elements are equal exactly when their
/// stored forms are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl<'a> Elem<'a> {
    /// The stored form of `s`.
    pub fn of(s: &'a [u8]) -> Elem<'a> {
        match crate::int::parse_i64(s) {
            Some(n) => Elem::Int(n),
            None => Elem::Str(s),
        }
    }

    /// The element's bytes; an integer is formatted into `buf`.
    pub fn bytes<'b>(&self, buf: &'b mut [u8; 20]) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Elem::Str(s) => s,
            Elem::Int(n) => crate::int::fmt_i64(n, buf),
        }
    }

    pub fn to_vec(self) -> Vec<u8> {
        let mut buf = [0u8; 20];
        self.bytes(&mut buf).to_vec()
    }

    /// The integer, when the element is stored as one.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Elem::Int(n) => Some(n),
            Elem::Str(_) => None,
        }
    }

    /// The bytes, when the element is stored as a string.
    pub fn as_str(&self) -> Option<&'a [u8]> {
        match *self {
            Elem::Str(s) => Some(s),
            Elem::Int(_) => None,
        }
    }
}

/// Bytes of the backlen field for an entry whose header+payload is `l` bytes, with
/// listpack's thresholds (which give one byte more than 7 bits a byte would at exactly
/// 2^14-1, 2^21-1 and 2^28-1), so node sizes, and so where nodes split, match Redis's.
fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        // Past 2^35 (never, within proto-max-bulk-len) 7 bits a byte, so it still decodes.
        _ => ((usize::BITS - l.leading_zeros()) as usize)
            .div_ceil(7)
            .max(5),
    }
}

/// An entry ready to be written.
pub struct Enc<'a> {
    head: [u8; 9],
    head_len: u8,
    data: &'a [u8],
}

impl<'a> Enc<'a> {
    pub fn new(e: Elem<'a>) -> Enc<'a> {
        let mut head = [0u8; 9];
        let (head_len, data) = match e {
            Elem::Int(v) => {
                let n = if (0..=127).contains(&v) {
                    head[0] = v as u8;
                    1
                } else if (-4096..=4095).contains(&v) {
                    let u = (v as u16) & 0x1FFF;
                    head[0] = 0xC0 | (u >> 8) as u8;
                    head[1] = u as u8;
                    2
                } else if i16::try_from(v).is_ok() {
                    head[0] = 0xF1;
                    head[1..3].copy_from_slice(&(v as i16).to_le_bytes());
                    3
                } else if (-(1 << 23)..(1 << 23)).contains(&v) {
                    head[0] = 0xF2;
                    head[1..4].copy_from_slice(&(v as i32).to_le_bytes()[..3]);
                    4
                } else if i32::try_from(v).is_ok() {
                    head[0] = 0xF3;
                    head[1..5].copy_from_slice(&(v as i32).to_le_bytes());
                    5
                } else {
                    head[0] = 0xF4;
                    head[1..9].copy_from_slice(&v.to_le_bytes());
                    9
                };
                (n, &[][..])
            }
            Elem::Str(s) => {
                let len = s.len();
                let n = if len < 64 {
                    head[0] = 0x80 | len as u8;
                    1
                } else if len < 4096 {
                    head[0] = 0xE0 | (len >> 8) as u8;
                    head[1] = len as u8;
                    2
                } else if let Ok(l32) = u32::try_from(len) {
                    head[0] = 0xF0;
                    head[1..5].copy_from_slice(&l32.to_le_bytes());
                    5
                } else {
                    // Beyond listpack's 32-bit lengths; never written by Redis, kept so no
                    // length can corrupt a node.
                    head[0] = 0xF5;
                    head[1..9].copy_from_slice(&(len as u64).to_le_bytes());
                    9
                };
                (n, s)
            }
        };
        Enc {
            head,
            head_len,
            data,
        }
    }

    fn enc_len(&self) -> usize {
        self.head_len as usize + self.data.len()
    }

    /// The entry's whole size in a node.
    pub fn total(&self) -> usize {
        let l = self.enc_len();
        l + backlen_size(l)
    }

    /// Writes the entry into `dst`, which is exactly `total()` bytes.
    fn write(&self, dst: &mut [u8]) {
        let h = self.head_len as usize;
        dst[..h].copy_from_slice(&self.head[..h]);
        let l = h + self.data.len();
        dst[h..l].copy_from_slice(self.data);
        let n = backlen_size(l);
        for (k, b) in dst[l..l + n].iter_mut().enumerate() {
            let group = ((l >> (7 * (n - 1 - k))) & 127) as u8;
            *b = if k == 0 { group } else { group | 128 };
        }
    }
}

/// Decodes the entry at `p`: the element and the entry's whole size.
pub fn decode(buf: &[u8], p: usize) -> (Elem<'_>, usize) {
    let b = buf[p];
    let le = |from: usize, n: usize| {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&buf[from..from + n]);
        u64::from_le_bytes(a)
    };
    let (elem, enc_len) = if b & 0x80 == 0 {
        (Elem::Int(i64::from(b)), 1)
    } else if b & 0xC0 == 0x80 {
        let len = (b & 0x3F) as usize;
        (Elem::Str(&buf[p + 1..p + 1 + len]), 1 + len)
    } else if b & 0xE0 == 0xC0 {
        let u = (u16::from(b & 0x1F) << 8) | u16::from(buf[p + 1]);
        // Sign-extend 13 bits.
        (Elem::Int(i64::from(((u << 3) as i16) >> 3)), 2)
    } else if b & 0xF0 == 0xE0 {
        let len = ((b & 0x0F) as usize) << 8 | buf[p + 1] as usize;
        (Elem::Str(&buf[p + 2..p + 2 + len]), 2 + len)
    } else {
        match b {
            0xF1 => (Elem::Int(i64::from(le(p + 1, 2) as u16 as i16)), 3),
            0xF2 => (
                Elem::Int(i64::from(((le(p + 1, 3) as u32) << 8) as i32 >> 8)),
                4,
            ),
            0xF3 => (Elem::Int(i64::from(le(p + 1, 4) as u32 as i32)), 5),
            0xF4 => (Elem::Int(le(p + 1, 8) as i64), 9),
            0xF0 => {
                let len = le(p + 1, 4) as usize;
                (Elem::Str(&buf[p + 5..p + 5 + len]), 5 + len)
            }
            _ => {
                let len = le(p + 1, 8) as usize;
                (Elem::Str(&buf[p + 9..p + 9 + len]), 9 + len)
            }
        }
    };
    (elem, enc_len + backlen_size(enc_len))
}

/// The start of the entry that ends at `end`, read from its backlen.
pub fn prev_start(buf: &[u8], end: usize) -> usize {
    let mut i = end - 1;
    let mut v = (buf[i] & 127) as usize;
    let mut shift = 7;
    while buf[i] & 128 != 0 {
        i -= 1;
        v |= ((buf[i] & 127) as usize) << shift;
        shift += 7;
    }
    i - v
}

pub(crate) use crate::memory::size_class as class_round;

/// A new capacity for `len` bytes plus `add`, with geometric headroom.
fn grown(len: usize, add: usize) -> usize {
    class_round(len.saturating_add(add).saturating_add(len / 8))
}

/// Whether `count` entries of `bytes` bytes in all fit in one node (quicklist's
/// _quicklistNodeAllowInsert): `fill` < 0 is a byte limit class, >= 0 an entry count
/// (within the 8 KiB safety limit).
fn fits(bytes: usize, count: usize, fill: i32) -> bool {
    match entry_bytes_limit(fill) {
        Some(limit) => bytes <= limit,
        None => LP_OVERHEAD + bytes <= SIZE_SAFETY_LIMIT && count <= fill as usize,
    }
}

/// The entry bytes a node may hold under a byte limit (`fill` < 0); None for a count limit.
fn entry_bytes_limit(fill: i32) -> Option<usize> {
    let level = (fill.unsigned_abs() as usize).min(OPT_LEVEL.len());
    (fill < 0).then(|| OPT_LEVEL[level - 1] - LP_OVERHEAD)
}

/// One node: entries live in `buf[start..]`.
#[derive(Default)]
pub struct Node {
    buf: Vec<u8>,
    start: u32,
    count: u32,
}

impl Clone for Node {
    fn clone(&self) -> Node {
        Node {
            buf: self.data().to_vec(),
            start: 0,
            count: self.count,
        }
    }
}

impl Node {
    pub fn with(enc: &Enc<'_>) -> Node {
        let mut n = Node {
            buf: Vec::with_capacity(class_round(enc.total())),
            start: 0,
            count: 0,
        };
        n.push_back(enc);
        n
    }

    /// A node started because the list's end node is full. Under a byte limit it gets a
    /// full node's capacity at once (the room in front for a head node): growing through
    /// every size class on the way there left partly used allocator slabs of each class
    /// behind, RSS that a long list did not need.
    pub fn spill(enc: &Enc<'_>, head: bool, fill: i32) -> Node {
        let t = enc.total();
        let Some(cap) = entry_bytes_limit(fill).filter(|&cap| t <= cap) else {
            return Node::with(enc);
        };
        let mut buf = Vec::with_capacity(cap);
        let at = if head { cap - t } else { 0 };
        buf.resize(at + t, 0);
        enc.write(&mut buf[at..]);
        Node {
            buf,
            start: at as u32,
            count: 1,
        }
    }

    pub fn count(&self) -> usize {
        self.count as usize
    }

    pub fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// Offset of the first entry; `buf().len()` is the end of the last.
    pub fn start(&self) -> usize {
        self.start as usize
    }

    pub fn end(&self) -> usize {
        self.buf.len()
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start()..]
    }

    pub fn bytes(&self) -> usize {
        self.buf.len() - self.start()
    }

    /// Heap bytes held (for memory accounting).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether an entry of `add` bytes may join this node (quicklist's
    /// _quicklistNodeAllowInsert): `fill` < 0 is a byte limit class, >= 0 an entry count
    /// (within the 8 KiB safety limit).
    pub fn allows(&self, add: usize, fill: i32) -> bool {
        fits(self.bytes() + add, self.count() + 1, fill)
    }

    /// Whether this node holds more than a node may (after an insert that ignored limits).
    fn exceeds(&self, fill: i32) -> bool {
        self.count > 1 && !fits(self.bytes(), self.count(), fill)
    }

    pub fn push_back(&mut self, enc: &Enc<'_>) {
        let t = enc.total();
        let len = self.buf.len();
        if self.buf.capacity() - len < t {
            let want = grown(self.bytes(), t) + self.start();
            self.buf.reserve_exact(want.saturating_sub(len));
        }
        self.buf.resize(len + t, 0);
        enc.write(&mut self.buf[len..]);
        self.count += 1;
    }

    pub fn push_front(&mut self, enc: &Enc<'_>) {
        let t = enc.total();
        if self.start() < t {
            // Regrow with all the free room at the front.
            let data = self.bytes();
            let cap = grown(data, t);
            let room = cap - data;
            if u32::try_from(room).is_err() {
                return self.insert(self.start(), enc);
            }
            let mut nb = Vec::with_capacity(cap);
            nb.resize(room, 0);
            nb.extend_from_slice(self.data());
            self.buf = nb;
            self.start = room as u32;
        }
        let s = self.start() - t;
        enc.write(&mut self.buf[s..s + t]);
        self.start = s as u32;
        self.count += 1;
    }

    pub fn first(&self) -> Elem<'_> {
        decode(&self.buf, self.start()).0
    }

    pub fn last(&self) -> Elem<'_> {
        decode(&self.buf, prev_start(&self.buf, self.buf.len())).0
    }

    pub fn pop_front(&mut self) {
        let (_, t) = decode(&self.buf, self.start());
        let s = self.start();
        self.remove_bytes(s, s + t, 1);
    }

    pub fn pop_back(&mut self) {
        let p = prev_start(&self.buf, self.buf.len());
        self.buf.truncate(p);
        self.count -= 1;
        if self.count == 0 {
            self.buf = Vec::new();
            self.start = 0;
        } else {
            self.trim_capacity();
        }
    }

    /// Byte offset of entry `i` (< count), walking from the nearer end.
    pub fn seek(&self, i: usize) -> usize {
        let count = self.count();
        if i < count / 2 {
            let mut p = self.start();
            for _ in 0..i {
                p += decode(&self.buf, p).1;
            }
            p
        } else {
            let mut p = self.buf.len();
            for _ in i..count {
                p = prev_start(&self.buf, p);
            }
            p
        }
    }

    /// Number of entries in `buf[start..p]`.
    fn count_to(&self, p: usize) -> usize {
        let mut q = self.start();
        let mut n = 0;
        while q < p {
            q += decode(&self.buf, q).1;
            n += 1;
        }
        n
    }

    /// Inserts an entry at byte offset `p` (an entry boundary), ignoring limits.
    pub fn insert(&mut self, p: usize, enc: &Enc<'_>) {
        let t = enc.total();
        let len = self.buf.len();
        if self.buf.capacity() - len < t {
            let want = grown(self.bytes(), t) + self.start();
            self.buf.reserve_exact(want.saturating_sub(len));
        }
        self.buf.resize(len + t, 0);
        self.buf.copy_within(p..len, p + t);
        enc.write(&mut self.buf[p..p + t]);
        self.count += 1;
    }

    /// Replaces the `old` bytes at `p` by an entry, ignoring limits.
    pub fn replace(&mut self, p: usize, old: usize, enc: &Enc<'_>) {
        let t = enc.total();
        let len = self.buf.len();
        if t > old {
            let d = t - old;
            if self.buf.capacity() - len < d {
                let want = grown(self.bytes(), d) + self.start();
                self.buf.reserve_exact(want.saturating_sub(len));
            }
            self.buf.resize(len + d, 0);
            self.buf.copy_within(p + old..len, p + t);
        } else if t < old {
            self.buf.copy_within(p + old..len, p + t);
            self.buf.truncate(len - (old - t));
        }
        enc.write(&mut self.buf[p..p + t]);
    }

    /// Removes `buf[from..to]`, which holds `n` whole entries.
    pub fn remove_bytes(&mut self, from: usize, to: usize, n: usize) {
        self.count -= n as u32;
        if self.count == 0 {
            self.buf = Vec::new();
            self.start = 0;
            return;
        }
        match u32::try_from(to) {
            Ok(to) if from == self.start() => self.start = to,
            _ => {
                self.buf.drain(from..to);
            }
        }
        self.trim_capacity();
    }

    /// Removes the listed entries (sorted, non-overlapping byte ranges) in one pass.
    pub fn remove_ranges(&mut self, ranges: &[(usize, usize)]) {
        if ranges.is_empty() {
            return;
        }
        let mut w = ranges[0].0;
        for (k, &(_, to)) in ranges.iter().enumerate() {
            let next = ranges.get(k + 1).map_or(self.buf.len(), |r| r.0);
            self.buf.copy_within(to..next, w);
            w += next - to;
        }
        self.buf.truncate(w);
        self.count -= ranges.len() as u32;
        if self.count == 0 {
            self.buf = Vec::new();
            self.start = 0;
        } else {
            self.trim_capacity();
        }
    }

    /// Splits at byte offset `p`: this node keeps `[start..p]`, the result holds the rest.
    pub fn split_off(&mut self, p: usize) -> Node {
        let before = self.count_to(p);
        let rest = Node {
            buf: self.buf[p..].to_vec(),
            start: 0,
            count: self.count - before as u32,
        };
        self.buf.truncate(p);
        self.count = before as u32;
        self.seal();
        rest
    }

    /// Splits a node grown past its limits (an insert or replace in the middle ignores
    /// them) into halves, recursively, until every piece fits or holds one entry. Returns the
    /// pieces after the first, which stays in `self`, in order.
    pub fn split_oversized(&mut self, fill: i32) -> Vec<Node> {
        let mut out = Vec::new();
        if !self.exceeds(fill) {
            return out;
        }
        let (total, count) = (self.bytes(), self.count());
        let (mut p, mut bytes, mut n) = (self.start(), 0usize, 0usize);
        while n == 0 || (bytes * 2 < total && n * 2 < count) {
            let t = decode(&self.buf, p).1;
            p += t;
            bytes += t;
            n += 1;
        }
        if n >= count {
            return out;
        }
        let mut rest = self.split_off(p);
        out.extend(self.split_oversized(fill));
        let more = rest.split_oversized(fill);
        out.push(rest);
        out.extend(more);
        out
    }

    /// Compacts a node that is no longer at an end of its list: no room at the front, no
    /// spare capacity.
    pub fn seal(&mut self) {
        if self.start > 0 {
            let s = self.start();
            self.buf.copy_within(s.., 0);
            self.buf.truncate(self.buf.len() - s);
            self.start = 0;
        }
        if self.buf.capacity() > class_round(self.buf.len()) {
            self.buf.shrink_to_fit();
        }
    }

    /// Gives back capacity once the node holds well under half of it.
    fn trim_capacity(&mut self) {
        let cap = self.buf.capacity();
        if cap > 256 && self.bytes() < cap / 4 {
            self.seal();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlens_follow_listpack_thresholds() {
        // A string of n >= 64 bytes is encoded in 2 + n bytes (n < 4096) or 5 + n; listpack
        // writes the backlen of an encoding of l bytes in 2 bytes below 16383, 3 from there.
        let total = |n: usize| Enc::new(Elem::Str(&vec![b'x'; n])).total();
        assert_eq!(total(4095), 2 + 4095 + 2);
        assert_eq!(total(16377), 5 + 16377 + 2);
        assert_eq!(total(16378), 5 + 16378 + 3, "l = 16383");
        assert_eq!(total(2_097_145), 5 + 2_097_145 + 3);
        assert_eq!(total(2_097_146), 5 + 2_097_146 + 4, "l = 2097151");
        // Entries written with them read back both ways.
        let elems: Vec<Vec<u8>> = [16377, 16378, 16379]
            .iter()
            .map(|&n| vec![b'y'; n])
            .collect();
        let mut node = Node::with(&Enc::new(Elem::Str(&elems[0])));
        for e in &elems[1..] {
            node.push_back(&Enc::new(Elem::Str(e)));
        }
        let (buf, mut at, mut fwd) = (node.buf(), node.start(), Vec::new());
        while at < node.end() {
            let (e, size) = decode(buf, at);
            fwd.push(e.to_vec());
            at += size;
        }
        assert_eq!(fwd, elems);
        let (mut end, mut back) = (node.end(), Vec::new());
        while end > node.start() {
            let p = prev_start(buf, end);
            back.push(decode(buf, p).0.to_vec());
            end = p;
        }
        back.reverse();
        assert_eq!(back, elems);
    }

    #[test]
    fn canonical_ints() {
        assert_eq!(crate::int::parse_i64(b"0"), Some(0));
        assert_eq!(crate::int::parse_i64(b"-1"), Some(-1));
        assert_eq!(
            crate::int::parse_i64(b"9223372036854775807"),
            Some(i64::MAX)
        );
        assert_eq!(
            crate::int::parse_i64(b"-9223372036854775808"),
            Some(i64::MIN)
        );
        for bad in [
            &b""[..],
            b"-0",
            b"01",
            b"+1",
            b"-",
            b" 1",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"1a",
            b"123456789012345678901",
        ] {
            assert_eq!(crate::int::parse_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn entries_round_trip_both_ways() {
        let mut vals: Vec<Vec<u8>> = Vec::new();
        for v in [
            0i64,
            1,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -4097,
            32767,
            -32768,
            32768,
            8388607,
            -8388608,
            8388608,
            i32::MAX as i64,
            i32::MIN as i64,
            i32::MAX as i64 + 1,
            i64::MAX,
            i64::MIN,
        ] {
            vals.push(v.to_string().into_bytes());
        }
        for len in [0usize, 1, 63, 64, 127, 128, 4095, 4096, 20000, 70000] {
            vals.push(vec![b'x'; len]);
        }
        vals.push(b"-0".to_vec());
        vals.push(b"007".to_vec());
        let mut n = Node::default();
        for v in &vals {
            n.push_back(&Enc::new(Elem::of(v)));
            n.push_front(&Enc::new(Elem::of(v)));
        }
        // Forward: reversed copies, then the originals.
        let mut p = n.start();
        let mut fwd = Vec::new();
        while p < n.end() {
            let (e, t) = decode(n.buf(), p);
            fwd.push(e.to_vec());
            p += t;
        }
        let mut want: Vec<Vec<u8>> = vals.iter().rev().cloned().collect();
        want.extend(vals.iter().cloned());
        assert_eq!(fwd, want);
        // Backward.
        let mut p = n.end();
        let mut back = Vec::new();
        while p > n.start() {
            p = prev_start(n.buf(), p);
            back.push(decode(n.buf(), p).0.to_vec());
        }
        back.reverse();
        assert_eq!(back, want);
        assert_eq!(n.count(), want.len());
    }

    #[test]
    fn small_entries_cost_what_listpack_entries_cost() {
        assert_eq!(Enc::new(Elem::of(b"5")).total(), 2);
        assert_eq!(Enc::new(Elem::of(b"1000")).total(), 3);
        assert_eq!(Enc::new(Elem::of(b"hello")).total(), 7);
        assert_eq!(Enc::new(Elem::of(&[b'a'; 100])).total(), 103);
    }

    #[test]
    fn size_classes() {
        assert_eq!(class_round(1), 8);
        assert_eq!(class_round(17), 32);
        assert_eq!(class_round(33), 48);
        assert_eq!(class_round(129), 160);
        assert_eq!(class_round(8000), 8192);
        assert_eq!(class_round(8193), 10240);
    }
}
