//! Packet-level backend against closed forms and the textbook behaviours of
//! lossless (credit) and lossy fabrics. Small fabrics: the whole file runs in
//! seconds in release.

use fabricsim::backend::packet::{
    self, FlowControl, LinkEvent, LinkEventKind, PacketConfig, PacketStats, Routing,
};
use fabricsim::backend::RunOutput;
use fabricsim::dag::{Dag, Dep, TaskKind};
use fabricsim::topology::{
    build, ClusterSpec, FabricLinkSpec, GpuId, LinkId, Topology, TopologySpec,
};
use fabricsim::units::{Rate, SimTime};

/// NDR-like hosts: PCIe Gen5 x16 ≈ 512 Gb/s per direction (64 GB/s), NVLink 4
/// 450 GB/s per direction per GPU; one GPU and one NIC per host unless asked.
fn cluster(hosts: u32, gpus: u32) -> ClusterSpec {
    ClusterSpec {
        hosts,
        gpus_per_host: gpus,
        nics_per_host: gpus,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(250),
    }
}

/// 400 Gb/s links, 100 ns of cable (≈ 20 m), 200 ns switch pipeline.
fn fabric() -> FabricLinkSpec {
    FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(200),
        ..Default::default()
    }
}

fn single_switch(hosts: u32) -> Topology {
    build(&cluster(hosts, 1), &fabric(), &TopologySpec::SingleSwitch).unwrap()
}

/// Runs and checks conservation (bytes and packets) every time.
fn run(dag: &Dag, topo: &Topology, cfg: &PacketConfig) -> (RunOutput, PacketStats) {
    let (out, st) = packet::run_detailed(dag, topo, cfg).expect("run completes");
    st.check_conservation().unwrap();
    assert_eq!(
        out.fabric.bytes_sent,
        dag.transfer_bytes(),
        "every byte handed to the transport"
    );
    assert_eq!(
        out.fabric.bytes_delivered, out.fabric.bytes_sent,
        "every byte delivered"
    );
    (out, st)
}

#[test]
fn single_transfer_matches_store_and_forward_closed_form() {
    let topo = single_switch(2);
    let cfg = PacketConfig::default();
    let bytes = 1 << 20;
    let mut dag = Dag::new();
    dag.begin_op("p2p");
    dag.transfer(GpuId(0), GpuId(1), bytes, &[]);
    let (out, st) = run(&dag, &topo, &cfg);
    // Closed form of store-and-forward over hops with rates r_i: every hop
    // serializes the first packet, the bottleneck serializes the rest:
    // T = Σ latency + Σ_i tx_i(first packet) + (wire − first wire) / B.
    let mut path = Vec::new();
    assert!(topo.route(GpuId(0), GpuId(1), 0, &mut path));
    let alpha = topo.path_latency(&path);
    let b = topo.path_bottleneck(&path);
    let first = cfg.wire_bytes(cfg.mtu as u64);
    let fill: SimTime = path
        .iter()
        .map(|&l| topo.link(l).rate.tx_time(first))
        .fold(SimTime::ZERO, |a, x| a + x);
    let wire = cfg.message_wire_bytes(bytes);
    let closed = alpha + fill + b.tx_time(wire - first);
    let pkt_time = b.tx_time(first);
    let fct = out.transfer_fct[0];
    eprintln!("fct {fct} closed {closed} alpha {alpha} stats {st:?}");
    assert!(
        fct.0.abs_diff(closed.0) <= pkt_time.0,
        "fct {fct} vs closed form {closed} (± one packet time {pkt_time})"
    );
}

/// `n` senders (GPUs 1..=n) each send `bytes` to GPU 0 at once.
fn incast(n: u32, bytes: u64) -> Dag {
    let mut dag = Dag::new();
    dag.begin_op("incast");
    for s in 1..=n {
        dag.transfer(GpuId(s), GpuId(0), bytes, &[]);
    }
    dag
}

/// Goodput at the receiver: payload bytes over the makespan, as a fraction of the line rate.
fn goodput(out: &RunOutput, rate: Rate) -> f64 {
    out.fabric.bytes_delivered as f64 * 8.0 / out.makespan.as_secs_f64() / rate.0 as f64
}

fn small_buffer(fc: FlowControl) -> PacketConfig {
    // "A few MTUs" of buffer per port and lane: 4 full packets of 65 credit blocks
    // (4122 wire bytes rounded up to 64-byte blocks). A credit loop sustains line
    // rate when the buffer covers the hop's credit round trip (IBA's sizing rule):
    // 82.4 ns packet + 2 × 100 ns cable = 282 ns < 4 × 82.4 = 330 ns.
    PacketConfig {
        flow_control: fc,
        port_buffer_bytes: 4 * 65 * 64,
        // A tuned lossy deployment's timeout: ≈ 10 round trips of this fabric.
        rto: SimTime::from_us(20),
        ..PacketConfig::default()
    }
}

#[test]
fn credit_incast_is_lossless_and_keeps_the_receiver_link_busy() {
    let topo = single_switch(33);
    let dag = incast(32, 256 << 10);
    let cfg = small_buffer(FlowControl::Credit);
    let (out, st) = run(&dag, &topo, &cfg);
    // Lossless by construction (IBA credits): no drop, no retransmission.
    assert_eq!(st.drops_total(), 0);
    assert_eq!(out.fabric.drops, 0);
    assert_eq!(out.fabric.retransmitted_packets, 0);
    assert!(
        out.fabric.credit_stall_ps > 0,
        "32 senders into one port must wait for credits"
    );
    // The receiver's downlink (switch → NIC 0) is the bottleneck; it should be
    // busy ≥ 95% of the incast (only the first packet's trip is idle time).
    let down = topo.nics[0].downlink.0;
    let util = out
        .links
        .iter()
        .find(|l| l.link == down)
        .unwrap()
        .utilization;
    eprintln!(
        "credit incast: makespan {} util {util:.4} goodput {:.4} stall {} ps events {}",
        out.makespan,
        goodput(&out, Rate::gbps(400)),
        out.fabric.credit_stall_ps,
        out.events
    );
    assert!(util >= 0.95, "bottleneck utilization {util}");
}

#[test]
fn lossy_incast_drops_and_recovers_with_lower_goodput() {
    let topo = single_switch(33);
    let dag = incast(32, 256 << 10);
    let (credit, _) = run(&dag, &topo, &small_buffer(FlowControl::Credit));
    let (lossy, st) = run(&dag, &topo, &small_buffer(FlowControl::Lossy));
    let (g_credit, g_lossy) = (
        goodput(&credit, Rate::gbps(400)),
        goodput(&lossy, Rate::gbps(400)),
    );
    eprintln!("lossy incast: goodput credit {g_credit:.4} lossy {g_lossy:.4} stats {st:?}");
    // Drop-tail with 4-packet buffers under a 32:1 incast must drop; without
    // congestion control this is TCP incast collapse (Vasudevan et al., SIGCOMM
    // 2009): synchronized losses, go-back-N waste and timeouts …
    assert!(st.drops_buffer > 0 && lossy.fabric.drops > 0);
    // … go-back-N must still deliver every byte (checked in `run`) …
    assert!(lossy.fabric.retransmitted_packets > 0);
    // … and the retransmitted and discarded packets cost goodput.
    assert!(
        g_lossy < 0.9 * g_credit,
        "lossy goodput {g_lossy} vs credit {g_credit}"
    );
}

fn leaf_spine(hosts: u32, radix: u32) -> Topology {
    build(
        &cluster(hosts, 1),
        &fabric(),
        &TopologySpec::LeafSpine {
            radix,
            oversubscription: 1.0,
        },
    )
    .unwrap()
}

/// Mean over flows of bytes / FCT, as a fraction of the line rate.
fn mean_flow_throughput(dag: &Dag, out: &RunOutput, rate: Rate) -> f64 {
    let mut sum = 0.0;
    let mut i = 0;
    for t in dag.tasks() {
        if let TaskKind::Transfer { bytes, .. } = t.kind {
            sum += bytes as f64 * 8.0 / out.transfer_fct[i].as_secs_f64() / rate.0 as f64;
            i += 1;
        }
    }
    sum / i as f64
}

#[test]
fn ecmp_collides_where_spraying_runs_at_line_rate() {
    // 32 hosts on 4 leaves × 8 spines (radix 16, non-blocking): a host permutation
    // sends 28 of 32 flows across the spine layer. ECMP hashes flows onto uplinks
    // independently, so some uplinks carry 2–3 flows (balls into bins; Al-Fares
    // et al. SIGCOMM 2008 measured ≈ 50–60% of bisection for random permutations
    // with per-flow hashing); spraying spreads every flow over all spines.
    let topo = leaf_spine(32, 16);
    let dag = fabricsim::workload::traffic::generate(
        &fabricsim::workload::traffic::TrafficSpec::Permutation {
            bytes: 8 << 20,
            per_host: true,
            seed: 11,
        },
        &topo,
    )
    .unwrap();
    let ecmp_cfg = PacketConfig {
        routing: Routing::Ecmp,
        ..PacketConfig::default()
    };
    let spray_cfg = PacketConfig {
        routing: Routing::Spray,
        ..PacketConfig::default()
    };
    let (ecmp, _) = run(&dag, &topo, &ecmp_cfg);
    let (spray, sst) = run(&dag, &topo, &spray_cfg);
    let line = Rate::gbps(400);
    let (te, ts) = (
        mean_flow_throughput(&dag, &ecmp, line),
        mean_flow_throughput(&dag, &spray, line),
    );
    eprintln!("permutation: mean flow throughput ecmp {te:.3} spray {ts:.3}; spray stats {sst:?}");
    assert!(
        te < 0.85,
        "ECMP mean per-flow throughput {te} should show collisions"
    );
    // Header overhead alone caps payload at 4096/4122 = 99.4%; allow queueing noise.
    assert!(ts > 0.9, "spraying mean per-flow throughput {ts}");
    // Spraying reorders but the receiver accepts it: nothing is resent.
    assert_eq!(sst.retransmitted_packets, 0);
    let (ad, _) = run(
        &dag,
        &topo,
        &PacketConfig {
            routing: Routing::Adaptive,
            ..PacketConfig::default()
        },
    );
    let ta = mean_flow_throughput(&dag, &ad, line);
    eprintln!("adaptive {ta:.3}");
    assert!(ta > te, "adaptive routing should beat ECMP");
}

#[test]
fn link_down_mid_transfer_is_survived_by_reroute_and_retransmission() {
    // 4 hosts on 2 leaves × 2 spines; every flow crosses the spines.
    let topo = leaf_spine(4, 4);
    let mut dag = Dag::new();
    dag.begin_op("cross");
    for (s, d) in [(0, 2), (1, 3), (2, 0), (3, 1)] {
        dag.transfer(GpuId(s), GpuId(d), 4 << 20, &[]);
    }
    let base_cfg = PacketConfig {
        rto: SimTime::from_us(50),
        ..PacketConfig::default()
    };
    let (base, _) = run(&dag, &topo, &base_cfg);
    // Pick a busy leaf → spine link of the fault-free run and cut it a third of the way in.
    let victim = base
        .links
        .iter()
        .filter(|l| {
            let link = topo.link(LinkId(l.link));
            link.kind == fabricsim::topology::LinkKind::Network
                && topo.nic_of_node(link.from).is_none()
                && topo.nic_of_node(link.to).is_none()
        })
        .max_by_key(|l| l.bytes)
        .unwrap()
        .link;
    let cut = SimTime(base.makespan.0 / 3);
    let cfg = PacketConfig {
        link_events: vec![LinkEvent {
            at: cut,
            link: LinkId(victim),
            kind: LinkEventKind::Down,
        }],
        ..base_cfg.clone()
    };
    let (out, st) = run(&dag, &topo, &cfg);
    eprintln!(
        "link down at {cut}: makespan {} (fault-free {}), stats {st:?}",
        out.makespan, base.makespan
    );
    assert!(
        st.drops_link_down > 0,
        "packets were on or queued for the cut link"
    );
    assert!(out.fabric.retransmitted_packets > 0);
    assert!(out.makespan > base.makespan);
    // And back up later: still exact delivery.
    let mut cfg2 = cfg.clone();
    cfg2.link_events.push(LinkEvent {
        at: SimTime(cut.0 * 2),
        link: LinkId(victim),
        kind: LinkEventKind::Up,
    });
    run(&dag, &topo, &cfg2);
}

#[test]
fn same_seed_same_output_and_seeds_matter() {
    let topo = leaf_spine(16, 8);
    let dag = fabricsim::workload::traffic::generate(
        &fabricsim::workload::traffic::TrafficSpec::Permutation {
            bytes: 256 << 10,
            per_host: true,
            seed: 5,
        },
        &topo,
    )
    .unwrap();
    let cfg = PacketConfig {
        routing: Routing::Spray,
        sample_interval: SimTime::from_ns(500),
        ..PacketConfig::default()
    };
    let (a, sa) = run(&dag, &topo, &cfg);
    let (b, sb) = run(&dag, &topo, &cfg);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert_eq!(sa, sb);
    assert!(!a.series.is_empty(), "sampling was on");
    // Two series (queue, utilization) per reported port, memory bounded by the cap.
    assert!(a.series.len() <= 2 * cfg.series_ports as usize);
    assert!(a
        .series
        .iter()
        .all(|s| s.samples.len() <= cfg.series_max_samples as usize));
    let (c, _) = run(&dag, &topo, &PacketConfig { seed: 2, ..cfg });
    assert_ne!(
        format!("{a:?}"),
        format!("{c:?}"),
        "spraying depends on the seed"
    );
}

#[test]
fn ring_allreduce_matches_the_alpha_beta_closed_form() {
    // Ring all-reduce of S bytes over N ranks: 2(N−1) steps, each moving S/N to
    // the next rank after receiving from the previous one (Thakur, Rabenseifner &
    // Gropp, IJHPCA 2005): T = 2(N−1)·(α + (S/N)/(B·e)), e = mtu/(mtu+header)
    // the payload efficiency, α the one-way path latency.
    let n = 8u32;
    let s: u64 = 16 << 20;
    let chunk = s / n as u64;
    let topo = single_switch(n);
    let mut dag = Dag::new();
    dag.begin_op("allreduce");
    let mut prev: Vec<Option<fabricsim::dag::TaskId>> = vec![None; n as usize];
    for _step in 0..2 * (n - 1) {
        let mut cur = vec![None; n as usize];
        for r in 0..n {
            // Rank r forwards once it has received the previous step's chunk from r−1.
            let from_prev = prev[((r + n - 1) % n) as usize].map(Dep::Done);
            let deps: Vec<Dep> = from_prev.into_iter().collect();
            cur[r as usize] = Some(dag.transfer(GpuId(r), GpuId((r + 1) % n), chunk, &deps));
        }
        prev = cur;
    }
    let cfg = PacketConfig::default();
    let (out, _) = run(&dag, &topo, &cfg);
    let (alpha, b) = topo.path_cost(GpuId(0), GpuId(1)).unwrap();
    let per_step = alpha.as_secs_f64() + chunk as f64 * 8.0 / (b.0 as f64 * cfg.efficiency());
    let closed = 2.0 * (n - 1) as f64 * per_step;
    let sim = out.makespan.as_secs_f64();
    eprintln!(
        "ring allreduce: sim {:.3} us closed {:.3} us ({:+.2}%)",
        sim * 1e6,
        closed * 1e6,
        (sim / closed - 1.0) * 100.0
    );
    assert!((sim / closed - 1.0).abs() < 0.03);
    // The flow level, told the same header overhead, agrees within 3% too.
    let mut t_eff = topo.clone();
    t_eff.set_network_efficiency(cfg.efficiency());
    let flow = fabricsim::backend::flow::run(
        &dag,
        &t_eff,
        &fabricsim::backend::flow::FlowConfig {
            seed: 1,
            ..Default::default()
        },
    )
    .unwrap();
    let f = flow.makespan.as_secs_f64();
    eprintln!(
        "ring allreduce: flow level {:.3} us ({:+.2}% vs packet)",
        f * 1e6,
        (f / sim - 1.0) * 100.0
    );
    assert!((f / sim - 1.0).abs() < 0.03);
}

#[test]
fn fat_tree_permutation_ecmp_vs_spray() {
    // k = 8 fat-tree (Al-Fares et al., SIGCOMM 2008): 128 hosts, 3 tiers, full
    // bisection. Hash collisions leave ECMP well under line rate on a random
    // permutation (the paper's motivation for flow scheduling); spraying does not.
    let topo = build(&cluster(128, 1), &fabric(), &TopologySpec::FatTree { k: 8 }).unwrap();
    let dag = fabricsim::workload::traffic::generate(
        &fabricsim::workload::traffic::TrafficSpec::Permutation {
            bytes: 8 << 20,
            per_host: true,
            seed: 3,
        },
        &topo,
    )
    .unwrap();
    let line = Rate::gbps(400);
    let (ecmp, _) = run(&dag, &topo, &PacketConfig::default());
    let (spray, _) = run(
        &dag,
        &topo,
        &PacketConfig {
            routing: Routing::Spray,
            ..PacketConfig::default()
        },
    );
    let (te, ts) = (
        mean_flow_throughput(&dag, &ecmp, line),
        mean_flow_throughput(&dag, &spray, line),
    );
    eprintln!(
        "fat-tree k=8 permutation: ecmp {te:.3} spray {ts:.3}, events {} + {}",
        ecmp.events, spray.events
    );
    // Measured: ECMP 0.52, spray 0.95 (with a 256 KiB window spray was 0.84:
    // the 3-tier round trip of ≈ 6–10 µs needs ≈ 512 KiB in flight at 400 Gb/s).
    assert!(te < 0.7, "ECMP {te}");
    assert!(ts > 0.9, "spray {ts}");
}

#[test]
fn flowlets_follow_one_path_until_a_gap_and_rebalance_after_it() {
    // Flowlet switching (Kandula et al., CCR 2007; CONGA, SIGCOMM 2014): a flow
    // may change path only after an idle gap. RDMA senders stream at line rate,
    // so with the usual 100 µs gap (ConWeave's ns-3 default) a flow is one
    // flowlet and collides about like ECMP; that is why RDMA fabrics spray or
    // adapt per packet. Gaps shorter than the credit stalls that collisions
    // cause (here 200 ns) let stalled flows move and rebalance the fabric.
    let topo = build(&cluster(128, 1), &fabric(), &TopologySpec::FatTree { k: 8 }).unwrap();
    let dag = fabricsim::workload::traffic::generate(
        &fabricsim::workload::traffic::TrafficSpec::Permutation {
            bytes: 4 << 20,
            per_host: true,
            seed: 3,
        },
        &topo,
    )
    .unwrap();
    let line = Rate::gbps(400);
    let flowlet = |gap_ns: u64| PacketConfig {
        routing: Routing::Flowlet,
        flowlet_gap: SimTime::from_ns(gap_ns),
        ..PacketConfig::default()
    };
    let (ecmp, _) = run(&dag, &topo, &PacketConfig::default());
    let (long, long_st) = run(&dag, &topo, &flowlet(100_000));
    let (short, short_st) = run(&dag, &topo, &flowlet(200));
    // A gap below one packet time (82 ns at 400 Gb/s): every packet decides.
    let (tiny, _) = run(&dag, &topo, &flowlet(50));
    let t = |o: &RunOutput| mean_flow_throughput(&dag, o, line);
    eprintln!(
        "k=8 permutation: ecmp {:.3}, flowlet 100 us {:.3} ({} flowlets), 200 ns {:.3} ({} flowlets), 50 ns {:.3}",
        t(&ecmp),
        t(&long),
        long_st.flowlets,
        t(&short),
        short_st.flowlets,
        t(&tiny)
    );
    // One flowlet per (flow, direction, switch with a choice): data and ACKs
    // each meet at most 2 such switches on a 3-tier fat-tree (edge and
    // aggregation on the way up).
    assert!(long_st.flowlets <= 128 * 2 * 2, "{}", long_st.flowlets);
    assert!(short_st.flowlets > 10 * long_st.flowlets);
    // Measured (mean flow throughput / line rate): ECMP 0.492; flowlet gap
    // 100 µs 0.589 (458 flowlets), 1 µs 0.592, 200 ns 0.642 (80,478
    // flowlets), 50 ns 0.871, close to per-packet adaptive routing.
    assert!(t(&long) < 0.7, "a 100 us gap never splits a line-rate flow");
    assert!(t(&short) > t(&ecmp) + 0.1, "short flowlets rebalance");
    assert!(t(&tiny) > 0.8, "sub-packet gaps route per packet");
    // Reordering across flowlets is absorbed without a retransmission.
    assert_eq!(short_st.retransmitted_packets, 0);
    assert_eq!(short_st.timeouts, 0);
}

#[test]
fn gpudirect_beats_host_staged_and_tcp_paths() {
    // "Take the CPU out of the path": the same 4 MiB transfer over GPUDirect RDMA,
    // staged through host memory (one extra copy at 200 Gb/s plus 5 µs to launch
    // it), and over a TCP-like path (2 µs of CPU per 4 KiB packet ± 1 µs jitter,
    // i.e. ≈ 16 Gb/s per connection: the order of a single kernel TCP stream).
    use fabricsim::backend::packet::{HostPath, Transport};
    let topo = single_switch(2);
    let mut dag = Dag::new();
    dag.begin_op("p2p");
    dag.transfer(GpuId(0), GpuId(1), 4 << 20, &[]);
    let (direct, _) = run(&dag, &topo, &PacketConfig::default());
    let staged_cfg = PacketConfig {
        host_path: HostPath::HostStaged {
            copy_rate: Rate::gbps(200),
            copy_latency: SimTime::from_us(5),
        },
        ..PacketConfig::default()
    };
    let (staged, _) = run(&dag, &topo, &staged_cfg);
    let tcp_cfg = PacketConfig {
        transport: Transport::Tcp {
            per_packet_overhead: SimTime::from_us(2),
            jitter: SimTime::from_us(1),
        },
        ..PacketConfig::default()
    };
    let (tcp, _) = run(&dag, &topo, &tcp_cfg);
    let (d, s, t) = (
        direct.makespan.as_us(),
        staged.makespan.as_us(),
        tcp.makespan.as_us(),
    );
    eprintln!("4 MiB: gpudirect {d:.1} us, host-staged {s:.1} us, tcp {t:.1} us");
    // Staged: copy-rate bound, 4 MiB at 200 Gb/s = 167.8 µs, plus the 5 µs launch.
    assert!((s - (5.0 + 167.77)).abs() < 3.0, "host-staged {s}");
    // TCP: ~1024 packets × (2 + 0.5 mean jitter) µs ≈ 2.56 ms.
    assert!((t / 2560.0 - 1.0).abs() < 0.05, "tcp {t}");
    assert!(d < s && s < t);
}

#[test]
fn bit_errors_and_rate_changes_are_survived() {
    let topo = single_switch(2);
    let mut dag = Dag::new();
    dag.begin_op("p2p");
    dag.transfer(GpuId(0), GpuId(1), 4 << 20, &[]);
    // BER 1e-6 per bit: a 4122-byte packet is corrupted with p = 1 − (1 − 1e-6)^32976 ≈ 3.2%.
    let up = topo.nics[0].uplink;
    let cfg = PacketConfig {
        link_events: vec![
            LinkEvent {
                at: SimTime::ZERO,
                link: up,
                kind: LinkEventKind::Ber(1e-6),
            },
            LinkEvent {
                at: SimTime::from_us(30),
                link: up,
                kind: LinkEventKind::Rate(Rate::gbps(200)),
            },
        ],
        ..PacketConfig::default()
    };
    let (out, st) = run(&dag, &topo, &cfg);
    let rate = st.drops_corrupt as f64 / st.data_sent as f64;
    eprintln!(
        "ber: corrupted {} of {} ({rate:.4}), makespan {}",
        st.drops_corrupt, st.data_sent, out.makespan
    );
    assert!(rate > 0.015 && rate < 0.05, "corruption rate {rate}");
    // Halving the rate after 30 µs: ≈ 30 µs at 400 + the rest at 200 Gb/s, plus go-back-N waste.
    assert!(out.makespan.as_us() > 140.0);
}

#[test]
fn reordering_receivers_recover_lossy_drops_by_timeout() {
    // Spraying and adaptive routing reorder, so the receiver never NACKs: a lossy
    // incast must then be recovered by retransmission timeouts alone.
    let topo = single_switch(9);
    let dag = incast(8, 128 << 10);
    for routing in [Routing::Spray, Routing::Adaptive] {
        let cfg = PacketConfig {
            routing,
            ..small_buffer(FlowControl::Lossy)
        };
        let (out, st) = run(&dag, &topo, &cfg);
        eprintln!(
            "{routing:?} lossy incast: makespan {} timeouts {} drops {}",
            out.makespan,
            st.timeouts,
            st.drops_total()
        );
        assert!(st.drops_buffer > 0);
        assert_eq!(st.nacks_sent, 0, "reordering receivers do not NACK");
        assert!(st.timeouts > 0);
    }
}

#[test]
fn lanes_and_time_series_of_the_hot_port() {
    let topo = single_switch(9);
    let dag = incast(8, 256 << 10);
    // One lane (ACKs share the data lane) and four lanes both run clean.
    for vls in [1, 4] {
        run(
            &dag,
            &topo,
            &PacketConfig {
                vls,
                ..small_buffer(FlowControl::Credit)
            },
        );
    }
    let cfg = PacketConfig {
        sample_interval: SimTime::from_ns(200),
        series_ports: 2,
        series_max_samples: 64,
        ..small_buffer(FlowControl::Credit)
    };
    let (out, _) = run(&dag, &topo, &cfg);
    // The series report the port with the largest queue. With credits that is a
    // sender's NIC uplink, not the switch port towards the receiver: backpressure
    // moves the queue to the edge (each NIC holds up to its 256 KiB PCIe-side
    // buffer while the switch holds 4 packets per input).
    let hottest = out
        .links
        .iter()
        .max_by_key(|l| (l.max_queue_bytes, std::cmp::Reverse(l.link)))
        .unwrap();
    assert!(
        out.series[0]
            .name
            .starts_with(&format!("queue_bytes link {} (nic", hottest.link)),
        "{}",
        out.series[0].name
    );
    let util = &out.series[1];
    assert!(util.name.starts_with("utilization"));
    assert!(util.samples.iter().all(|s| (0.0..=1.0).contains(&s.value)));
    // Equally spaced samples average to the link's utilization over the run.
    let mean = util.samples.iter().map(|s| s.value).sum::<f64>() / util.samples.len() as f64;
    assert!(
        (mean - hottest.utilization).abs() < 0.03,
        "sampled {mean} vs counted {}",
        hottest.utilization
    );
    assert!(out.series.iter().all(|s| s.samples.len() <= 64));
}

#[test]
fn cut_through_meets_alpha_plus_bytes_over_bandwidth() {
    // With cut-through switching the pipeline fill disappears: a transfer on an
    // idle path takes α + wire_bytes / B (LogP/α-β), up to one packet time (the
    // destination NIC stores and forwards onto its faster PCIe link).
    let topo = single_switch(2);
    let cfg = PacketConfig {
        cut_through: true,
        ..PacketConfig::default()
    };
    let bytes = 1 << 20;
    let mut dag = Dag::new();
    dag.begin_op("p2p");
    dag.transfer(GpuId(0), GpuId(1), bytes, &[]);
    let (out, _) = run(&dag, &topo, &cfg);
    let (alpha, b) = topo.path_cost(GpuId(0), GpuId(1)).unwrap();
    let closed = alpha + b.tx_time(cfg.message_wire_bytes(bytes));
    let pkt = b.tx_time(cfg.wire_bytes(cfg.mtu as u64));
    let fct = out.transfer_fct[0];
    eprintln!("cut-through: fct {fct} closed {closed} (packet time {pkt})");
    assert!(fct.0.abs_diff(closed.0) <= pkt.0);

    // One-packet message across a k = 8 fat-tree (5 switches): store-and-forward
    // pays one packet time per switch and per NIC on the way; cut-through does not.
    let ft = build(&cluster(128, 1), &fabric(), &TopologySpec::FatTree { k: 8 }).unwrap();
    let mut small = Dag::new();
    small.begin_op("ping");
    small.transfer(GpuId(0), GpuId(127), 4096, &[]);
    let (sf, _) = run(&small, &ft, &PacketConfig::default());
    let (ct, _) = run(&small, &ft, &cfg);
    let saved = sf.makespan.0 - ct.makespan.0;
    eprintln!(
        "fat-tree ping: store-and-forward {} cut-through {} saved {}",
        sf.makespan,
        ct.makespan,
        SimTime(saved)
    );
    // Cut through: 5 switches, each saving a 400 Gb/s packet time less the
    // header time (82.44 − 0.52 ns), and the source NIC, saving a PCIe packet
    // time at 512 Gb/s less its header time (64.41 − 0.41 ns): 473.6 ns.
    let saving = |r: Rate| r.tx_time(cfg.wire_bytes(4096)).0 - r.tx_time(cfg.header_bytes as u64).0;
    let expect = 5 * saving(Rate::gbps(400)) + saving(Rate::gbps(512));
    assert!(
        saved.abs_diff(expect) < 100,
        "saved {saved} ps vs {expect} ps"
    );
}

#[test]
fn every_shape_runs_multi_gpu_hosts_clean() {
    // 8 GPUs and 8 NICs per host (a DGX-like node): all-to-all mixes NVLink
    // traffic inside hosts with rail traffic across the fabric. Credits and
    // lossy, ECMP and spray, on every topology shape.
    let shapes = [
        (8, TopologySpec::SingleSwitch),
        (
            8,
            TopologySpec::LeafSpine {
                radix: 16,
                oversubscription: 1.0,
            },
        ),
        (16, TopologySpec::FatTree { k: 8 }),
        (
            8,
            TopologySpec::RailOptimized {
                radix: 16,
                spine_radix: 16,
            },
        ),
        (
            8,
            TopologySpec::Dragonfly {
                groups: 5,
                routers_per_group: 4,
                hosts_per_router: 4,
                global_links_per_router: 1,
            },
        ),
    ];
    for (hosts, spec) in shapes {
        let topo =
            build(&cluster(hosts, 8), &fabric(), &spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let dag = fabricsim::workload::traffic::generate(
            &fabricsim::workload::traffic::TrafficSpec::AllToAll { bytes: 16 << 10 },
            &topo,
        )
        .unwrap();
        let dragonfly = matches!(spec, TopologySpec::Dragonfly { .. });
        for (fc, routing) in [
            (FlowControl::Credit, Routing::Ecmp),
            (FlowControl::Lossy, Routing::Spray),
        ] {
            let mut cfg = PacketConfig {
                flow_control: fc,
                routing,
                rto: SimTime::from_us(50),
                ..PacketConfig::default()
            };
            if dragonfly && fc == FlowControl::Credit {
                // Minimal dragonfly routes use a group's local links both before
                // and after a global hop: with one data lane the input buffers
                // wait on each other in a cycle and credits deadlock (the reason
                // dragonflies need virtual channels, Kim et al. ISCA 2008) …
                cfg.deadlock_timeout = SimTime::from_us(500);
                match packet::run_detailed(&dag, &topo, &cfg) {
                    Err(packet::PacketError::Deadlock { packets, cycle, .. }) => {
                        eprintln!("dragonfly, one data lane: deadlock, {packets} packets stuck, cycle {cycle:?}");
                        // the cycle closes: each link enters the node the next leaves
                        assert!(cycle.len() >= 2, "{cycle:?}");
                        for (i, &(_, _, to)) in cycle.iter().enumerate() {
                            assert_eq!(to, cycle[(i + 1) % cycle.len()].1, "{cycle:?}");
                        }
                    }
                    other => panic!(
                        "expected a credit deadlock, got {:?}",
                        other.map(|(o, _)| o.makespan)
                    ),
                }
                // … one lane per switch-to-switch hop (3 on minimal paths, + ACKs) breaks it.
                cfg.vls = 5;
                cfg.vl_escalation = true;
            }
            let (out, st) = run(&dag, &topo, &cfg);
            eprintln!(
                "{} {fc:?} {routing:?}: makespan {} drops {} events {}",
                spec.name(),
                out.makespan,
                st.drops_total(),
                out.events
            );
            if fc == FlowControl::Credit {
                assert_eq!(st.drops_total(), 0);
            }
        }
    }
}

#[test]
fn lowered_ring_allreduce_agrees_with_the_analytical_closed_form() {
    // The collective layer's ring all-reduce, lowered to a pipelined DAG, against
    // its own closed form on the same topology with the packet header overhead
    // counted (Topology::set_network_efficiency(mtu / (mtu + header))).
    use fabricsim::collective::{self, Algorithm, CollectiveOp, CollectiveSpec};
    for (name, topo) in [
        ("single switch", single_switch(8)),
        ("leaf-spine", leaf_spine(8, 4)),
    ] {
        let ranks: Vec<GpuId> = (0..8).map(GpuId).collect();
        let spec = CollectiveSpec {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            bytes: 64 << 20,
            chunk_bytes: 1 << 20,
            inter_host: Algorithm::Ring,
            root: 0,
            channels: 1,
            pxn: true,
            proto: fabricsim::collective::ProtoCost::NONE,
        };
        let mut dag = Dag::new();
        dag.begin_op("allreduce");
        collective::lower(&spec, &ranks, &topo, &mut dag, &[]).unwrap();
        for cut_through in [false, true] {
            let cfg = PacketConfig {
                cut_through,
                ..PacketConfig::default()
            };
            let mut t_eff = topo.clone();
            t_eff.set_network_efficiency(cfg.efficiency());
            let closed = collective::analytical_time(&spec, &ranks, &t_eff).unwrap();
            let (out, _) = run(&dag, &topo, &cfg);
            let err = out.makespan.as_secs_f64() / closed.as_secs_f64() - 1.0;
            eprintln!(
                "{name}, cut-through {cut_through}: packet {} closed form {} ({:+.2}%)",
                out.makespan,
                closed,
                err * 100.0
            );
            assert!(err.abs() < 0.03, "{name}: {err}");
        }
    }
}
