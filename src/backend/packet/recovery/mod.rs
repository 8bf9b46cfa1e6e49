//! Loss recovery: how a queue pair's sender finds out what was lost and what
//! it retransmits, and what its receiver does with a packet that is not the
//! next expected one. One file per law, one arm per law in [`Recovery`].
//!
//! Today's law is go-back-N ([`GoBackN`]), what RDMA reliable connection and
//! this model's TCP-like path both run. The sender's sequence space
//! ([`SendSeq`]) belongs to the transport; a law moves it on the events it
//! sees:
//!
//! * [`RecoveryLaw::next_psn`]: the PSN the sender transmits next;
//! * [`RecoveryLaw::on_send`]: a data packet left (arms the retransmission timer);
//! * [`RecoveryLaw::on_ack`]: a cumulative ACK or a NACK arrived (advance, rewind);
//! * [`RecoveryLaw::on_timeout`]: the retransmission timer fired;
//! * [`RecoveryLaw::on_data`]: the receiver got a data packet (accept, buffer,
//!   discard; whether to NACK).
//!
//! A new law (selective repeat, NACK on trimmed packets, go-back-0) is a file
//! here with its state and `impl RecoveryLaw`, an arm in [`Recovery`] and in
//! its dispatch below, and a value of the scenario's loss-recovery setting.
//! Information an ACK does not carry yet (a SACK bitmap, a trimmed header's
//! PSN) goes into the packet record and the arguments of `on_ack`.

mod go_back_n;

pub use go_back_n::GoBackN;

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
}

/// What an ACK or NACK did to the sender's sequence space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckEffect {
    /// `una` advanced (new data acknowledged).
    pub advanced: bool,
    /// `nxt` moved: the transport must find the message holding it again.
    pub moved: bool,
    /// A NACK rewound the sender (counted as a NACK rewind).
    pub nack_rewind: bool,
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
}

/// What the receiver does with a data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxVerdict {
    /// Already received: discarded, counted as a duplicate.
    Duplicate,
    /// Accepted (in order, or buffered beyond a gap).
    Accepted,
    /// Out of order and discarded; `Some(psn)`: send a NACK expecting `psn`.
    Discarded(Option<u32>),
}

/// The interface every loss-recovery law implements, statically: the state of
/// one queue pair (both ends). Times in picoseconds.
pub trait RecoveryLaw {
    /// The PSN the sender transmits next.
    #[inline]
    fn next_psn(&self, seq: &SendSeq) -> u32 {
        seq.nxt
    }
    /// A data packet is about to leave at `now` with `seq` as it was before it
    /// (`rto` is the configured timeout): the time of a timer event to
    /// schedule, if one is needed.
    fn on_send(&mut self, seq: &SendSeq, now: u64, rto: u64) -> Option<u64>;
    /// A cumulative ACK (or, with `nack`, a NACK) for every PSN below `psn`.
    fn on_ack(&mut self, seq: &mut SendSeq, psn: u32, nack: bool, now: u64, rto: u64) -> AckEffect;
    /// The retransmission timer fired at `now`.
    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect;
    /// Receiver: data packet `psn` arrived.
    fn on_data(&mut self, psn: u32) -> RxVerdict;
    /// Receiver: the next PSN expected in order (every PSN below it is received).
    fn expected(&self) -> u32;
}

/// The loss-recovery state of one queue pair: one arm per law.
#[derive(Clone, Debug)]
pub enum Recovery {
    /// Go-back-N (RDMA RC as deployed, and this model's TCP-like path).
    GoBackN(GoBackN),
}

impl Recovery {
    /// See [`RecoveryLaw::next_psn`].
    #[inline]
    pub fn next_psn(&self, seq: &SendSeq) -> u32 {
        match self {
            Recovery::GoBackN(r) => r.next_psn(seq),
        }
    }
    /// See [`RecoveryLaw::on_send`].
    #[inline]
    pub fn on_send(&mut self, seq: &SendSeq, now: u64, rto: u64) -> Option<u64> {
        match self {
            Recovery::GoBackN(r) => r.on_send(seq, now, rto),
        }
    }
    /// See [`RecoveryLaw::on_ack`].
    #[inline]
    pub fn on_ack(
        &mut self,
        seq: &mut SendSeq,
        psn: u32,
        nack: bool,
        now: u64,
        rto: u64,
    ) -> AckEffect {
        match self {
            Recovery::GoBackN(r) => r.on_ack(seq, psn, nack, now, rto),
        }
    }
    /// See [`RecoveryLaw::on_timeout`].
    #[inline]
    pub fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, rto: u64) -> TimerEffect {
        match self {
            Recovery::GoBackN(r) => r.on_timeout(seq, now, rto),
        }
    }
    /// See [`RecoveryLaw::on_data`].
    #[inline]
    pub fn on_data(&mut self, psn: u32) -> RxVerdict {
        match self {
            Recovery::GoBackN(r) => r.on_data(psn),
        }
    }
    /// See [`RecoveryLaw::expected`].
    #[inline]
    pub fn expected(&self) -> u32 {
        match self {
            Recovery::GoBackN(r) => r.expected(),
        }
    }
}
