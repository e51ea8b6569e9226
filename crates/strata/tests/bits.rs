//! The bit commands against the real binary: SETBIT GETBIT BITCOUNT BITPOS BITOP
//! BITFIELD BITFIELD_RO. Expected values are computed here from first principles: a model
//! of the string each key should hold and brute-force bit scans.

mod common;

use common::{cmd, err, get, int, ints, ok, setup, Rng, NOT_INT, SYNTAX};
use redis::Value;

fn bit_of(m: &[u8], i: usize) -> u8 {
    m.get(i / 8).map_or(0, |b| b >> (7 - i % 8) & 1)
}

#[test]
fn setbit_getbit_bitcount_bitpos_against_a_model() {
    let (_p, mut c, mut r) = setup();
    let mut rng = Rng(99);
    let mut m: Vec<u8> = Vec::new();
    for _ in 0..400 {
        let off = rng.below(160) as usize;
        let on = rng.below(2) as u8;
        let old = int(&mut c, &["SETBIT", "b", &off.to_string(), &on.to_string()]);
        assert_eq!(old, i64::from(bit_of(&m, off)));
        if m.len() <= off / 8 {
            m.resize(off / 8 + 1, 0);
        }
        m[off / 8] = m[off / 8] & !(1 << (7 - off % 8)) | on << (7 - off % 8);
        let probe = rng.below(200) as usize;
        assert_eq!(
            int(&mut c, &["GETBIT", "b", &probe.to_string()]),
            i64::from(bit_of(&m, probe))
        );
    }
    assert_eq!(get(&mut c, "b"), Some(m.clone()));

    let nbits = m.len() as i64 * 8;
    for _ in 0..300 {
        let isbit = rng.below(2) == 1;
        let total = if isbit { nbits } else { m.len() as i64 };
        let (s, e) = (
            rng.range(-total - 3, total + 3),
            rng.range(-total - 3, total + 3),
        );
        // The bit range [lo, hi] the arguments select.
        let norm = |i: i64| if i < 0 { (total + i).max(0) } else { i };
        let (ns, ne) = (norm(s), norm(e).min(total - 1));
        let (lo, hi) = if isbit {
            (ns, ne)
        } else {
            (ns * 8, ne * 8 + 7)
        };
        let empty = (s < 0 && e < 0 && s > e) || ns > ne;
        let unit = if isbit { "BIT" } else { "BYTE" };
        let want = if empty {
            0
        } else {
            (lo..=hi).filter(|&i| bit_of(&m, i as usize) == 1).count() as i64
        };
        let args = ["BITCOUNT", "b", &s.to_string(), &e.to_string(), unit];
        assert_eq!(int(&mut c, &args), want, "{args:?}");

        // BITPOS over the same arguments, or with no end (which implies BYTE).
        let bit = rng.below(2) as u8;
        let explicit_end = rng.below(2) == 1;
        let (isbit, total) = if explicit_end {
            (isbit, total)
        } else {
            (false, m.len() as i64)
        };
        let norm = |i: i64| if i < 0 { (total + i).max(0) } else { i };
        let ns = norm(s);
        let ne = if explicit_end {
            norm(e).min(total - 1)
        } else {
            total - 1
        };
        let (lo, hi) = if isbit {
            (ns, ne)
        } else {
            (ns * 8, ne * 8 + 7)
        };
        let want = if ns > ne {
            -1
        } else {
            match (lo..=hi).find(|&i| bit_of(&m, i as usize) == bit) {
                Some(i) => i,
                // Looking for a 0 with no end given: the first bit past the string.
                None if bit == 0 && !explicit_end => nbits,
                None => -1,
            }
        };
        let mut args = vec![
            "BITPOS".to_string(),
            "b".into(),
            bit.to_string(),
            s.to_string(),
        ];
        if explicit_end {
            args.push(e.to_string());
            args.push(if isbit { "BIT" } else { "BYTE" }.into());
        }
        assert_eq!(int(&mut c, &args), want, "{args:?}");
    }
    assert_eq!(
        int(&mut c, &["BITCOUNT", "b"]),
        m.iter().map(|b| b.count_ones() as i64).sum::<i64>()
    );
    assert_eq!(int(&mut c, &["BITPOS", "missing", "0"]), 0);
    assert_eq!(int(&mut c, &["BITPOS", "missing", "1"]), -1);

    let off_err = "ERR bit offset is not an integer or out of range";
    assert_eq!(err(&mut r, &["SETBIT", "b", "-1", "1"]), off_err);
    assert_eq!(err(&mut r, &["SETBIT", "b", "4294967296", "1"]), off_err);
    assert_eq!(err(&mut r, &["GETBIT", "b", "x"]), off_err);
    assert_eq!(
        err(&mut r, &["SETBIT", "b", "1", "2"]),
        "ERR bit is not an integer or out of range"
    );
    assert_eq!(
        err(&mut r, &["BITPOS", "b", "2"]),
        "ERR The bit argument must be 1 or 0."
    );
    assert_eq!(err(&mut r, &["BITCOUNT", "b", "0"]), SYNTAX);
    assert_eq!(err(&mut r, &["BITCOUNT", "b", "0", "1", "FOO"]), SYNTAX);
    // The largest offset is accepted for reads without allocating anything.
    assert_eq!(int(&mut c, &["GETBIT", "b", "4294967295"]), 0);

    // SETBIT keeps the TTL.
    ok(&mut c, &["SET", "t", "a", "EX", "100"]);
    assert_eq!(int(&mut c, &["SETBIT", "t", "6", "1"]), 0);
    assert_eq!(get(&mut c, "t").as_deref(), Some(&b"c"[..]));
    assert!(int(&mut c, &["TTL", "t"]) > 90);
}

#[test]
fn bitop_against_a_model() {
    let (_p, mut c, mut r) = setup();
    let mut rng = Rng(1234);
    for _ in 0..50 {
        let srcs: Vec<Vec<u8>> = (0..3)
            .map(|_| (0..rng.below(12)).map(|_| rng.below(256) as u8).collect())
            .collect();
        for (i, s) in srcs.iter().enumerate() {
            ok(&mut c, &[&b"SET"[..], format!("s{i}").as_bytes(), s]);
        }
        let maxlen = srcs.iter().map(Vec::len).max().unwrap_or(0);
        let byte = |s: &Vec<u8>, j: usize| s.get(j).copied().unwrap_or(0);
        for (op, f) in [
            ("AND", (|a, b| a & b) as fn(u8, u8) -> u8),
            ("OR", |a, b| a | b),
            ("XOR", |a, b| a ^ b),
        ] {
            let n = int(&mut c, &["BITOP", op, "d", "s0", "s1", "s2"]);
            assert_eq!(n, maxlen as i64);
            let want: Vec<u8> = (0..maxlen)
                .map(|j| f(f(byte(&srcs[0], j), byte(&srcs[1], j)), byte(&srcs[2], j)))
                .collect();
            if maxlen == 0 {
                assert_eq!(get(&mut c, "d"), None);
            } else {
                assert_eq!(get(&mut c, "d"), Some(want), "{op}");
            }
        }
        let n = int(&mut c, &["BITOP", "NOT", "d", "s0"]);
        assert_eq!(n, srcs[0].len() as i64);
        if n > 0 {
            assert_eq!(get(&mut c, "d"), Some(srcs[0].iter().map(|b| !b).collect()));
        }
    }
    // The destination loses its TTL; missing sources count as empty strings.
    ok(&mut c, &["SET", "d", "x", "EX", "100"]);
    ok(&mut c, &["SET", "s0", "\u{1}"]);
    assert_eq!(int(&mut c, &["BITOP", "OR", "d", "s0", "missing"]), 1);
    assert_eq!(int(&mut c, &["TTL", "d"]), -1);
    assert_eq!(
        int(&mut c, &["BITOP", "AND", "d", "missing", "missing2"]),
        0
    );
    assert_eq!(int(&mut c, &["EXISTS", "d"]), 0);
    assert_eq!(
        err(&mut r, &["BITOP", "NOT", "d", "a", "b"]),
        "ERR BITOP NOT must be called with a single source key."
    );
    assert_eq!(err(&mut r, &["BITOP", "NAND", "d", "a"]), SYNTAX);
}

#[test]
fn bitfield() {
    let (_p, mut c, mut r) = setup();
    // Two's-complement fields at arbitrary bit offsets, checked against a model.
    let mut rng = Rng(77);
    let mut m: Vec<u8> = Vec::new();
    let read = |m: &[u8], off: u64, bits: u32| -> u64 {
        (0..bits as u64).fold(0u64, |v, i| {
            v << 1 | u64::from(bit_of(m, (off + i) as usize))
        })
    };
    for _ in 0..300 {
        let signed = rng.below(2) == 1;
        let bits = if signed {
            rng.range(1, 64)
        } else {
            rng.range(1, 63)
        } as u32;
        let off = rng.below(100);
        let ty = format!("{}{bits}", if signed { 'i' } else { 'u' });
        let val = rng.next() as i64 >> rng.below(64);
        // WRAP: the low `bits` bits of the value are stored.
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let stored = val as u64 & mask;
        let as_int = |u: u64| -> i64 {
            if signed && bits < 64 && u >> (bits - 1) & 1 == 1 {
                (u | !mask) as i64
            } else {
                u as i64
            }
        };
        let old = read(&m, off, bits);
        let got = cmd(
            &mut c,
            &[
                "BITFIELD",
                "f",
                "SET",
                &ty,
                &off.to_string(),
                &val.to_string(),
                "GET",
                &ty,
                &off.to_string(),
            ],
        );
        let need = ((off + u64::from(bits) - 1) / 8 + 1) as usize;
        if m.len() < need {
            m.resize(need, 0);
        }
        for i in 0..bits as u64 {
            let p = (off + i) as usize;
            let b = (stored >> (bits as u64 - 1 - i) & 1) as u8;
            m[p / 8] = m[p / 8] & !(1 << (7 - p % 8)) | b << (7 - p % 8);
        }
        assert_eq!(
            ints(&got),
            vec![as_int(old), as_int(stored)],
            "{ty} at {off} = {val}"
        );
    }
    assert_eq!(get(&mut c, "f"), Some(m));

    // Overflow policies on an u8 counter at 250, incremented by 10.
    for (policy, want) in [
        ("WRAP", Value::Int(4)),
        ("SAT", Value::Int(255)),
        ("FAIL", Value::Nil),
    ] {
        let got = cmd(
            &mut c,
            &[
                "BITFIELD", "o", "SET", "u8", "0", "250", "OVERFLOW", policy, "INCRBY", "u8", "0",
                "10",
            ],
        );
        let Value::Array(v) = got else { panic!() };
        assert_eq!(v[1], want, "{policy}");
    }
    // #N offsets are multiples of the type's width.
    cmd(&mut c, &["BITFIELD", "h", "SET", "u8", "#2", "200"]);
    assert_eq!(get(&mut c, "h"), Some(vec![0, 0, 200]));
    assert_eq!(
        ints(&cmd(
            &mut c,
            &["BITFIELD_RO", "h", "GET", "u8", "#2", "GET", "u16", "8"]
        )),
        vec![200, 200]
    );
    assert_eq!(
        ints(&cmd(&mut c, &["BITFIELD", "missing", "GET", "i8", "0"])),
        vec![0]
    );
    assert_eq!(int(&mut c, &["EXISTS", "missing"]), 0);

    assert_eq!(
        err(&mut r, &["BITFIELD_RO", "h", "SET", "u8", "0", "1"]),
        "ERR BITFIELD_RO only supports the GET subcommand"
    );
    assert_eq!(
        err(&mut r, &["BITFIELD", "h", "GET", "u64", "0"]),
        "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
    );
    assert_eq!(
        err(&mut r, &["BITFIELD", "h", "OVERFLOW", "MAYBE"]),
        "ERR Invalid OVERFLOW type specified"
    );
    assert_eq!(err(&mut r, &["BITFIELD", "h", "GET", "u8"]), SYNTAX);
    assert_eq!(
        err(&mut r, &["BITFIELD", "h", "GET", "u8", "-1"]),
        "ERR bit offset is not an integer or out of range"
    );
    assert_eq!(
        err(&mut r, &["BITFIELD", "h", "SET", "u8", "0", "x"]),
        NOT_INT
    );
    assert_eq!(get(&mut c, "h"), Some(vec![0, 0, 200]));
}
