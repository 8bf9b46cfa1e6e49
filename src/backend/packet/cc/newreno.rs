//! **NewReno** ([`CongestionControl::NewReno`](crate::mechanism::CongestionControl::NewReno)):
//! TCP's standard loss-based window (RFC 5681 §3.1–3.2 with RFC 6582's fast
//! recovery), and the machinery CUBIC ([`super::CubicState`]) shares
//! ([`LossWindow`]).
//!
//! * **Slow start** from the initial window (`fabric.tcp_initial_window`, 10
//!   segments, RFC 6928): every ACK adds the segments it newly acknowledges
//!   (Linux's `tcp_slow_start`; RFC 5681 allows at most one per ACK, RFC
//!   3465's ABC with L = 2 per ACK under delayed ACKs), so the window doubles
//!   per round trip, until it reaches `ssthresh`.
//! * **Congestion avoidance**: one segment per window of ACKed data
//!   (cwnd += n / cwnd per ACK of n segments).
//! * **Fast retransmit** (the loss recovery reports the third duplicate ACK,
//!   [`AckInfo::loss`]): ssthresh = max(β × FlightSize, 2) with β = ½,
//!   cwnd = ssthresh + 3 (RFC 5681 §3.2 steps 2–3; RFC 6582 §3.2).
//! * **Fast recovery**: each further duplicate ACK inflates cwnd by one
//!   segment; a partial ACK deflates it by what it acknowledged and adds one
//!   back (RFC 6582 §3.2 step 3); the full ACK ends recovery with cwnd =
//!   min(ssthresh, max(FlightSize, 1) + 1) (step 3, option 1).
//! * **SACK recovery** (TCP's loss recovery with `tcp_sack`, RFC 6675 §5):
//!   the fast retransmit sets cwnd = ssthresh, which holds through the
//!   episode (the recovery's `pipe` decides what may be sent), and the full
//!   ACK ends it as above.
//! * **Timeout**: ssthresh = max(cwnd / 2, 2), cwnd = 1 (RFC 5681 §3.1, eq.
//!   4, with the window standing in for FlightSize, which a window-limited
//!   sender equals).
//! * **Classic ECN** (RFC 3168 §6.1.2, when the fabric marks): an ACK that
//!   echoes a CE mark (ECE) cuts as a fast retransmit would, ssthresh =
//!   max(β × FlightSize, 2) and cwnd = ssthresh (no inflation: nothing left
//!   the network), then the sender is in congestion window reduction
//!   (Linux's `TCP_CA_CWR`) until everything sent before the cut is
//!   acknowledged: no other ECE cuts and the window does not grow (at most
//!   one reduction per window of data), nor during a fast recovery. The
//!   receiver's echo is the number of CE-marked segments the ACK covers
//!   (RFC 3168's receiver repeats ECE until it sees CWR; without lost ACKs
//!   the two cut the same, since the sender ignores ECE in CWR).
//!
//! The window never exceeds [`PacketConfig::window_bytes`](crate::backend::packet::PacketConfig::window_bytes)
//! (the receive window). Windows are in packets (segments of one MTU).

use super::{AckInfo, AckReaction, CcLaw, QpStart};

/// What one ACK did to a [`LossWindow`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Nothing to grow: a duplicate ACK, or an ACK inside fast recovery.
    Hold,
    /// A fast retransmit cut the window.
    Cut,
    /// Slow start grew the window (already applied).
    SlowStart,
    /// Congestion avoidance: `n` segments newly acknowledged, growth is the
    /// law's (not yet applied).
    Avoid(u32),
}

/// The congestion window, slow-start threshold and fast-recovery state
/// NewReno and CUBIC share (segments).
#[derive(Clone, Copy, Debug, Default)]
pub struct LossWindow {
    /// Congestion window, segments.
    pub cwnd: f64,
    /// Slow-start threshold, segments.
    pub ssthresh: f64,
    /// In fast recovery.
    pub in_recovery: bool,
    /// In congestion window reduction after an ECE cut (RFC 3168 §6.1.2)
    /// until the cumulative ACK reaches this PSN (`snd_nxt` at the cut,
    /// Linux's `high_seq`); `None`: not in CWR.
    pub cwr_until: Option<u32>,
    /// Receiver: CE-marked segments since the last ACK (the ECN echo).
    pub ce_unacked: u32,
}

impl LossWindow {
    /// A window of `iw` segments (at most `max_pkts`), no threshold yet.
    pub fn new(iw: u32, max_pkts: u32) -> LossWindow {
        LossWindow {
            cwnd: iw.min(max_pkts).max(1) as f64,
            ssthresh: f64::MAX,
            in_recovery: false,
            cwr_until: None,
            ce_unacked: 0,
        }
    }

    /// An ACK; `beta` is the law's multiplicative decrease on a loss.
    pub fn on_ack(&mut self, a: &AckInfo, beta: f64) -> Step {
        // segments outstanding before this ACK (una has not moved on a
        // duplicate, which is when a loss is reported)
        let flight = a.nxt.saturating_sub(a.una.saturating_sub(a.newly_acked)) as f64;
        if self.cwr_until.is_some_and(|h| a.una >= h) {
            // everything sent before the ECE cut is acknowledged: CWR ends
            self.cwr_until = None;
        }
        // an ACK (not a NACK) that echoes a CE mark: ECE (RFC 3168 §6.1.2)
        let ece = a.ce > 0 && !a.nack && a.echo.is_some();
        let step = if a.loss && self.cwr_until.is_some() {
            // a loss inside an ECE reduction's window: recovery starts
            // without a second cut (Linux's `tcp_enter_recovery` inits no
            // reduction while one runs)
            self.cwr_until = None;
            self.in_recovery = true;
            Step::Hold
        } else if a.loss {
            self.ssthresh = (flight * beta).max(2.0);
            // RFC 6675 §5 step 4.2: cwnd = ssthresh, `pipe` accounts for
            // what left the network; NewReno inflates by the three
            // segments the duplicate ACKs announced (RFC 5681 §3.2 step 3)
            self.cwnd = if a.sack {
                self.ssthresh
            } else {
                self.ssthresh + 3.0
            };
            self.in_recovery = true;
            Step::Cut
        } else if ece && !self.in_recovery && self.cwr_until.is_none() {
            // at most once per window of data: CWR until `nxt` is acknowledged
            self.ssthresh = (flight * beta).max(2.0);
            self.cwnd = self.ssthresh;
            self.cwr_until = Some(a.nxt);
            Step::Cut
        } else if self.cwr_until.is_some() && !self.in_recovery {
            // CWR: the window holds until the reduction's window is acknowledged
            Step::Hold
        } else if self.in_recovery && a.in_recovery {
            if a.sack {
                // the window stays ssthresh through a SACK recovery
            } else if a.dupack {
                self.cwnd += 1.0;
            } else if a.newly_acked > 0 {
                self.cwnd = (self.cwnd - a.newly_acked as f64 + 1.0).max(1.0);
            }
            Step::Hold
        } else if self.in_recovery {
            let after = a.nxt.saturating_sub(a.una) as f64;
            self.cwnd = self.ssthresh.min(after.max(1.0) + 1.0);
            self.in_recovery = false;
            Step::Hold
        } else if a.dupack || a.newly_acked == 0 {
            Step::Hold
        } else if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + a.newly_acked as f64).min(self.ssthresh.max(self.cwnd + 1.0));
            Step::SlowStart
        } else {
            Step::Avoid(a.newly_acked)
        };
        self.cwnd = self.cwnd.min(a.max_pkts as f64);
        step
    }

    /// A retransmission timeout: ssthresh = max(β cwnd, 2), cwnd = 1.
    pub fn on_timeout(&mut self, beta: f64) {
        self.ssthresh = (self.cwnd * beta).max(2.0);
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.cwr_until = None;
    }

    /// Receiver: a CE-marked segment arrived (counted for the next ACK's echo).
    pub fn on_ce(&mut self) {
        self.ce_unacked = self.ce_unacked.saturating_add(1);
    }

    /// Receiver: the echo an ACK carries, the CE marks since the last ACK.
    pub fn take_ce_echo(&mut self) -> u32 {
        std::mem::take(&mut self.ce_unacked)
    }

    /// The window in whole segments, at least 1 (truncated: a sender may not
    /// send a fraction of a segment).
    pub fn window(&self) -> u32 {
        (self.cwnd as u32).max(1)
    }
}

/// NewReno's multiplicative decrease: half the flight (RFC 5681 eq. 4).
pub const NEWRENO_BETA: f64 = 0.5;

/// NewReno sender state of one connection.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewRenoState {
    /// The window and its recovery state.
    pub w: LossWindow,
}

impl CcLaw for NewRenoState {
    /// The initial window, segments.
    type Params = u32;
    // A receiver waiting for `ack_every` segments would stall a window of
    // one segment (after a timeout) until the next timeout, so NewReno and
    // CUBIC receivers ACK every segment (Linux's quick-ACK mode; DCTCP does
    // the same here) unless TCP's delayed-ACK timer is set
    // (`tcp_delayed_ack`, the transport's rule: every second segment or
    // when the timer fires).
    const ACK_EVERY: Option<u32> = Some(1);

    fn new(iw: &u32, start: &QpStart) -> Self {
        NewRenoState {
            w: LossWindow::new(*iw, start.max_pkts),
        }
    }

    #[inline]
    fn on_ack(&mut self, _iw: &u32, a: &AckInfo) -> AckReaction {
        let step = self.w.on_ack(a, NEWRENO_BETA);
        if let Step::Avoid(n) = step {
            self.w.cwnd = (self.w.cwnd + n as f64 / self.w.cwnd).min(a.max_pkts as f64);
        }
        AckReaction {
            window: Some(self.w.window()),
            window_cut: step == Step::Cut,
        }
    }

    #[inline]
    fn on_timeout(&mut self, _iw: &u32) -> Option<u32> {
        self.w.on_timeout(NEWRENO_BETA);
        Some(self.w.window())
    }

    #[inline]
    fn on_ce(&mut self, _iw: &u32, _now: u64) -> bool {
        self.w.on_ce();
        false
    }

    #[inline]
    fn take_ce_echo(&mut self) -> u32 {
        self.w.take_ce_echo()
    }

    #[inline]
    fn window(&self) -> Option<u32> {
        Some(self.w.window())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(una: u32, nxt: u32, newly: u32) -> AckInfo {
        AckInfo {
            now: 0,
            newly_acked: newly,
            ce: 0,
            echo: None,
            una,
            nxt,
            nack: false,
            max_pkts: 10_000,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: false,
        }
    }

    #[test]
    fn slow_start_doubles_per_round_trip_then_avoidance_adds_one() {
        // RFC 5681 §3.1: a window of W acknowledged in slow start becomes 2W;
        // in congestion avoidance a whole window of ACKs adds one segment.
        let start = QpStart {
            line: crate::units::Rate::gbps(10),
            max_pkts: 10_000,
            now: 0,
            base_rtt: 0,
            mtu: 4096,
        };
        let mut s = <NewRenoState as CcLaw>::new(&10, &start);
        let mut una = 0;
        for round in 0..4 {
            let w = s.w.window();
            assert_eq!(w, 10 << round);
            for _ in 0..w {
                una += 1;
                s.on_ack(&10, &ack(una, una + w, 1));
            }
        }
        assert_eq!(s.w.window(), 160);
        s.w.ssthresh = 160.0;
        for _ in 0..160 {
            una += 1;
            s.on_ack(&10, &ack(una, una + 160, 1));
        }
        // 160 ACKs of 1/cwnd each: 160 ln(1 + 1/160) = 0.9969 of a segment
        assert!((s.w.cwnd - 160.9969).abs() < 1e-3, "{}", s.w.cwnd);
    }

    #[test]
    fn an_ece_cuts_once_per_window_and_the_window_holds_until_it_is_acknowledged() {
        // RFC 3168 §6.1.2: an ACK echoing CE (ECE) halves the window as a
        // loss would (ssthresh = max(FlightSize / 2, 2), cwnd = ssthresh,
        // no inflation) at most once per window of data: the sender is in
        // CWR until what it had sent at the cut (nxt = 40) is acknowledged,
        // and neither cuts again nor grows meanwhile.
        let mut w = LossWindow::new(40, 1000);
        w.ssthresh = 40.0;
        let mut a = ack(1, 40, 1);
        a.ce = 1;
        a.echo = Some(1);
        assert_eq!(w.on_ack(&a, NEWRENO_BETA), Step::Cut);
        assert_eq!((w.cwnd, w.ssthresh), (20.0, 20.0));
        assert_eq!(w.cwr_until, Some(40));
        // more ECE inside the window: no second cut, no growth
        for una in 2..40 {
            let mut b = ack(una, 45, 1);
            b.ce = 1;
            b.echo = Some(1);
            assert_eq!(w.on_ack(&b, NEWRENO_BETA), Step::Hold);
        }
        assert_eq!(w.cwnd, 20.0);
        // a NACK's field is no echo
        let mut n = ack(39, 45, 0);
        n.ce = 1;
        n.nack = true;
        assert_eq!(w.on_ack(&n, NEWRENO_BETA), Step::Hold);
        // the ACK that covers PSN 39 ends CWR; its ECE (data sent after the
        // cut was marked) cuts again: flight 45 − 39 = 6 → ssthresh 3
        let mut c = ack(40, 45, 1);
        c.ce = 1;
        c.echo = Some(1);
        assert_eq!(w.on_ack(&c, NEWRENO_BETA), Step::Cut);
        assert_eq!(w.cwnd, 3.0);
        // a loss inside the reduction's window starts recovery without a
        // second cut (Linux's `tcp_enter_recovery` in CWR)
        let mut l = ack(40, 45, 0);
        l.loss = true;
        l.dupack = true;
        l.in_recovery = true;
        assert_eq!(w.on_ack(&l, NEWRENO_BETA), Step::Hold);
        assert!(w.in_recovery && w.cwr_until.is_none());
        assert_eq!(w.cwnd, 3.0);
        // an ECE during fast recovery cuts nothing
        let mut r = ack(40, 45, 0);
        r.ce = 1;
        r.echo = Some(1);
        r.in_recovery = true;
        r.dupack = true;
        assert_eq!(w.on_ack(&r, NEWRENO_BETA), Step::Hold);
        // the receiver's echo: CE marks since the last ACK
        let mut rx = LossWindow::new(10, 100);
        rx.on_ce();
        rx.on_ce();
        assert_eq!((rx.take_ce_echo(), rx.take_ce_echo()), (2, 0));
    }

    #[test]
    fn fast_recovery_halves_inflates_deflates_and_ends_at_ssthresh() {
        // RFC 6582 §3.2 with 40 segments outstanding, PSN 0 lost
        let mut w = LossWindow::new(40, 1000);
        w.ssthresh = 40.0;
        let mut a = ack(0, 40, 0);
        a.dupack = true;
        a.loss = true;
        a.in_recovery = true;
        assert_eq!(w.on_ack(&a, NEWRENO_BETA), Step::Cut);
        assert_eq!(w.cwnd, 23.0, "ssthresh 20 + 3");
        a.loss = false;
        w.on_ack(&a, NEWRENO_BETA);
        assert_eq!(w.cwnd, 24.0, "inflated by one per duplicate");
        // partial ACK of 10: deflate by 10, add one back
        let mut p = ack(10, 40, 10);
        p.in_recovery = true;
        w.on_ack(&p, NEWRENO_BETA);
        assert_eq!(w.cwnd, 15.0);
        // full ACK: cwnd = min(ssthresh, max(flight, 1) + 1)
        let f = ack(40, 40, 30);
        w.on_ack(&f, NEWRENO_BETA);
        assert_eq!(w.cwnd, 2.0);
        assert!(!w.in_recovery);
        let mut w2 = LossWindow::new(40, 1000);
        w2.in_recovery = true;
        w2.ssthresh = 20.0;
        w2.on_ack(&ack(40, 70, 30), NEWRENO_BETA);
        assert_eq!(w2.cwnd, 20.0);
    }
}
