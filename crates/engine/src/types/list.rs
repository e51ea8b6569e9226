//! Placeholder: the list type arrives with the data-types work.

/// A list value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListValue {}

impl ListValue {
    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    pub fn len(&self) -> usize {
        0
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
