//! INFO latencystats and the per-command statistics, against redis-server (run at test
//! time) after the same commands: which commands have a latency line and with which
//! percentiles (`latency-tracking`, `latency-tracking-info-percentiles`), DEBUG counted as
//! one command, and a blocked command ended by CLIENT UNBLOCK ERROR counted as failed.

mod common;

use common::{call_text, read_text, redis, send_only, strata, wait_blocked, Proc, RespConn};

/// The INFO lines of `section` with the given prefix, each cut to its name and the names
/// of its fields (timings differ from server to server; what is measured must not).
fn shape(c: &mut RespConn, section: &str, prefix: &str) -> Vec<String> {
    let info = call_text(c, &["INFO", section]);
    let mut lines: Vec<String> = info
        .split("\\r\\n")
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            let (name, fields) = l.split_once(':').unwrap_or((l, ""));
            let labels: Vec<&str> = fields
                .split(',')
                .map(|f| f.split('=').next().unwrap_or(f))
                .collect();
            format!("{name}:{}", labels.join(","))
        })
        .collect();
    lines.sort();
    lines
}

/// A field of one INFO line, as a number (`calls` of `cmdstat_set`, `p50` of
/// `latency_percentiles_usec_debug`).
fn stat(c: &mut RespConn, section: &str, line: &str, field: &str) -> f64 {
    let info = call_text(c, &["INFO", section]);
    info.split("\\r\\n")
        .find_map(|l| l.strip_prefix(&format!("{line}:")))
        .and_then(|fields| {
            fields
                .split(',')
                .find_map(|f| f.strip_prefix(&format!("{field}=")))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {line} of {info}"))
}

fn servers() -> (Proc, Proc) {
    let debug = ["--enable-debug-command", "yes"];
    (strata(&debug), redis(&debug))
}

#[test]
fn latency_lines_follow_the_tracking_settings_as_in_redis() {
    let (s, r) = servers();
    let cases: &[&[&[&str]]] = &[
        &[&["SET", "a", "b"], &["GET", "a"], &["CLIENT", "ID"]],
        &[
            &[
                "CONFIG",
                "SET",
                "latency-tracking-info-percentiles",
                "0 50 100",
            ],
            &["SET", "a", "b"],
        ],
        &[
            &["CONFIG", "SET", "latency-tracking-info-percentiles", "99.9"],
            &["DEBUG", "SLEEP", "0"],
            &["GET", "a"],
        ],
        &[
            &["CONFIG", "SET", "latency-tracking", "no"],
            &["SET", "a", "b"],
            &["GET", "a"],
        ],
        &[
            &["CONFIG", "SET", "latency-tracking", "yes"],
            &[
                "CONFIG",
                "SET",
                "latency-tracking-info-percentiles",
                "50 99 99.9",
            ],
            &["INCR", "n"],
        ],
    ];
    for (i, case) in cases.iter().enumerate() {
        let mut shapes = Vec::new();
        for p in [&s, &r] {
            let mut c = RespConn::new(p);
            assert_eq!(call_text(&mut c, &["CONFIG", "RESETSTAT"]), "+OK\\r\\n");
            for cmd in *case {
                let reply = call_text(&mut c, cmd);
                assert!(!reply.starts_with('-'), "case {i}, {cmd:?}: {reply}");
            }
            shapes.push((
                shape(&mut c, "latencystats", "latency_percentiles_usec_"),
                shape(&mut c, "commandstats", "cmdstat_"),
            ));
        }
        assert!(
            !shapes[1].1.is_empty(),
            "case {i}: redis-server counted nothing"
        );
        assert_eq!(shapes[0], shapes[1], "case {i}: Strata, then redis-server");
    }
}

#[test]
fn latency_percentiles_bound_the_runs_they_describe() {
    // As Redis's own suite checks: a 50 ms DEBUG SLEEP's median is at least 50,000 µs
    // and at least a SET's.
    let (s, r) = servers();
    for p in [&s, &r] {
        let mut c = RespConn::new(p);
        call_text(&mut c, &["CONFIG", "RESETSTAT"]);
        call_text(&mut c, &["DEBUG", "SLEEP", "0.05"]);
        call_text(&mut c, &["SET", "k", "v"]);
        let debug = stat(
            &mut c,
            "latencystats",
            "latency_percentiles_usec_debug",
            "p50",
        );
        let set = stat(
            &mut c,
            "latencystats",
            "latency_percentiles_usec_set",
            "p50",
        );
        assert!(
            debug >= 50_000.0 && debug >= set,
            "{}: {debug} {set}",
            p.name
        );
        assert!(debug < 200_000.0, "{}: {debug}", p.name);
    }
}

#[test]
fn a_blocked_command_unblocked_with_an_error_counts_as_failed() {
    let (s, r) = servers();
    for p in [&s, &r] {
        let mut c = RespConn::new(p);
        call_text(&mut c, &["CONFIG", "RESETSTAT"]);
        let mut waiter = send_only(p, &["CLIENT", "ID"]);
        let id = read_text(&mut waiter);
        let id = id.trim_start_matches(':').trim_end_matches("\\r\\n");
        waiter
            .send(&common::encode_command(&["BLPOP", "nothing", "0"]))
            .unwrap();
        wait_blocked(&mut c, 1);
        call_text(&mut c, &["CLIENT", "UNBLOCK", id, "ERROR"]);
        let reply = read_text(&mut waiter);
        assert!(reply.starts_with("-UNBLOCKED"), "{}: {reply}", p.name);
        let failed = stat(&mut c, "commandstats", "cmdstat_blpop", "failed_calls");
        let calls = stat(&mut c, "commandstats", "cmdstat_blpop", "calls");
        assert_eq!((calls, failed), (1.0, 1.0), "{}", p.name);
        let unblocked = stat(&mut c, "errorstats", "errorstat_UNBLOCKED", "count");
        assert_eq!(unblocked, 1.0, "{}", p.name);
    }
}
