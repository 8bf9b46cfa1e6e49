//! Congestion signals and control: ECN marking, DCQCN and DCTCP.
//!
//! **ECN** ([`Ecn`]): when a data packet joins an egress queue of a network
//! port whose queue already holds `q` bytes, it is marked Congestion
//! Experienced with probability 0 for `q ≤ Kmin`, `Pmax · (q − Kmin) / (Kmax −
//! Kmin)` between the two and 1 for `q ≥ Kmax` (RED as configured for DCQCN:
//! Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM
//! 2015, §3.1; Kmin = Kmax = K gives DCTCP's step marking).
//!
//! **DCQCN** ([`CongestionControl::Dcqcn`], Zhu et al. 2015, Fig. 4–6). The
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
//! **DCTCP** ([`CongestionControl::Dctcp`], Alizadeh et al., SIGCOMM 2010,
//! §3.1): window-based. The receiver echoes on every ACK how many of the
//! packets it covers arrived marked; the sender keeps F = marked / acked over
//! each window of data (one round trip), updates α ← (1 − g) α + g F at the
//! window's end (g = 1/16), and cuts cwnd ← cwnd (1 − α/2) at most once per
//! window, when marks arrive. Without marks the window grows by one packet per
//! round trip (slow start, from 10 packets as RFC 6928, until the first mark);
//! it never exceeds [`super::PacketConfig::window_bytes`]. A timeout halves it.

pub use crate::mechanism::cc::{CongestionControl, DcqcnParams, Ecn};
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

/// DCTCP sender state of one queue pair (window in packets).
#[derive(Clone, Copy, Debug, Default)]
pub struct DctcpState {
    /// Congestion window, packets.
    pub cwnd: f64,
    /// Slow-start threshold, packets.
    pub ssthresh: f64,
    /// α.
    pub alpha: f64,
    /// PSN that ends the current observation window.
    pub win_end: u32,
    /// Packets acknowledged in this window.
    pub acked: u32,
    /// Of those, packets that arrived marked.
    pub marked: u32,
    /// The window was already cut in this observation window.
    pub cut: bool,
}

impl DctcpState {
    /// A new sender capped at `max_pkts`.
    pub fn new(max_pkts: u32) -> DctcpState {
        DctcpState {
            cwnd: 10f64.min(max_pkts as f64),
            ssthresh: max_pkts as f64,
            alpha: 1.0,
            ..DctcpState::default()
        }
    }

    /// `n` packets newly acknowledged, `m` of them marked; `una` is the new
    /// oldest unacknowledged PSN and `nxt` the next to send. Returns the window in
    /// whole packets.
    pub fn on_ack(&mut self, g: f64, n: u32, m: u32, una: u32, nxt: u32, max_pkts: u32) -> u32 {
        self.acked += n;
        self.marked += m.min(n.max(m));
        if m > 0 {
            if !self.cut {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(1.0);
                self.ssthresh = self.cwnd;
                self.cut = true;
            }
        } else if self.cwnd < self.ssthresh {
            self.cwnd += n as f64;
        } else if n > 0 {
            self.cwnd += n as f64 / self.cwnd;
        }
        self.cwnd = self.cwnd.min(max_pkts as f64);
        if una >= self.win_end {
            if self.acked > 0 {
                let f = (self.marked as f64 / self.acked as f64).min(1.0);
                self.alpha = (1.0 - g) * self.alpha + g * f;
            }
            self.acked = 0;
            self.marked = 0;
            self.cut = false;
            self.win_end = nxt.max(una + 1);
        }
        self.window()
    }

    /// A retransmission timeout: halve the window.
    pub fn on_timeout(&mut self) -> u32 {
        self.cwnd = (self.cwnd / 2.0).max(1.0);
        self.ssthresh = self.cwnd;
        self.window()
    }

    /// The window in whole packets, rounded to nearest (at least 1): truncating
    /// would lose up to a packet per flow, which under a 16-flow fan-in at
    /// 400 Gb/s is a third of the bandwidth-delay product.
    pub fn window(&self) -> u32 {
        (self.cwnd.round() as u32).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn red_marking_is_linear_between_kmin_and_kmax() {
        let e = Ecn {
            kmin: 100,
            kmax: 300,
            pmax: 0.2,
        };
        assert_eq!(e.probability(100), 0.0);
        assert!((e.probability(200) - 0.1).abs() < 1e-12);
        assert_eq!(e.probability(300), 1.0);
        let step = Ecn {
            kmin: 100,
            kmax: 100,
            pmax: 1.0,
        };
        assert_eq!(step.probability(100), 0.0);
        assert_eq!(step.probability(101), 1.0);
    }

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

    #[test]
    fn dctcp_cuts_by_half_alpha_once_per_window() {
        let mut d = DctcpState::new(100);
        d.alpha = 0.5;
        d.cwnd = 40.0;
        d.ssthresh = 40.0;
        d.win_end = 40;
        d.on_ack(1.0 / 16.0, 4, 4, 4, 40, 100);
        assert!((d.cwnd - 30.0).abs() < 1e-9);
        d.on_ack(1.0 / 16.0, 4, 4, 8, 40, 100);
        assert!((d.cwnd - 30.0).abs() < 1e-9, "one cut per window");
    }
}
