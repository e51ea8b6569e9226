//! Memory use on hostile input: declared lengths and counts far beyond the data must not
//! reserve memory the input cannot justify. A counting allocator measures the peak; this
//! file holds a single test so nothing else allocates concurrently.

mod common;

use common::fixtures::{seal, Rdb};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use strata_rdb::{restore, Reader};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Peak bytes allocated while running `f`, above what was allocated before.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

#[test]
fn hostile_lengths_do_not_reserve_memory() {
    const LIMIT: usize = 4 << 20;
    let huge = (1u64 << 62).to_be_bytes();
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        (
            "string",
            Rdb::payload()
                .byte(0)
                .byte(0x81)
                .raw(&huge)
                .raw(b"abc")
                .buf
                .clone(),
        ),
        (
            "list count",
            Rdb::payload()
                .byte(1)
                .byte(0x81)
                .raw(&huge)
                .str(b"a")
                .buf
                .clone(),
        ),
        (
            "set count",
            Rdb::payload()
                .byte(2)
                .byte(0x81)
                .raw(&huge)
                .str(b"a")
                .buf
                .clone(),
        ),
        (
            "zset count",
            Rdb::payload()
                .byte(5)
                .byte(0x81)
                .raw(&huge)
                .str(b"a")
                .buf
                .clone(),
        ),
        (
            "hash count",
            Rdb::payload()
                .byte(4)
                .byte(0x81)
                .raw(&huge)
                .str(b"a")
                .buf
                .clone(),
        ),
        (
            "lzf",
            Rdb::payload()
                .byte(0)
                .byte(0xc3)
                .len(3)
                .byte(0x81)
                .raw(&huge)
                .raw(&[1, 2, 3])
                .buf
                .clone(),
        ),
        (
            "listpack",
            Rdb::payload()
                .byte(16)
                .byte(0x80)
                .raw(&u32::MAX.to_be_bytes())
                .raw(&[0xff; 6])
                .buf
                .clone(),
        ),
        (
            "quicklist nodes",
            Rdb::payload()
                .byte(18)
                .byte(0x81)
                .raw(&huge)
                .len(2)
                .str(b"x")
                .buf
                .clone(),
        ),
        (
            "stream nodes",
            Rdb::payload().byte(19).byte(0x81).raw(&huge).buf.clone(),
        ),
        (
            "stream groups",
            Rdb::payload()
                .byte(19)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .byte(0x81)
                .raw(&huge)
                .buf
                .clone(),
        ),
    ];
    for (what, body) in bodies {
        let payload = seal(body.clone());
        let used = peak_during(|| assert!(restore(&payload).is_err(), "{what}"));
        assert!(used < LIMIT, "{what}: restore peaked at {used} bytes");
        let mut file = b"REDIS0010".to_vec();
        file.extend_from_slice(&[body[0], 1, b'k']);
        file.extend_from_slice(&body[1..]);
        let used = peak_during(|| {
            let r: Result<Vec<_>, _> = Reader::new(&file[..]).expect("header").collect();
            assert!(r.is_err(), "{what}");
        });
        assert!(used < LIMIT, "{what}: reader peaked at {used} bytes");
    }
    // The measurement itself works: a real 16 MiB string does take 16 MiB.
    let big = vec![b'x'; 16 << 20];
    let mut body = Rdb::payload();
    body.byte(0).str(&big);
    let payload = seal(body.buf.clone());
    drop(body);
    let used = peak_during(|| assert!(restore(&payload).is_ok()));
    assert!(used >= 16 << 20, "peak {used}");
}
