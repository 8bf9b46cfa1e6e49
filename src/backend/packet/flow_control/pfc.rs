//! **PFC** (IEEE 802.1Qbb, lossless Ethernet as RoCEv2 deployments run it):
//! the receiving node of every network link counts the wire bytes it holds that
//! arrived over that link, per priority (lane), from arrival until they start
//! transmission onward. When a packet takes the count above XOFF, the
//! receiver sends a PAUSE for that priority; when departures bring it to XON or
//! below, a RESUME (a PAUSE of zero quanta). The frames are 64 bytes and take
//! priority over data: they reach the sender one frame time plus the link's
//! latency later, whatever is queued (and take no bandwidth from the data on
//! the reverse link: a simplification, 64 bytes per frame). A paused lane is skipped by the sender's
//! scheduler (its packet on the wire, if any, still completes); time a lane
//! spends paused is the port's paused time, added to its `stall_ps`. With
//! [`PacketConfig::pfc_pause_quanta`](crate::backend::packet::PacketConfig::pfc_pause_quanta)
//! set, a PAUSE lasts that many quanta of 512 bit-times, and the receiver
//! repeats it every half of that while still above XON. Packets keep arriving
//! during the pause round trip; the headroom above XOFF absorbs them, which
//! is why the configuration is refused when the headroom is smaller than the
//! link's [`pfc_headroom_needed`](crate::mechanism::pfc_headroom_needed). Nothing is ever
//! dropped for buffer; a bytes-above-XOFF+headroom event is counted
//! ([`PacketStats::pfc_headroom_overflows`](crate::backend::packet::PacketStats::pfc_headroom_overflows)).
//!
//! PAUSE propagates: a paused egress fills, its node's ingress counters pass
//! XOFF and pause their own upstream links, which may also carry flows that
//! never cross the congested port (congestion spreading, head-of-line
//! blocking). Where the paused links form a cycle nothing moves again (PFC
//! deadlock; Hu et al., "Deadlocks in Datacenter Networks", HotNets 2016);
//! the run's watchdog then reports the cycle
//! ([`PacketError::PfcDeadlock`](crate::backend::packet::PacketError::PfcDeadlock)).

use super::FlowControl;
use crate::backend::packet::engine::Event;
use crate::backend::packet::ids::{IdVec, LaneIdx, PortId};
use crate::backend::packet::sim::Sim;
use crate::backend::packet::switch::NEVER;

/// PFC state of every network link, per link and lane (`link * vls + vl`).
pub struct PfcState {
    /// Bytes the link's receiver holds that arrived over it on that lane.
    ingress: IdVec<LaneIdx, u64>,
    /// The receiver has paused the sender (no RESUME yet).
    sent: IdVec<LaneIdx, bool>,
    /// The sender's lane is paused until this time, ps (NEVER = until RESUME;
    /// 0 = not paused).
    paused_until: IdVec<LaneIdx, u64>,
    /// When the current pause began, ps.
    pause_since: IdVec<LaneIdx, u64>,
}

impl PfcState {
    /// Nothing held and nothing paused on `lanes` (links × lanes) lanes.
    pub fn new(lanes: usize) -> PfcState {
        PfcState {
            ingress: IdVec::from_vec(vec![0; lanes]),
            sent: IdVec::from_vec(vec![false; lanes]),
            paused_until: IdVec::from_vec(vec![0; lanes]),
            pause_since: IdVec::from_vec(vec![0; lanes]),
        }
    }

    /// Whether the sender of lane `qi` is paused at `now`.
    #[inline]
    pub fn is_paused(&self, qi: LaneIdx, now: u64) -> bool {
        self.paused_until[qi] > now
    }

    /// Whether any lane is paused at `now` (the deadlock watchdog).
    pub fn any_paused(&self, now: u64) -> bool {
        self.paused_until.iter().any(|&u| u > now)
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
    /// PFC: a packet of `wire` bytes that arrived over `link` on lane `vl` is now
    /// held by the link's receiving node.
    #[inline]
    pub(in crate::backend::packet) fn pfc_hold(&mut self, link: PortId, vl: u8, wire: u64) {
        let FlowControl::Pfc { xoff, headroom, .. } = self.cfg.flow_control else {
            return;
        };
        let qi = link.lane(vl, self.vls);
        self.pfc.ingress[qi] += wire;
        let b = self.pfc.ingress[qi];
        self.counters.pfc_held(b, b > xoff + headroom);
        if b > xoff && !self.pfc.sent[qi] {
            self.pfc.sent[qi] = true;
            self.send_pfc_frame(link, vl, true);
        }
    }

    /// PFC: a held packet left (started transmission onward, or was flushed).
    #[inline]
    pub(in crate::backend::packet) fn pfc_release(&mut self, link: PortId, vl: u8, wire: u64) {
        let FlowControl::Pfc { xon, .. } = self.cfg.flow_control else {
            return;
        };
        let qi = link.lane(vl, self.vls);
        self.pfc.ingress[qi] -= wire;
        if self.pfc.sent[qi] && self.pfc.ingress[qi] <= xon {
            self.pfc.sent[qi] = false;
            self.send_pfc_frame(link, vl, false);
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

    /// The receiver of `link` sends a PAUSE (or RESUME) for lane `vl` upstream.
    fn send_pfc_frame(&mut self, link: PortId, vl: u8, pause: bool) {
        let port = &mut self.ports[link];
        if pause {
            port.pause_tx += 1;
        }
        self.counters.pfc_frame(pause);
        // A 64-byte frame that overtakes queued data (MAC control frames are
        // sent ahead of the queues), then the link's latency.
        let at = self.now + port.tx_time(64) + port.latency;
        self.q.push(
            at,
            Event::Pfc {
                link,
                vl,
                kind: u8::from(pause),
            },
        );
        if pause {
            let t = self.pause_time(link);
            if t > 0 {
                self.q
                    .push(self.now + (t / 2).max(1), Event::Pfc { link, vl, kind: 2 });
            }
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
    pub(in crate::backend::packet) fn on_pfc(&mut self, link: PortId, vl: u8, kind: u8) {
        let l = link;
        let qi = link.lane(vl, self.vls);
        match kind {
            1 => {
                self.ports[l].pause_rx += 1;
                let t = self.pause_time(l);
                if self.pfc.paused_until[qi] == 0 {
                    self.pfc.pause_since[qi] = self.now;
                }
                if t == 0 {
                    self.pfc.paused_until[qi] = NEVER;
                } else {
                    let until = self.now + t;
                    self.pfc.paused_until[qi] = until;
                    self.q.push(until, Event::Pfc { link, vl, kind: 3 });
                }
            }
            0 => {
                if self.pfc.paused_until[qi] != 0 {
                    self.unpause(l, qi);
                }
            }
            2 => {
                if self.pfc.sent[qi] {
                    self.send_pfc_frame(l, vl, true);
                }
            }
            _ => {
                let u = self.pfc.paused_until[qi];
                if u != 0 && u != NEVER && u <= self.now {
                    self.unpause(l, qi);
                }
            }
        }
    }

    /// The paused links that wait on each other in a cycle: link `a` waits on
    /// link `b` when `b` leaves the node `a` enters, `b` has a paused lane, and
    /// `b`'s queues hold packets that arrived over `a`. Empty if there is none.
    pub(in crate::backend::packet) fn pfc_cycle(&self) -> Vec<(u32, u32, u32)> {
        let n = self.ports.len();
        let vls = self.vls;
        let paused = |p: usize| {
            (0..vls).any(|v| self.pfc.paused_until[PortId(p as u32).lane(v as u8, vls)] > self.now)
        };
        let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); self.topo.nodes.len()];
        for (i, p) in self.ports.iter().enumerate() {
            if paused(i) {
                out_of[p.from as usize].push(i as u32);
            }
        }
        let holds_from = |b: usize, a: u32| {
            (0..vls).any(|v| {
                self.ports
                    .queued(PortId(b as u32).lane(v as u8, vls))
                    .any(|k| self.pkts[k].link == PortId(a))
            })
        };
        // Iterative DFS with colours; `parent` rebuilds the cycle.
        let mut colour = vec![0u8; n];
        let mut parent = vec![u32::MAX; n];
        for s in 0..n {
            if colour[s] != 0 || !paused(s) {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(s, 0)];
            colour[s] = 1;
            while let Some(&mut (a, ref mut i)) = stack.last_mut() {
                let next = out_of[self.ports[PortId(a as u32)].to as usize]
                    .get(*i)
                    .copied();
                *i += 1;
                match next {
                    None => {
                        colour[a] = 2;
                        stack.pop();
                    }
                    Some(b) => {
                        let b = b as usize;
                        if !holds_from(b, a as u32) {
                            continue;
                        }
                        if colour[b] == 1 {
                            let mut cyc = vec![b];
                            let mut x = a;
                            while x != b {
                                cyc.push(x);
                                x = parent[x] as usize;
                            }
                            cyc.reverse();
                            return cyc
                                .into_iter()
                                .map(|p| {
                                    let port = &self.ports[PortId(p as u32)];
                                    (p as u32, port.from, port.to)
                                })
                                .collect();
                        }
                        if colour[b] == 0 {
                            colour[b] = 1;
                            parent[b] = a as u32;
                            stack.push((b, 0));
                        }
                    }
                }
            }
        }
        Vec::new()
    }
}
