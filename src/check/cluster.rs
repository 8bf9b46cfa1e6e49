//! The cluster a command-line run simulates: a scenario file or a built-in cluster,
//! with `--nodes`, `--set`-style overrides and a workload given on the command line.
//! Shared by `fabricsim collective`, `check` and `calibrate`.

use std::path::Path;

use crate::collective::{Algorithm, CollectiveOp};
use crate::config::{self, AlgoChoice, ConfigError, Dtype, Scenario, WorkloadSpec};

/// Built-in clusters for `--preset`: name, description, scenario text (no workload).
pub const CLUSTERS: [(&str, &str, &str); 3] = [
    (
        "dgx-h100-ndr",
        "64 x DGX H100, rail-optimized InfiniBand NDR 400G (the demo cluster)",
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = 64\n[topology]\nkind = \"rail_optimized\"\nradix = 64\n[fabric]\npreset = \"ib-ndr-400\"\n",
    ),
    (
        "dgx-h100-roce",
        "64 x DGX H100, rail-optimized RoCEv2 400 GbE",
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = 64\n[topology]\nkind = \"rail_optimized\"\nradix = 64\n[fabric]\npreset = \"roce-400\"\n",
    ),
    (
        "dgx-a100-hdr",
        "32 x DGX A100, non-blocking leaf-spine InfiniBand HDR 200G",
        "[cluster]\npreset = \"dgx-a100-node\"\nnodes = 32\n[topology]\nkind = \"leaf_spine\"\nradix = 40\n[fabric]\npreset = \"ib-hdr-200\"\n",
    ),
];

/// Why a base scenario could not be built.
#[derive(Debug)]
pub enum BaseError {
    /// The scenario (or an override) does not validate: the located diagnostics.
    Config(ConfigError),
    /// A command-line mistake, in words.
    Usage(String),
}

impl std::fmt::Display for BaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaseError::Config(e) => write!(f, "{e}"),
            BaseError::Usage(m) => write!(f, "{m}"),
        }
    }
}

/// Scenario text and the name diagnostics give it.
#[derive(Clone, Debug)]
pub struct ScenarioSource {
    /// `x.toml` or `<preset dgx-h100-ndr>`.
    pub label: String,
    /// TOML text.
    pub text: String,
    /// The preset name, when it is one.
    pub preset: Option<String>,
}

/// The text of `--scenario FILE`, or of `--preset P` (default `dgx-h100-ndr`).
///
/// # Errors
/// An unreadable file (the usual located diagnostic) or an unknown preset.
pub fn source(scenario: Option<&Path>, preset: Option<&str>) -> Result<ScenarioSource, BaseError> {
    if let Some(p) = scenario {
        return match crate::budget::read_text(p, crate::budget::MAX_INPUT_BYTES) {
            Ok(text) => Ok(ScenarioSource {
                label: p.display().to_string(),
                text,
                preset: None,
            }),
            Err(_) => Err(match config::load(p) {
                Err(e) => BaseError::Config(e),
                Ok(_) => BaseError::Usage(format!("cannot read {}", p.display())),
            }),
        };
    }
    let name = preset.unwrap_or("dgx-h100-ndr");
    let Some((_, _, text)) = CLUSTERS.iter().find(|c| c.0 == name) else {
        return Err(BaseError::Usage(format!(
            "unknown preset {name:?}; expected one of {}",
            CLUSTERS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
        )));
    };
    Ok(ScenarioSource {
        label: format!("<preset {name}>"),
        text: format!(
            "name = \"{name}\"\n{text}[workload]\nop = \"allreduce\"\nsizes = [\"1MiB\"]\n"
        ),
        preset: Some(name.to_string()),
    })
}

/// Validates `src` with the overrides `sets` (dotted key, raw value, as `sweep --set`)
/// and then `nodes`.
///
/// # Errors
/// Diagnostics of the scenario or an override; `--nodes` of 0 or a topology that
/// cannot hold that many nodes.
pub fn build(
    src: &ScenarioSource,
    sets: &[(String, String)],
    nodes: Option<u32>,
) -> Result<Scenario, BaseError> {
    let mut s = crate::sweep::apply(&src.label, &src.text, sets).map_err(BaseError::Config)?;
    if let Some(n) = nodes {
        if n == 0 {
            return Err(BaseError::Usage("--nodes must be at least 1".into()));
        }
        // the rules `cluster.nodes` passed, re-run for n (one place: config)
        s = s
            .with_hosts(n)
            .map_err(|e| BaseError::Usage(format!("--nodes {n}: {e}")))?;
    }
    Ok(s)
}

/// Replaces the scenario's workload with one collective over `sizes`, as
/// nccl-tests runs it; no `workload.*` key of the file applies any more. Fields
/// the command line does not set (the pipelining chunk, and whatever the collective
/// workload grows) come from the file's collective workload, or from the defaults
/// of a collective scenario when the file's workload is something else.
///
/// # Errors
/// A value the `[workload]` rules refuse (sizes, algorithm for the operation),
/// named as the file's key ([`Scenario::with_collective`]).
pub fn set_collective(
    s: &mut Scenario,
    op: CollectiveOp,
    algorithm: AlgoChoice,
    sizes: Vec<u64>,
    dtype: Dtype,
) -> Result<(), String> {
    let base = match s.workload() {
        WorkloadSpec::Collective(w) => w.clone(),
        _ => default_collective(),
    };
    *s = s.clone().with_collective(config::CollectiveWorkload {
        op,
        algorithm,
        inter_host: Algorithm::Ring,
        sizes,
        dtype,
        root: 0,
        alltoall_load: None,
        ..base
    })?;
    Ok(())
}

/// The collective workload a scenario gets when it only names an operation.
fn default_collective() -> config::CollectiveWorkload {
    let text = format!(
        "{}[workload]\nop = \"allreduce\"\nsizes = [\"1MiB\"]\n",
        CLUSTERS[0].2
    );
    match config::parse("<default collective>", &text).map(|s| s.workload().clone()) {
        Ok(WorkloadSpec::Collective(w)) => w,
        _ => unreachable!("the built-in cluster with a collective workload validates"),
    }
}

/// `auto` or an algorithm that implements `op`.
///
/// # Errors
/// An unknown algorithm, or one that does not implement `op`.
pub fn algo_choice(algo: &str, op: CollectiveOp) -> Result<AlgoChoice, String> {
    if algo == "auto" {
        return Ok(AlgoChoice::Auto);
    }
    match Algorithm::parse(algo) {
        Some(a) if crate::collective::supports(a, op) => Ok(AlgoChoice::Fixed(a)),
        Some(a) => Err(format!(
            "algorithm {} does not implement {}; it implements {}",
            a.name(),
            op.name(),
            crate::collective::supported_ops(a)
        )),
        None => Err(format!(
            "unknown algorithm {algo:?}; expected auto or one of {}",
            crate::collective::registry::names()
        )),
    }
}

/// The element type nccl-tests printed, with its size; `float` for names it does not know.
pub fn dtype(name: &str) -> Dtype {
    let (name, size): (&'static str, u64) = match name {
        "half" | "float16" => ("half", 2),
        "bfloat16" => ("bfloat16", 2),
        "double" | "float64" => ("double", 8),
        "int32" | "uint32" => ("int32", 4),
        "int64" | "uint64" => ("int64", 8),
        "int8" | "uint8" | "f8e4m3" | "f8e5m2" => ("int8", 1),
        _ => ("float", 4),
    };
    Dtype { name, size }
}
