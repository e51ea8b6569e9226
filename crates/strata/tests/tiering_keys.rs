//! What commands that do not read a value see of cold keys. A key's access bits (its LRU
//! clock, or its LFU counter) go to the tier with it and come back with it: OBJECT
//! IDLETIME and OBJECT FREQ, which do not touch the key, answer for a cold key what they
//! answered while it was in RAM. SCAN, KEYS and RANDOMKEY list cold keys from the store's
//! index, without their values, and skip those that expired; EXISTS and TTL answer from
//! the index and the expiry record; INFO keyspace counts cold keys with a TTL. The
//! warnings about `maxmemory` speak of the hot entries it bounds.

mod common;
use common::{active_expire_off, logged, section_field, set_many, tiered, Proc};

/// A number in INFO `section`.
fn info_u64(c: &mut redis::Connection, section: &str, field: &str) -> u64 {
    section_field(c, section, field).parse().unwrap()
}

fn moved_to_ram(c: &mut redis::Connection) -> u64 {
    info_u64(c, "tiering", "moved_to_ram")
}

fn tier_bytes_read(c: &mut redis::Connection) -> u64 {
    info_u64(c, "tiering", "tier_bytes_read")
}

/// A tiered server (with `extra` arguments) whose expired keys stay until something
/// looks them up, and a client of it.
fn without_active_expiry(extra: &[&str]) -> (Proc, redis::Connection) {
    let mut args = vec!["--enable-debug-command", "yes"];
    args.extend_from_slice(extra);
    let s = tiered(&args);
    let mut c = s.client();
    active_expire_off(&mut c);
    (s, c)
}

/// Restores `key` with RESTORE's `option` (IDLETIME n or FREQ n: the key is then the
/// eviction policy's first pick), writes enough other keys that it leaves RAM, and
/// returns OBJECT `sub`'s answer for it before and after; asserts that the second read
/// brought it back from the tier.
fn object_before_and_after_the_tier(
    c: &mut redis::Connection,
    option: &[&str],
    sub: &str,
) -> (u64, u64) {
    let _: () = redis::cmd("SET").arg("tmp").arg("v").query(c).unwrap();
    let payload: Vec<u8> = redis::cmd("DUMP").arg("tmp").query(c).unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("key")
        .arg(0)
        .arg(payload)
        .arg(option)
        .query(c)
        .unwrap();
    let object = |c: &mut redis::Connection| -> u64 {
        redis::cmd("OBJECT").arg(sub).arg("key").query(c).unwrap()
    };
    let before = object(c);
    set_many(c, "fill", 400, &[b'z'; 8000]);
    let moved = moved_to_ram(c);
    let after = object(c);
    assert_eq!(
        moved_to_ram(c),
        moved + 1,
        "OBJECT {sub} did not bring the key back from the tier"
    );
    (before, after)
}

#[test]
fn object_idletime_of_a_cold_key_is_its_idle_time() {
    let s = tiered(&[]);
    let mut c = s.client();
    let (before, after) =
        object_before_and_after_the_tier(&mut c, &["IDLETIME", "1000"], "IDLETIME");
    assert!(before >= 1000, "restored idle {before}");
    // The writes in between took seconds at most.
    assert!(
        after >= before && after < before + 60,
        "{before} then {after}"
    );
    // A read touches it as any read does.
    let _: Option<Vec<u8>> = redis::cmd("GET").arg("key").query(&mut c).unwrap();
    let idle: u64 = redis::cmd("OBJECT")
        .arg("IDLETIME")
        .arg("key")
        .query(&mut c)
        .unwrap();
    assert!(idle < before, "idle {idle} after a GET");
}

#[test]
fn object_freq_of_a_cold_key_is_its_counter() {
    let s = tiered(&[]);
    let mut c = s.client();
    // No decay while the test runs: a minute's boundary would take one off.
    for (k, v) in [("maxmemory-policy", "allkeys-lfu"), ("lfu-decay-time", "0")] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(k)
            .arg(v)
            .query(&mut c)
            .unwrap();
    }
    let (before, after) = object_before_and_after_the_tier(&mut c, &["FREQ", "2"], "FREQ");
    assert_eq!(before, 2);
    assert_eq!(after, before);
}

#[test]
fn scan_keys_and_randomkey_list_live_cold_keys_without_reading_them() {
    let (_s, mut c) = without_active_expiry(&[]);
    let big = [b'x'; 8000];
    for i in 0..100 {
        let _: () = redis::cmd("SET")
            .arg(format!("gone{i}"))
            .arg(&big[..])
            .arg("PX")
            .arg(100)
            .query(&mut c)
            .unwrap();
    }
    set_many(&mut c, "live", 600, &big);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let cold = info_u64(&mut c, "tiering", "cold_keys");
    assert!(cold > 500, "only {cold} cold keys");
    // Every expired key is still held (DBSIZE counts them, as Redis's does).
    assert_eq!(redis::cmd("DBSIZE").query::<u64>(&mut c).unwrap(), 700);

    let read = tier_bytes_read(&mut c);
    let mut scanned = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(50)
            .query(&mut c)
            .unwrap();
        scanned.extend(keys);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    scanned.sort();
    let mut live: Vec<String> = (0..600).map(|i| format!("live{i}")).collect();
    live.sort();
    assert_eq!(scanned, live);
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    assert_eq!(keys, live);
    assert_eq!(tier_bytes_read(&mut c), read, "SCAN or KEYS read values");
    // Each expired key RANDOMKEY picks goes; it returns live ones only.
    for _ in 0..200 {
        let k: String = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
        assert!(k.starts_with("live"), "RANDOMKEY gave {k}");
    }
}

/// Reads of the tier in place (its reads count as fast).
#[test]
fn exists_and_ttl_of_cold_keys_read_no_value() {
    exists_and_ttl_read_no_value("100000000");
}

/// Reads of the tier deferred to the blocking pool: the read ahead warms the index only.
#[test]
fn exists_and_ttl_of_cold_keys_read_no_value_ahead() {
    exists_and_ttl_read_no_value("0");
}

/// EXISTS and TTL of cold keys with `tiering-inline-read-us` at `inline_read_us`.
fn exists_and_ttl_read_no_value(inline_read_us: &str) {
    let (_s, mut c) = without_active_expiry(&["--tiering-inline-read-us", inline_read_us]);
    let big = [b'x'; 8000];
    let set = |c: &mut redis::Connection, key: &str, px: Option<u64>| {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg(&big[..]);
        if let Some(px) = px {
            cmd.arg("PX").arg(px);
        }
        let _: () = cmd.query(c).unwrap();
    };
    set(&mut c, "plain", None);
    set(&mut c, "timed", Some(3_600_000));
    set(&mut c, "gone", Some(100));
    set_many(&mut c, "fill", 600, &big);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (read, moved, hits, misses) = (
        tier_bytes_read(&mut c),
        moved_to_ram(&mut c),
        info_u64(&mut c, "stats", "keyspace_hits"),
        info_u64(&mut c, "stats", "keyspace_misses"),
    );
    let n: u64 = redis::cmd("EXISTS")
        .arg("plain")
        .arg("timed")
        .arg("nosuchkey")
        .arg("plain")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 3);
    let ttl = |c: &mut redis::Connection, key: &str| -> i64 {
        redis::cmd("TTL").arg(key).query(c).unwrap()
    };
    assert_eq!(ttl(&mut c, "plain"), -1);
    let t = ttl(&mut c, "timed");
    assert!(t > 3500 && t <= 3600, "TTL {t}");
    assert_eq!(ttl(&mut c, "nosuchkey"), -2);
    // Redis counts EXISTS and TTL as reads: a hit or a miss per key.
    assert_eq!(info_u64(&mut c, "stats", "keyspace_hits"), hits + 5);
    assert_eq!(info_u64(&mut c, "stats", "keyspace_misses"), misses + 2);
    assert_eq!(tier_bytes_read(&mut c), read, "a value was read");
    assert_eq!(moved_to_ram(&mut c), moved, "a key came back to RAM");
    // INFO keyspace counts the cold keys with a TTL too (the expired one not yet gone,
    // as Redis counts it).
    let keyspace = |c: &mut redis::Connection| -> String {
        let db0 = section_field(c, "keyspace", "db0");
        db0.split(",avg_ttl").next().unwrap_or_default().to_string()
    };
    assert_eq!(keyspace(&mut c), "keys=603,expires=2");
    // An expired cold key is deleted as a hot one is when looked up.
    assert_eq!(ttl(&mut c, "gone"), -2);
    assert_eq!(keyspace(&mut c), "keys=602,expires=1");
    assert_eq!(info_u64(&mut c, "stats", "expired_keys"), 1);
}

/// With tiering, `maxmemory` bounds the hot entries' bytes, not the server's own memory:
/// a start with a limit below what the server takes before any data warns of nothing,
/// and a limit set below the hot bytes says entries move to the tier. Without tiering
/// the same start warns that keys will be evicted, as before.
#[test]
fn maxmemory_warnings_of_a_tiered_server_speak_of_the_tier() {
    let below = "below the memory in use";
    let plain = common::strata(&["--maxmemory", "100kb", "--appendonly", "no", "--save", ""]);
    assert!(logged(&plain, below), "{:?}", plain.log.lock().unwrap());
    drop(plain);

    let s = tiered(&[]);
    let mut c = s.client();
    set_many(&mut c, "k", 300, &[b'x'; 1000]);
    let hot = info_u64(&mut c, "tiering", "hot_bytes");
    assert!(hot > 100_000, "{hot} hot bytes");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(hot / 2)
        .query(&mut c)
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !logged(&s, "entries will move to the tier") {
        assert!(
            std::time::Instant::now() < end,
            "{:?}",
            s.log.lock().unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!logged(&s, below), "{:?}", s.log.lock().unwrap());
}

/// TYPE and SCAN TYPE of cold keys, reads of the tier in place.
#[test]
fn type_and_scan_type_of_cold_keys_bring_nothing_back() {
    type_and_scan_type_bring_nothing_back("100000000");
}

/// The same with reads deferred to the blocking pool (the read ahead warms the record).
#[test]
fn type_and_scan_type_of_cold_keys_bring_nothing_back_ahead() {
    type_and_scan_type_bring_nothing_back("0");
}

/// One cold key of each type: TYPE names it and SCAN TYPE finds it from its record's
/// length, without bringing it back to RAM or reading its value.
fn type_and_scan_type_bring_nothing_back(inline_read_us: &str) {
    let (_s, mut c) = without_active_expiry(&["--tiering-inline-read-us", inline_read_us]);
    let big = vec![b'x'; 8000];
    let run = |c: &mut redis::Connection, args: &[&[u8]]| {
        let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let _: redis::Value = cmd.query(c).unwrap();
    };
    let keys: [(&str, &[&[u8]]); 6] = [
        ("string", &[b"SET", b"s", &big]),
        ("list", &[b"RPUSH", b"l", &big, b"b"]),
        ("hash", &[b"HSET", b"h", b"f", &big]),
        ("set", &[b"SADD", b"t", &big, b"b"]),
        ("zset", &[b"ZADD", b"z", b"1", &big]),
        ("stream", &[b"XADD", b"x", b"*", b"f", &big]),
    ];
    for (_, args) in &keys {
        run(&mut c, args);
    }
    run(&mut c, &[b"HSET", b"gone", b"f", &big]);
    run(&mut c, &[b"PEXPIRE", b"gone", b"100"]);
    // Older by a tick of the LRU clock than every key of the fill, so eviction surely
    // picks them (of keys equally idle it may leave any in RAM).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    set_many(&mut c, "fill", 600, &big);
    std::thread::sleep(std::time::Duration::from_millis(200));

    let kind = |c: &mut redis::Connection, key: &[u8]| -> String {
        redis::cmd("TYPE").arg(key).query(c).unwrap()
    };
    let (moved, hits, read) = (
        moved_to_ram(&mut c),
        info_u64(&mut c, "stats", "keyspace_hits"),
        tier_bytes_read(&mut c),
    );
    for (name, args) in &keys {
        assert_eq!(kind(&mut c, args[1]), *name);
    }
    assert_eq!(moved_to_ram(&mut c), moved, "TYPE brought a key back");
    assert_eq!(tier_bytes_read(&mut c), read, "TYPE read a value");
    assert_eq!(info_u64(&mut c, "stats", "keyspace_hits"), hits + 6);

    let scan = |c: &mut redis::Connection, pattern: &str, kind: &str| -> Vec<String> {
        let (mut cursor, mut found) = (0u64, Vec::new());
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("TYPE")
                .arg(kind)
                .query(c)
                .unwrap();
            found.extend(keys);
            cursor = next;
            if cursor == 0 {
                found.sort();
                return found;
            }
        }
    };
    for (name, args) in &keys[1..] {
        let key = std::str::from_utf8(args[1]).unwrap();
        assert_eq!(scan(&mut c, "*", name), [key], "SCAN TYPE {name}");
    }
    assert_eq!(scan(&mut c, "*", "string").len(), 601);
    assert_eq!(scan(&mut c, "s", "string"), ["s"]);
    assert_eq!(tier_bytes_read(&mut c), read, "SCAN TYPE read a value");
    assert_eq!(moved_to_ram(&mut c), moved, "SCAN TYPE brought a key back");

    // Each was cold: a read brings it back.
    for (i, (_, args)) in keys.iter().enumerate() {
        let _: redis::Value = redis::cmd("DUMP").arg(args[1]).query(&mut c).unwrap();
        assert_eq!(moved_to_ram(&mut c), moved + i as u64 + 1);
    }
    // An expired cold key is none, and goes.
    let expired = info_u64(&mut c, "stats", "expired_keys");
    assert_eq!(kind(&mut c, b"gone"), "none");
    assert_eq!(info_u64(&mut c, "stats", "expired_keys"), expired + 1);
}
