//! TCP's loss recovery: duplicate ACKs, fast retransmit and NewReno fast
//! recovery (RFC 5681 §3.2, RFC 6582), under a retransmission timer computed
//! as RFC 6298 specifies.
//!
//! **Receiver.** Keeps what arrives beyond a gap (a bitmap of one window, as
//! a TCP receiver keeps out-of-order segments in its receive window) and
//! answers every out-of-order or duplicate arrival at once with a cumulative
//! ACK for the next expected PSN: a duplicate ACK (RFC 5681 §4.2: "an
//! immediate duplicate ACK SHOULD be sent when an out-of-order segment
//! arrives"). An arrival that fills a gap is ACKed at once too (the transport
//! does this for every law).
//!
//! **Sender.** A duplicate ACK (a plain ACK for the oldest unacknowledged PSN
//! while data is outstanding) is counted; the third one, unless the sender
//! is still inside a recovery episode (RFC 6582 §3.2 step 2: the cumulative
//! ACK must cover `recover`), resends that PSN alone (fast retransmit) and
//! starts fast recovery with `recover` = the highest PSN sent. An ACK that
//! advances but stays below `recover` (a partial ACK) resends the next hole;
//! one at or past `recover` ends the episode. The congestion control sees
//! these events in [`AckEffect`] (window halving and inflation are its
//! business, [`crate::backend::packet::cc`]).
//!
//! **Timer** (RFC 6298). The first round trip comes from the connection's
//! handshake: SRTT = R, RTTVAR = R/2 with R the path's idle round trip (the
//! model has no SYN; a real connection measures one, §2.2). Then one
//! segment at a time is timed; its ACK gives a sample R' with RTTVAR ← ¾
//! RTTVAR + ¼ |SRTT − R'| and SRTT ← ⅞ SRTT + ⅛ R' (§2.3), and RTO = SRTT +
//! max(G, 4 RTTVAR) clamped between `min_rto` and `max_rto` (§2.4, G =
//! [`CLOCK_G`]). Karn's rule (§3): a sample whose segment was sent more than
//! once is discarded, and any retransmission stops the segment being timed.
//! The timer runs while data is outstanding and restarts on every ACK of new
//! data (§5.3); when it fires the sender goes back to the oldest
//! unacknowledged PSN (RFC 5681 §3.1: everything after it is resent as the
//! window allows), the RTO doubles (§5.5, at most `max_rto`) and stays
//! doubled until a new valid sample (§5.7).

use super::{AckEffect, Feedback, PsnBits, RecoveryLaw, RxVerdict, SendSeq, TimerEffect};

/// Clock granularity G of RFC 6298 §2.4, ps: 1 µs, the resolution of
/// Linux's RTT estimator since 4.13 (`tcp_rtt_estimator` works in µs).
pub const CLOCK_G: u64 = 1_000_000;

/// Duplicate ACKs that trigger a fast retransmit (RFC 5681 §3.2, `DupThresh`).
pub const DUP_THRESH: u32 = 3;

/// An RFC 6298 round-trip estimator (times in ps).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttEstimator {
    /// Smoothed round trip, ps.
    pub srtt: f64,
    /// Round-trip variation, ps.
    pub rttvar: f64,
    /// Lower bound of the RTO, ps.
    pub min_rto: u64,
    /// Upper bound of the RTO (also of its backoff), ps.
    pub max_rto: u64,
}

impl RttEstimator {
    /// An estimator seeded with one measurement `first` (ps, §2.2).
    pub fn new(first: u64, min_rto: u64, max_rto: u64) -> RttEstimator {
        RttEstimator {
            srtt: first as f64,
            rttvar: first as f64 / 2.0,
            min_rto,
            max_rto: max_rto.max(min_rto),
        }
    }

    /// A new measurement `r`, ps (§2.3; RTTVAR first, with the old SRTT).
    pub fn sample(&mut self, r: u64) {
        let r = r as f64;
        self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
        self.srtt = 0.875 * self.srtt + 0.125 * r;
    }

    /// RTO = SRTT + max(G, 4 RTTVAR), between `min_rto` and `max_rto`, ps.
    pub fn rto(&self) -> u64 {
        let raw = self.srtt + (4.0 * self.rttvar).max(CLOCK_G as f64);
        (raw.min(u64::MAX as f64 / 2.0) as u64).clamp(self.min_rto, self.max_rto)
    }
}

/// TCP loss-recovery state of one connection, both ends.
#[derive(Clone, Debug)]
pub struct TcpRecovery {
    /// Round-trip estimator.
    pub est: RttEstimator,
    /// Retransmission deadline, ps.
    pub rto_deadline: u64,
    /// An `Rto` event is pending.
    pub rto_pending: bool,
    /// Consecutive timeouts without a valid sample since (backoff exponent).
    pub backoff: u32,
    /// The PSN being timed, if one is (`timed_at` its send time).
    pub timed: Option<u32>,
    /// Send time of the timed PSN, ps.
    pub timed_at: u64,
    /// Duplicate ACKs in a row.
    pub dupacks: u32,
    /// In fast recovery until `recover` is acknowledged.
    pub in_recovery: bool,
    /// RFC 6582's `recover`: one past the highest PSN sent when the last
    /// recovery episode (or timeout) started.
    pub recover: u32,
    /// A hole to resend before new data (fast retransmit, partial ACK).
    pub retx: Option<u32>,
    /// Receiver: next expected PSN.
    pub epsn: u32,
    /// Receiver: PSNs received beyond `epsn`, ring bitmap of at least a window.
    pub ooo_bits: PsnBits,
}

impl TcpRecovery {
    /// A connection whose window holds at most `window_pkts` packets, on a
    /// path whose idle round trip is `base_rtt` ps, with RTO bounds in ps.
    pub fn new(window_pkts: u32, base_rtt: u64, min_rto: u64, max_rto: u64) -> TcpRecovery {
        let words = (window_pkts as usize).next_power_of_two().div_ceil(64);
        TcpRecovery {
            est: RttEstimator::new(base_rtt, min_rto, max_rto),
            rto_deadline: 0,
            rto_pending: false,
            backoff: 0,
            timed: None,
            timed_at: 0,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            retx: None,
            epsn: 0,
            ooo_bits: PsnBits::new(words),
        }
    }

    /// The current timeout with its backoff, ps.
    pub fn rto(&self) -> u64 {
        let base = self.est.rto();
        base.checked_shl(self.backoff)
            .filter(|t| t >> self.backoff == base)
            .unwrap_or(u64::MAX)
            .min(self.est.max_rto)
    }
}

impl RecoveryLaw for TcpRecovery {
    #[inline]
    fn next_psn(&self, seq: &SendSeq) -> u32 {
        match self.retx {
            Some(p) if p >= seq.una && p < seq.nxt => p,
            _ => seq.nxt,
        }
    }

    #[inline]
    fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, _rto: u64) -> Option<u64> {
        if self.retx == Some(psn) {
            self.retx = None;
        }
        if psn < seq.max {
            // Karn: nothing sent twice is timed, and a retransmission
            // leaves the running sample ambiguous
            self.timed = None;
        } else if self.timed.is_none() {
            self.timed = Some(psn);
            self.timed_at = now;
        }
        if seq.una >= seq.max {
            // nothing outstanding: the timer starts with this packet
            self.rto_deadline = now.saturating_add(self.rto());
        }
        if self.rto_pending {
            return None;
        }
        self.rto_pending = true;
        Some(self.rto_deadline.max(now))
    }

    #[inline]
    fn on_ack(
        &mut self,
        seq: &mut SendSeq,
        a: u32,
        fb: Feedback,
        now: u64,
        _rto: u64,
    ) -> AckEffect {
        let mut e = AckEffect::default();
        if a > seq.una {
            if self.timed.is_some_and(|t| a > t) {
                self.est.sample(now.saturating_sub(self.timed_at));
                self.timed = None;
                self.backoff = 0;
            }
            seq.una = a;
            e.advanced = true;
            if seq.nxt < a {
                seq.nxt = a;
                e.moved = true;
            }
            self.rto_deadline = now.saturating_add(self.rto());
            self.dupacks = 0;
            if self.in_recovery {
                if a >= self.recover {
                    self.in_recovery = false;
                    self.retx = None;
                } else {
                    // partial ACK: the next hole goes out at once (RFC 6582 §3.2 step 3)
                    self.retx = Some(a);
                    e.nack_rewind = true;
                }
            }
        } else if fb == Feedback::Ack && a == seq.una && seq.una < seq.max {
            e.dupack = true;
            self.dupacks += 1;
            if self.dupacks == DUP_THRESH && !self.in_recovery && seq.una >= self.recover {
                self.in_recovery = true;
                self.recover = seq.max;
                self.retx = Some(seq.una);
                e.nack_rewind = true;
                e.loss = true;
            }
        }
        e.in_recovery = self.in_recovery;
        e
    }

    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, _rto: u64) -> TimerEffect {
        self.rto_pending = false;
        if seq.una >= seq.max {
            return TimerEffect::Idle;
        }
        self.rto_pending = true;
        if now < self.rto_deadline {
            return TimerEffect::Rearm(self.rto_deadline);
        }
        seq.nxt = seq.una;
        self.timed = None;
        self.retx = None;
        self.dupacks = 0;
        self.in_recovery = false;
        // duplicate ACKs of what was sent before the timeout start no
        // recovery (RFC 6582 §4)
        self.recover = seq.max;
        self.backoff = (self.backoff + 1).min(63);
        self.rto_deadline = now.saturating_add(self.rto());
        TimerEffect::Fired(self.rto_deadline)
    }

    #[inline]
    fn on_data(&mut self, psn: u32) -> RxVerdict {
        if psn < self.epsn || (psn != self.epsn && self.ooo_bits.get(psn)) {
            RxVerdict::DuplicateAck
        } else if psn == self.epsn {
            self.epsn += 1;
            while self.ooo_bits.get(self.epsn) {
                let e = self.epsn;
                self.ooo_bits.set(e, false);
                self.epsn += 1;
            }
            RxVerdict::Accepted
        } else if psn - self.epsn >= self.ooo_bits.capacity() {
            // beyond the receive window: dropped, the sender resends it
            RxVerdict::DuplicateAck
        } else {
            self.ooo_bits.set(psn, true);
            RxVerdict::AcceptedAck
        }
    }

    #[inline]
    fn expected(&self) -> u32 {
        self.epsn
    }

    fn on_trimmed(&mut self, psn: u32) -> Option<Feedback> {
        // a trimmed header is a loss TCP's receiver only learns as a gap:
        // a duplicate ACK, as for any out-of-order arrival
        if psn < self.epsn || self.ooo_bits.get(psn) {
            return None;
        }
        Some(Feedback::Ack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000_000;

    #[test]
    fn estimator_on_a_constant_rtt_converges_to_it() {
        // RFC 6298 §2.2-2.3: seeded with R = 100 µs (SRTT 100, RTTVAR 50,
        // RTO 300 µs), samples of the same R leave SRTT = R and shrink RTTVAR by
        // ¾ each: after n samples 50·0.75^n µs, so RTO → SRTT + max(G, 4 RTTVAR).
        let mut e = RttEstimator::new(100 * US, 0, u64::MAX);
        assert_eq!(e.rto(), 300 * US);
        for _ in 0..40 {
            e.sample(100 * US);
        }
        assert!((e.srtt - 1e8).abs() < 1.0);
        assert!(e.rttvar < 0.01 * US as f64);
        // 4 RTTVAR < G: RTO = SRTT + G
        assert_eq!(e.rto(), 101 * US);
        // the minimum RTO wins above that (Linux's 200 ms)
        let mut l = RttEstimator::new(100 * US, 200_000 * US, 120_000_000 * US);
        for _ in 0..40 {
            l.sample(100 * US);
        }
        assert_eq!(l.rto(), 200_000 * US);
    }

    #[test]
    fn a_sample_moves_srtt_by_an_eighth_and_rttvar_by_a_quarter() {
        // §2.3 with R' = 200 against SRTT 100, RTTVAR 50:
        // RTTVAR = 0.75·50 + 0.25·100 = 62.5, SRTT = 0.875·100 + 0.125·200 = 112.5
        let mut e = RttEstimator::new(100 * US, 0, u64::MAX);
        e.sample(200 * US);
        assert!((e.rttvar - 62.5 * US as f64).abs() < 1.0);
        assert!((e.srtt - 112.5 * US as f64).abs() < 1.0);
        assert_eq!(e.rto(), 362_500_000);
    }

    fn sent(r: &mut TcpRecovery, s: &mut SendSeq, n: u32, now: u64) {
        for _ in 0..n {
            let p = r.next_psn(s);
            r.on_send(s, p, now, 0);
            if p == s.nxt {
                s.nxt += 1;
                s.max = s.max.max(s.nxt);
            }
        }
    }

    #[test]
    fn three_duplicate_acks_resend_the_hole_once_and_partial_acks_the_next() {
        let mut r = TcpRecovery::new(64, 10 * US, 200 * US, 1_000_000 * US);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 10, 0);
        // PSNs 2 and 5 lost: ACK 2 (new), then three duplicates of 2
        let e = r.on_ack(&mut s, 2, Feedback::Ack, 10 * US, 0);
        assert!(e.advanced && !e.dupack);
        for i in 0..3 {
            let e = r.on_ack(&mut s, 2, Feedback::Ack, 11 * US, 0);
            assert!(e.dupack);
            assert_eq!(e.loss, i == 2);
        }
        assert_eq!(r.next_psn(&s), 2, "fast retransmit of the hole");
        sent(&mut r, &mut s, 1, 12 * US);
        assert_eq!(r.next_psn(&s), 10, "then new data");
        // more duplicates start no second recovery
        let e = r.on_ack(&mut s, 2, Feedback::Ack, 12 * US, 0);
        assert!(e.dupack && !e.loss && e.in_recovery);
        // partial ACK (the resent 2 filled up to 5): resend 5
        let e = r.on_ack(&mut s, 5, Feedback::Ack, 20 * US, 0);
        assert!(e.in_recovery && e.nack_rewind);
        assert_eq!(r.next_psn(&s), 5);
        sent(&mut r, &mut s, 1, 20 * US);
        // full ACK: recovery over
        let e = r.on_ack(&mut s, 10, Feedback::Ack, 30 * US, 0);
        assert!(!e.in_recovery);
    }

    #[test]
    fn karn_a_retransmitted_segment_gives_no_sample_and_the_timer_backs_off() {
        let min = 200 * US;
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 4, 0);
        assert_eq!(r.timed, Some(0));
        assert_eq!(r.rto(), min);
        assert_eq!(r.on_timeout(&mut s, min, 0), TimerEffect::Fired(3 * min));
        assert_eq!(s.nxt, 0);
        assert_eq!(r.rto(), 2 * min, "doubled (RFC 6298 §5.5)");
        assert_eq!(r.timed, None);
        sent(&mut r, &mut s, 4, min);
        assert_eq!(r.timed, None, "retransmissions are not timed");
        // the ACK of the retransmissions, 50 ms later, is no sample (Karn)
        let srtt = r.est.srtt;
        r.on_ack(&mut s, 4, Feedback::Ack, min + 50_000 * US, 0);
        assert_eq!(r.est.srtt, srtt);
        assert_eq!(r.rto(), 2 * min, "backoff kept until a valid sample (§5.7)");
        // new data is timed and its ACK samples and ends the backoff
        sent(&mut r, &mut s, 1, 300 * US);
        r.on_ack(&mut s, 5, Feedback::Ack, 310 * US, 0);
        assert_eq!(r.rto(), min);
        // the backoff stops at max_rto
        for _ in 0..20 {
            sent(&mut r, &mut s, 1, 0);
            let d = r.rto_deadline;
            r.on_timeout(&mut s, d, 0);
        }
        assert_eq!(r.rto(), 10_000 * US);
    }

    #[test]
    fn receiver_buffers_beyond_a_gap_and_asks_for_duplicate_acks() {
        let mut r = TcpRecovery::new(64, US, US, US);
        assert_eq!(r.on_data(0), RxVerdict::Accepted);
        assert_eq!(r.on_data(2), RxVerdict::AcceptedAck);
        assert_eq!(r.on_data(3), RxVerdict::AcceptedAck);
        assert_eq!(r.on_data(2), RxVerdict::DuplicateAck);
        assert_eq!(r.on_data(0), RxVerdict::DuplicateAck);
        assert_eq!(r.on_data(1), RxVerdict::Accepted);
        assert_eq!(r.expected(), 4);
    }
}
