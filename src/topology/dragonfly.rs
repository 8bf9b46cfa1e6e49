//! Dragonfly (Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly
//! Topology", ISCA 2008).
//!
//! `g` groups of `a` routers (all tier 0: every router is an edge switch). Each
//! router has `p` NIC ports and `h` global ports; the routers of a group are fully
//! connected by local links (`a·(a−1)/2` per group). NICs fill the routers in order:
//! NIC `i` is on router `⌊i/p⌋`, router `r` is router `r mod a` of group `⌊r/a⌋`.
//!
//! Global links are laid out deterministically, in rounds over the group pairs
//! `(0,1), (0,2), …, (0,g−1), (1,2), …, (g−2,g−1)`: in every round each pair whose two
//! groups both still have a free global port gets one link, between the next free
//! port of each group. A group's `s`-th global port is port `⌊s/a⌋` of router
//! `s mod a`, so consecutive links leave from different routers. Rounds repeat until
//! no pair can be linked. The first round links every pair of groups once when
//! `g ≤ a·h + 1`; with `g = a·h + 1` (the balanced, "one link per group pair"
//! dragonfly) it uses every port, giving `g·a·h/2` global links, and with fewer
//! groups the later rounds add parallel links between group pairs. A port whose
//! group has no partner with a free port left stays unused.
//!
//! ```text
//!  g = 3 groups, a = 2 routers per group, h = 1 global port, p NICs per router
//!
//!        group 0               group 1               group 2
//!     R0 ─────── R1         R2 ─────── R3         R4 ─────── R5    local: all-to-all
//!     │          │          │          │          │          │
//!     │          └──────────┼──────────┼──────────┘          │     R1 ─ R4 (groups 0–2)
//!     └─────────────────────┘          └─────────────────────┘     R0 ─ R2 (groups 0–1)
//!                                                                  R3 ─ R5 (groups 1–2)
//! ```
//!
//! Routing is minimal (shortest path, ECMP over ties) through the topology's distance
//! tables: local–global–local at most between groups with a direct link. Valiant or
//! UGAL non-minimal routing is not modeled.

use super::builder::check_link_budget;
use super::{NodeId, TopologyBuilder, TopologyError};

/// The global links of a dragonfly as pairs of router indices (`group·a + router`),
/// in the order described in the module doc. Computed without building a graph.
pub fn global_links(g: u32, a: u32, h: u32) -> Vec<(u32, u32)> {
    let cap = u64::from(a) * u64::from(h);
    let mut used = vec![0u64; g as usize];
    let mut out = Vec::new();
    let router = |grp: u32, slot: u64| grp * a + (slot % u64::from(a)) as u32;
    loop {
        let mut progress = false;
        for i in 0..g {
            for j in i + 1..g {
                let (ui, uj) = (used[i as usize], used[j as usize]);
                if ui < cap && uj < cap {
                    out.push((router(i, ui), router(j, uj)));
                    used[i as usize] += 1;
                    used[j as usize] += 1;
                    progress = true;
                }
            }
        }
        if !progress {
            return out;
        }
    }
}

/// Wires a dragonfly of `g` groups × `a` routers, `p` NIC ports and `h` global ports
/// per router (see the module doc), and cables `nics` to the routers in order.
/// Network links (local, global and NIC) run at the fabric's rate.
///
/// # Errors
/// Fails on the field of any parameter that is zero; on `topology.groups` when
/// `g > a·h + 1` (some pair of groups could not be linked); on
/// `topology.hosts_per_router` when the `g·a·p` NIC ports cannot hold every NIC (the
/// message says what fits); on `topology.routers_per_group` when the fabric would be
/// too large to simulate.
pub fn build(
    b: &mut TopologyBuilder,
    nics: &[NodeId],
    g: u32,
    a: u32,
    p: u32,
    h: u32,
) -> Result<(), TopologyError> {
    for (field, what, v) in [
        ("topology.groups", "groups", g),
        ("topology.routers_per_group", "routers per group", a),
        ("topology.hosts_per_router", "NIC ports per router", p),
        (
            "topology.global_links_per_router",
            "global ports per router",
            h,
        ),
    ] {
        if v == 0 {
            return Err(TopologyError::new(
                field,
                format!("a dragonfly needs at least one {what}, found 0"),
            ));
        }
    }
    let (g64, a64, p64, h64) = (u64::from(g), u64::from(a), u64::from(p), u64::from(h));
    if g64 > a64 * h64 + 1 {
        return Err(TopologyError::new(
            "topology.groups",
            format!(
                "{a} routers with {h} global ports each reach at most {} other groups, so at most {} groups can all be linked pairwise; found {g}",
                a64 * h64,
                a64 * h64 + 1
            ),
        ));
    }
    let n = nics.len() as u64;
    let ports = g64.saturating_mul(a64).saturating_mul(p64);
    if n > ports {
        return Err(TopologyError::new(
            "topology.hosts_per_router",
            format!(
                "{n} NICs do not fit the {g}×{a} routers with {p} NIC ports each ({ports} ports); hosts_per_router = {} would fit, or at most {ports} NICs",
                n.div_ceil(g64 * a64)
            ),
        ));
    }
    let local = g64.saturating_mul(a64).saturating_mul(a64 - 1) / 2;
    let global = g64.saturating_mul(a64).saturating_mul(h64) / 2;
    check_link_budget(
        "topology.routers_per_group",
        n.saturating_add(local).saturating_add(global),
    )?;

    let routers: Vec<NodeId> = (0..g * a).map(|_| b.add_switch(0)).collect();
    for (i, &nic) in nics.iter().enumerate() {
        b.attach_nic(nic, routers[i / p as usize]);
    }
    for grp in 0..g {
        let base = (grp * a) as usize;
        for i in 0..a as usize {
            for j in i + 1..a as usize {
                b.add_network_link(routers[base + i], routers[base + j]);
            }
        }
    }
    for (x, y) in global_links(g, a, h) {
        b.add_network_link(routers[x as usize], routers[y as usize]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_dragonfly_links_each_pair_once() {
        // g = a·h + 1: g·a·h/2 global links, one per group pair (Kim et al., ISCA 2008).
        let (g, a, h) = (9, 4, 2);
        let links = global_links(g, a, h);
        assert_eq!(links.len() as u32, g * a * h / 2);
        let mut pairs: Vec<(u32, u32)> = links.iter().map(|&(x, y)| (x / a, y / a)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len() as u32, g * (g - 1) / 2);
        // Every router uses exactly h global ports.
        let mut deg = vec![0; (g * a) as usize];
        for &(x, y) in &links {
            deg[x as usize] += 1;
            deg[y as usize] += 1;
        }
        assert!(deg.iter().all(|&d| d == h));
    }

    #[test]
    fn module_doc_example_matches() {
        // The picture in the module doc: g = 3, a = 2, h = 1.
        assert_eq!(global_links(3, 2, 1), vec![(0, 2), (1, 4), (3, 5)]);
    }

    #[test]
    fn fewer_groups_get_parallel_links() {
        // g = 2, a = 2, h = 2: all 4 ports of each group go to the other group.
        assert_eq!(global_links(2, 2, 2).len(), 4);
        assert!(global_links(1, 3, 2).is_empty());
    }
}
