//! Placeholder: the hash type arrives with the data-types work.

/// A hash value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HashValue {}

impl HashValue {
    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }

    pub fn len(&self) -> usize {
        0
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
