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
//! both modes. PFC will extend [`FlowControl`] with pause frames.

use super::sim::Sim;

/// Flow control on network links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlowControl {
    /// InfiniBand link-level credits per virtual lane: lossless.
    #[default]
    Credit,
    /// Ethernet drop-tail without PFC: lossy.
    Lossy,
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
    /// latency is constant), so they wait in a FIFO of (arrival time, blocks)
    /// that the sender absorbs lazily when it next looks at its credits. Only a
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
        let starved = p.stall_since != super::switch::NEVER;
        self.credit_fifo[link as usize * self.vls + vl as usize].push_back((at, blocks));
        if starved {
            self.schedule_credit_wake(link as usize, at);
        }
    }

    /// Makes sure port `p` is woken at `at` (or earlier) to absorb credits.
    #[inline]
    pub(super) fn schedule_credit_wake(&mut self, p: usize, at: u64) {
        let w = self.credit_wake[p];
        if w == super::switch::NEVER || w > at || w < self.now {
            self.credit_wake[p] = at;
            self.q.push(
                at,
                super::engine::Event::Credit {
                    link: p as u32,
                    vl: 0,
                    blocks: 0,
                },
            );
        }
    }

    /// Moves every credit that has reached the sender of port `p` by now into its
    /// counters; returns the arrival time of the earliest credit still on its way.
    #[inline]
    pub(super) fn absorb_credits(&mut self, p: usize) -> u64 {
        let mut next = super::switch::NEVER;
        for vl in 0..self.vls {
            let qi = p * self.vls + vl;
            let fifo = &mut self.credit_fifo[qi];
            while let Some(&(t, b)) = fifo.front() {
                if t > self.now {
                    next = next.min(t);
                    break;
                }
                fifo.pop_front();
                self.credits[qi] += b as i64;
                debug_assert!(
                    self.credits[qi] <= self.credit_cap[p],
                    "credits above the receiver's buffer"
                );
            }
        }
        next
    }

    /// The credit wake-up of port `link` fired.
    pub(super) fn on_credit(&mut self, link: u32) {
        if self.credit_wake[link as usize] == self.now {
            self.credit_wake[link as usize] = super::switch::NEVER;
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
