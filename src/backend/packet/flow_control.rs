//! Link-level flow control: InfiniBand credits or lossy drop-tail.
//!
//! **Credits** (IBA vol. 1 §7.9): for every link and virtual lane the sender
//! holds a count of 64-byte blocks free in the receiver's input buffer. Sending a
//! packet of `w` wire bytes consumes `ceil(w / 64)` blocks; when the packet later
//! leaves the receiver's buffer (starts transmission on its egress port, is
//! consumed by the GPU, or is discarded) the receiver returns the blocks, which
//! reach the sender one link latency later. A sender without enough blocks for
//! the head packet of a lane skips that lane; time spent with packets waiting
//! and nothing sendable is the port's *credit stall*. The buffer cannot
//! overflow, so credit runs have zero buffer drops.
//!
//! **Lossy** (Ethernet without PFC): a packet that arrives over a lossy link is
//! admitted to its egress queue only if the queue (per port and lane) stays
//! within [`PacketConfig::port_buffer_bytes`](super::PacketConfig::port_buffer_bytes),
//! or, with a shared buffer, within α × the node's free shared bytes; otherwise
//! it is dropped (drop-tail). PCIe and NVLink links stay credit-controlled in
//! both modes.
//!
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
//! [`PacketConfig::pfc_pause_quanta`](super::PacketConfig::pfc_pause_quanta)
//! set, a PAUSE lasts that many quanta of 512 bit-times, and the receiver
//! repeats it every half of that while still above XON. Packets keep arriving
//! during the pause round trip; the headroom above XOFF absorbs them, which
//! is why the configuration is refused when the headroom is smaller than the
//! link's [`pfc_headroom_needed`](super::pfc_headroom_needed). Nothing is ever
//! dropped for buffer; a bytes-above-XOFF+headroom event is counted
//! ([`PacketStats::pfc_headroom_overflows`](super::PacketStats::pfc_headroom_overflows)).
//!
//! PAUSE propagates: a paused egress fills, its node's ingress counters pass
//! XOFF and pause their own upstream links, which may also carry flows that
//! never cross the congested port (congestion spreading, head-of-line
//! blocking). Where the paused links form a cycle nothing moves again (PFC
//! deadlock; Hu et al., "Deadlocks in Datacenter Networks", HotNets 2016);
//! the run's watchdog then reports the cycle
//! ([`PacketError::PfcDeadlock`](super::PacketError::PfcDeadlock)).

use std::collections::VecDeque;

use super::engine::Event;
use super::sim::Sim;
use super::switch::NEVER;
pub use crate::mechanism::flow_control::FlowControl;

/// The credits of one link's sender on one virtual lane.
///
/// The count and the FIFO's header share one cache line: a packet hop reads
/// the count of its egress lane and appends to the FIFO of its ingress lane,
/// and each should cost at most one miss.
#[repr(align(64))]
pub struct CreditLane {
    /// Credit blocks the sender holds (absorbed).
    pub credits: i64,
    /// Credits on their way back: (arrival time ps, blocks), in arrival order.
    pub in_flight: VecDeque<(u64, u32)>,
}

impl CreditLane {
    /// A lane whose sender starts with `credits` blocks (the receiver's buffer).
    pub fn new(credits: i64) -> CreditLane {
        CreditLane {
            credits,
            in_flight: VecDeque::new(),
        }
    }

    /// Moves the credits that have arrived by `now` into the count.
    #[inline]
    fn absorb(&mut self, now: u64) {
        while let Some(&(t, b)) = self.in_flight.front() {
            if t > now {
                break;
            }
            self.in_flight.pop_front();
            self.credits += b as i64;
        }
    }
}

/// Credit blocks a packet of `wire` bytes occupies.
#[inline]
pub fn blocks(wire: u32, block: u32) -> u32 {
    wire.div_ceil(block)
}

impl Sim<'_> {
    /// Credit blocks of a packet of `wire` bytes (a shift for power-of-two blocks:
    /// this runs several times per packet hop).
    #[inline]
    pub(super) fn blk(&self, wire: u32) -> u32 {
        if self.block_shift != u32::MAX {
            (wire + (1 << self.block_shift) - 1) >> self.block_shift
        } else {
            blocks(wire, self.cfg.credit_block_bytes)
        }
    }

    /// Whether a packet of `wire` bytes that arrived over a lossy link may join
    /// queue `qi` (port × lanes + lane) of port `port`.
    #[inline]
    pub(super) fn admit_lossy(&self, port: usize, qi: usize, wire: u64) -> bool {
        let q = self.qbytes[qi];
        if self.cfg.shared_buffer_bytes == 0 {
            return q + wire <= self.cfg.port_buffer_bytes;
        }
        let node = self.ports[port].from as usize;
        let free = self.cfg.shared_buffer_bytes - self.shared_used[node];
        wire <= free && (q + wire) as f64 <= self.cfg.shared_buffer_alpha * free as f64
    }

    /// Returns `blocks` credits on `vl` to the sender of `link` after the link's
    /// latency (the receiver freed them now).
    ///
    /// Credits of one link and lane arrive in the order they were returned (the
    /// latency is constant), so they wait in a FIFO of (arrival time, blocks).
    /// The ones that have arrived are absorbed here, while the lane's cache line
    /// is loaded anyway, and by the sender only when it runs short; only a
    /// sender that is actually starved schedules an event, at the first pending
    /// arrival: most hops never starve, and this removed one event in three per
    /// packet hop (see the commit that introduced it).
    #[inline]
    pub(super) fn return_credit(&mut self, link: u32, vl: u8, blocks: u32) {
        let p = &self.ports[link as usize];
        if !p.credit_fc {
            return;
        }
        let at = self.now + p.latency;
        let starved = p.stall_since != NEVER;
        let now = self.now;
        let lane = &mut self.credit_lanes[link as usize * self.vls + vl as usize];
        lane.absorb(now);
        lane.in_flight.push_back((at, blocks));
        if starved {
            self.schedule_credit_wake(link as usize, at);
        }
    }

    /// Makes sure port `p` is woken at `at` (or earlier) to absorb credits.
    #[inline]
    pub(super) fn schedule_credit_wake(&mut self, p: usize, at: u64) {
        let w = self.credit_wake[p];
        if w == NEVER || w > at || w < self.now {
            self.credit_wake[p] = at;
            self.q.push(
                at,
                Event::Credit {
                    link: p as u32,
                    vl: 0,
                    blocks: 0,
                },
            );
        }
    }

    /// Whether lane `qi` of port `p` holds `need` credit blocks, absorbing the
    /// credits that have reached the sender by now only when the ones already
    /// absorbed fall short.
    ///
    /// Lazy on purpose: deciding on the absorbed count alone gives the same
    /// answer whenever it suffices (arrived credits only add), and it leaves the
    /// FIFO's buffer, another cache line per lane, untouched on most hops.
    /// Measured (perf, 1,024-GPU hierarchical all-reduce): the eager scan of
    /// every lane's FIFO front was 54% of `try_send`, 18% of the run.
    #[inline]
    pub(super) fn has_credits(&mut self, p: usize, qi: usize, need: u32) -> bool {
        let lane = &mut self.credit_lanes[qi];
        if lane.credits >= need as i64 {
            return true;
        }
        lane.absorb(self.now);
        debug_assert!(
            lane.credits <= self.credit_cap[p],
            "credits above the receiver's buffer"
        );
        lane.credits >= need as i64
    }

    /// Arrival time of the earliest credit still on its way to lane `qi`'s
    /// sender (after [`Sim::has_credits`] absorbed what has arrived), or NEVER.
    #[inline]
    pub(super) fn next_credit_at(&self, qi: usize) -> u64 {
        self.credit_lanes[qi]
            .in_flight
            .front()
            .map_or(NEVER, |&(t, _)| t)
    }

    /// PFC: a packet of `wire` bytes that arrived over `link` on lane `vl` is now
    /// held by the link's receiving node.
    #[inline]
    pub(super) fn pfc_hold(&mut self, link: usize, vl: u8, wire: u64) {
        let FlowControl::Pfc { xoff, headroom, .. } = self.cfg.flow_control else {
            return;
        };
        let qi = link * self.vls + vl as usize;
        self.pfc_in[qi] += wire;
        let b = self.pfc_in[qi];
        if b > self.stats.pfc_max_ingress_bytes {
            self.stats.pfc_max_ingress_bytes = b;
        }
        if b > xoff + headroom {
            self.stats.pfc_headroom_overflows += 1;
        }
        if b > xoff && !self.pfc_sent[qi] {
            self.pfc_sent[qi] = true;
            self.send_pfc_frame(link, vl, true);
        }
    }

    /// PFC: a held packet left (started transmission onward, or was flushed).
    #[inline]
    pub(super) fn pfc_release(&mut self, link: usize, vl: u8, wire: u64) {
        let FlowControl::Pfc { xon, .. } = self.cfg.flow_control else {
            return;
        };
        let qi = link * self.vls + vl as usize;
        self.pfc_in[qi] -= wire;
        if self.pfc_sent[qi] && self.pfc_in[qi] <= xon {
            self.pfc_sent[qi] = false;
            self.send_pfc_frame(link, vl, false);
        }
    }

    /// Duration of one PAUSE with the configured quanta on `link`, ps (0 = until RESUME).
    fn pause_time(&self, link: usize) -> u64 {
        let q = self.cfg.pfc_pause_quanta as u64;
        if q == 0 {
            0
        } else {
            self.ports[link].tx_time(q * 64)
        }
    }

    /// The receiver of `link` sends a PAUSE (or RESUME) for lane `vl` upstream.
    fn send_pfc_frame(&mut self, link: usize, vl: u8, pause: bool) {
        let port = &mut self.ports[link];
        if pause {
            port.pause_tx += 1;
            self.fabric.pfc_pause_frames += 1;
        } else {
            self.stats.pfc_resume_frames += 1;
        }
        // A 64-byte frame that overtakes queued data (MAC control frames are
        // sent ahead of the queues), then the link's latency.
        let at = self.now + port.tx_time(64) + port.latency;
        self.q.push(
            at,
            Event::Pfc {
                link: link as u32,
                vl,
                kind: u8::from(pause),
            },
        );
        if pause {
            let t = self.pause_time(link);
            if t > 0 {
                self.q.push(
                    self.now + (t / 2).max(1),
                    Event::Pfc {
                        link: link as u32,
                        vl,
                        kind: 2,
                    },
                );
            }
        }
    }

    /// Ends a pause of lane `qi` of port `link` now, accounting its time.
    fn unpause(&mut self, link: usize, qi: usize) {
        let since = self.pause_since[qi];
        self.paused_until[qi] = 0;
        let d = self.now - since;
        let port = &mut self.ports[link];
        port.paused_ps += d;
        port.stall_ps += d;
        self.stats.pfc_paused_ps += d;
        self.try_send(link);
    }

    /// A PFC event of `link`, lane `vl` (see [`Event::Pfc`](super::engine::Event::Pfc)).
    pub(super) fn on_pfc(&mut self, link: u32, vl: u8, kind: u8) {
        let l = link as usize;
        let qi = l * self.vls + vl as usize;
        match kind {
            1 => {
                self.ports[l].pause_rx += 1;
                let t = self.pause_time(l);
                if self.paused_until[qi] == 0 {
                    self.pause_since[qi] = self.now;
                }
                if t == 0 {
                    self.paused_until[qi] = NEVER;
                } else {
                    let until = self.now + t;
                    self.paused_until[qi] = until;
                    self.q.push(until, Event::Pfc { link, vl, kind: 3 });
                }
            }
            0 => {
                if self.paused_until[qi] != 0 {
                    self.unpause(l, qi);
                }
            }
            2 => {
                if self.pfc_sent[qi] {
                    self.send_pfc_frame(l, vl, true);
                }
            }
            _ => {
                let u = self.paused_until[qi];
                if u != 0 && u != NEVER && u <= self.now {
                    self.unpause(l, qi);
                }
            }
        }
    }

    /// The paused links that wait on each other in a cycle: link `a` waits on
    /// link `b` when `b` leaves the node `a` enters, `b` has a paused lane, and
    /// `b`'s queues hold packets that arrived over `a`. Empty if there is none.
    pub(super) fn pfc_cycle(&self) -> Vec<(u32, u32, u32)> {
        let n = self.ports.len();
        let paused =
            |p: usize| (0..self.vls).any(|v| self.paused_until[p * self.vls + v] > self.now);
        let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); self.topo.nodes.len()];
        for (i, p) in self.ports.iter().enumerate() {
            if paused(i) {
                out_of[p.from as usize].push(i as u32);
            }
        }
        let holds_from = |b: usize, a: u32| {
            (0..self.vls).any(|v| {
                self.queues[b * self.vls + v]
                    .iter()
                    .any(|&k| self.pkts[k].link == a)
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
                let next = out_of[self.ports[a].to as usize].get(*i).copied();
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
                                .map(|p| (p as u32, self.ports[p].from, self.ports[p].to))
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

    /// The credit wake-up of port `link` fired.
    pub(super) fn on_credit(&mut self, link: u32) {
        if self.credit_wake[link as usize] == self.now {
            self.credit_wake[link as usize] = NEVER;
        }
        self.try_send(link as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_up_to_64_bytes() {
        assert_eq!(blocks(4096 + 26, 64), 65);
        assert_eq!(blocks(64, 64), 1);
        assert_eq!(blocks(30, 64), 1);
    }
}
