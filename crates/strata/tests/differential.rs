//! Differential tests: the same commands go to Debian's redis-server and to Strata, and the
//! raw reply bytes must be equal.
//!
//! `diff_files` runs every `tests/diff/*.txt` file. One line is one command, split with
//! redis-cli's quoting rules ("double quotes" with `\n \r \t \" \\ \xHH`, 'single quotes').
//! Directives:
//!
//! - `# ...`            a comment; blank lines are ignored too
//! - `!sort <cmd>`      sort the elements of an aggregate reply (a map's pairs) first
//! - `!approx <cmd>`    integers (also inside aggregates) may differ by 1, or by 1% of the
//!   larger (a PTTL in milliseconds)
//! - `!ms <cmd>`        integers are milliseconds since an earlier command (idle times of
//!   stream consumers and pending entries): they may differ by 100, or by 1% of the larger,
//!   as the servers run each line a moment apart on a machine that may be loaded
//! - `!any <cmd>`       only the reply's type must match
//! - `!sleep N`         sleep N milliseconds
//! - `!resp3`, `!resp2` HELLO 3 / HELLO 2 on both connections; HELLO's reply is compared
//!   by type only, since server name, version and client id differ
//!
//! A `TTL` whose replies are positive on both sides may differ by 1 without a directive:
//! the two servers run each line one after the other, so a second's rounding boundary can
//! fall between them on a loaded machine.
//!
//! Each file runs on fresh connections after FLUSHALL and SELECT 0, so protocol, database
//! and client state never leak from one file into the next; server-wide state (CONFIG SET)
//! does, so a file that changes it must restore it. A command must produce exactly one
//! reply (no SUBSCRIBE, no CLIENT REPLY OFF). Deliberate differences are listed in
//! `tests/diff/ALLOWED.md` as ``- `<exact line>` — reason``: such a line is still sent to
//! both servers but its replies are not compared. All mismatches are reported at once, as
//! `file:line`, the command and both replies.
//!
//! `DIFF_ONLY=strings,keys cargo test --test differential` runs only files whose name
//! contains one of the words.
//!
//! `diff_random_strings` is a property test: random sequences of string and key commands
//! over five keys run on both servers with every reply compared. `PROPTEST_CASES`
//! overrides the number of cases (default 200).

mod common;
mod diff_common;

use common::{encode_command, quote_arg, split_args, Proc, RawReply};
use diff_common::{both_positive_within_one, matching, same, shown, Mode, Pair};
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestError, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn diff_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/diff")
}

/// One step of a test file.
#[derive(Debug)]
enum Step {
    Command { mode: Mode, args: Vec<Vec<u8>> },
    Sleep(u64),
    Hello(u8),
}

#[derive(Debug)]
struct Line {
    no: usize,
    text: String,
    step: Step,
}

fn parse_file(path: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fail = |msg: &str| format!("{name}:{no}: {msg}: {t}");
        let (directive, rest) = match t.strip_prefix('!') {
            Some(d) => {
                let (d, rest) = d.split_once(char::is_whitespace).unwrap_or((d, ""));
                (Some(d), rest.trim())
            }
            None => (None, t),
        };
        let mode = match directive {
            None => Mode::Exact,
            Some("sort") => Mode::Sort,
            Some("approx") => Mode::Approx,
            Some("ms") => Mode::Ms,
            Some("any") => Mode::Any,
            Some("sleep") => {
                let ms = rest
                    .parse()
                    .map_err(|_| fail("!sleep needs milliseconds"))?;
                lines.push(Line {
                    no,
                    text: t.to_string(),
                    step: Step::Sleep(ms),
                });
                continue;
            }
            Some(d @ ("resp2" | "resp3")) if rest.is_empty() => {
                let v = if d == "resp3" { 3 } else { 2 };
                lines.push(Line {
                    no,
                    text: t.to_string(),
                    step: Step::Hello(v),
                });
                continue;
            }
            Some(_) => return Err(fail("unknown directive")),
        };
        let args = split_args(rest).ok_or_else(|| fail("unbalanced quotes"))?;
        if args.is_empty() {
            return Err(fail("directive without a command"));
        }
        lines.push(Line {
            no,
            text: t.to_string(),
            step: Step::Command { mode, args },
        });
    }
    Ok(lines)
}

/// Reads `ALLOWED.md`: lines ``- `<exact command line>` — reason``.
fn allowed() -> Result<BTreeMap<String, String>, String> {
    let path = diff_dir().join("ALLOWED.md");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        // Entries start at column 0; an indented example is not one.
        let Some(rest) = line.trim_end().strip_prefix("- `") else {
            continue;
        };
        let bad = || {
            format!(
                "ALLOWED.md:{}: expected ``- `<command line>` — reason``: {line}",
                i + 1
            )
        };
        let end = rest.rfind('`').ok_or_else(bad)?;
        let (cmd, reason) = (&rest[..end], rest[end + 1..].trim());
        let reason = reason.trim_start_matches(['—', '-', '–', ':']).trim();
        if cmd.trim().is_empty() || reason.is_empty() {
            return Err(bad());
        }
        out.insert(cmd.trim().to_string(), reason.to_string());
    }
    Ok(out)
}

fn is_allowed(allow: &BTreeMap<String, String>, line: &Line) -> Option<String> {
    if let Some(k) = allow.get_key_value(&line.text) {
        return Some(k.0.clone());
    }
    // Also match the command without its directive.
    let cmd = line
        .text
        .strip_prefix('!')
        .and_then(|d| d.split_once(char::is_whitespace))
        .map(|(_, c)| c.trim());
    cmd.and_then(|c| allow.get_key_value(c))
        .map(|k| k.0.clone())
}

/// Runs one file; returns its mismatches as report entries and counts.
fn run_file(
    redis: &Proc,
    strata: &Proc,
    name: &str,
    lines: &[Line],
    allow: &BTreeMap<String, String>,
    used: &mut Vec<String>,
    stats: &mut (usize, usize),
) -> Vec<String> {
    let mut report = Vec::new();
    let mut pair = Pair::new(redis, strata);
    for setup in [&["FLUSHALL"][..], &["SELECT", "0"][..]] {
        let (a, b) = (pair.redis.call(setup), pair.strata.call(setup));
        if shown(&a) != shown(&b) {
            report.push(format!(
                "{name}: setup `{}`\n    redis:  {}\n    strata: {}",
                setup.join(" "),
                shown(&a),
                shown(&b)
            ));
        }
    }
    for line in lines {
        let (mode, args): (Mode, Vec<Vec<u8>>) = match &line.step {
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                continue;
            }
            Step::Hello(v) => (
                Mode::Any,
                vec![b"HELLO".to_vec(), v.to_string().into_bytes()],
            ),
            Step::Command { mode, args } => (*mode, args.clone()),
        };
        let req = encode_command(&args);
        let a = pair.redis.send(&req).and_then(|_| pair.redis.read());
        let b = pair.strata.send(&req).and_then(|_| pair.strata.read());
        stats.0 += 1;
        let allowed = is_allowed(allow, line);
        if let Some(k) = &allowed {
            used.push(k.clone());
            stats.1 += 1;
        }
        let equal = match (&a, &b) {
            (Ok(x), Ok(y)) => matching(mode, args.first().map_or(&[][..], |n| n), x, y),
            _ => false,
        };
        if !equal && allowed.is_none() {
            let how = match mode {
                Mode::Exact => "",
                Mode::Sort => " (sorted)",
                Mode::Approx => " (integers ±1)",
                Mode::Ms => " (milliseconds ±100)",
                Mode::Any => " (type only)",
            };
            report.push(format!(
                "{name}:{}: {}{how}\n    redis:  {}\n    strata: {}",
                line.no,
                line.text,
                shown(&a),
                shown(&b)
            ));
        }
        if a.is_err() || b.is_err() {
            // A lost connection (or a reply we could not read) leaves the two sides out of
            // step: start both again on fresh connections, in RESP2 and db 0.
            report.push(format!(
                "{name}:{}: reconnecting both sides (state reset)",
                line.no
            ));
            pair = Pair::new(redis, strata);
        }
    }
    report
}

fn selected(name: &str) -> bool {
    match std::env::var("DIFF_ONLY") {
        Ok(only) if !only.trim().is_empty() => only
            .split([',', ' '])
            .any(|w| !w.is_empty() && name.contains(w)),
        _ => true,
    }
}

#[test]
fn diff_files() {
    let dir = diff_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("differential test files missing: {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no differential test files (*.txt) in {}: a differential test that runs nothing is a defect",
        dir.display()
    );
    files.retain(|p| selected(&p.file_name().unwrap().to_string_lossy()));
    assert!(
        !files.is_empty(),
        "DIFF_ONLY={:?} matches no file in {}",
        std::env::var("DIFF_ONLY"),
        dir.display()
    );

    // Parse everything first: a malformed file fails before any server starts.
    let allow = allowed().unwrap_or_else(|e| panic!("{e}"));
    let parsed: Vec<(String, Vec<Line>)> = files
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                parse_file(p).unwrap_or_else(|e| panic!("{e}")),
            )
        })
        .collect();

    // DEBUG is refused unless enabled (tests/diff/debug.txt needs it).
    let redis = common::redis(&["--enable-debug-command", "yes"]);
    let strata = common::strata(&["--enable-debug-command", "yes"]);
    let mut used = Vec::new();
    let mut failed = Vec::new();
    let mut report = String::new();
    let mut stats = (0, 0);
    for (name, lines) in &parsed {
        let r = run_file(&redis, &strata, name, lines, &allow, &mut used, &mut stats);
        if !r.is_empty() {
            let n = r.iter().filter(|m| !m.ends_with("(state reset)")).count();
            failed.push(format!("{name} ({n})"));
            writeln!(report, "==== {name}: {n} mismatches").unwrap();
            for m in r {
                writeln!(report, "{m}").unwrap();
            }
        }
    }
    eprintln!(
        "differential: {} files, {} commands compared, {} skipped by ALLOWED.md",
        parsed.len(),
        stats.0,
        stats.1
    );
    if std::env::var("DIFF_ONLY").is_err() {
        for k in allow.keys().filter(|k| !used.contains(k)) {
            eprintln!("note: ALLOWED.md entry matches no line of any file: `{k}`");
        }
    }
    if !failed.is_empty() {
        eprintln!("{report}");
        panic!(
            "differential mismatches against redis-server in: {}",
            failed.join(", ")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Random sequences of string and key commands.

const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_string)
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-c0-9]{0,4}",
        // Around the 19 bytes a short key and its value may take inline (crate::inline in
        // the engine): a key's string moves between the shard's two tables.
        1 => "[a-c0-9]{15,22}",
        2 => prop::sample::select(vec![
            "", "0", "1", "-1", "42", "10", "007", " 1", "3.5", "x y", "9223372036854775806",
            "9223372036854775807", "-9223372036854775808", "hello",
        ])
        .prop_map(str::to_string),
    ]
}

fn int_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (-200i64..200).prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec!["9223372036854775807", "-9223372036854775808", "abc", "1.5", ""])
            .prop_map(str::to_string),
    ]
}

/// Expiry times far enough away that TTL is the same on both servers.
fn big_secs() -> impl Strategy<Value = String> {
    (100_000i64..200_000).prop_map(|n| n.to_string())
}

fn set_cmd() -> impl Strategy<Value = Vec<String>> {
    let expiry = prop_oneof![
        4 => Just(vec![]),
        2 => big_secs().prop_map(|s| vec!["EX".to_string(), s]),
        2 => big_secs().prop_map(|s| vec!["PX".to_string(), format!("{s}000")]),
        1 => Just(vec!["KEEPTTL".to_string()]),
        1 => prop::sample::select(vec![
            vec!["EX", "0"], vec!["PX", "-5"], vec!["EX", "abc"], vec!["EX"], vec!["EX", "10", "KEEPTTL"],
        ])
        .prop_map(|v| v.into_iter().map(str::to_string).collect()),
    ];
    let cond = prop::sample::select(vec![
        vec![],
        vec![],
        vec!["NX"],
        vec!["XX"],
        vec!["NX", "XX"],
    ]);
    // Option groups (`EX 100` stays together) in random order, as clients may send them.
    (key(), value(), expiry, cond, prop::bool::weighted(0.3)).prop_flat_map(
        |(k, v, exp, cond, get)| {
            let mut groups: Vec<Vec<String>> =
                cond.into_iter().map(|c| vec![c.to_string()]).collect();
            if !exp.is_empty() {
                groups.push(exp);
            }
            if get {
                groups.push(vec!["GET".to_string()]);
            }
            Just(groups).prop_shuffle().prop_map(move |groups| {
                let mut c = vec!["SET".to_string(), k.clone(), v.clone()];
                c.extend(groups.into_iter().flatten());
                c
            })
        },
    )
}

fn keys(min: usize, max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(key(), min..=max)
}

fn with(name: &'static str, rest: Vec<String>) -> Vec<String> {
    std::iter::once(name.to_string()).chain(rest).collect()
}

fn command() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        6 => set_cmd(),
        4 => key().prop_map(|k| with("GET", vec![k])),
        2 => keys(1, 3).prop_map(|k| with("DEL", k)),
        2 => keys(1, 3).prop_map(|k| with("EXISTS", k)),
        2 => (key(), value()).prop_map(|(k, v)| with("APPEND", vec![k, v])),
        2 => key().prop_map(|k| with("INCR", vec![k])),
        2 => (key(), int_arg()).prop_map(|(k, n)| with("INCRBY", vec![k, n])),
        1 => key().prop_map(|k| with("DECR", vec![k])),
        1 => key().prop_map(|k| with("STRLEN", vec![k])),
        2 => (key(), -12i64..12, -12i64..12)
            .prop_map(|(k, s, e)| with("GETRANGE", vec![k, s.to_string(), e.to_string()])),
        2 => (key(), -1i64..12, value()).prop_map(|(k, o, v)| with("SETRANGE", vec![k, o.to_string(), v])),
        2 => (prop::collection::vec((key(), value()), 1..=3), prop::bool::weighted(0.05)).prop_map(|(kv, odd)| {
            let mut a: Vec<String> = kv.into_iter().flat_map(|(k, v)| [k, v]).collect();
            if odd {
                a.pop();
            }
            with("MSET", a)
        }),
        2 => keys(1, 3).prop_map(|k| with("MGET", k)),
        1 => key().prop_map(|k| with("GETDEL", vec![k])),
        1 => (key(), key()).prop_map(|(a, b)| with("RENAME", vec![a, b])),
        2 => key().prop_map(|k| with("TTL", vec![k])),
        1 => key().prop_map(|k| with("PERSIST", vec![k])),
        2 => (key(), prop_oneof![4 => big_secs(), 1 => Just("0".to_string()), 1 => Just("-1".to_string())])
            .prop_map(|(k, s)| with("EXPIRE", vec![k, s])),
        1 => key().prop_map(|k| with("TYPE", vec![k])),
    ]
}

fn show_cmd(c: &[String]) -> String {
    c.iter()
        .map(|a| quote_arg(a.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn diff_random_strings() {
    let cases = common::proptest_cases(200);
    let redis = common::redis(&[]);
    let strata = common::strata(&[]);
    let pair = RefCell::new(Pair::new(&redis, &strata));
    // Command names that mismatched in any run (shrinking included), with one example.
    let seen: RefCell<BTreeMap<String, String>> = RefCell::new(BTreeMap::new());
    let config = PtConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4000,
        ..PtConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = prop::collection::vec(command(), 1..=30);
    let result = runner.run(&strategy, |cmds| {
        let mut p = pair.borrow_mut();
        let flushed = [p.redis.call(&["FLUSHALL"]), p.strata.call(&["FLUSHALL"])];
        for (name, r) in ["redis", "strata"].iter().zip(&flushed) {
            if !matches!(r, Ok(r) if r.raw == b"+OK\r\n") {
                *p = Pair::new(&redis, &strata);
                return Err(TestCaseError::fail(format!(
                    "FLUSHALL on {name}: {}",
                    shown(r)
                )));
            }
        }
        let mut history = String::new();
        for c in &cmds {
            let req = encode_command(c);
            let a = p.redis.send(&req).and_then(|_| p.redis.read());
            let b = p.strata.send(&req).and_then(|_| p.strata.read());
            writeln!(history, "  {:<40} -> {}", show_cmd(c), shown(&a)).unwrap();
            let equal =
                matches!((&a, &b), (Ok(x), Ok(y)) if matching(Mode::Exact, c[0].as_bytes(), x, y));
            if !equal {
                let msg = format!(
                    "{history}mismatch at `{}`\n    redis:  {}\n    strata: {}",
                    show_cmd(c),
                    shown(&a),
                    shown(&b)
                );
                seen.borrow_mut().entry(c[0].clone()).or_insert_with(|| {
                    format!("{}  redis {}  strata {}", show_cmd(c), shown(&a), shown(&b))
                });
                if a.is_err() || b.is_err() {
                    *p = Pair::new(&redis, &strata);
                }
                return Err(TestCaseError::fail(msg));
            }
        }
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, cmds)) => {
            let mut msg = String::new();
            writeln!(
                msg,
                "minimal failing sequence ({} commands), as redis-cli lines:",
                cmds.len()
            )
            .unwrap();
            for c in &cmds {
                writeln!(msg, "  {}", show_cmd(c)).unwrap();
            }
            writeln!(msg, "{why}").unwrap();
            writeln!(
                msg,
                "commands that mismatched during the run (one example each):"
            )
            .unwrap();
            for (name, ex) in seen.borrow().iter() {
                writeln!(msg, "  {name}: {ex}").unwrap();
            }
            panic!("random differential test failed\n{msg}");
        }
        Err(e) => panic!("random differential test: {e}"),
    }
}

// ---------------------------------------------------------------------------------------
// The runner's own pieces, checked without servers.

fn reply(bytes: &[u8]) -> RawReply {
    let mut r = bytes;
    let rep = common::read_reply(&mut r).unwrap_or_else(|e| panic!("{}: {e}", common::show(bytes)));
    assert!(
        r.is_empty(),
        "left over after one reply: {}",
        common::show(r)
    );
    rep
}

#[test]
fn runner_splits_like_redis_cli() {
    let s = |l: &str| {
        split_args(l).map(|v| {
            v.into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        s("SET a b"),
        Some(vec!["SET".into(), "a".into(), "b".into()])
    );
    assert_eq!(
        s("  SET  \"a b\"\t'c d' "),
        Some(vec!["SET".into(), "a b".into(), "c d".into()])
    );
    assert_eq!(
        s(r#"ECHO "\x41\n\t\"\\""#),
        Some(vec!["ECHO".into(), "A\n\t\"\\".into()])
    );
    assert_eq!(
        s(r"ECHO 'it\'s' '\n'"),
        Some(vec!["ECHO".into(), "it's".into(), "\\n".into()])
    );
    assert_eq!(s(r#"ECHO """#), Some(vec!["ECHO".into(), "".into()]));
    assert_eq!(s(r#"ECHO "\xzz""#), Some(vec!["ECHO".into(), "xzz".into()]));
    assert_eq!(s(r#"ECHO a"b c"d"#), None);
    assert_eq!(s(r#"ECHO "abc"#), None);
    assert_eq!(s("ECHO 'abc"), None);
    assert_eq!(split_args(r#""\xff\x00""#), Some(vec![vec![0xff, 0]]));
}

#[test]
fn runner_reads_every_reply_type() {
    for raw in [
        &b"+OK\r\n"[..],
        b"-ERR x\r\n",
        b":-12\r\n",
        b"$3\r\na\r\n\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
        b"_\r\n",
        b",3.14\r\n",
        b"#t\r\n",
        b"(3492890328409238509324850943850943825024385\r\n",
        b"!5\r\nSYNTX\r\n",
        b"=7\r\ntxt:abc\r\n",
        b"%1\r\n+k\r\n:1\r\n",
        b"~2\r\n+a\r\n+b\r\n",
        b">2\r\n+message\r\n+x\r\n",
        b"|1\r\n+ttl\r\n:3\r\n+OK\r\n",
    ] {
        assert_eq!(reply(raw).raw, raw);
    }
    assert_eq!(reply(b"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n").elems.len(), 4);
    assert_eq!(reply(b"|1\r\n+ttl\r\n:3\r\n*1\r\n+x\r\n").kind, b'*');
    for bad in [
        &b"+OK\n"[..],
        b"$3\r\nab\r\n",
        b"$3\r\nabcde",
        b"?\r\n",
        b"*2\r\n+a\r\n",
        b"",
    ] {
        let mut r = bad;
        assert!(common::read_reply(&mut r).is_err(), "{}", common::show(bad));
    }
}

#[test]
fn runner_compare_modes() {
    let (a, b) = (
        reply(b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        reply(b"*2\r\n$1\r\nb\r\n$1\r\na\r\n"),
    );
    assert!(!same(Mode::Exact, &a, &b) && same(Mode::Sort, &a, &b) && same(Mode::Any, &a, &b));
    let (a, b) = (
        reply(b"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n"),
        reply(b"%2\r\n+b\r\n:2\r\n+a\r\n:1\r\n"),
    );
    assert!(same(Mode::Sort, &a, &b));
    let c = reply(b"%2\r\n+b\r\n:1\r\n+a\r\n:2\r\n");
    assert!(
        !same(Mode::Sort, &a, &c),
        "map pairs stay pairs when sorted"
    );
    assert!(same(Mode::Approx, &reply(b":100\r\n"), &reply(b":99\r\n")));
    assert!(!same(Mode::Approx, &reply(b":100\r\n"), &reply(b":98\r\n")));
    assert!(same(
        Mode::Approx,
        &reply(b"*2\r\n:5\r\n:7\r\n"),
        &reply(b"*2\r\n:6\r\n:7\r\n")
    ));
    assert!(!same(Mode::Any, &reply(b"+OK\r\n"), &reply(b"-ERR\r\n")));
    // Idle times may differ by 100 ms.
    assert!(same(
        Mode::Ms,
        &reply(b"*2\r\n:2\r\n:7\r\n"),
        &reply(b"*2\r\n:90\r\n:7\r\n")
    ));
    assert!(!same(Mode::Ms, &reply(b":2\r\n"), &reply(b":103\r\n")));
    assert!(!same(
        Mode::Ms,
        &reply(b"$1\r\na\r\n"),
        &reply(b"$1\r\nb\r\n")
    ));
    // A PTTL may differ by 1%; TTLs only by one second, and only when both are positive.
    assert!(same(
        Mode::Approx,
        &reply(b":100000\r\n"),
        &reply(b":99100\r\n")
    ));
    assert!(!same(
        Mode::Approx,
        &reply(b":100000\r\n"),
        &reply(b":98000\r\n")
    ));
    assert!(both_positive_within_one(
        &reply(b":100\r\n"),
        &reply(b":99\r\n")
    ));
    assert!(!both_positive_within_one(
        &reply(b":-1\r\n"),
        &reply(b":-2\r\n")
    ));
    assert!(!both_positive_within_one(
        &reply(b":1\r\n"),
        &reply(b":0\r\n")
    ));
}

#[test]
fn runner_parses_directives_and_allow_list() {
    let dir = std::env::temp_dir().join(format!("strata-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.txt");
    std::fs::write(
        &f,
        "# c\n\nPING\n!sort SMEMBERS s\n!sleep 5\n!resp3\n!any HELLO 3\n!approx TTL k\n",
    )
    .unwrap();
    let lines = parse_file(&f).unwrap();
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0].no, 3);
    assert!(matches!(&lines[1].step, Step::Command { mode: Mode::Sort, args } if args.len() == 2));
    assert!(matches!(lines[2].step, Step::Sleep(5)));
    assert!(matches!(lines[3].step, Step::Hello(3)));
    std::fs::write(&f, "!nosuch PING\n").unwrap();
    assert!(parse_file(&f)
        .unwrap_err()
        .contains("t.txt:1: unknown directive"));
    std::fs::write(&f, "ECHO \"x\n").unwrap();
    assert!(parse_file(&f).unwrap_err().contains("unbalanced"));
    std::fs::remove_dir_all(&dir).unwrap();
    let mut allow = BTreeMap::new();
    allow.insert("OBJECT ENCODING k".to_string(), "r".to_string());
    let line = |text: &str| Line {
        no: 1,
        text: text.into(),
        step: Step::Sleep(0),
    };
    assert!(is_allowed(&allow, &line("OBJECT ENCODING k")).is_some());
    assert!(is_allowed(&allow, &line("!any OBJECT ENCODING k")).is_some());
    assert!(is_allowed(&allow, &line("OBJECT ENCODING j")).is_none());
    // The real list parses.
    allowed().unwrap();
}
