//! The `training` and `inference` workloads and the `[[faults]]` array: raw
//! schema, model / GPU presets and validation into checked specs.
//!
//! ```toml
//! [workload]
//! kind = "training"          # or "inference"
//! preset = "llama2-70b"      # optional: fills model, parallel and gpu; any key overrides
//! [workload.model]
//! layers = 80                # transformer layers
//! hidden = 8192              # model width h
//! ffn = 28672                # MLP width (per expert for MoE)
//! heads = 64                 # attention heads
//! kv_heads = 8               # key/value heads (grouped-query attention); default = heads
//! vocab = 32000
//! seq_len = 4096             # tokens per sequence
//! global_batch = 1024        # sequences per optimizer step
//! micro_batch = 1            # sequences per micro-batch per data-parallel replica
//! precision = "bf16"         # bf16 | fp16 | fp8 | fp32: compute and activation bytes
//! gated_mlp = true           # SwiGLU (3 matrices) or GELU (2)
//! experts = 0                # > 1: mixture of experts
//! top_k = 2                  # experts per token
//! moe_every = 1              # every n-th layer is MoE
//! [workload.parallel]
//! data = 16                  # data-parallel degree
//! tensor = 8                 # tensor-parallel degree (inside a node)
//! pipeline = 4               # pipeline stages (1F1B schedule)
//! expert = 1                 # expert-parallel degree, carved out of data
//! zero = 1                   # ZeRO / FSDP stage 0..3
//! sequence_parallel = true   # TP all-reduce → reduce-scatter + all-gather
//! bucket = "25MiB"           # gradient bucket size
//! gradient_compression = 1.0 # gradient bytes are divided by this (≥ 1)
//! grad_precision = "bf16"    # bytes of a reduced gradient
//! dp_algorithm = "auto"      # algorithm of data-parallel collectives
//! tp_algorithm = "auto"      # algorithm of tensor-parallel collectives
//! replicas = "all"           # "one": simulate one data-parallel replica (see below)
//! [workload.gpu]
//! preset = "h100-sxm"        # h100-sxm | a100-sxm | b200
//! peak_tflops_bf16 = 989     # dense peak per precision, 10^12 FLOP/s
//! efficiency = 0.5           # fraction of peak the kernels reach
//! hbm_bandwidth = "3.35TB/s" # memory roofline
//! [workload.inference]       # kind = "inference" only
//! requests = 16              # requests decoded together (one batch)
//! prompt_tokens = 1024       # prompt length of every request
//! output_tokens = 128        # shortest output; outputs spread up to output_tokens_max
//! output_tokens_max = 256
//!
//! [[faults]]
//! kind = "slow_gpu"          # slow_gpu | link_down | link_degraded | switch_down
//! gpu = 3
//! factor = 2.0               # compute takes 2× longer
//! at = "0us"                 # from this time (default 0)
//! ```
//!
//! A link is named by `nic = N` (the N-th NIC's cable to its leaf, host-major,
//! both directions) or `link = N` (a directed link index of the topology and
//! its reverse). `replicas = "one"` builds the DAG of one data-parallel replica
//! (GPUs of data index 0) and lets the other replicas join only the
//! data-parallel collectives, assuming they run the same schedule: exact at the
//! analytical fidelity when no fault breaks the symmetry, and what makes a
//! 512-GPU step cheap to simulate. It is refused with expert parallelism
//! (all-to-all couples replicas) and with a `slow_gpu` fault outside replica 0;
//! link faults then only see the built replica's tensor and pipeline traffic.

use serde::Deserialize;

use super::validate::Validator;
use super::{AlgoChoice, RawNumber, RawQuantity};
use crate::collective::Algorithm;
use crate::topology::{NodeKind, Topology};
use crate::units::{Rate, SimTime};

// ---------------------------------------------------------------- raw schema

/// `[workload.model]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    /// Transformer layers.
    pub layers: Option<i64>,
    /// Hidden size.
    pub hidden: Option<i64>,
    /// MLP inner size (per expert).
    pub ffn: Option<i64>,
    /// Attention heads.
    pub heads: Option<i64>,
    /// Key/value heads.
    pub kv_heads: Option<i64>,
    /// Vocabulary size.
    pub vocab: Option<i64>,
    /// Tokens per sequence.
    pub seq_len: Option<i64>,
    /// Sequences per step.
    pub global_batch: Option<i64>,
    /// Sequences per micro-batch.
    pub micro_batch: Option<i64>,
    /// bf16, fp16, fp8, fp32.
    pub precision: Option<String>,
    /// SwiGLU (true) or two-matrix MLP.
    pub gated_mlp: Option<bool>,
    /// Experts per MoE layer (0 or 1: dense).
    pub experts: Option<i64>,
    /// Experts per token.
    pub top_k: Option<i64>,
    /// Every n-th layer is MoE.
    pub moe_every: Option<i64>,
    /// Zipf exponent of the experts' load (0: uniform).
    pub expert_skew: Option<f64>,
    /// Measured load per expert (any scale), one entry per expert.
    pub expert_load: Option<Vec<f64>>,
}

/// `[workload.parallel]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawParallel {
    /// Data-parallel degree.
    pub data: Option<i64>,
    /// Tensor-parallel degree.
    pub tensor: Option<i64>,
    /// Pipeline stages.
    pub pipeline: Option<i64>,
    /// Expert-parallel degree.
    pub expert: Option<i64>,
    /// ZeRO stage.
    pub zero: Option<i64>,
    /// Megatron sequence parallelism.
    pub sequence_parallel: Option<bool>,
    /// Gradient bucket size.
    pub bucket: Option<RawQuantity>,
    /// Gradient compression ratio (≥ 1).
    pub gradient_compression: Option<RawNumber>,
    /// Precision of reduced gradients.
    pub grad_precision: Option<String>,
    /// Algorithm of data-parallel collectives.
    pub dp_algorithm: Option<String>,
    /// Algorithm of tensor-parallel collectives.
    pub tp_algorithm: Option<String>,
    /// `all` or `one`.
    pub replicas: Option<String>,
    /// Software latency of a collective step between hosts (default: the protocol's).
    pub step_latency: Option<RawQuantity>,
    /// Software latency of a collective step over NVLink (default: the protocol's).
    pub nvlink_step_latency: Option<RawQuantity>,
}

/// `[workload.gpu]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGpu {
    /// GPU preset.
    pub preset: Option<String>,
    /// Dense bf16 peak, TFLOP/s.
    pub peak_tflops_bf16: Option<RawNumber>,
    /// Dense fp16 peak, TFLOP/s.
    pub peak_tflops_fp16: Option<RawNumber>,
    /// Dense fp8 peak, TFLOP/s.
    pub peak_tflops_fp8: Option<RawNumber>,
    /// Dense fp32 (TF32) peak, TFLOP/s.
    pub peak_tflops_fp32: Option<RawNumber>,
    /// Fraction of peak reached.
    pub efficiency: Option<RawNumber>,
    /// HBM bandwidth.
    pub hbm_bandwidth: Option<RawQuantity>,
}

/// `[workload.inference]` as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInference {
    /// Requests in the batch.
    pub requests: Option<i64>,
    /// Prompt tokens per request.
    pub prompt_tokens: Option<i64>,
    /// Shortest output.
    pub output_tokens: Option<i64>,
    /// Longest output.
    pub output_tokens_max: Option<i64>,
}

/// One `[[faults]]` entry as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    /// slow_gpu, link_down, link_degraded, switch_down.
    pub kind: Option<String>,
    /// Label shown in results.
    pub name: Option<String>,
    /// When the fault starts.
    pub at: Option<RawQuantity>,
    /// GPU index (slow_gpu).
    pub gpu: Option<i64>,
    /// Slowdown factor (slow_gpu).
    pub factor: Option<RawNumber>,
    /// NIC index whose cable fails.
    pub nic: Option<i64>,
    /// Directed link index.
    pub link: Option<i64>,
    /// Switch index (switch_down).
    pub switch: Option<i64>,
    /// Degraded rate (link_degraded).
    pub rate: Option<RawQuantity>,
    /// Bit-error rate (link_degraded; packet level).
    pub bit_error_rate: Option<RawNumber>,
}

// ---------------------------------------------------------------- checked model

/// Numeric precision of compute, activations or gradients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// bfloat16, 2 bytes.
    Bf16,
    /// IEEE half, 2 bytes.
    Fp16,
    /// 8-bit float, 1 byte.
    Fp8,
    /// 32-bit float (TF32 tensor cores), 4 bytes.
    Fp32,
}

impl Precision {
    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Precision::Bf16 | Precision::Fp16 => 2,
            Precision::Fp8 => 1,
            Precision::Fp32 => 4,
        }
    }
    /// Name in files and results.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Fp32 => "fp32",
        }
    }
    fn parse(s: &str) -> Option<Precision> {
        match s {
            "bf16" | "bfloat16" => Some(Precision::Bf16),
            "fp16" | "float16" => Some(Precision::Fp16),
            "fp8" => Some(Precision::Fp8),
            "fp32" | "float32" | "tf32" => Some(Precision::Fp32),
            _ => None,
        }
    }
}

/// A transformer.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Layers L.
    pub layers: u64,
    /// Hidden size h.
    pub hidden: u64,
    /// MLP inner size f (per expert).
    pub ffn: u64,
    /// Attention heads a.
    pub heads: u64,
    /// Key/value heads (GQA); equals `heads` for multi-head attention.
    pub kv_heads: u64,
    /// Vocabulary V.
    pub vocab: u64,
    /// Tokens per sequence s.
    pub seq_len: u64,
    /// SwiGLU MLP (3 matrices) instead of 2.
    pub gated_mlp: bool,
    /// Experts per MoE layer; ≤ 1 means dense.
    pub experts: u64,
    /// Experts each token visits.
    pub top_k: u64,
    /// Every `moe_every`-th layer (1-based: layers moe_every−1, 2·moe_every−1, …) is MoE.
    pub moe_every: u64,
    /// Share of a MoE layer's routed token copies each expert receives (sums
    /// to 1), from `expert_skew` or `expert_load`; `None`: uniform, 1/experts each.
    pub expert_load: Option<Vec<f64>>,
    /// Compute and activation precision.
    pub precision: Precision,
}

impl ModelSpec {
    /// Whether layer `l` (0-based) is a mixture-of-experts layer.
    pub fn is_moe(&self, l: u64) -> bool {
        self.experts > 1 && (l + 1) % self.moe_every.max(1) == 0
    }

    /// Share of the routed token copies that land on each of `ranks`
    /// expert-parallel ranks (sums to 1), experts placed in contiguous blocks
    /// (expert x on rank x·ranks/experts, as Megatron and DeepSpeed shard
    /// them); `None` when the load is uniform (every rank 1/ranks).
    pub fn rank_load(&self, ranks: u64) -> Option<Vec<f64>> {
        let load = self.expert_load.as_ref()?;
        let ranks = ranks.max(1);
        let mut out = vec![0.0; ranks as usize];
        let per = (load.len() as u64).div_ceil(ranks).max(1);
        for (x, w) in load.iter().enumerate() {
            out[((x as u64 / per).min(ranks - 1)) as usize] += w;
        }
        Some(out)
    }
}

/// Zipf shares over `n` items with exponent `s`: item x gets (x+1)^−s / Σ.
pub fn zipf_shares(n: u64, s: f64) -> Vec<f64> {
    let raw: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-s)).collect();
    let sum: f64 = raw.iter().sum();
    raw.into_iter().map(|x| x / sum).collect()
}

/// A GPU model.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSpec {
    /// Preset name or `custom`.
    pub name: String,
    /// Dense peak FLOP/s for bf16, fp16, fp8, fp32 (in [`Precision`] order).
    pub peak_flops: [f64; 4],
    /// Fraction of peak the kernels reach (0, 1].
    pub efficiency: f64,
    /// HBM bandwidth, bytes per second.
    pub hbm_bytes_per_s: f64,
}

impl GpuSpec {
    /// Dense peak FLOP/s at `p`.
    pub fn peak(&self, p: Precision) -> f64 {
        self.peak_flops[p as usize]
    }
}

/// How many data-parallel replicas the DAG holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replicas {
    /// Every GPU's tasks.
    All,
    /// One replica's tasks; the others join the data-parallel collectives only.
    One,
}

/// A parallel plan.
#[derive(Clone, Debug, PartialEq)]
pub struct ParallelPlan {
    /// Data-parallel degree (includes the expert-parallel degree).
    pub dp: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Expert-parallel degree (divides `dp`).
    pub ep: u32,
    /// ZeRO / FSDP stage, 0..=3.
    pub zero: u8,
    /// Sequence parallelism: TP all-reduces become reduce-scatter + all-gather.
    pub sequence_parallel: bool,
    /// Gradient bucket, bytes (before compression).
    pub bucket_bytes: u64,
    /// Gradient bytes are divided by this (≥ 1).
    pub grad_compression: f64,
    /// Precision of reduced gradients.
    pub grad_precision: Precision,
    /// Data-parallel collectives' algorithm.
    pub dp_algorithm: AlgoChoice,
    /// Tensor-parallel collectives' algorithm.
    pub tp_algorithm: AlgoChoice,
    /// Replicas in the DAG.
    pub replicas: Replicas,
    /// Per-step software latency of collectives (NVLink step, network step);
    /// `None`: the protocol's ([`crate::collective::Protocol::step_latency`]).
    pub step_latency: (Option<SimTime>, Option<SimTime>),
}

/// A checked training workload: one optimizer step.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingSpec {
    /// The model.
    pub model: ModelSpec,
    /// The plan.
    pub plan: ParallelPlan,
    /// The GPU.
    pub gpu: GpuSpec,
    /// Sequences per step.
    pub global_batch: u64,
    /// Sequences per micro-batch per replica.
    pub micro_batch: u64,
    /// Preset the file named, if any.
    pub preset: Option<String>,
}

impl TrainingSpec {
    /// Micro-batches per replica per step: global_batch / (micro_batch · dp).
    pub fn micro_batches(&self) -> u64 {
        self.global_batch / (self.micro_batch * self.plan.dp as u64)
    }
}

/// A checked inference workload: prefill then decode of one batch of requests.
#[derive(Clone, Debug, PartialEq)]
pub struct InferenceSpec {
    /// The model.
    pub model: ModelSpec,
    /// The plan (tensor and pipeline degrees; data = 1).
    pub plan: ParallelPlan,
    /// The GPU.
    pub gpu: GpuSpec,
    /// Requests decoded together.
    pub requests: u64,
    /// Prompt tokens per request.
    pub prompt_tokens: u64,
    /// Shortest output, tokens.
    pub output_min: u64,
    /// Longest output, tokens.
    pub output_max: u64,
    /// Preset the file named, if any.
    pub preset: Option<String>,
}

/// Which link a fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkSel {
    /// The cable between the N-th NIC and its leaf.
    Nic(u32),
    /// A directed link index (and its reverse).
    Link(u32),
}

/// What a fault does.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    /// A GPU's compute takes `factor` times longer.
    SlowGpu {
        /// The GPU.
        gpu: u32,
        /// Slowdown ≥ 1.
        factor: f64,
    },
    /// A link (both directions) stops.
    LinkDown {
        /// Which.
        link: LinkSel,
    },
    /// A link (both directions) runs slower and corrupts bits.
    LinkDegraded {
        /// Which.
        link: LinkSel,
        /// New line rate.
        rate: Rate,
        /// Bit-error rate (used at packet level only).
        bit_error_rate: Option<f64>,
    },
    /// Every link of a network switch stops.
    SwitchDown {
        /// Index among network switches, in topology order.
        switch: u32,
    },
}

/// One checked fault.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSpec {
    /// Label shown in results.
    pub name: String,
    /// What fails.
    pub kind: FaultKind,
    /// When, picoseconds from the start of the step.
    pub at: SimTime,
}

// ---------------------------------------------------------------- presets

/// A model + plan preset; every field can be overridden in the file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelPreset {
    /// Name in `workload.preset`.
    pub name: &'static str,
    /// One-line description.
    pub about: &'static str,
    /// layers, hidden, ffn, heads, kv_heads, vocab, seq_len, global_batch, micro_batch.
    pub dims: [i64; 9],
    /// experts, top_k.
    pub moe: [i64; 2],
    /// data, tensor, pipeline, expert, zero.
    pub plan: [i64; 5],
    /// Sequence parallelism.
    pub sequence_parallel: bool,
    /// GPU preset.
    pub gpu: &'static str,
}

/// Model presets.
pub const MODEL_PRESETS: [ModelPreset; 3] = [
    // Llama 2 7B: Touvron et al., "Llama 2", arXiv:2307.09288, Table 1 (4k context,
    // 4.0M-token global batch = 1024 × 4096) and the meta-llama/Llama-2-7b-hf
    // config.json (hidden 4096, intermediate 11008, 32 layers, 32 heads, vocab 32000).
    // Plan (ours): 64 GPUs, pure data parallel with ZeRO-1, micro-batch 1 → 16 micro-batches.
    ModelPreset {
        name: "llama2-7b",
        about: "Llama 2 7B dense, 4k context, 4M-token batch; 64 GPUs DP=64 ZeRO-1",
        dims: [32, 4096, 11008, 32, 32, 32000, 4096, 1024, 1],
        moe: [0, 1],
        plan: [64, 1, 1, 1, 1],
        sequence_parallel: false,
        gpu: "h100-sxm",
    },
    // Llama 2 70B: same paper, Table 1 (GQA, 4k context, 4.0M tokens); config.json of
    // meta-llama/Llama-2-70b-hf (hidden 8192, intermediate 28672, 80 layers, 64 heads,
    // 8 key/value heads, vocab 32000). Plan: TP=8 PP=4 DP=16 on 512 GPUs with sequence
    // parallelism and the distributed optimizer, as Megatron-LM runs 70B models
    // (Narayanan et al., SC 2021; Korthikanti et al., MLSys 2023).
    ModelPreset {
        name: "llama2-70b",
        about: "Llama 2 70B dense (GQA), 4k context, 4M-token batch; 512 GPUs TP=8 PP=4 DP=16",
        dims: [80, 8192, 28672, 64, 8, 32000, 4096, 1024, 1],
        moe: [0, 1],
        plan: [16, 8, 4, 1, 1],
        sequence_parallel: true,
        gpu: "h100-sxm",
    },
    // Mixtral 8x7B: Jiang et al., "Mixtral of Experts", arXiv:2401.04088, Table 1 (dim
    // 4096, 32 layers, hidden 14336, 32 heads, 8 kv heads, vocab 32000, 8 experts, top 2).
    // Training sequence length and batch are not published: we assume 4096 tokens and
    // 256 sequences. Plan (ours): 64 GPUs, TP=2, EP=8 inside DP=32.
    ModelPreset {
        name: "mixtral-8x7b",
        about: "Mixtral 8x7B MoE (8 experts, top-2); 64 GPUs TP=2 DP=32 EP=8 (batch assumed)",
        dims: [32, 4096, 14336, 32, 8, 32000, 4096, 256, 1],
        moe: [8, 2],
        plan: [32, 2, 1, 8, 1],
        sequence_parallel: true,
        gpu: "h100-sxm",
    },
];

/// A GPU preset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuPreset {
    /// Name in `workload.gpu.preset`.
    pub name: &'static str,
    /// Dense peak TFLOP/s: bf16, fp16, fp8, fp32 (TF32).
    pub tflops: [f64; 4],
    /// HBM bandwidth.
    pub hbm: &'static str,
}

/// GPU presets: NVIDIA datasheets, dense (no sparsity) tensor-core peaks.
pub const GPU_PRESETS: [GpuPreset; 3] = [
    // H100 SXM5 datasheet: BF16/FP16 989.4, FP8 1978.9, TF32 494.7 TFLOPS; HBM3 3.35 TB/s.
    GpuPreset {
        name: "h100-sxm",
        tflops: [989.4, 989.4, 1978.9, 494.7],
        hbm: "3.35TB/s",
    },
    // A100 SXM4 80GB datasheet: BF16/FP16 312, TF32 156 TFLOPS (no FP8); HBM2e 2.039 TB/s.
    // fp8 runs at the fp16 rate.
    GpuPreset {
        name: "a100-sxm",
        tflops: [312.0, 312.0, 312.0, 156.0],
        hbm: "2.039TB/s",
    },
    // B200 (HGX B200 datasheet, per GPU, dense): BF16/FP16 2250, FP8 4500, TF32 1100 TFLOPS;
    // HBM3e 8 TB/s.
    GpuPreset {
        name: "b200",
        tflops: [2250.0, 2250.0, 4500.0, 1100.0],
        hbm: "8TB/s",
    },
];

/// A model preset by name.
pub fn model_preset(name: &str) -> Option<&'static ModelPreset> {
    MODEL_PRESETS.iter().find(|p| p.name == name)
}

/// A GPU preset by name.
pub fn gpu_preset(name: &str) -> Option<&'static GpuPreset> {
    GPU_PRESETS.iter().find(|p| p.name == name)
}

fn names<T>(list: &[T], f: impl Fn(&T) -> &'static str) -> String {
    list.iter().map(f).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------- validation

/// The pieces `training` and `inference` share.
struct Common {
    model: ModelSpec,
    plan: ParallelPlan,
    gpu: GpuSpec,
    global_batch: u64,
    micro_batch: u64,
}

impl Validator<'_> {
    fn float(
        &mut self,
        field: &str,
        v: Option<RawNumber>,
        default: Option<f64>,
        ok: impl Fn(f64) -> bool,
        expected: &str,
    ) -> Option<f64> {
        match v.map(RawNumber::as_f64).or(default) {
            None => {
                self.err(field, "nothing", expected);
                None
            }
            Some(x) if !x.is_finite() || !ok(x) => {
                self.err(field, x.to_string(), expected);
                None
            }
            Some(x) => Some(x),
        }
    }

    fn algo_choice(&mut self, field: &str, v: Option<&str>) -> Option<AlgoChoice> {
        match v.unwrap_or("auto") {
            "auto" => Some(AlgoChoice::Auto),
            s => match Algorithm::parse(s) {
                Some(
                    a @ (Algorithm::Ring
                    | Algorithm::Tree
                    | Algorithm::HalvingDoubling
                    | Algorithm::Hierarchical
                    | Algorithm::Sharp),
                ) => Some(AlgoChoice::Fixed(a)),
                _ => {
                    self.err(
                        field,
                        format!("{s:?}"),
                        "one of auto, ring, tree, halving_doubling, hierarchical, sharp",
                    );
                    None
                }
            },
        }
    }

    fn precision(&mut self, field: &str, v: Option<&str>, default: &str) -> Option<Precision> {
        let s = v.unwrap_or(default);
        let p = Precision::parse(s);
        if p.is_none() {
            self.err(field, format!("{s:?}"), "one of bf16, fp16, fp8, fp32");
        }
        p
    }

    fn common(
        &mut self,
        w: &super::RawWorkload,
        total_gpus: Option<u64>,
        inference: bool,
    ) -> Option<Common> {
        let preset = match w.preset.as_deref() {
            None => None,
            Some(n) => match model_preset(n) {
                Some(p) => Some(p),
                None => {
                    self.err(
                        "workload.preset",
                        format!("{n:?}"),
                        format!("one of {}", names(&MODEL_PRESETS, |p| p.name)),
                    );
                    self.quiet_missing = true;
                    None
                }
            },
        };
        let m = w.model.clone().unwrap_or_default();
        let d = |i: usize| preset.map(|p| p.dims[i]);
        let c = |v: &mut Self, f: &str, x: Option<i64>, def: Option<i64>, what: &str| {
            v.count(&format!("workload.model.{f}"), x, def, 1, what)
                .map(u64::from)
        };
        let layers = c(self, "layers", m.layers, d(0), "transformer layers");
        let hidden = c(self, "hidden", m.hidden, d(1), "the hidden size");
        let ffn = c(self, "ffn", m.ffn, d(2), "the MLP inner size");
        let heads = c(self, "heads", m.heads, d(3), "attention heads");
        let kv_heads = c(
            self,
            "kv_heads",
            m.kv_heads,
            // heads set in the file without kv_heads: multi-head attention
            if m.heads.is_some() { m.heads } else { d(4) },
            "key/value heads",
        );
        let vocab = c(self, "vocab", m.vocab, d(5), "the vocabulary size");
        let seq_len = c(self, "seq_len", m.seq_len, d(6), "tokens per sequence");
        let (global_batch, micro_batch) = if inference {
            (Some(1), Some(1))
        } else {
            (
                c(
                    self,
                    "global_batch",
                    m.global_batch,
                    d(7),
                    "sequences per step",
                ),
                c(
                    self,
                    "micro_batch",
                    m.micro_batch,
                    d(8).or(Some(1)),
                    "sequences per micro-batch",
                ),
            )
        };
        let experts = match m.experts.or(preset.map(|p| p.moe[0])).unwrap_or(0) {
            e if e < 0 => {
                self.err(
                    "workload.model.experts",
                    e.to_string(),
                    "0 (dense) or the number of experts per MoE layer",
                );
                None
            }
            e => Some(e as u64),
        };
        let top_k = c(
            self,
            "top_k",
            m.top_k,
            preset.map(|p| p.moe[1]).or(Some(1)),
            "experts per token",
        );
        let moe_every = c(self, "moe_every", m.moe_every, Some(1), "MoE layer spacing");
        if let (Some(e), Some(k)) = (experts, top_k) {
            if e > 1 && k > e {
                self.err(
                    "workload.model.top_k",
                    k.to_string(),
                    format!("at most the number of experts ({e})"),
                );
            }
        }
        let expert_load = self.expert_load(&m, experts);
        if let (Some(h), Some(a)) = (hidden, heads) {
            if h % a != 0 {
                self.err(
                    "workload.model.heads",
                    a.to_string(),
                    format!("a number of heads that divides hidden ({h})"),
                );
            }
        }
        if let (Some(a), Some(k)) = (heads, kv_heads) {
            if k > a || a % k != 0 {
                self.err(
                    "workload.model.kv_heads",
                    k.to_string(),
                    format!("a divisor of heads ({a})"),
                );
            }
        }
        // Upper bounds keep every byte and FLOP count far inside u64 / f64.
        for (f, v, max) in [
            ("layers", layers, 100_000u64),
            ("hidden", hidden, 1 << 20),
            ("ffn", ffn, 1 << 22),
            ("vocab", vocab, 1 << 24),
            ("seq_len", seq_len, 1 << 24),
            ("global_batch", global_batch, 1 << 24),
            ("micro_batch", micro_batch, 1 << 20),
            ("experts", experts, 4096),
        ] {
            if let Some(x) = v.filter(|&x| x > max) {
                self.err(
                    &format!("workload.model.{f}"),
                    x.to_string(),
                    format!("at most {max}"),
                );
            }
        }
        let precision = self.precision("workload.model.precision", m.precision.as_deref(), "bf16");

        // plan
        let p = w.parallel.clone().unwrap_or_default();
        let pl = |i: usize| preset.map(|x| x.plan[i]);
        let pc = |v: &mut Self, f: &str, x: Option<i64>, def: Option<i64>, what: &str| {
            v.count(&format!("workload.parallel.{f}"), x, def, 1, what)
        };
        let dp = pc(
            self,
            "data",
            p.data,
            if inference {
                Some(1)
            } else {
                pl(0).or(Some(1))
            },
            "the data-parallel degree",
        );
        let tp = pc(
            self,
            "tensor",
            p.tensor,
            pl(1).or(Some(1)),
            "the tensor-parallel degree",
        );
        let pp = pc(
            self,
            "pipeline",
            p.pipeline,
            pl(2).or(Some(1)),
            "pipeline stages",
        );
        let ep = pc(
            self,
            "expert",
            p.expert,
            pl(3).or(Some(1)),
            "the expert-parallel degree",
        );
        let zero = match p.zero.or(pl(4)).unwrap_or(0) {
            z @ 0..=3 => Some(z as u8),
            z => {
                self.err(
                    "workload.parallel.zero",
                    z.to_string(),
                    "a ZeRO stage 0, 1, 2 or 3 (3 = FSDP)",
                );
                None
            }
        };
        let bucket_bytes = self.size(
            "workload.parallel.bucket",
            p.bucket.as_ref(),
            Some("25MiB"),
            1,
        );
        let grad_compression = self.float(
            "workload.parallel.gradient_compression",
            p.gradient_compression,
            Some(1.0),
            |x| x >= 1.0,
            "a compression ratio ≥ 1 (gradient bytes are divided by it)",
        );
        let grad_precision = self.precision(
            "workload.parallel.grad_precision",
            p.grad_precision.as_deref(),
            "bf16",
        );
        let dp_algorithm =
            self.algo_choice("workload.parallel.dp_algorithm", p.dp_algorithm.as_deref());
        let tp_algorithm =
            self.algo_choice("workload.parallel.tp_algorithm", p.tp_algorithm.as_deref());
        let replicas = match p.replicas.as_deref().unwrap_or("all") {
            "all" => Some(Replicas::All),
            "one" => Some(Replicas::One),
            s => {
                self.err(
                    "workload.parallel.replicas",
                    format!("{s:?}"),
                    "\"all\" or \"one\"",
                );
                None
            }
        };
        // Consistency of the plan with the model and the cluster.
        if let (Some(d), Some(t), Some(pp_), Some(n)) = (dp, tp, pp, total_gpus) {
            let want = d as u64 * t as u64 * pp_ as u64;
            if want != n {
                // point at a degree the file sets, data first
                let field = if p.data.is_some() && !inference {
                    "workload.parallel.data"
                } else if p.tensor.is_some() {
                    "workload.parallel.tensor"
                } else if p.pipeline.is_some() {
                    "workload.parallel.pipeline"
                } else {
                    "workload.parallel.data"
                };
                let whose = if self.workload_at.is_some() {
                    "job's"
                } else {
                    "cluster's"
                };
                self.err(
                    field,
                    format!("data {d} × tensor {t} × pipeline {pp_} = {want} GPUs"),
                    format!("a plan whose degrees multiply to the {whose} {n} GPUs"),
                );
            }
        }
        if let (Some(l), Some(s)) = (layers, pp) {
            if l % s as u64 != 0 {
                self.err(
                    "workload.parallel.pipeline",
                    s.to_string(),
                    format!("a number of stages that divides the layers ({l})"),
                );
            }
        }
        if let (Some(a), Some(k), Some(t)) = (heads, kv_heads, tp) {
            if a % t as u64 != 0 || (k % t as u64 != 0 && t as u64 % k != 0) {
                self.err(
                    "workload.parallel.tensor",
                    t.to_string(),
                    format!("a tensor-parallel degree that divides the heads ({a})"),
                );
            }
        }
        if let (Some(e), Some(d)) = (ep, dp) {
            if d % e != 0 {
                self.err(
                    "workload.parallel.expert",
                    e.to_string(),
                    format!("an expert-parallel degree that divides data ({d})"),
                );
            }
            if let Some(x) = experts {
                if e > 1 && (x < 2 || x % e as u64 != 0) {
                    self.err(
                        "workload.parallel.expert",
                        e.to_string(),
                        format!("a degree that divides the experts ({x})"),
                    );
                }
            }
            if e > 1 && replicas == Some(Replicas::One) {
                self.err(
                    "workload.parallel.replicas",
                    "\"one\" with expert parallelism",
                    "\"all\": expert all-to-alls couple the data-parallel replicas",
                );
            }
        }
        if !inference {
            if let (Some(b), Some(mb), Some(d)) = (global_batch, micro_batch, dp) {
                if b % (mb * d as u64) != 0 {
                    self.err(
                        "workload.model.global_batch",
                        b.to_string(),
                        format!(
                            "a multiple of micro_batch × data = {} sequences",
                            mb * d as u64
                        ),
                    );
                }
            }
        }

        // gpu
        let g = w.gpu.clone().unwrap_or_default();
        let gpu = self.gpu_spec(&g, preset.map(|p| p.gpu));
        let model = ModelSpec {
            layers: layers?,
            hidden: hidden?,
            ffn: ffn?,
            heads: heads?,
            kv_heads: kv_heads?,
            vocab: vocab?,
            seq_len: seq_len?,
            gated_mlp: m.gated_mlp.unwrap_or(true),
            experts: experts?,
            top_k: top_k?,
            moe_every: moe_every?,
            expert_load: expert_load?,
            precision: precision?,
        };
        let nvlink_step = match &p.nvlink_step_latency {
            None => Some(None),
            v => self
                .time("workload.parallel.nvlink_step_latency", v.as_ref(), None)
                .map(Some),
        };
        let net_step = match &p.step_latency {
            None => Some(None),
            v => self
                .time("workload.parallel.step_latency", v.as_ref(), None)
                .map(Some),
        };
        let plan = ParallelPlan {
            dp: dp?,
            tp: tp?,
            pp: pp?,
            ep: ep?,
            zero: zero?,
            sequence_parallel: p
                .sequence_parallel
                .unwrap_or(preset.is_some_and(|x| x.sequence_parallel)),
            bucket_bytes: bucket_bytes?,
            grad_compression: grad_compression?,
            grad_precision: grad_precision?,
            dp_algorithm: dp_algorithm?,
            tp_algorithm: tp_algorithm?,
            replicas: replicas?,
            step_latency: (nvlink_step?, net_step?),
        };
        Some(Common {
            model,
            plan,
            gpu: gpu?,
            global_batch: global_batch?,
            micro_batch: micro_batch?,
        })
    }

    /// Validates `kind = "training"`.
    pub(super) fn training(
        &mut self,
        w: &super::RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<TrainingSpec> {
        if w.inference.is_some() {
            self.err(
                "workload.inference",
                "an [workload.inference] table",
                "no inference settings with kind = \"training\"",
            );
        }
        let c = self.common(w, total_gpus, false)?;
        Some(TrainingSpec {
            model: c.model,
            plan: c.plan,
            gpu: c.gpu,
            global_batch: c.global_batch,
            micro_batch: c.micro_batch,
            preset: w.preset.clone(),
        })
    }

    /// Validates `kind = "inference"`.
    pub(super) fn inference(
        &mut self,
        w: &super::RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<InferenceSpec> {
        let r = w.inference.clone().unwrap_or_default();
        let requests = self.count(
            "workload.inference.requests",
            r.requests,
            Some(1),
            1,
            "requests in the batch",
        );
        let prompt = self.count(
            "workload.inference.prompt_tokens",
            r.prompt_tokens,
            Some(512),
            1,
            "prompt tokens per request",
        );
        let out_min = self.count(
            "workload.inference.output_tokens",
            r.output_tokens,
            Some(128),
            1,
            "output tokens per request",
        );
        let out_max = self.count(
            "workload.inference.output_tokens_max",
            r.output_tokens_max,
            r.output_tokens.or(Some(128)),
            1,
            "the longest output",
        );
        if let (Some(a), Some(b)) = (out_min, out_max) {
            if b < a {
                self.err(
                    "workload.inference.output_tokens_max",
                    b.to_string(),
                    format!("at least output_tokens ({a})"),
                );
            }
        }
        let c = self.common(w, total_gpus, true)?;
        if c.plan.dp != 1 {
            self.err(
                "workload.parallel.data",
                c.plan.dp.to_string(),
                "1: inference runs one tensor/pipeline-parallel replica",
            );
            return None;
        }
        Some(InferenceSpec {
            model: c.model,
            plan: c.plan,
            gpu: c.gpu,
            requests: requests?.into(),
            prompt_tokens: prompt?.into(),
            output_min: out_min?.into(),
            output_max: out_max?.into(),
            preset: w.preset.clone(),
        })
    }

    /// Validates `[[faults]]` (ranges checked later against the topology, see
    /// [`Validator::check_faults`]).
    pub(super) fn faults(&mut self, raw: &[RawFault]) -> Option<Vec<FaultSpec>> {
        let mut out = Vec::new();
        let mut ok = true;
        for (i, f) in raw.iter().enumerate() {
            let p = |k: &str| format!("faults.{i}.{k}");
            let at = self.time(&p("at"), f.at.as_ref(), Some("0us"));
            let link = |v: &mut Self| -> Option<LinkSel> {
                match (f.nic, f.link) {
                    (Some(n), None) if n >= 0 && n <= u32::MAX as i64 => {
                        Some(LinkSel::Nic(n as u32))
                    }
                    (None, Some(l)) if l >= 0 && l <= u32::MAX as i64 => {
                        Some(LinkSel::Link(l as u32))
                    }
                    (Some(n), None) => {
                        v.err(&p("nic"), n.to_string(), "a NIC index ≥ 0");
                        None
                    }
                    (None, Some(l)) => {
                        v.err(&p("link"), l.to_string(), "a link index ≥ 0");
                        None
                    }
                    (Some(_), Some(_)) => {
                        v.err(
                            &p("link"),
                            "both `nic` and `link`",
                            "one of `nic` or `link`",
                        );
                        None
                    }
                    (None, None) => {
                        v.err(
                            &p("nic"),
                            "nothing",
                            "`nic = N` (a NIC's cable) or `link = N` (a link index)",
                        );
                        None
                    }
                }
            };
            let kind_s = f.kind.clone().unwrap_or_default();
            let kind = match kind_s.as_str() {
                "slow_gpu" => {
                    let gpu = self.count(&p("gpu"), f.gpu, None, 0, "the slow GPU's index");
                    let factor = self.float(
                        &p("factor"),
                        f.factor,
                        None,
                        |x| x >= 1.0,
                        "a slowdown factor ≥ 1 (2.0: compute takes twice as long)",
                    );
                    gpu.zip(factor)
                        .map(|(gpu, factor)| FaultKind::SlowGpu { gpu, factor })
                }
                "link_down" => link(self).map(|link| FaultKind::LinkDown { link }),
                "link_degraded" => {
                    let l = link(self);
                    let rate = self.rate(&p("rate"), f.rate.as_ref(), None);
                    let ber = match f.bit_error_rate.map(RawNumber::as_f64) {
                        Some(b) if !(0.0..1.0).contains(&b) => {
                            self.err(
                                &p("bit_error_rate"),
                                b.to_string(),
                                "a probability in [0, 1)",
                            );
                            None
                        }
                        b => Some(b),
                    };
                    match (l, rate, ber) {
                        (Some(link), Some(rate), Some(bit_error_rate)) => {
                            Some(FaultKind::LinkDegraded {
                                link,
                                rate,
                                bit_error_rate,
                            })
                        }
                        _ => None,
                    }
                }
                "switch_down" => self
                    .count(&p("switch"), f.switch, None, 0, "a network switch index")
                    .map(|switch| FaultKind::SwitchDown { switch }),
                other => {
                    self.err(
                        &p("kind"),
                        if f.kind.is_some() {
                            format!("{other:?}")
                        } else {
                            "nothing".into()
                        },
                        "one of slow_gpu, link_down, link_degraded, switch_down",
                    );
                    None
                }
            };
            match (kind, at) {
                (Some(kind), Some(at)) => out.push(FaultSpec {
                    name: f.name.clone().unwrap_or_else(|| format!("{kind_s} #{i}")),
                    kind,
                    at,
                }),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// Checks that every fault names something the built topology has.
    pub(super) fn check_faults(&mut self, faults: &[FaultSpec], topo: &Topology) {
        for (i, f) in faults.iter().enumerate() {
            let p = |k: &str| format!("faults.{i}.{k}");
            let check_link = |v: &mut Self, l: LinkSel| match l {
                LinkSel::Nic(n) if n as usize >= topo.nics.len() => v.err(
                    &p("nic"),
                    n.to_string(),
                    format!("a NIC index below {}", topo.nics.len()),
                ),
                LinkSel::Link(l) if l as usize >= topo.links.len() => v.err(
                    &p("link"),
                    l.to_string(),
                    format!("a link index below {}", topo.links.len()),
                ),
                _ => {}
            };
            match f.kind {
                FaultKind::SlowGpu { gpu, .. } if gpu >= topo.num_gpus() => self.err(
                    &p("gpu"),
                    gpu.to_string(),
                    format!("a GPU index below {}", topo.num_gpus()),
                ),
                FaultKind::LinkDown { link } | FaultKind::LinkDegraded { link, .. } => {
                    check_link(self, link)
                }
                FaultKind::SwitchDown { switch } if switch as usize >= topo.num_switches() => self
                    .err(
                        &p("switch"),
                        switch.to_string(),
                        format!("a switch index below {}", topo.num_switches()),
                    ),
                _ => {}
            }
        }
    }
}

/// The directed links (both directions) a fault's link selector names.
pub fn links_of(sel: LinkSel, topo: &Topology) -> Vec<crate::topology::LinkId> {
    use crate::topology::LinkId;
    let l = match sel {
        LinkSel::Nic(n) => match topo.nics.get(n as usize) {
            Some(nic) => nic.uplink,
            None => return Vec::new(),
        },
        LinkSel::Link(l) if (l as usize) < topo.links.len() => LinkId(l),
        LinkSel::Link(_) => return Vec::new(),
    };
    vec![l, topo.reverse(l)]
}

/// The duplex links (one direction each) touching the `index`-th network switch.
pub fn switch_links(index: u32, topo: &Topology) -> Vec<crate::topology::LinkId> {
    let node = topo
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| matches!(n.kind, NodeKind::Switch { .. }))
        .nth(index as usize)
        .map(|(i, _)| crate::topology::NodeId(i as u32));
    match node {
        Some(n) => topo.out_links(n).to_vec(),
        None => Vec::new(),
    }
}

/// Largest `workload.model.expert_skew` (and `workload.alltoall_skew`): at 16 the first expert already takes
/// all but 2^−16 of the load; larger exponents only lose precision.
const MAX_EXPERT_SKEW: f64 = 16.0;

impl Validator<'_> {
    /// `[workload.gpu]` as a GPU model (a preset, default `default_gpu` or
    /// H100 SXM, with its peaks, efficiency and HBM bandwidth overridden
    /// key by key): what training, inference and a Chakra trace's
    /// `num_ops` nodes compute with. `None` after an error.
    pub(super) fn gpu_spec(&mut self, g: &RawGpu, default_gpu: Option<&str>) -> Option<GpuSpec> {
        let gname = g
            .preset
            .clone()
            .or(default_gpu.map(str::to_string))
            .unwrap_or_else(|| "h100-sxm".into());
        let gp = match gpu_preset(&gname) {
            Some(x) => Some(x),
            None => {
                self.err(
                    "workload.gpu.preset",
                    format!("{gname:?}"),
                    format!("one of {}", names(&GPU_PRESETS, |p| p.name)),
                );
                None
            }
        };
        let keys = [
            ("peak_tflops_bf16", g.peak_tflops_bf16),
            ("peak_tflops_fp16", g.peak_tflops_fp16),
            ("peak_tflops_fp8", g.peak_tflops_fp8),
            ("peak_tflops_fp32", g.peak_tflops_fp32),
        ];
        let mut peak = [0.0; 4];
        let mut peak_ok = true;
        for (i, (k, v)) in keys.into_iter().enumerate() {
            match self.float(
                &format!("workload.gpu.{k}"),
                v,
                gp.map(|p| p.tflops[i]),
                |x| x > 0.0,
                "a peak above zero, in TFLOP/s",
            ) {
                Some(x) => peak[i] = x * 1e12,
                None => peak_ok = false,
            }
        }
        let efficiency = self.float(
            "workload.gpu.efficiency",
            g.efficiency,
            Some(0.5),
            |x| x > 0.0 && x <= 1.0,
            "a fraction of peak in (0, 1]",
        );
        let hbm = self.rate(
            "workload.gpu.hbm_bandwidth",
            g.hbm_bandwidth.as_ref(),
            gp.map(|p| p.hbm),
        );
        if !peak_ok {
            return None;
        }
        Some(GpuSpec {
            name: if g.peak_tflops_bf16.is_some() && g.preset.is_none() {
                "custom".into()
            } else {
                gname
            },
            peak_flops: peak,
            efficiency: efficiency?,
            hbm_bytes_per_s: hbm?.bps() as f64 / 8.0,
        })
    }

    /// `expert_skew` or `expert_load` as per-expert shares: `Some(None)` for
    /// uniform, `None` after an error.
    fn expert_load(&mut self, m: &RawModel, experts: Option<u64>) -> Option<Option<Vec<f64>>> {
        self.load_shares(
            ("workload.model.expert_skew", "workload.model.expert_load"),
            "expert",
            m.expert_skew,
            m.expert_load.as_ref(),
            experts,
        )
    }

    /// A Zipf exponent (`keys.0`) or a measured load per `unit` (`keys.1`) as
    /// `n` shares summing to 1 (Zipf: share of the k-th ∝ k^−s): `Some(None)`
    /// for uniform (neither set, exponent 0, or `n` ≤ 1), `None` after an
    /// error or when `n` is unknown. Shared by MoE experts and the
    /// collective all-to-allv, so both read their keys by one rule.
    pub(super) fn load_shares(
        &mut self,
        keys: (&str, &str),
        unit: &str,
        skew: Option<f64>,
        load: Option<&Vec<f64>>,
        n: Option<u64>,
    ) -> Option<Option<Vec<f64>>> {
        let (skew_key, load_key) = keys;
        let skew_name = skew_key.rsplit('.').next().unwrap_or(skew_key);
        let load_name = load_key.rsplit('.').next().unwrap_or(load_key);
        match (skew, load) {
            (None, None) => Some(None),
            (Some(_), Some(_)) => {
                self.err(
                    load_key,
                    format!("both {skew_name} and {load_name}"),
                    format!("one of them: a Zipf exponent or a measured load per {unit}"),
                );
                None
            }
            (Some(s), None) => {
                if !(s.is_finite() && (0.0..=MAX_EXPERT_SKEW).contains(&s)) {
                    self.err(
                        skew_key,
                        s.to_string(),
                        format!("a Zipf exponent from 0 (uniform) to {MAX_EXPERT_SKEW}"),
                    );
                    return None;
                }
                let e = n?;
                Some((s > 0.0 && e > 1).then(|| zipf_shares(e, s)))
            }
            (None, Some(load)) => {
                if let Some((i, w)) = load
                    .iter()
                    .enumerate()
                    .find(|(_, w)| !(w.is_finite() && **w >= 0.0 && **w <= 1e15))
                {
                    self.err(
                        &format!("{load_key}.{i}"),
                        w.to_string(),
                        "a load (tokens routed, or a share) from 0 to 1e15",
                    );
                    return None;
                }
                let e = n?;
                if e > 1 && load.len() as u64 != e {
                    self.err(
                        load_key,
                        format!("{} entries", load.len()),
                        format!("one load per {unit} ({e} {unit}s)"),
                    );
                    return None;
                }
                let sum: f64 = load.iter().sum();
                if e > 1 && sum <= 0.0 {
                    self.err(
                        load_key,
                        "loads that are all zero",
                        format!("at least one {unit} with a load above zero"),
                    );
                    return None;
                }
                Some((e > 1).then(|| load.iter().map(|w| w / sum).collect()))
            }
        }
    }
}
