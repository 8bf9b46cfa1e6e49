//! Link sharing among traffic classes as a fluid model: what the flow
//! backend computes when transfers ride more than one class of
//! `[[fabric.classes]]`.
//!
//! The packet level runs IEEE 802.1Qaz ETS on every port: strict priority
//! between levels, DWRR between the weighted classes of one level, FIFO (one
//! queue per class and port) within a class. Its fluid limit on one link is
//! hierarchical GPS (Bennett & Zhang, "Hierarchical packet fair queueing
//! algorithms", SIGCOMM 1996): the classes of the highest active level take
//! what they can use, the rest goes to the next level; within a level each
//! active class gets capacity in proportion to its weight, a class that needs
//! less gives the rest to the others of its level (work conserving); within a
//! class the flows share the class's capacity max-min.
//!
//! **The fixed point.** Over a network, a flow's demand on one link is set by
//! its other links, so the per-link rule above defines the allocation only as a
//! fixed point. For flow `f` of class `k` on link `l`, with every other flow's
//! rate taken as its demand, let `offer_l(f)` be what the link's H-GPS gives `f`
//! if `f` asks for everything: at `f`'s level, with `c` the capacity the levels
//! above leave, class `k` gets `S = w_k·λ` where
//! `Σ_{j≠k} min(D_j, w_j·λ) + w_k·λ = c` (`D_j` the sum of class `j`'s demands
//! on `l`), and `f` gets `μ` where `Σ_{g∈k, g≠f} min(d_g, μ) + μ = S`. The
//! allocation `r` computed here is the one with `r_f = min_{l∈path(f)} offer_l(f)`
//! for every flow, level by level from the highest (a level sees only the
//! capacity the levels above left, as strict priority does). Equivalently every
//! flow has a *bottleneck* link that is full at its level, where its class's
//! rate per unit of weight is the largest of the level's classes there, and
//! where no flow of its class gets more than it. With one class this is
//! exactly max-min fairness (Bertsekas & Gallager, *Data Networks*, §6.5.2:
//! every flow has a link that is full and where no flow gets more), and on one
//! link it is H-GPS. It is *not* weighted max-min with a weight
//! `w_k / n_k(l)` per flow: that weight would differ from link to link for a
//! flow whose class has different numbers of flows on its links, and weighted
//! max-min needs one weight per flow.
//!
//! **How.** `offer_l` is nonincreasing in every other flow's demand, so the map
//! `T(d)_f = min_l offer_l(f; d)` is antitone and alternating it from "every
//! demand infinite" brackets the fixed point: `lo = T(hi)` is a lower bound and
//! `hi = T(lo)` an upper bound of every rate (`r ≤ hi ⇒ T(hi) ≤ T(r) = r`).
//! A flow whose bounds meet (relative 1e-12) is frozen at its lower bound and
//! takes part from then on with that demand. With one class the flows of the
//! tightest link meet in the first round, so this is progressive filling one
//! bottleneck per round. With weights the bounds can stop at a 2-cycle of `T`
//! around the fixed point (a class's share passing from link to link through
//! flows of other classes); when a round freezes nothing and closes less than
//! half of the gap, damped steps `d ← d + α·(T(d) − d)` from the middle of
//! the bounds, kept inside them, go the rest of the way (α halves when a step
//! does not shrink the residual) to `T(d) = d` within 1e-12.
//! `tests/flow_classes.rs` checks on 1,000 random sets that the result is a
//! fixed point of a naive evaluation of the rule and meets the defining
//! conditions. Uniqueness of the fixed point is not proven here (with one class
//! it is max-min's); should the steps not settle within [`MAX_ROUNDS`] the
//! last iterate is taken (never seen in the tests).
//!
//! **Limits.** A fluid model of ETS: no DWRR quantum granularity, no
//! head-of-line blocking within a class's FIFO, no PFC pauses between classes
//! (the flow level has no queues or drops, so a class's `pfc` and ECN
//! thresholds stay packet-level), and ACKs and CNPs carry no fluid bytes.
//! Every allocation recomputes all flows (no incremental component as for
//! the one-class max-min of [`super::flow`]): a run whose transfers all ride
//! one class keeps that faster path.

/// The class settings the solver needs: strict-priority level (higher first)
/// and weight within its level (a strict class, alone on its level, any).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassWeight {
    /// Strict-priority level, higher served first.
    pub priority: u8,
    /// Share of its level, in proportion to the other active classes' weights.
    pub weight: f64,
}

/// Rounds of bound tightening, and of damped steps, after which the solver
/// moves on (see the module doc).
pub const MAX_ROUNDS: usize = 10_000;

/// Most classes a fabric has (one per virtual lane).
const MAX_CLASSES: usize = 8;

/// Relative gap at which a flow's bounds count as met.
const CLOSE: f64 = 1e-12;

/// Reusable scratch for [`ClassShare::solve`].
#[derive(Default)]
pub struct ClassShare {
    /// Local index of each global link (`u32::MAX`: not on any path).
    local: Vec<u32>,
    /// Global id of each local link.
    links: Vec<u32>,
    /// Capacity each local link has left for the level being solved.
    left: Vec<f64>,
    /// Flows of the current level on each local link.
    on: Vec<Vec<u32>>,
    /// Local links of each flow (`path_at[f]..path_at[f + 1]`).
    path_at: Vec<usize>,
    path_links: Vec<u32>,
    demand: Vec<f64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    next: Vec<f64>,
    frozen: Vec<bool>,
    rate: Vec<f64>,
    // per-class scratch of one link
    fin: [Vec<f64>; MAX_CLASSES],
    prefix: [Vec<f64>; MAX_CLASSES],
    infinite: [u32; MAX_CLASSES],
    sum: [f64; MAX_CLASSES],
    /// Rounds the last solve took (for tests and profiles).
    pub rounds: usize,
}

impl ClassShare {
    /// Rates (bytes per unit time, the unit of `cap`) of flows `0..paths.len()`
    /// whose links are `paths[f]` (indices into `cap`) and class
    /// `classes[class[f]]`, as the module doc defines them.
    ///
    /// # Panics
    /// If a class index is out of `classes` or above 7, or a link out of `cap`.
    pub fn solve(
        &mut self,
        cap: &[f64],
        paths: &[&[u32]],
        class: &[u8],
        classes: &[ClassWeight],
    ) -> &[f64] {
        let n = paths.len();
        if self.local.len() < cap.len() {
            self.local.resize(cap.len(), u32::MAX);
        }
        for &l in &self.links {
            self.local[l as usize] = u32::MAX;
        }
        self.links.clear();
        self.left.clear();
        self.path_at.clear();
        self.path_links.clear();
        for p in paths {
            self.path_at.push(self.path_links.len());
            for &l in p.iter() {
                let li = l as usize;
                if self.local[li] == u32::MAX {
                    self.local[li] = self.links.len() as u32;
                    self.links.push(l);
                    self.left.push(cap[li]);
                }
                self.path_links.push(self.local[li]);
            }
        }
        self.path_at.push(self.path_links.len());
        if self.on.len() < self.links.len() {
            self.on.resize_with(self.links.len(), Vec::new);
        }
        for v in [&mut self.demand, &mut self.lo, &mut self.hi, &mut self.next] {
            v.clear();
            v.resize(n, f64::INFINITY);
        }
        self.rate.clear();
        self.rate.resize(n, 0.0);
        self.frozen.clear();
        self.frozen.resize(n, true);
        self.rounds = 0;
        let mut levels: Vec<u8> = class
            .iter()
            .map(|&c| classes[usize::from(c)].priority)
            .collect();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        levels.dedup();
        for &p in &levels {
            for v in &mut self.on[..self.links.len()] {
                v.clear();
            }
            for f in 0..n {
                if classes[usize::from(class[f])].priority == p {
                    self.frozen[f] = false;
                    self.demand[f] = f64::INFINITY;
                    self.lo[f] = 0.0;
                    self.hi[f] = f64::INFINITY;
                    for &l in &self.path_links[self.path_at[f]..self.path_at[f + 1]] {
                        self.on[l as usize].push(f as u32);
                    }
                }
            }
            self.solve_level(class, classes);
            for f in 0..n {
                if classes[usize::from(class[f])].priority == p {
                    for &l in &self.path_links[self.path_at[f]..self.path_at[f + 1]] {
                        self.left[l as usize] -= self.rate[f];
                    }
                }
            }
        }
        &self.rate
    }

    /// The flows on `self.on` (unfrozen, one level): bounds alternated until
    /// they meet or stop closing, then damped fixed-point steps inside them.
    fn solve_level(&mut self, class: &[u8], classes: &[ClassWeight]) {
        let mut unfrozen: Vec<u32> = (0..self.rate.len() as u32)
            .filter(|&f| !self.frozen[f as usize])
            .collect();
        let mut rounds = 0;
        let mut gap = f64::INFINITY;
        while !unfrozen.is_empty() && rounds < MAX_ROUNDS {
            rounds += 1;
            // lo = T(hi), then hi = T(lo)
            for &f in &unfrozen {
                self.demand[f as usize] = self.hi[f as usize];
            }
            self.offers(class, classes, &unfrozen);
            for &f in &unfrozen {
                let f = f as usize;
                self.lo[f] = self.lo[f].max(self.next[f]);
                self.demand[f] = self.lo[f];
            }
            self.offers(class, classes, &unfrozen);
            for &f in &unfrozen {
                let f = f as usize;
                self.hi[f] = self.hi[f].min(self.next[f]).max(self.lo[f]);
            }
            let before = unfrozen.len();
            unfrozen.retain(|&f| {
                let f = f as usize;
                let met = self.hi[f] - self.lo[f] <= CLOSE * self.hi[f];
                if met {
                    self.frozen[f] = true;
                    self.rate[f] = self.lo[f];
                    self.demand[f] = self.lo[f];
                }
                !met
            });
            // the bounds of T∘T may stop at a 2-cycle of T around the fixed point
            let g: f64 = unfrozen
                .iter()
                .map(|&f| self.hi[f as usize] - self.lo[f as usize])
                .sum();
            if unfrozen.len() == before && g > 0.5 * gap {
                break;
            }
            gap = g;
        }
        if !unfrozen.is_empty() {
            rounds += self.damped(class, classes, &unfrozen);
            for &f in &unfrozen {
                let f = f as usize;
                self.frozen[f] = true;
                self.rate[f] = self.demand[f];
            }
        }
        self.rounds += rounds;
    }

    /// Damped steps `d ← d + α·(T(d) − d)` from the middle of the bounds,
    /// kept inside them (the fixed point is), until `T(d) = d` (relative
    /// [`CLOSE`]); α halves whenever a step does not shrink the residual.
    /// Returns the rounds taken.
    fn damped(&mut self, class: &[u8], classes: &[ClassWeight], unfrozen: &[u32]) -> usize {
        for &f in unfrozen {
            let f = f as usize;
            self.demand[f] = 0.5 * (self.lo[f] + self.hi[f]);
        }
        let mut alpha = 0.5f64;
        let mut last = f64::INFINITY;
        for round in 1..=MAX_ROUNDS {
            self.offers(class, classes, unfrozen);
            let mut worst = 0.0f64;
            for &f in unfrozen {
                let f = f as usize;
                let (n, d) = (self.next[f], self.demand[f]);
                if n != d {
                    worst = worst.max((n - d).abs() / n.max(d));
                }
            }
            if worst <= CLOSE {
                return round;
            }
            if worst >= last {
                alpha = (alpha * 0.5).max(1.0 / 64.0);
            }
            last = worst;
            for &f in unfrozen {
                let f = f as usize;
                let d = self.demand[f] + alpha * (self.next[f] - self.demand[f]);
                self.demand[f] = d.clamp(self.lo[f], self.hi[f]);
            }
        }
        MAX_ROUNDS
    }

    /// `self.next[f] = min over f's links of offer_l(f)` for the flows
    /// `targets`, every flow of the level asking `self.demand`.
    fn offers(&mut self, class: &[u8], classes: &[ClassWeight], targets: &[u32]) {
        for &f in targets {
            self.next[f as usize] = f64::INFINITY;
        }
        for l in 0..self.links.len() {
            if self.on[l].iter().all(|&f| self.frozen[f as usize]) {
                continue;
            }
            let c = self.left[l].max(0.0);
            let mut present = [false; MAX_CLASSES];
            for k in 0..MAX_CLASSES {
                self.fin[k].clear();
                self.infinite[k] = 0;
                self.sum[k] = 0.0;
            }
            for &f in &self.on[l] {
                let k = usize::from(class[f as usize]);
                present[k] = true;
                let d = self.demand[f as usize];
                if d.is_finite() {
                    self.fin[k].push(d);
                    self.sum[k] += d;
                } else {
                    self.infinite[k] += 1;
                }
            }
            // class share when the class asks for everything, then the
            // within-class prefix sums of its finite demands
            let mut share = [0.0f64; MAX_CLASSES];
            for k in 0..MAX_CLASSES {
                if !present[k] {
                    continue;
                }
                share[k] = self.class_share(k, c, &present, classes);
                self.fin[k].sort_unstable_by(f64::total_cmp);
                let p = &mut self.prefix[k];
                p.clear();
                p.push(0.0);
                let mut s = 0.0;
                for &d in &self.fin[k] {
                    s += d;
                    p.push(s);
                }
            }
            for i in 0..self.on[l].len() {
                let f = self.on[l][i] as usize;
                if self.frozen[f] {
                    continue;
                }
                let k = usize::from(class[f]);
                let mu = within(
                    &self.fin[k],
                    &self.prefix[k],
                    self.infinite[k],
                    self.demand[f],
                    share[k],
                );
                if mu < self.next[f] {
                    self.next[f] = mu;
                }
            }
        }
    }

    /// `w_k·λ` with `Σ_{j≠k} min(D_j, w_j·λ) + w_k·λ = c` over the classes
    /// present on the link (the scratch of [`ClassShare::offers`]).
    fn class_share(
        &self,
        k: usize,
        c: f64,
        present: &[bool; MAX_CLASSES],
        classes: &[ClassWeight],
    ) -> f64 {
        // (D_j / w_j, D_j, w_j) of the others, by the level at which they are met
        let mut others: [(f64, f64, f64); MAX_CLASSES] = [(0.0, 0.0, 0.0); MAX_CLASSES];
        let mut m = 0;
        let mut w_all = classes[k].weight;
        for j in 0..MAX_CLASSES {
            if j == k || !present[j] {
                continue;
            }
            let w = classes[j].weight;
            let d = if self.infinite[j] > 0 {
                f64::INFINITY
            } else {
                self.sum[j]
            };
            others[m] = (d / w, d, w);
            m += 1;
            w_all += w;
        }
        if m == 0 {
            return c;
        }
        let others = &mut others[..m];
        others.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut used = 0.0;
        for &(t, d, w) in others.iter() {
            let lambda = (c - used) / w_all;
            if lambda <= t {
                return (classes[k].weight * lambda).max(0.0);
            }
            used += d;
            w_all -= w;
        }
        (c - used).max(0.0)
    }
}

/// `μ` with `Σ_{g≠f} min(d_g, μ) + μ = s`, `d_g` the class's demands
/// (`fin` sorted finite ones with their prefix sums, `inf` infinite ones),
/// `f`'s own demand `own` among them.
fn within(fin: &[f64], prefix: &[f64], inf: u32, own: f64, s: f64) -> f64 {
    let n = fin.len();
    let (e, others_inf) = if own.is_finite() {
        (Some(fin.partition_point(|&x| x < own)), inf)
    } else {
        (None, inf - 1)
    };
    let others_inf = f64::from(others_inf);
    // h(t): the class's total at μ = fin[t]
    let h = |t: usize| {
        let a = fin[t];
        let mut v = prefix[t] + (n - t) as f64 * a + others_inf * a + a;
        if let Some(e) = e {
            v -= fin[e].min(a);
        }
        v
    };
    // h is nondecreasing: the number of t with h(t) <= s
    let (mut a, mut b) = (0, n);
    while a < b {
        let m = (a + b) / 2;
        if h(m) <= s {
            a = m + 1;
        } else {
            b = m;
        }
    }
    let below = a;
    let mu = if below == 0 {
        let count = n as f64 - f64::from(u8::from(e.is_some())) + others_inf + 1.0;
        s / count
    } else {
        let t = below - 1;
        let mut sum = prefix[t + 1];
        let mut above = (n - t - 1) as f64 + others_inf + 1.0;
        match e {
            Some(e) if e <= t => sum -= fin[e],
            Some(_) => above -= 1.0,
            None => {}
        }
        (s - sum) / above
    };
    mu.max(0.0)
}
