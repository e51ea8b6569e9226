//! LATENCY (the latency monitor of `services::latency` and the per-command histograms of
//! `services::stats`) and MONITOR (`services::monitor`).

use crate::exec::command::{flags::*, CmdError, CmdResult, Command};
use crate::exec::ctx::Ctx;
use crate::server::Server;
use crate::services::stats::LATENCY_BUCKETS;

/// Defaults shared by this family's declarations.
const FAMILY: Command = Command {
    group: "server",
    ..Command::DEFAULT
};

const ADMIN_FLAGS: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

pub const COMMANDS: &[Command] = &[
    Command {
        name: "latency",
        arity: -2,
        summary: "A container for latency diagnostics commands.",
        since: "2.8.13",
        complexity: "Depends on subcommand.",
        handler: super::container,
        subcommands: LATENCY,
        ..FAMILY
    },
    Command {
        name: "monitor",
        arity: 1,
        flags: ADMIN_FLAGS,
        summary: "Listens for all requests received by the server in real-time.",
        since: "1.0.0",
        handler: monitor,
        ..FAMILY
    },
];

const LATENCY: &[Command] = &[
    Command {
        name: "doctor",
        arity: 2,
        flags: ADMIN_FLAGS,
        summary: "Returns a human-readable latency analysis report.",
        since: "2.8.13",
        handler: latency_doctor,
        ..FAMILY
    },
    Command {
        name: "graph",
        arity: 3,
        flags: ADMIN_FLAGS,
        summary: "Returns a latency graph for an event.",
        since: "2.8.13",
        handler: latency_graph,
        ..FAMILY
    },
    Command {
        name: "histogram",
        arity: -2,
        flags: ADMIN_FLAGS,
        summary: "Returns the cumulative distribution of latencies of a subset or all commands.",
        since: "7.0.0",
        complexity:
            "O(N) where N is the number of commands with latency information being retrieved.",
        handler: latency_histogram,
        ..FAMILY
    },
    Command {
        name: "history",
        arity: 3,
        flags: ADMIN_FLAGS,
        summary: "Returns timestamp-latency samples for an event.",
        since: "2.8.13",
        handler: latency_history,
        ..FAMILY
    },
    Command {
        name: "latest",
        arity: 2,
        flags: ADMIN_FLAGS,
        summary: "Returns the latest latency samples for all events.",
        since: "2.8.13",
        handler: latency_latest,
        ..FAMILY
    },
    Command {
        name: "reset",
        arity: -2,
        flags: ADMIN_FLAGS,
        summary: "Resets the latency data for one or more events.",
        since: "2.8.13",
        handler: latency_reset,
        ..FAMILY
    },
    Command {
        name: "help",
        arity: 2,
        flags: LOADING | STALE,
        summary: "Returns helpful text about the different subcommands.",
        since: "2.8.13",
        handler: latency_help,
        ..FAMILY
    },
];

fn latency_doctor(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = ctx.server();
    let c = server.config.get();
    let text = server.latency.doctor(
        Server::now_unix(),
        c.slowlog_log_slower_than,
        u64::from(c.hz),
    );
    ctx.out.verbatim("txt", text.as_bytes());
    Ok(())
}

fn latency_graph(ctx: &mut Ctx<'_>) -> CmdResult {
    let event = ctx.arg(2);
    match ctx.server().latency.graph(event, Server::now_unix()) {
        Some(g) => ctx.out.verbatim("txt", g.as_bytes()),
        None => {
            return Err(CmdError::err(format!(
                "No samples available for event '{}'",
                String::from_utf8_lossy(event)
            )))
        }
    }
    Ok(())
}

fn latency_history(ctx: &mut Ctx<'_>) -> CmdResult {
    let samples = ctx.server().latency.history(ctx.arg(2)).unwrap_or_default();
    ctx.out.array(samples.len());
    for (time, ms) in samples {
        ctx.out.array(2);
        ctx.out.int(time as i64);
        ctx.out.int(ms as i64);
    }
    Ok(())
}

fn latency_latest(ctx: &mut Ctx<'_>) -> CmdResult {
    let latest = ctx.server().latency.latest();
    ctx.out.array(latest.len());
    for l in latest {
        ctx.out.array(4);
        ctx.out.bulk(l.event.as_bytes());
        ctx.out.int(l.time as i64);
        ctx.out.int(l.ms as i64);
        ctx.out.int(l.max as i64);
    }
    Ok(())
}

fn latency_reset(ctx: &mut Ctx<'_>) -> CmdResult {
    let names: Vec<&[u8]> = ctx.argv[2..].iter().map(|a| &a[..]).collect();
    let only = (!names.is_empty()).then_some(&names[..]);
    let n = ctx.server().latency.reset(only);
    ctx.out.int(n as i64);
    Ok(())
}

/// LATENCY HISTOGRAM [command ...]: per command with calls, its calls and the cumulative
/// count of runs under each power-of-two bound in microseconds (RESP3 maps). A name that
/// is not a command is skipped; a container's name stands for its subcommands.
fn latency_histogram(ctx: &mut Ctx<'_>) -> CmdResult {
    let server = ctx.server();
    let table = &server.table;
    let mut ids: Vec<usize> = Vec::new();
    if ctx.argv.len() == 2 {
        ids.extend(0..table.commands.len());
    } else {
        for name in &ctx.argv[2..] {
            let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
            let Some(id) = table.lookup(&lower) else {
                continue;
            };
            ids.push(id);
            let prefix = format!("{lower}|");
            ids.extend(
                (0..table.fullnames.len()).filter(|&i| table.fullnames[i].starts_with(&prefix)),
            );
        }
    }
    let with_data: Vec<(usize, [u64; LATENCY_BUCKETS])> = ids
        .into_iter()
        .map(|id| (id, server.stats.latency_histogram(id)))
        .filter(|(_, h)| h.iter().any(|&n| n > 0))
        .collect();
    let out = &mut ctx.out;
    out.map(with_data.len());
    for (id, h) in with_data {
        out.bulk(table.fullnames[id].as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(h.iter().sum::<u64>() as i64);
        out.bulk(b"histogram_usec");
        let used = h.iter().filter(|&&n| n > 0).count();
        out.map(used);
        let mut total = 0;
        for (k, n) in h.iter().enumerate() {
            if *n > 0 {
                total += n;
                out.int(bucket_label(k) as i64);
                out.int(total as i64);
            }
        }
    }
    Ok(())
}

/// How Redis labels histogram bucket `k` (runs under 1024·2^k ns): its upper bound as
/// HdrHistogram (two significant digits) reports it, in microseconds; the last bucket,
/// where Redis clamps at one second, reads 1073741.
fn bucket_label(k: usize) -> u64 {
    if k + 1 >= LATENCY_BUCKETS {
        return (1u64 << 30) / 1000;
    }
    let bound = 1024u64 << k;
    (bound + bound / 128 - 1) / 1000
}

fn latency_help(ctx: &mut Ctx<'_>) -> CmdResult {
    const LINES: &[&str] = &[
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    ];
    super::help_text(ctx, LINES)
}

/// MONITOR: from now on this client receives a line for every command run. Not inside
/// EXEC (a transaction's client expects one reply per command); a second MONITOR is
/// ignored without a reply, as in Redis.
fn monitor(ctx: &mut Ctx<'_>) -> CmdResult {
    if !ctx.may_block() {
        return Err(CmdError::err(
            "MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    let info = ctx.client.info.clone();
    if ctx.server().monitors.add(&info) {
        ctx.out.ok();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_labels_rise_and_bound_their_buckets() {
        // A label is the bucket's upper bound in µs, rounded as HdrHistogram rounds it:
        // never under the bound, under the next bucket's.
        for k in 0..LATENCY_BUCKETS - 1 {
            let bound_ns = 1024u64 << k;
            assert!(bucket_label(k) * 1000 + 999 >= bound_ns, "bucket {k}");
            assert!(bucket_label(k) < bucket_label(k + 1));
        }
    }
}
