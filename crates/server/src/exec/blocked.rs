//! Blocked clients re-enter here: when a write makes a key ready, its connection re-runs
//! the command of each client waiting on that key, as that client, through
//! [`exec::execute`](crate::exec::execute), in arrival order (`services::blocking` keeps
//! the waiters).

use crate::exec::client::Client;
use crate::exec::{execute, After, Call, Origin, Worker};
use crate::services::blocking::{BlockRequest, State, Waiter};
use crate::tick::Tick;
use bytes::Bytes;
use std::sync::Arc;

/// Serves the waiters of `ready` keys, in the order they were signalled (and then of keys
/// their commands make ready in turn, as Redis's handleClientsBlockedOnKeys).
pub fn serve_ready(w: &mut Worker<'_>, mut ready: Vec<(usize, Bytes)>) {
    let server = w.server;
    let reg = &server.blocking;
    let mut next = 0;
    while next < ready.len() {
        let (db, key) = ready[next].clone();
        next += 1;
        if reg.count() == 0 {
            return;
        }
        let Some(queue) = reg.waiters(db, &key) else {
            continue;
        };
        for waiter in queue {
            let st = waiter.state();
            if !matches!(*st, State::Blocked) {
                continue;
            }
            // Re-run the waiter's command as the waiter, on this thread.
            let mut c = Client::new(waiter.info.clone(), true);
            c.db = waiter.db;
            c.proto = waiter.proto;
            c.no_touch = waiter.no_touch;
            c.rerun = true;
            let mut out = Vec::new();
            let mut after = After::default();
            w.clock = Tick::now();
            let call = Call::new(&waiter.argv);
            execute(w, &mut c, call, Origin::Client, &mut out, &mut after);
            if after.block.is_some() {
                drop(st);
                // Nothing this waiter can take. When the key is gone, later waiters would
                // find nothing either; when it holds a value this waiter does not take (a
                // zset under a key BLPOP and BZPOPMIN clients both wait on, a BLMOVE whose
                // destination has another type), a later waiter may still be served; and
                // an XREADGROUP waiter answers an error when its key is gone.
                let now = server.clock.unix_ms(Tick::now());
                if reg.change_watchers() == 0
                    && !server.keyspace.db(db).lock1_at(now, &key).contains(&key)
                {
                    break;
                }
                continue;
            }
            if !after.self_push.is_empty() {
                after.self_push.extend_from_slice(&out);
                out = std::mem::take(&mut after.self_push);
            }
            reg.served(&waiter, st, out);
            ready.append(&mut after.ready_keys);
        }
    }
}

/// Registers `client` as blocked on `req` for its command `argv` and returns its waiter;
/// the connection then waits on [`Waiter::woken`], its deadline, its socket and its kill
/// signal, and asks [`Waiter::outcome`] after each wake-up.
pub fn begin(
    w: &mut Worker<'_>,
    client: &Client,
    argv: &[Bytes],
    req: BlockRequest,
) -> Arc<Waiter> {
    let waiter = Arc::new(Waiter::new(client, argv, req));
    w.server.blocking.register(&waiter);
    let keys = waiter.keys.iter().map(|k| (waiter.db, k.clone())).collect();
    serve_ready(w, keys);
    waiter
}
