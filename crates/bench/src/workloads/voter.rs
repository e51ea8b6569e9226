//! `voter`: VoltDB's voter benchmark against the function library in
//! `examples/voter/voter.lua`. Preparation loads the library, clears the voter keys and
//! initializes the contestants and the area code table; clients then call
//! `FCALL vote` with phone calls generated as VoltDB's PhoneCallGenerator does (a random
//! known area code and seven random digits; a skewed choice of contestant; about one call
//! in a hundred for a contestant that does not exist). At the end the writes are checked
//! (the views add up to the accepted votes) and the results printed as erlvolt's bench does.
//!
//! `--partitions N` splits the tables as VoltDB partitions them: votes and both views by
//! phone number, the two reference tables replicated in each partition. Partition `p`'s
//! keys are `voter:{p}:<table>` and a call goes to partition `phone % N`. Calls in
//! different partitions touch disjoint keys, so a server may run them in parallel. With
//! one partition (the default) the keys are the plain `voter:<table>`.

use crate::conn::{push_bulk, push_header, Client, Owned};
use crate::driver::{Phase, PhaseResult, Session, Started};
use crate::reply::Value;
use crate::rng::Rng;
use crate::workloads::Workload;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The library, shipped in the binary so a run needs no file next to it.
pub const LIBRARY: &str = include_str!("../../../../examples/voter/voter.lua");

/// One partition's five keys.
#[derive(Clone)]
struct Keys {
    contestants: String,
    by_phone: String,
    area_state: String,
    votes: String,
    by_cs: String,
}

impl Keys {
    fn of(partition: u32, partitions: u32) -> Keys {
        let name = |table: &str| {
            if partitions == 1 {
                format!("voter:{table}")
            } else {
                format!("voter:{{{partition}}}:{table}")
            }
        };
        Keys {
            contestants: name("contestants"),
            by_phone: name("by_phone"),
            area_state: name("area_state"),
            votes: name("votes"),
            by_cs: name("by_cs"),
        }
    }

    fn all(partitions: u32) -> Vec<Keys> {
        (0..partitions).map(|p| Keys::of(p, partitions)).collect()
    }
}

/// The contestant names of VoltDB's voter example.
const NAMES: [&str; 10] = [
    "Edwina Burnam",
    "Tabatha Gehling",
    "Kelly Clauss",
    "Jessie Alloway",
    "Alana Bregman",
    "Jessie Eichman",
    "Allie Rogalski",
    "Nita Coster",
    "Kurt Walser",
    "Ericka Dieter",
];

/// Replies of `vote`, counted over every call of a run (warm-up included, since the
/// server's tables hold those votes too).
#[derive(Default)]
struct Tally {
    accepted: AtomicU64,
    invalid: AtomicU64,
    over_limit: AtomicU64,
}

pub struct Voter {
    contestants: u32,
    max_votes: u32,
    partitions: u32,
    requests: Option<u64>,
    clients: usize,
    area_codes: Mutex<Arc<Vec<u16>>>,
    tally: Mutex<Arc<Tally>>,
}

impl Voter {
    pub fn new(
        contestants: u32,
        max_votes: u32,
        partitions: u32,
        requests: Option<u64>,
        clients: usize,
    ) -> Voter {
        Voter {
            contestants,
            max_votes,
            partitions: partitions.max(1),
            requests,
            clients,
            area_codes: Mutex::new(Arc::new(Vec::new())),
            tally: Mutex::new(Arc::new(Tally::default())),
        }
    }
}

struct VoterSession {
    keys: Arc<Vec<Keys>>,
    area_codes: Arc<Vec<u16>>,
    /// Contestant numbers weighted so some are more popular than others.
    voting_map: Vec<u32>,
    max_votes: Vec<u8>,
    rng: Rng,
    tally: Arc<Tally>,
}

impl Session for VoterSession {
    fn begin(&mut self, _slot: usize, out: &mut Vec<u8>) -> Option<Started> {
        let area = self.area_codes[self.rng.below(self.area_codes.len() as u64) as usize];
        let phone = area as u64 * 10_000_000 + self.rng.below(10_000_000);
        // About one call in a hundred is for a contestant that does not exist.
        let contestant = if self.rng.below(100) == 0 {
            999
        } else {
            self.voting_map[self.rng.below(self.voting_map.len() as u64) as usize]
        };
        let k = &self.keys[(phone % self.keys.len() as u64) as usize];
        push_header(out, b'*', 11);
        for a in [
            "FCALL",
            "vote",
            "5",
            &k.contestants,
            &k.by_phone,
            &k.area_state,
            &k.votes,
            &k.by_cs,
        ] {
            push_bulk(out, a.as_bytes());
        }
        push_bulk(out, phone.to_string().as_bytes());
        push_bulk(out, contestant.to_string().as_bytes());
        push_bulk(out, &self.max_votes);
        Some(Started { op: 0, requests: 1 })
    }

    fn reply(&mut self, _slot: usize, v: &Value, _out: &mut Vec<u8>) -> Result<u32, String> {
        let counter = match v {
            Value::Int(0) => &self.tally.accepted,
            Value::Int(1) => &self.tally.invalid,
            Value::Int(2) => &self.tally.over_limit,
            other => return Err(format!("vote replied {}", other.show())),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(0)
    }
}

fn fmt_thousands(n: i64) -> String {
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

impl Workload for Voter {
    fn name(&self) -> &'static str {
        "voter"
    }

    /// The preparation phase: load the library, clear the tables, initialize them (in
    /// every partition).
    fn prepare(&self, c: &mut Client) -> Result<(), String> {
        c.ok(&["FUNCTION", "LOAD", "REPLACE", LIBRARY])
            .map_err(|e| format!("{e} (voter needs Redis 7 functions)"))?;
        let all = Keys::all(self.partitions);
        for k in &all {
            c.ok(&[
                "DEL",
                &k.contestants,
                &k.by_phone,
                &k.area_state,
                &k.votes,
                &k.by_cs,
            ])?;
            let mut args: Vec<&str> =
                vec!["FCALL", "initialize", "2", &k.contestants, &k.area_state];
            args.extend(NAMES.iter().take(self.contestants as usize));
            c.ok(&args)?;
        }
        let codes: Vec<u16> = c
            .ok(&["HKEYS", &all[0].area_state])?
            .items()
            .iter()
            .filter_map(|o| o.text().and_then(|t| t.parse().ok()))
            .collect();
        if codes.is_empty() {
            return Err("initialize left no area codes".into());
        }
        if let Ok(mut g) = self.area_codes.lock() {
            *g = Arc::new(codes);
        }
        if let Ok(mut g) = self.tally.lock() {
            *g = Arc::new(Tally::default());
        }
        Ok(())
    }

    fn phase_count(&self) -> usize {
        1
    }

    fn phase(&self, _idx: usize) -> Result<Phase, String> {
        let area_codes = self.area_codes.lock().map_err(|_| "poisoned")?.clone();
        let tally = self.tally.lock().map_err(|_| "poisoned")?.clone();
        // A skewed popularity: contestant k gets weight k (so the last is the favourite),
        // shuffled by a fixed seed so the favourite is not always the last number.
        let mut order: Vec<u32> = (1..=self.contestants).collect();
        let mut shuffle = Rng::new(2012);
        for i in (1..order.len()).rev() {
            order.swap(i, shuffle.below(i as u64 + 1) as usize);
        }
        let voting_map: Vec<u32> = order
            .iter()
            .enumerate()
            .flat_map(|(w, &c)| std::iter::repeat_n(c, w + 1))
            .collect();
        let keys = Arc::new(Keys::all(self.partitions));
        let sessions = (0..self.clients)
            .map(|i| {
                Box::new(VoterSession {
                    keys: keys.clone(),
                    area_codes: area_codes.clone(),
                    voting_map: voting_map.clone(),
                    max_votes: self.max_votes.to_string().into_bytes(),
                    rng: Rng::seeded(i as u64 + 7000),
                    tally: tally.clone(),
                }) as Box<dyn Session>
            })
            .collect();
        Ok(Phase {
            name: "vote".into(),
            ops: vec!["vote".into()],
            requests: self.requests,
            sessions,
            timed: true,
        })
    }

    /// "Check writes": the inserted votes and both views add up to the votes the calls
    /// accepted, and no phone number voted more than allowed. Then the results.
    fn check(&self, c: &mut Client, _results: &[PhaseResult]) -> Result<Vec<String>, String> {
        let tally = self.tally.lock().map_err(|_| "poisoned")?.clone();
        let accepted = tally.accepted.load(Ordering::Relaxed) as i64;
        // Each partition's results, added up (the most votes of one phone: the largest).
        let (mut inserted, mut sum_phone, mut sum_cs, mut most) = (0, 0, 0, 0);
        let mut per_name: BTreeMap<String, i64> = BTreeMap::new();
        for k in Keys::all(self.partitions) {
            let r = c.ok(&[
                "FCALL_RO",
                "results",
                "4",
                &k.contestants,
                &k.by_phone,
                &k.votes,
                &k.by_cs,
            ])?;
            let items = r.items();
            let num = |i: usize| items.get(i).and_then(Owned::int).unwrap_or(-1);
            inserted += num(0);
            sum_phone += num(1);
            sum_cs += num(2);
            most = most.max(num(3));
            for ch in items.get(4..).unwrap_or_default().chunks(3) {
                if let [_, name, votes] = ch {
                    if let (Some(name), Some(votes)) = (name.text(), votes.int()) {
                        *per_name.entry(name).or_default() += votes;
                    }
                }
            }
        }
        let mut lines = vec![
            format!(
                "Accepted votes: {}   rejected, invalid contestant: {}   rejected, over the limit of {} per phone: {}",
                fmt_thousands(accepted),
                fmt_thousands(tally.invalid.load(Ordering::Relaxed) as i64),
                self.max_votes,
                fmt_thousands(tally.over_limit.load(Ordering::Relaxed) as i64),
            ),
            String::new(),
            format!(" {:<30} {:>15}", "Contestant Name", "Votes Received"),
        ];
        let rows: Vec<(String, i64)> = per_name.into_iter().collect();
        let mut total = 0;
        for (name, votes) in &rows {
            lines.push(format!(" {name:<30} {:>15}", fmt_thousands(*votes)));
            total += votes;
        }
        if let Some((winner, _)) = rows.iter().max_by_key(|r| r.1) {
            lines.push(format!(" The Winner is: {winner}"));
        }
        lines.push(String::new());
        let problems: Vec<String> = [
            (inserted != accepted).then(|| format!("{inserted} votes inserted")),
            (sum_phone != accepted).then(|| format!("votes by phone add up to {sum_phone}")),
            (sum_cs != accepted)
                .then(|| format!("votes by contestant and state add up to {sum_cs}")),
            (total != accepted).then(|| format!("votes per contestant add up to {total}")),
            (most > self.max_votes as i64).then(|| {
                format!(
                    "a phone number voted {most} times (limit {})",
                    self.max_votes
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !problems.is_empty() {
            return Err(format!(
                "check writes: {} accepted, but {}",
                accepted,
                problems.join(", ")
            ));
        }
        lines.push(format!(
            "check writes: ok ({} votes; both views and the votes table agree)",
            fmt_thousands(accepted)
        ));
        Ok(lines)
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "contestants": self.contestants,
            "max_votes": self.max_votes,
            "partitions": self.partitions,
            "requests": self.requests,
            "library": "examples/voter/voter.lua",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(fmt_thousands(0), "0");
        assert_eq!(fmt_thousands(1234567), "1,234,567");
        assert_eq!(fmt_thousands(-1000), "-1,000");
    }

    #[test]
    fn library_registers_the_functions() {
        assert!(LIBRARY.starts_with("#!lua name=voter"));
        for f in ["'initialize'", "'vote'", "'results'"] {
            assert!(LIBRARY.contains(f), "{f}");
        }
    }
}
