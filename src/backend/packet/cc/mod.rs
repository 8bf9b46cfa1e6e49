//! Congestion signals and control: ECN marking, and the laws a queue pair
//! runs (none, DCQCN in [`dcqcn`](DcqcnState), DCTCP in [`dctcp`](DctcpState),
//! Swift in [`swift`](SwiftState), TIMELY in [`timely`](TimelyState), HPCC in
//! [`hpcc`](HpccState), InfiniBand CC in [`ib`](IbCcState), TCP NewReno in [`newreno`](NewRenoState) and CUBIC in
//! [`cubic`](CubicState)).
//!
//! **ECN** ([`Ecn`]): when a data packet leaves an egress queue of a switch
//! port with `q` bytes still queued behind it (at dequeue, the default; or
//! joins one already holding `q` bytes, with [`EcnMarkAt::Enqueue`]), it is marked Congestion
//! Experienced with probability 0 for `q ≤ Kmin`, `Pmax · (q − Kmin) / (Kmax −
//! Kmin)` between the two and 1 for `q ≥ Kmax` (RED as configured for DCQCN:
//! Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM
//! 2015, §3.1; Kmin = Kmax = K gives DCTCP's step marking).
//!
//! # One interface, one enum arm per law
//!
//! Every queue pair holds one [`CcState`], the state of the law the run
//! configured ([`CongestionControl`]), both ends of it: the reaction point at
//! the sender and the notification point at the receiver. A law is a state
//! struct in its own file implementing [`CcLaw`]; [`CcState`] dispatches to it
//! by `match` (no trait objects, no allocation), passing the law's parameters
//! from the run's configuration rather than copying them into every queue
//! pair. The events a law sees:
//!
//! * [`CcLaw::on_send`]: a data packet leaves the sender (byte counters, pacing);
//! * [`CcLaw::pace_gap`]: the spacing the law's current rate asks between the
//!   starts of two packets (pacing); the NIC adds it to the last packet's
//!   start each time it asks, so a rate change moves a packet already waiting;
//! * [`CcLaw::on_ack`]: an ACK or NACK arrives, with what it acknowledges, the
//!   CE marks it echoes and its arrival time ([`AckInfo`]);
//! * [`CcLaw::on_cnp`]: a congestion notification packet arrives;
//! * [`CcLaw::on_timeout`]: the retransmission timer fired;
//! * [`CcLaw::next_timer`] / [`CcLaw::on_timer`]: the law's own timers (DCQCN's
//!   α update, rate increase and rate-decrease period), real events the NIC
//!   schedules (`Event::CcTimer`) at the earliest time the law asks for;
//! * [`CcLaw::on_ce`] / [`CcLaw::take_ce_echo`]: the receiver got a CE-marked
//!   data packet / builds an ACK that echoes the marks.
//!
//! A new law is a file here with its state
//! and `impl CcLaw`, an arm in [`CcState`] and in the `with_law!` table below,
//! and its parameters as an arm of [`CongestionControl`] in
//! [`crate::mechanism::cc`]. Signals a law needs that packets do not carry yet
//! (a send timestamp for RTT, INT records) go into [`AckInfo`] and the packet
//! record.

mod cubic;
mod dcqcn;
mod dctcp;
mod hpcc;
mod ib;
mod newreno;
mod none;
mod swift;
mod timely;

pub use crate::mechanism::cc::{
    CongestionControl, DcqcnParams, Ecn, EcnMarkAt, HpccParams, IbCcParams, MinRtt, SwiftParams,
    TimelyParams,
};
pub use cubic::CubicState;
pub use dcqcn::DcqcnState;
pub use dctcp::DctcpState;
pub use hpcc::{int_stamp, int_update, HpccState, IntPort, U_ONE};
pub use ib::IbCcState;
pub use newreno::{LossWindow, NewRenoState, Step, NEWRENO_BETA};
pub use none::NoCc;
pub use swift::SwiftState;
pub use timely::TimelyState;

use crate::units::Rate;

/// What the sender knows about a queue pair when it creates the law's state.
#[derive(Clone, Copy, Debug)]
pub struct QpStart {
    /// Line rate of the sender's NIC, bits/s (a rate law's ceiling).
    pub line: Rate,
    /// Largest window the NIC allows, packets (`PacketConfig::window_bytes` / MTU).
    pub max_pkts: u32,
    /// Creation time, ps.
    pub now: u64,
    /// Round trip of one full data packet out and its ACK back on the idle
    /// path (propagation, forwarding and serialization at every hop), ps.
    pub base_rtt: u64,
    /// Largest payload of a data packet, bytes (`PacketConfig::mtu`).
    pub mtu: u32,
}

/// What an ACK or NACK tells the sender's congestion control.
#[derive(Clone, Copy, Debug)]
pub struct AckInfo {
    /// Arrival time at the sender, ps.
    pub now: u64,
    /// Data packets this ACK newly acknowledges (0 for a duplicate), packets.
    pub newly_acked: u32,
    /// CE-marked data packets the ACK echoes (ECN echo), packets.
    pub ce: u32,
    /// The ACK's echo field as it arrived: under DCTCP the CE count (`ce`),
    /// under Swift the send time (ns, 32 bits) of the data packet it answers;
    /// `None` for a selective or trimmed NACK, whose field carries a PSN.
    pub echo: Option<u32>,
    /// Oldest unacknowledged PSN once this ACK is applied.
    pub una: u32,
    /// Next PSN the sender would send, before this ACK is applied.
    pub nxt: u32,
    /// A NACK (the receiver saw a gap at `una`), not a plain ACK.
    pub nack: bool,
    /// Largest window the NIC allows, packets.
    pub max_pkts: u32,
    /// A duplicate ACK (TCP's loss recovery: nothing new acknowledged while
    /// data is outstanding).
    pub dupack: bool,
    /// This ACK started a fast retransmit (TCP: the third duplicate ACK).
    pub loss: bool,
    /// The sender is in fast recovery once this ACK is applied (TCP).
    pub in_recovery: bool,
    /// TCP's recovery runs SACK's (RFC 6675): the window is ssthresh through
    /// the episode and `pipe` paces it, no inflation by duplicate ACKs.
    pub sack: bool,
}

/// How the law answered an ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckReaction {
    /// New congestion window, packets (`None`: the law does not limit the window).
    pub window: Option<u32>,
    /// The law cut its window on this ACK (counted as a DCTCP window cut).
    pub window_cut: bool,
}

/// The interface every congestion-control law implements, statically: the
/// state of one queue pair (both ends) and its reactions. Defaults do nothing,
/// so a law states only the events it answers.
pub trait CcLaw: Sized {
    /// The law's constants, as the run's configuration holds them.
    type Params;
    /// Receiver ACK interval this law needs, packets (`None`: the configured one).
    const ACK_EVERY: Option<u32> = None;
    /// The state of a new queue pair.
    fn new(p: &Self::Params, start: &QpStart) -> Self;
    /// A data packet of `wire` bytes leaves the sender at `now` (ps).
    #[inline]
    fn on_send(&mut self, _p: &Self::Params, _now: u64, _wire: u64) {}
    /// Pacing: time from the start of a packet of `wire` bytes to the
    /// earliest start of the next, ps, at the law's rate as it is now (0:
    /// unpaced). The law keeps no send time: the NIC adds this to the last
    /// packet's start whenever it asks, so the next send time always follows
    /// the current rate (the HPCC simulator's `RdmaHw::ChangeRate` moves
    /// `m_nextAvail` to the last send plus the packet at the new rate).
    #[inline]
    fn pace_gap(&self, _p: &Self::Params, _wire: u64) -> u64 {
        0
    }
    /// An ACK or NACK reached the sender.
    #[inline]
    fn on_ack(&mut self, _p: &Self::Params, _ack: &AckInfo) -> AckReaction {
        AckReaction::default()
    }
    /// A CNP reached the sender at `now` (ps); true if the law cut its rate.
    #[inline]
    fn on_cnp(&mut self, _p: &Self::Params, _now: u64) -> bool {
        false
    }
    /// The law's timers due at `now` (ps) fire; true if the law cut its rate.
    #[inline]
    fn on_timer(&mut self, _p: &Self::Params, _now: u64) -> bool {
        false
    }
    /// Earliest time one of the law's timers is due, ps (`u64::MAX`: none).
    #[inline]
    fn next_timer(&self) -> u64 {
        u64::MAX
    }
    /// The retransmission timer fired; the new window in packets, if the law
    /// keeps one.
    #[inline]
    fn on_timeout(&mut self, _p: &Self::Params) -> Option<u32> {
        None
    }
    /// Receiver: a CE-marked data packet arrived at `now` (ps); true if a CNP
    /// goes back to the sender.
    #[inline]
    fn on_ce(&mut self, _p: &Self::Params, _now: u64) -> bool {
        false
    }
    /// Receiver: an ACK or NACK is built; what its echo field carries (the
    /// CE marks since the last one, then reset; Swift: a send time).
    #[inline]
    fn take_ce_echo(&mut self) -> u32 {
        0
    }
    /// Receiver: a data packet arrived carrying `stamp` in its echo field
    /// (what [`CcLaw::stamp`] put there at the sender).
    #[inline]
    fn on_data(&mut self, _stamp: u32) {}
    /// Sender: what a data packet sent at `now` (ps) carries for the receiver
    /// to echo (`None`: nothing, the field keeps the flow hash).
    #[inline]
    fn stamp(&self, _now: u64) -> Option<u32> {
        None
    }
    /// The congestion window, packets, if the law keeps one.
    #[inline]
    fn window(&self) -> Option<u32> {
        None
    }
}

/// The congestion-control state of one queue pair: one arm per law.
#[derive(Clone, Copy, Debug)]
pub enum CcState {
    /// [`CongestionControl::None`].
    None(NoCc),
    /// [`CongestionControl::Dcqcn`].
    Dcqcn(DcqcnState),
    /// [`CongestionControl::Dctcp`].
    Dctcp(DctcpState),
    /// [`CongestionControl::Swift`].
    Swift(SwiftState),
    /// [`CongestionControl::Hpcc`].
    Hpcc(HpccState),
    /// [`CongestionControl::Ib`].
    Ib(IbCcState),
    /// [`CongestionControl::NewReno`].
    NewReno(NewRenoState),
    /// [`CongestionControl::Cubic`].
    Cubic(CubicState),
    /// [`CongestionControl::Timely`].
    Timely(TimelyState),
}

/// Runs `$body` with `$s` bound to the law's state and `$p` to its parameters;
/// `$none` when the state does not match the law (it cannot: a state is made
/// from the run's law, which never changes). One line per law.
macro_rules! with_law {
    ($state:expr, $law:expr, |$s:ident, $p:ident| $body:expr, $none:expr) => {
        match ($state, $law) {
            (CcState::None($s), CongestionControl::None) => {
                let $p = &();
                $body
            }
            (CcState::Dcqcn($s), CongestionControl::Dcqcn($p)) => $body,
            (CcState::Dctcp($s), CongestionControl::Dctcp { g: $p }) => $body,
            (CcState::Swift($s), CongestionControl::Swift($p)) => $body,
            (CcState::Hpcc($s), CongestionControl::Hpcc($p)) => $body,
            (CcState::Ib($s), CongestionControl::Ib($p)) => $body,
            (CcState::NewReno($s), CongestionControl::NewReno { initial_window: $p }) => $body,
            (CcState::Cubic($s), CongestionControl::Cubic { initial_window: $p }) => $body,
            (CcState::Timely($s), CongestionControl::Timely($p)) => $body,
            #[allow(unreachable_patterns)]
            _ => $none,
        }
    };
}

impl CcState {
    /// The state of a new queue pair under `law`.
    pub fn new(law: &CongestionControl, start: &QpStart) -> CcState {
        match law {
            CongestionControl::None => CcState::None(NoCc::new(&(), start)),
            CongestionControl::Dcqcn(p) => CcState::Dcqcn(<DcqcnState as CcLaw>::new(p, start)),
            CongestionControl::Dctcp { g } => CcState::Dctcp(<DctcpState as CcLaw>::new(g, start)),
            CongestionControl::Swift(p) => CcState::Swift(<SwiftState as CcLaw>::new(p, start)),
            CongestionControl::Hpcc(p) => CcState::Hpcc(<HpccState as CcLaw>::new(p, start)),
            CongestionControl::Ib(p) => CcState::Ib(<IbCcState as CcLaw>::new(p, start)),
            CongestionControl::NewReno { initial_window } => {
                CcState::NewReno(<NewRenoState as CcLaw>::new(initial_window, start))
            }
            CongestionControl::Cubic { initial_window } => {
                CcState::Cubic(<CubicState as CcLaw>::new(initial_window, start))
            }
            CongestionControl::Timely(p) => CcState::Timely(<TimelyState as CcLaw>::new(p, start)),
        }
    }

    /// Receiver ACK interval under `law`, packets, given the configured one.
    #[inline]
    pub fn ack_every(law: &CongestionControl, configured: u32) -> u32 {
        let own = match law {
            CongestionControl::None => NoCc::ACK_EVERY,
            CongestionControl::Dcqcn(_) => DcqcnState::ACK_EVERY,
            CongestionControl::Dctcp { .. } => DctcpState::ACK_EVERY,
            CongestionControl::Swift(_) => SwiftState::ACK_EVERY,
            CongestionControl::Hpcc(_) => HpccState::ACK_EVERY,
            CongestionControl::Ib(_) => IbCcState::ACK_EVERY,
            CongestionControl::NewReno { .. } => NewRenoState::ACK_EVERY,
            CongestionControl::Cubic { .. } => CubicState::ACK_EVERY,
            CongestionControl::Timely(_) => TimelyState::ACK_EVERY,
        };
        own.unwrap_or(configured)
    }

    /// See [`CcLaw::on_send`].
    #[inline]
    pub fn on_send(&mut self, law: &CongestionControl, now: u64, wire: u64) {
        with_law!(self, law, |s, p| CcLaw::on_send(s, p, now, wire), ())
    }

    /// See [`CcLaw::pace_gap`].
    #[inline]
    pub fn pace_gap(&self, law: &CongestionControl, wire: u64) -> u64 {
        with_law!(self, law, |s, p| CcLaw::pace_gap(s, p, wire), 0)
    }

    /// See [`CcLaw::on_ack`].
    #[inline]
    pub fn on_ack(&mut self, law: &CongestionControl, ack: &AckInfo) -> AckReaction {
        with_law!(
            self,
            law,
            |s, p| CcLaw::on_ack(s, p, ack),
            AckReaction::default()
        )
    }

    /// See [`CcLaw::on_cnp`].
    #[inline]
    pub fn on_cnp(&mut self, law: &CongestionControl, now: u64) -> bool {
        with_law!(self, law, |s, p| CcLaw::on_cnp(s, p, now), false)
    }

    /// See [`CcLaw::on_timer`].
    #[inline]
    pub fn on_timer(&mut self, law: &CongestionControl, now: u64) -> bool {
        with_law!(self, law, |s, p| CcLaw::on_timer(s, p, now), false)
    }

    /// See [`CcLaw::next_timer`].
    #[inline]
    pub fn next_timer(&self) -> u64 {
        match self {
            CcState::None(s) => CcLaw::next_timer(s),
            CcState::Dcqcn(s) => CcLaw::next_timer(s),
            CcState::Dctcp(s) => CcLaw::next_timer(s),
            CcState::Swift(s) => CcLaw::next_timer(s),
            CcState::Hpcc(s) => CcLaw::next_timer(s),
            CcState::Ib(s) => CcLaw::next_timer(s),
            CcState::NewReno(s) => CcLaw::next_timer(s),
            CcState::Cubic(s) => CcLaw::next_timer(s),
            CcState::Timely(s) => CcLaw::next_timer(s),
        }
    }

    /// See [`CcLaw::on_timeout`].
    #[inline]
    pub fn on_timeout(&mut self, law: &CongestionControl) -> Option<u32> {
        with_law!(self, law, |s, p| CcLaw::on_timeout(s, p), None)
    }

    /// See [`CcLaw::on_ce`].
    #[inline]
    pub fn on_ce(&mut self, law: &CongestionControl, now: u64) -> bool {
        with_law!(self, law, |s, p| CcLaw::on_ce(s, p, now), false)
    }

    /// See [`CcLaw::take_ce_echo`].
    #[inline]
    pub fn take_ce_echo(&mut self) -> u32 {
        match self {
            CcState::None(s) => CcLaw::take_ce_echo(s),
            CcState::Dcqcn(s) => CcLaw::take_ce_echo(s),
            CcState::Dctcp(s) => CcLaw::take_ce_echo(s),
            CcState::Swift(s) => CcLaw::take_ce_echo(s),
            CcState::Hpcc(s) => CcLaw::take_ce_echo(s),
            CcState::Ib(s) => CcLaw::take_ce_echo(s),
            CcState::NewReno(s) => CcLaw::take_ce_echo(s),
            CcState::Cubic(s) => CcLaw::take_ce_echo(s),
            CcState::Timely(s) => CcLaw::take_ce_echo(s),
        }
    }

    /// See [`CcLaw::on_data`].
    #[inline]
    pub fn on_data(&mut self, stamp: u32) {
        match self {
            CcState::Swift(s) => CcLaw::on_data(s, stamp),
            CcState::Hpcc(s) => CcLaw::on_data(s, stamp),
            CcState::Timely(s) => CcLaw::on_data(s, stamp),
            _ => {}
        }
    }

    /// See [`CcLaw::stamp`].
    #[inline]
    pub fn stamp(&self, now: u64) -> Option<u32> {
        match self {
            CcState::Swift(s) => CcLaw::stamp(s, now),
            CcState::Hpcc(s) => CcLaw::stamp(s, now),
            CcState::Timely(s) => CcLaw::stamp(s, now),
            _ => None,
        }
    }

    /// See [`CcLaw::window`].
    #[inline]
    pub fn window(&self) -> Option<u32> {
        match self {
            CcState::None(s) => CcLaw::window(s),
            CcState::Dcqcn(s) => CcLaw::window(s),
            CcState::Dctcp(s) => CcLaw::window(s),
            CcState::Swift(s) => CcLaw::window(s),
            CcState::Hpcc(s) => CcLaw::window(s),
            CcState::Ib(s) => CcLaw::window(s),
            CcState::NewReno(s) => CcLaw::window(s),
            CcState::Cubic(s) => CcLaw::window(s),
            CcState::Timely(s) => CcLaw::window(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn red_marking_is_linear_between_kmin_and_kmax() {
        let e = Ecn {
            kmin: 100,
            kmax: 300,
            pmax: 0.2,
        };
        assert_eq!(e.probability(100), 0.0);
        assert!((e.probability(200) - 0.1).abs() < 1e-12);
        // at exactly Kmax the ramp's top, Pmax; only above it everything
        assert!((e.probability(300) - 0.2).abs() < 1e-12);
        assert_eq!(e.probability(301), 1.0);
        let step = Ecn {
            kmin: 100,
            kmax: 100,
            pmax: 1.0,
        };
        assert_eq!(step.probability(100), 0.0);
        assert_eq!(step.probability(101), 1.0);
    }
}
