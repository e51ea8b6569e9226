//! RESP2/RESP3 frames: an incremental, bounded request parser and a reply writer. No I/O.
//!
//! The parser follows Redis 7.0's `processInlineBuffer` / `processMultibulkBuffer`
//! byte for byte, including their quirks (see `parser` docs).

mod num;
pub use num::{itoa, push_header, Digits};
pub mod parser;
mod peek;
pub mod reply;

pub use parser::{split_args, Limits, Parser, ProtocolError};
pub use peek::peek_first_arg;
pub use reply::{format_g17, Protocol, Reply};
