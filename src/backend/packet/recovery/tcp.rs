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
//! **SACK** (RFC 2018, RFC 6675; `tcp_sack`, on by default). The receiver's
//! ACK of an out-of-order segment carries the block of contiguous PSNs it
//! holds around that segment (RFC 2018 §4: the first block reports the
//! most recently received segment). The packet carries that one block
//! (offsets from the cumulative ACK, see `Packet::sack_end`), not the two or
//! three earlier blocks a real option repeats: those only matter when an
//! ACK is lost, and a lost ACK's block is then missing from the sender's
//! scoreboard until the cumulative ACK covers it. The sender keeps a
//! scoreboard of SACKed PSNs above `una`. A duplicate ACK is one that SACKs
//! something new (RFC 6675 §2); the third (or three SACKed PSNs above
//! `una`: `IsLost(HighACK)`, §5 step 2) starts loss recovery with
//! RecoveryPoint = the highest PSN sent and retransmits `una` at once
//! (§5 step 4.3). In recovery a PSN is lost when three PSNs above it are
//! SACKed (`IsLost`, DupThresh = 3 segments); `pipe` counts the PSNs
//! outstanding neither SACKed nor lost plus those retransmitted (§4
//! `SetPipe`), and the sender sends while `pipe` is below the window
//! (the congestion control sets it to ssthresh, no inflation): the lowest
//! lost PSN not yet retransmitted (NextSeg rule 1), else new data within
//! the receive window (rule 2). NextSeg's rules 3 and 4 (MAY: a
//! not-yet-lost hole, the rescue retransmission) are not modelled. Every
//! loss of a window is thus retransmitted in the recovery's first round
//! trip, where NewReno resends one hole per round trip. Recovery ends when
//! the cumulative ACK reaches RecoveryPoint. A timeout turns off every
//! SACKed bit (RFC 2018 §8: the receiver may have reneged) and goes back to
//! `una` as without SACK.
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

/// Longest SACK block an ACK carries, PSNs (its length field is one byte).
pub const SACK_BLOCK_MAX: u32 = 255;

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
    /// Receiver: how many PSNs `ooo_bits` holds.
    pub ooo_held: u32,
    /// SACK and RFC 6675 loss recovery are on.
    pub sack: bool,
    /// Receive window, packets (what new data may run ahead of `una`).
    pub rwnd: u32,
    /// Sender (SACK): PSNs at or above `una` the receiver reported holding.
    pub sacked: PsnBits,
    /// Sender (SACK): SACKed PSNs in `[una, max)`.
    pub nsacked: u32,
    /// Sender (SACK): one past the highest PSN retransmitted in this
    /// recovery episode (RFC 6675's HighRxt + 1).
    pub rxt_floor: u32,
    /// Sender (SACK): the first retransmission of the episode is pending; it
    /// goes out whatever `pipe` says (RFC 6675 §5 step 4.3).
    pub first_rtx: bool,
    /// Sender (SACK): the retransmissions of this episode still unSACKed,
    /// oldest first, each with `nxt` when it left (Linux's lost-
    /// retransmission marker); at most [`RTX_LOG`], later ones are not
    /// watched (the timer recovers them).
    rtx_log: [(u32, u32); RTX_LOG],
    /// Entries of `rtx_log` in use.
    rtx_len: u8,
    /// Sender (SACK): a retransmission found lost, to send again first.
    rerxt: Option<u32>,
}

/// Retransmissions a SACK sender watches for loss at once.
const RTX_LOG: usize = 8;

impl TcpRecovery {
    /// A connection whose window holds at most `window_pkts` packets, on a
    /// path whose idle round trip is `base_rtt` ps, with RTO bounds in ps.
    /// With `sack`, SACK and RFC 6675's recovery; otherwise NewReno's.
    pub fn new(
        window_pkts: u32,
        base_rtt: u64,
        min_rto: u64,
        max_rto: u64,
        sack: bool,
    ) -> TcpRecovery {
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
            ooo_held: 0,
            sack,
            rwnd: window_pkts.max(1),
            sacked: PsnBits::new(if sack { words } else { 1 }),
            nsacked: 0,
            rxt_floor: 0,
            first_rtx: false,
            rtx_log: [(0, 0); RTX_LOG],
            rtx_len: 0,
            rerxt: None,
        }
    }

    /// Receiver: the SACK block (RFC 2018) holding PSN `psn` received beyond
    /// the expected one, `[lo, hi)`, at most [`SACK_BLOCK_MAX`] PSNs long and
    /// ending at most `u16::MAX` past the expected PSN (what the ACK's fields
    /// hold); `None` if `psn` is not held beyond a gap.
    pub fn sack_block(&self, psn: u32) -> Option<(u32, u32)> {
        if psn <= self.epsn || !self.ooo_bits.get(psn) {
            return None;
        }
        let mut lo = psn;
        while lo > self.epsn + 1 && psn + 1 - lo < SACK_BLOCK_MAX && self.ooo_bits.get(lo - 1) {
            lo -= 1;
        }
        let mut hi = psn + 1;
        while hi - lo < SACK_BLOCK_MAX
            && hi - self.epsn < u16::MAX as u32
            && hi - self.epsn < self.ooo_bits.capacity()
            && self.ooo_bits.get(hi)
        {
            hi += 1;
        }
        (hi - self.epsn <= u16::MAX as u32).then_some((lo, hi))
    }

    /// Sender (SACK): PSNs below this one, not SACKed, are lost: the third
    /// highest SACKed PSN (RFC 6675 `IsLost`: DupThresh SACKed segments
    /// above), `una` if fewer are SACKed.
    fn lost_below(&self, seq: &SendSeq) -> u32 {
        if self.nsacked < DUP_THRESH {
            return seq.una;
        }
        self.sacked
            .nth_highest(seq.una, seq.max, DUP_THRESH)
            .unwrap_or(seq.una)
    }

    /// Sender (SACK): RFC 6675's `pipe`, packets: PSNs in `[una, max)` not
    /// SACKed that are not lost, plus those retransmitted in this episode.
    pub fn pipe(&self, seq: &SendSeq) -> u32 {
        let t = self.lost_below(seq).max(seq.una);
        let not_lost = (seq.max - t) - self.sacked.count(t, seq.max);
        let f = self.rxt_floor.clamp(seq.una, seq.max);
        let rxt = (f - seq.una) - self.sacked.count(seq.una, f);
        not_lost + rxt
    }

    /// Sender (SACK): NextSeg rule 1, the lowest lost PSN not yet
    /// retransmitted in this episode.
    fn next_lost(&self, seq: &SendSeq) -> Option<u32> {
        let t = self.lost_below(seq);
        let from = self.rxt_floor.max(seq.una);
        if from >= t {
            return None;
        }
        self.sacked.first_clear(from, t)
    }

    /// Sender (SACK): a retransmission of `psn` leaves while `nxt` is the
    /// next new PSN.
    fn log_rtx(&mut self, psn: u32, nxt: u32) {
        if (self.rtx_len as usize) < RTX_LOG {
            self.rtx_log[self.rtx_len as usize] = (psn, nxt);
            self.rtx_len += 1;
        }
    }

    /// Sender (SACK): drops from the log what is acknowledged or SACKed and
    /// finds a lost retransmission: DupThresh PSNs SACKed among those first
    /// sent after it left (they took the same path later, so it was dropped:
    /// Linux's `tcp_mark_lost_retrans`, the idea RACK, RFC 8985, makes
    /// general). RFC 6675 alone leaves a lost retransmission to the timer.
    fn check_rtx(&mut self, seq: &SendSeq) {
        let mut k = 0;
        for i in 0..self.rtx_len as usize {
            let (p, m) = self.rtx_log[i];
            if p < seq.una || self.sacked.get(p) {
                continue;
            }
            if self.rerxt.is_none()
                && m < seq.max
                && self.sacked.count(m.max(seq.una), seq.max) >= DUP_THRESH
            {
                self.rerxt = Some(p);
                continue;
            }
            self.rtx_log[k] = (p, m);
            k += 1;
        }
        self.rtx_len = k as u8;
    }

    /// Sender (SACK): forgets the episode's retransmissions.
    fn clear_rtx(&mut self) {
        self.rtx_len = 0;
        self.rerxt = None;
    }

    /// Sender (SACK): marks `[lo, hi)` SACKed (clipped to `[una, max)`);
    /// whether anything was new.
    fn mark_sacked(&mut self, seq: &SendSeq, lo: u32, hi: u32) -> bool {
        let mut new = false;
        for p in lo.max(seq.una)..hi.min(seq.max) {
            if !self.sacked.get(p) {
                self.sacked.set(p, true);
                self.nsacked += 1;
                new = true;
            }
        }
        new
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
        if let Some(p) = self.rerxt.filter(|&p| p >= seq.una && p < seq.nxt) {
            return p;
        }
        match self.retx {
            Some(p) if p >= seq.una && p < seq.nxt => p,
            _ => seq.nxt,
        }
    }

    #[inline]
    fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, _rto: u64) -> Option<u64> {
        if self.rerxt == Some(psn) {
            self.rerxt = None;
            self.log_rtx(psn, seq.nxt);
        } else if self.retx == Some(psn) {
            self.retx = None;
            if self.sack && self.in_recovery {
                self.log_rtx(psn, seq.nxt);
                // HighRxt = psn; the next lost PSN goes out next (NextSeg rule 1)
                self.rxt_floor = psn + 1;
                self.first_rtx = false;
                self.retx = self.next_lost(seq);
            }
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
        let block = match fb {
            Feedback::AckBlock(lo, hi) if self.sack => Some((lo, hi)),
            _ => None,
        };
        if a > seq.una {
            if self.timed.is_some_and(|t| a > t) {
                self.est.sample(now.saturating_sub(self.timed_at));
                self.timed = None;
                self.backoff = 0;
            }
            if self.sack {
                // the scoreboard keeps only what lies above `una`
                for p in seq.una..a.min(seq.max) {
                    if self.sacked.get(p) {
                        self.sacked.set(p, false);
                        self.nsacked -= 1;
                    }
                }
            }
            seq.una = a;
            e.advanced = true;
            if seq.nxt < a {
                seq.nxt = a;
                e.moved = true;
            }
            self.rto_deadline = now.saturating_add(self.rto());
            self.dupacks = 0;
            if let Some((lo, hi)) = block {
                self.mark_sacked(seq, lo, hi);
            }
            if self.in_recovery {
                if a >= self.recover {
                    self.in_recovery = false;
                    self.retx = None;
                    self.first_rtx = false;
                    self.clear_rtx();
                } else if !self.sack {
                    // partial ACK: the next hole goes out at once (RFC 6582 §3.2 step 3)
                    self.retx = Some(a);
                    e.nack_rewind = true;
                }
            }
        } else if matches!(fb, Feedback::Ack | Feedback::AckBlock(..))
            && a == seq.una
            && seq.una < seq.max
        {
            // with SACK a duplicate ACK is one that SACKs new data (RFC 6675 §2)
            let new = block.is_some_and(|(lo, hi)| self.mark_sacked(seq, lo, hi));
            if !self.sack || new {
                e.dupack = true;
                self.dupacks += 1;
            }
            let start = if self.sack {
                // RFC 6675 §5 steps 1-2: DupThresh duplicates, or IsLost(HighACK)
                self.dupacks >= DUP_THRESH || self.lost_below(seq) > seq.una
            } else {
                self.dupacks == DUP_THRESH
            };
            if start && !self.in_recovery && seq.una >= self.recover {
                self.in_recovery = true;
                self.recover = seq.max;
                self.retx = Some(seq.una);
                self.rxt_floor = seq.una;
                self.first_rtx = self.sack;
                e.nack_rewind = true;
                e.loss = true;
            }
        }
        if self.sack && self.in_recovery {
            // the first retransmission stays due until it leaves (§5 step
            // 4.3), then every lost PSN in turn (NextSeg rule 1)
            if !(self.first_rtx && self.retx.is_some_and(|p| p >= seq.una)) {
                self.first_rtx = false;
                self.retx = self.next_lost(seq);
            }
            self.check_rtx(seq);
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
        self.first_rtx = false;
        self.clear_rtx();
        if self.sack {
            // RFC 2018 §8: after a timeout the sender SHOULD turn off every
            // SACKed bit (the receiver may have reneged)
            for p in seq.una..seq.max {
                self.sacked.set(p, false);
            }
            self.nsacked = 0;
        }
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
                self.ooo_held -= 1;
                self.epsn += 1;
            }
            RxVerdict::Accepted
        } else if psn - self.epsn >= self.ooo_bits.capacity() {
            // beyond the receive window: dropped, the sender resends it
            RxVerdict::DuplicateAck
        } else {
            self.ooo_bits.set(psn, true);
            self.ooo_held += 1;
            RxVerdict::AcceptedAck
        }
    }

    #[inline]
    fn expected(&self) -> u32 {
        self.epsn
    }

    #[inline]
    fn blocked(&self, seq: &SendSeq, psn: u32, wnd: u32) -> bool {
        if !(self.sack && self.in_recovery) {
            return psn == seq.nxt && seq.nxt.saturating_sub(seq.una) >= wnd;
        }
        if self.first_rtx && self.retx == Some(psn) {
            return false;
        }
        if self.rerxt == Some(psn) {
            // a lost retransmission left the network: it takes its own place
            return self.pipe(seq) > wnd;
        }
        // RFC 6675 §5 step (C): send while cwnd − pipe ≥ 1 segment, new
        // data within the receive window
        (psn == seq.nxt && seq.nxt - seq.una >= self.rwnd) || self.pipe(seq) >= wnd
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
        let mut r = TcpRecovery::new(64, 10 * US, 200 * US, 1_000_000 * US, false);
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
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, false);
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
        let mut r = TcpRecovery::new(64, US, US, US, false);
        assert_eq!(r.on_data(0), RxVerdict::Accepted);
        assert_eq!(r.on_data(2), RxVerdict::AcceptedAck);
        assert_eq!(r.on_data(3), RxVerdict::AcceptedAck);
        assert_eq!(r.on_data(2), RxVerdict::DuplicateAck);
        assert_eq!(r.on_data(0), RxVerdict::DuplicateAck);
        assert_eq!(r.on_data(1), RxVerdict::Accepted);
        assert_eq!(r.expected(), 4);
    }

    /// A toy path of whole round trips: the sender sends what
    /// [`RecoveryLaw::blocked`] lets through a fixed window of `w`, the first
    /// transmission of each PSN in `drop` is lost, the receiver ACKs every
    /// arrival (with its SACK block when out of order) and each ACK comes
    /// back one round trip later, releasing what it allows. The timer never
    /// fires. Returns (round, PSN) of every retransmission and the round in
    /// which the last ACK arrives.
    fn toy(sack: bool, n: u32, w: u32, drop: &[u32]) -> (Vec<(u32, u32)>, u32) {
        let mut snd = TcpRecovery::new(64, 10 * US, 1_000_000 * US, 1_000_000 * US, sack);
        let mut rcv = TcpRecovery::new(64, 10 * US, 1_000_000 * US, 1_000_000 * US, sack);
        let mut s = SendSeq::default();
        let mut lost: Vec<u32> = drop.to_vec();
        let mut wire: Vec<u32> = Vec::new();
        let mut retx = Vec::new();
        let send = |round: u32,
                    snd: &mut TcpRecovery,
                    s: &mut SendSeq,
                    wire: &mut Vec<u32>,
                    retx: &mut Vec<(u32, u32)>| loop {
            let p = snd.next_psn(s);
            if p >= n || snd.blocked(s, p, w) {
                break;
            }
            snd.on_send(s, p, u64::from(round) * 100 * US, 0);
            if p == s.nxt {
                s.nxt += 1;
                s.max = s.max.max(s.nxt);
            } else {
                retx.push((round, p));
            }
            wire.push(p);
        };
        send(0, &mut snd, &mut s, &mut wire, &mut retx);
        for round in 1..100 {
            let mut acks = Vec::new();
            for p in std::mem::take(&mut wire) {
                if let Some(i) = lost.iter().position(|&l| l == p) {
                    lost.remove(i);
                    continue;
                }
                let v = rcv.on_data(p);
                let e = rcv.expected();
                let fb = match rcv.sack_block(p) {
                    Some((lo, hi)) if sack && v == RxVerdict::AcceptedAck => {
                        Feedback::AckBlock(lo, hi)
                    }
                    _ => Feedback::Ack,
                };
                acks.push((e, fb));
            }
            for (a, fb) in acks {
                snd.on_ack(&mut s, a, fb, u64::from(round) * 100 * US, 0);
                send(round, &mut snd, &mut s, &mut wire, &mut retx);
            }
            if s.una == n {
                return (retx, round);
            }
        }
        panic!("no progress: {s:?}");
    }

    #[test]
    fn sack_resends_every_loss_of_a_window_in_one_round_trip_newreno_one_per_round_trip() {
        // K = 4 of a window of 20 segments lost (PSNs 2, 5, 8, 11). NewReno
        // (RFC 6582) resends the first hole on the third duplicate ACK and
        // each further one on the partial ACK of the previous, one per round
        // trip: retransmissions in rounds 1..=K, the last ACK in round K + 1
        // = 5. SACK with RFC 6675 (DupThresh SACKed segments above a hole
        // make it lost) resends all four in round 1 and is done in round 2:
        // K − 1 = 3 round trips sooner (Fall and Floyd, "Simulation-based
        // comparisons of Tahoe, Reno and SACK TCP", CCR 1996, §5).
        let drop = [2, 5, 8, 11];
        let (nr, nr_done) = toy(false, 20, 20, &drop);
        assert_eq!(nr, vec![(1, 2), (2, 5), (3, 8), (4, 11)]);
        assert_eq!(nr_done, 5);
        let (sk, sk_done) = toy(true, 20, 20, &drop);
        assert_eq!(sk, vec![(1, 2), (1, 5), (1, 8), (1, 11)]);
        assert_eq!(sk_done, 2);
    }

    #[test]
    fn psn_ring_counts_and_finds_across_words() {
        // a ring of 128 bits holding PSNs 60, 63, 64, 70 and 130 (bit 2)
        let mut b = PsnBits::new(2);
        for p in [60, 63, 64, 70, 130] {
            b.set(p, true);
        }
        assert_eq!(b.count(60, 71), 4);
        assert_eq!(b.count(61, 64), 1);
        assert_eq!(b.count(100, 131), 1);
        assert_eq!(b.nth_highest(50, 71, 1), Some(70));
        assert_eq!(b.nth_highest(50, 71, 3), Some(63));
        assert_eq!(b.nth_highest(50, 71, 4), Some(60));
        assert_eq!(b.nth_highest(61, 71, 4), None);
        assert_eq!(b.nth_highest(100, 131, 1), Some(130));
        assert_eq!(b.first_clear(63, 70), Some(65));
        assert_eq!(b.first_clear(63, 65), None);
    }
}
