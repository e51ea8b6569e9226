//! Feeds arbitrary bytes to the RESP parser in chunks, as a socket would deliver them.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use strata_resp::{Limits, Parser};

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    // First byte: chunk size (1..=127), whether to use small limits so the "too big"
    // and length-limit paths are reachable with small inputs, and whether the client is
    // unauthenticated (the tighter limits Redis applies before AUTH).
    let chunk = usize::from(first & 0x3f) * 2 + 1;
    let unauthenticated = first & 0x40 != 0;
    let limits = if first & 0x80 != 0 {
        Limits {
            max_bulk_len: 64,
            max_multibulk_len: 16,
            max_inline_len: 32,
            unauthenticated,
        }
    } else {
        Limits {
            unauthenticated,
            ..Limits::default()
        }
    };
    let mut parser = Parser::new(limits);
    let mut buf = BytesMut::new();
    let mut fed = 0;
    for piece in input.chunks(chunk) {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            // The look ahead reads only what is there.
            if let Some(arg) = strata_resp::peek_first_arg(&buf) {
                assert!(arg.len() < buf.len());
            }
            match parser.parse(&mut buf) {
                Ok(Some(argv)) => {
                    // Arguments are slices of what was fed.
                    assert!(argv.iter().map(|a| a.len()).sum::<usize>() <= fed);
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(e.0.starts_with("Protocol error: "), "{e}");
                    return;
                }
            }
            assert!(buf.len() <= fed);
            if let Some(hint) = parser.frame_hint() {
                assert!(hint > 0);
            }
        }
        // The parser never holds more than was fed.
        assert!(buf.len() <= input.len());
    }
});
