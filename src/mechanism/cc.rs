//! Congestion-control parameters as a scenario states them: ECN marking
//! thresholds and the law a queue pair runs (with its constants). The laws
//! themselves (state and reactions) live in `backend::packet::cc`, one file
//! per law; this module holds only what `config` builds and validates, so
//! `config` needs no `backend` import.

use crate::units::{Rate, SimTime};

/// Whether `g` is a usable α gain, DCTCP's or DCQCN's: in (0, 1]. The one
/// statement of the rule that `config` and the packet backend both enforce.
pub fn gain_in_range(g: f64) -> bool {
    g > 0.0 && g <= 1.0
}

/// Whether `a` is a usable DCQCN α: in [0, 1].
pub fn alpha_in_range(a: f64) -> bool {
    (0.0..=1.0).contains(&a)
}

/// Whether `p` is a usable ECN marking probability just below Kmax: in (0, 1].
pub fn pmax_in_range(p: f64) -> bool {
    p > 0.0 && p <= 1.0
}

/// RED-style ECN marking thresholds, per egress queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ecn {
    /// Below or at this queue depth nothing is marked, bytes.
    pub kmin: u64,
    /// Above this queue depth everything is marked, bytes (≥ `kmin`); at
    /// exactly `kmax` the probability is `pmax` (RED's ramp ends there).
    pub kmax: u64,
    /// Marking probability at `kmax`, in (0, 1].
    pub pmax: f64,
}

impl Ecn {
    /// Probability of marking a packet against a queue of `q` bytes (the one it
    /// leaves behind at dequeue, or joins at enqueue, [`EcnMarkAt`]): 0 up to
    /// Kmin, rising linearly to Pmax at Kmax inclusive, 1 above Kmax (Floyd &
    /// Jacobson's RED ramp as DCQCN's congestion point runs it, Zhu et al.,
    /// SIGCOMM 2015; the HPCC simulator's `SwitchNode::ShouldSendCN` marks
    /// surely only for `qLen > kmax`). A DCTCP step (Kmin = Kmax) marks
    /// everything above K.
    #[inline]
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q > self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.kmin > self.kmax || !pmax_in_range(self.pmax) {
            return Err(format!(
                "need Kmin <= Kmax and 0 < Pmax <= 1; found Kmin {} Kmax {} Pmax {}",
                self.kmin, self.kmax, self.pmax
            ));
        }
        Ok(())
    }
}

/// Where a switch decides whether to mark a packet CE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMarkAt {
    /// When the packet leaves the egress queue, from the bytes still queued
    /// behind it: the mark reports the queue as it is now, so the feedback
    /// does not lag by the queueing delay the mark is about. What shared-buffer
    /// switch ASICs do and what the HPCC simulator models (`SwitchNode::
    /// SwitchNotifyDequeue` marks in ns-3's `switch-node.cc`). Default
    /// ([`super::defaults::ECN_MARK_AT`]).
    Dequeue,
    /// When the packet joins the egress queue, from the bytes already queued
    /// (RED as first described; the mark then travels behind the whole queue).
    Enqueue,
}

/// A named set of DCQCN parameters, with its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcqcnProfile {
    /// What NVIDIA/Mellanox ConnectX-4 and later NICs ship (NVIDIA, "DCQCN CC
    /// Parameters", DOCA/MLNX_OFED documentation, ConnectX-4+ defaults):
    /// `dce_tcp_g` = 1019 (g = 5/1024), `dce_tcp_rtt` = 1 µs (K),
    /// `initial_alpha_value` = 1023 (α₀ ≈ 1), `rate_reduce_monitor_period` =
    /// 4 µs, `rpg_min_dec_fac` = 50 %, `rpg_min_rate` = 1 Mb/s, `clamp_tgt_rate`
    /// = 0, `rpg_time_reset` = 300 µs (T), `rpg_byte_reset` = 32767 in
    /// 64-byte units, B = 2,097,088 B (the unit: see [`DcqcnParams::mellanox`]),
    /// `rpg_threshold` = 1 (F), `rpg_ai_rate` = 5 Mb/s, `rpg_hai_rate` = 50 Mb/s,
    /// `min_time_between_cnps` = 4 µs (N). The HPCC simulator's `--cc dcqcn`
    /// mode (alibaba-edu/High-Precision-Congestion-Control `simulation/run.py`)
    /// runs the same timers (1, 4, 300 µs, F = 1, clamp 0). Default
    /// ([`super::defaults::DCQCN_PROFILE`]).
    Mellanox,
    /// Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
    /// SIGCOMM 2015: g = 1/256, K = 55 µs, T = 55 µs, B = 10 MB, F = 5,
    /// N = 50 µs, R_AI = 40 Mb/s at 40 Gb/s (scaled here to the line rate),
    /// R_T = R_C on every cut (clamp). What the paper leaves open comes from
    /// the HPCC simulator's `--cc dcqcn_paper` mode: one cut per 50 µs,
    /// R_HAI = 10 × R_AI (its 5 and 50 Mb/s per 25 Gb/s), min rate 1 Gb/s.
    Paper,
}

impl Default for DcqcnProfile {
    fn default() -> Self {
        super::defaults::DCQCN_PROFILE
    }
}

impl Default for EcnMarkAt {
    fn default() -> Self {
        super::defaults::ECN_MARK_AT
    }
}

impl DcqcnProfile {
    /// The profile's name in a scenario (`fabric.dcqcn.profile`).
    pub fn name(self) -> &'static str {
        match self {
            DcqcnProfile::Mellanox => "mellanox",
            DcqcnProfile::Paper => "paper",
        }
    }
}

/// DCQCN parameters (names as in Zhu et al. 2015; the NIC's in brackets).
/// Defaults: [`DcqcnProfile::Mellanox`] at 400 Gb/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnParams {
    /// α gain g [`dce_tcp_g`]: α ← (1 − g) α + g after a period with a CNP,
    /// (1 − g) α after one without.
    pub g: f64,
    /// α update period K [`dce_tcp_rtt`], picoseconds.
    pub alpha_interval: SimTime,
    /// Rate-increase timer T [`rpg_time_reset`], picoseconds.
    pub rate_increase_interval: SimTime,
    /// Byte counter B [`rpg_byte_reset`]: a rate-increase event every this many bytes sent.
    pub byte_counter: u64,
    /// Fast-recovery stages F [`rpg_threshold`]: the first F increase events
    /// of either counter are fast recovery.
    pub fast_recovery_steps: u32,
    /// Additive increase step R_AI [`rpg_ai_rate`], bits/s.
    pub rate_ai: Rate,
    /// Hyper increase step R_HAI [`rpg_hai_rate`], bits/s.
    pub rate_hai: Rate,
    /// Lowest rate a cut can reach [`rpg_min_rate`], bits/s.
    pub min_rate: Rate,
    /// Receiver: at most one CNP per queue pair per this interval N
    /// [`min_time_between_cnps`], picoseconds.
    pub cnp_interval: SimTime,
    /// α set on a queue pair's first CNP [`initial_alpha_value`] / 1024, in [0, 1].
    pub initial_alpha: f64,
    /// At most one rate cut per this period [`rate_reduce_monitor_period`],
    /// picoseconds; CNPs inside it are remembered and cut once at its end.
    pub rate_decrease_interval: SimTime,
    /// [`clamp_tgt_rate`]: on every cut R_T ← R_C. Off: R_T keeps its value
    /// when no rate increase happened since the previous cut, so back-to-back
    /// cuts remember the rate before the congestion.
    pub clamp_tgt_rate: bool,
    /// [`rpg_min_dec_fac`]: one cut leaves at least this fraction of R_C, in [0, 1].
    pub min_dec_fac: f64,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams::mellanox(Rate::gbps(400))
    }
}

impl DcqcnParams {
    /// The parameters of `profile` on a NIC of `line` bits/s.
    pub fn profile(profile: DcqcnProfile, line: Rate) -> DcqcnParams {
        match profile {
            DcqcnProfile::Mellanox => DcqcnParams::mellanox(line),
            DcqcnProfile::Paper => DcqcnParams::paper(line),
        }
    }

    /// ConnectX defaults ([`DcqcnProfile::Mellanox`]); firmware values do
    /// not depend on the line rate. The byte counter B is `rpg_byte_reset` =
    /// 32767 counted in 64-byte units, 2,097,088 B: Google's Isekai simulator
    /// of ConnectX RoCE (`isekai/host/rdma/rdma_roce_cc_dcqcn.cc`, an increase
    /// event when `byte_count >= byte_reset * 64`, and its unit test sends
    /// `byte_reset * 64` bytes for one event) and Spirent's RoCEv2 DCQCN
    /// profile (`ByteResetInMb`, default 2 MB) agree on 2 MB. mlxconfig's
    /// text "Given in Bytes" (mstflint `RPG_BYTE_RESET_P1`, "Default=150") is
    /// the IEEE 802.1Qau QCN object's wording (Linux `dcbnl.h` `ieee_qcn`,
    /// CNP for CNM) with QCN's default, not the ConnectX-4+ DCQCN value; the
    /// field is 15 bits (mstflint `tools_open_roce_cc_ecn`, bits 8.0–8.14)
    /// and ships at its maximum, 32767 (`mlxconfig query`), which read as
    /// bytes (8 packets of 4 KiB) would make
    /// the byte counter outrun the 300 µs timer 11× at 10 Gb/s (the trace in
    /// `tests/dcqcn.rs`). No NVIDIA page found states the unit outright;
    /// `fabric.dcqcn.byte_counter = 32767` selects the bytes reading.
    pub fn mellanox(_line: Rate) -> DcqcnParams {
        DcqcnParams {
            g: 5.0 / 1024.0,
            alpha_interval: SimTime::from_us(1),
            rate_increase_interval: SimTime::from_us(300),
            // rpg_byte_reset = 32767 in 64-byte units (see the doc above);
            // the HPCC simulator's `dcqcn` mode has no byte counter at all
            // (`rdma-hw.cc`; its issue 66 asks why), so
            // its recovery is the 300 µs timer's, as here below 2 MB.
            byte_counter: 32767 * 64,
            fast_recovery_steps: 1,
            rate_ai: Rate(5_000_000),
            rate_hai: Rate(50_000_000),
            min_rate: Rate(1_000_000),
            cnp_interval: SimTime::from_us(4),
            initial_alpha: 1023.0 / 1024.0,
            rate_decrease_interval: SimTime::from_us(4),
            clamp_tgt_rate: false,
            min_dec_fac: 0.5,
        }
    }

    /// The SIGCOMM 2015 values ([`DcqcnProfile::Paper`]), R_AI and R_HAI
    /// scaled from the paper's 40 Gb/s to `line`.
    pub fn paper(line: Rate) -> DcqcnParams {
        let ai = (40_000_000u128 * line.0 as u128 / 40_000_000_000u128) as u64;
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_interval: SimTime::from_us(55),
            rate_increase_interval: SimTime::from_us(55),
            byte_counter: 10_000_000,
            fast_recovery_steps: 5,
            rate_ai: Rate(ai.max(1)),
            rate_hai: Rate((10 * ai).max(1)),
            min_rate: Rate(1_000_000_000),
            cnp_interval: SimTime::from_us(50),
            initial_alpha: 1.0,
            rate_decrease_interval: SimTime::from_us(50),
            clamp_tgt_rate: true,
            min_dec_fac: 0.0,
        }
    }

    /// The default profile on a NIC of `line` bits/s.
    pub fn for_line_rate(line: Rate) -> DcqcnParams {
        DcqcnParams::profile(DcqcnProfile::default(), line)
    }
}

/// Congestion control of the queue pairs.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum CongestionControl {
    /// None: the queue pair sends at line rate within its window.
    #[default]
    None,
    /// DCQCN rate control (RoCEv2), answering CNPs.
    Dcqcn(DcqcnParams),
    /// DCTCP window control, answering ECN echoes.
    Dctcp {
        /// α gain g. Default [`super::defaults::DCTCP_G`].
        g: f64,
    },
    /// Swift delay-based window control, answering the round-trip time each
    /// ACK measures (Kumar et al., SIGCOMM 2020).
    Swift(SwiftParams),
    /// HPCC window and rate control, answering the link utilization the
    /// switches stamp into every data packet (Li et al., SIGCOMM 2019).
    Hpcc(HpccParams),
    /// InfiniBand congestion control (IBA vol. 1 Annex A10): switches mark
    /// FECN, the destination returns a BECN, the source raises its CCTI and
    /// spaces its packets by the Congestion Control Table's delay.
    Ib(IbCcParams),
    /// TCP NewReno (RFC 5681, RFC 6582): slow start, congestion avoidance,
    /// fast retransmit and fast recovery on the loss recovery's duplicate ACKs.
    NewReno {
        /// First congestion window, segments (RFC 6928: 10). Default
        /// [`super::defaults::TCP_INITIAL_WINDOW`].
        initial_window: u32,
    },
    /// TIMELY delay-gradient rate control, answering the round trip each
    /// completed segment measures (Mittal et al., SIGCOMM 2015).
    Timely(TimelyParams),
    /// TCP CUBIC (RFC 9438, C = 0.4, β = 0.7), on NewReno's recovery.
    Cubic {
        /// First congestion window, segments. Default
        /// [`super::defaults::TCP_INITIAL_WINDOW`].
        initial_window: u32,
    },
}

/// HPCC's constants (Li et al., "HPCC: High Precision Congestion Control",
/// SIGCOMM 2019, §3.3 and Algorithm 1).
///
/// Every switch egress port estimates its utilization
/// `U = qlen / (B · T) + txRate / B` and stamps the maximum over the path
/// into the data packet (PINT's single-value encoding for HPCC: Ben Basat et
/// al., SIGCOMM 2020); the receiver echoes it and the sender sets its window
/// `W = Wc / (U / η) + W_AI` when `U ≥ η` (or after `max_stage` additive
/// steps), else `W = Wc + W_AI`, updating the reference `Wc` once per round
/// trip, and paces at `W / T`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HpccParams {
    /// Target utilization η, a fraction in (0, 1]. Default 0.95.
    pub eta: f64,
    /// Additive steps before a multiplicative update (maxStage). Default 5.
    pub max_stage: u32,
    /// Additive increase per round trip W_AI, bytes; `None`: the HPCC
    /// simulator's `rate_ai` of line/2500 (40 Mb/s at 100 Gb/s) times the
    /// queue pair's base RTT.
    pub w_ai: Option<u64>,
    /// The base RTT T, ps: the sender's pacing `W / T`, its first window
    /// `B · T` and the switches' `qlen / (B · T)`; `None`: each queue pair's
    /// own idle round trip at the sender, the fabric's longest one at the
    /// switches.
    pub base_rtt: Option<SimTime>,
    /// A full data packet on the wire, bytes (MTU + headers): the unit of the
    /// window the NIC enforces.
    pub packet_wire: u64,
}

impl HpccParams {
    /// The defaults for packets of `packet_wire` bytes (see [`super::defaults`]).
    pub fn new(packet_wire: u64) -> HpccParams {
        use super::defaults as d;
        HpccParams {
            eta: d::HPCC_ETA,
            max_stage: d::HPCC_MAX_STAGE,
            w_ai: None,
            base_rtt: None,
            packet_wire: packet_wire.max(1),
        }
    }

    /// Whether every constant is usable; the first one that is not, with the
    /// rule it breaks.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !(self.eta > 0.0 && self.eta <= 1.0) {
            Some(("eta", "a target utilization in (0, 1], such as 0.95"))
        } else if self.max_stage > 1_000_000 {
            Some((
                "max_stage",
                "a number of additive steps, 0 to 1000000, such as 5",
            ))
        } else if matches!(self.w_ai, Some(w) if w == 0 || w > 1 << 40) {
            Some((
                "w_ai",
                "a positive increase in bytes up to 1 TiB, such as \"100B\"",
            ))
        } else if matches!(self.base_rtt, Some(t) if t.0 == 0 || t.0 > 1_000_000_000_000) {
            Some((
                "base_rtt",
                "a positive round trip up to 1 s, such as \"10us\"",
            ))
        } else {
            None
        }
    }
}

/// InfiniBand congestion control's constants (IBA vol. 1 Annex A10: the
/// switch's SwitchCongestionSetting, the channel adapter's
/// CACongestionSetting and its Congestion Control Table), names as in the
/// spec and OpenSM's `cc_sw_cong_setting_*` / `cc_ca_cong_setting_*` options.
///
/// The **Congestion Control Table** is linear: entry `i` is (shift 0,
/// multiplier `i`), an injection rate delay (IRD) of `i` packet times, so a
/// queue pair at CCTI `i` starts a packet at most every `(1 + i)` serialization
/// times of it at its NIC's line rate: 1/(1 + i) of the line rate. This is the
/// inter-packet delay in packet times of the proposal the annex grew from
/// (Santos, Turner, Janakiraman, "End-to-end congestion control for
/// InfiniBand", INFOCOM 2003) with the linear table the Simula studies of
/// IB CC hardware start from (Gran et al., IPDPS 2010).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IbCcParams {
    /// A switch port's lane is congested when more than this many bytes stay
    /// queued behind the packet it sends; `u64::MAX` (threshold level 0): never.
    pub threshold: u64,
    /// `Marking_Rate`: a congested port marks one in every N + 1 eligible packets.
    pub marking_rate: u32,
    /// `Packet_Size`: packets smaller than this are not marked, wire bytes.
    pub packet_size: u64,
    /// `CCTI_Increase`: CCTI steps per BECN.
    pub ccti_increase: u32,
    /// `CCTI_Limit`: the largest CCTI (the table's last entry).
    pub ccti_limit: u32,
    /// `CCTI_Min`: the smallest CCTI the timer decays to.
    pub ccti_min: u32,
    /// `CCTI_Timer`: one CCTI step back each period while above `ccti_min`, ps.
    pub ccti_timer: SimTime,
}

impl IbCcParams {
    /// Largest `CCTI_Limit`: a table of at most 128 × 64 entries (the spec's
    /// CCTI is 14 bits wide; OpenSM fills up to 64 blocks of 64).
    pub const MAX_CCTI: u32 = 16383;

    /// Queue threshold, bytes, of spec level `level` (0–15) on a port of
    /// `buffer` bytes per lane: 0 never marks; level `t` marks above
    /// `buffer × (16 − t) / 16`, so 15 (the most aggressive) marks above a
    /// sixteenth of the buffer and 1 above fifteen sixteenths. The spec
    /// leaves the mapping to the switch; a linear one over the buffer keeps
    /// the scale's order and endpoints.
    pub fn threshold_for_level(level: u8, buffer: u64) -> u64 {
        if level == 0 {
            u64::MAX
        } else {
            buffer / 16 * (16 - u64::from(level.min(15)))
        }
    }

    /// The defaults ([`super::defaults`]) on ports of `buffer` bytes per lane.
    pub fn for_buffer(buffer: u64) -> IbCcParams {
        use super::defaults as d;
        IbCcParams {
            threshold: IbCcParams::threshold_for_level(d::IB_CC_THRESHOLD_LEVEL, buffer),
            marking_rate: d::IB_CC_MARKING_RATE,
            packet_size: d::IB_CC_PACKET_SIZE,
            ccti_increase: d::IB_CC_CCTI_INCREASE,
            ccti_limit: d::IB_CC_CCTI_LIMIT,
            ccti_min: d::IB_CC_CCTI_MIN,
            ccti_timer: SimTime(d::IB_CC_CCTI_TIMER_UNITS * d::IB_CC_TIMER_UNIT_PS),
        }
    }

    /// Injection rate delay of table entry `ccti`, in packet times (the
    /// linear table: entry `i` is `i`).
    #[inline]
    pub fn ird(&self, ccti: u32) -> u64 {
        u64::from(ccti)
    }

    /// Whether every constant is usable; the first one that is not (its key
    /// under `fabric.ib_cc`), what was found and the rule it breaks.
    pub fn problem(&self) -> Option<(&'static str, String, &'static str)> {
        if self.ccti_limit > IbCcParams::MAX_CCTI {
            Some((
                "ccti_limit",
                self.ccti_limit.to_string(),
                "a table index of at most 16383 (the spec's 14-bit CCTI), such as 127",
            ))
        } else if self.ccti_min > self.ccti_limit {
            Some(("ccti_min", self.ccti_min.to_string(), "at most ccti_limit"))
        } else if self.ccti_increase == 0 || self.ccti_increase > IbCcParams::MAX_CCTI {
            Some((
                "ccti_increase",
                self.ccti_increase.to_string(),
                "a positive step of at most 16383, such as 1",
            ))
        } else if self.ccti_timer.0 == 0 {
            Some((
                "ccti_timer",
                "0".into(),
                "a positive period: spec units of 1.024 us (1 to 65535) or a duration such as \"10us\"",
            ))
        } else {
            None
        }
    }
}

/// Swift's constants (Kumar et al., "Swift: Delay is Simple and Effective for
/// Congestion Control in the Datacenter", SIGCOMM 2020, §3 and Algorithm 1).
///
/// The target delay is the queue pair's idle round trip (its base RTT, which
/// the simulator knows from the path: Swift's hop-count scaling made exact)
/// plus `queue_target`, plus the flow-scaling term that grows as the window
/// shrinks (`fs_range` at `fs_min_cwnd` packets, 0 at `fs_max_cwnd`), so that
/// many small flows at one bottleneck still converge (§3.5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwiftParams {
    /// Queueing delay the fabric may add above the base RTT, ps.
    pub queue_target: SimTime,
    /// Additive increase per round trip below the target, packets.
    pub ai: f64,
    /// Multiplicative-decrease gain β: a cut by β × (delay − target) / delay.
    pub beta: f64,
    /// Largest fraction one cut removes (max_mdf).
    pub max_mdf: f64,
    /// Flow-scaling range: extra target at `fs_min_cwnd`, ps (0 = off).
    pub fs_range: SimTime,
    /// Window at which flow scaling gives its whole range, packets.
    pub fs_min_cwnd: f64,
    /// Window above which flow scaling gives nothing, packets.
    pub fs_max_cwnd: f64,
    /// Smallest window, packets; below one packet the sender paces one packet
    /// per RTT / cwnd.
    pub min_cwnd: f64,
    /// A full data packet on the wire, bytes (MTU + headers): the unit of the
    /// window, and of the first window, one bandwidth-delay product.
    pub packet_wire: u64,
}

impl SwiftParams {
    /// The defaults on a NIC of `line` bits/s sending packets of `packet_wire`
    /// bytes into ports of `buffer` bytes per lane (see [`super::defaults`]):
    /// a queue target of [`super::defaults::SWIFT_QUEUE_TARGET_PACKETS`]
    /// packet times at line rate, or a quarter of the buffer's drain time if
    /// that is shorter (DCTCP's default K is the same quarter), so the
    /// standing queue Swift aims at stays below PFC's XOFF and the drop
    /// point; flow scaling over five times that.
    pub fn for_line(line: Rate, packet_wire: u64, buffer: u64) -> SwiftParams {
        use super::defaults as d;
        let per_packet = line.tx_time(packet_wire);
        let queue_target = SimTime(
            per_packet
                .0
                .saturating_mul(d::SWIFT_QUEUE_TARGET_PACKETS)
                .min(line.tx_time(buffer / 4).0)
                .max(1),
        );
        SwiftParams {
            queue_target,
            ai: d::SWIFT_AI,
            beta: d::SWIFT_BETA,
            max_mdf: d::SWIFT_MAX_MDF,
            fs_range: SimTime(queue_target.0.saturating_mul(d::SWIFT_FS_RANGE_TARGETS)),
            fs_min_cwnd: d::SWIFT_FS_MIN_CWND,
            fs_max_cwnd: d::SWIFT_FS_MAX_CWND,
            min_cwnd: d::SWIFT_MIN_CWND,
            packet_wire: packet_wire.max(1),
        }
    }

    /// Whether every constant is usable; the first one that is not, with the
    /// rule it breaks.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let fraction = |x: f64| x > 0.0 && x < 1.0;
        if self.queue_target.0 == 0 {
            Some(("queue_target", "a positive delay, such as \"2us\""))
        } else if !(self.ai > 0.0 && self.ai <= 1e6) {
            Some((
                "ai",
                "a positive increase per round trip in packets, such as 1",
            ))
        } else if !(self.beta > 0.0 && self.beta <= 1.0) {
            Some(("beta", "a gain in (0, 1], such as 0.8"))
        } else if !fraction(self.max_mdf) {
            Some(("max_mdf", "a fraction in (0, 1), such as 0.5"))
        } else if !(self.min_cwnd > 0.0 && self.min_cwnd <= 1e6) {
            Some(("min_cwnd", "a positive window in packets, such as 0.01"))
        } else if !(self.fs_min_cwnd > 0.0
            && self.fs_min_cwnd < self.fs_max_cwnd
            && self.fs_max_cwnd <= 1e9)
        {
            Some(("fs_min_cwnd", "0 < fs_min_cwnd < fs_max_cwnd"))
        } else {
            None
        }
    }
}

/// The constant TIMELY normalizes its RTT gradient by (`minRTT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinRtt {
    /// A configured constant, the paper's fixed parameter (default
    /// [`super::defaults::TIMELY_MIN_RTT`], 20 µs).
    Fixed(SimTime),
    /// Each queue pair's idle round trip on its path (`min_rtt = "path"`):
    /// at a few µs it makes the gradient of one queue build-up large enough
    /// to cut the rate to its floor, so it is a choice, not the default.
    Path,
}

/// When TIMELY runs Algorithm 1 (`fabric.timely.update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelyUpdate {
    /// Once per completion event, every `seg_bytes` acknowledged: the
    /// paper's §3.1 and Algorithm 1 as written.
    Completion,
    /// Once per round trip, as the HPCC simulator's `rdma-hw.cc` runs its
    /// TIMELY mode: an ACK updates the rate when it acknowledges past the
    /// `snd_nxt` the previous update saw, so every sample reflects the
    /// previous update's rate; the ACKs between are ignored (its per-ACK
    /// `FastReactTimely` is empty). `seg_bytes` then plays no part.
    Rtt,
}

/// TIMELY's constants (Mittal et al., "TIMELY: RTT-based Congestion Control
/// for the Datacenter", SIGCOMM 2015, §4 and Algorithm 1; defaults and their
/// sources in [`super::defaults`]).
///
/// Rate-based: once per completion event (a segment of `seg_bytes`
/// acknowledged) the sender takes the round trip of the segment's last
/// packet, smooths the difference to the previous one (EWMA gain `alpha`),
/// normalizes it by `min_rtt` and sets its rate: below `t_low` plus `delta`,
/// above `t_high` times `1 − beta (1 − t_high / rtt)`, between them plus
/// `delta` (five times that after `hai_threshold` completions in a row with
/// a gradient ≤ 0) when the gradient is ≤ 0, else times `1 − beta · gradient`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelyParams {
    /// T_low, ps: a round trip below it only adds `delta`.
    pub t_low: SimTime,
    /// T_high, ps: a round trip above it cuts by `beta (1 − t_high / rtt)`.
    pub t_high: SimTime,
    /// minRTT, the gradient's normalization.
    pub min_rtt: MinRtt,
    /// EWMA gain α on RTT differences, in (0, 1].
    pub alpha: f64,
    /// Multiplicative-decrement factor β, in (0, 1].
    pub beta: f64,
    /// Additive increment δ, bits/s (default: the paper's 10 Mb/s per
    /// 10 Gb/s of line rate).
    pub delta: Rate,
    /// Completions in a row with a gradient ≤ 0 before hyper-active increase.
    pub hai_threshold: u32,
    /// Completion event (segment), payload bytes.
    pub seg_bytes: u64,
    /// When Algorithm 1 runs: per completion or once per round trip.
    pub update: TimelyUpdate,
}

impl Default for TimelyParams {
    /// The paper's parameters at its 10 Gb/s.
    fn default() -> Self {
        TimelyParams::for_line(Rate::gbps(10))
    }
}

impl TimelyParams {
    /// The defaults on a NIC of `line` bits/s: the paper's, with δ scaled
    /// from its 10 Mb/s at 10 Gb/s to the line rate (as
    /// [`DcqcnParams::paper`] scales R_AI), so that a flow climbs the same
    /// share of its line per completion at any speed.
    pub fn for_line(line: Rate) -> TimelyParams {
        use super::defaults as d;
        let delta = (d::TIMELY_DELTA.0 as u128 * line.0 as u128 / 10_000_000_000u128) as u64;
        TimelyParams {
            t_low: d::TIMELY_T_LOW,
            t_high: d::TIMELY_T_HIGH,
            min_rtt: MinRtt::Fixed(d::TIMELY_MIN_RTT),
            alpha: d::TIMELY_ALPHA,
            beta: d::TIMELY_BETA,
            delta: Rate(delta.max(1)),
            hai_threshold: d::TIMELY_HAI_THRESHOLD,
            seg_bytes: d::TIMELY_SEG_BYTES,
            update: d::TIMELY_UPDATE,
        }
    }

    /// Largest time threshold: 1 s.
    const MAX_TIME: u64 = 1_000_000_000_000;

    /// Whether every constant is usable; the first one that is not (its key
    /// under `fabric.timely`), with the rule it breaks.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let gain = |x: f64| x > 0.0 && x <= 1.0;
        if self.t_high.0 == 0 || self.t_high.0 > Self::MAX_TIME {
            Some((
                "t_high",
                "a positive round trip up to 1 s, such as \"500us\"",
            ))
        } else if self.t_low >= self.t_high {
            Some(("t_low", "a round trip below t_high, such as \"50us\""))
        } else if matches!(self.min_rtt, MinRtt::Fixed(t) if t.0 == 0 || t.0 > Self::MAX_TIME) {
            Some((
                "min_rtt",
                "a positive round trip up to 1 s, such as \"20us\", or \"path\"",
            ))
        } else if !gain(self.alpha) {
            Some(("alpha", "an EWMA gain in (0, 1], such as 0.875"))
        } else if !gain(self.beta) {
            Some(("beta", "a decrement factor in (0, 1], such as 0.8"))
        } else if self.delta.0 == 0 || self.delta.0 > 1_000_000_000_000 {
            Some(("delta", "a positive rate up to 1 Tbps, such as \"10Mbps\""))
        } else if !(1..=1_000_000).contains(&self.hai_threshold) {
            Some((
                "hai_threshold",
                "a whole number of completions, 1 to 1000000, such as 5",
            ))
        } else if self.seg_bytes == 0 || self.seg_bytes > 1 << 30 {
            Some((
                "seg_bytes",
                "a positive segment up to 1 GiB, such as \"16KiB\"",
            ))
        } else {
            None
        }
    }
}

impl CongestionControl {
    /// The law's name as `fabric.cc` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            CongestionControl::None => "none",
            CongestionControl::Dcqcn(_) => "dcqcn",
            CongestionControl::Dctcp { .. } => "dctcp",
            CongestionControl::Swift(_) => "swift",
            CongestionControl::Hpcc(_) => "hpcc",
            CongestionControl::Ib(_) => "ib",
            CongestionControl::NewReno { .. } => "newreno",
            CongestionControl::Cubic { .. } => "cubic",
            CongestionControl::Timely(_) => "timely",
        }
    }

    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        match *self {
            CongestionControl::None => Ok(()),
            CongestionControl::NewReno { initial_window }
            | CongestionControl::Cubic { initial_window } => {
                if (1..=1_000_000).contains(&initial_window) {
                    Ok(())
                } else {
                    Err((
                        "cc.tcp_initial_window",
                        format!("1 to 1000000 segments, found {initial_window}"),
                    ))
                }
            }
            CongestionControl::Dctcp { g } => {
                if gain_in_range(g) {
                    Ok(())
                } else {
                    Err(("cc.dctcp_g", format!("a gain in (0, 1], found {g}")))
                }
            }
            CongestionControl::Ib(p) => match p.problem() {
                Some((key, found, rule)) => Err(("cc.ib", format!("{key}: {rule}, found {found}"))),
                None => Ok(()),
            },
            CongestionControl::Swift(p) => match p.problem() {
                Some((key, rule)) => Err(("cc.swift", format!("{key}: {rule}"))),
                None => Ok(()),
            },
            CongestionControl::Hpcc(p) => match p.problem() {
                Some((key, rule)) => Err(("cc.hpcc", format!("{key}: {rule}"))),
                None => Ok(()),
            },
            CongestionControl::Timely(p) => match p.problem() {
                Some((key, rule)) => Err(("cc.timely", format!("{key}: {rule}"))),
                None => Ok(()),
            },
            CongestionControl::Dcqcn(p) => {
                if !(gain_in_range(p.g) && alpha_in_range(p.initial_alpha)) {
                    return Err((
                        "cc.dcqcn_g",
                        format!(
                            "g in (0, 1] and α₀ in [0, 1]; found {} and {}",
                            p.g, p.initial_alpha
                        ),
                    ));
                }
                if p.alpha_interval.0 == 0
                    || p.rate_increase_interval.0 == 0
                    || p.byte_counter == 0
                    || p.min_rate.0 == 0
                    || !(0.0..=1.0).contains(&p.min_dec_fac)
                {
                    return Err((
                        "cc.dcqcn",
                        "alpha interval, rate-increase timer, byte counter and min rate must be positive, min_dec_fac in [0, 1]".into(),
                    ));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // config and the packet backend both call these: their edges are the rule
    #[test]
    fn gains_alphas_and_marking_probabilities_have_their_edges() {
        assert!(gain_in_range(1.0) && gain_in_range(1.0 / 256.0));
        assert!(!gain_in_range(0.0) && !gain_in_range(1.0 + 1e-12) && !gain_in_range(f64::NAN));
        assert!(alpha_in_range(0.0) && alpha_in_range(1.0));
        assert!(!alpha_in_range(-1e-12) && !alpha_in_range(f64::NAN));
        assert!(pmax_in_range(1.0) && !pmax_in_range(0.0) && !pmax_in_range(f64::NAN));
        assert!(CongestionControl::Dctcp { g: 0.0 }.check().is_err());
        assert!(CongestionControl::Dctcp { g: 1.0 }.check().is_ok());
    }
}
