//! Protocol tests against the real `strata` binary. Wherever a reply text is expected, the
//! same bytes go to Debian's redis-server too, and Strata must answer with the same bytes
//! (and close the connection when Redis does).

mod common;

use common::{encode_command, read_reply, show, Proc, RawReply, RespConn};
use std::io::{BufReader, ErrorKind, Read, Write};
use std::time::{Duration, Instant};

/// What a server sent back for some bytes, and whether it then closed the connection.
#[derive(Debug, PartialEq, Eq)]
struct Transcript {
    bytes: Vec<u8>,
    closed: bool,
}

impl std::fmt::Display for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let end = if self.closed {
            "then closed"
        } else {
            "connection left open"
        };
        write!(f, "{} ({end})", show(&self.bytes))
    }
}

/// Sends `bytes` on a new connection and reads until the server closes it or stays silent
/// for `idle`.
fn transcript_idle(p: &Proc, bytes: &[u8], idle: Duration) -> Transcript {
    let mut s = p.raw();
    s.set_read_timeout(Some(idle)).unwrap();
    // A server may close before taking everything (for example after a too-big inline
    // request): a failed write is fine, what it answered is what counts.
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match s.read(&mut buf) {
            Ok(0) => {
                return Transcript {
                    bytes: out,
                    closed: true,
                }
            }
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return Transcript {
                    bytes: out,
                    closed: true,
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Transcript {
                    bytes: out,
                    closed: false,
                }
            }
            Err(e) => panic!("read from {}: {e}", p.name),
        }
        assert!(Instant::now() < deadline, "{} kept sending", p.name);
    }
}

fn transcript(p: &Proc, bytes: &[u8]) -> Transcript {
    transcript_idle(p, bytes, Duration::from_millis(300))
}

/// Sends each input to both servers (a new connection each) and returns every difference.
fn compare_transcripts(redis: &Proc, strata: &Proc, inputs: &[Vec<u8>]) -> Vec<String> {
    let mut diffs = Vec::new();
    for input in inputs {
        let want = transcript(redis, input);
        let got = transcript(strata, input);
        if want != got {
            diffs.push(format!(
                "input {}\n    redis:  {want}\n    strata: {got}",
                show(input)
            ));
        }
    }
    diffs
}

fn assert_no_diffs(what: &str, diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "{what}: {} differences from redis-server:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

fn bulk_header_then(prefix: &[u8], filler: u8, n: usize) -> Vec<u8> {
    let mut v = prefix.to_vec();
    v.resize(prefix.len() + n, filler);
    v
}

#[test]
fn garbage_gets_redis_protocol_error_then_close() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let inputs: Vec<Vec<u8>> = vec![
        b"*abc\r\n".to_vec(),
        b"*1\r\n$abc\r\n".to_vec(),
        b"*1\r\nfoo\r\n".to_vec(),
        b"*2\r\n$4\r\nECHO\r\n:5\r\n".to_vec(),
        b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n+\r\n".to_vec(),
        b"*1\r\n$-5\r\n".to_vec(),
        b"*2147483648\r\n".to_vec(),
        b"*1\r\n$9999999999999\r\n".to_vec(),
        b"*1\r\n$536870913\r\n".to_vec(),
        b"*1\r\n$4\r\nPING\r\n*1\r\nx\r\n".to_vec(),
        b"SET a \"b\r\n".to_vec(),
        // Too long without a line end: 64 KiB is Redis's inline and header limit.
        bulk_header_then(b"*", b'1', 70_000),
        bulk_header_then(b"*1\r\n$", b'1', 70_000),
        bulk_header_then(b"", b'x', 70_000),
    ];
    assert_no_diffs("garbage", compare_transcripts(&redis, &strata, &inputs));
    // Every one of these is a protocol error: check that it was, not only that both agree.
    for input in &inputs {
        let t = transcript(&strata, input);
        let text = String::from_utf8_lossy(&t.bytes);
        assert!(
            text.contains("-ERR Protocol error: ") && t.closed,
            "{} should get a protocol error and a close, got {t}",
            show(input)
        );
    }
}

#[test]
fn edge_frames_like_redis() {
    // Not errors: null and empty multibulks are skipped, blank lines ignored, a NUL in a
    // header makes Redis wait for more.
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let inputs: Vec<Vec<u8>> = vec![
        b"*-1\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
        b"*-5\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
        b"*0\r\n*1\r\n$4\r\nPING\r\n".to_vec(),
        b"\r\n\r\n\n*1\r\n$4\r\nPING\r\n".to_vec(),
        b"*1\r\n\x00\r\n".to_vec(),
        b"*1\r\n$4\r\nPI".to_vec(),
        b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n".to_vec(),
        b"*2\r\n$4\r\nECHO\r\n$3\r\na\r\n\r\n".to_vec(),
    ];
    assert_no_diffs("edge frames", compare_transcripts(&redis, &strata, &inputs));
}

#[test]
fn inline_commands_like_redis() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let inputs: Vec<Vec<u8>> = vec![
        b"PING\r\n".to_vec(),
        b"ping\n".to_vec(),
        b"PING hello\r\n".to_vec(),
        b"  ECHO   spaced\t \r\n".to_vec(),
        b"ECHO \"\\x41\\x42\\n\\t\\\"q\\\"\"\r\n".to_vec(),
        b"ECHO 'it\\'s'\r\n".to_vec(),
        b"SET a \"b c\"\r\nGET a\r\nDEL a\r\n".to_vec(),
        b"ECHO \"\"\r\n".to_vec(),
        b"NOSUCH x \"y z\"\r\n".to_vec(),
        b"PING\r\n*1\r\n$4\r\nPING\r\nPING\r\n".to_vec(),
        // Quoting errors: a protocol error, then close.
        b"SET a \"b\r\n".to_vec(),
        b"SET a 'b\r\n".to_vec(),
        b"SET a \"b\"c\r\n".to_vec(),
        b"PING\r\nECHO \"x\r\nPING\r\n".to_vec(),
    ];
    assert_no_diffs("inline", compare_transcripts(&redis, &strata, &inputs));
}

/// Sends `req` in two writes split at every byte boundary, then one byte at a time, and
/// returns what came back in each case.
fn split_replies(p: &Proc, req: &[u8], replies: usize) -> Vec<(String, Vec<u8>)> {
    let mut conn = RespConn::new(p);
    conn.stream().set_nodelay(true).unwrap();
    let read_all = |conn: &mut RespConn| -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..replies {
            match conn.read() {
                Ok(r) => out.extend(r.raw),
                Err(e) => out.extend(format!("<no reply: {e}>").into_bytes()),
            }
        }
        out
    };
    let mut results = Vec::new();
    for k in 1..req.len() {
        conn.send(&req[..k]).unwrap();
        conn.stream().flush().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        conn.send(&req[k..]).unwrap();
        results.push((format!("split at byte {k}"), read_all(&mut conn)));
    }
    for (i, b) in req.iter().enumerate() {
        conn.send(std::slice::from_ref(b)).unwrap();
        if i % 5 == 4 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    results.push(("one byte at a time".to_string(), read_all(&mut conn)));
    results
}

#[test]
fn command_split_at_every_byte_boundary() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let cases: Vec<(Vec<u8>, usize)> = vec![
        (encode_command(&["ECHO", "hello world"]), 1),
        (encode_command(&["PING"]), 1),
        (b"ECHO \"a b\"\r\n".to_vec(), 1),
        (
            [
                encode_command(&["SET", "k", "v"]),
                b"GET k\r\n".to_vec(),
                encode_command(&["DEL", "k"]),
            ]
            .concat(),
            3,
        ),
    ];
    let mut diffs = Vec::new();
    for (req, n) in &cases {
        // The expected replies: the request sent whole to redis-server.
        let mut whole = RespConn::new(&redis);
        whole.send(req).unwrap();
        let want: Vec<u8> = (0..*n).flat_map(|_| whole.read().unwrap().raw).collect();
        let wrong: Vec<(String, Vec<u8>)> = split_replies(&strata, req, *n)
            .into_iter()
            .filter(|(_, got)| *got != want)
            .collect();
        if let Some((how, got)) = wrong.first() {
            diffs.push(format!(
                "{}: wrong replies in {} of {} ways of sending it, first {how}\n    redis:  {}\n    strata: {}",
                show(req),
                wrong.len(),
                req.len(),
                show(&want),
                show(got)
            ));
        }
    }
    assert_no_diffs("split requests", diffs);
}

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)
                .and_then(|v| v.trim_start_matches(':').split_whitespace().next())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn huge_declared_lengths_do_not_allocate() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let inputs: Vec<Vec<u8>> = vec![
        // Exactly proto-max-bulk-len (512mb): valid, so the server waits for the rest.
        b"*1\r\n$536870912\r\n0123456789".to_vec(),
        b"*2\r\n$3\r\nSET\r\n$536870912\r\n0123456789".to_vec(),
        b"*2147483648\r\n".to_vec(),
        b"*2147483647\r\n".to_vec(),
        b"*1\r\n$9999999999999\r\n".to_vec(),
    ];
    assert_no_diffs(
        "huge lengths",
        compare_transcripts(&redis, &strata, &inputs),
    );

    // Now hold many such connections open at once and watch Strata's memory.
    let pid = strata.pid();
    let mut warm = RespConn::new(&strata);
    warm.call(&["PING"]).expect("PING");
    std::thread::sleep(Duration::from_millis(100));
    let (rss0, vm0) = (status_kb(pid, "VmRSS"), status_kb(pid, "VmSize"));
    let mut held = Vec::new();
    for i in 0..16 {
        let mut s = strata.raw();
        s.write_all(&inputs[i % inputs.len()]).unwrap();
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let (rss1, vm1) = (status_kb(pid, "VmRSS"), status_kb(pid, "VmSize"));
    eprintln!("strata with 16 huge-length requests pending: VmRSS {rss0} -> {rss1} kB, VmSize {vm0} -> {vm1} kB");
    assert!(
        rss1 < rss0 + 8 * 1024,
        "VmRSS grew from {rss0} kB to {rss1} kB"
    );
    // Reserving (without touching) 512 MB per request would show here.
    assert!(
        vm1 < vm0 + 1024 * 1024,
        "VmSize grew from {vm0} kB to {vm1} kB"
    );
    // And the server still answers others.
    let mut other = RespConn::new(&strata);
    assert_eq!(
        other.call(&["ECHO", "alive"]).expect("ECHO").raw,
        b"$5\r\nalive\r\n"
    );
    drop(held);
}

#[test]
fn pipeline_of_10000_commands_in_one_write() {
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    const N: usize = 10_000;
    let mut req = Vec::new();
    for i in 0..N {
        let cmd = match i % 3 {
            0 => encode_command(&["SET", &format!("key:{i}"), &format!("value:{i}")]),
            1 => encode_command(&["GET", &format!("key:{}", i - 1)]),
            _ => encode_command(&["PING"]),
        };
        req.extend(cmd);
    }
    let run = |p: &Proc| -> Vec<RawReply> {
        let s = p.raw();
        let mut writer = s.try_clone().unwrap();
        let bytes = req.clone();
        // Write from another thread: the replies flow back while the request is still
        // being sent, and neither side may block the other.
        let w = std::thread::spawn(move || writer.write_all(&bytes));
        let mut r = BufReader::new(s);
        let replies: Vec<RawReply> = (0..N)
            .map(|i| {
                read_reply(&mut r).unwrap_or_else(|e| panic!("{}: reply {i} of {N}: {e}", p.name))
            })
            .collect();
        w.join().unwrap().expect("write pipeline");
        replies
    };
    let want = run(&redis);
    let got = run(&strata);
    assert_eq!(got.len(), N);
    for i in 0..N {
        assert!(
            got[i].raw == want[i].raw,
            "reply {i} (to {}): strata {} vs redis {}",
            ["SET", "GET", "PING"][i % 3],
            got[i].shown(),
            want[i].shown()
        );
    }
}

#[test]
fn bulk_over_proto_max_bulk_len_is_refused() {
    let redis = common::redis(&["--proto-max-bulk-len", "1mb"]);
    let strata = common::strata(&["--proto-max-bulk-len", "1mb"]);
    let mut exact = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n".to_vec();
    exact.resize(exact.len() + (1 << 20), b'v');
    exact.extend(b"\r\n*2\r\n$6\r\nSTRLEN\r\n$1\r\nk\r\n");
    let inputs = vec![
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n".to_vec(),
        bulk_header_then(
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n",
            b'v',
            2_000_000,
        ),
        exact,
    ];
    assert_no_diffs(
        "proto-max-bulk-len 1mb",
        compare_transcripts(&redis, &strata, &inputs),
    );
    let t = transcript(&strata, &inputs[0]);
    assert_eq!(
        t,
        Transcript {
            bytes: b"-ERR Protocol error: invalid bulk length\r\n".to_vec(),
            closed: true
        }
    );
}

/// Opens two clients (the limit), then a third: returns the two and what the third got.
fn maxclients_probe(p: &Proc) -> (Vec<RespConn>, Transcript) {
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = RespConn::new(p);
        let r = c
            .call(&["ECHO", "hi"])
            .unwrap_or_else(|e| panic!("{}: client within maxclients: {e}", p.name));
        assert_eq!(
            r.raw, b"$2\r\nhi\r\n",
            "{}: client within maxclients",
            p.name
        );
        held.push(c);
    }
    let t = transcript(p, &encode_command(&["ECHO", "hi"]));
    (held, t)
}

#[test]
fn maxclients_refuses_the_extra_client() {
    let redis = common::redis(&["--maxclients", "2"]);
    let strata = common::strata(&["--maxclients", "2"]);
    let (_r_held, want) = maxclients_probe(&redis);
    let (mut held, got) = maxclients_probe(&strata);
    assert_eq!(got, want, "third client: strata {got} vs redis {want}");
    assert_eq!(got.bytes, b"-ERR max number of clients reached\r\n");
    // A slot frees when a client leaves.
    drop(held.pop());
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let t = transcript(&strata, &encode_command(&["ECHO", "hi"]));
        if t.bytes == b"$2\r\nhi\r\n" {
            break;
        }
        assert!(
            Instant::now() < end,
            "no client accepted after one left: {t}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One step of a conversation: a command, and whether its reply is compared by type only.
struct Step(&'static [&'static str], bool);

fn converse(p: &Proc, steps: &[Step]) -> Vec<RawReply> {
    let mut c = RespConn::new(p);
    steps
        .iter()
        .map(|s| {
            c.call(s.0)
                .unwrap_or_else(|e| panic!("{}: {:?}: {e}", p.name, s.0))
        })
        .collect()
}

fn compare_conversations(redis: &Proc, strata: &Proc, convs: &[Vec<Step>]) -> Vec<String> {
    let mut diffs = Vec::new();
    for steps in convs {
        let want = converse(redis, steps);
        let got = converse(strata, steps);
        for ((step, w), g) in steps.iter().zip(&want).zip(&got) {
            let same = if step.1 {
                w.kind == g.kind
            } else {
                w.raw == g.raw
            };
            if !same {
                diffs.push(format!(
                    "{:?}\n    redis:  {}\n    strata: {}",
                    step.0,
                    w.shown(),
                    g.shown()
                ));
            }
        }
    }
    diffs
}

#[test]
fn requirepass() {
    let redis = common::redis_requiring_auth(&["--requirepass", "secret"]);
    let strata = common::strata(&["--requirepass", "secret"]);
    let plain = |c: &'static [&'static str]| Step(c, false);
    let by_type = |c: &'static [&'static str]| Step(c, true);
    let convs: Vec<Vec<Step>> = vec![
        vec![
            plain(&["GET", "a"]),
            plain(&["PING"]),
            plain(&["HELLO", "3"]),
            plain(&["AUTH", "wrong"]),
            plain(&["AUTH", "default", "wrong"]),
            plain(&["AUTH", "nobody", "secret"]),
            plain(&["AUTH"]),
            plain(&["PING"]),
            plain(&["AUTH", "secret"]),
            plain(&["PING"]),
            plain(&["ECHO", "in"]),
            plain(&["AUTH", "wrong"]),
            plain(&["PING"]),
        ],
        vec![
            by_type(&["HELLO", "3", "AUTH", "default", "secret"]),
            plain(&["PING"]),
            plain(&["ECHO", "resp3"]),
        ],
        vec![
            plain(&["HELLO", "3", "AUTH", "default", "wrong"]),
            plain(&["PING"]),
            by_type(&["HELLO", "2", "AUTH", "default", "secret"]),
            plain(&["PING"]),
        ],
        vec![plain(&["AUTH", "default", "secret"]), plain(&["PING"])],
    ];
    let mut diffs = compare_conversations(&redis, &strata, &convs);
    // Unauthenticated clients may not declare big requests (Redis 6.2.6+, CVE-2021-32675).
    diffs.extend(compare_transcripts(
        &redis,
        &strata,
        &[
            b"*11\r\n".to_vec(),
            b"*1\r\n$16385\r\n".to_vec(),
            b"*10\r\n$16384\r\n".to_vec(),
            [encode_command(&["AUTH", "secret"]), b"*11\r\n".to_vec()].concat(),
        ],
    ));
    assert_no_diffs("requirepass", diffs);
    // The texts clients parse, spelled out.
    let got = converse(
        &strata,
        &[
            plain(&["GET", "a"]),
            plain(&["AUTH", "wrong"]),
            plain(&["AUTH", "secret"]),
        ],
    );
    assert_eq!(got[0].raw, b"-NOAUTH Authentication required.\r\n");
    assert_eq!(
        got[1].raw,
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(got[2].raw, b"+OK\r\n");
    let got = converse(
        &strata,
        &[
            by_type(&["HELLO", "3", "AUTH", "default", "secret"]),
            plain(&["PING"]),
        ],
    );
    assert_eq!(
        got[0].kind,
        b'%',
        "HELLO 3 replies with a map: {}",
        got[0].shown()
    );
    assert_eq!(got[1].raw, b"+PONG\r\n");
}
