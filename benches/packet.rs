//! Packet-level backend throughput in simulated events per wall-clock second.
//!
//! `cargo bench --bench packet` runs each scenario 5 times and prints the median
//! and the spread (min–max) of events per wall-clock second and per CPU-second
//! of the bench thread (the machine is shared, so wall time includes time spent
//! descheduled), and packet-hops per second (simulated work, independent of how
//! many events it took). Target: ≥ 10 M events/s on one core.
//! `cargo bench --bench packet -- WORD` runs only the cases whose name contains
//! WORD (e.g. `ECMP`, `incast`, `htsim`).
//!
//! The `laws` table (issue 13: no congestion-control law may cost more than
//! 30% of events per second against `cc = "none"`) runs one 32:1 incast of
//! 4 MiB per sender at 400 Gb/s under every law, each against the `none` of
//! its own fabric: RoCE (PFC, 256 KiB ports; DCQCN, HPCC, Swift, TIMELY),
//! InfiniBand credits (IB CC) and lossy TCP (64 KiB ports, 100 ns of CPU
//! per packet; NewReno, CUBIC, DCTCP with ECN at 20 packets; NewReno with
//! `tcp_rack = false` for RACK-TLP's cost). TCP's `none` is a fixed 4 MiB
//! window into 64 KiB ports: it loses much and spends its events on
//! recovery, a poor yardstick (without RACK-TLP it backs off past the
//! 60 s time limit). The cases are
//! run alternately, one run of each per round, so that the load of a shared
//! machine falls on all of them alike; the ratio is of medians of events per
//! CPU-second of the bench thread. `cargo bench --bench packet -- laws`.
//!
//! The `windows` table (issue 16, M2a) runs the htsim incast and 128-host
//! permutation with the one-queue loop and in 1 and 2 partitions on this
//! thread (`packet::PARTITIONS`, conservative windows), alternately, one run
//! of each per round, and prints events per CPU-second and the ratio to the
//! one-queue loop. `cargo bench --bench packet -- windows`.
//!
//! The `htsim` cases are the scenarios of the side-by-side comparison with
//! Broadcom's csg-htsim (issue 16): RoCE with PFC (XOFF 60,000 B, XON 48,000 B),
//! no ECN or congestion control, 100 Gb/s links of 1 µs, MTU 4000 B + 64 B of
//! headers, k = 8 and k = 16 fat-trees; a 127→1 incast of 2 MB per sender and
//! permutations of 2 MB over 128 and 1,024 hosts. They print wall time, events/s
//! and link transmissions (packet-hops)/s. The engine runs on one thread: the
//! parallel engine of issue 16 does not exist yet, so there is no 2-thread row.

use std::time::Instant;

use fabricsim::backend::packet::{self, PacketConfig};
use fabricsim::dag::Dag;
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, Topology, TopologySpec};
use fabricsim::units::{Rate, SimTime};
use fabricsim::workload::traffic::{generate, TrafficSpec};

fn topo(hosts: u32, spec: TopologySpec) -> Topology {
    let f = FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(200),
        ..Default::default()
    };
    topo_with(hosts, spec, &f)
}

/// `hosts` single-GPU hosts on `spec` with `fabric`'s links.
fn topo_with(hosts: u32, spec: TopologySpec, fabric: &FabricLinkSpec) -> Topology {
    let c = ClusterSpec {
        hosts,
        gpus_per_host: 1,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(250),
    };
    build(&c, fabric, &spec).expect("bench topology builds")
}

/// CPU time this thread has run, ns (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`,
/// Linux); `None` elsewhere. On a shared machine wall time includes the time the
/// bench was descheduled; CPU time is the "one core" figure.
#[cfg(target_os = "linux")]
fn cpu_ns() -> Option<u64> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec (two 64-bit fields on 64-bit Linux) to `ts`.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(not(target_os = "linux"))]
fn cpu_ns() -> Option<u64> {
    None
}

fn bench(name: &str, dag: &Dag, topo: &Topology, cfg: &PacketConfig) {
    // `cargo bench --bench packet -- WORD` runs only the cases whose name contains WORD.
    if let Some(word) = std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        if !name.contains(word.as_str()) {
            return;
        }
    }
    let mut rates = Vec::new();
    let mut hop_rates = Vec::new();
    let mut cpu_rates = Vec::new();
    let mut events = 0;
    let mut walls = Vec::new();
    let mut hw = (0, 0);
    // FABRICSIM_BENCH_RUNS=1 for profiling under callgrind.
    let runs: usize = std::env::var("FABRICSIM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        let c0 = cpu_ns();
        let (out, st) = packet::run_detailed(dag, topo, cfg).expect("bench run completes");
        let dt = t0.elapsed().as_secs_f64();
        walls.push(dt);
        if let (Some(a), Some(b)) = (c0, cpu_ns()) {
            let cpu_s = (b - a) as f64 * 1e-9;
            cpu_rates.push((
                out.events as f64 / cpu_s / 1e6,
                st.packet_hops as f64 / cpu_s / 1e6,
            ));
        }
        hw = (st.event_queue_high_water, st.slab_high_water);
        hop_rates.push(st.packet_hops as f64 / dt / 1e6);
        events = out.events;
        rates.push(out.events as f64 / dt / 1e6);
    }
    rates.sort_by(f64::total_cmp);
    walls.sort_by(f64::total_cmp);
    println!(
        "{name:<40} {events:>10} events  median {:6.2} M events/s  (min {:.2}, max {:.2}, {} runs); wall median {:.3} s",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        rates.len(),
        walls[walls.len() / 2]
    );
    hop_rates.sort_by(f64::total_cmp);
    cpu_rates.sort_by(|a, b| a.0.total_cmp(&b.0));
    if !cpu_rates.is_empty() {
        let mid = cpu_rates[cpu_rates.len() / 2];
        println!(
            "{:<40} median {:6.2} M events per CPU-second (min {:.2}, max {:.2}), {:.2} M packet-hops per CPU-second",
            "",
            mid.0,
            cpu_rates[0].0,
            cpu_rates[cpu_rates.len() - 1].0,
            mid.1
        );
    }
    println!(
        "{:<40} median {:6.2} M packet-hops/s; event queue ≤ {} entries, ≤ {} packets alive",
        "",
        hop_rates[hop_rates.len() / 2],
        hw.0,
        hw.1
    );
}

fn main() {
    let cfg = PacketConfig::default();
    // 128 hosts on a non-blocking leaf-spine (8 leaves × 16 spines), 4 MiB host permutation.
    let ls = topo(
        128,
        TopologySpec::LeafSpine {
            radix: 32,
            oversubscription: 1.0,
        },
    );
    let perm = generate(
        &TrafficSpec::Permutation {
            bytes: 4 << 20,
            per_host: true,
            seed: 1,
        },
        &ls,
    )
    .unwrap();
    bench("permutation 128 hosts, 4 MiB, ECMP", &perm, &ls, &cfg);
    // 64:1 incast on one switch, 1 MiB per sender, InfiniBand credits.
    let ss = topo(65, TopologySpec::SingleSwitch);
    let inc = generate(
        &TrafficSpec::Incast {
            senders: 64,
            receiver: GpuId(0),
            bytes: 1 << 20,
        },
        &ss,
    )
    .unwrap();
    bench("incast 64:1, 1 MiB, credits", &inc, &ss, &cfg);
    // The same incast with InfiniBand congestion control (its defaults on
    // the default buffer): FECN at the hot port, a BECN per marked packet,
    // CCTI timers; against "credits" (cc = "none") above.
    let ib_cc = PacketConfig {
        cc: fabricsim::backend::packet::CongestionControl::Ib(
            fabricsim::backend::packet::IbCcParams::for_buffer(cfg.port_buffer_bytes),
        ),
        ..cfg.clone()
    };
    bench("incast 64:1, 1 MiB, credits + IB CC", &inc, &ss, &ib_cc);
    // The same permutation and incast on RoCEv2: PFC (XOFF 128 KiB of a 256 KiB
    // buffer), RED ECN and DCQCN with their defaults.
    let roce = PacketConfig {
        header_bytes: 78,
        ack_bytes: 82,
        port_buffer_bytes: 256 << 10,
        flow_control: fabricsim::backend::packet::FlowControl::Pfc {
            xoff: 128 << 10,
            xon: 120 << 10,
            headroom: 64 << 10,
        },
        ecn: Some(fabricsim::backend::packet::Ecn {
            kmin: 16 << 10,
            kmax: 96 << 10,
            pmax: 0.2,
        }),
        cc: fabricsim::backend::packet::CongestionControl::Dcqcn(
            fabricsim::backend::packet::DcqcnParams::for_line_rate(fabricsim::units::Rate::gbps(
                400,
            )),
        ),
        ..PacketConfig::default()
    };
    bench("permutation 128 hosts, 4 MiB, PFC+DCQCN", &perm, &ls, &roce);
    bench("incast 64:1, 1 MiB, PFC+DCQCN", &inc, &ss, &roce);
    // The same with cc = "none" (PFC alone, no ECN): the yardstick of a law's
    // cost (issue 13: no law may cost more than 30% of events/s against it).
    let pfc_only = PacketConfig {
        ecn: None,
        cc: fabricsim::backend::packet::CongestionControl::None,
        ..roce.clone()
    };
    bench(
        "permutation 128 hosts, 4 MiB, PFC cc=none",
        &perm,
        &ls,
        &pfc_only,
    );
    bench("incast 64:1, 1 MiB, PFC cc=none", &inc, &ss, &pfc_only);
    // HPCC (PFC, no ECN): every egress port updates its utilization estimate
    // per departure and stamps data packets; the sender's law runs per ACK
    // (one ACK per packet).
    let hpcc = PacketConfig {
        cc: fabricsim::backend::packet::CongestionControl::Hpcc(
            fabricsim::backend::packet::HpccParams::new((pfc_only.mtu + 78) as u64),
        ),
        ..pfc_only.clone()
    };
    bench("permutation 128 hosts, 4 MiB, PFC+HPCC", &perm, &ls, &hpcc);
    bench("incast 64:1, 1 MiB, PFC+HPCC", &inc, &ss, &hpcc);
    // TIMELY (PFC, no ECN) with the paper's parameters: a send time in every
    // data packet, one ACK per packet, one rate update per 16 KiB completion,
    // pacing at the rate.
    let timely = PacketConfig {
        cc: fabricsim::backend::packet::CongestionControl::Timely(
            fabricsim::backend::packet::TimelyParams::default(),
        ),
        ..pfc_only.clone()
    };
    bench(
        "permutation 128 hosts, 4 MiB, PFC+TIMELY",
        &perm,
        &ls,
        &timely,
    );
    bench("incast 64:1, 1 MiB, PFC+TIMELY", &inc, &ss, &timely);
    // The same incast lossy (drop-tail, 256 KiB per port), with selective
    // repeat (IRN: one-window bitmaps, selective NACKs, out-of-line
    // retransmissions), and with trimming as well (issue 13).
    let irn = PacketConfig {
        flow_control: fabricsim::backend::packet::FlowControl::Lossy,
        loss_recovery: fabricsim::backend::packet::LossRecovery::SelectiveRepeat,
        rto: SimTime::from_us(320),
        ..pfc_only.clone()
    };
    bench(
        "incast 64:1, 1 MiB, lossy selective repeat",
        &inc,
        &ss,
        &irn,
    );
    let trim = PacketConfig {
        trimming: true,
        ..irn.clone()
    };
    // Trimming on an 8:1 incast: without congestion control or NDP's
    // receiver pulls a trimmed packet goes straight back into the full
    // queue, so the senders keep offering N × line rate and the run
    // simulates N headers per delivered packet (64:1: 228 M events, 43 s).
    let inc8 = generate(
        &TrafficSpec::Incast {
            senders: 8,
            receiver: GpuId(0),
            bytes: 1 << 20,
        },
        &ss,
    )
    .unwrap();
    bench("incast 8:1, 1 MiB, lossy SR + trimming", &inc8, &ss, &trim);
    htsim_cases();
    windows();
    laws();
    // Memory of the hot records: a packet lives in the slab as one of these while
    // in flight; a queue pair per communicating (source, destination) GPU pair.
    println!(
        "memory: {} B per in-flight packet (slab record), {} B per queue pair (plus its message queue)",
        std::mem::size_of::<fabricsim::backend::packet::slab::Packet>(),
        fabricsim::backend::packet::nic::QP_BYTES
    );
}

/// The scenarios of the htsim comparison (module doc), on one thread.
fn htsim_cases() {
    let fat_tree = |k: u32| {
        let f = FabricLinkSpec {
            link_rate: Rate::gbps(100),
            link_latency: SimTime::from_us(1),
            // htsim's switches forward in zero time; its queues add only the
            // serialization, as these do
            switch_latency: SimTime::ZERO,
            ..Default::default()
        };
        topo_with(k * k * k / 4, TopologySpec::FatTree { k }, &f)
    };
    let cfg = PacketConfig {
        mtu: 4000,
        header_bytes: 64,
        ack_bytes: 64,
        // XOFF + headroom: the headroom 100 Gb/s links of 1 µs need is
        // 2 µs × 12.5 B/ns + 2 × 4064 B + 64 B = 33,192 B
        port_buffer_bytes: 100_000,
        flow_control: fabricsim::backend::packet::FlowControl::Pfc {
            xoff: 60_000,
            xon: 48_000,
            headroom: 40_000,
        },
        ..PacketConfig::default()
    };
    let k8 = fat_tree(8);
    let incast = generate(
        &TrafficSpec::Incast {
            senders: 127,
            receiver: GpuId(0),
            bytes: 2_000_000,
        },
        &k8,
    )
    .unwrap();
    bench(
        "htsim incast 127->1, 2 MB, k=8, 1 thread",
        &incast,
        &k8,
        &cfg,
    );
    let perm = |topo: &Topology| {
        generate(
            &TrafficSpec::Permutation {
                bytes: 2_000_000,
                per_host: true,
                seed: 1,
            },
            topo,
        )
        .unwrap()
    };
    bench(
        "htsim permutation 128, 2 MB, k=8, 1 thread",
        &perm(&k8),
        &k8,
        &cfg,
    );
    let k16 = fat_tree(16);
    bench(
        "htsim permutation 1024, 2 MB, k=16, 1 thread",
        &perm(&k16),
        &k16,
        &cfg,
    );
}

/// The htsim scenarios' configuration and fabric (module doc).
fn htsim_setup(k: u32) -> (Topology, PacketConfig) {
    let f = FabricLinkSpec {
        link_rate: Rate::gbps(100),
        link_latency: SimTime::from_us(1),
        switch_latency: SimTime::ZERO,
        ..Default::default()
    };
    let topo = topo_with(k * k * k / 4, TopologySpec::FatTree { k }, &f);
    let cfg = PacketConfig {
        mtu: 4000,
        header_bytes: 64,
        ack_bytes: 64,
        port_buffer_bytes: 100_000,
        flow_control: fabricsim::backend::packet::FlowControl::Pfc {
            xoff: 60_000,
            xon: 48_000,
            headroom: 40_000,
        },
        ..PacketConfig::default()
    };
    (topo, cfg)
}

/// The `windows` table (module doc): the one-queue loop against the
/// windowed loop in 1 and 2 partitions, alternately.
fn windows() {
    if let Some(word) = std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        if !"windows".contains(word.as_str()) {
            return;
        }
    }
    use std::sync::atomic::Ordering;
    let (k8, cfg) = htsim_setup(8);
    let incast = generate(
        &TrafficSpec::Incast {
            senders: 127,
            receiver: GpuId(0),
            bytes: 2_000_000,
        },
        &k8,
    )
    .unwrap();
    let perm = generate(
        &TrafficSpec::Permutation {
            bytes: 2_000_000,
            per_host: true,
            seed: 1,
        },
        &k8,
    )
    .unwrap();
    let runs: usize = std::env::var("FABRICSIM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    for (name, dag) in [("incast 127->1", &incast), ("permutation 128", &perm)] {
        // FABRICSIM_WINDOWS_P=1 runs one row (callgrind: one run of one P)
        let parts: Vec<u32> = match std::env::var("FABRICSIM_WINDOWS_P") {
            Ok(p) => vec![p.parse().expect("FABRICSIM_WINDOWS_P is a partition count")],
            Err(_) => vec![0, 1, 2],
        };
        let mut rates = vec![Vec::new(); parts.len()];
        let mut info = vec![(0, 0, 0, 0); parts.len()];
        for _ in 0..runs.max(1) {
            for (i, &p) in parts.iter().enumerate() {
                packet::PARTITIONS.store(p, Ordering::Relaxed);
                let c0 = cpu_ns();
                let (out, st) = packet::run_detailed(dag, &k8, &cfg).expect("bench run completes");
                if let (Some(a), Some(b)) = (c0, cpu_ns()) {
                    rates[i].push(out.events as f64 / ((b - a) as f64 * 1e-9) / 1e6);
                }
                info[i] = (
                    out.events,
                    st.partition_windows,
                    st.partition_steps,
                    st.partition_crossings,
                );
                packet::PARTITIONS.store(0, Ordering::Relaxed);
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let base = med(&mut rates[0].clone());
        for (i, &p) in parts.iter().enumerate() {
            let m = med(&mut rates[i]);
            let (ev, w, st, cr) = info[i];
            println!(
                "windows {name:<16} P = {p} ({}) {ev:>9} events  median {m:6.2} M events per CPU-second (min {:.2}, max {:.2}), {:.3} of one queue; {w} windows, {st} steps, {cr} crossings",
                if p == 0 { "one queue" } else { "windowed " },
                rates[i].first().copied().unwrap_or(f64::NAN),
                rates[i].last().copied().unwrap_or(f64::NAN),
                m / base
            );
        }
    }
}

/// One case of the `laws` table: a name, the `none` case it is compared
/// with (its index), the configuration.
struct LawCase {
    name: &'static str,
    base: usize,
    cfg: PacketConfig,
}

/// Every congestion-control law on one 32:1 incast, run alternately (module
/// doc): events per CPU-second and the ratio to `cc = "none"` on the same
/// fabric.
fn laws() {
    if let Some(word) = std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        if !"laws".contains(word.as_str()) {
            return;
        }
    }
    use fabricsim::backend::packet::{
        CongestionControl as Cc, DcqcnParams, Ecn, FlowControl, HpccParams, IbCcParams,
        LossRecovery, SwiftParams, TimelyParams, Transport,
    };
    let line = Rate::gbps(400);
    let ss = topo(33, TopologySpec::SingleSwitch);
    let dag = generate(
        &TrafficSpec::Incast {
            senders: 32,
            receiver: GpuId(0),
            bytes: 4 << 20,
        },
        &ss,
    )
    .unwrap();
    let ib = PacketConfig::default();
    let roce = PacketConfig {
        header_bytes: 78,
        ack_bytes: 82,
        port_buffer_bytes: 256 << 10,
        flow_control: FlowControl::Pfc {
            xoff: 128 << 10,
            xon: 120 << 10,
            headroom: 64 << 10,
        },
        ..PacketConfig::default()
    };
    let wire = (roce.mtu + roce.header_bytes) as u64;
    let red = Some(Ecn {
        kmin: 16 << 10,
        kmax: 96 << 10,
        pmax: 0.2,
    });
    let tcp = PacketConfig {
        mtu: 1460,
        header_bytes: 40,
        ack_bytes: 64,
        port_buffer_bytes: 64 << 10,
        flow_control: FlowControl::Lossy,
        transport: Transport::Tcp {
            per_packet_overhead: SimTime::from_ns(100),
            jitter: SimTime::ZERO,
        },
        window_bytes: 4 << 20,
        loss_recovery: LossRecovery::Tcp,
        ..PacketConfig::default()
    };
    let k = 20 * 1500;
    let cases = vec![
        LawCase {
            name: "RoCE PFC, cc = none",
            base: 0,
            cfg: roce.clone(),
        },
        LawCase {
            name: "RoCE PFC, DCQCN",
            base: 0,
            cfg: PacketConfig {
                ecn: red,
                cc: Cc::Dcqcn(DcqcnParams::for_line_rate(line)),
                ..roce.clone()
            },
        },
        LawCase {
            name: "RoCE PFC, HPCC",
            base: 0,
            cfg: PacketConfig {
                cc: Cc::Hpcc(HpccParams::new(wire)),
                ..roce.clone()
            },
        },
        LawCase {
            name: "RoCE PFC, Swift",
            base: 0,
            cfg: PacketConfig {
                cc: Cc::Swift(SwiftParams::for_line(line, wire, roce.port_buffer_bytes)),
                ..roce.clone()
            },
        },
        LawCase {
            name: "RoCE PFC, TIMELY",
            base: 0,
            cfg: PacketConfig {
                cc: Cc::Timely(TimelyParams::for_line(line)),
                ..roce.clone()
            },
        },
        LawCase {
            name: "IB credits, cc = none",
            base: 5,
            cfg: ib.clone(),
        },
        LawCase {
            name: "IB credits, IB CC",
            base: 5,
            cfg: PacketConfig {
                cc: Cc::Ib(IbCcParams::for_buffer(ib.port_buffer_bytes)),
                ..ib.clone()
            },
        },
        LawCase {
            name: "TCP lossy, cc = none",
            base: 7,
            cfg: tcp.clone(),
        },
        LawCase {
            name: "TCP lossy, NewReno",
            base: 7,
            cfg: PacketConfig {
                cc: Cc::NewReno { initial_window: 10 },
                ..tcp.clone()
            },
        },
        LawCase {
            name: "TCP lossy, CUBIC",
            base: 7,
            cfg: PacketConfig {
                cc: Cc::Cubic { initial_window: 10 },
                ..tcp.clone()
            },
        },
        LawCase {
            name: "TCP lossy, NewReno, no RACK",
            base: 7,
            cfg: PacketConfig {
                cc: Cc::NewReno { initial_window: 10 },
                tcp_rack: false,
                ..tcp.clone()
            },
        },
        LawCase {
            name: "TCP lossy, DCTCP",
            base: 7,
            cfg: PacketConfig {
                ecn: Some(Ecn {
                    kmin: k,
                    kmax: k,
                    pmax: 1.0,
                }),
                cc: Cc::Dctcp { g: 1.0 / 16.0 },
                ..tcp.clone()
            },
        },
    ];
    let runs: usize = std::env::var("FABRICSIM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut events = vec![0u64; cases.len()];
    for _ in 0..runs.max(1) {
        for (i, c) in cases.iter().enumerate() {
            let c0 = cpu_ns();
            let (out, _) = packet::run_detailed(&dag, &ss, &c.cfg).expect("bench run completes");
            if let (Some(a), Some(b)) = (c0, cpu_ns()) {
                rates[i].push(out.events as f64 / ((b - a) as f64 * 1e-9) / 1e6);
            }
            events[i] = out.events;
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let med: Vec<f64> = rates.iter_mut().map(median).collect();
    println!("laws: 32:1 incast, 4 MiB per sender, 400 Gb/s; {runs} alternating runs");
    for (i, c) in cases.iter().enumerate() {
        let (lo, hi) = (
            rates[i].first().copied().unwrap_or(f64::NAN),
            rates[i].last().copied().unwrap_or(f64::NAN),
        );
        println!(
            "{:<28} {:>9} events  median {:6.2} M events per CPU-second (min {lo:.2}, max {hi:.2})  {:5.2} of cc = none",
            c.name,
            events[i],
            med[i],
            med[i] / med[c.base]
        );
    }
}
