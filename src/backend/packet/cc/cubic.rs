//! **CUBIC** ([`CongestionControl::Cubic`](crate::mechanism::CongestionControl::Cubic),
//! RFC 9438), Linux's default since 2.6.19: NewReno's slow start, fast
//! retransmit and fast recovery ([`LossWindow`]) with β = 0.7
//! ([`CUBIC_BETA`]) and a cubic congestion-avoidance curve.
//!
//! After a loss at window W_max, congestion avoidance follows
//! W_cubic(t) = C (t − K)³ + W_max (§4.2, eq. 1), C = 0.4 ([`CUBIC_C`]),
//! t in seconds since the epoch began (the first ACK of congestion
//! avoidance), K = ∛((W_max − cwnd_epoch) / C) (eq. 2). Each ACK moves cwnd
//! by (target − cwnd) / cwnd per segment acknowledged, with target =
//! W_cubic(t + RTT) held within [cwnd, 1.5 cwnd] (§4.2). The Reno-friendly
//! estimate W_est starts at cwnd_epoch and grows by α_cubic = 3 (1 − β) /
//! (1 + β) segments per window (1 once past W_max, §4.3); while W_cubic(t) <
//! W_est, cwnd follows W_est. On a loss, fast convergence lowers W_max to
//! cwnd (1 + β) / 2 if the window did not regain the previous W_max (§4.7).
//! RTT is the path's idle round trip ([`QpStart::base_rtt`]); the RFC uses
//! the smoothed one, which the queue makes larger.

use super::newreno::{LossWindow, Step};
use super::{AckInfo, AckReaction, CcLaw, QpStart};
use crate::mechanism::defaults::{CUBIC_BETA, CUBIC_C};

/// CUBIC sender state of one connection (windows in segments).
#[derive(Clone, Copy, Debug, Default)]
pub struct CubicState {
    /// The window and its recovery state.
    pub w: LossWindow,
    /// Window before the last reduction, segments (0: no loss yet).
    pub w_max: f64,
    /// Time to reach `w_max` from the epoch's start, s.
    pub k: f64,
    /// Start of the current congestion-avoidance epoch, ps (`None`: not started).
    pub epoch: Option<u64>,
    /// Reno-friendly window estimate, segments.
    pub w_est: f64,
    /// Round trip used for the target, s.
    pub rtt: f64,
}

impl CubicState {
    /// W_cubic at `t` seconds into the epoch, segments.
    pub fn w_cubic(&self, t: f64) -> f64 {
        CUBIC_C * (t - self.k).powi(3) + self.w_max
    }

    fn avoid(&mut self, now: u64, n: u32) {
        let cwnd = self.w.cwnd;
        let t0 = *self.epoch.get_or_insert_with(|| {
            // a new epoch: K from where the window stands now
            if cwnd < self.w_max {
                self.k = ((self.w_max - cwnd) / CUBIC_C).cbrt();
            } else {
                self.k = 0.0;
                self.w_max = cwnd;
            }
            self.w_est = cwnd;
            now
        });
        let t = now.saturating_sub(t0) as f64 * 1e-12;
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        self.w_est += alpha * n as f64 / cwnd;
        if self.w_cubic(t) < self.w_est {
            // Reno-friendly region (§4.3)
            self.w.cwnd = self.w.cwnd.max(self.w_est);
        } else {
            let target = self.w_cubic(t + self.rtt).clamp(cwnd, 1.5 * cwnd);
            self.w.cwnd += (target - cwnd) / cwnd * n as f64;
        }
    }
}

impl CcLaw for CubicState {
    /// The initial window, segments.
    type Params = u32;
    // every segment ACKed, as NewReno (no delayed-ACK timer is modelled)
    const ACK_EVERY: Option<u32> = Some(1);

    fn new(iw: &u32, start: &QpStart) -> Self {
        CubicState {
            w: LossWindow::new(*iw, start.max_pkts),
            rtt: start.base_rtt as f64 * 1e-12,
            ..CubicState::default()
        }
    }

    #[inline]
    fn on_ack(&mut self, _iw: &u32, a: &AckInfo) -> AckReaction {
        let before = self.w.cwnd;
        let step = self.w.on_ack(a, CUBIC_BETA);
        match step {
            Step::Cut => {
                // fast convergence (§4.7)
                self.w_max = if before < self.w_max {
                    before * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    before
                };
                self.epoch = None;
            }
            Step::Avoid(n) => {
                self.avoid(a.now, n);
                self.w.cwnd = self.w.cwnd.min(a.max_pkts as f64);
            }
            Step::SlowStart | Step::Hold => {}
        }
        AckReaction {
            window: Some(self.w.window()),
            window_cut: step == Step::Cut,
        }
    }

    #[inline]
    fn on_timeout(&mut self, _iw: &u32) -> Option<u32> {
        self.w_max = self.w.cwnd;
        self.epoch = None;
        self.w.on_timeout(CUBIC_BETA);
        Some(self.w.window())
    }

    #[inline]
    fn on_ce(&mut self, _iw: &u32, _now: u64) -> bool {
        self.w.on_ce();
        false
    }

    #[inline]
    fn take_ce_echo(&mut self) -> u32 {
        self.w.take_ce_echo()
    }

    #[inline]
    fn window(&self) -> Option<u32> {
        Some(self.w.window())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_regains_w_max_after_k_seconds() {
        // RFC 9438 eq. 1-2: after a cut from W_max = 100 to 70, K = ∛(30 / 0.4)
        // = 4.217 s and W_cubic(K) = W_max; the curve is flat there.
        let mut c = CubicState {
            w: LossWindow::new(70, 1000),
            w_max: 100.0,
            ..CubicState::default()
        };
        c.w.ssthresh = 70.0;
        c.avoid(0, 0);
        assert!((c.k - (30.0f64 / 0.4).cbrt()).abs() < 1e-9);
        assert!((c.w_cubic(c.k) - 100.0).abs() < 1e-9);
        assert!((c.w_cubic(0.0) - 70.0).abs() < 1e-9);
        assert!((c.w_cubic(c.k + 1.0) - 100.4).abs() < 1e-9);
    }

    #[test]
    fn at_datacenter_round_trips_cubic_grows_as_reno_friendly() {
        // 100 µs round trips: the cubic curve hardly moves in a few ms, so W_est
        // (α_cubic = 0.53 segments per window below W_max) sets the window.
        let mut c = CubicState {
            w: LossWindow::new(70, 1000),
            w_max: 100.0,
            rtt: 1e-4,
            ..CubicState::default()
        };
        c.w.ssthresh = 70.0;
        for i in 0..70u64 {
            c.avoid(i * 1_428_571, 1); // one window per 100 µs
        }
        let alpha = 3.0 * 0.3 / 1.7;
        assert!((c.w.cwnd - (70.0 + alpha)).abs() < 0.02, "{}", c.w.cwnd);
    }
}
