//! Training steps, inference and faults against hand calculations and published
//! formulas; each test names its figure and where it comes from.

use fabricsim::backend::flow::{self, FlowConfig};
use fabricsim::backend::{LinkEvent, LinkEventKind};
use fabricsim::collective::{self, Algorithm, CollectiveOp, CollectiveSpec};
use fabricsim::config::{self, Fidelity, Scenario, TrainingSpec, WorkloadSpec};
use fabricsim::dag::{Dag, TaskKind};
use fabricsim::report::workload::TrainingReport;
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::{GpuId, NodeKind};
use fabricsim::units::SimTime;
use fabricsim::workload::training::{self, OpKind};

/// A scenario of `nodes` × `gpus` GPUs on one switch, the small model of the hand
/// calculations (L = 2, h = 1024, f = 4096, 8 heads, GELU MLP, s = 512, bf16),
/// a GPU of 100 TFLOP/s at efficiency 1 and an HBM that never binds.
fn small(nodes: u32, gpus: u32, net: &str, extra_model: &str, parallel: &str) -> Scenario {
    small_on(FABRIC, nodes, gpus, net, extra_model, parallel)
}

/// The `[fabric]` lines of [`small`]: one InfiniBand link rate, the preset latencies.
const FABRIC: &str = "link_rate = \"400Gbps\"";

/// [`small`] with `fabric` as the `[fabric]` lines after `kind` (the checked
/// scenario cannot be edited: its links are set in the text, as a user would).
fn small_on(
    fabric: &str,
    nodes: u32,
    gpus: u32,
    net: &str,
    extra_model: &str,
    parallel: &str,
) -> Scenario {
    let text = small_text(fabric, nodes, gpus, net, extra_model, parallel);
    config::parse("small.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The text of [`small_on`]'s scenario.
fn small_text(
    fabric: &str,
    nodes: u32,
    gpus: u32,
    net: &str,
    extra_model: &str,
    parallel: &str,
) -> String {
    let net = if net.is_empty() {
        "nvlink_bandwidth = \"450GB/s\""
    } else {
        net
    };
    let layers = if extra_model.contains("layers") {
        ""
    } else {
        "layers = 2"
    };
    format!(
        r#"
[cluster]
nodes = {nodes}
gpus_per_node = {gpus}
nics_per_node = {gpus}
{net}
[topology]
kind = "single_switch"
[fabric]
kind = "infiniband"
{fabric}
[workload]
kind = "training"
[workload.model]
{layers}
hidden = 1024
ffn = 4096
heads = 8
seq_len = 512
micro_batch = 1
gated_mlp = false
precision = "bf16"
{extra_model}
[workload.parallel]
{parallel}
[workload.gpu]
peak_tflops_bf16 = 100
efficiency = 1.0
hbm_bandwidth = "1000000TB/s"
[simulation]
fidelity = "analytical"
"#
    )
}

const FAST_NET: &str = r#"nvlink_bandwidth = "1000000Tbps"
nvlink_latency = "0ns"
pcie_bandwidth = "1000000Tbps"
pcie_latency = "0ns"
"#;

fn fast(nodes: u32, gpus: u32, extra_model: &str, parallel: &str) -> Scenario {
    // an infinitely fast network: 10^18 b/s everywhere, zero latency, and
    // collectives whose software costs nothing per step
    let parallel = format!("{parallel}\nstep_latency = \"0s\"\nnvlink_step_latency = \"0s\"");
    // 10^18 b/s links, no wire or switch latency
    let fabric = "link_rate = \"1000000Tbps\"\nlink_latency = \"0ns\"\nswitch_latency = \"0ns\"";
    small_on(fabric, nodes, gpus, FAST_NET, extra_model, &parallel)
}

fn spec(s: &Scenario) -> &TrainingSpec {
    match s.workload() {
        WorkloadSpec::Training(t) => t,
        _ => panic!("not a training scenario"),
    }
}

fn train(s: &Scenario, f: Fidelity) -> TrainingReport {
    run(
        s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
    .unwrap()
    .training
    .unwrap()
}

#[test]
fn compute_time_from_flops_matches_a_hand_calculation() {
    // Attention params 4h² = 4 194 304; MLP (GELU) 2hf = 8 388 608.
    // Forward FLOPs per token: attention 2·4 194 304 + 4·s·h = 8 388 608 + 2 097 152
    // = 10 485 760, × 512 tokens = 5.36870912e9 → 53.6870912 us at 100 TFLOP/s;
    // MLP 2·8 388 608 × 512 = 8.589934592e9 → 85.89934592 us. Backward = 2 × forward.
    // Output head (vocab 1000): 2·h·V·512 = 1.048576e9 → 10.48576 us forward.
    let s = small(1, 1, "", "vocab = 1000\nglobal_batch = 2", "");
    let t = training::layer_times(spec(&s), 0);
    let us = |x: SimTime| x.as_secs_f64() * 1e6;
    assert!((us(t[0]) - 53.687_091_2).abs() < 1e-6, "{}", us(t[0]));
    assert!((us(t[1]) - 85.899_345_92).abs() < 1e-6, "{}", us(t[1]));
    assert!((us(t[2]) - 2.0 * 85.899_345_92).abs() < 1e-6);
    assert!((us(t[3]) - 2.0 * 53.687_091_2).abs() < 1e-6);
    assert!((us(training::head_time(spec(&s))) - 10.485_76).abs() < 1e-6);
    // One GPU, 2 micro-batches: step = 2 × (2 layers × 3 × (53.687 + 85.899) + 3 × 10.486)
    // = 2 × (837.5178 + 31.4573) = 1737.9502 us.
    let r = train(&s, Fidelity::Analytical);
    let want = 2.0 * (2.0 * 3.0 * (53.687_091_2 + 85.899_345_92) + 3.0 * 10.485_76);
    assert!(
        (r.step_time_s * 1e6 - want).abs() < 1e-3,
        "{} us vs {want} us",
        r.step_time_s * 1e6
    );
    assert!((r.compute_time_s * 1e6 - want).abs() < 1e-3);
    // One GPU: no communication and no pipeline, so the step, the step with free
    // communication and the compute are the same figure. (exposed_comm_s and
    // bubble_s are clamped at zero, so `< 1e-12` on them could not catch a
    // step shorter than its compute; their unclamped differences can.)
    assert!((r.step_time_s - r.free_comm_step_s).abs() < 1e-12);
    assert!((r.free_comm_step_s - r.compute_time_s).abs() < 1e-12);
}

#[test]
fn infinitely_fast_network_gives_step_time_equal_to_compute() {
    // TP = 2 inside a node, DP = 2 across two nodes, 4 micro-batches: with 10^18 b/s
    // links and no latency every collective takes ≤ a few picoseconds per step.
    let s = fast(
        2,
        2,
        "vocab = 1000\nglobal_batch = 8",
        "data = 2\ntensor = 2",
    );
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let r = train(&s, f);
        let rel = (r.step_time_s - r.compute_time_s) / r.compute_time_s;
        assert!(
            rel.abs() < 1e-6,
            "{f:?}: step {} vs compute {}",
            r.step_time_s,
            r.compute_time_s
        );
    }
}

#[test]
fn exposed_communication_is_the_part_overlap_cannot_hide() {
    // DP = 2 over two hosts at 10 Gb/s, one micro-batch, buckets of one layer
    // (bucket = 1 byte closes a bucket after every layer). Vocab 1 makes the head's
    // bucket negligible. Backward order: head, layer 1, layer 0. The all-reduce of
    // layer 1's gradients (C1) starts when layer 1's backward ends (t1) and overlaps
    // layer 0's backward (B0); layer 0's (C0, plus the embedding) waits for it. With
    // C1 > B0: step = t1 + C1 + C0, free-communication step = t1 + B0, so
    // exposed = C1 + C0 − B0 (C from the ring closed form on the same topology,
    // under the protocol NCCL's tuner picks for it, with its step latency).
    let s = small_on(
        "link_rate = \"10Gbps\"",
        2,
        1,
        "",
        "vocab = 1\nglobal_batch = 2",
        "data = 2\nbucket = 1\ndp_algorithm = \"ring\"",
    );
    let topo = s.build_topology().unwrap();
    let t = spec(&s);
    let times = training::layer_times(t, 0);
    let b0 = times[2] + times[3];
    let layer = (4 + 8) * 1024 * 1024u64; // 4h² + 2hf parameters
    let ar = |params: u64| {
        let sp = CollectiveSpec {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            bytes: params * 2,
            chunk_bytes: u64::MAX,
            inter_host: Algorithm::Ring,
            root: 0,
            channels: 1,
            pxn: true,
            proto: fabricsim::collective::ProtoCost::NONE,
        };
        let ranks = [GpuId(0), GpuId(1)];
        let (_, proto) = collective::tune(&sp, false, None, None, None, &ranks, &topo).unwrap();
        let sp = CollectiveSpec { proto, ..sp };
        collective::analytical_time(&sp, &ranks, &topo).unwrap()
    };
    let c1 = ar(layer);
    let c0 = ar(layer + 1024); // + input embedding h·V = 1024
    assert!(c1 > b0, "the hand case needs C1 > B0");
    let want = (c1 + c0 - b0).as_secs_f64();
    // the flow fidelity agrees: two hosts on one switch, nothing to contend for
    for (f, tol) in [(Fidelity::Analytical, 1e-10), (Fidelity::Flow, 1e-8)] {
        let r = train(&s, f);
        assert!(
            (r.exposed_comm_s - want).abs() < tol,
            "{f:?}: exposed {} s vs hand {} s",
            r.exposed_comm_s,
            want
        );
    }
}

fn dp_bytes(s: &Scenario) -> (u64, usize) {
    let topo = s.build_topology().unwrap();
    let step = training::build(spec(s), &topo).unwrap();
    let mut bytes = 0;
    for task in step.dag.tasks() {
        if let TaskKind::Transfer { bytes: b, .. } = task.kind {
            if step.ops[task.op as usize].kind == OpKind::DataParallelGrad {
                bytes += b;
            }
        }
    }
    let n = step
        .ops
        .iter()
        .filter(|o| o.kind == OpKind::DataParallelGrad)
        .count();
    (bytes, n)
}

#[test]
fn gradient_accumulation_divides_dp_traffic_per_micro_batch() {
    // DP = 2, micro-batch 1: global batch 2 is k = 1 micro-batch, 8 is k = 4. The
    // gradients are reduced once per step, so the step's DP bytes are equal and the
    // bytes per micro-batch fall by k.
    let one = small(2, 1, "", "vocab = 1000\nglobal_batch = 2", "data = 2");
    let four = small(2, 1, "", "vocab = 1000\nglobal_batch = 8", "data = 2");
    assert_eq!(spec(&four).micro_batches(), 4);
    let (b1, n1) = dp_bytes(&one);
    let (b4, n4) = dp_bytes(&four);
    // The step's DP bytes by hand: parameters 2 layers × (attention 4h² + MLP
    // 2hf) + embeddings 2·h·vocab = 2 × (4 × 1024² + 2 × 1024 × 4096) + 2 × 1024
    // × 1000 = 27,213,824; bf16 gradients S = 2 B each = 54,427,648 B; a ring
    // all-reduce over 2 ranks sends 2(n−1)/n·S = S from each rank, 2S in all.
    let grads = 2 * (4 * 1024 * 1024 + 2 * 1024 * 4096) + 2 * 1024 * 1000;
    assert_eq!(b1, 2 * (2 * grads), "one micro-batch: DP bytes of the step");
    // Accumulating over k = 4 micro-batches reduces the same gradients once:
    // the same bytes in the same number of collectives, so a quarter per
    // micro-batch (a reduction per micro-batch would make b4 = 4·b1).
    assert_eq!(
        (b4, n4),
        (b1, n1),
        "k = 4: DP bytes and collectives of the step"
    );
}

#[test]
fn one_f_one_b_bubble_is_p_minus_1_over_m_plus_p_minus_1() {
    // Narayanan et al., SC 2021, §2.2: the 1F1B bubble fraction is (p−1)/(m+p−1).
    // p = 4 stages (8 layers), m = 8 micro-batches, infinitely fast network, vocab 1
    // (head ≈ 0): 3/11 = 0.2727.
    let s = fast(
        4,
        1,
        "layers = 8\nvocab = 1\nglobal_batch = 8",
        "pipeline = 4",
    );
    let r = train(&s, Fidelity::Analytical);
    let frac = (r.step_time_s - r.compute_time_s) / r.step_time_s;
    let want = 3.0 / 11.0;
    assert!((frac - want).abs() < 1e-3, "bubble {frac} vs {want}");
    assert!((r.bubble_s / r.step_time_s - want).abs() < 1e-3);
    assert_eq!(
        training::one_f_one_b(3, 4, 2),
        vec![(true, 0), (false, 0), (true, 1), (false, 1)]
    );
}

#[test]
fn a_straggler_twice_slower_sets_the_synchronous_step() {
    // DP = 4, GPU 2 at half speed. Every replica waits for its gradients, so the
    // step is at least that GPU's compute, 2 × the healthy compute.
    let (model, parallel) = ("vocab = 1000\nglobal_batch = 8", "data = 4");
    let healthy = train(&small(4, 1, "", model, parallel), Fidelity::Analytical);
    let text = small_text(FABRIC, 4, 1, "", model, parallel)
        + "[[faults]]\nname = \"slow\"\nkind = \"slow_gpu\"\ngpu = 2\nfactor = 2.0\nat = \"0s\"\n";
    let s = config::parse("slow.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let r = train(&s, f);
        assert!(
            (r.compute_time_s - 2.0 * healthy.compute_time_s).abs() < 1e-9,
            "{f:?}"
        );
        assert!(r.step_time_s >= r.compute_time_s, "{f:?}");
        assert_eq!(r.faults.len(), 1);
        assert!(r.step_time_s >= 2.0 * healthy.compute_time_s, "{f:?}");
        assert!(
            r.faults[0].step_time_s > r.faults[0].healthy_step_time_s,
            "{f:?}"
        );
    }
}

#[test]
fn a_link_down_mid_collective_still_delivers_every_byte() {
    // Ring all-reduce of 64 MiB over 8 hosts on a leaf-spine with 2 spines; halfway
    // through, a leaf→spine link that carries traffic goes down. Flows on it move to
    // the other spine with their remaining bytes: the collective completes, every
    // byte arrives, and it is not faster than the healthy run.
    let text = r#"
[cluster]
nodes = 8
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "leaf_spine"
radix = 4
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "ring"
sizes = ["64MiB"]
"#;
    let s = config::parse("ls.toml", text).unwrap();
    let topo = s.build_topology().unwrap();
    let ranks: Vec<GpuId> = (0..8).map(GpuId).collect();
    let spec = CollectiveSpec {
        op: CollectiveOp::AllReduce,
        algorithm: Algorithm::Ring,
        bytes: 64 << 20,
        chunk_bytes: 1 << 20,
        channels: 1,
        pxn: true,
        proto: fabricsim::collective::ProtoCost::NONE,
        inter_host: Algorithm::Ring,
        root: 0,
    };
    let mut dag = Dag::new();
    dag.begin_op("allreduce");
    collective::lower(&spec, &ranks, &topo, &mut dag, &[]).unwrap();
    let healthy = flow::run(&dag, &topo, &FlowConfig::default()).unwrap();
    // the busiest leaf→spine link
    let up = healthy
        .links
        .iter()
        .filter(|l| {
            let link = &topo.links[l.link as usize];
            matches!(
                topo.nodes[link.from.0 as usize].kind,
                NodeKind::Switch { tier: 0 }
            ) && matches!(
                topo.nodes[link.to.0 as usize].kind,
                NodeKind::Switch { tier: 1 }
            )
        })
        .max_by_key(|l| l.bytes)
        .expect("traffic crosses a spine");
    let cfg = FlowConfig {
        seed: 0,
        link_events: vec![LinkEvent {
            at: SimTime(healthy.makespan.0 / 2),
            link: fabricsim::topology::LinkId(up.link),
            kind: LinkEventKind::Down,
        }],
        ..Default::default()
    };
    let out = flow::run(&dag, &topo, &cfg).unwrap();
    assert_eq!(out.fabric.bytes_delivered, dag.transfer_bytes());
    assert_eq!(healthy.fabric.bytes_delivered, dag.transfer_bytes());
    assert!(out.makespan >= healthy.makespan);
    assert!(out.events > healthy.events);
    // nothing crossed the dead link after it went down
    let after = out
        .links
        .iter()
        .find(|l| l.link == up.link)
        .map_or(0, |l| l.bytes);
    assert!(after < up.bytes, "{after} vs {}", up.bytes);
}

#[test]
fn inference_reports_tpot_percentiles() {
    let s = config::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/inference-llama2-70b.toml"
    )))
    .unwrap();
    let r = run(
        &s,
        &RunOptions {
            fidelity: Some(Fidelity::Analytical),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let i = r.inference.unwrap();
    assert_eq!(i.requests, 8);
    assert!(i.tpot_ms.p50 > 0.0 && i.tpot_ms.p99 >= i.tpot_ms.p50);
    // Decode is memory-bound: at least the GPU's weights (≈ 69e9 × 2 B / 8) per token
    // at 3.35 TB/s ≈ 5.1 ms.
    assert!(i.tpot_ms.p50 > 5.0, "{:?}", i.tpot_ms);
}

#[test]
fn training_presets_validate_and_the_70b_one_runs() {
    let s = config::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/training-llama2-70b.toml"
    )))
    .unwrap();
    let t = spec(&s);
    assert_eq!((t.plan.dp, t.plan.tp, t.plan.pp), (16, 8, 4));
    assert_eq!(t.micro_batches(), 64);
    let r = train(&s, Fidelity::Analytical);
    assert!(r.mfu > 0.2 && r.mfu < 0.5, "{}", r.mfu);
    assert!((r.params / 1e9 - 69.0).abs() < 1.0, "{}", r.params);
}

#[test]
fn moe_preset_adds_expert_all_to_all_on_the_critical_path() {
    // Mixtral-8x7B preset (TP=2, DP=32, EP=8 on 64 GPUs), 32 sequences = 1
    // micro-batch per replica. Per MoE layer and micro-batch each EP group runs 4
    // all-to-alls (dispatch and combine, forward and backward) per tensor rank:
    // 32 layers × 4 × (32/8 groups × 2 ranks) = 1024. Each GPU sends
    // s·top_k·h·2 B / TP = 4096·2·4096·2/2 B = 32 MiB per all-to-all, 7/8 of it
    // to its 7 peers.
    let text = r#"
[cluster]
preset = "dgx-h100-node"
nodes = 8
[topology]
kind = "rail_optimized"
[fabric]
preset = "ib-ndr-400"
[workload]
kind = "training"
preset = "mixtral-8x7b"
[workload.model]
global_batch = 32
[simulation]
fidelity = "analytical"
"#;
    let s = config::parse("moe.toml", text).unwrap();
    let r = train(&s, Fidelity::Analytical);
    let a2a = r
        .breakdown
        .iter()
        .find(|o| o.op == "ep_alltoall")
        .expect("all-to-all");
    assert_eq!(a2a.count, 1024);
    assert_eq!(a2a.bytes, 1024 * 8 * (32 << 20) * 7 / 8);
    assert!((r.params / 1e9 - 46.7).abs() < 0.5, "{}", r.params);
    assert!(r.exposed_comm_s > 0.0 && r.mfu > 0.0);
}

#[test]
fn every_plan_shape_runs_at_both_fidelities() {
    // ZeRO 0..3 × sequence parallelism × pipeline 1/2 × dense/MoE on 2 nodes of 4
    // GPUs (TP=2): each step completes, is at least its compute, and the flow
    // fidelity agrees with the analytical one within 25% on this small fabric.
    for zero in 0..=3 {
        for sp in [false, true] {
            for (pp, dp) in [(1, 4), (2, 2)] {
                for moe in [false, true] {
                    let model = if moe {
                        "vocab = 1000\nglobal_batch = 8\nexperts = 4\ntop_k = 2"
                    } else {
                        "vocab = 1000\nglobal_batch = 8"
                    };
                    let ep = if moe { dp.min(2) } else { 1 };
                    let parallel = format!(
                        "data = {dp}\ntensor = 2\npipeline = {pp}\nexpert = {ep}\nzero = {zero}\nsequence_parallel = {sp}\nbucket = \"4MiB\""
                    );
                    let s = small(2, 4, "", model, &parallel);
                    let a = train(&s, Fidelity::Analytical);
                    let f = train(&s, Fidelity::Flow);
                    let what = format!("zero {zero} sp {sp} pp {pp} moe {moe}");
                    for r in [&a, &f] {
                        assert!(r.step_time_s >= r.compute_time_s, "{what}");
                        // exposed_comm_s is clamped at zero, so test the relation
                        // it clamps: the step costs more than the same step with
                        // free communication, since the last gradient bucket's
                        // all-reduce crosses the network after the last backward
                        // pass and nothing is left to hide it behind.
                        assert!(r.step_time_s > r.free_comm_step_s, "{what}");
                        assert!(r.exposed_comm_s > 0.0 && r.mfu > 0.0, "{what}");
                    }
                    let ratio = f.step_time_s / a.step_time_s;
                    assert!(
                        (0.99..1.25).contains(&ratio),
                        "{what}: flow/analytical {ratio}"
                    );
                    if zero == 3 {
                        assert!(a.breakdown.iter().any(|o| o.op == "zero_param_allgather"));
                    }
                    if moe {
                        assert!(a.breakdown.iter().any(|o| o.op == "ep_alltoall"), "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_step_too_large_to_build_is_refused_not_attempted() {
    // 2^24 sequences of the 70B preset with every replica built would be ~10^13
    // tasks: the run says so instead of exhausting memory.
    let text = r#"
[cluster]
preset = "dgx-h100-node"
nodes = 64
[topology]
kind = "rail_optimized"
[fabric]
preset = "ib-ndr-400"
[workload]
kind = "training"
preset = "llama2-70b"
[workload.model]
global_batch = 16777216
"#;
    // refused by validation (issue 12: the estimate comes before anything is
    // built, and `validate` refuses too), at the key to change
    let e = config::parse("huge.toml", text).unwrap_err();
    let d = &e.diagnostics[0];
    assert_eq!(d.field, "workload.parallel.replicas", "{e}");
    assert!(d.expected.contains("replicas = \"one\""), "{e}");
    assert!(d.expected.contains("simulation.max_memory"), "{e}");
    // sizes beyond the model bounds are validation errors on the field
    let e = config::parse("huge.toml", &text.replace("16777216", "16777217")).unwrap_err();
    assert_eq!(e.diagnostics[0].field, "workload.model.global_batch", "{e}");
}

#[test]
fn a_slow_gpu_slows_every_decode_step_of_a_tensor_parallel_batch() {
    // TP = 8 decode: every layer ends in an all-reduce over all 8 GPUs, so one GPU
    // at half speed sets the pace: the batch takes close to 2× (communication
    // does not slow down, so a little less).
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/inference-llama2-70b.toml"
    ))
    .unwrap();
    let text = format!("{base}\n[[faults]]\nkind = \"slow_gpu\"\ngpu = 5\nfactor = 2.0\n")
        .replace("output_tokens = 32", "output_tokens = 4")
        .replace("output_tokens_max = 64", "output_tokens_max = 8");
    let s = config::parse("inf.toml", &text).unwrap();
    let r = run(
        &s,
        &RunOptions {
            fidelity: Some(Fidelity::Analytical),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let i = r.inference.unwrap();
    assert_eq!(i.faults.len(), 1);
    let f = &i.faults[0];
    assert!(f.slowdown > 1.5 && f.slowdown <= 2.0, "{f:?}");
    assert!((i.total_ms / 1e3 - f.step_time_s).abs() < 1e-9);
}
