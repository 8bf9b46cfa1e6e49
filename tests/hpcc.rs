//! HPCC (issue 13; Li et al., "HPCC: High Precision Congestion Control",
//! SIGCOMM 2019), with its in-band telemetry carried as one value per packet
//! (the path's largest utilization, as PINT does for HPCC: Ben Basat et al.,
//! SIGCOMM 2020). Checked against what the paper reports, on small fabrics:
//!
//! * an incast keeps the bottleneck busy with a near-empty queue once the
//!   first round trip's burst (every sender starts at line rate, §3.2) has
//!   drained (Fig. 9/10);
//! * two flows on one bottleneck converge to fair shares (§3.3, Fig. 7);
//! * on the web-search mix at 50% load, FCT p99 is lower than DCQCN's
//!   (Fig. 11).

mod common;

use fabricsim::config;
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

/// `senders` GPUs send `bytes` each to GPU 0 through one 100 GbE switch with
/// 4 MiB per port (deep enough that only HPCC bounds the queue): RoCEv2
/// framing, 4 KiB MTU, no PFC, no ECN.
fn incast(senders: u32, bytes: &str, extra: &str) -> String {
    common::RoceIncast {
        name: "hpcc incast",
        cc: "hpcc",
        senders,
        rate: "100Gbps",
        link_latency: "2us",
        buffer: "4MiB",
        bytes,
        sample_interval: "1us",
        extra,
    }
    .text()
}

fn run_text(text: &str) -> Report {
    common::run_packet("hpcc.toml", text)
}

/// The receiver port's queue samples, (µs, bytes).
fn receiver_queue(r: &Report) -> Vec<(f64, f64)> {
    let s = r
        .series
        .iter()
        .find(|s| s.name.starts_with("queue_bytes") && s.name.contains("-> nic 0.0"))
        .expect("the receiver port is the hottest");
    s.samples.iter().map(|p| (p.t_us, p.value)).collect()
}

/// 100 Gb/s in bytes per microsecond.
const C: f64 = 12_500.0;

/// Web-search flows (DCTCP's CDF, the HPCC paper's §5.1 workload) between
/// 16 hosts on a 2-tier leaf-spine of 100 GbE (4 leaves of 4 hosts, 4
/// spines), PFC on as in the paper's RoCE fabric, at `load` of the hosts'
/// line rate for `duration`.
fn web_search(cc: &str, load: f64, duration: &str) -> String {
    format!(
        r#"
name = "web search"
[cluster]
nodes = 16
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "leaf_spine"
radix = 8
[fabric]
kind = "roce"
link_rate = "100Gbps"
mtu = "4KiB"
header_bytes = 78
link_latency = "1us"
switch_latency = "500ns"
buffer = "512KiB"
{cc}
[workload]
kind = "traffic"
pattern = "random"
cdf = "web_search"
load = {load}
duration = "{duration}"
[simulation]
fidelity = "packet"
seed = 5
"#
    )
}

/// HPCC's T on the incast fabric: the idle round trip of a 4174 B packet
/// over two 100 Gb/s hops of 2 µs (0.334 µs serialization each) and a 500 ns
/// switch, and the ACK's way back: ≈ 9.7 µs, the order of the HPCC paper's
/// fat-tree RTTs.
const T_US: f64 = 9.7;
/// One full data packet on the wire, bytes.
const PKT: f64 = 4096.0 + 78.0;

#[test]
fn an_incast_keeps_the_port_busy_with_a_near_empty_queue() {
    for n in [8u32, 16] {
        let r = run_text(&incast(n, "4MiB", ""));
        assert_eq!(r.fabric.drops, Some(0));
        assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent);
        let goodput = n as f64 * 4.0 * 1048576.0 / r.makespan_us / C;
        let bdp = C * T_US;
        let q = receiver_queue(&r);
        // every sender starts at line rate with one B·T (§3.2): the first
        // round trip puts about N B·T in flight, and that burst takes
        // burst / B to drain at line rate. From then on (plus 10 T for the
        // reference windows to settle) until the last flows finish:
        // (bounded by the N first windows: B·T each, rounded up to whole
        // packets; T_US is a hand sum, hence 10% over N·B·T)
        let burst = r.fabric.max_queue_bytes.unwrap() as f64;
        assert!(burst < n as f64 * 1.1 * bdp, "{n}: first burst {burst}");
        let from = burst / C + 10.0 * T_US;
        let steady: Vec<f64> = q
            .iter()
            .filter(|x| x.0 > from && x.0 < 0.8 * r.makespan_us)
            .map(|x| x.1)
            .collect();
        let max = steady.iter().fold(0f64, |a, &b| a.max(b));
        let mean = steady.iter().sum::<f64>() / steady.len() as f64;
        // the receiver link's utilization (wire bytes) over the same window,
        // while every flow is still sending
        let u = r
            .series
            .iter()
            .find(|s| s.name.starts_with("utilization") && s.name.contains("-> nic 0.0"))
            .expect("the receiver port's utilization");
        let busy: Vec<f64> = u
            .samples
            .iter()
            .filter(|p| p.t_us > from && p.t_us < 0.8 * r.makespan_us)
            .map(|p| p.value)
            .collect();
        let busy = busy.iter().sum::<f64>() / busy.len() as f64;
        println!(
            "{n}:1 incast: busy {busy:.4} of the line while every flow sends, goodput {goodput:.4} of line rate over the makespan, first-RTT burst {:.0} KB, then queue max {:.1} KB, mean {:.1} KB (B·T = {:.0} KB)",
            r.fabric.max_queue_bytes.unwrap() as f64 / 1e3,
            max / 1e3,
            mean / 1e3,
            bdp / 1e3
        );
        // HPCC holds U = qlen/(B·T) + txRate/B at η = 0.95 (§3.3): the
        // link carries what the target leaves after the queue's share, so
        // while every flow sends it is busy at least η − mean qlen/(B·T).
        // Measured: 0.938 (8) and 0.928 (16) against 0.918 and 0.910, the
        // same with either order of simultaneous events (issue 16: 0.937,
        // 0.927). The goodput over the makespan (printed) also counts the
        // last flow's finish, which follows who wins the ties of this
        // lockstep start: 0.896 (8) and 0.899 (16) when the same port always
        // won them, 0.890 and 0.899 with issue 16's order, which rotates the
        // winner (8: the median flow 15 µs earlier, the last 23 µs later).
        // The payload rate is at most η × 4096/4174 = 0.932 of the line.
        let target = 0.95 - mean / bdp;
        assert!(busy >= target, "{n}: busy {busy:.4} vs {target:.4}");
        assert!(goodput <= 0.95 * 4096.0 / 4174.0, "{n}: goodput {goodput}");
        // near-zero queue (Fig. 9/10): never a whole B·T after the first
        // burst, under four packets on average
        assert!(max < bdp, "{n}: steady queue max {max} vs B·T {bdp}");
        assert!(mean < 4.0 * PKT, "{n}: steady queue mean {mean}");
    }
}

#[test]
fn a_flow_joining_a_busy_bottleneck_gets_its_fair_share() {
    // flow A (GPU 1 → 0) runs alone for 200 µs at η of the line, then B
    // (GPU 2 → 0) starts at line rate; the ratio of their windows survives a
    // multiplicative update, so fairness comes from B's line-rate start
    // (W_init = B·T against A's η·B·T) and the additive W_AI (§3.3). With
    // equal shares from B's start on, A and B, 16 MiB each, finish together:
    // A has 16 MiB − η·B·200 µs left when B starts, they split the link
    // until A is done, then B sends alone the η·B·200 µs it is behind. So
    // the FCTs measured from time 0 are equal when the shares are: within
    // 10% when they converge (the issue's bound).
    let text = incast(
        1,
        "16MiB",
        "",
    )
    .replace(
        "bytes = \"16MiB\"",
        "bytes = \"16MiB\"\nextra_flows = [{ src = 2, dst = 0, bytes = \"16MiB\", start = \"200us\" }]",
    )
    .replace("nodes = 2", "nodes = 3");
    let r = run_text(&text);
    let rows = &r.flow_records.rows;
    assert_eq!(rows.len(), 2);
    let end = |src: u32, start: f64| {
        let f = rows.iter().find(|f| f.src == src).expect("both flows ran");
        start + f.fct_us
    };
    let (a, b) = (end(1, 0.0), end(2, 200.0));
    println!("A ends at {a:.1} us, B at {b:.1} us (B started at 200 us)");
    assert!((a - b).abs() < 0.10 * a.max(b), "A {a} vs B {b}");
    // and the link stayed busy: 32 MiB at ≥ 0.9 of the line
    let goodput = 32.0 * 1048576.0 / r.makespan_us / C;
    assert!(goodput >= 0.90, "goodput {goodput}");
}

#[test]
fn web_search_at_half_load_hpcc_cuts_the_fct_tail_against_dcqcn() {
    // HPCC paper (Li et al., SIGCOMM 2019) Fig. 11: on the web-search mix
    // at 50% load, HPCC's FCT slowdown (by flow size, p95 / p99) is well
    // below DCQCN's for the short flows, tail included: it starts at line
    // rate and holds near-zero queues, while DCQCN's ECN thresholds let
    // queues stand in front of them. Small fabric, 10 ms of arrivals (≈ 590
    // flows, ≈ 330 under 100 KB: at 3 ms, 93 short flows, p99 is the second
    // largest and the comparison flipped on one seed of six), every flow its
    // own queue pair, as the HPCC simulator opens one per flow
    // (`traffic::one_connection_per_flow`); three seeds of the arrivals,
    // each asserted. Measured, seeds 5 / 1 / 2: slowdown of flows < 100 KB
    // p95 HPCC 2.05 / 1.89 / 2.21 against DCQCN 6.08 / 6.47 / 6.19, p99
    // 2.65 / 2.56 / 3.12 against 10.16 / 9.98 / 8.43; 100 KB - 1 MB p95
    // 3.04 / 2.95 / 2.64 against 9.03 / 7.87 / 8.00; FCT p50 over all flows
    // 18.6 / 18.6 / 18.6 µs against 34.9 / 35.7 / 31.7 (seeds 3 and 7 alike).
    // Under issue 16's event order (ties rotate, a random stream per node):
    // p95 2.16 / 1.85 / 2.19 against 6.17 / 5.90 / 5.92, p99 2.70 / 2.40 /
    // 3.13 against 8.74 / 8.09 / 9.59, FCT p50 18.6 / 19.1 / 18.1 µs
    // against 36.5 / 33.8 / 31.1; whole-mix p99 7,999 / 7,562 / 9,655 µs
    // against 7,009 / 6,279 / 13,783.
    // Not asserted, and not met on every seed: the FCT p99 over all flows,
    // which the flows of 1 MB and more decide: 8,053 / 7,273 / 9,614 µs
    // against 7,265 / 6,434 / 13,464 (their p99 slowdown 16.3 / 19.6 / 25.0
    // against 11.6 / 10.0 / 17.8). Not only η = 0.95's 5% headroom: at η =
    // 0.99 (the HPCC project's later runs) seeds 5 / 1 give 7,449 / 7,168
    // µs, still above DCQCN's. Untraced; issue 13's "FCT p99 lower" holds
    // for the short and medium flows, not for this whole-mix p99.
    // Before flows had their own queue pairs a 13 KB flow waited 2.6 ms
    // behind a 5.9 MB one of the same pair in the sending NIC, whatever the
    // law: a short flow's p99 slowdown was 365 under HPCC.
    for seed in [5u64, 1, 2] {
        let go = |cc: &str| {
            let text = web_search(cc, 0.5, "10ms").replace("seed = 5", &format!("seed = {seed}"));
            let s = config::parse("ws.toml", &text).unwrap();
            let opts = RunOptions {
                flow_records: true,
                ..RunOptions::default()
            };
            run(&s, &opts).unwrap()
        };
        let h = go("cc = \"hpcc\"\necn = false");
        let d = go("cc = \"dcqcn\"\necn = true");
        // slowdown (FCT over its ideal) quantile `q` of flows in [lo, hi) bytes
        let slowdown = |r: &Report, lo: u64, hi: u64, q: f64| {
            let mut s: Vec<f64> = r
                .flow_records
                .rows
                .iter()
                .filter(|f| (lo..hi).contains(&f.bytes))
                .map(|f| f.fct_us / f.ideal_us)
                .collect();
            s.sort_by(f64::total_cmp);
            s[((q * s.len() as f64) as usize).min(s.len() - 1)]
        };
        for (name, r) in [("HPCC", &h), ("DCQCN", &d)] {
            println!(
                "web search 50%, seed {seed}: {name}: {} flows, FCT p50 {:.1} us, p99 {:.1} us; flows < 100 KB slowdown p95 {:.2}, p99 {:.2}; 100 KB - 1 MB p95 {:.2}; >= 1 MB p99 {:.2}; {} PAUSE frames",
                r.flows.count,
                r.flows.fct_us.p50,
                r.flows.fct_us.p99,
                slowdown(r, 0, 100_000, 0.95),
                slowdown(r, 0, 100_000, 0.99),
                slowdown(r, 100_000, 1_000_000, 0.95),
                slowdown(r, 1_000_000, u64::MAX, 0.99),
                r.fabric.pfc_pause_frames.unwrap()
            );
        }
        assert_eq!(h.flows.count, d.flows.count);
        assert!(h.flows.count > 500, "enough flows for a p99");
        assert_eq!(h.flow_records.rows.len() as u64, h.flows.count);
        for q in [0.95, 0.99] {
            assert!(
                slowdown(&h, 0, 100_000, q) < slowdown(&d, 0, 100_000, q),
                "seed {seed}: short flows p{q}"
            );
        }
        assert!(
            slowdown(&h, 100_000, 1_000_000, 0.95) < slowdown(&d, 100_000, 1_000_000, 0.95),
            "seed {seed}: 100 KB - 1 MB p95"
        );
        assert!(h.flows.fct_us.p50 < d.flows.fct_us.p50, "seed {seed}");
    }
}

#[test]
fn the_shipped_incast_beats_dcqcn_off_the_pfc_backstop_and_is_deterministic() {
    // examples/incast-roce-hpcc.toml: the same 16:1 incast as
    // incast-roce-pfc-dcqcn.toml on 400 GbE with a 64 KiB buffer. HPCC holds
    // the link at η (0.95 of the wire, 0.932 of it payload) where DCQCN's
    // cuts leave it at 59% of PFC alone (README's RoCE table); only the first
    // line-rate round trip reaches XOFF.
    let load = |name: &str| {
        let path = format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
        let s = config::load(std::path::Path::new(&path)).unwrap();
        run(&s, &RunOptions::default()).unwrap()
    };
    let a = load("incast-roce-hpcc.toml");
    let b = load("incast-roce-hpcc.toml");
    let strip = |r: &Report| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("sim");
        v
    };
    assert_eq!(strip(&a), strip(&b));
    let dcqcn = load("incast-roce-pfc-dcqcn.toml");
    let pfc_only = load("incast-roce-pfc-only.toml");
    let pauses = |r: &Report| r.fabric.pfc_pause_frames.unwrap();
    println!(
        "16:1 incast: HPCC {:.1} us, {} PAUSE frames; DCQCN {:.1} us; PFC alone {:.1} us, {} PAUSE frames",
        a.makespan_us,
        pauses(&a),
        dcqcn.makespan_us,
        pfc_only.makespan_us,
        pauses(&pfc_only)
    );
    // 64 MiB of incast at ≥ 0.9 of 400 Gb/s (measured 0.915 with the victim)
    assert!(a.makespan_us < pfc_only.makespan_us / 0.9);
    assert!(a.makespan_us < dcqcn.makespan_us);
    assert!(pauses(&a) * 3 < pauses(&pfc_only));
}

#[test]
fn hpcc_settings_are_checked_and_need_cc_hpcc() {
    let bad = |extra: &str, cc: &str| {
        let t = incast(2, "1MiB", extra).replace("cc = \"hpcc\"", cc);
        config::parse("hpcc.toml", &t).unwrap_err().to_string()
    };
    for (extra, key) in [
        ("eta = 1.5", "fabric.hpcc.eta"),
        ("eta = 0", "fabric.hpcc.eta"),
        ("max_stage = 2.5", "fabric.hpcc.max_stage"),
        ("max_stage = -1", "fabric.hpcc.max_stage"),
        ("w_ai = 0", "fabric.hpcc.w_ai"),
        ("base_rtt = 0", "fabric.hpcc.base_rtt"),
        ("base_rtt = \"2s\"", "fabric.hpcc.base_rtt"),
    ] {
        let e = bad(&format!("[fabric.hpcc]\n{extra}"), "cc = \"hpcc\"");
        assert!(e.contains(key), "{extra}: {e}");
    }
    let e = bad("[fabric.hpcc]\neta = 0.9", "cc = \"none\"");
    assert!(
        e.contains("fabric.hpcc") && e.contains("cc = \"hpcc\""),
        "{e}"
    );
    // HPCC needs no ECN
    config::parse("hpcc.toml", &incast(2, "1MiB", "")).unwrap();
}
