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
use fabricsim::config::Fidelity;
use fabricsim::report::Report;
use fabricsim::run::RunOptions;

static HOOKS: Mutex<()> = Mutex::new(());

/// The report as JSON without `sim` (wall time, events per second).
fn json(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("sim");
    v
}

/// Runs scenario `text` (named `file`) at packet level in `parts`
/// partitions (0: the one-queue loop): its report without `sim`, or the
/// error's text; panics on a window violation.
fn run(file: &str, text: &str, parts: u32) -> Result<serde_json::Value, String> {
    PARTITIONS.store(parts, Ordering::Relaxed);
    WINDOW_VIOLATIONS.store(0, Ordering::Relaxed);
    let r = fabricsim::run::run(
        &common::parse(file, text),
        &RunOptions {
            fidelity: Some(Fidelity::Packet),
            collect_links: true,
            detail: true,
            flow_records: true,
            ..RunOptions::default()
        },
    );
    PARTITIONS.store(0, Ordering::Relaxed);
    let v = WINDOW_VIOLATIONS.swap(0, Ordering::Relaxed);
    assert_eq!(v, 0, "{file} in {parts} partitions: window violations");
    r.map(|r| json(&r)).map_err(|e| e.to_string())
}

/// The examples made for the packet level, and two jobs sharing a
/// leaf-spine (gated releases across jobs): `tests/event_order.rs`'s set.
fn packet_examples() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).ok()?;
            let name = p.file_name()?.to_str()?.to_string();
            (text.contains("fidelity = \"packet\"") || name == "two-jobs-leaf-spine.toml")
                .then_some(name)
        })
        .collect();
    names.sort();
    names
}

#[test]
fn packet_examples_give_one_report_at_one_two_and_four_partitions() {
    let _lock = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    let names = packet_examples();
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
