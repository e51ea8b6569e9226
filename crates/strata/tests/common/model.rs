//! A model of client traffic for tests that compare two servers, or one server before and
//! after a restart: random commands of every type over a few hundred keys, deterministic
//! (the same arguments give the same result on any server), so that replies and whole
//! keyspaces can be compared; and how to read a whole keyspace back (`dataset`).

use super::Rng;

/// Keys the commands go to: `k0` to `k399`.
const KEYS: u64 = 400;

/// Kinds of keys: strings (with bitmaps), lists, hashes, sets, sorted sets (with geo
/// members), counters, streams (with a consumer group) and HyperLogLogs.
const KINDS: u64 = 8;

/// The next stream entry ID, rising across every stream a test writes. Per thread (a
/// test's own), so that a test's commands do not depend on the tests beside it.
fn stream_id() -> Vec<u8> {
    thread_local!(static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(1) });
    let n = NEXT.with(|c| c.replace(c.get() + 1));
    format!("{n}-1").into_bytes()
}

/// One random command over `KEYS` keys of every type, with values of 1-4 KB (a megabyte
/// of data after a few hundred commands); a tenth of them of two keys (RENAME, COPY, MSET,
/// LMOVE, SORT, SMOVE, SUNIONSTORE, ZUNIONSTORE, scripts, XREAD, PFMERGE).
pub fn random_command(r: &mut Rng) -> Vec<Vec<u8>> {
    let k = r.below(KEYS);
    let key = format!("k{k}").into_bytes();
    let pad = |r: &mut Rng| {
        let n = 1000 + r.below(3000) as usize;
        let mut v = format!("v{}-", r.next()).into_bytes();
        v.resize(n, b'x' + (r.below(3) as u8));
        v
    };
    let s = |x: &str| x.as_bytes().to_vec();
    let num = |r: &mut Rng, n: u64| r.below(n).to_string().into_bytes();
    // Keys keep one type by their number (k % KINDS), so most commands hit the right
    // type; a few go to any key and see WRONGTYPE alike.
    match (k % KINDS, r.below(10)) {
        (kind, 8) => {
            // Two keys of one kind, so cold entries meet hot ones in one command.
            let other = format!("k{}", kind + KINDS * r.below(KEYS / KINDS)).into_bytes();
            match (kind, r.below(4)) {
                (_, 0) => vec![s("RENAME"), key, other],
                (_, 1) => vec![s("COPY"), key, other, s("REPLACE")],
                (0, 2) => vec![s("MSET"), key, pad(r), other, pad(r)],
                (0, _) => vec![s("MGET"), key, other],
                (1, 2) => vec![s("LMOVE"), key, other, s("LEFT"), s("RIGHT")],
                (1, _) => vec![s("SORT"), key, s("ALPHA"), s("LIMIT"), s("0"), s("5")],
                (2, _) => vec![
                    s("EVAL"),
                    s("return redis.call('HLEN', KEYS[1]) + redis.call('HLEN', KEYS[2])"),
                    s("2"),
                    key,
                    other,
                ],
                (3, 2) => vec![s("SMOVE"), key, other, num(r, 200)],
                (3, _) => vec![s("SUNIONSTORE"), other.clone(), key, other],
                (4, _) => vec![s("ZUNIONSTORE"), other.clone(), s("2"), key, other],
                (5, _) => vec![
                    s("EVAL"),
                    s("redis.call('INCRBY', KEYS[1], 1) return redis.call('INCRBY', KEYS[2], 2)"),
                    s("2"),
                    key,
                    other,
                ],
                (6, _) => vec![
                    s("XREAD"),
                    s("COUNT"),
                    s("2"),
                    s("STREAMS"),
                    key,
                    other,
                    s("0"),
                    s("0"),
                ],
                (_, 2) => vec![s("PFMERGE"), other.clone(), key, other],
                (_, _) => vec![s("PFCOUNT"), key, other],
            }
        }
        (_, 9) => match r.below(6) {
            0 => vec![s("DEL"), key],
            1 => vec![s("EXISTS"), key],
            2 => vec![s("TYPE"), key],
            // An absolute time, the same on both servers (DEBUG DIGEST compares it).
            3 => vec![s("PEXPIREAT"), key, s("4102444800000")],
            4 => vec![s("PERSIST"), key],
            // Not TTL: its reply counts from the moment each server answers, so the two
            // could straddle a second; the expiry itself is the same on both.
            _ => vec![s("PEXPIRETIME"), key],
        },
        (0, 0..=3) => vec![s("SET"), key, pad(r)],
        (0, 4..=5) => vec![s("APPEND"), key, num(r, 1000)],
        (0, 6) => vec![s("GETRANGE"), key, num(r, 10), num(r, 50)],
        (0, 7) => vec![s("SETBIT"), key, num(r, 40_000), s("1")],
        (0, _) => vec![s("GET"), key],
        (1, 0..=4) => vec![s("RPUSH"), key, pad(r), num(r, 100)],
        (1, 5) => vec![s("LPOP"), key],
        (1, _) => vec![s("LRANGE"), key, s("0"), s("-1")],
        (2, 0..=4) => vec![s("HSET"), key, num(r, 20), pad(r)],
        (2, 5) => vec![s("HDEL"), key, num(r, 20)],
        (2, 6) => vec![s("HLEN"), key],
        (2, _) => vec![s("HGET"), key, num(r, 20)],
        (3, 0..=4) => vec![s("SADD"), key, num(r, 200), pad(r)],
        (3, 5) => vec![s("SREM"), key, num(r, 200)],
        (3, 6) => vec![s("SCARD"), key],
        (3, _) => vec![s("SISMEMBER"), key, num(r, 200)],
        (4, 0..=4) => vec![s("ZADD"), key, num(r, 1000), pad(r)],
        (4, 5) => vec![s("ZPOPMIN"), key],
        (4, 6) => vec![s("GEOADD"), key, s("13.36"), s("38.11"), pad(r)],
        (4, _) => vec![s("ZRANGE"), key, s("0"), s("-1"), s("WITHSCORES")],
        (5, 0..=4) => vec![s("INCRBY"), key, num(r, 100)],
        (5, 5) => vec![s("DECR"), key],
        // Explicit IDs, rising across every stream, so both servers store the same ones.
        (6, 0..=3) => vec![s("XADD"), key, stream_id(), s("f"), pad(r)],
        (6, 4) => vec![s("XGROUP"), s("CREATE"), key, s("g"), s("0"), s("MKSTREAM")],
        (6, 5) => vec![
            s("XREADGROUP"),
            s("GROUP"),
            s("g"),
            s("c"),
            s("COUNT"),
            s("2"),
            s("STREAMS"),
            key,
            s(">"),
        ],
        (6, 6) => vec![s("XPENDING"), key, s("g")],
        (6, 7) => vec![s("XTRIM"), key, s("MAXLEN"), s("20")],
        (6, _) => vec![s("XRANGE"), key, s("-"), s("+"), s("COUNT"), s("3")],
        (7, 0..=5) => vec![s("PFADD"), key, num(r, 5000), num(r, 5000), num(r, 5000)],
        (7, _) => vec![s("PFCOUNT"), key],
        (_, _) => vec![s("GET"), key],
    }
}

/// A reply as text, errors included (both servers must fail alike).
pub fn run(c: &mut redis::Connection, args: &[Vec<u8>]) -> String {
    let mut cmd = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
    for a in &args[1..] {
        cmd.arg(&a[..]);
    }
    match cmd.query::<redis::Value>(c) {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("ERR {}", e.detail().unwrap_or_default()),
    }
}

/// Everything a key holds, in an order that does not depend on its encoding.
pub fn contents(c: &mut redis::Connection, key: &str) -> String {
    let kind: String = redis::cmd("TYPE").arg(key).query(c).unwrap();
    let sorted = |v: Vec<Vec<u8>>| {
        let mut v = v;
        v.sort();
        format!("{v:?}")
    };
    let body = match kind.as_str() {
        "string" => format!("{:?}", redis::cmd("GET").arg(key).query::<Vec<u8>>(c)),
        "list" => format!(
            "{:?}",
            redis::cmd("LRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .query::<Vec<Vec<u8>>>(c)
        ),
        "hash" => sorted(redis::cmd("HGETALL").arg(key).query(c).unwrap()),
        "set" => sorted(redis::cmd("SMEMBERS").arg(key).query(c).unwrap()),
        "zset" => format!(
            "{:?}",
            redis::cmd("ZRANGE")
                .arg(key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query::<Vec<Vec<u8>>>(c)
        ),
        "stream" => format!(
            "{:?} {:?}",
            redis::cmd("XRANGE")
                .arg(key)
                .arg("-")
                .arg("+")
                .query::<redis::Value>(c),
            redis::cmd("XPENDING")
                .arg(key)
                .arg("g")
                .query::<redis::Value>(c)
        ),
        other => other.to_string(),
    };
    let ttl: i64 = redis::cmd("TTL").arg(key).query(c).unwrap();
    format!("{kind} ttl>0:{} {body}", ttl > 0)
}

pub fn all_keys(c: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys
}

/// Every key's contents, key by key.
pub fn dataset(c: &mut redis::Connection) -> Vec<(String, String)> {
    all_keys(c)
        .into_iter()
        .map(|k| {
            let v = contents(c, &k);
            (k, v)
        })
        .collect()
}
