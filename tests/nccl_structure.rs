//! Collectives as NCCL runs them (issue 10): channels over every NIC, NVLS,
//! hierarchical reduce-scatter and all-gather, and an analytical fidelity that
//! is an honest lower bound of the flow fidelity. Each test states its figure
//! and its source.

use fabricsim::config::{self, Fidelity, Scenario};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

fn scenario(text: &str) -> Scenario {
    config::parse("test.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn at(s: &Scenario, f: Fidelity) -> Report {
    run(
        s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// `nodes` DGX H100 on the rail-optimized NDR fabric of the `dgx-h100-ndr`
/// preset cluster, one collective.
fn dgx(nodes: u32, op: &str, algorithm: &str, sizes: &str) -> Scenario {
    scenario(&format!(
        r#"
[cluster]
preset = "dgx-h100-node"
nodes = {nodes}
[topology]
kind = "rail_optimized"
radix = 64
[fabric]
preset = "ib-ndr-400"
[workload]
op = "{op}"
algorithm = "{algorithm}"
sizes = {sizes}
"#
    ))
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() / want <= tol
}

#[test]
fn one_dgx_h100_ring_reaches_the_nvlink_busbw_nccl_measures() {
    // NVIDIA's nccl-tests maintainers: ~370 GB/s ring all-reduce busbw on
    // 8 x H100 ("protocol overhead ~20%" of NVLink's 450 GB/s). The preset's
    // nvlink_efficiency is calibrated on this one figure (370/450), so this
    // checks the channel and protocol layers keep it, at both fidelities.
    let s = dgx(1, "allreduce", "ring", r#"["1GiB", "4GiB"]"#);
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        for row in &at(&s, f).collectives {
            assert!(
                within(row.busbw_gbps, 370.0, 0.10),
                "{f:?} {} B: busbw {:.1} GB/s, want 370 ± 10%",
                row.bytes,
                row.busbw_gbps
            );
        }
    }
}

#[test]
fn one_dgx_h100_nvls_reaches_480_gbps_busbw() {
    // Maintainers' figure: ~480 GB/s busbw with NVLink SHARP on 8 x H100.
    // Not fitted: NVLink at 370 GB/s (above) x 8/9 (NVLS moves S + S/8 per
    // link) x 2·7/8 (busbw factor) x 5/6 (NCCL tuning.cc's NVLS bandwidth
    // share) = 479.6 GB/s.
    let s = dgx(1, "allreduce", "nvls", r#"["1GiB", "4GiB"]"#);
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        for row in &at(&s, f).collectives {
            assert_eq!(row.algorithm, "nvls");
            assert!(
                within(row.busbw_gbps, 480.0, 0.10),
                "{f:?} {} B: NVLS busbw {:.1} GB/s, want 480 ± 10%",
                row.bytes,
                row.busbw_gbps
            );
        }
    }
    // auto picks NVLS for large all-reduces inside an H100 node, as NCCL does
    let auto = dgx(1, "allreduce", "auto", r#"["1GiB"]"#);
    assert_eq!(
        at(&auto, Fidelity::Analytical).collectives[0].algorithm,
        "nvls"
    );
    // packet level: no switch endpoints, so nvls runs as the ring (and says so)
    let pkt = at(
        &dgx(1, "allreduce", "nvls", r#"["64MiB"]"#),
        Fidelity::Packet,
    );
    assert!(pkt
        .ignored_settings
        .iter()
        .any(|i| i.key == "workload.algorithm" && i.reason.contains("ring")));
}

#[test]
fn nvls_tree_across_two_nodes_pipelines_the_switch_and_the_network() {
    // NCCL runs NVLS_TREE for large multi-node all-reduces on H100. NVIDIA's
    // maintainers state ~400 GB/s peak all-reduce busbw on 2 x 8 H100 with
    // 8 x 400G InfiniBand (nccl-tests#309). Not fitted to it: NCCL's tuner
    // (src/graph/tuning.cc) credits NVLS_TREE on two nodes with 0.70 of its
    // bus bandwidth where single-node NVLS gets 5/6, so the 480 GB/s NVLS
    // stage (above) runs at 480 x 0.70 / (5/6) = 403 GB/s; each NIC carries
    // only its rail's S/8 each way (705 GB/s of network headroom), so that
    // is the limit once switch, network and multicast overlap by chunk.
    // Without chunk pipelining the three stages added up (204 GB/s).
    let s = dgx(2, "allreduce", "nvls", r#"["1GiB"]"#);
    let flow = &at(&s, Fidelity::Flow).collectives[0];
    let ana = &at(&s, Fidelity::Analytical).collectives[0];
    assert_eq!(flow.algorithm, "nvls");
    assert!(
        within(flow.busbw_gbps, 400.0, 0.10),
        "NVLS-tree on 2 nodes: busbw {:.1} GB/s, want 400 ± 10%",
        flow.busbw_gbps
    );
    // the closed form is a lower bound within 10% (issue 10's analytical rule)
    assert!(
        ana.time_us <= flow.time_us && flow.time_us <= 1.10 * ana.time_us,
        "analytical {:.1} us vs flow {:.1} us",
        ana.time_us,
        flow.time_us
    );
    // and it beats the 8-channel ring there (369 GB/s; measured 414), so auto
    // picks it at 1 GiB, as NCCL's tuner does
    let ring = &at(&dgx(2, "allreduce", "ring", r#"["1GiB"]"#), Fidelity::Flow).collectives[0];
    assert!(flow.time_us < ring.time_us);
    let auto = dgx(2, "allreduce", "auto", r#"["1GiB"]"#);
    assert_eq!(
        at(&auto, Fidelity::Analytical).collectives[0].algorithm,
        "nvls"
    );
}

#[test]
fn multi_node_ring_channels_use_all_eight_nics() {
    // NVIDIA's maintainers quote 46-48 GB/s per NDR NIC, so 8 NICs give
    // ~8 x 47 = 376 GB/s busbw for a multi-node ring; a flat one-channel ring
    // left every node through one NIC (45 GB/s on 4 nodes before issue 10).
    // The per-NIC figure calibrates nic_efficiency; the 8-NIC total is checked.
    for nodes in [2, 4, 16] {
        let s = dgx(nodes, "allreduce", "ring", r#"["1GiB"]"#);
        for f in [Fidelity::Analytical, Fidelity::Flow] {
            let r = at(&s, f);
            let row = &r.collectives[0];
            assert_eq!(row.channels, 8, "one channel per NIC");
            assert!(
                within(row.busbw_gbps, 8.0 * 47.0, 0.10),
                "{nodes} nodes {f:?}: busbw {:.1} GB/s, want 376 ± 10%",
                row.busbw_gbps
            );
            if f == Fidelity::Flow {
                // each NIC carries one channel's share: ~47 GB/s on the wire
                let wire = row.wirebw_gbps.expect("flow measures the NICs");
                assert!(within(wire, 47.0, 0.10), "{nodes} nodes: wirebw {wire:.1}");
            }
        }
    }
    // one channel: the old flat ring, one NIC per node
    let text = r#"
[cluster]
preset = "dgx-h100-node"
nodes = 4
[topology]
kind = "rail_optimized"
radix = 64
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "ring"
channels = 1
protocol = "simple"
sizes = ["1GiB"]
"#;
    let busbw = at(&scenario(text), Fidelity::Flow).collectives[0].busbw_gbps;
    assert!(busbw < 50.0, "one channel, one NIC: {busbw:.1} GB/s");
}

#[test]
fn hierarchical_phases_pipeline_up_to_the_nvlink_bound() {
    // Issue 10: the hierarchical phases waited on each other (225 GB/s busbw
    // at 1 GiB on 4 DGX H100). Pipelined by blocks, NVLink and the network
    // work at once, so the busiest resource sets the time: each GPU's NVLink
    // carries the reduce-scatter and the all-gather, 2·(7/8)·S at 370 GB/s
    // (the preset's calibrated NVLink), i.e. busbw = 2·31/32 / (2·7/8) × 370
    // = 409.6 GB/s, while each NIC needs only 2·3/4·S/8 at 47 GB/s (486 GB/s
    // of busbw). Flow must come within 10% of the NVLink bound (measured
    // 408.1), and the analytical fidelity stay a lower bound of it (409.6).
    let s = dgx(4, "allreduce", "hierarchical", r#"["1GiB"]"#);
    let flow = &at(&s, Fidelity::Flow).collectives[0];
    let ana = &at(&s, Fidelity::Analytical).collectives[0];
    assert!(
        within(flow.busbw_gbps, 409.6, 0.10),
        "pipelined hierarchical: busbw {:.1} GB/s, want 409.6 ± 10%",
        flow.busbw_gbps
    );
    assert!(ana.time_us <= flow.time_us);
}

#[test]
fn hierarchical_reduce_scatter_and_all_gather_take_half_an_all_reduce() {
    // Issue 10: they used to run a whole all-reduce. On 4 DGX H100 each moves
    // (N−1)·S bytes against 2(N−1)·S, so it takes half the time, plus the
    // step latencies of its pipeline blocks, which the all-reduce hides under
    // its NVLink bound: 16 blocks × 7 NVLink ring steps × 3.4 us (Simple's
    // hwLat) = 381 us more (measured 0.562 analytical, 0.554–0.560 flow).
    let s = |op| dgx(4, op, "hierarchical", r#"["1GiB"]"#);
    let blocks = fabricsim::collective::hierarchical::MAX_PIPELINE_BLOCKS as f64;
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let ar = at(&s("allreduce"), f);
        let latencies = blocks * 7.0 * 3.4 / ar.collectives[0].time_us;
        for op in ["reducescatter", "allgather"] {
            let r = at(&s(op), f);
            let ratio = r.collectives[0].time_us / ar.collectives[0].time_us;
            assert!(
                (0.49..=0.5 + latencies * 1.1).contains(&ratio),
                "{f:?} {op}: {ratio:.3} of an all-reduce (latencies {latencies:.3})"
            );
            assert_eq!(2 * r.fabric.bytes_delivered, ar.fabric.bytes_delivered);
        }
    }
}

/// Runs `text` at both fidelities and checks analytical ≤ flow ≤ `slack` ×
/// analytical for every size (issue 10: the analytical fidelity must be an
/// honest lower bound, never reversing an ordering flow shows).
fn lower_bound_within(text: &str, what: &str, slack: f64) {
    let s = scenario(text);
    let ana = at(&s, Fidelity::Analytical);
    let flow = at(&s, Fidelity::Flow);
    for (a, f) in ana.collectives.iter().zip(&flow.collectives) {
        assert!(
            a.time_us <= f.time_us * 1.0001 && f.time_us <= a.time_us * slack,
            "{what} {} B: analytical {:.2} us, flow {:.2} us",
            a.bytes,
            a.time_us,
            f.time_us
        );
    }
}

#[test]
fn analytical_bounds_a_hierarchical_all_reduce_through_one_shared_nic() {
    // 8 DGX H100 with one NIC each: the 8 rails' all-reduces share it. The
    // analytical time used to cost each rail alone (79% too fast); now the
    // busiest link bounds the inter-host phase. Measured flow/analytical: 1.000.
    lower_bound_within(
        r#"
[cluster]
preset = "dgx-h100-node"
nodes = 8
nics_per_node = 1
[topology]
kind = "leaf_spine"
radix = 16
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "hierarchical"
sizes = ["256MiB", "1GiB"]
"#,
        "1-NIC hierarchical",
        1.10,
    );
}

/// 32 hosts, 16 host ports and 4 uplinks per leaf (4:1), all-to-all.
fn alltoall_4_to_1(qps: u32) -> String {
    format!(
        r#"
[cluster]
nodes = 32
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "leaf_spine"
radix = 20
oversubscription = 4.0
[fabric]
kind = "roce"
link_rate = "100Gbps"
qps_per_connection = {qps}
[workload]
op = "alltoall"
algorithm = "direct"
sizes = ["64MiB", "256MiB"]
"#
    )
}

#[test]
fn analytical_bounds_an_all_to_all_on_a_4_to_1_fabric() {
    // The uplinks bind. The analytical time used to be 72% too fast; now it is
    // the graph's bound, every piece spread evenly over the uplinks. The flow
    // fidelity pins each connection's queue pair to one ECMP path, as NICs do:
    // with one queue pair per connection the collisions persist (measured
    // flow/analytical 1.22 at 64 and 256 MiB); with four, NCCL's usual setting
    // on RoCE (NCCL_IB_QPS_PER_CONNECTION = 4), they even out: 1.09 and 1.08,
    // within the issue's 10%.
    lower_bound_within(&alltoall_4_to_1(4), "4:1 all-to-all, 4 QPs", 1.10);
    let one = at(&scenario(&alltoall_4_to_1(1)), Fidelity::Flow);
    let four = at(&scenario(&alltoall_4_to_1(4)), Fidelity::Flow);
    for (a, b) in one.collectives.iter().zip(&four.collectives) {
        assert!(
            a.time_us > b.time_us * 1.05,
            "{} B: one QP {:.1} us, four {:.1} us",
            a.bytes,
            a.time_us,
            b.time_us
        );
    }
}

#[test]
fn protocol_auto_picks_low_latency_for_small_and_simple_for_large() {
    // NCCL's tuner: LL for a few bytes (0.6 us a step over NVLink against
    // Simple's 3.4), Simple or LL128 for large messages where LL's halved
    // bandwidth costs more than its latency saves.
    let s = dgx(2, "allreduce", "ring", r#"["8", "1GiB"]"#);
    let r = at(&s, Fidelity::Analytical);
    assert_eq!(r.collectives[0].protocol, "ll");
    assert_ne!(r.collectives[1].protocol, "ll");
    // LL sends twice the bytes: a forced LL ring runs at half the busbw
    let one_node = |proto: &str| {
        scenario(&format!(
            r#"
[cluster]
preset = "dgx-h100-node"
nodes = 1
[topology]
kind = "single_switch"
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "ring"
protocol = "{proto}"
sizes = ["1GiB"]
"#
        ))
    };
    let (ll, simple) = (one_node("ll"), one_node("simple"));
    let (a, b) = (
        at(&ll, Fidelity::Flow).collectives[0].busbw_gbps,
        at(&simple, Fidelity::Flow).collectives[0].busbw_gbps,
    );
    assert!(within(a / b, 0.5, 0.01), "LL {a:.1} vs Simple {b:.1}");
}

#[test]
fn flow_and_packet_put_each_queue_pair_on_the_same_ecmp_path() {
    // Issue 10: the flow fidelity hashed every transfer anew while the packet
    // level pins one path per queue pair, as NICs do, so flow averaged away the
    // collisions of NCCL's long-lived connections. Both now route a
    // connection's queue pair by one hash (topology::qp_hash), so on a k = 4
    // fat-tree with ECMP every (pair, queue pair) crosses the same switch links
    // at both fidelities, and they agree on which connections collide.
    // fabric.qps_per_connection = 4 gives a connection four paths to spread on.
    use fabricsim::dag::Dag;
    use fabricsim::topology::{GpuId, NodeKind};
    use std::collections::BTreeSet;
    let s = scenario(
        r#"
[cluster]
nodes = 16
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "fat_tree"
k = 4
[fabric]
preset = "ib-ndr-400"
qps_per_connection = 4
[workload]
op = "allreduce"
sizes = ["1MiB"]
"#,
    );
    let topo = s.build_topology_for(Fidelity::Flow).unwrap();
    let ptopo = s.build_topology_for(Fidelity::Packet).unwrap();
    let is_fabric = |l: u32| {
        let link = topo.link(fabricsim::topology::LinkId(l));
        matches!(topo.node(link.from).kind, NodeKind::Switch { .. })
            && matches!(topo.node(link.to).kind, NodeKind::Switch { .. })
    };
    let bytes = 256u64 << 10;
    let mut paths_of_pair: Vec<BTreeSet<Vec<u32>>> = Vec::new();
    for (src, dst) in [(0u32, 8u32), (1, 12), (2, 9), (5, 14), (3, 15), (6, 11)] {
        let mut seen = BTreeSet::new();
        for qp in 0..4u8 {
            let mut dag = Dag::new();
            dag.begin_op("transfer");
            let t = dag.transfer(GpuId(src), GpuId(dst), bytes, &[]);
            dag.set_qp(t, qp);
            let flow = fabricsim::backend::flow::run(
                &dag,
                &topo,
                &fabricsim::backend::flow::FlowConfig {
                    seed: s.seed(),
                    ..Default::default()
                },
            )
            .unwrap();
            let pkt = fabricsim::backend::packet::run(
                &dag,
                &ptopo,
                &fabricsim::run::packet_config(&s, s.seed()),
            )
            .unwrap();
            // the data's links (ACKs travel the reverse direction and carry little)
            let used = |out: &fabricsim::backend::RunOutput| -> Vec<u32> {
                out.links
                    .iter()
                    .filter(|l| l.bytes >= bytes / 2 && is_fabric(l.link))
                    .map(|l| l.link)
                    .collect::<BTreeSet<u32>>()
                    .into_iter()
                    .collect()
            };
            let (f, p) = (used(&flow), used(&pkt));
            assert!(!f.is_empty(), "{src}->{dst} crosses the fabric");
            assert_eq!(f, p, "{src}->{dst} qp {qp}: flow {f:?} vs packet {p:?}");
            seen.insert(f);
        }
        paths_of_pair.push(seen);
    }
    // four queue pairs spread a connection over more than one path
    assert!(
        paths_of_pair.iter().any(|p| p.len() > 1),
        "queue pairs all hash to one path: {paths_of_pair:?}"
    );
}

#[test]
fn sharp_small_messages_gain_about_two_x_over_the_tree() {
    // Issue 10: SHARP's 8-byte time had no host overhead, 12.9x faster than a
    // host algorithm where published measurements show about 2x. The host now
    // pays NCCL's CollNet network latency (tuning.cc hwLat, 31 us) on the
    // result's delivery; the tree pays LL's per-step latencies. Measured on the
    // 256-GPU SHARP example: 32.3 us against 55.3 us, 1.7x.
    let text = std::fs::read_to_string(format!(
        "{}/examples/allreduce-infiniband-sharp.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let with = |algo: &str| {
        let t = text
            .replace("algorithm = \"sharp\"", &format!("algorithm = \"{algo}\""))
            .replace("min_bytes = \"1MiB\"", "min_bytes = \"8\"")
            .replace("max_bytes = \"1GiB\"", "max_bytes = \"8\"");
        at(&scenario(&t), Fidelity::Flow).collectives[0].time_us
    };
    let (sharp, tree) = (with("sharp"), with("tree"));
    let gain = tree / sharp;
    assert!(
        (1.3..=3.0).contains(&gain),
        "SHARP {sharp:.1} us, tree {tree:.1} us: {gain:.2}x"
    );
}
