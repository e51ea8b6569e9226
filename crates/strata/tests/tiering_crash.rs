//! A start after a crash keeps the tier's store and checks it against the snapshot
//! (docs/tiering.md, "Restarts"): records that still hold the snapshot's cold entries
//! stay, the others are written anew or dropped, and the journal replays over the result.
//! Whatever the store held at the SIGKILL, every key must read as acknowledged: value, TTL
//! and all, and no key deleted or never written may appear.

mod common;
use common::model::{dataset, random_command, run};
use common::{serve_in, strata, temp_dir, tiering_field, tiering_value, Proc, Rng, TIERED};
use std::collections::BTreeMap;
use std::path::Path;

/// What a key should hold: its value and whether it has a TTL.
type Model = BTreeMap<String, (Vec<u8>, bool)>;

fn value(tag: &str, i: usize) -> Vec<u8> {
    format!("{tag}:{i}:").repeat(600).into_bytes()
}

fn set(c: &mut redis::Connection, m: &mut Model, key: String, v: Vec<u8>, ttl: bool) {
    let mut cmd = redis::cmd("SET");
    cmd.arg(&key).arg(&v);
    if ttl {
        cmd.arg("EX").arg(100_000);
    }
    let _: () = cmd.query(c).unwrap();
    m.insert(key, (v, ttl));
}

/// Changes of every kind after the snapshot, each to keys the snapshot holds cold (most
/// of them, under `maxmemory 1mb`) or to new ones, with eviction moving entries between
/// them all along. `round` keeps each call's values apart.
fn change(c: &mut redis::Connection, m: &mut Model, round: usize) {
    let keys: Vec<String> = m.keys().cloned().collect();
    for (n, key) in keys.iter().enumerate() {
        match (n + round) % 8 {
            0 => set(c, m, key.clone(), value("new", n + round), false),
            1 => {
                let _: i64 = redis::cmd("DEL").arg(key).query(c).unwrap();
                m.remove(key);
            }
            2 => {
                let _: i64 = redis::cmd("EXPIRE").arg(key).arg(100_000).query(c).unwrap();
                m.get_mut(key).unwrap().1 = true;
            }
            3 => {
                let _: i64 = redis::cmd("PERSIST").arg(key).query(c).unwrap();
                m.get_mut(key).unwrap().1 = false;
            }
            4 => {
                let _: i64 = redis::cmd("APPEND").arg(key).arg("+").query(c).unwrap();
                m.get_mut(key).unwrap().0.push(b'+');
            }
            _ => {}
        }
    }
    for i in 0..150 {
        set(
            c,
            m,
            format!("fresh{round}:{i}"),
            value("fresh", i),
            i % 3 == 0,
        );
    }
}

/// Every key reads as `m` says: its TTL first (which leaves a cold key in the store), then
/// its value; no other key exists.
fn check(c: &mut redis::Connection, m: &Model) {
    for (key, (v, ttl)) in m {
        let t: i64 = redis::cmd("TTL").arg(key).query(c).unwrap();
        assert_eq!(t > 0, *ttl, "TTL of {key}: {t}");
        let got: Option<Vec<u8>> = redis::cmd("GET").arg(key).query(c).unwrap();
        assert_eq!(got.as_ref(), Some(v), "{key}");
    }
    let n: usize = redis::cmd("DBSIZE").query(c).unwrap();
    assert_eq!(n, m.len());
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    assert_eq!(keys, m.keys().cloned().collect::<Vec<_>>());
}

/// Sets `k0` to `k{n-1}` (every `ttl_every`th with a TTL) and saves a snapshot of them.
fn filled(c: &mut redis::Connection, n: usize, ttl_every: usize) -> Model {
    let mut m = Model::new();
    for i in 0..n {
        set(
            c,
            &mut m,
            format!("k{i}"),
            value("old", i),
            i % ttl_every == 0,
        );
    }
    let _: () = redis::cmd("SAVE").query(c).unwrap();
    m
}

/// SIGKILLs `s` and starts it again on `dir`, which must take its tier as `how` says.
fn crash(
    s: Proc,
    c: redis::Connection,
    dir: &Path,
    args: &[&str],
    how: &str,
) -> (Proc, redis::Connection) {
    drop(c);
    drop(s);
    let s = serve_in(dir, args);
    let mut c = s.client();
    assert_eq!(tiering_value::<String>(&mut c, "tier_start"), how);
    (s, c)
}

#[test]
fn a_crash_keeps_the_tier_and_checks_it_against_the_snapshot() {
    let dir = temp_dir("tiering-crash");
    let mut args = TIERED.to_vec();
    // No snapshot but the SAVEs below: the check is against a known one.
    args.extend_from_slice(&["--save", ""]);
    let s = serve_in(&dir, &args);
    let mut c = s.client();
    let mut m = filled(&mut c, 600, 4);
    let cold = tiering_field(&mut c, "cold_keys");
    assert!(cold > 300, "{cold} cold keys");
    change(&mut c, &mut m, 0);
    // SIGKILL: the store holds what eviction last wrote, newer than the snapshot.
    let (s, mut c) = crash(s, c, &dir, &args, "checked");
    let matched = tiering_field(&mut c, "tier_start_matched");
    let rewritten = tiering_field(&mut c, "tier_start_rewritten");
    let dropped = tiering_field(&mut c, "tier_start_dropped");
    // Most cold entries were untouched after the snapshot; the changed ones that went
    // cold again differ, and the fresh keys' records are none of the snapshot's.
    assert!(matched > cold / 3, "{matched} matched of {cold}");
    assert!(rewritten > 0, "{rewritten} rewritten");
    assert!(dropped > 50, "{dropped} dropped");
    check(&mut c, &m);

    // A checked store is checked again after the next crash.
    change(&mut c, &mut m, 1);
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    change(&mut c, &mut m, 2);
    let (s, mut c) = crash(s, c, &dir, &args, "checked");
    assert!(tiering_field(&mut c, "tier_start_matched") > 0);
    check(&mut c, &m);
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Random commands of every type against a tiered server and an in-memory one, replies
/// compared; the tiered one snapshotted halfway through each cycle and killed at its end,
/// then restarted on a checked store and compared key by key.
#[test]
fn checked_tiers_across_crashes_hold_what_memory_holds() {
    let dir = temp_dir("tiering-crash-model");
    let plain = strata(&[]);
    let mut p = plain.client();
    let mut r = Rng(0x5eed_c4a5);
    for cycle in 0..3 {
        let s = serve_in(&dir, &TIERED);
        let mut t = s.client();
        if cycle > 0 {
            assert_eq!(tiering_value::<String>(&mut t, "tier_start"), "checked");
            assert!(
                tiering_field(&mut t, "tier_start_matched") > 0,
                "cycle {cycle}"
            );
            assert_eq!(dataset(&mut t), dataset(&mut p), "cycle {cycle}");
        }
        for i in 0..2500 {
            let args = random_command(&mut r);
            let (a, b) = (run(&mut t, &args), run(&mut p, &args));
            assert_eq!(a, b, "cycle {cycle}, command {i}");
            if i == 1500 {
                let _: () = redis::cmd("SAVE").query(&mut t).unwrap();
            }
        }
        drop(t);
        drop(s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without a journal a crash loses what followed the snapshot, though the store holds it:
/// the check restores the snapshot's cold entries, expiries included (a record written
/// anew must not keep the expiry records of the one it replaces).
#[test]
fn without_a_journal_a_crash_restores_the_snapshots_cold_entries() {
    let dir = temp_dir("tiering-crash-nojournal");
    let mut args = TIERED.to_vec();
    args.extend_from_slice(&["--save", "", "--appendonly", "no"]);
    let s = serve_in(&dir, &args);
    let mut c = s.client();
    let mut m = filled(&mut c, 600, 2);
    let snapshot = m.clone();
    for (n, key) in snapshot.keys().enumerate() {
        // TTLs taken away and given, values changed, keys deleted: each goes cold again.
        let _: () = match n % 4 {
            0 => redis::cmd("PERSIST").arg(key).query(&mut c).unwrap(),
            1 => redis::cmd("EXPIRE")
                .arg(key)
                .arg(100_000)
                .query(&mut c)
                .unwrap(),
            2 => redis::cmd("APPEND")
                .arg(key)
                .arg("+")
                .query(&mut c)
                .unwrap(),
            _ => redis::cmd("DEL").arg(key).query(&mut c).unwrap(),
        };
    }
    for i in 0..300 {
        set(&mut c, &mut m, format!("fresh{i}"), value("fresh", i), true);
    }
    let (s, mut c) = crash(s, c, &dir, &args, "checked");
    assert!(tiering_field(&mut c, "tier_start_rewritten") > 100);
    check(&mut c, &snapshot);
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store that cannot be opened is emptied and rebuilt, losing nothing.
#[test]
fn a_damaged_store_after_a_crash_is_rebuilt() {
    let dir = temp_dir("tiering-crash-damaged");
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    let m = filled(&mut c, 400, 5);
    drop(c);
    drop(s);
    // Every file of the store cut to nothing: the store's own recovery refuses it.
    let store = dir.join("tier").join("store");
    let mut cut = 0;
    let mut stack = vec![store];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                std::fs::write(&p, b"x").unwrap();
                cut += 1;
            }
        }
    }
    assert!(cut > 0);
    let s = serve_in(&dir, &TIERED);
    let mut c = s.client();
    assert_eq!(tiering_value::<String>(&mut c, "tier_start"), "rebuilt");
    check(&mut c, &m);
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
