//! Placeholder while the algorithm is written.
use super::{CollectiveError, CollectiveSpec};
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
