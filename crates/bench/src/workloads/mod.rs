//! The workloads: each builds the phases of one run against one target, and may prepare
//! the target before and check it after.

pub mod embedded;
pub mod kv;
pub mod rdb;
pub mod voter;
pub mod ycsb;

use crate::conn::Client;
use crate::driver::{Phase, PhaseResult};

pub trait Workload: Sync {
    fn name(&self) -> &'static str;
    /// Before each run against a target (voter: load the function and reset the tables).
    fn prepare(&self, _c: &mut Client) -> Result<(), String> {
        Ok(())
    }
    fn phase_count(&self) -> usize;
    /// Phase `idx` of a run, built just before it runs (so its shared state is fresh).
    fn phase(&self, idx: usize) -> Result<Phase, String>;
    /// After a run: lines to print (voter's results), or `Err` when the check fails.
    fn check(&self, _c: &mut Client, _results: &[PhaseResult]) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
    /// The workload's parameters, for the JSON report.
    fn config(&self) -> serde_json::Value;
}
