//! The run as a timeline a person can zoom into: the Chrome trace-event JSON
//! format (`{"traceEvents": [...]}`), which Perfetto (ui.perfetto.dev) and
//! `chrome://tracing` open as they are.
//!
//! Layout, as in Perfetto's process/thread tracks:
//!
//! * one process per host (`host H`), one thread per GPU (`GPU G`): compute
//!   tasks are complete slices (`ph: "X"`) on the GPU's thread, and each
//!   transfer it sends is an async slice (`ph: "b"`/`"e"`, category `send`,
//!   named `→ GPU D`) under its host, with bytes, destination, operation,
//!   completion and ideal time as arguments: async, because a GPU's sends
//!   overlap (an all-to-all posts all of them at once) and complete slices on
//!   one thread must nest;
//! * transfers between network nodes (a SHARP reduction's hops) under a
//!   `fabric` process;
//! * one `operations` process whose async slices are the DAG's operations (a
//!   collective, a training phase) and each run of a sweep (`allreduce 1MiB`),
//!   so the sizes of a sweep follow each other as they do in the report's
//!   link timeline. A size the analytical fidelity costs in closed form has its
//!   run slice only: it has no tasks.
//!
//! Times are microseconds with picosecond decimals (the format's unit).
//! A run with more than [`MAX_SLICES`] task slices keeps the first ones and says
//! how many it left out, in the file (`fabricsim.slices_left_out`) and on
//! stderr: a timeline is for looking at, and a browser cannot open more.

use std::fmt::Write;

use crate::backend::RunOutput;
use crate::dag::{Dag, TaskKind};
use crate::topology::Topology;
use crate::units::SimTime;

/// Most task slices kept in one timeline: about 140 MB of JSON (1,000,000
/// made 287 MB), which Perfetto's web UI still opens. Operation and run slices
/// are always kept, so every run of a sweep stays on the timeline.
pub const MAX_SLICES: usize = 500_000;

/// The `pid` of the operations track and of the fabric's transfers (hosts use
/// their index, which is below 2³¹).
const OPS_PID: u64 = 1 << 32;
const FABRIC_PID: u64 = (1 << 32) + 1;

#[derive(Clone, Debug, PartialEq)]
enum SliceKind {
    /// A GPU's compute task.
    Compute { gpu: u32 },
    /// A transfer from GPU `src` to GPU `dst` of `bytes`.
    Send {
        src: u32,
        dst: u32,
        bytes: u64,
        ideal_ps: u64,
    },
    /// A transfer between network nodes.
    NetSend { src: u32, dst: u32, bytes: u64 },
    /// An operation of a DAG, or a whole run.
    Op,
}

#[derive(Clone, Debug, PartialEq)]
struct Slice {
    kind: SliceKind,
    /// Index into [`Trace::names`]: the operation or run label.
    label: u32,
    start_ps: u64,
    dur_ps: u64,
}

/// A timeline being built run by run, then written as trace-event JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    slices: Vec<Slice>,
    names: Vec<String>,
    /// Index of each name in `names` (a training DAG has thousands of operations).
    name_index: std::collections::HashMap<String, u32>,
    /// Host of each GPU, to place it under its process.
    host_of_gpu: Vec<u32>,
    /// Slices left out past [`MAX_SLICES`].
    left_out: u64,
}

impl Trace {
    /// An empty timeline for the GPUs of `topo`.
    pub fn new(topo: &Topology) -> Trace {
        Trace {
            host_of_gpu: (0..topo.num_gpus())
                .map(|g| topo.host_of(crate::topology::GpuId(g)))
                .collect(),
            ..Trace::default()
        }
    }

    /// Slices kept.
    pub fn len(&self) -> usize {
        self.slices.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// Slices left out past [`MAX_SLICES`].
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    fn name(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.name_index.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_string());
        self.name_index.insert(s.to_string(), i);
        i
    }

    fn push(&mut self, s: Slice) {
        if self.slices.len() < MAX_SLICES || s.kind == SliceKind::Op {
            self.slices.push(s);
        } else {
            self.left_out += 1;
        }
    }

    /// A run costed in closed form: its slice only, from `offset`.
    pub fn add_closed_form(&mut self, label: &str, offset: SimTime, time: SimTime) {
        let label = self.name(label);
        self.push(Slice {
            kind: SliceKind::Op,
            label,
            start_ps: offset.0,
            dur_ps: time.0,
        });
    }

    /// One backend run of `dag` named `label`, starting at `offset` on the
    /// timeline: the run, its operations and every task it completed.
    pub fn add_run(&mut self, label: &str, offset: SimTime, dag: &Dag, out: &RunOutput) {
        let run = self.name(label);
        self.push(Slice {
            kind: SliceKind::Op,
            label: run,
            start_ps: offset.0,
            dur_ps: out.makespan.0,
        });
        let op_names: Vec<u32> = dag.ops.iter().map(|o| self.name(&o.label)).collect();
        if dag.ops.len() > 1 {
            for (o, t) in out.op_timing.iter().enumerate() {
                if t.end > t.start {
                    self.push(Slice {
                        kind: SliceKind::Op,
                        label: op_names.get(o).copied().unwrap_or(run),
                        start_ps: offset.0.saturating_add(t.start.0),
                        dur_ps: t.end.0 - t.start.0,
                    });
                }
            }
        }
        if out.task_start.len() != dag.len() || out.task_done.len() != dag.len() {
            return;
        }
        // ideal times come in task order, one per transfer that completed
        let mut ideal = out.transfer_ideal.iter();
        for (i, task) in dag.tasks().enumerate() {
            let (start, done) = (out.task_start[i], out.task_done[i]);
            if done == SimTime::MAX || done < start {
                continue;
            }
            let kind = match task.kind {
                TaskKind::Compute { gpu, .. } => SliceKind::Compute { gpu: gpu.0 },
                TaskKind::Transfer { src, dst, bytes } => SliceKind::Send {
                    src: src.0,
                    dst: dst.0,
                    bytes,
                    ideal_ps: ideal.next().map_or(0, |t| t.0),
                },
                TaskKind::NetTransfer { src, dst, bytes } => {
                    ideal.next();
                    SliceKind::NetSend {
                        src: src.0,
                        dst: dst.0,
                        bytes,
                    }
                }
                TaskKind::Marker => continue,
            };
            self.push(Slice {
                kind,
                label: op_names.get(task.op as usize).copied().unwrap_or(run),
                start_ps: offset.0.saturating_add(start.0),
                dur_ps: done.0 - start.0,
            });
        }
    }

    /// The timeline as trace-event JSON.
    pub fn to_json(&self) -> String {
        let us = |ps: u64| format!("{}.{:06}", ps / 1_000_000, ps % 1_000_000);
        let q = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into());
        let mut out = String::with_capacity(self.slices.len() * 160 + 4096);
        out.push_str("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        let mut first = true;
        let mut line = |out: &mut String, s: String| {
            if !first {
                out.push_str(",\n");
            }
            first = false;
            out.push_str(&s);
        };
        // names of the processes and threads that appear
        let mut hosts: Vec<u32> = Vec::new();
        let mut gpus: Vec<u32> = Vec::new();
        for s in &self.slices {
            match s.kind {
                SliceKind::Compute { gpu } | SliceKind::Send { src: gpu, .. } => gpus.push(gpu),
                _ => {}
            }
        }
        gpus.sort_unstable();
        gpus.dedup();
        for &g in &gpus {
            let h = self.host_of_gpu.get(g as usize).copied().unwrap_or(0);
            hosts.push(h);
            line(
                &mut out,
                format!(
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{h},\"tid\":{g},\"args\":{{\"name\":\"GPU {g}\"}}}}"
                ),
            );
        }
        hosts.sort_unstable();
        hosts.dedup();
        for &h in &hosts {
            line(
                &mut out,
                format!(
                    "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{h},\"args\":{{\"name\":\"host {h}\"}}}}"
                ),
            );
            line(
                &mut out,
                format!(
                    "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{h},\"args\":{{\"sort_index\":{}}}}}",
                    h as u64 + 2
                ),
            );
        }
        for (pid, name, idx) in [(OPS_PID, "operations", 0), (FABRIC_PID, "fabric", 1)] {
            line(
                &mut out,
                format!(
                    "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":\"{name}\"}}}}"
                ),
            );
            line(
                &mut out,
                format!(
                    "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"args\":{{\"sort_index\":{idx}}}}}"
                ),
            );
        }
        for (id, s) in self.slices.iter().enumerate() {
            let label = q(&self.names[s.label as usize]);
            let (ts, te) = (us(s.start_ps), us(s.start_ps.saturating_add(s.dur_ps)));
            match s.kind {
                SliceKind::Compute { gpu } => {
                    let h = self.host_of_gpu.get(gpu as usize).copied().unwrap_or(0);
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"X\",\"cat\":\"compute\",\"name\":{label},\"pid\":{h},\"tid\":{gpu},\"ts\":{ts},\"dur\":{}}}",
                            us(s.dur_ps)
                        ),
                    );
                }
                SliceKind::Send {
                    src,
                    dst,
                    bytes,
                    ideal_ps,
                } => {
                    let h = self.host_of_gpu.get(src as usize).copied().unwrap_or(0);
                    let name = q(&format!("→ GPU {dst}"));
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"b\",\"cat\":\"send\",\"id\":{id},\"name\":{name},\"pid\":{h},\"tid\":{src},\"ts\":{ts},\"args\":{{\"op\":{label},\"src_gpu\":{src},\"dst_gpu\":{dst},\"bytes\":{bytes},\"fct_us\":{},\"ideal_us\":{}}}}}",
                            us(s.dur_ps),
                            us(ideal_ps)
                        ),
                    );
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"e\",\"cat\":\"send\",\"id\":{id},\"name\":{name},\"pid\":{h},\"tid\":{src},\"ts\":{te}}}"
                        ),
                    );
                }
                SliceKind::NetSend { src, dst, bytes } => {
                    let name = q(&format!("node {src} → node {dst}"));
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"b\",\"cat\":\"net\",\"id\":{id},\"name\":{name},\"pid\":{FABRIC_PID},\"tid\":0,\"ts\":{ts},\"args\":{{\"op\":{label},\"bytes\":{bytes}}}}}"
                        ),
                    );
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"e\",\"cat\":\"net\",\"id\":{id},\"name\":{name},\"pid\":{FABRIC_PID},\"tid\":0,\"ts\":{te}}}"
                        ),
                    );
                }
                SliceKind::Op => {
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"b\",\"cat\":\"op\",\"id\":{id},\"name\":{label},\"pid\":{OPS_PID},\"tid\":0,\"ts\":{ts}}}"
                        ),
                    );
                    line(
                        &mut out,
                        format!(
                            "{{\"ph\":\"e\",\"cat\":\"op\",\"id\":{id},\"name\":{label},\"pid\":{OPS_PID},\"tid\":0,\"ts\":{te}}}"
                        ),
                    );
                }
            }
        }
        let _ = write!(
            out,
            "\n],\"otherData\":{{\"fabricsim.slices\":{},\"fabricsim.slices_left_out\":{}}}}}\n",
            self.slices.len(),
            self.left_out
        );
        out
    }
}
