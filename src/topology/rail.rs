//! Rail-optimized (in progress).
use super::{NodeId, TopologyBuilder, TopologyError};
/// Builds a rail-optimized fabric.
pub fn build(_b: &mut TopologyBuilder, _nics: &[NodeId], _rails: u32, _radix: u32, _spine_radix: u32) -> Result<(), TopologyError> {
    Err(TopologyError::new("topology.kind", "rail_optimized is not built yet"))
}
