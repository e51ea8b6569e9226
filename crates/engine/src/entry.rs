//! Table entries. A table bucket is one tagged pointer (8 bytes). Most keys hold small
//! strings, so a string entry is one heap block laid out as
//! `[flags u8][lru u24][key len u32][value len u32][expire u64, if flagged][key][value]`:
//! one bucket plus one block, instead of Redis's dictEntry + robj + two sds. Entries of
//! other types, and strings being edited in place, use the general form: one block
//! `[ObjEntry: value, lru and flags, key len][expire u64, if flagged][key]`, so a small
//! hash with a short key costs one 48-byte block besides its listpack. The shortest strings
//! (key and value within 19 bytes, no expiry) skip the block: they live whole in the
//! bucket of the shard's second table (`crate::inline`), and `EntryRef` views either kind.

use crate::inline::Inline;
use crate::value::Value;
use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

const FLAG_EXPIRE: u8 = 1;
/// General form only: the key is longer than a u32 can say, and its length is a u64 that
/// follows the expiry (never within the protocol's default limits, but possible).
const FLAG_LONG_KEY: u8 = 2;
/// The longest key whose length the head holds itself. The engine's unit tests lower it so
/// that the long-key form runs in every test with a key longer than 16 bytes.
#[cfg(not(test))]
const SHORT_KEY_MAX: usize = u32::MAX as usize;
#[cfg(test)]
const SHORT_KEY_MAX: usize = 16;
const HDR: usize = 12;
/// The low pointer bit that marks an `ObjEntry` (packed blocks are allocated 2-aligned
/// and `ObjEntry` is 8-aligned, so the bit is free in both).
const TAG_OBJ: usize = 1;
const PACKED_ALIGN: usize = 2;

/// Starts loading the cache line at `p`. Only a hint: it cannot fault, even on an address
/// that is stale or unmapped, and reads nothing the program sees.
#[inline]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` never dereferences in a way the program can observe and never
    // faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// One table bucket: a packed string block, or a boxed `ObjEntry` (tagged low bit). It owns
/// what it points to, as a `Box` would.
pub(crate) struct Slot(NonNull<u8>);

// SAFETY: a Slot is the only owner of its heap block (no sharing, no interior mutability
// reachable through `&Slot`), exactly like `Box<[u8]>` / `Box<ObjEntry>`, which are Send
// and Sync.
unsafe impl Send for Slot {}
unsafe impl Sync for Slot {}

/// The head of a general-form block. The expiry and the key follow it in the same block;
/// only `Slot` reaches them (through the block pointer, since a `&ObjEntry` covers just
/// this head).
#[repr(C)]
pub(crate) struct ObjEntry {
    pub value: Value,
    /// The LRU stamp (24 bits) and, in the top byte, the flags.
    lru_flags: u32,
    /// The key's length, unless FLAG_LONG_KEY.
    klen: u32,
}

const OBJ_HEAD: usize = std::mem::size_of::<ObjEntry>();
const LRU_BITS: u32 = 0x00ff_ffff;

impl ObjEntry {
    pub fn lru(&self) -> u32 {
        self.lru_flags & LRU_BITS
    }

    pub fn set_lru(&mut self, lru: u32) {
        self.lru_flags = (self.lru_flags & !LRU_BITS) | (lru & LRU_BITS);
    }

    fn flags(&self) -> u8 {
        (self.lru_flags >> 24) as u8
    }

    /// Bytes between the head and the key: the expiry and the long key length, if any.
    fn extra(&self) -> usize {
        let f = self.flags();
        (if f & FLAG_EXPIRE != 0 { 8 } else { 0 }) + (if f & FLAG_LONG_KEY != 0 { 8 } else { 0 })
    }
}

fn obj_layout(extra: usize, klen: usize) -> Layout {
    match Layout::from_size_align(
        OBJ_HEAD.saturating_add(extra).saturating_add(klen),
        std::mem::align_of::<ObjEntry>(),
    ) {
        Ok(l) => l,
        // As `packed_layout`: only for lengths near isize::MAX.
        Err(_) => handle_alloc_error(Layout::new::<u8>()),
    }
}

/// The type of a key's value, as TYPE names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    List,
    Set,
    ZSet,
    Hash,
    Stream,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Hash => "hash",
            Kind::Stream => "stream",
        }
    }

    /// Parses a TYPE name (SCAN ... TYPE), case-insensitively.
    pub fn parse(name: &[u8]) -> Option<Kind> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_slice() {
            b"string" => Kind::String,
            b"list" => Kind::List,
            b"set" => Kind::Set,
            b"zset" => Kind::ZSet,
            b"hash" => Kind::Hash,
            b"stream" => Kind::Stream,
            _ => return None,
        })
    }
}

impl Slot {
    pub fn packed(key: &[u8], value: &[u8], expire_at: Option<u64>, lru: u32) -> Slot {
        // The header keeps lengths as u32; anything longer (never within the default
        // proto-max-bulk-len) takes the general form.
        let (Ok(klen), Ok(vlen)) = (u32::try_from(key.len()), u32::try_from(value.len())) else {
            return Slot::general(key, expire_at, lru, Value::Str(value.to_vec()));
        };
        let exp_len = if expire_at.is_some() { 8 } else { 0 };
        let mut hdr = [0u8; HDR + 8];
        hdr[0] = if expire_at.is_some() { FLAG_EXPIRE } else { 0 };
        hdr[1..4].copy_from_slice(&lru.to_le_bytes()[..3]);
        hdr[4..8].copy_from_slice(&klen.to_le_bytes());
        hdr[8..12].copy_from_slice(&vlen.to_le_bytes());
        if let Some(at) = expire_at {
            hdr[HDR..HDR + 8].copy_from_slice(&at.to_le_bytes());
        }
        let head = HDR + exp_len;
        let layout = packed_layout(head + key.len() + value.len());
        // SAFETY: the layout's size is at least HDR > 0; the three copies fill exactly the
        // block just allocated (head + key + value bytes) from slices that cannot overlap it.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            let b = p.as_ptr();
            std::ptr::copy_nonoverlapping(hdr.as_ptr(), b, head);
            std::ptr::copy_nonoverlapping(key.as_ptr(), b.add(head), key.len());
            std::ptr::copy_nonoverlapping(value.as_ptr(), b.add(head + key.len()), value.len());
            Slot(p)
        }
    }

    /// A general-form block: head, expiry and long key length if any, key. A string in
    /// this form is one edits left so (OBJECT ENCODING "raw").
    pub(crate) fn general(key: &[u8], expire_at: Option<u64>, lru: u32, value: Value) -> Slot {
        let klen32 = (key.len() <= SHORT_KEY_MAX).then_some(key.len() as u32);
        let mut flags = 0u8;
        let mut tail = [0u8; 16];
        let mut extra = 0;
        if let Some(at) = expire_at {
            flags |= FLAG_EXPIRE;
            tail[..8].copy_from_slice(&at.to_le_bytes());
            extra = 8;
        }
        if klen32.is_none() {
            flags |= FLAG_LONG_KEY;
            tail[extra..extra + 8].copy_from_slice(&(key.len() as u64).to_le_bytes());
            extra += 8;
        }
        let head = ObjEntry {
            value,
            lru_flags: (lru & LRU_BITS) | (u32::from(flags) << 24),
            klen: klen32.unwrap_or(0),
        };
        let layout = obj_layout(extra, key.len());
        // SAFETY: the layout holds the head (aligned for ObjEntry: the block is), `extra`
        // tail bytes and the key, which the three writes fill exactly.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            let b = p.as_ptr();
            b.cast::<ObjEntry>().write(head);
            std::ptr::copy_nonoverlapping(tail.as_ptr(), b.add(OBJ_HEAD), extra);
            std::ptr::copy_nonoverlapping(key.as_ptr(), b.add(OBJ_HEAD + extra), key.len());
            Slot(p.map_addr(|a| a | TAG_OBJ))
        }
    }

    /// The general form's tail after its head: expiry and long key length (if any), key.
    fn obj_tail(&self) -> &[u8] {
        let o = self.obj_head();
        let extra = o.extra();
        let klen = if o.flags() & FLAG_LONG_KEY != 0 {
            // SAFETY: FLAG_LONG_KEY blocks hold the u64 length as their tail's last 8
            // bytes before the key (written by `general`).
            let mut a = [0u8; 8];
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.block().add(OBJ_HEAD + extra - 8),
                    a.as_mut_ptr(),
                    8,
                )
            };
            u64::from_le_bytes(a) as usize
        } else {
            o.klen as usize
        };
        // SAFETY: the block is `OBJ_HEAD + extra + klen` bytes (see `general`); the tail
        // starts after the head and is only read here.
        unsafe { std::slice::from_raw_parts(self.block().add(OBJ_HEAD), extra + klen) }
    }

    /// The block's address (tag removed), with the provenance of the whole block.
    fn block(&self) -> *mut u8 {
        self.0.as_ptr().map_addr(|a| a & !TAG_OBJ)
    }

    fn obj_head(&self) -> &ObjEntry {
        debug_assert!(self.is_obj());
        // SAFETY: general-form blocks begin with an initialized ObjEntry (see `general`),
        // alive and uniquely owned as long as the slot; `&self` keeps it so.
        unsafe { &*self.obj_ptr() }
    }

    /// Builds the compact form of a value: strings pack, everything else is an ObjEntry.
    pub fn new(key: &[u8], value: Value, expire_at: Option<u64>, lru: u32) -> Slot {
        match value {
            Value::Str(s) => Slot::packed(key, &s, expire_at, lru),
            value => Slot::general(key, expire_at, lru, value),
        }
    }

    fn is_obj(&self) -> bool {
        self.0.addr().get() & TAG_OBJ != 0
    }

    /// Starts loading the entry's block (its head, and the key when it is short) into the
    /// cache, so a walk over many entries overlaps their misses instead of taking them
    /// one at a time.
    #[inline]
    pub fn prefetch(&self) {
        prefetch(self.block());
    }

    fn obj_ptr(&self) -> *mut ObjEntry {
        self.block().cast::<ObjEntry>()
    }

    /// The general form, None for a packed string.
    pub fn obj(&self) -> Option<&ObjEntry> {
        self.is_obj().then(|| self.obj_head())
    }

    /// The general form for editing, None for a packed string (see `obj_mut` to convert).
    pub fn obj_if_mut(&mut self) -> Option<&mut ObjEntry> {
        // SAFETY: as `obj_head`; `&mut self` makes the access exclusive.
        self.is_obj().then(|| unsafe { &mut *self.obj_ptr() })
    }

    /// The packed block's bytes (header, expiry, key, value). Only for packed slots.
    fn bytes(&self) -> &[u8] {
        debug_assert!(!self.is_obj());
        // SAFETY: a packed slot points at a live block written by `packed`, whose header
        // (first HDR bytes) gives its exact length.
        unsafe {
            let b = self.0.as_ptr();
            let len = packed_len(std::slice::from_raw_parts(b, HDR));
            std::slice::from_raw_parts(b, len)
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        debug_assert!(!self.is_obj());
        // SAFETY: as `bytes`; `&mut self` makes the access exclusive.
        unsafe {
            let b = self.0.as_ptr();
            let len = packed_len(std::slice::from_raw_parts(b, HDR));
            std::slice::from_raw_parts_mut(b, len)
        }
    }

    fn key_start(b: &[u8]) -> usize {
        HDR + if b[0] & FLAG_EXPIRE != 0 { 8 } else { 0 }
    }

    fn key_len(b: &[u8]) -> usize {
        u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize
    }

    pub fn key(&self) -> &[u8] {
        match self.obj() {
            Some(o) => &self.obj_tail()[o.extra()..],
            None => {
                let b = self.bytes();
                let s = Self::key_start(b);
                &b[s..s + Self::key_len(b)]
            }
        }
    }

    pub fn expire_at(&self) -> Option<u64> {
        let (flags, at) = match self.obj() {
            Some(o) => (o.flags(), self.obj_tail()),
            None => {
                let b = self.bytes();
                (b[0], &b[HDR..])
            }
        };
        (flags & FLAG_EXPIRE != 0).then(|| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&at[..8]);
            u64::from_le_bytes(a)
        })
    }

    pub fn lru(&self) -> u32 {
        match self.obj() {
            Some(o) => o.lru(),
            None => {
                let b = self.bytes();
                u32::from_le_bytes([b[1], b[2], b[3], 0])
            }
        }
    }

    pub fn touch(&mut self, lru: u32) {
        match self.obj_if_mut() {
            Some(o) => o.set_lru(lru),
            None => self.bytes_mut()[1..4].copy_from_slice(&lru.to_le_bytes()[..3]),
        }
    }

    /// Overwrites a packed string's value, expiry and LRU stamp in place when the new value
    /// has the same length and the same expiry form (set or not), so an update allocates and
    /// frees nothing. False, with nothing changed, otherwise.
    pub fn overwrite_packed(&mut self, value: &[u8], expire_at: Option<u64>, lru: u32) -> bool {
        if self.is_obj() {
            return false;
        }
        let b = self.bytes_mut();
        let vlen = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
        if vlen != value.len() || (b[0] & FLAG_EXPIRE != 0) != expire_at.is_some() {
            return false;
        }
        b[1..4].copy_from_slice(&lru.to_le_bytes()[..3]);
        if let Some(at) = expire_at {
            b[HDR..HDR + 8].copy_from_slice(&at.to_le_bytes());
        }
        let start = b.len() - vlen;
        b[start..].copy_from_slice(value);
        true
    }

    /// Sets or clears the expiry. The block is rebuilt only when the flag changes.
    pub fn set_expire(&mut self, expire_at: Option<u64>) {
        let had = self.expire_at().is_some();
        match (had, expire_at) {
            (true, Some(at)) => {
                let at = at.to_le_bytes();
                if self.is_obj() {
                    // SAFETY: a flagged general-form block holds its expiry in the 8 bytes
                    // after the head; `&mut self` makes the write exclusive.
                    unsafe {
                        std::ptr::copy_nonoverlapping(at.as_ptr(), self.block().add(OBJ_HEAD), 8)
                    }
                } else {
                    self.bytes_mut()[HDR..HDR + 8].copy_from_slice(&at);
                }
            }
            (false, None) => {}
            _ if self.is_obj() => {
                let lru = self.lru();
                let key = self.key().to_vec();
                let value = std::mem::replace(self, Slot::packed(b"", b"", None, 0)).into_value();
                *self = Slot::general(&key, expire_at, lru, value);
            }
            _ => {
                let rebuilt = Slot::packed(self.key(), self.packed_str(), expire_at, self.lru());
                *self = rebuilt;
            }
        }
    }

    fn packed_str(&self) -> &[u8] {
        if self.is_obj() {
            return &[];
        }
        let b = self.bytes();
        &b[Self::key_start(b) + Self::key_len(b)..]
    }

    pub fn view(&self) -> EntryRef<'_> {
        EntryRef(Form::Block(self))
    }

    /// The general form of this entry, converting a packed string in place, for edits.
    pub fn obj_mut(&mut self) -> &mut ObjEntry {
        if !self.is_obj() {
            let value = Value::Str(self.packed_str().to_vec());
            *self = Slot::general(self.key(), self.expire_at(), self.lru(), value);
        }
        // SAFETY: the slot holds an ObjEntry now (converted above); `&mut self` makes the
        // access exclusive.
        unsafe { &mut *self.obj_ptr() }
    }

    pub fn into_value(self) -> Value {
        if !self.is_obj() {
            return Value::Str(self.packed_str().to_vec());
        }
        let layout = self.obj_layout();
        // SAFETY: the block begins with an initialized ObjEntry; its value is moved out,
        // the block freed with the layout it was allocated with, and `self` forgotten, so
        // neither is dropped or freed twice.
        unsafe {
            let value = std::ptr::addr_of!((*self.obj_ptr()).value).read();
            dealloc(self.block(), layout);
            std::mem::forget(self);
            value
        }
    }

    /// The layout a general-form block was allocated with.
    fn obj_layout(&self) -> Layout {
        obj_layout(0, self.obj_tail().len())
    }

    /// The bytes this entry's block was allocated with (its value's heap aside).
    pub(crate) fn block_len(&self) -> usize {
        if self.is_obj() {
            self.obj_layout().size()
        } else {
            self.bytes().len()
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.is_obj() {
            let layout = self.obj_layout();
            // SAFETY: as `into_value`; drop runs once.
            unsafe {
                std::ptr::drop_in_place(self.obj_ptr());
                dealloc(self.block(), layout);
            }
        } else {
            let layout = packed_layout(self.bytes().len());
            // SAFETY: allocated by `packed` with this same layout (the length is the one
            // its header records).
            unsafe { dealloc(self.0.as_ptr(), layout) }
        }
    }
}

/// A packed block's total length, from its first HDR bytes.
fn packed_len(h: &[u8]) -> usize {
    let exp = if h[0] & FLAG_EXPIRE != 0 { 8 } else { 0 };
    let klen = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
    let vlen = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    HDR + exp + klen + vlen
}

fn packed_layout(len: usize) -> Layout {
    match Layout::from_size_align(len, PACKED_ALIGN) {
        Ok(l) => l,
        // Only for lengths near isize::MAX, which no key or value can reach (both are
        // capped far below by the protocol's proto-max-bulk-len).
        Err(_) => handle_alloc_error(Layout::new::<u8>()),
    }
}

/// A read-only view of an entry: a block entry, or an inline string (`crate::inline`).
#[derive(Clone, Copy)]
pub struct EntryRef<'a>(Form<'a>);

#[derive(Clone, Copy)]
enum Form<'a> {
    Block(&'a Slot),
    Inline(&'a Inline),
}

impl<'a> EntryRef<'a> {
    pub(crate) fn inline(s: &'a Inline) -> EntryRef<'a> {
        EntryRef(Form::Inline(s))
    }

    /// Starts loading the entry's header (an inline one is in its bucket already).
    pub(crate) fn prefetch(&self) {
        if let Form::Block(slot) = self.0 {
            slot.prefetch();
        }
    }

    pub fn key(&self) -> &'a [u8] {
        match self.0 {
            Form::Block(slot) => slot.key(),
            Form::Inline(s) => s.key(),
        }
    }

    /// The bytes of the entry's block; None for an inline string, which has none.
    pub(crate) fn block_len(&self) -> Option<usize> {
        match self.0 {
            Form::Block(slot) => Some(slot.block_len()),
            Form::Inline(_) => None,
        }
    }

    /// The bytes this entry takes (`crate::memory::entry_bytes`): MEMORY USAGE's answer,
    /// collections estimated from their first `samples` elements (0: all).
    pub fn memory_usage(&self, samples: usize) -> usize {
        crate::memory::entry_bytes(self, samples)
    }

    /// The general form, for a block entry that has one.
    fn obj(&self) -> Option<&'a ObjEntry> {
        match self.0 {
            Form::Block(slot) => slot.obj(),
            Form::Inline(_) => None,
        }
    }

    pub fn kind(&self) -> Kind {
        match self.obj() {
            None => Kind::String,
            Some(o) => kind_of(&o.value),
        }
    }

    /// The string value, or None when the key holds another type.
    pub fn as_str(&self) -> Option<&'a [u8]> {
        match self.0 {
            Form::Inline(s) => Some(s.value()),
            Form::Block(slot) => match slot.obj() {
                None => Some(slot.packed_str()),
                Some(o) => match &o.value {
                    Value::Str(s) => Some(s),
                    _ => None,
                },
            },
        }
    }

    /// The general-form value, or None for a compact string (use `as_str`).
    pub fn value(&self) -> Option<&'a Value> {
        self.obj().map(|o| &o.value)
    }

    pub fn expire_at(&self) -> Option<u64> {
        match self.0 {
            Form::Block(slot) => slot.expire_at(),
            Form::Inline(_) => None,
        }
    }

    pub fn is_expired(&self, now: u64) -> bool {
        matches!(self.expire_at(), Some(at) if at <= now)
    }

    pub fn lru(&self) -> u32 {
        match self.0 {
            Form::Block(slot) => slot.lru(),
            Form::Inline(s) => s.lru(),
        }
    }

    /// The value, copied out in its general form (RENAME, MOVE, COPY, snapshots).
    pub fn to_value(&self) -> Value {
        match self.obj() {
            Some(o) => o.value.clone(),
            None => Value::Str(self.as_str().unwrap_or_default().to_vec()),
        }
    }

    /// A string in the general form (edited in place, OBJECT ENCODING "raw").
    pub(crate) fn is_raw_str(&self) -> bool {
        matches!(self.value(), Some(Value::Str(_)))
    }

    /// The entry's value and expiry, copied out.
    pub fn to_owned_value(&self) -> crate::value::Owned {
        crate::value::Owned {
            value: self.to_value(),
            expire_at: self.expire_at(),
            raw: self.is_raw_str(),
        }
    }

    /// OBJECT ENCODING's answer, with Redis's names and thresholds for strings: a compact
    /// string that reads as an i64 is "int", one of up to 44 bytes "embstr", an edited or
    /// longer one "raw".
    pub fn encoding(&self) -> &'static str {
        match self.obj() {
            None => {
                let s = self.as_str().unwrap_or_default();
                if s.len() <= 20 && is_canonical_i64(s) {
                    "int"
                } else if s.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Some(o) => match &o.value {
                Value::Str(_) => "raw",
                Value::Hash(h) => h.encoding(),
                Value::List(l) => l.encoding(),
                Value::Set(s) => s.encoding(),
                Value::ZSet(z) => z.encoding(),
                Value::Stream(s) => s.encoding(),
            },
        }
    }
}

/// True when `s` is the canonical decimal text of an i64 (what Redis would encode as int).
/// The type of a value in its general form.
pub(crate) fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Str(_) => Kind::String,
        Value::Hash(_) => Kind::Hash,
        Value::List(_) => Kind::List,
        Value::Set(_) => Kind::Set,
        Value::ZSet(_) => Kind::ZSet,
        Value::Stream(_) => Kind::Stream,
    }
}

pub fn is_canonical_i64(s: &[u8]) -> bool {
    crate::int::parse_i64(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_round_trip() {
        let mut s = Slot::packed(b"key", b"value", None, 7);
        assert_eq!(s.key(), b"key");
        assert_eq!(s.view().as_str(), Some(&b"value"[..]));
        assert_eq!(s.expire_at(), None);
        assert_eq!(s.lru(), 7);
        s.set_expire(Some(1234));
        assert_eq!(s.expire_at(), Some(1234));
        assert_eq!(s.key(), b"key");
        assert_eq!(s.view().as_str(), Some(&b"value"[..]));
        s.set_expire(Some(99));
        assert_eq!(s.expire_at(), Some(99));
        s.touch(0xABCDEF);
        assert_eq!(s.lru(), 0xABCDEF);
        s.set_expire(None);
        assert_eq!(s.expire_at(), None);
        assert_eq!(s.lru(), 0xABCDEF);
        let o = s.obj_mut();
        assert_eq!(o.value, Value::Str(b"value".to_vec()));
        assert_eq!(s.key(), b"key");
    }

    #[test]
    fn packed_overwrite_in_place_only_for_the_same_shape() {
        let mut s = Slot::packed(b"key", b"12345", Some(10), 1);
        let block = s.0;
        assert!(s.overwrite_packed(b"abcde", Some(20), 2));
        assert_eq!(s.0, block, "same block");
        assert_eq!(
            (s.key(), s.view().as_str(), s.expire_at(), s.lru()),
            (&b"key"[..], Some(&b"abcde"[..]), Some(20), 2)
        );
        // A different length, or an expiry form that changes, leaves it untouched.
        assert!(!s.overwrite_packed(b"abcdef", Some(20), 3));
        assert!(!s.overwrite_packed(b"vwxyz", None, 3));
        assert_eq!(
            (s.view().as_str(), s.expire_at(), s.lru()),
            (Some(&b"abcde"[..]), Some(20), 2)
        );
        let mut g = Slot::packed(b"key", b"12345", None, 1);
        g.obj_mut(); // the general form, as after APPEND
        assert!(!g.overwrite_packed(b"abcde", None, 2), "general form");
    }

    #[test]
    fn general_round_trip() {
        let set = |members: &[&[u8]]| {
            let mut v = crate::SetValue::default();
            for m in members {
                v.add(m, &Default::default());
            }
            Value::Set(v)
        };
        let value = set(&[b"a", b"bb", b"123"]);
        // A short key (length in the head) and a long one (length in the tail).
        for key in [&b"k:1"[..], &[b'x'; 40][..]] {
            let mut s = Slot::new(key, value.clone(), None, 0x12_3456);
            assert_eq!((s.key(), s.expire_at(), s.lru()), (key, None, 0x12_3456));
            s.set_expire(Some(77));
            assert_eq!(
                (s.key(), s.expire_at(), s.lru()),
                (key, Some(77), 0x12_3456)
            );
            s.set_expire(Some(78));
            s.touch(LRU_BITS);
            assert_eq!((s.key(), s.expire_at(), s.lru()), (key, Some(78), LRU_BITS));
            assert_eq!(s.view().value(), Some(&value));
            s.set_expire(None);
            assert_eq!((s.key(), s.expire_at(), s.lru()), (key, None, LRU_BITS));
            assert_eq!(s.view().to_value(), value);
            let e = Slot::new(key, value.clone(), Some(5), 1);
            assert_eq!((e.key(), e.expire_at()), (key, Some(5)));
            assert_eq!(e.into_value(), value);
        }
        // A packed string edited in place takes the general form and keeps its key.
        let mut s = Slot::packed(&[b'y'; 20], b"v", Some(9), 3);
        if let Value::Str(v) = &mut s.obj_mut().value {
            v.push(b'w');
        }
        assert_eq!(
            (s.key(), s.expire_at(), s.lru()),
            (&[b'y'; 20][..], Some(9), 3)
        );
        assert_eq!(s.view().as_str(), Some(&b"vw"[..]));
    }

    #[test]
    fn encodings() {
        let enc = |v: &[u8]| Slot::packed(b"k", v, None, 0).view().encoding();
        assert_eq!(enc(b"123"), "int");
        assert_eq!(enc(b"-9223372036854775808"), "int");
        assert_eq!(enc(b"0123"), "embstr");
        assert_eq!(enc(&[b'x'; 44]), "embstr");
        assert_eq!(enc(&[b'x'; 45]), "raw");
    }
}

#[cfg(test)]
mod layout {
    /// Memory per key depends on these staying in jemalloc's small classes.
    #[test]
    fn entry_sizes() {
        assert_eq!(std::mem::size_of::<super::Slot>(), 8);
        assert_eq!(std::mem::size_of::<Option<super::Slot>>(), 8);
        assert_eq!(std::mem::size_of::<crate::value::Value>(), 32);
        // A general-form head plus a key of up to 8 bytes fills jemalloc's 48-byte class.
        assert_eq!(std::mem::size_of::<super::ObjEntry>(), 40);
    }
}
