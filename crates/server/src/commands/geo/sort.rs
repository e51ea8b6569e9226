//! The two sorts Redis orders search results with, reproduced step for step because
//! points at equal distances keep whatever order the algorithm leaves them in:
//!
//! - sorting everything: the C library's qsort, which on the platforms Redis ships for is
//!   a top-down merge sort (stable: ties keep their scan order);
//! - sorting for COUNT: Redis's partial quicksort, `commands::pqsort` (shared with SORT
//!   ... LIMIT). It is not stable.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::pqsort::tests::{by_key, numbers};

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
}
