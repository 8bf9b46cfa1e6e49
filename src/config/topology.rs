//! `[topology]`: the network's shape, and building the topology a run uses
//! from a checked scenario (recording the keys the build consumes).

use super::raw::{RawNumber, RawTopology};
use super::usage;
use super::validate::Validator;
use super::{Fidelity, Scenario};
use crate::topology::TopologySpec;

impl Validator<'_> {
    pub(super) fn topology(&mut self, t: &RawTopology) -> Option<TopologySpec> {
        let kind = t.kind.as_deref().unwrap_or("");
        let allowed: &[&str] = match kind {
            "single_switch" => &[],
            "leaf_spine" => &["radix", "oversubscription"],
            "fat_tree" => &["k"],
            "rail_optimized" => &["radix", "spine_radix"],
            "dragonfly" => &[
                "groups",
                "routers_per_group",
                "hosts_per_router",
                "global_links_per_router",
            ],
            "" => {
                self.err("topology.kind", "nothing", "one of \"single_switch\", \"leaf_spine\", \"fat_tree\", \"rail_optimized\", \"dragonfly\"");
                return None;
            }
            other => {
                self.err("topology.kind", format!("{other:?}"), "one of \"single_switch\", \"leaf_spine\", \"fat_tree\", \"rail_optimized\", \"dragonfly\"");
                return None;
            }
        };
        let present = [
            ("radix", t.radix.is_some()),
            ("spine_radix", t.spine_radix.is_some()),
            ("oversubscription", t.oversubscription.is_some()),
            ("k", t.k.is_some()),
            ("groups", t.groups.is_some()),
            ("routers_per_group", t.routers_per_group.is_some()),
            ("hosts_per_router", t.hosts_per_router.is_some()),
            (
                "global_links_per_router",
                t.global_links_per_router.is_some(),
            ),
        ];
        let mut ok = true;
        for (key, is) in present {
            if is && !allowed.contains(&key) {
                self.err(
                    &format!("topology.{key}"),
                    format!("`{key}` with kind {kind:?}"),
                    if allowed.is_empty() {
                        format!("no other keys for kind {kind:?}")
                    } else {
                        format!("only {} for kind {kind:?}", allowed.join(", "))
                    },
                );
                ok = false;
            }
        }
        let spec = match kind {
            "single_switch" => Some(TopologySpec::SingleSwitch),
            "leaf_spine" => {
                let radix = self.count("topology.radix", t.radix, Some(64), 2, "ports per switch");
                let o = t.oversubscription.map_or(1.0, RawNumber::as_f64);
                if !(o.is_finite() && o > 0.0) {
                    self.err(
                        "topology.oversubscription",
                        o.to_string(),
                        "a positive down:up ratio such as 1.0 or 3.0",
                    );
                    return None;
                }
                Some(TopologySpec::LeafSpine {
                    radix: radix?,
                    oversubscription: o,
                })
            }
            "fat_tree" => {
                let k = self.count("topology.k", t.k, None, 2, "the fat-tree arity k (even)")?;
                Some(TopologySpec::FatTree { k })
            }
            "rail_optimized" => {
                let radix = self.count(
                    "topology.radix",
                    t.radix,
                    Some(64),
                    2,
                    "ports per leaf switch",
                );
                let spine = self.count(
                    "topology.spine_radix",
                    t.spine_radix,
                    radix.map(i64::from),
                    2,
                    "ports per spine switch",
                );
                Some(TopologySpec::RailOptimized {
                    radix: radix?,
                    spine_radix: spine?,
                })
            }
            _ => {
                let g = self.count("topology.groups", t.groups, None, 2, "the number of groups");
                let a = self.count(
                    "topology.routers_per_group",
                    t.routers_per_group,
                    None,
                    1,
                    "routers per group",
                );
                let p = self.count(
                    "topology.hosts_per_router",
                    t.hosts_per_router,
                    None,
                    1,
                    "NIC ports per router",
                );
                let h = self.count(
                    "topology.global_links_per_router",
                    t.global_links_per_router,
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
        };
        if ok {
            spec
        } else {
            None
        }
    }
}

impl Scenario {
    /// Builds the topology `fidelity` runs on ([`Scenario::build_topology_for`]),
    /// recording in `usage` the cluster, topology and link keys it consumes.
    ///
    /// # Errors
    /// Cannot fail for a validated scenario; the error is kept for API honesty.
    pub fn build_topology_used(
        &self,
        fidelity: Fidelity,
        usage: &mut usage::Usage,
    ) -> Result<crate::topology::Topology, crate::topology::TopologyError> {
        usage.read_all(&["cluster.preset", "cluster.nodes", "cluster.gpus_per_node"]);
        // the network: NICs, the PCIe hop to them, links, switches, packets
        let network = self.cluster.hosts > 1;
        for key in [
            "cluster.nics_per_node",
            "cluster.pcie_bandwidth",
            "cluster.pcie_latency",
            "topology",
            "fabric.preset",
            "fabric.link_rate",
            "fabric.link_latency",
            "fabric.switch_latency",
            "fabric.mtu",
            "fabric.header_bytes",
        ] {
            usage.read_if(key, network, || {
                "with one node no traffic leaves it: the NICs, their PCIe hop and the network carry nothing".into()
            });
        }
        // NVLink is read by the workloads whose transfers cross it
        // (`run::read_collective_keys`, the model workloads)
        if self.cluster.gpus_per_host == 1 {
            for key in [
                "cluster.nvlink_bandwidth",
                "cluster.nvlink_latency",
                "cluster.nvlink_efficiency",
            ] {
                usage.skip(key, || {
                    "with one GPU per node no traffic crosses NVLink".into()
                });
            }
        }
        usage.read_if("fabric.nic_efficiency", network, || {
            "with one node no traffic crosses a NIC".into()
        });
        usage.read_if("fabric.qps_per_connection", network, || {
            "with one node no connection crosses the network".into()
        });
        // the other fidelities fold the host-staged copy into the PCIe hop here;
        // the packet level reads it with its own settings
        usage.read_if("cluster.gpu_direct", network, || {
            "with one node no traffic crosses a NIC, directly or through host memory".into()
        });
        if fidelity != Fidelity::Packet && network {
            for key in ["cluster.host_copy_bandwidth", "cluster.host_copy_latency"] {
                usage.read_if(key, !self.gpu_direct, || {
                    "the host-staged copy applies only with gpu_direct = false".into()
                });
            }
        }
        if let Some(why) = self.no_sharp_reason(fidelity) {
            usage.skip("fabric.sharp", || why.clone());
            usage.skip("fabric.sharp_groups", || why.clone());
        }
        if let Some(why) = self.no_nvls_reason(fidelity) {
            usage.skip("cluster.nvls", || why);
        }
        self.build_topology_for(fidelity)
    }

    /// Builds the topology `fidelity` runs on: the packet level models the
    /// host-staged path itself, the others fold it into the PCIe hop.
    ///
    /// # Errors
    /// Cannot fail for a validated scenario; the error is kept for API honesty.
    pub fn build_topology_for(
        &self,
        fidelity: Fidelity,
    ) -> Result<crate::topology::Topology, crate::topology::TopologyError> {
        if fidelity != Fidelity::Packet {
            return self.build_topology();
        }
        // the packet level has no switch endpoints: SHARP and NVLS fall back to
        // ring there
        let mut t = crate::topology::build(&self.cluster, &self.fabric.links, &self.topology)?;
        t.set_network_efficiency(self.fabric.efficiency());
        self.derate(&mut t);
        Ok(t)
    }

    /// Builds the topology of this scenario, with header overhead applied.
    ///
    /// # Errors
    /// Cannot fail for a validated scenario; the error is kept for API honesty.
    pub fn build_topology(
        &self,
    ) -> Result<crate::topology::Topology, crate::topology::TopologyError> {
        let mut t = crate::topology::build(
            &self.effective_cluster(),
            &self.fabric.links,
            &self.topology,
        )?;
        t.set_network_efficiency(self.fabric.efficiency());
        t.set_sharp(self.fabric.sharp_active());
        t.set_sharp_groups(self.fabric.sharp_groups);
        t.set_nvls(self.nvls);
        self.derate(&mut t);
        Ok(t)
    }

    /// Runs the NVLink links at `cluster.nvlink_efficiency` of their rate and the
    /// NIC links at `fabric.nic_efficiency` (what NCCL's kernels and GPUDirect RDMA
    /// reach on real hardware, at every fidelity alike), and gives connections
    /// `fabric.qps_per_connection` queue pairs, and routes a dragonfly's groups
    /// as `fabric.routing` says.
    fn derate(&self, t: &mut crate::topology::Topology) {
        t.derate_nvlink(self.nvlink_efficiency);
        t.derate_nics(self.fabric.nic_efficiency);
        t.set_qps_per_connection(self.fabric.qps_per_connection);
        t.set_dragonfly_routing(self.fabric.routing.dragonfly());
    }
}
