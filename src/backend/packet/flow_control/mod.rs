//! Link-level flow control: InfiniBand credits, lossy drop-tail, or PFC.
//!
//! **Credits** (InfiniBand, and every PCIe and NVLink link) are in
//! [`credit`], **lossy** drop-tail admission (and trimming) in [`lossy`],
//! **PFC** in [`pfc`]. Each file holds its law's state (an owned part of the
//! simulator: [`Credits`], [`SharedBuffers`], [`PfcState`]) and the
//! simulator's handlers for it.
//!
//! **One interface.** Every port carries the law its link obeys as a one-byte
//! tag, [`LinkLaw`] (host links are credit-controlled whatever
//! [`FlowControl`] the network runs), and `switch.rs` and `nic.rs` call only
//! the hooks below, each a `match` on that tag (enum dispatch: no indirect
//! call, no allocation per packet):
//!
//! | hook | when | credit | lossy | PFC |
//! |---|---|---|---|---|
//! | [`Sim::fc_admit`] | a packet joins an egress queue | accept | drop-tail / trim | hold per ingress lane, pause; watchdog drop |
//! | [`Sim::fc_gate`] | may a lane's head packet go now | blocks held? | yes | lane not paused |
//! | [`LinkLaw::on_tx`] | a packet goes on the wire | take blocks | – | – |
//! | [`Sim::fc_starved`] | lanes said [`Gate::Starved`] | credit wake-up | – | – |
//! | [`Sim::fc_release`] | a queued packet leaves its node's buffer | return blocks | free shared bytes | release, maybe RESUME |
//! | [`Sim::fc_freed`] | a packet is consumed or discarded on arrival | return blocks | – | – |
//! | [`Sim::fc_lost`] | a packet is lost on the wire | refund blocks | – | – |
//! | [`Sim::fc_frame`] | a free port has control frames pending | – | – | PAUSE / RESUME |
//! | [`Sim::fc_port_down`] | a port's link went down | – | – | pending frames lost |
//!
//! A law's own timers and frames are events of its own (`Event::Credit` to
//! `Sim::on_credit`, `Event::Pfc` to `Sim::on_pfc`).
//!
//! A new law (e.g. credit-based Ethernet) is a file here with its state part
//! and its handlers, one [`LinkLaw`] arm (with its arm in each hook's
//! `match`, which the compiler asks for), and a [`FlowControl`] arm in
//! [`crate::mechanism::flow_control`] that `Sim::new` maps to the tag.

pub mod credit;
pub mod lossy;
pub mod pfc;

pub use crate::mechanism::flow_control::FlowControl;
pub use credit::{blocks, CreditLane, Credits};
pub use lossy::SharedBuffers;
pub use pfc::{DeadlockCycle, PfcFrameRecord, PfcState, WatchdogLane};

use super::ids::{LaneIdx, PktIdx, PortId};
use super::sim::Sim;
use super::slab::{F_LOSSY_HELD, F_PFC_HELD, F_VL_RAISED};

/// The flow-control law one directed link obeys (a port's tag, one byte).
///
/// As a holder of buffer space it also names which law a queued packet's
/// bytes are counted by ([`LinkLaw::holding`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkLaw {
    /// Credits (IBA vol. 1 §7.9): the sender holds blocks of the receiver's
    /// buffer; every PCIe and NVLink link, and network links of an
    /// InfiniBand fabric.
    Credit,
    /// Drop-tail admission at the receiver: network links of lossy Ethernet,
    /// and links into a GPU (whose memory absorbs at line rate).
    Lossy,
    /// PFC (IEEE 802.1Qbb): the receiver counts bytes per ingress lane and
    /// pauses the sender's lane; network links of lossless Ethernet.
    Pfc,
}

impl LinkLaw {
    /// The law whose count holds a queued packet with `flags` (set at
    /// admission): PFC's ingress lanes, a lossy node's shared buffer, or
    /// else the credits of the link it arrived over.
    #[inline]
    pub fn holding(flags: u8) -> LinkLaw {
        if flags & F_PFC_HELD != 0 {
            LinkLaw::Pfc
        } else if flags & F_LOSSY_HELD != 0 {
            LinkLaw::Lossy
        } else {
            LinkLaw::Credit
        }
    }

    /// Whether a link under this law can stop its sender with a PAUSE frame
    /// (only PFC can): a run whose ports can never pause cannot be stuck on
    /// a cycle of pauses, so its stall is a plain deadlock.
    #[inline]
    pub fn can_pause(self) -> bool {
        self == LinkLaw::Pfc
    }

    /// Whether a departing packet held by this law is released only after
    /// its egress port is marked busy: a PFC release may send a RESUME on
    /// that very port (a packet leaving the way it came), which must then
    /// wait for the wire.
    #[inline]
    pub fn releases_after_tx(self) -> bool {
        self == LinkLaw::Pfc
    }

    /// A packet of `blocks` credit blocks goes on the wire from lane `qi` of
    /// a port whose link obeys this law (its gate said [`Gate::Go`]). On the
    /// parts, not the simulator, so that the caller keeps its borrow of the
    /// port (this runs once per packet hop).
    #[inline]
    pub fn on_tx(self, credits: &mut Credits, qi: LaneIdx, blocks: u32) {
        if self == LinkLaw::Credit {
            credits.consume(qi, blocks);
        }
    }
}

/// The lane a packet now on lane `vl` with `flags` arrived on at its current
/// node: one below if this node escalated it.
#[inline]
pub fn arrival_lane(vl: u8, flags: u8) -> u8 {
    vl - u8::from(flags & F_VL_RAISED != 0)
}

/// What a lane's law says about sending its head packet now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::backend::packet) enum Gate {
    /// It may go.
    Go,
    /// The lane is paused (PFC): skipped; the RESUME or the pause's expiry
    /// kicks the port.
    Paused,
    /// The lane waits for the law to give something back (credits): the
    /// port's stall begins and [`Sim::fc_starved`] arranges the wake-up.
    Starved,
}

impl Sim<'_> {
    /// Admission of packet `pkt` of `wire` bytes, which arrived at `node`
    /// over `in_link` on lane `in_vl`, to lane `vl` of egress `out` (`vl` >
    /// `in_vl` after lane escalation): the lane it joins and its wire bytes
    /// (trimming cuts it to its header on the highest lane), with its bytes
    /// now held by the law of the link it arrived over; or `None` when a law
    /// dropped it (counted and freed).
    ///
    /// The PFC watchdog's recovery on the egress lane comes first (it drops
    /// whatever joins it); then the ingress link's law: PFC for a lossless
    /// class, credits (the buffer is the sender's credits, always room), or
    /// drop-tail (lossy links, and a lossy class on a PFC link).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(in crate::backend::packet) fn fc_admit(
        &mut self,
        node: u32,
        in_link: PortId,
        in_vl: u8,
        out: PortId,
        vl: u8,
        pkt: PktIdx,
        wire: u32,
    ) -> Option<(u8, u32)> {
        if self.pfc_watchdog_takes(in_link, in_vl, out, vl, pkt, wire) {
            return None;
        }
        match self.ports[in_link].fc {
            LinkLaw::Pfc if self.sched.lossless[in_vl as usize] => self
                .pfc_admit(in_link, in_vl, pkt, wire)
                .then_some((vl, wire)),
            LinkLaw::Credit => Some((vl, wire)),
            LinkLaw::Pfc | LinkLaw::Lossy => self.lossy_admit(node, out, pkt, vl, wire),
        }
    }

    /// Whether lane `qi` of port `p`, whose link obeys `law`, may send its
    /// head packet now; `wire` gives that packet's wire bytes, read only by
    /// a law that needs them (credits), so other laws skip the load.
    #[inline]
    pub(in crate::backend::packet) fn fc_gate(
        &mut self,
        p: PortId,
        qi: LaneIdx,
        law: LinkLaw,
        wire: impl FnOnce(&Self) -> u32,
    ) -> Gate {
        match law {
            LinkLaw::Credit => {
                let need = self.blk(wire(self));
                if self.has_credits(p, qi, need) {
                    Gate::Go
                } else {
                    Gate::Starved
                }
            }
            LinkLaw::Lossy => Gate::Go,
            LinkLaw::Pfc => {
                if self.pfc.is_paused(qi, self.now) {
                    Gate::Paused
                } else {
                    Gate::Go
                }
            }
        }
    }

    /// Port `p` has packets but every lane in bitmask `lanes` said
    /// [`Gate::Starved`] and nothing else could go: its stall begins and its
    /// law wakes it when the lanes may go again.
    #[inline]
    pub(in crate::backend::packet) fn fc_starved(&mut self, p: PortId, lanes: u32) {
        match self.ports[p].fc {
            LinkLaw::Credit => self.credit_starved(p, lanes),
            LinkLaw::Lossy | LinkLaw::Pfc => {}
        }
    }

    /// A queued packet of `wire` bytes, held by `hold` (its
    /// [`LinkLaw::holding`]) since it arrived over `in_link` on lane `in_vl`
    /// ([`arrival_lane`]) at the node of egress `out`, leaves the node's
    /// buffer (starts transmission on `out`, or is flushed or dropped from
    /// its queue).
    #[inline]
    pub(in crate::backend::packet) fn fc_release(
        &mut self,
        hold: LinkLaw,
        in_link: PortId,
        in_vl: u8,
        wire: u32,
        out: PortId,
    ) {
        match hold {
            LinkLaw::Pfc => self.pfc_release(in_link, in_vl, wire as u64),
            LinkLaw::Lossy => {
                let node = self.ports[out].from;
                self.shared.release(node, wire as u64);
            }
            LinkLaw::Credit => self.fc_freed(in_link, in_vl, wire),
        }
    }

    /// The receiver of `link` frees a packet of `wire` bytes that arrived on
    /// lane `vl` and was never queued onward (consumed by a GPU, corrupt,
    /// unroutable, or dropped by a watchdog).
    #[inline]
    pub(in crate::backend::packet) fn fc_freed(&mut self, link: PortId, vl: u8, wire: u32) {
        match self.ports[link].fc {
            LinkLaw::Credit => {
                let b = self.blk(wire);
                self.return_credit(link, vl, b);
            }
            LinkLaw::Lossy | LinkLaw::Pfc => {}
        }
    }

    /// A packet of `wire` bytes sent on lane `vl` of `link` was lost on the
    /// wire (the link went down): the receiver never held it.
    #[inline]
    pub(in crate::backend::packet) fn fc_lost(&mut self, link: PortId, vl: u8, wire: u32) {
        match self.ports[link].fc {
            LinkLaw::Credit => self.credit_lost(link, vl, wire),
            LinkLaw::Lossy | LinkLaw::Pfc => {}
        }
    }

    /// Port `p` is free and has control frames pending (`ctrl_pending`):
    /// puts one on the wire; false if none had anything to say. Only PFC
    /// sends frames (on the reverse of the link it pauses).
    #[inline]
    pub(in crate::backend::packet) fn fc_frame(&mut self, p: PortId) -> bool {
        self.start_pfc_frame(p)
    }

    /// Port `p`'s link went down: the control frames it had pending are lost.
    pub(in crate::backend::packet) fn fc_port_down(&mut self, p: PortId) {
        self.drop_pfc_frames(p);
    }

    /// A cycle of blocked links each waiting on the next, as (link id, sending
    /// node, receiving node): link `a` waits on link `b` when both are
    /// `blocked` (paused by PFC, or out of credits), `b` leaves the node `a`
    /// enters, and `b`'s queues hold packets that arrived over `a` — so `a`'s
    /// buffer space downstream comes back only once `b` moves (the buffer
    /// dependency graph of Dally & Seitz 1987; Hu et al., HotNets 2016, for
    /// PFC). Empty if the blocked links form no cycle. Only run when a
    /// deadlock is suspected, so its allocations are off the hot path.
    pub(in crate::backend::packet) fn wait_cycle(
        &self,
        blocked: impl Fn(usize) -> bool,
    ) -> Vec<(u32, u32, u32)> {
        let n = self.ports.len();
        let vls = self.vls;
        let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); self.topo.nodes.len()];
        for (i, p) in self.ports.iter().enumerate() {
            if blocked(i) {
                out_of[p.from as usize].push(i as u32);
            }
        }
        let holds_from = |b: usize, a: u32| {
            (0..vls).any(|v| {
                self.ports
                    .queued(PortId(b as u32).lane(v as u8, vls))
                    .any(|k| self.pkts[k].link == PortId(a))
            })
        };
        // Iterative DFS with colours; `parent` rebuilds the cycle.
        let mut colour = vec![0u8; n];
        let mut parent = vec![u32::MAX; n];
        for s in 0..n {
            if colour[s] != 0 || !blocked(s) {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(s, 0)];
            colour[s] = 1;
            while let Some(&mut (a, ref mut i)) = stack.last_mut() {
                let next = out_of[self.ports[PortId(a as u32)].to as usize]
                    .get(*i)
                    .copied();
                *i += 1;
                match next {
                    None => {
                        colour[a] = 2;
                        stack.pop();
                    }
                    Some(b) => {
                        let b = b as usize;
                        if !holds_from(b, a as u32) {
                            continue;
                        }
                        if colour[b] == 1 {
                            let mut cyc = vec![b];
                            let mut x = a;
                            while x != b {
                                cyc.push(x);
                                x = parent[x] as usize;
                            }
                            cyc.reverse();
                            return cyc
                                .into_iter()
                                .map(|p| {
                                    let port = &self.ports[PortId(p as u32)];
                                    (p as u32, port.from, port.to)
                                })
                                .collect();
                        }
                        if colour[b] == 0 {
                            colour[b] = 1;
                            parent[b] = a as u32;
                            stack.push((b, 0));
                        }
                    }
                }
            }
        }
        Vec::new()
    }
}
