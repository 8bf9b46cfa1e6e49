//! **Lossy** (Ethernet without PFC): a packet that arrives over a lossy link is
//! admitted to its egress queue only if the queue (per port and lane) stays
//! within [`PacketConfig::port_buffer_bytes`](crate::backend::packet::PacketConfig::port_buffer_bytes),
//! or, with a shared buffer, within α × the node's free shared bytes; otherwise
//! it is dropped (drop-tail), or with trimming cut to its header. PCIe and
//! NVLink links stay credit-controlled in both modes.

use crate::backend::packet::ids::{LaneIdx, PktIdx, PortId};
use crate::backend::packet::sim::Sim;
use crate::backend::packet::slab::{PktKind, F_LOSSY_HELD, F_TRIMMED, F_VL_RAISED};
use crate::backend::packet::stats::DropCause;

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

    /// Drop-tail admission of packet `pkt` of `wire` bytes, arrived at
    /// `node`, to lane `vl` of egress `out`: the lane it joins and its wire
    /// bytes (the highest lane and its header if trimmed), now held in the
    /// node's shared count; or `None`, dropped ([`DropCause::Buffer`],
    /// counted at the egress).
    #[inline]
    pub(in crate::backend::packet) fn lossy_admit(
        &mut self,
        node: u32,
        out: PortId,
        pkt: PktIdx,
        mut vl: u8,
        mut wire: u32,
    ) -> Option<(u8, u32)> {
        let qi = out.lane(vl, self.vls);
        if !self.admit_lossy(out, qi, wire as u64) {
            match self.trim(out, pkt) {
                Some(high) => {
                    vl = high;
                    wire = self.cfg.header_bytes;
                }
                None => {
                    self.ports[out].drops += 1;
                    self.drop_packet(pkt, DropCause::Buffer);
                    return None;
                }
            }
        }
        self.pkts[pkt].flags |= F_LOSSY_HELD;
        self.shared.hold(node, wire as u64);
        Some((vl, wire))
    }

    /// Packet trimming (NDP, Handley et al., SIGCOMM 2017; Ultra Ethernet):
    /// data packet `pkt`, which the lossy queue of `out` cannot take, loses
    /// its payload and goes on as its header on the highest lane, ahead of
    /// data, if that lane can take the header. Returns that lane, or `None`
    /// (not trimming, not a full data packet, or no room even for the
    /// header): the caller drops it.
    fn trim(&mut self, out: PortId, pkt: PktIdx) -> Option<u8> {
        let k = self.pkts[pkt];
        if !self.cfg.trimming || k.kind != PktKind::Data || k.flags & F_TRIMMED != 0 {
            return None;
        }
        let high = (self.vls - 1) as u8;
        let header = self.cfg.header_bytes;
        if !self.admit_lossy(out, out.lane(high, self.vls), header as u64) {
            return None;
        }
        self.counters.trimmed((k.wire - header) as u64);
        let kp = &mut self.pkts[pkt];
        kp.wire = header;
        kp.vl = high;
        kp.flags = (kp.flags | F_TRIMMED) & !F_VL_RAISED;
        Some(high)
    }
}
