//! The latency monitor (LATENCY LATEST/HISTORY/GRAPH/DOCTOR/RESET), as Redis's latency.c:
//! events that took at least `latency-monitor-threshold` milliseconds are kept per event
//! class, one sample per second (the worst of that second) in a ring of the last 160.
//!
//! Event classes Strata observes: `command` and `fast-command` (a command's run time,
//! by its `fast` flag) and `expire-cycle` (one pass of the active expiry cycle). With the
//! threshold at 0 (the default) recording costs one relaxed load.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Samples kept per event (Redis's LATENCY_TS_LEN).
pub const HISTORY: usize = 160;

#[derive(Clone, Copy, Default)]
struct Sample {
    /// Unix seconds; 0 marks an unused slot.
    time: u64,
    ms: u64,
}

struct Series {
    samples: [Sample; HISTORY],
    /// The next slot to write.
    next: usize,
    /// The worst ever seen.
    max: u64,
}

impl Series {
    /// The used samples, oldest first.
    fn ordered(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..HISTORY)
            .map(move |j| self.samples[(self.next + j) % HISTORY])
            .filter(|s| s.time != 0)
    }
}

/// One event's latest sample: LATENCY LATEST's row.
pub struct Latest {
    pub event: &'static str,
    pub time: u64,
    pub ms: u64,
    pub max: u64,
}

#[derive(Default)]
pub struct Latency {
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<&'static str, Series>>,
}

impl Latency {
    pub fn set_threshold(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    pub fn threshold(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }

    /// Records `ms` for `event` if the monitor is on and it reaches the threshold.
    #[inline]
    pub fn observe(&self, event: &'static str, ms: u64) {
        let t = self.threshold_ms.load(Ordering::Relaxed);
        if t != 0 && ms >= t {
            self.add(event, ms, crate::server::Server::now_unix());
        }
    }

    /// Adds a sample at Unix second `now`: a second already sampled keeps its worst.
    pub fn add(&self, event: &'static str, ms: u64, now: u64) {
        let mut events = self.events.lock();
        let s = events.entry(event).or_insert_with(|| Series {
            samples: [Sample::default(); HISTORY],
            next: 0,
            max: 0,
        });
        s.max = s.max.max(ms);
        let prev = &mut s.samples[(s.next + HISTORY - 1) % HISTORY];
        if prev.time == now {
            prev.ms = prev.ms.max(ms);
            return;
        }
        s.samples[s.next] = Sample { time: now, ms };
        s.next = (s.next + 1) % HISTORY;
    }

    /// Forgets the named events (matched without regard to case), or all of them;
    /// returns how many there were.
    pub fn reset(&self, only: Option<&[&[u8]]>) -> usize {
        let mut events = self.events.lock();
        let before = events.len();
        match only {
            None => events.clear(),
            Some(names) => {
                events.retain(|e, _| !names.iter().any(|n| n.eq_ignore_ascii_case(e.as_bytes())))
            }
        }
        before - events.len()
    }

    pub fn latest(&self) -> Vec<Latest> {
        self.events
            .lock()
            .iter()
            .map(|(event, s)| {
                let last = s.samples[(s.next + HISTORY - 1) % HISTORY];
                Latest {
                    event,
                    time: last.time,
                    ms: last.ms,
                    max: s.max,
                }
            })
            .collect()
    }

    /// (time, ms) samples of `event`, oldest first; None for an event never seen.
    pub fn history(&self, event: &[u8]) -> Option<Vec<(u64, u64)>> {
        let events = self.events.lock();
        let s = events.iter().find(|(e, _)| e.as_bytes() == event)?.1;
        Some(s.ordered().map(|x| (x.time, x.ms)).collect())
    }

    /// LATENCY GRAPH: a title, a rule and the samples as bars of four rows, each labelled
    /// (vertically) with how long ago it was taken. None for an event never seen.
    pub fn graph(&self, event: &[u8], now: u64) -> Option<String> {
        let events = self.events.lock();
        let (name, s) = events.iter().find(|(e, _)| e.as_bytes() == event)?;
        let samples: Vec<Sample> = s.ordered().collect();
        let hi = samples.iter().map(|x| x.ms).max().unwrap_or(0);
        let lo = samples.iter().map(|x| x.ms).min().unwrap_or(0);
        let mut out = format!(
            "{name} - high {hi} ms, low {lo} ms (all time high {} ms)\n{}\n",
            s.max,
            "-".repeat(GRAPH_COLS)
        );
        for chunk in samples.chunks(GRAPH_COLS) {
            let labels: Vec<String> = chunk
                .iter()
                .map(|x| ago(now.saturating_sub(x.time)))
                .collect();
            let levels: Vec<usize> = chunk.iter().map(|x| level(x.ms, lo, hi)).collect();
            render_bars(&mut out, &levels, &labels);
        }
        Some(out)
    }

    /// LATENCY DOCTOR: each event's figures, then what may help.
    pub fn doctor(&self, now: u64, slowlog_us: i64, hz: u64) -> String {
        let events = self.events.lock();
        if events.is_empty() && self.threshold() == 0 {
            return "The latency monitor is off (latency-monitor-threshold is 0), so there is nothing to report. Turn it on with CONFIG SET latency-monitor-threshold <milliseconds>.\n".into();
        }
        if events.is_empty() {
            return "No latency spike has been recorded since the monitor was turned on (or last reset).\n".into();
        }
        let mut out = String::from("Latency spikes recorded by this instance:\n\n");
        let mut advice: Vec<String> = Vec::new();
        let mut advise = |s: String| {
            if !advice.contains(&s) {
                advice.push(s);
            }
        };
        for (i, (event, s)) in events.iter().enumerate() {
            let v: Vec<u64> = s.ordered().map(|x| x.ms).collect();
            let n = v.len().max(1) as u64;
            let avg = v.iter().sum::<u64>() / n;
            let mad = v.iter().map(|x| x.abs_diff(avg)).sum::<u64>() / n;
            let oldest = s.ordered().map(|x| x.time).min().unwrap_or(now);
            let period = now.saturating_sub(oldest).max(1) as f64 / n as f64;
            let _ = writeln!(
                out,
                "{}. {event}: {} latency spikes (average {avg}ms, mean deviation {mad}ms, period {period:.2} sec). Worst all time event {}ms.",
                i + 1,
                v.len(),
                s.max
            );
            match *event {
                "command" => {
                    let threshold_us = self.threshold() * 1000;
                    if slowlog_us < 0 {
                        advise(format!("- The slow log is off: turn it on (CONFIG SET slowlog-log-slower-than {threshold_us}) to see which commands are slow."));
                    } else if slowlog_us as u64 > threshold_us {
                        advise(format!("- The slow log only records commands slower than the latency threshold: CONFIG SET slowlog-log-slower-than {threshold_us} records the ones reported here."));
                    }
                    advise("- SLOWLOG GET lists the slowest commands: look for commands on large values (O(N) work) and split them.".into());
                    advise("- Deleting or expiring a large collection takes time in proportion to its size: prefer many smaller keys, or UNLINK.".into());
                }
                "fast-command" => advise("- Commands that should take microseconds took milliseconds: the machine may be short of CPU for this process (other load, a noisy neighbour, CPU limits).".into()),
                "expire-cycle" => {
                    if hz < 100 {
                        advise("- Expiry removes keys in larger batches at a low hz: CONFIG SET hz 100 spreads the work.".into());
                    }
                    advise("- Deleting or expiring a large collection takes time in proportion to its size: prefer many smaller keys, or UNLINK.".into());
                }
                _ => {}
            }
        }
        if !advice.is_empty() {
            out.push_str("\nWhat may help:\n\n");
            for a in advice {
                out.push_str(&a);
                out.push('\n');
            }
        }
        out
    }
}

/// Columns of LATENCY GRAPH (samples per block of bars).
const GRAPH_COLS: usize = 80;
/// Rows of bars, and the marks of a bar's top within a row, lowest first.
const GRAPH_ROWS: usize = 4;
const MARKS: &[u8] = b"_o#";

/// A sample's height in steps of `GRAPH_ROWS * MARKS.len()`, scaled between `lo` and `hi`.
fn level(ms: u64, lo: u64, hi: u64) -> usize {
    let steps = GRAPH_ROWS * MARKS.len();
    let range = (hi - lo).max(1);
    (((ms - lo) * steps as u64) / range).min(steps as u64 - 1) as usize
}

/// How long ago, in the largest whole unit: 5s, 3m, 2h, 1d.
fn ago(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        3600..=86399 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// Bars of `levels`, top row first: a bar's top row shows a mark for how far into that
/// row it reaches, the rows under it `|`; then a blank row and the labels, one character
/// per row.
fn render_bars(out: &mut String, levels: &[usize], labels: &[String]) {
    for row in 0..GRAPH_ROWS {
        let base = (GRAPH_ROWS - row - 1) * MARKS.len();
        let line: String = levels
            .iter()
            .map(|&l| match l.checked_sub(base) {
                Some(i) if i < MARKS.len() => MARKS[i] as char,
                Some(_) => '|',
                None => ' ',
            })
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&" ".repeat(levels.len()));
    out.push('\n');
    let tallest = labels.iter().map(String::len).max().unwrap_or(0);
    for i in 0..tallest {
        let line: String = labels
            .iter()
            .map(|l| l.as_bytes().get(i).map_or(' ', |&c| c as char))
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_merge_per_second_and_wrap() {
        let l = Latency::default();
        l.add("command", 300, 10);
        l.add("command", 200, 10);
        l.add("command", 400, 11);
        assert_eq!(l.history(b"command"), Some(vec![(10, 300), (11, 400)]));
        for t in 0..HISTORY as u64 + 5 {
            l.add("fast-command", t + 1, 100 + t);
        }
        let h = l.history(b"fast-command").unwrap();
        assert_eq!(h.len(), HISTORY);
        assert_eq!(h[0], (105, 6), "the oldest samples were overwritten");
        let latest = l.latest();
        assert_eq!(latest[0].event, "command");
        assert_eq!(
            (latest[0].time, latest[0].ms, latest[0].max),
            (11, 400, 400)
        );
        assert_eq!(l.history(b"nope"), None);
        assert_eq!(l.reset(Some(&[b"COMMAND", b"nope"])), 1);
        assert_eq!(l.reset(None), 1);
    }

    #[test]
    fn threshold_gates_observations() {
        let l = Latency::default();
        l.observe("command", 500);
        assert!(l.latest().is_empty(), "off at threshold 0");
        l.set_threshold(100);
        l.observe("command", 99);
        assert!(l.latest().is_empty());
        l.observe("command", 100);
        assert_eq!(l.latest().len(), 1);
    }

    #[test]
    fn graph_draws_bars_and_labels() {
        let l = Latency::default();
        l.add("command", 20, 100);
        l.add("command", 50, 101);
        let g = l.graph(b"command", 110).unwrap();
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(
            lines[0],
            "command - high 50 ms, low 20 ms (all time high 50 ms)"
        );
        assert_eq!(lines[1].len(), GRAPH_COLS);
        assert_eq!(&lines[2..6], &[" #", " |", " |", "_|"]);
        assert_eq!(&lines[7..], &["19", "0s", "s "]);
    }
}
