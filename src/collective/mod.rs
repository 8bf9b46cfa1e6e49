//! Collective operations and the algorithms that lower them into transfers.
//!
//! Each algorithm file does two things for the operations it supports:
//! - **lowers** one collective into a DAG of [`crate::dag::Task`]s (transfers with
//!   dependencies, pipelined by chunks the way NCCL does), which the flow and packet
//!   backends execute;
//! - gives its **closed-form α-β time** on a topology (Thakur, Rabenseifner & Gropp,
//!   IJHPCA 2005), which the analytical backend reports. The closed form must equal the
//!   critical path of the lowered DAG on an idle fabric; tests check it.
//!
//! Sizes follow nccl-tests (`doc/PERFORMANCE.md`): for all-reduce, broadcast and
//! reduce `bytes` is the buffer of one rank; for all-gather and reduce-scatter it is
//! the *total* gathered buffer (each rank owns `bytes / n`); for all-to-all it is the
//! send buffer of one rank (`bytes / n` to each peer).

pub mod alltoall;
pub mod halving_doubling;
pub mod hierarchical;
pub mod ring;
pub mod tree;

use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::{Rate, SimTime};

/// A collective operation, as nccl-tests names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveOp {
    /// Every rank ends with the element-wise sum of all buffers.
    AllReduce,
    /// Every rank ends with the concatenation of all ranks' pieces.
    AllGather,
    /// Rank i ends with piece i of the element-wise sum.
    ReduceScatter,
    /// Every rank ends with the root's buffer.
    Broadcast,
    /// Rank i sends piece j of its buffer to rank j.
    AllToAll,
}

impl CollectiveOp {
    /// Every operation, in the order the CLI lists them.
    pub const ALL: [CollectiveOp; 5] = [
        CollectiveOp::AllReduce,
        CollectiveOp::AllGather,
        CollectiveOp::ReduceScatter,
        CollectiveOp::Broadcast,
        CollectiveOp::AllToAll,
    ];

    /// The name used in scenario files, the CLI and results.
    pub fn name(self) -> &'static str {
        match self {
            CollectiveOp::AllReduce => "allreduce",
            CollectiveOp::AllGather => "allgather",
            CollectiveOp::ReduceScatter => "reducescatter",
            CollectiveOp::Broadcast => "broadcast",
            CollectiveOp::AllToAll => "alltoall",
        }
    }

    /// Parses a name (`all_reduce` and `all-reduce` are accepted too).
    pub fn parse(s: &str) -> Option<CollectiveOp> {
        let k: String = s.chars().filter(|c| *c != '_' && *c != '-').collect();
        CollectiveOp::ALL
            .into_iter()
            .find(|op| op.name() == k.to_ascii_lowercase())
    }

    /// nccl-tests' bus-bandwidth factor for `n` ranks (`doc/PERFORMANCE.md`):
    /// busbw = algbw × factor.
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = n as f64;
        match self {
            CollectiveOp::AllReduce => 2.0 * (n - 1.0) / n,
            CollectiveOp::AllGather | CollectiveOp::ReduceScatter | CollectiveOp::AllToAll => {
                (n - 1.0) / n
            }
            CollectiveOp::Broadcast => 1.0,
        }
    }
}

/// An algorithm that implements collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Ring (reduce-scatter then all-gather for all-reduce; pipelined chain for broadcast).
    Ring,
    /// NCCL's double binary tree (two complementary trees, each carrying half the data).
    Tree,
    /// Recursive halving (reduce-scatter) and doubling (all-gather), Rabenseifner.
    HalvingDoubling,
    /// NVLink inside the host, one inter-host algorithm per rail, NVLink again.
    Hierarchical,
    /// Every rank sends directly to every other (all-to-all).
    Direct,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Ring,
        Algorithm::Tree,
        Algorithm::HalvingDoubling,
        Algorithm::Hierarchical,
        Algorithm::Direct,
    ];
    /// The name used in scenario files, the CLI and results.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::HalvingDoubling => "halving_doubling",
            Algorithm::Hierarchical => "hierarchical",
            Algorithm::Direct => "direct",
        }
    }
    /// Parses a name.
    pub fn parse(s: &str) -> Option<Algorithm> {
        let s = s.replace('-', "_").to_ascii_lowercase();
        Algorithm::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// One collective to run.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveSpec {
    /// Which operation.
    pub op: CollectiveOp,
    /// Which algorithm (after `auto` was resolved).
    pub algorithm: Algorithm,
    /// Size in bytes, with nccl-tests' meaning for `op` (see the module doc).
    pub bytes: u64,
    /// Largest piece a step's message is cut into for pipelining, bytes.
    pub chunk_bytes: u64,
    /// For [`Algorithm::Hierarchical`]: the algorithm between hosts (one per rail).
    pub inter_host: Algorithm,
    /// For broadcast: the root's index in the communicator.
    pub root: u32,
}

/// Why a collective cannot be lowered or costed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CollectiveError {
    /// The algorithm does not implement the operation.
    #[error("algorithm {algo} does not implement {op}; it implements {supported}")]
    Unsupported {
        /// The algorithm's name.
        algo: &'static str,
        /// The operation's name.
        op: &'static str,
        /// The operations it does implement, comma-separated.
        supported: String,
    },
    /// The communicator does not fit the algorithm (size, shape).
    #[error("{0}")]
    BadCommunicator(String),
    /// Two ranks cannot reach each other in the topology.
    #[error("GPU {0} cannot reach GPU {1}: no route in the topology")]
    Unreachable(u32, u32),
}

/// Cost of moving data between two GPUs on an idle fabric: α (path latency) and
/// the payload bottleneck rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathCost {
    /// Latency of the path, picoseconds.
    pub alpha: SimTime,
    /// Payload rate of its slowest link.
    pub rate: Rate,
}

impl PathCost {
    /// Time for a message of `bytes` on an idle path: α + bytes / rate.
    pub fn time(self, bytes: u64) -> SimTime {
        self.alpha + self.rate.tx_time(bytes)
    }
    /// The worst (slowest α, slowest rate) of two costs; used for a ring whose edges differ.
    pub fn worst(self, o: PathCost) -> PathCost {
        PathCost {
            alpha: self.alpha.max(o.alpha),
            rate: self.rate.min(o.rate),
        }
    }
}

/// The [`PathCost`] between two GPUs.
///
/// # Errors
/// [`CollectiveError::Unreachable`] if there is no route.
pub fn path_cost(topo: &Topology, a: GpuId, b: GpuId) -> Result<PathCost, CollectiveError> {
    topo.path_cost(a, b)
        .map(|(alpha, rate)| PathCost { alpha, rate })
        .ok_or(CollectiveError::Unreachable(a.0, b.0))
}

/// Splits `bytes` into `ceil(bytes / chunk)` pieces as equal as possible (at least one).
pub fn chunk_sizes(bytes: u64, chunk: u64) -> impl Iterator<Item = u64> {
    let chunk = chunk.max(1);
    let n = bytes.div_ceil(chunk).max(1);
    let base = bytes / n;
    let extra = bytes % n;
    (0..n).map(move |i| base + u64::from(i < extra))
}

/// Lowers `spec` over the communicator `ranks` into `dag`; every first task waits
/// for `after`. Returns a marker task that completes when the collective does.
///
/// # Errors
/// See [`CollectiveError`].
pub fn lower(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    dag: &mut Dag,
    after: &[Dep],
) -> Result<TaskId, CollectiveError> {
    match spec.algorithm {
        Algorithm::Ring => ring::lower(spec, ranks, topo, dag, after),
        Algorithm::Tree => tree::lower(spec, ranks, topo, dag, after),
        Algorithm::HalvingDoubling => halving_doubling::lower(spec, ranks, topo, dag, after),
        Algorithm::Hierarchical => hierarchical::lower(spec, ranks, topo, dag, after),
        Algorithm::Direct => alltoall::lower(spec, ranks, topo, dag, after),
    }
}

/// The closed-form time of `spec` over `ranks` on an idle `topo`.
///
/// # Errors
/// See [`CollectiveError`].
pub fn analytical_time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    match spec.algorithm {
        Algorithm::Ring => ring::time(spec, ranks, topo),
        Algorithm::Tree => tree::time(spec, ranks, topo),
        Algorithm::HalvingDoubling => halving_doubling::time(spec, ranks, topo),
        Algorithm::Hierarchical => hierarchical::time(spec, ranks, topo),
        Algorithm::Direct => alltoall::time(spec, ranks, topo),
    }
}

/// Payload bytes the algorithm moves across all links' sources in total (sum of
/// its transfers), for the analytical fabric counters.
///
/// # Errors
/// See [`CollectiveError`].
pub fn traffic_bytes(spec: &CollectiveSpec, ranks: &[GpuId]) -> Result<u64, CollectiveError> {
    match spec.algorithm {
        Algorithm::Ring => ring::traffic(spec, ranks),
        Algorithm::Tree => tree::traffic(spec, ranks),
        Algorithm::HalvingDoubling => halving_doubling::traffic(spec, ranks),
        Algorithm::Hierarchical => hierarchical::traffic(spec, ranks),
        Algorithm::Direct => alltoall::traffic(spec, ranks),
    }
}

/// Whether `algo` implements `op`.
pub fn supports(algo: Algorithm, op: CollectiveOp) -> bool {
    use Algorithm as A;
    use CollectiveOp as O;
    matches!(
        (algo, op),
        (
            A::Ring,
            O::AllReduce | O::AllGather | O::ReduceScatter | O::Broadcast
        ) | (A::Tree, O::AllReduce | O::Broadcast)
            | (
                A::HalvingDoubling,
                O::AllReduce | O::AllGather | O::ReduceScatter
            )
            | (
                A::Hierarchical,
                O::AllReduce | O::AllGather | O::ReduceScatter
            )
            | (A::Direct, O::AllToAll)
    )
}

/// The operations `algo` implements, comma-separated (for error messages).
pub fn supported_ops(algo: Algorithm) -> String {
    CollectiveOp::ALL
        .into_iter()
        .filter(|&op| supports(algo, op))
        .map(|op| op.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error for an unsupported pair.
pub fn unsupported(algo: Algorithm, op: CollectiveOp) -> CollectiveError {
    CollectiveError::Unsupported {
        algo: algo.name(),
        op: op.name(),
        supported: supported_ops(algo),
    }
}

/// Picks the algorithm with the lowest closed-form time for `spec.op` at
/// `spec.bytes` (what `--algo auto` does). Ties go to the earlier in [`Algorithm::ALL`].
///
/// # Errors
/// Fails only if no algorithm can run the operation on this communicator.
pub fn auto_select(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<Algorithm, CollectiveError> {
    let mut best: Option<(SimTime, Algorithm)> = None;
    let mut last_err = None;
    for algo in Algorithm::ALL {
        if !supports(algo, spec.op) {
            continue;
        }
        let s = CollectiveSpec {
            algorithm: algo,
            ..spec.clone()
        };
        match analytical_time(&s, ranks, topo) {
            Ok(t) if best.is_none_or(|(bt, _)| t < bt) => best = Some((t, algo)),
            Ok(_) => {}
            Err(e) => last_err = Some(e),
        }
    }
    best.map(|(_, a)| a)
        .ok_or_else(|| last_err.unwrap_or_else(|| unsupported(spec.algorithm, spec.op)))
}
