//! Differential tests: the same scripts through redis-server 7.0.15 and through this crate,
//! whose Host forwards redis.call to that same server. Reply bytes must be identical.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use strata_scripting::{Host, Lua};

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One redis-server at a time: two starting together can race for the same free port.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn start() -> Option<Server> {
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(Server { child, port });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Conn {
    fn new(port: u16, resp: u8) -> Conn {
        let w = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let r = BufReader::new(w.try_clone().unwrap());
        let mut c = Conn { w, r };
        if resp == 3 {
            c.cmd(&[b"HELLO", b"3"]);
        }
        c
    }

    fn cmd(&mut self, argv: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", argv.len()).into_bytes();
        for a in argv {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.w.write_all(&out).unwrap();
        let mut reply = Vec::new();
        read_frame(&mut self.r, &mut reply);
        reply
    }
}

/// Appends one complete RESP2/RESP3 frame to `out` (iterative: replies can nest 8000 deep).
fn read_frame(r: &mut BufReader<TcpStream>, out: &mut Vec<u8>) {
    let mut pending: i64 = 1;
    while pending > 0 {
        pending -= 1;
        let start = out.len();
        r.read_until(b'\n', out).unwrap();
        let line = out[start..].to_vec();
        let n: i64 = std::str::from_utf8(&line[1..line.len() - 2])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        match line[0] {
            b'$' | b'=' | b'!' if n >= 0 => {
                let mut buf = vec![0u8; n as usize + 2];
                std::io::Read::read_exact(r, &mut buf).unwrap();
                out.extend_from_slice(&buf);
            }
            b'*' | b'~' | b'>' if n > 0 => pending += n,
            b'%' if n > 0 => pending += 2 * n,
            b'|' => pending += 2 * n + 1,
            _ => {}
        }
    }
}

struct Forward {
    c2: Conn,
    c3: Conn,
}

impl Host for Forward {
    fn call(&mut self, argv: Vec<bytes::Bytes>, resp: u8, reply: &mut Vec<u8>) {
        let a: Vec<&[u8]> = argv.iter().map(|v| v.as_ref()).collect();
        *reply = if resp == 3 {
            self.c3.cmd(&a)
        } else {
            self.c2.cmd(&a)
        };
    }
    fn log(&mut self, _: u8, _: &str) {}
    fn tick(&mut self) -> bool {
        false
    }
    /// Redis answers as ACL DRYRUN for the connection's user would.
    fn acl_check_cmd(&mut self, argv: &[bytes::Bytes]) -> Option<bool> {
        let mut a: Vec<&[u8]> = vec![b"ACL", b"DRYRUN", b"default"];
        a.extend(argv.iter().map(|v| v.as_ref()));
        let reply = self.c2.cmd(&a);
        if reply.starts_with(b"+OK") {
            Some(true)
        } else if reply.starts_with(b"-ERR Command") {
            None
        } else {
            Some(false)
        }
    }
}

const CORPUS: &[&str] = &[
    "return 1",
    "return 3.99",
    "return -1.9",
    "return 1e300",
    "return 0/0",
    "return 'hello'",
    "return true",
    "return false",
    "return nil",
    "return {1, 2, 3, 'x', nil, 4}",
    "return {1.9, -1.9, true, false}",
    "return {ok='fine'}",
    "return {ok='a\\r\\nb'}",
    "return {err='nocode'}",
    "return {err='MYCODE with text'}",
    "return {double=3.5}",
    "return {double=1/0}",
    "return {double=0/0}",
    "return {big_number='123'}",
    "return {big_number='12\\r\\n3'}",
    "return {map={a=1}}",
    "return {set={a=true}}",
    "return {verbatim_string={format='txt', string='hi'}}",
    "return {verbatim_string={format='markdown', string='hi'}}",
    "return {true, false, nil}",
    "redis.setresp(3) return {true, false}",
    "return redis.status_reply('fine')",
    "return redis.error_reply('My Error')",
    "return redis.error_reply('oops')",
    "return redis.error_reply('-ERR x')",
    "return redis.error_reply(1)",
    "return redis.status_reply()",
    "return KEYS",
    "return ARGV",
    "return {KEYS[1], ARGV[2]}",
    "return redis.call('get', KEYS[1])",
    "return redis.call('get', 'nokey')",
    "return type(redis.call('get', 'nokey'))",
    "redis.setresp(3) return type(redis.call('get', 'nokey'))",
    "return redis.call('set', 'n', 1.5)",
    "redis.call('set', 'n', 123456789012345678) return redis.call('get', 'n')",
    "return redis.call('incr', 's')",
    "return redis.pcall('incr', 's')",
    "local r = redis.pcall('incr', 's') return {r.err, tostring(r.ignore_error_stats_update)}",
    "return redis.call('get', 'l')",
    "return redis.pcall('get', 'l')",
    "return pcall(redis.call, 'incr', 's')",
    "local ok, e = pcall(redis.call, 'incr', 's') return e",
    "local ok, e = pcall(error, {err='x'}) return e",
    "local ok, e = pcall(error, 'x') return e",
    "return redis.call()",
    "return redis.call('get', {})",
    "return redis.pcall('get', {})",
    "return redis.call('lrange', 'l', 0, -1)",
    "return redis.call('hgetall', 'h')",
    "redis.setresp(3) return redis.call('hgetall', 'h')",
    "redis.setresp(3) local r = redis.call('hgetall', 'h') return r.map.f",
    "redis.setresp(3) return redis.call('smembers', 'set')",
    "return redis.call('smembers', 'set')",
    "redis.setresp(3) return redis.call('zscore', 'z', 'a')",
    "redis.setresp(3) local r = redis.call('zscore', 'z', 'a') return r.double",
    "return redis.call('zscore', 'z', 'a')",
    "return redis.call('ping')",
    "return redis.call('exists', 'nokey', 's')",
    "return foo",
    "foo = 1",
    "redis.call = nil",
    "setmetatable(_G, {})",
    "rawset(_G, 'x', 1)",
    "local g = getmetatable(_G) g.__index = {}",
    "getmetatable('').__index = {}",
    "getmetatable('').__index.upper = nil",
    "cjson = nil",
    "return print",
    "return loadfile",
    "return dofile",
    "return os",
    "return debug",
    "return type(getmetatable(_G))",
    "error('boom')",
    "error('a\\nb')",
    "error({err='MYCODE x'})",
    "error({err='nocode'})",
    "error(123)",
    "local function f() error('deep') end f()",
    "local x = nil; return x.y",
    "return 1 +",
    "#!lua\nreturn 1",
    "#!lua flags=no-writes,allow-oom\nerror('x')",
    "#!lua flags=bad\nreturn 1",
    "#!lua name=x\nreturn 1",
    "#!luax\nreturn 1",
    "#!lua flags=no-writes",
    "#!lua\nreturn 1 +",
    "local f, e = loadstring(string.dump(function() return 1 end)) return e",
    "return loadstring('return 7')()",
    "return redis.sha1hex('')",
    "return redis.sha1hex(12)",
    "return redis.sha1hex()",
    "redis.log()",
    "redis.log('x', 'y')",
    "redis.log(9, 'y')",
    "redis.log(redis.LOG_WARNING, 'hello', 1)",
    "redis.setresp(4)",
    "redis.setresp()",
    "redis.set_repl(99)",
    "redis.set_repl()",
    "return redis.set_repl(redis.REPL_ALL)",
    "return redis.replicate_commands()",
    "return redis.breakpoint()",
    "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, redis.REPL_ALL, redis.REPL_AOF, redis.REPL_SLAVE, redis.LOG_WARNING}",
    "return _VERSION",
    "return tostring(1e15)",
    "return string.format('%d', 42)",
    "return cjson == nil",
    "return cjson.encode({a = {1, 2}})",
    "return cjson.decode('[1,2,\"x\"]')",
    "cjson.encode = nil",
    "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {2}))}",
    "return bit.band(7, 3)",
    "bit.band = nil",
    "return struct.pack('>I2', 258)",
    "local t = {} t[1] = t return t",
    "local t = {} t.map = t return t",
    "local t = {} t.map = {a = t} return t",
    "local t = {} t.set = {} t.set[t] = true return t",
    "local t = {} for i = 1, 100 do t = {t} end return t",
    "return coroutine.wrap(function() coroutine.yield(5) end)()",
    "return table.concat({'a','b'}, ',')",
    "return math.floor(2.5)",
    "return redis.acl_check_cmd == nil",
    // tonumber (ours takes a shortcut for short decimals; errors must still name it).
    "return {tonumber('12'), tonumber('-7'), tonumber('007'), tonumber('999999999999999')}",
    "return {tostring(tonumber('-0')), tonumber('1234567890123456789'), tonumber('1.5') * 2}",
    "return {tonumber(' 12 '), tonumber('0x1A'), tonumber('1e3'), tonumber('+5'), tonumber('')}",
    "return {tonumber('12x'), tonumber(nil), tonumber({}), tonumber(true), tonumber(3.5) * 2}",
    "return {tonumber('ff', 16), tonumber('zz', 36), tonumber('8', 8), tonumber(' 11 ', 2)}",
    "return tonumber()",
    "return tonumber('1', 99)",
    "return tonumber(nil, 16)",
    "return tonumber('10', 10.9)",
];

fn setup(c: &mut Conn) {
    c.cmd(&[b"FLUSHALL"]);
    c.cmd(&[b"SET", b"s", b"v"]);
    c.cmd(&[b"SET", b"k1", b"val1"]);
    c.cmd(&[b"RPUSH", b"l", b"a", b"b"]);
    c.cmd(&[b"HSET", b"h", b"f", b"v"]);
    c.cmd(&[b"SADD", b"set", b"m"]);
    c.cmd(&[b"ZADD", b"z", b"1.5", b"a"]);
}

#[test]
fn eval_matches_redis_server() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start() else {
        eprintln!("SKIPPED: redis-server is not installed; differential test not run");
        return;
    };
    let mut lua = Lua::new();
    let mut host = Forward {
        c2: Conn::new(server.port, 2),
        c3: Conn::new(server.port, 3),
    };
    let mut failures = Vec::new();
    for resp in [2u8, 3] {
        let mut client = Conn::new(server.port, resp);
        for body in CORPUS {
            let keys: [&[u8]; 1] = [b"k1"];
            let args: [&[u8]; 2] = [b"a1", b"a2"];
            setup(&mut client);
            let want = client.cmd(&[b"EVAL", body.as_bytes(), b"1", keys[0], args[0], args[1]]);
            setup(&mut client);
            let got = lua.eval(body.as_bytes(), &keys, &args, resp, &mut host);
            if got != want {
                failures.push(format!(
                    "RESP{resp} {body:?}\n  redis: {:?}\n  ours:  {:?}",
                    String::from_utf8_lossy(&want[..want.len().min(300)]),
                    String::from_utf8_lossy(&got[..got.len().min(300)])
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const LIBS: &[&str] = &[
    "return 1",
    "#!lua\nreturn 1",
    "#!lua name=lib1",
    "#!lua name=lib1\nreturn 1",
    "#!lua name=lib1 foo=bar\nredis.register_function('f', function() return 1 end)",
    "#!lua name=lib1 name=x\nredis.register_function('f', function() return 1 end)",
    "#!lua name=bad-name\nredis.register_function('f', function() return 1 end)",
    "#!js name=lib1\nredis.register_function('f', function() return 1 end)",
    "#!lua name=lib1\nredis.register_function('f', function() return 1 end)\nredis.register_function('f', function() return 1 end)",
    "#!lua name=lib1\nredis.register_function('f-x', function() return 1 end)",
    "#!lua name=lib1\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'bad'}}",
    "#!lua name=lib1\nredis.register_function{function_name='f', callback=function() return 1 end, foo=1}",
    "#!lua name=lib1\nredis.register_function{callback=function() return 1 end}",
    "#!lua name=lib1\nredis.register_function{function_name='f'}",
    "#!lua name=lib1\nredis.register_function(1)",
    "#!lua name=lib1\nredis.register_function()",
    "#!lua name=lib1\nredis.register_function('f', 1)",
    "#!lua name=lib1\nredis.register_function({}, 1)",
    "#!lua name=lib1\nerror('boom')",
    "#!lua name=lib1\nlocal x = string.len('a')",
    "#!lua name=lib1\nredis.call('ping')",
    "#!lua name=lib1\nx = 1",
    "#!lua name=lib1\nreturn 1 +",
    "#!lua name=lib1\nwhile true do end",
];

#[test]
fn function_load_matches_redis_server() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start() else {
        eprintln!("SKIPPED: redis-server is not installed; differential test not run");
        return;
    };
    let mut client = Conn::new(server.port, 2);
    let mut failures = Vec::new();
    for code in LIBS {
        let mut lua = Lua::new();
        client.cmd(&[b"FUNCTION", b"FLUSH"]);
        let want = client.cmd(&[b"FUNCTION", b"LOAD", code.as_bytes()]);
        let got = match lua.load_library(code.as_bytes()) {
            Ok(info) => format!("${}\r\n{}\r\n", info.name.len(), info.name).into_bytes(),
            Err(e) => format!("-{e}\r\n").into_bytes(),
        };
        if got != want {
            failures.push(format!(
                "{code:?}\n  redis: {:?}\n  ours:  {:?}",
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(&got)
            ));
        }
    }

    // FCALL of loaded functions, in both protocols.
    let lib = "#!lua name=mylib\n\
        redis.register_function('ro', function(k, a) return {k, a, redis.call('ping'), type(redis.register_function), type(string)} end)\n\
        redis.register_function{function_name='err', callback=function() return redis.call('incr', 's') end, flags={'allow-stale', 'NO-CLUSTER'}, description='d'}\n\
        redis.register_function('boom', function() error('x') end)\n\
        redis.register_function('glob', function() return undefined_thing end)\n\
        redis.register_function('setg', function() y = 1 end)\n\
        redis.register_function('resp', function() redis.setresp(3) return redis.call('hgetall', 'h') end)";
    client.cmd(&[b"FUNCTION", b"FLUSH"]);
    client.cmd(&[b"FUNCTION", b"LOAD", lib.as_bytes()]);
    let mut lua = Lua::new();
    let info = lua.load_library(lib.as_bytes()).unwrap();
    assert_eq!(info.name, "mylib");
    assert_eq!(info.functions.len(), 6);
    let err = info.functions.iter().find(|f| f.name == "err").unwrap();
    assert!(err.flags.allow_stale && err.flags.no_cluster && !err.flags.no_writes);
    assert_eq!(err.description.as_deref(), Some("d"));
    let mut host = Forward {
        c2: Conn::new(server.port, 2),
        c3: Conn::new(server.port, 3),
    };
    for resp in [2u8, 3] {
        let mut c = Conn::new(server.port, resp);
        for f in ["ro", "err", "boom", "glob", "setg", "resp", "nosuch"] {
            c.cmd(&[b"SET", b"s", b"v"]);
            c.cmd(&[b"HSET", b"h", b"f", b"v"]);
            let want = c.cmd(&[b"FCALL", f.as_bytes(), b"1", b"k", b"a"]);
            let got = lua.fcall(f, &[b"k"], &[b"a"], resp, &mut host);
            if got != want {
                failures.push(format!(
                    "FCALL RESP{resp} {f}\n  redis: {:?}\n  ours:  {:?}",
                    String::from_utf8_lossy(&want),
                    String::from_utf8_lossy(&got)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
