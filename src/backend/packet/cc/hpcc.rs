//! **HPCC** ([`CongestionControl::Hpcc`](crate::mechanism::CongestionControl::Hpcc);
//! Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019,
//! Algorithm 1): window and rate control driven by the utilization of the
//! most loaded link on the path, which the switches report in band.
//!
//! **In-band telemetry, PINT-style.** A packet record is 32 bytes, so it
//! cannot carry one INT record per hop. As PINT does for HPCC (Ben Basat et
//! al., "PINT: Probabilistic In-band Network Telemetry", SIGCOMM 2020, §HPCC
//! use case), a data packet carries one value, the largest utilization over
//! the hops it crossed, in its `hash` field (informational: ECMP hashes the
//! queue pair's own hash, not this field). Every egress port (switch ports and
//! the sender's NIC uplink alike: a link is a link) keeps
//! `U = qlen / (B · T) + txRate / B`, the txRate part an EWMA over `T` of the
//! bytes it sends (HPCC Algorithm 1's `MeasureInflight`, computed at the port
//! from its own successive departures instead of at the sender from two INT
//! records), and raises the packet's value to its own: [`int_update`] and
//! [`int_stamp`]. The value is fixed point, [`U_ONE`] = 1.0.
//!
//! **The sender** (Algorithm 1, `NewAck` / `ComputeWind`): with `U` the echo
//! of an ACK, if `U ≥ η` or `incStage ≥ maxStage`,
//! `W = Wc / (U / η) + W_AI`, else `W = Wc + W_AI`; the reference window `Wc`
//! takes `W` (and `incStage` resets or counts up) only once per round trip,
//! when the acknowledged sequence passes `lastUpdateSeq` (then set to the next
//! PSN to send). Every other ACK recomputes `W` from the same `Wc` (HPCC's
//! fast reaction). The sender keeps at most `W` bytes in flight and paces at
//! `R = W / T`; `W` starts at, and never exceeds, `B · T` (line rate).

use super::{AckInfo, AckReaction, CcLaw, QpStart};
use crate::mechanism::defaults::HPCC_AI_SHARE;
use crate::mechanism::HpccParams;

/// Fixed-point 1.0 of the utilization a data packet carries (16 fractional
/// bits: a resolution of 1.5·10⁻⁵, values up to 65 536).
pub const U_ONE: f64 = 65_536.0;

/// The smallest window as a share of `B · T`: the HPCC simulator's minimum
/// rate, 100 Mb/s, is 1/1000 of a 100 Gb/s line.
const MIN_SHARE: f64 = 1e-3;

/// One egress port's utilization estimate: `u` (a fraction, EWMA) as of
/// `last` (ps).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntPort {
    /// Utilization `qlen / (B · T) + txRate / B`, EWMA over `T`.
    pub u: f64,
    /// Last departure the estimate includes, ps.
    pub last: u64,
    /// Queue the previous departure left behind, bytes.
    pub qlen: u64,
}

/// The port sends a packet of `wire` bytes at `now` (ps), leaving `qlen`
/// bytes queued behind it; `bt` is the port's `B · T` in bytes and `t` the
/// base RTT T in ps. HPCC Algorithm 1 weighs each sample by `τ / T` (τ the
/// time since the previous one, at most T); the rate sample `bytes / τ`
/// times that weight is `bytes / T`, so no division by τ is needed. The
/// queue term is the smaller of two successive samples, as Algorithm 1's
/// `min(ack.L[i].qlen, L[i].qlen)`: a queue one packet's collision leaves for
/// one departure is no standing queue.
#[inline]
pub fn int_update(s: &mut IntPort, now: u64, wire: u64, qlen: u64, bt: f64, t: u64) {
    let tau = now.saturating_sub(s.last).min(t);
    s.last = now;
    let q = qlen.min(s.qlen);
    s.qlen = qlen;
    let w = tau as f64 / t.max(1) as f64;
    s.u = (1.0 - w) * s.u + w * q as f64 / bt + wire as f64 / bt;
}

/// The value a data packet carries after a port whose utilization is `u`:
/// the larger of what it carried (`carried`, fixed point) and `u`.
#[inline]
pub fn int_stamp(carried: u32, u: f64) -> u32 {
    carried.max((u * U_ONE).min(u32::MAX as f64) as u32)
}

/// HPCC state of one queue pair: the sender's windows and pacing, the
/// receiver's newest utilization to echo.
#[derive(Clone, Copy, Debug, Default)]
pub struct HpccState {
    /// Window, bytes.
    pub w: f64,
    /// Reference window Wc, bytes (updated once per round trip).
    pub wc: f64,
    /// Largest window, `B · T`, bytes.
    pub w_max: f64,
    /// Additive increase W_AI, bytes.
    pub w_ai: f64,
    /// Base RTT T, ps.
    pub t: u64,
    /// A full data packet on the wire, bytes: the window's unit at the NIC.
    pub wire: f64,
    /// Additive steps since the last multiplicative one (incStage).
    pub inc_stage: u32,
    /// The next reference update waits for an ACK beyond this PSN.
    pub last_update_seq: u32,
    /// Receiver: utilization (fixed point, [`U_ONE`]) of the newest data packet.
    pub echo: u32,
    /// Last utilization the sender read, a fraction.
    pub last_u: f64,
    /// Multiplicative updates made.
    pub cuts: u32,
}

impl HpccState {
    /// The state for a sender of `line` bytes per ps times `t` ps (`B · T`).
    pub fn with(p: &HpccParams, w_max: f64, t: u64) -> HpccState {
        let w_max = w_max.max(1.0);
        HpccState {
            w: w_max,
            wc: w_max,
            w_max,
            w_ai: p.w_ai.map_or(w_max * HPCC_AI_SHARE, |w| w as f64),
            t: t.max(1),
            wire: p.packet_wire.max(1) as f64,
            ..HpccState::default()
        }
    }

    /// HPCC Algorithm 1 `ComputeWind(U, updateWc)` for a utilization `u` (a
    /// fraction); true if it took the multiplicative form.
    pub fn compute_wind(&mut self, p: &HpccParams, u: f64, update_wc: bool) -> bool {
        let multiplicative = u >= p.eta || self.inc_stage >= p.max_stage;
        let w = if multiplicative {
            // u > 0 here unless max_stage forced it: u = 0 is an idle path
            self.wc / (u.max(1e-9) / p.eta) + self.w_ai
        } else {
            self.wc + self.w_ai
        };
        self.w = w.clamp(self.w_max * MIN_SHARE, self.w_max);
        if update_wc {
            if multiplicative {
                self.inc_stage = 0;
            } else {
                self.inc_stage += 1;
            }
            self.wc = self.w;
        }
        multiplicative
    }

    /// The window the NIC enforces, whole packets: `W` rounded up (the pacing
    /// at `W / T` holds the rate; at least one packet).
    fn window_pkts(&self, max_pkts: u32) -> u32 {
        ((self.w / self.wire).ceil() as u32).clamp(1, max_pkts.max(1))
    }
}

impl CcLaw for HpccState {
    type Params = HpccParams;
    /// Every data packet's telemetry comes back (the HPCC simulator's
    /// `l2_ack_interval` 1).
    const ACK_EVERY: Option<u32> = Some(1);

    fn new(p: &HpccParams, start: &QpStart) -> Self {
        let t = p.base_rtt.map_or(start.base_rtt, |t| t.0).max(1);
        let bt = start.line.bps() as f64 * t as f64 / 8e12;
        HpccState::with(p, bt, t)
    }

    /// Paced at `R = W / T` below the full window: one packet of `wire`
    /// bytes every `wire · T / W` ps.
    #[inline]
    fn pace_gap(&self, _p: &HpccParams, wire: u64) -> u64 {
        if self.w >= self.w_max {
            0
        } else {
            (wire as f64 * self.t as f64 / self.w) as u64
        }
    }

    #[inline]
    fn on_ack(&mut self, p: &HpccParams, ack: &AckInfo) -> AckReaction {
        // a selective or trimmed NACK carries a PSN, not telemetry
        let cut = match ack.echo {
            Some(v) => {
                let u = v as f64 / U_ONE;
                self.last_u = u;
                let update = ack.una > self.last_update_seq;
                if update {
                    self.last_update_seq = ack.nxt;
                }
                // a cut: a reference update that shrinks (U above η)
                let cut = self.compute_wind(p, u, update) && u > p.eta && update;
                self.cuts += u32::from(cut);
                cut
            }
            None => false,
        };
        AckReaction {
            window: Some(self.window_pkts(ack.max_pkts)),
            window_cut: cut,
        }
    }

    #[inline]
    fn on_timeout(&mut self, _p: &HpccParams) -> Option<u32> {
        // nothing came back for a timeout: the path is at least full, start
        // over from half the reference window
        self.wc = (self.wc / 2.0).max(self.w_max * MIN_SHARE);
        self.w = self.wc;
        self.inc_stage = 0;
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
    fn stamp(&self, _now: u64) -> Option<u32> {
        // the sender's own value is 0: the ports on the path raise it
        Some(0)
    }

    #[inline]
    fn window(&self) -> Option<u32> {
        Some(self.window_pkts(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> HpccParams {
        HpccParams::new(1000)
    }

    /// `B · T` of 100 Gb/s and 10 µs: 125 kB.
    const BT: f64 = 125_000.0;

    #[test]
    fn utilization_twice_eta_halves_the_window_against_the_reference() {
        // Algorithm 1: U ≥ η → W = Wc / (U/η) + W_AI; U = 2η gives Wc/2 + W_AI
        let p = params();
        let mut s = HpccState::with(&p, BT, 10_000_000);
        s.wc = 100_000.0;
        assert!(s.compute_wind(&p, 2.0 * p.eta, true));
        assert!((s.w - (50_000.0 + s.w_ai)).abs() < 1e-6, "{}", s.w);
        assert_eq!((s.wc, s.inc_stage), (s.w, 0));
    }

    #[test]
    fn below_eta_max_stage_additive_steps_then_a_multiplicative_one() {
        // §3.3: incStage counts additive updates; at maxStage (5) the next
        // update is multiplicative even below η, which grows the window by
        // η / U at once (fast convergence to free bandwidth)
        let p = params();
        let mut s = HpccState::with(&p, BT, 10_000_000);
        s.wc = 10_000.0;
        let ai = s.w_ai;
        assert!((ai - BT / 2500.0).abs() < 1e-9, "W_AI = B·T/2500: {ai}");
        for k in 1..=5 {
            assert!(!s.compute_wind(&p, 0.5, true));
            assert!((s.wc - (10_000.0 + k as f64 * ai)).abs() < 1e-6);
            assert_eq!(s.inc_stage, k);
        }
        let wc = s.wc;
        assert!(s.compute_wind(&p, 0.5, true));
        assert!((s.w - (wc * p.eta / 0.5 + ai)).abs() < 1e-6, "{}", s.w);
        assert_eq!(s.inc_stage, 0);
    }

    #[test]
    fn the_reference_window_moves_once_per_round_trip_only() {
        // NewAck: Wc is updated only when the ACK passes lastUpdateSeq; the
        // ACKs in between recompute W from the same Wc
        let p = params();
        let mut s = HpccState::with(&p, BT, 10_000_000);
        let ack = |una, nxt, u: f64| AckInfo {
            now: 0,
            newly_acked: 1,
            ce: 0,
            echo: Some((u * U_ONE) as u32),
            una,
            nxt,
            nack: false,
            max_pkts: 10_000,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: false,
        };
        // U = 2η arrives in 16-bit fixed point (1.9 · 65536 truncated): the
        // window is exact to the resolution, 1.5·10⁻⁵ relative, here 1 byte
        let r = CcLaw::on_ack(&mut s, &p, &ack(1, 100, 1.9));
        assert!(r.window_cut);
        let wc = s.wc;
        assert!((wc - (BT / 2.0 + s.w_ai)).abs() < 1.0, "{wc}");
        // ACKs up to PSN 100 leave Wc alone, even at a higher utilization
        for una in 2..=100 {
            let r = CcLaw::on_ack(&mut s, &p, &ack(una, 150, 3.8));
            assert!(!r.window_cut);
            assert_eq!(s.wc, wc);
        }
        assert!((s.w - (wc / 4.0 + s.w_ai)).abs() < 1.0, "{}", s.w);
        // the first beyond it updates
        CcLaw::on_ack(&mut s, &p, &ack(101, 200, 3.8));
        assert!((s.wc - (wc / 4.0 + s.w_ai)).abs() < 1.0, "{}", s.wc);
    }

    #[test]
    fn the_sender_paces_at_w_over_t_and_sends_at_line_rate_when_w_is_full() {
        let p = params();
        let mut s = HpccState::with(&p, BT, 10_000_000);
        assert_eq!(s.pace_gap(&p, 1000), 0, "W = B·T: line rate, unpaced");
        s.w = BT / 4.0;
        // 1000 B at 25 Gb/s: 320 ns
        assert_eq!(s.pace_gap(&p, 1000), 320_000);
    }

    #[test]
    fn a_port_at_line_rate_with_no_queue_reads_one_and_its_queue_adds_in_bdps() {
        // back-to-back 1000 B packets on 100 Gb/s (80 ns apart), T = 10 µs:
        // txRate/B → 1; a standing queue of one B·T adds 1
        let (t, wire) = (10_000_000u64, 1000u64);
        let mut s = IntPort::default();
        let mut now = 0;
        for _ in 0..2_000 {
            now += 80_000;
            int_update(&mut s, now, wire, 0, BT, t);
        }
        assert!((s.u - 1.0).abs() < 0.01, "{}", s.u);
        for _ in 0..2_000 {
            now += 80_000;
            int_update(&mut s, now, wire, BT as u64, BT, t);
        }
        assert!((s.u - 2.0).abs() < 0.01, "{}", s.u);
        // the maximum over hops
        assert_eq!(int_stamp(int_stamp(0, 0.5), 0.25), (0.5 * U_ONE) as u32);
        assert_eq!(int_stamp(7, 1e12), u32::MAX);
    }

    #[test]
    fn an_ack_without_telemetry_leaves_the_window() {
        let p = params();
        let mut s = HpccState::with(&p, BT, 10_000_000);
        let r = CcLaw::on_ack(
            &mut s,
            &p,
            &AckInfo {
                now: 0,
                newly_acked: 1,
                ce: 0,
                echo: None,
                una: 5,
                nxt: 9,
                nack: true,
                max_pkts: 1000,
                dupack: false,
                loss: false,
                in_recovery: false,
                sack: false,
            },
        );
        assert!(!r.window_cut);
        assert_eq!((s.w, s.wc), (BT, BT));
    }
}
