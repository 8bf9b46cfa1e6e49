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
    assert!(out.fabric.credit_stall_ps > 0, "32 senders into one port must wait for credits");
    // The receiver's downlink (switch → NIC 0) is the bottleneck; it should be
    // busy ≥ 95% of the incast (only the first packet's trip is idle time).
    let down = topo.nics[0].downlink.0;
    let util = out.links.iter().find(|l| l.link == down).unwrap().utilization;
    eprintln!("credit incast: makespan {} util {util:.4} goodput {:.4} stall {} ps events {}", out.makespan, goodput(&out, Rate::gbps(400)), out.fabric.credit_stall_ps, out.events);
    assert!(util >= 0.95, "bottleneck utilization {util}");
}

#[test]
fn lossy_incast_drops_and_recovers_with_lower_goodput() {
    let topo = single_switch(33);
    let dag = incast(32, 256 << 10);
    let (credit, _) = run(&dag, &topo, &small_buffer(FlowControl::Credit));
    let (lossy, st) = run(&dag, &topo, &small_buffer(FlowControl::Lossy));
    let (g_credit, g_lossy) = (goodput(&credit, Rate::gbps(400)), goodput(&lossy, Rate::gbps(400)));
    eprintln!("lossy incast: goodput credit {g_credit:.4} lossy {g_lossy:.4} stats {st:?}");
    // Drop-tail with 4-packet buffers under a 32:1 incast must drop; without
    // congestion control this is TCP incast collapse (Vasudevan et al., SIGCOMM
    // 2009): synchronized losses, go-back-N waste and timeouts …
    assert!(st.drops_buffer > 0 && lossy.fabric.drops > 0);
    // … go-back-N must still deliver every byte (checked in `run`) …
    assert!(lossy.fabric.retransmitted_packets > 0);
    // … and the retransmitted and discarded packets cost goodput.
    assert!(g_lossy < 0.9 * g_credit, "lossy goodput {g_lossy} vs credit {g_credit}");
}
