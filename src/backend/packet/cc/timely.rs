//! **TIMELY** ([`CongestionControl::Timely`](crate::mechanism::CongestionControl::Timely);
//! Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter",
//! SIGCOMM 2015, §4 and Algorithm 1): rate-based, driven by the gradient of
//! the round-trip time.
//!
//! **Completion events.** TIMELY reacts once per completed segment (16–64 KB,
//! `seg_bytes`), not per packet: the sender counts the packets ACKs
//! acknowledge and, when a segment's worth is in, takes the round trip of the
//! newest packet the receiver got (its send time rides in the data packet's
//! informational `hash` field and comes back in the ACK, as under Swift), the
//! paper's `completion time − send time − segment / line rate` (§3.1), since
//! the stamp is the segment's last packet's, not its first's.
//!
//! **Algorithm 1**, per completion with round trip `rtt`:
//! `rtt_diff ← (1 − α) rtt_diff + α (rtt − prev_rtt)`,
//! `gradient = rtt_diff / minRTT`; if `rtt < T_low` the rate grows by δ; if
//! `rtt > T_high` it is cut to `rate (1 − β (1 − T_high / rtt))`; else a
//! gradient ≤ 0 adds `N δ` (N = 5 after `hai_threshold` such completions in a
//! row, hyper-active increase, else 1) and a positive one cuts to
//! `rate (1 − β gradient)`. The first completion only sets `prev_rtt` (no
//! difference yet), as the HPCC simulator's TIMELY mode does. The rate stays
//! between [`TIMELY_MIN_RATE`] and the NIC's line rate (where it starts, as
//! in the HPCC simulator); the NIC paces each packet at it.
//!
//! **Once per round trip** (`update = "rtt"`, [`TimelyUpdate::Rtt`]): the
//! HPCC simulator's `rdma-hw.cc` runs Algorithm 1 only when an ACK
//! acknowledges past the `snd_nxt` recorded at the previous update, so each
//! sample answers the previous update's rate and the ACKs between change
//! nothing (its per-ACK fast react for TIMELY is empty). Per completion, the
//! first round trip's samples all report the same rising queue and stack
//! cuts. The cadence only: the rule applied is Algorithm 1 as above (the HPCC
//! simulator also counts any increase, below T_low too, towards its
//! hyper-active step; this law keeps the paper's gradient-band count).
//!
//! **δ** defaults to the paper's 10 Mb/s per 10 Gb/s of line rate: below
//! T_low a flow gains δ per completion only (hyper-active increase is for the
//! gradient band), so after a cut that empties the queue it climbs back at
//! `δ / (seg · 8 / rate)` per second; an absolute 10 Mb/s would take a
//! 400 Gb/s flow 40 times longer than the paper's to regain the same share.
//!
//! **minRTT** is a configured constant (20 µs by default), as in the paper,
//! not the path's idle round trip: over a 4 µs idle RTT one 64 KB build-up at
//! 10 Gb/s makes the normalized gradient exceed 1/β, the rate falls to its
//! floor and climbs back by δ per completion (`min_rtt = "path"` asks for
//! exactly that). Zhu et al. ("ECN or Delay: Lessons Learnt from Analysis of
//! DCQCN and TIMELY", CoNEXT 2016) show the law has no unique fixed point:
//! flows that start at different rates keep different rates, so fairness is
//! not something TIMELY promises; their patched variant is not this law.

use super::{AckInfo, AckReaction, CcLaw, QpStart};
use crate::mechanism::defaults::{TIMELY_HAI_STEPS, TIMELY_MIN_RATE};
use crate::mechanism::{MinRtt, TimelyParams, TimelyUpdate};

use super::swift::stamp_of;

/// TIMELY state of one queue pair: the sender's rate and gradient estimate,
/// the receiver's newest send time to echo.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimelyState {
    /// Sending rate, bits/s.
    pub rate: f64,
    /// The NIC's line rate, bits/s (the ceiling, and the first rate).
    pub line: f64,
    /// minRTT the gradient is normalized by, ps.
    pub min_rtt: f64,
    /// Previous completion's round trip, ps (0 before the first).
    pub prev_rtt: u64,
    /// Smoothed RTT difference, ps (signed).
    pub rtt_diff: f64,
    /// Completions in a row with a gradient ≤ 0.
    pub neg_gradients: u32,
    /// Packets acknowledged since the last completion.
    pub acked: u32,
    /// A segment, packets (at least one).
    pub seg_pkts: u32,
    /// Receiver: send time (ns, 32 bits) of the newest data packet received.
    pub echo: u32,
    /// Completions (RTT samples) seen.
    pub completions: u32,
    /// Multiplicative decreases made.
    pub cuts: u32,
    /// Last completion's round trip, ps.
    pub last_rtt: u64,
    /// `update = "rtt"`: the next PSN the sender would have sent at the
    /// last update; an ACK past it starts the next update (0: no update yet).
    pub mark: u32,
}

impl TimelyState {
    /// A sender at `line` bits/s whose gradient is normalized by `min_rtt`
    /// ps, completing a segment every `seg_pkts` packets.
    pub fn with(line: f64, min_rtt: u64, seg_pkts: u32) -> TimelyState {
        TimelyState {
            rate: line,
            line,
            min_rtt: min_rtt.max(1) as f64,
            seg_pkts: seg_pkts.max(1),
            ..TimelyState::default()
        }
    }

    /// Algorithm 1 for one completion whose round trip is `rtt` ps; true if
    /// the rate was cut.
    pub fn on_rtt(&mut self, p: &TimelyParams, rtt: u64) -> bool {
        self.completions += 1;
        self.last_rtt = rtt;
        if self.completions == 1 {
            self.prev_rtt = rtt;
            return false;
        }
        let new_diff = rtt as f64 - self.prev_rtt as f64;
        self.prev_rtt = rtt;
        self.rtt_diff = (1.0 - p.alpha) * self.rtt_diff + p.alpha * new_diff;
        let gradient = self.rtt_diff / self.min_rtt;
        if gradient <= 0.0 {
            self.neg_gradients = self.neg_gradients.saturating_add(1);
        } else {
            self.neg_gradients = 0;
        }
        let delta = p.delta.0 as f64;
        let mut cut = false;
        if rtt < p.t_low.0 {
            self.rate += delta;
        } else if rtt > p.t_high.0 {
            self.rate *= 1.0 - p.beta * (1.0 - p.t_high.0 as f64 / rtt as f64);
            cut = true;
        } else if gradient <= 0.0 {
            let n = if self.neg_gradients >= p.hai_threshold {
                TIMELY_HAI_STEPS
            } else {
                1.0
            };
            self.rate += n * delta;
        } else {
            self.rate *= 1.0 - p.beta * gradient;
            cut = true;
        }
        let floor = (TIMELY_MIN_RATE.0 as f64).min(self.line);
        self.rate = self.rate.clamp(floor, self.line);
        self.cuts += u32::from(cut);
        cut
    }
}

impl CcLaw for TimelyState {
    type Params = TimelyParams;
    /// Every packet is ACKed, so the ACK that completes a segment carries
    /// the send time of the segment's last packet (the paper's NIC
    /// timestamps the completion of the segment).
    const ACK_EVERY: Option<u32> = Some(1);

    fn new(p: &TimelyParams, start: &QpStart) -> Self {
        let min_rtt = match p.min_rtt {
            MinRtt::Fixed(t) => t.0,
            MinRtt::Path => start.base_rtt,
        };
        let mtu = u64::from(start.mtu.max(1));
        let seg_pkts = p.seg_bytes.div_ceil(mtu).min(u32::MAX as u64) as u32;
        TimelyState::with(start.line.bps() as f64, min_rtt, seg_pkts)
    }

    /// Paced below line rate: one packet of `wire` bytes every
    /// `wire · 8 / rate` s.
    #[inline]
    fn pace_gap(&self, _p: &TimelyParams, wire: u64) -> u64 {
        if self.rate >= self.line {
            0
        } else {
            (wire as f64 * 8e12 / self.rate) as u64
        }
    }

    #[inline]
    fn on_ack(&mut self, p: &TimelyParams, ack: &AckInfo) -> AckReaction {
        // a selective or trimmed NACK carries a PSN, not a send time
        let Some(stamp) = ack.echo else {
            return AckReaction::default();
        };
        if p.update == TimelyUpdate::Rtt {
            // the HPCC simulator's HandleAckTimely: update when the ACK
            // acknowledges a packet sent after the previous update (its
            // `ack_seq > m_lastUpdateSeq`, `m_lastUpdateSeq = snd_nxt`), so
            // the sample reflects that update's rate; the first ACK only
            // records its round trip and the mark
            if self.completions > 0 && ack.una <= self.mark {
                return AckReaction::default();
            }
            self.mark = self.mark.max(ack.nxt);
            let rtt_ns = stamp_of(ack.now).wrapping_sub(stamp) as u64;
            return AckReaction {
                window: None,
                window_cut: self.on_rtt(p, rtt_ns * 1000),
            };
        }
        self.acked = self.acked.saturating_add(ack.newly_acked);
        if self.acked < self.seg_pkts {
            return AckReaction::default();
        }
        // one completion per ACK, however many segments it closes
        self.acked %= self.seg_pkts;
        let rtt_ns = stamp_of(ack.now).wrapping_sub(stamp) as u64;
        AckReaction {
            window: None,
            window_cut: self.on_rtt(p, rtt_ns * 1000),
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Rate, SimTime};

    const G10: f64 = 10e9;

    fn params() -> TimelyParams {
        TimelyParams::default()
    }

    #[test]
    fn the_first_completion_only_sets_the_previous_rtt() {
        let p = params();
        let mut s = TimelyState::with(G10 / 2.0, 20_000_000, 4);
        assert!(!s.on_rtt(&p, 300_000_000));
        assert_eq!(
            (s.rate, s.prev_rtt, s.rtt_diff),
            (G10 / 2.0, 300_000_000, 0.0)
        );
    }

    #[test]
    fn below_t_low_the_rate_grows_by_delta_per_completion() {
        // Algorithm 1: rtt < T_low → rate + δ, whatever the gradient; from
        // 5 Gb/s, 100 completions at 10 Mb/s each give 6 Gb/s exactly
        let p = params();
        let mut s = TimelyState::with(G10, 20_000_000, 4);
        s.rate = 5e9;
        s.on_rtt(&p, 10_000_000);
        for i in 0..100 {
            // a rising RTT below T_low is still an increase
            assert!(!s.on_rtt(&p, 10_000_000 + i * 100_000));
        }
        assert!((s.rate - 6e9).abs() < 1.0, "{}", s.rate);
    }

    #[test]
    fn above_t_high_the_cut_is_beta_times_the_excess_share() {
        // rtt = 2 T_high: rate (1 − 0.8 (1 − ½)) = 0.6 rate
        let p = params();
        let mut s = TimelyState::with(G10, 20_000_000, 4);
        s.on_rtt(&p, 100_000_000);
        assert!(s.on_rtt(&p, 2 * p.t_high.0));
        assert!((s.rate - 0.6 * G10).abs() < 1.0, "{}", s.rate);
    }

    #[test]
    fn a_positive_gradient_cuts_by_beta_times_the_normalized_gradient() {
        // between the thresholds, prev 100 µs, now 105 µs: rtt_diff =
        // 0.875 × 5 µs = 4.375 µs, gradient 4.375 / 20 = 0.21875, rate
        // × (1 − 0.8 × 0.21875) = 0.825
        let p = params();
        let mut s = TimelyState::with(G10, 20_000_000, 4);
        s.on_rtt(&p, 100_000_000);
        assert!(s.on_rtt(&p, 105_000_000));
        assert!((s.rate - 0.825 * G10).abs() < 1.0, "{}", s.rate);
        // a gradient over 1/β would make the factor negative: the floor holds
        s.on_rtt(&p, 400_000_000);
        assert_eq!(s.rate, TIMELY_MIN_RATE.0 as f64);
    }

    #[test]
    fn hyper_active_increase_after_hai_threshold_non_positive_gradients() {
        // between the thresholds with a falling RTT: completions 1..4 of
        // the run add δ, from the fifth on 5δ (Algorithm 1's N = 5)
        let p = params();
        let mut s = TimelyState::with(G10, 20_000_000, 4);
        s.rate = 1e9;
        s.on_rtt(&p, 200_000_000);
        let mut rates = vec![];
        for i in 1..=7u64 {
            s.on_rtt(&p, 200_000_000 - i * 1_000_000);
            rates.push(s.rate);
        }
        let steps: Vec<f64> = rates.windows(2).map(|w| (w[1] - w[0]) / 1e7).collect();
        // first step from 1e9: δ; then δ, δ, δ (four), then 5δ, 5δ
        assert!((rates[0] - 1.01e9).abs() < 1.0);
        let want = [1.0, 1.0, 1.0, 5.0, 5.0, 5.0];
        for (got, want) in steps.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{steps:?}");
        }
        // a positive gradient ends HAI mode
        s.on_rtt(&p, 300_000_000);
        assert_eq!(s.neg_gradients, 0);
    }

    #[test]
    fn a_completion_is_one_segment_of_acknowledged_packets_with_its_send_time() {
        let p = TimelyParams {
            seg_bytes: 16 << 10,
            ..params()
        };
        let start = QpStart {
            line: Rate::gbps(10),
            max_pkts: 1000,
            now: 0,
            base_rtt: 4_000_000,
            mtu: 4096,
        };
        let mut s = <TimelyState as CcLaw>::new(&p, &start);
        assert_eq!(s.seg_pkts, 4);
        let ack = |now: u64, sent: u64, echo: bool| AckInfo {
            now,
            newly_acked: 1,
            ce: 0,
            echo: echo.then_some(stamp_of(sent)),
            una: 0,
            nxt: 0,
            nack: false,
            max_pkts: 1000,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: false,
        };
        for i in 0..3 {
            CcLaw::on_ack(&mut s, &p, &ack(i * 1_000_000, 0, true));
            assert_eq!(s.completions, 0);
        }
        // the fourth packet completes the segment; its RTT is 30 µs
        CcLaw::on_ack(&mut s, &p, &ack(40_000_000, 10_000_000, true));
        assert_eq!((s.completions, s.last_rtt), (1, 30_000_000));
        // a selective NACK is no sample and counts nothing
        CcLaw::on_ack(&mut s, &p, &ack(50_000_000, 0, false));
        assert_eq!((s.completions, s.acked), (1, 0));
        // min_rtt = "path" normalizes by the path's idle round trip
        let path = TimelyParams {
            min_rtt: MinRtt::Path,
            ..p
        };
        assert_eq!(<TimelyState as CcLaw>::new(&path, &start).min_rtt, 4e6);
        let fixed = <TimelyState as CcLaw>::new(&p, &start).min_rtt;
        assert_eq!(fixed, SimTime::from_us(20).0 as f64);
    }

    #[test]
    fn once_per_rtt_an_ack_updates_only_past_the_previous_updates_snd_nxt() {
        let p = TimelyParams {
            update: TimelyUpdate::Rtt,
            ..params()
        };
        let mut s = TimelyState::with(G10, 20_000_000, 4);
        let ack = |now: u64, sent: u64, una: u32, nxt: u32| AckInfo {
            now,
            newly_acked: 1,
            ce: 0,
            echo: Some(stamp_of(sent)),
            una,
            nxt,
            nack: false,
            max_pkts: 1000,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: false,
        };
        // the first ACK records its round trip (100 µs) and the mark, PSN 20
        CcLaw::on_ack(&mut s, &p, &ack(100_000_000, 0, 1, 20));
        assert_eq!((s.completions, s.prev_rtt, s.mark), (1, 100_000_000, 20));
        // ACKs up to the mark (una ≤ 20) change nothing, however many
        for una in 2..=20 {
            CcLaw::on_ack(&mut s, &p, &ack(150_000_000, 0, una, 30));
        }
        assert_eq!((s.completions, s.rate), (1, G10));
        // the first past it updates: prev 100 µs, now 105 µs, rtt_diff 0.875 ×
        // 5 µs, gradient 0.21875, rate × 0.825 (as the per-completion test
        // above); the mark moves to the snd_nxt it saw
        let cut = CcLaw::on_ack(&mut s, &p, &ack(205_000_000, 100_000_000, 21, 40));
        assert!(cut.window_cut);
        assert_eq!((s.completions, s.mark), (2, 40));
        assert!((s.rate - 0.825 * G10).abs() < 1.0, "{}", s.rate);
    }

    #[test]
    fn below_line_rate_the_sender_paces_at_the_rate() {
        let p = params();
        let mut s = TimelyState::with(G10, 20_000_000, 4);
        assert_eq!(s.pace_gap(&p, 4174), 0);
        s.rate = 5e9;
        // 4174 B at 5 Gb/s: 6.6784 µs
        assert_eq!(s.pace_gap(&p, 4174), 6_678_400);
    }
}
