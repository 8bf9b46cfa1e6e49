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

use std::collections::VecDeque;

use crate::backend::packet::engine::Event;
use crate::backend::packet::ids::{IdVec, LaneIdx, PortId};
use crate::backend::packet::sim::Sim;
use crate::backend::packet::switch::NEVER;

/// The credits of one link's sender on one virtual lane.
///
/// The count and the FIFO's header share one cache line: a packet hop reads
/// the count of its egress lane and appends to the FIFO of its ingress lane,
/// and each should cost at most one miss.
#[repr(align(64))]
pub struct CreditLane {
    /// Credit blocks the sender holds (absorbed).
    credits: i64,
    /// Credits on their way back: (arrival time ps, blocks), in arrival order.
    in_flight: VecDeque<(u64, u32)>,
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

/// The credit state of every credit-controlled link, per port and lane
/// (`port * vls + vl`).
pub struct Credits {
    /// Per port and lane: the credits of the port's sender.
    lanes: IdVec<LaneIdx, CreditLane>,
    /// Per port: time of the pending credit wake-up, or NEVER.
    wake: IdVec<PortId, u64>,
    /// log2 of the credit block when it is a power of two, else u32::MAX.
    block_shift: u32,
    /// Per port: credit blocks of the receiver's full buffer (debug checks).
    cap: IdVec<PortId, i64>,
}

impl Credits {
    /// Full credits on every lane of every link: `cap[p]` blocks per lane of
    /// port `p`; blocks of `block` bytes.
    pub fn new(cap: Vec<i64>, vls: usize, block: u32) -> Credits {
        let lanes = cap
            .iter()
            .flat_map(|&c| std::iter::repeat_n(c, vls))
            .map(CreditLane::new)
            .collect();
        Credits {
            lanes,
            wake: IdVec::from_vec(vec![NEVER; cap.len()]),
            block_shift: if block.is_power_of_two() {
                block.trailing_zeros()
            } else {
                u32::MAX
            },
            cap: IdVec::from_vec(cap),
        }
    }

    /// The sender of lane `qi` puts `blocks` on the wire (it checked it has them).
    #[inline]
    pub fn consume(&mut self, qi: LaneIdx, blocks: u32) {
        let lane = &mut self.lanes[qi];
        lane.credits -= blocks as i64;
        debug_assert!(lane.credits >= 0, "sent without credits");
    }

    /// `blocks` come straight back to the sender of lane `qi`: its packet was
    /// lost on the wire, the receiver never held it.
    #[inline]
    pub fn refund(&mut self, qi: LaneIdx, blocks: u32) {
        self.lanes[qi].credits += blocks as i64;
    }

    /// Lanes of the credit-controlled `ports` (with `vls` lanes each) whose
    /// sender does not hold, absorbed or on the way, the receiver's whole
    /// buffer: a leak (must be 0 after a drained run).
    pub fn leaks(&self, ports: impl Iterator<Item = PortId>, vls: usize) -> u64 {
        let mut n = 0;
        for p in ports {
            for vl in 0..vls as u8 {
                let lane = &self.lanes[p.lane(vl, vls)];
                let pending: i64 = lane.in_flight.iter().map(|&(_, b)| b as i64).sum();
                n += u64::from(lane.credits + pending != self.cap[p]);
            }
        }
        n
    }
}

impl Sim<'_> {
    /// Credit blocks of a packet of `wire` bytes (a shift for power-of-two blocks:
    /// this runs several times per packet hop).
    #[inline]
    pub(in crate::backend::packet) fn blk(&self, wire: u32) -> u32 {
        if self.credits.block_shift != u32::MAX {
            (wire + (1 << self.credits.block_shift) - 1) >> self.credits.block_shift
        } else {
            blocks(wire, self.cfg.credit_block_bytes)
        }
    }

    /// Returns `blocks` credits on `vl` to the sender of credit-controlled
    /// `link` after the link's latency (the receiver freed them now; callers
    /// go through [`Sim::fc_freed`], which checks the link's law).
    ///
    /// Credits of one link and lane arrive in the order they were returned (the
    /// latency is constant), so they wait in a FIFO of (arrival time, blocks).
    /// The ones that have arrived are absorbed here, while the lane's cache line
    /// is loaded anyway, and by the sender only when it runs short; only a
    /// sender that is actually starved schedules an event, at the first pending
    /// arrival: most hops never starve, and this removed one event in three per
    /// packet hop (see the commit that introduced it).
    #[inline]
    pub(in crate::backend::packet) fn return_credit(&mut self, link: PortId, vl: u8, blocks: u32) {
        let p = &self.ports[link];
        let at = self.now + p.latency;
        let starved = p.stall_since != NEVER;
        let now = self.now;
        let lane = &mut self.credits.lanes[link.lane(vl, self.vls)];
        lane.absorb(now);
        lane.in_flight.push_back((at, blocks));
        if starved {
            self.schedule_credit_wake(link, at);
        }
    }

    /// [`Sim::return_credit`] with the credit held `extra` ps longer before
    /// it leaves (UGAL-L_CR's delayed credit, [`crate::backend::packet::sim::CrPort`]).
    /// A credit never overtakes one returned before it on the same lane: it
    /// arrives no earlier than the last one in flight, so the FIFO stays in
    /// arrival order.
    pub(in crate::backend::packet) fn return_credit_late(
        &mut self,
        link: PortId,
        vl: u8,
        blocks: u32,
        extra: u64,
    ) {
        let p = &self.ports[link];
        let mut at = self.now + p.latency + extra;
        let starved = p.stall_since != NEVER;
        let now = self.now;
        let lane = &mut self.credits.lanes[link.lane(vl, self.vls)];
        lane.absorb(now);
        if let Some(&(last, _)) = lane.in_flight.back() {
            at = at.max(last);
        }
        lane.in_flight.push_back((at, blocks));
        if starved {
            self.schedule_credit_wake(link, at);
        }
    }

    /// Makes sure port `p` is woken at `at` (or earlier) to absorb credits.
    #[inline]
    pub(in crate::backend::packet) fn schedule_credit_wake(&mut self, p: PortId, at: u64) {
        let w = self.credits.wake[p];
        if w == NEVER || w > at || w < self.now {
            self.credits.wake[p] = at;
            self.q.push(
                at,
                Event::Credit {
                    link: p,
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
    pub(in crate::backend::packet) fn has_credits(
        &mut self,
        p: PortId,
        qi: LaneIdx,
        need: u32,
    ) -> bool {
        let lane = &mut self.credits.lanes[qi];
        if lane.credits >= need as i64 {
            return true;
        }
        lane.absorb(self.now);
        debug_assert!(
            lane.credits <= self.credits.cap[p],
            "credits above the receiver's buffer"
        );
        lane.credits >= need as i64
    }

    /// Arrival time of the earliest credit still on its way to lane `qi`'s
    /// sender (after [`Sim::has_credits`] absorbed what has arrived), or NEVER.
    #[inline]
    pub(in crate::backend::packet) fn next_credit_at(&self, qi: LaneIdx) -> u64 {
        self.credits.lanes[qi]
            .in_flight
            .front()
            .map_or(NEVER, |&(t, _)| t)
    }

    /// Port `p` waits for credits on the lanes of bitmask `lanes` (nothing
    /// else could go): its credit stall begins, and it is woken when the
    /// earliest credit on its way to one of them arrives.
    pub(in crate::backend::packet) fn credit_starved(&mut self, p: PortId, lanes: u32) {
        let port = &mut self.ports[p];
        if port.stall_since == NEVER {
            port.stall_since = self.now;
        }
        let mut next_credit = NEVER;
        for vl in 0..self.vls {
            if lanes & (1 << vl) != 0 {
                next_credit = next_credit.min(self.next_credit_at(p.lane(vl as u8, self.vls)));
            }
        }
        if next_credit != NEVER {
            self.schedule_credit_wake(p, next_credit);
        }
    }

    /// A packet of `wire` bytes sent on lane `vl` of `link` was lost on the
    /// wire: its blocks come straight back to the sender, which may be
    /// starved for exactly these (the link may be up again).
    pub(in crate::backend::packet) fn credit_lost(&mut self, link: PortId, vl: u8, wire: u32) {
        let blocks = self.blk(wire);
        self.credits.refund(link.lane(vl, self.vls), blocks);
        self.try_send(link);
    }

    /// The credit wake-up of port `link` fired.
    pub(in crate::backend::packet) fn on_credit(&mut self, link: PortId) {
        if self.credits.wake[link] == self.now {
            self.credits.wake[link] = NEVER;
        }
        self.try_send(link);
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
