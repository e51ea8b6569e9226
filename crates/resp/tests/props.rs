//! Property tests: no panics on garbage, exact round trips, truncation never errors.

use bytes::BytesMut;
use proptest::prelude::*;
use strata_resp::{Parser, ProtocolError};

const KNOWN: &[&str] = &[
    "Protocol error: too big mbulk count string",
    "Protocol error: invalid multibulk length",
    "Protocol error: too big bulk count string",
    "Protocol error: invalid bulk length",
    "Protocol error: too big inline request",
    "Protocol error: unbalanced quotes in request",
];

fn known(e: &ProtocolError) -> bool {
    KNOWN.contains(&e.0.as_str())
        || (e.0.starts_with("Protocol error: expected '$', got '")
            && e.0.ends_with('\'')
            && e.0.chars().count() == "Protocol error: expected '$', got 'X'".len())
}

fn encode(argvs: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    for argv in argvs {
        out.extend(format!("*{}\r\n", argv.len()).bytes());
        for a in argv {
            out.extend(format!("${}\r\n", a.len()).bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
    }
    out
}

fn argvs() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
    let arg = prop::collection::vec(any::<u8>(), 0..40);
    prop::collection::vec(prop::collection::vec(arg, 1..6), 1..8)
}

/// Bytes that look a bit like RESP, so the parser gets past the first line.
fn soup() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..8),
        Just(b"\r\n".to_vec()),
        Just(b"*".to_vec()),
        Just(b"$".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"'".to_vec()),
        Just(b"\\x".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\x00".to_vec()),
        (-3i64..12).prop_map(|n| n.to_string().into_bytes()),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

/// Runs `input` fed in chunks of the given sizes (cycled); returns commands, error, and
/// whether the parser left the buffer in a sane state.
fn feed(input: &[u8], chunks: &[usize]) -> (Vec<Vec<Vec<u8>>>, Option<ProtocolError>) {
    let mut p = Parser::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < input.len() {
        let n = chunks[i % chunks.len()].max(1).min(input.len() - at);
        i += 1;
        buf.extend_from_slice(&input[at..at + n]);
        at += n;
        loop {
            match p.parse(&mut buf) {
                Ok(Some(argv)) => out.push(argv.iter().map(|a| a.to_vec()).collect()),
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
            assert!(buf.len() <= input.len());
        }
    }
    (out, None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn soup_never_panics(data in soup(), chunks in prop::collection::vec(1usize..20, 1..4)) {
        let (_, err) = feed(&data, &chunks);
        if let Some(e) = err {
            prop_assert!(known(&e), "unknown error {:?}", e);
        }
    }

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..300)) {
        let (_, err) = feed(&data, &[data.len().max(1)]);
        if let Some(e) = err {
            prop_assert!(known(&e), "unknown error {:?}", e);
        }
    }

    #[test]
    fn chunking_does_not_change_the_result(data in soup(), chunks in prop::collection::vec(1usize..20, 1..4)) {
        // Errors that depend on how much is pending ("too big") cannot occur this small.
        prop_assert_eq!(feed(&data, &chunks), feed(&data, &[data.len().max(1)]));
    }

    #[test]
    fn round_trip(cmds in argvs(), chunks in prop::collection::vec(1usize..64, 1..5)) {
        let input = encode(&cmds);
        let (got, err) = feed(&input, &chunks);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got, cmds);
    }

    #[test]
    fn truncation_waits(cmds in argvs(), cut in any::<prop::sample::Index>()) {
        let input = encode(&cmds[..1]);
        let cut = cut.index(input.len()); // strictly shorter than the frame
        let mut buf = BytesMut::from(&input[..cut]);
        prop_assert_eq!(Parser::default().parse(&mut buf), Ok(None));
        prop_assert_eq!(buf.len(), cut);
    }
}
