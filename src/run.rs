//! Runs a validated [`Scenario`] at one fidelity and assembles its [`Report`].
//!
//! With [`RunOptions::detail`] it also derives the report's chart data from the
//! DAGs and the backend outputs: the FCT CDF, the host × host traffic matrix, the
//! utilization timeline of the busiest links and the backend's sampled series.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use crate::backend::flow::ProgressHook;
use crate::backend::{self, FabricCounters, LinkCounters, RunOutput, Sample, Series};
use crate::collective::{self, CollectiveError, CollectiveSpec};
use crate::config::{AlgoChoice, CollectiveWorkload, Fidelity, Scenario, WorkloadSpec};
use crate::dag::Dag;
use crate::metrics::FlowAccumulator;
use crate::report::{
    CollectiveRow, FlowRecord, FlowRecords, LinkTimelineReport, LinkUtilization, Report, SimStats,
    TimelineSegment, TopologySummary, TrafficMatrix,
};
use crate::topology::{GpuId, LinkId, NodeKind, Topology};
use crate::units::{format_bytes, SimTime};

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
    /// The collective cannot run on this communicator.
    #[error("collective: {0}")]
    Collective(#[from] CollectiveError),
    /// The flow backend stopped.
    #[error("flow backend: {0}")]
    Flow(#[from] backend::flow::FlowError),
    /// The topology could not be built.
    #[error("topology: {0}")]
    Topology(#[from] crate::topology::TopologyError),
    /// The fidelity is not available for this workload.
    #[error("{0}")]
    Unsupported(String),
}

/// Runs `scenario` and returns its report.
///
/// # Errors
/// [`RunError`] when the workload cannot run on the topology at this fidelity.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> Result<Report, RunError> {
    let wall = Instant::now();
    let fidelity = opts.fidelity.unwrap_or(scenario.fidelity);
    let seed = opts.seed.unwrap_or(scenario.seed);
    let topo = scenario.build_topology()?;
    let mut acc = Accumulated::default();
    match &scenario.workload {
        WorkloadSpec::Collective(w) => run_collectives(w, &topo, fidelity, seed, opts, &mut acc)?,
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let detail = opts.detail && fidelity != Fidelity::Analytical;
    let fct_cdf = (detail && acc.flows.stats().count > 0).then(|| acc.flows.cdf());
    let traffic_matrix = acc.matrix.take().map(|m| m.finish());
    let link_timeline = acc.timeline.finish(&topo);
    let series = top_series(std::mem::take(&mut acc.series));
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
        flows: acc.flows.stats(),
        fabric: acc.fabric,
        links,
        ignored_settings: scenario.ignored_settings(fidelity),
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

#[derive(Default)]
struct Accumulated {
    rows: Vec<CollectiveRow>,
    flows: FlowAccumulator,
    fabric: FabricCounters,
    links: Vec<LinkCounters>,
    events: u64,
    matrix: Option<MatrixAcc>,
    timeline: TimelineAcc,
    series: Vec<Series>,
    records: FlowRecords,
}

impl Accumulated {
    fn absorb(&mut self, out: &RunOutput, collect_links: bool) {
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

fn run_collectives(
    w: &CollectiveWorkload,
    topo: &Topology,
    fidelity: Fidelity,
    seed: u64,
    opts: &RunOptions,
    acc: &mut Accumulated,
) -> Result<(), RunError> {
    let ranks = all_ranks(topo);
    let n = ranks.len() as u32;
    if opts.detail && fidelity != Fidelity::Analytical {
        acc.matrix = Some(MatrixAcc::new(topo.hosts));
    }
    if opts.flow_records {
        acc.records.stride = 1;
    }
    for &bytes in &w.sizes {
        let spec = spec_for(w, bytes, &ranks, topo)?;
        let time = match fidelity {
            Fidelity::Analytical => {
                let t = collective::analytical_time(&spec, &ranks, topo)?;
                let moved = collective::traffic_bytes(&spec, &ranks)?;
                acc.fabric.bytes_delivered += moved;
                acc.fabric.bytes_sent += moved;
                t
            }
            Fidelity::Flow => {
                let mut dag = Dag::new();
                dag.begin_op(spec.op.name());
                collective::lower(&spec, &ranks, topo, &mut dag, &[])?;
                let cfg = backend::flow::FlowConfig {
                    seed,
                    link_timeline: opts.detail,
                    // the closed form is a cheap guess of the run's length (contention
                    // only stretches it, which the timeline absorbs by doubling)
                    timeline_horizon: if opts.detail {
                        collective::analytical_time(&spec, &ranks, topo).unwrap_or_default()
                    } else {
                        SimTime::ZERO
                    },
                    // the report shows the TIMELINE_LINKS busiest over all runs; each run
                    // keeps 4x that many candidates
                    timeline_links: 4 * TIMELINE_LINKS,
                    progress: opts.progress.clone(),
                };
                let mut out = backend::flow::run(&dag, topo, &cfg)?;
                acc.absorb(&out, opts.collect_links);
                let label = format!("{} {}", spec.op.name(), format_bytes(bytes));
                if let Some(m) = &mut acc.matrix {
                    m.add(&dag, topo);
                }
                if opts.detail {
                    let offset = acc.timeline.end;
                    for s in &out.series {
                        acc.series
                            .push(shift(s, offset.as_secs_f64() * 1e6, &label));
                    }
                    acc.timeline.add(&label, &mut out);
                }
                if opts.flow_records {
                    record_flows(&mut acc.records, &dag, &out, bytes);
                }
                let t = out.op_timing[0];
                t.end - t.start
            }
            Fidelity::Packet => {
                return Err(RunError::Unsupported(
                    "the packet fidelity is not built yet; use analytical or flow".into(),
                ))
            }
        };
        acc.rows.push(row(w, &spec, n, time.as_secs_f64()));
    }
    Ok(())
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
