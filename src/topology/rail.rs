//! Rail-optimized two-tier fabric, as in NVIDIA DGX SuperPOD reference designs.
//!
//! Rail `r` is NIC `r` of every host (the NIC nearest GPU `r`). Each rail has its own
//! leaf switches (tier 0): a leaf has `radix/2` host ports and `radix/2` uplinks, and
//! rail `r`'s NICs fill rail `r`'s leaves in host order, so a rail needs
//! `⌈hosts / (radix/2)⌉` leaves and hosts `h` and `h'` share a rail leaf when
//! `⌊h/(radix/2)⌋ = ⌊h'/(radix/2)⌋`. Same-rail traffic between such hosts turns at
//! the leaf; everything else goes up to a spine. There are `radix/2` spines (tier 1)
//! and every spine has exactly one link to every leaf of every rail, which uses all
//! leaf uplinks and needs `rails · leaves_per_rail` ports per spine.
//!
//! ```text
//!  radix = 4 (2 host ports + 2 uplinks per leaf), 4 hosts, 2 NICs (rails) per host
//!
//!  tier 1 spines           S0                        S1          radix/2 spines, each
//!                ┌──────┬──┴───┬──────┐  ┌──────┬──┴───┬──────┐  linked once to every leaf
//!  tier 0 leaves R0L0  R0L1   R1L0   R1L1 (S1 reaches the same four leaves)
//!                │  │   │  │   │  │   │  │
//!  NIC (rail)    0  0   0  0   1  1   1  1   NIC r of host h → leaf ⌊h/(radix/2)⌋ of rail r
//!  host          h0 h1  h2 h3  h0 h1  h2 h3
//! ```
//!
//! With an even number of leaves per rail and full leaves the fabric is non-blocking:
//! its bisection is `N·B/2` for `N` NICs of rate `B`.

use super::builder::{
    check_link_budget, no_global_tier, no_spine_tier, one_edge, Multipath, Occupancy, ShapeCounts,
    ShapeEntry, ShapeKeys, Tier,
};
use super::{NodeId, TopologyBuilder, TopologyError, TopologySpec};

/// Leaves each rail needs: `⌈hosts / (radix/2)⌉` (`radix` even and at least 2).
pub fn leaves_per_rail(hosts: u64, radix: u32) -> u64 {
    hosts.div_ceil(u64::from(radix / 2).max(1))
}

/// Wires a rail-optimized fabric: `rails` rails (NICs per host) of leaves with
/// `radix` ports (half to hosts, half up), and `radix/2` spines of `spine_radix`
/// ports each linked once to every leaf. `nics` is host-major
/// (`nics[h * rails + r]`). NIC links run at `fabric.link_rate`, leaf ↔ spine links at
/// `fabric.uplink_rate`.
///
/// # Errors
/// Fails on `topology.radix` when the leaf radix is odd or below 2 (or the fabric
/// would be too large to simulate), on `topology.spine_radix` when a spine cannot
/// reach every leaf (the message gives the ports needed), and on `cluster.nodes`
/// when `nics` is not `rails` NICs per host.
pub fn build(
    b: &mut TopologyBuilder,
    nics: &[NodeId],
    rails: u32,
    radix: u32,
    spine_radix: u32,
) -> Result<(), TopologyError> {
    if radix < 2 || radix % 2 != 0 {
        return Err(TopologyError::new(
            "topology.radix",
            format!(
                "a rail leaf splits its ports evenly between hosts and spines, so the radix must be even and at least 2, found {radix}"
            ),
        ));
    }
    if rails == 0 || nics.len() % rails as usize != 0 {
        return Err(TopologyError::new(
            "cluster.nodes",
            format!(
                "a rail-optimized fabric needs the same number of NICs (rails) on every node, at least one; found {} NICs for {rails} rails",
                nics.len()
            ),
        ));
    }
    let half = radix / 2;
    let hosts = (nics.len() / rails as usize) as u64;
    let lpr = leaves_per_rail(hosts, radix);
    let n_leaves = u64::from(rails) * lpr;
    if n_leaves > u64::from(spine_radix) {
        return Err(TopologyError::new(
            "topology.spine_radix",
            format!(
                "every spine links once to every leaf: {rails} rails × {lpr} leaves per rail need {n_leaves} spine ports, but spine_radix is {spine_radix}"
            ),
        ));
    }
    check_link_budget(
        "topology.radix",
        (nics.len() as u64).saturating_add(n_leaves.saturating_mul(u64::from(half))),
    )?;

    // Leaves rail-major: leaf `l` of rail `r` is `leaves[r * lpr + l]`.
    let lpr = lpr as usize;
    let leaves: Vec<NodeId> = (0..n_leaves).map(|_| b.add_switch(0)).collect();
    for (i, &nic) in nics.iter().enumerate() {
        let (host, rail) = (i / rails as usize, i % rails as usize);
        b.attach_nic(nic, leaves[rail * lpr + host / half as usize]);
    }
    for _ in 0..half {
        let spine = b.add_switch(1);
        for &leaf in &leaves {
            b.add_uplink(leaf, spine);
        }
    }
    Ok(())
}

/// `topology.kind = "rail_optimized"`: leaf `radix` (default 64) and
/// `spine_radix` (default the leaf radix); takes planes, while its NICs are
/// single-homed (a rail is already one leaf per NIC).
pub(crate) const ENTRY: ShapeEntry = ShapeEntry {
    kind: "rail_optimized",
    keys: &["radix", "spine_radix"],
    multipath: Multipath {
        planes: true,
        dual_tor: false,
    },
    own_link_figures: false,
    parse,
};

fn parse(k: &mut dyn ShapeKeys) -> Option<TopologySpec> {
    let radix = k.whole("radix", Some(64), 2, "ports per leaf switch");
    let spine_radix = k.whole(
        "spine_radix",
        radix.map(i64::from),
        2,
        "ports per spine switch",
    );
    Some(TopologySpec::RailOptimized {
        radix: radix?,
        spine_radix: spine_radix?,
    })
}

/// A rail fabric has one tier above its leaves; with one NIC per host every
/// NIC is on rail 0, whose leaves fill in order.
pub(crate) fn tier_unused(tier: Tier, at: Occupancy, radix: u32) -> Option<String> {
    match tier {
        // with several NICs per host the rails' leaves are distinct switches
        Tier::Uplink if at.nics_per_host < 2 => one_edge(at.nics, u64::from(radix / 2)),
        Tier::Uplink => None,
        Tier::Spine => Some(no_spine_tier(ENTRY.kind, false)),
        Tier::Global => Some(no_global_tier(ENTRY.kind)),
    }
}

/// Links on the longest GPU-to-GPU path: PCIe, NIC → leaf → spine → leaf → NIC, PCIe.
pub(crate) const PATH_LINKS: f64 = 6.0;

/// Switches, leaf ↔ spine links and leaves of one plane for `hosts` hosts
/// of `rails` NICs (a radix below 2 counts as 2, no rails as one).
pub(crate) fn counts(radix: u32, hosts: f64, rails: u32) -> ShapeCounts {
    let half = f64::from((radix / 2).max(1));
    let rails = f64::from(rails.max(1));
    let leaves = rails * (hosts / half).ceil().max(1.0);
    ShapeCounts {
        switches: leaves + half,
        fabric_links: leaves * half,
        leaves,
    }
}

/// The key to blame when the switches cost more than the hosts: leaves grow
/// with the hosts, so the radix only when it dwarfs the cluster's `nics`.
pub(crate) fn size_key(radix: u32, nics: f64) -> &'static str {
    if f64::from(radix) > nics {
        "topology.radix"
    } else {
        "cluster.nodes"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_per_rail_rounds_up() {
        // ⌈hosts / (radix/2)⌉: a 64-port leaf has 32 host ports (DGX SuperPOD SU: 32 nodes per rail leaf).
        assert_eq!(leaves_per_rail(32, 64), 1);
        assert_eq!(leaves_per_rail(33, 64), 2);
        assert_eq!(leaves_per_rail(8, 8), 2);
        assert_eq!(leaves_per_rail(1, 2), 1);
    }
}
