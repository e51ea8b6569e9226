//! placeholder

use crate::command::Command;

pub const COMMANDS: &[Command] = &[];
