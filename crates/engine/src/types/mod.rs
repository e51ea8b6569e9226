//! Collection types, each with a compact form for small sizes and a scalable one for large
//! sizes, converting at Redis's thresholds (`Encodings`, set from the server's config).

mod hash;
mod id_index;
mod list;
mod segments;
mod set;
pub mod stream;
mod zset;

pub use hash::HashValue;
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use zset::ZSetValue;

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Redis's encoding thresholds (CONFIG SET changes them at run time; a collection converts
/// to its scalable form when it next grows past them, and never back, as in Redis).
#[derive(Debug)]
pub struct Encodings {
    pub hash_max_listpack_entries: AtomicUsize,
    pub hash_max_listpack_value: AtomicUsize,
    pub set_max_intset_entries: AtomicUsize,
    pub zset_max_listpack_entries: AtomicUsize,
    pub zset_max_listpack_value: AtomicUsize,
    /// list-max-listpack-size: positive = entries per node, negative = -1..-5 node size
    /// classes of 4..64 KiB.
    pub list_max_listpack_size: AtomicI64,
    /// stream-node-max-bytes: a stream node takes no more entries once its (Redis
    /// listpack) size reaches this; 0 means no limit (but 1 GiB).
    pub stream_node_max_bytes: AtomicU64,
    /// stream-node-max-entries: most entries (deleted ones included) a node takes; 0 means
    /// no limit.
    pub stream_node_max_entries: AtomicU64,
}

impl Default for Encodings {
    fn default() -> Self {
        Encodings {
            hash_max_listpack_entries: AtomicUsize::new(128),
            hash_max_listpack_value: AtomicUsize::new(64),
            set_max_intset_entries: AtomicUsize::new(512),
            zset_max_listpack_entries: AtomicUsize::new(128),
            zset_max_listpack_value: AtomicUsize::new(64),
            list_max_listpack_size: AtomicI64::new(-2),
            stream_node_max_bytes: AtomicU64::new(4096),
            stream_node_max_entries: AtomicU64::new(100),
        }
    }
}

impl Encodings {
    pub fn hash_entries(&self) -> usize {
        self.hash_max_listpack_entries.load(Relaxed)
    }
    pub fn hash_value(&self) -> usize {
        self.hash_max_listpack_value.load(Relaxed)
    }
    pub fn set_intset_entries(&self) -> usize {
        self.set_max_intset_entries.load(Relaxed)
    }
    pub fn zset_entries(&self) -> usize {
        self.zset_max_listpack_entries.load(Relaxed)
    }
    pub fn zset_value(&self) -> usize {
        self.zset_max_listpack_value.load(Relaxed)
    }
    pub fn list_size(&self) -> i64 {
        self.list_max_listpack_size.load(Relaxed)
    }
    pub fn stream_node_bytes(&self) -> u64 {
        self.stream_node_max_bytes.load(Relaxed)
    }
    pub fn stream_node_entries(&self) -> u64 {
        self.stream_node_max_entries.load(Relaxed)
    }
}
