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
//! 100 µs; RoCE (go-back-N) with PFC against IRN (selective repeat, BDP-FC)
//! without. Ours where the test had no confirmed figure: the web-search mix
//! (`cdf = "web_search"`), 1 KiB MTU, 2 µs links, 500 ns switches, 240 KiB per
//! port and priority, 3 ms of arrivals (≈ 330 flows), RoCE's own timeout.

use fabricsim::config;
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

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
const IRN: &str =
    "pfc = false\nloss_recovery = \"selective\"\nrto = \"320us\"\nrto_low = \"100us\"";

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
    // IRN 4.41 / 3.32 / 3.65 / 4.56 against RoCE + PFC 7.62 / 5.64 / 4.19 /
    // 5.79 (IRN drops ≈ 0.1 M packets, PFC sends 9-13 k PAUSE frames); the same
    // ordering with issue 16's partition-independent event order (4.21 /
    // 3.21 / 3.50 / 4.51 against 7.61 / 5.66 / 4.20 / 5.82). Every byte is
    // delivered under both (`run`'s conservation check).
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
#[ignore = "unmet: IRN's mean FCT is 1-14% above RoCE + PFC's on this fabric (untraced, see the comment)"]
fn irn_without_pfc_has_a_lower_mean_fct_than_roce_with_pfc_on_a_loaded_fat_tree() {
    // IRN Fig. 1's mean FCT. Unmet and not traced yet: seeds 1-4, IRN
    // 1,396 / 979 / 1,020 / 1,190 µs against RoCE + PFC 1,364 / 931 / 896 /
    // 1,143 (issue 16's event order: 1,377 / 947 / 1,013 / 1,208 against
    // 1,363 / 933 / 895 / 1,144). The mean FCT is the long flows' (the
    // web-search mix puts most bytes in flows of MBs); the paper's buffers
    // and mix are not confirmed here (module doc), and IRN's lost
    // retransmissions wait for RTO_high. By flow size (seeds 1 and 3, mean
    // FCT RoCE + PFC → IRN): under 100 KB 221 → 112 and 112 → 93 µs, 100
    // KB-1 MB 570 → 461 and 325 → 313, 1-5 MB 1,893 → 2,102 and 1,255 →
    // 1,595, above 5 MB 6,344 → 6,875 and 6,570 → 7,446: IRN wins every
    // short flow and loses 8-27% on the flows of MBs, which carry the mean
    // (IRN drops 94-124 k packets per run at 240 KiB ports). What to look
    // at next: the drops per long flow and how long its retransmissions
    // wait.
    for seed in SEEDS {
        let (fr, _) = means(&loaded_fat_tree(ROCE_PFC, seed));
        let (fi, _) = means(&loaded_fat_tree(IRN, seed));
        println!("seed {seed}: mean FCT IRN {fi:.1} us, RoCE + PFC {fr:.1} us");
        assert!(fi <= fr, "seed {seed}: IRN {fi:.1} vs {fr:.1} us");
    }
}
