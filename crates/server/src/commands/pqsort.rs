//! Redis's pqsort: Bentley & McIlroy's quicksort that only recurses into the partitions
//! touching the ranks asked for. SORT ... LIMIT and GEO searches with COUNT order their
//! results with it, index for index as Redis does, so elements that compare equal end in
//! Redis's order.

use std::cmp::Ordering;

/// Redis's pqsort (Bentley & McIlroy's qsort that only recurses into partitions touching
/// `lrange..=rrange`), ported index for index so ties order as in Redis.
pub fn pqsort<T>(v: &mut [T], cmp: &mut impl FnMut(&T, &T) -> Ordering, lrange: i64, rrange: i64) {
    let n = v.len();
    pq(v, 0, n, cmp, lrange, rrange);
}

fn med3<T>(
    v: &[T],
    a: usize,
    b: usize,
    c: usize,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
) -> usize {
    if cmp(&v[a], &v[b]) == Ordering::Less {
        if cmp(&v[b], &v[c]) == Ordering::Less {
            b
        } else if cmp(&v[a], &v[c]) == Ordering::Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Ordering::Greater {
        b
    } else if cmp(&v[a], &v[c]) == Ordering::Less {
        a
    } else {
        c
    }
}

fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

fn pq<T>(
    v: &mut [T],
    mut lo: usize,
    mut n: usize,
    cmp: &mut impl FnMut(&T, &T) -> Ordering,
    lr: i64,
    rr: i64,
) {
    // A partition [lo, lo+len) is skipped when the wanted range lies wholly on one side
    // (rr may be -1: LIMIT 0 0).
    let outside = |lo: usize, len: usize| {
        let (lo, hi) = (lo as i64, (lo + len) as i64);
        (lr < lo && rr < lo) || (lr >= hi && rr >= hi)
    };
    loop {
        if n < 7 {
            for pm in lo + 1..lo + n {
                let mut pl = pm;
                while pl > lo && cmp(&v[pl - 1], &v[pl]) == Ordering::Greater {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = lo + n / 2;
        if n > 7 {
            let mut pl = lo;
            let mut pn = lo + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(lo, pm);
        let (mut pa, mut pb) = (lo + 1, lo + 1);
        let (mut pc, mut pd) = (lo + n - 1, lo + n - 1);
        loop {
            while pb <= pc {
                let r = cmp(&v[pb], &v[lo]);
                if r == Ordering::Greater {
                    break;
                }
                if r == Ordering::Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = cmp(&v[pc], &v[lo]);
                if r == Ordering::Less {
                    break;
                }
                if r == Ordering::Equal {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = lo + n;
        let r = (pa - lo).min(pb - pa);
        vecswap(v, lo, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let r = pb - pa;
        if r > 1 && !outside(lo, r) {
            pq(v, lo, r, cmp, lr, rr);
        }
        let r = pd - pc;
        if r > 1 {
            lo = pn - r;
            n = r;
            if !outside(lo, n) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Orders (key, position) pairs by key alone (the position shows stability).
    pub(crate) fn by_key(a: &(u32, u32), b: &(u32, u32)) -> Ordering {
        a.0.cmp(&b.0)
    }

    /// A small deterministic generator for the sorting tests (here and geo's).
    pub(crate) fn numbers(seed: u64, n: usize, modulo: u64) -> Vec<u32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % modulo) as u32
            })
            .collect()
    }

    #[test]
    fn pqsort_sorts_the_range() {
        let mut x = 99u64;
        for n in [0usize, 1, 5, 7, 8, 40, 41, 100, 1000] {
            let mut v: Vec<u32> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 50) as u32
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort();
            if n == 0 {
                continue;
            }
            let (lo, hi) = (n / 3, (n / 2).max(n / 3));
            pqsort(
                &mut v,
                &mut |a: &u32, b: &u32| a.cmp(b),
                lo as i64,
                hi as i64,
            );
            assert_eq!(&v[lo..=hi], &sorted[lo..=hi]);
        }
    }

    #[test]
    fn partial_sort_places_the_wanted_ranks() {
        for (seed, n, k) in [
            (7, 5, 2),
            (8, 8, 3),
            (9, 41, 10),
            (10, 500, 1),
            (11, 500, 77),
        ] {
            let keys = numbers(seed, n, 50);
            let mut v: Vec<(u32, u32)> = keys.iter().copied().zip(0..).collect();
            pqsort(&mut v, &mut by_key, 0, k as i64 - 1);
            let mut sorted = keys.clone();
            sorted.sort();
            let got: Vec<u32> = v[..k].iter().map(|p| p.0).collect();
            assert_eq!(got, sorted[..k]);
            // Nothing lost or duplicated.
            let mut all: Vec<u32> = v.iter().map(|p| p.1).collect();
            all.sort();
            assert_eq!(all, (0..n as u32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_full_range_sorts_everything() {
        let mut v: Vec<(u32, u32)> = numbers(12, 300, 1000).into_iter().zip(0..).collect();
        pqsort(&mut v, &mut by_key, 0, 299);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
