//! Defaults and limits of the packet level that a scenario and a directly
//! built `backend::packet::PacketConfig` share. They lived twice — as strings
//! in `config` and as numbers in `PacketConfig::default` — and a change to one
//! silently made a scenario and a library user simulate different fabrics;
//! here each is stated once and both sides read it.

use super::cc::{DcqcnProfile, EcnMarkAt};
use crate::units::{Rate, SimTime};

/// Largest payload per packet when neither the file nor a preset sets one, bytes.
pub const MTU: u64 = 4096;

/// Largest MTU either side accepts, bytes (64 KiB).
pub const MAX_MTU: u64 = 65536;

/// Most header (and ACK) bytes per packet either side accepts.
pub const MAX_HEADER_BYTES: u64 = 4096;

/// Buffer per port and virtual lane, bytes (a per-port share of a
/// Quantum-2-class switch buffer; vendors publish only the shared total).
pub const PORT_BUFFER: u64 = 128 << 10;

/// Dynamic-threshold α of a shared buffer (Choudhury & Hahne 1998).
pub const SHARED_BUFFER_ALPHA: f64 = 1.0;

/// α of PFC's dynamic XOFF (`pfc_threshold = "dynamic"`): 1, the lossy
/// shared buffer's default (one busy lane may hold half the free buffer).
/// HPCC's simulator sets `pfc_a_shift` per port (α = 2^-shift) and its
/// scripts leave it 0 on hosts (α = 1); vendors expose α as a per-pool
/// setting without one published default.
pub const PFC_ALPHA: f64 = 1.0;

/// Virtual lanes per port.
pub const VIRTUAL_LANES: u8 = 2;

/// Most virtual lanes per port (InfiniBand's data VLs in use, Ethernet priorities).
pub const MAX_VIRTUAL_LANES: u8 = 8;

/// Unacknowledged bytes per queue pair where a window is needed — the TCP
/// path, and RDMA under reordering routings (adaptive, flowlet, spray), whose
/// receiver tracks out-of-order PSNs in a bounded bitmap: about the
/// bandwidth-delay product of 400 Gb/s over a 10 µs round trip (see
/// `PacketConfig::window_bytes`).
pub const WINDOW: u64 = 512 << 10;

/// Unacknowledged bytes per queue pair of RDMA reliable-connection writes
/// under in-order (ECMP) routing: 0 = no limit. An RC queue pair is bounded
/// only by its 24-bit PSN space (2^23 packets outstanding, IBA vol. 1
/// §9.7.1); the NIC limit on outstanding requests (`max_rd_atomic`, 16 on
/// ConnectX) applies to RDMA reads and atomics, not to the writes and sends
/// NCCL posts. See `PacketConfig::window_bytes`.
pub const RDMA_WINDOW: u64 = 0;

/// The receiver ACKs every this many packets.
pub const ACK_EVERY: u32 = 4;

/// Retransmission timeout of InfiniBand and TCP-path fabrics: 4.096 µs × 2^8,
/// the IB local-ACK-timeout encoding with value 8 (see `PacketConfig::rto`).
pub const RTO: SimTime = SimTime(1_048_576_000);

/// Retransmission timeout of RoCE queue pairs: the NIC's local-ACK timeout
/// 4.096 µs × 2^`timeout` (IBA vol. 1 §9.7.6.1.3) with the value NCCL sets,
/// `NCCL_IB_TIMEOUT` = 20 (NCCL environment-variable documentation): 4.096 µs
/// × 2^20 ≈ 4.295 s. A RoCE NIC does not time out during a PFC incast.
pub const ROCE_RTO: SimTime = SimTime(4_096_000 << 20);

/// Selective repeat's short retransmission timeout, used while at most
/// [`RTO_LOW_PACKETS`] packets are outstanding: IRN's RTO_low, 100 µs for
/// 40 Gb/s links (Mittal et al., SIGCOMM 2018, §4.1; its RTO_high of 320 µs
/// is `rto`, which a scenario sets). See `PacketConfig::rto_low`.
pub const RTO_LOW: SimTime = SimTime::from_us(100);
/// Shortest `rto_low` accepted: 1 µs, the order of one switch hop's round
/// trip; a shorter timer fires for every packet in flight without end.
pub const RTO_LOW_MIN: SimTime = SimTime(1_000_000);

/// Outstanding packets up to which selective repeat uses [`RTO_LOW`]: IRN's
/// N = 3 (§4.1).
pub const RTO_LOW_PACKETS: u32 = 3;

/// Bytes of the ACK extended transport header (AETH) an ACK adds to a
/// packet's headers (IBA vol. 1 §9.3.5): an ACK on the wire is the data
/// header plus 4 bytes, 26 + 4 = 30 on InfiniBand (LRH 8, BTH 12, AETH 4,
/// ICRC 4, VCRC 2) and 82 + 4 = 86 on RoCEv2 (a 66-byte frame — Ethernet 14,
/// IPv4 20, UDP 8, BTH 12, AETH 4, ICRC 4, FCS 4 — plus 20 bytes of
/// preamble, SFD and inter-frame gap, counted as `header_bytes` counts them).
pub const AETH_BYTES: u32 = 4;

/// Bytes a RoCEv2 CNP adds to the headers: 16 reserved bytes after the BTH
/// (IBTA RoCEv2 annex A17.9.3): 82 + 16 = 98 on the wire.
pub const CNP_PAYLOAD_BYTES: u32 = 16;

/// Idle time that ends a flowlet: the LetFlow/CONGA timeout of the ConWeave
/// ns-3 simulator (see `PacketConfig::flowlet_gap`).
pub const FLOWLET_GAP: SimTime = SimTime::from_us(100);

/// Nothing moved for this long while packets wait: a deadlock.
pub const DEADLOCK_TIMEOUT: SimTime = SimTime(10_000_000_000);

/// Simulated time after which a packet-level run gives up: 60 s.
pub const TIME_LIMIT: SimTime = SimTime(60_000_000_000_000);

/// Most pause quanta one PAUSE frame may carry (a 16-bit field, IEEE 802.1Qbb).
pub const MAX_PAUSE_QUANTA: u32 = 65535;

/// DCTCP's α gain g (Alizadeh et al. 2010).
pub const DCTCP_G: f64 = 1.0 / 16.0;

/// Swift's queue target above the base RTT, in packet times at the NIC's
/// line rate: 16 packets (at 400G and 4 KiB, 1.3 µs; at 100G, 5.3 µs). Swift's
/// deployment sets a fabric target of tens of µs for its 50–100G Ethernet
/// (Kumar et al. 2020, §5); a few tens of packets of standing queue at the
/// bottleneck is what that buys at 100G, and at 400G a buffer of 256 KiB per
/// port and lane holds 64 such packets, so the target stays well below PFC's
/// XOFF and the drop point.
pub const SWIFT_QUEUE_TARGET_PACKETS: u64 = 16;
/// Swift's additive increase, packets per round trip (Algorithm 1, `ai`).
pub const SWIFT_AI: f64 = 1.0;
/// Swift's multiplicative-decrease gain β (htsim's Swift and the paper's
/// Algorithm 1 use 0.8).
pub const SWIFT_BETA: f64 = 0.8;
/// Largest fraction of the window one Swift cut removes (max_mdf = 0.5).
pub const SWIFT_MAX_MDF: f64 = 0.5;
/// Flow-scaling range in queue targets (htsim's Swift: 5 × the base target).
pub const SWIFT_FS_RANGE_TARGETS: u64 = 5;
/// Window at which Swift's flow scaling gives its whole range, packets (0.1).
pub const SWIFT_FS_MIN_CWND: f64 = 0.1;
/// Window above which Swift's flow scaling gives nothing, packets (100).
pub const SWIFT_FS_MAX_CWND: f64 = 100.0;
/// Swift's smallest window, packets: 0.01 lets a 5,000-flow incast share a
/// link (§3.4: cwnd below one packet is paced).
pub const SWIFT_MIN_CWND: f64 = 0.01;

/// HPCC's target utilization η (Li et al., SIGCOMM 2019, §3.3 and §5: 95%;
/// the HPCC simulator's `u_target` 0.95).
pub const HPCC_ETA: f64 = 0.95;
/// HPCC's additive steps before a multiplicative update, maxStage (§3.3: 5).
/// The HPCC simulator's `run.py` sets `mi_thresh` 0 (always the
/// multiplicative form); the paper's 5 is the default here.
pub const HPCC_MAX_STAGE: u32 = 5;
/// HPCC's additive increase as a fraction of the line rate: the HPCC
/// simulator's `run.py` sets `rate_ai` to `10 · bw / 25` Mb/s (40 Mb/s at
/// 100 Gb/s), 1/2500 of the line; in window terms `W_AI = W_init / 2500`,
/// i.e. `W_init (1 − η) / N` with η = 0.95 and N = 125 flows (§3.3).
pub const HPCC_AI_SHARE: f64 = 1.0 / 2500.0;

/// DCQCN parameter set when a scenario names none: what ConnectX NICs ship
/// (the values and their sources: [`DcqcnProfile::Mellanox`]).
pub const DCQCN_PROFILE: DcqcnProfile = DcqcnProfile::Mellanox;

/// Where switches mark ECN: at dequeue, so a mark reports the queue as it is
/// when the packet leaves, not as it was when it joined ([`EcnMarkAt`]).
pub const ECN_MARK_AT: EcnMarkAt = EcnMarkAt::Dequeue;

/// InfiniBand CC switch threshold on the spec's 0–15 scale (IBA vol. 1 Annex
/// A10, SwitchCongestionSetting `Threshold`: 0 marks nothing, 15 is the most
/// aggressive; OpenSM's `cc_sw_cong_setting_threshold`, described there as
/// "0x0 - none, 0x1 - loose, ..., 0xF - aggressive"). The spec leaves the
/// queue depth of each level to the switch; 8 maps to half the port's buffer
/// ([`IbCcParams::threshold_for_level`](super::cc::IbCcParams::threshold_for_level)).
/// Chosen by measurement, not taken from a source: on the 16:1 hot spot of
/// `examples/incast-infiniband-cc.toml` (32 KiB per port and lane at 400G),
/// level 15 (buffer/16, under one 4 KiB packet) lets the hot port's queue run
/// empty between BECN waves and its link idles (makespan 1.536 ms against
/// 1.429 without CC, ccti_timer 2), while level 8 keeps a few packets queued
/// (1.514 ms) and still frees the victim (see tests/ib_cc.rs). Gran et al.
/// (IPDPS 2010) and the LLNL OpenSM study tune the threshold per fabric.
pub const IB_CC_THRESHOLD_LEVEL: u8 = 8;
/// InfiniBand CC `Marking_Rate`: a congested port marks one in every N + 1
/// eligible packets; 0 marks each one (OpenSM: "mean number of packets
/// between markings").
pub const IB_CC_MARKING_RATE: u32 = 0;
/// InfiniBand CC `Packet_Size`: packets smaller than this are not marked,
/// bytes (the spec counts 64-byte credits; OpenSM's default is 0: every size).
pub const IB_CC_PACKET_SIZE: u64 = 0;
/// InfiniBand CC `CCTI_Increase`: CCTI steps per BECN (OpenSM examples and the
/// LLNL tuning study both use 1).
pub const IB_CC_CCTI_INCREASE: u32 = 1;
/// InfiniBand CC `CCTI_Limit`: the largest CCTI, the last entry of a
/// 128-entry Congestion Control Table (the size OpenSM's generated tables
/// and the LLNL study's tables have).
pub const IB_CC_CCTI_LIMIT: u32 = 127;
/// InfiniBand CC `CCTI_Min`: the smallest CCTI (0: full rate when idle).
pub const IB_CC_CCTI_MIN: u32 = 0;
/// InfiniBand CC `CCTI_Timer`, in the spec's units of 1.024 µs: one CCTI step
/// back every 2 units (2.048 µs). The spec leaves the value to the subnet
/// manager and the studies tune it per fabric (the LLNL OpenSM study sweeps
/// 2–8192); 2 is the shortest that sweep tried, ~25 packet times at 400 Gb/s.
/// Measured on `examples/incast-infiniband-cc.toml` (threshold level 8): 2
/// units keep the hot spot's link 94% busy, 5 units free the victim as well
/// but cost 16% of the hot spot's throughput (1.750 ms against 1.514).
pub const IB_CC_CCTI_TIMER_UNITS: u64 = 2;
/// The spec's unit of `CCTI_Timer`: 1.024 µs, in ps.
pub const IB_CC_TIMER_UNIT_PS: u64 = 1_024_000;

/// Smallest retransmission timeout of the TCP path's RFC 6298 timer: 200 ms,
/// Linux's `TCP_RTO_MIN` (include/net/tcp.h), what a host runs unless a route
/// sets `rto_min`. Datacenter studies lower it to 200 µs–1 ms (Vasudevan et
/// al., SIGCOMM 2009) to avoid incast collapse. See `PacketConfig::tcp_min_rto`.
pub const TCP_MIN_RTO: SimTime = SimTime::from_us(200_000);

/// Largest retransmission timeout of the TCP path, backoff included: 120 s,
/// Linux's `TCP_RTO_MAX` (RFC 6298 §2.5 asks for at least 60 s).
pub const TCP_MAX_RTO: SimTime = SimTime::from_us(120_000_000);

/// Shortest `tcp_min_rto` accepted: 1 µs, as `rto_low` (a timer below any
/// round trip fires for every packet in flight without end).
pub const TCP_MIN_RTO_FLOOR: SimTime = SimTime(1_000_000);

/// The TCP receiver's delayed-ACK timer: off (0, an ACK for every segment).
/// RFC 1122 §4.2.3.2 allows delaying an ACK (at most 500 ms, and at least
/// every second full-sized segment acknowledged, RFC 5681 §4.2); Linux's
/// timer is between `TCP_DELACK_MIN` = 40 ms and `TCP_DELACK_MAX` = 200 ms
/// (include/net/tcp.h). Datacenter studies turn it off or shorten it: with
/// a 200 µs RTO a 40 ms delayed ACK stalls incast rounds (Vasudevan et al.,
/// SIGCOMM 2009 §6.2, who recommend disabling it). See
/// `PacketConfig::tcp_delayed_ack`.
pub const TCP_DELAYED_ACK: SimTime = SimTime::ZERO;

/// `fabric.tcp_delayed_ack` must stay below this: RFC 1122 §4.2.3.2 ("the
/// delay MUST be less than 0.5 seconds").
pub const TCP_DELAYED_ACK_LIMIT: SimTime = SimTime::from_us(500_000);

/// SACK (RFC 2018) with RFC 6675's loss recovery on the TCP path: on, as
/// Linux's `net.ipv4.tcp_sack` = 1 default. See `PacketConfig::tcp_sack`.
pub const TCP_SACK: bool = true;

/// RACK-TLP (RFC 8985) on the TCP path with SACK: on, as Linux's
/// `net.ipv4.tcp_recovery` = 1 (RACK, the default since 4.18) and
/// `net.ipv4.tcp_early_retrans` = 3 (TLP). See `PacketConfig::tcp_rack`.
pub const TCP_RACK: bool = true;

/// D-SACK (RFC 2883) on the TCP path with SACK: on, as Linux's
/// `net.ipv4.tcp_dsack` = 1. See `PacketConfig::tcp_dsack`.
pub const TCP_DSACK: bool = true;

/// First congestion window of NewReno and CUBIC, segments: 10 (RFC 6928,
/// Linux's `TCP_INIT_CWND`).
pub const TCP_INITIAL_WINDOW: u32 = 10;

/// CUBIC's constant C, segments per second cubed (RFC 9438 §4.1: 0.4).
pub const CUBIC_C: f64 = 0.4;

/// CUBIC's multiplicative decrease β (RFC 9438 §4.6: 0.7).
pub const CUBIC_BETA: f64 = 0.7;

/// TSO segment of the TCP path in a scenario, payload bytes: 64 KiB, Linux's
/// `GSO_MAX_SIZE` (the largest segment the stack hands a NIC with TCP
/// segmentation offload). See `PacketConfig::tcp_tso_bytes`.
pub const TCP_TSO_BYTES: u64 = 64 << 10;

/// TIMELY's low RTT threshold T_low: below it the rate grows by δ whatever the
/// gradient (Mittal et al., "TIMELY: RTT-based Congestion Control for the
/// Datacenter", SIGCOMM 2015, §6: "Tlow of 50 µs"; the HPCC simulator's
/// `TimelyTLow` 50000 ns).
pub const TIMELY_T_LOW: SimTime = SimTime::from_us(50);
/// TIMELY's high RTT threshold T_high: above it the rate is cut by
/// β (1 − T_high / RTT) (§6: "Thigh of 500 µs"; the HPCC simulator's
/// `TimelyTHigh` 500000 ns).
pub const TIMELY_T_HIGH: SimTime = SimTime::from_us(500);
/// TIMELY's minRTT, the constant the RTT gradient is normalized by (§4.3,
/// Algorithm 1: `normalized_gradient = rtt_diff / minRTT`; 20 µs is the
/// HPCC simulator's `TimelyMinRtt` 20000 ns, the propagation RTT of the
/// paper's testbed order). A constant, not the path's idle round trip: over
/// a few-µs idle RTT one queue build-up gives gradients above 1/β and cuts
/// the rate to its floor (see `fabric.timely.min_rtt = "path"`).
pub const TIMELY_MIN_RTT: SimTime = SimTime::from_us(20);
/// TIMELY's EWMA gain α on RTT differences (Algorithm 1:
/// `rtt_diff = (1 − α) rtt_diff + α new_rtt_diff`; the HPCC simulator's
/// `TimelyAlpha` 0.875).
pub const TIMELY_ALPHA: f64 = 0.875;
/// TIMELY's multiplicative-decrement factor β (§6: "a multiplicative
/// decrement factor (β) of 0.8"; the HPCC simulator's `TimelyBeta` 0.8).
pub const TIMELY_BETA: f64 = 0.8;
/// TIMELY's additive increment δ at 10 Gb/s, bits/s (§6: "additive
/// increment of 10 Mbps", on the paper's 10 Gb/s NICs); a scenario scales it
/// to its NIC's line rate (`TimelyParams::for_line`).
pub const TIMELY_DELTA: Rate = Rate(10_000_000);
/// Consecutive completions with a non-positive gradient before TIMELY's
/// hyper-active increase (Algorithm 1: "N = 5 if gradient < 0 for five
/// completion events (HAI mode)").
pub const TIMELY_HAI_THRESHOLD: u32 = 5;
/// The increase in HAI mode, in δ (Algorithm 1: `rate + N·δ` with N = 5).
pub const TIMELY_HAI_STEPS: f64 = 5.0;
/// TIMELY's completion event, payload bytes: one RTT sample and one rate
/// update per segment (§3.1: segments of 16–64 KB; §6: "segment size of
/// 16 KB").
pub const TIMELY_SEG_BYTES: u64 = 16 << 10;
/// When TIMELY updates its rate (`fabric.timely.update`); see
/// `TimelyUpdate` for the two cadences and `tests/timely.rs` for the
/// two-flow 10G start that decided the default.
pub const TIMELY_UPDATE: crate::mechanism::TimelyUpdate =
    crate::mechanism::TimelyUpdate::Completion;
/// TIMELY's lowest rate, bits/s: the paper states none; the HPCC
/// simulator's `MinRate` (100 Mb/s) floors every rate law it runs.
pub const TIMELY_MIN_RATE: Rate = Rate(100_000_000);
