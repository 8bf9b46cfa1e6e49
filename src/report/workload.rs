//! The `training` and `inference` sections of a [`super::Report`] and their
//! terminal rendering.

use std::fmt::Write;

use serde::Serialize;

/// Time the average GPU spends in one kind of operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpTime {
    /// `compute_forward`, `compute_backward`, `tp_collective`, `pp_p2p`,
    /// `ep_alltoall`, `dp_gradient`, `zero_param_allgather`.
    pub op: String,
    /// Instances in the step (collectives, transfers; compute kinds: tasks).
    pub count: u64,
    /// Σ over instances of (duration × GPUs taking part) / GPUs simulated, seconds:
    /// the time one GPU spends in it on average (communication may overlap compute).
    pub time_per_gpu_s: f64,
    /// Payload bytes the step's transfers of this kind move (0 for compute).
    pub bytes: u64,
}

/// What one fault does to the step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FaultEffect {
    /// The fault's name.
    pub name: String,
    /// Its kind (`slow_gpu`, `link_down`, `link_degraded`, `switch_down`).
    pub kind: String,
    /// When it starts, microseconds.
    pub at_us: f64,
    /// Step time (inference: the whole batch) with this fault alone, seconds.
    pub step_time_s: f64,
    /// The same without any fault, seconds.
    pub healthy_step_time_s: f64,
    /// step_time_s / healthy_step_time_s.
    pub slowdown: f64,
}

/// One training step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TrainingReport {
    /// Model preset, if one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Parameters of the model.
    pub params: f64,
    /// data, tensor, pipeline, expert degrees.
    pub plan: [u32; 4],
    /// ZeRO stage.
    pub zero: u8,
    /// Micro-batches per replica (gradient accumulation steps).
    pub micro_batches: u64,
    /// GPUs whose tasks were simulated (all, or one replica's).
    pub gpus_simulated: u32,
    /// Step time, seconds (with every fault of the scenario).
    pub step_time_s: f64,
    /// Compute time of the busiest GPU, seconds.
    pub compute_time_s: f64,
    /// Step time with communication made free, seconds.
    pub free_comm_step_s: f64,
    /// free_comm_step − compute: dependency wait (pipeline bubble, stragglers), seconds.
    pub bubble_s: f64,
    /// step − free_comm_step: communication not hidden by overlap, seconds.
    pub exposed_comm_s: f64,
    /// 1 − mean GPU compute / step time.
    pub gpu_idle_fraction: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
    /// Model FLOPs utilization: model FLOPs / (step · GPUs · peak).
    pub mfu: f64,
    /// Time per operation kind.
    pub breakdown: Vec<OpTime>,
    /// Each fault of the scenario alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultEffect>,
}

/// Distribution of a per-request time, milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MsStats {
    /// Median.
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Mean.
    pub mean: f64,
    /// Maximum.
    pub max: f64,
}

impl MsStats {
    /// Statistics of `v` (milliseconds); zeros when empty.
    pub fn of(v: &[f64]) -> MsStats {
        if v.is_empty() {
            return MsStats::default();
        }
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let rank = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        MsStats {
            p50: rank(0.5),
            p99: rank(0.99),
            mean: s.iter().sum::<f64>() / s.len() as f64,
            max: s[s.len() - 1],
        }
    }
}

/// One batch of inference requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InferenceReport {
    /// Model preset, if one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// tensor, pipeline degrees.
    pub plan: [u32; 2],
    /// Requests in the batch.
    pub requests: u64,
    /// Prefill (time to first token) of the batch, milliseconds.
    pub prefill_ms: f64,
    /// Time per output token of each request after the first, milliseconds.
    pub tpot_ms: MsStats,
    /// Output tokens per second over the whole batch.
    pub output_tokens_per_s: f64,
    /// Total time, milliseconds.
    pub total_ms: f64,
    /// Total time minus its value with free communication, milliseconds.
    pub exposed_comm_ms: f64,
    /// Each fault of the scenario alone (`step_time_s`: the whole batch).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultEffect>,
}

/// Renders the training section.
pub fn render_training(t: &TrainingReport) -> String {
    let mut s = String::new();
    let [d, tp, pp, ep] = t.plan;
    let _ = writeln!(
        s,
        "# training step: {:.1}B params, DP={d} TP={tp} PP={pp} EP={ep} ZeRO-{}, {} micro-batches",
        t.params / 1e9,
        t.zero,
        t.micro_batches
    );
    let pct = |x: f64| 100.0 * x / t.step_time_s.max(f64::MIN_POSITIVE);
    let _ = writeln!(
        s,
        "#   step {:.4} s = compute {:.4} s + bubble {:.4} s ({:.1}%) + exposed comm {:.4} s ({:.1}%)",
        t.step_time_s,
        t.compute_time_s,
        t.bubble_s,
        pct(t.bubble_s),
        t.exposed_comm_s,
        pct(t.exposed_comm_s)
    );
    let _ = writeln!(
        s,
        "#   {:.0} tokens/s, MFU {:.1}%, GPU idle {:.1}%",
        t.tokens_per_s,
        100.0 * t.mfu,
        100.0 * t.gpu_idle_fraction
    );
    let _ = writeln!(
        s,
        "#   {:<22} {:>8} {:>14} {:>12}",
        "op", "count", "s per GPU", "bytes"
    );
    for o in &t.breakdown {
        let _ = writeln!(
            s,
            "#   {:<22} {:>8} {:>14.6} {:>12}",
            o.op,
            o.count,
            o.time_per_gpu_s,
            crate::units::format_bytes(o.bytes)
        );
    }
    for f in &t.faults {
        let _ = writeln!(
            s,
            "#   fault {:?} ({} at {:.1} us): step {:.4} s vs {:.4} s healthy ({:.3}×)",
            f.name, f.kind, f.at_us, f.step_time_s, f.healthy_step_time_s, f.slowdown
        );
    }
    s
}

/// Renders the inference section.
pub fn render_inference(r: &InferenceReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# inference: TP={} PP={}, {} requests; prefill {:.3} ms; TPOT p50 {:.3} ms, p99 {:.3} ms; {:.0} output tokens/s; exposed comm {:.3} ms of {:.3} ms",
        r.plan[0],
        r.plan[1],
        r.requests,
        r.prefill_ms,
        r.tpot_ms.p50,
        r.tpot_ms.p99,
        r.output_tokens_per_s,
        r.exposed_comm_ms,
        r.total_ms
    );
    for f in &r.faults {
        let _ = writeln!(
            s,
            "#   fault {:?} ({} at {:.1} us): batch {:.4} s vs {:.4} s healthy ({:.3}×)",
            f.name, f.kind, f.at_us, f.step_time_s, f.healthy_step_time_s, f.slowdown
        );
    }
    s
}
