//! Expected outcomes were observed on redis-server 7.0.15 by sending the same bytes
//! (whole, in one write) and reading the reply: "waits" means no reply, connection open.

use super::*;

type Out = Result<Vec<Vec<Vec<u8>>>, String>;

/// Parses everything in `input`; returns the commands, or the error text.
fn run(input: &[u8]) -> (Out, usize) {
    let mut p = Parser::default();
    let mut buf = BytesMut::from(input);
    let mut cmds = Vec::new();
    loop {
        match p.parse(&mut buf) {
            Ok(Some(argv)) => cmds.push(argv.iter().map(|a| a.to_vec()).collect()),
            Ok(None) => return (Ok(cmds), buf.len()),
            Err(e) => return (Err(e.0), buf.len()),
        }
    }
}

fn cmds(input: &[u8]) -> Vec<Vec<Vec<u8>>> {
    run(input).0.unwrap()
}

fn error(input: &[u8]) -> String {
    run(input).0.unwrap_err()
}

fn v(args: &[&[u8]]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.to_vec()).collect()
}

#[test]
fn multibulk_basics() {
    assert_eq!(cmds(b"*1\r\n$4\r\nPING\r\n"), vec![v(&[b"PING"])]);
    assert_eq!(
        cmds(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"),
        vec![v(&[b"SET", b"k", b""])]
    );
    // Empty and negative counts are skipped.
    assert_eq!(cmds(b"*-5\r\nPING\r\n"), vec![v(&[b"PING"])]);
    assert_eq!(cmds(b"*0\r\nPING\r\n"), vec![v(&[b"PING"])]);
    assert_eq!(cmds(b"*-1\r\n*0\r\n"), Vec::<Vec<Vec<u8>>>::new());
    assert_eq!(run(b"*-1\r\n*0\r\n").1, 0);
}

#[test]
fn multibulk_count_errors() {
    for input in [
        &b"*x\r\n"[..],
        b"*\r\n",
        b"*-0\r\n",
        b"*00\r\n",
        b"*+1\r\n",
        b"*2147483648\r\n",
        b"*9223372036854775807\r\n",
        b"*9223372036854775808\r\n",
        b"*1\n$4\r\nPING\r\n", // '\n' alone does not end the line
    ] {
        assert_eq!(
            error(input),
            "Protocol error: invalid multibulk length",
            "{input:?}"
        );
    }
    assert_eq!(cmds(b"*2147483647\r\n"), Vec::<Vec<Vec<u8>>>::new()); // waits
}

#[test]
fn bulk_errors() {
    assert_eq!(
        error(b"*1\r\nX\r\n"),
        "Protocol error: expected '$', got 'X'"
    );
    assert_eq!(
        error(b"*1\r\n\r\n"),
        "Protocol error: expected '$', got ' '"
    );
    assert_eq!(
        error(b"*1\r\n\n\r\n"),
        "Protocol error: expected '$', got ' '"
    );
    // Redis sends the raw byte 0xff; a String carries it as U+00FF.
    assert_eq!(
        error(b"*1\r\n\xff\r\n"),
        "Protocol error: expected '$', got '\u{ff}'"
    );
    let e = Parser::default()
        .parse(&mut BytesMut::from(&b"*1\r\n\xff\r\n"[..]))
        .unwrap_err();
    assert_eq!(
        e.reply_bytes(),
        b"-ERR Protocol error: expected '$', got '\xff'\r\n"
    );
    assert_eq!(
        error(b"*2\r\n$4\r\nECHO\r\n:1\r\n"),
        "Protocol error: expected '$', got ':'"
    );
    for input in [
        &b"*1\r\n$-1\r\n"[..],
        b"*1\r\n$-0\r\n",
        b"*1\r\n$536870913\r\n",
        b"*1\r\n$01\r\n",
        b"*1\r\n$ 1\r\n",
        b"*1\r\n$\r\n",
        b"*1\r\n$9999999999999999999999\r\n",
    ] {
        assert_eq!(
            error(input),
            "Protocol error: invalid bulk length",
            "{input:?}"
        );
    }
    assert_eq!(cmds(b"*1\r\n$536870912\r\n"), Vec::<Vec<Vec<u8>>>::new()); // waits
}

#[test]
fn unchecked_terminators() {
    // Redis skips the byte after '\r' and the two bytes after bulk data unchecked.
    assert_eq!(cmds(b"*1\r\n$4\r\nPINGxx"), vec![v(&[b"PING"])]);
    assert_eq!(
        cmds(b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n"),
        vec![v(&[b"PING"]), v(&[b"PING"])]
    );
    assert_eq!(cmds(b"*1\rX$4\r\nPING\r\n"), vec![v(&[b"PING"])]);
    // '\r' as the last byte: wait for the byte after it.
    assert_eq!(run(b"*1\r").0, Ok(vec![]));
    assert_eq!(run(b"*1\r\n$4\r").0, Ok(vec![]));
}

#[test]
fn nul_hides_the_terminator() {
    // strchr stops at NUL: all of these wait on Redis.
    for input in [
        &b"*1\x00\r\n$4\r\nPING\r\n"[..],
        b"*1\r\n$\x00\r\n",
        b"*1\r\n$4\x00\r\n",
        b"PING\x00\r\n",
    ] {
        assert_eq!(run(input).0, Ok(vec![]), "{input:?}");
    }
    // NUL inside bulk data is fine.
    assert_eq!(cmds(b"*1\r\n$4\r\nP\x00NG\r\n"), vec![v(&[b"P\x00NG"])]);
    // ...and once the pending bytes pass the inline limit, the "too big" errors fire.
    let mut big = b"*1\r\n$\x00".to_vec();
    big.extend(b"\r\n".repeat(40000));
    assert_eq!(error(&big), "Protocol error: too big bulk count string");
    let mut big = b"PING\x00".to_vec();
    big.extend(b"\r\n".repeat(40000));
    assert_eq!(error(&big), "Protocol error: too big inline request");
    let mut big = b"*1\x00".to_vec();
    big.extend(b"\r\n".repeat(40000));
    assert_eq!(error(&big), "Protocol error: too big mbulk count string");
    // After a command whose data is NULs, the NULs start an inline request.
    let mut big = b"*1\r\n$1\r\n".to_vec();
    big.extend(vec![0u8; 70000]);
    let (out, _) = run(&big);
    assert_eq!(out, Err("Protocol error: too big inline request".into()));
}

#[test]
fn too_big_boundaries() {
    let line = |prefix: &[u8], n: usize| {
        let mut b = prefix.to_vec();
        b.resize(prefix.len() + n, b'1');
        b
    };
    // Pending bytes > 65536 without a terminator is the error; exactly 65536 waits.
    assert_eq!(run(&line(b"*1", 65534)).0, Ok(vec![]));
    assert_eq!(
        error(&line(b"*1", 65535)),
        "Protocol error: too big mbulk count string"
    );
    assert_eq!(run(&line(b"A", 65535)).0, Ok(vec![]));
    assert_eq!(
        error(&line(b"A", 65536)),
        "Protocol error: too big inline request"
    );
    assert_eq!(run(&line(b"*1\r\n$", 65535)).0, Ok(vec![]));
    assert_eq!(
        error(&line(b"*1\r\n$", 65536)),
        "Protocol error: too big bulk count string"
    );
    // A '\r' with nothing after it waits, whatever the size.
    let mut b = line(b"*1", 70000);
    b.push(b'\r');
    assert_eq!(run(&b).0, Ok(vec![]));
    b.push(b'\n');
    assert_eq!(error(&b), "Protocol error: invalid multibulk length");
    // A long inline line that is complete is accepted.
    let mut b = b"ECHO ".to_vec();
    b.extend(vec![b'a'; 70000]);
    b.extend(b"\r\n");
    assert_eq!(cmds(&b)[0][1].len(), 70000);
}

#[test]
fn inline_basics() {
    assert_eq!(cmds(b"PING\r\n"), vec![v(&[b"PING"])]);
    assert_eq!(cmds(b"PING\n"), vec![v(&[b"PING"])]);
    assert_eq!(cmds(b"\r\nPING\n"), vec![v(&[b"PING"])]);
    assert_eq!(cmds(b"   \r\nPING\n"), vec![v(&[b"PING"])]);
    assert_eq!(cmds(b"\x0b\r\n*1\r\n$4\r\nPING\r\n"), vec![v(&[b"PING"])]);
    assert_eq!(
        cmds(b"*1\r\n$4\r\nPING\r\n\r\n\r\nPING\r\n"),
        vec![v(&[b"PING"]), v(&[b"PING"])]
    );
    // A middle '\r' separates arguments; only a trailing one is stripped.
    assert_eq!(cmds(b"PING\rPING\r\n"), vec![v(&[b"PING", b"PING"])]);
    assert_eq!(cmds(b"x\r\r\n"), vec![v(&[b"x"])]);
    assert_eq!(cmds(b"\"\" \r\n"), vec![v(&[b""])]);
    assert_eq!(cmds(b"ECHO \x80\xff\r\n"), vec![v(&[b"ECHO", b"\x80\xff"])]);
    assert_eq!(run(b"PING").0, Ok(vec![]));
}

/// Arguments as Redis splits them (seen through `EVAL "return ARGV" 0 <args>`).
#[test]
fn inline_quoting() {
    let ok: &[(&[u8], &[&[u8]])] = &[
        (b"\"a\\x41\\n\\z\" x", &[b"aA\nz", b"x"]),
        (b"'a\\'b\\n'", &[b"a'b\\n"]),
        (
            b"\"a\\\"b\" \"\\\\\" \"\\t\\r\\b\\a\"",
            &[b"a\"b", b"\\", b"\t\r\x08\x07"],
        ),
        (b"\"\\x4\"", &[b"x4"]),
        (b"\"\\xg1\"", &[b"xg1"]),
        (b"\"\\xFf\\x0a\"", &[b"\xff\n"]),
        (b"a'b c'", &[b"ab c"]),
        (b"a\"b c\"", &[b"ab c"]),
        (b"\"a\"\x0c\"b\"", &[b"a", b"b"]),
        (b"\"a\" \"b\"", &[b"a", b"b"]),
        (b"a\x0cb", &[b"a\x0cb"]),
        (b"x\x0c\x0c y", &[b"x\x0c\x0c", b"y"]),
        (b"a\x0bb", &[b"a\x0bb"]),
        (b"x\ry", &[b"x", b"y"]),
        (b"\"x\ry\"", &[b"x\ry"]),
        (b"\"a\"\r", &[b"a"]),
        (b"\"\"", &[b""]),
        (b"''", &[b""]),
        (b"\t\t\"x\"\t", &[b"x"]),
    ];
    for (line, want) in ok {
        let mut input = b"EVAL \"return ARGV\" 0 ".to_vec();
        input.extend_from_slice(line);
        input.extend_from_slice(b"\r\n");
        let mut expect = v(&[b"EVAL", b"return ARGV", b"0"]);
        expect.extend(v(want));
        assert_eq!(
            cmds(&input),
            vec![expect],
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
    for line in [
        &b"'a''b'"[..],
        b"\"abc\"d",
        b"\"abc",
        b"'abc",
        b"a\"b c\"d",
        b"\"abc\\\"",
        b"\"abc\\",
        b"'abc\\'",
        b"'abc\\\\'",
        b"\"a",
        b"a\"b\"c\"",
    ] {
        let mut input = b"EVAL \"return ARGV\" 0 ".to_vec();
        input.extend_from_slice(line);
        input.extend_from_slice(b"\r\n");
        assert_eq!(
            error(&input),
            "Protocol error: unbalanced quotes in request",
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn zero_copy_args() {
    let mut p = Parser::default();
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\nGET plain\r\n"[..]);
    let base = buf.as_ptr() as usize;
    let argv = p.parse(&mut buf).unwrap().unwrap();
    assert_eq!(argv[0].as_ptr() as usize, base + 8);
    assert_eq!(argv[1].as_ptr() as usize, base + 17);
    let argv = p.parse(&mut buf).unwrap().unwrap();
    assert_eq!(argv[1].as_ptr() as usize, base + 26);
    assert!(buf.is_empty());
}

#[test]
fn frame_hint_and_resume() {
    let mut p = Parser::default();
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nSET\r\n$10\r\nabc"[..]);
    assert_eq!(p.parse(&mut buf), Ok(None));
    assert_eq!(p.frame_hint(), Some(30));
    assert_eq!(buf.len(), 21);
    buf.extend_from_slice(b"defghij\r\n");
    let argv = p.parse(&mut buf).unwrap().unwrap();
    assert_eq!(argv, vec![&b"SET"[..], &b"abcdefghij"[..]]);
    assert_eq!(p.frame_hint(), None);
}

#[test]
fn a_big_argument_being_read_leaves_its_head_out_of_the_query_buffer() {
    let mut p = Parser::default();
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nSET\r\n$10\r\nabc"[..]);
    assert_eq!(p.parse(&mut buf), Ok(None));
    assert_eq!(
        p.big_arg_offset(),
        0,
        "a small bulk counts whole, as in Redis"
    );
    let head = b"*1\r\n$40000\r\n";
    let mut buf = BytesMut::from(&head[..]);
    buf.extend_from_slice(&[b'v'; 100]);
    let mut p = Parser::default();
    assert_eq!(p.parse(&mut buf), Ok(None));
    assert_eq!(p.big_arg_offset(), head.len());
    assert_eq!(buf.len() - p.big_arg_offset(), 100);
}

#[test]
fn contract_breach_does_not_panic() {
    let mut p = Parser::default();
    let mut buf = BytesMut::from(&b"*2\r\n$3\r\nSET\r\n$10\r\nabc"[..]);
    assert_eq!(p.parse(&mut buf), Ok(None));
    buf.clear();
    buf.extend_from_slice(b"PING\r\n");
    assert_eq!(p.parse(&mut buf).unwrap().unwrap(), vec![&b"PING"[..]]);
}

#[test]
fn smaller_limits() {
    let mut p = Parser::new(Limits {
        max_bulk_len: 3,
        max_multibulk_len: 2,
        max_inline_len: 8,
        unauthenticated: false,
    });
    let mut b = BytesMut::from(&b"*3\r\n"[..]);
    assert_eq!(p.parse(&mut b).unwrap_err().0, INVALID_MBULK);
    let mut b = BytesMut::from(&b"*2\r\n$4\r\n"[..]);
    assert_eq!(p.parse(&mut b).unwrap_err().0, INVALID_BULK);
    let mut b = BytesMut::from(&b"123456789"[..]);
    assert_eq!(p.parse(&mut b).unwrap_err().0, TOO_BIG_INLINE);
}

#[test]
fn unauthenticated_limits() {
    let mut p = Parser::new(Limits {
        unauthenticated: true,
        ..Limits::default()
    });
    let mut b = BytesMut::from(&b"*11\r\n"[..]);
    assert_eq!(p.parse(&mut b).unwrap_err().0, UNAUTH_MBULK);
    let mut p = Parser::new(Limits {
        unauthenticated: true,
        ..Limits::default()
    });
    let mut b = BytesMut::from(&b"*1\r\n$16385\r\n"[..]);
    assert_eq!(p.parse(&mut b).unwrap_err().0, UNAUTH_BULK);
    // At the limits themselves, frames are accepted.
    let mut p = Parser::new(Limits {
        unauthenticated: true,
        ..Limits::default()
    });
    let mut frame = b"*10\r\n".to_vec();
    for _ in 0..9 {
        frame.extend_from_slice(b"$1\r\na\r\n");
    }
    frame.extend_from_slice(format!("$16384\r\n{}\r\n", "x".repeat(16384)).as_bytes());
    let mut b = BytesMut::from(&frame[..]);
    assert_eq!(p.parse(&mut b).unwrap().unwrap().len(), 10);
}

/// The frame a parse keeps is the request as received, and only when every line ended in
/// CRLF; inline requests and lenient multibulks (Redis skips the two bytes after a bulk
/// unread, and checks only the CR of a header line) keep none.
#[test]
fn only_canonical_multibulks_keep_their_frame() {
    let cases: &[(&[u8], bool)] = &[
        (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n", true),
        (b"*1\r\n$4\r\nPING\r\n", true),
        (b"*2\r\n$3\r\nGET\r\n$1\r\nkxx", false),
        (b"*2\r\n$3\r\nGET\r\n$1\rxk\r\n", false),
        (b"*2\rx$3\r\nGET\r\n$1\r\nk\r\n", false),
        (b"SET k v\r\n", false),
    ];
    for &(input, canonical) in cases {
        let mut p = Parser::default();
        let mut buf = BytesMut::from(input);
        let argv = p.parse(&mut buf).unwrap().unwrap();
        assert!(!argv.is_empty());
        match p.take_frame() {
            Some(f) => {
                assert!(canonical, "{input:?}");
                assert_eq!(&f[..], input);
            }
            None => assert!(!canonical, "{input:?}"),
        }
        assert!(p.take_frame().is_none(), "taken once");
    }
}
