//! `strata bench`: a load generator for Redis-protocol servers that reproduces the classic
//! database benchmarks (redis-benchmark, YCSB, VoltDB's voter) with honest percentiles,
//! several targets side by side, and reports that merge across client machines.

pub mod cli;
pub mod conn;
pub mod driver;
pub mod hist;
pub mod keys;
pub mod merge;
pub mod output;
pub mod reply;
pub mod report;
pub mod rng;
pub mod run;
pub mod timer;
pub mod workloads;
