//! **DCQCN** ([`CongestionControl::Dcqcn`](crate::mechanism::CongestionControl::Dcqcn))
//! as a ConnectX NIC runs it: Zhu et al., "Congestion Control for Large-Scale
//! RDMA Deployments", SIGCOMM 2015 (§3, Fig. 5–6), with the timers and knobs
//! NVIDIA documents for ConnectX-4 and later ("DCQCN CC Parameters") and the
//! HPCC simulator implements (alibaba-edu/High-Precision-Congestion-Control,
//! ns-3 `rdma-hw.cc`, the `*Mlx` functions). Parameter sets and their sources:
//! [`DcqcnProfile`](crate::mechanism::DcqcnProfile).
//!
//! **Notification point** (receiver): a CE-marked packet makes a CNP, at most
//! one per queue pair per `cnp_interval` (N).
//!
//! **Reaction point** (sender), all timers real events ([`CcLaw::on_timer`]):
//!
//! * A queue pair sends at line rate, unlimited, until its **first CNP**: then
//!   α = `initial_alpha` (not decayed from the pair's creation: the NIC has no
//!   rate-limiter context before a CNP), and the rate limiter starts.
//! * **Cut**: R_T ← R_C (always with `clamp_tgt_rate`, else only when a rate
//!   increase happened since the previous cut), R_C ← max(R_C (1 − α/2),
//!   `min_dec_fac` · R_C, `min_rate`); both increase counters and the timer
//!   restart. At most one cut per `rate_decrease_interval`: a CNP inside the
//!   period is remembered and cuts once when the period ends.
//! * **α timer**, every K (`alpha_interval`): α ← (1 − g) α + g if a CNP came
//!   during the period, (1 − g) α otherwise.
//! * **Rate-increase events**, from the timer (every T) and the byte counter
//!   (every B bytes sent), each counting its own stage: the first F events of
//!   each counter are **fast recovery** (R_T unchanged) while both counters
//!   are within F, then **additive increase** (R_T += R_AI) once either passed
//!   F, **hyper increase** (R_T += R_HAI per event) once both did: a fixed
//!   step as the ConnectX models run it (the HPCC simulator's
//!   `HyperIncreaseMlx`, Google Isekai's `IncreaseRate`), not QCN's growing
//!   i · R_HAI; each followed by R_C ← (R_T + R_C) / 2. So F = 5 recovers 20 → 30 →
//!   35 → 37.5 → 38.75 → 39.375 Gb/s of 40 in five timer events (the unit
//!   test below, the paper's Fig. 6 walk).
//! * When R_T reached the line rate and R_C is within 1 Mb/s of it (below the
//!   resolution of the NIC's rate limiter), the limiter is released: timers
//!   stop and the next CNP is a first CNP again.

use super::{CcLaw, DcqcnParams, QpStart};
use crate::units::Rate;

/// "No timer pending".
const NEVER: u64 = u64::MAX;

/// Rate-limiter resolution: R_C this close to the line rate releases the limiter, bits/s.
const RELEASE_BPS: f64 = 1e6;

/// DCQCN state of one queue pair: the reaction point at the sender and the
/// notification point at the receiver.
#[derive(Clone, Copy, Debug)]
pub struct DcqcnState {
    /// Current rate R_C, bits/s.
    pub rc: f64,
    /// Target rate R_T, bits/s.
    pub rt: f64,
    /// Line rate (ceiling), bits/s.
    pub line: f64,
    /// α, in [0, 1].
    pub alpha: f64,
    /// The rate limiter runs (a CNP came and the rate has not recovered).
    pub active: bool,
    /// A CNP arrived during the current α period.
    pub cnp_in_alpha_period: bool,
    /// A CNP arrived inside the current rate-decrease period: cut at its end.
    pub cut_pending: bool,
    /// Timer stage: rate-increase timer events since the last cut.
    pub t_stage: u32,
    /// Byte-counter stage: byte-counter events since the last cut.
    pub b_stage: u32,
    /// Bytes sent since the last byte-counter event.
    pub bytes: u64,
    /// Next α update, ps (NEVER when inactive).
    pub alpha_due: u64,
    /// Next rate-increase timer event, ps (NEVER when inactive).
    pub increase_due: u64,
    /// End of the current rate-decrease period, ps (0: no cut yet).
    pub decrease_until: u64,
    /// Receiver (notification point): no CNP before this time, ps.
    pub cnp_next: u64,
}

impl DcqcnState {
    /// A queue pair on a NIC of `line` bits/s, sending at line rate.
    pub fn new(line: Rate) -> DcqcnState {
        DcqcnState {
            rc: line.0 as f64,
            rt: line.0 as f64,
            line: line.0 as f64,
            alpha: 0.0,
            active: false,
            cnp_in_alpha_period: false,
            cut_pending: false,
            t_stage: 0,
            b_stage: 0,
            bytes: 0,
            alpha_due: NEVER,
            increase_due: NEVER,
            decrease_until: 0,
            cnp_next: 0,
        }
    }

    /// A CNP arrived at `now`; true if the rate was cut now (else the cut,
    /// if any, waits for the end of the rate-decrease period).
    pub fn on_cnp(&mut self, p: &DcqcnParams, now: u64) -> bool {
        if !self.active {
            // First CNP: the rate limiter starts with α = α₀.
            self.active = true;
            self.alpha = p.initial_alpha;
            self.cnp_in_alpha_period = false;
            self.alpha_due = now + p.alpha_interval.0;
        } else {
            self.cnp_in_alpha_period = true;
        }
        if now >= self.decrease_until {
            self.cut(p, now);
            true
        } else {
            self.cut_pending = true;
            false
        }
    }

    /// Multiplicative decrease at `now`.
    fn cut(&mut self, p: &DcqcnParams, now: u64) {
        if p.clamp_tgt_rate || self.t_stage > 0 || self.b_stage > 0 {
            self.rt = self.rc;
        }
        let floor = (self.rc * p.min_dec_fac).max(p.min_rate.0 as f64);
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(floor).min(self.rc);
        self.t_stage = 0;
        self.b_stage = 0;
        self.bytes = 0;
        self.cut_pending = false;
        self.decrease_until = now + p.rate_decrease_interval.0;
        self.increase_due = now + p.rate_increase_interval.0;
    }

    /// One rate-increase event; `timer` says which counter it came from.
    fn increase(&mut self, p: &DcqcnParams, timer: bool) {
        if timer {
            self.t_stage += 1;
        } else {
            self.b_stage += 1;
        }
        let f = p.fast_recovery_steps;
        let hi = self.t_stage.max(self.b_stage);
        let lo = self.t_stage.min(self.b_stage);
        if hi <= f {
            // fast recovery: R_T unchanged
        } else if lo > f {
            self.rt += p.rate_hai.0 as f64;
        } else {
            self.rt += p.rate_ai.0 as f64;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        if self.rt >= self.line && self.line - self.rc < RELEASE_BPS {
            self.release();
        }
    }

    /// The rate recovered: the limiter lets go, its timers stop.
    fn release(&mut self) {
        *self = DcqcnState {
            cnp_next: self.cnp_next,
            ..DcqcnState::new(Rate(self.line as u64))
        };
    }

    /// The timers due at `now` fire (α update, rate increase, deferred cut);
    /// true if the rate was cut.
    pub fn on_timer(&mut self, p: &DcqcnParams, now: u64) -> bool {
        if !self.active {
            return false;
        }
        if self.alpha_due <= now {
            let hit = if self.cnp_in_alpha_period { p.g } else { 0.0 };
            self.alpha = (1.0 - p.g) * self.alpha + hit;
            self.cnp_in_alpha_period = false;
            self.alpha_due = now + p.alpha_interval.0;
        }
        let cut = self.cut_pending && self.decrease_until <= now;
        if cut {
            self.cut(p, now);
        }
        if self.increase_due <= now {
            self.increase_due = now + p.rate_increase_interval.0;
            self.increase(p, true);
        }
        cut
    }

    /// Earliest pending timer, ps ([`u64::MAX`] when none).
    pub fn next_timer(&self) -> u64 {
        if !self.active {
            return NEVER;
        }
        let dec = if self.cut_pending {
            self.decrease_until
        } else {
            NEVER
        };
        self.alpha_due.min(self.increase_due).min(dec)
    }

    /// A packet of `wire` bytes leaves: runs the byte counter.
    pub fn on_send(&mut self, p: &DcqcnParams, wire: u64) {
        if self.active {
            self.bytes += wire;
            while self.active && self.bytes >= p.byte_counter {
                self.bytes -= p.byte_counter;
                self.increase(p, false);
            }
        }
    }

    /// Pacing at R_C: a packet of `wire` bytes every `wire · 8 / R_C`, ps.
    pub fn gap(&self, wire: u64) -> u64 {
        (wire as f64 * 8e12 / self.rc).ceil() as u64
    }
}

impl CcLaw for DcqcnState {
    type Params = DcqcnParams;

    fn new(_p: &DcqcnParams, start: &QpStart) -> Self {
        DcqcnState::new(start.line)
    }

    #[inline]
    fn on_send(&mut self, p: &DcqcnParams, _now: u64, wire: u64) {
        DcqcnState::on_send(self, p, wire);
    }

    #[inline]
    fn pace_gap(&self, _p: &DcqcnParams, wire: u64) -> u64 {
        self.gap(wire)
    }

    #[inline]
    fn on_cnp(&mut self, p: &DcqcnParams, now: u64) -> bool {
        DcqcnState::on_cnp(self, p, now)
    }

    #[inline]
    fn on_timer(&mut self, p: &DcqcnParams, now: u64) -> bool {
        DcqcnState::on_timer(self, p, now)
    }

    #[inline]
    fn next_timer(&self) -> u64 {
        DcqcnState::next_timer(self)
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
    use crate::mechanism::DcqcnProfile;
    use crate::units::{Rate, SimTime};

    /// Runs every timer due up to `until`, in time order.
    fn run_timers(s: &mut DcqcnState, p: &DcqcnParams, until: u64) {
        while s.next_timer() <= until {
            let t = s.next_timer();
            s.on_timer(p, t);
        }
    }

    // The paper's worked steps (Zhu et al. 2015, Fig. 6 with F = 5, at 40 Gb/s):
    // a first CNP halves R_C from line rate (α₀ = 1); each timer event without
    // a CNP halves the gap to R_T = 40: 30, 35, 37.5, 38.75, 39.375 Gb/s after
    // five events (exactly F fast-recovery steps), and the sixth is additive.
    #[test]
    fn first_cnp_halves_then_five_timer_events_recover_to_39_375_of_40() {
        let line = Rate::gbps(40);
        let p = DcqcnParams::paper(line);
        let mut s = DcqcnState::new(line);
        assert_eq!(s.next_timer(), u64::MAX, "no timer before the first CNP");
        assert!(s.on_cnp(&p, 0));
        assert!((s.rc - 20e9).abs() < 1.0 && (s.rt - 40e9).abs() < 1.0);
        let t = p.rate_increase_interval.0;
        let want = [30e9, 35e9, 37.5e9, 38.75e9, 39.375e9];
        for (i, w) in want.iter().enumerate() {
            run_timers(&mut s, &p, (i as u64 + 1) * t);
            assert_eq!(s.t_stage, i as u32 + 1);
            assert!((s.rc - w).abs() < 1.0, "step {}: {} not {w}", i + 1, s.rc);
            assert!((s.rt - 40e9).abs() < 1.0, "fast recovery keeps R_T");
        }
        // α was set to 1 on the CNP and decayed once per K = 55 µs since.
        let k = (5 * t) / p.alpha_interval.0;
        let want_alpha = (1.0 - p.g).powi(k as i32);
        assert!((s.alpha - want_alpha).abs() < 1e-12, "{}", s.alpha);
        // Sixth event: additive increase (R_T is at line rate: it stays there).
        run_timers(&mut s, &p, 6 * t);
        assert!((s.rc - 39.6875e9).abs() < 1.0, "{}", s.rc);
    }

    #[test]
    fn alpha_starts_on_the_first_cnp_not_at_queue_pair_creation() {
        let line = Rate::gbps(400);
        let p = DcqcnParams::paper(line);
        let mut s = DcqcnState::new(line);
        // A pair created at 0 that sees its first CNP a second later still
        // cuts by α₀ / 2 = half.
        s.on_cnp(&p, 1_000_000_000_000);
        assert!((s.rc - 200e9).abs() < 1.0);
    }

    #[test]
    fn one_cut_per_rate_decrease_period_and_clamp_and_min_dec_fac() {
        let line = Rate::gbps(400);
        let mut p = DcqcnParams::mellanox(line);
        p.initial_alpha = 1.0;
        let mut s = DcqcnState::new(line);
        assert!(s.on_cnp(&p, 0));
        assert!((s.rc - 200e9).abs() < 1.0);
        // A CNP 1 µs later, inside the 4 µs period: no cut yet...
        assert!(!s.on_cnp(&p, 1_000_000));
        assert!((s.rc - 200e9).abs() < 1.0 && s.cut_pending);
        // ...one cut when the period ends.
        run_timers(&mut s, &p, p.rate_decrease_interval.0);
        assert!(!s.cut_pending && s.rc < 200e9);
        // clamp_tgt_rate = 0 and no increase between the cuts: R_T stays at
        // the rate before the congestion.
        assert!((s.rt - 400e9).abs() < 1.0);
        // min_dec_fac bounds a single cut: α = 1 would halve, 0.8 keeps 80 %.
        let mut q = p;
        q.min_dec_fac = 0.8;
        let mut s = DcqcnState::new(line);
        s.on_cnp(&q, 0);
        assert!((s.rc - 320e9).abs() < 1.0);
        // clamp_tgt_rate = 1: every cut sets R_T = R_C.
        q.clamp_tgt_rate = true;
        q.min_dec_fac = 0.0;
        let mut s = DcqcnState::new(line);
        s.on_cnp(&q, 0);
        s.on_cnp(&q, SimTime::from_us(10).0);
        assert!((s.rt - 200e9).abs() < 1.0, "{}", s.rt);
    }

    #[test]
    fn byte_counter_and_timer_reach_additive_then_hyper_increase() {
        let line = Rate::gbps(40);
        let mut p = DcqcnParams::profile(DcqcnProfile::Paper, line);
        p.clamp_tgt_rate = true;
        let mut s = DcqcnState::new(line);
        s.on_cnp(&p, 0);
        // A second cut (after the 50 µs decrease period) clamps R_T = R_C = 20.
        assert!(s.on_cnp(&p, SimTime::from_us(50).0));
        assert!((s.rt - 20e9).abs() < 1.0);
        // Timer stage F + 1 alone: additive.
        for _ in 0..=p.fast_recovery_steps {
            let t = s.increase_due;
            s.on_timer(&p, t);
        }
        assert!((s.rt - (20e9 + p.rate_ai.0 as f64)).abs() < 1.0, "{}", s.rt);
        // Byte counter past F too: hyper increase by R_HAI (one step per event).
        let before = s.rt;
        for _ in 0..=p.fast_recovery_steps {
            s.on_send(&p, p.byte_counter);
        }
        assert!(
            (s.rt - (before + 5.0 * p.rate_ai.0 as f64 + p.rate_hai.0 as f64)).abs() < 1.0,
            "{} {}",
            s.rt,
            before
        );
        // A second hyper event adds R_HAI again, not 2 R_HAI (the HPCC
        // simulator's `HyperIncreaseMlx`: m_targetRate += m_rhai per event).
        let before = s.rt;
        s.on_send(&p, p.byte_counter);
        assert!(
            (s.rt - (before + p.rate_hai.0 as f64)).abs() < 1.0,
            "{}",
            s.rt
        );
    }

    #[test]
    fn a_recovered_pair_releases_its_limiter_and_stops_its_timers() {
        let line = Rate::gbps(40);
        let p = DcqcnParams::mellanox(line);
        let mut s = DcqcnState::new(line);
        s.on_cnp(&p, 0);
        run_timers(&mut s, &p, 1_000_000_000_000);
        assert!(!s.active && s.next_timer() == u64::MAX && s.rc == 40e9);
    }
}
