//! Number parsing and formatting as Redis does it (long double, strtod).

pub mod longdouble;
pub mod strtod;
