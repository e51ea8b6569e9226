//! The two sorts Redis orders search results with, reproduced step for step because
//! points at equal distances keep whatever order the algorithm leaves them in:
//!
//! - sorting everything: the C library's qsort, which on the platforms Redis ships for is
//!   a top-down merge sort (stable: ties keep their scan order);
//! - sorting for COUNT: Redis's partial quicksort (Bentley & McIlroy's, skipping the
//!   partitions that lie wholly outside the ranks asked for). It is not stable.
//!
//! Comparisons follow Redis's comparator, which is not a total order when a distance is
//! NaN; both algorithms are therefore written to depend only on the comparisons they
//! make, in the order they make them.

use std::cmp::Ordering;

/// Sorts `v` stably with a top-down merge sort: halves of n/2 and n - n/2 elements, the
/// left run winning ties.
pub(super) fn merge_sort<T: Copy>(v: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering) {
    let mut tmp = Vec::with_capacity(v.len());
    merge_sort_in(v, &mut tmp, cmp);
}

fn merge_sort_in<T: Copy>(v: &mut [T], tmp: &mut Vec<T>, cmp: &impl Fn(&T, &T) -> Ordering) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    merge_sort_in(&mut v[..n1], tmp, cmp);
    merge_sort_in(&mut v[n1..], tmp, cmp);
    tmp.clear();
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < n {
        if cmp(&v[i], &v[j]) != Ordering::Greater {
            tmp.push(v[i]);
            i += 1;
        } else {
            tmp.push(v[j]);
            j += 1;
        }
    }
    // What is left of the right run is already in place.
    tmp.extend_from_slice(&v[i..n1]);
    v[..tmp.len()].copy_from_slice(tmp);
}

/// Puts the elements of ranks `lo..=hi` in place, in order, as Redis's pqsort does;
/// the rest of `v` ends in an unspecified order.
pub(super) fn partial_sort<T>(
    v: &mut [T],
    cmp: &impl Fn(&T, &T) -> Ordering,
    lo: usize,
    hi: usize,
) {
    let n = v.len();
    partial_sort_in(v, 0, n, cmp, (lo, hi));
}

/// Whether `start..start + len` holds none of the ranks wanted.
fn outside(start: usize, len: usize, (lo, hi): (usize, usize)) -> bool {
    let last = start + len - 1;
    (lo < start && hi < start) || (lo > last && hi > last)
}

/// The median of three positions, by Redis's decision tree.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    use Ordering::{Greater, Less};
    if cmp(&v[a], &v[b]) == Less {
        if cmp(&v[b], &v[c]) == Less {
            b
        } else if cmp(&v[a], &v[c]) == Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Greater {
        b
    } else if cmp(&v[a], &v[c]) == Less {
        a
    } else {
        c
    }
}

/// Swaps `n` elements from `a` with `n` from `b` (the ranges do not overlap).
fn swap_runs<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

fn partial_sort_in<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
    want: (usize, usize),
) {
    use Ordering::{Equal, Greater, Less};
    loop {
        if n < 7 {
            // Insertion sort for small runs.
            for m in a + 1..a + n {
                let mut l = m;
                while l > a && cmp(&v[l - 1], &v[l]) == Greater {
                    v.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        let mut m = a + n / 2;
        if n > 7 {
            let mut l = a;
            let mut r = a + n - 1;
            if n > 40 {
                let d = n / 8;
                l = med3(v, l, l + d, l + 2 * d, cmp);
                m = med3(v, m - d, m, m + d, cmp);
                r = med3(v, r - 2 * d, r - d, r, cmp);
            }
            m = med3(v, l, m, r, cmp);
        }
        v.swap(a, m);
        // Three-way partition around the pivot at `a`: equal keys gather at both ends
        // (a+1..pa and pd+1..a+n) and are swapped into the middle afterwards.
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c == Greater {
                    break;
                }
                if c == Equal {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c == Less {
                    break;
                }
                if c == Equal {
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
        let end = a + n;
        let r = (pa - a).min(pb - pa);
        swap_runs(v, a, pb - r, r);
        let r = (pd - pc).min(end - pd - 1);
        swap_runs(v, pb, end - r, r);
        let left = pb - pa;
        if left > 1 && !outside(a, left, want) {
            partial_sort_in(v, a, left, cmp, want);
        }
        let right = pd - pc;
        if right > 1 {
            a = end - right;
            n = right;
            if !outside(a, n, want) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_key(a: &(u32, u32), b: &(u32, u32)) -> Ordering {
        a.0.cmp(&b.0)
    }

    /// A small deterministic generator for the tests.
    fn numbers(seed: u64, n: usize, modulo: u64) -> Vec<u32> {
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
    fn merge_sort_is_sorted_and_stable() {
        for (seed, n) in [(1, 0), (2, 1), (3, 7), (4, 100), (5, 1000)] {
            let mut v: Vec<(u32, u32)> = numbers(seed, n, 10).into_iter().zip(0..).collect();
            let mut expect = v.clone();
            expect.sort_by(by_key);
            merge_sort(&mut v, &by_key);
            assert_eq!(v, expect);
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
            partial_sort(&mut v, &by_key, 0, k - 1);
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
    fn full_range_partial_sort_sorts_everything() {
        let mut v: Vec<(u32, u32)> = numbers(12, 300, 1000).into_iter().zip(0..).collect();
        partial_sort(&mut v, &by_key, 0, 299);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
