//! Runs a validated [`Scenario`] at one fidelity and assembles its [`Report`].

use std::time::Instant;

use crate::backend::{self, FabricCounters, LinkCounters, RunOutput};
use crate::collective::{self, CollectiveError, CollectiveSpec};
use crate::config::{AlgoChoice, CollectiveWorkload, Fidelity, Scenario, WorkloadSpec};
use crate::dag::Dag;
use crate::metrics::FlowAccumulator;
use crate::report::{CollectiveRow, Report, SimStats, TopologySummary};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Choices made on the command line that override the scenario file.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Fidelity to run instead of the file's.
    pub fidelity: Option<Fidelity>,
    /// Seed to use instead of the file's.
    pub seed: Option<u64>,
    /// Keep per-link counters in the report.
    pub collect_links: bool,
}

/// Why a valid scenario could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The collective cannot run on this communicator.
    #[error("collective: {0}")]
    Collective(#[from] CollectiveError),
    /// The flow backend stopped.
    #[error("flow backend: {0}")]
    Flow(#[from] backend::flow::FlowError),
    /// The topology could not be built.
    #[error("topology: {0}")]
    Topology(#[from] crate::topology::TopologyError),
    /// The workload cannot run as configured.
    #[error("{0}")]
    Unsupported(String),
    /// The packet backend stopped (deadlock, time limit, unreachable destination).
    #[error("packet backend: {0}")]
    Packet(String),
}

/// Runs `scenario` and returns its report.
///
/// # Errors
/// [`RunError`] when the workload cannot run on the topology at this fidelity.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> Result<Report, RunError> {
    let wall = Instant::now();
    let fidelity = opts.fidelity.unwrap_or(scenario.fidelity);
    let seed = opts.seed.unwrap_or(scenario.seed);
    let topo = scenario.build_topology_for(fidelity)?;
    let mut acc = Accumulated::default();
    let exec = Executor {
        scenario,
        topo: &topo,
        fidelity,
        seed,
        opts,
    };
    match &scenario.workload {
        WorkloadSpec::Collective(w) => run_collectives(w, &exec, &mut acc)?,
        WorkloadSpec::Traffic(t) => run_traffic(t, &exec, &mut acc)?,
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let mut links = acc.links;
    links.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.link.cmp(&b.link)));
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
        flows: acc.flows.stats(),
        fabric: acc.fabric,
        links,
        ignored_settings: scenario.ignored_settings(fidelity),
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

#[derive(Default)]
struct Accumulated {
    rows: Vec<CollectiveRow>,
    makespan: SimTime,
    flows: FlowAccumulator,
    fabric: FabricCounters,
    links: Vec<LinkCounters>,
    events: u64,
}

impl Accumulated {
    fn absorb(&mut self, out: &RunOutput, collect_links: bool) {
        self.makespan += out.makespan;
        self.flows.add_all(&out.transfer_fct, &out.transfer_ideal);
        let f = &mut self.fabric;
        let o = &out.fabric;
        f.bytes_delivered += o.bytes_delivered;
        f.bytes_sent += o.bytes_sent;
        f.drops += o.drops;
        f.bytes_dropped += o.bytes_dropped;
        f.ecn_marks += o.ecn_marks;
        f.pfc_pause_frames += o.pfc_pause_frames;
        f.retransmitted_packets += o.retransmitted_packets;
        f.max_queue_bytes = f.max_queue_bytes.max(o.max_queue_bytes);
        f.credit_stall_ps += o.credit_stall_ps;
        f.cnps += o.cnps;
        f.timeouts += o.timeouts;
        self.events += out.events;
        if collect_links {
            merge_links(&mut self.links, &out.links);
        }
    }
}

/// Adds `new` link counters into `into` (summing bytes, keeping maxima).
fn merge_links(into: &mut Vec<LinkCounters>, new: &[LinkCounters]) {
    for l in new {
        match into.iter_mut().find(|x| x.link == l.link) {
            Some(x) => {
                x.bytes += l.bytes;
                x.drops += l.drops;
                x.stall_ps += l.stall_ps;
                x.paused_ps += l.paused_ps;
                x.pause_frames += l.pause_frames;
                x.max_queue_bytes = x.max_queue_bytes.max(l.max_queue_bytes);
                x.utilization = x.utilization.max(l.utilization);
                x.avg_queue_bytes = x.avg_queue_bytes.max(l.avg_queue_bytes);
            }
            None => into.push(l.clone()),
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
    };
    if w.algorithm == AlgoChoice::Auto {
        spec.algorithm = collective::auto_select(&spec, ranks, topo)?;
    }
    Ok(spec)
}

/// Everything needed to execute a DAG at the chosen fidelity.
struct Executor<'a> {
    scenario: &'a Scenario,
    topo: &'a Topology,
    fidelity: Fidelity,
    seed: u64,
    opts: &'a RunOptions,
}

impl Executor<'_> {
    /// Runs one DAG at this fidelity.
    fn run_dag(&self, dag: &Dag) -> Result<RunOutput, RunError> {
        Ok(match self.fidelity {
            Fidelity::Analytical => backend::analytical::run(dag, self.topo),
            Fidelity::Flow => backend::flow::run(
                dag,
                self.topo,
                &backend::flow::FlowConfig {
                    seed: self.seed,
                    ..Default::default()
                },
            )?,
            Fidelity::Packet => {
                let cfg = packet_config(self.scenario, self.seed);
                backend::packet::run(dag, self.topo, &cfg)
                    .map_err(|e| RunError::Packet(e.to_string()))?
            }
        })
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
    for &bytes in &w.sizes {
        let spec = spec_for(w, bytes, &ranks, topo)?;
        let time = if exec.fidelity == Fidelity::Analytical {
            // closed forms: no DAG, so 100k+ GPUs cost O(N)
            let t = collective::analytical_time(&spec, &ranks, topo)?;
            let moved = collective::traffic_bytes(&spec, &ranks)?;
            acc.fabric.bytes_delivered += moved;
            acc.fabric.bytes_sent += moved;
            acc.makespan += t;
            t
        } else {
            let mut dag = Dag::new();
            dag.begin_op(spec.op.name());
            collective::lower(&spec, &ranks, topo, &mut dag, &[])?;
            let out = exec.run_dag(&dag)?;
            acc.absorb(&out, exec.opts.collect_links);
            let t = out.op_timing[0];
            t.end - t.start
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
    let out = exec.run_dag(&dag)?;
    acc.absorb(&out, exec.opts.collect_links);
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
        },
        window_bytes: p.window,
        ack_every: p.ack_every,
        rto: p.rto,
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
    }
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
