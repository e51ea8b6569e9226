//! Running a workload against one or more targets: rounds in alternation (A B A B ...),
//! each target's best round, the median ratio to the first target, `--json`, `--csv`,
//! and `--sweep` with its knee.

use crate::conn::Client;
use crate::driver::{self, Settings};
use crate::output::{self, PhaseReport, Report, RoundReport, TargetReport};
use crate::workloads::Workload;
use std::fmt::Write as _;

#[derive(Clone, Debug)]
pub struct Target {
    pub name: String,
    pub addr: String,
}

#[derive(Clone, Debug)]
pub struct RunOpts {
    pub targets: Vec<Target>,
    pub rounds: usize,
    pub settings: Settings,
    pub quiet: bool,
}

/// Runs `w` on every target for every round. `Err` when a target cannot be reached or
/// prepared; errors during the run are in the report (see [`has_errors`]).
pub fn execute(w: &dyn Workload, o: &RunOpts, config: serde_json::Value) -> Result<Report, String> {
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut targets = Vec::new();
    for t in &o.targets {
        let mut c = Client::connect(&t.addr, o.settings.password.as_deref())
            .map_err(|e| format!("target {}: {e}", t.name))?;
        targets.push(TargetReport {
            name: t.name.clone(),
            addr: t.addr.clone(),
            info_server: c.info_server(),
            rounds: Vec::new(),
            best: Vec::new(),
            checks: Vec::new(),
        });
    }
    let multi = o.targets.len() > 1 || o.rounds > 1;
    for round in 1..=o.rounds {
        for (t, tr) in o.targets.iter().zip(targets.iter_mut()) {
            let mut c = Client::connect(&t.addr, o.settings.password.as_deref())
                .map_err(|e| format!("target {}: {e}", t.name))?;
            w.prepare(&mut c)
                .map_err(|e| format!("target {}: prepare: {e}", t.name))?;
            let mut results = Vec::new();
            for p in 0..w.phase_count() {
                let phase = w.phase(p)?;
                // Server CPU over the phase, read before and after it: with a warm-up the
                // window would hold operations the phase does not count.
                let cpu0 = (!phase.timed || o.settings.warmup.is_zero())
                    .then(|| c.server_cpu())
                    .flatten();
                let mut r = driver::run(&t.addr, phase, &o.settings, o.quiet)
                    .map_err(|e| format!("target {}: {e}", t.name))?;
                if let Some(a) = cpu0 {
                    r.server_cpu_s = c.server_cpu().map(|b| (b - a).max(0.0));
                }
                results.push(r);
            }
            let checks = match w.check(&mut c, &results) {
                Ok(lines) => lines,
                Err(e) => vec![format!("CHECK FAILED: {e}")],
            };
            let phases: Vec<PhaseReport> = results.iter().map(PhaseReport::from_result).collect();
            if !o.quiet && multi {
                let line: Vec<String> = phases
                    .iter()
                    .flat_map(|p| &p.ops)
                    .map(|op| format!("{} {:.0} ops/s", op.label(), op.ops_per_sec))
                    .collect();
                eprintln!("round {round}/{} {}: {}", o.rounds, t.name, line.join(", "));
            }
            tr.rounds.push(RoundReport { round, phases });
            tr.checks = checks;
        }
    }
    for t in &mut targets {
        t.best = output::best_of(&t.rounds);
    }
    Ok(Report {
        tool: "strata bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        workload: w.name().into(),
        started_unix,
        config,
        targets,
    })
}

/// Any failed operation, lost connection or failed check in any round of any target.
pub fn has_errors(r: &Report) -> bool {
    r.targets.iter().any(|t| {
        t.checks.iter().any(|c| c.starts_with("CHECK FAILED"))
            || t.rounds.iter().any(|r| {
                r.phases
                    .iter()
                    .any(|p| !p.conn_errors.is_empty() || p.ops.iter().any(|o| o.errors > 0))
            })
    })
}

/// The text printed at the end: per target its best round, checks, errors (loudly), and
/// the ratios.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    for t in &r.targets {
        let rounds = t.rounds.len();
        let which = if rounds > 1 {
            format!(", best of {rounds} rounds")
        } else {
            String::new()
        };
        let _ = writeln!(s, "== {} ({}){which}", t.name, t.addr);
        s.push_str(&output::table(&t.best));
        for c in &t.checks {
            let _ = writeln!(s, "{c}");
        }
        let mut errors = 0;
        let mut samples = Vec::new();
        for round in &t.rounds {
            for p in &round.phases {
                for e in &p.conn_errors {
                    errors += 1;
                    samples.push(format!("round {}: connection lost: {e}", round.round));
                }
                for o in &p.ops {
                    errors += o.errors;
                    for e in &o.error_samples {
                        samples.push(format!("round {}: {}: {e}", round.round, o.label()));
                    }
                }
            }
        }
        if errors > 0 {
            let _ = writeln!(s, "*** {errors} ERRORS against {} ***", t.name);
            for e in samples.iter().take(10) {
                let _ = writeln!(s, "***   {e}");
            }
        }
        let cpu: f64 = t
            .rounds
            .iter()
            .flat_map(|r| &r.phases)
            .map(|p| p.client_cpu_s)
            .sum();
        let wall: f64 = t
            .rounds
            .iter()
            .flat_map(|r| &r.phases)
            .map(|p| p.elapsed_s)
            .sum();
        if wall > 0.0 {
            let _ = writeln!(
                s,
                "client CPU: {:.0}% of one core over the measured time",
                100.0 * cpu / wall
            );
        }
    }
    s.push_str(&output::ratios(r));
    s
}

/// `--sweep clients=1,2,4` or `pipeline=1,4,16`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub param: String,
    pub values: Vec<usize>,
}

impl Sweep {
    pub fn parse(s: &str) -> Result<Sweep, String> {
        let (p, vs) = s
            .split_once('=')
            .ok_or_else(|| format!("bad --sweep {s:?}: expected clients=1,2,4 or pipeline=..."))?;
        if p != "clients" && p != "pipeline" {
            return Err(format!(
                "--sweep {p}: only clients= and pipeline= can be swept"
            ));
        }
        let values = vs
            .split(',')
            .map(|v| v.trim().parse::<usize>().ok().filter(|&n| n > 0))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("bad --sweep values {vs:?}"))?;
        if values.is_empty() {
            return Err("--sweep needs values".into());
        }
        Ok(Sweep {
            param: p.into(),
            values,
        })
    }
}

/// One point of a sweep for one target and op.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub value: usize,
    pub ops_per_sec: f64,
    pub p99_us: u64,
}

/// The knee: the first step that reaches 90% of the highest throughput of the sweep.
/// Past it throughput rises by 10% at most while queueing raises p99. (Comparing
/// neighbouring steps instead would stop at a plateau that more load later climbs out
/// of.) `None` when that is only the last step: throughput is still rising.
pub fn knee(points: &[Point]) -> Option<usize> {
    let peak = points.iter().map(|p| p.ops_per_sec).fold(0.0, f64::max);
    let k = points.iter().position(|p| p.ops_per_sec >= 0.9 * peak)?;
    (k + 1 < points.len()).then_some(k)
}

/// The sweep table for each target and op, with the knee marked.
pub fn sweep_summary(param: &str, steps: &[(usize, Report)]) -> String {
    let mut s = String::new();
    let Some((_, first)) = steps.first() else {
        return s;
    };
    for (ti, t) in first.targets.iter().enumerate() {
        for b in &t.best {
            let points: Vec<Point> = steps
                .iter()
                .filter_map(|(v, r)| {
                    let o = r
                        .targets
                        .get(ti)?
                        .best
                        .iter()
                        .find(|o| o.phase == b.phase && o.op == b.op)?;
                    Some(Point {
                        value: *v,
                        ops_per_sec: o.ops_per_sec,
                        p99_us: o.summary.p99_us,
                    })
                })
                .collect();
            let k = knee(&points);
            let _ = writeln!(s, "== sweep {param}: {} {}", t.name, b.label());
            let _ = writeln!(s, "{:>9} {:>11} {:>9}", param, "ops/s", "p99 ms");
            for (i, p) in points.iter().enumerate() {
                let mark = if Some(i) == k { "  <- knee" } else { "" };
                let _ = writeln!(
                    s,
                    "{:>9} {:>11.0} {:>9}{mark}",
                    p.value,
                    p.ops_per_sec,
                    crate::hist::ms(p.p99_us as f64)
                );
            }
            match k {
                Some(i) => {
                    let last = &points[points.len() - 1];
                    let _ = writeln!(
                        s,
                        "knee at {param}={}: {:.0} ops/s, p99 {} ms; up to {param}={} throughput \
                         changes {:+.0}% while p99 goes to {} ms",
                        points[i].value,
                        points[i].ops_per_sec,
                        crate::hist::ms(points[i].p99_us as f64),
                        last.value,
                        100.0 * (last.ops_per_sec / points[i].ops_per_sec.max(1e-9) - 1.0),
                        crate::hist::ms(last.p99_us as f64)
                    );
                }
                None => {
                    let _ = writeln!(s, "no knee: throughput still rises at the last step");
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[f64]) -> Vec<Point> {
        v.iter()
            .enumerate()
            .map(|(i, &t)| Point {
                value: 1 << i,
                ops_per_sec: t,
                p99_us: 100 * (i as u64 + 1),
            })
            .collect()
    }

    #[test]
    fn knee_is_where_throughput_stops_rising() {
        assert_eq!(knee(&pts(&[10.0, 20.0, 35.0, 36.0, 30.0])), Some(2));
        assert_eq!(knee(&pts(&[10.0, 20.0, 40.0])), None);
        assert_eq!(knee(&pts(&[10.0])), None);
        // A plateau that more load climbs out of is not the knee.
        assert_eq!(knee(&pts(&[69.0, 71.0, 88.0, 90.0])), Some(2));
    }

    #[test]
    fn sweep_parses() {
        assert_eq!(
            Sweep::parse("clients=1,2,4"),
            Ok(Sweep {
                param: "clients".into(),
                values: vec![1, 2, 4]
            })
        );
        assert!(Sweep::parse("threads=1").is_err());
        assert!(Sweep::parse("clients=1,x").is_err());
    }
}
