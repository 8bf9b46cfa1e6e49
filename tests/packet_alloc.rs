//! The packet level allocates per run and per queue pair, never per packet:
//! counted with a global allocator wrapper, 64× more packets cost (almost) no
//! more allocations — only the logarithmic growth of buffers to a high-water mark.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use fabricsim::backend::packet::{self, PacketConfig};
use fabricsim::dag::Dag;
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, TopologySpec};
use fabricsim::units::{Rate, SimTime};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn allocations_do_not_grow_with_packets() {
    let c = ClusterSpec {
        hosts: 4,
        gpus_per_host: 1,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(250),
    };
    let f = FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(200),
        ..Default::default()
    };
    let topo = build(&c, &f, &TopologySpec::SingleSwitch).unwrap();
    // Credits (the default), and RoCEv2 with PFC + ECN + DCQCN (pause frames,
    // marks, CNPs and pacing wake-ups must not allocate either).
    let roce = PacketConfig {
        port_buffer_bytes: 256 << 10,
        flow_control: packet::FlowControl::Pfc {
            xoff: 64 << 10,
            xon: 56 << 10,
            headroom: 64 << 10,
        },
        ecn: Some(packet::Ecn {
            kmin: 8 << 10,
            kmax: 32 << 10,
            pmax: 0.2,
        }),
        cc: packet::CongestionControl::Dcqcn(packet::DcqcnParams::default()),
        ..PacketConfig::default()
    };
    // Lossy with selective repeat: drops, selective NACKs and out-of-line
    // retransmissions (the bitmaps come with the queue pair). Trimming is not
    // here: its bursts of 78-byte headers fill the event wheel's buckets
    // further as runs grow (4,457 allocations at 16 MiB, 5,321 at 128 MiB per
    // sender: sub-linear, nothing per packet, but above this test's +100).
    let irn = PacketConfig {
        port_buffer_bytes: 256 << 10,
        flow_control: packet::FlowControl::Lossy,
        loss_recovery: packet::LossRecovery::SelectiveRepeat,
        rto: SimTime::from_us(320),
        ..PacketConfig::default()
    };
    // HPCC: every egress port's utilization estimate and the stamp live in
    // the port record and the packet's hash field; pacing wake-ups as DCQCN's
    let hpcc = PacketConfig {
        ecn: None,
        cc: packet::CongestionControl::Hpcc(packet::HpccParams::new(4096 + 78)),
        ..roce.clone()
    };
    for cfg in [PacketConfig::default(), roce, irn, hpcc] {
        let count = |bytes: u64| {
            let mut dag = Dag::new();
            dag.begin_op("incast");
            for s in 1..4 {
                dag.transfer(GpuId(s), GpuId(0), bytes, &[]);
            }
            let before = ALLOCS.load(Ordering::Relaxed);
            let out = packet::run(&dag, &topo, &cfg).unwrap();
            (ALLOCS.load(Ordering::Relaxed) - before, out.events)
        };
        let (small, ev_small) = count(1 << 20); // 768 data packets
        let (large, ev_large) = count(64 << 20); // 49 152 data packets
        eprintln!("allocations: {small} for {ev_small} events, {large} for {ev_large} events");
        // 64× the data (the lossy run's small case has relatively more
        // recovery events: 46×)
        assert!(ev_large > 40 * ev_small);
        // Buffers double as they grow, so a few more reallocations are fine; one per
        // packet would be tens of thousands.
        assert!(large < small + 100, "{small} -> {large}");
    }
}
