//! Memory of a stream of many small entries, as jemalloc counts it (the allocator Redis
//! and the server use), for comparison with redis-server's used_memory after the same
//! XADDs.
//!
//! ```sh
//! cargo run --release -p strata-engine --example stream_memory -- 1000000 varied
//! ```
//!
//! Entries are `f1 <a> f2 <b> f3 <c>`; "fixed" uses the values v1 v2 v3, "varied" a
//! counter and two 5-byte strings. IDs are explicit: 500 a millisecond, as a fast writer
//! using `*` gets them. `--print-commands` writes the same XADDs as Redis protocol on
//! stdout (for `redis-cli --pipe`) instead of measuring.

use std::io::Write;
use strata_engine::stream::{AddId, StreamId};
use strata_engine::{Encodings, StreamValue};
use tikv_jemalloc_ctl::{epoch, stats};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn entry(i: u64, varied: bool) -> (StreamId, [Vec<u8>; 6]) {
    let id = StreamId::new(1_700_000_000_000 + i / 500, i % 500);
    let (a, b, c) = if varied {
        let letters = |k: u64| (0..5).map(|j| b'a' + ((k >> (3 * j)) % 26) as u8).collect();
        (i.to_string().into_bytes(), letters(i), letters(i * 7 + 3))
    } else {
        (b"v1".to_vec(), b"v2".to_vec(), b"v3".to_vec())
    };
    (
        id,
        [b"f1".to_vec(), a, b"f2".to_vec(), b, b"f3".to_vec(), c],
    )
}

fn allocated() -> usize {
    let _ = epoch::advance();
    stats::allocated::read().unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let varied = args.get(2).is_some_and(|a| a == "varied");
    if args.iter().any(|a| a == "--print-commands") {
        let out = std::io::stdout();
        let mut out = std::io::BufWriter::new(out.lock());
        for i in 0..n {
            let (id, fields) = entry(i, varied);
            let id = id.to_string();
            let mut args: Vec<&[u8]> = vec![b"XADD", b"s", id.as_bytes()];
            args.extend(fields.iter().map(|f| &f[..]));
            let _ = write!(out, "*{}\r\n", args.len());
            for a in args {
                let _ = write!(out, "${}\r\n", a.len());
                let _ = out.write_all(a);
                let _ = out.write_all(b"\r\n");
            }
        }
        return;
    }
    let enc = Encodings::default();
    let before = allocated();
    let mut s = Box::new(StreamValue::new());
    for i in 0..n {
        let (id, fields) = entry(i, varied);
        if let Err(e) = s.add(AddId::Exact(id), &fields, 0, &enc) {
            eprintln!("entry {i}: {e}");
            std::process::exit(1);
        }
    }
    let used = allocated() - before;
    println!(
        "{n} entries ({}): {used} bytes allocated, {:.2} an entry; {} nodes; heap_bytes estimate {}",
        if varied { "varied" } else { "fixed" },
        used as f64 / n as f64,
        s.node_count(),
        s.heap_bytes()
    );
}
