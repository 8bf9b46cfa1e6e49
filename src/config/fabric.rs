//! `[fabric]`: the network technology, link rate and latencies, packet
//! format, routing, NIC goodput, queue pairs and SHARP. The packet-level keys
//! of `[fabric]` (buffers, PFC, ECN, congestion control) are in `packet.rs`.

use super::presets::{self, FabricPreset};
use super::raw::RawFabric;
use super::validate::Validator;
use super::{Fidelity, Scenario};
use crate::mechanism::defaults;
use crate::topology::FabricLinkSpec;
use crate::units::{Rate, SimTime};

/// The network technology, which decides flow control and loss at packet level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FabricKind {
    /// Credit-based link-level flow control, lossless.
    InfiniBand,
    /// RDMA over Converged Ethernet v2 (PFC, ECN, DCQCN).
    Roce,
    /// Lossy Ethernet with TCP.
    Ethernet,
}

impl FabricKind {
    /// Name in files and results.
    pub fn name(self) -> &'static str {
        match self {
            FabricKind::InfiniBand => "infiniband",
            FabricKind::Roce => "roce",
            FabricKind::Ethernet => "ethernet",
        }
    }
}

/// How a switch picks among equal-cost next hops, or (the last four, on a
/// dragonfly only) how routes cross its groups (Kim, Dally, Scott, Abts,
/// ISCA 2008, §4; see [`crate::topology::dragonfly`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Per-flow hash.
    Ecmp,
    /// Least-occupied queue, per packet.
    Adaptive,
    /// Random per packet.
    Spray,
    /// Least-occupied queue, per flowlet (a burst after an idle gap).
    Flowlet,
    /// Dragonfly minimal routing: at most one global link, ECMP hash over
    /// parallel global links.
    Minimal,
    /// Dragonfly Valiant routing through an intermediate router drawn over
    /// every router of the network (minimal when it falls in the source group).
    Valiant,
    /// Dragonfly UGAL-L: minimal or Valiant by local queue occupancy × hops.
    Ugal,
    /// Dragonfly UGAL-G: minimal or Valiant by the queues of the whole path
    /// (global information; the bound UGAL-L approximates).
    UgalG,
}

impl Routing {
    /// Name in files and results.
    pub fn name(self) -> &'static str {
        match self {
            Routing::Ecmp => "ecmp",
            Routing::Adaptive => "adaptive",
            Routing::Spray => "spray",
            Routing::Flowlet => "flowlet",
            Routing::Minimal => "minimal",
            Routing::Valiant => "valiant",
            Routing::Ugal => "ugal",
            Routing::UgalG => "ugal_g",
        }
    }

    /// The group routing of a dragonfly this value asks for (shortest paths
    /// for the equal-cost pickers).
    pub fn dragonfly(self) -> crate::topology::DragonflyRouting {
        use crate::topology::DragonflyRouting as D;
        match self {
            Routing::Ecmp | Routing::Adaptive | Routing::Spray | Routing::Flowlet => D::Shortest,
            Routing::Minimal => D::Minimal,
            Routing::Valiant => D::Valiant,
            Routing::Ugal => D::Ugal,
            Routing::UgalG => D::UgalG,
        }
    }
}

/// The checked `[fabric]`. Fields private to `config`: read through the
/// accessors below.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricSpec {
    /// Technology.
    pub(super) kind: FabricKind,
    /// Link rate and latencies, as the topology builders need them.
    pub(super) links: FabricLinkSpec,
    /// Largest payload per packet, bytes.
    pub(super) mtu: u64,
    /// Header bytes per packet on the wire.
    pub(super) header_bytes: u64,
    /// Next-hop choice.
    pub(super) routing: Routing,
    /// `fabric.sharp`: the switches can aggregate (InfiniBand SHARP). Used by the
    /// analytical and flow fidelities on InfiniBand only ([`FabricSpec::sharp_active`]).
    pub(super) sharp: bool,
    /// `fabric.sharp_groups`: aggregation trees one switch serves at once
    /// (u32::MAX when unset: no limit); see [`crate::collective::sharp::grant_trees`].
    pub(super) sharp_groups: u32,
    /// `fabric.nic_efficiency`: share of the payload rate the links between NICs
    /// and their switches carry (NIC goodput with GPUDirect RDMA), in (0, 1].
    pub(super) nic_efficiency: f64,
    /// `fabric.qps_per_connection`: queue pairs per connection between hosts
    /// (NCCL_IB_QPS_PER_CONNECTION, default 1); each is its own ECMP flow.
    pub(super) qps_per_connection: u8,
}

impl FabricSpec {
    /// Technology.
    #[inline]
    pub fn kind(&self) -> FabricKind {
        self.kind
    }

    /// Link rate and latencies, as the topology builders need them.
    #[inline]
    pub fn links(&self) -> &FabricLinkSpec {
        &self.links
    }

    /// Largest payload per packet, bytes.
    #[inline]
    pub fn mtu(&self) -> u64 {
        self.mtu
    }

    /// Header bytes per packet on the wire.
    #[inline]
    pub fn header_bytes(&self) -> u64 {
        self.header_bytes
    }

    /// Next-hop choice.
    #[inline]
    pub fn routing(&self) -> Routing {
        self.routing
    }

    /// `fabric.sharp`: the switches can aggregate (InfiniBand SHARP). Used by the
    /// analytical and flow fidelities on InfiniBand only ([`FabricSpec::sharp_active`]).
    #[inline]
    pub fn sharp(&self) -> bool {
        self.sharp
    }

    /// `fabric.sharp_groups`: aggregation trees one switch serves at once
    /// (u32::MAX when unset: no limit); see [`crate::collective::sharp::grant_trees`].
    #[inline]
    pub fn sharp_groups(&self) -> u32 {
        self.sharp_groups
    }

    /// `fabric.nic_efficiency`: share of the payload rate the links between NICs
    /// and their switches carry (NIC goodput with GPUDirect RDMA), in (0, 1].
    #[inline]
    pub fn nic_efficiency(&self) -> f64 {
        self.nic_efficiency
    }

    /// `fabric.qps_per_connection`: queue pairs per connection between hosts
    /// (NCCL_IB_QPS_PER_CONNECTION, default 1); each is its own ECMP flow.
    #[inline]
    pub fn qps_per_connection(&self) -> u8 {
        self.qps_per_connection
    }
}

impl FabricSpec {
    /// Whether in-network reduction runs: `fabric.sharp = true` on InfiniBand
    /// (SHARP is a feature of InfiniBand switches; elsewhere `sharp` falls back to ring).
    /// `fabric.sharp_groups = 0` leaves no room for any tree.
    pub fn sharp_active(&self) -> bool {
        self.sharp && self.kind == FabricKind::InfiniBand && self.sharp_groups > 0
    }

    /// Fraction of the line rate left for payload: mtu / (mtu + header).
    pub fn efficiency(&self) -> f64 {
        self.mtu as f64 / (self.mtu + self.header_bytes) as f64
    }
}

/// Most queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION; NCCL caps it
/// at 128, real deployments use 1 to 8).
pub const MAX_QPS: i64 = 16;

/// The `[fabric]` keys as checked one by one, before the scenario is
/// assembled: a `None` field was refused (its diagnostic already pushed).
pub(super) struct FabricParts {
    pub(super) kind: Option<FabricKind>,
    pub(super) link_rate: Option<Rate>,
    pub(super) mtu: Option<u64>,
    pub(super) header_bytes: Option<u64>,
    pub(super) link_latency: Option<SimTime>,
    pub(super) switch_latency: Option<SimTime>,
    pub(super) nic_efficiency: Option<f64>,
    pub(super) qps_per_connection: Option<u8>,
    pub(super) routing: Option<Routing>,
    /// `uplink_rate`, `spine_rate`, `global_rate` (each `None` when unset);
    /// `None` when one was refused.
    pub(super) tiers: Option<[Option<Rate>; 3]>,
    /// `[[fabric.nic_overrides]]`; `None` when an entry was refused.
    pub(super) nic_overrides: Option<Vec<crate::topology::NicOverride>>,
}

impl FabricParts {
    /// The fastest link rate of any tier or NIC override, link latency and
    /// switch latency, when all were accepted (what the PFC headroom rule
    /// needs: every port must absorb what its link has in flight).
    pub(super) fn link(&self) -> Option<(Rate, SimTime, SimTime)> {
        let fastest = self.links()?.fastest();
        self.link_latency
            .zip(self.switch_latency)
            .map(|(l, f)| (fastest, l, f))
    }

    /// The host link rate (`fabric.link_rate`): the line rate DCQCN's
    /// defaults scale with.
    pub(super) fn nic_rate(&self) -> Option<Rate> {
        self.link_rate
    }

    /// The link figures, when every one of them was accepted.
    fn links(&self) -> Option<FabricLinkSpec> {
        let [uplink_rate, spine_rate, global_rate] = self.tiers?;
        Some(FabricLinkSpec {
            link_rate: self.link_rate?,
            link_latency: self.link_latency?,
            switch_latency: self.switch_latency?,
            uplink_rate,
            spine_rate,
            global_rate,
            nic_overrides: self.nic_overrides.clone()?,
            // from [topology], set once it is checked
            planes: 1,
            dual_tor: false,
        })
    }

    /// Wire bytes of the largest packet, MTU + header.
    pub(super) fn max_packet(&self) -> Option<u64> {
        self.mtu.zip(self.header_bytes).map(|(m, h)| m + h)
    }

    /// The checked `[fabric]`, when every key of it was accepted.
    pub(super) fn spec(&self, f: &RawFabric, sharp_groups: Option<u32>) -> Option<FabricSpec> {
        Some(FabricSpec {
            kind: self.kind?,
            links: self.links()?,
            mtu: self.mtu?,
            header_bytes: self.header_bytes?,
            routing: self.routing?,
            sharp: f.sharp.unwrap_or(false),
            sharp_groups: sharp_groups?,
            nic_efficiency: self.nic_efficiency?,
            qps_per_connection: self.qps_per_connection?,
        })
    }
}

impl Validator<'_> {
    /// `fabric.preset`: an unknown name quiets the "missing" diagnostics of
    /// the fields it would have supplied (one mistake, one diagnostic).
    pub(super) fn fabric_preset(&mut self, f: &RawFabric) -> Option<&'static FabricPreset> {
        match f.preset.as_deref() {
            None => None,
            Some(name) => match presets::fabric(name) {
                Some(p) => Some(p),
                None => {
                    self.err(
                        "fabric.preset",
                        format!("{name:?}"),
                        format!("one of {}", presets::fabric_names()),
                    );
                    self.quiet_missing = true;
                    None
                }
            },
        }
    }

    /// The `[fabric]` keys every fidelity uses, each from the file, else the
    /// preset, else its default.
    pub(super) fn fabric(
        &mut self,
        f: &RawFabric,
        fab: Option<&'static FabricPreset>,
        file_rate: Option<Rate>,
    ) -> FabricParts {
        let kind_name = f.kind.as_deref().or(fab.map(|p| p.kind));
        let kind = match kind_name {
            Some("infiniband") => Some(FabricKind::InfiniBand),
            Some("roce") => Some(FabricKind::Roce),
            Some("ethernet") => Some(FabricKind::Ethernet),
            Some(other) => {
                self.err(
                    "fabric.kind",
                    format!("{other:?}"),
                    "one of \"infiniband\", \"roce\", \"ethernet\"",
                );
                None
            }
            None => {
                self.err(
                    "fabric.kind",
                    "nothing",
                    format!(
                        "\"infiniband\", \"roce\" or \"ethernet\" (or a preset: {})",
                        presets::fabric_names()
                    ),
                );
                None
            }
        };
        let file_rate = file_rate.map(|r| format!("{}bps", r.0));
        let link_rate = self.rate(
            "fabric.link_rate",
            f.link_rate.as_ref(),
            fab.map(|p| p.link_rate).or(file_rate.as_deref()),
        );
        let default_mtu = defaults::MTU.to_string();
        let mtu = self.size(
            "fabric.mtu",
            f.mtu.as_ref(),
            Some(fab.map_or(default_mtu.as_str(), |p| p.mtu)),
            64,
        );
        if let Some(m) = mtu {
            if m > defaults::MAX_MTU {
                self.err("fabric.mtu", m.to_string(), "an MTU of at most 64KiB");
            }
        }
        let header_bytes = match f.header_bytes {
            Some(h) if !(0..=defaults::MAX_HEADER_BYTES as i64).contains(&h) => {
                self.err(
                    "fabric.header_bytes",
                    h.to_string(),
                    "header bytes per packet between 0 and 4096",
                );
                None
            }
            Some(h) => Some(h as u64),
            None => Some(fab.map_or_else(
                || presets::default_header(kind_name.unwrap_or("")),
                |p| p.header_bytes,
            )),
        };
        let link_latency = self.time(
            "fabric.link_latency",
            f.link_latency.as_ref(),
            Some(fab.map_or("50ns", |p| p.link_latency)),
        );
        let switch_latency = self.time(
            "fabric.switch_latency",
            f.switch_latency.as_ref(),
            Some(fab.map_or("300ns", |p| p.switch_latency)),
        );
        let nic_efficiency = self.efficiency(
            "fabric.nic_efficiency",
            f.nic_efficiency,
            fab.map_or(1.0, |p| p.nic_efficiency),
        );
        let qps_per_connection = match f.qps_per_connection {
            None => Some(1u8),
            Some(q) if (1..=MAX_QPS).contains(&q) => Some(q as u8),
            Some(q) => {
                self.err(
                    "fabric.qps_per_connection",
                    q.to_string(),
                    format!("a whole number of queue pairs from 1 to {MAX_QPS}"),
                );
                None
            }
        };
        let routing = match f.routing.as_deref().unwrap_or("ecmp") {
            "ecmp" => Some(Routing::Ecmp),
            "adaptive" => Some(Routing::Adaptive),
            "spray" => Some(Routing::Spray),
            "flowlet" => Some(Routing::Flowlet),
            "minimal" => Some(Routing::Minimal),
            "valiant" => Some(Routing::Valiant),
            "ugal" => Some(Routing::Ugal),
            "ugal_g" => Some(Routing::UgalG),
            other => {
                self.err(
                    "fabric.routing",
                    format!("{other:?}"),
                    "one of \"ecmp\", \"adaptive\", \"spray\", \"flowlet\", or on a dragonfly \"minimal\", \"valiant\", \"ugal\", \"ugal_g\"",
                );
                None
            }
        };
        let mut tiers = Some([None; 3]);
        for (i, (key, v)) in [
            ("fabric.uplink_rate", &f.uplink_rate),
            ("fabric.spine_rate", &f.spine_rate),
            ("fabric.global_rate", &f.global_rate),
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(v) = v {
                match self.rate(key, Some(v), None) {
                    Some(r) => {
                        if let Some(t) = tiers.as_mut() {
                            t[i] = Some(r);
                        }
                    }
                    None => tiers = None,
                }
            }
        }
        let nic_overrides = self.nic_overrides(f);
        FabricParts {
            kind,
            tiers,
            nic_overrides,
            link_rate,
            mtu,
            header_bytes,
            link_latency,
            switch_latency,
            nic_efficiency,
            qps_per_connection,
            routing,
        }
    }

    /// `[[fabric.nic_overrides]]`: each entry a non-empty list of node indices
    /// and a rate. Whether the nodes exist is checked once the cluster is
    /// known ([`Validator::check_nic_overrides`]).
    fn nic_overrides(&mut self, f: &RawFabric) -> Option<Vec<crate::topology::NicOverride>> {
        let mut out = Vec::new();
        let mut ok = true;
        for (i, o) in f.nic_overrides.iter().flatten().enumerate() {
            let p = |k: &str| format!("fabric.nic_overrides.{i}.{k}");
            let rate = self.rate(&p("rate"), o.rate.as_ref(), None);
            let hosts: Option<Vec<u32>> = match &o.nodes {
                None => {
                    self.err(
                        &p("nodes"),
                        "nothing",
                        "a list of node indices whose NICs run at `rate`, such as nodes = [3]",
                    );
                    None
                }
                Some(v) if v.is_empty() => {
                    self.err(&p("nodes"), "[]", "at least one node index, such as [3]");
                    None
                }
                Some(v) => match v.iter().find(|&&n| !(0..i64::from(u32::MAX)).contains(&n)) {
                    Some(bad) => {
                        self.err(
                            &p("nodes"),
                            bad.to_string(),
                            "node indices from 0 (the first node)",
                        );
                        None
                    }
                    None => Some(v.iter().map(|&n| n as u32).collect()),
                },
            };
            match (hosts, rate) {
                (Some(hosts), Some(rate)) => out.push(crate::topology::NicOverride { hosts, rate }),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// Refuses a `[[fabric.nic_overrides]]` node the cluster does not have.
    pub(super) fn check_nic_overrides(&mut self, fabric: &FabricSpec, hosts: u32) -> bool {
        let mut ok = true;
        for (i, o) in fabric.links.nic_overrides.iter().enumerate() {
            if let Some(&h) = o.hosts.iter().find(|&&h| h >= hosts) {
                self.err(
                    &format!("fabric.nic_overrides.{i}.nodes"),
                    h.to_string(),
                    format!(
                        "node indices of this cluster, 0 to {}",
                        hosts.saturating_sub(1)
                    ),
                );
                ok = false;
            }
        }
        ok
    }

    /// `fabric.sharp_groups`: unset is no limit (`u32::MAX`).
    pub(super) fn sharp_groups(&mut self, f: &RawFabric) -> Option<u32> {
        match f.sharp_groups {
            None => Some(u32::MAX),
            Some(g) if (0..i64::from(u32::MAX)).contains(&g) => Some(g as u32),
            Some(g) => {
                self.err(
                    "fabric.sharp_groups",
                    g.to_string(),
                    "a number of aggregation trees per switch, 0 or more",
                );
                None
            }
        }
    }
}

impl Scenario {
    /// The key whose value alone keeps the switches from reducing in a run at
    /// `fidelity` (`fabric.sharp = false` on InfiniBand, `sharp_groups = 0`, a
    /// non-InfiniBand `kind` with `sharp = true`): that key is what decides, so a
    /// run that could choose SHARP reads it.
    pub fn sharp_turned_off_by(&self, fidelity: Fidelity) -> Option<&'static str> {
        if self.cluster.hosts < 2 || fidelity == Fidelity::Packet {
            return None;
        }
        let ib = self.fabric.kind == FabricKind::InfiniBand;
        let groups = self.fabric.sharp_groups > 0;
        match (ib, self.fabric.sharp, groups) {
            (true, false, true) => Some("fabric.sharp"),
            (true, true, false) => Some("fabric.sharp_groups"),
            (false, true, true) => Some("fabric.kind"),
            _ => None,
        }
    }

    /// Why no switch reduces in a run at `fidelity`, or `None` when SHARP runs.
    pub fn no_sharp_reason(&self, fidelity: Fidelity) -> Option<String> {
        if self.cluster.hosts < 2 {
            Some("with one node there is no network to reduce in".into())
        } else if fidelity == Fidelity::Packet {
            Some("SHARP is modeled at the analytical and flow fidelities; the packet level has no switch endpoints, so SHARP algorithms fall back to ring".into())
        } else if self.fabric.kind != FabricKind::InfiniBand {
            Some(format!(
                "SHARP is an InfiniBand switch feature; on a {} fabric the switches do not reduce",
                self.fabric.kind.name()
            ))
        } else if !self.fabric.sharp {
            Some("the switches do not reduce (set fabric.sharp = true on an InfiniBand fabric, fabric.sharp_groups ≥ 1)".into())
        } else if self.fabric.sharp_groups == 0 {
            Some("fabric.sharp_groups = 0 leaves the switches no aggregation tree".into())
        } else {
            None
        }
    }
}

/// Lanes a non-minimal dragonfly route needs under lossless flow control with
/// `vl_escalation`: a data lane for each of its up to seven routers (six
/// switch-to-switch hops: local, global, local to the intermediate router,
/// local, global, local) and the ACK lane.
pub const NON_MINIMAL_LANES: u8 = 8;

impl Validator<'_> {
    /// Refuses, on `fabric.routing`, a dragonfly routing on another shape, and
    /// a non-minimal one under lossless flow control (InfiniBand credits or
    /// PFC) without a lane per hop stage: Valiant and UGAL paths have cyclic
    /// buffer dependencies that only rising lanes break (Kim et al. 2008, §4.2;
    /// Dally & Seitz 1987), and a deadlock would stop the run halfway.
    pub(super) fn check_routing(
        &mut self,
        fabric: &FabricSpec,
        topology: &crate::topology::TopologySpec,
        packet: Option<&super::packet::PacketSettings>,
    ) {
        let r = fabric.routing;
        if !matches!(
            r,
            Routing::Minimal | Routing::Valiant | Routing::Ugal | Routing::UgalG
        ) {
            return;
        }
        let found = format!("{:?}", r.name());
        if !matches!(topology, crate::topology::TopologySpec::Dragonfly { .. }) {
            self.err(
                "fabric.routing",
                found,
                format!(
                    "\"ecmp\", \"adaptive\", \"spray\" or \"flowlet\" on a {} topology: \"{}\" routes across the groups of a dragonfly (topology.kind = \"dragonfly\"), which this shape has not",
                    topology.name(),
                    r.name()
                ),
            );
            return;
        }
        let Some(p) = packet else { return };
        let lossless = fabric.kind == FabricKind::InfiniBand || p.pfc.is_some();
        if r.dragonfly().non_minimal()
            && lossless
            && !(p.vl_escalation && p.virtual_lanes >= NON_MINIMAL_LANES)
        {
            self.err(
                "fabric.routing",
                found,
                format!(
                    "on a lossless fabric ({}), \"{}\" takes up to two global links and six switch-to-switch hops, whose buffers can wait on each other in a cycle (deadlock): set fabric.vl_escalation = true and fabric.virtual_lanes = {NON_MINIMAL_LANES} (a lane per hop stage, as Kim et al. 2008 do), or use \"minimal\", or a lossy fabric",
                    if fabric.kind == FabricKind::InfiniBand { "InfiniBand credits" } else { "PFC" },
                    r.name()
                ),
            );
        }
    }
}
