//! Tensor- (and optionally pipeline-) parallel inference of one batch of requests.
//!
//! GPU `g = t + T·p` for tensor rank t and stage p. **Prefill**: every request's
//! prompt goes through the layers at once (R·prompt tokens; attention over the
//! prompt), with a TP all-reduce of the activations after the attention and the
//! MLP of each layer, and a pipeline send between stages. The prefill yields
//! each request's first token. **Decode**: step k produces one more token for
//! every request still running; per layer, compute is the roofline of its
//! FLOPs and of the bytes it reads (the GPU's weights plus the KV cache of the
//! active requests, 2·ctx·h·kv/a elements each), followed by a TP all-reduce of
//! active·h elements. Step k+1 starts when step k's last stage is done.
//!
//! Request r produces `out_r` tokens, spread deterministically (by seed) between
//! `output_tokens` and `output_tokens_max`. Its time per output token (TPOT) is
//! (end of the decode step giving its last token − end of prefill) / (out_r − 1).

use crate::collective::{CollectiveError, CollectiveOp};
use crate::config::InferenceSpec;
use crate::dag::{Dag, Dep, TaskId};
use crate::report::workload::{InferenceReport, MsStats};
use crate::topology::{mix64, GpuId, Topology};

use super::{compute_time, layer_cost, Comm};

/// A generated inference batch.
#[derive(Clone, Debug)]
pub struct InferenceDag {
    /// The tasks; op 0 is the prefill, op k+1 decode step k.
    pub dag: Dag,
    /// Output tokens of each request.
    pub outputs: Vec<u64>,
}

/// Output tokens of each of `i.requests` requests.
pub fn output_lengths(i: &InferenceSpec, seed: u64) -> Vec<u64> {
    let span = i.output_max - i.output_min + 1;
    (0..i.requests)
        .map(|r| i.output_min + mix64(seed ^ r.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % span)
        .collect()
}

/// Rough number of tasks [`build`] creates.
pub fn estimated_tasks(i: &InferenceSpec) -> f64 {
    let tp = i.plan.tp as f64;
    let comm = if i.plan.tp > 1 { 4.0 * tp * tp } else { 0.0 };
    i.output_max as f64 * i.model.layers as f64 * (2.0 * tp + comm)
}

/// Builds the batch's DAG.
///
/// # Errors
/// Records in `usage` the workload keys an inference batch consumes; the
/// training-only ones (batches, gradients, optimizer state, replicas) change
/// nothing here.
pub fn read_keys(i: &InferenceSpec, usage: &mut crate::config::usage::Usage) {
    let m = &i.model;
    usage.read_if("workload.model.top_k", m.experts > 1, || {
        "the model is dense (experts ≤ 1)".into()
    });
    usage.read_if("workload.model.moe_every", m.experts > 1, || {
        "the model is dense (experts ≤ 1)".into()
    });
    super::training::read_model_keys(m, usage);
    // skipped above; no other reader of an inference run uses it
    for key in ["workload.model.global_batch", "workload.model.micro_batch"] {
        usage.skip(key, || {
            "inference batches requests with workload.inference.requests".into()
        });
    }
    for key in [
        "workload.parallel.expert",
        "workload.parallel.zero",
        "workload.parallel.bucket",
        "workload.parallel.gradient_compression",
        "workload.parallel.grad_precision",
        "workload.parallel.dp_algorithm",
        "workload.parallel.replicas",
    ] {
        usage.skip(key, || {
            "inference has no gradients, optimizer state or data-parallel replicas".into()
        });
    }
    // an inference batch's tensor-parallel layers all-reduce
    let runs = match i.plan.tp_algorithm {
        crate::config::AlgoChoice::Auto => true,
        crate::config::AlgoChoice::Fixed(a) => {
            crate::collective::supports(a, crate::collective::CollectiveOp::AllReduce)
        }
    };
    usage.read_if("workload.parallel.tp_algorithm", i.plan.tp > 1 && runs, || {
        if i.plan.tp > 1 {
            "this algorithm cannot run all_reduce (the tensor-parallel collective), so it runs NCCL's choice (auto)".into()
        } else {
            "tensor = 1: there are no tensor-parallel collectives".into()
        }
    });
    usage.skip("workload.parallel.sequence_parallel", || {
        "sequence parallelism splits training activations; an inference batch's tensor-parallel layers run without it".into()
    });
    usage.skip("workload.model.seq_len", || {
        "an inference batch's context is workload.inference.prompt_tokens plus the tokens decoded so far".into()
    });
    usage.read_all(&[
        // the requests' output lengths are drawn from the run's seed
        "simulation.seed",
        "workload.kind",
        "workload.preset",
        "workload.inference",
        "workload.parallel.data",
        "workload.parallel.tensor",
        "workload.parallel.pipeline",
        "workload.gpu.preset",
        "workload.gpu.efficiency",
        "workload.gpu.hbm_bandwidth",
    ]);
}

/// When a TP collective cannot run on its communicator.
pub fn build(
    i: &InferenceSpec,
    topo: &Topology,
    seed: u64,
) -> Result<InferenceDag, CollectiveError> {
    let identity: Vec<GpuId> = (0..i.plan.tp * i.plan.pp).map(GpuId).collect();
    build_on(i, topo, seed, &identity)
}

/// [`build`] with the plan's ranks on `gpus`: rank `t + TP·p` (tensor rank t
/// of stage p) on `gpus[t + TP·p]`, a job's GPUs in placement order. The TP
/// all-reduces run on those GPUs' communicators on the real topology.
///
/// # Errors
/// When a TP collective cannot run on its communicator.
///
/// # Panics
/// When `gpus` holds fewer than `tp · pp` GPUs (the job's validation requires
/// exactly that many).
pub fn build_on(
    i: &InferenceSpec,
    topo: &Topology,
    seed: u64,
    gpus: &[GpuId],
) -> Result<InferenceDag, CollectiveError> {
    let m = &i.model;
    let (tp, pp) = (i.plan.tp, i.plan.pp);
    assert!(
        gpus.len() >= (tp * pp) as usize,
        "a plan rank without a GPU"
    );
    let gpu = |t: u32, p: u32| gpus[(t + tp * p) as usize];
    let mut dag = Dag::new();
    let mut comm = Comm::new(topo);
    comm.step_latency = i.plan.step_latency;
    let slots = gpus.iter().map(|g| g.0 as usize + 1).max().unwrap_or(0);
    let mut last: Vec<Option<TaskId>> = vec![None; slots];
    let outputs = output_lengths(i, seed);
    let steps = outputs.iter().copied().max().unwrap_or(1).saturating_sub(1);
    let per_stage = m.layers / pp as u64;
    let prec = m.precision.bytes();
    let kv_per_token_layer =
        2.0 * (m.hidden * m.kv_heads / m.heads) as f64 * prec as f64 / tp as f64;
    let mut pre: Vec<Dep> = Vec::new();
    for k in 0..=steps {
        // k = 0: prefill; k ≥ 1: decode step k − 1.
        let (tokens, ctx, active) = if k == 0 {
            (
                i.requests * i.prompt_tokens,
                i.prompt_tokens as f64,
                i.requests,
            )
        } else {
            let a = outputs.iter().filter(|&&o| o > k).count() as u64;
            (a, (i.prompt_tokens + k) as f64, a)
        };
        dag.begin_op(if k == 0 {
            "prefill".to_string()
        } else {
            format!("decode {}", k - 1)
        });
        for p in 0..pp {
            for l in p as u64 * per_stage..(p as u64 + 1) * per_stage {
                let c = layer_cost(m, l, tokens as f64, ctx, tp);
                let kv = if k == 0 {
                    0.0
                } else {
                    active as f64 * ctx * kv_per_token_layer
                };
                let blocks = [
                    compute_time(&i.gpu, m, c.attn_flops, c.attn_weight_bytes + kv),
                    compute_time(&i.gpu, m, c.mlp_flops, c.mlp_weight_bytes),
                ];
                for dur in blocks {
                    let mut cs = Vec::new();
                    for t in 0..tp {
                        let g = gpu(t, p);
                        let mut deps = pre.clone();
                        if let Some(x) = last[g.0 as usize] {
                            deps.push(Dep::Done(x));
                        }
                        let x = dag.compute(g, dur, &deps);
                        last[g.0 as usize] = Some(x);
                        cs.push(Dep::Done(x));
                    }
                    let ranks: Vec<GpuId> = (0..tp).map(|t| gpu(t, p)).collect();
                    let bytes = (tokens as f64 * (m.hidden * prec) as f64) as u64;
                    pre = match comm.lower(
                        &mut dag,
                        CollectiveOp::AllReduce,
                        bytes,
                        &ranks,
                        i.plan.tp_algorithm,
                        &cs,
                    )? {
                        Some(x) => vec![Dep::Done(x)],
                        None => cs,
                    };
                }
            }
            if p + 1 < pp {
                let bytes = (tokens as f64 * (m.hidden * prec) as f64 / tp as f64) as u64;
                let sends: Vec<Dep> = (0..tp)
                    .map(|t| Dep::Done(dag.transfer(gpu(t, p), gpu(t, p + 1), bytes, &pre)))
                    .collect();
                pre = sends;
            }
        }
        // output head of the last token of each active request
        let flops = active as f64 * 2.0 * (m.hidden * m.vocab) as f64 / tp as f64;
        let bytes = (m.hidden * m.vocab * prec) as f64 / tp as f64;
        let dur = compute_time(&i.gpu, m, flops, bytes);
        let mut heads = Vec::new();
        for t in 0..tp {
            let g = gpu(t, pp - 1);
            let mut deps = pre.clone();
            if let Some(x) = last[g.0 as usize] {
                deps.push(Dep::Done(x));
            }
            let x = dag.compute(g, dur, &deps);
            last[g.0 as usize] = Some(x);
            heads.push(Dep::Done(x));
        }
        pre = vec![Dep::Done(dag.marker(&heads))];
    }
    Ok(InferenceDag { dag, outputs })
}

/// The inference section from a run of `b` (`dag`: the DAG that ran, with slow
/// GPUs stretched).
pub fn report(
    i: &InferenceSpec,
    b: &InferenceDag,
    dag: &Dag,
    out: &crate::backend::RunOutput,
) -> InferenceReport {
    let end = |op: usize| out.op_timing.get(op).map_or(0.0, |t| t.end.as_secs_f64());
    let prefill = end(0);
    let tpot: Vec<f64> = b
        .outputs
        .iter()
        .filter(|&&o| o >= 2)
        .map(|&o| 1e3 * (end(o as usize - 1) - prefill) / (o - 1) as f64)
        .collect();
    let total = out.makespan.as_secs_f64();
    let free = super::free_comm_makespan(dag).as_secs_f64();
    let tokens: u64 = b.outputs.iter().sum();
    InferenceReport {
        preset: i.preset.clone(),
        plan: [i.plan.tp, i.plan.pp],
        requests: i.requests,
        prefill_ms: 1e3 * prefill,
        tpot_ms: MsStats::of(&tpot),
        output_tokens_per_s: if total > 0.0 {
            tokens as f64 / total
        } else {
            0.0
        },
        total_ms: 1e3 * total,
        exposed_comm_ms: 1e3 * (total - free).max(0.0),
        faults: Vec::new(),
    }
}
