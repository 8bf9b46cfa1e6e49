//! Three-tier k-ary fat-tree (in progress).
use super::{NodeId, TopologyBuilder, TopologyError};
/// Builds a k-ary fat-tree.
pub fn build(_b: &mut TopologyBuilder, _nics: &[NodeId], _k: u32) -> Result<(), TopologyError> {
    Err(TopologyError::new("topology.kind", "fat_tree is not built yet"))
}
