//! `simulation.threads` / `--threads` (issue 16): a scenario's independent
//! simulations (each `[[jobs]]` job alone; with several `[[faults]]` the
//! healthy fabric and each fault alone) run on worker threads, and the result
//! is the same byte for byte at every thread count: each run writes its own
//! slot, and results are gathered in run order, never in finishing order.

mod common;

use fabricsim::config::{self, Fidelity};
use fabricsim::report::Report;
use fabricsim::run::{ignored_settings, RunOptions};

/// The report as JSON without `sim` (wall time, events per second).
fn json(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("sim");
    v
}

fn run_threads(example: &str, fidelity: Fidelity, threads: usize) -> serde_json::Value {
    let text = common::example(example);
    json(&common::run_with(
        example,
        &text,
        &RunOptions {
            fidelity: Some(fidelity),
            threads: Some(threads),
            collect_links: true,
            ..RunOptions::default()
        },
    ))
}

#[test]
fn jobs_alone_give_the_same_report_on_one_two_and_three_threads() {
    // three jobs: together, then each alone (three independent runs)
    let one = run_threads("two-jobs-leaf-spine.toml", Fidelity::Flow, 1);
    assert_eq!(
        one,
        run_threads("two-jobs-leaf-spine.toml", Fidelity::Flow, 2)
    );
    assert_eq!(
        one,
        run_threads("two-jobs-leaf-spine.toml", Fidelity::Flow, 3)
    );
    // the jobs section is there and was filled by the alone runs
    let jobs = one["jobs"].as_array().expect("jobs[]");
    assert_eq!(jobs.len(), 3);
    for j in jobs {
        assert!(j["alone_makespan_us"].as_f64().unwrap() > 0.0, "{j}");
    }
}

#[test]
fn jobs_at_the_packet_level_give_the_same_report_on_two_threads() {
    let one = run_threads("two-jobs-leaf-spine.toml", Fidelity::Packet, 1);
    assert_eq!(
        one,
        run_threads("two-jobs-leaf-spine.toml", Fidelity::Packet, 2)
    );
}

#[test]
fn fault_tables_give_the_same_report_on_one_and_two_threads() {
    // three faults: the healthy step and each fault alone are four runs
    let one = run_threads("training-faults.toml", Fidelity::Flow, 1);
    assert_eq!(one, run_threads("training-faults.toml", Fidelity::Flow, 2));
    let faults = one["training"]["faults"]
        .as_array()
        .expect("training.faults[]");
    assert_eq!(faults.len(), 3);
}

#[test]
fn the_key_is_listed_where_there_is_one_simulation_and_read_where_there_are_more() {
    let with = |example: &str| {
        let text = common::example(example).replace("[simulation]", "[simulation]\nthreads = 2");
        let s = common::parse(example, &text);
        // the flow level reads the key on one simulation too (its own threads)
        let fidelity = match s.fidelity() {
            Fidelity::Flow if example == "allreduce-leaf-spine.toml" => Fidelity::Analytical,
            f => f,
        };
        ignored_settings(&s, fidelity)
            .unwrap()
            .into_iter()
            .find(|i| i.key == "simulation.threads")
    };
    let one = with("allreduce-leaf-spine.toml").expect("listed on a single collective run");
    assert!(one.reason.contains("one simulation"), "{}", one.reason);
    assert!(with("two-jobs-leaf-spine.toml").is_none());
    assert!(with("training-faults.toml").is_none());
    let s = common::parse("a.toml", &common::example("allreduce-leaf-spine.toml"));
    let read = ignored_settings(&s, Fidelity::Flow).unwrap();
    assert!(!read.iter().any(|i| i.key == "simulation.threads"));
}

/// One collective at the flow level, large enough (128 DGX H100 nodes, a
/// hierarchical all-reduce of 1 GiB in 4 MiB chunks: 523,809 tasks, above
/// the 262,144 from which the busiest NIC is counted beside the run) that
/// every use of the threads is taken (the tuner's and the lowering's
/// pipeline candidates side by side too): the same JSON apart from `sim`,
/// and the same event count, at 1, 2 and 4 threads.
#[test]
fn one_flow_level_run_gives_the_same_report_on_one_two_and_four_threads() {
    let text = r#"name = "threads"
[cluster]
preset = "dgx-h100-node"
nodes = 128
[topology]
kind = "rail_optimized"
radix = 64
spine_radix = 128
[fabric]
preset = "ib-ndr-400"
[workload]
op = "allreduce"
algorithm = "hierarchical"
inter_host = "tree"
sizes = ["1GiB"]
chunk = "4MiB"
[simulation]
fidelity = "flow"
"#;
    let at = |threads: usize| {
        let r = common::run_with(
            "threads.toml",
            text,
            &RunOptions {
                threads: Some(threads),
                collect_links: true,
                ..RunOptions::default()
            },
        );
        (json(&r), r.sim.events)
    };
    let one = at(1);
    assert!(
        // at most two events per task (sent, then done): ≥ 262,144 tasks
        one.1 >= 2 * 262_144,
        "{} events: too small to take the parallel path",
        one.1
    );
    assert_eq!(one, at(2));
    assert_eq!(one, at(4));
}

#[test]
fn out_of_range_thread_counts_are_located_errors() {
    let base = common::example("two-jobs-leaf-spine.toml");
    for bad in ["0", "257", "-1"] {
        let text = base.replace("[simulation]", &format!("[simulation]\nthreads = {bad}"));
        let e = config::parse("t.toml", &text).expect_err(bad).to_string();
        assert!(e.contains("simulation.threads") && e.contains(bad), "{e}");
        assert!(e.contains("from 1 to 256"), "{e}");
    }
}
