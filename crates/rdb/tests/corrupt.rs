//! Hostile input: a corpus built from real payloads and files made by redis-server,
//! truncated at every length and with every single bit flipped, plus hand-made invalid
//! encodings. Everything must be refused with an error or decode to a valid value (one
//! that encodes and decodes back to itself); nothing may panic or hang.

mod common;

use common::fixtures::{listpack, seal, ziplist, zipmap, Lp, Rdb};
use common::samples::{samples, store};
use common::{Redis, TempDir};
use std::time::{Duration, Instant};
use strata_rdb::{dump, restore, PayloadError, RdbValue, Reader};

/// The samples small enough to mutate exhaustively.
fn small_samples() -> Vec<(bytes::Bytes, RdbValue, strata_rdb::KeyMeta)> {
    samples()
        .into_iter()
        .filter(|(_, v, _)| match v {
            RdbValue::String(s) => s.len() < 40,
            RdbValue::List(x) | RdbValue::Set(x) => x.len() < 30 && x.iter().all(|m| m.len() < 40),
            RdbValue::SortedSet(x) => x.len() < 20,
            RdbValue::Hash(x) => x.len() < 10 && x.iter().all(|(a, b)| a.len() + b.len() < 100),
            RdbValue::Stream(s) => s.entries.len() < 10,
            RdbValue::Packed(_) => unreachable!("samples are decoded values"),
        })
        .collect()
}

/// Small payloads of every type, as redis-server's DUMP makes them.
fn redis_payloads() -> Vec<Vec<u8>> {
    let dir = TempDir::new("corpus");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    let mut out = Vec::new();
    for (k, v, _) in small_samples() {
        store(&mut con, &k, &v);
        out.push(
            redis::cmd("DUMP")
                .arg(&k[..])
                .query(&mut con)
                .expect("DUMP"),
        );
    }
    assert!(out.len() >= 30, "corpus too small: {}", out.len());
    out
}

/// A decoded value must survive its own round trip.
fn assert_valid(v: RdbValue) {
    let again = restore(&dump(&v)).unwrap_or_else(|e| panic!("re-encoded {v:?} refused: {e:?}"));
    assert!(again.normalized() == v.normalized());
}

#[test]
fn payloads_truncated_or_bit_flipped_are_refused_or_valid() {
    let corpus = redis_payloads();
    let start = Instant::now();
    let mut refused = 0usize;
    for p in &corpus {
        assert!(restore(p).is_ok());
        let body = &p[..p.len() - 10];
        for cut in 0..p.len() {
            assert!(restore(&p[..cut]).is_err(), "prefix of {cut} accepted");
            if cut < body.len() {
                // Resealed, so the decoders (not the CRC) see the truncation.
                assert!(
                    restore(&seal(body[..cut].to_vec())).is_err(),
                    "body prefix {cut} of {p:?}"
                );
            }
        }
        for bit in 0..body.len() * 8 {
            let mut x = body.to_vec();
            x[bit / 8] ^= 1 << (bit % 8);
            match restore(&seal(x)) {
                Ok(v) => assert_valid(v),
                Err(PayloadError::BadData(_)) => refused += 1,
                Err(e) => panic!("footer error for a sealed payload: {e:?}"),
            }
            // Unsealed, the CRC catches it.
            let mut y = p.clone();
            y[bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(restore(&y), Err(PayloadError::VersionOrChecksum)));
        }
    }
    assert!(refused > 1000, "only {refused} flips refused");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn files_truncated_or_bit_flipped_are_refused_or_valid() {
    let dir = TempDir::new("corrupt-file");
    let r = Redis::start(dir.path(), &[]);
    let mut con = r.con();
    for (k, v, m) in small_samples()
        .into_iter()
        .filter(|s| !s.0.starts_with(b"str:"))
    {
        store(&mut con, &k, &v);
        if let Some(t) = m.expire_ms {
            let _: i64 = redis::cmd("PEXPIREAT")
                .arg(&k[..])
                .arg(t)
                .query(&mut con)
                .expect("PEXPIREAT");
        }
    }
    let file = std::fs::read(r.save()).expect("read");
    let read = |bytes: &[u8], verify: bool| -> Result<Vec<strata_rdb::Item>, strata_rdb::Error> {
        let mut reader = Reader::new(bytes)?;
        reader.set_verify_checksum(verify);
        reader.collect()
    };
    assert!(
        file.len() < 4096,
        "{} bytes: too many flips to try",
        file.len()
    );
    assert!(read(&file, true).expect("intact").len() > 10);
    for cut in 0..file.len() {
        assert!(
            read(&file[..cut], true).is_err(),
            "prefix of {cut} accepted"
        );
    }
    // Flips everywhere: with the checksum off the decoders see every one of them.
    let mut decoded = 0;
    for bit in 0..file.len() * 8 {
        let mut x = file.clone();
        x[bit / 8] ^= 1 << (bit % 8);
        let mut reader = match Reader::new(&x[..]) {
            Ok(r) => r,
            Err(_) => continue,
        };
        reader.set_verify_checksum(false);
        for item in reader.by_ref() {
            match item {
                Ok(strata_rdb::Item::Key(e)) => {
                    assert_valid(e.value);
                    decoded += 1;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    assert!(decoded > 0);
    // A reader that leaves packed values for later finds the same damage, and the same
    // values, once they are decoded (in order, reusing one space, as a loader does).
    let mut deferred = 0;
    for bit in 0..file.len() * 8 {
        let mut x = file.clone();
        x[bit / 8] ^= 1 << (bit % 8);
        let (now, later) = (read_decoded(&x, false), read_decoded(&x, true));
        deferred += later.as_ref().map_or(0, |(_, n)| *n);
        assert_eq!(
            now.map(|(v, _)| v).map_err(|e| e.to_string()),
            later.map(|(v, _)| v).map_err(|e| e.to_string()),
            "bit {bit}"
        );
    }
    assert!(deferred > 0, "no packed value was left for later");
}

/// Every key's value in `file` (checksum off), packed ones decoded after the reader hands
/// them out when `defer`; with how many were.
fn read_decoded(file: &[u8], defer: bool) -> Result<(Vec<RdbValue>, usize), strata_rdb::Error> {
    let mut reader = Reader::new(file)?;
    reader.set_verify_checksum(false);
    reader.set_defer_packed(defer);
    let mut space = strata_rdb::DecodeSpace::default();
    let (mut out, mut packed) = (Vec::new(), 0);
    for item in reader {
        let strata_rdb::Item::Key(e) = item? else {
            continue;
        };
        let v = match e.value {
            RdbValue::Packed(p) => {
                packed += 1;
                let v = p.decode_in(&mut space)?;
                out.push(v.clone());
                space.recycle(v);
                continue;
            }
            v => v,
        };
        out.push(v);
    }
    Ok((out, packed))
}

fn bad(payload_body: Vec<u8>) -> String {
    match restore(&seal(payload_body)) {
        Err(PayloadError::BadData(e)) => e.to_string(),
        other => panic!("expected bad data, got {other:?}"),
    }
}

fn lp_strs(items: &[&[u8]]) -> Vec<u8> {
    listpack(&items.iter().map(|s| Lp::Str(s)).collect::<Vec<_>>())
}

#[test]
fn invalid_collections_are_refused_with_a_reason() {
    let r = |f: &dyn Fn(&mut Rdb)| {
        let mut r = Rdb::payload();
        f(&mut r);
        r.buf
    };
    let intset = |vals: &[i16]| {
        let mut b = vec![2, 0, 0, 0];
        b.extend_from_slice(&(vals.len() as u32).to_le_bytes());
        vals.iter()
            .for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
        b
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "set dup",
            r(&|r| {
                r.byte(2).len(2).str(b"a").str(b"a");
            }),
            "duplicate",
        ),
        (
            "hash dup",
            r(&|r| {
                r.byte(4).len(2).str(b"f").str(b"1").str(b"f").str(b"2");
            }),
            "duplicate",
        ),
        (
            "zset dup",
            r(&|r| {
                r.byte(5)
                    .len(2)
                    .str(b"m")
                    .raw(&1f64.to_le_bytes())
                    .str(b"m")
                    .raw(&2f64.to_le_bytes());
            }),
            "duplicate",
        ),
        (
            "zset nan",
            r(&|r| {
                r.byte(5).len(1).str(b"m").raw(&f64::NAN.to_le_bytes());
            }),
            "NaN",
        ),
        (
            "zset text nan",
            r(&|r| {
                r.byte(3).len(1).str(b"m").byte(253);
            }),
            "NaN",
        ),
        (
            "zset text garbage",
            r(&|r| {
                r.byte(3).len(1).str(b"m").byte(3).raw(b"1x2");
            }),
            "not a number",
        ),
        (
            "hash listpack dup",
            r(&|r| {
                r.byte(16).str(&lp_strs(&[b"f", b"1", b"f", b"2"]));
            }),
            "duplicate",
        ),
        (
            "hash listpack odd",
            r(&|r| {
                r.byte(16).str(&lp_strs(&[b"f", b"1", b"g"]));
            }),
            "odd",
        ),
        (
            "zset listpack dup",
            r(&|r| {
                r.byte(17).str(&lp_strs(&[b"m", b"1", b"m", b"2"]));
            }),
            "duplicate",
        ),
        (
            "zset listpack nan",
            r(&|r| {
                r.byte(17).str(&lp_strs(&[b"m", b"nan"]));
            }),
            "NaN",
        ),
        (
            "zset listpack text",
            r(&|r| {
                r.byte(17).str(&lp_strs(&[b"m", b"one"]));
            }),
            "not a number",
        ),
        (
            "hash ziplist dup",
            r(&|r| {
                r.byte(13).str(&ziplist(&[b"f", b"1", b"f", b"2"]));
            }),
            "duplicate",
        ),
        (
            "zipmap dup",
            r(&|r| {
                r.byte(9).str(&zipmap(&[(b"f", b"1"), (b"f", b"2")], 0));
            }),
            "duplicate",
        ),
        (
            "intset unsorted",
            r(&|r| {
                r.byte(11).str(&intset(&[2, 1]));
            }),
            "ascending",
        ),
        (
            "intset dup",
            r(&|r| {
                r.byte(11).str(&intset(&[1, 1]));
            }),
            "ascending",
        ),
        (
            "intset empty",
            r(&|r| {
                r.byte(11).str(&intset(&[]));
            }),
            "empty",
        ),
        (
            "intset size",
            r(&|r| {
                r.byte(11).str(&intset(&[1, 2])[..11]);
            }),
            "fill",
        ),
        (
            "quicklist empty node",
            r(&|r| {
                r.byte(18).len(1).len(2).str(b"");
            }),
            "empty quicklist node",
        ),
        (
            "quicklist container",
            r(&|r| {
                r.byte(18).len(1).len(3).str(b"x");
            }),
            "container",
        ),
        (
            "stream key size",
            r(&|r| {
                r.byte(19).len(1).str(b"short").str(&lp_strs(&[b"x"]));
            }),
            "16-byte",
        ),
        (
            "lzf too long",
            r(&|r| {
                r.byte(0).byte(0xc3).len(2).len(1000).raw(&[0, b'a']);
            }),
            "cannot expand",
        ),
        (
            "lzf short",
            r(&|r| {
                r.byte(0).byte(0xc3).len(2).len(5).raw(&[0, b'a']);
            }),
            "LZF",
        ),
        (
            "unknown string encoding",
            r(&|r| {
                r.byte(0).byte(0xc4);
            }),
            "string encoding",
        ),
        (
            "bad length",
            r(&|r| {
                r.byte(1).byte(0x82);
            }),
            "length encoding",
        ),
        (
            "trailing",
            r(&|r| {
                r.byte(0).str(b"v").byte(0);
            }),
            "trailing",
        ),
    ];
    for (what, body, needle) in cases {
        let msg = bad(body);
        assert!(msg.contains(needle), "{what}: {msg}");
    }
}

#[test]
fn listpack_and_ziplist_damage_is_caught_deep() {
    let hash = |lp: &[u8]| Rdb::payload().byte(16).str(lp).buf.clone();
    let good = lp_strs(&[b"f", b"v"]);
    assert!(restore(&seal(hash(&good))).is_ok());
    let mut count = good.clone();
    count[4] = 3;
    assert!(bad(hash(&count)).contains("header counts"));
    let mut size = good.clone();
    size[0] += 1;
    assert!(bad(hash(&size)).contains("header says"));
    let mut term = good.clone();
    let n = term.len();
    term[n - 1] = 0;
    assert!(bad(hash(&term)).contains("terminator"));
    let mut backlen = good.clone();
    backlen[8] = 9;
    assert!(bad(hash(&backlen)).contains("back-length"));
    let list = |zl: &[u8]| Rdb::payload().byte(10).str(zl).buf.clone();
    let zl = ziplist(&[b"a", b"bb", b"1"]);
    assert!(restore(&seal(list(&zl))).is_ok());
    let mut tail = zl.clone();
    tail[4] += 1;
    assert!(bad(list(&tail)).contains("tail"));
    let mut prevlen = zl.clone();
    prevlen[13] = 7; // the second entry's record of the first one's size
    assert!(bad(list(&prevlen)).contains("previous"));
    let mut zcount = zl.clone();
    zcount[8] = 2;
    assert!(bad(list(&zcount)).contains("header counts"));
}

#[test]
fn huge_declared_lengths_fail_fast() {
    let big = |r: &mut Rdb| {
        r.byte(0x81).raw(&(1u64 << 62).to_be_bytes());
    };
    let bodies: Vec<Vec<u8>> = vec![
        {
            let mut r = Rdb::payload();
            r.byte(0);
            big(&mut r);
            r.raw(b"abc");
            r.buf.clone()
        },
        {
            let mut r = Rdb::payload();
            r.byte(1);
            big(&mut r);
            r.str(b"a");
            r.buf.clone()
        },
        {
            let mut r = Rdb::payload();
            r.byte(2).byte(0x80).raw(&u32::MAX.to_be_bytes()).str(b"a");
            r.buf.clone()
        },
        {
            let mut r = Rdb::payload();
            r.byte(0)
                .byte(0xc3)
                .len(10)
                .byte(0x81)
                .raw(&(1u64 << 40).to_be_bytes())
                .raw(&[0; 10]);
            r.buf.clone()
        },
        {
            let mut r = Rdb::payload();
            r.byte(16)
                .byte(0x80)
                .raw(&(u32::MAX - 1).to_be_bytes())
                .raw(&[0xfe, 0xff, 0xff, 0xff]);
            r.buf.clone()
        },
        {
            let mut r = Rdb::payload();
            r.byte(19)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(1)
                .str(b"g")
                .len(0)
                .len(0)
                .len(0);
            big(&mut r);
            r.buf.clone()
        },
        {
            let mut r = Rdb::payload();
            r.byte(19)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0)
                .len(0);
            big(&mut r);
            r.buf.clone()
        },
    ];
    for body in bodies {
        let start = Instant::now();
        assert!(restore(&seal(body.clone())).is_err(), "{body:?}");
        // And the same as the start of a file.
        let mut file = b"REDIS0010".to_vec();
        file.push(body[0]);
        file.extend_from_slice(&[1, b'k']);
        file.extend_from_slice(&body[1..]);
        assert!(Reader::new(&file[..])
            .expect("header")
            .collect::<Result<Vec<_>, _>>()
            .is_err());
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{body:?} took {:?}",
            start.elapsed()
        );
    }
    // A claimed multi-gigabyte string over a slow, short input stops at its end.
    let mut r = Rdb::new(10);
    r.key(0, b"k")
        .byte(0x80)
        .raw(&(3u32 << 30).to_be_bytes())
        .raw(&vec![b'x'; 100_000]);
    let err = Reader::new(&r.buf[..])
        .expect("header")
        .next()
        .expect("item")
        .expect_err("truncated");
    assert!(err.is_truncated());
}
