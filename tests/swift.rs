//! Swift delay-based congestion control (issue 13; Kumar et al., "Swift: Delay
//! is Simple and Effective for Congestion Control in the Datacenter", SIGCOMM
//! 2020). Checked against what the algorithm implies, on one 100 GbE switch:
//!
//! * N long flows into one port share it fairly and keep it busy (§5: Swift
//!   holds near-full utilization with fair shares);
//! * the queue settles at Swift's equilibrium: each flow adds `ai` packets per
//!   round trip and, above the target, cuts `cwnd · β · (d − t) / d` once per
//!   round trip, so in steady state `d − t = d / (β · cwnd)`, and with the N
//!   windows summing to the path's `C · d` the queue above the target is
//!   `N · packet / β` bytes, whatever the RTT. The target itself adds
//!   `C · (queue_target + flow scaling(cwnd))`;
//! * without ECN or PFC (a lossy fabric with deep buffers) nothing is dropped:
//!   the delay target, not the buffer, bounds the queue.

mod common;

use fabricsim::config;
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

/// `senders` GPUs send `bytes` each to GPU 0 through one 100 GbE switch with
/// 1 MiB per port (deep enough that only Swift bounds the queue): RoCEv2
/// framing, no PFC, no ECN.
fn incast(senders: u32, bytes: &str, extra: &str) -> String {
    common::RoceIncast {
        name: "swift incast",
        cc: "swift",
        senders,
        rate: "100Gbps",
        link_latency: "500ns",
        buffer: "1MiB",
        bytes,
        sample_interval: "2us",
        extra,
    }
    .text()
}

fn run_text(text: &str) -> Report {
    common::run_packet("swift.toml", text)
}

/// Mean of the receiver port's queue series over the middle half of the run, bytes.
fn steady_queue(r: &Report) -> f64 {
    let s = r
        .series
        .iter()
        .find(|s| s.name.starts_with("queue_bytes") && s.name.contains("-> nic 0.0"))
        .expect("the receiver port is the hottest");
    let (a, b) = (r.makespan_us * 0.25, r.makespan_us * 0.75);
    let v: Vec<f64> = s
        .samples
        .iter()
        .filter(|p| p.t_us >= a && p.t_us <= b)
        .map(|p| p.value)
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

const PKT: f64 = 4096.0 + 78.0;
/// 100 Gb/s in bytes per microsecond.
const C: f64 = 12_500.0;

#[test]
fn long_flows_share_the_port_fairly_keep_it_busy_and_queue_at_swifts_equilibrium() {
    for n in [2u32, 8] {
        let r = run_text(&incast(n, "8MiB", ""));
        assert_eq!(
            r.fabric.drops,
            Some(0),
            "a delay target, not the buffer, bounds the queue"
        );
        assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent);
        // utilization: n × 8 MiB over the makespan against 100 Gb/s
        let goodput = n as f64 * 8.0 * 1048576.0 / r.makespan_us / C;
        let fcts: Vec<f64> = r.flow_records.rows.iter().map(|f| f.fct_us).collect();
        let (lo, hi) = fcts
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
        // the target: queue_target = 16 packet times at 100G (1 MiB / 4 is
        // longer), flow scaling at cwnd = C·d / n (d ≈ 4.4 µs idle + queue)
        let qt = 16.0 * PKT / C; // µs
        let q = steady_queue(&r);
        let cwnd = (C * (4.4 + q / C)) / PKT / n as f64;
        let range = 5.0 * qt;
        let a = range / (1.0 / 0.1f64.sqrt() - 1.0 / 100f64.sqrt());
        let fs = (a / cwnd.sqrt() - a / 10.0).clamp(0.0, range);
        let expected = C * (qt + fs) + n as f64 * PKT / 0.8;
        println!(
            "{n} flows: goodput {goodput:.3} of line rate, FCT {lo:.1}..{hi:.1} us, steady queue {:.1} KB (equilibrium {:.1} KB: target {:.1} + N·pkt/β {:.1})",
            q / 1e3,
            expected / 1e3,
            C * (qt + fs) / 1e3,
            n as f64 * PKT / 0.8 / 1e3
        );
        // the payload's share of the wire (4096 of 4174 B) is the ceiling: 0.981
        assert!(
            goodput > 0.97 * 4096.0 / PKT,
            "{n} flows: goodput {goodput}"
        );
        // fair shares: one cut per round trip of up to half a window lets the
        // windows drift apart for a while; averaged over the ~1,000 round
        // trips of a flow, equal flows started together get rates within 10%
        // of each other, and Jain's index over them is above 0.99
        let rates: Vec<f64> = fcts.iter().map(|f| 1.0 / f).collect();
        let jain = rates.iter().sum::<f64>().powi(2)
            / (rates.len() as f64 * rates.iter().map(|r| r * r).sum::<f64>());
        println!("{n} flows: Jain's fairness index {jain:.4}");
        assert!(hi / lo < 1.10, "{n} flows: FCTs {lo}..{hi}");
        assert!(jain > 0.99, "{n} flows: Jain {jain}");
        // the sawtooth sits around the equilibrium: within ±35% (one cut per
        // RTT of up to half a flow's window swings the queue by that much)
        assert!(
            (q - expected).abs() < 0.35 * expected,
            "{n} flows: queue {q} vs equilibrium {expected}"
        );
    }
}

#[test]
fn a_larger_queue_target_holds_the_queue_it_sets() {
    let small = steady_queue(&run_text(&incast(2, "8MiB", "")));
    let big = steady_queue(&run_text(&incast(
        2,
        "8MiB",
        "[fabric.swift]\nqueue_target = \"20us\"\nfs_range = 0",
    )));
    // 20 µs at 100 Gb/s is 250 KB of target queue, plus N·pkt/β ≈ 10 KB
    let expected = 20.0 * C + 2.0 * PKT / 0.8;
    println!("queue_target default: {small:.0} B; 20us: {big:.0} B (expected ≈ {expected:.0})");
    // the default target is 16 packet times (5.3 µs) plus flow scaling
    assert!(big > 2.5 * small, "{big} vs {small}");
    assert!(
        (big - expected).abs() < 0.2 * expected,
        "{big} vs {expected}"
    );
}

#[test]
fn swift_keeps_the_incast_off_the_pfc_backstop_and_is_deterministic() {
    // The shipped example: the same 16:1 incast as incast-roce-pfc-dcqcn.toml.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/incast-roce-swift.toml"
    );
    let s = config::load(std::path::Path::new(path)).unwrap();
    let a = run(&s, &RunOptions::default()).unwrap();
    let b = run(&s, &RunOptions::default()).unwrap();
    let strip = |r: &Report| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("sim");
        v
    };
    assert_eq!(strip(&a), strip(&b));
    let pfc_only = run(
        &config::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/incast-roce-pfc-only.toml"
        )))
        .unwrap(),
        &RunOptions::default(),
    )
    .unwrap();
    println!(
        "16:1 incast: Swift {:.1} us, {} PAUSE frames; PFC alone {:.1} us, {} PAUSE frames",
        a.makespan_us,
        a.fabric.pfc_pause_frames.unwrap(),
        pfc_only.makespan_us,
        pfc_only.fabric.pfc_pause_frames.unwrap()
    );
    // the incast finishes within 2% of PFC alone (which keeps the port busy
    // by construction) with a fraction of its pauses
    assert!(a.makespan_us < 1.02 * pfc_only.makespan_us);
    assert!(a.fabric.pfc_pause_frames.unwrap() * 3 < pfc_only.fabric.pfc_pause_frames.unwrap());
}

#[test]
fn swift_settings_are_checked_and_need_cc_swift() {
    let bad = |extra: &str, cc: &str| {
        let t = incast(2, "1MiB", extra).replace("cc = \"swift\"", cc);
        config::parse("swift.toml", &t).unwrap_err().to_string()
    };
    let e = bad("[fabric.swift]\nbeta = 1.5", "cc = \"swift\"");
    assert!(
        e.contains("fabric.swift.beta") && e.contains("(0, 1]"),
        "{e}"
    );
    let e = bad("[fabric.swift]\nmax_mdf = 1", "cc = \"swift\"");
    assert!(e.contains("fabric.swift.max_mdf"), "{e}");
    let e = bad("[fabric.swift]\nqueue_target = 0", "cc = \"swift\"");
    assert!(e.contains("fabric.swift.queue_target"), "{e}");
    let e = bad("[fabric.swift]\nai = 2", "cc = \"none\"");
    assert!(
        e.contains("fabric.swift") && e.contains("cc = \"swift\""),
        "{e}"
    );
    // Swift needs no ECN: ecn = false is fine with it (and not with DCQCN)
    config::parse("swift.toml", &incast(2, "1MiB", "")).unwrap();
}

#[test]
fn swift_over_selective_repeat_on_a_lossy_port_ignores_the_sack_psns() {
    // A selective NACK carries a PSN where an ACK carries the send time:
    // Swift must take no delay sample from it (a PSN read as a time would be
    // a delay of seconds and cut every window to the floor). 8 flows into a
    // 64 KiB lossy port: the initial line-rate round trip overflows it.
    // IRN's RTO_high (320 µs) instead of RoCE's 4.3 s local-ACK timeout: a
    // flow's last packets, lost, have no later packet to reveal the gap
    let text = incast(
        8,
        "2MiB",
        "loss_recovery = \"selective-repeat\"\nrto = \"320us\"",
    )
    .replace("buffer = \"1MiB\"", "buffer = \"64KiB\"");
    let r = run_text(&text);
    let goodput = 8.0 * 2.0 * 1048576.0 / r.makespan_us / C;
    println!(
        "8 flows, 64 KiB lossy port, Swift + selective repeat: {} drops, {} resent, goodput {goodput:.3}",
        r.fabric.drops.unwrap(),
        r.fabric.retransmitted_packets.unwrap()
    );
    assert!(
        r.fabric.drops.unwrap() > 0,
        "the first round trip overflows the port"
    );
    assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent);
    // selective repeat resends exactly what was lost
    assert_eq!(r.fabric.drops, r.fabric.retransmitted_packets);
    // Measured 0.888: the losses of the first round trip cost a few tail
    // timeouts of 320 µs (12 over 8 flows). (A SACK's PSN read as a send time
    // costs little here, 0.868, since Swift cuts at most once per RTT; the
    // law's own unit test checks that a NACK without a send time leaves it
    // untouched.)
    assert!(goodput > 0.8, "goodput {goodput}");
}
