//! MEMORY USAGE STATS DOCTOR MALLOC-STATS PURGE HELP, and the memory figures INFO shares
//! with MEMORY STATS ([`Report`]).
//!
//! MEMORY USAGE answers what Strata's own encodings of the key take
//! (`strata_engine::memory`): a compact string is one block with its key (Redis: a
//! dictEntry, a key sds and a value object), so small keys report less than in Redis;
//! collections report their structures and elements, sampled as Redis samples them.

use crate::commands::info::human;
use crate::exec::command::{flags::*, ks, CmdError, CmdResult, Command, KeySpec, Keys};
use crate::exec::ctx::Ctx;
use crate::server::Server;
use crate::services::memory;
use std::sync::atomic::Ordering::Relaxed;

pub const COMMANDS: &[Command] = &[Command {
    name: "memory",
    arity: -2,
    group: "server",
    summary: "A container for memory diagnostics commands",
    since: "4.0.0",
    handler: super::container,
    subcommands: SUBCOMMANDS,
    ..Command::DEFAULT
}];

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    arity: 2,
    group: "server",
    since: "4.0.0",
    ..Command::DEFAULT
};

/// Redis's tips for the reports: a cluster client asks every shard, and the replies are
/// each shard's own.
const REPORT_TIPS: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_shards",
    "response_policy:special",
];

const SUBCOMMANDS: &[Command] = &[
    Command {
        name: "doctor",
        summary: "Outputs memory problems report",
        tips: REPORT_TIPS,
        handler: memory_doctor,
        ..FAMILY
    },
    Command {
        name: "help",
        flags: LOADING | STALE,
        summary: "Show helpful text about the different subcommands",
        handler: memory_help,
        ..FAMILY
    },
    Command {
        name: "malloc-stats",
        summary: "Show allocator internal stats",
        tips: REPORT_TIPS,
        handler: memory_malloc_stats,
        ..FAMILY
    },
    Command {
        name: "purge",
        summary: "Ask the allocator to release memory",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        handler: memory_purge,
        ..FAMILY
    },
    Command {
        name: "stats",
        summary: "Show memory usage details",
        tips: REPORT_TIPS,
        handler: memory_stats,
        ..FAMILY
    },
    Command {
        name: "usage",
        arity: -3,
        flags: READONLY,
        keys: Keys::Specs(&[KeySpec::range(ks::RO, 2, 0, 1)]),
        summary: "Estimate the memory usage of a key",
        complexity: "O(N) where N is the number of samples.",
        args: "key#key [SAMPLES:count#int]",
        handler: memory_usage,
        ..FAMILY
    },
];

const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Report on the memory figures that look unusual, and what they may mean.",
    "MALLOC-STATS",
    "    The memory allocator's own statistics, as text.",
    "PURGE",
    "    Ask the allocator to give unused pages back to the system.",
    "STATS",
    "    How the memory in use divides up (the figures INFO memory reports, and more).",
    "USAGE <key> [SAMPLES <count>]",
    "    The bytes <key> and its value take. Collections are estimated from <count>",
    "    of their elements (5 by default; 0 reads them all).",
    "HELP",
    "    Print this help.",
];

fn memory_help(ctx: &mut Ctx<'_>) -> CmdResult {
    super::help_text(ctx, HELP)
}

/// MEMORY USAGE key [SAMPLES count].
fn memory_usage(ctx: &mut Ctx<'_>) -> CmdResult {
    let mut samples = 5usize;
    let mut i = 3;
    while i < ctx.argv.len() {
        if ctx.arg(i).eq_ignore_ascii_case(b"samples") && i + 1 < ctx.argv.len() {
            let n = ctx.int_arg(i + 1)?;
            if n < 0 {
                return Err(CmdError::SYNTAX);
            }
            samples = n as usize;
            i += 2;
        } else {
            return Err(CmdError::SYNTAX);
        }
    }
    let key = ctx.arg(2);
    let mut l = ctx.db().lock1_at(ctx.now_ms, key).no_touch(true);
    match l.peek(key).map(|e| e.memory_usage(samples)) {
        Some(bytes) => ctx.out.int(i64::try_from(bytes).unwrap_or(i64::MAX)),
        None => ctx.out.null(),
    }
    Ok(())
}

/// How the memory in use divides up: INFO memory's and MEMORY STATS's figures.
pub struct Report {
    pub used: u64,
    pub peak: u64,
    pub startup: u64,
    pub rss: u64,
    pub allocator: memory::Allocator,
    /// Client query buffers.
    pub clients: u64,
    /// The journal's buffered records (Redis's AOF buffer).
    pub journal: u64,
    /// Per database with keys: (index, keys, table bytes).
    pub dbs: Vec<(usize, usize, u64)>,
}

impl Report {
    pub fn gather(server: &Server) -> Report {
        let used = server.memory.sample();
        let clients = server
            .clients
            .snapshot()
            .iter()
            .map(|c| c.qbuf.load(Relaxed) as u64)
            .sum();
        let ks = &server.keyspace;
        let dbs = (0..ks.db_count())
            .filter_map(|i| {
                let db = ks.db(i);
                let keys = db.len();
                (keys > 0).then(|| (i, keys, strata_engine::memory::table_overhead(db) as u64))
            })
            .collect();
        Report {
            used,
            peak: server.memory.peak(),
            startup: server.memory.startup.load(Relaxed),
            rss: memory::rss_bytes(),
            allocator: memory::allocator(),
            clients,
            journal: crate::services::evict::Evictor::journal_buffers(server),
            dbs,
        }
    }

    /// What is not the data set: start-up memory, client buffers, the journal's buffer,
    /// the key tables.
    pub fn overhead(&self) -> u64 {
        self.startup + self.clients + self.journal + self.dbs.iter().map(|d| d.2).sum::<u64>()
    }

    pub fn dataset(&self) -> u64 {
        self.used.saturating_sub(self.overhead())
    }

    pub fn keys(&self) -> usize {
        self.dbs.iter().map(|d| d.1).sum()
    }

    /// `part` as a percentage of `whole` (0 when `whole` is 0).
    pub fn percent(part: u64, whole: u64) -> f64 {
        if whole == 0 {
            0.0
        } else {
            part as f64 * 100.0 / whole as f64
        }
    }

    pub fn ratio(a: u64, b: u64) -> f64 {
        if b == 0 {
            0.0
        } else {
            a as f64 / b as f64
        }
    }

    /// (name, value) in MEMORY STATS's order, databases apart.
    fn figures(&self) -> Vec<(&'static str, Figure)> {
        use Figure::{Bytes, Ratio};
        let a = &self.allocator;
        vec![
            ("peak.allocated", Bytes(self.peak)),
            ("total.allocated", Bytes(self.used)),
            ("startup.allocated", Bytes(self.startup)),
            ("replication.backlog", Bytes(0)),
            ("clients.slaves", Bytes(0)),
            ("clients.normal", Bytes(self.clients)),
            ("cluster.links", Bytes(0)),
            ("aof.buffer", Bytes(self.journal)),
            ("lua.caches", Bytes(0)),
            ("functions.caches", Bytes(0)),
        ]
        .into_iter()
        .chain(vec![
            ("overhead.total", Bytes(self.overhead())),
            ("keys.count", Bytes(self.keys() as u64)),
            (
                "keys.bytes-per-key",
                Bytes(self.used.saturating_sub(self.startup) / (self.keys().max(1) as u64)),
            ),
            ("dataset.bytes", Bytes(self.dataset())),
            (
                "dataset.percentage",
                Ratio(Self::percent(
                    self.dataset(),
                    self.used.saturating_sub(self.startup),
                )),
            ),
            (
                "peak.percentage",
                Ratio(Self::percent(self.used, self.peak)),
            ),
            ("allocator.allocated", Bytes(a.allocated)),
            ("allocator.active", Bytes(a.active)),
            ("allocator.resident", Bytes(a.resident)),
            (
                "allocator-fragmentation.ratio",
                Ratio(Self::ratio(a.active, a.allocated)),
            ),
            (
                "allocator-fragmentation.bytes",
                Bytes(a.active.saturating_sub(a.allocated)),
            ),
            (
                "allocator-rss.ratio",
                Ratio(Self::ratio(a.resident, a.active)),
            ),
            (
                "allocator-rss.bytes",
                Bytes(a.resident.saturating_sub(a.active)),
            ),
            (
                "rss-overhead.ratio",
                Ratio(Self::ratio(self.rss, a.resident)),
            ),
            (
                "rss-overhead.bytes",
                Bytes(self.rss.saturating_sub(a.resident)),
            ),
            ("fragmentation", Ratio(Self::ratio(self.rss, self.used))),
            (
                "fragmentation.bytes",
                Bytes(self.rss.saturating_sub(self.used)),
            ),
        ])
        .collect()
    }
}

enum Figure {
    Bytes(u64),
    Ratio(f64),
}

fn memory_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let r = Report::gather(ctx.server());
    let figures = r.figures();
    // The databases come after functions.caches, as in Redis.
    let (head, tail) = figures.split_at(10);
    ctx.out.map(figures.len() + r.dbs.len());
    let put = |ctx: &mut Ctx<'_>, list: &[(&str, Figure)]| {
        for (name, f) in list {
            ctx.out.bulk(name.as_bytes());
            match f {
                Figure::Bytes(n) => ctx.out.int(i64::try_from(*n).unwrap_or(i64::MAX)),
                Figure::Ratio(x) => ctx.out.double(*x),
            }
        }
    };
    put(ctx, head);
    for (i, _, table) in &r.dbs {
        ctx.out.bulk(format!("db.{i}").as_bytes());
        ctx.out.map(2);
        ctx.out.bulk(b"overhead.hashtable.main");
        ctx.out.int(i64::try_from(*table).unwrap_or(i64::MAX));
        // Expiry times live in the entries: there is no second table.
        ctx.out.bulk(b"overhead.hashtable.expires");
        ctx.out.int(0);
    }
    put(ctx, tail);
    Ok(())
}

/// What MEMORY DOCTOR finds worth saying about a report.
fn diagnose(r: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    if r.used < 5 << 20 {
        return vec!["This instance holds less than 5 MB: too little for its figures to say anything. Load some data and ask again.".into()];
    }
    if r.peak as f64 > r.used as f64 * 1.5 {
        notes.push(format!(
            "Peak memory: the peak ({}) is more than 1.5 times the memory in use now ({}). Memory freed since may stay with the process (see fragmentation), or the peak was a burst of short-lived buffers.",
            human(r.peak),
            human(r.used)
        ));
    }
    let frag = Report::ratio(r.allocator.active, r.allocator.allocated);
    if frag > 1.1 && r.allocator.active.saturating_sub(r.allocator.allocated) > 10 << 20 {
        notes.push(format!(
            "Allocator fragmentation: {frag:.2} ({} in partly used pages). MEMORY PURGE gives back only whole free pages; a workload that deletes and adds values of other sizes keeps pages partly used.",
            human(r.allocator.active - r.allocator.allocated)
        ));
    }
    let rss = Report::ratio(r.rss, r.used);
    if rss > 1.4 && r.rss.saturating_sub(r.used) > 10 << 20 {
        notes.push(format!(
            "High RSS: the process holds {rss:.2} times the memory in use ({} resident). Pages freed after a peak stay resident until the allocator returns them; try MEMORY PURGE.",
            human(r.rss)
        ));
    }
    if r.clients > 200 << 20 {
        notes.push(format!(
            "Client buffers: clients' query buffers hold {}. Pipelines of very large commands, or clients that send faster than the server answers, cause this.",
            human(r.clients)
        ));
    }
    if notes.is_empty() {
        notes.push("Nothing unusual: memory in use, peak, fragmentation and client buffers all look normal.".into());
    }
    notes
}

fn memory_doctor(ctx: &mut Ctx<'_>) -> CmdResult {
    let notes = diagnose(&Report::gather(ctx.server()));
    let text = notes.join("\n\n") + "\n";
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

fn memory_malloc_stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let text = memory::malloc_stats();
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

fn memory_purge(ctx: &mut Ctx<'_>) -> CmdResult {
    memory::purge();
    ctx.out.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(used: u64, peak: u64, rss: u64) -> Report {
        Report {
            used,
            peak,
            startup: 1 << 20,
            rss,
            allocator: memory::Allocator {
                allocated: used,
                active: used,
                resident: rss,
            },
            clients: 0,
            journal: 0,
            dbs: vec![(0, 1000, 1 << 16)],
        }
    }

    /// The doctor declines a near-empty instance, finds nothing in a healthy one, and
    /// names a high peak and a high RSS.
    #[test]
    fn the_doctor_names_what_stands_out() {
        assert!(diagnose(&report(1 << 20, 1 << 20, 1 << 21))[0].contains("less than 5 MB"));
        assert!(
            diagnose(&report(100 << 20, 110 << 20, 120 << 20))[0].starts_with("Nothing unusual")
        );
        let notes = diagnose(&report(100 << 20, 400 << 20, 300 << 20));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("Peak memory") && notes[1].starts_with("High RSS"));
    }

    #[test]
    fn the_data_set_is_what_overhead_leaves() {
        let r = report(10 << 20, 10 << 20, 12 << 20);
        assert_eq!(r.overhead(), (1 << 20) + (1 << 16));
        assert_eq!(r.dataset(), (10 << 20) - (1 << 20) - (1 << 16));
        assert_eq!(r.keys(), 1000);
        let names: Vec<&str> = r.figures().iter().map(|f| f.0).collect();
        assert_eq!(names[9], "functions.caches");
        assert_eq!(names.last(), Some(&"fragmentation.bytes"));
    }
}
