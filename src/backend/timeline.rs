//! The link timeline both the flow and the packet backends fill when asked
//! ([`super::Observers::link_timeline`]): bytes per link per time bucket, in a
//! fixed number of buckets whose width doubles as the run grows, so memory is
//! bounded by links × buckets whatever the run's length.

use super::LinkTimeline;
use crate::units::SimTime;

/// Buckets per link of the link timeline (their width doubles as the run grows).
pub const TIMELINE_BUCKETS: usize = 128;

/// Per-link bytes per time bucket, stored bucket-major: `cols[b][link]` is what
/// `link` carried during `[b·width, (b+1)·width)`. Most additions land in the
/// current bucket, whose column is one contiguous array over all links, so they
/// stay in cache; a column is allocated when first touched. When the run passes
/// the last bucket, adjacent columns are summed and the width doubles — rare when
/// the backend's guess of the run's length ([`super::TimelineRequest::horizon`]) is a fair guess of the run's length.
pub(crate) struct Timeline {
    width: u64,
    links: usize,
    cols: Vec<Vec<f64>>,
}

impl Timeline {
    pub(crate) fn new(links: usize, horizon: SimTime) -> Timeline {
        // 100 ns minimum; with a horizon, wide enough to hold it in the buckets.
        let width = (horizon.ps().div_ceil(TIMELINE_BUCKETS as u64)).max(100_000);
        Timeline {
            width,
            links,
            cols: vec![Vec::new(); TIMELINE_BUCKETS],
        }
    }

    /// Doubles the bucket width, summing adjacent columns.
    fn double(&mut self) {
        let mut old = std::mem::replace(&mut self.cols, vec![Vec::new(); TIMELINE_BUCKETS]);
        for b in 0..TIMELINE_BUCKETS / 2 {
            let hi = std::mem::take(&mut old[2 * b + 1]);
            let mut lo = std::mem::take(&mut old[2 * b]);
            if lo.is_empty() {
                lo = hi;
            } else if !hi.is_empty() {
                lo.iter_mut().zip(&hi).for_each(|(a, b)| *a += b);
            }
            self.cols[b] = lo;
        }
        self.width *= 2;
    }

    /// Spreads `bytes` sent uniformly during `[from, to)` over the buckets of every
    /// link of `path`. The bucket split is computed once for the whole path; a flow
    /// shorter than a bucket (the common case) costs one addition per link.
    pub(crate) fn add(&mut self, path: &[u32], from: u64, to: u64, bytes: f64) {
        if bytes <= 0.0 {
            return;
        }
        while to >= self.width * TIMELINE_BUCKETS as u64 {
            self.double();
        }
        let w = self.width;
        let (b0, b1) = if to <= from {
            let b = (from / w) as usize;
            (b, b)
        } else {
            ((from / w) as usize, ((to - 1) / w) as usize)
        };
        let per_ps = if to > from {
            bytes / (to - from) as f64
        } else {
            0.0
        };
        for b in b0..=b1 {
            let v = if b0 == b1 {
                bytes
            } else {
                let lo = from.max(b as u64 * w);
                let hi = to.min((b as u64 + 1) * w);
                per_ps * (hi - lo) as f64
            };
            let col = &mut self.cols[b];
            if col.is_empty() {
                col.resize(self.links, 0.0);
            }
            for &l in path {
                col[l as usize] += v;
            }
        }
    }

    /// The rows of the `keep` busiest links — longest busy time, `bytes / cap` —
    /// (all links that carried traffic when `keep` is 0), by link index.
    pub(crate) fn finish(self, bytes: &[u64], cap: &[f64], keep: usize) -> LinkTimeline {
        let mut busy: Vec<u32> = (0..bytes.len() as u32)
            .filter(|&l| bytes[l as usize] > 0)
            .collect();
        if keep > 0 && busy.len() > keep {
            let t = |l: u32| bytes[l as usize] as f64 / cap[l as usize];
            busy.sort_unstable_by(|&a, &b| t(b).total_cmp(&t(a)).then(a.cmp(&b)));
            busy.truncate(keep);
            busy.sort_unstable();
        }
        let links = busy
            .into_iter()
            .map(|l| {
                let row = self
                    .cols
                    .iter()
                    .map(|c| c.get(l as usize).copied().unwrap_or(0.0))
                    .collect();
                (l, row)
            })
            .collect();
        LinkTimeline {
            bucket: SimTime(self.width),
            links,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_buckets_double_without_losing_bytes() {
        let mut tl = Timeline::new(3, SimTime::ZERO);
        tl.add(&[0], 0, 500, 10.0);
        tl.add(&[1], 0, 500, 5.0);
        tl.add(&[0, 2], 500, 100_000_000, 90.0);
        let w = tl.width;
        assert!(w * TIMELINE_BUCKETS as u64 > 100_000_000);
        let out = tl.finish(&[100, 5, 90], &[1.0; 3], 0);
        assert_eq!(out.bucket.ps(), w);
        let (r0, r1) = (&out.links[0].1, &out.links[1].1);
        assert!((r0.iter().sum::<f64>() - 100.0).abs() < 1e-9);
        assert!((r0[0] - 10.0 - 90.0 * (w - 500) as f64 / 99_999_500.0).abs() < 1e-6);
        assert_eq!(r1[0], 5.0);
        assert_eq!(r1[1..].iter().sum::<f64>(), 0.0);
        // keep = 2: the two busiest links, by index
        let mut tl = Timeline::new(3, SimTime::from_us(1));
        tl.add(&[0, 1, 2], 0, 10, 1.0);
        let ids: Vec<u32> = tl
            .finish(&[100, 5, 90], &[1.0; 3], 2)
            .links
            .iter()
            .map(|l| l.0)
            .collect();
        assert_eq!(ids, [0, 2]);
        // busiest = longest busy time: a slow link with fewer bytes can win
        let mut tl = Timeline::new(3, SimTime::from_us(1));
        tl.add(&[0, 1, 2], 0, 10, 1.0);
        let ids: Vec<u32> = tl
            .finish(&[100, 5, 90], &[10.0, 0.01, 10.0], 2)
            .links
            .iter()
            .map(|l| l.0)
            .collect();
        assert_eq!(ids, [0, 1]);
    }
}
