//! Dragonfly routing at scale: worst-case and uniform-random throughput per
//! routing (`fabric.routing` = ecmp's shortest paths, minimal, valiant, ugal,
//! ugal_g) on the 1,056-host dragonfly of issue 14 (p = 4 hosts per router,
//! a = 8 routers per group, h = 4 global ports per router, g = 33 = a·h + 1
//! groups; Kim, Dally, Scott, Abts, ISCA 2008, Fig. 8 uses this shape).
//!
//! `cargo bench --bench dragonfly` prints one row per (fidelity, routing);
//! `cargo bench --bench dragonfly -- flow` or `-- packet` runs one fidelity,
//! and a routing's name (`-- packet Ugal Valiant`, as printed) keeps only the
//! routings named. `DF_BENCH_MIB` sets the worst case's bytes per host
//! (default 1).
//!
//! - worst case: every host of group `i` sends 1 MiB to the host in the same
//!   place of group `i + 1` (Kim §4.1); minimal routing gives 1/(a·p) = 1/32
//!   of line rate, Valiant at most g/(2·a·p) = 33/64 (the global links, with
//!   its intermediate drawn over all groups);
//! - uniform: every host sends the same bytes to 32 destinations spread over
//!   the fabric (a sample of uniform random traffic: 256 KiB per pair at flow
//!   level, 64 KiB at packet level).
//!
//! Throughput: bytes per host × 8 / makespan over the payload line rate
//! (100 Gb/s links; packet level: MTU 4 KiB + 58 B headers, credits with
//! 8 lanes and lane escalation, which Valiant and UGAL need).

use std::time::Instant;

use fabricsim::backend::flow::{self, FlowConfig};
use fabricsim::backend::packet::{self, PacketConfig};
use fabricsim::backend::RunOutput;
use fabricsim::dag::Dag;
use fabricsim::topology::{
    build, ClusterSpec, DragonflyRouting, FabricLinkSpec, GpuId, Topology, TopologySpec,
};
use fabricsim::units::{Rate, SimTime};

const G: u32 = 33;
const A: u32 = 8;
const P: u32 = 4;
const H: u32 = 4;

fn topology(r: DragonflyRouting) -> Topology {
    let hosts = G * A * P;
    let mut t = build(
        &ClusterSpec {
            hosts,
            gpus_per_host: 1,
            nics_per_host: 1,
            nvlink_rate: Rate::gbps(3600),
            nvlink_latency: SimTime::from_ns(100),
            pcie_rate: Rate::gbps(512),
            pcie_latency: SimTime::from_ns(250),
        },
        &FabricLinkSpec {
            link_rate: Rate::gbps(100),
            link_latency: SimTime::from_ns(100),
            switch_latency: SimTime::from_ns(200),
            ..Default::default()
        },
        &TopologySpec::Dragonfly {
            groups: G,
            routers_per_group: A,
            hosts_per_router: P,
            global_links_per_router: H,
        },
    )
    .expect("the dragonfly builds");
    t.set_dragonfly_routing(r);
    t
}

fn worst_case(bytes: u64) -> Dag {
    let n = G * A * P;
    let mut dag = Dag::new();
    dag.begin_op("worst-case");
    for s in 0..n {
        dag.transfer(GpuId(s), GpuId((s + A * P) % n), bytes, &[]);
    }
    dag
}

/// Destinations per host of the uniform pattern.
const FANOUT: u32 = 32;

/// Uniform random traffic, sampled: every host sends `bytes` to each of
/// [`FANOUT`] destinations spread over the whole fabric (host `s` to
/// `s + 1 + k·(n − 1)/FANOUT + j` for a per-host offset `j`), so every group
/// pair carries its share; a full all-to-all (1.1 M flows) took over 10 minutes
/// per routing at flow level.
fn uniform(bytes: u64) -> Dag {
    let n = G * A * P;
    let mut dag = Dag::new();
    dag.begin_op("uniform");
    let step = (n - 1) / FANOUT;
    for s in 0..n {
        let j = fabricsim::topology::mix64(u64::from(s)) % u64::from(step);
        for k in 0..FANOUT {
            let d = (s + 1 + k * step + j as u32) % n;
            if d != s {
                dag.transfer(GpuId(s), GpuId(d), bytes, &[]);
            }
        }
    }
    dag
}

fn throughput(out: &RunOutput, per_host: u64, rate: f64) -> f64 {
    per_host as f64 * 8.0 / out.makespan.as_secs_f64() / rate
}

fn main() {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let fidelities = ["flow", "packet"];
    let want = |f: &str| {
        !only.iter().any(|o| fidelities.contains(&o.as_str())) || only.iter().any(|o| o == f)
    };
    let named = |r: DragonflyRouting| {
        let name = format!("{r:?}");
        only.iter().all(|o| fidelities.contains(&o.as_str())) || only.contains(&name)
    };
    let mib: u64 = std::env::var("DF_BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let n = G * A * P;
    println!("dragonfly p{P} a{A} h{H} g{G}: {n} hosts");
    println!("| fidelity | routing | worst case | uniform | wall |");
    println!("|---|---|---|---|---|");
    let routings = [
        DragonflyRouting::Shortest,
        DragonflyRouting::Minimal,
        DragonflyRouting::Valiant,
        DragonflyRouting::Ugal,
        DragonflyRouting::UgalG,
    ];
    if want("flow") {
        let (wb, ub) = (mib << 20, 256u64 << 10);
        let (wd, ud) = (worst_case(wb), uniform(ub));
        for r in routings.into_iter().filter(|&r| named(r)) {
            let t0 = Instant::now();
            let topo = topology(r);
            let cfg = FlowConfig::default();
            let w = throughput(&flow::run(&wd, &topo, &cfg).expect("runs"), wb, 100e9);
            let u = throughput(
                &flow::run(&ud, &topo, &cfg).expect("runs"),
                ub * u64::from(FANOUT),
                100e9,
            );
            println!(
                "| flow | {r:?} | {w:.3} | {u:.3} | {:.1} s |",
                t0.elapsed().as_secs_f64()
            );
        }
    }
    if want("packet") {
        let cfg = PacketConfig {
            vls: 8,
            vl_escalation: true,
            ..PacketConfig::default()
        };
        let rate = 100e9 * f64::from(cfg.mtu) / f64::from(cfg.mtu + cfg.header_bytes);
        let (wb, ub) = (mib << 20, 64u64 << 10);
        let (wd, ud) = (worst_case(wb), uniform(ub));
        for r in routings.into_iter().filter(|&r| named(r)) {
            let t0 = Instant::now();
            let topo = topology(r);
            let w = match packet::run(&wd, &topo, &cfg) {
                Ok(o) => format!("{:.3}", throughput(&o, wb, rate)),
                Err(e) => format!("({e})"),
            };
            let u = match packet::run(&ud, &topo, &cfg) {
                Ok(o) => format!("{:.3}", throughput(&o, ub * u64::from(FANOUT), rate)),
                Err(e) => format!("({e})"),
            };
            println!(
                "| packet | {r:?} | {w} | {u} | {:.1} s |",
                t0.elapsed().as_secs_f64()
            );
        }
    }
}
