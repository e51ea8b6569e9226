//! Expected bytes were captured from redis-server 7.0.15 (`DEBUG PROTOCOL <type>`,
//! ZSCORE, SMEMBERS) under RESP2 and after `HELLO 3`.

use super::{Protocol, Reply};

fn both(f: impl Fn(&mut Reply)) -> (Vec<u8>, Vec<u8>) {
    let mut a = Vec::new();
    f(&mut Reply::new(&mut a, Protocol::Resp2));
    let mut b = Vec::new();
    f(&mut Reply::new(&mut b, Protocol::Resp3));
    (a, b)
}

fn check(f: impl Fn(&mut Reply), resp2: &[u8], resp3: &[u8]) {
    let (a, b) = both(f);
    assert_eq!(a, resp2, "RESP2: {:?}", String::from_utf8_lossy(&a));
    assert_eq!(b, resp3, "RESP3: {:?}", String::from_utf8_lossy(&b));
}

#[test]
fn scalars() {
    check(|r| r.ok(), b"+OK\r\n", b"+OK\r\n");
    check(|r| r.simple("PONG"), b"+PONG\r\n", b"+PONG\r\n");
    check(|r| r.int(12345), b":12345\r\n", b":12345\r\n");
    check(
        |r| r.int(i64::MIN),
        b":-9223372036854775808\r\n",
        b":-9223372036854775808\r\n",
    );
    check(
        |r| r.bulk(b"Hello World"),
        b"$11\r\nHello World\r\n",
        b"$11\r\nHello World\r\n",
    );
    check(|r| r.bulk(b""), b"$0\r\n\r\n", b"$0\r\n\r\n");
    check(|r| r.null(), b"$-1\r\n", b"_\r\n");
    check(|r| r.null_array(), b"*-1\r\n", b"_\r\n");
    check(|r| r.boolean(true), b":1\r\n", b"#t\r\n");
    check(|r| r.boolean(false), b":0\r\n", b"#f\r\n");
    check(|r| r.bulk_int(-42), b"$3\r\n-42\r\n", b"$3\r\n-42\r\n");
    check(|r| r.bulk_int(0), b"$1\r\n0\r\n", b"$1\r\n0\r\n");
    check(|r| r.raw(b"+X\r\n"), b"+X\r\n", b"+X\r\n");
}

#[test]
fn bignum_and_attribute() {
    let n = "1234567999999999999999999999999999999";
    check(
        |r| r.bignum(n),
        format!("$37\r\n{n}\r\n").as_bytes(),
        format!("({n}\r\n").as_bytes(),
    );
    let mut b = Vec::new();
    Reply::new(&mut b, Protocol::Resp3).attribute(1);
    assert_eq!(b, b"|1\r\n");
}

#[test]
fn aggregates() {
    check(|r| r.array(3), b"*3\r\n", b"*3\r\n");
    check(|r| r.array(0), b"*0\r\n", b"*0\r\n");
    check(|r| r.set(3), b"*3\r\n", b"~3\r\n");
    check(|r| r.map(3), b"*6\r\n", b"%3\r\n");
    check(|r| r.push(2), b"*2\r\n", b">2\r\n");
    // DEBUG PROTOCOL map, both protocols.
    check(
        |r| {
            r.map(3);
            for i in 0..3 {
                r.int(i);
                r.boolean(i == 1);
            }
        },
        b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
        b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n",
    );
}

#[test]
fn errors() {
    check(
        |r| r.error("ERR syntax error"),
        b"-ERR syntax error\r\n",
        b"-ERR syntax error\r\n",
    );
    check(
        |r| r.error("ERR a\r\nb\n"),
        b"-ERR a  b\r\n",
        b"-ERR a  b\r\n",
    );
    check(
        |r| r.error("-WRONGTYPE x"),
        b"-WRONGTYPE x\r\n",
        b"-WRONGTYPE x\r\n",
    );
}

#[test]
#[allow(clippy::approx_constant)] // 3.141 is what DEBUG PROTOCOL double sends
fn doubles() {
    check(|r| r.double(3.141), b"$5\r\n3.141\r\n", b",3.141\r\n");
    check(
        |r| r.double(1.1),
        b"$18\r\n1.1000000000000001\r\n",
        b",1.1000000000000001\r\n",
    );
    check(|r| r.double(1e20), b"$5\r\n1e+20\r\n", b",1e+20\r\n");
    check(|r| r.double(0.0), b"$1\r\n0\r\n", b",0\r\n");
    check(|r| r.double(1.5e-5), b"$7\r\n1.5e-05\r\n", b",1.5e-05\r\n");
    check(|r| r.double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
    check(
        |r| r.double(f64::NEG_INFINITY),
        b"$4\r\n-inf\r\n",
        b",-inf\r\n",
    );
    check(|r| r.double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n");
}

#[test]
fn verbatim() {
    check(
        |r| r.verbatim("txt", b"This is a verbatim\nstring"),
        b"$25\r\nThis is a verbatim\nstring\r\n",
        b"=29\r\ntxt:This is a verbatim\nstring\r\n",
    );
    check(
        |r| r.verbatim("m", b"x"),
        b"$1\r\nx\r\n",
        b"=5\r\nm  :x\r\n",
    );
    check(
        |r| r.verbatim("mkdn", b"x"),
        b"$1\r\nx\r\n",
        b"=5\r\nmkd:x\r\n",
    );
}
