//! Corpus tests: each expression of `corpus.txt` is evaluated, inside `pcall`, by a bare Lua
//! state with these libraries, and its results are rendered to text by a small Lua printer.
//! The rendering must equal the one recorded from Redis 7.0.15 (the `R` lines), and, when
//! `redis-server` is on PATH, the one a live Redis computes now.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CORPUS: &str = include_str!("corpus.txt");

/// Renders any values as one printable line, identically in Redis and here.
const PRELUDE: &str = r#"local function __q(s) return (string.gsub(s, '[^%w%p ]', function(c) return string.format('\\%03d', string.byte(c)) end)) end
local __dump
__dump = function(v, d) local t = type(v) if t == 'string' then return '"' .. __q(v) .. '"' elseif t == 'number' then if v ~= v then return 'nan' end return string.format('%.17g', v) elseif t == 'table' then if d > 30 then return '{...}' end local parts = {} for k, x in pairs(v) do parts[#parts + 1] = '[' .. __dump(k, d + 1) .. ']=' .. __dump(x, d + 1) end return '{' .. table.concat(parts, ',') .. '}' elseif t == 'userdata' then return 'userdata:' .. tostring(v == cjson.null) else return t .. ':' .. tostring(v) end end
local function __all(...) local out = {} for i = 1, select('#', ...) do out[i] = __dump((select(i, ...)), 0) end return table.concat(out, ' ') end"#;

fn script_for(expr: &str) -> String {
    format!("{PRELUDE}\nreturn __all(pcall(function() return {expr} end))")
}

fn corpus() -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    for line in CORPUS.lines() {
        if let Some(e) = line.strip_prefix("E ") {
            out.push((e.to_string(), None));
        } else if let Some(r) = line.strip_prefix("R ") {
            out.last_mut().expect("R line before any E line").1 = Some(r.to_string());
        }
    }
    out
}

fn run_local(expr: &str) -> String {
    if std::env::var("STRATA_LIBS_TRACE").is_ok() {
        eprintln!("EXPR {expr}");
    }
    let lua = mlua::Lua::new();
    super::register_all(&lua).unwrap();
    match lua
        .load(script_for(expr))
        .set_name("@user_script")
        .eval::<mlua::String>()
    {
        Ok(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Err(e) => format!("HOST-ERROR: {e}"),
    }
}

struct Redis {
    child: Child,
    conn: BufReader<TcpStream>,
}

impl Redis {
    fn start() -> Option<Redis> {
        let port = TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut child = child;
        loop {
            if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
                return Some(Redis {
                    child,
                    conn: BufReader::new(s),
                });
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn command(&mut self, args: &[&[u8]]) -> Result<Vec<u8>, String> {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.conn
            .get_mut()
            .write_all(&req)
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.conn.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end().to_string();
        match line.as_bytes().first() {
            Some(b'$') => {
                let n: i64 = line[1..].parse().map_err(|_| line.clone())?;
                if n < 0 {
                    return Ok(b"(nil)".to_vec());
                }
                let mut buf = vec![0u8; n as usize + 2];
                self.conn.read_exact(&mut buf).map_err(|e| e.to_string())?;
                buf.truncate(n as usize);
                Ok(buf)
            }
            Some(b'+' | b':') => Ok(line.as_bytes()[1..].to_vec()),
            _ => Err(line),
        }
    }

    fn eval(&mut self, expr: &str) -> String {
        // A fresh Lua state for every expression: configuration changes must not leak.
        let _ = self.command(&[b"SCRIPT", b"FLUSH"]);
        match self.command(&[b"EVAL", script_for(expr).as_bytes(), b"0"]) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => format!("REDIS-ERROR: {e}"),
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn corpus_matches_recorded_redis_results() {
    let corpus = corpus();
    assert!(corpus.len() > 500);
    let mut failures = Vec::new();
    for (expr, expected) in &corpus {
        let expected = expected
            .as_deref()
            .unwrap_or_else(|| panic!("no recorded result for {expr}"));
        let got = run_local(expr);
        if got != expected {
            failures.push(format!("{expr}\n   redis: {expected}\n   ours:  {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_matches_live_redis() {
    let Some(mut redis) = Redis::start() else {
        eprintln!("!!!!!!!! SKIPPED corpus_matches_live_redis: redis-server is not installed (or did not start) !!!!!!!!");
        return;
    };
    let corpus = corpus();
    let regen = std::env::var("STRATA_LIBS_REGEN_CORPUS").ok();
    let mut failures = Vec::new();
    let mut recorded = String::new();
    for (expr, _) in &corpus {
        let theirs = redis.eval(expr);
        let ours = run_local(expr);
        recorded.push_str(&format!("E {expr}\nR {theirs}\n"));
        if theirs != ours {
            failures.push(format!("{expr}\n   redis: {theirs}\n   ours:  {ours}"));
        }
    }
    if let Some(path) = regen {
        std::fs::write(path, recorded).unwrap();
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );
}
