//! One switch with every NIC on it: a non-blocking crossbar, the reference
//! fabric closed forms assume.

use super::builder::{Multipath, ShapeCounts};
use super::{NodeId, TopologyBuilder};

/// Planes and dual ToR: a single switch has one plane of single-homed NICs.
pub(crate) const MULTIPATH: Multipath = Multipath {
    planes: false,
    dual_tor: false,
};

/// Links on the longest GPU-to-GPU path: PCIe, NIC → switch, switch → NIC, PCIe.
pub(crate) const PATH_LINKS: f64 = 4.0;

/// One switch, no switch-to-switch links, one leaf.
pub(crate) fn counts() -> ShapeCounts {
    ShapeCounts {
        switches: 1.0,
        fabric_links: 0.0,
        leaves: 1.0,
    }
}

/// The key to blame when the switch costs more than the hosts (it never
/// does; the nodes make the cluster).
pub(crate) fn size_key() -> &'static str {
    "cluster.nodes"
}

/// Cables every NIC to one tier-0 switch at `fabric.link_rate`.
pub(crate) fn build(b: &mut TopologyBuilder, nics: &[NodeId]) {
    let sw = b.add_switch(0);
    for &n in nics {
        b.attach_nic(n, sw);
    }
}
