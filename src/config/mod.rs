//! Scenario files: the raw TOML schema, presets, and validation into a checked
//! [`Scenario`] that cannot hold an impossible configuration.
//!
//! Raw input and the checked model are kept apart (smoltcp's Packet/Repr split):
//! the `Raw*` structs accept what the file says; [`parse`] turns them into a
//! [`Scenario`] and reports *every* problem with its file, line, column, field,
//! what was found and what is expected.
//!
//! ```toml
//! name = "64 DGX H100 on NDR"
//! [cluster]
//! preset = "dgx-h100-node"   # GPUs, NVLink, NICs, PCIe; override any field
//! nodes = 64
//! [topology]
//! kind = "rail_optimized"    # single_switch | leaf_spine | fat_tree | rail_optimized | dragonfly
//! radix = 64
//! [fabric]
//! preset = "ib-ndr-400"      # kind, link_rate, mtu, header_bytes, latencies
//! [workload]
//! kind = "collective"
//! op = "allreduce"
//! algorithm = "hierarchical"
//! sizes = ["1MiB", "1GiB"]
//! [simulation]
//! fidelity = "flow"
//! seed = 1
//! ```

pub mod diagnostic;
pub mod presets;
pub mod usage;
pub mod workload;

use serde::Deserialize;

pub use diagnostic::{ConfigError, Diagnostic, Source};
pub use workload::{FaultSpec, InferenceSpec, TrainingSpec};

use crate::collective::{Algorithm, CollectiveOp};
use crate::topology::{ClusterSpec, FabricLinkSpec, TopologySpec};
use crate::units::{parse_rate, parse_size, parse_time, Rate, SimTime};

// ---------------------------------------------------------------- raw schema

/// A number as written in TOML: integer or float.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum RawNumber {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

impl RawNumber {
    fn as_f64(self) -> f64 {
        match self {
            RawNumber::Int(i) => i as f64,
            RawNumber::Float(f) => f,
        }
    }
}

/// A quantity with a unit, written as a string (`"4KiB"`) or, for sizes, a plain integer of bytes.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum RawQuantity {
    /// A plain integer.
    Int(i64),
    /// A string with a unit.
    Str(String),
}

impl RawQuantity {
    fn shown(&self) -> String {
        match self {
            RawQuantity::Int(i) => i.to_string(),
            RawQuantity::Str(s) => format!("{s:?}"),
        }
    }
}

/// `[cluster]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    /// A host preset name (see `fabricsim presets`).
    pub preset: Option<String>,
    /// Number of hosts.
    pub nodes: Option<i64>,
    /// GPUs per host.
    pub gpus_per_node: Option<i64>,
    /// NICs per host.
    pub nics_per_node: Option<i64>,
    /// NVLink bandwidth per GPU per direction, e.g. "450GB/s".
    pub nvlink_bandwidth: Option<RawQuantity>,
    /// Latency of one NVLink hop, e.g. "250ns".
    pub nvlink_latency: Option<RawQuantity>,
    /// PCIe bandwidth GPU↔NIC per direction, e.g. "64GB/s".
    pub pcie_bandwidth: Option<RawQuantity>,
    /// PCIe one-way latency.
    pub pcie_latency: Option<RawQuantity>,
    /// true: the NIC reads GPU memory directly (GPUDirect RDMA); false: host-staged.
    pub gpu_direct: Option<bool>,
    /// Host-staged path: bandwidth of the GPU→host-memory copy, e.g. "25GB/s".
    pub host_copy_bandwidth: Option<RawQuantity>,
    /// Host-staged path: added latency of the copy per message, e.g. "5us".
    pub host_copy_latency: Option<RawQuantity>,
    /// Fraction of the NVLink rate NCCL's kernels reach, in (0, 1].
    pub nvlink_efficiency: Option<RawNumber>,
    /// The NVSwitches reduce and multicast (NVLink SHARP).
    pub nvls: Option<bool>,
}

/// `[topology]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTopology {
    /// Shape name.
    pub kind: Option<String>,
    /// Ports per switch (leaf_spine, rail_optimized).
    pub radix: Option<i64>,
    /// Ports per spine switch (rail_optimized).
    pub spine_radix: Option<i64>,
    /// Leaf down:up ratio (leaf_spine).
    pub oversubscription: Option<RawNumber>,
    /// Fat-tree arity.
    pub k: Option<i64>,
    /// Dragonfly groups.
    pub groups: Option<i64>,
    /// Dragonfly routers per group.
    pub routers_per_group: Option<i64>,
    /// Dragonfly NIC ports per router.
    pub hosts_per_router: Option<i64>,
    /// Dragonfly global links per router.
    pub global_links_per_router: Option<i64>,
}

/// `[fabric]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFabric {
    /// A fabric preset name.
    pub preset: Option<String>,
    /// `infiniband`, `roce` or `ethernet`.
    pub kind: Option<String>,
    /// Rate of every network port (NICs and switches).
    pub link_rate: Option<RawQuantity>,
    /// Largest payload per packet.
    pub mtu: Option<RawQuantity>,
    /// Header and framing bytes per packet on the wire.
    pub header_bytes: Option<i64>,
    /// Propagation latency per network link.
    pub link_latency: Option<RawQuantity>,
    /// Forwarding latency per switch.
    pub switch_latency: Option<RawQuantity>,
    /// Share of the payload rate a NIC moves (GPUDirect RDMA goodput), in (0, 1].
    pub nic_efficiency: Option<RawNumber>,
    /// Queue pairs per connection between hosts (NCCL_IB_QPS_PER_CONNECTION).
    pub qps_per_connection: Option<i64>,
    /// `ecmp`, `adaptive` or `spray`.
    pub routing: Option<String>,
    /// Packet level: buffer per port and virtual lane (credits advertise it; drop-tail limit).
    pub buffer: Option<RawQuantity>,
    /// Packet level, lossy fabrics: shared buffer per switch (0 = per-port buffers).
    pub shared_buffer: Option<RawQuantity>,
    /// Packet level: dynamic-threshold α of the shared buffer.
    pub shared_buffer_alpha: Option<RawNumber>,
    /// Packet level: virtual lanes (priorities) per port.
    pub virtual_lanes: Option<i64>,
    /// Packet level: raise a packet's virtual lane at each switch hop (deadlock freedom on dragonflies).
    pub vl_escalation: Option<bool>,
    /// Packet level: cut-through forwarding instead of store-and-forward.
    pub cut_through: Option<bool>,
    /// Packet level: `rdma` or `tcp` (default: tcp on ethernet, rdma otherwise).
    pub transport: Option<String>,
    /// Packet level, TCP: CPU time per packet.
    pub tcp_packet_overhead: Option<RawQuantity>,
    /// Packet level, TCP: upper bound of the uniform per-packet jitter.
    pub tcp_jitter: Option<RawQuantity>,
    /// Packet level: unacknowledged bytes per queue pair.
    pub window: Option<RawQuantity>,
    /// Packet level: ACK every this many packets.
    pub ack_every: Option<i64>,
    /// Packet level: retransmission timeout.
    pub rto: Option<RawQuantity>,
    /// Packet level, `routing = "flowlet"`: idle time that ends a flowlet.
    pub flowlet_gap: Option<RawQuantity>,
    /// Packet level: Priority Flow Control (lossless Ethernet). Default: on for `roce`.
    pub pfc: Option<bool>,
    /// The switches reduce in the network (InfiniBand SHARP). Default: false.
    pub sharp: Option<bool>,
    /// Aggregation trees one switch serves at once (SHARP groups). Default: no limit.
    pub sharp_groups: Option<i64>,
    /// Packet level, PFC: pause threshold per ingress port and priority.
    pub pfc_xoff: Option<RawQuantity>,
    /// Packet level, PFC: resume threshold.
    pub pfc_xon: Option<RawQuantity>,
    /// Packet level, PFC: headroom above XOFF.
    pub pfc_headroom: Option<RawQuantity>,
    /// Packet level, PFC: pause quanta per PAUSE frame (0 = until RESUME).
    pub pfc_pause_quanta: Option<i64>,
    /// Packet level: ECN marking at switch egress queues. Default: on for `roce`.
    pub ecn: Option<bool>,
    /// Packet level, ECN: queue depth below which nothing is marked.
    pub ecn_kmin: Option<RawQuantity>,
    /// Packet level, ECN: queue depth from which everything is marked.
    pub ecn_kmax: Option<RawQuantity>,
    /// Packet level, ECN: marking probability just below Kmax.
    pub ecn_pmax: Option<RawNumber>,
    /// Packet level: congestion control, `dcqcn`, `dctcp` or `none`.
    pub cc: Option<String>,
    /// Packet level, DCTCP: α gain g.
    pub dctcp_g: Option<RawNumber>,
    /// Packet level, DCQCN parameters.
    pub dcqcn: Option<RawDcqcn>,
}

/// `[fabric.dcqcn]` as written (Zhu et al. 2015 names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDcqcn {
    /// α gain g.
    pub g: Option<RawNumber>,
    /// α decay period K.
    pub alpha_interval: Option<RawQuantity>,
    /// Rate-increase timer T.
    pub rate_increase_interval: Option<RawQuantity>,
    /// Byte counter B.
    pub byte_counter: Option<RawQuantity>,
    /// Fast-recovery stages F.
    pub fast_recovery_steps: Option<i64>,
    /// Additive increase R_AI.
    pub rate_ai: Option<RawQuantity>,
    /// Hyper increase R_HAI.
    pub rate_hai: Option<RawQuantity>,
    /// Rate floor.
    pub min_rate: Option<RawQuantity>,
    /// At most one CNP per queue pair per this interval (N).
    pub cnp_interval: Option<RawQuantity>,
    /// α of a new queue pair.
    pub initial_alpha: Option<RawNumber>,
}

/// `[workload]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// `collective`.
    pub kind: Option<String>,
    /// Collective operation.
    pub op: Option<String>,
    /// Algorithm or `auto`.
    pub algorithm: Option<String>,
    /// Inter-host algorithm of `hierarchical`.
    pub inter_host: Option<String>,
    /// Explicit list of sizes.
    pub sizes: Option<Vec<RawQuantity>>,
    /// Smallest size of a sweep (nccl-tests `-b`).
    pub min_bytes: Option<RawQuantity>,
    /// Largest size of a sweep (nccl-tests `-e`).
    pub max_bytes: Option<RawQuantity>,
    /// Multiplication factor between sizes (nccl-tests `-f`).
    pub step_factor: Option<i64>,
    /// Pipelining chunk size.
    pub chunk: Option<RawQuantity>,
    /// Element type for the `count` column: float32, float16, bfloat16, int8 ….
    pub dtype: Option<String>,
    /// Root rank of a broadcast.
    pub root: Option<i64>,
    /// Parallel channels of a collective (NCCL's); default one per NIC across hosts.
    pub channels: Option<i64>,
    /// NCCL's PXN: leave a host through the channel's rail over NVLink (default true).
    pub pxn: Option<bool>,
    /// NCCL protocol: `auto`, `simple`, `ll128` or `ll`.
    pub protocol: Option<String>,
    /// Software latency of a ring or tree step between hosts (default: the protocol's).
    pub step_latency: Option<RawQuantity>,
    /// Software latency of a ring or tree step over NVLink (default: the protocol's).
    pub nvlink_step_latency: Option<RawQuantity>,
    /// Traffic: `incast`, `permutation`, `alltoall` or `random`.
    pub pattern: Option<String>,
    /// Traffic: bytes per flow (incast, permutation, all-to-all).
    pub bytes: Option<RawQuantity>,
    /// Traffic, incast: number of senders.
    pub senders: Option<i64>,
    /// Traffic, incast: receiving GPU.
    pub receiver: Option<i64>,
    /// Traffic, permutation: permute hosts (rail-aligned) rather than GPUs.
    pub per_host: Option<bool>,
    /// Traffic, random: flow-size CDF, `web_search`, `fb_hadoop` or a file path.
    pub cdf: Option<String>,
    /// Traffic, random: offered load per source, fraction of the link rate.
    pub load: Option<RawNumber>,
    /// Traffic, random: arrivals stop after this long.
    pub duration: Option<RawQuantity>,
    /// Training / inference: a model preset (see [`workload::MODEL_PRESETS`]).
    pub preset: Option<String>,
    /// Training / inference: `[workload.model]`.
    pub model: Option<workload::RawModel>,
    /// Training / inference: `[workload.parallel]`.
    pub parallel: Option<workload::RawParallel>,
    /// Training / inference: `[workload.gpu]`.
    pub gpu: Option<workload::RawGpu>,
    /// Inference: `[workload.inference]`.
    pub inference: Option<workload::RawInference>,
    /// Traffic: flows added to the pattern (e.g. a victim beside an incast).
    pub extra_flows: Option<Vec<RawFlow>>,
}

/// One entry of `workload.extra_flows`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    /// Source GPU.
    pub src: i64,
    /// Destination GPU.
    pub dst: i64,
    /// Payload bytes.
    pub bytes: RawQuantity,
    /// Start time (default 0).
    pub start: Option<RawQuantity>,
}

/// `[simulation]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSimulation {
    /// `analytical`, `flow` or `packet`.
    pub fidelity: Option<String>,
    /// Seed of the one random generator.
    pub seed: Option<i64>,
    /// Packet level: time-series sampling interval (0 = off).
    pub sample_interval: Option<RawQuantity>,
    /// Packet level: stop when simulated time passes this.
    pub time_limit: Option<RawQuantity>,
    /// Packet level: report a deadlock when nothing moved for this long.
    pub deadlock_timeout: Option<RawQuantity>,
    /// Most memory a run may need (default: half of this machine's memory).
    pub max_memory: Option<RawQuantity>,
    /// Packet level: most packet events a run may simulate.
    pub max_events: Option<RawNumber>,
}

/// A whole scenario file as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Short name shown in results.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// Hosts.
    #[serde(default)]
    pub cluster: RawCluster,
    /// Network shape.
    #[serde(default)]
    pub topology: RawTopology,
    /// Network technology.
    #[serde(default)]
    pub fabric: RawFabric,
    /// What runs.
    #[serde(default)]
    pub workload: RawWorkload,
    /// How it is simulated.
    #[serde(default)]
    pub simulation: RawSimulation,
    /// Stragglers and failures (`[[faults]]`).
    #[serde(default)]
    pub faults: Vec<workload::RawFault>,
}

// ---------------------------------------------------------------- checked model

/// How much detail a run simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fidelity {
    /// α-β cost per transfer, no contention.
    Analytical,
    /// Max-min fair flows.
    Flow,
    /// Packets, queues, flow control.
    Packet,
}

impl Fidelity {
    /// Name in files, CLI and results.
    pub fn name(self) -> &'static str {
        match self {
            Fidelity::Analytical => "analytical",
            Fidelity::Flow => "flow",
            Fidelity::Packet => "packet",
        }
    }
    /// Parses a name.
    pub fn parse(s: &str) -> Option<Fidelity> {
        match s {
            "analytical" => Some(Fidelity::Analytical),
            "flow" => Some(Fidelity::Flow),
            "packet" => Some(Fidelity::Packet),
            _ => None,
        }
    }
}

/// The network technology, which decides flow control and loss at packet level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FabricKind {
    /// Credit-based link-level flow control, lossless.
    InfiniBand,
    /// RDMA over Converged Ethernet v2 (PFC, ECN, DCQCN).
    Roce,
    /// Lossy Ethernet with TCP.
    Ethernet,
}

impl FabricKind {
    /// Name in files and results.
    pub fn name(self) -> &'static str {
        match self {
            FabricKind::InfiniBand => "infiniband",
            FabricKind::Roce => "roce",
            FabricKind::Ethernet => "ethernet",
        }
    }
}

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Per-flow hash.
    Ecmp,
    /// Least-occupied queue, per packet.
    Adaptive,
    /// Random per packet.
    Spray,
    /// Least-occupied queue, per flowlet (a burst after an idle gap).
    Flowlet,
}

impl Routing {
    /// Name in files and results.
    pub fn name(self) -> &'static str {
        match self {
            Routing::Ecmp => "ecmp",
            Routing::Adaptive => "adaptive",
            Routing::Spray => "spray",
            Routing::Flowlet => "flowlet",
        }
    }
}

/// The checked `[fabric]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricSpec {
    /// Technology.
    pub kind: FabricKind,
    /// Link rate and latencies, as the topology builders need them.
    pub links: FabricLinkSpec,
    /// Largest payload per packet, bytes.
    pub mtu: u64,
    /// Header bytes per packet on the wire.
    pub header_bytes: u64,
    /// Next-hop choice.
    pub routing: Routing,
    /// `fabric.sharp`: the switches can aggregate (InfiniBand SHARP). Used by the
    /// analytical and flow fidelities on InfiniBand only ([`FabricSpec::sharp_active`]).
    pub sharp: bool,
    /// `fabric.sharp_groups`: aggregation trees one switch serves at once
    /// (u32::MAX when unset: no limit); see [`crate::collective::sharp::grant_trees`].
    pub sharp_groups: u32,
    /// `fabric.nic_efficiency`: share of the payload rate the links between NICs
    /// and their switches carry (NIC goodput with GPUDirect RDMA), in (0, 1].
    pub nic_efficiency: f64,
    /// `fabric.qps_per_connection`: queue pairs per connection between hosts
    /// (NCCL_IB_QPS_PER_CONNECTION, default 1); each is its own ECMP flow.
    pub qps_per_connection: u8,
}

impl FabricSpec {
    /// Whether in-network reduction runs: `fabric.sharp = true` on InfiniBand
    /// (SHARP is a feature of InfiniBand switches; elsewhere `sharp` falls back to ring).
    /// `fabric.sharp_groups = 0` leaves no room for any tree.
    pub fn sharp_active(&self) -> bool {
        self.sharp && self.kind == FabricKind::InfiniBand && self.sharp_groups > 0
    }

    /// Fraction of the line rate left for payload: mtu / (mtu + header).
    pub fn efficiency(&self) -> f64 {
        self.mtu as f64 / (self.mtu + self.header_bytes) as f64
    }
}

/// An element type, for the `count` column of result tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dtype {
    /// Name as nccl-tests prints it (`float`, `half`, `bfloat16`, `int8`…).
    pub name: &'static str,
    /// Bytes per element.
    pub size: u64,
}

const DTYPES: [(&str, &str, u64); 8] = [
    ("float32", "float", 4),
    ("float", "float", 4),
    ("float16", "half", 2),
    ("half", "half", 2),
    ("bfloat16", "bfloat16", 2),
    ("float64", "double", 8),
    ("int32", "int32", 4),
    ("int8", "int8", 1),
];

/// Algorithm choice: fixed or picked per size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgoChoice {
    /// The fastest closed-form algorithm for each size.
    Auto,
    /// This algorithm.
    Fixed(Algorithm),
}

/// A collective over a size sweep, like one nccl-tests binary.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveWorkload {
    /// Operation.
    pub op: CollectiveOp,
    /// Algorithm.
    pub algorithm: AlgoChoice,
    /// Inter-host algorithm for hierarchical.
    pub inter_host: Algorithm,
    /// Sizes in bytes, ascending.
    pub sizes: Vec<u64>,
    /// Pipelining chunk, bytes.
    pub chunk_bytes: u64,
    /// Element type.
    pub dtype: Dtype,
    /// Broadcast root.
    pub root: u32,
    /// Parallel channels; `None`: as NCCL, one per NIC when the communicator spans
    /// hosts ([`crate::collective::default_channels`]).
    pub channels: Option<u32>,
    /// NCCL's PXN (see [`crate::collective::CollectiveSpec::pxn`]).
    pub pxn: bool,
    /// The protocol; `None`: chosen per size like NCCL's tuner.
    pub protocol: Option<crate::collective::Protocol>,
    /// Per-step software latency between hosts; `None`: the protocol's.
    pub step_latency: Option<SimTime>,
    /// Per-step software latency over NVLink; `None`: the protocol's.
    pub nvlink_step_latency: Option<SimTime>,
}

/// The checked `[workload]`.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSpec {
    /// A collective size sweep.
    Collective(CollectiveWorkload),
    /// A synthetic traffic pattern (incast, permutation, all-to-all, random).
    Traffic(crate::workload::traffic::TrafficSpec),
    /// One training step of a transformer under a parallel plan.
    Training(Box<TrainingSpec>),
    /// Prefill and decode of a batch of requests.
    Inference(Box<InferenceSpec>),
}

impl WorkloadSpec {
    /// The `workload.kind` this workload was written as.
    pub fn kind_name(&self) -> &'static str {
        match self {
            WorkloadSpec::Collective(_) => "collective",
            WorkloadSpec::Traffic(_) => "traffic",
            WorkloadSpec::Training(_) => "training",
            WorkloadSpec::Inference(_) => "inference",
        }
    }
}

/// Settings only the packet level uses.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketSettings {
    /// Buffer per port and virtual lane, bytes.
    pub buffer: u64,
    /// Shared buffer per switch, bytes (0 = per-port).
    pub shared_buffer: u64,
    /// Dynamic-threshold α.
    pub shared_buffer_alpha: f64,
    /// Virtual lanes per port.
    pub virtual_lanes: u8,
    /// Escalate lanes per hop.
    pub vl_escalation: bool,
    /// Cut-through forwarding.
    pub cut_through: bool,
    /// TCP-like transport (else RDMA).
    pub tcp: bool,
    /// TCP CPU time per packet.
    pub tcp_packet_overhead: SimTime,
    /// TCP jitter bound.
    pub tcp_jitter: SimTime,
    /// Window per queue pair, bytes.
    pub window: u64,
    /// ACK coalescing.
    pub ack_every: u32,
    /// Retransmission timeout.
    pub rto: SimTime,
    /// Idle time that ends a flowlet (`routing = "flowlet"`).
    pub flowlet_gap: SimTime,
    /// Sampling interval (0 = off).
    pub sample_interval: SimTime,
    /// Simulated-time limit.
    pub time_limit: SimTime,
    /// Deadlock watchdog.
    pub deadlock_timeout: SimTime,
    /// PFC thresholds (XOFF, XON, headroom), bytes, or `None` when PFC is off.
    pub pfc: Option<(u64, u64, u64)>,
    /// PFC pause quanta per frame (0 = until RESUME).
    pub pfc_pause_quanta: u32,
    /// ECN marking (Kmin bytes, Kmax bytes, Pmax), or `None`.
    pub ecn: Option<(u64, u64, f64)>,
    /// Congestion control.
    pub cc: crate::mechanism::CongestionControl,
}

/// A setting present in the scenario that the chosen fidelity does not use.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IgnoredSetting {
    /// Dotted key.
    pub key: String,
    /// Why it changes nothing in this run.
    pub reason: String,
}

/// A validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name shown in results.
    pub name: String,
    /// The file it came from.
    pub file: String,
    /// Hosts.
    pub cluster: ClusterSpec,
    /// GPUDirect (true) or host-staged (false).
    pub gpu_direct: bool,
    /// Host-staged copy bandwidth.
    pub host_copy_rate: Rate,
    /// Host-staged copy latency.
    pub host_copy_latency: SimTime,
    /// `cluster.nvlink_efficiency`: share of the NVLink rate the NVLink links
    /// carry (what NCCL's kernels reach), in (0, 1].
    pub nvlink_efficiency: f64,
    /// `cluster.nvls`: the NVSwitches reduce and multicast (NVLink SHARP); used by
    /// the `nvls` algorithm at the analytical and flow fidelities.
    pub nvls: bool,
    /// Network shape.
    pub topology: TopologySpec,
    /// Network technology.
    pub fabric: FabricSpec,
    /// What runs.
    pub workload: WorkloadSpec,
    /// Fidelity.
    pub fidelity: Fidelity,
    /// Seed.
    pub seed: u64,
    /// Settings of the packet level.
    pub packet: PacketSettings,
    /// Every key the file sets, dotted (for `ignored_settings`).
    pub keys_set: Vec<String>,
    /// Stragglers and failures, in file order.
    pub faults: Vec<FaultSpec>,
    /// Traffic workloads: flows added to the pattern.
    pub extra_flows: Vec<crate::workload::traffic::ExtraFlow>,
    /// `simulation.max_memory` and `simulation.max_events`: what a run may cost.
    pub budget: crate::budget::Budget,
}

/// Longest latency or per-packet overhead a key may set: 1 s. Latencies are
/// paid once per step, hop or packet, so a run adds up millions of them; at most
/// 1 s each (2⁴⁰ ps), 2²⁴ of them still fit in `u64` picoseconds.
pub const MAX_LATENCY: SimTime = SimTime(1_000_000_000_000);

/// The largest value `field` may hold: [`MAX_LATENCY`] for latencies, jitter
/// and per-packet overheads, else [`MAX_SIM_TIME`].
fn max_duration(field: &str) -> SimTime {
    if field.ends_with("latency") || field.ends_with("overhead") || field.ends_with("jitter") {
        MAX_LATENCY
    } else {
        MAX_SIM_TIME
    }
}

/// Most sizes in one collective workload: each is one simulation (a
/// min_bytes..max_bytes sweep has at most 64).
pub const MAX_SIZES: usize = 1024;

/// Most GPUs (and NICs) in a cluster: their ids are 32-bit.
pub const MAX_ENDPOINTS: u64 = 1 << 31;

/// Longest simulated time a size may take over the slowest link, 2⁶⁰ ps (about
/// 13 days): room for sums over sizes, steps and faults within `u64` picoseconds.
pub const MAX_SIM_TIME: SimTime = SimTime(1 << 60);

/// Most channels a collective may ask for (NCCL's MAXCHANNELS is 64).
pub const MAX_CHANNELS: i64 = 64;

/// Most queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION; NCCL caps it
/// at 128, real deployments use 1 to 8).
pub const MAX_QPS: i64 = 16;

// ---------------------------------------------------------------- validation

/// Reads and validates a scenario file.
///
/// # Errors
/// A [`ConfigError`] listing every problem; an unreadable file is one problem.
pub fn load(path: &std::path::Path) -> Result<Scenario, ConfigError> {
    let file = path.display().to_string();
    match crate::budget::read_text(path, crate::budget::MAX_INPUT_BYTES) {
        Ok(text) => parse(&file, &text),
        Err(e) => Err(ConfigError {
            diagnostics: vec![Diagnostic {
                file: file.clone(),
                line: 0,
                col: 0,
                field: "(file)".into(),
                found: format!("an unreadable file ({e})"),
                expected: format!(
                    "a readable TOML scenario file of at most {}",
                    crate::units::format_bytes(crate::budget::MAX_INPUT_BYTES)
                ),
                snippet: String::new(),
            }],
        }),
    }
}

/// Validates scenario `text` read from `file`.
///
/// # Errors
/// A [`ConfigError`] listing every problem found.
pub fn parse(file: &str, text: &str) -> Result<Scenario, ConfigError> {
    let src = Source::new(file, text);
    let raw: RawScenario = match toml::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            return Err(ConfigError {
                diagnostics: vec![serde_diag(&src, &e)],
            })
        }
    };
    let mut v = Validator {
        src: &src,
        diags: Vec::new(),
        quiet_missing: false,
    };
    let scenario = v.scenario(&raw);
    if v.diags.is_empty() {
        if let Some(s) = scenario {
            return Ok(s);
        }
    }
    v.diags.sort_by_key(|d| (d.line == 0, d.line, d.col));
    Err(ConfigError {
        diagnostics: v.diags,
    })
}

/// Turns a TOML or serde error into a diagnostic with its field.
fn serde_diag(src: &Source, e: &toml::de::Error) -> Diagnostic {
    let span = e.span();
    let msg = e.message().trim().to_string();
    let field = span
        .as_ref()
        .and_then(|s| src.path_at(s))
        .unwrap_or_else(|| "(syntax)".into());
    let (found, expected) = if let Some(rest) = msg.strip_prefix("unknown field ") {
        // "unknown field `x`, expected one of `a`, `b`"
        let (name, exp) = rest
            .split_once(", expected ")
            .unwrap_or((rest, "a known field"));
        (format!("unknown field {name}"), exp.to_string())
    } else if let Some(rest) = msg.strip_prefix("invalid type: ") {
        let (got, exp) = rest
            .split_once(", expected ")
            .unwrap_or((rest, "another type"));
        (got.to_string(), exp.to_string())
    } else if msg.starts_with("data did not match any variant") {
        (
            span.as_ref()
                .and_then(|s| text_slice(src.text, s))
                .unwrap_or_else(|| "a value of the wrong type".into()),
            "a number or a quoted quantity with a unit".into(),
        )
    } else {
        (msg.clone(), "valid TOML (https://toml.io)".into())
    };
    src.diag_at(span, &field, found, expected)
}

fn text_slice(text: &str, s: &std::ops::Range<usize>) -> Option<String> {
    text.get(s.clone()).map(|t| t.trim().to_string())
}

struct Validator<'a> {
    src: &'a Source<'a>,
    diags: Vec<Diagnostic>,
    /// An unknown preset was named: fields it would have supplied are not also
    /// reported missing (one mistake, one diagnostic).
    quiet_missing: bool,
}

impl Validator<'_> {
    fn err(&mut self, field: &str, found: impl Into<String>, expected: impl Into<String>) {
        let found = found.into();
        if self.quiet_missing && found == "nothing" {
            return;
        }
        let d = self.src.diag(field, found, expected);
        self.diags.push(d);
    }

    fn count(
        &mut self,
        field: &str,
        v: Option<i64>,
        default: Option<i64>,
        min: i64,
        what: &str,
    ) -> Option<u32> {
        match v.or(default) {
            None => {
                self.err(field, "nothing", format!("{what} (an integer ≥ {min})"));
                None
            }
            Some(n) if n < min || n > u32::MAX as i64 => {
                self.err(field, n.to_string(), format!("{what}: an integer ≥ {min}"));
                None
            }
            Some(n) => Some(n as u32),
        }
    }

    fn rate(
        &mut self,
        field: &str,
        v: Option<&RawQuantity>,
        default: Option<&str>,
    ) -> Option<Rate> {
        let (text, shown) = match (v, default) {
            (Some(RawQuantity::Str(s)), _) => (s.clone(), format!("{s:?}")),
            (Some(q @ RawQuantity::Int(_)), _) => {
                self.err(
                    field,
                    format!("{} (no unit)", q.shown()),
                    "a rate with a unit such as \"400Gbps\" or \"450GB/s\"",
                );
                return None;
            }
            (None, Some(d)) => (d.to_string(), format!("{d:?} (preset)")),
            (None, None) => {
                self.err(
                    field,
                    "nothing",
                    "a rate such as \"400Gbps\" (or name a preset)",
                );
                return None;
            }
        };
        match parse_rate(&text) {
            Ok(r) if r.bps() == 0 => {
                self.err(field, shown, "a rate above zero");
                None
            }
            Ok(r) => Some(r),
            Err(e) => {
                self.err(field, shown, e.expected);
                None
            }
        }
    }

    fn time(
        &mut self,
        field: &str,
        v: Option<&RawQuantity>,
        default: Option<&str>,
    ) -> Option<SimTime> {
        let (text, shown) = match (v, default) {
            (Some(RawQuantity::Str(s)), _) => (s.clone(), format!("{s:?}")),
            (Some(RawQuantity::Int(0)), _) => return Some(SimTime::ZERO),
            (Some(q @ RawQuantity::Int(_)), _) => {
                self.err(
                    field,
                    format!("{} (no unit)", q.shown()),
                    "a duration with a unit such as \"500ns\"",
                );
                return None;
            }
            (None, Some(d)) => (d.to_string(), format!("{d:?} (default)")),
            (None, None) => {
                self.err(field, "nothing", "a duration such as \"500ns\"");
                return None;
            }
        };
        match parse_time(&text) {
            Ok(t) if t > max_duration(field) => {
                let cap = max_duration(field);
                self.err(
                    field,
                    shown,
                    if cap == MAX_LATENCY {
                        "a latency of at most 1s".to_string()
                    } else {
                        format!("a duration within the simulated-time range, at most {cap} (2^60 ps, about 13 days)")
                    },
                );
                None
            }
            Ok(t) => Some(t),
            Err(e) => {
                self.err(field, shown, e.expected);
                None
            }
        }
    }

    fn size(
        &mut self,
        field: &str,
        v: Option<&RawQuantity>,
        default: Option<&str>,
        min: u64,
    ) -> Option<u64> {
        let (res, shown) = match (v, default) {
            (Some(RawQuantity::Int(i)), _) if *i >= 0 => (Ok(*i as u64), i.to_string()),
            (Some(RawQuantity::Int(i)), _) => (Err(()), i.to_string()),
            (Some(RawQuantity::Str(s)), _) => (parse_size(s).map_err(|_| ()), format!("{s:?}")),
            (None, Some(d)) => (parse_size(d).map_err(|_| ()), format!("{d:?} (default)")),
            (None, None) => {
                self.err(field, "nothing", "a size such as \"4KiB\"");
                return None;
            }
        };
        match res {
            Ok(b) if b < min => {
                self.err(field, shown, format!("a size of at least {min} bytes"));
                None
            }
            Ok(b) => Some(b),
            Err(()) => {
                self.err(
                    field,
                    shown,
                    "a size such as \"4KiB\", \"1.5MiB\", \"1GiB\" or a whole number of bytes",
                );
                None
            }
        }
    }

    fn scenario(&mut self, raw: &RawScenario) -> Option<Scenario> {
        let node = match raw.cluster.preset.as_deref() {
            None => None,
            Some(name) => match presets::node(name) {
                Some(p) => Some(p),
                None => {
                    self.err(
                        "cluster.preset",
                        format!("{name:?}"),
                        format!("one of {}", presets::node_names()),
                    );
                    self.quiet_missing = true;
                    None
                }
            },
        };
        let fab = match raw.fabric.preset.as_deref() {
            None => None,
            Some(name) => match presets::fabric(name) {
                Some(p) => Some(p),
                None => {
                    self.err(
                        "fabric.preset",
                        format!("{name:?}"),
                        format!("one of {}", presets::fabric_names()),
                    );
                    self.quiet_missing = true;
                    None
                }
            },
        };
        let c = &raw.cluster;
        let hosts = self.count("cluster.nodes", c.nodes, None, 1, "the number of nodes");
        let gpus = self.count(
            "cluster.gpus_per_node",
            c.gpus_per_node,
            node.map(|p| p.gpus_per_node as i64),
            1,
            "GPUs per node",
        );
        let nics = self.count(
            "cluster.nics_per_node",
            c.nics_per_node,
            node.map(|p| p.nics_per_node as i64),
            1,
            "NICs per node",
        );
        if let (Some(g), Some(n)) = (gpus, nics) {
            if n > g || g % n != 0 {
                self.err(
                    "cluster.nics_per_node",
                    format!("{n} NICs for {g} GPUs per node"),
                    format!("a number of NICs that divides the GPUs per node evenly (1, …, {g}), so each NIC serves the same number of GPUs"),
                );
            }
        }
        let nvlink_rate = self.rate(
            "cluster.nvlink_bandwidth",
            c.nvlink_bandwidth.as_ref(),
            node.map(|p| p.nvlink_bandwidth),
        );
        let nvlink_latency = self.time(
            "cluster.nvlink_latency",
            c.nvlink_latency.as_ref(),
            Some(node.map_or("250ns", |p| p.nvlink_latency)),
        );
        let pcie_rate = self.rate(
            "cluster.pcie_bandwidth",
            c.pcie_bandwidth.as_ref(),
            Some(node.map_or("64GB/s", |p| p.pcie_bandwidth)),
        );
        let pcie_latency = self.time(
            "cluster.pcie_latency",
            c.pcie_latency.as_ref(),
            Some(node.map_or("250ns", |p| p.pcie_latency)),
        );
        let gpu_direct = c.gpu_direct.unwrap_or(true);
        let host_copy_rate = self.rate(
            "cluster.host_copy_bandwidth",
            c.host_copy_bandwidth.as_ref(),
            Some("25GB/s"),
        );
        let host_copy_latency = self.time(
            "cluster.host_copy_latency",
            c.host_copy_latency.as_ref(),
            Some("5us"),
        );
        let nvlink_efficiency = self.efficiency(
            "cluster.nvlink_efficiency",
            c.nvlink_efficiency,
            node.map_or(1.0, |p| p.nvlink_efficiency),
        );

        // fabric
        let f = &raw.fabric;
        let kind_name = f.kind.as_deref().or(fab.map(|p| p.kind));
        let kind = match kind_name {
            Some("infiniband") => Some(FabricKind::InfiniBand),
            Some("roce") => Some(FabricKind::Roce),
            Some("ethernet") => Some(FabricKind::Ethernet),
            Some(other) => {
                self.err(
                    "fabric.kind",
                    format!("{other:?}"),
                    "one of \"infiniband\", \"roce\", \"ethernet\"",
                );
                None
            }
            None => {
                self.err(
                    "fabric.kind",
                    "nothing",
                    format!(
                        "\"infiniband\", \"roce\" or \"ethernet\" (or a preset: {})",
                        presets::fabric_names()
                    ),
                );
                None
            }
        };
        let link_rate = self.rate(
            "fabric.link_rate",
            f.link_rate.as_ref(),
            fab.map(|p| p.link_rate),
        );
        let mtu = self.size(
            "fabric.mtu",
            f.mtu.as_ref(),
            Some(fab.map_or("4KiB", |p| p.mtu)),
            64,
        );
        if let Some(m) = mtu {
            if m > 65536 {
                self.err("fabric.mtu", m.to_string(), "an MTU of at most 64KiB");
            }
        }
        let header_bytes = match f.header_bytes {
            Some(h) if !(0..=4096).contains(&h) => {
                self.err(
                    "fabric.header_bytes",
                    h.to_string(),
                    "header bytes per packet between 0 and 4096",
                );
                None
            }
            Some(h) => Some(h as u64),
            None => Some(fab.map_or_else(
                || presets::default_header(kind_name.unwrap_or("")),
                |p| p.header_bytes,
            )),
        };
        let link_latency = self.time(
            "fabric.link_latency",
            f.link_latency.as_ref(),
            Some(fab.map_or("50ns", |p| p.link_latency)),
        );
        let switch_latency = self.time(
            "fabric.switch_latency",
            f.switch_latency.as_ref(),
            Some(fab.map_or("300ns", |p| p.switch_latency)),
        );
        let nic_efficiency = self.efficiency(
            "fabric.nic_efficiency",
            f.nic_efficiency,
            fab.map_or(1.0, |p| p.nic_efficiency),
        );
        let qps_per_connection = match f.qps_per_connection {
            None => Some(1u8),
            Some(q) if (1..=MAX_QPS).contains(&q) => Some(q as u8),
            Some(q) => {
                self.err(
                    "fabric.qps_per_connection",
                    q.to_string(),
                    format!("a whole number of queue pairs from 1 to {MAX_QPS}"),
                );
                None
            }
        };
        let routing = match f.routing.as_deref().unwrap_or("ecmp") {
            "ecmp" => Some(Routing::Ecmp),
            "adaptive" => Some(Routing::Adaptive),
            "spray" => Some(Routing::Spray),
            "flowlet" => Some(Routing::Flowlet),
            other => {
                self.err(
                    "fabric.routing",
                    format!("{other:?}"),
                    "one of \"ecmp\", \"adaptive\", \"spray\", \"flowlet\"",
                );
                None
            }
        };

        let packet = self.packet_settings(
            raw,
            kind,
            link_rate
                .zip(link_latency)
                .zip(switch_latency)
                .map(|((r, l), f)| (r, l, f)),
            mtu.zip(header_bytes).map(|(m, h)| m + h),
        );
        let topology = self.topology(&raw.topology);
        let extra_flows = self.extra_flows(
            &raw.workload,
            hosts.zip(gpus).map(|(h, g)| h as u64 * g as u64),
        );
        let workload = self.workload(
            &raw.workload,
            hosts.zip(gpus).map(|(h, g)| h as u64 * g as u64),
        );
        let faults = self.faults(&raw.faults);
        let fidelity = {
            let s = raw.simulation.fidelity.as_deref().unwrap_or("flow");
            match Fidelity::parse(s) {
                Some(f) => Some(f),
                None => {
                    self.err(
                        "simulation.fidelity",
                        format!("{s:?}"),
                        "one of \"analytical\", \"flow\", \"packet\"",
                    );
                    None
                }
            }
        };
        let seed = match raw.simulation.seed {
            Some(s) if s < 0 => {
                self.err("simulation.seed", s.to_string(), "a non-negative integer");
                None
            }
            s => Some(s.unwrap_or(1) as u64),
        };

        let cluster = ClusterSpec {
            hosts: hosts?,
            gpus_per_host: gpus?,
            nics_per_host: nics?,
            nvlink_rate: nvlink_rate?,
            nvlink_latency: nvlink_latency?,
            pcie_rate: pcie_rate?,
            pcie_latency: pcie_latency?,
        };
        let sharp_groups = match raw.fabric.sharp_groups {
            None => Some(u32::MAX),
            Some(g) if (0..i64::from(u32::MAX)).contains(&g) => Some(g as u32),
            Some(g) => {
                self.err(
                    "fabric.sharp_groups",
                    g.to_string(),
                    "a number of aggregation trees per switch, 0 or more",
                );
                None
            }
        };
        let fabric = FabricSpec {
            kind: kind?,
            links: FabricLinkSpec {
                link_rate: link_rate?,
                link_latency: link_latency?,
                switch_latency: switch_latency?,
            },
            mtu: mtu?,
            header_bytes: header_bytes?,
            routing: routing?,
            sharp: raw.fabric.sharp.unwrap_or(false),
            sharp_groups: sharp_groups?,
            nic_efficiency: nic_efficiency?,
            qps_per_connection: qps_per_connection?,
        };
        let topology = topology?;
        let budget = self.budget(&raw.simulation)?;
        // GPU and NIC ids are 32-bit.
        let total = |per: u32| u64::from(cluster.hosts) * u64::from(per);
        for (what, per) in [
            ("GPUs", cluster.gpus_per_host),
            ("NICs", cluster.nics_per_host),
        ] {
            if total(per) > MAX_ENDPOINTS {
                self.err(
                    "cluster.nodes",
                    format!("{} nodes x {per} = {} {what}", cluster.hosts, total(per)),
                    format!("at most {MAX_ENDPOINTS} {what} in the cluster (32-bit ids)"),
                );
                return None;
            }
        }
        // What building the topology costs, before building it.
        let est = crate::budget::topology(
            cluster.hosts,
            cluster.gpus_per_host,
            cluster.nics_per_host,
            &topology,
        );
        if let Err(over) = est.check(&budget) {
            self.over_budget(&over);
            return None;
        }
        // The shape must hold the cluster: build it once now so the error is
        // reported before any run, on the field at fault.
        let built = match crate::topology::build(&cluster, &fabric.links, &topology) {
            Err(e) => {
                let found = self
                    .src
                    .text_of(e.field)
                    .map(str::to_string)
                    .unwrap_or_else(|| "this cluster".into());
                self.err(e.field, found, e.message);
                return None;
            }
            Ok(t) => {
                if let Some(f) = &faults {
                    self.check_faults(f, &t);
                }
                t
            }
        };
        let scenario = Scenario {
            name: raw.name.clone().unwrap_or_else(|| {
                std::path::Path::new(self.src.file)
                    .file_stem()
                    .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned())
            }),
            file: self.src.file.to_string(),
            cluster,
            gpu_direct,
            host_copy_rate: host_copy_rate?,
            host_copy_latency: host_copy_latency?,
            nvlink_efficiency: nvlink_efficiency?,
            nvls: c.nvls.unwrap_or(node.is_some_and(|p| p.nvls)),
            topology,
            fabric,
            workload: workload?,
            fidelity: fidelity?,
            seed: seed?,
            packet: packet?,
            keys_set: keys_set(self.src.text),
            faults: faults?,
            extra_flows: extra_flows?,
            budget,
        };
        // estimates are made of valid scenarios only: one mistake, one diagnostic
        if !self.diags.is_empty() || !self.in_time_range(&scenario, &built) {
            return None;
        }
        // What the run costs at the file's fidelity (run::run checks again at
        // the fidelity it runs).
        if let Err(over) = crate::budget::run(&scenario, &built, scenario.fidelity).check(&budget) {
            self.over_budget(&over);
            return None;
        }
        Some(scenario)
    }

    /// A diagnostic for a scenario over its budget, at the key that drives it.
    fn over_budget(&mut self, over: &crate::budget::OverBudget) {
        // a min_bytes/max_bytes sweep has no `sizes` to point at
        let field = match over.field {
            "workload.sizes" if self.src.span_of("workload.sizes").is_none() => {
                "workload.max_bytes"
            }
            f => f,
        };
        self.err(field, over.found.clone(), over.expected.clone());
    }

    /// `simulation.max_memory` and `simulation.max_events`.
    fn budget(&mut self, sim: &RawSimulation) -> Option<crate::budget::Budget> {
        let mut b = crate::budget::Budget::default();
        if let Some(q) = &sim.max_memory {
            let m = self.size("simulation.max_memory", Some(q), None, 1 << 20)?;
            b.max_memory = m;
            b.memory_is_default = false;
        }
        if let Some(n) = sim.max_events {
            let x = n.as_f64();
            if !(x.is_finite() && x >= 1.0 && x.fract() == 0.0 && x <= u64::MAX as f64) {
                self.err(
                    "simulation.max_events",
                    x.to_string(),
                    "a whole number of packet events, at least 1, such as 3.6e10",
                );
                return None;
            }
            b.max_events = x as u64;
        }
        Some(b)
    }

    /// Every workload size must move, over the slowest link of the cluster, in
    /// simulated time that fits [`MAX_SIM_TIME`], and all sizes together must
    /// move fewer than 2⁶¹ bytes (2 buffers per rank each) so that byte counters
    /// summed over the run cannot wrap.
    fn in_time_range(&mut self, s: &Scenario, topo: &crate::topology::Topology) -> bool {
        let slowest = topo
            .links
            .iter()
            .map(|l| l.rate.0)
            .chain((!s.gpu_direct).then_some(s.host_copy_rate.0))
            .min()
            .unwrap_or(1)
            .max(1);
        let rate = Rate(slowest);
        let n = u128::from(s.num_gpus());
        let mut sizes: Vec<(String, u64, u128)> = Vec::new();
        match &s.workload {
            WorkloadSpec::Collective(w) => {
                let key = if self.src.span_of("workload.sizes").is_some() {
                    "workload.sizes"
                } else {
                    "workload.max_bytes"
                };
                // the index of each size in the file's list, when there is one
                let mut index: std::collections::HashMap<u64, usize> = Default::default();
                if self.src.span_of("workload.sizes").is_some() {
                    for i in 0..w.sizes.len() {
                        let b = self
                            .src
                            .text_of(&format!("workload.sizes.{i}"))
                            .and_then(|t| parse_size(t.trim().trim_matches('"')).ok());
                        if let Some(b) = b {
                            index.entry(b).or_insert(i);
                        }
                    }
                }
                for &b in &w.sizes {
                    let field = index
                        .get(&b)
                        .map_or_else(|| key.to_string(), |i| format!("workload.sizes.{i}"));
                    sizes.push((field, b, 2 * u128::from(b) * n));
                }
            }
            WorkloadSpec::Traffic(t) => {
                use crate::workload::traffic::TrafficSpec as T;
                let per_flow = match t {
                    T::Incast { bytes, senders, .. } => {
                        Some((*bytes, u128::from(*bytes) * u128::from(*senders)))
                    }
                    T::Permutation { bytes, .. } => Some((*bytes, u128::from(*bytes) * n)),
                    T::AllToAll { bytes } => Some((*bytes, u128::from(*bytes) * n * n)),
                    T::RandomPairs { .. } => None,
                };
                if let Some((b, total)) = per_flow {
                    sizes.push(("workload.bytes".into(), b, total));
                }
                for f in &s.extra_flows {
                    sizes.push(("workload.extra_flows".into(), f.bytes, u128::from(f.bytes)));
                }
            }
            WorkloadSpec::Training(t) => {
                if !self.compute_in_time_range(s, training_compute_secs(t)) {
                    return false;
                }
            }
            WorkloadSpec::Inference(i) => {
                if !self.compute_in_time_range(s, inference_compute_secs(i)) {
                    return false;
                }
            }
        }
        let mut total: u128 = 0;
        for (field, b, moved) in sizes {
            // bits / (bits per second) in picoseconds, in u128 so it cannot wrap
            let ps = u128::from(b) * 8 * 1_000_000_000_000 / u128::from(rate.0);
            if ps > u128::from(MAX_SIM_TIME.0) {
                let found = match self.src.text_of(&field) {
                    Some(t) if field == "workload.max_bytes" => {
                        format!("{} (its sweep reaches {b} B)", t.trim())
                    }
                    Some(t) => format!("{} ({b} B)", t.trim()),
                    None => format!("{b} B"),
                };
                self.err(
                    &field,
                    found,
                    format!(
                        "a size that moves within the simulated-time range (2^60 ps, about 13 days) at {rate}, the slowest link: {b} B at {rate} takes {:.1e} s",
                        ps as f64 / 1e12
                    ),
                );
                return false;
            }
            // 2 buffers per rank here; an algorithm moves at most twice that
            // (NVLink included), so 2^61 keeps every byte counter under 2^62
            total = total.saturating_add(moved);
            if total > 1u128 << 61 {
                self.err(
                    &field,
                    format!("{b} B on {n} GPUs: about {total} bytes moved in all"),
                    "sizes that move fewer than 2^61 bytes over the whole run, so byte counters cannot wrap",
                );
                return false;
            }
        }
        true
    }

    /// A training step's (an inference batch's) compute must fit the
    /// simulated-time range too: `step`, about one GPU's compute in it
    /// ([`training_compute_secs`], [`inference_compute_secs`]), and that
    /// stretched by each `slow_gpu` factor. Otherwise a slow GPU (`factor =
    /// 1e308`) or a GPU far too slow for its model (`efficiency = 1e-12`)
    /// saturates its compute tasks at 2^64 ps, and the run fails later with a
    /// time that means nothing (found by `tests/fuzz_scenarios.rs`).
    fn compute_in_time_range(&mut self, s: &Scenario, step: f64) -> bool {
        let limit = MAX_SIM_TIME.as_secs_f64();
        let range = "the simulated-time range (2^60 ps, about 13 days)";
        // NaN (0 × ∞) counts as out of range
        let fits = |t: f64| t.is_finite() && t <= limit;
        if !fits(step) {
            self.err(
                "workload.gpu",
                format!("a GPU that computes one step (inference: the batch) in about {step:.1e} s"),
                format!(
                    "a GPU fast enough (peak_tflops, efficiency, hbm_bandwidth) that one GPU's compute in a step fits {range}, or a smaller model, batch or request count"
                ),
            );
            return false;
        }
        for (i, f) in s.faults.iter().enumerate() {
            if let workload::FaultKind::SlowGpu { factor, .. } = f.kind {
                if !fits(step * factor) {
                    let field = format!("faults.{i}.factor");
                    let text = self
                        .src
                        .text_of(&field)
                        .map_or_else(|| factor.to_string(), |x| x.trim().to_string());
                    self.err(
                        &field,
                        format!(
                            "{text} (a step of about {step:.1e} s of compute would take {:.1e} s)",
                            step * factor
                        ),
                        format!("a slowdown factor that keeps one GPU's compute in a step within {range}: at most {:.1e}", limit / step),
                    );
                    return false;
                }
            }
        }
        true
    }

    /// A fraction in (0, 1] (`default` when the file leaves it out).
    fn efficiency(&mut self, field: &str, v: Option<RawNumber>, default: f64) -> Option<f64> {
        let x = v.map_or(default, RawNumber::as_f64);
        if x > 0.0 && x <= 1.0 {
            Some(x)
        } else {
            self.err(
                field,
                x.to_string(),
                "a fraction of the line rate above 0 and at most 1, such as 0.82",
            );
            None
        }
    }

    fn topology(&mut self, t: &RawTopology) -> Option<TopologySpec> {
        let kind = t.kind.as_deref().unwrap_or("");
        let allowed: &[&str] = match kind {
            "single_switch" => &[],
            "leaf_spine" => &["radix", "oversubscription"],
            "fat_tree" => &["k"],
            "rail_optimized" => &["radix", "spine_radix"],
            "dragonfly" => &[
                "groups",
                "routers_per_group",
                "hosts_per_router",
                "global_links_per_router",
            ],
            "" => {
                self.err("topology.kind", "nothing", "one of \"single_switch\", \"leaf_spine\", \"fat_tree\", \"rail_optimized\", \"dragonfly\"");
                return None;
            }
            other => {
                self.err("topology.kind", format!("{other:?}"), "one of \"single_switch\", \"leaf_spine\", \"fat_tree\", \"rail_optimized\", \"dragonfly\"");
                return None;
            }
        };
        let present = [
            ("radix", t.radix.is_some()),
            ("spine_radix", t.spine_radix.is_some()),
            ("oversubscription", t.oversubscription.is_some()),
            ("k", t.k.is_some()),
            ("groups", t.groups.is_some()),
            ("routers_per_group", t.routers_per_group.is_some()),
            ("hosts_per_router", t.hosts_per_router.is_some()),
            (
                "global_links_per_router",
                t.global_links_per_router.is_some(),
            ),
        ];
        let mut ok = true;
        for (key, is) in present {
            if is && !allowed.contains(&key) {
                self.err(
                    &format!("topology.{key}"),
                    format!("`{key}` with kind {kind:?}"),
                    if allowed.is_empty() {
                        format!("no other keys for kind {kind:?}")
                    } else {
                        format!("only {} for kind {kind:?}", allowed.join(", "))
                    },
                );
                ok = false;
            }
        }
        let spec = match kind {
            "single_switch" => Some(TopologySpec::SingleSwitch),
            "leaf_spine" => {
                let radix = self.count("topology.radix", t.radix, Some(64), 2, "ports per switch");
                let o = t.oversubscription.map_or(1.0, RawNumber::as_f64);
                if !(o.is_finite() && o > 0.0) {
                    self.err(
                        "topology.oversubscription",
                        o.to_string(),
                        "a positive down:up ratio such as 1.0 or 3.0",
                    );
                    return None;
                }
                Some(TopologySpec::LeafSpine {
                    radix: radix?,
                    oversubscription: o,
                })
            }
            "fat_tree" => {
                let k = self.count("topology.k", t.k, None, 2, "the fat-tree arity k (even)")?;
                Some(TopologySpec::FatTree { k })
            }
            "rail_optimized" => {
                let radix = self.count(
                    "topology.radix",
                    t.radix,
                    Some(64),
                    2,
                    "ports per leaf switch",
                );
                let spine = self.count(
                    "topology.spine_radix",
                    t.spine_radix,
                    radix.map(i64::from),
                    2,
                    "ports per spine switch",
                );
                Some(TopologySpec::RailOptimized {
                    radix: radix?,
                    spine_radix: spine?,
                })
            }
            _ => {
                let g = self.count("topology.groups", t.groups, None, 2, "the number of groups");
                let a = self.count(
                    "topology.routers_per_group",
                    t.routers_per_group,
                    None,
                    1,
                    "routers per group",
                );
                let p = self.count(
                    "topology.hosts_per_router",
                    t.hosts_per_router,
                    None,
                    1,
                    "NIC ports per router",
                );
                let h = self.count(
                    "topology.global_links_per_router",
                    t.global_links_per_router,
                    None,
                    1,
                    "global links per router",
                );
                Some(TopologySpec::Dragonfly {
                    groups: g?,
                    routers_per_group: a?,
                    hosts_per_router: p?,
                    global_links_per_router: h?,
                })
            }
        };
        if ok {
            spec
        } else {
            None
        }
    }

    fn extra_flows(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<Vec<crate::workload::traffic::ExtraFlow>> {
        let Some(list) = &w.extra_flows else {
            return Some(Vec::new());
        };
        if w.kind.as_deref() != Some("traffic") {
            self.err(
                "workload.extra_flows",
                "extra flows in a collective workload",
                "it only with kind = \"traffic\"",
            );
            return None;
        }
        let n = total_gpus?;
        let mut out = Vec::new();
        let mut ok = true;
        for (i, f) in list.iter().enumerate() {
            for (what, g) in [("src", f.src), ("dst", f.dst)] {
                if g < 0 || g as u64 >= n {
                    self.err(
                        "workload.extra_flows",
                        format!("flow {i}: {what} = {g}"),
                        format!("a GPU between 0 and {}", n.saturating_sub(1)),
                    );
                    ok = false;
                }
            }
            let bytes = self.size("workload.extra_flows", Some(&f.bytes), None, 1);
            let start = self.time("workload.extra_flows", f.start.as_ref(), Some("0"));
            if let (Some(bytes), Some(start)) = (bytes, start) {
                out.push(crate::workload::traffic::ExtraFlow {
                    src: crate::topology::GpuId(f.src.max(0) as u32),
                    dst: crate::topology::GpuId(f.dst.max(0) as u32),
                    bytes,
                    start,
                });
            } else {
                ok = false;
            }
        }
        ok.then_some(out)
    }

    fn workload(&mut self, w: &RawWorkload, total_gpus: Option<u64>) -> Option<WorkloadSpec> {
        match w.kind.as_deref().unwrap_or("collective") {
            "collective" => {}
            "traffic" => return self.traffic(w, total_gpus),
            "training" => {
                return self
                    .training(w, total_gpus)
                    .map(|t| WorkloadSpec::Training(Box::new(t)))
            }
            "inference" => {
                return self
                    .inference(w, total_gpus)
                    .map(|t| WorkloadSpec::Inference(Box::new(t)))
            }
            other => {
                self.err(
                    "workload.kind",
                    format!("{other:?}"),
                    "\"collective\", \"traffic\", \"training\" or \"inference\"",
                );
                return None;
            }
        }
        let traffic = w.traffic_keys();
        self.refuse_workload_keys(&traffic, "collective", "it only with kind = \"traffic\"");
        let model = w.model_keys();
        self.refuse_workload_keys(
            &model,
            "collective",
            "kind = \"training\" or \"inference\" to describe a model",
        );
        let op = match w.op.as_deref() {
            None => {
                self.err(
                    "workload.op",
                    "nothing",
                    "one of allreduce, allgather, reducescatter, broadcast, alltoall",
                );
                None
            }
            Some(s) => match CollectiveOp::parse(s) {
                Some(op) => Some(op),
                None => {
                    self.err(
                        "workload.op",
                        format!("{s:?}"),
                        "one of allreduce, allgather, reducescatter, broadcast, alltoall",
                    );
                    None
                }
            },
        };
        let algo_names =
            "auto, ring, tree, halving_doubling, hierarchical, direct, sharp, nvls, collnet_chain";
        let algorithm = match w.algorithm.as_deref().unwrap_or("auto") {
            "auto" => Some(AlgoChoice::Auto),
            s => match Algorithm::parse(s) {
                Some(a) => {
                    if let Some(op) = op {
                        if !crate::collective::supports(a, op) {
                            self.err(
                                "workload.algorithm",
                                format!("{s:?} for {}", op.name()),
                                format!(
                                    "an algorithm that implements {} ({}), or auto",
                                    op.name(),
                                    supporting(op)
                                ),
                            );
                        }
                    }
                    Some(AlgoChoice::Fixed(a))
                }
                None => {
                    self.err(
                        "workload.algorithm",
                        format!("{s:?}"),
                        format!("one of {algo_names}"),
                    );
                    None
                }
            },
        };
        let inter_host = {
            let s = w.inter_host.as_deref().unwrap_or("ring");
            match Algorithm::parse(s) {
                Some(
                    a @ (Algorithm::Ring
                    | Algorithm::Tree
                    | Algorithm::HalvingDoubling
                    | Algorithm::Sharp),
                ) => Some(a),
                _ => {
                    self.err(
                        "workload.inter_host",
                        format!("{s:?}"),
                        "one of ring, tree, halving_doubling, sharp",
                    );
                    None
                }
            }
        };
        let sizes = if let Some(list) = &w.sizes {
            if w.min_bytes.is_some() || w.max_bytes.is_some() || w.step_factor.is_some() {
                self.err("workload.sizes", "both `sizes` and min_bytes/max_bytes/step_factor", "either an explicit `sizes` list or a min_bytes/max_bytes/step_factor sweep, not both");
            }
            if list.is_empty() {
                self.err(
                    "workload.sizes",
                    "an empty list",
                    "at least one size such as \"1MiB\"",
                );
                None
            } else if list.len() > MAX_SIZES {
                self.err(
                    "workload.sizes",
                    format!("a list of {} sizes", list.len()),
                    format!("at most {MAX_SIZES} sizes (each is one simulation)"),
                );
                None
            } else {
                let mut out = Vec::new();
                let mut bad = false;
                for (i, q) in list.iter().enumerate() {
                    match self.size(&format!("workload.sizes.{i}"), Some(q), None, 1) {
                        Some(b) => out.push(b),
                        None => bad = true,
                    }
                }
                out.sort_unstable();
                out.dedup();
                (!bad).then_some(out)
            }
        } else {
            let min = self.size("workload.min_bytes", w.min_bytes.as_ref(), Some("1MiB"), 1);
            let max = self.size("workload.max_bytes", w.max_bytes.as_ref(), Some("1GiB"), 1);
            let f = w.step_factor.unwrap_or(2);
            if f < 2 {
                self.err(
                    "workload.step_factor",
                    f.to_string(),
                    "an integer factor ≥ 2 between sizes (nccl-tests -f)",
                );
                None
            } else {
                match (min, max) {
                    (Some(a), Some(b)) if a > b => {
                        self.err(
                            "workload.max_bytes",
                            crate::units::format_bytes(b),
                            format!(
                                "a size at least min_bytes ({})",
                                crate::units::format_bytes(a)
                            ),
                        );
                        None
                    }
                    (Some(a), Some(b)) => Some(size_sweep(a, b, f as u64)),
                    _ => None,
                }
            }
        };
        let chunk_bytes = self.size("workload.chunk", w.chunk.as_ref(), Some("512KiB"), 1);
        let dtype = {
            let s = w.dtype.as_deref().unwrap_or("float32");
            match DTYPES.iter().find(|d| d.0 == s) {
                Some(&(_, name, size)) => Some(Dtype { name, size }),
                None => {
                    self.err(
                        "workload.dtype",
                        format!("{s:?}"),
                        "one of float32, float16, bfloat16, float64, int32, int8",
                    );
                    None
                }
            }
        };
        let root = match (w.root, total_gpus) {
            (Some(r), Some(n)) if r < 0 || r as u64 >= n => {
                self.err(
                    "workload.root",
                    r.to_string(),
                    format!("a rank between 0 and {}", n - 1),
                );
                None
            }
            (r, _) => Some(r.unwrap_or(0) as u32),
        };
        let channels = match w.channels {
            None => Some(None),
            Some(c) if (1..=MAX_CHANNELS).contains(&c) => Some(Some(c as u32)),
            Some(c) => {
                self.err(
                    "workload.channels",
                    c.to_string(),
                    format!(
                        "a whole number of channels from 1 to {MAX_CHANNELS} (NCCL runs up to 64)"
                    ),
                );
                None
            }
        };
        let protocol = match w.protocol.as_deref().unwrap_or("auto") {
            "auto" => Some(None),
            p => match crate::collective::Protocol::parse(p) {
                Some(p) => Some(Some(p)),
                None => {
                    self.err(
                        "workload.protocol",
                        format!("{p:?}"),
                        "one of \"auto\", \"simple\", \"ll128\", \"ll\" (NCCL_PROTO)",
                    );
                    None
                }
            },
        };
        let step_latency = match &w.step_latency {
            None => Some(None),
            v => self
                .time("workload.step_latency", v.as_ref(), None)
                .map(Some),
        };
        let nvlink_step_latency = match &w.nvlink_step_latency {
            None => Some(None),
            v => self
                .time("workload.nvlink_step_latency", v.as_ref(), None)
                .map(Some),
        };
        Some(WorkloadSpec::Collective(CollectiveWorkload {
            op: op?,
            algorithm: algorithm?,
            inter_host: inter_host?,
            sizes: sizes?,
            chunk_bytes: chunk_bytes?,
            dtype: dtype?,
            root: root?,
            channels: channels?,
            pxn: w.pxn.unwrap_or(true),
            protocol: protocol?,
            step_latency: step_latency?,
            nvlink_step_latency: nvlink_step_latency?,
        }))
    }
}

impl RawWorkload {
    /// The collective keys this table sets.
    fn collective_keys(&self) -> Vec<&'static str> {
        [
            ("op", self.op.is_some()),
            ("algorithm", self.algorithm.is_some()),
            ("inter_host", self.inter_host.is_some()),
            ("sizes", self.sizes.is_some()),
            ("min_bytes", self.min_bytes.is_some()),
            ("max_bytes", self.max_bytes.is_some()),
            ("step_factor", self.step_factor.is_some()),
            ("chunk", self.chunk.is_some()),
            ("dtype", self.dtype.is_some()),
            ("root", self.root.is_some()),
            ("channels", self.channels.is_some()),
            ("pxn", self.pxn.is_some()),
            ("protocol", self.protocol.is_some()),
            ("step_latency", self.step_latency.is_some()),
            ("nvlink_step_latency", self.nvlink_step_latency.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }

    /// The traffic-pattern keys this table sets (`extra_flows` is checked on its own).
    fn traffic_keys(&self) -> Vec<&'static str> {
        [
            ("pattern", self.pattern.is_some()),
            ("bytes", self.bytes.is_some()),
            ("senders", self.senders.is_some()),
            ("receiver", self.receiver.is_some()),
            ("per_host", self.per_host.is_some()),
            ("cdf", self.cdf.is_some()),
            ("load", self.load.is_some()),
            ("duration", self.duration.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }

    /// The model keys (training, inference) this table sets.
    fn model_keys(&self) -> Vec<&'static str> {
        [
            ("preset", self.preset.is_some()),
            ("model", self.model.is_some()),
            ("parallel", self.parallel.is_some()),
            ("gpu", self.gpu.is_some()),
            ("inference", self.inference.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }
}

impl Validator<'_> {
    /// Refuses each of `keys` (set in `[workload]` but meaningless for this kind).
    fn refuse_workload_keys(&mut self, keys: &[&str], kind: &str, expected: &str) {
        for key in keys {
            self.err(
                &format!("workload.{key}"),
                format!("`{key}` with kind = {kind:?}"),
                expected,
            );
        }
    }

    fn traffic(&mut self, w: &RawWorkload, total_gpus: Option<u64>) -> Option<WorkloadSpec> {
        use crate::topology::GpuId;
        use crate::workload::traffic::{FlowSizeCdf, TrafficSpec};
        let collective = w.collective_keys();
        self.refuse_workload_keys(&collective, "traffic", "it only with kind = \"collective\"");
        let model = w.model_keys();
        self.refuse_workload_keys(
            &model,
            "traffic",
            "kind = \"training\" or \"inference\" to describe a model",
        );
        let n = total_gpus.unwrap_or(u64::MAX);
        let pattern = w.pattern.as_deref().unwrap_or("");
        let patterns = "one of \"incast\", \"permutation\", \"alltoall\", \"random\"";
        let allowed: &[&str] = match pattern {
            "incast" => &["bytes", "senders", "receiver"],
            "permutation" => &["bytes", "per_host"],
            "alltoall" => &["bytes"],
            "random" => &["cdf", "load", "duration"],
            "" => {
                self.err("workload.pattern", "nothing", patterns);
                return None;
            }
            other => {
                self.err("workload.pattern", format!("{other:?}"), patterns);
                return None;
            }
        };
        for (key, set) in [
            ("bytes", w.bytes.is_some()),
            ("senders", w.senders.is_some()),
            ("receiver", w.receiver.is_some()),
            ("per_host", w.per_host.is_some()),
            ("cdf", w.cdf.is_some()),
            ("load", w.load.is_some()),
            ("duration", w.duration.is_some()),
        ] {
            if set && !allowed.contains(&key) {
                self.err(
                    &format!("workload.{key}"),
                    format!("`{key}` with pattern {pattern:?}"),
                    format!("only {} for pattern {pattern:?}", allowed.join(", ")),
                );
            }
        }
        match pattern {
            "incast" => {
                let bytes = self.size("workload.bytes", w.bytes.as_ref(), Some("1MiB"), 1);
                let senders = self.count(
                    "workload.senders",
                    w.senders,
                    None,
                    1,
                    "the number of senders (N of N:1)",
                );
                let receiver = match w.receiver.unwrap_or(0) {
                    r if r < 0 || r as u64 >= n => {
                        self.err(
                            "workload.receiver",
                            r.to_string(),
                            format!("a GPU between 0 and {}", n.saturating_sub(1)),
                        );
                        None
                    }
                    r => Some(r as u32),
                };
                if let Some(s) = senders {
                    if s as u64 >= n {
                        self.err(
                            "workload.senders",
                            s.to_string(),
                            format!("fewer senders than GPUs ({n})"),
                        );
                        return None;
                    }
                }
                Some(WorkloadSpec::Traffic(TrafficSpec::Incast {
                    senders: senders?,
                    receiver: GpuId(receiver?),
                    bytes: bytes?,
                }))
            }
            "permutation" => {
                let bytes = self.size("workload.bytes", w.bytes.as_ref(), Some("1MiB"), 1)?;
                Some(WorkloadSpec::Traffic(TrafficSpec::Permutation {
                    bytes,
                    per_host: w.per_host.unwrap_or(false),
                    seed: 0,
                }))
            }
            "alltoall" => {
                let bytes = self.size("workload.bytes", w.bytes.as_ref(), Some("1MiB"), 1)?;
                Some(WorkloadSpec::Traffic(TrafficSpec::AllToAll { bytes }))
            }
            _ => {
                let cdf = match w.cdf.as_deref().unwrap_or("web_search") {
                    "web_search" => Some(FlowSizeCdf::web_search()),
                    "fb_hadoop" => Some(FlowSizeCdf::fb_hadoop()),
                    path => {
                        let base = std::path::Path::new(self.src.file)
                            .parent()
                            .unwrap_or(std::path::Path::new("."));
                        match crate::budget::read_text(
                            &base.join(path),
                            crate::budget::MAX_INPUT_BYTES,
                        ) {
                            Err(e) => {
                                self.err("workload.cdf", format!("{path:?} ({e})"), "web_search, fb_hadoop, or a readable CDF file of at most 64MiB (size and cumulative probability per line), relative to the scenario");
                                None
                            }
                            Ok(text) => match FlowSizeCdf::parse(&text) {
                                Ok(c) => Some(c),
                                Err(e) => {
                                    self.err("workload.cdf", format!("{path:?}: {}", e.message), "lines of `size_bytes cumulative_probability`, increasing, ending at 1");
                                    None
                                }
                            },
                        }
                    }
                };
                let load = w.load.map_or(0.5, RawNumber::as_f64);
                if !(load > 0.0 && load <= 1.0) {
                    self.err(
                        "workload.load",
                        load.to_string(),
                        "an offered load in (0, 1] of the link rate",
                    );
                    return None;
                }
                let duration =
                    self.time("workload.duration", w.duration.as_ref(), Some("100us"))?;
                if duration == SimTime::ZERO {
                    self.err("workload.duration", "0", "a duration above zero");
                    return None;
                }
                Some(WorkloadSpec::Traffic(TrafficSpec::RandomPairs {
                    cdf: cdf?,
                    load,
                    source_rate: Rate(0),
                    duration,
                    seed: 0,
                }))
            }
        }
    }

    fn packet_settings(
        &mut self,
        raw: &RawScenario,
        kind: Option<FabricKind>,
        link: Option<(Rate, SimTime, SimTime)>,
        max_packet: Option<u64>,
    ) -> Option<PacketSettings> {
        let f = &raw.fabric;
        let buffer = self.size("fabric.buffer", f.buffer.as_ref(), Some("128KiB"), 1);
        let shared_buffer = self.size(
            "fabric.shared_buffer",
            f.shared_buffer.as_ref(),
            Some("0"),
            0,
        );
        let alpha = f.shared_buffer_alpha.map_or(1.0, RawNumber::as_f64);
        if !(alpha.is_finite() && alpha > 0.0) {
            self.err(
                "fabric.shared_buffer_alpha",
                alpha.to_string(),
                "a positive dynamic-threshold factor such as 1.0",
            );
        }
        if shared_buffer.is_some_and(|b| b > 0) && kind == Some(FabricKind::InfiniBand) {
            self.err("fabric.shared_buffer", "a shared buffer on an InfiniBand fabric", "per-port buffers (credits advertise a port's own buffer); omit shared_buffer or use kind = \"roce\" or \"ethernet\"");
        }
        let lanes = match f.virtual_lanes.unwrap_or(2) {
            v if !(1..=8).contains(&v) => {
                self.err(
                    "fabric.virtual_lanes",
                    v.to_string(),
                    "between 1 and 8 virtual lanes",
                );
                None
            }
            v => Some(v as u8),
        };
        let tcp = match f.transport.as_deref() {
            None => Some(kind == Some(FabricKind::Ethernet)),
            Some("rdma") => Some(false),
            Some("tcp") => Some(true),
            Some(other) => {
                self.err(
                    "fabric.transport",
                    format!("{other:?}"),
                    "\"rdma\" or \"tcp\"",
                );
                None
            }
        };
        let tcp_packet_overhead = self.time(
            "fabric.tcp_packet_overhead",
            f.tcp_packet_overhead.as_ref(),
            Some("1us"),
        );
        let tcp_jitter = self.time("fabric.tcp_jitter", f.tcp_jitter.as_ref(), Some("500ns"));
        let window = self.size("fabric.window", f.window.as_ref(), Some("512KiB"), 1);
        let ack_every = self.count(
            "fabric.ack_every",
            f.ack_every,
            Some(4),
            1,
            "packets per ACK",
        );
        let rto = self.time("fabric.rto", f.rto.as_ref(), Some("1.048576ms"));
        if rto == Some(SimTime::ZERO) {
            self.err(
                "fabric.rto",
                "0",
                "a retransmission timeout above zero, such as \"1ms\"",
            );
        }
        let flowlet_gap = self.time("fabric.flowlet_gap", f.flowlet_gap.as_ref(), Some("100us"));
        if flowlet_gap == Some(SimTime::ZERO) {
            self.err(
                "fabric.flowlet_gap",
                "0",
                "an idle gap above zero, such as \"100us\"",
            );
        }
        let sim = &raw.simulation;
        let sample_interval = self.time(
            "simulation.sample_interval",
            sim.sample_interval.as_ref(),
            Some("0"),
        );
        let time_limit = self.time(
            "simulation.time_limit",
            sim.time_limit.as_ref(),
            Some("60s"),
        );
        // a run that may not advance past time zero can only fail
        let time_limit = match time_limit {
            Some(SimTime::ZERO) => {
                self.err(
                    "simulation.time_limit",
                    "0 (a run that stops before anything moves)",
                    "a positive simulated time such as \"60s\"",
                );
                None
            }
            t => t,
        };
        // A buffer must hold at least one full packet, or nothing can ever move.
        let mtu = match &f.mtu {
            Some(RawQuantity::Str(m)) => parse_size(m).ok(),
            Some(RawQuantity::Int(i)) if *i > 0 => Some(*i as u64),
            _ => f
                .preset
                .as_deref()
                .and_then(presets::fabric)
                .and_then(|p| parse_size(p.mtu).ok())
                .or(Some(4096)),
        };
        if let (Some(b), Some(m)) = (buffer, mtu) {
            let need = m + f.header_bytes.unwrap_or(0).max(0) as u64;
            if b < need {
                self.err(
                    "fabric.buffer",
                    crate::units::format_bytes(b),
                    format!("a buffer of at least one packet ({need} bytes: MTU + header)"),
                );
                return None;
            }
        }
        let deadlock_timeout = self.time(
            "simulation.deadlock_timeout",
            sim.deadlock_timeout.as_ref(),
            Some("10ms"),
        );
        if deadlock_timeout == Some(SimTime::ZERO) {
            self.err(
                "simulation.deadlock_timeout",
                "0",
                "a watchdog period above zero, such as \"1ms\"",
            );
        }
        let (pfc, ecn, cc) = self.congestion_settings(raw, kind, buffer?, link, max_packet?)?;
        let pfc_pause_quanta = self.count(
            "fabric.pfc_pause_quanta",
            f.pfc_pause_quanta,
            Some(0),
            0,
            "pause quanta per PAUSE frame, 0 (until RESUME) to 65535",
        );
        if pfc_pause_quanta.is_some_and(|q| q > 65535) {
            self.err(
                "fabric.pfc_pause_quanta",
                pfc_pause_quanta.unwrap_or(0).to_string(),
                "at most 65535 quanta (a 16-bit field of the PAUSE frame, IEEE 802.1Qbb)",
            );
        }
        Some(PacketSettings {
            deadlock_timeout: deadlock_timeout?,
            pfc,
            pfc_pause_quanta: pfc_pause_quanta?,
            ecn,
            cc,
            buffer: buffer?,
            shared_buffer: shared_buffer?,
            shared_buffer_alpha: alpha,
            virtual_lanes: lanes?,
            vl_escalation: f.vl_escalation.unwrap_or(false),
            cut_through: f.cut_through.unwrap_or(false),
            tcp: tcp?,
            tcp_packet_overhead: tcp_packet_overhead?,
            tcp_jitter: tcp_jitter?,
            window: window?,
            ack_every: ack_every?,
            rto: rto?,
            flowlet_gap: flowlet_gap?,
            sample_interval: sample_interval?,
            time_limit: time_limit?,
        })
    }
}

impl Validator<'_> {
    /// PFC, ECN and congestion control: defaults per fabric kind, thresholds
    /// checked against the buffer and the link's bandwidth-delay product.
    #[allow(clippy::type_complexity)]
    fn congestion_settings(
        &mut self,
        raw: &RawScenario,
        kind: Option<FabricKind>,
        buffer: u64,
        link: Option<(Rate, SimTime, SimTime)>,
        max_packet: u64,
    ) -> Option<(
        Option<(u64, u64, u64)>,
        Option<(u64, u64, f64)>,
        crate::mechanism::CongestionControl,
    )> {
        use crate::mechanism::{pfc_headroom_needed, CongestionControl};
        let f = &raw.fabric;
        let roce = kind == Some(FabricKind::Roce);
        let ib = kind == Some(FabricKind::InfiniBand);
        let mut ok = true;
        // PFC: on by default for RoCE (what a RoCEv2 deployment runs).
        let pfc_on = f.pfc.unwrap_or(roce);
        if pfc_on && ib {
            self.err("fabric.pfc", "true on an InfiniBand fabric", "no PFC: InfiniBand is lossless through credits; use kind = \"roce\" or \"ethernet\" for PFC");
            ok = false;
        }
        let need = link.map(|(r, l, f)| pfc_headroom_needed(r, l, f, max_packet as u32));
        let pfc = if pfc_on && !ib {
            let default_headroom = need.unwrap_or(0).div_ceil(1024) * 1024;
            let headroom = self.size(
                "fabric.pfc_headroom",
                f.pfc_headroom.as_ref(),
                Some(&default_headroom.to_string()),
                0,
            )?;
            let default_xoff = buffer.saturating_sub(headroom).max(max_packet);
            let xoff = self.size(
                "fabric.pfc_xoff",
                f.pfc_xoff.as_ref(),
                Some(&default_xoff.to_string()),
                1,
            )?;
            let default_xon = xoff
                .saturating_sub(2 * max_packet)
                .max(max_packet.min(xoff));
            let xon = self.size(
                "fabric.pfc_xon",
                f.pfc_xon.as_ref(),
                Some(&default_xon.to_string()),
                0,
            )?;
            if let (Some(need), Some((r, l, fwd))) = (need, link) {
                if headroom < need {
                    self.err(
                        "fabric.pfc_headroom",
                        crate::units::format_bytes(headroom),
                        format!(
                            "at least {need} bytes: what arrives while a PAUSE takes effect on a {r} link of {l} latency into a {fwd} switch pipeline ((2 x latency + pipeline) x rate + 2 x (MTU + header) + 64)"
                        ),
                    );
                    ok = false;
                }
            }
            if xoff < max_packet {
                self.err(
                    "fabric.pfc_xoff",
                    crate::units::format_bytes(xoff),
                    format!("at least one packet ({max_packet} bytes)"),
                );
                ok = false;
            } else if xoff.saturating_add(headroom) > buffer {
                self.err(
                    "fabric.pfc_xoff",
                    crate::units::format_bytes(xoff),
                    format!(
                        "XOFF + headroom ({}) within fabric.buffer ({} per port and priority)",
                        crate::units::format_bytes(headroom),
                        crate::units::format_bytes(buffer)
                    ),
                );
                ok = false;
            }
            if xon > xoff {
                self.err(
                    "fabric.pfc_xon",
                    crate::units::format_bytes(xon),
                    format!("at most XOFF ({})", crate::units::format_bytes(xoff)),
                );
                ok = false;
            }
            Some((xoff, xon, headroom))
        } else {
            None
        };
        // Congestion control: DCQCN on RoCE; DCTCP on Ethernet when ECN is on.
        let ecn_on = f.ecn.unwrap_or(roce || f.cc.as_deref() == Some("dctcp"));
        let cc_name = f.cc.as_deref().unwrap_or(if roce {
            "dcqcn"
        } else if kind == Some(FabricKind::Ethernet) && ecn_on {
            "dctcp"
        } else {
            "none"
        });
        let dctcp = cc_name == "dctcp";
        let ecn = if ecn_on {
            // DCQCN: RED between buffer/16 and buffer/2 with Pmax 0.2 (the
            // probability HPCC's run.py uses; its Kmin/Kmax assume 100+ MB
            // shared buffers, so they are scaled to this buffer). DCTCP: a
            // step at K = buffer/4 (Kmin = Kmax, Pmax = 1; Alizadeh et al. 2010).
            let (dmin, dmax, dp) = if dctcp {
                (buffer / 4, buffer / 4, 1.0)
            } else {
                (buffer / 16, buffer / 2, 0.2)
            };
            let kmin = self.size(
                "fabric.ecn_kmin",
                f.ecn_kmin.as_ref(),
                Some(&dmin.to_string()),
                0,
            )?;
            let kmax = self.size(
                "fabric.ecn_kmax",
                f.ecn_kmax.as_ref(),
                Some(&dmax.to_string()),
                0,
            )?;
            let pmax = f.ecn_pmax.map_or(dp, RawNumber::as_f64);
            if kmax < kmin {
                self.err(
                    "fabric.ecn_kmax",
                    crate::units::format_bytes(kmax),
                    format!("at least ecn_kmin ({})", crate::units::format_bytes(kmin)),
                );
                ok = false;
            }
            if !(pmax > 0.0 && pmax <= 1.0) {
                self.err(
                    "fabric.ecn_pmax",
                    pmax.to_string(),
                    "a marking probability in (0, 1], such as 0.2",
                );
                ok = false;
            }
            Some((kmin, kmax, pmax))
        } else {
            None
        };
        let cc = match cc_name {
            "none" => CongestionControl::None,
            "dctcp" => {
                let g = f.dctcp_g.map_or(1.0 / 16.0, RawNumber::as_f64);
                if !(g > 0.0 && g <= 1.0) {
                    self.err(
                        "fabric.dctcp_g",
                        g.to_string(),
                        "a gain in (0, 1], such as 0.0625",
                    );
                    ok = false;
                }
                CongestionControl::Dctcp { g }
            }
            "dcqcn" => {
                let line = link.map_or(Rate::gbps(400), |(r, _, _)| r);
                CongestionControl::Dcqcn(self.dcqcn(f.dcqcn.as_ref(), line)?)
            }
            other => {
                self.err(
                    "fabric.cc",
                    format!("{other:?}"),
                    "one of \"dcqcn\", \"dctcp\", \"none\"",
                );
                return None;
            }
        };
        if cc != CongestionControl::None && ecn.is_none() {
            self.err(
                "fabric.cc",
                format!("{cc_name:?} with ecn = false"),
                "ECN marking to react to: set ecn = true, or cc = \"none\"",
            );
            ok = false;
        }
        if f.dcqcn.is_some() && !matches!(cc, CongestionControl::Dcqcn(_)) {
            self.err(
                "fabric.dcqcn",
                format!("DCQCN parameters with cc = {cc_name:?}"),
                "cc = \"dcqcn\" (or remove [fabric.dcqcn])",
            );
            ok = false;
        }
        ok.then_some((pfc, ecn, cc))
    }

    fn dcqcn(
        &mut self,
        raw: Option<&RawDcqcn>,
        line: Rate,
    ) -> Option<crate::mechanism::DcqcnParams> {
        let d = crate::mechanism::DcqcnParams::for_line_rate(line);
        let empty = RawDcqcn::default();
        let r = raw.unwrap_or(&empty);
        let g = r.g.map_or(d.g, RawNumber::as_f64);
        let initial_alpha = r.initial_alpha.map_or(d.initial_alpha, RawNumber::as_f64);
        if !(g > 0.0 && g <= 1.0) {
            self.err(
                "fabric.dcqcn.g",
                g.to_string(),
                "a gain in (0, 1], such as 0.00390625 (1/256)",
            );
        }
        if !(0.0..=1.0).contains(&initial_alpha) {
            self.err(
                "fabric.dcqcn.initial_alpha",
                initial_alpha.to_string(),
                "an α in [0, 1]",
            );
        }
        let us = |t: SimTime| format!("{}ns", t.0 / 1000);
        let alpha_interval = self.time(
            "fabric.dcqcn.alpha_interval",
            r.alpha_interval.as_ref(),
            Some(&us(d.alpha_interval)),
        );
        let rate_increase_interval = self.time(
            "fabric.dcqcn.rate_increase_interval",
            r.rate_increase_interval.as_ref(),
            Some(&us(d.rate_increase_interval)),
        );
        let cnp_interval = self.time(
            "fabric.dcqcn.cnp_interval",
            r.cnp_interval.as_ref(),
            Some(&us(d.cnp_interval)),
        );
        let byte_counter = self.size(
            "fabric.dcqcn.byte_counter",
            r.byte_counter.as_ref(),
            Some(&d.byte_counter.to_string()),
            1,
        );
        let fast_recovery_steps = self.count(
            "fabric.dcqcn.fast_recovery_steps",
            r.fast_recovery_steps,
            Some(d.fast_recovery_steps as i64),
            0,
            "fast-recovery stages F",
        );
        let bps = |x: Rate| format!("{}bps", x.0);
        let rate_ai = self.rate(
            "fabric.dcqcn.rate_ai",
            r.rate_ai.as_ref(),
            Some(&bps(d.rate_ai)),
        );
        let rate_hai = self.rate(
            "fabric.dcqcn.rate_hai",
            r.rate_hai.as_ref(),
            Some(&bps(d.rate_hai)),
        );
        let min_rate = self.rate(
            "fabric.dcqcn.min_rate",
            r.min_rate.as_ref(),
            Some(&bps(d.min_rate)),
        );
        for (k, v) in [
            ("fabric.dcqcn.alpha_interval", alpha_interval),
            (
                "fabric.dcqcn.rate_increase_interval",
                rate_increase_interval,
            ),
        ] {
            if v == Some(SimTime::ZERO) {
                self.err(k, "0", "a period above zero, such as \"55us\"");
                return None;
            }
        }
        if !(g > 0.0 && g <= 1.0 && (0.0..=1.0).contains(&initial_alpha)) {
            return None;
        }
        Some(crate::mechanism::DcqcnParams {
            g,
            alpha_interval: alpha_interval?,
            rate_increase_interval: rate_increase_interval?,
            byte_counter: byte_counter?,
            fast_recovery_steps: fast_recovery_steps?,
            rate_ai: rate_ai?,
            rate_hai: rate_hai?,
            min_rate: min_rate?,
            cnp_interval: cnp_interval?,
            initial_alpha,
        })
    }
}

fn supporting(op: CollectiveOp) -> String {
    Algorithm::ALL
        .into_iter()
        .filter(|&a| crate::collective::supports(a, op))
        .map(Algorithm::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sizes from `min` to `max` multiplying by `factor` (nccl-tests `-b -e -f`).
pub fn size_sweep(min: u64, max: u64, factor: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = min.max(1);
    while s <= max {
        v.push(s);
        match s.checked_mul(factor.max(2)) {
            Some(n) => s = n,
            None => break,
        }
    }
    v
}

/// Every leaf key the file sets, dotted, in file order.
pub fn keys_set(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(tree) = toml::de::DeTable::parse(text) {
        collect_keys(tree.get_ref(), "", &mut out);
    }
    out
}

fn collect_keys(t: &toml::de::DeTable, prefix: &str, out: &mut Vec<String>) {
    let mut items: Vec<_> = t.iter().collect();
    items.sort_by_key(|(k, _)| k.span().start);
    for (k, v) in items {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        match v.get_ref() {
            toml::de::DeValue::Table(sub) => collect_keys(sub, &path, out),
            // an array of tables (`[[faults]]`) is one entry per table, each key
            // its own setting (`faults.1.bit_error_rate`); an array of values
            // (`sizes = [..]`) is one setting
            toml::de::DeValue::Array(items)
                if !items.is_empty()
                    && items
                        .iter()
                        .all(|i| matches!(i.get_ref(), toml::de::DeValue::Table(_))) =>
            {
                for (i, item) in items.iter().enumerate() {
                    if let toml::de::DeValue::Table(sub) = item.get_ref() {
                        collect_keys(sub, &format!("{path}.{i}"), out);
                    }
                }
            }
            _ => out.push(path),
        }
    }
}

impl Scenario {
    /// The cluster as the topology sees it, with the host-staged path folded into
    /// the PCIe hop when GPUDirect is off: the data crosses host memory, so the
    /// GPU↔NIC hop runs at the slower of PCIe and the copy, and pays the copy latency.
    pub fn effective_cluster(&self) -> ClusterSpec {
        let mut c = self.cluster.clone();
        if !self.gpu_direct {
            c.pcie_rate = c.pcie_rate.min(self.host_copy_rate);
            c.pcie_latency += self.host_copy_latency;
        }
        c
    }

    /// Builds the topology `fidelity` runs on ([`Scenario::build_topology_for`]),
    /// recording in `usage` the cluster, topology and link keys it consumes.
    ///
    /// # Errors
    /// Cannot fail for a validated scenario; the error is kept for API honesty.
    pub fn build_topology_used(
        &self,
        fidelity: Fidelity,
        usage: &mut usage::Usage,
    ) -> Result<crate::topology::Topology, crate::topology::TopologyError> {
        usage.read_all(&["cluster.preset", "cluster.nodes", "cluster.gpus_per_node"]);
        // the network: NICs, the PCIe hop to them, links, switches, packets
        let network = self.cluster.hosts > 1;
        for key in [
            "cluster.nics_per_node",
            "cluster.pcie_bandwidth",
            "cluster.pcie_latency",
            "topology",
            "fabric.preset",
            "fabric.link_rate",
            "fabric.link_latency",
            "fabric.switch_latency",
            "fabric.mtu",
            "fabric.header_bytes",
        ] {
            usage.read_if(key, network, || {
                "with one node no traffic leaves it: the NICs, their PCIe hop and the network carry nothing".into()
            });
        }
        // NVLink is read by the workloads whose transfers cross it
        // (`run::read_collective_keys`, the model workloads)
        if self.cluster.gpus_per_host == 1 {
            for key in [
                "cluster.nvlink_bandwidth",
                "cluster.nvlink_latency",
                "cluster.nvlink_efficiency",
            ] {
                usage.skip(key, || {
                    "with one GPU per node no traffic crosses NVLink".into()
                });
            }
        }
        usage.read_if("fabric.nic_efficiency", network, || {
            "with one node no traffic crosses a NIC".into()
        });
        usage.read_if("fabric.qps_per_connection", network, || {
            "with one node no connection crosses the network".into()
        });
        // the other fidelities fold the host-staged copy into the PCIe hop here;
        // the packet level reads it with its own settings
        usage.read_if("cluster.gpu_direct", network, || {
            "with one node no traffic crosses a NIC, directly or through host memory".into()
        });
        if fidelity != Fidelity::Packet && network {
            for key in ["cluster.host_copy_bandwidth", "cluster.host_copy_latency"] {
                usage.read_if(key, !self.gpu_direct, || {
                    "the host-staged copy applies only with gpu_direct = false".into()
                });
            }
        }
        if let Some(why) = self.no_sharp_reason(fidelity) {
            usage.skip("fabric.sharp", || why.clone());
            usage.skip("fabric.sharp_groups", || why.clone());
        }
        if let Some(why) = self.no_nvls_reason(fidelity) {
            usage.skip("cluster.nvls", || why);
        }
        self.build_topology_for(fidelity)
    }

    /// The key whose value alone keeps the switches from reducing in a run at
    /// `fidelity` (`fabric.sharp = false` on InfiniBand, `sharp_groups = 0`, a
    /// non-InfiniBand `kind` with `sharp = true`): that key is what decides, so a
    /// run that could choose SHARP reads it.
    pub fn sharp_turned_off_by(&self, fidelity: Fidelity) -> Option<&'static str> {
        if self.cluster.hosts < 2 || fidelity == Fidelity::Packet {
            return None;
        }
        let ib = self.fabric.kind == FabricKind::InfiniBand;
        let groups = self.fabric.sharp_groups > 0;
        match (ib, self.fabric.sharp, groups) {
            (true, false, true) => Some("fabric.sharp"),
            (true, true, false) => Some("fabric.sharp_groups"),
            (false, true, true) => Some("fabric.kind"),
            _ => None,
        }
    }

    /// `cluster.nvls` when its value alone keeps the NVSwitches from reducing in
    /// a run at `fidelity`.
    pub fn nvls_turned_off_by(&self, fidelity: Fidelity) -> Option<&'static str> {
        (!self.nvls && self.cluster.gpus_per_host > 1 && fidelity != Fidelity::Packet)
            .then_some("cluster.nvls")
    }

    /// Why no switch reduces in a run at `fidelity`, or `None` when SHARP runs.
    pub fn no_sharp_reason(&self, fidelity: Fidelity) -> Option<String> {
        if self.cluster.hosts < 2 {
            Some("with one node there is no network to reduce in".into())
        } else if fidelity == Fidelity::Packet {
            Some("SHARP is modeled at the analytical and flow fidelities; the packet level has no switch endpoints, so SHARP algorithms fall back to ring".into())
        } else if self.fabric.kind != FabricKind::InfiniBand {
            Some(format!(
                "SHARP is an InfiniBand switch feature; on a {} fabric the switches do not reduce",
                self.fabric.kind.name()
            ))
        } else if !self.fabric.sharp {
            Some("the switches do not reduce (set fabric.sharp = true on an InfiniBand fabric, fabric.sharp_groups ≥ 1)".into())
        } else if self.fabric.sharp_groups == 0 {
            Some("fabric.sharp_groups = 0 leaves the switches no aggregation tree".into())
        } else {
            None
        }
    }

    /// Why the NVSwitches do not reduce in a run at `fidelity`, or `None` when
    /// NVLS runs.
    pub fn no_nvls_reason(&self, fidelity: Fidelity) -> Option<String> {
        if self.cluster.gpus_per_host == 1 {
            Some("with one GPU per node there is nothing for the NVSwitch to reduce".into())
        } else if fidelity == Fidelity::Packet {
            Some("NVLS is modeled at the analytical and flow fidelities; the packet level has no switch endpoints, so nvls falls back to ring".into())
        } else if !self.nvls {
            Some("the NVSwitches do not reduce (cluster.nvls = false)".into())
        } else {
            None
        }
    }

    /// Builds the topology `fidelity` runs on: the packet level models the
    /// host-staged path itself, the others fold it into the PCIe hop.
    ///
    /// # Errors
    /// Cannot fail for a validated scenario; the error is kept for API honesty.
    pub fn build_topology_for(
        &self,
        fidelity: Fidelity,
    ) -> Result<crate::topology::Topology, crate::topology::TopologyError> {
        if fidelity != Fidelity::Packet {
            return self.build_topology();
        }
        // the packet level has no switch endpoints: SHARP and NVLS fall back to
        // ring there
        let mut t = crate::topology::build(&self.cluster, &self.fabric.links, &self.topology)?;
        t.set_network_efficiency(self.fabric.efficiency());
        self.derate(&mut t);
        Ok(t)
    }

    /// Builds the topology of this scenario, with header overhead applied.
    ///
    /// # Errors
    /// Cannot fail for a validated scenario; the error is kept for API honesty.
    pub fn build_topology(
        &self,
    ) -> Result<crate::topology::Topology, crate::topology::TopologyError> {
        let mut t = crate::topology::build(
            &self.effective_cluster(),
            &self.fabric.links,
            &self.topology,
        )?;
        t.set_network_efficiency(self.fabric.efficiency());
        t.set_sharp(self.fabric.sharp_active());
        t.set_sharp_groups(self.fabric.sharp_groups);
        t.set_nvls(self.nvls);
        self.derate(&mut t);
        Ok(t)
    }

    /// Runs the NVLink links at `cluster.nvlink_efficiency` of their rate and the
    /// NIC links at `fabric.nic_efficiency` (what NCCL's kernels and GPUDirect RDMA
    /// reach on real hardware, at every fidelity alike), and gives connections
    /// `fabric.qps_per_connection` queue pairs.
    fn derate(&self, t: &mut crate::topology::Topology) {
        t.derate_nvlink(self.nvlink_efficiency);
        t.derate_nics(self.fabric.nic_efficiency);
        t.set_qps_per_connection(self.fabric.qps_per_connection);
    }

    /// Total GPUs.
    pub fn num_gpus(&self) -> u32 {
        self.cluster.hosts * self.cluster.gpus_per_host
    }
}

/// Σ over the model's layers of `secs(l)`, in O(1): layer l is MoE when
/// `(l + 1) % moe_every == 0` (so `layers / moe_every` of them), every other layer
/// is dense and costs what layer 0 does.
fn over_layers(m: &workload::ModelSpec, secs: impl Fn(u64) -> f64) -> f64 {
    let every = m.moe_every.max(1);
    let moe = if m.experts > 1 { m.layers / every } else { 0 };
    let dense = m.layers - moe;
    let mut t = 0.0;
    if moe > 0 {
        t += moe as f64 * secs(every - 1);
    }
    if dense > 0 {
        t += dense as f64 * secs(0);
    }
    t
}

/// About one GPU's compute in a training step, seconds: its pipeline stage's
/// share of the layers, forward and backward, and the output head (forward and
/// backward), for every micro-batch.
fn training_compute_secs(t: &TrainingSpec) -> f64 {
    use crate::workload::training::{head_time, layer_times};
    let layers = over_layers(&t.model, |l| {
        layer_times(t, l)
            .iter()
            .map(|x| x.as_secs_f64())
            .sum::<f64>()
    });
    let head = 3.0 * head_time(t).as_secs_f64();
    t.micro_batches() as f64 * (layers / f64::from(t.plan.pp.max(1)) + head)
}

/// About the compute of an inference batch on one GPU of each stage, seconds:
/// the prefill of every request's prompt, then `output_max` decode steps of every
/// request at the longest context, through all layers (the stages run in turn).
fn inference_compute_secs(i: &InferenceSpec) -> f64 {
    use crate::workload::{compute_time, layer_cost};
    let m = &i.model;
    let tp = i.plan.tp.max(1);
    let pass = |tokens: f64, ctx: f64| {
        over_layers(m, |l| {
            let c = layer_cost(m, l, tokens, ctx, tp);
            compute_time(&i.gpu, m, c.attn_flops, c.attn_weight_bytes).as_secs_f64()
                + compute_time(&i.gpu, m, c.mlp_flops, c.mlp_weight_bytes).as_secs_f64()
        })
    };
    let requests = i.requests as f64;
    let prompt = i.prompt_tokens as f64;
    pass(requests * prompt, prompt)
        + i.output_max as f64 * pass(requests, prompt + i.output_max as f64)
}
