//! Issue 16, step M1: a packet run's results do not depend on orders that a
//! partitioned (parallel) run would not reproduce. The event queue orders
//! simultaneous events by a key of the event alone (its unit tests shuffle
//! pushes); here every packet example runs twice, the second time with
//! [`PERTURB_ORDERS`] set: the DAG runner's release order reversed before
//! the start order sorts it, the first pushes reversed, packets in other
//! slab slots. The reports must be identical apart from `sim`. On the
//! engine before M1 (insertion order, ready tasks in release order) the
//! reversed releases created queue pairs in another order and the reports
//! differed.
//!
//! One test in this binary: the hook is a process-wide flag.

mod common;

use std::sync::atomic::Ordering;

use fabricsim::backend::packet::PERTURB_ORDERS;
use fabricsim::report::Report;

/// The report as JSON without `sim` (wall time, events per second).
fn json(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("sim");
    v
}

fn run(example: &str) -> serde_json::Value {
    json(&common::run_packet(example, &common::example(example)))
}

#[test]
fn packet_examples_do_not_depend_on_release_push_or_slot_order() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).ok()?;
            // the examples made for the packet level, and two jobs sharing
            // a leaf-spine (gated releases across jobs)
            let name = p.file_name()?.to_str()?.to_string();
            (text.contains("fidelity = \"packet\"") || name == "two-jobs-leaf-spine.toml")
                .then_some(name)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 12, "{names:?}");
    for name in &names {
        PERTURB_ORDERS.store(false, Ordering::Relaxed);
        let plain = run(name);
        PERTURB_ORDERS.store(true, Ordering::Relaxed);
        let perturbed = run(name);
        PERTURB_ORDERS.store(false, Ordering::Relaxed);
        assert!(plain == perturbed, "{name}: the report changed");
    }
}
