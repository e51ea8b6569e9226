//! Behaviour checked with the in-memory FakeHost: what the host sees, kills, logs, limits.
mod common;
use common::*;
use strata_scripting::{sha1hex, Lua};

fn eval(lua: &mut Lua, h: &mut FakeHost, body: &str, resp: u8) -> String {
    s(&lua.eval(body.as_bytes(), &[b"k"], &[b"a"], resp, h))
}

#[test]
fn call_arguments_and_resp_reach_the_host() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    assert_eq!(
        eval(
            &mut lua,
            &mut h,
            "return redis.call('set', KEYS[1], 1.5)",
            2
        ),
        "+OK\r\n"
    );
    assert_eq!(
        h.calls.last().unwrap(),
        &(vec![b"set".to_vec(), b"k".to_vec(), b"1.5".to_vec()], 2)
    );
    eval(
        &mut lua,
        &mut h,
        "redis.setresp(3) return redis.call('get', 'k')",
        2,
    );
    assert_eq!(h.calls.last().unwrap().1, 3);
    // Each run starts again in RESP2.
    eval(&mut lua, &mut h, "return redis.call('get', 'k')", 2);
    assert_eq!(h.calls.last().unwrap().1, 2);
}

#[test]
fn resp3_replies_become_lua_types() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    let cases = [
        ("redis.setresp(3) return redis.call('dbl').double", ":3\r\n"),
        ("redis.setresp(3) return redis.call('bool')", "#t\r\n"),
        (
            "redis.setresp(3) return type(redis.call('nil'))",
            "$3\r\nnil\r\n",
        ),
        (
            "redis.setresp(3) return redis.call('verb').verbatim_string.format",
            "$3\r\ntxt\r\n",
        ),
        (
            "redis.setresp(3) return redis.call('verb')",
            "=9\r\ntxt:hello\r\n",
        ),
        (
            "redis.setresp(3) return redis.call('big')",
            "(12345678901234567890\r\n",
        ),
        (
            "redis.setresp(3) return redis.call('big').big_number",
            "$20\r\n12345678901234567890\r\n",
        ),
        (
            "redis.setresp(3) return redis.call('hgetall', 'h').map.f",
            "$1\r\nv\r\n",
        ),
        (
            "redis.setresp(3) return redis.call('smembers', 's').set.m",
            "#t\r\n",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(eval(&mut lua, &mut h, body, 3), want, "{body}");
    }
    assert_eq!(
        eval(
            &mut lua,
            &mut h,
            "redis.setresp(3) return redis.call('verb')",
            2
        ),
        "$5\r\nhello\r\n"
    );
}

#[test]
fn wrongtype_from_call_propagates_with_suffix() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    eval(&mut lua, &mut h, "redis.call('rpush', 'l', 'x')", 2);
    let body = "\nreturn redis.call('get', 'l')";
    let out = eval(&mut lua, &mut h, body, 2);
    assert_eq!(
        out,
        format!("-WRONGTYPE Operation against a key holding the wrong kind of value script: {}, on @user_script:2.\r\n", sha1hex(body.as_bytes()))
    );
    assert_eq!(
        eval(&mut lua, &mut h, "return redis.pcall('get', 'l')['err']", 2),
        "$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
}

#[test]
fn script_kill_via_tick() {
    let (mut lua, mut h) = (
        Lua::new(),
        FakeHost {
            kill_at: Some(3),
            ..FakeHost::default()
        },
    );
    let body = "local i = 0\nwhile true do i = i + 1 end";
    let out = eval(&mut lua, &mut h, body, 2);
    assert_eq!(
        out,
        format!(
            "-ERR Script killed by user with SCRIPT KILL... script: {}, on @user_script:2.\r\n",
            sha1hex(body.as_bytes())
        )
    );
    // pcall inside the script cannot swallow the kill.
    h.ticks = 0;
    let body = "while true do pcall(function() while true do end end) end";
    let out = eval(&mut lua, &mut h, body, 2);
    assert!(
        out.starts_with("-ERR Script killed by user with SCRIPT KILL... script: "),
        "{out}"
    );
    // The state is usable afterwards.
    h.kill_at = None;
    assert_eq!(eval(&mut lua, &mut h, "return 1", 2), ":1\r\n");
}

#[test]
fn function_kill_via_tick() {
    let mut lua = Lua::new();
    lua.load_library(
        b"#!lua name=spin\nredis.register_function('spin', function() while true do end end)",
    )
    .unwrap();
    let mut h = FakeHost {
        kill_at: Some(2),
        ..FakeHost::default()
    };
    let out = s(&lua.fcall("spin", &[], &[], 2, &mut h));
    assert_eq!(
        out,
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
    );
}

#[test]
fn log_reaches_host() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    eval(
        &mut lua,
        &mut h,
        "redis.log(redis.LOG_WARNING, 'a', 1, {}, 'b')",
        2,
    );
    assert_eq!(h.logs, vec![(3, "a 1 b".to_string())]);
}

#[test]
fn deep_and_cyclic_tables_do_not_crash() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    let out = lua.eval(b"local t = {} t[1] = t return t", &[], &[], 2, &mut h);
    assert!(out.ends_with(b"-ERR reached lua stack limit\r\n"));
    assert_eq!(out.iter().filter(|&&b| b == b'*').count(), 7995);
    let out = lua.eval(
        b"local t = {} for i = 1, 100000 do t = {t} end return t",
        &[],
        &[],
        3,
        &mut h,
    );
    assert!(out.ends_with(b"-ERR reached lua stack limit\r\n"));
    let out = lua.eval(b"local t = {} t.map = t return t", &[], &[], 3, &mut h);
    assert!(out.ends_with(b"-ERR reached lua stack limit\r\n-ERR reached lua stack limit\r\n"));
}

#[test]
fn functions_load_unload_and_collide() {
    let mut lua = Lua::new();
    let mut h = FakeHost::default();
    let lib = b"#!lua name=l1\nredis.register_function('f', function(keys, args) return {keys[1], args[1]} end)";
    let info = lua.load_library(lib).unwrap();
    assert_eq!(info.name, "l1");
    assert_eq!(info.functions[0].name, "f");
    assert_eq!(
        lua.load_library(lib).unwrap_err(),
        "ERR Library 'l1' already exists"
    );
    assert_eq!(
        lua.load_library(b"#!lua name=l2\nredis.register_function('f', function() end)")
            .unwrap_err(),
        "ERR Function f already exists"
    );
    assert_eq!(
        s(&lua.fcall("f", &[b"k"], &[b"a"], 2, &mut h)),
        "*2\r\n$1\r\nk\r\n$1\r\na\r\n"
    );
    lua.unload_library("l1");
    assert_eq!(
        s(&lua.fcall("f", &[], &[], 2, &mut h)),
        "-ERR Function not found\r\n"
    );
    lua.load_library(lib).unwrap();
    // register_function is only available while loading.
    lua.load_library(b"#!lua name=l3\nlocal r = redis\nredis.register_function('g', function() return r.register_function('h', function() end) end)").unwrap();
    assert_eq!(
        s(&lua.fcall("g", &[], &[], 2, &mut h)),
        "-ERR redis.register_function can only be called on FUNCTION LOAD command script: g, on @user_function:3.\r\n"
    );
}

#[test]
fn script_flags_and_cache() {
    assert!(Lua::script_flags(b"return 1").unwrap().eval_compat_mode);
    let f = Lua::script_flags(b"#!lua flags=no-writes\nreturn 1").unwrap();
    assert!(f.no_writes && !f.eval_compat_mode);
    assert_eq!(
        Lua::script_flags(b"#!lua flags=x\n").unwrap_err(),
        "ERR Unexpected flag in script shebang: x"
    );
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    assert_eq!(eval(&mut lua, &mut h, "return 5", 2), ":5\r\n");
    assert_eq!(eval(&mut lua, &mut h, "return 5", 2), ":5\r\n");
    lua.flush_scripts();
    assert_eq!(eval(&mut lua, &mut h, "return KEYS[1]", 2), "$1\r\nk\r\n");
    assert_eq!(sha1hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

#[test]
fn hostile_scripts_get_errors_not_panics() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    for body in [
        "error(redis)",
        "error({})",
        "error(nil)",
        "return setmetatable({}, {__index = function() error('x') end})",
        "rawset(string, 'x', 1)",
        "return string.rep('x', -1)",
        "return coroutine.wrap(function() redis.call('get', 'k') end)()",
        "return pcall()",
        "return redis.call(nil)",
        "\x1bLua",
        "return loadstring('\\27Lua')",
        "return load(function() return nil end)",
    ] {
        let out = lua.eval(body.as_bytes(), &[], &[], 2, &mut h);
        assert!(out.ends_with(b"\r\n"), "{body}: {}", s(&out));
    }
    assert_eq!(eval(&mut lua, &mut h, "return 1", 2), ":1\r\n");
}

/// redis.call is a C function: a panic in the host cannot unwind through Lua's C frames, so
/// it travels as a Lua error (which the script can catch) and resumes when the run ends.
#[test]
fn a_panic_in_the_host_reaches_the_caller_and_the_state_stays_usable() {
    struct Panicky;
    impl strata_scripting::Host for Panicky {
        fn call(&mut self, _: Vec<bytes::Bytes>, _: u8, _: &mut Vec<u8>) {
            panic!("host failed")
        }
        fn log(&mut self, _: u8, _: &str) {}
        fn tick(&mut self) -> bool {
            false
        }
        fn acl_check_cmd(&mut self, _: &[bytes::Bytes]) -> Option<bool> {
            panic!("host failed")
        }
    }
    let mut lua = Lua::new();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lua.eval(
            b"local ok = pcall(redis.call, 'ping') return 'went on'",
            &[],
            &[],
            2,
            &mut Panicky,
        )
    }));
    let payload = caught.expect_err("the host's panic must reach the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"host failed"));
    let mut h = FakeHost::default();
    assert_eq!(
        eval(&mut lua, &mut h, "return redis.call('ping')", 2),
        "+PONG\r\n"
    );
}

/// A call made with nearly the whole Lua stack (Redis's "unpack with massive arguments")
/// gets its reply: the arguments leave the stack once copied.
#[test]
fn a_call_with_thousands_of_arguments_gets_its_reply() {
    let (mut lua, mut h) = (Lua::new(), FakeHost::default());
    let out = eval(
        &mut lua,
        &mut h,
        "local a = {} for i = 1, 7999 do a[i] = 'x' end \
         return redis.call('echo', unpack(a))",
        2,
    );
    assert!(!out.contains("Protocol error"), "{out}");
    let (argv, _) = h.calls.last().expect("the host saw the call");
    assert_eq!(argv.len(), 8000);
}
