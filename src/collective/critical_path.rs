//! Evaluates any [`Dag`] on an idle fabric with the α-β model the closed forms use.
//!
//! A transfer of `bytes` that starts at `t` (when all its dependencies are met) is
//! **sent** at `t + bytes / B` (B = payload bottleneck rate of its route,
//! [`crate::units::Rate::tx_time`], rounded up to the picosecond) and **done** at
//! `sent + α` (α = [`Topology::path_latency`] of the route). Where equal-cost
//! paths differ (a topology file), B and α are what ECMP gives in expectation
//! over the flow hash ([`Topology::path_cost`]). There is no contention: every
//! transfer sees the whole path. A compute task is sent and done `duration` after
//! it starts; a marker is sent and done when it starts. A [`Dep::Sent`] is met at
//! the predecessor's sent time, a [`Dep::Done`] at its done time. A transfer whose
//! ends cannot reach each other never completes (its times are [`SimTime::MAX`]).
//! A transfer's software latency ([`Dag::software_latency`]) is added to its
//! done time. A [`TaskKind::NetTransfer`] follows [`Topology::hop_path`] with
//! α = [`Topology::hop_latency`] (which adds the receiving switch's latency).

use crate::dag::{Dag, Dep, OpTiming, TaskId, TaskKind};
use crate::topology::Topology;
use crate::units::{Rate, SimTime};
use std::collections::HashMap;

/// Start, sent and done time of one task on an idle fabric, picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskTimes {
    /// When all dependencies were met.
    pub start: SimTime,
    /// When the last byte left the source (compute, marker: same as `done`).
    pub sent: SimTime,
    /// When the last byte arrived (compute: finished).
    pub done: SimTime,
}

/// The times of every task of `dag` on an idle `topo` (see the module doc).
/// O(tasks + dependencies) plus one route per distinct (src, dst) pair.
pub fn idle_schedule(dag: &Dag, topo: &Topology) -> Vec<TaskTimes> {
    schedule_over(dag, &[(SimTime::ZERO, topo)], |_, _| true)
}

/// (fabric, is a hop between adjacent nodes, source, destination): the key of
/// a path's cost in [`schedule_over`].
type CostKey = (usize, bool, u32, u32);

/// The times of every task of `dag` where the fabric changes over time:
/// `fabrics` holds `(from, fabric)` pairs in time order, the first from zero,
/// and each task takes the fabric of the time it starts (the analytical
/// backend's link events). After each task, `keep_going(index, times)` may
/// stop the schedule (it returns the times so far). One route per distinct
/// (fabric, src, dst).
pub(crate) fn schedule_over(
    dag: &Dag,
    fabrics: &[(SimTime, &Topology)],
    mut keep_going: impl FnMut(usize, &TaskTimes) -> bool,
) -> Vec<TaskTimes> {
    let mut cost: HashMap<CostKey, Option<(SimTime, Rate)>> = HashMap::new();
    let mut path = Vec::new();
    let mut times: Vec<TaskTimes> = Vec::with_capacity(dag.len());
    for (i, task) in dag.tasks().enumerate() {
        let id = TaskId(i as u32);
        let mut start = SimTime::ZERO;
        for d in dag.deps_of(id) {
            let t = match d {
                Dep::Sent(p) => times[p.0 as usize].sent,
                Dep::Done(p) => times[p.0 as usize].done,
            };
            start = start.max(t);
        }
        let epoch = fabrics.partition_point(|(s, _)| *s <= start).max(1) - 1;
        let fabric = fabrics[epoch].1;
        let tt = match task.kind {
            TaskKind::Transfer { src, dst, bytes } => {
                let c = *cost
                    .entry((epoch, false, src.0, dst.0))
                    .or_insert_with(|| fabric.path_cost(src, dst));
                transfer_times(dag, id, start, bytes, c)
            }
            TaskKind::NetTransfer { src, dst, bytes } => {
                // one hop between adjacent nodes: its own latency (with the
                // receiving switch's pipeline) and rate
                let c = *cost.entry((epoch, true, src.0, dst.0)).or_insert_with(|| {
                    fabric
                        .hop_path(src, dst, &mut path)
                        .then(|| (fabric.hop_latency(&path), fabric.path_bottleneck(&path)))
                });
                transfer_times(dag, id, start, bytes, c)
            }
            TaskKind::Compute { duration, .. } => {
                let done = start.saturating_add(duration);
                TaskTimes {
                    start,
                    sent: done,
                    done,
                }
            }
            TaskKind::Marker => TaskTimes {
                start,
                sent: start,
                done: start,
            },
        };
        times.push(tt);
        if !keep_going(i, &tt) {
            break;
        }
    }
    times
}

/// Times of a transfer of `bytes` starting at `start` over a path of latency
/// α and bottleneck rate B, plus its software latency (`None`: no path, the
/// transfer never completes).
fn transfer_times(
    dag: &Dag,
    id: TaskId,
    start: SimTime,
    bytes: u64,
    cost: Option<(SimTime, Rate)>,
) -> TaskTimes {
    match cost {
        Some((alpha, rate)) => {
            let sent = start.saturating_add(rate.tx_time(bytes));
            TaskTimes {
                start,
                sent,
                done: sent
                    .saturating_add(alpha)
                    .saturating_add(dag.software_latency(id)),
            }
        }
        None => TaskTimes {
            start,
            sent: SimTime::MAX,
            done: SimTime::MAX,
        },
    }
}

/// Makespan (latest done time, picoseconds) of `dag` on an idle `topo`, and the
/// start (earliest task start) and end (latest task done) of each operation of
/// [`Dag::ops`] (one entry even when the DAG declares none, like
/// [`crate::dag::DagRunner`]).
pub fn idle_critical_path(dag: &Dag, topo: &Topology) -> (SimTime, Vec<OpTiming>) {
    let times = idle_schedule(dag, topo);
    let n_ops = dag.ops.len().max(1);
    let mut ops = vec![OpTiming::default(); n_ops];
    let mut seen = vec![false; n_ops];
    let mut makespan = SimTime::ZERO;
    for (task, t) in dag.tasks().zip(&times) {
        let o = task.op as usize;
        if !seen[o] {
            seen[o] = true;
            ops[o] = OpTiming {
                start: t.start,
                end: t.done,
            };
        } else {
            ops[o].start = ops[o].start.min(t.start);
            ops[o].end = ops[o].end.max(t.done);
        }
        makespan = makespan.max(t.done);
    }
    (makespan, ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{build, GpuId, TopologySpec};

    fn topo() -> Topology {
        let (c, f) = crate::topology::builder::test_specs(2, 1);
        build(&c, &f, &TopologySpec::SingleSwitch).unwrap()
    }

    #[test]
    fn sent_and_done_follow_alpha_beta() {
        // α = PCIe 200 + NIC→switch 50 + switch 300 + switch→NIC 50 + PCIe 200 = 800 ns;
        // B = 400 Gb/s (the slowest link), so 4000 B take 80 ns.
        let t = topo();
        let mut d = Dag::new();
        d.begin_op("x");
        let a = d.transfer(GpuId(0), GpuId(1), 4000, &[]);
        let b = d.transfer(GpuId(0), GpuId(1), 4000, &[Dep::Sent(a)]);
        let c = d.compute(GpuId(1), SimTime::from_ns(10), &[Dep::Done(b)]);
        d.marker(&[Dep::Done(c)]);
        let s = idle_schedule(&d, &t);
        assert_eq!(s[0].sent, SimTime::from_ns(80));
        assert_eq!(s[0].done, SimTime::from_ns(880));
        assert_eq!(s[1].start, SimTime::from_ns(80));
        assert_eq!(s[1].done, SimTime::from_ns(960));
        let (m, ops) = idle_critical_path(&d, &t);
        assert_eq!(m, SimTime::from_ns(970));
        assert_eq!(ops[0].end, m);
    }
}
