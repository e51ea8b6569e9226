//! `shard`'s tests: the tables, their growth, the prefetch hint and reads.

use super::{hash, key_eq, Removed, ShardData};
use crate::access::Stamp;
use crate::entry::Slot;
use crate::inline::Inline;
use crate::value::Value;

fn key(i: u32) -> Vec<u8> {
    format!("key:{i}").into_bytes()
}

/// A value too long to be inline with `key(i)`: it goes to the main table.
fn long(i: u32) -> Vec<u8> {
    format!("value-{i:015}").into_bytes()
}

/// Where `table` keeps the entry at bucket `at`, and how far that is from where a
/// probe for `h` starts.
fn placed<T>(table: &hashbrown::HashTable<T>, at: usize, h: u64) -> (usize, usize) {
    let s = table.get_bucket(at).expect("occupied");
    let n = table.num_buckets();
    (
        std::ptr::from_ref(s).addr(),
        (at + n - (h as usize & (n - 1))) % n,
    )
}

/// The prefetch hint's view of hashbrown's layout holds for both tables: every entry
/// lies at `end - (index + 1) * size`, and nearly all sit within a probe group of the
/// bucket their hash starts at (so the hint loads the right lines).
#[test]
fn the_slots_hint_points_at_the_probed_slots() {
    let mut d = ShardData::default();
    const N: u32 = 20_000;
    for i in 0..N {
        d.put_str(hash(&key(i)), &key(i), b"v", None, Stamp::Lru(0));
        d.put_str(
            hash(&key(N + i)),
            &key(N + i),
            &long(i),
            None,
            Stamp::Lru(0),
        );
    }
    assert_eq!((d.small.len(), d.table.len()), (N as usize, N as usize));
    assert_ne!(d.slots_end, 0);
    assert_ne!(d.small_end, 0);
    let (mut near, mut near_small) = (0, 0);
    for i in 0..N {
        let h = hash(&key(N + i));
        let at = d.table.find_bucket_index(h, |s| s.key() == key(N + i));
        let (addr, distance) = placed(&d.table, at.expect("entry"), h);
        assert_eq!(
            addr,
            d.slots_end - (at.unwrap() + 1) * std::mem::size_of::<Slot>()
        );
        near += (distance < 16) as u32;
        let h = hash(&key(i));
        let at = d.small.find_bucket_index(h, |s| s.key() == key(i));
        let (addr, distance) = placed(&d.small, at.expect("entry"), h);
        assert_eq!(
            addr,
            d.small_end - (at.unwrap() + 1) * std::mem::size_of::<Inline>()
        );
        near_small += (distance < 16) as u32;
    }
    for n in [near, near_small] {
        assert!(
            n >= N / 10 * 9,
            "{n} of {N} within a group of their probe start"
        );
    }
    d.clear();
    assert_eq!((d.slots_end, d.small_end, d.len()), (0, 0, 0));
}

/// Every entry stays findable, with its value, across the main table's growths (our
/// `grow`) and across inserts into a table full of tombstones (hashbrown's
/// in-place rehash), and the table grows like hashbrown's own.
#[test]
fn growing_keeps_every_entry() {
    let mut d = ShardData::default();
    let check = |d: &ShardData, live: std::ops::Range<u32>| {
        assert_eq!((d.table.len(), d.small.len()), (live.len(), 0));
        for i in live {
            let s = d.find(hash(&key(i)), &key(i)).expect("entry");
            assert_eq!(s.as_str(), Some(&long(i)[..]));
        }
    };
    const N: u32 = 7000;
    for i in 0..N {
        d.put_str(hash(&key(i)), &key(i), &long(i), None, Stamp::Lru(0));
        d.put(
            hash(&key(i)),
            &key(i),
            Value::Str(long(i)),
            None,
            Stamp::Lru(0),
        );
    }
    check(&d, 0..N);
    let mut reference = hashbrown::HashTable::new();
    for i in 0..N {
        reference.insert_unique(hash(&key(i)), i, |&i| hash(&key(i)));
    }
    assert_eq!(d.table.num_buckets(), reference.num_buckets());
    // Down to 3000 keys in a table filled close to its limit, then keys come and go:
    // their tombstones fill the table again and again, and hashbrown clears them in
    // place, at the same size.
    const LIVE: u32 = 3000;
    for i in 0..N - LIVE {
        assert!(d.remove(hash(&key(i)), &key(i)).is_some());
    }
    let buckets = d.table.num_buckets();
    for i in N..200_000u32 {
        d.put_str(hash(&key(i)), &key(i), &long(i), None, Stamp::Lru(0));
        assert!(d.remove(hash(&key(i - LIVE)), &key(i - LIVE)).is_some());
    }
    check(&d, 200_000 - LIVE..200_000);
    assert_eq!(d.table.num_buckets(), buckets);
}

/// A string moves between the tables as its shape changes, and is never in both:
/// inline while short with no expiry; a block with an expiry, a longer value, or once
/// edited; inline again when overwritten short. The volatile count follows.
#[test]
fn strings_move_between_the_tables_as_their_shape_changes() {
    let mut d = ShardData::default();
    let (k, h) = (&b"k"[..], hash(b"k"));
    let where_ = |d: &ShardData| {
        let small = d.small.find(h, |s| s.key() == k).is_some();
        let block = d.table.find(h, |s| s.key() == k).is_some();
        assert!(!(small && block), "in both tables");
        let e = d
            .find(h, k)
            .map(|e| (e.as_str().map(<[u8]>::to_vec), e.expire_at()));
        (small, block, e, d.volatile)
    };
    let v = |s: &[u8]| Some(s.to_vec());
    d.put_str(h, k, b"short", None, Stamp::Lru(1));
    assert_eq!(where_(&d), (true, false, Some((v(b"short"), None)), 0));
    assert!(d.set_expire(h, k, Some(50)));
    assert_eq!(where_(&d), (false, true, Some((v(b"short"), Some(50))), 1));
    d.put_str(h, k, b"again", None, Stamp::Lru(1));
    assert_eq!(where_(&d), (true, false, Some((v(b"again"), None)), 0));
    d.put_str(h, k, &[b'x'; 30], None, Stamp::Lru(1));
    assert_eq!(where_(&d), (false, true, Some((v(&[b'x'; 30]), None)), 0));
    d.put(h, k, Value::Str(b"s".to_vec()), None, Stamp::Lru(1));
    assert_eq!(where_(&d), (true, false, Some((v(b"s"), None)), 0));
    assert!(d.set_expire(h, k, None), "clearing no expiry");
    assert_eq!(where_(&d), (true, false, Some((v(b"s"), None)), 0));
    // An edit takes the block form, keeping the value and the access time.
    d.touch(h, k, Stamp::Lru(77));
    let slot = d.block_mut(h, k).expect("entry");
    assert_eq!((slot.view().as_str(), slot.lru()), (Some(&b"s"[..]), 77));
    assert_eq!(where_(&d), (false, true, Some((v(b"s"), None)), 0));
    d.put_str(h, k, b"t", Some(9), Stamp::Lru(1));
    assert_eq!(where_(&d), (false, true, Some((v(b"t"), Some(9))), 1));
    d.put_str(h, k, b"u", None, Stamp::Lru(1));
    assert_eq!(where_(&d), (true, false, Some((v(b"u"), None)), 0));
    let Some(Removed::Inline(s)) = d.remove(h, k) else {
        panic!("an inline entry")
    };
    assert_eq!(s.value(), b"u");
    assert_eq!(where_(&d), (false, false, None, 0));
    assert!(!d.set_expire(h, k, Some(1)) && !d.set_expire(h, k, None));
}

/// A read counts a hit or a miss in either table, and stamps the access time only
/// when asked to.
#[test]
fn reads_count_and_touch_in_both_tables() {
    let mut d = ShardData::default();
    for (k, v) in [(&b"a"[..], &b"1"[..]), (b"b", &[b'2'; 30])] {
        d.put_str(hash(k), k, v, None, Stamp::Lru(5));
        let e = d.read(hash(k), k, None).expect("entry");
        assert_eq!((e.as_str(), e.lru()), (Some(v), 5));
        let e = d.read(hash(k), k, Some(Stamp::Lru(6))).expect("entry");
        assert_eq!((e.as_str(), e.lru()), (Some(v), 6));
    }
    assert!(d.read(hash(b"c"), b"c", Some(Stamp::Lru(1))).is_none());
    assert_eq!(
        (d.hits, d.misses, d.small.len(), d.table.len()),
        (4, 1, 1, 1)
    );
}

/// `key_eq` agrees with slice equality for every length around its word paths and a
/// difference at every position.
#[test]
fn key_eq_is_slice_equality() {
    for n in 0..40usize {
        let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
        assert!(key_eq(&a, &a.clone()), "len {n}");
        for at in 0..n {
            let mut b = a.clone();
            b[at] ^= 1;
            assert!(!key_eq(&a, &b), "len {n}, byte {at}");
        }
        let mut longer = a.clone();
        longer.push(0);
        assert!(!key_eq(&a, &longer) && !key_eq(&longer, &a), "len {n}");
    }
}

/// Puts `n` entries, a third of them inline, into a shard expecting `expected` (0: none);
/// each table's bucket counts as they changed after the 64th entry, and at the end.
fn growth(n: u32, expected: u32) -> (Vec<usize>, Vec<usize>) {
    let mut d = ShardData {
        expected,
        ..Default::default()
    };
    let (mut small, mut table) = (Vec::new(), Vec::new());
    for i in 0..n {
        let v = if i % 3 == 0 { b"v".to_vec() } else { long(i) };
        d.put_str(hash(&key(i)), &key(i), &v, None, Stamp::Lru(0));
        if i >= 64 {
            for (seen, now) in [
                (&mut small, d.small.num_buckets()),
                (&mut table, d.table.num_buckets()),
            ] {
                if seen.last() != Some(&now) {
                    seen.push(now);
                }
            }
        }
    }
    (small, table)
}

/// With a load's expectation, each table grows to its share of it in at most 64-fold
/// steps, to the size doubling would have reached; without one, it doubles its way there.
#[test]
fn tables_expecting_a_load_grow_in_few_steps_to_their_share() {
    const N: u32 = 30_000;
    let (small, table) = growth(N, N);
    let (small_doubling, table_doubling) = growth(N, 0);
    assert!(small.len() <= 3, "inline table sizes {small:?}");
    assert!(table.len() <= 3, "main table sizes {table:?}");
    assert!(small_doubling.len() > 5 && table_doubling.len() > 5);
    assert_eq!(small.last(), small_doubling.last());
    assert_eq!(table.last(), table_doubling.last());
}

/// A file that announces far more keys than it holds reserves at most 64 times what its
/// keys fill.
#[test]
fn an_inflated_expectation_reserves_a_bounded_table() {
    let (small, table) = growth(300, u32::MAX);
    let most = |n: usize| (64 * n * 8 / 7).next_power_of_two();
    assert!(*table.last().unwrap_or(&0) <= most(200), "{table:?}");
    assert!(*small.last().unwrap_or(&0) <= most(100), "{small:?}");
}
