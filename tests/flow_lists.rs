//! Flow lists with dependencies (`workload.kind = "flows"`, issue 15) and the
//! htsim connection-matrix importer: timing against closed forms, every
//! malformed list a located error, same bytes twice.

use fabricsim::config::{self, Fidelity, Scenario};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};
use fabricsim::workload::flows::{cm_scenario, import_htsim_cm};

/// 4 hosts of one GPU and one 400G NDR NIC on a radix-4 leaf-spine, running
/// the `[[workload.flows]]` given.
fn scenario(flows: &str) -> Result<Scenario, String> {
    config::parse("flow_lists.toml", &scenario_text(flows)).map_err(|e| e.to_string())
}

/// The text of [`scenario`], ending in its `[simulation]` table.
fn scenario_text(flows: &str) -> String {
    format!(
        r#"
[cluster]
nodes = 4
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "leaf_spine"
radix = 4
[fabric]
preset = "ib-ndr-400"
[workload]
kind = "flows"
{flows}
[simulation]
fidelity = "flow"
"#
    )
}

fn run_at(s: &Scenario, f: Fidelity) -> Report {
    run(
        s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{f:?}: {e}"))
}

const THREE: &str = r#"
[[workload.flows]]
id = 1
src = 0
dst = 2
bytes = "4MiB"
[[workload.flows]]
id = "then"
src = 2
dst = 3
bytes = "4MiB"
after = [1]
[[workload.flows]]
id = 3
src = 1
dst = 3
bytes = "1MiB"
start = "50us"
after_sent = [1]
"#;

#[test]
fn dependencies_release_flows_when_the_closed_form_says() {
    // The NDR NIC's goodput is 47 GB/s (the ib-ndr-400 preset), so flow 1's
    // 4 MiB leave GPU 0 after S/B = 4194304 / 47e9 = 89.241 us: flow 3 waits
    // for that (`after_sent`), which is later than its own start (50 us).
    // Flow "then" waits for flow 1's last byte to arrive (`after`), which adds
    // the path latency: it starts exactly when flow 1 ends. At the flow level
    // flows "then" and 3 then share GPU 3's NIC: flow 3 is alone at 47 GB/s
    // until "then" starts, then gets half; fluid closed form for its end:
    // t1 + (1 MiB − (t_then − t1) · 47 GB/s) / 23.5 GB/s + path latency.
    let s = scenario(THREE).unwrap();
    let sent = 4194304.0 / 47e9 * 1e6;
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let r = run_at(&s, f);
        let by = |id: &str| r.listed_flows.iter().find(|x| x.id == id).unwrap().clone();
        let (one, then, three) = (by("1"), by("then"), by("3"));
        assert_eq!(r.listed_flows.len(), 3);
        assert_eq!(
            then.start_us, one.end_us,
            "{f:?}: `after` waits for the last byte"
        );
        assert!(
            (three.start_us / sent - 1.0).abs() < 1e-3,
            "{f:?}: flow 3 starts at {} us, flow 1's last byte left at {sent:.3} us",
            three.start_us
        );
        assert!(
            three.start_us < one.end_us,
            "{f:?}: sent comes before delivered"
        );
        assert_eq!(r.fabric.bytes_delivered, 9 << 20);
        if f == Fidelity::Flow {
            let latency = one.end_us - sent;
            let alone = (then.start_us - three.start_us) * 47e3; // bytes (47e3 B/us)
            let expected = then.start_us + (1048576.0 - alone) / 23.5e3 + latency;
            assert!(
                (three.end_us / expected - 1.0).abs() < 2e-3,
                "flow 3 ends at {} us, fluid closed form {expected:.3} us",
                three.end_us
            );
        }
    }
    // the packet level keeps the order the dependencies impose
    let r = run_at(&s, Fidelity::Packet);
    let by = |id: &str| r.listed_flows.iter().find(|x| x.id == id).unwrap().clone();
    assert!(by("then").start_us >= by("1").end_us);
    assert!(by("3").start_us >= 50.0 && by("3").start_us < by("1").end_us);
    assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent);
}

#[test]
fn a_flow_list_runs_to_the_same_bytes_twice() {
    let s = scenario(THREE).unwrap();
    for f in [Fidelity::Flow, Fidelity::Packet] {
        let mut a = run_at(&s, f);
        let mut b = run_at(&s, f);
        a.sim = Default::default();
        b.sim = Default::default();
        assert_eq!(a.to_json(), b.to_json(), "{f:?}");
    }
}

#[test]
fn every_malformed_list_is_a_located_error() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[[workload.flows]]\nid = 1\nsrc = 0\ndst = 1\nbytes = 1\n[[workload.flows]]\nid = 1\nsrc = 1\ndst = 2\nbytes = 1\n",
            "workload.flows.1.id",
            "again",
        ),
        (
            "[[workload.flows]]\nid = 1\nsrc = 0\ndst = 1\nbytes = 1\nafter = [7]\n",
            "workload.flows.0.after",
            "no flow of the list",
        ),
        (
            "[[workload.flows]]\nid = 1\nsrc = 0\ndst = 1\nbytes = 1\nafter_sent = [1]\n",
            "workload.flows.0.after_sent",
            "the flow itself",
        ),
        (
            "[[workload.flows]]\nid = 1\nsrc = 2\ndst = 2\nbytes = 1\n",
            "workload.flows.0.dst",
            "own source",
        ),
        (
            "[[workload.flows]]\nid = 1\nsrc = 0\ndst = 9\nbytes = 1\n",
            "workload.flows.0.dst",
            "a GPU between 0 and 3",
        ),
        (
            "[[workload.flows]]\nid = \"a\"\nsrc = 0\ndst = 1\nbytes = 1\nafter = [\"c\"]\n\
             [[workload.flows]]\nid = \"b\"\nsrc = 1\ndst = 2\nbytes = 1\nafter = [\"a\"]\n\
             [[workload.flows]]\nid = \"c\"\nsrc = 2\ndst = 3\nbytes = 1\nafter_sent = [\"b\"]\n",
            "workload.flows.",
            "cycle",
        ),
        ("", "workload.flows", "no flow"),
        (
            "bytes = \"1MiB\"\n[[workload.flows]]\nid = 1\nsrc = 0\ndst = 1\nbytes = 1\n",
            "workload.bytes",
            "kind = \"flows\"",
        ),
    ];
    for (flows, field, found) in cases {
        let e = scenario(flows).expect_err(flows);
        assert!(e.contains(field), "expected `{field}` in:\n{e}");
        assert!(e.contains(found), "expected {found:?} in:\n{e}");
        assert!(e.contains("flow_lists.toml:"), "not located:\n{e}");
    }
    // a flow list under another kind of workload
    let e = config::parse(
        "x.toml",
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = 2\n[workload]\nkind = \"traffic\"\npattern = \"incast\"\nsenders = 1\n[[workload.flows]]\nid = 1\nsrc = 0\ndst = 1\nbytes = 1\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("workload.flows") && e.contains("kind = \"flows\""),
        "{e}"
    );
}

#[test]
fn an_htsim_ring_of_triggers_runs_as_its_closed_form() {
    // A 1 MiB message passed around 4 hosts, each hop started by the previous
    // one's arrival (recv_done_trigger -> trigger), as htsim connection
    // matrices chain flows. Idle fabric: every hop takes S/B plus its path
    // latency, and the hops add up: the last ends at the sum of the four.
    let cm = "Nodes 4\nConnections 4\nTriggers 3\n\
              0->1 id 1 start 0 size 1048576 recv_done_trigger 1\n\
              1->2 id 2 size 1048576 trigger 1 recv_done_trigger 2\n\
              2->3 id 3 size 1048576 trigger 2 recv_done_trigger 3\n\
              3->0 id 4 size 1048576 trigger 3\n\
              trigger id 1 oneshot\ntrigger id 2 oneshot\ntrigger id 3 oneshot\n";
    let imported = import_htsim_cm(cm).unwrap();
    let text = cm_scenario(&imported, "ring.cm");
    let s = config::parse("ring.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for f in [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet] {
        let r = run_at(&s, f);
        assert_eq!(r.listed_flows.len(), 4, "{f:?}");
        let mut t = 0.0;
        for w in r.listed_flows.windows(2) {
            assert_eq!(
                w[1].start_us, w[0].end_us,
                "{f:?}: a hop starts when the last arrives"
            );
        }
        for x in &r.listed_flows {
            t += x.fct_us;
        }
        let last = r.listed_flows.last().unwrap();
        assert!(
            (last.end_us - t).abs() < 1e-6,
            "{f:?}: {} vs {t}",
            last.end_us
        );
        // roce-400's goodput bounds each hop from below: S / (400 Gb/s) = 20.97 us
        let hop = 1048576.0 / 50e3;
        for x in &r.listed_flows {
            assert!(
                x.fct_us > hop && x.fct_us < 1.3 * hop,
                "{f:?}: {}",
                x.fct_us
            );
        }
    }
}

#[test]
fn a_dag_whose_dependencies_outgrow_the_budget_is_refused_before_it_runs() {
    // 1,000 flows, each after the (up to) 200 before it: 1,000 x 200 -
    // 200 x 201 / 2 = 179,900 dependencies. The scenario's estimate counts
    // tasks only (2 x 1,000 x 112 B = 219 KiB plus a 4-host fabric; the DAG
    // has 1,000, one transfer per flow), under
    // 1 MiB, so validation accepts it; the built DAG holds 8 B per dependency
    // (its own entry and the runner's successor entry, src/budget.rs), 1.4 MiB
    // before anything else, so the run is refused before the backend starts.
    let mut flows = String::new();
    for i in 0..1000u32 {
        let after: Vec<String> = (i.saturating_sub(200)..i).map(|j| j.to_string()).collect();
        flows.push_str(&format!(
            "[[workload.flows]]\nid = {i}\nsrc = {}\ndst = {}\nbytes = \"4KiB\"\nafter = [{}]\n",
            i % 4,
            (i + 1) % 4,
            after.join(",")
        ));
    }
    let s = scenario(&flows).unwrap_or_else(|e| panic!("{e}"));
    // the same DAG fits the default budget and runs
    run_at(&s, Fidelity::Flow);
    let text = format!("{}max_memory = \"1MiB\"\n", scenario_text(&flows));
    let s = config::parse("dense.toml", &text).unwrap_or_else(|e| panic!("validation: {e}"));
    let e = run(&s, &RunOptions::default()).expect_err("over the budget");
    let msg = e.to_string();
    assert!(msg.contains("`workload.flows`"), "{msg}");
    assert!(msg.contains("1000 tasks and 179900 dependencies"), "{msg}");
    assert!(msg.contains("simulation.max_memory = 1MiB"), "{msg}");
    assert!(msg.contains("fewer flows or fewer dependencies"), "{msg}");
}

#[test]
fn htsims_ring_allreduce_of_8_rings_of_16_random_hosts_runs_at_packet_level() {
    // Issue 15's peer workload: 8 ring all-reduces of 250 KB, each over 16 of
    // 128 hosts placed at random (a fixed shuffle), written as htsim chains
    // them: 2(n−1) = 30 steps, each host sending S/n = 15,625 B to its
    // successor when its predecessor's piece of the step before has arrived
    // (recv_done_trigger -> trigger, one oneshot trigger per flow).
    let (rings, n, s) = (8usize, 16usize, 250_000u64);
    let mut hosts: Vec<usize> = (0..rings * n).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..hosts.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        hosts.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let steps = 2 * (n - 1);
    let id = |k: usize, step: usize, i: usize| 1 + (k * steps + step) * n + i;
    let mut lines = Vec::new();
    let mut triggers = Vec::new();
    for k in 0..rings {
        let ring = &hosts[k * n..(k + 1) * n];
        for step in 0..steps {
            for i in 0..n {
                let (src, dst) = (ring[i], ring[(i + 1) % n]);
                let me = id(k, step, i);
                let mut l = format!("{src}->{dst} id {me} size {}", s / n as u64);
                if step == 0 {
                    l += " start 0";
                } else {
                    // the piece host i received in the step before
                    l += &format!(" trigger {}", id(k, step - 1, (i + n - 1) % n));
                }
                if step + 1 < steps {
                    l += &format!(" recv_done_trigger {me}");
                    triggers.push(format!("trigger id {me} oneshot"));
                }
                lines.push(l);
            }
        }
    }
    let cm = format!(
        "Nodes {}\nConnections {}\nTriggers {}\n{}\n{}\n",
        rings * n,
        lines.len(),
        triggers.len(),
        lines.join("\n"),
        triggers.join("\n")
    );
    let imported = import_htsim_cm(&cm).unwrap();
    assert_eq!(imported.flows.len(), rings * n * steps);
    let text = cm_scenario(&imported, "allreduce-8x16.cm");
    let sc = config::parse("allreduce-8x16.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let r = run_at(&sc, Fidelity::Packet);
    assert_eq!(r.listed_flows.len(), 3840);
    // every flow carries S/n: at least its serialization at 400 Gb/s
    let piece_us = (s / n as u64) as f64 * 8.0 / 400e3;
    assert!(r.listed_flows.iter().all(|f| f.fct_us >= piece_us));
    // every step starts the moment the piece it waits for has arrived
    let by_id: std::collections::HashMap<&str, (f64, f64)> = r
        .listed_flows
        .iter()
        .map(|f| (f.id.as_str(), (f.start_us, f.end_us)))
        .collect();
    for k in 0..rings {
        for step in 1..steps {
            for i in 0..n {
                let me = by_id[id(k, step, i).to_string().as_str()];
                let before = by_id[id(k, step - 1, (i + n - 1) % n).to_string().as_str()];
                assert_eq!(me.0, before.1, "ring {k} step {step} host {i}");
            }
        }
    }
    // each ring's last piece lands after 30 chained steps and no sooner:
    // the makespan is at least 30 serializations of a piece
    let end = r.listed_flows.iter().map(|f| f.end_us).fold(0.0, f64::max);
    println!(
        "htsim ring all-reduce 8 x 16 hosts, 250 KB: 3,840 flows, packet makespan {end:.3} us, \
         flow FCT p50 {:.3} us",
        r.flows.fct_us.p50
    );
    assert!(end >= steps as f64 * piece_us, "{end}");
}
