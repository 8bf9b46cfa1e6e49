//! TIMELY RTT-gradient congestion control (issue 13; Mittal et al., "TIMELY:
//! RTT-based Congestion Control for the Datacenter", SIGCOMM 2015), with the
//! paper's parameters (§6: 16 KB segments, T_low 50 µs, T_high 500 µs,
//! δ 10 Mb/s, β 0.8; the HPCC simulator's α 0.875 and minRTT 20 µs).
//! Checked against what the algorithm implies:
//!
//! * a single flow on an idle path never leaves line rate: every round trip
//!   is below T_low (the rate only grows, and is clamped at the line), so it
//!   finishes exactly as without congestion control;
//! * long flows into one 10 GbE port keep it busy: once a queue stands, the
//!   gradient regime holds it between T_low and T_high (a falling RTT raises
//!   the rate, a rising one cuts it), so the port never idles;
//! * with the paper's parameters at 10G (64 KB segments, the failure an
//!   earlier attempt showed) two flows do not collapse to a fifth of the line;
//! * the same scenario gives the same report.
//!
//! Fairness is not asserted: Zhu et al. ("ECN or Delay", CoNEXT 2016, §4)
//! show that TIMELY's fixed point is not unique, so equal flows may settle at
//! unequal rates. Jain's index is printed.

mod common;

use fabricsim::config;
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};

/// `senders` GPUs send `bytes` each to GPU 0 through one switch at `rate`
/// with 4 MiB per port (deep enough to hold T_high = 500 µs of queue at
/// 10G, 625 KB, several times): RoCEv2 framing, no PFC, no ECN.
fn incast(senders: u32, rate: &str, bytes: &str, extra: &str) -> String {
    common::RoceIncast {
        name: "timely incast",
        cc: "timely",
        senders,
        rate,
        link_latency: "500ns",
        buffer: "4MiB",
        bytes,
        sample_interval: "10us",
        extra,
    }
    .text()
}

fn run_text(text: &str) -> Report {
    common::run_packet("timely.toml", text)
}

/// The receiver port's samples of series `kind` between `from` and `to` of
/// the makespan (fractions).
fn port_samples(r: &Report, kind: &str, from: f64, to: f64) -> Vec<f64> {
    let s = r
        .series
        .iter()
        .find(|s| s.name.starts_with(kind) && s.name.contains("-> nic 0.0"))
        .expect("the receiver port has series");
    let (a, b) = (r.makespan_us * from, r.makespan_us * to);
    s.samples
        .iter()
        .filter(|p| p.t_us >= a && p.t_us <= b)
        .map(|p| p.value)
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Port utilization per tenth of the run, for the printed figures.
fn tenths(r: &Report) -> String {
    (0..10)
        .map(|i| {
            let (a, b) = (i as f64 / 10.0, (i + 1) as f64 / 10.0);
            format!(
                "{:.2}/{:.0}us",
                mean(&port_samples(r, "utilization", a, b)),
                mean(&port_samples(r, "queue_bytes", a, b)) / G10_BYTES_PER_US
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// 10 Gb/s in bytes per microsecond.
const G10_BYTES_PER_US: f64 = 1250.0;
/// Idle round trip of the single-switch path: two 500 ns links and a 500 ns
/// switch each way, a data packet's and an ACK's serialization at 10G.
const BASE_RTT_US: f64 = 4.4;

const PKT: f64 = 4096.0 + 78.0;
/// The payload's share of the wire: the ceiling of goodput.
const PAYLOAD: f64 = 4096.0 / PKT;

/// Goodput of `n` flows of `mib` MiB each against `gbps`, a share of the line.
fn goodput(r: &Report, n: u32, mib: f64, gbps: f64) -> f64 {
    n as f64 * mib * 1048576.0 / r.makespan_us / (gbps * 125.0)
}

fn jain(r: &Report) -> f64 {
    let rates: Vec<f64> = r.flow_records.rows.iter().map(|f| 1.0 / f.fct_us).collect();
    rates.iter().sum::<f64>().powi(2)
        / (rates.len() as f64 * rates.iter().map(|r| r * r).sum::<f64>())
}

#[test]
fn one_flow_on_an_idle_path_stays_at_line_rate() {
    // idle 100G path: round trip ≈ 4.4 µs < T_low = 50 µs, so every
    // completion adds δ to a rate that starts at, and is clamped to, the
    // line: no pacing ever, the FCT is cc = "none"'s to the picosecond.
    // (From a rate r0 below the line the climb would take Σ seg·8/(r0 + kδ)
    // ≈ (seg·8/δ) ln(line/r0): the unit test in src/backend/packet/cc/timely.rs
    // checks the per-completion step it is made of.)
    let t = incast(1, "100Gbps", "8MiB", "");
    let timely = run_text(&t);
    let none = run_text(&t.replace("cc = \"timely\"", "cc = \"none\""));
    println!(
        "1 flow, 100G idle path: TIMELY {:.3} us, cc = none {:.3} us, goodput {:.4} (payload share {PAYLOAD:.4})",
        timely.makespan_us,
        none.makespan_us,
        goodput(&timely, 1, 8.0, 100.0)
    );
    assert_eq!(timely.makespan_us, none.makespan_us);
}

/// Utilization of the hot port from `from` of the makespan (after the
/// start's transient) to the first flow's end (while every flow sends).
fn steady_utilization(r: &Report, from: f64) -> f64 {
    mean(&port_samples(r, "utilization", from, all_active(r)))
}

/// The first flow's end, a fraction of the makespan.
fn all_active(r: &Report) -> f64 {
    let first = r
        .flow_records
        .rows
        .iter()
        .map(|f| f.fct_us)
        .fold(f64::MAX, f64::min);
    first / r.makespan_us
}

#[test]
fn two_flows_with_the_papers_parameters_at_10g_keep_the_port_busy() {
    // The failure an earlier attempt showed: two flows at 10G settled at 0.22
    // of the line (minRTT taken as the 4.4 µs idle RTT, 64 KB completions).
    // With the paper's parameters (§6: 16 KB segments; minRTT 20 µs) the
    // steady state holds the RTT at the T_low boundary with a standing queue,
    // and the port is busy whenever the queue is: bound 0.9 in the middle of
    // the run while both flows send (each cycle cuts the aggregate by β·gradient, a few percent at
    // the small gradients of a queue growing from T_low, and regains it
    // linearly at δ per completion; the payload's share 0.981 is the ceiling).
    //
    // The start is another matter, and is printed, not hidden: both flows
    // start at line rate, the queue doubles the RTT within a few
    // completions, and every completion of the first round trip still
    // reports a rising RTT (its packets left before the first cut), so the
    // rates are cut several times in a row to a few percent of the line;
    // below T_low Algorithm 1 adds only δ per completion (hyper-active
    // increase is for the gradient band), so the climb back takes tens of
    // milliseconds at 10G.
    let r = run_text(&incast(2, "10Gbps", "64MiB", ""));
    let u = steady_utilization(&r, 0.4);
    println!(
        "2 flows x 64 MiB, 10G, paper's parameters: steady utilization {u:.3}, goodput over the run {:.3}, Jain {:.4}, drops {:?}\n  utilization/queue per tenth: {}",
        goodput(&r, 2, 64.0, 10.0),
        jain(&r),
        r.fabric.drops,
        tenths(&r)
    );
    assert_eq!(r.fabric.drops, Some(0));
    assert!(u > 0.9, "steady utilization {u}");
    // the same with 64 KB completions and minRTT = the path's idle RTT (the
    // failure's settings), for comparison only
    for extra in [
        "[fabric.timely]\nseg_bytes = \"64KiB\"",
        "[fabric.timely]\nseg_bytes = \"64KiB\"\nmin_rtt = \"path\"",
    ] {
        let f = run_text(&incast(2, "10Gbps", "64MiB", extra));
        println!(
            "  with {extra:?}: steady utilization {:.3}, goodput over the run {:.3}\n  utilization/queue per tenth: {}",
            steady_utilization(&f, 0.4),
            goodput(&f, 2, 64.0, 10.0),
            tenths(&f)
        );
    }
}

#[test]
fn eight_flows_share_a_10g_port_and_their_rtts_stay_below_t_low() {
    // Algorithm 1 below T_low only adds δ, and between T_low and T_high any
    // rising RTT is cut: the queue climbs until the RTT reaches T_low and
    // no further, then drains (the cuts of one feedback delay overshoot) and
    // climbs again, a sawtooth between empty and the T_low boundary, nowhere
    // near T_high. Bound: queueing delay + the idle RTT below T_low plus 10%
    // (the growth during one feedback delay at the small excess rate of the
    // climb), and above 80% of it (the climb reaches the boundary).
    for (t_low, extra) in [(50.0, ""), (100.0, "[fabric.timely]\nt_low = \"100us\"")] {
        let r = run_text(&incast(8, "10Gbps", "16MiB", extra));
        let q = port_samples(&r, "queue_bytes", 0.3, all_active(&r));
        let qmax = q.iter().cloned().fold(0.0, f64::max) / G10_BYTES_PER_US;
        let qmean = mean(&q) / G10_BYTES_PER_US;
        let u = steady_utilization(&r, 0.3);
        println!(
            "8 flows x 16 MiB, 10G, T_low {t_low} us: utilization {u:.3} from 30% of the run to the first flow's end ({:.0}%), queue mean {qmean:.1} us max {qmax:.1} us (+ {BASE_RTT_US} us idle RTT), Jain {:.4}, drops {:?}\n  utilization/queue per tenth: {}",
            100.0 * all_active(&r),
            jain(&r),
            r.fabric.drops,
            tenths(&r)
        );
        assert_eq!(r.fabric.drops, Some(0));
        assert!(
            qmax + BASE_RTT_US < 1.1 * t_low,
            "T_low {t_low}: max {qmax}"
        );
        // a standing queue: the T_low band, not an empty port, sets the RTT
        assert!(
            qmax + BASE_RTT_US > 0.8 * t_low,
            "T_low {t_low}: max {qmax}"
        );
        if t_low > 50.0 {
            // a higher boundary makes a longer sawtooth with deeper cuts:
            // printed, not bounded
            continue;
        }
        // while all eight send (from 30% of the run, after the start's
        // transient, to the first flow's end: TIMELY is slow to take the
        // capacity a finished flow frees, δ per completion below T_low):
        // well above the 0.22 collapse, below the 2-flow bound (eight flows'
        // stale cuts in one feedback delay add up)
        assert!(u > 0.8, "T_low {t_low}: steady utilization {u}");
    }
}

#[test]
fn timely_protects_the_victim_of_the_roce_incast_and_is_deterministic() {
    // The shipped example: the 16:1 incast of incast-roce-swift.toml.
    let load = |f: &str| config::load(&common::example_path(f)).unwrap();
    let s = load("incast-roce-timely.toml");
    let opts = RunOptions {
        flow_records: true,
        ..RunOptions::default()
    };
    let a = run(&s, &opts).unwrap();
    let b = run(&s, &opts).unwrap();
    let strip = |r: &Report| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("sim");
        v
    };
    assert_eq!(strip(&a), strip(&b));
    let victim = |r: &Report| {
        let f = r.flow_records.rows.iter().find(|f| f.src == 24).unwrap();
        (f.fct_us, f.ideal_us)
    };
    let (fct, ideal) = victim(&a);
    let others: Vec<(String, Report)> = ["incast-roce-pfc-only.toml", "incast-roce-swift.toml"]
        .iter()
        .map(|f| (f.to_string(), run(&load(f), &opts).unwrap()))
        .collect();
    println!(
        "16:1 incast at 400G: TIMELY {:.1} us, {} PAUSE frames, victim {fct:.1} us (ideal {ideal:.1})",
        a.makespan_us,
        a.fabric.pfc_pause_frames.unwrap()
    );
    for (f, r) in &others {
        println!(
            "  {f}: {:.1} us, {} PAUSE frames, victim {:.1} us",
            r.makespan_us,
            r.fabric.pfc_pause_frames.unwrap(),
            victim(r).0
        );
    }
    // issue 13's criterion for a congestion control on this incast: the
    // victim within 2x of its ideal (PFC alone: 12x)
    assert!(fct < 2.0 * ideal, "victim {fct} vs ideal {ideal}");
    assert_eq!(a.fabric.drops, Some(0));
}

#[test]
fn once_per_rtt_update_helps_two_flows_start_and_overflows_eight() {
    // `update = "rtt"`: Algorithm 1 once per round trip, when an ACK passes
    // the snd_nxt of the previous update (the HPCC simulator's
    // HandleAckTimely / UpdateRateTimely in rdma-hw.cc, whose per-ACK
    // FastReactTimely is empty), instead of once per 16 KB completion.
    // Measured here (seed 3), per cadence:
    //
    // | 10G, no PFC, 4 MiB port | completion | rtt |
    // |---|---|---|
    // | 2 x 64 MiB: busy, first tenth | 0.080 | 0.241 |
    // | 2 x 64 MiB: goodput over the run | 0.694 | 0.854 |
    // | 2 x 64 MiB: busy, 40% to the first end | 0.959 | 0.948 |
    // | 8 x 16 MiB: goodput over the run | 0.654 | 0.004 (81,640 drops) |
    // | incast-roce-timely.toml (400G, PFC): makespan | 2550.6 us | 2846.0 us |
    // | its victim (ideal 23.6 us) | 25.2 us | 24.0 us |
    //
    // Two flows: a sample per round trip reflects the previous update's
    // rate, so the first round trip's stale samples no longer stack cuts and
    // the start stays busy three times longer (the port is at 1.00 for the
    // first 1% of the run, 0.50 under completions). Eight flows without PFC:
    // a round trip grows to milliseconds as the start's queue builds, one
    // update per round trip is too few to stop it and the 4 MiB port
    // overflows (the per-completion run peaks at 2.8 ms of its 3.4 ms);
    // why go-back-N then takes 30 s is not diagnosed (a guess: its rewound
    // snd_nxt stays below the mark, so no update comes until the
    // retransmissions pass it, as in rdma-hw.cc, which runs under PFC).
    // That, and the slower 400G example, is why the paper's per-completion
    // update stays the default.
    let cadence = |n: u32, bytes: &str, mode: &str| {
        let extra = format!("[fabric.timely]\nupdate = \"{mode}\"");
        run_text(&incast(n, "10Gbps", bytes, &extra))
    };
    let first_tenth = |r: &Report| mean(&port_samples(r, "utilization", 0.0, 0.1));
    let (c, t) = (
        cadence(2, "64MiB", "completion"),
        cadence(2, "64MiB", "rtt"),
    );
    for (mode, r) in [("completion", &c), ("rtt", &t)] {
        println!(
            "2 flows x 64 MiB, 10G, update = {mode}: busy in the first tenth {:.3}, goodput over the run {:.3}, steady {:.3}, Jain {:.4}, drops {:?}\n  utilization/queue per tenth: {}",
            first_tenth(r),
            goodput(r, 2, 64.0, 10.0),
            steady_utilization(r, 0.4),
            jain(r),
            r.fabric.drops,
            tenths(r)
        );
    }
    assert_eq!((c.fabric.drops, t.fabric.drops), (Some(0), Some(0)));
    // the claim of the cadence: no stacked stale cuts at the start, so the
    // port is busier in the first tenth and the run is shorter
    assert!(first_tenth(&t) > 2.0 * first_tenth(&c));
    assert!(t.makespan_us < c.makespan_us);
    // and the steady state is the same law's: the 0.9 bound of the
    // per-completion test above holds
    assert!(steady_utilization(&t, 0.4) > 0.9);
    let (c8, t8) = (
        cadence(8, "16MiB", "completion"),
        cadence(8, "16MiB", "rtt"),
    );
    println!(
        "8 flows x 16 MiB, 10G: goodput completion {:.3} (drops {:?}), rtt {:.3} (drops {:?})",
        goodput(&c8, 8, 16.0, 10.0),
        c8.fabric.drops,
        goodput(&t8, 8, 16.0, 10.0),
        t8.fabric.drops
    );
    // the shipped example (PFC, 400G) under both
    for mode in ["completion", "rtt"] {
        let text = common::example("incast-roce-timely.toml")
            + &format!("\n[fabric.timely]\nupdate = \"{mode}\"\n");
        let e = common::run_packet("incast-roce-timely.toml", &text);
        let v = e.flow_records.rows.iter().find(|f| f.src == 24).unwrap();
        println!(
            "incast-roce-timely.toml, update = {mode}: {:.1} us, {} PAUSE frames, victim {:.1} us (ideal {:.1}), drops {:?}",
            e.makespan_us,
            e.fabric.pfc_pause_frames.unwrap(),
            v.fct_us,
            v.ideal_us,
            e.fabric.drops
        );
        // issue 13's criterion holds under both cadences
        assert!(v.fct_us < 2.0 * v.ideal_us, "{mode}: victim {}", v.fct_us);
        assert_eq!(e.fabric.drops, Some(0));
    }
}

#[test]
fn update_is_validated_and_rtt_lists_seg_bytes_as_ignored() {
    let t = incast(2, "10Gbps", "1MiB", "[fabric.timely]\nupdate = \"segment\"");
    let e = config::parse("timely.toml", &t).unwrap_err().to_string();
    assert!(
        e.contains("fabric.timely.update") && e.contains("\"segment\"") && e.contains("\"rtt\""),
        "{e}"
    );
    // once per round trip, the completion event is listed as doing nothing
    let ignored = |update: &str| {
        let t = incast(
            1,
            "10Gbps",
            "64KiB",
            &format!("[fabric.timely]\nupdate = \"{update}\"\nseg_bytes = \"64KiB\""),
        );
        run_text(&t)
            .ignored_settings
            .iter()
            .any(|i| i.key == "fabric.timely.seg_bytes")
    };
    assert!(ignored("rtt"));
    assert!(!ignored("completion"));
}
