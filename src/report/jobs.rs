//! Several jobs on one fabric (`[[jobs]]`): each job's result in the shared
//! run, beside the same job run alone on the same fabric and placement, as a
//! table, JSON (`jobs` in the report) and CSV (`jobs.csv`).

use std::fmt::Write;

use serde::Serialize;

use super::csv::csv_field;
use super::{CollectiveRow, Report};

/// One job of a `[[jobs]]` scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// `workload.kind` of the job: `collective`, `traffic` or `flows`.
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
    /// jobs, microseconds.
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
/// shared and alone times and bus bandwidths.
pub fn csv(r: &Report) -> String {
    let mut s = String::from(
        "scenario,fidelity,job,kind,placement,nodes,gpus,start_us,first_task_us,makespan_us,alone_makespan_us,slowdown,bytes,time_us,alone_time_us,algbw_GBps,busbw_GBps,alone_busbw_GBps\n",
    );
    for j in &r.jobs {
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
        let _ = writeln!(s, "{head},,,,,,");
        for (c, a) in j.collectives.iter().zip(&j.alone_collectives) {
            let _ = writeln!(
                s,
                "{head},{},{:.4},{:.4},{:.4},{:.4},{:.4}",
                c.bytes, c.time_us, a.time_us, c.algbw_gbps, c.busbw_gbps, a.busbw_gbps
            );
        }
    }
    s
}
