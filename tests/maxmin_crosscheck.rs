//! The flow backend's incremental max-min solver against an independent, naive one.
//!
//! `src/backend/flow.rs` recomputes max-min fair rates only over the connected
//! component of flows a change touches, batches the changes of one timestamp, and
//! keeps a heap of fair shares. None of that is reused here: this file holds a
//! textbook progressive-filling solver (Bertsekas & Gallager, *Data Networks*,
//! §6.5.2: raise every unfrozen flow's rate equally until a link fills, freeze the
//! flows crossing it, repeat) that recomputes *every* flow at *every* event, and a
//! continuous-time event loop (f64 picoseconds) around it. Random small transfer
//! sets with random start times run on random small topologies whose every link
//! has a random rate; each transfer's completion time must agree.
//!
//! Shared with the backend are only the inputs: the topology (paths come from
//! `Topology::route` with the backend's ECMP hash, `topology::qp_hash`, so both
//! sides put a flow on the same links; latencies from `Topology::path_latency`;
//! capacities from `Topology::effective_rate`). Routing is not under test here,
//! the rate allocation is.
//!
//! Tolerance: the backend keeps time in whole picoseconds and rounds each flow's
//! completion up (`ceil`) to the next picosecond, so every event can land up to
//! 1 ps late, and a late event leaves the other flows at their old rates for up
//! to 1 ps more. With n transfers there are at most 2n rate-changing events
//! (starts and ends) before any completion, so each FCT may differ by a few ps
//! per event; we allow 4 ps per event (`8·n` ps) plus 1e-9 relative for the f64
//! byte bookkeeping of both sides. A solver error (a wrong share, a flow left
//! out of a recomputation) moves an FCT by nanoseconds to microseconds at these
//! sizes (≥ 1 KiB at ≤ 800 Gb/s is ≥ 10 ns).

use fabricsim::backend::flow::{self, FlowConfig};
use fabricsim::dag::{Dag, Dep};
use fabricsim::topology::{
    build, qp_hash, ClusterSpec, FabricLinkSpec, GpuId, LinkId, Topology, TopologySpec,
};
use fabricsim::units::{Rate, SimTime};
use proptest::prelude::*;

/// Max-min fair rates of flows over `paths` (link indices) on links of capacity
/// `cap` (bytes per ps), by progressive filling: every unfrozen flow's rate rises
/// by the same amount until some link is full; the flows on the links that filled
/// are frozen; repeat until every flow is frozen.
fn naive_max_min(paths: &[Vec<usize>], cap: &[f64]) -> Vec<f64> {
    let n = paths.len();
    let mut rate = vec![0.0; n];
    let mut frozen = vec![false; n];
    let mut left = cap.to_vec();
    loop {
        // unfrozen flows on each link
        let mut count = vec![0usize; cap.len()];
        for (f, p) in paths.iter().enumerate() {
            if !frozen[f] {
                for &l in p {
                    count[l] += 1;
                }
            }
        }
        // the smallest equal increment that fills a link
        let mut inc = f64::INFINITY;
        for l in 0..cap.len() {
            if count[l] > 0 {
                inc = inc.min(left[l].max(0.0) / count[l] as f64);
            }
        }
        if !inc.is_finite() {
            return rate; // every flow frozen
        }
        for (f, p) in paths.iter().enumerate() {
            if !frozen[f] {
                rate[f] += inc;
                for &l in p {
                    left[l] -= inc;
                }
            }
        }
        // freeze the flows crossing a link that is now full (relative to its
        // capacity, so float residue does not leave a full link open)
        let full: Vec<bool> = (0..cap.len())
            .map(|l| count[l] > 0 && left[l] <= cap[l] * 1e-12)
            .collect();
        for (f, p) in paths.iter().enumerate() {
            if !frozen[f] && p.iter().any(|&l| full[l]) {
                frozen[f] = true;
            }
        }
    }
}

/// One transfer: source, destination, bytes, start time (ps).
#[derive(Clone, Debug)]
struct Xfer {
    src: u32,
    dst: u32,
    bytes: u64,
    start: u64,
}

/// Completion time (done − start, ps) of every transfer under naive max-min
/// sharing, recomputed for all flows at every start and end.
fn naive_fcts(topo: &Topology, xs: &[Xfer], seed: u64) -> Vec<f64> {
    let cap: Vec<f64> = (0..topo.links.len())
        .map(|l| topo.effective_rate(LinkId(l as u32)).bps() as f64 / 8e12)
        .collect();
    let mut paths = Vec::new();
    let mut latency = Vec::new();
    for x in xs {
        let mut p = Vec::new();
        let hash = qp_hash(seed, x.src, x.dst, 0);
        assert!(topo.route(GpuId(x.src), GpuId(x.dst), hash, &mut p));
        latency.push(topo.path_latency(&p).ps() as f64);
        paths.push(p.iter().map(|l| l.0 as usize).collect::<Vec<_>>());
    }
    let n = xs.len();
    let mut remaining: Vec<f64> = xs.iter().map(|x| x.bytes as f64).collect();
    let mut sent = vec![f64::NAN; n];
    let mut started = vec![false; n];
    let mut t = 0.0f64;
    loop {
        for (i, x) in xs.iter().enumerate() {
            if !started[i] && (x.start as f64) <= t {
                started[i] = true;
            }
        }
        let active: Vec<usize> = (0..n).filter(|&i| started[i] && sent[i].is_nan()).collect();
        let next_start = xs
            .iter()
            .enumerate()
            .filter(|&(i, _)| !started[i])
            .map(|(_, x)| x.start as f64)
            .fold(f64::INFINITY, f64::min);
        if active.is_empty() {
            if next_start.is_infinite() {
                break;
            }
            t = next_start;
            continue;
        }
        let ap: Vec<Vec<usize>> = active.iter().map(|&i| paths[i].clone()).collect();
        let rate = naive_max_min(&ap, &cap);
        let finish: Vec<f64> = active
            .iter()
            .zip(&rate)
            .map(|(&i, &r)| t + remaining[i] / r)
            .collect();
        let next_end = finish.iter().copied().fold(f64::INFINITY, f64::min);
        let t_next = next_end.min(next_start);
        for (k, &i) in active.iter().enumerate() {
            if finish[k] <= t_next * (1.0 + 1e-15) {
                remaining[i] = 0.0;
                sent[i] = finish[k];
            } else {
                remaining[i] -= rate[k] * (t_next - t);
            }
        }
        t = t_next;
    }
    (0..n)
        .map(|i| sent[i] - xs[i].start as f64 + latency[i])
        .collect()
}

/// The same transfers as a DAG: each starts when a compute task of `start` ps on
/// its source GPU (compute tasks do not queue behind each other) is done.
fn dag_of(xs: &[Xfer]) -> Dag {
    let mut dag = Dag::new();
    dag.begin_op("random transfers");
    for x in xs {
        let c = dag.compute(GpuId(x.src), SimTime(x.start), &[]);
        dag.transfer(GpuId(x.src), GpuId(x.dst), x.bytes, &[Dep::Done(c)]);
    }
    dag
}

/// A small topology: `shape` 0 = single switch, 1 = leaf-spine radix 4 (2:1
/// oversubscribed when `over`), 2 = k = 4 fat-tree; `hosts` hosts of `gpus` GPUs
/// and as many NICs.
fn topology(shape: u8, hosts: u32, gpus: u32, over: bool) -> Topology {
    let cluster = ClusterSpec {
        hosts,
        gpus_per_host: gpus,
        nics_per_host: gpus,
        nvlink_rate: Rate::gbps(800),
        nvlink_latency: SimTime::from_ns(150),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(200),
    };
    let fabric = FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(50),
        switch_latency: SimTime::from_ns(300),
        ..Default::default()
    };
    let spec = match shape {
        0 => TopologySpec::SingleSwitch,
        1 => TopologySpec::LeafSpine {
            radix: if over { 6 } else { 4 },
            oversubscription: if over { 2.0 } else { 1.0 },
        },
        _ => TopologySpec::FatTree { k: 4 },
    };
    build(&cluster, &fabric, &spec).unwrap()
}

/// Link rates in Gb/s drawn for each directed link (mixed so that flows meet
/// several different bottlenecks, not one uniform rate).
const RATES_GBPS: [u64; 6] = [50, 100, 200, 300, 400, 800];

fn check(
    shape: u8,
    hosts: u32,
    gpus: u32,
    over: bool,
    rates: &[usize],
    raw: &[(u32, u32, u64, u64)],
) -> Result<(), TestCaseError> {
    let mut topo = topology(shape, hosts, gpus, over);
    for l in 0..topo.links.len() {
        topo.set_link_rate(
            LinkId(l as u32),
            Rate::gbps(RATES_GBPS[rates[l % rates.len()]]),
        );
    }
    let g = topo.num_gpus();
    let xs: Vec<Xfer> = raw
        .iter()
        .map(|&(a, b, bytes, start)| {
            let src = a % g;
            let dst = (src + 1 + b % (g - 1)) % g; // never src
            Xfer {
                src,
                dst,
                bytes,
                start,
            }
        })
        .collect();
    let cfg = FlowConfig::default();
    let out = flow::run(&dag_of(&xs), &topo, &cfg).unwrap();
    let want = naive_fcts(&topo, &xs, cfg.seed);
    prop_assert_eq!(out.transfer_fct.len(), xs.len());
    let tol_ps = 8.0 * xs.len() as f64;
    for (i, (&got, &w)) in out.transfer_fct.iter().zip(&want).enumerate() {
        let got = got.ps() as f64;
        prop_assert!(
            (got - w).abs() <= tol_ps + 1e-9 * w,
            "transfer {} ({:?}): backend {} ps, naive {} ps, off by {} ps (tolerance {} ps)\n{:?}",
            i,
            xs[i],
            got,
            w,
            got - w,
            tol_ps,
            xs
        );
    }
    Ok(())
}

fn shapes() -> impl Strategy<Value = (u8, u32, u32, bool)> {
    prop_oneof![
        // single switch: 2–4 hosts of 1–4 GPUs (NVLink inside, NICs between)
        (Just(0u8), 2u32..=4, 1u32..=4, Just(false)),
        // leaf-spine radix 4 (2 down, 2 up) or radix 6 at 2:1 (4 down, 2 up):
        // up to 8 NICs, so ECMP over spines and shared uplinks
        (Just(1u8), 2u32..=8, Just(1u32), any::<bool>()),
        (Just(1u8), 2u32..=4, Just(2u32), any::<bool>()),
        // k = 4 fat-tree: 16 NICs, three tiers
        (Just(2u8), 2u32..=16, Just(1u32), Just(false)),
    ]
}

fn transfers() -> impl Strategy<Value = Vec<(u32, u32, u64, u64)>> {
    // 1 KiB–4 MiB each; starts either at 0 (batched changes at one timestamp) or
    // within 0–200 µs, so flows join and leave while others run
    let start = prop_oneof![Just(0u64), 0u64..200_000_000, 0u64..4 /* 1-ps apart */];
    prop::collection::vec(
        (any::<u32>(), any::<u32>(), 1024u64..=4 << 20, start),
        1..=16,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn incremental_max_min_matches_naive_progressive_filling(
        (shape, hosts, gpus, over) in shapes(),
        rates in prop::collection::vec(0usize..RATES_GBPS.len(), 1..=64),
        raw in transfers(),
    ) {
        check(shape, hosts, gpus, over, &rates, &raw)?;
    }
}

/// The naive solver itself on a case solved by hand (Bertsekas & Gallager's
/// example shape): links A (cap 1) and B (cap 2); flow 0 on A, flow 1 on A and B,
/// flows 2 and 3 on B. A fills first at 1/2 each for flows 0 and 1; B then has
/// 2 − 1/2 = 3/2 left for flows 2 and 3: 3/4 each.
#[test]
fn naive_solver_on_a_hand_solved_case() {
    let paths = vec![vec![0], vec![0, 1], vec![1], vec![1]];
    let r = naive_max_min(&paths, &[1.0, 2.0]);
    let want = [0.5, 0.5, 0.75, 0.75];
    for (got, w) in r.iter().zip(want) {
        assert!((got - w).abs() < 1e-12, "{r:?} vs {want:?}");
    }
}

/// A corner next to the backend's same-timestamp batching: two 1 MiB flows on
/// the same path, the second starting 1 ps after the first; from then on both
/// share every link equally, in the naive loop and in the backend.
#[test]
fn one_picosecond_apart_shares_like_together() {
    check(
        0,
        2,
        1,
        false,
        &[4],
        &[(0, 0, 1 << 20, 0), (0, 0, 1 << 20, 1)],
    )
    .unwrap();
}
