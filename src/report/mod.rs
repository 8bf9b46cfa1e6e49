//! What a run reports, in one schema for every fidelity, and its renderings:
//! terminal table ([`table`]), JSON (serde), CSV ([`csv`]), a self-contained HTML
//! page with SVG charts ([`html`], drawn by [`svg`]) and side-by-side comparisons
//! ([`compare`]).
//!
//! The detail sections ([`Report::fct_cdf`], [`Report::traffic_matrix`],
//! [`Report::link_timeline`], [`Report::series`]) are filled only when asked for
//! ([`crate::run::RunOptions::detail`]) and the run modeled them; absent, they are
//! left out of the JSON, so existing keys and documents are unchanged.

pub mod assemble;
pub mod compare;
pub mod csv;
pub mod html;
pub mod jobs;
pub mod svg;
pub mod table;
pub mod trace;
pub mod workload;

use serde::Serialize;

use crate::backend::{Counter, FabricCounters, LinkCounters, QpCounters, Series};
use crate::config::{Fidelity, IgnoredSetting};

/// One row per collective size, as nccl-tests prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveRow {
    /// Operation name.
    pub op: String,
    /// Algorithm that ran (after `auto`).
    pub algorithm: String,
    /// Size in bytes (nccl-tests meaning).
    pub bytes: u64,
    /// Elements of `dtype` (bytes / element size).
    pub count: u64,
    /// Element type name.
    #[serde(rename = "type")]
    pub dtype: String,
    /// Ranks in the communicator.
    pub ranks: u32,
    /// Time of the collective, microseconds.
    pub time_us: f64,
    /// Algorithm bandwidth: bytes / time, GB/s (10^9 bytes).
    #[serde(rename = "algbw_GBps")]
    pub algbw_gbps: f64,
    /// Bus bandwidth: algbw × nccl-tests factor, GB/s.
    #[serde(rename = "busbw_GBps")]
    pub busbw_gbps: f64,
    /// NCCL protocol of its steps (`simple`, `ll128`, `ll`; `simple` for
    /// algorithms without protocols).
    pub protocol: String,
    /// Parallel channels it ran on.
    pub channels: u32,
    /// What the busiest host link (a NIC's uplink) actually carried, wire
    /// bytes / time, GB/s: with SHARP or NVLS it is below busbw, with a
    /// protocol's flags above. `None` at the analytical fidelity, which builds
    /// no schedule, and on one host.
    #[serde(rename = "wirebw_GBps")]
    pub wirebw_gbps: Option<f64>,
    /// With `[[faults]]`: the same collective's time on the healthy fabric,
    /// microseconds (the faults' baseline). `None` without faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy_time_us: Option<f64>,
    /// With `[[faults]]`: the healthy fabric's busbw, GB/s. `None` without faults.
    #[serde(rename = "healthy_busbw_GBps", skip_serializing_if = "Option::is_none")]
    pub healthy_busbw_gbps: Option<f64>,
}

/// One flow of a flow list (`workload.kind = "flows"`), as it ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ListedFlowResult {
    /// Its id as written.
    pub id: String,
    /// Source GPU.
    pub src: u32,
    /// Destination GPU.
    pub dst: u32,
    /// Payload bytes.
    pub bytes: u64,
    /// When it started (its start time and dependencies met), microseconds.
    pub start_us: f64,
    /// When its last byte arrived, microseconds.
    pub end_us: f64,
    /// end − start, microseconds.
    pub fct_us: f64,
}

/// A fault a collective sweep or traffic pattern ran with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppliedFault {
    /// The fault's name.
    pub name: String,
    /// Its kind (`link_down`, `link_degraded`, `switch_down`).
    pub kind: String,
    /// When it starts, microseconds from the start of each run.
    pub at_us: f64,
}

/// Percentiles of flow completion times, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

/// Flow completion statistics over every transfer of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowStats {
    /// Number of transfers (flows).
    pub count: u64,
    /// Completion time percentiles, microseconds.
    pub fct_us: Percentiles,
    /// Slowdown (completion time / ideal time on an idle path) percentiles;
    /// `None` (JSON `null`) where the fidelity does not model it: at the
    /// analytical fidelity a transfer's time is its idle-path time, so its
    /// slowdown is 1 by construction ([`Fidelity::models`]).
    pub slowdown: Option<Percentiles>,
}

/// Fabric-wide counters of a run as reported: a counter the fidelity does not
/// model ([`Fidelity::models`]) is `None` — `null` in JSON, `n/a` in tables, an
/// empty cell in CSV, skipped by `compare` — never a zero that reads as measured.
/// The keys are those of [`FabricCounters`], present at every fidelity.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FabricReport {
    /// Payload bytes delivered to their destination GPU (every fidelity).
    pub bytes_delivered: u64,
    /// Payload bytes handed to the transport by sources, each byte once (every fidelity).
    pub bytes_sent: u64,
    /// Packets dropped (buffer overflow, corruption, link down); packet level.
    pub drops: Option<u64>,
    /// Of `drops`, packets a bit error corrupted; packet level.
    pub drops_corrupted: Option<u64>,
    /// Payload bytes in dropped packets; packet level.
    pub bytes_dropped: Option<u64>,
    /// Packets marked Congestion Experienced; packet level.
    pub ecn_marks: Option<u64>,
    /// PFC PAUSE frames sent; packet level.
    pub pfc_pause_frames: Option<u64>,
    /// Packets sent again by the transport; packet level.
    pub retransmitted_packets: Option<u64>,
    /// Largest egress queue seen anywhere, bytes; packet level.
    pub max_queue_bytes: Option<u64>,
    /// Time senders waited for InfiniBand credits, summed over ports, picoseconds; packet level.
    pub credit_stall_ps: Option<u64>,
    /// Congestion notification packets sent; packet level.
    pub cnps: Option<u64>,
    /// Retransmission timeouts fired; packet level.
    pub timeouts: Option<u64>,
    /// Data packets packet trimming cut to their header; packet level with
    /// `fabric.trimming`, else `None` (nothing trims).
    pub packets_trimmed: Option<u64>,
    /// Payload bytes trimming cut (resent by the transport, not dropped);
    /// as `packets_trimmed`.
    pub bytes_trimmed: Option<u64>,
    /// InfiniBand congestion control: data packets switches marked FECN;
    /// packet level with `cc = "ib"` only (`null` elsewhere, any fabric).
    pub fecn_marks: Option<u64>,
    /// InfiniBand congestion control: BECNs destinations returned; packet
    /// level with `cc = "ib"` only (`null` elsewhere, any fabric).
    pub becns: Option<u64>,
}

impl FabricReport {
    /// The counters `c` a backend at `fidelity` accumulated, with the ones it
    /// does not model left out.
    pub fn new(c: &FabricCounters, fidelity: Fidelity) -> FabricReport {
        let m = |counter: Counter, v: u64| fidelity.models(counter).then_some(v);
        FabricReport {
            bytes_delivered: c.bytes_delivered,
            bytes_sent: c.bytes_sent,
            drops: m(Counter::Drops, c.drops),
            drops_corrupted: m(Counter::DropsCorrupted, c.drops_corrupted),
            bytes_dropped: m(Counter::BytesDropped, c.bytes_dropped),
            ecn_marks: m(Counter::EcnMarks, c.ecn_marks),
            pfc_pause_frames: m(Counter::PfcPauseFrames, c.pfc_pause_frames),
            retransmitted_packets: m(Counter::RetransmittedPackets, c.retransmitted_packets),
            max_queue_bytes: m(Counter::MaxQueueBytes, c.max_queue_bytes),
            credit_stall_ps: m(Counter::CreditStall, c.credit_stall_ps),
            cnps: m(Counter::Cnps, c.cnps),
            timeouts: m(Counter::Timeouts, c.timeouts),
            packets_trimmed: c.trimmed.map(|t| t.packets),
            bytes_trimmed: c.trimmed.map(|t| t.payload_bytes),
            // modelled by the run's law, not by the fidelity alone
            fecn_marks: c.fecn_marks.filter(|_| fidelity == Fidelity::Packet),
            becns: c.becns.filter(|_| fidelity == Fidelity::Packet),
        }
    }
}

/// Counters of one directed link as reported (`links`, `links.csv`, with
/// `--links`): bytes and utilization at every fidelity that collects links (flow
/// and packet), the queue, drop, credit and pause counters only where the
/// fidelity models them ([`Fidelity::models`]), else `None` (JSON `null`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkReport {
    /// Link index in the topology.
    pub link: u32,
    /// Wire bytes sent (headers included at packet level).
    pub bytes: u64,
    /// Fraction of the run's makespan the link was busy.
    pub utilization: f64,
    /// Packets dropped at this link's egress queue; packet level.
    pub drops: Option<u64>,
    /// Largest egress queue, bytes; packet level.
    pub max_queue_bytes: Option<u64>,
    /// Time-averaged egress queue, bytes; packet level.
    pub avg_queue_bytes: Option<f64>,
    /// Time the sender waited for credits or was paused, picoseconds; packet level.
    pub stall_ps: Option<u64>,
    /// PFC: of `stall_ps`, time the sender's lanes were paused, picoseconds; packet level.
    pub paused_ps: Option<u64>,
    /// PFC: PAUSE frames the link's receiver sent to its sender; packet level.
    pub pause_frames: Option<u64>,
    /// Data packets the link's egress queue marked Congestion Experienced (ECN); packet level.
    pub ecn_marks: Option<u64>,
}

impl LinkReport {
    /// The counters `l` a backend at `fidelity` collected, with the ones it does
    /// not model left out.
    pub fn new(l: &LinkCounters, fidelity: Fidelity) -> LinkReport {
        let m = |counter: Counter| fidelity.models(counter);
        LinkReport {
            link: l.link,
            bytes: l.bytes,
            utilization: l.utilization,
            drops: m(Counter::Drops).then_some(l.drops),
            max_queue_bytes: m(Counter::MaxQueueBytes).then_some(l.max_queue_bytes),
            avg_queue_bytes: m(Counter::MaxQueueBytes).then_some(l.avg_queue_bytes),
            stall_ps: m(Counter::CreditStall).then_some(l.stall_ps),
            paused_ps: m(Counter::PfcPauseFrames).then_some(l.paused_ps),
            pause_frames: m(Counter::PfcPauseFrames).then_some(l.pause_frames),
            ecn_marks: m(Counter::EcnMarks).then_some(l.ecn_marks),
        }
    }
}

/// `v` as text, or `n/a` when the fidelity does not model it: how every table
/// prints a counter.
pub fn or_na<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| v.to_string())
}

/// The shape that was simulated.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TopologySummary {
    /// Shape name.
    pub shape: String,
    /// Hosts.
    pub hosts: u32,
    /// GPUs.
    pub gpus: u32,
    /// Network switches.
    pub switches: usize,
    /// Directed links (all kinds).
    pub links: usize,
    /// Network link classes (host, uplink, spine, local, global …) and their rates.
    pub tiers: Vec<TierSummary>,
    /// Oversubscription of each switch tier with links up: line rate in from
    /// below over line rate out above (1.0: non-blocking).
    pub oversubscription: Vec<TierOversubscription>,
}

/// One class of network links in a [`TopologySummary`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TierSummary {
    /// Class name: `host`, `uplink`, `spine`, `local`, `global` or `tier a-b`.
    pub name: String,
    /// Duplex links.
    pub links: usize,
    /// Slowest line rate, Gb/s.
    pub min_gbps: f64,
    /// Fastest line rate, Gb/s.
    pub max_gbps: f64,
}

/// The oversubscription of one switch tier in a [`TopologySummary`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TierOversubscription {
    /// Switch tier (0: edge).
    pub tier: u8,
    /// Line rate into the tier from below over line rate out of it above.
    pub ratio: f64,
}

impl TopologySummary {
    /// The summary of a built topology.
    pub fn of(topo: &crate::topology::Topology) -> TopologySummary {
        TopologySummary {
            shape: topo.shape.clone(),
            hosts: topo.hosts,
            gpus: topo.num_gpus(),
            switches: topo.num_switches(),
            links: topo.links.len(),
            tiers: topo
                .link_tiers()
                .into_iter()
                .map(|t| TierSummary {
                    name: t.name,
                    links: t.links,
                    min_gbps: t.min_rate.0 as f64 / 1e9,
                    max_gbps: t.max_rate.0 as f64 / 1e9,
                })
                .collect(),
            oversubscription: topo
                .oversubscription()
                .into_iter()
                .map(|(tier, ratio)| TierOversubscription { tier, ratio })
                .collect(),
        }
    }

    /// One line for a terminal: each link class with its count and rate, then
    /// each tier's oversubscription, e.g. `host 16 x 400Gbps, uplink 16 x
    /// 800Gbps; oversubscription tier 0 0.50:1`.
    pub fn tiers_line(&self) -> String {
        let rate = |g: f64| {
            if g >= 1.0 {
                format!("{}Gbps", (g * 1000.0).round() / 1000.0)
            } else {
                format!("{}Mbps", (g * 1e6).round() / 1000.0)
            }
        };
        let mut s = self
            .tiers
            .iter()
            .map(|t| {
                if t.min_gbps == t.max_gbps {
                    format!("{} {} x {}", t.name, t.links, rate(t.min_gbps))
                } else {
                    format!(
                        "{} {} x {}..{}",
                        t.name,
                        t.links,
                        rate(t.min_gbps),
                        rate(t.max_gbps)
                    )
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        if !self.oversubscription.is_empty() {
            s.push_str("; oversubscription ");
            s.push_str(
                &self
                    .oversubscription
                    .iter()
                    .map(|o| format!("tier {} {:.2}:1", o.tier, o.ratio))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        s
    }
}

/// Cost of the simulation itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimStats {
    /// Events processed (flow starts/ends, packets, …).
    pub events: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Events per wall-clock second.
    pub events_per_s: f64,
}

/// One point of the flow-completion-time CDF.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CdfPoint {
    /// Completion time, microseconds.
    pub fct_us: f64,
    /// Fraction of flows that completed within `fct_us`.
    pub fraction: f64,
}

/// Bytes sent between hosts, aggregated into groups of consecutive hosts so the
/// matrix is at most 64 × 64.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TrafficMatrix {
    /// Hosts in the cluster.
    pub hosts: u32,
    /// Consecutive hosts per cell (1 when the cluster has at most 64 hosts).
    pub hosts_per_cell: u32,
    /// `bytes[src group][dst group]`, payload bytes over the whole run (intra-host
    /// traffic lands on the diagonal).
    pub bytes: Vec<Vec<u64>>,
}

/// Utilization of the busiest links (longest busy time: bytes over rate) over time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkTimelineReport {
    /// Width of one time bucket, microseconds.
    pub bucket_us: f64,
    /// The runs (one per collective size) laid end to end: label and start, microseconds.
    pub segments: Vec<TimelineSegment>,
    /// The busiest links, busiest (longest busy time) first.
    pub links: Vec<LinkUtilization>,
}

/// Where one run starts on a concatenated timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TimelineSegment {
    /// What ran, e.g. `allreduce 1MiB`.
    pub label: String,
    /// Start, microseconds.
    pub start_us: f64,
}

/// One link's utilization per time bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkUtilization {
    /// Link index in the topology.
    pub link: u32,
    /// Human-readable endpoints, e.g. `nic h3.0 -> switch 12`.
    pub name: String,
    /// Payload bytes over the whole run.
    pub bytes: u64,
    /// Busy fraction of the link's effective rate in each bucket, 0..=1.
    pub utilization: Vec<f64>,
}

/// What one traffic class carried (packet level): class `i` rides lane `i`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClassReport {
    /// The class's name.
    pub name: String,
    /// Its strict-priority level.
    pub priority: u8,
    /// Its DWRR weight, if it shares its level.
    pub weight: Option<u32>,
    /// Lossless under PFC.
    pub lossless: bool,
    /// Payload bytes its receivers accepted.
    pub payload_delivered: u64,
    /// Its data packets the fabric dropped.
    pub data_drops: u64,
    /// PFC PAUSE frames sent for its lane.
    pub pause_frames: u64,
}

impl ClassReport {
    /// One row per class of `c`, with the lane counters `lanes`.
    pub fn of(
        c: &crate::mechanism::TrafficClasses,
        lanes: &crate::backend::LaneCounters,
    ) -> Vec<ClassReport> {
        c.classes
            .iter()
            .enumerate()
            .map(|(i, k)| ClassReport {
                name: k.name.clone(),
                priority: k.priority,
                weight: k.weight,
                lossless: k.lossless,
                payload_delivered: lanes.payload_delivered.get(i).copied().unwrap_or(0),
                data_drops: lanes.data_drops.get(i).copied().unwrap_or(0),
                pause_frames: lanes.pause_frames.get(i).copied().unwrap_or(0),
            })
            .collect()
    }
}

/// One paused link of a PFC deadlock cycle.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadlockHop {
    /// Link index in the topology.
    pub link: u32,
    /// Node the link leaves.
    pub from: u32,
    /// Node the link enters (the next hop's `from`).
    pub to: u32,
}

/// A deadlock that stopped the run: lanes paused by PFC (Hu et al., HotNets
/// 2016) or links out of credits (Dally & Seitz 1987) on a cycle of links, each
/// waiting for the next.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadlockReport {
    /// What froze: `"pfc"` (lanes paused by PFC) or `"credit"` (links out of
    /// InfiniBand credits).
    pub kind: crate::backend::DeadlockKind,
    /// When the watchdog declared it, microseconds of simulated time.
    pub detected_at_us: f64,
    /// Last transmission anywhere in the fabric, microseconds.
    pub stalled_since_us: f64,
    /// The cycle of blocked links (empty if the blocked links formed no cycle).
    pub cycle: Vec<DeadlockHop>,
    /// Which of the scenario's runs froze, when it has several: a collective
    /// size (`allreduce 1MiB`), or a training step / inference batch with every
    /// fault, healthy, or with one fault alone. Absent for a traffic pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub during: Option<String>,
    /// The phase it froze in: labels of the DAG's operations that had a task
    /// under way (e.g. `expert_all_to_all`), each once.
    pub ops_in_flight: Vec<String>,
}

/// The result of running one scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Fidelity that ran.
    pub fidelity: String,
    /// Seed.
    pub seed: u64,
    /// fabricsim version.
    pub version: String,
    /// FNV-1a hash of the scenario as validated, so two results can be matched to their inputs.
    pub scenario_hash: String,
    /// The simulated shape.
    pub topology: TopologySummary,
    /// One row per collective run.
    pub collectives: Vec<CollectiveRow>,
    /// Simulated time of the whole run (sum over a sweep's sizes), microseconds.
    pub makespan_us: f64,
    /// Flow completion statistics.
    pub flows: FlowStats,
    /// Fabric counters (sum over the runs); `None` where the fidelity does not model them.
    pub fabric: FabricReport,
    /// Per-link counters, busiest first (only with `--links`); `None` where the
    /// fidelity does not model them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkReport>,
    /// Per-queue-pair transport counters, most retransmissions first (packet
    /// level, only with `--links`; summed over a sweep's sizes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_pairs: Vec<QpCounters>,
    /// One training step (training workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<workload::TrainingReport>,
    /// One inference batch (inference workloads only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inference: Option<workload::InferenceReport>,
    /// Settings present in the scenario that this fidelity does not use, and why.
    pub ignored_settings: Vec<IgnoredSetting>,
    /// Per flow of a flow list (`workload.kind = "flows"`), in file order;
    /// empty for other workloads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listed_flows: Vec<ListedFlowResult>,
    /// Per job of a `[[jobs]]` scenario, in file order, with its interference;
    /// empty for a single `[workload]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<jobs::JobResult>,
    /// Per traffic class of `[[fabric.classes]]` (packet level), in class
    /// order; empty without classes or below the packet level.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassReport>,
    /// The link and switch faults a collective sweep or traffic pattern ran
    /// with (every size, `at` from each size's start); empty without faults.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<AppliedFault>,
    /// Set when a PFC deadlock stopped the run; the rows above are what completed
    /// before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<DeadlockReport>,
    /// PFC findings while the run went on (packet level, when there are any):
    /// the watchdog's triggers and drops per lane, cycles of paused links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc: Option<crate::backend::PfcFindings>,
    /// Cost of the simulation.
    pub sim: SimStats,
    /// Flow-completion-time CDF, at most 200 points (detail; flow fidelity and up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fct_cdf: Option<Vec<CdfPoint>>,
    /// Host × host bytes (detail; fidelities that lower the workload to transfers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic_matrix: Option<TrafficMatrix>,
    /// Utilization of the busiest links over time (detail; flow fidelity and up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_timeline: Option<LinkTimelineReport>,
    /// Sampled time series of the hottest ports (detail; whatever the backend sampled).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
    /// Every transfer's completion, for `flows.csv` (not part of the JSON).
    #[serde(skip)]
    pub flow_records: FlowRecords,
    /// The run as a timeline for Perfetto (only with `--trace`; not part of the JSON).
    #[serde(skip)]
    pub trace: Option<trace::Trace>,
}

/// One transfer's completion, a row of `flows.csv`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowRecord {
    /// Size of the collective the transfer belongs to, bytes.
    pub collective_bytes: u64,
    /// Task index in that collective's DAG.
    pub task: u32,
    /// Source GPU.
    pub src: u32,
    /// Destination GPU.
    pub dst: u32,
    /// Payload bytes.
    pub bytes: u64,
    /// Completion time, microseconds.
    pub fct_us: f64,
    /// Completion time on an idle path, microseconds.
    pub ideal_us: f64,
}

/// Per-transfer records, kept only when asked for and capped at
/// [`FlowRecords::CAP`] rows by keeping every `stride`-th transfer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowRecords {
    /// The kept rows, in run and task order.
    pub rows: Vec<FlowRecord>,
    /// Transfers seen in total.
    pub total: u64,
    /// One row kept per `stride` transfers (1 = all).
    pub stride: u64,
}

impl FlowRecords {
    /// Most rows kept; beyond it the records are downsampled by a uniform stride.
    pub const CAP: usize = 1_000_000;
}

impl Report {
    /// The JSON document (pretty-printed, stable key order).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes: plain data only")
    }

    /// Times the PFC watchdog fired: `None` below the packet level (which has
    /// no pauses to watch, like `fabric.pfc_pause_frames`), else the `pfc`
    /// section's count, 0 when it holds nothing (for `compare` and sweep CSVs).
    pub fn pfc_watchdog_triggers(&self) -> Option<u64> {
        self.fabric
            .pfc_pause_frames
            .map(|_| self.pfc.as_ref().map_or(0, |p| p.watchdog_triggers))
    }

    /// Packets the PFC watchdog dropped: `None` below the packet level, as
    /// [`Report::pfc_watchdog_triggers`].
    pub fn pfc_watchdog_drops(&self) -> Option<u64> {
        self.fabric
            .pfc_pause_frames
            .map(|_| self.pfc.as_ref().map_or(0, |p| p.watchdog_packets_dropped))
    }

    /// Packets dropped at a full PFC headroom (the PAUSE came too late):
    /// `None` below the packet level, as [`Report::pfc_watchdog_triggers`].
    pub fn pfc_headroom_drops(&self) -> Option<u64> {
        self.fabric
            .pfc_pause_frames
            .map(|_| self.pfc.as_ref().map_or(0, |p| p.headroom_packets_dropped))
    }

    /// Cycles of paused links found (PFC deadlocks, local or fabric-wide):
    /// `None` below the packet level, as [`Report::pfc_watchdog_triggers`].
    pub fn pfc_deadlock_cycles(&self) -> Option<u64> {
        self.fabric.pfc_pause_frames.map(|_| {
            self.pfc
                .as_ref()
                .map_or(0, |p| p.deadlock_cycles.len() as u64)
        })
    }
}
