//! The seam between workloads and backends: a DAG of tasks.
//!
//! A workload (a collective sweep, a training step) becomes a [`Dag`] of
//! [`Task`]s: transfers between GPUs, compute on a GPU, and markers that only
//! join dependencies. A task starts when all its dependencies are met; a
//! dependency waits either for a task to be **sent** (its last byte left the
//! source — a sender may then post its next message) or **done** (its last byte
//! arrived — the receiver may use the data). Backends execute the DAG with a
//! [`DagRunner`], which tracks what is ready.
//!
//! A [`TaskKind::NetTransfer`] moves bytes between two *adjacent* nodes of the
//! topology rather than between two GPUs: a GPU and the edge switch of its NIC
//! (over PCIe and the NIC's cable), or two switches joined by a link. In-network
//! reductions (SHARP, [`crate::collective::sharp`]) use it, because there a switch
//! is an endpoint that combines data. Its path is
//! [`crate::topology::Topology::hop_path`]; its latency adds the receiving switch's
//! forwarding (aggregation) latency ([`crate::topology::Topology::hop_latency`]).
//! The analytical and flow backends execute it; the packet level refuses it.
//!
//! Tasks carry the index of the operation ([`OpInfo`]) they belong to, so the
//! result can report each collective's time.

use crate::topology::{GpuId, NodeId};
use crate::units::SimTime;

/// Index of a task in a [`Dag`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

/// A dependency on another task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dep {
    /// Met when the task's last byte has left its source (for compute and markers: when done).
    Sent(TaskId),
    /// Met when the task is complete (last byte delivered, compute finished).
    Done(TaskId),
}

impl Dep {
    fn pack(self) -> u32 {
        match self {
            Dep::Sent(t) => t.0 << 1 | 1,
            Dep::Done(t) => t.0 << 1,
        }
    }
}

/// One unit of work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TaskKind {
    /// Move `bytes` from GPU `src` to GPU `dst`.
    Transfer {
        /// Sending GPU.
        src: GpuId,
        /// Receiving GPU.
        dst: GpuId,
        /// Payload bytes.
        bytes: u64,
    },
    /// Move `bytes` between two adjacent nodes (GPU ↔ the edge switch of its NIC,
    /// or switch ↔ switch over one link); see the module doc.
    NetTransfer {
        /// Sending node.
        src: NodeId,
        /// Receiving node.
        dst: NodeId,
        /// Payload bytes.
        bytes: u64,
    },
    /// Keep GPU `gpu` busy for `duration` (picoseconds).
    Compute {
        /// The GPU.
        gpu: GpuId,
        /// How long, picoseconds.
        duration: SimTime,
    },
    /// No work: completes as soon as its dependencies are met.
    Marker,
}

impl TaskKind {
    /// True for the kinds that move bytes ([`TaskKind::Transfer`], [`TaskKind::NetTransfer`]).
    pub fn is_transfer(&self) -> bool {
        matches!(
            self,
            TaskKind::Transfer { .. } | TaskKind::NetTransfer { .. }
        )
    }
    /// Payload bytes a transfer moves; 0 for compute and markers.
    pub fn transfer_bytes(&self) -> u64 {
        match *self {
            TaskKind::Transfer { bytes, .. } | TaskKind::NetTransfer { bytes, .. } => bytes,
            _ => 0,
        }
    }
}

/// A task and the operation it belongs to: the view [`Dag::task`] and
/// [`Dag::tasks`] return. The DAG does not store it as is (32 B): it keeps
/// the kind packed in 16 B and the rest in side tables (see [`Dag`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Task {
    /// What to do.
    pub kind: TaskKind,
    /// Index into [`Dag::ops`].
    pub op: u32,
    /// Index into the DAG's software latencies ([`Dag::software_latency`]); 0 is none.
    pub sw: u8,
    /// The queue pair of its (source, destination) connection that carries a
    /// transfer (NCCL_IB_QPS_PER_CONNECTION); each is its own flow for ECMP.
    pub qp: u8,
    /// The traffic class of a transfer plus one; 0 = the workload's class
    /// (see `PacketConfig::classes`; only the packet level schedules classes).
    pub class: u8,
}

/// A [`TaskKind`] and a task's software latency and queue pair in 16 B (the
/// enum alone takes 24): its two ids in `a` and `b`; in `c` from the top, the
/// kind (2 bits), the software latency's index (8), the queue pair (8) and
/// the payload bytes or duration (46). A value that does not fit 46 bits (64
/// TiB, or a compute of 70 s) is [`WIDE`] here and kept whole in [`Dag`]'s
/// `wide` table. The software latency is inline because every transfer of a
/// collective has one (NCCL's per-hop latency): a side table of it cost a
/// binary search per started transfer, +15% CPU on the 16,384-GPU benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packed {
    a: u32,
    b: u32,
    c: u64,
}
const _: () = assert!(std::mem::size_of::<Packed>() == 16);

/// Largest value `Packed::c` holds inline; also the marker of a wide one.
const WIDE: u64 = (1 << VALUE_BITS) - 1;
/// Bits of `Packed::c` holding the value.
const VALUE_BITS: u32 = 46;
const SW_SHIFT: u32 = 54;
const QP_SHIFT: u32 = 46;
const TAG_TRANSFER: u64 = 0;
const TAG_NET: u64 = 1;
const TAG_COMPUTE: u64 = 2;
const TAG_MARKER: u64 = 3;

impl Packed {
    /// The packed kind (no software latency, queue pair 0) and, when its value
    /// is wider than [`VALUE_BITS`], that value.
    fn pack(kind: TaskKind) -> (Packed, Option<u64>) {
        let (tag, a, b, v) = match kind {
            TaskKind::Transfer { src, dst, bytes } => (TAG_TRANSFER, src.0, dst.0, bytes),
            TaskKind::NetTransfer { src, dst, bytes } => (TAG_NET, src.0, dst.0, bytes),
            TaskKind::Compute { gpu, duration } => (TAG_COMPUTE, gpu.0, 0, duration.ps()),
            TaskKind::Marker => (TAG_MARKER, 0, 0, 0),
        };
        let wide = (v >= WIDE).then_some(v);
        let c = tag << 62 | v.min(WIDE);
        const _: () = assert!(SW_SHIFT + 8 == 62 && QP_SHIFT + 8 == SW_SHIFT);
        (Packed { a, b, c }, wide)
    }

    /// Index of the software latency ([`Dag::software_latency`]).
    #[inline]
    fn sw(self) -> u8 {
        (self.c >> SW_SHIFT) as u8
    }

    /// Queue pair of the connection.
    #[inline]
    fn qp(self) -> u8 {
        (self.c >> QP_SHIFT) as u8
    }

    fn set_byte(&mut self, shift: u32, v: u8) {
        self.c = self.c & !(0xff << shift) | u64::from(v) << shift;
    }

    /// The kind, its value read from `wide` when it did not fit.
    #[inline]
    fn unpack(self, wide: impl FnOnce() -> u64) -> TaskKind {
        let v = match self.c & WIDE {
            WIDE => wide(),
            v => v,
        };
        match self.c >> 62 {
            TAG_TRANSFER => TaskKind::Transfer {
                src: GpuId(self.a),
                dst: GpuId(self.b),
                bytes: v,
            },
            TAG_NET => TaskKind::NetTransfer {
                src: NodeId(self.a),
                dst: NodeId(self.b),
                bytes: v,
            },
            TAG_COMPUTE => TaskKind::Compute {
                gpu: GpuId(self.a),
                duration: SimTime(v),
            },
            _ => TaskKind::Marker,
        }
    }
}

/// Shifts the GPU ids of a packed transfer or compute by `delta` (a repeat
/// of a block, see [`Dag::begin_block`]).
#[inline]
fn shift_gpus(p: &mut Packed, delta: u32) {
    match p.c >> 62 {
        TAG_TRANSFER => {
            p.a = p.a.wrapping_add(delta);
            p.b = p.b.wrapping_add(delta);
        }
        TAG_COMPUTE => p.a = p.a.wrapping_add(delta),
        _ => {}
    }
}

/// A task's rarely set field (its traffic class), by task id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Attrs {
    task: u32,
    class: u8,
}

/// A named operation (one collective, one compute phase) whose tasks are timed together.
#[derive(Clone, Debug, PartialEq)]
pub struct OpInfo {
    /// Label shown in results, e.g. `allreduce`.
    pub label: String,
}

/// A DAG of tasks, built in dependency order (a task may only depend on earlier ones).
///
/// Memory: 16 B per task for its kind, software latency and queue pair
/// ([`Packed`]) and 4 B for where its dependencies start, 4 B per dependency;
/// the operation of each task is run-length encoded (one entry per change of
/// operation, in task order), and the class only for the tasks that set one. The 131,072-GPU flow benchmark holds 67 M tasks: 36 B each when a
/// task was a 32-byte [`Task`] with its operation inline.
#[derive(Clone, Debug, Default)]
pub struct Dag {
    /// Every task's kind, in creation order.
    kinds: Vec<Packed>,
    /// (task, value) of each kind whose bytes or duration did not fit
    /// [`Packed`], by task.
    wide: Vec<(u32, u64)>,
    /// (first task, operation) at each change of operation, by task.
    op_runs: Vec<(u32, u32)>,
    /// The tasks with a traffic class, by task.
    attrs: Vec<Attrs>,
    dep_start: Vec<u32>,
    deps: Vec<u32>,
    /// The operations tasks are grouped into.
    pub ops: Vec<OpInfo>,
    current_op: u32,
    /// Distinct software latencies of transfers (entry 0 is zero), see
    /// [`Dag::transfer_after_software`].
    software: Vec<SimTime>,
    /// Number of tasks (`kinds` holds only the stored ones, see [`Run`]).
    n: usize,
    /// Dependencies of the tasks not stored (repeats), for [`Dag::edges`].
    repeated_edges: usize,
    /// The runs of repeated blocks, by task (see [`Dag::begin_block`]).
    runs: Vec<Run>,
    /// Per page of 2^[`PAGE_BITS`] tasks, the number of runs starting at or
    /// before its first task: where [`Dag::locate`] starts looking (a binary
    /// search over the runs on every read cost 18% CPU on flow16k-tree-4m).
    run_pages: Vec<u32>,
    /// The blocks being marked ([`Dag::begin_block`]), if any.
    blocks: Option<BlockState>,
}

/// A run of blocks each equal to the one before shifted: `count` repeats,
/// the k-th (from 1) starting at task `start + (k − 1)·len`, of the `len`
/// tasks stored from `base` (logical id; `base_stored` in the stored
/// tables), with every GPU id shifted by `k·delta` and every dependency by
/// `k·len` tasks, except those flagged [`GATE`] (a task before the base that
/// every repeat waits for).
#[derive(Clone, Copy, Debug)]
struct Run {
    start: u32,
    len: u32,
    count: u32,
    base: u32,
    base_stored: u32,
    delta: u32,
    /// Tasks not stored before `start` (the repeats of earlier runs).
    removed_before: u32,
}

/// The marking of blocks under way: the open block's first task (logical
/// and stored), the last closed block stored whole (a base for the next),
/// and the run the open block may extend.
#[derive(Clone, Copy, Debug)]
struct BlockState {
    open: u32,
    open_stored: u32,
    prev: Option<(u32, u32, u32)>,
    run: Option<usize>,
}

/// Tasks per page of `Dag::run_pages`, log 2.
const PAGE_BITS: u32 = 12;

/// Flag of a stored dependency that repeats of its task keep unshifted (see [`Run`]).
const GATE: u32 = 1 << 31;

impl Dag {
    /// An empty DAG.
    pub fn new() -> Dag {
        Dag {
            dep_start: vec![0],
            ..Dag::default()
        }
    }

    /// Where task `t` is stored: (stored index, task-id shift of its
    /// dependencies, GPU-id shift); shifts are zero for a stored task.
    #[inline]
    fn locate(&self, t: usize) -> (usize, u32, u32) {
        locate_in(&self.runs, &self.run_pages, t)
    }

    /// Where task `t` sits in the runs: (run, copy) with copy 0 for the
    /// run's base and k for its k-th repeat; `None` for a task in no run.
    /// O(1) through the page table: a run's base is the block just before
    /// its first repeat (`base + len == start`, see [`Dag::close_block`]), so
    /// a task that is no repeat can only be in the base of the next run
    /// starting after it (a binary search over the bases here was 5% of
    /// flow16k-tree-4m's CPU, called twice per edge by the runner's build).
    #[inline]
    fn copy_of(&self, t: usize) -> Option<(usize, u32)> {
        let i = run_index(&self.runs, &self.run_pages, t);
        if let Some(i) = i {
            let r = &self.runs[i];
            let rel = t - r.start as usize;
            if rel < r.len as usize * r.count as usize {
                return Some((i, (rel / r.len as usize + 1) as u32));
            }
        }
        let j = i.map_or(0, |i| i + 1);
        let r = self.runs.get(j)?;
        debug_assert_eq!(r.base + r.len, r.start);
        (r.base as usize <= t && t < (r.base + r.len) as usize).then_some((j, 0))
    }

    /// The dependencies of task `t`, each with whether its repeats keep it
    /// unshifted (a gate, see [`Run`]); false for a task in no run.
    fn deps_flagged(&self, t: TaskId) -> impl Iterator<Item = (Dep, bool)> + '_ {
        let (st, _, _) = self.locate(t.0 as usize);
        let gates = self.deps[self.dep_start[st] as usize..self.dep_start[st + 1] as usize]
            .iter()
            .map(|&p| p & GATE != 0);
        self.deps_of(t).zip(gates)
    }
}

/// The run whose repeats hold task `t`, or the last run starting before it.
#[inline]
fn run_index(runs: &[Run], pages: &[u32], t: usize) -> Option<usize> {
    if runs.is_empty() {
        return None;
    }
    let mut i = pages[t >> PAGE_BITS] as usize;
    while i < runs.len() && runs[i].start as usize <= t {
        i += 1;
    }
    i.checked_sub(1)
}

/// [`Dag::locate`] over the runs `runs` and their page table `pages`.
#[inline]
fn locate_in(runs: &[Run], pages: &[u32], t: usize) -> (usize, u32, u32) {
    let Some(r) = run_index(runs, pages, t).map(|i| &runs[i]) else {
        return (t, 0, 0);
    };
    let rel = t - r.start as usize;
    let span = r.len as usize * r.count as usize;
    if rel < span {
        let k = (rel / r.len as usize + 1) as u32;
        let j = rel % r.len as usize;
        (
            r.base_stored as usize + j,
            k * r.len,
            r.delta.wrapping_mul(k),
        )
    } else {
        (t - r.removed_before as usize - span, 0, 0)
    }
}

impl Dag {
    /// Task `t`'s packed kind, GPU ids shifted when it is a repeat.
    #[inline]
    fn packed(&self, t: usize) -> Packed {
        let (s, _, delta) = self.locate(t);
        let mut p = self.kinds[s];
        if delta != 0 {
            shift_gpus(&mut p, delta);
        }
        p
    }

    /// Number of tasks stored: those not in a repeated block (see
    /// [`Dag::begin_block`]) plus one copy of each repeated one.
    pub fn stored_tasks(&self) -> usize {
        self.kinds.len()
    }

    /// Starts a block of tasks (closing the one open, if any). A block equal
    /// to the block before it shifted — same kinds, payloads, software
    /// latencies and queue pairs, every GPU id shifted by one fixed step,
    /// every dependency shifted by the block's length in tasks or naming the
    /// same task before both (a gate) — is stored once for a whole run of
    /// them: a collective's per-host rings, host after host, hold most of
    /// its tasks. Reading and running the DAG is unchanged.
    pub fn begin_block(&mut self) {
        self.close_block();
        if self.blocks.is_none() {
            self.blocks = Some(BlockState {
                open: self.n as u32,
                open_stored: self.kinds.len() as u32,
                prev: None,
                run: None,
            });
        }
    }

    /// Ends the blocks begun by [`Dag::begin_block`]: tasks added from now
    /// on are stored each.
    pub fn end_blocks(&mut self) {
        self.close_block();
        self.blocks = None;
    }

    /// Closes the open block: drops its tasks from the stored tables when it
    /// repeats the block before it (see [`Dag::begin_block`]).
    fn close_block(&mut self) {
        let Some(mut b) = self.blocks else { return };
        let start = b.open;
        let len = self.n as u32 - start;
        if len == 0 {
            return;
        }
        // the base and which repeat of it this block would be
        let cand = match b.run {
            Some(i) => {
                let r = self.runs[i];
                (r.start + r.len * r.count == start && r.len == len).then_some((
                    r.base,
                    r.base_stored,
                    r.count + 1,
                    Some(r.delta),
                ))
            }
            None => b
                .prev
                .filter(|&(pl, _, plen)| pl + plen == start && plen == len)
                .map(|(pl, ps, _)| (pl, ps, 1, None)),
        };
        let matched = cand.and_then(|(base, bs, k, delta)| {
            self.repeat_of(base, bs, b.open_stored, len, k, delta)
                .map(|d| (base, bs, k, d))
        });
        match matched {
            Some((base, bs, k, delta)) => {
                let s = b.open_stored as usize;
                let e0 = self.dep_start[s] as usize;
                self.repeated_edges += self.deps.len() - e0;
                self.deps.truncate(e0);
                self.dep_start.truncate(s + 1);
                self.kinds.truncate(s);
                if k == 1 {
                    let removed_before = (self.n - self.kinds.len()) as u32 - len;
                    self.runs.push(Run {
                        start,
                        len,
                        count: 1,
                        base,
                        base_stored: bs,
                        delta,
                        removed_before,
                    });
                    b.run = Some(self.runs.len() - 1);
                    let first_page = (start as usize).div_ceil(1 << PAGE_BITS);
                    let runs = self.runs.len() as u32;
                    for p in self.run_pages.iter_mut().skip(first_page) {
                        *p = runs;
                    }
                } else if let Some(i) = b.run {
                    self.runs[i].count += 1;
                }
            }
            None => {
                b.run = None;
                b.prev = Some((start, b.open_stored, len));
            }
        }
        b.open = self.n as u32;
        b.open_stored = self.kinds.len() as u32;
        self.blocks = Some(b);
    }

    /// Whether the `len` tasks stored from `new` are repeat `k` of the base
    /// stored from `base_stored` (logical `base`); returns the GPU step. On
    /// the first repeat it flags the base's gate dependencies.
    fn repeat_of(
        &mut self,
        base: u32,
        base_stored: u32,
        new: u32,
        len: u32,
        k: u32,
        delta: Option<u32>,
    ) -> Option<u32> {
        let (bs, ns) = (base_stored as usize, new as usize);
        let mut step = delta;
        for j in 0..len as usize {
            let (a, b) = (self.kinds[bs + j], self.kinds[ns + j]);
            if a.c != b.c || a.c & WIDE == WIDE {
                return None;
            }
            let d = b.a.wrapping_sub(a.a);
            match a.c >> 62 {
                TAG_TRANSFER | TAG_COMPUTE => {
                    // the step per repeat: the shift of repeat k is k·step
                    let s = *step.get_or_insert(if k == 1 { d } else { u32::MAX });
                    let moved_b = b.b.wrapping_sub(a.b);
                    if d != s.wrapping_mul(k) || (a.c >> 62 == TAG_TRANSFER && moved_b != d) {
                        return None;
                    }
                }
                TAG_MARKER => {}
                _ => return None, // node ids: not shifted
            }
        }
        let off = k * len;
        let (e0, e1) = (
            self.dep_start[bs] as usize,
            self.dep_start[bs + len as usize] as usize,
        );
        let f0 = self.dep_start[ns] as usize;
        if self.deps.len() - f0 != e1 - e0 {
            return None;
        }
        for j in 0..len as usize {
            let nb = self.dep_start[bs + j + 1] - self.dep_start[bs + j];
            let nn = self.dep_start[ns + j + 1] - self.dep_start[ns + j];
            if nb != nn {
                return None;
            }
        }
        let mut gates = Vec::new();
        for i in 0..e1 - e0 {
            let (pb, pn) = (self.deps[e0 + i], self.deps[f0 + i]);
            let shifted = (pb & !GATE).wrapping_add(off << 1);
            if k == 1 {
                if pn == shifted {
                    continue;
                } else if pn == pb & !GATE && (pb & !GATE) >> 1 < base {
                    gates.push(e0 + i);
                } else {
                    return None;
                }
            } else if pb & GATE != 0 {
                if pn != pb & !GATE {
                    return None;
                }
            } else if pn != shifted {
                return None;
            }
        }
        for i in gates {
            self.deps[i] |= GATE;
        }
        Some(step.unwrap_or(0))
    }

    /// Stores every task whole again (a repeated task is being changed).
    fn flatten(&mut self) {
        if self.runs.is_empty() {
            return;
        }
        let n = self.n;
        let mut kinds = Vec::with_capacity(n);
        let mut dep_start = Vec::with_capacity(n + 1);
        let mut deps = Vec::with_capacity(self.edges());
        dep_start.push(0);
        for t in 0..n {
            kinds.push(self.packed(t));
            deps.extend(self.deps_of(TaskId(t as u32)).map(Dep::pack));
            dep_start.push(deps.len() as u32);
        }
        self.kinds = kinds;
        self.dep_start = dep_start;
        self.deps = deps;
        self.runs.clear();
        self.run_pages.fill(0);
        self.repeated_edges = 0;
        if let Some(b) = &mut self.blocks {
            *b = BlockState {
                open: b.open,
                open_stored: b.open,
                prev: None,
                run: None,
            };
        }
    }

    /// Makes task `t` stored on its own before a change: flattens the DAG
    /// when `t` is a repeat or the base of one.
    fn own(&mut self, t: usize) {
        if self.runs.is_empty() {
            return;
        }
        let i = self.runs.partition_point(|r| r.base as usize <= t);
        let in_base = i
            .checked_sub(1)
            .is_some_and(|i| t < (self.runs[i].base + self.runs[i].len) as usize);
        if in_base || self.locate(t).1 != 0 {
            self.flatten();
        }
    }

    /// Starts a new operation; tasks added from now on belong to it. Returns its index.
    pub fn begin_op(&mut self, label: impl Into<String>) -> u32 {
        self.ops.push(OpInfo {
            label: label.into(),
        });
        self.current_op = self.ops.len() as u32 - 1;
        self.current_op
    }

    /// Makes tasks added from now on belong to the existing operation `op`
    /// (a workload that interleaves several operations, e.g. compute and
    /// collectives of a training step). Out-of-range indices are ignored.
    pub fn set_op(&mut self, op: u32) {
        if (op as usize) < self.ops.len() {
            self.current_op = op;
        }
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.n
    }
    /// True when there are no tasks.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// What task `t` does. Panics if `t` is not a task of this DAG (like
    /// indexing a slice).
    #[inline]
    pub fn kind(&self, t: usize) -> TaskKind {
        let p = self.packed(t);
        p.unpack(|| self.wide_value(t))
    }

    fn wide_value(&self, t: usize) -> u64 {
        let i = self.wide.partition_point(|&(x, _)| (x as usize) < t);
        self.wide.get(i).map_or(WIDE, |&(_, v)| v)
    }

    /// The operation of task `t` (index into [`Dag::ops`]).
    #[inline]
    pub fn op_of(&self, t: usize) -> u32 {
        let i = self
            .op_runs
            .partition_point(|&(first, _)| first as usize <= t);
        self.op_runs.get(i.wrapping_sub(1)).map_or(0, |r| r.1)
    }

    fn attrs_of(&self, t: usize) -> Attrs {
        if self.attrs.is_empty() {
            return Attrs::default();
        }
        let i = self.attrs.partition_point(|a| (a.task as usize) < t);
        match self.attrs.get(i) {
            Some(a) if a.task as usize == t => *a,
            _ => Attrs::default(),
        }
    }

    /// [`Dag::kind`], [`Dag::qp_of`] and [`Dag::software_latency`] of task
    /// `t` from one look-up of where it is stored (a backend starting a
    /// task reads all three).
    #[inline]
    pub fn kind_qp_software(&self, t: usize) -> (TaskKind, u8, SimTime) {
        let p = self.packed(t);
        let sw = match p.sw() {
            0 => SimTime::ZERO,
            i => self.software[i as usize],
        };
        (p.unpack(|| self.wide_value(t)), p.qp(), sw)
    }

    /// The queue pair of transfer `t` (0 unless [`Dag::set_qp`] chose one).
    #[inline]
    pub fn qp_of(&self, t: usize) -> u8 {
        self.packed(t).qp()
    }

    /// The traffic class of transfer `t` plus one; 0 = the workload's class.
    #[inline]
    pub fn class_of(&self, t: usize) -> u8 {
        self.attrs_of(t).class
    }

    /// Task `t` whole. Panics if `t` is not a task of this DAG.
    pub fn task(&self, t: usize) -> Task {
        let p = self.packed(t);
        Task {
            kind: p.unpack(|| self.wide_value(t)),
            op: self.op_of(t),
            sw: p.sw(),
            qp: p.qp(),
            class: self.attrs_of(t).class,
        }
    }

    /// Every task, in creation order (walks the side tables alongside, so a
    /// pass over all tasks costs no lookup per task).
    pub fn tasks(&self) -> impl ExactSizeIterator<Item = Task> + '_ {
        let (mut run, mut attr, mut wide) = (0usize, 0usize, 0usize);
        (0..self.n).map(move |t| {
            let p = self.packed(t);
            while run + 1 < self.op_runs.len() && self.op_runs[run + 1].0 as usize <= t {
                run += 1;
            }
            while attr < self.attrs.len() && (self.attrs[attr].task as usize) < t {
                attr += 1;
            }
            let a = match self.attrs.get(attr) {
                Some(a) if a.task as usize == t => *a,
                _ => Attrs::default(),
            };
            let kind = p.unpack(|| {
                while wide < self.wide.len() && (self.wide[wide].0 as usize) < t {
                    wide += 1;
                }
                self.wide.get(wide).map_or(WIDE, |&(_, v)| v)
            });
            Task {
                kind,
                op: self.op_runs.get(run).map_or(0, |r| r.1),
                sw: p.sw(),
                qp: p.qp(),
                class: a.class,
            }
        })
    }

    /// Replaces what task `t` does, keeping its dependencies (a fault slowing a
    /// GPU's compute). Out-of-range indices are ignored.
    pub fn set_kind(&mut self, t: usize, kind: TaskKind) {
        if t >= self.n || self.kind(t) == kind {
            return;
        }
        self.own(t);
        let s = self.locate(t).0;
        let (mut p, w) = Packed::pack(kind);
        let old = self.kinds[s];
        p.set_byte(SW_SHIFT, old.sw());
        p.set_byte(QP_SHIFT, old.qp());
        self.kinds[s] = p;
        let i = self.wide.partition_point(|&(x, _)| (x as usize) < t);
        let here = self.wide.get(i).is_some_and(|&(x, _)| x as usize == t);
        match (w, here) {
            (Some(v), true) => self.wide[i].1 = v,
            (Some(v), false) => self.wide.insert(i, (t as u32, v)),
            (None, true) => {
                self.wide.remove(i);
            }
            (None, false) => {}
        }
    }

    /// Sets task `t`'s rarely set field through `f`. Tasks are usually given
    /// them right after they are added, so the table grows at its end.
    fn set_attrs(&mut self, t: TaskId, f: impl FnOnce(&mut Attrs)) {
        if t.0 as usize >= self.n {
            return;
        }
        let i = self.attrs.partition_point(|a| a.task < t.0);
        if self.attrs.get(i).is_none_or(|a| a.task != t.0) {
            self.attrs.insert(
                i,
                Attrs {
                    task: t.0,
                    ..Attrs::default()
                },
            );
        }
        f(&mut self.attrs[i]);
    }

    /// Adds a task that starts once every dependency in `deps` is met.
    ///
    /// # Panics
    /// Panics if a dependency names a task not yet added (that would be a cycle).
    pub fn add(&mut self, kind: TaskKind, deps: &[Dep]) -> TaskId {
        let id = self.n as u32;
        assert!(id < GATE >> 1, "a DAG holds at most 2^30 tasks");
        if self.dep_start.is_empty() {
            self.dep_start.push(0);
        }
        for d in deps {
            let (Dep::Sent(t) | Dep::Done(t)) = *d;
            assert!(t.0 < id, "dependency on a later task would form a cycle");
            self.deps.push(d.pack());
        }
        self.dep_start.push(self.deps.len() as u32);
        let (p, wide) = Packed::pack(kind);
        self.kinds.push(p);
        if id & ((1 << PAGE_BITS) - 1) == 0 {
            self.run_pages.push(self.runs.len() as u32);
        }
        self.n += 1;
        if let Some(v) = wide {
            self.wide.push((id, v));
        }
        if self.op_runs.last().is_none_or(|r| r.1 != self.current_op) {
            self.op_runs.push((id, self.current_op));
        }
        TaskId(id)
    }

    /// Adds a transfer whose receiver may use the data `software` after its last
    /// byte arrived: the per-step cost of the collective's software (NCCL's
    /// per-hop protocol latency: flag polling, kernel loop, proxy), which every
    /// backend adds to the transfer's completion, not to its serialization.
    /// At most 255 distinct values per DAG; beyond that the nearest smaller one
    /// already interned is used.
    pub fn transfer_after_software(
        &mut self,
        src: GpuId,
        dst: GpuId,
        bytes: u64,
        software: SimTime,
        deps: &[Dep],
    ) -> TaskId {
        let t = self.transfer(src, dst, bytes, deps);
        self.set_software(t, software);
        t
    }

    /// Makes task `t` complete `software` after its last byte arrived (see
    /// [`Dag::transfer_after_software`]).
    pub fn set_software(&mut self, t: TaskId, software: SimTime) {
        if software > SimTime::ZERO {
            if self.software.is_empty() {
                self.software.push(SimTime::ZERO);
            }
            let idx = match self.software.iter().position(|&x| x == software) {
                Some(i) => i,
                None if self.software.len() < 256 => {
                    self.software.push(software);
                    self.software.len() - 1
                }
                None => (0..self.software.len())
                    .filter(|&i| self.software[i] <= software)
                    .max_by_key(|&i| self.software[i])
                    .unwrap_or(0),
            };
            let t = t.0 as usize;
            if t < self.n && self.packed(t).sw() != idx as u8 {
                self.own(t);
                let s = self.locate(t).0;
                self.kinds[s].set_byte(SW_SHIFT, idx as u8);
            }
        }
    }

    /// Puts transfer `t` on queue pair `qp` of its connection.
    pub fn set_qp(&mut self, t: TaskId, qp: u8) {
        let t = t.0 as usize;
        if t < self.n && self.packed(t).qp() != qp {
            self.own(t);
            let s = self.locate(t).0;
            self.kinds[s].set_byte(QP_SHIFT, qp);
        }
    }

    /// Puts transfer `t` in traffic class `class` (its index among the
    /// fabric's classes; transfers not set ride the workload's class).
    pub fn set_class(&mut self, t: TaskId, class: u8) {
        self.set_attrs(t, |a| a.class = class.saturating_add(1));
    }

    /// The software latency added to task `t`'s completion (zero for most tasks).
    #[inline]
    pub fn software_latency(&self, t: TaskId) -> SimTime {
        match self.packed(t.0 as usize).sw() {
            0 => SimTime::ZERO,
            i => self.software[i as usize],
        }
    }

    /// Adds a transfer of `bytes` from `src` to `dst`.
    pub fn transfer(&mut self, src: GpuId, dst: GpuId, bytes: u64, deps: &[Dep]) -> TaskId {
        self.add(TaskKind::Transfer { src, dst, bytes }, deps)
    }

    /// Adds a transfer of `bytes` between adjacent nodes `src` and `dst` (see
    /// [`TaskKind::NetTransfer`]).
    pub fn net_transfer(&mut self, src: NodeId, dst: NodeId, bytes: u64, deps: &[Dep]) -> TaskId {
        self.add(TaskKind::NetTransfer { src, dst, bytes }, deps)
    }

    /// Adds `duration` of compute on `gpu`.
    pub fn compute(&mut self, gpu: GpuId, duration: SimTime, deps: &[Dep]) -> TaskId {
        self.add(TaskKind::Compute { gpu, duration }, deps)
    }

    /// Adds a marker that joins `deps`.
    pub fn marker(&mut self, deps: &[Dep]) -> TaskId {
        self.add(TaskKind::Marker, deps)
    }

    /// Number of dependencies (edges) over all tasks.
    pub fn edges(&self) -> usize {
        self.deps.len() + self.repeated_edges
    }

    /// At least the number of successor entries a [`DagRunner`] of this DAG
    /// holds (its `succ` and `shared` lists): one per stored dependency, plus,
    /// for every repeat of a run, its base's dependencies on tasks before the
    /// base (a gate, or a task whose copies may not line up with the run's),
    /// which a repeat holds on its own. A dependency inside the block is held
    /// once for every copy ([`DagRunner`]'s `shared`). Exact for the DAGs the
    /// collectives build; for budgets ([`crate::budget`]), not the hot path.
    pub fn runner_edges(&self) -> usize {
        let mut n = self.deps.len();
        for r in &self.runs {
            let bs = r.base_stored as usize;
            let (e0, e1) = (
                self.dep_start[bs] as usize,
                self.dep_start[bs + r.len as usize] as usize,
            );
            let outside = self.deps[e0..e1]
                .iter()
                .filter(|&&p| ((p & !GATE) >> 1) < r.base)
                .count();
            n += outside * r.count as usize;
        }
        n
    }

    /// Bytes a [`DagRunner`] of this DAG holds beyond its 16-byte slot per
    /// task ([`DagRunner::table_bytes`]): the successors
    /// ([`Dag::runner_edges`], 4 B each), with repeated blocks where the
    /// shared ones start (4 B per stored task) and its copy of the runs, the
    /// operation of each task, and the slot that ends the last successors.
    /// An upper bound, for budgets ([`crate::budget`]).
    pub fn runner_schedule_bytes(&self) -> usize {
        let runs = if self.runs.is_empty() {
            0
        } else {
            (self.kinds.len() + 1) * 4
                + self.runs.len() * std::mem::size_of::<Run>()
                + self.run_pages.len() * 4
        };
        let ops = if self.op_runs.len() > self.n / 4 {
            self.n * 4
        } else {
            self.op_runs.len() * 8
        };
        std::mem::size_of::<Slot>() + self.runner_edges() * 4 + runs + ops
    }

    /// Bytes the DAG's tables hold on the heap (tasks, dependencies,
    /// operation labels, software latencies), by their capacities.
    pub fn heap_bytes(&self) -> usize {
        self.kinds.capacity() * std::mem::size_of::<Packed>()
            + self.wide.capacity() * 16
            + self.op_runs.capacity() * 8
            + self.attrs.capacity() * std::mem::size_of::<Attrs>()
            + (self.dep_start.capacity() + self.deps.capacity()) * 4
            + self.ops.capacity() * std::mem::size_of::<OpInfo>()
            + self.ops.iter().map(|o| o.label.capacity()).sum::<usize>()
            + self.software.capacity() * std::mem::size_of::<SimTime>()
            + self.runs.capacity() * std::mem::size_of::<Run>()
            + self.run_pages.capacity() * 4
    }

    /// [`Dag::heap_bytes`] by table, named: tasks (16 B each), where each
    /// task's dependencies start (4 B), the dependencies (4 B each) and the
    /// rest (wide values, operations, classes, software latencies).
    pub fn table_bytes(&self) -> [(&'static str, usize); 4] {
        let kinds = self.kinds.capacity() * std::mem::size_of::<Packed>();
        let starts = self.dep_start.capacity() * 4;
        let deps = self.deps.capacity() * 4;
        [
            ("dag tasks (16 B/task)", kinds),
            ("dag dependency starts (4 B/task)", starts),
            ("dag dependencies (4 B/edge)", deps),
            (
                "dag other tables",
                self.heap_bytes() - kinds - starts - deps,
            ),
        ]
    }

    /// The dependencies of task `t`.
    pub fn deps_of(&self, t: TaskId) -> impl Iterator<Item = Dep> + '_ {
        let (st, off, _) = self.locate(t.0 as usize);
        let s = self.dep_start[st] as usize;
        let e = self.dep_start[st + 1] as usize;
        self.deps[s..e].iter().map(move |&p| {
            let id = (p & !GATE) >> 1;
            let t = TaskId(if p & GATE != 0 { id } else { id + off });
            if p & 1 == 1 {
                Dep::Sent(t)
            } else {
                Dep::Done(t)
            }
        })
    }

    /// Total payload bytes of all transfers (GPU to GPU and between adjacent nodes).
    pub fn transfer_bytes(&self) -> u64 {
        (0..self.len()).map(|t| self.kind(t).transfer_bytes()).sum()
    }

    /// Appends every task of `other` after this DAG's, its GPUs renamed by
    /// `gpu` (a job's ranks onto the cluster's GPUs), its operations added
    /// after this DAG's with `prefix` before their labels; a task of `other`
    /// without dependencies waits for `gate` (a job's start). Software
    /// latencies and queue pairs are kept; a [`TaskKind::NetTransfer`]'s
    /// nodes are not renamed (it names switches of the one real topology).
    /// Returns the index of the first appended operation.
    pub fn append(
        &mut self,
        other: &Dag,
        gpu: impl Fn(GpuId) -> GpuId,
        gate: &[Dep],
        prefix: &str,
    ) -> u32 {
        let offset = self.n as u32;
        let first_op = self.ops.len() as u32;
        for op in &other.ops {
            self.ops.push(OpInfo {
                label: format!("{prefix}{}", op.label),
            });
        }
        if other.ops.is_empty() && !other.is_empty() {
            self.ops.push(OpInfo {
                label: prefix.trim_end_matches([':', ' ']).to_string(),
            });
        }
        let shift = |d: Dep| match d {
            Dep::Sent(t) => Dep::Sent(TaskId(t.0 + offset)),
            Dep::Done(t) => Dep::Done(TaskId(t.0 + offset)),
        };
        let mut deps: Vec<Dep> = Vec::new();
        for (i, t) in other.tasks().enumerate() {
            let id = TaskId(i as u32);
            deps.clear();
            deps.extend(other.deps_of(id).map(shift));
            if deps.is_empty() {
                deps.extend_from_slice(gate);
            }
            let kind = match t.kind {
                TaskKind::Transfer { src, dst, bytes } => TaskKind::Transfer {
                    src: gpu(src),
                    dst: gpu(dst),
                    bytes,
                },
                TaskKind::Compute { gpu: g, duration } => TaskKind::Compute {
                    gpu: gpu(g),
                    duration,
                },
                k => k,
            };
            self.current_op = first_op + t.op;
            let new = self.add(kind, &deps);
            self.set_software(new, other.software_latency(id));
            self.set_qp(new, t.qp);
        }
        first_op
    }

    /// The tasks from `from` on that no later task depends on: what a
    /// marker joining them waits for.
    pub fn sinks(&self, from: TaskId) -> Vec<TaskId> {
        let start = from.0 as usize;
        let mut needed = vec![false; self.len().saturating_sub(start)];
        for t in start..self.len() {
            for d in self.deps_of(TaskId(t as u32)) {
                let (Dep::Sent(p) | Dep::Done(p)) = d;
                if let Some(x) = (p.0 as usize).checked_sub(start) {
                    needed[x] = true;
                }
            }
        }
        (0..needed.len())
            .filter(|&i| !needed[i])
            .map(|i| TaskId((start + i) as u32))
            .collect()
    }
}

/// Start and end of one operation in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpTiming {
    /// When its first task started.
    pub start: SimTime,
    /// When its last task completed.
    pub end: SimTime,
}

/// Tracks which tasks of a [`Dag`] are ready while a backend executes it.
///
/// The backend calls [`DagRunner::start`] once, then reports [`DagRunner::sent`]
/// and [`DagRunner::done`] as its events happen; each call appends newly ready
/// tasks to the caller's buffer (no allocation per call).
///
/// Memory and locality: what a release touches per task (its unmet count,
/// state, where its successors start, its start time) sits in one 16-byte
/// [`Slot`], one cache miss where four separate tables cost four (profile of
/// the 16,384-GPU flow benchmark: `release`, `done` and the start of a ready
/// task were 30% of the run, nearly all of it misses on those tables). The
/// done times are a table of their own only when the caller wants both ends
/// of every task ([`DagRunner::new`]); [`DagRunner::without_spans`] keeps one
/// time per task, the start until the task is done and then its completion
/// time (done − start), 8 B per task less.
pub struct DagRunner {
    /// Per task, plus one whose `succ_start` ends the last task's successors.
    slots: Vec<Slot>,
    /// Successors: CSR over tasks (starts in `slots`); entries packed `succ << 1 | on_sent`.
    /// Only those not in `shared`.
    succ: Vec<u32>,
    /// Successors every copy of a stored task of the DAG's runs has alike
    /// (see [`Dag::begin_block`]): CSR over stored tasks (starts in
    /// `shared_start`), entries packed `(succ − task) << 1 | on_sent`. Held
    /// once per stored task, not per copy: most edges of a run's tasks.
    shared: Vec<u32>,
    shared_start: Vec<u32>,
    /// The DAG's runs and their page table, to find a task's stored copy.
    runs: Vec<Run>,
    run_pages: Vec<u32>,
    /// When each task completed, picoseconds (empty without spans).
    done_at: Vec<SimTime>,
    /// `done_at` is kept (else a done task's slot holds its completion time).
    spans: bool,
    /// The successors are held ([`DagRunner::free_schedule`] not called).
    scheduled: bool,
    /// Per-op timing.
    pub op_timing: Vec<OpTiming>,
    op_seen: Vec<bool>,
    completed: usize,
    /// Number of tasks (the tables below may be freed by [`DagRunner::free_schedule`]).
    n: usize,
    ops_of: OpsOf,
    /// Latest completion time reported so far, picoseconds.
    last_done: SimTime,
}

/// One task's scheduling state (16 B, see [`DagRunner`]).
#[derive(Clone, Copy, Default)]
struct Slot {
    /// When the task started (became ready), picoseconds; once it is done in a
    /// runner without spans, its completion time (done − start).
    time: u64,
    /// Unmet dependencies (low [`PEND_BITS`] bits) and the state above them:
    /// 0 waiting or running, 1 sent (its last byte left), 2 done.
    pend: u32,
    /// Where its successors start in `DagRunner::succ`.
    succ_start: u32,
}

/// Successors of a task whose slots [`DagRunner::prefetch_successors`]
/// loads from each of its two lists (a collective's task has a few).
const PREFETCH_SUCCESSORS: usize = 4;

/// Bits of [`Slot::pend`] counting unmet dependencies: a task may wait for
/// 2^30 − 1 others (4 GiB of dependency entries for that one task).
const PEND_BITS: u32 = 30;
const PEND_MASK: u32 = (1 << PEND_BITS) - 1;
const SENT: u32 = 1 << PEND_BITS;
const DONE: u32 = 2 << PEND_BITS;

impl Slot {
    #[inline]
    fn state(self) -> u32 {
        self.pend >> PEND_BITS
    }
}

impl DagRunner {
    /// Prepares to run `dag`, keeping when each task started and completed
    /// ([`DagRunner::take_spans`]).
    pub fn new(dag: &Dag) -> DagRunner {
        Self::build(dag, true)
    }

    /// [`DagRunner::new`] for a backend that needs each task's completion
    /// time (done − start, [`DagRunner::span`]) but not its two ends: one
    /// time per task, 8 B less; [`DagRunner::take_spans`] then returns empty
    /// tables.
    pub fn without_spans(dag: &Dag) -> DagRunner {
        Self::build(dag, false)
    }

    fn build(dag: &Dag, spans: bool) -> DagRunner {
        let n = dag.len();
        // An edge x → y is shared when y is copy k of a run, its dependency
        // shifts with the copies, and x is copy k of a run of the same
        // length and count: then every copy j of x's stored task has the
        // edge to y − (k − j)·len, held once as (y − x) with copy 0.
        let shape = |r: usize| (dag.runs[r].len, dag.runs[r].count);
        // `cy`: `dag.copy_of(y)`, looked up once per task, not per edge
        let classify = |cy: Option<(usize, u32)>, x: usize, gate: bool| -> Option<u32> {
            if gate {
                return None;
            }
            let (ry, ky) = cy?;
            let (rx, kx) = dag.copy_of(x)?;
            (kx == ky && shape(rx) == shape(ry)).then_some(ky)
        };
        // exact size: n tasks and the end of the last one's successors
        let mut slots = vec![Slot::default(); n + 1];
        let stored = dag.stored_tasks();
        let mut shared_start = vec![0u32; if dag.runs.is_empty() { 0 } else { stored + 1 }];
        let always = always_shared(dag);
        for_each_edge(dag, &always, &classify, |t, x, _, class| {
            match class {
                Some(0) => shared_start[dag.locate(x).0 + 1] += 1,
                Some(_) => {}
                // counted one slot up, then summed: slot t ends as the start
                None => slots[x + 1].succ_start += 1,
            }
            slots[t].pend += 1;
            debug_assert!(
                slots[t].pend <= PEND_MASK,
                "task {t}: too many dependencies"
            );
        });
        for i in 0..n {
            slots[i + 1].succ_start += slots[i].succ_start;
        }
        for i in 1..shared_start.len() {
            shared_start[i] += shared_start[i - 1];
        }
        let mut succ = vec![0u32; slots[n].succ_start as usize];
        let mut shared = vec![0u32; shared_start.last().map_or(0, |&e| e as usize)];
        let mut shared_fill = vec![0u32; shared_start.len()];
        // fill: each predecessor's next free entry, kept in its slot's time
        // (zero until the run starts) instead of a 4 B/task copy of the starts
        for_each_edge(
            dag,
            &always,
            &classify,
            |t, x, on_sent, class| match class {
                Some(0) => {
                    let st = dag.locate(x).0;
                    let i = shared_start[st] + shared_fill[st];
                    shared[i as usize] = ((t - x) as u32) << 1 | on_sent;
                    shared_fill[st] += 1;
                }
                Some(_) => {}
                None => {
                    let s = &mut slots[x];
                    succ[(u64::from(s.succ_start) + s.time) as usize] = (t as u32) << 1 | on_sent;
                    s.time += 1;
                }
            },
        );
        drop(always);
        for s in &mut slots {
            s.time = 0;
        }
        let (runs, run_pages) = if shared.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            (dag.runs.clone(), dag.run_pages.clone())
        };
        if shared.is_empty() {
            shared_start = Vec::new();
        }
        DagRunner {
            slots,
            succ,
            shared,
            shared_start,
            runs,
            run_pages,
            done_at: if spans {
                vec![SimTime::ZERO; n]
            } else {
                Vec::new()
            },
            spans,
            scheduled: true,
            op_timing: vec![OpTiming::default(); dag.ops.len().max(1)],
            op_seen: vec![false; dag.ops.len().max(1)],
            completed: 0,
            n,
            ops_of: OpsOf::new(dag),
            last_done: SimTime::ZERO,
        }
    }

    /// Appends the tasks with no dependencies to `ready` (time zero).
    pub fn start(&mut self, ready: &mut Vec<TaskId>) {
        for (i, s) in self.slots[..self.n].iter().enumerate() {
            if s.pend == 0 {
                ready.push(TaskId(i as u32));
            }
        }
        for &t in ready.iter() {
            self.mark_started(t, SimTime::ZERO);
        }
    }

    fn mark_started(&mut self, t: TaskId, now: SimTime) {
        self.slots[t.0 as usize].time = now.0;
        let op = self.ops_of.get(t.0) as usize;
        if !self.op_seen[op] {
            self.op_seen[op] = true;
            self.op_timing[op].start = now;
        }
    }

    fn release(&mut self, t: TaskId, want_sent: bool, now: SimTime, ready: &mut Vec<TaskId>) {
        if !self.scheduled {
            return; // successors freed: the run is over
        }
        let x = t.0 as usize;
        let (mut i, e) = (
            self.slots[x].succ_start as usize,
            self.slots[x + 1].succ_start as usize,
        );
        let (mut j, f) = if self.shared.is_empty() {
            (0, 0)
        } else {
            let st = locate_in(&self.runs, &self.run_pages, x).0;
            (
                self.shared_start[st] as usize,
                self.shared_start[st + 1] as usize,
            )
        };
        // both lists ascend by successor: merged, the successors are
        // released in task order, as from one list
        loop {
            let own = self.succ.get(i).filter(|_| i < e).copied();
            let common = self
                .shared
                .get(j)
                .filter(|_| j < f)
                .map(|&r| r + ((x as u32) << 1));
            let packed = match (own, common) {
                (Some(a), Some(b)) if b < a => {
                    j += 1;
                    b
                }
                (Some(a), _) => {
                    i += 1;
                    a
                }
                (None, Some(b)) => {
                    j += 1;
                    b
                }
                (None, None) => break,
            };
            if (packed & 1 == 1) != want_sent {
                continue;
            }
            let succ = packed >> 1;
            let p = &mut self.slots[succ as usize].pend;
            *p -= 1;
            // a waiting task's state bits are zero, so zero means ready
            if *p == 0 {
                ready.push(TaskId(succ));
                self.mark_started(TaskId(succ), now);
            }
        }
    }

    /// Task `t`'s last byte left its source at `now`.
    pub fn sent(&mut self, t: TaskId, now: SimTime, ready: &mut Vec<TaskId>) {
        if self.slots[t.0 as usize].state() == 0 {
            self.slots[t.0 as usize].pend |= SENT;
            self.release(t, true, now, ready);
        }
    }

    /// Task `t` completed at `now` (implies sent).
    pub fn done(&mut self, t: TaskId, now: SimTime, ready: &mut Vec<TaskId>) {
        self.sent(t, now, ready);
        let slot = &mut self.slots[t.0 as usize];
        slot.pend = slot.pend & PEND_MASK | DONE;
        self.completed += 1;
        if self.spans {
            self.done_at[t.0 as usize] = now;
        } else {
            slot.time = now.0.saturating_sub(slot.time);
        }
        self.last_done = self.last_done.max(now);
        let op = self.ops_of.get(t.0) as usize;
        if now > self.op_timing[op].end {
            self.op_timing[op].end = now;
        }
        self.release(t, false, now, ready);
    }

    /// Starts loading task `t`'s scheduling state (a hint for a backend
    /// that knows which task it reports next; results are unchanged).
    #[inline]
    pub fn prefetch(&self, t: TaskId) {
        if let Some(s) = self.slots.get(t.0 as usize) {
            crate::backend::packet::slab::prefetch(s);
        }
    }

    /// Starts loading the scheduling state of task `t`'s first successors
    /// (a hint for a backend that reports `t` done shortly; it reads `t`'s
    /// own slot and successor lists, so call it once [`DagRunner::prefetch`]
    /// of `t` has had time to arrive; results are unchanged).
    #[inline]
    pub fn prefetch_successors(&self, t: TaskId) {
        use crate::backend::packet::slab::prefetch;
        let x = t.0 as usize;
        if !self.scheduled || x >= self.n {
            return;
        }
        let (a, b) = (
            self.slots[x].succ_start as usize,
            self.slots[x + 1].succ_start as usize,
        );
        for &p in self.succ[a..b].iter().take(PREFETCH_SUCCESSORS) {
            prefetch(&self.slots[(p >> 1) as usize]);
        }
        if !self.shared.is_empty() {
            let st = locate_in(&self.runs, &self.run_pages, x).0;
            let (c, d) = (
                self.shared_start[st] as usize,
                self.shared_start[st + 1] as usize,
            );
            for &r in self.shared[c..d].iter().take(PREFETCH_SUCCESSORS) {
                let succ = (r + ((x as u32) << 1)) >> 1;
                if let Some(s) = self.slots.get(succ as usize) {
                    prefetch(s);
                }
            }
        }
    }

    /// Number of completed tasks.
    pub fn completed(&self) -> usize {
        self.completed
    }
    /// Operations (indices into `Dag::ops`) with a task whose dependencies were
    /// met and that is not done, each once, in index order: what a run that
    /// stopped early (a deadlock) was doing.
    pub fn ops_in_flight(&self) -> Vec<u32> {
        let n = if self.scheduled { self.n } else { 0 };
        let mut ops: Vec<u32> = (0..n)
            .filter(|&t| self.slots[t].pend & PEND_MASK == 0 && self.slots[t].state() != 2)
            .map(|t| self.ops_of.get(t as u32))
            .collect();
        ops.sort_unstable();
        ops.dedup();
        ops
    }

    /// Whether task `t` completed.
    pub fn is_done(&self, t: TaskId) -> bool {
        self.slots[t.0 as usize].state() == 2
    }

    /// When task `t` became ready. In a runner without spans
    /// ([`DagRunner::without_spans`]) only until `t` is done.
    pub fn started_at(&self, t: TaskId) -> SimTime {
        SimTime(self.slots[t.0 as usize].time)
    }

    /// Task `t`'s completion time, done − start (zero if it is not done).
    pub fn span(&self, t: TaskId) -> SimTime {
        let s = self.slots[t.0 as usize];
        match (s.state(), self.spans) {
            (2, true) => self.done_at[t.0 as usize] - SimTime(s.time),
            (2, false) => SimTime(s.time),
            _ => SimTime::ZERO,
        }
    }

    /// Moves out when each task became ready and when it completed, ps, indexed
    /// like [`Dag::tasks`]; a task that never completed (a run stopped by a
    /// deadlock) gets [`SimTime::MAX`] as its completion. Empty tables from a
    /// runner without spans ([`DagRunner::without_spans`]). The runner's own
    /// tables are left empty: call this once the run is over.
    pub fn take_spans(&mut self) -> (Vec<SimTime>, Vec<SimTime>) {
        if !self.spans {
            return (Vec::new(), Vec::new());
        }
        let mut done = std::mem::take(&mut self.done_at);
        let slots = &self.slots[..self.n.min(self.slots.len())];
        for (d, s) in done.iter_mut().zip(slots) {
            if s.state() != 2 {
                *d = SimTime::MAX;
            }
        }
        let start = slots.iter().map(|s| SimTime(s.time)).collect();
        (start, done)
    }

    /// Consumes the runner into the completion time (done − start, zero if
    /// not done) of each task `keep` accepts, in task order, without spans
    /// only ([`DagRunner::without_spans`]; else it gives itself back). The times are
    /// written over the slots (the standard library collects a vector in
    /// place when the item shrinks from 16 to 8 B) and the rest is given
    /// back: a backend's output then costs no table beside the runner's
    /// (flow131k: 480 MiB less at its peak, when the output is built).
    pub fn into_completion_times(
        self,
        mut keep: impl FnMut(usize) -> bool,
    ) -> Result<Vec<SimTime>, Box<DagRunner>> {
        if self.spans {
            return Err(Box::new(self));
        }
        let mut times: Vec<SimTime> = self
            .slots
            .into_iter()
            .take(self.n)
            .enumerate()
            .filter(|&(i, _)| keep(i))
            .map(|(_, s)| match s.state() {
                2 => SimTime(s.time),
                _ => SimTime::ZERO,
            })
            .collect();
        times.shrink_to_fit();
        Ok(times)
    }

    /// True when every task completed.
    pub fn finished(&self) -> bool {
        self.completed == self.n
    }

    /// Frees the table that schedules tasks (the successors, 4 B per
    /// dependency) a backend need not hold while it builds its output. Call it
    /// once the run is over: afterwards [`DagRunner::sent`] and
    /// [`DagRunner::done`] release no task and [`DagRunner::ops_in_flight`]
    /// sees none.
    pub fn free_schedule(&mut self) {
        self.succ = Vec::new();
        self.shared = Vec::new();
        self.shared_start = Vec::new();
        self.scheduled = false;
    }
    /// Bytes each of the runner's tables holds on the heap, by capacity, named:
    /// the memory a run adds per task and per dependency beyond the DAG's own
    /// ([`Dag::heap_bytes`]). For accounting (`FABRICSIM_FLOW_MEM`), not the hot path.
    pub fn table_bytes(&self) -> [(&'static str, usize); 4] {
        [
            (
                "runner slots: unmet count, state, successor start, start time (16 B/task)",
                self.slots.capacity() * std::mem::size_of::<Slot>(),
            ),
            (
                "runner successors (4 B/edge, once per stored task in runs)",
                (self.succ.capacity() + self.shared.capacity() + self.shared_start.capacity()) * 4
                    + self.run_pages.capacity() * 4
                    + self.runs.capacity() * std::mem::size_of::<Run>(),
            ),
            (
                "runner done times (8 B/task, only with spans)",
                self.done_at.capacity() * 8,
            ),
            ("runner operation of each task", self.ops_of.heap_bytes()),
        ]
    }
    /// When the last task completed so far (zero before any): a run's makespan
    /// once [`DagRunner::finished`]. Backends report this, never the time of
    /// their last queued event, which may be stale or after the work (a fault).
    pub fn last_done(&self) -> SimTime {
        self.last_done
    }
}

/// Per run of the DAG, per dependency of its base's stored tasks (from
/// the base's first), whether that edge is shared ([`DagRunner::build`]) in
/// every repeat: it is in the first (its task, shifted one block, is in the
/// first repeat of a run of the same length and count), hence in the k-th
/// (shifted k blocks it stays inside that run, in its k-th repeat).
fn always_shared(dag: &Dag) -> Vec<Vec<bool>> {
    dag.runs
        .iter()
        .map(|r| {
            let bs = r.base_stored as usize;
            let (e0, e1) = (
                dag.dep_start[bs] as usize,
                dag.dep_start[bs + r.len as usize] as usize,
            );
            dag.deps[e0..e1]
                .iter()
                .map(|&p| {
                    p & GATE == 0
                        && dag
                            .copy_of(((p >> 1) + r.len) as usize)
                            .is_some_and(|(rx, kx)| {
                                let x = &dag.runs[rx];
                                kx == 1 && x.len == r.len && x.count == r.count
                            })
                })
                .collect()
        })
        .collect()
}

/// Calls `f(t, x, on_sent, class)` for every dependency of every task, in
/// task order and each task's dependencies in order: task `t` waits for
/// task `x` (to be sent when `on_sent` is 1, else done), and `class` is
/// `classify(copy_of(t), x, gate)` (see [`DagRunner::build`]). The repeats
/// of a run (most tasks of a large collective) are walked from their base's
/// stored dependencies, without looking up where each task and each
/// dependency sits, and an edge [`always_shared`] says is shared is not
/// classified again: what the lookups would give, at a fraction of the cost
/// (the runner's build was 4-5% of flow131k).
fn for_each_edge(
    dag: &Dag,
    always: &[Vec<bool>],
    classify: &impl Fn(Option<(usize, u32)>, usize, bool) -> Option<u32>,
    mut f: impl FnMut(usize, usize, u32, Option<u32>),
) {
    let general = |t: usize, f: &mut dyn FnMut(usize, usize, u32, Option<u32>)| {
        let cy = dag.copy_of(t);
        for (d, gate) in dag.deps_flagged(TaskId(t as u32)) {
            let (p, on_sent) = match d {
                Dep::Sent(p) => (p, 1),
                Dep::Done(p) => (p, 0),
            };
            let x = p.0 as usize;
            f(t, x, on_sent, classify(cy, x, gate));
        }
    };
    let mut t = 0;
    for (ri, r) in dag.runs.iter().enumerate() {
        while t < r.start as usize {
            general(t, &mut f);
            t += 1;
        }
        let bs = r.base_stored as usize;
        let e0 = dag.dep_start[bs] as usize;
        for k in 1..=r.count {
            let off = k * r.len;
            for j in 0..r.len as usize {
                let st = bs + j;
                for e in dag.dep_start[st] as usize..dag.dep_start[st + 1] as usize {
                    let p = dag.deps[e];
                    let gate = p & GATE != 0;
                    let id = (p & !GATE) >> 1;
                    let x = if gate { id } else { id + off } as usize;
                    let class = if always[ri][e - e0] {
                        Some(k)
                    } else {
                        classify(Some((ri, k)), x, gate)
                    };
                    f(t, x, p & 1, class);
                }
                t += 1;
            }
        }
    }
    while t < dag.len() {
        general(t, &mut f);
        t += 1;
    }
}

/// The operation of each task, run-length encoded when tasks of one
/// operation are contiguous (a collective sweep: one run per operation, against
/// 4 B per task), else one entry per task (a training step that interleaves them).
enum OpsOf {
    /// (first task, operation) at each change of operation, by task.
    Runs(Vec<(u32, u32)>),
    /// Per task.
    Each(Vec<u32>),
}

impl OpsOf {
    fn new(dag: &Dag) -> OpsOf {
        if dag.op_runs.len() > dag.len() / 4 {
            return OpsOf::Each(dag.tasks().map(|t| t.op).collect());
        }
        OpsOf::Runs(dag.op_runs.clone())
    }

    /// Bytes on the heap, by capacity.
    fn heap_bytes(&self) -> usize {
        match self {
            OpsOf::Runs(r) => r.capacity() * 8,
            OpsOf::Each(v) => v.capacity() * 4,
        }
    }

    #[inline]
    fn get(&self, t: u32) -> u32 {
        match self {
            OpsOf::Runs(r) => {
                let i = r.partition_point(|&(first, _)| first <= t);
                r[i.saturating_sub(1)].1
            }
            OpsOf::Each(v) => v[t as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_releases_on_sent_and_done() {
        let mut d = Dag::new();
        d.begin_op("x");
        let a = d.transfer(GpuId(0), GpuId(1), 10, &[]);
        let b = d.transfer(GpuId(0), GpuId(1), 10, &[Dep::Sent(a)]);
        let c = d.marker(&[Dep::Done(a), Dep::Done(b)]);
        let mut r = DagRunner::new(&d);
        let mut ready = Vec::new();
        r.start(&mut ready);
        assert_eq!(ready, vec![a]);
        ready.clear();
        r.sent(a, SimTime(5), &mut ready);
        assert_eq!(ready, vec![b]);
        ready.clear();
        r.done(a, SimTime(7), &mut ready);
        assert!(ready.is_empty());
        r.done(b, SimTime(9), &mut ready);
        assert_eq!(ready, vec![c]);
        r.done(c, SimTime(9), &mut Vec::new());
        assert!(r.finished());
        assert_eq!(r.last_done(), SimTime(9));
        assert_eq!(
            r.op_timing[0],
            OpTiming {
                start: SimTime(0),
                end: SimTime(9)
            }
        );
    }

    /// A runner without spans reports the same completion time of every task
    /// (done − start) as one that keeps both ends, and no spans.
    #[test]
    fn runner_without_spans_keeps_completion_times() {
        let mut d = Dag::new();
        d.begin_op("x");
        let a = d.transfer(GpuId(0), GpuId(1), 10, &[]);
        let b = d.transfer(GpuId(0), GpuId(1), 10, &[Dep::Sent(a)]);
        let c = d.marker(&[Dep::Done(a), Dep::Done(b)]);
        let mut runs = Vec::new();
        for mut r in [DagRunner::new(&d), DagRunner::without_spans(&d)] {
            let mut ready = Vec::new();
            r.start(&mut ready);
            r.sent(a, SimTime(5), &mut ready);
            r.done(a, SimTime(7), &mut ready);
            r.done(b, SimTime(19), &mut ready);
            r.done(c, SimTime(19), &mut ready);
            assert!(r.finished());
            // a: 0..7; b: ready when a was sent (5), done at 19; c: 19..19
            let spans: Vec<SimTime> = [a, b, c].iter().map(|&t| r.span(t)).collect();
            assert_eq!(spans, [SimTime(7), SimTime(14), SimTime(0)]);
            runs.push(r.take_spans());
        }
        assert_eq!(runs[0].0, [SimTime(0), SimTime(5), SimTime(19)]);
        assert_eq!(runs[0].1, [SimTime(7), SimTime(19), SimTime(19)]);
        assert!(runs[1].0.is_empty() && runs[1].1.is_empty());
    }

    /// The packed tables give back every field as set: kinds (a value past
    /// 46 bits kept whole), interleaved operations, rare fields set out of
    /// order, a kind replaced; and a task costs 16 B of kind, not a 32-byte
    /// `Task` (`size_of`, the figure `heap_bytes` counts per task).
    #[test]
    fn packed_tasks_round_trip_every_field() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
        assert_eq!(std::mem::size_of::<Attrs>(), 8);
        let mut d = Dag::new();
        let x = d.begin_op("x");
        let y = d.begin_op("y");
        let huge = 1u64 << 63; // past the 46 bits kept inline
        let kinds = [
            TaskKind::Transfer {
                src: GpuId(7),
                dst: GpuId(u32::MAX),
                bytes: 1 << 30,
            },
            TaskKind::NetTransfer {
                src: NodeId(3),
                dst: NodeId(4),
                bytes: huge,
            },
            TaskKind::Compute {
                gpu: GpuId(2),
                duration: SimTime(WIDE),
            },
            TaskKind::Marker,
            TaskKind::Transfer {
                src: GpuId(0),
                dst: GpuId(1),
                bytes: 0,
            },
        ];
        let mut ids = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            d.set_op(if i % 2 == 0 { x } else { y });
            ids.push(d.add(*k, &[]));
        }
        // rare fields, the later task first
        d.set_class(ids[4], 2);
        d.set_qp(ids[0], 3);
        d.set_qp(ids[1], 255); // every bit of the queue pair, beside a wide value
        d.set_software(ids[0], SimTime(500));
        let want = |i: usize| Task {
            kind: kinds[i],
            op: if i % 2 == 0 { x } else { y },
            sw: u8::from(i == 0),
            qp: [3, 255, 0, 0, 0][i],
            class: if i == 4 { 3 } else { 0 },
        };
        assert_eq!(d.tasks().len(), kinds.len());
        for (i, t) in d.tasks().enumerate() {
            assert_eq!(d.task(i), want(i), "task {i}");
            assert_eq!(t, want(i), "task {i} by the iterator");
        }
        assert_eq!(d.software_latency(ids[0]), SimTime(500));
        assert_eq!(d.transfer_bytes(), (1 << 30) + huge);
        // a wide value replaced by a narrow one and back
        let narrow = TaskKind::Compute {
            gpu: GpuId(2),
            duration: SimTime(9),
        };
        d.set_kind(2, narrow);
        assert_eq!(d.kind(2), narrow);
        assert_eq!(d.kind(1), kinds[1]);
        d.set_kind(2, kinds[2]);
        assert_eq!(d.kind(2), kinds[2]);
        // replacing a kind keeps the software latency and queue pair
        d.set_kind(0, kinds[0]);
        d.set_kind(1, kinds[1]);
        assert_eq!((d.task(0), d.task(1)), (want(0), want(1)));
    }

    /// Operation timing is the same whether the runner keeps operations
    /// run-length encoded (contiguous) or per task (interleaved), and freeing
    /// the scheduling tables keeps the finished state.
    #[test]
    fn op_timing_with_contiguous_and_interleaved_operations() {
        for interleave in [false, true] {
            let mut d = Dag::new();
            let x = d.begin_op("x");
            let y = d.begin_op("y");
            let mut prev = None;
            for i in 0..12u32 {
                d.set_op(if interleave { i % 2 } else { i / 6 });
                let deps: Vec<Dep> = prev.map(Dep::Done).into_iter().collect();
                prev = Some(d.transfer(GpuId(0), GpuId(1), 10, &deps));
            }
            let mut r = DagRunner::new(&d);
            assert_eq!(matches!(r.ops_of, OpsOf::Each(_)), interleave);
            let mut ready = Vec::new();
            r.start(&mut ready);
            for i in 0..12u64 {
                let t = ready.pop().expect("a chain: one ready at a time");
                r.done(t, SimTime(10 * (i + 1)), &mut ready);
            }
            assert!(r.finished());
            let (tx, ty) = (r.op_timing[x as usize], r.op_timing[y as usize]);
            if interleave {
                // x: tasks 0, 2, ..., 10 (done at 10, 30, ..., 110); y: 1, ..., 11
                assert_eq!((tx.start, tx.end), (SimTime(0), SimTime(110)));
                assert_eq!((ty.start, ty.end), (SimTime(10), SimTime(120)));
            } else {
                assert_eq!((tx.start, tx.end), (SimTime(0), SimTime(60)));
                assert_eq!((ty.start, ty.end), (SimTime(60), SimTime(120)));
            }
            r.free_schedule();
            assert!(r.finished());
            assert_eq!(r.completed(), 12);
            let (start, done) = r.take_spans();
            assert_eq!(done[11], SimTime(120));
            assert_eq!(start[11], SimTime(110));
        }
    }

    /// The accounting `FABRICSIM_FLOW_MEM` prints counts each table at its
    /// per-task and per-dependency size: a chain of 1,000 tasks (999
    /// dependencies) built with exact capacities: the DAG 16 B per task, 4 B
    /// per task plus one of dependency starts; the runner a 16-byte slot per
    /// task plus one, 4 B per dependency, and 8 B of done time per task only
    /// when it keeps spans. Figures from the struct layouts (documented on
    /// `Dag` and `DagRunner`).
    #[test]
    fn table_bytes_count_each_table_at_its_size() {
        let mut d = Dag::new();
        d.begin_op("chain");
        let mut prev = d.marker(&[]);
        for _ in 1..1000 {
            prev = d.marker(&[Dep::Done(prev)]);
        }
        d.kinds.shrink_to_fit();
        d.deps.shrink_to_fit();
        d.dep_start.shrink_to_fit();
        let dag: Vec<usize> = d.table_bytes().iter().map(|r| r.1).collect();
        assert_eq!(dag[..3], [16_000, 4 * 1001, 4 * 999]);
        assert_eq!(dag.iter().sum::<usize>(), d.heap_bytes());
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        let r = DagRunner::new(&d);
        let run: Vec<usize> = r.table_bytes().iter().map(|r| r.1).collect();
        assert_eq!(run[..3], [16 * 1001, 4 * 999, 8_000]);
        let r = DagRunner::without_spans(&d);
        let run: Vec<usize> = r.table_bytes().iter().map(|r| r.1).collect();
        assert_eq!(run[..3], [16 * 1001, 4 * 999, 0]);
    }

    /// Builds a DAG of per-host blocks: two rounds of six hosts, each host a
    /// transfer, a transfer after it is sent, a compute and a marker, waiting
    /// for the round's gate (common) and its own previous round (shifted);
    /// hosts 4 and 5 move other bytes, so a run ends and another starts. With
    /// `blocks` the hosts are marked as blocks.
    fn host_blocks(blocks: bool) -> Dag {
        let mut d = Dag::new();
        d.begin_op("x");
        let mut gate = d.marker(&[]);
        let mut prev: Vec<Option<TaskId>> = vec![None; 6];
        for _round in 0..2 {
            for (h, p) in prev.iter_mut().enumerate() {
                if blocks {
                    d.begin_block();
                }
                let g = 4 * h as u32;
                let bytes = if h < 4 { 100 } else { 200 };
                let mut deps = vec![Dep::Done(gate)];
                deps.extend(p.map(Dep::Done));
                let t0 =
                    d.transfer_after_software(GpuId(g), GpuId(g + 1), bytes, SimTime(7), &deps);
                let t1 = d.transfer(GpuId(g + 1), GpuId(g + 2), bytes, &[Dep::Sent(t0)]);
                let c = d.compute(GpuId(g + 2), SimTime(50), &[Dep::Done(t1)]);
                *p = Some(d.marker(&[Dep::Done(c), Dep::Done(t0)]));
            }
            if blocks {
                d.end_blocks();
            }
            let all: Vec<Dep> = prev.iter().flatten().map(|&t| Dep::Done(t)).collect();
            gate = d.marker(&all);
        }
        d
    }

    /// Runs `d` with a runner: a task sends after half its bytes (or compute
    /// picoseconds) and is done after all of them; returns its spans.
    fn run_spans(d: &Dag) -> (Vec<SimTime>, Vec<SimTime>) {
        use std::cmp::Reverse;
        let mut r = DagRunner::new(d);
        let (mut ready, mut events) = (Vec::new(), std::collections::BinaryHeap::new());
        r.start(&mut ready);
        let mut now = 0;
        loop {
            for t in ready.drain(..) {
                let dur = match d.kind(t.0 as usize) {
                    TaskKind::Compute { duration, .. } => duration.ps(),
                    k => k.transfer_bytes(),
                };
                events.push(Reverse((now + dur / 2, t.0, 0)));
                events.push(Reverse((now + dur, t.0, 1)));
            }
            let Some(Reverse((at, t, phase))) = events.pop() else {
                break;
            };
            now = at;
            if phase == 0 {
                r.sent(TaskId(t), SimTime(at), &mut ready);
            } else {
                r.done(TaskId(t), SimTime(at), &mut ready);
            }
        }
        assert!(r.finished());
        r.take_spans()
    }

    /// Asserts that `a` and `b` read alike: every task, its dependencies,
    /// the runner's successor lists and unmet counts, and a run's spans.
    fn assert_same(a: &Dag, b: &Dag) {
        assert_eq!((a.len(), a.edges()), (b.len(), b.edges()));
        assert!(a.tasks().eq(b.tasks()));
        for t in 0..a.len() {
            assert_eq!(a.task(t), b.task(t), "task {t}");
            let id = TaskId(t as u32);
            assert!(a.deps_of(id).eq(b.deps_of(id)), "deps of {t}");
            assert_eq!(a.software_latency(id), b.software_latency(id));
        }
        let (ra, rb) = (DagRunner::new(a), DagRunner::new(b));
        // a task's successors: its own list and its stored copy's shared one
        let succ = |r: &DagRunner, x: usize| -> Vec<u32> {
            let own = &r.succ[r.slots[x].succ_start as usize..r.slots[x + 1].succ_start as usize];
            let mut all = own.to_vec();
            if !r.shared.is_empty() {
                let st = locate_in(&r.runs, &r.run_pages, x).0;
                let common =
                    &r.shared[r.shared_start[st] as usize..r.shared_start[st + 1] as usize];
                all.extend(common.iter().map(|&c| c + ((x as u32) << 1)));
            }
            all.sort_unstable();
            all
        };
        for x in 0..a.len() {
            assert_eq!(succ(&ra, x), succ(&rb, x), "successors of {x}");
        }
        let key = |r: &DagRunner| -> Vec<u32> { r.slots.iter().map(|s| s.pend).collect() };
        assert_eq!(key(&ra), key(&rb));
        assert_eq!(run_spans(a), run_spans(b));
    }

    /// A DAG built with blocks reads and runs exactly as the same DAG built
    /// flat, and stores each run once: per round, hosts 1–3 repeat host 0
    /// and host 5 repeats host 4, 4 × 4 tasks not stored, of 51 tasks
    /// (1 gate + 2 × (6 × 4 + 1)). Changing a repeated task stores every
    /// task again and still reads as the flat DAG changed alike.
    #[test]
    fn repeated_blocks_read_and_run_as_stored_ones() {
        let (mut blocked, mut flat) = (host_blocks(true), host_blocks(false));
        assert_eq!(flat.len(), 1 + 2 * (6 * 4 + 1));
        assert_eq!(flat.stored_tasks(), flat.len());
        assert_eq!(blocked.stored_tasks(), flat.len() - 2 * 4 * 4);
        assert!(blocked.heap_bytes() < flat.heap_bytes());
        // the runner holds the edges into hosts 1–3 (and 5) once, with host
        // 0's (4's) stored tasks; only those from the gates are the repeats'
        // own: per repeat 4 edges inside the block in round 0, and 5 in round
        // 1 (plus the one on its previous round), 4 repeats per round
        let shared = DagRunner::new(&blocked).shared.len();
        assert_eq!(shared, 2 * 4 + 2 * 5);
        assert_eq!(
            DagRunner::new(&blocked).succ.len() + shared + 4 * 4 + 4 * 5,
            DagRunner::new(&flat).succ.len()
        );
        assert_same(&blocked, &flat);
        // task 1 + 2·4 + 1: host 2's second transfer, a repeat
        let t = TaskId(1 + 2 * 4 + 1);
        for d in [&mut blocked, &mut flat] {
            d.set_qp(t, 3);
        }
        assert_eq!(blocked.stored_tasks(), blocked.len());
        assert_eq!(blocked.qp_of(t.0 as usize), 3);
        assert_eq!(blocked.qp_of(t.0 as usize + 4), 0);
        assert_same(&blocked, &flat);
        // changing a base (host 0's compute) is seen in it alone
        let (mut blocked, mut flat) = (host_blocks(true), host_blocks(false));
        let slow = TaskKind::Compute {
            gpu: GpuId(2),
            duration: SimTime(500),
        };
        blocked.set_kind(3, slow);
        flat.set_kind(3, slow);
        assert_eq!(blocked.kind(7), flat.kind(7));
        assert_same(&blocked, &flat);
    }

    /// The runner's build walks the repeats of runs from their bases'
    /// dependencies ([`for_each_edge`]): the same edges, in the same order,
    /// with the same classes, as looking up every task and dependency
    /// (the walk it replaces), on runs of blocks with gates, with edges
    /// between runs of one shape and of different counts (round 1's last
    /// hosts repeat fewer times than round 0's), and on a flat DAG.
    #[test]
    fn build_walks_the_edges_of_a_lookup_per_task() {
        let mut uneven = host_blocks(true);
        // a third round of three hosts: runs of another count
        let mut prev: Vec<TaskId> = Vec::new();
        for h in 0..3u32 {
            uneven.begin_block();
            let deps: Vec<Dep> = prev.last().map(|&t| Dep::Done(t)).into_iter().collect();
            let t = uneven.transfer(GpuId(4 * h), GpuId(4 * h + 1), 10, &deps);
            prev.push(uneven.compute(GpuId(4 * h + 1), SimTime(5), &[Dep::Sent(t)]));
        }
        uneven.end_blocks();
        for d in [host_blocks(true), host_blocks(false), uneven] {
            let shape = |r: usize| (d.runs[r].len, d.runs[r].count);
            let classify = |cy: Option<(usize, u32)>, x: usize, gate: bool| -> Option<u32> {
                if gate {
                    return None;
                }
                let (ry, ky) = cy?;
                let (rx, kx) = d.copy_of(x)?;
                (kx == ky && shape(rx) == shape(ry)).then_some(ky)
            };
            let mut reference = Vec::new();
            for t in 0..d.len() {
                let cy = d.copy_of(t);
                for (dep, gate) in d.deps_flagged(TaskId(t as u32)) {
                    let (p, on_sent) = match dep {
                        Dep::Sent(p) => (p, 1),
                        Dep::Done(p) => (p, 0),
                    };
                    let x = p.0 as usize;
                    reference.push((t, x, on_sent, classify(cy, x, gate)));
                }
            }
            let mut walked = Vec::new();
            for_each_edge(&d, &always_shared(&d), &classify, |t, x, s, c| {
                walked.push((t, x, s, c))
            });
            assert_eq!(walked, reference);
            assert!(!reference.is_empty());
            // the shortcut is taken where there are runs
            let always = always_shared(&d);
            assert_eq!(d.runs.is_empty(), !always.iter().flatten().any(|&b| b));
        }
    }

    /// `copy_of` through the page table finds the same (run, copy) as the
    /// definition (a scan of every run's base and repeats) for every task.
    #[test]
    fn copy_of_matches_a_scan_of_the_runs() {
        let d = host_blocks(true);
        assert!(!d.runs.is_empty());
        for t in 0..d.len() {
            let scan = d.runs.iter().enumerate().find_map(|(i, r)| {
                let (b, s) = (r.base as usize, r.start as usize);
                let span = (r.len * r.count) as usize;
                if (b..b + r.len as usize).contains(&t) {
                    Some((i, 0))
                } else if (s..s + span).contains(&t) {
                    Some((i, ((t - s) / r.len as usize + 1) as u32))
                } else {
                    None
                }
            });
            assert_eq!(d.copy_of(t), scan, "task {t}");
        }
        assert_eq!(host_blocks(false).copy_of(3), None);
    }
}
