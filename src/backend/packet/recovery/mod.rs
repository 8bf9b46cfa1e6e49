//! Loss recovery: how a queue pair's sender finds out what was lost and what
//! it retransmits, and what its receiver does with a packet that is not the
//! next expected one. One file per law, one arm per law in [`Recovery`]:
//!
//! * [`GoBackN`] (default): RDMA reliable connection as IBA specifies it, and
//!   this model's TCP-like path;
//! * [`SelectiveRepeat`]: IRN (Mittal et al., SIGCOMM 2018), what ConnectX-6
//!   and later NICs run: resend only what is missing;
//! * [`GoBack0`]: a loss restarts the whole message (IRN's contrast case);
//! * [`TcpRecovery`]: TCP's, duplicate ACKs, fast retransmit and NewReno fast
//!   recovery (RFC 5681, RFC 6582), or with SACK (the default) RFC 6675's
//!   recovery, under an RFC 6298 timer; the TCP path's default.
//!
//! The sender's sequence space ([`SendSeq`]) belongs to the transport; a law
//! moves it on the events it sees:
//!
//! * [`RecoveryLaw::next_psn`]: the PSN the sender transmits next (`nxt`, or
//!   a hole to fill first);
//! * [`RecoveryLaw::on_send`]: a data packet left (arms the retransmission timer);
//! * [`RecoveryLaw::on_ack`]: a cumulative ACK or a NACK arrived, with what it
//!   carries ([`Feedback`]: a selectively acknowledged or a trimmed PSN);
//! * [`RecoveryLaw::on_timeout`]: the retransmission timer fired;
//! * [`RecoveryLaw::on_data`]: the receiver got a data packet (accept, buffer,
//!   discard; whether to NACK);
//! * [`RecoveryLaw::on_trimmed`]: the receiver got a trimmed header (packet
//!   trimming, NDP): whether to NACK at once.
//!
//! A new law is a file here with its state and `impl RecoveryLaw`, an arm in
//! [`Recovery`] and in its dispatch below, and a value of the scenario's
//! `fabric.loss_recovery` ([`crate::mechanism::LossRecovery`]).

mod go_back_0;
mod go_back_n;
mod selective;
mod tcp;

pub use go_back_0::GoBack0;
pub use go_back_n::GoBackN;
pub use selective::SelectiveRepeat;
pub use tcp::{
    RttEstimator, SackOption, TcpRecovery, CLOCK_G, DUP_THRESH, SACK_BLOCKS, TCP_MAX_QUICKACKS,
};

/// The sender's sequence space of one queue pair, PSNs (32-bit, never wrap
/// within a run).
#[derive(Clone, Copy, Debug, Default)]
pub struct SendSeq {
    /// Next PSN to send.
    pub nxt: u32,
    /// Oldest unacknowledged PSN.
    pub una: u32,
    /// One past the highest PSN ever sent.
    pub max: u32,
    /// First PSN of the message holding `una` (kept by the transport; what
    /// go-back-0 restarts from).
    pub msg_start: u32,
    /// One past the last PSN posted (kept by the transport): PSNs from
    /// `max` up to it are data waiting to be sent for the first time (TCP's
    /// tail loss probe sends one when there is, RFC 8985 §7.3).
    pub posted: u32,
}

/// What an ACK or NACK tells the sender besides its cumulative PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feedback {
    /// A cumulative ACK.
    Ack,
    /// A go-back-N NACK: the receiver expects the cumulative PSN and saw a
    /// later one (or a trimmed header).
    Nack,
    /// A selective NACK (IRN): the receiver holds this PSN, beyond a gap.
    Sack(u32),
    /// A cumulative ACK carrying a TCP SACK block (RFC 2018): the receiver
    /// holds PSNs `[.0, .1)` beyond the cumulative one.
    AckBlock(u32, u32),
    /// A cumulative ACK whose block is a D-SACK (RFC 2883 §4): the receiver
    /// got PSNs `[.0, .1)` again, below the cumulative PSN or already held.
    Dsack(u32, u32),
    /// A trimmed header of this PSN reached the receiver: its payload was cut
    /// by a full switch queue and must be sent again.
    Trimmed(u32),
}

impl Feedback {
    /// Anything but a plain cumulative ACK.
    #[inline]
    pub fn is_nack(self) -> bool {
        !matches!(
            self,
            Feedback::Ack | Feedback::AckBlock(..) | Feedback::Dsack(..)
        )
    }
}

/// What an ACK or NACK did to the sender's sequence space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckEffect {
    /// `una` advanced (new data acknowledged).
    pub advanced: bool,
    /// `nxt` moved: the transport must find the message holding it again.
    pub moved: bool,
    /// A NACK rewound the sender or started a recovery (counted as a NACK rewind).
    pub nack_rewind: bool,
    /// Schedule a retransmission-timer event at this time, ps (its deadline
    /// moved before the pending event's).
    pub timer: Option<u64>,
    /// A duplicate ACK: it acknowledges nothing new while data is
    /// outstanding (TCP's law only; RFC 5681 §2).
    pub dupack: bool,
    /// This ACK started a fast retransmit (TCP's law: the third duplicate
    /// ACK, RACK) or showed that a tail loss probe repaired a loss (RFC 8985
    /// §7.4): a loss the congestion control answers.
    pub loss: bool,
    /// The sender is in fast recovery once this ACK is applied (TCP's law).
    pub in_recovery: bool,
}

/// What the retransmission timer found when it fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerEffect {
    /// Nothing outstanding: the timer stops.
    Idle,
    /// Progress since it was armed: fire again at this time, ps.
    Rearm(u64),
    /// A timeout: the sender was rewound; fire again at this time, ps.
    Fired(u64),
    /// Not a timeout: the timer found something to send (TCP's RACK-TLP,
    /// RFC 8985: losses the reordering timer marked, or a tail loss
    /// probe); fire again at this time, ps. `loss`: a recovery started,
    /// which the congestion control answers as a fast retransmit.
    Resend {
        /// Next timer event, ps.
        at: u64,
        /// A loss recovery started.
        loss: bool,
    },
}

/// What a sender knew when its retransmission timer fired (TCP; Linux
/// counts the first as `TCPTimeouts`, the others among its recovery
/// failures `TCPSackRecoveryFail` / `TCPRenoRecoveryFail`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutKind {
    /// The law does not tell timeouts apart (the RDMA recoveries).
    Unclassified,
    /// No loss signal: no recovery running, nothing SACKed, no duplicate
    /// ACK since the last advance. The window or its whole tail was lost
    /// and no ACK told the sender (a drop-tail lock-out): no ACK-clocked
    /// recovery can see it.
    Silent,
    /// Every segment neither acknowledged nor SACKed had been
    /// retransmitted (in a recovery, or in one that ended as `una` passed
    /// its recovery point while holes above it were still out): a
    /// retransmission was lost and nothing sent after it was delivered, so
    /// RACK has nothing to time it against and TLP is off in recovery and
    /// while anything is SACKed (RFC 8985 §6.2, §7.2); only the timer finds
    /// it.
    LostRetransmission,
    /// In a recovery, lost segments the sender knew of were still unsent
    /// because the window held them (PRR, RFC 6937 §3.1, or cwnd − pipe),
    /// and no ACK came to open it: what was in flight was lost as well, so
    /// the ACK clock the recovery runs on had stopped. Only the timer
    /// restarts it ([`TimeoutKind::with_window_held`]).
    WindowHeld,
    /// Anything else: a loss the sender was told of, could send, and had
    /// not resent.
    Recovery,
}

impl TimeoutKind {
    /// This kind, told apart by whether the window held the retransmission
    /// the sender would have sent next as the timer fired (`held`, read by the
    /// transport from [`Recovery::blocked`] before the timeout reset the
    /// sender): a [`TimeoutKind::Recovery`] whose window held its next
    /// retransmission is [`TimeoutKind::WindowHeld`].
    pub fn with_window_held(self, held: bool) -> TimeoutKind {
        match self {
            TimeoutKind::Recovery if held => TimeoutKind::WindowHeld,
            k => k,
        }
    }
}

/// What the receiver does with a data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxVerdict {
    /// Already received: discarded, counted as a duplicate.
    Duplicate,
    /// Accepted (in order, or buffered beyond a gap).
    Accepted,
    /// Accepted beyond a gap, and the law NACKs it at once: a selective NACK
    /// carrying the expected PSN and this one (IRN).
    AcceptedNack,
    /// Out of order and discarded; `Some(psn)`: send a NACK expecting `psn`.
    Discarded(Option<u32>),
    /// Accepted beyond a gap, and ACKed at once with the expected PSN (a
    /// TCP duplicate ACK).
    AcceptedAck,
    /// Already received (or beyond the receive window): discarded, and ACKed
    /// at once with the expected PSN (a TCP duplicate ACK).
    DuplicateAck,
}

/// The interface every loss-recovery law implements, statically: the state of
/// one queue pair (both ends). Times in picoseconds.
pub trait RecoveryLaw {
    /// The PSN the sender transmits next.
    #[inline]
    fn next_psn(&self, seq: &SendSeq) -> u32 {
        seq.nxt
    }
    /// Data packet `psn` (what [`RecoveryLaw::next_psn`] returned) is about
    /// to leave at `now` with `seq` as it was before it (`rto` is the
    /// configured timeout): the time of a timer event to schedule, if one is
    /// needed. The transport advances `nxt` and `max` when `psn` was `nxt`.
    fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, rto: u64) -> Option<u64>;
    /// A cumulative ACK for every PSN below `psn`, or a NACK with `fb`.
    fn on_ack(
        &mut self,
        seq: &mut SendSeq,
        psn: u32,
        fb: Feedback,
        now: u64,
        rto: u64,
    ) -> AckEffect;
    /// The retransmission timer fired at `now`.
    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect;
    /// What the sender knew when the timeout [`RecoveryLaw::on_timeout`]
    /// last fired. Laws that do not tell timeouts apart say
    /// [`TimeoutKind::Unclassified`].
    #[inline]
    fn last_timeout_kind(&self) -> TimeoutKind {
        TimeoutKind::Unclassified
    }
    /// Receiver: data packet `psn` arrived.
    fn on_data(&mut self, psn: u32) -> RxVerdict;
    /// Receiver: the next PSN expected in order (every PSN below it is received).
    fn expected(&self) -> u32;
    /// Receiver: the trimmed header of data packet `psn` arrived. `Some(f)`:
    /// send a NACK expecting [`RecoveryLaw::expected`] with feedback `f`.
    fn on_trimmed(&mut self, psn: u32) -> Option<Feedback>;
    /// Sender: whether sending `psn` (what [`RecoveryLaw::next_psn`]
    /// returned) must wait for an ACK under the window `wnd`, packets. By
    /// default the window bounds new data only (`nxt − una`; a hole below
    /// it must go out for `una` to move).
    #[inline]
    fn blocked(&self, seq: &SendSeq, psn: u32, wnd: u32) -> bool {
        psn == seq.nxt && seq.nxt.saturating_sub(seq.una) >= wnd
    }
}

/// The loss-recovery state of one queue pair: one arm per law.
#[derive(Clone, Debug)]
pub enum Recovery {
    /// Go-back-N (RDMA RC as IBA specifies it, and this model's TCP-like path).
    GoBackN(GoBackN),
    /// Selective repeat (IRN).
    SelectiveRepeat(SelectiveRepeat),
    /// Go-back-0 (restart the message).
    GoBack0(GoBack0),
    /// TCP: fast retransmit, NewReno fast recovery, RFC 6298 timer.
    Tcp(TcpRecovery),
}

/// Calls one method on whichever law a [`Recovery`] holds.
macro_rules! with_law {
    ($self:expr, $r:ident => $e:expr) => {
        match $self {
            Recovery::GoBackN($r) => $e,
            Recovery::SelectiveRepeat($r) => $e,
            Recovery::GoBack0($r) => $e,
            Recovery::Tcp($r) => $e,
        }
    };
}

impl Recovery {
    /// See [`RecoveryLaw::next_psn`].
    #[inline]
    pub fn next_psn(&self, seq: &SendSeq) -> u32 {
        with_law!(self, r => r.next_psn(seq))
    }
    /// See [`RecoveryLaw::on_send`].
    #[inline]
    pub fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, rto: u64) -> Option<u64> {
        with_law!(self, r => r.on_send(seq, psn, now, rto))
    }
    /// See [`RecoveryLaw::on_ack`].
    #[inline]
    pub fn on_ack(
        &mut self,
        seq: &mut SendSeq,
        psn: u32,
        fb: Feedback,
        now: u64,
        rto: u64,
    ) -> AckEffect {
        with_law!(self, r => r.on_ack(seq, psn, fb, now, rto))
    }
    /// See [`RecoveryLaw::on_timeout`].
    #[inline]
    pub fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect {
        with_law!(self, r => r.on_timeout(seq, now, rto))
    }
    /// See [`RecoveryLaw::last_timeout_kind`].
    #[inline]
    pub fn last_timeout_kind(&self) -> TimeoutKind {
        with_law!(self, r => r.last_timeout_kind())
    }
    /// See [`RecoveryLaw::on_data`].
    #[inline]
    pub fn on_data(&mut self, psn: u32) -> RxVerdict {
        with_law!(self, r => r.on_data(psn))
    }
    /// See [`RecoveryLaw::expected`].
    #[inline]
    pub fn expected(&self) -> u32 {
        with_law!(self, r => r.expected())
    }
    /// See [`RecoveryLaw::on_trimmed`].
    #[inline]
    pub fn on_trimmed(&mut self, psn: u32) -> Option<Feedback> {
        with_law!(self, r => r.on_trimmed(psn))
    }
    /// See [`RecoveryLaw::blocked`].
    #[inline]
    pub fn blocked(&self, seq: &SendSeq, psn: u32, wnd: u32) -> bool {
        with_law!(self, r => r.blocked(seq, psn, wnd))
    }
}

/// A receiver's ring of PSNs received beyond the one it expects (go-back-N
/// with reordering, TCP): one bit per PSN modulo a power-of-two capacity.
#[derive(Clone, Debug)]
pub struct PsnBits(Vec<u64>);

impl PsnBits {
    /// A ring of `words` 64-bit words (at least one; a power of two of bits
    /// when `words` comes from a power-of-two window).
    pub fn new(words: usize) -> PsnBits {
        PsnBits(vec![0; words.max(1)])
    }

    /// Bits in the ring.
    #[inline]
    pub fn capacity(&self) -> u32 {
        self.0.len() as u32 * 64
    }

    /// Whether `psn` is held.
    #[inline]
    pub fn get(&self, psn: u32) -> bool {
        let i = psn & (self.capacity() - 1);
        self.0[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// How many PSNs of `[lo, hi)` are held (`hi − lo` at most the capacity).
    pub fn count(&self, mut lo: u32, hi: u32) -> u32 {
        let cap = self.capacity();
        let mut n = 0;
        while lo < hi {
            let i = lo & (cap - 1);
            let bit = i % 64;
            let take = (64 - bit).min(hi - lo);
            let mask = if take == 64 {
                u64::MAX
            } else {
                ((1u64 << take) - 1) << bit
            };
            n += (self.0[(i / 64) as usize] & mask).count_ones();
            lo += take;
        }
        n
    }

    /// The `n`-th highest held PSN of `[lo, hi)` (`n` ≥ 1), if `n` are held.
    pub fn nth_highest(&self, lo: u32, hi: u32, n: u32) -> Option<u32> {
        let cap = self.capacity();
        let mut left = n;
        let mut h = hi;
        while h > lo {
            // the word holding h − 1, down to its first bit or lo
            let i = (h - 1) & (cap - 1);
            let bit = i % 64;
            let take = (bit + 1).min(h - lo);
            let w = self.0[(i / 64) as usize];
            let mask = if take == 64 {
                u64::MAX
            } else {
                ((1u64 << take) - 1) << (bit + 1 - take)
            };
            let mut m = w & mask;
            let c = m.count_ones();
            if c < left {
                left -= c;
                h -= take;
                continue;
            }
            // the left-th highest set bit of m
            loop {
                let top = 63 - m.leading_zeros();
                left -= 1;
                if left == 0 {
                    return Some(h - 1 - (bit - top));
                }
                m &= !(1u64 << top);
            }
        }
        None
    }

    /// The lowest PSN of `[lo, hi)` not held, if there is one.
    pub fn first_clear(&self, lo: u32, hi: u32) -> Option<u32> {
        self.first_where(lo, hi, true)
    }

    /// The lowest PSN of `[lo, hi)` held, if there is one.
    pub fn first_set(&self, lo: u32, hi: u32) -> Option<u32> {
        self.first_where(lo, hi, false)
    }

    /// The lowest PSN of `[lo, hi)` whose bit is set (`clear`: not set), a
    /// word of 64 PSNs at a time.
    fn first_where(&self, mut lo: u32, hi: u32, clear: bool) -> Option<u32> {
        let cap = self.capacity();
        while lo < hi {
            let i = lo & (cap - 1);
            let bit = i % 64;
            let take = (64 - bit).min(hi - lo);
            let word = self.0[(i / 64) as usize];
            let w = if clear { !word } else { word } >> bit;
            let w = if take == 64 {
                w
            } else {
                w & ((1u64 << take) - 1)
            };
            if w != 0 {
                return Some(lo + w.trailing_zeros());
            }
            lo += take;
        }
        None
    }

    /// Marks `psn` held or not.
    #[inline]
    pub fn set(&mut self, psn: u32, v: bool) {
        let i = psn & (self.capacity() - 1);
        let w = &mut self.0[(i / 64) as usize];
        if v {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }
}
