//! Values held outside the packed string form.

pub use crate::types::{HashValue, ListValue, SetValue, StreamValue, ZSetValue};

/// A value in its general (unpacked) form. Strings live packed with their key (see `entry`)
/// until a command edits them in place (APPEND, SETRANGE, SETBIT...), which moves them here
/// so growth is amortized. Hashes and sets (24 bytes, the size of a Vec) sit inline: most
/// are small, and a separate box would cost each one another allocation. Lists and sorted
/// sets are larger and stay boxed so that `Value` stays 32 bytes, and so do streams.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Vec<u8>),
    Hash(HashValue),
    List(Box<ListValue>),
    Set(SetValue),
    ZSet(Box<ZSetValue>),
    Stream(Box<StreamValue>),
}

/// An entry lifted out of the table (RENAME, MOVE, COPY): its value and expiry.
#[derive(Debug, Clone, PartialEq)]
pub struct Owned {
    pub value: Value,
    /// Absolute expiry in Unix milliseconds.
    pub expire_at: Option<u64>,
    /// A string in the form edits leave it ("raw"), kept so when put back: Redis keeps a
    /// value's encoding across RENAME, MOVE and COPY.
    pub raw: bool,
}

impl Value {
    /// Its type, as TYPE names it.
    pub fn kind(&self) -> crate::Kind {
        crate::entry::kind_of(self)
    }
}
