//! Framing under arbitrary read boundaries, pipelining, and hostile declared sizes.

use bytes::{Bytes, BytesMut};
use strata_resp::{Limits, Parser, ProtocolError};

fn encode(argv: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", argv.len()).into_bytes();
    for a in argv {
        out.extend(format!("${}\r\n", a.len()).bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn parse_all(p: &mut Parser, buf: &mut BytesMut) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
    let mut out = Vec::new();
    while let Some(argv) = p.parse(buf)? {
        out.push(argv);
    }
    Ok(out)
}

/// Feeds `input` one byte at a time, parsing after every byte.
fn byte_by_byte(input: &[u8]) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
    let mut p = Parser::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for &b in input {
        buf.extend_from_slice(&[b]);
        out.extend(parse_all(&mut p, &mut buf)?);
    }
    Ok(out)
}

#[test]
fn every_split_point_gives_the_same_argv() {
    let mut input = encode(&[b"SET", b"key", b"va\r\nlue", b""]);
    input.extend(b"GET \"a b\" 'c\\'d' plain\r\n");
    input.extend(b"*0\r\n\r\n");
    input.extend(encode(&[b"PING"]));
    let whole = parse_all(&mut Parser::default(), &mut BytesMut::from(&input[..])).unwrap();
    assert_eq!(whole.len(), 3);
    assert_eq!(whole[1], vec![&b"GET"[..], b"a b", b"c'd", b"plain"]);
    assert_eq!(byte_by_byte(&input).unwrap(), whole);
    // Every two-piece split too, with a fresh parser each time.
    for cut in 0..=input.len() {
        let mut p = Parser::default();
        let mut buf = BytesMut::from(&input[..cut]);
        let mut got = parse_all(&mut p, &mut buf).unwrap();
        buf.extend_from_slice(&input[cut..]);
        got.extend(parse_all(&mut p, &mut buf).unwrap());
        assert_eq!(got, whole, "cut at {cut}");
        assert!(buf.is_empty());
    }
}

#[test]
fn errors_survive_byte_by_byte_feeding() {
    assert_eq!(
        byte_by_byte(b"*1\r\n$4\r\nPING\r\n*1\r\nX\r\n")
            .unwrap_err()
            .0,
        "Protocol error: expected '$', got 'X'"
    );
    assert_eq!(
        byte_by_byte(b"SET a \"b\r\n").unwrap_err().0,
        "Protocol error: unbalanced quotes in request"
    );
}

#[test]
fn pipeline_of_ten_thousand() {
    let mut input = Vec::new();
    for i in 0..10_000 {
        let key = format!("key:{i}");
        if i % 3 == 0 {
            input.extend(format!("SET {key} {i}\r\n").bytes());
        } else {
            input.extend(encode(&[b"SET", key.as_bytes(), i.to_string().as_bytes()]));
        }
    }
    let mut buf = BytesMut::from(&input[..]);
    let cmds = parse_all(&mut Parser::default(), &mut buf).unwrap();
    assert_eq!(cmds.len(), 10_000);
    for (i, argv) in cmds.iter().enumerate() {
        assert_eq!(argv.len(), 3);
        assert_eq!(argv[1], format!("key:{i}").as_bytes());
        assert_eq!(argv[2], i.to_string().as_bytes());
    }
    assert!(buf.is_empty());
}

#[test]
fn huge_declared_sizes_cost_nothing() {
    // Accepted headers that then wait: the buffer holds only what was sent.
    for input in [
        &b"*1\r\n$536870912\r\n0123456789"[..],
        b"*2147483647\r\n$3\r\nGET\r\n",
        b"*2147483647\r\n",
    ] {
        let mut p = Parser::default();
        let mut buf = BytesMut::with_capacity(64);
        buf.extend_from_slice(input);
        assert_eq!(p.parse(&mut buf), Ok(None));
        assert!(buf.capacity() <= 64, "{input:?}");
        assert_eq!(buf.len(), input.len());
    }
    // Refused outright.
    for (input, msg) in [
        (
            &b"*1\r\n$9999999999999\r\n"[..],
            "Protocol error: invalid bulk length",
        ),
        (
            b"*1\r\n$536870913\r\n",
            "Protocol error: invalid bulk length",
        ),
        (
            b"*2147483648\r\n",
            "Protocol error: invalid multibulk length",
        ),
    ] {
        assert_eq!(
            Parser::default()
                .parse(&mut BytesMut::from(input))
                .unwrap_err()
                .0,
            msg
        );
    }
    // A huge count followed by many tiny args: argv grows with what arrives.
    let mut p = Parser::default();
    let mut buf = BytesMut::from(&b"*2147483647\r\n"[..]);
    for _ in 0..5000 {
        buf.extend_from_slice(b"$1\r\nx\r\n");
        assert_eq!(p.parse(&mut buf), Ok(None));
    }
    // Raising the bulk limit does not make the parser reserve it either.
    let mut p = Parser::new(Limits {
        max_bulk_len: usize::MAX,
        ..Limits::default()
    });
    let mut buf = BytesMut::from(&b"*1\r\n$9223372036854775807\r\nab"[..]);
    assert_eq!(p.parse(&mut buf), Ok(None));
    assert_eq!(p.frame_hint(), Some(26 + 9223372036854775807 + 2));
}
