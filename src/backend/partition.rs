//! Which dependencies of a DAG a partitioned packet run could not honour
//! (docs/parallel-engine.md). In a conservative parallel run a partition
//! hears from another only across a cut link, after its latency; a DAG edge
//! is delivered at zero delay. An edge is **local** when the partition that
//! sees the dependency met is the one that starts the dependent task: a ring
//! step (the receive completes at rank `r`, rank `r` sends next) is local. An
//! edge from a completion in one partition to a start in another is a
//! **crossing**, and so is a marker that joins completions of several
//! partitions and releases anything: the dependent partition may be past
//! that instant inside its window. Such a DAG runs on one partition only.

use crate::dag::{Dag, Dep, TaskId, TaskKind};
use crate::topology::partition::Partitioning;
use crate::topology::Topology;

/// Where a task's completion (or start) is seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Nowhere in particular: a marker with no dependencies (ready at the
    /// start, before any window).
    Any,
    /// In one partition.
    Part(u32),
    /// A marker joining completions of two partitions (`.0`, `.1`, the first
    /// two met in dependency order).
    Joined(u32, u32),
}

impl Place {
    fn join(self, other: Place) -> Place {
        match (self, other) {
            (Place::Any, x) | (x, Place::Any) => x,
            (Place::Part(a), Place::Part(b)) if a == b => Place::Part(a),
            (Place::Part(a), Place::Part(b)) => Place::Joined(a, b),
            (j @ Place::Joined(..), _) => j,
            (Place::Part(_), j @ Place::Joined(..)) => j,
        }
    }
}

/// A dependency a partitioned run could not deliver in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crossing {
    /// The task that waits.
    pub task: TaskId,
    /// The task it waits on.
    pub dep: TaskId,
    /// Partition in which `dep`'s completion is seen.
    pub from: u32,
    /// Partition in which `task` starts (for a joining marker: the partition
    /// of its other completions).
    pub to: u32,
}

/// The first crossing of `dag` (by task id) under `part`, or `None` when
/// every dependency is local. Markers that nothing waits on may join
/// several partitions: their time is the latest of their dependencies',
/// known once the run ends.
pub fn first_crossing(dag: &Dag, topo: &Topology, part: &Partitioning) -> Option<Crossing> {
    let n = dag.len();
    let mut waited_on = vec![false; n];
    for t in 0..n {
        for d in dag.deps_of(TaskId(t as u32)) {
            let (Dep::Sent(x) | Dep::Done(x)) = d;
            waited_on[x.0 as usize] = true;
        }
    }
    let gpu = |g: crate::topology::GpuId| Place::Part(part.of(topo.gpus[g.0 as usize].node));
    // Per task: where its completion is seen, and where its last byte leaves.
    let mut done_at = vec![Place::Any; n];
    let mut sent_at = vec![Place::Any; n];
    for t in 0..n {
        let id = TaskId(t as u32);
        let signal = |d: Dep| match d {
            Dep::Sent(x) => (x, sent_at[x.0 as usize]),
            Dep::Done(x) => (x, done_at[x.0 as usize]),
        };
        let (start, done, sent) = match dag.kind(t) {
            TaskKind::Transfer { src, dst, .. } => (gpu(src), gpu(dst), gpu(src)),
            TaskKind::NetTransfer { src, dst, .. } => {
                let (s, d) = (Place::Part(part.of(src)), Place::Part(part.of(dst)));
                (s, d, s)
            }
            TaskKind::Compute { gpu: g, .. } => (gpu(g), gpu(g), gpu(g)),
            TaskKind::Marker => {
                let mut at = Place::Any;
                for d in dag.deps_of(id) {
                    let (x, p) = signal(d);
                    at = at.join(p);
                    if let Place::Joined(a, b) = at {
                        if waited_on[t] {
                            return Some(Crossing {
                                task: id,
                                dep: x,
                                from: b,
                                to: a,
                            });
                        }
                    }
                }
                (at, at, at)
            }
        };
        if let Place::Part(to) = start {
            for d in dag.deps_of(id) {
                let (x, p) = signal(d);
                let from = match p {
                    Place::Any => continue,
                    Place::Part(a) if a == to => continue,
                    Place::Part(a) | Place::Joined(a, _) => a,
                };
                return Some(Crossing {
                    task: id,
                    dep: x,
                    from,
                    to,
                });
            }
        }
        done_at[t] = done;
        sent_at[t] = sent;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{lower, Algorithm, CollectiveOp, CollectiveSpec, ProtoCost};
    use crate::topology::partition::partition;
    use crate::topology::{GpuId, TopologySpec};
    use crate::units::SimTime;

    fn fat_tree(hosts: u32, gpus: u32) -> Topology {
        crate::topology::test_cluster(hosts, gpus, &TopologySpec::FatTree { k: 4 })
    }

    fn lowered(algorithm: Algorithm, inter_host: Algorithm, t: &Topology) -> Dag {
        let spec = CollectiveSpec {
            op: CollectiveOp::AllReduce,
            algorithm,
            bytes: 1 << 20,
            chunk_bytes: 1 << 18,
            inter_host,
            root: 0,
            channels: 1,
            pxn: true,
            proto: ProtoCost::NONE,
        };
        let ranks: Vec<GpuId> = (0..t.num_gpus()).map(GpuId).collect();
        let mut dag = Dag::new();
        lower(&spec, &ranks, t, &mut dag, &[]).unwrap();
        dag
    }

    #[test]
    fn hand_built_edges_are_local_or_crossing_as_their_ends_lie() {
        // 16 hosts of one GPU on a k = 4 fat-tree, 4 partitions (one pod each:
        // hosts 0-3, 4-7, …).
        let t = fat_tree(16, 1);
        let p = partition(&t, 4).unwrap();
        let mut d = Dag::new();
        let a = d.transfer(GpuId(0), GpuId(5), 4096, &[]);
        // host 5 sends on after its receive: local
        let b = d.transfer(GpuId(5), GpuId(9), 4096, &[Dep::Done(a)]);
        // host 0 reuses its buffer once its bytes left: local
        let _c = d.compute(GpuId(0), SimTime::from_ns(10), &[Dep::Sent(a)]);
        // a marker that nobody waits on may join partitions
        let _end = d.marker(&[Dep::Done(a), Dep::Done(b)]);
        assert_eq!(first_crossing(&d, &t, &p), None);
        // host 13 starts when host 9's receive completes: partitions 2 → 3
        let e = d.compute(GpuId(13), SimTime::from_ns(10), &[Dep::Done(b)]);
        assert_eq!(
            first_crossing(&d, &t, &p),
            Some(Crossing {
                task: e,
                dep: b,
                from: 2,
                to: 3
            })
        );
        // one partition: nothing crosses
        assert_eq!(first_crossing(&d, &t, &partition(&t, 1).unwrap()), None);
        // a joining marker something waits on crosses
        let mut d = Dag::new();
        let a = d.transfer(GpuId(0), GpuId(1), 4096, &[]);
        let b = d.transfer(GpuId(4), GpuId(5), 4096, &[]);
        let m = d.marker(&[Dep::Done(a), Dep::Done(b)]);
        d.compute(GpuId(1), SimTime::from_ns(10), &[Dep::Done(m)]);
        assert_eq!(
            first_crossing(&d, &t, &p),
            Some(Crossing {
                task: m,
                dep: b,
                from: 1,
                to: 0
            })
        );
    }

    #[test]
    fn which_collectives_need_a_cross_partition_join() {
        // 8 hosts × 2 GPUs on a k = 4 fat-tree, 2 partitions (4 hosts each).
        // Ring, tree and halving-doubling steps wait only on the rank's own
        // receives and sends, as NCCL's and MPI's do; so does the hierarchical
        // all-reduce over rail rings. Over a rail tree or halving-doubling it
        // gathers every host's intra-host phase in one gate marker
        // (collective/hierarchical.rs: one marker instead of H² edges), which
        // a partitioned run cannot deliver.
        let t = fat_tree(8, 2);
        let p = partition(&t, 2).unwrap();
        for (a, inter) in [
            (Algorithm::Ring, Algorithm::Ring),
            (Algorithm::Tree, Algorithm::Ring),
            (Algorithm::HalvingDoubling, Algorithm::Ring),
            (Algorithm::Hierarchical, Algorithm::Ring),
        ] {
            let d = lowered(a, inter, &t);
            assert_eq!(first_crossing(&d, &t, &p), None, "{}", a.name());
        }
        for inter in [Algorithm::Tree, Algorithm::HalvingDoubling] {
            let d = lowered(Algorithm::Hierarchical, inter, &t);
            let c = first_crossing(&d, &t, &p).expect("the rail gate joins partitions");
            assert_eq!(
                d.kind(c.task.0 as usize),
                TaskKind::Marker,
                "{}",
                inter.name()
            );
            assert_ne!(c.from, c.to);
        }
    }
}
