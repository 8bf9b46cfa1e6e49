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

fn run(example: &str) -> serde_json::Value {
    common::json_without_sim(&common::run_packet(example, &common::example(example)))
}

#[test]
fn packet_examples_do_not_depend_on_release_push_or_slot_order() {
    let names = common::packet_examples();
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
