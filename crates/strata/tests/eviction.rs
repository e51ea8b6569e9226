//! maxmemory against the real server: each policy evicts its class of keys (the volatile
//! ones only keys with a TTL, LRU and LFU keep what is used, volatile-ttl the nearest
//! expiries first), used memory stays under the limit during a load of five times it,
//! noeviction and an exhausted volatile policy refuse writes with Redis's text, MULTI and
//! scripts follow Redis's rules (compared with redis-server), CONFIG SET maxmemory below
//! usage evicts at once, and evictions reach the journal, WATCH and keyspace events.

mod common;

use common::{int, query, RespConn};
use redis::Connection;
use std::time::{Duration, Instant};

const CACHE: &[&str] = &["--appendonly", "no", "--save", ""];

/// A numeric INFO field.
fn info(c: &mut Connection, section: &str, field: &str) -> u64 {
    let text: String = redis::cmd("INFO").arg(section).query(c).expect("INFO");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no numeric {field} in INFO {section}"))
}

fn used(c: &mut Connection) -> u64 {
    info(c, "memory", "used_memory")
}

fn evicted(c: &mut Connection) -> u64 {
    info(c, "stats", "evicted_keys")
}

/// Sets `maxmemory` to what is in use now plus `room`; returns the limit.
fn limit_at(c: &mut Connection, policy: &str, room: u64) -> u64 {
    let limit = used(c) + room;
    let _: () = query(c, &["config", "set", "maxmemory-policy", policy]);
    let _: () = query(c, &["config", "set", "maxmemory", &limit.to_string()]);
    limit
}

/// Writes `keys` keys named `<prefix><i>` of `size` bytes (with a TTL of `ttl` seconds
/// if given), pipelined in batches; stops at the first error and returns it.
fn fill(
    c: &mut Connection,
    prefix: &str,
    keys: std::ops::Range<u64>,
    size: usize,
    ttl: Option<u64>,
) -> Result<(), String> {
    let value = vec![b'v'; size];
    let ids: Vec<u64> = keys.collect();
    for batch in ids.chunks(50) {
        let mut p = redis::pipe();
        for i in batch {
            let key = format!("{prefix}{i}");
            match ttl {
                Some(s) => p.cmd("SETEX").arg(&key).arg(s).arg(&value[..]),
                None => p.cmd("SET").arg(&key).arg(&value[..]),
            };
        }
        p.query::<()>(c).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn exists(c: &mut Connection, key: &str) -> bool {
    int(c, &["exists", key]) == 1
}

/// The reply text redis-server gives a write refused for lack of memory, read at test
/// time.
fn redis_oom_text() -> Vec<u8> {
    let r = common::redis(&[]);
    let mut c = RespConn::new(&r);
    c.call(&["config", "set", "maxmemory", "1"])
        .expect("config");
    let reply = c.call(&["set", "k", "v"]).expect("set");
    assert_eq!(reply.kind, b'-', "redis-server refuses: {}", reply.shown());
    reply.raw
}

/// volatile-lru/lfu/random/ttl evict only keys with a TTL: keys without one all survive
/// a load of keys with one, and once none is left the write that needs room is refused
/// with Redis's exact error, while reads and DEL still work.
#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    let oom = redis_oom_text();
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let s = common::strata(CACHE);
        let mut c = s.client();
        limit_at(&mut c, policy, 1 << 20);
        fill(&mut c, "plain:", 0..300, 1000, None).expect("room for the keys without a TTL");
        fill(&mut c, "ttl:", 0..3000, 1000, Some(1000)).expect("volatile keys evict each other");
        assert!(evicted(&mut c) > 0, "{policy}: nothing evicted");
        for i in 0..300 {
            assert!(
                exists(&mut c, &format!("plain:{i}")),
                "{policy}: plain:{i} evicted"
            );
        }
        // Keys without a TTL until the volatile ones are all gone and a write is refused.
        let mut raw = RespConn::new(&s);
        let value = "x".repeat(1000);
        let refused = (300..5000).find_map(|i| {
            let r = raw
                .call(&["set", &format!("plain:{i}"), &value])
                .expect("set");
            (r.kind == b'-').then_some(r.raw)
        });
        assert_eq!(refused.as_deref(), Some(&oom[..]), "{policy}");
        assert_eq!(
            info_keyspace_expires(&mut c),
            0,
            "{policy}: volatile keys left"
        );
        let got: Option<String> = query(&mut c, &["get", "plain:0"]);
        assert_eq!(got.map(|v| v.len()), Some(1000));
        assert_eq!(
            int(&mut c, &["del", "plain:0"]),
            1,
            "{policy}: DEL still works"
        );
    }
}

/// INFO keyspace's expires= for db0 (0 when the database is empty).
fn info_keyspace_expires(c: &mut Connection) -> u64 {
    let text: String = redis::cmd("INFO").arg("keyspace").query(c).expect("INFO");
    text.lines()
        .find_map(|l| l.strip_prefix("db0:"))
        .and_then(|v| v.split(',').find_map(|f| f.strip_prefix("expires=")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// allkeys-lru keeps a working set that is read between writes: batches of new keys
/// (five times the limit in all) go in a second apart, the working set read after each
/// pause, so at each batch the previous ones are the longest idle (the LRU clock counts
/// seconds, as Redis's). Ten samples a round (Redis's advice for a closer LRU): with five,
/// once few idle keys are left a round may find none and take a fresh key, as in Redis.
#[test]
fn allkeys_lru_keeps_the_recently_used_working_set() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(&mut c, &["config", "set", "maxmemory-samples", "10"]);
    let limit = limit_at(&mut c, "allkeys-lru", 2 << 20);
    fill(&mut c, "hot:", 0..200, 1000, None).expect("working set");
    const BATCH: u64 = 1250;
    let mut batch = 0;
    while batch * BATCH * 1000 < 5 * (2 << 20) {
        std::thread::sleep(Duration::from_millis(1100));
        let mut p = redis::pipe();
        for i in 0..200 {
            p.cmd("GET").arg(format!("hot:{i}")).ignore();
        }
        p.query::<()>(&mut c).expect("reads");
        fill(
            &mut c,
            "cold:",
            batch * BATCH..(batch + 1) * BATCH,
            1000,
            None,
        )
        .expect("writes");
        batch += 1;
    }
    assert!(used(&mut c) <= limit + (256 << 10));
    let hot = (0..200)
        .filter(|i| exists(&mut c, &format!("hot:{i}")))
        .count();
    let cold = (0..batch * BATCH)
        .filter(|i| exists(&mut c, &format!("cold:{i}")))
        .count();
    let cold_share = cold as f64 / (batch * BATCH) as f64;
    assert!(hot >= 180, "{hot} of 200 hot keys kept");
    assert!(
        hot as f64 / 200.0 > 3.0 * cold_share,
        "hot {hot}/200, cold {cold}"
    );
}

/// allkeys-lfu keeps the keys that are read often: their counters grow past those of
/// keys written once.
#[test]
fn allkeys_lfu_keeps_the_frequently_read() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    limit_at(&mut c, "allkeys-lfu", 2 << 20);
    fill(&mut c, "hot:", 0..200, 1000, None).expect("working set");
    for batch in 0..8u64 {
        let mut p = redis::pipe();
        for _ in 0..5 {
            for i in 0..200 {
                p.cmd("GET").arg(format!("hot:{i}")).ignore();
            }
        }
        p.query::<()>(&mut c).expect("reads");
        fill(
            &mut c,
            "cold:",
            batch * 1500..(batch + 1) * 1500,
            1000,
            None,
        )
        .expect("writes");
    }
    let hot = (0..200)
        .filter(|i| exists(&mut c, &format!("hot:{i}")))
        .count();
    assert!(hot >= 190, "{hot} of 200 often-read keys kept");
    let freq = int(&mut c, &["object", "freq", "hot:0"]);
    assert!(freq > 5, "a read key's counter {freq}");
}

/// volatile-ttl evicts the nearest expiries first.
#[test]
fn volatile_ttl_evicts_the_shortest_ttls_first() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(
        &mut c,
        &["config", "set", "maxmemory-policy", "volatile-ttl"],
    );
    let value = "v".repeat(1000);
    for i in 0..1500u64 {
        let _: () = query(
            &mut c,
            &["setex", &format!("k{i}"), &(10_000 + i).to_string(), &value],
        );
    }
    let now = used(&mut c).to_string();
    let _: () = query(&mut c, &["config", "set", "maxmemory", &now]);
    fill(&mut c, "later:", 0..500, 1000, Some(1_000_000)).expect("writes");
    let kept = |r: std::ops::Range<u64>, c: &mut Connection| {
        r.filter(|i| exists(c, &format!("k{i}"))).count()
    };
    let (first, last) = (kept(0..500, &mut c), kept(1000..1500, &mut c));
    assert!(
        first < 250 && last > 450,
        "kept: {first} of the shortest 500, {last} of the longest"
    );
}

/// The random policies evict something, and volatile-random only keys with a TTL.
#[test]
fn random_policies_evict_their_class() {
    for (policy, ttl) in [("allkeys-random", None), ("volatile-random", Some(1000))] {
        let s = common::strata(CACHE);
        let mut c = s.client();
        fill(&mut c, "plain:", 0..100, 1000, None).expect("writes");
        let limit = limit_at(&mut c, policy, 1 << 20);
        fill(&mut c, "k:", 0..4000, 1000, ttl).expect("writes");
        assert!(evicted(&mut c) > 1000, "{policy}");
        assert!(used(&mut c) <= limit + (256 << 10), "{policy}");
        let plain = (0..100)
            .filter(|i| exists(&mut c, &format!("plain:{i}")))
            .count();
        if ttl.is_some() {
            assert_eq!(plain, 100, "{policy} evicted a key without a TTL");
        } else {
            assert!(plain < 100, "{policy} evicted only new keys");
        }
    }
}

/// Under a load of five times the limit from two clients at once, sampled used memory
/// stays under the limit plus a small slack (a command in flight per worker, each thread's
/// counter not yet folded into the total, the clients' query buffers before eviction
/// catches up): 512 KiB.
#[test]
fn used_memory_stays_under_the_limit_under_load() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let limit = limit_at(&mut c, "allkeys-lru", 8 << 20);
    let load = |id: u64| {
        let mut w = s.client();
        std::thread::spawn(move || fill(&mut w, &format!("w{id}:"), 0..20_000, 1000, None))
    };
    let writers = [load(0), load(1)];
    let (mut samples, mut peak) = (0, 0);
    while !writers.iter().all(|w| w.is_finished()) {
        peak = peak.max(used(&mut c));
        samples += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    for w in writers {
        w.join().expect("writer").expect("no write refused");
    }
    assert!(samples > 10, "{samples} samples");
    assert!(peak <= limit + (512 << 10), "peak {peak}, limit {limit}");
    assert!(evicted(&mut c) > 20_000, "{} evicted", evicted(&mut c));
}

/// CONFIG SET maxmemory below the memory in use evicts at the next command, and the
/// background eviction brings memory under the limit without further commands.
/// Keys an allkeys-lru server with `extra` options keeps once 5x its `maxmemory` of 1 KiB
/// values has been written in pipelines of 500; panics on any OOM refusal.
fn kept_under_pressure(extra: &[&str]) -> u64 {
    let mut args = vec!["--maxmemory", "24mb", "--maxmemory-policy", "allkeys-lru"];
    args.extend_from_slice(extra);
    let p = common::strata(&args);
    let mut c = p.client();
    let value = "v".repeat(1024);
    for batch in 0..240 {
        let mut pipe = redis::pipe();
        for i in 0..500 {
            pipe.cmd("SET").arg(format!("k:{batch}:{i}")).arg(&value);
        }
        let replies: Vec<redis::RedisResult<redis::Value>> = pipe
            .query::<Vec<redis::Value>>(&mut c)
            .map(|v| v.into_iter().map(Ok).collect())
            .unwrap_or_else(|e| vec![Err(e)]);
        for r in replies {
            if let Err(e) = r {
                panic!("{extra:?}: a SET was refused in batch {batch}: {e}");
            }
        }
    }
    query(&mut c, &["DBSIZE"])
}

/// The journal's buffers (a second of writes kept until their fsync under everysec) are
/// left out of maxmemory as Redis leaves out its AOF buffer: with them counted, this load
/// had 40% of its SETs refused and kept 1,000 keys where the same server without a
/// journal kept 48,000.
#[test]
fn the_journal_does_not_take_the_data_sets_budget() {
    let without = kept_under_pressure(CACHE);
    let with = kept_under_pressure(&["--appendonly", "yes", "--appendfsync", "everysec"]);
    assert!(
        with * 10 >= without * 8,
        "with the journal {with} keys stayed, without it {without}"
    );
}

#[test]
fn lowering_maxmemory_evicts_at_once() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let base = used(&mut c);
    fill(&mut c, "k:", 0..5000, 1000, None).expect("writes");
    let _: () = query(
        &mut c,
        &["config", "set", "maxmemory-policy", "allkeys-random"],
    );
    let limit = base + (1 << 20);
    let _: () = query(&mut c, &["config", "set", "maxmemory", &limit.to_string()]);
    let _: () = query(&mut c, &["set", "one", "more"]);
    assert!(evicted(&mut c) > 0, "the next write evicted");
    // Generous: the whole test suite shares two cores with this server.
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        // Within a connection's buffers of the limit: the INFO this loop sends allocates
        // too, after the eviction that brought memory under it.
        let now = used(&mut c);
        if now <= limit + (64 << 10) {
            break;
        }
        assert!(
            Instant::now() < end,
            "memory never came under the limit: {now} > {limit}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let keys = int(&mut c, &["dbsize"]);
    assert!(keys < 2000, "{keys} keys left");
}

/// noeviction refuses writes that need memory with Redis's text, and lets reads, DEL and
/// writes that need none through.
#[test]
fn noeviction_refuses_with_redis_text() {
    let oom = redis_oom_text();
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(&mut c, &["set", "k", "v"]);
    let _: () = query(&mut c, &["config", "set", "maxmemory", "1"]);
    let mut raw = RespConn::new(&s);
    for refused in [
        &["set", "x", "1"][..],
        &["lpush", "l", "a"],
        &["append", "k", "v"],
    ] {
        assert_eq!(raw.call(refused).expect("reply").raw, oom, "{refused:?}");
    }
    let get: Option<String> = query(&mut c, &["get", "k"]);
    assert_eq!(get.as_deref(), Some("v"));
    assert_eq!(int(&mut c, &["expire", "k", "100"]), 1);
    assert_eq!(int(&mut c, &["del", "k"]), 1);
    assert_eq!(evicted(&mut c), 0);
}

/// The same session on redis-server and on Strata, memory over the limit under
/// noeviction: MULTI queueing, EXEC with and without a command that needs memory,
/// DISCARD, scripts with and without shebang flags, allow-oom, read-only scripts, and a
/// script whose first call needs memory. Replies compared byte for byte.
#[test]
fn multi_and_scripts_under_oom_as_redis() {
    let session: &[&[&str]] = &[
        &["set", "x", "123"],
        &["config", "set", "maxmemory", "1"],
        &["multi"],
        &["get", "x"],
        &["ping"],
        &["exec"],
        &["multi"],
        &["set", "y", "1"],
        &["discard"],
        &["eval", "redis.call('set','x',1) return 1", "1", "x"],
        &["eval", "return redis.call('get','x')", "1", "x"],
        &["eval", "#!lua flags=\nreturn 1", "0"],
        &[
            "eval",
            "#!lua flags=allow-oom\nredis.call('set','x',1) return 1",
            "1",
            "x",
        ],
        &[
            "eval",
            "#!lua flags=no-writes\nreturn redis.call('get','x')",
            "1",
            "x",
        ],
        &["eval_ro", "return redis.call('get','x')", "1", "x"],
        &[
            "eval",
            "redis.call('del','x') redis.call('set','x',2) return 1",
            "1",
            "x",
        ],
        &["get", "x"],
        &["config", "set", "maxmemory", "0"],
        &["multi"],
        &["set", "z", "1"],
        &["get", "x"],
        &["config", "set", "maxmemory", "1"],
        &["exec"],
        &["config", "set", "maxmemory", "0"],
        &["get", "z"],
    ];
    let run = |p: &common::Proc| {
        let mut c = RespConn::new(p);
        session
            .iter()
            .map(|cmd| c.call(cmd).expect("reply").shown())
            .collect::<Vec<_>>()
    };
    let (r, s) = (common::redis(&[]), common::strata(CACHE));
    let (want, got) = (run(&r), run(&s));
    for ((cmd, w), g) in session.iter().zip(&want).zip(&got) {
        assert_eq!(g, w, "{cmd:?}");
    }
}

/// Evictions are recorded in the journal as DELs: after a restart without maxmemory the
/// server holds exactly the keys it held before. Each eviction publishes an `evicted`
/// event and makes a WATCHing client's EXEC fail.
#[test]
fn evictions_reach_the_journal_events_and_watch() {
    let dir = common::temp_dir("evict-journal");
    let keys_before = {
        let s = common::serve_in(&dir, &["--notify-keyspace-events", "Ee"]);
        let mut c = s.client();
        let mut sub = s.client();
        let mut ps = sub.as_pubsub();
        ps.subscribe("__keyevent@0__:evicted").expect("subscribe");
        ps.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut watcher = s.client();
        let _: () = query(&mut watcher, &["set", "watched", "v"]);
        let _: () = query(&mut watcher, &["watch", "watched"]);
        let _: () = query(
            &mut c,
            &["config", "set", "maxmemory-policy", "allkeys-random"],
        );
        fill(&mut c, "k:", 0..1000, 1000, None).expect("writes");
        let _: () = query(&mut c, &["config", "set", "maxmemory", "1"]);
        let end = Instant::now() + Duration::from_secs(10);
        while int(&mut c, &["dbsize"]) > 0 {
            assert!(Instant::now() < end, "keys left");
            std::thread::sleep(Duration::from_millis(20));
        }
        let _: () = query(&mut c, &["config", "set", "maxmemory", "0"]);
        fill(&mut c, "after:", 0..10, 10, None).expect("writes");
        let n = evicted(&mut c);
        assert_eq!(n, 1001);
        let mut events = 0;
        while events < n {
            let m = ps.get_message().expect("an evicted event");
            let _: String = m.get_payload().expect("key");
            events += 1;
        }
        let exec: redis::Value = redis::pipe()
            .atomic()
            .cmd("set")
            .arg("watched")
            .arg("again")
            .query(&mut watcher)
            .expect("EXEC");
        assert_eq!(
            exec,
            redis::Value::Nil,
            "EXEC after its watched key was evicted"
        );
        let mut keys: Vec<String> = query(&mut c, &["keys", "*"]);
        keys.sort();
        keys
    };
    let s = common::serve_in(&dir, &[]);
    let mut c = s.client();
    let mut keys: Vec<String> = query(&mut c, &["keys", "*"]);
    keys.sort();
    assert_eq!(keys, keys_before);
    assert_eq!(keys.len(), 10);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// lazyfree-lazy-eviction: large values evicted are freed in the background, and the
/// memory still comes under the limit.
#[test]
fn lazy_eviction_frees_in_the_background() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(&mut c, &["config", "set", "lazyfree-lazy-eviction", "yes"]);
    let limit = limit_at(&mut c, "allkeys-random", 2 << 20);
    for h in 0..40 {
        let mut p = redis::pipe();
        for f in 0..1000 {
            p.cmd("HSET")
                .arg(format!("h{h}"))
                .arg(format!("field:{f}"))
                .arg("v".repeat(100))
                .ignore();
        }
        p.query::<()>(&mut c).expect("writes");
    }
    assert!(evicted(&mut c) > 0);
    let end = Instant::now() + Duration::from_secs(10);
    while used(&mut c) > limit + (512 << 10) {
        assert!(Instant::now() < end, "memory stayed over the limit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An eviction that takes the latency monitor's threshold or longer is recorded, as Redis
/// records `eviction-cycle` (one call's eviction; here 200,000 keys in one call, which
/// `maxmemory-eviction-tenacity 100` lets run to the end). `eviction-del` (one key's
/// removal) uses the same record, but no removal is reliably that slow here.
#[test]
fn slow_evictions_reach_the_latency_monitor() {
    let s = common::strata(&[CACHE, &["--enable-debug-command", "yes"]].concat());
    let mut c = s.client();
    for (k, v) in [
        ("latency-monitor-threshold", "1"),
        ("maxmemory-eviction-tenacity", "100"),
        ("maxmemory-policy", "allkeys-random"),
    ] {
        let _: () = query(&mut c, &["config", "set", k, v]);
    }
    let _: () = query(&mut c, &["DEBUG", "POPULATE", "200000"]);
    let _: () = query(&mut c, &["config", "set", "maxmemory", "1mb"]);
    let end = Instant::now() + Duration::from_secs(20);
    while evicted(&mut c) < 100_000 {
        assert!(Instant::now() < end, "the keys were never evicted");
        std::thread::sleep(Duration::from_millis(20));
    }
    let latest: String = redis::cmd("LATENCY")
        .arg("LATEST")
        .query::<redis::Value>(&mut c)
        .map(|v| format!("{v:?}"))
        .expect("LATENCY LATEST");
    assert!(latest.contains("eviction-cycle"), "{latest}");
}

/// OBJECT FREQ and IDLETIME follow the policy as in Redis: FREQ of a new key is 5 and
/// grows with reads under LFU, and each subcommand refuses under the other kind of policy
/// with Redis's text.
#[test]
fn object_freq_and_idletime_follow_the_policy() {
    let script: &[&[&str]] = &[
        &["config", "set", "maxmemory-policy", "allkeys-lfu"],
        &["set", "k", "v"],
        &["object", "freq", "k"],
        &["object", "idletime", "k"],
        &["config", "set", "maxmemory-policy", "allkeys-lru"],
        &["object", "freq", "k"],
        &["object", "idletime", "k"],
    ];
    let run = |p: &common::Proc| {
        let mut c = RespConn::new(p);
        script
            .iter()
            .map(|cmd| c.call(cmd).expect("reply").shown())
            .collect::<Vec<_>>()
    };
    let (r, s) = (common::redis(&[]), common::strata(CACHE));
    let (mut got, mut want) = (run(&s), run(&r));
    // The last IDLETIME reads LFU bits as an LRU clock: a figure from the current second,
    // which the two servers, asked one after the other, may see a second apart.
    let idle = |v: &mut Vec<String>| -> i64 {
        let last = v.pop().unwrap_or_default();
        let digits: String = last.chars().filter(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("IDLETIME reply {last}"))
    };
    let (a, b) = (idle(&mut got), idle(&mut want));
    assert!((a - b).abs() <= 1, "IDLETIME {a} against Redis's {b}");
    assert_eq!(got, want);
    let mut c = s.client();
    let _: () = query(
        &mut c,
        &["config", "set", "maxmemory-policy", "volatile-lfu"],
    );
    let _: () = query(&mut c, &["set", "n", "v"]);
    for _ in 0..200 {
        let _: String = query(&mut c, &["get", "n"]);
    }
    assert!(int(&mut c, &["object", "freq", "n"]) > 6);
}

/// The invalidations an eviction sends to tracking clients take memory until their
/// connections write them; they must not count as memory still to free, or each eviction
/// would pay for the messages of the last until the database was empty (Redis's unit
/// maxmemory, "client tracking don't cause eviction feedback loop").
#[test]
fn tracking_invalidations_do_not_feed_eviction() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    let _: () = query(
        &mut c,
        &["config", "set", "maxmemory-eviction-tenacity", "100"],
    );
    // Ten RESP3 clients track every key and never read their invalidations.
    let mut trackers: Vec<RespConn> = (0..10)
        .map(|_| {
            let mut t = RespConn::new(&s);
            t.call(&["hello", "3"]).expect("HELLO");
            t.call(&["client", "tracking", "on"]).expect("TRACKING");
            t
        })
        .collect();
    // Long names, short values: an evicted key's invalidations (ten of them) take about
    // ten times what its eviction frees.
    let keys: Vec<String> = (0..300)
        .map(|i| format!("{i}{}", "x".repeat(1000)))
        .collect();
    for k in &keys {
        let _: () = query(&mut c, &["set", k, "x"]);
        for t in trackers.iter_mut() {
            t.call(&["get", k]).expect("GET");
        }
    }
    let limit = used(&mut c) - 40_000;
    let _: () = query(
        &mut c,
        &["config", "set", "maxmemory-policy", "allkeys-lru"],
    );
    let _: () = query(&mut c, &["config", "set", "maxmemory", &limit.to_string()]);
    // The eviction runs in the background after CONFIG SET: wait for its first keys.
    let end = Instant::now() + Duration::from_secs(10);
    while evicted(&mut c) == 0 {
        assert!(Instant::now() < end, "nothing was evicted");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let (gone, left) = (evicted(&mut c), int(&mut c, &["dbsize"]));
    assert!(
        left >= 200,
        "{left} keys left, {gone} evicted: eviction fed itself"
    );
    assert!(gone <= 100, "{gone} evicted for a limit 40 KB under use");
    // The trackers were told: each has invalidations waiting.
    for t in trackers.iter_mut() {
        let push = t.read().expect("an invalidation");
        assert_eq!(push.kind, b'>', "{}", push.shown());
    }
}

/// Subscribers that stop reading hold the messages published to them: with
/// `maxmemory-clients` on, those count as the subscribers' memory as they are sent, and
/// the subscribers are evicted before any key is (Redis's unit maxmemory, "eviction due
/// to output buffers of pubsub, client eviction: true").
#[test]
fn subscribers_that_do_not_read_are_evicted_before_keys() {
    let s = common::strata(CACHE);
    let mut c = s.client();
    fill(&mut c, "k:", 0..50, 100_000, None).expect("writes");
    let _: () = query(&mut c, &["client", "no-evict", "on"]);
    let _: () = query(&mut c, &["config", "set", "maxmemory-clients", "3mb"]);
    limit_at(&mut c, "allkeys-lru", 6 << 20);
    let _subscribers: Vec<RespConn> = (0..20)
        .map(|_| {
            let mut sub = RespConn::new(&s);
            sub.call(&["subscribe", "bla"]).expect("SUBSCRIBE");
            sub
        })
        .collect();
    let big = "x".repeat(100_000);
    let end = Instant::now() + Duration::from_secs(20);
    let clients_evicted = || info(&mut s.client(), "stats", "evicted_clients");
    while clients_evicted() == 0 && evicted(&mut c) == 0 {
        assert!(
            Instant::now() < end,
            "neither clients nor keys were evicted"
        );
        let _: i64 = query(&mut c, &["publish", "bla", &big]);
    }
    assert_eq!(evicted(&mut c), 0, "a key went before a subscriber");
    assert!(clients_evicted() > 0);
    assert_eq!(int(&mut c, &["dbsize"]), 50);
}
