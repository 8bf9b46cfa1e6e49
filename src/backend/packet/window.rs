//! Sequential conservative windows (issue 16, milestone M2a of
//! docs/parallel-engine.md): a packet run split into P partitions and
//! executed on one thread, window by window, as the threads of M2b will.
//!
//! Every event belongs to the partition of the node that owns the state its
//! handler changes ([`Parts::owner`]: a port's events its sending node's, an
//! arrival the receiving node's, a queue pair's timers its source host's, a
//! delayed ACK its receiver's); link events, samples and the PFC watchdog,
//! cycle check and restore timers (they read or write lanes of both ends and
//! the run's lists of findings) are **global**. Each partition has its own
//! [`EventQueue`], the global events one more.
//!
//! The run advances in windows `[T, end)`: `T` the earliest pending event
//! anywhere, `end = min(T + L, next global event, time limit + 1, deadlock
//! watchdog + 1)` with `L` the lookahead (smallest latency of a cut link).
//! Inside a window each partition in turn handles its events before `end`;
//! an event it schedules for another partition goes into the (source,
//! destination) outbox and must land at `≥ T + L` (a global one at `≥ end`),
//! else it is a **violation**: counted ([`Parts::violations`]) and a debug
//! assertion. At the barrier the outboxes are delivered in a fixed order
//! (source, then destination, then push order) with the tie key their
//! scheduling instant gives ([`EventQueue::push_from`]), so every queue pops
//! what one queue would. What must see the whole run at one instant is
//! **stepped**: the earliest event of all queues alone, exactly as the
//! one-queue loop would handle it (global events; the time limit and the
//! deadlock watchdog; with more than one partition the timers the one-queue
//! loop skips once the work is done and the fabric drained, since another
//! partition may finish the work earlier in the same window).
//!
//! Queue-pair ids follow creation order and enter the event key and the
//! report; pairs created in one window by different partitions must be
//! created in the order the one-queue run creates them, which the barrier
//! checks (a decrease is a violation).

use super::engine::{Event, EventQueue};
use super::flow_control::pfc::kind as pfc_kind;
use super::ids::QpId;
use crate::topology::partition::Partitioning;
use crate::topology::Topology;

/// The event queues of a run: one, or one per partition and a global one.
#[derive(Default)]
pub struct Queues {
    /// The queue of a one-queue run (unused when partitioned).
    pub main: EventQueue,
    /// The partitioned run's queues, outboxes and checks.
    pub parts: Option<Box<Parts>>,
}

impl Queues {
    /// Schedules `ev` at `time` ps (see [`EventQueue::push`]; partitioned:
    /// [`Parts::push`]).
    #[inline(always)]
    pub fn push(&mut self, time: u64, ev: Event) {
        match &mut self.parts {
            None => self.main.push(time, ev),
            Some(p) => p.push(time, ev),
        }
    }

    /// Most events pending at once (partitioned: the sum of each queue's).
    pub fn high_water(&self) -> usize {
        match &self.parts {
            None => self.main.high_water(),
            Some(p) => p.qs.iter().map(EventQueue::high_water).sum(),
        }
    }
}

/// A partitioned run's state besides the simulation's (module doc).
pub struct Parts {
    /// Partitions P; queue `n` is the global one.
    pub n: usize,
    /// One queue per partition, then the global queue.
    pub qs: Vec<EventQueue>,
    /// L, ps: the smallest latency of a cut link (`u64::MAX` without one).
    pub lookahead: u64,
    /// Per port (directed link): its sending node's partition.
    port_from: Vec<u32>,
    /// Per port: its receiving node's partition.
    port_to: Vec<u32>,
    /// Per node: its partition.
    node: Vec<u32>,
    /// Per GPU: its node's partition.
    gpu: Vec<u32>,
    /// Per queue pair: its source and destination GPU's partitions.
    qp: Vec<(u32, u32)>,
    /// The queue whose event is being handled.
    pub cur: usize,
    /// Its time, ps: the scheduling instant of what it pushes.
    pub now: u64,
    /// Its (time, tie key, packed event): the order of queue-pair creations.
    pub tag: (u64, u64, u64),
    /// Outside a window (the start, a stepped event): pushes go straight to
    /// their queue, every partition being at the same instant.
    pub stepping: bool,
    /// `T + L` of the current window.
    pub bound: u64,
    /// The current window's end.
    pub end: u64,
    /// Per (source, destination) queue, `src * (n + 1) + dst`: (time,
    /// scheduling instant, event) in push order.
    outbox: Vec<Vec<(u64, u64, Event)>>,
    /// Tags of the queue pairs created in the current window, in id order.
    created: Vec<(u64, u64, u64)>,
    /// Cross-partition events due before `T + L` (a global one before the
    /// window's end), and queue pairs created out of the one-queue order:
    /// a run with any differs from the one-queue run.
    pub violations: u64,
    /// Windows run.
    pub windows: u64,
    /// Events handled alone (stepped).
    pub steps: u64,
}

impl Parts {
    /// Queues for the partitions of `part` over `topo`.
    pub fn new(topo: &Topology, part: &Partitioning) -> Parts {
        let n = part.parts as usize;
        let of = |node: crate::topology::NodeId| part.of(node);
        Parts {
            n,
            qs: (0..=n).map(|_| EventQueue::default()).collect(),
            lookahead: part.lookahead.map_or(u64::MAX, |l| l.0),
            port_from: topo.links.iter().map(|l| of(l.from)).collect(),
            port_to: topo.links.iter().map(|l| of(l.to)).collect(),
            node: part.of_node.clone(),
            gpu: topo.gpus.iter().map(|g| of(g.node)).collect(),
            qp: Vec::new(),
            cur: n,
            now: 0,
            tag: (0, 0, 0),
            stepping: true,
            bound: 0,
            end: 0,
            outbox: vec![Vec::new(); (n + 1) * (n + 1)],
            created: Vec::new(),
            violations: 0,
            windows: 0,
            steps: 0,
        }
    }

    /// The queue of the partition that owns `ev` (module doc), or `n` for a
    /// global event.
    #[inline]
    pub fn owner(&self, ev: Event) -> usize {
        (match ev {
            Event::TxDone { port } | Event::Credit { link: port, .. } => self.port_from[port.idx()],
            Event::Arrive { link, .. } => self.port_to[link.idx()],
            Event::QpWake { qp } | Event::Rto { qp } | Event::CcTimer { qp } => {
                self.qp[qp.0 as usize].0
            }
            Event::DelAck { qp } => self.qp[qp.0 as usize].1,
            Event::TaskDone { node, .. } => self.node[node as usize],
            Event::Pfc { link, kind, .. } => match kind {
                pfc_kind::PAUSE | pfc_kind::RESUME | pfc_kind::EXPIRY => self.port_from[link.idx()],
                pfc_kind::REFRESH => self.port_to[link.idx()],
                _ => self.n as u32,
            },
            Event::Link { .. } | Event::Sample => self.n as u32,
        }) as usize
    }

    /// Schedules `ev` at `time`: into its partition's queue when that is the
    /// one handling the current event or outside a window, else into the
    /// outbox, checking the lookahead (module doc).
    #[inline]
    pub fn push(&mut self, time: u64, ev: Event) {
        let dst = self.owner(ev);
        if self.stepping || dst == self.cur {
            self.qs[dst].push_from(time, self.now, ev);
            return;
        }
        let due = if dst == self.n { self.end } else { self.bound };
        if time < due {
            debug_assert!(
                false,
                "{ev:?} at {time} ps from partition {} to {dst}: due before {due} (window [{}, {}))",
                self.cur,
                self.bound.saturating_sub(self.lookahead),
                self.end
            );
            self.violations += 1;
        }
        self.outbox[self.cur * (self.n + 1) + dst].push((time, self.now, ev));
    }

    /// Queue pair `q` (the next id) from GPU `src` to GPU `dst` was created
    /// while the current event was handled.
    pub fn add_qp(&mut self, q: QpId, src: u32, dst: u32) {
        debug_assert_eq!(q.0 as usize, self.qp.len());
        self.qp
            .push((self.gpu[src as usize], self.gpu[dst as usize]));
        if !self.stepping {
            self.created.push(self.tag);
        }
    }

    /// The barrier: delivers the outboxes (source by source, destination by
    /// destination, in push order) and checks the order of the window's
    /// queue-pair creations.
    pub fn barrier(&mut self) {
        let w = self.n + 1;
        for i in 0..w * w {
            if self.outbox[i].is_empty() {
                continue;
            }
            let dst = i % w;
            let mut out = std::mem::take(&mut self.outbox[i]);
            for &(t, sched, ev) in &out {
                // (a violation may be due before what its queue handled:
                // it is counted; deliver it as late as that, no earlier)
                let t = t.max(self.qs[dst].now());
                self.qs[dst].push_from(t, sched.min(t), ev);
            }
            out.clear();
            self.outbox[i] = out;
        }
        if self.created.windows(2).any(|w| w[0] > w[1]) {
            self.violations += 1;
        }
        self.created.clear();
    }

    /// The earliest pending event of all queues, as (time, tie key, packed
    /// event) and its queue: what one queue would pop next.
    pub fn first(&mut self) -> Option<((u64, u64, u64), usize)> {
        let mut best: Option<((u64, u64, u64), usize)> = None;
        for (i, q) in self.qs.iter_mut().enumerate() {
            if let Some(h) = q.peek() {
                if best.is_none_or(|(b, _)| h < b) {
                    best = Some((h, i));
                }
            }
        }
        best
    }
}

/// The timers the one-queue loop skips once the work is done and every
/// packet drained (`Sim::run`).
#[inline]
pub fn skippable(ev: Event) -> bool {
    matches!(
        ev,
        Event::Link { .. }
            | Event::Rto { .. }
            | Event::CcTimer { .. }
            | Event::DelAck { .. }
            | Event::QpWake { .. }
            | Event::Pfc {
                kind: pfc_kind::WATCHDOG..=pfc_kind::RESTORE,
                ..
            }
    )
}
