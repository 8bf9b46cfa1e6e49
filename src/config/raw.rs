//! The scenario file as written: one serde type per table, every field
//! optional, so that a mistake becomes a located diagnostic in validation
//! rather than a serde error that stops at the first problem. This is the one
//! place that mirrors the file format; checked types live beside the rules
//! that make them (`cluster.rs`, `fabric.rs`, …).

use serde::Deserialize;

use super::workload;

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
    pub(super) fn as_f64(self) -> f64 {
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
    pub(super) fn shown(&self) -> String {
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
    /// Topology file (`kind = "file"`), relative to the scenario's directory.
    pub file: Option<String>,
    /// Identical copies of the switch fabric, one NIC port in each
    /// (leaf_spine, fat_tree, rail_optimized).
    pub planes: Option<i64>,
    /// Every NIC port on two ToRs (leaf_spine, fat_tree).
    pub dual_tor: Option<bool>,
}

/// `[fabric]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFabric {
    /// A fabric preset name.
    pub preset: Option<String>,
    /// `infiniband`, `roce` or `ethernet`.
    pub kind: Option<String>,
    /// Rate of the host links (NIC ↔ edge switch), and of every tier not set.
    pub link_rate: Option<RawQuantity>,
    /// Rate of leaf ↔ spine (edge ↔ aggregation) links and dragonfly local links.
    pub uplink_rate: Option<RawQuantity>,
    /// Rate of a 3-tier fat-tree's aggregation ↔ core links.
    pub spine_rate: Option<RawQuantity>,
    /// Rate of a dragonfly's global links.
    pub global_rate: Option<RawQuantity>,
    /// Per-node NIC rates (`[[fabric.nic_overrides]]`).
    pub nic_overrides: Option<Vec<RawNicOverride>>,
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
    /// Packet level: loss recovery, `go-back-n` (RDMA's default), `selective-repeat`, `go-back-0` or `tcp` (the TCP transport's default).
    pub loss_recovery: Option<String>,
    /// Packet level, selective repeat: IRN's short timeout (few packets outstanding).
    pub rto_low: Option<RawQuantity>,
    /// Packet level, TCP: TSO segment size (the CPU cost is paid once per segment; 0 = per packet).
    pub tcp_tso_bytes: Option<RawQuantity>,
    /// Packet level, TCP loss recovery: the RFC 6298 timer's minimum RTO.
    pub tcp_min_rto: Option<RawQuantity>,
    /// Packet level, TCP loss recovery: the RFC 6298 timer's maximum RTO.
    pub tcp_max_rto: Option<RawQuantity>,
    /// Packet level, `cc = "newreno"` or `"cubic"`: first congestion window, segments.
    pub tcp_initial_window: Option<i64>,
    /// Packet level, TCP loss recovery: the receiver's delayed-ACK timer (0 = off, an ACK per segment).
    pub tcp_delayed_ack: Option<RawQuantity>,
    /// Packet level, TCP loss recovery: SACK blocks and RFC 6675 loss recovery. Default: true.
    pub tcp_sack: Option<bool>,
    /// Packet level, TCP loss recovery with SACK: RACK-TLP (RFC 8985). Default: true.
    pub tcp_rack: Option<bool>,
    /// Packet level, TCP loss recovery with SACK: D-SACK blocks (RFC 2883). Default: true.
    pub tcp_dsack: Option<bool>,
    /// Packet level, lossy links: trim a packet a full queue cannot take to its header.
    pub trimming: Option<bool>,
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
    /// Packet level, PFC: `static` (fixed XOFF/XON) or `dynamic` (XOFF = α × free shared buffer).
    pub pfc_threshold: Option<String>,
    /// Packet level, PFC with `pfc_threshold = "dynamic"`: α of the dynamic XOFF.
    pub pfc_alpha: Option<RawNumber>,
    /// Packet level, PFC: headroom pool per switch shared by its ingress lanes (0 = per-port headroom).
    pub pfc_headroom_pool: Option<RawQuantity>,
    /// Packet level, PFC: watchdog period (a lane paused longer drops instead; 0 = off).
    pub pfc_watchdog: Option<RawQuantity>,
    /// Packet level, PFC: how long a lane the watchdog fired on drops before
    /// honouring PAUSE again (default `pfc_watchdog`).
    pub pfc_watchdog_restore: Option<RawQuantity>,
    /// Packet level: ECN marking at switch egress queues. Default: on for `roce`.
    pub ecn: Option<bool>,
    /// Packet level, ECN: queue depth below which nothing is marked.
    pub ecn_kmin: Option<RawQuantity>,
    /// Packet level, ECN: queue depth from which everything is marked.
    pub ecn_kmax: Option<RawQuantity>,
    /// Packet level, ECN: marking probability just below Kmax.
    pub ecn_pmax: Option<RawNumber>,
    /// Packet level, ECN: `dequeue` (default) or `enqueue`, where a switch marks.
    pub ecn_mark_at: Option<String>,
    /// Packet level: congestion control, `dcqcn`, `dctcp`, `swift`, `timely`, `hpcc`, `ib`, `newreno`, `cubic` or `none`.
    pub cc: Option<String>,
    /// Packet level, DCTCP: α gain g.
    pub dctcp_g: Option<RawNumber>,
    /// Packet level, DCQCN parameters.
    pub dcqcn: Option<RawDcqcn>,
    /// Packet level, Swift parameters.
    pub swift: Option<RawSwift>,
    /// Packet level, TIMELY parameters.
    pub timely: Option<RawTimely>,
    /// Packet level, HPCC parameters.
    pub hpcc: Option<RawHpcc>,
    /// Packet level, InfiniBand congestion control parameters (`[fabric.ib_cc]`).
    pub ib_cc: Option<RawIbCc>,
    /// Packet level: traffic classes (`[[fabric.classes]]`), class `i` on lane `i`.
    pub classes: Option<Vec<RawClass>>,
    /// Packet level: the class of ACKs and NACKs (default: the highest lane).
    pub ack_class: Option<String>,
    /// Packet level: the class of CNPs (default: the highest lane).
    pub cnp_class: Option<String>,
}

/// `[fabric.swift]` as written (Kumar et al. 2020 names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSwift {
    /// Queueing delay allowed above the path's base RTT.
    pub queue_target: Option<RawQuantity>,
    /// Additive increase per round trip, packets.
    pub ai: Option<RawNumber>,
    /// Multiplicative-decrease gain β.
    pub beta: Option<RawNumber>,
    /// Largest fraction of the window one cut removes.
    pub max_mdf: Option<RawNumber>,
    /// Flow-scaling range (extra target at the smallest windows).
    pub fs_range: Option<RawQuantity>,
    /// Smallest window, packets (below one: paced).
    pub min_cwnd: Option<RawNumber>,
}

/// `[fabric.timely]` as written (Mittal et al. 2015 names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTimely {
    /// T_low: below this round trip the rate only grows by δ.
    pub t_low: Option<RawQuantity>,
    /// T_high: above this round trip the rate is cut.
    pub t_high: Option<RawQuantity>,
    /// minRTT normalizing the gradient: a duration, or `"path"` (each queue
    /// pair's idle round trip).
    pub min_rtt: Option<RawQuantity>,
    /// EWMA gain α on RTT differences.
    pub alpha: Option<RawNumber>,
    /// Multiplicative-decrement factor β.
    pub beta: Option<RawNumber>,
    /// Additive increment δ, a rate.
    pub delta: Option<RawQuantity>,
    /// Completions with a gradient ≤ 0 in a row before hyper-active increase.
    pub hai_threshold: Option<RawNumber>,
    /// Completion event (segment), a size.
    pub seg_bytes: Option<RawQuantity>,
    /// When the rate is updated: `"completion"` (per segment, the paper) or
    /// `"rtt"` (once per round trip, the HPCC simulator).
    pub update: Option<String>,
}

/// `[fabric.hpcc]` as written (Li et al. 2019 names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHpcc {
    /// Target utilization η, a fraction.
    pub eta: Option<RawNumber>,
    /// Additive steps before a multiplicative update (maxStage).
    pub max_stage: Option<RawNumber>,
    /// Additive increase per round trip W_AI, a size in bytes.
    pub w_ai: Option<RawQuantity>,
    /// The base RTT T (default: each queue pair's idle round trip).
    pub base_rtt: Option<RawQuantity>,
}

/// `[fabric.ib_cc]` as written (IBA vol. 1 Annex A10 names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIbCc {
    /// Switch threshold: the spec's level 0–15 (a whole number) or a queue
    /// size with a unit (`"8KiB"`).
    pub threshold: Option<RawQuantity>,
    /// Switch `Marking_Rate`: mark one in every N + 1 eligible packets.
    pub marking_rate: Option<RawNumber>,
    /// Switch `Packet_Size`: smaller packets are not marked, a size.
    pub packet_size: Option<RawQuantity>,
    /// CA `CCTI_Increase`: CCTI steps per BECN.
    pub ccti_increase: Option<RawNumber>,
    /// CA `CCTI_Limit`: the largest CCTI.
    pub ccti_limit: Option<RawNumber>,
    /// CA `CCTI_Min`: the smallest CCTI.
    pub ccti_min: Option<RawNumber>,
    /// CA `CCTI_Timer`: spec units of 1.024 us (a whole number) or a duration.
    pub ccti_timer: Option<RawQuantity>,
}

/// One `[[fabric.classes]]` entry as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClass {
    /// Unique name flows and workloads refer to.
    pub name: Option<String>,
    /// Strict-priority level, 0..=7, higher served first (default 0).
    pub priority: Option<i64>,
    /// DWRR weight among the classes of its priority level, 1..=1000.
    pub weight: Option<i64>,
    /// Lossless under PFC (default true); false drops at the buffer limit.
    pub pfc: Option<bool>,
    /// ECN Kmin of this class's queues (default the fabric's).
    pub ecn_kmin: Option<RawQuantity>,
    /// ECN Kmax of this class's queues (default the fabric's).
    pub ecn_kmax: Option<RawQuantity>,
    /// ECN Pmax of this class's queues (default the fabric's).
    pub ecn_pmax: Option<RawNumber>,
}

/// One `[[fabric.nic_overrides]]` entry as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNicOverride {
    /// Node indices whose NICs run at `rate`.
    pub nodes: Option<Vec<i64>>,
    /// The NICs' line rate, e.g. "100Gbps".
    pub rate: Option<RawQuantity>,
}

/// `[fabric.dcqcn]` as written (Zhu et al. 2015 names).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDcqcn {
    /// `mellanox` (default) or `paper`: the parameter set the other keys override.
    pub profile: Option<String>,
    /// At most one rate cut per this period (`rate_reduce_monitor_period`).
    pub rate_decrease_interval: Option<RawQuantity>,
    /// On every cut R_T = R_C (`clamp_tgt_rate`).
    pub clamp_tgt_rate: Option<bool>,
    /// Fraction of R_C one cut leaves at least (`rpg_min_dec_fac` / 100).
    pub min_dec_fac: Option<RawNumber>,
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
    /// α set on a queue pair's first CNP.
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
    /// All-to-all: Zipf exponent of the per-rank receive shares (an all-to-allv).
    pub alltoall_skew: Option<f64>,
    /// All-to-all: a measured load per rank (an all-to-allv), normalized to shares.
    pub alltoall_load: Option<Vec<f64>>,
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
    /// Flow list (`kind = "flows"`): `[[workload.flows]]`, each flow with its
    /// dependencies.
    pub flows: Option<Vec<RawListedFlow>>,
    /// Packet level: the traffic class of the workload's transfers (default the first).
    pub class: Option<String>,
    /// Chakra traces (`kind = "chakra"`): a directory of `<prefix>.<rank>.et`
    /// files or a list of files (rank order), relative to the scenario.
    pub traces: Option<RawTraces>,
}

/// `workload.traces`: a directory or a list of files.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum RawTraces {
    /// `traces = "chakra/"`: every `<prefix>.<rank>.et` in it.
    Dir(String),
    /// `traces = ["a.0.et", "a.1.et"]`: rank r is the r-th file.
    Files(Vec<String>),
}

/// A flow's name in a flow list: a whole number (htsim's flow ids) or a string.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Hash)]
#[serde(untagged)]
pub enum RawFlowId {
    /// `id = 7`
    Number(i64),
    /// `id = "grad-0"`
    Name(String),
}

impl std::fmt::Display for RawFlowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RawFlowId::Number(n) => write!(f, "{n}"),
            RawFlowId::Name(s) => write!(f, "{s:?}"),
        }
    }
}

/// One entry of `[[workload.flows]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawListedFlow {
    /// The flow's name, unique in the list.
    pub id: RawFlowId,
    /// Source GPU.
    pub src: i64,
    /// Destination GPU.
    pub dst: i64,
    /// Payload bytes.
    pub bytes: RawQuantity,
    /// Earliest start (default 0); with dependencies, the later of the two.
    pub start: Option<RawQuantity>,
    /// Flows whose last byte must have arrived before this one starts.
    pub after: Option<Vec<RawFlowId>>,
    /// Flows whose last byte must have left its source before this one starts.
    pub after_sent: Option<Vec<RawFlowId>>,
    /// Packet level: its traffic class (default the workload's).
    pub class: Option<String>,
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
    /// Packet level: its traffic class (default the workload's).
    pub class: Option<String>,
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
    /// Most worker threads for the independent simulations of one scenario
    /// (default: the machine's cores).
    pub threads: Option<i64>,
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
    /// Several jobs sharing the fabric (`[[jobs]]`), instead of one `[workload]`.
    #[serde(default)]
    pub jobs: Vec<RawJob>,
}

/// One `[[jobs]]` entry as written: a workload on a subset of the nodes.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJob {
    /// Name shown in results (default `job<N>`).
    pub name: Option<String>,
    /// How many nodes the job takes (with `packed`, `spread` or `random`).
    pub nodes: Option<i64>,
    /// The nodes the job takes, by index (with `placement = "list"`).
    pub node_list: Option<Vec<i64>>,
    /// `packed`, `spread`, `random` or `list`.
    pub placement: Option<String>,
    /// When the job starts, from the start of the run, e.g. "20us".
    pub start: Option<RawQuantity>,
    /// `[jobs.workload]`: the same keys as `[workload]`.
    pub workload: Option<RawWorkload>,
}

impl RawWorkload {
    /// The collective keys this table sets.
    pub(super) fn collective_keys(&self) -> Vec<&'static str> {
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
            ("alltoall_skew", self.alltoall_skew.is_some()),
            ("alltoall_load", self.alltoall_load.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect()
    }

    /// The traffic-pattern keys this table sets (`extra_flows` is checked on its own).
    pub(super) fn traffic_keys(&self) -> Vec<&'static str> {
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
    pub(super) fn model_keys(&self) -> Vec<&'static str> {
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
