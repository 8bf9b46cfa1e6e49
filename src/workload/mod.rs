//! Workload generators: a training step or an inference batch becomes one
//! [`Dag`] of compute and communication per GPU, which any backend runs
//! (a DAG in, a [`RunOutput`] out; see [`evaluate`]).
//!
//! - [`training`]: one optimizer step of a transformer under a data / tensor /
//!   pipeline / expert-parallel plan with ZeRO, 1F1B, gradient buckets.
//! - [`inference`]: prefill and token-by-token decode of a batch of requests.
//! - [`faults`]: stragglers, link and switch failures, degraded links.
//! - [`traffic`]: synthetic network traffic patterns (incast, permutation, all-to-all, random).
//! - [`flows`]: explicit flow lists with dependencies, and htsim connection matrices.
//! - [`chakra`]: MLCommons Chakra execution traces, read and written.
//!
//! **Cost model of compute** ([`LayerCost`]). Per token and layer, the forward
//! pass costs 2 FLOPs per active weight (the 6·params·tokens rule counts
//! forward + backward = 3 × forward) plus attention scores and values,
//! 4·s·h FLOPs (QKᵀ and AV over the full sequence s, causal masking not
//! discounted, as in Narayanan et al., SC 2021, eq. 3). Backward is twice the
//! forward. Tensor parallelism divides both by the TP degree. A task's time is
//! the roofline max(FLOPs / (peak · efficiency), bytes / HBM bandwidth), where
//! bytes are the weights it reads (and, in decode, the KV cache).
//!
//! **Timing model of the step.** Compute tasks of one GPU run one after the
//! other (one compute stream); collectives run on their own streams and
//! overlap compute freely (no interference with compute kernels is modeled).

pub mod chakra;
pub mod faults;
pub mod flows;
pub mod inference;
pub mod traffic;
pub mod training;

use std::collections::HashMap;

use crate::backend::{BackendConfig, BackendError, Observers, RunOutput};
use crate::collective::{self, CollectiveError, CollectiveOp, CollectiveSpec};
use crate::config::workload::{GpuSpec, ModelSpec};
use crate::config::{AlgoChoice, Fidelity};
use crate::dag::{Dag, Dep, TaskId, TaskKind};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Why a workload could not be generated (a backend's failure to run it is a
/// [`BackendError`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// A collective cannot run on one of the plan's communicators.
    #[error("collective: {0}")]
    Collective(#[from] CollectiveError),
    /// Not available (e.g. the packet fidelity).
    #[error("{0}")]
    Unsupported(String),
}

/// FLOPs and weight bytes of one transformer layer for a number of tokens, on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerCost {
    /// Forward FLOPs of the attention block (projections + scores), per GPU.
    pub attn_flops: f64,
    /// Forward FLOPs of the MLP block (active experts, router), per GPU.
    pub mlp_flops: f64,
    /// Weight bytes of the attention block held by one GPU.
    pub attn_weight_bytes: f64,
    /// Weight bytes of the MLP block one GPU reads (its experts).
    pub mlp_weight_bytes: f64,
}

/// Parameters of one layer's attention block: Q and O (h² each) and K, V (h·h·kv/a each).
pub fn attn_params(m: &ModelSpec) -> f64 {
    let h = m.hidden as f64;
    2.0 * h * h + 2.0 * h * h * m.kv_heads as f64 / m.heads as f64
}

/// Parameters of one expert's (or a dense layer's) MLP: 3·h·f gated, 2·h·f otherwise.
pub fn mlp_params(m: &ModelSpec) -> f64 {
    let mats = if m.gated_mlp { 3.0 } else { 2.0 };
    mats * m.hidden as f64 * m.ffn as f64
}

/// Parameters of layer `l`: attention, MLP (all experts) and router.
pub fn layer_params(m: &ModelSpec, l: u64) -> f64 {
    if m.is_moe(l) {
        attn_params(m) + m.experts as f64 * mlp_params(m) + m.hidden as f64 * m.experts as f64
    } else {
        attn_params(m) + mlp_params(m)
    }
}

/// Total parameters (layers, input embedding and untied output head).
pub fn total_params(m: &ModelSpec) -> f64 {
    (0..m.layers).map(|l| layer_params(m, l)).sum::<f64>() + 2.0 * m.hidden as f64 * m.vocab as f64
}

/// Forward cost of layer `l` for `tokens` tokens attending over `context` tokens,
/// on one of `tp` tensor-parallel GPUs (each expert-parallel GPU processes on
/// average the same number of token-expert pairs, so EP does not change it).
pub fn layer_cost(m: &ModelSpec, l: u64, tokens: f64, context: f64, tp: u32) -> LayerCost {
    let h = m.hidden as f64;
    let tp = tp as f64;
    let b = m.precision.bytes() as f64;
    let (mlp_active, mlp_held) = if m.is_moe(l) {
        (
            m.top_k as f64 * mlp_params(m) + h * m.experts as f64,
            m.experts as f64 * mlp_params(m),
        )
    } else {
        (mlp_params(m), mlp_params(m))
    };
    LayerCost {
        attn_flops: tokens * (2.0 * attn_params(m) + 4.0 * context * h) / tp,
        mlp_flops: tokens * 2.0 * mlp_active / tp,
        attn_weight_bytes: attn_params(m) * b / tp,
        mlp_weight_bytes: mlp_held.min(tokens * mlp_active) * b / tp,
    }
}

/// Roofline time of a compute task: max(FLOPs / (peak · efficiency), bytes / HBM).
pub fn compute_time(gpu: &GpuSpec, m: &ModelSpec, flops: f64, bytes: f64) -> SimTime {
    let f = flops / (gpu.peak(m.precision) * gpu.efficiency);
    let mem = bytes / gpu.hbm_bytes_per_s;
    SimTime::from_secs_f64(f.max(mem))
}

/// What the tuner's choice depends on: operation, bytes, communicator and the
/// fixed algorithm (255 for `auto`).
type TuneKey = (CollectiveOp, u64, Vec<GpuId>, u8);

/// Lowers collectives into a DAG, resolving `auto` once per (op, bytes, communicator).
pub struct Comm<'a> {
    topo: &'a Topology,
    /// Overrides of the protocols' per-step software latency (NVLink step,
    /// network step); `None` keeps the protocol's.
    pub step_latency: (Option<SimTime>, Option<SimTime>),
    cache: HashMap<TuneKey, (collective::Algorithm, collective::ProtoCost)>,
}

impl<'a> Comm<'a> {
    /// A lowerer on `topo`.
    pub fn new(topo: &'a Topology) -> Comm<'a> {
        Comm {
            topo,
            step_latency: (None, None),
            cache: HashMap::new(),
        }
    }

    /// Appends `op` of `bytes` (nccl-tests meaning) over `ranks` to `dag`, after
    /// `after`; returns the marker of its completion, or `None` when there is
    /// nothing to do (one rank or zero bytes).
    ///
    /// # Errors
    /// When no algorithm can run the collective on `ranks`.
    pub fn lower(
        &mut self,
        dag: &mut Dag,
        op: CollectiveOp,
        bytes: u64,
        ranks: &[GpuId],
        algo: AlgoChoice,
        after: &[Dep],
    ) -> Result<Option<TaskId>, CollectiveError> {
        if ranks.len() < 2 || bytes == 0 {
            return Ok(None);
        }
        let spec = self.spec_for(op, bytes, ranks, algo)?;
        collective::lower(&spec, ranks, self.topo, dag, after).map(Some)
    }

    /// Appends an all-to-allv (NCCL's grouped send/recv with uneven pieces) of
    /// `bytes` per rank over `ranks`, pieces sized by `split`; as [`Comm::lower`].
    ///
    /// # Errors
    /// When the direct all-to-all cannot run on `ranks`.
    pub fn lower_alltoallv(
        &mut self,
        dag: &mut Dag,
        bytes: u64,
        ranks: &[GpuId],
        split: collective::alltoall::Split<'_>,
        after: &[Dep],
    ) -> Result<Option<TaskId>, CollectiveError> {
        if ranks.len() < 2 || bytes == 0 {
            return Ok(None);
        }
        let spec = self.spec_for(
            CollectiveOp::AllToAll,
            bytes,
            ranks,
            AlgoChoice::Fixed(collective::Algorithm::Direct),
        )?;
        collective::alltoall::lower_v(&spec, split, ranks, self.topo, dag, after).map(Some)
    }

    /// The spec `op` of `bytes` over `ranks` runs with: the algorithm (the
    /// tuner's when `auto` or when the fixed one cannot run `op`) and protocol.
    fn spec_for(
        &mut self,
        op: CollectiveOp,
        bytes: u64,
        ranks: &[GpuId],
        algo: AlgoChoice,
    ) -> Result<CollectiveSpec, CollectiveError> {
        let mut spec = CollectiveSpec {
            op,
            algorithm: collective::Algorithm::Ring,
            bytes,
            // One message per algorithm step: chunking multiplies the DAG without
            // changing an unchunked ring's closed form much at these sizes.
            chunk_bytes: u64::MAX,
            inter_host: collective::Algorithm::Ring,
            root: 0,
            channels: collective::default_channels(ranks, self.topo),
            pxn: true,
            proto: collective::ProtoCost::NONE,
        };
        let key_algo = match algo {
            AlgoChoice::Auto => 255,
            AlgoChoice::Fixed(a) => a as u8,
        };
        // NCCL's tuner: the algorithm (when not fixed) and the protocol
        let fixed = match algo {
            AlgoChoice::Fixed(a) if collective::supports(a, op) => Some(a),
            _ => None,
        };
        let key = (op, bytes, ranks.to_vec(), key_algo);
        let (algorithm, proto) = match self.cache.get(&key) {
            Some(&chosen) => chosen,
            None => {
                if let Some(a) = fixed {
                    spec.algorithm = a;
                }
                let (nvlink, network) = self.step_latency;
                let chosen = collective::tune(
                    &spec,
                    fixed.is_none(),
                    None,
                    nvlink,
                    network,
                    ranks,
                    self.topo,
                )?;
                self.cache.insert(key, chosen);
                chosen
            }
        };
        spec.algorithm = algorithm;
        spec.proto = proto;
        Ok(spec)
    }
}

/// Per-GPU compute busy time (sum of compute task durations), indexed by GPU.
pub fn busy_per_gpu(dag: &Dag, gpus: u32) -> Vec<SimTime> {
    let mut busy = vec![SimTime::ZERO; gpus as usize];
    for t in dag.tasks() {
        if let TaskKind::Compute { gpu, duration } = t.kind {
            if let Some(b) = busy.get_mut(gpu.0 as usize) {
                *b = b.saturating_add(duration);
            }
        }
    }
    busy
}

/// Makespan of `dag` with communication made free (every transfer takes zero
/// time): the step an infinitely fast network would give. What remains above the
/// busiest GPU's compute is dependency wait (pipeline bubble, load imbalance).
pub fn free_comm_makespan(dag: &Dag) -> SimTime {
    let mut done = vec![SimTime::ZERO; dag.len()];
    let mut end = SimTime::ZERO;
    for (i, task) in dag.tasks().enumerate() {
        let mut start = SimTime::ZERO;
        for d in dag.deps_of(TaskId(i as u32)) {
            let (Dep::Sent(p) | Dep::Done(p)) = d;
            start = start.max(done[p.0 as usize]);
        }
        let t = match task.kind {
            TaskKind::Compute { duration, .. } => start.saturating_add(duration),
            _ => start,
        };
        done[i] = t;
        end = end.max(t);
    }
    end
}

/// Runs `dag` on `topo` at `fidelity` with `faults` (see [`faults::Applied`])
/// and no observer; `packet` holds the packet level's settings when `fidelity`
/// is packet. The scenario runner calls [`crate::backend::run`] itself, with
/// its observers.
///
/// # Errors
/// A backend may fail (no route, deadlock, time limit).
pub fn evaluate(
    dag: &Dag,
    topo: &Topology,
    fidelity: Fidelity,
    seed: u64,
    faults: &faults::Applied,
    packet: Option<&crate::backend::packet::PacketConfig>,
) -> Result<RunOutput, BackendError> {
    let cfg = BackendConfig {
        fidelity,
        seed,
        link_events: faults.link_events.clone(),
        packet: packet.cloned(),
        // a training step or inference batch rides one class: max-min
        classes: None,
    };
    crate::backend::run(dag, topo, &cfg, &Observers::default())
}
