//! `[cluster]`: hosts, GPUs, NICs, NVLink and PCIe, the host-staged path.

use super::presets::{self, NodePreset};
use super::raw::RawCluster;
use super::validate::Validator;
use super::{Fidelity, Scenario};
use crate::topology::ClusterSpec;
use crate::units::{Rate, SimTime};

/// Most GPUs (and NICs) in a cluster: their ids are 32-bit.
pub const MAX_ENDPOINTS: u64 = 1 << 31;

/// The `[cluster]` keys as checked one by one, before the scenario is
/// assembled: a `None` field was refused (its diagnostic already pushed), so
/// the other sections can still be checked and every problem reported.
pub(super) struct ClusterParts {
    pub(super) hosts: Option<u32>,
    pub(super) gpus: Option<u32>,
    pub(super) nics: Option<u32>,
    pub(super) nvlink_rate: Option<Rate>,
    pub(super) nvlink_latency: Option<SimTime>,
    pub(super) pcie_rate: Option<Rate>,
    pub(super) pcie_latency: Option<SimTime>,
    pub(super) gpu_direct: bool,
    pub(super) host_copy_rate: Option<Rate>,
    pub(super) host_copy_latency: Option<SimTime>,
    pub(super) nvlink_efficiency: Option<f64>,
    pub(super) nvls: bool,
}

impl ClusterParts {
    /// GPUs in the cluster, when both factors were accepted.
    pub(super) fn total_gpus(&self) -> Option<u64> {
        self.hosts.zip(self.gpus).map(|(h, g)| h as u64 * g as u64)
    }
}

impl Validator<'_> {
    /// `cluster.preset`: an unknown name quiets the "missing" diagnostics of
    /// the fields it would have supplied (one mistake, one diagnostic).
    pub(super) fn node_preset(&mut self, c: &RawCluster) -> Option<&'static NodePreset> {
        match c.preset.as_deref() {
            None => None,
            Some(name) => match presets::node(name) {
                Some(p) => Some(p),
                None => {
                    self.err(
                        "cluster.preset",
                        format!("{name:?}"),
                        format!("one of {}", presets::node_names()),
                    );
                    self.quiet_missing = true;
                    None
                }
            },
        }
    }

    /// The `[cluster]` keys, each from the file, else the preset, else its default.
    pub(super) fn cluster(
        &mut self,
        c: &RawCluster,
        node: Option<&'static NodePreset>,
    ) -> ClusterParts {
        let hosts = self.count("cluster.nodes", c.nodes, None, 1, "the number of nodes");
        let gpus = self.count(
            "cluster.gpus_per_node",
            c.gpus_per_node,
            node.map(|p| p.gpus_per_node as i64),
            1,
            "GPUs per node",
        );
        let nics = self.count(
            "cluster.nics_per_node",
            c.nics_per_node,
            node.map(|p| p.nics_per_node as i64),
            1,
            "NICs per node",
        );
        if let (Some(g), Some(n)) = (gpus, nics) {
            if n > g || g % n != 0 {
                self.err(
                    "cluster.nics_per_node",
                    format!("{n} NICs for {g} GPUs per node"),
                    format!("a number of NICs that divides the GPUs per node evenly (1, …, {g}), so each NIC serves the same number of GPUs"),
                );
            }
        }
        let nvlink_rate = self.rate(
            "cluster.nvlink_bandwidth",
            c.nvlink_bandwidth.as_ref(),
            node.map(|p| p.nvlink_bandwidth),
        );
        let nvlink_latency = self.time(
            "cluster.nvlink_latency",
            c.nvlink_latency.as_ref(),
            Some(node.map_or("250ns", |p| p.nvlink_latency)),
        );
        let pcie_rate = self.rate(
            "cluster.pcie_bandwidth",
            c.pcie_bandwidth.as_ref(),
            Some(node.map_or("64GB/s", |p| p.pcie_bandwidth)),
        );
        let pcie_latency = self.time(
            "cluster.pcie_latency",
            c.pcie_latency.as_ref(),
            Some(node.map_or("250ns", |p| p.pcie_latency)),
        );
        let gpu_direct = c.gpu_direct.unwrap_or(true);
        let host_copy_rate = self.rate(
            "cluster.host_copy_bandwidth",
            c.host_copy_bandwidth.as_ref(),
            Some("25GB/s"),
        );
        let host_copy_latency = self.time(
            "cluster.host_copy_latency",
            c.host_copy_latency.as_ref(),
            Some("5us"),
        );
        let nvlink_efficiency = self.efficiency(
            "cluster.nvlink_efficiency",
            c.nvlink_efficiency,
            node.map_or(1.0, |p| p.nvlink_efficiency),
        );
        ClusterParts {
            hosts,
            gpus,
            nics,
            nvlink_rate,
            nvlink_latency,
            pcie_rate,
            pcie_latency,
            gpu_direct,
            host_copy_rate,
            host_copy_latency,
            nvlink_efficiency,
            nvls: c.nvls.unwrap_or(node.is_some_and(|p| p.nvls)),
        }
    }

    /// GPU and NIC ids are 32-bit: refuses a cluster with more of either.
    pub(super) fn endpoints_fit(&mut self, cluster: &ClusterSpec) -> bool {
        let total = |per: u32| u64::from(cluster.hosts) * u64::from(per);
        for (what, per) in [
            ("GPUs", cluster.gpus_per_host),
            ("NICs", cluster.nics_per_host),
        ] {
            if total(per) > MAX_ENDPOINTS {
                self.err(
                    "cluster.nodes",
                    format!("{} nodes x {per} = {} {what}", cluster.hosts, total(per)),
                    format!("at most {MAX_ENDPOINTS} {what} in the cluster (32-bit ids)"),
                );
                return false;
            }
        }
        true
    }
}

impl Scenario {
    /// The cluster as the topology sees it, with the host-staged path folded into
    /// the PCIe hop when GPUDirect is off: the data crosses host memory, so the
    /// GPU↔NIC hop runs at the slower of PCIe and the copy, and pays the copy latency.
    pub fn effective_cluster(&self) -> ClusterSpec {
        let mut c = self.cluster.clone();
        if !self.gpu_direct {
            c.pcie_rate = c.pcie_rate.min(self.host_copy_rate);
            c.pcie_latency += self.host_copy_latency;
        }
        c
    }

    /// Why the NVSwitches do not reduce in a run at `fidelity`, or `None` when
    /// `cluster.nvls` when its value alone keeps the NVSwitches from reducing in
    /// a run at `fidelity`.
    pub fn nvls_turned_off_by(&self, fidelity: Fidelity) -> Option<&'static str> {
        (!self.nvls && self.cluster.gpus_per_host > 1 && fidelity != Fidelity::Packet)
            .then_some("cluster.nvls")
    }

    /// NVLS runs.
    pub fn no_nvls_reason(&self, fidelity: Fidelity) -> Option<String> {
        if self.cluster.gpus_per_host == 1 {
            Some("with one GPU per node there is nothing for the NVSwitch to reduce".into())
        } else if fidelity == Fidelity::Packet {
            Some("NVLS is modeled at the analytical and flow fidelities; the packet level has no switch endpoints, so nvls falls back to ring".into())
        } else if !self.nvls {
            Some("the NVSwitches do not reduce (cluster.nvls = false)".into())
        } else {
            None
        }
    }

    /// Total GPUs.
    pub fn num_gpus(&self) -> u32 {
        self.cluster.hosts * self.cluster.gpus_per_host
    }
}
