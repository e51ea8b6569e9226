//! A key's access bits (its LRU clock, or its LFU counter) go to the tier with it and
//! come back with it: OBJECT IDLETIME and OBJECT FREQ, which do not touch the key, answer
//! for a cold key what they answered while it was in RAM, and eviction ranks it as before.

mod common;
use common::{set_many, tiered};

fn moved_to_ram(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("tiering").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("moved_to_ram:"))
        .unwrap_or_else(|| panic!("no moved_to_ram in {info}"))
        .trim()
        .parse()
        .unwrap()
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
