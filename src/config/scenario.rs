//! The checked scenario and how its sections are assembled: each section is
//! checked on its own (so every problem is reported), then the scenario is
//! built only when all of them passed, and checked as a whole (ids, budget,
//! the topology build, the simulated-time range).

use super::raw::{RawScenario, RawWorkload};
use super::validate::{keys_set, Validator};
use super::{
    ClusterSpec, CollectiveWorkload, FabricSpec, FaultSpec, Fidelity, InferenceSpec,
    PacketSettings, TopologySpec, TrainingSpec,
};
use crate::units::{Rate, SimTime};

/// The checked `[workload]`.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSpec {
    /// A collective size sweep.
    Collective(CollectiveWorkload),
    /// A synthetic traffic pattern (incast, permutation, all-to-all, random).
    Traffic(crate::workload::traffic::TrafficSpec),
    /// One training step of a transformer under a parallel plan.
    Training(Box<TrainingSpec>),
    /// Prefill and decode of a batch of requests.
    Inference(Box<InferenceSpec>),
    /// Several jobs sharing the fabric (`[[jobs]]`), each a collective,
    /// traffic or flow-list workload on its own nodes.
    Jobs(Vec<super::jobs::JobSpec>),
    /// Chakra execution traces, one file per rank.
    Chakra(Box<crate::workload::chakra::ChakraSpec>),
}

impl WorkloadSpec {
    /// The `workload.kind` this workload was written as.
    pub fn kind_name(&self) -> &'static str {
        match self {
            WorkloadSpec::Collective(_) => "collective",
            WorkloadSpec::Traffic(crate::workload::traffic::TrafficSpec::Flows(_)) => "flows",
            WorkloadSpec::Traffic(_) => "traffic",
            WorkloadSpec::Training(_) => "training",
            WorkloadSpec::Inference(_) => "inference",
            WorkloadSpec::Jobs(_) => "jobs",
            WorkloadSpec::Chakra(_) => "chakra",
        }
    }
}

/// A setting present in the scenario that the chosen fidelity does not use.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IgnoredSetting {
    /// Dotted key.
    pub key: String,
    /// Why it changes nothing in this run.
    pub reason: String,
}

/// A validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name shown in results.
    pub name: String,
    /// The file it came from.
    pub file: String,
    /// Hosts.
    pub cluster: ClusterSpec,
    /// GPUDirect (true) or host-staged (false).
    pub gpu_direct: bool,
    /// Host-staged copy bandwidth.
    pub host_copy_rate: Rate,
    /// Host-staged copy latency.
    pub host_copy_latency: SimTime,
    /// `cluster.nvlink_efficiency`: share of the NVLink rate the NVLink links
    /// carry (what NCCL's kernels reach), in (0, 1].
    pub nvlink_efficiency: f64,
    /// `cluster.nvls`: the NVSwitches reduce and multicast (NVLink SHARP); used by
    /// the `nvls` algorithm at the analytical and flow fidelities.
    pub nvls: bool,
    /// Network shape.
    pub topology: TopologySpec,
    /// Network technology.
    pub fabric: FabricSpec,
    /// What runs.
    pub workload: WorkloadSpec,
    /// Fidelity.
    pub fidelity: Fidelity,
    /// Seed.
    pub seed: u64,
    /// Settings of the packet level.
    pub packet: PacketSettings,
    /// Every key the file sets, dotted (for `ignored_settings`).
    pub keys_set: Vec<String>,
    /// Stragglers and failures, in file order.
    pub faults: Vec<FaultSpec>,
    /// Traffic workloads: flows added to the pattern.
    pub extra_flows: Vec<crate::workload::traffic::ExtraFlow>,
    /// `simulation.max_memory` and `simulation.max_events`: what a run may cost.
    pub budget: crate::budget::Budget,
}

impl Validator<'_> {
    /// Checks every section of `raw`, then assembles the [`Scenario`] when all
    /// of them passed. Sections are checked in a fixed order so diagnostics at
    /// the same place come out in the same order run after run.
    pub(super) fn scenario(&mut self, raw: &RawScenario) -> Option<Scenario> {
        let node = self.node_preset(&raw.cluster);
        let fab = self.fabric_preset(&raw.fabric);
        let c = self.cluster(&raw.cluster, node);
        let topology = self.topology(
            &raw.topology,
            super::topology_file::Expect {
                hosts: c.hosts,
                nics_per_host: c.nics,
            },
        );
        let ports = self.topology_ports(&raw.topology);
        // a topology file sets every link's rate: fabric.link_rate may be left out
        // (and a file that failed has said so: no second diagnostic for the rate)
        let file_failed = raw.topology.kind.as_deref() == Some("file") && topology.is_none();
        let file_rate = match &topology {
            Some(t) => super::topology::file_host_rate(t),
            None if file_failed => Some(Rate::gbps(1)),
            None => None,
        };
        let f = self.fabric(&raw.fabric, fab, file_rate);
        // a topology file brings its own link figures: per-port settings
        // (PFC headroom) are sized for its fastest, longest link
        let link = match &topology {
            Some(TopologySpec::File(t)) => f.link().map(|(_, _, fwd)| {
                let rate = t.links.iter().map(|l| l.rate).max().unwrap_or_default();
                let lat = t.links.iter().map(|l| l.latency).max().unwrap_or_default();
                (rate, lat, fwd)
            }),
            _ => f.link(),
        };
        let nic_rate = topology
            .as_ref()
            .and_then(super::topology::file_host_rate)
            .or(f.nic_rate());
        let packet = self.packet_settings(raw, f.kind, link, nic_rate, f.max_packet());
        let job_drafts = self.jobs(raw, c.hosts, c.gpus);
        let (extra_flows, workload) = if raw.jobs.is_empty() {
            (
                self.extra_flows(&raw.workload, c.total_gpus()),
                self.workload(&raw.workload, c.total_gpus()),
            )
        } else {
            // placed once the topology is built
            (Some(Vec::new()), Some(WorkloadSpec::Jobs(Vec::new())))
        };
        let faults = self.faults(&raw.faults);
        let fidelity = self.fidelity(&raw.simulation);
        let seed = self.seed(&raw.simulation);

        let cluster = ClusterSpec {
            hosts: c.hosts?,
            gpus_per_host: c.gpus?,
            nics_per_host: c.nics?,
            nvlink_rate: c.nvlink_rate?,
            nvlink_latency: c.nvlink_latency?,
            pcie_rate: c.pcie_rate?,
            pcie_latency: c.pcie_latency?,
        };
        let sharp_groups = self.sharp_groups(&raw.fabric);
        let mut fabric = f.spec(&raw.fabric, sharp_groups)?;
        let topology = topology?;
        (fabric.links.planes, fabric.links.dual_tor) = ports?;
        if !self.check_nic_overrides(&fabric, cluster.hosts) {
            return None;
        }
        self.check_routing(&fabric, &topology, packet.as_ref());
        let budget = self.budget(&raw.simulation)?;
        if !self.endpoints_fit(&cluster) {
            return None;
        }
        // What building the topology costs, before building it.
        let est = crate::budget::topology_ports(
            cluster.hosts,
            cluster.gpus_per_host,
            cluster.nics_per_host,
            &topology,
            fabric.links.ports_per_nic(),
        );
        if let Err(over) = est.check(&budget) {
            self.over_budget(&over);
            return None;
        }
        // The shape must hold the cluster: build it once now so the error is
        // reported before any run, on the field at fault.
        let built = match crate::topology::build(&cluster, &fabric.links, &topology) {
            Err(e) => {
                let found = self
                    .src
                    .text_of(e.field)
                    .map(str::to_string)
                    .unwrap_or_else(|| "this cluster".into());
                self.err(e.field, found, e.message);
                return None;
            }
            Ok(t) => {
                if let Some(f) = &faults {
                    self.check_faults(f, &t);
                }
                t
            }
        };
        let workload = match (job_drafts, raw.jobs.is_empty()) {
            (_, true) => workload,
            (Some(drafts), false) => self
                .place_jobs(drafts, &built, seed.unwrap_or(1))
                .map(WorkloadSpec::Jobs),
            (None, false) => None,
        };
        let scenario = Scenario {
            name: raw.name.clone().unwrap_or_else(|| {
                std::path::Path::new(self.src.file)
                    .file_stem()
                    .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned())
            }),
            file: self.src.file.to_string(),
            cluster,
            gpu_direct: c.gpu_direct,
            host_copy_rate: c.host_copy_rate?,
            host_copy_latency: c.host_copy_latency?,
            nvlink_efficiency: c.nvlink_efficiency?,
            nvls: c.nvls,
            topology,
            fabric,
            workload: workload?,
            fidelity: fidelity?,
            seed: seed?,
            packet: packet?,
            keys_set: keys_set(self.src.text),
            faults: faults?,
            extra_flows: extra_flows?,
            budget,
        };
        // estimates are made of valid scenarios only: one mistake, one diagnostic
        if !self.diags.is_empty() || !self.in_time_range(&scenario, &built) {
            return None;
        }
        // What the run costs at the file's fidelity (run::run checks again at
        // the fidelity it runs).
        if let Err(over) = crate::budget::run(&scenario, &built, scenario.fidelity).check(&budget) {
            // a workload key over budget is at the costliest job's table
            if let WorkloadSpec::Jobs(jobs) = &scenario.workload {
                let cost = |w: &WorkloadSpec| {
                    let alone = Scenario {
                        workload: w.clone(),
                        ..scenario.clone()
                    };
                    let e = crate::budget::run(&alone, &built, scenario.fidelity);
                    e.memory / budget.max_memory.max(1) as f64
                        + e.packet_events / budget.max_events.max(1) as f64
                };
                let costliest = (0..jobs.len())
                    .map(|k| (k, cost(&jobs[k].workload)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(k, _)| k);
                self.workload_at = costliest.map(|k| format!("jobs.{k}.workload"));
            }
            self.over_budget(&over);
            self.workload_at = None;
            return None;
        }
        Some(scenario)
    }

    /// The checked `[workload]`, by its `kind` (default `collective`).
    pub(super) fn workload(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<WorkloadSpec> {
        let kind = w.kind.as_deref().unwrap_or("collective");
        if w.traces.is_some() && kind != "chakra" {
            self.err(
                "workload.traces",
                format!("Chakra traces with kind = {kind:?}"),
                "them only with kind = \"chakra\"",
            );
        }
        if w.flows.is_some() && kind != "flows" {
            self.err(
                "workload.flows",
                format!("a flow list with kind = {kind:?}"),
                "it only with kind = \"flows\"",
            );
        }
        match kind {
            "collective" => self.collective(w, total_gpus),
            "traffic" => self.traffic(w, total_gpus),
            "flows" => self.flow_list(w, total_gpus),
            "chakra" => self.chakra(w, total_gpus),
            "training" => self
                .training(w, total_gpus)
                .map(|t| WorkloadSpec::Training(Box::new(t))),
            "inference" => self
                .inference(w, total_gpus)
                .map(|t| WorkloadSpec::Inference(Box::new(t))),
            other => {
                self.err(
                    "workload.kind",
                    format!("{other:?}"),
                    "\"collective\", \"traffic\", \"flows\", \"chakra\", \"training\" or \"inference\"",
                );
                None
            }
        }
    }

    /// Refuses each of `keys` (set in `[workload]` but meaningless for this kind).
    pub(super) fn refuse_workload_keys(&mut self, keys: &[&str], kind: &str, expected: &str) {
        for key in keys {
            self.err(
                &format!("workload.{key}"),
                format!("`{key}` with kind = {kind:?}"),
                expected,
            );
        }
    }
}
