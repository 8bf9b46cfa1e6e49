//! The checked scenario and how its sections are assembled: each section is
//! checked on its own (so every problem is reported), then the scenario is
//! built only when all of them passed, and checked as a whole (ids, budget,
//! the topology build, the simulated-time range).

use super::raw::{RawScenario, RawWorkload};
use super::validate::{keys_set, Validator};
use super::{
    AlgoChoice, ClusterSpec, CollectiveWorkload, FabricSpec, FaultSpec, Fidelity, InferenceSpec,
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
///
/// Its fields are private to `config`: outside it a `Scenario` comes only
/// from [`parse`](super::parse) / [`load`](super::load) or from one of the
/// checked derivations below ([`Scenario::for_job`], [`Scenario::with_hosts`],
/// [`Scenario::with_collective`], …), each of which re-runs the rule a direct
/// write would bypass. Read it through the accessors.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name shown in results.
    pub(super) name: String,
    /// The file it came from.
    pub(super) file: String,
    /// Hosts.
    pub(super) cluster: ClusterSpec,
    /// GPUDirect (true) or host-staged (false).
    pub(super) gpu_direct: bool,
    /// Host-staged copy bandwidth.
    pub(super) host_copy_rate: Rate,
    /// Host-staged copy latency.
    pub(super) host_copy_latency: SimTime,
    /// `cluster.nvlink_efficiency`: share of the NVLink rate the NVLink links
    /// carry (what NCCL's kernels reach), in (0, 1].
    pub(super) nvlink_efficiency: f64,
    /// `cluster.nvls`: the NVSwitches reduce and multicast (NVLink SHARP); used by
    /// the `nvls` algorithm at the analytical and flow fidelities.
    pub(super) nvls: bool,
    /// Network shape.
    pub(super) topology: TopologySpec,
    /// Network technology.
    pub(super) fabric: FabricSpec,
    /// What runs.
    pub(super) workload: WorkloadSpec,
    /// Fidelity.
    pub(super) fidelity: Fidelity,
    /// Seed.
    pub(super) seed: u64,
    /// Settings of the packet level.
    pub(super) packet: PacketSettings,
    /// Every key the file sets, dotted (for `ignored_settings`).
    pub(super) keys_set: Vec<String>,
    /// Stragglers and failures, in file order.
    pub(super) faults: Vec<FaultSpec>,
    /// Traffic workloads: flows added to the pattern.
    pub(super) extra_flows: Vec<crate::workload::traffic::ExtraFlow>,
    /// `simulation.max_memory` and `simulation.max_events`: what a run may cost.
    pub(super) budget: crate::budget::Budget,
}

impl Scenario {
    /// `name`: the scenario's name as results show it (the file's stem when unset).
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file the scenario was read from, as given (a label such as
    /// `<preset dgx-h100-ndr>` for built-in text).
    #[inline]
    pub fn file(&self) -> &str {
        &self.file
    }

    /// `[cluster]`: hosts, GPUs and NICs per host, NVLink and PCIe figures, as
    /// the file gives them (see [`Scenario::effective_cluster`] for the
    /// host-staged path folded in).
    #[inline]
    pub fn cluster(&self) -> &ClusterSpec {
        &self.cluster
    }

    /// `cluster.gpu_direct`: data moves GPU↔NIC directly (true) or through
    /// host memory (false, host-staged).
    #[inline]
    pub fn gpu_direct(&self) -> bool {
        self.gpu_direct
    }

    /// `cluster.host_copy_bandwidth`: the host-staged copy's rate, bits/s.
    #[inline]
    pub fn host_copy_rate(&self) -> Rate {
        self.host_copy_rate
    }

    /// `cluster.host_copy_latency`: the host-staged copy's latency, ps.
    #[inline]
    pub fn host_copy_latency(&self) -> SimTime {
        self.host_copy_latency
    }

    /// `cluster.nvlink_efficiency`: share of the NVLink rate the NVLink links
    /// carry (what NCCL's kernels reach), in (0, 1].
    #[inline]
    pub fn nvlink_efficiency(&self) -> f64 {
        self.nvlink_efficiency
    }

    /// `cluster.nvls`: the NVSwitches reduce and multicast (NVLink SHARP); used
    /// by the `nvls` algorithm at the analytical and flow fidelities.
    #[inline]
    pub fn nvls(&self) -> bool {
        self.nvls
    }

    /// `[topology]`: the network's shape.
    #[inline]
    pub fn topology(&self) -> &TopologySpec {
        &self.topology
    }

    /// `[fabric]`: the network's technology (kind, links, packet format,
    /// routing, NIC, SHARP).
    #[inline]
    pub fn fabric(&self) -> &FabricSpec {
        &self.fabric
    }

    /// `[workload]` (or `[[jobs]]`, placed): what runs.
    #[inline]
    pub fn workload(&self) -> &WorkloadSpec {
        &self.workload
    }

    /// `simulation.fidelity`: the fidelity the file asks for (a command line
    /// may run another).
    #[inline]
    pub fn fidelity(&self) -> Fidelity {
        self.fidelity
    }

    /// `simulation.seed`: the seed of every random choice of the run.
    #[inline]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The packet level's settings (buffers, lanes, transport, timers, PFC,
    /// ECN, congestion control), checked against the fabric.
    #[inline]
    pub fn packet(&self) -> &PacketSettings {
        &self.packet
    }

    /// Every key the file sets, dotted, in file order (for `ignored_settings`).
    #[inline]
    pub fn keys_set(&self) -> &[String] {
        &self.keys_set
    }

    /// `[[faults]]`: stragglers and failures, in file order, each checked
    /// against the built topology.
    #[inline]
    pub fn faults(&self) -> &[FaultSpec] {
        &self.faults
    }

    /// Traffic workloads: flows added to the pattern (`workload.extra_flows`).
    #[inline]
    pub fn extra_flows(&self) -> &[crate::workload::traffic::ExtraFlow] {
        &self.extra_flows
    }

    /// `simulation.max_memory` and `simulation.max_events`: what a run may cost.
    #[inline]
    pub fn budget(&self) -> crate::budget::Budget {
        self.budget
    }

    /// Whether `self` and `other` simulate the same thing: equal in every
    /// setting, whichever keys their files wrote (a file that spells out a
    /// default or a preset's value sets the same scenario).
    pub fn same_settings(&self, other: &Scenario) -> bool {
        Scenario {
            keys_set: Vec::new(),
            ..self.clone()
        } == Scenario {
            keys_set: Vec::new(),
            ..other.clone()
        }
    }

    /// The scenario as the readers of job `j`'s keys see it: `j`'s workload on
    /// `j`'s number of nodes, no extra flows and no keys of its own (a job's
    /// keys are recorded under `jobs.N.`). `j` is one of this scenario's
    /// placed jobs, so its workload passed validation.
    pub fn for_job(&self, j: &super::jobs::JobSpec) -> Scenario {
        Scenario {
            cluster: ClusterSpec {
                hosts: j.nodes.len() as u32,
                ..self.cluster.clone()
            },
            workload: j.workload.clone(),
            extra_flows: Vec::new(),
            keys_set: Vec::new(),
            ..self.clone()
        }
    }

    /// The scenario with only the faults at `chosen` (indices into
    /// [`Scenario::faults`]; out-of-range ones are skipped). A subset of
    /// checked faults is still checked: each was placed on this topology.
    pub fn with_faults_at(&self, chosen: &[usize]) -> Scenario {
        Scenario {
            faults: chosen
                .iter()
                .filter_map(|&i| self.faults.get(i).cloned())
                .collect(),
            ..self.clone()
        }
    }

    /// The scenario on `n` nodes instead of the file's `cluster.nodes`, with
    /// the rules that key passed re-run: at least one node, at most
    /// [`MAX_ENDPOINTS`](super::MAX_ENDPOINTS) GPUs and NICs, the topology's
    /// cost within the budget, and a topology that holds them.
    ///
    /// # Errors
    /// Which of those rules `n` breaks, in words (without the key's name, which
    /// the caller knows: `--nodes` on the command line).
    pub fn with_hosts(&self, n: u32) -> Result<Scenario, String> {
        if n == 0 {
            return Err("0 nodes; expected at least 1".into());
        }
        let c = &self.cluster;
        let gpus = u64::from(n) * u64::from(c.gpus_per_host.max(c.nics_per_host));
        if gpus > super::MAX_ENDPOINTS {
            return Err(format!(
                "{gpus} GPUs; expected at most {} (32-bit ids)",
                super::MAX_ENDPOINTS
            ));
        }
        // what the topology costs, before building it
        let est = crate::budget::topology_ports(
            n,
            c.gpus_per_host,
            c.nics_per_host,
            &self.topology,
            self.fabric.links.ports_per_nic(),
        );
        est.check(&self.budget).map_err(|e| e.to_string())?;
        let mut s = self.clone();
        s.cluster.hosts = n;
        s.build_topology().map_err(|e| e.to_string())?;
        Ok(s)
    }

    /// Replaces the workload with the collective `w`, as a command line that
    /// names the operation does: no `workload.*` key of the file applies any
    /// more, so those keys leave [`Scenario::keys_set`]. `w` was built
    /// outside the validator, so its values meet the rules of
    /// `[workload]` here (the limits and tables are the validator's own:
    /// [`super::MAX_SIZES`], [`super::MAX_CHANNELS`], the collective
    /// registry); the error names the field as the file would.
    pub fn with_collective(mut self, w: CollectiveWorkload) -> Result<Scenario, String> {
        let gpus = u64::from(self.cluster.hosts) * u64::from(self.cluster.gpus_per_host);
        if w.sizes.is_empty() || w.sizes.len() > super::MAX_SIZES {
            return Err(format!(
                "workload.sizes: {} sizes; expected 1 to {}",
                w.sizes.len(),
                super::MAX_SIZES
            ));
        }
        if let Some(&s) = w.sizes.iter().find(|&&s| s == 0) {
            return Err(format!("workload.sizes: {s} B; expected at least 1 byte"));
        }
        if w.chunk_bytes == 0 {
            return Err("workload.chunk: 0 B; expected at least 1 byte".into());
        }
        if let AlgoChoice::Fixed(a) = w.algorithm {
            if !crate::collective::supports(a, w.op) {
                return Err(format!(
                    "workload.algorithm: {} for {}; expected an algorithm that implements it ({})",
                    a.name(),
                    w.op.name(),
                    super::collective::supporting(w.op)
                ));
            }
        }
        if crate::collective::entry(w.inter_host)
            .inter_host_steps
            .is_none()
        {
            return Err(format!(
                "workload.inter_host: {}; expected one of {}",
                w.inter_host.name(),
                crate::collective::registry::inter_host_names()
            ));
        }
        if u64::from(w.root) >= gpus {
            return Err(format!(
                "workload.root: {}; expected a rank between 0 and {}",
                w.root,
                gpus.saturating_sub(1)
            ));
        }
        if let Some(c) = w.channels {
            if !(1..=super::MAX_CHANNELS).contains(&i64::from(c)) {
                return Err(format!(
                    "workload.channels: {c}; expected 1 to {} channels",
                    super::MAX_CHANNELS
                ));
            }
        }
        if let Some(load) = &w.alltoall_load {
            if load.len() as u64 != gpus || load.iter().any(|x| !x.is_finite() || *x < 0.0) {
                return Err(format!(
                    "workload.alltoall_load: {} shares; expected {gpus} finite, non-negative shares (one per rank)",
                    load.len()
                ));
            }
        }
        self.workload = WorkloadSpec::Collective(w);
        self.keys_set.retain(|k| !k.starts_with("workload."));
        Ok(self)
    }
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
