//! Report assembly: what the runs of one scenario add up to ([`Accumulated`])
//! and the [`Report`] built from it. `crate::run` executes the runs and hands
//! each output here; the chart data (the FCT CDF, the host × host traffic
//! matrix, the utilization timeline of the busiest links, the backends'
//! sampled series) is derived here from the DAGs and the outputs, so running
//! and reporting change independently.

use std::collections::BTreeMap;

use super::workload::{InferenceReport, TrainingReport};
use super::{
    CollectiveRow, DeadlockReport, FabricReport, FlowRecord, FlowRecords, LinkReport,
    LinkTimelineReport, LinkUtilization, Report, SimStats, TimelineSegment, TopologySummary,
    TrafficMatrix,
};
use crate::backend::{self, FabricCounters, LinkCounters, QpCounters, RunOutput, Sample, Series};
use crate::config::{Fidelity, Scenario};
use crate::dag::Dag;
use crate::metrics::FlowAccumulator;
use crate::topology::{LinkId, NodeKind, Topology};
use crate::units::SimTime;

/// Most cells per side of the traffic matrix.
pub const MATRIX_MAX: u32 = 64;
/// Links kept in the utilization timeline.
pub const TIMELINE_LINKS: usize = 32;
/// Time buckets of the utilization timeline.
pub const TIMELINE_BUCKETS: usize = 100;
/// Series kept, and points per series.
pub const SERIES_MAX: (usize, usize) = (8, 400);

/// What the runs of one scenario add up to (rows, flows, counters, events and
/// the chart data), until [`Accumulated::finish`] turns it into the [`Report`].
#[derive(Default)]
pub struct Accumulated {
    /// Keep per-link and per-queue-pair counters ([`crate::run::RunOptions::collect_links`]).
    collect_links: bool,
    /// Fill the chart sections ([`crate::run::RunOptions::detail`]).
    detail: bool,
    /// Keep per-transfer records ([`crate::run::RunOptions::flow_records`]).
    flow_records: bool,
    rows: Vec<CollectiveRow>,
    /// Per flow of a flow list (`kind = "flows"`), in file order.
    listed_flows: Vec<crate::report::ListedFlowResult>,
    /// Per job of a `[[jobs]]` scenario.
    jobs: Vec<crate::report::jobs::JobResult>,
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
    /// The timeline for Perfetto ([`crate::run::RunOptions::trace`]).
    trace: Option<super::trace::Trace>,
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
    /// Sets the per-job results of a `[[jobs]]` scenario.
    pub fn set_jobs(&mut self, jobs: Vec<crate::report::jobs::JobResult>) {
        self.jobs = jobs;
    }

    /// Nothing yet; `collect_links`, `detail` and `flow_records` say which
    /// optional sections to keep (as [`crate::run::RunOptions`] does).
    /// Records the per-flow results of a flow list.
    pub fn set_listed_flows(&mut self, rows: Vec<crate::report::ListedFlowResult>) {
        self.listed_flows = rows;
    }

    pub fn new(collect_links: bool, detail: bool, flow_records: bool) -> Accumulated {
        Accumulated {
            collect_links,
            detail,
            flow_records,
            ..Accumulated::default()
        }
    }

    /// Adds the host × host traffic matrix to the report (the DAGs of later runs
    /// fill it), over `hosts` hosts; a sweep asks for it, and every transfer
    /// record from the first.
    pub fn keep_matrix(&mut self, hosts: u32) {
        self.matrix = Some(MatrixAcc::new(hosts));
    }

    /// Builds the run's timeline ([`super::trace`]) for the GPUs of `topo`.
    pub fn keep_trace(&mut self, topo: &Topology) {
        self.trace = Some(super::trace::Trace::new(topo));
    }

    /// Keeps every transfer record from the first (a stride of 1); left unset,
    /// the stride starts at 0, which keeps the same rows.
    pub fn keep_every_record(&mut self) {
        self.records.stride = 1;
    }

    /// Adds a collective size costed in closed form (no DAG, no backend run):
    /// `moved` bytes delivered and sent, taking `time`.
    pub fn add_closed_form(&mut self, label: &str, moved: u64, time: SimTime) {
        if let Some(t) = &mut self.trace {
            t.add_closed_form(label, self.makespan, time);
        }
        let ov = &mut self.overflowed;
        checked_sum(
            &mut self.fabric.bytes_delivered,
            moved,
            "bytes_delivered",
            ov,
        );
        checked_sum(&mut self.fabric.bytes_sent, moved, "bytes_sent", ov);
        checked_sum(&mut self.makespan.0, time.0, "makespan (ps)", ov);
    }

    /// Adds one backend run of `dag` named `label` (e.g. `allreduce 1MiB`):
    /// its counters and flows, and with the chart sections its traffic, its
    /// series and its link timeline laid after the runs before it;
    /// `collective_bytes` labels its transfer records (0 outside a sweep).
    pub fn add_run(
        &mut self,
        label: &str,
        dag: &Dag,
        topo: &Topology,
        out: &mut RunOutput,
        collective_bytes: u64,
    ) {
        if let Some(t) = &mut self.trace {
            t.add_run(label, self.makespan, dag, out);
        }
        self.absorb(out);
        if let Some(m) = &mut self.matrix {
            m.add(dag, topo);
        }
        if self.detail {
            let offset_us = self.timeline.end.as_secs_f64() * 1e6;
            for s in &out.series {
                self.series.push(shift(s, offset_us, label));
            }
            self.timeline.add(label, out);
        }
        if self.flow_records {
            record_flows(&mut self.records, dag, out, collective_bytes);
        }
    }

    /// Adds a run's counters and flows only (a training step, an inference
    /// batch), and its tasks to the timeline when one is kept.
    pub fn add_output(&mut self, label: &str, dag: &Dag, out: &RunOutput) {
        if let Some(t) = &mut self.trace {
            t.add_run(label, self.makespan, dag, out);
        }
        self.absorb(out);
    }

    /// Adds the events of a run whose other results are not part of the
    /// report (the healthy and one-fault runs that name each fault's effect).
    pub fn add_events(&mut self, events: u64) {
        checked_sum(&mut self.events, events, "events", &mut self.overflowed);
    }

    /// Adds what moved before a deadlock froze the fabric: PAUSE frames,
    /// queues, bytes, events.
    pub fn add_stopped(&mut self, fabric: FabricCounters, links: Vec<LinkCounters>, events: u64) {
        self.absorb(&RunOutput {
            fabric,
            links,
            events,
            ..RunOutput::default()
        });
    }

    /// Adds one row of the collectives table.
    pub fn push_row(&mut self, row: CollectiveRow) {
        self.rows.push(row);
    }

    fn absorb(&mut self, out: &RunOutput) {
        let collect_links = self.collect_links;
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
        // InfiniBand CC's counts: modelled if any part of the run ran it
        for (mine, theirs) in [(&mut f.fecn_marks, o.fecn_marks), (&mut f.becns, o.becns)] {
            if let Some(v) = theirs {
                *mine = Some(mine.unwrap_or(0).saturating_add(v));
            }
        }
        f.pfc.merge(&o.pfc);
        f.lanes.add(&o.lanes);
        match (&mut f.trimmed, &o.trimmed) {
            (Some(t), Some(n)) => t.add(n),
            (t @ None, Some(n)) => *t = Some(*n),
            (_, None) => {}
        }
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

/// How a scenario's runs ended, beside what they added up to: the header
/// fields of the [`Report`] and its workload sections.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Fidelity that ran.
    pub fidelity: Fidelity,
    /// Seed that ran.
    pub seed: u64,
    /// The training section, when a training step completed.
    pub training: Option<TrainingReport>,
    /// The inference section, when an inference batch completed.
    pub inference: Option<InferenceReport>,
    /// The settings the file sets that the run did not read, with the reason
    /// ([`crate::config::usage::Usage::ignored`]).
    pub ignored_settings: Vec<crate::config::IgnoredSetting>,
    /// The PFC deadlock that stopped the run, if one did.
    pub deadlock: Option<DeadlockReport>,
    /// The link and switch faults every run of a collective sweep or traffic
    /// pattern had (a training or inference run reports each fault's effect
    /// in its own section instead).
    pub faults: Vec<crate::report::AppliedFault>,
    /// Wall-clock time the runs took, seconds.
    pub wall_s: f64,
}

impl Accumulated {
    /// The first counter whose sum over the runs would not fit in `u64`, if any.
    pub fn overflowed(&self) -> Option<&'static str> {
        self.overflowed
    }

    /// The report of `scenario` run on `topo` as `outcome` says: totals, the
    /// busiest links and queue pairs first, and the chart sections the
    /// fidelity modelled.
    pub fn finish(mut self, scenario: &Scenario, topo: &Topology, outcome: Outcome) -> Report {
        let Outcome {
            fidelity,
            seed,
            training,
            inference,
            ignored_settings,
            deadlock,
            faults,
            wall_s,
        } = outcome;
        let detail = self.detail && fidelity != Fidelity::Analytical;
        let fct_cdf = (detail && self.flows.stats().count > 0).then(|| self.flows.cdf());
        let traffic_matrix = self.matrix.take().map(|m| m.finish());
        let link_timeline = self.timeline.finish(topo);
        let series = top_series(std::mem::take(&mut self.series));
        let mut links: Vec<LinkCounters> = self.links.into_values().collect();
        links.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.link.cmp(&b.link)));
        let mut queue_pairs: Vec<QpCounters> = self.queue_pairs.into_values().collect();
        queue_pairs.sort_by(|a, b| {
            (b.retransmitted_packets, b.timeouts)
                .cmp(&(a.retransmitted_packets, a.timeouts))
                .then((a.src, a.dst).cmp(&(b.src, b.dst)))
        });
        // Classes the run used (a run where they change nothing lists them in
        // ignored_settings and reports no section, so its result is unchanged).
        let classes_listed = ignored_settings
            .iter()
            .any(|i| i.key.starts_with("fabric.classes"));
        let classes = match (&scenario.packet().classes(), fidelity) {
            (Some(c), Fidelity::Packet) if !classes_listed => {
                super::ClassReport::of(c, &self.fabric.lanes)
            }
            _ => Vec::new(),
        };
        Report {
            scenario: scenario.name().to_string(),
            fidelity: fidelity.name().to_string(),
            seed,
            version: env!("CARGO_PKG_VERSION").to_string(),
            scenario_hash: format!("{:016x}", fnv1a(format!("{scenario:?}").as_bytes())),
            topology: TopologySummary::of(topo),
            collectives: self.rows,
            makespan_us: self.makespan.as_us(),
            flows: {
                let mut f = self.flows.stats();
                if !fidelity.models(backend::Counter::FctSlowdown) {
                    f.slowdown = None;
                }
                f
            },
            fabric: FabricReport::new(&self.fabric, fidelity),
            links: links.iter().map(|l| LinkReport::new(l, fidelity)).collect(),
            queue_pairs,
            training,
            inference,
            ignored_settings,
            deadlock,
            pfc: (fidelity == Fidelity::Packet && !self.fabric.pfc.is_empty())
                .then(|| self.fabric.pfc.clone()),
            faults,
            fct_cdf,
            traffic_matrix,
            link_timeline,
            series,
            flow_records: self.records,
            trace: self.trace,
            listed_flows: self.listed_flows,
            jobs: self.jobs,
            classes,
            sim: SimStats {
                events: self.events,
                wall_s,
                events_per_s: if wall_s > 0.0 {
                    self.events as f64 / wall_s
                } else {
                    0.0
                },
            },
        }
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
    let transfers = dag.tasks().enumerate().filter_map(|(i, t)| match t.kind {
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
        for t in dag.tasks() {
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
/// per-link buckets, and the run's length.
type TimelineRun = (String, SimTime, SimTime, Vec<(u32, Vec<f64>)>, SimTime);

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
                out.makespan,
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
        for (_, start, bucket, links, len) in &self.runs {
            let (start, bucket) = (start.ps() as f64, bucket.ps() as f64);
            let run_end = start + len.ps() as f64;
            for (l, row) in links {
                let dst = per_link
                    .entry(*l)
                    .or_insert_with(|| vec![0.0; TIMELINE_BUCKETS]);
                for (b, &v) in row.iter().enumerate() {
                    if v <= 0.0 {
                        continue;
                    }
                    // A run's last bucket reaches past its end, and spread
                    // evenly it would lose the part past the axis: clip it to
                    // the run. What a run sends after its last task (trailing
                    // ACKs at the packet level) lands at its end.
                    let lo = (start + b as f64 * bucket).min(run_end);
                    let hi = (lo + bucket).min(run_end);
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
                .map(|(label, start, _, _, _)| TimelineSegment {
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
    if span <= 0.0 {
        dst[b0] += v;
        return;
    }
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
/// downsampled to at most the point budget. A level (`queue_bytes`) keeps
/// each window's highest sample, so a spike survives; a rate (utilization,
/// `pfc_paused`, `ecn_marks_per_us`: each point the mean over the interval
/// since the previous one) becomes each window's time-weighted mean at the
/// window's last time, so the series still integrates to the counter it
/// came from (a window's maximum would count its busiest interval over the
/// whole window: 13,331 ECN marks from a port that made 13,228).
fn top_series(mut all: Vec<Series>) -> Vec<Series> {
    let peak = |s: &Series| s.samples.iter().map(|p| p.value).fold(0.0, f64::max);
    all.sort_by(|a, b| peak(b).total_cmp(&peak(a)).then(a.name.cmp(&b.name)));
    all.truncate(SERIES_MAX.0);
    for s in &mut all {
        let n = s.samples.len();
        if n <= SERIES_MAX.1 {
            continue;
        }
        if s.name.split_whitespace().next() == Some("queue_bytes") {
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
        } else {
            // the first point keeps its own interval (where it starts is
            // not in the series); each later window starts where the
            // previous one ended
            let per = (n - 1).div_ceil(SERIES_MAX.1 - 1);
            let mut out = Vec::with_capacity(SERIES_MAX.1);
            out.push(s.samples[0].clone());
            let mut start = s.samples[0].t_us;
            for c in s.samples[1..].chunks(per) {
                let mut prev = start;
                let mut area = 0.0;
                for p in c {
                    area += p.value * (p.t_us - prev);
                    prev = p.t_us;
                }
                let span = prev - start;
                out.push(Sample {
                    t_us: prev,
                    value: if span > 0.0 { area / span } else { 0.0 },
                });
                start = prev;
            }
            s.samples = out;
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
        all.push(mk("queue_bytes long", 10_000, 7_777));
        let top = top_series(all);
        assert_eq!(top.len(), SERIES_MAX.0);
        let long = top.iter().find(|s| s.name == "queue_bytes long").unwrap();
        assert!(long.samples.len() <= SERIES_MAX.1);
        // downsampling a level keeps each window's maximum, so the spike survives
        assert!(long
            .samples
            .iter()
            .any(|p| p.value == 1e6 && p.t_us == 7_777.0));
        // ties broken by name: deterministic
        assert_eq!(top[0].name, "queue_bytes long");
        assert_eq!(top[1].name, "s0");
    }

    /// A rate series longer than the budget keeps its integral (Σ value ×
    /// interval), and its points stay in time order within the budget.
    #[test]
    fn downsampled_rates_keep_their_integral() {
        let samples: Vec<Sample> = (1..=1000)
            .map(|i| Sample {
                t_us: i as f64 * 8.0 + if i % 7 == 0 { 4.0 } else { 0.0 },
                value: ((i * 37) % 13) as f64,
            })
            .collect();
        let area = |v: &[Sample]| {
            let mut prev = 0.0;
            v.iter().fold(0.0, |a, p| {
                let x = a + p.value * (p.t_us - prev);
                prev = p.t_us;
                x
            })
        };
        let before = area(&samples);
        let top = top_series(vec![Series {
            name: "ecn_marks_per_us link 3 (a -> b)".into(),
            samples,
        }]);
        let after = &top[0].samples;
        assert!(after.len() <= SERIES_MAX.1, "{} points", after.len());
        assert!(after.windows(2).all(|w| w[0].t_us < w[1].t_us));
        assert!(
            (area(after) - before).abs() < 1e-6 * before,
            "{} vs {before}",
            area(after)
        );
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
