//! One command's life: the command table, admission, lock planning, the handler's context,
//! and the effects a write leaves.

pub mod client;
pub mod command;
pub mod effects;
pub mod table;
