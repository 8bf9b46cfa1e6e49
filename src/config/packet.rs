//! Settings only the packet level uses: buffers, lanes, transport, timers,
//! and PFC, ECN and congestion control with their defaults per fabric kind.

use super::fabric::FabricKind;
use super::presets;
use super::raw::{
    RawDcqcn, RawHpcc, RawIbCc, RawNumber, RawQuantity, RawScenario, RawSwift, RawTimely,
};
use super::validate::{default_time, Validator};
use crate::mechanism::{alpha_in_range, defaults, gain_in_range};
use crate::units::{parse_size, Rate, SimTime};

/// Settings only the packet level uses, checked against the fabric they run
/// on. Fields private to `config`: read through the accessors below.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketSettings {
    /// Buffer per port and virtual lane, bytes.
    pub(super) buffer: u64,
    /// Shared buffer per switch, bytes (0 = per-port).
    pub(super) shared_buffer: u64,
    /// Dynamic-threshold α.
    pub(super) shared_buffer_alpha: f64,
    /// Virtual lanes per port.
    pub(super) virtual_lanes: u8,
    /// Escalate lanes per hop.
    pub(super) vl_escalation: bool,
    /// Cut-through forwarding.
    pub(super) cut_through: bool,
    /// TCP-like transport (else RDMA).
    pub(super) tcp: bool,
    /// TCP CPU time per packet.
    pub(super) tcp_packet_overhead: SimTime,
    /// TCP jitter bound.
    pub(super) tcp_jitter: SimTime,
    /// Window per queue pair, bytes (0 = no limit).
    pub(super) window: u64,
    /// `window = "bdp"`: IRN's BDP-FC instead of a size.
    pub(super) window_bdp: bool,
    /// ACK coalescing.
    pub(super) ack_every: u32,
    /// Retransmission timeout.
    pub(super) rto: SimTime,
    /// Idle time that ends a flowlet (`routing = "flowlet"`).
    pub(super) flowlet_gap: SimTime,
    /// Loss recovery of the queue pairs.
    pub(super) loss_recovery: crate::mechanism::LossRecovery,
    /// Selective repeat's short timeout (IRN's RTO_low).
    pub(super) rto_low: SimTime,
    /// TCP loss recovery: the RFC 6298 timer's minimum RTO.
    pub(super) tcp_min_rto: SimTime,
    /// TCP: TSO segment, payload bytes (0 = a CPU cost per packet).
    pub(super) tcp_tso_bytes: u64,
    /// TCP loss recovery: the RFC 6298 timer's maximum RTO.
    pub(super) tcp_max_rto: SimTime,
    /// TCP loss recovery: the delayed-ACK timer (0 = off).
    pub(super) tcp_delayed_ack: SimTime,
    /// TCP loss recovery: SACK (RFC 2018) and RFC 6675 recovery.
    pub(super) tcp_sack: bool,
    /// TCP loss recovery with SACK: RACK-TLP (RFC 8985).
    pub(super) tcp_rack: bool,
    /// TCP loss recovery with SACK: D-SACK (RFC 2883).
    pub(super) tcp_dsack: bool,
    /// Switches trim packets a full lossy queue cannot take.
    pub(super) trimming: bool,
    /// Sampling interval (0 = off).
    pub(super) sample_interval: SimTime,
    /// Simulated-time limit.
    pub(super) time_limit: SimTime,
    /// Deadlock watchdog.
    pub(super) deadlock_timeout: SimTime,
    /// PFC thresholds (XOFF, XON, headroom), bytes, or `None` when PFC is off.
    pub(super) pfc: Option<(u64, u64, u64)>,
    /// PFC pause quanta per frame (0 = until RESUME).
    pub(super) pfc_pause_quanta: u32,
    /// PFC XOFF: static, or dynamic with its α.
    pub(super) pfc_threshold: crate::mechanism::PfcThreshold,
    /// PFC headroom pool per switch, bytes (0 = per-port headroom).
    pub(super) pfc_headroom_pool: u64,
    /// PFC watchdog period ([`SimTime::ZERO`] = off).
    pub(super) pfc_watchdog: SimTime,
    /// PFC watchdog recovery (restoration) period: how long a lane it fired
    /// on stays in drop mode; the detection period unless set.
    pub(super) pfc_watchdog_restore: SimTime,
    /// ECN marking (Kmin bytes, Kmax bytes, Pmax), or `None`.
    pub(super) ecn: Option<(u64, u64, f64)>,
    /// Where switches mark CE: at dequeue (default) or enqueue.
    pub(super) ecn_mark_at: crate::mechanism::EcnMarkAt,
    /// Congestion control.
    pub(super) cc: crate::mechanism::CongestionControl,
    /// `[[fabric.classes]]` with the classes of the workload, ACKs and CNPs;
    /// `None` without the table.
    pub(super) classes: Option<crate::mechanism::TrafficClasses>,
}

impl PacketSettings {
    /// Buffer per port and virtual lane, bytes.
    #[inline]
    pub fn buffer(&self) -> u64 {
        self.buffer
    }

    /// Shared buffer per switch, bytes (0 = per-port).
    #[inline]
    pub fn shared_buffer(&self) -> u64 {
        self.shared_buffer
    }

    /// Dynamic-threshold α.
    #[inline]
    pub fn shared_buffer_alpha(&self) -> f64 {
        self.shared_buffer_alpha
    }

    /// Virtual lanes per port.
    #[inline]
    pub fn virtual_lanes(&self) -> u8 {
        self.virtual_lanes
    }

    /// Escalate lanes per hop.
    #[inline]
    pub fn vl_escalation(&self) -> bool {
        self.vl_escalation
    }

    /// Cut-through forwarding.
    #[inline]
    pub fn cut_through(&self) -> bool {
        self.cut_through
    }

    /// TCP-like transport (else RDMA).
    #[inline]
    pub fn tcp(&self) -> bool {
        self.tcp
    }

    /// TCP CPU time per packet.
    #[inline]
    pub fn tcp_packet_overhead(&self) -> SimTime {
        self.tcp_packet_overhead
    }

    /// TCP jitter bound.
    #[inline]
    pub fn tcp_jitter(&self) -> SimTime {
        self.tcp_jitter
    }

    /// Window per queue pair, bytes (0 = no limit).
    #[inline]
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The window is IRN's BDP-FC, one bandwidth-delay product of the
    /// longest path (`window = "bdp"`), instead of [`Self::window`].
    #[inline]
    pub fn window_bdp(&self) -> bool {
        self.window_bdp
    }

    /// ACK coalescing.
    #[inline]
    pub fn ack_every(&self) -> u32 {
        self.ack_every
    }

    /// Retransmission timeout.
    #[inline]
    pub fn rto(&self) -> SimTime {
        self.rto
    }

    /// Idle time that ends a flowlet (`routing = "flowlet"`).
    #[inline]
    pub fn flowlet_gap(&self) -> SimTime {
        self.flowlet_gap
    }

    /// Loss recovery of the queue pairs.
    #[inline]
    pub fn loss_recovery(&self) -> crate::mechanism::LossRecovery {
        self.loss_recovery
    }

    /// Selective repeat's short timeout (IRN's RTO_low).
    #[inline]
    pub fn rto_low(&self) -> SimTime {
        self.rto_low
    }

    /// TCP loss recovery: the RFC 6298 timer's minimum RTO.
    #[inline]
    pub fn tcp_min_rto(&self) -> SimTime {
        self.tcp_min_rto
    }

    /// TCP: TSO segment, payload bytes (0 = a CPU cost per packet).
    #[inline]
    pub fn tcp_tso_bytes(&self) -> u64 {
        self.tcp_tso_bytes
    }

    /// TCP loss recovery: the RFC 6298 timer's maximum RTO.
    #[inline]
    pub fn tcp_max_rto(&self) -> SimTime {
        self.tcp_max_rto
    }

    /// TCP loss recovery: the delayed-ACK timer (0 = off).
    #[inline]
    pub fn tcp_delayed_ack(&self) -> SimTime {
        self.tcp_delayed_ack
    }

    /// TCP loss recovery: SACK (RFC 2018) and RFC 6675 recovery.
    #[inline]
    pub fn tcp_sack(&self) -> bool {
        self.tcp_sack
    }

    /// TCP loss recovery with SACK: RACK-TLP (RFC 8985).
    #[inline]
    pub fn tcp_rack(&self) -> bool {
        self.tcp_rack
    }

    /// TCP loss recovery with SACK: D-SACK (RFC 2883).
    #[inline]
    pub fn tcp_dsack(&self) -> bool {
        self.tcp_dsack
    }

    /// Switches trim packets a full lossy queue cannot take.
    #[inline]
    pub fn trimming(&self) -> bool {
        self.trimming
    }

    /// Sampling interval (0 = off).
    #[inline]
    pub fn sample_interval(&self) -> SimTime {
        self.sample_interval
    }

    /// Simulated-time limit.
    #[inline]
    pub fn time_limit(&self) -> SimTime {
        self.time_limit
    }

    /// Deadlock watchdog.
    #[inline]
    pub fn deadlock_timeout(&self) -> SimTime {
        self.deadlock_timeout
    }

    /// PFC thresholds (XOFF, XON, headroom), bytes, or `None` when PFC is off.
    #[inline]
    pub fn pfc(&self) -> Option<(u64, u64, u64)> {
        self.pfc
    }

    /// PFC pause quanta per frame (0 = until RESUME).
    #[inline]
    pub fn pfc_pause_quanta(&self) -> u32 {
        self.pfc_pause_quanta
    }

    /// PFC XOFF: static, or dynamic with its α.
    #[inline]
    pub fn pfc_threshold(&self) -> crate::mechanism::PfcThreshold {
        self.pfc_threshold
    }

    /// PFC headroom pool per switch, bytes (0 = per-port headroom).
    #[inline]
    pub fn pfc_headroom_pool(&self) -> u64 {
        self.pfc_headroom_pool
    }

    /// PFC watchdog period ([`SimTime::ZERO`] = off).
    #[inline]
    pub fn pfc_watchdog(&self) -> SimTime {
        self.pfc_watchdog
    }

    /// PFC watchdog recovery (restoration) period: how long a lane it fired
    /// on stays in drop mode; the detection period unless set.
    #[inline]
    pub fn pfc_watchdog_restore(&self) -> SimTime {
        self.pfc_watchdog_restore
    }

    /// ECN marking (Kmin bytes, Kmax bytes, Pmax), or `None`.
    #[inline]
    pub fn ecn(&self) -> Option<(u64, u64, f64)> {
        self.ecn
    }

    /// Where switches mark CE: at dequeue (default) or enqueue.
    #[inline]
    pub fn ecn_mark_at(&self) -> crate::mechanism::EcnMarkAt {
        self.ecn_mark_at
    }

    /// Congestion control.
    #[inline]
    pub fn cc(&self) -> crate::mechanism::CongestionControl {
        self.cc
    }

    /// `[[fabric.classes]]` with the classes of the workload, ACKs and CNPs;
    /// `None` without the table.
    #[inline]
    pub fn classes(&self) -> Option<&crate::mechanism::TrafficClasses> {
        self.classes.as_ref()
    }
}

impl Validator<'_> {
    pub(super) fn packet_settings(
        &mut self,
        raw: &RawScenario,
        kind: Option<FabricKind>,
        link: Option<(Rate, SimTime, SimTime)>,
        nic_rate: Option<Rate>,
        max_packet: Option<u64>,
    ) -> Option<PacketSettings> {
        let f = &raw.fabric;
        let buffer = self.size(
            "fabric.buffer",
            f.buffer.as_ref(),
            Some(&defaults::PORT_BUFFER.to_string()),
            1,
        );
        let shared_buffer = self.size(
            "fabric.shared_buffer",
            f.shared_buffer.as_ref(),
            Some("0"),
            0,
        );
        let alpha = f
            .shared_buffer_alpha
            .map_or(defaults::SHARED_BUFFER_ALPHA, RawNumber::as_f64);
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
        let lanes = match f.virtual_lanes.unwrap_or(defaults::VIRTUAL_LANES.into()) {
            v if !(1..=i64::from(defaults::MAX_VIRTUAL_LANES)).contains(&v) => {
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
        let tcp_tso_bytes = self.size(
            "fabric.tcp_tso_bytes",
            f.tcp_tso_bytes.as_ref(),
            Some(&defaults::TCP_TSO_BYTES.to_string()),
            0,
        );
        // RDMA writes under in-order routing have no window (0); the TCP path
        // and reordering routings keep one (see defaults::RDMA_WINDOW).
        let in_order = matches!(f.routing.as_deref(), None | Some("ecmp"));
        let default_window = if tcp == Some(false) && in_order {
            defaults::RDMA_WINDOW
        } else {
            defaults::WINDOW
        };
        // "bdp": IRN's BDP-FC, computed from the built fabric at run time
        let window_bdp =
            matches!(&f.window, Some(RawQuantity::Str(s)) if s.eq_ignore_ascii_case("bdp"));
        let window = if window_bdp {
            Some(0)
        } else if let Some(RawQuantity::Str(s)) = f
            .window
            .as_ref()
            .filter(|w| matches!(w, RawQuantity::Str(s) if parse_size(s).is_err()))
        {
            self.err(
                "fabric.window",
                format!("{s:?}"),
                "a size such as \"64KiB\", 0 for no limit, or \"bdp\" (IRN's BDP-FC: one bandwidth-delay product of the longest path)",
            );
            None
        } else {
            self.size(
                "fabric.window",
                f.window.as_ref(),
                Some(&default_window.to_string()),
                0,
            )
        };
        let ack_every = self.count(
            "fabric.ack_every",
            f.ack_every,
            Some(defaults::ACK_EVERY.into()),
            1,
            "packets per ACK",
        );
        // RoCE NICs time out after NCCL's local-ACK timeout; the rest keep
        // the shorter IB-encoding default (see defaults::ROCE_RTO).
        let default_rto = if kind == Some(FabricKind::Roce) && tcp == Some(false) {
            defaults::ROCE_RTO
        } else {
            defaults::RTO
        };
        let rto = self.time(
            "fabric.rto",
            f.rto.as_ref(),
            Some(&default_time(default_rto)),
        );
        if rto == Some(SimTime::ZERO) {
            self.err(
                "fabric.rto",
                "0",
                "a retransmission timeout above zero, such as \"1ms\"",
            );
        }
        let loss_recovery = match f.loss_recovery.as_deref() {
            // TCP runs TCP's recovery (duplicate ACKs, fast retransmit,
            // NewReno, RFC 6298 timer); RDMA go-back-N
            None if tcp == Some(true) => Some(crate::mechanism::LossRecovery::Tcp),
            None => Some(crate::mechanism::LossRecovery::default()),
            Some(v) => {
                let l = crate::mechanism::LossRecovery::parse(v);
                if l.is_none() {
                    self.err(
                        "fabric.loss_recovery",
                        format!("{v:?}"),
                        "\"go-back-n\" (resend from the oldest unacknowledged packet), \"selective-repeat\" (IRN: resend only what is missing), \"go-back-0\" (restart the message) or \"tcp\" (fast retransmit on duplicate ACKs, NewReno)",
                    );
                }
                l
            }
        };
        let rto_low = self.time(
            "fabric.rto_low",
            f.rto_low.as_ref(),
            Some(&default_time(defaults::RTO_LOW)),
        );
        // A floor, not only zero: a timeout far below any round trip fires for
        // every packet in flight again and again, and a run crawls for hours
        // (1 ps did not finish in 120 s on the shipped lossy incast).
        if let Some(t) = rto_low.filter(|t| *t < defaults::RTO_LOW_MIN) {
            self.err(
                "fabric.rto_low",
                format!("{t}"),
                "a short retransmission timeout of at least 1us (below any fabric's round trip it fires on every packet in flight), such as \"100us\" (IRN's RTO_low)",
            );
        }
        let tcp_min_rto = self.time(
            "fabric.tcp_min_rto",
            f.tcp_min_rto.as_ref(),
            Some(&default_time(defaults::TCP_MIN_RTO)),
        );
        if let Some(t) = tcp_min_rto.filter(|t| *t < defaults::TCP_MIN_RTO_FLOOR) {
            self.err(
                "fabric.tcp_min_rto",
                format!("{t}"),
                "a minimum retransmission timeout of at least 1us (below any fabric's round trip it fires on every packet in flight), such as \"200ms\" (Linux) or \"200us\" (a datacenter's)",
            );
        }
        let tcp_max_rto = self.time(
            "fabric.tcp_max_rto",
            f.tcp_max_rto.as_ref(),
            Some(&default_time(defaults::TCP_MAX_RTO)),
        );
        if let (Some(lo), Some(hi)) = (tcp_min_rto, tcp_max_rto) {
            if hi < lo {
                self.err(
                    "fabric.tcp_max_rto",
                    format!("{hi}"),
                    format!("at least tcp_min_rto ({lo}), such as \"120s\" (Linux)"),
                );
            }
        }
        let tcp_delayed_ack = self.time(
            "fabric.tcp_delayed_ack",
            f.tcp_delayed_ack.as_ref(),
            Some(&default_time(defaults::TCP_DELAYED_ACK)),
        );
        if let Some(t) = tcp_delayed_ack.filter(|t| *t >= defaults::TCP_DELAYED_ACK_LIMIT) {
            self.err(
                "fabric.tcp_delayed_ack",
                format!("{t}"),
                "a delayed-ACK timer below 500ms (RFC 1122 §4.2.3.2), such as \"40ms\" (Linux's minimum) or \"0\" (off, an ACK per segment)",
            );
        }
        let flowlet_gap = self.time(
            "fabric.flowlet_gap",
            f.flowlet_gap.as_ref(),
            Some(&default_time(defaults::FLOWLET_GAP)),
        );
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
            Some(&default_time(defaults::TIME_LIMIT)),
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
                .or(Some(defaults::MTU)),
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
            Some(&default_time(defaults::DEADLOCK_TIMEOUT)),
        );
        if deadlock_timeout == Some(SimTime::ZERO) {
            self.err(
                "simulation.deadlock_timeout",
                "0",
                "a watchdog period above zero, such as \"1ms\"",
            );
        }
        let pfc_headroom_pool = self.size(
            "fabric.pfc_headroom_pool",
            f.pfc_headroom_pool.as_ref(),
            Some("0"),
            0,
        );
        let pfc_watchdog = self.time("fabric.pfc_watchdog", f.pfc_watchdog.as_ref(), Some("0"));
        // SONiC's `pfcwd start_default` (sonic-utilities pfcwd/main.py:
        // DEFAULT_DETECTION_TIME = DEFAULT_RESTORATION_TIME = 200 ms) restores
        // after as long as it took to detect: the default here too
        let pfc_watchdog_restore = match (f.pfc_watchdog_restore.as_ref(), pfc_watchdog) {
            (None, w) => w,
            (Some(r), _) => {
                let t = self.time("fabric.pfc_watchdog_restore", Some(r), None);
                if t == Some(SimTime::ZERO) {
                    self.err(
                        "fabric.pfc_watchdog_restore",
                        "0",
                        "a recovery period above zero, such as \"200ms\" (SONiC's restoration_time)",
                    );
                    None
                } else {
                    t
                }
            }
        };
        // checked even where it is not used: a bad value is a mistake either way
        let alpha = f.pfc_alpha.map_or(defaults::PFC_ALPHA, RawNumber::as_f64);
        if !(alpha.is_finite() && alpha > 0.0) {
            self.err(
                "fabric.pfc_alpha",
                alpha.to_string(),
                "a positive dynamic-threshold factor such as 1.0 (XOFF = alpha x free shared buffer)",
            );
        }
        let pfc_threshold = match f.pfc_threshold.as_deref() {
            None | Some("static") => Some(crate::mechanism::PfcThreshold::Static),
            Some("dynamic") => {
                if shared_buffer == Some(0) {
                    self.err(
                        "fabric.pfc_threshold",
                        "\"dynamic\" without a shared buffer",
                        "fabric.shared_buffer set (the dynamic XOFF is alpha x the free shared buffer), or pfc_threshold = \"static\"",
                    );
                }
                Some(crate::mechanism::PfcThreshold::Dynamic { alpha })
            }
            Some(other) => {
                self.err(
                    "fabric.pfc_threshold",
                    format!("{other:?}"),
                    "\"static\" (fixed pfc_xoff / pfc_xon) or \"dynamic\" (XOFF = pfc_alpha x free shared buffer)",
                );
                None
            }
        };
        let dynamic = matches!(
            pfc_threshold,
            Some(crate::mechanism::PfcThreshold::Dynamic { .. })
        );
        let congestion = match (buffer, max_packet, pfc_headroom_pool) {
            (Some(buffer), Some(max_packet), Some(pool)) => self.congestion_settings(
                raw,
                kind,
                buffer,
                link,
                nic_rate,
                max_packet,
                (pool, dynamic),
            ),
            _ => None,
        };
        let classes = self.classes(
            raw,
            lanes,
            f.vl_escalation.unwrap_or(false),
            congestion.as_ref().and_then(|c| c.1),
        );
        let (pfc, ecn, cc) = congestion?;
        let pfc_pause_quanta = self.count(
            "fabric.pfc_pause_quanta",
            f.pfc_pause_quanta,
            Some(0),
            0,
            "pause quanta per PAUSE frame, 0 (until RESUME) to 65535",
        );
        if pfc_pause_quanta.is_some_and(|q| q > defaults::MAX_PAUSE_QUANTA) {
            self.err(
                "fabric.pfc_pause_quanta",
                pfc_pause_quanta.unwrap_or(0).to_string(),
                "at most 65535 quanta (a 16-bit field of the PAUSE frame, IEEE 802.1Qbb)",
            );
        }
        let ecn_mark_at = match f.ecn_mark_at.as_deref() {
            None => Some(defaults::ECN_MARK_AT),
            Some("dequeue") => Some(crate::mechanism::EcnMarkAt::Dequeue),
            Some("enqueue") => Some(crate::mechanism::EcnMarkAt::Enqueue),
            Some(other) => {
                self.err(
                    "fabric.ecn_mark_at",
                    format!("{other:?}"),
                    "\"dequeue\" (mark from the queue a packet leaves behind) or \"enqueue\" (from the queue it joins)",
                );
                None
            }
        };
        Some(PacketSettings {
            classes: classes?,
            ecn_mark_at: ecn_mark_at?,
            deadlock_timeout: deadlock_timeout?,
            pfc,
            pfc_pause_quanta: pfc_pause_quanta?,
            pfc_threshold: pfc_threshold?,
            pfc_headroom_pool: pfc_headroom_pool?,
            pfc_watchdog: pfc_watchdog?,
            pfc_watchdog_restore: pfc_watchdog_restore?,
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
            window_bdp,
            ack_every: ack_every?,
            rto: rto?,
            flowlet_gap: flowlet_gap?,
            loss_recovery: loss_recovery?,
            rto_low: rto_low?,
            tcp_tso_bytes: tcp_tso_bytes?,
            tcp_min_rto: tcp_min_rto.filter(|t| *t >= defaults::TCP_MIN_RTO_FLOOR)?,
            tcp_max_rto: tcp_max_rto.filter(|&t| tcp_min_rto.is_none_or(|lo| t >= lo))?,
            tcp_delayed_ack: tcp_delayed_ack.filter(|t| *t < defaults::TCP_DELAYED_ACK_LIMIT)?,
            tcp_sack: f.tcp_sack.unwrap_or(defaults::TCP_SACK),
            tcp_rack: f.tcp_rack.unwrap_or(defaults::TCP_RACK),
            tcp_dsack: f.tcp_dsack.unwrap_or(defaults::TCP_DSACK),
            trimming: f.trimming.unwrap_or(false),
            sample_interval: sample_interval?,
            time_limit: time_limit?,
        })
    }

    /// PFC, ECN and congestion control: defaults per fabric kind, thresholds
    /// checked against the buffer and the link's bandwidth-delay product.
    #[allow(clippy::type_complexity)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn congestion_settings(
        &mut self,
        raw: &RawScenario,
        kind: Option<FabricKind>,
        buffer: u64,
        link: Option<(Rate, SimTime, SimTime)>,
        nic_rate: Option<Rate>,
        max_packet: u64,
        (pool, dynamic): (u64, bool),
    ) -> Option<(
        Option<(u64, u64, u64)>,
        Option<(u64, u64, f64)>,
        crate::mechanism::CongestionControl,
    )> {
        use crate::mechanism::{
            gain_in_range, pfc_fits_buffer, pfc_headroom_needed, pmax_in_range, CongestionControl,
        };
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
            // with a headroom pool, what arrives after XOFF goes to the pool:
            // XOFF may use the port's whole buffer
            let reserved = if pool > 0 { 0 } else { headroom };
            let default_xoff = buffer.saturating_sub(reserved).max(max_packet);
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
                let (have, field) = if pool > 0 {
                    (pool, "fabric.pfc_headroom_pool")
                } else {
                    (headroom, "fabric.pfc_headroom")
                };
                if have < need {
                    self.err(
                        field,
                        crate::units::format_bytes(have),
                        format!(
                            "at least {need} bytes: what arrives while a PAUSE takes effect on a {r} link of {l} latency into a {fwd} switch pipeline ((2 x latency + pipeline) x rate + 3 x (MTU + header) + 84: the packet crossing XOFF, the one being sent when the PAUSE lands, the one the PAUSE waits behind on the reverse link, and the PAUSE frame)"
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
            } else if !dynamic && !pfc_fits_buffer(xoff, reserved, buffer) {
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
        // TCP without ECN runs NewReno: the law whose loss recovery this
        // model runs in full (RFC 6582). Linux defaults to CUBIC, but on
        // SACK, RACK and PRR, which are not modelled; CUBIC over NewReno's
        // recovery keeps 0.7 of the window through a loss and collapses at
        // a fan-in of 2 on a 64 KB port where NewReno holds to 3
        // (tests/tcp.rs incast_table). RDMA on Ethernet without ECN runs none.
        let tcp = match f.transport.as_deref() {
            Some(t) => t == "tcp",
            None => kind == Some(FabricKind::Ethernet),
        };
        let cc_name = f.cc.as_deref().unwrap_or(if roce {
            "dcqcn"
        } else if kind == Some(FabricKind::Ethernet) && ecn_on {
            "dctcp"
        } else if tcp {
            "newreno"
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
            if !pmax_in_range(pmax) {
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
        let initial_window = match f.tcp_initial_window {
            None => defaults::TCP_INITIAL_WINDOW,
            Some(w) if (1..=1_000_000).contains(&w) => w as u32,
            Some(w) => {
                self.err(
                    "fabric.tcp_initial_window",
                    w.to_string(),
                    "a first congestion window of 1 to 1000000 segments, such as 10 (RFC 6928)",
                );
                ok = false;
                defaults::TCP_INITIAL_WINDOW
            }
        };
        let cc = match cc_name {
            "none" => CongestionControl::None,
            "newreno" => CongestionControl::NewReno { initial_window },
            "cubic" => CongestionControl::Cubic { initial_window },
            "dctcp" => {
                let g = f.dctcp_g.map_or(defaults::DCTCP_G, RawNumber::as_f64);
                if !gain_in_range(g) {
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
                let line = nic_rate.unwrap_or(Rate::gbps(400));
                CongestionControl::Dcqcn(self.dcqcn(f.dcqcn.as_ref(), line)?)
            }
            "swift" => {
                let line = nic_rate.unwrap_or(Rate::gbps(400));
                CongestionControl::Swift(self.swift(f.swift.as_ref(), line, max_packet, buffer)?)
            }
            "timely" => {
                let line = nic_rate.unwrap_or(Rate::gbps(400));
                CongestionControl::Timely(self.timely(f.timely.as_ref(), line)?)
            }
            "hpcc" => CongestionControl::Hpcc(self.hpcc(f.hpcc.as_ref(), max_packet)?),
            "ib" => {
                // Annex A10 rides on credit flow control: FECN is set by a
                // port that has credits (the root), not by one starved of them
                if !ib {
                    let kind_name = kind.map_or("unset", FabricKind::name);
                    self.err(
                        "fabric.cc",
                        format!("\"ib\" on a fabric of kind {kind_name:?}"),
                        "kind = \"infiniband\": InfiniBand congestion control (FECN/BECN, IBA Annex A10) tells a congested root port from its credit-starved victims by credits; on Ethernet use \"dcqcn\", \"dctcp\" or \"swift\"",
                    );
                    return None;
                }
                if f.ecn == Some(true) {
                    self.err(
                        "fabric.ecn",
                        "true with cc = \"ib\"",
                        "ecn = false (or unset): InfiniBand congestion control marks FECN by its own threshold, [fabric.ib_cc] threshold",
                    );
                    return None;
                }
                CongestionControl::Ib(self.ib_cc(f.ib_cc.as_ref(), buffer)?)
            }
            other => {
                self.err(
                    "fabric.cc",
                    format!("{other:?}"),
                    "one of \"dcqcn\", \"dctcp\", \"swift\", \"timely\", \"hpcc\", \"ib\", \"newreno\", \"cubic\", \"none\"",
                );
                return None;
            }
        };
        if f.ib_cc.is_some() && !matches!(cc, CongestionControl::Ib(_)) {
            self.err(
                "fabric.ib_cc",
                format!("InfiniBand CC parameters with cc = {cc_name:?}"),
                "cc = \"ib\" on an InfiniBand fabric (or remove [fabric.ib_cc])",
            );
            ok = false;
        }
        // Swift and TIMELY react to delay, HPCC to the utilization switches
        // stamp, IB CC marks FECN itself and the TCP laws react to losses:
        // none needs ECN
        let needs_marks = !matches!(
            cc,
            CongestionControl::None
                | CongestionControl::Swift(_)
                | CongestionControl::Timely(_)
                | CongestionControl::Hpcc(_)
                | CongestionControl::Ib(_)
                | CongestionControl::NewReno { .. }
                | CongestionControl::Cubic { .. }
        );
        if f.hpcc.is_some() && !matches!(cc, CongestionControl::Hpcc(_)) {
            self.err(
                "fabric.hpcc",
                format!("HPCC parameters with cc = {cc_name:?}"),
                "cc = \"hpcc\" (or remove [fabric.hpcc])",
            );
            ok = false;
        }
        if f.swift.is_some() && !matches!(cc, CongestionControl::Swift(_)) {
            self.err(
                "fabric.swift",
                format!("Swift parameters with cc = {cc_name:?}"),
                "cc = \"swift\" (or remove [fabric.swift])",
            );
            ok = false;
        }
        if f.timely.is_some() && !matches!(cc, CongestionControl::Timely(_)) {
            self.err(
                "fabric.timely",
                format!("TIMELY parameters with cc = {cc_name:?}"),
                "cc = \"timely\" (or remove [fabric.timely])",
            );
            ok = false;
        }
        if needs_marks && ecn.is_none() {
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

    /// `[fabric.hpcc]` over the defaults for packets of `packet_wire` bytes.
    pub(super) fn hpcc(
        &mut self,
        raw: Option<&RawHpcc>,
        packet_wire: u64,
    ) -> Option<crate::mechanism::HpccParams> {
        use crate::mechanism::HpccParams;
        let empty = RawHpcc::default();
        let r = raw.unwrap_or(&empty);
        let d = HpccParams::new(packet_wire);
        // Some(None): set and refused (reported); None: left to the default
        let w_ai = r
            .w_ai
            .as_ref()
            .map(|q| self.size("fabric.hpcc.w_ai", Some(q), None, 1));
        let base_rtt = r
            .base_rtt
            .as_ref()
            .map(|q| self.time("fabric.hpcc.base_rtt", Some(q), None));
        let max_stage = match r.max_stage {
            None => Some(d.max_stage),
            Some(n) => {
                let x = n.as_f64();
                if x.fract() == 0.0 && (0.0..=1e6).contains(&x) {
                    Some(x as u32)
                } else {
                    self.err(
                        "fabric.hpcc.max_stage",
                        x.to_string(),
                        "a whole number of additive steps, 0 to 1000000, such as 5",
                    );
                    None
                }
            }
        };
        let p = HpccParams {
            eta: r.eta.map_or(d.eta, RawNumber::as_f64),
            max_stage: max_stage?,
            w_ai: w_ai.map_or(Some(None), |w| w.map(Some))?,
            base_rtt: base_rtt.map_or(Some(None), |t| t.map(Some))?,
            ..d
        };
        if let Some((key, rule)) = p.problem() {
            let found = match key {
                "eta" => p.eta.to_string(),
                "max_stage" => p.max_stage.to_string(),
                "w_ai" => format!("{} bytes", p.w_ai.unwrap_or(0)),
                _ => format!("{}ps", p.base_rtt.map_or(0, |t| t.0)),
            };
            self.err(&format!("fabric.hpcc.{key}"), found, rule);
            return None;
        }
        Some(p)
    }

    /// `[fabric.ib_cc]` over the defaults for ports of `buffer` bytes per lane.
    pub(super) fn ib_cc(
        &mut self,
        raw: Option<&RawIbCc>,
        buffer: u64,
    ) -> Option<crate::mechanism::IbCcParams> {
        use crate::mechanism::{defaults as d, IbCcParams};
        let empty = RawIbCc::default();
        let r = raw.unwrap_or(&empty);
        let dflt = IbCcParams::for_buffer(buffer);
        let mut ok = true;
        // a whole number in [0, max], or the default
        let mut count = |v: &mut Self, key: &str, x: Option<RawNumber>, def: u32, max: u32| match x
        {
            None => Some(def),
            Some(RawNumber::Int(i)) if (0..=i64::from(max)).contains(&i) => Some(i as u32),
            Some(n) => {
                v.err(
                    &format!("fabric.ib_cc.{key}"),
                    match n {
                        RawNumber::Int(i) => i.to_string(),
                        RawNumber::Float(f) => format!("{f:?}"),
                    },
                    format!("a whole number from 0 to {max}"),
                );
                ok = false;
                None
            }
        };
        let max = IbCcParams::MAX_CCTI;
        let marking_rate = count(
            self,
            "marking_rate",
            r.marking_rate,
            dflt.marking_rate,
            65535,
        );
        let ccti_increase = count(
            self,
            "ccti_increase",
            r.ccti_increase,
            dflt.ccti_increase,
            max,
        );
        let ccti_limit = count(self, "ccti_limit", r.ccti_limit, dflt.ccti_limit, max);
        let ccti_min = count(self, "ccti_min", r.ccti_min, dflt.ccti_min, max);
        let threshold = match &r.threshold {
            None => Some(dflt.threshold),
            Some(RawQuantity::Int(l)) if (0..=15).contains(l) => {
                Some(IbCcParams::threshold_for_level(*l as u8, buffer))
            }
            Some(RawQuantity::Int(l)) => {
                self.err(
                    "fabric.ib_cc.threshold",
                    l.to_string(),
                    "the spec's level 0 (never mark) to 15 (mark above buffer/16), or a queue size with a unit such as \"8KiB\"",
                );
                None
            }
            q @ Some(RawQuantity::Str(_)) => {
                self.size("fabric.ib_cc.threshold", q.as_ref(), None, 0)
            }
        };
        let packet_size = self.size(
            "fabric.ib_cc.packet_size",
            r.packet_size.as_ref(),
            Some(&d::IB_CC_PACKET_SIZE.to_string()),
            0,
        );
        let ccti_timer = match &r.ccti_timer {
            None => Some(dflt.ccti_timer),
            Some(RawQuantity::Int(u)) if (1..=65535).contains(u) => {
                Some(SimTime(*u as u64 * d::IB_CC_TIMER_UNIT_PS))
            }
            Some(RawQuantity::Int(u)) => {
                self.err(
                    "fabric.ib_cc.ccti_timer",
                    u.to_string(),
                    "the spec's units of 1.024 us, 1 to 65535 (a 16-bit field), or a positive duration such as \"10us\"",
                );
                None
            }
            q @ Some(RawQuantity::Str(_)) => self.time("fabric.ib_cc.ccti_timer", q.as_ref(), None),
        };
        let p = IbCcParams {
            threshold: threshold?,
            marking_rate: marking_rate?,
            packet_size: packet_size?,
            ccti_increase: ccti_increase?,
            ccti_limit: ccti_limit?,
            ccti_min: ccti_min?,
            ccti_timer: ccti_timer?,
        };
        if !ok {
            return None;
        }
        if let Some((key, found, rule)) = p.problem() {
            self.err(&format!("fabric.ib_cc.{key}"), found, rule);
            return None;
        }
        Some(p)
    }

    /// `[fabric.timely]` over the defaults for a NIC of `line` (the paper's,
    /// δ scaled to the line rate).
    pub(super) fn timely(
        &mut self,
        raw: Option<&RawTimely>,
        line: Rate,
    ) -> Option<crate::mechanism::TimelyParams> {
        use crate::mechanism::{MinRtt, TimelyParams, TimelyUpdate};
        let empty = RawTimely::default();
        let r = raw.unwrap_or(&empty);
        let d = TimelyParams::for_line(line);
        let ps = |t: SimTime| format!("{}ps", t.0);
        let t_low = self.time("fabric.timely.t_low", r.t_low.as_ref(), Some(&ps(d.t_low)));
        let t_high = self.time(
            "fabric.timely.t_high",
            r.t_high.as_ref(),
            Some(&ps(d.t_high)),
        );
        let min_rtt = match &r.min_rtt {
            None => Some(d.min_rtt),
            Some(RawQuantity::Str(s)) if s == "path" => Some(MinRtt::Path),
            q => self
                .time("fabric.timely.min_rtt", q.as_ref(), None)
                .map(MinRtt::Fixed),
        };
        let delta = match &r.delta {
            None => Some(d.delta),
            q => self.rate("fabric.timely.delta", q.as_ref(), None),
        };
        let seg_bytes = self.size(
            "fabric.timely.seg_bytes",
            r.seg_bytes.as_ref(),
            Some(&d.seg_bytes.to_string()),
            1,
        );
        let hai_threshold = match r.hai_threshold {
            None => Some(d.hai_threshold),
            Some(RawNumber::Int(i)) if (1..=1_000_000).contains(&i) => Some(i as u32),
            Some(n) => {
                self.err(
                    "fabric.timely.hai_threshold",
                    match n {
                        RawNumber::Int(i) => i.to_string(),
                        RawNumber::Float(f) => format!("{f:?}"),
                    },
                    "a whole number of completions, 1 to 1000000, such as 5",
                );
                None
            }
        };
        let update = match r.update.as_deref() {
            None => Some(d.update),
            Some("completion") => Some(TimelyUpdate::Completion),
            Some("rtt") => Some(TimelyUpdate::Rtt),
            Some(other) => {
                self.err(
                    "fabric.timely.update",
                    format!("{other:?}"),
                    "\"completion\" (Algorithm 1 per segment of seg_bytes, the paper) or \"rtt\" (once per round trip, the HPCC simulator)",
                );
                None
            }
        };
        let p = TimelyParams {
            t_low: t_low?,
            t_high: t_high?,
            min_rtt: min_rtt?,
            alpha: r.alpha.map_or(d.alpha, RawNumber::as_f64),
            beta: r.beta.map_or(d.beta, RawNumber::as_f64),
            delta: delta?,
            hai_threshold: hai_threshold?,
            seg_bytes: seg_bytes?,
            update: update?,
        };
        if let Some((key, rule)) = p.problem() {
            let found = match key {
                "t_low" => format!("{} (t_high {})", ps(p.t_low), ps(p.t_high)),
                "t_high" => ps(p.t_high),
                "min_rtt" => match p.min_rtt {
                    MinRtt::Fixed(t) => ps(t),
                    MinRtt::Path => "\"path\"".into(),
                },
                "alpha" => p.alpha.to_string(),
                "beta" => p.beta.to_string(),
                "delta" => format!("{} bits/s", p.delta.0),
                "hai_threshold" => p.hai_threshold.to_string(),
                _ => format!("{} bytes", p.seg_bytes),
            };
            self.err(&format!("fabric.timely.{key}"), found, rule);
            return None;
        }
        Some(p)
    }

    /// `[fabric.swift]` over the defaults for a NIC of `line` sending
    /// packets of `packet_wire` bytes into ports of `buffer` bytes per lane.
    pub(super) fn swift(
        &mut self,
        raw: Option<&RawSwift>,
        line: Rate,
        packet_wire: u64,
        buffer: u64,
    ) -> Option<crate::mechanism::SwiftParams> {
        use crate::mechanism::SwiftParams;
        let empty = RawSwift::default();
        let r = raw.unwrap_or(&empty);
        let d = SwiftParams::for_line(line, packet_wire, buffer);
        let ps = |t: SimTime| format!("{}ps", t.0);
        let queue_target = self.time(
            "fabric.swift.queue_target",
            r.queue_target.as_ref(),
            Some(&ps(d.queue_target)),
        );
        let fs_range = self.time(
            "fabric.swift.fs_range",
            r.fs_range.as_ref(),
            Some(&ps(d.fs_range)),
        );
        let p = SwiftParams {
            queue_target: queue_target?,
            ai: r.ai.map_or(d.ai, RawNumber::as_f64),
            beta: r.beta.map_or(d.beta, RawNumber::as_f64),
            max_mdf: r.max_mdf.map_or(d.max_mdf, RawNumber::as_f64),
            fs_range: fs_range?,
            min_cwnd: r.min_cwnd.map_or(d.min_cwnd, RawNumber::as_f64),
            ..d
        };
        if let Some((key, rule)) = p.problem() {
            let found = match key {
                "queue_target" => format!("{}ps", p.queue_target.0),
                "ai" => p.ai.to_string(),
                "beta" => p.beta.to_string(),
                "max_mdf" => p.max_mdf.to_string(),
                "min_cwnd" => p.min_cwnd.to_string(),
                _ => format!("{} and {}", p.fs_min_cwnd, p.fs_max_cwnd),
            };
            self.err(&format!("fabric.swift.{key}"), found, rule);
            return None;
        }
        Some(p)
    }

    pub(super) fn dcqcn(
        &mut self,
        raw: Option<&RawDcqcn>,
        line: Rate,
    ) -> Option<crate::mechanism::DcqcnParams> {
        use crate::mechanism::{DcqcnParams, DcqcnProfile};
        let empty = RawDcqcn::default();
        let r = raw.unwrap_or(&empty);
        let profile = match r.profile.as_deref() {
            None => defaults::DCQCN_PROFILE,
            Some("mellanox") => DcqcnProfile::Mellanox,
            Some("paper") => DcqcnProfile::Paper,
            Some(other) => {
                self.err(
                    "fabric.dcqcn.profile",
                    format!("{other:?}"),
                    "\"mellanox\" (ConnectX defaults) or \"paper\" (Zhu et al., SIGCOMM 2015)",
                );
                return None;
            }
        };
        let d = DcqcnParams::profile(profile, line);
        let min_dec_fac = r.min_dec_fac.map_or(d.min_dec_fac, RawNumber::as_f64);
        if !(0.0..=1.0).contains(&min_dec_fac) {
            self.err(
                "fabric.dcqcn.min_dec_fac",
                min_dec_fac.to_string(),
                "a fraction of the rate in [0, 1] that one cut keeps at least, such as 0.5",
            );
        }
        let g = r.g.map_or(d.g, RawNumber::as_f64);
        let initial_alpha = r.initial_alpha.map_or(d.initial_alpha, RawNumber::as_f64);
        if !gain_in_range(g) {
            self.err(
                "fabric.dcqcn.g",
                g.to_string(),
                "a gain in (0, 1], such as 0.00390625 (1/256)",
            );
        }
        if !alpha_in_range(initial_alpha) {
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
        let rate_decrease_interval = self.time(
            "fabric.dcqcn.rate_decrease_interval",
            r.rate_decrease_interval.as_ref(),
            Some(&us(d.rate_decrease_interval)),
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
        if !(gain_in_range(g)
            && alpha_in_range(initial_alpha)
            && (0.0..=1.0).contains(&min_dec_fac))
        {
            return None;
        }
        Some(DcqcnParams {
            rate_decrease_interval: rate_decrease_interval?,
            clamp_tgt_rate: r.clamp_tgt_rate.unwrap_or(d.clamp_tgt_rate),
            min_dec_fac,
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
