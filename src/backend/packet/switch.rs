//! Ports and forwarding points (switches, NVSwitch, NICs): routing, egress
//! queues per virtual lane, transmission, arrival, link faults.
//!
//! Every directed link is the egress port of its sending node. A port serves its
//! lanes with strict priority, highest lane first, skipping a lane whose head
//! packet lacks credits; under lane escalation the data lanes (hop stages)
//! round robin below the control lanes ([`Sim::lane_rr`]); with traffic classes, by the classes' priority levels
//! and DWRR weights instead ([`super::classes`]). Source GPUs' ports additionally pull data packets from
//! their queue pairs when no queued (control) packet can go (see [`super::nic`]).

use std::collections::VecDeque;

use super::cc::{int_stamp, int_update, IntPort};
use super::classes::ClassSched;
use super::engine::Event;
use super::flow_control::{arrival_lane, Gate, LinkLaw};
use super::ids::{IdVec, LaneIdx, PktIdx, PortId, QpId};
use super::nic::Pull;
use super::sim::{CrPort, Sim};
use super::slab::{
    PktKind, F_CORRUPT, F_ECN, F_LOSSY_HELD, F_PFC_HELD, F_TRIMMED, F_VL_RAISED, NONE,
};
use super::stats::DropCause;
use super::{CongestionControl, EcnMarkAt, LinkEventKind, Routing};
use crate::topology::{mix64, DragonflyRouting, GpuId, Link, LinkId, NodeId, NodeKind, Topology};
use crate::units::{Rate, SimTime};

/// Sentinel time: "not set".
pub const NEVER: u64 = u64::MAX;

/// The sending side of one directed link, with its counters.
///
/// `repr(C, align(64))`, and every field a packet hop reads or writes lies in
/// the first two cache lines: line 0 what queueing a packet, deciding to
/// send and an arrival read and write (flags, lane bitmap, queue total and
/// its integral, `tx_end`, the receiving node), line 1 what only a
/// transmission adds (line rate, latencies, per-hop counters); the rest
/// (drop and PFC counters, the queue-pair ring, HPCC's telemetry) is
/// touched only off the common path. Measured (perf annotate, 1,024-host
/// permutation bench): before, `to` (read on every arrival), `ber` and the
/// ring's length (read on every transmission) lay in the third and fourth
/// lines of a record that was only 16-byte aligned, so a hop touched up to
/// four lines of its port. Then (callgrind, 2 MiB last-level cache, same
/// bench): with the queue integral in line 1, a packet joining the queue of
/// a busy port missed line 1 as well (`q_last`: 8% of the run's
/// last-level misses, more than line 0's own), though a busy port needs
/// nothing else there; moving it to line 0 took `enqueue`'s last-level
/// misses from 3.59 M to 1.36 M, but `sent_task`, which had to make room,
/// now costs the end of a serialization (`finish_tx`) ~1.5 M of them, for
/// a net 1% of the run: the next step is room for `sent_task` in line 0
/// (the ten flags as bits).
#[repr(C, align(64))]
pub struct Port {
    /// Serializing a packet.
    pub busy: bool,
    /// Link usable.
    pub up: bool,
    /// The flow-control law the link obeys: credits at its sender, drop-tail
    /// or PFC at its receiver (every check goes through the `fc_*` hooks of
    /// `flow_control`, which match on it).
    pub fc: LinkLaw,
    /// A switch's network port: data packets joining its queues may be ECN-marked.
    pub ecn: bool,
    /// Bit `vl` set: lane `vl` has queued packets (empty lanes are not looked at).
    pub lanes_queued: u8,
    /// A `TxDone` event is scheduled for the current serialization.
    pub txdone_pending: bool,
    /// PFC, bit `vl` set: this port's node has a PAUSE or RESUME for lane
    /// `vl` of the reverse link to send on this port (control frames go before
    /// queued data, never preempting a frame in serialization).
    pub ctrl_pending: u8,
    /// Both ends are switches (lane escalation counts these hops).
    pub sw2sw: bool,
    /// Cut-through at the receiving node: the packet is routed once its header
    /// (`header_bytes`) is in, not its last bit (see `PacketConfig::cut_through`).
    pub cut_through: bool,
    /// A queue pair has ever been put in `ring` (a source GPU's port): only
    /// then is the ring, in a cold cache line, looked at (see [`Port::has_qps`]).
    ring_used: bool,
    /// Bumped when the link goes down: packets sent in an older epoch are lost.
    pub epoch: u16,
    /// Receiving node.
    pub to: u32,
    /// Queued wire bytes over all lanes.
    pub qtotal: u64,
    /// Last time `q_area` was brought up to date.
    pub q_last: u64,
    /// ∫ queue dt, byte·ps.
    pub q_area: u128,
    /// Largest queue, bytes.
    pub max_q: u64,
    /// When the current serialization ends, ps.
    pub tx_end: u64,
    /// The task whose `Dep::Sent` completes when the current serialization ends
    /// (the last packet of a message leaving its source), or NONE.
    pub sent_task: u32,
    /// Sending node.
    pub from: u32,
    /// Picoseconds per byte when the rate divides 8·10¹² exactly (fast path), else 0.
    pub ps_per_byte: u64,
    /// Propagation latency, ps.
    pub latency: u64,
    /// Forwarding latency of the receiving node, ps (folded into the arrival time).
    pub fwd_latency: u64,
    /// Since when the port has been waiting for credits, or [`NEVER`].
    pub stall_since: u64,
    /// Wire bytes sent.
    pub bytes: u64,
    /// Serialization time, ps.
    pub busy_ps: u64,
    /// Bit-error rate.
    pub ber: f64,
    /// Line rate.
    pub rate: Rate,
    /// Packets dropped at this egress (buffer full, link down).
    pub drops: u64,
    /// Credit-stall time, ps.
    pub stall_ps: u64,
    /// Queue pairs with data to send (source GPU ports only), round-robin
    /// order. Added to only through [`Port::ring_push_back`] and
    /// [`Port::ring_push_front`], which keep `ring_used` true.
    pub ring: VecDeque<QpId>,
    /// PFC: PAUSE frames this port's sender received.
    pub pause_rx: u64,
    /// PFC: PAUSE frames the receiver of this link put on the reverse link to
    /// this port's sender (refreshes included when they went out).
    pub pause_tx: u64,
    /// PFC: time lanes of this port spent paused, summed over lanes, ps.
    pub paused_ps: u64,
    /// Data packets this egress marked Congestion Experienced (ECN).
    pub ecn_marks: u64,
    /// HPCC's in-band telemetry: this egress's utilization estimate (kept
    /// only when the run's law is HPCC, see `Sim::int_t`).
    pub int: IntPort,
    /// InfiniBand CC: eligible packets since this port last set FECN (its
    /// `Marking_Rate` count).
    pub fecn_since: u32,
}

// A hop's fields stay in the first two cache lines, and queueing, the send
// decision and an arrival in the first (see `Port`).
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Port, to) + 4 <= 64);
    assert!(offset_of!(Port, qtotal) + 8 <= 64);
    assert!(offset_of!(Port, q_last) + 8 <= 64);
    assert!(offset_of!(Port, q_area) + 16 <= 64);
    assert!(offset_of!(Port, max_q) + 8 <= 64);
    assert!(offset_of!(Port, tx_end) + 8 <= 64);
    assert!(offset_of!(Port, ber) + 8 <= 128);
    assert!(std::mem::align_of::<Port>() == 64);
};

impl Port {
    /// A port for `link`, whose receiver forwards in `fwd_latency`.
    pub fn new(link: &Link, fwd_latency: SimTime, fc: LinkLaw) -> Port {
        let mut p = Port {
            from: link.from.0,
            to: link.to.0,
            rate: link.rate,
            ps_per_byte: 0,
            latency: link.latency.0,
            fwd_latency: fwd_latency.0,
            cut_through: false,
            sw2sw: false,
            up: true,
            epoch: 0,
            fc,
            ecn: false,
            lanes_queued: 0,
            ctrl_pending: 0,
            pause_rx: 0,
            pause_tx: 0,
            paused_ps: 0,
            ecn_marks: 0,
            int: IntPort::default(),
            fecn_since: 0,
            ber: 0.0,
            busy: false,
            sent_task: NONE,
            txdone_pending: false,
            tx_end: 0,
            qtotal: 0,
            ring: VecDeque::new(),
            ring_used: false,
            stall_since: NEVER,
            bytes: 0,
            busy_ps: 0,
            drops: 0,
            max_q: 0,
            q_area: 0,
            q_last: 0,
            stall_ps: 0,
        };
        p.set_rate(link.rate);
        p
    }

    /// Changes the line rate (takes effect from the next packet).
    pub fn set_rate(&mut self, r: Rate) {
        self.rate = r;
        const BITS_PS: u64 = 8 * 1_000_000_000_000;
        self.ps_per_byte = if r.0 > 0 && BITS_PS % r.0 == 0 {
            BITS_PS / r.0
        } else {
            0
        };
    }

    /// Queue pairs wait in `ring` for this port (read from line 0 first: a
    /// switch port's ring is never used, and its length is a cold line).
    #[inline]
    pub fn has_qps(&self) -> bool {
        self.ring_used && !self.ring.is_empty()
    }

    /// Appends queue pair `qp` to the ring.
    #[inline]
    pub fn ring_push_back(&mut self, qp: QpId) {
        self.ring_used = true;
        self.ring.push_back(qp);
    }

    /// Puts queue pair `qp` at the front of the ring (next in turn).
    #[inline]
    pub fn ring_push_front(&mut self, qp: QpId) {
        self.ring_used = true;
        self.ring.push_front(qp);
    }

    /// Serialization time of `wire` bytes, ps (the division is avoided for common rates).
    #[inline]
    pub fn tx_time(&self, wire: u64) -> u64 {
        if self.ps_per_byte != 0 {
            wire * self.ps_per_byte
        } else {
            self.rate.tx_time(wire).0
        }
    }

    /// Brings the queue-depth integral up to `now` (before the queue changes).
    #[inline]
    pub fn account_queue(&mut self, now: u64) {
        if now > self.q_last {
            self.q_area += self.qtotal as u128 * (now - self.q_last) as u128;
            self.q_last = now;
        }
    }
}

/// Every port with its egress queues: the [`Port`] records (indexed by
/// [`PortId`]) and, per port and lane ([`LaneIdx`]), the FIFO of queued
/// packets and its wire bytes.
///
/// The queue, its byte count and the port's totals (`qtotal`, `max_q`, the
/// queue integral, the lane bitmap) must change together; they only change
/// through [`Ports::push`] and [`Ports::pop`], so they cannot drift apart.
///
/// A lane is an intrusive FIFO: its 16-byte [`Lane`] record holds the head
/// and tail packet and the queued bytes, and `next` (one `u32` per slab
/// slot) links a queued packet to the one behind it. Measured (perf
/// annotate, 1,024-host permutation bench): with a `VecDeque` per lane, the
/// head of a queue was three dependent cache misses (the deque's header,
/// its heap buffer, the packet), 60% of `try_send`'s samples, and `qbytes`
/// lay in a third array; now the lane record (address known from the port
/// id alone, two ports' lanes per cache line at 2 lanes) gives the head
/// packet directly. A packet is in at most one lane at a time (it is popped
/// before it is sent, dropped or freed), so one `next` per slot suffices.
pub struct Ports {
    ports: IdVec<PortId, Port>,
    lanes: IdVec<LaneIdx, Lane>,
    /// Per packet slot: the packet queued behind it in its lane; meaningful
    /// only while the packet is queued and not its lane's tail (a lane ends
    /// at its `tail`, not at a sentinel: see [`Ports::push`]). Grows with the
    /// slab's high-water mark, never per packet in steady state.
    next: Vec<PktIdx>,
    vls: usize,
}

/// One egress lane's FIFO (see [`Ports`]): 16 bytes.
#[derive(Clone, Copy, Debug)]
struct Lane {
    /// First packet, or `PktIdx(NONE)` when empty.
    head: PktIdx,
    /// Last packet (meaningless when empty).
    tail: PktIdx,
    /// Queued wire bytes.
    bytes: u64,
}

const NO_PKT: PktIdx = PktIdx(NONE);

impl Ports {
    /// `ports` (one per directed link, same number) with `vls` empty lanes each.
    pub fn new(ports: IdVec<PortId, Port>, vls: usize) -> Ports {
        let lanes = ports.len() * vls;
        Ports {
            ports,
            lanes: IdVec::from_vec(vec![
                Lane {
                    head: NO_PKT,
                    tail: NO_PKT,
                    bytes: 0,
                };
                lanes
            ]),
            next: Vec::new(),
            vls,
        }
    }

    /// Lane `vl` of port `p`.
    #[inline(always)]
    pub fn lane(&self, p: PortId, vl: u8) -> LaneIdx {
        p.lane(vl, self.vls)
    }

    /// Number of ports.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Whether there are no ports.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// The ports in id order.
    pub fn iter(&self) -> std::slice::Iter<'_, Port> {
        self.ports.iter()
    }

    /// The ports in id order, mutably (counters and settings; not the queues).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Port> {
        self.ports.iter_mut()
    }

    /// (id, port) in id order.
    pub fn iter_ids(&self) -> impl Iterator<Item = (PortId, &Port)> {
        self.ports.iter_ids()
    }

    /// The port records as a slice, position = id (sampler, series).
    pub fn as_slice(&self) -> &[Port] {
        self.ports.as_slice()
    }

    /// Wire bytes queued on lane `qi`.
    #[inline]
    pub fn queued_bytes(&self, qi: LaneIdx) -> u64 {
        self.lanes[qi].bytes
    }

    /// The packet at the head of lane `qi`, if any.
    #[inline]
    pub fn head(&self, qi: LaneIdx) -> Option<PktIdx> {
        let h = self.lanes[qi].head;
        (h != NO_PKT).then_some(h)
    }

    /// The packets queued on lane `qi`, head first.
    pub fn queued(&self, qi: LaneIdx) -> impl Iterator<Item = PktIdx> + '_ {
        let Lane { head, tail, .. } = self.lanes[qi];
        let mut cur = head;
        std::iter::from_fn(move || {
            (cur != NO_PKT).then(|| {
                let p = cur;
                cur = if p == tail {
                    NO_PKT
                } else {
                    self.next[p.idx()]
                };
                p
            })
        })
    }

    /// Asks the CPU to load what handling a transmission on port `p` reads
    /// first: its record and its lanes' heads (a hint, no effect on results).
    #[inline(always)]
    pub fn prefetch(&self, p: PortId) {
        super::slab::prefetch(&self.ports[p]);
        let first = p.lane(0, self.vls);
        if let Some(l) = self.lanes.as_slice().get(first.idx()) {
            super::slab::prefetch(l);
        }
    }

    /// Appends `pkt` (`wire` bytes) to lane `vl` of port `p` at time `now`.
    ///
    /// The new tail's own `next` is not written: a lane ends at its `tail`
    /// (`pop` empties it when it pops the tail), so the slot's link is
    /// written only when a packet joins behind it. Measured (callgrind, 2 MiB
    /// last-level cache, 1,024-host permutation bench): clearing it was 23%
    /// of the run's L1 write misses and 5% of its last-level misses, a line
    /// of the 4-byte-per-slot array (424 KiB at 106,120 packets) that
    /// nothing else read at that moment.
    #[inline]
    pub fn push(&mut self, p: PortId, vl: u8, pkt: PktIdx, wire: u64, now: u64) {
        let qi = self.lane(p, vl);
        if pkt.idx() >= self.next.len() {
            self.grow(pkt);
        }
        let lane = &mut self.lanes[qi];
        if lane.head == NO_PKT {
            lane.head = pkt;
        } else {
            let tail = lane.tail;
            self.next[tail.idx()] = pkt;
        }
        lane.tail = pkt;
        lane.bytes += wire;
        let port = &mut self.ports[p];
        port.lanes_queued |= 1 << vl;
        port.account_queue(now);
        port.qtotal += wire;
        if port.qtotal > port.max_q {
            port.max_q = port.qtotal;
        }
    }

    /// Makes room in `next` for slot `pkt` (the slab grew past its old high
    /// water): doubling, so a run reallocates O(log high-water) times.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, pkt: PktIdx) {
        let want = (pkt.idx() + 1).max(2 * self.next.len()).max(1024);
        self.next.resize(want, NO_PKT);
    }

    /// Removes the head packet (`wire` bytes, read by the caller from the
    /// packet) of lane `vl` of port `p` at time `now`.
    #[inline]
    pub fn pop(&mut self, p: PortId, vl: u8, wire: u64, now: u64) {
        let qi = self.lane(p, vl);
        let lane = &mut self.lanes[qi];
        debug_assert!(lane.head != NO_PKT, "pop from an empty lane");
        if lane.head == NO_PKT {
            return;
        }
        let empty = lane.head == lane.tail;
        lane.head = if empty {
            NO_PKT
        } else {
            self.next[lane.head.idx()]
        };
        lane.bytes -= wire;
        let port = &mut self.ports[p];
        if empty {
            port.lanes_queued &= !(1 << vl);
        }
        port.account_queue(now);
        port.qtotal -= wire;
    }
}

impl std::ops::Index<PortId> for Ports {
    type Output = Port;
    #[inline(always)]
    fn index(&self, p: PortId) -> &Port {
        &self.ports[p]
    }
}

impl std::ops::IndexMut<PortId> for Ports {
    #[inline(always)]
    fn index_mut(&mut self, p: PortId) -> &mut Port {
        &mut self.ports[p]
    }
}

/// Where one direction of a queue pair's traffic last went at one switch
/// ([`Routing::Flowlet`]).
#[derive(Clone, Copy, Debug)]
pub struct FlowletEntry {
    /// The switch, or NONE for an unused entry.
    pub node: u32,
    /// The egress link the flowlet takes there.
    pub port: PortId,
    /// When the flow's last packet was routed there, ps.
    pub last: u64,
}

impl FlowletEntry {
    /// An unused entry.
    pub const EMPTY: FlowletEntry = FlowletEntry {
        node: NONE,
        port: PortId::NONE,
        last: 0,
    };
}

/// [`Routing::Flowlet`] state: per queue pair and direction (`2·qp` data,
/// `2·qp + 1` ACKs), where the flow last went at up to [`FLOWLET_ENTRIES`]
/// switches. Empty under other routings. Read and written only by the
/// flowlet router below.
#[derive(Default)]
pub struct Flowlets {
    rows: Vec<[FlowletEntry; FLOWLET_ENTRIES]>,
}

impl Flowlets {
    /// Rows for a new queue pair (both directions).
    pub fn add_qp(&mut self) {
        self.rows
            .extend([[FlowletEntry::EMPTY; FLOWLET_ENTRIES]; 2]);
    }
}

/// Flowlet entries kept per queue pair and direction: one per switch on the
/// path that has a choice (two on a 3-tier fat-tree's way up); on longer
/// paths the stalest entry is reused, which only starts flowlets early.
pub const FLOWLET_ENTRIES: usize = 4;

/// Equal-cost next hops of every switch towards every edge switch, cached (a
/// span per pair into deduplicated lists) so routing a packet is a slice
/// lookup instead of a scan of the switch's links; rebuilt when a link
/// changes state.
#[derive(Default)]
pub struct RouteCache {
    /// Dense switch index per node (NONE for other nodes).
    sw_index: Vec<u32>,
    /// Leaf index of every GPU's NIC's edge switch.
    leaf_of_gpu: Vec<u32>,
    /// Node of each leaf.
    leaf_node: Vec<u32>,
    n_leaves: usize,
    /// Per (switch, leaf), `switch index · n_leaves + leaf index`: the
    /// `[start, end)` of its next hops in `links`.
    span: Vec<[u32; 2]>,
    /// The distinct next-hop lists, each stored once. Measured (perf
    /// annotate, 1,024-host permutation bench): with one list per (switch,
    /// leaf), as CSR, a k = 16 fat-tree's table held 262,144 entries (1 MiB:
    /// 128 edges × 127 leaves × 8 up, 128 aggregations × (8 × 1 down + 120 ×
    /// 8 up), 64 cores × 128 × 1) and a switch hop missed the cache twice
    /// (the offsets, then the list); a switch's way up is one list for every
    /// remote leaf, so the distinct lists are 4,096 entries (16 KiB) that
    /// stay cached and a hop misses at most once (its 8-byte span). Same
    /// lists in the same order: same choices.
    links: Vec<PortId>,
    /// Per node: the uplink of a NIC (NONE if not a NIC or the link is down).
    nic_uplink: Vec<PortId>,
    /// NICs have several ports (planes, dual ToR): see [`RouteCache::rebuild`].
    multi_port: bool,
    /// Per node: true for an NVSwitch.
    is_nvswitch: Vec<bool>,
    /// Per GPU: its NIC node, PCIe down link and NVLink down link.
    gpu_nic: Vec<u32>,
    gpu_pcie_down: Vec<PortId>,
    gpu_nvlink_down: Vec<PortId>,
    /// Per GPU: the next hops from its NIC's edge switch towards it (the last
    /// network hop of every packet), CSR like `links`.
    last_start: Vec<u32>,
    last_links: Vec<PortId>,
}

impl RouteCache {
    /// Recomputes the table from the topology's current routes.
    pub fn rebuild(&mut self, topo: &Topology) {
        self.sw_index = vec![NONE; topo.nodes.len()];
        let mut switches = Vec::new();
        for (i, n) in topo.nodes.iter().enumerate() {
            if matches!(n.kind, NodeKind::Switch { .. }) {
                self.sw_index[i] = switches.len() as u32;
                switches.push(i as u32);
            }
        }
        self.leaf_node.clear();
        let mut rep_gpu = Vec::new();
        self.leaf_of_gpu = vec![NONE; topo.gpus.len()];
        for (g, gp) in topo.gpus.iter().enumerate() {
            let leaf = topo.nic_of_node(gp.nic).map(|n| n.leaf.0).unwrap_or(NONE);
            let li = match self.leaf_node.iter().position(|&l| l == leaf) {
                Some(i) => i,
                None => {
                    self.leaf_node.push(leaf);
                    rep_gpu.push(g as u32);
                    self.leaf_node.len() - 1
                }
            };
            self.leaf_of_gpu[g] = li as u32;
        }
        self.n_leaves = self.leaf_node.len();
        self.nic_uplink = vec![PortId::NONE; topo.nodes.len()];
        // a NIC of several ports (planes, dual ToR) and every edge switch of
        // a destination's ports but the first ask the topology itself
        self.multi_port = topo.ports_per_nic() > 1;
        for nic in &topo.nics {
            if topo.is_link_up(nic.uplink) && !self.multi_port {
                self.nic_uplink[nic.node.0 as usize] = nic.uplink.into();
            }
        }
        self.is_nvswitch = topo
            .nodes
            .iter()
            .map(|n| matches!(n.kind, NodeKind::NvSwitch { .. }))
            .collect();
        self.gpu_nic = topo.gpus.iter().map(|g| g.nic.0).collect();
        self.gpu_pcie_down = topo.gpus.iter().map(|g| g.pcie_down.into()).collect();
        self.gpu_nvlink_down = topo.gpus.iter().map(|g| g.nvlink_down.into()).collect();
        self.last_start.clear();
        self.last_links.clear();
        self.last_start.push(0);
        let mut tmp = Vec::new();
        for (g, &li) in self.leaf_of_gpu.iter().enumerate() {
            let leaf = self.leaf_node[li as usize];
            if leaf != NONE {
                tmp.clear();
                topo.next_hops(NodeId(leaf), GpuId(g as u32), &mut tmp);
                self.last_links.extend(tmp.iter().map(|&l| PortId::from(l)));
            }
            self.last_start.push(self.last_links.len() as u32);
        }
        self.span.clear();
        self.links.clear();
        let mut seen: std::collections::HashMap<Vec<PortId>, u32> = Default::default();
        let mut hops: Vec<PortId> = Vec::new();
        for &s in &switches {
            for (&leaf, &rep) in self.leaf_node.iter().zip(&rep_gpu) {
                hops.clear();
                if leaf != s {
                    tmp.clear();
                    topo.next_hops(NodeId(s), GpuId(rep), &mut tmp);
                    hops.extend(tmp.iter().map(|&l| PortId::from(l)));
                }
                let start = match seen.get(&hops) {
                    Some(&at) => at,
                    None => {
                        let at = self.links.len() as u32;
                        self.links.extend_from_slice(&hops);
                        seen.insert(hops.clone(), at);
                        at
                    }
                };
                self.span.push([start, start + hops.len() as u32]);
            }
        }
    }

    /// The cached next hops from switch `node` towards GPU `dst`, when the
    /// table holds them (a switch, NICs of one port); `None` where
    /// [`RouteCache::next_hops`] must ask elsewhere. Lets ECMP pick from the
    /// table in place: copying the candidates into a scratch vector was a
    /// libc `memcpy` call per switch hop, 6.4% of the 1,024-host permutation
    /// bench's time (perf, call graph).
    #[inline]
    pub fn switch_hops(&self, node: u32, dst: u32) -> Option<&[PortId]> {
        let si = self.sw_index[node as usize];
        if si == NONE || self.multi_port {
            return None;
        }
        let li = self.leaf_of_gpu[dst as usize];
        Some(if self.leaf_node[li as usize] != node {
            let [a, b] = self.span[si as usize * self.n_leaves + li as usize];
            &self.links[a as usize..b as usize]
        } else {
            let d = dst as usize;
            &self.last_links[self.last_start[d] as usize..self.last_start[d + 1] as usize]
        })
    }

    /// Appends the next hops from `node` towards GPU `dst` to `out`.
    #[inline]
    pub fn next_hops(
        &self,
        topo: &Topology,
        node: u32,
        dst: u32,
        out: &mut Vec<PortId>,
        tmp: &mut Vec<LinkId>,
    ) {
        let si = self.sw_index[node as usize];
        let li = self.leaf_of_gpu[dst as usize];
        if si != NONE
            && self.multi_port
            && self.leaf_node[li as usize] != node
            && topo
                .nic_ports(NodeId(self.gpu_nic[dst as usize]))
                .iter()
                .any(|p| p.leaf.0 == node)
        {
            tmp.clear();
            topo.next_hops(NodeId(node), GpuId(dst), tmp);
            out.extend(tmp.iter().map(|&l| PortId::from(l)));
        } else if si != NONE {
            let d = dst as usize;
            let hops = if self.leaf_node[li as usize] != node {
                let [a, b] = self.span[si as usize * self.n_leaves + li as usize];
                &self.links[a as usize..b as usize]
            } else {
                &self.last_links[self.last_start[d] as usize..self.last_start[d + 1] as usize]
            };
            out.extend_from_slice(hops);
        } else if self.gpu_nic[dst as usize] == node {
            // The destination's own NIC: down the PCIe link (never faulted here).
            out.push(self.gpu_pcie_down[dst as usize]);
        } else if self.nic_uplink[node as usize].is_some() {
            out.push(self.nic_uplink[node as usize]);
        } else if self.is_nvswitch[node as usize] {
            out.push(self.gpu_nvlink_down[dst as usize]);
        } else {
            tmp.clear();
            topo.next_hops(NodeId(node), GpuId(dst), tmp);
            out.extend(tmp.iter().map(|&l| PortId::from(l)));
        }
    }
}

/// Packets' worth of queue (× the detour's hop count) by which a Valiant path
/// must beat the minimal one before UGAL-G takes it: the adaptive threshold of
/// booksim's UGAL. UGAL-G sees the global links' queues themselves, which
/// flicker under uniform traffic: without it, it detoured enough packets to
/// lose 13% of uniform throughput on a 9×4 dragonfly (0.742 against minimal's
/// 0.849). UGAL-L takes the same margin (unweighted: booksim's
/// `min ≤ 2·nonmin + threshold`) since it reads per-class occupancy
/// (UGAL-L_VC_H) and delayed credits (UGAL-L_CR): measured on Kim's g9 a4
/// worst case with margins of 0, 1, 2, 4 and 8 packets, p = 1 gave 0.633,
/// 0.720, 0.782, 0.572, 0.559 and p = 2 0.480, 0.481, 0.477, 0.450, 0.424
/// (uniform p = 2: 0.779 … 0.838). Under the plain first-hop queue, before
/// those, a margin cost 28% of UGAL-L's worst case at p = 1. UGAL-L has its
/// own, [`UGAL_L_MARGIN`], since the lanes' round robin.
const UGAL_MARGIN: u64 = 2;

/// UGAL-L's margin, packets' worth of queue by which the detour (its queue
/// × 2) must beat the minimal path (booksim's `adaptive_threshold`, in our
/// units). With the data lanes served by round robin (`Sim::lane_rr`) rather
/// than highest lane first, measured on Kim's g9 a4 h2 dragonfly at 4 / 8 MiB
/// per host (`tests/dragonfly_routing.rs`, `steady_state_probe`, with this
/// constant set to each): margins of 2, 4, 8, 16, 30 packets gave p2 worst case 0.516 /
/// 0.520, 0.514 / 0.520, 0.508 / 0.507, 0.499 / 0.506, 0.471 / 0.475
/// (Valiant 0.493 / 0.504), p2 uniform 0.819 / 0.848, 0.823 / 0.856, 0.841 /
/// 0.876, 0.902 / 0.947, 0.904 / 0.949 (minimal 0.906 / 0.948), p1 worst case
/// 0.932 / 0.953, 0.940 / 0.941, 0.928 / 0.942, 0.864 / 0.881, 0.418 / 0.421
/// (Valiant 0.936 / 0.966): 2 detours enough uniform traffic to sit at 0.9 ×
/// minimal, 16 and up keep too many worst-case packets minimal where one host
/// per router leaves the queues short (p1). 8 packets (33 KB, a quarter of the
/// default 128 KiB port buffer) cleared both by 3% or more. It applies where
/// the two paths leave on different ports; on one port,
/// [`UGAL_L_SHARED_MARGIN`]. With a lane per class (`Sim::ugal_lanes`) and
/// that shared-port margin at 16, measured on seeds 1 / 2 / 3 (release,
/// 4 MiB per host, makespan throughput), margins of 4, 6, 8 packets gave the
/// 1,056-host dragonfly (p4 a8 h4 g33; Valiant 0.452 / 0.457 / 0.446)
/// worst case 0.427 / 0.418 / 0.422, 0.419 / 0.421 / 0.411, 0.413 / 0.404 /
/// 0.412 and uniform 0.712 / 0.687 / 0.697, 0.703 / 0.686 / 0.717, 0.721 /
/// 0.719 / 0.721 (minimal 0.721); Kim's g9 a4 h2 p2 uniform 0.843 / 0.850 /
/// 0.834, 0.846 / 0.858 / 0.852, 0.861 / 0.865 / 0.862 (minimal 0.906, worst
/// cases 0.50–0.52 against Valiant's 0.486–0.500) and p1 worst case 0.937 /
/// 0.936 / 0.934, 0.931 / 0.932 / 0.931, 0.925 / 0.872 / 0.916 (Valiant
/// 0.936 / 0.946 / 0.937): 8 leaves seed 2's 1,056-host worst case at 0.88
/// of Valiant's, 4 comes within 2% of the 10% there (seed 2) and
/// at g9 p2 uniform (seed 3); 6 clears every case by 2.4% or more.
const UGAL_L_MARGIN: u64 = 6;

/// UGAL-L's margin where the minimal and the detour path leave on the same
/// port, packets' worth of bytes by which the minimal class's held bytes
/// there (its lane's queue and what it holds in the next router,
/// `Sim::vc_held`) must exceed the detour class's before a packet detours,
/// both weighed 1 (one port, one next router: no hop count to weigh). 16
/// packets (66 KB) is half a lane's 128 KiB buffer: the minimal class's
/// path is blocked further on, not just carrying more of the traffic, which
/// under uniform traffic it always does. With [`UGAL_L_MARGIN`] at 6,
/// margins of 12 and 20 fail (12: g9 p2 uniform 0.813 < 0.815 on seed 1 and
/// the 1,056-host worst case 0.411 < 0.9 × 0.457 on seed 2; 20: 0.405 on
/// seed 2), 16 passes every case on seeds 1–3: a narrow window. First
/// measured with a lane per class (`Sim::ugal_lanes`), [`UGAL_L_MARGIN`] at
/// 8, seed 1, release, `tests/dragonfly_routing.rs`
/// at 4 MiB per host: margins of 12, 14, 16, 18, 20 packets gave on the
/// 1,056-host dragonfly (p4 a8 h4 g33; Valiant worst 0.452, minimal uniform
/// 0.721) worst case 0.415, 0.417, 0.413, 0.415, 0.409 and uniform 0.682,
/// 0.710, 0.721, 0.721, 0.721; on Kim's g9 a4 h2 p2 worst case (makespan /
/// accepted) 0.508 / 0.562, 0.507 / 0.553, 0.501 / 0.558, 0.514 / 0.561,
/// 0.512 / 0.564 (Valiant 0.493 / 0.523) and uniform 0.829, 0.838, 0.861,
/// 0.891, 0.910 (minimal 0.906); p1 worst case 0.856 / 0.977, 0.889 /
/// 0.995, 0.925 / 0.996, 0.923 / 0.996, 0.926 / 1.007 (Valiant 0.936 /
/// 0.972): all pass issue 14's 10%, 16 in the middle. Weighing the detour
/// class twice (booksim's global-hop weights) with margins of 8, 16, 32, 64
/// gave 1,056 hosts 0.406, 0.402, 0.388, 0.318 worst (uniform 0.648 at 8),
/// under 0.9 × Valiant; the ports' whole queues (booksim's comparison, which
/// on one port always goes minimal) 0.307; the shared lane before
/// `Sim::ugal_lanes` 0.379.
const UGAL_L_SHARED_MARGIN: u64 = 16;

impl Sim<'_> {
    /// Starts the next transmission on `p` if it is idle and something may go.
    pub(super) fn try_send(&mut self, p: PortId) {
        let now = self.now;
        let port = &mut self.ports[p];
        if port.busy {
            if port.tx_end > now {
                // Still serializing: come back when it ends (see `start_tx`).
                if !port.txdone_pending {
                    port.txdone_pending = true;
                    let at = port.tx_end;
                    self.q.push(at, Event::TxDone { port: p });
                }
                return;
            }
            // Finished, and its TxDone (if any) has not popped yet: finish it here.
            self.finish_tx(p);
        }
        let port = &mut self.ports[p];
        if !port.up {
            return;
        }
        // PFC frames go first: ahead of queued data, after the frame that was
        // in serialization (which `busy` waited for above)
        if port.ctrl_pending != 0 && self.fc_frame(p) {
            return;
        }
        let law = self.ports[p].fc;
        // Lanes that lack credits for their head packet: the wake-up, if any, is
        // for their credits.
        let mut starved_lanes = 0u32;
        let mut lanes = self.ports[p].lanes_queued;
        // one test on the common path: strict highest-lane-first order
        if !self.strict_lanes {
            if self.sched.on {
                match self.pick_class_lane(p, law) {
                    Ok(vl) => {
                        let qi = self.ports.lane(p, vl);
                        let pkt = self.ports.head(qi).expect("lane marked as queued");
                        let wire = self.pkts[pkt].wire;
                        self.ports.pop(p, vl, wire as u64, now);
                        self.start_tx(p, pkt, NONE);
                        return;
                    }
                    Err(starved) => starved_lanes = starved,
                }
                lanes = 0;
            } else if lanes & self.lane_rr_mask != 0 && lanes & !self.lane_rr_mask == 0 {
                // lane escalation with only data lanes (hop stages) queued:
                // round robin among them (`Sim::lane_rr`)
                match self.send_data_lane_rr(p, law, lanes) {
                    Ok(()) => return,
                    Err(starved) => {
                        starved_lanes |= starved;
                        lanes = 0;
                    }
                }
            }
        }
        while lanes != 0 {
            let vl = 7 - lanes.leading_zeros() as usize;
            lanes &= !(1 << vl);
            let qi = self.ports.lane(p, vl as u8);
            let pkt = self.ports.head(qi).expect("lane marked as queued");
            // read once: the gate (credits) and the pop both need it
            let wire = self.pkts[pkt].wire;
            match self.fc_gate(p, qi, law, |_| wire) {
                Gate::Go => {}
                gate => {
                    if matches!(gate, Gate::Starved) {
                        starved_lanes |= 1 << vl;
                    }
                    // a control lane that cannot go leaves the data lanes
                    // to their round robin
                    let rr = self.lane_rr_mask;
                    if lanes & rr != 0 && lanes & !rr == 0 {
                        match self.send_data_lane_rr(p, law, lanes) {
                            Ok(()) => return,
                            Err(starved) => {
                                starved_lanes |= starved;
                                break;
                            }
                        }
                    }
                    continue;
                }
            }
            self.ports.pop(p, vl as u8, wire as u64, now);
            self.start_tx(p, pkt, NONE);
            return;
        }
        if self.ports[p].has_qps() {
            match self.pull_data(p) {
                Pull::Packet(pkt, sent_task) => {
                    self.start_tx(p, pkt, sent_task);
                    return;
                }
                Pull::NoCredit(lanes) => starved_lanes |= lanes,
                Pull::Nothing => {}
            }
        }
        if starved_lanes != 0 {
            self.fc_starved(p, starved_lanes);
        }
    }

    /// Under lane escalation ([`Sim::lane_rr`]): starts the head packet of
    /// the first of the queued data `lanes` at or after port `p`'s round-robin
    /// cursor that may go, and moves the cursor past it; or returns the lanes
    /// that lack credits for their head packet. Out of line: ports without
    /// escalation never come here.
    #[inline(never)]
    fn send_data_lane_rr(&mut self, p: PortId, law: LinkLaw, lanes: u8) -> Result<(), u32> {
        let now = self.now;
        let cur = self.lane_rr[p.0 as usize];
        let mut starved = 0u32;
        // the lanes from the cursor up, then from lane 0: one turn
        let at_or_above = lanes & !((1u16 << cur) - 1) as u8;
        let mut order = [at_or_above, lanes & !at_or_above];
        for part in &mut order {
            while *part != 0 {
                let vl = part.trailing_zeros() as u8;
                *part &= *part - 1;
                let qi = self.ports.lane(p, vl);
                let pkt = self.ports.head(qi).expect("lane marked as queued");
                let wire = self.pkts[pkt].wire;
                match self.fc_gate(p, qi, law, |_| wire) {
                    Gate::Go => {}
                    Gate::Paused => continue,
                    Gate::Starved => {
                        starved |= 1 << vl;
                        continue;
                    }
                }
                self.lane_rr[p.0 as usize] = if vl >= self.max_data_vl { 0 } else { vl + 1 };
                self.ports.pop(p, vl, wire as u64, now);
                self.start_tx(p, pkt, NONE);
                return Ok(());
            }
        }
        Err(starved)
    }

    /// With traffic classes: the lane port `p` serves next, by priority level
    /// (highest first) and DWRR among a level's weighted lanes
    /// ([`super::classes`]); or the lanes that lack credits for their head
    /// packet when none may go.
    fn pick_class_lane(&mut self, p: PortId, law: LinkLaw) -> Result<u8, u32> {
        let queued = self.ports[p].lanes_queued;
        let mut starved = 0u32;
        for g in 0..self.sched.ngroups {
            let (mask, weighted) = self.sched.groups[g];
            if weighted {
                // an empty lane starts its next busy period without credit
                let mut empty = mask & !queued;
                while empty != 0 {
                    let vl = empty.trailing_zeros() as u8;
                    empty &= empty - 1;
                    self.sched.deficit[self.ports.lane(p, vl)] = 0;
                }
            }
            let mut m = queued & mask;
            // lanes whose head packet may go now
            let mut ready = 0u8;
            while m != 0 {
                let vl = m.trailing_zeros() as u8;
                m &= m - 1;
                let qi = self.ports.lane(p, vl);
                let head = |s: &Self| {
                    let pkt = s.ports.head(qi).expect("lane marked as queued");
                    s.pkts[pkt].wire
                };
                match self.fc_gate(p, qi, law, head) {
                    Gate::Go => ready |= 1 << vl,
                    Gate::Paused => {}
                    Gate::Starved => starved |= 1 << vl,
                }
            }
            if ready == 0 {
                continue;
            }
            if !weighted {
                return Ok(ready.trailing_zeros() as u8);
            }
            // DWRR: the lane in turn sends while its deficit covers its head
            // packet; the next ready lane gets its quantum when the turn
            // reaches it. A quantum is at least one full packet, so this ends
            // within one round.
            let ci = self.ports.lane(p, g as u8);
            let mut cur = self.sched.cur[ci];
            loop {
                if ready & (1 << cur) != 0 {
                    let qi = self.ports.lane(p, cur);
                    let pkt = self.ports.head(qi).expect("lane marked as queued");
                    let wire = self.pkts[pkt].wire;
                    let d = &mut self.sched.deficit[qi];
                    if *d >= wire {
                        *d -= wire;
                        self.sched.cur[ci] = cur;
                        return Ok(cur);
                    }
                }
                cur = ClassSched::next_in(mask, cur);
                if ready & (1 << cur) != 0 {
                    let qi = self.ports.lane(p, cur);
                    self.sched.deficit[qi] += self.sched.quantum[cur as usize];
                }
            }
        }
        Err(starved)
    }

    /// Puts `pkt` on the wire of port `p` (credits already checked).
    ///
    /// A `TxDone` event is scheduled only when something must happen at the end
    /// of this serialization: a `Dep::Sent` to fire, or packets or queue pairs
    /// already waiting for the port. Otherwise the port is simply busy until
    /// `tx_end`, and whoever needs it earlier schedules the event then
    /// (`try_send`). On lightly loaded links this saves one event per packet hop.
    pub(super) fn start_tx(&mut self, p: PortId, pkt: PktIdx, sent_task: u32) {
        let now = self.now;
        let vls = self.vls;
        // ECN at dequeue: judged by the queue this packet leaves behind (the
        // caller popped it), so the mark reports the queue as it is now.
        // InfiniBand CC's FECN likewise, always at dequeue.
        if self.ports[p].ecn && self.pkts[pkt].kind == PktKind::Data {
            let vl = self.pkts[pkt].vl;
            let q = self.ports.queued_bytes(p.lane(vl, vls));
            let cfg = self.cfg;
            if let CongestionControl::Ib(ib) = &cfg.cc {
                self.fecn_mark(p, pkt, q, ib);
            } else if self.cfg.ecn_mark_at == EcnMarkAt::Dequeue {
                self.ecn_mark(p, pkt, vl, q);
            }
        }
        let (wire, vl, in_link, flags) = {
            let k = &self.pkts[pkt];
            (k.wire, k.vl, k.link, k.flags)
        };
        // HPCC's in-band telemetry (one per-run flag, not a per-packet
        // dispatch): every departure feeds the port's utilization estimate,
        // and a data packet leaves carrying the largest one on its path so far
        if self.int_t != 0 {
            let t = self.int_t;
            let port = &mut self.ports[p];
            let bt = port.rate.bps() as f64 * t as f64 / 8e12;
            let q = port.qtotal;
            int_update(&mut port.int, now, wire as u64, q, bt.max(1.0), t);
            let u = port.int.u;
            let k = &mut self.pkts[pkt];
            if k.kind == PktKind::Data {
                k.hash = int_stamp(k.hash, u);
            }
        }
        // The packet leaves this node's buffer: free what it held upstream (on
        // the lane it arrived on), now or, for a law that must, at the end.
        let hold = LinkLaw::holding(flags);
        let in_vl = arrival_lane(vl, flags);
        if !self.vc_held.is_empty()
            && in_link.is_some()
            && self.cr_port[in_link.0 as usize] != CrPort::Other
        {
            // UGAL-L_VC_H: the packet leaves the buffer it held downstream of
            // its source router's port; its class's occupancy there drops
            if let Some(c) = self.vc_cls.get_mut(pkt.idx()) {
                if *c != 0 {
                    self.vc_held[in_link.0 as usize][usize::from(*c - 1)] -= u64::from(wire);
                    *c = 0;
                }
            }
        }
        if in_link.is_some() && !hold.releases_after_tx() {
            if !self.cr_port.is_empty()
                && self.cr_port[p.0 as usize] == CrPort::Global
                && self.cr_port[in_link.0 as usize] == CrPort::Local
                && hold == LinkLaw::Credit
            {
                // UGAL-L_CR (Kim et al., ISCA 2008, §4.2.2): the credit goes
                // back to the local upstream router late by the wait that
                // this global channel's backlog now adds, so the upstream
                // router's own queue toward here grows with the global queue
                let port = &self.ports[p];
                let extra = port.tx_time(port.qtotal);
                let b = self.blk(wire);
                self.return_credit_late(in_link, in_vl, b, extra);
            } else {
                self.fc_release(hold, in_link, in_vl, wire, p);
            }
        }
        let ber = self.ports[p].ber;
        let corrupt = ber > 0.0 && {
            let pc = 1.0 - (1.0 - ber).powf(wire as f64 * 8.0);
            let node = self.ports[p].from;
            self.rand_f64(node) < pc
        };
        let nblk = self.blk(wire);
        let port = &mut self.ports[p];
        port.fc.on_tx(&mut self.credits, p.lane(vl, vls), nblk);
        if port.stall_since != NEVER {
            port.stall_ps += now - port.stall_since;
            port.stall_since = NEVER;
        }
        debug_assert!(
            !port.busy && port.tx_end <= now,
            "a port serializes one packet at a time"
        );
        let tx = port.tx_time(wire as u64);
        self.counters.hop();
        // (a partitioned run keeps the maximum over its partitions, which
        // handle a window one after the other: `Sim::run_windowed`)
        self.last_tx = now;
        self.watchdog_at = now.saturating_add(self.cfg.deadlock_timeout.0);
        port.busy = true;
        port.sent_task = sent_task;
        port.tx_end = now + tx;
        port.bytes += wire as u64;
        port.busy_ps += tx;
        if let Some(tl) = self.timeline.as_deref_mut() {
            tl.add(&[p.0], now, now + tx, wire as f64);
        }
        // Store-and-forward: the next node routes the packet once its last bit is
        // in. Cut-through: once its header is in; the egress cannot overtake the
        // tail because cut-through is only enabled where no out-link is faster.
        let in_time = if port.cut_through {
            port.tx_time(self.cfg.header_bytes as u64).min(tx)
        } else {
            tx
        };
        let arrive = now + in_time + port.latency + port.fwd_latency;
        let epoch = port.epoch;
        let k = &mut self.pkts[pkt];
        k.link = p;
        k.epoch = epoch;
        k.flags = (flags & !(F_CORRUPT | F_LOSSY_HELD | F_VL_RAISED | F_PFC_HELD))
            | if corrupt { F_CORRUPT } else { 0 };
        let port = &self.ports[p];
        let waiting = sent_task != NONE || port.lanes_queued != 0 || port.has_qps();
        self.ports[p].txdone_pending = waiting;
        if waiting {
            self.q.push(now + tx, Event::TxDone { port: p });
        }
        self.q.push(arrive, Event::Arrive { pkt, link: p });
        // A release after the port is marked busy (PFC's: the RESUME it may
        // send can ask for this very port's wire).
        if in_link.is_some() && hold.releases_after_tx() {
            self.fc_release(hold, in_link, in_vl, wire, p);
        }
    }

    /// Port `p` finished serializing.
    pub(super) fn on_tx_done(&mut self, p: PortId) {
        let port = &self.ports[p];
        // A TxDone can be stale: `try_send` may already have finished that
        // serialization at this very time and started the next one.
        if port.busy && port.tx_end == self.now {
            self.finish_tx(p);
        }
        self.try_send(p);
    }

    /// The serialization on `p` has ended: the port is free, and the last packet
    /// of a message leaving its source completes the message's `Dep::Sent`.
    fn finish_tx(&mut self, p: PortId) {
        let port = &mut self.ports[p];
        port.busy = false;
        port.txdone_pending = false;
        let task = std::mem::replace(&mut port.sent_task, NONE);
        if task != NONE {
            self.task_sent(task);
        }
    }

    /// Packet `pkt` finished crossing `link` and the receiving node's pipeline.
    pub(super) fn on_arrive(&mut self, pkt: PktIdx, link: PortId) {
        let port = &self.ports[link];
        let k = self.pkts[pkt];
        if k.epoch != port.epoch || !port.up {
            // Lost on a link that went down; the receiver never held it.
            self.ports[link].drops += 1;
            self.drop_packet(pkt, DropCause::LinkDown);
            self.fc_lost(link, k.vl, k.wire);
            return;
        }
        if k.flags & F_CORRUPT != 0 {
            self.fc_freed(link, k.vl, k.wire);
            self.ports[link].drops += 1;
            self.drop_packet(pkt, DropCause::Corrupt);
            return;
        }
        let node = port.to;
        if self.gpu_of_node[node as usize] != NONE {
            debug_assert_eq!(
                self.gpu_of_node[node as usize], k.dst,
                "delivered to the wrong GPU"
            );
            self.fc_freed(link, k.vl, k.wire);
            self.deliver(pkt);
            return;
        }
        self.forward(node, pkt, link);
    }

    /// Routes `pkt` (arrived at `node` over `in_link`) to an egress queue.
    fn forward(&mut self, node: u32, pkt: PktIdx, in_link: PortId) {
        let k = self.pkts[pkt];
        let mut vl = k.vl;
        let out = if self.df_non_minimal && k.kind == PktKind::Data && !self.ports[in_link].sw2sw {
            let o = self.source_route(node, pkt);
            if self.ugal_lanes && o.is_some() && self.via[pkt.idx()] == 0 && vl < self.max_data_vl {
                // UGAL-L's minimal class one lane up from its source router
                // (`Sim::ugal_lanes`): its own lane beside the detours'
                vl += 1;
                let kp = &mut self.pkts[pkt];
                kp.vl = vl;
                kp.flags |= F_VL_RAISED;
            }
            o
        } else {
            self.pick_next_hop(node, &k, pkt)
        };
        let Some(out) = out else {
            self.fc_freed(in_link, k.vl, k.wire);
            self.drop_packet(pkt, DropCause::Unroutable);
            return;
        };
        if self.cfg.vl_escalation
            && k.kind == PktKind::Data
            && self.ports[in_link].sw2sw
            && vl < self.max_data_vl
        {
            // One lane up per switch-to-switch hop: a packet's lane only rises
            // along its path, so buffers of different hop stages never wait on
            // each other in a cycle (Dally & Seitz, IEEE TC 1987).
            vl += 1;
            let kp = &mut self.pkts[pkt];
            kp.vl = vl;
            kp.flags |= F_VL_RAISED;
        }
        let Some((vl, wire)) = self.fc_admit(node, in_link, k.vl, out, vl, pkt, k.wire) else {
            return;
        };
        let qi = out.lane(vl, self.vls);
        if k.kind == PktKind::Data
            && self.ports[out].ecn
            && self.cfg.ecn_mark_at == EcnMarkAt::Enqueue
        {
            self.ecn_mark(out, pkt, vl, self.ports.queued_bytes(qi));
        }
        self.enqueue(out, vl, pkt, wire as u64);
    }

    /// RED marking of data packet `pkt` at egress `port`, lane `vl`, against a
    /// queue of `q` bytes, with the lane's thresholds (the fabric's, or its class's).
    #[inline]
    fn ecn_mark(&mut self, port: PortId, pkt: PktIdx, vl: u8, q: u64) {
        if let Some(e) = self.sched.ecn[vl as usize] {
            let pr = e.probability(q);
            if pr >= 1.0 || (pr > 0.0 && self.rand_f64(self.ports[port].from) < pr) {
                self.pkts[pkt].flags |= F_ECN;
                self.ports[port].ecn_marks += 1;
                self.counters.ecn_mark(self.now);
            }
        }
    }

    /// InfiniBand CC at switch port `p` sending data packet `pkt` with `q`
    /// bytes left in its lane (IBA vol. 1 Annex A10): the port is congested
    /// above `threshold`, and marks FECN only as the root of the congestion,
    /// a port with credits to send: it did not wait for credits for this
    /// packet (`stall_since` unset) and holds credits for the next one too. A
    /// port that waits for credits, or sends as fast as they trickle back one
    /// packet at a time, is a victim of congestion downstream and does not
    /// mark (the spec's `Victim_Mask` clear). It marks one in every
    /// `marking_rate + 1` eligible packets of at least `packet_size` bytes.
    #[inline]
    fn fecn_mark(&mut self, p: PortId, pkt: PktIdx, q: u64, ib: &super::cc::IbCcParams) {
        let wire = self.pkts[pkt].wire;
        if q <= ib.threshold || u64::from(wire) < ib.packet_size {
            return;
        }
        let port = &self.ports[p];
        if port.stall_since != NEVER {
            return;
        }
        if port.fc == LinkLaw::Credit {
            // credits for this packet but not for the next one: the port
            // sends as fast as credits trickle back, a victim
            let vl = self.pkts[pkt].vl;
            let need = 2 * self.blk(wire);
            if !self.has_credits(p, p.lane(vl, self.vls), need) {
                return;
            }
        }
        let port = &mut self.ports[p];
        if port.fecn_since < ib.marking_rate {
            port.fecn_since += 1;
            return;
        }
        port.fecn_since = 0;
        self.pkts[pkt].flags |= F_ECN;
        self.counters.fecn_mark(self.now);
    }

    /// Appends `pkt` to lane `vl` of port `out` and kicks the port.
    pub(super) fn enqueue(&mut self, out: PortId, vl: u8, pkt: PktIdx, wire: u64) {
        self.ports.push(out, vl, pkt, wire, self.now);
        self.try_send(out);
    }

    /// Chooses the egress link at `node` for packet `k` (slot `pkt`) per the
    /// routing mode: towards its Valiant intermediate router while it has one
    /// to reach (cleared on arrival there), else towards its destination.
    fn pick_next_hop(&mut self, node: u32, k: &super::slab::Packet, pkt: PktIdx) -> Option<PortId> {
        self.cands.clear();
        if self.df_non_minimal && k.kind == PktKind::Data {
            let v = self.via.get(pkt.idx()).copied().unwrap_or(0);
            if v != 0 {
                if let Some(df) = self.topo.dragonfly() {
                    let c = df.toward_router(NodeId(node), v - 1);
                    if !c.is_empty() {
                        self.cands.extend(c.iter().map(|&l| PortId::from(l)));
                    } else {
                        self.via[pkt.idx()] = 0;
                    }
                }
            }
        }
        if self.cands.is_empty() && self.cfg.routing == Routing::Ecmp {
            // the common case, picked in place (see `RouteCache::switch_hops`):
            // the same candidates in the same order, so the same choice
            if let Some(hops) = self.routes.switch_hops(node, k.dst) {
                return match hops.len() {
                    0 => None,
                    1 => Some(hops[0]),
                    n => Some(hops[self.ecmp_index(node, k, n)]),
                };
            }
        }
        if self.cands.is_empty() {
            self.routes.next_hops(
                &self.topo,
                node,
                k.dst,
                &mut self.cands,
                &mut self.tmp_links,
            );
        }
        self.pick_candidate(node, k)
    }

    /// ECMP: the index among `n` (≥ 2) equal-cost candidates that packet
    /// `k`'s flow takes at `node` (a hash of its queue pair, data and control
    /// packets apart).
    #[inline]
    fn ecmp_index(&self, node: u32, k: &super::slab::Packet, n: usize) -> usize {
        let salt = if k.kind == PktKind::Data {
            0
        } else {
            0x5bd1_e995
        };
        let h = mix64(self.qps.hash(k.qp) ^ salt ^ ((node as u64) << 32));
        // Multiply-shift instead of `h % n`: no division per hop.
        ((h as u128 * n as u128) >> 64) as usize
    }

    /// Picks among `cands` per the routing mode.
    fn pick_candidate(&mut self, node: u32, k: &super::slab::Packet) -> Option<PortId> {
        let n = self.cands.len();
        match n {
            0 => None,
            1 => Some(self.cands[0]),
            _ => Some(match self.cfg.routing {
                Routing::Ecmp => self.cands[self.ecmp_index(node, k, n)],
                Routing::Spray => {
                    let i = self.rand_below(node, n as u64) as usize;
                    self.cands[i]
                }
                Routing::Adaptive => self.least_loaded_candidate(node),
                Routing::Flowlet => self.flowlet_next_hop(node, k),
            }),
        }
    }

    /// A data packet entering the network at its source router under a
    /// non-minimal dragonfly routing (Kim et al., ISCA 2008, §4.2) chooses its
    /// path here, per packet: Valiant draws an intermediate router uniformly
    /// over every router of the network ([`crate::topology::dragonfly::Groups::intermediate`]:
    /// a draw in the source group goes minimal, as in booksim's
    /// `ugal_dragonflynew`); UGAL-L compares the minimal path's first output
    /// queue with twice that of a random non-minimal Valiant path (global hops,
    /// 1 against 2, as booksim weighs them; [`crate::topology::dragonfly::Groups::detour`];
    /// minimal unless the detour wins by [`UGAL_L_MARGIN`] packets), in Kim's
    /// UGAL-L_VC_H and UGAL-L_CR forms (§4.2.2): when both paths leave on one
    /// port it compares the bytes each class holds there and in the next
    /// router ([`Sim::vc_held`], by [`UGAL_L_SHARED_MARGIN`]), the classes on
    /// lanes of their own ([`Sim::ugal_lanes`]), and a router delays the credits of packets
    /// it forwards from a local link onto a backed-up global one
    /// ([`crate::backend::packet::sim::CrPort`]); UGAL-G compares the queues
    /// of each path's first global link × hop count. Traffic inside a group, and any
    /// packet off a dragonfly, goes minimal.
    fn source_route(&mut self, node: u32, pkt: PktIdx) -> Option<PortId> {
        let k = self.pkts[pkt];
        if self.via.len() <= pkt.idx() {
            self.via.resize(pkt.idx() + 1, 0);
        }
        self.via[pkt.idx()] = 0;
        if !self.vc_held.is_empty() {
            if self.vc_cls.len() <= pkt.idx() {
                self.vc_cls.resize(pkt.idx() + 1, 0);
            }
            self.vc_cls[pkt.idx()] = 0;
        }
        let here = NodeId(node);
        let groups = self.topo.dragonfly().map(|df| {
            let dst_leaf = self
                .topo
                .nic_of_node(self.topo.gpus[k.dst as usize].nic)
                .map(|n| n.leaf);
            (
                df.group_of(here),
                dst_leaf.and_then(|l| df.group_of(l)),
                df.groups,
            )
        });
        let (sg, dg) = match groups {
            Some((Some(sg), Some(dg), g)) if sg != dg && g >= 3 => (sg, dg),
            _ => return self.pick_next_hop(node, &k, pkt),
        };
        let r = self.rand_below(node, u64::MAX);
        let valiant = self.topo.dragonfly_routing() == DragonflyRouting::Valiant;
        let Some(v) = self.topo.dragonfly().and_then(|df| {
            if valiant {
                df.intermediate(sg, dg, r)
            } else {
                df.detour(sg, dg, r)
            }
        }) else {
            return self.pick_next_hop(node, &k, pkt);
        };
        match self.topo.dragonfly_routing() {
            DragonflyRouting::Valiant => {
                self.via[pkt.idx()] = v + 1;
                self.pick_next_hop(node, &k, pkt)
            }
            mode @ (DragonflyRouting::Ugal | DragonflyRouting::UgalG) => {
                let min_port = self.pick_next_hop(node, &k, pkt)?;
                self.via[pkt.idx()] = v + 1;
                let Some(val_port) = self.pick_next_hop(node, &k, pkt) else {
                    self.via[pkt.idx()] = 0;
                    return Some(min_port);
                };
                let df = self.topo.dragonfly()?;
                let h_min = u64::from(df.hops_to_group(here, dg)) + 1;
                let vg = df.group_of_router(v);
                // to the intermediate group, to the intermediate router, at
                // most two hops to the destination group, one in it; a draw in
                // the destination group: to it, to the drawn router, on
                let h_val = u64::from(df.hops_to_group(here, vg)) + if vg == dg { 2 } else { 4 };
                let vc_h = mode == DragonflyRouting::Ugal && !self.vc_held.is_empty();
                let shared = vc_h && min_port == val_port;
                let (q_min, q_val) = if shared {
                    // UGAL-L_VC_H (Kim §4.2.2): one port for both paths, so
                    // its queue cannot tell them apart; the occupancy of each
                    // path's class on it can (here the minimal packets pile
                    // up behind the congested global channel downstream)
                    let held = self.vc_held[min_port.0 as usize];
                    (held[0], held[1])
                } else if mode == DragonflyRouting::Ugal {
                    (self.load_of(min_port), self.load_of(val_port))
                } else {
                    (
                        self.global_queue(min_port, k.dst, 0),
                        self.global_queue(val_port, k.dst, v + 1),
                    )
                };
                // UGAL-G's detour must win by a margin (booksim's adaptive
                // threshold): UGAL_MARGIN packets' worth of queue
                let margin = if mode == DragonflyRouting::UgalG {
                    UGAL_MARGIN * u64::from(k.wire) * h_val
                } else {
                    0
                };
                // UGAL-L weighs global hops as booksim's dragonfly UGAL does
                // (1 minimal, 2 for a detour through a third group) with a
                // margin (booksim's adaptive threshold): router hops overweighted the minimal path of a
                // router holding the direct global link (2 hops against 5–6),
                // which kept its hosts minimal behind that link's queue
                let (h_min, h_val, margin) = if shared {
                    // one port, one next router: the classes' held bytes say
                    // whose path is blocked further on, not a queue a packet
                    // waits behind once per hop, so no hop weights; the
                    // minimal class must hold half a lane's buffer more
                    // (`UGAL_L_SHARED_MARGIN`)
                    (1, 1, UGAL_L_SHARED_MARGIN * u64::from(k.wire))
                } else if mode == DragonflyRouting::Ugal {
                    (
                        1,
                        if vg == dg { 1 } else { 2 },
                        UGAL_L_MARGIN * u64::from(k.wire),
                    )
                } else {
                    (h_min, h_val, margin)
                };
                let go_valiant = q_min * h_min > q_val * h_val + margin;
                let (port, cls) = if go_valiant {
                    (val_port, 2)
                } else {
                    self.via[pkt.idx()] = 0;
                    (min_port, 1)
                };
                if vc_h && self.cr_port[port.0 as usize] != CrPort::Other {
                    self.vc_held[port.0 as usize][usize::from(cls - 1)] += u64::from(k.wire);
                    self.vc_cls[pkt.idx()] = cls;
                }
                Some(port)
            }
            DragonflyRouting::Shortest | DragonflyRouting::Minimal => {
                self.pick_next_hop(node, &k, pkt)
            }
        }
    }

    /// UGAL-G's queue of a path that leaves on `first` towards GPU `dst`
    /// (through router index `via − 1` first when `via` is not 0): the
    /// occupancy of its first global link's output, which Kim et al. (§4.2)
    /// give UGAL-G as global information (a router cannot see it: the bound
    /// UGAL-L approximates). Follows the ECMP choice of each router up to that
    /// link; at most 4 hops, allocation-free. A path without a global link
    /// (inside a group) counts its first output.
    fn global_queue(&mut self, first: PortId, dst: u32, mut via: u32) -> u64 {
        let mut port = first;
        for _ in 0..4 {
            let Some(df) = self.topo.dragonfly() else {
                break;
            };
            if df.is_global(&self.topo, LinkId(port.0)) {
                return self.load_of(port);
            }
            let at = NodeId(self.ports[port].to);
            if df.group_of(at).is_none() {
                break;
            }
            self.walk.clear();
            if via != 0 {
                let c = df.toward_router(at, via - 1);
                if !c.is_empty() {
                    self.walk.extend(c.iter().map(|&l| PortId::from(l)));
                } else {
                    via = 0;
                }
            }
            if self.walk.is_empty() {
                self.routes
                    .next_hops(&self.topo, at.0, dst, &mut self.walk, &mut self.tmp_links);
            }
            let Some(&next) = self.walk.first() else {
                break;
            };
            port = next;
        }
        self.load_of(first)
    }

    /// The candidate in `cands` (at least one) with the least occupied egress,
    /// scanning from a random start so ties are broken evenly.
    fn least_loaded_candidate(&mut self, node: u32) -> PortId {
        let n = self.cands.len();
        let start = self.rand_below(node, n as u64) as usize;
        let mut best = self.cands[start];
        let mut best_q = self.load_of(best);
        for j in 1..n {
            let c = self.cands[(start + j) % n];
            let q = self.load_of(c);
            if q < best_q {
                best = c;
                best_q = q;
            }
        }
        best
    }

    /// [`Routing::Flowlet`]: the port the flow's previous packet took at `node`
    /// if it passed less than the flowlet gap ago (and the port is still a
    /// candidate), else the least loaded candidate, remembered for the flowlet.
    fn flowlet_next_hop(&mut self, node: u32, k: &super::slab::Packet) -> PortId {
        let row = k.qp.idx() * 2 + usize::from(k.kind != PktKind::Data);
        let now = self.now;
        let table = &self.flowlets.rows[row];
        // This switch's entry, else the stalest one to reuse.
        let mut slot = 0;
        let mut found = false;
        for (i, e) in table.iter().enumerate() {
            if e.node == node {
                slot = i;
                found = true;
                break;
            }
            if e.last < table[slot].last {
                slot = i;
            }
        }
        let e = table[slot];
        if found && now - e.last <= self.cfg.flowlet_gap.0 && self.cands.contains(&e.port) {
            self.flowlets.rows[row][slot].last = now;
            return e.port;
        }
        let port = self.least_loaded_candidate(node);
        self.counters.flowlet();
        self.flowlets.rows[row][slot] = FlowletEntry {
            node,
            port,
            last: now,
        };
        port
    }

    /// Occupancy of an egress port as adaptive routing sees it: queued bytes,
    /// plus one byte if a packet is on the wire, so an idle port beats a busy one
    /// with an empty queue (switch ASICs expose queue depth, not the remaining
    /// serialization time).
    #[inline]
    fn load_of(&self, p: PortId) -> u64 {
        let port = &self.ports[p];
        port.qtotal + u64::from(port.busy && port.tx_end > self.now)
    }

    /// Frees a dropped packet and counts it.
    pub(super) fn drop_packet(&mut self, pkt: PktIdx, cause: DropCause) {
        let k = self.pkts[pkt];
        let data = k.kind == PktKind::Data;
        let trimmed = k.flags & F_TRIMMED != 0;
        let payload = if data && !trimmed {
            (k.wire - self.cfg.header_bytes) as u64
        } else {
            0
        };
        self.counters
            .dropped_kind(cause, data, trimmed, payload, k.vl);
        self.pkts.free(pkt);
    }

    /// Applies `PacketConfig::link_events[i]`.
    pub(super) fn on_link_event(&mut self, i: usize) {
        let e = self.cfg.link_events[i];
        let l = PortId::from(e.link);
        match e.kind {
            LinkEventKind::Down | LinkEventKind::Up => {
                let up = e.kind == LinkEventKind::Up;
                let pair = [l, PortId::from(self.topo.reverse(e.link))];
                if self.ports[l].up == up {
                    return;
                }
                self.topo.set_link_up(e.link, up);
                self.routes.rebuild(&self.topo);
                for p in pair {
                    self.ports[p].up = up;
                    if !up {
                        self.ports[p].epoch = self.ports[p].epoch.wrapping_add(1);
                        self.flush_port(p);
                    }
                }
                for p in pair {
                    self.try_send(p);
                }
            }
            LinkEventKind::Rate(r) => {
                self.ports[l].set_rate(r);
                self.update_cut_through();
            }
            LinkEventKind::Ber(b) => self.ports[l].ber = b,
        }
    }

    /// Decides per link whether its receiver cuts through
    /// ([`PacketConfig::cut_through`](super::PacketConfig::cut_through)): only a
    /// forwarding node (not a GPU) none of whose out-links is faster than the link,
    /// so a packet forwarded on its header can never finish leaving before it has
    /// finished arriving (no underrun). Elsewhere, e.g. a NIC feeding a faster PCIe
    /// link, the node stores and forwards.
    pub(super) fn update_cut_through(&mut self) {
        let n = self.topo.nodes.len();
        let mut max_out = vec![0u64; n];
        for p in self.ports.iter() {
            max_out[p.from as usize] = max_out[p.from as usize].max(p.rate.0);
        }
        let on = self.cfg.cut_through;
        for p in self.ports.iter_mut() {
            let to = p.to as usize;
            p.cut_through = on && self.gpu_of_node[to] == NONE && max_out[to] <= p.rate.0;
        }
    }

    /// Drops everything queued at a port whose link went down. The packet on the
    /// wire is lost when it "arrives" (its epoch is stale).
    fn flush_port(&mut self, p: PortId) {
        for vl in 0..self.vls as u8 {
            let qi = self.ports.lane(p, vl);
            while let Some(pkt) = self.ports.head(qi) {
                let k = self.pkts[pkt];
                self.ports.pop(p, vl, k.wire as u64, self.now);
                if k.link.is_some() {
                    let in_vl = arrival_lane(k.vl, k.flags);
                    self.fc_release(LinkLaw::holding(k.flags), k.link, in_vl, k.wire, p);
                }
                self.ports[p].drops += 1;
                self.drop_packet(pkt, DropCause::LinkDown);
            }
        }
        let port = &mut self.ports[p];
        port.lanes_queued = 0;
        port.stall_since = NEVER;
        self.fc_port_down(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LinkKind;

    /// `n` ports of 100 Gb/s with `vls` lanes each.
    fn ports(n: usize, vls: usize) -> Ports {
        let link = Link {
            from: NodeId(0),
            to: NodeId(1),
            rate: Rate::gbps(100),
            latency: SimTime::from_ns(1),
            kind: LinkKind::Network,
        };
        let v = (0..n)
            .map(|_| Port::new(&link, SimTime::ZERO, LinkLaw::Lossy))
            .collect();
        Ports::new(IdVec::from_vec(v), vls)
    }

    #[test]
    fn route_cache_gives_the_topology_s_next_hops_in_order() {
        // The shared lists must give every switch, for every GPU, exactly
        // the topology's candidates in the topology's order (ECMP indexes
        // into them: same list, same choices). k = 8 fat-tree: 128 hosts.
        use crate::topology::{test_cluster, GpuId, NodeKind, TopologySpec};
        let topo = test_cluster(128, 1, &TopologySpec::FatTree { k: 8 });
        let mut rc = RouteCache::default();
        rc.rebuild(&topo);
        let (mut want, mut got, mut tmp) = (Vec::new(), Vec::new(), Vec::new());
        let mut checked = 0;
        for (n, node) in topo.nodes.iter().enumerate() {
            if !matches!(node.kind, NodeKind::Switch { .. }) {
                continue;
            }
            for g in 0..topo.gpus.len() as u32 {
                want.clear();
                topo.next_hops(NodeId(n as u32), GpuId(g), &mut want);
                let want: Vec<PortId> = want.iter().map(|&l| PortId::from(l)).collect();
                let hops = rc
                    .switch_hops(n as u32, g)
                    .expect("a switch's hops are cached");
                assert_eq!(hops, &want[..], "switch {n} towards GPU {g}");
                got.clear();
                rc.next_hops(&topo, n as u32, g, &mut got, &mut tmp);
                assert_eq!(got, want);
                checked += 1;
            }
        }
        assert_eq!(checked, 80 * 128, "k = 8: 80 switches");
        // each distinct list is stored once: a k = 8 fat-tree's way up is 4
        // links per edge and aggregation switch (32 + 32 lists), and its
        // ways down one link each (32 aggregations × 4 edges, 16 cores × 8
        // pods): 64 × 4 + 128 + 128 = 512 entries
        assert_eq!(rc.links.len(), 512);
    }

    #[test]
    fn lanes_are_fifos_that_interleave_through_one_next_array() {
        // The intrusive lanes must behave as the per-lane VecDeques they
        // replaced: FIFO per lane, lanes independent although their packets
        // share one `next` array, byte counts and lane bitmap in step.
        let mut ps = ports(3, 2);
        let (a, b) = (PortId(0), PortId(2));
        // slot 5000 is beyond the initial `next` size: it must grow
        for (i, (p, vl)) in [(a, 0), (b, 1), (a, 0), (a, 1), (b, 1), (a, 0)]
            .into_iter()
            .enumerate()
        {
            let pkt = PktIdx(if i == 3 { 5000 } else { i as u32 });
            ps.push(p, vl, pkt, 100 + i as u64, i as u64);
        }
        let lane_a0 = ps.lane(a, 0);
        assert_eq!(
            ps.queued(lane_a0).collect::<Vec<_>>(),
            vec![PktIdx(0), PktIdx(2), PktIdx(5)]
        );
        assert_eq!(ps.queued_bytes(lane_a0), 100 + 102 + 105);
        assert_eq!(
            ps.queued(ps.lane(a, 1)).collect::<Vec<_>>(),
            vec![PktIdx(5000)]
        );
        assert_eq!(
            ps.queued(ps.lane(b, 1)).collect::<Vec<_>>(),
            vec![PktIdx(1), PktIdx(4)]
        );
        assert_eq!(ps[a].lanes_queued, 0b11);
        assert_eq!(ps[a].qtotal, 100 + 102 + 103 + 105);
        ps.pop(a, 0, 100, 10);
        ps.pop(a, 1, 103, 10);
        assert_eq!(ps[a].lanes_queued, 0b01);
        assert_eq!(ps.head(lane_a0), Some(PktIdx(2)));
        // a popped slot is reused while the lane still holds others
        ps.push(a, 0, PktIdx(0), 7, 11);
        assert_eq!(
            ps.queued(lane_a0).collect::<Vec<_>>(),
            vec![PktIdx(2), PktIdx(5), PktIdx(0)]
        );
        for (pkt, w) in [(2, 102), (5, 105), (0, 7)] {
            assert_eq!(ps.head(lane_a0), Some(PktIdx(pkt)));
            ps.pop(a, 0, w, 12);
        }
        assert_eq!(ps.head(lane_a0), None);
        assert_eq!(ps.queued_bytes(lane_a0), 0);
        assert_eq!((ps[a].lanes_queued, ps[a].qtotal), (0, 0));
        assert_eq!(ps.queued(ps.lane(b, 1)).count(), 2, "port b untouched");
    }

    #[test]
    fn a_lane_ends_at_its_tail_whatever_the_tail_slot_s_next_holds() {
        // `push` leaves the new tail's `next` as it was (a link from the
        // slot's earlier life): the lane must end at `tail` regardless.
        let mut ps = ports(2, 1);
        let a = PortId(1);
        let qi = ps.lane(a, 0);
        ps.push(a, 0, PktIdx(3), 10, 0);
        ps.next[3] = PktIdx(9); // stale: packet 9 is queued nowhere
        assert_eq!(ps.queued(qi).collect::<Vec<_>>(), vec![PktIdx(3)]);
        ps.push(a, 0, PktIdx(4), 20, 1);
        ps.next[4] = PktIdx(3); // stale, and would make a cycle
        assert_eq!(
            ps.queued(qi).collect::<Vec<_>>(),
            vec![PktIdx(3), PktIdx(4)]
        );
        ps.pop(a, 0, 10, 2);
        assert_eq!(ps.head(qi), Some(PktIdx(4)));
        ps.pop(a, 0, 20, 3);
        assert_eq!(ps.head(qi), None, "popping the tail empties the lane");
        assert_eq!(
            (ps[a].lanes_queued, ps[a].qtotal, ps.queued_bytes(qi)),
            (0, 0, 0)
        );
        // and it fills again from empty
        ps.push(a, 0, PktIdx(4), 5, 4);
        assert_eq!(ps.queued(qi).collect::<Vec<_>>(), vec![PktIdx(4)]);
    }
}
