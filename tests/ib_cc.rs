//! InfiniBand congestion control (issue 13; IBA vol. 1 Annex A10 "Congestion
//! Control"; Gran et al., "First experiences with congestion control in
//! InfiniBand hardware", IPDPS 2010). The law's own steps (BECN raises CCTI,
//! the timer decays it, the injection delay follows the table) are unit tests
//! in `src/backend/packet/cc/ib.rs`; here, on the fabric:
//!
//! * the hot-spot + victim experiment (Gran et al. §IV, Fig. 3–5): without CC
//!   a hot spot's backlog spreads through credits into the spines and a flow
//!   that only shares a spine's downlink with it (the victim) crawls; with
//!   IB CC the hot spot's senders are throttled at the source, the tree
//!   drains, and the victim runs at its own line rate while the hot spot's
//!   link stays busy;
//! * the counters: FECN marks and BECNs are counted where IB CC runs and
//!   absent (JSON `null`) everywhere else, whatever the fabric;
//! * the configuration: `cc = "ib"` only on InfiniBand, parameters checked
//!   with located errors.

use std::path::Path;

use fabricsim::config::{self, Fidelity};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

const EXAMPLE: &str = "examples/incast-infiniband-cc.toml";

fn run_text(text: &str) -> Report {
    let s = config::parse("ib_cc.toml", text).unwrap_or_else(|e| panic!("{e}"));
    run(
        &s,
        &RunOptions {
            fidelity: Some(Fidelity::Packet),
            collect_links: true,
            flow_records: true,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The shipped example, with IB CC, or with `cc = "none"` and no `[fabric.ib_cc]`.
fn example(cc: bool) -> String {
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    if cc {
        return text;
    }
    let mut out = String::new();
    let mut in_ib = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_ib = line == "[fabric.ib_cc]";
        }
        if in_ib {
            continue;
        }
        if line.starts_with("cc = ") {
            out.push_str("cc = \"none\"\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// (victim FCT µs, victim ideal µs, utilization of the busiest link: the hot
/// spot's downlink to GPU 0, over the run, which the incast ends).
fn victim_and_hot_spot(r: &Report) -> (f64, f64, f64) {
    let v = r
        .flow_records
        .rows
        .iter()
        .find(|f| f.src == 24 && f.dst == 1)
        .expect("the victim flow 24 -> 1");
    let hot = r.links.iter().max_by_key(|l| l.bytes).unwrap();
    (v.fct_us, v.ideal_us, hot.utilization)
}

#[test]
fn ib_cc_frees_the_victim_of_a_hot_spot_and_keeps_the_hot_spot_busy() {
    // Scenario (examples/incast-infiniband-cc.toml): 16 senders × 4 MiB into
    // GPU 0 on a 400G leaf-spine with 32 KiB per port and lane; the victim
    // 24 -> 1 (1 MiB from 600 µs) shares a spine's downlink to leaf 0 with
    // incast flows, never the hot port.
    //
    // Expected (Gran et al. 2010, Fig. 4 vs 5; Annex A10's purpose): without
    // CC the victim is caught in the congestion tree, slowed by the hot
    // spot's drain rate shared over the tree's flows (its slowdown ≥ 5: the
    // spine's downlink gives it credits at the pace of the hot spot's 1/16
    // shares, not its line rate); with IB CC the tree is gone when it starts
    // and it runs at its line rate — its FCT within 10% of its idle-path
    // ideal (the 10% is the headroom for the few packets still queued at the
    // hot port's leaf under the threshold of buffer/2, at 82 ns each), so its
    // throughput is ≥ 5× that without CC. The hot spot's link stays ≥ 90%
    // busy with CC (the bound; Gran et al. report the hot spot's
    // throughput kept with CC), ≥ 98% without (credits alone never idle it).
    // Measured: victim 285.39 µs without CC, 23.93 µs with (ideal 23.40;
    // 11.9×); hot link busy 0.999 without, 0.957 with (0.943 while a paced
    // packet kept the gap of the CCTI in force when the previous one left).
    let without = run_text(&example(false));
    let with = run_text(&example(true));
    let (v0, ideal, hot0) = victim_and_hot_spot(&without);
    let (v1, ideal1, hot1) = victim_and_hot_spot(&with);
    assert_eq!(ideal, ideal1);
    eprintln!(
        "victim {v0:.2} -> {v1:.2} us (ideal {ideal:.2}); hot link busy {hot0:.3} -> {hot1:.3}"
    );
    assert!(v0 >= 5.0 * ideal, "no congestion tree without CC: {v0} us");
    assert!(
        v1 <= 1.10 * ideal,
        "victim with IB CC: {v1} us, ideal {ideal}"
    );
    assert!(v0 / v1 >= 5.0, "victim throughput gain {}", v0 / v1);
    assert!(hot0 >= 0.98, "hot spot without CC busy {hot0}");
    assert!(hot1 >= 0.90, "hot spot with IB CC busy {hot1}");
    // nothing lost either way: credits
    assert_eq!(with.fabric.drops, Some(0));
    assert_eq!(with.fabric.bytes_delivered, without.fabric.bytes_delivered);
    // The CC acted: marks at switches, one BECN per marked packet that
    // arrived (a packet marked at two ports returns one BECN).
    let marks = with.fabric.fecn_marks.unwrap();
    let becns = with.fabric.becns.unwrap();
    assert!(becns > 0 && becns <= marks, "{becns} BECNs, {marks} marks");
    assert_eq!(with.fabric.cnps, Some(becns), "each BECN is a CN packet");
}

#[test]
fn a_victim_starting_inside_the_onset_burst_is_not_freed_and_the_test_above_can_fail() {
    // The onset of a 16:1 incast at 400G fills the fabric's buffers within
    // ~10 µs, before a BECN has made a round trip; IB CC throttles the
    // sources but cannot remove what is already queued. A victim starting at
    // 50 µs is therefore slowed with or without CC (measured: 284.2 µs of
    // 23.4 ideal without, 97.4 µs with — CC shortens the tree's life but the
    // victim still waits ≥ 2× its ideal): the bound of the test above is not
    // met by construction, it depends on the tree having drained.
    let text = example(true).replace("start = \"600us\"", "start = \"50us\"");
    let (v, ideal, _) = victim_and_hot_spot(&run_text(&text));
    assert!(v >= 2.0 * ideal, "victim at 50 us: {v} us, ideal {ideal}");
}

#[test]
fn fecn_and_becn_counts_are_absent_where_ib_cc_does_not_run() {
    // IB CC's counters are modelled by the run's law: null (not 0) on an
    // InfiniBand fabric without it, on RoCE and at other fidelities.
    for (file, fidelity) in [
        ("examples/incast-infiniband.toml", Fidelity::Packet),
        ("examples/incast-roce-pfc-dcqcn.toml", Fidelity::Packet),
        (EXAMPLE, Fidelity::Flow),
    ] {
        let s = config::load(Path::new(file)).unwrap();
        let r = run(
            &s,
            &RunOptions {
                fidelity: Some(fidelity),
                ..RunOptions::default()
            },
        )
        .unwrap();
        let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        for key in ["fecn_marks", "becns"] {
            assert!(
                j["fabric"][key].is_null(),
                "{file} at {fidelity:?}: {key} = {}",
                j["fabric"][key]
            );
        }
        let line = fabricsim::report::table::fabric_line(&r.fabric);
        assert!(!line.contains("FECN"), "{file}: {line}");
    }
}

fn error_of(text: &str) -> String {
    match config::parse("ib_cc.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn ib_cc_is_refused_off_infiniband_and_bad_parameters_are_located() {
    let ib = example(true);
    // RoCE: the root/victim distinction needs credits
    let roce = std::fs::read_to_string("examples/incast-roce-pfc-dcqcn.toml")
        .unwrap()
        .replace("kind = \"roce\"", "kind = \"roce\"\ncc = \"ib\"");
    let e = error_of(&roce);
    assert!(e.contains("fabric.cc") && e.contains("infiniband"), "{e}");
    // parameters without the law
    let e = error_of(&ib.replace("cc = \"ib\" ", "cc = \"none\" "));
    assert!(e.contains("fabric.ib_cc"), "{e}");
    // ECN marking alongside FECN
    let e = error_of(&ib.replace("cc = \"ib\" ", "ecn = true\ncc = \"ib\" "));
    assert!(e.contains("fabric.ecn"), "{e}");
    for (from, to, key) in [
        (
            "threshold = 8 ",
            "threshold = 16 ",
            "fabric.ib_cc.threshold",
        ),
        ("ccti_min = 0", "ccti_min = 200", "fabric.ib_cc.ccti_min"),
        (
            "ccti_limit = 127",
            "ccti_limit = 16384",
            "fabric.ib_cc.ccti_limit",
        ),
        (
            "ccti_increase = 1 ",
            "ccti_increase = 0 ",
            "fabric.ib_cc.ccti_increase",
        ),
        (
            "ccti_timer = 2 ",
            "ccti_timer = 0 ",
            "fabric.ib_cc.ccti_timer",
        ),
        (
            "ccti_timer = 2 ",
            "ccti_timer = 65536 ",
            "fabric.ib_cc.ccti_timer",
        ),
        (
            "marking_rate = 0 ",
            "marking_rate = 1.5 ",
            "fabric.ib_cc.marking_rate",
        ),
        (
            "packet_size = 0 ",
            "packet_size = -1 ",
            "fabric.ib_cc.packet_size",
        ),
    ] {
        assert!(ib.contains(from), "{from}");
        let e = error_of(&ib.replace(from, to));
        assert!(e.contains(key), "{to}: {e}");
    }
    // the spec's units and explicit sizes are both accepted
    for (from, to) in [
        ("threshold = 8 ", "threshold = \"8KiB\" "),
        ("ccti_timer = 2 ", "ccti_timer = \"3us\" "),
        ("threshold = 8 ", "threshold = 0 "),
    ] {
        config::parse("ib_cc.toml", &ib.replace(from, to)).unwrap_or_else(|e| panic!("{to}: {e}"));
    }
}
