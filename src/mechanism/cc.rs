//! Congestion-control parameters as a scenario states them: ECN marking
//! thresholds and the law a queue pair runs (with its constants). The laws
//! themselves (state and reactions) live in `backend::packet::cc`, one file
//! per law; this module holds only what `config` builds and validates, so
//! `config` needs no `backend` import.

use crate::units::{Rate, SimTime};

/// Whether `g` is a usable α gain, DCTCP's or DCQCN's: in (0, 1]. The one
/// statement of the rule that `config` and the packet backend both enforce.
pub fn gain_in_range(g: f64) -> bool {
    g > 0.0 && g <= 1.0
}

/// Whether `a` is a usable DCQCN α: in [0, 1].
pub fn alpha_in_range(a: f64) -> bool {
    (0.0..=1.0).contains(&a)
}

/// Whether `p` is a usable ECN marking probability just below Kmax: in (0, 1].
pub fn pmax_in_range(p: f64) -> bool {
    p > 0.0 && p <= 1.0
}

/// RED-style ECN marking thresholds, per egress queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ecn {
    /// Below or at this queue depth nothing is marked, bytes.
    pub kmin: u64,
    /// At or above this queue depth everything is marked, bytes (≥ `kmin`).
    pub kmax: u64,
    /// Marking probability just below `kmax`, in (0, 1].
    pub pmax: f64,
}

impl Ecn {
    /// Probability of marking a packet that joins a queue of `q` bytes.
    #[inline]
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q >= self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.kmin > self.kmax || !pmax_in_range(self.pmax) {
            return Err(format!(
                "need Kmin <= Kmax and 0 < Pmax <= 1; found Kmin {} Kmax {} Pmax {}",
                self.kmin, self.kmax, self.pmax
            ));
        }
        Ok(())
    }
}

/// DCQCN parameters (names as in Zhu et al. 2015).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnParams {
    /// α gain g. Default 1/256.
    pub g: f64,
    /// α decay period K without CNPs, picoseconds. Default 55 µs.
    pub alpha_interval: SimTime,
    /// Rate-increase timer T, picoseconds. Default 55 µs.
    pub rate_increase_interval: SimTime,
    /// Byte counter B: a rate-increase event every this many bytes sent. Default 10 MB.
    pub byte_counter: u64,
    /// Fast-recovery stages F. Default 5.
    pub fast_recovery_steps: u32,
    /// Additive increase step R_AI, bits/s. Default 80 Mb/s (HPCC run.py at 400 Gb/s).
    pub rate_ai: Rate,
    /// Hyper increase step R_HAI, bits/s. Default 800 Mb/s (HPCC run.py at 400 Gb/s).
    pub rate_hai: Rate,
    /// Lowest rate a cut can reach, bits/s. Default 1 Gb/s (HPCC run.py `MIN_RATE`).
    pub min_rate: Rate,
    /// At most one CNP per queue pair per this interval (N), picoseconds. Default 50 µs.
    pub cnp_interval: SimTime,
    /// α of a new queue pair. Default 1 (as the HPCC simulator's `rdma-hw.cc`).
    pub initial_alpha: f64,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_interval: SimTime::from_us(55),
            rate_increase_interval: SimTime::from_us(55),
            byte_counter: 10_000_000,
            fast_recovery_steps: 5,
            rate_ai: Rate(80_000_000),
            rate_hai: Rate(800_000_000),
            min_rate: Rate(1_000_000_000),
            cnp_interval: SimTime::from_us(50),
            initial_alpha: 1.0,
        }
    }
}

impl DcqcnParams {
    /// The defaults with R_AI and R_HAI scaled to `line` as HPCC's run.py does
    /// (5 and 50 Mb/s per 25 Gb/s of line rate).
    pub fn for_line_rate(line: Rate) -> DcqcnParams {
        DcqcnParams {
            rate_ai: Rate(line.0 / 5000),
            rate_hai: Rate(line.0 / 500),
            ..DcqcnParams::default()
        }
    }
}

/// Congestion control of the queue pairs.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum CongestionControl {
    /// None: the queue pair sends at line rate within its window.
    #[default]
    None,
    /// DCQCN rate control (RoCEv2), answering CNPs.
    Dcqcn(DcqcnParams),
    /// DCTCP window control, answering ECN echoes.
    Dctcp {
        /// α gain g. Default [`super::defaults::DCTCP_G`].
        g: f64,
    },
}

impl CongestionControl {
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        match *self {
            CongestionControl::None => Ok(()),
            CongestionControl::Dctcp { g } => {
                if gain_in_range(g) {
                    Ok(())
                } else {
                    Err(("cc.dctcp_g", format!("a gain in (0, 1], found {g}")))
                }
            }
            CongestionControl::Dcqcn(p) => {
                if !(gain_in_range(p.g) && alpha_in_range(p.initial_alpha)) {
                    return Err((
                        "cc.dcqcn_g",
                        format!(
                            "g in (0, 1] and α₀ in [0, 1]; found {} and {}",
                            p.g, p.initial_alpha
                        ),
                    ));
                }
                if p.alpha_interval.0 == 0
                    || p.rate_increase_interval.0 == 0
                    || p.byte_counter == 0
                    || p.min_rate.0 == 0
                {
                    return Err((
                        "cc.dcqcn",
                        "alpha interval, rate-increase timer, byte counter and min rate must be positive".into(),
                    ));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // config and the packet backend both call these: their edges are the rule
    #[test]
    fn gains_alphas_and_marking_probabilities_have_their_edges() {
        assert!(gain_in_range(1.0) && gain_in_range(1.0 / 256.0));
        assert!(!gain_in_range(0.0) && !gain_in_range(1.0 + 1e-12) && !gain_in_range(f64::NAN));
        assert!(alpha_in_range(0.0) && alpha_in_range(1.0));
        assert!(!alpha_in_range(-1e-12) && !alpha_in_range(f64::NAN));
        assert!(pmax_in_range(1.0) && !pmax_in_range(0.0) && !pmax_in_range(f64::NAN));
        assert!(CongestionControl::Dctcp { g: 0.0 }.check().is_err());
        assert!(CongestionControl::Dctcp { g: 1.0 }.check().is_ok());
    }
}
