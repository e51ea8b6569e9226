//! The stream commands, as Redis 7.0's t_stream.c: XADD XTRIM XDEL XLEN XSETID (`add.rs`),
//! XRANGE XREVRANGE (`range.rs`), XREAD XREADGROUP with blocking (`read.rs`), XGROUP XACK
//! XPENDING (`groups.rs`), XCLAIM XAUTOCLAIM (`claim.rs`) and XINFO (`info.rs`). The value
//! type is `strata_engine::StreamValue`.
//!
//! Keyspace events (class `t`) are Redis's: xadd, xtrim (XADD's trimming and XTRIM), xdel,
//! xsetid, xgroup-create, xgroup-setid, xgroup-destroy, xgroup-delconsumer, and
//! xgroup-createconsumer wherever a consumer is created (XGROUP CREATECONSUMER, XREADGROUP,
//! XCLAIM, XAUTOCLAIM).
//!
//! The journal gets deterministic effects (docs/persistence.md): XADD with the ID it
//! generated and `~` trims as the exact trims they came to; XREADGROUP, XCLAIM and
//! XAUTOCLAIM as the `XCLAIM ... TIME ... RETRYCOUNT ... FORCE JUSTID LASTID` records Redis
//! propagates (`claim::Records`), so a replay rebuilds the pending entries, their owners,
//! delivery times and counts.

mod add;
mod claim;
mod groups;
mod info;
mod range;
mod read;

use crate::exec::command::{flags, ks, Begin, CmdError, Command, Find, KeySpec, Keys};
use bytes::Bytes;
use strata_engine::stream::{Entry, StreamError, StreamId, ID_TEXT_MAX};
use strata_resp::Reply;

const KEY1: Keys = Keys::Range {
    first: 1,
    last: 1,
    step: 1,
};
/// A container's subcommand whose key follows the subcommand (XGROUP CREATE key ...).
const KEY2: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};
/// A key whose entries, consumers or groups the command deletes (Redis's RW|DELETE).
const DELETES1: Keys = Keys::Specs(&[KeySpec::range(ks::RW | ks::DELETE, 1, 0, 1)]);
const DELETES2: Keys = Keys::Specs(&[KeySpec::range(ks::RW | ks::DELETE, 2, 0, 1)]);
/// A key the command adds a group or a consumer to (Redis's RW|INSERT).
const INSERTS2: Keys = Keys::Specs(&[KeySpec::range(ks::RW | ks::INSERT, 2, 0, 1)]);

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "stream",
    since: "5.0.0",
    ..Command::DEFAULT
};

const W: u32 = flags::WRITE;
const R: u32 = flags::READONLY;
const F: u32 = flags::FAST;
const D: u32 = flags::DENYOOM;

const READ_CPLX: &str = "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.";
const RANGE_CPLX: &str = "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).";

pub const COMMANDS: &[Command] = &[
    Command {
        name: "xadd",
        arity: -5,
        flags: W | D | F,
        keys: KEY1,
        summary: "Appends a new entry to a stream",
        complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        args: "key#key [NOMKSTREAM] [trim=(strategy=(MAXLEN | MINID) [operator=(equal== | approximately=~)] threshold [LIMIT:count#int])] id_or_auto=(auto_id=* | id) field_value=(field value)...",
        tips: &["nondeterministic_output"],
        handler: add::xadd,
        ..FAMILY
    },
    Command {
        name: "xtrim",
        arity: -4,
        flags: W,
        keys: DELETES1,
        summary: "Trims the stream to (approximately if '~' is passed) a certain size",
        complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        args: "key#key trim=(strategy=(MAXLEN | MINID) [operator=(equal== | approximately=~)] threshold [LIMIT:count#int])",
        tips: &["nondeterministic_output"],
        handler: add::xtrim,
        ..FAMILY
    },
    Command {
        name: "xdel",
        arity: -3,
        flags: W | F,
        keys: DELETES1,
        summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
        complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
        args: "key#key id...",
        handler: add::xdel,
        ..FAMILY
    },
    Command {
        name: "xlen",
        arity: 2,
        flags: R | F,
        keys: Keys::Specs(&[
            KeySpec::range(ks::RO, 1, 0, 1),
        ]),
        summary: "Return the number of entries in a stream",
        args: "key#key",
        handler: add::xlen,
        ..FAMILY
    },
    Command {
        name: "xsetid",
        arity: -3,
        flags: W | D | F,
        keys: KEY1,
        summary: "An internal command for replicating stream values",
        args: "key#key last-id [ENTRIESADDED:entries_added#int] [MAXDELETEDID:max_deleted_entry_id]",
        handler: add::xsetid,
        ..FAMILY
    },
    Command {
        name: "xrange",
        arity: -4,
        flags: R,
        keys: KEY1,
        summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval",
        complexity: RANGE_CPLX,
        args: "key#key start end [COUNT:count#int]",
        handler: range::xrange,
        ..FAMILY
    },
    Command {
        name: "xrevrange",
        arity: -4,
        flags: R,
        keys: KEY1,
        summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
        complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        args: "key#key end start [COUNT:count#int]",
        handler: range::xrevrange,
        ..FAMILY
    },
    Command {
        name: "xread",
        arity: -4,
        flags: R | flags::BLOCKING | flags::MOVABLEKEYS,
        keys: Keys::Custom(
            read::stream_keys,
            &[KeySpec {
                flags: ks::RO | ks::ACCESS,
                begin: Begin::Keyword {
                    keyword: "STREAMS",
                    startfrom: 1,
                },
                find: Find::Range {
                    lastkey: -1,
                    step: 1,
                    limit: 2,
                },
            }],
        ),
        summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
        complexity: READ_CPLX,
        args: "[COUNT:count#int] [BLOCK:milliseconds#int] STREAMS:streams=(key#key... id...)",
        handler: read::xread,
        ..FAMILY
    },
    Command {
        name: "xreadgroup",
        arity: -7,
        flags: W | flags::BLOCKING | flags::MOVABLEKEYS,
        keys: Keys::Custom(
            read::stream_keys,
            &[KeySpec {
                flags: ks::RO | ks::ACCESS,
                begin: Begin::Keyword {
                    keyword: "STREAMS",
                    startfrom: 4,
                },
                find: Find::Range {
                    lastkey: -1,
                    step: 1,
                    limit: 2,
                },
            }],
        ),
        summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
        complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        args: "GROUP:group_consumer=(group consumer) [COUNT:count#int] [BLOCK:milliseconds#int] [NOACK] STREAMS:streams=(key#key... id...)",
        handler: read::xreadgroup,
        ..FAMILY
    },
    Command {
        name: "xgroup",
        arity: -2,
        summary: "A container for consumer groups commands",
        complexity: "Depends on subcommand.",
        handler: super::container,
        subcommands: XGROUP,
        ..FAMILY
    },
    Command {
        name: "xack",
        arity: -4,
        flags: W | F,
        keys: KEY1,
        summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
        complexity: "O(1) for each message ID processed.",
        args: "key#key group id...",
        handler: groups::xack,
        ..FAMILY
    },
    Command {
        name: "xpending",
        arity: -3,
        flags: R,
        keys: KEY1,
        summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
        complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        args: "key#key group [filters=([IDLE:min-idle-time#int] start end count#int [consumer])]",
        tips: &["nondeterministic_output"],
        handler: groups::xpending,
        ..FAMILY
    },
    Command {
        name: "xclaim",
        arity: -6,
        flags: W | F,
        keys: KEY1,
        summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
        complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
        args: "key#key group consumer min-idle-time id... [IDLE:ms#int] [TIME:unix-time-milliseconds#time] [RETRYCOUNT:count#int] [FORCE] [JUSTID] [LASTID:id]",
        tips: &["nondeterministic_output"],
        handler: claim::xclaim,
        ..FAMILY
    },
    Command {
        name: "xautoclaim",
        arity: -6,
        flags: W | F,
        keys: DELETES1,
        summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
        since: "6.2.0",
        complexity: "O(1) if COUNT is small.",
        args: "key#key group consumer min-idle-time start [COUNT:count#int] [JUSTID]",
        tips: &["nondeterministic_output"],
        handler: claim::xautoclaim,
        ..FAMILY
    },
    Command {
        name: "xinfo",
        arity: -2,
        summary: "A container for stream introspection commands",
        complexity: "Depends on subcommand.",
        handler: super::container,
        subcommands: XINFO,
        ..FAMILY
    },
];

const XGROUP: &[Command] = &[
    Command {
        name: "create",
        arity: -5,
        flags: W | D,
        keys: INSERTS2,
        summary: "Create a consumer group.",
        args: "key#key groupname id=(id | new_id=$) [MKSTREAM] [ENTRIESREAD:entries_read#int]",
        handler: groups::create,
        ..FAMILY
    },
    Command {
        name: "setid",
        arity: -5,
        flags: W,
        keys: KEY2,
        summary: "Set a consumer group to an arbitrary last delivered ID value.",
        args: "key#key groupname id=(id | new_id=$) [ENTRIESREAD:entries_read#int]",
        handler: groups::setid,
        ..FAMILY
    },
    Command {
        name: "destroy",
        arity: 4,
        flags: W,
        keys: DELETES2,
        summary: "Destroy a consumer group.",
        complexity:
            "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        args: "key#key groupname",
        handler: groups::destroy,
        ..FAMILY
    },
    Command {
        name: "createconsumer",
        arity: 5,
        flags: W | D,
        keys: INSERTS2,
        summary: "Create a consumer in a consumer group.",
        since: "6.2.0",
        args: "key#key groupname consumername",
        handler: groups::createconsumer,
        ..FAMILY
    },
    Command {
        name: "delconsumer",
        arity: 5,
        flags: W,
        keys: DELETES2,
        summary: "Delete a consumer from a consumer group.",
        args: "key#key groupname consumername",
        handler: groups::delconsumer,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: flags::LOADING | flags::STALE,
        summary: "Show helpful text about the different subcommands",
        handler: groups::help,
        ..FAMILY
    },
];

const XINFO: &[Command] = &[
    Command {
        name: "consumers",
        arity: 4,
        flags: R,
        keys: KEY2,
        summary: "List the consumers in a consumer group",
        args: "key#key groupname",
        tips: &["nondeterministic_output"],
        handler: info::consumers,
        ..FAMILY
    },
    Command {
        name: "groups",
        arity: 3,
        flags: R,
        keys: KEY2,
        summary: "List the consumer groups of a stream",
        args: "key#key",
        handler: info::groups,
        ..FAMILY
    },
    Command {
        name: "stream",
        arity: -3,
        flags: R,
        keys: KEY2,
        summary: "Get information about a stream",
        args: "key#key [FULL:full=([COUNT:count#int])]",
        handler: info::stream,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: flags::LOADING | flags::STALE,
        summary: "Show helpful text about the different subcommands",
        handler: info::help,
        ..FAMILY
    },
];

/// A stream operation's error, with Redis's text.
fn stream_err(e: StreamError) -> CmdError {
    CmdError::Static(e.text())
}

/// An ID argument (`-` and `+` allowed unless `strict`; `missing_seq` completes `<ms>`).
fn parse_id(arg: &[u8], missing_seq: u64, strict: bool) -> Result<StreamId, CmdError> {
    StreamId::parse(arg, missing_seq, strict).ok_or(stream_err(StreamError::InvalidId))
}

/// IDs that must all parse before a command changes anything (XDEL, XACK).
fn parse_strict_ids(args: &[Bytes]) -> Result<Vec<StreamId>, CmdError> {
    args.iter().map(|a| parse_id(a, 0, true)).collect()
}

/// An ID's text, for replies built elsewhere and journal records.
fn id_bytes(id: StreamId) -> Bytes {
    let mut buf = [0u8; ID_TEXT_MAX];
    Bytes::copy_from_slice(id.write(&mut buf))
}

/// Replies an ID as a bulk string.
fn reply_id(out: &mut Reply<'_>, id: StreamId) {
    let mut buf = [0u8; ID_TEXT_MAX];
    out.bulk(id.write(&mut buf));
}

/// Replies one entry: `[id, [field, value, ...]]`.
fn reply_entry(out: &mut Reply<'_>, e: &Entry<'_>) {
    out.array(2);
    reply_id(out, e.id());
    out.array(e.len() * 2);
    for (f, v) in e.fields() {
        out.bulk(f);
        out.bulk(v);
    }
}

/// Replies an aggregate whose length is known only once its elements are written: they go
/// to a scratch buffer first (what Redis does with a deferred length).
fn reply_counted(out: &mut Reply<'_>, fill: impl FnOnce(&mut Reply<'_>) -> usize) {
    let mut buf = Vec::new();
    let n = fill(&mut Reply::new(&mut buf, out.proto));
    out.array(n);
    out.raw(&buf);
}

/// `-NOGROUP No such key '<key>' or consumer group '<group>'<tail>`.
fn no_group(key: &[u8], group: &[u8], tail: &str) -> CmdError {
    CmdError::Custom(format!(
        "NOGROUP No such key '{}' or consumer group '{}'{tail}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

/// A non-negative count option (COUNT of XRANGE and XREAD): Redis's integer error, and a
/// negative count taken as 0.
fn count_arg(arg: &[u8]) -> Result<u64, CmdError> {
    let n = crate::exec::command::parse_i64(arg).ok_or(CmdError::NOT_INTEGER)?;
    Ok(n.max(0) as u64)
}
