//! Writes handed to the kernel in pieces of at most `MAX_WRITE` bytes.
//!
//! On a kernel without preemption (PREEMPT_NONE, "Dynamic Preempt: none", as on this
//! project's machines) a thread inside `write` keeps its CPU until the copy into the page
//! cache reaches a reschedule point. The snapshot thread runs under SCHED_IDLE so that a
//! worker takes its core at once; inside a 1 MiB write it did not: GET's p99 while
//! snapshots ran was 2.2–3.8 ms instead of about 0.5, and 0.5–0.7 ms once the writes were
//! 64 KiB (docs/benchmarks.md, "Snapshot writes in 64 KiB pieces"). The journal's writes
//! take the same cap. A syscall per 64 KiB costs nothing measurable.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

pub(crate) const MAX_WRITE: usize = 64 << 10;

/// A `Write` that passes at most `MAX_WRITE` bytes to each `write` of the one it wraps
/// (`write_all` loops over the pieces).
pub(crate) struct Capped<W>(pub W);

impl<W: Write> Write for Capped<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(&buf[..buf.len().min(MAX_WRITE)])
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// `FileExt::write_all_at` in pieces of at most `MAX_WRITE` bytes.
pub(crate) fn write_all_at(f: &File, buf: &[u8], mut at: u64) -> io::Result<()> {
    for piece in buf.chunks(MAX_WRITE) {
        f.write_all_at(piece, at)?;
        at += piece.len() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufWriter, Read};

    /// Records the size of every write it is given.
    #[derive(Default)]
    struct Sizes(Vec<usize>, Vec<u8>);

    impl Write for Sizes {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.push(buf.len());
            self.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Through a BufWriter as the snapshot writer uses it: small and large writes arrive
    /// whole and in order, none larger than MAX_WRITE.
    #[test]
    fn capped_writer_passes_pieces_in_order() {
        let big = data(5 * MAX_WRITE + 123);
        let mut w = BufWriter::with_capacity(MAX_WRITE, Capped(Sizes::default()));
        w.write_all(b"head").unwrap();
        w.write_all(&big).unwrap();
        w.write_all(b"tail").unwrap();
        let Capped(Sizes(sizes, got)) = w.into_inner().map_err(|e| e.to_string()).unwrap();
        assert!(sizes.iter().all(|&n| n <= MAX_WRITE), "{sizes:?}");
        assert!(sizes.len() >= 6, "{sizes:?}");
        let want: Vec<u8> = [b"head".as_slice(), &big, b"tail"].concat();
        assert_eq!(got, want);
    }

    /// Every piece lands at its offset.
    #[test]
    fn write_all_at_places_every_piece() {
        let dir = std::env::temp_dir().join(format!("strata-capped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let f = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let big = data(3 * MAX_WRITE + 77);
        write_all_at(&f, &big, 10).unwrap();
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 10 + big.len());
        assert_eq!(&got[..10], &[0u8; 10]);
        assert_eq!(&got[10..], &big[..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
