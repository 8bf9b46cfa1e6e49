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
//! most recently received segment). The receiver builds the whole option
//! ([`TcpRecovery::sack_option`]: that block, then the blocks it reported
//! most recently, at most [`SACK_BLOCKS`]); an ordinary ACK carries its
//! first block (offsets from the cumulative ACK, see `Packet::sack_end`), not
//! the two earlier ones a real option repeats: those only matter when an
//! ACK is lost, and a lost ACK's block is then missing from the sender's
//! scoreboard until the cumulative ACK covers it. The sender keeps a
//! scoreboard of SACKed PSNs above `una`. A duplicate ACK is one that SACKs
//! something new (RFC 6675 §2); the third (or three SACKed PSNs above
//! `una`: `IsLost(HighACK)`, §5 step 2) starts loss recovery with
//! RecoveryPoint = the highest PSN sent and retransmits the first lost PSN
//! at once (§5 step 4.3). A PSN is marked lost when three PSNs above it are
//! SACKed (`IsLost`, DupThresh = 3 segments) and it was never sent twice;
//! `pipe` counts the PSNs outstanding neither SACKed nor marked lost (a
//! retransmission in its segment's place). The lowest lost PSN goes first
//! (NextSeg rule 1), else new data within the receive window (rule 2);
//! rules 3 and 4 (MAY: a not-yet-lost hole, the rescue retransmission) are
//! not modelled. How many go out per ACK is PRR's (RFC 6937, Linux's):
//! in proportion to what is delivered while `pipe` exceeds ssthresh (the
//! window the congestion control sets), at most one more than delivered
//! per ACK below it (PRR-SSRB), not RFC 6675's `cwnd − pipe` in one burst.
//! Every loss of a window is thus retransmitted within the recovery's first
//! round trips, where NewReno resends one hole per round trip. Recovery
//! ends when the cumulative ACK reaches RecoveryPoint. A timeout turns off
//! every SACKed bit (RFC 2018 §8: the receiver may have reneged) and goes
//! back to `una` as without SACK.
//!
//! **RACK-TLP** (RFC 8985; `tcp_rack`, with SACK, on by default as Linux).
//! The sender keeps each PSN's last send time. RACK: the most recently
//! sent PSN delivered (ACKed or SACKed; a retransmission delivered sooner
//! than min_RTT after it left is taken for its original, §6.2 step 2) sets
//! RACK.xmit_ts and RACK.rtt; a PSN sent before it is lost once RACK.rtt +
//! reo_wnd has passed since it left (§6.2 step 5), else the reordering
//! timer fires when it will have; reo_wnd = reo_wnd_mult · min_RTT / 4 (at
//! most SRTT), 0 while no reordering was seen and the sender is in recovery
//! or has DupThresh PSNs SACKed (step 4). reo_wnd_mult starts at 1 and grows
//! by one per round trip that brings a D-SACK (a segment delivered twice: a
//! retransmission was spurious, the window too short), and goes back to 1
//! after 16 recoveries without one (step 4's `reo_wnd_persist`). A PSN so
//! marked starts a recovery as the DupThresh rule does; it also finds a lost
//! retransmission, which RFC 6675 leaves to the timer. TLP (§7): while data is outstanding, nothing is
//! SACKed and no recovery runs, the probe timeout PTO = 2 SRTT (+ WCDelAckT
//! = 200 ms when one PSN is outstanding, never past the RTO) is armed on
//! every new PSN sent and every ACK of new data; when it fires, one probe
//! goes out whatever the congestion window (§7.3's `TLP_send_probe`): the
//! first unsent PSN if data is waiting and the receive window allows it,
//! else the highest PSN sent, again; the RTO is armed anew, and no second
//! probe goes out until the episode ends, nor one before an RTT sample
//! since the last probe. §7.4: an ACK beyond a retransmitted probe's tail
//! with no D-SACK of it means the probe repaired a loss, which the
//! congestion control answers as a fast retransmit (cwnd = ssthresh); a
//! D-SACK of the probe or a bare duplicate ACK ends the episode without.
//!
//! **D-SACK** (RFC 2883; `tcp_dsack`, with SACK, on by default as Linux's
//! `net.ipv4.tcp_dsack`). A receiver that gets a segment it already has
//! (below the cumulative ACK, or held beyond a gap) ACKs it at once with a
//! block naming that segment, and after it the regular blocks as RFC 2018
//! orders them (§4: for a duplicate held beyond a gap, first the block it
//! lies in; then the most recently reported), all three carried (the
//! regular ones beside the packet, `Slab::sack_extra`, set on the sender as
//! [`TcpRecovery::ack_extra`]): a spurious retransmission's ACK keeps
//! telling the sender what is held. The sender's RACK widens its
//! reordering window on it (above); it counts as a duplicate ACK only if
//! its regular blocks SACK something new (RFC 6675 §2).
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

use super::{
    AckEffect, Feedback, PsnBits, RecoveryLaw, RxVerdict, SendSeq, TimeoutKind, TimerEffect,
};

/// Clock granularity G of RFC 6298 §2.4, ps: 1 µs, the resolution of
/// Linux's RTT estimator since 4.13 (`tcp_rtt_estimator` works in µs).
pub const CLOCK_G: u64 = 1_000_000;

/// Duplicate ACKs that trigger a fast retransmit (RFC 5681 §3.2, `DupThresh`).
pub const DUP_THRESH: u32 = 3;

/// Longest SACK block an ACK carries, PSNs (its length field is one byte).
pub const SACK_BLOCK_MAX: u32 = 255;

/// Most SACK blocks one option holds with timestamps on (RFC 2018 §3: 40
/// bytes of options, 10 taken by timestamps, 8 per block, 2 for the kind and
/// length: 3 blocks; Linux sends timestamps by default).
pub const SACK_BLOCKS: usize = 3;

/// No PSN (an empty slot of the receiver's reported-block history).
const NO_PSN: u32 = u32::MAX;

/// The SACK option of one ACK as the receiver builds it (RFC 2018 §4, RFC
/// 2883 §4): `blocks[..len]`, each `[lo, hi)` in PSNs, in the order the
/// option lists them; with `dsack`, `blocks[0]` is the D-SACK block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackOption {
    /// The first block reports a duplicate segment (RFC 2883).
    pub dsack: bool,
    /// Blocks in use.
    pub len: u8,
    /// The blocks, `[lo, hi)` PSNs, first `len` used.
    pub blocks: [(u32, u32); SACK_BLOCKS],
}

impl SackOption {
    /// Appends `b` unless the option is full or `b` overlaps a regular block
    /// already listed (RFC 2018 §4: repeated blocks that are not subsets of
    /// one already included; a D-SACK block is no regular block).
    fn push(&mut self, b: (u32, u32)) {
        let first = usize::from(self.dsack);
        let len = usize::from(self.len);
        if len == SACK_BLOCKS
            || self.blocks[first.min(len)..len]
                .iter()
                .any(|&(lo, hi)| b.0 < hi && lo < b.1)
        {
            return;
        }
        self.blocks[len] = b;
        self.len += 1;
    }

    /// The blocks in use.
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }
}

/// Most ACKs a receiver sends at once in quick-ACK mode before it delays
/// them again (Linux's `TCP_MAX_QUICKACKS`, 16; `tcp_incr_quickack` grants
/// rcv_wnd / (2 MSS) of them, at least 2, at most this).
pub const TCP_MAX_QUICKACKS: u32 = 16;

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

/// No timer pending / no deadline, ps.
const NEVER: u64 = u64::MAX;

/// RACK-TLP's worst-case delayed-ACK time WCDelAckT, ps: a probe for a
/// single outstanding segment waits this much longer, since a delayed-ACK
/// receiver may hold its ACK (RFC 8985 §7.2: 200 ms).
pub const TLP_WC_DEL_ACK: u64 = 200_000_000_000;

/// TCP loss-recovery state of one connection, both ends.
#[derive(Clone, Debug)]
pub struct TcpRecovery {
    /// Round-trip estimator.
    pub est: RttEstimator,
    /// Retransmission deadline, ps.
    pub rto_deadline: u64,
    /// Time of the earliest timer event pending, ps ([`u64::MAX`]: none);
    /// an event that fires at another time is stale.
    pub timer_at: u64,
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
    /// A hole to resend before new data (fast retransmit, partial ACK; with
    /// SACK the lowest PSN marked lost).
    pub retx: Option<u32>,
    /// Receiver: next expected PSN.
    pub epsn: u32,
    /// Receiver: PSNs received beyond `epsn`, ring bitmap of at least a window.
    pub ooo_bits: PsnBits,
    /// Receiver: how many PSNs `ooo_bits` holds.
    pub ooo_held: u32,
    /// SACK and RFC 6675 loss recovery are on.
    pub sack: bool,
    /// RACK-TLP (RFC 8985) is on (with SACK only).
    pub rack: bool,
    /// Receive window, packets (what new data may run ahead of `una`).
    pub rwnd: u32,
    /// Sender (SACK): PSNs at or above `una` the receiver reported holding.
    pub sacked: PsnBits,
    /// Sender (SACK): SACKed PSNs in `[una, max)`.
    pub nsacked: u32,
    /// Sender (SACK): PSNs marked lost and not yet sent again.
    lost: PsnBits,
    /// Sender (SACK): PSNs of `lost` in `[una, max)`.
    nlost: u32,
    /// Sender (SACK): PSNs sent more than once (RACK's
    /// `Segment.retransmitted`; the DupThresh rule marks none of them lost
    /// again, RFC 6675 leaves a lost retransmission to the timer).
    rtx: PsnBits,
    /// Sender (SACK): one past the highest PSN sent more than once.
    rtx_high: u32,
    /// Sender (SACK): PSNs below this one were looked at by the DupThresh rule.
    dup_marked: u32,
    /// Sender (SACK): the first retransmission of the episode is pending; it
    /// goes out whatever `pipe` says (RFC 6675 §5 step 4.3).
    pub first_rtx: bool,
    /// Sender (RACK): last transmission time of each PSN, ps (ring as `sacked`).
    xmit: Vec<u64>,
    /// RACK.xmit_ts: send time of the most recently sent segment delivered, ps.
    rack_ts: u64,
    /// RACK.end_seq: one past that segment.
    rack_end: u32,
    /// RACK.rtt: that segment's round trip, ps.
    rack_rtt: u64,
    /// RACK.min_RTT, ps.
    min_rtt: u64,
    /// RACK.reordering_seen: a segment never sent twice was delivered
    /// below one delivered before it.
    reord: bool,
    /// One past the highest PSN delivered (RACK's reordering test).
    fack: u32,
    /// RACK's reordering timer, ps ([`u64::MAX`]: not armed).
    rack_deadline: u64,
    /// TLP's probe timeout, ps ([`u64::MAX`]: not armed).
    tlp_deadline: u64,
    /// TLP.end_seq: a probe is out for the tail ending here.
    tlp_end: Option<u32>,
    /// TLP.is_retrans: the probe out was the highest PSN sent again, not
    /// new data (RFC 8985 §7.3); only such a probe can repair a loss.
    tlp_retrans: bool,
    /// An RTT sample was taken since the last probe: without one no other
    /// probe goes out (RFC 8985 §7.3), so a path that returns no ACK costs
    /// one probe, then the RTO. True at the start: a real connection has
    /// its handshake's sample.
    rtt_since_probe: bool,
    /// A tail loss probe to send (the highest PSN sent, again).
    probe: Option<u32>,
    /// PRR (RFC 6937): packets delivered (cumulatively ACKed or SACKed)
    /// since the recovery started.
    prr_delivered: u32,
    /// PRR: packets sent since the recovery started.
    prr_out: u32,
    /// PRR: RecoverFS, the packets outstanding when the recovery started.
    recover_fs: u32,
    /// PRR: `prr_out` when the last ACK was processed.
    prr_out_at_ack: u32,
    /// PRR: DeliveredData of the last ACK, packets.
    prr_last: u32,
    /// PRR: `pipe` after the last ACK.
    prr_pipe: u32,
    /// Receiver: a duplicate segment is reported in a D-SACK block (RFC
    /// 2883; Linux's `net.ipv4.tcp_dsack`). On with SACK by default.
    pub dsack: bool,
    /// Sender (RACK): RACK.reo_wnd_mult, reo_wnd in quarters of min_RTT
    /// (RFC 8985 §6.2 step 4; Linux's `reo_wnd_steps`, at most 255). One
    /// byte, as Linux's: the state stays small (clippy's enum-size bound).
    reo_wnd_mult: u8,
    /// Sender (RACK): RACK.reo_wnd_persist, recoveries left before
    /// `reo_wnd_mult` goes back to 1 (at most [`REO_WND_PERSIST`]).
    reo_wnd_persist: u8,
    /// Sender (RACK): RACK.dsack_round, one past the highest PSN sent when
    /// a D-SACK last grew `reo_wnd_mult`: no other D-SACK grows it until
    /// `una` passes this (one step per round trip). 0: none (a D-SACK
    /// comes after something was sent, so a round ends at 1 or later).
    dsack_round: u32,
    /// Sender: recovering from a timeout until `una` reaches `recover`
    /// (RFC 8985's "RTO recovery", whose end counts for `reo_wnd_persist`).
    rto_recovery: bool,
    /// Sender: what it knew when the last timeout fired
    /// ([`RecoveryLaw::last_timeout_kind`]).
    timeout_kind: TimeoutKind,
    /// Receiver: a PSN of each of the last SACK blocks reported, most
    /// recent first ([`NO_PSN`]: none): the blocks an option repeats after
    /// its first (RFC 2018 §4), found again around these PSNs.
    reported: [u32; SACK_BLOCKS],
    /// Sender: regular SACK blocks `[lo, hi)` that came with the D-SACK
    /// block of the ACK being processed (RFC 2883 §4: they follow it),
    /// `(0, 0)` for none; the transport sets them before
    /// [`RecoveryLaw::on_ack`], which takes them.
    pub ack_extra: [(u32, u32); SACK_BLOCKS - 1],
}

/// RFC 8985 §6.2 step 4: recoveries without a D-SACK after which
/// `reo_wnd_mult` goes back to 1 (Linux's `TCP_RACK_RECOVERY_THRESH`).
pub const REO_WND_PERSIST: u8 = 16;

impl TcpRecovery {
    /// A connection whose window holds at most `window_pkts` packets, on a
    /// path whose idle round trip is `base_rtt` ps, with RTO bounds in ps.
    /// With `sack`, SACK and RFC 6675's recovery, and with `rack` as well
    /// RACK-TLP (RFC 8985); otherwise NewReno's.
    pub fn new(
        window_pkts: u32,
        base_rtt: u64,
        min_rto: u64,
        max_rto: u64,
        sack: bool,
        rack: bool,
    ) -> TcpRecovery {
        let words = (window_pkts as usize).next_power_of_two().div_ceil(64);
        let sw = if sack { words } else { 1 };
        let rack = rack && sack;
        TcpRecovery {
            est: RttEstimator::new(base_rtt, min_rto, max_rto),
            rto_deadline: 0,
            timer_at: NEVER,
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
            rack,
            rwnd: window_pkts.max(1),
            sacked: PsnBits::new(sw),
            nsacked: 0,
            lost: PsnBits::new(sw),
            nlost: 0,
            rtx: PsnBits::new(sw),
            rtx_high: 0,
            dup_marked: 0,
            first_rtx: false,
            xmit: if rack { vec![0; sw * 64] } else { Vec::new() },
            rack_ts: 0,
            rack_end: 0,
            rack_rtt: 0,
            min_rtt: NEVER,
            reord: false,
            fack: 0,
            rack_deadline: NEVER,
            tlp_deadline: NEVER,
            tlp_end: None,
            tlp_retrans: false,
            rtt_since_probe: true,
            probe: None,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 1,
            prr_out_at_ack: 0,
            prr_last: 0,
            prr_pipe: 0,
            dsack: sack,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: 0,
            rto_recovery: false,
            timeout_kind: TimeoutKind::Unclassified,
            reported: [NO_PSN; SACK_BLOCKS],
            ack_extra: [(0, 0); SACK_BLOCKS - 1],
        }
    }

    /// Receiver: the SACK option of the ACK that answers PSN `psn`, which
    /// just arrived (`dup`: refused as a duplicate,
    /// [`RxVerdict::DuplicateAck`]), built as RFC 2883 §4 and RFC 2018 §4
    /// order it: a D-SACK block first if `psn` is a duplicate the receiver
    /// held ([`TcpRecovery::dsack_block`]); then the block holding `psn` if
    /// it is held beyond the expected PSN (for a duplicate, "the (possibly
    /// larger) block of data" the D-SACK lies in); then the blocks reported
    /// most recently, still held and not overlapping one listed, at most
    /// [`SACK_BLOCKS`] in all. Records what it reports as the most recent.
    pub fn sack_option(&mut self, psn: u32, dup: bool) -> SackOption {
        let mut o = SackOption::default();
        if dup {
            if let Some(d) = self.dsack_block(psn) {
                o.dsack = true;
                o.blocks[0] = d;
                o.len = 1;
            }
        }
        let own = self.sack_block(psn);
        if let Some(b) = own {
            o.push(b);
        }
        for i in 0..SACK_BLOCKS {
            let r = self.reported[i];
            if r == NO_PSN {
                break;
            }
            if let Some(b) = self.sack_block(r) {
                o.push(b);
            }
        }
        if own.is_some() {
            // `psn`'s block is now the most recently reported: it moves to
            // the front, the others keep their order, one in its block
            // (reported before and now a subset) drops out
            let mut next = [NO_PSN; SACK_BLOCKS];
            next[0] = psn;
            let mut n = 1;
            for &r in &self.reported {
                if n == SACK_BLOCKS {
                    break;
                }
                let same = own.is_some_and(|(lo, hi)| lo <= r && r < hi);
                if r != NO_PSN && !same {
                    next[n] = r;
                    n += 1;
                }
            }
            self.reported = next;
        }
        o
    }

    /// Receiver: the D-SACK block (RFC 2883 §4) for PSN `psn`, which just
    /// arrived and was refused ([`RxVerdict::DuplicateAck`]): `[psn, psn +
    /// 1)` if the receiver already had it (below the expected PSN, or held
    /// beyond a gap); `None` for a segment beyond the receive window, or
    /// with D-SACK off.
    pub fn dsack_block(&self, psn: u32) -> Option<(u32, u32)> {
        if !self.dsack {
            return None;
        }
        let had = psn < self.epsn
            || (psn - self.epsn < self.ooo_bits.capacity() && self.ooo_bits.get(psn));
        had.then_some((psn, psn + 1))
    }

    /// Sender (RACK): the current reordering-window multiplier
    /// (RACK.reo_wnd_mult, RFC 8985 §6.2 step 4).
    pub fn reo_wnd_mult(&self) -> u32 {
        u32::from(self.reo_wnd_mult)
    }

    /// Sender: RFC 8985 §6.2 step 4 on an ACK (after `una` moved): the
    /// D-SACK round ends once `una` passes it; a D-SACK outside one starts
    /// one, grows `reo_wnd_mult` by one and keeps it for
    /// [`REO_WND_PERSIST`] recoveries.
    fn on_dsack(&mut self, seq: &SendSeq, fb: Feedback) {
        if self.dsack_round != 0 && seq.una >= self.dsack_round {
            self.dsack_round = 0;
        }
        if matches!(fb, Feedback::Dsack(..)) && self.dsack_round == 0 {
            self.dsack_round = seq.max.max(1);
            self.reo_wnd_mult = self.reo_wnd_mult.saturating_add(1);
            self.reo_wnd_persist = REO_WND_PERSIST;
        }
    }

    /// Sender: TLP's loss detection (RFC 8985 §7.4.2, `TLP_process_ack`),
    /// on every ACK once one covers the probe's tail: a probe of new data,
    /// a D-SACK of the probe (the original arrived too) or a duplicate ACK
    /// that SACKs nothing new (the probe arrived as a duplicate) end the
    /// episode with no loss; an ACK beyond the tail, with no D-SACK before
    /// it, shows the retransmitted probe repaired a loss the congestion
    /// control must answer (true; Linux's `tcp_process_tlp_ack` enters and
    /// leaves CWR at once: cwnd = ssthresh); an ACK exactly at the tail
    /// leaves the episode open, as it cannot tell the two apart.
    fn tlp_process_ack(
        &mut self,
        a: u32,
        fb: Feedback,
        advanced: bool,
        sacked_before: u32,
    ) -> bool {
        let Some(end) = self.tlp_end else {
            return false;
        };
        if a < end {
            return false;
        }
        let probe = end - 1;
        let dsack_of_probe = matches!(fb, Feedback::Dsack(lo, hi) if lo <= probe && probe < hi);
        let repaired = self.tlp_retrans && !dsack_of_probe && a > end;
        let pure_dup = !advanced && self.nsacked <= sacked_before;
        if !self.tlp_retrans || dsack_of_probe || repaired || pure_dup {
            self.tlp_end = None;
        }
        repaired
    }

    /// Sender: a fast or RTO recovery ended (RFC 8985 §6.2 step 4): one
    /// fewer recovery before `reo_wnd_mult` goes back to 1.
    fn recovery_ended(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_mult = 1;
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

    /// Sender (SACK): the packets in the network, RFC 6675's `pipe`: PSNs
    /// in `[una, max)` neither SACKed nor marked lost (a retransmission
    /// counts once, in its segment's place).
    pub fn pipe(&self, seq: &SendSeq) -> u32 {
        (seq.max - seq.una) - self.nsacked - self.nlost
    }

    /// Sender (SACK): NextSeg rule 1, the lowest PSN marked lost.
    fn next_lost(&self, seq: &SendSeq) -> Option<u32> {
        if self.nlost == 0 {
            return None;
        }
        self.lost.first_set(seq.una, seq.max)
    }

    /// Sender (SACK): marks `psn` lost (not SACKed, not already marked).
    fn mark_lost(&mut self, psn: u32) {
        if !self.sacked.get(psn) && !self.lost.get(psn) {
            self.lost.set(psn, true);
            self.nlost += 1;
        }
    }

    /// Sender (SACK): RFC 6675's `IsLost` applied: every PSN below the
    /// third highest SACKed one, neither SACKed nor ever retransmitted, is
    /// lost.
    fn mark_dup_lost(&mut self, seq: &SendSeq) {
        let t = self.lost_below(seq);
        let mut p = self.dup_marked.max(seq.una);
        while p < t {
            if !self.rtx.get(p) {
                self.mark_lost(p);
            }
            p += 1;
        }
        self.dup_marked = self.dup_marked.max(t);
    }

    /// Sender (RACK): PSN `p` was just delivered (cumulatively ACKed or
    /// SACKed) at `now` (RFC 8985 §6.2 steps 1-2).
    fn rack_delivered(&mut self, p: u32, now: u64) {
        let x = self.xmit[(p & (self.xmit.len() as u32 - 1)) as usize];
        let rtt = now.saturating_sub(x);
        let again = self.rtx.get(p);
        if again && rtt < self.min_rtt {
            // possibly the original's delivery: no sample (step 2)
            return;
        }
        self.min_rtt = self.min_rtt.min(rtt);
        if !again && p + 1 < self.fack {
            self.reord = true;
        }
        self.fack = self.fack.max(p + 1);
        if x > self.rack_ts || (x == self.rack_ts && p + 1 > self.rack_end) {
            self.rack_ts = x;
            self.rack_end = p + 1;
            self.rack_rtt = rtt;
        }
    }

    /// RACK.reo_wnd, ps (RFC 8985 §6.2 step 4): none while no reordering
    /// was seen and the sender is in recovery or DupThresh segments are
    /// SACKed; else reo_wnd_mult · min_RTT / 4, at most SRTT.
    pub fn reo_wnd(&self) -> u64 {
        if !self.reord && (self.in_recovery || self.nsacked >= DUP_THRESH) {
            return 0;
        }
        if self.min_rtt == NEVER {
            return 0;
        }
        (self.min_rtt / 4)
            .saturating_mul(u64::from(self.reo_wnd_mult))
            .min(self.est.srtt as u64)
    }

    /// RACK's loss detection (RFC 8985 §6.2 step 5): a PSN sent before the
    /// most recently sent delivered one is lost once RACK.rtt + reo_wnd has
    /// passed since it left; the reordering timer is armed for the first
    /// that is not yet.
    fn rack_detect(&mut self, seq: &SendSeq, now: u64) {
        self.rack_deadline = NEVER;
        if self.rack_end == 0 {
            return;
        }
        let reo = self.reo_wnd();
        let mask = self.xmit.len() as u32 - 1;
        let mut wait = 0u64;
        for p in seq.una..seq.max {
            if self.sacked.get(p) || self.lost.get(p) {
                continue;
            }
            let x = self.xmit[(p & mask) as usize];
            let before = x < self.rack_ts || (x == self.rack_ts && p + 1 < self.rack_end);
            if !before {
                // first transmissions leave in PSN order: none above this
                // one, past every retransmission, left earlier
                if p >= self.rtx_high && !self.rtx.get(p) {
                    break;
                }
                continue;
            }
            let due = x.saturating_add(self.rack_rtt).saturating_add(reo);
            if due <= now {
                self.mark_lost(p);
            } else {
                wait = wait.max(due - now);
            }
        }
        if wait > 0 {
            self.rack_deadline = now + wait;
        }
    }

    /// Sender (SACK): marks `[lo, hi)` SACKed (clipped to `[una, max)`);
    /// whether anything was new.
    fn mark_sacked(&mut self, seq: &SendSeq, lo: u32, hi: u32, now: u64) -> bool {
        let mut new = false;
        for p in lo.max(seq.una)..hi.min(seq.max) {
            if !self.sacked.get(p) {
                if self.rack {
                    self.rack_delivered(p, now);
                }
                self.sacked.set(p, true);
                self.nsacked += 1;
                if self.lost.get(p) {
                    self.lost.set(p, false);
                    self.nlost -= 1;
                }
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

    /// The earliest of the connection's deadlines, ps.
    fn due(&self) -> u64 {
        self.rto_deadline
            .min(self.rack_deadline)
            .min(self.tlp_deadline)
    }

    /// A timer event to schedule at `at` unless one is pending at or before it.
    fn arm(&mut self, at: u64) -> Option<u64> {
        if at < self.timer_at {
            self.timer_at = at;
            Some(at)
        } else {
            None
        }
    }

    /// TLP (RFC 8985 §7.2): the probe timeout is armed while data is
    /// outstanding, nothing is SACKed, no recovery runs and no probe is out:
    /// PTO = 2 SRTT (plus WCDelAckT for a single segment), never past the RTO.
    fn arm_tlp(&mut self, seq: &SendSeq, now: u64) {
        self.tlp_deadline = NEVER;
        if !self.rack
            || seq.una >= seq.max
            || self.nsacked > 0
            || self.nlost > 0
            || self.in_recovery
            || self.tlp_end.is_some()
            || !self.rtt_since_probe
        {
            return;
        }
        let mut pto = (2.0 * self.est.srtt) as u64;
        if seq.max - seq.una == 1 {
            pto = pto.saturating_add(TLP_WC_DEL_ACK);
        }
        self.tlp_deadline = now.saturating_add(pto).min(self.rto_deadline);
    }

    /// Sender (SACK): a recovery starts if a PSN is lost (RFC 6675 §5
    /// steps 1-2 or RACK) unless one runs or the last one's `recover` is
    /// not yet acknowledged (RFC 6582 §4); whether it started.
    fn maybe_start(&mut self, seq: &SendSeq) -> bool {
        if self.in_recovery || seq.una < self.recover || seq.una >= seq.max {
            return false;
        }
        if self.nlost == 0 && self.dupacks < DUP_THRESH {
            return false;
        }
        if self.nlost == 0 {
            self.mark_lost(seq.una);
        }
        self.in_recovery = true;
        self.recover = seq.max;
        self.first_rtx = true;
        self.tlp_deadline = NEVER;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.prr_out_at_ack = 0;
        self.prr_last = 0;
        self.recover_fs = (seq.max - seq.una).max(1);
        true
    }

    /// Sender (SACK, in recovery): how many packets PRR (RFC 6937 §3.1)
    /// lets out now under `ssthresh` (the window the congestion control
    /// set at the fast retransmit). While `pipe` exceeds ssthresh, the
    /// proportional part: sndcnt = ⌈prr_delivered · ssthresh / RecoverFS⌉ −
    /// prr_out, so the window falls to ssthresh in step with what is
    /// delivered; below it, slow-start reduction bound (PRR-SSRB, Linux's):
    /// sndcnt = min(ssthresh − pipe, max(prr_delivered − prr_out,
    /// DeliveredData) + 1) per ACK, so a window of many losses is rebuilt
    /// at most one packet more than delivered per ACK instead of in one
    /// burst of retransmissions (RFC 6675's `cwnd − pipe` at once).
    fn prr_allowed(&self, ssthresh: u32) -> i64 {
        let ss = ssthresh as i64;
        if self.prr_pipe as i64 > ss {
            let num = self.prr_delivered as i64 * ss;
            let fs = self.recover_fs as i64;
            (num + fs - 1) / fs - self.prr_out as i64
        } else {
            let limit = (self.prr_delivered as i64 - self.prr_out_at_ack as i64)
                .max(self.prr_last as i64)
                + 1;
            let sndcnt = (ss - self.prr_pipe as i64).min(limit);
            sndcnt - (self.prr_out - self.prr_out_at_ack) as i64
        }
    }

    /// What the sender knows as its timer fires ([`TimeoutKind`]); a scan
    /// of the outstanding window, once per timeout.
    fn classify_timeout(&self, seq: &SendSeq) -> TimeoutKind {
        if !self.in_recovery && self.nsacked == 0 && self.dupacks == 0 {
            return TimeoutKind::Silent;
        }
        // without SACK `rtx` is not kept: NewReno's recovery resends one
        // hole per partial ACK, and the one at `una` was resent. With SACK
        // the recovery may have ended already (`una` passed its `recover`)
        // while holes above it it had resent are still missing: as lost
        // retransmissions as the ones of a running recovery (Linux's
        // Disorder state, where TLP is off as well)
        let all_resent =
            self.sack && (seq.una..seq.max).all(|p| self.sacked.get(p) || self.rtx.get(p));
        if all_resent {
            TimeoutKind::LostRetransmission
        } else {
            TimeoutKind::Recovery
        }
    }

    /// Sender (SACK): after the scoreboard changed: the DupThresh rule,
    /// RACK, a recovery's start, the next lost PSN, the probe timer.
    /// Whether a recovery started.
    fn sack_update(&mut self, seq: &SendSeq, now: u64, acked: bool) -> bool {
        self.mark_dup_lost(seq);
        if self.rack && (self.nsacked > 0 || self.in_recovery || seq.una < self.rtx_high) {
            self.rack_detect(seq, now);
        } else {
            self.rack_deadline = NEVER;
        }
        let started = self.maybe_start(seq);
        self.retx = self.next_lost(seq);
        if acked || self.nsacked > 0 || self.in_recovery {
            self.arm_tlp(seq, now);
        }
        started
    }
}

impl RecoveryLaw for TcpRecovery {
    #[inline]
    fn next_psn(&self, seq: &SendSeq) -> u32 {
        // (a probe of new data is `nxt` itself)
        if let Some(p) = self.probe.filter(|&p| p >= seq.una && p < seq.nxt) {
            return p;
        }
        match self.retx {
            Some(p) if p >= seq.una && p < seq.nxt => p,
            _ => seq.nxt,
        }
    }

    #[inline]
    fn on_send(&mut self, seq: &SendSeq, psn: u32, now: u64, _rto: u64) -> Option<u64> {
        if self.probe == Some(psn) {
            self.probe = None;
        }
        if self.sack {
            if self.in_recovery {
                self.prr_out += 1;
            }
            if psn < seq.max {
                if self.lost.get(psn) {
                    self.lost.set(psn, false);
                    self.nlost -= 1;
                }
                self.rtx.set(psn, true);
                self.rtx_high = self.rtx_high.max(psn + 1);
                if self.first_rtx && self.retx == Some(psn) {
                    self.first_rtx = false;
                }
            }
            if self.rack {
                let mask = self.xmit.len() as u32 - 1;
                self.xmit[(psn & mask) as usize] = now;
            }
            if self.retx == Some(psn) {
                // HighRxt = psn; the next lost PSN goes out next (NextSeg rule 1)
                self.retx = self.next_lost(seq);
            }
        } else if self.retx == Some(psn) {
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
        if self.rack && psn >= seq.max {
            // new data (re)arms the probe timer (RFC 8985 §7.2)
            let after = SendSeq {
                max: psn + 1,
                ..*seq
            };
            self.arm_tlp(&after, now);
        }
        let due = self.due().max(now);
        self.arm(due)
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
        // the regular blocks after a D-SACK block (RFC 2883 §4)
        let extra = std::mem::take(&mut self.ack_extra);
        // una + SACKed grows by what this ACK delivers (PRR's DeliveredData)
        let before = seq.una + self.nsacked;
        let sacked_before = self.nsacked;
        if a > seq.una {
            if self.timed.is_some_and(|t| a > t) {
                self.est.sample(now.saturating_sub(self.timed_at));
                self.rtt_since_probe = true;
                self.timed = None;
                self.backoff = 0;
            }
            if self.sack {
                // the scoreboard keeps only what lies above `una`
                for p in seq.una..a.min(seq.max) {
                    if self.sacked.get(p) {
                        self.sacked.set(p, false);
                        self.nsacked -= 1;
                    } else if self.rack {
                        self.rack_delivered(p, now);
                    }
                    if self.lost.get(p) {
                        self.lost.set(p, false);
                        self.nlost -= 1;
                    }
                    self.rtx.set(p, false);
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
                self.mark_sacked(seq, lo, hi, now);
            }
            if self.sack {
                for (lo, hi) in extra {
                    self.mark_sacked(seq, lo, hi, now);
                }
            }
            if self.rto_recovery && a >= self.recover {
                self.rto_recovery = false;
                self.recovery_ended();
            }
            if self.in_recovery {
                if a >= self.recover {
                    self.in_recovery = false;
                    self.retx = None;
                    self.first_rtx = false;
                    self.recovery_ended();
                } else if !self.sack {
                    // partial ACK: the next hole goes out at once (RFC 6582 §3.2 step 3)
                    self.retx = Some(a);
                    e.nack_rewind = true;
                }
            }
        } else if matches!(
            fb,
            Feedback::Ack | Feedback::AckBlock(..) | Feedback::Dsack(..)
        ) && a == seq.una
            && seq.una < seq.max
        {
            // with SACK a duplicate ACK is one that SACKs new data (RFC 6675 §2)
            let mut new = block.is_some_and(|(lo, hi)| self.mark_sacked(seq, lo, hi, now));
            if self.sack {
                for (lo, hi) in extra {
                    new |= self.mark_sacked(seq, lo, hi, now);
                }
            }
            if !self.sack || new {
                e.dupack = true;
                self.dupacks += 1;
            }
            if !self.sack
                && self.dupacks == DUP_THRESH
                && !self.in_recovery
                && seq.una >= self.recover
            {
                self.in_recovery = true;
                self.recover = seq.max;
                self.retx = Some(seq.una);
                e.nack_rewind = true;
                e.loss = true;
            }
        }
        if self.tlp_process_ack(a, fb, e.advanced, sacked_before) {
            e.loss = true;
        }
        if self.sack {
            self.on_dsack(seq, fb);
        }
        if self.sack && self.sack_update(seq, now, e.advanced) {
            e.nack_rewind = true;
            e.loss = true;
        }
        if self.sack && self.in_recovery {
            let delivered = (seq.una + self.nsacked).saturating_sub(before);
            self.prr_delivered += delivered;
            self.prr_last = delivered;
            self.prr_out_at_ack = self.prr_out;
            self.prr_pipe = self.pipe(seq);
        }
        if self.sack {
            e.timer = self.arm(self.due().max(now));
        }
        e.in_recovery = self.in_recovery;
        e
    }

    fn on_timeout(&mut self, seq: &mut SendSeq, now: u64, _rto: u64) -> TimerEffect {
        if now != self.timer_at {
            // another event was scheduled since: this one is stale
            return TimerEffect::Idle;
        }
        self.timer_at = NEVER;
        if seq.una >= seq.max {
            self.rack_deadline = NEVER;
            self.tlp_deadline = NEVER;
            return TimerEffect::Idle;
        }
        let due = self.due();
        if now < due {
            self.timer_at = due;
            return TimerEffect::Rearm(due);
        }
        if self.rack_deadline <= now {
            // RACK's reordering timer (RFC 8985 §6.3)
            self.rack_detect(seq, now);
            let loss = self.maybe_start(seq);
            if loss {
                // as Linux's RACK timer (`tcp_rack_reo_timeout`): the
                // recovery starts as if one packet had been delivered
                self.prr_delivered = 1;
                self.prr_last = 1;
                self.prr_pipe = self.pipe(seq);
            }
            self.retx = self.next_lost(seq);
            if self.nlost > 0 {
                let at = self.due();
                self.timer_at = at;
                return TimerEffect::Resend { at, loss };
            }
            let at = self.due();
            if now < at {
                self.timer_at = at;
                return TimerEffect::Rearm(at);
            }
        }
        if self.tlp_deadline <= now {
            // a tail loss probe, whatever the congestion window (RFC 8985
            // §7.3, `TLP_send_probe`): the first unsent PSN if one is
            // waiting and the receive window allows it, else the highest
            // PSN sent, again; the RTO is armed anew
            self.tlp_deadline = NEVER;
            let new = seq.nxt == seq.max && seq.max < seq.posted && seq.max - seq.una < self.rwnd;
            let p = if new { seq.max } else { seq.max - 1 };
            self.probe = Some(p);
            self.tlp_end = Some(p + 1);
            self.tlp_retrans = !new;
            self.rtt_since_probe = false;
            self.rto_deadline = now.saturating_add(self.rto());
            let at = self.due();
            self.timer_at = at;
            return TimerEffect::Resend { at, loss: false };
        }
        // (read before the state below is reset)
        self.timeout_kind = self.classify_timeout(seq);
        if std::env::var_os("FS_TCP_TRACE").is_some() {
            let mut m = String::new();
            for p in seq.una..seq.max.min(seq.una + 200) {
                m.push(if self.sacked.get(p) {
                    'S'
                } else if self.lost.get(p) {
                    'L'
                } else if self.rtx.get(p) {
                    'R'
                } else {
                    '.'
                });
            }
            eprintln!("TRACE sack={} timeout now={} kind={:?} una={} nxt={} max={} posted={} inrec={} recover={} nsacked={} nlost={} dupacks={} rtx_high={} rto_rec={} backoff={} tlp_end={:?} probe={:?} retx={:?} rack_end={} rack_ts={} reo={} tlpdl={} rackdl={} map={}", self.sack, now, self.timeout_kind, seq.una, seq.nxt, seq.max, seq.posted, self.in_recovery, self.recover, self.nsacked, self.nlost, self.dupacks, self.rtx_high, self.rto_recovery, self.backoff, self.tlp_end, self.probe, self.retx, self.rack_end, self.rack_ts, self.reo_wnd(), self.tlp_deadline, self.rack_deadline, m);
        }
        seq.nxt = seq.una;
        self.timed = None;
        self.retx = None;
        self.first_rtx = false;
        self.probe = None;
        self.tlp_end = None;
        self.rack_deadline = NEVER;
        self.tlp_deadline = NEVER;
        if self.sack {
            // RFC 2018 §8: after a timeout the sender SHOULD turn off every
            // SACKed bit (the receiver may have reneged)
            for p in seq.una..seq.max {
                self.sacked.set(p, false);
                self.lost.set(p, false);
                self.rtx.set(p, false);
            }
            self.nsacked = 0;
            self.nlost = 0;
            self.dup_marked = seq.una;
        }
        self.dupacks = 0;
        self.in_recovery = false;
        // duplicate ACKs of what was sent before the timeout start no
        // recovery (RFC 6582 §4)
        self.recover = seq.max;
        self.rto_recovery = true;
        self.backoff = (self.backoff + 1).min(63);
        self.rto_deadline = now.saturating_add(self.rto());
        self.timer_at = self.rto_deadline;
        TimerEffect::Fired(self.rto_deadline)
    }

    #[inline]
    fn last_timeout_kind(&self) -> TimeoutKind {
        self.timeout_kind
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
        if self.probe == Some(psn) {
            // a tail loss probe goes out whatever the congestion window (RFC
            // 8985 §7.3; new data was checked against the receive window)
            return false;
        }
        if !(self.sack && (self.in_recovery || self.nlost > 0)) {
            return psn == seq.nxt && seq.nxt.saturating_sub(seq.una) >= wnd;
        }
        if self.first_rtx && self.retx == Some(psn) {
            return false;
        }
        if psn == seq.nxt && seq.nxt - seq.una >= self.rwnd {
            // new data within the receive window only
            return true;
        }
        if self.in_recovery {
            // RFC 6937: what PRR allows since the last ACK
            return self.prr_allowed(wnd) <= 0;
        }
        // RFC 6675 §5 step (C): send while cwnd − pipe ≥ 1 segment
        self.pipe(seq) >= wnd
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
        let mut r = TcpRecovery::new(64, 10 * US, 200 * US, 1_000_000 * US, false, false);
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
    fn a_timeout_is_silent_only_when_no_ack_told_of_a_loss_and_says_what_the_recovery_knew() {
        // NewReno's recovery (no SACK, so no probe timer): a window of 10.
        let min = 200 * US;
        // 1. Every segment lost, no ACK at all: silent (Linux: TCPTimeouts).
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, false, false);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 10, 0);
        assert_eq!(r.on_timeout(&mut s, min, 0), TimerEffect::Fired(3 * min));
        assert_eq!(r.last_timeout_kind(), TimeoutKind::Silent);
        // 2. The tail lost after an ACK of the head: still silent (the ACK
        //    advanced `una`, nothing told of the loss).
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, false, false);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 10, 0);
        r.on_ack(&mut s, 6, Feedback::Ack, 100 * US, 0);
        assert!(matches!(fire(&mut r, &mut s).1, TimerEffect::Fired(_)));
        assert_eq!(r.last_timeout_kind(), TimeoutKind::Silent);
        // 3. Three duplicate ACKs started a recovery whose retransmission
        //    was lost too: a recovery failure, not silent (Linux:
        //    TCPRenoRecoveryFail).
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, false, false);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 10, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 100 * US, 0);
        for _ in 0..3 {
            r.on_ack(&mut s, 2, Feedback::Ack, 101 * US, 0);
        }
        assert!(r.in_recovery);
        sent(&mut r, &mut s, 1, 102 * US);
        assert!(matches!(fire(&mut r, &mut s).1, TimerEffect::Fired(_)));
        assert_eq!(r.last_timeout_kind(), TimeoutKind::Recovery);
        // 4. One duplicate ACK, below DupThresh: the sender was told, not silent.
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, false, false);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 10, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 100 * US, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 101 * US, 0);
        assert!(matches!(fire(&mut r, &mut s).1, TimerEffect::Fired(_)));
        assert_eq!(r.last_timeout_kind(), TimeoutKind::Recovery);
        // SACK (no RACK): PSNs 2 and 5 lost of 10; 3-4 and 6-9 SACKed.
        let sack_lost_in = |resend_both: bool, wnd: u32| {
            let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, true, false);
            let mut s = SendSeq::default();
            sent(&mut r, &mut s, 10, 0);
            r.on_ack(&mut s, 2, Feedback::Ack, 100 * US, 0);
            for (i, p) in [3u32, 4, 6, 7, 8, 9].into_iter().enumerate() {
                r.on_ack(
                    &mut s,
                    2,
                    Feedback::AckBlock(p, p + 1),
                    (101 + i as u64) * US,
                    0,
                );
            }
            assert!(r.in_recovery);
            // the recovery resends 2 (and 5 when it may), both lost again
            sent(&mut r, &mut s, if resend_both { 2 } else { 1 }, 110 * US);
            // what the transport reads before the timer resets the sender
            let next = r.next_psn(&s);
            let held = next < s.max && r.blocked(&s, next, wnd);
            assert!(matches!(fire(&mut r, &mut s).1, TimerEffect::Fired(_)));
            r.last_timeout_kind().with_window_held(held)
        };
        let sack_lost = |resend_both: bool| sack_lost_in(resend_both, 64);
        // 5. Every missing segment resent, the resends lost: only the timer
        //    can find them.
        assert_eq!(sack_lost(true), TimeoutKind::LostRetransmission);
        // 6. A hole the recovery was told of, could send (a window of 64)
        //    and had not resent.
        assert_eq!(sack_lost(false), TimeoutKind::Recovery);
        // 6b. The same hole held by the window (PRR under a window of one:
        //    nothing more until an ACK), the resent 2 lost: the ACK clock
        //    stopped with the recovery's next retransmission held.
        assert_eq!(sack_lost_in(false, 1), TimeoutKind::WindowHeld);
        // 7. A recovery that ends while a hole above its `recover`, found
        //    and resent during it, is missing again: PSN 2 of 0-9 lost, the
        //    recovery (recover = 10) resends it; new data 10-19 goes out,
        //    12 is lost and, three PSNs SACKed above it, resent inside the
        //    same recovery (RFC 6675 NextSeg rule 1); the resent 2 arrives
        //    (ACK 12 ends the recovery), the resent 12 does not. Every
        //    missing segment was resent: a lost retransmission, which only
        //    the timer finds (TLP is off while anything is SACKed).
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, true, false);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 10, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 100 * US, 0);
        for p in 3..10u32 {
            r.on_ack(&mut s, 2, Feedback::AckBlock(3, p + 1), 101 * US, 0);
        }
        assert!(r.in_recovery);
        assert_eq!(r.next_psn(&s), 2);
        sent(&mut r, &mut s, 1, 102 * US);
        sent(&mut r, &mut s, 10, 103 * US);
        assert_eq!(s.max, 20);
        for p in (10..12u32).chain(13..20) {
            let lo = if p < 12 { 10 } else { 13 };
            r.on_ack(&mut s, 2, Feedback::AckBlock(lo, p + 1), 110 * US, 0);
        }
        assert_eq!(r.next_psn(&s), 12, "12 lost inside the running recovery");
        sent(&mut r, &mut s, 1, 111 * US);
        let e = r.on_ack(&mut s, 12, Feedback::AckBlock(13, 20), 120 * US, 0);
        assert!(e.advanced && !r.in_recovery, "ACK 12 ends the recovery");
        assert!(matches!(fire(&mut r, &mut s).1, TimerEffect::Fired(_)));
        assert_eq!(r.last_timeout_kind(), TimeoutKind::LostRetransmission);
    }

    #[test]
    fn karn_a_retransmitted_segment_gives_no_sample_and_the_timer_backs_off() {
        let min = 200 * US;
        let mut r = TcpRecovery::new(64, 10 * US, min, 10_000 * US, false, false);
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
        let mut r = TcpRecovery::new(64, US, US, US, false, false);
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
        let mut snd = TcpRecovery::new(64, 10 * US, 1_000_000 * US, 1_000_000 * US, sack, false);
        let mut rcv = TcpRecovery::new(64, 10 * US, 1_000_000 * US, 1_000_000 * US, sack, false);
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

    /// A RACK-TLP sender (SACK on) over an idle round trip of 100 µs that
    /// has sent PSNs 0..4 at 0, 1, 2, 3 µs and got 0 and 1 ACKed one round
    /// trip later (100, 101 µs): SRTT = min_RTT = 100 µs.
    fn rack_after_two_acks() -> (TcpRecovery, SendSeq) {
        rack_after_two_acks_in(64)
    }

    /// [`rack_after_two_acks`] with a receive window of `rwnd` packets.
    fn rack_after_two_acks_in(rwnd: u32) -> (TcpRecovery, SendSeq) {
        let mut r = TcpRecovery::new(rwnd, 100 * US, 200_000 * US, 1_000_000 * US, true, true);
        let mut s = SendSeq::default();
        for t in 0..4 {
            sent(&mut r, &mut s, 1, t * US);
        }
        r.on_ack(&mut s, 1, Feedback::Ack, 100 * US, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 101 * US, 0);
        (r, s)
    }

    /// Fires the timer until it does something; (time, effect).
    fn fire(r: &mut TcpRecovery, s: &mut SendSeq) -> (u64, TimerEffect) {
        loop {
            let t = r.timer_at;
            match r.on_timeout(s, t, 0) {
                TimerEffect::Rearm(_) => continue,
                e => return (t, e),
            }
        }
    }

    #[test]
    fn rack_marks_a_hole_lost_a_quarter_min_rtt_after_its_successor_without_the_rto() {
        // PSN 2 lost, 3 SACKed at 103 µs: only one PSN above the hole is
        // SACKed, fewer than DupThresh, so RFC 6675 alone waits for the RTO
        // (200 ms). RACK (RFC 8985 §6.2): 3 left after 2 and was delivered
        // with RACK.rtt = 100 µs; no reordering seen, not in recovery, fewer
        // than DupThresh SACKed, so reo_wnd = min_RTT / 4 = 25 µs, and 2 is
        // lost at its send time + RACK.rtt + reo_wnd = 2 + 100 + 25 = 127 µs:
        // the reordering timer fires then and starts the recovery.
        let (mut r, mut s) = rack_after_two_acks();
        let e = r.on_ack(&mut s, 2, Feedback::AckBlock(3, 4), 103 * US, 0);
        assert!(!e.loss && !e.in_recovery);
        assert_eq!(e.timer, Some(127 * US));
        assert_eq!(
            fire(&mut r, &mut s),
            (
                127 * US,
                TimerEffect::Resend {
                    at: r.timer_at,
                    loss: true
                }
            )
        );
        assert!(r.in_recovery);
        assert_eq!(r.next_psn(&s), 2);
        assert!(r.timer_at > 127 * US);
        // without RACK the same ACK leaves only the RTO
        let mut n = TcpRecovery::new(64, 100 * US, 200_000 * US, 1_000_000 * US, true, false);
        let mut s = SendSeq::default();
        for t in 0..4 {
            sent(&mut n, &mut s, 1, t * US);
        }
        n.on_ack(&mut s, 1, Feedback::Ack, 100 * US, 0);
        n.on_ack(&mut s, 2, Feedback::Ack, 101 * US, 0);
        n.on_ack(&mut s, 2, Feedback::AckBlock(3, 4), 103 * US, 0);
        let (t, e) = fire(&mut n, &mut s);
        assert!(matches!(e, TimerEffect::Fired(_)));
        assert_eq!(t, 101 * US + n.est.min_rto);
    }

    #[test]
    fn a_lost_tail_is_probed_two_srtt_after_the_last_ack_and_then_recovered_by_rack() {
        // PSNs 2 and 3, the tail, are lost: no ACK follows 101 µs. TLP (RFC
        // 8985 §7.2): PTO = 2 SRTT = 200 µs after the ACK, so at 301 µs the
        // last PSN (3) goes out again whatever the window; its SACK (one
        // round trip later, 401 µs) makes RACK mark 2 lost at once (sent at
        // 2 µs, long before the probe: 2 + 100 + 0 < 401) and the recovery
        // starts on that ACK, 200 ms before the RTO.
        let (mut r, mut s) = rack_after_two_acks();
        assert_eq!(
            fire(&mut r, &mut s),
            (
                301 * US,
                TimerEffect::Resend {
                    at: r.timer_at,
                    loss: false
                }
            )
        );
        assert_eq!(r.next_psn(&s), 3);
        assert!(!r.blocked(&s, 3, 1), "a probe ignores the window");
        sent(&mut r, &mut s, 1, 301 * US);
        assert_eq!(r.next_psn(&s), 4, "one probe per tail");
        let e = r.on_ack(&mut s, 2, Feedback::AckBlock(3, 4), 401 * US, 0);
        assert!(e.loss && e.in_recovery);
        assert_eq!(r.next_psn(&s), 2);
        assert!(r.rto_deadline > 200_000 * US);
    }

    #[test]
    fn a_tail_loss_probe_sends_new_data_when_some_waits_and_the_receive_window_allows() {
        // RFC 8985 §7.3 (`TLP_send_probe`): "If Segment exists and fits the
        // peer receive window limit: transmit the lowest-sequence unsent
        // Segment", whatever the congestion window; "Else: retransmit the
        // highest-sequence Segment sent". PSNs 2 and 3 are outstanding,
        // 0..4 sent, 6 more posted (PSNs 4..10), cwnd 2 (full). The PTO
        // fires 2 SRTT = 200 µs after the last ACK (301 µs, as for the
        // tail without new data) and PSN 4, new, goes out past the full
        // cwnd; then no second probe (cwnd blocks PSN 5) until the tail is
        // acknowledged (TLP.end_seq = 5).
        let (mut r, mut s) = rack_after_two_acks();
        s.posted = 10;
        assert_eq!(
            fire(&mut r, &mut s),
            (
                301 * US,
                TimerEffect::Resend {
                    at: r.timer_at,
                    loss: false
                }
            )
        );
        assert_eq!(r.next_psn(&s), 4, "the first unsent PSN");
        assert!(!r.blocked(&s, 4, 2), "whatever the congestion window");
        sent(&mut r, &mut s, 1, 301 * US);
        assert_eq!((s.nxt, s.max), (5, 5));
        assert!(r.blocked(&s, 5, 2), "one probe per tail");
        assert_eq!(r.tlp_end, Some(5));
        // the receive window (2 packets) is full with 2 and 3 outstanding:
        // the highest PSN sent goes out again
        let (mut r, mut s) = rack_after_two_acks_in(2);
        s.posted = 10;
        fire(&mut r, &mut s);
        assert_eq!(r.next_psn(&s), 3);
        assert_eq!(r.tlp_end, Some(4));
    }

    /// [`rack_after_two_acks`] whose PTO fired and whose probe, PSN 3 again
    /// (nothing new to send), went out at 301 µs; 6 more PSNs then wait.
    fn probed_tail() -> (TcpRecovery, SendSeq) {
        let (mut r, mut s) = rack_after_two_acks();
        fire(&mut r, &mut s);
        sent(&mut r, &mut s, 1, 301 * US);
        assert_eq!((r.tlp_end, r.tlp_retrans), (Some(4), true));
        s.posted = 10;
        (r, s)
    }

    #[test]
    fn a_probe_that_repaired_a_loss_is_answered_by_the_congestion_control() {
        // RFC 8985 §7.4.2: PSN 3 was lost and the probe (PSN 3 again)
        // repaired it. Its ACK (4 = TLP.end_seq) cannot tell a repair from
        // a duplicate, so the episode stays open; no D-SACK of PSN 3
        // follows, and the next ACK beyond the tail (5, for PSN 4) shows
        // the probe repaired a loss: the congestion control cuts once.
        let (mut r, mut s) = probed_tail();
        let e = r.on_ack(&mut s, 4, Feedback::Ack, 401 * US, 0);
        assert!(!e.loss, "an ACK at the tail alone is ambiguous");
        assert_eq!(r.tlp_end, Some(4));
        sent(&mut r, &mut s, 1, 401 * US);
        let e = r.on_ack(&mut s, 5, Feedback::Ack, 501 * US, 0);
        assert!(
            e.loss && !e.in_recovery,
            "a repaired loss, no recovery to run"
        );
        assert_eq!(r.tlp_end, None);
        sent(&mut r, &mut s, 1, 501 * US);
        let e = r.on_ack(&mut s, 6, Feedback::Ack, 601 * US, 0);
        assert!(!e.loss, "answered once");
    }

    #[test]
    fn a_probe_the_receiver_already_had_ends_its_episode_without_a_loss() {
        // RFC 8985 §7.4.2: the original PSN 3 had arrived (its ACK was
        // lost); the probe is a duplicate, which the receiver reports with a
        // D-SACK of PSN 3 (RFC 2883): no loss, and the later ACK beyond the
        // tail is not taken for one.
        let (mut r, mut s) = probed_tail();
        r.on_ack(&mut s, 4, Feedback::Ack, 401 * US, 0);
        let e = r.on_ack(&mut s, 4, Feedback::Dsack(3, 4), 402 * US, 0);
        assert!(!e.loss);
        assert_eq!(r.tlp_end, None);
        sent(&mut r, &mut s, 1, 402 * US);
        assert!(!r.on_ack(&mut s, 5, Feedback::Ack, 502 * US, 0).loss);
        // the same with the D-SACK on the ACK that reaches the tail
        let (mut r, mut s) = probed_tail();
        assert!(!r.on_ack(&mut s, 4, Feedback::Dsack(3, 4), 401 * US, 0).loss);
        assert_eq!(r.tlp_end, None);
        // a probe of new data ends its episode once acknowledged, no loss
        let (mut r, mut s) = rack_after_two_acks();
        s.posted = 10;
        fire(&mut r, &mut s);
        sent(&mut r, &mut s, 1, 301 * US);
        assert_eq!((r.tlp_end, r.tlp_retrans), (Some(5), false));
        assert!(!r.on_ack(&mut s, 5, Feedback::Ack, 401 * US, 0).loss);
        assert_eq!(r.tlp_end, None);
    }

    #[test]
    fn no_second_probe_before_an_rtt_sample_since_the_first() {
        // RFC 8985 §7.3: after a probe the PTO is armed again only once an
        // RTT sample was taken. The probe (a retransmission, untimed by
        // Karn's rule) is ACKed at its tail (4), then a bare duplicate ACK
        // at 4 follows (a receiver without D-SACK: §7.4.2's last case): the
        // episode ends with no loss and no sample; new data then arms no
        // probe, so a lost tail would wait for the RTO; the first ACK that
        // times a PSN re-enables it.
        let (mut r, mut s) = probed_tail();
        assert!(!r.on_ack(&mut s, 4, Feedback::Ack, 401 * US, 0).loss);
        assert_eq!(r.tlp_end, Some(4));
        assert!(!r.on_ack(&mut s, 4, Feedback::Ack, 402 * US, 0).loss);
        assert_eq!(
            r.tlp_end, None,
            "a bare duplicate at the tail ends the episode"
        );
        assert!(!r.rtt_since_probe);
        sent(&mut r, &mut s, 1, 402 * US);
        assert_eq!(r.tlp_deadline, NEVER, "no probe without a new RTT sample");
        r.on_ack(&mut s, 5, Feedback::Ack, 502 * US, 0);
        assert!(r.rtt_since_probe, "PSN 4 was timed");
        sent(&mut r, &mut s, 1, 502 * US);
        assert_ne!(r.tlp_deadline, NEVER);
    }

    #[test]
    fn a_spurious_retransmission_draws_a_dsack_that_doubles_rack_reo_wnd() {
        // The receiver (RFC 2883 §4): a segment it already has, below the
        // cumulative ACK or held beyond a gap, is reported in a D-SACK
        // block of that one segment; one beyond the receive window is not.
        let mut rcv = TcpRecovery::new(64, 100 * US, 200_000 * US, 1_000_000 * US, true, true);
        assert_eq!(rcv.on_data(0), RxVerdict::Accepted);
        assert_eq!(rcv.on_data(0), RxVerdict::DuplicateAck);
        assert_eq!(rcv.dsack_block(0), Some((0, 1)));
        assert_eq!(rcv.on_data(3), RxVerdict::AcceptedAck);
        assert_eq!(rcv.on_data(3), RxVerdict::DuplicateAck);
        assert_eq!(rcv.dsack_block(3), Some((3, 4)));
        assert_eq!(rcv.on_data(1 + 64), RxVerdict::DuplicateAck);
        assert_eq!(
            rcv.dsack_block(1 + 64),
            None,
            "beyond the window, not a duplicate"
        );
        rcv.dsack = false;
        assert_eq!(rcv.dsack_block(0), None);
        // The sender (RFC 8985 §6.2 step 4): PSN 2 is only delayed; 3 is
        // SACKed at 103 µs, RACK marks 2 lost at 2 + 100 + 25 = 127 µs
        // (reo_wnd = min_RTT / 4 = 25 µs) and resends it: spurious. The
        // original arrives (cumulative ACK 4 at 130 µs, no RTT sample:
        // sooner than min_RTT after the retransmission, step 2), then the
        // retransmission does, and its ACK carries the D-SACK (2, 3):
        // reo_wnd_mult 1 → 2, reo_wnd = 2 · 100 / 4 = 50 µs (< SRTT).
        let (mut r, mut s) = rack_after_two_acks();
        assert_eq!(r.reo_wnd(), 25 * US);
        r.on_ack(&mut s, 2, Feedback::AckBlock(3, 4), 103 * US, 0);
        fire(&mut r, &mut s);
        assert_eq!(r.next_psn(&s), 2);
        sent(&mut r, &mut s, 1, 127 * US);
        let e = r.on_ack(&mut s, 4, Feedback::Ack, 130 * US, 0);
        assert!(e.advanced && !e.in_recovery);
        let e = r.on_ack(&mut s, 4, Feedback::Dsack(2, 3), 227 * US, 0);
        assert!(!e.dupack, "a D-SACK SACKs nothing new: no duplicate ACK");
        assert_eq!(r.reo_wnd_mult(), 2);
        assert_eq!(r.reo_wnd(), 50 * US);
        // The next time a PSN (6) is overtaken by a later one (7, SACKed
        // at 403 µs with RACK.rtt = 100 µs), RACK waits the wider window:
        // lost at 302 + 100 + 50 = 452 µs instead of 427.
        for t in 300..304 {
            sent(&mut r, &mut s, 1, t * US);
        }
        r.on_ack(&mut s, 5, Feedback::Ack, 400 * US, 0);
        r.on_ack(&mut s, 6, Feedback::Ack, 401 * US, 0);
        let e = r.on_ack(&mut s, 6, Feedback::AckBlock(7, 8), 403 * US, 0);
        assert_eq!(e.timer, Some(452 * US));
        // reo_wnd_mult stays for 16 recoveries without a D-SACK, then
        // goes back to 1 (RACK.reo_wnd_persist, Linux's
        // TCP_RACK_RECOVERY_THRESH)
        for _ in 1..REO_WND_PERSIST {
            r.recovery_ended();
        }
        assert_eq!(r.reo_wnd_mult(), 2);
        r.recovery_ended();
        assert_eq!(r.reo_wnd_mult(), 1);
    }

    /// The receiver's SACK option after each arrival of `psns`: its blocks
    /// (the first the D-SACK one when flagged).
    fn options(psns: &[u32]) -> Vec<(bool, Vec<(u32, u32)>)> {
        let mut r = TcpRecovery::new(64, 100 * US, 200_000 * US, 1_000_000 * US, true, true);
        psns.iter()
            .map(|&p| {
                let dup = r.on_data(p) == RxVerdict::DuplicateAck;
                let o = r.sack_option(p, dup);
                (o.dsack, o.as_slice().to_vec())
            })
            .collect()
    }

    #[test]
    fn a_dsack_block_comes_first_then_the_sack_blocks_as_rfc_2883_shows() {
        // RFC 2883 §4.1, segments of 500 bytes from 3000 as PSNs (3000 → 0,
        // 3500 → 1, 4000 → 2 ...); the ACKs the examples drop are built all
        // the same (the receiver does not know), blocks `[lo, hi)`.
        //
        // §4.1.1, a duplicate segment: 0, 1, then 0 again: "4000,
        // SACK=3000-3500", the D-SACK block alone (nothing held).
        let o = options(&[0, 1, 0]);
        assert_eq!(o[0], (false, vec![]));
        assert_eq!(o[2], (true, vec![(0, 1)]));
        // §4.1.2, an out-of-order segment and a duplicate: 0, 1, (2
        // dropped), 3: "4000, SACK=4500-5000"; then 0 again: "4000,
        // SACK=3000-3500, 4500-5000", the D-SACK block, then the block
        // reported before. (This is the ACK the one-block packet used to
        // send as the D-SACK block alone.)
        let o = options(&[0, 1, 3, 0]);
        assert_eq!(o[2], (false, vec![(3, 4)]));
        assert_eq!(o[3], (true, vec![(0, 1), (3, 4)]));
        // §4.1.3, a duplicate of an out-of-order segment: 0, 1, (2
        // dropped), 3: "SACK=4500-5000"; 4: "SACK=4500-5500"; (5 dropped),
        // 6: "SACK=6000-6500, 4500-5500", the newest block first (RFC 2018
        // §4); 3 again: "SACK=4500-5000, 4500-5500, 6000-6500": the D-SACK
        // block, the larger block it lies in, then the other.
        let o = options(&[0, 1, 3, 4, 6, 3]);
        assert_eq!(o[2], (false, vec![(3, 4)]));
        assert_eq!(o[3], (false, vec![(3, 5)]));
        assert_eq!(o[4], (false, vec![(6, 7), (3, 5)]));
        assert_eq!(o[5], (true, vec![(3, 4), (3, 5), (6, 7)]));
        // at most three blocks (RFC 2018 §3 with timestamps): four holes,
        // the newest three blocks, newest first; a block the cumulative ACK
        // has covered is not repeated
        let o = options(&[1, 3, 5, 7, 0]);
        assert_eq!(o[3], (false, vec![(7, 8), (5, 6), (3, 4)]));
        assert_eq!(o[4], (false, vec![(7, 8), (5, 6), (3, 4)]));
        let o = options(&[1, 3, 5, 7, 0, 2, 4]);
        assert_eq!(o[6], (false, vec![(7, 8)]), "0-6 arrived: 7 held");
    }

    #[test]
    fn the_sack_blocks_after_a_dsack_reach_the_senders_scoreboard() {
        // RFC 2883 §4.1.2 at the sender: PSNs 0..6 sent, 2 lost, 3's ACK
        // (SACK 3-4) lost, and the sender retransmitted 0 (spuriously). The
        // receiver's ACK of the duplicate 0 carries the D-SACK block and 3's
        // block after it: the scoreboard learns 3 is held (no D-SACK alone
        // could say it), and the ACK counts as a duplicate ACK (it SACKs new
        // data, RFC 6675 §2).
        let mut r = TcpRecovery::new(64, 100 * US, 200_000 * US, 1_000_000 * US, true, true);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 6, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 100 * US, 0);
        assert_eq!(r.nsacked, 0);
        r.ack_extra = [(3, 4), (0, 0)];
        let e = r.on_ack(&mut s, 2, Feedback::Dsack(0, 1), 102 * US, 0);
        assert!(e.dupack);
        assert!(r.sacked.get(3) && r.nsacked == 1);
        assert_eq!(r.ack_extra, [(0, 0); 2], "taken with the ACK");
        // a D-SACK alone SACKs nothing
        let mut r = TcpRecovery::new(64, 100 * US, 200_000 * US, 1_000_000 * US, true, true);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 6, 0);
        r.on_ack(&mut s, 2, Feedback::Ack, 100 * US, 0);
        let e = r.on_ack(&mut s, 2, Feedback::Dsack(0, 1), 102 * US, 0);
        assert!(!e.dupack && r.nsacked == 0);
    }

    #[test]
    fn prr_rebuilds_a_window_of_many_losses_one_packet_beyond_what_is_delivered() {
        // 20 outstanding, 0..=12 lost, 13..20 SACKed one per ACK. With
        // ssthresh 10 (the congestion control's cut) and pipe = 20 − SACKed
        // − lost far below it, RFC 6675 would send ssthresh − pipe
        // retransmissions at once; PRR-SSRB (RFC 6937 §3.1) sends
        // min(ssthresh − pipe, max(prr_delivered − prr_out, DeliveredData)
        // + 1) per ACK: two on each ACK that delivers one, the ACK that
        // starts the recovery included (its forced fast retransmit, RFC 6675
        // §5 step 4.3, is one of the two), a slow start back to ssthresh.
        let mut r = TcpRecovery::new(64, 100 * US, 200_000 * US, 1_000_000 * US, true, false);
        let mut s = SendSeq::default();
        sent(&mut r, &mut s, 20, 0);
        let mut sends = Vec::new();
        for p in 13..20 {
            r.on_ack(&mut s, 0, Feedback::AckBlock(p, p + 1), 100 * US, 0);
            let mut n = 0;
            while r.next_psn(&s) < 13 && !r.blocked(&s, r.next_psn(&s), 10) {
                sent(&mut r, &mut s, 1, 100 * US);
                n += 1;
            }
            sends.push(n);
        }
        // the third SACK starts the recovery (IsLost: 13..=15 SACKed above 0..=12)
        assert_eq!(sends, vec![0, 0, 2, 2, 2, 2, 2]);
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
