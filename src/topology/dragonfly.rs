//! Dragonfly (in progress).
use super::{NodeId, TopologyBuilder, TopologyError};
/// Builds a dragonfly.
pub fn build(_b: &mut TopologyBuilder, _nics: &[NodeId], _g: u32, _a: u32, _p: u32, _h: u32) -> Result<(), TopologyError> {
    Err(TopologyError::new("topology.kind", "dragonfly is not built yet"))
}
