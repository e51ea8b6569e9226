//! YCSB core workloads A-F, with the storage model of YCSB's own Redis binding
//! (`site.ycsb.db.RedisClient`), so results compare with published YCSB-on-Redis runs:
//!
//! - a record is a hash `user<fnvhash64(keynum)>` with fields `field0..`, written by
//!   HMSET; an insert also adds the key to the sorted set `_indices`, scored by Java's
//!   `String.hashCode()` of the key;
//! - read is HGETALL (YCSB's default readallfields=true), and an empty reply is an error
//!   as in the binding; update is HMSET of one field (writeallfields=false);
//! - scan is ZRANGEBYSCORE `_indices` from the start key's score, LIMIT 0 len, then one
//!   HGETALL per key in turn; read-modify-write is a read then an update.
//!
//! Key choice ports CoreWorkload: ScrambledZipfian over the records plus the expected
//! inserts (skipping keys not inserted yet), uniform, or SkewedLatest over the insert
//! sequence, which advances only past acknowledged inserts (AcknowledgedCounterGenerator).

use crate::conn::{push_bulk, push_header, Client};
use crate::driver::{Phase, PhaseResult, Session, Started};
use crate::keys::{fnvhash64, ScrambledZipfian, ValueSize, Values, Zipfian, YCSB_THETA};
use crate::reply::Value;
use crate::rng::Rng;
use crate::workloads::Workload;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const INDEX_KEY: &[u8] = b"_indices";
const MAX_SCAN_LENGTH: u64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    Zipfian,
    Uniform,
    Latest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Update,
    Insert,
    Scan,
    Rmw,
}

const KINDS: [(Kind, &str); 5] = [
    (Kind::Read, "READ"),
    (Kind::Update, "UPDATE"),
    (Kind::Insert, "INSERT"),
    (Kind::Scan, "SCAN"),
    (Kind::Rmw, "READ-MODIFY-WRITE"),
];

#[derive(Clone, Debug)]
pub struct Spec {
    pub workload: char,
    pub records: u64,
    /// Run-phase operations (None: until --duration ends).
    pub operations: Option<u64>,
    pub fields: usize,
    pub field_length: usize,
    /// Proportions of read, update, insert, scan, read-modify-write (CoreWorkload's).
    props: [f64; 5],
    pub dist: Dist,
    pub load: bool,
    pub run: bool,
}

impl Spec {
    pub fn new(
        workload: &str,
        records: u64,
        operations: u64,
        fields: usize,
        field_length: usize,
        distribution: Option<&str>,
        phases: &str,
    ) -> Result<Spec, String> {
        let w = workload.trim().to_ascii_lowercase();
        let w = w.strip_prefix("workload").unwrap_or(&w);
        // The proportions in YCSB's workloads/workload[a-f] files.
        let (props, dist) = match w {
            "a" => ([0.5, 0.5, 0.0, 0.0, 0.0], Dist::Zipfian),
            "b" => ([0.95, 0.05, 0.0, 0.0, 0.0], Dist::Zipfian),
            "c" => ([1.0, 0.0, 0.0, 0.0, 0.0], Dist::Zipfian),
            "d" => ([0.95, 0.0, 0.05, 0.0, 0.0], Dist::Latest),
            "e" => ([0.0, 0.0, 0.05, 0.95, 0.0], Dist::Zipfian),
            "f" => ([0.5, 0.0, 0.0, 0.0, 0.5], Dist::Zipfian),
            _ => {
                return Err(format!(
                    "unknown YCSB workload {workload:?}: a, b, c, d, e or f"
                ))
            }
        };
        let dist = match distribution {
            None => dist,
            Some("zipfian") => Dist::Zipfian,
            Some("uniform") => Dist::Uniform,
            Some("latest") => Dist::Latest,
            Some(d) => {
                return Err(format!(
                    "unknown distribution {d:?}: zipfian, uniform or latest"
                ))
            }
        };
        if records < 2 || fields == 0 {
            return Err("--records must be at least 2 and --fields at least 1".into());
        }
        let mut load = false;
        let mut run = false;
        for p in phases.split(',') {
            match p.trim() {
                "load" => load = true,
                "run" => run = true,
                other => return Err(format!("unknown phase {other:?}: load, run")),
            }
        }
        Ok(Spec {
            workload: w.chars().next().unwrap_or('a'),
            records,
            operations: Some(operations),
            fields,
            field_length,
            props,
            dist,
            load,
            run,
        })
    }
}

/// YCSB's AcknowledgedCounterGenerator: hands out insert key numbers, and tells readers
/// the highest number below which every insert has completed.
struct Acked {
    next: AtomicU64,
    done: Mutex<(u64, BTreeSet<u64>)>,
}

impl Acked {
    fn new(start: u64) -> Acked {
        Acked {
            next: AtomicU64::new(start),
            done: Mutex::new((start - 1, BTreeSet::new())),
        }
    }

    fn take(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn ack(&self, v: u64) {
        if let Ok(mut g) = self.done.lock() {
            let (limit, pending) = &mut *g;
            pending.insert(v);
            while pending.remove(&(*limit + 1)) {
                *limit += 1;
            }
        }
    }

    fn last(&self) -> u64 {
        self.done.lock().map(|g| g.0).unwrap_or(0)
    }
}

pub struct Ycsb {
    spec: Spec,
    clients: usize,
    pipeline: usize,
    verify: bool,
    values: Values,
    /// Insert numbering for the current run phase (fresh for each target and round).
    inserts: Mutex<Arc<Acked>>,
}

impl Ycsb {
    pub fn new(spec: Spec, clients: usize, pipeline: usize, verify: bool) -> Ycsb {
        let values = Values::new(ValueSize {
            min: spec.field_length,
            max: spec.field_length,
        });
        let records = spec.records;
        Ycsb {
            spec,
            clients,
            pipeline,
            verify,
            values,
            inserts: Mutex::new(Arc::new(Acked::new(records))),
        }
    }

    fn phases(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.spec.load {
            v.push("load");
        }
        if self.spec.run {
            v.push("run");
        }
        v
    }
}

/// The record key for a key number: "user" + fnvhash64 (YCSB's hashed insert order).
pub fn record_key(keynum: u64) -> Vec<u8> {
    format!("user{}", fnvhash64(keynum)).into_bytes()
}

/// Java's `String.hashCode()` (the `_indices` score), for ASCII keys.
pub fn java_hash(s: &[u8]) -> i32 {
    s.iter()
        .fold(0i32, |h, &c| h.wrapping_mul(31).wrapping_add(c as i32))
}

enum Chooser {
    Zipf(ScrambledZipfian),
    Uniform(u64),
    Latest(Zipfian),
}

#[derive(Default)]
struct SlotState {
    kind: Option<Kind>,
    key: Vec<u8>,
    keynum: u64,
    step: u8,
    scan_keys: Vec<Vec<u8>>,
    scan_at: usize,
}

struct YcsbSession {
    load: bool,
    load_next: Arc<AtomicU64>,
    records: u64,
    ops: Vec<Kind>,
    cum: Vec<f64>,
    chooser: Chooser,
    inserts: Arc<Acked>,
    rng: Rng,
    fields: usize,
    values: Values,
    verify: bool,
    slots: Vec<SlotState>,
}

impl YcsbSession {
    fn next_keynum(&mut self) -> u64 {
        match &mut self.chooser {
            Chooser::Zipf(z) => {
                // Skip keys whose insert has not been acknowledged yet, as YCSB does.
                let last = self.inserts.last();
                loop {
                    let k = z.next(&mut self.rng);
                    if k <= last {
                        return k;
                    }
                }
            }
            Chooser::Uniform(n) => self.rng.below(*n),
            Chooser::Latest(z) => {
                let max = self.inserts.last();
                max - z.next_of(&mut self.rng, max)
            }
        }
    }

    fn hmset_all(&self, out: &mut Vec<u8>, key: &[u8], keynum: u64) {
        push_header(out, b'*', 2 + 2 * self.fields);
        push_bulk(out, b"HMSET");
        push_bulk(out, key);
        for f in 0..self.fields {
            push_bulk(out, format!("field{f}").as_bytes());
            push_bulk(out, self.values.of(keynum * self.fields as u64 + f as u64));
        }
    }

    fn hmset_one(&mut self, out: &mut Vec<u8>, key: &[u8]) {
        let f = self.rng.below(self.fields as u64);
        push_header(out, b'*', 4);
        push_bulk(out, b"HMSET");
        push_bulk(out, key);
        push_bulk(out, format!("field{f}").as_bytes());
        let v = self.rng.next_u64();
        push_bulk(out, self.values.of(v));
    }

    fn hgetall(out: &mut Vec<u8>, key: &[u8]) {
        push_header(out, b'*', 2);
        push_bulk(out, b"HGETALL");
        push_bulk(out, key);
    }

    fn zadd(out: &mut Vec<u8>, key: &[u8]) {
        push_header(out, b'*', 4);
        push_bulk(out, b"ZADD");
        push_bulk(out, INDEX_KEY);
        push_bulk(out, java_hash(key).to_string().as_bytes());
        push_bulk(out, key);
    }

    fn check_read(&self, v: &Value) -> Result<(), String> {
        let n = v.array().map(|a| a.len()).unwrap_or(0);
        if n == 0 {
            // The binding returns Status.ERROR for a read that finds nothing.
            return Err("read found no record".into());
        }
        if self.verify && n != 2 * self.fields {
            return Err(format!(
                "read returned {} fields, not {}",
                n / 2,
                self.fields
            ));
        }
        Ok(())
    }

    fn check_ok(v: &Value) -> Result<(), String> {
        match v {
            Value::Simple(b"OK") => Ok(()),
            other => Err(format!("HMSET replied {}", other.show())),
        }
    }
}

impl Session for YcsbSession {
    fn begin(&mut self, slot: usize, out: &mut Vec<u8>) -> Option<Started> {
        if self.load {
            let keynum = self.load_next.fetch_add(1, Ordering::Relaxed);
            if keynum >= self.records {
                return None;
            }
            let key = record_key(keynum);
            self.hmset_all(out, &key, keynum);
            self.slots[slot] = SlotState {
                kind: Some(Kind::Insert),
                key,
                keynum,
                ..Default::default()
            };
            return Some(Started { op: 0, requests: 1 });
        }
        let u = self.rng.f64();
        let idx = self
            .cum
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.ops.len() - 1);
        let kind = self.ops[idx];
        let mut st = SlotState {
            kind: Some(kind),
            ..Default::default()
        };
        match kind {
            Kind::Insert => {
                st.keynum = self.inserts.take();
                st.key = record_key(st.keynum);
                self.hmset_all(out, &st.key, st.keynum);
            }
            Kind::Read | Kind::Rmw => {
                st.keynum = self.next_keynum();
                st.key = record_key(st.keynum);
                Self::hgetall(out, &st.key);
            }
            Kind::Update => {
                st.keynum = self.next_keynum();
                st.key = record_key(st.keynum);
                let key = st.key.clone();
                self.hmset_one(out, &key);
            }
            Kind::Scan => {
                st.keynum = self.next_keynum();
                st.key = record_key(st.keynum);
                let len = 1 + self.rng.below(MAX_SCAN_LENGTH);
                push_header(out, b'*', 7);
                push_bulk(out, b"ZRANGEBYSCORE");
                push_bulk(out, INDEX_KEY);
                push_bulk(out, java_hash(&st.key).to_string().as_bytes());
                push_bulk(out, b"+inf");
                push_bulk(out, b"LIMIT");
                push_bulk(out, b"0");
                push_bulk(out, len.to_string().as_bytes());
            }
        }
        self.slots[slot] = st;
        Some(Started {
            op: idx,
            requests: 1,
        })
    }

    fn reply(&mut self, slot: usize, v: &Value, out: &mut Vec<u8>) -> Result<u32, String> {
        let mut st = std::mem::take(&mut self.slots[slot]);
        let r = (|| -> Result<u32, String> {
            match (st.kind, st.step) {
                (Some(Kind::Insert), 0) => {
                    Self::check_ok(v)?;
                    Self::zadd(out, &st.key);
                    st.step = 1;
                    Ok(1)
                }
                (Some(Kind::Insert), _) => match v {
                    Value::Int(_) => Ok(0),
                    other => Err(format!("ZADD replied {}", other.show())),
                },
                (Some(Kind::Read), _) => self.check_read(v).map(|_| 0),
                (Some(Kind::Update), _) => Self::check_ok(v).map(|_| 0),
                (Some(Kind::Rmw), 0) => {
                    self.check_read(v)?;
                    let key = st.key.clone();
                    self.hmset_one(out, &key);
                    st.step = 1;
                    Ok(1)
                }
                (Some(Kind::Rmw), _) => Self::check_ok(v).map(|_| 0),
                (Some(Kind::Scan), 0) => {
                    let keys = v
                        .array()
                        .ok_or_else(|| format!("ZRANGEBYSCORE replied {}", v.show()))?;
                    st.scan_keys = keys
                        .iter()
                        .filter_map(|k| k.bytes().map(|b| b.to_vec()))
                        .collect();
                    st.step = 1;
                    st.scan_at = 0;
                    self.scan_next(&mut st, out)
                }
                (Some(Kind::Scan), _) => {
                    self.check_read(v)?;
                    self.scan_next(&mut st, out)
                }
                (None, _) => Err("reply for an idle slot".into()),
            }
        })();
        self.slots[slot] = st;
        r
    }

    fn done(&mut self, slot: usize, ok: bool) {
        let st = &self.slots[slot];
        if st.kind == Some(Kind::Insert) && !self.load && ok {
            self.inserts.ack(st.keynum);
        }
    }
}

impl YcsbSession {
    /// A scan reads its keys one after the other, as the binding's loop of read() does.
    fn scan_next(&mut self, st: &mut SlotState, out: &mut Vec<u8>) -> Result<u32, String> {
        match st.scan_keys.get(st.scan_at) {
            Some(k) => {
                Self::hgetall(out, k);
                st.scan_at += 1;
                Ok(1)
            }
            None => Ok(0),
        }
    }
}

impl Workload for Ycsb {
    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn prepare(&self, _c: &mut Client) -> Result<(), String> {
        if let Ok(mut g) = self.inserts.lock() {
            *g = Arc::new(Acked::new(self.spec.records));
        }
        Ok(())
    }

    fn phase_count(&self) -> usize {
        self.phases().len()
    }

    fn phase(&self, idx: usize) -> Result<Phase, String> {
        let name = self.phases()[idx];
        let load = name == "load";
        let (ops, cum): (Vec<Kind>, Vec<f64>) = if load {
            (vec![Kind::Insert], vec![1.0])
        } else {
            let total: f64 = self.spec.props.iter().sum();
            let mut acc = 0.0;
            KINDS
                .iter()
                .zip(self.spec.props)
                .filter(|(_, p)| *p > 0.0)
                .map(|((k, _), p)| {
                    acc += p / total;
                    (*k, acc)
                })
                .unzip()
        };
        let names = ops
            .iter()
            .map(|k| {
                KINDS
                    .iter()
                    .find(|(x, _)| x == k)
                    .map(|(_, n)| n.to_string())
                    .unwrap_or_default()
            })
            .collect();
        let inserts = self
            .inserts
            .lock()
            .map(|g| g.clone())
            .map_err(|_| "insert counter poisoned")?;
        let load_next = Arc::new(AtomicU64::new(0));
        let records = self.spec.records;
        let insert_share = self.spec.props[2];
        // CoreWorkload: expectednewkeys = operationcount * insertproportion * 2.
        let expected_new =
            (self.spec.operations.unwrap_or(records) as f64 * insert_share * 2.0) as u64;
        let mut sessions: Vec<Box<dyn Session>> = Vec::new();
        for i in 0..self.clients {
            let chooser = match self.spec.dist {
                Dist::Zipfian => {
                    Chooser::Zipf(ScrambledZipfian::new(0, records + expected_new - 1))
                }
                Dist::Uniform => Chooser::Uniform(records),
                Dist::Latest => Chooser::Latest(Zipfian::new(0, records - 1, YCSB_THETA)),
            };
            sessions.push(Box::new(YcsbSession {
                load,
                load_next: load_next.clone(),
                records,
                ops: ops.clone(),
                cum: cum.clone(),
                chooser,
                inserts: inserts.clone(),
                rng: Rng::seeded(i as u64 + 1000),
                fields: self.spec.fields,
                values: self.values.clone(),
                verify: self.verify,
                slots: (0..self.pipeline.max(1))
                    .map(|_| SlotState::default())
                    .collect(),
            }));
        }
        Ok(Phase {
            name: name.into(),
            ops: names,
            requests: if load { None } else { self.spec.operations },
            sessions,
            timed: !load,
        })
    }

    /// Checks writes: every record the load phase and the run's inserts wrote is indexed
    /// and holds all its fields.
    fn check(&self, c: &mut Client, results: &[PhaseResult]) -> Result<Vec<String>, String> {
        let inserted: u64 = results
            .iter()
            .filter(|r| r.name == "run")
            .flat_map(|r| &r.ops)
            .filter(|o| o.name == "INSERT")
            .map(|o| o.count - o.errors)
            .sum();
        let indexed = c
            .ok(&[&b"ZCARD"[..], INDEX_KEY])?
            .int()
            .ok_or("ZCARD did not reply an integer")?;
        let expected_min = if self.spec.load { self.spec.records } else { 0 } + inserted;
        if (indexed as u64) < expected_min {
            return Err(format!(
                "check writes: _indices holds {indexed} keys, expected at least {expected_min}"
            ));
        }
        let mut rng = Rng::new(99);
        let top = self.inserts.lock().map(|g| g.last()).unwrap_or(0);
        for _ in 0..20 {
            let k = record_key(rng.below(top + 1));
            let n = c.ok(&[&b"HLEN"[..], &k])?.int().unwrap_or(0);
            if n as usize != self.spec.fields {
                return Err(format!(
                    "check writes: {} has {n} fields, expected {}",
                    String::from_utf8_lossy(&k),
                    self.spec.fields
                ));
            }
        }
        Ok(vec![format!(
            "check writes: ok ({indexed} records indexed in _indices, {inserted} inserted by the run; 20 sampled records complete)"
        )])
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "workload": self.spec.workload.to_string(),
            "records": self.spec.records,
            "operations": self.spec.operations,
            "fields": self.spec.fields,
            "field_length": self.spec.field_length,
            "proportions": {"read": self.spec.props[0], "update": self.spec.props[1], "insert": self.spec.props[2], "scan": self.spec.props[3], "readmodifywrite": self.spec.props[4]},
            "distribution": format!("{:?}", self.spec.dist).to_ascii_lowercase(),
            "load": self.spec.load,
            "run": self.spec.run,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_string_hash_code() {
        // "Aa" and "BB" collide in Java; "abc".hashCode() = 96354.
        assert_eq!(java_hash(b"Aa"), java_hash(b"BB"));
        assert_eq!(java_hash(b"abc"), 97 * 31 * 31 + 98 * 31 + 99);
        assert_eq!(java_hash(b""), 0);
    }

    #[test]
    fn acked_counter_advances_only_past_contiguous_acks() {
        let a = Acked::new(10);
        assert_eq!(a.last(), 9);
        let (x, y, z) = (a.take(), a.take(), a.take());
        a.ack(y);
        assert_eq!(a.last(), 9);
        a.ack(x);
        assert_eq!(a.last(), 11);
        a.ack(z);
        assert_eq!(a.last(), 12);
    }

    #[test]
    fn workloads_have_ycsb_proportions() {
        let e = Spec::new("e", 100, 100, 10, 100, None, "load,run").expect("spec");
        assert_eq!(e.props, [0.0, 0.0, 0.05, 0.95, 0.0]);
        let d = Spec::new("workloadd", 100, 100, 10, 100, None, "run").expect("spec");
        assert_eq!(d.dist, Dist::Latest);
        assert!(!d.load && d.run);
        assert!(Spec::new("g", 100, 100, 10, 100, None, "run").is_err());
    }
}
