//! DCTCP's queue against the analysis of its paper (Alizadeh et al.,
//! "Data Center TCP", SIGCOMM 2010, §3.3): N long flows share a bottleneck of
//! C packets per second with round-trip time RTT, the switch marks every packet
//! arriving to a queue above K packets, g = 1/16. In the steady state the flows
//! cut in step and the queue is a sawtooth with
//!
//! * W* = (C × RTT + K) / N, α ≈ √(2 / W*) (eq. 9),
//! * amplitude A = N × W* α / 2 ≈ ½ √(2 N (C × RTT + K)) packets (eq. 12),
//! * period T_C = W* α / 2 ≈ ½ √(2 W*) round trips (eq. 13),
//! * Q_max = K + N (eq. 14).
//!
//! The paper's worked setting (its Fig. 11, checked there against ns-2): 10 Gb/s,
//! RTT 100 µs, K = 40 packets of 1500 B, N = 2 and 10. C × RTT = 83.3 packets,
//! so A = 11.1 and 24.8 packets and T_C = 5.55 and 2.48 RTT (555 and 248 µs).
//! The issue (13) asks for amplitude and period within 30% of the analysis; the
//! analysis itself is a fluid approximation (the paper's Fig. 11 shows its
//! simulated queues within about that of eq. 12–13), hence the tolerance.
//!
//! The test also checks what the analysis presumes: at most one window cut per
//! flow per round trip (a cut blocks further cuts until the data it had sent is
//! acknowledged, Linux's CWR state), the link stays busy, and nothing drops.

use fabricsim::backend::packet::{
    self, CongestionControl, Ecn, EcnMarkAt, FlowControl, PacketConfig, Transport,
};
use fabricsim::dag::Dag;
use fabricsim::topology::GpuId;
use fabricsim::units::{Rate, SimTime};

mod common;

/// 1500-byte packets on the wire: 1460 B of payload and 40 B of TCP/IP headers
/// (the paper's setting counts packets of 1500 B).
const PAYLOAD: u32 = 1460;
const WIRE: f64 = 1500.0;
const K_PKTS: f64 = 40.0;
const RTT_US: f64 = 100.0;

struct Measured {
    amplitude_pkts: f64,
    period_us: f64,
    utilization: f64,
    cuts_per_flow_rtt: f64,
}

fn run(n: u32) -> Measured {
    // 4 link traversals per round trip (data 2, ACK 2) of 24.4 µs, two switch
    // pipelines of 100 ns and the data packet's two serializations of 1.2 µs:
    // RTT = 97.6 + 0.2 + 2.4 ≈ 100 µs with an empty queue.
    let topo = common::one_switch(n + 1, Rate::gbps(10), 24_400, 100);
    let mut d = Dag::new();
    d.begin_op("dctcp");
    // 40 ms of line rate in all: slow start is over after a few ms
    let total: u64 = 50_000_000;
    for s in 1..=n {
        d.transfer(GpuId(s), GpuId(0), total / n as u64, &[]);
    }
    let k = (K_PKTS * WIRE) as u64;
    let cfg = PacketConfig {
        mtu: PAYLOAD,
        header_bytes: 40,
        ack_bytes: 64,
        port_buffer_bytes: 4 << 20,
        flow_control: FlowControl::Lossy,
        transport: Transport::Tcp {
            per_packet_overhead: SimTime::from_ns(5),
            jitter: SimTime::from_ns(5),
        },
        window_bytes: 8 << 20,
        // the paper's switches mark a packet that arrives to a queue above K
        ecn: Some(Ecn {
            kmin: k,
            kmax: k,
            pmax: 1.0,
        }),
        ecn_mark_at: EcnMarkAt::Enqueue,
        cc: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        rto: SimTime::from_us(10_000),
        sample_interval: SimTime::from_us(2),
        series_ports: 1,
        series_max_samples: 1 << 15,
        ..PacketConfig::default()
    };
    let (out, st) = packet::run_detailed(&d, &topo, &cfg).expect("run completes");
    st.check_conservation().unwrap();
    assert_eq!(out.fabric.bytes_delivered, d.transfer_bytes());
    assert_eq!(st.drops_total(), 0, "N = {n}: drops");
    let end = out.makespan.as_us();
    let (from, to) = (0.3 * end, 0.9 * end);
    let series = |prefix: &str| -> Vec<(f64, f64)> {
        out.series
            .iter()
            .find(|s| s.name.starts_with(prefix) && s.name.contains("-> nic 0.0)"))
            .unwrap_or_else(|| panic!("no {prefix} series"))
            .samples
            .iter()
            .filter(|s| s.t_us >= from && s.t_us <= to)
            .map(|s| (s.t_us, s.value))
            .collect()
    };
    let q = series("queue_bytes");
    let u = series("utilization");
    let utilization = u.iter().map(|s| s.1).sum::<f64>() / u.len() as f64;
    // cycles: the sawtooth falls through its midline once per cut; hysteresis of
    // a quarter of the swing keeps a packet's worth of noise from counting
    let mut sorted: Vec<f64> = q.iter().map(|s| s.1).collect();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    let (lo, hi) = (pct(0.02), pct(0.98));
    let mid = (lo + hi) / 2.0;
    let band = (hi - lo) / 4.0;
    let mut falls = Vec::new();
    let mut above = false;
    for &(t, v) in &q {
        if v > mid + band {
            above = true;
        } else if above && v < mid - band {
            above = false;
            falls.push(t);
        }
    }
    assert!(falls.len() >= 10, "N = {n}: only {} cycles", falls.len());
    let period_us = (falls[falls.len() - 1] - falls[0]) / (falls.len() - 1) as f64;
    // amplitude: the mean over whole cycles of (max − min) between falls
    let mut swings = Vec::new();
    for w in falls.windows(2) {
        let cyc = q.iter().filter(|s| s.0 >= w[0] && s.0 < w[1]).map(|s| s.1);
        let (mn, mx) = cyc.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        swings.push(mx - mn);
    }
    let amplitude_pkts = swings.iter().sum::<f64>() / swings.len() as f64 / WIRE;
    let rtts = end / RTT_US;
    let cuts_per_flow_rtt = st.dctcp_window_cuts as f64 / n as f64 / rtts;
    eprintln!(
        "DCTCP N = {n}: {} cycles, amplitude {amplitude_pkts:.1} pkts, period {period_us:.0} us, \
         utilization {utilization:.3}, queue p2 {:.1} p98 {:.1} pkts, cuts {} ({cuts_per_flow_rtt:.2} per flow per RTT), marks {}",
        falls.len(),
        lo / WIRE,
        hi / WIRE,
        st.dctcp_window_cuts,
        st.ecn_marks
    );
    Measured {
        amplitude_pkts,
        period_us,
        utilization,
        cuts_per_flow_rtt,
    }
}

/// The analysis of §3.3 for N flows: (amplitude in packets, period in µs).
fn analysis(n: u32) -> (f64, f64) {
    let bdp = 10e9 * RTT_US * 1e-6 / 8.0 / WIRE; // 83.3 packets
    let w_star = (bdp + K_PKTS) / n as f64;
    let amplitude = 0.5 * (2.0 * n as f64 * (bdp + K_PKTS)).sqrt();
    let period_rtts = 0.5 * (2.0 * w_star).sqrt();
    (amplitude, period_rtts * RTT_US)
}

#[test]
fn dctcp_cuts_at_most_once_per_round_trip_and_keeps_the_link_busy_without_drops() {
    // What the analysis presumes, and what the issue asks ("window cut at most
    // once per window"). Measured (release, this file): N = 2: 127 cuts,
    // 0.15 per flow per round trip; N = 10: 1,136 cuts, 0.27;
    // utilization 1.000, no drops. (The counter had missed a cut made on the
    // ACK that ends the previous reduction: 62 and 479 before.) Before the
    // fix (the cut flag reset with every α window) a cut late in one α window
    // allowed another at the start of the next.
    for n in [2u32, 10] {
        let m = run(n);
        assert!(
            m.utilization > 0.95,
            "N = {n}: utilization {}",
            m.utilization
        );
        assert!(
            m.cuts_per_flow_rtt <= 1.0,
            "N = {n}: {} cuts per flow per round trip",
            m.cuts_per_flow_rtt
        );
    }
}

/// Unmet (issue 13), and not by a modelling error found: the analysis's
/// premise does not hold in this run. Measured on this fabric, N = 2:
/// amplitude 13.3 packets (analysis 11.1, ratio 1.19; 13.6 under issue 16's
/// event order), period 1,241 µs (1,250)
/// (analysis 555 µs, 2.24); N = 10: amplitude 34.6 (24.8, 1.39), period 807
/// µs (248 µs, 3.25).
///
/// Traced (every cut's window and α, the queue every 2 µs): the analysis has
/// all N flows cut once, together, in the round trip after the queue passes
/// K, by α W*/2 with α = √(2/W*), which takes the queue below K at once. Here
/// the marks come a few packets at a time (the queue creeps past K by N
/// packets per round trip, and only packets arriving above K are marked), so
/// the flows cut at different times: at N = 2 one flow's cut (≈ 3.3 packets)
/// leaves the queue at K, its packets sent in the next round trip are marked
/// again, and when its reduction (Linux's CWR, one round trip without growth)
/// ends it cuts a second time. Each congestion event is 4 cuts of ≈ 3.5
/// packets 80 µs apart (queue 43 → 29). With two cuts and two CWR round trips
/// per cycle, α (one marked window per cycle) solves α (α W* + 2) = 1:
/// α = 0.112 at W* = 61.7 (measured at the cuts: 0.108; analysis 0.18), the
/// amplitude is N α W* = 13.8 packets (13.3) and the period is α W* + 2 = 8.9
/// round trips of the loaded path, 100 µs + ≈ 36 queued packets × 1.2 µs =
/// 143 µs: 1,274 µs (1,241). At N = 10 the same happens with ≈ 2.5 cuts per
/// flow per cycle (28 packets between a flow's cuts, windows of 12; α at the
/// cuts 0.235 against 0.403; queue 50 → 18, Q_max = K + N as eq. 14 says).
/// The analysis counts the period in round trips and the test converts them
/// at the 100 µs propagation RTT, a further 1.43× against the loaded path.
/// The paper's ns-2 flows cut in step (its Fig. 11); making these do so
/// would take a change to marking or to the one-cut-per-window rule that no
/// source here supports, so the target stays unmet.
#[test]
#[ignore = "unmet target of issue 13: period 2.2-3.3x the analysis, see the doc comment"]
fn dctcp_queue_oscillation_matches_the_papers_analysis_for_2_and_10_flows() {
    for n in [2u32, 10] {
        let (a, t) = analysis(n);
        let m = run(n);
        eprintln!(
            "  analysis: amplitude {a:.1} pkts, period {t:.0} us; measured/analysis {:.2} and {:.2}",
            m.amplitude_pkts / a,
            m.period_us / t
        );
        assert!(
            (m.amplitude_pkts / a - 1.0).abs() <= 0.3,
            "N = {n}: amplitude {:.1} packets against {a:.1}",
            m.amplitude_pkts
        );
        assert!(
            (m.period_us / t - 1.0).abs() <= 0.3,
            "N = {n}: period {:.0} us against {t:.0}",
            m.period_us
        );
    }
}
