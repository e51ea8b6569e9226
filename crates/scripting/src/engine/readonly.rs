//! Read-only globals: every table reachable from the globals is replaced by an empty proxy
//! whose __index is the real table and whose __newindex raises, as Redis protects them.

use mlua::{Function, Table, Value};
use std::collections::HashMap;

pub(super) fn errmt_of(lua: &mlua::Lua, missing: &Function) -> mlua::Result<Table> {
    let mt = lua.create_table()?;
    mt.raw_set("__index", missing.clone())?;
    Ok(mt)
}

pub(super) struct Protector<'a> {
    pub(super) lua: &'a mlua::Lua,
    pub(super) ro: Table,
    pub(super) newindex: Function,
    pub(super) seen: HashMap<usize, Table>,
}

impl Protector<'_> {
    pub(super) fn protect(&mut self, real: &Table) -> mlua::Result<Table> {
        let key = real.to_pointer() as usize;
        if let Some(p) = self.seen.get(&key) {
            return Ok(p.clone());
        }
        let proxy = self.lua.create_table()?;
        self.seen.insert(key, proxy.clone());
        let entries: Vec<(Value, Value)> =
            real.pairs::<Value, Value>().collect::<mlua::Result<_>>()?;
        for (k, v) in entries {
            if let Value::Table(t) = v {
                let p = self.protect(&t)?;
                real.raw_set(k, p)?;
            }
        }
        let mt = self.lua.create_table()?;
        mt.raw_set("__index", real.clone())?;
        mt.raw_set("__newindex", self.newindex.clone())?;
        // getmetatable() must not hand out the real table.
        mt.raw_set("__metatable", false)?;
        proxy.set_metatable(Some(mt));
        self.ro.raw_set(proxy.clone(), real.clone())?;
        Ok(proxy)
    }
}
