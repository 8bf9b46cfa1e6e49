//! Go-back-0: a loss restarts the whole message from its first packet, the
//! contrast case of IRN's paper (Mittal et al., SIGCOMM 2018, §2: what RoCE
//! NICs did before go-back-N, and what a transport without per-packet state
//! at the receiver must do).
//!
//! **Sender.** As go-back-N ([`GoBackN`]: the same timer, backoff and NACK
//! rule), but a NACK for the oldest unacknowledged PSN or a timeout rewinds to
//! [`SendSeq::msg_start`], the first PSN of the message holding it, and a
//! cumulative ACK does not move the sender forward past what it is resending:
//! every packet of the message goes out again (the ones the receiver already
//! holds arrive as duplicates).
//!
//! **Receiver.** Go-back-N's: strict in order under ECMP, one NACK per gap;
//! trimmed headers NACK at once.

use super::{AckEffect, Feedback, GoBackN, RecoveryLaw, RxVerdict, SendSeq, TimerEffect};

/// Go-back-0 state of one queue pair, both ends: go-back-N's, rewound further.
#[derive(Clone, Debug)]
pub struct GoBack0 {
    gbn: GoBackN,
}

impl GoBack0 {
    /// A queue pair whose windows hold at most `window_pkts` packets; `reorder`
    /// as for [`GoBackN::reorder`].
    pub fn new(window_pkts: u32, reorder: bool) -> GoBack0 {
        GoBack0 {
            gbn: GoBackN::new(window_pkts, reorder),
        }
    }
}

impl RecoveryLaw for GoBack0 {
    #[inline]
    fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, rto: u64) -> Option<u64> {
        self.gbn.on_send(seq, psn, now, rto)
    }

    fn on_ack(&mut self, seq: &mut SendSeq, a: u32, fb: Feedback, now: u64, rto: u64) -> AckEffect {
        let mut e = AckEffect::default();
        if a > seq.una {
            seq.una = a;
            self.gbn.rto_backoff = 0;
            self.gbn.rto_deadline = now.saturating_add(rto);
            e.advanced = true;
        }
        // `nxt` may be below `a` while the message is resent: it stays there
        // (the transport keeps it within the first unacknowledged message).
        if fb.is_nack() && a == seq.una && a < seq.nxt {
            seq.nxt = seq.msg_start.min(a);
            e.moved = true;
            e.nack_rewind = true;
        }
        e
    }

    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect {
        let r = self.gbn.on_timeout(seq, now, rto);
        if let TimerEffect::Fired(_) = r {
            seq.nxt = seq.msg_start.min(seq.una);
        }
        r
    }

    #[inline]
    fn on_data(&mut self, psn: u32) -> RxVerdict {
        self.gbn.on_data(psn)
    }

    #[inline]
    fn expected(&self) -> u32 {
        self.gbn.expected()
    }

    fn on_trimmed(&mut self, psn: u32) -> Option<Feedback> {
        self.gbn.on_trimmed(psn)
    }
}
