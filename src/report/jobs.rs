//! Several jobs on one fabric (`[[jobs]]`): each job's result in the shared
//! run, beside the same job run alone on the same fabric and placement, as a
//! table, JSON (`jobs` in the report) and CSV (`jobs.csv`).

use std::fmt::Write;

use serde::Serialize;

use super::csv::csv_field;
use super::workload::{FaultEffect, InferenceReport, TrainingReport};
use super::{CollectiveRow, Report};

/// One job of a `[[jobs]]` scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// `workload.kind` of the job: `collective`, `traffic`, `flows`,
    /// `training`, `inference` or `chakra`.
    pub kind: String,
    /// How its nodes were chosen: `packed`, `spread`, `random` or `list`.
    pub placement: String,
    /// The physical nodes it ran on, in rank order.
    pub nodes: Vec<u32>,
    /// GPUs (ranks) of the job.
    pub gpus: u32,
    /// Its start time, microseconds from the start of the run.
    pub start_us: f64,
    /// When its first task (a transfer, for the kinds a job may be) started in
    /// the shared run, microseconds from the start of the run.
    pub first_task_us: f64,
    /// End of its last task minus its start, in the run shared with the other
    /// jobs, microseconds (a training or Chakra job's step time, an inference
    /// job's batch).
    pub makespan_us: f64,
    /// The same, with the job alone on the fabric (same nodes, same start),
    /// microseconds.
    pub alone_makespan_us: f64,
    /// Interference: shared makespan / alone makespan (1.0 = unaffected).
    pub slowdown: f64,
    /// Collective jobs: one row per size in the shared run (sizes run one
    /// after another, as nccl-tests does), with nccl-tests' columns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<CollectiveRow>,
    /// Collective jobs: the same rows with the job alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alone_collectives: Vec<CollectiveRow>,
    /// Training jobs: the step in the shared run (step time, breakdown, MFU),
    /// as a `[workload]` training scenario reports it (its own fault table
    /// stays empty: each job's faults are in [`JobResult::faults`], measured
    /// in the shared run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingReport>,
    /// Training jobs: the same step with the job alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_training: Option<TrainingReport>,
    /// Inference jobs: the batch in the shared run (prefill = TTFT, TPOT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<InferenceReport>,
    /// Inference jobs: the same batch with the job alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone_inference: Option<InferenceReport>,
    /// With `[[faults]]`: what each fault alone does to this job in the shared
    /// run — its makespan (`step_time_s`, seconds) with that fault only against
    /// the shared run on the healthy fabric. Empty without faults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultEffect>,
}

/// The jobs' section of the terminal table.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    if r.jobs.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "#\n# jobs sharing the fabric (slowdown = makespan shared / makespan alone):\n# {:<16} {:<10} {:<8} {:>6} {:>10} {:>14} {:>14} {:>9}  nodes",
        "job", "kind", "place", "gpus", "start(us)", "makespan(us)", "alone(us)", "slowdown"
    );
    for j in &r.jobs {
        let _ = writeln!(
            s,
            "  {:<16} {:<10} {:<8} {:>6} {:>10.2} {:>14.2} {:>14.2} {:>8.3}x  {}",
            j.name,
            j.kind,
            j.placement,
            j.gpus,
            j.start_us,
            j.makespan_us,
            j.alone_makespan_us,
            j.slowdown,
            nodes_text(&j.nodes)
        );
    }
    for j in &r.jobs {
        for f in &j.faults {
            let _ = writeln!(
                s,
                "#   job {}: fault {:?} ({} at {:.1} us) alone: makespan {:.2} us vs {:.2} us healthy ({:.3}x)",
                j.name,
                f.name,
                f.kind,
                f.at_us,
                f.step_time_s * 1e6,
                f.healthy_step_time_s * 1e6,
                f.slowdown
            );
        }
    }
    for j in &r.jobs {
        if let (Some(t), Some(a)) = (&j.training, &j.alone_training) {
            let _ = writeln!(s, "#\n# job {} (shared run):", j.name);
            s.push_str(&super::workload::render_training(t));
            let _ = writeln!(s, "# job {} alone:", j.name);
            s.push_str(&super::workload::render_training(a));
        }
        if let (Some(i), Some(a)) = (&j.inference, &j.alone_inference) {
            let _ = writeln!(s, "#\n# job {} (shared run):", j.name);
            s.push_str(&super::workload::render_inference(i));
            let _ = writeln!(s, "# job {} alone:", j.name);
            s.push_str(&super::workload::render_inference(a));
        }
        if j.collectives.is_empty() {
            continue;
        }
        let _ = writeln!(s, "#\n# job {} (shared run):", j.name);
        s.push_str(&super::table::collective_rows(&j.collectives));
        let _ = writeln!(s, "# job {} alone:", j.name);
        s.push_str(&super::table::collective_rows(&j.alone_collectives));
    }
    s
}

/// Nodes as ranges: `0-3,8,10-11`.
fn nodes_text(nodes: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let mut j = i;
        while j + 1 < nodes.len() && nodes[j + 1] == nodes[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", nodes[i], nodes[j])
        } else {
            nodes[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// `jobs.csv`: one row per job, then (collective jobs) one per size with the
/// shared and alone times and bus bandwidths; training jobs fill the MFU
/// columns, inference jobs the TTFT (prefill) and TPOT ones (empty cells
/// elsewhere).
pub fn csv(r: &Report) -> String {
    let mut s = String::from(
        "scenario,fidelity,job,kind,placement,nodes,gpus,start_us,first_task_us,makespan_us,alone_makespan_us,slowdown,bytes,time_us,alone_time_us,algbw_GBps,busbw_GBps,alone_busbw_GBps,mfu,alone_mfu,ttft_ms,alone_ttft_ms,tpot_p50_ms,alone_tpot_p50_ms\n",
    );
    // an empty cell where the job's kind does not report the figure
    let cell = |x: Option<f64>| x.map_or_else(String::new, |v| format!("{v:.6}"));
    for j in &r.jobs {
        let model = [
            j.training.as_ref().map(|t| t.mfu),
            j.alone_training.as_ref().map(|t| t.mfu),
            j.inference.as_ref().map(|i| i.prefill_ms),
            j.alone_inference.as_ref().map(|i| i.prefill_ms),
            j.inference.as_ref().map(|i| i.tpot_ms.p50),
            j.alone_inference.as_ref().map(|i| i.tpot_ms.p50),
        ]
        .map(cell)
        .join(",");
        let head = format!(
            "{},{},{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4}",
            csv_field(&r.scenario),
            r.fidelity,
            csv_field(&j.name),
            j.kind,
            j.placement,
            csv_field(&nodes_text(&j.nodes)),
            j.gpus,
            j.start_us,
            j.first_task_us,
            j.makespan_us,
            j.alone_makespan_us,
            j.slowdown
        );
        let _ = writeln!(s, "{head},,,,,,,{model}");
        for (c, a) in j.collectives.iter().zip(&j.alone_collectives) {
            let _ = writeln!(
                s,
                "{head},{},{:.4},{:.4},{:.4},{:.4},{:.4},{model}",
                c.bytes, c.time_us, a.time_us, c.algbw_gbps, c.busbw_gbps, a.busbw_gbps
            );
        }
    }
    s
}
