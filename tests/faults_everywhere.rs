//! `[[faults]]` in collective sweeps and traffic patterns (issue 12: a setting that
//! was parsed, documented and then dropped for every workload but training and
//! inference). Each size of a sweep runs with the faults, `at` counted from its
//! start, beside the same size on the healthy fabric; a traffic pattern runs with
//! them; a slow GPU, which has no compute to stretch there, is listed as unused.
//! Small fabrics: 2 nodes × 2 GPUs, one 400G NIC per GPU, two leaves, two spines.

use fabricsim::config::{self, Fidelity, Scenario};
use fabricsim::report::Report;
use fabricsim::run::{run, RunError, RunOptions};

/// 2 DGX-like nodes of 2 GPUs and 2 NDR NICs each on a radix-4 leaf-spine (two
/// leaves, two spines), running `workload` with `faults`.
fn scenario(workload: &str, faults: &str) -> Scenario {
    let text = format!(
        r#"
[cluster]
nodes = 2
gpus_per_node = 2
nics_per_node = 2
nvlink_bandwidth = "450GB/s"
[topology]
kind = "leaf_spine"
radix = 4
[fabric]
preset = "ib-ndr-400"
[workload]
{workload}
[simulation]
fidelity = "flow"
{faults}
"#
    );
    config::parse("faults_everywhere.toml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

const RING: &str = r#"kind = "collective"
op = "allreduce"
algorithm = "ring"
channels = 2
sizes = ["4MiB", "64MiB"]"#;

const DEGRADED_NIC0: &str = r#"
[[faults]]
name = "NIC 0 cable at 100G"
kind = "link_degraded"
nic = 0
rate = "100Gbps"
"#;

fn try_run(s: &Scenario, f: Fidelity) -> Result<Report, RunError> {
    run(
        s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
}

fn run_at(s: &Scenario, f: Fidelity) -> Report {
    try_run(s, f).unwrap_or_else(|e| panic!("{f:?}: {e}"))
}

#[test]
fn a_degraded_nic_bounds_the_ring_by_its_slowest_channel() {
    // Two channels, each a ring leaving every node through its own NIC (NCCL's
    // layout). NIC 0's cable at 100G (both directions) slows channel 0 to a
    // quarter of the others' rate, and a ring all-reduce ends with its slowest
    // channel: per channel t = 2(n−1)/n · (S/2) / B_slow, so busbw =
    // S/t · 2(n−1)/n = 2 · B_slow = 2 × 12.5 GB/s = 25 GB/s of line rate (the
    // ring closed form, e.g. Thakur, Rabenseifner, Gropp 2005), less the InfiniBand
    // headers (26 B per 4 KiB MTU: 0.6%) and the step latencies. At 64 MiB the
    // latencies are ~1% of the time, so 2% below line rate bounds the result,
    // and the bound itself caps it.
    let healthy = scenario(RING, "");
    let faulty = scenario(RING, DEGRADED_NIC0);
    for f in [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet] {
        let h = run_at(&healthy, f);
        let r = run_at(&faulty, f);
        assert_eq!(r.collectives.len(), 2, "{f:?}");
        assert_eq!(r.faults.len(), 1, "{f:?}");
        assert_eq!(r.faults[0].kind, "link_degraded");
        let big = &r.collectives[1];
        assert!(
            big.busbw_gbps <= 25.0 && big.busbw_gbps >= 25.0 * 0.98,
            "{f:?}: busbw {} GB/s with NIC 0 at 100G, expected 2 × 12.5 GB/s less ≤ 2%",
            big.busbw_gbps
        );
        // the baseline columns are the healthy run's own rows
        for (row, base) in r.collectives.iter().zip(&h.collectives) {
            let ht = row.healthy_time_us.expect("a faulty sweep has a baseline");
            let hb = row
                .healthy_busbw_gbps
                .expect("a faulty sweep has a baseline");
            assert!(
                base.healthy_time_us.is_none(),
                "{f:?}: no faults, no baseline"
            );
            // the analytical sweep without faults uses the closed forms, the
            // faulty one the schedule: they agree to the schedule's rounding
            let tol = if f == Fidelity::Analytical { 0.01 } else { 0.0 };
            assert!(
                (ht - base.time_us).abs() <= tol * base.time_us,
                "{f:?} {}: baseline {ht} us, healthy run {} us",
                row.bytes,
                base.time_us
            );
            assert!(
                (hb - base.busbw_gbps).abs() <= tol * base.busbw_gbps,
                "{f:?}"
            );
            assert!(
                row.time_us >= ht,
                "{f:?}: a slower cable cannot speed it up"
            );
        }
        // healthy: two 400G channels, which at the flow and packet levels may
        // share one 400G spine uplink (ECMP collision: busbw 2 × 25 GB/s), and
        // at worst still twice the degraded ring
        assert!(
            big.healthy_busbw_gbps.unwrap() > 1.9 * big.busbw_gbps,
            "{f:?}"
        );
    }
}

#[test]
fn a_fault_after_each_size_ends_changes_nothing() {
    // Each size starts at zero on the healthy fabric; a switch lost at 1 s, long
    // after every size ended (the 64 MiB all-reduce takes ~1.5 ms), leaves every
    // row equal to its baseline to the picosecond.
    let late = scenario(
        RING,
        r#"
[[faults]]
name = "spine 0 lost, late"
kind = "switch_down"
switch = 2
at = "1s"
"#,
    );
    for f in [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet] {
        let r = run_at(&late, f);
        for row in &r.collectives {
            assert_eq!(
                Some(row.time_us),
                row.healthy_time_us,
                "{f:?} {}",
                row.bytes
            );
        }
    }
}

#[test]
fn a_slow_gpu_in_a_collective_or_traffic_run_is_listed_not_dropped() {
    let slow = r#"
[[faults]]
name = "straggler"
kind = "slow_gpu"
gpu = 1
factor = 2.0
"#;
    let traffic = r#"kind = "traffic"
pattern = "incast"
senders = 2
receiver = 0
bytes = "1MiB""#;
    for (workload, what) in [(RING, "a collective sweep"), (traffic, "a traffic pattern")] {
        let s = scenario(workload, slow);
        for f in [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet] {
            let r = run_at(&s, f);
            let listed: Vec<&str> = r.ignored_settings.iter().map(|i| i.key.as_str()).collect();
            for key in ["faults.0.kind", "faults.0.gpu", "faults.0.factor"] {
                assert!(
                    listed.contains(&key),
                    "{f:?}: {key} not listed in {listed:?}"
                );
            }
            let reason = &r
                .ignored_settings
                .iter()
                .find(|i| i.key == "faults.0.factor")
                .unwrap()
                .reason;
            assert!(reason.contains(what), "{reason}");
            // no link fault: no baseline, no fault line
            assert!(r.faults.is_empty());
            assert!(r.collectives.iter().all(|c| c.healthy_time_us.is_none()));
            // and what validate plans is what the run lists
            let planned = fabricsim::run::ignored_settings(&s, f).unwrap();
            assert_eq!(planned, r.ignored_settings, "{f:?}");
        }
    }
}

#[test]
fn a_fault_that_cuts_a_ring_is_a_located_error() {
    // NIC 0 is GPU 0's only way out of node 0 for channel 0: with its cable cut
    // the ring has no path, and the error names the fault, not a saturated time.
    let cut = scenario(
        RING,
        r#"
[[faults]]
name = "NIC 0 cable cut"
kind = "link_down"
nic = 0
"#,
    );
    for f in [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet] {
        let e = try_run(&cut, f)
            .expect_err("a cut ring cannot finish")
            .to_string();
        assert!(
            e.contains("faults[0]") && e.contains("NIC 0 cable cut"),
            "{f:?}: {e}"
        );
        assert!(e.contains("no path"), "{f:?}: {e}");
    }
}

#[test]
fn a_receiver_cable_degraded_mid_incast_follows_the_closed_form() {
    // GPUs 2 and 3 (node 1) each send 8 MiB to GPU 0, whose 400G NIC is the
    // bottleneck: 47 GB/s of goodput (the ib-ndr-400 preset's NIC goodput). At
    // 100 us its cable drops to 100G, whose payload rate is 12.5 GB/s × 4096/4122
    // (NDR's 26 B of headers per 4 KiB MTU) = 12.42 GB/s. The incast then ends at
    // 100 us + (2 × 8 MiB − 100 us × 47 GB/s) / 12.42 GB/s = 1072.3 us (fluid
    // closed form: the bottleneck drains the same bytes at its new rate). The
    // flow level matches it to the rounding of its rates, the packet level adds
    // the per-packet store-and-forward and ACK pipeline (< 1%). The analytical
    // fidelity prices a transfer on the fabric of its start (module doc of
    // `backend::analytical`), so a fault after both flows began changes nothing.
    let workload = r#"kind = "traffic"
pattern = "incast"
senders = 2
receiver = 0
bytes = "8MiB""#;
    let healthy = scenario(workload, "");
    let degraded = scenario(
        workload,
        r#"
[[faults]]
name = "receiver cable at 100G"
kind = "link_degraded"
nic = 0
rate = "100Gbps"
at = "100us"
"#,
    );
    let bytes = 2.0 * 8.0 * 1048576.0;
    let slow = 12.5e9 * 4096.0 / 4122.0;
    let expected_us = 100.0 + (bytes - 100e-6 * 47e9) / slow * 1e6;
    for (f, tol) in [(Fidelity::Flow, 0.005), (Fidelity::Packet, 0.01)] {
        let r = run_at(&degraded, f);
        assert_eq!(r.faults.len(), 1, "{f:?}");
        assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent, "{f:?}");
        assert_eq!(r.fabric.bytes_sent, 16 << 20, "{f:?}");
        assert!(
            (r.makespan_us / expected_us - 1.0).abs() <= tol,
            "{f:?}: {} us, closed form {expected_us:.1} us",
            r.makespan_us
        );
    }
    let h = run_at(&healthy, Fidelity::Analytical);
    let r = run_at(&degraded, Fidelity::Analytical);
    assert_eq!(r.makespan_us, h.makespan_us);
}
