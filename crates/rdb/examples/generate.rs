//! Writes a benchmark RDB file of small and large collections (hashes, lists, sets,
//! sorted sets) for `load` and redis-server to read. For a file redis-server itself saved,
//! start redis-server on it and SAVE.
//!
//! `cargo run --release -p strata-rdb --example generate -- out.rdb [scale]`
//! (scale 1 = 2.5 million keys, about 390 MB).

use bytes::Bytes;
use strata_rdb::{KeyMeta, RdbValue, WriteOptions, Writer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: generate <out.rdb> [scale]")?;
    let scale: u64 = args.next().map_or(Ok(1), |s| s.parse())?;
    let f = std::fs::File::create(path)?;
    let mut w = Writer::new(f, WriteOptions::default())?;
    w.select_db(0, 0, 0)?;
    let s = |x: String| Bytes::from(x);
    let m = KeyMeta::default();
    for i in 0..1_000_000 * scale {
        let fields = (0..10).map(|j| (s(format!("field{j}")), s(format!("value-{i}-{j}"))));
        w.key(
            format!("hash:{i}").as_bytes(),
            &RdbValue::Hash(fields.collect()),
            &m,
        )?;
    }
    for i in 0..500_000 * scale {
        let list = (0..20).map(|j| s(format!("element-{}", i * 20 + j)));
        w.key(
            format!("list:{i}").as_bytes(),
            &RdbValue::List(list.collect()),
            &m,
        )?;
        let set = (0..20).map(|j| s((i * 1000 + j * 7).to_string()));
        w.key(
            format!("set:{i}").as_bytes(),
            &RdbValue::Set(set.collect()),
            &m,
        )?;
        let zset = (0..10).map(|j| (s(format!("member{j}")), (i + j) as f64 * 0.5));
        w.key(
            format!("zset:{i}").as_bytes(),
            &RdbValue::SortedSet(zset.collect()),
            &m,
        )?;
    }
    for i in 0..2_000 * scale {
        let set = (0..1000).map(|j| s(format!("m{i}-{j}")));
        w.key(
            format!("bigset:{i}").as_bytes(),
            &RdbValue::Set(set.collect()),
            &m,
        )?;
        let hash = (0..1000).map(|j| (s(format!("f{j}")), s(format!("v{i}-{j}"))));
        w.key(
            format!("bighash:{i}").as_bytes(),
            &RdbValue::Hash(hash.collect()),
            &m,
        )?;
        let zset = (0..1000).map(|j| (s(format!("m{j}")), j as f64));
        w.key(
            format!("bigzset:{i}").as_bytes(),
            &RdbValue::SortedSet(zset.collect()),
            &m,
        )?;
    }
    w.finish()?;
    Ok(())
}
