//! **InfiniBand congestion control** ([`CongestionControl::Ib`](crate::mechanism::CongestionControl::Ib)),
//! IBA vol. 1 Annex A10 "Congestion Control", as the hardware studies of Gran
//! et al. ("First experiences with congestion control in InfiniBand
//! hardware", IPDPS 2010) ran it; the mechanism grew from Santos, Turner and
//! Janakiraman, "End-to-end congestion control for InfiniBand" (INFOCOM 2003).
//! Constants and their sources: [`IbCcParams`].
//!
//! * **Congestion point** (switch, `switch.rs`): a port whose lane keeps more
//!   than `threshold` bytes queued behind the data packet it sends sets FECN
//!   on one in every `marking_rate + 1` such packets of at least `packet_size`
//!   bytes — only when it is the **root** of the congestion: it had credits
//!   for the packet when the packet reached the head of the queue. A port that
//!   waited for credits (a victim of congestion further down) does not mark
//!   (the spec's root/victim distinction with `Victim_Mask` clear).
//! * **Notification point** (destination channel adapter): every FECN-marked
//!   packet returns a BECN to its source in a congestion notification packet
//!   (the spec's CN, Annex A10.2.2: the destination sends a CN or sets BECN
//!   on an ACK; a CN is sent for every marked packet here, so the BECN does
//!   not wait for the ACK coalescing).
//! * **Reaction point** (source channel adapter), per queue pair: a BECN
//!   raises the Congestion Control Table Index by `ccti_increase`, capped at
//!   `ccti_limit`; every `ccti_timer` while CCTI > `ccti_min` it steps back by
//!   one (a real timer event). The queue pair starts a packet at most every
//!   `(1 + IRD)` serialization times at line rate, IRD = CCT[CCTI]
//!   ([`IbCcParams::ird`], a linear table).

use super::{CcLaw, IbCcParams, QpStart};

/// "No timer pending".
const NEVER: u64 = u64::MAX;

/// InfiniBand CC state of one queue pair (the source's CCTI and pacing; the
/// destination keeps none: every FECN returns a BECN).
#[derive(Clone, Copy, Debug)]
pub struct IbCcState {
    /// Congestion Control Table Index, in [`ccti_min`, `ccti_limit`].
    pub ccti: u32,
    /// When the CCTI timer next steps CCTI back, ps (NEVER at `ccti_min`).
    pub timer_due: u64,
    /// Picoseconds per byte at the NIC's line rate.
    pub ps_per_byte: f64,
}

impl IbCcState {
    /// A queue pair on a NIC of `line_bps` bits/s, at CCTI `ccti_min`.
    pub fn new(p: &IbCcParams, line_bps: u64) -> IbCcState {
        IbCcState {
            ccti: p.ccti_min,
            timer_due: NEVER,
            ps_per_byte: 8e12 / line_bps.max(1) as f64,
        }
    }

    /// A BECN arrived at `now`: CCTI += `ccti_increase` up to `ccti_limit`;
    /// true if CCTI rose. Starts the CCTI timer if it was idle.
    pub fn on_becn(&mut self, p: &IbCcParams, now: u64) -> bool {
        let before = self.ccti;
        self.ccti = self
            .ccti
            .saturating_add(p.ccti_increase)
            .min(p.ccti_limit)
            .max(p.ccti_min);
        if self.ccti > p.ccti_min && self.timer_due == NEVER {
            self.timer_due = now.saturating_add(p.ccti_timer.0);
        }
        self.ccti > before
    }

    /// The CCTI timer fires at `now`: one step back per elapsed period while
    /// above `ccti_min` (the timer runs freely: a BECN does not restart it).
    pub fn on_timer(&mut self, p: &IbCcParams, now: u64) {
        while self.timer_due <= now {
            if self.ccti > p.ccti_min {
                self.ccti -= 1;
            }
            self.timer_due = if self.ccti > p.ccti_min {
                self.timer_due.saturating_add(p.ccti_timer.0)
            } else {
                NEVER
            };
        }
    }

    /// After a packet of `wire` bytes starts, the next may start `(1 +
    /// IRD)` of its serialization times later (unpaced at IRD 0), ps.
    pub fn gap(&self, p: &IbCcParams, wire: u64) -> u64 {
        let ird = p.ird(self.ccti);
        if ird == 0 {
            0
        } else {
            let tx = (wire as f64 * self.ps_per_byte).ceil() as u64;
            tx.saturating_mul(1 + ird)
        }
    }
}

impl CcLaw for IbCcState {
    type Params = IbCcParams;

    fn new(p: &IbCcParams, start: &QpStart) -> Self {
        IbCcState::new(p, start.line.0)
    }

    #[inline]
    fn pace_gap(&self, p: &IbCcParams, wire: u64) -> u64 {
        self.gap(p, wire)
    }

    /// A BECN (the congestion notification packet) reached the source.
    #[inline]
    fn on_cnp(&mut self, p: &IbCcParams, now: u64) -> bool {
        self.on_becn(p, now)
    }

    #[inline]
    fn on_timer(&mut self, p: &IbCcParams, now: u64) -> bool {
        IbCcState::on_timer(self, p, now);
        false
    }

    #[inline]
    fn next_timer(&self) -> u64 {
        self.timer_due
    }

    /// Destination: every FECN-marked packet returns a BECN.
    #[inline]
    fn on_ce(&mut self, _p: &IbCcParams, _now: u64) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::SimTime;

    fn params() -> IbCcParams {
        IbCcParams::for_buffer(32 * 1024)
    }

    // Annex A10 (CA reaction): each BECN adds CCTI_Increase, never past
    // CCTI_Limit.
    #[test]
    fn becn_raises_ccti_by_the_increase_up_to_the_limit() {
        let mut p = params();
        p.ccti_increase = 3;
        p.ccti_limit = 7;
        let mut s = IbCcState::new(&p, 400_000_000_000);
        assert!(s.on_becn(&p, 0));
        assert_eq!(s.ccti, 3);
        assert!(s.on_becn(&p, 1));
        assert_eq!(s.ccti, 6);
        assert!(s.on_becn(&p, 2));
        assert_eq!(s.ccti, 7, "capped at CCTI_Limit");
        assert!(!s.on_becn(&p, 3), "at the limit a BECN changes nothing");
        assert_eq!(s.ccti, 7);
    }

    // Annex A10: the CCTI timer takes one step back per CCTI_Timer period
    // while CCTI > CCTI_Min, and stops there; a BECN does not restart it.
    #[test]
    fn the_timer_decays_ccti_one_step_per_period_down_to_ccti_min() {
        let mut p = params();
        p.ccti_min = 2;
        p.ccti_timer = SimTime::from_us(10);
        let t = p.ccti_timer.0;
        let mut s = IbCcState::new(&p, 400_000_000_000);
        assert_eq!(s.ccti, 2, "a new pair starts at CCTI_Min");
        assert_eq!(s.next_timer(), NEVER);
        for i in 0..4 {
            s.on_becn(&p, i * 1000);
        }
        assert_eq!(s.ccti, 6);
        assert_eq!(
            s.next_timer(),
            t,
            "started by the first BECN, not restarted"
        );
        s.on_timer(&p, t);
        assert_eq!(s.ccti, 5);
        assert_eq!(s.next_timer(), 2 * t);
        // a late timer catches up every elapsed period
        s.on_timer(&p, 4 * t);
        assert_eq!(s.ccti, 2);
        assert_eq!(s.next_timer(), NEVER, "idle at CCTI_Min");
    }

    // The linear table: at CCTI i a queue pair starts a packet every (1 + i)
    // serialization times; 4096 + 30 B at 400 Gb/s is 82.52 ns on the wire.
    #[test]
    fn the_injection_delay_follows_the_table() {
        let p = params();
        let mut s = IbCcState::new(&p, 400_000_000_000);
        assert_eq!(s.gap(&p, 4126), 0, "CCTI 0: unpaced");
        let tx = 82_520;
        for i in 1..=5u64 {
            s.on_becn(&p, 0);
            assert_eq!(s.ccti as u64, i);
            assert_eq!(s.gap(&p, 4126), tx * (1 + i), "CCTI {i}");
            assert_eq!(p.ird(i as u32), i);
        }
    }
}
