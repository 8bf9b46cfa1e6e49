//! The NIC transport: RDMA reliable-connection queue pairs and their loss
//! recovery (go-back-N by default; selective repeat, go-back-0).
//!
//! The transport keeps the queue pairs, their messages and the sender's
//! round-robin; what a loss or a congestion signal does is the business of the
//! policies it calls: [`super::recovery`] (the law of
//! [`PacketConfig::loss_recovery`](super::PacketConfig::loss_recovery)) and
//! [`super::cc`].
//!
//! **Queue pairs.** One per (source GPU, destination GPU), created when the
//! first transfer between them is posted; every transfer is one message, and a
//! pair's messages occupy consecutive PSNs in posting order (PSNs are 32-bit and
//! never wrap within a run; IB's are 24-bit, which only matters for wrap bugs).
//!
//! **Sender.** The source GPU's first link (PCIe towards the NIC, or NVLink
//! inside a host) pulls one packet at a time, round-robin over its queue pairs
//! that have data, are within their window ([`PacketConfig::window_bytes`], if
//! one is set) and
//! whose host path has the bytes ready: this is the NIC injecting at line rate
//! across active queue pairs without a source queue that could overflow. A
//! retransmission timer per pair ([`PacketConfig::rto`], doubling on consecutive
//! timeouts up to 64×, reset by progress) rewinds to the oldest unacknowledged
//! PSN (go-back-N). When several GPUs share one NIC, each GPU's PCIe link does
//! this round-robin for its own queue pairs and the NIC's uplink serves the
//! GPUs' packets first come, first served (its PCIe-side buffer is
//! credit-limited, so no GPU can flood it).
//!
//! **TCP path.** With [`LossRecovery::Tcp`](super::LossRecovery::Tcp) (the
//! default of a TCP scenario) the timer is the pair's own RFC 6298 estimate
//! instead of `rto`, the receiver answers a gap with duplicate ACKs instead
//! of a NACK and the sender fast-retransmits ([`super::recovery`]; with
//! [`PacketConfig::tcp_sack`](super::PacketConfig::tcp_sack) an ACK of an
//! out-of-order segment carries its SACK block in the packet's `sack_end` /
//! `sack_len`, and with [`PacketConfig::tcp_rack`](super::PacketConfig::tcp_rack)
//! the timer also runs RACK's reordering timer and TLP's probe); with [`PacketConfig::tcp_delayed_ack`](super::PacketConfig::tcp_delayed_ack)
//! the receiver ACKs every second segment or when its timer (a `DelAck`
//! event per queue pair, stale ones ignored) fires, except in Linux's
//! quick-ACK mode, where it ACKs every segment at once: the first
//! [`TCP_MAX_QUICKACKS`] ACKs of a connection (`tcp_incr_quickack`: rcv_wnd
//! / 2 MSS of them, at most 16, at least 2), again after an idle gap longer
//! than the RTO (`tcp_event_data_recv`) and after a duplicate segment
//! (`tcp_data_queue`: `tcp_enter_quickack_mode`), each ACK sent using one
//! up; under classic ECN (NewReno or CUBIC on a fabric that marks, RFC 3168)
//! a CE mark while no CWR is demanded grants 2 (`__tcp_ecn_check_ce`), so
//! the echo is not held by the timer, and a segment carrying CWR (the first
//! new one after the sender's window cut, `F_CWR`) is ACKed at once
//! (`tcp_ecn_accept_cwr`); with [`PacketConfig::tcp_dsack`](super::PacketConfig::tcp_dsack)
//! a duplicate segment's ACK carries a D-SACK block (RFC 2883). The CPU
//! cost is paid per TSO segment ([`PacketConfig::tcp_tso_bytes`](super::PacketConfig::tcp_tso_bytes)).
//!
//! **Receiver** (go-back-N; selective repeat, TCP and trimmed headers: see
//! [`super::recovery`]). Strict go-back-N under ECMP (a flow's packets follow one path, so
//! a gap means loss): an out-of-order packet is discarded and the first one of a
//! gap triggers one NACK carrying the expected PSN; the sender rewinds to it.
//! Under adaptive, flowlet or spray routing, reordering is normal: the receiver
//! keeps a bitmap of the PSNs received beyond the expected one (at most one
//! window), never NACKs, and loss is left to the timeout. Either way ACKs are
//! cumulative (expected PSN), sent every [`PacketConfig::ack_every`] packets
//! (duplicates included, so a lost ACK is repaired), when a packet fills a gap,
//! and when a message completes, on the highest virtual lane.
//!
//! [`PacketConfig::window_bytes`]: super::PacketConfig::window_bytes
//! [`PacketConfig::rto`]: super::PacketConfig::rto
//! [`PacketConfig::ack_every`]: super::PacketConfig::ack_every

use super::cc::{AckInfo, CcState, QpStart};
use std::collections::HashMap;

use super::engine::Event;
use super::flow_control::Gate;
use super::ids::{IdVec, PktIdx, PortId, QpId};
use super::recovery::{
    Feedback, GoBack0, GoBackN, Recovery, RxVerdict, SelectiveRepeat, SendSeq, TcpRecovery,
    TimerEffect, SACK_BLOCKS, TCP_MAX_QUICKACKS,
};
use super::sim::Sim;
use super::slab::{Packet, PktKind, F_CWR, F_DSACK, F_ECN, F_SACK, F_TRIMMED, NONE};
use super::switch::NEVER;
use super::{HostPath, LossRecovery, PacketError, Routing, Transport};
use crate::topology::{GpuId, LinkId, LinkKind};

/// One message (transfer) on a queue pair.
#[derive(Clone, Copy, Debug)]
pub struct Msg {
    /// The transfer task.
    pub task: u32,
    /// First PSN.
    pub start_psn: u32,
    /// Number of packets (at least 1; a 0-byte transfer sends one header-only packet).
    pub npkts: u32,
    /// Payload bytes.
    pub bytes: u64,
    /// When it was posted, ps.
    pub post: u64,
}

impl Msg {
    /// One past the last PSN.
    #[inline]
    pub fn end(&self) -> u32 {
        self.start_psn + self.npkts
    }
}

/// "No message": [`QpTx::send_msg`] when the send cursor is past the last
/// message posted.
pub const NO_MSG: u32 = u32::MAX;

/// A queue pair's sender-side state that every data packet and every ACK
/// touches, in one cache line (the hot half of the pair; [`Qp`] holds the
/// rest).
///
/// Measured (callgrind with a 2 MiB last-level cache = this machine's L2,
/// 1,024-host permutation bench): the pair's per-packet fields were spread
/// over the 608-byte `Qp` record, in five to six cache lines; the transport's
/// loads were ~7% of the run's L1 misses. Here the sender's fields share one
/// line, the receiver's another ([`QpRx`]), the loss-recovery state a third.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct QpTx {
    /// The sender's sequence space (`seq.posted`: one past the last PSN posted).
    pub seq: SendSeq,
    /// Window of outstanding packets (the configured window, or DCTCP's cwnd).
    pub wnd: u32,
    /// Index in `QueuePairs::msgs` of the message at `send_cursor`, or
    /// [`NO_MSG`]: a copy that spares each packet the pair's message list.
    pub send_msg: u32,
    /// Index in the pair's message list of the message holding `snd_nxt`.
    pub send_cursor: u32,
    /// Index in the pair's message list of the first message not fully
    /// acknowledged.
    pub una_cursor: u32,
    /// Destination GPU.
    pub dst: u32,
    /// First link from the source GPU towards `dst` (the port that pulls data).
    pub port: PortId,
    /// Wire size of its last data packet, bytes (0: none sent yet, unpaced).
    pub last_wire: u32,
    /// Start of its last data packet, ps: the law's pacing counts from it.
    pub last_tx: u64,
    /// The lane its data rides (its traffic class's; 0 without classes).
    pub lane: u8,
    /// In its port's round-robin ring.
    pub in_ring: bool,
    /// The sender runs its congestion-control law: the pair crosses the
    /// network (not NVLink) and the run's law is not `none` (whose every
    /// reaction is nothing, so its pairs skip the calls and the law's state).
    pub cc_on: bool,
    /// TCP: the next new segment carries CWR ([`F_CWR`]): the window was
    /// reduced since the last one (Linux's `TCP_ECN_QUEUE_CWR`).
    pub queue_cwr: bool,
}

/// A queue pair's receiver-side state that every data packet touches, in one
/// cache line (see [`QpTx`]).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct QpRx {
    /// One past the last PSN of the message at `rcv_cursor`, or `u32::MAX`
    /// when every posted message is complete: a copy that spares each packet
    /// the pair's message list.
    pub rcv_end: u32,
    /// Index in the pair's message list of the first incomplete message.
    pub rcv_cursor: u32,
    /// Packets since the last ACK.
    pub since_ack: u32,
    /// Source GPU (where ACKs go).
    pub src: u32,
    /// First link from the destination GPU towards `src` (where ACKs start).
    pub ack_port: PortId,
    /// TCP under delayed ACK: ACKs left to send at once, Linux's quick-ACK
    /// mode (`icsk_ack.quick`).
    pub quick_acks: u32,
    /// TCP with a delayed-ACK timer: the timer's deadline, or [`NEVER`] when
    /// no ACK is being delayed.
    pub delack_at: u64,
    /// When the last in-order data packet arrived, ps ([`NEVER`]: none yet;
    /// Linux's `icsk_ack.lrcvtime`).
    pub last_rcv: u64,
    /// The last data packet carried a CE mark (DCTCP's ECN echo under
    /// delayed ACK, RFC 8257 §3.2).
    pub last_ce: bool,
    /// Classic ECN (RFC 3168): a CE mark was seen and no CWR since (Linux's
    /// `TCP_ECN_DEMAND_CWR`); a CE while it is clear enters quick-ACK mode.
    pub demand_cwr: bool,
    /// The run's congestion-control law is not `none`: the receiver's calls
    /// into the law (`on_data`, `take_ce_echo`) do something.
    pub cc_law: bool,
}

/// The loss-recovery state of one pair, starting on a cache line: go-back-N's
/// fields (all a packet touches) then share one line with the enum's tag.
#[repr(align(64))]
#[derive(Clone, Debug)]
struct RecSlot(Recovery);

/// A reliable-connection queue pair: its cold half (setup, statistics, the
/// congestion-control law's state, rare paths). The per-packet state is in
/// [`QpTx`], [`QpRx`] and the pair's `Recovery`, in arrays of their own.
#[derive(Clone, Debug)]
pub struct Qp {
    /// Source GPU.
    pub src: u32,
    /// Destination GPU.
    pub dst: u32,
    /// Flow hash for ECMP.
    pub hash: u64,
    /// Messages, posting order (indices into `QueuePairs::msgs`).
    pub msgs: Vec<u32>,
    /// A wake-up is scheduled at this time (host-path pacing), or [`NEVER`].
    pub wake_at: u64,
    /// TCP path: when the CPU has the next packet ready, ps.
    pub cpu_ready: u64,
    /// TCP path with TSO: payload bytes of the current TSO segment sent so far.
    pub tso_used: u64,
    /// Congestion-control state of the configured law, both ends.
    pub cc: CcState,
    /// A `CcTimer` event is scheduled at this time for the law's timers, or [`NEVER`].
    pub cc_timer_at: u64,
    /// Payload bytes posted.
    pub bytes_posted: u64,
    /// Data packets sent more than once.
    pub retransmitted: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
}

/// Every queue pair and every message, owned by the transport: the pairs
/// (indexed by [`QpId`]), the lookup from (source GPU, destination GPU,
/// channel) to a pair, and the messages the pairs' `msgs` lists point into.
///
/// The fields are private to the transport (this file): other handlers read
/// a pair through `Index<QpId>` (routing hashes it) and the results iterate
/// them; only the transport creates pairs and posts messages.
#[derive(Default)]
pub struct QueuePairs {
    /// Cold halves.
    pairs: IdVec<QpId, Qp>,
    /// Sender-side hot state, one cache line per pair.
    tx: IdVec<QpId, QpTx>,
    /// Receiver-side hot state, one cache line per pair.
    rx: IdVec<QpId, QpRx>,
    /// Loss-recovery state, both ends.
    recs: IdVec<QpId, RecSlot>,
    /// Per pair: its ECMP flow hash (a copy of `Qp::hash`, which never
    /// changes). ECMP reads it at every switch hop; a `Qp` record is ~600
    /// bytes, so reading the hash there cost a cache miss per hop at 1,024
    /// hosts (perf annotate: a third of `pick_next_hop`'s samples), where
    /// this array is 8 bytes per pair.
    hashes: IdVec<QpId, u64>,
    index: HashMap<(u32, u32, u8, u8), QpId>,
    msgs: Vec<Msg>,
}

impl QueuePairs {
    /// Pair `q`'s ECMP flow hash (`Qp::hash`), from the compact array.
    #[inline(always)]
    pub fn hash(&self, q: QpId) -> u64 {
        self.hashes[q]
    }

    /// The pairs in creation order.
    pub fn iter(&self) -> std::slice::Iter<'_, Qp> {
        self.pairs.iter()
    }

    /// Pair `q` has something to send: new data, or (selective repeat) a
    /// hole to fill.
    #[inline]
    fn has_work(&self, q: QpId) -> bool {
        let tx = &self.tx[q];
        self.recs[q].0.next_psn(&tx.seq) < tx.seq.posted
    }

    /// The index in `msgs` of pair `q`'s message number `cursor`, or [`NO_MSG`].
    #[inline]
    fn msg_at(&self, q: QpId, cursor: u32) -> u32 {
        self.pairs[q]
            .msgs
            .get(cursor as usize)
            .copied()
            .unwrap_or(NO_MSG)
    }

    /// One past the last PSN of pair `q`'s message number `cursor`, or
    /// `u32::MAX` when there is none.
    #[inline]
    fn end_at(&self, q: QpId, cursor: u32) -> u32 {
        match self.msg_at(q, cursor) {
            NO_MSG => u32::MAX,
            m => self.msgs[m as usize].end(),
        }
    }
}

/// Bytes of one queue pair's records (cold half, sender and receiver lines,
/// loss-recovery slot, ECMP hash), besides its message list.
pub const QP_BYTES: usize = std::mem::size_of::<Qp>()
    + std::mem::size_of::<QpTx>()
    + std::mem::size_of::<QpRx>()
    + std::mem::size_of::<RecSlot>()
    + std::mem::size_of::<u64>();

impl std::ops::Index<QpId> for QueuePairs {
    type Output = Qp;
    #[inline(always)]
    fn index(&self, q: QpId) -> &Qp {
        &self.pairs[q]
    }
}

/// What a source port got from its queue pairs.
pub enum Pull {
    /// A packet to transmit now, and the task whose `Sent` its end completes (or NONE).
    Packet(PktIdx, u32),
    /// A queue pair is ready but the link lacks credits on these lanes (bit mask).
    NoCredit(u32),
    /// Nothing can be sent now.
    Nothing,
}

impl Sim<'_> {
    /// Posts transfer `task` of `bytes` from GPU `src` to GPU `dst`.
    pub(super) fn post(
        &mut self,
        task: u32,
        src: u32,
        dst: u32,
        bytes: u64,
    ) -> Result<(), PacketError> {
        let t = self.dag.task(task as usize);
        let qp = t.qp;
        // a transfer naming no class rides the workload's
        let lane = match t.class {
            0 => self.sched.data_lane,
            c => c - 1,
        };
        let qpi = match self.qps.index.get(&(src, dst, qp, lane)) {
            Some(&q) => q,
            None => self.new_qp(task, src, dst, qp, lane)?,
        };
        let mtu = self.cfg.mtu as u64;
        let npkts = bytes.div_ceil(mtu).max(1) as u32;
        let m = self.qps.msgs.len() as u32;
        let idle = !self.qps.has_work(qpi);
        let tx = &mut self.qps.tx[qpi];
        let start_psn = tx.seq.posted;
        self.qps.msgs.push(Msg {
            task,
            start_psn,
            npkts,
            bytes,
            post: self.now,
        });
        tx.seq.posted += npkts;
        let qp = &mut self.qps.pairs[qpi];
        qp.msgs.push(m);
        qp.bytes_posted += bytes;
        let last = qp.msgs.len() as u32 - 1;
        if idle {
            // The cursor may have run past the end; point it at the new message.
            tx.send_cursor = last;
        }
        // the copies of the cursors' messages follow a cursor that was past
        // the end and now points at the new message
        if tx.send_cursor == last {
            tx.send_msg = m;
        }
        let rx = &mut self.qps.rx[qpi];
        if rx.rcv_cursor == last {
            rx.rcv_end = start_psn + npkts;
        }
        self.counters.posted(bytes);
        if idle {
            if let Transport::Tcp {
                per_packet_overhead,
                jitter,
            } = self.cfg.transport
            {
                let j = if jitter.0 > 0 {
                    // drawn by the sending host
                    let node = self.topo.gpus[src as usize].node.0;
                    self.rand_below(node, jitter.0)
                } else {
                    0
                };
                let qp = &mut self.qps.pairs[qpi];
                qp.cpu_ready = qp.cpu_ready.max(self.now + per_packet_overhead.0 + j);
            }
        }
        self.activate(qpi);
        Ok(())
    }

    fn new_qp(
        &mut self,
        task: u32,
        src: u32,
        dst: u32,
        qp: u8,
        lane: u8,
    ) -> Result<QpId, PacketError> {
        let unreachable = PacketError::Unreachable { task, src, dst };
        let mut hops: Vec<LinkId> = Vec::new();
        self.topo
            .next_hops(self.topo.gpus[src as usize].node, GpuId(dst), &mut hops);
        let port = PortId::from(*hops.first().ok_or(unreachable.clone())?);
        let mut path = Vec::new();
        if !self.topo.route(GpuId(src), GpuId(dst), 0, &mut path)
            || !self.topo.route(GpuId(dst), GpuId(src), 0, &mut path)
        {
            return Err(unreachable);
        }
        hops.clear();
        self.topo
            .next_hops(self.topo.gpus[dst as usize].node, GpuId(src), &mut hops);
        let ack_port = PortId::from(*hops.first().ok_or(unreachable)?);
        let base_rtt = self.base_rtt(src, dst);
        let hash = crate::topology::qp_hash(self.cfg.seed, src, dst, qp);
        self.qps.hashes.push(hash);
        let rec = match self.cfg.loss_recovery {
            LossRecovery::GoBackN => Recovery::GoBackN(GoBackN::new(self.window_pkts, self.ooo)),
            LossRecovery::SelectiveRepeat => Recovery::SelectiveRepeat(SelectiveRepeat::new(
                self.window_pkts,
                self.ooo,
                self.cfg.rto_low.0,
            )),
            LossRecovery::GoBack0 => Recovery::GoBack0(GoBack0::new(self.window_pkts, self.ooo)),
            LossRecovery::Tcp => {
                let mut t = TcpRecovery::new(
                    self.window_pkts,
                    base_rtt,
                    self.cfg.tcp_min_rto.0,
                    self.cfg.tcp_max_rto.0,
                    self.cfg.tcp_sack,
                    self.cfg.tcp_rack,
                );
                t.dsack = self.cfg.tcp_sack && self.cfg.tcp_dsack;
                Recovery::Tcp(t)
            }
        };
        // a law whose every reaction is nothing is not run (`QpTx::cc_on`)
        let cc_law = !matches!(self.cfg.cc, super::CongestionControl::None);
        let cc_on = cc_law && self.topo.links[port.idx()].kind != LinkKind::NvLink;
        let qpi = self.qps.pairs.push(Qp {
            src,
            dst,
            hash,
            msgs: Vec::new(),
            wake_at: NEVER,
            cpu_ready: 0,
            tso_used: 0,
            cc: CcState::None(super::cc::NoCc),
            cc_timer_at: NEVER,
            bytes_posted: 0,
            retransmitted: 0,
            timeouts: 0,
        });
        self.qps.tx.push(QpTx {
            seq: SendSeq::default(),
            wnd: self.window_pkts,
            send_msg: NO_MSG,
            send_cursor: 0,
            una_cursor: 0,
            dst,
            port,
            last_wire: 0,
            last_tx: 0,
            lane,
            in_ring: false,
            cc_on,
            queue_cwr: false,
        });
        self.qps.rx.push(QpRx {
            rcv_end: u32::MAX,
            rcv_cursor: 0,
            since_ack: 0,
            src,
            ack_port,
            quick_acks: 0,
            delack_at: NEVER,
            last_rcv: NEVER,
            last_ce: false,
            demand_cwr: false,
            cc_law,
        });
        self.qps.recs.push(RecSlot(rec));
        let line = self
            .topo
            .nic_of_node(self.topo.gpus[src as usize].nic)
            .map(|n| self.topo.links[n.uplink.0 as usize].rate)
            .unwrap_or(self.topo.links[port.idx()].rate);
        let now = self.now;
        let qpair = qp;
        let qp = &mut self.qps.pairs[qpi];
        qp.cc = CcState::new(
            &self.cfg.cc,
            &QpStart {
                line,
                max_pkts: self.window_pkts,
                now,
                base_rtt,
                mtu: self.cfg.mtu,
            },
        );
        if cc_on {
            if let Some(w) = qp.cc.window() {
                self.qps.tx[qpi].wnd = w;
            }
        }
        if self.cfg.routing == Routing::Flowlet {
            self.flowlets.add_qp();
        }
        self.qps.index.insert((src, dst, qpair, lane), qpi);
        if let Some(p) = &mut self.q.parts {
            p.add_qp(qpi, src, dst);
        }
        Ok(qpi)
    }

    /// Round trip of one full data packet from GPU `src` to `dst` and its ACK
    /// back on the idle fabric, ps: propagation and forwarding on both paths
    /// (ECMP choice 0; equal-cost paths have the same length) and store-and-
    /// forward serialization of the packet and the ACK at every hop.
    pub(super) fn base_rtt(&self, src: u32, dst: u32) -> u64 {
        let mut path = Vec::new();
        let mut one_way = |from: u32, to: u32, wire: u64| {
            super::sim::idle_one_way(&self.topo, from, to, wire, &mut path).unwrap_or(0)
        };
        let data = (self.cfg.mtu + self.cfg.header_bytes) as u64;
        one_way(src, dst, data) + one_way(dst, src, self.cfg.ack_bytes as u64)
    }

    /// Puts a queue pair with work in its port's ring and kicks the port.
    fn activate(&mut self, qpi: QpId) {
        if self.qps.tx[qpi].in_ring || !self.qps.has_work(qpi) {
            return;
        }
        let tx = &mut self.qps.tx[qpi];
        tx.in_ring = true;
        let port = tx.port;
        self.ports[port].ring_push_back(qpi);
        self.try_send(port);
    }

    /// Source port `p` is idle: builds the next data packet, round-robin over its
    /// queue pairs. Pairs that cannot send (window full, bytes not yet staged) leave
    /// the ring and come back on an ACK or a wake-up.
    pub(super) fn pull_data(&mut self, p: PortId) -> Pull {
        let n = self.ports[p].ring.len();
        let mtu = self.cfg.mtu as u64;
        // with classes, a pair whose lane lacks credits lets the others go
        let mut starved = 0u32;
        for _ in 0..n {
            let Some(qpi) = self.ports[p].ring.pop_front() else {
                break;
            };
            let tx = &self.qps.tx[qpi];
            let rec = &self.qps.recs[qpi].0;
            let snd_nxt = rec.next_psn(&tx.seq);
            // `nxt`, or a hole selective repeat fills first: the window bounds
            // new data only (a hole below it must go out for `una` to move).
            // Go-back-0 may resend below `una`, hence the saturation.
            let in_line = snd_nxt == tx.seq.nxt;
            // (`snd_nxt < posted`: the pair has work)
            if snd_nxt >= tx.seq.posted || rec.blocked(&tx.seq, snd_nxt, tx.wnd) {
                self.qps.tx[qpi].in_ring = false;
                continue;
            }
            let mi = if in_line {
                tx.send_msg
            } else {
                self.msg_holding(qpi, snd_nxt)
            };
            let m = self.qps.msgs[mi as usize];
            let tx = &self.qps.tx[qpi];
            let (qp_dst, lane, cc_on) = (tx.dst, tx.lane, tx.cc_on);
            // a delay-based law's send time rides in the informational hash
            let echo = if cc_on {
                self.qps.pairs[qpi].cc.stamp(self.now)
            } else {
                None
            };
            let idx = snd_nxt - m.start_psn;
            let off = idx as u64 * mtu;
            let payload = mtu.min(m.bytes - off.min(m.bytes));
            let first = snd_nxt >= tx.seq.max;
            let mut ready_at = 0;
            if first {
                if let HostPath::HostStaged {
                    copy_rate,
                    copy_latency,
                } = self.cfg.host_path
                {
                    ready_at = m.post + copy_latency.0 + copy_rate.tx_time(off + payload).0;
                }
            }
            // the CPU gates a TSO segment's first packet (every packet without TSO)
            if matches!(self.cfg.transport, Transport::Tcp { .. }) {
                let qp = &self.qps.pairs[qpi];
                if qp.tso_used == 0 {
                    ready_at = ready_at.max(qp.cpu_ready);
                }
            }
            if cc_on && tx.last_wire > 0 {
                // Pacing by the congestion control at its rate as it is now
                // (a gap of 0 when not rate-controlled)
                let gap = self.qps.pairs[qpi]
                    .cc
                    .pace_gap(&self.cfg.cc, tx.last_wire as u64);
                ready_at = ready_at.max(tx.last_tx.saturating_add(gap));
            }
            if ready_at > self.now {
                self.qps.tx[qpi].in_ring = false;
                let qp = &mut self.qps.pairs[qpi];
                if qp.wake_at == NEVER || qp.wake_at > ready_at || qp.wake_at < self.now {
                    qp.wake_at = ready_at;
                    self.q.push(ready_at, Event::QpWake { qp: qpi });
                }
                continue;
            }
            let wire = (payload + self.cfg.header_bytes as u64) as u32;
            let law = self.ports[p].fc;
            let gate = self.fc_gate(p, p.lane(lane, self.vls), law, |_| wire);
            if gate == Gate::Paused {
                // (a GPU on a PFC link, which no built topology has): the
                // RESUME kicks the port
                if !self.sched.on {
                    self.ports[p].ring_push_front(qpi);
                    return Pull::Nothing;
                }
                self.ports[p].ring_push_back(qpi);
                continue;
            }
            if gate == Gate::Starved {
                if !self.sched.on {
                    self.ports[p].ring_push_front(qpi);
                    return Pull::NoCredit(1);
                }
                self.ports[p].ring_push_back(qpi);
                starved |= 1 << lane;
                continue;
            }
            let last = idx + 1 == m.npkts;
            // CWR rides the first new segment after a window reduction
            // (Linux's `tcp_ecn_send`: new data only, not a retransmission)
            let cwr = first && self.qps.tx[qpi].queue_cwr;
            if cwr {
                self.qps.tx[qpi].queue_cwr = false;
            }
            let pkt = self.pkts.alloc(Packet {
                qp: qpi,
                psn: snd_nxt,
                wire,
                hash: echo.unwrap_or(self.qps.hashes[qpi] as u32),
                link: PortId::NONE,
                epoch: 0,
                dst: qp_dst,
                kind: PktKind::Data,
                vl: lane,
                flags: if cwr { F_CWR } else { 0 },
                sack_end: 0,
                sack_len: 0,
            });
            self.counters.data_sent();
            if !first {
                self.qps.pairs[qpi].retransmitted += 1;
            }
            // TSO: the CPU pays its cost once per segment of `tcp_tso_bytes`
            // (the NIC cuts it into packets; a message's end ends one). When
            // a segment's first packet leaves, the CPU starts on the next
            // segment, which is ready a cost later (without TSO every packet
            // is a segment, the cost is per packet)
            let tso = self.cfg.tcp_tso_bytes;
            let cpu_cost = match self.cfg.transport {
                Transport::Tcp {
                    per_packet_overhead,
                    jitter,
                } => {
                    let qp = &mut self.qps.pairs[qpi];
                    let seg_start = qp.tso_used == 0;
                    qp.tso_used += payload;
                    if tso == 0 || last || qp.tso_used >= tso {
                        qp.tso_used = 0;
                    }
                    seg_start.then(|| {
                        per_packet_overhead.0
                            + if jitter.0 > 0 {
                                // drawn by the NIC's host, port `p`'s sender
                                let node = self.ports[p].from;
                                self.rand_below(node, jitter.0)
                            } else {
                                0
                            }
                    })
                }
                // RDMA: no CPU in the path (`tso_used` and `cpu_ready` are
                // the TCP path's; the pair's cold half stays untouched)
                Transport::Rdma => None,
            };
            let now = self.now;
            let rto = self.cfg.rto.0;
            let QueuePairs {
                pairs, tx, recs, ..
            } = &mut self.qps;
            let (qp, tx) = (&mut pairs[qpi], &mut tx[qpi]);
            if tx.cc_on {
                qp.cc.on_send(&self.cfg.cc, now, wire as u64);
                tx.last_tx = now;
                tx.last_wire = wire;
            }
            let rec = &mut recs[qpi].0;
            let timer = rec.on_send(&tx.seq, snd_nxt, now, rto);
            if in_line {
                tx.seq.nxt += 1;
                tx.seq.max = tx.seq.max.max(tx.seq.nxt);
                if last {
                    tx.send_cursor += 1;
                    tx.send_msg = qp
                        .msgs
                        .get(tx.send_cursor as usize)
                        .copied()
                        .unwrap_or(NO_MSG);
                }
            }
            if let Some(c) = cpu_cost {
                qp.cpu_ready = now + c;
            }
            let has_work = rec.next_psn(&tx.seq) < tx.seq.posted;
            if !has_work {
                tx.in_ring = false;
            }
            if let Some(at) = timer {
                self.q.push(at, Event::Rto { qp: qpi });
            }
            if has_work {
                self.ports[p].ring_push_back(qpi);
            }
            // The first transmission of a message's last packet completes `Dep::Sent`
            // when its last bit leaves this link.
            let sent_task = if first && last { m.task } else { NONE };
            return Pull::Packet(pkt, sent_task);
        }
        if starved != 0 {
            Pull::NoCredit(starved)
        } else {
            Pull::Nothing
        }
    }

    /// A packet reached its destination GPU.
    pub(super) fn deliver(&mut self, pkt: PktIdx) {
        let k = self.pkts[pkt];
        if k.kind == PktKind::Ack && k.flags & F_DSACK != 0 {
            // the regular SACK blocks after the D-SACK block, to the
            // recovery that takes them with this ACK
            let x = self.pkts.sack_extra(pkt);
            if let Recovery::Tcp(t) = &mut self.qps.recs[k.qp].0 {
                t.ack_extra = x;
            }
        }
        self.pkts.free(pkt);
        match k.kind {
            PktKind::Data => self.receive_data(&k),
            PktKind::Ack | PktKind::Nack => {
                self.counters.ctrl_received();
                // a selective or trimmed NACK carries a PSN where others
                // carry DCTCP's CE count
                let (fb, ce) = match k.kind {
                    PktKind::Ack if k.flags & F_DSACK != 0 => {
                        // the block's end, signed from the cumulative PSN
                        let hi = k.psn.wrapping_add(k.sack_end as i16 as i32 as u32);
                        (Feedback::Dsack(hi - k.sack_len as u32, hi), k.hash)
                    }
                    PktKind::Ack if k.sack_len > 0 => {
                        let hi = k.psn + k.sack_end as u32;
                        (Feedback::AckBlock(hi - k.sack_len as u32, hi), k.hash)
                    }
                    PktKind::Ack => (Feedback::Ack, k.hash),
                    _ if k.flags & F_SACK != 0 => (Feedback::Sack(k.hash), 0),
                    _ if k.flags & F_TRIMMED != 0 => (Feedback::Trimmed(k.hash), 0),
                    _ => (Feedback::Nack, k.hash),
                };
                self.on_ack(k.qp, k.psn, fb, ce);
            }
            PktKind::Cnp => {
                self.counters.ctrl_received();
                let now = self.now;
                self.counters.cnp_at_sender(now);
                if self.qps.tx[k.qp].cc_on {
                    if self.qps.pairs[k.qp].cc.on_cnp(&self.cfg.cc, now) {
                        self.counters.rate_cut(now);
                    }
                    self.arm_cc_timer(k.qp);
                    self.repace(k.qp);
                }
            }
        }
    }

    fn receive_data(&mut self, k: &Packet) {
        let qpi = k.qp;
        if k.flags & F_ECN != 0 && self.qps.pairs[qpi].cc.on_ce(&self.cfg.cc, self.now) {
            self.counters.cnp();
            self.send_ctrl(k.qp, PktKind::Cnp, k.psn, 0, 0);
        }
        if k.flags & F_TRIMMED != 0 {
            self.receive_trimmed(k);
            return;
        }
        let delack = self.delayed_ack();
        let now = self.now;
        let rx = &mut self.qps.rx[qpi];
        if rx.cc_law {
            self.qps.pairs[qpi].cc.on_data(k.hash);
        }
        // DCTCP under delayed ACK: a change of the CE state is ACKed at once
        // (RFC 8257 §3.2), so the echo stays exact per segment run
        let ce = k.flags & F_ECN != 0;
        // classic ECN (RFC 3168): NewReno and CUBIC answer the echo, on a
        // fabric that marks (where a connection would negotiate ECN; without
        // it Linux sets no CWR and its receiver ignores the bits)
        let classic_ecn = matches!(
            self.cfg.cc,
            super::CongestionControl::NewReno { .. } | super::CongestionControl::Cubic { .. }
        ) && delack > 0
            && self.sched.ecn.iter().any(Option::is_some);
        let ce_changed = ce != rx.last_ce;
        rx.last_ce = ce;
        let rec = &mut self.qps.recs[qpi].0;
        let epsn_before = rec.expected();
        let mut ack_now = false;
        let mut in_order = false;
        // TCP's receiver holding segments beyond a gap ACKs an arrival that
        // fills all or part of it at once (RFC 5681 §4.2)
        let had_gap = matches!(&rec, Recovery::Tcp(t) if t.ooo_held > 0);
        let accepted = match rec.on_data(k.psn) {
            RxVerdict::Accepted => {
                in_order = true;
                true
            }
            RxVerdict::AcceptedAck => {
                ack_now = true;
                true
            }
            RxVerdict::DuplicateAck => {
                self.counters.data_duplicate();
                ack_now = true;
                false
            }
            RxVerdict::AcceptedNack => {
                // IRN: every out-of-order arrival is NACKed with the
                // cumulative ACK and its own PSN (which it acknowledges)
                self.counters
                    .data_accepted((k.wire - self.cfg.header_bytes) as u64, k.vl);
                self.qps.rx[qpi].since_ack = 0;
                let e = self.qps.recs[qpi].0.expected();
                self.send_ctrl(k.qp, PktKind::Nack, e, k.psn, F_SACK);
                return;
            }
            RxVerdict::Duplicate => {
                self.counters.data_duplicate();
                false
            }
            RxVerdict::Discarded(nack) => {
                self.counters.data_out_of_order();
                if let Some(e) = nack {
                    let ce = self.ce_echo(qpi);
                    self.send_ctrl(k.qp, PktKind::Nack, e, ce, 0);
                }
                return;
            }
        };
        if accepted {
            self.counters
                .data_accepted((k.wire - self.cfg.header_bytes) as u64, k.vl);
        }
        if delack > 0 {
            // Linux's quick-ACK mode: the first data of a connection (slow
            // start grows the window per ACK: a held ACK holds it) and data
            // after an idle gap longer than the RTO (`tcp_event_data_recv`:
            // the sender may be restarting its window), and a duplicate
            // segment (`tcp_data_queue`: the sender is retransmitting) grant
            // up to 16 ACKs sent at once (`tcp_incr_quickack`: rcv_wnd /
            // 2 MSS of them, at least 2)
            let rx = &mut self.qps.rx[qpi];
            if let Recovery::Tcp(t) = &self.qps.recs[qpi].0 {
                if classic_ecn {
                    // Linux's `tcp_ecn_accept_cwr`: the sender reduced its
                    // window (it may be down to one segment): ACK at once,
                    // and stop demanding a CWR
                    if k.flags & F_CWR != 0 {
                        rx.demand_cwr = false;
                        ack_now = true;
                    }
                    // `__tcp_ecn_check_ce`: a CE mark while no CWR is
                    // demanded enters quick-ACK mode for 2 ACKs
                    // (`tcp_enter_quickack_mode(sk, 2)`: "better not delay
                    // acks, sender can have a very low cwnd"), so the ECE
                    // reaches the sender without the delayed-ACK wait
                    if ce && !rx.demand_cwr {
                        rx.demand_cwr = true;
                        let grant = match t.rwnd / 2 {
                            0 => 2,
                            q => q.min(2),
                        };
                        rx.quick_acks = rx.quick_acks.max(grant);
                    }
                }
                let dup = ack_now && !accepted;
                let idle = rx.last_rcv == NEVER || now.saturating_sub(rx.last_rcv) > t.est.rto();
                if dup || (in_order && idle) {
                    let grant = match t.rwnd / 2 {
                        0 => 2,
                        q => q,
                    };
                    rx.quick_acks = rx.quick_acks.max(grant.min(TCP_MAX_QUICKACKS));
                }
                if in_order {
                    rx.last_rcv = now;
                }
            }
        }
        self.qps.rx[qpi].since_ack += 1;
        let mut completed = false;
        // `rcv_end` (u32::MAX without a message) spares the message list
        // until the expected PSN passes a message's end
        while self.qps.recs[qpi].0.expected() >= self.qps.rx[qpi].rcv_end {
            let rx = &mut self.qps.rx[qpi];
            let mi = self.qps.pairs[qpi].msgs[rx.rcv_cursor as usize];
            let m = self.qps.msgs[mi as usize];
            rx.rcv_cursor += 1;
            let cursor = rx.rcv_cursor;
            self.qps.rx[qpi].rcv_end = self.qps.end_at(qpi, cursor);
            completed = true;
            // the receiver's software (a collective's per-step cost) sees it later
            let software = self.dag.software_latency(crate::dag::TaskId(m.task));
            if software > crate::units::SimTime::ZERO {
                // (the receiver's node: this queue pair's destination GPU)
                let node = self.topo.gpus[self.qps.pairs[qpi].dst as usize].node.0;
                self.q.push(
                    self.now + software.0,
                    super::engine::Event::TaskDone { task: m.task, node },
                );
            } else {
                self.task_done(m.task);
            }
        }
        let every = if delack > 0 {
            // RFC 5681 §4.2: an ACK for at least every second full-sized segment
            2
        } else {
            CcState::ack_every(&self.cfg.cc, self.cfg.ack_every)
        };
        let dctcp = matches!(self.cfg.cc, super::CongestionControl::Dctcp { .. });
        let rx = &mut self.qps.rx[qpi];
        let rec = &self.qps.recs[qpi].0;
        // A packet that fills a gap (the expected PSN jumps past packets that
        // arrived early) is ACKed at once, as TCP does (RFC 5681 §4.2): the
        // sender may be stopped by its window on exactly those PSNs, and no
        // further packet would come to trigger a coalesced ACK. A completed
        // message is ACKed at once too, except under TCP's delayed ACK, whose
        // receiver knows no message boundaries (its timer ACKs a last lone
        // segment).
        let filled_gap = rec.expected() > epsn_before + 1;
        if (completed && delack == 0)
            || filled_gap
            || (had_gap && accepted)
            || ack_now
            || (dctcp && delack > 0 && ce_changed)
            || (delack > 0 && rx.quick_acks > 0)
            || rx.since_ack >= every
        {
            rx.since_ack = 0;
            rx.delack_at = NEVER;
            let e = rec.expected();
            let ce = self.ce_echo(qpi);
            // SACK (RFC 2018): an ACK of an out-of-order segment carries the
            // block that holds it, as offsets from the cumulative PSN; that
            // of a duplicate its D-SACK block (RFC 2883), whose end may lie
            // below the cumulative PSN (a signed offset), and after it the
            // regular blocks (RFC 2883 §4), which ride beside the packet
            // (`Slab::set_sack_extra`). An ordinary ACK carries its first
            // block only: the ones a real option repeats matter when an ACK
            // is lost (the module doc of `recovery::tcp`).
            let mut extra = None;
            let (block, flags) = match &mut self.qps.recs[qpi].0 {
                Recovery::Tcp(t) if self.cfg.tcp_sack && ack_now => {
                    let o = t.sack_option(k.psn, !accepted);
                    match o.as_slice().first() {
                        Some(&(lo, hi)) if o.dsack => {
                            match i16::try_from(i64::from(hi) - i64::from(e)) {
                                Ok(off) => {
                                    let mut x = [(0, 0); SACK_BLOCKS - 1];
                                    x[..o.as_slice().len() - 1].copy_from_slice(&o.as_slice()[1..]);
                                    extra = Some(x);
                                    ((off as u16, (hi - lo) as u8), F_DSACK)
                                }
                                Err(_) => ((0, 0), 0),
                            }
                        }
                        Some(&(lo, hi)) => (((hi - e) as u16, (hi - lo) as u8), 0),
                        None => ((0, 0), 0),
                    }
                }
                _ => ((0, 0), 0),
            };
            let ack = self.send_ctrl_sack(k.qp, PktKind::Ack, e, ce, flags, block);
            if let Some(x) = extra {
                self.pkts.set_sack_extra(ack, x);
            }
        } else if delack > 0 && rx.delack_at == NEVER {
            // the first segment left unacknowledged starts the timer
            rx.delack_at = now + delack;
            self.q.push(now + delack, Event::DelAck { qp: qpi });
        }
    }

    /// The receivers' delayed-ACK timer, ps: `tcp_delayed_ack` under TCP's
    /// loss recovery, 0 (off) otherwise.
    #[inline]
    fn delayed_ack(&self) -> u64 {
        if self.cfg.loss_recovery == LossRecovery::Tcp {
            self.cfg.tcp_delayed_ack.0
        } else {
            0
        }
    }

    /// The delayed-ACK timer of `qpi`'s receiver fired (RFC 1122
    /// §4.2.3.2): the segments received since the last ACK are ACKed now.
    pub(super) fn on_delayed_ack(&mut self, qpi: QpId) {
        let now = self.now;
        let rx = &mut self.qps.rx[qpi];
        if rx.delack_at != now {
            // an ACK left since the timer started: this event is stale
            return;
        }
        rx.delack_at = NEVER;
        if rx.since_ack == 0 {
            return;
        }
        rx.since_ack = 0;
        let e = self.qps.recs[qpi].0.expected();
        let ce = self.ce_echo(qpi);
        self.send_ctrl(qpi, PktKind::Ack, e, ce, 0);
    }

    /// The header of a data packet a switch trimmed (packet trimming, NDP)
    /// reached its receiver: the law says whether to NACK at once.
    fn receive_trimmed(&mut self, k: &Packet) {
        self.counters.trimmed_delivered();
        let rec = &mut self.qps.recs[k.qp].0;
        let fb = rec.on_trimmed(k.psn);
        let e = rec.expected();
        match fb {
            None => {}
            Some(Feedback::Trimmed(p)) => {
                self.send_ctrl(k.qp, PktKind::Nack, e, p, F_TRIMMED);
            }
            Some(Feedback::Ack) => {
                // TCP: a duplicate ACK
                let ce = self.ce_echo(k.qp);
                let rx = &mut self.qps.rx[k.qp];
                rx.since_ack = 0;
                rx.delack_at = NEVER;
                self.send_ctrl(k.qp, PktKind::Ack, e, ce, 0);
            }
            Some(_) => {
                let ce = self.ce_echo(k.qp);
                self.send_ctrl(k.qp, PktKind::Nack, e, ce, 0);
            }
        }
    }

    /// The CE marks (or, Swift, the send time) an ACK or NACK of `qpi`
    /// echoes now, taken from the law's state; 0 without a law (whose
    /// `take_ce_echo` is 0), leaving the pair's cold half untouched.
    #[inline]
    fn ce_echo(&mut self, qpi: QpId) -> u32 {
        if self.qps.rx[qpi].cc_law {
            self.qps.pairs[qpi].cc.take_ce_echo()
        } else {
            0
        }
    }

    /// Index in `Sim::msgs` of the message of `qpi` holding `psn` (at or above
    /// the oldest unacknowledged PSN): a selective retransmission's.
    fn msg_holding(&self, qpi: QpId, psn: u32) -> u32 {
        let qp = &self.qps.pairs[qpi];
        let mut c = self.qps.tx[qpi].una_cursor as usize;
        while c + 1 < qp.msgs.len() && self.qps.msgs[qp.msgs[c] as usize].end() <= psn {
            c += 1;
        }
        qp.msgs[c]
    }

    /// Queues an ACK/NACK/CNP at the receiver's first link; `info` is the
    /// number of CE marks an ACK echoes (DCTCP), or with `flags` [`F_SACK`]
    /// or [`F_TRIMMED`] the PSN a NACK names.
    fn send_ctrl(&mut self, qpi: QpId, kind: PktKind, psn: u32, info: u32, flags: u8) {
        self.send_ctrl_sack(qpi, kind, psn, info, flags, (0, 0));
    }

    /// [`Sim::send_ctrl`] with a TCP ACK's SACK block, as (`sack_end`,
    /// `sack_len`) of [`Packet`]; (0, 0) for none.
    fn send_ctrl_sack(
        &mut self,
        qpi: QpId,
        kind: PktKind,
        psn: u32,
        info: u32,
        flags: u8,
        sack: (u16, u8),
    ) -> PktIdx {
        let rx = &mut self.qps.rx[qpi];
        if kind == PktKind::Ack && rx.quick_acks > 0 {
            // every ACK sent uses up one of quick-ACK mode's (Linux's
            // `tcp_dec_quickack_mode`); no store on the other laws' ACKs
            rx.quick_acks -= 1;
        }
        let (port, ack_dst) = (rx.ack_port, rx.src);
        let vl = if kind == PktKind::Cnp {
            self.sched.cnp_lane
        } else {
            self.sched.ack_lane
        };
        let wire = if kind == PktKind::Cnp {
            self.cfg.cnp_bytes
        } else {
            self.cfg.ack_bytes
        };
        let pkt = self.pkts.alloc(Packet {
            qp: qpi,
            psn,
            wire,
            hash: info,
            link: PortId::NONE,
            epoch: 0,
            dst: ack_dst,
            kind,
            vl,
            flags,
            sack_end: sack.0,
            sack_len: sack.1,
        });
        self.counters.ctrl_sent(kind == PktKind::Nack);
        self.enqueue(port, vl, pkt, wire as u64);
        pkt
    }

    /// Moves `send_cursor` to the message holding the next PSN to send.
    fn seek_send_cursor(&mut self, qpi: QpId) {
        let qp = &self.qps.pairs[qpi];
        let tx = &mut self.qps.tx[qpi];
        let mut c = tx.una_cursor;
        while (c as usize) < qp.msgs.len()
            && self.qps.msgs[qp.msgs[c as usize] as usize].end() <= tx.seq.nxt
        {
            c += 1;
        }
        tx.send_cursor = c;
        tx.send_msg = qp.msgs.get(c as usize).copied().unwrap_or(NO_MSG);
    }

    /// The sender gets a cumulative ACK (or a NACK, `fb`) for PSNs below `a`.
    fn on_ack(&mut self, qpi: QpId, a: u32, fb: Feedback, ce: u32) {
        let nack = fb.is_nack();
        let i = qpi;
        let now = self.now;
        let rto = self.cfg.rto.0;
        let max_w = self.window_pkts;
        let QueuePairs {
            pairs,
            tx,
            recs,
            msgs,
            ..
        } = &mut self.qps;
        let (qp, tx, rec) = (&mut pairs[i], &mut tx[i], &mut recs[i].0);
        let mut info = AckInfo {
            now,
            newly_acked: a.saturating_sub(tx.seq.una),
            ce,
            // a selective or trimmed NACK's field holds a PSN, not an echo
            echo: matches!(
                fb,
                Feedback::Ack | Feedback::AckBlock(..) | Feedback::Dsack(..) | Feedback::Nack
            )
            .then_some(ce),
            una: a.max(tx.seq.una),
            nxt: tx.seq.nxt,
            nack,
            max_pkts: max_w,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: self.cfg.tcp_sack && matches!(rec, Recovery::Tcp(_)),
        };
        // the law sees the sequence space as it was before the ACK, and what
        // the recovery made of it (TCP's duplicate ACKs and fast recovery)
        let mut e = rec.on_ack(&mut tx.seq, a, fb, now, rto);
        if tx.cc_on {
            info.dupack = e.dupack;
            info.loss = e.loss;
            info.in_recovery = e.in_recovery;
            let r = qp.cc.on_ack(&self.cfg.cc, &info);
            if let Some(w) = r.window {
                tx.wnd = w;
            }
            if r.window_cut {
                self.counters.window_cut(now);
                tx.queue_cwr = true;
            }
        }
        if e.advanced {
            while (tx.una_cursor as usize) < qp.msgs.len()
                && msgs[qp.msgs[tx.una_cursor as usize] as usize].end() <= a
            {
                tx.una_cursor += 1;
            }
            tx.seq.msg_start = match qp.msgs.get(tx.una_cursor as usize) {
                Some(&m) => msgs[m as usize].start_psn,
                None => tx.seq.una,
            };
            // nothing before the first unacknowledged message is sent again
            // (go-back-0 resending a message the receiver then completed)
            if tx.seq.nxt < tx.seq.msg_start {
                tx.seq.nxt = tx.seq.msg_start;
                e.moved = true;
            }
        }
        if let Some(at) = e.timer {
            self.q.push(at, Event::Rto { qp: qpi });
        }
        if e.nack_rewind {
            self.counters.nack_rewind();
        }
        if e.moved {
            self.seek_send_cursor(i);
        }
        self.activate(qpi);
    }

    /// Retransmission timer of queue pair `qpi`.
    pub(super) fn on_rto(&mut self, qpi: QpId) {
        let i = qpi;
        let now = self.now;
        let QueuePairs {
            pairs, tx, recs, ..
        } = &mut self.qps;
        let (qp, tx) = (&mut pairs[i], &mut tx[i]);
        // whether the window held a retransmission the sender was about to
        // send (read before the timeout resets the sender; only TCP tells
        // its timeouts apart)
        let held = match &recs[i].0 {
            rec @ Recovery::Tcp(_) => {
                let next = rec.next_psn(&tx.seq);
                next < tx.seq.max && rec.blocked(&tx.seq, next, tx.wnd)
            }
            _ => false,
        };
        match recs[i].0.on_timeout(&mut tx.seq, now, self.cfg.rto.0) {
            TimerEffect::Idle => {}
            TimerEffect::Rearm(at) => self.q.push(at, Event::Rto { qp: qpi }),
            TimerEffect::Fired(at) => {
                qp.timeouts += 1;
                self.counters
                    .timeout_kind(recs[i].0.last_timeout_kind().with_window_held(held));
                if tx.cc_on {
                    if let Some(w) = qp.cc.on_timeout(&self.cfg.cc) {
                        tx.wnd = w;
                        // Linux's `tcp_enter_loss` queues CWR too
                        tx.queue_cwr = true;
                    }
                }
                self.q.push(at, Event::Rto { qp: qpi });
                self.seek_send_cursor(i);
                self.activate(qpi);
            }
            TimerEffect::Resend { at, loss } => {
                // TCP's RACK-TLP: lost PSNs or a probe to send; a recovery
                // that started is a fast retransmit to the congestion control
                if loss {
                    self.counters.nack_rewind();
                    if tx.cc_on {
                        let info = AckInfo {
                            now,
                            newly_acked: 0,
                            ce: 0,
                            echo: None,
                            una: tx.seq.una,
                            nxt: tx.seq.nxt,
                            nack: false,
                            max_pkts: self.window_pkts,
                            dupack: false,
                            loss: true,
                            in_recovery: true,
                            sack: true,
                        };
                        let r = qp.cc.on_ack(&self.cfg.cc, &info);
                        if let Some(w) = r.window {
                            tx.wnd = w;
                        }
                        if r.window_cut {
                            self.counters.window_cut(now);
                            tx.queue_cwr = true;
                        }
                    }
                }
                self.q.push(at, Event::Rto { qp: qpi });
                self.activate(qpi);
            }
        }
    }

    /// Schedules the law's next timer of `qpi` unless an event is already
    /// pending at or before it (a later pending event goes stale: it pops,
    /// finds `cc_timer_at` moved and does nothing).
    fn arm_cc_timer(&mut self, qpi: QpId) {
        let now = self.now;
        let qp = &mut self.qps.pairs[qpi];
        let t = qp.cc.next_timer();
        if t != NEVER && (qp.cc_timer_at == NEVER || qp.cc_timer_at < now || t < qp.cc_timer_at) {
            qp.cc_timer_at = t.max(now);
            self.q.push(t.max(now), Event::CcTimer { qp: qpi });
        }
    }

    /// A congestion-control timer of `qpi` is due.
    pub(super) fn on_cc_timer(&mut self, qpi: QpId) {
        let now = self.now;
        let qp = &mut self.qps.pairs[qpi];
        if qp.cc_timer_at != now {
            return;
        }
        qp.cc_timer_at = NEVER;
        if qp.cc.on_timer(&self.cfg.cc, now) {
            self.counters.rate_cut(now);
        }
        self.arm_cc_timer(qpi);
        self.repace(qpi);
    }

    /// The law's rate may have just changed (a CNP, a timer) for `qpi`: a
    /// pair asleep until its paced send time wakes at the time the new rate
    /// gives, if that is earlier. The HPCC simulator does the same
    /// (`RdmaHw::ChangeRate` moves the pair's `m_nextAvail` to its last send
    /// plus the last packet at the new rate, `QbbNetDevice::UpdateNextAvail`
    /// moves the send event only earlier): a later time needs nothing here,
    /// the pending wake finds the pair not ready and `pull_data` puts it back
    /// to sleep until then. The wake this one replaces goes stale, since
    /// `on_qp_wake` acts only at the time in `wake_at`. ACKs need no call:
    /// they `activate` the pair, whose `pull_data` recomputes the time.
    fn repace(&mut self, qpi: QpId) {
        let now = self.now;
        let tx = &self.qps.tx[qpi];
        let qp = &mut self.qps.pairs[qpi];
        if tx.in_ring || qp.wake_at == NEVER || qp.wake_at <= now || tx.last_wire == 0 {
            return;
        }
        let gap = qp.cc.pace_gap(&self.cfg.cc, tx.last_wire as u64);
        let t = tx.last_tx.saturating_add(gap).max(now);
        if t < qp.wake_at {
            qp.wake_at = t;
            self.q.push(t, Event::QpWake { qp: qpi });
        }
    }

    /// A paced queue pair's bytes are ready.
    pub(super) fn on_qp_wake(&mut self, qpi: QpId) {
        let qp = &mut self.qps.pairs[qpi];
        if qp.wake_at == self.now {
            qp.wake_at = NEVER;
            self.activate(qpi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_halves_are_one_cache_line_each() {
        // The sender's and the receiver's per-packet fields: one line each,
        // starting on a line (the point of the split, see `QpTx`).
        assert_eq!(std::mem::size_of::<QpTx>(), 64);
        assert_eq!(std::mem::align_of::<QpTx>(), 64);
        assert_eq!(std::mem::size_of::<QpRx>(), 64);
        assert_eq!(std::mem::align_of::<QpRx>(), 64);
        // Go-back-N's state (the default law) lies within the first line of
        // its slot, with the enum's tag.
        let slot = RecSlot(Recovery::GoBackN(GoBackN::new(64, true)));
        let Recovery::GoBackN(g) = &slot.0 else {
            unreachable!()
        };
        let off = g as *const GoBackN as usize - &slot as *const RecSlot as usize;
        assert_eq!(&slot as *const RecSlot as usize % 64, 0);
        assert!(
            off + std::mem::size_of::<GoBackN>() <= 64,
            "go-back-N at {off}..{} of its slot",
            off + std::mem::size_of::<GoBackN>()
        );
    }

    #[test]
    fn cursor_copies_follow_the_message_list() {
        // `QueuePairs::msg_at` / `end_at` back the copies `send_msg` and
        // `rcv_end`: the message at a cursor, and none past the end.
        let mut qps = QueuePairs::default();
        let q = qps.pairs.push(Qp {
            src: 0,
            dst: 1,
            hash: 0,
            msgs: vec![1, 0],
            wake_at: NEVER,
            cpu_ready: 0,
            tso_used: 0,
            cc: CcState::None(super::super::cc::NoCc),
            cc_timer_at: NEVER,
            bytes_posted: 0,
            retransmitted: 0,
            timeouts: 0,
        });
        for (start_psn, npkts) in [(7, 2), (0, 7)] {
            qps.msgs.push(Msg {
                task: 0,
                start_psn,
                npkts,
                bytes: 0,
                post: 0,
            });
        }
        assert_eq!((qps.msg_at(q, 0), qps.end_at(q, 0)), (1, 7));
        assert_eq!((qps.msg_at(q, 1), qps.end_at(q, 1)), (0, 9));
        assert_eq!((qps.msg_at(q, 2), qps.end_at(q, 2)), (NO_MSG, u32::MAX));
    }
}
