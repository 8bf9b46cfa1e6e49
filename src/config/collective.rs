//! `workload.kind = "collective"`: the collective, its algorithm, sizes,
//! element type and NCCL knobs (channels, protocol, step latencies).

use super::raw::RawWorkload;
use super::validate::Validator;
use super::WorkloadSpec;
use crate::collective::{Algorithm, CollectiveOp};
use crate::units::SimTime;

/// An element type, for the `count` column of result tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dtype {
    /// Name as nccl-tests prints it (`float`, `half`, `bfloat16`, `int8`…).
    pub name: &'static str,
    /// Bytes per element.
    pub size: u64,
}

const DTYPES: [(&str, &str, u64); 8] = [
    ("float32", "float", 4),
    ("float", "float", 4),
    ("float16", "half", 2),
    ("half", "half", 2),
    ("bfloat16", "bfloat16", 2),
    ("float64", "double", 8),
    ("int32", "int32", 4),
    ("int8", "int8", 1),
];

/// Algorithm choice: fixed or picked per size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgoChoice {
    /// The fastest closed-form algorithm for each size.
    Auto,
    /// This algorithm.
    Fixed(Algorithm),
}

/// A collective over a size sweep, like one nccl-tests binary.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveWorkload {
    /// Operation.
    pub op: CollectiveOp,
    /// Algorithm.
    pub algorithm: AlgoChoice,
    /// Inter-host algorithm for hierarchical.
    pub inter_host: Algorithm,
    /// Sizes in bytes, ascending.
    pub sizes: Vec<u64>,
    /// Pipelining chunk, bytes.
    pub chunk_bytes: u64,
    /// Element type.
    pub dtype: Dtype,
    /// Broadcast root.
    pub root: u32,
    /// Parallel channels; `None`: as NCCL, one per NIC when the communicator spans
    /// hosts ([`crate::collective::default_channels`]).
    pub channels: Option<u32>,
    /// NCCL's PXN (see [`crate::collective::CollectiveSpec::pxn`]).
    pub pxn: bool,
    /// The protocol; `None`: chosen per size like NCCL's tuner.
    pub protocol: Option<crate::collective::Protocol>,
    /// Per-step software latency between hosts; `None`: the protocol's.
    pub step_latency: Option<SimTime>,
    /// Per-step software latency over NVLink; `None`: the protocol's.
    pub nvlink_step_latency: Option<SimTime>,
    /// All-to-allv: the share of every rank's buffer each rank receives
    /// (one per rank of the communicator, summing to 1), from
    /// `workload.alltoall_skew` (Zipf) or `workload.alltoall_load`; `None`:
    /// the uniform all-to-all. Read only when `op` is all-to-all.
    pub alltoall_load: Option<Vec<f64>>,
}

/// Most sizes in one collective workload: each is one simulation (a
/// min_bytes..max_bytes sweep has at most 64).
pub const MAX_SIZES: usize = 1024;
/// Most channels a collective may ask for (NCCL's MAXCHANNELS is 64).
pub const MAX_CHANNELS: i64 = 64;

impl Validator<'_> {
    /// `workload.kind = "collective"` (the default): one collective over a size
    /// sweep, with the keys of the other kinds refused.
    pub(super) fn collective(
        &mut self,
        w: &RawWorkload,
        total_gpus: Option<u64>,
    ) -> Option<WorkloadSpec> {
        let traffic = w.traffic_keys();
        self.refuse_workload_keys(&traffic, "collective", "it only with kind = \"traffic\"");
        let model = w.model_keys();
        self.refuse_workload_keys(
            &model,
            "collective",
            "kind = \"training\" or \"inference\" to describe a model",
        );
        let op = match w.op.as_deref() {
            None => {
                self.err(
                    "workload.op",
                    "nothing",
                    "one of allreduce, allgather, reducescatter, broadcast, alltoall",
                );
                None
            }
            Some(s) => match CollectiveOp::parse(s) {
                Some(op) => Some(op),
                None => {
                    self.err(
                        "workload.op",
                        format!("{s:?}"),
                        "one of allreduce, allgather, reducescatter, broadcast, alltoall",
                    );
                    None
                }
            },
        };
        let algo_names = format!("auto, {}", crate::collective::registry::names());
        let algorithm = match w.algorithm.as_deref().unwrap_or("auto") {
            "auto" => Some(AlgoChoice::Auto),
            s => match Algorithm::parse(s) {
                Some(a) => {
                    if let Some(op) = op {
                        if !crate::collective::supports(a, op) {
                            self.err(
                                "workload.algorithm",
                                format!("{s:?} for {}", op.name()),
                                format!(
                                    "an algorithm that implements {} ({}), or auto",
                                    op.name(),
                                    supporting(op)
                                ),
                            );
                        }
                    }
                    Some(AlgoChoice::Fixed(a))
                }
                None => {
                    self.err(
                        "workload.algorithm",
                        format!("{s:?}"),
                        format!("one of {algo_names}"),
                    );
                    None
                }
            },
        };
        let inter_host = {
            let s = w.inter_host.as_deref().unwrap_or("ring");
            match Algorithm::parse(s) {
                Some(a) if crate::collective::entry(a).inter_host_steps.is_some() => Some(a),
                _ => {
                    self.err(
                        "workload.inter_host",
                        format!("{s:?}"),
                        format!("one of {}", crate::collective::registry::inter_host_names()),
                    );
                    None
                }
            }
        };
        let sizes = if let Some(list) = &w.sizes {
            if w.min_bytes.is_some() || w.max_bytes.is_some() || w.step_factor.is_some() {
                self.err("workload.sizes", "both `sizes` and min_bytes/max_bytes/step_factor", "either an explicit `sizes` list or a min_bytes/max_bytes/step_factor sweep, not both");
            }
            if list.is_empty() {
                self.err(
                    "workload.sizes",
                    "an empty list",
                    "at least one size such as \"1MiB\"",
                );
                None
            } else if list.len() > MAX_SIZES {
                self.err(
                    "workload.sizes",
                    format!("a list of {} sizes", list.len()),
                    format!("at most {MAX_SIZES} sizes (each is one simulation)"),
                );
                None
            } else {
                let mut out = Vec::new();
                let mut bad = false;
                for (i, q) in list.iter().enumerate() {
                    match self.size(&format!("workload.sizes.{i}"), Some(q), None, 1) {
                        Some(b) => out.push(b),
                        None => bad = true,
                    }
                }
                out.sort_unstable();
                out.dedup();
                (!bad).then_some(out)
            }
        } else {
            let min = self.size("workload.min_bytes", w.min_bytes.as_ref(), Some("1MiB"), 1);
            let max = self.size("workload.max_bytes", w.max_bytes.as_ref(), Some("1GiB"), 1);
            let f = w.step_factor.unwrap_or(2);
            if f < 2 {
                self.err(
                    "workload.step_factor",
                    f.to_string(),
                    "an integer factor ≥ 2 between sizes (nccl-tests -f)",
                );
                None
            } else {
                match (min, max) {
                    (Some(a), Some(b)) if a > b => {
                        self.err(
                            "workload.max_bytes",
                            crate::units::format_bytes(b),
                            format!(
                                "a size at least min_bytes ({})",
                                crate::units::format_bytes(a)
                            ),
                        );
                        None
                    }
                    (Some(a), Some(b)) => Some(size_sweep(a, b, f as u64)),
                    _ => None,
                }
            }
        };
        let chunk_bytes = self.size("workload.chunk", w.chunk.as_ref(), Some("512KiB"), 1);
        let dtype = {
            let s = w.dtype.as_deref().unwrap_or("float32");
            match DTYPES.iter().find(|d| d.0 == s) {
                Some(&(_, name, size)) => Some(Dtype { name, size }),
                None => {
                    self.err(
                        "workload.dtype",
                        format!("{s:?}"),
                        "one of float32, float16, bfloat16, float64, int32, int8",
                    );
                    None
                }
            }
        };
        let root = match (w.root, total_gpus) {
            (Some(r), Some(n)) if r < 0 || r as u64 >= n => {
                self.err(
                    "workload.root",
                    r.to_string(),
                    format!("a rank between 0 and {}", n - 1),
                );
                None
            }
            (r, _) => Some(r.unwrap_or(0) as u32),
        };
        let channels = match w.channels {
            None => Some(None),
            Some(c) if (1..=MAX_CHANNELS).contains(&c) => Some(Some(c as u32)),
            Some(c) => {
                self.err(
                    "workload.channels",
                    c.to_string(),
                    format!(
                        "a whole number of channels from 1 to {MAX_CHANNELS} (NCCL runs up to 64)"
                    ),
                );
                None
            }
        };
        let protocol = match w.protocol.as_deref().unwrap_or("auto") {
            "auto" => Some(None),
            p => match crate::collective::Protocol::parse(p) {
                Some(p) => Some(Some(p)),
                None => {
                    self.err(
                        "workload.protocol",
                        format!("{p:?}"),
                        "one of \"auto\", \"simple\", \"ll128\", \"ll\" (NCCL_PROTO)",
                    );
                    None
                }
            },
        };
        let step_latency = match &w.step_latency {
            None => Some(None),
            v => self
                .time("workload.step_latency", v.as_ref(), None)
                .map(Some),
        };
        let nvlink_step_latency = match &w.nvlink_step_latency {
            None => Some(None),
            v => self
                .time("workload.nvlink_step_latency", v.as_ref(), None)
                .map(Some),
        };
        // an all-to-allv's receive shares, one per rank (the validator's rule
        // for MoE expert loads: a Zipf exponent or a measured load)
        let alltoall_load = self.load_shares(
            ("workload.alltoall_skew", "workload.alltoall_load"),
            "rank",
            w.alltoall_skew,
            w.alltoall_load.as_ref(),
            total_gpus,
        );
        Some(WorkloadSpec::Collective(CollectiveWorkload {
            op: op?,
            algorithm: algorithm?,
            inter_host: inter_host?,
            sizes: sizes?,
            chunk_bytes: chunk_bytes?,
            dtype: dtype?,
            root: root?,
            channels: channels?,
            pxn: w.pxn.unwrap_or(true),
            protocol: protocol?,
            step_latency: step_latency?,
            nvlink_step_latency: nvlink_step_latency?,
            alltoall_load: alltoall_load?,
        }))
    }
}

pub(super) fn supporting(op: CollectiveOp) -> String {
    Algorithm::ALL
        .into_iter()
        .filter(|&a| crate::collective::supports(a, op))
        .map(Algorithm::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sizes from `min` to `max` multiplying by `factor` (nccl-tests `-b -e -f`).
pub fn size_sweep(min: u64, max: u64, factor: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = min.max(1);
    while s <= max {
        v.push(s);
        match s.checked_mul(factor.max(2)) {
            Some(n) => s = n,
            None => break,
        }
    }
    v
}
