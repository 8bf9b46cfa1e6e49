//! Backends execute a [`crate::dag::Dag`] on a [`crate::topology::Topology`] at one
//! fidelity and return the same [`RunOutput`], so results can be compared. Every
//! workload kind enters through [`run`] (a [`BackendConfig`], [`Observers`],
//! one [`LinkEvent`] type, one [`BackendError`]).
//!
//! | fidelity | module | models |
//! |---|---|---|
//! | analytical | [`analytical`] | α-β cost per transfer, no contention |
//! | flow | [`flow`] | max-min fair sharing of links (by traffic class when transfers ride several: [`class_share`]), events at flow start/end |
//! | packet | [`packet`] | MTU packets, queues, credits / PFC, ECN, DCQCN / DCTCP, retransmission |

pub mod analytical;
pub mod class_share;
mod entry;
pub mod flow;
mod link_event;
pub mod packet;
pub mod partition;
mod timeline;

pub use entry::{
    run, BackendConfig, BackendError, Deadlock, DeadlockKind, Observers, ProgressHook,
    ProgressTick, Sampling, TimelineRequest, PROGRESS_EVERY,
};
pub use link_event::{LinkEvent, LinkEventKind};

use crate::config::Fidelity;
use crate::dag::{Dag, DagRunner, OpTiming};
use crate::units::SimTime;

/// A counter a report may carry. Whether a fidelity models it — computes it from
/// what it simulates, so that a zero is a measured zero — is decided in one place,
/// [`Fidelity::models`]; the report leaves the others out (`null` in JSON, `n/a`
/// in tables and CSV, skipped by `compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// [`FabricCounters::bytes_delivered`].
    BytesDelivered,
    /// [`FabricCounters::bytes_sent`].
    BytesSent,
    /// [`FabricCounters::drops`], and a link's `drops`.
    Drops,
    /// [`FabricCounters::drops_corrupted`].
    DropsCorrupted,
    /// [`FabricCounters::bytes_dropped`].
    BytesDropped,
    /// [`FabricCounters::ecn_marks`].
    EcnMarks,
    /// [`FabricCounters::pfc_pause_frames`], and a link's `paused_ps` and `pause_frames`.
    PfcPauseFrames,
    /// [`FabricCounters::retransmitted_packets`].
    RetransmittedPackets,
    /// [`FabricCounters::max_queue_bytes`], and a link's `max_queue_bytes` and `avg_queue_bytes`.
    MaxQueueBytes,
    /// [`FabricCounters::credit_stall_ps`], and a link's `stall_ps`.
    CreditStall,
    /// [`FabricCounters::cnps`].
    Cnps,
    /// [`FabricCounters::timeouts`].
    Timeouts,
    /// Flow completion times (`flows.fct_us`).
    Fct,
    /// Flow slowdowns over an idle path (`flows.slowdown`, `flows.csv`'s `slowdown`).
    FctSlowdown,
    /// Per-link bytes and utilization (`links`, the utilization timeline).
    LinkUtilization,
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; 15] = [
        Counter::BytesDelivered,
        Counter::BytesSent,
        Counter::Drops,
        Counter::DropsCorrupted,
        Counter::BytesDropped,
        Counter::EcnMarks,
        Counter::PfcPauseFrames,
        Counter::RetransmittedPackets,
        Counter::MaxQueueBytes,
        Counter::CreditStall,
        Counter::Cnps,
        Counter::Timeouts,
        Counter::Fct,
        Counter::FctSlowdown,
        Counter::LinkUtilization,
    ];

    /// Its key in the result JSON (`fabric.<key>`, `flows.<key>` or `links`).
    pub fn key(self) -> &'static str {
        match self {
            Counter::BytesDelivered => "bytes_delivered",
            Counter::BytesSent => "bytes_sent",
            Counter::Drops => "drops",
            Counter::DropsCorrupted => "drops_corrupted",
            Counter::BytesDropped => "bytes_dropped",
            Counter::EcnMarks => "ecn_marks",
            Counter::PfcPauseFrames => "pfc_pause_frames",
            Counter::RetransmittedPackets => "retransmitted_packets",
            Counter::MaxQueueBytes => "max_queue_bytes",
            Counter::CreditStall => "credit_stall_ps",
            Counter::Cnps => "cnps",
            Counter::Timeouts => "timeouts",
            Counter::Fct => "fct_us",
            Counter::FctSlowdown => "slowdown",
            Counter::LinkUtilization => "links",
        }
    }
}

impl Fidelity {
    /// Whether this fidelity models `counter`: the one table of what each backend
    /// computes. Bytes delivered and sent are modelled everywhere (conservation
    /// holds at every fidelity). The analytical fidelity costs each transfer on
    /// an idle path, so a transfer's completion time *is* its ideal time: its
    /// slowdown is 1 by construction, and it models no link occupancy. The flow
    /// fidelity shares link rates max-min: completion times, slowdowns and link
    /// utilization are real, but it has no packets, so no queues, drops, ECN,
    /// PFC, credits or transport recovery. The packet level models everything.
    pub fn models(self, counter: Counter) -> bool {
        match counter {
            Counter::BytesDelivered | Counter::BytesSent | Counter::Fct => true,
            Counter::FctSlowdown | Counter::LinkUtilization => self != Fidelity::Analytical,
            Counter::Drops
            | Counter::DropsCorrupted
            | Counter::BytesDropped
            | Counter::EcnMarks
            | Counter::PfcPauseFrames
            | Counter::RetransmittedPackets
            | Counter::MaxQueueBytes
            | Counter::CreditStall
            | Counter::Cnps
            | Counter::Timeouts => self == Fidelity::Packet,
        }
    }
}

/// Fabric-wide counters as a backend accumulates them: a backend leaves the
/// counters it does not model at zero, and the report turns those into absent
/// values ([`crate::report::FabricReport`], [`Fidelity::models`]).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FabricCounters {
    /// Payload bytes delivered to their destination GPU.
    pub bytes_delivered: u64,
    /// Payload bytes handed to the transport by sources (each byte once, retransmissions excluded).
    pub bytes_sent: u64,
    /// Packets dropped (buffer overflow, corruption, link down).
    pub drops: u64,
    /// Of `drops`, packets a bit error corrupted (a `link_degraded` fault's
    /// `bit_error_rate`, packet level only); the receiver discards them and the
    /// transport resends.
    pub drops_corrupted: u64,
    /// Payload bytes in dropped packets.
    pub bytes_dropped: u64,
    /// Packets marked Congestion Experienced.
    pub ecn_marks: u64,
    /// PFC PAUSE frames sent.
    pub pfc_pause_frames: u64,
    /// Packets sent again by the transport.
    pub retransmitted_packets: u64,
    /// Largest egress queue seen anywhere, bytes.
    pub max_queue_bytes: u64,
    /// Total time senders waited for InfiniBand credits, summed over ports, picoseconds.
    pub credit_stall_ps: u64,
    /// Congestion notification packets sent.
    pub cnps: u64,
    /// Retransmission timeouts fired.
    pub timeouts: u64,
    /// InfiniBand congestion control: data packets switches marked FECN;
    /// `None` when the run does not run it (`cc = "ib"`), whatever the fabric.
    pub fecn_marks: Option<u64>,
    /// InfiniBand congestion control: BECNs destinations returned (one
    /// congestion notification per FECN-marked packet); `None` when the run
    /// does not run it.
    pub becns: Option<u64>,
    /// What PFC's watchdog and deadlock-cycle search found (packet level).
    pub pfc: PfcFindings,
    /// Per virtual lane, i.e. per traffic class when classes are configured
    /// (packet level).
    pub lanes: LaneCounters,
    /// What packet trimming cut (`fabric.trimming`, packet level); `None`
    /// when the run does not trim.
    pub trimmed: Option<TrimCounters>,
}

/// What packet trimming (NDP; `fabric.trimming`) did during a run: full
/// queues cut data packets to their header instead of dropping them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrimCounters {
    /// Data packets trimmed to their header (not drops: the header travels on
    /// and its receiver NACKs it).
    pub packets: u64,
    /// Payload bytes cut from them, bytes (resent by the transport).
    pub payload_bytes: u64,
}

impl TrimCounters {
    /// Adds another run's counters (a sweep's next size), saturating.
    pub fn add(&mut self, o: &TrimCounters) {
        self.packets = self.packets.saturating_add(o.packets);
        self.payload_bytes = self.payload_bytes.saturating_add(o.payload_bytes);
    }
}

/// Counters per virtual lane (lane `i` carries traffic class `i`), packet level.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LaneCounters {
    /// Payload bytes receivers accepted, per lane.
    pub payload_delivered: [u64; 8],
    /// Data packets the fabric dropped, per lane.
    pub data_drops: [u64; 8],
    /// PFC PAUSE frames put on the wire, per lane.
    pub pause_frames: [u64; 8],
}

impl LaneCounters {
    /// Adds another run's counters (a sweep's next size, a step), saturating.
    pub fn add(&mut self, o: &LaneCounters) {
        for i in 0..8 {
            self.payload_delivered[i] =
                self.payload_delivered[i].saturating_add(o.payload_delivered[i]);
            self.data_drops[i] = self.data_drops[i].saturating_add(o.data_drops[i]);
            self.pause_frames[i] = self.pause_frames[i].saturating_add(o.pause_frames[i]);
        }
    }
}

/// What PFC's watchdog and its cycle search found during a packet-level run
/// (empty elsewhere): the lanes the watchdog broke and what it dropped, and
/// the cycles of paused links found while the run went on.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PfcFindings {
    /// Times the PFC watchdog fired (a lane paused longer than `pfc_watchdog`).
    pub watchdog_triggers: u64,
    /// Packets the watchdog dropped (also in `drops`).
    pub watchdog_packets_dropped: u64,
    /// Wire bytes of those packets (their payload is in `bytes_dropped`).
    pub watchdog_wire_bytes_dropped: u64,
    /// Packets dropped at a lossless ingress lane whose headroom (or the
    /// switch's headroom pool) was full: PFC reacted too late (also in `drops`).
    pub headroom_packets_dropped: u64,
    /// Per egress lane the watchdog fired on: when first, how often, what it dropped.
    pub watchdog_lanes: Vec<packet::flow_control::WatchdogLane>,
    /// Cycles of paused links (each link waiting on the next) found while the
    /// run went on, each once, times in picoseconds.
    pub deadlock_cycles: Vec<packet::flow_control::DeadlockCycle>,
}

impl PfcFindings {
    /// Nothing found.
    pub fn is_empty(&self) -> bool {
        self.watchdog_triggers == 0
            && self.headroom_packets_dropped == 0
            && self.deadlock_cycles.is_empty()
    }

    /// Adds the findings of another run (a sweep's next size, a step).
    pub fn merge(&mut self, o: &PfcFindings) {
        self.watchdog_triggers += o.watchdog_triggers;
        self.watchdog_packets_dropped += o.watchdog_packets_dropped;
        self.watchdog_wire_bytes_dropped += o.watchdog_wire_bytes_dropped;
        self.headroom_packets_dropped += o.headroom_packets_dropped;
        self.watchdog_lanes.extend(o.watchdog_lanes.iter().cloned());
        self.deadlock_cycles
            .extend(o.deadlock_cycles.iter().cloned());
    }
}

/// Counters of one directed link.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LinkCounters {
    /// Link index in the topology.
    pub link: u32,
    /// Wire bytes sent (headers included at packet level).
    pub bytes: u64,
    /// Fraction of the run's makespan the link was busy.
    pub utilization: f64,
    /// Packets dropped at this link's egress queue (and, under PFC, at its
    /// receiver's full headroom).
    pub drops: u64,
    /// Largest egress queue, bytes.
    pub max_queue_bytes: u64,
    /// Time-averaged egress queue, bytes.
    pub avg_queue_bytes: f64,
    /// Time the sender waited for credits or was paused, picoseconds.
    pub stall_ps: u64,
    /// PFC: of `stall_ps`, time the sender's lanes were paused (summed over
    /// lanes), picoseconds.
    pub paused_ps: u64,
    /// PFC: PAUSE frames the link's receiver sent to its sender.
    pub pause_frames: u64,
    /// Data packets the link's egress queue marked Congestion Experienced (ECN).
    pub ecn_marks: u64,
}

/// Counters of one queue pair (packet level): the transport's view of one
/// (source GPU, destination GPU) connection.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct QpCounters {
    /// Source GPU.
    pub src: u32,
    /// Destination GPU.
    pub dst: u32,
    /// Messages (transfers) posted.
    pub messages: u64,
    /// Payload bytes posted.
    pub bytes: u64,
    /// Data packets sent more than once (go-back-N rewinds and timeouts).
    pub retransmitted_packets: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
}

/// One sampled point of a time series.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Sample {
    /// Sample time, microseconds.
    pub t_us: f64,
    /// Sampled value.
    pub value: f64,
}

/// A named time series (queue depth of a port, utilization of a link).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Series {
    /// What is sampled, e.g. `queue_bytes link 12 (switch 3 -> switch 7)`.
    pub name: String,
    /// The samples, in time order.
    pub samples: Vec<Sample>,
}

/// Bytes each link carried per time bucket, for utilization heatmaps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkTimeline {
    /// Width of one bucket; bucket `b` covers `[b·bucket, (b+1)·bucket)`.
    pub bucket: SimTime,
    /// `(link index, bytes per bucket)` for every link that carried traffic, by link index.
    pub links: Vec<(u32, Vec<f64>)>,
}

/// What every backend returns.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    /// When the last task completed.
    pub makespan: SimTime,
    /// Start and end of each operation of the DAG, indexed like `Dag::ops`.
    pub op_timing: Vec<OpTiming>,
    /// Completion time (done − start) of every transfer task, picoseconds, in task
    /// order; a run stopped early (a deadlock) lists the transfers it finished.
    pub transfer_fct: Vec<SimTime>,
    /// Ideal completion time of every transfer (bytes / bottleneck rate + path latency), same order.
    pub transfer_ideal: Vec<SimTime>,
    /// Fabric-wide counters.
    pub fabric: FabricCounters,
    /// Per-link counters (only links that carried traffic), when collected.
    pub links: Vec<LinkCounters>,
    /// Per-queue-pair counters (packet level), in creation order.
    pub queue_pairs: Vec<QpCounters>,
    /// Sampled time series of the hottest ports, when collected.
    pub series: Vec<Series>,
    /// Per-link bytes per time bucket, when requested (flow backend).
    pub link_timeline: Option<LinkTimeline>,
    /// Discrete events processed.
    pub events: u64,
    /// When each task of the DAG became ready, picoseconds, indexed like
    /// [`Dag::tasks`] (the timeline export, [`crate::report::trace`]).
    pub task_start: Vec<SimTime>,
    /// When each task completed, picoseconds, same index; [`SimTime::MAX`] for a
    /// task a stopped run (a deadlock) never finished.
    pub task_done: Vec<SimTime>,
}

/// Completion time (done − start) and ideal time of every transfer, in task order,
/// from a finished runner and a per-task table of ideal times.
pub fn transfer_times(
    dag: &Dag,
    runner: &DagRunner,
    ideal_by_task: &[SimTime],
) -> (Vec<SimTime>, Vec<SimTime>) {
    // exact sizes: at 10^8 tasks a doubling Vec would hold up to twice the bytes
    let n = dag.tasks().filter(|t| t.kind.is_transfer()).count();
    let mut fct = Vec::with_capacity(n);
    let mut ideal = Vec::with_capacity(n);
    for (i, t) in dag.tasks().enumerate() {
        if t.kind.is_transfer() {
            fct.push(runner.span(crate::dag::TaskId(i as u32)));
            ideal.push(ideal_by_task[i]);
        }
    }
    (fct, ideal)
}
