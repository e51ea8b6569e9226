//! INFO errorstats, total_error_replies and commandstats' rejected and failed calls after
//! scripts that fail, call failing commands or return errors, compared with redis-server
//! (run at test time) after the same commands.

mod common;

use common::{call_text, redis, strata, RespConn};

/// The error statistics: every errorstat line, total_error_replies, and each command's
/// calls, rejected and failed counts (its timings left out).
fn error_stats(c: &mut RespConn) -> Vec<String> {
    let mut lines = Vec::new();
    for section in ["errorstats", "stats", "commandstats"] {
        let info = call_text(c, &["INFO", section]);
        for line in info.split("\\r\\n") {
            if line.starts_with("errorstat_") || line.starts_with("total_error_replies:") {
                lines.push(line.to_string());
            } else if line.starts_with("cmdstat_") {
                let kept: Vec<&str> = line.split(',').filter(|f| !f.starts_with("usec")).collect();
                lines.push(kept.join(","));
            }
        }
    }
    lines.sort();
    lines
}

/// Runs each case (its commands after CONFIG RESETSTAT) on both servers and compares the
/// replies and the statistics after each case.
fn compare(cases: &[&[&[&str]]]) {
    let s = strata(&[]);
    let r = redis(&[]);
    let mut sc = RespConn::new(&s);
    let mut rc = RespConn::new(&r);
    for (i, case) in cases.iter().enumerate() {
        for c in [&mut sc, &mut rc] {
            assert_eq!(call_text(c, &["CONFIG", "RESETSTAT"]), "+OK\\r\\n");
        }
        for cmd in *case {
            let got = call_text(&mut sc, cmd);
            let want = call_text(&mut rc, cmd);
            assert_eq!(got, want, "case {i}: reply to {cmd:?}");
        }
        let (got, want) = (error_stats(&mut sc), error_stats(&mut rc));
        assert!(
            want.iter().any(|l| l.starts_with("total_error_replies:")),
            "case {i}: redis-server's INFO has total_error_replies"
        );
        assert_eq!(got, want, "case {i}: error statistics");
    }
}

#[test]
fn script_errors_count_as_in_redis() {
    const OOM_CALL: &str = "return redis.call('set','x','y')";
    const OOM_PCALL: &str = "local t = redis.pcall('set','x','y') \
        if t['err'] == \"OOM command not allowed when used memory > 'maxmemory'.\" \
        then return 1 else return 0 end";
    compare(&[
        // A call refused for memory, raised, trapped by pcall, or returned.
        &[
            &["CONFIG", "SET", "maxmemory", "1"],
            &["EVAL", OOM_CALL, "1", "x"],
        ],
        &[&["EVAL", OOM_PCALL, "1", "x"]],
        &[&["EVAL", "return redis.pcall('set','x','y')", "1", "x"]],
        // A refused call, then an error of the script's own in one reply.
        &[&[
            "EVAL",
            "return {redis.pcall('set','x','y'), {redis.error_reply('DEEP e')}}",
            "1",
            "x",
        ]],
        // A failing command, raised and trapped.
        &[
            &["CONFIG", "SET", "maxmemory", "0"],
            &["EVAL", "return redis.call('select',99)", "0"],
        ],
        &[&["EVAL", "return redis.pcall('select',99)['err']", "0"]],
        // A write refused to a read-only script.
        &[&["EVAL_RO", OOM_CALL, "1", "x"]],
        &[&["EVAL_RO", "return redis.pcall('set','x','y')", "1", "x"]],
        // The script's own errors: error_reply with and without a code, or empty.
        &[&[
            "EVAL",
            "return redis.error_reply('MY_ERR_CODE custom msg')",
            "0",
        ]],
        &[&["EVAL", "return redis.error_reply('')", "0"]],
        &[&["EVAL", "return redis.error_reply('nospace')", "0"]],
        &[&[
            "EVAL",
            "return redis.error_reply('A_CODE_LONGER_THAN_THIRTY_TWO_BYTES x')",
            "0",
        ]],
        &[&["EVAL", "return redis.status_reply('MY_OK')", "0"]],
        // Unknown command, wrong argument count, bad arguments, a Lua error.
        &[&["EVAL", "return redis.call('nosuch')", "0"]],
        &[&["EVAL", "return redis.call('get')", "0"]],
        &[&["EVAL", "return redis.call('ping', {})", "0"]],
        &[&["EVAL", "return foo.bar", "0"]],
        // Errors before any script runs.
        &[&["EVAL", "return +", "0"]],
        &[&["EVALSHA", "0123456789012345678901234567890123456789", "0"]],
        &[&["FCALL", "nosuch", "0"]],
        // A command of the wrong type failing inside a script, and outside.
        &[
            &["SET", "Sicily", "1"],
            &[
                "EVAL",
                "return redis.call('GEOADD', 'Sicily', '13.36', '38.11', 'Palermo')",
                "1",
                "Sicily",
            ],
            &["GET"],
            &["CONFIG", "GET"],
        ],
    ]);
}
