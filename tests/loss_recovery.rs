//! Loss recovery as deployed (issue 13): go-back-N, selective repeat as IRN
//! runs it (Mittal et al., "Revisiting network support for RDMA", SIGCOMM
//! 2018), go-back-0 (IRN's contrast case) and packet trimming with NACK (NDP,
//! Handley et al., SIGCOMM 2017), on small lossy RoCE incasts at 100 Gb/s.
//! Every run checks packet conservation (sent = accepted + duplicates +
//! out-of-order discards + dropped + trimmed) and that every payload byte is
//! delivered. Release: about 5 s; debug: under a minute.

use fabricsim::backend::packet::{self, FlowControl, LossRecovery, PacketConfig, PacketStats};
use fabricsim::backend::RunOutput;
use fabricsim::config::{self, Fidelity};
use fabricsim::dag::{Dag, Dep};
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, Topology, TopologySpec};
use fabricsim::units::{Rate, SimTime};

/// `hosts` hosts of one GPU and one NIC on 100 Gb/s links of 500 ns, 500 ns
/// switches, connected by `shape`.
fn topo_of(hosts: u32, shape: &TopologySpec) -> Topology {
    let c = ClusterSpec {
        hosts,
        gpus_per_host: 1,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(250),
    };
    let f = FabricLinkSpec {
        link_rate: Rate::gbps(100),
        link_latency: SimTime::from_ns(500),
        switch_latency: SimTime::from_ns(500),
        ..Default::default()
    };
    build(&c, &f, shape).unwrap()
}

fn topo(hosts: u32) -> Topology {
    topo_of(hosts, &TopologySpec::SingleSwitch)
}

/// `n` senders → GPU 0, `bytes` each, all at once.
fn incast(n: u32, bytes: u64) -> Dag {
    let mut d = Dag::new();
    d.begin_op("incast");
    for s in 1..=n {
        d.transfer(GpuId(s), GpuId(0), bytes, &[]);
    }
    d
}

/// RoCEv2 framing (78 B of headers, an 82 B ACK), lossy 100 GbE with
/// `buffer` bytes per port, a window of `window` bytes per queue pair (64 KiB
/// is about one bandwidth-delay product here, IRN's BDP-FC), and IRN's
/// timeouts (§4.1, 40 Gb/s): RTO_high 320 µs, RTO_low 100 µs (the default).
fn roce(rec: LossRecovery, buffer: u64, window: u64) -> PacketConfig {
    PacketConfig {
        header_bytes: 78,
        ack_bytes: 82,
        port_buffer_bytes: buffer,
        flow_control: FlowControl::Lossy,
        window_bytes: window,
        rto: SimTime::from_us(320),
        loss_recovery: rec,
        ..PacketConfig::default()
    }
}

fn run(dag: &Dag, t: &Topology, cfg: &PacketConfig) -> (RunOutput, PacketStats) {
    let (o, s) = packet::run_detailed(dag, t, cfg).expect("run completes");
    s.check_conservation().unwrap();
    assert_eq!(o.fabric.bytes_delivered, dag.transfer_bytes());
    (o, s)
}

fn max_fct_us(o: &RunOutput) -> f64 {
    o.transfer_fct.iter().map(|t| t.0).max().unwrap_or(0) as f64 / 1e6
}

const ALL: [LossRecovery; 3] = [
    LossRecovery::SelectiveRepeat,
    LossRecovery::GoBackN,
    LossRecovery::GoBack0,
];

/// 8 senders of 1 MiB each into one 100 GbE port with 128 KiB of buffer:
/// the incast of the comparison tests.
fn eight_to_one() -> (Topology, Dag) {
    (topo(9), incast(8, 1 << 20))
}

/// The incast of [`eight_to_one`] in lockstep, then with its senders'
/// starts spread by `variants − 1` seeded draws uniform in [0, 2 µs) (six
/// packet times at 100 Gb/s: enough to change which sender's packet meets a
/// full buffer, nothing against the 671 µs the incast takes). A lockstep
/// incast decides its drops by the order of simultaneous events, so a claim
/// about recoveries is checked on all of these, or on their mean where the
/// source's claim is about means.
fn eight_to_one_staggered(variants: u64) -> Vec<Dag> {
    let mut out = vec![incast(8, 1 << 20)];
    for seed in 1..variants {
        let mut d = Dag::new();
        d.begin_op("incast");
        // xorshift64, seeded per variant: the starts are fixed by the test
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for s in 1..=8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let start = d.compute(GpuId(s), SimTime(x % 2_000_000), &[]);
            d.transfer(GpuId(s), GpuId(0), 1 << 20, &[Dep::Done(start)]);
        }
        out.push(d);
    }
    out
}

/// Staggered variants of the eight-sender incast the comparison tests run.
const VARIANTS: u64 = 8;

#[test]
fn selective_repeat_resends_least_and_finishes_first_go_back_0_resends_most() {
    // IRN §2 and §5 (Fig. 1 and 9): selective repeat resends only what was
    // lost, go-back-N everything after a loss, go-back-0 the whole message;
    // their completion times order the same way. Resends are checked on
    // every variant of the incast; completion times, which the paper gives
    // as means over loaded runs, on the mean over the variants of the
    // slowest flow: one variant can end later under selective repeat, whose
    // lost retransmissions wait for RTO_high (IRN §3.1: a retransmission is
    // declared lost again only by a timeout) while go-back-N's next
    // out-of-order arrival NACKs it at once.
    // Measured, lockstep: retransmitted packets 224 / 1,228 / 1,810, slowest
    // flow 1,242 / 2,311 / 4,913 µs; the seven staggered starts, slowest
    // flow: selective repeat 1,090-1,482 µs, go-back-N 1,682-2,365.
    let (t, _) = eight_to_one();
    let mut slowest = [0.0f64; 3];
    for (v, d) in eight_to_one_staggered(VARIANTS).iter().enumerate() {
        let mut rtx = [0u64; 3];
        for (i, rec) in ALL.into_iter().enumerate() {
            let (o, s) = run(d, &t, &roce(rec, 128 << 10, 64 << 10));
            println!(
                "variant {v} {:>16}: slowest flow {:8.1} us, retransmitted {:5}, dropped {:4}, timeouts {:3}, NACKs {:4}",
                rec.name(),
                max_fct_us(&o),
                s.retransmitted_packets,
                s.data_dropped,
                s.timeouts,
                s.nacks_sent
            );
            assert!(s.data_dropped > 0, "{rec:?}: the incast must lose packets");
            rtx[i] = s.retransmitted_packets;
            slowest[i] += max_fct_us(&o) / VARIANTS as f64;
        }
        assert!(rtx[0] < rtx[1] && rtx[1] < rtx[2], "variant {v}: {rtx:?}");
    }
    println!("mean slowest flow over the variants: {slowest:.1?} us");
    assert!(
        slowest[0] <= slowest[1] && slowest[1] <= slowest[2],
        "{slowest:?}"
    );
}

#[test]
fn selective_repeat_resends_exactly_the_lost_packets() {
    // Under ECMP a flow's packets arrive in order, so a packet below one the
    // receiver selectively acknowledged is lost for sure (IRN §3.1): a loss
    // found that way is resent once, and nothing that arrived is resent.
    // Only a timeout can resend a packet still in flight (a duplicate at the
    // receiver), and it resends at most the window, 16 packets of 4 KiB. So
    // on every variant of the incast retransmissions = drops + duplicates,
    // with duplicates ≤ 16 × timeouts. Measured: lockstep 224 = 224 + 0 (its
    // 17 timeouts all fire with only lost packets outstanding); staggered
    // 145-211 retransmissions with 3-7 duplicates over 9-14 timeouts.
    let (t, _) = eight_to_one();
    for (v, d) in eight_to_one_staggered(VARIANTS).iter().enumerate() {
        let (_, s) = run(
            d,
            &t,
            &roce(LossRecovery::SelectiveRepeat, 128 << 10, 64 << 10),
        );
        assert!(s.data_dropped > 100, "variant {v}: {s:?}");
        assert_eq!(
            s.retransmitted_packets,
            s.data_dropped + s.data_duplicate,
            "variant {v}: {s:?}"
        );
        assert!(s.data_duplicate <= 16 * s.timeouts, "variant {v}: {s:?}");
        if v == 0 {
            assert_eq!(s.data_duplicate, 0, "lockstep: {s:?}");
        }
        assert_eq!(
            s.data_out_of_order, 0,
            "selective repeat keeps what arrives"
        );
        // go-back-N on the same incast discards what arrives beyond a gap,
        // and so resends more (lockstep 1,228 against 224; staggered, 607
        // against 166 at the closest)
        let (_, g) = run(d, &t, &roce(LossRecovery::GoBackN, 128 << 10, 64 << 10));
        assert!(
            g.data_out_of_order > 0 && g.retransmitted_packets > s.retransmitted_packets,
            "variant {v}: {g:?}"
        );
    }
}

#[test]
#[ignore = "unmet under an event order that rotates the winner of simultaneous arrivals (issue 16): IRN 784 us mean FCT against 680 with PFC (trace in the comment)"]
fn irn_without_pfc_is_not_slower_than_go_back_n_with_pfc() {
    // IRN's headline (§5.1, Fig. 3-4): IRN without PFC performs as well as or
    // better than RoCE (go-back-N) with PFC. The paper's figures are average
    // and tail FCTs of a loaded fat-tree; on one small incast we check what
    // transfers: the mean FCT of selective repeat on a lossy fabric, averaged
    // over the incast's variants, is no worse than go-back-N's on a lossless
    // (PFC) one with the same buffer.
    // Unmet on this incast: which flows lose packets at the full port is
    // decided by the order of simultaneous arrivals there (the staggered
    // variants are not free of ties either: ACK clocking puts every
    // sender's packets on the bottleneck's lattice), and the mean FCT
    // follows how many flows wait for RTO_high (320 µs, IRN's value; the
    // FCTs are steps of it). Traced (issue 16) with the tie order as the
    // only change: orders where one sender always wins a tie, the
    // insertion order of earlier versions and a fixed order by event
    // identity, concentrate the losses on a few flows: IRN mean 623.7 and
    // 584.7 µs over the variants (per variant 534-771 µs, fastest flows
    // 196-281 µs) against go-back-N + PFC's 680.2 (679-682, lossless, so
    // the same under every order). Orders that rotate the winner (issue
    // 16's, the same mix with another multiplier, a random order) spread
    // them: IRN 783.7, 730.6 and 750.4 µs, slower than PFC on 7 of 8
    // variants under issue 16's (628-956 µs; 9-17 timeouts per variant
    // against 7-13). IRN's BDP-FC (`window_bdp`, one bandwidth-delay product, instead
    // of the 128 KiB window) does not change it: 767.0 µs. So the headline
    // is not a property of this incast; it wants the paper's loaded fabric,
    // where the luck of one port's ties averages out
    // (`tests/irn_loaded_fabric.rs`, where it holds with BDP-FC).
    let (t, _) = eight_to_one();
    // PFC headroom for 100 Gb/s, 500 ns links, 500 ns switches:
    // (2 × 500 + 500) ns × 12.5 B/ns + 3 × 4174 B + 84 B ≈ 31.5 KB
    let mut pfc = roce(LossRecovery::GoBackN, 128 << 10, 64 << 10);
    pfc.flow_control = FlowControl::Pfc {
        xoff: 64 << 10,
        xon: (64 << 10) - 2 * 4174,
        headroom: 40 << 10,
    };
    let (mut irn_mean, mut pfc_mean) = (0.0, 0.0);
    for (v, d) in eight_to_one_staggered(VARIANTS).iter().enumerate() {
        let (lossy, ls) = run(
            d,
            &t,
            &roce(LossRecovery::SelectiveRepeat, 128 << 10, 64 << 10),
        );
        let (lossless, ps) = run(d, &t, &pfc);
        println!(
            "variant {v}: IRN (selective repeat, no PFC): slowest {:.1} us, mean {:.1} us, {} drops; RoCE (go-back-N + PFC): slowest {:.1} us, mean {:.1} us, {} drops",
            max_fct_us(&lossy),
            mean_fct_us(&lossy),
            ls.data_dropped,
            max_fct_us(&lossless),
            mean_fct_us(&lossless),
            ps.data_dropped
        );
        assert_eq!(ps.drops_total(), 0);
        irn_mean += mean_fct_us(&lossy) / VARIANTS as f64;
        pfc_mean += mean_fct_us(&lossless) / VARIANTS as f64;
    }
    println!("mean FCT over the variants: IRN {irn_mean:.1} us, go-back-N + PFC {pfc_mean:.1} us");
    assert!(irn_mean <= pfc_mean, "{irn_mean} vs {pfc_mean}");
}

fn mean_fct_us(o: &RunOutput) -> f64 {
    o.transfer_fct.iter().map(|t| t.0 as f64).sum::<f64>() / o.transfer_fct.len() as f64 / 1e6
}

#[test]
fn trimming_turns_drops_into_nacks_and_beats_dropping() {
    // NDP (§3.1): a full queue trims the payload and forwards the header at
    // high priority; the receiver NACKs it at once, so the sender resends
    // after one round trip instead of a gap or a timeout. Nothing is dropped,
    // every trim is counted and its header delivered, every byte arrives,
    // and the slowest flow finishes well before go-back-N dropping at the
    // same buffer (measured: 224 µs against 2,899 µs; 8 × 256 KiB into 64 KiB).
    let t = topo(9);
    let d = incast(8, 256 << 10);
    let (drop, dst) = run(&d, &t, &roce(LossRecovery::GoBackN, 64 << 10, 64 << 10));
    let mut cfg = roce(LossRecovery::SelectiveRepeat, 64 << 10, 64 << 10);
    cfg.trimming = true;
    let (trim, tst) = run(&d, &t, &cfg);
    println!(
        "go-back-N dropping: slowest {:.1} us, {} drops, {} timeouts; selective repeat trimming: slowest {:.1} us, {} trims, {} retransmitted, {} timeouts",
        max_fct_us(&drop),
        dst.data_dropped,
        dst.timeouts,
        max_fct_us(&trim),
        tst.data_trimmed,
        tst.retransmitted_packets,
        tst.timeouts
    );
    assert!(dst.data_dropped > 0);
    assert_eq!(tst.data_dropped, 0, "{tst:?}");
    assert_eq!(tst.drops_total(), 0, "{tst:?}");
    assert!(tst.data_trimmed > 0);
    assert_eq!(tst.trimmed_delivered, tst.data_trimmed);
    // every trimmed packet was a full one: 4096 B of payload cut each
    assert_eq!(tst.payload_bytes_trimmed, tst.data_trimmed * 4096);
    // a trim is not a drop: the report's dropped bytes stay 0
    assert_eq!(trim.fabric.bytes_dropped, 0);
    assert_eq!(trim.fabric.drops, 0);
    // each trim is answered by a NACK and a retransmission; none times out
    assert_eq!(tst.timeouts, 0);
    assert!(tst.retransmitted_packets >= tst.data_trimmed);
    assert!(max_fct_us(&trim) < 0.5 * max_fct_us(&drop));
}

#[test]
fn trimming_works_with_every_recovery_and_conserves_packets() {
    // Go-back-N and go-back-0 take a trimmed header's NACK as a gap's NACK
    // (and NACK again when the resent expected packet is trimmed too).
    // Without pacing of the retransmissions (NDP's receiver pulls) they
    // resend whole windows into the full queue, which trims them again: it
    // completes, conserves every packet, drops none — and pays off only with
    // selective repeat.
    let t = topo(5);
    let d = incast(4, 256 << 10);
    for rec in ALL {
        let mut cfg = roce(rec, 64 << 10, 64 << 10);
        cfg.trimming = true;
        let (o, s) = run(&d, &t, &cfg);
        println!(
            "{:>16} + trimming: slowest {:.1} us, {} trims, {} retransmitted",
            rec.name(),
            max_fct_us(&o),
            s.data_trimmed,
            s.retransmitted_packets
        );
        assert_eq!(s.data_dropped, 0, "{rec:?}");
        assert!(s.data_trimmed > 0, "{rec:?}");
    }
}

#[test]
fn runs_are_deterministic() {
    let (t, d) = eight_to_one();
    for rec in ALL {
        let mut cfg = roce(rec, 128 << 10, 64 << 10);
        cfg.trimming = rec == LossRecovery::SelectiveRepeat;
        let a = run(&d, &t, &cfg);
        let b = run(&d, &t, &cfg);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{rec:?}");
    }
}

#[test]
fn bit_errors_on_one_link_selective_repeat_resends_only_what_was_corrupted() {
    // A bit error rate of 1e-6 on the receiver's switch port (Ber link
    // event at t = 0): each 4174-byte packet is lost with probability
    // 1 − (1 − 1e-6)^(8 × 4174) ≈ 3.3%. Selective repeat resends each lost
    // packet once (retransmissions = corrupted data packets, which the
    // seeded generator makes the same in every run); go-back-N resends the
    // window behind each.
    use fabricsim::backend::{LinkEvent, LinkEventKind};
    let t = topo(3);
    let d = incast(2, 1 << 20);
    let down = t.reverse(t.nic_of_node(t.gpus[0].nic).unwrap().uplink);
    let mut res = Vec::new();
    for rec in [LossRecovery::SelectiveRepeat, LossRecovery::GoBackN] {
        let mut cfg = roce(rec, 4 << 20, 64 << 10);
        cfg.link_events = vec![LinkEvent {
            at: SimTime::ZERO,
            link: down,
            kind: LinkEventKind::Ber(1e-6),
        }];
        let (o, s) = run(&d, &t, &cfg);
        println!(
            "{:>16}, BER 1e-6: slowest {:.1} us, corrupted {}, retransmitted {}",
            rec.name(),
            max_fct_us(&o),
            s.drops_corrupt,
            s.retransmitted_packets
        );
        assert!(s.drops_corrupt > 0 && s.drops_buffer == 0);
        res.push(s);
    }
    // measured: 11 corrupted, 11 resent (go-back-N: 17 and 191)
    assert_eq!(res[0].retransmitted_packets, res[0].drops_corrupt);
    assert!(res[0].retransmitted_packets < res[1].retransmitted_packets);
}

/// `examples/incast-roce-lossy.toml` with `lines` added under `[fabric]`.
fn scenario(lines: &str) -> Result<config::Scenario, String> {
    let path = format!(
        "{}/examples/incast-roce-lossy.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "[fabric]\n",
        &format!("[fabric]\n{lines}\n"),
        1,
    );
    config::parse(&path, &text).map_err(|e| e.to_string())
}

#[test]
fn the_keys_reach_the_packet_level_and_bad_values_are_located_errors() {
    let s = scenario("loss_recovery = \"selective-repeat\"\nrto_low = \"50us\"\ntrimming = true")
        .unwrap();
    let c = fabricsim::run::packet_config(&s, 1);
    assert_eq!(c.loss_recovery, LossRecovery::SelectiveRepeat);
    assert_eq!(c.rto_low, SimTime::from_us(50));
    assert!(c.trimming);
    let ignored = fabricsim::run::ignored_settings(&s, Fidelity::Packet).unwrap();
    assert!(
        !ignored.iter().any(|i| i.key.starts_with("fabric.")),
        "{ignored:?}"
    );
    // rto_low without selective repeat, trimming on a lossless fabric: listed
    let s = scenario("rto_low = \"50us\"\ntrimming = true\npfc_probe = 0").err();
    assert!(s.is_some(), "an unknown key is refused");
    let text = "rto_low = \"50us\"\ntrimming = true";
    let s = scenario(text).unwrap();
    let ignored = fabricsim::run::ignored_settings(&s, Fidelity::Packet).unwrap();
    assert!(
        ignored.iter().any(|i| i.key == "fabric.rto_low"),
        "{ignored:?}"
    );
    assert!(
        !ignored.iter().any(|i| i.key == "fabric.trimming"),
        "{ignored:?}"
    );
    let path = format!(
        "{}/examples/incast-roce-pfc-only.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let pfc = std::fs::read_to_string(&path).unwrap().replacen(
        "[fabric]\n",
        "[fabric]\ntrimming = true\n",
        1,
    );
    let s = config::parse(&path, &pfc).unwrap();
    let ignored = fabricsim::run::ignored_settings(&s, Fidelity::Packet).unwrap();
    assert!(
        ignored.iter().any(|i| i.key == "fabric.trimming"),
        "{ignored:?}"
    );
    // bad values: located, with what was found and what is expected
    let e = scenario("loss_recovery = \"go-back-1\"").unwrap_err();
    assert!(
        e.contains("fabric.loss_recovery")
            && e.contains("go-back-1")
            && e.contains("selective-repeat"),
        "{e}"
    );
    assert!(e.contains("incast-roce-lossy.toml:"), "{e}");
    let e = scenario("rto_low = \"0us\"").unwrap_err();
    assert!(e.contains("fabric.rto_low"), "{e}");
    // a timeout far below any round trip would crawl: refused with its floor
    let e = scenario("rto_low = \"1ps\"").unwrap_err();
    assert!(
        e.contains("fabric.rto_low") && e.contains("at least 1us"),
        "{e}"
    );
    scenario("loss_recovery = \"selective-repeat\"\nrto_low = \"1us\"").unwrap();
    let e = scenario("trimming = 3").unwrap_err();
    assert!(e.contains("trimming"), "{e}");
    // the spellings are accepted too
    for (v, want) in [
        ("go_back_n", LossRecovery::GoBackN),
        ("selective", LossRecovery::SelectiveRepeat),
        ("go_back_0", LossRecovery::GoBack0),
    ] {
        let s = scenario(&format!("loss_recovery = \"{v}\"")).unwrap();
        assert_eq!(fabricsim::run::packet_config(&s, 1).loss_recovery, want);
    }
}

/// What trimming cut reaches the result: `fabric.packets_trimmed` and
/// `bytes_trimmed` in JSON and on the table's fabric line, equal to the
/// engine's own counts, and `null` (not a zero that reads as measured) on a
/// run that does not trim or below the packet level.
#[test]
fn the_result_reports_what_trimming_cut_and_null_where_nothing_trims() {
    let opts = |f| fabricsim::run::RunOptions {
        fidelity: Some(f),
        ..Default::default()
    };
    let s = scenario("loss_recovery = \"selective-repeat\"\ntrimming = true").unwrap();
    let r = fabricsim::run::run(&s, &opts(Fidelity::Packet)).unwrap();
    let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let packets = j["fabric"]["packets_trimmed"].as_u64().expect("a count");
    let bytes = j["fabric"]["bytes_trimmed"].as_u64().expect("a count");
    // the 16:1 incast overflows the shallow lossy buffer: full 4,096 B
    // payloads are cut (every data packet of a 4 MiB message is full)
    assert!(packets > 0, "{}", j["fabric"]);
    assert_eq!(bytes, packets * 4096);
    // a trimmed packet is not a drop, and every payload byte still arrives
    assert_eq!(j["fabric"]["bytes_sent"], j["fabric"]["bytes_delivered"]);
    let line = fabricsim::report::table::fabric_line(&r.fabric);
    assert!(line.contains(&format!("{packets} trimmed")), "{line}");
    // no trimming, or no packets: nothing trims, the keys are null
    for (extra, f) in [
        ("loss_recovery = \"selective-repeat\"", Fidelity::Packet),
        (
            "loss_recovery = \"selective-repeat\"\ntrimming = true",
            Fidelity::Flow,
        ),
    ] {
        let r = fabricsim::run::run(&scenario(extra).unwrap(), &opts(f)).unwrap();
        let j: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert!(j["fabric"]["packets_trimmed"].is_null(), "{extra} {f:?}");
        assert!(j["fabric"]["bytes_trimmed"].is_null(), "{extra} {f:?}");
        assert!(!fabricsim::report::table::fabric_line(&r.fabric).contains("trimmed"));
    }
}

/// A 16-host non-blocking leaf-spine (radix 8: 4 leaves, 4 spines) at 100
/// Gb/s, a permutation of 4 MiB per host (host s → s + 4, every flow across
/// the spines), packets sprayed over the spines, and, when `lossy`, a bit
/// error rate on every network link such that a 4,174-byte packet crossing
/// the path's four links is lost with probability 1%. Returns the mean over
/// flows of goodput (payload over FCT) as a fraction of the line rate, and
/// the statistics.
fn sprayed_permutation(rec: LossRecovery, lossy: bool) -> (f64, PacketStats) {
    use fabricsim::backend::packet::Routing;
    use fabricsim::backend::{LinkEvent, LinkEventKind};
    use fabricsim::topology::{LinkId, LinkKind};
    let t = topo_of(
        16,
        &TopologySpec::LeafSpine {
            radix: 8,
            oversubscription: 1.0,
        },
    );
    let mut d = Dag::new();
    d.begin_op("permutation");
    for s in 0..16u32 {
        d.transfer(GpuId(s), GpuId((s + 4) % 16), 4 << 20, &[]);
    }
    // 1 − (1 − p_link)^4 = 1%, p_link = 1 − (1 − ber)^(8 × 4174)
    let per_link = 1.0 - 0.99f64.powf(0.25);
    let ber = 1.0 - (1.0 - per_link).powf(1.0 / (8.0 * 4174.0));
    let mut cfg = roce(rec, 512 << 10, 0);
    cfg.routing = Routing::Spray;
    if lossy {
        cfg.link_events = t
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.kind == LinkKind::Network)
            .map(|(i, _)| LinkEvent {
                at: SimTime::ZERO,
                link: LinkId(i as u32),
                kind: LinkEventKind::Ber(ber),
            })
            .collect();
    }
    let (o, s) = run(&d, &t, &cfg);
    let ideal_us = (4u64 << 20) as f64 * 8.0 / 100e9 * 1e6;
    let goodput = o
        .transfer_fct
        .iter()
        .map(|x| ideal_us / x.as_us())
        .sum::<f64>()
        / o.transfer_fct.len() as f64;
    println!(
        "{:>16}, spray, {}: mean goodput {goodput:.3} of the line, slowest {:.1} us, lost {}, retransmitted {}, duplicates {}, timeouts {}, selective NACKs {}",
        rec.name(),
        if lossy { "1% loss" } else { "no loss" },
        max_fct_us(&o),
        s.drops_corrupt,
        s.retransmitted_packets,
        s.data_duplicate,
        s.timeouts,
        s.nacks_sent
    );
    (goodput, s)
}

#[test]
fn selective_repeat_recovers_sprayed_losses_by_time_where_go_back_0_collapses() {
    // Issue 13: on a lossy spray fabric with 1% drops, goodput ≥ 0.8 with
    // selective repeat where go-back-0 collapses. Under spraying a gap is
    // not a loss, so selective repeat judges loss by time (RACK, RFC 8985
    // §6.2) and its window counts the packets in flight, not the span from
    // the cumulative ACK (see `recovery/selective.rs`). Before, it waited
    // for the retransmission timer, which then resent the whole window the
    // receiver mostly held: 0.149 of the line rate, 96 timeouts, 5,748
    // duplicates; with RACK alone 0.748 (each loss stalled the window for
    // the RACK wait plus a round trip). Measured now, default 512 KiB
    // window: selective repeat 0.838 (1 timeout, 33 duplicates), go-back-0
    // 0.125 (67 timeouts); without loss 0.915 (no retransmission) and
    // 0.922. Expected: the 0.8; no spurious retransmission without
    // loss; at most a few timeouts; go-back-0 under half its loss-free
    // goodput; every run conserves packets (`run`).
    let (sr_clean, sc) = sprayed_permutation(LossRecovery::SelectiveRepeat, false);
    let (sr, s) = sprayed_permutation(LossRecovery::SelectiveRepeat, true);
    let (g0_clean, _) = sprayed_permutation(LossRecovery::GoBack0, false);
    let (g0, s0) = sprayed_permutation(LossRecovery::GoBack0, true);
    assert!(s.drops_corrupt > 100, "the fabric must lose packets: {s:?}");
    assert_eq!(sc.retransmitted_packets, 0, "spurious resends: {sc:?}");
    assert!(sr >= 0.8, "selective repeat {sr:.3} of the line");
    assert!(sr < sr_clean, "{sr:.3} vs {sr_clean:.3}");
    assert!(s.timeouts <= 3, "{s:?}");
    assert!(g0 < 0.5 * g0_clean, "go-back-0 {g0:.3} vs {g0_clean:.3}");
    assert!(s0.timeouts > 10 * s.timeouts.max(1), "{s0:?}");
}
