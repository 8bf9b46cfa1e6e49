//! Placeholder while the algorithm is written.
use super::{CollectiveError, CollectiveSpec, Emitter};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Lowers the collective into transfers.
pub fn lower(
    spec: &CollectiveSpec,
    _r: &[GpuId],
    _t: &Topology,
    _d: &mut Dag,
    _a: &[Dep],
) -> Result<TaskId, CollectiveError> {
    Err(super::unsupported(spec.algorithm, spec.op))
}
/// Emits.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let _ = (spec, ranks, em);
    after.to_vec()
}
/// Closed-form time.
pub fn time(
    spec: &CollectiveSpec,
    _r: &[GpuId],
    _t: &Topology,
) -> Result<SimTime, CollectiveError> {
    Err(super::unsupported(spec.algorithm, spec.op))
}
/// Total payload bytes moved.
pub fn traffic(spec: &CollectiveSpec, _r: &[GpuId]) -> Result<u64, CollectiveError> {
    Err(super::unsupported(spec.algorithm, spec.op))
}
