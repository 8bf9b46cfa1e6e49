//! Analytical backend for arbitrary DAGs: every transfer costs its path's
//! latency plus bytes over the path's bottleneck payload rate, with no contention
//! (the idle critical path, [`crate::collective::critical_path`]).
//!
//! Collective sweeps use the algorithms' closed forms directly
//! ([`crate::collective::analytical_time`]), which scale to 100k+ GPUs without
//! building a DAG; this backend serves workloads that are DAGs by nature
//! (traffic patterns, training steps).

use super::{FabricCounters, RunOutput};
use crate::collective::critical_path::idle_schedule;
use crate::dag::{Dag, OpTiming};
use crate::topology::Topology;
use crate::units::SimTime;

/// Runs `dag` on an idle `topo`.
pub fn run(dag: &Dag, topo: &Topology) -> RunOutput {
    let times = idle_schedule(dag, topo);
    let mut op_timing = vec![
        OpTiming {
            start: SimTime::MAX,
            end: SimTime::ZERO
        };
        dag.ops.len().max(1)
    ];
    let mut fct = Vec::new();
    let mut bytes = 0u64;
    let mut makespan = SimTime::ZERO;
    for (task, t) in dag.tasks.iter().zip(&times) {
        let op = &mut op_timing[task.op as usize];
        op.start = op.start.min(t.start);
        op.end = op.end.max(t.done);
        makespan = makespan.max(t.done);
        if task.kind.is_transfer() {
            fct.push(t.done - t.start);
            bytes += task.kind.transfer_bytes();
        }
    }
    for op in &mut op_timing {
        if op.start == SimTime::MAX {
            op.start = SimTime::ZERO;
        }
    }
    RunOutput {
        makespan,
        op_timing,
        // on an idle fabric every transfer takes exactly its ideal time
        transfer_ideal: fct.clone(),
        transfer_fct: fct,
        fabric: FabricCounters {
            bytes_delivered: bytes,
            bytes_sent: bytes,
            ..FabricCounters::default()
        },
        events: dag.len() as u64,
        ..RunOutput::default()
    }
}
