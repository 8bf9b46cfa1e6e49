//! The cluster as a graph: GPUs, NVSwitches, NICs, switches and directed links, and
//! the routes between GPUs.
//!
//! ```text
//!   GPU ──NVLink──► NVSwitch ──NVLink──► GPU          (inside a host)
//!   GPU ──PCIe──► NIC ──► leaf ──► spine … ──► leaf ──► NIC ──PCIe──► GPU
//! ```
//!
//! Every link is directed and has a rate (bits/s) and a propagation latency; every
//! node may add a forwarding latency (switches). Builders for the fabric shapes live
//! in one file each ([`leaf_spine`], [`fat_tree`], [`rail`], [`dragonfly`]) and all
//! share [`TopologyBuilder`], which wires the hosts and computes the routing tables.
//!
//! Routing is shortest-path with equal-cost multipath: for each edge ("leaf") switch
//! the builder stores the hop distance from every switch, and a packet or flow at a
//! switch may take any out-link to a switch one hop closer. ECMP picks one by a
//! seeded hash of the flow; adaptive routing and spraying pick per packet.
//! A dragonfly may instead route by its groups ([`DragonflyRouting`]: minimal,
//! Valiant, UGAL; [`dragonfly`] has the tables and the module doc the details).

pub mod builder;
pub mod dragonfly;
pub mod fat_tree;
pub mod file;
pub mod import;
pub mod leaf_spine;
pub mod partition;
pub mod rail;
pub mod single_switch;

pub use builder::{
    build, ClusterSpec, FabricLinkSpec, NicOverride, TopologyBuilder, TopologyError, TopologySpec,
};

use crate::units::{Rate, SimTime};

/// Index of a node (GPU, NVSwitch, NIC or switch) in [`Topology::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// Index of a directed link in [`Topology::links`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);

/// A GPU's global rank: host `h`, local index `l` is `h * gpus_per_host + l`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuId(pub u32);

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A GPU; traffic starts and ends here.
    Gpu { gpu: GpuId },
    /// The NVSwitch fabric of one host, modeled as one non-blocking crossbar.
    NvSwitch { host: u32 },
    /// A network adapter of a host (the `index`-th of that host).
    Nic { host: u32, index: u32 },
    /// A network switch; `tier` 0 is the edge (leaf / ToR / rail switch).
    Switch { tier: u8 },
}

/// Which technology a link models (it decides which settings apply to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// GPU ↔ NVSwitch inside a host.
    NvLink,
    /// GPU ↔ NIC over PCIe (the GPUDirect path).
    Pcie,
    /// NIC ↔ switch or switch ↔ switch: the network proper.
    Network,
}

/// A node of the graph.
#[derive(Clone, Debug)]
pub struct Node {
    /// What the node is.
    pub kind: NodeKind,
    /// Time to forward a packet through the node (switch pipeline latency), picoseconds.
    pub latency: SimTime,
}

/// A directed link: serializes at `rate` and delivers after `latency`.
#[derive(Clone, Debug)]
pub struct Link {
    /// Sending end.
    pub from: NodeId,
    /// Receiving end.
    pub to: NodeId,
    /// Line rate, bits per second.
    pub rate: Rate,
    /// Propagation delay, picoseconds.
    pub latency: SimTime,
    /// Technology of the link.
    pub kind: LinkKind,
}

/// Per-GPU shortcuts to the links on its way in and out of the host.
#[derive(Clone, Copy, Debug)]
pub struct GpuPorts {
    /// The GPU's node.
    pub node: NodeId,
    /// GPU → NVSwitch.
    pub nvlink_up: LinkId,
    /// NVSwitch → GPU.
    pub nvlink_down: LinkId,
    /// The NIC this GPU sends through (GPUDirect affinity).
    pub nic: NodeId,
    /// GPU → NIC (PCIe).
    pub pcie_up: LinkId,
    /// NIC → GPU (PCIe).
    pub pcie_down: LinkId,
}

/// Per-NIC shortcuts to the edge of the network.
#[derive(Clone, Copy, Debug)]
pub struct NicPorts {
    /// The NIC's node.
    pub node: NodeId,
    /// NIC → edge switch.
    pub uplink: LinkId,
    /// Edge switch → NIC.
    pub downlink: LinkId,
    /// The edge switch the NIC is cabled to.
    pub leaf: NodeId,
}

/// The built cluster graph with its routing tables. Immutable during a run except
/// for [`Topology::set_link_up`], which recomputes the routes (link faults).
#[derive(Clone, Debug)]
pub struct Topology {
    /// Name of the shape, e.g. `"rail_optimized"`.
    pub shape: String,
    /// All nodes.
    pub nodes: Vec<Node>,
    /// All directed links; the reverse of a duplex link is stored next to it.
    pub links: Vec<Link>,
    /// CSR offsets into `out_links`, one per node plus one.
    out_start: Vec<u32>,
    out_links: Vec<LinkId>,
    /// `out_links` with each node's links sorted by their far end (stable),
    /// same offsets: [`Topology::links_to`].
    out_by_to: Vec<LinkId>,
    /// Number of hosts.
    pub hosts: u32,
    /// GPUs in each host.
    pub gpus_per_host: u32,
    /// One entry per GPU, indexed by [`GpuId`].
    pub gpus: Vec<GpuPorts>,
    /// One entry per NIC port, in host-major order (a NIC's
    /// [`Topology::ports_per_nic`] ports next to each other: plane by plane,
    /// ToR A before B); `nic_index[node]` finds a NIC's first.
    pub nics: Vec<NicPorts>,
    nic_index: Vec<u32>,
    /// Network ports of every NIC (`topology.planes`, ×2 with `dual_tor`):
    /// a NIC's ports are that many consecutive entries of `nics`.
    ports_per_nic: u32,
    /// Link is usable (false after a link-down fault).
    link_up: Vec<bool>,
    /// Dense index of each switch node (u32::MAX for non-switches).
    switch_index: Vec<u32>,
    /// Dense index of each edge switch among `leaves` (u32::MAX otherwise).
    leaf_index: Vec<u32>,
    /// Edge switches (those with NICs attached).
    pub leaves: Vec<NodeId>,
    /// `dist[leaf * n_switches + switch]`: hops from the switch to that leaf; 255 = unreachable.
    dist: Vec<u8>,
    n_switches: usize,
    /// Payload fraction of a network link's rate once per-packet headers are paid
    /// (`mtu / (mtu + header)`); 1.0 until [`Topology::set_network_efficiency`].
    /// The analytical and flow backends use it so they agree with the packet level.
    pub network_efficiency: f64,
    /// The switches can reduce in the network (InfiniBand SHARP); false until
    /// [`Topology::set_sharp`]. Only [`crate::collective::sharp`] looks at it.
    pub sharp: bool,
    /// Aggregation trees one switch can serve at once (SHARP groups); u32::MAX
    /// (no limit) until [`Topology::set_sharp_groups`]. Trees beyond it fall back.
    pub sharp_groups: u32,
    /// The NVSwitches reduce and multicast (NVLink SHARP); false until
    /// [`Topology::set_nvls`]. Only [`crate::collective::nvls`] looks at it.
    pub nvls: bool,
    /// Queue pairs per connection between hosts (NCCL_IB_QPS_PER_CONNECTION);
    /// a collective's successive messages take them in turn. 1 until
    /// [`Topology::set_qps_per_connection`].
    pub qps_per_connection: u8,
    /// A dragonfly's group tables (`None` for other shapes).
    dragonfly: Option<Box<dragonfly::Groups>>,
    /// How routes cross a dragonfly's groups; [`DragonflyRouting::Shortest`]
    /// until [`Topology::set_dragonfly_routing`].
    df_routing: DragonflyRouting,
    /// Whether every equal-cost path between two GPUs costs the same
    /// ([`Topology::paths_alike`]), worked out on first use and forgotten by
    /// every `&mut self` method that changes a link.
    alike: std::sync::OnceLock<bool>,
}

/// One class of network links (a tier) and its rates: `host` (NIC ↔ edge
/// switch), `uplink` (tier 0 ↔ 1: leaf ↔ spine, edge ↔ aggregation),
/// `spine` (tier 1 ↔ 2: aggregation ↔ core), a dragonfly's `local` and
/// `global` links, or `tier a-b` for the higher tiers of a topology file.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkTier {
    /// Name of the class.
    pub name: String,
    /// Duplex links in the class.
    pub links: usize,
    /// Slowest line rate in the class, bits/s.
    pub min_rate: Rate,
    /// Fastest line rate in the class, bits/s.
    pub max_rate: Rate,
}

/// How routes cross a dragonfly's groups (`fabric.routing`; Kim, Dally, Scott,
/// Abts, ISCA 2008, §4). Only a dragonfly ([`Topology::dragonfly`]) has groups;
/// elsewhere every value routes as [`DragonflyRouting::Shortest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DragonflyRouting {
    /// Shortest switch-hop paths (the distance tables), ECMP over ties.
    #[default]
    Shortest,
    /// Minimal: at most one global link (local – global – local).
    Minimal,
    /// Valiant: minimally to an intermediate router drawn over every router
    /// of the network (minimal when it is in the source group), then
    /// minimally to the destination (at most two global links).
    Valiant,
    /// UGAL-L: minimal or Valiant, chosen at the source router by the
    /// occupancy of each path's first output queue × its hop count; at the
    /// packet level global hops (1 : 2, as booksim) in Kim's UGAL-L_VC_H and
    /// UGAL-L_CR forms (ISCA 2008, §4.2.2: per-class occupancy when both paths
    /// share the first port, credits delayed by a global link's backlog).
    Ugal,
    /// UGAL-G: minimal or Valiant, chosen by the queues along the whole of
    /// each path (global information: the bound UGAL-L approximates).
    UgalG,
}

impl DragonflyRouting {
    /// Whether some routes leave the minimal path (Valiant, UGAL).
    pub fn non_minimal(self) -> bool {
        matches!(
            self,
            DragonflyRouting::Valiant | DragonflyRouting::Ugal | DragonflyRouting::UgalG
        )
    }
}

/// The ECMP hash of queue pair `qp` from GPU `src` to GPU `dst` under `seed`:
/// the flow and packet fidelities both route a queue pair by it, so they put a
/// connection on the same path.
pub fn qp_hash(seed: u64, src: u32, dst: u32, qp: u8) -> u64 {
    let base = mix64(seed ^ mix64((u64::from(src) << 32) | u64::from(dst)));
    if qp == 0 {
        base
    } else {
        base ^ mix64(u64::from(qp).wrapping_mul(0xA076_1D64_78BD_642F))
    }
}

/// Salt of the hash that draws a flow's Valiant intermediate router, so it is
/// independent of the ECMP choices the same hash makes.
pub const VALIANT_SALT: u64 = 0x6A09_E667_F3BC_C909;

/// Most Valiant intermediate routers [`Topology::spread`] splits one transfer
/// over (the analytical fidelity's contention bound): enough to spread the
/// load over every router of a test-sized dragonfly outside the source group
/// (8 groups × 4 routers on the 72-host one), few enough
/// that an all-to-all on a large one stays fast.
pub const VALIANT_SPREAD: u32 = 32;

/// The unreachable marker in the distance table.
const UNREACHABLE: u8 = u8::MAX;

/// A fast, well-mixed 64-bit hash step (SplitMix64 finalizer); used for ECMP.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Topology {
    /// Number of GPUs.
    pub fn num_gpus(&self) -> u32 {
        self.gpus.len() as u32
    }
    /// The host of a GPU.
    pub fn host_of(&self, g: GpuId) -> u32 {
        g.0 / self.gpus_per_host
    }
    /// Out-links of a node.
    pub fn out_links(&self, n: NodeId) -> &[LinkId] {
        let s = self.out_start[n.0 as usize] as usize;
        let e = self.out_start[n.0 as usize + 1] as usize;
        &self.out_links[s..e]
    }
    /// The links from node `from` to node `to` (parallel cables), in
    /// [`Topology::out_links`] order; a binary search over `from`'s links.
    pub fn links_to(&self, from: NodeId, to: NodeId) -> &[LinkId] {
        let s = self.out_start[from.0 as usize] as usize;
        let e = self.out_start[from.0 as usize + 1] as usize;
        let sorted = &self.out_by_to[s..e];
        let lo = sorted.partition_point(|l| self.links[l.0 as usize].to < to);
        let n = sorted[lo..]
            .iter()
            .take_while(|l| self.links[l.0 as usize].to == to)
            .count();
        &sorted[lo..lo + n]
    }
    /// The link with this id.
    #[inline]
    pub fn link(&self, l: LinkId) -> &Link {
        &self.links[l.0 as usize]
    }
    /// The node with this id.
    #[inline]
    pub fn node(&self, n: NodeId) -> &Node {
        &self.nodes[n.0 as usize]
    }
    /// Whether the link currently carries traffic.
    pub fn is_link_up(&self, l: LinkId) -> bool {
        self.link_up[l.0 as usize]
    }
    /// The reverse direction of a duplex link (builders store pairs next to each other).
    pub fn reverse(&self, l: LinkId) -> LinkId {
        LinkId(l.0 ^ 1)
    }
    /// Number of switches (any tier).
    pub fn num_switches(&self) -> usize {
        self.n_switches
    }
    /// NIC record of a NIC node, if it is one.
    pub fn nic_of_node(&self, n: NodeId) -> Option<&NicPorts> {
        match self.nic_index.get(n.0 as usize) {
            Some(&i) if i != u32::MAX => Some(&self.nics[i as usize]),
            _ => None,
        }
    }

    /// All network ports of a NIC node (one per plane, two per plane with
    /// `dual_tor`); empty if the node is not a NIC.
    pub fn nic_ports(&self, n: NodeId) -> &[NicPorts] {
        match self.nic_index.get(n.0 as usize) {
            Some(&i) if i != u32::MAX => {
                let i = i as usize;
                let end = (i + self.ports_per_nic as usize).min(self.nics.len());
                &self.nics[i..end]
            }
            _ => &[],
        }
    }

    /// Network ports of every NIC: `topology.planes`, twice that with
    /// `dual_tor`; 1 on a plain fabric.
    pub fn ports_per_nic(&self) -> u32 {
        self.ports_per_nic
    }

    /// NICs (not ports) of each host.
    pub fn nics_per_host(&self) -> u32 {
        (self.nics.len() as u32 / self.ports_per_nic.max(1) / self.hosts.max(1)).max(1)
    }

    /// Takes a link (and its reverse) down or up and recomputes the routes.
    /// Traffic already on the link is the backend's business.
    pub fn set_link_up(&mut self, l: LinkId, up: bool) {
        self.alike = std::sync::OnceLock::new();
        self.link_up[l.0 as usize] = up;
        let rev = self.reverse(l);
        self.link_up[rev.0 as usize] = up;
        self.compute_distances();
        if let Some(mut df) = self.dragonfly.take() {
            df.recompute(self);
            self.dragonfly = Some(df);
        }
    }

    /// The group tables of a dragonfly; `None` for other shapes.
    pub fn dragonfly(&self) -> Option<&dragonfly::Groups> {
        self.dragonfly.as_deref()
    }

    /// Sets how routes cross a dragonfly's groups. A topology that is not a
    /// dragonfly keeps shortest paths whatever the value.
    pub fn set_dragonfly_routing(&mut self, r: DragonflyRouting) {
        if self.dragonfly.is_some() {
            self.df_routing = r;
        }
    }

    /// How routes cross a dragonfly's groups ([`DragonflyRouting::Shortest`]
    /// on other shapes).
    pub fn dragonfly_routing(&self) -> DragonflyRouting {
        self.df_routing
    }

    /// The Valiant intermediate router (index `group·a + router`) for traffic
    /// from GPU `src` to GPU `dst` drawn from `k`
    /// ([`dragonfly::Groups::intermediate`]); `None` off a dragonfly, inside
    /// one group, with fewer than three groups, or when the draw falls in the
    /// source group (the route is then minimal).
    pub fn valiant_router(&self, src: GpuId, dst: GpuId, k: u64) -> Option<u32> {
        let (df, sg, dg) = self.df_groups(src, dst)?;
        df.intermediate(sg, dg, k)
    }

    /// UGAL's non-minimal candidate router for traffic from GPU `src` to GPU
    /// `dst` drawn from `k` ([`dragonfly::Groups::detour`]: through one of the
    /// groups that are neither source nor destination); `None` off a
    /// dragonfly, inside one group, or with fewer than three groups.
    pub fn ugal_detour(&self, src: GpuId, dst: GpuId, k: u64) -> Option<u32> {
        let (df, sg, dg) = self.df_groups(src, dst)?;
        df.detour(sg, dg, k)
    }

    /// The dragonfly and the groups of two GPUs' edge routers.
    fn df_groups(&self, src: GpuId, dst: GpuId) -> Option<(&dragonfly::Groups, u32, u32)> {
        let df = self.dragonfly.as_deref()?;
        let sg = df.group_of(self.edge_of(src)?)?;
        let dg = df.group_of(self.edge_of(dst)?)?;
        Some((df, sg, dg))
    }

    /// The edge switch of a GPU's NIC.
    fn edge_of(&self, g: GpuId) -> Option<NodeId> {
        let p = self.gpus.get(g.0 as usize)?;
        self.nic_of_node(p.nic).map(|n| n.leaf)
    }

    /// Next hops from `at` towards `dst` that first reach router index `via`
    /// (while `*via` is `Some`: [`dragonfly::Groups::toward_router`]), else
    /// [`Topology::next_hops`]; clears `*via` once `at` is that router (or no
    /// link leads there).
    pub fn next_hops_via(
        &self,
        at: NodeId,
        dst: GpuId,
        via: &mut Option<u32>,
        out: &mut Vec<LinkId>,
    ) {
        if let (Some(v), Some(df)) = (*via, self.dragonfly.as_deref()) {
            if df.group_of(at).is_some() {
                let c = df.toward_router(at, v);
                if !c.is_empty() {
                    out.extend_from_slice(c);
                    return;
                }
                *via = None;
            }
        }
        self.next_hops(at, dst, out);
    }

    /// Equal-cost next hops from node `at` towards GPU `dst`, appended to `out`.
    /// Empty when `at` is `dst` or `dst` is unreachable.
    pub fn next_hops(&self, at: NodeId, dst: GpuId, out: &mut Vec<LinkId>) {
        let dp = &self.gpus[dst.0 as usize];
        if at == dp.node {
            return;
        }
        match self.nodes[at.0 as usize].kind {
            NodeKind::Gpu { gpu } => {
                let sp = &self.gpus[gpu.0 as usize];
                if self.host_of(gpu) == self.host_of(dst) {
                    out.push(sp.nvlink_up);
                } else {
                    out.push(sp.pcie_up);
                }
            }
            NodeKind::NvSwitch { .. } => out.push(dp.nvlink_down),
            NodeKind::Nic { .. } => {
                if at == dp.nic {
                    out.push(dp.pcie_down);
                } else {
                    let ports = self.nic_ports(at);
                    if let [nic] = ports {
                        if self.is_link_up(nic.uplink) {
                            out.push(nic.uplink);
                        }
                        return;
                    }
                    // several ports (planes, dual ToR): those whose edge
                    // switch is nearest the destination, ECMP among them
                    let mut best = UNREACHABLE;
                    for p in ports {
                        if self.is_link_up(p.uplink) {
                            best = best.min(self.hops_to_nic(p.leaf, dp.nic));
                        }
                    }
                    if best == UNREACHABLE {
                        return;
                    }
                    for p in ports {
                        if self.is_link_up(p.uplink) && self.hops_to_nic(p.leaf, dp.nic) == best {
                            out.push(p.uplink);
                        }
                    }
                }
            }
            NodeKind::Switch { .. } => {
                let dports = self.nic_ports(dp.nic);
                if dports.len() > 1 {
                    self.next_hops_multi(at, dp.nic, out);
                    return;
                }
                let dnic = self.nic_of_node(dp.nic).expect("GPU's NIC has a record");
                if at == dnic.leaf {
                    if self.is_link_up(dnic.downlink) {
                        out.push(dnic.downlink);
                    }
                    return;
                }
                if self.df_routing != DragonflyRouting::Shortest {
                    if let Some(df) = self.dragonfly.as_deref() {
                        if let (Some(here), Some(there)) = (df.group_of(at), df.group_of(dnic.leaf))
                        {
                            let c = df.toward(at, there);
                            if here != there && !c.is_empty() {
                                out.extend_from_slice(c);
                                return;
                            }
                        }
                    }
                }
                let leaf = self.leaf_index[dnic.leaf.0 as usize] as usize;
                let row = &self.dist[leaf * self.n_switches..(leaf + 1) * self.n_switches];
                let here = row[self.switch_index[at.0 as usize] as usize];
                if here == UNREACHABLE {
                    return;
                }
                if here == 1 {
                    // One hop from the destination's edge switch, the only
                    // switch at distance 0: the next hops are the up links to
                    // it, in `out_links` order like the scan below, found by a
                    // binary search instead of a look at every port. Profile of
                    // the 131,072-GPU flow benchmark: 34% of the run was that
                    // scan on its 4,096-port spines (routes and the tuner).
                    for &l in self.links_to(at, dnic.leaf) {
                        if self.link_up[l.0 as usize] {
                            out.push(l);
                        }
                    }
                    return;
                }
                for &l in self.out_links(at) {
                    if !self.link_up[l.0 as usize] {
                        continue;
                    }
                    let to = self.links[l.0 as usize].to;
                    let si = self.switch_index[to.0 as usize];
                    if si != u32::MAX && row[si as usize] + 1 == here {
                        out.push(l);
                    }
                }
            }
        }
    }

    /// Switch hops from switch `at` to NIC node `nic` through the nearest of
    /// its ports whose down link is up, counting that link (1 from the port's
    /// own edge switch); [`UNREACHABLE`] when none leads there.
    fn hops_to_nic(&self, at: NodeId, nic: NodeId) -> u8 {
        let Some(&si) = self.switch_index.get(at.0 as usize) else {
            return UNREACHABLE;
        };
        if si == u32::MAX {
            return UNREACHABLE;
        }
        let mut best = UNREACHABLE;
        for p in self.nic_ports(nic) {
            if !self.is_link_up(p.downlink) {
                continue;
            }
            let li = self.leaf_index[p.leaf.0 as usize] as usize;
            let d = self.dist[li * self.n_switches + si as usize];
            if d != UNREACHABLE {
                best = best.min(d.saturating_add(1));
            }
        }
        best
    }

    /// [`Topology::next_hops`] at switch `at` towards a NIC with several
    /// ports: down a port whose edge switch `at` is, else every up link to a
    /// switch one hop nearer the nearest port that is up.
    fn next_hops_multi(&self, at: NodeId, nic: NodeId, out: &mut Vec<LinkId>) {
        for p in self.nic_ports(nic) {
            if p.leaf == at && self.is_link_up(p.downlink) {
                out.push(p.downlink);
                return;
            }
        }
        let here = self.hops_to_nic(at, nic);
        if here == UNREACHABLE {
            return;
        }
        for &l in self.out_links(at) {
            if !self.link_up[l.0 as usize] {
                continue;
            }
            let to = self.links[l.0 as usize].to;
            if self.switch_index[to.0 as usize] != u32::MAX
                && self.hops_to_nic(to, nic).saturating_add(1) == here
            {
                out.push(l);
            }
        }
    }

    /// The ECMP path from `src` to `dst` for a flow whose hash is `flow_hash`,
    /// written into `out` (cleared first). Returns false if `dst` is unreachable.
    /// Under [`DragonflyRouting::Valiant`] the path goes through the
    /// intermediate router the hash draws ([`Topology::valiant_router`]); under
    /// UGAL it is the minimal path (the choice needs load, which the caller has).
    pub fn route(&self, src: GpuId, dst: GpuId, flow_hash: u64, out: &mut Vec<LinkId>) -> bool {
        let via = if self.df_routing == DragonflyRouting::Valiant {
            self.valiant_router(src, dst, mix64(flow_hash ^ VALIANT_SALT))
        } else {
            None
        };
        self.route_via(src, dst, via, flow_hash, out)
    }

    /// The path from `src` to `dst` through dragonfly router index `via` (minimal to
    /// it, then minimal to `dst`; `None`: no detour), ECMP over ties by
    /// `flow_hash`, written into `out` (cleared first). Returns false if `dst`
    /// is unreachable.
    pub fn route_via(
        &self,
        src: GpuId,
        dst: GpuId,
        mut via: Option<u32>,
        flow_hash: u64,
        out: &mut Vec<LinkId>,
    ) -> bool {
        out.clear();
        let mut cands = Vec::with_capacity(8);
        let mut at = self.gpus[src.0 as usize].node;
        let target = self.gpus[dst.0 as usize].node;
        let mut guard = 0;
        while at != target {
            cands.clear();
            self.next_hops_via(at, dst, &mut via, &mut cands);
            if cands.is_empty() || guard > 64 {
                return false;
            }
            let pick = if cands.len() == 1 {
                cands[0]
            } else {
                // multiply-shift, as the packet level's switches pick
                let h = mix64(flow_hash ^ ((at.0 as u64) << 32));
                cands[((h as u128 * cands.len() as u128) >> 64) as usize]
            };
            out.push(pick);
            at = self.links[pick.0 as usize].to;
            guard += 1;
        }
        true
    }

    /// The share of one unit of traffic from `src` to `dst` that each link carries
    /// when ECMP spreads it evenly (a fluid split at every switch over its
    /// equal-cost next hops), appended to `out` as `(link, share)`; the shares
    /// leaving a node add up to what reached it. Under
    /// [`DragonflyRouting::Valiant`] the unit is first split as the intermediate
    /// is drawn ([`dragonfly::Groups::intermediate`]): `1/g` minimal (a draw in
    /// the source group), `1/g` through each other group, that group's share
    /// evenly over its routers (at most [`VALIANT_SPREAD`] intermediate routers
    /// in all, evenly spaced over the groups and then the routers) (a link may
    /// then appear more than once: add its shares). Returns false if `dst` is
    /// unreachable. The analytical fidelity uses it for a contention bound that
    /// no hash can beat.
    pub fn spread(&self, src: GpuId, dst: GpuId, out: &mut Vec<(LinkId, f64)>) -> bool {
        if self.df_routing == DragonflyRouting::Valiant {
            if let Some((df, sg, dg)) = self.df_groups(src, dst) {
                if sg != dg {
                    let (g, a) = (u64::from(df.groups), u64::from(df.routers_per_group));
                    // a large dragonfly has thousands of routers: at most
                    // VALIANT_SPREAD of them, whole groups first
                    let others = g - 1;
                    let groups = others.min(u64::from(VALIANT_SPREAD));
                    let per = (u64::from(VALIANT_SPREAD) / groups).clamp(1, a);
                    let w_min = 1.0 / g as f64;
                    let w = (1.0 - w_min) / (groups * per) as f64;
                    if !self.spread_via(src, dst, None, w_min, out) {
                        return false;
                    }
                    for i in 0..groups {
                        // the i-th of the g − 1 other groups, evenly spaced
                        let mut x = i * others / groups;
                        if x >= u64::from(sg) {
                            x += 1;
                        }
                        for j in 0..per {
                            // rotated by the group, so that one router per
                            // group is not always router 0
                            let r = (j * a / per + x) % a;
                            if !self.spread_via(src, dst, Some((x * a + r) as u32), w, out) {
                                return false;
                            }
                        }
                    }
                    return true;
                }
            }
        }
        self.spread_via(src, dst, None, 1.0, out)
    }

    /// [`Topology::spread`] of `weight` units through group `via`.
    fn spread_via(
        &self,
        src: GpuId,
        dst: GpuId,
        via: Option<u32>,
        weight: f64,
        out: &mut Vec<(LinkId, f64)>,
    ) -> bool {
        let target = self.gpus[dst.0 as usize].node;
        let mut frontier: Vec<(NodeId, f64, Option<u32>)> =
            vec![(self.gpus[src.0 as usize].node, weight, via)];
        let mut next: Vec<(NodeId, f64, Option<u32>)> = Vec::new();
        let mut cands = Vec::with_capacity(8);
        let mut guard = 0;
        // paths of a dragonfly's group routings differ in length: what has
        // arrived waits at the target, merged into one entry
        while frontier.iter().any(|e| e.0 != target) {
            if guard > 64 {
                return false;
            }
            guard += 1;
            next.clear();
            for &(at, w, v) in &frontier {
                if at == target {
                    match next.iter_mut().find(|(n, _, _)| *n == target) {
                        Some(e) => e.1 += w,
                        None => next.push((at, w, None)),
                    }
                    continue;
                }
                cands.clear();
                let mut v = v;
                self.next_hops_via(at, dst, &mut v, &mut cands);
                if cands.is_empty() {
                    return false;
                }
                let share = w / cands.len() as f64;
                for &l in &cands {
                    out.push((l, share));
                    let to = self.links[l.0 as usize].to;
                    match next.iter_mut().find(|(n, _, nv)| *n == to && *nv == v) {
                        Some(e) => e.1 += share,
                        None => next.push((to, share, v)),
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
        }
        true
    }

    /// Latency of a path: link propagation plus the forwarding latency of every
    /// node traversed between the ends.
    pub fn path_latency(&self, path: &[LinkId]) -> SimTime {
        let mut t = SimTime::ZERO;
        for (i, &l) in path.iter().enumerate() {
            let link = &self.links[l.0 as usize];
            t += link.latency;
            if i + 1 < path.len() {
                t += self.nodes[link.to.0 as usize].latency;
            }
        }
        t
    }

    /// Declares whether the switches support in-network reduction (SHARP).
    pub fn set_sharp(&mut self, on: bool) {
        self.sharp = on;
    }

    /// Sets the queue pairs per connection (at least 1).
    pub fn set_qps_per_connection(&mut self, qps: u8) {
        self.qps_per_connection = qps.max(1);
    }

    /// Declares whether the NVSwitches reduce and multicast (NVLS).
    pub fn set_nvls(&mut self, on: bool) {
        self.nvls = on;
    }

    /// Limits the aggregation trees one switch serves at once (0: none at all).
    pub fn set_sharp_groups(&mut self, groups: u32) {
        self.sharp_groups = groups;
    }

    /// The links of one hop between adjacent nodes, written into `out` (cleared
    /// first): GPU → its NVSwitch is `[nvlink_up]` and back `[nvlink_down]`,
    /// GPU → the edge switch of its NIC is `[pcie_up, nic uplink]`, that
    /// switch → the GPU is `[nic downlink, pcie_down]`, and switch → switch is the
    /// lowest-index up link between them. Returns false (and leaves `out` empty)
    /// when the nodes are not adjacent in that sense or the hop is down.
    pub fn hop_path(&self, src: NodeId, dst: NodeId, out: &mut Vec<LinkId>) -> bool {
        out.clear();
        let kind = |n: NodeId| self.nodes.get(n.0 as usize).map(|x| x.kind);
        let ok = match (kind(src), kind(dst)) {
            (Some(NodeKind::Gpu { gpu }), Some(NodeKind::Switch { .. })) => {
                let p = &self.gpus[gpu.0 as usize];
                match self.nic_of_node(p.nic) {
                    Some(nic) if nic.leaf == dst => {
                        out.extend([p.pcie_up, nic.uplink]);
                        true
                    }
                    _ => false,
                }
            }
            (Some(NodeKind::Switch { .. }), Some(NodeKind::Gpu { gpu })) => {
                let p = &self.gpus[gpu.0 as usize];
                match self.nic_of_node(p.nic) {
                    Some(nic) if nic.leaf == src => {
                        out.extend([nic.downlink, p.pcie_down]);
                        true
                    }
                    _ => false,
                }
            }
            (Some(NodeKind::Gpu { gpu }), Some(NodeKind::NvSwitch { .. })) => {
                let up = self.gpus[gpu.0 as usize].nvlink_up;
                if self.link(up).to == dst {
                    out.push(up);
                }
                !out.is_empty()
            }
            (Some(NodeKind::NvSwitch { .. }), Some(NodeKind::Gpu { gpu })) => {
                let down = self.gpus[gpu.0 as usize].nvlink_down;
                if self.link(down).from == src {
                    out.push(down);
                }
                !out.is_empty()
            }
            (Some(NodeKind::Switch { .. }), Some(NodeKind::Switch { .. })) => {
                match self
                    .out_links(src)
                    .iter()
                    .find(|&&l| self.link(l).to == dst && self.is_link_up(l))
                {
                    Some(&l) => {
                        out.push(l);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        };
        if ok && out.iter().all(|&l| self.is_link_up(l)) {
            true
        } else {
            out.clear();
            false
        }
    }

    /// Latency of a [`Topology::hop_path`]: [`Topology::path_latency`] plus the
    /// forwarding latency of the receiving node when it is a switch (the time it
    /// takes to aggregate or replicate), picoseconds.
    pub fn hop_latency(&self, path: &[LinkId]) -> SimTime {
        let end = match path.last() {
            Some(&l) => self.link(l).to,
            None => return SimTime::ZERO,
        };
        let mut t = self.path_latency(path);
        if matches!(self.node(end).kind, NodeKind::Switch { .. }) {
            t += self.node(end).latency;
        }
        t
    }

    /// Hops from switch `from` down/across to edge switch `leaf` along shortest
    /// paths, `None` if either is not a switch of that kind or it is unreachable.
    pub fn switch_hops(&self, from: NodeId, leaf: NodeId) -> Option<u32> {
        let si = *self.switch_index.get(from.0 as usize)?;
        let li = *self.leaf_index.get(leaf.0 as usize)?;
        if si == u32::MAX || li == u32::MAX {
            return None;
        }
        match self.dist[li as usize * self.n_switches + si as usize] {
            UNREACHABLE => None,
            d => Some(u32::from(d)),
        }
    }

    /// Runs every NVLink link at `eff` of its rate (the share NCCL's copy and
    /// reduce kernels reach; `cluster.nvlink_efficiency`). 1.0 changes nothing.
    pub fn derate_nvlink(&mut self, eff: f64) {
        self.alike = std::sync::OnceLock::new();
        if eff < 1.0 {
            for l in self.links.iter_mut().filter(|l| l.kind == LinkKind::NvLink) {
                l.rate = l.rate.scaled(eff);
            }
        }
    }

    /// Runs the links between every NIC and its edge switch, both ways, at `eff`
    /// of their rate (NIC goodput with GPUDirect RDMA; `fabric.nic_efficiency`).
    /// 1.0 changes nothing.
    pub fn derate_nics(&mut self, eff: f64) {
        self.alike = std::sync::OnceLock::new();
        if eff < 1.0 {
            for i in 0..self.nics.len() {
                for l in [self.nics[i].uplink, self.nics[i].downlink] {
                    let link = &mut self.links[l.0 as usize];
                    link.rate = link.rate.scaled(eff);
                }
            }
        }
    }

    /// Runs every NIC of host `h` at `rate` (bits/s), both directions of its
    /// link to the edge switch (`[[fabric.nic_overrides]]`). A host out of
    /// range changes nothing.
    pub fn set_host_nic_rate(&mut self, h: u32, rate: Rate) {
        self.alike = std::sync::OnceLock::new();
        // the NIC table is host-major with the same count per host, so host
        // h's NICs are one contiguous run (no scan of every NIC per override)
        let per = self.nics.len() / (self.hosts.max(1) as usize);
        let start = (h as usize).saturating_mul(per);
        for i in start..start.saturating_add(per).min(self.nics.len()) {
            let nic = self.nics[i];
            if matches!(self.nodes[nic.node.0 as usize].kind, NodeKind::Nic { host, .. } if host == h)
            {
                self.links[nic.uplink.0 as usize].rate = rate;
                self.links[nic.downlink.0 as usize].rate = rate;
            }
        }
    }

    /// Runs directed link `l` at `rate` (bits/s): a rate fault or a test's
    /// link. Change rates through this (or the other `&mut self` methods), not
    /// by writing [`Topology::links`]: [`Topology::path_cost`] keeps whether
    /// all equal-cost paths are alike, and a direct write would leave that stale.
    pub fn set_link_rate(&mut self, l: LinkId, rate: Rate) {
        self.alike = std::sync::OnceLock::new();
        self.links[l.0 as usize].rate = rate;
    }

    /// The class of a network link ([`LinkTier::name`]); `None` for NVLink
    /// and PCIe links.
    pub fn link_class(&self, l: LinkId) -> Option<String> {
        let link = self.link(l);
        if link.kind != LinkKind::Network {
            return None;
        }
        let tier = |n: NodeId| match self.node(n).kind {
            NodeKind::Switch { tier } => Some(tier),
            _ => None,
        };
        let (Some(a), Some(b)) = (tier(link.from), tier(link.to)) else {
            return Some("host".into());
        };
        if let Some(df) = self.dragonfly() {
            if let (Some(ga), Some(gb)) = (df.group_of(link.from), df.group_of(link.to)) {
                return Some(if ga == gb { "local" } else { "global" }.into());
            }
        }
        Some(match (a.min(b), a.max(b)) {
            (0, 1) => "uplink".into(),
            (1, 2) => "spine".into(),
            (lo, hi) => format!("tier {lo}-{hi}"),
        })
    }

    /// The network link classes, in order of first appearance (host links
    /// first), with their duplex link counts and rates.
    pub fn link_tiers(&self) -> Vec<LinkTier> {
        let mut out: Vec<LinkTier> = Vec::new();
        for i in (0..self.links.len()).step_by(2) {
            let Some(name) = self.link_class(LinkId(i as u32)) else {
                continue;
            };
            let r = self.links[i].rate.min(self.links[i + 1].rate);
            let m = self.links[i].rate.max(self.links[i + 1].rate);
            match out.iter_mut().find(|t| t.name == name) {
                Some(t) => {
                    t.links += 1;
                    t.min_rate = t.min_rate.min(r);
                    t.max_rate = t.max_rate.max(m);
                }
                None => out.push(LinkTier {
                    name,
                    links: 1,
                    min_rate: r,
                    max_rate: m,
                }),
            }
        }
        out.sort_by_key(|t| t.name != "host");
        out
    }

    /// Oversubscription of each switch tier that has links up: the line rate
    /// into the tier from below (NICs and lower tiers) over the line rate out of
    /// it to higher tiers, summed over the tier's switches, as (tier, ratio);
    /// 1.0 is non-blocking, 2.0 means the tier's uplinks carry half of what its
    /// down links can bring. A dragonfly (all routers at tier 0) has none.
    pub fn oversubscription(&self) -> Vec<(u8, f64)> {
        let tier = |n: NodeId| match self.node(n).kind {
            NodeKind::Switch { tier } => Some(tier),
            _ => None,
        };
        let mut down = std::collections::BTreeMap::<u8, f64>::new();
        let mut up = std::collections::BTreeMap::<u8, f64>::new();
        for l in self.links.iter().filter(|l| l.kind == LinkKind::Network) {
            let Some(to) = tier(l.to) else { continue };
            match tier(l.from) {
                None => *down.entry(to).or_default() += l.rate.0 as f64,
                Some(from) if from < to => *down.entry(to).or_default() += l.rate.0 as f64,
                Some(from) if from > to => *up.entry(to).or_default() += l.rate.0 as f64,
                Some(_) => {}
            }
        }
        up.iter()
            .filter_map(|(&t, &u)| Some((t, *down.get(&t)? / u)).filter(|_| u > 0.0))
            .collect()
    }

    /// Sets the payload fraction of network links (see [`Topology::network_efficiency`]).
    pub fn set_network_efficiency(&mut self, eff: f64) {
        self.network_efficiency = eff;
    }

    /// The payload rate a link delivers: its line rate, less header overhead on
    /// network links.
    #[inline]
    pub fn effective_rate(&self, l: LinkId) -> Rate {
        let link = &self.links[l.0 as usize];
        match link.kind {
            LinkKind::Network if self.network_efficiency < 1.0 => {
                link.rate.scaled(self.network_efficiency)
            }
            _ => link.rate,
        }
    }

    /// The slowest payload rate along a path (see [`Topology::effective_rate`]).
    pub fn path_bottleneck(&self, path: &[LinkId]) -> Rate {
        path.iter()
            .map(|&l| self.effective_rate(l))
            .min()
            .unwrap_or(Rate(u64::MAX))
    }

    /// Latency and bottleneck rate of what ECMP does between two GPUs; `None`
    /// if unreachable. A flow's hash picks one of the equal-cost next hops at
    /// every switch with equal chance ([`Topology::route`]), so a transfer
    /// of `b` bytes takes, in expectation over the hash, `Σ pᵢ·(αᵢ + b/Bᵢ)`
    /// over the paths `i` it may take (`pᵢ` the product of `1/choices` along
    /// the path, `αᵢ` its latency, `Bᵢ` its bottleneck): this returns
    /// `(Σ pᵢ·αᵢ, 1/Σ(pᵢ/Bᵢ))` (the expected latency and the rate that gives
    /// the expected transfer time, the paths' harmonic mean). Where every
    /// path has the same latency and bottleneck (the built shapes: every tier
    /// has one rate and a NIC override is on both ends' every path) that is
    /// the one path's, to the picosecond. On a topology file, or with a link
    /// degraded, equal-cost paths may differ in rate or latency. A dragonfly's
    /// group routings (paths may differ by a local hop; Valiant detours by
    /// hash) keep the path of hash 0.
    pub fn path_cost(&self, src: GpuId, dst: GpuId) -> Option<(SimTime, Rate)> {
        let mut p = Vec::with_capacity(8);
        if !self.route(src, dst, 0, &mut p) {
            return None;
        }
        let first = (self.path_latency(&p), self.path_bottleneck(&p));
        if self.dragonfly.is_some() || self.paths_alike() {
            return Some(first);
        }
        Some(self.ecmp_expectation(src, dst).unwrap_or(first))
    }

    /// Whether every set of equal-cost paths between two GPUs is alike in
    /// latency and bottleneck, so [`Topology::path_cost`] may take one path
    /// instead of walking them all (the walk visits every switch of every
    /// tier on the way: at 131,072 GPUs the collective tuner's millions of
    /// calls took longer than the simulation). Decided once per link state
    /// and conservatively: links are classed by their ends (a switch by its
    /// tier, anything in a host by host and kind), and the answer is yes when
    /// every class has one rate, latency and kind, every class of node one
    /// forwarding latency, and every switch-to-switch link joins adjacent
    /// tiers. Routes go up and then down ([`Topology::next_hops`]), so two
    /// equal-cost paths between the same GPUs then cross the same classes in
    /// the same order. Built shapes with one rate per tier and per host are
    /// alike; a degraded link, a topology file with uneven links, or
    /// switch-to-switch links within a tier are not, and take the walk.
    pub fn paths_alike(&self) -> bool {
        *self.alike.get_or_init(|| self.compute_paths_alike())
    }

    fn compute_paths_alike(&self) -> bool {
        use std::collections::HashMap;
        // (is a switch, tier or host, kind of node)
        let class = |n: NodeId| -> (bool, u32, u8) {
            match self.nodes[n.0 as usize].kind {
                NodeKind::Switch { tier } => (true, tier as u32, 0),
                NodeKind::Gpu { gpu } => (false, gpu.0 / self.gpus_per_host.max(1), 1),
                NodeKind::NvSwitch { host } => (false, host, 2),
                NodeKind::Nic { host, .. } => (false, host, 3),
            }
        };
        let mut node_latency: HashMap<(bool, u32, u8), SimTime> = HashMap::new();
        for i in 0..self.nodes.len() {
            let c = class(NodeId(i as u32));
            let lat = self.nodes[i].latency;
            if *node_latency.entry(c).or_insert(lat) != lat {
                return false;
            }
        }
        let mut links: HashMap<_, (Rate, SimTime, LinkKind)> = HashMap::new();
        for l in &self.links {
            let (a, b) = (class(l.from), class(l.to));
            if a.0 && b.0 && a.1.abs_diff(b.1) != 1 {
                return false;
            }
            let v = (l.rate, l.latency, l.kind);
            if *links.entry((a, b)).or_insert(v) != v {
                return false;
            }
        }
        true
    }

    /// [`Topology::path_cost`] over the ECMP path set from `src` to `dst`:
    /// the paths walked together hop by hop, merged where they reach the same
    /// node with the same bottleneck so far (a fat-tree's thousands of paths
    /// collapse to a few entries per switch). `None` if a branch dead-ends.
    fn ecmp_expectation(&self, src: GpuId, dst: GpuId) -> Option<(SimTime, Rate)> {
        /// Paths that reached node `at` with bottleneck `rate` so far:
        /// their probability `p`, their latency so far weighted by it
        /// (`lat`), and its least and greatest value.
        #[derive(Clone, Copy)]
        struct Bundle {
            at: NodeId,
            rate: u64,
            p: f64,
            lat: f64,
            lo: u64,
            hi: u64,
        }
        let target = self.gpus[dst.0 as usize].node;
        let mut front = vec![Bundle {
            at: self.gpus[src.0 as usize].node,
            rate: u64::MAX,
            p: 1.0,
            lat: 0.0,
            lo: 0,
            hi: 0,
        }];
        let mut next: Vec<Bundle> = Vec::new();
        let mut arrived: Vec<Bundle> = Vec::new();
        let mut cands = Vec::with_capacity(8);
        let mut guard = 0;
        while !front.is_empty() {
            guard += 1;
            if guard > 64 {
                return None;
            }
            next.clear();
            for e in &front {
                cands.clear();
                self.next_hops(e.at, dst, &mut cands);
                if cands.is_empty() {
                    return None;
                }
                let n = cands.len() as f64;
                let share = e.p / n;
                for &l in &cands {
                    let link = &self.links[l.0 as usize];
                    let to = link.to;
                    let add = link.latency.0
                        + if to == target {
                            0
                        } else {
                            self.nodes[to.0 as usize].latency.0
                        };
                    let b = Bundle {
                        at: to,
                        rate: e.rate.min(self.effective_rate(l).0),
                        p: share,
                        lat: e.lat / n + share * add as f64,
                        lo: e.lo + add,
                        hi: e.hi + add,
                    };
                    if to == target {
                        arrived.push(b);
                    } else {
                        next.push(b);
                    }
                }
            }
            next.sort_unstable_by_key(|b| (b.at.0, b.rate));
            front.clear();
            for b in next.drain(..) {
                match front.last_mut() {
                    Some(f) if f.at == b.at && f.rate == b.rate => {
                        f.p += b.p;
                        f.lat += b.lat;
                        f.lo = f.lo.min(b.lo);
                        f.hi = f.hi.max(b.hi);
                    }
                    _ => front.push(b),
                }
            }
        }
        let first = arrived.first()?;
        if arrived
            .iter()
            .all(|b| b.rate == first.rate && b.lo == first.lo && b.hi == first.lo)
        {
            // every path alike: exactly its cost (no rounding)
            return Some((SimTime(first.lo), Rate(first.rate)));
        }
        let lat: f64 = arrived.iter().map(|b| b.lat).sum();
        let inv: f64 = arrived.iter().map(|b| b.p / b.rate as f64).sum();
        Some((
            SimTime(lat.round() as u64),
            Rate((1.0 / inv).round() as u64),
        ))
    }

    /// Recomputes the per-leaf hop distances over up links (BFS from each leaf).
    fn compute_distances(&mut self) {
        let ns = self.n_switches;
        let nl = self.leaves.len();
        self.dist.clear();
        self.dist.resize(ns * nl, UNREACHABLE);
        // Reverse adjacency among switches: for BFS *to* a leaf we walk links backwards.
        let mut in_start = vec![0u32; ns + 1];
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for (i, l) in self.links.iter().enumerate() {
            if !self.link_up[i] {
                continue;
            }
            let (a, b) = (
                self.switch_index[l.from.0 as usize],
                self.switch_index[l.to.0 as usize],
            );
            if a != u32::MAX && b != u32::MAX {
                edges.push((b, a));
                in_start[b as usize + 1] += 1;
            }
        }
        for i in 0..ns {
            in_start[i + 1] += in_start[i];
        }
        let mut fill = in_start.clone();
        let mut preds = vec![0u32; edges.len()];
        for &(b, a) in &edges {
            preds[fill[b as usize] as usize] = a;
            fill[b as usize] += 1;
        }
        // Bit-parallel BFS: 64 leaves per pass, one bit each, so a pass costs one sweep
        // over the switch links per hop level instead of one BFS per leaf. On a
        // 131,072-GPU rail fabric (4,096 leaves) this is ~64x fewer edge visits.
        let mut visited = vec![0u64; ns];
        let mut frontier = vec![0u64; ns];
        let mut next = vec![0u64; ns];
        for base in (0..nl).step_by(64) {
            let width = (nl - base).min(64);
            visited.iter_mut().for_each(|v| *v = 0);
            frontier.iter_mut().for_each(|v| *v = 0);
            for bit in 0..width {
                let sw = self.switch_index[self.leaves[base + bit].0 as usize] as usize;
                frontier[sw] |= 1u64 << bit;
                visited[sw] |= 1u64 << bit;
                self.dist[(base + bit) * ns + sw] = 0;
            }
            let mut level: u8 = 0;
            loop {
                level += 1;
                if level == UNREACHABLE {
                    break;
                }
                next.iter_mut().for_each(|v| *v = 0);
                let mut any = false;
                for sw in 0..ns {
                    let f = frontier[sw];
                    if f == 0 {
                        continue;
                    }
                    for &p in &preds[in_start[sw] as usize..in_start[sw + 1] as usize] {
                        next[p as usize] |= f;
                    }
                }
                for sw in 0..ns {
                    let fresh = next[sw] & !visited[sw];
                    frontier[sw] = fresh;
                    if fresh != 0 {
                        any = true;
                        visited[sw] |= fresh;
                        let mut bits = fresh;
                        while bits != 0 {
                            let bit = bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            self.dist[(base + bit) * ns + sw] = level;
                        }
                    }
                }
                if !any {
                    break;
                }
            }
        }
    }
}

/// A test cluster of `hosts` × `gpus` GPUs on `spec`: [`builder::test_specs`]
/// with a NIC per GPU and NVLink's latency at 150 ns (the collective tests'
/// figures).
#[cfg(test)]
pub(crate) fn test_cluster(hosts: u32, gpus: u32, spec: &TopologySpec) -> Topology {
    let (mut c, f) = builder::test_specs(hosts, gpus);
    c.nics_per_host = gpus;
    c.nvlink_latency = SimTime::from_ns(150);
    build(&c, &f, spec).expect("test topology")
}
