//! Synthetic traffic patterns as a [`Dag`]: incast, permutation, all-to-all, and
//! random pairs with flow sizes from a CDF and Poisson arrivals.
//!
//! **Arrivals.** A DAG has no absolute start times, so a flow that should start
//! at time *t* is a transfer that depends on a compute task: per source GPU,
//! a chain of compute tasks whose durations are the exponential inter-arrival
//! gaps, and each flow depends on the `Done` of its gap. Backends already run
//! compute tasks (the packet level treats them as pure delays), so no backend
//! needs a new mechanism; per-source chains of exponential gaps are exact
//! independent Poisson processes, whose superposition is the Poisson arrival
//! process of the whole cluster.
//!
//! **Load.** As in the HPCC/ns-3 traffic generator (Li et al., SIGCOMM 2019):
//! each source starts flows at rate λ = load × `source_rate` / (8 × mean flow
//! size), so on average it offers `load` of its link.
//!
//! Flows between the same pair of GPUs share one queue pair at the packet level
//! and are served in arrival order.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::dag::{Dag, Dep, TaskId, TaskKind};
use crate::topology::{GpuId, Topology};
use crate::units::{Rate, SimTime};

/// A traffic pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficSpec {
    /// `senders` GPUs each send `bytes` to `receiver` at time zero. The senders are
    /// the GPUs following the receiver in rank order (wrapping), skipping the
    /// receiver's own host so that every flow crosses the network.
    Incast {
        /// Number of senders (N of N:1).
        senders: u32,
        /// The receiving GPU.
        receiver: GpuId,
        /// Payload bytes per sender.
        bytes: u64,
    },
    /// Every GPU sends `bytes` to its image under a seeded uniformly random
    /// derangement (nobody sends to itself). With `per_host`, hosts are permuted
    /// instead and GPU `l` of host `h` sends to GPU `l` of host π(h) (rail-aligned,
    /// every flow crosses the network).
    Permutation {
        /// Payload bytes per flow.
        bytes: u64,
        /// Permute hosts rather than GPUs.
        per_host: bool,
        /// Seed of the permutation.
        seed: u64,
    },
    /// Every GPU sends `bytes` to every other GPU at time zero.
    AllToAll {
        /// Payload bytes per (source, destination) pair.
        bytes: u64,
    },
    /// Each GPU starts flows to uniformly random other GPUs with Poisson arrivals
    /// until `duration`, sizes drawn from `cdf`, offering `load` of `source_rate`.
    RandomPairs {
        /// Flow-size distribution.
        cdf: FlowSizeCdf,
        /// Offered load per source, fraction of `source_rate` (0, 1].
        load: f64,
        /// Rate the load refers to (the source's NIC link), bits/s.
        source_rate: Rate,
        /// Arrivals stop at this time, picoseconds.
        duration: SimTime,
        /// Seed of sizes, destinations and arrivals.
        seed: u64,
    },
    /// An explicit list of flows with dependencies (`workload.kind = "flows"`,
    /// [`crate::workload::flows`]).
    Flows(Vec<crate::workload::flows::ListedFlow>),
}

/// Why a traffic pattern cannot be generated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("traffic `{field}`: {message}")]
pub struct TrafficError {
    /// The field at fault.
    pub field: &'static str,
    /// What is wrong and what would fit.
    pub message: String,
}

fn err(field: &'static str, message: impl Into<String>) -> TrafficError {
    TrafficError {
        field,
        message: message.into(),
    }
}

/// A piecewise-linear flow-size CDF: points (bytes, cumulative probability),
/// sampled by inverting the CDF with linear interpolation between points (as
/// the HPCC/ns-3 traffic generator does).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSizeCdf {
    points: Vec<(f64, f64)>,
}

impl FlowSizeCdf {
    /// Parses lines `size_bytes cumulative` (percent if the last value is 100,
    /// else a fraction ending at 1); `#` starts a comment.
    ///
    /// # Errors
    /// On a malformed line, a decreasing size or probability, or a CDF that does
    /// not end at 1 (100%).
    pub fn parse(text: &str) -> Result<FlowSizeCdf, TrafficError> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut it = line.split_whitespace().map(str::parse::<f64>);
            match (it.next(), it.next(), it.next()) {
                (Some(Ok(s)), Some(Ok(p)), None) if s >= 0.0 && p >= 0.0 => points.push((s, p)),
                _ => {
                    return Err(err(
                        "cdf",
                        format!("line {}: expected `size cumulative`, found `{line}`", i + 1),
                    ))
                }
            }
        }
        let Some(&(_, last)) = points.last() else {
            return Err(err("cdf", "no points"));
        };
        let scale = if (last - 100.0).abs() < 1e-9 {
            100.0
        } else if (last - 1.0).abs() < 1e-9 {
            1.0
        } else {
            return Err(err(
                "cdf",
                format!("must end at 1 or 100 (percent), ends at {last}"),
            ));
        };
        for p in &mut points {
            p.1 /= scale;
        }
        if points
            .windows(2)
            .any(|w| w[1].0 < w[0].0 || w[1].1 < w[0].1)
        {
            return Err(err("cdf", "sizes and probabilities must not decrease"));
        }
        Ok(FlowSizeCdf { points })
    }

    /// Web search (DCTCP, Alizadeh et al., SIGCOMM 2010); `data/websearch_cdf.txt`.
    pub fn web_search() -> FlowSizeCdf {
        FlowSizeCdf::parse(include_str!("../../data/websearch_cdf.txt"))
            .expect("shipped CDF parses")
    }

    /// Facebook Hadoop (Roy et al., SIGCOMM 2015); `data/fb_hadoop_cdf.txt`.
    pub fn fb_hadoop() -> FlowSizeCdf {
        FlowSizeCdf::parse(include_str!("../../data/fb_hadoop_cdf.txt"))
            .expect("shipped CDF parses")
    }

    /// Mean flow size, bytes (exact for the piecewise-linear CDF).
    pub fn mean(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
            .sum::<f64>()
            + self.points[0].0 * self.points[0].1
    }

    /// The size at cumulative probability `u` in [0, 1), at least 1 byte.
    pub fn quantile(&self, u: f64) -> u64 {
        let pts = &self.points;
        if u <= pts[0].1 {
            return (pts[0].0.round() as u64).max(1);
        }
        for w in pts.windows(2) {
            if u <= w[1].1 {
                let (s0, p0) = w[0];
                let (s1, p1) = w[1];
                let s = if p1 > p0 {
                    s0 + (s1 - s0) * (u - p0) / (p1 - p0)
                } else {
                    s1
                };
                return (s.round() as u64).max(1);
            }
        }
        (pts[pts.len() - 1].0.round() as u64).max(1)
    }
}

fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn below(rng: &mut ChaCha8Rng, n: u32) -> u32 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u32
}

/// A uniformly random derangement of `0..n` (shuffle, retry until no fixed
/// point; ≈ e tries on average).
pub fn derangement(n: u32, rng: &mut ChaCha8Rng) -> Vec<u32> {
    assert!(n >= 2, "a derangement needs at least two elements");
    let mut p: Vec<u32> = (0..n).collect();
    loop {
        for i in (1..n as usize).rev() {
            let j = below(rng, i as u32 + 1) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &v)| i as u32 != v) {
            return p;
        }
    }
}

/// A flow added to a traffic pattern (`workload.extra_flows`), e.g. a victim
/// flow beside an incast to measure congestion spreading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtraFlow {
    /// Source GPU.
    pub src: GpuId,
    /// Destination GPU.
    pub dst: GpuId,
    /// Payload bytes.
    pub bytes: u64,
    /// When it starts, picoseconds after the pattern's start.
    pub start: SimTime,
    /// Its traffic class (index among the fabric's classes), or `None` for
    /// the workload's (packet level only).
    pub class: Option<u8>,
}

/// Appends `flows` to the current operation of `dag`: each is a transfer that
/// starts at its `start` (after a compute task of that length on its source
/// GPU, when positive).
pub fn add_extra_flows(dag: &mut Dag, flows: &[ExtraFlow]) {
    for f in flows {
        let t = if f.start > SimTime::ZERO {
            let c = dag.compute(f.src, f.start, &[]);
            dag.transfer(f.src, f.dst, f.bytes, &[Dep::Done(c)])
        } else {
            dag.transfer(f.src, f.dst, f.bytes, &[])
        };
        if let Some(c) = f.class {
            dag.set_class(t, c);
        }
    }
}

/// Gives every flow of a traffic DAG its own connection: the k-th transfer
/// between one (source, destination) pair, in task order, rides queue pair
/// k mod 256 of that pair (the first keeps 0, so patterns whose pairs are
/// distinct are unchanged). Independent flows are separate connections in
/// the traffic they stand for (a web-search query is its own TCP
/// connection; the HPCC simulator opens a queue pair per flow), so a short
/// flow never waits behind a long one on the same pair at the sending NIC,
/// and each takes its own ECMP path, at every fidelity (the flow level
/// hashes the queue pair too). Pairs with more than 256 flows reuse queue
/// pairs in turn, by then most likely finished: the DAG keeps one byte per
/// transfer for it.
pub fn one_connection_per_flow(dag: &mut Dag) {
    let mut seen: std::collections::HashMap<(u32, u32), u32> = std::collections::HashMap::new();
    for t in 0..dag.len() {
        if let TaskKind::Transfer { src, dst, .. } = dag.task(t).kind {
            let k = seen.entry((src.0, dst.0)).or_insert(0);
            if *k > 0 {
                dag.set_qp(TaskId(t as u32), (*k % 256) as u8);
            }
            *k += 1;
        }
    }
}

/// Builds the DAG of `spec` on `topo` (one operation named after the pattern).
///
/// # Errors
/// When the cluster is too small for the pattern or a parameter is out of range.
pub fn generate(spec: &TrafficSpec, topo: &Topology) -> Result<Dag, TrafficError> {
    let n = topo.num_gpus();
    let mut dag = Dag::new();
    match spec {
        TrafficSpec::Incast {
            senders,
            receiver,
            bytes,
        } => {
            dag.begin_op("incast");
            if receiver.0 >= n {
                return Err(err(
                    "receiver",
                    format!("GPU {} does not exist ({n} GPUs)", receiver.0),
                ));
            }
            let rh = topo.host_of(*receiver);
            let cands: Vec<u32> = (1..n)
                .map(|k| (receiver.0 + k) % n)
                .filter(|&g| topo.host_of(GpuId(g)) != rh)
                .collect();
            if (*senders as usize) > cands.len() || *senders == 0 {
                return Err(err(
                    "senders",
                    format!(
                        "between 1 and {} senders outside the receiver's host, found {senders}",
                        cands.len()
                    ),
                ));
            }
            for &s in &cands[..*senders as usize] {
                dag.transfer(GpuId(s), *receiver, *bytes, &[]);
            }
        }
        TrafficSpec::Permutation {
            bytes,
            per_host,
            seed,
        } => {
            dag.begin_op("permutation");
            let mut rng = ChaCha8Rng::seed_from_u64(*seed);
            if *per_host {
                if topo.hosts < 2 {
                    return Err(err("per_host", "a host permutation needs at least 2 hosts"));
                }
                let p = derangement(topo.hosts, &mut rng);
                let g = topo.gpus_per_host;
                for h in 0..topo.hosts {
                    for l in 0..g {
                        dag.transfer(GpuId(h * g + l), GpuId(p[h as usize] * g + l), *bytes, &[]);
                    }
                }
            } else {
                if n < 2 {
                    return Err(err("gpus", "a permutation needs at least 2 GPUs"));
                }
                for (s, &d) in derangement(n, &mut rng).iter().enumerate() {
                    dag.transfer(GpuId(s as u32), GpuId(d), *bytes, &[]);
                }
            }
        }
        TrafficSpec::AllToAll { bytes } => {
            dag.begin_op("alltoall");
            for s in 0..n {
                for k in 1..n {
                    // Staggered order (s + k) so no destination is everyone's first.
                    dag.transfer(GpuId(s), GpuId((s + k) % n), *bytes, &[]);
                }
            }
        }
        TrafficSpec::Flows(flows) => {
            if let Some(f) = flows.iter().find(|f| f.src.0 >= n || f.dst.0 >= n) {
                return Err(err(
                    "flows",
                    format!("flow {} names a GPU beyond the cluster's {n}", f.id),
                ));
            }
            crate::workload::flows::lower(flows, &mut dag);
        }
        TrafficSpec::RandomPairs {
            cdf,
            load,
            source_rate,
            duration,
            seed,
        } => {
            dag.begin_op("random_pairs");
            if !(*load > 0.0 && *load <= 1.0) {
                return Err(err("load", format!("a fraction in (0, 1], found {load}")));
            }
            if n < 2 || source_rate.0 == 0 {
                return Err(err(
                    "source_rate",
                    "needs at least 2 GPUs and a positive rate",
                ));
            }
            let lambda = load * source_rate.0 as f64 / (8.0 * cdf.mean()); // flows per second per source
            let mut rng = ChaCha8Rng::seed_from_u64(*seed);
            for s in 0..n {
                let mut t = 0.0;
                let mut prev: Option<Dep> = None;
                loop {
                    let gap = -(1.0 - unit(&mut rng)).ln() / lambda;
                    t += gap;
                    if t >= duration.as_secs_f64() {
                        break;
                    }
                    let deps: Vec<Dep> = prev.into_iter().collect();
                    let c = dag.compute(GpuId(s), SimTime::from_secs_f64(gap), &deps);
                    let d = (s + 1 + below(&mut rng, n - 1)) % n;
                    let size = cdf.quantile(unit(&mut rng));
                    dag.transfer(GpuId(s), GpuId(d), size, &[Dep::Done(c)]);
                    prev = Some(Dep::Done(c));
                }
            }
        }
    }
    Ok(dag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_flow_of_a_pair_gets_the_next_queue_pair() {
        // flows 0→1, 0→1, 1→0, 0→1 and 300 more 2→3: queue pairs 0, 1, 0,
        // 2, then 0..255 and around again for 2→3
        let mut dag = Dag::new();
        dag.begin_op("flows");
        let mut ids = Vec::new();
        for (s, d) in [(0, 1), (0, 1), (1, 0), (0, 1)] {
            ids.push(dag.transfer(GpuId(s), GpuId(d), 1000, &[]));
        }
        let c = dag.compute(GpuId(2), SimTime::from_secs_f64(1e-6), &[]);
        for _ in 0..300 {
            ids.push(dag.transfer(GpuId(2), GpuId(3), 1000, &[Dep::Done(c)]));
        }
        one_connection_per_flow(&mut dag);
        let qp = |i: usize| dag.qp_of(ids[i].0 as usize);
        assert_eq!([qp(0), qp(1), qp(2), qp(3)], [0, 1, 0, 2]);
        assert_eq!(
            (qp(4), qp(5), qp(4 + 255), qp(4 + 256), qp(4 + 299)),
            (0, 1, 255, 0, 43)
        );
        assert_eq!(
            dag.qp_of(c.0 as usize),
            0,
            "a compute task has no queue pair"
        );
    }
    use crate::dag::TaskKind;

    fn topo(hosts: u32, gpus: u32) -> Topology {
        crate::topology::builder::small_single_switch(hosts, gpus)
    }

    #[test]
    fn shipped_cdfs_parse_and_have_the_published_means() {
        // pFabric (Alizadeh et al., SIGCOMM 2013) quotes a mean of ≈ 1.6 MB for
        // web search; the 12-point table interpolated linearly gives 1.711 MB
        // (computed by hand from the table). Hadoop's mass is in small flows.
        let ws = FlowSizeCdf::web_search();
        let fb = FlowSizeCdf::fb_hadoop();
        assert_eq!(ws.mean().round(), 1_711_250.0);
        assert!(
            fb.mean() > 0.05e6 && fb.mean() < 0.2e6,
            "hadoop mean {}",
            fb.mean()
        );
        assert_eq!(ws.quantile(0.15), 10_000);
        assert_eq!(ws.quantile(1.0), 30_000_000);
    }

    #[test]
    fn permutation_is_a_seeded_derangement() {
        let t = topo(16, 2);
        let spec = TrafficSpec::Permutation {
            bytes: 10,
            per_host: true,
            seed: 7,
        };
        let a = generate(&spec, &t).unwrap();
        assert!(a.tasks().eq(generate(&spec, &t).unwrap().tasks()));
        let mut seen = [false; 32];
        for task in a.tasks() {
            let TaskKind::Transfer { src, dst, .. } = task.kind else {
                panic!()
            };
            assert_ne!(t.host_of(src), t.host_of(dst));
            assert!(!seen[dst.0 as usize]);
            seen[dst.0 as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn incast_and_alltoall_shapes() {
        let t = topo(8, 1);
        let d = generate(
            &TrafficSpec::Incast {
                senders: 7,
                receiver: GpuId(3),
                bytes: 5,
            },
            &t,
        )
        .unwrap();
        assert_eq!(d.len(), 7);
        assert!(generate(
            &TrafficSpec::Incast {
                senders: 8,
                receiver: GpuId(3),
                bytes: 5
            },
            &t
        )
        .is_err());
        assert_eq!(
            generate(&TrafficSpec::AllToAll { bytes: 1 }, &t)
                .unwrap()
                .len(),
            56
        );
    }

    #[test]
    fn random_pairs_offer_the_target_load() {
        let t = topo(8, 1);
        let cdf = FlowSizeCdf::fb_hadoop();
        let mean = cdf.mean();
        let dur = SimTime::from_us(20_000);
        let spec = TrafficSpec::RandomPairs {
            cdf,
            load: 0.5,
            source_rate: Rate::gbps(100),
            duration: dur,
            seed: 3,
        };
        let d = generate(&spec, &t).unwrap();
        // Offered bytes ≈ load × rate × duration × sources / 8, within sampling noise.
        let expect = 0.5 * 100e9 * dur.as_secs_f64() * 8.0 / 8.0;
        let got = d.transfer_bytes() as f64;
        assert!(
            (got / expect - 1.0).abs() < 0.15,
            "offered {got} vs {expect} (mean flow {mean})"
        );
    }
}
