//! MLCommons Chakra execution traces (`workload.kind = "chakra"`): one file
//! per rank, `<prefix>.<rank>.et`, read into the DAG ([`crate::dag`]) and
//! written from a training step ([`export_training`]).
//!
//! **File format** (`schema/protobuf/et_def.proto` of mlcommons/chakra,
//! package `ChakraProtoMsg`, proto3): a varint length, then that many bytes
//! of a `GlobalMetadata` message; then, to the end of the file, a varint
//! length and a `Node` message, again and again. The messages here are
//! written by hand with `prost`'s derive (no code generation, no `protoc`),
//! with the field numbers of `et_def.proto`.
//!
//! **Supported subset** (what [`read_rank`] accepts; anything else is a
//! [`ChakraError`] naming the file, the node, the field, what was found and
//! what is expected):
//! - `COMP_NODE`: a compute task of the node's duration on its rank's GPU:
//!   the attribute `duration_ps` (a fabricsim extension, picoseconds, written
//!   by [`export_training`] so that a round trip is exact) when present, else
//!   `duration_micros` (whole microseconds, what ASTRA-sim replays), else
//!   `num_ops` (FLOPs, with the optional `tensor_size` bytes) on the
//!   scenario's GPU model, `[workload.gpu]` as the training workload reads
//!   it: max(num_ops / (bf16 peak · efficiency), tensor_size / HBM
//!   bandwidth), ASTRA-sim's roofline derated as fabricsim's kernels are
//!   ([`Roofline`]). A compute node with none of the three (duration_micros
//!   0, no duration_ps, no num_ops) is refused; `duration_ps = 0` says a
//!   node takes no time. Compute nodes of one rank run one at a time (one compute
//!   stream, as ASTRA-sim's hardware resource issues one GPU kernel at a
//!   time), in dependency order, file order among the ready ones.
//! - `COMM_COLL_NODE`: attributes `comm_type` (`ALL_REDUCE`, `ALL_GATHER`,
//!   `REDUCE_SCATTER`, `BROADCAST`, `ALL_TO_ALL`; `REDUCE`, `GATHER`,
//!   `SCATTER`, `REDUCE_SCATTER_BLOCK`, `BARRIER` are refused), `comm_size`
//!   (bytes, in the nccl-tests meaning fabricsim's collectives use: the whole
//!   buffer of an all-reduce, all-gather's output, reduce-scatter's input) and
//!   `pg_name` (the process group). The group is every rank whose trace has a
//!   collective with that `pg_name` (every rank of the set when absent); the
//!   k-th collective of a group on each member is one collective, as NCCL
//!   matches calls on a communicator; they must agree on type and size. It
//!   starts when every member's dependencies are met (the union), and a node
//!   that depends on it waits for the whole collective. Its algorithm is
//!   `workload.algorithm` (NCCL's tuner for `auto`, or where the fixed one
//!   cannot run the operation); a broadcast's root is the group's first rank.
//! - `COMM_SEND_NODE` / `COMM_RECV_NODE`: `comm_dst` (send) / `comm_src`
//!   (receive), `comm_size`, `comm_tag` (default 0). The k-th send from s to d
//!   with a tag is matched with the k-th receive on d from s with that tag, in
//!   file order; the pair is one transfer that starts when both are posted
//!   (the union of their dependencies). A node depending on the send waits
//!   for its last byte to leave; one depending on the receive, for it to arrive.
//! - `METADATA_NODE`, `MEM_LOAD_NODE`, `MEM_STORE_NODE` and `INVALID_NODE`
//!   take no time: they only pass dependencies on (there is no memory model;
//!   ASTRA-sim skips metadata and invalid nodes too). `STORAGE_NODE`,
//!   `BATCH_NODE`, `CHECKPOINT_NODE` and unknown types are refused.
//! - `ctrl_deps` and `data_deps` are both "after this node is done"; they
//!   name nodes of the same file. Other fields (`start_time_micros`, inputs,
//!   outputs, other attributes) are ignored.
//!
//! **Ranks** are the cluster's GPUs in order: the file of rank r runs on GPU
//! r. A trace set must have exactly one rank per GPU of the cluster (a
//! traced job describes the whole machine it ran on; idle GPUs would make
//! cluster keys change nothing without saying so).
//!
//! **Bounds**: a file of at most [`MAX_FILE_BYTES`], at most [`MAX_NODES`]
//! nodes over all ranks, sizes of at most [`MAX_COMM_BYTES`] and durations of
//! at most [`MAX_DURATION_US`], all checked before anything is allocated for them.

use std::collections::{BTreeMap, HashMap};

use prost::Message;

use crate::collective::{CollectiveError, CollectiveOp};
use crate::config::AlgoChoice;
use crate::dag::{Dag, Dep, TaskId, TaskKind};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

use super::Comm;

/// The GPU model a compute node with `num_ops` (and no duration) runs on:
/// the training workload's ([`crate::workload::compute_time`]), so a
/// trace's FLOPs cost what the built-in training step charges for them.
/// Time = max(num_ops / (peak · efficiency), tensor_size / HBM bandwidth):
/// ASTRA-sim's roofline (operational intensity num_ops / tensor_size, perf
/// min(peak, bandwidth × intensity)) with the peak derated by the
/// efficiency, as fabricsim's kernels are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roofline {
    /// FLOP/s the kernels reach: dense bf16 peak × `workload.gpu.efficiency`
    /// (Chakra's `num_ops` carries no data type; bf16 is the training default).
    pub flops_per_s: f64,
    /// HBM bandwidth, bytes per second.
    pub hbm_bytes_per_s: f64,
}

impl Roofline {
    /// The roofline of a GPU model at bf16.
    pub fn of(gpu: &crate::config::workload::GpuSpec) -> Roofline {
        Roofline {
            flops_per_s: gpu.peak(crate::config::workload::Precision::Bf16) * gpu.efficiency,
            hbm_bytes_per_s: gpu.hbm_bytes_per_s,
        }
    }

    /// Time of `ops` operations touching `bytes` of memory (picoseconds,
    /// rounded as [`SimTime::from_secs_f64`] rounds).
    pub fn time(&self, ops: u64, bytes: u64) -> SimTime {
        let f = ops as f64 / self.flops_per_s;
        let m = bytes as f64 / self.hbm_bytes_per_s;
        SimTime::from_secs_f64(f.max(m))
    }
}

/// Largest trace file read, bytes (64 MiB, as other input files).
pub const MAX_FILE_BYTES: u64 = crate::budget::MAX_INPUT_BYTES;
/// Most nodes over all ranks of a trace set.
pub const MAX_NODES: usize = 1 << 22;
/// Largest `comm_size`, bytes (1 PiB).
pub const MAX_COMM_BYTES: u64 = 1 << 50;
/// Longest compute duration, microseconds (one simulated day).
pub const MAX_DURATION_US: u64 = 86_400_000_000;
/// Most ranks of a trace set.
pub const MAX_RANKS: usize = 1 << 20;

/// `ChakraProtoMsg.NodeType` values.
pub mod node_type {
    /// `INVALID_NODE`
    pub const INVALID: i32 = 0;
    /// `METADATA_NODE`
    pub const METADATA: i32 = 1;
    /// `MEM_LOAD_NODE`
    pub const MEM_LOAD: i32 = 2;
    /// `MEM_STORE_NODE`
    pub const MEM_STORE: i32 = 3;
    /// `COMP_NODE`
    pub const COMP: i32 = 4;
    /// `COMM_SEND_NODE`
    pub const COMM_SEND: i32 = 5;
    /// `COMM_RECV_NODE`
    pub const COMM_RECV: i32 = 6;
    /// `COMM_COLL_NODE`
    pub const COMM_COLL: i32 = 7;
}

/// `ChakraProtoMsg.CollectiveCommType` values.
pub mod comm_type {
    /// `ALL_REDUCE`
    pub const ALL_REDUCE: i64 = 0;
    /// `REDUCE`
    pub const REDUCE: i64 = 1;
    /// `ALL_GATHER`
    pub const ALL_GATHER: i64 = 2;
    /// `GATHER`
    pub const GATHER: i64 = 3;
    /// `SCATTER`
    pub const SCATTER: i64 = 4;
    /// `BROADCAST`
    pub const BROADCAST: i64 = 5;
    /// `ALL_TO_ALL`
    pub const ALL_TO_ALL: i64 = 6;
    /// `REDUCE_SCATTER`
    pub const REDUCE_SCATTER: i64 = 7;
    /// `REDUCE_SCATTER_BLOCK`
    pub const REDUCE_SCATTER_BLOCK: i64 = 8;
    /// `BARRIER`
    pub const BARRIER: i64 = 9;
}

/// The protobuf messages of `et_def.proto`, written by hand (field numbers
/// as in the schema).
pub mod proto {
    /// `DoubleList`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DoubleList {
        /// values
        #[prost(double, repeated, tag = "1")]
        pub values: Vec<f64>,
    }
    /// `FloatList`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FloatList {
        /// values
        #[prost(float, repeated, tag = "1")]
        pub values: Vec<f32>,
    }
    /// `Int32List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Int32List {
        /// values
        #[prost(int32, repeated, tag = "1")]
        pub values: Vec<i32>,
    }
    /// `Int64List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Int64List {
        /// values
        #[prost(int64, repeated, tag = "1")]
        pub values: Vec<i64>,
    }
    /// `Uint32List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Uint32List {
        /// values
        #[prost(uint32, repeated, tag = "1")]
        pub values: Vec<u32>,
    }
    /// `Uint64List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Uint64List {
        /// values
        #[prost(uint64, repeated, tag = "1")]
        pub values: Vec<u64>,
    }
    /// `Sint32List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sint32List {
        /// values
        #[prost(sint32, repeated, tag = "1")]
        pub values: Vec<i32>,
    }
    /// `Sint64List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sint64List {
        /// values
        #[prost(sint64, repeated, tag = "1")]
        pub values: Vec<i64>,
    }
    /// `Fixed32List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Fixed32List {
        /// values
        #[prost(fixed32, repeated, tag = "1")]
        pub values: Vec<u32>,
    }
    /// `Fixed64List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Fixed64List {
        /// values
        #[prost(fixed64, repeated, tag = "1")]
        pub values: Vec<u64>,
    }
    /// `Sfixed32List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sfixed32List {
        /// values
        #[prost(sfixed32, repeated, tag = "1")]
        pub values: Vec<i32>,
    }
    /// `Sfixed64List`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sfixed64List {
        /// values
        #[prost(sfixed64, repeated, tag = "1")]
        pub values: Vec<i64>,
    }
    /// `BoolList`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BoolList {
        /// values
        #[prost(bool, repeated, tag = "1")]
        pub values: Vec<bool>,
    }
    /// `StringList`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StringList {
        /// values
        #[prost(string, repeated, tag = "1")]
        pub values: Vec<String>,
    }
    /// `BytesList`
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BytesList {
        /// values
        #[prost(bytes = "vec", repeated, tag = "1")]
        pub values: Vec<Vec<u8>>,
    }

    /// `AttributeProto`: a named value.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttributeProto {
        /// Its name (`comm_type`, `comm_size`, `pg_name`, ...).
        #[prost(string, tag = "1")]
        pub name: String,
        /// Free text.
        #[prost(string, tag = "2")]
        pub doc_string: String,
        /// The value (`oneof value`, fields 3 to 32).
        #[prost(
            oneof = "Value",
            tags = "3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32"
        )]
        pub value: Option<Value>,
    }

    /// `AttributeProto.value`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// double_val
        #[prost(double, tag = "3")]
        DoubleVal(f64),
        /// double_list
        #[prost(message, tag = "4")]
        DoubleList(DoubleList),
        /// float_val
        #[prost(float, tag = "5")]
        FloatVal(f32),
        /// float_list
        #[prost(message, tag = "6")]
        FloatList(FloatList),
        /// int32_val
        #[prost(int32, tag = "7")]
        Int32Val(i32),
        /// int32_list
        #[prost(message, tag = "8")]
        Int32List(Int32List),
        /// int64_val
        #[prost(int64, tag = "9")]
        Int64Val(i64),
        /// int64_list
        #[prost(message, tag = "10")]
        Int64List(Int64List),
        /// uint32_val
        #[prost(uint32, tag = "11")]
        Uint32Val(u32),
        /// uint32_list
        #[prost(message, tag = "12")]
        Uint32List(Uint32List),
        /// uint64_val
        #[prost(uint64, tag = "13")]
        Uint64Val(u64),
        /// uint64_list
        #[prost(message, tag = "14")]
        Uint64List(Uint64List),
        /// sint32_val
        #[prost(sint32, tag = "15")]
        Sint32Val(i32),
        /// sint32_list
        #[prost(message, tag = "16")]
        Sint32List(Sint32List),
        /// sint64_val
        #[prost(sint64, tag = "17")]
        Sint64Val(i64),
        /// sint64_list
        #[prost(message, tag = "18")]
        Sint64List(Sint64List),
        /// fixed32_val
        #[prost(fixed32, tag = "19")]
        Fixed32Val(u32),
        /// fixed32_list
        #[prost(message, tag = "20")]
        Fixed32List(Fixed32List),
        /// fixed64_val
        #[prost(fixed64, tag = "21")]
        Fixed64Val(u64),
        /// fixed64_list
        #[prost(message, tag = "22")]
        Fixed64List(Fixed64List),
        /// sfixed32_val
        #[prost(sfixed32, tag = "23")]
        Sfixed32Val(i32),
        /// sfixed32_list
        #[prost(message, tag = "24")]
        Sfixed32List(Sfixed32List),
        /// sfixed64_val
        #[prost(sfixed64, tag = "25")]
        Sfixed64Val(i64),
        /// sfixed64_list
        #[prost(message, tag = "26")]
        Sfixed64List(Sfixed64List),
        /// bool_val
        #[prost(bool, tag = "27")]
        BoolVal(bool),
        /// bool_list
        #[prost(message, tag = "28")]
        BoolList(BoolList),
        /// string_val
        #[prost(string, tag = "29")]
        StringVal(String),
        /// string_list
        #[prost(message, tag = "30")]
        StringList(StringList),
        /// bytes_val
        #[prost(bytes = "vec", tag = "31")]
        BytesVal(Vec<u8>),
        /// bytes_list
        #[prost(message, tag = "32")]
        BytesList(BytesList),
    }

    /// `GlobalMetadata`: the first message of a file.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GlobalMetadata {
        /// Schema version text.
        #[prost(string, tag = "1")]
        pub version: String,
        /// Attributes.
        #[prost(message, repeated, tag = "2")]
        pub attr: Vec<AttributeProto>,
    }

    /// `IOInfo`: a node's inputs or outputs, as text.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct IoInfo {
        /// values
        #[prost(string, tag = "1")]
        pub values: String,
        /// shapes
        #[prost(string, tag = "2")]
        pub shapes: String,
        /// types
        #[prost(string, tag = "3")]
        pub types: String,
    }

    /// `Node`: one operation of a rank.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Node {
        /// Its id, unique in the file.
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its name.
        #[prost(string, tag = "2")]
        pub name: String,
        /// `NodeType` (see [`super::node_type`]).
        #[prost(int32, tag = "3")]
        pub r#type: i32,
        /// Nodes that must be done first (control).
        #[prost(uint64, repeated, tag = "4")]
        pub ctrl_deps: Vec<u64>,
        /// Nodes that must be done first (data).
        #[prost(uint64, repeated, tag = "5")]
        pub data_deps: Vec<u64>,
        /// When it started in the traced run, microseconds.
        #[prost(uint64, tag = "6")]
        pub start_time_micros: u64,
        /// How long it ran, microseconds.
        #[prost(uint64, tag = "7")]
        pub duration_micros: u64,
        /// Inputs.
        #[prost(message, optional, tag = "8")]
        pub inputs: Option<IoInfo>,
        /// Outputs.
        #[prost(message, optional, tag = "9")]
        pub outputs: Option<IoInfo>,
        /// Attributes.
        #[prost(message, repeated, tag = "10")]
        pub attr: Vec<AttributeProto>,
    }

    impl AttributeProto {
        /// An attribute holding an `int64_val`.
        pub fn int64(name: &str, v: i64) -> AttributeProto {
            AttributeProto {
                name: name.into(),
                doc_string: String::new(),
                value: Some(Value::Int64Val(v)),
            }
        }
        /// An attribute holding a `uint64_val`.
        pub fn uint64(name: &str, v: u64) -> AttributeProto {
            AttributeProto {
                name: name.into(),
                doc_string: String::new(),
                value: Some(Value::Uint64Val(v)),
            }
        }
        /// An attribute holding a `string_val`.
        pub fn string(name: &str, v: &str) -> AttributeProto {
            AttributeProto {
                name: name.into(),
                doc_string: String::new(),
                value: Some(Value::StringVal(v.into())),
            }
        }
        /// An attribute holding a `bool_val`.
        pub fn boolean(name: &str, v: bool) -> AttributeProto {
            AttributeProto {
                name: name.into(),
                doc_string: String::new(),
                value: Some(Value::BoolVal(v)),
            }
        }
    }
}

use proto::{AttributeProto, Value};

/// Why a trace cannot be read or matched: the file, the node (its id), the
/// field, what was found and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {field}: found {found}, expected {expected}", node.map(|n| format!(": node {n}")).unwrap_or_default())]
pub struct ChakraError {
    /// The trace file.
    pub file: String,
    /// The node's id, when one node is at fault.
    pub node: Option<u64>,
    /// The field or attribute (`comm_size`, `data_deps`, `type`, ...).
    pub field: String,
    /// What was found.
    pub found: String,
    /// What is expected.
    pub expected: String,
}

/// What one node of a trace does, once read.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeWork {
    /// Keep the rank's GPU busy this long.
    Compute(SimTime),
    /// A collective over the ranks of process group `pg` (`None`: every rank).
    Collective {
        /// The operation.
        op: CollectiveOp,
        /// Bytes, nccl-tests meaning.
        bytes: u64,
        /// `pg_name`.
        pg: Option<String>,
    },
    /// Send `bytes` to rank `dst` with `tag`.
    Send {
        /// Receiving rank.
        dst: u32,
        /// Tag.
        tag: u64,
        /// Bytes.
        bytes: u64,
    },
    /// Receive `bytes` from rank `src` with `tag`.
    Recv {
        /// Sending rank.
        src: u32,
        /// Tag.
        tag: u64,
        /// Bytes.
        bytes: u64,
    },
    /// No work (metadata, memory load / store, invalid): only passes dependencies on.
    Nothing,
}

/// One node of a rank's trace, read.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceNode {
    /// Its id in the file.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// What it does.
    pub work: NodeWork,
    /// Indices (in the rank's node list) of the nodes it waits for.
    pub deps: Vec<u32>,
}

/// One rank's trace, read.
#[derive(Clone, Debug, PartialEq)]
pub struct RankTrace {
    /// The file it came from (as shown in errors).
    pub file: String,
    /// Its nodes, in file order.
    pub nodes: Vec<TraceNode>,
    /// Compute nodes timed from `num_ops` by the GPU model ([`Roofline`]).
    pub ops_timed: usize,
}

/// One operation of a trace set once matched across ranks.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanOp {
    /// A compute node (or a node of no work, duration zero, `gpu_busy` false).
    Compute {
        /// Rank.
        rank: u32,
        /// Duration.
        duration: SimTime,
        /// Occupies the compute stream (false for nodes of no work).
        busy: bool,
    },
    /// A matched collective.
    Collective {
        /// Operation.
        op: CollectiveOp,
        /// Bytes.
        bytes: u64,
        /// Members, ascending.
        ranks: Vec<u32>,
    },
    /// A matched send / receive pair.
    Transfer {
        /// Sender.
        src: u32,
        /// Receiver.
        dst: u32,
        /// Bytes.
        bytes: u64,
    },
}

/// A trace set matched across ranks, its operations in dependency order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ChakraPlan {
    /// Ranks of the set.
    pub ranks: u32,
    /// Operations, each after every operation it depends on.
    pub ops: Vec<PlanOp>,
    /// Per operation: (operation it waits for, wait only until sent).
    pub deps: Vec<Vec<(u32, bool)>>,
    /// Per operation: its label (the first node's name, or its kind).
    pub labels: Vec<String>,
    /// Nodes read over all ranks.
    pub nodes: usize,
    /// Compute nodes over all ranks timed from `num_ops` by the GPU model
    /// (what makes `[workload.gpu]` matter to a trace).
    pub ops_timed: usize,
}

fn err(file: &str, node: Option<u64>, field: &str, found: String, expected: &str) -> ChakraError {
    ChakraError {
        file: file.to_string(),
        node,
        field: field.to_string(),
        found,
        expected: expected.to_string(),
    }
}

/// Reads the varint length prefix at `*pos` and returns the message bytes after it.
fn next_message<'a>(
    file: &str,
    bytes: &'a [u8],
    pos: &mut usize,
    what: &str,
    last_id: Option<u64>,
) -> Result<&'a [u8], ChakraError> {
    let at = *pos;
    let mut rest = &bytes[at..];
    let before = rest.len();
    let len = prost::encoding::decode_varint(&mut rest).map_err(|_| {
        err(
            file,
            last_id,
            "length prefix",
            format!(
                "a malformed or truncated varint at byte {at} (before the {what}{})",
                last_id
                    .map(|i| format!(" after node {i}"))
                    .unwrap_or_default()
            ),
            "a varint length before each message (Chakra's length-delimited stream)",
        )
    })?;
    let used = before - rest.len();
    if len > rest.len() as u64 {
        return Err(err(
            file,
            last_id,
            "length prefix",
            format!(
                "the {what} at byte {at}{} declares {len} bytes, only {} remain (truncated file)",
                last_id
                    .map(|i| format!(" (after node {i})"))
                    .unwrap_or_default(),
                rest.len()
            ),
            "a whole message after each length prefix",
        ));
    }
    *pos = at + used + len as usize;
    Ok(&rest[..len as usize])
}

fn attr<'a>(n: &'a proto::Node, name: &str) -> Option<&'a AttributeProto> {
    n.attr.iter().find(|a| a.name == name)
}

/// A whole number attribute (any integer encoding, not negative).
fn uint_attr(file: &str, n: &proto::Node, name: &str) -> Result<Option<u64>, ChakraError> {
    let Some(a) = attr(n, name) else {
        return Ok(None);
    };
    let v: Option<i128> = match &a.value {
        Some(Value::Int32Val(v) | Value::Sint32Val(v) | Value::Sfixed32Val(v)) => Some(*v as i128),
        Some(Value::Int64Val(v) | Value::Sint64Val(v) | Value::Sfixed64Val(v)) => Some(*v as i128),
        Some(Value::Uint32Val(v) | Value::Fixed32Val(v)) => Some(*v as i128),
        Some(Value::Uint64Val(v) | Value::Fixed64Val(v)) => Some(*v as i128),
        _ => None,
    };
    match v {
        Some(v) if v >= 0 => Ok(Some(v as u64)),
        Some(v) => Err(err(
            file,
            Some(n.id),
            name,
            v.to_string(),
            "a whole number ≥ 0",
        )),
        None => Err(err(
            file,
            Some(n.id),
            name,
            format!("{:?}", a.value),
            "an integer value (int32/int64/uint32/uint64/sint/fixed)",
        )),
    }
}

fn required(file: &str, n: &proto::Node, name: &str, expected: &str) -> Result<u64, ChakraError> {
    uint_attr(file, n, name)?.ok_or_else(|| err(file, Some(n.id), name, "nothing".into(), expected))
}

fn size_attr(file: &str, n: &proto::Node) -> Result<u64, ChakraError> {
    let b = required(file, n, "comm_size", "the message size in bytes")?;
    if b > MAX_COMM_BYTES {
        return Err(err(
            file,
            Some(n.id),
            "comm_size",
            b.to_string(),
            "at most 2^50 bytes (1 PiB)",
        ));
    }
    Ok(b)
}

fn rank_attr(file: &str, n: &proto::Node, name: &str, ranks: usize) -> Result<u32, ChakraError> {
    let r = required(file, n, name, "a rank of the trace set")?;
    if r >= ranks as u64 {
        return Err(err(
            file,
            Some(n.id),
            name,
            r.to_string(),
            &format!("a rank between 0 and {} (the trace set's files)", ranks - 1),
        ));
    }
    Ok(r as u32)
}

/// Reads one rank's trace file (`bytes`, shown as `file` in errors) of a set
/// of `ranks` files; `rank` is its own rank.
///
/// # Errors
/// A located [`ChakraError`]: a truncated or malformed message, an unknown or
/// unsupported node type or collective, a missing or out-of-range attribute,
/// a duplicate id, a dependency on an unknown node.
pub fn read_rank(
    file: &str,
    bytes: &[u8],
    rank: u32,
    ranks: usize,
    roofline: Option<Roofline>,
) -> Result<RankTrace, ChakraError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(err(
            file,
            None,
            "size",
            format!("{} bytes", bytes.len()),
            "a trace file of at most 64 MiB",
        ));
    }
    let mut pos = 0usize;
    if bytes.is_empty() {
        return Err(err(
            file,
            None,
            "GlobalMetadata",
            "an empty file".into(),
            "a length-delimited GlobalMetadata message, then the nodes",
        ));
    }
    let meta = next_message(file, bytes, &mut pos, "GlobalMetadata", None)?;
    proto::GlobalMetadata::decode(meta).map_err(|e| {
        err(
            file,
            None,
            "GlobalMetadata",
            format!("an undecodable message ({e})"),
            "a GlobalMetadata message (et_def.proto)",
        )
    })?;
    let mut raw = Vec::new();
    let mut last_id = None;
    while pos < bytes.len() {
        if raw.len() >= MAX_NODES {
            return Err(err(
                file,
                last_id,
                "nodes",
                format!("more than {MAX_NODES}"),
                "at most 2^22 nodes",
            ));
        }
        let m = next_message(file, bytes, &mut pos, "node", last_id)?;
        let n = proto::Node::decode(m).map_err(|e| {
            err(
                file,
                last_id,
                "Node",
                format!(
                    "an undecodable message after node {} ({e})",
                    last_id.map(|i| i.to_string()).unwrap_or("(none)".into())
                ),
                "a Node message (et_def.proto)",
            )
        })?;
        last_id = Some(n.id);
        raw.push(n);
    }
    let mut index: HashMap<u64, u32> = HashMap::with_capacity(raw.len());
    for (i, n) in raw.iter().enumerate() {
        if index.insert(n.id, i as u32).is_some() {
            return Err(err(
                file,
                Some(n.id),
                "id",
                format!("{} again", n.id),
                "an id no other node of the file has",
            ));
        }
    }
    let mut nodes = Vec::with_capacity(raw.len());
    for n in &raw {
        let work = node_work(file, n, rank, ranks, roofline)?;
        let mut deps = Vec::with_capacity(n.ctrl_deps.len() + n.data_deps.len());
        for (field, list) in [("ctrl_deps", &n.ctrl_deps), ("data_deps", &n.data_deps)] {
            for d in list {
                match index.get(d) {
                    Some(_) if *d == n.id => {
                        return Err(err(
                            file,
                            Some(n.id),
                            field,
                            format!("{d} (the node itself)"),
                            "other nodes of the file",
                        ));
                    }
                    Some(&i) => deps.push(i),
                    None => {
                        return Err(err(
                            file,
                            Some(n.id),
                            field,
                            format!("{d}, which no node of the file has as id"),
                            "the ids of nodes of the same file",
                        ))
                    }
                }
            }
        }
        deps.sort_unstable();
        deps.dedup();
        nodes.push(TraceNode {
            id: n.id,
            name: n.name.clone(),
            work,
            deps,
        });
    }
    let ops_timed = raw
        .iter()
        .filter(|n| {
            n.r#type == node_type::COMP
                && n.duration_micros == 0
                && attr(n, "duration_ps").is_none()
                && attr(n, "num_ops").is_some()
        })
        .count();
    Ok(RankTrace {
        file: file.to_string(),
        nodes,
        ops_timed,
    })
}

fn node_work(
    file: &str,
    n: &proto::Node,
    rank: u32,
    ranks: usize,
    roofline: Option<Roofline>,
) -> Result<NodeWork, ChakraError> {
    Ok(match n.r#type {
        node_type::INVALID | node_type::METADATA | node_type::MEM_LOAD | node_type::MEM_STORE => {
            NodeWork::Nothing
        }
        node_type::COMP => {
            let ps = uint_attr(file, n, "duration_ps")?;
            let d = match ps {
                Some(ps) if ps <= MAX_DURATION_US * 1_000_000 => SimTime(ps),
                Some(ps) => {
                    return Err(err(
                        file,
                        Some(n.id),
                        "duration_ps",
                        ps.to_string(),
                        "at most one simulated day",
                    ))
                }
                None if n.duration_micros > MAX_DURATION_US => {
                    return Err(err(
                        file,
                        Some(n.id),
                        "duration_micros",
                        n.duration_micros.to_string(),
                        "at most one simulated day (86,400,000,000 us)",
                    ))
                }
                None if n.duration_micros > 0 => SimTime::from_us(n.duration_micros),
                None => {
                    let ops = uint_attr(file, n, "num_ops")?;
                    match (ops, roofline) {
                        (Some(ops), Some(g)) => {
                            let bytes = uint_attr(file, n, "tensor_size")?.unwrap_or(0);
                            let d = g.time(ops, bytes);
                            if d > SimTime::from_us(MAX_DURATION_US) {
                                return Err(err(
                                    file,
                                    Some(n.id),
                                    "num_ops",
                                    format!("{ops} operations ({} on the GPU model)", d),
                                    "at most one simulated day of work",
                                ));
                            }
                            d
                        }
                        (Some(_), None) => {
                            return Err(err(
                                file,
                                Some(n.id),
                                "duration_micros",
                                "0 with num_ops only".into(),
                                "a duration (duration_micros or duration_ps), or a GPU model to turn num_ops into time ([workload.gpu] of the scenario)",
                            ))
                        }
                        (None, _) => {
                            return Err(err(
                                file,
                                Some(n.id),
                                "duration_micros",
                                "0, and neither duration_ps nor num_ops".into(),
                                "a compute node's time: duration_micros > 0, the attribute duration_ps (picoseconds; 0 for a node of no time), or num_ops (FLOPs, with tensor_size bytes for the memory roof)",
                            ))
                        }
                    }
                }
            };
            NodeWork::Compute(d)
        }
        node_type::COMM_COLL => {
            let t = required(file, n, "comm_type", "a CollectiveCommType")?;
            let op = match t as i64 {
                comm_type::ALL_REDUCE => CollectiveOp::AllReduce,
                comm_type::ALL_GATHER => CollectiveOp::AllGather,
                comm_type::REDUCE_SCATTER => CollectiveOp::ReduceScatter,
                comm_type::BROADCAST => CollectiveOp::Broadcast,
                comm_type::ALL_TO_ALL => CollectiveOp::AllToAll,
                other => {
                    let name = match other {
                        comm_type::REDUCE => "REDUCE".to_string(),
                        comm_type::GATHER => "GATHER".to_string(),
                        comm_type::SCATTER => "SCATTER".to_string(),
                        comm_type::REDUCE_SCATTER_BLOCK => "REDUCE_SCATTER_BLOCK".to_string(),
                        comm_type::BARRIER => "BARRIER".to_string(),
                        v => format!("{v} (not a CollectiveCommType)"),
                    };
                    return Err(err(
                        file,
                        Some(n.id),
                        "comm_type",
                        name,
                        "ALL_REDUCE (0), ALL_GATHER (2), BROADCAST (5), ALL_TO_ALL (6) or REDUCE_SCATTER (7)",
                    ));
                }
            };
            let bytes = size_attr(file, n)?;
            let pg = match attr(n, "pg_name").map(|a| &a.value) {
                None => None,
                Some(Some(Value::StringVal(s))) => Some(s.clone()),
                Some(v) => {
                    return Err(err(
                        file,
                        Some(n.id),
                        "pg_name",
                        format!("{v:?}"),
                        "a string_val naming the process group",
                    ))
                }
            };
            NodeWork::Collective { op, bytes, pg }
        }
        node_type::COMM_SEND | node_type::COMM_RECV => {
            let send = n.r#type == node_type::COMM_SEND;
            let bytes = size_attr(file, n)?;
            let tag = uint_attr(file, n, "comm_tag")?.unwrap_or(0);
            let (peer_key, own_key) = if send {
                ("comm_dst", "comm_src")
            } else {
                ("comm_src", "comm_dst")
            };
            let peer = rank_attr(file, n, peer_key, ranks)?;
            if let Some(own) = uint_attr(file, n, own_key)? {
                if own != rank as u64 {
                    return Err(err(
                        file,
                        Some(n.id),
                        own_key,
                        own.to_string(),
                        &format!("this file's rank, {rank}"),
                    ));
                }
            }
            if peer == rank {
                return Err(err(
                    file,
                    Some(n.id),
                    peer_key,
                    format!("{peer} (this file's own rank)"),
                    "another rank",
                ));
            }
            if send {
                NodeWork::Send {
                    dst: peer,
                    tag,
                    bytes,
                }
            } else {
                NodeWork::Recv {
                    src: peer,
                    tag,
                    bytes,
                }
            }
        }
        other => {
            let name = match other {
                8 => "STORAGE_NODE (8)".to_string(),
                9 => "BATCH_NODE (9)".to_string(),
                10 => "CHECKPOINT_NODE (10)".to_string(),
                v => format!("{v} (not a NodeType)"),
            };
            return Err(err(
                file,
                Some(n.id),
                "type",
                name,
                "COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, or METADATA / MEM_LOAD / MEM_STORE / INVALID (no time)",
            ));
        }
    })
}

/// Matches the ranks' collectives and point-to-point pairs and orders every
/// operation after those it waits for (see the module doc).
///
/// # Errors
/// A located [`ChakraError`]: a collective whose group members disagree on its
/// type or size or have different numbers of collectives, a send or receive
/// without its peer, a dependency cycle (within a rank or across ranks through
/// collectives and transfers, i.e. a deadlock), too many nodes.
pub fn plan(ranks: &[RankTrace]) -> Result<ChakraPlan, ChakraError> {
    let total: usize = ranks.iter().map(|r| r.nodes.len()).sum();
    if total > MAX_NODES {
        return Err(err(
            ranks.first().map(|r| r.file.as_str()).unwrap_or(""),
            None,
            "nodes",
            format!("{total} over all ranks"),
            "at most 2^22 nodes",
        ));
    }
    // unit (rank, index) -> operation
    let mut op_of: Vec<Vec<u32>> = ranks
        .iter()
        .map(|r| vec![u32::MAX; r.nodes.len()])
        .collect();
    let mut ops: Vec<PlanOp> = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    let mut members: Vec<Vec<(u32, u32)>> = Vec::new();
    // collectives per group: group -> per rank, the node indices in file order
    let mut groups: BTreeMap<Option<&str>, BTreeMap<u32, Vec<u32>>> = BTreeMap::new();
    let mut sends: BTreeMap<(u32, u32, u64), Vec<u32>> = BTreeMap::new();
    let mut recvs: BTreeMap<(u32, u32, u64), Vec<u32>> = BTreeMap::new();
    for (r, t) in ranks.iter().enumerate() {
        let r = r as u32;
        for (i, n) in t.nodes.iter().enumerate() {
            let i = i as u32;
            match &n.work {
                NodeWork::Collective { pg, .. } => groups
                    .entry(pg.as_deref())
                    .or_default()
                    .entry(r)
                    .or_default()
                    .push(i),
                NodeWork::Send { dst, tag, .. } => {
                    sends.entry((r, *dst, *tag)).or_default().push(i)
                }
                NodeWork::Recv { src, tag, .. } => {
                    recvs.entry((*src, r, *tag)).or_default().push(i)
                }
                NodeWork::Compute(d) => {
                    op_of[r as usize][i as usize] = ops.len() as u32;
                    ops.push(PlanOp::Compute {
                        rank: r,
                        duration: *d,
                        busy: true,
                    });
                    labels.push(n.name.clone());
                    members.push(vec![(r, i)]);
                }
                NodeWork::Nothing => {
                    op_of[r as usize][i as usize] = ops.len() as u32;
                    ops.push(PlanOp::Compute {
                        rank: r,
                        duration: SimTime::ZERO,
                        busy: false,
                    });
                    labels.push(n.name.clone());
                    members.push(vec![(r, i)]);
                }
            }
        }
    }
    let all: Vec<u32> = (0..ranks.len() as u32).collect();
    for (pg, per_rank) in &groups {
        let group: Vec<u32> = match pg {
            Some(_) => per_rank.keys().copied().collect(),
            None => all.clone(),
        };
        let count = |r: u32| per_rank.get(&r).map_or(0, |v| v.len());
        let most = group.iter().map(|&r| count(r)).max().unwrap_or(0);
        for k in 0..most {
            // the first member that has a k-th collective is the reference
            let Some(&(r0, i0)) = group
                .iter()
                .find_map(|&r| per_rank.get(&r).and_then(|v| v.get(k)).map(|&i| (r, i)))
                .as_ref()
            else {
                continue;
            };
            let n0 = &ranks[r0 as usize].nodes[i0 as usize];
            let NodeWork::Collective { op, bytes, .. } = n0.work else {
                continue;
            };
            let group_name = pg
                .map(|p| format!("pg_name {p:?}"))
                .unwrap_or("the world (no pg_name)".into());
            let mut m = Vec::with_capacity(group.len());
            for &r in &group {
                let Some(&i) = per_rank.get(&r).and_then(|v| v.get(k)) else {
                    return Err(err(
                        &ranks[r0 as usize].file,
                        Some(n0.id),
                        "comm_type",
                        format!(
                            "collective #{} of {group_name}, which rank {r} ({}) lacks: it has {} collectives of that group",
                            k + 1,
                            ranks[r as usize].file,
                            count(r)
                        ),
                        "the same collectives, in the same order, on every rank of the group (NCCL matches them in order)",
                    ));
                };
                let n = &ranks[r as usize].nodes[i as usize];
                if let NodeWork::Collective {
                    op: o, bytes: b, ..
                } = n.work
                {
                    if o != op || b != bytes {
                        return Err(err(
                            &ranks[r as usize].file,
                            Some(n.id),
                            "comm_type",
                            format!(
                                "{} of {b} bytes as collective #{} of {group_name}",
                                o.name(),
                                k + 1
                            ),
                            &format!(
                                "{} of {bytes} bytes, as rank {r0} has it (node {} of {})",
                                op.name(),
                                n0.id,
                                ranks[r0 as usize].file
                            ),
                        ));
                    }
                }
                op_of[r as usize][i as usize] = ops.len() as u32;
                m.push((r, i));
            }
            ops.push(PlanOp::Collective {
                op,
                bytes,
                ranks: group.clone(),
            });
            labels.push(if n0.name.is_empty() {
                op.name().to_string()
            } else {
                n0.name.clone()
            });
            members.push(m);
        }
    }
    for (&(s, d, tag), list) in &sends {
        let empty = Vec::new();
        let rl = recvs.get(&(s, d, tag)).unwrap_or(&empty);
        for (k, &i) in list.iter().enumerate() {
            let n = &ranks[s as usize].nodes[i as usize];
            let Some(&j) = rl.get(k) else {
                return Err(err(
                    &ranks[s as usize].file,
                    Some(n.id),
                    "comm_dst",
                    format!(
                        "send #{} to rank {d} with tag {tag}, which rank {d} ({}) never receives ({} receives)",
                        k + 1,
                        ranks[d as usize].file,
                        rl.len()
                    ),
                    "a COMM_RECV_NODE on the destination with comm_src = this rank and the same tag for every send, in order",
                ));
            };
            let rn = &ranks[d as usize].nodes[j as usize];
            let (NodeWork::Send { bytes, .. }, NodeWork::Recv { bytes: rb, .. }) =
                (&n.work, &rn.work)
            else {
                continue;
            };
            if bytes != rb {
                return Err(err(
                    &ranks[d as usize].file,
                    Some(rn.id),
                    "comm_size",
                    format!("{rb} bytes"),
                    &format!(
                        "{bytes} bytes, as the matching send (node {} of {}) has",
                        n.id, ranks[s as usize].file
                    ),
                ));
            }
            op_of[s as usize][i as usize] = ops.len() as u32;
            op_of[d as usize][j as usize] = ops.len() as u32;
            ops.push(PlanOp::Transfer {
                src: s,
                dst: d,
                bytes: *bytes,
            });
            labels.push(if n.name.is_empty() {
                "send".into()
            } else {
                n.name.clone()
            });
            members.push(vec![(s, i), (d, j)]);
        }
    }
    for (&(s, d, tag), list) in &recvs {
        let sent = sends.get(&(s, d, tag)).map_or(0, |v| v.len());
        if let Some(&j) = list.get(sent) {
            let rn = &ranks[d as usize].nodes[j as usize];
            return Err(err(
                &ranks[d as usize].file,
                Some(rn.id),
                "comm_src",
                format!(
                    "receive #{} from rank {s} with tag {tag}, which rank {s} ({}) never sends ({sent} sends)",
                    sent + 1,
                    ranks[s as usize].file
                ),
                "a COMM_SEND_NODE on the source with comm_dst = this rank and the same tag for every receive, in order",
            ));
        }
    }
    // operation dependencies
    let n_ops = ops.len();
    let mut deps: Vec<Vec<(u32, bool)>> = vec![Vec::new(); n_ops];
    for (o, m) in members.iter().enumerate() {
        for &(r, i) in m {
            for &d in &ranks[r as usize].nodes[i as usize].deps {
                let p = op_of[r as usize][d as usize];
                let on_sent = matches!(
                    ranks[r as usize].nodes[d as usize].work,
                    NodeWork::Send { .. }
                );
                if p as usize != o {
                    deps[o].push((p, on_sent));
                } else {
                    let n = &ranks[r as usize].nodes[i as usize];
                    return Err(err(
                        &ranks[r as usize].file,
                        Some(n.id),
                        "data_deps",
                        format!(
                            "node {} of the same operation",
                            ranks[r as usize].nodes[d as usize].id
                        ),
                        "dependencies on earlier operations",
                    ));
                }
            }
        }
        deps[o].sort_unstable();
        deps[o].dedup();
    }
    // Kahn's order, smallest operation first
    let mut waiting: Vec<u32> = deps.iter().map(|d| d.len() as u32).collect();
    let mut waiters: Vec<Vec<u32>> = vec![Vec::new(); n_ops];
    for (o, ds) in deps.iter().enumerate() {
        for &(p, _) in ds {
            waiters[p as usize].push(o as u32);
        }
    }
    let mut ready: std::collections::BTreeSet<u32> = (0..n_ops as u32)
        .filter(|&o| waiting[o as usize] == 0)
        .collect();
    let mut order = Vec::with_capacity(n_ops);
    while let Some(o) = ready.pop_first() {
        order.push(o);
        for &w in &waiters[o as usize] {
            waiting[w as usize] -= 1;
            if waiting[w as usize] == 0 {
                ready.insert(w);
            }
        }
    }
    if order.len() < n_ops {
        // walk back along unmet dependencies until an operation repeats
        let stuck = |o: u32| waiting[o as usize] > 0;
        let mut at = (0..n_ops as u32).find(|&o| stuck(o)).unwrap_or(0);
        let mut seen = vec![usize::MAX; n_ops];
        let mut path = Vec::new();
        while seen[at as usize] == usize::MAX {
            seen[at as usize] = path.len();
            path.push(at);
            at = deps[at as usize]
                .iter()
                .map(|&(p, _)| p)
                .find(|&p| stuck(p))
                .unwrap_or(at);
        }
        let mut cycle = path.split_off(seen[at as usize]);
        cycle.reverse();
        // an operation by its nodes (a collective's first four members)
        let name = |o: u32| {
            let m = &members[o as usize];
            let mut v: Vec<String> = m
                .iter()
                .take(4)
                .map(|&(r, i)| format!("rank {r} node {}", ranks[r as usize].nodes[i as usize].id))
                .collect();
            if m.len() > 4 {
                v.push(format!("{} more", m.len() - 4));
            }
            format!("({})", v.join(", "))
        };
        let (r, i) = members[cycle[0] as usize][0];
        let names: Vec<String> = cycle.iter().map(|&o| name(o)).collect();
        return Err(err(
            &ranks[r as usize].file,
            Some(ranks[r as usize].nodes[i as usize].id),
            "data_deps",
            format!(
                "a dependency cycle: {} -> {} (through dependencies and matched collectives / transfers: a deadlock)",
                names.join(" -> "),
                names[0]
            ),
            "dependencies that can all be met",
        ));
    }
    let mut new_index = vec![0u32; n_ops];
    for (k, &o) in order.iter().enumerate() {
        new_index[o as usize] = k as u32;
    }
    Ok(ChakraPlan {
        ranks: ranks.len() as u32,
        ops: order.iter().map(|&o| ops[o as usize].clone()).collect(),
        deps: order
            .iter()
            .map(|&o| {
                deps[o as usize]
                    .iter()
                    .map(|&(p, s)| (new_index[p as usize], s))
                    .collect()
            })
            .collect(),
        labels: order.iter().map(|&o| labels[o as usize].clone()).collect(),
        nodes: total,
        ops_timed: ranks.iter().map(|r| r.ops_timed).sum(),
    })
}

/// Lowers `plan` into `dag` on `topo` with `algo` for the collectives (see the
/// module doc). Operations are grouped in the result by kind (`compute`,
/// each collective's name, `p2p`).
///
/// # Errors
/// When no algorithm can run a collective on its group.
pub fn lower(
    plan: &ChakraPlan,
    topo: &Topology,
    algo: AlgoChoice,
    dag: &mut Dag,
) -> Result<(), CollectiveError> {
    let identity: Vec<GpuId> = (0..plan.ranks).map(GpuId).collect();
    lower_on(plan, topo, algo, &identity, dag)
}

/// [`lower`] with rank `r` on `gpus[r]` (a job's GPUs in placement order):
/// compute, sends and every collective's group are those GPUs on the real
/// topology.
///
/// # Errors
/// When no algorithm can run a collective on its group.
///
/// # Panics
/// When `gpus` holds fewer GPUs than the plan has ranks (a job's validation
/// requires exactly as many).
pub fn lower_on(
    plan: &ChakraPlan,
    topo: &Topology,
    algo: AlgoChoice,
    gpus: &[GpuId],
    dag: &mut Dag,
) -> Result<(), CollectiveError> {
    assert!(
        gpus.len() >= plan.ranks as usize,
        "a trace rank without a GPU"
    );
    let at = |r: u32| gpus[r as usize];
    let mut comm = Comm::new(topo);
    let mut done: Vec<Option<TaskId>> = vec![None; plan.ops.len()];
    let mut sent_of: Vec<Option<TaskId>> = vec![None; plan.ops.len()];
    let mut last_compute: Vec<Option<TaskId>> = vec![None; plan.ranks as usize];
    let mut op_index: HashMap<&'static str, u32> = HashMap::new();
    let mut group = |dag: &mut Dag, name: &'static str| match op_index.get(name) {
        Some(&o) => dag.set_op(o),
        None => {
            let o = dag.begin_op(name);
            op_index.insert(name, o);
        }
    };
    let mut after: Vec<Dep> = Vec::new();
    for (k, op) in plan.ops.iter().enumerate() {
        after.clear();
        for &(p, on_sent) in &plan.deps[k] {
            let p = p as usize;
            match (on_sent, sent_of[p], done[p]) {
                (true, Some(s), _) => after.push(Dep::Sent(s)),
                (_, _, Some(d)) => after.push(Dep::Done(d)),
                _ => {}
            }
        }
        let task = match op {
            PlanOp::Compute {
                rank,
                duration,
                busy,
            } => {
                group(dag, "compute");
                if *busy {
                    if let Some(l) = last_compute[*rank as usize] {
                        after.push(Dep::Done(l));
                    }
                    let t = dag.add(
                        TaskKind::Compute {
                            gpu: at(*rank),
                            duration: *duration,
                        },
                        &after,
                    );
                    last_compute[*rank as usize] = Some(t);
                    t
                } else {
                    dag.marker(&after)
                }
            }
            PlanOp::Collective { op, bytes, ranks } => {
                group(dag, op.name());
                let members: Vec<GpuId> = ranks.iter().map(|&r| at(r)).collect();
                match comm.lower(dag, *op, *bytes, &members, algo, &after)? {
                    Some(m) => m,
                    None => dag.marker(&after),
                }
            }
            PlanOp::Transfer { src, dst, bytes } => {
                group(dag, "p2p");
                let t = dag.transfer(at(*src), at(*dst), *bytes, &after);
                sent_of[k] = Some(t);
                t
            }
        };
        done[k] = Some(task);
    }
    Ok(())
}

/// Reads the trace set `files` (rank r is `files[r]`; `read` returns a
/// file's bytes) and matches it ([`read_rank`], [`plan`]).
///
/// # Errors
/// The first file that cannot be read or decoded, or a set that cannot be matched.
pub fn load(
    files: &[String],
    read: impl Fn(&str) -> Result<Vec<u8>, String>,
) -> Result<ChakraPlan, ChakraError> {
    load_with(files, read, None)
}

/// [`load`] with a GPU model for compute nodes that carry `num_ops` instead
/// of a duration (see [`Roofline`]); without one such a node is an error.
///
/// # Errors
/// As [`load`].
pub fn load_with(
    files: &[String],
    read: impl Fn(&str) -> Result<Vec<u8>, String>,
    roofline: Option<Roofline>,
) -> Result<ChakraPlan, ChakraError> {
    if files.len() > MAX_RANKS {
        return Err(err(
            "",
            None,
            "traces",
            format!("{} files", files.len()),
            "at most 2^20 ranks",
        ));
    }
    let mut ranks = Vec::with_capacity(files.len());
    let mut total = 0usize;
    for (r, f) in files.iter().enumerate() {
        let bytes = read(f).map_err(|e| {
            err(
                f,
                None,
                "file",
                format!("a file that cannot be read ({e})"),
                "a readable Chakra trace (.et) of at most 64 MiB",
            )
        })?;
        let t = read_rank(f, &bytes, r as u32, files.len(), roofline)?;
        total += t.nodes.len();
        if total > MAX_NODES {
            return Err(err(
                f,
                None,
                "nodes",
                format!("{total} nodes over ranks 0..={r}"),
                "at most 2^22 nodes over all ranks",
            ));
        }
        ranks.push(t);
    }
    plan(&ranks)
}

/// The files of a trace directory: `<prefix>.<rank>.et` for ranks 0, 1, ...
/// with one prefix, sorted by rank.
///
/// # Errors
/// A directory that cannot be listed, without `.et` files, with several
/// prefixes, or with a rank missing (named).
pub fn rank_files(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, ChakraError> {
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|e| {
        err(
            &shown,
            None,
            "traces",
            format!("a directory that cannot be listed ({e})"),
            "a directory of <prefix>.<rank>.et files",
        )
    })?;
    let mut by_rank: BTreeMap<u64, std::path::PathBuf> = BTreeMap::new();
    let mut prefix: Option<String> = None;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".et") else {
            continue;
        };
        let Some((p, r)) = stem.rsplit_once('.') else {
            continue;
        };
        let Ok(rank) = r.parse::<u64>() else {
            continue;
        };
        match &prefix {
            None => prefix = Some(p.to_string()),
            Some(q) if q != p => {
                return Err(err(
                    &shown,
                    None,
                    "traces",
                    format!("files of two prefixes, {q:?} and {p:?}"),
                    "one trace set per directory (one <prefix>), or list the files",
                ))
            }
            _ => {}
        }
        if by_rank.len() >= MAX_RANKS {
            return Err(err(
                &shown,
                None,
                "traces",
                "more than 2^20 files".into(),
                "at most 2^20 ranks",
            ));
        }
        by_rank.insert(rank, e.path());
    }
    let Some(prefix) = prefix else {
        return Err(err(
            &shown,
            None,
            "traces",
            "no <prefix>.<rank>.et file".into(),
            "a directory of <prefix>.<rank>.et files (ranks 0, 1, ...)",
        ));
    };
    for (want, &have) in by_rank.keys().enumerate() {
        if have != want as u64 {
            return Err(err(
                &format!("{shown}/{prefix}.{want}.et"),
                None,
                "file",
                "no such file (a missing rank)".into(),
                &format!("one file per rank 0..{}", by_rank.len()),
            ));
        }
    }
    Ok(by_rank.into_values().collect())
}

/// One collective of a training step, as the step's builder lowered it.
#[derive(Clone, Debug, PartialEq)]
pub struct CollRecord {
    /// The operation.
    pub op: CollectiveOp,
    /// Bytes (nccl-tests meaning).
    pub bytes: u64,
    /// Its GPUs.
    pub ranks: Vec<GpuId>,
    /// What it waited for.
    pub after: Vec<Dep>,
    /// Its first task in the DAG.
    pub first: TaskId,
    /// Its completion marker.
    pub end: TaskId,
}

/// Encodes one rank's nodes as a Chakra file (metadata, then the nodes, each
/// length-delimited).
pub fn encode_file(nodes: &[proto::Node]) -> Vec<u8> {
    let meta = proto::GlobalMetadata {
        version: "0.0.4".into(),
        attr: vec![AttributeProto::string(
            "generator",
            "fabricsim export-chakra",
        )],
    };
    let mut out = Vec::new();
    // encoding into a Vec cannot fail (it grows)
    let _ = meta.encode_length_delimited(&mut out);
    for n in nodes {
        let _ = n.encode_length_delimited(&mut out);
    }
    out
}

/// The Chakra trace of a training step, one file's bytes per GPU: compute
/// tasks as `COMP_NODE` (with `duration_micros` rounded to whole microseconds
/// and the exact `duration_ps`), each collective as one `COMM_COLL_NODE` per
/// member (`comm_type`, `comm_size`, `pg_name` numbering the distinct groups
/// in order of first use), pipeline transfers as a `COMM_SEND_NODE` on the
/// sender and a `COMM_RECV_NODE` (no dependencies: posted up front) on the
/// receiver. A node depends on the nodes of its own rank that the DAG task
/// waited for; a wait on another GPU's task, which a trace cannot express,
/// is dropped (the collectives it takes part in join the ranks again).
///
/// # Errors
/// When a collective cannot run on a group; with `replicas = "one"` (the
/// step then holds one replica's GPUs, not every rank's).
pub fn export_training(
    s: &crate::config::TrainingSpec,
    topo: &Topology,
) -> Result<Vec<Vec<u8>>, String> {
    if s.plan.replicas == crate::config::workload::Replicas::One {
        return Err("workload.parallel.replicas = \"one\" builds one data-parallel replica; a trace needs every rank: use replicas = \"all\"".into());
    }
    let (step, colls) = super::training::build_logged(s, topo).map_err(|e| e.to_string())?;
    let dag = &step.dag;
    let n_gpus = (s.plan.dp * s.plan.tp * s.plan.pp) as usize;
    // what each task is
    #[derive(Clone, Copy)]
    enum Role {
        Plain,
        InColl,
        CollEnd(usize),
    }
    let mut role = vec![Role::Plain; dag.len()];
    for (c, r) in colls.iter().enumerate() {
        for t in r.first.0..r.end.0 {
            role[t as usize] = Role::InColl;
        }
        role[r.end.0 as usize] = Role::CollEnd(c);
    }
    let mut pg_names: HashMap<Vec<GpuId>, String> = HashMap::new();
    let mut files: Vec<Vec<proto::Node>> = vec![Vec::new(); n_gpus];
    // node id on each rank of each task (compute: its GPU; transfer: src and dst)
    let mut node_on: HashMap<(u32, u32), u64> = HashMap::new();
    let mut resolved: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    fn resolve(
        dag: &Dag,
        role: &[Role],
        colls: &[CollRecord],
        node_on: &HashMap<(u32, u32), u64>,
        memo: &mut HashMap<(u32, u32), Vec<u64>>,
        task: TaskId,
        rank: u32,
    ) -> Vec<u64> {
        if let Some(&id) = node_on.get(&(task.0, rank)) {
            return vec![id];
        }
        if let Some(v) = memo.get(&(task.0, rank)) {
            return v.clone();
        }
        let out = match (role[task.0 as usize], dag.kind(task.0 as usize)) {
            (Role::CollEnd(c), _) => {
                let _ = &colls[c];
                Vec::new()
            }
            (Role::Plain, TaskKind::Marker) => {
                let mut v: Vec<u64> = dag
                    .deps_of(task)
                    .flat_map(|d| {
                        let (Dep::Sent(p) | Dep::Done(p)) = d;
                        resolve(dag, role, colls, node_on, memo, p, rank)
                    })
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }
            _ => Vec::new(),
        };
        memo.insert((task.0, rank), out.clone());
        out
    }
    for (i, t) in dag.tasks().enumerate() {
        let id = TaskId(i as u32);
        let deps_for = |rank: u32,
                        node_on: &HashMap<(u32, u32), u64>,
                        memo: &mut HashMap<(u32, u32), Vec<u64>>,
                        deps: &mut dyn Iterator<Item = Dep>| {
            let mut v: Vec<u64> = Vec::new();
            for d in deps {
                let (Dep::Sent(p) | Dep::Done(p)) = d;
                v.extend(resolve(dag, &role, &colls, node_on, memo, p, rank));
            }
            v.sort_unstable();
            v.dedup();
            v
        };
        match (role[i], t.kind) {
            (Role::InColl, _) => {}
            (Role::CollEnd(c), _) => {
                let r = &colls[c];
                let next = pg_names.len();
                let pg = pg_names
                    .entry(r.ranks.clone())
                    .or_insert_with(|| next.to_string())
                    .clone();
                for g in &r.ranks {
                    let deps = deps_for(g.0, &node_on, &mut resolved, &mut r.after.iter().copied());
                    let f = &mut files[g.0 as usize];
                    let nid = f.len() as u64;
                    f.push(proto::Node {
                        id: nid,
                        name: format!("{}_{}", r.op.name(), c),
                        r#type: node_type::COMM_COLL,
                        data_deps: deps,
                        attr: vec![
                            AttributeProto::int64("comm_type", coll_type(r.op)),
                            AttributeProto::int64("comm_size", r.bytes as i64),
                            AttributeProto::string("pg_name", &pg),
                            AttributeProto::boolean("is_cpu_op", false),
                        ],
                        ..Default::default()
                    });
                    node_on.insert((i as u32, g.0), nid);
                }
            }
            (Role::Plain, TaskKind::Compute { gpu, duration }) => {
                let deps = deps_for(gpu.0, &node_on, &mut resolved, &mut dag.deps_of(id));
                let f = &mut files[gpu.0 as usize];
                let nid = f.len() as u64;
                f.push(proto::Node {
                    id: nid,
                    name: format!("{}_{i}", dag.ops[t.op as usize].label),
                    r#type: node_type::COMP,
                    data_deps: deps,
                    duration_micros: (duration.0 + 500_000) / 1_000_000,
                    attr: vec![
                        AttributeProto::uint64("duration_ps", duration.0),
                        AttributeProto::boolean("is_cpu_op", false),
                    ],
                    ..Default::default()
                });
                node_on.insert((i as u32, gpu.0), nid);
            }
            (Role::Plain, TaskKind::Transfer { src, dst, bytes }) => {
                let deps = deps_for(src.0, &node_on, &mut resolved, &mut dag.deps_of(id));
                let f = &mut files[src.0 as usize];
                let nid = f.len() as u64;
                let p2p_attr = |tag: i64| {
                    vec![
                        AttributeProto::int64("comm_src", src.0 as i64),
                        AttributeProto::int64("comm_dst", dst.0 as i64),
                        AttributeProto::int64("comm_size", bytes as i64),
                        AttributeProto::int64("comm_tag", tag),
                        AttributeProto::boolean("is_cpu_op", false),
                    ]
                };
                f.push(proto::Node {
                    id: nid,
                    name: format!("send_{i}"),
                    r#type: node_type::COMM_SEND,
                    data_deps: deps,
                    attr: p2p_attr(0),
                    ..Default::default()
                });
                node_on.insert((i as u32, src.0), nid);
                let f = &mut files[dst.0 as usize];
                let nid = f.len() as u64;
                f.push(proto::Node {
                    id: nid,
                    name: format!("recv_{i}"),
                    r#type: node_type::COMM_RECV,
                    attr: p2p_attr(0),
                    ..Default::default()
                });
                node_on.insert((i as u32, dst.0), nid);
            }
            (Role::Plain, _) => {}
        }
    }
    Ok(files.iter().map(|f| encode_file(f)).collect())
}

/// The `CollectiveCommType` of an operation.
pub fn coll_type(op: CollectiveOp) -> i64 {
    match op {
        CollectiveOp::AllReduce => comm_type::ALL_REDUCE,
        CollectiveOp::AllGather => comm_type::ALL_GATHER,
        CollectiveOp::ReduceScatter => comm_type::REDUCE_SCATTER,
        CollectiveOp::Broadcast => comm_type::BROADCAST,
        CollectiveOp::AllToAll => comm_type::ALL_TO_ALL,
    }
}

/// The checked `workload.kind = "chakra"`.
#[derive(Clone, Debug, PartialEq)]
pub struct ChakraSpec {
    /// The trace files, rank order, as read (resolved against the scenario's directory).
    pub files: Vec<String>,
    /// The traces matched across ranks.
    pub plan: std::sync::Arc<ChakraPlan>,
    /// `workload.algorithm` for every collective.
    pub algorithm: AlgoChoice,
    /// `[workload.gpu]`: the GPU model that timed the `num_ops` compute
    /// nodes (already applied to the plan; kept for the report).
    pub gpu: crate::config::workload::GpuSpec,
}

impl ChakraSpec {
    /// Rough number of DAG tasks the traces lower into (a collective of n
    /// ranks as 2·n·(n−1) transfers, a ring all-reduce's count), for the budget.
    pub fn estimated_tasks(&self) -> f64 {
        self.plan
            .ops
            .iter()
            .map(|o| match o {
                PlanOp::Collective { ranks, .. } => {
                    let n = ranks.len() as f64;
                    2.0 * n * (n - 1.0).max(0.0) + n + 1.0
                }
                _ => 1.0,
            })
            .sum()
    }

    /// Bytes the traces move: each collective's size once per member, each transfer once.
    pub fn estimated_bytes(&self) -> f64 {
        self.plan
            .ops
            .iter()
            .map(|o| match o {
                PlanOp::Collective { ranks, bytes, .. } => 2.0 * ranks.len() as f64 * *bytes as f64,
                PlanOp::Transfer { bytes, .. } => *bytes as f64,
                PlanOp::Compute { .. } => 0.0,
            })
            .sum()
    }

    /// The DAG of the traces on `topo`.
    ///
    /// # Errors
    /// When no algorithm can run a collective on its group.
    pub fn build(&self, topo: &Topology) -> Result<Dag, CollectiveError> {
        let mut dag = Dag::new();
        lower(&self.plan, topo, self.algorithm, &mut dag)?;
        Ok(dag)
    }

    /// The DAG of the traces on `gpus` of `topo` (rank `r` on `gpus[r]`).
    ///
    /// # Errors
    /// When no algorithm can run a collective on its group.
    pub fn build_on(&self, topo: &Topology, gpus: &[GpuId]) -> Result<Dag, CollectiveError> {
        let mut dag = Dag::new();
        lower_on(&self.plan, topo, self.algorithm, gpus, &mut dag)?;
        Ok(dag)
    }
}

/// The Chakra traces of a training scenario ([`export_training`] on the
/// topology of its fidelity).
///
/// # Errors
/// A scenario that is not a training step, whose topology cannot be built,
/// or that [`export_training`] refuses.
pub fn export_scenario(s: &crate::config::Scenario) -> Result<Vec<Vec<u8>>, String> {
    let crate::config::WorkloadSpec::Training(t) = s.workload() else {
        return Err(format!(
            "workload.kind = {:?}: only a training step (kind = \"training\") is exported",
            s.workload().kind_name()
        ));
    };
    let topo = s
        .build_topology_for(s.fidelity())
        .map_err(|e| e.to_string())?;
    export_training(t, &topo)
}
