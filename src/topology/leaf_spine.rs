//! Two-tier leaf-spine (folded Clos) with an oversubscription ratio at the leaf.

use super::builder::{
    check_link_budget, dual_note, dual_slots, no_global_tier, no_spine_tier, one_edge, Multipath,
    Occupancy, ShapeCounts, ShapeEntry, ShapeKeys, Tier,
};
use super::{NodeId, TopologyBuilder, TopologyError, TopologySpec};

/// `topology.kind = "leaf_spine"`: `radix` (default 64) and
/// `oversubscription` (down:up, default 1); takes planes and dual ToR.
pub(crate) const ENTRY: ShapeEntry = ShapeEntry {
    kind: "leaf_spine",
    keys: &["radix", "oversubscription"],
    multipath: Multipath {
        planes: true,
        dual_tor: true,
    },
    own_link_figures: false,
    parse,
};

fn parse(k: &mut dyn ShapeKeys) -> Option<TopologySpec> {
    let radix = k.whole("radix", Some(64), 2, "ports per switch");
    let oversubscription = k.ratio(
        "oversubscription",
        1.0,
        "a positive down:up ratio such as 1.0 or 3.0",
    )?;
    Some(TopologySpec::LeafSpine {
        radix: radix?,
        oversubscription,
    })
}

/// A leaf-spine has one tier above its leaves.
pub(crate) fn tier_unused(
    tier: Tier,
    at: Occupancy,
    radix: u32,
    oversubscription: f64,
) -> Option<String> {
    match tier {
        Tier::Uplink => one_edge(at.nics, u64::from(port_split(radix, oversubscription).0)),
        Tier::Spine => Some(no_spine_tier(ENTRY.kind, false)),
        Tier::Global => Some(no_global_tier(ENTRY.kind)),
    }
}

/// Splits `radix` leaf ports into (down, up) with down:up as close to `oversub`:1 as ports allow.
pub fn port_split(radix: u32, oversub: f64) -> (u32, u32) {
    let down = ((radix as f64) * oversub / (oversub + 1.0)).round() as u32;
    let down = down.clamp(1, radix.saturating_sub(1).max(1));
    (down, radix - down)
}

/// Wires `nics` to leaves of `radix` ports (down:up = `oversub`:1); every leaf has one
/// uplink to each of the `up` spines, so a spine needs one port per leaf.
///
/// # Errors
/// Fails when the radix is below 2, the ratio is not positive, or the spines' `radix`
/// ports cannot reach every leaf the cluster needs.
pub fn build(
    b: &mut TopologyBuilder,
    nics: &[NodeId],
    radix: u32,
    oversub: f64,
) -> Result<(), TopologyError> {
    let slots: Vec<Option<NodeId>> = nics.iter().map(|&n| Some(n)).collect();
    build_slots(b, &slots, radix, oversub)
}

/// [`build`] over leaf port slots: slot `i` is host port `i mod down` of leaf
/// `i / down`, cabled to its NIC or left empty (`None`); a dual-ToR fabric
/// lays a group's first ports on one leaf and their second ports on the next.
///
/// # Errors
/// As [`build`].
pub fn build_slots(
    b: &mut TopologyBuilder,
    nics: &[Option<NodeId>],
    radix: u32,
    oversub: f64,
) -> Result<(), TopologyError> {
    if radix < 2 {
        return Err(TopologyError::new(
            "topology.radix",
            format!("a switch needs at least 2 ports, found {radix}"),
        ));
    }
    if !(oversub.is_finite() && oversub > 0.0) {
        return Err(TopologyError::new(
            "topology.oversubscription",
            format!(
                "the down:up ratio must be a positive number such as 1.0 or 3.0, found {oversub}"
            ),
        ));
    }
    let (down, up) = port_split(radix, oversub);
    let leaves = (nics.len() as u32).div_ceil(down);
    if leaves > radix {
        return Err(TopologyError::new(
            "topology.radix",
            format!(
                "{} NICs need {leaves} leaves of {down} host ports, but a {radix}-port spine reaches at most {radix} leaves (at most {} NICs); raise the radix or use a fat_tree",
                nics.len(),
                radix * down
            ),
        ));
    }
    check_link_budget(
        "topology.radix",
        nics.len() as u64 + u64::from(leaves) * u64::from(up),
    )?;
    let leaf_ids: Vec<NodeId> = (0..leaves).map(|_| b.add_switch(0)).collect();
    for (i, nic) in nics.iter().enumerate() {
        if let Some(nic) = *nic {
            b.attach_nic(nic, leaf_ids[i / down as usize]);
        }
    }
    for _ in 0..up {
        let spine = b.add_switch(1);
        for &leaf in &leaf_ids {
            b.add_uplink(leaf, spine);
        }
    }
    Ok(())
}

/// Links on the longest GPU-to-GPU path: PCIe, NIC → leaf → spine → leaf → NIC, PCIe.
pub(crate) const PATH_LINKS: f64 = 6.0;

/// Switches, leaf ↔ spine links and leaves of one plane for `nics` NIC ports,
/// before the builder checks the parameters (a radix below 2 counts as 2, a
/// ratio that is not positive as 1).
pub(crate) fn counts(radix: u32, oversubscription: f64, nics: f64) -> ShapeCounts {
    let r = f64::from(radix.max(2));
    let o = if oversubscription.is_finite() && oversubscription > 0.0 {
        oversubscription
    } else {
        1.0
    };
    let down = (r * o / (1.0 + o)).round().clamp(1.0, r - 1.0);
    let up = r - down;
    let leaves = (nics / down).ceil().max(1.0);
    ShapeCounts {
        switches: leaves + up,
        fabric_links: leaves * up,
        leaves,
    }
}

/// The key to blame when the switches cost more than the hosts: leaves grow
/// with the NICs, so the radix only when it dwarfs the cluster's `nics`.
pub(crate) fn size_key(radix: u32, nics: f64) -> &'static str {
    if f64::from(radix) > nics {
        "topology.radix"
    } else {
        "cluster.nodes"
    }
}

/// Cables one plane: [`build`], or with `dual_tor` every NIC's two ports on
/// a leaf pair.
///
/// # Errors
/// As [`build`]; on a dual-ToR fabric the message says NIC counts are ports.
pub(crate) fn cable(
    b: &mut TopologyBuilder,
    nics: &[NodeId],
    radix: u32,
    oversubscription: f64,
    dual_tor: bool,
) -> Result<(), TopologyError> {
    if dual_tor {
        let (down, _) = port_split(radix.max(2), oversubscription);
        let slots = dual_slots(nics, down as usize);
        build_slots(b, &slots, radix, oversubscription).map_err(dual_note)
    } else {
        build(b, nics, radix, oversubscription)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_split_follows_ratio() {
        // down:up = oversub:1 of the radix: 8 ports 1:1 → 4/4, 3:1 → 6/2; 64 ports 3:1 → 48/16.
        assert_eq!(port_split(8, 1.0), (4, 4));
        assert_eq!(port_split(8, 3.0), (6, 2));
        assert_eq!(port_split(64, 3.0), (48, 16));
        // At least one port each way.
        assert_eq!(port_split(2, 100.0), (1, 1));
        assert_eq!(port_split(8, 0.01), (1, 7));
    }
}
