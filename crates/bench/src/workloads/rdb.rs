//! `rdb`: DUMP and RESTORE throughput (Redis's serialized value format). Before each run
//! against a target the workload writes two template values there, a string
//! (`rdb:template:string`, `--value-size` bytes) and a hash (`rdb:template:hash`, `--fields`
//! fields `field000`... of `--field-length` bytes), DUMPs them, and restores each payload
//! under every key of its key space (`rdb:string:N`, `rdb:hash:N`), so a DUMP always finds
//! its key and a RESTORE always replaces one. Each test then sends, to uniformly random keys,
//! `DUMP key` or `RESTORE key 0 <the target's own payload> REPLACE`.
//!
//! Replies are always checked for their type (a DUMP must find its key, a RESTORE must
//! answer OK); `--verify` also checks that DUMP returns the template's payload byte for
//! byte (the key was restored from it).

use crate::conn::{push_bulk, push_header, Client, Owned};
use crate::driver::{Phase, Session, Started};
use crate::keys::{push_key_arg as key_arg, ValueSize, Values};
use crate::reply::Value;
use crate::rng::Rng;
use crate::workloads::Workload;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn template(self) -> &'static [u8] {
        match self {
            Kind::String => b"rdb:template:string",
            Kind::Hash => b"rdb:template:hash",
        }
    }

    fn prefix(self) -> &'static [u8] {
        match self {
            Kind::String => b"rdb:string:",
            Kind::Hash => b"rdb:hash:",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Dump(Kind),
    Restore(Kind),
}

impl Op {
    pub fn parse(s: &str) -> Result<Op, String> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "dump-string" => Op::Dump(Kind::String),
            "dump-hash" => Op::Dump(Kind::Hash),
            "restore-string" => Op::Restore(Kind::String),
            "restore-hash" => Op::Restore(Kind::Hash),
            other => {
                return Err(format!(
                    "unknown op {other:?}; known: dump-string restore-string dump-hash restore-hash"
                ))
            }
        })
    }

    pub fn name(self) -> String {
        match self {
            Op::Dump(k) => format!("DUMP {}", k.name()),
            Op::Restore(k) => format!("RESTORE {}", k.name()),
        }
    }

    fn kind(self) -> Kind {
        match self {
            Op::Dump(k) | Op::Restore(k) => k,
        }
    }
}

/// What the templates and key spaces look like.
#[derive(Clone, Debug)]
pub struct Spec {
    pub ops: Vec<Op>,
    /// Keys per kind, indexed by `Kind::index`.
    pub keys: [u64; 2],
    pub value_size: usize,
    pub fields: usize,
    pub field_length: usize,
}

impl Spec {
    fn uses(&self, kind: Kind) -> bool {
        self.ops.iter().any(|o| o.kind() == kind)
    }

    /// The command that writes `kind`'s template (after a DEL of it).
    fn template_command(&self, kind: Kind) -> Vec<Vec<u8>> {
        match kind {
            Kind::String => {
                let values = Values::new(ValueSize {
                    min: self.value_size,
                    max: self.value_size,
                });
                vec![
                    b"SET".to_vec(),
                    kind.template().to_vec(),
                    values.of(0).to_vec(),
                ]
            }
            Kind::Hash => {
                let values = Values::new(ValueSize {
                    min: self.field_length,
                    max: self.field_length,
                });
                let mut cmd = vec![b"HSET".to_vec(), kind.template().to_vec()];
                for f in 0..self.fields {
                    cmd.push(format!("field{f:03}").into_bytes());
                    cmd.push(values.of(f as u64).to_vec());
                }
                cmd
            }
        }
    }
}

pub struct Rdb {
    spec: Spec,
    requests: Option<u64>,
    verify: bool,
    clients: usize,
    /// The current target's DUMP of each template (set by `prepare`).
    payloads: Mutex<[Option<Arc<Vec<u8>>>; 2]>,
}

/// Requests per write while filling a key space: their replies (`+OK`) stay far below a
/// socket buffer, so the server never blocks on writing them while the client writes.
const FILL_BATCH: usize = 256;

impl Rdb {
    pub fn new(spec: Spec, requests: Option<u64>, verify: bool, clients: usize) -> Rdb {
        Rdb {
            spec,
            requests,
            verify,
            clients,
            payloads: Mutex::new([None, None]),
        }
    }

    /// Writes `kind`'s template, DUMPs it, and restores the payload under every key.
    fn make(&self, c: &mut Client, kind: Kind) -> Result<Vec<u8>, String> {
        c.ok(&[b"DEL".as_slice(), kind.template()])?;
        c.ok(&self.spec.template_command(kind))?;
        let payload = match c.ok(&[b"DUMP".as_slice(), kind.template()])? {
            Owned::Bulk(p) => p,
            other => return Err(format!("DUMP of the template replied {other:?}")),
        };
        let mut buf = Vec::new();
        let mut pending = 0;
        for k in 0..self.spec.keys[kind.index()] {
            restore_command(&mut buf, kind, k, &payload);
            pending += 1;
            if pending == FILL_BATCH {
                c.batch(&buf, pending)?;
                buf.clear();
                pending = 0;
            }
        }
        c.batch(&buf, pending)?;
        Ok(payload)
    }
}

/// `RESTORE <key> 0 <payload> REPLACE`.
fn restore_command(out: &mut Vec<u8>, kind: Kind, k: u64, payload: &[u8]) {
    push_header(out, b'*', 5);
    push_bulk(out, b"RESTORE");
    key_arg(out, kind.prefix(), k);
    push_bulk(out, b"0");
    push_bulk(out, payload);
    push_bulk(out, b"REPLACE");
}

struct RdbSession {
    op: Op,
    keys: u64,
    payload: Arc<Vec<u8>>,
    rng: Rng,
    verify: bool,
}

impl Session for RdbSession {
    fn begin(&mut self, _slot: usize, out: &mut Vec<u8>) -> Option<Started> {
        let k = self.rng.below(self.keys);
        match self.op {
            Op::Dump(kind) => {
                push_header(out, b'*', 2);
                push_bulk(out, b"DUMP");
                key_arg(out, kind.prefix(), k);
            }
            Op::Restore(kind) => restore_command(out, kind, k, &self.payload),
        }
        Some(Started { op: 0, requests: 1 })
    }

    fn reply(&mut self, _slot: usize, v: &Value, _out: &mut Vec<u8>) -> Result<u32, String> {
        match (self.op, v) {
            (Op::Restore(_), Value::Simple(b"OK")) => Ok(0),
            (Op::Dump(_), Value::Bulk(p)) if !self.verify || *p == self.payload.as_slice() => Ok(0),
            (Op::Dump(_), Value::Bulk(p)) => Err(format!(
                "DUMP returned a payload of {} bytes that is not the template's ({} bytes)",
                p.len(),
                self.payload.len()
            )),
            _ => Err(format!(
                "{} got an unexpected reply: {}",
                self.op.name(),
                v.show()
            )),
        }
    }
}

impl Workload for Rdb {
    fn name(&self) -> &'static str {
        "rdb"
    }

    fn prepare(&self, c: &mut Client) -> Result<(), String> {
        let mut made = [None, None];
        for kind in [Kind::String, Kind::Hash] {
            if self.spec.uses(kind) {
                made[kind.index()] = Some(Arc::new(self.make(c, kind)?));
            }
        }
        *self.payloads.lock().map_err(|_| "payloads lock poisoned")? = made;
        Ok(())
    }

    fn phase_count(&self) -> usize {
        self.spec.ops.len()
    }

    fn phase(&self, idx: usize) -> Result<Phase, String> {
        let op = *self.spec.ops.get(idx).ok_or("no such phase")?;
        let kind = op.kind();
        let payload = self.payloads.lock().map_err(|_| "payloads lock poisoned")?[kind.index()]
            .clone()
            .ok_or("the template was not dumped")?;
        let sessions = (0..self.clients)
            .map(|i| {
                Box::new(RdbSession {
                    op,
                    keys: self.spec.keys[kind.index()],
                    payload: payload.clone(),
                    rng: Rng::seeded(i as u64),
                    verify: self.verify,
                }) as Box<dyn Session>
            })
            .collect();
        Ok(Phase {
            name: op.name(),
            ops: vec![op.name()],
            requests: self.requests,
            sessions,
            timed: true,
        })
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "ops": self.spec.ops.iter().map(|o| o.name()).collect::<Vec<_>>(),
            "string_keys": self.spec.keys[Kind::String.index()],
            "hash_keys": self.spec.keys[Kind::Hash.index()],
            "value_size": self.spec.value_size,
            "fields": self.spec.fields,
            "field_length": self.spec.field_length,
            "requests": self.requests,
            "verify": self.verify,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::encode;

    #[test]
    fn ops_parse() {
        assert_eq!(Op::parse("restore-hash"), Ok(Op::Restore(Kind::Hash)));
        assert_eq!(Op::parse(" DUMP-string"), Ok(Op::Dump(Kind::String)));
        assert!(Op::parse("dump").is_err());
    }

    #[test]
    fn restore_command_is_one_well_formed_request() {
        let payload = b"\x00\x03abc\x0a\x00\r\n\xff binary";
        let mut fast = Vec::new();
        restore_command(&mut fast, Kind::Hash, 42, payload);
        let mut plain = Vec::new();
        encode(
            &mut plain,
            &[
                b"RESTORE".as_slice(),
                b"rdb:hash:000000000042",
                b"0",
                payload,
                b"REPLACE",
            ],
        );
        assert_eq!(fast, plain);
    }

    #[test]
    fn replies_are_checked() {
        let session = |op, verify| RdbSession {
            op,
            keys: 10,
            payload: Arc::new(b"template".to_vec()),
            rng: Rng::seeded(0),
            verify,
        };
        let mut out = Vec::new();
        let dump = Op::Dump(Kind::String);
        let restore = Op::Restore(Kind::Hash);
        // A DUMP must find its key; under --verify its payload must be the template's.
        assert!(session(dump, false)
            .reply(0, &Value::Bulk(b"other"), &mut out)
            .is_ok());
        assert!(session(dump, true)
            .reply(0, &Value::Bulk(b"other"), &mut out)
            .is_err());
        assert!(session(dump, true)
            .reply(0, &Value::Bulk(b"template"), &mut out)
            .is_ok());
        assert!(session(dump, false)
            .reply(0, &Value::Nil, &mut out)
            .is_err());
        assert!(session(restore, false)
            .reply(0, &Value::Simple(b"OK"), &mut out)
            .is_ok());
        assert!(session(restore, false)
            .reply(0, &Value::Int(1), &mut out)
            .is_err());
        // Requests go to keys of the op's kind, within the key space.
        let mut s = session(restore, false);
        for _ in 0..20 {
            out.clear();
            s.begin(0, &mut out);
            let text = String::from_utf8_lossy(&out);
            assert!(text.contains("$21\r\nrdb:hash:00000000000"), "{text}");
            assert!(
                text.ends_with("$8\r\ntemplate\r\n$7\r\nREPLACE\r\n"),
                "{text}"
            );
        }
    }

    #[test]
    fn hash_template_has_the_fields_asked_for() {
        let spec = Spec {
            ops: vec![Op::Dump(Kind::Hash)],
            keys: [0, 10],
            value_size: 1024,
            fields: 100,
            field_length: 12,
        };
        let cmd = spec.template_command(Kind::Hash);
        assert_eq!(cmd.len(), 2 + 200);
        assert_eq!(cmd[2], b"field000");
        assert_eq!(cmd[200], b"field099");
        assert!(cmd[3..].iter().step_by(2).all(|v| v.len() == 12));
        let s = spec.template_command(Kind::String);
        assert_eq!(s[2].len(), 1024);
        assert!(spec.uses(Kind::Hash) && !spec.uses(Kind::String));
    }
}
