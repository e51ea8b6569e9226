//! Placeholder: the set type arrives with the data-types work.

/// A set value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SetValue {}

impl SetValue {
    /// OBJECT ENCODING's name for the form in use.
    pub fn encoding(&self) -> &'static str {
        "intset"
    }

    pub fn len(&self) -> usize {
        0
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
