//! One training step as a DAG of compute and communication per GPU.
//!
//! **Rank mapping** (Megatron-LM's default order, TP innermost): GPU
//! `g = t + T·(d + D·p)` for tensor rank t < T, data rank d < D and pipeline
//! stage p < P. A TP group is T consecutive GPUs (inside a node when T divides
//! the GPUs per node), DP peers are T apart, stages D·T apart. Expert-parallel
//! groups are E consecutive data ranks (`d = k·E + e`); the expert-data-parallel
//! group of an expert shard is the ranks with the same `e`.
//!
//! **Per micro-batch and layer**, on every GPU of the stage:
//! forward: attention compute → TP sync → MLP compute (MoE: all-to-all
//! dispatch → experts → all-to-all combine) → TP sync; backward mirrors it with
//! twice the compute. A TP sync is an all-reduce of the activations
//! (b·s·h elements), or with sequence parallelism a reduce-scatter followed by
//! an all-gather of the same buffer. All are on the critical path.
//!
//! **Pipeline**: 1F1B (Narayanan et al., SC 2021): stage p runs min(P−p−1, m)
//! warm-up forwards, then alternates one forward and one backward, then drains
//! the backwards. Activations (forward) and their gradients (backward), b·s·h
//! elements split over the T tensor ranks (Megatron's scatter/gather
//! optimization), go to the same tensor rank of the next / previous stage.
//!
//! **Data parallelism**: gradients are reduced once per step, during the
//! backward of the last micro-batch (gradient accumulation over the m = B /
//! (b·D) micro-batches): layers' gradients, in backward order, fill buckets of
//! `bucket` bytes; a bucket's collective starts when the backward of its last
//! layer is done on every peer and the previous bucket's collective has
//! finished (one communication stream), so it overlaps the rest of the
//! backward. ZeRO 0: all-reduce; ZeRO 1/2: reduce-scatter, then all-gather of
//! the updated parameters after the last bucket; ZeRO 3 (FSDP): reduce-scatter,
//! plus an all-gather of each layer's parameters before its forward and its
//! backward in every micro-batch, prefetched one layer ahead. Gradient bytes
//! are `grad_precision` bytes per parameter divided by `gradient_compression`.
//! The output head's gradients join the first bucket of the last stage, the
//! embedding's the last bucket of stage 0. Optimizer compute is not modeled.

use std::collections::HashMap;

use crate::collective::{CollectiveError, CollectiveOp};
use crate::config::workload::{Replicas, TrainingSpec};
use crate::config::AlgoChoice;
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

use super::{compute_time, layer_cost, layer_params, mlp_params, Comm};

/// The kind of an operation of the step DAG, for the time breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// Forward compute.
    ComputeForward,
    /// Backward compute.
    ComputeBackward,
    /// Tensor-parallel all-reduce / reduce-scatter / all-gather.
    TensorParallel,
    /// Pipeline activations and gradients.
    PipelineP2p,
    /// Expert-parallel all-to-all.
    ExpertAllToAll,
    /// Data-parallel gradient all-reduce / reduce-scatter.
    DataParallelGrad,
    /// ZeRO parameter all-gathers.
    ZeroParamGather,
}

impl OpKind {
    /// Name in results.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::ComputeForward => "compute_forward",
            OpKind::ComputeBackward => "compute_backward",
            OpKind::TensorParallel => "tp_collective",
            OpKind::PipelineP2p => "pp_p2p",
            OpKind::ExpertAllToAll => "ep_alltoall",
            OpKind::DataParallelGrad => "dp_gradient",
            OpKind::ZeroParamGather => "zero_param_allgather",
        }
    }
    /// True for communication.
    pub fn is_comm(self) -> bool {
        !matches!(self, OpKind::ComputeForward | OpKind::ComputeBackward)
    }
}

/// What the report needs to know about one operation of the DAG.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpMeta {
    /// Its kind.
    pub kind: OpKind,
    /// GPUs taking part.
    pub gpus: u32,
}

/// A generated step.
#[derive(Clone, Debug)]
pub struct StepDag {
    /// The tasks.
    pub dag: Dag,
    /// One entry per `dag.ops` index.
    pub ops: Vec<OpMeta>,
    /// GPUs whose compute is in the DAG (all, or one replica's).
    pub gpus_simulated: Vec<GpuId>,
    /// Model FLOPs of the whole step, every GPU (forward + backward, no recompute).
    pub model_flops: f64,
    /// Tokens processed by the step.
    pub tokens: u64,
    /// Micro-batches per replica.
    pub micro_batches: u64,
}

/// GPU of tensor rank `t`, data rank `d`, stage `p` (see the module doc).
pub fn gpu_of(s: &TrainingSpec, t: u32, d: u32, p: u32) -> GpuId {
    GpuId(t + s.plan.tp * (d + s.plan.dp * p))
}

struct Builder<'a> {
    s: &'a TrainingSpec,
    /// The GPU of each plan rank ([`gpu_of`]'s index): the cluster's first
    /// GPUs, or a job's GPUs in placement order.
    map: &'a [GpuId],
    dag: Dag,
    ops: Vec<OpMeta>,
    comm: Comm<'a>,
    last: Vec<Option<TaskId>>,
    /// Data ranks whose compute is built.
    reps: Vec<u32>,
    op_fwd: u32,
    op_bwd: u32,
    /// Per (stage, tensor rank): last collective on the DP stream.
    dp_stream: HashMap<(u32, u32), TaskId>,
    /// Per (stage, tensor rank): last ZeRO-3 parameter gather.
    param_stream: HashMap<(u32, u32), TaskId>,
    /// Every collective lowered, in DAG order (for the Chakra export).
    log: Vec<super::chakra::CollRecord>,
}

impl Builder<'_> {
    /// The GPU of tensor rank `t`, data rank `d`, stage `p`.
    fn gpu(&self, t: u32, d: u32, p: u32) -> GpuId {
        self.map[gpu_of(self.s, t, d, p).0 as usize]
    }

    fn op(&mut self, kind: OpKind, gpus: u32) {
        let label = kind.name();
        self.dag.begin_op(label);
        self.ops.push(OpMeta { kind, gpus });
    }

    fn compute(&mut self, g: GpuId, dur: SimTime, fwd: bool, extra: &[Dep]) -> TaskId {
        self.dag.set_op(if fwd { self.op_fwd } else { self.op_bwd });
        let mut deps: Vec<Dep> = extra.to_vec();
        if let Some(l) = self.last[g.0 as usize] {
            deps.push(Dep::Done(l));
        }
        let t = self.dag.compute(g, dur, &deps);
        self.last[g.0 as usize] = Some(t);
        t
    }

    fn coll(
        &mut self,
        kind: OpKind,
        op: CollectiveOp,
        bytes: u64,
        ranks: &[GpuId],
        algo: AlgoChoice,
        after: &[Dep],
    ) -> Result<Option<TaskId>, CollectiveError> {
        if ranks.len() < 2 || bytes == 0 {
            return Ok(None);
        }
        self.op(kind, ranks.len() as u32);
        let first = TaskId(self.dag.len() as u32);
        let end = self
            .comm
            .lower(&mut self.dag, op, bytes, ranks, algo, after)?;
        if let Some(end) = end {
            self.log.push(super::chakra::CollRecord {
                op,
                bytes,
                ranks: ranks.to_vec(),
                after: after.to_vec(),
                first,
                end,
            });
        }
        Ok(end)
    }

    /// TP sync after a block for data rank d, stage p, given each rank's compute.
    fn tp_sync(
        &mut self,
        d: u32,
        p: u32,
        computes: &[TaskId],
    ) -> Result<Vec<Dep>, CollectiveError> {
        let s = self.s;
        let after: Vec<Dep> = computes.iter().map(|&t| Dep::Done(t)).collect();
        if s.plan.tp < 2 {
            return Ok(after);
        }
        let ranks: Vec<GpuId> = (0..s.plan.tp).map(|t| self.gpu(t, d, p)).collect();
        // f64 then a saturating cast: no overflow on extreme (validated) sizes
        let bytes = (s.micro_batch as f64
            * s.model.seq_len as f64
            * s.model.hidden as f64
            * s.model.precision.bytes() as f64) as u64;
        let algo = s.plan.tp_algorithm;
        let m = if s.plan.sequence_parallel {
            let rs = self.coll(
                OpKind::TensorParallel,
                CollectiveOp::ReduceScatter,
                bytes,
                &ranks,
                algo,
                &after,
            )?;
            let dep: Vec<Dep> = rs.map(Dep::Done).into_iter().collect();
            self.coll(
                OpKind::TensorParallel,
                CollectiveOp::AllGather,
                bytes,
                &ranks,
                algo,
                &dep,
            )?
        } else {
            self.coll(
                OpKind::TensorParallel,
                CollectiveOp::AllReduce,
                bytes,
                &ranks,
                algo,
                &after,
            )?
        };
        Ok(m.map(Dep::Done).into_iter().collect())
    }

    /// One block (attention or MLP) on every built replica: compute on each
    /// tensor rank after `pre[d]`, then the TP sync; returns the deps per replica.
    fn block(
        &mut self,
        p: u32,
        dur: SimTime,
        fwd: bool,
        pre: &HashMap<u32, Vec<Dep>>,
        computes_out: &mut HashMap<u32, Vec<TaskId>>,
    ) -> Result<HashMap<u32, Vec<Dep>>, CollectiveError> {
        self.block_scaled(p, dur, fwd, pre, computes_out, None)
    }

    /// [`Self::block`] where replica d's compute takes `dur · scale[d % len]`:
    /// a MoE layer's experts on expert-parallel rank e process `EP · load[e]`
    /// times the mean share of tokens.
    fn block_scaled(
        &mut self,
        p: u32,
        dur: SimTime,
        fwd: bool,
        pre: &HashMap<u32, Vec<Dep>>,
        computes_out: &mut HashMap<u32, Vec<TaskId>>,
        scale: Option<&[f64]>,
    ) -> Result<HashMap<u32, Vec<Dep>>, CollectiveError> {
        let mut out = HashMap::new();
        for &d in &self.reps.clone() {
            let deps = pre.get(&d).cloned().unwrap_or_default();
            let dur = match scale {
                Some(f) if !f.is_empty() => {
                    SimTime::from_secs_f64(dur.as_secs_f64() * f[d as usize % f.len()])
                }
                _ => dur,
            };
            let cs: Vec<TaskId> = (0..self.s.plan.tp)
                .map(|t| self.compute(self.gpu(t, d, p), dur, fwd, &deps))
                .collect();
            computes_out.insert(d, cs.clone());
            out.insert(d, self.tp_sync(d, p, &cs)?);
        }
        Ok(out)
    }

    /// Expert all-to-all for every EP group of stage p (MoE layers with EP > 1):
    /// toward the experts (forward dispatch, backward gradient of the combine)
    /// or back from them. With a skewed expert load it is an all-to-allv: rank
    /// e's experts receive the share `load[e]` of every rank's token copies
    /// and send the same back ([`crate::collective::alltoall::Split`]).
    fn alltoall(
        &mut self,
        p: u32,
        pre: &HashMap<u32, Vec<Dep>>,
        toward_experts: bool,
    ) -> Result<HashMap<u32, Vec<Dep>>, CollectiveError> {
        let s = self.s;
        let ep = s.plan.ep;
        let tokens = s.micro_batch as f64 * s.model.seq_len as f64;
        // Each tensor rank dispatches its share of the tokens' top-k copies.
        let bytes = (tokens * (s.model.top_k * s.model.hidden * s.model.precision.bytes()) as f64
            / s.plan.tp as f64) as u64;
        let mut out: HashMap<u32, Vec<Dep>> = HashMap::new();
        for k in 0..s.plan.dp / ep {
            let ds: Vec<u32> = (0..ep).map(|e| k * ep + e).collect();
            let after: Vec<Dep> = ds
                .iter()
                .flat_map(|d| pre.get(d).cloned().unwrap_or_default())
                .collect();
            let mut deps = Vec::new();
            let load = s.model.rank_load(ep as u64);
            for t in 0..s.plan.tp {
                let ranks: Vec<GpuId> = ds.iter().map(|&d| self.gpu(t, d, p)).collect();
                let m = match &load {
                    None => self.coll(
                        OpKind::ExpertAllToAll,
                        CollectiveOp::AllToAll,
                        bytes,
                        &ranks,
                        AlgoChoice::Fixed(crate::collective::Algorithm::Direct),
                        &after,
                    )?,
                    Some(w) if ranks.len() >= 2 && bytes > 0 => {
                        use crate::collective::alltoall::Split;
                        let split = if toward_experts {
                            Split::ToDestination(w)
                        } else {
                            Split::FromSource(w)
                        };
                        self.op(OpKind::ExpertAllToAll, ranks.len() as u32);
                        self.comm
                            .lower_alltoallv(&mut self.dag, bytes, &ranks, split, &after)?
                    }
                    Some(_) => None,
                };
                if let Some(m) = m {
                    deps.push(Dep::Done(m));
                }
            }
            for d in ds {
                out.insert(d, deps.clone());
            }
        }
        Ok(out)
    }

    /// ZeRO-3: gather layer parameters for stage p before a block on every replica.
    fn param_gather(
        &mut self,
        p: u32,
        l: u64,
        prev_layer: &HashMap<u32, Vec<TaskId>>,
    ) -> Result<HashMap<u32, Vec<Dep>>, CollectiveError> {
        let s = self.s;
        let mut out: HashMap<u32, Vec<Dep>> = HashMap::new();
        let bytes = (layer_params(&s.model, l) * s.model.precision.bytes() as f64
            / s.plan.tp as f64) as u64;
        for t in 0..s.plan.tp {
            let ranks: Vec<GpuId> = (0..s.plan.dp).map(|d| self.gpu(t, d, p)).collect();
            let mut after: Vec<Dep> = Vec::new();
            if let Some(&prev) = self.param_stream.get(&(p, t)) {
                after.push(Dep::Done(prev));
            }
            for cs in prev_layer.values() {
                if let Some(&c) = cs.get(t as usize) {
                    after.push(Dep::Done(c));
                }
            }
            if let Some(m) = self.coll(
                OpKind::ZeroParamGather,
                CollectiveOp::AllGather,
                bytes,
                &ranks,
                s.plan.dp_algorithm,
                &after,
            )? {
                self.param_stream.insert((p, t), m);
                for &d in &self.reps {
                    out.entry(d).or_default().push(Dep::Done(m));
                }
            }
        }
        Ok(out)
    }
}

fn merge(a: &HashMap<u32, Vec<Dep>>, b: &HashMap<u32, Vec<Dep>>) -> HashMap<u32, Vec<Dep>> {
    let mut out = a.clone();
    for (k, v) in b {
        out.entry(*k).or_default().extend(v.iter().copied());
    }
    out
}

/// Durations of one layer's four compute tasks (fwd attn, fwd MLP, bwd MLP, bwd
/// attn) on one GPU for one micro-batch (see [`super::LayerCost`]).
pub fn layer_times(s: &TrainingSpec, l: u64) -> [SimTime; 4] {
    let m = &s.model;
    let tokens = s.micro_batch as f64 * m.seq_len as f64;
    let c = layer_cost(m, l, tokens, m.seq_len as f64, s.plan.tp);
    let g = &s.gpu;
    [
        compute_time(g, m, c.attn_flops, c.attn_weight_bytes),
        compute_time(g, m, c.mlp_flops, c.mlp_weight_bytes),
        compute_time(g, m, 2.0 * c.mlp_flops, 2.0 * c.mlp_weight_bytes),
        compute_time(g, m, 2.0 * c.attn_flops, 2.0 * c.attn_weight_bytes),
    ]
}

/// Forward time of the output head (logits, 2·h·V FLOPs per token over T ranks)
/// for one micro-batch on one GPU of the last stage.
pub fn head_time(s: &TrainingSpec) -> SimTime {
    let m = &s.model;
    let tokens = s.micro_batch as f64 * m.seq_len as f64;
    let flops = tokens * 2.0 * (m.hidden * m.vocab) as f64 / s.plan.tp as f64;
    let bytes = (m.hidden * m.vocab * m.precision.bytes()) as f64 / s.plan.tp as f64;
    compute_time(&s.gpu, m, flops, bytes)
}

/// Model FLOPs of one step over every GPU: 3 × forward FLOPs of every token.
pub fn model_flops(s: &TrainingSpec) -> f64 {
    let m = &s.model;
    let tokens = (s.global_batch * m.seq_len) as f64;
    let per_token: f64 = (0..m.layers)
        .map(|l| {
            let c = layer_cost(m, l, 1.0, m.seq_len as f64, 1);
            c.attn_flops + c.mlp_flops
        })
        .sum::<f64>()
        + 2.0 * (m.hidden * m.vocab) as f64;
    3.0 * per_token * tokens
}

/// The 1F1B order of stage p: (forward?, micro-batch) pairs.
pub fn one_f_one_b(p: u32, stages: u32, m: u64) -> Vec<(bool, u64)> {
    let warm = ((stages - p - 1) as u64).min(m);
    let mut v: Vec<(bool, u64)> = (0..warm).map(|j| (true, j)).collect();
    for k in 0..m - warm {
        v.push((true, warm + k));
        v.push((false, k));
    }
    for j in m - warm..m {
        v.push((false, j));
    }
    v
}

/// Rough number of tasks [`build`] creates (within a factor of about 2), so a
/// run can refuse a step too large to hold in memory before building it.
pub fn estimated_tasks(s: &TrainingSpec) -> f64 {
    let p = &s.plan;
    let tp = p.tp as f64;
    let reps = match p.replicas {
        Replicas::All => p.dp as f64,
        Replicas::One => 1.0,
    };
    let tp_comm = if p.tp > 1 { 8.0 * tp * tp } else { 0.0 };
    let moe = if s.model.experts > 1 && p.ep > 1 {
        4.0 * tp * p.ep as f64
    } else {
        0.0
    };
    let zero3 = if p.zero == 3 {
        4.0 * tp * p.dp as f64
    } else {
        0.0
    };
    s.micro_batches() as f64 * s.model.layers as f64 * reps * (4.0 * tp + tp_comm + moe + zero3)
}

/// Per micro-batch: the p2p transfer (or last task) of each (data rank, tensor rank).
type Sends = HashMap<u64, HashMap<(u32, u32), TaskId>>;

/// Builds the step DAG of `s` on `topo`.
///
/// # Errors
/// Records in `usage` the workload keys a training step consumes, and why the
/// others change nothing (a dense model's routing, a plan without the
/// parallelism a key tunes).
pub fn read_keys(s: &TrainingSpec, usage: &mut crate::config::usage::Usage) {
    let m = &s.model;
    let dense = m.experts <= 1;
    usage.read_if("workload.model.top_k", !dense, || {
        "the model is dense (experts ≤ 1)".into()
    });
    usage.read_if("workload.model.moe_every", !dense, || {
        "the model is dense (experts ≤ 1)".into()
    });
    usage.read_if("workload.parallel.expert", !dense, || {
        "the model is dense (experts ≤ 1): there are no experts to spread".into()
    });
    for key in ["workload.model.expert_skew", "workload.model.expert_load"] {
        usage.read_if(key, !dense && s.plan.ep > 1, || {
            if dense {
                "the model is dense (experts ≤ 1)".into()
            } else {
                "parallel.expert = 1: every GPU holds every expert, so an uneven load moves no byte and idles no GPU".into()
            }
        });
    }
    read_model_keys(m, usage);
    usage.read("workload.model.seq_len");
    let tp = s.plan.tp > 1;
    usage.read_if("workload.parallel.sequence_parallel", tp, || {
        "tensor = 1: there are no tensor-parallel collectives".into()
    });
    read_algorithm_key(
        usage,
        "workload.parallel.tp_algorithm",
        s.plan.tp_algorithm,
        &tp_ops(&s.plan),
        tp,
        "tensor = 1: there are no tensor-parallel collectives",
        "tensor-parallel",
    );
    let dp = s.plan.dp > 1;
    for key in [
        "workload.parallel.bucket",
        "workload.parallel.gradient_compression",
        "workload.parallel.grad_precision",
    ] {
        usage.read_if(key, dp, || {
            "data = 1: there is no gradient synchronization".into()
        });
    }
    read_algorithm_key(
        usage,
        "workload.parallel.dp_algorithm",
        s.plan.dp_algorithm,
        &dp_ops(&s.plan),
        dp,
        "data = 1: there is no gradient synchronization",
        "data-parallel",
    );
    usage.read_all(&[
        "workload.kind",
        "workload.preset",
        "workload.model.global_batch",
        "workload.model.micro_batch",
        "workload.parallel.data",
        "workload.parallel.tensor",
        "workload.parallel.pipeline",
        "workload.parallel.zero",
        "workload.parallel.replicas",
        "workload.gpu.preset",
        "workload.gpu.efficiency",
        "workload.gpu.hbm_bandwidth",
    ]);
}

/// The collectives a plan's data-parallel groups run: all-reduce of the
/// gradients, or with ZeRO their reduce-scatter and the all-gather of the
/// parameters.
pub fn dp_ops(plan: &crate::config::workload::ParallelPlan) -> Vec<CollectiveOp> {
    if plan.zero == 0 {
        vec![CollectiveOp::AllReduce]
    } else {
        vec![CollectiveOp::ReduceScatter, CollectiveOp::AllGather]
    }
}

/// The collectives a plan's tensor-parallel groups run: all-reduce, or with
/// sequence parallelism reduce-scatter and all-gather.
pub fn tp_ops(plan: &crate::config::workload::ParallelPlan) -> Vec<CollectiveOp> {
    if plan.sequence_parallel {
        vec![CollectiveOp::ReduceScatter, CollectiveOp::AllGather]
    } else {
        vec![CollectiveOp::AllReduce]
    }
}

/// Records an algorithm choice of a parallel group: read when the group exists
/// and the algorithm runs at least one of its `ops`; a fixed algorithm that runs
/// none of them falls back to NCCL's choice (`auto`, [`super::Comm::lower`]),
/// which the reason says.
fn read_algorithm_key(
    usage: &mut crate::config::usage::Usage,
    key: &str,
    choice: crate::config::AlgoChoice,
    ops: &[CollectiveOp],
    group_exists: bool,
    no_group: &str,
    group: &str,
) {
    let runs_some = match choice {
        crate::config::AlgoChoice::Auto => true,
        crate::config::AlgoChoice::Fixed(a) => {
            ops.iter().any(|&op| crate::collective::supports(a, op))
        }
    };
    usage.read_if(key, group_exists && runs_some, || {
        if !group_exists {
            return no_group.into();
        }
        let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
        let algo = match choice {
            crate::config::AlgoChoice::Fixed(a) => a.name(),
            crate::config::AlgoChoice::Auto => "auto",
        };
        format!(
            "{algo} cannot run {} (the plan's {group} collectives), so they run NCCL's choice (auto)",
            names.join(" or ")
        )
    });
}

/// Records in `usage` the model keys every model workload consumes: the shape,
/// and the peak rate of the precision the model computes in.
pub fn read_model_keys(
    m: &crate::config::workload::ModelSpec,
    usage: &mut crate::config::usage::Usage,
) {
    usage.read_all(&[
        "workload.model.layers",
        "workload.model.hidden",
        "workload.model.ffn",
        "workload.model.kv_heads",
        "workload.model.vocab",
        "workload.model.precision",
        "workload.model.gated_mlp",
        "workload.model.experts",
    ]);
    // with multi-head attention (kv_heads = heads) the head count changes no
    // FLOP or byte; but over a preset, heads written without kv_heads also
    // replaces the preset's grouped KV heads
    let over_preset = usage.is_set("workload.preset") && !usage.is_set("workload.model.kv_heads");
    usage.read_if("workload.model.heads", m.kv_heads != m.heads || over_preset, || {
        "with multi-head attention (kv_heads = heads) the head count changes no FLOP or byte (attention costs 4h² weights and 4·s·h FLOPs per token whatever the split); it only constrains the tensor-parallel degree".into()
    });
    let used = format!("workload.gpu.peak_tflops_{}", m.precision.name());
    for p in ["bf16", "fp16", "fp8", "fp32"] {
        let key = format!("workload.gpu.peak_tflops_{p}");
        usage.read_if(&key, key == used, || {
            format!(
                "the model computes in {} (workload.model.precision), so only peak_tflops_{} is used",
                m.precision.name(),
                m.precision.name()
            )
        });
    }
}

/// When a collective cannot run on one of the plan's communicators.
pub fn build(s: &TrainingSpec, topo: &Topology) -> Result<StepDag, CollectiveError> {
    build_logged(s, topo).map(|(step, _)| step)
}

/// [`build`] with the plan's ranks on `gpus` (rank `r`, [`gpu_of`]'s index, on
/// `gpus[r]`): a job's GPUs in placement order. Every communicator (TP, PP,
/// DP, EP groups) is made of those GPUs and lowered on the real topology.
///
/// # Errors
/// When a collective cannot run on one of the plan's communicators.
///
/// # Panics
/// When `gpus` holds fewer than `dp · tp · pp` GPUs (the job's validation
/// requires exactly that many).
pub fn build_on(
    s: &TrainingSpec,
    topo: &Topology,
    gpus: &[GpuId],
) -> Result<StepDag, CollectiveError> {
    build_logged_on(s, topo, gpus).map(|(step, _)| step)
}

/// [`build`], also returning every collective it lowered, in DAG order (what
/// [`super::chakra::export_training`] writes as collective nodes).
///
/// # Errors
/// When a collective cannot run on one of the plan's communicators.
pub fn build_logged(
    s: &TrainingSpec,
    topo: &Topology,
) -> Result<(StepDag, Vec<super::chakra::CollRecord>), CollectiveError> {
    let n = s.plan.dp * s.plan.tp * s.plan.pp;
    let identity: Vec<GpuId> = (0..n).map(GpuId).collect();
    build_logged_on(s, topo, &identity)
}

fn build_logged_on(
    s: &TrainingSpec,
    topo: &Topology,
    gpus: &[GpuId],
) -> Result<(StepDag, Vec<super::chakra::CollRecord>), CollectiveError> {
    let plan = &s.plan;
    // compute per expert-parallel rank relative to a uniform load (EP · share)
    let expert_scale: Option<Vec<f64>> = s
        .model
        .rank_load(plan.ep as u64)
        .map(|w| w.iter().map(|x| x * plan.ep as f64).collect());
    let m = s.micro_batches();
    let n_gpus = plan.dp * plan.tp * plan.pp;
    let reps: Vec<u32> = match plan.replicas {
        Replicas::All => (0..plan.dp).collect(),
        Replicas::One => vec![0],
    };
    assert!(gpus.len() >= n_gpus as usize, "a plan rank without a GPU");
    let slots = gpus.iter().map(|g| g.0 as usize + 1).max().unwrap_or(0);
    let mut b = Builder {
        s,
        map: gpus,
        dag: Dag::new(),
        ops: Vec::new(),
        comm: {
            let mut c = Comm::new(topo);
            c.step_latency = s.plan.step_latency;
            c
        },
        last: vec![None; slots],
        reps: reps.clone(),
        op_fwd: 0,
        op_bwd: 1,
        dp_stream: HashMap::new(),
        param_stream: HashMap::new(),
        log: Vec::new(),
    };
    b.op(OpKind::ComputeForward, n_gpus);
    b.op(OpKind::ComputeBackward, n_gpus);
    let layers_per_stage = s.model.layers / plan.pp as u64;
    let times: Vec<[SimTime; 4]> = (0..s.model.layers).map(|l| layer_times(s, l)).collect();
    let head = head_time(s);
    let act_bytes = (s.micro_batch as f64
        * s.model.seq_len as f64
        * s.model.hidden as f64
        * s.model.precision.bytes() as f64
        / plan.tp as f64) as u64;
    let grad_bytes = |params: f64| -> u64 {
        (params * plan.grad_precision.bytes() as f64 / plan.grad_compression) as u64
    };
    let (h, v) = (s.model.hidden as f64, s.model.vocab as f64);

    // sends[p][j] per (d, t): the p2p transfer into stage p+1 (fwd) / p−1 (bwd).
    let mut fwd_sent: Vec<Sends> = vec![HashMap::new(); plan.pp as usize];
    let mut bwd_sent: Vec<Sends> = vec![HashMap::new(); plan.pp as usize];
    let orders: Vec<Vec<(bool, u64)>> = (0..plan.pp).map(|p| one_f_one_b(p, plan.pp, m)).collect();
    let mut pos = vec![0usize; plan.pp as usize];
    let mut final_grads: Vec<Vec<TaskId>> = Vec::new();
    loop {
        let mut progressed = false;
        for p in 0..plan.pp {
            let pi = p as usize;
            let Some(&(fwd, j)) = orders[pi].get(pos[pi]) else {
                continue;
            };
            let ready = if fwd {
                p == 0 || fwd_sent[pi - 1].contains_key(&j)
            } else {
                p == plan.pp - 1 || bwd_sent[pi + 1].contains_key(&j)
            };
            if !ready {
                continue;
            }
            pos[pi] += 1;
            progressed = true;
            // receive deps per replica
            let mut pre: HashMap<u32, Vec<Dep>> = HashMap::new();
            let recv = if fwd && p > 0 {
                fwd_sent[pi - 1].get(&j)
            } else if !fwd && p < plan.pp - 1 {
                bwd_sent[pi + 1].get(&j)
            } else {
                None
            };
            if let Some(r) = recv {
                for (&(d, _t), &task) in r {
                    pre.entry(d).or_default().push(Dep::Done(task));
                }
            }
            let first = p as u64 * layers_per_stage;
            let layer_list: Vec<u64> = if fwd {
                (first..first + layers_per_stage).collect()
            } else {
                (first..first + layers_per_stage).rev().collect()
            };
            let last_mb = !fwd && j == m - 1;
            let mut prev_computes: HashMap<u32, Vec<TaskId>> = HashMap::new();
            // Gradients ready per layer (last micro-batch backward), per replica.
            let mut grad_ready: Vec<(u64, HashMap<u32, Vec<TaskId>>)> = Vec::new();
            if !fwd && p == plan.pp - 1 {
                // backward of the output head first
                let mut cs = HashMap::new();
                for &d in &reps {
                    let ts: Vec<TaskId> = (0..plan.tp)
                        .map(|t| {
                            b.compute(
                                b.gpu(t, d, p),
                                SimTime(head.0.saturating_mul(2)),
                                false,
                                &pre.get(&d).cloned().unwrap_or_default(),
                            )
                        })
                        .collect();
                    cs.insert(d, ts);
                }
                pre = cs
                    .iter()
                    .map(|(&d, ts)| (d, ts.iter().map(|&t| Dep::Done(t)).collect()))
                    .collect();
                if last_mb {
                    grad_ready.push((u64::MAX, cs));
                }
            }
            for &l in &layer_list {
                let moe = s.model.is_moe(l) && plan.ep > 1;
                let t4 = times[l as usize];
                if plan.zero == 3 && plan.dp > 1 {
                    let g = b.param_gather(p, l, &prev_computes)?;
                    pre = merge(&pre, &g);
                }
                let (first_t, second_t) = if fwd { (t4[0], t4[1]) } else { (t4[2], t4[3]) };
                let mut cs1 = HashMap::new();
                let mut cs2 = HashMap::new();
                // a skewed expert load: the hot ranks' experts compute longer
                let expert_scale = if moe { expert_scale.as_deref() } else { None };
                if fwd {
                    let a = b.block(p, first_t, true, &pre, &mut cs1)?;
                    pre = if moe {
                        let x = b.alltoall(p, &a, true)?;
                        let y = b.block_scaled(p, second_t, true, &x, &mut cs2, expert_scale)?;
                        b.alltoall(p, &y, false)?
                    } else {
                        b.block(p, second_t, true, &a, &mut cs2)?
                    };
                } else {
                    let x = if moe {
                        b.alltoall(p, &pre, true)?
                    } else {
                        pre.clone()
                    };
                    let y = b.block_scaled(p, first_t, false, &x, &mut cs1, expert_scale)?;
                    let y = if moe { b.alltoall(p, &y, false)? } else { y };
                    pre = b.block(p, second_t, false, &y, &mut cs2)?;
                }
                if last_mb {
                    grad_ready.push((l, cs2.clone()));
                }
                prev_computes = cs1;
            }
            if fwd && p == plan.pp - 1 {
                let mut cs = HashMap::new();
                for &d in &reps {
                    let deps = pre.get(&d).cloned().unwrap_or_default();
                    let ts: Vec<TaskId> = (0..plan.tp)
                        .map(|t| b.compute(b.gpu(t, d, p), head, true, &deps))
                        .collect();
                    cs.insert(d, ts);
                }
                pre = cs
                    .iter()
                    .map(|(&d, ts)| (d, ts.iter().map(|&t| Dep::Done(t)).collect()))
                    .collect();
            }
            // p2p to the next / previous stage
            let to = if fwd && p < plan.pp - 1 {
                Some(p + 1)
            } else if !fwd && p > 0 {
                Some(p - 1)
            } else {
                None
            };
            let mut sent = HashMap::new();
            if let Some(q) = to {
                for &d in &reps {
                    let deps = pre.get(&d).cloned().unwrap_or_default();
                    for t in 0..plan.tp {
                        b.op(OpKind::PipelineP2p, 2);
                        let x = b
                            .dag
                            .transfer(b.gpu(t, d, p), b.gpu(t, d, q), act_bytes, &deps);
                        sent.insert((d, t), x);
                    }
                }
            } else {
                // mark the end of this micro-batch on this stage (for ordering only)
                for &d in &reps {
                    for t in 0..plan.tp {
                        if let Some(l) = b.last[b.gpu(t, d, p).0 as usize] {
                            sent.insert((d, t), l);
                        }
                    }
                }
            }
            if fwd {
                fwd_sent[pi].insert(j, sent);
            } else {
                bwd_sent[pi].insert(j, sent);
            }
            // data-parallel gradient buckets of the last backward
            if last_mb && plan.dp > 1 {
                let ends = dp_buckets(&mut b, p, &grad_ready, &grad_bytes, h * v)?;
                final_grads.push(ends);
            }
        }
        if !progressed {
            break;
        }
    }
    let _ = final_grads;
    let gpus_simulated = (0..plan.pp)
        .flat_map(|p| {
            reps.iter()
                .flat_map(move |&d| (0..plan.tp).map(move |t| (t, d, p)))
        })
        .map(|(t, d, p)| b.gpu(t, d, p))
        .collect();
    Ok((
        StepDag {
            dag: b.dag,
            ops: b.ops,
            gpus_simulated,
            model_flops: model_flops(s),
            tokens: s.global_batch * s.model.seq_len,
            micro_batches: m,
        },
        b.log,
    ))
}

/// Emits the data-parallel collectives of stage p's gradients, in backward order
/// (`ready[i]` = layer, or `u64::MAX` for the output head, and its compute tasks
/// per replica). Returns the last collective's markers.
fn dp_buckets(
    b: &mut Builder<'_>,
    p: u32,
    ready: &[(u64, HashMap<u32, Vec<TaskId>>)],
    grad_bytes: &dyn Fn(f64) -> u64,
    embed_params: f64,
) -> Result<Vec<TaskId>, CollectiveError> {
    let s = b.s;
    let plan = &s.plan;
    let tp = plan.tp as f64;
    // the gradients' collective: all-reduce, or ZeRO's reduce-scatter
    let op = dp_ops(plan)[0];
    let mut ends = Vec::new();
    // (dense params, expert params, tasks) accumulated in the open bucket
    let mut acc_dense = 0.0f64;
    let mut acc_expert = 0.0f64;
    // (dense, expert) parameter bytes of each launched bucket
    let mut launched_param_bytes: Vec<(u64, u64)> = Vec::new();
    let n = ready.len();
    for (i, (l, cs)) in ready.iter().enumerate() {
        if *l == u64::MAX {
            acc_dense += embed_params / tp;
        } else {
            let full = layer_params(&s.model, *l);
            if s.model.is_moe(*l) && plan.ep > 1 {
                let experts = s.model.experts as f64 * mlp_params(&s.model);
                acc_dense += (full - experts) / tp;
                acc_expert += experts / plan.ep as f64 / tp;
            } else {
                acc_dense += full / tp;
            }
        }
        let last = i + 1 == n;
        if last && p == 0 {
            acc_dense += embed_params / tp;
        }
        // Buckets fill with uncompressed gradient bytes, as DDP / Megatron size them.
        let filled = (acc_dense + acc_expert) * plan.grad_precision.bytes() as f64;
        if filled < plan.bucket_bytes as f64 && !last {
            continue;
        }
        for t in 0..plan.tp {
            let mut after: Vec<Dep> = cs
                .values()
                .filter_map(|ts| ts.get(t as usize).map(|&x| Dep::Done(x)))
                .collect();
            if let Some(&prev) = b.dp_stream.get(&(p, t)) {
                after.push(Dep::Done(prev));
            }
            let dp_ranks: Vec<GpuId> = (0..plan.dp).map(|d| b.gpu(t, d, p)).collect();
            let mut last_m = b.coll(
                OpKind::DataParallelGrad,
                op,
                grad_bytes(acc_dense),
                &dp_ranks,
                plan.dp_algorithm,
                &after,
            )?;
            if acc_expert > 0.0 && plan.dp / plan.ep > 1 {
                // expert gradients over each expert-data-parallel group (disjoint
                // groups, in parallel), after the dense ones on the same stream
                let mut a = after.clone();
                a.extend(last_m.map(Dep::Done));
                let mut joined: Vec<Dep> = last_m.map(Dep::Done).into_iter().collect();
                for e in 0..plan.ep {
                    let ranks: Vec<GpuId> = (0..plan.dp / plan.ep)
                        .map(|k| b.gpu(t, k * plan.ep + e, p))
                        .collect();
                    if let Some(x) = b.coll(
                        OpKind::DataParallelGrad,
                        op,
                        grad_bytes(acc_expert),
                        &ranks,
                        plan.dp_algorithm,
                        &a,
                    )? {
                        joined.push(Dep::Done(x));
                    }
                }
                if !joined.is_empty() {
                    last_m = Some(b.dag.marker(&joined));
                }
            }
            if let Some(x) = last_m {
                b.dp_stream.insert((p, t), x);
                ends.push(x);
            }
        }
        let pb = s.model.precision.bytes() as f64;
        launched_param_bytes.push(((acc_dense * pb) as u64, (acc_expert * pb) as u64));
        acc_dense = 0.0;
        acc_expert = 0.0;
    }
    // ZeRO 1/2: gather the updated parameters after the optimizer step.
    if matches!(plan.zero, 1 | 2) {
        for (dense, expert) in launched_param_bytes {
            for t in 0..plan.tp {
                // dense parameters over the data-parallel group, then expert
                // parameters over each expert-data-parallel group (disjoint
                // groups, in parallel)
                let after: Vec<Dep> = b
                    .dp_stream
                    .get(&(p, t))
                    .map(|&x| Dep::Done(x))
                    .into_iter()
                    .collect();
                let dp_ranks: Vec<GpuId> = (0..plan.dp).map(|d| b.gpu(t, d, p)).collect();
                let dense_m = b.coll(
                    OpKind::ZeroParamGather,
                    CollectiveOp::AllGather,
                    dense,
                    &dp_ranks,
                    plan.dp_algorithm,
                    &after,
                )?;
                let after: Vec<Dep> = match dense_m {
                    Some(x) => vec![Dep::Done(x)],
                    None => after,
                };
                let mut joined = after.clone();
                for e in 0..plan.ep {
                    let ranks: Vec<GpuId> = (0..plan.dp / plan.ep)
                        .map(|k| b.gpu(t, k * plan.ep + e, p))
                        .collect();
                    if let Some(x) = b.coll(
                        OpKind::ZeroParamGather,
                        CollectiveOp::AllGather,
                        expert,
                        &ranks,
                        plan.dp_algorithm,
                        &after,
                    )? {
                        joined.push(Dep::Done(x));
                    }
                }
                if !joined.is_empty() {
                    let x = b.dag.marker(&joined);
                    b.dp_stream.insert((p, t), x);
                    ends.push(x);
                }
            }
        }
    }
    Ok(ends)
}
