//! How a connection's input buffer grows for the next read.
//!
//! Small requests and pipelines read into room of `READ_CHUNK` more. A big argument (32 KB
//! or more, as Redis counts them) is read into a buffer that ends where the argument ends:
//! growing toward it by steps of at most the buffer's size (or `MAX_RESERVE`), the last
//! step landing on it exactly. Redis allocates such an argument whole; growing by doubling
//! left the buffer anywhere between its size and twice it, by where the reads happened to
//! fall, so two clients sending the same request weighed differently for
//! `maxmemory-clients`. Growing by steps keeps a header alone from allocating the hundreds
//! of megabytes it may declare.

use crate::net::conn::READ_CHUNK;
use crate::net::output::MAX_RESERVE;
use bytes::BytesMut;

/// Makes room for the next read into `inbuf`, whose free part is small; `big_end` is
/// where a big argument being read ends, counted from the buffer's start.
pub(crate) fn make_room(inbuf: &mut BytesMut, big_end: Option<usize>) {
    match big_end {
        Some(end) if end > inbuf.capacity() => {
            let len = inbuf.len();
            let step = (end - len).clamp(READ_CHUNK, len.max(MAX_RESERVE));
            let mut grown = BytesMut::with_capacity((len + step).min(end));
            grown.extend_from_slice(inbuf);
            *inbuf = grown;
        }
        // The argument's rest fits: what follows it is read once it is parsed.
        Some(_) => {}
        None => inbuf.reserve(READ_CHUNK),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    /// Reads a frame of a `header`-byte head and an `arg`-byte argument (all but its
    /// final CRLF), `first` bytes in the first read and then as much as the room allows,
    /// making room as a connection does; returns the buffer's capacity at the end.
    fn read_all_but_crlf(header: usize, arg: usize, first: usize) -> usize {
        let end = header + arg + 2;
        let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
        let mut got = first.min(READ_CHUNK);
        inbuf.put_bytes(b'x', got);
        while got < end - 2 {
            if inbuf.capacity() - inbuf.len() < READ_CHUNK / 4 {
                make_room(&mut inbuf, (got >= header).then_some(end));
            }
            // A read into the spare room; with none, BytesMut makes some (chunk_mut).
            let room = inbuf.capacity() - inbuf.len();
            let n = if room == 0 { 64 } else { room }.min(end - 2 - got);
            inbuf.put_bytes(b'x', n);
            got += n;
        }
        inbuf.capacity()
    }

    #[test]
    fn a_big_argument_gets_a_buffer_of_its_size_wherever_the_reads_fall() {
        let header = 14;
        for arg in [32 << 10, 131_072, 1 << 20, 3 << 20] {
            for first in (header..=READ_CHUNK)
                .step_by(509)
                .chain([header, READ_CHUNK])
            {
                let cap = read_all_but_crlf(header, arg, first);
                assert_eq!(cap, header + arg + 2, "argument {arg}, first read {first}");
            }
        }
    }

    #[test]
    fn small_requests_read_into_a_chunk_more() {
        let mut inbuf = BytesMut::with_capacity(READ_CHUNK);
        inbuf.put_bytes(b'x', READ_CHUNK - 100);
        make_room(&mut inbuf, None);
        assert!(inbuf.capacity() - inbuf.len() >= READ_CHUNK);
    }
}
