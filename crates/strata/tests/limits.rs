//! Client limits triggered for real over sockets, and seen where Redis shows them (CLIENT
//! LIST, INFO, the log): output-buffer limits, the query-buffer limit and
//! proto-max-bulk-len, timeout, maxmemory-clients, tcp-backlog, tcp-keepalive.

mod common;

use common::{call_text, logged, strata, Proc, RespConn};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// CLIENT LIST fields of the client called `name`, or None when it is gone.
fn client_fields(admin: &mut RespConn, name: &str) -> Option<Vec<(String, String)>> {
    let list = call_text(admin, &["CLIENT", "LIST"]);
    list.split(['\n', '\r'])
        .find(|l| l.contains(&format!(" name={name} ")))
        .map(|l| {
            l.split(' ')
                .filter_map(|f| f.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
}

fn field(fields: &[(String, String)], name: &str) -> u64 {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {name} in {fields:?}"))
}

/// Waits up to `secs` for `cond`; true if it held.
fn within(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A raw connection that has named itself.
fn named(p: &Proc, name: &str) -> TcpStream {
    let mut s = p.raw();
    s.write_all(format!("CLIENT SETNAME {name}\r\n").as_bytes())
        .unwrap();
    let mut ok = [0u8; 5];
    s.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"+OK\r\n");
    s
}

/// Reads until the server closes; the bytes that came first.
fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

/// A server with `directive` set to `value` by CONFIG SET, and the connection that set it.
fn configured(directive: &str, value: &str) -> (Proc, RespConn) {
    let p = strata(&[]);
    let mut admin = RespConn::new(&p);
    call_text(&mut admin, &["CONFIG", "SET", directive, value]);
    (p, admin)
}

/// Whether the server logged a close for the output limit. Its log is read on a thread
/// of its own: the line may come a little after the close is seen.
fn output_limit_logged(p: &Proc) -> bool {
    within(5, || logged(p, "for overcoming of output buffer limits"))
}

fn info_num(admin: &mut RespConn, section: &str, name: &str) -> u64 {
    let info = call_text(admin, &["INFO", section]);
    info.split("\\r\\n")
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
}

#[test]
fn a_reply_past_the_hard_limit_closes_the_client_before_any_of_it_is_sent() {
    let (p, mut admin) = configured("client-output-buffer-limit", "normal 100000 0 0");
    let item = "x".repeat(1000);
    for _ in 0..150 {
        call_text(&mut admin, &["RPUSH", "mylist", &item]);
    }
    let mut big = named(&p, "mybiglist");
    big.write_all(b"LRANGE mylist 0 -1\r\n").unwrap();
    assert!(
        within(5, || client_fields(&mut admin, "mybiglist").is_none()),
        "closed at its output limit"
    );
    assert!(
        read_to_close(&mut big).is_empty(),
        "nothing of the reply was sent"
    );
    assert!(output_limit_logged(&p));

    // A pipeline whose replies add up past the limit: the same, even though the socket
    // could have taken them.
    let mut piped = named(&p, "multicommands");
    let value = "v".repeat(10_000);
    call_text(&mut admin, &["SET", "bigkey", &value]);
    piped.write_all(&b"GET bigkey\r\n".repeat(15)).unwrap();
    assert!(within(5, || client_fields(&mut admin, "multicommands").is_none()));
    assert!(read_to_close(&mut piped).is_empty());
    // Under the limit nothing happens.
    let mut fine = named(&p, "fine");
    fine.write_all(&b"GET bigkey\r\n".repeat(5)).unwrap();
    let mut got = vec![0u8; 5 * (value.len() + 10)];
    fine.read_exact(&mut got).unwrap();
    assert!(client_fields(&mut admin, "fine").is_some());
}

#[test]
fn replies_a_client_never_reads_are_its_pending_output_until_the_soft_limit_expires() {
    let p = strata(&["--threads", "1"]);
    let mut admin = RespConn::new(&p);
    call_text(
        &mut admin,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 4mb 2",
        ],
    );
    let value = "v".repeat(100 * 1024);
    call_text(&mut admin, &["SET", "big", &value]);
    let mut slow = named(&p, "slow");
    // About 200 MB of replies: far more than the socket buffers take.
    slow.write_all(&b"GET big\r\n".repeat(2000)).unwrap();
    let mut seen = None;
    assert!(
        within(10, || {
            let Some(f) = client_fields(&mut admin, "slow") else {
                return false;
            };
            let omem = field(&f, "omem");
            if omem >= 4 << 20 && seen.is_none() {
                // What CLIENT LIST shows of it: Redis's buffer-and-blocks shape, and a
                // total that holds it.
                assert_eq!(field(&f, "obl"), 16 * 1024, "{f:?}");
                assert_eq!(field(&f, "oll"), (omem - 16 * 1024).div_ceil(16 * 1024));
                assert!(field(&f, "tot-mem") >= omem, "{f:?}");
                seen = Some(Instant::now());
            }
            seen.is_some()
        }),
        "pending output reached the soft limit"
    );
    let over_since = seen.unwrap();
    assert!(
        within(10, || client_fields(&mut admin, "slow").is_none()),
        "closed once over the soft limit for longer than its seconds"
    );
    assert!(
        over_since.elapsed() >= Duration::from_millis(1500),
        "closed after {:?}, before its 2 seconds",
        over_since.elapsed()
    );
    assert!(output_limit_logged(&p));
    let recent = info_num(&mut admin, "clients", "client_recent_max_output_buffer");
    assert!(recent >= 1 << 20, "INFO saw the pending output: {recent}");
}

#[test]
fn a_client_without_a_limit_gets_every_reply_of_a_pipeline_it_reads_only_at_the_end() {
    // As Redis: a `normal 0 0 0` client's replies are buffered whatever they come to, so a
    // client that writes all its commands before reading any reply finishes. 1.5M INCRs
    // are 36 MB in and 15 MB of replies out: more than the sockets' buffers hold either way
    // (when Strata held such a client's commands once 1 MB of replies waited, the writer
    // stopped for good at 0.8M-1.1M commands).
    const N: usize = 1_500_000;
    let p = strata(&["--threads", "1"]);
    let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let batch = b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n".repeat(10_000);
    for sent in (0..N).step_by(10_000) {
        if let Err(e) = s.write_all(&batch) {
            panic!("the server stopped reading after {sent} commands: {e}");
        }
    }
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let (mut lines, mut last) = (0, Vec::new());
    let mut buf = vec![0; 1 << 20];
    while lines < N {
        let n = s.read(&mut buf).expect("replies");
        assert!(n > 0, "closed after {lines} replies");
        for &b in &buf[..n] {
            last.push(b);
            if b == b'\n' {
                lines += 1;
                if lines < N {
                    last.clear();
                }
            }
        }
    }
    assert_eq!(last, format!(":{N}\r\n").as_bytes(), "the last reply");
}

#[test]
fn random_picks_past_the_hard_limit_close_the_client_before_a_byte_of_the_reply() {
    // As Redis: the reply of a negative count stops growing once the client is to close,
    // and none of it goes out (Redis's own test client would otherwise read the header of
    // a reply of a billion picks and wait out the rest).
    let p = strata(&[]);
    let mut admin = RespConn::new(&p);
    call_text(&mut admin, &["HSET", "h", "f", "v"]);
    call_text(&mut admin, &["SADD", "s", "m"]);
    call_text(&mut admin, &["ZADD", "z", "1", "m"]);
    call_text(
        &mut admin,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 100000 0 0",
        ],
    );
    for cmd in ["HRANDFIELD h", "SRANDMEMBER s", "ZRANDMEMBER z"] {
        let mut c = p.raw();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let started = Instant::now();
        c.write_all(format!("{cmd} -999999999\r\n").as_bytes())
            .unwrap();
        let got = read_to_close(&mut c);
        assert!(got.is_empty(), "{cmd}: {} bytes came", got.len());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{cmd}: closed at once"
        );
    }
    assert!(output_limit_logged(&p));
}

#[test]
fn tracking_prefixes_count_in_a_clients_memory() {
    // Each BCAST prefix is part of what maxmemory-clients weighs, as in Redis: a client
    // that adds them one by one is evicted.
    let (p, mut admin) = configured("maxmemory-clients", "200000");
    let mut c = named(&p, "prefixes");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut evicted_after = None;
    for j in 0..20_000 {
        let cmd = format!("CLIENT TRACKING on PREFIX {j:012} BCAST\r\n");
        let mut ok = [0u8; 5];
        if c.write_all(cmd.as_bytes()).is_err() || c.read_exact(&mut ok).is_err() {
            evicted_after = Some(j);
            break;
        }
        assert_eq!(&ok, b"+OK\r\n");
    }
    let j = evicted_after.expect("evicted before 20,000 prefixes");
    assert!(j > 100, "evicted only after its prefixes grew: {j}");
    assert!(info_num(&mut admin, "stats", "evicted_clients") >= 1);
    assert!(client_fields(&mut admin, "prefixes").is_none());
}

#[test]
fn a_subscriber_that_stops_reading_is_closed_at_the_pubsub_limit() {
    let (p, mut admin) = configured("client-output-buffer-limit", "pubsub 256kb 0 0");
    let mut sub = named(&p, "sub");
    sub.write_all(b"SUBSCRIBE ch\r\n").unwrap();
    let mut ack = [0u8; 31];
    sub.read_exact(&mut ack).unwrap();
    let message = "m".repeat(10_000);
    let (mut published, mut last_omem) = (0, 0);
    assert!(
        within(20, || {
            call_text(&mut admin, &["PUBLISH", "ch", &message]);
            published += 1;
            match client_fields(&mut admin, "sub") {
                Some(f) => {
                    last_omem = field(&f, "omem");
                    false
                }
                None => true,
            }
        }),
        "a subscriber that reads nothing is closed"
    );
    // It got no more than the socket buffers held plus the limit.
    assert!(published > 25, "closed after {published} messages");
    // CLIENT LIST showed the messages waiting for it as omem, up to near the limit.
    assert!(
        (128 << 10..256 << 10).contains(&last_omem),
        "omem {last_omem} before it was closed"
    );
}

#[test]
fn the_query_buffer_limit_cuts_an_endless_bulk_and_says_so() {
    let (p, mut admin) = configured("client-query-buffer-limit", "1mb");
    let mut endless = named(&p, "endless");
    endless
        .write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000000\r\n")
        .unwrap();
    endless.write_all(&vec![b'x'; 600_000]).unwrap();
    assert!(
        within(5, || client_fields(&mut admin, "endless")
            .is_some_and(|f| field(&f, "qbuf") >= 600_000)),
        "CLIENT LIST shows the partial command in qbuf"
    );
    let f = client_fields(&mut admin, "endless").unwrap();
    assert!(field(&f, "tot-mem") >= field(&f, "qbuf") + field(&f, "qbuf-free"));
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..64 {
        if endless.write_all(&chunk).is_err() {
            break;
        }
    }
    assert!(within(5, || client_fields(&mut admin, "endless").is_none()));
    assert!(within(5, || logged(
        &p,
        "Closing client that reached max query buffer length"
    )));
    let line = p
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("max query buffer length"))
        .cloned()
        .unwrap();
    assert!(
        line.contains(r#"qbuf initial bytes: "*3\r\n$3\r\nSET"#),
        "{line}"
    );
}

#[test]
fn proto_max_bulk_len_refuses_a_longer_bulk_as_redis_does() {
    let answer = |p: &Proc| {
        let mut admin = RespConn::new(p);
        call_text(&mut admin, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
        let mut s = p.raw();
        s.write_all(b"*2\r\n$3\r\nGET\r\n$2000000\r\n").unwrap();
        String::from_utf8_lossy(&read_to_close(&mut s)).to_string()
    };
    let want = answer(&common::redis(&[]));
    let got = answer(&strata(&[]));
    assert!(want.starts_with("-ERR Protocol error"), "{want}");
    assert_eq!(got, want);
}

#[test]
fn timeout_closes_idle_clients_but_not_blocked_or_subscribed_ones() {
    let p = strata(&[]);
    let mut admin = RespConn::new(&p);
    let mut idle = named(&p, "idle");
    let mut sub = named(&p, "subscriber");
    sub.write_all(b"SUBSCRIBE ch\r\n").unwrap();
    let mut ack = [0u8; 31];
    sub.read_exact(&mut ack).unwrap();
    let mut blocked = named(&p, "blocked");
    blocked.write_all(b"BLPOP nokey 0\r\n").unwrap();
    common::wait_blocked(&mut admin, 1);
    call_text(&mut admin, &["CONFIG", "SET", "timeout", "1"]);
    assert!(
        within(6, || client_fields(&mut admin, "idle").is_none()),
        "an idle client is closed after the timeout"
    );
    assert!(read_to_close(&mut idle).is_empty());
    assert!(
        client_fields(&mut admin, "subscriber").is_some(),
        "subscribers are spared"
    );
    let b = client_fields(&mut admin, "blocked").expect("blocked clients are spared");
    assert!(field(&b, "idle") >= 2, "{b:?}");
    // Its held arguments show as argv-mem: BLPOP nokey 0.
    assert_eq!(field(&b, "argv-mem"), 5 + 5 + 1);
    // Own CLIENT INFO: the command in the query buffer and its arguments, as Redis.
    let own = call_text(&mut admin, &["CLIENT", "INFO"]);
    assert!(own.contains(" qbuf=26 "), "{own}");
    assert!(own.contains(" argv-mem=10 "), "{own}");
}

#[test]
fn maxmemory_clients_evicts_the_biggest_clients_but_not_no_evict_ones() {
    let p = strata(&[]);
    let mut admin = RespConn::new(&p);
    let partial = |s: &mut TcpStream, n: usize| {
        s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000000\r\n")
            .unwrap();
        s.write_all(&vec![b'x'; n]).unwrap();
    };
    let mut keep = named(&p, "keep");
    keep.write_all(b"CLIENT NO-EVICT on\r\n").unwrap();
    let mut ok = [0u8; 5];
    keep.read_exact(&mut ok).unwrap();
    partial(&mut keep, 3 << 20);
    let mut big = named(&p, "big");
    partial(&mut big, 2 << 20);
    let mut small = named(&p, "small");
    partial(&mut small, 1 << 20);
    let tot = |admin: &mut RespConn, name: &str| {
        client_fields(admin, name).map_or(0, |f| field(&f, "tot-mem"))
    };
    assert!(within(5, || tot(&mut admin, "keep") >= 3 << 20
        && tot(&mut admin, "big") >= 2 << 20
        && tot(&mut admin, "small") >= 1 << 20));
    let sum: u64 = ["keep", "big", "small"]
        .iter()
        .map(|n| tot(&mut admin, n))
        .sum();
    // Room for all but `big`: it goes, the bigger no-evict client stays, and so does
    // `small` once the total fits.
    let limit = sum - (1 << 20);
    call_text(
        &mut admin,
        &["CONFIG", "SET", "maxmemory-clients", &limit.to_string()],
    );
    // At once, as Redis evicts before its next command (not at the next cron pass).
    assert!(client_fields(&mut admin, "big").is_none(), "evicted");
    assert!(
        client_fields(&mut admin, "keep").is_some(),
        "no-evict clients stay"
    );
    assert!(
        client_fields(&mut admin, "small").is_some(),
        "evicted only until it fits"
    );
    assert_eq!(info_num(&mut admin, "stats", "evicted_clients"), 1);
    // A client that grows past the limit is evicted as it reads.
    small.write_all(&vec![b'x'; 3 << 20]).unwrap();
    assert!(within(5, || client_fields(&mut admin, "small").is_none()));
    assert_eq!(info_num(&mut admin, "stats", "evicted_clients"), 2);
    // The peaks are sampled once a second, as Redis's clientsCron does: the test may get
    // here before the first sample (under load, CI did); `keep` still holds its buffer.
    let recent =
        |admin: &mut RespConn| info_num(admin, "clients", "client_recent_max_input_buffer");
    assert!(
        within(5, || recent(&mut admin) >= 3 << 20),
        "INFO saw the big query buffers: {}",
        recent(&mut admin)
    );
}

#[test]
fn tcp_backlog_is_the_listen_queue_length() {
    let p = strata(&["--tcp-backlog", "37"]);
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{}", p.port)])
        .output()
        .expect("ss (Debian's iproute2) is required");
    let text = String::from_utf8_lossy(&out.stdout);
    // State Recv-Q Send-Q Local Peer: for a listener, Send-Q is the backlog.
    let send_q: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert_eq!(send_q, ["37"], "{text}");
}

/// The server side of the connection from local port `client`: its timer field in
/// /proc/net/tcp ("tr:when", tr 02 being the keepalive timer, `when` in clock ticks).
fn server_side_timer(server: u16, client: u16) -> String {
    let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next().unwrap_or(""), 16).ok();
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp (Linux)");
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 5 && port(f[1]) == Some(server) && port(f[2]) == Some(client))
        .map(|f| f[5].to_string())
        .unwrap_or_else(|| panic!("no connection {server} <- {client} in {table}"))
}

#[test]
fn tcp_keepalive_probes_idle_client_connections() {
    let p = strata(&["--tcp-keepalive", "60"]);
    let connect = || {
        let mut s = TcpStream::connect(("127.0.0.1", p.port)).unwrap();
        s.write_all(b"PING\r\n").unwrap();
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"+PONG\r\n");
        s
    };
    let s = connect();
    let timer = server_side_timer(p.port, s.local_addr().unwrap().port());
    let (kind, when) = timer.split_once(':').unwrap();
    assert_eq!(kind, "02", "no keepalive timer: {timer}");
    // The first probe is due about 60 s from now (in USER_HZ ticks, 100 a second).
    let ticks = u64::from_str_radix(when, 16).unwrap();
    assert!((50 * 100..=60 * 100).contains(&ticks), "{timer}");
    // 0 turns it off for connections accepted after the change.
    let mut admin = connect();
    admin.write_all(b"CONFIG SET tcp-keepalive 0\r\n").unwrap();
    let mut ok = [0u8; 5];
    admin.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"+OK\r\n");
    let later = connect();
    let timer = server_side_timer(p.port, later.local_addr().unwrap().port());
    assert!(timer.starts_with("00:"), "{timer}");
}

#[test]
fn reply_buffers_shrink_while_idle_grow_back_while_full_and_give_back_large_replies() {
    let p = strata(&["--enable-debug-command", "yes"]);
    let mut admin = RespConn::new(&p);
    call_text(
        &mut admin,
        &["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"],
    );
    let mut c = named(&p, "c");
    let rbs = |admin: &mut RespConn| field(&client_fields(admin, "c").unwrap(), "rbs");
    assert!(
        within(3, || rbs(&mut admin) == 1024),
        "an idle client's buffer shrinks to 1 KiB: {}",
        rbs(&mut admin)
    );
    call_text(&mut admin, &["SET", "big", &"x".repeat(1 << 20)]);
    let get_big = |c: &mut TcpStream| {
        c.write_all(b"GET big\r\n").unwrap();
        let mut reply = vec![0u8; (1 << 20) + 12];
        c.read_exact(&mut reply).unwrap();
        assert!(reply.starts_with(b"$1048576\r\n"));
    };
    let mut seen = vec![rbs(&mut admin)];
    assert!(within(5, || {
        get_big(&mut c);
        let now = rbs(&mut admin);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        now == 16384
    }));
    assert_eq!(seen, [1024, 2048, 4096, 8192, 16384], "it doubles");
    // The 1 MiB reply's buffer is not kept once the client is idle again.
    let tot = |admin: &mut RespConn| field(&client_fields(admin, "c").unwrap(), "tot-mem");
    assert!(
        within(3, || tot(&mut admin) < 256 * 1024),
        "tot-mem stays at {}",
        tot(&mut admin)
    );
    assert!(info_num(&mut admin, "stats", "reply_buffer_shrinks") >= 1);
    assert_eq!(info_num(&mut admin, "stats", "reply_buffer_expands"), 4);
}
