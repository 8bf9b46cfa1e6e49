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
//! Routing (`fabric.routing`, [`super::DragonflyRouting`]; Kim et al. 2008, §4):
//!
//! - `ecmp` (and `adaptive`, `spray`, `flowlet`): shortest switch-hop paths through
//!   the topology's distance tables, which on ties may cross two or three global
//!   links (on p4 a8 h4 g33, 822 of 4,224 worst-case routes do);
//! - `minimal`: at most one global link — local to the router of the source group
//!   that has a global link to the destination group, global, local — spread over
//!   parallel global links by the ECMP hash ([`Groups::toward`]);
//! - `valiant`: minimally to an intermediate router drawn uniformly over every
//!   router of the network, then minimally to the destination: at most two global
//!   links. A draw in the source group (probability `1/g`) routes minimally, one in
//!   the destination group crosses the minimal global link and then visits the drawn
//!   router (Valiant & Brebner 1981 draw over all nodes; booksim's dragonfly does
//!   the same, [`Groups::intermediate`]). Excluding the two end groups instead
//!   bounds the worst case at `(g − 2)/(2·a·p)` (0.367 measured on a 9×4 p2
//!   dragonfly, below the issue's 0.4); over all groups the bound is `g/(2·a·p)`.
//!   A random router rather than any router of the group spreads the detour's
//!   local hops (with only a group, a 9×4 dragonfly's worst case reached 0.26 of
//!   line rate, not Kim's ≈ 0.5). Per packet at the packet level; per flow (hash of
//!   the queue pair) at the flow level; the analytical fidelity splits each
//!   transfer by the same distribution (`1/g` minimal, `1/g` per other group over
//!   up to 32 intermediate routers in all). Traffic inside one group stays minimal;
//! - `ugal` (UGAL-L) and `ugal_g` (UGAL-G, the global-information bound): choose
//!   per packet at the source router between the minimal path and a random
//!   non-minimal Valiant one (through one of the `g − 2` other groups,
//!   [`Groups::detour`]) by queue occupancy × hop count (local: the first output port of
//!   each, at the packet level as Kim's UGAL-L_VC_H and UGAL-L_CR; global: the
//!   queues of the whole path). See `backend::packet` and
//!   `backend::flow` for what each fidelity compares.
//!
//! Under lossless flow control (credits, PFC) the non-minimal routings need a lane
//! per hop stage (`vl_escalation` with 8 lanes: six switch-to-switch hops — local,
//! global, local, local, global, local — and the ACK lane); a scenario without
//! them is refused before it runs.

use super::builder::{
    check_link_budget, no_spine_tier, Multipath, Occupancy, ShapeCounts, ShapeEntry, ShapeKeys,
    Tier,
};
use super::{LinkId, NodeId, Topology, TopologyBuilder, TopologyError, TopologySpec};

/// The group structure of a built dragonfly, as its group-aware routings
/// ([`super::DragonflyRouting`]) need it: each router's group, and for every
/// router and every other group the out-links that start a minimal path into
/// that group (Kim et al. 2008, §4: a global link of this router to the group,
/// else a local link to a router of this group that has one). Rebuilt when a
/// link goes down or up, so a faulted global link drops out of the choice.
#[derive(Clone, Debug)]
pub struct Groups {
    /// Groups `g`.
    pub groups: u32,
    /// Routers per group `a`.
    pub routers_per_group: u32,
    /// The routers, `group·a + router`.
    routers: Vec<NodeId>,
    /// Per node: its router index, `u32::MAX` for nodes that are not routers.
    router_of: Vec<u32>,
    /// CSR offsets over `(router, group)`: `to_start[r·g + x]..to_start[r·g + x + 1]`.
    to_start: Vec<u32>,
    /// Out-links that start a minimal path from a router into a group.
    to_links: Vec<LinkId>,
    /// `direct[r·g + x]`: router `r` has an up global link into group `x`.
    direct: Vec<bool>,
    /// `local[r·a + j]`: the up local link from router `r` to router `j` of its
    /// group (`LinkId(u32::MAX)` when down or `j` is `r`).
    local: Vec<LinkId>,
}

impl Groups {
    /// The tables of `t`'s dragonfly with `routers` in order, `a` per group.
    pub(super) fn new(t: &Topology, routers: Vec<NodeId>, a: u32) -> Groups {
        let a = a.max(1);
        let groups = (routers.len() as u32).div_ceil(a);
        let mut router_of = vec![u32::MAX; t.nodes.len()];
        for (i, r) in routers.iter().enumerate() {
            router_of[r.0 as usize] = i as u32;
        }
        let mut s = Groups {
            groups,
            routers_per_group: a,
            routers,
            router_of,
            to_start: Vec::new(),
            to_links: Vec::new(),
            direct: Vec::new(),
            local: Vec::new(),
        };
        s.recompute(t);
        s
    }

    /// Rebuilds the per-(router, group) link lists over the links that are up.
    pub(super) fn recompute(&mut self, t: &Topology) {
        let g = self.groups as usize;
        let nr = self.routers.len();
        let a = self.routers_per_group as usize;
        self.local.clear();
        self.local.resize(nr * a, LinkId(u32::MAX));
        for (r, &node) in self.routers.iter().enumerate() {
            for &l in t.out_links(node) {
                let to = self.router_of[t.link(l).to.0 as usize];
                if t.is_link_up(l) && to != u32::MAX && to as usize / a == r / a {
                    self.local[r * a + to as usize % a] = l;
                }
            }
        }
        self.direct.clear();
        self.direct.resize(nr * g, false);
        for (r, &node) in self.routers.iter().enumerate() {
            for &l in t.out_links(node) {
                if let Some(x) = self.global_target(t, l) {
                    self.direct[r * g + x as usize] = true;
                }
            }
        }
        self.to_start.clear();
        self.to_links.clear();
        self.to_start.push(0);
        for (r, &node) in self.routers.iter().enumerate() {
            let own = r as u32 / self.routers_per_group;
            for x in 0..self.groups {
                if x != own {
                    if self.direct[r * g + x as usize] {
                        for &l in t.out_links(node) {
                            if self.global_target(t, l) == Some(x) {
                                self.to_links.push(l);
                            }
                        }
                    } else {
                        for &l in t.out_links(node) {
                            if !t.is_link_up(l) {
                                continue;
                            }
                            let to = self.router_of[t.link(l).to.0 as usize];
                            if to != u32::MAX
                                && to / self.routers_per_group == own
                                && self.direct[to as usize * g + x as usize]
                            {
                                self.to_links.push(l);
                            }
                        }
                    }
                }
                self.to_start.push(self.to_links.len() as u32);
            }
        }
    }

    /// The group a global link `l` leads into, if it is an up link between
    /// routers of two different groups.
    fn global_target(&self, t: &Topology, l: LinkId) -> Option<u32> {
        if !t.is_link_up(l) {
            return None;
        }
        let link = t.link(l);
        let (f, to) = (
            *self.router_of.get(link.from.0 as usize)?,
            *self.router_of.get(link.to.0 as usize)?,
        );
        if f == u32::MAX || to == u32::MAX {
            return None;
        }
        let (gf, gt) = (f / self.routers_per_group, to / self.routers_per_group);
        (gf != gt).then_some(gt)
    }

    /// The group of a router node; `None` for other nodes.
    #[inline]
    pub fn group_of(&self, n: NodeId) -> Option<u32> {
        match self.router_of.get(n.0 as usize) {
            Some(&r) if r != u32::MAX => Some(r / self.routers_per_group),
            _ => None,
        }
    }

    /// Whether `l` is a global link (between routers of two groups).
    pub fn is_global(&self, t: &Topology, l: LinkId) -> bool {
        let link = t.link(l);
        match (self.group_of(link.from), self.group_of(link.to)) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        }
    }

    /// The out-links of router `at` that start a minimal path into group `x`
    /// (its own global links to `x`, else local links to the routers of its
    /// group that have one). Empty when `at` is not a router, is in `x`, or no
    /// such link is up.
    #[inline]
    pub fn toward(&self, at: NodeId, x: u32) -> &[LinkId] {
        let r = match self.router_of.get(at.0 as usize) {
            Some(&r) if r != u32::MAX && x < self.groups => r as usize,
            _ => return &[],
        };
        let k = r * self.groups as usize + x as usize;
        &self.to_links[self.to_start[k] as usize..self.to_start[k + 1] as usize]
    }

    /// Router-to-router hops from router `at` into group `x` on a minimal path:
    /// 0 inside it, 1 over its own global link, 2 with a local hop first.
    #[inline]
    pub fn hops_to_group(&self, at: NodeId, x: u32) -> u32 {
        let r = match self.router_of.get(at.0 as usize) {
            Some(&r) if r != u32::MAX && x < self.groups => r as usize,
            _ => return 0,
        };
        if r as u32 / self.routers_per_group == x {
            0
        } else if self.direct[r * self.groups as usize + x as usize] {
            1
        } else {
            2
        }
    }

    /// A Valiant intermediate router drawn from `k`, uniform over all `g·a`
    /// routers of the network: router `⌊k/g⌋ mod a` of group `k mod g`, as a
    /// router index (`group·a + router`). Valiant & Brebner (1981) draw the
    /// intermediate over every node, and booksim's dragonfly (`ugal_dragonflynew`:
    /// `f->intm = RandomInt(_network_size - 1)`) does the same, so with
    /// probability `1/g` the draw falls in the source group and the route is
    /// minimal (`None` here, as booksim), and with `1/g` in the destination
    /// group, where the route crosses the one global link minimal routing
    /// would and then passes through the drawn router. Kim et al. (2008, §4)
    /// route "to a randomly-selected intermediate group": over all `g`, this
    /// loads every global link alike under the worst case, `2·a·p/g` hosts'
    /// worth (not `2·a·p/(g − 2)` when the two end groups are excluded). A
    /// random router, not only a random group, spreads the detour's local
    /// hops over the intermediate group's routers. `None` too when `src ==
    /// dst` (traffic inside a group stays minimal) and with fewer than three
    /// groups (no group to detour through: the packet level's source routing
    /// does not draw there either).
    pub fn intermediate(&self, src: u32, dst: u32, k: u64) -> Option<u32> {
        let g = u64::from(self.groups);
        if src == dst || self.groups < 3 || k % g == u64::from(src) {
            return None;
        }
        let x = (k % g) as u32;
        let r = ((k / g) % u64::from(self.routers_per_group)) as u32;
        Some(x * self.routers_per_group + r)
    }

    /// UGAL's non-minimal candidate drawn from `k`: the intermediate of
    /// [`Groups::intermediate`] given that it leaves the minimal path, i.e.
    /// router `⌊k/(g−2)⌋ mod a` of the `(k mod (g−2))`-th of the `g − 2` groups
    /// that are neither `src` nor `dst`, as a router index. UGAL weighs the
    /// minimal path against a Valiant one (Kim et al. 2008, §4.2) and already
    /// has the minimal path; a draw in an end group would take it without a
    /// comparison, and under the worst case the `2/g` of traffic that would go
    /// minimal is exactly the share that balances the direct global link
    /// against the detours (`a·p·m = 2·a·p·(1 − m)/(g − 2)` at `m = 2/g`), so
    /// every packet UGAL then sends minimal by choice would overload it
    /// (measured on g9 a4 p1: UGAL-L 0.458 of line rate with the end groups
    /// in the draw, 0.681 without). `None` when `src == dst` or there is no
    /// third group.
    pub fn detour(&self, src: u32, dst: u32, k: u64) -> Option<u32> {
        if src == dst || self.groups < 3 {
            return None;
        }
        let third = u64::from(self.groups - 2);
        let mut x = (k % third) as u32;
        let (lo, hi) = (src.min(dst), src.max(dst));
        if x >= lo {
            x += 1;
        }
        if x >= hi {
            x += 1;
        }
        let r = ((k / third) % u64::from(self.routers_per_group)) as u32;
        Some(x * self.routers_per_group + r)
    }

    /// The group of router index `r` (`group·a + router`).
    #[inline]
    pub fn group_of_router(&self, r: u32) -> u32 {
        r / self.routers_per_group
    }

    /// The out-links of router `at` that continue a Valiant detour to router
    /// index `via`: minimally into its group, then the local link to it.
    /// Empty when `at` is `via` (the detour is over), is not a router, or no
    /// link leads on (a fault); the route goes on minimally from there.
    #[inline]
    pub fn toward_router(&self, at: NodeId, via: u32) -> &[LinkId] {
        let r = match self.router_of.get(at.0 as usize) {
            Some(&r) if r != u32::MAX && (via as usize) < self.routers.len() => r,
            _ => return &[],
        };
        let a = self.routers_per_group;
        if r / a != via / a {
            return self.toward(at, via / a);
        }
        if r == via {
            return &[];
        }
        let l = &self.local[(r * a + via % a) as usize];
        if l.0 == u32::MAX {
            &[]
        } else {
            std::slice::from_ref(l)
        }
    }
}

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
/// NIC links run at `fabric.link_rate`, local links at `fabric.uplink_rate`
/// and global links at `fabric.global_rate`.
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
                b.add_uplink(routers[base + i], routers[base + j]);
            }
        }
    }
    for (x, y) in global_links(g, a, h) {
        b.add_global_link(routers[x as usize], routers[y as usize]);
    }
    b.set_dragonfly(routers, a);
    Ok(())
}

/// `topology.kind = "dragonfly"`: `groups`, `routers_per_group`,
/// `hosts_per_router`, `global_links_per_router` (all required); one plane of
/// single-homed NICs.
pub(crate) const ENTRY: ShapeEntry = ShapeEntry {
    kind: "dragonfly",
    keys: &[
        "groups",
        "routers_per_group",
        "hosts_per_router",
        "global_links_per_router",
    ],
    multipath: Multipath {
        planes: false,
        dual_tor: false,
    },
    own_link_figures: false,
    parse,
};

fn parse(k: &mut dyn ShapeKeys) -> Option<TopologySpec> {
    let g = k.whole("groups", None, 2, "the number of groups");
    let a = k.whole("routers_per_group", None, 1, "routers per group");
    let p = k.whole("hosts_per_router", None, 1, "NIC ports per router");
    let h = k.whole(
        "global_links_per_router",
        None,
        1,
        "global links per router",
    );
    Some(TopologySpec::Dragonfly {
        groups: g?,
        routers_per_group: a?,
        hosts_per_router: p?,
        global_links_per_router: h?,
    })
}

/// A dragonfly's local links (its uplink tier) carry traffic once the NICs
/// leave one router of a group of several, its global links once they leave
/// one group; it has no fat-tree spine tier.
pub(crate) fn tier_unused(
    tier: Tier,
    at: Occupancy,
    routers_per_group: u32,
    hosts_per_router: u32,
) -> Option<String> {
    match tier {
        Tier::Uplink => (routers_per_group < 2 || at.nics <= u64::from(hosts_per_router)).then(|| {
            "the NICs sit on one router, or a group has one router: no traffic crosses a local link".into()
        }),
        Tier::Spine => Some(no_spine_tier(ENTRY.kind, true)),
        Tier::Global => (at.nics <= u64::from(routers_per_group) * u64::from(hosts_per_router))
            .then(|| "the NICs fill one group: no traffic crosses a global link".into()),
    }
}

/// Links on the longest minimal GPU-to-GPU path: PCIe, NIC → router, local,
/// global, local, router → NIC, PCIe.
pub(crate) const PATH_LINKS: f64 = 7.0;

/// Routers (every one a leaf) and router-to-router links: `a − 1` local
/// links and `global_links_per_router` global links per router, each shared
/// by two routers.
pub(crate) fn counts(
    groups: u32,
    routers_per_group: u32,
    global_links_per_router: u32,
) -> ShapeCounts {
    let (g, a, gl) = (
        f64::from(groups),
        f64::from(routers_per_group),
        f64::from(global_links_per_router),
    );
    let routers = g * a;
    ShapeCounts {
        switches: routers,
        fabric_links: routers * (a - 1.0).max(0.0) / 2.0 + routers * gl / 2.0,
        leaves: routers,
    }
}

/// The key to blame when the routers cost more than the hosts.
pub(crate) fn size_key() -> &'static str {
    "topology.groups"
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
