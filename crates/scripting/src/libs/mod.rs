//! The libraries Redis bundles with its Lua: cjson, cmsgpack, bit and struct.

/// Installs every bundled library as a global table in `lua`.
pub fn register_all(_lua: &mlua::Lua) -> mlua::Result<()> {
    Ok(())
}
