//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key...]: keys sent to another server as RESTORE
//! commands with their DUMP payloads and remaining TTLs (after AUTH and SELECT when
//! needed), then deleted here unless COPY, as Redis 7.0's cluster.c does it, with its
//! replies (+NOKEY, -IOERR..., the target's errors passed through).
//!
//! The network round trips run on the worker's blocking pool (`Ctx::defer`), so the
//! worker thread goes on serving its other clients; the command then runs a second time
//! with the outcome and deletes the keys the target acknowledged. Other clients may
//! write those keys in between (Redis blocks everything meanwhile; Strata does not), so
//! a key is deleted only if it still holds what was sent: the same expiry and a payload
//! with the same CRC64. Inside EXEC or a script the round trips run in place, bounded by
//! the timeout, with the keys' shards held throughout.

use crate::exec::command::{
    flags, ks, Begin, CmdError, CmdResult, Command, Find, KeyAt, KeySpec, Keys,
};
use crate::exec::ctx::Ctx;
use crate::rdb;
use crate::services::migrate::{Outcome, Transfer};
use crate::services::notify;
use bytes::Bytes;
use std::time::Duration;

pub const COMMANDS: &[Command] = &[Command {
    name: "migrate",
    arity: -6,
    flags: flags::WRITE | flags::MOVABLEKEYS,
    keys: Keys::Custom(
        migrate_keys,
        &[
            KeySpec::range(ks::RW | ks::ACCESS | ks::DELETE, 3, 0, 1),
            KeySpec {
                flags: ks::RW | ks::ACCESS | ks::DELETE | ks::INCOMPLETE,
                begin: Begin::Keyword {
                    keyword: "KEYS",
                    startfrom: -2,
                },
                find: Find::Range {
                    lastkey: -1,
                    step: 1,
                    limit: 0,
                },
            },
        ],
    ),
    summary: "Atomically transfer a key from a Redis instance to another one.",
    since: "2.6.0",
    complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
    args: "host port#int key_or_empty_string=(key#key | empty_string=) destination-db#int timeout#int [COPY] [REPLACE] [authentication=([AUTH:password] | [AUTH2:username_password=(username password)])] [KEYS:key#key1...]",
    acl: &["@keyspace", "@dangerous"],
    tips: &["nondeterministic_output"],
    handler: migrate,
    ..Command::DEFAULT
}];

/// Redis's migrateGetKeys: the key argument, or with KEYS (and an empty key argument)
/// every argument after it; options with values are stepped over.
fn migrate_keys(argv: &[Bytes], f: &mut dyn FnMut(KeyAt)) {
    let at = |pos| KeyAt {
        pos,
        flags: ks::RW | ks::ACCESS | ks::DELETE,
    };
    let mut i = 6;
    while i < argv.len() {
        let a = &argv[i];
        if a.eq_ignore_ascii_case(b"keys") {
            if argv[3].is_empty() {
                (i + 1..argv.len()).for_each(|pos| f(at(pos)));
            }
            return;
        }
        if a.eq_ignore_ascii_case(b"auth") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") {
            i += 2;
        }
        i += 1;
    }
    f(at(3))
}

/// The parsed arguments.
struct Args {
    copy: bool,
    replace: bool,
    auth: Option<(Option<Bytes>, Bytes)>,
    /// Positions of the keys in argv.
    keys: std::ops::Range<usize>,
}

fn parse(ctx: &Ctx<'_>) -> Result<Args, CmdError> {
    let argc = ctx.argv.len();
    let mut a = Args {
        copy: false,
        replace: false,
        auth: None,
        keys: 3..4,
    };
    let mut j = 6;
    while j < argc {
        let more = argc - 1 - j;
        match ctx.lower(j).as_slice() {
            b"copy" => a.copy = true,
            b"replace" => a.replace = true,
            b"auth" if more >= 1 => {
                a.auth = Some((None, ctx.argv[j + 1].clone()));
                j += 1;
            }
            b"auth2" if more >= 2 => {
                a.auth = Some((Some(ctx.argv[j + 1].clone()), ctx.argv[j + 2].clone()));
                j += 2;
            }
            b"keys" => {
                if !ctx.arg(3).is_empty() {
                    return Err(CmdError::err(
                        "When using MIGRATE KEYS option, the key argument must be set to the empty string",
                    ));
                }
                a.keys = j + 1..argc;
                break;
            }
            _ => return Err(CmdError::SYNTAX),
        }
        j += 1;
    }
    Ok(a)
}

/// What the first run sent, and what came of it, for the second run.
struct Sent {
    /// Each key sent, its expiry then, and its payload's CRC64.
    keys: Vec<(Bytes, Option<u64>, [u8; 8])>,
    outcome: Outcome,
    /// Whether the keys may have changed since they were sent (the locks were let go).
    verify: bool,
}

fn migrate(ctx: &mut Ctx<'_>) -> CmdResult {
    let a = parse(ctx)?;
    // AUTH's password, AUTH2's user and password: hidden from the slow log and MONITOR.
    for j in 6..ctx.argv.len() {
        let secrets = match ctx.lower(j).as_slice() {
            b"auth" => 1,
            b"auth2" => 2,
            b"keys" => break,
            _ => 0,
        };
        for k in 1..=secrets {
            ctx.redact(j + k);
        }
    }
    if let Some(sent) = ctx.client.resume.take() {
        if let Ok(sent) = sent.downcast::<Sent>() {
            return finish(ctx, &a, *sent);
        }
    }
    let timeout = ctx.int_arg(5)?;
    let db = ctx.int_arg(4)?;
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let keys: Vec<&[u8]> = a.keys.clone().map(|i| ctx.arg(i)).collect();
    // lookupKeyRead for each key; the values are copied out under the lock and encoded
    // after it.
    let mut l = ctx.lock(&keys);
    let found: Vec<_> = keys
        .iter()
        .filter_map(|&k| {
            let e = l.get(k)?;
            Some((
                Bytes::copy_from_slice(k),
                rdb::entry_to_rdb(e),
                e.expire_at(),
            ))
        })
        .collect();
    drop(l);
    if found.is_empty() {
        ctx.no_effect();
        ctx.out.simple("NOKEY");
        return Ok(());
    }
    let now = ctx.now_ms;
    let mut sent = Vec::with_capacity(found.len());
    let mut restores = Vec::with_capacity(found.len());
    for (key, value, expire_at) in found {
        // A key that expired since it was looked up is not sent; a TTL rounds up to 1 ms.
        let ttl = match expire_at {
            None => 0,
            Some(at) if at < now => continue,
            Some(at) => (at - now).max(1),
        };
        let payload = rdb::dump_payload(ctx.server(), &value);
        let mut crc = [0u8; 8];
        crc.copy_from_slice(&payload[payload.len() - 8..]);
        sent.push((key.clone(), expire_at, crc));
        restores.push((key, ttl, payload));
    }
    let t = Transfer {
        host: String::from_utf8_lossy(ctx.arg(1)).into_owned(),
        port: String::from_utf8_lossy(ctx.arg(2)).into_owned(),
        db,
        timeout,
        auth: a.auth.clone(),
        replace: a.replace,
        keys: restores,
        tls: (ctx.server().config.get().tls_cluster)
            .then(|| crate::net::tls::client_side(ctx.server())),
    };
    match ctx.server().arc().filter(|_| ctx.may_block()) {
        Some(server) => {
            ctx.defer(Box::new(move || {
                let outcome = server.migrations.transfer(&t);
                Box::new(Sent {
                    keys: sent,
                    outcome,
                    verify: true,
                })
            }));
            Ok(())
        }
        None => {
            let outcome = ctx.server().migrations.transfer(&t);
            let sent = Sent {
                keys: sent,
                outcome,
                verify: false,
            };
            finish(ctx, &a, sent)
        }
    }
}

/// The second half: deletes the acknowledged keys (unless COPY) and replies.
fn finish(ctx: &mut Ctx<'_>, a: &Args, sent: Sent) -> CmdResult {
    let mut deleted: Vec<Bytes> = Vec::new();
    if !a.copy {
        let acked: Vec<&(Bytes, Option<u64>, [u8; 8])> = sent
            .keys
            .iter()
            .zip(&sent.outcome.acked)
            .filter_map(|(k, &ok)| ok.then_some(k))
            .collect();
        if !acked.is_empty() {
            let names: Vec<&[u8]> = acked.iter().map(|k| &k.0[..]).collect();
            let mut l = ctx.lock(&names);
            for (key, expire_at, crc) in acked {
                let unchanged = !sent.verify
                    || l.peek(key).is_some_and(|e| {
                        e.expire_at() == *expire_at && {
                            let p = rdb::dump_payload(ctx.server(), &rdb::entry_to_rdb(e));
                            p[p.len() - 8..] == crc[..]
                        }
                    });
                if unchanged && l.remove(key) {
                    deleted.push(key.clone());
                }
            }
        }
    }
    if deleted.is_empty() {
        ctx.no_effect();
    } else {
        for key in &deleted {
            ctx.notify(notify::GENERIC, "del", key);
        }
        let mut argv = Vec::with_capacity(deleted.len() + 1);
        argv.push(Bytes::from_static(b"DEL"));
        argv.extend(deleted);
        ctx.rewrite1(argv);
    }
    match &sent.outcome.error {
        None => {
            ctx.out.ok();
            Ok(())
        }
        Some(f) => Err(CmdError::Custom(f.reply())),
    }
}
