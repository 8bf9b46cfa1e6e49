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
    #[inline]
    pub(super) fn return_credit(&mut self, link: u32, vl: u8, blocks: u32) {
        let p = &self.ports[link as usize];
        if p.credit_fc {
            let at = self.now + p.latency;
            self.q
                .push(at, super::engine::Event::Credit { link, vl, blocks });
        }
    }

    /// Credits arrive at the sender of `link`.
    pub(super) fn on_credit(&mut self, link: u32, vl: u8, blocks: u32) {
        let qi = link as usize * self.vls + vl as usize;
        self.credits[qi] += blocks as i64;
        debug_assert!(
            self.credits[qi] <= self.credit_cap[link as usize],
            "credits above the receiver's buffer"
        );
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
