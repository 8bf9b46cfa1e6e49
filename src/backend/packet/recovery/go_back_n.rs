//! Go-back-N, as RDMA reliable connection runs it (IBA vol. 1 §9.7).
//!
//! **Sender.** A retransmission timer per queue pair
//! ([`PacketConfig::rto`](crate::backend::packet::PacketConfig::rto)), armed
//! when a packet leaves with nothing outstanding, pushed back by every ACK that
//! acknowledges new data, doubling on consecutive timeouts up to 64×; when it
//! fires the sender rewinds to the oldest unacknowledged PSN and sends
//! everything again from there. A NACK for the oldest unacknowledged PSN
//! rewinds the sender at once.
//!
//! **Receiver.** Strict in order under ECMP (a flow's packets follow one path,
//! so a gap means loss): an out-of-order packet is discarded and the first one
//! of a gap triggers one NACK carrying the expected PSN. Under adaptive,
//! flowlet or spray routing reordering is normal: the receiver keeps a bitmap
//! of the PSNs received beyond the expected one (at most one window), never
//! NACKs, and loss is left to the timeout.
//!
//! **Trimming.** A trimmed header (NDP's trimming at a full queue) at or
//! beyond the expected PSN is a loss the receiver knows of at once: it sends
//! the gap's NACK then (one per gap, as for an out-of-order packet, and again
//! when the expected PSN's resent copy is trimmed too), and the sender goes
//! back to the expected PSN.

use super::{AckEffect, Feedback, PsnBits, RecoveryLaw, RxVerdict, SendSeq, TimerEffect};

/// Largest backoff exponent: the timeout grows to at most 2⁶ = 64 × `rto`.
const MAX_BACKOFF: u32 = 6;

/// Go-back-N state of one queue pair, both ends.
#[derive(Clone, Debug)]
pub struct GoBackN {
    /// Retransmission deadline, ps.
    pub rto_deadline: u64,
    /// An `Rto` event is pending.
    pub rto_pending: bool,
    /// Consecutive timeouts (backoff exponent).
    pub rto_backoff: u32,
    /// Receiver: next expected PSN.
    pub epsn: u32,
    /// Receiver: a NACK for the current gap was sent.
    pub nack_sent: bool,
    /// Receiver tolerates reordering (adaptive routing or spraying): buffer
    /// beyond a gap, never NACK.
    pub reorder: bool,
    /// Receiver (reordering mode): PSNs received beyond `epsn`, ring bitmap
    /// of a power-of-two number of bits, at least one window.
    pub ooo_bits: PsnBits,
}

impl GoBackN {
    /// A queue pair whose windows hold at most `window_pkts` packets; `reorder`
    /// as for [`GoBackN::reorder`].
    pub fn new(window_pkts: u32, reorder: bool) -> GoBackN {
        let words = if reorder {
            (window_pkts as usize).next_power_of_two().div_ceil(64)
        } else {
            0
        };
        GoBackN {
            rto_deadline: 0,
            rto_pending: false,
            rto_backoff: 0,
            epsn: 0,
            nack_sent: false,
            reorder,
            ooo_bits: PsnBits::new(words),
        }
    }
}

impl RecoveryLaw for GoBackN {
    #[inline]
    fn on_send(&mut self, seq: &SendSeq, _psn: u32, now: u64, rto: u64) -> Option<u64> {
        if seq.una >= seq.max {
            // nothing outstanding: the timer starts with this packet
            self.rto_deadline = now + (rto << self.rto_backoff);
        }
        if self.rto_pending {
            return None;
        }
        self.rto_pending = true;
        Some(self.rto_deadline.max(now))
    }

    #[inline]
    fn on_ack(&mut self, seq: &mut SendSeq, a: u32, fb: Feedback, now: u64, rto: u64) -> AckEffect {
        let nack = fb.is_nack();
        let mut e = AckEffect::default();
        if a > seq.una {
            seq.una = a;
            self.rto_backoff = 0;
            self.rto_deadline = now + rto;
            e.advanced = true;
            if seq.nxt < a {
                seq.nxt = a;
                e.moved = true;
            }
        }
        if nack && a == seq.una && a < seq.nxt {
            seq.nxt = a;
            e.moved = true;
            e.nack_rewind = true;
        }
        e
    }

    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect {
        self.rto_pending = false;
        if seq.una >= seq.max {
            return TimerEffect::Idle;
        }
        self.rto_pending = true;
        if now < self.rto_deadline {
            return TimerEffect::Rearm(self.rto_deadline);
        }
        seq.nxt = seq.una;
        self.rto_backoff = (self.rto_backoff + 1).min(MAX_BACKOFF);
        self.rto_deadline = now + (rto << self.rto_backoff);
        TimerEffect::Fired(self.rto_deadline)
    }

    #[inline]
    fn on_data(&mut self, psn: u32) -> RxVerdict {
        if psn < self.epsn || (self.reorder && psn != self.epsn && self.ooo_bits.get(psn)) {
            RxVerdict::Duplicate
        } else if psn == self.epsn {
            self.epsn += 1;
            self.nack_sent = false;
            if self.reorder {
                while self.ooo_bits.get(self.epsn) {
                    let e = self.epsn;
                    self.ooo_bits.set(e, false);
                    self.epsn += 1;
                }
            }
            RxVerdict::Accepted
        } else if self.reorder {
            debug_assert!(
                psn - self.epsn < self.ooo_bits.capacity(),
                "PSN beyond the window"
            );
            self.ooo_bits.set(psn, true);
            RxVerdict::Accepted
        } else if self.nack_sent {
            RxVerdict::Discarded(None)
        } else {
            self.nack_sent = true;
            RxVerdict::Discarded(Some(self.epsn))
        }
    }

    #[inline]
    fn expected(&self) -> u32 {
        self.epsn
    }

    fn on_trimmed(&mut self, psn: u32) -> Option<Feedback> {
        // The expected PSN trimmed is a loss the NACK already sent (if any)
        // did not cover: the copy it asked for was trimmed again.
        if psn < self.epsn
            || (psn != self.epsn && self.nack_sent)
            || (self.reorder && self.ooo_bits.get(psn))
        {
            return None;
        }
        self.nack_sent = true;
        Some(Feedback::Nack)
    }
}
