//! The simulator state and its main loop: flat vectors indexed by ids, one
//! event queue, one generator, the DAG runner.

use std::collections::HashMap;

use super::classes::ClassSched;
use super::engine::Event;
use super::flow_control::{Credits, LinkLaw, PfcState, SharedBuffers};
use super::ids::{IdVec, PortId};
use super::nic::QueuePairs;
use super::slab::{prefetch, Slab, NONE};
use super::stats::{Counters, PacketStats, Sampler};
use super::switch::{Flowlets, Port, Ports, RouteCache, NEVER};
use super::window::{skippable, Parts, Queues};
use super::{CongestionControl, FlowControl, PacketConfig, PacketError, Routing};
use crate::backend::timeline::Timeline;
use crate::backend::{
    LinkCounters, ProgressHook, ProgressTick, QpCounters, RunOutput, PROGRESS_EVERY,
};
use crate::dag::{Dag, DagRunner, TaskId, TaskKind};
use crate::topology::{DragonflyRouting, GpuId, LinkId, LinkKind, NodeKind, Topology};
use crate::units::SimTime;

/// Everything a run touches.
pub(super) struct Sim<'a> {
    pub dag: &'a Dag,
    pub cfg: &'a PacketConfig,
    /// Own copy: link faults change its routes.
    pub topo: Topology,
    pub now: u64,
    /// The event queue, or a partitioned run's queues ([`super::window`]).
    pub q: Queues,
    /// Per node: the state of its random stream (SplitMix64: Steele, Lea and
    /// Flood, OOPSLA 2014), seeded from the run's seed and the node id. A
    /// node's draws never depend on another node's, so a partitioned run
    /// draws the same numbers (issue 16); one stream for the run would hand
    /// them out in the global event order.
    rng: Vec<u64>,
    pub pkts: Slab,
    /// One per directed link, same index, with their egress queues.
    pub ports: Ports,
    /// Virtual lanes per port.
    pub vls: usize,
    /// Credits of every credit-controlled link.
    pub credits: Credits,
    /// PFC state of every network link (unused without PFC).
    pub pfc: PfcState,
    /// Shared-buffer occupancy per node (lossy, shared buffer only).
    pub shared: SharedBuffers,
    /// Per node: the GPU it is, or NONE.
    pub gpu_of_node: Vec<u32>,
    pub routes: RouteCache,
    /// Scratch for next-hop candidates.
    pub cands: Vec<PortId>,
    /// Scratch for `Topology::next_hops`.
    pub tmp_links: Vec<LinkId>,
    /// Scratch for the hops of a path UGAL-G walks (never `cands`, which holds
    /// the decision being made).
    pub walk: Vec<PortId>,
    /// Per packet slot: the dragonfly router (index `group·a + router`) a
    /// Valiant detour still has to reach, plus one (0: none). Written for every data packet at its source
    /// router under a non-minimal group routing, read only for data packets;
    /// grows with the slab, so a run allocates only to its high-water mark.
    pub via: Vec<u32>,
    /// The topology's dragonfly group routing takes non-minimal paths
    /// (Valiant, UGAL): data packets choose their path at the source router.
    pub df_non_minimal: bool,
    /// Per port, under dragonfly UGAL-L with credits: whether it is a local
    /// router-to-router link or a global one, for UGAL-L_CR's delayed credits
    /// (Kim et al., ISCA 2008, §4.2.2); empty otherwise, which is all the hot
    /// path tests.
    pub cr_port: Vec<CrPort>,
    /// Per port, under dragonfly UGAL-L with credits: bytes of packets whose
    /// source router sent them minimally `[0]` and non-minimally `[1]` on it,
    /// queued there or held in the next router's buffer (not yet credited
    /// back): UGAL-L_VC_H's per-VC occupancy (Kim et al., ISCA 2008, §4.2.2),
    /// read when the minimal and the non-minimal path leave on the same port.
    /// Empty otherwise.
    pub vc_held: Vec<[u64; 2]>,
    /// Per packet slot, under UGAL-L with credits: 0, or 1 + the class
    /// (`vc_held` index) its source router counted it in, until the next
    /// router releases it.
    pub vc_cls: Vec<u8>,
    /// Under dragonfly UGAL-L with lane escalation (and no traffic classes):
    /// a data packet its source router sends minimally goes one lane above
    /// its hop stage from there on, a detour stays on it, so the two classes
    /// never share a lane on the same port (Kim et al., ISCA 2008, §4.2 and
    /// booksim's `ugal_dragonflynew`: the VC is the routing phase). Sharing
    /// one, the detours through the router that holds the group's direct
    /// global link queued behind the minimal packets waiting for that link
    /// (measured on the 1,056-host dragonfly, `tests/dragonfly_routing.rs`).
    /// A minimal path has at most three switch-to-switch hops, so its lanes
    /// still rise hop by hop below the top data lane (deadlock freedom).
    pub ugal_lanes: bool,
    /// Ideal completion time per task (transfers), from the unfaulted topology.
    pub ideal: Vec<SimTime>,
    /// Queue pairs and their messages (the transport's, [`super::nic`]).
    pub qps: QueuePairs,
    /// [`Routing::Flowlet`] state; empty under other routings.
    pub flowlets: Flowlets,
    pub window_pkts: u32,
    /// Receiver accepts reordering (adaptive routing / spraying).
    pub ooo: bool,
    pub runner: DagRunner,
    pub ready: Vec<TaskId>,
    pub batch: Vec<TaskId>,
    pub done_at: Vec<SimTime>,
    pub last_done: u64,
    /// Fabric and packet-level counters.
    pub counters: Counters,
    pub sampler: Sampler,
    pub events: u64,
    /// When a packet last started transmission anywhere, ps (deadlock watchdog).
    pub last_tx: u64,
    /// `last_tx + deadlock_timeout`: with packets alive and no transmission
    /// since, the run is deadlocked (one comparison per event).
    pub watchdog_at: u64,
    /// Highest lane data may be raised to (ACKs keep the top lane).
    pub max_data_vl: u8,
    /// Per port, under lane escalation without traffic classes: the data lane
    /// (`0..=max_data_vl`) the port's round robin serves first next time.
    /// Escalation's lanes are hop stages that break deadlock cycles (Dally &
    /// Seitz 1987), not priorities; strict highest-lane-first service starved
    /// packets early on their path (measured, Kim's worst case on a g9 a4 p2
    /// dragonfly under minimal routing: the hosts of the router that holds the
    /// group's direct global link delivered nothing while the other routers'
    /// packets, one lane up, held that link). Empty otherwise.
    pub lane_rr: Vec<u8>,
    /// The data lanes `0..=max_data_vl` as a bit mask when [`Sim::lane_rr`]
    /// is in use, else 0 (the strict order alone).
    pub lane_rr_mask: u8,
    /// Ports serve their lanes in strict highest-lane-first order: neither
    /// traffic classes ([`Sim::sched`]) nor lane escalation's round robin
    /// ([`Sim::lane_rr`]).
    pub strict_lanes: bool,
    /// Traffic classes: lanes of data, ACKs and CNPs, the lanes' scheduling,
    /// admission and ECN ([`super::classes`]).
    pub sched: ClassSched,
    /// HPCC in-band telemetry: the base RTT T every egress port normalises
    /// its queue by and averages its send rate over, ps; 0 when the run's law
    /// is not HPCC (no port keeps an estimate, no packet is stamped).
    pub int_t: u64,
    /// Progress observer, set after `new` by the entry point ([`super::run_observed`]).
    pub progress: Option<ProgressHook>,
    /// Event count of the next progress call: `u64::MAX` without an observer,
    /// so the hot loop pays one never-taken comparison per event.
    pub next_progress: u64,
    /// Wire bytes per link per time bucket, when the entry point asks for the
    /// link timeline ([`super::run_observed`]); `None` costs one never-taken
    /// branch per transmission.
    pub timeline: Option<Box<Timeline>>,
    /// Timeline rows kept: the busiest links by busy time (0 = all).
    pub timeline_links: usize,
    /// [`super::PERTURB_ORDERS`] was set when the run was built.
    perturb: bool,
}

impl<'a> Sim<'a> {
    pub fn new(dag: &'a Dag, topo: &Topology, cfg: &'a PacketConfig) -> Sim<'a> {
        let vls = cfg.vls as usize;
        let nl = topo.links.len();
        let block = cfg.credit_block_bytes as u64;
        let mut gpu_of_node = vec![NONE; topo.nodes.len()];
        for (i, n) in topo.nodes.iter().enumerate() {
            if let NodeKind::Gpu { gpu } = n.kind {
                gpu_of_node[i] = gpu.0;
            }
        }
        let ports: IdVec<PortId, Port> = topo
            .links
            .iter()
            .map(|l| {
                let net = l.kind == LinkKind::Network;
                // A GPU's memory absorbs at line rate: a link into a GPU never
                // waits for credits, so it keeps none (and returns none).
                let into_gpu = gpu_of_node[l.to.0 as usize] != NONE;
                // (a network link into a GPU on a PFC fabric is tagged PFC:
                // nothing there ever pauses it, a GPU sends no PAUSE)
                let law = match cfg.flow_control {
                    FlowControl::Pfc { .. } if net => LinkLaw::Pfc,
                    _ if into_gpu => LinkLaw::Lossy,
                    FlowControl::Credit => LinkLaw::Credit,
                    _ if !net => LinkLaw::Credit,
                    _ => LinkLaw::Lossy,
                };
                let mut p = Port::new(l, topo.nodes[l.to.0 as usize].latency, law);
                // Switches mark; a NIC's own uplink queue (fed faster over
                // PCIe than it drains) is the host's, not congestion.
                // InfiniBand CC's FECN marking uses the same flag.
                p.ecn = net
                    && (cfg.ecn.is_some() || matches!(cfg.cc, CongestionControl::Ib(_)))
                    && matches!(topo.nodes[l.from.0 as usize].kind, NodeKind::Switch { .. });
                p
            })
            .collect();
        let credit_cap: Vec<i64> = topo
            .links
            .iter()
            .map(|l| {
                let buf = if l.kind == LinkKind::Network {
                    cfg.port_buffer_bytes
                } else {
                    cfg.host_buffer_bytes
                };
                (buf / block) as i64
            })
            .collect();
        let n_tasks = dag.len();
        let mut s = Sim {
            dag,
            cfg,
            topo: topo.clone(),
            now: 0,
            q: Queues::default(),
            rng: (0..topo.nodes.len() as u64)
                .map(|n| crate::topology::mix64(cfg.seed ^ crate::topology::mix64(n)))
                .collect(),
            pkts: Slab::default(),
            ports: Ports::new(ports, vls),
            vls,
            credits: Credits::new(credit_cap, vls, cfg.credit_block_bytes),
            pfc: PfcState::new(nl * vls, topo.nodes.len()),
            shared: SharedBuffers::new(topo.nodes.len()),
            gpu_of_node,
            routes: RouteCache::default(),
            cands: Vec::with_capacity(64),
            tmp_links: Vec::with_capacity(64),
            walk: Vec::with_capacity(64),
            via: Vec::new(),
            df_non_minimal: topo.dragonfly_routing().non_minimal(),
            cr_port: cr_ports(topo, cfg),
            vc_held: if cr_ports(topo, cfg).is_empty() {
                Vec::new()
            } else {
                vec![[0; 2]; topo.links.len()]
            },
            vc_cls: Vec::new(),
            ugal_lanes: topo.dragonfly_routing() == crate::topology::DragonflyRouting::Ugal
                && cfg.vl_escalation
                && cfg.classes.is_none(),
            ideal: ideal_times(dag, topo, cfg),
            qps: QueuePairs::default(),
            flowlets: Flowlets::default(),
            // per-packet Valiant detours and UGAL choices reorder a flow
            ooo: cfg.routing != Routing::Ecmp || topo.dragonfly_routing().non_minimal(),
            // selective repeat's bitmaps need a bounded window as well
            window_pkts: window_pkts(
                cfg,
                cfg.routing != Routing::Ecmp
                    || topo.dragonfly_routing().non_minimal()
                    || matches!(
                        cfg.loss_recovery,
                        super::LossRecovery::SelectiveRepeat | super::LossRecovery::Tcp
                    ),
            ),
            runner: DagRunner::new(dag),
            ready: Vec::new(),
            batch: Vec::new(),
            done_at: vec![SimTime::ZERO; n_tasks],
            last_done: 0,
            counters: Counters::for_law(&cfg.cc),
            sampler: Sampler::new(nl, cfg.sample_interval.0, cfg.series_max_samples),
            events: 0,
            last_tx: 0,
            watchdog_at: cfg.deadlock_timeout.0,
            max_data_vl: cfg.vls.saturating_sub(2),
            lane_rr: if cfg.vl_escalation && cfg.classes.is_none() {
                vec![0; nl]
            } else {
                Vec::new()
            },
            lane_rr_mask: if cfg.vl_escalation && cfg.classes.is_none() {
                ((2u16 << cfg.vls.saturating_sub(2)) - 1) as u8
            } else {
                0
            },
            strict_lanes: cfg.classes.is_none() && !cfg.vl_escalation,
            sched: ClassSched::new(cfg, nl),
            progress: None,
            next_progress: u64::MAX,
            int_t: 0,
            timeline: None,
            timeline_links: 0,
            perturb: super::PERTURB_ORDERS.load(std::sync::atomic::Ordering::Relaxed),
        };
        for (p, l) in s.ports.iter_mut().zip(&topo.links) {
            let sw = |n: crate::topology::NodeId| {
                matches!(topo.nodes[n.0 as usize].kind, NodeKind::Switch { .. })
            };
            p.sw2sw = sw(l.from) && sw(l.to);
        }
        s.routes.rebuild(&s.topo);
        s.update_cut_through();
        if let crate::mechanism::CongestionControl::Hpcc(p) = cfg.cc {
            // HPCC's T is one constant of the network (the HPCC simulator's
            // GLOBAL_T: its largest base RTT); from GPU 0 to every GPU is
            // the longest path of the symmetric fabrics
            s.int_t = p
                .base_rtt
                .map_or_else(
                    || {
                        (0..s.topo.num_gpus())
                            .map(|g| s.base_rtt(0, g))
                            .max()
                            .unwrap_or(0)
                    },
                    |t| t.0,
                )
                .max(1);
        }
        if cfg.window_bdp {
            s.window_pkts = bdp_window_pkts(&s.topo, cfg);
        }
        s
    }

    /// Executes the DAG until every task is done and every packet has drained.
    pub fn run(&mut self) -> Result<(), PacketError> {
        if self.q.parts.is_some() {
            return self.run_windowed();
        }
        self.start()?;
        let limit = self.cfg.time_limit.0;
        while let Some((t, ev)) = self.q.main.pop() {
            debug_assert!(t >= self.now, "time went backwards");
            if skippable(ev) && self.runner.finished() && self.pkts.live() == 0 {
                // The work is done and every packet drained: a fault, a
                // retransmission timer, a congestion-control timer or a pacing
                // wake-up changes nothing. It neither advances the clock nor
                // hits the time limit, so `time_limit` need not exceed `rto`.
                // Nor do PFC's watchdog, cycle-check and restore timers.
                continue;
            }
            if t > limit {
                return Err(PacketError::TimeLimit {
                    at: self.cfg.time_limit,
                    done: self.runner.completed(),
                    total: self.dag.len(),
                });
            }
            if t > self.watchdog_at && self.pkts.live() > 0 {
                return Err(self.deadlock(t));
            }
            if let Some(next) = self.q.main.peek_hint() {
                self.prefetch_for(next);
            }
            self.handle(t, ev)?;
        }
        if !self.runner.finished() {
            return Err(PacketError::Stalled {
                at: SimTime(self.now),
                done: self.runner.completed(),
                total: self.dag.len(),
            });
        }
        Ok(())
    }

    /// The run's first pushes (link events, the first sample) and the
    /// tasks ready at time 0.
    fn start(&mut self) -> Result<(), PacketError> {
        let mut first: Vec<(u64, Event)> = (self.cfg.link_events.iter().enumerate())
            .map(|(i, e)| (e.at.0, Event::Link { index: i as u32 }))
            .collect();
        if self.cfg.sample_interval.0 > 0 {
            first.push((0, Event::Sample));
        }
        if self.perturb {
            first.reverse();
            self.pkts.scramble(4096);
        }
        for (t, e) in first {
            self.q.push(t, e);
        }
        let mut ready = std::mem::take(&mut self.ready);
        self.runner.start(&mut ready);
        self.ready = ready;
        self.start_ready()
    }

    /// The partitioned run's queues ([`Sim::run_windowed`] only).
    fn parts(&mut self) -> &mut Parts {
        self.q
            .parts
            .as_deref_mut()
            .expect("a partitioned run has its queues")
    }

    /// [`Sim::run`] in P partitions on this thread, by conservative windows
    /// ([`super::window`]): the same events in the same order per partition,
    /// so the same results as the one-queue loop.
    fn run_windowed(&mut self) -> Result<(), PacketError> {
        self.start()?;
        let limit = self.cfg.time_limit.0;
        let n = self.parts().n;
        // the latest event handled: the one-queue loop's clock at its end
        let mut last = 0u64;
        loop {
            let p = self.parts();
            p.barrier();
            let Some(((t, tie, enc), who)) = p.first() else {
                break;
            };
            let global = p.qs[n].peek().map_or(u64::MAX, |h| h.0);
            let end = t
                .saturating_add(p.lookahead)
                .min(global)
                .min(limit.saturating_add(1))
                .min(self.watchdog_at.saturating_add(1));
            if end <= t || (n > 1 && skippable(Event::decode(enc))) {
                // alone, as the one-queue loop: nothing else is due before it
                self.now = last;
                let p = self.parts();
                p.steps += 1;
                p.cur = who;
                p.now = t;
                p.tag = (t, tie, enc);
                let (_, ev) = p.qs[who].pop().expect("the first event is pending");
                if skippable(ev) && self.runner.finished() && self.pkts.live() == 0 {
                    continue;
                }
                if t > limit {
                    return Err(PacketError::TimeLimit {
                        at: self.cfg.time_limit,
                        done: self.runner.completed(),
                        total: self.dag.len(),
                    });
                }
                if t > self.watchdog_at && self.pkts.live() > 0 {
                    return Err(self.deadlock(t));
                }
                last = t;
                self.handle(t, ev)?;
                continue;
            }
            let p = self.parts();
            p.windows += 1;
            p.stepping = false;
            p.bound = t.saturating_add(p.lookahead);
            p.end = end;
            // the latest transmission over the partitions (each sets
            // `last_tx` to its own, in its time order)
            let tx_before = self.last_tx;
            let mut tx_max = tx_before;
            if n == 1 {
                // one partition: its events in one-queue order, no tags
                // (queue pairs get their ids at creation)
                self.parts().cur = 0;
                loop {
                    let p = self.parts();
                    let Some((t, ev)) = p.qs[0].pop_before(end) else {
                        break;
                    };
                    p.now = t;
                    if skippable(ev) && self.runner.finished() && self.pkts.live() == 0 {
                        continue;
                    }
                    last = t;
                    self.handle(t, ev)?;
                }
            }
            for part in (0..n).filter(|_| n > 1) {
                tx_max = tx_max.max(self.last_tx);
                self.last_tx = tx_before;
                self.parts().stop = u64::MAX;
                loop {
                    let p = self.parts();
                    let Some((t, tie, enc)) = p.qs[part].peek() else {
                        break;
                    };
                    if t >= end.min(p.stop) || (n > 1 && skippable(Event::decode(enc))) {
                        break;
                    }
                    p.cur = part;
                    p.now = t;
                    p.tag = (t, tie, enc);
                    let (_, ev) = p.qs[part].pop().expect("peeked");
                    if skippable(ev) && self.runner.finished() && self.pkts.live() == 0 {
                        // (one partition: the one-queue order)
                        continue;
                    }
                    last = last.max(t);
                    self.handle(t, ev)?;
                }
            }
            tx_max = tx_max.max(self.last_tx);
            if tx_max != self.last_tx {
                self.last_tx = tx_max;
                self.watchdog_at = tx_max.saturating_add(self.cfg.deadlock_timeout.0);
            }
            self.parts().stepping = true;
        }
        self.now = last;
        if !self.runner.finished() {
            return Err(PacketError::Stalled {
                at: SimTime(self.now),
                done: self.runner.completed(),
                total: self.dag.len(),
            });
        }
        Ok(())
    }

    /// Handles event `ev` at `t` and starts what it made ready (the body of
    /// the windowed loop and the one-queue loop).
    #[inline(always)]
    fn handle(&mut self, t: u64, ev: Event) -> Result<(), PacketError> {
        self.now = t;
        self.events += 1;
        if self.events >= self.next_progress {
            self.tick_progress();
        }
        match ev {
            Event::TxDone { port } => self.on_tx_done(port),
            Event::Arrive { pkt, link } => self.on_arrive(pkt, link),
            Event::Credit { link, .. } => self.on_credit(link),
            Event::QpWake { qp } => self.on_qp_wake(qp),
            Event::Rto { qp } => self.on_rto(qp),
            Event::TaskDone { task, .. } => self.task_done(task),
            Event::Link { index } => self.on_link_event(index as usize),
            Event::Sample => self.on_sample(),
            Event::CcTimer { qp } => self.on_cc_timer(qp),
            Event::DelAck { qp } => self.on_delayed_ack(qp),
            Event::Pfc { link, vl, kind } => self.on_pfc(link, vl, kind),
        }
        if !self.ready.is_empty() {
            self.start_ready()?;
        }
        Ok(())
    }

    /// The deadlock found when nothing was transmitted for the deadlock
    /// timeout before `t` with packets alive: PFC's or credits'.
    #[cold]
    fn deadlock(&self, t: u64) -> PacketError {
        // the ports' laws, not the configuration, say whether a
        // pause can exist (one rule: the law a port was given at
        // build); this runs once, when the run stalls
        if self.ports.iter().any(|p| p.fc.can_pause()) && self.pfc.any_paused(self.now) {
            return PacketError::PfcDeadlock {
                at: SimTime(t),
                since: SimTime(self.last_tx),
                cycle: self.pfc_cycle(),
                // `run_detailed` fills these from `finish()`, which
                // consumes the simulation.
                fabric: Box::default(),
                links: Vec::new(),
                events: self.events,
            };
        }
        PacketError::Deadlock {
            at: SimTime(t),
            since: SimTime(self.last_tx),
            packets: self.pkts.live() as u64,
            cycle: self.wait_cycle(|p| self.ports[PortId(p as u32)].stall_since != NEVER),
            fabric: Box::default(),
            links: Vec::new(),
            events: self.events,
        }
    }

    /// Calls the progress observer; out of line so the main loop stays small.
    #[cold]
    #[inline(never)]
    fn tick_progress(&mut self) {
        self.next_progress = self.events.saturating_add(PROGRESS_EVERY);
        if let Some(p) = &self.progress {
            p(ProgressTick {
                events: self.events,
                sim_time: SimTime(self.now),
            });
        }
    }

    /// Prefetches what handling `ev` will load first (see [`prefetch`]).
    #[inline]
    fn prefetch_for(&self, ev: Event) {
        match ev {
            Event::Arrive { pkt, link } => {
                prefetch(&self.pkts[pkt]);
                prefetch(&self.ports[link]);
            }
            Event::TxDone { port } | Event::Credit { link: port, .. } => {
                self.ports.prefetch(port);
            }
            _ => {}
        }
    }

    /// Starts every ready task (posting transfers, scheduling compute).
    ///
    /// Called after every event, so the tasks an event released start right
    /// after it, in task order (not the order its handler's completions came
    /// in), then those that the started markers and local copies release:
    /// the start order is a function of the event order, which does not
    /// depend on how the fabric would be partitioned (see
    /// [`super::engine`]).
    ///
    /// A parallel engine must still deal with the DAG edges that cross nodes
    /// **with zero delay**: a dependency is met on one node (a transfer's
    /// receiver at its last packet, its sender when the last byte leaves for
    /// `Dep::Sent`, a compute task's GPU at `TaskDone`) and the task it
    /// releases starts on another at the same instant (a transfer posted at
    /// its source GPU, a compute at its GPU). Markers (gates, barriers,
    /// collective phase boundaries) have no node at all: every edge through
    /// one may cross. In this order such a start happens between two events
    /// of the releasing node's instant, with no lookahead, so a partition
    /// boundary between the two nodes has to be refused, or the two nodes
    /// kept in one partition, or the release turned into a message with a
    /// delay ≥ the lookahead in the single-threaded run too (issue 16, M2).
    fn start_ready(&mut self) -> Result<(), PacketError> {
        while !self.ready.is_empty() {
            std::mem::swap(&mut self.ready, &mut self.batch);
            let mut batch = std::mem::take(&mut self.batch);
            // in task order, not in the order the handler's completions
            // released them
            if self.perturb {
                batch.reverse();
            }
            batch.sort_unstable();
            for &t in &batch {
                match self.dag.kind(t.0 as usize) {
                    TaskKind::Transfer { src, dst, bytes } => {
                        if src == dst {
                            self.counters.local_transfer(bytes);
                            self.task_done(t.0);
                        } else {
                            self.post(t.0, src.0, dst.0, bytes)?;
                        }
                    }
                    TaskKind::NetTransfer { .. } => return Err(net_transfer_unsupported()),
                    TaskKind::Compute { gpu, duration } => {
                        let node = self.topo.gpus[gpu.0 as usize].node.0;
                        let done = Event::TaskDone { task: t.0, node };
                        self.q.push(self.now + duration.0, done);
                    }
                    TaskKind::Marker => self.task_done(t.0),
                }
            }
            batch.clear();
            self.batch = batch;
        }
        Ok(())
    }

    /// Task `t` completed now.
    pub fn task_done(&mut self, t: u32) {
        self.done_at[t as usize] = SimTime(self.now);
        self.last_done = self.last_done.max(self.now);
        self.runner
            .done(TaskId(t), SimTime(self.now), &mut self.ready);
    }

    /// Task `t`'s last byte left its source now.
    pub fn task_sent(&mut self, t: u32) {
        self.runner
            .sent(TaskId(t), SimTime(self.now), &mut self.ready);
    }

    /// The next 64 random bits of node `node`'s stream ([`Sim::rng`]).
    #[inline]
    fn next_u64(&mut self, node: u32) -> u64 {
        let s = &mut self.rng[node as usize];
        // SplitMix64: `mix64` adds the golden gamma, then finalizes
        let x = *s;
        *s = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::topology::mix64(x)
    }
    /// A uniform integer in `[0, n)` drawn by node `node` (the node whose
    /// handler draws: a port's sender, a queue pair's source host).
    #[inline]
    pub fn rand_below(&mut self, node: u32, n: u64) -> u64 {
        ((self.next_u64(node) as u128 * n as u128) >> 64) as u64
    }
    /// A uniform float in `[0, 1)` drawn by node `node`.
    #[inline]
    pub fn rand_f64(&mut self, node: u32) -> f64 {
        (self.next_u64(node) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn on_sample(&mut self) {
        self.sampler
            .record(self.now, self.ports.as_slice(), &self.pfc, self.vls);
        if !self.runner.finished() {
            self.q
                .push(self.now + self.sampler.interval(), Event::Sample);
        }
    }

    /// Builds the results (after [`Sim::run`]).
    pub fn finish(mut self) -> (RunOutput, PacketStats) {
        let makespan = self.last_done;
        let end = self.now.max(makespan);
        let (mut fabric, mut stats) = std::mem::take(&mut self.counters).into_parts();
        fabric.lanes = crate::backend::LaneCounters {
            payload_delivered: stats.lane_payload_accepted,
            data_drops: stats.lane_data_dropped,
            pause_frames: stats.lane_pause_frames,
        };
        fabric.trimmed = self.cfg.trimming.then_some(crate::backend::TrimCounters {
            packets: stats.data_trimmed,
            payload_bytes: stats.payload_bytes_trimmed,
        });
        let mut links = Vec::new();
        let mut max_q = 0;
        let mut stall = 0;
        // Pauses still running (a stalled or cut-short run) count up to the end.
        let (ports, vls) = (&mut self.ports, self.vls);
        self.pfc.end_pauses(end, |qi, d| {
            let p = &mut ports[qi.port(vls)];
            p.paused_ps += d;
            p.stall_ps += d;
            stats.pfc_paused_ps += d;
        });
        for (i, p) in self.ports.iter_mut().enumerate() {
            p.account_queue(end);
            stats.pfc_pause_frames_received += p.pause_rx;
            max_q = max_q.max(p.max_q);
            stall += p.stall_ps - p.paused_ps;
            if p.bytes > 0 || p.drops > 0 {
                links.push(LinkCounters {
                    link: i as u32,
                    bytes: p.bytes,
                    utilization: if makespan > 0 {
                        (p.busy_ps as f64 / makespan as f64).min(1.0)
                    } else {
                        0.0
                    },
                    drops: p.drops,
                    max_queue_bytes: p.max_q,
                    avg_queue_bytes: if end > 0 {
                        p.q_area as f64 / end as f64
                    } else {
                        0.0
                    },
                    stall_ps: p.stall_ps,
                    paused_ps: p.paused_ps,
                    pause_frames: p.pause_tx,
                    ecn_marks: p.ecn_marks,
                });
            }
        }
        fabric.max_queue_bytes = max_q;
        // Credit stalls only; PFC paused time is in the links' `stall_ps` and
        // `PacketStats::pfc_paused_ps`.
        fabric.credit_stall_ps = stall;
        stats.pfc_pause_frames = fabric.pfc_pause_frames;
        stats.pfc_watchdog_lanes = std::mem::take(&mut self.pfc.watchdog);
        stats.pfc_deadlock_cycles = std::mem::take(&mut self.pfc.cycles);
        stats.pfc_frame_trace = std::mem::take(&mut self.pfc.trace);
        if self.q.parts.is_some() {
            // partitions record a window's frames one partition after the
            // other: in time order again (frames that start at one instant
            // on different links may list in another order than one queue's)
            stats.pfc_frame_trace.sort_by_key(|f| f.tx_start_ps);
        }
        fabric.pfc = crate::backend::PfcFindings {
            watchdog_triggers: stats.pfc_watchdog_triggers,
            watchdog_packets_dropped: stats
                .pfc_watchdog_lanes
                .iter()
                .map(|w| w.packets_dropped)
                .sum(),
            watchdog_wire_bytes_dropped: stats
                .pfc_watchdog_lanes
                .iter()
                .map(|w| w.wire_bytes_dropped)
                .sum(),
            headroom_packets_dropped: stats.drops_headroom,
            watchdog_lanes: stats.pfc_watchdog_lanes.clone(),
            deadlock_cycles: stats.pfc_deadlock_cycles.clone(),
        };
        stats.ecn_marks = fabric.ecn_marks;
        stats.cnps_sent = fabric.cnps;
        // The totals are the queue pairs' sums (counted once, per pair).
        stats.retransmitted_packets = self.qps.iter().map(|q| q.retransmitted).sum();
        stats.timeouts = self.qps.iter().map(|q| q.timeouts).sum();
        fabric.retransmitted_packets = stats.retransmitted_packets;
        fabric.timeouts = stats.timeouts;
        fabric.drops = stats.drops_total();
        fabric.drops_corrupted = stats.drops_corrupt;
        fabric.bytes_dropped = stats.payload_bytes_dropped;
        stats.packets_alive_at_end = self.pkts.live() as u64;
        stats.slab_high_water = self.pkts.capacity_used() as u64;
        stats.event_queue_high_water = self.q.high_water() as u64;
        if let Some(p) = &self.q.parts {
            stats.partition_windows = p.windows;
            stats.partition_steps = p.steps;
            stats.partition_crossings = p.crossings;
            stats.partition_violations = p.violations;
        }
        let credit_ports = self
            .ports
            .iter_ids()
            .filter(|(_, p)| p.fc == LinkLaw::Credit);
        stats.credit_leaks = self.credits.leaks(credit_ports.map(|(id, _)| id), self.vls);
        let mut fct = Vec::new();
        let mut ideal = Vec::new();
        for (i, t) in self.dag.tasks().enumerate() {
            // a run stopped early (a deadlock) reports the transfers it finished
            if t.kind.is_transfer() && self.runner.is_done(crate::dag::TaskId(i as u32)) {
                fct.push(self.done_at[i] - self.runner.started_at(crate::dag::TaskId(i as u32)));
                ideal.push(self.ideal[i]);
            }
        }
        let (task_start, task_done) = self.runner.take_spans();
        let series = self.sampler.series(
            self.ports.as_slice(),
            &self.topo,
            self.cfg.series_ports as usize,
        );
        let link_timeline = self.timeline.take().map(|tl| {
            let bytes: Vec<u64> = self.ports.iter().map(|p| p.bytes).collect();
            let cap: Vec<f64> = self
                .ports
                .iter()
                .map(|p| p.rate.bps() as f64 / 8e12)
                .collect();
            tl.finish(&bytes, &cap, self.timeline_links)
        });
        let out = RunOutput {
            makespan: SimTime(makespan),
            op_timing: self.runner.op_timing.clone(),
            transfer_fct: fct,
            transfer_ideal: ideal,
            fabric,
            links,
            queue_pairs: {
                let mut pairs: Vec<QpCounters> = self
                    .qps
                    .iter()
                    .map(|q| QpCounters {
                        src: q.src,
                        dst: q.dst,
                        messages: q.msgs.len() as u64,
                        bytes: q.bytes_posted,
                        retransmitted_packets: q.retransmitted,
                        timeouts: q.timeouts,
                    })
                    .collect();
                if let Some(p) = &self.q.parts {
                    // in the one-queue run's creation order
                    let mut by_gid: Vec<(u32, QpCounters)> =
                        p.gid.iter().copied().zip(pairs).collect();
                    by_gid.sort_unstable_by_key(|&(g, _)| g);
                    pairs = by_gid.into_iter().map(|(_, q)| q).collect();
                }
                pairs
            },
            series,
            events: self.events,
            link_timeline,
            task_start,
            task_done,
        };
        (out, stats)
    }
}

/// Time for `wire` bytes from GPU `from` to GPU `to` on the idle fabric, ps:
/// propagation and forwarding along the route of ECMP choice 0 (left in
/// `path`) and store-and-forward serialization at every hop; `None` if
/// unreachable.
pub(super) fn idle_one_way(
    topo: &Topology,
    from: u32,
    to: u32,
    wire: u64,
    path: &mut Vec<LinkId>,
) -> Option<u64> {
    if !topo.route(GpuId(from), GpuId(to), 0, path) {
        return None;
    }
    let tx: u64 = path
        .iter()
        .map(|l| topo.links[l.0 as usize].rate.tx_time(wire).0)
        .sum();
    Some(topo.path_latency(path).0 + tx)
}

/// IRN's BDP-FC (Mittal et al., SIGCOMM 2018, §3.2), the window of
/// [`PacketConfig::window_bdp`], in packets: one bandwidth-delay product of
/// the network's longest path, the line rate of that path's slowest link
/// times its idle round trip (a full data packet out, its ACK back:
/// propagation, forwarding and store-and-forward serialization at every
/// hop), in packets of `mtu + header_bytes` on the wire, rounded up. The
/// longest path is taken from GPU 0 to every GPU (ECMP choice 0), the
/// longest of the symmetric fabrics, as HPCC's T is. At least one packet.
pub fn bdp_window_pkts(topo: &Topology, cfg: &PacketConfig) -> u32 {
    let mut path = Vec::new();
    let one_way = |from, to, wire, path: &mut Vec<LinkId>| idle_one_way(topo, from, to, wire, path);
    let data = (cfg.mtu + cfg.header_bytes) as u64;
    let (mut rtt, mut bytes) = (0u64, 0u128);
    for g in 1..topo.num_gpus() {
        let Some(back) = one_way(g, 0, cfg.ack_bytes as u64, &mut path) else {
            continue;
        };
        let Some(out) = one_way(0, g, data, &mut path) else {
            continue;
        };
        if out + back <= rtt {
            continue;
        }
        rtt = out + back;
        // (`path` holds the data path now)
        let rate = path
            .iter()
            .map(|l| topo.links[l.0 as usize].rate.0)
            .min()
            .unwrap_or(0);
        bytes = rate as u128 * rtt as u128 / (8 * crate::units::PS_PER_S as u128);
    }
    bytes.div_ceil(data as u128).clamp(1, u32::MAX as u128 / 4) as u32
}

/// The per-queue-pair window in packets: the configured bytes, or for 0 (no
/// limit) 2^30 packets for RDMA under in-order routing (`reorders` false: ECMP,
/// and on a dragonfly no per-packet Valiant or UGAL choice) with go-back-N or
/// go-back-0, and
/// [`defaults::WINDOW`](crate::mechanism::defaults::WINDOW) under reordering
/// ones and with selective repeat (the out-of-order bitmaps are one window)
/// and on the TCP path (its receive window).
fn window_pkts(cfg: &PacketConfig, reorders: bool) -> u32 {
    let mtu = cfg.mtu as u64;
    let bytes = match cfg.window_bytes {
        0 if !reorders && cfg.transport == super::Transport::Rdma => return 1 << 30,
        0 => crate::mechanism::defaults::WINDOW,
        b => b,
    };
    bytes.div_ceil(mtu).clamp(1, u32::MAX as u64 / 4) as u32
}

/// Ideal completion time of every task (transfers between two GPUs; zero for
/// the rest): what the message takes alone on an idle path, `α + W / B`, with
/// α the path's latency ([`Topology::path_latency`]), W the message's *wire*
/// bytes (every packet pays its header, [`PacketConfig::message_wire_bytes`])
/// and B the slowest **line** rate on the path, the rate ports serialize wire
/// bytes at. The topology's payload rate ([`Topology::effective_rate`]) already
/// discounts headers, so W over it would count them twice and bias slowdowns
/// below 1. Store-and-forward still adds one packet time per extra hop on top
/// (see the module doc), so an idle flow's slowdown is 1 plus at most
/// (hops − 1) · (MTU + header) / W.
fn ideal_times(dag: &Dag, topo: &Topology, cfg: &PacketConfig) -> Vec<SimTime> {
    let mut cost: HashMap<(u32, u32), Option<(SimTime, crate::units::Rate)>> = HashMap::new();
    let mut path = Vec::with_capacity(16);
    dag.tasks()
        .map(|t| match t.kind {
            TaskKind::Transfer { src, dst, bytes } if src != dst => {
                let c = *cost.entry((src.0, dst.0)).or_insert_with(|| {
                    topo.route(src, dst, 0, &mut path).then(|| {
                        let line = path
                            .iter()
                            .map(|&l| topo.links[l.0 as usize].rate)
                            .min()
                            .unwrap_or(crate::units::Rate(u64::MAX));
                        (topo.path_latency(&path), line)
                    })
                });
                match c {
                    Some((lat, rate)) => lat + rate.tx_time(cfg.message_wire_bytes(bytes)),
                    None => SimTime::ZERO,
                }
            }
            _ => SimTime::ZERO,
        })
        .collect()
}

/// The error for a [`TaskKind::NetTransfer`] (a switch as an endpoint): the packet
/// level has no in-network reduction.
pub(crate) fn net_transfer_unsupported() -> PacketError {
    PacketError::Config {
        field: "workload.algorithm",
        message: "SHARP (in-network reduction) is modeled at the analytical and flow fidelities; the packet level has no switch endpoints — use fidelity = \"flow\" or another algorithm".into(),
    }
}

/// A port's part in UGAL-L_CR (Kim et al., ISCA 2008, §4.2.2: a router delays
/// the credits of packets leaving on a congested global channel, so its group's
/// routers, which see only their local channel to it, sense that congestion in
/// their own queues).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrPort {
    /// Neither: credits return as usual.
    Other,
    /// A link between two routers of one group: its credits may come back late.
    Local,
    /// A link between two groups: its backlog sets how late.
    Global,
}

/// [`Sim::cr_port`]: per link under dragonfly UGAL-L with credit flow
/// control, else empty.
fn cr_ports(topo: &Topology, cfg: &PacketConfig) -> Vec<CrPort> {
    let Some(df) = topo.dragonfly() else {
        return Vec::new();
    };
    if topo.dragonfly_routing() != DragonflyRouting::Ugal || cfg.flow_control != FlowControl::Credit
    {
        return Vec::new();
    }
    topo.links
        .iter()
        .map(|l| match (df.group_of(l.from), df.group_of(l.to)) {
            (Some(a), Some(b)) if a == b => CrPort::Local,
            (Some(_), Some(_)) => CrPort::Global,
            _ => CrPort::Other,
        })
        .collect()
}
