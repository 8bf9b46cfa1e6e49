//! Runs a validated [`Scenario`] at one fidelity and assembles its [`Report`].
//!
//! With [`RunOptions::detail`] it also derives the report's chart data from the
//! DAGs and the backend outputs: the FCT CDF, the host × host traffic matrix, the
//! utilization timeline of the busiest links and the backend's sampled series.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use crate::backend::{
    self, BackendConfig, BackendError, FabricCounters, LinkCounters, Observers, ProgressHook,
    QpCounters, RunOutput, Sample, Series, TimelineRequest,
};
use crate::collective::{self, CollectiveError, CollectiveSpec};
use crate::config::{AlgoChoice, CollectiveWorkload, Fidelity, Scenario, WorkloadSpec};
use crate::dag::{Dag, TaskKind};
use crate::metrics::FlowAccumulator;
use crate::report::workload::{FaultEffect, InferenceReport, OpTime, TrainingReport};
use crate::report::{
    CollectiveRow, FabricReport, FlowRecord, FlowRecords, LinkReport, LinkTimelineReport,
    LinkUtilization, Report, SimStats, TimelineSegment, TopologySummary, TrafficMatrix,
};
use crate::topology::{GpuId, LinkId, NodeKind, Topology};
use crate::units::{format_bytes, SimTime};
use crate::workload::{inference, training};

/// Most cells per side of the traffic matrix.
pub const MATRIX_MAX: u32 = 64;
/// Links kept in the utilization timeline.
pub const TIMELINE_LINKS: usize = 32;
/// Time buckets of the utilization timeline.
pub const TIMELINE_BUCKETS: usize = 100;
/// Series kept, and points per series.
pub const SERIES_MAX: (usize, usize) = (8, 400);

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
    /// Called every few tens of thousands of backend events (never per event).
    pub progress: Option<ProgressHook>,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("fidelity", &self.fidelity)
            .field("seed", &self.seed)
            .field("collect_links", &self.collect_links)
            .field("detail", &self.detail)
            .field("flow_records", &self.flow_records)
            .field("progress", &self.progress.is_some())
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
    /// A PFC deadlock stopped the packet backend; [`run`] turns it into
    /// [`Report::deadlock`] rather than an error.
    #[error("PFC deadlock at {} us on a cycle of {} paused links", .0.report.detected_at_us, .0.report.cycle.len())]
    Deadlock(Box<DeadlockStop>),
    /// A training or inference workload could not run.
    #[error("{0}")]
    Workload(#[from] crate::workload::WorkloadError),
    /// The run would need more memory or packet events than its budget
    /// (`simulation.max_memory`, `simulation.max_events`) allows.
    #[error("over budget at this fidelity: {0}")]
    Budget(String),
}

/// A run stopped by a PFC deadlock: the cycle, and the counters up to it.
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
    let fidelity = opts.fidelity.unwrap_or(scenario.fidelity);
    let seed = opts.seed.unwrap_or(scenario.seed);
    // What the run costs at the fidelity it runs (validation checked the
    // file's): the topology before it is built, then the workload.
    let budget = &scenario.budget;
    crate::budget::topology(
        scenario.cluster.hosts,
        scenario.cluster.gpus_per_host,
        scenario.cluster.nics_per_host,
        &scenario.topology,
    )
    .check(budget)
    .map_err(|e| RunError::Budget(e.to_string()))?;
    let topo = scenario.build_topology_for(fidelity)?;
    crate::budget::run(scenario, &topo, fidelity)
        .check(budget)
        .map_err(|e| RunError::Budget(e.to_string()))?;
    let mut acc = Accumulated::default();
    let (mut training, mut inference) = (None, None);
    let exec = Executor {
        scenario,
        topo: &topo,
        fidelity,
        seed,
        opts,
    };
    let outcome = match &scenario.workload {
        WorkloadSpec::Collective(w) => run_collectives(w, &exec, &mut acc),
        WorkloadSpec::Traffic(t) => run_traffic(t, &exec, &mut acc),
        WorkloadSpec::Training(t) => {
            run_training(t, scenario, &topo, fidelity, seed, opts, &mut acc)
                .map(|r| training = Some(r))
        }
        WorkloadSpec::Inference(i) => {
            run_inference(i, scenario, &topo, fidelity, seed, opts, &mut acc)
                .map(|r| inference = Some(r))
        }
    };
    // A PFC deadlock is a finding, not a failure of the simulator: the run stops
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
            // What moved before the fabric froze: PAUSE frames, queues, bytes.
            acc.absorb(
                &RunOutput {
                    fabric,
                    links,
                    events,
                    ..RunOutput::default()
                },
                opts.collect_links,
            );
            Some(report)
        }
        Err(e) => return Err(e),
    };
    if let Some(name) = acc.overflowed {
        return Err(RunError::Unsupported(format!(
            "the run's {name} summed over its sizes and steps exceeds 2^64; fewer or smaller workload sizes"
        )));
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let detail = opts.detail && fidelity != Fidelity::Analytical;
    let fct_cdf = (detail && acc.flows.stats().count > 0).then(|| acc.flows.cdf());
    let traffic_matrix = acc.matrix.take().map(|m| m.finish());
    let link_timeline = acc.timeline.finish(&topo);
    let series = top_series(std::mem::take(&mut acc.series));
    let mut links: Vec<LinkCounters> = acc.links.into_values().collect();
    links.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.link.cmp(&b.link)));
    let mut queue_pairs: Vec<QpCounters> = acc.queue_pairs.into_values().collect();
    queue_pairs.sort_by(|a, b| {
        (b.retransmitted_packets, b.timeouts)
            .cmp(&(a.retransmitted_packets, a.timeouts))
            .then((a.src, a.dst).cmp(&(b.src, b.dst)))
    });
    Ok(Report {
        scenario: scenario.name.clone(),
        fidelity: fidelity.name().to_string(),
        seed,
        version: env!("CARGO_PKG_VERSION").to_string(),
        scenario_hash: format!("{:016x}", fnv1a(format!("{scenario:?}").as_bytes())),
        topology: TopologySummary {
            shape: topo.shape.clone(),
            hosts: topo.hosts,
            gpus: topo.num_gpus(),
            switches: topo.num_switches(),
            links: topo.links.len(),
        },
        collectives: acc.rows,
        makespan_us: acc.makespan.as_us(),
        flows: {
            let mut f = acc.flows.stats();
            if !fidelity.models(backend::Counter::FctSlowdown) {
                f.slowdown = None;
            }
            f
        },
        fabric: FabricReport::new(&acc.fabric, fidelity),
        links: links.iter().map(|l| LinkReport::new(l, fidelity)).collect(),
        queue_pairs,
        training,
        inference,
        ignored_settings: scenario.ignored_settings(fidelity),
        deadlock,
        fct_cdf,
        traffic_matrix,
        link_timeline,
        series,
        flow_records: acc.records,
        sim: SimStats {
            events: acc.events,
            wall_s,
            events_per_s: if wall_s > 0.0 {
                acc.events as f64 / wall_s
            } else {
                0.0
            },
        },
    })
}

/// What the runs of one scenario add up to (flows, counters, events).
#[derive(Default)]
pub struct Accumulated {
    rows: Vec<CollectiveRow>,
    makespan: SimTime,
    flows: FlowAccumulator,
    fabric: FabricCounters,
    /// Per link id, summed over the runs (a map: a sweep merges thousands of links per size).
    links: BTreeMap<u32, LinkCounters>,
    /// Per (source, destination) GPU, summed over the runs.
    queue_pairs: BTreeMap<(u32, u32), QpCounters>,
    events: u64,
    matrix: Option<MatrixAcc>,
    timeline: TimelineAcc,
    series: Vec<Series>,
    records: FlowRecords,
    /// The first counter whose sum over the runs would not fit in `u64`.
    overflowed: Option<&'static str>,
}

/// `*into += v`, or records `name` as overflowed and leaves `into` unchanged:
/// totals summed over sizes, steps and faults are checked, never wrapped or
/// saturated. (Validation keeps a run's bytes under 2⁶² and its times under
/// 2⁶⁰ ps per size, so this only trips on inputs past those bounds.)
fn checked_sum(into: &mut u64, v: u64, name: &'static str, overflowed: &mut Option<&'static str>) {
    match into.checked_add(v) {
        Some(x) => *into = x,
        None => {
            overflowed.get_or_insert(name);
        }
    }
}

impl Accumulated {
    fn absorb(&mut self, out: &RunOutput, collect_links: bool) {
        let o = &out.fabric;
        let ov = &mut self.overflowed;
        checked_sum(&mut self.makespan.0, out.makespan.0, "makespan (ps)", ov);
        self.flows.add_all(&out.transfer_fct, &out.transfer_ideal);
        let f = &mut self.fabric;
        // each counter summed under its own name, so an overflow says which
        macro_rules! sum {
            ($($field:ident),*) => {
                $(checked_sum(&mut f.$field, o.$field, stringify!($field), ov);)*
            };
        }
        sum!(
            bytes_delivered,
            bytes_sent,
            drops,
            drops_corrupted,
            bytes_dropped,
            ecn_marks,
            pfc_pause_frames,
            retransmitted_packets,
            credit_stall_ps,
            cnps,
            timeouts
        );
        f.max_queue_bytes = f.max_queue_bytes.max(o.max_queue_bytes);
        checked_sum(&mut self.events, out.events, "events", ov);
        if collect_links {
            merge_links(&mut self.links, &out.links);
            for q in &out.queue_pairs {
                let e = self
                    .queue_pairs
                    .entry((q.src, q.dst))
                    .or_insert(QpCounters {
                        src: q.src,
                        dst: q.dst,
                        ..QpCounters::default()
                    });
                e.messages += q.messages;
                e.bytes += q.bytes;
                e.retransmitted_packets += q.retransmitted_packets;
                e.timeouts += q.timeouts;
            }
        }
    }
}

/// Adds `new` link counters into `into` (summing bytes, keeping maxima), by link id.
fn merge_links(into: &mut BTreeMap<u32, LinkCounters>, new: &[LinkCounters]) {
    for l in new {
        match into.entry(l.link) {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let x = e.get_mut();
                x.bytes += l.bytes;
                x.drops += l.drops;
                x.stall_ps += l.stall_ps;
                x.paused_ps += l.paused_ps;
                x.pause_frames += l.pause_frames;
                x.max_queue_bytes = x.max_queue_bytes.max(l.max_queue_bytes);
                x.utilization = x.utilization.max(l.utilization);
                x.avg_queue_bytes = x.avg_queue_bytes.max(l.avg_queue_bytes);
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(l.clone());
            }
        }
    }
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

/// Everything needed to execute a DAG at the chosen fidelity.
#[derive(Clone, Copy)]
struct Executor<'a> {
    scenario: &'a Scenario,
    topo: &'a Topology,
    fidelity: Fidelity,
    seed: u64,
    opts: &'a RunOptions,
}

impl Executor<'_> {
    /// Runs one DAG at this fidelity; `horizon` is a guess of its length for the
    /// report's link timeline (zero when unknown).
    fn run_dag(&self, dag: &Dag, horizon: SimTime) -> Result<RunOutput, RunError> {
        let cfg = BackendConfig {
            packet: (self.fidelity == Fidelity::Packet)
                .then(|| packet_config(self.scenario, self.seed)),
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
        };
        Ok(backend::run(dag, self.topo, &cfg, &observers)?)
    }
}

fn run_collectives(
    w: &CollectiveWorkload,
    exec: &Executor<'_>,
    acc: &mut Accumulated,
) -> Result<(), RunError> {
    let topo = exec.topo;
    let ranks = all_ranks(topo);
    let n = ranks.len() as u32;
    if exec.opts.detail && exec.fidelity != Fidelity::Analytical {
        acc.matrix = Some(MatrixAcc::new(topo.hosts));
    }
    if exec.opts.flow_records {
        acc.records.stride = 1;
    }
    for &bytes in &w.sizes {
        let spec = spec_for(w, bytes, &ranks, topo)?;
        let time = if exec.fidelity == Fidelity::Analytical {
            // closed forms: no DAG, so 100k+ GPUs cost O(N)
            let t = collective::analytical_time(&spec, &ranks, topo)?;
            let moved = collective::traffic_bytes(&spec, &ranks, topo)?;
            let ov = &mut acc.overflowed;
            checked_sum(
                &mut acc.fabric.bytes_delivered,
                moved,
                "bytes_delivered",
                ov,
            );
            checked_sum(&mut acc.fabric.bytes_sent, moved, "bytes_sent", ov);
            checked_sum(&mut acc.makespan.0, t.0, "makespan (ps)", ov);
            t
        } else {
            let mut dag = Dag::new();
            dag.begin_op(spec.op.name());
            collective::lower(&spec, &ranks, topo, &mut dag, &[])?;
            // the closed form is a cheap guess of the run's length for the timeline
            // (contention only stretches it, which the timeline absorbs by doubling)
            let horizon = if exec.opts.detail {
                collective::analytical_time(&spec, &ranks, topo).unwrap_or_default()
            } else {
                SimTime::ZERO
            };
            let label = format!("{} {}", spec.op.name(), format_bytes(bytes));
            let mut out = exec
                .run_dag(&dag, horizon)
                .map_err(|e| e.during(|| label.clone()))?;
            acc.absorb(&out, exec.opts.collect_links);
            if let Some(m) = &mut acc.matrix {
                m.add(&dag, topo);
            }
            if exec.opts.detail {
                let offset = acc.timeline.end;
                for s in &out.series {
                    acc.series
                        .push(shift(s, offset.as_secs_f64() * 1e6, &label));
                }
                acc.timeline.add(&label, &mut out);
            }
            if exec.opts.flow_records {
                record_flows(&mut acc.records, &dag, &out, bytes);
            }
            let t = out.op_timing[0];
            let time = t.end - t.start;
            let mut r = row(w, &spec, n, time.as_secs_f64());
            let wire = busiest_nic_bytes(&dag, topo);
            if wire > 0 && time > SimTime::ZERO {
                r.wirebw_gbps = Some(wire as f64 / time.as_secs_f64() / 1e9);
            }
            acc.rows.push(r);
            continue;
        };
        acc.rows.push(row(w, &spec, n, time.as_secs_f64()));
    }
    Ok(())
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
            *source_rate = exec.scenario.fabric.links.link_rate;
        }
        _ => {}
    }
    let mut dag = generate(&spec, exec.topo)
        .map_err(|e| RunError::Unsupported(format!("workload.{}: {}", e.field, e.message)))?;
    crate::workload::traffic::add_extra_flows(&mut dag, &exec.scenario.extra_flows);
    let mut out = exec.run_dag(&dag, SimTime::ZERO)?;
    acc.absorb(&out, exec.opts.collect_links);
    if let Some(m) = &mut acc.matrix {
        m.add(&dag, exec.topo);
    }
    if exec.opts.detail {
        let label = "traffic";
        for s in &out.series {
            acc.series.push(shift(s, 0.0, label));
        }
        acc.timeline.add(label, &mut out);
    }
    // One row per flow in flows.csv (collective_bytes is 0: no collective).
    if exec.opts.flow_records {
        record_flows(&mut acc.records, &dag, &out, 0);
    }
    Ok(())
}

/// The packet level's settings for a scenario.
pub fn packet_config(s: &Scenario, seed: u64) -> backend::packet::PacketConfig {
    use crate::backend::packet::{
        Ecn, FlowControl, HostPath, PacketConfig, Routing as PRouting, Transport,
    };
    use crate::config::{FabricKind, Routing};
    let p = &s.packet;
    PacketConfig {
        seed,
        mtu: s.fabric.mtu as u32,
        header_bytes: s.fabric.header_bytes as u32,
        vls: p.virtual_lanes.max(if p.vl_escalation { 3 } else { 1 }),
        flow_control: match (s.fabric.kind, p.pfc) {
            (FabricKind::InfiniBand, _) => FlowControl::Credit,
            (_, Some((xoff, xon, headroom))) => FlowControl::Pfc {
                xoff,
                xon,
                headroom,
            },
            (FabricKind::Roce | FabricKind::Ethernet, None) => FlowControl::Lossy,
        },
        pfc_pause_quanta: p.pfc_pause_quanta,
        ecn: p.ecn.map(|(kmin, kmax, pmax)| Ecn { kmin, kmax, pmax }),
        cc: p.cc,
        deadlock_timeout: p.deadlock_timeout,
        port_buffer_bytes: p.buffer,
        shared_buffer_bytes: p.shared_buffer,
        shared_buffer_alpha: p.shared_buffer_alpha,
        routing: match s.fabric.routing {
            Routing::Ecmp => PRouting::Ecmp,
            Routing::Adaptive => PRouting::Adaptive,
            Routing::Spray => PRouting::Spray,
            Routing::Flowlet => PRouting::Flowlet,
        },
        window_bytes: p.window,
        ack_every: p.ack_every,
        rto: p.rto,
        flowlet_gap: p.flowlet_gap,
        host_path: if s.gpu_direct {
            HostPath::GpuDirect
        } else {
            HostPath::HostStaged {
                copy_rate: s.host_copy_rate,
                copy_latency: s.host_copy_latency,
            }
        },
        transport: if p.tcp {
            Transport::Tcp {
                per_packet_overhead: p.tcp_packet_overhead,
                jitter: p.tcp_jitter,
            }
        } else {
            Transport::Rdma
        },
        vl_escalation: p.vl_escalation,
        cut_through: p.cut_through,
        sample_interval: p.sample_interval,
        time_limit: p.time_limit,
        ..PacketConfig::default()
    }
}

/// One nccl-tests row: algbw = S / t, busbw = algbw × factor (nccl-tests PERFORMANCE.md).
pub fn row(w: &CollectiveWorkload, spec: &CollectiveSpec, n: u32, secs: f64) -> CollectiveRow {
    let algbw = if secs > 0.0 {
        spec.bytes as f64 / secs / 1e9
    } else {
        0.0
    };
    CollectiveRow {
        op: spec.op.name().to_string(),
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
    }
}

/// Wire bytes the busiest NIC uplink carried in `dag`: GPU-to-GPU transfers
/// between hosts leave through their source GPU's NIC (a PXN relay's, for a
/// relayed leg), and in-network reductions through the NIC of the GPU that
/// sends to its edge switch. Zero when nothing leaves a host.
pub fn busiest_nic_bytes(dag: &Dag, topo: &Topology) -> u64 {
    let mut per_nic: BTreeMap<u32, u64> = BTreeMap::new();
    for t in &dag.tasks {
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
            *per_nic.entry(n.0).or_insert(0) += b;
        }
    }
    per_nic.values().copied().max().unwrap_or(0)
}

/// 64-bit FNV-1a, a stable hash for scenario fingerprints.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
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
    // the DAG's size was checked against the budget (crate::budget::run)
    let step = training::build(t, topo)?;
    for f in &scenario.faults {
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
    };
    let every: Vec<usize> = (0..scenario.faults.len()).collect();
    let (dag, out) = run_dag_with(&exec, &step.dag, &every)?;
    acc.absorb(&out, opts.collect_links);
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
    } = *exec;
    let chosen: Vec<_> = which.iter().map(|&i| scenario.faults[i].clone()).collect();
    let faults = crate::workload::faults::Applied::new(&chosen, topo);
    let d = faults.slow_dag(dag, topo).into_owned();
    let cfg = BackendConfig {
        fidelity,
        seed,
        link_events: faults.link_events,
        packet: (fidelity == Fidelity::Packet).then(|| packet_config(scenario, seed)),
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
    let what = match scenario.workload {
        WorkloadSpec::Inference(_) => "inference batch",
        _ => "training step",
    };
    let faults = &scenario.faults;
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
    let Some(kind) = dag.tasks.get(task as usize).map(|t| t.kind) else {
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
    order.sort_by_key(|&i| (scenario.faults[i].at, i));
    let mut fabric = topo.clone();
    for i in order {
        let f = &scenario.faults[i];
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
    if scenario.faults.is_empty() {
        return Ok(out);
    }
    let (_, healthy) = run_dag_with(exec, dag, &[])?;
    acc.events += healthy.events;
    let h = healthy.makespan.as_secs_f64();
    for (i, f) in scenario.faults.iter().enumerate() {
        let alone = if scenario.faults.len() == 1 {
            with_all
        } else {
            let (_, o) = run_dag_with(exec, dag, &[i])?;
            acc.events += o.events;
            o.makespan
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
    let busy = crate::workload::busy_per_gpu(dag, n_total);
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
    for task in &dag.tasks {
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
    // the DAG's size was checked against the budget (crate::budget::run)
    let b = inference::build(i, topo, seed)?;
    let every: Vec<usize> = (0..scenario.faults.len()).collect();
    let exec = Executor {
        scenario,
        topo,
        fidelity,
        seed,
        opts,
    };
    let (dag, out) = run_dag_with(&exec, &b.dag, &every)?;
    acc.absorb(&out, opts.collect_links);
    let mut report = inference::report(i, &b, &dag, &out);
    report.faults = fault_effects(&exec, &b.dag, out.makespan, acc)?;
    Ok(report)
}

/// Keeps every transfer of a run in `rec`, halving the kept rows (doubling the
/// stride) whenever they would exceed [`FlowRecords::CAP`].
fn record_flows(rec: &mut FlowRecords, dag: &Dag, out: &RunOutput, collective_bytes: u64) {
    let transfers = dag
        .tasks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t.kind {
            crate::dag::TaskKind::Transfer { src, dst, bytes } => Some((i, src, dst, bytes)),
            _ => None,
        });
    for ((task, src, dst, bytes), (fct, ideal)) in
        transfers.zip(out.transfer_fct.iter().zip(&out.transfer_ideal))
    {
        let keep = rec.total % rec.stride.max(1) == 0;
        rec.total += 1;
        if !keep {
            continue;
        }
        rec.rows.push(FlowRecord {
            collective_bytes,
            task: task as u32,
            src: src.0,
            dst: dst.0,
            bytes,
            fct_us: fct.as_secs_f64() * 1e6,
            ideal_us: ideal.as_secs_f64() * 1e6,
        });
        if rec.rows.len() >= FlowRecords::CAP {
            // Keep every other row: the kept rows stay a uniform sample.
            let mut i = 0;
            rec.rows.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            rec.stride = rec.stride.max(1) * 2;
        }
    }
}

/// Host × host bytes, grouped so the matrix has at most [`MATRIX_MAX`] cells a side.
struct MatrixAcc {
    hosts: u32,
    per_cell: u32,
    side: usize,
    bytes: Vec<u64>,
}

impl MatrixAcc {
    fn new(hosts: u32) -> MatrixAcc {
        let per_cell = hosts.div_ceil(MATRIX_MAX).max(1);
        let side = hosts.div_ceil(per_cell).max(1) as usize;
        MatrixAcc {
            hosts,
            per_cell,
            side,
            bytes: vec![0; side * side],
        }
    }

    fn add(&mut self, dag: &Dag, topo: &Topology) {
        for t in &dag.tasks {
            if let crate::dag::TaskKind::Transfer { src, dst, bytes } = t.kind {
                let a = (topo.host_of(src) / self.per_cell) as usize;
                let b = (topo.host_of(dst) / self.per_cell) as usize;
                if a < self.side && b < self.side {
                    self.bytes[a * self.side + b] += bytes;
                }
            }
        }
    }

    fn finish(self) -> TrafficMatrix {
        TrafficMatrix {
            hosts: self.hosts,
            hosts_per_cell: self.per_cell,
            bytes: self.bytes.chunks(self.side).map(<[u64]>::to_vec).collect(),
        }
    }
}

/// One run's link timeline: label, start on the concatenated axis, bucket width,
/// per-link buckets.
type TimelineRun = (String, SimTime, SimTime, Vec<(u32, Vec<f64>)>);

/// The per-run link timelines laid end to end.
#[derive(Default)]
struct TimelineAcc {
    /// End of the last run added.
    end: SimTime,
    /// Each run added, in order.
    runs: Vec<TimelineRun>,
}

impl TimelineAcc {
    fn add(&mut self, label: &str, out: &mut RunOutput) {
        if let Some(tl) = &mut out.link_timeline {
            self.runs.push((
                label.to_string(),
                self.end,
                tl.bucket,
                std::mem::take(&mut tl.links),
            ));
        }
        self.end += out.makespan;
    }

    /// Resamples every run onto [`TIMELINE_BUCKETS`] buckets over the whole run and
    /// keeps the [`TIMELINE_LINKS`] busiest links — the longest busy time, bytes over
    /// rate — chosen among the busiest `4 × TIMELINE_LINKS` of each run.
    fn finish(&self, topo: &Topology) -> Option<LinkTimelineReport> {
        if self.runs.is_empty() || self.end.ps() == 0 {
            return None;
        }
        let total = self.end.ps() as f64;
        let width = total / TIMELINE_BUCKETS as f64;
        // BTreeMap: link order is deterministic.
        let mut per_link: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for (_, start, bucket, links) in &self.runs {
            let (start, bucket) = (start.ps() as f64, bucket.ps() as f64);
            for (l, row) in links {
                let dst = per_link
                    .entry(*l)
                    .or_insert_with(|| vec![0.0; TIMELINE_BUCKETS]);
                for (b, &v) in row.iter().enumerate() {
                    if v <= 0.0 {
                        continue;
                    }
                    let lo = start + b as f64 * bucket;
                    let hi = lo + bucket;
                    spread(dst, lo, hi, v, width);
                }
            }
        }
        let rate = |l: u32| topo.effective_rate(LinkId(l)).bps() as f64 / 8.0;
        // busiest = longest busy time (bytes / rate), so a saturated 400G port
        // outranks a half-idle NVLink that moved more bytes
        let mut ranked: Vec<(u32, Vec<f64>, f64, f64)> = per_link
            .into_iter()
            .map(|(l, v)| {
                let sum: f64 = v.iter().sum();
                let busy = sum / rate(l).max(1.0);
                (l, v, sum, busy)
            })
            .collect();
        ranked.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.0.cmp(&b.0)));
        ranked.truncate(TIMELINE_LINKS);
        let width_s = width / 1e12;
        let links = ranked
            .into_iter()
            .map(|(l, v, sum, _)| {
                let rate = rate(l);
                LinkUtilization {
                    link: l,
                    name: link_name(topo, l),
                    bytes: sum.round() as u64,
                    utilization: v
                        .iter()
                        .map(|&b| (b / (rate * width_s)).clamp(0.0, 1.0))
                        .collect(),
                }
            })
            .collect();
        Some(LinkTimelineReport {
            bucket_us: width / 1e6,
            segments: self
                .runs
                .iter()
                .map(|(label, start, _, _)| TimelineSegment {
                    label: label.clone(),
                    start_us: start.as_secs_f64() * 1e6,
                })
                .collect(),
            links,
        })
    }
}

/// Adds `v` spread uniformly over `[lo, hi)` into buckets of `width`.
fn spread(dst: &mut [f64], lo: f64, hi: f64, v: f64, width: f64) {
    let n = dst.len();
    let b0 = ((lo / width) as usize).min(n - 1);
    let b1 = (((hi / width).ceil() as usize).max(b0 + 1)).min(n);
    let span = hi - lo;
    for (b, cell) in dst.iter_mut().enumerate().take(b1).skip(b0) {
        let overlap = (hi.min((b + 1) as f64 * width) - lo.max(b as f64 * width)).max(0.0);
        *cell += v * overlap / span;
    }
}

/// `from -> to` of a link, e.g. `nic h3.0 -> sw0 #130`.
pub fn link_name(topo: &Topology, l: u32) -> String {
    let link = topo.link(LinkId(l));
    let node = |n: crate::topology::NodeId| match topo.node(n).kind {
        NodeKind::Gpu { gpu } => format!("gpu {}", gpu.0),
        NodeKind::NvSwitch { host } => format!("nvswitch h{host}"),
        NodeKind::Nic { host, index } => format!("nic h{host}.{index}"),
        NodeKind::Switch { tier } => format!("sw{tier} #{}", n.0),
    };
    format!("{} -> {}", node(link.from), node(link.to))
}

/// A series moved `offset_us` later and named after its run.
fn shift(s: &Series, offset_us: f64, label: &str) -> Series {
    Series {
        name: format!("{} ({label})", s.name),
        samples: s
            .samples
            .iter()
            .map(|p| Sample {
                t_us: p.t_us + offset_us,
                value: p.value,
            })
            .collect(),
    }
}

/// The [`SERIES_MAX`] series with the highest peaks (ties by name), each
/// downsampled to at most the point budget by keeping each window's maximum.
fn top_series(mut all: Vec<Series>) -> Vec<Series> {
    let peak = |s: &Series| s.samples.iter().map(|p| p.value).fold(0.0, f64::max);
    all.sort_by(|a, b| peak(b).total_cmp(&peak(a)).then(a.name.cmp(&b.name)));
    all.truncate(SERIES_MAX.0);
    for s in &mut all {
        let n = s.samples.len();
        if n > SERIES_MAX.1 {
            let per = n.div_ceil(SERIES_MAX.1);
            s.samples = s
                .samples
                .chunks(per)
                .map(|c| {
                    let m = c
                        .iter()
                        .max_by(|a, b| a.value.total_cmp(&b.value))
                        .expect("chunks are never empty");
                    m.clone()
                })
                .collect();
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_series_keeps_the_highest_peaks_and_their_maxima() {
        let mk = |name: &str, n: usize, peak_at: usize| Series {
            name: name.into(),
            samples: (0..n)
                .map(|i| Sample {
                    t_us: i as f64,
                    value: if i == peak_at { 1e6 } else { i as f64 },
                })
                .collect(),
        };
        let mut all: Vec<Series> = (0..10).map(|i| mk(&format!("s{i}"), 10, 0)).collect();
        all.push(mk("long", 10_000, 7_777));
        let top = top_series(all);
        assert_eq!(top.len(), SERIES_MAX.0);
        let long = top.iter().find(|s| s.name == "long").unwrap();
        assert!(long.samples.len() <= SERIES_MAX.1);
        // downsampling keeps each window's maximum, so the spike survives
        assert!(long
            .samples
            .iter()
            .any(|p| p.value == 1e6 && p.t_us == 7_777.0));
        // ties broken by name: deterministic
        assert_eq!(top[0].name, "long");
        assert_eq!(top[1].name, "s0");
    }

    #[test]
    fn spread_conserves_the_value() {
        let mut dst = vec![0.0; 4];
        spread(&mut dst, 5.0, 25.0, 8.0, 10.0);
        assert_eq!(dst, [2.0, 4.0, 2.0, 0.0]);
        spread(&mut dst, 39.0, 45.0, 1.0, 10.0); // past the end: only the part inside counts
        assert!((dst.iter().sum::<f64>() - 8.0 - 1.0 / 6.0).abs() < 1e-9);
    }
}
