//! Placeholder: the set commands arrive with the data-types work.

use crate::command::Command;

pub const COMMANDS: &[Command] = &[];
