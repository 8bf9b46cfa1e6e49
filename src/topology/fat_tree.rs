//! Three-tier k-ary fat-tree (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity
//! Data Center Network Architecture", SIGCOMM 2008).
//!
//! Every switch has `k` ports (`k` even). There are `k` pods; pod `p` holds `k/2`
//! edge switches (tier 0) and `k/2` aggregation switches (tier 1), wired as a
//! complete bipartite graph inside the pod. The `(k/2)²` core switches (tier 2) are
//! split into `k/2` groups of `k/2`: aggregation switch `j` of *every* pod is cabled
//! to each core of group `j`, i.e. cores `j·k/2 .. (j+1)·k/2 − 1`. Each edge switch
//! keeps its other `k/2` ports for NICs, so the tree holds up to `k³/4` NICs; they
//! are cabled edge by edge in order (edge 0 of pod 0 first, then edge 1 of pod 0, …),
//! and the full tree is built even when fewer NICs are attached.
//!
//! ```text
//!  k = 4
//!  tier 2 core     C0      C1      C2      C3     (k/2)² = 4 cores
//!                    ╲    ╱          ╲    ╱
//!  tier 1 agg          A0              A1         agg j ↔ cores j·k/2 .. (j+1)·k/2 − 1
//!                      │  ╲          ╱  │           (the same cores for every pod)
//!                      │     ╲    ╱     │
//!                      │     ╱    ╲     │         edge ↔ every agg of its pod
//!  tier 0 edge         E0              E1
//!                     ╱  ╲            ╱  ╲
//!  NICs             n0    n1        n2    n3      k/2 NICs per edge
//!                  └────────── pod 0 ──────────┘  pods 1..3 alike
//! ```
//!
//! Counts: `5k²/4` switches, `k³/4` NIC ports, `k³/4` edge–agg and `k³/4` agg–core
//! duplex links; the bisection is `k³/8` links (full bisection bandwidth).

use super::builder::{
    check_link_budget, dual_note, dual_slots, no_global_tier, one_edge, Multipath, Occupancy,
    ShapeCounts, ShapeEntry, ShapeKeys, Tier,
};
use super::{NodeId, TopologyBuilder, TopologyError, TopologySpec};

/// The smallest even `k ≥ 2` whose fat-tree holds `nics` NICs (`k³/4 ≥ nics`).
pub fn smallest_k_for(nics: u64) -> u64 {
    let mut k = 2u64;
    while k * k * k / 4 < nics {
        k += 2;
    }
    k
}

/// Number of NIC ports (= hosts of one NIC each) of a k-ary fat-tree: `k³/4`.
/// Saturates at `u64::MAX` (only for absurd `k`).
pub fn max_nics(k: u32) -> u64 {
    let k = k as u128;
    u64::try_from(k * k * k / 4).unwrap_or(u64::MAX)
}

/// Wires a full k-ary fat-tree of `k`-port switches (see the module doc) and cables
/// `nics` to the edge switches, `k/2` per edge, in order. NIC links run at
/// `fabric.link_rate`, edge ↔ aggregation links at `fabric.uplink_rate` and
/// aggregation ↔ core links at `fabric.spine_rate`.
///
/// # Errors
/// Fails on field `topology.k` when `k` is odd or below 2, when the `k³/4` NIC ports
/// cannot hold every NIC (the message names the smallest `k` that would), or when the
/// tree would be too large to simulate.
pub fn build(b: &mut TopologyBuilder, nics: &[NodeId], k: u32) -> Result<(), TopologyError> {
    let slots: Vec<Option<NodeId>> = nics.iter().map(|&n| Some(n)).collect();
    build_slots(b, &slots, k)
}

/// [`build`] over edge port slots: slot `i` is host port `i mod k/2` of edge
/// `i / (k/2)` (edges pod by pod), cabled to its NIC or left empty (`None`);
/// a dual-ToR fabric lays a group's first ports on one edge and their second
/// ports on the next.
///
/// # Errors
/// As [`build`].
pub fn build_slots(
    b: &mut TopologyBuilder,
    nics: &[Option<NodeId>],
    k: u32,
) -> Result<(), TopologyError> {
    if k < 2 || k % 2 != 0 {
        return Err(TopologyError::new(
            "topology.k",
            format!("a fat-tree needs an even switch radix k of at least 2, found {k}"),
        ));
    }
    let n = nics.len() as u64;
    if n > max_nics(k) {
        return Err(TopologyError::new(
            "topology.k",
            format!(
                "{n} NICs do not fit a {k}-ary fat-tree, which has {} NIC ports; k = {} would fit",
                max_nics(k),
                smallest_k_for(n)
            ),
        ));
    }
    // NIC links plus k³/4 edge–agg and k³/4 agg–core links.
    check_link_budget(
        "topology.k",
        n.saturating_add(max_nics(k).saturating_mul(2)),
    )?;

    let k = k as usize;
    let half = k / 2;
    // Edges of every pod, then aggregations of every pod, then cores.
    let edges: Vec<NodeId> = (0..k * half).map(|_| b.add_switch(0)).collect();
    let aggs: Vec<NodeId> = (0..k * half).map(|_| b.add_switch(1)).collect();
    let cores: Vec<NodeId> = (0..half * half).map(|_| b.add_switch(2)).collect();

    for (i, nic) in nics.iter().enumerate() {
        if let Some(nic) = *nic {
            b.attach_nic(nic, edges[i / half]);
        }
    }
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                b.add_uplink(edges[pod * half + e], aggs[pod * half + a]);
            }
        }
    }
    for pod in 0..k {
        for j in 0..half {
            for c in 0..half {
                b.add_spine_link(aggs[pod * half + j], cores[j * half + c]);
            }
        }
    }
    Ok(())
}

/// `topology.kind = "fat_tree"`: the arity `k` (required); takes planes and
/// dual ToR.
pub(crate) const ENTRY: ShapeEntry = ShapeEntry {
    kind: "fat_tree",
    keys: &["k"],
    multipath: Multipath {
        planes: true,
        dual_tor: true,
    },
    own_link_figures: false,
    parse,
};

fn parse(keys: &mut dyn ShapeKeys) -> Option<TopologySpec> {
    let k = keys.whole("k", None, 2, "the fat-tree arity k (even)")?;
    Some(TopologySpec::FatTree { k })
}

/// A fat-tree's uplinks (edge ↔ aggregation) carry traffic once the NICs
/// leave one edge switch, its spine tier (aggregation ↔ core) once they leave
/// one pod; it has no global tier.
pub(crate) fn tier_unused(tier: Tier, at: Occupancy, k: u32) -> Option<String> {
    match tier {
        Tier::Uplink => one_edge(at.nics, u64::from(k / 2)),
        Tier::Spine => {
            // dual ToR: a NIC takes an edge pair, whole pairs in pod 0
            let pod = if at.dual_tor {
                u64::from(k / 4) * u64::from(k / 2)
            } else {
                u64::from(k / 2) * u64::from(k / 2)
            };
            let nics = at.nics;
            (nics <= pod).then(|| {
                format!("the {nics} NICs fill one pod of the {k}-ary fat-tree ({pod} NIC ports): no traffic reaches a core switch")
            })
        }
        Tier::Global => Some(no_global_tier(ENTRY.kind)),
    }
}

/// Links on the longest GPU-to-GPU path: PCIe, NIC → edge → aggregation →
/// core → aggregation → edge → NIC, PCIe.
pub(crate) const PATH_LINKS: f64 = 8.0;

/// Switches (`5k²/4`), switch-to-switch links (`k³/2`) and edge switches
/// (`k²/2`) of one plane: the whole tree is built whatever the NIC count (a
/// `k` below 2 counts as 2).
pub(crate) fn counts(k: u32) -> ShapeCounts {
    let k = f64::from(k.max(2));
    ShapeCounts {
        switches: 1.25 * k * k,
        fabric_links: k * k * k / 2.0,
        leaves: k * k / 2.0,
    }
}

/// The key to blame when the switches cost more than the hosts.
pub(crate) fn size_key() -> &'static str {
    "topology.k"
}

/// Cables one plane: [`build`], or with `dual_tor` every NIC's two ports on
/// an edge pair.
///
/// # Errors
/// As [`build`]; on a dual-ToR fabric the message says NIC counts are ports.
pub(crate) fn cable(
    b: &mut TopologyBuilder,
    nics: &[NodeId],
    k: u32,
    dual_tor: bool,
) -> Result<(), TopologyError> {
    if dual_tor {
        let slots = dual_slots(nics, (k / 2) as usize);
        build_slots(b, &slots, k).map_err(dual_note)
    } else {
        build(b, nics, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_k_matches_capacity() {
        // k³/4: k=2 → 2, k=4 → 16, k=6 → 54, k=8 → 128 (Al-Fares et al., SIGCOMM 2008).
        assert_eq!(max_nics(4), 16);
        assert_eq!(max_nics(48), 27_648);
        assert_eq!(smallest_k_for(1), 2);
        assert_eq!(smallest_k_for(16), 4);
        assert_eq!(smallest_k_for(17), 6);
        assert_eq!(smallest_k_for(128), 8);
    }
}
