//! One switch with every NIC on it: a non-blocking crossbar, the reference
//! fabric closed forms assume.

use super::builder::{
    no_global_tier, no_spine_tier, Multipath, ShapeCounts, ShapeEntry, ShapeKeys, Tier,
};
use super::{NodeId, TopologyBuilder, TopologySpec};

/// `topology.kind = "single_switch"`: no other keys; one plane of
/// single-homed NICs.
pub(crate) const ENTRY: ShapeEntry = ShapeEntry {
    kind: "single_switch",
    keys: &[],
    multipath: Multipath {
        planes: false,
        dual_tor: false,
    },
    own_link_figures: false,
    parse,
};

fn parse(_: &mut dyn ShapeKeys) -> Option<TopologySpec> {
    Some(TopologySpec::SingleSwitch)
}

/// A single switch has no tier above its ports.
pub(crate) fn tier_unused(tier: Tier) -> Option<String> {
    Some(match tier {
        Tier::Uplink => "a single switch has no links above the edge".into(),
        Tier::Spine => no_spine_tier(ENTRY.kind, false),
        Tier::Global => no_global_tier(ENTRY.kind),
    })
}

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
