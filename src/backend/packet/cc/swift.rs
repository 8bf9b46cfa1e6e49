//! **Swift** ([`CongestionControl::Swift`](crate::mechanism::CongestionControl::Swift);
//! Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control
//! in the Datacenter", SIGCOMM 2020, Algorithm 1): window-based, driven by the
//! round-trip delay each ACK measures. Every data packet carries its send time
//! (nanoseconds, 32 bits, in the packet's otherwise informational `hash`
//! field) and the receiver echoes the newest one it got in its ACK, so every
//! ACK is a delay sample, retransmissions included (no Karn ambiguity).
//!
//! Per ACK, with `target = base RTT + queue_target + flow scaling(cwnd)`:
//! below the target the window grows by `ai / cwnd` per acknowledged packet
//! (`ai` per round trip), or by `ai` per packet while it is under one packet;
//! above it, and at most once per round trip, it is cut by
//! `max(1 − β (delay − target) / delay, 1 − max_mdf)`. A retransmission timeout
//! cuts by `max_mdf`. Under one packet the sender paces: one packet every
//! `RTT / cwnd` (§3.4), which is how thousands of flows share one port.
//!
//! The base RTT is the queue pair's idle round trip, known from its path when
//! it is created: Swift scales its target by hop count because a host cannot
//! know its path's idle delay; the simulator can, so the target is exact per
//! path. Flow scaling (§3.5) adds up to `fs_range` as the window falls from
//! `fs_max_cwnd` to `fs_min_cwnd` packets, α / √cwnd + β fitted to those ends.

use super::{AckInfo, AckReaction, CcLaw, QpStart};
use crate::mechanism::SwiftParams;

/// Nanoseconds of `ps`, truncated to 32 bits: the send time a data packet
/// carries (wraps every 4.29 s; a round trip is far shorter).
#[inline]
pub fn stamp_of(ps: u64) -> u32 {
    (ps / 1000) as u32
}

/// Swift state of one queue pair: the sender's window and delay estimate, and
/// the receiver's newest send time to echo.
#[derive(Clone, Copy, Debug, Default)]
pub struct SwiftState {
    /// Congestion window, packets (fractional below one: paced).
    pub cwnd: f64,
    /// Idle round trip of the queue pair's path, ps.
    pub base_rtt: u64,
    /// Smoothed round trip (EWMA, gain 1/8 as TCP's), ps; 0 before a sample.
    pub srtt: u64,
    /// Last delay sample, ps.
    pub last_delay: u64,
    /// When the window was last cut, ps.
    pub last_decrease: u64,
    /// A cut happened (so `last_decrease` is meaningful).
    pub decreased: bool,
    /// Receiver: send time (ns, 32 bits) of the newest data packet received.
    pub echo: u32,
    /// Window cuts made.
    pub cuts: u32,
}

impl SwiftState {
    /// The delay Swift aims at with the window at `cwnd` packets, ps.
    pub fn target(&self, p: &SwiftParams, cwnd: f64) -> u64 {
        let fs = if p.fs_range.0 == 0 {
            0.0
        } else {
            let range = p.fs_range.0 as f64;
            let a = range / (1.0 / p.fs_min_cwnd.sqrt() - 1.0 / p.fs_max_cwnd.sqrt());
            let b = -a / p.fs_max_cwnd.sqrt();
            (a / cwnd.max(1e-9).sqrt() + b).clamp(0.0, range)
        };
        self.base_rtt + p.queue_target.0 + fs as u64
    }

    /// The round trip the pacing and the once-per-RTT rule use: the smoothed
    /// one, or the base RTT before any sample.
    fn rtt(&self) -> u64 {
        if self.srtt > 0 {
            self.srtt
        } else {
            self.base_rtt.max(1)
        }
    }

    /// The window the NIC enforces, whole packets (at least one: below one
    /// packet the law paces instead).
    fn window_pkts(&self, max_pkts: u32) -> u32 {
        (self.cwnd.floor() as u32).clamp(1, max_pkts.max(1))
    }

    /// One delay sample `delay` (ps) from an ACK at `now` acknowledging `n`
    /// new packets.
    pub fn on_delay(
        &mut self,
        p: &SwiftParams,
        now: u64,
        delay: u64,
        n: u32,
        max_pkts: u32,
    ) -> bool {
        // at most one cut per round trip, measured before this sample joins
        // the estimate (as htsim's Swift does)
        let can_decrease = !self.decreased || now.saturating_sub(self.last_decrease) >= self.rtt();
        self.last_delay = delay;
        self.srtt = if self.srtt == 0 {
            delay
        } else {
            (7 * self.srtt + delay) / 8
        };
        let target = self.target(p, self.cwnd);
        let mut cut = false;
        if delay < target {
            if self.cwnd >= 1.0 {
                self.cwnd += p.ai * n as f64 / self.cwnd;
            } else {
                self.cwnd += p.ai * n as f64;
            }
        } else if can_decrease {
            let over = (delay - target) as f64 / delay as f64;
            self.cwnd *= (1.0 - p.beta * over).max(1.0 - p.max_mdf);
            self.last_decrease = now;
            self.decreased = true;
            self.cuts += 1;
            cut = true;
        }
        self.cwnd = self.cwnd.clamp(p.min_cwnd, max_pkts.max(1) as f64);
        cut
    }
}

impl CcLaw for SwiftState {
    type Params = SwiftParams;
    /// Every packet's delay is a sample (as the paper's NIC timestamps).
    const ACK_EVERY: Option<u32> = Some(1);

    fn new(p: &SwiftParams, start: &QpStart) -> Self {
        // one bandwidth-delay product of the idle path at first: line rate
        // until the first delays come back
        let bdp = start.base_rtt as f64 * start.line.bps() as f64 / 8e12 / p.packet_wire as f64;
        SwiftState {
            cwnd: bdp.ceil().clamp(1.0, start.max_pkts.max(1) as f64),
            base_rtt: start.base_rtt,
            ..SwiftState::default()
        }
    }

    /// Below one packet of window: one packet every `RTT / cwnd` ps
    /// (whatever its size); the window alone limits it above.
    #[inline]
    fn pace_gap(&self, _p: &SwiftParams, _wire: u64) -> u64 {
        if self.cwnd < 1.0 {
            (self.rtt() as f64 / self.cwnd) as u64
        } else {
            0
        }
    }

    #[inline]
    fn on_ack(&mut self, p: &SwiftParams, ack: &AckInfo) -> AckReaction {
        // a selective NACK carries no send time: no delay sample
        let cut = match ack.echo {
            Some(stamp) => {
                let delay_ns = stamp_of(ack.now).wrapping_sub(stamp) as u64;
                self.on_delay(p, ack.now, delay_ns * 1000, ack.newly_acked, ack.max_pkts)
            }
            None => false,
        };
        AckReaction {
            window: Some(self.window_pkts(ack.max_pkts)),
            window_cut: cut,
        }
    }

    #[inline]
    fn on_timeout(&mut self, p: &SwiftParams) -> Option<u32> {
        self.cwnd = (self.cwnd * (1.0 - p.max_mdf)).max(p.min_cwnd);
        self.cuts += 1;
        Some(self.window_pkts(u32::MAX))
    }

    #[inline]
    fn on_data(&mut self, stamp: u32) {
        self.echo = stamp;
    }

    #[inline]
    fn take_ce_echo(&mut self) -> u32 {
        self.echo
    }

    #[inline]
    fn stamp(&self, now: u64) -> Option<u32> {
        Some(stamp_of(now))
    }

    #[inline]
    fn window(&self) -> Option<u32> {
        Some(self.window_pkts(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn params() -> SwiftParams {
        SwiftParams::for_line(Rate::gbps(100), 4096 + 78, 1 << 20)
    }

    #[test]
    fn below_the_target_the_window_grows_by_ai_per_round_trip() {
        let p = params();
        let mut s = SwiftState {
            cwnd: 10.0,
            base_rtt: 5_000_000,
            ..SwiftState::default()
        };
        // ten ACKs of one packet each at the base RTT: +ai/cwnd each, ≈ +1
        for i in 0..10 {
            s.on_delay(&p, i * 1000, 5_000_000, 1, 1000);
        }
        assert!((s.cwnd - 11.0).abs() < 0.05, "{}", s.cwnd);
    }

    #[test]
    fn above_the_target_one_cut_per_round_trip_bounded_by_max_mdf() {
        let p = params();
        let mut s = SwiftState {
            cwnd: 100.0,
            base_rtt: 5_000_000,
            ..SwiftState::default()
        };
        let target = s.target(&p, 100.0);
        // delay twice the target: 1 − 0.8 × ½ = 0.6 (above 1 − max_mdf = 0.5)
        assert!(s.on_delay(&p, 1_000_000, 2 * target, 1, 1000));
        assert!((s.cwnd - 60.0).abs() < 1e-9, "{}", s.cwnd);
        // a second sample within the round trip does not cut again
        assert!(!s.on_delay(&p, 1_000_001, 2 * target, 1, 1000));
        // after a round trip it does; a huge delay cuts by max_mdf only
        let later = 1_000_000 + s.srtt + 1;
        assert!(s.on_delay(&p, later, 1000 * target, 1, 1000));
        assert!((s.cwnd - 30.0).abs() < 1e-9, "{}", s.cwnd);
    }

    #[test]
    fn flow_scaling_raises_the_target_of_small_windows_within_its_range() {
        let p = params();
        let s = SwiftState {
            base_rtt: 1_000_000,
            ..SwiftState::default()
        };
        let base = 1_000_000 + p.queue_target.0;
        assert_eq!(s.target(&p, 100.0), base);
        assert_eq!(s.target(&p, 1000.0), base);
        let at_min = s.target(&p, p.fs_min_cwnd);
        assert!(at_min.abs_diff(base + p.fs_range.0) <= 1, "{at_min}");
        assert!(s.target(&p, 1.0) > base && s.target(&p, 1.0) < at_min);
    }

    #[test]
    fn under_one_packet_the_sender_paces_one_packet_per_rtt_over_cwnd() {
        let p = params();
        let s = SwiftState {
            cwnd: 0.25,
            base_rtt: 4_000_000,
            srtt: 8_000_000,
            ..SwiftState::default()
        };
        assert_eq!(s.pace_gap(&p, 4174), 32_000_000);
        assert_eq!(CcLaw::window(&s), Some(1));
    }

    #[test]
    fn an_ack_without_a_send_time_is_no_delay_sample() {
        // a selective NACK's field holds a PSN: Swift must not read it
        let p = params();
        let mut s = SwiftState {
            cwnd: 40.0,
            base_rtt: 5_000_000,
            srtt: 6_000_000,
            ..SwiftState::default()
        };
        let ack = |echo| AckInfo {
            now: 900_000_000,
            newly_acked: 1,
            ce: 0,
            echo,
            una: 10,
            nxt: 50,
            nack: true,
            max_pkts: 1000,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: false,
        };
        let r = CcLaw::on_ack(&mut s, &p, &ack(None));
        assert!(!r.window_cut);
        assert_eq!((s.cwnd, s.srtt, s.cuts), (40.0, 6_000_000, 0));
        // the same NACK read as a send time of PSN 17 would cut
        let r = CcLaw::on_ack(&mut s, &p, &ack(Some(17)));
        assert!(r.window_cut && s.cwnd < 40.0);
    }

    #[test]
    fn stamps_wrap_and_still_give_the_round_trip() {
        let sent = (u32::MAX as u64 - 10) * 1000;
        let back = sent + 7_000_000; // 7 µs later, past the wrap
        assert_eq!(stamp_of(back).wrapping_sub(stamp_of(sent)), 7000);
    }
}
