//! Bounded resources: what a scenario will cost before anything is built, the
//! budget it must fit (`simulation.max_memory`, `simulation.max_events`), and
//! reading user files with a size limit.
//!
//! The estimate is the one place that turns a scenario into counts: hosts,
//! switches, directed links, DAG tasks, flows and, at the packet level, packet
//! events, and from them the memory a run needs. It is computed in `f64`, so a
//! hostile scenario (10⁹ nodes, a 1-byte chunk) saturates at a huge finite
//! figure or infinity instead of overflowing, and it is an estimate: within a
//! small factor of what a run allocates and simulates, never a bound to rely on
//! for correctness. Validation refuses a scenario above its budget with a
//! located error that names the estimate and the key to change, before the
//! topology or a DAG is built; [`crate::run::run`] checks again at the fidelity
//! it actually runs.

use std::io::Read;
use std::path::Path;

use crate::config::{AlgoChoice, Fidelity, Scenario, WorkloadSpec};
use crate::topology::{Topology, TopologySpec};
use crate::units::format_bytes;

/// Largest input file read (scenario, CDF, nccl-tests output): 64 MiB. The
/// largest shipped input is a few KiB; the limit keeps `/dev/zero` or a wrong
/// path to a disk image from growing the process to gigabytes.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Default `simulation.max_events`: 3.6·10¹⁰ packet events, one hour at the
/// ~10 M events/s the packet engine reaches on the 2-core development machine
/// (`cargo bench --bench packet`: 12.6–22 M events/s).
pub const DEFAULT_MAX_EVENTS: u64 = 36_000_000_000;

/// Memory assumed when `/proc/meminfo` cannot be read: 8 GiB.
pub const FALLBACK_MEMORY: u64 = 8 << 30;

/// Bytes per DAG task held by the DAG and a backend's per-task state (the
/// 131,072-GPU flow benchmark held 67 M tasks in 5.7 GiB, 91 B each, down
/// from 7.0 GiB once the flow level built its output in the run's place; the
/// other backends hold 16 B per task more at their peak, see
/// [`RUN_BYTES_PER_TASK`]). 16 B below the 128 B it was, for every backend:
/// the DAG keeps a task in 16 B of kind, software latency and queue pair
/// instead of a 32-byte `Task` ([`crate::dag::Dag`]; 16,384-GPU flow
/// benchmark, peak RSS 733 -> 607 MiB).
const BYTES_PER_TASK: f64 = 112.0;
/// Bytes per node of the topology (node, adjacency, per-node backend state).
const BYTES_PER_NODE: f64 = 96.0;
/// Bytes per directed link (link, adjacency, per-link counters and backend state).
const BYTES_PER_LINK: f64 = 256.0;
/// Bytes per packet held in a queue at the packet level (slab entry and queue slot).
const BYTES_PER_PACKET: f64 = 128.0;
/// Packet events per packet per link of its path (transmit, arrive, dequeue,
/// credit or ACK): 14.7 events per packet over the 6 links of
/// `examples/incast-infiniband.toml`, 16.7 over fat-tree paths of up to 8.
const EVENTS_PER_PACKET_LINK: f64 = 2.5;

/// The resource budget of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Most memory a run may need, bytes (`simulation.max_memory`).
    pub max_memory: u64,
    /// Whether `max_memory` is the default (a share of this machine's memory).
    pub memory_is_default: bool,
    /// Most packet events a packet-level run may simulate (`simulation.max_events`).
    pub max_events: u64,
    /// Most worker threads for a scenario's independent simulations
    /// (`simulation.threads`; `None`: the machine's cores). Each thread runs
    /// one whole simulation, so memory is checked per thread.
    pub threads: Option<u32>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_memory: default_max_memory(),
            memory_is_default: true,
            max_events: DEFAULT_MAX_EVENTS,
            threads: None,
        }
    }
}

/// Default `simulation.max_memory`: half of the memory this process may use,
/// the smaller of `MemTotal` in `/proc/meminfo` and the address-space limit
/// (`ulimit -v`, `prlimit --as`); [`FALLBACK_MEMORY`] when neither is known.
pub fn default_max_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| kib_field(&t, "MemTotal:"))
        .unwrap_or(FALLBACK_MEMORY);
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| address_space_limit(&t))
        .unwrap_or(u64::MAX);
    total.min(limit) / 2
}

/// A `/proc/meminfo` field in kB, as bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The soft "Max address space" limit of `/proc/self/limits`, bytes.
fn address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    let soft = line["Max address space".len()..]
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

/// What a scenario will cost. Counts are `f64` so that absurd inputs saturate
/// instead of wrapping; the figures are estimates, not exact counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Hosts (nodes).
    pub hosts: f64,
    /// GPUs.
    pub gpus: f64,
    /// Network switches.
    pub switches: f64,
    /// Directed links, NVLink and PCIe included.
    pub links: f64,
    /// Tasks of the largest DAG built at once (transfers and compute).
    pub tasks: f64,
    /// Transfers simulated over the whole run.
    pub flows: f64,
    /// Packet events over the whole run (packet fidelity only, else 0).
    pub packet_events: f64,
    /// Peak memory, bytes.
    pub memory: f64,
    /// The scenario key that drives the workload's share of the estimate
    /// (named in the error when the budget is exceeded).
    pub driver: &'static str,
    /// Whether the workload (tasks, packets) costs more than the topology.
    pub workload_heavy: bool,
    /// The scenario key that drives the packet events (the bytes moved).
    pub events_driver: &'static str,
    /// The scenario key that drives the workload's tasks (named when a built
    /// DAG is over the budget, [`check_dag`]).
    pub workload_driver: &'static str,
    /// Whether the run is at the flow fidelity, whose backend holds less per
    /// task ([`RUN_BYTES_PER_TASK_FLOW`]) than the others.
    pub flow_level: bool,
}

/// The advice for a scenario too large because of `driver`.
fn hint_for(driver: &str) -> &'static str {
    match driver {
        "workload.chunk" => "a larger workload.chunk",
        "workload.sizes" | "workload.max_bytes" => "smaller workload sizes",
        "workload.bytes" => "fewer bytes per flow",
        "workload.flows" => "fewer flows or fewer dependencies (after, after_sent)",
        "workload.duration" => "a shorter workload.duration or a lower load",
        "workload.parallel.replicas" => "replicas = \"one\", fewer micro-batches or fewer layers",
        "workload.inference.output_tokens" => "fewer output tokens or layers",
        "topology.radix" | "topology.k" | "topology.groups" => "a smaller topology",
        _ => "fewer nodes or GPUs per node",
    }
}

/// A scenario over its budget: where to point the error and what to say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// The scenario key that makes it so large.
    pub field: &'static str,
    /// The estimate, e.g. "about 1.6e10 tasks needing 2.4 TiB of memory".
    pub found: String,
    /// The budget and the keys to change.
    pub expected: String,
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}`: found {}; expected {}",
            self.field, self.found, self.expected
        )
    }
}

/// `x` as a short figure: exact below a million, else `1.6e10`.
pub fn figure(x: f64) -> String {
    if !x.is_finite() {
        "more than 1e308".into()
    } else if x < 1e6 {
        format!("{}", x.round())
    } else {
        format!("{x:.1e}")
    }
}

/// `bytes` as a human size, saturating at "more than 16 EiB".
pub fn human_bytes(bytes: f64) -> String {
    if bytes >= u64::MAX as f64 || !bytes.is_finite() {
        "more than 16 EiB".into()
    } else {
        format_bytes(bytes as u64)
    }
}

/// Counts of the hosts and the fabric shape of a cluster, before it is built.
/// `hosts`, `gpus_per_host` and `nics_per_host` as validated; shape errors
/// (too few ports) are left to the builder, which reports them once the
/// estimate says building is affordable.
pub fn topology(
    hosts: u32,
    gpus_per_host: u32,
    nics_per_host: u32,
    spec: &TopologySpec,
) -> Estimate {
    topology_ports(hosts, gpus_per_host, nics_per_host, spec, 1)
}

/// [`topology`] with `ports` network ports per NIC (`topology.planes`, ×2
/// with `dual_tor`): every port adds a host link, and the switch fabric grows
/// with the ports (a plane is a whole copy; a dual-ToR fabric has twice the
/// leaves).
pub fn topology_ports(
    hosts: u32,
    gpus_per_host: u32,
    nics_per_host: u32,
    spec: &TopologySpec,
    ports: u32,
) -> Estimate {
    let scale = f64::from(ports.max(1));
    let h = f64::from(hosts);
    let gpus = h * f64::from(gpus_per_host);
    let nics = h * f64::from(nics_per_host);
    // per host: an NVSwitch, the NICs, the GPUs; per GPU a duplex NVLink and PCIe link
    let host_nodes = h + nics + gpus;
    let host_links = 4.0 * gpus;
    // (switches, duplex switch-to-switch links, leaves) of one plane of the shape
    let shape = spec.counts(h, nics, nics_per_host);
    let (switches, fabric_links, leaves) = (
        shape.switches * scale,
        shape.fabric_links * scale,
        shape.leaves * scale,
    );
    let ports = nics * scale;
    let links = host_links + 2.0 * ports + 2.0 * fabric_links;
    // routing: one byte of distance per (switch, leaf)
    let host_memory = host_nodes * BYTES_PER_NODE + (host_links + 2.0 * ports) * BYTES_PER_LINK;
    let fabric_memory =
        switches * BYTES_PER_NODE + 2.0 * fabric_links * BYTES_PER_LINK + switches * leaves;
    // blame the shape's own parameter when the switches cost more than the hosts
    let driver = if fabric_memory > host_memory {
        spec.size_key(nics)
    } else if gpus_per_host > hosts {
        "cluster.gpus_per_node"
    } else {
        "cluster.nodes"
    };
    Estimate {
        hosts: h,
        gpus,
        switches,
        links,
        memory: host_memory + fabric_memory,
        driver,
        ..Estimate::default()
    }
}

/// The whole run of `s` at `fidelity` on its built topology `topo`: the
/// topology's own figures plus the workload's tasks, flows and packet events.
pub fn run(s: &Scenario, topo: &Topology, fidelity: Fidelity) -> Estimate {
    let mut e = topology(
        s.cluster().hosts,
        s.cluster().gpus_per_host,
        s.cluster().nics_per_host,
        s.topology(),
    );
    let mtu = s.fabric().mtu().max(1) as f64;
    let ranks = crate::run::all_ranks(topo);
    let (tasks, flows, bytes, driver) =
        workload_counts(s, s.workload(), topo, &ranks, fidelity, false, &mut e);
    // faults rerun the whole workload once each (training and inference)
    let reruns = match s.workload() {
        WorkloadSpec::Training(_) | WorkloadSpec::Inference(_) => 1.0 + s.faults().len() as f64,
        _ => 1.0,
    };
    e.tasks = tasks;
    e.flow_level = fidelity == Fidelity::Flow;
    e.flows = flows * reruns;
    e.workload_driver = driver;
    let topology_memory = e.memory;
    let mut memory = e.memory + tasks * BYTES_PER_TASK;
    if fidelity == Fidelity::Packet {
        let packets = bytes * reruns / mtu;
        e.packet_events = packets * s.topology().path_links() * EVENTS_PER_PACKET_LINK;
        // queues hold at most a buffer of packets per link and lane
        let per_link =
            (s.packet().buffer() as f64 / mtu).ceil() * f64::from(s.packet().virtual_lanes());
        memory += e.links * per_link.min(packets) * BYTES_PER_PACKET;
    }
    e.memory = memory;
    // blame the workload when it costs more than the topology
    e.workload_heavy = memory > 2.0 * topology_memory || e.packet_events > 0.0;
    if e.workload_heavy {
        e.driver = driver;
    }
    e
}

/// (tasks of the largest DAG, flows over the run, bytes moved over the run,
/// the key that drives them) of workload `w` on communicator `ranks`;
/// `runs_dag`: every fidelity runs its DAG (jobs), no closed form.
fn workload_counts(
    s: &Scenario,
    w: &WorkloadSpec,
    topo: &Topology,
    ranks: &[crate::topology::GpuId],
    fidelity: Fidelity,
    runs_dag: bool,
    e: &mut Estimate,
) -> (f64, f64, f64, &'static str) {
    let n = ranks.len() as f64;
    match w {
        WorkloadSpec::Collective(w) => {
            let g = f64::from(topo.gpus_per_host.max(1));
            let hosts = (n / g).ceil().max(1.0);
            let (mut largest, mut flows, mut bytes) = (0.0f64, 0.0f64, 0.0f64);
            let mut per_message = 0.0f64;
            use crate::collective::{Algorithm as A, CollectiveOp as O};
            // the tuner is not asked (its closed forms cost O(N) per candidate):
            // `auto` counts as ring on small communicators, else as the larger of
            // tree and hierarchical, which the tuner prefers at scale
            let channels = f64::from(
                w.channels
                    .unwrap_or_else(|| crate::collective::default_channels(ranks, topo))
                    .max(1),
            );
            let algo = match (w.algorithm, w.op) {
                (AlgoChoice::Fixed(a), _) => Some(a),
                (AlgoChoice::Auto, O::AllToAll) => Some(A::Direct),
                (AlgoChoice::Auto, _) if n <= 64.0 => Some(A::Ring),
                (AlgoChoice::Auto, _) => None,
            };
            for &size in &w.sizes {
                // messages each rank sends per channel, as each algorithm's
                // registration counts them
                let shape = crate::collective::StepShape {
                    ranks: n,
                    gpus_per_host: g,
                    hosts,
                    inter_host: w.inter_host,
                };
                let steps_of = |a: A| (crate::collective::entry(a).budget_steps)(&shape);
                let steps = match algo {
                    Some(a) => steps_of(a),
                    None => steps_of(A::Tree).max(steps_of(A::Hierarchical)),
                };
                // every algorithm moves at most ~2 buffers per rank (NVLink included)
                let moved = 2.0 * size as f64 * n;
                let chunk = w.chunk_bytes.max(1) as f64;
                // channels split a ring's buffer; hierarchical runs one ring per rail
                let channels = match algo {
                    Some(a) if crate::collective::entry(a).splits_channels => channels,
                    _ => 1.0,
                };
                // each queue pair of a connection is its own flow
                let qps = f64::from(s.fabric().qps_per_connection().max(1));
                let messages = n * channels * steps * qps;
                // each message is cut into chunks: at least one transfer per
                // message and one per chunk of the bytes moved
                let t = messages.max(moved / chunk);
                // faults make every fidelity run the schedule, twice (the
                // healthy baseline and the faulty run)
                if fidelity != Fidelity::Analytical || !s.faults().is_empty() || runs_dag {
                    let runs = if s.faults().is_empty() { 1.0 } else { 2.0 };
                    largest = largest.max(t);
                    flows += runs * t;
                    per_message = per_message.max(messages);
                }
                bytes += moved;
            }
            // a huge communicator (messages grow with the ranks) or huge sizes
            e.events_driver = "workload.sizes";
            let driver = if per_message * 2.0 > largest {
                e.driver
            } else if w.chunk_bytes < 4096 {
                "workload.chunk"
            } else {
                "workload.sizes"
            };
            (largest, flows, bytes, driver)
        }
        WorkloadSpec::Traffic(t) => {
            use crate::workload::traffic::TrafficSpec as T;
            let (flows, bytes, driver) = match t {
                T::Incast { senders, bytes, .. } => {
                    let k = f64::from(*senders);
                    (k, k * *bytes as f64, "workload.bytes")
                }
                T::Permutation { bytes, .. } => (n, n * *bytes as f64, "workload.bytes"),
                T::AllToAll { bytes } => {
                    let f = n * (n - 1.0).max(0.0);
                    (f, f * *bytes as f64, "workload.bytes")
                }
                T::RandomPairs {
                    cdf,
                    load,
                    duration,
                    ..
                } => {
                    let rate = s.host_rate().0 as f64;
                    let b = n * load * rate / 8.0 * duration.as_secs_f64();
                    let mean = cdf.mean().max(1.0);
                    (b / mean, b, "workload.duration")
                }
                T::Flows(list) => {
                    let b: f64 = list.iter().map(|f| f.bytes as f64).sum();
                    (list.len() as f64, b, "workload.flows")
                }
            };
            e.events_driver = driver;
            let extra: f64 = s.extra_flows().iter().map(|f| f.bytes as f64).sum();
            let flows = flows + s.extra_flows().len() as f64;
            // random pairs add one compute task per transfer
            (2.0 * flows, flows, bytes + extra, driver)
        }
        WorkloadSpec::Training(t) => {
            let tasks = crate::workload::training::estimated_tasks(t);
            (tasks, tasks, 0.0, "workload.parallel.replicas")
        }
        WorkloadSpec::Inference(i) => {
            let tasks = crate::workload::inference::estimated_tasks(i);
            (tasks, tasks, 0.0, "workload.inference.output_tokens")
        }
        WorkloadSpec::Chakra(c) => {
            let tasks = c.estimated_tasks();
            (tasks, tasks, c.estimated_bytes(), "workload.traces")
        }
        WorkloadSpec::Jobs(jobs) => {
            // one DAG of every job (the shared run), then each job alone:
            // twice the flows and bytes, the merged DAG the largest
            let (mut tasks, mut flows, mut bytes) = (0.0, 0.0, 0.0);
            // the costliest job's key drives the estimate
            let mtu = s.fabric().mtu().max(1) as f64;
            let (mut driver, mut events_driver, mut heaviest) = ("jobs", "", -1.0);
            for j in jobs {
                let ranks = crate::run::job_ranks(j, topo);
                let (t, f, b, d) = workload_counts(s, &j.workload, topo, &ranks, fidelity, true, e);
                tasks += t + 2.0;
                flows += 2.0 * f;
                bytes += 2.0 * b;
                let weight = t + b / mtu;
                if weight > heaviest {
                    (driver, events_driver, heaviest) = (d, e.events_driver, weight);
                }
            }
            e.events_driver = events_driver;
            (tasks, flows, bytes, driver)
        }
    }
}

impl Estimate {
    /// Refuses an estimate over `budget`: memory first (it would abort the
    /// process), then packet events (it would run for hours).
    ///
    /// # Errors
    /// [`OverBudget`] naming the estimate, the budget and the keys to change.
    pub fn check(&self, budget: &Budget) -> Result<(), OverBudget> {
        if self.memory > budget.max_memory as f64 {
            let what = if self.workload_heavy {
                format!(
                    "about {} tasks and {} links",
                    figure(self.tasks),
                    figure(self.links)
                )
            } else {
                format!(
                    "{} GPUs, {} switches and {} links",
                    figure(self.gpus),
                    figure(self.switches),
                    figure(self.links)
                )
            };
            let whose = if budget.memory_is_default {
                " (the default: half of this machine's memory or of the process's address-space limit)"
            } else {
                ""
            };
            return Err(OverBudget {
                field: self.driver,
                found: format!(
                    "a run estimated at {} of memory for {what}",
                    human_bytes(self.memory)
                ),
                expected: format!(
                    "at most simulation.max_memory = {}{whose}; {}, or raise simulation.max_memory",
                    format_bytes(budget.max_memory),
                    hint_for(self.driver)
                ),
            });
        }
        if self.packet_events > budget.max_events as f64 {
            let field = if self.events_driver.is_empty() {
                self.driver
            } else {
                self.events_driver
            };
            return Err(OverBudget {
                field,
                found: format!(
                    "a packet-level run estimated at {} packet events (about {} at 10 M events/s)",
                    figure(self.packet_events),
                    duration_words(self.packet_events / 1e7)
                ),
                expected: format!(
                    "at most simulation.max_events = {}; {}, the flow fidelity, or raise simulation.max_events",
                    figure(budget.max_events as f64),
                    hint_for(field)
                ),
            });
        }
        Ok(())
    }
}

/// Bytes per task a backend holds while it runs a DAG, beyond the DAG's own
/// tables ([`crate::dag::Dag::heap_bytes`]), at its peak, for the backends
/// other than the flow level's: the runner's unmet count, successor start,
/// operation (4 B each; the operation is run-length encoded when a DAG's
/// operations are contiguous, counted here at 4 B for those that interleave),
/// state (1 B), start and done times (8 B each), the packet level's own done
/// time (8 B) and a transfer's completion and ideal times in the output
/// (8 B each), all held at once when the output is built.
pub const RUN_BYTES_PER_TASK: f64 = 53.0;
/// [`RUN_BYTES_PER_TASK`] at the flow level: the runner's 16-byte slot per
/// task (unmet count, state, successor start, start time, which becomes the
/// completion time once the task is done) and the ideal time (4 B), the
/// `FABRICSIM_FLOW_MEM` tables of a run. Its output needs no more: the
/// successors are freed first, the completion times (8 B per transfer) are
/// collected over the slots, and the ideal times (8 B per transfer) are
/// built beside the 4-byte ones, at most 4 + 8 + 8 B per task. The
/// runner's other tables are counted on the DAG
/// ([`crate::dag::Dag::runner_schedule_bytes`]). A run that exports its timeline
/// (`--trace`) also keeps each task's done time and builds a table of start
/// times for it, 16 B more, not counted here: a timeline of tens of millions
/// of tasks is not one anybody opens.
pub const RUN_BYTES_PER_TASK_FLOW: f64 = 20.0;
/// Bytes per dependency a backend holds while it runs a DAG: the runner's
/// successor entry (the DAG's own entry is in [`crate::dag::Dag::heap_bytes`]).
pub const RUN_BYTES_PER_EDGE: f64 = 4.0;

/// Memory, bytes, that running `dag` needs for its tasks and dependencies:
/// what the DAG holds plus what a backend's runner and output add per task
/// and per dependency. Counted on the built DAG, so a workload whose
/// dependencies grow faster than its tasks (a join of every task of every
/// host) is caught where [`run`]'s estimate, which counts tasks only, is not.
pub fn dag_memory(dag: &crate::dag::Dag) -> f64 {
    dag_memory_at(dag, false)
}

/// Memory one run of the built `dag` needs, bytes: the scenario's `estimate`
/// with its guessed DAG replaced by the built one.
pub fn run_memory(dag: &crate::dag::Dag, estimate: &Estimate) -> f64 {
    let rest = (estimate.memory - estimate.tasks * BYTES_PER_TASK).max(0.0);
    rest + dag_memory_at(dag, estimate.flow_level)
}

/// [`dag_memory`] for a run at the flow level (`flow_level`) or another.
///
/// The flow level: the DAG, [`RUN_BYTES_PER_TASK_FLOW`] per task and the
/// runner's successors, which it holds once for all copies of a repeated
/// block ([`crate::dag::Dag::runner_schedule_bytes`]), where 32 B per task
/// and 4 B per dependency over-estimated it (flow16k-tree-4m: 335 MiB
/// against its 183 MiB of tables).
pub fn dag_memory_at(dag: &crate::dag::Dag, flow_level: bool) -> f64 {
    if flow_level {
        return dag.heap_bytes() as f64
            + dag.len() as f64 * RUN_BYTES_PER_TASK_FLOW
            + dag.runner_schedule_bytes() as f64;
    }
    dag.heap_bytes() as f64
        + dag.len() as f64 * RUN_BYTES_PER_TASK
        + dag.edges() as f64 * RUN_BYTES_PER_EDGE
}

/// Refuses a built `dag` whose run would not fit `budget`, before a backend
/// allocates anything for it. `estimate` is the scenario's [`run`] estimate:
/// its share for tasks is replaced by the DAG's counted [`dag_memory`], the
/// rest (topology, packet queues) is kept.
///
/// # Errors
/// [`OverBudget`] at the key that drives the workload, naming the DAG's tasks,
/// dependencies and memory, the estimate made before it was built, and the budget.
pub fn check_dag(
    dag: &crate::dag::Dag,
    estimate: &Estimate,
    budget: &Budget,
) -> Result<(), OverBudget> {
    let memory = run_memory(dag, estimate);
    if memory <= budget.max_memory as f64 {
        return Ok(());
    }
    let field = if estimate.workload_driver.is_empty() {
        estimate.driver
    } else {
        estimate.workload_driver
    };
    let whose = if budget.memory_is_default {
        " (the default: half of this machine's memory or of the process's address-space limit)"
    } else {
        ""
    };
    Err(OverBudget {
        field,
        found: format!(
            "a built DAG of {} tasks and {} dependencies whose run needs about {} of memory \
             (estimated at {} before it was built)",
            figure(dag.len() as f64),
            figure(dag.edges() as f64),
            human_bytes(memory),
            human_bytes(estimate.memory)
        ),
        expected: format!(
            "at most simulation.max_memory = {}{whose}; {}, or raise simulation.max_memory",
            format_bytes(budget.max_memory),
            hint_for(field)
        ),
    })
}

/// Seconds in words: "40 minutes", "3.2 hours", "12 days".
fn duration_words(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} minutes", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} hours", s / 3600.0)
    } else {
        format!("{} days", figure(s / 86400.0))
    }
}

/// Reads a user-named file as UTF-8 text, refusing more than `limit` bytes.
/// `/dev/zero`, a FIFO that never ends, or a disk image fail after `limit`
/// bytes instead of growing the process.
///
/// # Errors
/// The I/O error, or `InvalidData` for a file over the limit or not UTF-8.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    if let Ok(m) = file.metadata() {
        if m.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a directory, not a file",
            ));
        }
        if m.is_file() && m.len() > limit {
            return Err(too_large(limit, Some(m.len())));
        }
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit, None));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn too_large(limit: u64, len: Option<u64>) -> std::io::Error {
    let size = len.map_or_else(|| "more".to_string(), format_bytes);
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "{size} than the {} an input file may hold",
            format_bytes(limit)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_parse() {
        let m = "MemTotal:       24684084 kB\nMemFree: 1 kB\n";
        assert_eq!(kib_field(m, "MemTotal:"), Some(24_684_084 * 1024));
        let l = "Limit                     Soft Limit           Hard Limit           Units\nMax address space         2147483648           unlimited            bytes\n";
        assert_eq!(address_space_limit(l), Some(2_147_483_648));
        let u = "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_limit(u), None);
    }

    #[test]
    fn absurd_clusters_saturate_instead_of_wrapping() {
        // 10^9 nodes of 8 GPUs: 4 directed host links per GPU, 3.2e10 links
        let e = topology(1_000_000_000, 8, 8, &TopologySpec::SingleSwitch);
        assert_eq!(e.gpus, 8e9);
        assert!(e.links >= 3.2e10, "{}", e.links);
        let err = e
            .check(&Budget {
                max_memory: 8 << 30,
                memory_is_default: false,
                max_events: DEFAULT_MAX_EVENTS,
                threads: None,
            })
            .unwrap_err();
        assert_eq!(err.field, "cluster.nodes");
        assert!(err.expected.contains("simulation.max_memory"), "{err}");
    }

    #[test]
    fn dev_zero_is_refused_at_the_limit() {
        let e = read_text(Path::new("/dev/zero"), 1 << 16).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("64KiB"), "{e}");
    }
}
