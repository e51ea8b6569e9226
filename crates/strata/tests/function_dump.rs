//! FUNCTION DUMP and FUNCTION RESTORE in Redis's payload format, both ways with real
//! redis-server 7.0, with the same replies for each restore policy and for bad payloads.

mod common;

use common::{redis, strata, RespConn};

const LIB1: &str = "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)\n\
                    redis.register_function('f2', function() return 2 end)";
const LIB2: &str = "#!lua name=lib2\nredis.register_function{function_name='f3', \
                    callback=function() return 3 end, flags={'no-writes'}, description='three'}";
/// Another lib1, whose f2 clashes with lib1's.
const LIB1B: &str = "#!lua name=lib1\nredis.register_function('f9', function() return 9 end)";
const CLASH: &str = "#!lua name=clash\nredis.register_function('f2', function() return 22 end)";

fn call(c: &mut RespConn, args: &[&[u8]]) -> Vec<u8> {
    c.call(args).expect("reply").raw
}

/// A bulk reply's bytes.
fn bulk(raw: &[u8]) -> Vec<u8> {
    let start = raw.iter().position(|&b| b == b'\n').expect("bulk header") + 1;
    raw[start..raw.len() - 2].to_vec()
}

#[test]
fn payloads_cross_and_policies_answer_as_redis() {
    let (s, r) = (strata(&[]), redis(&[]));
    let (mut sc, mut rc) = (RespConn::new(&s), RespConn::new(&r));
    for c in [&mut sc, &mut rc] {
        for lib in [LIB1, LIB2] {
            call(c, &[b"FUNCTION", b"LOAD", lib.as_bytes()]);
        }
    }
    let theirs = bulk(&call(&mut rc, &[b"FUNCTION", b"DUMP"]));
    let ours = bulk(&call(&mut sc, &[b"FUNCTION", b"DUMP"]));
    // Each side restores the other's payload: the same libraries, the same answers.
    let mut bad_crc = ours.clone();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 1;
    call(&mut rc, &[b"SET", b"v", b"x"]);
    let value_payload = bulk(&call(&mut rc, &[b"DUMP", b"v"]));
    let steps: Vec<Vec<&[u8]>> = vec![
        vec![b"FUNCTION", b"RESTORE", b"garbage"],
        vec![b"FUNCTION", b"RESTORE", &bad_crc],
        vec![b"FUNCTION", b"RESTORE", &value_payload],
        vec![b"FUNCTION", b"RESTORE", &ours, b"BADPOLICY"],
        vec![b"FUNCTION", b"RESTORE", &ours, b"FLUSH", b"extra"],
        // Only lib1 is there, so only it clashes (with two, which one Redis names depends
        // on its hash table's order).
        vec![b"FUNCTION", b"DELETE", b"lib2"],
        vec![b"FUNCTION", b"RESTORE", &ours],
        vec![b"FUNCTION", b"RESTORE", &theirs, b"APPEND"],
        vec![b"FUNCTION", b"RESTORE", &ours, b"REPLACE"],
        vec![b"FUNCTION", b"FLUSH"],
        vec![b"FUNCTION", b"RESTORE", &theirs],
        vec![b"FCALL", b"f3", b"0"],
        vec![b"FUNCTION", b"DELETE", b"lib1"],
        vec![b"FUNCTION", b"LOAD", CLASH.as_bytes()],
        vec![b"FUNCTION", b"RESTORE", &ours, b"REPLACE"],
        vec![b"FCALL", b"f2", b"0"],
        vec![b"FUNCTION", b"RESTORE", &ours, b"FLUSH"],
        vec![b"FCALL", b"f2", b"0"],
        // One library per listing: Redis lists them in its hash table's order.
        vec![b"FUNCTION", b"LIST", b"LIBRARYNAME", b"lib1", b"WITHCODE"],
        vec![b"FUNCTION", b"LIST", b"LIBRARYNAME", b"lib2", b"WITHCODE"],
    ];
    for step in &steps {
        let (mut x, mut y) = (call(&mut sc, step), call(&mut rc, step));
        if step[1] == b"LIST" {
            // Redis lists a library's functions in its hash table's order: compare the
            // reply's lines as a multiset.
            (x, y) = (lines_sorted(&x), lines_sorted(&y));
        }
        assert_eq!(
            x,
            y,
            "{:?}: strata {:?} redis {:?}",
            String::from_utf8_lossy(&step[..2.min(step.len())].concat()),
            String::from_utf8_lossy(&x),
            String::from_utf8_lossy(&y)
        );
    }
    // Another lib1 whose functions do not clash replaces the old one under REPLACE.
    for c in [&mut sc, &mut rc] {
        call(c, &[b"FUNCTION", b"FLUSH"]);
        call(c, &[b"FUNCTION", b"LOAD", LIB1B.as_bytes()]);
    }
    let one = bulk(&call(&mut sc, &[b"FUNCTION", b"DUMP"]));
    for c in [&mut sc, &mut rc] {
        call(c, &[b"FUNCTION", b"RESTORE", &theirs, b"FLUSH"]);
        assert_eq!(
            call(c, &[b"FUNCTION", b"RESTORE", &one, b"REPLACE"]),
            b"+OK\r\n"
        );
        assert_eq!(call(c, &[b"FCALL", b"f9", b"0"]), b":9\r\n");
        assert_eq!(call(c, &[b"FCALL", b"f3", b"0"]), b":3\r\n");
    }
}

/// A reply's CRLF-separated lines, sorted and joined again.
fn lines_sorted(reply: &[u8]) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = reply.split(|&b| b == b'\n').collect();
    lines.sort();
    lines.join(&b'\n')
}
