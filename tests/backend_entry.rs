//! The one backend entry point (issue 12): `backend::run` with one `LinkEvent`
//! type at every fidelity, progress observers at every fidelity (the packet
//! level included), and a PFC deadlock in a training step reported like one in
//! a traffic run (the cycle, the phase, exit code 3).
//!
//! Fabrics are small: a 4-host leaf-spine (2 hosts per leaf, 2 spines) for the
//! link events and progress, and the 40-host dragonfly of
//! `examples/pfc-deadlock-dragonfly.toml` (0.1 s at packet level) for the deadlock.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fabricsim::backend::{
    self, BackendConfig, BackendError, LinkEvent, LinkEventKind, Observers, ProgressHook,
    ProgressTick, RunOutput, Sampling, TimelineRequest, PROGRESS_EVERY,
};
use fabricsim::collective::{self, Algorithm, CollectiveOp, CollectiveSpec};
use fabricsim::config::{self, Fidelity};
use fabricsim::dag::Dag;
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::{
    build, ClusterSpec, FabricLinkSpec, GpuId, LinkId, Topology, TopologySpec,
};
use fabricsim::units::{Rate, SimTime};

const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");
const FIDELITIES: [Fidelity; 3] = [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet];

fn leaf_spine() -> Topology {
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
    let shape = TopologySpec::LeafSpine {
        radix: 4,
        oversubscription: 1.0,
    };
    build(&c, &f, &shape).unwrap()
}

/// A ring all-reduce of `bytes` over the 4 GPUs, in 1 MiB chunks.
fn ring(topo: &Topology, bytes: u64) -> Dag {
    let spec = CollectiveSpec {
        op: CollectiveOp::AllReduce,
        algorithm: Algorithm::Ring,
        bytes,
        chunk_bytes: 1 << 20,
        channels: 1,
        pxn: true,
        proto: collective::ProtoCost::NONE,
        inter_host: Algorithm::Ring,
        root: 0,
    };
    let ranks: Vec<GpuId> = (0..4).map(GpuId).collect();
    let mut dag = Dag::new();
    dag.begin_op("allreduce");
    collective::lower(&spec, &ranks, topo, &mut dag, &[]).unwrap();
    dag
}

/// Both directions of GPU 0's NIC cable.
fn cable(topo: &Topology) -> [LinkId; 2] {
    let up = topo.nics[0].uplink;
    [up, topo.reverse(up)]
}

fn at(fidelity: Fidelity, events: Vec<LinkEvent>) -> BackendConfig {
    BackendConfig {
        link_events: events,
        ..BackendConfig::new(fidelity, 1)
    }
}

fn same_result(a: &RunOutput, b: &RunOutput) -> bool {
    a.makespan == b.makespan
        && a.op_timing == b.op_timing
        && a.transfer_fct == b.transfer_fct
        && a.fabric == b.fabric
}

#[test]
fn one_link_event_list_degrades_the_run_at_every_fidelity() {
    // The same list — GPU 0's cable drops to 100 Gb/s 1 µs in — goes to all
    // three backends through the one entry point. The ring's later steps all
    // cross that cable, so each fidelity's makespan grows, by roughly the
    // 4x slower cable's share of the ring (well over 1.5x here).
    let topo = leaf_spine();
    let dag = ring(&topo, 16 << 20);
    let slow: Vec<LinkEvent> = cable(&topo)
        .into_iter()
        .map(|link| LinkEvent {
            at: SimTime::from_us(1),
            link,
            kind: LinkEventKind::Rate(Rate::gbps(100)),
        })
        .collect();
    for f in FIDELITIES {
        let none = Observers::default();
        let healthy = backend::run(&dag, &topo, &at(f, Vec::new()), &none).unwrap();
        let degraded = backend::run(&dag, &topo, &at(f, slow.clone()), &none).unwrap();
        assert!(
            degraded.makespan.0 as f64 > 1.5 * healthy.makespan.0 as f64,
            "{f:?}: healthy {} degraded {}",
            healthy.makespan,
            degraded.makespan
        );
        assert_eq!(
            degraded.fabric.bytes_delivered, healthy.fabric.bytes_delivered,
            "{f:?}"
        );
    }
}

#[test]
fn a_bit_error_rate_changes_only_the_packet_level_and_a_link_return_is_refused_below_it() {
    // One list with a BER on the cable: the packet level corrupts and resends
    // packets; the analytical and flow fidelities have no packets, skip the
    // event and give exactly the healthy result (a scenario lists the key in
    // `ignored_settings`). A link coming back `Up` is refused below the packet
    // level rather than skipped, which would leave the link down.
    let topo = leaf_spine();
    let dag = ring(&topo, 4 << 20);
    let ber: Vec<LinkEvent> = cable(&topo)
        .into_iter()
        .map(|link| LinkEvent {
            at: SimTime::ZERO,
            link,
            kind: LinkEventKind::Ber(1e-6),
        })
        .collect();
    let none = Observers::default();
    for f in FIDELITIES {
        let healthy = backend::run(&dag, &topo, &at(f, Vec::new()), &none).unwrap();
        let noisy = backend::run(&dag, &topo, &at(f, ber.clone()), &none).unwrap();
        if f == Fidelity::Packet {
            assert!(noisy.fabric.drops_corrupted > 0, "{:?}", noisy.fabric);
            assert!(noisy.makespan > healthy.makespan);
        } else {
            assert!(same_result(&healthy, &noisy), "{f:?}");
        }
        let [a, _] = cable(&topo);
        let down_up = vec![
            LinkEvent {
                at: SimTime::from_us(1),
                link: a,
                kind: LinkEventKind::Down,
            },
            LinkEvent {
                at: SimTime::from_us(2),
                link: a,
                kind: LinkEventKind::Up,
            },
        ];
        match backend::run(&dag, &topo, &at(f, down_up), &none) {
            Ok(out) => {
                assert_eq!(f, Fidelity::Packet);
                assert_eq!(out.fabric.bytes_delivered, dag.transfer_bytes());
            }
            Err(BackendError::Unsupported(m)) => {
                assert_ne!(f, Fidelity::Packet);
                assert!(m.contains("back up"), "{m}");
            }
            Err(e) => panic!("{f:?}: {e}"),
        }
    }
}

/// A progress observer that records every tick.
fn recorder() -> (ProgressHook, Arc<Mutex<Vec<ProgressTick>>>) {
    let ticks = Arc::new(Mutex::new(Vec::new()));
    let t = ticks.clone();
    (
        Arc::new(move |p: ProgressTick| t.lock().unwrap().push(p)),
        ticks,
    )
}

#[test]
fn the_packet_level_calls_the_progress_observer_without_changing_results() {
    // 64 MiB ring all-reduce: a few hundred thousand packet events, so the
    // observer is called once per PROGRESS_EVERY events, with growing event
    // counts and simulated times, and the run is the same as without it.
    let topo = leaf_spine();
    let dag = ring(&topo, 64 << 20);
    let cfg = at(Fidelity::Packet, Vec::new());
    let plain = backend::run(&dag, &topo, &cfg, &Observers::default()).unwrap();
    let (hook, ticks) = recorder();
    let watched = backend::run(
        &dag,
        &topo,
        &cfg,
        &Observers {
            progress: Some(hook),
            ..Observers::default()
        },
    )
    .unwrap();
    assert!(same_result(&plain, &watched));
    assert_eq!(plain.events, watched.events);
    let ticks = ticks.lock().unwrap();
    assert!(plain.events > 2 * PROGRESS_EVERY, "{} events", plain.events);
    assert_eq!(ticks.len() as u64, plain.events / PROGRESS_EVERY);
    for (i, t) in ticks.iter().enumerate() {
        assert_eq!(t.events, (i as u64 + 1) * PROGRESS_EVERY);
        assert!(t.sim_time <= plain.makespan);
    }
    assert!(ticks.windows(2).all(|w| w[0].sim_time <= w[1].sim_time));
}

#[test]
fn sampling_and_the_link_timeline_come_from_the_fidelities_that_model_them() {
    // Sampling fills the packet level's queue series; the link timeline is the
    // flow and packet levels' bytes per link and bucket (the analytical level
    // has no link occupancy). Neither changes the result, and
    // a fidelity that does not model one leaves it empty rather than zero.
    let topo = leaf_spine();
    let dag = ring(&topo, 4 << 20);
    let watch = Observers {
        progress: None,
        link_timeline: Some(TimelineRequest {
            horizon: SimTime::ZERO,
            links: 0,
        }),
        sampling: Some(Sampling {
            interval: SimTime::from_ns(500),
            ports: 4,
            max_samples: 64,
        }),
        // nor does keeping one time per task instead of both ends at the flow level
        skip_task_spans: true,
    };
    for f in FIDELITIES {
        let cfg = at(f, Vec::new());
        let plain = backend::run(&dag, &topo, &cfg, &Observers::default()).unwrap();
        let watched = backend::run(&dag, &topo, &cfg, &watch).unwrap();
        assert!(same_result(&plain, &watched), "{f:?}");
        assert_eq!(plain.transfer_ideal, watched.transfer_ideal, "{f:?}");
        // only the flow level drops the spans it was told nobody reads
        assert_eq!(plain.task_start.len(), dag.len(), "{f:?}");
        assert_eq!(watched.task_start.is_empty(), f == Fidelity::Flow, "{f:?}");
        assert_eq!(watched.task_done.is_empty(), f == Fidelity::Flow, "{f:?}");
        assert_eq!(!watched.series.is_empty(), f == Fidelity::Packet, "{f:?}");
        assert!(watched.series.iter().all(|s| s.samples.len() <= 64));
        assert_eq!(
            watched.link_timeline.is_some(),
            f != Fidelity::Analytical,
            "{f:?}"
        );
    }
}

#[test]
fn the_analytical_fidelity_ticks_once_at_the_end() {
    // One pass, no event loop: the only tick is the finished run.
    let topo = leaf_spine();
    let dag = ring(&topo, 4 << 20);
    let (hook, ticks) = recorder();
    let out = backend::run(
        &dag,
        &topo,
        &at(Fidelity::Analytical, Vec::new()),
        &Observers {
            progress: Some(hook),
            ..Observers::default()
        },
    )
    .unwrap();
    let ticks = ticks.lock().unwrap();
    assert_eq!(ticks.len(), 1);
    assert_eq!(ticks[0].sim_time, out.makespan);
    assert_eq!(ticks[0].events, out.events);
}

/// A mixture-of-experts step (EP = 40: an all-to-all per MoE layer) on the
/// dragonfly of `examples/pfc-deadlock-dragonfly.toml`: PFC on one priority,
/// minimal routes local-global-local, so the all-to-all deadlocks.
const MOE_ON_DRAGONFLY: &str = r#"
name = "MoE step on a dragonfly with one PFC priority"

[cluster]
nodes = 40
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"

[topology]
kind = "dragonfly"
groups = 5
routers_per_group = 4
hosts_per_router = 2
global_links_per_router = 1

[fabric]
kind = "roce"
link_rate = "400Gbps"
mtu = "4KiB"
link_latency = "100ns"
switch_latency = "500ns"
buffer = "256KiB"
pfc = true
ecn = false
cc = "none"

[workload]
kind = "training"

[workload.model]
layers = 2
hidden = 1024
ffn = 4096
heads = 8
vocab = 32000
seq_len = 2048
global_batch = 40
micro_batch = 1
gated_mlp = false
experts = 40
top_k = 2

[workload.parallel]
data = 40
tensor = 1
expert = 40
bucket = "1MiB"

[workload.gpu]
preset = "h100-sxm"

[simulation]
fidelity = "packet"
deadlock_timeout = "500us"
"#;

#[test]
fn a_pfc_deadlock_in_a_training_step_is_reported_with_its_cycle_and_phase() {
    // Before the one entry point this run ended in an error (exit 1): only
    // collective and traffic runs turned a PFC deadlock into a result.
    let s = config::parse("moe-dragonfly.toml", MOE_ON_DRAGONFLY).unwrap_or_else(|e| panic!("{e}"));
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let r = run(
        &s,
        &RunOptions {
            progress: Some(Arc::new(move |_| {
                c.fetch_add(1, Ordering::Relaxed);
            })),
            ..RunOptions::default()
        },
    )
    .expect("a deadlock is a result, not an error");
    let d = r.deadlock.as_ref().expect("the step deadlocks");
    assert!(d.cycle.len() >= 2, "{d:?}");
    for w in 0..d.cycle.len() {
        assert_eq!(d.cycle[w].to, d.cycle[(w + 1) % d.cycle.len()].from);
    }
    assert_eq!(d.during.as_deref(), Some("training step"));
    assert_eq!(d.ops_in_flight, ["ep_alltoall"]);
    // the step never ended: no training section, but what moved until then
    assert!(r.training.is_none());
    assert!(r.fabric.pfc_pause_frames.is_some_and(|n| n > 0));
    assert!(r.fabric.bytes_delivered < r.fabric.bytes_sent);
    // a training run at packet level shows progress too
    assert!(calls.load(Ordering::Relaxed) >= 1);

    // The binary: the result is printed and the exit code is 3.
    let (json, _) = run_deadlocking_file("moe-dragonfly.toml", MOE_ON_DRAGONFLY);
    let dl = &json["deadlock"];
    assert!(dl["cycle"].as_array().is_some_and(|c| c.len() >= 2), "{dl}");
    assert_eq!(dl["during"], "training step");
    assert_eq!(dl["ops_in_flight"][0], "ep_alltoall");
}

/// A credit deadlock is reported like a PFC one (issue 12): the cycle of links
/// out of credits, what froze, the counters up to it, exit code 3. The shipped
/// dragonfly deadlock, on InfiniBand credits instead of PFC: minimal routes
/// take a group's local links before and after a global hop, so with one data
/// lane the input buffers wait on each other in a cycle (Kim et al., ISCA
/// 2008, §4.2; Dally & Seitz 1987).
#[test]
fn a_credit_deadlock_names_its_cycle_and_exits_3() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/pfc-deadlock-dragonfly.toml"
    ))
    .unwrap()
    .replace("kind = \"roce\"", "kind = \"infiniband\"")
    .replace("pfc = true\n", "")
    .replace("ecn = false\n", "")
    .replace("cc = \"none\"\n", "");
    let (json, text) = run_deadlocking_file("credit-dragonfly.toml", &text);
    let dl = &json["deadlock"];
    assert_eq!(dl["kind"], "credit", "{dl}");
    let cycle = dl["cycle"].as_array().expect("a cycle");
    assert!(cycle.len() >= 2, "{dl}");
    for (i, hop) in cycle.iter().enumerate() {
        assert_eq!(hop["to"], cycle[(i + 1) % cycle.len()]["from"], "{dl}");
    }
    assert_eq!(dl["ops_in_flight"][0], "alltoall");
    // the counters up to the deadlock, not zeros: bytes moved before it froze
    assert!(json["fabric"]["bytes_delivered"].as_u64().unwrap() > 0);
    assert!(
        text.contains("credit DEADLOCK") && text.contains("out-of-credit cycle link"),
        "{text}"
    );
    // the PFC version still says PFC
    let pfc = run(
        &config::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/pfc-deadlock-dragonfly.toml"
        )))
        .unwrap(),
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&pfc).unwrap()["deadlock"]["kind"],
        "pfc"
    );
}

/// Runs scenario `text` (written as `name` in a temporary directory) through
/// the binary, which must stop on a deadlock with exit code 3; returns its
/// JSON result and its table.
fn run_deadlocking_file(name: &str, text: &str) -> (serde_json::Value, String) {
    let dir = std::env::temp_dir().join(format!("fabricsim-entry-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let run = |args: &[&str]| Command::new(BIN).args(args).arg(&file).output().unwrap();
    let (json, table) = (run(&["run", "--json", "-q"]), run(&["run", "-q"]));
    std::fs::remove_dir_all(&dir).ok();
    for out in [&json, &table] {
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (
        serde_json::from_slice(&json.stdout).unwrap(),
        String::from_utf8_lossy(&table.stdout).into_owned(),
    )
}
