//! Large hashes, sets and sorted sets on redis-server and Strata, with every reply compared:
//! sizes past those where the collections' index grows and shrinks by moving entries over
//! later operations, their elements span several storage segments, and a sorted set
//! compacts its slab while commands keep arriving (crates/engine/src/types/id_index.rs,
//! segments.rs, zset_tree.rs). Where Redis's order is unspecified (HGETALL, SMEMBERS) the
//! elements are compared sorted.

mod common;

use common::Rng;
use redis::{Connection, Value};

/// Both servers, and a check that a command answers the same on each.
struct Pair {
    redis: Connection,
    strata: Connection,
    _procs: (common::Proc, common::Proc),
}

impl Pair {
    fn new() -> Pair {
        let (r, s) = (common::redis(&[]), common::strata(&[]));
        Pair {
            redis: r.client(),
            strata: s.client(),
            _procs: (r, s),
        }
    }

    fn both(&mut self, args: &[String]) -> (Value, Value) {
        let run = |c: &mut Connection| {
            let mut cmd = redis::cmd(&args[0]);
            for a in &args[1..] {
                cmd.arg(a);
            }
            cmd.query::<Value>(c)
                .unwrap_or_else(|e| panic!("{}: {e}", args[0]))
        };
        (run(&mut self.redis), run(&mut self.strata))
    }

    /// The same reply, in the same order.
    fn same(&mut self, args: &[String]) {
        let (r, s) = self.both(args);
        assert_eq!(r, s, "{} ...", args[..args.len().min(3)].join(" "));
    }

    /// The same elements (pairs kept together when `pairs`), in any order.
    fn same_sorted(&mut self, args: &[String], pairs: bool) {
        let (r, s) = self.both(args);
        assert_eq!(sorted(r, pairs), sorted(s, pairs), "{}", args.join(" "));
    }
}

fn sorted(v: Value, pairs: bool) -> Vec<Vec<Vec<u8>>> {
    let items = common::bulk_strings(v);
    let mut groups: Vec<Vec<Vec<u8>>> = items
        .chunks(if pairs { 2 } else { 1 })
        .map(<[Vec<u8>]>::to_vec)
        .collect();
    groups.sort();
    groups
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// `verb key` followed by `per` generated arguments, for `n` elements in all.
fn batches(
    verb: &str,
    key: &str,
    n: u32,
    per: u32,
    mut elem: impl FnMut(u32) -> Vec<String>,
) -> Vec<Vec<String>> {
    (0..n.div_ceil(per))
        .map(|b| {
            let mut c = args(&[verb, key]);
            for i in b * per..((b + 1) * per).min(n) {
                c.extend(elem(i));
            }
            c
        })
        .collect()
}

#[test]
fn a_large_sorted_set_grows_pops_and_compacts_as_redis() {
    let mut p = Pair::new();
    let mut rng = Rng(0x5eed_1234);
    // 80k members, scores with many ties (ordered by member then).
    for c in batches("ZADD", "z", 80_000, 1000, |i| {
        vec![(rng.next() % 5000).to_string(), format!("m{i}")]
    }) {
        p.same(&c);
    }
    p.same(&args(&["ZCARD", "z"]));
    // Pop three quarters and more (the slab compacts), with adds, removes and rank reads
    // arriving while it does.
    for round in 0..1100u32 {
        p.same(&args(&["ZPOPMIN", "z", "60"]));
        if round % 3 == 0 {
            let m = format!("late{round}");
            p.same(&args(&["ZADD", "z", &(round % 97).to_string(), &m]));
            p.same(&args(&["ZRANK", "z", &m]));
        }
        if round % 5 == 0 {
            let victim = format!("m{}", rng.next() % 80_000);
            p.same(&args(&["ZREM", "z", &victim]));
            p.same(&args(&["ZPOPMAX", "z"]));
        }
        if round % 100 == 0 {
            p.same(&args(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]));
        }
    }
    // Enough further operations for the compaction, one move each, to end (and the
    // index to shrink after it).
    for i in 0..6000u32 {
        let m = format!("temp{i}");
        p.same(&args(&["ZADD", "z", "1", &m]));
        p.same(&args(&["ZREM", "z", &m]));
    }
    p.same(&args(&["ZCARD", "z"]));
    p.same(&args(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]));
    // Every member ever added, found (or not) through the index.
    let mut all: Vec<String> = (0..80_000).map(|i| format!("m{i}")).collect();
    all.extend((0..1100).map(|r| format!("late{r}")));
    for chunk in all.chunks(1000) {
        let mut c = args(&["ZMSCORE", "z"]);
        c.extend(chunk.iter().cloned());
        p.same(&c);
    }
}

#[test]
fn a_large_hash_and_set_grow_and_shrink_as_redis() {
    let mut p = Pair::new();
    for c in batches("HSET", "h", 80_000, 1000, |i| {
        vec![format!("field:{i}"), format!("value:{}", i * 7)]
    }) {
        p.same(&c);
    }
    for c in batches("SADD", "s", 80_000, 1000, |i| vec![format!("member:{i}")]) {
        p.same(&c);
    }
    p.same_sorted(&args(&["HGETALL", "h"]), true);
    p.same_sorted(&args(&["SMEMBERS", "s"]), false);
    // Delete 9 in 10 (the indexes shrink), with new elements arriving meanwhile.
    let mut rng = Rng(0xfeed_f00d);
    for round in 0..800u32 {
        let mut hdel = args(&["HDEL", "h"]);
        let mut srem = args(&["SREM", "s"]);
        for i in round * 100..(round + 1) * 100 {
            if i % 10 != 0 {
                hdel.push(format!("field:{i}"));
                srem.push(format!("member:{i}"));
            }
        }
        p.same(&hdel);
        p.same(&srem);
        let n = rng.next() % 1000;
        p.same(&args(&[
            "HSET",
            "h",
            &format!("new:{n}"),
            &round.to_string(),
        ]));
        p.same(&args(&["SADD", "s", &format!("new:{n}")]));
        if round % 100 == 0 {
            p.same(&args(&["HLEN", "h"]));
            p.same(&args(&["SCARD", "s"]));
            p.same_sorted(&args(&["HGETALL", "h"]), true);
        }
    }
    p.same_sorted(&args(&["HGETALL", "h"]), true);
    p.same_sorted(&args(&["SMEMBERS", "s"]), false);
    for i in (0..80_000).step_by(41) {
        p.same(&args(&["HGET", "h", &format!("field:{i}")]));
        p.same(&args(&["SISMEMBER", "s", &format!("member:{i}")]));
    }
}
