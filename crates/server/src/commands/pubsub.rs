//! Pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, and
//! Redis 7's shard channels, SSUBSCRIBE SUNSUBSCRIBE SPUBLISH (on one server, a namespace
//! of their own). The registry and delivery live in crate::services::pubsub.
//!
//! The shard commands declare no key arguments, unlike Redis's: here a channel name must
//! not take part in planning the command's key locks.

use crate::exec::command::{flags::*, CmdResult, Command, Ctx};
use crate::services::pubsub::{Mailbox, Publisher, Space, Subscriptions};
use bytes::Bytes;
use std::sync::Arc;

const fn ps(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    complexity: &'static str,
    handler: crate::exec::command::Handler,
) -> Command {
    Command {
        complexity,
        ..Command::new(name, arity, flags, "pubsub", summary, "2.0.0", handler)
    }
}

/// A shard-channel command: Redis 7.0.
const fn shard(command: Command) -> Command {
    Command {
        since: "7.0.0",
        ..command
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
    shard(ps(
        "ssubscribe",
        -2,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        "Listen for messages published to the given shard channels",
        "O(N) where N is the number of shard channels to subscribe to.",
        ssubscribe,
    )),
    shard(ps(
        "sunsubscribe",
        -1,
        PUBSUB | NOSCRIPT | LOADING | STALE,
        "Stop listening for messages posted to the given shard channels",
        "O(N) where N is the number of clients already subscribed to a shard channel.",
        sunsubscribe,
    )),
    shard(ps(
        "spublish",
        3,
        PUBSUB | LOADING | STALE | FAST,
        "Post a message to a shard channel",
        "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        spublish,
    )),
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
            shard: Vec::new(),
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

/// What a (un)subscribe command works on.
#[derive(Clone, Copy)]
enum Kind {
    Channel(Space),
    Pattern,
}

impl Kind {
    /// The confirmations' names: (subscribe, unsubscribe).
    fn verbs(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Kind::Channel(Space::Global) => (b"subscribe", b"unsubscribe"),
            Kind::Channel(Space::Shard) => (b"ssubscribe", b"sunsubscribe"),
            Kind::Pattern => (b"psubscribe", b"punsubscribe"),
        }
    }

    /// The count a confirmation carries: shard channels are counted apart (Redis 7.0).
    fn counted(self, s: &Subscriptions) -> usize {
        match self {
            Kind::Channel(Space::Shard) => s.shard.len(),
            _ => s.count(),
        }
    }

    fn names(self, s: &Subscriptions) -> &Vec<Bytes> {
        match self {
            Kind::Channel(space) => s.names(space),
            Kind::Pattern => &s.patterns,
        }
    }
}

fn subscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    subscribe_any(ctx, Kind::Channel(Space::Global))
}

fn ssubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    subscribe_any(ctx, Kind::Channel(Space::Shard))
}

fn psubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    subscribe_any(ctx, Kind::Pattern)
}

fn subscribe_any(ctx: &mut Ctx<'_>, kind: Kind) -> CmdResult {
    drain_mail(ctx);
    let server = ctx.server;
    let hub = &server.pubsub;
    for i in 1..ctx.argv.len() {
        let name = ctx.argv[i].clone();
        let s = subs(ctx);
        match kind {
            Kind::Channel(space) => hub.subscribe(space, s, &name),
            Kind::Pattern => hub.psubscribe(s, &name),
        };
        let n = kind.counted(s);
        confirm(ctx, kind.verbs().0, Some(&name), n);
    }
    ctx.client.update_pubsub();
    Ok(())
}

fn unsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_any(ctx, Kind::Channel(Space::Global))
}

fn sunsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_any(ctx, Kind::Channel(Space::Shard))
}

fn punsubscribe(ctx: &mut Ctx<'_>) -> CmdResult {
    unsubscribe_any(ctx, Kind::Pattern)
}

fn unsubscribe_any(ctx: &mut Ctx<'_>, kind: Kind) -> CmdResult {
    drain_mail(ctx);
    let server = ctx.server;
    let hub = &server.pubsub;
    let verb = kind.verbs().1;
    let names: Vec<Bytes> = if ctx.argv.len() > 1 {
        ctx.argv[1..].to_vec()
    } else {
        ctx.client
            .subs
            .as_ref()
            .map_or_else(Vec::new, |s| kind.names(s).clone())
    };
    if names.is_empty() {
        let n = ctx.client.subs.as_ref().map_or(0, |s| kind.counted(s));
        confirm(ctx, verb, None, n);
    }
    for name in names {
        let n = match ctx.client.subs.as_mut() {
            Some(s) => {
                match kind {
                    Kind::Channel(space) => hub.unsubscribe(space, s, &name),
                    Kind::Pattern => hub.punsubscribe(s, &name),
                };
                kind.counted(s)
            }
            None => 0,
        };
        confirm(ctx, verb, Some(&name), n);
    }
    ctx.client.update_pubsub();
    Ok(())
}

fn publish(ctx: &mut Ctx<'_>) -> CmdResult {
    publish_in(ctx, Space::Global)
}

fn spublish(ctx: &mut Ctx<'_>) -> CmdResult {
    publish_in(ctx, Space::Shard)
}

fn publish_in(ctx: &mut Ctx<'_>, space: Space) -> CmdResult {
    let mut me = Publisher {
        id: ctx.client.id,
        self_push: &mut ctx.client.self_push,
        proto: ctx.out.proto,
    };
    let hub = &ctx.server.pubsub;
    let n = match space {
        Space::Global => hub.publish(&ctx.argv[1], &ctx.argv[2], &mut me),
        Space::Shard => hub.spublish(&ctx.argv[1], &ctx.argv[2], &mut me),
    };
    if !ctx.client.self_push.is_empty() {
        ctx.client.attention = true;
    }
    ctx.out.int(n as i64);
    Ok(())
}

fn pubsub_channels(ctx: &mut Ctx<'_>) -> CmdResult {
    list_channels(ctx, Space::Global)
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>) -> CmdResult {
    list_channels(ctx, Space::Shard)
}

fn list_channels(ctx: &mut Ctx<'_>, space: Space) -> CmdResult {
    if ctx.argv.len() > 3 {
        return Err(super::wrong_subcommand_args(ctx));
    }
    let pattern = ctx.argv.get(2).map(|p| &p[..]);
    let list = ctx.server.pubsub.channels_matching(space, pattern);
    ctx.out.array(list.len());
    for c in &list {
        ctx.out.bulk(c);
    }
    Ok(())
}

fn pubsub_numsub(ctx: &mut Ctx<'_>) -> CmdResult {
    count_subscribers(ctx, Space::Global)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>) -> CmdResult {
    count_subscribers(ctx, Space::Shard)
}

fn count_subscribers(ctx: &mut Ctx<'_>, space: Space) -> CmdResult {
    ctx.out.array((ctx.argv.len() - 2) * 2);
    for i in 2..ctx.argv.len() {
        let n = ctx.server.pubsub.numsub(space, &ctx.argv[i]);
        ctx.out.bulk(&ctx.argv[i]);
        ctx.out.int(n as i64);
    }
    Ok(())
}

fn pubsub_numpat(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.server.pubsub.pattern_count() as i64);
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
    super::help_text(ctx, LINES)
}
