//! `[topology]`: the network's shape, and building the topology a run uses
//! from a checked scenario (recording the keys the build consumes).

use super::raw::{RawNumber, RawTopology};
use super::usage;
use super::validate::Validator;
use super::{Fidelity, Scenario};
use crate::topology::builder::{Occupancy, ShapeKeys, Tier, SHAPES};
use crate::topology::TopologySpec;

/// The `[topology]` keys set in the scenario, by name. A key a new shape
/// reads gets its raw field and a line here.
fn keys_set(t: &RawTopology) -> [(&'static str, bool); 11] {
    [
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
        ("file", t.file.is_some()),
        ("planes", t.planes.is_some()),
        ("dual_tor", t.dual_tor.is_some()),
    ]
}

/// A whole-number `[topology]` key's raw value, by name (`None` for a key
/// that is not a whole number).
fn whole_key(t: &RawTopology, key: &str) -> Option<i64> {
    match key {
        "radix" => t.radix,
        "spine_radix" => t.spine_radix,
        "k" => t.k,
        "groups" => t.groups,
        "routers_per_group" => t.routers_per_group,
        "hosts_per_router" => t.hosts_per_router,
        "global_links_per_router" => t.global_links_per_router,
        _ => None,
    }
}

/// The validator reading one shape's keys ([`ShapeKeys`]), each error at
/// `topology.<key>`.
struct TopologyKeys<'v, 'a, 't> {
    v: &'v mut Validator<'a>,
    raw: &'t RawTopology,
    expect: super::topology_file::Expect,
}

impl ShapeKeys for TopologyKeys<'_, '_, '_> {
    fn whole(
        &mut self,
        key: &'static str,
        default: Option<i64>,
        min: i64,
        what: &str,
    ) -> Option<u32> {
        self.v.count(
            &format!("topology.{key}"),
            whole_key(self.raw, key),
            default,
            min,
            what,
        )
    }

    fn ratio(&mut self, key: &'static str, default: f64, expected: &str) -> Option<f64> {
        let raw = match key {
            "oversubscription" => self.raw.oversubscription,
            _ => None,
        };
        let x = raw.map_or(default, RawNumber::as_f64);
        if x.is_finite() && x > 0.0 {
            Some(x)
        } else {
            self.v
                .err(&format!("topology.{key}"), x.to_string(), expected);
            None
        }
    }

    fn file(&mut self) -> Option<TopologySpec> {
        self.v.topology_file(self.raw.file.as_deref(), self.expect)
    }
}

impl Validator<'_> {
    /// `[topology]`: the shape named by `kind` ([`SHAPES`]) reads its own
    /// keys; a key another shape takes is refused, naming the keys this one
    /// takes.
    pub(super) fn topology(
        &mut self,
        t: &RawTopology,
        expect: super::topology_file::Expect,
    ) -> Option<TopologySpec> {
        let kind = t.kind.as_deref().unwrap_or("");
        let Some(entry) = SHAPES.iter().find(|e| e.kind == kind) else {
            let kinds: Vec<String> = SHAPES.iter().map(|e| format!("{:?}", e.kind)).collect();
            let found = if kind.is_empty() {
                "nothing".to_string()
            } else {
                format!("{kind:?}")
            };
            self.err(
                "topology.kind",
                found,
                format!("one of {}", kinds.join(", ")),
            );
            return None;
        };
        let mut allowed: Vec<&str> = entry.keys.to_vec();
        if entry.multipath.planes {
            allowed.push("planes");
        }
        if entry.multipath.dual_tor {
            allowed.push("dual_tor");
        }
        let mut ok = true;
        for (key, is) in keys_set(t) {
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
        let spec = (entry.parse)(&mut TopologyKeys {
            v: self,
            raw: t,
            expect,
        });
        spec.filter(|_| ok)
    }
}

impl Validator<'_> {
    /// `topology.planes` and `topology.dual_tor`: (planes, dual ToR), 1 and
    /// false when unset (whether the kind takes them is checked by
    /// [`Validator::topology`]).
    pub(super) fn topology_ports(&mut self, t: &RawTopology) -> Option<(u32, bool)> {
        let max = crate::topology::builder::MAX_PLANES;
        let planes = match t.planes {
            None => Some(1),
            Some(p) if (1..=i64::from(max)).contains(&p) => Some(p as u32),
            Some(p) => {
                self.err(
                    "topology.planes",
                    p.to_string(),
                    format!("the number of identical switch-fabric planes, each NIC with a port in every one: an integer from 1 to {max}"),
                );
                None
            }
        };
        Some((planes?, t.dual_tor.unwrap_or(false)))
    }
}

/// Host 0's first NIC link rate on a topology file (bits/s), `None` on a
/// built shape.
pub(super) fn file_host_rate(t: &TopologySpec) -> Option<crate::units::Rate> {
    match t {
        TopologySpec::File(f) => f
            .host_links()
            .first()
            .and_then(|l| l.first())
            .map(|&(_, r, _)| r),
        _ => None,
    }
}

impl Validator<'_> {
    /// `topology.file`: read relative to the scenario's directory and checked
    /// ([`super::topology_file`]); its problems are located in that file.
    fn topology_file(
        &mut self,
        file: Option<&str>,
        expect: super::topology_file::Expect,
    ) -> Option<TopologySpec> {
        let Some(file) = file else {
            self.err(
                "topology.file",
                "nothing",
                "the path of a topology file (TOML; see README \"Topology files\"), relative to this scenario",
            );
            return None;
        };
        let path = std::path::Path::new(self.src.file)
            .parent()
            .unwrap_or(std::path::Path::new(""))
            .join(file);
        let text = match crate::budget::read_text(&path, crate::budget::MAX_INPUT_BYTES) {
            Ok(t) => t,
            Err(e) => {
                self.err(
                    "topology.file",
                    format!("{file:?}, which cannot be read as {} ({e})", path.display()),
                    format!(
                        "a readable topology file of at most {}, relative to this scenario",
                        crate::units::format_bytes(crate::budget::MAX_INPUT_BYTES)
                    ),
                );
                return None;
            }
        };
        match super::topology_file::parse(&path.display().to_string(), &text, expect) {
            Ok(t) => Some(TopologySpec::File(std::sync::Arc::new(t))),
            Err(d) => {
                self.diags.extend(d);
                None
            }
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
            "fabric.nic_overrides",
            "fabric.uplink_rate",
            "fabric.spine_rate",
            "fabric.global_rate",
        ] {
            if !network {
                usage.skip(key, || {
                    "with one node no traffic leaves it: the NICs, their PCIe hop and the network carry nothing".into()
                });
            } else if let Some(why) = self.tier_unused(key) {
                usage.skip(key, || why);
            } else {
                usage.read(key);
            }
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

    /// Why link key `key` shapes no link this scenario's traffic can cross
    /// (`None` when it does): a tier the shape lacks or its NICs never reach,
    /// or, on a topology file, a figure the file gives every link itself.
    fn tier_unused(&self, key: &str) -> Option<String> {
        let own = self.topology.entry().own_link_figures;
        let tier = match key {
            "fabric.link_rate" if own => return Some(
                "a topology file gives every link its rate (random traffic's load and DCQCN's defaults follow host 0's NIC link)".into(),
            ),
            "fabric.link_latency" if own => {
                return Some("a topology file gives every link its latency".into())
            }
            "fabric.uplink_rate" => Tier::Uplink,
            "fabric.spine_rate" => Tier::Spine,
            "fabric.global_rate" => Tier::Global,
            _ => return None,
        };
        self.topology.tier_unused(
            tier,
            Occupancy {
                nics: u64::from(self.cluster.hosts) * u64::from(self.cluster.nics_per_host),
                nics_per_host: self.cluster.nics_per_host,
                dual_tor: self.fabric.links.dual_tor,
            },
        )
    }

    /// The rate of a host's NIC link that random traffic's load is a fraction
    /// of, bits/s: `fabric.link_rate`, or on a topology file host 0's first
    /// link.
    pub fn host_rate(&self) -> crate::units::Rate {
        file_host_rate(&self.topology).unwrap_or(self.fabric.links.link_rate)
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
