//! Shared construction of a [`Topology`]: hosts (GPUs, NVSwitch, NICs), switches,
//! duplex links, and the final routing tables.

use super::{
    dragonfly, fat_tree, file, leaf_spine, rail, single_switch, GpuId, GpuPorts, Link, LinkId,
    LinkKind, NicPorts, Node, NodeId, NodeKind, Topology,
};
use crate::units::{Rate, SimTime};

/// What is inside each host, as the topology needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSpec {
    /// Number of hosts (nodes).
    pub hosts: u32,
    /// GPUs per host.
    pub gpus_per_host: u32,
    /// NICs per host; GPU `l` uses NIC `l * nics / gpus`.
    pub nics_per_host: u32,
    /// NVLink bandwidth per GPU per direction, bits/s.
    pub nvlink_rate: Rate,
    /// GPU → NVSwitch → GPU one-way latency is twice this, picoseconds.
    pub nvlink_latency: SimTime,
    /// PCIe bandwidth between a GPU and its NIC per direction, bits/s.
    pub pcie_rate: Rate,
    /// PCIe one-way latency, picoseconds.
    pub pcie_latency: SimTime,
}

/// The network links and switches' common figures.
///
/// Rates are per tier (`fabric.link_rate`, `uplink_rate`, `spine_rate`,
/// `global_rate`): a tier left `None` runs at `link_rate`, so a fabric that sets
/// only `link_rate` has one rate everywhere, as before tiers existed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FabricLinkSpec {
    /// Rate of the host links (NIC ↔ edge switch), bits/s; the rate of every
    /// other tier left unset.
    pub link_rate: Rate,
    /// Propagation latency of every network link, picoseconds.
    pub link_latency: SimTime,
    /// Forwarding latency of every switch, picoseconds.
    pub switch_latency: SimTime,
    /// Rate of the links from the edge tier up (leaf ↔ spine, edge ↔
    /// aggregation, rail leaf ↔ spine) and of a dragonfly's local links
    /// (router ↔ router inside a group), bits/s; `None`: `link_rate`.
    pub uplink_rate: Option<Rate>,
    /// Rate of a 3-tier fat-tree's aggregation ↔ core links, bits/s;
    /// `None`: [`FabricLinkSpec::uplink`].
    pub spine_rate: Option<Rate>,
    /// Rate of a dragonfly's global (inter-group) links, bits/s; `None`:
    /// [`FabricLinkSpec::uplink`].
    pub global_rate: Option<Rate>,
    /// Per-host NIC rates (`[[fabric.nic_overrides]]`), applied in order (a
    /// later entry naming the same host wins).
    pub nic_overrides: Vec<NicOverride>,
    /// `topology.planes`: identical, disjoint copies of the switch fabric
    /// (leaf_spine, fat_tree, rail_optimized); every NIC has one port in each,
    /// at `link_rate`. 0 and 1 both mean one plane.
    pub planes: u32,
    /// `topology.dual_tor` (leaf_spine, fat_tree): every NIC port is cabled to
    /// two edge switches (a ToR pair) with one link of `link_rate` each, as
    /// Alibaba HPN's 2×200 Gb/s ports of a 400 Gb/s NIC (Qian et al., SIGCOMM
    /// 2024).
    pub dual_tor: bool,
}

/// One `[[fabric.nic_overrides]]` entry: every NIC of the listed hosts runs at
/// `rate` (both directions of its link to the edge switch), e.g. a slow
/// receiver.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NicOverride {
    /// Host (cluster node) indices, 0-based.
    pub hosts: Vec<u32>,
    /// Line rate of those hosts' NIC links, bits/s.
    pub rate: Rate,
}

impl FabricLinkSpec {
    /// One rate on every network link (no tiers, no overrides).
    pub fn uniform(rate: Rate, link_latency: SimTime, switch_latency: SimTime) -> FabricLinkSpec {
        FabricLinkSpec {
            link_rate: rate,
            link_latency,
            switch_latency,
            ..FabricLinkSpec::default()
        }
    }

    /// Planes of the switch fabric (`topology.planes`, at least 1).
    pub fn planes(&self) -> u32 {
        self.planes.max(1)
    }

    /// Network ports of every NIC: one per plane, two per plane with
    /// `dual_tor` (each its own link to an edge switch, at `link_rate`).
    pub fn ports_per_nic(&self) -> u32 {
        self.planes() * if self.dual_tor { 2 } else { 1 }
    }

    /// Rate of the first tier above the edge (leaf ↔ spine, edge ↔
    /// aggregation, dragonfly local links), bits/s.
    pub fn uplink(&self) -> Rate {
        self.uplink_rate.unwrap_or(self.link_rate)
    }

    /// Rate of a fat-tree's aggregation ↔ core links, bits/s.
    pub fn spine(&self) -> Rate {
        self.spine_rate.unwrap_or_else(|| self.uplink())
    }

    /// Rate of a dragonfly's global links, bits/s.
    pub fn global(&self) -> Rate {
        self.global_rate.unwrap_or_else(|| self.uplink())
    }

    /// The fastest network link of any tier or override, bits/s (what a
    /// per-port figure such as PFC headroom must be sized for).
    pub fn fastest(&self) -> Rate {
        let tiers = [self.link_rate, self.uplink(), self.spine(), self.global()];
        let nics = self.nic_overrides.iter().map(|o| o.rate);
        tiers
            .into_iter()
            .chain(nics)
            .max()
            .unwrap_or(self.link_rate)
    }
}

/// The shape of the network and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum TopologySpec {
    /// Every NIC on one switch (a non-blocking crossbar); the reference for closed forms.
    SingleSwitch,
    /// Two tiers: leaves with `radix` ports split down:up = `oversubscription`:1, every
    /// leaf wired to every spine.
    LeafSpine {
        /// Ports per switch.
        radix: u32,
        /// Down-to-up port ratio at the leaf (1.0 = non-blocking).
        oversubscription: f64,
    },
    /// Three-tier k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge
    /// and k/2 aggregation switches, (k/2)² cores, up to k³/4 NICs.
    FatTree {
        /// Ports per switch (even).
        k: u32,
    },
    /// Rail-optimized: NIC `i` of every host on a rail-`i` leaf; all leaves wired to
    /// every spine.
    RailOptimized {
        /// Ports per leaf switch (half down, half up).
        radix: u32,
        /// Ports per spine switch (must reach every leaf).
        spine_radix: u32,
    },
    /// Dragonfly (Kim et al., ISCA 2008): `groups` of `routers_per_group` routers,
    /// all-to-all inside a group, `global_links_per_router` links between groups.
    Dragonfly {
        /// Number of groups.
        groups: u32,
        /// Routers per group.
        routers_per_group: u32,
        /// NIC ports per router.
        hosts_per_router: u32,
        /// Global (inter-group) ports per router.
        global_links_per_router: u32,
    },
    /// Read from a topology file (`topology.kind = "file"`): named switches,
    /// hosts and links with their own rates and latencies.
    File(std::sync::Arc<super::file::FileTopology>),
}

/// How a shape reads its own `[topology]` keys. The scenario validator
/// implements it and locates every problem at `topology.<key>`, so a shape's
/// file parses its parameters without knowing the file format.
pub(crate) trait ShapeKeys {
    /// Whole-number key `key` (`default` when unset, else "nothing" is an
    /// error), at least `min`; `what` names the quantity in the error.
    fn whole(
        &mut self,
        key: &'static str,
        default: Option<i64>,
        min: i64,
        what: &str,
    ) -> Option<u32>;
    /// Positive finite ratio `key` (`default` when unset); `expected`
    /// describes a valid value in the error.
    fn ratio(&mut self, key: &'static str, default: f64, expected: &str) -> Option<f64>;
    /// `topology.file`: the topology file read relative to the scenario and
    /// checked, its problems located in that file.
    fn file(&mut self) -> Option<TopologySpec>;
}

/// A shape's registration: what the scenario format and the validator need
/// to know of it. Each shape's file exports one `ENTRY`; [`SHAPES`] lists
/// them, and [`TopologySpec::entry`] maps a spec to its own.
pub(crate) struct ShapeEntry {
    /// `topology.kind`, also the name in results.
    pub kind: &'static str,
    /// The `[topology]` keys the shape reads besides `kind`, `planes` and
    /// `dual_tor` (which [`ShapeEntry::multipath`] governs).
    pub keys: &'static [&'static str],
    /// Whether it takes `topology.planes` and `topology.dual_tor`.
    pub multipath: Multipath,
    /// Whether its links carry their own rates and latencies (a topology
    /// file), so `fabric.link_rate`, `link_latency` and the tier rates shape
    /// none of them.
    pub own_link_figures: bool,
    /// Reads its parameters; `None` after recording an error.
    pub parse: fn(&mut dyn ShapeKeys) -> Option<TopologySpec>,
}

/// Every shape, in the order errors list them. A new shape is its file (with
/// its `ENTRY`), a `TopologySpec` arm and a line here and in
/// [`TopologySpec`]'s dispatch methods.
pub(crate) const SHAPES: [&ShapeEntry; 6] = [
    &single_switch::ENTRY,
    &leaf_spine::ENTRY,
    &fat_tree::ENTRY,
    &rail::ENTRY,
    &dragonfly::ENTRY,
    &file::ENTRY,
];

/// A tier of links above the edge that `fabric.uplink_rate`,
/// `fabric.spine_rate` or `fabric.global_rate` sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// The first tier above the edge (`fabric.uplink_rate`).
    Uplink,
    /// A fat-tree's aggregation ↔ core links (`fabric.spine_rate`).
    Spine,
    /// A dragonfly's global links (`fabric.global_rate`).
    Global,
}

/// Where a cluster sits on a shape, for [`TopologySpec::tier_unused`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Occupancy {
    /// NIC ports in all (hosts × NICs per host).
    pub nics: u64,
    /// NICs per host (rails).
    pub nics_per_host: u32,
    /// Every NIC port on two edge switches.
    pub dual_tor: bool,
}

impl TopologySpec {
    /// The shape's registration ([`SHAPES`]).
    pub(crate) fn entry(&self) -> &'static ShapeEntry {
        match self {
            TopologySpec::SingleSwitch => &single_switch::ENTRY,
            TopologySpec::LeafSpine { .. } => &leaf_spine::ENTRY,
            TopologySpec::FatTree { .. } => &fat_tree::ENTRY,
            TopologySpec::RailOptimized { .. } => &rail::ENTRY,
            TopologySpec::Dragonfly { .. } => &dragonfly::ENTRY,
            TopologySpec::File(_) => &file::ENTRY,
        }
    }

    /// The name used in scenario files and results.
    pub fn name(&self) -> &'static str {
        self.entry().kind
    }

    /// Whether the shape takes `topology.planes` and `topology.dual_tor`.
    pub(crate) fn multipath(&self) -> Multipath {
        self.entry().multipath
    }

    /// Why `tier`'s rate key shapes no link the cluster's traffic can cross
    /// (`None` when some traffic crosses that tier): a tier the shape lacks,
    /// or one its NICs never reach.
    pub(crate) fn tier_unused(&self, tier: Tier, at: Occupancy) -> Option<String> {
        match *self {
            TopologySpec::SingleSwitch => single_switch::tier_unused(tier),
            TopologySpec::LeafSpine {
                radix,
                oversubscription,
            } => leaf_spine::tier_unused(tier, at, radix, oversubscription),
            TopologySpec::FatTree { k } => fat_tree::tier_unused(tier, at, k),
            TopologySpec::RailOptimized { radix, .. } => rail::tier_unused(tier, at, radix),
            TopologySpec::Dragonfly {
                routers_per_group,
                hosts_per_router,
                ..
            } => dragonfly::tier_unused(tier, at, routers_per_group, hosts_per_router),
            TopologySpec::File(_) => file::tier_unused(),
        }
    }

    /// Switches, switch-to-switch links and leaves of one plane, before it is
    /// built, for `hosts` hosts of `nics_per_host` NICs (`nics` in all, as
    /// `f64` since the estimate runs before any overflow check).
    pub(crate) fn counts(&self, hosts: f64, nics: f64, nics_per_host: u32) -> ShapeCounts {
        match *self {
            TopologySpec::SingleSwitch => single_switch::counts(),
            TopologySpec::LeafSpine {
                radix,
                oversubscription,
            } => leaf_spine::counts(radix, oversubscription, nics),
            TopologySpec::FatTree { k } => fat_tree::counts(k),
            TopologySpec::RailOptimized { radix, .. } => rail::counts(radix, hosts, nics_per_host),
            TopologySpec::Dragonfly {
                groups,
                routers_per_group,
                global_links_per_router,
                ..
            } => dragonfly::counts(groups, routers_per_group, global_links_per_router),
            TopologySpec::File(ref f) => file::counts(f),
        }
    }

    /// Links (PCIe and network) on the longest GPU-to-GPU path.
    pub(crate) fn path_links(&self) -> f64 {
        match self {
            TopologySpec::SingleSwitch => single_switch::PATH_LINKS,
            TopologySpec::LeafSpine { .. } => leaf_spine::PATH_LINKS,
            TopologySpec::FatTree { .. } => fat_tree::PATH_LINKS,
            TopologySpec::RailOptimized { .. } => rail::PATH_LINKS,
            TopologySpec::Dragonfly { .. } => dragonfly::PATH_LINKS,
            TopologySpec::File(f) => file::path_links(f),
        }
    }

    /// The scenario key to blame when the switch fabric costs more memory
    /// than the hosts of a cluster of `nics` NICs.
    pub(crate) fn size_key(&self, nics: f64) -> &'static str {
        match *self {
            TopologySpec::SingleSwitch => single_switch::size_key(),
            TopologySpec::LeafSpine { radix, .. } => leaf_spine::size_key(radix, nics),
            TopologySpec::FatTree { .. } => fat_tree::size_key(),
            TopologySpec::RailOptimized { radix, .. } => rail::size_key(radix, nics),
            TopologySpec::Dragonfly { .. } => dragonfly::size_key(),
            TopologySpec::File(_) => file::size_key(),
        }
    }

    /// Cables one plane of the shape's switch fabric to `nics` (host-major,
    /// `nics_per_host` per host; each NIC twice, on an edge pair, with
    /// `dual_tor`, which only shapes whose [`TopologySpec::multipath`] allows
    /// it are asked for).
    fn cable(
        &self,
        b: &mut TopologyBuilder,
        nics: &[NodeId],
        nics_per_host: u32,
        dual_tor: bool,
    ) -> Result<(), TopologyError> {
        match *self {
            TopologySpec::SingleSwitch => {
                single_switch::build(b, nics);
                Ok(())
            }
            TopologySpec::LeafSpine {
                radix,
                oversubscription,
            } => leaf_spine::cable(b, nics, radix, oversubscription, dual_tor),
            TopologySpec::FatTree { k } => fat_tree::cable(b, nics, k, dual_tor),
            TopologySpec::RailOptimized { radix, spine_radix } => {
                rail::build(b, nics, nics_per_host, radix, spine_radix)
            }
            TopologySpec::Dragonfly {
                groups,
                routers_per_group,
                hosts_per_router,
                global_links_per_router,
            } => dragonfly::build(
                b,
                nics,
                groups,
                routers_per_group,
                hosts_per_router,
                global_links_per_router,
            ),
            TopologySpec::File(ref file) => file::build(b, nics, nics_per_host, file),
        }
    }
}

/// What a shape's switch fabric holds before it is built, per plane (the
/// resource estimate's inputs; `f64` because they are estimated before any
/// overflow check).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ShapeCounts {
    /// Switches (routers).
    pub switches: f64,
    /// Duplex switch-to-switch links.
    pub fabric_links: f64,
    /// Edge switches, the routing tables' destinations.
    pub leaves: f64,
}

/// `spine_rate` on a shape without a fat-tree's core tier; `global` when the
/// shape has global links to name among its tiers.
pub(crate) fn no_spine_tier(kind: &str, global: bool) -> String {
    format!(
        "spine_rate sets a 3-tier fat-tree's aggregation ↔ core links, which a {kind} has not (its tiers: link_rate, uplink_rate{})",
        if global { ", global_rate" } else { "" }
    )
}

/// `global_rate` on a shape that is not a dragonfly.
pub(crate) fn no_global_tier(kind: &str) -> String {
    format!("global_rate sets a dragonfly's global links, which a {kind} has not")
}

/// `uplink_rate` when the `nics` NIC ports fit on one edge switch of
/// `per_edge` host ports (NICs fill edge switches in order).
pub(crate) fn one_edge(nics: u64, per_edge: u64) -> Option<String> {
    (nics <= per_edge)
        .then(|| "every NIC is on one edge switch: no traffic crosses an uplink".into())
}

/// Which multi-port NIC cablings a shape supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Multipath {
    /// `topology.planes` above 1: copies of the switch fabric.
    pub planes: bool,
    /// `topology.dual_tor`: every NIC port on two edge switches.
    pub dual_tor: bool,
}

/// Why a topology cannot be built for a cluster.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct TopologyError {
    /// The scenario field at fault, e.g. `topology.radix` or `cluster.nodes`.
    pub field: &'static str,
    /// What is wrong and what would fit, in one sentence.
    pub message: String,
}

impl TopologyError {
    /// An error about `field`.
    pub fn new(field: &'static str, message: impl Into<String>) -> TopologyError {
        TopologyError {
            field,
            message: message.into(),
        }
    }
}

/// Most duplex network links a shape builder will create. Larger requests are refused
/// with an error instead of exhausting memory (every link is a few dozen bytes, and
/// link ids are `u32`). 2²² links hold, for example, a full 128-ary fat-tree.
pub(crate) const MAX_NETWORK_LINKS: u64 = 1 << 22;

/// Refuses a shape that would need more than [`MAX_NETWORK_LINKS`] duplex network
/// links; `field` names the parameter that makes it so large.
pub(crate) fn check_link_budget(field: &'static str, links: u64) -> Result<(), TopologyError> {
    if links > MAX_NETWORK_LINKS {
        return Err(TopologyError::new(
            field,
            format!(
                "this shape needs {links} network links, more than the {MAX_NETWORK_LINKS} the simulator builds; use smaller parameters"
            ),
        ));
    }
    Ok(())
}

/// Assembles nodes and links; shape builders call it, then [`TopologyBuilder::finish`].
pub struct TopologyBuilder {
    shape: String,
    nodes: Vec<Node>,
    links: Vec<Link>,
    gpus: Vec<GpuPorts>,
    nics: Vec<NicPorts>,
    hosts: u32,
    gpus_per_host: u32,
    fabric: FabricLinkSpec,
    /// Dragonfly routers in order (`group·a + router`) and `a`, when the shape is one.
    dragonfly: Option<(Vec<NodeId>, u32)>,
}

impl TopologyBuilder {
    /// A new, empty builder for a shape named `shape`.
    pub fn new(shape: &str, fabric: &FabricLinkSpec) -> TopologyBuilder {
        TopologyBuilder {
            shape: shape.to_string(),
            nodes: Vec::new(),
            links: Vec::new(),
            gpus: Vec::new(),
            nics: Vec::new(),
            hosts: 0,
            gpus_per_host: 0,
            fabric: fabric.clone(),
            dragonfly: None,
        }
    }

    /// Adds a node.
    pub fn add_node(&mut self, kind: NodeKind, latency: SimTime) -> NodeId {
        self.nodes.push(Node { kind, latency });
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// Adds a network switch at `tier` with the fabric's switch latency.
    pub fn add_switch(&mut self, tier: u8) -> NodeId {
        let lat = self.fabric.switch_latency;
        self.add_node(NodeKind::Switch { tier }, lat)
    }

    /// Adds two directed links a→b and b→a (ids `2i` and `2i+1`); returns a→b.
    pub fn add_duplex(
        &mut self,
        a: NodeId,
        b: NodeId,
        rate: Rate,
        latency: SimTime,
        kind: LinkKind,
    ) -> LinkId {
        debug_assert!(self.links.len() % 2 == 0, "links are added in pairs");
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link {
            from: a,
            to: b,
            rate,
            latency,
            kind,
        });
        self.links.push(Link {
            from: b,
            to: a,
            rate,
            latency,
            kind,
        });
        id
    }

    /// Adds a network link between two switches (or a NIC and a switch) at the
    /// host rate (`fabric.link_rate`) and the fabric's latency; returns a→b.
    pub fn add_network_link(&mut self, a: NodeId, b: NodeId) -> LinkId {
        let r = self.fabric.link_rate;
        self.add_rated_link(a, b, r)
    }

    /// Adds a network link at `rate` (bits/s) and the fabric's latency; returns a→b.
    pub fn add_rated_link(&mut self, a: NodeId, b: NodeId, rate: Rate) -> LinkId {
        let l = self.fabric.link_latency;
        self.add_duplex(a, b, rate, l, LinkKind::Network)
    }

    /// Adds a link of the first tier above the edge (`fabric.uplink_rate`).
    pub fn add_uplink(&mut self, a: NodeId, b: NodeId) -> LinkId {
        let r = self.fabric.uplink();
        self.add_rated_link(a, b, r)
    }

    /// Adds an aggregation ↔ core link of a fat-tree (`fabric.spine_rate`).
    pub fn add_spine_link(&mut self, a: NodeId, b: NodeId) -> LinkId {
        let r = self.fabric.spine();
        self.add_rated_link(a, b, r)
    }

    /// Adds a dragonfly global link (`fabric.global_rate`).
    pub fn add_global_link(&mut self, a: NodeId, b: NodeId) -> LinkId {
        let r = self.fabric.global();
        self.add_rated_link(a, b, r)
    }

    /// The link figures the builder was made with.
    pub fn fabric(&self) -> &FabricLinkSpec {
        &self.fabric
    }

    /// Adds the hosts (GPUs, one NVSwitch, NICs and their internal links) and returns
    /// the NIC nodes, host-major: `nics[h * nics_per_host + i]`. Each NIC must then be
    /// cabled with [`TopologyBuilder::attach_nic`].
    pub fn add_hosts(&mut self, c: &ClusterSpec) -> Vec<NodeId> {
        self.hosts = c.hosts;
        self.gpus_per_host = c.gpus_per_host;
        let mut nic_nodes = Vec::with_capacity((c.hosts * c.nics_per_host) as usize);
        for h in 0..c.hosts {
            let nvs = self.add_node(NodeKind::NvSwitch { host: h }, SimTime::ZERO);
            let first_nic = nic_nodes.len();
            for i in 0..c.nics_per_host {
                nic_nodes.push(self.add_node(NodeKind::Nic { host: h, index: i }, SimTime::ZERO));
            }
            for l in 0..c.gpus_per_host {
                let gpu = GpuId(h * c.gpus_per_host + l);
                let node = self.add_node(NodeKind::Gpu { gpu }, SimTime::ZERO);
                let nv =
                    self.add_duplex(node, nvs, c.nvlink_rate, c.nvlink_latency, LinkKind::NvLink);
                let nic = nic_nodes[first_nic + (l * c.nics_per_host / c.gpus_per_host) as usize];
                let pc = self.add_duplex(node, nic, c.pcie_rate, c.pcie_latency, LinkKind::Pcie);
                self.gpus.push(GpuPorts {
                    node,
                    nvlink_up: nv,
                    nvlink_down: LinkId(nv.0 + 1),
                    nic,
                    pcie_up: pc,
                    pcie_down: LinkId(pc.0 + 1),
                });
            }
        }
        nic_nodes
    }

    /// Cables a NIC to its edge switch with a network link at the host rate.
    pub fn attach_nic(&mut self, nic: NodeId, leaf: NodeId) {
        let (r, l) = (self.fabric.link_rate, self.fabric.link_latency);
        self.attach_nic_with(nic, leaf, r, l);
    }

    /// Cables a NIC to its edge switch with a link of `rate` (bits/s) and
    /// `latency` (picoseconds) each way.
    pub fn attach_nic_with(&mut self, nic: NodeId, leaf: NodeId, rate: Rate, latency: SimTime) {
        let up = self.add_duplex(nic, leaf, rate, latency, LinkKind::Network);
        self.nics.push(NicPorts {
            node: nic,
            uplink: up,
            downlink: LinkId(up.0 + 1),
            leaf,
        });
    }

    /// Declares the shape a dragonfly: `routers` in order (`group·a + router`),
    /// `a` routers per group. [`TopologyBuilder::finish`] then builds the group
    /// tables that minimal, Valiant and UGAL routing use.
    pub fn set_dragonfly(&mut self, routers: Vec<NodeId>, a: u32) {
        self.dragonfly = Some((routers, a.max(1)));
    }

    /// Finishes the graph: adjacency, indices and routing tables.
    pub fn finish(mut self) -> Topology {
        let ports = self.fabric.ports_per_nic();
        if ports > 1 {
            // a NIC's ports next to each other, NICs host-major (plane by plane,
            // then ToR A before B, as the shapes cabled them)
            self.nics.sort_by_key(|p| p.node);
        }
        let n = self.nodes.len();
        let mut out_start = vec![0u32; n + 1];
        for l in &self.links {
            out_start[l.from.0 as usize + 1] += 1;
        }
        for i in 0..n {
            out_start[i + 1] += out_start[i];
        }
        let mut fill = out_start.clone();
        let mut out_links = vec![LinkId(0); self.links.len()];
        for (i, l) in self.links.iter().enumerate() {
            out_links[fill[l.from.0 as usize] as usize] = LinkId(i as u32);
            fill[l.from.0 as usize] += 1;
        }
        // each node's out-links again, by far end (stable: in `out_links`
        // order among links to one node), for `Topology::links_to`
        let mut out_by_to = out_links.clone();
        for i in 0..n {
            let (s, e) = (out_start[i] as usize, out_start[i + 1] as usize);
            out_by_to[s..e].sort_by_key(|l| self.links[l.0 as usize].to);
        }
        let mut switch_index = vec![u32::MAX; n];
        let mut n_switches = 0u32;
        for (i, node) in self.nodes.iter().enumerate() {
            if matches!(node.kind, NodeKind::Switch { .. }) {
                switch_index[i] = n_switches;
                n_switches += 1;
            }
        }
        let mut nic_index = vec![u32::MAX; n];
        let mut leaf_index = vec![u32::MAX; n];
        let mut leaves = Vec::new();
        for (i, nic) in self.nics.iter().enumerate() {
            if nic_index[nic.node.0 as usize] == u32::MAX {
                nic_index[nic.node.0 as usize] = i as u32;
            }
            if leaf_index[nic.leaf.0 as usize] == u32::MAX {
                leaf_index[nic.leaf.0 as usize] = leaves.len() as u32;
                leaves.push(nic.leaf);
            }
        }
        let n_links = self.links.len();
        let mut t = Topology {
            shape: self.shape,
            nodes: self.nodes,
            links: self.links,
            out_start,
            out_links,
            out_by_to,
            hosts: self.hosts,
            gpus_per_host: self.gpus_per_host,
            gpus: self.gpus,
            nics: self.nics,
            nic_index,
            ports_per_nic: ports,
            link_up: vec![true; n_links],
            switch_index,
            leaf_index,
            leaves,
            dist: Vec::new(),
            n_switches: n_switches as usize,
            network_efficiency: 1.0,
            sharp: false,
            sharp_groups: u32::MAX,
            nvls: false,
            qps_per_connection: 1,
            dragonfly: None,
            df_routing: super::DragonflyRouting::Shortest,
            alike: std::sync::OnceLock::new(),
        };
        t.compute_distances();
        if let Some((routers, a)) = self.dragonfly {
            t.dragonfly = Some(Box::new(super::dragonfly::Groups::new(&t, routers, a)));
        }
        t
    }
}

/// Builds the topology of `spec` for the cluster `c` with network links `f`.
///
/// # Errors
/// Returns a [`TopologyError`] naming the field at fault when the shape cannot hold
/// the cluster (too few ports, odd `k`, a spine that cannot reach every leaf, …).
pub fn build(
    c: &ClusterSpec,
    f: &FabricLinkSpec,
    spec: &TopologySpec,
) -> Result<Topology, TopologyError> {
    if c.hosts == 0 || c.gpus_per_host == 0 || c.nics_per_host == 0 {
        return Err(TopologyError::new(
            "cluster.nodes",
            "a cluster needs at least one node, one GPU and one NIC per node",
        ));
    }
    for o in &f.nic_overrides {
        if let Some(&h) = o.hosts.iter().find(|&&h| h >= c.hosts) {
            return Err(TopologyError::new(
                "fabric.nic_overrides",
                format!(
                    "node {h} has no NIC to override: the cluster has nodes 0 to {}",
                    c.hosts - 1
                ),
            ));
        }
    }
    let multi = spec.multipath();
    let refused = if f.dual_tor && !multi.dual_tor {
        Some("topology.dual_tor")
    } else if f.planes() > 1 && !multi.planes {
        Some("topology.planes")
    } else {
        None
    };
    if let Some(field) = refused {
        return Err(TopologyError::new(
            field,
            format!(
                "a {} has one plane of single-homed NICs; planes apply to leaf_spine, fat_tree and rail_optimized, dual_tor to leaf_spine and fat_tree",
                spec.name()
            ),
        ));
    }
    if f.planes() > MAX_PLANES {
        return Err(TopologyError::new(
            "topology.planes",
            format!(
                "{} planes: at most {MAX_PLANES} (every plane is a whole copy of the switch fabric)",
                f.planes()
            ),
        ));
    }
    let mut b = TopologyBuilder::new(spec.name(), f);
    let nics = b.add_hosts(c);
    for plane in 0..f.planes() {
        if plane == 1 {
            // every plane is a copy of the first: refuse before building more
            check_link_budget(
                "topology.planes",
                (b.links.len() as u64 / 2).saturating_mul(u64::from(f.planes())),
            )?;
        }
        spec.cable(&mut b, &nics, c.nics_per_host, f.dual_tor)?;
    }
    let mut t = b.finish();
    for o in &f.nic_overrides {
        for &h in &o.hosts {
            t.set_host_nic_rate(h, o.rate);
        }
    }
    Ok(t)
}

/// Most planes a fabric may have (`topology.planes`): each is a whole copy of
/// the switch fabric; the largest published designs use 2 to 8.
pub const MAX_PLANES: u32 = 16;

/// The NIC ports of one plane in cabling order, for `dual_tor`: groups of
/// `per_edge` NICs, each group's first ports (`per_edge` slots, padded with
/// `None`) then their second ports, so the group's ports fill an edge pair
/// (edges `2j` and `2j+1`); the trailing padding is cut.
pub(crate) fn dual_slots(nics: &[NodeId], per_edge: usize) -> Vec<Option<NodeId>> {
    let per_edge = per_edge.max(1);
    let mut slots = Vec::with_capacity(nics.len() * 2 + 2 * per_edge);
    for group in nics.chunks(per_edge) {
        for _side in 0..2 {
            slots.extend(group.iter().map(|&n| Some(n)));
            slots.extend(std::iter::repeat_n(None, per_edge - group.len()));
        }
    }
    while slots.last() == Some(&None) {
        slots.pop();
    }
    slots
}

/// A shape's error on a dual-ToR fabric, saying that its NIC counts are
/// ports (two per NIC, on two edge switches).
pub(crate) fn dual_note(mut e: TopologyError) -> TopologyError {
    e.message.push_str(
        " (with topology.dual_tor every NIC takes a port on each of two edge switches: count two NICs per node's NIC)",
    );
    e
}

/// Cluster and link figures shared by unit tests that build their own
/// topology: `hosts` hosts of `gpus` GPUs and one NIC each; NVLink 3.6 Tb/s
/// (100 ns), PCIe 512 Gb/s (200 ns), network 400 Gb/s (50 ns links, 300 ns
/// switches).
#[cfg(test)]
pub(crate) fn test_specs(hosts: u32, gpus: u32) -> (ClusterSpec, FabricLinkSpec) {
    let c = ClusterSpec {
        hosts,
        gpus_per_host: gpus,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(200),
    };
    let f = FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(50),
        switch_latency: SimTime::from_ns(300),
        ..Default::default()
    };
    (c, f)
}

/// A small reference fabric for unit tests: `hosts` hosts of `gpus` GPUs and one
/// NIC each on one switch; NVLink 3.6 Tb/s (100 ns), PCIe 512 Gb/s (250 ns),
/// network 400 Gb/s (100 ns links, 200 ns switch).
#[cfg(test)]
pub(crate) fn small_single_switch(hosts: u32, gpus: u32) -> Topology {
    let c = ClusterSpec {
        hosts,
        gpus_per_host: gpus,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(250),
    };
    let f = FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(200),
        ..Default::default()
    };
    build(&c, &f, &TopologySpec::SingleSwitch).expect("reference fabric builds")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Switches, duplex switch-to-switch links and edge switches of a built topology.
    fn built_counts(t: &Topology) -> (usize, usize, usize) {
        let is_switch = |n: NodeId| matches!(t.nodes[n.0 as usize].kind, NodeKind::Switch { .. });
        let fabric = t
            .links
            .iter()
            .filter(|l| is_switch(l.from) && is_switch(l.to))
            .count();
        (t.n_switches, fabric / 2, t.leaves.len())
    }

    /// A shape's pre-build `counts` (what the resource estimate charges) are
    /// the built graph's, on fabrics the NICs fill exactly, and match the
    /// closed forms: a k-ary fat-tree has 5k²/4 switches, k³/4 edge–agg plus
    /// k³/4 agg–core links and k²/2 edge switches (Al-Fares et al., SIGCOMM
    /// 2008, §3: k = 4 gives 20 switches, 32 links, 8 edges); a leaf-spine of
    /// radix 8 at 1:1 has 4 down and 4 up ports per leaf, so 16 NICs need 4
    /// leaves and 4 spines with 16 links; a dragonfly of g groups of a routers
    /// with h global ports each has g·a·(a−1)/2 local and g·a·h/2 global links
    /// (Kim et al., ISCA 2008).
    #[test]
    fn counts_match_the_built_graph() {
        // (hosts, NICs per host, shape, (switches, switch links, leaves))
        type Case = (u32, u32, TopologySpec, (usize, usize, usize));
        let cases: Vec<Case> = vec![
            (4, 1, TopologySpec::SingleSwitch, (1, 0, 1)),
            (
                16,
                1,
                TopologySpec::LeafSpine {
                    radix: 8,
                    oversubscription: 1.0,
                },
                (8, 16, 4),
            ),
            (16, 1, TopologySpec::FatTree { k: 4 }, (20, 32, 8)),
            (
                4,
                2,
                TopologySpec::RailOptimized {
                    radix: 4,
                    spine_radix: 4,
                },
                // 2 rails of ⌈4 / 2⌉ leaves, 2 spines each linked to all 4 leaves
                (6, 8, 4),
            ),
            (
                12,
                1,
                TopologySpec::Dragonfly {
                    groups: 3,
                    routers_per_group: 2,
                    hosts_per_router: 2,
                    global_links_per_router: 1,
                },
                // 6 routers; 3·2·1/2 = 3 local and 3·2·1/2 = 3 global links
                (6, 6, 6),
            ),
        ];
        for (hosts, nics_per_host, spec, want) in cases {
            let (mut c, f) = test_specs(hosts, nics_per_host);
            c.nics_per_host = nics_per_host;
            let t = build(&c, &f, &spec).expect("the test fabric builds");
            assert_eq!(built_counts(&t), want, "{} built", spec.name());
            let est = spec.counts(
                f64::from(hosts),
                f64::from(hosts * nics_per_host),
                nics_per_host,
            );
            let est = (
                est.switches as usize,
                est.fabric_links as usize,
                est.leaves as usize,
            );
            assert_eq!(est, want, "{} estimated", spec.name());
        }
    }

    /// A switch one hop from the destination's edge switch finds its next
    /// hops by binary search (`Topology::links_to`); they are exactly, and in
    /// the same order (the ECMP pick indexes them), the links a scan of
    /// every port keeps: on a fat-tree, a leaf-spine at 2:1 and a
    /// rail-optimized fabric, healthy and with a switch link down.
    /// The three switch-tiered shapes the routing tests walk: a k = 4 fat-tree,
    /// a 2:1 oversubscribed leaf-spine and a rail-optimized fabric.
    fn test_shapes() -> [TopologySpec; 3] {
        [
            TopologySpec::FatTree { k: 4 },
            TopologySpec::LeafSpine {
                radix: 6,
                oversubscription: 2.0,
            },
            TopologySpec::RailOptimized {
                radix: 4,
                spine_radix: 4,
            },
        ]
    }

    #[test]
    fn next_hops_by_search_are_the_scan() {
        // the scan `next_hops` did before the search, for a single-port NIC
        fn scan(t: &Topology, at: NodeId, dst: GpuId) -> Vec<LinkId> {
            let dnic = t.nic_of_node(t.gpus[dst.0 as usize].nic).expect("NIC");
            let leaf = t.leaf_index[dnic.leaf.0 as usize] as usize;
            let row = &t.dist[leaf * t.n_switches..(leaf + 1) * t.n_switches];
            let here = row[t.switch_index[at.0 as usize] as usize];
            t.out_links(at)
                .iter()
                .copied()
                .filter(|l| {
                    let si = t.switch_index[t.links[l.0 as usize].to.0 as usize];
                    t.link_up[l.0 as usize] && si != u32::MAX && row[si as usize] + 1 == here
                })
                .collect()
        }
        let shapes = test_shapes();
        let mut searched = 0;
        for spec in &shapes {
            let (c, f) = test_specs(8, 2);
            let mut t = build(&c, &f, spec).expect("builds");
            for cut in [false, true] {
                if cut {
                    // the first switch-to-switch link goes down
                    let l = (0..t.links.len())
                        .find(|&l| {
                            let k = &t.links[l];
                            t.switch_index[k.from.0 as usize] != u32::MAX
                                && t.switch_index[k.to.0 as usize] != u32::MAX
                        })
                        .expect("a switch link");
                    t.set_link_up(LinkId(l as u32), false);
                }
                for at in 0..t.nodes.len() {
                    let at = NodeId(at as u32);
                    if t.switch_index[at.0 as usize] == u32::MAX {
                        continue;
                    }
                    for g in 0..t.gpus.len() {
                        let dst = GpuId(g as u32);
                        let dnic = t.nic_of_node(t.gpus[g].nic).expect("NIC");
                        if dnic.leaf == at {
                            continue; // the down link to the NIC, not a scan
                        }
                        let mut got = Vec::new();
                        t.next_hops(at, dst, &mut got);
                        assert_eq!(got, scan(&t, at, dst), "{} {at:?} -> {dst:?}", spec.name());
                        let leaf = t.leaf_index[dnic.leaf.0 as usize] as usize;
                        let si = t.switch_index[at.0 as usize] as usize;
                        searched += usize::from(t.dist[leaf * t.n_switches + si] == 1);
                    }
                }
            }
        }
        assert!(searched > 100, "the search ran {searched} times");
    }

    /// The shortcut of `Topology::path_cost` (one path where all equal-cost
    /// paths are alike) gives what the walk over every path gives, on every
    /// built shape that claims it: fat-tree, leaf-spine at 2:1, rail-optimized
    /// with two NICs per host, two planes, dual ToR, tier rates and a slow NIC
    /// override; and a degraded uplink makes the claim false, so that fabric
    /// takes the walk again.
    #[test]
    fn paths_alike_holds_where_the_walk_finds_one_cost() {
        let shapes = test_shapes();
        // (NICs per host, planes, dual ToR, tier rates, override host 1)
        let variants = [
            (1, 1, false, false, false),
            (2, 1, false, true, true),
            (1, 2, false, false, false),
            (1, 1, true, true, true),
        ];
        let mut checked = 0;
        for spec in &shapes {
            for &(nics, planes, dual, tiers, slow) in &variants {
                let (mut c, mut f) = test_specs(8, 2);
                c.nics_per_host = nics;
                f.planes = planes;
                f.dual_tor = dual;
                if tiers {
                    f.uplink_rate = Some(Rate::gbps(800));
                    f.spine_rate = Some(Rate::gbps(1600));
                }
                if slow {
                    f.nic_overrides = vec![NicOverride {
                        hosts: vec![1],
                        rate: Rate::gbps(100),
                    }];
                }
                let Ok(mut t) = build(&c, &f, spec) else {
                    continue; // a variant the shape refuses (e.g. rails × planes)
                };
                assert!(t.paths_alike(), "{} {nics} {planes} {dual}", spec.name());
                let g = t.gpus.len() as u32;
                for a in 0..g {
                    for b in 0..g {
                        let (a, b) = (GpuId(a), GpuId(b));
                        if a == b {
                            continue;
                        }
                        let walk = t.ecmp_expectation(a, b);
                        assert_eq!(walk, t.path_cost(a, b), "{} {a:?}→{b:?}", spec.name());
                    }
                }
                checked += 1;
                // one uplink at half rate: equal-cost paths now differ
                let up = (0..t.links.len() as u32)
                    .map(LinkId)
                    .find(|&l| {
                        let l = &t.links[l.0 as usize];
                        matches!(
                            t.nodes[l.from.0 as usize].kind,
                            NodeKind::Switch { tier: 0 }
                        ) && matches!(t.nodes[l.to.0 as usize].kind, NodeKind::Switch { .. })
                    })
                    .expect("a switch uplink");
                let r = t.links[up.0 as usize].rate;
                t.set_link_rate(up, Rate(r.0 / 2));
                assert!(!t.paths_alike(), "{} after a degraded uplink", spec.name());
            }
        }
        assert!(checked >= 8, "only {checked} fabrics built");
    }

    /// Every shape a spec can name is registered once in `SHAPES` under its
    /// own kind, so the validator's kind list and key checks cover it.
    #[test]
    fn every_shape_is_registered_once() {
        let specs = [
            TopologySpec::SingleSwitch,
            TopologySpec::LeafSpine {
                radix: 8,
                oversubscription: 1.0,
            },
            TopologySpec::FatTree { k: 4 },
            TopologySpec::RailOptimized {
                radix: 4,
                spine_radix: 4,
            },
            TopologySpec::Dragonfly {
                groups: 3,
                routers_per_group: 2,
                hosts_per_router: 2,
                global_links_per_router: 1,
            },
        ];
        for spec in &specs {
            let n = SHAPES.iter().filter(|e| e.kind == spec.name()).count();
            assert_eq!(n, 1, "{} registered {n} times", spec.name());
            // consts have no fixed address: compare what the entries say
            let listed = SHAPES.iter().find(|e| e.kind == spec.name()).unwrap();
            let own = spec.entry();
            assert_eq!(listed.keys, own.keys, "{}", spec.name());
            assert_eq!(listed.multipath, own.multipath, "{}", spec.name());
            assert_eq!(listed.own_link_figures, own.own_link_figures);
        }
        assert!(SHAPES
            .iter()
            .any(|e| e.kind == "file" && e.own_link_figures));
        let mut kinds: Vec<&str> = SHAPES.iter().map(|e| e.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), SHAPES.len());
    }

    /// Tier keys are unused exactly where no traffic can cross the tier: a
    /// k = 4 fat-tree's pod holds (k/2)² = 4 NICs and an edge switch k/2 = 2
    /// (Al-Fares et al. 2008); a dragonfly group of a·p = 4 NICs crosses no
    /// global link.
    #[test]
    fn tier_unused_follows_the_shape() {
        let at = |nics| Occupancy {
            nics,
            nics_per_host: 1,
            dual_tor: false,
        };
        let ft = TopologySpec::FatTree { k: 4 };
        assert!(ft.tier_unused(Tier::Uplink, at(2)).is_some());
        assert!(ft.tier_unused(Tier::Uplink, at(3)).is_none());
        assert!(ft.tier_unused(Tier::Spine, at(4)).is_some());
        assert!(ft.tier_unused(Tier::Spine, at(5)).is_none());
        assert!(ft.tier_unused(Tier::Global, at(16)).is_some());
        let df = TopologySpec::Dragonfly {
            groups: 3,
            routers_per_group: 2,
            hosts_per_router: 2,
            global_links_per_router: 1,
        };
        assert!(df.tier_unused(Tier::Global, at(4)).is_some());
        assert!(df.tier_unused(Tier::Global, at(5)).is_none());
        assert!(df.tier_unused(Tier::Uplink, at(3)).is_none());
        assert!(df.tier_unused(Tier::Spine, at(12)).is_some());
        let one = TopologySpec::SingleSwitch;
        assert!(one.tier_unused(Tier::Uplink, at(64)).is_some());
    }
}
