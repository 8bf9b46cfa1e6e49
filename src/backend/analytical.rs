//! Analytical backend for arbitrary DAGs: every transfer costs its path's
//! latency plus bytes over the path's bottleneck payload rate, with no contention
//! (the idle critical path, [`crate::collective::critical_path`]).
//!
//! Collective sweeps use the algorithms' closed forms directly
//! ([`crate::collective::analytical_time`]), which scale to 100k+ GPUs without
//! building a DAG; this backend serves workloads that are DAGs by nature
//! (traffic patterns, training steps).
//!
//! **Link events** ([`run_with_events`]): the fabric changes at each event's
//! time, and a transfer sees the fabric as it is when the transfer *starts*
//! (its dependencies met): routes avoid links that are down by then and rates
//! are the degraded ones. A transfer already under way when a link fails keeps
//! its path (the flow fidelity moves it; here there is no in-flight state), and a
//! change after the last task ends changes nothing. This is the rule slow GPUs
//! follow too ([`crate::workload::faults`]: a compute task that starts at or after
//! the fault's time is slowed). A transfer whose endpoints the fabric of its
//! start no longer connects is an [`AnalyticalError::Unreachable`], never a
//! saturated time.

use std::borrow::Cow;

use super::{FabricCounters, RunOutput};
use super::{LinkEvent, LinkEventKind};
use crate::collective::critical_path::{idle_schedule, schedule_over, TaskTimes};
use crate::config::Fidelity;
use crate::dag::{Dag, OpTiming, TaskKind};
use crate::topology::Topology;
use crate::units::SimTime;

/// Why the analytical backend cannot give a finite result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalyticalError {
    /// A transfer's endpoints have no path in the fabric as it is when the
    /// transfer starts (links or switches down).
    #[error("transfer {task} from {src} to {dst} has no route at {at} (GPU indices; node indices for a hop between adjacent nodes)")]
    Unreachable {
        /// Task index.
        task: u32,
        /// Source GPU (node, for a hop between adjacent nodes).
        src: u32,
        /// Destination GPU (node, for a hop between adjacent nodes).
        dst: u32,
        /// When the transfer would start, picoseconds.
        at: SimTime,
    },
}

/// Runs `dag` on an idle `topo`. A transfer whose endpoints cannot reach each
/// other gets [`SimTime::MAX`] times; [`run_with_events`] reports it as an error
/// instead.
pub fn run(dag: &Dag, topo: &Topology) -> RunOutput {
    output(dag, &idle_schedule(dag, topo))
}

/// Runs `dag` on `topo` with `events` applied at their times (see the module
/// doc); without events, exactly [`run`].
///
/// # Errors
/// [`AnalyticalError::Unreachable`] for the first transfer (in DAG order) whose
/// endpoints the fabric at its start does not connect.
pub fn run_with_events(
    dag: &Dag,
    topo: &Topology,
    events: &[LinkEvent],
) -> Result<RunOutput, AnalyticalError> {
    let times = if events.is_empty() {
        idle_schedule(dag, topo)
    } else {
        schedule_with_events(dag, topo, events)?
    };
    let unreachable = dag
        .tasks()
        .zip(&times)
        .position(|(task, t)| task.kind.is_transfer() && t.done == SimTime::MAX);
    if let Some(i) = unreachable {
        let (src, dst) = endpoints(dag.kind(i));
        return Err(AnalyticalError::Unreachable {
            task: i as u32,
            src,
            dst,
            at: times[i].start,
        });
    }
    Ok(output(dag, &times))
}

/// Source and destination indices of a transfer (GPUs, or nodes for a hop).
fn endpoints(kind: TaskKind) -> (u32, u32) {
    match kind {
        TaskKind::Transfer { src, dst, .. } => (src.0, dst.0),
        TaskKind::NetTransfer { src, dst, .. } => (src.0, dst.0),
        _ => (0, 0),
    }
}

/// The fabric after every event of `events` at or before each distinct event
/// time: `(start, fabric)` pairs in time order, the first starting at zero.
fn epochs<'t>(topo: &'t Topology, events: &[LinkEvent]) -> Vec<(SimTime, Cow<'t, Topology>)> {
    // an unmodelled change (a bit-error rate) must not open an epoch of its own
    let mut order: Vec<&LinkEvent> = events
        .iter()
        .filter(|e| e.kind.modelled_at(Fidelity::Analytical))
        .collect();
    order.sort_by_key(|e| e.at); // stable: equal times keep their given order
    let mut out: Vec<(SimTime, Cow<'t, Topology>)> = vec![(SimTime::ZERO, Cow::Borrowed(topo))];
    for e in order {
        if e.link.0 as usize >= topo.links.len() {
            continue; // validated scenarios never name a missing link
        }
        let last = out.len() - 1;
        if out[last].0 != e.at {
            let next = out[last].1.clone().into_owned();
            out.push((e.at, Cow::Owned(next)));
        }
        let t = out.last_mut().map(|(_, t)| t.to_mut());
        if let Some(t) = t {
            match e.kind {
                LinkEventKind::Down => {
                    if t.is_link_up(e.link) {
                        t.set_link_up(e.link, false);
                    }
                }
                LinkEventKind::Rate(r) => t.set_link_rate(e.link, r),
                // filtered above; `backend::run` refuses `Up` at this fidelity
                LinkEventKind::Up | LinkEventKind::Ber(_) => {}
            }
        }
    }
    out
}

/// [`idle_schedule`] where each transfer takes the fabric of the epoch its start
/// falls in (the same formulas, [`schedule_over`]); stops at the first
/// transfer the fabric of its start does not connect.
fn schedule_with_events(
    dag: &Dag,
    topo: &Topology,
    events: &[LinkEvent],
) -> Result<Vec<TaskTimes>, AnalyticalError> {
    let fabrics = epochs(topo, events);
    let views: Vec<(SimTime, &Topology)> = fabrics.iter().map(|(t, f)| (*t, &**f)).collect();
    let mut cut = None;
    let times = schedule_over(dag, &views, |i, t| {
        let unreachable = t.done == SimTime::MAX && dag.kind(i).is_transfer();
        if unreachable {
            cut = Some((i, t.start));
        }
        !unreachable
    });
    if let Some((i, at)) = cut {
        let (src, dst) = endpoints(dag.kind(i));
        return Err(AnalyticalError::Unreachable {
            task: i as u32,
            src,
            dst,
            at,
        });
    }
    Ok(times)
}

/// The common result from every task's times.
fn output(dag: &Dag, times: &[TaskTimes]) -> RunOutput {
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
    for (task, t) in dag.tasks().zip(times) {
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
        task_start: times.iter().map(|t| t.start).collect(),
        task_done: times.iter().map(|t| t.done).collect(),
        ..RunOutput::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::Dep;
    use crate::topology::{build, GpuId, LinkId, TopologySpec};
    use crate::units::Rate;

    /// 4 hosts of 1 GPU on a leaf-spine with 2 hosts per leaf and 2 spines.
    fn topo() -> Topology {
        let (c, f) = crate::topology::builder::test_specs(4, 1);
        build(
            &c,
            &f,
            &TopologySpec::LeafSpine {
                radix: 4,
                oversubscription: 1.0,
            },
        )
        .unwrap()
    }

    fn chain(t: &Topology) -> Dag {
        let mut d = Dag::new();
        d.begin_op("x");
        let a = d.transfer(GpuId(0), GpuId(3), 1 << 20, &[]);
        let b = d.transfer(GpuId(3), GpuId(0), 1 << 20, &[Dep::Done(a)]);
        d.compute(GpuId(0), SimTime::from_us(5), &[Dep::Done(b)]);
        let _ = t;
        d
    }

    #[test]
    fn an_event_after_the_last_task_changes_nothing() {
        // The healthy makespan is the idle critical path; a NIC cable cut 1 ps
        // after it cannot touch any transfer, so the result is identical.
        let t = topo();
        let d = chain(&t);
        let healthy = run(&d, &t);
        let late = [LinkEvent {
            at: SimTime(healthy.makespan.0 + 1),
            link: t.nics[0].uplink,
            kind: LinkEventKind::Down,
        }];
        let out = run_with_events(&d, &t, &late).unwrap();
        assert_eq!(out.makespan, healthy.makespan);
        assert_eq!(out.op_timing, healthy.op_timing);
        assert_eq!(out.transfer_fct, healthy.transfer_fct);
    }

    #[test]
    fn a_cut_host_is_an_error_at_the_first_transfer_after_the_cut() {
        // GPU 0's only cable fails at 1 µs: the first transfer (start 0) still
        // runs, the second (from GPU 3 back to GPU 0, starting once the first is
        // done, ~23 µs) has no path.
        let t = topo();
        let d = chain(&t);
        let cut = [LinkEvent {
            at: SimTime::from_us(1),
            link: t.nics[0].uplink,
            kind: LinkEventKind::Down,
        }];
        match run_with_events(&d, &t, &cut) {
            Err(AnalyticalError::Unreachable { task, src, dst, at }) => {
                assert_eq!((task, src, dst), (1, 3, 0));
                assert!(at > SimTime::from_us(1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_degraded_link_slows_only_transfers_that_start_after_it() {
        // GPU 0's cable drops to 100 Gb/s at 1 µs. The first transfer (start 0)
        // keeps 400 Gb/s; the second starts later and crosses the slow cable,
        // so it takes longer than in the healthy run, by about 3 × 1 MiB / 400 Gb/s.
        let t = topo();
        let d = chain(&t);
        let healthy = run(&d, &t);
        let slow = [t.nics[0].uplink, t.reverse(t.nics[0].uplink)].map(|l: LinkId| LinkEvent {
            at: SimTime::from_us(1),
            link: l,
            kind: LinkEventKind::Rate(Rate::gbps(100)),
        });
        let out = run_with_events(&d, &t, &slow).unwrap();
        assert_eq!(out.transfer_fct[0], healthy.transfer_fct[0]);
        assert!(out.transfer_fct[1].0 > healthy.transfer_fct[1].0 * 3);
    }
}
