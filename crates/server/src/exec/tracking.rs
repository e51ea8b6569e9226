//! Client-side caching's stops on a command's path (the tracking itself is
//! `services::tracking`): keys a read records, before it runs; the table's limit, before a
//! client's command; what evictions sent it, before its reply; after it, the BCAST messages its writes caused, the invalidations for
//! the client itself (after its reply, after EXEC's whole reply), and the end of a
//! one-command CLIENT CACHING.

use crate::exec::client::Client;
use crate::exec::command::flags;
use crate::exec::{After, Ahead, Call};
use crate::server::Server;
use crate::services::tracking::{mode, records_reads, Current};

/// A read-only command of a tracking client: records its keys (a script command's keys are
/// recorded by the reads its script makes instead).
#[inline]
pub(super) fn remember(server: &Server, client: &Client, id: usize, call: &Call<'_>) {
    let cmd = &server.table.commands[id];
    if cmd.group == "scripting" || cmd.has(flags::PUBSUB) {
        return;
    }
    if records_reads(client.info.tracking.flags(), client.caching) {
        let db = server.keyspace.db(client.db);
        let argv = call.argv;
        server.table.for_each_key_position(id, argv, |i| {
            // The command's own lookup of the key then finds it in the cache: its miss
            // overlaps the one on the tracking table's entry, where it came after it.
            // (A pipeline's request had its first argument's started already, and its
            // hash in the tracking table computed when that was prefetched too: `Ahead`.)
            match call.ahead {
                Ahead::Tracked(h) if i == 1 => {
                    server.tracking.remember_hashed(client.id, &argv[1], h)
                }
                ahead => {
                    if ahead == Ahead::Nothing || i != 1 {
                        db.prefetch(&argv[i]);
                    }
                    server.tracking.remember(client.id, [&argv[i][..]])
                }
            }
        });
    }
}

/// The next request of a pipeline will read `key`: its keyspace slots, and if this client
/// records its reads, its tracking table slots, load while the current request runs.
#[inline]
pub(crate) fn prefetch_next(server: &Server, client: &Client, key: &[u8]) -> Ahead {
    server.keyspace.db(client.db).prefetch(key);
    if records_reads(client.info.tracking.flags(), client.caching) {
        Ahead::Tracked(server.tracking.prefetch(key))
    } else {
        Ahead::Keyspace
    }
}

/// Before a client's command: evicts keys past `tracking-table-max-keys`. What it sends
/// this client goes before the command's reply.
#[inline]
pub(super) fn before(server: &Server, client: &Client, out: &mut Vec<u8>) {
    if server.tracking.over_limit() {
        let me = Current {
            id: client.id,
            deferred: out,
        };
        server.tracking.enforce_limit(Some(me));
    }
}

/// After admission, which evicts keys while memory is over `maxmemory`: the invalidations
/// this client got meanwhile go before its reply (Redis sends them as the keys go, before
/// the command runs). Mail that arrived earlier goes with them, as it was due anyway.
#[inline]
pub(super) fn after_admission(server: &Server, client: &Client, out: &mut Vec<u8>) {
    let info = &client.info;
    if server.evict.maxmemory() != 0 && info.tracking.has(mode::ON) && info.mail.has_mail() {
        info.mail.drain_into(out);
    }
}

/// After a client's command (`id`: the command, if it resolved), while some client tracks,
/// when there is something to do: its CLIENT CACHING to end, invalidations for it, BCAST
/// messages waiting.
#[inline]
pub(super) fn after(
    server: &Server,
    client: &mut Client,
    id: Option<usize>,
    out: &mut Vec<u8>,
    after: &mut After,
) {
    if client.caching || !after.tracking.is_empty() || server.tracking.broadcast_pending() {
        after_any(server, client, id, out, after);
    }
}

#[inline(never)]
fn after_any(
    server: &Server,
    client: &mut Client,
    id: Option<usize>,
    out: &mut Vec<u8>,
    after: &mut After,
) {
    // CLIENT CACHING covers the next command, or the next transaction: any CLIENT
    // subcommand in between keeps it, as in Redis.
    if client.caching && client.multi.is_none() {
        let client_cmd = id.is_some_and(|id| server.table.fullnames[id].starts_with("client|"));
        if !client_cmd {
            client.caching = false;
        }
    }
    if !after.tracking.is_empty() {
        out.append(&mut after.tracking);
    }
    let me = Current {
        id: client.id,
        deferred: out,
    };
    server.tracking.broadcast(Some(me));
}
