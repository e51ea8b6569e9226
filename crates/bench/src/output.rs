//! The result of a run as data: what `--json` writes and `merge`/`report` read, the
//! final table, and `--csv`.

use crate::driver::{OpStats, PhaseResult};
use crate::hist::{ms, Hist, Summary};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub tool: String,
    pub version: String,
    pub workload: String,
    pub started_unix: u64,
    /// The command line's settings and the workload's parameters.
    pub config: serde_json::Value,
    pub targets: Vec<TargetReport>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetReport {
    pub name: String,
    pub addr: String,
    /// The target's `INFO server` section, as it answered before the run.
    pub info_server: String,
    pub rounds: Vec<RoundReport>,
    /// Per phase and op, the round with the highest throughput (noise only slows a run).
    pub best: Vec<OpReport>,
    /// Lines from the workload's check after the last round (voter: votes per contestant).
    #[serde(default)]
    pub checks: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RoundReport {
    pub round: usize,
    pub phases: Vec<PhaseReport>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhaseReport {
    pub name: String,
    pub elapsed_s: f64,
    pub client_cpu_s: f64,
    /// The server's CPU seconds over the phase (`INFO cpu`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s: Option<f64>,
    #[serde(default)]
    pub conn_errors: Vec<String>,
    pub ops: Vec<OpReport>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpReport {
    pub phase: String,
    pub op: String,
    pub count: u64,
    pub errors: u64,
    pub elapsed_s: f64,
    pub ops_per_sec: f64,
    /// The server's CPU microseconds per operation: its CPU time over the phase divided
    /// by the phase's operations (of every op, in a mix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_op: Option<f64>,
    #[serde(flatten)]
    pub summary: Summary,
    #[serde(default)]
    pub error_samples: Vec<String>,
    /// The full latency histogram (successful operations, microseconds): HdrHistogram V2
    /// serialization, base64.
    pub hist: String,
}

impl OpReport {
    pub fn from_stats(
        phase: &str,
        elapsed_s: f64,
        server_cpu_us_per_op: Option<f64>,
        s: &OpStats,
    ) -> OpReport {
        OpReport {
            phase: phase.to_string(),
            op: s.name.clone(),
            count: s.count,
            errors: s.errors,
            elapsed_s,
            ops_per_sec: if elapsed_s > 0.0 {
                s.count as f64 / elapsed_s
            } else {
                0.0
            },
            server_cpu_us_per_op,
            summary: s.hist.summary(),
            error_samples: s.samples.clone(),
            hist: s.hist.to_base64(),
        }
    }

    pub fn hist(&self) -> Result<Hist, String> {
        Hist::from_base64(&self.hist)
    }

    /// `op`, or `phase op` when the phase has a name of its own (ycsb's load and run).
    pub fn label(&self) -> String {
        if self.phase == self.op || self.phase.is_empty() || self.phase == "mix" {
            self.op.clone()
        } else {
            format!("{} {}", self.phase, self.op)
        }
    }
}

impl PhaseReport {
    pub fn from_result(r: &PhaseResult) -> PhaseReport {
        let secs = r.elapsed.as_secs_f64();
        let per_op = per_op_us(r.server_cpu_s, r.ops.iter().map(|o| o.count).sum());
        PhaseReport {
            name: r.name.clone(),
            elapsed_s: secs,
            client_cpu_s: r.client_cpu.as_secs_f64(),
            server_cpu_s: r.server_cpu_s,
            conn_errors: r.conn_errors.clone(),
            ops: r
                .ops
                .iter()
                .map(|o| OpReport::from_stats(&r.name, secs, per_op, o))
                .collect(),
        }
    }

    /// Sets each op's server CPU per operation from the phase's (after a merge).
    pub fn spread_server_cpu(&mut self) {
        let per_op = per_op_us(self.server_cpu_s, self.ops.iter().map(|o| o.count).sum());
        for o in &mut self.ops {
            o.server_cpu_us_per_op = per_op;
        }
    }
}

/// CPU seconds over `ops` operations, as microseconds per operation.
fn per_op_us(cpu_s: Option<f64>, ops: u64) -> Option<f64> {
    cpu_s.filter(|_| ops > 0).map(|c| c * 1e6 / ops as f64)
}

/// Per (phase, op), the round with the highest throughput.
pub fn best_of(rounds: &[RoundReport]) -> Vec<OpReport> {
    let mut best: Vec<OpReport> = Vec::new();
    for r in rounds {
        for o in r.phases.iter().flat_map(|p| &p.ops) {
            match best.iter_mut().find(|b| b.phase == o.phase && b.op == o.op) {
                Some(b) if o.ops_per_sec > b.ops_per_sec => *b = o.clone(),
                Some(_) => {}
                None => best.push(o.clone()),
            }
        }
    }
    best
}

/// The final table: one row per op.
pub fn table(rows: &[OpReport]) -> String {
    let w = rows
        .iter()
        .map(|r| r.label().len())
        .max()
        .unwrap_or(2)
        .max(9);
    // The server's CPU per operation, when any row knows it.
    let cpu = rows.iter().any(|r| r.server_cpu_us_per_op.is_some());
    let mut s = String::new();
    let _ = write!(
        s,
        "{:<w$} {:>10} {:>7} {:>11} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "op", "count", "errors", "ops/s", "mean", "p50", "p95", "p99", "p99.9", "max"
    );
    s.push_str(if cpu { "  server µs/op\n" } else { "\n" });
    for r in rows {
        let m = &r.summary;
        let _ = write!(
            s,
            "{:<w$} {:>10} {:>7} {:>11.0} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
            r.label(),
            r.count,
            r.errors,
            r.ops_per_sec,
            ms(m.mean_us),
            ms(m.p50_us as f64),
            ms(m.p95_us as f64),
            ms(m.p99_us as f64),
            ms(m.p999_us as f64),
            ms(m.max_us as f64),
        );
        match r.server_cpu_us_per_op.filter(|_| cpu) {
            Some(us) => {
                let _ = writeln!(s, " {us:>13.2}");
            }
            None if cpu => s.push_str("             -\n"),
            None => s.push('\n'),
        }
    }
    let _ = writeln!(s, "{:<w$} (latencies in ms)", "");
    s
}

pub fn csv(report: &Report) -> String {
    let mut s = String::from(
        "target,round,phase,op,count,errors,elapsed_s,ops_per_sec,mean_us,p50_us,p95_us,p99_us,p999_us,max_us,server_cpu_us_per_op\n",
    );
    for t in &report.targets {
        for r in &t.rounds {
            for o in r.phases.iter().flat_map(|p| &p.ops) {
                let m = &o.summary;
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{:.6},{:.1},{:.1},{},{},{},{},{},{}",
                    t.name,
                    r.round,
                    o.phase,
                    o.op,
                    o.count,
                    o.errors,
                    o.elapsed_s,
                    o.ops_per_sec,
                    m.mean_us,
                    m.p50_us,
                    m.p95_us,
                    m.p99_us,
                    m.p999_us,
                    m.max_us,
                    o.server_cpu_us_per_op
                        .map(|c| format!("{c:.3}"))
                        .unwrap_or_default()
                );
            }
        }
    }
    s
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median over rounds of each target's throughput over the first target's, same round.
pub fn ratios(report: &Report) -> String {
    let mut s = String::new();
    let Some(first) = report.targets.first() else {
        return s;
    };
    if report.targets.len() < 2 {
        return s;
    }
    let _ = writeln!(
        s,
        "ratio to {} (median over {} rounds of same-round ratios; >1: faster / higher)",
        first.name,
        first.rounds.len()
    );
    for t in &report.targets[1..] {
        for b in &first.best {
            let mut tput = Vec::new();
            let mut p50 = Vec::new();
            let mut p99 = Vec::new();
            let mut cpu = Vec::new();
            for (ra, rb) in first.rounds.iter().zip(&t.rounds) {
                let find = |r: &RoundReport| {
                    r.phases
                        .iter()
                        .flat_map(|p| &p.ops)
                        .find(|o| o.phase == b.phase && o.op == b.op)
                        .cloned()
                };
                if let (Some(a), Some(o)) = (find(ra), find(rb)) {
                    if a.ops_per_sec > 0.0 {
                        tput.push(o.ops_per_sec / a.ops_per_sec);
                    }
                    if a.summary.p50_us > 0 {
                        p50.push(o.summary.p50_us as f64 / a.summary.p50_us as f64);
                    }
                    if a.summary.p99_us > 0 {
                        p99.push(o.summary.p99_us as f64 / a.summary.p99_us as f64);
                    }
                    if let (Some(ca), Some(co)) = (a.server_cpu_us_per_op, o.server_cpu_us_per_op) {
                        if ca > 0.0 {
                            cpu.push(co / ca);
                        }
                    }
                }
            }
            let _ = write!(
                s,
                "  {:<20} {}/{}: ops/s {:.2}x  p50 {:.2}x  p99 {:.2}x",
                b.label(),
                t.name,
                first.name,
                median(tput),
                median(p50),
                median(p99)
            );
            if cpu.is_empty() {
                s.push('\n');
            } else {
                let _ = writeln!(s, "  server CPU/op {:.2}x", median(cpu));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_keeps_the_histogram() {
        let mut st = OpStats {
            name: "GET".into(),
            count: 3,
            errors: 1,
            ..Default::default()
        };
        st.hist.record(100);
        st.hist.record(250);
        let o = OpReport::from_stats("GET", 0.5, Some(12.5), &st);
        let text = serde_json::to_string(&o).expect("serialize");
        let back: OpReport = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back.count, 3);
        assert_eq!(back.server_cpu_us_per_op, Some(12.5));
        assert_eq!(back.ops_per_sec, 6.0);
        assert_eq!(back.summary, st.hist.summary());
        assert_eq!(back.hist().expect("hist").len(), 2);
    }

    #[test]
    fn server_cpu_is_spread_over_the_phase_operations() {
        let op = |name: &str, count| OpStats {
            name: name.into(),
            count,
            ..Default::default()
        };
        let r = PhaseResult {
            name: "mix".into(),
            elapsed: std::time::Duration::from_secs(1),
            ops: vec![op("GET", 3000), op("SET", 1000)],
            server_cpu_s: Some(0.5),
            ..Default::default()
        };
        let p = PhaseReport::from_result(&r);
        let per_op: Vec<_> = p.ops.iter().map(|o| o.server_cpu_us_per_op).collect();
        assert_eq!(per_op, vec![Some(125.0), Some(125.0)]);
        let unknown = PhaseReport::from_result(&PhaseResult {
            server_cpu_s: None,
            ..r
        });
        assert_eq!(unknown.ops[0].server_cpu_us_per_op, None);
        // The table grows its column only when some row knows the figure.
        assert!(table(&p.ops).contains("server µs/op"));
        assert!(table(&p.ops).contains("125.00"));
        assert!(!table(&unknown.ops).contains("server µs/op"));
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
