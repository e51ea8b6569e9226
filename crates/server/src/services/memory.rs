//! used_memory: what the process has allocated, read cheaply enough to check before every
//! command, as Redis's zmalloc counter is.
//!
//! [`Counting`] wraps the global allocator (the binary installs it around jemalloc). Each
//! allocation adds its size class (`strata_engine::memory::size_class`, jemalloc's rounding,
//! so the sum is what jemalloc hands out) to a per-thread counter, which joins the global
//! one once it has moved by [`FOLD`] bytes either way: an allocation costs a thread-local
//! add and compare, and the shared counter's cache line moves only every few KiB of net
//! allocation, not on allocate/free pairs. [`used`] is therefore within `FOLD` bytes per
//! thread of the exact sum (threads: the workers plus a handful of service threads). A
//! thread that exits leaves its unfolded part (under `FOLD` bytes) out of the count for
//! good: the server's threads live as long as it does, and the ones that come and go (a
//! snapshot's) allocate and free their buffers themselves, so that part is near zero.
//!
//! Why not jemalloc's own statistics: `stats.allocated` is only as fresh as the last
//! `epoch` refresh, which merges every arena's statistics under their locks (tens of
//! microseconds: far too slow per command); jemalloc's per-thread `thread.allocated`
//! counters are cheap but per thread, and memory freed by another thread than the one that
//! allocated it (values freed on the lazy-free thread, buffers handed between threads)
//! makes them meaningless unless all threads' are summed. Measured cost of the counting
//! on the request path: docs/memory.md.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use strata_engine::memory::size_class;

/// A thread's net allocation joins the global counter once it reaches this many bytes
/// either way.
pub const FOLD: i64 = 8 << 10;

/// Net bytes allocated, as folded in by the threads.
static FOLDED: AtomicI64 = AtomicI64::new(0);
/// Some allocation went through [`Counting`] (otherwise [`used`] asks jemalloc).
static COUNTING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's net allocation not yet folded into FOLDED: the only state an
    /// allocation touches.
    static UNFOLDED: Cell<i64> = const { Cell::new(0) };
    /// What this thread has folded so far (with UNFOLDED: all it allocated, net).
    static FOLDED_HERE: Cell<i64> = const { Cell::new(0) };
}

#[inline(always)]
fn count(delta: i64) {
    // `try_with`: a thread's last frees may come after its thread-locals are gone.
    let _ = UNFOLDED.try_with(|c| {
        let u = c.get() + delta;
        // Outside -FOLD..=FOLD, in one comparison.
        if (u + FOLD) as u64 > 2 * FOLD as u64 {
            fold(u);
            c.set(0);
        } else {
            c.set(u);
        }
    });
}

#[cold]
#[inline(never)]
fn fold(unfolded: i64) {
    FOLDED.fetch_add(unfolded, Relaxed);
    let _ = FOLDED_HERE.try_with(|f| f.set(f.get() + unfolded));
    if !COUNTING.load(Relaxed) {
        COUNTING.store(true, Relaxed);
    }
}

/// The bytes jemalloc hands out for `layout`.
#[inline]
fn class(layout: Layout) -> i64 {
    size_class(layout.size().max(layout.align())) as i64
}

/// A global allocator that counts what `A` allocates (see the module doc).
pub struct Counting<A>(pub A);

// SAFETY: every method forwards to `A` unchanged; counting only reads the layouts.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            count(class(layout));
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            count(class(layout));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.0.dealloc(ptr, layout) };
        count(-class(layout));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let grown = size_class(new_size.max(layout.align())) as i64 - class(layout);
            if grown != 0 {
                count(grown);
            }
        }
        p
    }
}

/// Bytes allocated now (Redis's used_memory): the global counter, with this thread's own
/// part exact. Without [`Counting`] installed, jemalloc's statistics (slow).
#[inline]
pub fn used() -> u64 {
    if !COUNTING.load(Relaxed) {
        return allocator().allocated;
    }
    let mine = UNFOLDED.try_with(Cell::get).unwrap_or(0);
    (FOLDED.load(Relaxed) + mine).max(0) as u64
}

/// Everything this thread has allocated, net, exactly: the difference across an operation
/// is what the operation allocated (negative: freed) on this thread.
#[inline]
pub fn thread_net() -> i64 {
    UNFOLDED.try_with(Cell::get).unwrap_or(0) + FOLDED_HERE.try_with(Cell::get).unwrap_or(0)
}

/// jemalloc's own statistics (INFO's allocator_* fields).
pub struct Allocator {
    pub allocated: u64,
    pub active: u64,
    pub resident: u64,
}

/// Refreshes and reads jemalloc's statistics (tens of microseconds: INFO, MEMORY).
pub fn allocator() -> Allocator {
    use tikv_jemalloc_ctl::{epoch, stats};
    let _ = epoch::advance();
    Allocator {
        allocated: stats::allocated::read().unwrap_or(0) as u64,
        active: stats::active::read().unwrap_or(0) as u64,
        resident: stats::resident::read().unwrap_or(0) as u64,
    }
}

/// Resident set size from /proc (Redis's used_memory_rss).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map(|pages| pages * page_size())
        .unwrap_or(0)
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system parameter.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).unwrap_or(4096)
}

/// The machine's memory (INFO total_system_memory).
pub fn system_memory() -> u64 {
    // SAFETY: as `page_size`.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    u64::try_from(pages).unwrap_or(0) * page_size()
}

/// The figures INFO and MEMORY STATS report beside `used`.
#[derive(Default)]
pub struct Memory {
    /// The highest `used` seen (by the background cycle and INFO).
    pub peak: AtomicU64,
    /// `used` once the server had started (Redis's used_memory_startup).
    pub startup: AtomicU64,
}

impl Memory {
    /// `used` now, raising the peak if it is higher.
    pub fn sample(&self) -> u64 {
        let used = used();
        self.peak.fetch_max(used, Relaxed);
        used
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Relaxed)
    }
}

/// Purges jemalloc's dirty pages in every arena (MEMORY PURGE).
pub fn purge() -> bool {
    // "arena.<MALLCTL_ARENAS_ALL>.purge": 4096 stands for every arena. It reads and writes
    // nothing, and refuses to be given anything to read or write.
    let name = b"arena.4096.purge\0";
    // SAFETY: a NUL-terminated name, and null pointers with zero length, as this control
    // requires.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    rc == 0
}

/// jemalloc's statistics report (MEMORY MALLOC-STATS).
pub fn malloc_stats() -> String {
    let mut out = Vec::new();
    let _ = tikv_jemalloc_ctl::stats_print::stats_print(&mut out, Default::default());
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocations counted on one thread show in `thread_net` exactly, both ways, and in
    /// the global count once folded.
    #[test]
    fn counting_follows_allocations() {
        let c = Counting(std::alloc::System);
        let layout = Layout::from_size_align(1000, 8).expect("layout");
        let before = thread_net();
        let folded = FOLDED.load(Relaxed);
        let mut blocks = Vec::new();
        for _ in 0..20 {
            // SAFETY: a non-zero layout; each block is freed below with the same layout.
            let p = unsafe { c.alloc(layout) };
            assert!(!p.is_null());
            blocks.push(p);
        }
        assert_eq!(thread_net() - before, 20 * 1024);
        assert!(FOLDED.load(Relaxed) - folded >= 20 * 1024 - FOLD);
        for p in blocks {
            // SAFETY: allocated above with `layout`.
            unsafe { c.dealloc(p, layout) };
        }
        assert_eq!(thread_net(), before);
    }
}
