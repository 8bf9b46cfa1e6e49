//! Flow-level backend: transfers are fluid flows that share links max-min fairly.
//!
//! Events happen only when a flow starts or ends (and when a compute task or a
//! delivery completes). Rates are recomputed by progressive filling
//! (water-filling, Bertsekas & Gallager, *Data Networks*, §6.5.2) but only over
//! the *connected component* of flows and links touched since the last event
//! time: flows that share no link, directly or transitively, with a change keep
//! their rates. All changes at one timestamp are batched into one recomputation.
//!
//! A transfer of `S` bytes on a path with latency α is *sent* when its last
//! byte leaves the source (S / rate, integrated over its changing rate) and
//! *done* α later, the same convention as the analytical backend, so the two
//! agree exactly on an idle fabric.
//!
//! **Link events** ([`FlowConfig::link_events`]): at a given time a link (one
//! direction; name both for a cable) goes down or changes rate. A link going down
//! takes its reverse down too ([`Topology::set_link_up`], on the backend's own copy
//! of the topology), routes are recomputed, and every flow crossing it is moved to
//! a new ECMP path with the bytes it still has to send (bytes already sent are
//! delivered). A rate change rescales the link's capacity and re-shares it.
//!
//! **Traffic classes** ([`FlowConfig::classes`]): when the transfers ride more
//! than one class of `[[fabric.classes]]`, every change recomputes all flows'
//! rates with [`super::class_share`] (strict priority between levels,
//! weighted sharing between the classes of a level, max-min within a class)
//! instead of the incremental max-min above; a run whose transfers all ride
//! one class is max-min and keeps the incremental path untouched.
//!
//! Two opt-in observers cost nothing when off and never change results:
//! [`FlowConfig::link_timeline`] records the bytes each link carries per time
//! bucket (a fixed, preallocated table whose buckets double in width as the run
//! grows), and [`FlowConfig::progress`] is called every [`PROGRESS_EVERY`] events.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use std::fmt;

use super::class_share::{ClassShare, ClassWeight};
use super::{FabricCounters, LinkCounters, RunOutput};
pub use super::{LinkEvent, LinkEventKind, ProgressHook, ProgressTick, PROGRESS_EVERY};
use crate::config::Fidelity;
use crate::dag::{Dag, DagRunner, TaskId, TaskKind};
use crate::mechanism::TrafficClasses;
use crate::topology::{mix64, LinkId, Topology};
use crate::units::SimTime;

/// Longest path a flow may take, in links (the shipped shapes use at most 10).
const MAX_PATH: usize = 16;
const _: () = assert!(MAX_PATH <= 16, "Vacated::tight_mask has 16 bits");

use super::timeline::Timeline;
pub use super::timeline::TIMELINE_BUCKETS;

/// Settings of the flow backend.
#[derive(Clone, Default)]
pub struct FlowConfig {
    /// Seed of the ECMP hash (the only randomness at this fidelity).
    pub seed: u64,
    /// Recompute every flow reachable through any shared link at each change (the
    /// textbook global component) instead of only through saturated links. Same
    /// results, much slower; kept as the reference the tests compare against.
    pub full_recompute: bool,
    /// Timed link changes (faults), in any order.
    pub link_events: Vec<LinkEvent>,
    /// Record the bytes each link carries per time bucket ([`RunOutput::link_timeline`]).
    /// Off by default; results are identical either way.
    pub link_timeline: bool,
    /// A guess of how long the run sends (e.g. the analytical time), used to size the
    /// timeline's buckets; zero when unknown. Any value gives the same totals.
    pub timeline_horizon: SimTime,
    /// Keep the timeline rows of only this many links, the busiest by bytes (0 = all).
    pub timeline_links: usize,
    /// Called every [`PROGRESS_EVERY`] events with the simulated time reached.
    pub progress: Option<ProgressHook>,
    /// Traffic classes (a transfer's `class`, or the workload's `data` class):
    /// links are shared among classes as [`super::class_share`] describes when
    /// the transfers ride more than one; `None`, or one class, is max-min.
    pub classes: Option<TrafficClasses>,
    /// The caller does not read [`RunOutput::task_start`] and
    /// [`RunOutput::task_done`] (no timeline export): they come back empty and
    /// the run keeps one time per task instead of two
    /// ([`DagRunner::without_spans`], 8 B per task less: 537 MB on the
    /// 131,072-GPU benchmark's 67 M tasks). Results are otherwise identical.
    pub skip_task_spans: bool,
}

impl fmt::Debug for FlowConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowConfig")
            .field("seed", &self.seed)
            .field("full_recompute", &self.full_recompute)
            .field("link_events", &self.link_events)
            .field("link_timeline", &self.link_timeline)
            .field("timeline_horizon", &self.timeline_horizon)
            .field("timeline_links", &self.timeline_links)
            .field("progress", &self.progress.is_some())
            .field("classes", &self.classes)
            .field("skip_task_spans", &self.skip_task_spans)
            .finish()
    }
}

/// Why the flow backend stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlowError {
    /// A transfer's endpoints have no route between them.
    #[error("transfer {task} from {src} to {dst} has no route (GPU indices; node indices for a hop between adjacent nodes)")]
    Unreachable {
        /// Task index.
        task: u32,
        /// Source GPU.
        src: u32,
        /// Destination GPU.
        dst: u32,
    },
    /// A path is longer than the backend supports.
    #[error("a route has {0} links; the flow backend supports at most {MAX_PATH}")]
    PathTooLong(usize),
    /// The DAG stopped making progress before every task completed.
    #[error("{0} tasks never became ready (a dependency was never met)")]
    Stalled(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EvKind {
    /// A flow's last byte left the source (if `version` still matches).
    FlowSent,
    /// A task completed (transfer delivered, compute finished).
    TaskDone,
    /// `cfg.link_events[id]` happens.
    Link,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Event {
    time: u64,
    seq: u64,
    kind: EvKind,
    id: u32,
    version: u32,
}

/// The pending events, popped earliest first, ties by sequence number (unique,
/// so the order is total): a 4-ary min-heap of
/// the distinct pending *times*, each with a FIFO of its events. Sequence
/// numbers only grow, so the events of one time are pushed in sequence order
/// and a FIFO keeps it: the order is exactly that of a heap of events (the
/// single 4-ary heap of events this replaces). A collective's symmetric flows
/// (every rail, every host at one tree depth) end at the same picosecond, so
/// the heap holds far fewer entries than there are events, and a pop of a
/// time's second event on is a read of the next entry of its FIFO. Profile
/// of the 16,384-GPU flow benchmark: 16% of the run was the heap of events'
/// pop, cache misses down its levels. A FIFO entry keeps only what its time
/// and position do not say (12 B, not the 32 of an [`Event`]).
#[derive(Default)]
struct EventQueue {
    /// (time, bucket) of every distinct pending time: a 4-ary min-heap on the
    /// time (unique, so the order is total).
    times: Vec<(u64, u32)>,
    /// Each pending time's events in push order, from `head` on; emptied
    /// buckets are kept for reuse (no allocation once the run is warm).
    buckets: Vec<Bucket>,
    free: Vec<u32>,
    /// The bucket of each pending time (only looked up, never iterated).
    index: std::collections::HashMap<u64, u32, std::hash::BuildHasherDefault<MixHasher>>,
    len: usize,
    high_water: usize,
    /// Sequence number of the last push: they must only grow.
    last_seq: u64,
    /// (time, bucket) of the last push, `None` once that bucket is freed:
    /// a run of pushes mostly shares a time (every flow of a timestamp's
    /// hand-over ends at one time, every finish delivers at one), and the
    /// memo skips the index's hash and probe for them.
    last_push: Option<(u64, u32)>,
}

#[derive(Default)]
struct Bucket {
    events: Vec<Queued>,
    head: usize,
}

/// An [`Event`] in its time's FIFO.
#[derive(Clone, Copy)]
struct Queued {
    id: u32,
    version: u32,
    kind: EvKind,
}
const _: () = assert!(std::mem::size_of::<Queued>() == 12);

impl EventQueue {
    fn push(&mut self, e: Event) {
        let b = match self.last_push {
            Some((t, b)) if t == e.time => b,
            _ => self.bucket_of(e.time),
        };
        self.last_push = Some((e.time, b));
        // the invariant that makes a FIFO per time the (time, seq) order
        debug_assert!(e.seq > self.last_seq, "sequence numbers only grow");
        self.last_seq = e.seq;
        self.buckets[b as usize].events.push(Queued {
            id: e.id,
            version: e.version,
            kind: e.kind,
        });
        self.len += 1;
        self.high_water = self.high_water.max(self.len);
    }

    /// The bucket of pending time `time`, a new one if it has none.
    fn bucket_of(&mut self, time: u64) -> u32 {
        match self.index.get(&time) {
            Some(&b) => b,
            None => {
                let b = match self.free.pop() {
                    Some(b) => b,
                    None => {
                        self.buckets.push(Bucket::default());
                        self.buckets.len() as u32 - 1
                    }
                };
                self.index.insert(time, b);
                self.push_time(time, b);
                b
            }
        }
    }

    fn pop(&mut self) -> Option<Event> {
        let &(time, b) = self.times.first()?;
        let bucket = &mut self.buckets[b as usize];
        let q = bucket.events[bucket.head];
        let e = Event {
            time,
            seq: 0, // its place in the FIFO is its order; not read once popped
            kind: q.kind,
            id: q.id,
            version: q.version,
        };
        bucket.head += 1;
        if bucket.head == bucket.events.len() {
            bucket.events.clear();
            bucket.head = 0;
            self.index.remove(&time);
            self.pop_time();
            self.free.push(b);
            if self.last_push.is_some_and(|(t, _)| t == time) {
                self.last_push = None;
            }
        }
        self.len -= 1;
        Some(e)
    }

    /// The event `k` places after the next one, when it shares the next
    /// one's time (a hint for prefetching its data; `None` past the time's
    /// FIFO, where order is still to be decided).
    #[inline]
    fn peek_ahead(&self, k: usize) -> Option<Queued> {
        let &(_, b) = self.times.first()?;
        let bucket = &self.buckets[b as usize];
        bucket.events.get(bucket.head + k).copied()
    }

    /// Time of the next event.
    fn peek_time(&self) -> Option<u64> {
        self.times.first().map(|t| t.0)
    }

    fn push_time(&mut self, time: u64, bucket: u32) {
        let mut i = self.times.len();
        self.times.push((time, bucket));
        while i > 0 {
            let p = (i - 1) / 4;
            if self.times[p].0 <= time {
                break;
            }
            self.times[i] = self.times[p];
            i = p;
        }
        self.times[i] = (time, bucket);
    }

    fn pop_time(&mut self) {
        let Some(last) = self.times.pop() else {
            return;
        };
        let n = self.times.len();
        if n == 0 {
            return;
        }
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            let mut m = c;
            for j in c + 1..(c + 4).min(n) {
                if self.times[j].0 < self.times[m].0 {
                    m = j;
                }
            }
            if self.times[m].0 >= last.0 {
                break;
            }
            self.times[i] = self.times[m];
            i = m;
        }
        self.times[i] = last;
    }

    /// Bytes held on the heap, by capacity (the index counted at its entry
    /// and control byte).
    fn heap_bytes(&self) -> usize {
        self.times.capacity() * 16
            + self
                .buckets
                .iter()
                .map(|b| b.events.capacity() * std::mem::size_of::<Queued>())
                .sum::<usize>()
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
            + self.free.capacity() * 4
            + self.index.capacity() * (8 + 4 + 1)
    }
}

/// A flow's state, its fields in the order the hot paths read them: line 0
/// the scalars finishing and re-rating a flow read, line 1 its path, line 2
/// its cached route (which the next chunk on its connection reads, right
/// after it finishes) and what rerouting, the timeline and the water-filling
/// touch, line 3 the back-pointers only spilled flow lists use. The main
/// loop prefetches lines 0 to 2 of a flow whose end is coming up
/// ([`Sim::prefetch_ahead`]); with the compiler's order the fields a finish
/// reads were spread over all four lines.
#[derive(Clone)]
#[repr(C, align(64))]
struct Flow {
    task: u32,
    version: u32,
    // scratch for water-filling
    visit: u32,
    path_len: u8,
    /// A completion event for the current version is in the heap.
    scheduled: bool,
    /// Sending (not yet finished, not a free slot).
    live: bool,
    frozen: bool,
    /// Bytes still to send.
    remaining: f64,
    /// Current rate, bytes per picosecond.
    rate: f64,
    /// When `remaining` was last brought up to date.
    last: u64,
    latency: u64,
    /// Bytes left when the flow took its current path (for per-link byte counts).
    path_bytes: f64,
    bytes: u64,
    path: [u32; MAX_PATH],
    /// (source, destination, queue pair) of the cached route (see
    /// [`Sim::start_path`]) that `path` is, its latency, picoseconds, and
    /// bottleneck rate; [`NO_ROUTE`] when `path` is no cached route (not
    /// cacheable, or rerouted). Kept after the flow ends, until its slot is
    /// reused: the next chunk on the same connection usually starts right
    /// after, and reads its route here, in a line just touched, instead of
    /// in the route cache (a miss per started flow: 11% of flow16k-tree-4m).
    route_key: u128,
    route_latency: u64,
    route_bottleneck: crate::units::Rate,
    /// Rate before the current recomputation.
    old_rate: f64,
    /// Link timeline: bytes not yet recorded, and since when the flow has sent at
    /// its current rate (recorded only when the rate changes or the flow ends).
    tl_left: f64,
    tl_from: u64,
    /// Times the flow was moved to a new path.
    reroutes: u32,
    /// Traffic class (index into the fabric's classes; used only when the
    /// run shares links among classes).
    class: u8,
    /// Where the flow sits in the spilled flow list of link `path[j]`
    /// (`Sim::spilled`), for each j whose link's list is spilled: the
    /// back-pointer that makes leaving a long list O(1) ([`Sim::unlink`]);
    /// unused while the list is inline.
    slot: [u32; MAX_PATH],
}
const _: () = {
    assert!(std::mem::size_of::<Flow>() == 256);
    assert!(std::mem::offset_of!(Flow, path) == 64);
    assert!(std::mem::offset_of!(Flow, route_key) == 128);
    assert!(std::mem::offset_of!(Flow, slot) == 192);
};

/// [`Flow::route_key`] of a flow whose path is no cached route (a real key
/// has a 40-bit source shift, so its top bits are zero).
const NO_ROUTE: u128 = u128::MAX;

/// How many events ahead in its time's FIFO the main loop prefetches an
/// event's flow record or runner slot ([`Sim::prefetch_ahead`]).
const PREFETCH_FAR: usize = 4;
/// How many events ahead it prefetches the links of a flow's path (whose
/// record the far prefetch brought in).
const PREFETCH_NEAR: usize = 2;

/// How many new flows ahead the hand-over prefetches a flow's record and
/// then its key's table slot ([`Sim::hand_over`]).
const HAND_OVER_AHEAD: usize = 8;

/// Freed flow slots [`Sim::start_path`] looks at for a starting transfer's
/// route before the route cache (the most recently freed first).
const RECENT_FREED: usize = 4;

/// What a run that shares links among traffic classes keeps.
struct Classed {
    /// Per class: priority and weight.
    weights: Vec<ClassWeight>,
    /// Class of a transfer naming none.
    data: u8,
    share: ClassShare,
    /// Capacity of each link, bytes per picosecond (the solver reads it whole).
    cap: Vec<f64>,
}

impl Classed {
    /// `Some` when the transfers of `dag` ride more than one class.
    fn new(dag: &Dag, classes: Option<&TrafficClasses>, cap: &[f64]) -> Option<Classed> {
        let tc = classes?;
        let mut seen: Option<u8> = None;
        let mut mixed = false;
        for t in dag.tasks() {
            if !t.kind.is_transfer() {
                continue;
            }
            let c = Self::class_of(t.class, tc.data);
            match seen {
                None => seen = Some(c),
                Some(s) if s != c => {
                    mixed = true;
                    break;
                }
                Some(_) => {}
            }
        }
        mixed.then(|| Classed {
            weights: tc
                .classes
                .iter()
                .map(|c| ClassWeight {
                    priority: c.priority,
                    weight: f64::from(c.weight.unwrap_or(1)),
                })
                .collect(),
            data: tc.data,
            share: ClassShare::default(),
            cap: cap.to_vec(),
        })
    }

    /// A task's class: its own (`Task::class`, plus one) or the data class.
    fn class_of(task_class: u8, data: u8) -> u8 {
        match task_class {
            0 => data,
            c => c - 1,
        }
    }
}

/// Runs `dag` on `topo` at flow level.
///
/// # Errors
/// [`FlowError`] if a transfer has no route or the DAG cannot complete.
pub fn run(dag: &Dag, topo: &Topology, cfg: &FlowConfig) -> Result<RunOutput, FlowError> {
    Sim::new(dag, topo, cfg).run()
}

struct Sim<'a> {
    dag: &'a Dag,
    /// The fabric; copied on the first link event that changes its routes.
    topo: Cow<'a, Topology>,
    cfg: &'a FlowConfig,
    runner: DagRunner,
    heap: EventQueue,
    seq: u64,
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// What finishing a flow and growing a component read and write on each
    /// link of a path, together with its flow list: one miss per link where
    /// the scalars, the list's header and its entries cost three (flow131k:
    /// a million links, the flows' paths spread over them).
    hot: Vec<LinkHot>,
    /// The flow lists longer than [`LinkHot::items`] holds
    /// ([`LinkHot::spill`]), entries as there.
    spilled: Vec<Vec<u32>>,
    /// Flows that finished at this timestamp (their paths and rates).
    vacated: Vec<Vacated>,
    /// (path key, index in `vacated`), sorted, and each key group's live
    /// length at its first entry: the hand-over's lookup ([`Sim::hand_over`]).
    vacated_by_key: Vec<(u64, u32)>,
    vacated_group_len: Vec<u32>,
    /// Path key of each new flow of the hand-over, in `new_flows` order.
    new_keys: Vec<u64>,
    /// Hand-over scratch: per vacated flow its path key and key group, per
    /// group its key and size, then its next free index in `vacated_by_key`.
    vacated_group: Vec<(u64, u32)>,
    group_key: Vec<u64>,
    group_size: Vec<u32>,
    /// Open-addressing table over the key groups of `vacated_by_key`: at
    /// `key & mask`, probing on, each group's first index plus one (0:
    /// empty); a power of two at least twice the entries.
    vacated_table: Vec<u32>,
    /// Routes of transfers on the fabric as built, by (source, destination,
    /// queue pair); see [`Sim::start_path`].
    route_index: std::collections::HashMap<u128, u32, std::hash::BuildHasherDefault<MixHasher>>,
    routes: Vec<CachedRoute>,
    route_links: Vec<LinkId>,
    /// [`Flow::route_key`] of the path [`Sim::start_path`] wrote last.
    started_key: u128,
    /// Flows started since the last recomputation.
    new_flows: Vec<u32>,
    /// Links whose every flow must be recomputed (rate changes, rerouting).
    forced: Vec<u32>,
    cons_links: Vec<u32>,
    /// Fair share at which a link froze flows in the last filling (∞ if none).
    share_at: Vec<f64>,
    share_heap: BinaryHeap<Share>,
    epoch: u32,
    events: u64,
    /// Ideal completion time per task, picoseconds (transfers only; others
    /// stay zero), in 4 B: below 4.3 ms (a 200 MiB message at 400 Gb/s)
    /// as is, else [`u32::MAX`] here and whole in `ideal_wide`. 8 B per task
    /// were 512 MiB at flow131k, a quarter of its peak.
    ideal: Vec<u32>,
    /// (task, ideal time, ps) of each ideal time too wide for `ideal`, in
    /// the order the transfers started.
    ideal_wide: Vec<(u32, u64)>,
    delivered: u64,
    // scratch buffers reused across recomputations
    comp_links: Vec<u32>,
    comp_flows: Vec<u32>,
    cap_left: Vec<f64>,
    unfrozen: Vec<u32>,
    path_buf: Vec<LinkId>,
    /// The Valiant alternative UGAL weighs against `path_buf`.
    alt_buf: Vec<LinkId>,
    /// Opt-in per-link bytes per time bucket.
    timeline: Option<Timeline>,
    next_progress: u64,
    /// Links shared among traffic classes (`None`: max-min).
    classed: Option<Classed>,
}

impl<'a> Sim<'a> {
    fn new(dag: &'a Dag, topo: &'a Topology, cfg: &'a FlowConfig) -> Sim<'a> {
        let nl = topo.links.len();
        let cap_v: Vec<f64> = (0..nl)
            .map(|l| topo.effective_rate(LinkId(l as u32)).bps() as f64 / 8e12)
            .collect();
        Sim {
            dag,
            topo: Cow::Borrowed(topo),
            cfg,
            runner: if cfg.skip_task_spans {
                DagRunner::without_spans(dag)
            } else {
                DagRunner::new(dag)
            },
            heap: EventQueue::default(),
            seq: 0,
            flows: Vec::new(),
            free: Vec::new(),
            spilled: Vec::new(),
            hot: cap_v
                .iter()
                .map(|&cap| LinkHot {
                    cap,
                    ..LinkHot::default()
                })
                .collect(),
            vacated: Vec::new(),
            vacated_by_key: Vec::new(),
            vacated_group_len: Vec::new(),
            new_keys: Vec::new(),
            vacated_group: Vec::new(),
            group_key: Vec::new(),
            group_size: Vec::new(),
            vacated_table: Vec::new(),
            route_index: Default::default(),
            routes: Vec::new(),
            route_links: Vec::new(),
            started_key: NO_ROUTE,
            new_flows: Vec::new(),
            forced: Vec::new(),
            cons_links: Vec::new(),
            share_at: vec![f64::INFINITY; nl],
            share_heap: BinaryHeap::new(),
            epoch: 0,
            events: 0,
            ideal: vec![0; dag.len()],
            ideal_wide: Vec::new(),
            delivered: 0,
            comp_links: Vec::new(),
            comp_flows: Vec::new(),
            cap_left: vec![0.0; nl],
            unfrozen: vec![0; nl],
            path_buf: Vec::with_capacity(MAX_PATH),
            alt_buf: Vec::with_capacity(MAX_PATH),
            timeline: cfg
                .link_timeline
                .then(|| Timeline::new(nl, cfg.timeline_horizon)),
            next_progress: PROGRESS_EVERY,
            classed: Classed::new(dag, cfg.classes.as_ref(), &cap_v),
        }
    }

    fn push(&mut self, time: u64, kind: EvKind, id: u32, version: u32) {
        self.seq += 1;
        self.heap.push(Event {
            time,
            seq: self.seq,
            kind,
            id,
            version,
        });
    }

    fn run(mut self) -> Result<RunOutput, FlowError> {
        self.simulate()?;
        if std::env::var_os("FABRICSIM_FLOW_MEM").is_some() {
            self.print_memory();
        }
        // The makespan is the end of the last task, not the time of the last
        // event popped (a stale completion or a fault after the work ended).
        let makespan = self.runner.last_done().ps();
        Ok(self.output(makespan))
    }

    /// Runs every event until the DAG completes (the output is not built).
    fn simulate(&mut self) -> Result<(), FlowError> {
        let mut ready = Vec::new();
        self.runner.start(&mut ready);
        let mut now = 0u64;
        for i in 0..self.cfg.link_events.len() {
            let e = self.cfg.link_events[i];
            // never queued: an event this fidelity does not model would still
            // cost an event and a recomputation at its time
            if e.kind.modelled_at(Fidelity::Flow) {
                self.push(e.at.ps(), EvKind::Link, i as u32, 0);
            }
        }
        self.start_ready(&mut ready, now)?;
        self.recompute(now);
        while let Some(ev) = self.heap.pop() {
            now = ev.time;
            self.prefetch_ahead();
            match ev.kind {
                EvKind::FlowSent => {
                    let f = &self.flows[ev.id as usize];
                    if f.version != ev.version {
                        continue; // superseded by a rate change
                    }
                    self.events += 1;
                    self.finish_flow(ev.id, now, &mut ready);
                }
                EvKind::TaskDone => {
                    self.events += 1;
                    self.runner.done(TaskId(ev.id), SimTime(now), &mut ready);
                }
                EvKind::Link => {
                    self.events += 1;
                    self.link_event(ev.id as usize, now)?;
                }
            }
            self.start_ready(&mut ready, now)?;
            if self.heap.peek_time().is_none_or(|t| t > now) {
                // all changes of this timestamp are in: one recomputation
                self.recompute(now);
            }
            if self.events >= self.next_progress {
                self.next_progress = self.events + PROGRESS_EVERY;
                if let Some(hook) = &self.cfg.progress {
                    hook(ProgressTick {
                        events: self.events,
                        sim_time: SimTime(now),
                    });
                }
            }
            if self.runner.finished() {
                // Every task is done: what is left in the queue are completions
                // superseded by rate changes and link events after the work,
                // neither of which moves a byte.
                break;
            }
        }
        if !self.runner.finished() {
            return Err(FlowError::Stalled(self.dag.len() - self.runner.completed()));
        }
        Ok(())
    }

    /// Starts loading what the events queued after the current one read
    /// (a hint: results are unchanged). Events of one time are a FIFO of
    /// thousands (every rail and tree level of a collective ends at once),
    /// each on a flow and links last touched thousands of events ago: the
    /// flow record [`PREFETCH_FAR`] events ahead, and once it has arrived,
    /// [`PREFETCH_NEAR`] ahead, the scalars and flow lists of its path's
    /// links; a task's runner slot likewise, and then its successors' slots.
    #[inline]
    fn prefetch_ahead(&self) {
        use super::packet::slab::prefetch;
        if let Some(q) = self.heap.peek_ahead(PREFETCH_FAR) {
            match q.kind {
                EvKind::FlowSent => {
                    if let Some(f) = self.flows.get(q.id as usize) {
                        // lines 0 to 2 (see `Flow`)
                        prefetch(f);
                        prefetch(&f.path);
                        prefetch(&f.route_key);
                    }
                }
                EvKind::TaskDone => self.runner.prefetch(TaskId(q.id)),
                EvKind::Link => {}
            }
        }
        if let Some(q) = self.heap.peek_ahead(PREFETCH_NEAR) {
            if q.kind == EvKind::TaskDone {
                self.runner.prefetch_successors(TaskId(q.id));
            }
            if q.kind == EvKind::FlowSent {
                if let Some(f) = self.flows.get(q.id as usize) {
                    if f.version == q.version {
                        for &l in &f.path[..f.path_len as usize] {
                            prefetch(&self.hot[l as usize]);
                        }
                        self.runner.prefetch(TaskId(f.task));
                    }
                }
            }
        }
    }

    fn finish_flow(&mut self, fid: u32, now: u64, ready: &mut Vec<TaskId>) {
        let f = &self.flows[fid as usize];
        let (task, latency, bytes) = (f.task, f.latency, f.bytes);
        let path = f.path;
        let plen = f.path_len as usize;
        let rate = f.rate;
        let (tl_from, tl_left) = (f.tl_from, f.tl_left);
        if let Some(tl) = &mut self.timeline {
            tl.add(&path[..plen], tl_from, now, tl_left);
        }
        let path_bytes = f.path_bytes.round() as u64;
        let mut tight_mask = 0u16;
        for (j, &l) in path[..plen].iter().enumerate() {
            let li = l as usize;
            // saturated before this flow left (other flows ending at the same
            // timestamp must not hide it)
            if self.tight(li) {
                tight_mask |= 1 << j;
            }
            self.unlink(fid, j);
            self.hot[li].bytes += path_bytes;
            self.hot[li].load = (self.hot[li].load - rate).max(0.0);
        }
        // Whether the freed capacity changes anyone's rate is decided at the end of
        // the timestamp: a flow started on the same path takes it over unchanged.
        self.vacated.push(Vacated {
            path,
            path_len: plen as u8,
            rate,
            tight_mask,
            taken: false,
        });
        self.delivered += bytes;
        let f = &mut self.flows[fid as usize];
        f.version = f.version.wrapping_add(1);
        f.scheduled = false;
        f.live = false;
        self.free.push(fid);
        self.runner.sent(TaskId(task), SimTime(now), ready);
        self.push(now + latency, EvKind::TaskDone, task, 0);
    }

    fn start_ready(&mut self, ready: &mut Vec<TaskId>, now: u64) -> Result<(), FlowError> {
        while let Some(t) = ready.pop() {
            // one look-up of where the task is stored for all three
            let (kind, qp, software) = self.dag.kind_qp_software(t.0 as usize);
            match kind {
                TaskKind::Marker => self.runner.done(t, SimTime(now), ready),
                TaskKind::Compute { duration, .. } => {
                    self.push(now + duration.ps(), EvKind::TaskDone, t.0, 0)
                }
                kind @ (TaskKind::Transfer { .. } | TaskKind::NetTransfer { .. }) => {
                    let bytes = kind.transfer_bytes();
                    let (route_latency, local, bottleneck) = self.start_path(t.0, kind, qp)?;
                    let latency = route_latency;
                    // the receiver's software sees the data this much later
                    let latency = latency + software.0;
                    let ideal = bottleneck.tx_time(bytes).ps() + latency;
                    self.record_ideal(t, ideal);
                    if bytes == 0 || local {
                        self.runner.sent(t, SimTime(now), ready);
                        self.push(now + latency, EvKind::TaskDone, t.0, 0);
                        continue;
                    }
                    let fid = match self.free.pop() {
                        Some(i) => i,
                        None => {
                            // a flow-list entry holds the id in 32 − J_BITS bits
                            // (268 M flows at once, some 60 GB of flow records)
                            assert!(
                                self.flows.len() < 1 << (32 - J_BITS),
                                "too many flows at once"
                            );
                            self.flows.push(Flow {
                                task: 0,
                                path: [0; MAX_PATH],
                                slot: [0; MAX_PATH],
                                path_len: 0,
                                remaining: 0.0,
                                rate: 0.0,
                                last: 0,
                                version: 0,
                                latency: 0,
                                bytes: 0,
                                path_bytes: 0.0,
                                reroutes: 0,
                                old_rate: 0.0,
                                scheduled: false,
                                tl_left: 0.0,
                                tl_from: 0,
                                frozen: false,
                                visit: 0,
                                class: 0,
                                live: false,
                                route_key: NO_ROUTE,
                                route_latency: 0,
                                route_bottleneck: crate::units::Rate(0),
                            });
                            self.flows.len() as u32 - 1
                        }
                    };
                    let f = &mut self.flows[fid as usize];
                    f.task = t.0;
                    f.path_len = self.path_buf.len() as u8;
                    for (i, l) in self.path_buf.iter().enumerate() {
                        f.path[i] = l.0;
                    }
                    f.remaining = bytes as f64;
                    f.rate = 0.0;
                    f.scheduled = false;
                    f.last = now;
                    f.latency = latency;
                    f.bytes = bytes;
                    f.path_bytes = bytes as f64;
                    f.reroutes = 0;
                    f.tl_left = bytes as f64;
                    f.tl_from = now;
                    f.live = true;
                    f.route_key = self.started_key;
                    f.route_latency = route_latency;
                    f.route_bottleneck = bottleneck;
                    if let Some(c) = &self.classed {
                        f.class = Classed::class_of(self.dag.class_of(t.0 as usize), c.data);
                    }
                    for j in 0..self.path_buf.len() {
                        self.link(fid, j);
                    }
                    self.new_flows.push(fid);
                }
            }
        }
        Ok(())
    }

    /// [`Sim::task_path`] of a starting task, plus its path's bottleneck rate.
    ///
    /// A transfer between GPUs rides its connection's queue pair, whose path on
    /// the fabric as built depends only on (source, destination, queue pair):
    /// ECMP hashing and a dragonfly's minimal or Valiant choice are functions of
    /// them. Those routes are computed once and kept (a pipelined collective
    /// sends every chunk of a connection on the same path: 256 chunks of 4 MiB
    /// per connection in the 16,384-GPU benchmark, whose profile spent 23% of
    /// its time in `next_hops` / `route_via`). Not kept: UGAL (it weighs the
    /// current load), hops between adjacent nodes, and anything once a link
    /// event has changed the fabric (the copy in `topo` is then owned).
    /// `qp`: the task's queue pair ([`Dag::qp_of`], read by the caller with
    /// its kind).
    fn start_path(
        &mut self,
        task: u32,
        kind: TaskKind,
        qp: u8,
    ) -> Result<(u64, bool, crate::units::Rate), FlowError> {
        use crate::topology::DragonflyRouting as D;
        self.started_key = NO_ROUTE;
        let cacheable = matches!(kind, TaskKind::Transfer { .. })
            && matches!(self.topo, Cow::Borrowed(_))
            && !matches!(self.topo.dragonfly_routing(), D::Ugal | D::UgalG);
        let TaskKind::Transfer { src, dst, .. } = kind else {
            let (latency, local) = self.task_path(task, kind, 0)?;
            return Ok((latency, local, self.topo.path_bottleneck(&self.path_buf)));
        };
        if !cacheable || src == dst {
            let (latency, local) = self.task_path(task, kind, 0)?;
            return Ok((latency, local, self.topo.path_bottleneck(&self.path_buf)));
        }
        let key = (u128::from(src.0) << 40) | (u128::from(dst.0) << 8) | u128::from(qp);
        // a path is a function of its key here: any slot holding the key
        // holds the path the cache would give (see `Flow::route_key`)
        for &fid in self.free.iter().rev().take(RECENT_FREED) {
            let f = &self.flows[fid as usize];
            if f.route_key == key {
                self.path_buf.clear();
                self.path_buf
                    .extend(f.path[..f.path_len as usize].iter().map(|&l| LinkId(l)));
                self.started_key = key;
                return Ok((f.route_latency, false, f.route_bottleneck));
            }
        }
        if let Some(&i) = self.route_index.get(&key) {
            let r = self.routes[i as usize];
            self.path_buf.clear();
            self.path_buf.extend_from_slice(
                &self.route_links[r.start as usize..r.start as usize + r.len as usize],
            );
            self.started_key = key;
            return Ok((r.latency, false, r.bottleneck));
        }
        let (latency, local) = self.task_path(task, kind, 0)?;
        let bottleneck = self.topo.path_bottleneck(&self.path_buf);
        self.started_key = key;
        if self.route_links.len() + MAX_PATH > u32::MAX as usize {
            return Ok((latency, local, bottleneck)); // full: route anew
        }
        self.route_index.insert(key, self.routes.len() as u32);
        self.routes.push(CachedRoute {
            start: self.route_links.len() as u32,
            len: self.path_buf.len() as u8,
            latency,
            bottleneck,
        });
        self.route_links.extend_from_slice(&self.path_buf);
        Ok((latency, local, bottleneck))
    }

    /// Writes the path of transfer `task` into `path_buf` (ECMP between GPUs, seeded
    /// by the task and its reroute count; the explicit hop of a
    /// [`TaskKind::NetTransfer`], which cannot be rerouted) and returns its latency,
    /// picoseconds, and whether source and destination are the same GPU.
    fn task_path(
        &mut self,
        task: u32,
        kind: TaskKind,
        reroutes: u32,
    ) -> Result<(u64, bool), FlowError> {
        let (found, a, b, local) = match kind {
            TaskKind::Transfer { src, dst, .. } => {
                // a transfer rides its queue pair's path, as at the packet level
                // (one path per connection and queue pair); a reroute picks anew
                let qp = self.dag.qp_of(task as usize);
                let mut hash = crate::topology::qp_hash(self.cfg.seed, src.0, dst.0, qp);
                if reroutes > 0 {
                    hash = mix64(hash ^ (reroutes as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                }
                (
                    self.route_transfer(src, dst, hash),
                    src.0,
                    dst.0,
                    src == dst,
                )
            }
            TaskKind::NetTransfer { src, dst, .. } => (
                self.topo.hop_path(src, dst, &mut self.path_buf),
                src.0,
                dst.0,
                src == dst,
            ),
            _ => (false, 0, 0, false),
        };
        if !found {
            return Err(FlowError::Unreachable {
                task,
                src: a,
                dst: b,
            });
        }
        if self.path_buf.len() > MAX_PATH {
            return Err(FlowError::PathTooLong(self.path_buf.len()));
        }
        let latency = match kind {
            TaskKind::NetTransfer { .. } => self.topo.hop_latency(&self.path_buf),
            _ => self.topo.path_latency(&self.path_buf),
        };
        Ok((latency.ps(), local))
    }

    /// Writes into `path_buf` the path of a transfer from `src` to `dst` whose
    /// queue pair hashes to `hash` ([`Topology::route`]: ECMP, a dragonfly's
    /// minimal or Valiant path). Under a dragonfly's UGAL the flow, when it
    /// starts, weighs its minimal path against the non-minimal Valiant path its
    /// hash draws ([`crate::topology::Topology::ugal_detour`])
    /// (Kim et al., ISCA 2008, §4.2), with flows standing for queues: UGAL-L
    /// compares the flows already on each path's first router output × the
    /// path's router hops; UGAL-G the max-min share each path would get at its
    /// most crowded link (capacity ÷ (flows + 1)). Ties go minimal.
    fn route_transfer(
        &mut self,
        src: crate::topology::GpuId,
        dst: crate::topology::GpuId,
        hash: u64,
    ) -> bool {
        use crate::topology::DragonflyRouting as D;
        let mode = self.topo.dragonfly_routing();
        let via = match mode {
            D::Ugal | D::UgalG => {
                self.topo
                    .ugal_detour(src, dst, mix64(hash ^ crate::topology::VALIANT_SALT))
            }
            _ => None,
        };
        if !self.topo.route(src, dst, hash, &mut self.path_buf) {
            return false;
        }
        let Some(v) = via else { return true };
        let mut alt = std::mem::take(&mut self.alt_buf);
        if self.topo.route_via(src, dst, Some(v), hash, &mut alt) && alt.len() <= MAX_PATH {
            let take = if mode == D::Ugal {
                self.ugal_local_cost(&self.path_buf) > self.ugal_local_cost(&alt)
            } else {
                self.path_share(&alt) > self.path_share(&self.path_buf)
            };
            if take {
                std::mem::swap(&mut self.path_buf, &mut alt);
            }
        }
        self.alt_buf = alt;
        true
    }

    /// UGAL-L's cost of a path at the flow level: the flows on its first
    /// router-to-router link (the source router's output) × its router hops.
    fn ugal_local_cost(&self, path: &[LinkId]) -> u64 {
        let Some(df) = self.topo.dragonfly() else {
            return 0;
        };
        let between = |l: LinkId| {
            let link = self.topo.link(l);
            df.group_of(link.from).is_some() && df.group_of(link.to).is_some()
        };
        let hops = path.iter().filter(|&&l| between(l)).count() as u64 + 1;
        let first = path.iter().find(|&&l| between(l));
        first.map_or(0, |l| u64::from(self.hot[l.0 as usize].len) * hops)
    }

    /// UGAL-G's estimate of a path at the flow level: the smallest
    /// capacity ÷ (flows + 1) over its links, bytes per picosecond.
    fn path_share(&self, path: &[LinkId]) -> f64 {
        path.iter()
            .map(|l| {
                let h = &self.hot[l.0 as usize];
                h.cap / f64::from(h.len + 1)
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Applies `cfg.link_events[i]` at `now` (see the module doc).
    fn link_event(&mut self, i: usize, now: u64) -> Result<(), FlowError> {
        let ev = self.cfg.link_events[i];
        let l = ev.link;
        if l.0 as usize >= self.topo.links.len() {
            return Ok(()); // validated scenarios never name a missing link
        }
        let rev = self.topo.reverse(l);
        match ev.kind {
            LinkEventKind::Rate(r) => {
                self.topo.to_mut().set_link_rate(l, r);
                let cap = self.topo.effective_rate(l).bps() as f64 / 8e12;
                self.hot[l.0 as usize].cap = cap;
                if let Some(c) = &mut self.classed {
                    c.cap[l.0 as usize] = cap;
                }
                // every flow on the link may change rate
                self.forced.push(l.0);
            }
            LinkEventKind::Down => {
                if !self.topo.is_link_up(l) {
                    return Ok(());
                }
                self.topo.to_mut().set_link_up(l, false);
                let mut victims: Vec<u32> = self
                    .entries(l.0 as usize)
                    .iter()
                    .map(|&e| e >> J_BITS)
                    .collect();
                for &e in self.entries(rev.0 as usize) {
                    let f = e >> J_BITS;
                    if !victims.contains(&f) {
                        victims.push(f);
                    }
                }
                victims.sort_unstable();
                for fid in victims {
                    self.reroute(fid, now)?;
                }
            }
            // never queued (see `run`); `backend::run` refuses `Up` here
            LinkEventKind::Up | LinkEventKind::Ber(_) => {}
        }
        Ok(())
    }

    /// Moves flow `fid` to a new path, keeping its remaining bytes.
    fn reroute(&mut self, fid: u32, now: u64) -> Result<(), FlowError> {
        let f = &mut self.flows[fid as usize];
        f.remaining = (f.remaining - f.rate * (now - f.last) as f64).max(0.0);
        f.last = now;
        let sent_here = (f.path_bytes - f.remaining).max(0.0).round() as u64;
        f.path_bytes = f.remaining;
        f.reroutes += 1;
        f.route_key = NO_ROUTE; // the new path is drawn anew
        if let Some(tl) = &mut self.timeline {
            let sent = f.tl_left - f.remaining;
            tl.add(&f.path[..f.path_len as usize], f.tl_from, now, sent);
            f.tl_left = f.remaining;
            f.tl_from = now;
        }
        let (task, reroutes, plen, path, rate) =
            (f.task, f.reroutes, f.path_len as usize, f.path, f.rate);
        for (j, &l) in path[..plen].iter().enumerate() {
            let li = l as usize;
            // the flows held back on a saturated link it leaves may speed up
            if self.tight(li) {
                self.forced.push(l);
            }
            self.unlink(fid, j);
            self.hot[li].bytes += sent_here;
            self.hot[li].load = (self.hot[li].load - rate).max(0.0);
        }
        let kind = self.dag.kind(task as usize);
        if !kind.is_transfer() {
            return Ok(());
        }
        let (latency, _) = self.task_path(task, kind, reroutes)?;
        let latency = latency + self.dag.software_latency(TaskId(task)).0;
        let f = &mut self.flows[fid as usize];
        f.path_len = self.path_buf.len() as u8;
        for (i, l) in self.path_buf.iter().enumerate() {
            f.path[i] = l.0;
        }
        f.latency = latency;
        // A new start on the new path: the old completion event is stale.
        f.version = f.version.wrapping_add(1);
        f.scheduled = false;
        f.rate = 0.0;
        f.old_rate = 0.0;
        for j in 0..self.path_buf.len() {
            self.link(fid, j);
        }
        self.new_flows.push(fid);
        Ok(())
    }

    /// The flow list of link `l`: entries `fid << J_BITS | j`, flow `fid`
    /// on the link as the j-th of its path.
    #[inline]
    fn entries(&self, l: usize) -> &[u32] {
        let h = &self.hot[l];
        match h.spill {
            0 => &h.items[..h.len as usize],
            k => &self.spilled[k as usize - 1],
        }
    }

    /// The i-th flow on link `l` (`i` below `hot[l].len`).
    #[inline]
    fn flow_on(&self, l: usize, i: usize) -> u32 {
        self.entries(l)[i] >> J_BITS
    }

    /// Appends flow `fid` to the list of the j-th link of its path. A list
    /// is a `Vec` in its order (push at the end, swap-remove), inline in the
    /// link's record up to [`LINK_INLINE`] flows, then spilled for good to
    /// `spilled`, where each flow notes its place ([`Flow::slot`]).
    #[inline]
    fn link(&mut self, fid: u32, j: usize) {
        debug_assert!(fid < 1 << (32 - J_BITS), "flow id fits its entry");
        let l = self.flows[fid as usize].path[j] as usize;
        let e = fid << J_BITS | j as u32;
        let h = &mut self.hot[l];
        if h.spill == 0 {
            if (h.len as usize) < LINK_INLINE {
                h.items[h.len as usize] = e;
                h.len += 1;
                return;
            }
            let v = h.items.to_vec();
            for (pos, &x) in v.iter().enumerate() {
                self.flows[(x >> J_BITS) as usize].slot[(x & J_MASK) as usize] = pos as u32;
            }
            self.spilled.push(v);
            h.spill = self.spilled.len() as u32;
        }
        let list = &mut self.spilled[h.spill as usize - 1];
        self.flows[fid as usize].slot[j] = list.len() as u32;
        list.push(e);
        h.len += 1;
    }

    /// Removes flow `fid` from the list of the j-th link of its path: a
    /// swap-remove, at the entry found in the link's own cache line when the
    /// list is inline, else at the flow's back-pointer in O(1), the moved
    /// entry's back-pointer updated. The list ends in exactly the order the
    /// `Vec` per link this replaces left it, so the results are unchanged.
    /// (Profile of flow131k: leaving a link was three misses, the link's
    /// scalars, its list and the moved flow's back-pointer; now one.)
    #[inline]
    fn unlink(&mut self, fid: u32, j: usize) {
        let l = self.flows[fid as usize].path[j] as usize;
        let e = fid << J_BITS | j as u32;
        let h = &mut self.hot[l];
        let last = h.len as usize - 1;
        h.len -= 1;
        if h.spill == 0 {
            let pos = h.items[..=last]
                .iter()
                .position(|&x| x == e)
                .expect("a flow is on the links of its path");
            h.items[pos] = h.items[last];
            return;
        }
        let pos = self.flows[fid as usize].slot[j] as usize;
        let list = &mut self.spilled[h.spill as usize - 1];
        list.swap_remove(pos);
        if pos != last {
            let m = list[pos];
            self.flows[(m >> J_BITS) as usize].slot[(m & J_MASK) as usize] = pos as u32;
        }
    }

    fn record_ideal(&mut self, t: TaskId, ideal: u64) {
        match u32::try_from(ideal) {
            Ok(v) if v < u32::MAX => self.ideal[t.0 as usize] = v,
            _ => {
                self.ideal[t.0 as usize] = u32::MAX;
                self.ideal_wide.push((t.0, ideal));
            }
        }
    }

    /// A link whose allocated rates fill its capacity (it bottlenecks its flows).
    #[inline]
    fn tight(&self, l: usize) -> bool {
        self.hot[l].load >= self.hot[l].cap * (1.0 - 1e-9)
    }

    /// A flow that starts on exactly the path of a flow that ended at this same
    /// timestamp takes over its rate: max-min rates depend only on the multiset of
    /// paths, so nothing else changes. This is the common case of a pipelined
    /// collective (chunk c+1 follows chunk c on the same queue pair) and skips the
    /// recomputation entirely (16,384-GPU hierarchical all-reduce: nearly every event).
    fn hand_over(&mut self, new_flows: &[u32], now: u64) {
        if self.vacated.is_empty() || self.cfg.full_recompute || self.classed.is_some() {
            return;
        }
        // Candidates grouped by path key, each group in finishing order; a
        // group is taken from like a Vec with swap_remove (the first match in
        // the group's current order), the rule of the per-key lists this
        // replaces. Profile of the 16,384-GPU flow benchmark: 60% of
        // `recompute` was that HashMap of Vecs (SipHash, a Vec allocated per
        // key, and `clear` walking the capacity the busiest timestamp left).
        // Each group's start in a hash table (the keys are already mixed):
        // one probe per new flow where a binary search over every vacated
        // path was 12% of flow131k's CPU (tens of thousands end at once).
        // The groups are laid out by a counting sort, not a comparison sort
        // (which was 2.4% of flow131k): each vacated flow's group found in
        // the table (groups numbered by first appearance), the groups placed
        // by their sizes, the flows into them in finishing order. Each group
        // then holds what a sort by (key, index) gave it, in that order, and
        // the table finds a key's group wherever linear probing put it, so
        // the lookups below take the same flows as before.
        let n = self.vacated.len();
        let size = (2 * n).next_power_of_two();
        let mask = size - 1;
        let table = &mut self.vacated_table;
        table.clear();
        table.resize(size, 0);
        let (group, gkey, gsize) = (
            &mut self.vacated_group,
            &mut self.group_key,
            &mut self.group_size,
        );
        group.clear();
        gkey.clear();
        gsize.clear();
        for v in &self.vacated {
            let key = path_key(&v.path[..v.path_len as usize]);
            let mut h = key as usize & mask;
            let g = loop {
                match table[h] {
                    0 => {
                        table[h] = gkey.len() as u32 + 1;
                        gkey.push(key);
                        gsize.push(0);
                        break gkey.len() - 1;
                    }
                    e if gkey[e as usize - 1] == key => break e as usize - 1,
                    _ => h = (h + 1) & mask,
                }
            };
            gsize[g] += 1;
            group.push((key, g as u32));
        }
        // sizes into starts (group order: first appearance; any order would do)
        let group_len = &mut self.vacated_group_len;
        group_len.clear();
        group_len.resize(n, 0);
        let mut start = 0u32;
        for size in gsize.iter_mut() {
            group_len[start as usize] = *size;
            let len = *size;
            *size = start;
            start += len;
        }
        // the table names each group's first entry
        for e in table.iter_mut() {
            if *e != 0 {
                *e = gsize[*e as usize - 1] + 1;
            }
        }
        // the flows, in finishing order, into their groups' next entries
        let by_key = &mut self.vacated_by_key;
        by_key.clear();
        by_key.resize(n, (0, 0));
        for (i, &(key, g)) in group.iter().enumerate() {
            let at = &mut gsize[g as usize];
            by_key[*at as usize] = (key, i as u32);
            *at += 1;
        }
        // The new flows' keys first, each flow's record prefetched some flows
        // ahead, then the lookups, each key's table slot prefetched ahead:
        // a timestamp hands over tens of thousands of flows, each a miss on
        // its record and one on its slot (profile of flow131k: 11% of
        // `recompute` on reading the path, 9% on the slot).
        {
            use super::packet::slab::prefetch;
            let mut keys = std::mem::take(&mut self.new_keys);
            keys.clear();
            for (i, &fid) in new_flows.iter().enumerate() {
                if let Some(&ahead) = new_flows.get(i + HAND_OVER_AHEAD) {
                    let f = &self.flows[ahead as usize];
                    prefetch(f);
                    prefetch(&f.path);
                }
                let f = &self.flows[fid as usize];
                keys.push(path_key(&f.path[..f.path_len as usize]));
            }
            self.new_keys = keys;
        }
        for (i, &fid) in new_flows.iter().enumerate() {
            if let Some(&k) = self.new_keys.get(i + HAND_OVER_AHEAD) {
                super::packet::slab::prefetch(&self.vacated_table[k as usize & mask]);
            }
            let f = &self.flows[fid as usize];
            let key = self.new_keys[i];
            let mut h = key as usize & mask;
            let g = loop {
                match self.vacated_table[h] {
                    0 => break None,
                    e if self.vacated_by_key[e as usize - 1].0 == key => {
                        break Some(e as usize - 1)
                    }
                    _ => h = (h + 1) & mask,
                }
            };
            let Some(g) = g else { continue };
            let len = self.vacated_group_len[g] as usize;
            let cands = &self.vacated_by_key[g..g + len];
            let pos = cands.iter().position(|&(_, i)| {
                let v = &self.vacated[i as usize];
                v.path_len == f.path_len
                    && v.path[..v.path_len as usize] == f.path[..f.path_len as usize]
            });
            let Some(pos) = pos else { continue };
            let vi = self.vacated_by_key[g + pos].1 as usize;
            self.vacated_by_key[g + pos] = self.vacated_by_key[g + len - 1];
            self.vacated_group_len[g] -= 1;
            self.vacated[vi].taken = true;
            let rate = self.vacated[vi].rate;
            let f = &mut self.flows[fid as usize];
            f.rate = rate;
            f.old_rate = rate;
            f.last = now;
            f.version = f.version.wrapping_add(1);
            f.scheduled = rate > 0.0;
            let (version, rem, plen) = (f.version, f.remaining, f.path_len as usize);
            for j in 0..plen {
                let pl = self.flows[fid as usize].path[j] as usize;
                self.hot[pl].load += rate;
            }
            if rate > 0.0 {
                self.push(
                    now + (rem / rate).ceil() as u64,
                    EvKind::FlowSent,
                    fid,
                    version,
                );
            }
        }
    }

    /// Adds a flow to the component being recomputed, settling its progress at its
    /// old rate, and queues its links: saturated ones for expansion (their other
    /// flows may change), the others as constraints only.
    fn visit_flow(&mut self, fid: u32, now: u64, epoch: u32) {
        let f = &mut self.flows[fid as usize];
        if f.visit == epoch {
            return;
        }
        f.visit = epoch;
        f.remaining = (f.remaining - f.rate * (now - f.last) as f64).max(0.0);
        f.last = now;
        f.old_rate = f.rate;
        self.comp_flows.push(fid);
        let plen = f.path_len as usize;
        for j in 0..plen {
            let pl = self.flows[fid as usize].path[j] as usize;
            if self.hot[pl].mark == epoch {
                continue;
            }
            if self.tight(pl) || self.cfg.full_recompute {
                self.hot[pl].mark = epoch;
                self.comp_links.push(pl as u32);
            } else if self.hot[pl].cons != epoch {
                self.hot[pl].cons = epoch;
                self.cons_links.push(pl as u32);
            }
        }
    }

    /// Max-min fair rates after the changes of this timestamp.
    ///
    /// Exact, but local: starting from the new flows and the saturated links of
    /// finished ones, the component grows only through *saturated* links, whose
    /// flows may change rate. An unsaturated link on a component flow's path is a
    /// constraint with its outside flows' load fixed; if the new rates fill it at a
    /// fair share below an outside flow's rate, that flow would have to yield, so
    /// the link is expanded and the filling redone. A non-blocking fabric thus
    /// recomputes a handful of flows per event instead of every flow that shares a
    /// spine with them (profile of a 16,384-GPU all-reduce: 63% of the time was
    /// water-filling one component of every flow in the fabric).
    fn recompute(&mut self, now: u64) {
        if self.vacated.is_empty() && self.new_flows.is_empty() && self.forced.is_empty() {
            return;
        }
        if self.classed.is_some() {
            self.recompute_classes(now);
            return;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.hot.iter_mut().for_each(|h| {
                h.mark = 0;
                h.cons = 0;
            });
            self.flows.iter_mut().for_each(|f| f.visit = 0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        self.comp_links.clear();
        self.cons_links.clear();
        self.comp_flows.clear();
        for i in 0..self.forced.len() {
            let l = self.forced[i] as usize;
            if self.hot[l].mark != epoch {
                self.hot[l].mark = epoch;
                self.comp_links.push(l as u32);
            }
        }
        self.forced.clear();
        let new_flows = std::mem::take(&mut self.new_flows);
        self.hand_over(&new_flows, now);
        for &fid in &new_flows {
            if self.flows[fid as usize].visit != epoch && !self.flows[fid as usize].scheduled {
                self.visit_flow(fid, now, epoch);
            }
        }
        self.new_flows = new_flows;
        self.new_flows.clear();
        // Capacity freed by finished flows nobody took over: their saturated links
        // may let the flows held back there speed up.
        for i in 0..self.vacated.len() {
            if self.vacated[i].taken {
                continue;
            }
            let v = self.vacated[i];
            for (j, &l) in v.path[..v.path_len as usize].iter().enumerate() {
                let li = l as usize;
                let was_tight = v.tight_mask & (1 << j) != 0;
                if (was_tight || self.cfg.full_recompute) && self.hot[li].mark != epoch {
                    self.hot[li].mark = epoch;
                    self.comp_links.push(l);
                }
            }
        }
        self.vacated.clear();
        let mut head = 0;
        loop {
            // Grow the component through saturated links.
            while head < self.comp_links.len() {
                let l = self.comp_links[head] as usize;
                head += 1;
                for i in 0..self.hot[l].len as usize {
                    let fid = self.flow_on(l, i);
                    self.visit_flow(fid, now, epoch);
                }
            }
            self.water_fill(epoch);
            // Check the constraint-only links: expand any whose fair share fell below
            // the rate of a flow outside the component.
            let mut expanded = false;
            for i in 0..self.cons_links.len() {
                let l = self.cons_links[i] as usize;
                if self.hot[l].mark == epoch {
                    continue;
                }
                let share = self.share_at[l];
                if share.is_finite() {
                    let outside_max = self
                        .entries(l)
                        .iter()
                        .map(|&e| &self.flows[(e >> J_BITS) as usize])
                        .filter(|f| f.visit != epoch)
                        .map(|f| f.rate)
                        .fold(0.0f64, f64::max);
                    if outside_max > share * (1.0 + 1e-9) {
                        self.hot[l].mark = epoch;
                        self.comp_links.push(l as u32);
                        expanded = true;
                    }
                }
            }
            if !expanded {
                break;
            }
        }
        self.commit(now);
    }

    /// Every sending flow's rate shared among traffic classes
    /// ([`super::class_share`]), recomputed as a whole.
    fn recompute_classes(&mut self, now: u64) {
        self.forced.clear();
        self.new_flows.clear();
        self.vacated.clear();
        self.comp_flows.clear();
        for (fid, f) in self.flows.iter_mut().enumerate() {
            if !f.live {
                continue;
            }
            f.remaining = (f.remaining - f.rate * (now - f.last) as f64).max(0.0);
            f.last = now;
            f.old_rate = f.rate;
            self.comp_flows.push(fid as u32);
        }
        let Some(c) = self.classed.as_mut() else {
            return;
        };
        let flows = &self.flows;
        let paths: Vec<&[u32]> = self
            .comp_flows
            .iter()
            .map(|&f| &flows[f as usize].path[..flows[f as usize].path_len as usize])
            .collect();
        let class: Vec<u8> = self
            .comp_flows
            .iter()
            .map(|&f| flows[f as usize].class)
            .collect();
        let rates = c.share.solve(&c.cap, &paths, &class, &c.weights);
        for (i, &fid) in self.comp_flows.iter().enumerate() {
            self.flows[fid as usize].rate = rates[i];
        }
        self.commit(now);
    }

    /// Commits the new rates of `comp_flows`: link loads and completion events.
    fn commit(&mut self, now: u64) {
        for i in 0..self.comp_flows.len() {
            let fid = self.comp_flows[i] as usize;
            let delta = self.flows[fid].rate - self.flows[fid].old_rate;
            if delta != 0.0 {
                let plen = self.flows[fid].path_len as usize;
                for j in 0..plen {
                    let pl = self.flows[fid].path[j] as usize;
                    self.hot[pl].load = (self.hot[pl].load + delta).max(0.0);
                }
            }
        }
        // Reschedule the completions of flows whose rate changed: an unchanged rate
        // leaves the pending completion event exact, and skipping it keeps the heap
        // from filling with stale events.
        for i in 0..self.comp_flows.len() {
            let fid = self.comp_flows[i];
            let f = &mut self.flows[fid as usize];
            if f.rate != f.old_rate {
                if let Some(tl) = &mut self.timeline {
                    // bytes sent at the old rate since it was set
                    let sent = f.tl_left - f.remaining;
                    tl.add(&f.path[..f.path_len as usize], f.tl_from, now, sent);
                    f.tl_left = f.remaining;
                    f.tl_from = now;
                }
            }
            if f.rate == f.old_rate && f.scheduled {
                continue;
            }
            f.version = f.version.wrapping_add(1);
            let (version, rem, rate) = (f.version, f.remaining, f.rate);
            f.scheduled = rate > 0.0;
            if rate > 0.0 {
                let dt = (rem / rate).ceil() as u64;
                self.push(now + dt, EvKind::FlowSent, fid, version);
            }
        }
    }

    /// Progressive filling of the component's flows over the component's links
    /// (expanded and constraint-only), with a lazy min-heap of fair shares.
    fn water_fill(&mut self, epoch: u32) {
        // Capacity left to the component on each link: the capacity less the load
        // of flows outside the component (none on expanded links).
        for k in 0..2 {
            let links = if k == 0 {
                &self.comp_links
            } else {
                &self.cons_links
            };
            for &l in links.iter() {
                let l = l as usize;
                self.cap_left[l] = self.hot[l].cap;
                self.unfrozen[l] = 0;
                self.share_at[l] = f64::INFINITY;
            }
        }
        for &l in &self.cons_links {
            let l = l as usize;
            if self.hot[l].mark != epoch {
                self.cap_left[l] = self.hot[l].cap - self.hot[l].load;
            }
        }
        for &fid in &self.comp_flows {
            let f = &mut self.flows[fid as usize];
            f.frozen = false;
            for &pl in &f.path[..f.path_len as usize] {
                let pl = pl as usize;
                self.unfrozen[pl] += 1;
                if self.hot[pl].mark != epoch {
                    // a constraint link's load includes this flow's old rate
                    self.cap_left[pl] += f.old_rate;
                }
            }
        }
        let mut heap = std::mem::take(&mut self.share_heap);
        heap.clear();
        for k in 0..2 {
            let links = if k == 0 {
                &self.comp_links
            } else {
                &self.cons_links
            };
            for &l in links.iter() {
                let n = self.unfrozen[l as usize];
                if n > 0 {
                    heap.push(Share {
                        share: self.cap_left[l as usize].max(0.0) / n as f64,
                        link: l,
                        n,
                    });
                }
            }
        }
        while let Some(s) = heap.pop() {
            let l = s.link as usize;
            if self.unfrozen[l] != s.n || s.n == 0 {
                continue; // stale entry
            }
            let share = (self.cap_left[l] / s.n as f64).max(0.0);
            self.share_at[l] = share;
            for i in 0..self.hot[l].len as usize {
                let fid = self.flow_on(l, i) as usize;
                if self.flows[fid].visit != epoch || self.flows[fid].frozen {
                    continue;
                }
                self.flows[fid].frozen = true;
                self.flows[fid].rate = share;
                let plen = self.flows[fid].path_len as usize;
                for j in 0..plen {
                    let pl = self.flows[fid].path[j] as usize;
                    self.cap_left[pl] -= share;
                    self.unfrozen[pl] -= 1;
                    let n = self.unfrozen[pl];
                    if pl != l && n > 0 {
                        heap.push(Share {
                            share: self.cap_left[pl].max(0.0) / n as f64,
                            link: pl as u32,
                            n,
                        });
                    }
                }
            }
        }
        self.share_heap = heap;
    }

    /// Bytes each structure holds on the heap at the end of the run (its
    /// capacity: the run's high-water mark, since none shrinks), to stderr,
    /// largest first: where a large run's memory goes (issue 16). Printed when
    /// `FABRICSIM_FLOW_MEM` is set; diagnostics only, results are unchanged.
    fn print_memory(&self) {
        let rows = self.memory_rows();
        let total: usize = rows.iter().map(|r| r.1).sum();
        eprintln!(
            "flow memory: {} tasks, {} dependencies, {} links, peak {} flows at once, {} events queued at most",
            self.dag.len(),
            self.dag.edges(),
            self.hot.len(),
            self.flows.len(),
            self.heap.high_water
        );
        for (name, b) in rows {
            eprintln!(
                "  {:>10.1} MiB {:>5.1}%  {name}",
                b as f64 / (1u64 << 20) as f64,
                100.0 * b as f64 / total.max(1) as f64
            );
        }
        eprintln!("  {:>10.1} MiB total", total as f64 / (1u64 << 20) as f64);
    }

    /// [`Sim::print_memory`]'s rows: (table, bytes by capacity), largest first.
    fn memory_rows(&self) -> Vec<(&'static str, usize)> {
        // inline lists are in the per-link records
        let on_link: usize = self.spilled.iter().map(|l| l.capacity() * 4).sum::<usize>()
            + self.spilled.capacity() * std::mem::size_of::<Vec<u32>>();
        let nl = self.hot.len();
        let mut rows: Vec<(&str, usize)> = Vec::new();
        rows.extend(self.dag.table_bytes());
        rows.extend(self.runner.table_bytes());
        rows.extend([
            (
                "flow ideal times (4 B/task)",
                self.ideal.capacity() * 4 + self.ideal_wide.capacity() * 16,
            ),
            (
                "flow state (per concurrent flow)",
                self.flows.capacity() * std::mem::size_of::<Flow>() + self.free.capacity() * 4,
            ),
            ("flow per-link flow lists past the inline ones", on_link),
            // hot (cap, load, bytes, two marks, inline flow list), share_at,
            // cap_left, unfrozen
            (
                "flow per-link scalars",
                nl * (std::mem::size_of::<LinkHot>() + 8 + 8 + 4),
            ),
            ("flow event heap", self.heap.heap_bytes()),
            (
                "flow route cache",
                self.route_index.capacity() * (16 + 4 + 1)
                    + self.routes.capacity() * std::mem::size_of::<CachedRoute>()
                    + self.route_links.capacity() * 4,
            ),
            (
                "flow hand-over and water-filling scratch",
                self.vacated.capacity() * std::mem::size_of::<Vacated>()
                    + (self.vacated_by_key.capacity() * 16)
                    + (self.vacated_group_len.capacity()
                        + self.vacated_table.capacity()
                        + self.new_flows.capacity()
                        + self.forced.capacity()
                        + self.cons_links.capacity()
                        + self.comp_links.capacity()
                        + self.comp_flows.capacity())
                        * 4
                    + self.share_heap.capacity() * std::mem::size_of::<Share>(),
            ),
        ]);
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        rows
    }

    fn output(mut self, makespan: u64) -> RunOutput {
        let delivered = self.delivered;
        // Memory: the output is built where the run's per-task tables were,
        // not beside them: the successors are freed first; the completion
        // times are written over the runner's slots (done − start), the two
        // ends only when asked for; the ideal times widen from 4 B per task
        // to 8 B per transfer. Per task this is at most the run's 20 B (slot
        // and ideal time): 8 B of completion time collected over the 16-byte
        // slot and shrunk, then 4 + 8 B of ideal times
        // (budget::RUN_BYTES_PER_TASK_FLOW).
        self.runner.free_schedule();
        let op_timing = self.runner.op_timing.clone();
        // without spans the completion times are written over the runner's
        // slots (into_completion_times), not beside them
        let runner = std::mem::replace(&mut self.runner, DagRunner::without_spans(&Dag::new()));
        let dag = &self.dag;
        let (fct, task_start, task_done) =
            match runner.into_completion_times(|i| dag.kind(i).is_transfer()) {
                Ok(fct) => (fct, Vec::new(), Vec::new()),
                Err(mut runner) => {
                    let fct = (0..dag.len())
                        .filter(|&i| dag.kind(i).is_transfer())
                        .map(|i| runner.span(TaskId(i as u32)))
                        .collect();
                    let (start, done) = runner.take_spans();
                    (fct, start, done)
                }
            };
        let short = std::mem::take(&mut self.ideal);
        let mut wide = std::mem::take(&mut self.ideal_wide);
        wide.sort_unstable_by_key(|w| w.0);
        let mut ideal = Vec::with_capacity(fct.len());
        for (i, &v) in short.iter().enumerate() {
            if dag.kind(i).is_transfer() {
                ideal.push(SimTime(match v {
                    u32::MAX => {
                        let j = wide.partition_point(|w| (w.0 as usize) < i);
                        wide.get(j)
                            .filter(|w| w.0 as usize == i)
                            .map_or(u64::from(v), |w| w.1)
                    }
                    v => u64::from(v),
                }));
            }
        }
        drop(short);
        let links = self
            .hot
            .iter()
            .map(|h| h.bytes)
            .enumerate()
            .filter(|&(_, b)| b > 0)
            .map(|(l, b)| {
                let rate = self.topo.links[l].rate.bps() as f64;
                LinkCounters {
                    link: l as u32,
                    bytes: b,
                    utilization: if makespan > 0 {
                        (b as f64 * 8.0 / rate) / (makespan as f64 / 1e12)
                    } else {
                        0.0
                    },
                    ..LinkCounters::default()
                }
            })
            .collect();
        RunOutput {
            makespan: SimTime(makespan),
            op_timing,
            transfer_fct: fct,
            transfer_ideal: ideal,
            fabric: FabricCounters {
                bytes_delivered: delivered,
                bytes_sent: delivered,
                ..FabricCounters::default()
            },
            links,
            queue_pairs: Vec::new(),
            series: Vec::new(),
            link_timeline: self.timeline.take().map(|tl| {
                let bytes: Vec<u64> = self.hot.iter().map(|h| h.bytes).collect();
                let cap: Vec<f64> = self.hot.iter().map(|h| h.cap).collect();
                tl.finish(&bytes, &cap, self.cfg.timeline_links)
            }),
            events: self.events,
            task_start,
            task_done,
        }
    }
}

/// Flows a link's record holds in its own cache line ([`LinkHot::items`]).
const LINK_INLINE: usize = 6;
/// Bits of a flow-list entry holding the link's index in the flow's path.
const J_BITS: u32 = 4;
const J_MASK: u32 = (1 << J_BITS) - 1;
const _: () = assert!(MAX_PATH <= 1 << J_BITS, "a path index fits J_BITS");

/// Per link, what the hot paths touch together, in one cache line
/// ([`Sim::hot`]).
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct LinkHot {
    /// Capacity, bytes per picosecond (a copy of `Sim::cap`, which the
    /// class sharing and the timeline read whole).
    cap: f64,
    /// Sum of the rates of the flows on the link, bytes per picosecond.
    load: f64,
    /// Bytes carried.
    bytes: u64,
    /// Epoch at which the link joined the component being recomputed.
    mark: u32,
    /// Epoch at which it became one of the component's constraint links.
    cons: u32,
    /// Flows on the link.
    len: u32,
    /// 0: the flow list is `items[..len]`; k: it is `Sim::spilled[k − 1]`.
    spill: u32,
    /// The flow list while it is short: entries `fid << J_BITS | j`, flow
    /// `fid` on the link as the j-th of its path (the j tells a flow's two
    /// entries apart should a path cross a link twice).
    items: [u32; LINK_INLINE],
}
const _: () = assert!(std::mem::size_of::<LinkHot>() == 64);

/// A flow that finished at the current timestamp.
#[derive(Clone, Copy)]
struct Vacated {
    path: [u32; MAX_PATH],
    path_len: u8,
    rate: f64,
    /// Bit j: the path's j-th link was saturated when the flow ended.
    tight_mask: u16,
    taken: bool,
}

/// A transfer route kept by [`Sim::start_path`]: its links in
/// `Sim::route_links[start..start + len]`, its latency, picoseconds, and its
/// bottleneck rate.
#[derive(Clone, Copy)]
struct CachedRoute {
    start: u32,
    len: u8,
    latency: u64,
    bottleneck: crate::units::Rate,
}

/// Hasher of the route keys (only looked up, never iterated): `mix64` of the
/// packed (source, destination, queue pair), cheaper than SipHash.
#[derive(Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix64(self.0 ^ u64::from(b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = mix64(self.0 ^ x);
    }
    fn write_u128(&mut self, x: u128) {
        self.0 = mix64(self.0 ^ x as u64) ^ (x >> 64) as u64;
    }
}

/// Hash of a path for the hand-over lookup (only looked up, never iterated, so the
/// map's order cannot leak into results).
fn path_key(path: &[u32]) -> u64 {
    path.iter()
        .fold(path.len() as u64, |h, &l| mix64(h ^ l as u64))
}

#[derive(PartialEq)]
struct Share {
    share: f64,
    link: u32,
    n: u32,
}
impl Eq for Share {}
impl Ord for Share {
    fn cmp(&self, o: &Self) -> Ordering {
        // min-heap on share; ties by link id for determinism
        o.share
            .partial_cmp(&self.share)
            .unwrap_or(Ordering::Equal)
            .then(o.link.cmp(&self.link))
    }
}
impl PartialOrd for Share {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::Dep;
    use crate::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, TopologySpec};
    use crate::units::Rate;

    /// The bucketed queue pops exactly the (time, sequence) order of a heap
    /// of events (`std`'s, the reference) over pushes and pops interleaved as
    /// the run does them: many events sharing a time, pushes at the time
    /// being popped (a zero-duration task), a time emptied and pushed again.
    #[test]
    fn event_queue_pops_in_time_then_sequence_order() {
        use std::cmp::Reverse;
        let mut q = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let (mut seq, mut now, mut popped) = (0u64, 0u64, 0usize);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for step in 0..20_000u32 {
            x = mix64(x);
            if x % 3 != 0 || reference.is_empty() {
                seq += 1;
                // few distinct times, some at `now` itself
                let e = Event {
                    time: now + (x >> 8) % 4 * 1_000 * ((x >> 4) % 2),
                    seq,
                    kind: EvKind::TaskDone,
                    id: step,
                    version: 0,
                };
                q.push(e);
                reference.push(Reverse((e.time, e.seq, e.id)));
            } else {
                let Reverse((time, _, id)) = reference.pop().expect("non-empty");
                let e = q.pop().expect("the queue holds as many as the reference");
                // ids are unique: the same event, not only the same time
                assert_eq!((e.time, e.id), (time, id), "pop {popped}");
                assert_eq!(q.peek_time(), reference.peek().map(|r| r.0 .0));
                now = e.time;
                popped += 1;
            }
        }
        while let Some(Reverse((time, _, id))) = reference.pop() {
            let e = q.pop().expect("as many as the reference");
            assert_eq!((e.time, e.id), (time, id));
        }
        assert!(q.pop().is_none() && q.peek_time().is_none());
        assert!(popped > 5_000, "the sequence pops often: {popped}");
        assert!(q.buckets.len() < 64, "emptied times' buckets are reused");
    }

    fn single_switch(hosts: u32) -> Topology {
        let c = ClusterSpec {
            hosts,
            gpus_per_host: 1,
            nics_per_host: 1,
            nvlink_rate: Rate::gbps(3600),
            nvlink_latency: SimTime::from_ns(250),
            pcie_rate: Rate::gbps(512),
            pcie_latency: SimTime::from_ns(250),
        };
        let f = FabricLinkSpec {
            link_rate: Rate::gbps(400),
            link_latency: SimTime::from_ns(50),
            switch_latency: SimTime::from_ns(130),
            ..Default::default()
        };
        build(&c, &f, &TopologySpec::SingleSwitch).unwrap()
    }

    /// A link's flow list, inline or spilled, is exactly a `Vec` under
    /// push and swap-remove (the order the water-filling reads): random
    /// joins and leaves of flows whose paths cross two links (one of them
    /// twice, at path indices 0 and 2), checked against a `Vec` per link
    /// after every step, through growing past the inline capacity and
    /// shrinking back.
    #[test]
    fn link_flow_lists_keep_the_order_of_a_vec() {
        let topo = single_switch(2);
        let dag = Dag::new();
        let cfg = FlowConfig::default();
        let mut sim = Sim::new(&dag, &topo, &cfg);
        let (a, b) = (0u32, 1u32);
        let flows = 40u32;
        for _ in 0..flows {
            let mut path = [0; MAX_PATH];
            path[..3].copy_from_slice(&[a, b, a]);
            sim.flows.push(Flow {
                task: 0,
                path,
                slot: [0; MAX_PATH],
                path_len: 3,
                remaining: 0.0,
                rate: 0.0,
                last: 0,
                version: 0,
                latency: 0,
                bytes: 0,
                path_bytes: 0.0,
                reroutes: 0,
                old_rate: 0.0,
                scheduled: false,
                tl_left: 0.0,
                tl_from: 0,
                frozen: false,
                visit: 0,
                class: 0,
                live: false,
                route_key: NO_ROUTE,
                route_latency: 0,
                route_bottleneck: Rate(0),
            });
        }
        let mut model: Vec<Vec<u32>> = vec![Vec::new(); 2];
        let mut on = vec![false; flows as usize];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..4000 {
            x = mix64(x);
            // drift the population up, then down, across the inline capacity
            let target = if step < 2000 { 0.7 } else { 0.2 };
            let fid = (x % u64::from(flows)) as u32;
            let join = ((x >> 32) as f64 / u32::MAX as f64) < target;
            if join != on[fid as usize] {
                for j in 0..3 {
                    let l = sim.flows[fid as usize].path[j] as usize;
                    let e = fid << J_BITS | j as u32;
                    if join {
                        sim.link(fid, j);
                        model[l].push(e);
                    } else {
                        sim.unlink(fid, j);
                        let pos = model[l].iter().position(|&m| m == e).unwrap();
                        model[l].swap_remove(pos);
                    }
                }
                on[fid as usize] = join;
            }
            for (l, m) in model.iter().enumerate() {
                assert_eq!(sim.entries(l), &m[..], "step {step}, link {l}");
                assert_eq!(sim.hot[l].len as usize, m.len());
            }
        }
        assert!(
            !sim.spilled.is_empty(),
            "the lists grew past the inline ones"
        );
    }

    #[test]
    fn one_flow_on_an_idle_path_takes_alpha_plus_size_over_rate() {
        let topo = single_switch(2);
        let mut dag = Dag::new();
        dag.begin_op("p2p");
        dag.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        let out = run(&dag, &topo, &FlowConfig::default()).unwrap();
        // α: PCIe 250 + link 50 + switch 130 + link 50 + PCIe 250 = 730 ns.
        // S/B: 1 MiB at 400 Gb/s = 8 388 608 bits / 400e9 = 20.97152 us.
        let expected = 730_000 + 20_971_520;
        let got = out.makespan.ps();
        assert!(
            got.abs_diff(expected) <= 2,
            "got {got} ps, expected {expected} ps"
        );
        assert_eq!(out.fabric.bytes_delivered, 1 << 20);
        assert_eq!(out.transfer_fct.len(), 1);
    }

    #[test]
    fn two_flows_into_one_receiver_share_its_link_fairly() {
        let topo = single_switch(3);
        let mut dag = Dag::new();
        dag.begin_op("incast");
        dag.transfer(GpuId(0), GpuId(2), 1 << 20, &[]);
        dag.transfer(GpuId(1), GpuId(2), 1 << 20, &[]);
        let out = run(&dag, &topo, &FlowConfig::default()).unwrap();
        // Each gets 200 Gb/s on the shared switch→NIC link: 2 × 20.97 us of data.
        let expected = 730_000 + 2 * 20_971_520;
        assert!(
            out.makespan.ps().abs_diff(expected) <= 4,
            "{}",
            out.makespan.ps()
        );
    }

    #[test]
    fn max_min_gives_the_leftover_to_the_unconstrained_flow() {
        // Flows A: 0→2 and B: 1→2 share 2's downlink; flow C: 1→3 shares 1's uplink with B.
        // Max-min: the downlink of 2 gives A and B 200 each; C gets 400-200 = 200 on 1's uplink.
        // Then with A alone finishing at the same time as B... all three run at 200 Gb/s.
        // Make C twice as long: after A and B finish, C speeds up to 400.
        let topo = single_switch(4);
        let mut dag = Dag::new();
        dag.begin_op("x");
        let s = 1u64 << 20;
        dag.transfer(GpuId(0), GpuId(2), s, &[]);
        dag.transfer(GpuId(1), GpuId(2), s, &[]);
        let c = dag.transfer(GpuId(1), GpuId(3), 2 * s, &[]);
        let out = run(&dag, &topo, &FlowConfig::default()).unwrap();
        // C: S bytes at 200 (2 × 20.97 us), then S at 400 (20.97 us) = 3 × 20.97 us + α.
        let tc = out.transfer_fct[c.0 as usize].ps();
        let expected = 730_000 + 3 * 20_971_520;
        assert!(tc.abs_diff(expected) <= 8, "{tc} vs {expected}");
    }

    #[test]
    fn sent_dependencies_release_before_delivery() {
        let topo = single_switch(2);
        let mut dag = Dag::new();
        dag.begin_op("chain");
        let a = dag.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        dag.transfer(GpuId(0), GpuId(1), 1 << 20, &[Dep::Sent(a)]);
        let out = run(&dag, &topo, &FlowConfig::default()).unwrap();
        // back-to-back on the wire: 2 × S/B + α once.
        let expected = 730_000 + 2 * 20_971_520;
        assert!(
            out.makespan.ps().abs_diff(expected) <= 4,
            "{}",
            out.makespan.ps()
        );
        assert_eq!(out.fabric.bytes_delivered, 2 << 20);
    }

    #[test]
    fn a_rate_change_mid_flow_rescales_the_rest_of_it() {
        // 1 MiB at 400 Gb/s takes 20.97152 us; at half of it the sender's uplink
        // drops to 200 Gb/s, so the second half takes 20.97152 us more:
        // 730 ns + 10.48576 us + 20.97152 us.
        let topo = single_switch(2);
        let mut dag = Dag::new();
        dag.begin_op("p2p");
        dag.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        let cfg = FlowConfig {
            seed: 0,
            link_events: vec![LinkEvent {
                at: SimTime(10_485_760),
                link: topo.nics[0].uplink,
                kind: LinkEventKind::Rate(Rate::gbps(200)),
            }],
            ..Default::default()
        };
        let out = run(&dag, &topo, &cfg).unwrap();
        let expected = 730_000 + 10_485_760 + 20_971_520;
        assert!(
            out.makespan.ps().abs_diff(expected) <= 4,
            "{} vs {expected}",
            out.makespan.ps()
        );
        assert_eq!(out.fabric.bytes_delivered, 1 << 20);
    }

    #[test]
    fn a_flow_whose_only_path_dies_is_an_error_not_a_hang() {
        let topo = single_switch(2);
        let mut dag = Dag::new();
        dag.begin_op("p2p");
        dag.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        let cfg = FlowConfig {
            seed: 0,
            link_events: vec![LinkEvent {
                at: SimTime(1_000_000),
                link: topo.nics[1].downlink,
                kind: LinkEventKind::Down,
            }],
            ..Default::default()
        };
        assert!(matches!(
            run(&dag, &topo, &cfg),
            Err(FlowError::Unreachable { .. })
        ));
    }

    #[test]
    fn the_link_timeline_changes_nothing_and_accounts_for_every_byte() {
        let topo = single_switch(4);
        let mut dag = Dag::new();
        dag.begin_op("x");
        let s = 1u64 << 20;
        dag.transfer(GpuId(0), GpuId(2), s, &[]);
        dag.transfer(GpuId(1), GpuId(2), s, &[]);
        dag.transfer(GpuId(1), GpuId(3), 2 * s, &[]);
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let c2 = calls.clone();
        let on = FlowConfig {
            link_timeline: true,
            progress: Some(std::sync::Arc::new(move |_| {
                c2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            })),
            ..FlowConfig::default()
        };
        let a = run(&dag, &topo, &FlowConfig::default()).unwrap();
        let b = run(&dag, &topo, &on).unwrap();
        assert_eq!(a.makespan, b.makespan);
        assert_eq!(a.transfer_fct, b.transfer_fct);
        assert_eq!(a.links, b.links);
        assert!(a.link_timeline.is_none());
        // fewer events than PROGRESS_EVERY: the hook is never called
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 0);
        let tl = b.link_timeline.unwrap();
        // buckets cover the sending time, at most twice over (widths double)
        let span = tl.bucket.ps() * TIMELINE_BUCKETS as u64;
        assert!(span <= 2 * b.makespan.ps(), "{span} vs {:?}", b.makespan);
        for l in &b.links {
            let row = &tl.links.iter().find(|(id, _)| *id == l.link).unwrap().1;
            let sum: f64 = row.iter().sum();
            assert!(
                (sum - l.bytes as f64).abs() < 1e-6 * l.bytes as f64 + 1.0,
                "link {}: {sum} vs {}",
                l.link,
                l.bytes
            );
        }
    }

    #[test]
    fn unreachable_destination_is_an_error_not_a_panic() {
        let mut topo = single_switch(2);
        let up = topo.nics[1].uplink;
        topo.set_link_up(up, false);
        let mut dag = Dag::new();
        dag.begin_op("x");
        dag.transfer(GpuId(0), GpuId(1), 100, &[]);
        assert!(matches!(
            run(&dag, &topo, &FlowConfig::default()),
            Err(FlowError::Unreachable { .. })
        ));
    }

    /// Ideal times are kept in 4 B below 2^32 ps and whole above: a 1 MiB
    /// and a 1 GiB transfer one after the other on an idle path each
    /// complete in their ideal time, α + S/B with α = 730 ns (PCIe 250, link
    /// 50, switch 130, link 50, PCIe 250) and B = 400 Gb/s; the second takes
    /// 21.47 ms, past the 4.29 ms (2^32 ps) held in 4 B.
    /// The flow level's budget ([`crate::budget::dag_memory_at`]) against the
    /// per-task and per-dependency tables a run holds (`FABRICSIM_FLOW_MEM`'s
    /// dag, runner and ideal-time rows) on a hierarchical all-reduce whose
    /// intra-host rings are repeated blocks (16 hosts × 8 GPUs, a tree
    /// between hosts, 64 MiB in 1 MiB chunks): never below them, and at most
    /// 10% above (the per-stored-task start of the shared successors is
    /// counted for every stored task, and a repeat's dependencies before its
    /// block as its own).
    #[test]
    fn budget_flow_estimate_is_the_measured_tables() {
        let topo = crate::collective::test_topo(16, 8);
        let (spec, ranks) = crate::collective::test_hierarchical_allreduce();
        let mut dag = Dag::new();
        crate::collective::lower(&spec, &ranks, &topo, &mut dag, &[]).unwrap();
        assert!(dag.stored_tasks() * 2 < dag.len(), "blocks stored once");
        let cfg = FlowConfig {
            skip_task_spans: true,
            ..FlowConfig::default()
        };
        let mut sim = Sim::new(&dag, &topo, &cfg);
        sim.simulate().unwrap();
        let measured: usize = sim
            .memory_rows()
            .iter()
            .filter(|r| {
                r.0.starts_with("dag ")
                    || r.0.starts_with("runner ")
                    || r.0.starts_with("flow ideal")
            })
            .map(|r| r.1)
            .sum();
        let est = crate::budget::dag_memory_at(&dag, true);
        let ratio = est / measured as f64;
        assert!(
            (1.0..=1.1).contains(&ratio),
            "estimate {est} B, measured {measured} B"
        );
    }

    #[test]
    fn wide_ideal_times_are_kept_whole() {
        let topo = single_switch(2);
        let mut dag = Dag::new();
        dag.begin_op("p2p");
        let a = dag.transfer(GpuId(0), GpuId(1), 1 << 20, &[]);
        dag.transfer(GpuId(0), GpuId(1), 1 << 30, &[Dep::Done(a)]);
        let out = run(&dag, &topo, &FlowConfig::default()).unwrap();
        let want = [730_000 + 20_971_520, 730_000 + 21_474_836_480u64];
        assert!(want[1] > u64::from(u32::MAX));
        for (i, w) in want.iter().enumerate() {
            let (ideal, fct) = (out.transfer_ideal[i].ps(), out.transfer_fct[i].ps());
            assert!(ideal.abs_diff(*w) <= 2, "ideal {i}: {ideal} ps, want {w}");
            assert!(fct.abs_diff(*w) <= 2, "completion {i}: {fct} ps, want {w}");
        }
    }

    #[cfg(test)]
    mod local_vs_global {
        //! The localized recomputation must give the same rates as the global one.
        use super::*;
        use crate::dag::Dep;
        use crate::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, TopologySpec};
        use crate::units::Rate;
        use proptest::prelude::*;

        fn fabric(hosts: u32) -> Topology {
            let c = ClusterSpec {
                hosts,
                gpus_per_host: 2,
                nics_per_host: 1,
                nvlink_rate: Rate::gbps(3600),
                nvlink_latency: SimTime::from_ns(250),
                pcie_rate: Rate::gbps(256),
                pcie_latency: SimTime::from_ns(250),
            };
            let f = FabricLinkSpec {
                link_rate: Rate::gbps(100),
                link_latency: SimTime::from_ns(50),
                switch_latency: SimTime::from_ns(300),
                ..Default::default()
            };
            // 3:1 oversubscribed: saturated and unsaturated links mix.
            build(
                &c,
                &f,
                &TopologySpec::LeafSpine {
                    radix: 4,
                    oversubscription: 3.0,
                },
            )
            .unwrap()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn same_completion_times(
                flows in proptest::collection::vec((0u32..24, 0u32..24, 1u64..4_000_000, 0usize..4), 2..60),
                seed in 0u64..1000,
            ) {
                let topo = fabric(12);
                let mut dag = Dag::new();
                dag.begin_op("random");
                let mut ids: Vec<TaskId> = Vec::new();
                for (i, &(s, d, bytes, dep)) in flows.iter().enumerate() {
                    // dep 1-2: wait for delivery (a later timestamp); dep 3: chain on Sent,
                    // so flows end and start at the same timestamp (pipelined chunks)
                    let deps: Vec<Dep> = match dep {
                        3 if i >= 1 => vec![Dep::Sent(ids[i - 1])],
                        d if d > 0 && i >= d => vec![Dep::Done(ids[i - d])],
                        _ => vec![],
                    };
                    ids.push(dag.transfer(GpuId(s), GpuId(d), bytes, &deps));
                }
                let local = run(&dag, &topo, &FlowConfig { seed, ..Default::default() }).unwrap();
                let global = run(&dag, &topo, &FlowConfig { seed, full_recompute: true, ..Default::default() }).unwrap();
                for (a, b) in local.transfer_fct.iter().zip(&global.transfer_fct) {
                    let tol = (b.ps() as f64 * 1e-6).max(4.0);
                    prop_assert!((a.ps() as f64 - b.ps() as f64).abs() <= tol, "{} vs {}", a.ps(), b.ps());
                }
            }
        }
    }
}
