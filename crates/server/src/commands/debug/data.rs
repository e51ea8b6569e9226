//! The DEBUG subcommands that read or rebuild the data set: RELOAD, POPULATE, OBJECT,
//! LISTPACK, QUICKLIST, HTSTATS and HTSTATS-KEY.

use crate::commands::wrong_subcommand_args;
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::{clock, EntryRef, Ttl, Value};

/// RELOAD [MERGE] [NOFLUSH] [NOSAVE]: saves a snapshot (not with NOSAVE), empties the
/// keyspace (not with NOFLUSH) and loads the newest snapshot back. With NOSAVE and a Redis
/// RDB file at `dir`/`dbfilename`, that file is loaded instead, function libraries
/// included, as Redis loads its dump.rdb (`rdb::tools::reload_from_rdb`). With NOFLUSH, a key
/// the snapshot holds replaces one of its name under MERGE; without MERGE the reload fails
/// (Redis stops the server then), and so it does while function libraries exist, which a
/// Redis snapshot would hold and clash with (Strata's keep them apart: they stay as
/// they are).
pub(super) fn reload(ctx: &mut Ctx<'_>) -> CmdResult {
    let (mut save, mut flush, mut merge) = (true, true, false);
    for i in 2..ctx.argv.len() {
        match ctx.lower(i).as_slice() {
            b"merge" => merge = true,
            b"noflush" => flush = false,
            b"nosave" => save = false,
            _ => {
                return Err(CmdError::err(
                    "DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                ))
            }
        }
    }
    let Some(server) = ctx.server().arc() else {
        return Err(CmdError::err("the server is shutting down"));
    };
    let failed = || CmdError::err("Error trying to load the RDB dump");
    if let Some(path) = (!save)
        .then(|| crate::rdb::tools::rdb_in_dir(&server))
        .flatten()
    {
        if flush {
            super::super::admin::touch_watched_all(ctx);
        }
        crate::rdb::tools::reload_from_rdb(&server, &path, flush, merge).map_err(|e| {
            tracing::warn!("DEBUG RELOAD: {e}");
            failed()
        })?;
        tracing::warn!("DB reloaded by DEBUG RELOAD from {}", path.display());
        ctx.out.ok();
        return Ok(());
    }
    if save {
        crate::services::snapshot::start(&server, false, false)
            .map_err(crate::commands::persistence::start_error)?;
    }
    if !flush && !merge && !ctx.scripts().libraries.read().is_empty() {
        return Err(failed());
    }
    if flush {
        super::super::admin::touch_watched_all(ctx);
    }
    crate::services::snapshot::reload(&server, flush, flush || merge).map_err(|e| {
        tracing::warn!("DEBUG RELOAD: {e}");
        failed()
    })?;
    tracing::warn!("DB reloaded by DEBUG RELOAD");
    ctx.out.ok();
    Ok(())
}

/// LOADAOF: the data set as a restart would load it (the newest snapshot and the journal
/// after it).
pub(super) fn loadaof(ctx: &mut Ctx<'_>) -> CmdResult {
    let Some(server) = ctx.server().arc() else {
        return Err(CmdError::err("the server is shutting down"));
    };
    super::super::admin::touch_watched_all(ctx);
    crate::services::persist::reload_all(&server).map_err(|e| {
        tracing::warn!("DEBUG LOADAOF: {e}");
        CmdError::err("Error trying to load the AOF")
    })?;
    tracing::warn!("Append Only File loaded by DEBUG LOADAOF");
    ctx.out.ok();
    Ok(())
}

/// A positive count argument, as Redis's getPositiveLongFromObjectOrReply reads it (one
/// error for anything else).
fn positive(ctx: &Ctx<'_>, i: usize) -> Result<u64, CmdError> {
    parse_i64(ctx.arg(i))
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| CmdError::err("value is out of range, must be positive"))
}

/// POPULATE <count> [<prefix>] [<size>]: string keys `<prefix>:<n>` (prefix "key") holding
/// `value:<n>`, cut or zero-padded to `size` bytes when a size is given; keys that exist
/// are left alone. Like Redis, neither journaled nor announced as keyspace events; WATCH
/// sees them.
pub(super) fn populate(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 5 {
        return Err(wrong_subcommand_args(ctx));
    }
    let count = positive(ctx, 2)?;
    let size = if ctx.argv.len() == 5 {
        Some(positive(ctx, 4)? as usize).filter(|&s| s > 0)
    } else {
        None
    };
    let prefix: &[u8] = if ctx.argv.len() >= 4 {
        ctx.arg(3)
    } else {
        b"key"
    };
    let db = ctx.client.db;
    let mut key = Vec::new();
    let mut value = Vec::new();
    for j in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.extend_from_slice(format!(":{j}").as_bytes());
        let mut l = ctx.lock1(&key);
        if l.contains(&key) {
            continue;
        }
        value.clear();
        value.extend_from_slice(format!("value:{j}").as_bytes());
        if let Some(size) = size {
            value.resize(size, 0);
        }
        l.set_str(&key, &value, Ttl::Clear);
        drop(l);
        ctx.watches().touch(db, &key);
    }
    ctx.out.ok();
    Ok(())
}

/// The entry at argv[2] as stored (expired or not), or Redis's "no such key".
fn stored<'l>(l: &'l mut strata_engine::Locked<'_>, key: &[u8]) -> Result<EntryRef<'l>, CmdError> {
    l.peek_raw(key).ok_or(CmdError::NO_SUCH_KEY)
}

/// OBJECT <key>: Redis's fields, in its words: where the value lives, its encoding, the
/// size it takes serialized, its LRU stamp and idle time; for a list, its nodes.
pub(super) fn object(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(2);
    let compressed = ctx.config().get().list_compress_depth != 0;
    let mut l = ctx.lock1(key);
    let now = l.now();
    let e = stored(&mut l, key)?;
    let mut text = format!(
        "Value at:{:p} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        e.key().as_ptr(),
        crate::commands::keys::refcount(ctx, &e),
        e.encoding(),
        serialized_len(e),
        e.lru(),
        clock::idle_ms(e.lru(), now) / 1000
    );
    if let Some(Value::List(list)) = e.value() {
        let (nodes, bytes, fill) = list.shape();
        text.push_str(&format!(
            " ql_nodes:{nodes} ql_avg_node:{:.2} ql_listpack_max:{fill} ql_compressed:{} ql_uncompressed_size:{bytes}",
            list.len() as f64 / nodes.max(1) as f64,
            u8::from(compressed)
        ));
    }
    drop(l);
    ctx.out.simple(&text);
    Ok(())
}

/// The bytes a snapshot takes for the value alone (what Redis calls its serialized
/// length): the entry's encoding less the head an empty string's takes.
fn serialized_len(e: EntryRef<'_>) -> usize {
    let mut buf = Vec::new();
    strata_storage::encode_entry(&mut buf, 0, b"", None, e);
    let whole = buf.len();
    buf.clear();
    strata_storage::encode_value(&mut buf, 0, b"", None, &Value::Str(Vec::new()));
    // The empty string's encoding is its head and one length byte.
    whole.saturating_sub(buf.len() - 1)
}

/// LISTPACK <key>: logs a listpack-encoded value's entries.
pub(super) fn listpack(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let e = stored(&mut l, key)?;
    if e.encoding() != "listpack" {
        return Err(CmdError::err("Not a listpack encoded object."));
    }
    let mut items = Vec::new();
    match e.value() {
        Some(Value::Hash(h)) => h.iter().for_each(|(f, v)| items.extend([f, v].map(show))),
        Some(Value::ZSet(z)) => z.for_range(0, z.len(), false, |m, s| {
            items.push(show(m));
            items.push(strata_resp::format_g17(s));
        }),
        _ => {}
    }
    tracing::info!(
        "listpack of {}: {} entries: {}",
        show(key),
        items.len(),
        items.join(" ")
    );
    drop(l);
    ctx.out.simple("Listpack structure written to the log");
    Ok(())
}

/// QUICKLIST <key> [<0|1>]: logs a list's nodes (with its elements when asked).
pub(super) fn quicklist(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 4 {
        return Err(wrong_subcommand_args(ctx));
    }
    let full = ctx.argv.len() == 4 && super::atoi(ctx.arg(3)) != 0;
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let e = stored(&mut l, key)?;
    let Some(Value::List(list)) = e.value() else {
        return Err(CmdError::err("Not a quicklist encoded object."));
    };
    let (nodes, bytes, fill) = list.shape();
    tracing::info!(
        "quicklist of {}: {} elements in {nodes} nodes, {bytes} bytes, fill {fill}",
        show(key),
        list.len()
    );
    if full {
        let elems: Vec<String> = list.iter().map(|el| show(&el.to_vec())).collect();
        tracing::info!("quicklist of {}: {}", show(key), elems.join(" "));
    }
    drop(l);
    ctx.out.simple("Quicklist structure written to the log");
    Ok(())
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// HTSTATS <dbid>: the database's key and expiry tables, as element counts.
pub(super) fn htstats(ctx: &mut Ctx<'_>) -> CmdResult {
    let id = ctx.int_arg(2)?;
    let ks = ctx.keyspace();
    let db = usize::try_from(id)
        .ok()
        .filter(|&d| d < ks.db_count())
        .map(|d| ks.db(d))
        .ok_or_else(|| CmdError::err("Out of range database"))?;
    let text = format!(
        "[Dictionary HT]\nshards: {}\nnumber of elements: {}\n[Expires HT]\nnumber of elements: {}\n",
        db.shard_count(),
        db.len(),
        db.volatile_len()
    );
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// HTSTATS-KEY <key>: the element count of a value kept in a hash table (a hashtable
/// hash or set, a skiplist sorted set).
pub(super) fn htstats_key(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let e = stored(&mut l, key)?;
    let len = match (e.encoding(), e.value()) {
        ("hashtable", Some(Value::Hash(h))) => h.len(),
        ("hashtable", Some(Value::Set(s))) => s.len(),
        ("skiplist", Some(Value::ZSet(z))) => z.len(),
        _ => {
            return Err(CmdError::err(
                "The value stored at the specified key is not represented using an hash table",
            ))
        }
    };
    drop(l);
    let text = format!("number of elements: {len}\n");
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}
