//! Errors: every decoding failure carries the byte offset where it was found.

use bytes::Bytes;
use std::fmt;
use std::io;

/// What went wrong. See [`Error`] for where.
#[derive(Debug)]
pub enum ErrorKind {
    /// The underlying reader failed (not end of input: that is [`ErrorKind::Truncated`]).
    Io(io::Error),
    /// The input ended in the middle of the file or payload.
    Truncated,
    /// The file does not start with `REDIS` and four digits.
    BadSignature,
    /// An RDB version this crate does not read (it reads 1 to 10, like Redis 7.0).
    UnsupportedVersion(u32),
    /// The CRC64 at the end of the file does not match its contents.
    Checksum { stored: u64, computed: u64 },
    /// A key holds a module value (RDB types 6 and 7): only the module can decode it.
    ModuleValue {
        /// The key, when known (a DUMP payload has none).
        key: Option<Bytes>,
        /// The module type name encoded in the module id.
        module: String,
    },
    /// A functions record in the format of the Redis 7.0 release candidates (opcode 246).
    PreReleaseFunctions,
    /// Malformed content; the text says what.
    Corrupt(String),
}

/// A decoding error: what went wrong and the byte offset (from the start of the file or
/// payload) of the item where it was found.
#[derive(Debug)]
pub struct Error {
    offset: u64,
    kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(offset: u64, kind: ErrorKind) -> Self {
        Error { offset, kind }
    }

    pub(crate) fn corrupt(offset: u64, msg: impl Into<String>) -> Self {
        Error::new(offset, ErrorKind::Corrupt(msg.into()))
    }

    /// Byte offset of the problem from the start of the input.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// True when the input simply ended early (e.g. a replication socket closed), as
    /// opposed to holding bad data.
    pub fn is_truncated(&self) -> bool {
        matches!(self.kind, ErrorKind::Truncated)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(e) => write!(f, "read failed: {e}"),
            ErrorKind::Truncated => f.write_str("unexpected end of input"),
            ErrorKind::BadSignature => f.write_str("not an RDB file (no REDIS signature)"),
            ErrorKind::UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported RDB version {v} (this reader handles 1 to 10)"
                )
            }
            ErrorKind::Checksum { stored, computed } => write!(
                f,
                "RDB checksum mismatch: file says {stored:016x}, contents give {computed:016x}"
            ),
            ErrorKind::ModuleValue {
                key: Some(k),
                module,
            } => write!(
                f,
                "key '{}' holds a value of module type '{module}', which cannot be loaded \
                 without that module",
                String::from_utf8_lossy(k)
            ),
            ErrorKind::ModuleValue { key: None, module } => write!(
                f,
                "the value is of module type '{module}', which cannot be loaded without that module"
            ),
            ErrorKind::PreReleaseFunctions => f.write_str(
                "functions saved in the format of Redis 7.0 release candidates (opcode 246) \
                 are not supported; save the file again with Redis 7.0 GA or later",
            ),
            ErrorKind::Corrupt(m) => f.write_str(m),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Why [`crate::restore`] refused a DUMP payload. `Display` gives the text Redis replies
/// with (without the `ERR ` prefix).
#[derive(Debug)]
pub enum PayloadError {
    /// Too short for the footer, a newer RDB version, or a CRC64 mismatch.
    VersionOrChecksum,
    /// The footer is fine but the value inside is malformed (the detail says how).
    BadData(Error),
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadError::VersionOrChecksum => {
                f.write_str("DUMP payload version or checksum are wrong")
            }
            PayloadError::BadData(_) => f.write_str("Bad data format"),
        }
    }
}

impl std::error::Error for PayloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PayloadError::BadData(e) => Some(e),
            PayloadError::VersionOrChecksum => None,
        }
    }
}

/// A defect inside a packed blob (listpack, ziplist, intset, zipmap), at a position
/// relative to the blob; [`BlobError::at_file`] places it in the input.
#[derive(Debug)]
pub(crate) struct BlobError {
    pub at: usize,
    pub what: std::borrow::Cow<'static, str>,
}

impl BlobError {
    pub fn new(at: usize, what: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        BlobError {
            at,
            what: what.into(),
        }
    }

    /// As an input error for a blob of kind `kind` (e.g. "hash listpack") that starts at
    /// input offset `blob_offset`.
    /// Worded as Redis logs such a failure ("Ziplist integrity check failed"), which
    /// tools and Redis's own tests look for.
    pub fn at_file(self, blob_offset: u64, kind: &str) -> Error {
        let mut chars = kind.chars();
        let kind: String = match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => String::new(),
        };
        Error::corrupt(
            blob_offset,
            format!(
                "{kind} integrity check failed: {} (at byte {} of the blob)",
                self.what, self.at
            ),
        )
    }
}
