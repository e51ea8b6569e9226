//! The embedded API (`strata_engine::Table`): a property test against a model (a HashMap
//! behind one Mutex), stress tests with more threads than cores (no lost update), and
//! expiry through the API.

use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use strata_engine::embedded::Error;
use strata_engine::{Kind, Table, Ttl};

const THREADS: usize = 8;

// ---------------------------------------------------------------------------------------
// Model test

#[derive(Debug, Clone)]
enum Op {
    Get(u8),
    GetWith(u8),
    Set(u8, Vec<u8>),
    SetTtl(u8, Vec<u8>),
    Delete(u8),
    Contains(u8),
    Incr(u8, i64),
    Cas(u8, Option<Vec<u8>>, Option<Vec<u8>>),
    Update(u8),
    Expire(u8),
    Persist(u8),
    HasTtl(u8),
    Len,
}

/// A model: key -> (value, has a (long) expiry), behind one lock.
#[derive(Default)]
struct Model(Mutex<Entries>);

type Entries = HashMap<Vec<u8>, (Vec<u8>, bool)>;

fn key(k: u8) -> Vec<u8> {
    format!("key:{k}").into_bytes()
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (-5i64..5).prop_map(|n| n.to_string().into_bytes()),
        Just(i64::MAX.to_string().into_bytes()),
        Just(i64::MIN.to_string().into_bytes()),
        Just(b"007".to_vec()),
        Just(b"-0".to_vec()),
        Just(Vec::new()),
        proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..12;
    prop_oneof![
        k.clone().prop_map(Op::Get),
        k.clone().prop_map(Op::GetWith),
        (k.clone(), value()).prop_map(|(k, v)| Op::Set(k, v)),
        (k.clone(), value()).prop_map(|(k, v)| Op::SetTtl(k, v)),
        k.clone().prop_map(Op::Delete),
        k.clone().prop_map(Op::Contains),
        (
            k.clone(),
            prop_oneof![-3i64..3, Just(i64::MAX), Just(i64::MIN)]
        )
            .prop_map(|(k, by)| Op::Incr(k, by)),
        (
            k.clone(),
            proptest::option::of(value()),
            proptest::option::of(value())
        )
            .prop_map(|(k, e, n)| Op::Cas(k, e, n)),
        k.clone().prop_map(Op::Update),
        k.clone().prop_map(Op::Expire),
        k.clone().prop_map(Op::Persist),
        k.clone().prop_map(Op::HasTtl),
        Just(Op::Len),
    ]
}

fn parse(s: &[u8]) -> Option<i64> {
    let n: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (n.to_string().as_bytes() == s).then_some(n)
}

fn run_model(ops: &[Op]) -> Result<(), TestCaseError> {
    let t = Table::with_shards(3);
    let model = Model::default();
    let hour = Duration::from_secs(3600);
    for op in ops {
        let mut m = model.0.lock().unwrap();
        match op {
            Op::Get(k) => prop_assert_eq!(t.get(&key(*k)), m.get(&key(*k)).map(|e| e.0.clone())),
            Op::GetWith(k) => prop_assert_eq!(
                t.get_with(&key(*k), |v| v.len()),
                m.get(&key(*k)).map(|e| e.0.len())
            ),
            Op::Set(k, v) => {
                t.set(&key(*k), v);
                m.insert(key(*k), (v.clone(), false));
            }
            Op::SetTtl(k, v) => {
                t.set_with_ttl(&key(*k), v, hour);
                m.insert(key(*k), (v.clone(), true));
            }
            Op::Delete(k) => prop_assert_eq!(t.delete(&key(*k)), m.remove(&key(*k)).is_some()),
            Op::Contains(k) => prop_assert_eq!(t.contains(&key(*k)), m.contains_key(&key(*k))),
            Op::Incr(k, by) => {
                let want = match m.get(&key(*k)) {
                    None => Ok((0, false)),
                    Some((v, ttl)) => parse(v).ok_or(Error::NotInteger).map(|n| (n, *ttl)),
                }
                .and_then(|(n, ttl)| n.checked_add(*by).ok_or(Error::Overflow).map(|n| (n, ttl)));
                let got = t.incr(&key(*k), *by);
                prop_assert_eq!(got, want.map(|w| w.0));
                if let Ok((n, ttl)) = want {
                    m.insert(key(*k), (n.to_string().into_bytes(), ttl));
                }
            }
            Op::Cas(k, expected, new) => {
                let cur = m.get(&key(*k)).map(|e| e.0.clone());
                let want = cur == *expected;
                let got = t.compare_and_swap(&key(*k), expected.as_deref(), new.as_deref());
                prop_assert_eq!(got, want);
                if want {
                    match new {
                        Some(v) => {
                            let ttl = m.get(&key(*k)).is_some_and(|e| e.1);
                            m.insert(key(*k), (v.clone(), ttl));
                        }
                        None => {
                            m.remove(&key(*k));
                        }
                    }
                }
            }
            Op::Update(k) => {
                // Appends "x"; deletes the key once its value ends in "xx".
                let f = |old: Option<&[u8]>| {
                    let old = old.unwrap_or_default();
                    (!old.ends_with(b"xx")).then(|| [old, b"x"].concat())
                };
                let cur = m.get(&key(*k)).map(|e| e.0.clone());
                let want = f(cur.as_deref());
                prop_assert_eq!(t.update(&key(*k), f), Ok(want.clone()));
                match want {
                    Some(v) => {
                        let ttl = m.get(&key(*k)).is_some_and(|e| e.1);
                        m.insert(key(*k), (v, ttl));
                    }
                    None => {
                        m.remove(&key(*k));
                    }
                }
            }
            Op::Expire(k) => {
                let e = m.get_mut(&key(*k));
                let want = e.is_some();
                if let Some(e) = e {
                    e.1 = true;
                }
                prop_assert_eq!(t.expire(&key(*k), hour), want);
            }
            Op::Persist(k) => {
                let e = m.get_mut(&key(*k));
                let want = e.as_ref().is_some_and(|e| e.1);
                if let Some(e) = e {
                    e.1 = false;
                }
                prop_assert_eq!(t.persist(&key(*k)), want);
            }
            Op::HasTtl(k) => {
                let got = t.ttl(&key(*k));
                match m.get(&key(*k)) {
                    None => prop_assert_eq!(got, None),
                    Some((_, false)) => prop_assert_eq!(got, Some(None)),
                    Some((_, true)) => {
                        let left = got.flatten();
                        prop_assert!(left.is_some_and(|d| d <= hour && d > hour / 2), "{:?}", got);
                    }
                }
            }
            Op::Len => prop_assert_eq!(t.len(), m.len()),
        }
    }
    let m = model.0.lock().unwrap();
    let mut keys: Vec<Vec<u8>> = t.keys().collect();
    keys.sort();
    let mut want: Vec<Vec<u8>> = m.keys().cloned().collect();
    want.sort();
    prop_assert_eq!(keys, want);
    for (k, (v, _)) in m.iter() {
        prop_assert_eq!(t.get(k), Some(v.clone()));
        prop_assert_eq!(t.kind(k), Some(Kind::String));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn matches_a_hashmap_behind_one_lock(ops in proptest::collection::vec(op(), 1..120)) {
        run_model(&ops)?;
    }
}

// ---------------------------------------------------------------------------------------
// Stress: more threads than cores, no lost update

#[test]
fn concurrent_incr_loses_no_update() {
    let t = Arc::new(Table::with_shards(2)); // few shards: heavy lock contention
    let per_thread = 20_000;
    let counters = 4;
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                for n in 0..per_thread {
                    let c = (n + i) % counters;
                    t.incr(format!("counter:{c}").as_bytes(), 1).unwrap();
                    t.incr(b"total", 2).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let total: i64 = (0..counters)
        .map(|c| {
            let v = t.get(format!("counter:{c}").as_bytes()).unwrap();
            std::str::from_utf8(&v).unwrap().parse::<i64>().unwrap()
        })
        .sum();
    assert_eq!(total, (THREADS * per_thread) as i64);
    assert_eq!(t.incr(b"total", 0), Ok(2 * (THREADS * per_thread) as i64));
}

#[test]
fn compare_and_swap_loops_lose_no_update() {
    let t = Arc::new(Table::new());
    let per_thread = 5_000;
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                let mut retries = 0u64;
                for _ in 0..per_thread {
                    loop {
                        let cur = t.get(b"cas");
                        let n: u64 = cur
                            .as_deref()
                            .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
                        let next = (n + 1).to_string();
                        if t.compare_and_swap(b"cas", cur.as_deref(), Some(next.as_bytes())) {
                            break;
                        }
                        retries += 1;
                    }
                }
                retries
            })
        })
        .collect();
    let retries: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let want = (THREADS * per_thread).to_string();
    assert_eq!(t.get(b"cas"), Some(want.into_bytes()), "retries: {retries}");
}

#[test]
fn cas_as_a_mutex_gives_mutual_exclusion() {
    // Threads take a CAS "lock" key, bump a plain counter with a non-atomic get+set, and
    // release: if CAS ever let two holders in, increments would be lost.
    let t = Arc::new(Table::new());
    let per_thread = 2_000;
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                let me = i.to_string();
                for _ in 0..per_thread {
                    while !t.compare_and_swap(b"lock", None, Some(me.as_bytes())) {
                        thread::yield_now();
                    }
                    let n: u64 = t
                        .get(b"guarded")
                        .map_or(0, |v| std::str::from_utf8(&v).unwrap().parse().unwrap());
                    t.set(b"guarded", (n + 1).to_string().as_bytes());
                    assert!(t.compare_and_swap(b"lock", Some(me.as_bytes()), None));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(
        t.get(b"guarded"),
        Some((THREADS * per_thread).to_string().into_bytes())
    );
    assert!(!t.contains(b"lock"));
}

#[test]
fn transactions_conserve_a_sum_under_concurrent_transfers() {
    let t = Arc::new(Table::with_shards(6));
    let accounts: Vec<Vec<u8>> = (0..32).map(|i| format!("acct:{i}").into_bytes()).collect();
    for a in &accounts {
        t.set(a, b"1000");
    }
    let total = 1000 * accounts.len() as i64;
    let accounts = Arc::new(accounts);
    let stop = Arc::new(AtomicBool::new(false));
    // An auditor reads all accounts atomically and must always see the same total.
    let auditor = {
        let (t, accounts, stop) = (Arc::clone(&t), Arc::clone(&accounts), Arc::clone(&stop));
        thread::spawn(move || {
            let mut audits = 0;
            while !stop.load(Ordering::Relaxed) || audits == 0 {
                let sum: i64 = t.transaction(&accounts, |l| {
                    accounts
                        .iter()
                        .map(|a| {
                            let v = l.get_str(a).unwrap().unwrap();
                            std::str::from_utf8(v).unwrap().parse::<i64>().unwrap()
                        })
                        .sum()
                });
                assert_eq!(sum, total);
                audits += 1;
            }
            audits
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (t, accounts) = (Arc::clone(&t), Arc::clone(&accounts));
            thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ i as u64;
                for _ in 0..3_000 {
                    rng = xorshift(rng);
                    let from = &accounts[rng as usize % accounts.len()];
                    let to = &accounts[(rng >> 20) as usize % accounts.len()];
                    let amount = (rng >> 40) as i64 % 7;
                    t.transaction(&[from, to], |l| {
                        let get = |l: &mut strata_engine::Locked<'_>, k: &[u8]| -> i64 {
                            let v = l.get_str(k).unwrap().unwrap();
                            std::str::from_utf8(v).unwrap().parse().unwrap()
                        };
                        let (a, b) = (get(l, from), get(l, to));
                        if from != to && a >= amount {
                            l.set_str(from, (a - amount).to_string().as_bytes(), Ttl::Keep);
                            l.set_str(to, (b + amount).to_string().as_bytes(), Ttl::Keep);
                        }
                    });
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let audits = auditor.join().unwrap();
    assert!(audits > 0);
    let sum: i64 = accounts
        .iter()
        .map(|a| {
            let v = t.get(a).unwrap();
            std::str::from_utf8(&v).unwrap().parse::<i64>().unwrap()
        })
        .sum();
    assert_eq!(sum, total);
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

#[test]
fn mixed_readers_and_writers_over_many_shards() {
    // Writers own disjoint key ranges and write "writer:seq" with rising seq; readers read
    // random keys and must never see a key's seq go backwards or a torn value. Meanwhile
    // a scanner checks that keys present for the whole scan are returned exactly once.
    let t = Arc::new(Table::with_shards(8));
    let writers = 4;
    let keys_per_writer = 2_000;
    let rounds = 4;
    let stable: Vec<Vec<u8>> = (0..500)
        .map(|i| format!("stable:{i}").into_bytes())
        .collect();
    for k in &stable {
        t.set(k, b"s");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for w in 0..writers {
        let t = Arc::clone(&t);
        handles.push(thread::spawn(move || {
            for seq in 0..rounds {
                for i in 0..keys_per_writer {
                    let k = format!("w{w}:{i}");
                    t.set(k.as_bytes(), format!("{w}:{seq}").as_bytes());
                    // Churn: short-lived keys that come and go during the scans.
                    let churn = format!("churn:{w}:{i}");
                    if seq % 2 == 0 {
                        t.set(churn.as_bytes(), b"c");
                    } else {
                        t.delete(churn.as_bytes());
                    }
                }
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..THREADS - writers - 1 {
        let (t, stop) = (Arc::clone(&t), Arc::clone(&stop));
        readers.push(thread::spawn(move || {
            let mut seen: HashMap<(usize, usize), usize> = HashMap::new();
            let mut rng = 0xDEAD_BEEFu64 + r as u64;
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rng = xorshift(rng);
                let (w, i) = (
                    rng as usize % writers,
                    (rng >> 16) as usize % keys_per_writer,
                );
                let k = format!("w{w}:{i}");
                if let Some((ww, seq)) = t.get_with(k.as_bytes(), |v| {
                    let s = std::str::from_utf8(v).unwrap();
                    let (a, b) = s.split_once(':').unwrap();
                    (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap())
                }) {
                    assert_eq!(ww, w, "value written by the key's own writer");
                    let last = seen.entry((w, i)).or_insert(0);
                    assert!(seq >= *last, "seq went backwards on {k}");
                    *last = seq;
                }
                reads += 1;
            }
            reads
        }));
    }
    let scanner = {
        let (t, stop, stable) = (Arc::clone(&t), Arc::clone(&stop), stable.clone());
        thread::spawn(move || {
            let mut scans = 0;
            while !stop.load(Ordering::Relaxed) || scans == 0 {
                let mut count: HashMap<Vec<u8>, usize> = HashMap::new();
                for k in t.keys() {
                    *count.entry(k).or_insert(0) += 1;
                }
                assert!(count.values().all(|&c| c == 1), "a key returned twice");
                for k in &stable {
                    assert_eq!(count.get(k), Some(&1), "stable key missed by a scan");
                }
                scans += 1;
            }
            scans
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 0);
    assert!(scanner.join().unwrap() > 0);
    // Final state: every writer key holds its last round.
    for w in 0..writers {
        for i in 0..keys_per_writer {
            let k = format!("w{w}:{i}");
            assert_eq!(
                t.get(k.as_bytes()),
                Some(format!("{w}:{}", rounds - 1).into_bytes())
            );
        }
    }
    let live: HashSet<Vec<u8>> = t.keys().collect();
    // rounds is even, so the last round deleted the churn keys.
    assert_eq!(live.len(), writers * keys_per_writer + stable.len());
    assert_eq!(t.len(), live.len());
}

// ---------------------------------------------------------------------------------------
// Expiry and types

#[test]
fn expiry_through_the_api() {
    let t = Table::new();
    t.set_with_ttl(b"short", b"v", Duration::from_millis(30));
    t.set_with_ttl(b"long", b"v", Duration::from_secs(60));
    t.set(b"n", b"1");
    assert!(t.expire(b"n", Duration::from_millis(30)));
    assert_eq!(t.incr(b"n", 1), Ok(2)); // INCR keeps the TTL
    assert!(t.ttl(b"n").unwrap().is_some());
    t.set(b"persisted", b"v");
    assert!(t.expire(b"persisted", Duration::from_millis(30)));
    assert!(t.persist(b"persisted"));
    assert!(t.compare_and_swap(b"short", Some(b"v"), Some(b"w"))); // CAS keeps the TTL
    assert!(t.ttl(b"short").unwrap().is_some());
    assert_eq!(t.len(), 4);

    thread::sleep(Duration::from_millis(60));
    assert_eq!(t.get(b"short"), None);
    assert!(!t.contains(b"n"));
    assert_eq!(t.ttl(b"n"), None);
    assert_eq!(t.get(b"long"), Some(b"v".to_vec()));
    assert_eq!(t.get(b"persisted"), Some(b"v".to_vec()));
    assert!(!t.expire(b"short", Duration::from_secs(1)));
    assert!(!t.compare_and_swap(b"short", Some(b"w"), Some(b"x")));
    assert!(t.compare_and_swap(b"short", None, Some(b"new")));
    assert_eq!(t.ttl(b"short"), Some(None)); // recreated without a TTL

    // Expired keys still count until reclaimed.
    t.set_with_ttl(b"a", b"v", Duration::ZERO);
    t.set_with_ttl(b"b", b"v", Duration::ZERO);
    assert_eq!(t.get(b"a"), None); // reclaimed by the read
    assert_eq!(t.len(), 4); // long, persisted, short, b
    assert_eq!(t.purge_expired(), 1);
    assert_eq!(t.len(), 3);
    let mut keys: Vec<_> = t.keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![b"long".to_vec(), b"persisted".to_vec(), b"short".to_vec()]
    );
}

#[test]
fn concurrent_expiry_and_purge() {
    let t = Arc::new(Table::with_shards(6));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                for n in 0..2_000 {
                    let k = format!("{i}:{n}");
                    let ttl = if n % 2 == 0 {
                        Duration::ZERO
                    } else {
                        Duration::from_secs(60)
                    };
                    t.set_with_ttl(k.as_bytes(), b"v", ttl);
                    if n % 100 == 0 {
                        t.purge_expired();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    t.purge_expired();
    assert_eq!(t.len(), THREADS * 1_000);
    assert_eq!(t.keys().count(), THREADS * 1_000);
}

#[test]
fn collections_and_wrong_type() {
    let t = Table::new();
    assert_eq!(
        t.with_hash_mut(b"h", |h, enc| {
            h.set(b"a", b"1", enc);
            h.set(b"b", b"2", enc);
            h.len()
        }),
        Ok(2)
    );
    assert_eq!(
        t.with_hash(b"h", |h| h.get(b"b").map(<[u8]>::to_vec)),
        Ok(Some(Some(b"2".to_vec())))
    );
    assert_eq!(t.kind(b"h"), Some(Kind::Hash));
    assert_eq!(t.get(b"h"), None);
    assert_eq!(t.incr(b"h", 1), Err(Error::WrongType));
    assert!(!t.compare_and_swap(b"h", None, Some(b"x")));
    assert_eq!(t.update(b"h", |_| None), Err(Error::WrongType));
    assert_eq!(t.with_set(b"h", |s| s.len()), Err(Error::WrongType));
    assert_eq!(t.with_set_mut(b"h", |s, _| s.len()), Err(Error::WrongType));
    assert!(t.contains(b"h"));

    // A set growing past the intset limit keeps every member.
    for i in 0..1_000 {
        assert_eq!(
            t.with_set_mut(b"s", |s, enc| s.add(i.to_string().as_bytes(), enc)),
            Ok(true)
        );
    }
    t.with_set_mut(b"s", |s, enc| s.add(b"word", enc)).unwrap();
    assert_eq!(t.with_set(b"s", |s| s.len()), Ok(Some(1_001)));
    assert_eq!(t.with_hash_mut(b"s", |h, _| h.len()), Err(Error::WrongType));

    // Empty collections are never kept.
    t.with_hash_mut(b"h", |h, _| {
        h.remove(b"a");
        h.remove(b"b");
    })
    .unwrap();
    assert!(!t.contains(b"h"));
    t.with_set_mut(b"e", |_, _| ()).unwrap();
    assert!(!t.contains(b"e"));
    t.set(b"str", b"v");
    assert_eq!(
        t.with_hash_mut(b"str", |h, _| h.len()),
        Err(Error::WrongType)
    );
    assert_eq!(t.get(b"str"), Some(b"v".to_vec()));

    // Concurrent hash updates from many threads: each field lands once.
    let t = Arc::new(t);
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                for n in 0..500 {
                    let f = format!("{i}:{n}");
                    t.with_hash_mut(b"big", |h, enc| h.set(f.as_bytes(), b"v", enc))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(t.with_hash(b"big", |h| h.len()), Ok(Some(THREADS * 500)));
    t.clear();
    assert!(t.is_empty());
}
