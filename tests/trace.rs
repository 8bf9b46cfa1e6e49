//! The Perfetto timeline (`--trace FILE`, issue 15): a Chrome trace-event JSON
//! document in which every transfer the run completed is one send slice whose
//! length is its completion time, every compute task a slice on its GPU, and
//! every run of a sweep an operation slice laid after the one before, so the
//! timeline adds up to the report's makespan. Same scenario and seed, same bytes.

use std::collections::HashMap;

use fabricsim::config::Fidelity;
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};
use fabricsim::sweep;

fn report(file: &str, sets: &[(&str, &str)], fidelity: Fidelity) -> Report {
    let text = std::fs::read_to_string(file).unwrap();
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let s = sweep::apply(file, &text, &sets).unwrap();
    let opts = RunOptions {
        fidelity: Some(fidelity),
        trace: true,
        ..RunOptions::default()
    };
    run(&s, &opts).unwrap()
}

struct Parsed {
    sends: Vec<(f64, f64, serde_json::Value)>,
    computes: usize,
    /// (name, start, end) of the operation slices, in file order.
    ops: Vec<(String, f64, f64)>,
}

fn parse(json: &str) -> Parsed {
    let doc: serde_json::Value = serde_json::from_str(json).expect("the timeline is JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let mut open: HashMap<(String, u64), (f64, serde_json::Value)> = HashMap::new();
    let mut p = Parsed {
        sends: Vec::new(),
        computes: 0,
        ops: Vec::new(),
    };
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        let cat = e["cat"].as_str().unwrap_or("").to_string();
        match ph {
            "M" => {}
            "X" => {
                assert_eq!(cat, "compute");
                assert!(e["dur"].as_f64().unwrap() >= 0.0);
                p.computes += 1;
            }
            "b" => {
                let id = e["id"].as_u64().unwrap();
                let prev = open.insert((cat, id), (e["ts"].as_f64().unwrap(), e.clone()));
                assert!(prev.is_none(), "slice id {id} opened twice");
            }
            "e" => {
                let id = e["id"].as_u64().unwrap();
                let (ts, b) = open
                    .remove(&(cat.clone(), id))
                    .unwrap_or_else(|| panic!("slice {id} ends without a start"));
                let te = e["ts"].as_f64().unwrap();
                assert!(te >= ts);
                assert_eq!(b["name"], e["name"]);
                match cat.as_str() {
                    "send" => p.sends.push((ts, te, b["args"].clone())),
                    "op" => p
                        .ops
                        .push((b["name"].as_str().unwrap().to_string(), ts, te)),
                    "net" => {}
                    c => panic!("unknown category {c}"),
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(open.is_empty(), "slices never closed: {}", open.len());
    p
}

#[test]
fn a_sweep_timeline_has_every_transfer_and_its_runs_end_to_end() {
    let r = report(
        "examples/allreduce-leaf-spine.toml",
        &[("cluster.nodes", "2"), ("workload.max_bytes", "8MiB")],
        Fidelity::Flow,
    );
    let trace = r.trace.as_ref().expect("asked for a timeline");
    assert_eq!(trace.left_out(), 0);
    let p = parse(&trace.to_json());
    // one send slice per transfer the run moved
    assert_eq!(p.sends.len() as u64, r.flows.count);
    // each slice lasts its completion time; the slowest is the report's max FCT
    let mut longest: f64 = 0.0;
    for (ts, te, args) in &p.sends {
        let fct = args["fct_us"].as_f64().unwrap();
        assert!((te - ts - fct).abs() < 1e-6, "{ts} {te} {fct}");
        assert!(args["ideal_us"].as_f64().unwrap() <= fct + 1e-6);
        longest = longest.max(fct);
        assert!(*te <= r.makespan_us + 1e-6);
    }
    // the report's statistics come from an HDR histogram of 3 significant
    // digits: equal to 1 part in 10^3
    assert!(
        (longest / r.flows.fct_us.max - 1.0).abs() < 1e-3,
        "{longest} vs {}",
        r.flows.fct_us.max
    );
    // the two sizes (1 MiB, 8 MiB) follow each other and add up to the makespan
    let runs: Vec<&(String, f64, f64)> = p
        .ops
        .iter()
        .filter(|o| o.0.starts_with("allreduce "))
        .collect();
    assert_eq!(runs.len(), 2, "{:?}", p.ops);
    assert_eq!(runs[0].1, 0.0);
    assert!((runs[1].1 - runs[0].2).abs() < 1e-6);
    assert!((runs[1].2 - r.makespan_us).abs() < 1e-3);
    // the 8 MiB transfers all lie in the second run's slice
    let late = p.sends.iter().filter(|s| s.0 >= runs[1].1 - 1e-9).count();
    assert!(late > 0 && late < p.sends.len());
}

#[test]
fn a_training_step_shows_compute_on_the_gpus_and_packet_runs_show_their_sends() {
    let r = report(
        "examples/training-llama2-7b.toml",
        &[("cluster.nodes", "2"), ("workload.parallel.data", "16")],
        Fidelity::Flow,
    );
    let p = parse(&r.trace.as_ref().unwrap().to_json());
    assert!(p.computes > 0, "a training step computes");
    assert_eq!(p.sends.len() as u64, r.flows.count);
    assert!(p.ops.iter().any(|o| o.0 == "training step"));

    let r = report("examples/incast-roce-pfc-only.toml", &[], Fidelity::Packet);
    let p = parse(&r.trace.as_ref().unwrap().to_json());
    assert_eq!(p.sends.len() as u64, r.flows.count);
    // 16 senders into GPU 0, and the example's victim flow 24 → 1 from 500 µs
    let to = |d: u64| {
        p.sends
            .iter()
            .filter(move |s| s.2["dst_gpu"].as_u64() == Some(d))
    };
    assert_eq!(to(0).count(), 16);
    let victim: Vec<_> = to(1).collect();
    assert_eq!(victim.len(), 1);
    assert_eq!(victim[0].2["src_gpu"].as_u64(), Some(24));
    assert!(
        (victim[0].0 - 500.0).abs() < 1e-6,
        "starts at {}",
        victim[0].0
    );
}

#[test]
fn closed_forms_have_run_slices_only_and_timelines_are_deterministic() {
    let r = report(
        "examples/allreduce-leaf-spine.toml",
        &[("cluster.nodes", "2"), ("workload.max_bytes", "8MiB")],
        Fidelity::Analytical,
    );
    let p = parse(&r.trace.as_ref().unwrap().to_json());
    assert!(p.sends.is_empty() && p.computes == 0);
    assert_eq!(p.ops.len(), 2);
    assert!((p.ops[1].2 - r.makespan_us).abs() < 1e-3);

    let a = report("examples/incast-roce-pfc-only.toml", &[], Fidelity::Packet);
    let b = report("examples/incast-roce-pfc-only.toml", &[], Fidelity::Packet);
    assert_eq!(a.trace.unwrap().to_json(), b.trace.unwrap().to_json());
}

#[test]
fn the_command_line_writes_the_timeline() {
    let path = std::env::temp_dir().join(format!("fabricsim-trace-{}.json", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args([
            "run",
            "examples/incast-roce-pfc-only.toml",
            "--fidelity",
            "flow",
            "--trace",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("# timeline:") && err.contains("ui.perfetto.dev"),
        "{err}"
    );
    let p = parse(&std::fs::read_to_string(&path).unwrap());
    assert!(!p.sends.is_empty());
    let _ = std::fs::remove_file(&path);
}
