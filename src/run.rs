//! Runs a validated [`Scenario`] at one fidelity: builds its topology and DAGs,
//! runs each through [`backend::run`] and hands the outputs to
//! [`crate::report::assemble`], which builds the [`Report`].

use std::collections::BTreeSet;
use std::fmt;
use std::time::Instant;

use crate::backend::{
    self, BackendConfig, BackendError, FabricCounters, LinkCounters, LinkEvent, Observers,
    ProgressHook, RunOutput, TimelineRequest,
};
use crate::collective::{self, CollectiveError, CollectiveSpec};
use crate::config::usage::Usage;
use crate::config::{AlgoChoice, CollectiveWorkload, Fidelity, Scenario, WorkloadSpec};
use crate::dag::{Dag, TaskKind};
use crate::report::assemble::Outcome;
use crate::report::workload::{FaultEffect, InferenceReport, OpTime, TrainingReport};
use crate::report::{CollectiveRow, Report};
use crate::topology::{GpuId, NodeKind, Topology};
use crate::units::{format_bytes, SimTime};
use crate::workload::{inference, training};

mod jobs;
pub use jobs::job_ranks;

// Report assembly moved to `report::assemble`; these keep their `run::` paths.
pub use crate::report::assemble::{
    fnv1a, link_name, Accumulated, MATRIX_MAX, SERIES_MAX, TIMELINE_BUCKETS, TIMELINE_LINKS,
};

/// Why a PFC key is not read when PFC is not on.
const PFC_OFF: &str = "PFC is off (fabric.pfc = false, or an InfiniBand fabric's credits)";

/// Packet-level sampling interval a report uses when the scenario sets none: 1 µs,
/// a few packet times at 400 Gb/s (the sampler doubles it as its buffer fills).
pub const REPORT_SAMPLE_INTERVAL: SimTime = SimTime::from_us(1);

/// Choices made on the command line that override the scenario file.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Fidelity to run instead of the file's.
    pub fidelity: Option<Fidelity>,
    /// Seed to use instead of the file's.
    pub seed: Option<u64>,
    /// Keep per-link counters in the report.
    pub collect_links: bool,
    /// Fill the report's chart sections (FCT CDF, traffic matrix, link timeline, series).
    pub detail: bool,
    /// Keep per-transfer records for `flows.csv` (capped, see [`FlowRecords`]).
    pub flow_records: bool,
    /// Build the run's timeline for Perfetto ([`crate::report::trace`]).
    pub trace: bool,
    /// Called every few tens of thousands of backend events (never per event),
    /// at every fidelity and for every workload kind ([`backend::Observers::progress`]).
    pub progress: Option<ProgressHook>,
    /// Worker threads for the scenario's independent simulations instead of
    /// `simulation.threads` (each job alone, each fault alone); the results
    /// are the same for every count.
    pub threads: Option<usize>,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("fidelity", &self.fidelity)
            .field("seed", &self.seed)
            .field("collect_links", &self.collect_links)
            .field("detail", &self.detail)
            .field("flow_records", &self.flow_records)
            .field("trace", &self.trace)
            .field("progress", &self.progress.is_some())
            .field("threads", &self.threads)
            .finish()
    }
}

/// Why a valid scenario could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// A collective cannot run on its communicator.
    #[error("collective: {0}")]
    Collective(#[from] CollectiveError),
    /// The topology could not be built.
    #[error("topology: {0}")]
    Topology(#[from] crate::topology::TopologyError),
    /// The workload cannot run as configured.
    #[error("{0}")]
    Unsupported(String),
    /// A backend stopped (no path, a stalled DAG, the packet level's time limit).
    #[error("{0}")]
    Backend(BackendError),
    /// A PFC or credit deadlock stopped the packet backend; [`run`] turns it
    /// into [`Report::deadlock`] rather than an error.
    #[error("{} deadlock at {} us on a cycle of {} links", .0.report.kind, .0.report.detected_at_us, .0.report.cycle.len())]
    Deadlock(Box<DeadlockStop>),
    /// A training or inference workload could not run.
    #[error("{0}")]
    Workload(#[from] crate::workload::WorkloadError),
    /// The run would need more memory or packet events than its budget
    /// (`simulation.max_memory`, `simulation.max_events`) allows.
    #[error("over budget at this fidelity: {0}")]
    Budget(String),
}

/// A run stopped by a PFC or credit deadlock: the cycle, and the counters up to it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeadlockStop {
    /// What the result reports.
    pub report: crate::report::DeadlockReport,
    /// Fabric counters of the stopped run.
    pub fabric: FabricCounters,
    /// Per-link counters of the stopped run.
    pub links: Vec<LinkCounters>,
    /// Events simulated before it stopped.
    pub events: u64,
}

impl From<BackendError> for RunError {
    /// A PFC deadlock keeps its cycle and counters ([`RunError::Deadlock`]);
    /// the rest are failures.
    fn from(e: BackendError) -> RunError {
        use crate::report::{DeadlockHop, DeadlockReport};
        match e {
            BackendError::Deadlock(d) => {
                let backend::Deadlock {
                    kind,
                    at,
                    since,
                    cycle,
                    ops_in_flight,
                    fabric,
                    links,
                    events,
                } = *d;
                RunError::Deadlock(Box::new(DeadlockStop {
                    report: DeadlockReport {
                        kind,
                        detected_at_us: at.as_us(),
                        stalled_since_us: since.as_us(),
                        cycle: cycle
                            .into_iter()
                            .map(|(link, from, to)| DeadlockHop { link, from, to })
                            .collect(),
                        during: None,
                        ops_in_flight,
                    },
                    fabric,
                    links,
                    events,
                }))
            }
            other => RunError::Backend(other),
        }
    }
}

impl RunError {
    /// A deadlock named after the run of the scenario it stopped (`during`);
    /// other errors unchanged.
    fn during(self, during: impl FnOnce() -> String) -> RunError {
        match self {
            RunError::Deadlock(mut stop) => {
                stop.report.during = Some(during());
                RunError::Deadlock(stop)
            }
            other => other,
        }
    }
}

/// Runs `scenario` and returns its report.
///
/// # Errors
/// [`RunError`] when the workload cannot run on the topology at this fidelity.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> Result<Report, RunError> {
    let wall = Instant::now();
    let fidelity = opts.fidelity.unwrap_or(scenario.fidelity());
    let seed = opts.seed.unwrap_or(scenario.seed());
    // What the run costs at the fidelity it runs (validation checked the
    // file's): the topology before it is built, then the workload.
    let budget = &scenario.budget();
    crate::budget::topology_ports(
        scenario.cluster().hosts,
        scenario.cluster().gpus_per_host,
        scenario.cluster().nics_per_host,
        scenario.topology(),
        scenario.fabric().links().ports_per_nic(),
    )
    .check(budget)
    .map_err(|e| RunError::Budget(e.to_string()))?;
    let mut usage = Usage::new(scenario.keys_set());
    let topo = scenario.build_topology_used(fidelity, &mut usage)?;
    crate::budget::run(scenario, &topo, fidelity)
        .check(budget)
        .map_err(|e| RunError::Budget(e.to_string()))?;
    let mut acc = Accumulated::new(opts.collect_links, opts.detail, opts.flow_records);
    if opts.trace {
        acc.keep_trace(&topo);
    }
    let (mut training, mut inference) = (None, None);
    let mut packet = read_backend_keys(scenario, fidelity, seed, &mut usage);
    // A report shows the hottest ports' queues, PFC pauses and ECN marks over
    // time; when the file does not ask for sampling, a report asks for it at
    // the finest useful grain (the sampler halves its resolution whenever its
    // buffer fills, so any run length fits in bounded memory).
    if opts.detail {
        if let Some(p) = packet.as_mut() {
            if p.sample_interval == SimTime::ZERO {
                p.sample_interval = REPORT_SAMPLE_INTERVAL;
            }
        }
    }
    // training and inference apply their faults run by run (each alone too)
    let faults = match scenario.workload() {
        WorkloadSpec::Collective(_)
        | WorkloadSpec::Traffic(_)
        | WorkloadSpec::Jobs(_)
        | WorkloadSpec::Chakra(_) => {
            crate::workload::faults::Applied::new(scenario.faults(), &topo)
        }
        WorkloadSpec::Training(_) | WorkloadSpec::Inference(_) => {
            crate::workload::faults::Applied::none()
        }
    };
    let exec = Executor {
        scenario,
        topo: &topo,
        fidelity,
        seed,
        opts,
        packet: packet.as_ref(),
        link_events: &faults.link_events,
    };
    read_model_workload_keys(scenario, fidelity, &mut usage);
    let outcome = match scenario.workload() {
        WorkloadSpec::Collective(w) => run_collectives(w, &exec, &mut acc, &mut usage),
        WorkloadSpec::Traffic(t) => {
            read_traffic_keys(scenario, t, fidelity, &mut usage);
            run_traffic(t, &exec, &mut acc)
        }
        WorkloadSpec::Training(t) => {
            run_training(t, scenario, &topo, fidelity, seed, opts, &mut acc)
                .map(|r| training = Some(r))
        }
        WorkloadSpec::Inference(i) => {
            run_inference(i, scenario, &topo, fidelity, seed, opts, &mut acc)
                .map(|r| inference = Some(r))
        }
        WorkloadSpec::Jobs(j) => {
            // `--seed` moves random placements as `simulation.seed` does
            let placed = if seed == scenario.seed() {
                j.clone()
            } else {
                crate::config::jobs::placed_with_seed(j, &topo, seed)
            };
            jobs::run_jobs(&placed, &exec, &mut acc, &mut usage)
        }
        WorkloadSpec::Chakra(c) => {
            read_chakra_keys(scenario, c, fidelity, &mut usage);
            run_chakra(c, &exec, &mut acc)
        }
    };
    // A deadlock is a finding, not a failure of the simulator: the run stops
    // and the result names the cycle (with what completed before it).
    let deadlock = match outcome {
        Ok(()) => None,
        Err(RunError::Deadlock(stop)) => {
            let DeadlockStop {
                report,
                fabric,
                links,
                events,
            } = *stop;
            acc.add_stopped(fabric, links, events);
            Some(report)
        }
        Err(e) => return Err(e),
    };
    if let Some(name) = acc.overflowed() {
        return Err(RunError::Unsupported(format!(
            "the run's {name} summed over its sizes and steps exceeds 2^64; fewer or smaller workload sizes"
        )));
    }
    let outcome = Outcome {
        fidelity,
        seed,
        training,
        inference,
        ignored_settings: usage.ignored(scenario.workload().kind_name(), fidelity),
        deadlock,
        faults: match scenario.workload() {
            WorkloadSpec::Collective(_)
            | WorkloadSpec::Traffic(_)
            | WorkloadSpec::Jobs(_)
            | WorkloadSpec::Chakra(_) => scenario
                .faults()
                .iter()
                .filter(|f| !matches!(f.kind, crate::config::workload::FaultKind::SlowGpu { .. }))
                .map(|f| crate::report::AppliedFault {
                    name: f.name.clone(),
                    kind: fault_kind_name(&f.kind).into(),
                    at_us: f.at.as_us(),
                })
                .collect(),
            WorkloadSpec::Training(_) | WorkloadSpec::Inference(_) => Vec::new(),
        },
        wall_s: wall.elapsed().as_secs_f64(),
    };
    Ok(acc.finish(scenario, &topo, outcome))
}

/// The communicator of a collective workload: every GPU of the cluster.
pub fn all_ranks(topo: &Topology) -> Vec<GpuId> {
    (0..topo.num_gpus()).map(GpuId).collect()
}

/// The collective spec for one size of a sweep, with `auto` resolved.
///
/// # Errors
/// When no algorithm can run the operation on the communicator.
pub fn spec_for(
    w: &CollectiveWorkload,
    bytes: u64,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<CollectiveSpec, CollectiveError> {
    let mut spec = CollectiveSpec {
        op: w.op,
        algorithm: match w.algorithm {
            AlgoChoice::Fixed(a) => a,
            AlgoChoice::Auto => collective::Algorithm::Ring,
        },
        bytes,
        chunk_bytes: w.chunk_bytes,
        inter_host: w.inter_host,
        root: w.root,
        channels: w
            .channels
            .unwrap_or_else(|| collective::default_channels(ranks, topo)),
        pxn: w.pxn,
        proto: collective::ProtoCost::NONE,
    };
    let (algorithm, proto) = collective::tune(
        &spec,
        w.algorithm == AlgoChoice::Auto,
        w.protocol,
        w.nvlink_step_latency,
        w.step_latency,
        ranks,
        topo,
    )?;
    spec.algorithm = algorithm;
    spec.proto = proto;
    // without switches that reduce, SHARP runs as the ring: say so in the results
    if !collective::sharp::available(topo) {
        if spec.algorithm == collective::Algorithm::Sharp {
            spec.algorithm = collective::Algorithm::Ring;
        }
        if spec.inter_host == collective::Algorithm::Sharp {
            spec.inter_host = collective::Algorithm::Ring;
        }
    }
    Ok(spec)
}

/// Records in `usage` the collective keys that `spec` (one size of `w`, as
/// [`spec_for`] resolved it) consumes, and why the others change nothing.
pub fn read_collective_keys(
    s: &Scenario,
    w: &CollectiveWorkload,
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    fidelity: Fidelity,
    usage: &mut Usage,
) {
    use crate::collective::{Algorithm as A, CollectiveOp};
    usage.read_all(&[
        "workload.kind",
        "workload.preset",
        "workload.op",
        "workload.sizes",
        "workload.min_bytes",
        "workload.max_bytes",
        "workload.step_factor",
        "workload.dtype",
        "workload.chunk",
    ]);
    crate::workload::faults::read_keys(s.faults(), fidelity, Some("a collective sweep"), usage);
    // an all-to-allv's receive shares: only an all-to-all of two or more
    // ranks sends pieces whose sizes they set
    for key in ["workload.alltoall_skew", "workload.alltoall_load"] {
        usage.read_if(
            key,
            spec.op == CollectiveOp::AllToAll && ranks.len() > 1,
            || {
                if spec.op == CollectiveOp::AllToAll {
                    "one rank sends nothing to others".into()
                } else {
                    format!(
                        "only an all-to-all sends uneven pieces; {} moves what its algorithm fixes",
                        spec.op.name()
                    )
                }
            },
        );
    }
    // what runs: NVLS and the CollNet chain lower to the ring when the switches
    // cannot do their part (SHARP's fallback is already in `spec`)
    // (SHARP is available here whenever it was chosen: `spec` fell back already)
    let runs = if (collective::entry(spec.algorithm).available)(ranks, topo) {
        spec.algorithm
    } else {
        A::Ring
    };
    let entry = collective::entry(runs);
    // flat SHARP sends every GPU's data through its NIC to the switches: no
    // NVLink, no protocol steps (its latency is the in-network one)
    if entry.uses_nvlink {
        read_nvlink_keys(s, usage);
        read_step_latencies(s, "workload.", usage);
    } else {
        for key in [
            "cluster.nvlink_bandwidth",
            "cluster.nvlink_latency",
            "cluster.nvlink_efficiency",
            "workload.step_latency",
            "workload.nvlink_step_latency",
        ] {
            usage.skip(key, || {
                "flat SHARP sends every GPU's data through its NIC to the switches: no NVLink and no protocol steps".into()
            });
        }
    }
    let sharp_inter_host = runs == A::Hierarchical && spec.inter_host == A::Sharp;
    match w.algorithm {
        AlgoChoice::Fixed(a) if a != runs => usage.skip("workload.algorithm", || {
            let why = match a {
                A::Nvls => s.no_nvls_reason(fidelity),
                A::Sharp => s.no_sharp_reason(fidelity),
                A::CollnetChain if s.cluster().hosts < 2 => {
                    Some("with one node there is no network to reduce in".into())
                }
                A::CollnetChain => s.no_sharp_reason(fidelity),
                _ => None,
            };
            format!(
                "{} falls back to {}: {}",
                a.name(),
                runs.name(),
                why.unwrap_or_else(|| "it cannot run this communicator".into())
            )
        }),
        _ => usage.read("workload.algorithm"),
    }
    usage.read_if(
        "workload.channels",
        entry.shaped_by_channels && spec.op != CollectiveOp::AllToAll,
        || {
            let shaped: Vec<&str> = collective::REGISTRY
                .iter()
                .filter(|e| e.shaped_by_channels)
                .map(|e| e.name)
                .collect();
            format!(
                "channels shape the {} algorithms only; this run uses {}",
                match shaped.split_last() {
                    Some((last, rest)) if !rest.is_empty() =>
                        format!("{} and {last}", rest.join(", ")),
                    _ => shaped.join(""),
                },
                runs.name()
            )
        },
    );
    let pxn_shapes = match runs {
        A::Ring => spec.channels > 1 && spec.op != CollectiveOp::AllToAll,
        A::Direct => true,
        _ => false,
    };
    let multi = s.cluster().hosts > 1 && s.cluster().gpus_per_host > 1;
    usage.read_if("workload.pxn", pxn_shapes && multi, || {
        if !multi {
            "PXN relays a ring's data to another GPU's NIC; it needs several nodes of several GPUs".into()
        } else if runs == A::Ring {
            "with one channel the ring is the plain ring in communicator order; PXN lays out several channels".into()
        } else {
            format!("PXN shapes the ring and the all-to-all only; this run uses {}", runs.name())
        }
    });
    usage.read_if("workload.protocol", collective::uses_protocol(runs), || {
        format!(
            "NCCL's protocols shape ring, tree and hierarchical steps; {} moves bulk data (Simple)",
            runs.name()
        )
    });
    let inter_host_fell_back = w.inter_host == A::Sharp && spec.inter_host != A::Sharp;
    usage.read_if(
        "workload.inter_host",
        runs == A::Hierarchical && !inter_host_fell_back,
        || {
            if runs == A::Hierarchical {
                format!(
                    "sharp between hosts falls back to ring: {}",
                    s.no_sharp_reason(fidelity).unwrap_or_default()
                )
            } else {
                format!(
                    "inter_host applies to the hierarchical algorithm only; this run uses {}",
                    runs.name()
                )
            }
        },
    );
    usage.read_if("workload.root", spec.op == CollectiveOp::Broadcast, || {
        "a root applies to broadcast only".into()
    });
    let reduces_in_switches = entry.reduces_in_switches || sharp_inter_host;
    if reduces_in_switches {
        // SHARP runs on InfiniBand only
        usage.read("fabric.kind");
    }
    usage.read_if("fabric.sharp", reduces_in_switches, || {
        s.no_sharp_reason(fidelity).unwrap_or_else(|| {
            format!(
                "the switches could reduce, but this run uses {}, which does not",
                runs.name()
            )
        })
    });
    // above 0, sharp_groups binds only where one all-reduce needs a tree per rail
    usage.read_if("fabric.sharp_groups", sharp_inter_host, || {
        s.no_sharp_reason(fidelity).unwrap_or_else(|| {
            "one SHARP all-reduce needs one tree per switch; the limit binds only for hierarchical with inter_host = \"sharp\" (a tree per rail), or at 0".into()
        })
    });
    // a switch turned off is read where the algorithm could have used it
    let could_reduce_in_switches = match w.algorithm {
        AlgoChoice::Auto => true,
        AlgoChoice::Fixed(a) => {
            matches!(a, A::Sharp | A::CollnetChain)
                || (a == A::Hierarchical && w.inter_host == A::Sharp)
        }
    };
    if could_reduce_in_switches {
        if let Some(key) = s.sharp_turned_off_by(fidelity) {
            usage.read(key);
        }
    }
    let could_use_nvls = spec.op == CollectiveOp::AllReduce
        && matches!(w.algorithm, AlgoChoice::Auto | AlgoChoice::Fixed(A::Nvls));
    if could_use_nvls {
        if let Some(key) = s.nvls_turned_off_by(fidelity) {
            usage.read(key);
        }
    }
    usage.read_if("cluster.nvls", runs == A::Nvls, || {
        s.no_nvls_reason(fidelity).unwrap_or_else(|| {
            format!("only the nvls algorithm of an all-reduce uses the NVSwitch's reduction; this run uses {}", runs.name())
        })
    });
}

/// Records in `usage` what the backend of `fidelity` has no mechanism for, and
/// (away from the packet level) the keys only the packet level reads.
fn read_backend_keys(
    s: &Scenario,
    fidelity: Fidelity,
    seed: u64,
    usage: &mut Usage,
) -> Option<backend::packet::PacketConfig> {
    usage.read_all(&[
        "name",
        // a note for whoever reads the file
        "description",
        "simulation.fidelity",
        "simulation.max_memory",
    ]);
    // the flow level uses the threads the independent runs leave (`sim_threads`)
    usage.read_if(
        "simulation.threads",
        independent_runs(s) > 1 || fidelity == Fidelity::Flow,
        || {
            "worker threads run a scenario's independent simulations side by side (each job alone, the healthy fabric and each fault alone when there are several) and the flow level's own work; this scenario has one simulation to run, and at this fidelity the engine runs on one thread".into()
        },
    );
    usage.read_if(
        "simulation.max_events",
        fidelity == Fidelity::Packet,
        || "the budget of packet events applies at the packet fidelity".into(),
    );
    match fidelity {
        Fidelity::Analytical => {
            let why = || {
                "traffic classes decide who is served first where transfers contend; the analytical fidelity costs each transfer on an idle path (α-β closed forms), where no class waits for another (use flow or packet)".to_string()
            };
            for key in &CLASS_KEYS {
                usage.void(key, why);
            }
            for key in flow_class_keys(s) {
                usage.void(&key, why);
            }
        }
        Fidelity::Flow => {
            flow_classes_used(s, usage);
        }
        Fidelity::Packet => {}
    }
    match fidelity {
        Fidelity::Analytical => {
            usage.skip("simulation.seed", || {
                "the analytical fidelity has no randomness (ECMP paths of one length cost the same)".into()
            });
            if s.fabric().routing().dragonfly() == crate::topology::DragonflyRouting::Shortest {
                usage.void("fabric.routing", || {
                    "α-β costs take ECMP's expectation over the equal-cost paths (the one path's cost where they are alike); how adaptive, spraying or flowlet routing spread a transfer is modeled at the packet fidelity".into()
                });
            } else {
                // a dragonfly's group routing changes the paths' length and
                // where the contention bound's load falls (Valiant: spread
                // over the intermediate routers; UGAL on an idle fabric:
                // minimal)
                usage.read("fabric.routing");
            }
            usage.void("fabric.qps_per_connection", || {
                "queue pairs only choose ECMP paths, which the analytical fidelity spreads evenly".into()
            });
            usage.void("topology.global_links_per_router", || {
                "extra global links add parallel paths between groups, which only matter under contention; the analytical fidelity does not model it (use flow or packet)".into()
            });
        }
        Fidelity::Flow => {
            usage.read("simulation.seed");
            if s.fabric().routing() == crate::config::Routing::Ecmp
                || s.fabric().routing().dragonfly() != crate::topology::DragonflyRouting::Shortest
            {
                // ECMP, and a dragonfly's group routings per flow (Valiant's
                // intermediate router by the flow's hash, UGAL by the flows
                // already on each path)
                usage.read("fabric.routing");
            } else {
                usage.void("fabric.routing", || {
                    format!(
                        "the flow fidelity keeps each flow on one ECMP path; {} routing is modeled at the packet fidelity",
                        s.fabric().routing().name()
                    )
                });
            }
        }
        Fidelity::Packet => return Some(packet_config_used(s, seed, usage)),
    }
    {
        // what the packet level alone reads is listed with this reason
        let mut packet_only = Usage::new(s.keys_set());
        packet_config_used(s, seed, &mut packet_only);
        usage.skip_touched_by(&packet_only, || {
            format!(
                "buffers, lanes, flow control, congestion control, transport, timers and packet events exist only at the packet fidelity, not {}",
                fidelity.name()
            )
        });
    }
    None
}

/// Records in `usage` the keys a Chakra trace set consumes: the traces, the
/// collectives' algorithm (skipped when no trace has a collective, or when the
/// fixed algorithm runs none of the traces' operations), the keys its
/// collectives' in-network reductions read, and the faults.
fn read_chakra_keys(
    s: &Scenario,
    c: &crate::workload::chakra::ChakraSpec,
    fidelity: Fidelity,
    usage: &mut Usage,
) {
    use crate::collective::Algorithm as A;
    use crate::workload::chakra::PlanOp;
    usage.read_all(&["workload.kind", "workload.traces"]);
    // the GPU model times only the compute nodes given in num_ops, at bf16
    for key in [
        "workload.gpu.preset",
        "workload.gpu.peak_tflops_bf16",
        "workload.gpu.efficiency",
        "workload.gpu.hbm_bandwidth",
    ] {
        usage.read_if(key, c.plan.ops_timed > 0, || {
            "every compute node of the traces carries its duration (the GPU model times only num_ops nodes)".into()
        });
    }
    for p in ["fp16", "fp8", "fp32"] {
        usage.skip(&format!("workload.gpu.peak_tflops_{p}"), || {
            "a trace's num_ops are charged at the bf16 peak (Chakra's num_ops carries no data type)".into()
        });
    }
    let mut ops: Vec<crate::collective::CollectiveOp> = c
        .plan
        .ops
        .iter()
        .filter_map(|o| match o {
            PlanOp::Collective { op, .. } => Some(*op),
            _ => None,
        })
        .collect();
    ops.sort_by_key(|o| o.name());
    ops.dedup();
    let runs_some = match c.algorithm {
        AlgoChoice::Auto => true,
        AlgoChoice::Fixed(a) => ops.iter().any(|&op| crate::collective::supports(a, op)),
    };
    usage.read_if("workload.algorithm", !ops.is_empty() && runs_some, || {
        if ops.is_empty() {
            "the traces have no collective".into()
        } else {
            "the fixed algorithm runs none of the traces' collectives, so they run NCCL's choice (auto)".into()
        }
    });
    let may = |a: A| c.algorithm == AlgoChoice::Auto || c.algorithm == AlgoChoice::Fixed(a);
    if !ops.is_empty() {
        if may(A::Sharp) || may(A::CollnetChain) || may(A::Hierarchical) {
            if s.no_sharp_reason(fidelity).is_none() {
                usage.read_all(&["fabric.sharp", "fabric.sharp_groups", "fabric.kind"]);
            }
            if let Some(key) = s.sharp_turned_off_by(fidelity) {
                usage.read(key);
            }
        }
        if may(A::Nvls) {
            if s.no_nvls_reason(fidelity).is_none() {
                usage.read("cluster.nvls");
            }
            if let Some(key) = s.nvls_turned_off_by(fidelity) {
                usage.read(key);
            }
        }
    }
    read_nvlink_keys(s, usage);
    let computes = c.plan.ops.iter().any(
        |o| matches!(o, PlanOp::Compute { busy: true, duration, .. } if *duration > SimTime::ZERO),
    );
    let no_compute =
        (!computes).then_some("this Chakra trace set (no compute node of nonzero duration)");
    crate::workload::faults::read_keys(s.faults(), fidelity, no_compute, usage);
}

/// Runs a Chakra trace set: one DAG, its makespan the run's.
fn run_chakra(
    c: &crate::workload::chakra::ChakraSpec,
    exec: &Executor<'_>,
    acc: &mut Accumulated,
) -> Result<(), RunError> {
    let dag = c.build(exec.topo)?;
    // slow GPUs stretch the traces' compute (link faults are the executor's)
    let applied = crate::workload::faults::Applied::new(exec.scenario.faults(), exec.topo);
    let dag = applied.slow_dag(&dag, exec.topo).into_owned();
    let mut out = exec.run_faulty(&dag, SimTime::ZERO)?;
    acc.add_run("chakra", &dag, exec.topo, &mut out, 0);
    Ok(())
}

/// Records in `usage` the keys a traffic pattern consumes.
fn read_traffic_keys(
    s: &Scenario,
    spec: &crate::workload::traffic::TrafficSpec,
    fidelity: Fidelity,
    usage: &mut Usage,
) {
    use crate::workload::traffic::TrafficSpec;
    usage.read_all(&["workload.kind", "workload.pattern", "workload.extra_flows"]);
    match spec {
        TrafficSpec::Incast { .. } => {
            usage.read_all(&["workload.senders", "workload.receiver", "workload.bytes"])
        }
        TrafficSpec::Permutation { .. } => {
            usage.read_all(&["workload.bytes", "simulation.seed"]);
            usage.read_if("workload.per_host", s.cluster().gpus_per_host > 1, || {
                "with one GPU per node, permuting hosts is permuting GPUs".into()
            });
        }
        TrafficSpec::AllToAll { .. } => usage.read("workload.bytes"),
        TrafficSpec::RandomPairs { .. } => usage.read_all(&[
            "workload.cdf",
            "workload.load",
            "workload.duration",
            "simulation.seed",
        ]),
        TrafficSpec::Flows(_) => usage.read("workload.flows"),
    }
    usage.void("fabric.qps_per_connection", || {
        "a traffic pattern's flows are one queue pair each; queue pairs per connection shape collectives".into()
    });
    crate::workload::faults::read_keys(s.faults(), fidelity, Some("a traffic pattern"), usage);
}

/// Records in `usage` the keys a training or inference run consumes: its
/// workload, its faults, and the in-network reductions its collectives may choose.
fn read_model_workload_keys(s: &Scenario, fidelity: Fidelity, usage: &mut Usage) {
    match s.workload() {
        WorkloadSpec::Training(t) => training::read_keys(t, usage),
        WorkloadSpec::Inference(i) => inference::read_keys(i, usage),
        WorkloadSpec::Collective(_)
        | WorkloadSpec::Traffic(_)
        | WorkloadSpec::Jobs(_)
        | WorkloadSpec::Chakra(_) => return,
    }
    crate::workload::faults::read_keys(s.faults(), fidelity, None, usage);
    // a plan's collectives may reduce in the switches when their algorithm is
    // `auto` (NCCL's tuner, SHARP and NVLS included where they run) or fixed
    // to one that does
    let plan = match s.workload() {
        WorkloadSpec::Training(t) => &t.plan,
        WorkloadSpec::Inference(i) => &i.plan,
        WorkloadSpec::Collective(_)
        | WorkloadSpec::Traffic(_)
        | WorkloadSpec::Jobs(_)
        | WorkloadSpec::Chakra(_) => return,
    };
    use crate::collective::Algorithm as A;
    let fixed = |a: A| {
        [plan.dp_algorithm, plan.tp_algorithm]
            .iter()
            .any(|&c| c == AlgoChoice::Auto || c == AlgoChoice::Fixed(a))
    };
    let in_switches = fixed(A::Sharp) || fixed(A::CollnetChain) || fixed(A::Hierarchical);
    if in_switches {
        if s.no_sharp_reason(fidelity).is_none() {
            usage.read_all(&["fabric.sharp", "fabric.sharp_groups", "fabric.kind"]);
        }
        if let Some(key) = s.sharp_turned_off_by(fidelity) {
            usage.read(key);
        }
    }
    if fixed(A::Nvls) {
        if s.no_nvls_reason(fidelity).is_none() {
            usage.read("cluster.nvls");
        }
        if let Some(key) = s.nvls_turned_off_by(fidelity) {
            usage.read(key);
        }
    }
    read_nvlink_keys(s, usage);
    read_step_latencies(s, "workload.parallel.", usage);
}

/// Records the NVLink keys, which a node of several GPUs reads.
fn read_nvlink_keys(s: &Scenario, usage: &mut Usage) {
    if s.cluster().gpus_per_host > 1 {
        usage.read_all(&[
            "cluster.nvlink_bandwidth",
            "cluster.nvlink_latency",
            "cluster.nvlink_efficiency",
        ]);
    }
}

/// Records the software step latencies under `prefix`: the network's where
/// several nodes talk, NVLink's where a node has several GPUs.
fn read_step_latencies(s: &Scenario, prefix: &str, usage: &mut Usage) {
    usage.read_if(
        &format!("{prefix}step_latency"),
        s.cluster().hosts > 1,
        || "with one node no step crosses the network".into(),
    );
    usage.read_if(
        &format!("{prefix}nvlink_step_latency"),
        s.cluster().gpus_per_host > 1,
        || "with one GPU per node no step crosses NVLink".into(),
    );
}

/// The settings `scenario` sets that a run at `fidelity` would not use, with the
/// reason: what [`run`] reports, computed by the same readers without simulating
/// (the topology is built; collective sizes are planned).
///
/// # Errors
/// When the topology cannot be built or a collective cannot be planned.
pub fn ignored_settings(
    scenario: &Scenario,
    fidelity: Fidelity,
) -> Result<Vec<crate::config::IgnoredSetting>, RunError> {
    let mut usage = Usage::new(scenario.keys_set());
    let topo = scenario.build_topology_used(fidelity, &mut usage)?;
    read_backend_keys(scenario, fidelity, scenario.seed(), &mut usage);
    match scenario.workload() {
        WorkloadSpec::Collective(w) => {
            let ranks = all_ranks(&topo);
            for &bytes in &w.sizes {
                let spec = spec_for(w, bytes, &ranks, &topo)?;
                read_collective_keys(scenario, w, &spec, &ranks, &topo, fidelity, &mut usage);
            }
        }
        WorkloadSpec::Traffic(t) => read_traffic_keys(scenario, t, fidelity, &mut usage),
        WorkloadSpec::Training(_) | WorkloadSpec::Inference(_) => {
            read_model_workload_keys(scenario, fidelity, &mut usage)
        }
        WorkloadSpec::Jobs(j) => jobs::read_jobs_keys(scenario, j, &topo, fidelity, &mut usage)?,
        WorkloadSpec::Chakra(c) => read_chakra_keys(scenario, c, fidelity, &mut usage),
    }
    Ok(usage.ignored(scenario.workload().kind_name(), fidelity))
}

/// Everything needed to execute a DAG at the chosen fidelity.
#[derive(Clone, Copy)]
struct Executor<'a> {
    scenario: &'a Scenario,
    topo: &'a Topology,
    fidelity: Fidelity,
    seed: u64,
    opts: &'a RunOptions,
    /// The packet level's settings as the run read them (at the packet
    /// fidelity; `None` elsewhere, or where a caller builds them itself).
    packet: Option<&'a backend::packet::PacketConfig>,
    /// The scenario's link and switch faults, applied to every DAG this
    /// executor runs (collective sweeps and traffic patterns; a training or
    /// inference run applies its own, fault by fault).
    link_events: &'a [LinkEvent],
}

impl Executor<'_> {
    /// The classes the flow level shares links among (`None` at the other
    /// fidelities, or with one class ridden; the run's ledger records them).
    fn flow_classes(&self) -> Option<crate::mechanism::TrafficClasses> {
        (self.fidelity == Fidelity::Flow)
            .then(|| flow_classes_used(self.scenario, &mut Usage::new(&[])))
            .flatten()
    }

    /// Runs one DAG at this fidelity; `horizon` is a guess of its length for the
    /// report's link timeline (zero when unknown).
    fn run_dag(&self, dag: &Dag, horizon: SimTime) -> Result<RunOutput, BackendError> {
        let cfg = BackendConfig {
            link_events: self.link_events.to_vec(),
            // read once per run by `read_backend_keys`, which records its keys
            packet: match self.packet {
                Some(cfg) => Some(cfg.clone()),
                None => (self.fidelity == Fidelity::Packet)
                    .then(|| packet_config(self.scenario, self.seed)),
            },
            classes: self.flow_classes(),
            ..BackendConfig::new(self.fidelity, self.seed)
        };
        let observers = Observers {
            progress: self.opts.progress.clone(),
            // the report shows the TIMELINE_LINKS busiest over all runs; each
            // run keeps 4x that many candidates
            link_timeline: self.opts.detail.then_some(TimelineRequest {
                horizon,
                links: 4 * TIMELINE_LINKS,
            }),
            sampling: None,
            // only the timeline export reads each task's start and end
            skip_task_spans: !self.opts.trace,
        };
        backend::run(dag, self.topo, &cfg, &observers)
    }

    /// [`Executor::run_dag`] with the scenario's faults; a transfer they leave
    /// without a path is an error located at the fault that cut it.
    fn run_faulty(&self, dag: &Dag, horizon: SimTime) -> Result<RunOutput, RunError> {
        check_dag_budget(self.scenario, self.topo, self.fidelity, dag)?;
        self.run_dag(dag, horizon).map_err(|e| {
            let every: Vec<usize> = (0..self.scenario.faults().len()).collect();
            cut_error(dag, self.scenario, self.topo, self.fidelity, &every, e)
        })
    }

    /// This executor on the healthy fabric (no link events).
    fn healthy(&self) -> Executor<'_> {
        Executor {
            link_events: &[],
            ..*self
        }
    }
}

/// Refuses `dag` when running it at `fidelity` would not fit the scenario's
/// `simulation.max_memory`, counted on the built DAG (its tasks and
/// dependencies, [`crate::budget::check_dag`]) before the backend allocates
/// anything: the scenario's estimate counts tasks only, and a workload whose
/// dependencies grow faster would otherwise meet the OOM killer instead.
/// The most simulations of scenario `s` that run independently of each
/// other, which `simulation.threads` spreads over worker threads: each job
/// alone, and with several faults the healthy fabric and each fault alone
/// (training, inference and jobs).
fn independent_runs(s: &Scenario) -> usize {
    let faults = if s.faults().len() > 1 {
        1 + s.faults().len()
    } else {
        1
    };
    match s.workload() {
        WorkloadSpec::Jobs(jobs) => jobs.len().max(faults),
        WorkloadSpec::Training(_) | WorkloadSpec::Inference(_) => faults,
        _ => 1,
    }
}

/// Worker threads for `runs` independent simulations each about the size of
/// `dag`: `--threads`, else `simulation.threads`, else the machine's cores; at
/// most one per run, and no more than the memory budget holds at once (each
/// thread runs one whole simulation).
fn workers(exec: &Executor<'_>, runs: usize, dag: &Dag) -> usize {
    let asked = asked_threads(exec);
    let estimate = crate::budget::run(exec.scenario, exec.topo, exec.fidelity);
    let per_run = crate::budget::run_memory(dag, &estimate).max(1.0);
    let fit = (exec.scenario.budget().max_memory as f64 / per_run).floor() as usize;
    asked.min(runs).min(fit).max(1)
}

/// Tasks from which a flow-level run counts its busiest NIC's bytes on a
/// thread of its own: a pass over the tasks, ~10 ns each (1.3% of a
/// 16,384-GPU run's 9 s), against some 50 µs to start and join a thread.
const OVERLAP_MIN_TASKS: usize = 1 << 18;

/// Threads asked for: `--threads`, else `simulation.threads`, else the
/// machine's cores.
fn asked_threads(exec: &Executor<'_>) -> usize {
    exec.opts
        .threads
        .or(exec.scenario.budget().threads.map(|t| t as usize))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1)
}

thread_local! {
    /// Simulations running side by side with the one on this thread (itself
    /// included): set in [`run_parallel`]'s workers, 1 elsewhere.
    static SIDE_BY_SIDE: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
}

/// Threads one simulation may use itself (at the flow level, the closed
/// forms that tune and lower a collective, [`collective::with_threads`],
/// and its busiest NIC's count beside the run): those asked for
/// ([`asked_threads`]) that the simulations running side by side leave, at
/// least one. Results are identical at every count.
fn sim_threads(exec: &Executor<'_>) -> usize {
    (asked_threads(exec) / SIDE_BY_SIDE.with(|c| c.get())).max(1)
}

/// Runs the `n` independent simulations `run(0..n)` on up to `workers`
/// threads and returns their results in index order, so the output is the
/// same whatever the thread count; the first error by index is the one
/// reported.
fn run_parallel<T: Send>(
    workers: usize,
    n: usize,
    run: impl Fn(usize) -> Result<T, RunError> + Sync,
) -> Result<Vec<T>, RunError> {
    if workers <= 1 || n <= 1 {
        return (0..n).map(run).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(n));
    // a worker that panics makes the scope panic when it joins, so every
    // index below `n` is in `done` afterwards
    let side = workers.min(n);
    std::thread::scope(|scope| {
        for _ in 0..side {
            scope.spawn(|| loop {
                SIDE_BY_SIDE.with(|c| c.set(side));
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = run(i);
                if let Ok(mut d) = done.lock() {
                    d.push((i, r));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_default();
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}

fn check_dag_budget(
    scenario: &Scenario,
    topo: &Topology,
    fidelity: Fidelity,
    dag: &Dag,
) -> Result<(), RunError> {
    let estimate = crate::budget::run(scenario, topo, fidelity);
    crate::budget::check_dag(dag, &estimate, &scenario.budget())
        .map_err(|e| RunError::Budget(e.to_string()))
}

fn run_collectives(
    w: &CollectiveWorkload,
    exec: &Executor<'_>,
    acc: &mut Accumulated,
    usage: &mut Usage,
) -> Result<(), RunError> {
    let topo = exec.topo;
    let ranks = all_ranks(topo);
    let n = ranks.len() as u32;
    if exec.opts.detail && exec.fidelity != Fidelity::Analytical {
        acc.keep_matrix(topo.hosts);
    }
    if exec.opts.flow_records {
        acc.keep_every_record();
    }
    // the closed forms that tune and lower a collective run on the
    // simulation's threads (collective::hierarchical::pipeline_blocks)
    let threads = if exec.fidelity == Fidelity::Flow {
        sim_threads(exec)
    } else {
        1 // the other fidelities' notes say one thread (`read_backend_keys`)
    };
    for &bytes in &w.sizes {
        let spec = collective::with_threads(threads, || spec_for(w, bytes, &ranks, topo))?;
        read_collective_keys(exec.scenario, w, &spec, &ranks, topo, exec.fidelity, usage);
        // with faults every fidelity runs the schedule (the closed forms know
        // no timed link event), and the healthy fabric's time is the baseline
        let faulty = !exec.link_events.is_empty();
        let time = if exec.fidelity == Fidelity::Analytical && !faulty {
            // closed forms: no DAG, so 100k+ GPUs cost O(N)
            let t = closed_form_time(w, &spec, &ranks, topo)?;
            let moved = collective::traffic_bytes(&spec, &ranks, topo)?;
            let label = format!("{} {}", spec.op.name(), format_bytes(bytes));
            acc.add_closed_form(&label, moved, t);
            t
        } else {
            let mut dag = Dag::new();
            dag.begin_op(spec.op.name());
            collective::with_threads(threads, || {
                lower_collective(w, &spec, &ranks, topo, &mut dag, &[])
            })?;
            // the closed form is a cheap guess of the run's length for the timeline
            // (contention only stretches it, which the timeline absorbs by doubling)
            let horizon = if exec.opts.detail {
                closed_form_time(w, &spec, &ranks, topo).unwrap_or_default()
            } else {
                SimTime::ZERO
            };
            let label = format!("{} {}", spec.op.name(), format_bytes(bytes));
            // the busiest NIC's bytes need the DAG only: on a large flow-level
            // run they are counted on a thread of their own alongside it
            let overlap =
                exec.fidelity == Fidelity::Flow && threads > 1 && dag.len() >= OVERLAP_MIN_TASKS;
            let (out, wire) = std::thread::scope(|s| {
                let nic = overlap.then(|| s.spawn(|| busiest_nic_bytes(&dag, topo)));
                let out = exec.run_faulty(&dag, horizon);
                (out, nic.and_then(|h| h.join().ok()))
            });
            let mut out = out.map_err(|e| e.during(|| label.clone()))?;
            acc.add_run(&label, &dag, topo, &mut out, bytes);
            let t = out.op_timing[0];
            let time = t.end - t.start;
            let mut r = row(w, &spec, n, time.as_secs_f64());
            if faulty {
                let healthy = exec
                    .healthy()
                    .run_dag(&dag, horizon)
                    .map_err(|e| RunError::from(e).during(|| format!("healthy {label}")))?;
                acc.add_events(healthy.events);
                let t = healthy.op_timing[0];
                let h = row(w, &spec, n, (t.end - t.start).as_secs_f64());
                r.healthy_time_us = Some(h.time_us);
                r.healthy_busbw_gbps = Some(h.busbw_gbps);
            }
            let wire = wire.unwrap_or_else(|| busiest_nic_bytes(&dag, topo));
            if wire > 0 && time > SimTime::ZERO {
                r.wirebw_gbps = Some(wire as f64 / time.as_secs_f64() / 1e9);
            }
            acc.push_row(r);
            continue;
        };
        acc.push_row(row(w, &spec, n, time.as_secs_f64()));
    }
    Ok(())
}

/// The all-to-allv's receive shares when `w` asks for one and runs an
/// all-to-all (`workload.alltoall_skew` / `alltoall_load`); `None` otherwise.
fn alltoallv_split<'a>(
    w: &'a CollectiveWorkload,
    spec: &CollectiveSpec,
) -> Option<collective::alltoall::Split<'a>> {
    (spec.op == collective::CollectiveOp::AllToAll)
        .then_some(w.alltoall_load.as_deref())
        .flatten()
        .map(collective::alltoall::Split::ToDestination)
}

/// Lowers one size of a collective workload: the all-to-allv
/// ([`collective::alltoall::lower_v`]) when it has receive shares, else the
/// collective's own lowering.
///
/// # Errors
/// As the lowering.
pub fn lower_collective(
    w: &CollectiveWorkload,
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    dag: &mut Dag,
    after: &[crate::dag::Dep],
) -> Result<crate::dag::TaskId, CollectiveError> {
    match alltoallv_split(w, spec) {
        Some(split) => collective::alltoall::lower_v(spec, split, ranks, topo, dag, after),
        None => collective::lower(spec, ranks, topo, dag, after),
    }
}

/// The closed-form time of one size of a collective workload (the
/// all-to-allv's when it has receive shares).
fn closed_form_time(
    w: &CollectiveWorkload,
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    match alltoallv_split(w, spec) {
        Some(split) => collective::alltoall::time_v(spec, split, ranks, topo),
        None => collective::analytical_time(spec, ranks, topo),
    }
}

fn run_traffic(
    spec: &crate::workload::traffic::TrafficSpec,
    exec: &Executor<'_>,
    acc: &mut Accumulated,
) -> Result<(), RunError> {
    use crate::workload::traffic::{generate, TrafficSpec};
    // The scenario's seed drives the pattern; the source rate is the NIC's.
    let mut spec = spec.clone();
    match &mut spec {
        TrafficSpec::Permutation { seed, .. } => *seed = exec.seed,
        TrafficSpec::RandomPairs {
            seed, source_rate, ..
        } => {
            *seed = exec.seed;
            *source_rate = exec.scenario.host_rate();
        }
        _ => {}
    }
    if exec.opts.detail && exec.fidelity != Fidelity::Analytical {
        acc.keep_matrix(exec.topo.hosts);
    }
    let mut dag = generate(&spec, exec.topo)
        .map_err(|e| RunError::Unsupported(format!("workload.{}: {}", e.field, e.message)))?;
    // a flow list's flows are one operation each, whose timing is the flow's
    let listed_ops = match &spec {
        TrafficSpec::Flows(list) => {
            dag = Dag::new();
            Some(crate::workload::flows::lower(list, &mut dag))
        }
        _ => None,
    };
    crate::workload::traffic::add_extra_flows(&mut dag, exec.scenario.extra_flows());
    crate::workload::traffic::one_connection_per_flow(&mut dag);
    let mut out = exec.run_faulty(&dag, SimTime::ZERO)?;
    if let (TrafficSpec::Flows(list), Some(ops)) = (&spec, &listed_ops) {
        let rows = list
            .iter()
            .zip(ops)
            .filter_map(|(f, &op)| {
                let t = out.op_timing.get(op as usize)?;
                Some(crate::report::ListedFlowResult {
                    id: f.id.clone(),
                    src: f.src.0,
                    dst: f.dst.0,
                    bytes: f.bytes,
                    start_us: t.start.as_us(),
                    end_us: t.end.as_us(),
                    fct_us: (t.end - t.start).as_us(),
                })
            })
            .collect();
        acc.set_listed_flows(rows);
    }
    // One row per flow in flows.csv (collective_bytes is 0: no collective).
    acc.add_run("traffic", &dag, exec.topo, &mut out, 0);
    Ok(())
}

/// The packet level's settings for a scenario.
pub fn packet_config(s: &Scenario, seed: u64) -> backend::packet::PacketConfig {
    packet_config_used(s, seed, &mut Usage::new(s.keys_set()))
}

/// The packet level's settings for a scenario, recording in `usage` which keys
/// they consume and why the others change nothing at the packet fidelity.
pub fn packet_config_used(
    s: &Scenario,
    seed: u64,
    usage: &mut Usage,
) -> backend::packet::PacketConfig {
    use crate::backend::packet::{
        CongestionControl, Ecn, FlowControl, HostPath, PacketConfig, Routing as PRouting, Transport,
    };
    use crate::config::{FabricKind, Routing};
    let p = s.packet();
    let flow_control = match (s.fabric().kind(), p.pfc()) {
        (FabricKind::InfiniBand, _) => FlowControl::Credit,
        (_, Some((xoff, xon, headroom))) => FlowControl::Pfc {
            xoff,
            xon,
            headroom,
        },
        (FabricKind::Roce | FabricKind::Ethernet, None) => FlowControl::Lossy,
    };
    usage.read_all(&[
        "simulation.seed",
        "fabric.mtu",
        "fabric.header_bytes",
        "fabric.buffer",
        "fabric.kind",
        "fabric.vl_escalation",
        "fabric.cut_through",
        "fabric.routing",
        "fabric.window",
        "fabric.transport",
        "fabric.ecn",
        "fabric.cc",
        "simulation.deadlock_timeout",
        "simulation.sample_interval",
        "simulation.time_limit",
        "cluster.gpu_direct",
    ]);
    // a law that needs one echo per data packet (DCTCP's marks, Swift's
    // delays, HPCC's telemetry, TCP's duplicate ACKs) fixes the ACK interval
    let own_acks = crate::backend::packet::cc::CcState::ack_every(&p.cc(), 0) != 0;
    usage.read_if("fabric.ack_every", !own_acks, || {
        format!(
            "the congestion control ({}) ACKs every data packet: it needs one echo per packet",
            p.cc().name()
        )
    });
    // lanes matter where PFC pauses one and not another (with one lane,
    // control packets wait behind paused data)
    usage.read("fabric.virtual_lanes");
    let pfc_on = matches!(flow_control, FlowControl::Pfc { .. });
    usage.read_if(
        "fabric.pfc",
        s.fabric().kind() != FabricKind::InfiniBand,
        || "InfiniBand is lossless by its credits; PFC is an Ethernet mechanism".into(),
    );
    let dynamic = matches!(
        p.pfc_threshold(),
        crate::mechanism::PfcThreshold::Dynamic { .. }
    );
    for key in ["fabric.pfc_xoff", "fabric.pfc_xon"] {
        usage.read_if(key, pfc_on && !dynamic, || {
            if pfc_on {
                "the PFC threshold is dynamic (fabric.pfc_threshold = \"dynamic\"): XOFF is pfc_alpha x the free shared buffer, XON two packets below it".into()
            } else {
                PFC_OFF.into()
            }
        });
    }
    usage.read_if("fabric.pfc_headroom", pfc_on && p.pfc_headroom_pool() == 0, || {
        if pfc_on {
            "the shared headroom pool (fabric.pfc_headroom_pool) takes what arrives after XOFF instead of per-port headroom".into()
        } else {
            PFC_OFF.into()
        }
    });
    for key in [
        "fabric.pfc_pause_quanta",
        "fabric.pfc_threshold",
        "fabric.pfc_headroom_pool",
        "fabric.pfc_watchdog",
    ] {
        usage.read_if(key, pfc_on, || PFC_OFF.into());
    }
    usage.read_if(
        "fabric.pfc_watchdog_restore",
        pfc_on && p.pfc_watchdog() > SimTime::ZERO,
        || {
            if pfc_on {
                "the PFC watchdog is off (fabric.pfc_watchdog = 0): nothing to recover from".into()
            } else {
                PFC_OFF.into()
            }
        },
    );
    usage.read_if("fabric.pfc_alpha", pfc_on && dynamic, || {
        if pfc_on {
            "the PFC threshold is static (fabric.pfc_threshold = \"static\"); alpha sets a dynamic XOFF".into()
        } else {
            PFC_OFF.into()
        }
    });
    for key in [
        "fabric.ecn_kmin",
        "fabric.ecn_kmax",
        "fabric.ecn_pmax",
        "fabric.ecn_mark_at",
    ] {
        usage.read_if(key, p.ecn().is_some(), || {
            "ECN marking is off (fabric.ecn = false)".into()
        });
    }
    usage.read_if(
        "fabric.dctcp_g",
        matches!(p.cc(), CongestionControl::Dctcp { .. }),
        || "the congestion control is not DCTCP (fabric.cc)".into(),
    );
    usage.read_if(
        "fabric.dcqcn",
        matches!(p.cc(), CongestionControl::Dcqcn(_)),
        || "the congestion control is not DCQCN (fabric.cc)".into(),
    );
    usage.read_if(
        "fabric.swift",
        matches!(p.cc(), CongestionControl::Swift(_)),
        || "the congestion control is not Swift (fabric.cc)".into(),
    );
    match p.cc() {
        CongestionControl::Timely(t) if t.update == crate::mechanism::TimelyUpdate::Rtt => {
            // once per round trip, the completion event sets nothing
            usage.skip("fabric.timely.seg_bytes", || {
                "TIMELY updates once per round trip (fabric.timely.update = \"rtt\"), not per completed segment".into()
            });
            for k in [
                "t_low",
                "t_high",
                "min_rtt",
                "alpha",
                "beta",
                "delta",
                "hai_threshold",
                "update",
            ] {
                usage.read(&format!("fabric.timely.{k}"));
            }
        }
        _ => usage.read_if(
            "fabric.timely",
            matches!(p.cc(), CongestionControl::Timely(_)),
            || "the congestion control is not TIMELY (fabric.cc)".into(),
        ),
    }
    usage.read_if(
        "fabric.hpcc",
        matches!(p.cc(), CongestionControl::Hpcc(_)),
        || "the congestion control is not HPCC (fabric.cc)".into(),
    );
    usage.read_if(
        "fabric.ib_cc",
        matches!(p.cc(), CongestionControl::Ib(_)),
        || "the congestion control is not InfiniBand CC (fabric.cc)".into(),
    );
    let lossy = flow_control == FlowControl::Lossy;
    usage.read_if("fabric.shared_buffer", lossy || pfc_on, || {
        "InfiniBand credits advertise per-port buffers; a shared buffer is an Ethernet switch's (lossy or PFC)".into()
    });
    usage.read_if("fabric.shared_buffer_alpha", lossy && p.shared_buffer() > 0, || {
        if lossy {
            "without a shared buffer (fabric.shared_buffer = 0) each port admits up to fabric.buffer".into()
        } else if pfc_on {
            "under PFC the shared buffer's dynamic threshold is fabric.pfc_alpha (with pfc_threshold = \"dynamic\")".into()
        } else {
            "a shared buffer admits packets on lossy links only; lossless queues (PFC or credits) are bounded by their own thresholds".into()
        }
    });
    for key in [
        "fabric.tcp_packet_overhead",
        "fabric.tcp_jitter",
        "fabric.tcp_tso_bytes",
    ] {
        usage.read_if(key, p.tcp(), || {
            "the transport is RDMA (fabric.transport = \"rdma\"); TCP costs apply to \"tcp\" only".into()
        });
    }
    usage.read("fabric.loss_recovery");
    usage.read_if(
        "fabric.rto",
        p.loss_recovery() != crate::mechanism::LossRecovery::Tcp,
        || "TCP's loss recovery (fabric.loss_recovery = \"tcp\", the default of transport = \"tcp\") computes its timeout as RFC 6298 says, between fabric.tcp_min_rto and fabric.tcp_max_rto".into(),
    );
    for key in ["fabric.tcp_min_rto", "fabric.tcp_max_rto"] {
        usage.read_if(
            key,
            p.loss_recovery() == crate::mechanism::LossRecovery::Tcp,
            || "the loss recovery is not TCP's (fabric.loss_recovery = \"tcp\", the default of transport = \"tcp\"): the other laws run a fixed fabric.rto".into(),
        );
    }
    for key in ["fabric.tcp_delayed_ack", "fabric.tcp_sack"] {
        usage.read_if(
            key,
            p.loss_recovery() == crate::mechanism::LossRecovery::Tcp,
            || "the loss recovery is not TCP's (fabric.loss_recovery = \"tcp\", the default of transport = \"tcp\"): the other laws' receivers ACK every fabric.ack_every packets and NACK what they miss".into(),
        );
    }
    usage.read_if(
        "fabric.tcp_rack",
        p.loss_recovery() == crate::mechanism::LossRecovery::Tcp && p.tcp_sack(),
        || "RACK-TLP (RFC 8985) runs on TCP's loss recovery with SACK only (fabric.loss_recovery = \"tcp\", fabric.tcp_sack = true): it needs the SACK scoreboard".into(),
    );
    usage.read_if(
        "fabric.tcp_dsack",
        p.loss_recovery() == crate::mechanism::LossRecovery::Tcp && p.tcp_sack(),
        || "D-SACK (RFC 2883) runs on TCP's loss recovery with SACK only (fabric.loss_recovery = \"tcp\", fabric.tcp_sack = true): its block rides the SACK option".into(),
    );
    usage.read_if(
        "fabric.tcp_initial_window",
        matches!(
            p.cc(),
            CongestionControl::NewReno { .. } | CongestionControl::Cubic { .. }
        ),
        || "the congestion control is not NewReno or CUBIC (fabric.cc)".into(),
    );
    usage.read_if(
        "fabric.rto_low",
        p.loss_recovery() == crate::mechanism::LossRecovery::SelectiveRepeat,
        || "the loss recovery is not selective repeat (fabric.loss_recovery): its RTO_low has no other use".into(),
    );
    usage.read_if("fabric.trimming", lossy, || {
        "the links are lossless (PFC or InfiniBand credits): no queue ever drops, so none trims"
            .into()
    });
    usage.read_if(
        "fabric.flowlet_gap",
        s.fabric().routing() == Routing::Flowlet,
        || "the routing is not \"flowlet\" (fabric.routing)".into(),
    );
    for key in ["cluster.host_copy_bandwidth", "cluster.host_copy_latency"] {
        usage.read_if(key, !s.gpu_direct(), || {
            "the host-staged copy applies only with gpu_direct = false".into()
        });
    }
    let classes = classes_used(s, pfc_on, p.ecn().is_some(), usage);
    // Control packets: the data header plus the AETH (ACK) or the CNP's 16
    // reserved bytes; a TCP ACK is a bare header, at least a minimum frame
    // (64 B + 20 B of preamble and gap).
    let header = s.fabric().header_bytes() as u32;
    let (ack_bytes, cnp_bytes) = if p.tcp() {
        (header.max(84), header.max(84))
    } else {
        (
            header + crate::mechanism::defaults::AETH_BYTES,
            header + crate::mechanism::defaults::CNP_PAYLOAD_BYTES,
        )
    };
    PacketConfig {
        seed,
        mtu: s.fabric().mtu() as u32,
        header_bytes: header,
        ack_bytes,
        cnp_bytes,
        ecn_mark_at: p.ecn_mark_at(),
        vls: p.virtual_lanes().max(if p.vl_escalation() { 3 } else { 1 }),
        flow_control,
        pfc_pause_quanta: p.pfc_pause_quanta(),
        pfc_threshold: p.pfc_threshold(),
        pfc_headroom_pool: p.pfc_headroom_pool(),
        pfc_watchdog: p.pfc_watchdog(),
        pfc_watchdog_restore: p.pfc_watchdog_restore(),
        ecn: p.ecn().map(|(kmin, kmax, pmax)| Ecn { kmin, kmax, pmax }),
        cc: p.cc(),
        deadlock_timeout: p.deadlock_timeout(),
        port_buffer_bytes: p.buffer(),
        shared_buffer_bytes: p.shared_buffer(),
        shared_buffer_alpha: p.shared_buffer_alpha(),
        routing: match s.fabric().routing() {
            Routing::Ecmp => PRouting::Ecmp,
            Routing::Adaptive => PRouting::Adaptive,
            Routing::Spray => PRouting::Spray,
            Routing::Flowlet => PRouting::Flowlet,
            // a dragonfly's group routings: the topology holds the group
            // choice, the ECMP hash picks among a hop's parallel links
            Routing::Minimal | Routing::Valiant | Routing::Ugal | Routing::UgalG => PRouting::Ecmp,
        },
        window_bytes: p.window(),
        window_bdp: p.window_bdp(),
        ack_every: p.ack_every(),
        rto: p.rto(),
        flowlet_gap: p.flowlet_gap(),
        loss_recovery: p.loss_recovery(),
        rto_low: p.rto_low(),
        tcp_min_rto: p.tcp_min_rto(),
        tcp_max_rto: p.tcp_max_rto(),
        tcp_tso_bytes: p.tcp_tso_bytes(),
        tcp_delayed_ack: p.tcp_delayed_ack(),
        tcp_sack: p.tcp_sack(),
        tcp_rack: p.tcp_rack(),
        tcp_dsack: p.tcp_dsack(),
        // only lossy queues trim (the key is listed otherwise)
        trimming: p.trimming() && flow_control == FlowControl::Lossy,
        host_path: if s.gpu_direct() {
            HostPath::GpuDirect
        } else {
            HostPath::HostStaged {
                copy_rate: s.host_copy_rate(),
                copy_latency: s.host_copy_latency(),
            }
        },
        transport: if p.tcp() {
            Transport::Tcp {
                per_packet_overhead: p.tcp_packet_overhead(),
                jitter: p.tcp_jitter(),
            }
        } else {
            Transport::Rdma
        },
        vl_escalation: p.vl_escalation(),
        cut_through: p.cut_through(),
        sample_interval: p.sample_interval(),
        time_limit: p.time_limit(),
        classes,
        ..PacketConfig::default()
    }
}

/// The `class` keys of the extra and listed flows that set one.
fn flow_class_keys(s: &Scenario) -> Vec<String> {
    let listed: &[crate::workload::flows::ListedFlow] = match s.workload() {
        WorkloadSpec::Traffic(crate::workload::traffic::TrafficSpec::Flows(list)) => list,
        _ => &[],
    };
    let extra = s
        .extra_flows()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.class.is_some());
    let flows = listed.iter().enumerate().filter(|(_, f)| f.class.is_some());
    extra
        .map(|(i, _)| format!("workload.extra_flows.{i}.class"))
        .chain(flows.map(|(i, _)| format!("workload.flows.{i}.class")))
        .collect()
}

/// The classes the transfers of `s` ride at the flow level: a listed flow's
/// own or the workload's (`workload.class`, default the first), and an extra
/// flow's; every other workload rides the workload's class.
fn classes_ridden(s: &Scenario, tc: &crate::mechanism::TrafficClasses) -> BTreeSet<u8> {
    let mut ridden = BTreeSet::new();
    match s.workload() {
        WorkloadSpec::Traffic(crate::workload::traffic::TrafficSpec::Flows(list)) => {
            ridden.extend(list.iter().map(|f| f.class.unwrap_or(tc.data)));
        }
        _ => {
            ridden.insert(tc.data);
        }
    }
    if matches!(s.workload(), WorkloadSpec::Traffic(_)) {
        ridden.extend(s.extra_flows().iter().map(|f| f.class.unwrap_or(tc.data)));
    }
    ridden
}

/// The traffic classes the flow level shares links among, when the
/// transfers ride more than one (`backend::class_share`: strict priority
/// between levels, weights within a level, max-min within a class); their
/// PFC and ECN settings, ACK and CNP classes are listed with the reason.
/// With one class ridden, links are shared max-min as without classes and
/// the table is listed.
pub(crate) fn flow_classes_used(
    s: &Scenario,
    usage: &mut Usage,
) -> Option<crate::mechanism::TrafficClasses> {
    let tc = s.packet().classes()?;
    let no_bytes = || {
        "ACKs and CNPs carry no bytes at the flow fidelity (a transfer is fluid data; its acknowledgements and congestion notifications are packets, modeled at the packet fidelity)".to_string()
    };
    usage.void("fabric.ack_class", no_bytes);
    usage.void("fabric.cnp_class", no_bytes);
    let ridden = classes_ridden(s, tc);
    if ridden.len() < 2 {
        let name = &tc.classes[usize::from(ridden.first().copied().unwrap_or(tc.data))].name;
        let why = || {
            format!(
                "every transfer rides class {name:?}, which shares links max-min as without classes at the flow fidelity: put a flow in another class (workload.class, a flow's class) for the classes to share links"
            )
        };
        for key in &CLASS_KEYS {
            usage.void(key, why);
        }
        for key in flow_class_keys(s) {
            usage.void(&key, why);
        }
        return None;
    }
    usage.read("fabric.classes");
    usage.read("workload.class");
    for key in flow_class_keys(s) {
        usage.read(&key);
    }
    let no_queues = || {
        "the flow fidelity has no queues: nothing pauses, drops or is marked, so a class's PFC and ECN settings act at the packet fidelity; here a class is its priority and weight".to_string()
    };
    for i in 0..tc.classes.len() {
        for leaf in ["pfc", "ecn_kmin", "ecn_kmax", "ecn_pmax"] {
            usage.void(&format!("fabric.classes.{i}.{leaf}"), no_queues);
        }
    }
    Some(tc.clone())
}

/// The keys that name traffic classes (the table, and what refers to it).
const CLASS_KEYS: [&str; 4] = [
    "fabric.classes",
    "fabric.ack_class",
    "fabric.cnp_class",
    "workload.class",
];

/// The traffic classes the packet level runs, when they change anything:
/// some traffic leaves the default lanes (data off class 0, a flow in
/// another class, ACKs or CNPs in a named class), or the class all data
/// rides admits or marks otherwise than the fabric (lossy under PFC, its
/// own ECN thresholds with marking on). Otherwise every packet rides lanes
/// scheduled, admitted and marked as without classes, and the run is the
/// same as without the table, which is then listed with the reason.
fn classes_used(
    s: &Scenario,
    pfc_on: bool,
    ecn_on: bool,
    usage: &mut Usage,
) -> Option<crate::mechanism::TrafficClasses> {
    let tc = s.packet().classes()?;
    let listed = match s.workload() {
        WorkloadSpec::Traffic(crate::workload::traffic::TrafficSpec::Flows(list)) => {
            list.iter().any(|f| f.class.is_some_and(|c| c != tc.data))
        }
        _ => false,
    };
    let moved = tc.data != 0
        || tc.ack.is_some()
        || tc.cnp.is_some()
        || listed
        || s.extra_flows()
            .iter()
            .any(|f| f.class.is_some_and(|c| c != tc.data));
    let c = &tc.classes[usize::from(tc.data)];
    let admits = pfc_on && !c.lossless;
    let marks = ecn_on && c.ecn.is_some();
    if moved || admits || marks {
        for key in &CLASS_KEYS {
            usage.read(key);
        }
        for key in flow_class_keys(s) {
            usage.read(&key);
        }
        Some(tc.clone())
    } else {
        let why = || {
            format!(
                "all traffic rides class {:?} (lane 0, ACKs and CNPs on the top lane), scheduled, admitted and marked as without classes here: name another class on workload.class, a flow's class, ack_class or cnp_class, or make it lossy (pfc = false, under PFC) or give it ECN thresholds (with ECN on)",
                c.name
            )
        };
        for key in &CLASS_KEYS {
            usage.void(key, why);
        }
        for key in flow_class_keys(s) {
            usage.void(&key, why);
        }
        None
    }
}

/// One nccl-tests row: algbw = S / t, busbw = algbw × factor (nccl-tests PERFORMANCE.md).
/// An all-to-allv (receive shares set) is the row `alltoallv`, reported as
/// nccl-tests reports its all-to-all: S is each rank's send buffer, algbw =
/// S / t and busbw = algbw·(N−1)/N, the uniform exchange's bus bandwidth for
/// the same buffer, so skew shows as lost busbw (1/(N·max w) of the uniform's
/// on a non-blocking switch).
pub fn row(w: &CollectiveWorkload, spec: &CollectiveSpec, n: u32, secs: f64) -> CollectiveRow {
    let algbw = if secs > 0.0 {
        spec.bytes as f64 / secs / 1e9
    } else {
        0.0
    };
    let skewed = spec.op == collective::CollectiveOp::AllToAll && w.alltoall_load.is_some();
    CollectiveRow {
        op: if skewed { "alltoallv" } else { spec.op.name() }.to_string(),
        algorithm: spec.algorithm.name().to_string(),
        bytes: spec.bytes,
        count: spec.bytes / w.dtype.size,
        dtype: w.dtype.name.to_string(),
        ranks: n,
        time_us: secs * 1e6,
        algbw_gbps: algbw,
        busbw_gbps: algbw * spec.op.busbw_factor(n),
        protocol: if collective::uses_protocol(spec.algorithm) {
            spec.proto.protocol.name()
        } else {
            collective::Protocol::Simple.name()
        }
        .to_string(),
        channels: if spec.algorithm == collective::Algorithm::Ring {
            spec.channels
        } else {
            1
        },
        wirebw_gbps: None,
        healthy_time_us: None,
        healthy_busbw_gbps: None,
    }
}

/// Wire bytes the busiest NIC uplink carried in `dag`: GPU-to-GPU transfers
/// between hosts leave through their source GPU's NIC (a PXN relay's, for a
/// relayed leg), and in-network reductions through the NIC of the GPU that
/// sends to its edge switch. Zero when nothing leaves a host.
pub fn busiest_nic_bytes(dag: &Dag, topo: &Topology) -> u64 {
    // by node id: a table, not a map (a map's insert per transfer was 1.4%
    // of flow16k-tree-4m)
    let mut per_nic = vec![0u64; topo.nodes.len()];
    for t in dag.tasks() {
        let nic = match t.kind {
            TaskKind::Transfer { src, dst, bytes } if topo.host_of(src) != topo.host_of(dst) => {
                Some((topo.gpus[src.0 as usize].nic, bytes))
            }
            TaskKind::NetTransfer { src, dst, bytes } => {
                match (topo.node(src).kind, topo.node(dst).kind) {
                    (NodeKind::Gpu { gpu }, NodeKind::Switch { .. }) => {
                        Some((topo.gpus[gpu.0 as usize].nic, bytes))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some((n, b)) = nic {
            if let Some(x) = per_nic.get_mut(n.0 as usize) {
                *x += b;
            }
        }
    }
    per_nic.into_iter().max().unwrap_or(0)
}

// ---------------------------------------------------------------- training and inference

/// Runs one training step of `t` (with the scenario's faults) and, when there
/// are faults, the healthy step and each fault alone, to name each one's effect.
///
/// # Errors
/// When a collective of the plan cannot run, or the backend fails.
pub fn run_training(
    t: &crate::config::TrainingSpec,
    scenario: &Scenario,
    topo: &Topology,
    fidelity: Fidelity,
    seed: u64,
    opts: &RunOptions,
    acc: &mut Accumulated,
) -> Result<TrainingReport, RunError> {
    // the DAG's size was estimated against the budget (crate::budget::run);
    // the built DAG is counted again before it runs (check_dag_budget)
    let step = training::build(t, topo)?;
    for f in scenario.faults() {
        if let crate::config::workload::FaultKind::SlowGpu { gpu, .. } = f.kind {
            if !step.gpus_simulated.contains(&GpuId(gpu)) {
                return Err(RunError::Unsupported(format!(
                    "fault {:?}: GPU {gpu} is outside the data-parallel replica that replicas = \"one\" builds (GPUs of data rank 0); use replicas = \"all\"",
                    f.name
                )));
            }
        }
    }
    let exec = Executor {
        scenario,
        topo,
        fidelity,
        seed,
        opts,
        packet: None,
        link_events: &[],
    };
    let every: Vec<usize> = (0..scenario.faults().len()).collect();
    let (dag, out) = run_dag_with(&exec, &step.dag, &every)?;
    acc.add_output("training step", &dag, &out);
    let mut report = training_report(t, &step, &dag, &out);
    report.faults = fault_effects(&exec, &step.dag, out.makespan, acc)?;
    Ok(report)
}

/// Runs `dag` with the faults `scenario.faults[i]` for each `i` of `which`: slow
/// GPUs stretch its compute, link changes go to the backend. Returns the DAG that
/// ran and its output. A transfer the faults leave without a path is an error
/// located at the fault that cut it ([`cut_error`]).
fn run_dag_with(
    exec: &Executor<'_>,
    dag: &crate::dag::Dag,
    which: &[usize],
) -> Result<(crate::dag::Dag, RunOutput), RunError> {
    let Executor {
        scenario,
        topo,
        fidelity,
        seed,
        opts,
        ..
    } = *exec;
    let chosen: Vec<_> = which
        .iter()
        .map(|&i| scenario.faults()[i].clone())
        .collect();
    let faults = crate::workload::faults::Applied::new(&chosen, topo);
    let d = faults.slow_dag(dag, topo).into_owned();
    check_dag_budget(scenario, topo, fidelity, &d)?;
    let cfg = BackendConfig {
        fidelity,
        seed,
        link_events: faults.link_events,
        packet: (fidelity == Fidelity::Packet).then(|| packet_config(scenario, seed)),
        classes: exec.flow_classes(),
    };
    let observers = Observers {
        progress: opts.progress.clone(),
        ..Observers::default()
    };
    match backend::run(&d, topo, &cfg, &observers) {
        Ok(out) => Ok((d, out)),
        Err(e) => {
            Err(cut_error(&d, scenario, topo, fidelity, which, e)
                .during(|| run_name(scenario, which)))
        }
    }
}

/// Which run of a training or inference scenario `which` (indices of its faults)
/// is: with every fault, healthy (for the comparison), or with one fault alone.
fn run_name(scenario: &Scenario, which: &[usize]) -> String {
    let what = match scenario.workload() {
        WorkloadSpec::Inference(_) => "inference batch",
        _ => "training step",
    };
    let faults = scenario.faults();
    match which {
        [] if faults.is_empty() => what.to_string(),
        [] => format!("healthy {what} (the faults' baseline)"),
        _ if which.len() == faults.len() => format!("{what} with every fault"),
        [i] => format!("{what} with fault {:?} alone", faults[*i].name),
        _ => format!("{what} with faults {which:?}"),
    }
}

/// A backend's "no route" turned into an error located at the fault entry that
/// cut the pair: the faults of `which` are applied in time order (then file
/// order) to the healthy fabric until the transfer's endpoints are disconnected.
/// Other errors, and a pair no fault explains, pass through unchanged.
fn cut_error(
    dag: &crate::dag::Dag,
    scenario: &Scenario,
    topo: &Topology,
    fidelity: Fidelity,
    which: &[usize],
    e: BackendError,
) -> RunError {
    let Some(task) = e.unreachable_task() else {
        return e.into();
    };
    let Some(kind) = ((task as usize) < dag.len()).then(|| dag.kind(task as usize)) else {
        return e.into();
    };
    let connected = |t: &Topology| {
        let mut path = Vec::new();
        match kind {
            TaskKind::Transfer { src, dst, .. } => t.route(src, dst, 0, &mut path),
            TaskKind::NetTransfer { src, dst, .. } => t.hop_path(src, dst, &mut path),
            _ => true,
        }
    };
    let (what, a, b) = match kind {
        TaskKind::Transfer { src, dst, .. } => ("GPU", src.0, dst.0),
        TaskKind::NetTransfer { src, dst, .. } => ("node", src.0, dst.0),
        _ => return e.into(),
    };
    let mut order = which.to_vec();
    order.sort_by_key(|&i| (scenario.faults()[i].at, i));
    let mut fabric = topo.clone();
    for i in order {
        let f = &scenario.faults()[i];
        let one = crate::workload::faults::Applied::new(std::slice::from_ref(f), &fabric);
        fabric = one.static_topology(&fabric).into_owned();
        if !connected(&fabric) {
            return RunError::Unsupported(format!(
                "faults[{i}] ({:?}, {} at {}): found that it leaves {what} {a} with no path to {what} {b}, which the workload sends to (transfer task {task}) at the {} fidelity; expected faults that leave every communicating pair a path: fail a redundant link or switch (a spine, one of several uplinks), or give the hosts more NICs",
                f.name,
                fault_kind_name(&f.kind),
                f.at,
                fidelity.name(),
            ));
        }
    }
    e.into()
}

/// Each fault of the scenario alone against the healthy run of `dag` (`with_all`:
/// the makespan with every fault, reused when there is only one).
fn fault_effects(
    exec: &Executor<'_>,
    dag: &crate::dag::Dag,
    with_all: crate::units::SimTime,
    acc: &mut Accumulated,
) -> Result<Vec<FaultEffect>, RunError> {
    let scenario = exec.scenario;
    let mut out = Vec::new();
    if scenario.faults().is_empty() {
        return Ok(out);
    }
    // run 0 is the healthy fabric, run i + 1 fault i alone (when there are
    // several: one fault alone is the run with every fault)
    let n = if scenario.faults().len() == 1 {
        1
    } else {
        1 + scenario.faults().len()
    };
    let runs = run_parallel(workers(exec, n, dag), n, |r| {
        let which: &[usize] = if r == 0 { &[] } else { &[r - 1] };
        run_dag_with(exec, dag, which).map(|(_, o)| (o.makespan, o.events))
    })?;
    for &(_, events) in &runs {
        acc.add_events(events);
    }
    let h = runs[0].0.as_secs_f64();
    for (i, f) in scenario.faults().iter().enumerate() {
        let alone = if scenario.faults().len() == 1 {
            with_all
        } else {
            runs[i + 1].0
        };
        out.push(FaultEffect {
            name: f.name.clone(),
            kind: fault_kind_name(&f.kind).into(),
            at_us: f.at.as_us(),
            step_time_s: alone.as_secs_f64(),
            healthy_step_time_s: h,
            slowdown: if h > 0.0 {
                alone.as_secs_f64() / h
            } else {
                0.0
            },
        });
    }
    Ok(out)
}

fn fault_kind_name(k: &crate::config::workload::FaultKind) -> &'static str {
    use crate::config::workload::FaultKind as K;
    match k {
        K::SlowGpu { .. } => "slow_gpu",
        K::LinkDown { .. } => "link_down",
        K::LinkDegraded { .. } => "link_degraded",
        K::SwitchDown { .. } => "switch_down",
    }
}

/// The training section from a step DAG (`dag`: the DAG that ran, with slow
/// GPUs stretched) and its run.
pub fn training_report(
    t: &crate::config::TrainingSpec,
    step: &training::StepDag,
    dag: &crate::dag::Dag,
    out: &RunOutput,
) -> TrainingReport {
    use crate::dag::TaskKind;
    use training::OpKind;
    let plan = &t.plan;
    let n_total = plan.dp * plan.tp * plan.pp;
    // GPU ids, not plan ranks: a job's step runs on the GPUs it was placed on
    let slots = step
        .gpus_simulated
        .iter()
        .map(|g| g.0 + 1)
        .max()
        .unwrap_or(0);
    let busy = crate::workload::busy_per_gpu(dag, slots);
    let sim: Vec<f64> = step
        .gpus_simulated
        .iter()
        .map(|g| busy[g.0 as usize].as_secs_f64())
        .collect();
    let n_sim = sim.len().max(1) as f64;
    let compute = sim.iter().copied().fold(0.0, f64::max);
    let mean_busy = sim.iter().sum::<f64>() / n_sim;
    let step_s = out.makespan.as_secs_f64();
    let free = crate::workload::free_comm_makespan(dag).as_secs_f64();
    let kinds = [
        OpKind::ComputeForward,
        OpKind::ComputeBackward,
        OpKind::TensorParallel,
        OpKind::PipelineP2p,
        OpKind::ExpertAllToAll,
        OpKind::DataParallelGrad,
        OpKind::ZeroParamGather,
    ];
    let mut count = [0u64; 7];
    let mut time = [0f64; 7];
    let mut bytes = [0u64; 7];
    let idx = |k: OpKind| kinds.iter().position(|&x| x == k).unwrap_or(0);
    for task in dag.tasks() {
        let Some(meta) = step.ops.get(task.op as usize) else {
            continue;
        };
        let i = idx(meta.kind);
        match task.kind {
            TaskKind::Compute { duration, .. } => {
                count[i] += 1;
                time[i] += duration.as_secs_f64() / n_sim;
            }
            TaskKind::Transfer { bytes: b, .. } | TaskKind::NetTransfer { bytes: b, .. } => {
                bytes[i] += b
            }
            TaskKind::Marker => {}
        }
    }
    for (o, meta) in step.ops.iter().enumerate() {
        if !meta.kind.is_comm() {
            continue;
        }
        let Some(tm) = out.op_timing.get(o) else {
            continue;
        };
        let i = idx(meta.kind);
        let denom = if matches!(
            meta.kind,
            OpKind::DataParallelGrad | OpKind::ZeroParamGather
        ) {
            n_total as f64
        } else {
            n_sim
        };
        count[i] += 1;
        time[i] += (tm.end - tm.start).as_secs_f64() * meta.gpus as f64 / denom;
    }
    let breakdown = kinds
        .iter()
        .enumerate()
        .filter(|&(i, _)| count[i] > 0)
        .map(|(i, k)| OpTime {
            op: k.name().into(),
            count: count[i],
            time_per_gpu_s: time[i],
            bytes: bytes[i],
        })
        .collect();
    let peak = t.gpu.peak(t.model.precision);
    TrainingReport {
        preset: t.preset.clone(),
        params: crate::workload::total_params(&t.model),
        plan: [plan.dp, plan.tp, plan.pp, plan.ep],
        zero: plan.zero,
        micro_batches: step.micro_batches,
        gpus_simulated: step.gpus_simulated.len() as u32,
        step_time_s: step_s,
        compute_time_s: compute,
        free_comm_step_s: free,
        bubble_s: (free - compute).max(0.0),
        exposed_comm_s: (step_s - free).max(0.0),
        gpu_idle_fraction: if step_s > 0.0 {
            (1.0 - mean_busy / step_s).max(0.0)
        } else {
            0.0
        },
        tokens_per_s: if step_s > 0.0 {
            step.tokens as f64 / step_s
        } else {
            0.0
        },
        mfu: if step_s > 0.0 {
            step.model_flops / (step_s * n_total as f64 * peak)
        } else {
            0.0
        },
        breakdown,
        faults: Vec::new(),
    }
}

/// Runs one inference batch of `i` (with the scenario's faults, each also alone
/// against the healthy batch).
///
/// # Errors
/// When a collective cannot run, or the backend fails.
pub fn run_inference(
    i: &crate::config::InferenceSpec,
    scenario: &Scenario,
    topo: &Topology,
    fidelity: Fidelity,
    seed: u64,
    opts: &RunOptions,
    acc: &mut Accumulated,
) -> Result<InferenceReport, RunError> {
    // the DAG's size was estimated against the budget (crate::budget::run);
    // the built DAG is counted again before it runs (check_dag_budget)
    let b = inference::build(i, topo, seed)?;
    let every: Vec<usize> = (0..scenario.faults().len()).collect();
    let exec = Executor {
        scenario,
        topo,
        fidelity,
        seed,
        opts,
        packet: None,
        link_events: &[],
    };
    let (dag, out) = run_dag_with(&exec, &b.dag, &every)?;
    acc.add_output("inference batch", &dag, &out);
    let mut report = inference::report(i, &b, &dag, &out);
    report.faults = fault_effects(&exec, &b.dag, out.makespan, acc)?;
    Ok(report)
}
