//! Decodes an RDB file and reports what it holds and how long decoding took: the
//! figure to compare with redis-server's "DB loaded from disk" time for the same file.
//!
//! `cargo run --release -p strata-rdb --example load -- dump.rdb [--print]`

use std::time::Instant;
use strata_rdb::{Item, Reader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: load <file.rdb> [--print]")?;
    let print = args.any(|a| a == "--print");
    let start = Instant::now();
    let mut r = Reader::new(std::fs::File::open(&path)?)?;
    let (mut keys, mut by_type) = (0u64, std::collections::BTreeMap::<&str, u64>::new());
    while let Some(item) = r.next_item()? {
        match item {
            Item::Key(e) => {
                keys += 1;
                *by_type.entry(e.value.type_name()).or_default() += 1;
                if print {
                    println!("db{} {:?} {:?} {:?}", e.db, e.key, e.meta, e.value);
                }
            }
            other if print => println!("{other:?}"),
            _ => {}
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "RDB v{}: {keys} keys {by_type:?}, {} empty skipped, {} bytes in {secs:.3}s",
        r.version(),
        r.empty_keys_skipped(),
        r.offset()
    );
    Ok(())
}
