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
//! Queue-pair ids follow creation order, and the one-queue run's enter the
//! event key and the report. Partitions create pairs one partition after
//! the other within a window, so a pair's id here may differ from the
//! one-queue run's: its **global id** is the rank of its creation in the
//! one-queue order, by the (time, tie key, packed event) of the event that
//! created it, known at the barrier that closes the window. Its events are
//! keyed by the global id ([`EventQueue::push_keyed`]) and, pushed before
//! the id is known, wait for that barrier (a violation if due inside the
//! window); the report lists the pairs by global id.

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
    /// The queue pairs created in the current window: (tag of the event
    /// that created them, id), in id order.
    created: Vec<((u64, u64, u64), u32)>,
    /// Per queue pair: its global id (module doc), or [`PENDING`] until the
    /// barrier of the window that created it.
    pub gid: Vec<u32>,
    /// Global ids handed out.
    next_gid: u32,
    /// The current partition handles no event at or after this time in
    /// this window: an event of a pair created in the window is due then.
    pub stop: u64,
    /// Events of queue pairs created in the current window pushed into
    /// their own partition's queue: (queue, time, scheduling instant, event),
    /// keyed at the barrier.
    held: Vec<(usize, u64, u64, Event)>,
    /// Cross-partition events due before `T + L` (a global one before the
    /// window's end): a run with any may differ from the one-queue run.
    pub violations: u64,
    /// Windows run.
    pub windows: u64,
    /// Events handled alone (stepped).
    pub steps: u64,
    /// Events put into an outbox.
    pub crossings: u64,
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
            gid: Vec::new(),
            next_gid: 0,
            held: Vec::new(),
            stop: u64::MAX,
            violations: 0,
            windows: 0,
            steps: 0,
            crossings: 0,
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
        if self.n == 1 {
            // one partition: its own events and the global ones
            let dst = match ev {
                Event::Link { .. } | Event::Sample => 1,
                Event::Pfc { kind, .. } if kind >= pfc_kind::WATCHDOG => 1,
                _ => 0,
            };
            if self.stepping || dst == self.cur {
                self.qs[dst].push_from(time, self.now, ev);
            } else {
                self.push_cross(time, dst, ev);
            }
            return;
        }
        let dst = self.owner(ev);
        if self.stepping || dst == self.cur {
            match self.keyed(ev) {
                Some(key) => self.qs[dst].push_keyed(time, self.now, ev, key),
                None => {
                    // a pair created in this window: keyed at the barrier;
                    // its partition stops before it (its timers are
                    // stepped, in one-queue order, with P > 1)
                    self.stop = self.stop.min(time);
                    self.held.push((dst, time, self.now, ev));
                }
            }
            return;
        }
        self.push_cross(time, dst, ev);
    }

    /// `ev` at `time` for queue `dst`, scheduled by another inside a
    /// window: into their outbox, checking the lookahead.
    #[inline]
    fn push_cross(&mut self, time: u64, dst: usize, ev: Event) {
        let due = if dst == self.n { self.end } else { self.bound };
        if time < due {
            self.violation(time, dst, ev);
        }
        self.crossings += 1;
        self.outbox[self.cur * (self.n + 1) + dst].push((time, self.now, ev));
    }

    /// `ev` at `time` for queue `dst` cannot be delivered in order: counted.
    #[cold]
    fn violation(&mut self, time: u64, dst: usize, ev: Event) {
        debug_assert!(
            false,
            "{ev:?} at {time} ps from partition {} to {dst}: due inside the window [{}, {}) (T + L = {})",
            self.cur,
            self.bound.saturating_sub(self.lookahead),
            self.end,
            self.bound
        );
        self.violations += 1;
    }

    /// `ev` with its queue pair's global id, the ids its tie key is made of;
    /// `None` while that id is not known yet.
    #[inline]
    fn keyed(&self, ev: Event) -> Option<Event> {
        let g = |qp: QpId| match self.gid[qp.0 as usize] {
            PENDING => None,
            g => Some(QpId(g)),
        };
        Some(match ev {
            Event::QpWake { qp } => Event::QpWake { qp: g(qp)? },
            Event::Rto { qp } => Event::Rto { qp: g(qp)? },
            Event::CcTimer { qp } => Event::CcTimer { qp: g(qp)? },
            Event::DelAck { qp } => Event::DelAck { qp: g(qp)? },
            e => e,
        })
    }

    /// Queue pair `q` (the next id) from GPU `src` to GPU `dst` was created
    /// while the current event was handled.
    pub fn add_qp(&mut self, q: QpId, src: u32, dst: u32) {
        debug_assert_eq!(q.0 as usize, self.qp.len());
        self.qp
            .push((self.gpu[src as usize], self.gpu[dst as usize]));
        if self.stepping || self.n == 1 {
            // in one-queue order: every partition is at this event, or
            // there is one
            self.gid.push(self.next_gid);
            self.next_gid += 1;
        } else {
            self.gid.push(PENDING);
            self.created.push((self.tag, q.0));
        }
    }

    /// The barrier: hands out the global ids of the window's new queue
    /// pairs, then delivers what waited for them and the outboxes (source
    /// by source, destination by destination, in push order).
    pub fn barrier(&mut self) {
        // the window's new pairs in one-queue order: by the event that
        // created them, then (one event's) by id
        self.created.sort_unstable();
        for &(_, q) in &self.created {
            self.gid[q as usize] = self.next_gid;
            self.next_gid += 1;
        }
        self.created.clear();
        self.stop = u64::MAX;
        for (dst, t, sched, ev) in std::mem::take(&mut self.held) {
            let key = self.keyed(ev).expect("global ids are known");
            self.qs[dst].push_keyed(t, sched, ev, key);
        }
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
                let key = self.keyed(ev).expect("global ids are known");
                self.qs[dst].push_keyed(t, sched.min(t), ev, key);
            }
            out.clear();
            self.outbox[i] = out;
        }
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

/// [`Parts::gid`] of a queue pair created in the current window.
pub const PENDING: u32 = u32::MAX;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::packet::ids::PortId;
    use crate::backend::packet::{run_partitioned, FlowControl, PacketConfig, PacketStats};
    use crate::collective::{lower, Algorithm, CollectiveOp, CollectiveSpec, ProtoCost};
    use crate::dag::Dag;
    use crate::topology::{GpuId, TopologySpec};
    use crate::units::SimTime;

    /// Everything a run returns but the partitioned run's own counters, as
    /// text (the output types have no equality): queue pairs in id order,
    /// every counter, the event count.
    fn outcome(dag: &Dag, topo: &Topology, cfg: &PacketConfig, parts: u32) -> String {
        let (out, stats) = run_partitioned(dag, topo, cfg, parts).unwrap();
        assert_eq!(stats.partition_violations, 0, "{parts} partitions");
        let stats = PacketStats {
            partition_windows: 0,
            partition_steps: 0,
            partition_crossings: 0,
            event_queue_high_water: 0,
            slab_high_water: 0,
            ..stats
        };
        format!("{out:?}\n{stats:?}")
    }

    #[test]
    fn collectives_give_one_output_in_any_number_of_partitions() {
        // Stronger than the report (which merges queue pairs by endpoints):
        // the backend's own output, queue pairs in id order and every
        // packet-level counter, on a lossy k = 4 fat-tree whose ring and
        // tree steps create pairs inside windows, in two partitions at once
        // (without the global ids of queue pairs the ring's differ in two).
        let topo = crate::topology::test_cluster(8, 2, &TopologySpec::FatTree { k: 4 });
        let cfg = PacketConfig {
            flow_control: FlowControl::Lossy,
            rto: SimTime::from_us(30),
            ..PacketConfig::default()
        };
        // a run with faults too: an aggregation-core link down and up, a
        // host's uplink slowed (link events are global, stepped; the lost
        // packets' timeouts are stepped with P > 1)
        let sw = |n: crate::topology::NodeId| {
            matches!(
                topo.nodes[n.0 as usize].kind,
                crate::topology::NodeKind::Switch { .. }
            )
        };
        let core = (0..topo.links.len())
            .rev()
            .find(|&l| sw(topo.links[l].from) && sw(topo.links[l].to))
            .expect("a fat-tree has switch links");
        let ev = |us, l: usize, kind| crate::backend::LinkEvent {
            at: SimTime::from_us(us),
            link: crate::topology::LinkId(l as u32),
            kind,
        };
        let faulty = PacketConfig {
            link_events: vec![
                ev(3, core, crate::backend::LinkEventKind::Down),
                ev(40, core, crate::backend::LinkEventKind::Up),
                ev(
                    5,
                    topo.nics[3].uplink.0 as usize,
                    crate::backend::LinkEventKind::Rate(crate::units::Rate::gbps(100)),
                ),
            ],
            ..cfg.clone()
        };
        let mut plains = Vec::new();
        for (algorithm, cfg) in [
            (Algorithm::Ring, &cfg),
            (Algorithm::Tree, &cfg),
            (Algorithm::Ring, &faulty),
        ] {
            let spec = CollectiveSpec {
                op: CollectiveOp::AllReduce,
                algorithm,
                bytes: 1 << 20,
                chunk_bytes: 1 << 17,
                inter_host: Algorithm::Ring,
                root: 0,
                channels: 2,
                pxn: true,
                proto: ProtoCost::NONE,
            };
            let ranks: Vec<GpuId> = (0..topo.num_gpus()).map(GpuId).collect();
            let mut dag = Dag::new();
            lower(&spec, &ranks, &topo, &mut dag, &[]).unwrap();
            let plain = outcome(&dag, &topo, cfg, 0);
            plains.push(plain.clone());
            for parts in [1, 2, 4] {
                let (_, st) = run_partitioned(&dag, &topo, cfg, parts).unwrap();
                assert!(
                    parts == 1 || st.partition_crossings > 0,
                    "{algorithm:?} {parts}"
                );
                assert_eq!(
                    outcome(&dag, &topo, cfg, parts),
                    plain,
                    "{algorithm:?} in {parts} partitions"
                );
            }
        }
        assert_ne!(plains[0], plains[2], "the faults change the ring's run");
    }

    #[test]
    fn a_cross_event_may_land_at_t_plus_l_not_before() {
        let topo = crate::topology::builder::small_single_switch(4, 1);
        let part = crate::topology::partition::partition(&topo, 2).unwrap();
        let l = part.lookahead.expect("two partitions share the switch").0;
        let mut p = Parts::new(&topo, &part);
        // a link whose receiver lies in the other partition than its sender
        let cut = part.cut[0];
        let link = &topo.links[cut.0 as usize];
        let (a, b) = (part.of(link.from) as usize, part.of(link.to) as usize);
        assert_ne!(a, b);
        let arrive = |pkt| Event::Arrive {
            pkt: crate::backend::packet::ids::PktIdx(pkt),
            link: PortId::from(cut),
        };
        // a window [1000, 1000 + L) handled by the sender's partition
        p.stepping = false;
        p.cur = a;
        p.now = 1000;
        p.bound = 1000 + l;
        p.end = 1000 + l;
        p.push(1000 + l, arrive(0));
        assert_eq!(p.violations, 0);
        assert!(p.qs[b].is_empty(), "held in the outbox until the barrier");
        p.barrier();
        assert_eq!(p.qs[b].peek().map(|h| h.0), Some(1000 + l));
        // one picosecond sooner breaks the window (release builds count it;
        // debug builds stop at the assertion)
        if !cfg!(debug_assertions) {
            p.push(999 + l, arrive(1));
            assert_eq!(p.violations, 1);
        }
    }
}
