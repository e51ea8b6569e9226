//! Tests of the sorted set value, in a file of their own (`zset.rs` holds the type).

use super::*;

fn enc(entries: usize) -> Encodings {
    let e = Encodings::default();
    e.zset_max_listpack_entries
        .store(entries, std::sync::atomic::Ordering::Relaxed);
    e
}

fn all(z: &ZSetValue) -> Vec<(Vec<u8>, f64)> {
    let mut v = Vec::new();
    z.for_range(0, z.len(), false, |m, s| v.push((m.to_vec(), s)));
    v
}

/// Items in the set's order are packed as they come; any others are sorted first: the
/// same set either way, in either form.
#[test]
fn from_ordered_matches_from_members() {
    let m = |i: usize| format!("m{i:03}").into_bytes();
    let ordered: Vec<(Vec<u8>, f64)> = (0..20).map(|i| (m(i), (i / 3) as f64)).collect();
    let mut shuffled = ordered.clone();
    shuffled.swap(3, 17);
    for entries in [128, 8] {
        let e = enc(entries);
        for items in [&ordered, &shuffled] {
            let refs: Vec<(&[u8], f64)> = items.iter().map(|(m, s)| (&m[..], *s)).collect();
            let got = ZSetValue::from_ordered(refs.iter().copied(), &e);
            let want = ZSetValue::from_members(refs.clone(), &e);
            assert_eq!(all(&got), all(&want));
            assert_eq!(all(&got), ordered);
            assert_eq!(got.encoding(), want.encoding());
        }
    }
}

#[test]
fn pack_scores_round_trip() {
    let e = enc(1000);
    let mut z = ZSetValue::default();
    let scores = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        246.0,
        247.0,
        -129.0,
        1e18,
        -4.6e18,
        4.7e18,
        0.1,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        -5e-324,
    ];
    for (i, s) in scores.iter().enumerate() {
        z.add(format!("m{i}").as_bytes(), *s, 0, &e);
    }
    for (i, s) in scores.iter().enumerate() {
        let got = z.score(format!("m{i}").as_bytes()).unwrap();
        assert_eq!(got, *s, "{s}");
        if *s != 0.0 {
            assert_eq!(got.to_bits(), s.to_bits());
        }
    }
    let v = all(&z);
    assert!(v.windows(2).all(|w| w[0].1 <= w[1].1));
    // The loaded form, sized by `entry_len` before encoding, holds the same.
    let items: Vec<(&[u8], f64)> = v.iter().map(|(m, s)| (&m[..], *s)).collect();
    let loaded = ZSetValue::from_members(items, &e);
    let Repr::Pack(p) = &loaded.repr else {
        panic!("expected the packed form")
    };
    assert_eq!(p.buf.len(), p.buf.capacity());
    assert_eq!(all(&loaded), v);
}

#[test]
fn both_forms_agree() {
    let small = enc(1000);
    let big = enc(0);
    let mut a = ZSetValue::default();
    let mut b = ZSetValue::with_hint(0, 0, &big);
    assert_eq!(b.encoding(), "skiplist");
    let mut x = 12345u64;
    for _ in 0..3000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let m = format!("k{}", x % 200);
        let s = ((x >> 32) % 50) as f64 - 25.0;
        match x % 4 {
            0 => {
                assert_eq!(a.remove(m.as_bytes()), b.remove(m.as_bytes()));
            }
            _ => {
                assert_eq!(
                    a.add(m.as_bytes(), s, 0, &small),
                    b.add(m.as_bytes(), s, 0, &big)
                );
            }
        }
        assert_eq!(a, b);
    }
    assert_eq!(all(&a), all(&b));
    let gte = |_: &[u8], s: f64| s > -3.0;
    let lte = |_: &[u8], s: f64| s <= 7.0;
    assert_eq!(
        a.span(false, &gte, &lte, false),
        b.span(false, &gte, &lte, false)
    );
    assert_eq!(
        a.span(false, &gte, &lte, true),
        b.span(false, &gte, &lte, true)
    );
    for m in ["k1", "k2", "k77"] {
        assert_eq!(a.rank(m.as_bytes()), b.rank(m.as_bytes()));
    }
    assert_eq!(a.pop(true, 5), b.pop(true, 5));
    assert_eq!(a.pop(false, 5), b.pop(false, 5));
    assert_eq!(a, b);
}
