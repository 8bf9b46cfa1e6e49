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
//!
//! | algorithm | operations | closed form (unchunked, uniform α, B) |
//! |---|---|---|
//! | [`ring`] | all-reduce, all-gather, reduce-scatter, broadcast | 2(N−1)(α + S/(N·B)); (N−1)(α + S/(N·B)); broadcast (N−1)α + (C+N−2)β |
//! | [`tree`] | all-reduce, broadcast | ≈ 2·log2 N·(α + β) + pipeline; see the module |
//! | [`halving_doubling`] | all-reduce, all-gather, reduce-scatter (N = 2^k) | 2·log2 N·α + 2(N−1)/N·S/B; half for AG/RS |
//! | [`hierarchical`] | all-reduce (whole hosts) | intra RS + inter AR(S/g) + intra AG |
//! | [`alltoall`] | all-to-all | (N−1)·S/(N·B) + α |
//! | [`sharp`] | all-reduce (switches with SHARP; else ring) | 2(d+1)·α + (C + 2d + 1)·β, tree depth d |
//! | [`nvls`] | all-reduce (NVSwitch reduces and multicasts, trees per rail across hosts; else ring) | (1 + 1/g)·wire(S)/B + 2·(α_up + α_down) on one host |
//! | [`collnet`] | all-reduce (chain per node into SHARP; else ring) | 2(g−1)·(α + β) + T_SHARP(S/C), or the NVLink load |
//!
//! **Timing model** (shared by every closed form and [`critical_path`]): a transfer
//! that starts at t is *sent* at t + tx_time(bytes) and *done* α later; a rank
//! posts its next message on a channel when the previous one is sent and forwards
//! or reduces data once it is done. Closed forms equal the critical path of the
//! lowered DAG ([`critical_path::idle_critical_path`]) when the sizes divide evenly
//! and the edges an algorithm uses share one payload rate; ring and tree keep one α
//! per edge (so hops within a leaf and across a spine differ) and take the slowest
//! rate, halving-doubling follows every rank exactly, all-to-all takes the worst
//! edge. Otherwise they are a tight upper bound (tests check both).
//!
//! **Edge cases.** A communicator of one rank, or zero bytes, lowers to a single
//! marker (no transfers) and costs 0. An empty communicator, a GPU listed twice or
//! absent from the topology, a broadcast root outside the communicator, or a shape
//! an algorithm cannot use (halving-doubling off powers of two, hierarchical on
//! partial hosts) is a [`CollectiveError::BadCommunicator`], never a panic.
//!
//! [`lower_traced`] also records which buffer bytes each transfer carries and
//! whether it reduces or copies ([`Carry`]); the tests replay it to check that every
//! rank ends with the right contributions.

pub mod alltoall;
pub mod collnet;
pub mod critical_path;
pub mod halving_doubling;
pub mod hierarchical;
pub mod nvls;
pub mod registry;
pub mod ring;
pub mod sharp;
pub mod tree;

use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::{Rate, SimTime};
pub use registry::{entry, AlgorithmEntry, StepShape, REGISTRY};
use std::collections::HashSet;

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
    /// In-network reduction by the switches (InfiniBand SHARP); see [`sharp`].
    Sharp,
    /// Reduction and multicast by the NVSwitch (NVLink SHARP); see [`nvls`].
    Nvls,
    /// NCCL's CollNet chain: a chain inside each node to a head that joins the
    /// switches' reduction (InfiniBand SHARP); see [`collnet`].
    CollnetChain,
}

impl Algorithm {
    /// Every algorithm, in the order of [`REGISTRY`].
    pub const ALL: [Algorithm; REGISTRY.len()] = registry::ALL;
    /// The algorithms NCCL itself runs (each file's [`AlgorithmEntry::nccl`]),
    /// among which `auto` chooses as NCCL's tuner does (ring, tree, NVLS and
    /// NVLS-tree, CollNet as in-network SHARP and the CollNet chain,
    /// point-to-point all-to-all). Halving-doubling and the hierarchical ring
    /// are MPI's and Horovod's: they run when named, and `auto` leaves them out
    /// so that a simulated table stands beside a measured nccl-tests one.
    pub const NCCL: [Algorithm; registry::NCCL.len()] = registry::NCCL;
    /// The name used in scenario files, the CLI and results.
    pub fn name(self) -> &'static str {
        entry(self).name
    }
    /// Parses a name.
    pub fn parse(s: &str) -> Option<Algorithm> {
        let s = s.replace('-', "_").to_ascii_lowercase();
        Algorithm::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// NCCL's protocols: how a step's data and its readiness flags travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Low latency: 8-byte stores of 4 data bytes and a 4-byte flag; half the
    /// wire carries payload, each step costs little software latency.
    Ll,
    /// 128-byte lines of 120 data bytes and an 8-byte flag.
    Ll128,
    /// Bulk copies with a flag per step: full bandwidth, the most latency.
    Simple,
}

impl Protocol {
    /// Every protocol, in the order `auto` tries them.
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    /// The name used in scenario files and results.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "ll",
            Protocol::Ll128 => "ll128",
            Protocol::Simple => "simple",
        }
    }

    /// Parses a name (case-insensitive).
    pub fn parse(s: &str) -> Option<Protocol> {
        let s = s.to_ascii_lowercase();
        Protocol::ALL.into_iter().find(|p| p.name() == s)
    }

    /// Bytes on the wire for `payload` bytes: LL doubles it, LL128 adds 8 bytes
    /// per 120, Simple adds nothing (NCCL `src/device/prims_ll*.h` line formats).
    pub fn wire_bytes(self, payload: u64) -> u64 {
        match self {
            Protocol::Ll => payload.saturating_mul(2),
            Protocol::Ll128 => payload.saturating_add(payload.div_ceil(120).saturating_mul(8)),
            Protocol::Simple => payload,
        }
    }

    /// Payload share of the wire: 1/2, 120/128, 1.
    pub fn efficiency(self) -> f64 {
        match self {
            Protocol::Ll => 0.5,
            Protocol::Ll128 => 120.0 / 128.0,
            Protocol::Simple => 1.0,
        }
    }

    /// Software latency of one ring step (inside a host over NVLink, between
    /// hosts over the network): NCCL's tuning model, `hwLat` of the ring
    /// (`src/graph/tuning.cc`, NCCL 2.19-2.23): LL 0.6 / 2.7 us, LL128 1.9 /
    /// 4.0 us, Simple 3.4 / 14 us. They include NCCL's view of the wire, which
    /// the links here add again (a few hundred ns inside a host, ~1-2 us
    /// across a fabric); `workload.nvlink_step_latency` and
    /// `workload.step_latency` override them.
    pub fn step_latency(self) -> (SimTime, SimTime) {
        let us = |x: f64| SimTime((x * 1e6) as u64);
        match self {
            Protocol::Ll => (us(0.6), us(2.7)),
            Protocol::Ll128 => (us(1.9), us(4.0)),
            Protocol::Simple => (us(3.4), us(14.0)),
        }
    }
}

/// A collective's protocol and the software latency it pays per step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProtoCost {
    /// The protocol (its wire overhead).
    pub protocol: Protocol,
    /// Software latency of a step between two GPUs of one host, picoseconds.
    pub intra: SimTime,
    /// Software latency of a step between hosts, picoseconds.
    pub inter: SimTime,
    /// Host latency of an in-network (SHARP) reduction, paid once when the
    /// result reaches a GPU ([`sharp::HOST_LATENCY`]), picoseconds.
    pub collnet: SimTime,
    /// Latency of each NVLS delivery to a GPU ([`nvls::DELIVERY_LATENCY`]),
    /// picoseconds.
    pub nvls: SimTime,
}

impl ProtoCost {
    /// Simple with no software latency at all: the bare α-β model.
    pub const NONE: ProtoCost = ProtoCost {
        protocol: Protocol::Simple,
        intra: SimTime::ZERO,
        inter: SimTime::ZERO,
        collnet: SimTime::ZERO,
        nvls: SimTime::ZERO,
    };

    /// `protocol` with its own per-step latencies ([`Protocol::step_latency`]).
    pub fn of(protocol: Protocol) -> ProtoCost {
        let (intra, inter) = protocol.step_latency();
        ProtoCost {
            protocol,
            intra,
            inter,
            collnet: sharp::HOST_LATENCY,
            nvls: nvls::DELIVERY_LATENCY,
        }
    }

    /// The software latency of a step from `a` to `b`.
    pub fn step(&self, topo: &Topology, a: GpuId, b: GpuId) -> SimTime {
        if topo.host_of(a) == topo.host_of(b) {
            self.intra
        } else {
            self.inter
        }
    }

    /// The payload rate of a link of rate `r` under this protocol.
    pub fn payload_rate(&self, r: Rate) -> Rate {
        if self.protocol == Protocol::Simple {
            r
        } else {
            r.scaled(self.protocol.efficiency())
        }
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
    /// Parallel channels (NCCL's), each carrying its share of the bytes on its
    /// own ring; ring algorithms lay them over every NIC
    /// ([`ring::channel_rings`]). 1 is the plain ring in communicator order.
    pub channels: u32,
    /// NCCL's PXN: a channel leaving a host moves its data over NVLink to the GPU
    /// of the channel's rail and sends it through that GPU's NIC.
    pub pxn: bool,
    /// The protocol and per-step software latency of ring and tree steps
    /// (including a hierarchical collective's rings); other algorithms ignore it.
    pub proto: ProtoCost,
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

/// The channels NCCL would run for `ranks`: one per NIC of a host when the
/// communicator is made of several whole hosts of several GPUs (so every NIC
/// carries a ring, [`ring::channel_rings`]); else one (more channels would
/// split the bytes over the same path).
pub fn default_channels(ranks: &[GpuId], topo: &Topology) -> u32 {
    match hierarchical::hosts_of(ranks, topo) {
        Ok(h) if h.len() >= 2 && h[0].len() >= 2 && topo.hosts > 0 => topo.nics_per_host(),
        _ => 1,
    }
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
    let mut em = Emitter::new(dag, topo);
    lower_with(spec, ranks, topo, &mut em, after)
}

/// Like [`lower`], and also records in `trace` what every transfer carries (which
/// bytes of the collective's buffer, and whether the receiver adds them into its
/// copy or overwrites it), so tests can check the schedule moves the right data.
///
/// # Errors
/// See [`CollectiveError`].
pub fn lower_traced(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    dag: &mut Dag,
    after: &[Dep],
    trace: &mut Vec<Carry>,
) -> Result<TaskId, CollectiveError> {
    let mut em = Emitter::new(dag, topo);
    em.trace = Some(trace);
    lower_with(spec, ranks, topo, &mut em, after)
}

/// Dispatch shared by [`lower`] (through each algorithm's `lower`) and [`lower_traced`].
pub(crate) fn lower_with(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<TaskId, CollectiveError> {
    if !supports(spec.algorithm, spec.op) {
        return Err(unsupported(spec.algorithm, spec.op));
    }
    check_ranks(ranks, Some(topo))?;
    check_root(spec, ranks)?;
    em.gpus_per_host = topo.gpus_per_host;
    em.qps = topo.qps_per_connection;
    em.proto = spec.proto;
    em.wire = uses_protocol(spec.algorithm);
    let ends = (entry(spec.algorithm).emit)(spec, ranks, topo, em, after)?;
    Ok(em.dag.marker(&ends))
}

/// Whether `algo` runs NCCL's protocols ([`CollectiveSpec::proto`]): ring, tree
/// and hierarchical (its rings); the others move bulk data without them.
pub fn uses_protocol(algo: Algorithm) -> bool {
    entry(algo).uses_protocol
}

/// What one transfer of a lowered collective carries; see [`lower_traced`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Carry {
    /// The transfer task.
    pub task: TaskId,
    /// First byte of the collective's buffer it carries (offset, bytes).
    pub offset: u64,
    /// Number of bytes (equals the transfer's size).
    pub bytes: u64,
    /// True: the receiver adds the bytes into its buffer (reduction); false: it
    /// overwrites its buffer with them (copy).
    pub reduce: bool,
    /// For a transfer relayed by another GPU (PXN): the GPU whose buffer the bytes
    /// come from; `None` when it is the transfer's source.
    pub origin: Option<GpuId>,
}

/// Adds transfers to a DAG and, when tracing, records what they carry.
pub(crate) struct Emitter<'a> {
    /// The DAG being built.
    pub dag: &'a mut Dag,
    /// Where [`Carry`] records go, if anyone asked.
    pub trace: Option<&'a mut Vec<Carry>>,
    /// Protocol of the transfers [`Emitter::send`] adds (wire bytes and
    /// per-step software latency), and the host size that tells steps inside a
    /// host from steps between hosts.
    pub proto: ProtoCost,
    /// GPUs per host of the topology.
    pub gpus_per_host: u32,
    /// Whether the protocol's line format applies to the wire bytes (ring,
    /// tree, hierarchical); the other algorithms move bulk data.
    pub wire: bool,
    /// Queue pairs per connection between hosts, and how many messages each
    /// connection has sent so far (they take the queue pairs in turn).
    pub qps: u8,
    /// Messages posted per (source, destination) connection between hosts.
    pub sent: std::collections::HashMap<(u32, u32), u32>,
}

impl<'a> Emitter<'a> {
    /// An emitter adding to `dag` for collectives on `topo`, tracing nothing;
    /// [`lower_with`] sets the protocol from the spec.
    pub fn new(dag: &'a mut Dag, topo: &Topology) -> Emitter<'a> {
        Emitter {
            dag,
            trace: None,
            proto: ProtoCost::NONE,
            gpus_per_host: topo.gpus_per_host,
            wire: false,
            qps: 1,
            sent: Default::default(),
        }
    }

    /// Adds a transfer of the buffer bytes `[offset, offset + bytes)` between the
    /// adjacent nodes `src` and `dst` ([`crate::dag::TaskKind::NetTransfer`]).
    pub fn net_send(
        &mut self,
        src: crate::topology::NodeId,
        dst: crate::topology::NodeId,
        offset: u64,
        bytes: u64,
        reduce: bool,
        deps: &[Dep],
    ) -> TaskId {
        let task = self.dag.net_transfer(src, dst, bytes, deps);
        self.traced(task, offset, bytes, reduce, None)
    }

    /// Adds a transfer of the buffer bytes `[offset, offset + bytes)` from `src` to `dst`.
    pub fn send(
        &mut self,
        src: GpuId,
        dst: GpuId,
        offset: u64,
        bytes: u64,
        reduce: bool,
        deps: &[Dep],
    ) -> TaskId {
        let task = self.step(src, dst, bytes, deps);
        self.traced(task, offset, bytes, reduce, None)
    }

    /// Adds one protocol step: `payload` bytes from `src` to `dst`, on the wire
    /// as the protocol sends them, done after the step's software latency.
    fn step(&mut self, src: GpuId, dst: GpuId, payload: u64, deps: &[Dep]) -> TaskId {
        let wire = self.wire_bytes(payload);
        let g = self.gpus_per_host.max(1);
        let software = if src.0 / g == dst.0 / g {
            self.proto.intra
        } else {
            self.proto.inter
        };
        let t = self
            .dag
            .transfer_after_software(src, dst, wire, software, deps);
        self.take_qp(t, src, dst);
        t
    }

    /// Puts transfer `t` between hosts on its connection's next queue pair
    /// (NCCL posts successive messages on the connection's QPs in turn).
    fn take_qp(&mut self, t: TaskId, src: GpuId, dst: GpuId) {
        let g = self.gpus_per_host.max(1);
        if self.qps > 1 && src.0 / g != dst.0 / g {
            let n = self.sent.entry((src.0, dst.0)).or_insert(0);
            self.dag.set_qp(t, (*n % u32::from(self.qps)) as u8);
            *n += 1;
        }
    }

    /// Adds a relay hop (PXN's NVLink copy into the relay GPU): the protocol's
    /// wire bytes, no step latency of its own (it is part of the step).
    pub fn relay_hop(&mut self, src: GpuId, relay: GpuId, payload: u64, deps: &[Dep]) -> TaskId {
        let wire = self.wire_bytes(payload);
        self.dag.transfer(src, relay, wire, deps)
    }

    /// Wire bytes of `payload` under the protocol, when it applies.
    fn wire_bytes(&self, payload: u64) -> u64 {
        if self.wire {
            self.proto.protocol.wire_bytes(payload)
        } else {
            payload
        }
    }

    /// Adds one transfer from `src` to `dst` carrying the buffer ranges `ranges`
    /// (`(offset, bytes)` each, traced one [`Carry`] per range). `origin`: for
    /// the network leg of a relayed (PXN) transfer, the GPU whose data it is,
    /// which an NVLink hop has already staged in `src`.
    pub fn send_ranges(
        &mut self,
        src: GpuId,
        dst: GpuId,
        origin: Option<GpuId>,
        ranges: &[(u64, u64)],
        reduce: bool,
        deps: &[Dep],
    ) -> TaskId {
        let bytes = ranges.iter().map(|r| r.1).sum();
        let task = self.step(src, dst, bytes, deps);
        for &(offset, b) in ranges {
            self.traced(task, offset, b, reduce, origin);
        }
        task
    }

    /// Records what `task` carries when data is being traced; returns it.
    fn traced(
        &mut self,
        task: TaskId,
        offset: u64,
        bytes: u64,
        reduce: bool,
        origin: Option<GpuId>,
    ) -> TaskId {
        if let Some(t) = self.trace.as_deref_mut() {
            t.push(Carry {
                task,
                offset,
                bytes,
                reduce,
                origin,
            });
        }
        task
    }
}

/// Checks a communicator: non-empty, no GPU twice, and (given a topology) every GPU exists.
///
/// # Errors
/// [`CollectiveError::BadCommunicator`] naming the problem.
pub fn check_ranks(ranks: &[GpuId], topo: Option<&Topology>) -> Result<(), CollectiveError> {
    if ranks.is_empty() {
        return Err(CollectiveError::BadCommunicator(
            "the communicator is empty; it needs at least one GPU".into(),
        ));
    }
    let mut seen = HashSet::with_capacity(ranks.len());
    for &g in ranks {
        if !seen.insert(g) {
            return Err(CollectiveError::BadCommunicator(format!(
                "GPU {} appears twice in the communicator",
                g.0
            )));
        }
        if let Some(t) = topo {
            if g.0 >= t.num_gpus() {
                return Err(CollectiveError::BadCommunicator(format!(
                    "GPU {} is not in the topology, which has {} GPUs",
                    g.0,
                    t.num_gpus()
                )));
            }
        }
    }
    Ok(())
}

/// Checks that a broadcast's root indexes the communicator.
fn check_root(spec: &CollectiveSpec, ranks: &[GpuId]) -> Result<(), CollectiveError> {
    if spec.op == CollectiveOp::Broadcast && spec.root as usize >= ranks.len() {
        return Err(CollectiveError::BadCommunicator(format!(
            "broadcast root {} is outside the communicator of {} ranks",
            spec.root,
            ranks.len()
        )));
    }
    Ok(())
}

/// Common checks of `time`/`traffic`: supported pair, sane communicator.
pub(crate) fn precheck(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: Option<&Topology>,
) -> Result<(), CollectiveError> {
    if !supports(spec.algorithm, spec.op) {
        return Err(unsupported(spec.algorithm, spec.op));
    }
    check_ranks(ranks, topo)?;
    check_root(spec, ranks)
}

/// Splits `total` bytes into `n` contiguous pieces as equal as possible (the first
/// `total % n` get one byte more); returns `(offset, bytes)` of piece `i`.
pub fn piece(total: u64, n: u64, i: u64) -> (u64, u64) {
    let base = total / n;
    let extra = total % n;
    (i * base + i.min(extra), base + u64::from(i < extra))
}

/// The pieces of [`chunk_sizes`] with their offsets from `offset`.
pub fn chunks_at(offset: u64, bytes: u64, chunk: u64) -> Vec<(u64, u64)> {
    let mut at = offset;
    chunk_sizes(bytes, chunk)
        .map(|b| {
            let r = (at, b);
            at += b;
            r
        })
        .collect()
}

/// Serialization times of the chunks one message of `bytes` is cut into
/// (`chunk_sizes(bytes, chunk)`), summarized in O(1): count, sum and largest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkTimes {
    /// Number of chunks C.
    pub count: u64,
    /// Σ β_c over the chunks, picoseconds.
    pub sum: SimTime,
    /// max β_c, picoseconds.
    pub max: SimTime,
}

impl ChunkTimes {
    /// The chunk times of a `bytes` message cut at `chunk` bytes and sent at `rate`.
    pub fn new(bytes: u64, chunk: u64, rate: Rate) -> ChunkTimes {
        let chunk = chunk.max(1);
        let n = bytes.div_ceil(chunk).max(1);
        let base = bytes / n;
        let extra = bytes % n;
        let big = rate.tx_time(base + 1);
        let small = rate.tx_time(base);
        ChunkTimes {
            count: n,
            sum: times(extra, big).saturating_add(times(n - extra, small)),
            max: if extra > 0 { big } else { small },
        }
    }
}

/// Worst [`PathCost`] (max α, min rate) over the directed pairs `(a, b)`.
///
/// # Errors
/// [`CollectiveError::Unreachable`] if a pair has no route.
pub fn worst_cost(
    topo: &Topology,
    pairs: impl IntoIterator<Item = (GpuId, GpuId)>,
) -> Result<PathCost, CollectiveError> {
    let mut w: Option<PathCost> = None;
    for (a, b) in pairs {
        let c = path_cost(topo, a, b)?;
        w = Some(w.map_or(c, |w| w.worst(c)));
    }
    Ok(w.unwrap_or(PathCost {
        alpha: SimTime::ZERO,
        rate: Rate(u64::MAX),
    }))
}

/// Most (source, destination) pairs [`busiest_link_time`] spreads; past it the
/// bound is left out (an all-to-all of more than 2,048 ranks), and the closed
/// form alone stands.
pub const LOAD_BOUND_PAIRS: usize = 1 << 22;

/// A contention lower bound: the time the busiest link needs to carry its
/// bytes when each of `flows` (source, destination, bytes) spreads evenly over
/// its equal-cost paths ([`Topology::spread`]), plus the smallest path latency
/// among them. No schedule and no ECMP hash beats it; shared NICs, oversubscribed
/// uplinks and thin bisections all show in it. Zero when there are more than
/// [`LOAD_BOUND_PAIRS`] flows.
///
/// # Errors
/// [`CollectiveError::Unreachable`] if a pair has no route.
pub fn busiest_link_time(
    topo: &Topology,
    flows: impl ExactSizeIterator<Item = (GpuId, GpuId, u64)>,
) -> Result<SimTime, CollectiveError> {
    if flows.len() > LOAD_BOUND_PAIRS {
        return Ok(SimTime::ZERO);
    }
    let mut load = vec![0f64; topo.links.len()];
    let mut shares = Vec::new();
    let mut shortest = SimTime::MAX;
    for (a, b, bytes) in flows {
        if a == b || bytes == 0 {
            continue;
        }
        shares.clear();
        if !topo.spread(a, b, &mut shares) {
            return Err(CollectiveError::Unreachable(a.0, b.0));
        }
        for &(l, f) in &shares {
            load[l.0 as usize] += f * bytes as f64;
        }
        shortest = shortest.min(path_cost(topo, a, b)?.alpha);
    }
    if shortest == SimTime::MAX {
        return Ok(SimTime::ZERO);
    }
    Ok(busiest_of(&load, topo).saturating_add(shortest))
}

/// The time the busiest link needs for its `load` (bytes per link id) at its
/// payload rate.
pub(crate) fn busiest_of(load: &[f64], topo: &Topology) -> SimTime {
    load.iter()
        .enumerate()
        .filter(|(_, &b)| b > 0.0)
        .map(|(l, &b)| {
            let bps = topo.effective_rate(crate::topology::LinkId(l as u32)).bps() as f64;
            SimTime((b * 8e12 / bps).ceil().min(u64::MAX as f64) as u64)
        })
        .max()
        .unwrap_or(SimTime::ZERO)
}

/// `n · t`, saturating at [`SimTime::MAX`] (closed forms never panic on huge inputs).
pub fn times(n: u64, t: SimTime) -> SimTime {
    SimTime(n.saturating_mul(t.0))
}

/// Critical path of a chained pipeline (see [`ring`]): `k` consecutive steps on one
/// channel per rank, each step a message cut into chunks with times `ct`, where
/// chunk c of step k may leave once chunk c of step k−1 has arrived and the rank's
/// previous chunk has left. Exact on a uniform ring:
/// `max(k·Σβ + α, Σβ + (k−1)·max β + k·α)`.
pub fn chained_pipeline_time(k: u64, ct: ChunkTimes, alpha: SimTime) -> SimTime {
    if k == 0 {
        return SimTime::ZERO;
    }
    let serial = times(k, ct.sum).saturating_add(alpha);
    let latency = ct
        .sum
        .saturating_add(times(k - 1, ct.max))
        .saturating_add(times(k, alpha));
    serial.max(latency)
}

/// Critical path of a store-and-forward chain of `hops` hops where each hop has its
/// own channel (broadcast chain): `hops·α + Σβ + (hops−1)·max β`.
pub fn chain_time(hops: u64, ct: ChunkTimes, alpha: SimTime) -> SimTime {
    if hops == 0 {
        return SimTime::ZERO;
    }
    times(hops, alpha)
        .saturating_add(ct.sum)
        .saturating_add(times(hops - 1, ct.max))
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
    (entry(spec.algorithm).time)(spec, ranks, topo)
}

/// Payload bytes the algorithm moves across all links' sources in total (sum of
/// its transfers), for the analytical fabric counters. `topo` matters only to
/// [`Algorithm::Sharp`], whose tree depends on it.
///
/// # Errors
/// See [`CollectiveError`].
pub fn traffic_bytes(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    (entry(spec.algorithm).traffic)(spec, ranks, topo)
}

/// Whether `algo` implements `op`.
pub fn supports(algo: Algorithm, op: CollectiveOp) -> bool {
    entry(algo).ops.contains(&op)
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

/// The per-step cost of `protocol` with the scenario's overrides of its
/// software latencies (NVLink step, network step).
pub fn proto_cost(
    protocol: Protocol,
    nvlink: Option<SimTime>,
    network: Option<SimTime>,
) -> ProtoCost {
    let mut pc = ProtoCost::of(protocol);
    if let Some(t) = nvlink {
        pc.intra = t;
    }
    if let Some(t) = network {
        pc.inter = t;
    }
    pc
}

/// NCCL's tuner: the (algorithm, protocol) with the lowest closed-form time
/// for `spec` — over NCCL's algorithms ([`Algorithm::NCCL`]) when `auto_algorithm`, over every protocol
/// when `protocol` is `None` (algorithms without protocols run Simple).
/// `nvlink` and `network` override the protocols' step latencies.
///
/// # Errors
/// Fails only if no algorithm can run the operation on this communicator.
pub fn tune(
    spec: &CollectiveSpec,
    auto_algorithm: bool,
    protocol: Option<Protocol>,
    nvlink: Option<SimTime>,
    network: Option<SimTime>,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<(Algorithm, ProtoCost), CollectiveError> {
    let protocols: Vec<Protocol> = match protocol {
        Some(p) => vec![p],
        None => Protocol::ALL.to_vec(),
    };
    let mut best: Option<(SimTime, Algorithm, ProtoCost)> = None;
    let mut last_err = None;
    let algos: Vec<Algorithm> = if auto_algorithm {
        Algorithm::NCCL.to_vec()
    } else {
        vec![spec.algorithm]
    };
    for algo in algos {
        if !supports(algo, spec.op) || (auto_algorithm && !(entry(algo).available)(ranks, topo)) {
            continue;
        }
        let candidates: Vec<Protocol> = if uses_protocol(algo) {
            protocols.clone()
        } else {
            vec![Protocol::Simple]
        };
        for p in candidates {
            let pc = proto_cost(p, nvlink, network);
            let s = CollectiveSpec {
                algorithm: algo,
                proto: pc,
                ..spec.clone()
            };
            match analytical_time(&s, ranks, topo) {
                Ok(t) if !matches!(best, Some((bt, _, _)) if bt <= t) => best = Some((t, algo, pc)),
                Ok(_) => {}
                Err(e) => last_err = Some(e),
            }
        }
    }
    best.map(|(_, a, p)| (a, p))
        .ok_or_else(|| last_err.unwrap_or_else(|| unsupported(spec.algorithm, spec.op)))
}

/// Picks the algorithm with the lowest closed-form time for `spec.op` at
/// `spec.bytes` among NCCL's own algorithms ([`Algorithm::NCCL`], what `--algo auto`
/// does). Ties go to the earlier in that list.
/// [`Algorithm::Sharp`] is a candidate only when the switches reduce
/// ([`Topology::sharp`]); otherwise it would only repeat the ring.
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
    for algo in Algorithm::NCCL {
        if !supports(algo, spec.op) || !(entry(algo).available)(ranks, topo) {
            continue;
        }
        let s = CollectiveSpec {
            algorithm: algo,
            ..spec.clone()
        };
        match analytical_time(&s, ranks, topo) {
            Ok(t) if !matches!(best, Some((bt, _)) if bt <= t) => best = Some((t, algo)),
            Ok(_) => {}
            Err(e) => last_err = Some(e),
        }
    }
    best.map(|(_, a)| a)
        .ok_or_else(|| last_err.unwrap_or_else(|| unsupported(spec.algorithm, spec.op)))
}

thread_local! {
    /// Threads this thread's closed forms may use ([`with_threads`]; 1 outside).
    static THREADS: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
}

/// Runs `f` with its closed forms (the candidates [`tune`] and the
/// lowering weigh, [`hierarchical::pipeline_blocks`]) spread over `threads`
/// threads, this one included; the results are the same at every count.
pub fn with_threads<T>(threads: usize, f: impl FnOnce() -> T) -> T {
    let before = THREADS.with(|c| c.replace(threads.max(1)));
    let r = f();
    THREADS.with(|c| c.set(before));
    r
}

/// `f` of each item, in item order, on the threads [`with_threads`] gave
/// (each takes the next item not yet taken; this thread is one of them).
pub(crate) fn map_on_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let n = THREADS.with(|c| c.get()).min(items.len());
    if n <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    let work = || loop {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        let r = f(item);
        if let Ok(mut d) = done.lock() {
            d.push((i, r));
        }
    };
    // a helper that panics makes the scope panic when it joins
    std::thread::scope(|s| {
        for _ in 1..n {
            s.spawn(work);
        }
        work();
    });
    let mut done = done.into_inner().unwrap_or_default();
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// `a` and `b`, side by side when [`with_threads`] gave more than one thread.
pub(crate) fn join_on_threads<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if THREADS.with(|c| c.get()) <= 1 {
        return (a(), b());
    }
    std::thread::scope(|s| {
        let hb = s.spawn(b);
        let ra = a();
        match hb.join() {
            Ok(rb) => (ra, rb),
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

/// A single-switch test cluster: `hosts` × `gpus` GPUs (see
/// [`crate::topology::test_cluster`] for the links).
#[cfg(test)]
pub(crate) fn test_topo(hosts: u32, gpus: u32) -> Topology {
    crate::topology::test_cluster(hosts, gpus, &crate::topology::TopologySpec::SingleSwitch)
}

/// A hierarchical all-reduce on [`test_topo`]`(16, 8)`'s 128 GPUs: a tree
/// between hosts, 64 MiB in 1 MiB chunks, one channel, no protocol cost
/// (the intra-host rings are repeated blocks of the template DAG).
#[cfg(test)]
pub(crate) fn test_hierarchical_allreduce() -> (CollectiveSpec, Vec<GpuId>) {
    let spec = CollectiveSpec {
        op: CollectiveOp::AllReduce,
        algorithm: Algorithm::Hierarchical,
        bytes: 1 << 26,
        chunk_bytes: 1 << 20,
        inter_host: Algorithm::Tree,
        root: 0,
        channels: 1,
        pxn: false,
        proto: ProtoCost::NONE,
    };
    (spec, (0..128).map(GpuId).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed forms' threads change nothing: items come back in their
    /// order at 1, 2 and 4 threads (each worker takes the next item), and a
    /// hierarchical all-reduce (16 hosts × 8 GPUs, a tree between hosts,
    /// 64 MiB in 1 MiB chunks: 1, 2, 4 and 8 blocks weighed, a block at
    /// least 8 MiB) picks the same number of pipeline blocks and the same
    /// time; the count is restored when `with_threads` returns.
    #[test]
    fn closed_forms_are_the_same_on_one_two_and_four_threads() {
        let items: Vec<u64> = (0..37).collect();
        let topo = test_topo(16, 8);
        let (spec, ranks) = test_hierarchical_allreduce();
        let at = |threads: usize| {
            with_threads(threads, || {
                (
                    map_on_threads(&items, |&i| i * i),
                    hierarchical::pipeline_blocks(&spec, &ranks, &topo).unwrap(),
                    hierarchical::time(&spec, &ranks, &topo).unwrap(),
                )
            })
        };
        let one = at(1);
        assert_eq!(one.0, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(one, at(2));
        assert_eq!(one, at(4));
        assert_eq!(THREADS.with(|c| c.get()), 1);
    }

    #[test]
    fn pieces_and_chunks_cover_the_buffer() {
        assert_eq!(piece(10, 4, 0), (0, 3));
        assert_eq!(piece(10, 4, 1), (3, 3));
        assert_eq!(piece(10, 4, 3), (8, 2));
        assert_eq!(chunks_at(100, 10, 4), vec![(100, 4), (104, 3), (107, 3)]);
        assert_eq!(chunks_at(0, 0, 4), vec![(0, 0)]);
    }

    #[test]
    fn chunk_times_sum_and_max() {
        // 10 bytes in chunks of ≤ 4 → 4, 3, 3 bytes at 400 Gb/s (20 ps per byte).
        let ct = ChunkTimes::new(10, 4, Rate::gbps(400));
        assert_eq!(ct.count, 3);
        assert_eq!(ct.sum, SimTime(200));
        assert_eq!(ct.max, SimTime(80));
    }

    #[test]
    fn pipeline_forms_reduce_to_textbook_without_chunking() {
        let ct = ChunkTimes::new(1000, u64::MAX, Rate::gbps(400));
        let a = SimTime(7);
        // K steps of one chunk: K·(α + β).
        assert_eq!(chained_pipeline_time(6, ct, a), SimTime(6 * (20_000 + 7)));
        // Chain of h hops, C chunks of β: h·α + (C + h − 1)·β.
        let ct = ChunkTimes::new(1000, 100, Rate::gbps(400));
        assert_eq!(chain_time(3, ct, a), SimTime(3 * 7 + 12 * 2000));
        assert_eq!(chained_pipeline_time(0, ct, a), SimTime::ZERO);
    }
}
