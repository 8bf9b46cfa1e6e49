//! The built-in demo scenario: `fabricsim demo` runs it with no file needed.

/// 64 DGX H100 nodes (512 GPUs) on a rail-optimized InfiniBand NDR fabric, running a
/// hierarchical all-reduce sweep from 1 MiB to 1 GiB, like `all_reduce_perf -b 1M -e 1G -f 4`.
pub const SCENARIO: &str = r#"# fabricsim built-in demo
name = "demo: 64 x DGX H100, rail-optimized NDR 400G, hierarchical all-reduce"

[cluster]
preset = "dgx-h100-node"      # 8 GPUs, NVLink 450 GB/s per direction, 8 x 400G NICs
nodes = 64

[topology]
kind = "rail_optimized"       # NIC i of every node on a rail-i leaf, leaves joined by spines
radix = 64

[fabric]
preset = "ib-ndr-400"

[workload]
kind = "collective"
op = "allreduce"
algorithm = "hierarchical"    # NVLink reduce-scatter, per-rail ring between nodes, NVLink all-gather
inter_host = "ring"
min_bytes = "1MiB"
max_bytes = "1GiB"
step_factor = 4

[simulation]
fidelity = "flow"
seed = 1
"#;

/// The file name shown in the demo's diagnostics and results.
pub const FILE: &str = "<built-in demo>";
