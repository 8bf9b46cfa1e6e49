//! Issue 16, step M2a: a packet run in P partitions on one thread, by
//! conservative windows (one event queue per partition, outboxes delivered
//! at barriers, global events stepped), gives the one-queue run's results:
//! every packet example's report is identical apart from `sim` (the event
//! count included) at P = 1, 2 and 4, or the run is refused before it starts
//! with the reason located (a credit-controlled cut link, a DAG edge between
//! partitions, more partitions than hosts). No window may let an event
//! through out of order (`WINDOW_VIOLATIONS`).
//!
//! The hooks are process-wide: the tests of this binary take one lock.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use fabricsim::backend::packet::{PARTITIONS, WINDOW_VIOLATIONS};

static HOOKS: Mutex<()> = Mutex::new(());

/// Runs scenario `text` (named `file`) at packet level in `parts`
/// partitions (0: the one-queue loop): its report without `sim`, or the
/// error's text; panics on a window violation.
fn run(file: &str, text: &str, parts: u32) -> Result<serde_json::Value, String> {
    PARTITIONS.store(parts, Ordering::Relaxed);
    WINDOW_VIOLATIONS.store(0, Ordering::Relaxed);
    let r = fabricsim::run::run(&common::parse(file, text), &common::packet_options());
    PARTITIONS.store(0, Ordering::Relaxed);
    let v = WINDOW_VIOLATIONS.swap(0, Ordering::Relaxed);
    assert_eq!(v, 0, "{file} in {parts} partitions: window violations");
    r.map(|r| common::json_without_sim(&r))
        .map_err(|e| e.to_string())
}

#[test]
fn packet_examples_give_one_report_at_one_two_and_four_partitions() {
    let _lock = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    let names = common::packet_examples();
    assert!(names.len() >= 12, "{names:?}");
    let mut identical = 0;
    for name in &names {
        let text = common::example(name);
        let plain = run(name, &text, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
        for parts in [1, 2, 4] {
            match run(name, &text, parts) {
                Ok(r) => {
                    assert!(
                        r == plain,
                        "{name} in {parts} partitions: the report changed"
                    );
                    println!("{name}: P = {parts} identical");
                    identical += 1;
                }
                Err(e) => {
                    // one partition runs everything; more may be refused,
                    // before the run, with the reason
                    assert!(parts > 1, "{name} in one partition: {e}");
                    assert!(
                        e.contains(&format!("packet run in {parts} partitions")),
                        "{e}"
                    );
                    println!("{name}: P = {parts} refused: {e}");
                }
            }
        }
    }
    println!("{identical} identical runs");
}

/// An all-reduce over 8 hosts × 2 GPUs of a RoCE (PFC) leaf-spine whose
/// network links (50 ns, switches forwarding in no time) are the fabric's
/// fastest: NVLink and PCIe take 400 ns, so every cut link is a
/// minimum-latency link and the windows are as narrow as the fabric allows.
fn allreduce(algorithm: &str, extra: &str) -> String {
    format!(
        r#"
name = "all-reduce {algorithm}, 8 x 2 GPUs, leaf-spine RoCE"
[cluster]
nodes = 8
gpus_per_node = 2
nics_per_node = 2
nvlink_bandwidth = "450GB/s"
nvlink_latency = "400ns"
pcie_latency = "400ns"
[topology]
kind = "leaf_spine"
radix = 8
[fabric]
kind = "roce"
link_rate = "100Gbps"
mtu = "4KiB"
link_latency = "50ns"
switch_latency = "0ns"
buffer = "256KiB"
pfc = true
[workload]
kind = "collective"
op = "allreduce"
algorithm = "{algorithm}"
sizes = ["192KiB"]
{extra}
[simulation]
fidelity = "packet"
"#
    )
}

#[test]
fn collectives_with_local_edges_on_minimum_latency_cuts_give_one_report() {
    // Ring and tree steps are local (the rank that receives sends next):
    // releases inside windows, queue pairs created inside windows (a tree
    // parent's pair once its children have sent).
    let _lock = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    for algorithm in ["ring", "tree"] {
        let text = allreduce(algorithm, "");
        let file = format!("allreduce-{algorithm}.toml");
        let plain = run(&file, &text, 0).unwrap_or_else(|e| panic!("{file}: {e}"));
        for parts in [1, 2, 4] {
            let r = run(&file, &text, parts).unwrap_or_else(|e| panic!("{file} in {parts}: {e}"));
            assert!(
                r == plain,
                "{file} in {parts} partitions: the report changed"
            );
        }
    }
}

#[test]
fn what_crosses_partitions_at_zero_delay_is_refused_with_its_place() {
    let _lock = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    let refused = |file: &str, text: &str, parts: u32| {
        let e = run(file, text, parts).expect_err(file);
        assert!(
            e.contains(&format!("packet run in {parts} partitions")),
            "{e}"
        );
        e
    };
    // credits on a cut link: the sender's FIFO and stall, at zero delay
    let ib = common::example("incast-infiniband.toml");
    let e = refused("incast-infiniband.toml", &ib, 2);
    assert!(
        e.contains("credit-controlled") && e.contains("link "),
        "{e}"
    );
    // UGAL-G reads remote queues
    let df = common::example("pfc-deadlock-dragonfly.toml")
        .replace("pfc = true", "pfc = false")
        .replace("cc = \"none\"", "cc = \"none\"\nrouting = \"ugal_g\"");
    let e = refused("ugal-g.toml", &df, 2);
    assert!(e.contains("UGAL-G"), "{e}");
    // a hierarchical all-reduce over a rail tree: its gate marker joins
    // every host's intra-host phase and releases the inter-host one
    let h = allreduce("hierarchical", "inter_host = \"tree\"");
    let e = refused("hierarchical.toml", &h, 2);
    assert!(
        e.contains("Marker") && e.contains("waits on task") && e.contains("at zero delay"),
        "{e}"
    );
    if let Err(e) = run("hierarchical.toml", &h, 1) {
        panic!("one partition runs it: {e}");
    }
    // more partitions than hosts
    let e = refused("hierarchical.toml", &h, 16);
    assert!(
        e.contains("16 partitions asked for but the fabric has 8 hosts"),
        "{e}"
    );
}
