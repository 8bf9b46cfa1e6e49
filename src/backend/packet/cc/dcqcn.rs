//! **DCQCN** ([`CongestionControl::Dcqcn`](crate::mechanism::CongestionControl::Dcqcn), Zhu et al. 2015, Fig. 4–6). The
//! receiver NIC answers a CE-marked packet with a CNP, at most one per queue
//! pair per `cnp_interval` (N). The sender (reaction point) paces its packets at
//! the current rate R_C. On a CNP: R_T = R_C, R_C ← R_C (1 − α/2),
//! α ← (1 − g) α + g; the byte counter and timer restart. Without CNPs, α ←
//! (1 − g) α every `alpha_interval` (K). Rate increase events come from the
//! timer (every T) and the byte counter (every B bytes sent); with `i` =
//! min(timer stage, byte stage): fast recovery (R_C ← (R_T + R_C)/2) while
//! max(stages) < F, hyper increase (R_T += i·R_HAI) when both stages exceed F,
//! additive increase (R_T += R_AI) otherwise, each followed by R_C ← (R_T +
//! R_C)/2. Timers are evaluated lazily when the queue pair next sends or gets a
//! CNP (the number of whole periods elapsed is applied at once), which needs no
//! events and is exact for a queue pair that keeps sending.
//!
//! Defaults ([`DcqcnParams::default`]): the paper's structure (g = 1/256,
//! K = 55 µs, T = 55 µs, B = 10 MB, F = 5, N = 50 µs, α₀ = 1) with the rate
//! steps and floor that the HPCC simulator (alibaba-edu/High-Precision-
//! Congestion-Control, `simulation/run.py`, `--cc dcqcn_paper`) uses, scaled
//! to the line rate: R_AI = 5 Mb/s × rate/25 Gb/s, R_HAI = 50 Mb/s × rate/25 Gb/s
//! (80 and 800 Mb/s at 400 Gb/s), min rate 1 Gb/s. The paper's own R_AI of
//! 40 Mb/s was tuned for 40 Gb/s links.
//!

use super::{CcLaw, DcqcnParams, QpStart};
use crate::units::Rate;

/// DCQCN reaction-point state of one queue pair.
#[derive(Clone, Copy, Debug, Default)]
pub struct DcqcnState {
    /// Current rate R_C, bits/s.
    pub rc: f64,
    /// Target rate R_T, bits/s.
    pub rt: f64,
    /// Line rate (ceiling), bits/s.
    pub line: f64,
    /// α.
    pub alpha: f64,
    /// Start of the current α period, ps.
    pub alpha_mark: u64,
    /// Start of the current rate-increase timer period, ps.
    pub timer_mark: u64,
    /// Timer stage.
    pub t_stage: u32,
    /// Byte-counter stage.
    pub b_stage: u32,
    /// Bytes sent since the last byte-counter event.
    pub bytes: u64,
    /// Earliest time the next packet may leave (pacing at R_C), ps.
    pub next_tx: u64,
    /// A CNP has been received (before, the rate stays at line rate).
    pub active: bool,
    /// Receiver (notification point): no CNP before this time, ps.
    pub cnp_next: u64,
}

impl DcqcnState {
    /// A queue pair starting at `line` bits/s at time `now`.
    pub fn new(line: Rate, p: &DcqcnParams, now: u64) -> DcqcnState {
        DcqcnState {
            rc: line.0 as f64,
            rt: line.0 as f64,
            line: line.0 as f64,
            alpha: p.initial_alpha,
            alpha_mark: now,
            timer_mark: now,
            ..DcqcnState::default()
        }
    }

    /// Applies the α decays whose periods ended by `now`.
    fn decay_alpha(&mut self, p: &DcqcnParams, now: u64) {
        let k = p.alpha_interval.0;
        let n = (now.saturating_sub(self.alpha_mark)) / k;
        if n > 0 {
            self.alpha *= (1.0 - p.g).powi(n.min(1 << 20) as i32);
            self.alpha_mark += n * k;
        }
    }

    /// A CNP arrived at `now`: cut the rate.
    pub fn on_cnp(&mut self, p: &DcqcnParams, now: u64) {
        self.decay_alpha(p, now);
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(p.min_rate.0 as f64);
        self.alpha = (1.0 - p.g) * self.alpha + p.g;
        self.alpha_mark = now;
        self.timer_mark = now;
        self.t_stage = 0;
        self.b_stage = 0;
        self.bytes = 0;
        self.active = true;
    }

    fn increase(&mut self, p: &DcqcnParams) {
        let f = p.fast_recovery_steps;
        let hi = self.t_stage.max(self.b_stage);
        let lo = self.t_stage.min(self.b_stage);
        if hi < f {
            // fast recovery: R_T unchanged
        } else if lo > f {
            self.rt += (lo - f) as f64 * p.rate_hai.0 as f64;
        } else {
            self.rt += p.rate_ai.0 as f64;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
    }

    /// A packet of `wire` bytes leaves at `now`: runs the timers and the byte
    /// counter, and returns the earliest time of the next packet (pacing).
    pub fn on_send(&mut self, p: &DcqcnParams, now: u64, wire: u64) -> u64 {
        if self.active {
            self.decay_alpha(p, now);
            let t = p.rate_increase_interval.0;
            let n = now.saturating_sub(self.timer_mark) / t;
            for _ in 0..n.min(64) {
                self.t_stage += 1;
                self.increase(p);
            }
            self.timer_mark += n * t;
            self.bytes += wire;
            while self.bytes >= p.byte_counter {
                self.bytes -= p.byte_counter;
                self.b_stage += 1;
                self.increase(p);
            }
            if self.rc >= self.line && self.rt >= self.line {
                self.active = false;
            }
        }
        let gap = (wire as f64 * 8e12 / self.rc).ceil() as u64;
        self.next_tx = self.next_tx.max(now) + gap;
        self.next_tx
    }
}

impl CcLaw for DcqcnState {
    type Params = DcqcnParams;

    fn new(p: &DcqcnParams, start: &QpStart) -> Self {
        DcqcnState::new(start.line, p, start.now)
    }

    #[inline]
    fn on_send(&mut self, p: &DcqcnParams, now: u64, wire: u64) {
        DcqcnState::on_send(self, p, now, wire);
    }

    #[inline]
    fn next_tx(&self) -> u64 {
        self.next_tx
    }

    #[inline]
    fn on_cnp(&mut self, p: &DcqcnParams, now: u64) -> bool {
        DcqcnState::on_cnp(self, p, now);
        true
    }

    /// At most one CNP per `cnp_interval` (N) per queue pair.
    #[inline]
    fn on_ce(&mut self, p: &DcqcnParams, now: u64) -> bool {
        if now >= self.cnp_next {
            self.cnp_next = now + p.cnp_interval.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    #[test]
    fn dcqcn_cut_then_fast_recovery_halves_the_gap() {
        let p = DcqcnParams::for_line_rate(Rate::gbps(400));
        let mut s = DcqcnState::new(Rate::gbps(400), &p, 0);
        s.on_cnp(&p, 0);
        // α₀ = 1: R_C = R_T / 2, α = 1 (g·1 + (1 − g)·1).
        assert!((s.rc - 200e9).abs() < 1.0 && (s.alpha - 1.0).abs() < 1e-12);
        // One timer period later: fast recovery stage 1, R_C = (400 + 200) / 2.
        s.on_send(&p, 55_000_000, 4096);
        assert!((s.rc - 300e9).abs() < 1.0, "{}", s.rc);
        assert_eq!(s.t_stage, 1);
        // α decayed once: (1 − 1/256).
        assert!((s.alpha - (1.0 - 1.0 / 256.0)).abs() < 1e-12);
    }
}
