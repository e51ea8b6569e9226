//! A tiny in-memory Host speaking real RESP (via strata_resp::Reply), and a redis-server
//! launcher for differential tests.
#![allow(dead_code)]

use std::collections::HashMap;
use strata_resp::{Protocol, Reply};
use strata_scripting::Host;

pub enum Val {
    Str(Vec<u8>),
    List(Vec<Vec<u8>>),
}

#[derive(Default)]
pub struct FakeHost {
    pub db: HashMap<Vec<u8>, Val>,
    pub logs: Vec<(u8, String)>,
    pub calls: Vec<(Vec<Vec<u8>>, u8)>,
    pub ticks: usize,
    /// Kill the script at this tick.
    pub kill_at: Option<usize>,
}

impl Host for FakeHost {
    fn call(&mut self, argv: Vec<bytes::Bytes>, resp: u8, reply: &mut Vec<u8>) {
        *reply = self.reply(argv.iter().map(|a| a.to_vec()).collect(), resp);
    }
    fn log(&mut self, level: u8, msg: &str) {
        self.logs.push((level, msg.to_string()));
    }
    fn tick(&mut self) -> bool {
        self.ticks += 1;
        self.kill_at.is_some_and(|k| self.ticks >= k)
    }
    fn acl_check_cmd(&mut self, argv: &[bytes::Bytes]) -> Option<bool> {
        // The fake server knows every command and allows it.
        (!argv.is_empty()).then_some(true)
    }
}

impl FakeHost {
    fn reply(&mut self, argv: Vec<Vec<u8>>, resp: u8) -> Vec<u8> {
        self.calls.push((argv.clone(), resp));
        let mut out = Vec::new();
        let proto = if resp == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        let mut r = Reply::new(&mut out, proto);
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let arity = |n: usize| argv.len() == n;
        let wrong = "ERR Wrong number of args calling Redis command from script";
        match name.as_str() {
            "ping" => r.simple("PONG"),
            "get" if arity(2) => match self.db.get(&argv[1]) {
                None => r.null(),
                Some(Val::Str(s)) => r.bulk(s),
                Some(Val::List(_)) => {
                    r.error("WRONGTYPE Operation against a key holding the wrong kind of value")
                }
            },
            "set" if arity(3) => {
                self.db.insert(argv[1].clone(), Val::Str(argv[2].clone()));
                r.ok();
            }
            "del" if argv.len() >= 2 => {
                let n = argv[1..]
                    .iter()
                    .filter(|k| self.db.remove(*k).is_some())
                    .count();
                r.int(n as i64);
            }
            "incr" if arity(2) => {
                let cur = match self.db.get(&argv[1]) {
                    None => Some(0),
                    Some(Val::Str(s)) => std::str::from_utf8(s)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok()),
                    Some(Val::List(_)) => {
                        r.error(
                            "WRONGTYPE Operation against a key holding the wrong kind of value",
                        );
                        return out;
                    }
                };
                match cur.and_then(|c| c.checked_add(1)) {
                    Some(n) => {
                        self.db
                            .insert(argv[1].clone(), Val::Str(n.to_string().into_bytes()));
                        r.int(n);
                    }
                    None => r.error("ERR value is not an integer or out of range"),
                }
            }
            "rpush" if argv.len() >= 3 => {
                let e = self
                    .db
                    .entry(argv[1].clone())
                    .or_insert(Val::List(Vec::new()));
                match e {
                    Val::List(l) => {
                        l.extend(argv[2..].iter().cloned());
                        r.int(l.len() as i64);
                    }
                    Val::Str(_) => {
                        r.error("WRONGTYPE Operation against a key holding the wrong kind of value")
                    }
                }
            }
            "lrange" if arity(4) => match self.db.get(&argv[1]) {
                Some(Val::List(l)) => {
                    r.array(l.len());
                    for x in l {
                        r.bulk(x);
                    }
                }
                _ => r.array(0),
            },
            "hgetall" if arity(2) => {
                r.map(1);
                r.bulk(b"f");
                r.bulk(b"v");
            }
            "smembers" if arity(2) => {
                r.set(1);
                r.bulk(b"m");
            }
            "dbl" => r.double(3.5),
            "bool" => r.boolean(true),
            "nil" => r.null(),
            "verb" => r.verbatim("txt", b"hello"),
            "big" => r.raw(if resp == 3 {
                b"(12345678901234567890\r\n"
            } else {
                b"$20\r\n12345678901234567890\r\n"
            }),
            "get" | "set" | "del" | "incr" | "rpush" | "lrange" | "hgetall" | "smembers" => {
                r.error(wrong)
            }
            _ => r.error("ERR Unknown Redis command called from script"),
        }
        out
    }
}

pub fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
