//! Sample values of every type, under and over each encoding threshold, with edge cases;
//! and storing a value into redis-server with ordinary commands.

use bytes::Bytes;
use strata_rdb::{
    KeyMeta, PendingEntry, RdbValue, StreamConsumer, StreamEntry, StreamGroup, StreamId,
    StreamValue,
};

/// Deterministic pseudo-random bytes (xorshift64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn bytes(&mut self, n: usize) -> Bytes {
        (0..n)
            .map(|_| (self.next() >> 24) as u8)
            .collect::<Vec<_>>()
            .into()
    }
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Strings that exercise every string encoding: integers at each width boundary,
/// non-canonical numbers, binary, around the 20-byte compression cutoff, compressible and
/// incompressible, above the 4 KiB shared-chunk size.
pub fn edge_strings() -> Vec<Bytes> {
    let mut rng = Rng::new(7);
    let mut v: Vec<Bytes> = [
        "",
        "a",
        "0",
        "-1",
        "127",
        "128",
        "-128",
        "-129",
        "32767",
        "32768",
        "-32768",
        "-32769",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "01",
        "-0",
        "+1",
        " 1",
        "1.5",
    ]
    .iter()
    .map(|s| b(s))
    .collect();
    v.push((0..=255u8).collect::<Vec<_>>().into());
    v.push(b(&"a".repeat(20)));
    v.push(b(&"a".repeat(21)));
    v.push(b(&"ab".repeat(500)));
    v.push(rng.bytes(30));
    v.push(rng.bytes(5000));
    v.push(b(&"hello world ".repeat(9000)));
    v.push(rng.bytes(100_000));
    v
}

fn int_strings() -> Vec<Bytes> {
    [
        0i64,
        1,
        127,
        128,
        -1,
        4095,
        4096,
        -4096,
        -4097,
        32767,
        32768,
        -32768,
        8388607,
        8388608,
        -8388608,
        -8388609,
        2147483647,
        2147483648,
        -2147483648,
        i64::MAX,
        i64::MIN,
    ]
    .iter()
    .map(|v| b(&v.to_string()))
    .collect()
}

fn stream(entries: usize, groups: bool, rng: &mut Rng) -> StreamValue {
    let mut s = StreamValue::default();
    for i in 0..entries {
        let id = StreamId::new(1_700_000_000_000 + (i as u64 / 3), i as u64 % 3);
        // Mostly the same fields (stored once per node), sometimes others.
        let fields = match i % 7 {
            3 => vec![(b("other"), b(&i.to_string()))],
            5 => vec![
                (b("name"), b("x")),
                (b("n"), b(&i.to_string())),
                (b("blob"), rng.bytes(40)),
            ],
            6 if i % 50 == 6 => vec![(b("big"), rng.bytes(5000))],
            _ => vec![
                (b("name"), b(&format!("item-{i}"))),
                (b("n"), b(&(i * 1000).to_string())),
            ],
        };
        s.entries.push(StreamEntry { id, fields });
    }
    if let (Some(first), Some(last)) = (s.entries.first(), s.entries.last()) {
        s.first_id = first.id;
        s.last_id = last.id;
    }
    s.entries_added = entries as u64 + 2;
    s.max_deleted_entry_id = StreamId::new(5, 0);
    if groups && entries > 10 {
        let ids: Vec<StreamId> = s.entries.iter().map(|e| e.id).collect();
        s.groups.push(StreamGroup {
            name: b("workers"),
            last_delivered_id: ids[9],
            entries_read: Some(10),
            pending: (0..6)
                .map(|i| PendingEntry {
                    id: ids[i],
                    delivery_time: 1_700_000_100_000 + i as i64,
                    delivery_count: 1 + i as u64,
                    consumer: if i % 2 == 0 { b("alice") } else { b("bob") },
                })
                .collect(),
            consumers: vec![
                StreamConsumer {
                    name: b("alice"),
                    seen_time: 1_700_000_200_000,
                },
                StreamConsumer {
                    name: b("bob"),
                    seen_time: 1_700_000_300_000,
                },
                StreamConsumer {
                    name: b("idle"),
                    seen_time: 1_700_000_400_000,
                },
            ],
        });
        s.groups.push(StreamGroup {
            name: b("audit"),
            last_delivered_id: StreamId::new(0, 0),
            entries_read: None,
            pending: vec![],
            consumers: vec![],
        });
    }
    s
}

/// (key, value, meta) for every type and encoding, plus expiries.
pub fn samples() -> Vec<(Bytes, RdbValue, KeyMeta)> {
    let mut rng = Rng::new(42);
    let mut out: Vec<(Bytes, RdbValue)> = Vec::new();
    for (i, s) in edge_strings().into_iter().enumerate() {
        out.push((b(&format!("str:{i}")), RdbValue::String(s)));
    }
    out.push((b("12345"), RdbValue::String(b("integer-looking key"))));
    out.push((Bytes::new(), RdbValue::String(b("empty key"))));

    let mut small_list = int_strings();
    small_list.extend(["a", "", "-0", "b"].iter().map(|s| b(s)));
    out.push((b("list:small"), RdbValue::List(small_list.into())));
    out.push((b("list:one"), RdbValue::List(vec![b("x")].into())));
    out.push((
        b("list:nodes"),
        RdbValue::List((0..1000).map(|i| b(&format!("{i:0>100}"))).collect()),
    ));
    out.push((b("list:edge"), RdbValue::List(edge_strings().into())));
    out.push((
        b("list:ints"),
        RdbValue::List(
            (0..3000)
                .map(|i| b(&(i * 7919 - 100_000).to_string()))
                .collect(),
        ),
    ));

    out.push((b("set:intset"), RdbValue::Set(int_strings().into())));
    out.push((
        b("set:intset16"),
        RdbValue::Set((0..512).map(|i| b(&i.to_string())).collect()),
    ));
    out.push((
        b("set:big-ints"),
        RdbValue::Set((0..513).map(|i| b(&i.to_string())).collect()),
    ));
    out.push((
        b("set:strings"),
        RdbValue::Set(vec![b("a"), b("b"), b("1"), b(""), b("01")].into()),
    ));
    out.push((
        b("set:large"),
        RdbValue::Set((0..2000).map(|i| b(&format!("member-{i}"))).collect()),
    ));

    let scores = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        1e300,
        -1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        3.0,
        123456789.125,
        4611686018427387904.0,
        5e-324,
    ];
    out.push((
        b("zset:small"),
        RdbValue::SortedSet(
            scores
                .iter()
                .enumerate()
                .map(|(i, &s)| (b(&format!("m{i}")), s))
                .collect(),
        ),
    ));
    out.push((
        b("zset:ties"),
        RdbValue::SortedSet(
            vec![(b("b"), 1.0), (b("a"), 1.0), (b("10"), 1.0), (b("c"), -2.0)].into(),
        ),
    ));
    out.push((
        b("zset:long-member"),
        RdbValue::SortedSet(vec![(b(&"m".repeat(65)), 1.0), (b("short"), 2.0)].into()),
    ));
    out.push((
        b("zset:large"),
        RdbValue::SortedSet(
            (0..300)
                .map(|i| (b(&format!("member-{i}")), (i as f64 * 1.25) - 100.0))
                .collect(),
        ),
    ));

    out.push((
        b("hash:small"),
        RdbValue::Hash(
            vec![
                (b("a"), b("1")),
                (b("b"), b("-20000")),
                (b("12"), b("")),
                (b(""), b("x")),
            ]
            .into(),
        ),
    ));
    out.push((
        b("hash:long-value"),
        RdbValue::Hash(vec![(b("f"), b(&"v".repeat(65))), (b("g"), b("short"))].into()),
    ));
    out.push((
        b("hash:large"),
        RdbValue::Hash(
            (0..600)
                .map(|i| (b(&format!("field-{i}")), b(&(i * i).to_string())))
                .collect(),
        ),
    ));
    out.push((
        b("hash:edge"),
        RdbValue::Hash(
            edge_strings()
                .into_iter()
                .enumerate()
                .map(|(i, s)| (b(&i.to_string()), s))
                .collect(),
        ),
    ));

    out.push((
        b("stream:small"),
        RdbValue::Stream(Box::new(stream(5, false, &mut rng))),
    ));
    out.push((
        b("stream:nodes"),
        RdbValue::Stream(Box::new(stream(400, true, &mut rng))),
    ));
    let mut empty = StreamValue {
        last_id: StreamId::new(1_000, 5),
        first_id: StreamId::new(0, 0),
        entries_added: 3,
        max_deleted_entry_id: StreamId::new(1_000, 5),
        ..Default::default()
    };
    empty.groups.push(StreamGroup {
        name: b("g"),
        last_delivered_id: StreamId::new(1_000, 5),
        entries_read: Some(3),
        pending: vec![],
        consumers: vec![StreamConsumer {
            name: b("c"),
            seen_time: 1_700_000_000_000,
        }],
    });
    out.push((b("stream:empty"), RdbValue::Stream(Box::new(empty))));

    let far = 4_000_000_000_000i64; // year 2096
    out.into_iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let meta = KeyMeta {
                expire_ms: (i % 3 == 0).then_some(far + i as i64),
                ..KeyMeta::default()
            };
            (k, v, meta)
        })
        .collect()
}

fn f64_arg(d: f64) -> String {
    format!("{d:?}")
}

/// Stores `v` under `key` with commands (streams: entries with XADD, metadata with XSETID,
/// groups with XGROUP and pending entries with XCLAIM, so times are the server's own).
pub fn store(con: &mut redis::Connection, key: &[u8], v: &RdbValue) {
    let run = |con: &mut redis::Connection, cmd: &mut redis::Cmd| {
        let _: redis::Value = cmd.query(con).unwrap_or_else(|e| panic!("{e}"));
    };
    match v {
        RdbValue::Packed(p) => store(con, key, &p.decode().expect("a sample decodes")),
        RdbValue::String(s) => run(con, redis::cmd("SET").arg(key).arg(&s[..])),
        RdbValue::List(items) => {
            let items: Vec<&[u8]> = items.iter().collect();
            for chunk in items.chunks(100) {
                let mut c = redis::cmd("RPUSH");
                c.arg(key);
                chunk.iter().for_each(|x| {
                    c.arg(*x);
                });
                run(con, &mut c);
            }
        }
        RdbValue::Set(items) => {
            let items: Vec<&[u8]> = items.iter().collect();
            for chunk in items.chunks(100) {
                let mut c = redis::cmd("SADD");
                c.arg(key);
                chunk.iter().for_each(|x| {
                    c.arg(*x);
                });
                run(con, &mut c);
            }
        }
        RdbValue::SortedSet(items) => {
            let items: Vec<(&[u8], f64)> = items.iter().collect();
            for chunk in items.chunks(100) {
                let mut c = redis::cmd("ZADD");
                c.arg(key);
                chunk.iter().for_each(|(m, s)| {
                    c.arg(f64_arg(*s)).arg(*m);
                });
                run(con, &mut c);
            }
        }
        RdbValue::Hash(fields) => {
            let fields: Vec<(&[u8], &[u8])> = fields.iter().collect();
            for chunk in fields.chunks(100) {
                let mut c = redis::cmd("HSET");
                c.arg(key);
                chunk.iter().for_each(|(f, x)| {
                    c.arg(*f).arg(*x);
                });
                run(con, &mut c);
            }
        }
        RdbValue::Stream(s) => {
            for e in &s.entries {
                let mut c = redis::cmd("XADD");
                c.arg(key).arg(e.id.to_string());
                e.fields.iter().for_each(|(f, x)| {
                    c.arg(&f[..]).arg(&x[..]);
                });
                run(con, &mut c);
            }
            if s.entries.is_empty() {
                // XSETID needs the key: create it with one entry and delete that.
                run(
                    con,
                    redis::cmd("XADD").arg(key).arg("0-1").arg("f").arg("v"),
                );
                run(con, redis::cmd("XDEL").arg(key).arg("0-1"));
            }
            run(
                con,
                redis::cmd("XSETID")
                    .arg(key)
                    .arg(s.last_id.to_string())
                    .arg("ENTRIESADDED")
                    .arg(s.entries_added.max(s.entries.len() as u64))
                    .arg("MAXDELETEDID")
                    .arg(s.max_deleted_entry_id.to_string()),
            );
            for g in &s.groups {
                let mut c = redis::cmd("XGROUP");
                c.arg("CREATE")
                    .arg(key)
                    .arg(&g.name[..])
                    .arg(g.last_delivered_id.to_string());
                if let Some(n) = g.entries_read {
                    c.arg("ENTRIESREAD").arg(n);
                }
                run(con, &mut c);
                for cons in &g.consumers {
                    run(
                        con,
                        redis::cmd("XGROUP")
                            .arg("CREATECONSUMER")
                            .arg(key)
                            .arg(&g.name[..])
                            .arg(&cons.name[..]),
                    );
                }
                for p in &g.pending {
                    run(
                        con,
                        redis::cmd("XCLAIM")
                            .arg(key)
                            .arg(&g.name[..])
                            .arg(&p.consumer[..])
                            .arg(0)
                            .arg(p.id.to_string())
                            .arg("TIME")
                            .arg(p.delivery_time)
                            .arg("RETRYCOUNT")
                            .arg(p.delivery_count)
                            .arg("FORCE")
                            .arg("JUSTID"),
                    );
                }
            }
        }
    }
}
