//! Packet-level counters and the bounded time-series sampler.

use super::flow_control::pfc::PfcState;
use super::switch::Port;
use crate::backend::{FabricCounters, Sample, Series};
use crate::topology::{NodeKind, Topology};

/// Packet-level counters of a run; see [`PacketStats::check_conservation`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PacketStats {
    /// Data packets put on the wire by sources (first transmissions and retransmissions).
    pub data_sent: u64,
    /// Data packets accepted by receivers (each PSN once).
    pub data_accepted: u64,
    /// Data packets discarded by receivers as duplicates (PSN already held).
    pub data_duplicate: u64,
    /// Data packets discarded by strict go-back-N receivers as out of order.
    pub data_out_of_order: u64,
    /// Data packets dropped in the fabric (buffer, corruption, link down, no route).
    pub data_dropped: u64,
    /// Data packets a full queue trimmed to their header instead of dropping
    /// them (`PacketConfig::trimming`); not drops: the header travels on.
    pub data_trimmed: u64,
    /// Payload bytes cut from trimmed packets (not delivered, not dropped:
    /// the sender sends them again).
    pub payload_bytes_trimmed: u64,
    /// Trimmed headers that reached their receiver.
    pub trimmed_delivered: u64,
    /// Trimmed headers the fabric dropped after all (also in the drops by cause).
    pub trimmed_dropped: u64,
    /// Packet transmissions on all links (one per packet per hop): the simulated
    /// work, independent of how many events it took.
    pub packet_hops: u64,
    /// ACK/NACK packets sent by receivers.
    pub ctrl_sent: u64,
    /// ACK/NACK packets that reached their sender.
    pub ctrl_received: u64,
    /// ACK/NACK packets dropped in the fabric.
    pub ctrl_dropped: u64,
    /// NACKs sent.
    pub nacks_sent: u64,
    /// Rewinds caused by NACKs (go-back-N, go-back-0), or recoveries they
    /// started (selective repeat).
    pub nack_rewinds: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// TCP only (0 under the RDMA recoveries, which do not tell timeouts
    /// apart): those of `timeouts` that fired with no loss signal
    /// ([`TimeoutKind::Silent`](super::recovery::TimeoutKind::Silent): a
    /// window or its tail lost whole, which no ACK-clocked recovery sees).
    pub tcp_silent_timeouts: u64,
    /// TCP only: those of `timeouts` that fired in a SACK recovery whose
    /// every missing segment had been resent
    /// ([`TimeoutKind::LostRetransmission`](super::recovery::TimeoutKind::LostRetransmission)).
    pub tcp_lost_retransmission_timeouts: u64,
    /// TCP only: those of `timeouts` that fired in a recovery whose window
    /// held the lost segments it knew of, no ACK coming to open it
    /// ([`TimeoutKind::WindowHeld`](super::recovery::TimeoutKind::WindowHeld)).
    /// The rest of `timeouts` (TCP) are recoveries that had a loss they were
    /// told of, could send and had not resent.
    pub tcp_window_held_timeouts: u64,
    /// Data packets sent more than once.
    pub retransmitted_packets: u64,
    /// Drops because an egress buffer was full (lossy only; zero with credits).
    pub drops_buffer: u64,
    /// Drops because a bit error corrupted the packet.
    pub drops_corrupt: u64,
    /// Drops because the link went down under or before the packet.
    pub drops_link_down: u64,
    /// Drops because no route existed.
    pub drops_unroutable: u64,
    /// Drops by the PFC watchdog (packets of a lane paused too long).
    pub drops_watchdog: u64,
    /// Drops at a lossless ingress lane whose headroom (or the switch's
    /// headroom pool) could not take the packet: PFC reacted too slowly.
    pub drops_headroom: u64,
    /// Payload bytes in dropped data packets.
    pub payload_bytes_dropped: u64,
    /// Packets still alive when the run ended (0 after a drained run).
    pub packets_alive_at_end: u64,
    /// Most packets alive at once (slab size).
    pub slab_high_water: u64,
    /// Capacity the event queue grew to (≥ most events pending at once;
    /// partitioned: the sum over the queues).
    pub event_queue_high_water: u64,
    /// A partitioned run ([`super::PARTITIONS`]): windows run (0 otherwise).
    pub partition_windows: u64,
    /// A partitioned run: events handled alone, outside windows (global
    /// events; with more than one partition also the queue pairs' timers).
    pub partition_steps: u64,
    /// A partitioned run: events one partition scheduled for another (or
    /// for the global queue) inside a window, delivered at its barrier.
    pub partition_crossings: u64,
    /// A partitioned run: events its windows let through out of order
    /// (`packet::WINDOW_VIOLATIONS`); 0 or the results may differ.
    pub partition_violations: u64,
    /// ECN: data packets marked Congestion Experienced.
    pub ecn_marks: u64,
    /// DCQCN: CNPs sent by receivers (also counted in `ctrl_sent`).
    pub cnps_sent: u64,
    /// DCQCN: rate cuts applied by senders.
    pub dcqcn_rate_cuts: u64,
    /// DCTCP: window cuts applied by senders.
    pub dctcp_window_cuts: u64,
    /// PFC: PAUSE frames put on the wire (a refresh counts when it went out:
    /// sent before the quanta expired, while the lane was still above XON).
    pub pfc_pause_frames: u64,
    /// PFC: PAUSE frames received by senders.
    pub pfc_pause_frames_received: u64,
    /// PFC: RESUME frames put on the wire.
    pub pfc_resume_frames: u64,
    /// PFC: wire bytes of PAUSE and RESUME frames, 84 each (64 B frame +
    /// preamble + inter-frame gap), counted in their reverse links' bytes.
    pub pfc_frame_bytes: u64,
    /// PFC watchdog: times it fired on a lane paused too long.
    pub pfc_watchdog_triggers: u64,
    /// PFC watchdog: what it did, per egress lane it fired on.
    pub pfc_watchdog_lanes: Vec<super::flow_control::WatchdogLane>,
    /// PFC: cycles of paused links found while the run went on (each once).
    pub pfc_deadlock_cycles: Vec<super::flow_control::DeadlockCycle>,
    /// PFC: every frame put on the wire, with `PacketConfig::pfc_trace` only.
    pub pfc_frame_trace: Vec<super::flow_control::PfcFrameRecord>,
    /// PFC: time lanes spent paused, summed over ports and lanes, ps.
    pub pfc_paused_ps: u64,
    /// PFC: most bytes held for one (ingress link, lane).
    pub pfc_max_ingress_bytes: u64,
    /// PFC: arrivals that the headroom of their ingress lane (or the switch's
    /// headroom pool) could not take, dropped as a switch does
    /// (= `drops_headroom`; 0 when per-port headroom covers the link's
    /// bandwidth-delay product, which the configuration checks).
    pub pfc_headroom_overflows: u64,
    /// Flowlet routing: flowlets started, i.e. path decisions switches made
    /// for a flow idle longer than the flowlet gap (or new there).
    pub flowlets: u64,
    /// Credit-controlled (link, lane) pairs whose sender does not hold the
    /// receiver's whole buffer in credits after the run (a credit leak; must be 0).
    pub credit_leaks: u64,
    /// Payload bytes receivers accepted, per lane (= per traffic class when
    /// classes are configured; data rides lane 0 otherwise).
    pub lane_payload_accepted: [u64; 8],
    /// Data packets the fabric dropped, per lane (= per traffic class).
    pub lane_data_dropped: [u64; 8],
    /// PFC PAUSE frames put on the wire, per lane (= per traffic class).
    pub lane_pause_frames: [u64; 8],
    /// When a switch first marked a packet Congestion Experienced, ps
    /// (`u64::MAX`: never).
    pub first_ecn_mark_ps: u64,
    /// When a CNP first reached a sender, ps (`u64::MAX`: never).
    pub first_cnp_at_sender_ps: u64,
    /// When DCQCN first cut a sender's rate, ps (`u64::MAX`: never).
    pub first_rate_cut_ps: u64,
    /// When a window law (DCTCP, NewReno, CUBIC) first cut a sender's
    /// window, for a loss or an ECN echo, ps (`u64::MAX`: never).
    pub first_window_cut_ps: u64,
}

impl PacketStats {
    /// All packet drops (data and control).
    pub fn drops_total(&self) -> u64 {
        self.drops_buffer
            + self.drops_corrupt
            + self.drops_link_down
            + self.drops_unroutable
            + self.drops_watchdog
            + self.drops_headroom
    }

    /// Checks that every packet is accounted for: data sent = accepted +
    /// duplicates + out-of-order discards + dropped + trimmed; trimmed =
    /// headers delivered + headers dropped; control sent = received +
    /// dropped; drops by cause add up; every credit came home; nothing left alive.
    ///
    /// # Errors
    /// A message naming the first balance that does not hold.
    pub fn check_conservation(&self) -> Result<(), String> {
        let data_out = self.data_accepted
            + self.data_duplicate
            + self.data_out_of_order
            + self.data_dropped
            + self.data_trimmed;
        if self.data_sent != data_out {
            return Err(format!(
                "data packets: sent {} != accounted {data_out} ({self:?})",
                self.data_sent
            ));
        }
        if self.ctrl_sent != self.ctrl_received + self.ctrl_dropped {
            return Err(format!(
                "control packets: sent {} != received {} + dropped {}",
                self.ctrl_sent, self.ctrl_received, self.ctrl_dropped
            ));
        }
        if self.data_trimmed != self.trimmed_delivered + self.trimmed_dropped {
            return Err(format!(
                "trimmed packets: {} != delivered {} + dropped {}",
                self.data_trimmed, self.trimmed_delivered, self.trimmed_dropped
            ));
        }
        let by_kind = self.data_dropped + self.ctrl_dropped + self.trimmed_dropped;
        if self.drops_total() != by_kind {
            return Err(format!(
                "drops by cause {} != drops by kind {by_kind}",
                self.drops_total(),
            ));
        }
        if self.credit_leaks != 0 {
            return Err(format!(
                "{} link lanes did not get all their credits back",
                self.credit_leaks
            ));
        }
        if self.packets_alive_at_end != 0 {
            return Err(format!(
                "{} packets alive at the end",
                self.packets_alive_at_end
            ));
        }
        Ok(())
    }
}

/// Samples every port's queue depth and its cumulative busy time, PFC paused
/// time (summed over lanes, running pauses included) and ECN marks at a fixed
/// interval; when `max_rows` samples are held, drops every other one and
/// doubles the interval, so memory is bounded by ports × `max_rows`. The
/// cumulative columns stay exact across the halving: a series is their
/// difference between kept rows. At the end the ports with the largest queues,
/// the longest pauses and the most marks are turned into [`Series`].
pub struct Sampler {
    interval: u64,
    max_rows: usize,
    nports: usize,
    times: Vec<u64>,
    queue: Vec<f32>,
    busy: Vec<u64>,
    paused: Vec<u64>,
    marks: Vec<u64>,
    /// Scratch: paused time of pauses still running, per port (reused).
    running: Vec<u64>,
}

impl Sampler {
    /// A sampler for `nports` ports every `interval` ps (0 = off).
    pub fn new(nports: usize, interval: u64, max_rows: u32) -> Sampler {
        Sampler {
            interval,
            max_rows: (max_rows.max(2) as usize) & !1,
            nports,
            times: Vec::new(),
            queue: Vec::new(),
            busy: Vec::new(),
            paused: Vec::new(),
            marks: Vec::new(),
            running: Vec::new(),
        }
    }

    /// Current interval, ps.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// Records one row at `now`; `pfc` supplies the pauses still running on
    /// the ports' `vls` lanes.
    pub fn record(&mut self, now: u64, ports: &[Port], pfc: &PfcState, vls: usize) {
        if self.times.len() == self.max_rows {
            let n = self.nports;
            let rows = self.times.len();
            for r in 0..rows / 2 {
                self.times[r] = self.times[2 * r];
                let (from, to) = (2 * r * n..(2 * r + 1) * n, r * n);
                self.queue.copy_within(from.clone(), to);
                self.busy.copy_within(from.clone(), to);
                self.paused.copy_within(from.clone(), to);
                self.marks.copy_within(from, to);
            }
            self.times.truncate(rows / 2);
            self.queue.truncate(rows / 2 * n);
            self.busy.truncate(rows / 2 * n);
            self.paused.truncate(rows / 2 * n);
            self.marks.truncate(rows / 2 * n);
            self.interval *= 2;
        }
        self.running.clear();
        self.running.resize(ports.len(), 0);
        let running = &mut self.running;
        pfc.running_pauses(now, |qi, d| running[qi.port(vls).0 as usize] += d);
        self.times.push(now);
        for (p, &run) in ports.iter().zip(&self.running) {
            self.queue.push(p.qtotal as f32);
            let unfinished = if p.busy && p.tx_end > now {
                p.tx_end - now
            } else {
                0
            };
            self.busy.push(p.busy_ps - unfinished);
            self.paused.push(p.paused_ps + run);
            self.marks.push(p.ecn_marks);
        }
    }

    /// Series of the `k` ports with the largest queues (queue depth, utilization),
    /// of the `k` ports paused longest (`pfc_paused`: paused lane-time per unit
    /// of time, summed over lanes, so 1.0 = one lane paused throughout) and of
    /// the `k` ports that marked most (`ecn_marks_per_us`). Ports that never
    /// paused or marked get no such series.
    pub fn series(&self, ports: &[Port], topo: &Topology, k: usize) -> Vec<Series> {
        if self.times.is_empty() || k == 0 {
            return Vec::new();
        }
        let top = |key: &dyn Fn(&Port) -> u64, keep: &dyn Fn(&Port) -> bool| {
            let mut order: Vec<usize> = (0..ports.len()).filter(|&i| keep(&ports[i])).collect();
            order.sort_by(|&a, &b| {
                key(&ports[b])
                    .cmp(&key(&ports[a]))
                    .then(ports[b].bytes.cmp(&ports[a].bytes))
                    .then(a.cmp(&b))
            });
            order.truncate(k);
            order
        };
        let name = |p: usize| {
            format!(
                "link {p} ({} -> {})",
                node_name(topo, ports[p].from),
                node_name(topo, ports[p].to)
            )
        };
        let mut out = Vec::new();
        for p in top(&|q| q.max_q, &|q| q.bytes > 0) {
            let name = name(p);
            let q = (0..self.times.len())
                .map(|r| Sample {
                    t_us: self.times[r] as f64 / 1e6,
                    value: self.queue[r * self.nports + p] as f64,
                })
                .collect();
            out.push(Series {
                name: format!("queue_bytes {name}"),
                samples: q,
            });
            out.push(Series {
                name: format!("utilization {name}"),
                samples: self.rate(&self.busy, p, 1.0, Some(1.0)),
            });
        }
        for p in top(&|q| q.paused_ps, &|q| q.paused_ps > 0) {
            out.push(Series {
                name: format!("pfc_paused {}", name(p)),
                samples: self.rate(&self.paused, p, 1.0, None),
            });
        }
        for p in top(&|q| q.ecn_marks, &|q| q.ecn_marks > 0) {
            out.push(Series {
                name: format!("ecn_marks_per_us {}", name(p)),
                // marks per picosecond × 10⁶
                samples: self.rate(&self.marks, p, 1e6, None),
            });
        }
        out
    }

    /// Per-interval rate of cumulative column `col` of port `p`: the increase
    /// between two kept rows over their time apart (ps), times `scale`,
    /// capped at `cap`. A point at each row after the first distinct time.
    fn rate(&self, col: &[u64], p: usize, scale: f64, cap: Option<f64>) -> Vec<Sample> {
        let n = self.nports;
        let mut out = Vec::with_capacity(self.times.len());
        let (mut pt, mut pv) = (0u64, 0u64);
        for (r, &t) in self.times.iter().enumerate() {
            let v = col[r * n + p];
            if t > pt {
                let x = v.saturating_sub(pv) as f64 / (t - pt) as f64 * scale;
                out.push(Sample {
                    t_us: t as f64 / 1e6,
                    value: cap.map_or(x, |c| x.min(c)),
                });
            }
            pt = t;
            pv = v;
        }
        out
    }
}

fn node_name(topo: &Topology, n: u32) -> String {
    match topo.nodes[n as usize].kind {
        NodeKind::Gpu { gpu } => format!("gpu {}", gpu.0),
        NodeKind::NvSwitch { host } => format!("nvswitch {host}"),
        NodeKind::Nic { host, index } => format!("nic {host}.{index}"),
        NodeKind::Switch { tier } => format!("switch {n} (tier {tier})"),
    }
}

/// Why the fabric dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The egress buffer was full (lossy).
    Buffer,
    /// A bit error corrupted it.
    Corrupt,
    /// Its link went down under or before it.
    LinkDown,
    /// No route to its destination.
    Unroutable,
    /// The PFC watchdog dropped the packets of a lane paused too long.
    Watchdog,
    /// A lossless ingress lane's headroom (or the headroom pool) was full:
    /// the PAUSE came too late for what was in flight.
    Headroom,
}

/// The run's counters: the common [`FabricCounters`] and the packet-level
/// [`PacketStats`], changed only through the methods below, one per thing
/// that happens, so a handler says what happened and the counters that
/// follow from it (a drop counts its cause, its kind and its payload) move
/// together.
pub struct Counters {
    fabric: FabricCounters,
    stats: PacketStats,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            fabric: FabricCounters::default(),
            stats: PacketStats {
                first_ecn_mark_ps: u64::MAX,
                first_cnp_at_sender_ps: u64::MAX,
                first_rate_cut_ps: u64::MAX,
                first_window_cut_ps: u64::MAX,
                ..PacketStats::default()
            },
        }
    }
}

impl Counters {
    /// Counters for a run under `law`: InfiniBand CC's FECN and BECN counts
    /// start at zero only when the run runs it (else they stay unmodelled).
    pub fn for_law(law: &super::CongestionControl) -> Counters {
        let mut c = Counters::default();
        if matches!(law, super::CongestionControl::Ib(_)) {
            c.fabric.fecn_marks = Some(0);
            c.fabric.becns = Some(0);
        }
        c
    }

    /// A transfer from a GPU to itself: sent and delivered, no packet.
    pub fn local_transfer(&mut self, bytes: u64) {
        self.fabric.bytes_sent += bytes;
        self.fabric.bytes_delivered += bytes;
    }
    /// A message of `bytes` was posted to a queue pair.
    #[inline]
    pub fn posted(&mut self, bytes: u64) {
        self.fabric.bytes_sent += bytes;
    }
    /// A source put a data packet on the wire.
    #[inline]
    pub fn data_sent(&mut self) {
        self.stats.data_sent += 1;
    }
    /// A receiver accepted a data packet carrying `payload` bytes.
    #[inline]
    pub fn data_accepted(&mut self, payload: u64, vl: u8) {
        self.stats.data_accepted += 1;
        self.fabric.bytes_delivered += payload;
        self.stats.lane_payload_accepted[vl as usize & 7] += payload;
    }
    /// A receiver discarded a duplicate.
    #[inline]
    pub fn data_duplicate(&mut self) {
        self.stats.data_duplicate += 1;
    }
    /// A strict go-back-N receiver discarded an out-of-order packet.
    #[inline]
    pub fn data_out_of_order(&mut self) {
        self.stats.data_out_of_order += 1;
    }
    /// A receiver sent an ACK, NACK (`nack`) or CNP.
    #[inline]
    pub fn ctrl_sent(&mut self, nack: bool) {
        self.stats.ctrl_sent += 1;
        self.stats.nacks_sent += u64::from(nack);
    }
    /// A control packet reached its sender.
    #[inline]
    pub fn ctrl_received(&mut self) {
        self.stats.ctrl_received += 1;
    }
    /// A receiver decided to send a CNP (under InfiniBand CC, a BECN).
    #[inline]
    pub fn cnp(&mut self) {
        self.fabric.cnps += 1;
        if let Some(b) = &mut self.fabric.becns {
            *b += 1;
        }
    }
    /// A switch set FECN on a data packet (InfiniBand CC) at `now`.
    #[inline]
    pub fn fecn_mark(&mut self, now: u64) {
        if let Some(n) = &mut self.fabric.fecn_marks {
            *n += 1;
        }
        self.stats.first_ecn_mark_ps = self.stats.first_ecn_mark_ps.min(now);
    }
    /// DCQCN cut a sender's rate at `now`.
    #[inline]
    pub fn rate_cut(&mut self, now: u64) {
        self.stats.dcqcn_rate_cuts += 1;
        self.stats.first_rate_cut_ps = self.stats.first_rate_cut_ps.min(now);
    }
    /// A CNP reached its sender at `now`.
    #[inline]
    pub fn cnp_at_sender(&mut self, now: u64) {
        self.stats.first_cnp_at_sender_ps = self.stats.first_cnp_at_sender_ps.min(now);
    }
    /// A window law cut a sender's window at `now`.
    #[inline]
    pub fn window_cut(&mut self, now: u64) {
        self.stats.dctcp_window_cuts += 1;
        self.stats.first_window_cut_ps = self.stats.first_window_cut_ps.min(now);
    }
    /// A retransmission timeout of this kind fired (counted in
    /// `timeouts` apart: [`PacketStats::tcp_silent_timeouts`],
    /// [`PacketStats::tcp_lost_retransmission_timeouts`],
    /// [`PacketStats::tcp_window_held_timeouts`]).
    #[inline]
    pub fn timeout_kind(&mut self, kind: super::recovery::TimeoutKind) {
        use super::recovery::TimeoutKind;
        match kind {
            TimeoutKind::Silent => self.stats.tcp_silent_timeouts += 1,
            TimeoutKind::LostRetransmission => self.stats.tcp_lost_retransmission_timeouts += 1,
            TimeoutKind::WindowHeld => self.stats.tcp_window_held_timeouts += 1,
            TimeoutKind::Unclassified | TimeoutKind::Recovery => {}
        }
    }
    /// A NACK rewound a sender.
    #[inline]
    pub fn nack_rewind(&mut self) {
        self.stats.nack_rewinds += 1;
    }
    /// A packet started transmission on a link.
    #[inline]
    pub fn hop(&mut self) {
        self.stats.packet_hops += 1;
    }
    /// A switch marked a data packet Congestion Experienced.
    #[inline]
    pub fn ecn_mark(&mut self, now: u64) {
        self.fabric.ecn_marks += 1;
        self.stats.first_ecn_mark_ps = self.stats.first_ecn_mark_ps.min(now);
    }
    /// A switch started a flowlet.
    #[inline]
    pub fn flowlet(&mut self) {
        self.stats.flowlets += 1;
    }
    /// A full queue trimmed a data packet of `payload` bytes to its header.
    #[inline]
    pub fn trimmed(&mut self, payload: u64) {
        self.stats.data_trimmed += 1;
        self.stats.payload_bytes_trimmed += payload;
    }
    /// A trimmed header reached its receiver.
    #[inline]
    pub fn trimmed_delivered(&mut self) {
        self.stats.trimmed_delivered += 1;
    }
    /// The fabric dropped a packet: data (with `payload` bytes), a trimmed
    /// header (`trimmed`) or control.
    #[inline]
    pub fn dropped(&mut self, cause: DropCause, data: bool, payload: u64, vl: u8) {
        self.dropped_kind(cause, data, false, payload, vl);
    }
    /// [`Counters::dropped`], telling trimmed headers apart; `vl` is the
    /// packet's lane (its traffic class).
    #[inline]
    pub fn dropped_kind(
        &mut self,
        cause: DropCause,
        data: bool,
        trimmed: bool,
        payload: u64,
        vl: u8,
    ) {
        let s = &mut self.stats;
        match cause {
            DropCause::Buffer => s.drops_buffer += 1,
            DropCause::Corrupt => s.drops_corrupt += 1,
            DropCause::LinkDown => s.drops_link_down += 1,
            DropCause::Unroutable => s.drops_unroutable += 1,
            DropCause::Watchdog => s.drops_watchdog += 1,
            DropCause::Headroom => s.drops_headroom += 1,
        }
        if trimmed {
            s.trimmed_dropped += 1;
        } else if data {
            s.data_dropped += 1;
            s.lane_data_dropped[vl as usize & 7] += 1;
            s.payload_bytes_dropped += payload;
        } else {
            s.ctrl_dropped += 1;
        }
    }
    /// PFC: an ingress lane now holds `bytes`; `overflow`: a packet its
    /// headroom could not take was dropped instead.
    #[inline]
    pub fn pfc_held(&mut self, bytes: u64, overflow: bool) {
        let s = &mut self.stats;
        s.pfc_max_ingress_bytes = s.pfc_max_ingress_bytes.max(bytes);
        s.pfc_headroom_overflows += u64::from(overflow);
    }
    /// PFC: a PAUSE (`pause`) or RESUME frame of `wire` bytes went on the wire.
    #[inline]
    pub fn pfc_frame(&mut self, pause: bool, wire: u64, vl: u8) {
        if pause {
            self.fabric.pfc_pause_frames += 1;
            self.stats.lane_pause_frames[vl as usize & 7] += 1;
        } else {
            self.stats.pfc_resume_frames += 1;
        }
        self.stats.pfc_frame_bytes += wire;
    }
    /// The PFC watchdog fired on a lane.
    #[inline]
    pub fn pfc_watchdog_trigger(&mut self) {
        self.stats.pfc_watchdog_triggers += 1;
    }
    /// PFC: a lane was paused for `ps`.
    #[inline]
    pub fn pfc_paused(&mut self, ps: u64) {
        self.stats.pfc_paused_ps += ps;
    }
    /// The counters, for assembling the results at the end of a run.
    pub fn into_parts(self) -> (FabricCounters, PacketStats) {
        (self.fabric, self.stats)
    }
}
