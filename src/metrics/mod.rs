//! Counters and distributions gathered across the runs of a scenario.

use hdrhistogram::Histogram;

use crate::report::{CdfPoint, FlowStats, Percentiles};
use crate::units::SimTime;

/// Peak resident memory of this process so far, MiB (Linux `VmHWM`; 0 elsewhere).
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Accumulates flow completion times and slowdowns in HDR histograms (3 significant
/// digits), so a run with millions of flows keeps constant memory.
pub struct FlowAccumulator {
    fct_ps: Histogram<u64>,
    /// Slowdown × 1000, as an integer.
    slowdown_milli: Histogram<u64>,
    count: u64,
}

impl Default for FlowAccumulator {
    fn default() -> Self {
        FlowAccumulator::new()
    }
}

impl FlowAccumulator {
    /// An empty accumulator.
    pub fn new() -> FlowAccumulator {
        FlowAccumulator {
            // 1 ps .. 2^62 ps: every time validation accepts (a size takes at
            // most 2^60 ps, config::MAX_SIM_TIME), so FCTs are never clipped.
            fct_ps: Histogram::new_with_bounds(1, 1 << 62, 3).expect("static bounds are valid"),
            // slowdown ×1000: 0.001 .. 10^9.
            slowdown_milli: Histogram::new_with_bounds(1, 1_000_000_000_000, 3)
                .expect("static bounds are valid"),
            count: 0,
        }
    }

    /// Adds one flow's completion time and its ideal time on an idle path.
    pub fn add(&mut self, fct: SimTime, ideal: SimTime) {
        self.count += 1;
        self.fct_ps.saturating_record(fct.ps().max(1));
        let slow = if ideal.ps() > 0 {
            fct.ps() as f64 / ideal.ps() as f64
        } else {
            1.0
        };
        self.slowdown_milli
            .saturating_record((slow * 1000.0).round().max(1.0) as u64);
    }

    /// Adds every flow of a backend run.
    pub fn add_all(&mut self, fct: &[SimTime], ideal: &[SimTime]) {
        for (f, i) in fct.iter().zip(ideal) {
            self.add(*f, *i);
        }
    }

    /// The completion-time CDF at about 180 quantiles: dense up to p99, then
    /// logarithmically closer to 1 (p99.9, p99.99, …) so the tail is visible, and the max.
    pub fn cdf(&self) -> Vec<CdfPoint> {
        if self.count == 0 {
            return Vec::new();
        }
        let mut qs: Vec<f64> = (0..=120).map(|i| 0.99 * i as f64 / 120.0).collect();
        qs.extend((1..=60).map(|j| 1.0 - 0.01 * 10f64.powf(-3.0 * j as f64 / 60.0)));
        qs.push(1.0);
        let mut out: Vec<CdfPoint> = Vec::with_capacity(qs.len());
        for q in qs {
            let v = if q >= 1.0 {
                self.fct_ps.max()
            } else {
                self.fct_ps.value_at_quantile(q)
            };
            let p = CdfPoint {
                fct_us: v as f64 / 1e6,
                fraction: q,
            };
            match out.last_mut() {
                // one point per distinct time: the highest fraction reached at it
                Some(last) if last.fct_us == p.fct_us => last.fraction = p.fraction,
                _ => out.push(p),
            }
        }
        out
    }

    /// The summary for the report.
    pub fn stats(&self) -> FlowStats {
        if self.count == 0 {
            // an empty distribution: zeros, like `fct_us` (absent means unmodelled)
            return FlowStats {
                slowdown: Some(Percentiles::default()),
                ..FlowStats::default()
            };
        }
        let pct = |h: &Histogram<u64>, scale: f64| Percentiles {
            p50: h.value_at_quantile(0.50) as f64 / scale,
            p99: h.value_at_quantile(0.99) as f64 / scale,
            p999: h.value_at_quantile(0.999) as f64 / scale,
            max: h.max() as f64 / scale,
        };
        FlowStats {
            count: self.count,
            fct_us: pct(&self.fct_ps, 1e6),
            slowdown: Some(pct(&self.slowdown_milli, 1e3)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_cover_microseconds_to_seconds() {
        let mut a = FlowAccumulator::new();
        for i in 1..=1000u64 {
            a.add(SimTime::from_us(i), SimTime::from_us(1));
        }
        a.add(SimTime(2_000_000_000_000), SimTime::from_us(1)); // 2 s straggler
        let s = a.stats();
        assert_eq!(s.count, 1001);
        // 3 significant digits: values are exact to within 0.1% of their magnitude, and the
        // 50th percentile of 1001 samples is the 501st.
        assert!((s.fct_us.p50 - 501.0).abs() < 1.0, "{}", s.fct_us.p50);
        assert!((s.fct_us.p99 - 991.0).abs() < 2.0, "{}", s.fct_us.p99);
        assert!((s.fct_us.max - 2e6).abs() / 2e6 < 1e-3, "{}", s.fct_us.max);
        let slow = s.slowdown.expect("the accumulator always has slowdowns");
        assert!((slow.p50 - 501.0).abs() < 1.0, "{}", slow.p50);
    }
}
