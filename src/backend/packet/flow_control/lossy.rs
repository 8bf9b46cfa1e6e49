//! **Lossy** (Ethernet without PFC): a packet that arrives over a lossy link is
//! admitted to its egress queue only if the queue (per port and lane) stays
//! within [`PacketConfig::port_buffer_bytes`](crate::backend::packet::PacketConfig::port_buffer_bytes),
//! or, with a shared buffer, within α × the node's free shared bytes; otherwise
//! it is dropped (drop-tail). PCIe and NVLink links stay credit-controlled in
//! both modes.
//!

use crate::backend::packet::ids::{LaneIdx, PortId};
use crate::backend::packet::sim::Sim;

/// Shared-buffer occupancy of every forwarding node (lossy Ethernet with
/// `shared_buffer_bytes` set), bytes.
pub struct SharedBuffers {
    /// Per node: shared-buffer bytes in use.
    used: Vec<u64>,
}

impl SharedBuffers {
    /// Empty buffers for `nodes` nodes.
    pub fn new(nodes: usize) -> SharedBuffers {
        SharedBuffers {
            used: vec![0; nodes],
        }
    }
    /// Node `node` admitted `wire` bytes.
    #[inline]
    pub fn hold(&mut self, node: u32, wire: u64) {
        self.used[node as usize] += wire;
    }
    /// `wire` bytes left node `node`'s buffer.
    #[inline]
    pub fn release(&mut self, node: u32, wire: u64) {
        self.used[node as usize] -= wire;
    }
}

impl Sim<'_> {
    /// Whether a packet of `wire` bytes that arrived over a lossy link may join
    /// queue `qi` (port × lanes + lane) of port `port`.
    #[inline]
    pub(in crate::backend::packet) fn admit_lossy(
        &self,
        port: PortId,
        qi: LaneIdx,
        wire: u64,
    ) -> bool {
        let q = self.ports.queued_bytes(qi);
        if self.cfg.shared_buffer_bytes == 0 {
            return q + wire <= self.cfg.port_buffer_bytes;
        }
        let node = self.ports[port].from as usize;
        let free = self.cfg.shared_buffer_bytes - self.shared.used[node];
        wire <= free && (q + wire) as f64 <= self.cfg.shared_buffer_alpha * free as f64
    }
}
