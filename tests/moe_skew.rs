//! Skewed mixture-of-experts routing (issue 15): `workload.model.expert_skew`
//! (a Zipf exponent) or `expert_load` (a measured load per expert) make a MoE
//! layer's all-to-all an all-to-allv — NCCL's grouped send/recv with uneven
//! pieces — and give the hot experts' GPUs more compute.
//!
//! The closed forms: in the dispatch every rank sends rank j the share w_j of
//! its S bytes, so rank j's downlink carries (N−1)·S·w_j; in the combine rank
//! r returns S·w_r to each of the N−1 others. Max-min sharing on a
//! non-blocking switch then ends the exchange when the hottest rank's link
//! has moved its load: (N−1)·S·max w / B, where the uniform all-to-all takes
//! (N−1)·S/(N·B) (`src/collective/alltoall.rs`, Thakur, Rabenseifner & Gropp,
//! IJHPCA 2005 §3.4). The ratio N·max w is exact up to the path latency.

mod common;

use fabricsim::backend::flow::{self, FlowConfig};
use fabricsim::collective::alltoall::{self, Split};
use fabricsim::collective::{Algorithm, CollectiveOp, CollectiveSpec, ProtoCost};
use fabricsim::config::{self, Fidelity};
use fabricsim::dag::Dag;
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, Topology, TopologySpec};
use fabricsim::units::{Rate, SimTime};

/// `n` one-GPU hosts on one 400 Gb/s switch.
fn switch_of(n: u32) -> Topology {
    let cluster = ClusterSpec {
        hosts: n,
        gpus_per_host: 1,
        nics_per_host: 1,
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
    build(&cluster, &fabric, &TopologySpec::SingleSwitch).unwrap()
}

fn spec(bytes: u64) -> CollectiveSpec {
    CollectiveSpec {
        op: CollectiveOp::AllToAll,
        algorithm: Algorithm::Direct,
        bytes,
        chunk_bytes: u64::MAX,
        inter_host: Algorithm::Ring,
        root: 0,
        channels: 1,
        pxn: false,
        proto: ProtoCost::NONE,
    }
}

/// Flow-level makespan (ps) and DAG payload of an all-to-all(v) of `bytes`
/// per rank over every GPU of `topo`.
fn exchange(topo: &Topology, bytes: u64, split: Option<Split<'_>>) -> (f64, u64) {
    let ranks: Vec<GpuId> = (0..topo.num_gpus()).map(GpuId).collect();
    let mut dag = Dag::new();
    dag.begin_op("alltoall");
    match split {
        None => alltoall::lower(&spec(bytes), &ranks, topo, &mut dag, &[]).unwrap(),
        Some(s) => alltoall::lower_v(&spec(bytes), s, &ranks, topo, &mut dag, &[]).unwrap(),
    };
    let out = flow::run(&dag, topo, &FlowConfig::default()).unwrap();
    assert_eq!(out.fabric.bytes_sent, out.fabric.bytes_delivered);
    (out.makespan.ps() as f64, dag.transfer_bytes())
}

#[test]
fn split_bytes_is_proportional_and_exact() {
    let cut = alltoall::split_bytes(1000, &[0.7, 0.1, 0.1, 0.1]);
    assert_eq!(cut, vec![700, 100, 100, 100]);
    // remainders go to the largest fractions, ties to the lower index
    let cut = alltoall::split_bytes(10, &[1.0, 1.0, 1.0]);
    assert_eq!(cut, vec![4, 3, 3]);
    let cut = alltoall::split_bytes(u64::MAX / 2, &[3.0, 1.0]);
    assert_eq!(cut.iter().sum::<u64>(), u64::MAX / 2);
    assert_eq!(alltoall::split_bytes(5, &[0.0, 0.0]), vec![0, 0]);
}

#[test]
fn a_hot_rank_takes_n_times_its_share_of_the_uniform_time() {
    let topo = switch_of(4);
    let s = 64u64 << 20;
    let w = [0.7, 0.1, 0.1, 0.1];
    let (uniform, uniform_bytes) = exchange(&topo, s, None);
    for split in [Split::ToDestination(&w), Split::FromSource(&w)] {
        let (skewed, bytes) = exchange(&topo, s, Some(split));
        // (N−1)·S·0.7 / ((N−1)·S/4) = 2.8; the path latency (~0.5 µs of
        // ~1 ms) is the only difference
        let ratio = skewed / uniform;
        assert!((ratio - 2.8).abs() < 0.01, "{split:?}: ratio {ratio:.4}");
        // every rank keeps its own piece: the network moves (N−1)·S either way
        assert_eq!(bytes, uniform_bytes, "{split:?}");
        assert_eq!(bytes, 3 * s);
    }
    // uniform weights through the v path: the uniform exchange exactly
    let (even, _) = exchange(&topo, s, Some(Split::ToDestination(&[0.25; 4])));
    assert_eq!(even, uniform);
}

#[test]
fn a_missing_weight_is_an_error_not_a_panic() {
    let topo = switch_of(4);
    let ranks: Vec<GpuId> = (0..4).map(GpuId).collect();
    let mut dag = Dag::new();
    dag.begin_op("alltoall");
    let e = alltoall::lower_v(
        &spec(1 << 20),
        Split::ToDestination(&[0.5, 0.5]),
        &ranks,
        &topo,
        &mut dag,
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("needs 4 weights, found 2"), "{e}");
}

const MOE: &str = "examples/training-mixtral-moe.toml";

/// The MoE example with `lines` added under `[workload.model]`.
fn moe(lines: &str) -> Result<config::Scenario, String> {
    let path = format!("{}/{MOE}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "[workload.model]\n",
        &format!("[workload.model]\n{lines}\n"),
        1,
    );
    config::parse(&path, &text).map_err(|e| e.to_string())
}

fn step(s: &config::Scenario, f: Fidelity) -> (f64, f64, f64, String) {
    let r = run(
        s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let t = r.training.as_ref().unwrap();
    let a2a = t
        .breakdown
        .iter()
        .find(|b| b.op == "ep_alltoall")
        .map_or(0.0, |b| b.time_per_gpu_s);
    let mut r = r.clone();
    r.sim = Default::default();
    r.scenario_hash = String::new();
    (t.step_time_s, t.compute_time_s, a2a, r.to_json())
}

#[test]
fn zipf_shares_follow_the_harmonic_numbers() {
    let w = config::workload::zipf_shares(8, 1.0);
    // H_8 = 761/280: the hottest expert takes 280/761 = 0.36794
    assert!((w[0] - 280.0 / 761.0).abs() < 1e-12, "{w:?}");
    assert!((w[7] - 35.0 / 761.0).abs() < 1e-12, "{w:?}");
    assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    let flat = config::workload::zipf_shares(8, 0.0);
    assert!(flat.iter().all(|&x| (x - 0.125).abs() < 1e-15));
}

#[test]
fn an_even_load_is_the_uniform_step_and_a_skewed_one_slows_it() {
    let plain = moe("").unwrap();
    let even = moe("expert_load = [5, 5, 5, 5, 5, 5, 5, 5]").unwrap();
    let zero = moe("expert_skew = 0.0").unwrap();
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let (t0, c0, a0, j0) = step(&plain, f);
        // the same step to the byte (the v path with even weights is the
        // uniform exchange)
        assert_eq!(step(&even, f).3, j0, "{f:?}");
        assert_eq!(step(&zero, f).3, j0, "{f:?}");
        // Zipf 1 over 8 experts on EP = 8 ranks: the hottest rank holds one
        // expert with 280/761 of the load, 8 × 0.368 = 2.94 times the mean
        // tokens, so its expert compute and its all-to-all link take longer
        let skew = moe("expert_skew = 1.0").unwrap();
        let (t1, c1, a1, _) = step(&skew, f);
        assert!(
            c1 > c0 && a1 > 1.5 * a0 && t1 > t0,
            "{f:?}: {t0} {t1}, {c0} {c1}, {a0} {a1}"
        );
        let steeper = moe("expert_skew = 2.0").unwrap();
        let (t2, c2, a2, _) = step(&steeper, f);
        assert!(c2 > c1 && a2 > a1 && t2 > t1, "{f:?}");
    }
}

#[test]
fn the_skew_keys_are_listed_where_they_change_nothing_and_bad_values_are_located() {
    // EP = 1: every GPU holds every expert
    let path = format!("{}/{MOE}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "[workload.model]\n",
        "[workload.model]\nexpert_skew = 1.2\n",
        1,
    ) + "\n[workload.parallel]\nexpert = 1\n";
    let s = config::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let ignored = fabricsim::run::ignored_settings(&s, Fidelity::Flow).unwrap();
    assert!(
        ignored
            .iter()
            .any(|i| i.key == "workload.model.expert_skew" && i.reason.contains("expert = 1")),
        "{ignored:?}"
    );
    for (lines, field, found) in [
        ("expert_skew = -1.0", "workload.model.expert_skew", "-1"),
        (
            "expert_skew = 1e9",
            "workload.model.expert_skew",
            "1000000000",
        ),
        (
            "expert_load = [1, 2]",
            "workload.model.expert_load",
            "2 entries",
        ),
        (
            "expert_load = [1, 1, 1, -4, 1, 1, 1, 1]",
            "workload.model.expert_load.3",
            "-4",
        ),
        (
            "expert_load = [0, 0, 0, 0, 0, 0, 0, 0]",
            "workload.model.expert_load",
            "all zero",
        ),
        (
            "expert_skew = 1.0\nexpert_load = [1, 1, 1, 1, 1, 1, 1, 1]",
            "workload.model.expert_load",
            "both",
        ),
    ] {
        let e = moe(lines).unwrap_err();
        assert!(e.contains(field) && e.contains(found), "{lines}: {e}");
        assert!(e.contains("training-mixtral-moe.toml:"), "located: {e}");
    }
}

// ---- the collective workload's all-to-allv (`workload.alltoall_skew`,
// `workload.alltoall_load`): the same lowering (`alltoall::lower_v`,
// `Split::ToDestination`) and closed forms as the MoE dispatch above

/// An all-to-all of `size` per rank over 4 one-GPU hosts on one 400 Gb/s
/// switch, with `extra` lines in `[workload]`.
fn a2a_text(op: &str, size: &str, extra: &str) -> String {
    format!(
        r#"
[cluster]
nodes = 4
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "single_switch"
[fabric]
kind = "roce"
link_rate = "400Gbps"
link_latency = "50ns"
switch_latency = "300ns"
[workload]
kind = "collective"
op = "{op}"
sizes = ["{size}"]
{extra}
[simulation]
fidelity = "flow"
"#
    )
}

fn a2a_run(size: &str, extra: &str, f: Fidelity) -> fabricsim::report::Report {
    common::run_with(
        "a2av.toml",
        &a2a_text("alltoall", size, extra),
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
}

#[test]
fn collective_alltoallv_takes_n_max_w_of_the_uniform_time() {
    let s = 64u64 << 20;
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let uniform = a2a_run("64MiB", "", f);
        let u = &uniform.collectives[0];
        assert_eq!(u.op, "alltoall");
        // [0.7, 0.1, 0.1, 0.1]: rank 0's link drains (N−1)·S·0.7 where the
        // uniform exchange drains (N−1)·S/4 per link: N·max w = 2.8. Zipf 1
        // over 4 ranks: w0 = 1/H_4 = 12/25, N·w0 = 1.92. Measured (64 MiB,
        // both fidelities): uniform 1,041.69 µs, [7,1,1,1] 2,889.90 µs
        // (2.774, −0.9%), Zipf 1 1,986.33 µs (1.907, −0.7%). The ±1% is
        // the bound the MoE test above holds; the uniform run pays 3.5% over
        // S/B at 400 Gb/s and the skewed one 2.5% (fixed per-message costs
        // not scaled by w) — not yet traced further.
        for (extra, expected) in [
            ("alltoall_load = [7, 1, 1, 1]", 2.8),
            ("alltoall_skew = 1.0", 4.0 * 12.0 / 25.0),
        ] {
            let skewed = a2a_run("64MiB", extra, f);
            let v = &skewed.collectives[0];
            assert_eq!(v.op, "alltoallv", "{extra}");
            let ratio = v.time_us / u.time_us;
            assert!(
                (ratio / expected - 1.0).abs() < 0.01,
                "{f:?} {extra}: {ratio:.4} against {expected}"
            );
            // nccl-tests' all-to-all bus bandwidth of the same buffer: S/t·(N−1)/N
            let busbw = s as f64 / (v.time_us * 1e-6) / 1e9 * 3.0 / 4.0;
            assert!((v.busbw_gbps / busbw - 1.0).abs() < 1e-9, "{extra}");
            assert!((v.algbw_gbps / u.algbw_gbps - 1.0 / ratio).abs() < 1e-9);
            if f == Fidelity::Flow {
                // every rank keeps its own share: the network carries (N−1)·S
                assert_eq!(skewed.fabric.bytes_delivered, 3 * s, "{extra}");
                assert_eq!(uniform.fabric.bytes_delivered, 3 * s);
            }
        }
        // even weights are the uniform exchange to the byte; only the row's
        // name says it went the all-to-allv way
        for extra in ["alltoall_load = [2, 2, 2, 2]", "alltoall_skew = 0.0"] {
            let mut even = a2a_run("64MiB", extra, f);
            let mut plain = uniform.clone();
            for r in [&mut even, &mut plain] {
                r.sim = Default::default();
                r.scenario_hash = String::new();
                r.collectives[0].op = String::new();
            }
            assert_eq!(even.to_json(), plain.to_json(), "{f:?} {extra}");
        }
    }
}

#[test]
fn collective_alltoallv_closed_form_agrees_with_the_flow_level() {
    // analytical = (N−1)·S·max w / B + α on a non-blocking switch (B the
    // link's payload rate), and the flow level's max-min sharing ends when
    // the hot link has drained the same load: they agree to the path's
    // latency (~0.5 µs of ~2.9 ms, 0.02%) and one chunk's pipelining
    let extra = "alltoall_load = [7, 1, 1, 1]";
    let a = a2a_run("64MiB", extra, Fidelity::Analytical);
    let f = a2a_run("64MiB", extra, Fidelity::Flow);
    let (ta, tf) = (a.collectives[0].time_us, f.collectives[0].time_us);
    println!("all-to-allv [7,1,1,1] 64 MiB: analytical {ta:.3} us, flow {tf:.3} us");
    assert!(
        (ta / tf - 1.0).abs() < 0.002,
        "analytical {ta} µs, flow {tf}"
    );
}

#[test]
fn collective_alltoallv_keys_are_listed_for_other_ops_and_bad_values_are_located() {
    for op in ["allreduce", "allgather"] {
        let text = a2a_text(op, "1MiB", "alltoall_skew = 1.5");
        let s = common::parse("a2av.toml", &text);
        let ignored = fabricsim::run::ignored_settings(&s, Fidelity::Flow).unwrap();
        assert!(
            ignored
                .iter()
                .any(|i| i.key == "workload.alltoall_skew"
                    && i.reason.contains("only an all-to-all")),
            "{op}: {ignored:?}"
        );
    }
    for (extra, field, found) in [
        ("alltoall_skew = -1.0", "workload.alltoall_skew", "-1"),
        (
            "alltoall_skew = 1e9",
            "workload.alltoall_skew",
            "1000000000",
        ),
        (
            "alltoall_load = [1, 2]",
            "workload.alltoall_load",
            "2 entries",
        ),
        (
            "alltoall_load = [1, 1, -4, 1]",
            "workload.alltoall_load.2",
            "-4",
        ),
        (
            "alltoall_load = [0, 0, 0, 0]",
            "workload.alltoall_load",
            "all zero",
        ),
        (
            "alltoall_skew = 1.0\nalltoall_load = [1, 1, 1, 1]",
            "workload.alltoall_load",
            "both",
        ),
    ] {
        let e = config::parse("a2av.toml", &a2a_text("alltoall", "1MiB", extra))
            .unwrap_err()
            .to_string();
        assert!(e.contains(field) && e.contains(found), "{extra}: {e}");
        assert!(e.contains("a2av.toml:"), "located: {e}");
    }
    // a training workload lists them as it lists every collective key (its
    // MoE skew is workload.model.expert_skew / expert_load)
    let path = format!("{}/{MOE}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "[workload]\n",
        "[workload]\nalltoall_skew = 1.0\n",
        1,
    );
    let s = config::parse(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let ignored = fabricsim::run::ignored_settings(&s, Fidelity::Analytical).unwrap();
    assert!(
        ignored.iter().any(|i| i.key == "workload.alltoall_skew"),
        "{ignored:?}"
    );
}
