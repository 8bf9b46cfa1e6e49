//! **PFC** (IEEE 802.1Qbb, lossless Ethernet as RoCEv2 deployments run it):
//! the receiving node of every network link counts the wire bytes it holds that
//! arrived over that link, per priority (lane), from arrival until they start
//! transmission onward. The bytes of a lane sit in the node's buffer up to its
//! XOFF and in headroom beyond it: the packet that would take the lane past
//! XOFF (static, or α × the free shared buffer with
//! [`PfcThreshold::Dynamic`]) goes to headroom and makes the receiver pause
//! the sender; departures drain headroom first, and once it is empty and the
//! lane is at XON or below (dynamic: two packets below its XOFF), a RESUME
//! (a PAUSE of zero quanta) follows. With
//! [`PacketConfig::shared_buffer_bytes`](crate::backend::packet::PacketConfig::shared_buffer_bytes)
//! set, a node's lanes share that buffer below their XOFF (a packet it cannot
//! take goes to headroom and pauses its lane); headroom is per ingress port
//! and priority, or one pool per node
//! ([`PacketConfig::pfc_headroom_pool`](crate::backend::packet::PacketConfig::pfc_headroom_pool)).
//!
//! **Frames on the wire.** PAUSE and RESUME are MAC control frames of
//! [`PFC_FRAME_WIRE_BYTES`] (64 B + preamble + inter-frame gap) sent by the
//! receiver on the reverse link: ahead of any queued data, but after the frame
//! already in serialization there (a MAC never preempts). They take that
//! link's bandwidth (its bytes and busy time count them) and reach the sender
//! one frame time plus the link's latency after they start; the sender stops
//! the lane when the PAUSE arrives (its packet on the wire, if any, completes).
//! The receiver keeps one pending frame per lane: what it says is decided when
//! it goes out (the lane's state then), so a PAUSE and a RESUME that cancel
//! out before the wire is free send nothing. A paused lane is skipped by the
//! sender's scheduler; time a lane spends paused is the port's paused time,
//! added to its `stall_ps`. With
//! [`PacketConfig::pfc_pause_quanta`](crate::backend::packet::PacketConfig::pfc_pause_quanta)
//! set, a PAUSE lasts that many quanta of 512 bit-times, and the receiver
//! refreshes it every half of that while it still wants the sender paused
//! (one refresh chain per lane, restarted by each new pause).
//!
//! **What is counted**: a PAUSE or RESUME frame is counted when it starts on
//! the wire (so refreshes count only when sent: before the quanta expire,
//! while the lane is still above XON), with its bytes
//! ([`PacketStats::pfc_frame_bytes`](crate::backend::packet::PacketStats::pfc_frame_bytes));
//! a frame that went out is also received (the link may go down meanwhile,
//! then it is lost). Nothing is dropped below XOFF; an arrival that its lane's
//! headroom (or the node's pool) cannot take is dropped, as a switch's MMU
//! drops what a PAUSE came too late to stop, with its own cause
//! ([`DropCause::Headroom`], counted in
//! [`PacketStats::pfc_headroom_overflows`](crate::backend::packet::PacketStats::pfc_headroom_overflows)
//! too); the transport resends it. Per-port headroom smaller than the link's
//! [`pfc_headroom_needed`](crate::mechanism::pfc_headroom_needed) is refused;
//! a pool that covers one link but not every lane that fills at once is how
//! it happens.
//!
//! PAUSE propagates: a paused egress fills, its node's ingress counters pass
//! XOFF and pause their own upstream links, which may also carry flows that
//! never cross the congested port (congestion spreading, head-of-line
//! blocking). Where the paused links form a cycle nothing moves again (PFC
//! deadlock; Hu et al., "Deadlocks in Datacenter Networks", HotNets 2016). A
//! lane paused for [`PacketConfig::deadlock_timeout`](crate::backend::packet::PacketConfig::deadlock_timeout)
//! triggers a search for a cycle of paused links that hold each other's
//! packets; one found is reported as a finding
//! ([`PacketStats::pfc_deadlock_cycles`](crate::backend::packet::PacketStats::pfc_deadlock_cycles))
//! and the run goes on; when nothing moves anywhere the run's watchdog stops
//! it ([`PacketError::PfcDeadlock`](crate::backend::packet::PacketError::PfcDeadlock)).
//! The PFC watchdog
//! ([`PacketConfig::pfc_watchdog`](crate::backend::packet::PacketConfig::pfc_watchdog))
//! breaks such a wait by dropping.

use super::{arrival_lane, FlowControl, LinkLaw};
use crate::backend::packet::engine::Event;
use crate::backend::packet::ids::{IdVec, LaneIdx, PktIdx, PortId};
use crate::backend::packet::sim::Sim;
use crate::backend::packet::slab::F_PFC_HELD;
use crate::backend::packet::stats::DropCause;
use crate::backend::packet::switch::NEVER;
use crate::mechanism::{PfcThreshold, PFC_FRAME_WIRE_BYTES};

/// [`Event::Pfc`] kinds.
pub(in crate::backend::packet) mod kind {
    /// A RESUME frame reaches the sender.
    pub const RESUME: u8 = 0;
    /// A PAUSE frame reaches the sender.
    pub const PAUSE: u8 = 1;
    /// The receiver's refresh timer of a PAUSE with quanta.
    pub const REFRESH: u8 = 2;
    /// A PAUSE with quanta expires at the sender.
    pub const EXPIRY: u8 = 3;
    /// The PFC watchdog looks at a lane paused since its pause began.
    pub const WATCHDOG: u8 = 4;
    /// A lane has been paused for the deadlock timeout: look for a cycle.
    pub const CYCLE_CHECK: u8 = 5;
    /// A lane's watchdog recovery (drop) period ends.
    pub const RESTORE: u8 = 6;
}

/// What the PFC watchdog did on one egress lane over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WatchdogLane {
    /// Link (egress port) whose lane was stuck.
    pub link: u32,
    /// The lane (priority).
    pub vl: u8,
    /// Sending node of the link.
    pub from: u32,
    /// Receiving node of the link.
    pub to: u32,
    /// First time the watchdog fired on it, ps.
    pub first_at_ps: u64,
    /// Last time it fired, ps (a lane fires again no sooner than the recovery
    /// period plus a detection period after the time before).
    pub last_at_ps: u64,
    /// When it last dropped a packet, ps (within the recovery period after a
    /// trigger: the queue flushed at the trigger, then what joined the lane);
    /// 0 if it never dropped one. It can precede `last_at_ps`: the watchdog
    /// also fires on a lane paused with nothing queued (SONiC's does), and
    /// such a trigger drops nothing.
    pub last_drop_at_ps: u64,
    /// Times it fired.
    pub triggers: u64,
    /// Packets it dropped (queued when it fired, or joining during recovery).
    pub packets_dropped: u64,
    /// Wire bytes of those packets.
    pub wire_bytes_dropped: u64,
}

/// A cycle of paused links found while the run went on.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeadlockCycle {
    /// When it was found, ps.
    pub detected_at_ps: u64,
    /// Since when the lane whose long pause prompted the search was paused, ps.
    pub paused_since_ps: u64,
    /// The cycle as (link, sending node, receiving node), starting at its
    /// lowest link id, each link waiting on the next.
    pub cycle: Vec<(u32, u32, u32)>,
}

/// One PFC frame as it went on the wire ([`PacketConfig::pfc_trace`](crate::backend::packet::PacketConfig::pfc_trace)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PfcFrameRecord {
    /// The paused (or resumed) link; the frame travels on its reverse.
    pub link: u32,
    /// Lane.
    pub vl: u8,
    /// PAUSE (true) or RESUME.
    pub pause: bool,
    /// When the receiver asked for it, ps.
    pub requested_at_ps: u64,
    /// When the frame in serialization on the reverse link at that time
    /// ended (= `requested_at_ps` if the link was idle), ps.
    pub wire_free_at_ps: u64,
    /// Wire bytes queued for data on the reverse link at the request.
    pub data_queued_bytes: u64,
    /// When it started serialization, ps.
    pub tx_start_ps: u64,
    /// When it reaches the sender, ps.
    pub arrive_ps: u64,
}

/// What the receiver of one link holds on one lane (see [`PfcState`]).
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    /// Bytes that arrived over the link on the lane and are still held.
    ingress: u64,
    /// Of `ingress`, bytes held in headroom (past the lane's XOFF).
    hdrm: u64,
}

/// PFC state of every network link, per link and lane (`link * vls + vl`).
pub struct PfcState {
    /// Bytes the link's receiver holds that arrived over it on that lane,
    /// and of those the bytes in headroom: one 16-byte record, since every
    /// arrival and every departure of a packet reads and writes both.
    /// Measured (perf annotate, 1,024-host permutation): as two arrays, a
    /// PFC hop missed the cache on each (`pfc_release` 2.5%, admission part
    /// of `on_arrive`'s misses).
    held: IdVec<LaneIdx, Held>,
    /// The receiver wants the sender paused (from XOFF until XON).
    sent: IdVec<LaneIdx, bool>,
    /// What the receiver's last frame on the wire said (PAUSE = true).
    told: IdVec<LaneIdx, bool>,
    /// When the receiver last asked for the frame pending on this lane, ps.
    req_at: IdVec<LaneIdx, u64>,
    /// The pending frame re-asserts a PAUSE the sender already had (a quanta
    /// refresh, or the end of a watchdog's drop period): sent even though it
    /// says what the last frame said.
    refresh_req: IdVec<LaneIdx, bool>,
    /// The lane's next PAUSE refresh (quanta), or 0: older timers are stale.
    refresh_at: IdVec<LaneIdx, u64>,
    /// The sender's lane is paused until this time, ps (NEVER = until RESUME;
    /// 0 = not paused).
    paused_until: IdVec<LaneIdx, u64>,
    /// When the current pause began, ps.
    pause_since: IdVec<LaneIdx, u64>,
    /// The egress lane is in PFC-watchdog drop mode until this time, ps.
    wd_until: IdVec<LaneIdx, u64>,
    /// Some lane entered watchdog drop mode (the per-packet check is skipped
    /// until then).
    pub wd_any: bool,
    /// Per node: bytes its ingress lanes hold below XOFF (in the shared buffer).
    shared_used: Vec<u64>,
    /// Per node: bytes its ingress lanes hold in headroom.
    pool_used: Vec<u64>,
    /// What the watchdog did, per lane it fired on.
    pub watchdog: Vec<WatchdogLane>,
    /// Cycles found while the run went on.
    pub cycles: Vec<DeadlockCycle>,
    /// Frames put on the wire, when traced.
    pub trace: Vec<PfcFrameRecord>,
    /// Per (reverse port, lane) being traced: the frame's request record.
    trace_req: IdVec<LaneIdx, (u64, u64)>,
}

impl PfcState {
    /// Nothing held and nothing paused on `lanes` (links × lanes) lanes of
    /// `nodes` nodes.
    pub fn new(lanes: usize, nodes: usize) -> PfcState {
        PfcState {
            held: IdVec::from_vec(vec![Held::default(); lanes]),
            sent: IdVec::from_vec(vec![false; lanes]),
            told: IdVec::from_vec(vec![false; lanes]),
            req_at: IdVec::from_vec(vec![0; lanes]),
            refresh_req: IdVec::from_vec(vec![false; lanes]),
            refresh_at: IdVec::from_vec(vec![0; lanes]),
            paused_until: IdVec::from_vec(vec![0; lanes]),
            pause_since: IdVec::from_vec(vec![0; lanes]),
            wd_until: IdVec::from_vec(vec![0; lanes]),
            wd_any: false,
            shared_used: vec![0; nodes],
            pool_used: vec![0; nodes],
            watchdog: Vec::new(),
            cycles: Vec::new(),
            trace: Vec::new(),
            trace_req: IdVec::from_vec(vec![(0, 0); lanes]),
        }
    }

    /// Whether the sender of lane `qi` is paused at `now`.
    #[inline]
    pub fn is_paused(&self, qi: LaneIdx, now: u64) -> bool {
        self.paused_until[qi] > now
    }

    /// Whether egress lane `qi` drops what joins it at `now` (PFC watchdog).
    #[inline]
    pub fn dropping(&self, qi: LaneIdx, now: u64) -> bool {
        self.wd_any && self.wd_until[qi] > now
    }

    /// Whether any lane is paused at `now` (the deadlock watchdog).
    pub fn any_paused(&self, now: u64) -> bool {
        self.paused_until.iter().any(|&u| u > now)
    }

    /// Calls `f(lane, time paused so far)` for every pause running at `now`,
    /// without ending it (the sampler's view of time not yet accounted).
    pub fn running_pauses(&self, now: u64, mut f: impl FnMut(LaneIdx, u64)) {
        let lanes = self.paused_until.iter().zip(&self.pause_since);
        for (qi, (&u, &since)) in lanes.enumerate() {
            if u != 0 {
                f(LaneIdx(qi as u32), now.saturating_sub(since));
            }
        }
    }

    /// Ends every pause still running at `end` (a stalled or cut-short run),
    /// calling `f(lane, paused time)` for each.
    pub fn end_pauses(&mut self, end: u64, mut f: impl FnMut(LaneIdx, u64)) {
        let lanes = self.paused_until.iter_mut().zip(&self.pause_since);
        for (qi, (u, &since)) in lanes.enumerate() {
            if *u != 0 {
                f(LaneIdx(qi as u32), end.saturating_sub(since));
                *u = 0;
            }
        }
    }
}

impl Sim<'_> {
    /// The XOFF of an ingress lane of `node` now, bytes: the static one, or
    /// α × the node's free shared buffer.
    #[inline]
    fn pfc_xoff_now(&self, node: usize, xoff: u64) -> u64 {
        match self.cfg.pfc_threshold {
            PfcThreshold::Static => xoff,
            PfcThreshold::Dynamic { alpha } => {
                let free = self
                    .cfg
                    .shared_buffer_bytes
                    .saturating_sub(self.pfc.shared_used[node]);
                (alpha * free as f64) as u64
            }
        }
    }

    /// PFC: a packet of `wire` bytes that arrived over `link` on lane `vl` is now
    /// held by the link's receiving node; false when it goes to headroom and
    /// the lane's headroom (or the node's pool) cannot take it: the caller
    /// drops it ([`DropCause::Headroom`]), as a switch's MMU does.
    #[inline]
    pub(in crate::backend::packet) fn pfc_hold(&mut self, link: PortId, vl: u8, wire: u64) -> bool {
        let FlowControl::Pfc { xoff, headroom, .. } = self.cfg.flow_control else {
            return true;
        };
        let qi = link.lane(vl, self.vls);
        let node = self.ports[link].to as usize;
        let limit = self.pfc_xoff_now(node, xoff);
        let buf = self.cfg.shared_buffer_bytes;
        let pool = self.cfg.pfc_headroom_pool;
        let st = &mut self.pfc;
        let below = st.held[qi].ingress - st.held[qi].hdrm;
        // HPCC's switch-mmu.cc order: once a lane is in headroom, all it gets
        // goes there until it drains; a packet the lane's XOFF (or the shared
        // buffer) cannot take goes there too.
        let to_headroom = st.held[qi].hdrm > 0
            || below + wire > limit
            || (buf > 0 && st.shared_used[node] + wire > buf);
        let overflow = to_headroom
            && if pool > 0 {
                st.pool_used[node] + wire > pool
            } else {
                st.held[qi].hdrm + wire > headroom
            };
        if overflow {
            // dropped, not held. The lane is past XOFF all the same: pause its
            // sender, unless it holds nothing whose departure could resume it.
            self.counters.pfc_held(st.held[qi].ingress, true);
            if !st.sent[qi] && st.held[qi].ingress > 0 {
                st.sent[qi] = true;
                self.request_pfc_frame(link, vl, false);
                self.start_refresh(link, vl, qi);
            }
            return false;
        }
        st.held[qi].ingress += wire;
        if to_headroom {
            st.held[qi].hdrm += wire;
            st.pool_used[node] += wire;
        } else {
            st.shared_used[node] += wire;
        }
        self.counters.pfc_held(st.held[qi].ingress, false);
        if to_headroom && !st.sent[qi] {
            st.sent[qi] = true;
            self.request_pfc_frame(link, vl, false);
            self.start_refresh(link, vl, qi);
        }
        true
    }

    /// PFC admission of packet `pkt` of `wire` bytes, which arrived over
    /// `link` on lane `vl` of a lossless class: held against that ingress
    /// lane (true), or dropped because its headroom is full, the PAUSE came
    /// too late (false: counted at the link it arrived over,
    /// [`DropCause::Headroom`], and freed).
    #[inline]
    pub(in crate::backend::packet) fn pfc_admit(
        &mut self,
        link: PortId,
        vl: u8,
        pkt: PktIdx,
        wire: u32,
    ) -> bool {
        if !self.pfc_hold(link, vl, wire as u64) {
            self.ports[link].drops += 1;
            self.drop_packet(pkt, DropCause::Headroom);
            return false;
        }
        self.pkts[pkt].flags |= F_PFC_HELD;
        true
    }

    /// The PFC watchdog's recovery: if egress lane `vl` of `out` (a PFC
    /// link) is in drop mode, it takes packet `pkt` of `wire` bytes (arrived
    /// over `in_link` on lane `in_vl`), which the receiver frees and the
    /// watchdog drops: true. The run-wide `wd_any` is tested first, so runs
    /// without a watchdog pay one load per hop.
    #[inline]
    pub(in crate::backend::packet) fn pfc_watchdog_takes(
        &mut self,
        in_link: PortId,
        in_vl: u8,
        out: PortId,
        vl: u8,
        pkt: PktIdx,
        wire: u32,
    ) -> bool {
        if !self.pfc.dropping(out.lane(vl, self.vls), self.now)
            || self.ports[out].fc != LinkLaw::Pfc
        {
            return false;
        }
        self.fc_freed(in_link, in_vl, wire);
        self.watchdog_dropped(out, vl, pkt);
        true
    }

    /// With pause quanta, starts the refresh chain of a PAUSE just requested
    /// for lane `vl` (index `qi`) of `link`.
    #[inline]
    fn start_refresh(&mut self, link: PortId, vl: u8, qi: LaneIdx) {
        let t = self.pause_time(link);
        if t > 0 {
            let at = self.now + (t / 2).max(1);
            self.pfc.refresh_at[qi] = at;
            self.q.push(
                at,
                Event::Pfc {
                    link,
                    vl,
                    kind: kind::REFRESH,
                },
            );
        }
    }

    /// PFC: a held packet left (started transmission onward, or was flushed).
    #[inline]
    pub(in crate::backend::packet) fn pfc_release(&mut self, link: PortId, vl: u8, wire: u64) {
        let FlowControl::Pfc { xoff, xon, .. } = self.cfg.flow_control else {
            return;
        };
        let qi = link.lane(vl, self.vls);
        let node = self.ports[link].to as usize;
        let st = &mut self.pfc;
        st.held[qi].ingress -= wire;
        let from_hdrm = st.held[qi].hdrm.min(wire);
        st.held[qi].hdrm -= from_hdrm;
        st.pool_used[node] -= from_hdrm;
        st.shared_used[node] -= wire - from_hdrm;
        if !st.sent[qi] || st.held[qi].hdrm > 0 {
            return;
        }
        let held = st.held[qi].ingress;
        let resume = match self.cfg.pfc_threshold {
            PfcThreshold::Static => held <= xon,
            PfcThreshold::Dynamic { .. } => {
                let offset = 2 * u64::from(self.cfg.mtu + self.cfg.header_bytes);
                held == 0 || held + offset <= self.pfc_xoff_now(node, xoff)
            }
        };
        if resume {
            self.pfc.sent[qi] = false;
            self.pfc.refresh_at[qi] = 0;
            self.request_pfc_frame(link, vl, false);
        }
    }

    /// Duration of one PAUSE with the configured quanta on `link`, ps (0 = until RESUME).
    fn pause_time(&self, link: PortId) -> u64 {
        let q = self.cfg.pfc_pause_quanta as u64;
        if q == 0 {
            0
        } else {
            self.ports[link].tx_time(q * 64)
        }
    }

    /// The receiver of `link` has a PFC frame to send for lane `vl` (a
    /// `refresh` re-asserts a PAUSE): it waits on the reverse link, ahead of
    /// that port's data, for the wire to be free. A later request for the same
    /// lane joins the pending one: the frame says the lane's state when it goes.
    fn request_pfc_frame(&mut self, link: PortId, vl: u8, refresh: bool) {
        let rev = PortId(link.0 ^ 1);
        let now = self.now;
        let qi = link.lane(vl, self.vls);
        let port = &mut self.ports[rev];
        port.ctrl_pending |= 1 << vl;
        self.pfc.req_at[qi] = now;
        self.pfc.refresh_req[qi] |= refresh;
        if self.cfg.pfc_trace {
            let free = if port.busy && port.tx_end > now {
                port.tx_end
            } else {
                now
            };
            self.pfc.trace_req[qi] = (free, port.qtotal);
        }
        self.try_send(rev);
    }

    /// Port `p` is free and has PFC frames pending: puts the highest lane's on
    /// the wire if it still has something to say (returns false if none had).
    pub(in crate::backend::packet) fn start_pfc_frame(&mut self, p: PortId) -> bool {
        let link = PortId(p.0 ^ 1);
        let now = self.now;
        while self.ports[p].ctrl_pending != 0 {
            let pending = self.ports[p].ctrl_pending;
            let vl = 7 - pending.leading_zeros() as u8;
            self.ports[p].ctrl_pending &= !(1 << vl);
            let qi = link.lane(vl, self.vls);
            let pause = self.pfc.sent[qi];
            let refresh = std::mem::take(&mut self.pfc.refresh_req[qi]);
            // nothing new to say: a RESUME whose PAUSE never went out, or a
            // PAUSE the sender already has (XOFF crossed again while a RESUME
            // waited for the wire) that is not a refresh
            if pause == self.pfc.told[qi] && !(pause && refresh) {
                continue;
            }
            self.pfc.told[qi] = pause;
            let wire = PFC_FRAME_WIRE_BYTES;
            let port = &mut self.ports[p];
            let tx = port.tx_time(wire);
            port.busy = true;
            port.sent_task = crate::backend::packet::slab::NONE;
            port.tx_end = now + tx;
            port.bytes += wire;
            port.busy_ps += tx;
            if let Some(tl) = self.timeline.as_deref_mut() {
                tl.add(&[p.0], now, now + tx, wire as f64);
            }
            let arrive = now + tx + port.latency;
            let waiting = port.lanes_queued != 0 || port.has_qps() || port.ctrl_pending != 0;
            port.txdone_pending = waiting;
            if waiting {
                self.q.push(now + tx, Event::TxDone { port: p });
            }
            if pause {
                self.ports[link].pause_tx += 1;
            }
            self.counters.pfc_frame(pause, wire, vl);
            self.q.push(
                arrive,
                Event::Pfc {
                    link,
                    vl,
                    kind: u8::from(pause),
                },
            );
            if self.cfg.pfc_trace {
                let (free, queued) = self.pfc.trace_req[qi];
                self.pfc.trace.push(PfcFrameRecord {
                    link: link.0,
                    vl,
                    pause,
                    requested_at_ps: self.pfc.req_at[qi],
                    wire_free_at_ps: free,
                    data_queued_bytes: queued,
                    tx_start_ps: now,
                    arrive_ps: arrive,
                });
            }
            return true;
        }
        false
    }

    /// Port `p` went down: the PFC frames it had pending are lost with it.
    pub(in crate::backend::packet) fn drop_pfc_frames(&mut self, p: PortId) {
        let link = PortId(p.0 ^ 1);
        self.ports[p].ctrl_pending = 0;
        for vl in 0..self.vls as u8 {
            self.pfc.refresh_req[link.lane(vl, self.vls)] = false;
        }
    }

    /// Ends a pause of lane `qi` of port `link` now, accounting its time.
    fn unpause(&mut self, link: PortId, qi: LaneIdx) {
        let since = self.pfc.pause_since[qi];
        self.pfc.paused_until[qi] = 0;
        let d = self.now - since;
        let port = &mut self.ports[link];
        port.paused_ps += d;
        port.stall_ps += d;
        self.counters.pfc_paused(d);
        self.try_send(link);
    }

    /// A PFC event of `link`, lane `vl` (see [`Event::Pfc`](super::engine::Event::Pfc)).
    pub(in crate::backend::packet) fn on_pfc(&mut self, link: PortId, vl: u8, k: u8) {
        let l = link;
        let qi = link.lane(vl, self.vls);
        let now = self.now;
        match k {
            kind::PAUSE => {
                self.ports[l].pause_rx += 1;
                if !self.ports[l].up {
                    return;
                }
                // the watchdog's recovery: PAUSE is not honoured
                if self.pfc.wd_until[qi] > now {
                    return;
                }
                let t = self.pause_time(l);
                if self.pfc.paused_until[qi] == 0 {
                    self.pfc.pause_since[qi] = now;
                    let wd = self.cfg.pfc_watchdog.0;
                    if wd > 0 {
                        self.q.push(
                            now.saturating_add(wd),
                            Event::Pfc {
                                link,
                                vl,
                                kind: kind::WATCHDOG,
                            },
                        );
                    }
                    // saturating: a hand-built config may set any timeout
                    self.q.push(
                        now.saturating_add(self.cfg.deadlock_timeout.0),
                        Event::Pfc {
                            link,
                            vl,
                            kind: kind::CYCLE_CHECK,
                        },
                    );
                }
                if t == 0 {
                    self.pfc.paused_until[qi] = NEVER;
                } else {
                    let until = now + t;
                    self.pfc.paused_until[qi] = until;
                    self.q.push(
                        until,
                        Event::Pfc {
                            link,
                            vl,
                            kind: kind::EXPIRY,
                        },
                    );
                }
            }
            kind::RESUME => {
                if self.pfc.paused_until[qi] != 0 {
                    self.unpause(l, qi);
                }
            }
            kind::REFRESH => {
                // one refresh chain per pause: a timer of an earlier pause is stale
                if self.pfc.refresh_at[qi] == now && self.pfc.sent[qi] {
                    self.request_pfc_frame(l, vl, true);
                    // the chain's next link (a refresh only runs with quanta)
                    self.start_refresh(l, vl, qi);
                }
            }
            kind::EXPIRY => {
                let u = self.pfc.paused_until[qi];
                if u != 0 && u != NEVER && u <= now {
                    self.unpause(l, qi);
                }
            }
            kind::WATCHDOG => {
                let wd = self.cfg.pfc_watchdog.0;
                if self.pfc.paused_until[qi] > now && now - self.pfc.pause_since[qi] >= wd {
                    self.watchdog_fire(l, vl);
                }
            }
            kind::CYCLE_CHECK => {
                let t = self.cfg.deadlock_timeout.0;
                if self.pfc.paused_until[qi] > now && now - self.pfc.pause_since[qi] >= t {
                    self.record_cycle(self.pfc.pause_since[qi]);
                    // still paused: look again later (a cycle may form around it)
                    self.q.push(
                        now.saturating_add(t),
                        Event::Pfc {
                            link,
                            vl,
                            kind: kind::CYCLE_CHECK,
                        },
                    );
                }
            }
            _ => {
                // RESTORE: drop mode over; a receiver still above XOFF pauses
                // the sender again (a real one keeps refreshing its XOFF)
                if self.pfc.wd_until[qi] == now {
                    self.pfc.wd_until[qi] = 0;
                    if self.pfc.sent[qi] {
                        self.request_pfc_frame(l, vl, true);
                    }
                }
            }
        }
    }

    /// The PFC watchdog fires on egress lane `vl` of `link`: the lane stops
    /// honouring PAUSE and drops what it holds, and what joins it, for the
    /// recovery period (`pfc_watchdog_restore`, else the detection period).
    fn watchdog_fire(&mut self, link: PortId, vl: u8) {
        let qi = link.lane(vl, self.vls);
        let now = self.now;
        let restore = match self.cfg.pfc_watchdog_restore.0 {
            0 => self.cfg.pfc_watchdog.0,
            r => r,
        };
        let until = now.saturating_add(restore);
        self.pfc.wd_until[qi] = until;
        self.pfc.wd_any = true;
        self.q.push(
            until,
            Event::Pfc {
                link,
                vl,
                kind: kind::RESTORE,
            },
        );
        let i = self.watchdog_lane(link, vl);
        self.pfc.watchdog[i].triggers += 1;
        self.pfc.watchdog[i].last_at_ps = now;
        self.counters.pfc_watchdog_trigger();
        while let Some(pkt) = self.ports.head(qi) {
            let k = self.pkts[pkt];
            self.ports.pop(link, vl, k.wire as u64, now);
            if k.link.is_some() {
                let in_vl = arrival_lane(k.vl, k.flags);
                self.fc_release(LinkLaw::holding(k.flags), k.link, in_vl, k.wire, link);
            }
            self.watchdog_dropped(link, vl, pkt);
        }
        // unpause last: it kicks the port, which finds the lane empty
        self.unpause(link, qi);
    }

    /// Index of the watchdog record of lane `vl` of `link` (created on first use).
    fn watchdog_lane(&mut self, link: PortId, vl: u8) -> usize {
        if let Some(i) = self
            .pfc
            .watchdog
            .iter()
            .position(|w| w.link == link.0 && w.vl == vl)
        {
            return i;
        }
        let p = &self.ports[link];
        self.pfc.watchdog.push(WatchdogLane {
            link: link.0,
            vl,
            from: p.from,
            to: p.to,
            first_at_ps: self.now,
            ..WatchdogLane::default()
        });
        self.pfc.watchdog.len() - 1
    }

    /// The watchdog of lane `vl` of `link` dropped `pkt` (already out of every
    /// queue and buffer count): counted as a drop of its own cause.
    pub(in crate::backend::packet) fn watchdog_dropped(
        &mut self,
        link: PortId,
        vl: u8,
        pkt: PktIdx,
    ) {
        let wire = u64::from(self.pkts[pkt].wire);
        let i = self.watchdog_lane(link, vl);
        let w = &mut self.pfc.watchdog[i];
        w.packets_dropped += 1;
        w.wire_bytes_dropped += wire;
        w.last_drop_at_ps = self.now;
        self.ports[link].drops += 1;
        self.drop_packet(pkt, DropCause::Watchdog);
    }

    /// Looks for a cycle of paused links now and records it once (a lane
    /// paused since `since` prompted the search).
    fn record_cycle(&mut self, since: u64) {
        let mut cycle = self.pfc_cycle();
        if cycle.is_empty() {
            return;
        }
        let start = (0..cycle.len()).min_by_key(|&i| cycle[i].0).unwrap_or(0);
        cycle.rotate_left(start);
        if self.pfc.cycles.iter().any(|c| c.cycle == cycle) {
            return;
        }
        self.pfc.cycles.push(DeadlockCycle {
            detected_at_ps: self.now,
            paused_since_ps: since,
            cycle,
        });
    }

    /// The paused links that wait on each other in a cycle: link `a` waits on
    /// link `b` when `b` leaves the node `a` enters, `b` has a paused lane, and
    /// `b`'s queues hold packets that arrived over `a`. Empty if there is none.
    pub(in crate::backend::packet) fn pfc_cycle(&self) -> Vec<(u32, u32, u32)> {
        let vls = self.vls;
        let now = self.now;
        self.wait_cycle(|p| {
            (0..vls).any(|v| self.pfc.paused_until[PortId(p as u32).lane(v as u8, vls)] > now)
        })
    }
}
