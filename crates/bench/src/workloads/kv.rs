//! `kv`: redis-benchmark's tests (`--ops set,get,...`, each run in turn with `-n`
//! requests) or a weighted mix in one phase (`--mix get=90,set=10`). Key names and the
//! keys each test touches follow redis-benchmark (`key:NNNNNNNNNNNN` for SET/GET/MSET,
//! `counter:` for INCR, one `mylist`/`myset`/`myhash`/`myzset` with `element:N` members).

use crate::conn::{push_bulk, push_header};
use crate::driver::{Phase, Session, Started};
use crate::keys::{push_key_arg as key_arg, KeySpec, Values, Zipfian};
use crate::reply::Value;
use crate::rng::Rng;
use crate::workloads::Workload;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Ping,
    Set,
    Get,
    Incr,
    Lpush,
    Rpush,
    Lpop,
    Rpop,
    Sadd,
    Hset,
    Spop,
    Zadd,
    Zpopmin,
    Lrange(u32),
    Mset,
    Del,
}

impl Op {
    pub fn parse(s: &str) -> Result<Op, String> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "ping" | "ping_mbulk" => Op::Ping,
            "set" => Op::Set,
            "get" => Op::Get,
            "incr" => Op::Incr,
            "lpush" => Op::Lpush,
            "rpush" => Op::Rpush,
            "lpop" => Op::Lpop,
            "rpop" => Op::Rpop,
            "sadd" => Op::Sadd,
            "hset" => Op::Hset,
            "spop" => Op::Spop,
            "zadd" => Op::Zadd,
            "zpopmin" => Op::Zpopmin,
            "lrange" | "lrange_100" => Op::Lrange(100),
            "lrange_300" => Op::Lrange(300),
            "lrange_500" => Op::Lrange(500),
            "lrange_600" => Op::Lrange(600),
            "mset" => Op::Mset,
            "del" => Op::Del,
            other => {
                return Err(format!(
                    "unknown op {other:?}; known: ping set get incr lpush rpush lpop rpop sadd \
                     hset spop zadd zpopmin lrange_100 lrange_300 lrange_500 lrange_600 mset del"
                ))
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            Op::Lrange(n) => format!("LRANGE_{n}"),
            Op::Mset => "MSET (10 keys)".into(),
            other => format!("{other:?}").to_ascii_uppercase(),
        }
    }
}

/// Parses `get=90,set=10` into ops and cumulative weights.
pub fn parse_mix(s: &str) -> Result<Vec<(Op, u32)>, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (op, w) = part
            .split_once('=')
            .ok_or_else(|| format!("bad --mix part {part:?}: expected op=weight"))?;
        let w: u32 = w
            .trim()
            .parse()
            .map_err(|_| format!("bad weight in --mix part {part:?}"))?;
        if w > 0 {
            out.push((Op::parse(op)?, w));
        }
    }
    if out.is_empty() {
        return Err("--mix needs at least one op with a weight above 0".into());
    }
    Ok(out)
}

pub struct Kv {
    /// One phase per entry: its ops with weights (one op for `--ops` tests).
    pub tests: Vec<Vec<(Op, u32)>>,
    pub keys: KeySpec,
    pub values: Values,
    pub requests: Option<u64>,
    pub verify: bool,
    pub clients: usize,
    pub pipeline: usize,
    /// With `--verify`: keys written in this target's current round.
    pub written: Option<Arc<Written>>,
}

impl Kv {
    pub fn new_written(verify: bool, keys: &KeySpec) -> Option<Arc<Written>> {
        if verify {
            Written::new(keys.space())
        } else {
            None
        }
    }
}

/// Keys a verifying run has seen written: a GET of one of them must return its value.
pub struct Written {
    bits: Vec<AtomicU64>,
}

impl Written {
    fn new(space: u64) -> Option<Arc<Written>> {
        // Beyond 2^32 keys (512 MiB of bits) only the value of a present key is checked.
        (space <= 1 << 32).then(|| {
            Arc::new(Written {
                bits: (0..space.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            })
        })
    }

    fn set(&self, k: u64) {
        if let Some(w) = self.bits.get((k / 64) as usize) {
            w.fetch_or(1 << (k % 64), Ordering::Relaxed);
        }
    }

    fn clear(&self) {
        for w in &self.bits {
            w.store(0, Ordering::Relaxed);
        }
    }

    fn get(&self, k: u64) -> bool {
        self.bits
            .get((k / 64) as usize)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (k % 64)) != 0)
    }
}

enum Keys {
    Random(u64),
    Seq { next: u64, end: u64 },
    Zipf(Box<Zipfian>),
}

struct KvSession {
    ops: Vec<(Op, u32)>,
    total_weight: u32,
    keys: Keys,
    values: Values,
    rng: Rng,
    verify: bool,
    written: Option<Arc<Written>>,
    /// Per slot: the op, its key and whether the key was known written when it started.
    slots: Vec<(Op, u64, bool)>,
}

impl KvSession {
    fn next_key(&mut self) -> Option<u64> {
        match &mut self.keys {
            Keys::Random(n) => Some(self.rng.below(*n)),
            Keys::Seq { next, end } => {
                if *next >= *end {
                    return None;
                }
                *next += 1;
                Some(*next - 1)
            }
            Keys::Zipf(z) => Some(z.next(&mut self.rng)),
        }
    }

    fn pick(&mut self) -> (usize, Op) {
        if self.ops.len() == 1 {
            return (0, self.ops[0].0);
        }
        let mut r = self.rng.below(self.total_weight as u64) as u32;
        for (i, &(op, w)) in self.ops.iter().enumerate() {
            if r < w {
                return (i, op);
            }
            r -= w;
        }
        (0, self.ops[0].0)
    }
}

fn cmd(out: &mut Vec<u8>, argc: usize, name: &[u8]) {
    push_header(out, b'*', argc);
    push_bulk(out, name);
}

impl Session for KvSession {
    fn begin(&mut self, slot: usize, out: &mut Vec<u8>) -> Option<Started> {
        let k = self.next_key()?;
        let (idx, op) = self.pick();
        let v = self.values.of(k);
        match op {
            Op::Ping => cmd(out, 1, b"PING"),
            Op::Set => {
                cmd(out, 3, b"SET");
                key_arg(out, b"key:", k);
                push_bulk(out, v);
            }
            Op::Get => {
                cmd(out, 2, b"GET");
                key_arg(out, b"key:", k);
            }
            Op::Del => {
                cmd(out, 2, b"DEL");
                key_arg(out, b"key:", k);
            }
            Op::Incr => {
                cmd(out, 2, b"INCR");
                key_arg(out, b"counter:", k);
            }
            Op::Lpush | Op::Rpush => {
                cmd(out, 3, if op == Op::Lpush { b"LPUSH" } else { b"RPUSH" });
                push_bulk(out, b"mylist");
                push_bulk(out, v);
            }
            Op::Lpop | Op::Rpop => {
                cmd(out, 2, if op == Op::Lpop { b"LPOP" } else { b"RPOP" });
                push_bulk(out, b"mylist");
            }
            Op::Sadd => {
                cmd(out, 3, b"SADD");
                push_bulk(out, b"myset");
                key_arg(out, b"element:", k);
            }
            Op::Hset => {
                cmd(out, 4, b"HSET");
                push_bulk(out, b"myhash");
                key_arg(out, b"element:", k);
                push_bulk(out, v);
            }
            Op::Spop => {
                cmd(out, 2, b"SPOP");
                push_bulk(out, b"myset");
            }
            Op::Zadd => {
                cmd(out, 4, b"ZADD");
                push_bulk(out, b"myzset");
                push_bulk(out, (k % 1_000_000).to_string().as_bytes());
                key_arg(out, b"element:", k);
            }
            Op::Zpopmin => {
                cmd(out, 2, b"ZPOPMIN");
                push_bulk(out, b"myzset");
            }
            Op::Lrange(n) => {
                cmd(out, 4, b"LRANGE");
                push_bulk(out, b"mylist");
                push_bulk(out, b"0");
                push_bulk(out, (n - 1).to_string().as_bytes());
            }
            Op::Mset => {
                // Ten keys: this one and nine drawn the same way (seq: the next ones, wrapping
                // inside the client's share is not needed: MSET's extra keys just repeat it).
                cmd(out, 21, b"MSET");
                key_arg(out, b"key:", k);
                push_bulk(out, v);
                for _ in 0..9 {
                    let k2 = match self.keys {
                        Keys::Seq { .. } => k,
                        _ => self.next_key().unwrap_or(k),
                    };
                    key_arg(out, b"key:", k2);
                    push_bulk(out, self.values.of(k2));
                }
            }
        }
        let known = op == Op::Get && self.written.as_ref().is_some_and(|w| w.get(k));
        self.slots[slot] = (op, k, known);
        Some(Started {
            op: idx,
            requests: 1,
        })
    }

    fn reply(&mut self, slot: usize, v: &Value, _out: &mut Vec<u8>) -> Result<u32, String> {
        let (op, k, known) = self.slots[slot];
        if op == Op::Set {
            if let Some(w) = &self.written {
                w.set(k);
            }
        }
        if !self.verify {
            return Ok(0);
        }
        let ok = match (op, v) {
            (Op::Ping, Value::Simple(b"PONG")) => true,
            (Op::Set | Op::Mset, Value::Simple(b"OK")) => true,
            (Op::Get, Value::Bulk(got)) => {
                if *got != self.values.of(k) {
                    return Err(format!(
                        "GET key:{k:012} returned a value of {} bytes that is not the one SET \
                         wrote ({} bytes)",
                        got.len(),
                        self.values.of(k).len()
                    ));
                }
                true
            }
            (Op::Get, Value::Nil) => {
                if known {
                    return Err(format!("GET key:{k:012} returned nil after it was SET"));
                }
                true
            }
            (Op::Incr | Op::Del, Value::Int(_)) => true,
            (Op::Lpush | Op::Rpush, Value::Int(n)) => *n >= 1,
            (Op::Sadd | Op::Hset, Value::Int(n)) => *n == 0 || *n == 1,
            (Op::Zadd, Value::Int(n)) => *n == 0 || *n == 1,
            (Op::Lpop | Op::Rpop | Op::Spop, Value::Bulk(_) | Value::Nil) => true,
            (Op::Zpopmin, Value::Array(a)) => a.is_empty() || a.len() == 2,
            (Op::Lrange(n), Value::Array(a)) => a.len() <= n as usize,
            _ => false,
        };
        if ok {
            Ok(0)
        } else {
            Err(format!(
                "{} got an unexpected reply: {}",
                op.name(),
                v.show()
            ))
        }
    }
}

impl Workload for Kv {
    fn name(&self) -> &'static str {
        "kv"
    }

    fn prepare(&self, _c: &mut crate::conn::Client) -> Result<(), String> {
        // A new target or round starts with nothing known written.
        if let Some(w) = &self.written {
            w.clear();
        }
        Ok(())
    }

    fn phase_count(&self) -> usize {
        self.tests.len()
    }

    fn phase(&self, idx: usize) -> Result<Phase, String> {
        let ops = self.tests[idx].clone();
        let names: Vec<String> = ops.iter().map(|(o, _)| o.name()).collect();
        let name = if ops.len() == 1 {
            names[0].clone()
        } else {
            "mix".into()
        };
        let total_weight = ops.iter().map(|o| o.1).sum();
        // The written-keys record lives across phases: a GET test after a SET test knows.
        let written = self.written.clone();
        let zipf = match self.keys {
            KeySpec::Zipf(n, theta) => Some(Zipfian::new(0, n - 1, theta)),
            _ => None,
        };
        let mut sessions: Vec<Box<dyn Session>> = Vec::with_capacity(self.clients);
        for i in 0..self.clients {
            let keys = match self.keys {
                KeySpec::Random(n) => Keys::Random(n),
                KeySpec::Seq(a, b) => {
                    let len = b - a;
                    let c = self.clients as u64;
                    let i = i as u64;
                    Keys::Seq {
                        next: a + len * i / c,
                        end: a + len * (i + 1) / c,
                    }
                }
                KeySpec::Zipf(..) => Keys::Zipf(Box::new(zipf.clone().ok_or("zipf")?)),
            };
            sessions.push(Box::new(KvSession {
                ops: ops.clone(),
                total_weight,
                keys,
                values: self.values.clone(),
                rng: Rng::seeded(i as u64),
                verify: self.verify,
                written: written.clone(),
                slots: vec![(Op::Ping, 0, false); self.pipeline.max(1)],
            }));
        }
        Ok(Phase {
            name,
            ops: names,
            requests: match self.keys {
                KeySpec::Seq(..) => None,
                _ => self.requests,
            },
            sessions,
            timed: true,
        })
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "tests": self.tests.iter().map(|t| t.iter().map(|(o, w)| format!("{}={w}", o.name())).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "keys": format!("{:?}", self.keys),
            "requests": self.requests,
            "verify": self.verify,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_weights() {
        assert_eq!(
            parse_mix("get=90,set=10"),
            Ok(vec![(Op::Get, 90), (Op::Set, 10)])
        );
        assert!(parse_mix("get").is_err());
        assert!(parse_mix("get=0").is_err());
        assert!(parse_mix("frob=1").is_err());
    }
}
