//! Pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB.
//! The registry and delivery live in crate::pubsub.

use crate::command::{flags::*, CmdError, CmdResult, Command, Ctx};
use crate::pubsub::{Mailbox, Publisher, Subscriptions};
use bytes::Bytes;
use std::sync::Arc;

const fn ps(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    complexity: &'static str,
    handler: crate::command::Handler,
) -> Command {
    Command {
        complexity,
        ..Command::new(name, arity, flags, "pubsub", summary, "2.0.0", handler)
    }
}

pub const COMMANDS: &[Command] = &[
    ps(
        "subscribe",
        -2,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        "Listen for messages published to the given channels",
        "O(N) where N is the number of channels to subscribe to.",
        subscribe,
    ),
    ps(
        "unsubscribe",
        -1,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        "Stop listening for messages posted to the given channels",
        "O(N) where N is the number of clients already subscribed to a channel.",
        unsubscribe,
    ),
    ps(
        "psubscribe",
        -2,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        "Listen for messages published to channels matching the given patterns",
        "O(N) where N is the number of patterns the client is already subscribed to.",
        psubscribe,
    ),
    ps(
        "punsubscribe",
        -1,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        "Stop listening for messages posted to channels matching the given patterns",
        "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
        punsubscribe,
    ),
    ps(
        "publish",
        3,
        PUBSUB | LOADING | STALE | FAST,
        "Post a message to a channel",
        "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        publish,
    ),
    Command {
        subcommands: PUBSUB_SUBS,
        ..Command::new(
            "pubsub",
            -2,
            0,
            "pubsub",
            "A container for Pub/Sub commands",
            "2.8.0",
            super::container,
        )
    },
];

const PUBSUB_SUBS: &[Command] = &[
    Command {
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        ..Command::new(
            "channels",
            -2,
            PUBSUB | LOADING | STALE,
            "pubsub",
            "List active channels",
            "2.8.0",
            pubsub_channels,
        )
    },
    Command {
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        ..Command::new(
            "numsub",
            -2,
            PUBSUB | LOADING | STALE,
            "pubsub",
            "Get the count of subscribers for channels",
            "2.8.0",
            pubsub_numsub,
        )
    },
    Command::new(
        "numpat",
        2,
        PUBSUB | LOADING | STALE,
        "pubsub",
        "Get the count of unique patterns pattern subscriptions",
        "2.8.0",
        pubsub_numpat,
    ),
    Command {
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        ..Command::new(
            "shardchannels",
            -2,
            PUBSUB | LOADING | STALE,
            "pubsub",
            "List active shard channels",
            "7.0.0",
            pubsub_shardchannels,
        )
    },
    Command {
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        ..Command::new(
            "shardnumsub",
            -2,
            PUBSUB | LOADING | STALE,
            "pubsub",
            "Get the count of subscribers for shard channels",
            "7.0.0",
            pubsub_shardnumsub,
        )
    },
    Command {
        complexity: "O(1)",
        ..Command::new(
            "help",
            2,
            LOADING | STALE,
            "pubsub",
            "Show helpful text about the different subcommands",
            "6.2.0",
            pubsub_help,
        )
    },
];

/// The client's subscriptions, created (with its mailbox) on first use.
fn subs<'c>(ctx: &'c mut Ctx<'_>) -> &'c mut Subscriptions {
    let info = ctx.client.info.clone();
    let proto = ctx.client.proto;
    ctx.client.subs.get_or_insert_with(|| {
        Box::new(Subscriptions {
            mailbox: Arc::new(Mailbox::new(info, proto)),
            channels: Vec::new(),
            patterns: Vec::new(),
        })
    })
}

/// Messages that arrived before this (un)subscribe go out before its reply, as in Redis.
fn drain_mail(ctx: &mut Ctx<'_>) {
    if let Some(s) = &ctx.client.subs {
        if s.mailbox.has_mail() {
            let n = s.mailbox.take(ctx.out.buf);
            s.mailbox.written(n);
        }
    }
}

fn confirm(ctx: &mut Ctx<'_>, kind: &[u8], name: Option<&[u8]>, count: usize) {
    ctx.out.push(3);
    ctx.out.bulk(kind);
    match name {
        Some(n) => ctx.out.bulk(n),
        None => ctx.out.null(),
    }
    ctx.out.int(count as i64);
}

fn subscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    drain_mail(ctx);
    let server = ctx.server;
    let hub = &server.pubsub;
    for i in 1..ctx.argv.len() {
        let ch = ctx.argv[i].clone();
        let s = subs(ctx);
        hub.subscribe(s, &ch);
        let n = s.count();
        confirm(ctx, b"subscribe", Some(&ch), n);
    }
    ctx.client.update_pubsub();
    Ok(())
}

fn psubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    drain_mail(ctx);
    let server = ctx.server;
    let hub = &server.pubsub;
    for i in 1..ctx.argv.len() {
        let pat = ctx.argv[i].clone();
        let s = subs(ctx);
        hub.psubscribe(s, &pat);
        let n = s.count();
        confirm(ctx, b"psubscribe", Some(&pat), n);
    }
    ctx.client.update_pubsub();
    Ok(())
}

fn unsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_any(ctx, false)
}

fn punsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_any(ctx, true)
}

fn unsubscribe_any(ctx: &mut Ctx<'_>, patterns: bool) -> CmdResult {
    drain_mail(ctx);
    let server = ctx.server;
    let hub = &server.pubsub;
    let kind: &[u8] = if patterns {
        b"punsubscribe"
    } else {
        b"unsubscribe"
    };
    let names: Vec<Bytes> = if ctx.argv.len() > 1 {
        ctx.argv[1..].to_vec()
    } else {
        match &ctx.client.subs {
            Some(s) if patterns => s.patterns.clone(),
            Some(s) => s.channels.clone(),
            None => Vec::new(),
        }
    };
    if names.is_empty() {
        let n = ctx.client.sub_count();
        confirm(ctx, kind, None, n);
    }
    for name in names {
        let n = match ctx.client.subs.as_mut() {
            Some(s) => {
                if patterns {
                    hub.punsubscribe(s, &name);
                } else {
                    hub.unsubscribe(s, &name);
                }
                s.count()
            }
            None => 0,
        };
        confirm(ctx, kind, Some(&name), n);
    }
    ctx.client.update_pubsub();
    Ok(())
}

fn publish(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut me = Publisher {
        id: ctx.client.id,
        self_push: &mut ctx.client.self_push,
        proto: ctx.out.proto,
    };
    let n = ctx
        .server
        .pubsub
        .publish(&ctx.argv[1], &ctx.argv[2], &mut me);
    if !ctx.client.self_push.is_empty() {
        ctx.client.attention = true;
    }
    ctx.out.int(n as i64);
    Ok(())
}

/// Redis answers extra arguments to CHANNELS/NUMPAT-style subcommands with this.
fn wrong_args(ctx: &Ctx<'_>) -> CmdError {
    CmdError::Custom(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
        String::from_utf8_lossy(ctx.arg(1))
    ))
}

fn pubsub_channels(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 3 {
        return Err(wrong_args(ctx));
    }
    let pattern = ctx.argv.get(2).map(|p| &p[..]);
    let list = ctx.server.pubsub.channels_matching(pattern);
    ctx.out.array(list.len());
    for c in &list {
        ctx.out.bulk(c);
    }
    Ok(())
}

fn pubsub_numsub(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.array((ctx.argv.len() - 2) * 2);
    for i in 2..ctx.argv.len() {
        let n = ctx.server.pubsub.numsub(&ctx.argv[i]);
        ctx.out.bulk(&ctx.argv[i]);
        ctx.out.int(n as i64);
    }
    Ok(())
}

fn pubsub_numpat(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.server.pubsub.pattern_count() as i64);
    Ok(())
}

/// Without cluster mode and SSUBSCRIBE there are no shard channels.
fn pubsub_shardchannels(ctx: &mut Ctx<'_>) -> CmdResult {
    if ctx.argv.len() > 3 {
        return Err(wrong_args(ctx));
    }
    ctx.out.array(0);
    Ok(())
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.array((ctx.argv.len() - 2) * 2);
    for i in 2..ctx.argv.len() {
        ctx.out.bulk(&ctx.argv[i]);
        ctx.out.int(0);
    }
    Ok(())
}

/// Redis's own PUBSUB HELP text.
fn pubsub_help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array(LINES.len());
    for l in LINES {
        ctx.out.simple(l);
    }
    Ok(())
}
