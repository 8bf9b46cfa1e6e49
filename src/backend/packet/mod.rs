//! The packet-level backend: MTU packets through queues, links and switches.
//!
//! # Model
//!
//! * **Time and events.** Picoseconds (`u64`); one event queue ordered by
//!   time, then among simultaneous events by a key that is a function of the
//!   event alone: the one scheduled longest ago first, then a per-instant
//!   mix of its identity ([`engine`]), never by the order of pushes; all
//!   randomness (spraying, adaptive tie-breaks, Valiant and UGAL detours,
//!   RED marking, bit errors, TCP jitter) from one stream per node, seeded by
//!   [`PacketConfig::seed`] and the node (ECMP hashes the flow with the seed):
//!   same inputs and seed give an identical [`RunOutput`], and the order
//!   does not depend on how a parallel run would partition the fabric.
//! * **Ports.** Every directed link of the [`Topology`] is the egress port of its
//!   `from` node: a FIFO per virtual lane, strict priority from the highest lane
//!   down (ACKs/NACKs ride the highest lane, data lane 0), or with traffic
//!   classes ([`PacketConfig::classes`], [`classes`]) strict levels and DWRR
//!   weights, per-class PFC admission and ECN thresholds. A packet is
//!   serialized at the link rate (`tx_time(payload + header)`), then arrives after
//!   the link's propagation latency plus the receiving node's forwarding latency.
//!   **Store-and-forward** by default: a packet is routed only once its last bit
//!   arrived, so each extra hop adds one packet time. With
//!   [`PacketConfig::cut_through`] a node routes on the header instead, wherever
//!   its out-links are no faster than the in-link (no underrun possible).
//! * **Forwarding points.** Switches, the NVSwitch and the NIC all forward the
//!   same way: route on arrival ([`Routing`]: ECMP hash per flow, adaptive
//!   least-occupied egress per packet or per flowlet, or per-packet spray over
//!   [`Topology::next_hops`]), enqueue at the egress port.
//! * **Flow control** ([`FlowControl`], [`flow_control`]). InfiniBand credits
//!   (IBA vol. 1 §7.9, link-level flow control per VL, credits in 64-byte
//!   blocks): the sender of each link holds credits for the receiver's per-VL
//!   input buffer and transmits only with enough of them; the receiver returns the
//!   credits when the packet leaves its buffer, after the link's latency. Nothing
//!   can overflow, so a credit run has zero buffer drops (asserted). Lossy
//!   Ethernet: drop-tail at the egress queue (per port and VL, or a shared buffer
//!   with the dynamic threshold α·free of Choudhury & Hahne, ToN 1998). PCIe and
//!   NVLink links are always credit-controlled (both are lossless buses).
//!   Credits make buffers wait on each other: where routes are not up/down
//!   (dragonfly) the waits can form a cycle and deadlock, which the run reports
//!   ([`PacketError::Deadlock`]); [`PacketConfig::vl_escalation`] moves a packet
//!   up one lane per switch-to-switch hop to break such cycles.
//! * **PFC** ([`FlowControl::Pfc`], IEEE 802.1Qbb): lossless Ethernet. The
//!   receiver of a network link counts the bytes it holds per (ingress link,
//!   lane); past XOFF (static, or α × the free shared buffer,
//!   [`PacketConfig::pfc_threshold`]) they go to headroom (per port, or a
//!   pool per switch, [`PacketConfig::pfc_headroom_pool`]) and it sends
//!   PAUSE, at XON RESUME: 84-byte frames queued on the reverse link ahead of
//!   its data, after the frame in serialization, arriving one frame time
//!   plus the latency later; optional pause quanta
//!   ([`PacketConfig::pfc_pause_quanta`]). Headroom must cover
//!   [`pfc_headroom_needed`] and XOFF + headroom the buffer, or the run is
//!   refused. PAUSE spreads congestion upstream, and paused links in a cycle
//!   deadlock: a lane paused for the deadlock timeout prompts a cycle search
//!   whose finding is reported while the run goes on; the PFC watchdog
//!   ([`PacketConfig::pfc_watchdog`]) drops on lanes paused too long; when
//!   nothing moves at all the run stops with [`PacketError::PfcDeadlock`] and
//!   the cycle. Details in [`flow_control`].
//! * **ECN and congestion control** ([`cc`]): RED marking at the egress
//!   queues of switch ports, at dequeue by default ([`PacketConfig::ecn`],
//!   [`PacketConfig::ecn_mark_at`]); DCQCN (RoCEv2 as ConnectX NICs run it:
//!   CNPs, α / rate-increase / rate-decrease timers as events, fast recovery,
//!   additive and hyper increase, pacing at R_C) or DCTCP (window cut by α/2
//!   once per window) per queue pair ([`PacketConfig::cc`]).
//! * **Transport** ([`nic`]). RDMA reliable connection, one queue pair per
//!   (source GPU, destination GPU): that is how NCCL connects peers, and one PSN
//!   space per pair keeps go-back-N meaningful across the messages of a pair
//!   (messages of one pair are sent in posting order). The source GPU's first
//!   link pulls packets round-robin from its active queue pairs when it is idle
//!   (so sources never queue or drop), up to a window of outstanding bytes per
//!   queue pair if one is set ([`PacketConfig::window_bytes`]; none for RDMA
//!   writes under ECMP). The receiver ACKs every [`PacketConfig::ack_every`] packets and
//!   on the last packet of a message. Under ECMP routing (in-order paths) the
//!   receiver is strict go-back-N: out-of-order packets are discarded and one
//!   NACK per gap makes the sender rewind. Under adaptive routing or spraying
//!   packets reorder legitimately, so the receiver keeps a bitmap of received
//!   PSNs, never NACKs, and loss is recovered by the retransmission timeout
//!   (which rewinds go-back-N from the oldest unacknowledged PSN); selective
//!   repeat there marks loss by time instead (RACK, `recovery/selective.rs`).
//! * **Host paths.** [`HostPath::GpuDirect`] (the NIC reads GPU memory over
//!   PCIe) or [`HostPath::HostStaged`] (a copy through host memory first: each
//!   message waits `copy_latency`, and its bytes become available at
//!   `copy_rate`). [`Transport::Tcp`] adds a per-packet CPU cost and seeded
//!   uniform jitter at the sender.
//! * **Faults.** [`LinkEvent`]s take links down or up (packets on the wire or
//!   queued for a downed link are lost; routes are recomputed on the backend's own
//!   copy of the topology), change rates, or set a bit-error rate (a corrupted
//!   packet is discarded by the receiver and counted as a drop).
//!
//! # Results
//!
//! [`run`] returns the common [`RunOutput`]; [`run_detailed`] also returns
//! [`PacketStats`], the packet-level conservation counters
//! (transmitted = accepted + duplicates + out-of-order discards + dropped).
//! A run ends when its work is done and every packet drained (every ACK home),
//! so conservation is exact; timers still pending then (link events,
//! retransmission and congestion-control timers, pacing wake-ups) change
//! nothing and are skipped; the makespan is the time the last task completed.
//! `transfer_ideal` is the path latency plus the message's *wire* bytes
//! (headers included, once) at the path's slowest *line* rate; store-and-forward
//! adds one packet time per extra hop on top of it. `links[i].utilization` is busy time over the makespan;
//! `avg_queue_bytes` is averaged over the whole run. `events` counts events
//! popped from the queue; credit returns are absorbed lazily and only count
//! when a starved sender had to be woken.
//!
//! # Performance
//!
//! Measured with `cargo bench --bench packet` on a shared 2-core AMD EPYC VM,
//! per CPU-second of the simulating thread (figures in the commit history; the
//! spread is other jobs' cache pressure): 8–12 M events/s (≈ 4.3 M packet-hops/s)
//! for a 128-host permutation and 18–24 M events/s for a 64:1 incast. The event
//! queue is a calendar wheel ([`engine`]); packets are 32-byte records in a slab
//! ([`slab`]); credit returns wait in per-lane FIFOs and a port schedules its
//! end-of-serialization event only when someone waits for it, so a packet hop
//! costs ≈ 1.8 events; nothing allocates per packet (a test counts allocations).
//! With PFC + ECN + DCQCN (the bench's RoCE cases): 10–11 M events/s on the
//! permutation and 15–16 M events/s on the incast (DCQCN pacing adds a wake-up
//! per paced packet; PFC and ECN add a few branches per hop); the credit cases
//! stayed within noise of their figures before PFC existed (9.9 → 9.2–10.2 and
//! 20.6 → 19.4 M events/s).

pub mod cc;
pub mod classes;
pub mod engine;
pub mod flow_control;
pub mod ids;
pub mod nic;
pub mod recovery;
mod sim;
pub mod slab;
pub mod stats;
pub mod switch;
mod window;

pub use crate::mechanism::cc::{
    CongestionControl, DcqcnParams, DcqcnProfile, Ecn, EcnMarkAt, HpccParams, IbCcParams, MinRtt,
    SwiftParams, TimelyParams,
};
pub use crate::mechanism::classes::{TrafficClass, TrafficClasses};
pub use crate::mechanism::flow_control::{
    pfc_headroom_needed, FlowControl, PfcThreshold, PFC_FRAME_WIRE_BYTES,
};
pub use crate::mechanism::recovery::LossRecovery;
pub use sim::bdp_window_pkts;
pub use stats::PacketStats;

/// Test hook (issue 16): while set, every packet run started afterwards
/// perturbs what a partitioned run would do differently and no result may
/// depend on: the order the DAG runner releases tasks in (reversed before
/// the start order sorts them), the order of the run's first pushes
/// (reversed), and the packets' slab indices (handed out from 4,095 down
/// before fresh ones). `tests/event_order.rs` runs the packet examples with
/// and without it and compares the reports. Read once per run.
#[doc(hidden)]
pub static PERTURB_ORDERS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Test hook (issue 16, M2a): 0 (the default) runs the one-queue loop; P ≥ 1
/// runs every packet run started afterwards in P partitions
/// ([`crate::topology::partition::partition`]) on this thread, by
/// conservative windows with an event queue per partition (docs/parallel-engine.md):
/// results identical to the one-queue loop, or a [`PacketError::Partition`]
/// before the run. Read once per run. The user-facing setting comes with
/// threads (M2b).
#[doc(hidden)]
pub static PARTITIONS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Test hook (issue 16, M2a): partitioned runs ([`PARTITIONS`]) add the
/// events their windows let through out of order (a cross-partition event
/// due before the window's `T + L`, a queue pair created out of the
/// one-queue order) here; the identity tests require 0.
#[doc(hidden)]
pub static WINDOW_VIOLATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
// the internals (switch.rs) name the one link-event type through this module
pub use crate::backend::{LinkEvent, LinkEventKind};

use crate::backend::timeline::Timeline;
use crate::backend::{
    BackendError, Deadlock, DeadlockKind, FabricCounters, LinkCounters, ProgressHook, RunOutput,
    TimelineRequest, PROGRESS_EVERY,
};
use crate::dag::Dag;
use crate::mechanism::defaults;
use crate::topology::Topology;
use crate::units::{Rate, SimTime};

/// How a forwarding point picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Routing {
    /// Hash of the queue pair (salted by the seed and the node) per flow: all
    /// packets of a flow take one path, so flows may collide.
    #[default]
    Ecmp,
    /// Per packet, the candidate whose egress queue holds the fewest bytes
    /// (ties broken from a seeded random start), as InfiniBand adaptive routing.
    Adaptive,
    /// Per packet, a uniformly random candidate (packet spraying).
    Spray,
    /// Per flowlet (Kandula et al., "Dynamic load balancing without packet
    /// reordering", CCR 2007; CONGA, SIGCOMM 2014): a switch routes a flow's
    /// packet like [`Routing::Adaptive`] when the flow has been idle at that
    /// switch for more than [`PacketConfig::flowlet_gap`], and on the port its
    /// previous packet took otherwise, so a flowlet follows one path and
    /// reordering needs a gap shorter than the paths' delay difference.
    Flowlet,
}

/// How the NIC gets the payload.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum HostPath {
    /// GPUDirect RDMA: the NIC reads GPU memory over PCIe; no extra cost.
    #[default]
    GpuDirect,
    /// Staged through host memory: every message waits `copy_latency` before its
    /// first byte can be sent, and byte `b` is available `b / copy_rate` later.
    HostStaged {
        /// Rate of the GPU → host memory copy, bits/s.
        copy_rate: Rate,
        /// Fixed cost per message (launching the copy), picoseconds.
        copy_latency: SimTime,
    },
}

/// The transport's CPU involvement.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Transport {
    /// RDMA: the NIC does everything; no per-packet CPU cost.
    #[default]
    Rdma,
    /// A kernel TCP path: every packet costs `per_packet_overhead` of sender
    /// CPU plus a uniform random `[0, jitter)` (seeded), serially per queue pair.
    /// Reliability is whatever [`PacketConfig::loss_recovery`] says; a
    /// scenario with `transport = "tcp"` defaults to [`LossRecovery::Tcp`]
    /// (duplicate ACKs, fast retransmit, NewReno, RFC 6298 timer) and its
    /// congestion control to NewReno (or DCTCP with ECN).
    Tcp {
        /// CPU time per packet, picoseconds.
        per_packet_overhead: SimTime,
        /// Upper bound of the uniform extra delay per packet, picoseconds.
        jitter: SimTime,
    },
}

/// Every knob of the packet level. `Default` is an InfiniBand NDR-like fabric;
/// link rates and latencies come from the [`Topology`].
#[derive(Clone, Debug, PartialEq)]
pub struct PacketConfig {
    /// Seed of the single random generator. Default 1.
    pub seed: u64,
    /// Payload bytes per packet, 1..=65536. Default 4096, the largest InfiniBand MTU
    /// (IBA vol. 1 §7.7.8) and what NCCL negotiates on NDR.
    pub mtu: u32,
    /// Header bytes per data packet on the wire. Default 26 = InfiniBand local
    /// route header 8 + base transport header 12 + invariant CRC 4 + variant CRC 2
    /// (IBA vol. 1 ch. 5/9). RoCEv2 would be 62 + 20 of preamble/gap.
    pub header_bytes: u32,
    /// Bytes on the wire of an ACK/NACK. Default 30 = the data header plus the
    /// 4-byte ACK extended transport header (AETH); a scenario sets
    /// `header_bytes` + 4 for its fabric kind (86 on RoCEv2,
    /// [`defaults::AETH_BYTES`]).
    pub ack_bytes: u32,
    /// Bytes on the wire of a CNP. Default 42 = the data header plus 16
    /// reserved bytes (RoCEv2 annex A17.9.3; 98 on RoCEv2,
    /// [`defaults::CNP_PAYLOAD_BYTES`]).
    pub cnp_bytes: u32,
    /// Virtual lanes (priorities) per port, 1..=8. Default 2: data on lane 0,
    /// ACK/NACK on the highest lane with strict priority.
    pub vls: u8,
    /// InfiniBand credits, lossy drop-tail, or PFC (lossless Ethernet) on network
    /// links. Default `Credit`.
    pub flow_control: FlowControl,
    /// Credit granularity, bytes. Default 64 (IBA vol. 1 §7.9.4: one credit = 64 bytes).
    pub credit_block_bytes: u32,
    /// Buffer per port and virtual lane, bytes: the receiver's input buffer that
    /// credits advertise, or the drop-tail limit of an egress queue. Must hold one
    /// full packet. Default 128 KiB (assumption: a per-port share of a
    /// Quantum-2-class switch buffer; vendors publish only the shared total).
    pub port_buffer_bytes: u64,
    /// Input buffer per lane of a host-internal receiver (NIC or NVSwitch side of
    /// a PCIe or NVLink link), bytes, advertised as credits: those buses are
    /// lossless. Links into a GPU are never credit-limited (GPU memory absorbs
    /// at line rate). Default 256 KiB (assumption: NIC on-chip staging buffer).
    pub host_buffer_bytes: u64,
    /// Lossy only: shared buffer per forwarding node, bytes; 0 = per-port buffers.
    /// Default 0.
    pub shared_buffer_bytes: u64,
    /// Lossy only, with a shared buffer: a queue may grow to α × free shared
    /// bytes (dynamic threshold, Choudhury & Hahne 1998). Default 1.0.
    pub shared_buffer_alpha: f64,
    /// Next-hop choice. Default `Ecmp`.
    pub routing: Routing,
    /// [`Routing::Flowlet`]: idle time after which a flow's next packet starts
    /// a new flowlet and may change path, picoseconds. Default 100 µs, the
    /// LetFlow and CONGA flowlet timeout of the ConWeave ns-3 simulator (Song
    /// et al., SIGCOMM 2023), which targets RDMA fabrics.
    pub flowlet_gap: SimTime,
    /// Maximum unacknowledged bytes per queue pair, an explicit NIC limit on
    /// outstanding requests; 0 = no limit. Default 0
    /// ([`defaults::RDMA_WINDOW`]): an RDMA reliable-connection queue pair
    /// writing (what NCCL posts) is bounded only by its PSN space, and the
    /// ConnectX outstanding-request limit (`max_rd_atomic`) is for reads and
    /// atomics. Under a reordering routing (adaptive, flowlet, spray) the
    /// receiver's out-of-order bitmap needs a bound, and the TCP path has a
    /// receive window, so 0 means [`defaults::WINDOW`] (512 KiB ≈ 400 Gb/s ×
    /// 10 µs) there.
    pub window_bytes: u64,
    /// The window is IRN's BDP-FC instead of `window_bytes`: one
    /// bandwidth-delay product of the network's longest path
    /// ([`bdp_window_pkts`]; Mittal et al., SIGCOMM 2018, §3.2). Default
    /// false.
    pub window_bdp: bool,
    /// The receiver ACKs every this many packets (and on a message's last).
    /// Default 4 (assumption: NICs coalesce ACKs; the ratio is not published).
    pub ack_every: u32,
    /// Retransmission timeout, picoseconds. Default 1.048576 ms = 4.096 µs × 2^8
    /// (the IB local-ACK-timeout encoding with value 8, [`defaults::RTO`]): far
    /// above the queueing delay a credit fabric builds, so it does not fire
    /// spuriously, and short enough for lossy runs. A RoCE scenario gets the
    /// timeout NCCL sets on its queue pairs, `NCCL_IB_TIMEOUT` = 20: 4.096 µs ×
    /// 2^20 ≈ 4.3 s ([`defaults::ROCE_RTO`]), so a PFC incast never times out.
    pub rto: SimTime,
    /// Loss recovery of the queue pairs ([`LossRecovery`]). Default
    /// go-back-N. Selective repeat bounds the packets outstanding per queue
    /// pair to one window (IRN's BDP-FC): with `window_bytes` 0 that is
    /// [`defaults::WINDOW`], the bitmaps' size.
    pub loss_recovery: LossRecovery,
    /// Selective repeat only: IRN's RTO_low, the timeout while at most
    /// [`defaults::RTO_LOW_PACKETS`] packets are outstanding (a tail loss),
    /// picoseconds; `rto` is its RTO_high (the smaller of the two is used).
    /// Default 100 µs ([`defaults::RTO_LOW`], IRN §4.1 at 40 Gb/s).
    pub rto_low: SimTime,
    /// TCP loss recovery ([`LossRecovery::Tcp`]) only: the smallest timeout
    /// its RFC 6298 timer sets, picoseconds. Default 200 ms, Linux's
    /// `TCP_RTO_MIN` ([`defaults::TCP_MIN_RTO`]); 200 µs–1 ms is what
    /// datacenter studies set against incast collapse.
    pub tcp_min_rto: SimTime,
    /// TCP loss recovery only: the largest timeout, backoff included,
    /// picoseconds. Default 120 s, Linux's `TCP_RTO_MAX`
    /// ([`defaults::TCP_MAX_RTO`]).
    pub tcp_max_rto: SimTime,
    /// TCP loss recovery ([`LossRecovery::Tcp`]) only: the receiver's
    /// delayed-ACK timer, picoseconds; 0 (the default,
    /// [`defaults::TCP_DELAYED_ACK`]) ACKs every segment. Otherwise the
    /// receiver ACKs every second segment (RFC 5681 §4.2: "at least every
    /// second full-sized segment"), at once on an out-of-order segment, one
    /// that fills a gap or one whose ECN mark differs from the last one's
    /// (DCTCP, RFC 8257 §3.2), and when this timer, started by the first
    /// segment left unacknowledged, fires (RFC 1122 §4.2.3.2; Linux's
    /// lies between 40 and 200 ms). Below 500 ms (RFC 1122).
    pub tcp_delayed_ack: SimTime,
    /// TCP loss recovery only: SACK (RFC 2018) and the conservative
    /// SACK-based loss recovery of RFC 6675. Default on, as Linux
    /// ([`defaults::TCP_SACK`]); off runs NewReno's recovery (RFC 6582).
    /// See [`recovery`]'s TCP law for what an ACK carries.
    pub tcp_sack: bool,
    /// TCP loss recovery with SACK only: RACK-TLP (RFC 8985), time-based
    /// loss detection (a segment sent before one delivered is lost once a
    /// round trip and a reordering window have passed, which also finds
    /// lost retransmissions) and the tail loss probe (the last segment
    /// sent again 2 SRTT after the last ACK, so that a lost tail is
    /// recovered by SACK instead of the RTO). Default on, as Linux
    /// (`net.ipv4.tcp_recovery` = 1, `net.ipv4.tcp_early_retrans` = 3;
    /// [`defaults::TCP_RACK`]).
    pub tcp_rack: bool,
    /// TCP loss recovery with SACK only: D-SACK (RFC 2883). A receiver
    /// that gets a segment again ACKs it with a block naming the
    /// duplicate, and RACK widens its reordering window by min_RTT / 4 per
    /// round trip that brings one (RFC 8985 §6.2 step 4), so that a
    /// spurious retransmission is not repeated. Default on, as Linux's
    /// `net.ipv4.tcp_dsack` ([`defaults::TCP_DSACK`]).
    pub tcp_dsack: bool,
    /// TCP path: TSO/LRO segment size, payload bytes. The sender's CPU
    /// pays [`Transport::Tcp`]'s per-packet overhead (and jitter) once per
    /// segment of this many bytes (and at a message's end) instead of once
    /// per packet: the kernel hands the NIC 64 KiB super-segments that the
    /// NIC cuts into MTU-sized packets (TCP segmentation offload), and the
    /// receiver coalesces them likewise (LRO/GRO). 0 = no offload, a cost per
    /// packet. Default 0 here; a scenario's `fabric.tcp_tso_bytes` defaults
    /// to 64 KiB ([`defaults::TCP_TSO_BYTES`]), Linux's `GSO_MAX_SIZE`.
    pub tcp_tso_bytes: u64,
    /// Packet trimming (NDP, Handley et al., SIGCOMM 2017; Ultra Ethernet's
    /// transport): a lossy queue that cannot take a data packet cuts its
    /// payload and forwards its header (`header_bytes`) on the highest lane,
    /// and the receiver NACKs that PSN at once. Counted in
    /// [`PacketStats::data_trimmed`], not as a drop. Acts on lossy links
    /// only. Default false.
    pub trimming: bool,
    /// How the NIC reaches the payload. Default `GpuDirect`.
    pub host_path: HostPath,
    /// RDMA or a TCP-like CPU path. Default `Rdma`.
    pub transport: Transport,
    /// Faults and changes, applied at their times. Default none.
    pub link_events: Vec<LinkEvent>,
    /// Raise a data packet's virtual lane by one at every switch-to-switch hop
    /// (capped at `vls − 2`; ACKs keep lane `vls − 1`). Topologies whose shortest
    /// paths are not up/down — dragonfly — have cyclic buffer dependencies and
    /// can deadlock under credits; with a lane per hop stage they cannot (Dally &
    /// Seitz, IEEE TC 1987; Kim et al., ISCA 2008 use the same idea). A dragonfly's
    /// minimal paths have 3 switch-to-switch hops, so it needs `vls = 5`.
    /// Default false.
    pub vl_escalation: bool,
    /// Abort with [`PacketError::Deadlock`] when packets wait in buffers but
    /// nothing has been transmitted anywhere for this long, picoseconds.
    /// Default 10 ms (thousands of round trips; timers alone never move packets).
    pub deadlock_timeout: SimTime,
    /// Cut-through forwarding: a switch (or NIC, NVSwitch) routes a packet once
    /// its header has arrived instead of its last bit, wherever no out-link of the
    /// node is faster than the in-link (so the egress cannot underrun). Default
    /// false (store-and-forward, the conservative model; InfiniBand switches such
    /// as Quantum-2 do cut through, so set it for IB latency studies).
    pub cut_through: bool,
    /// PFC only: how long one PAUSE frame stops the upstream lane, in pause
    /// quanta of 512 bit-times at the link's rate (IEEE 802.1Qbb; at most 65535).
    /// 0 = until the matching RESUME (a zero-quanta PAUSE), the usual switch
    /// behaviour while the ingress stays above XON. With a quantum set, a paused
    /// receiver refreshes its PAUSE every half of that time while above XON.
    /// Default 0.
    pub pfc_pause_quanta: u32,
    /// PFC only: static XOFF/XON per ingress lane (default) or a dynamic XOFF
    /// of α × the free shared buffer ([`PfcThreshold::Dynamic`], which needs
    /// [`PacketConfig::shared_buffer_bytes`]).
    pub pfc_threshold: PfcThreshold,
    /// PFC only: a headroom pool per switch (and NIC), bytes, shared by all
    /// its ingress lanes for what arrives after they paused their sender,
    /// instead of `headroom` bytes reserved per ingress port and priority;
    /// 0 = per-port headroom. With a pool, XOFF may use the whole
    /// `port_buffer_bytes`. Default 0.
    pub pfc_headroom_pool: u64,
    /// PFC only: the PFC watchdog (SONiC / Arista / Mellanox "drop" action):
    /// an egress lane paused continuously for longer than this stops honouring
    /// PAUSE and drops what it holds and what joins it, for the same period
    /// again unless [`PacketConfig::pfc_watchdog_restore`] says otherwise, ps;
    /// [`SimTime::ZERO`] = off. Default off.
    pub pfc_watchdog: SimTime,
    /// PFC only: the watchdog's recovery period (SONiC's `restoration_time`,
    /// Arista's recovery time): a lane it fired on drops, and ignores PAUSE,
    /// for this long, then honours PAUSE again, ps; [`SimTime::ZERO`] = the
    /// detection period [`PacketConfig::pfc_watchdog`] (SONiC's
    /// `pfcwd start_default`: 200 ms both). Default zero.
    pub pfc_watchdog_restore: SimTime,
    /// Record every PFC frame put on the wire in [`PacketStats::pfc_frame_trace`]
    /// (a diagnostic, off by default: it allocates per frame).
    pub pfc_trace: bool,
    /// ECN marking at the egress queues of switch ports (RED-like, per
    /// queue), or `None`. Default `None`.
    pub ecn: Option<Ecn>,
    /// Where a switch marks: from the queue a packet leaves behind at
    /// dequeue (default, [`EcnMarkAt::Dequeue`]) or the one it joins.
    pub ecn_mark_at: EcnMarkAt,
    /// Congestion control of the queue pairs. Default `None`.
    pub cc: CongestionControl,
    /// Traffic classes ([`classes`]): class `i` rides lane `i`, lanes are
    /// scheduled by the classes' priorities and DWRR weights, admitted
    /// lossless or lossy under PFC, marked with the class's ECN thresholds;
    /// ACKs and CNPs ride the classes named for them. `None` (default): strict
    /// priority highest lane first, data on lane 0, ACKs and CNPs on the top lane.
    pub classes: Option<TrafficClasses>,
    /// Time-series sampling interval, picoseconds; 0 = off. Default 0.
    pub sample_interval: SimTime,
    /// Ports reported in the time series (the ones with the largest queues). Default 4.
    pub series_ports: u32,
    /// Samples kept per port; when full, every other sample is discarded and the
    /// interval doubles, so memory stays bounded. Default 512.
    pub series_max_samples: u32,
    /// Give up when simulated time passes this, picoseconds. Default 60 s, the
    /// scenario's default ([`crate::mechanism::defaults::TIME_LIMIT`]).
    pub time_limit: SimTime,
}

impl Default for PacketConfig {
    fn default() -> Self {
        PacketConfig {
            seed: 1,
            mtu: defaults::MTU as u32,
            header_bytes: 26,
            ack_bytes: 30,
            cnp_bytes: 42,
            vls: defaults::VIRTUAL_LANES,
            flow_control: FlowControl::Credit,
            credit_block_bytes: 64,
            port_buffer_bytes: defaults::PORT_BUFFER,
            host_buffer_bytes: 256 << 10,
            shared_buffer_bytes: 0,
            shared_buffer_alpha: defaults::SHARED_BUFFER_ALPHA,
            routing: Routing::Ecmp,
            flowlet_gap: defaults::FLOWLET_GAP,
            window_bytes: defaults::RDMA_WINDOW,
            window_bdp: false,
            ack_every: defaults::ACK_EVERY,
            rto: defaults::RTO,
            loss_recovery: LossRecovery::GoBackN,
            rto_low: defaults::RTO_LOW,
            tcp_min_rto: defaults::TCP_MIN_RTO,
            tcp_max_rto: defaults::TCP_MAX_RTO,
            tcp_delayed_ack: defaults::TCP_DELAYED_ACK,
            tcp_sack: defaults::TCP_SACK,
            tcp_rack: defaults::TCP_RACK,
            tcp_dsack: defaults::TCP_DSACK,
            tcp_tso_bytes: 0,
            trimming: false,
            host_path: HostPath::GpuDirect,
            transport: Transport::Rdma,
            link_events: Vec::new(),
            vl_escalation: false,
            deadlock_timeout: defaults::DEADLOCK_TIMEOUT,
            cut_through: false,
            pfc_pause_quanta: 0,
            pfc_threshold: PfcThreshold::Static,
            pfc_headroom_pool: 0,
            pfc_watchdog: SimTime::ZERO,
            pfc_watchdog_restore: SimTime::ZERO,
            pfc_trace: false,
            ecn: None,
            ecn_mark_at: defaults::ECN_MARK_AT,
            cc: CongestionControl::None,
            classes: None,
            sample_interval: SimTime::ZERO,
            series_ports: 4,
            series_max_samples: 512,
            time_limit: defaults::TIME_LIMIT,
        }
    }
}

impl PacketConfig {
    /// Wire bytes of a data packet carrying `payload` bytes.
    pub fn wire_bytes(&self, payload: u64) -> u64 {
        payload + self.header_bytes as u64
    }
    /// Wire bytes of a whole message of `bytes` payload (every packet pays a header).
    pub fn message_wire_bytes(&self, bytes: u64) -> u64 {
        let pkts = bytes.div_ceil(self.mtu as u64).max(1);
        bytes + pkts * self.header_bytes as u64
    }
    /// Payload fraction of a full packet, `mtu / (mtu + header)`; what the
    /// analytical and flow backends pass to `Topology::set_network_efficiency`.
    pub fn efficiency(&self) -> f64 {
        self.mtu as f64 / (self.mtu + self.header_bytes) as f64
    }

    fn validate(&self, topo: &Topology) -> Result<(), PacketError> {
        let bad =
            |field: &'static str, message: String| Err(PacketError::Config { field, message });
        if self.mtu == 0 || u64::from(self.mtu) > defaults::MAX_MTU {
            return bad(
                "mtu",
                format!(
                    "between 1 byte and 64 KiB (65536), e.g. 4096; found {}",
                    self.mtu
                ),
            );
        }
        let max_header = defaults::MAX_HEADER_BYTES;
        if u64::from(self.header_bytes) > max_header
            || self.ack_bytes == 0
            || u64::from(self.ack_bytes) > max_header
            || self.cnp_bytes == 0
            || u64::from(self.cnp_bytes) > max_header
        {
            return bad(
                "header_bytes/ack_bytes",
                format!(
                    "headers of at most 4096 bytes, ACKs and CNPs of 1..=4096 bytes, found {}, {} and {}",
                    self.header_bytes, self.ack_bytes, self.cnp_bytes
                ),
            );
        }
        if !(1..=defaults::MAX_VIRTUAL_LANES).contains(&self.vls) {
            return bad(
                "vls",
                format!("between 1 and 8 virtual lanes, found {}", self.vls),
            );
        }
        if let Some(tc) = &self.classes {
            let n = tc.classes.len();
            let lanes = usize::from(self.vls);
            let in_range = |c: Option<u8>| c.is_none_or(|c| usize::from(c) < n);
            if n == 0
                || n > lanes
                || usize::from(tc.data) >= n
                || !in_range(tc.ack)
                || !in_range(tc.cnp)
            {
                return bad(
                    "classes",
                    format!("1 to {lanes} classes (one per lane), and data, ACK and CNP classes among them; found {n}"),
                );
            }
            if self.vl_escalation {
                return bad(
                    "classes",
                    "traffic classes with lane escalation: escalation moves data across lanes, hence across classes".into(),
                );
            }
            if tc.classes.iter().any(|c| {
                c.weight
                    .is_some_and(|w| w == 0 || w > crate::mechanism::MAX_CLASS_WEIGHT)
                    || c.ecn.is_some_and(|e| e.check().is_err())
            }) {
                return bad(
                    "classes",
                    "class weights in 1..=1000 and ECN thresholds with kmin <= kmax, pmax in (0, 1]".into(),
                );
            }
        }
        if self.credit_block_bytes == 0 {
            return bad(
                "credit_block_bytes",
                "a credit must cover at least 1 byte, e.g. 64".into(),
            );
        }
        let max_pkt = (self.mtu + self.header_bytes)
            .max(self.ack_bytes)
            .max(self.cnp_bytes) as u64;
        if self.port_buffer_bytes < max_pkt {
            return bad(
                "port_buffer_bytes",
                format!(
                    "must hold one full packet ({max_pkt} bytes), found {}",
                    self.port_buffer_bytes
                ),
            );
        }
        if self.host_buffer_bytes < max_pkt {
            return bad(
                "host_buffer_bytes",
                format!(
                    "must hold one full packet ({max_pkt} bytes), found {}",
                    self.host_buffer_bytes
                ),
            );
        }
        if self.shared_buffer_bytes != 0 && self.shared_buffer_bytes < max_pkt {
            return bad(
                "shared_buffer_bytes",
                format!("0 (off) or at least one packet ({max_pkt} bytes)"),
            );
        }
        if !(self.shared_buffer_alpha.is_finite() && self.shared_buffer_alpha > 0.0) {
            return bad(
                "shared_buffer_alpha",
                "a positive number such as 1.0".into(),
            );
        }
        if self.routing == Routing::Flowlet && self.flowlet_gap == SimTime::ZERO {
            return bad(
                "flowlet_gap",
                "a flowlet gap above zero, such as 100 µs".into(),
            );
        }
        if self.ack_every == 0
            || self.rto == SimTime::ZERO
            || self.deadlock_timeout == SimTime::ZERO
        {
            return bad(
                "ack_every/rto/deadlock_timeout",
                "ACK interval, RTO and deadlock timeout must be positive".into(),
            );
        }
        if self.loss_recovery == LossRecovery::SelectiveRepeat && self.rto_low == SimTime::ZERO {
            return bad(
                "rto_low",
                "a short retransmission timeout above zero, such as 100 µs (IRN's RTO_low)".into(),
            );
        }
        if self.loss_recovery == LossRecovery::Tcp
            && (self.tcp_min_rto < defaults::TCP_MIN_RTO_FLOOR
                || self.tcp_max_rto < self.tcp_min_rto)
        {
            return bad(
                "tcp_min_rto/tcp_max_rto",
                "a minimum RTO of at least 1 µs and a maximum at least as large, such as 200 ms and 120 s".into(),
            );
        }
        if self.tcp_delayed_ack >= defaults::TCP_DELAYED_ACK_LIMIT {
            return bad(
                "tcp_delayed_ack",
                "a delayed-ACK timer below 500 ms (RFC 1122 §4.2.3.2), such as 40 ms, or 0 (off)"
                    .into(),
            );
        }
        if let HostPath::HostStaged { copy_rate, .. } = self.host_path {
            if copy_rate.0 == 0 {
                return bad(
                    "host_path.copy_rate",
                    "a positive rate such as 200Gbps".into(),
                );
            }
        }
        if let FlowControl::Pfc {
            xoff,
            xon,
            headroom,
        } = self.flow_control
        {
            if xon > xoff || xoff < max_pkt {
                return bad(
                    "pfc_xon/pfc_xoff",
                    format!("need one packet ({max_pkt} bytes) <= XON <= XOFF; found XON {xon}, XOFF {xoff}"),
                );
            }
            // a headroom pool takes what arrives after XOFF, so XOFF alone must
            // fit the port's buffer; a dynamic XOFF is bounded by the shared buffer
            let reserved = if self.pfc_headroom_pool > 0 {
                0
            } else {
                headroom
            };
            let dynamic = matches!(self.pfc_threshold, PfcThreshold::Dynamic { .. });
            if !dynamic
                && !crate::mechanism::pfc_fits_buffer(xoff, reserved, self.port_buffer_bytes)
            {
                return bad(
                    "pfc_xoff",
                    format!(
                        "XOFF {xoff} + headroom {headroom} bytes exceed the buffer per port and priority ({} bytes)",
                        self.port_buffer_bytes
                    ),
                );
            }
            for (i, l) in topo.links.iter().enumerate() {
                if l.kind != crate::topology::LinkKind::Network {
                    continue;
                }
                let fwd = topo.nodes[l.to.0 as usize].latency;
                let need =
                    pfc_headroom_needed(l.rate, l.latency, fwd, self.mtu + self.header_bytes);
                let (have, field) = if self.pfc_headroom_pool > 0 {
                    (self.pfc_headroom_pool, "pfc_headroom_pool")
                } else {
                    (headroom, "pfc_headroom")
                };
                if have < need {
                    return bad(
                        field,
                        format!(
                            "{have} bytes cannot hold what is in flight while a PAUSE takes effect on link {i} ({} at {}): (2 x latency + forwarding latency {}) x rate + 3 x (MTU + header) + 84 = {need} bytes",
                            l.rate, l.latency, fwd
                        ),
                    );
                }
            }
        }
        if let PfcThreshold::Dynamic { alpha } = self.pfc_threshold {
            if !(alpha.is_finite() && alpha > 0.0) {
                return bad(
                    "pfc_threshold.alpha",
                    format!("a positive dynamic-threshold factor such as 1.0, found {alpha}"),
                );
            }
            if matches!(self.flow_control, FlowControl::Pfc { .. }) && self.shared_buffer_bytes == 0
            {
                return bad(
                    "pfc_threshold",
                    "a dynamic XOFF is a share of the free shared buffer: set shared_buffer_bytes"
                        .into(),
                );
            }
        }
        if self.pfc_pause_quanta > defaults::MAX_PAUSE_QUANTA {
            return bad(
                "pfc_pause_quanta",
                format!(
                    "0 (until RESUME) to 65535 quanta, found {}",
                    self.pfc_pause_quanta
                ),
            );
        }
        if let Some(e) = &self.ecn {
            if let Err(m) = e.check() {
                return bad("ecn", m);
            }
        }
        if let Err((field, m)) = self.cc.check() {
            return bad(field, m);
        }
        for e in &self.link_events {
            if e.link.0 as usize >= topo.links.len() {
                return bad(
                    "link_events.link",
                    format!(
                        "link {} does not exist ({} links)",
                        e.link.0,
                        topo.links.len()
                    ),
                );
            }
            match e.kind {
                LinkEventKind::Rate(r) if r.0 == 0 => {
                    return bad(
                        "link_events.rate",
                        "a rate change must be positive; use Down to stop a link".into(),
                    )
                }
                LinkEventKind::Ber(b) if !(0.0..1.0).contains(&b) => {
                    return bad(
                        "link_events.ber",
                        format!("a probability in [0, 1), found {b}"),
                    )
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Why a packet-level run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PacketError {
    /// A configuration value is out of range.
    #[error("packet config `{field}`: {message}")]
    Config {
        /// The field at fault.
        field: &'static str,
        /// What is wrong and what would fit.
        message: String,
    },
    /// A transfer's destination cannot be reached from its source at posting time.
    #[error("transfer task {task}: GPU {src} cannot reach GPU {dst}")]
    Unreachable {
        /// Task index.
        task: u32,
        /// Source GPU.
        src: u32,
        /// Destination GPU.
        dst: u32,
    },
    /// No event is pending but tasks are not complete (a dependency can never be met).
    #[error("run stalled at {at}: {done} of {total} tasks complete and nothing pending")]
    Stalled {
        /// Simulated time of the stall.
        at: SimTime,
        /// Completed tasks.
        done: usize,
        /// All tasks.
        total: usize,
    },
    /// Packets wait in buffers but none has moved for
    /// [`PacketConfig::deadlock_timeout`]: a cyclic wait for credits (e.g. a
    /// dragonfly without [`PacketConfig::vl_escalation`]).
    #[error(
        "credit deadlock: {packets} packets stuck, nothing transmitted since {since} (detected at {at}); links waiting for credits form the cycle {}; cyclic buffer dependencies need more lanes (vl_escalation)",
        fmt_cycle(cycle)
    )]
    Deadlock {
        /// When it was detected.
        at: SimTime,
        /// Last transmission anywhere.
        since: SimTime,
        /// Packets alive (stuck in buffers).
        packets: u64,
        /// The cycle of links out of credits, each waiting for the next to
        /// free the buffer its packets hold, as (link id, sending node,
        /// receiving node); empty if the stuck links form no cycle.
        cycle: Vec<(u32, u32, u32)>,
        /// The fabric's counters up to the deadlock (credit stalls, queues, bytes).
        fabric: Box<FabricCounters>,
        /// Per-link counters up to the deadlock (links that carried traffic).
        links: Vec<LinkCounters>,
        /// Events simulated up to the deadlock.
        events: u64,
    },
    /// PFC deadlock: lanes paused on a cycle of links, each waiting for the next
    /// to drain, and nothing transmitted for [`PacketConfig::deadlock_timeout`].
    #[error(
        "PFC deadlock at {at}: nothing transmitted since {since}; paused links form the cycle {}",
        fmt_cycle(cycle)
    )]
    PfcDeadlock {
        /// When it was detected.
        at: SimTime,
        /// Last transmission anywhere.
        since: SimTime,
        /// The cycle of paused links, as (link id, sending node, receiving node);
        /// empty if paused links exist but no cycle was found among them.
        cycle: Vec<(u32, u32, u32)>,
        /// The fabric's counters up to the deadlock (PAUSE frames, queues, bytes).
        fabric: Box<FabricCounters>,
        /// Per-link counters up to the deadlock (links that carried traffic;
        /// the paused ones show their paused time).
        links: Vec<LinkCounters>,
        /// Events simulated up to the deadlock.
        events: u64,
    },
    /// Simulated time passed [`PacketConfig::time_limit`] (e.g. a destination cut off by faults).
    #[error("time limit {at} reached with {done} of {total} tasks complete (raise simulation.time_limit)")]
    TimeLimit {
        /// The limit.
        at: SimTime,
        /// Completed tasks.
        done: usize,
        /// All tasks.
        total: usize,
    },
    /// The run was asked for in more than one partition (the doc-hidden
    /// [`PARTITIONS`] hook, issue 16) and cannot be split: the fabric does
    /// not partition, or something would cross partitions with no latency
    /// (a credit-controlled cut link, UGAL-G, a DAG edge between
    /// partitions). One partition runs it.
    #[error("packet run in {parts} partitions: {message}")]
    Partition {
        /// Partitions asked for.
        parts: u32,
        /// What crosses, where, and why it cannot.
        message: String,
    },
}

/// `link 3 (node 1 -> node 2) => …`, or `(none found)`.
pub(crate) fn fmt_cycle(c: &[(u32, u32, u32)]) -> String {
    if c.is_empty() {
        return "(none found)".into();
    }
    c.iter()
        .map(|(l, a, b)| format!("link {l} (node {a} -> node {b})"))
        .collect::<Vec<_>>()
        .join(" => ")
}

/// Runs `dag` on `topo` at packet level.
///
/// # Errors
/// See [`PacketError`]: a bad configuration, an unreachable destination, a stall,
/// or the time limit.
pub fn run(dag: &Dag, topo: &Topology, cfg: &PacketConfig) -> Result<RunOutput, PacketError> {
    run_detailed(dag, topo, cfg).map(|(o, _)| o)
}

/// Like [`run`], also returning the packet-level counters.
///
/// # Errors
/// As [`run`].
pub fn run_detailed(
    dag: &Dag,
    topo: &Topology,
    cfg: &PacketConfig,
) -> Result<(RunOutput, PacketStats), PacketError> {
    simulate(dag, topo, cfg, None, None).map_err(|s| s.error)
}

/// Like [`run_detailed`], with a progress observer and a link timeline when
/// asked for, and a PFC deadlock as a
/// [`BackendError::Deadlock`] that names the operations in flight: the entry
/// point's ([`crate::backend::run`]) view of the packet level.
///
/// # Errors
/// [`BackendError::Deadlock`] for a PFC deadlock, [`BackendError::Packet`] otherwise.
pub(crate) fn run_observed(
    dag: &Dag,
    topo: &Topology,
    cfg: &PacketConfig,
    progress: Option<&ProgressHook>,
    timeline: Option<TimelineRequest>,
) -> Result<(RunOutput, PacketStats), BackendError> {
    simulate(dag, topo, cfg, progress, timeline).map_err(|s| match s.error.into_deadlock() {
        Ok(mut d) => {
            d.ops_in_flight = s
                .ops_in_flight
                .iter()
                .filter_map(|&o| dag.ops.get(o as usize).map(|op| op.label.clone()))
                .collect();
            BackendError::Deadlock(Box::new(d))
        }
        Err(e) => BackendError::Packet(e),
    })
}

impl PacketError {
    /// A PFC or credit deadlock as the entry point reports it (its operations
    /// in flight left to the caller), or the error itself.
    fn into_deadlock(self) -> Result<Deadlock, PacketError> {
        let (kind, at, since, cycle, fabric, links, events) = match self {
            PacketError::PfcDeadlock {
                at,
                since,
                cycle,
                fabric,
                links,
                events,
            } => (DeadlockKind::Pfc, at, since, cycle, fabric, links, events),
            PacketError::Deadlock {
                at,
                since,
                cycle,
                fabric,
                links,
                events,
                ..
            } => (
                DeadlockKind::Credit,
                at,
                since,
                cycle,
                fabric,
                links,
                events,
            ),
            e => return Err(e),
        };
        Ok(Deadlock {
            kind,
            at,
            since,
            cycle,
            ops_in_flight: Vec::new(),
            fabric: *fabric,
            links,
            events,
        })
    }

    /// A deadlock error with the counters `out` of the run it stopped (the
    /// simulation fills them from `finish`, which consumes it); other errors
    /// unchanged.
    fn with_counters(mut self, out: RunOutput) -> PacketError {
        if let PacketError::PfcDeadlock {
            fabric,
            links,
            events,
            ..
        }
        | PacketError::Deadlock {
            fabric,
            links,
            events,
            ..
        } = &mut self
        {
            **fabric = out.fabric;
            *links = out.links;
            *events = out.events;
        }
        self
    }
}

/// A packet run that stopped early: why, and the operations (indices into
/// `Dag::ops`) that had a task started and not done, read before `finish`
/// consumes the runner.
struct Stopped {
    error: PacketError,
    ops_in_flight: Vec<u32>,
}

impl From<PacketError> for Stopped {
    fn from(error: PacketError) -> Stopped {
        Stopped {
            error,
            ops_in_flight: Vec::new(),
        }
    }
}

fn simulate(
    dag: &Dag,
    topo: &Topology,
    cfg: &PacketConfig,
    progress: Option<&ProgressHook>,
    timeline: Option<TimelineRequest>,
) -> Result<(RunOutput, PacketStats), Stopped> {
    let parts = PARTITIONS.load(std::sync::atomic::Ordering::Relaxed);
    simulate_in(dag, topo, cfg, progress, timeline, parts)
}

/// [`run_detailed`] in `parts` partitions (0: the one-queue loop), without
/// the process-wide hook: the crate's tests, which run on many threads.
#[cfg(test)]
pub(crate) fn run_partitioned(
    dag: &Dag,
    topo: &Topology,
    cfg: &PacketConfig,
    parts: u32,
) -> Result<(RunOutput, PacketStats), PacketError> {
    simulate_in(dag, topo, cfg, None, None, parts).map_err(|s| s.error)
}

/// [`simulate`] in `parts` partitions ([`PARTITIONS`]).
fn simulate_in(
    dag: &Dag,
    topo: &Topology,
    cfg: &PacketConfig,
    progress: Option<&ProgressHook>,
    timeline: Option<TimelineRequest>,
    parts: u32,
) -> Result<(RunOutput, PacketStats), Stopped> {
    cfg.validate(topo)?;
    if dag
        .tasks()
        .any(|t| matches!(t.kind, crate::dag::TaskKind::NetTransfer { .. }))
    {
        return Err(sim::net_transfer_unsupported().into());
    }
    let partitioning = if parts > 0 {
        Some(partitioned(dag, topo, parts)?)
    } else {
        None
    };
    let mut s = sim::Sim::new(dag, topo, cfg);
    if let Some(part) = &partitioning {
        if parts > 1 {
            // a credit-controlled cut link: the receiver puts credits into
            // the sender's FIFO and reads whether it is starved, at once
            if let Some(&l) = part
                .cut
                .iter()
                .find(|&&l| s.ports[ids::PortId::from(l)].fc == flow_control::LinkLaw::Credit)
            {
                let link = &topo.links[l.0 as usize];
                return Err(PacketError::Partition {
                    parts,
                    message: format!(
                        "link {} (node {} -> node {}) joins partitions {} and {} and is credit-controlled: its receiver returns credits into the sender's FIFO and reads the sender's credit stall at zero delay (and UGAL-L's per-class occupancy rides on them); credit returns are not yet messages (issue 16, M2b)",
                        l.0,
                        link.from.0,
                        link.to.0,
                        part.of(link.from),
                        part.of(link.to)
                    ),
                }
                .into());
            }
        }
        s.q.parts = Some(Box::new(window::Parts::new(topo, part)));
    }
    if let Some(p) = progress {
        s.progress = Some(p.clone());
        s.next_progress = PROGRESS_EVERY;
    }
    if let Some(t) = timeline {
        s.timeline = Some(Box::new(Timeline::new(topo.links.len(), t.horizon)));
        s.timeline_links = t.links;
    }
    let result = s.run();
    if let Some(p) = &s.q.parts {
        WINDOW_VIOLATIONS.fetch_add(p.violations, std::sync::atomic::Ordering::Relaxed);
    }
    match result {
        Ok(()) => Ok(s.finish()),
        // A deadlock is a finding: it keeps the counters of what led to it.
        Err(e @ (PacketError::PfcDeadlock { .. } | PacketError::Deadlock { .. })) => {
            let ops_in_flight = s.runner.ops_in_flight();
            let (out, _) = s.finish();
            Err(Stopped {
                error: e.with_counters(out),
                ops_in_flight,
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// The partitioning of a run asked for in `parts` partitions, or why it
/// cannot be split (checks that need no simulation state: the fabric,
/// UGAL-G, the DAG's edges).
fn partitioned(
    dag: &Dag,
    topo: &Topology,
    parts: u32,
) -> Result<crate::topology::partition::Partitioning, PacketError> {
    let refuse = |message: String| PacketError::Partition { parts, message };
    let part =
        crate::topology::partition::partition(topo, parts).map_err(|e| refuse(e.to_string()))?;
    if parts == 1 {
        return Ok(part);
    }
    if topo.dragonfly_routing() == crate::topology::DragonflyRouting::UgalG {
        return Err(refuse(
            "dragonfly routing UGAL-G reads the queues along whole remote paths at zero delay (an oracle with global knowledge); use UGAL-L or one partition".into(),
        ));
    }
    if let Some(c) = crate::backend::partition::first_crossing(dag, topo, &part) {
        let what = |t: crate::dag::TaskId| {
            let task = dag.task(t.0 as usize);
            let label = dag
                .ops
                .get(task.op as usize)
                .map_or("", |o| o.label.as_str());
            format!("task {} ({:?}, op `{label}`)", t.0, dag.kind(t.0 as usize))
        };
        return Err(refuse(format!(
            "{} waits on {}: met in partition {}, released in partition {} at zero delay (a DAG edge between partitions cannot be delivered within a window; docs/parallel-engine.md)",
            what(c.task),
            what(c.dep),
            c.from,
            c.to
        )));
    }
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::Dep;
    use crate::topology::{GpuId, LinkId};

    fn topo(hosts: u32, gpus: u32) -> Topology {
        crate::topology::builder::small_single_switch(hosts, gpus)
    }

    fn checked(dag: &Dag, t: &Topology, cfg: &PacketConfig) -> (RunOutput, PacketStats) {
        let (o, s) = run_detailed(dag, t, cfg).unwrap();
        s.check_conservation().unwrap();
        assert_eq!(o.fabric.bytes_delivered, dag.transfer_bytes());
        (o, s)
    }

    #[test]
    fn compute_markers_self_and_empty_transfers_complete() {
        let t = topo(2, 2);
        let mut d = Dag::new();
        d.begin_op("mix");
        let c = d.compute(GpuId(0), SimTime::from_us(3), &[]);
        let m = d.marker(&[Dep::Done(c)]);
        let own = d.transfer(GpuId(1), GpuId(1), 1000, &[Dep::Done(m)]);
        let empty = d.transfer(GpuId(0), GpuId(2), 0, &[Dep::Done(own)]);
        d.transfer(GpuId(0), GpuId(1), 10_000, &[Dep::Sent(empty)]);
        let (o, _) = checked(&d, &t, &PacketConfig::default());
        assert!(o.makespan >= SimTime::from_us(3));
        assert_eq!(o.transfer_fct.len(), 3);
    }

    #[test]
    fn intra_host_transfers_use_nvlink() {
        // 1 MiB over NVLink at 3.6 Tb/s ≈ 2.3 µs of serialization, far below the 21 µs a 400 Gb/s NIC needs.
        let t = topo(1, 2);
        let mut d = Dag::new();
        d.begin_op("nvlink");
        d.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        let (o, _) = checked(&d, &t, &PacketConfig::default());
        assert!(o.makespan < SimTime::from_us(4), "{}", o.makespan);
    }

    #[test]
    fn sent_dependency_fires_before_done() {
        let t = topo(2, 1);
        let mut d = Dag::new();
        d.begin_op("chain");
        let a = d.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        let m = d.marker(&[Dep::Sent(a)]);
        let (o, _) = checked(&d, &t, &PacketConfig::default());
        let _ = m;
        // The marker is the op's last task only if Sent fired before Done; op end is Done of `a`.
        assert_eq!(o.op_timing[0].end, o.makespan);
    }

    #[test]
    fn shared_buffer_lossy_incast_drops_and_recovers() {
        let t = topo(9, 1);
        let mut d = Dag::new();
        d.begin_op("incast");
        for s in 1..9 {
            d.transfer(GpuId(s), GpuId(0), 256 << 10, &[]);
        }
        let cfg = PacketConfig {
            flow_control: FlowControl::Lossy,
            shared_buffer_bytes: 64 << 10,
            shared_buffer_alpha: 1.0,
            rto: SimTime::from_us(20),
            ..PacketConfig::default()
        };
        let (o, s) = checked(&d, &t, &cfg);
        assert!(s.drops_buffer > 0 && o.fabric.retransmitted_packets > 0);
        // Dynamic threshold with α = 1: a packet joins while q + w ≤ B − q, so one
        // queue holds at most (B + w) / 2 (Choudhury & Hahne's half of the buffer,
        // plus one packet): the switch port towards the receiver.
        let down = t.nics[0].downlink.0;
        let q = o
            .links
            .iter()
            .find(|l| l.link == down)
            .unwrap()
            .max_queue_bytes;
        assert!(q <= ((64 << 10) + 4122) / 2 && q > 16 << 10, "{q}");
    }

    #[test]
    fn bad_configs_name_their_field() {
        let t = topo(2, 1);
        let d = Dag::new();
        let cases: [(PacketConfig, &str); 4] = [
            (
                PacketConfig {
                    mtu: 0,
                    ..Default::default()
                },
                "mtu",
            ),
            (
                PacketConfig {
                    vls: 0,
                    ..Default::default()
                },
                "vls",
            ),
            (
                PacketConfig {
                    port_buffer_bytes: 100,
                    ..Default::default()
                },
                "port_buffer_bytes",
            ),
            (
                PacketConfig {
                    link_events: vec![LinkEvent {
                        at: SimTime::ZERO,
                        link: LinkId(9999),
                        kind: LinkEventKind::Down,
                    }],
                    ..Default::default()
                },
                "link_events.link",
            ),
        ];
        for (cfg, field) in cases {
            match run(&d, &t, &cfg) {
                Err(PacketError::Config { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_cut_off_destination_hits_the_time_limit() {
        let t = topo(2, 1);
        let mut d = Dag::new();
        d.begin_op("cut");
        d.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        let cfg = PacketConfig {
            link_events: vec![LinkEvent {
                at: SimTime::from_us(5),
                link: t.nics[1].downlink,
                kind: LinkEventKind::Down,
            }],
            time_limit: SimTime::from_us(500),
            rto: SimTime::from_us(20),
            ..Default::default()
        };
        assert!(matches!(
            run(&d, &t, &cfg),
            Err(PacketError::TimeLimit { .. })
        ));
    }
}
