//! Pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, and
//! Redis 7's shard channels, SSUBSCRIBE SUNSUBSCRIBE SPUBLISH (on one server, a namespace
//! of their own). The registry and delivery live in crate::services::pubsub.
//!
//! The shard commands declare no key arguments, unlike Redis's: here a channel name must
//! not take part in planning the command's key locks.

use crate::exec::command::{flags::*, ks, Channels, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::services::pubsub::{Space, Subscriptions};
use bytes::Bytes;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "pubsub",
    since: "2.0.0",
    ..Command::DEFAULT
};

pub const COMMANDS: &[Command] = &[
    Command {
    name: "subscribe",
    arity: -2,
    flags: PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED,
    channels: Channels::Subscribe,
    summary: "Listen for messages published to the given channels",
    complexity: "O(N) where N is the number of channels to subscribe to.",
    args: "channel...",
    handler: subscribe,
    ..FAMILY
},
    Command {
    name: "unsubscribe",
    arity: -1,
    flags: PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED,
    summary: "Stop listening for messages posted to the given channels",
    complexity: "O(N) where N is the number of clients already subscribed to a channel.",
    args: "[channel]...",
    handler: unsubscribe,
    ..FAMILY
},
    Command {
    name: "psubscribe",
    arity: -2,
    flags: PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED,
    channels: Channels::Patterns,
    summary: "Listen for messages published to channels matching the given patterns",
    complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
    args: "pattern=(pattern#pattern)...",
    handler: psubscribe,
    ..FAMILY
},
    Command {
    name: "punsubscribe",
    arity: -1,
    flags: PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED,
    summary: "Stop listening for messages posted to channels matching the given patterns",
    complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
    args: "[pattern#pattern]...",
    handler: punsubscribe,
    ..FAMILY
},
    Command {
    name: "publish",
    arity: 3,
    flags: PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
    channels: Channels::Publish,
    summary: "Post a message to a channel",
    complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
    args: "channel message",
    handler: publish,
    ..FAMILY
},
    Command {
    name: "ssubscribe",
    arity: -2,
    flags: PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED,
    channels: Channels::Subscribe,
    keys: Keys::Specs(&[
        KeySpec::range(ks::NOT_KEY, 1, -1, 1),
    ]),
    summary: "Listen for messages published to the given shard channels",
    since: "7.0.0",
    complexity: "O(N) where N is the number of shard channels to subscribe to.",
    args: "shardchannel...",
    handler: ssubscribe,
    ..FAMILY
},
    Command {
    name: "sunsubscribe",
    arity: -1,
    flags: PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED,
    keys: Keys::Specs(&[
        KeySpec::range(ks::NOT_KEY, 1, -1, 1),
    ]),
    summary: "Stop listening for messages posted to the given shard channels",
    since: "7.0.0",
    complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
    args: "[shardchannel]...",
    handler: sunsubscribe,
    ..FAMILY
},
    Command {
    name: "spublish",
    arity: 3,
    flags: PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
    channels: Channels::Publish,
    keys: Keys::Specs(&[
        KeySpec::range(ks::NOT_KEY, 1, 0, 1),
    ]),
    summary: "Post a message to a shard channel",
    since: "7.0.0",
    complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
    args: "shardchannel message",
    handler: spublish,
    ..FAMILY
},
    Command {
    name: "pubsub",
    arity: -2,
    flags: 0,
    group: "pubsub",
    summary: "A container for Pub/Sub commands",
    since: "2.8.0",
    handler: super::container,
    subcommands: PUBSUB_SUBS,
    ..Command::DEFAULT
},
];

const PUBSUB_SUBS: &[Command] = &[
    Command {
    name: "channels",
    arity: -2,
    flags: PUBSUB | LOADING | STALE,
    group: "pubsub",
    summary: "List active channels",
    since: "2.8.0",
    complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
    args: "[pattern#pattern]",
    handler: pubsub_channels,
    ..Command::DEFAULT
},
    Command {
    name: "numsub",
    arity: -2,
    flags: PUBSUB | LOADING | STALE,
    group: "pubsub",
    summary: "Get the count of subscribers for channels",
    since: "2.8.0",
    complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
    args: "[channel]...",
    handler: pubsub_numsub,
    ..Command::DEFAULT
},
    Command {
    name: "numpat",
    arity: 2,
    flags: PUBSUB | LOADING | STALE,
    group: "pubsub",
    summary: "Get the count of unique patterns pattern subscriptions",
    since: "2.8.0",
    handler: pubsub_numpat,
    ..Command::DEFAULT
},
    Command {
    name: "shardchannels",
    arity: -2,
    flags: PUBSUB | LOADING | STALE,
    group: "pubsub",
    summary: "List active shard channels",
    since: "7.0.0",
    complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
    args: "[pattern#pattern]",
    handler: pubsub_shardchannels,
    ..Command::DEFAULT
},
    Command {
    name: "shardnumsub",
    arity: -2,
    flags: PUBSUB | LOADING | STALE,
    group: "pubsub",
    summary: "Get the count of subscribers for shard channels",
    since: "7.0.0",
    complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
    args: "[shardchannel]...",
    handler: pubsub_shardnumsub,
    ..Command::DEFAULT
},
    Command {
    name: "help",
    arity: 2,
    flags: LOADING | STALE,
    group: "pubsub",
    summary: "Show helpful text about the different subcommands",
    since: "6.2.0",
    complexity: "O(1)",
    handler: pubsub_help,
    ..Command::DEFAULT
},
];

/// The client's subscriptions, created on first use.
fn subs<'c>(ctx: &'c mut Ctx<'_>) -> &'c mut Subscriptions {
    let info = ctx.client.info.clone();
    ctx.client.subs.get_or_insert_with(|| {
        Box::new(Subscriptions {
            client: info,
            channels: Vec::new(),
            patterns: Vec::new(),
            shard: Vec::new(),
        })
    })
}

/// Messages that arrived before this (un)subscribe go out before its reply, as in Redis.
fn drain_mail(ctx: &mut Ctx<'_>) {
    ctx.client.info.mail.drain_into(ctx.out.buf);
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
    let server = ctx.server();
    let hub = &server.pubsub;
    for i in 1..ctx.argv.len() {
        let name = ctx.kept_arg(i);
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
    let server = ctx.server();
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
    let hub = ctx.pubsub();
    let (channel, message) = (ctx.arg(1), ctx.arg(2));
    let mut me = ctx.publisher();
    let n = match space {
        Space::Global => hub.publish(channel, message, &mut me),
        Space::Shard => hub.spublish(channel, message, &mut me),
    };
    // Subscribers of the replicas get the message too (Redis without cluster mode).
    ctx.replicate_only();
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
    let list = ctx.pubsub().channels_matching(space, pattern);
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
        let n = ctx.pubsub().numsub(space, &ctx.argv[i]);
        ctx.out.bulk(&ctx.argv[i]);
        ctx.out.int(n as i64);
    }
    Ok(())
}

fn pubsub_numpat(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.out.int(ctx.pubsub().pattern_count() as i64);
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
