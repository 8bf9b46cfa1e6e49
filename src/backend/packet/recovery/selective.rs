//! Selective repeat as IRN runs it (Mittal et al., "Revisiting network
//! support for RDMA", SIGCOMM 2018, §3–4), the loss recovery of ConnectX-6
//! and later NICs.
//!
//! **Receiver.** Accepts packets beyond a gap into a bitmap of one window
//! (a ring of bits allocated with the queue pair; the sender's window bounds
//! how far beyond the expected PSN a packet can be) and, under in-order
//! (ECMP) routing, answers every out-of-order arrival with a selective NACK:
//! the cumulative ACK (expected PSN) and the PSN that arrived. Under
//! reordering routings (adaptive, flowlet, spray) reordering is normal, so a
//! gap is not a loss and it never NACKs on one. A trimmed header (packet
//! trimming) of a PSN it does not hold is NACKed at once with that PSN.
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
    /// Receiver: reordering is normal (adaptive, flowlet or spray routing): no
    /// NACK on a gap.
    reorder: bool,
    /// Receiver: PSNs received beyond `epsn`.
    held: Ring,
}

impl SelectiveRepeat {
    /// A queue pair whose windows hold at most `window_pkts` packets (the
    /// bitmaps' size), `reorder` as for the receiver, and IRN's short timeout
    /// `rto_low`, ps.
    pub fn new(window_pkts: u32, reorder: bool, rto_low: u64) -> SelectiveRepeat {
        let bits = window_pkts.max(64).next_power_of_two();
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
            for p in seq.una..a.min(seq.max) {
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
        if !self.in_recovery {
            self.in_recovery = true;
            self.recovery_seq = seq.max;
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
            return TimerEffect::Idle;
        }
        if now < self.deadline {
            self.timer_at = self.deadline;
            return TimerEffect::Rearm(self.deadline);
        }
        for p in seq.una..seq.max {
            self.mark_due(p);
        }
        self.scan = self.scan.max(seq.max);
        if !self.in_recovery {
            self.in_recovery = true;
            self.recovery_seq = seq.max;
        }
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
        if self.reorder {
            RxVerdict::Accepted
        } else {
            RxVerdict::AcceptedNack
        }
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
