//! `[simulation]`: fidelity, seed, budget keys, and the limits that keep
//! every simulated time and byte counter inside `u64` picoseconds and bytes.

use super::raw::RawSimulation;
use super::validate::Validator;
use super::workload::{self, InferenceSpec, TrainingSpec};
use super::{Scenario, WorkloadSpec};
use crate::units::{parse_size, Rate, SimTime};

/// How much detail a run simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fidelity {
    /// α-β cost per transfer, no contention.
    Analytical,
    /// Max-min fair flows.
    Flow,
    /// Packets, queues, flow control.
    Packet,
}

impl Fidelity {
    /// Name in files, CLI and results.
    pub fn name(self) -> &'static str {
        match self {
            Fidelity::Analytical => "analytical",
            Fidelity::Flow => "flow",
            Fidelity::Packet => "packet",
        }
    }
    /// Parses a name.
    pub fn parse(s: &str) -> Option<Fidelity> {
        match s {
            "analytical" => Some(Fidelity::Analytical),
            "flow" => Some(Fidelity::Flow),
            "packet" => Some(Fidelity::Packet),
            _ => None,
        }
    }
}

/// Most worker threads `simulation.threads` (and `--threads`) may ask for,
/// as for `sweep --jobs`: beyond it a thread per run costs more than it gains
/// on any machine this runs on.
pub const MAX_THREADS: u32 = 256;

/// Longest latency or per-packet overhead a key may set: 1 s. Latencies are
/// paid once per step, hop or packet, so a run adds up millions of them; at most
/// 1 s each (2⁴⁰ ps), 2²⁴ of them still fit in `u64` picoseconds.
pub const MAX_LATENCY: SimTime = SimTime(1_000_000_000_000);

/// Longest simulated time a size may take over the slowest link, 2⁶⁰ ps (about
/// 13 days): room for sums over sizes, steps and faults within `u64` picoseconds.
pub const MAX_SIM_TIME: SimTime = SimTime(1 << 60);

impl Validator<'_> {
    /// `simulation.fidelity`, default `flow`.
    pub(super) fn fidelity(&mut self, sim: &RawSimulation) -> Option<Fidelity> {
        let s = sim.fidelity.as_deref().unwrap_or("flow");
        match Fidelity::parse(s) {
            Some(f) => Some(f),
            None => {
                self.err(
                    "simulation.fidelity",
                    format!("{s:?}"),
                    "one of \"analytical\", \"flow\", \"packet\"",
                );
                None
            }
        }
    }

    /// `simulation.seed`, default 1.
    pub(super) fn seed(&mut self, sim: &RawSimulation) -> Option<u64> {
        match sim.seed {
            Some(s) if s < 0 => {
                self.err("simulation.seed", s.to_string(), "a non-negative integer");
                None
            }
            s => Some(s.unwrap_or(1) as u64),
        }
    }

    /// A diagnostic for a scenario over its budget, at the key that drives it.
    pub(super) fn over_budget(&mut self, over: &crate::budget::OverBudget) {
        // a min_bytes/max_bytes sweep has no `sizes` to point at
        let field = match over.field {
            "workload.sizes" if self.span_of("workload.sizes").is_none() => "workload.max_bytes",
            f => f,
        };
        self.err(field, over.found.clone(), over.expected.clone());
    }

    /// `simulation.max_memory`, `simulation.max_events` and `simulation.threads`.
    pub(super) fn budget(&mut self, sim: &RawSimulation) -> Option<crate::budget::Budget> {
        let mut b = crate::budget::Budget::default();
        if let Some(q) = &sim.max_memory {
            let m = self.size("simulation.max_memory", Some(q), None, 1 << 20)?;
            b.max_memory = m;
            b.memory_is_default = false;
        }
        if let Some(n) = sim.max_events {
            let x = n.as_f64();
            if !(x.is_finite() && x >= 1.0 && x.fract() == 0.0 && x <= u64::MAX as f64) {
                self.err(
                    "simulation.max_events",
                    x.to_string(),
                    "a whole number of packet events, at least 1, such as 3.6e10",
                );
                return None;
            }
            b.max_events = x as u64;
        }
        if let Some(n) = sim.threads {
            if !(1..=i64::from(MAX_THREADS)).contains(&n) {
                self.err(
                    "simulation.threads",
                    n.to_string(),
                    format!("a whole number of worker threads from 1 to {MAX_THREADS} (leave it out to use every core)"),
                );
                return None;
            }
            b.threads = Some(n as u32);
        }
        Some(b)
    }

    /// Every workload size must move, over the slowest link of the cluster, in
    /// simulated time that fits [`MAX_SIM_TIME`], and all sizes together must
    /// move fewer than 2⁶¹ bytes (2 buffers per rank each) so that byte counters
    /// summed over the run cannot wrap.
    pub(super) fn in_time_range(&mut self, s: &Scenario, topo: &crate::topology::Topology) -> bool {
        let slowest = topo
            .links
            .iter()
            .map(|l| l.rate.0)
            .chain((!s.gpu_direct).then_some(s.host_copy_rate.0))
            .min()
            .unwrap_or(1)
            .max(1);
        let rate = Rate(slowest);
        let n = u128::from(s.num_gpus());
        let mut sizes: Vec<(String, u64, u128)> = Vec::new();
        match &s.workload {
            WorkloadSpec::Collective(w) => {
                let key = if self.span_of("workload.sizes").is_some() {
                    "workload.sizes"
                } else {
                    "workload.max_bytes"
                };
                // the index of each size in the file's list, when there is one
                let mut index: std::collections::HashMap<u64, usize> = Default::default();
                if self.span_of("workload.sizes").is_some() {
                    for i in 0..w.sizes.len() {
                        let b = self
                            .src
                            .text_of(&format!("workload.sizes.{i}"))
                            .and_then(|t| parse_size(t.trim().trim_matches('"')).ok());
                        if let Some(b) = b {
                            index.entry(b).or_insert(i);
                        }
                    }
                }
                for &b in &w.sizes {
                    let field = index
                        .get(&b)
                        .map_or_else(|| key.to_string(), |i| format!("workload.sizes.{i}"));
                    sizes.push((field, b, 2 * u128::from(b) * n));
                }
            }
            WorkloadSpec::Traffic(t) => {
                use crate::workload::traffic::TrafficSpec as T;
                let per_flow = match t {
                    T::Incast { bytes, senders, .. } => {
                        Some((*bytes, u128::from(*bytes) * u128::from(*senders)))
                    }
                    T::Permutation { bytes, .. } => Some((*bytes, u128::from(*bytes) * n)),
                    T::AllToAll { bytes } => Some((*bytes, u128::from(*bytes) * n * n)),
                    T::RandomPairs { .. } => None,
                    T::Flows(list) => {
                        for (i, f) in list.iter().enumerate() {
                            sizes.push((
                                format!("workload.flows.{i}.bytes"),
                                f.bytes,
                                u128::from(f.bytes),
                            ));
                        }
                        None
                    }
                };
                if let Some((b, total)) = per_flow {
                    sizes.push(("workload.bytes".into(), b, total));
                }
                for f in &s.extra_flows {
                    sizes.push(("workload.extra_flows".into(), f.bytes, u128::from(f.bytes)));
                }
            }
            WorkloadSpec::Training(t) => {
                if !self.compute_in_time_range(s, training_compute_secs(t)) {
                    return false;
                }
            }
            WorkloadSpec::Inference(i) => {
                if !self.compute_in_time_range(s, inference_compute_secs(i)) {
                    return false;
                }
            }
            WorkloadSpec::Chakra(c) => {
                use crate::workload::chakra::PlanOp;
                // compute of one rank runs one task at a time
                let mut busy = vec![0u128; c.plan.ranks as usize];
                for op in &c.plan.ops {
                    match op {
                        PlanOp::Compute { rank, duration, .. } => {
                            busy[*rank as usize] += u128::from(duration.0)
                        }
                        PlanOp::Collective { bytes, ranks, .. } => sizes.push((
                            "workload.traces".into(),
                            *bytes,
                            2 * u128::from(*bytes) * ranks.len() as u128,
                        )),
                        PlanOp::Transfer { bytes, .. } => {
                            sizes.push(("workload.traces".into(), *bytes, u128::from(*bytes)))
                        }
                    }
                }
                let most = busy.iter().max().copied().unwrap_or(0) as f64 * 1e-12;
                if !self.compute_in_time_range(s, most) {
                    return false;
                }
            }
            WorkloadSpec::Jobs(jobs) => {
                // each job's sizes as a workload of its own, at its fields
                for (i, j) in jobs.iter().enumerate() {
                    let alone = Scenario {
                        workload: j.workload.clone(),
                        ..s.clone()
                    };
                    let saved = self.workload_at.replace(format!("jobs.{i}.workload"));
                    let fits = self.in_time_range(&alone, topo);
                    self.workload_at = saved;
                    if !fits {
                        return false;
                    }
                }
            }
        }
        let mut total: u128 = 0;
        for (field, b, moved) in sizes {
            // bits / (bits per second) in picoseconds, in u128 so it cannot wrap
            let ps = u128::from(b) * 8 * 1_000_000_000_000 / u128::from(rate.0);
            if ps > u128::from(MAX_SIM_TIME.0) {
                let found = match self.text_of(&field) {
                    Some(t) if field == "workload.max_bytes" => {
                        format!("{} (its sweep reaches {b} B)", t.trim())
                    }
                    Some(t) => format!("{} ({b} B)", t.trim()),
                    None => format!("{b} B"),
                };
                self.err(
                    &field,
                    found,
                    format!(
                        "a size that moves within the simulated-time range (2^60 ps, about 13 days) at {rate}, the slowest link: {b} B at {rate} takes {:.1e} s",
                        ps as f64 / 1e12
                    ),
                );
                return false;
            }
            // 2 buffers per rank here; an algorithm moves at most twice that
            // (NVLink included), so 2^61 keeps every byte counter under 2^62
            total = total.saturating_add(moved);
            if total > 1u128 << 61 {
                self.err(
                    &field,
                    format!("{b} B on {n} GPUs: about {total} bytes moved in all"),
                    "sizes that move fewer than 2^61 bytes over the whole run, so byte counters cannot wrap",
                );
                return false;
            }
        }
        true
    }

    /// A training step's (an inference batch's) compute must fit the
    /// simulated-time range too: `step`, about one GPU's compute in it
    /// ([`training_compute_secs`], [`inference_compute_secs`]), and that
    /// stretched by each `slow_gpu` factor. Otherwise a slow GPU (`factor =
    /// 1e308`) or a GPU far too slow for its model (`efficiency = 1e-12`)
    /// saturates its compute tasks at 2^64 ps, and the run fails later with a
    /// time that means nothing (found by `tests/fuzz_scenarios.rs`).
    pub(super) fn compute_in_time_range(&mut self, s: &Scenario, step: f64) -> bool {
        let limit = MAX_SIM_TIME.as_secs_f64();
        let range = "the simulated-time range (2^60 ps, about 13 days)";
        // NaN (0 × ∞) counts as out of range
        let fits = |t: f64| t.is_finite() && t <= limit;
        if !fits(step) {
            self.err(
                "workload.gpu",
                format!("a GPU that computes one step (inference: the batch) in about {step:.1e} s"),
                format!(
                    "a GPU fast enough (peak_tflops, efficiency, hbm_bandwidth) that one GPU's compute in a step fits {range}, or a smaller model, batch or request count"
                ),
            );
            return false;
        }
        for (i, f) in s.faults.iter().enumerate() {
            if let workload::FaultKind::SlowGpu { factor, .. } = f.kind {
                if !fits(step * factor) {
                    let field = format!("faults.{i}.factor");
                    let text = self
                        .src
                        .text_of(&field)
                        .map_or_else(|| factor.to_string(), |x| x.trim().to_string());
                    self.err(
                        &field,
                        format!(
                            "{text} (a step of about {step:.1e} s of compute would take {:.1e} s)",
                            step * factor
                        ),
                        format!("a slowdown factor that keeps one GPU's compute in a step within {range}: at most {:.1e}", limit / step),
                    );
                    return false;
                }
            }
        }
        true
    }
}

/// Σ over the model's layers of `secs(l)`, in O(1): layer l is MoE when
/// `(l + 1) % moe_every == 0` (so `layers / moe_every` of them), every other layer
/// is dense and costs what layer 0 does.
fn over_layers(m: &workload::ModelSpec, secs: impl Fn(u64) -> f64) -> f64 {
    let every = m.moe_every.max(1);
    let moe = if m.experts > 1 { m.layers / every } else { 0 };
    let dense = m.layers - moe;
    let mut t = 0.0;
    if moe > 0 {
        t += moe as f64 * secs(every - 1);
    }
    if dense > 0 {
        t += dense as f64 * secs(0);
    }
    t
}

/// About one GPU's compute in a training step, seconds: its pipeline stage's
/// share of the layers, forward and backward, and the output head (forward and
/// backward), for every micro-batch.
fn training_compute_secs(t: &TrainingSpec) -> f64 {
    use crate::workload::training::{head_time, layer_times};
    let layers = over_layers(&t.model, |l| {
        layer_times(t, l)
            .iter()
            .map(|x| x.as_secs_f64())
            .sum::<f64>()
    });
    let head = 3.0 * head_time(t).as_secs_f64();
    t.micro_batches() as f64 * (layers / f64::from(t.plan.pp.max(1)) + head)
}

/// About the compute of an inference batch on one GPU of each stage, seconds:
/// the prefill of every request's prompt, then `output_max` decode steps of every
/// request at the longest context, through all layers (the stages run in turn).
fn inference_compute_secs(i: &InferenceSpec) -> f64 {
    use crate::workload::{compute_time, layer_cost};
    let m = &i.model;
    let tp = i.plan.tp.max(1);
    let pass = |tokens: f64, ctx: f64| {
        over_layers(m, |l| {
            let c = layer_cost(m, l, tokens, ctx, tp);
            compute_time(&i.gpu, m, c.attn_flops, c.attn_weight_bytes).as_secs_f64()
                + compute_time(&i.gpu, m, c.mlp_flops, c.mlp_weight_bytes).as_secs_f64()
        })
    };
    let requests = i.requests as f64;
    let prompt = i.prompt_tokens as f64;
    pass(requests * prompt, prompt)
        + i.output_max as f64 * pass(requests, prompt + i.output_max as f64)
}
