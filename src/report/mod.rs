//! What a run reports, in one schema for every fidelity, and its renderings:
//! terminal table ([`table`]), JSON (serde), CSV ([`csv`]).

pub mod csv;
pub mod table;
pub mod workload;

use serde::Serialize;

use crate::backend::{FabricCounters, LinkCounters};
use crate::config::IgnoredSetting;

/// One row per collective size, as nccl-tests prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveRow {
    /// Operation name.
    pub op: String,
    /// Algorithm that ran (after `auto`).
    pub algorithm: String,
    /// Size in bytes (nccl-tests meaning).
    pub bytes: u64,
    /// Elements of `dtype` (bytes / element size).
    pub count: u64,
    /// Element type name.
    #[serde(rename = "type")]
    pub dtype: String,
    /// Ranks in the communicator.
    pub ranks: u32,
    /// Time of the collective, microseconds.
    pub time_us: f64,
    /// Algorithm bandwidth: bytes / time, GB/s (10^9 bytes).
    #[serde(rename = "algbw_GBps")]
    pub algbw_gbps: f64,
    /// Bus bandwidth: algbw × nccl-tests factor, GB/s.
    #[serde(rename = "busbw_GBps")]
    pub busbw_gbps: f64,
}

/// Percentiles of flow completion times, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

/// Flow completion statistics over every transfer of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowStats {
    /// Number of transfers (flows).
    pub count: u64,
    /// Completion time percentiles, microseconds.
    pub fct_us: Percentiles,
    /// Slowdown (completion time / ideal time on an idle path) percentiles.
    pub slowdown: Percentiles,
}

/// The shape that was simulated.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TopologySummary {
    /// Shape name.
    pub shape: String,
    /// Hosts.
    pub hosts: u32,
    /// GPUs.
    pub gpus: u32,
    /// Network switches.
    pub switches: usize,
    /// Directed links (all kinds).
    pub links: usize,
}

/// Cost of the simulation itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimStats {
    /// Events processed (flow starts/ends, packets, …).
    pub events: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Events per wall-clock second.
    pub events_per_s: f64,
}

/// The result of running one scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Fidelity that ran.
    pub fidelity: String,
    /// Seed.
    pub seed: u64,
    /// fabricsim version.
    pub version: String,
    /// FNV-1a hash of the scenario as validated, so two results can be matched to their inputs.
    pub scenario_hash: String,
    /// The simulated shape.
    pub topology: TopologySummary,
    /// One row per collective run.
    pub collectives: Vec<CollectiveRow>,
    /// Simulated time of the whole run (sum over a sweep's sizes), microseconds.
    pub makespan_us: f64,
    /// Flow completion statistics.
    pub flows: FlowStats,
    /// Fabric counters (sum over the runs).
    pub fabric: FabricCounters,
    /// Per-link counters, busiest first (only with `--links`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkCounters>,
    /// One training step (training workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<workload::TrainingReport>,
    /// One inference batch (inference workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<workload::InferenceReport>,
    /// Settings present in the scenario that this fidelity does not use, and why.
    pub ignored_settings: Vec<IgnoredSetting>,
    /// Cost of the simulation.
    pub sim: SimStats,
}

impl Report {
    /// The JSON document (pretty-printed, stable key order).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes: plain data only")
    }
}
