//! IRN's headline on the kind of fabric its paper measures it on (Mittal et
//! al., "Revisiting Network Support for RDMA", SIGCOMM 2018, §4.1 and Fig. 1):
//! a loaded three-tier fat-tree, where which flow loses a packet at a full
//! port is not decided by the tie order of one lockstep incast
//! (`tests/loss_recovery.rs`'s `irn_without_pfc_is_not_slower_than_go_back_n_with_pfc`
//! traces why that incast cannot carry the claim).
//!
//! From the paper: 54 servers on a three-tier fat-tree of 45 switches (k = 6),
//! 40 Gb/s links, a heavy-tailed flow-size mix at 70% load, no congestion
//! control in the headline comparison, IRN's RTO_high = 320 µs and RTO_low =
//! 100 µs; RoCE (go-back-N) with PFC against IRN (selective repeat, BDP-FC:
//! `window = "bdp"`, at most one bandwidth-delay product of the longest path
//! outstanding, §3.2) without. Ours where the test had no confirmed figure:
//! the web-search mix (`cdf = "web_search"`), 1 KiB MTU, 2 µs links, 500 ns
//! switches, 240 KiB per port and priority, 3 ms of arrivals (≈ 330 flows),
//! RoCE's own timeout.

use fabricsim::backend::packet::{bdp_window_pkts, PacketConfig};
use fabricsim::config;
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};
use fabricsim::units::Rate;

mod common;

/// The §4.1 fabric and mix under `recovery` (the `[fabric]` lines that
/// differ), arrivals drawn from `seed`.
fn loaded_fat_tree(recovery: &str, seed: u64) -> Report {
    let text = format!(
        r#"
name = "IRN §4.1: k = 6 fat-tree, 70% web search"
[cluster]
nodes = 54
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "fat_tree"
k = 6
[fabric]
kind = "roce"
link_rate = "40Gbps"
mtu = "1KiB"
header_bytes = 78
link_latency = "2us"
switch_latency = "500ns"
buffer = "240KiB"
transport = "rdma"
ecn = false
cc = "none"
{recovery}
[workload]
kind = "traffic"
pattern = "random"
cdf = "web_search"
load = 0.7
duration = "3ms"
[simulation]
fidelity = "packet"
seed = {seed}
"#
    );
    let s = config::parse("irn.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        flow_records: true,
        ..RunOptions::default()
    };
    run(&s, &opts).unwrap()
}

const ROCE_PFC: &str = "pfc = true\nloss_recovery = \"go_back_n\"";
const IRN: &str = "pfc = false\nloss_recovery = \"selective\"\nrto = \"320us\"\nrto_low = \"100us\"\nwindow = \"bdp\"";
/// IRN without its BDP-FC: selective repeat under the default window.
const IRN_NO_BDP_FC: &str =
    "pfc = false\nloss_recovery = \"selective\"\nrto = \"320us\"\nrto_low = \"100us\"";

#[test]
fn the_bdp_window_is_the_longest_paths_rate_times_its_idle_round_trip() {
    // One switch, two hosts: GPU → PCIe (512 Gb/s, 10 ns) → NIC → 100 Gb/s,
    // 1 µs → switch (500 ns) → 1 µs → NIC → PCIe → GPU. The idle round trip
    // of a 4,174-byte packet (4 KiB + 78 B) and its 64-byte ACK: latency
    // 2 × (2 × 10 ns + 2 × 1 µs + 500 ns) = 5,040 ns, store-and-forward
    // serialization (4,174 + 64) × 8 × 2 × (1/512 + 1/100) ns = 810.5 ns:
    // 5,850.5 ns. One bandwidth-delay product at the slowest link, 100 Gb/s:
    // 73,131 B = 17.5 packets of 4,174 B, so 18.
    let topo = common::one_switch(2, Rate::gbps(100), 1_000, 500);
    let cfg = PacketConfig {
        mtu: 4096,
        header_bytes: 78,
        ack_bytes: 64,
        ..PacketConfig::default()
    };
    let rtt_ns: f64 = 2.0 * (2.0 * 10.0 + 2.0 * 1_000.0 + 500.0)
        + (4174.0 + 64.0) * 8.0 * 2.0 * (1.0 / 512.0 + 1.0 / 100.0);
    let want = (100.0 * rtt_ns / 8.0 / 4174.0).ceil() as u32;
    assert_eq!(want, 18);
    assert_eq!(bdp_window_pkts(&topo, &cfg), want);
}

/// (mean FCT µs, mean slowdown) over the run's flows.
fn means(r: &Report) -> (f64, f64) {
    let rows = &r.flow_records.rows;
    let n = rows.len() as f64;
    (
        rows.iter().map(|f| f.fct_us).sum::<f64>() / n,
        rows.iter().map(|f| f.fct_us / f.ideal_us).sum::<f64>() / n,
    )
}

const SEEDS: [u64; 4] = [1, 2, 3, 4];

#[test]
fn irn_without_pfc_has_a_lower_mean_slowdown_than_roce_with_pfc_on_a_loaded_fat_tree() {
    // IRN Fig. 1: IRN without PFC beats RoCE with PFC in mean slowdown,
    // mean FCT and tail FCT. The mean slowdown is asserted on every seed of
    // the arrivals (each flow weighs the same, so the many short flows that
    // PFC's pauses hold behind long ones decide it). Measured, seeds 1-4:
    // IRN 2.74 / 2.22 / 2.17 / 2.87 against RoCE + PFC 7.61 / 5.66 / 4.20 /
    // 5.82 (IRN drops 8-14 k packets, PFC sends 9-14 k PAUSE frames).
    // Without BDP-FC (the default 512 KiB window, 3.6× the BDP): 4.21 /
    // 3.21 / 3.50 / 4.51. Every byte is delivered under both (`run`'s
    // conservation check).
    for seed in SEEDS {
        let roce = loaded_fat_tree(ROCE_PFC, seed);
        let irn = loaded_fat_tree(IRN, seed);
        assert_eq!(roce.flows.count, irn.flows.count, "seed {seed}");
        assert!(
            irn.flows.count > 300,
            "seed {seed}: enough flows for a mean"
        );
        assert_eq!(irn.fabric.pfc_pause_frames, Some(0), "seed {seed}");
        assert!(roce.fabric.pfc_pause_frames.unwrap() > 0, "seed {seed}");
        assert!(irn.fabric.drops.unwrap() > 0, "seed {seed}: IRN runs lossy");
        let ((fr, sr), (fi, si)) = (means(&roce), means(&irn));
        println!(
            "seed {seed}: {} flows; RoCE + PFC mean FCT {fr:.1} us, mean slowdown {sr:.2}, {} PAUSE frames; IRN {fi:.1} us, {si:.2}, {} drops",
            roce.flows.count,
            roce.fabric.pfc_pause_frames.unwrap(),
            irn.fabric.drops.unwrap()
        );
        assert!(si < sr, "seed {seed}: IRN mean slowdown {si:.2} vs {sr:.2}");
    }
}

#[test]
fn irn_without_pfc_has_a_lower_mean_fct_than_roce_with_pfc_on_a_loaded_fat_tree() {
    // IRN Fig. 1's mean FCT, on every seed of the arrivals. Measured, seeds
    // 1-4: IRN 1,130 / 831 / 789 / 974 µs against RoCE + PFC 1,363 / 933 /
    // 895 / 1,144. The mean FCT is the long flows' (the web-search mix puts
    // most bytes in flows of MBs), and IRN wins it only with its BDP-FC, as
    // its §4.3 finds BDP-FC to matter: under the default 512 KiB window
    // (512 packets, 3.6× the BDP of 143 packets here) IRN's mean was 1-14%
    // above RoCE + PFC's (1,377 / 947 / 1,013 / 1,208 µs), winning every
    // short flow and losing 8-27% on the flows of MBs, with ten times the
    // drops and five times the timeouts (seed 1: 118,489 drops and 491
    // timeouts against 11,042 and 90 under BDP-FC): windows beyond the BDP
    // only fill the 240 KiB ports, and the long flows' losses wait for
    // RTO_high.
    for seed in SEEDS {
        let (fr, _) = means(&loaded_fat_tree(ROCE_PFC, seed));
        let (fi, _) = means(&loaded_fat_tree(IRN, seed));
        println!("seed {seed}: mean FCT IRN {fi:.1} us, RoCE + PFC {fr:.1} us");
        assert!(fi <= fr, "seed {seed}: IRN {fi:.1} vs {fr:.1} us");
    }
}

#[test]
fn irn_without_bdp_fc_keeps_a_lower_mean_slowdown_than_roce_with_pfc() {
    // The same comparison under selective repeat's default 512 KiB window
    // (no BDP-FC): the short flows still win (mean slowdown, seeds 1 and 2:
    // 4.21 / 3.21 against 7.61 / 5.66) while the mean FCT is not asserted
    // (above RoCE + PFC's, the test above).
    for seed in [1, 2] {
        let (_, sr) = means(&loaded_fat_tree(ROCE_PFC, seed));
        let (_, si) = means(&loaded_fat_tree(IRN_NO_BDP_FC, seed));
        println!("seed {seed}: mean slowdown IRN without BDP-FC {si:.2}, RoCE + PFC {sr:.2}");
        assert!(si < sr, "seed {seed}: {si:.2} vs {sr:.2}");
    }
}
