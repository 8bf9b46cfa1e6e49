//! Selective repeat as IRN runs it (Mittal et al., "Revisiting network
//! support for RDMA", SIGCOMM 2018, §3–4), the loss recovery of ConnectX-6
//! and later NICs.
//!
//! **Receiver.** Accepts packets beyond a gap into a bitmap of one window
//! (a ring of bits allocated with the queue pair; the sender's window bounds
//! how far beyond the expected PSN a packet can be) and, under in-order
//! (ECMP) routing, answers every out-of-order arrival with a selective NACK:
//! the cumulative ACK (expected PSN) and the PSN that arrived. Under
//! reordering routings (adaptive, flowlet, spray) it sends the same message,
//! but there a gap is not a loss: the message only says which PSN arrived
//! (a selective ACK), and the sender judges loss by time (below). A trimmed
//! header (packet trimming) of a PSN it does not hold is NACKed at once with
//! that PSN.
//!
//! **Sender.** Keeps which PSNs were selectively acknowledged (a bitmap of
//! one window) and which are due for retransmission. A selective NACK enters
//! *recovery* (until the cumulative ACK passes the highest PSN sent when it
//! began, IRN's recovery sequence) and marks lost every PSN below the one it
//! acknowledges that is neither acknowledged nor already marked — each loss
//! is inferred once (IRN §3.1); a trimmed header's NACK marks its PSN. Due
//! PSNs go out before new ones, lowest first. IRN's BDP-FC bounds the
//! packets outstanding to one window, which the transport enforces.
//!
//! **Under reordering routings** the sender cannot read a selective ACK as
//! "everything below is lost" (IRN §3.1 presumes in-order paths): it marks
//! loss by time as RACK does (RFC 8985 §6.2), the way spraying transports
//! (AWS SRD, Ultra Ethernet) replace duplicate counting. It keeps each PSN's
//! last send time; an acknowledged PSN that was not retransmitted (or was,
//! at least `min_rtt` earlier) gives an RTT sample (`rack_rtt`, the most
//! recently sent one's; `min_rtt`; `srtt`, RFC 6298's gain 1/8) and moves
//! `rack_xmit` to its send time; an unacknowledged PSN sent before
//! `rack_xmit` is lost once `rack_rtt + srtt` has passed since it was sent,
//! else a reordering timer fires then. The reordering window is RACK's cap,
//! SRTT, from the start rather than `min_rtt / 4` grown by D-SACKs: spraying
//! reorders every packet by up to the spread of the paths' queueing, and on
//! a 16-host leaf-spine permutation without loss the adaptive window made
//! 2,808 spurious retransmissions (0.790 of the line rate against go-back-N's
//! 0.924) where SRTT makes 14 (0.909). And the window bounds the packets in
//! flight, neither cumulatively nor selectively acknowledged (what spraying
//! transports count; IRN's BDP-FC bounds `nxt − una`, which a hole holds
//! still for the RACK wait plus a round trip): the PSN span may then reach
//! twice the window, which the bitmaps are sized for. Without any of this a
//! sprayed loss waited for the retransmission timer, which then resent the
//! whole window the receiver mostly held: with 1% random loss 0.15 of the
//! line rate and 96 timeouts; RACK alone 0.75; both 0.85
//! (`tests/loss_recovery.rs`).
//!
//! **Timeouts** are the last resort (a retransmission lost again, a lost tail
//! under reordering routings): every outstanding PSN not selectively
//! acknowledged becomes due. Two timeouts as in IRN §4.1: `rto_low` (IRN:
//! 100 µs) while at most [`RTO_LOW_PACKETS`] packets are outstanding — a
//! tail loss has no later packet to reveal it — and `rto` otherwise (IRN's
//! RTO_high, 320 µs at 40 Gb/s); the timer restarts on every ACK that
//! acknowledges new data and doubles on consecutive timeouts up to 64×.

use super::{AckEffect, Feedback, RecoveryLaw, RxVerdict, SendSeq, TimerEffect};
use crate::mechanism::defaults::RTO_LOW_PACKETS;

/// Largest backoff exponent: a timeout grows to at most 2⁶ = 64 × its base.
const MAX_BACKOFF: u32 = 6;

/// No timer event pending.
const NO_TIMER: u64 = u64::MAX;

/// A ring of bits indexed by PSN modulo its power-of-two capacity.
#[derive(Clone, Debug)]
struct Ring(Vec<u64>);

impl Ring {
    fn new(bits: u32) -> Ring {
        Ring(vec![0; bits.div_ceil(64) as usize])
    }
    #[inline]
    fn get(&self, psn: u32, mask: u32) -> bool {
        let i = psn & mask;
        self.0[(i / 64) as usize] & (1 << (i % 64)) != 0
    }
    #[inline]
    fn put(&mut self, psn: u32, mask: u32, v: bool) {
        let i = psn & mask;
        let w = &mut self.0[(i / 64) as usize];
        if v {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }
}

/// Selective-repeat state of one queue pair, both ends. PSNs, ps.
#[derive(Clone, Debug)]
pub struct SelectiveRepeat {
    /// Ring capacity − 1 (the capacity is a power of two ≥ one window).
    mask: u32,
    /// Sender: PSNs at or above `una` the receiver holds (selective NACKs).
    sacked: Ring,
    /// Sender: PSNs at or above `una` due for retransmission.
    due: Ring,
    /// Sender: how many bits of `due` are set.
    n_due: u32,
    /// Sender: the lowest due PSN while `n_due > 0`.
    retx_lo: u32,
    /// Sender: PSNs below this were already judged by a selective NACK.
    scan: u32,
    /// Sender: in recovery (IRN), until `una` reaches `recovery_seq`.
    pub in_recovery: bool,
    /// Sender: one past the highest PSN sent when recovery began.
    pub recovery_seq: u32,
    /// Sender: when the current timeout period started, ps.
    armed_at: u64,
    /// Sender: when the retransmission timer expires, ps.
    deadline: u64,
    /// Sender: the time of the pending timer event, or `NO_TIMER`.
    timer_at: u64,
    /// Sender: consecutive timeouts (backoff exponent).
    backoff: u32,
    /// Sender: the short timeout (few packets outstanding), ps.
    rto_low: u64,
    /// Receiver: next expected PSN.
    epsn: u32,
    /// Reordering is normal (adaptive, flowlet or spray routing): the
    /// receiver's selective NACK is only a selective ACK, and the sender
    /// judges loss by time (RACK).
    reorder: bool,
    /// Receiver: PSNs received beyond `epsn`.
    held: Ring,
    /// Sender, reordering routings only (else empty): each PSN's last send
    /// time, ps, indexed as the rings.
    sent_at: Vec<u64>,
    /// Sender, reordering routings: PSNs at or above `una` sent more than once
    /// (their acknowledgement gives no RTT sample: Karn).
    resent: Ring,
    /// Sender, reordering routings: send time of the most recently sent PSN
    /// known delivered (RACK.xmit_ts), ps.
    rack_xmit: u64,
    /// Sender, reordering routings: RTT of that PSN (RACK.rtt), ps.
    rack_rtt: u64,
    /// Sender, reordering routings: least RTT sample, ps (`u64::MAX` before one).
    min_rtt: u64,
    /// Sender, reordering routings: smoothed RTT (RFC 6298, gain 1/8), ps.
    srtt: u64,
    /// Sender, reordering routings: when the next unacknowledged PSN's
    /// reordering window ends, or `NO_TIMER`.
    reo_at: u64,
    /// Sender, reordering routings: bits set in `sacked`.
    n_sacked: u32,
}

impl SelectiveRepeat {
    /// A queue pair whose windows hold at most `window_pkts` packets (the
    /// bitmaps' size), `reorder` as for the receiver, and IRN's short timeout
    /// `rto_low`, ps.
    pub fn new(window_pkts: u32, reorder: bool, rto_low: u64) -> SelectiveRepeat {
        // under reordering routings the window counts what is in flight, not
        // acknowledged either way, so the PSN span may reach twice it
        let span = if reorder {
            window_pkts.saturating_mul(2)
        } else {
            window_pkts
        };
        let bits = span.max(64).next_power_of_two();
        SelectiveRepeat {
            mask: bits - 1,
            sacked: Ring::new(bits),
            due: Ring::new(bits),
            n_due: 0,
            retx_lo: 0,
            scan: 0,
            in_recovery: false,
            recovery_seq: 0,
            armed_at: 0,
            deadline: 0,
            timer_at: NO_TIMER,
            backoff: 0,
            rto_low,
            epsn: 0,
            reorder,
            held: Ring::new(bits),
            sent_at: if reorder {
                vec![0; bits as usize]
            } else {
                Vec::new()
            },
            resent: Ring::new(if reorder { bits } else { 0 }),
            rack_xmit: 0,
            rack_rtt: 0,
            min_rtt: u64::MAX,
            srtt: 0,
            reo_at: NO_TIMER,
            n_sacked: 0,
        }
    }

    /// Reordering routings: `psn` is known delivered at `now` (selectively
    /// or cumulatively acknowledged): RACK's RTT sample and `rack_xmit`
    /// (RFC 8985 §6.2, RACK_update), unless it was retransmitted and the
    /// acknowledgement may be the original's (sooner than `min_rtt` after
    /// the retransmission).
    #[inline]
    fn rack_update(&mut self, psn: u32, now: u64) {
        let m = self.mask;
        let sent = self.sent_at[(psn & m) as usize];
        let rtt = now.saturating_sub(sent);
        if self.resent.get(psn, m) && rtt < self.min_rtt {
            // sooner than a round trip after its retransmission: the
            // original's acknowledgement, no sample
            return;
        }
        self.min_rtt = self.min_rtt.min(rtt);
        self.srtt = if self.srtt == 0 {
            rtt
        } else {
            self.srtt - self.srtt / 8 + rtt / 8
        };
        if sent >= self.rack_xmit {
            self.rack_xmit = sent;
            self.rack_rtt = rtt;
        }
    }

    /// Reordering routings: marks due every unacknowledged PSN sent before
    /// `rack_xmit` whose reordering window has passed at `now` (RFC 8985
    /// §6.2, RACK_detect_loss) and sets `reo_at` to the end of the earliest
    /// window still open. True if a PSN became due.
    fn rack_detect(&mut self, seq: &SendSeq, now: u64) -> bool {
        self.reo_at = NO_TIMER;
        if self.min_rtt == u64::MAX {
            return false;
        }
        // RACK's reordering window at its cap, SRTT (see the module doc)
        let wait = self.rack_rtt.saturating_add(self.srtt);
        let m = self.mask;
        let mut marked = false;
        for p in seq.una..seq.max.min(seq.una + self.cap()) {
            if self.sacked.get(p, m) || self.due.get(p, m) {
                continue;
            }
            let sent = self.sent_at[(p & m) as usize];
            if sent >= self.rack_xmit {
                continue;
            }
            let lost_at = sent.saturating_add(wait);
            if now >= lost_at {
                self.mark_due(p);
                marked = true;
            } else {
                self.reo_at = self.reo_at.min(lost_at);
            }
        }
        marked
    }

    /// Enters recovery (IRN: until `una` passes the highest PSN sent now)
    /// unless already in it; true if it started now.
    #[inline]
    fn enter_recovery(&mut self, seq: &SendSeq) -> bool {
        let start = !self.in_recovery;
        if start {
            self.in_recovery = true;
            self.recovery_seq = seq.max;
        }
        start
    }

    /// Reordering routings: the reordering timer at `reo_at` becomes the
    /// pending timer event if it is earlier; its time if a new event is due.
    #[inline]
    fn arm_reorder(&mut self) -> Option<u64> {
        if self.reo_at != NO_TIMER && (self.timer_at == NO_TIMER || self.reo_at < self.timer_at) {
            self.timer_at = self.reo_at;
            Some(self.reo_at)
        } else {
            None
        }
    }

    /// Packets the ring can tell apart.
    #[inline]
    fn cap(&self) -> u32 {
        self.mask + 1
    }

    /// The timeout for `outstanding` packets: IRN's RTO_low or RTO_high.
    #[inline]
    fn base(&self, outstanding: u32, rto: u64) -> u64 {
        if outstanding <= RTO_LOW_PACKETS {
            self.rto_low.min(rto)
        } else {
            rto
        }
    }

    /// Recomputes the deadline for `outstanding` packets; the time of a new
    /// timer event when it is now earlier than the pending one.
    #[inline]
    fn rearm(&mut self, outstanding: u32, rto: u64) -> Option<u64> {
        let base = self.base(outstanding, rto);
        self.deadline = self
            .armed_at
            .saturating_add(base.saturating_mul(1 << self.backoff));
        if self.timer_at == NO_TIMER || self.deadline < self.timer_at {
            self.timer_at = self.deadline;
            Some(self.deadline)
        } else {
            None
        }
    }

    /// Marks `psn` due for retransmission unless it is held or already due.
    #[inline]
    fn mark_due(&mut self, psn: u32) {
        let m = self.mask;
        if self.sacked.get(psn, m) || self.due.get(psn, m) {
            return;
        }
        self.due.put(psn, m, true);
        self.retx_lo = if self.n_due == 0 {
            psn
        } else {
            self.retx_lo.min(psn)
        };
        self.n_due += 1;
    }

    /// Clears the due bit of `psn` (set) and finds the next due PSN from it.
    #[inline]
    fn clear_due(&mut self, psn: u32, max: u32) {
        self.due.put(psn, self.mask, false);
        self.n_due -= 1;
        if self.n_due > 0 && self.retx_lo == psn {
            self.retx_lo = self.next_due(psn + 1, max);
        }
    }

    /// The lowest due PSN at or above `from` (one exists below `max`).
    #[inline]
    fn next_due(&self, from: u32, max: u32) -> u32 {
        let mut p = from;
        while p < max && !self.due.get(p, self.mask) {
            p += 1;
        }
        p
    }
}

impl RecoveryLaw for SelectiveRepeat {
    /// Under reordering routings the window bounds the packets in flight,
    /// neither cumulatively nor selectively acknowledged (what spraying
    /// transports count), and the bitmaps' span; else IRN's `nxt − una`.
    #[inline]
    fn blocked(&self, seq: &SendSeq, psn: u32, wnd: u32) -> bool {
        let span = seq.nxt.saturating_sub(seq.una);
        psn == seq.nxt
            && if self.reorder {
                span >= self.mask || span - self.n_sacked >= wnd
            } else {
                span >= wnd
            }
    }

    #[inline]
    fn next_psn(&self, seq: &SendSeq) -> u32 {
        if self.n_due > 0 {
            self.retx_lo
        } else {
            seq.nxt
        }
    }

    #[inline]
    fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, rto: u64) -> Option<u64> {
        if psn != seq.nxt {
            self.clear_due(psn, seq.max);
        }
        if self.reorder {
            self.sent_at[(psn & self.mask) as usize] = now;
            self.resent.put(psn, self.mask, psn != seq.nxt);
        }
        if seq.una >= seq.max {
            // nothing outstanding: the timer starts with this packet
            self.armed_at = now;
        }
        let outstanding = seq.max.max(psn + 1) - seq.una;
        self.rearm(outstanding, rto)
    }

    fn on_ack(&mut self, seq: &mut SendSeq, a: u32, fb: Feedback, now: u64, rto: u64) -> AckEffect {
        let mut e = AckEffect::default();
        let m = self.mask;
        if a > seq.una {
            if self.reorder && a <= seq.max {
                self.rack_update(a - 1, now);
            }
            for p in seq.una..a.min(seq.max) {
                if self.reorder && self.sacked.get(p, m) {
                    self.n_sacked -= 1;
                }
                self.sacked.put(p, m, false);
                if self.due.get(p, m) {
                    self.due.put(p, m, false);
                    self.n_due -= 1;
                }
            }
            seq.una = a;
            if seq.nxt < a {
                seq.nxt = a;
                seq.max = seq.max.max(a);
                e.moved = true;
            }
            if self.n_due > 0 && self.retx_lo < a {
                self.retx_lo = self.next_due(a, seq.max);
            }
            if self.in_recovery && a >= self.recovery_seq {
                self.in_recovery = false;
            }
            self.backoff = 0;
            self.armed_at = now;
            e.advanced = true;
            if seq.una < seq.max {
                e.timer = self.rearm(seq.max - seq.una, rto);
            }
        }
        let lost = match fb {
            Feedback::Sack(s) | Feedback::Trimmed(s)
                if s >= seq.una && s < seq.max && s - seq.una < self.cap() =>
            {
                s
            }
            _ => return e,
        };
        if let (true, Feedback::Sack(s)) = (self.reorder, fb) {
            // a selective ACK, not a NACK: loss is judged by time
            if self.due.get(s, m) {
                self.clear_due(s, seq.max);
            }
            if !self.sacked.get(s, m) {
                self.sacked.put(s, m, true);
                self.n_sacked += 1;
                self.rack_update(s, now);
            }
            if self.rack_detect(seq, now) {
                e.nack_rewind = self.enter_recovery(seq);
            }
            if let Some(at) = self.arm_reorder() {
                e.timer = Some(e.timer.map_or(at, |t| t.min(at)));
            }
            return e;
        }
        if self.enter_recovery(seq) {
            e.nack_rewind = true;
        }
        if let Feedback::Sack(s) = fb {
            if self.due.get(s, m) {
                self.clear_due(s, seq.max);
            }
            self.sacked.put(s, m, true);
            // every PSN below the one acknowledged, not judged before, is lost
            for p in self.scan.max(seq.una)..s {
                self.mark_due(p);
            }
            self.scan = self.scan.max(s + 1);
        } else {
            self.mark_due(lost);
        }
        e
    }

    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect {
        if now != self.timer_at {
            // superseded by an earlier deadline that already fired or moved
            return TimerEffect::Idle;
        }
        self.timer_at = NO_TIMER;
        if seq.una >= seq.max {
            self.reo_at = NO_TIMER;
            return TimerEffect::Idle;
        }
        if now < self.deadline {
            // the reordering timer, or the retransmission timer moved on
            let lost = self.reorder && self.reo_at <= now && self.rack_detect(seq, now);
            self.timer_at = self.deadline.min(self.reo_at);
            if lost {
                self.enter_recovery(seq);
                return TimerEffect::Resend {
                    at: self.timer_at,
                    loss: true,
                };
            }
            return TimerEffect::Rearm(self.timer_at);
        }
        self.reo_at = NO_TIMER;
        for p in seq.una..seq.max {
            self.mark_due(p);
        }
        self.scan = self.scan.max(seq.max);
        self.enter_recovery(seq);
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
        self.armed_at = now;
        self.timer_at = NO_TIMER;
        let at = self.rearm(seq.max - seq.una, rto).unwrap_or(self.deadline);
        TimerEffect::Fired(at)
    }

    #[inline]
    fn on_data(&mut self, psn: u32) -> RxVerdict {
        let m = self.mask;
        if psn < self.epsn {
            return RxVerdict::Duplicate;
        }
        if psn == self.epsn {
            self.epsn += 1;
            while self.held.get(self.epsn, m) {
                let e = self.epsn;
                self.held.put(e, m, false);
                self.epsn += 1;
            }
            return RxVerdict::Accepted;
        }
        if psn - self.epsn >= self.cap() {
            // beyond the bitmap (the sender's window keeps it from happening)
            return RxVerdict::Discarded(None);
        }
        if self.held.get(psn, m) {
            return RxVerdict::Duplicate;
        }
        self.held.put(psn, m, true);
        // under reordering routings the same message is a selective ACK
        RxVerdict::AcceptedNack
    }

    #[inline]
    fn expected(&self) -> u32 {
        self.epsn
    }

    fn on_trimmed(&mut self, psn: u32) -> Option<Feedback> {
        if psn < self.epsn || (psn - self.epsn < self.cap() && self.held.get(psn, self.mask)) {
            return None;
        }
        Some(Feedback::Trimmed(psn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue pair (`reorder` as the routing) that sent PSNs 0..8 one ns
    /// apart, as the transport does, and got PSN 0's ACK at 10 ns.
    fn eight_sent(reorder: bool) -> (SelectiveRepeat, SendSeq) {
        let mut sr = SelectiveRepeat::new(16, reorder, 100_000_000);
        let mut seq = SendSeq {
            posted: 100,
            ..SendSeq::default()
        };
        for i in 0..8u64 {
            let psn = seq.nxt;
            sr.on_send(&seq, psn, i * 1000, 320_000_000);
            seq.nxt += 1;
            seq.max = seq.max.max(seq.nxt);
        }
        sr.on_ack(&mut seq, 1, Feedback::Ack, 10_000, 320_000_000);
        (sr, seq)
    }

    #[test]
    fn under_spraying_a_gap_is_lost_only_after_the_rack_wait_and_the_window_counts_what_flies() {
        // Reordering routing: PSNs 0..8 leave 1 ns apart; PSN 0's ACK after
        // 10 ns gives RTT = SRTT = 10 ns. PSN 3 selectively acknowledged at
        // 13 ns: PSNs 1 and 2, sent before it, are not lost yet — RACK waits
        // for rack_rtt + SRTT = 20 ns after each was sent (RFC 8985 §6.2 with
        // the window at its SRTT cap) and arms the timer for PSN 1 at 21 ns.
        // PSN 2 arrives (reordered, not lost) at 14 ns: its 12 ns sample makes
        // SRTT 10.25 ns, so PSN 1's wait ends at 21.25 ns; the timer at 21 ns
        // re-arms for it, then PSN 1 is declared lost and is the next to go,
        // PSN 2 is not resent.
        let (mut sr, mut seq) = eight_sent(true);
        assert_eq!((sr.srtt, sr.min_rtt, sr.rack_rtt), (10_000, 10_000, 10_000));
        let e = sr.on_ack(&mut seq, 1, Feedback::Sack(3), 13_000, 320_000_000);
        assert_eq!(e.timer, Some(21_000), "the reordering timer");
        assert!(!e.nack_rewind && sr.n_due == 0, "nothing lost yet");
        sr.on_ack(&mut seq, 1, Feedback::Sack(2), 14_000, 320_000_000);
        assert_eq!(sr.n_due, 0);
        // the window counts in flight: 7 sent past una, 2 of them SACKed
        assert!(sr.blocked(&seq, seq.nxt, 5));
        assert!(!sr.blocked(&seq, seq.nxt, 6));
        assert_eq!(
            sr.on_timeout(&mut seq, 21_000, 320_000_000),
            TimerEffect::Rearm(21_250)
        );
        assert_eq!(sr.n_due, 0);
        match sr.on_timeout(&mut seq, 21_250, 320_000_000) {
            TimerEffect::Resend { loss: true, .. } => {}
            other => panic!("{other:?}"),
        }
        assert_eq!((sr.n_due, sr.next_psn(&seq)), (1, 1), "PSN 1 only");
        // the receiver side answers a gap with a selective NACK (a SACK here)
        let mut rx = SelectiveRepeat::new(16, true, 100_000_000);
        assert_eq!(rx.on_data(0), RxVerdict::Accepted);
        assert_eq!(rx.on_data(2), RxVerdict::AcceptedNack);
        assert_eq!(rx.on_data(1), RxVerdict::Accepted);
        assert_eq!(rx.expected(), 3);
    }

    #[test]
    fn in_order_routing_keeps_irns_rule_a_sack_marks_every_psn_below_it() {
        // IRN §3.1 under ECMP: a selective NACK of PSN 3 means 1 and 2 are lost.
        let (mut sr, mut seq) = eight_sent(false);
        let e = sr.on_ack(&mut seq, 1, Feedback::Sack(3), 13_000, 320_000_000);
        assert!(e.nack_rewind);
        assert_eq!((sr.n_due, sr.next_psn(&seq)), (2, 1));
        assert!(sr.blocked(&seq, seq.nxt, 7), "IRN's window is nxt − una");
    }
}
