//! XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO HELP.

use super::{reply_entry, reply_id};
use crate::commands::{help_text, wrong_subcommand_args};
use crate::exec::command::{parse_i64, CmdError, CmdResult};
use crate::exec::ctx::Ctx;
use strata_engine::stream::{GroupRef, StreamId};
use strata_engine::StreamValue;
use strata_resp::Reply;

/// XINFO STREAM FULL's default COUNT.
const FULL_COUNT: i64 = 10;

pub(super) fn stream(ctx: &mut Ctx<'_>) -> CmdResult {
    let argv = ctx.argv;
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let s = l.stream_get(key)?.ok_or(CmdError::NO_SUCH_KEY)?;
    // None: the summary; Some(n): FULL with COUNT n (0: everything).
    let full = match &argv[3..] {
        [] => None,
        [full] if full.eq_ignore_ascii_case(b"full") => Some(FULL_COUNT),
        [full, count, n]
            if full.eq_ignore_ascii_case(b"full") && count.eq_ignore_ascii_case(b"count") =>
        {
            let n = parse_i64(n).ok_or(CmdError::NOT_INTEGER)?;
            Some(if n < 0 { FULL_COUNT } else { n })
        }
        _ => return Err(wrong_subcommand_args(ctx)),
    };
    let out = &mut ctx.out;
    out.map(if full.is_some() { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(rax_nodes(s) as i64);
    for (name, id) in [
        (&b"last-generated-id"[..], s.last_id()),
        (b"max-deleted-entry-id", s.max_deleted_id()),
    ] {
        out.bulk(name);
        reply_id(out, id);
    }
    out.bulk(b"entries-added");
    out.int(s.entries_added() as i64);
    out.bulk(b"recorded-first-entry-id");
    reply_id(out, s.recorded_first_id());
    let Some(count) = full else {
        out.bulk(b"groups");
        out.int(s.group_count() as i64);
        for (name, e) in [
            (&b"first-entry"[..], s.first_entry()),
            (b"last-entry", s.last_entry()),
        ] {
            out.bulk(name);
            match e {
                Some(e) => reply_entry(out, &e),
                None => out.null(),
            }
        }
        return Ok(());
    };
    let take = match count {
        0 => usize::MAX,
        n => usize::try_from(n).unwrap_or(usize::MAX),
    };
    out.bulk(b"entries");
    let entries: Vec<_> = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .take(take)
        .collect();
    out.array(entries.len());
    for e in &entries {
        reply_entry(out, e);
    }
    out.bulk(b"groups");
    out.array(s.group_count());
    for g in s.groups() {
        full_group(out, &g, take);
    }
    Ok(())
}

/// One group of XINFO STREAM FULL, with up to `take` pending entries for it and for each
/// consumer.
fn full_group(out: &mut Reply<'_>, g: &GroupRef<'_>, take: usize) {
    out.map(7);
    out.bulk(b"name");
    out.bulk(g.name());
    out.bulk(b"last-delivered-id");
    reply_id(out, g.last_id());
    group_counters(out, g);
    out.bulk(b"pel-count");
    out.int(g.pending_len() as i64);
    out.bulk(b"pending");
    out.array(g.pending_len().min(take));
    for p in g.pending(StreamId::MIN, StreamId::MAX).take(take) {
        out.array(4);
        reply_id(out, p.id);
        out.bulk(p.consumer);
        out.int(p.delivery_time);
        out.int(p.delivery_count as i64);
    }
    out.bulk(b"consumers");
    out.array(g.consumer_count());
    for c in g.consumers() {
        out.map(4);
        out.bulk(b"name");
        out.bulk(c.name());
        out.bulk(b"seen-time");
        out.int(c.seen_time());
        out.bulk(b"pel-count");
        out.int(c.pending_len() as i64);
        out.bulk(b"pending");
        out.array(c.pending_len().min(take));
        for p in c.pending(StreamId::MIN, StreamId::MAX).take(take) {
            out.array(3);
            reply_id(out, p.id);
            out.int(p.delivery_time);
            out.int(p.delivery_count as i64);
        }
    }
}

/// "entries-read" and "lag", each null when unknown.
fn group_counters(out: &mut Reply<'_>, g: &GroupRef<'_>) {
    for (name, v) in [(&b"entries-read"[..], g.entries_read()), (b"lag", g.lag())] {
        out.bulk(name);
        match v {
            Some(n) => out.int(n),
            None => out.null(),
        }
    }
}

pub(super) fn groups(ctx: &mut Ctx<'_>) -> CmdResult {
    let key = ctx.arg(2);
    let mut l = ctx.lock1(key);
    let s = l.stream_get(key)?.ok_or(CmdError::NO_SUCH_KEY)?;
    let out = &mut ctx.out;
    out.array(s.group_count());
    for g in s.groups() {
        out.map(6);
        out.bulk(b"name");
        out.bulk(g.name());
        out.bulk(b"consumers");
        out.int(g.consumer_count() as i64);
        out.bulk(b"pending");
        out.int(g.pending_len() as i64);
        out.bulk(b"last-delivered-id");
        reply_id(out, g.last_id());
        group_counters(out, &g);
    }
    Ok(())
}

pub(super) fn consumers(ctx: &mut Ctx<'_>) -> CmdResult {
    let (key, group) = (ctx.arg(2), ctx.arg(3));
    let now = ctx.now_ms;
    let mut l = ctx.lock1(key);
    let s = l.stream_get(key)?.ok_or(CmdError::NO_SUCH_KEY)?;
    let Some(g) = s.group(group) else {
        return Err(CmdError::Custom(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(group),
            String::from_utf8_lossy(key)
        )));
    };
    let out = &mut ctx.out;
    out.array(g.consumer_count());
    for c in g.consumers() {
        out.map(3);
        out.bulk(b"name");
        out.bulk(c.name());
        out.bulk(b"pending");
        out.int(c.pending_len() as i64);
        out.bulk(b"idle");
        out.int(c.idle(now));
    }
    Ok(())
}

pub(super) fn help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    ];
    help_text(ctx, LINES)
}

/// "radix-tree-nodes": the nodes of the radix tree Redis would keep the stream's nodes in,
/// keyed by their first IDs as 16 big-endian bytes. Strata keeps them in an ordered map;
/// this counts the nodes of the compressed radix tree over the same keys (a branch
/// node where keys part, a compressed node for each run they share, a leaf for each key),
/// which is what Redis's tree holds.
fn rax_nodes(s: &StreamValue) -> usize {
    let keys: Vec<[u8; 16]> = s
        .nodes()
        .filter_map(|n| n.entries().next())
        .map(|e| {
            let id = e.id();
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&id.ms.to_be_bytes());
            k[8..].copy_from_slice(&id.seq.to_be_bytes());
            k
        })
        .collect();
    if keys.is_empty() {
        return 1;
    }
    subtree(&keys, 0)
}

/// Nodes of the subtree of sorted, distinct `keys` that share their first `depth` bytes,
/// starting with a node at that depth.
fn subtree(keys: &[[u8; 16]], depth: usize) -> usize {
    if depth == 16 {
        return 1;
    }
    let (first, last) = (keys[0], keys[keys.len() - 1]);
    if first[depth] == last[depth] {
        // A compressed node over the bytes all keys share, then what follows it.
        let mut end = depth;
        while end < 16 && first[end] == last[end] {
            end += 1;
        }
        return 1 + subtree(keys, end);
    }
    // A branch node: one child for each byte the keys take here.
    let mut n = 1;
    let mut rest = keys;
    while let Some(k) = rest.first() {
        let run = rest.iter().take_while(|x| x[depth] == k[depth]).count();
        n += subtree(&rest[..run], depth + 1);
        rest = &rest[run..];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::subtree;

    fn key(ms: u64, seq: u64) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&ms.to_be_bytes());
        k[8..].copy_from_slice(&seq.to_be_bytes());
        k
    }

    #[test]
    fn radix_tree_shapes() {
        // One key: a compressed node of all 16 bytes and its leaf.
        assert_eq!(subtree(&[key(1, 0)], 0), 2);
        // Two keys parting at the last byte: compressed run, branch, two leaves.
        assert_eq!(subtree(&[key(1, 0), key(1, 1)], 0), 4);
        // Parting at byte 7 then sharing the rest: a compressed node under each branch.
        assert_eq!(subtree(&[key(1, 5), key(2, 5)], 0), 6);
    }
}
