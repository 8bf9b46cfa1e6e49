//! Scenario files: the raw TOML schema, presets, and validation into a checked
//! [`Scenario`] that cannot hold an impossible configuration.
//!
//! Raw input and the checked model are kept apart (smoltcp's Packet/Repr split):
//! the `Raw*` structs ([`raw`]) accept what the file says; [`parse`] turns them
//! into a [`Scenario`] and reports *every* problem with its file, line, column,
//! field, what was found and what is expected. The checked types keep their
//! fields private to this module ([`Scenario`], [`FabricSpec`],
//! [`PacketSettings`]): outside it a scenario comes only from [`parse`] /
//! [`load`] or a checked derivation ([`Scenario::with_hosts`], …), and is read
//! through accessors.
//!
//! One file per concern, each holding its checked types and the validator's
//! checks of its keys, so a new key is added beside the rule that reads it:
//!
//! | file | holds |
//! |------|-------|
//! | `raw.rs` | every serde type of the file format |
//! | `validate.rs` | `load`, `parse`, diagnostics from serde, typed readers (count, rate, time, size), `keys_set` |
//! | `scenario.rs` | [`Scenario`], [`WorkloadSpec`], assembling the sections |
//! | `cluster.rs` | `[cluster]`: hosts, GPUs, NICs, NVLink, PCIe, host-staged path |
//! | `topology.rs` | `[topology]`, building the topology a run uses |
//! | `fabric.rs` | `[fabric]`: kind, links, packet format, routing, NIC, SHARP |
//! | `packet.rs` | packet-level keys: buffers, lanes, transport, timers, PFC, ECN, congestion control |
//! | `classes.rs` | `[[fabric.classes]]`, `ack_class`, `cnp_class` and the classes flows and workloads name |
//! | `collective.rs` | `kind = "collective"`: op, algorithm, sizes, dtype, NCCL knobs |
//! | `traffic.rs` | `kind = "traffic"`: patterns and extra flows |
//! | `workload.rs` | `kind = "training"` / `"inference"` and `[[faults]]` |
//! | `jobs.rs` | `[[jobs]]`: several jobs on one fabric, their placements |
//! | `simulation.rs` | `[simulation]`: fidelity, seed, budget, simulated-time limits |
//! | `presets.rs`, `usage.rs`, `diagnostic.rs` | presets, the key-consumption ledger, diagnostics |
//!
//! ```toml
//! name = "64 DGX H100 on NDR"
//! [cluster]
//! preset = "dgx-h100-node"   # GPUs, NVLink, NICs, PCIe; override any field
//! nodes = 64
//! [topology]
//! kind = "rail_optimized"    # single_switch | leaf_spine | fat_tree | rail_optimized | dragonfly
//! radix = 64
//! [fabric]
//! preset = "ib-ndr-400"      # kind, link_rate, mtu, header_bytes, latencies
//! [workload]
//! kind = "collective"
//! op = "allreduce"
//! algorithm = "hierarchical"
//! sizes = ["1MiB", "1GiB"]
//! [simulation]
//! fidelity = "flow"
//! seed = 1
//! ```

mod chakra;
mod classes;
mod cluster;
mod collective;
pub mod diagnostic;
mod fabric;
pub mod jobs;
mod packet;
pub mod presets;
pub mod raw;
mod scenario;
mod simulation;
mod topology;
pub mod topology_file;
mod traffic;
pub mod usage;
mod validate;
pub mod workload;

pub use cluster::MAX_ENDPOINTS;
pub use collective::{size_sweep, AlgoChoice, CollectiveWorkload, Dtype, MAX_CHANNELS, MAX_SIZES};
pub use diagnostic::{ConfigError, Diagnostic, Source};
pub use fabric::{FabricKind, FabricSpec, Routing, MAX_QPS};
pub use jobs::{JobSpec, Placement};
pub use packet::PacketSettings;
pub use raw::{
    RawCluster, RawDcqcn, RawFabric, RawFlow, RawNumber, RawQuantity, RawScenario, RawSimulation,
    RawTopology, RawWorkload,
};
pub use scenario::{IgnoredSetting, Scenario, WorkloadSpec};
pub use simulation::{Fidelity, MAX_LATENCY, MAX_SIM_TIME, MAX_THREADS};
pub use validate::{keys_set, load, parse};
pub use workload::{FaultSpec, InferenceSpec, TrainingSpec};

use crate::topology::{ClusterSpec, TopologySpec};
