//! strata-scripting: Redis's Lua 5.1 environment, independent of the server. The server
//! supplies a [`Host`] that runs `redis.call`; this crate owns the sandbox, the conversions
//! between Lua values and RESP replies, and the libraries Redis bundles.

pub mod libs;
