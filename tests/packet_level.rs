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
