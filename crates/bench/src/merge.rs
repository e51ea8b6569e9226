//! `strata bench merge`: runs made at the same time by several client processes or
//! machines become one result. Counts and throughput add up (the runs overlapped in
//! time), histograms merge, and percentiles are recomputed from the merged histograms.

use crate::output::{self, OpReport, PhaseReport, Report, RoundReport};
use std::path::Path;

pub fn load(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a `strata bench --json` result: {e}",
            path.display()
        )
    })
}

fn merge_op(into: &mut OpReport, o: &OpReport) -> Result<(), String> {
    let mut h = into.hist()?;
    h.add(&o.hist()?);
    into.count += o.count;
    into.errors += o.errors;
    into.ops_per_sec += o.ops_per_sec;
    into.elapsed_s = into.elapsed_s.max(o.elapsed_s);
    into.summary = h.summary();
    into.hist = h.to_base64();
    for e in &o.error_samples {
        if into.error_samples.len() < 5 && !into.error_samples.contains(e) {
            into.error_samples.push(e.clone());
        }
    }
    Ok(())
}

fn merge_phase(into: &mut PhaseReport, p: &PhaseReport) -> Result<(), String> {
    into.elapsed_s = into.elapsed_s.max(p.elapsed_s);
    into.client_cpu_s += p.client_cpu_s;
    // Runs made at the same time measured the same server over nearly the same window.
    into.server_cpu_s = match (into.server_cpu_s, p.server_cpu_s) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    into.conn_errors.extend(p.conn_errors.iter().cloned());
    for o in &p.ops {
        match into.ops.iter_mut().find(|x| x.op == o.op) {
            Some(x) => merge_op(x, o)?,
            None => into.ops.push(o.clone()),
        }
    }
    into.spread_server_cpu();
    Ok(())
}

/// Merges reports target by target (matched by name), round by round, phase by phase.
pub fn merge(reports: &[Report]) -> Result<Report, String> {
    let Some(first) = reports.first() else {
        return Err("nothing to merge".into());
    };
    let mut out = first.clone();
    for r in &reports[1..] {
        if r.workload != out.workload {
            return Err(format!(
                "cannot merge a {} run with a {} run",
                r.workload, out.workload
            ));
        }
        for t in &r.targets {
            let Some(into) = out.targets.iter_mut().find(|x| x.name == t.name) else {
                out.targets.push(t.clone());
                continue;
            };
            for round in &t.rounds {
                let Some(ir) = into.rounds.iter_mut().find(|x| x.round == round.round) else {
                    into.rounds.push(round.clone());
                    continue;
                };
                merge_round(ir, round)?;
            }
            into.checks.extend(t.checks.iter().cloned());
        }
    }
    for t in &mut out.targets {
        t.best = output::best_of(&t.rounds);
    }
    out.config["merged_from"] = reports.len().into();
    Ok(out)
}

fn merge_round(into: &mut RoundReport, r: &RoundReport) -> Result<(), String> {
    for p in &r.phases {
        match into.phases.iter_mut().find(|x| x.name == p.name) {
            Some(x) => merge_phase(x, p)?,
            None => into.phases.push(p.clone()),
        }
    }
    Ok(())
}

pub fn run(files: &[std::path::PathBuf], json: Option<&Path>) -> Result<bool, String> {
    let reports = files
        .iter()
        .map(|f| load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = merge(&reports)?;
    println!("merged {} runs", reports.len());
    print!("{}", crate::run::summary(&merged));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(!crate::run::has_errors(&merged))
}
