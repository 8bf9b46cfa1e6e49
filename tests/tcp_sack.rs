//! TCP's delayed ACK (RFC 1122 §4.2.3.2, RFC 5681 §4.2) and SACK loss
//! recovery (RFC 2018, RFC 6675) at the packet level (issue 13), on the
//! fabric of `tests/tcp.rs`: one switch, 1 Gb/s (or 10 Gb/s) host links of
//! 24.4 µs, a 100 ns switch pipeline, an idle round trip of ≈ 100 µs;
//! 1460 B of payload and 40 B of headers; drop-tail ports of 64 KB.

use fabricsim::backend::packet::{
    self, CongestionControl, Ecn, EcnMarkAt, FlowControl, LossRecovery, PacketConfig, PacketStats,
    Transport,
};
use fabricsim::dag::{Dag, Dep};
use fabricsim::topology::{GpuId, NicOverride, Topology};
use fabricsim::units::{Rate, SimTime};

mod common;

const PAYLOAD: u32 = 1460;
const NEWRENO: CongestionControl = CongestionControl::NewReno { initial_window: 10 };
const CUBIC: CongestionControl = CongestionControl::Cubic { initial_window: 10 };

fn fabric(hosts: u32, gbps: u64) -> Topology {
    fabric_with(hosts, gbps, Vec::new())
}

/// [`fabric`] with some hosts' NICs at their own rate.
fn fabric_with(hosts: u32, gbps: u64, nic_overrides: Vec<NicOverride>) -> Topology {
    common::one_switch_with(hosts, Rate::gbps(gbps), 24_400, 100, nic_overrides)
}

/// TCP with `cc`, SACK on or off, a delayed-ACK timer (0 = off), Linux's
/// 200 ms minimum RTO unless `min_rto_us` says otherwise.
fn tcp(cc: CongestionControl, sack: bool, delack: SimTime, min_rto_us: u64) -> PacketConfig {
    PacketConfig {
        mtu: PAYLOAD,
        header_bytes: 40,
        ack_bytes: 64,
        port_buffer_bytes: 64 << 10,
        flow_control: FlowControl::Lossy,
        transport: Transport::Tcp {
            per_packet_overhead: SimTime::from_ns(100),
            jitter: SimTime::ZERO,
        },
        window_bytes: 4 << 20,
        loss_recovery: LossRecovery::Tcp,
        tcp_min_rto: SimTime::from_us(min_rto_us),
        tcp_sack: sack,
        tcp_delayed_ack: delack,
        cc,
        ..PacketConfig::default()
    }
}

fn run(d: &Dag, t: &Topology, cfg: &PacketConfig) -> (f64, PacketStats) {
    let (out, st) = packet::run_detailed(d, t, cfg).expect("run completes");
    // byte conservation: sent = accepted + duplicates + discarded + dropped
    st.check_conservation().unwrap();
    assert_eq!(out.fabric.bytes_delivered, d.transfer_bytes());
    (out.makespan.0 as f64 / 1e6, st)
}

/// Timeouts on a loss the sender was told of, could send and had not
/// resent: neither silent (no loss signal), nor a lost retransmission only
/// the timer can find, nor a recovery whose window held its lost segments
/// when the ACK clock stopped ([`packet::recovery::TimeoutKind`]).
fn told(s: &PacketStats) -> u64 {
    s.timeouts
        - s.tcp_silent_timeouts
        - s.tcp_lost_retransmission_timeouts
        - s.tcp_window_held_timeouts
}

/// One flow of `segments` from host 1 to host 0.
fn one_flow(segments: u64) -> Dag {
    let mut d = Dag::new();
    d.begin_op("one flow");
    d.transfer(GpuId(1), GpuId(0), segments * PAYLOAD as u64, &[]);
    d
}

/// `n` senders into one receiver, 8 barrier-synchronized rounds of 1 MB
/// striped over them (the incast of Vasudevan et al., SIGCOMM 2009 §3);
/// goodput, Gb/s. Lockstep: every sender starts at 0 and no draw moves a
/// packet, so every seed gives the same run.
fn striped(n: u32, cfg: &PacketConfig) -> (f64, PacketStats) {
    striped_in(n, (1 << 20) / n as u64, 8, cfg, Variant::Lockstep)
}

/// How a run of an incast breaks the lockstep order of simultaneous
/// events (tests/tcp.rs's seeds of the jitter, tests/loss_recovery.rs's
/// staggered starts).
#[derive(Clone, Copy, Debug)]
enum Variant {
    /// No jitter, every sender starts at 0: one order of simultaneous events.
    Lockstep,
    /// The TCP stack's per-segment CPU jitter (uniform in [0, 500 ns),
    /// tests/tcp.rs's) drawn from this seed: which sender's segments meet
    /// a full buffer changes in every round.
    Jitter(u64),
    /// Each sender's first round starts at a time of its own in [0, 200
    /// µs) (two idle round trips; xorshift64 of this seed, fixed by the
    /// test), with the jitter of [`Variant::Jitter`] of the same seed: the
    /// first round's bursts no longer coincide, the later rounds start on
    /// the barrier.
    Spread(u64),
}

/// Lockstep, seeds 1-6 of the jitter and six start spreads.
fn variants() -> Vec<Variant> {
    let mut v = vec![Variant::Lockstep];
    v.extend((1..=6).map(Variant::Jitter));
    v.extend((1..=6).map(Variant::Spread));
    v
}

/// [`striped`] with `per` bytes per sender and round, `rounds` rounds,
/// under `variant`.
fn striped_in(
    n: u32,
    per: u64,
    rounds: u32,
    cfg: &PacketConfig,
    variant: Variant,
) -> (f64, PacketStats) {
    let t = fabric(n + 1, 1);
    let mut cfg = cfg.clone();
    let mut d = Dag::new();
    d.begin_op("incast");
    let mut last: Vec<Dep> = Vec::new();
    match variant {
        Variant::Lockstep => {}
        Variant::Jitter(seed) => {
            cfg.transport = Transport::Tcp {
                per_packet_overhead: SimTime::from_ns(100),
                jitter: SimTime::from_ns(500),
            };
            cfg.seed = seed;
        }
        Variant::Spread(seed) => {
            cfg.transport = Transport::Tcp {
                per_packet_overhead: SimTime::from_ns(100),
                jitter: SimTime::from_ns(500),
            };
            cfg.seed = seed;
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for s in 1..=n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let c = d.compute(GpuId(s), SimTime(x % 200_000_000), &[]);
                last.push(Dep::Done(c));
            }
        }
    }
    for r in 0..rounds {
        let this: Vec<Dep> = (1..=n)
            .map(|s| {
                // a spread's first round: each sender waits for its own start only
                let deps = match variant {
                    Variant::Spread(_) if r == 0 => vec![last[s as usize - 1]],
                    _ => last.clone(),
                };
                Dep::Done(d.transfer(GpuId(s), GpuId(0), per, &deps))
            })
            .collect();
        last = this;
    }
    let (us, st) = run(&d, &t, &cfg);
    (d.transfer_bytes() as f64 * 8.0 / (us * 1e3), st)
}

/// The table behind the README's SACK figures: each law over NewReno's
/// recovery, SACK with RACK-TLP and PRR (the default) and SACK without
/// RACK-TLP (`tcp_rack = false`). Each cell: the lockstep run (Gb/s,
/// timeouts, retransmitted), then the mean goodput and the range of
/// timeouts over seeds 1-6 of the jitter (a lockstep cell's timeouts move
/// with the order of simultaneous events; the tests below check their
/// claims on every variant).
/// `cargo test --release --test tcp_sack sack_table -- --ignored --nocapture`
#[test]
#[ignore = "prints the incast table, asserts nothing"]
fn sack_table() {
    eprintln!("N  cubic  cubic+sack  cubic+sack-rack  newreno  newreno+sack  newreno+sack-rack");
    eprintln!("   each: lockstep Gb/s (timeouts, retransmitted) | jitter seeds 1-6: mean Gb/s [timeouts min-max]; RTOmin 200 ms");
    for n in [1u32, 2, 3, 4, 6, 8, 12, 16] {
        let mut line = format!("{n:2}");
        for cc in [CUBIC, NEWRENO] {
            for (sack, rack) in [(false, false), (true, true), (true, false)] {
                let mut cfg = tcp(cc, sack, SimTime::ZERO, 200_000);
                cfg.tcp_rack = rack;
                let (g, s) = striped(n, &cfg);
                let (mut mean, mut lo, mut hi) = (0.0, u64::MAX, 0);
                for seed in 1..=6 {
                    let (gj, sj) =
                        striped_in(n, (1 << 20) / n as u64, 8, &cfg, Variant::Jitter(seed));
                    mean += gj / 6.0;
                    lo = lo.min(sj.timeouts);
                    hi = hi.max(sj.timeouts);
                }
                line += &format!(
                    "  {g:.3} ({}, {}) | {mean:.3} [{lo}-{hi}]",
                    s.timeouts, s.retransmitted_packets
                );
            }
        }
        eprintln!("{line}");
    }
}

#[test]
fn sack_with_rack_tlp_does_no_worse_than_newrenos_recovery_at_low_fan_in() {
    // The regression issue 13 reported: CUBIC at N = 2 reached 0.944 Gb/s
    // over NewReno's recovery and 0.104 Gb/s (2 timeouts) over SACK. The
    // timeouts were a hole with fewer than DupThresh segments SACKed above
    // it at the end of a round and retransmissions lost in a burst of
    // `cwnd − pipe` of them: RACK-TLP (RFC 8985) finds the first by time,
    // PRR (RFC 6937) sends the retransmissions at the pace of deliveries.
    // SACK's recovery resends every loss of a window in one round trip where
    // NewReno's resends one per round trip (Fall and Floyd, CCR 1996), so
    // it must do no worse: at N = 2 and 4, no timeout for either law, and
    // goodput within 1% of the recovery without SACK or better, on every
    // run: lockstep and seeds 1-6 of the jitter. Measured: SACK + RACK-TLP
    // 0.963-0.966 Gb/s with no timeout on all 28 runs; without SACK CUBIC
    // collapses on most (N = 4: 0.009-0.064 Gb/s, 10-28 timeouts; N = 2
    // on seeds 1 and 4: 0.019, 6 timeouts) and NewReno once (N = 4, seed
    // 1: 0.146, 2 timeouts). Under start spreads the claim does not hold
    // for any recovery (`low_fan_in_under_start_spreads`, ignored, with
    // its trace). Two kinds of timeout are no failure of a recovery's
    // logic (`TimeoutKind`): a silent one (nothing SACKed, no duplicate
    // ACK, no recovery running: the window lost whole in that lock-out)
    // and a lost retransmission at a round's tail (every missing segment
    // resent, nothing sent after the last resend: RACK cannot time it, TLP
    // is off in recovery, RFC 8985 §7.2; Linux alike). None occurs on
    // these runs today; under issue 16's partition-independent event order
    // both did once: jitter seed 2, N = 2, CUBIC, two silent (segments
    // 403-448 dropped whole at 9.1 ms, RTOs at 210.2 and 416.4 ms, 0.144
    // Gb/s) and N = 4, CUBIC, one lost retransmission (PSN 176 resent at
    // 7.29 ms, 177-179 SACKed, RTO at 207.9 ms; 0.249 Gb/s against 0.010
    // without SACK); jitter seed 3, N = 2, CUBIC: five silent and one lost
    // retransmission that outlived its recovery (PSNs 331, 333 and 336,
    // found lost and resent inside a recovery whose point was 209, missing
    // again when ACK 209 ended it; 332-359 but those SACKed, RTO at 207.7
    // ms; the kind once missed it, as it asked for a running recovery). So:
    // no SACK recovery times out on a loss it was told of and had not
    // resent, on any run; the goodput is compared on runs without a
    // timeout.
    for v in std::iter::once(Variant::Lockstep).chain((1..=6).map(Variant::Jitter)) {
        for n in [2u32, 4] {
            for cc in [CUBIC, NEWRENO] {
                let per = (1 << 20) / n as u64;
                let (g0, s0) = striped_in(n, per, 8, &tcp(cc, false, SimTime::ZERO, 200_000), v);
                let (g1, s1) = striped_in(n, per, 8, &tcp(cc, true, SimTime::ZERO, 200_000), v);
                eprintln!(
                    "{v:?}, N = {n}, {cc:?}: without SACK {g0:.3} Gb/s ({} timeouts, {} silent), SACK + RACK-TLP {g1:.3} Gb/s ({} timeouts, {} silent, {} lost retransmissions, {} window held)",
                    s0.timeouts, s0.tcp_silent_timeouts, s1.timeouts, s1.tcp_silent_timeouts, s1.tcp_lost_retransmission_timeouts, s1.tcp_window_held_timeouts
                );
                assert_eq!(
                    told(&s1),
                    0,
                    "{v:?}, N = {n}, {cc:?}: a SACK recovery timed out on a loss it was told of"
                );
                if s1.timeouts == 0 {
                    assert!(g1 >= 0.99 * g0, "{v:?}: {g1:.3} vs {g0:.3} Gb/s");
                }
            }
        }
    }
}

#[test]
#[ignore = "unmet under start spreads: drop-tail lock-out of a whole window (trace in the comment)"]
fn low_fan_in_under_start_spreads() {
    // The target of the test above (no timeout at N = 2 and 4 with SACK +
    // RACK-TLP, no worse than NewReno's recovery) on six start spreads (each
    // sender's first round starts at its own time in [0, 200 µs), with the
    // jitter of the same seed). Unmet, for every recovery. Measured, N = 2:
    // SACK + RACK-TLP 3-8 timeouts on every spread (NewReno 0.005-0.101
    // Gb/s, CUBIC 0.046-0.064), without SACK 3-8 as well (NewReno
    // 0.053-0.101, CUBIC 0.017-0.052); N = 4: CUBIC with SACK 0.249-0.966
    // (3 timeouts on spread 2, a 200 ms stall on spread 3).
    //
    // Trace (spread 1, N = 2, NewReno with SACK; senders start at 123.8 and
    // 180.5 µs): the second sender's segments 43-95 all drop at the
    // receiver's full port (53 in a row, the whole window) while the first
    // sender's never do: both NICs send back to back at line rate into a
    // line-rate port (12.0 µs per 1,500 B segment), so arrivals and
    // departures keep one phase, and the first sender's segment always
    // takes the slot a departure frees (drop-tail lock-out, Floyd and
    // Jacobson, "On Traffic Phase Effects in Packet-Switched Gateways",
    // 1992). The CPU's jitter (< 0.5 µs) does not reach the wire once the
    // NIC holds a queue. With nothing above the hole arriving, no SACK, no
    // duplicate ACK and no RACK mark is possible; TLP's probe (1.706 ms,
    // new data) drops too, and the RTO (200 ms) recovers at 201.7 ms. The
    // first sender meets no timeout (96 segments outstanding at 1.8 ms,
    // none SACKed); the second loses its whole window again in the next
    // two rounds (probe and RTO at 207.7 / 407.7 ms and 413.7 / 613.7 ms,
    // nothing SACKed) and times out once more inside a SACK recovery at
    // 825.2 ms. The same spread without the jitter gives the same first
    // loss (segments 43-95, RTO at 201.7 ms). Lockstep and the jitter seeds
    // alone (coinciding starts) meet no timeout. What would meet it is not
    // in the recovery: randomness at the bottleneck (RED's random drop,
    // which Floyd and Jacobson propose) or in the NIC's wire timing.
    // The figures above are of the event order before issue 16. Under its
    // order (the port that wins a tie changes from instant to instant) the
    // phase lock picks other losers: N = 2, SACK + RACK-TLP, CUBIC 0-6
    // timeouts per spread (none on spreads 1 and 2), NewReno 0-1 (one on
    // spread 3); N = 4 CUBIC 3 on spread 5. And the jitter seeds without
    // spreads no longer escape it: CUBIC + SACK at N = 2 times out on 5 of
    // the 6 seeds, 15 of its 18 timeouts silent (`sack_with_rack_…`).
    let mut worst = 0;
    for seed in 1..=6 {
        for n in [2u32, 4] {
            for cc in [CUBIC, NEWRENO] {
                let per = (1 << 20) / n as u64;
                let v = Variant::Spread(seed);
                let (g0, s0) = striped_in(n, per, 8, &tcp(cc, false, SimTime::ZERO, 200_000), v);
                let (g1, s1) = striped_in(n, per, 8, &tcp(cc, true, SimTime::ZERO, 200_000), v);
                eprintln!(
                    "{v:?}, N = {n}, {cc:?}: without SACK {g0:.3} Gb/s ({} timeouts), SACK + RACK-TLP {g1:.3} Gb/s ({} timeouts)",
                    s0.timeouts, s1.timeouts
                );
                worst = worst.max(s1.timeouts);
            }
        }
    }
    assert_eq!(worst, 0, "SACK + RACK-TLP timed out under a start spread");
}

const DELACK: SimTime = SimTime::from_us(40_000);

#[test]
fn delayed_ack_halves_the_acks_of_a_bulk_transfer() {
    // RFC 5681 §4.2 / RFC 1122 §4.2.3.2: with a delayed-ACK timer the
    // receiver ACKs every second segment, except the first 16 (Linux's
    // quick-ACK mode at a connection's start: `tcp_incr_quickack` grants
    // min(rcv_wnd / 2 MSS, TCP_MAX_QUICKACKS = 16), here min(2872 / 2, 16)),
    // each ACKed at once. A loss-free transfer of P segments (P even, slow
    // start's windows of 10, 20, 40 ... segments all even) draws exactly
    // 16 + (P − 16) / 2 ACKs: 108 for P = 200, against P without; the
    // timer never fires (no lone segment waits), so the transfer takes the
    // same time to within one round trip (≈ 100 µs, against the 40 ms a
    // firing timer would add).
    let t = fabric(2, 10);
    let d = one_flow(200);
    let (plain, sp) = run(&d, &t, &tcp(NEWRENO, true, SimTime::ZERO, 200_000));
    let (delayed, sd) = run(&d, &t, &tcp(NEWRENO, true, DELACK, 200_000));
    eprintln!(
        "200 segments: {} ACKs in {plain:.1} us, with delayed ACK {} in {delayed:.1} us",
        sp.ctrl_sent, sd.ctrl_sent
    );
    assert_eq!(sp.drops_total() + sd.drops_total(), 0);
    assert_eq!(sp.ctrl_sent, 200);
    assert_eq!(sd.ctrl_sent, 16 + (200 - 16) / 2);
    assert!(
        (delayed - plain).abs() < 100.0,
        "{plain:.1} vs {delayed:.1} us"
    );
}

#[test]
fn a_lone_segment_is_acked_when_the_timer_fires_exactly_the_delay_later() {
    // A window of one segment (a fixed window, no congestion control): each
    // segment leaves when the previous one's ACK arrives. With a
    // delayed-ACK timer D the receiver, holding one segment, waits D before
    // ACKing it (RFC 1122 §4.2.3.2) once its quick ACKs are spent: Linux
    // grants rcv_wnd / (2 MSS) of them, 2 when that is 0 (a window of one
    // segment; `tcp_incr_quickack`). So the first two segments' ACKs go at
    // once and the third's waits: three segments take exactly as long as
    // with an ACK per segment (the third is the last: its ACK does not
    // delay the transfer), four complete exactly D later, to the
    // picosecond (no jitter: the CPU cost is a fixed 100 ns). D = 40 ms,
    // Linux's TCP_DELACK_MIN.
    let t = fabric(2, 10);
    let fixed = |segments, delack| {
        let d = one_flow(segments);
        let mut c = tcp(CongestionControl::None, true, delack, 200_000);
        c.window_bytes = PAYLOAD as u64;
        // without the timer, an ACK per segment (a fixed window's receiver
        // would otherwise wait for `ack_every` = 4)
        c.ack_every = 1;
        run(&d, &t, &c)
    };
    for (segments, wait) in [(3, 0), (4, DELACK.0)] {
        let (plain, sp) = fixed(segments, SimTime::ZERO);
        let (delayed, sd) = fixed(segments, DELACK);
        eprintln!("{segments} segments, window 1: {plain:.3} us, with a 40 ms delayed ACK {delayed:.3} us");
        assert_eq!(sp.timeouts + sd.timeouts, 0);
        assert_eq!(
            (delayed * 1e6).round() as u64 - (plain * 1e6).round() as u64,
            wait
        );
    }
}

#[test]
fn quick_ack_mode_comes_back_after_an_idle_gap_longer_than_the_rto() {
    // Linux's `tcp_event_data_recv`: in-order data arriving more than the
    // RTO after the last (m > icsk_rto) re-enters quick-ACK mode
    // (`tcp_incr_quickack`). A window of one segment, as above (2 quick
    // ACKs, then every ACK held D = 40 ms): a message of 3 segments, a
    // pause, 3 more on the same connection; RTO = 200 ms (Linux's floor,
    // SRTT ≈ 100 µs). After a pause of 300 ms > RTO the second message's
    // first two ACKs are quick again (its third segment is the last), so
    // the run takes exactly as long as with an ACK per segment; after
    // 100 ms < RTO they are held, and the run takes exactly 2 D longer.
    let t = fabric(2, 10);
    let two = |pause_ms: u64, delack| {
        let mut d = Dag::new();
        d.begin_op("two messages");
        let a = d.transfer(GpuId(1), GpuId(0), 3 * PAYLOAD as u64, &[]);
        let p = d.compute(GpuId(1), SimTime::from_us(pause_ms * 1000), &[Dep::Done(a)]);
        d.transfer(GpuId(1), GpuId(0), 3 * PAYLOAD as u64, &[Dep::Done(p)]);
        let mut c = tcp(CongestionControl::None, true, delack, 200_000);
        c.window_bytes = PAYLOAD as u64;
        c.ack_every = 1;
        run(&d, &t, &c)
    };
    for (pause_ms, wait) in [(300, 0), (100, 2 * DELACK.0)] {
        let (plain, sp) = two(pause_ms, SimTime::ZERO);
        let (delayed, sd) = two(pause_ms, DELACK);
        eprintln!(
            "3 + 3 segments, {pause_ms} ms apart, window 1: {plain:.3} us, with a 40 ms delayed ACK {delayed:.3} us"
        );
        assert_eq!(sp.timeouts + sd.timeouts, 0);
        assert_eq!(
            (delayed * 1e6).round() as u64 - (plain * 1e6).round() as u64,
            wait
        );
    }
}

#[test]
fn quick_acks_spare_slow_start_the_delayed_ack_timer() {
    // A first window of one segment (`tcp_initial_window = 1`, RFC 5681
    // §3.1's floor) and a 40 ms delayed-ACK timer: a receiver that delays
    // every ACK holds the lone first segment for the whole 40 ms (the
    // slow-start/delayed-ACK stall, RFC 5681 §4.2). Linux's receiver starts
    // in quick-ACK mode (`tcp_event_data_recv` on the first data:
    // `tcp_incr_quickack`, up to TCP_MAX_QUICKACKS = 16 ACKs at once), so
    // slow start runs as with an ACK per segment: 30 segments go in windows
    // of 1, 2, 4, 8 (15 ACKs, all quick) and 15, done 4 round trips, the
    // one-way trip and 15 serializations after the start: 4 × 100.2 + 50.1
    // + 15 × 1.2 = 468.9 µs (tests/tcp.rs's round trip; tolerance 10 µs as
    // there: the CPU's 100 ns per segment and the ACKs' serialization are
    // not in the sum), and exactly as fast as without delayed ACK.
    let t = fabric(2, 10);
    let d = one_flow(30);
    let iw1 = CongestionControl::NewReno { initial_window: 1 };
    let (plain, sp) = run(&d, &t, &tcp(iw1, true, SimTime::ZERO, 200_000));
    let (delayed, sd) = run(&d, &t, &tcp(iw1, true, DELACK, 200_000));
    eprintln!(
        "30 segments from a window of 1: {plain:.1} us ({} ACKs), with a 40 ms delayed ACK {delayed:.1} us ({} ACKs)",
        sp.ctrl_sent, sd.ctrl_sent
    );
    assert_eq!(sp.drops_total() + sd.drops_total(), 0);
    assert!((delayed - 468.9).abs() < 10.0, "{delayed:.1} us");
    assert!(
        (delayed - plain).abs() < 1e-3,
        "{plain:.3} vs {delayed:.3} us"
    );
    // 16 quick ACKs, then one per two of the last 14 segments
    assert_eq!(sd.ctrl_sent, 16 + 14 / 2);
}

#[test]
fn fast_retransmit_still_fires_under_delayed_ack() {
    // tests/tcp.rs's four-sender incast (each 256 KB per round, 64 KB port)
    // with a 40 ms delayed-ACK timer: out-of-order segments are still ACKed
    // at once (RFC 5681 §4.2), so three duplicate ACKs still resend a hole
    // (RFC 5681 §3.2), never a NACK: on every variant (lockstep, seeds 1-6
    // of the jitter, six start spreads). SACK with RACK-TLP and PRR resends
    // every loss of a window within the recovery (RFC 6675) and never times
    // out: measured 0.959-0.966 Gb/s on all 13 variants. NewReno's recovery
    // (one hole per round trip, RFC 6582), measured, not asserted: lockstep
    // 0.958 Gb/s with no timeout (3 timeouts, 0.144, before Linux's
    // quick-ACK mode was modelled), but 1 timeout on jitter seed 5 (0.144
    // Gb/s) and on spreads 1 and 3 (0.146, 0.078), 2 on spread 2 (0.053)
    // and 8 on spread 4 (0.047).
    for v in variants() {
        for sack in [false, true] {
            let cfg = tcp(NEWRENO, sack, DELACK, 200_000);
            let (g, st) = striped_in(4, 256 << 10, 4, &cfg, v);
            eprintln!(
                "{v:?}, delayed ACK, sack {sack}: goodput {g:.3} Gb/s, drops {}, fast retransmits {}, timeouts {}",
                st.drops_total(),
                st.nack_rewinds,
                st.timeouts
            );
            assert!(st.drops_total() > 0 && st.nack_rewinds > 0, "{v:?}");
            assert_eq!(st.nacks_sent, 0, "{v:?}");
            if sack {
                assert_eq!(st.timeouts, 0, "{v:?}");
            }
        }
    }
}

#[test]
fn sack_recovers_an_incast_newreno_recovery_times_out_on() {
    // Eight senders, 1 MB rounds, 64 KB port, 200 ms RTOmin: several
    // segments of one window drop. NewReno's recovery resends one hole per
    // round trip (RFC 6582) and runs into the 200 ms timer; SACK's (RFC
    // 6675, with RACK-TLP and PRR) resends every lost segment in the
    // recovery's first round trip (Fall and Floyd, CCR 1996, §5) and times
    // out less. Expected on every variant (lockstep, seeds 1-6 of the
    // jitter, six start spreads): timeouts on losses NewReno's recovery was
    // told of, none on such losses for SACK's; with the senders' bursts
    // coinciding (lockstep, jitter) no SACK timeout at all; on every run where SACK
    // meets no timeout, fewer packets resent and at least 3× the goodput;
    // every byte conserved (sent = delivered + duplicates + dropped,
    // `run`). Measured: lockstep NewReno 0.033 Gb/s (30 timeouts, 852
    // resent), SACK 0.961 (none, 377); jitter NewReno 0.033-0.047 (19-30,
    // 596-693), SACK 0.960-0.965 (none, 367-393); spreads NewReno
    // 0.033-0.064 (10-16, 386-557), SACK 0.254-0.961 (0-2, 363-463).
    // SACK's timeouts under spreads, traced (scoreboard at each RTO):
    // spreads 1, 3, 4 and 6 are silent (`tcp_silent_timeouts`): a sender
    // starting ≈ 200 µs into the others' bursts loses its whole initial
    // window (10 segments) and the tail loss probe into the full port, no
    // ACK comes, the RTO (200 ms) fires at ≈ 200.4 ms — the drop-tail
    // lock-out `low_fan_in_under_start_spreads` traces, which no recovery
    // sees. Spread 2's is a lost retransmission
    // (`tcp_lost_retransmission_timeouts`): PSN 22's last resend (6.59 ms)
    // drops, every later segment is SACKed, nothing is left to send, so
    // RACK has nothing sent after it to time it against and TLP is off in
    // recovery (RFC 8985 §7.2): the tail of
    // `cubic_with_sack_rides_out_the_eight_sender_incast`. Under issue
    // 16's partition-independent event order spread 2 meets instead one
    // silent timeout and one whose window held what the recovery knew
    // (`tcp_window_held_timeouts`): a RACK timer found PSNs 3-11 and 13
    // lost (12 SACKed), PRR let out 3, 4 and 5 (the first retransmission
    // and DeliveredData + 1), those were lost again, no ACK came, and PRR
    // sends only on ACKs (RFC 6937 §3.1): the ACK clock had stopped, RTO at
    // 202.0 ms. None of these is a loss the recovery was told of, could
    // send and had not resent: SACK's recovery never times out on one
    // (asserted on every variant), NewReno's does on every variant.
    // A timeout costs a 200 ms stall whoever meets it, so where SACK meets
    // one the goodput compares counts of stalls, not recoveries. (With the
    // partition-independent event order of issue 16's M1, spread 1's
    // NewReno recovery met 3 timeouts, 0.147 Gb/s against SACK's silent
    // one, 0.255: the 3× no longer held there, for that reason.)
    for v in variants() {
        let per = (1 << 20) / 8;
        let (g0, s0) = striped_in(8, per, 8, &tcp(NEWRENO, false, SimTime::ZERO, 200_000), v);
        let (g1, s1) = striped_in(8, per, 8, &tcp(NEWRENO, true, SimTime::ZERO, 200_000), v);
        eprintln!(
            "{v:?}, N = 8: NewReno recovery {g0:.3} Gb/s ({} timeouts, {} silent, {} resent), SACK {g1:.3} Gb/s ({} timeouts, {} silent, {} lost retransmissions, {} window held, {} resent)",
            s0.timeouts, s0.tcp_silent_timeouts, s0.retransmitted_packets,
            s1.timeouts, s1.tcp_silent_timeouts, s1.tcp_lost_retransmission_timeouts,
            s1.tcp_window_held_timeouts, s1.retransmitted_packets
        );
        if !matches!(v, Variant::Spread(_)) {
            assert_eq!(s1.timeouts, 0, "{v:?}");
        }
        assert!(
            told(&s0) > 0,
            "{v:?}: NewReno's recovery timed out on no loss it knew"
        );
        assert_eq!(
            told(&s1),
            0,
            "{v:?}: a SACK recovery timed out on a loss it knew"
        );
        if s1.timeouts == 0 {
            assert!(s1.retransmitted_packets < s0.retransmitted_packets, "{v:?}");
            assert!(g1 > 3.0 * g0, "{v:?}: {g1:.3} vs {g0:.3} Gb/s");
        }
    }
}

/// Host 1 (10 Gb/s) sends host 0 (its NIC at 1 Gb/s) 16 messages of one
/// segment, each posted once the previous one arrived (their 16 ACKs spend
/// the receiver's quick ACKs of the connection's start, none of them
/// marked: a lone segment never queues), then one of 3 segments, which
/// leave back to back: the third finds the second waiting behind the first
/// at the receiver's 1 Gb/s port and is marked CE when `ecn` (a step at K =
/// 0 at enqueue: a packet that finds one waiting is marked). NewReno with
/// SACK, a delayed-ACK timer `delack` (0: an ACK per segment). (First CE
/// mark, first window cut) in ps, and the stats.
fn ce_then_cut(delack: SimTime, ecn: bool) -> (u64, u64, PacketStats) {
    let t = fabric_with(
        2,
        10,
        vec![NicOverride {
            hosts: vec![0],
            rate: Rate::gbps(1),
        }],
    );
    let mut d = Dag::new();
    d.begin_op("16 lone segments, then 3");
    let mut last = Vec::new();
    for _ in 0..16 {
        last = vec![Dep::Done(d.transfer(
            GpuId(1),
            GpuId(0),
            PAYLOAD as u64,
            &last,
        ))];
    }
    d.transfer(GpuId(1), GpuId(0), 3 * PAYLOAD as u64, &last);
    let mut c = tcp(NEWRENO, true, delack, 200_000);
    c.ack_every = 1;
    if ecn {
        c.ecn = Some(Ecn {
            kmin: 0,
            kmax: 0,
            pmax: 1.0,
        });
        c.ecn_mark_at = EcnMarkAt::Enqueue;
    }
    let (_, st) = run(&d, &t, &c);
    (st.first_ecn_mark_ps, st.first_window_cut_ps, st)
}

#[test]
fn classic_ecn_a_ce_mark_is_acked_at_once_under_delayed_ack() {
    // Linux's receiver under classic ECN (RFC 3168): a CE mark while it
    // demands no CWR enters quick-ACK mode for 2 ACKs
    // (net/ipv4/tcp_input.c, `__tcp_ecn_check_ce`:
    // `tcp_enter_quickack_mode(sk, 2)`, "Better not delay acks, sender can
    // have a very low cwnd"), so the echo (ECE) reaches the sender without
    // the delayed-ACK wait, and the sender cuts (RFC 3168 §6.1.2).
    //
    // [`ce_then_cut`]: the last message's first segment waits for a second
    // (an ACK per two segments, RFC 5681 §4.2), which comes and is ACKed
    // with it; the third, marked, is alone (the message ends), so without
    // the rule its ACK waits for the 40 ms timer and the cut with it. With
    // the rule the mark reaches the sender exactly as fast as with an ACK
    // per segment (no timer), to the picosecond: one trip of the marked
    // segment and its ACK, far below the timer. Measured: CE at 1,024.503
    // µs, cut 107.519 µs later either way; without the rule the ECE waits
    // for the timer and the run (done when the data arrived) ends before
    // it: no cut at all.
    let (mark, cut, st) = ce_then_cut(DELACK, true);
    let (mark0, cut0, _) = ce_then_cut(SimTime::ZERO, true);
    eprintln!(
        "CE at {:.3} us, cut {:.3} us later (an ACK per segment: CE at {:.3} us, cut {:.3} us later); marks {}, cuts {}",
        mark as f64 / 1e6,
        cut.saturating_sub(mark) as f64 / 1e6,
        mark0 as f64 / 1e6,
        cut0.saturating_sub(mark0) as f64 / 1e6,
        st.ecn_marks,
        st.dctcp_window_cuts
    );
    assert_eq!(st.ecn_marks, 1, "the last message's third segment only");
    assert_eq!(st.drops_total(), 0);
    assert_eq!((mark, cut), (mark0, cut0));
    assert!(cut - mark < DELACK.0 / 100, "{} ps", cut - mark);
    // no mark, no cut (the path loses nothing)
    let (_, cut, _) = ce_then_cut(DELACK, false);
    assert_eq!(cut, u64::MAX);
}

#[test]
#[ignore = "unmet on some jitter seeds: lost retransmissions at a round's tail wait for the RTO (trace in the comment)"]
fn cubic_with_sack_rides_out_the_eight_sender_incast() {
    // The lockstep `sack_table` shows CUBIC + SACK + RACK-TLP at N = 8 with
    // no timeout (0.961 Gb/s), as NewReno + SACK. On seeds 1-6 of the
    // jitter it is unmet: 3-5 timeouts on every seed, mean 0.173 Gb/s
    // (NewReno + SACK: none on every seed, 0.960-0.965; the test above).
    // Those are the figures of the event order before issue 16 (the trace
    // below too); under its order lockstep meets one timeout (0.252 Gb/s)
    // and the jitter seeds 0-3 (none on seeds 1-3, one on seed 4; mean
    // 0.707 Gb/s): which tail is lost follows the order of simultaneous
    // events at the full port.
    //
    // Trace (seed 1, the first timeout, 201.6 ms): one connection's recovery
    // starts at 0.88 ms (recover = PSN 30); its holes 16, 18 and 22 are
    // resent, RACK marks the resent 16 and 22 lost again once segments sent
    // after them are SACKed (RFC 8985 §6.2), and their last retransmissions
    // leave at 5.151 and 5.247 ms into the queue the other seven senders
    // keep full (CUBIC keeps 0.7 of its window through a loss, NewReno half)
    // and drop. The round's data are all sent (the latest segment delivered
    // left at 4.635 ms): no segment sent after those retransmissions can be
    // delivered, so RACK has nothing to time them against, TLP is not armed
    // during a recovery (RFC 8985 §7.2), and only the RTO (200 ms) finds
    // them. Two other connections time out the same way at 206.5 and 207.8
    // ms (PSN 29 resent at 7.641 ms, PSN 39 at 7.665 ms). Lockstep meets no
    // timeout: one order of events where no such tail is lost. This is the
    // RFCs' behaviour (Linux schedules no loss probe outside the Open and CWR
    // states either); RFC 6675's rescue retransmission (NextSeg rule 4, not
    // modelled) would resend one such tail segment per recovery.
    for seed in 1..=6 {
        let cfg = tcp(CUBIC, true, SimTime::ZERO, 200_000);
        let (g, s) = striped_in(8, (1 << 20) / 8, 8, &cfg, Variant::Jitter(seed));
        eprintln!(
            "seed {seed}: CUBIC + SACK, N = 8: {g:.3} Gb/s ({} timeouts)",
            s.timeouts
        );
        assert_eq!(s.timeouts, 0, "seed {seed}");
    }
}
