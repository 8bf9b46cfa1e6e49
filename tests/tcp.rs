//! TCP at the packet level (issue 13): slow start, fast retransmit and
//! NewReno recovery, the RFC 6298 timer, and incast collapse with Linux's
//! 200 ms minimum RTO against a datacenter's 200 µs (Vasudevan et al.,
//! "Safe and Effective Fine-grained TCP Retransmissions for Datacenter
//! Communication", SIGCOMM 2009; Phanishayee et al., FAST 2008).
//!
//! Fabric: one switch, hosts on 1 Gb/s links of 24.4 µs, 100 ns switch
//! pipeline: an idle round trip of ≈ 100 µs of propagation plus two
//! serializations of a 1500-byte packet (12 µs each) — the paper's 1 Gb/s,
//! ≈ 100 µs datacenter. Packets of 1460 B of payload and 40 B of TCP/IP
//! headers; drop-tail buffers of 64 KB per port (the shallow buffers of the
//! paper's switches, 32–64 KB per port).

use fabricsim::backend::packet::{
    self, CongestionControl, Ecn, EcnMarkAt, FlowControl, LossRecovery, PacketConfig, PacketStats,
    Transport,
};
use fabricsim::dag::{Dag, Dep};
use fabricsim::topology::{GpuId, Topology};
use fabricsim::units::{Rate, SimTime};

mod common;

const PAYLOAD: u32 = 1460;
const WIRE: u64 = 1500;

fn fabric(hosts: u32, gbps: u64) -> Topology {
    fabric_at(hosts, gbps, 24_400)
}

fn fabric_at(hosts: u32, gbps: u64, latency_ns: u64) -> Topology {
    common::one_switch(hosts, Rate::gbps(gbps), latency_ns, 100)
}

fn tcp_config(cc: CongestionControl, min_rto: SimTime, buffer: u64) -> PacketConfig {
    PacketConfig {
        mtu: PAYLOAD,
        header_bytes: 40,
        ack_bytes: 64,
        port_buffer_bytes: buffer,
        flow_control: FlowControl::Lossy,
        transport: Transport::Tcp {
            per_packet_overhead: SimTime::from_ns(100),
            jitter: SimTime::from_ns(500),
        },
        window_bytes: 4 << 20,
        loss_recovery: LossRecovery::Tcp,
        tcp_min_rto: min_rto,
        cc,
        ..PacketConfig::default()
    }
}

fn run(d: &Dag, t: &Topology, cfg: &PacketConfig) -> (f64, PacketStats) {
    let (out, st) = packet::run_detailed(d, t, cfg).expect("run completes");
    st.check_conservation().unwrap();
    assert_eq!(out.fabric.bytes_delivered, d.transfer_bytes());
    (out.makespan.as_us(), st)
}

#[test]
fn slow_start_doubles_the_window_every_round_trip() {
    // RFC 5681 §3.1 (and RFC 6928's first window of 10): on an idle path the
    // windows are 10, 20, 40, 80 segments, each released by the previous
    // one's ACKs a round trip later (each ACK releases two). A transfer is
    // done when its last byte arrives: k round trips, then the last window's
    // serialization and one-way trip. Here (10 Gb/s, windows well below the
    // bandwidth-delay product of 83 segments): RTT = 97.6 µs propagation +
    // 0.2 µs switching + 2 × 1.2 µs serialization = 100.2 µs, one way 50.1 µs,
    // 1.2 µs per segment:
    //   10 segments: 50.1 + 10 × 1.2 = 62.1 µs (one window)
    //   30: 100.2 + 50.1 + 20 × 1.2 = 174.3 µs (two)
    //   70: 2 × 100.2 + 50.1 + 40 × 1.2 = 298.5 µs (three)
    //   71: 3 × 100.2 + 50.1 + 1.2 = 351.9 µs (the 71st waits for a fourth)
    // and a fixed window sends 70 at once: 50.1 + 70 × 1.2 = 134.1 µs.
    // Tolerance 10 µs: the sender's per-packet CPU cost (0.1 µs + up to
    // 0.5 µs of jitter per segment) and the ACKs' serialization, not in the
    // sums.
    let t = fabric(2, 10);
    let iw10 = CongestionControl::NewReno { initial_window: 10 };
    let one = |segments: u64, cc: CongestionControl| {
        let mut d = Dag::new();
        d.begin_op("slow start");
        d.transfer(GpuId(1), GpuId(0), segments * PAYLOAD as u64, &[]);
        let (us, st) = run(&d, &t, &tcp_config(cc, SimTime::from_us(200_000), 4 << 20));
        assert_eq!(st.drops_total(), 0);
        us
    };
    for (segments, expect) in [(10u64, 62.1), (30, 174.3), (70, 298.5), (71, 351.9)] {
        let us = one(segments, iw10);
        eprintln!("slow start, {segments} segments: {us:.1} us (expected {expect})");
        assert!(
            (us - expect).abs() < 10.0,
            "{segments} segments: {us:.1} us"
        );
    }
    let flat = one(70, CongestionControl::None);
    eprintln!("fixed window, 70 segments: {flat:.1} us (expected 134.1)");
    assert!((flat - 134.1).abs() < 10.0, "fixed window: {flat:.1} us");
}

/// `n` senders into one receiver for `rounds` barrier-synchronized rounds, each
/// sender `sru` bytes per round: a round starts when every sender's data of
/// the last one is delivered (a striped file-system read, the incast
/// workload of Phanishayee et al. 2008 §2).
fn incast(n: u32, sru: u64, rounds: u32, cfg: &PacketConfig) -> (f64, PacketStats) {
    let t = fabric(n + 1, 1);
    let mut d = Dag::new();
    d.begin_op("incast");
    let mut last: Vec<Dep> = Vec::new();
    for _ in 0..rounds {
        let this: Vec<Dep> = (1..=n)
            .map(|s| Dep::Done(d.transfer(GpuId(s), GpuId(0), sru, &last)))
            .collect();
        last = this;
    }
    let (us, st) = run(&d, &t, cfg);
    let goodput_gbps = d.transfer_bytes() as f64 * 8.0 / (us * 1e3);
    (goodput_gbps, st)
}

#[test]
fn fast_retransmit_recovers_losses_without_a_timeout() {
    // Four senders of 256 KB into one 1 Gb/s port of 64 KB: slow start
    // overflows the buffer and several segments of one window drop. Three
    // duplicate ACKs resend the first (RFC 5681 §3.2), each partial ACK the
    // next (RFC 6582): the 200 ms timer never fires, and goodput stays
    // near the link's 1460/1500 of 1 Gb/s.
    // On every seed of the jitter (1-6 measured: 0.965-0.966 Gb/s).
    for seed in 1..=6u64 {
        let mut cfg = tcp_config(
            CongestionControl::NewReno { initial_window: 10 },
            SimTime::from_us(200_000),
            64 << 10,
        );
        cfg.seed = seed;
        let (g, st) = incast(4, 256 << 10, 4, &cfg);
        eprintln!(
            "seed {seed}, 4 senders: goodput {g:.3} Gb/s, drops {}, fast retransmits + partial ACKs {}, timeouts {}, window cuts {}",
            st.drops_total(),
            st.nack_rewinds,
            st.timeouts,
            st.dctcp_window_cuts
        );
        assert!(
            st.drops_total() > 0,
            "seed {seed}: the buffer must overflow for this test"
        );
        assert!(st.nack_rewinds > 0, "seed {seed}");
        // the TCP receiver answers a gap with duplicate ACKs, never a NACK
        assert_eq!(st.nacks_sent, 0, "seed {seed}");
        assert_eq!(
            st.timeouts, 0,
            "seed {seed}: every loss recovered by fast retransmit"
        );
        assert!(g > 0.85, "seed {seed}: goodput {g:.3} Gb/s");
    }
}

/// Goodput of the synchronized read with `n` senders, a fixed block of
/// 1 MB per round striped over them (Vasudevan et al. 2009 §3's fixed-block
/// workload), 8 rounds; `seed` draws the TCP stack's per-packet jitter (the
/// only draw: it decides which sender's segments meet a full buffer).
fn striped(
    n: u32,
    cc: CongestionControl,
    min_rto_us: u64,
    ecn: bool,
    seed: u64,
) -> (f64, PacketStats) {
    let mut cfg = tcp_config(cc, SimTime::from_us(min_rto_us), 64 << 10);
    if ecn {
        dctcp_marking(&mut cfg);
    }
    cfg.seed = seed;
    incast(n, (1 << 20) / n as u64, 8, &cfg)
}

/// DCTCP's step marking at 1 Gb/s: K = 20 packets (Alizadeh et al. 2010,
/// §3.4: K > C × RTT / 7, and their 1 Gb/s deployment's 20), at enqueue.
fn dctcp_marking(cfg: &mut PacketConfig) {
    let k = 20 * WIRE;
    cfg.ecn = Some(Ecn {
        kmin: k,
        kmax: k,
        pmax: 1.0,
    });
    cfg.ecn_mark_at = EcnMarkAt::Enqueue;
}

#[test]
fn incast_collapses_with_a_200ms_minimum_rto_and_not_with_200us() {
    // Vasudevan et al. 2009 (abstract, §3-5): with the 200 ms RTOmin of
    // Linux a synchronized read's goodput falls by up to 90% once the
    // senders overflow the port's buffer, since every timeout idles the
    // link for 200 ms while a round moves 1 MB in ≈ 8.6 ms; with a 200 µs
    // RTOmin (their fine-grained timers) goodput stays high at the same
    // fan-in, an order of magnitude above. Their goodputs are means over
    // repeated trials, and how many of a run's 8 rounds meet a timeout is
    // the luck of which segments drop, so the collapse is asserted on the
    // mean over six seeds of the jitter; what holds for every run is
    // asserted per seed. Measured, N = 16, seeds 1-6: 200 ms 0.054, 0.064,
    // 0.101, 0.144, 0.033, 0.079 Gb/s (4-9 timeouts; mean 0.079); 200 µs
    // 0.707, 0.896, 0.913, 0.912, 0.895, 0.913 (mean 0.873, 11×); N = 2
    // 0.966 with no timeout on every seed. With 32 rounds the spread stays
    // (0.070-0.145): it is the run-to-run spread of the mechanism.
    let newreno = CongestionControl::NewReno { initial_window: 10 };
    let seeds = 1..=6u64;
    let (mut slow, mut fast) = (0.0, 0.0);
    for seed in seeds.clone() {
        let (few, s_few) = striped(2, newreno, 200_000, false, seed);
        let (s16, st_slow) = striped(16, newreno, 200_000, false, seed);
        let (f16, st_fast) = striped(16, newreno, 200, false, seed);
        eprintln!(
            "seed {seed}, NewReno: N = 2 {few:.3} Gb/s ({} timeouts); N = 16: {s16:.3} Gb/s with RTOmin 200 ms ({} timeouts), {f16:.3} Gb/s with 200 us ({} timeouts)",
            s_few.timeouts, st_slow.timeouts, st_fast.timeouts
        );
        // few senders: the buffer holds the burst, no timeout, near line rate
        assert_eq!(s_few.timeouts, 0, "seed {seed}");
        assert!(few > 0.9, "seed {seed}, N = 2: {few:.3} Gb/s");
        // many senders overflow it: timeouts with either RTOmin
        assert!(st_slow.timeouts > 0 && st_fast.timeouts > 0, "seed {seed}");
        slow += s16 / seeds.clone().count() as f64;
        fast += f16 / seeds.clone().count() as f64;
    }
    eprintln!("N = 16, mean over the seeds: {slow:.3} Gb/s (200 ms), {fast:.3} Gb/s (200 us)");
    // collapse (a 90% reduction) with 200 ms ...
    assert!(slow < 0.1, "200 ms RTOmin at N = 16: {slow:.3} Gb/s");
    // ... and an order of magnitude more with 200 µs
    assert!(fast > 10.0 * slow, "{fast:.3} vs {slow:.3} Gb/s");
    assert!(fast > 0.5, "200 us RTOmin at N = 16: {fast:.3} Gb/s");
}

#[test]
fn dctcp_pushes_the_collapse_fan_in_out() {
    // Alizadeh et al. 2010 §4.2 (incast): DCTCP's marks keep the queue near
    // K, so the fan-in a shallow buffer holds without timeouts grows. Same
    // 200 ms RTOmin, 64 KB port: NewReno has collapsed at N = 8 (0.033 Gb/s
    // measured, 22 timeouts), DCTCP (K = 20 packets) holds line rate there
    // (0.961, none) and collapses only from N = 12 (0.030), where 12 flows at
    // DCTCP's smallest windows plus K no longer fit 43 packets of buffer.
    let newreno = CongestionControl::NewReno { initial_window: 10 };
    let dctcp = CongestionControl::Dctcp { g: 1.0 / 16.0 };
    // Per seed: NewReno times out, and each round that meets a timeout
    // idles the port for RTOmin, so goodput ≤ the run's bits / (rounds
    // with a timeout × 200 ms) ≤ 8 MiB × 8 / 200 ms = 0.336 Gb/s; DCTCP
    // never times out and holds line rate. How many of the 8 rounds meet a
    // timeout is the luck of which segments drop, which in this lockstep
    // incast is who wins the ties of an instant at the full port: measured
    // NewReno, seeds 1-6, 0.033-0.047 Gb/s (19-30 timeouts, 7 to 10 × 200 ms idle)
    // when the same sender always won them (main before issue 16); with
    // issue 16's order, which rotates the winner, 0.041-0.103 (4-17
    // timeouts, 3 to 8 × 200 ms; mean 0.070), with other rotating orders
    // 0.054-0.253 (1-11). So the 90% collapse of Vasudevan et al. is
    // printed (mean over the seeds), not asserted; DCTCP 0.960-0.966 with
    // none under every order.
    let n = 8;
    let seeds = 1..=6u64;
    let mut slow = 0.0;
    for seed in seeds.clone() {
        // measured with NewReno's own recovery (RFC 6582, `tcp_sack = false`):
        // with SACK NewReno reaches 0.144 Gb/s here with 2 timeouts
        // (`tests/tcp_sack.rs`), still collapsed but above this bound
        let mut cfg = tcp_config(newreno, SimTime::from_us(200_000), 64 << 10);
        cfg.tcp_sack = false;
        cfg.seed = seed;
        let (c, sc) = incast(n, (1 << 20) / n as u64, 8, &cfg);
        let mut cfg = tcp_config(dctcp, SimTime::from_us(200_000), 64 << 10);
        dctcp_marking(&mut cfg);
        cfg.seed = seed;
        let (d, sd) = incast(n, (1 << 20) / n as u64, 8, &cfg);
        eprintln!(
            "seed {seed}, N = {n}: NewReno {c:.3} Gb/s ({} timeouts), DCTCP {d:.3} Gb/s ({} timeouts)",
            sc.timeouts, sd.timeouts
        );
        assert!(sc.timeouts > 0, "seed {seed}: NewReno must time out here");
        let bits = (1u64 << 20) as f64 * 8.0 * 8.0;
        assert!(c * 1e9 <= bits / 0.2, "seed {seed}: NewReno {c:.3} Gb/s");
        assert_eq!(sd.timeouts, 0, "seed {seed}");
        assert!(d > 0.9, "seed {seed}: DCTCP: {d:.3} Gb/s");
        slow += c / seeds.clone().count() as f64;
    }
    eprintln!("N = {n}, NewReno's mean over the seeds: {slow:.3} Gb/s");
}

/// The table behind the incast figures (README): goodput per fan-in.
/// `cargo test --release --test tcp incast_table -- --ignored --nocapture`
#[test]
#[ignore = "prints the incast table, asserts nothing"]
fn incast_table() {
    let cubic = CongestionControl::Cubic { initial_window: 10 };
    let newreno = CongestionControl::NewReno { initial_window: 10 };
    let dctcp = CongestionControl::Dctcp { g: 1.0 / 16.0 };
    eprintln!(
        "N  cubic-200ms  cubic-200us  newreno-200ms  newreno-200us  dctcp-200ms  (Gb/s, timeouts)"
    );
    for n in [1u32, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64] {
        let (a, sa) = striped(n, cubic, 200_000, false, 1);
        let (b, sb) = striped(n, cubic, 200, false, 1);
        let (c, sc) = striped(n, newreno, 200_000, false, 1);
        let (e, se) = striped(n, newreno, 200, false, 1);
        let (d, sd) = striped(n, dctcp, 200_000, true, 1);
        eprintln!(
            "{n:2} {a:.3} ({}) {b:.3} ({}) {c:.3} ({}) {e:.3} ({}) {d:.3} ({})",
            sa.timeouts, sb.timeouts, sc.timeouts, se.timeouts, sd.timeouts
        );
    }
}

#[test]
fn tso_lets_one_flow_reach_line_rate_on_400g() {
    // The CPU's cost per packet (1 µs + up to 0.5 µs of jitter, mean 1.25 µs,
    // the scenario defaults) caps one flow at 1460 B × 8 / 1.25 µs =
    // 9.34 Gb/s of payload on a 400 Gb/s link. With TSO the cost is paid
    // once per 64 KiB segment (45 packets, 65 700 B), prepared while the
    // previous one leaves: 65 700 × 8 / 1.25 µs = 420 Gb/s of CPU, above
    // the link's 400 × 1460 / 1500 = 389.3 Gb/s of payload, so the link
    // limits. 64 MiB on a 1 µs-per-hop path (RTT ≈ 5 µs, slow start done in
    // ≈ 30 µs of 1.4 ms). Tolerances: 2% on the CPU-bound rate (the jitter's
    // mean over 46 000 draws, the path's latency in the makespan), 5% on
    // the link-bound one (slow start and the path's latency).
    let t = fabric_at(2, 400, 1_000);
    let mut d = Dag::new();
    d.begin_op("one flow");
    let bytes: u64 = 64 << 20;
    d.transfer(GpuId(1), GpuId(0), bytes, &[]);
    let mut cfg = tcp_config(
        CongestionControl::NewReno { initial_window: 10 },
        SimTime::from_us(200_000),
        4 << 20,
    );
    cfg.transport = Transport::Tcp {
        per_packet_overhead: SimTime::from_us(1),
        jitter: SimTime::from_ns(500),
    };
    let gbps = |cfg: &PacketConfig| {
        let (us, st) = run(&d, &t, cfg);
        assert_eq!(st.drops_total(), 0);
        bytes as f64 * 8.0 / (us * 1e3)
    };
    let per_packet = gbps(&cfg);
    cfg.tcp_tso_bytes = 64 << 10;
    let tso = gbps(&cfg);
    eprintln!(
        "one flow on 400G: {per_packet:.2} Gb/s per-packet CPU cost, {tso:.1} Gb/s with 64 KiB TSO"
    );
    assert!(
        (per_packet / 9.344 - 1.0).abs() < 0.02,
        "{per_packet:.2} Gb/s"
    );
    assert!((tso / 389.33 - 1.0).abs() < 0.05, "{tso:.1} Gb/s");
}
