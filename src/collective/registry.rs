//! The collective algorithms fabricsim knows, each described by the
//! [`AlgorithmEntry`] its own file exports as `ENTRY`.
//!
//! Everything the rest of the program asks of an algorithm — its name, the
//! operations it implements, whether NCCL runs it (so `auto` may pick it),
//! whether it runs NCCL's protocols, whether it can be the inter-host step of
//! the hierarchical algorithm, its lowering, closed form, traffic and the
//! budget's message count — is read from that entry. Adding an algorithm is
//! its file (with `pub(crate) const ENTRY`), one [`Algorithm`] arm and one
//! line in [`REGISTRY`]; the order of [`REGISTRY`] is checked against the
//! enum at compile time.

use super::{
    alltoall, collnet, halving_doubling, hierarchical, nvls, ring, sharp, tree, Algorithm,
    CollectiveError, CollectiveOp, CollectiveSpec, Emitter,
};
use crate::dag::Dep;
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Lowers a collective into the emitter's DAG; returns the tasks whose
/// completion ends it (see [`super::lower_with`], which checks the
/// communicator and the operation first).
pub(crate) type EmitFn = fn(
    &CollectiveSpec,
    &[GpuId],
    &Topology,
    &mut Emitter<'_>,
    &[Dep],
) -> Result<Vec<Dep>, CollectiveError>;

/// The closed-form time of a collective on an idle fabric, in picoseconds.
pub(crate) type TimeFn =
    fn(&CollectiveSpec, &[GpuId], &Topology) -> Result<SimTime, CollectiveError>;

/// Payload bytes a collective moves, summed over its transfers.
pub(crate) type TrafficFn =
    fn(&CollectiveSpec, &[GpuId], &Topology) -> Result<u64, CollectiveError>;

/// Whether the fabric and communicator let NCCL's tuner consider the
/// algorithm (switches that reduce, an NVSwitch that multicasts, …).
pub(crate) type AvailableFn = fn(&[GpuId], &Topology) -> bool;

/// The communicator's shape as the resource estimate sees it
/// ([`crate::budget`]): counts, not GPUs, so the estimate never builds anything.
#[derive(Clone, Copy, Debug)]
pub struct StepShape {
    /// Ranks in the communicator.
    pub ranks: f64,
    /// GPUs per host.
    pub gpus_per_host: f64,
    /// Hosts the communicator spans.
    pub hosts: f64,
    /// The inter-host algorithm of a hierarchical collective.
    pub inter_host: Algorithm,
}

impl StepShape {
    /// ⌈log2 hosts⌉, at least 1.
    pub fn log_hosts(&self) -> f64 {
        self.hosts.log2().ceil().max(1.0)
    }
}

/// One collective algorithm, as its file registers it.
pub struct AlgorithmEntry {
    /// The enum value it stands for.
    pub algorithm: Algorithm,
    /// The name used in scenario files, the CLI and results.
    pub name: &'static str,
    /// The operations it implements.
    pub ops: &'static [CollectiveOp],
    /// NCCL runs it, so `auto` (NCCL's tuner) considers it; the others run
    /// only when named, so a simulated table stands beside a measured one.
    pub nccl: bool,
    /// It runs NCCL's protocols (LL, LL128, Simple) for its steps.
    pub uses_protocol: bool,
    /// Several channels split its buffer (false when it already runs one
    /// ring per rail, as hierarchical and NVLS do).
    pub splits_channels: bool,
    /// Its lowering follows `workload.channels` (ring, tree, CollNet chain).
    pub shaped_by_channels: bool,
    /// It moves data over NVLink inside the host (everything but flat SHARP,
    /// which sends every GPU's data through its NIC to the switches).
    pub uses_nvlink: bool,
    /// The switches reduce its data (InfiniBand SHARP), so `fabric.sharp` and
    /// `fabric.kind` shape it.
    pub reduces_in_switches: bool,
    /// Messages one rank sends per channel in one collective, for the budget's
    /// estimate; an upper bound, never the lowering itself.
    pub budget_steps: fn(&StepShape) -> f64,
    /// When it can be the inter-host step of [`Algorithm::Hierarchical`]:
    /// its messages per rank over `hosts` hosts (the budget's count).
    pub inter_host_steps: Option<fn(&StepShape) -> f64>,
    /// Whether `auto` may pick it on this fabric and communicator.
    pub available: AvailableFn,
    /// Its lowering (crate-internal: the emitter is).
    pub(crate) emit: EmitFn,
    /// Its closed form.
    pub time: TimeFn,
    /// Its traffic.
    pub traffic: TrafficFn,
}

/// Every algorithm, in the order of [`Algorithm`]'s arms.
pub const REGISTRY: [&AlgorithmEntry; 8] = [
    &ring::ENTRY,
    &tree::ENTRY,
    &halving_doubling::ENTRY,
    &hierarchical::ENTRY,
    &alltoall::ENTRY,
    &sharp::ENTRY,
    &nvls::ENTRY,
    &collnet::ENTRY,
];

/// Available everywhere the algorithm can lower (the common case).
pub(crate) fn always(_: &[GpuId], _: &Topology) -> bool {
    true
}

const fn in_enum_order() -> bool {
    let mut i = 0;
    while i < REGISTRY.len() {
        if REGISTRY[i].algorithm as usize != i {
            return false;
        }
        i += 1;
    }
    true
}
const _: () = assert!(
    in_enum_order(),
    "REGISTRY must list the algorithms in the order of the Algorithm enum"
);

const fn all_algorithms() -> [Algorithm; REGISTRY.len()] {
    let mut out = [Algorithm::Ring; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        out[i] = REGISTRY[i].algorithm;
        i += 1;
    }
    out
}

const fn nccl_count() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < REGISTRY.len() {
        if REGISTRY[i].nccl {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn nccl_algorithms() -> [Algorithm; nccl_count()] {
    let mut out = [Algorithm::Ring; nccl_count()];
    let (mut i, mut n) = (0, 0);
    while i < REGISTRY.len() {
        if REGISTRY[i].nccl {
            out[n] = REGISTRY[i].algorithm;
            n += 1;
        }
        i += 1;
    }
    out
}

/// Every algorithm, as [`REGISTRY`] lists them.
pub(crate) const ALL: [Algorithm; REGISTRY.len()] = all_algorithms();
/// The algorithms NCCL runs, as [`REGISTRY`] marks them.
pub(crate) const NCCL: [Algorithm; nccl_count()] = nccl_algorithms();

/// The registered entry of `algorithm`.
pub fn entry(algorithm: Algorithm) -> &'static AlgorithmEntry {
    REGISTRY[algorithm as usize]
}

/// The registered names, comma-separated (for help texts and errors).
pub fn names() -> String {
    REGISTRY
        .iter()
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names of the algorithms that can run between hosts in a hierarchical
/// collective, comma-separated.
pub fn inter_host_names() -> String {
    REGISTRY
        .iter()
        .filter(|e| e.inter_host_steps.is_some())
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for e in REGISTRY {
            assert_eq!(Algorithm::parse(e.name), Some(e.algorithm));
            assert_eq!(REGISTRY.iter().filter(|o| o.name == e.name).count(), 1);
            assert!(!e.ops.is_empty(), "{} implements nothing", e.name);
        }
        assert_eq!(
            names(),
            "ring, tree, halving_doubling, hierarchical, direct, sharp, nvls, collnet_chain"
        );
        assert_eq!(inter_host_names(), "ring, tree, halving_doubling, sharp");
    }
}
