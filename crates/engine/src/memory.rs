//! What entries cost in memory: the allocator's size classes, and the bytes one key takes
//! (MEMORY USAGE, and the embedded table's own accounting of a memory budget).
//!
//! A key's bytes are what its entry allocates, rounded up to jemalloc's size classes: its
//! table slot (8 bytes and a control byte; 24 and one for an inline string), its block
//! (a packed string, or the general form's head with the key), and its value's heap
//! (collections: their structure, and what their elements hold outside it, estimated from
//! the first `samples` elements as Redis's MEMORY USAGE does, all of them for 0). The
//! table's free buckets (up to 1/8 of them at the highest load) are not charged to keys.

use crate::entry::EntryRef;
use crate::value::Value;

/// The size jemalloc hands out for a request of `n` bytes (its size classes on x86-64
/// and aarch64 with 4 KiB pages: 8, then multiples of 16 up to 128, then four classes per
/// doubling). Growing to a class boundary uses the whole block, and growth stays geometric.
/// Sizes up to 4 KiB (nearly every allocation) take one load from a table: the counting
/// allocator asks for every allocation.
#[inline]
pub fn size_class(n: usize) -> usize {
    if n <= 4096 {
        // In bounds: (4096 + 7) / 8 = 512.
        return SMALL_CLASSES[(n + 7) >> 3] as usize;
    }
    size_class_of(n)
}

/// The class of every multiple of 8 bytes up to 4 KiB.
static SMALL_CLASSES: [u16; 513] = {
    let mut t = [0u16; 513];
    let mut i = 0;
    while i < t.len() {
        t[i] = size_class_of(i * 8) as u16;
        i += 1;
    }
    t
};

const fn size_class_of(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 16 {
        return 16;
    }
    let p = 1usize << (usize::BITS - 1 - (n - 1).leading_zeros());
    let step = if p / 4 > 16 { p / 4 } else { 16 };
    n.div_ceil(step).saturating_mul(step)
}

/// Table slot bytes of a block entry: its pointer and hashbrown's control byte.
const BLOCK_SLOT: usize = 8 + 1;
/// ... and of an inline string, which lives whole in its slot.
const INLINE_SLOT: usize = 24 + 1;

/// The bytes `entry` takes: slot, block and value, collections estimated from the first
/// `samples` elements (0: all).
pub fn entry_bytes(entry: &EntryRef<'_>, samples: usize) -> usize {
    match entry.block_len() {
        None => INLINE_SLOT,
        Some(block) => {
            BLOCK_SLOT
                + size_class(block)
                + entry.value().map_or(0, |v| value_heap_bytes(v, samples))
        }
    }
}

/// The heap a general-form value holds beyond its 32 bytes in the entry.
pub fn value_heap_bytes(value: &Value, samples: usize) -> usize {
    match value {
        Value::Str(s) => heap_of_capacity(s.capacity()),
        Value::Hash(h) => h.heap_bytes(samples),
        Value::Set(s) => s.heap_bytes(samples),
        Value::List(l) => size_class(std::mem::size_of_val(&**l)) + l.heap_bytes(samples),
        Value::ZSet(z) => size_class(std::mem::size_of_val(&**z)) + z.heap_bytes(samples),
        Value::Stream(s) => s.heap_bytes(),
    }
}

/// What a database's tables take beyond their entries (MEMORY STATS
/// overhead.hashtable.main): every bucket's slot and control byte, free ones included, and
/// a group's worth of control bytes per table.
pub fn table_overhead(db: &crate::Db) -> usize {
    let table = |buckets: usize, slot: usize| match buckets {
        0 => 0,
        n => size_class(n * (slot + 1) + 16),
    };
    db.allocated()
        .iter()
        .map(|s| {
            let g = s.acquire();
            table(g.small.num_buckets(), 24) + table(g.table.num_buckets(), 8)
        })
        .sum()
}

/// The block behind a buffer of `capacity` bytes (none for 0).
pub(crate) fn heap_of_capacity(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else {
        size_class(capacity)
    }
}

/// `total` scaled from the `taken` first of `len` elements to all of them.
pub(crate) fn extrapolate(total: usize, taken: usize, len: usize) -> usize {
    if taken == 0 || taken >= len {
        return total;
    }
    (total as u128 * len as u128 / taken as u128) as usize
}

/// How many of `len` elements a sample of `samples` reads (0: all).
pub(crate) fn sample_len(samples: usize, len: usize) -> usize {
    if samples == 0 {
        len
    } else {
        samples.min(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout};
    use tikv_jemallocator::Jemalloc;

    /// `size_class` is jemalloc's own answer for every size up to 64 KiB and for a spread
    /// of larger ones.
    #[test]
    fn size_classes_are_jemallocs() {
        let sizes = (1..=65_536usize).chain((17..40).map(|b| (1usize << b) / 3 + 5));
        for n in sizes {
            let layout = Layout::from_size_align(n, 1).expect("layout");
            // SAFETY: a non-zero layout; the block is freed with the same layout.
            let usable = unsafe {
                let p = Jemalloc.alloc(layout);
                assert!(!p.is_null());
                let u = tikv_jemallocator::usable_size(p);
                Jemalloc.dealloc(p, layout);
                u
            };
            assert_eq!(size_class(n), usable, "size {n}");
        }
    }

    #[test]
    fn samples_extrapolate_to_the_whole() {
        assert_eq!(sample_len(0, 7), 7);
        assert_eq!(sample_len(5, 7), 5);
        assert_eq!(sample_len(9, 7), 7);
        assert_eq!(extrapolate(50, 5, 100), 1000);
        assert_eq!(extrapolate(50, 5, 5), 50);
        assert_eq!(extrapolate(0, 0, 0), 0);
    }
}
