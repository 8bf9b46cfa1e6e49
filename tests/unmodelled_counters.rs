//! Counters a fidelity does not model are absent, never measured zeros (issue 12,
//! "Numbers that cannot lie"): `null` in JSON under the same keys, `n/a` in the
//! table, an empty cell in CSV, `n/a` or a skipped row in `compare`. Which
//! fidelity models what is one table, `Fidelity::models`; these tests hold the
//! JSON, the renderings and the README's table to it.
//!
//! Scenario: `examples/incast-lossy-ethernet.toml`, a 32:1 incast of 1 MiB per
//! sender on drop-tail 400 GbE (0.2 s at packet level in release). At packet level
//! the receiver's 32 KiB port overflows, so drops and retransmissions are real,
//! non-zero counts (`tests/packet_scenarios.rs` holds them > 0); at flow level the
//! same incast shares the port max-min and has no packets to drop.

use std::path::Path;
use std::process::Command;

use fabricsim::backend::Counter;
use fabricsim::config::{self, Fidelity};
use fabricsim::report::{self, Report};
use fabricsim::run::{run, RunOptions};

const BIN: &str = env!("CARGO_BIN_EXE_fabricsim");
const INCAST: &str = "examples/incast-lossy-ethernet.toml";
const FIDELITIES: [Fidelity; 3] = [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet];

/// The `fabric` keys below the packet level models none of.
const PACKET_ONLY: [&str; 10] = [
    "drops",
    "drops_corrupted",
    "bytes_dropped",
    "ecn_marks",
    "pfc_pause_frames",
    "retransmitted_packets",
    "max_queue_bytes",
    "credit_stall_ps",
    "cnps",
    "timeouts",
];

fn incast_at(f: Fidelity, collect_links: bool) -> Report {
    let s = config::load(Path::new(INCAST)).unwrap();
    run(
        &s,
        &RunOptions {
            fidelity: Some(f),
            collect_links,
            flow_records: true,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{f:?}: {e}"))
}

fn json(r: &Report) -> serde_json::Value {
    serde_json::from_str(&r.to_json()).unwrap()
}

/// A scenario file like `INCAST` but running at `f`, in a fresh directory.
fn incast_file_at(f: Fidelity, tag: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("fabricsim-unmodelled-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(INCAST).unwrap().replace(
        "fidelity = \"packet\"",
        &format!("fidelity = \"{}\"", f.name()),
    );
    let p = dir.join(format!("incast-{}.toml", f.name()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_json_keeps_every_key_and_nulls_exactly_what_the_fidelity_does_not_model() {
    for f in FIDELITIES {
        let r = incast_at(f, true);
        let j = json(&r);
        let fabric = j["fabric"].as_object().unwrap();
        // bytes are modelled everywhere and conserved: 32 senders × 1 MiB
        assert_eq!(fabric["bytes_delivered"], 32u64 << 20, "{f:?}");
        assert_eq!(fabric["bytes_sent"], 32u64 << 20, "{f:?}");
        for key in PACKET_ONLY {
            // the key is there for every consumer, at every fidelity
            let v = fabric
                .get(key)
                .unwrap_or_else(|| panic!("{f:?}: fabric.{key} missing"));
            if f == Fidelity::Packet {
                assert!(v.is_u64(), "{f:?}: fabric.{key} = {v}");
            } else {
                assert!(v.is_null(), "{f:?}: fabric.{key} = {v}, expected null");
            }
        }
        // slowdown: 1 by construction at the analytical level, measured above it
        let slow = &j["flows"]["slowdown"];
        assert_eq!(slow.is_null(), f == Fidelity::Analytical, "{f:?}: {slow}");
        assert!(j["flows"]["fct_us"]["p99"].as_f64().unwrap() > 0.0, "{f:?}");
        // per-link counters (`--links`): bytes and utilization where links are
        // collected, queue / drop / stall / pause only at packet level
        for l in j["links"].as_array().map_or(&[][..], |v| v.as_slice()) {
            assert!(l["bytes"].is_u64() && l["utilization"].is_f64(), "{l}");
            for key in [
                "drops",
                "max_queue_bytes",
                "avg_queue_bytes",
                "stall_ps",
                "paused_ps",
                "pause_frames",
            ] {
                assert_eq!(l[key].is_null(), f != Fidelity::Packet, "{f:?} {key}: {l}");
            }
        }
        if f != Fidelity::Analytical {
            assert!(!r.links.is_empty(), "{f:?} collects links");
        }
    }
}

#[test]
fn the_packet_level_reports_the_drops_it_measured() {
    // drop-tail overflow under a 32:1 incast: real, non-zero counts
    let r = incast_at(Fidelity::Packet, false);
    assert!(r.fabric.drops.is_some_and(|d| d > 0), "{:?}", r.fabric);
    assert!(r.fabric.retransmitted_packets.is_some_and(|n| n > 0));
    assert!(r.fabric.max_queue_bytes.is_some_and(|q| q > 0));
    // conservation where modelled: go-back-N resends until every byte arrives
    assert_eq!(r.fabric.bytes_sent, r.fabric.bytes_delivered);
}

#[test]
fn every_counter_of_the_report_follows_fidelity_models() {
    // The JSON's nulls are derived from the one table, not from a second list:
    // for every counter with a `fabric` key, null ⇔ not modelled.
    for f in FIDELITIES {
        let j = json(&incast_at(f, false));
        for c in Counter::ALL {
            if let Some(v) = j["fabric"].get(c.key()) {
                assert_eq!(v.is_null(), !f.models(c), "{f:?} {}: {v}", c.key());
            }
        }
        assert_eq!(
            j["flows"]["slowdown"].is_null(),
            !f.models(Counter::FctSlowdown)
        );
    }
    // bytes are modelled everywhere (conservation is checked on them)
    for f in FIDELITIES {
        assert!(f.models(Counter::BytesDelivered) && f.models(Counter::BytesSent));
    }
}

#[test]
fn the_table_prints_n_a_below_the_packet_level_and_numbers_at_it() {
    for f in FIDELITIES {
        let text = report::table::render(&incast_at(f, false));
        let fabric = text
            .lines()
            .find(|l| l.starts_with("# fabric:"))
            .unwrap_or_else(|| panic!("{f:?}: no fabric line in\n{text}"));
        if f == Fidelity::Packet {
            assert!(!fabric.contains("n/a"), "{fabric}");
            assert!(!fabric.contains(" 0 drops"), "the incast drops: {fabric}");
        } else {
            assert_eq!(
                fabric,
                "# fabric: 32MiB delivered, n/a drops, n/a ECN marks, n/a CNPs, n/a PFC pauses, n/a retransmitted, max queue n/a"
            );
        }
        let flows = text.lines().find(|l| l.starts_with("# flows")).unwrap();
        assert_eq!(
            flows.contains("slowdown p50 n/a, p99 n/a"),
            f == Fidelity::Analytical,
            "{f:?}: {flows}"
        );
    }
}

#[test]
fn a_flow_level_incast_no_longer_says_zero_drops() {
    let out = Command::new(BIN)
        .args(["run", INCAST, "--fidelity", "flow", "--quiet"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("0 drops"), "{text}");
    assert!(!text.contains("max queue 0B"), "{text}");
    assert!(text.contains("n/a drops"), "{text}");
}

#[test]
fn compare_of_a_flow_and_a_packet_run_shows_n_a_not_a_zero_row() {
    let flow = incast_file_at(Fidelity::Flow, "compare");
    let out = Command::new(BIN)
        .args(["compare", flow.to_str().unwrap(), INCAST, "--quiet"])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(flow.parent().unwrap());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let row = |name: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(&format!("# {name} ")))
            .unwrap_or_else(|| panic!("no {name} row in\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // `# drops  <A> <B> <B/A>`: A (flow) is n/a, B (packet) a real count, no ratio
    let drops = row("drops");
    let n = drops.len();
    assert_eq!(drops[n - 3], "n/a", "{text}");
    assert!(drops[n - 2].parse::<u64>().unwrap() > 0, "{text}");
    assert_eq!(drops[n - 1], "-", "{text}");
    for name in [
        "ECN marks",
        "PFC pauses",
        "PFC watchdog fires",
        "PFC deadlock cycles",
    ] {
        let r = row(name);
        assert_eq!(r[r.len() - 3], "n/a", "{name}: {text}");
        assert!(r[r.len() - 2].parse::<u64>().is_ok(), "{name}: {text}");
    }
    // the flow run's FCT is modelled: a number and a ratio
    let fct = row("flow p99 FCT (us)");
    assert!(fct[fct.len() - 1].parse::<f64>().is_ok(), "{text}");

    // a comparison of two runs that both do not model drops skips the row
    let a = incast_at(Fidelity::Flow, false);
    let b = incast_at(Fidelity::Analytical, false);
    let t = report::compare::table(&[a, b], &["flow".into(), "analytical".into()]);
    for name in [
        "drops",
        "ECN marks",
        "PFC pauses",
        "PFC watchdog fires",
        "PFC deadlock cycles",
    ] {
        assert!(
            !t.lines().any(|l| l.starts_with(&format!("# {name} "))),
            "{name} row in\n{t}"
        );
    }
}

#[test]
fn sweep_and_csv_leave_unmodelled_cells_empty() {
    let out = Command::new(BIN)
        .args([
            "sweep",
            INCAST,
            "--set",
            "simulation.fidelity=flow,packet",
            "--quiet",
            "--jobs",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{text}");
    let (flow, packet) = (&rows[0], &rows[1]);
    assert_eq!(flow[col("fidelity")], "flow");
    for name in [
        "drops",
        "ecn_marks",
        "pfc_pause_frames",
        "pfc_watchdog_triggers",
        "pfc_watchdog_drops",
        "pfc_headroom_drops",
        "pfc_deadlock_cycles",
    ] {
        assert_eq!(flow[col(name)], "", "flow {name}: {text}");
        assert!(
            packet[col(name)].parse::<u64>().is_ok(),
            "packet {name}: {text}"
        );
    }
    assert!(packet[col("drops")].parse::<u64>().unwrap() > 0);

    // flows.csv: the analytical slowdown (1 by construction) is an empty cell
    let r = incast_at(Fidelity::Analytical, false);
    let csv = report::csv::flows(&r);
    let mut l = csv.lines();
    assert!(l.next().unwrap().ends_with(",slowdown"));
    assert_eq!(csv.lines().count(), 1 + 32, "one row per sender: {csv}");
    assert!(l.all(|row| row.ends_with(',')), "{csv}");
    let csv = report::csv::flows(&incast_at(Fidelity::Flow, false));
    assert!(csv.lines().skip(1).all(|row| !row.ends_with(',')), "{csv}");

    // links.csv: bytes and utilization at flow level, the packet-only columns empty
    let r = incast_at(Fidelity::Flow, true);
    let csv = report::csv::links(&r);
    assert!(csv.lines().count() > 1, "links carried the incast: {csv}");
    for row in csv.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        assert!(cells[1].parse::<u64>().is_ok(), "{row}");
        assert!(cells[3..].iter().all(|c| c.is_empty()), "{row}");
    }
}

#[test]
fn the_html_report_does_not_show_unmodelled_counters_as_zeros() {
    let r = incast_at(Fidelity::Flow, false);
    let html = report::html::render(&r, None);
    assert!(html.contains("n/a drops"), "fabric counters row");
    assert!(!html.contains(" 0 drops"));
    // no sampled queue/PFC/ECN series exists below the packet level
    assert!(!html.contains("sec-series"));
}

#[test]
fn the_readme_table_of_modelled_counters_matches_fidelity_models() {
    // README: `| counter | analytical | flow | packet |` with `yes` / `—`; every
    // counter of `Counter::ALL` named once.
    let readme = std::fs::read_to_string("README.md").unwrap();
    let mut rows = readme
        .lines()
        .skip_while(|l| !l.starts_with("| counter | analytical | flow | packet |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    let mut seen = 0;
    for row in rows.by_ref() {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        // the keys are the backquoted names before any parenthesis
        let names = cells[0].split('(').next().unwrap_or_default();
        let keys: Vec<&str> = names
            .split(',')
            .map(|k| k.trim().trim_matches('`'))
            .collect();
        for key in keys {
            let c = Counter::ALL
                .into_iter()
                .find(|c| c.key() == key)
                .unwrap_or_else(|| panic!("README names {key}, not a counter"));
            for (i, f) in FIDELITIES.into_iter().enumerate() {
                assert_eq!(
                    cells[1 + i] == "yes",
                    f.models(c),
                    "README row {row:?}, {f:?}"
                );
            }
            seen += 1;
        }
    }
    assert_eq!(seen, Counter::ALL.len(), "every counter has a README row");
}
