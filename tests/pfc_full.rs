//! PFC in full (issue 14): PAUSE/RESUME frames on the reverse wire, frame
//! counters, dynamic XOFF over a shared buffer, the PFC watchdog, deadlock
//! cycles found while the run goes on, and RED's mark probability at Kmax.
//! Small fabrics, each test well under a few seconds in a debug build.

mod common;
use common::example;

use fabricsim::backend::packet::flow_control::WatchdogLane;
use fabricsim::backend::packet::{
    self, Ecn, FlowControl, PacketConfig, PacketStats, PfcThreshold, PFC_FRAME_WIRE_BYTES,
};
use fabricsim::backend::RunOutput;
use fabricsim::config::{self, Fidelity};
use fabricsim::dag::{Dag, Dep};
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, Topology, TopologySpec};
use fabricsim::units::{Rate, SimTime};

/// 400 GbE hosts of one GPU on one switch: 100 ns cables, 500 ns pipeline.
fn single_switch(hosts: u32) -> Topology {
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
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(500),
        ..Default::default()
    };
    build(&c, &f, &TopologySpec::SingleSwitch).unwrap()
}

/// RoCEv2 data packet on the wire: 4096 B payload + 78 B of framing.
const PKT: u64 = 4096 + 78;

/// `pfc_headroom_needed` of those links: (2 × 100 + 500) ns × 50 B/ns +
/// 3 × 4174 B + 84 B.
const HEADROOM: u64 = 35_000 + 3 * PKT + 84;

/// PFC only (no ECN, no congestion control), XOFF 128 KiB per port and lane.
fn pfc() -> PacketConfig {
    PacketConfig {
        header_bytes: 78,
        ack_bytes: 82,
        port_buffer_bytes: 256 << 10,
        flow_control: FlowControl::Pfc {
            xoff: 128 << 10,
            xon: (128 << 10) - 2 * PKT,
            headroom: HEADROOM,
        },
        rto: SimTime::from_us(100),
        ..PacketConfig::default()
    }
}

fn incast(senders: u32, bytes: u64) -> Dag {
    let mut d = Dag::new();
    d.begin_op("incast");
    for s in 1..=senders {
        d.transfer(GpuId(s), GpuId(0), bytes, &[]);
    }
    d
}

fn checked(dag: &Dag, topo: &Topology, cfg: &PacketConfig) -> (RunOutput, PacketStats) {
    let (out, st) = packet::run_detailed(dag, topo, cfg).expect("run completes");
    st.check_conservation().unwrap();
    assert_eq!(out.fabric.bytes_delivered, dag.transfer_bytes());
    (out, st)
}

fn link_bytes(out: &RunOutput, link: u32) -> u64 {
    out.links
        .iter()
        .find(|l| l.link == link)
        .map_or(0, |l| l.bytes)
}

#[test]
fn a_16_to_1_incast_spends_reverse_bandwidth_equal_to_its_pause_frames() {
    // Expected: every PAUSE or RESUME is an 84-byte frame (64 B + 8 B
    // preamble + 12 B IFG, IEEE 802.3 §4.4.2) on the link from the switch back
    // to the paused sender, which otherwise carries only that sender's ACKs
    // (82 B each). So those 16 links' bytes = ACKs × 82 + frames × 84 exactly.
    // Without quanta each pause ends in one RESUME (PAUSE count = RESUME
    // count in a drained run), every PAUSE sent is received, and each of the
    // 16 senders is paused at least once (16 × 256 KiB into one 400G port
    // with XOFF 128 KiB).
    let topo = single_switch(17);
    let cfg = pfc();
    let (out, st) = checked(&incast(16, 256 << 10), &topo, &cfg);
    let reverse: u64 = (1..=16)
        .map(|i| link_bytes(&out, topo.nics[i].downlink.0))
        .sum();
    let frames = st.pfc_pause_frames + st.pfc_resume_frames;
    eprintln!(
        "PAUSE {} RESUME {} frame bytes {} ACKs {} reverse bytes {} makespan {}",
        st.pfc_pause_frames,
        st.pfc_resume_frames,
        st.pfc_frame_bytes,
        st.ctrl_sent,
        reverse,
        out.makespan
    );
    assert_eq!(st.pfc_frame_bytes, frames * PFC_FRAME_WIRE_BYTES);
    assert_eq!(reverse, st.ctrl_sent * 82 + st.pfc_frame_bytes);
    assert_eq!(st.pfc_pause_frames, st.pfc_resume_frames);
    assert_eq!(st.pfc_pause_frames_received, st.pfc_pause_frames);
    assert!(st.pfc_pause_frames >= 16, "{}", st.pfc_pause_frames);
    assert_eq!(out.fabric.pfc_pause_frames, st.pfc_pause_frames);
    assert_eq!(st.pfc_headroom_overflows, 0);
}

#[test]
fn pause_refreshes_count_only_frames_that_went_out() {
    // Expected: with pause quanta a receiver refreshes its PAUSE every half
    // quantum time while it still wants the sender paused, one refresh chain
    // per pause (802.1Qbb's receiver restarts the quanta before they expire):
    // 256 quanta × 512 bit at 400 Gb/s = 327.68 ns, a refresh every
    // 163.84 ns; 65535 quanta, one every 41.9 µs. So in each pause episode of
    // a link (from its first PAUSE to the RESUME that ends it) the PAUSE
    // frames are requested exactly at T0, T0 + h, T0 + 2h, … while before the
    // RESUME's request: 1 + ⌈(T_resume − T0)/h⌉ − 1 frames (± 1 for a refresh
    // and a RESUME at the same instant). Stale timers of earlier pauses used
    // to send too (48 episodes gave 64 PAUSEs at 65535 quanta).
    let topo = single_switch(17);
    for (quanta, h) in [(256u32, 163_840u64), (65535, 41_942_400)] {
        let cfg = PacketConfig {
            pfc_pause_quanta: quanta,
            pfc_trace: true,
            ..pfc()
        };
        let (_, st) = checked(&incast(16, 256 << 10), &topo, &cfg);
        eprintln!(
            "quanta {quanta}: PAUSE {} RESUME {} paused {} ps",
            st.pfc_pause_frames, st.pfc_resume_frames, st.pfc_paused_ps
        );
        assert!(st.pfc_resume_frames >= 16);
        assert_eq!(st.pfc_pause_frames_received, st.pfc_pause_frames);
        let mut links: Vec<u32> = st.pfc_frame_trace.iter().map(|f| f.link).collect();
        links.sort_unstable();
        links.dedup();
        let mut episodes = 0;
        for l in links {
            let mut t0 = None;
            let mut pauses = 0u64;
            for f in st.pfc_frame_trace.iter().filter(|f| f.link == l) {
                match (f.pause, t0) {
                    (true, None) => {
                        t0 = Some(f.requested_at_ps);
                        pauses = 1;
                    }
                    (true, Some(t)) => {
                        assert_eq!(f.requested_at_ps, t + pauses * h, "link {l}: {f:?}");
                        pauses += 1;
                    }
                    (false, Some(t)) => {
                        let expected = (f.requested_at_ps - t).div_ceil(h);
                        assert!(
                            pauses == expected || pauses == expected + 1,
                            "link {l}: {pauses} PAUSEs in an episode of {} ps",
                            f.requested_at_ps - t
                        );
                        episodes += 1;
                        t0 = None;
                    }
                    (false, None) => panic!("link {l}: RESUME without a PAUSE: {f:?}"),
                }
            }
            assert!(t0.is_none(), "link {l} still paused at the end");
        }
        assert_eq!(episodes, st.pfc_resume_frames);
    }
}

#[test]
fn a_pause_waits_for_the_frame_on_the_wire_but_not_for_queued_data() {
    // Hosts 1 and 2 send to 0 (host 1's uplink gets paused), hosts 3 and 4
    // send to 1 (the switch's link back to host 1 is busy and queued). A PFC
    // frame for host 1's uplink leaves on that link exactly when the frame in
    // serialization there ends (IEEE 802.3 MACs never preempt), ahead of every
    // queued data packet, and reaches host 1 84 B × 8 / 400 Gb/s = 1.68 ns
    // later plus the 100 ns cable.
    let topo = single_switch(5);
    let mut d = Dag::new();
    d.begin_op("cross");
    for (s, t) in [(1, 0), (2, 0), (3, 1), (4, 1)] {
        d.transfer(GpuId(s), GpuId(t), 2 << 20, &[]);
    }
    let cfg = PacketConfig {
        pfc_trace: true,
        ..pfc()
    };
    let (_, st) = checked(&d, &topo, &cfg);
    let up1 = topo.nics[1].uplink.0;
    let frames: Vec<_> = st
        .pfc_frame_trace
        .iter()
        .filter(|f| f.link == up1)
        .collect();
    assert!(!frames.is_empty());
    let frame_ps = 1_680;
    let data_ps = PKT * 8 * 1000 / 400;
    let mut waited_behind_queue = 0;
    for f in &frames {
        assert_eq!(
            f.tx_start_ps,
            f.wire_free_at_ps.max(f.requested_at_ps),
            "{f:?}"
        );
        assert_eq!(f.arrive_ps, f.tx_start_ps + frame_ps + 100_000, "{f:?}");
        // never more than the one frame on the wire: queued data is overtaken
        assert!(f.tx_start_ps - f.requested_at_ps <= data_ps, "{f:?}");
        if f.data_queued_bytes >= 2 * PKT && f.wire_free_at_ps > f.requested_at_ps {
            waited_behind_queue += 1;
        }
    }
    eprintln!(
        "{} frames on link {up1}'s reverse, {waited_behind_queue} requested while a packet was on the wire and 2+ queued",
        frames.len()
    );
    assert!(waited_behind_queue > 0);
    assert_eq!(
        st.pfc_frame_trace.len() as u64,
        st.pfc_pause_frames + st.pfc_resume_frames
    );
}

#[test]
fn a_dynamic_xoff_lets_a_lone_burst_use_more_buffer_and_pauses_sooner_when_many_are_busy() {
    // Shared buffer B = 1 MiB. Static split: XOFF 64 KiB per ingress lane
    // (1 MiB over 16 ports), so a lane holds at most XOFF + headroom. Dynamic,
    // α = 1 (Choudhury & Hahne 1998; HPCC's switch-mmu.cc): N equally busy
    // lanes pause at x = α(B − N·x), x = B/(1 + N): B/3 = 341 KiB each for a
    // 2:1 burst, B/9 = 114 KiB each for 8:1, plus what arrives in headroom.
    let topo = single_switch(9);
    let b: u64 = 1 << 20;
    let stat = PacketConfig {
        shared_buffer_bytes: b,
        flow_control: FlowControl::Pfc {
            xoff: 64 << 10,
            xon: (64 << 10) - 2 * PKT,
            headroom: HEADROOM,
        },
        ..pfc()
    };
    let dynamic = PacketConfig {
        pfc_threshold: PfcThreshold::Dynamic { alpha: 1.0 },
        ..stat.clone()
    };
    let (_, s2) = checked(&incast(2, 1 << 20), &topo, &stat);
    let (_, d2) = checked(&incast(2, 1 << 20), &topo, &dynamic);
    // 160 KiB each: one pause per lane, all at once. The closed form is
    // for equally busy lanes, as the eight are at their first pause (the
    // lockstep start); they resume one at a time (each RESUME a packet
    // time after the previous, as the shared egress drains them), and the
    // first back finds the buffer the others drained: with 512 KiB each the
    // run's most held on a lane was 39 packets (162,786 B) when the same
    // lane always won the ties of an instant, 40 (166,960 B) with issue
    // 16's order, which rotates the winner, and 42 with a random order,
    // against B/9 + headroom = 39.3 packets; at the first pause 35 under
    // every order.
    let (_, d8) = checked(&incast(8, 160 << 10), &topo, &dynamic);
    eprintln!(
        "max bytes one ingress lane held: static 2:1 {}, dynamic 2:1 {}, dynamic 8:1 {}",
        s2.pfc_max_ingress_bytes, d2.pfc_max_ingress_bytes, d8.pfc_max_ingress_bytes
    );
    assert!(s2.pfc_max_ingress_bytes <= (64 << 10) + HEADROOM);
    assert!(s2.pfc_pause_frames > 0 && d2.pfc_pause_frames > 0);
    assert_eq!(d8.pfc_pause_frames, 8);
    // the lone burst goes past the static split, to about B/3
    assert!(d2.pfc_max_ingress_bytes > 2 * ((64 << 10) + HEADROOM));
    assert!(d2.pfc_max_ingress_bytes >= b / 3 - 2 * PKT);
    assert!(d2.pfc_max_ingress_bytes <= b / 3 + HEADROOM);
    // eight busy lanes pause at about B/9
    assert!(d8.pfc_max_ingress_bytes <= b / 9 + HEADROOM);
    assert!(d8.pfc_max_ingress_bytes < d2.pfc_max_ingress_bytes / 2);
    for s in [&s2, &d2, &d8] {
        assert_eq!(s.pfc_headroom_overflows, 0);
    }
}

fn packet_run(text: &str) -> fabricsim::report::Report {
    let s = config::parse("pfc_full.toml", text).unwrap_or_else(|e| panic!("{e}"));
    run(
        &s,
        &RunOptions {
            fidelity: Some(Fidelity::Packet),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_watchdog_breaks_the_shipped_dragonfly_deadlock_and_reports_its_drops() {
    // Expected: without a watchdog the all-to-all deadlocks (the example's
    // point); with a 100 µs PFC watchdog the stuck lanes drop what they hold
    // (SONiC/Arista "drop" action), the transport resends it, and every byte
    // is delivered. Drops are all the watchdog's, counted packet for packet.
    let base = example("pfc-deadlock-dragonfly.toml");
    assert!(packet_run(&base).deadlock.is_some());
    let text = base.replace("cc = \"none\"", "cc = \"none\"\npfc_watchdog = \"100us\"");
    let r = packet_run(&text);
    assert!(r.deadlock.is_none(), "{:?}", r.deadlock);
    let p = r.pfc.as_ref().expect("PFC findings reported");
    eprintln!(
        "watchdog: {} triggers on {} lanes, {} packets / {} wire bytes dropped; {} retransmitted",
        p.watchdog_triggers,
        p.watchdog_lanes.len(),
        p.watchdog_packets_dropped,
        p.watchdog_wire_bytes_dropped,
        r.fabric.retransmitted_packets.unwrap_or(0)
    );
    assert!(p.watchdog_triggers > 0 && p.watchdog_packets_dropped > 0);
    assert_eq!(r.fabric.drops, Some(p.watchdog_packets_dropped));
    assert!(r.fabric.bytes_dropped.unwrap_or(0) > 0);
    assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent);
    assert!(r.fabric.retransmitted_packets.unwrap_or(0) >= p.watchdog_packets_dropped);
    let lanes: u64 = p.watchdog_lanes.iter().map(|w| w.packets_dropped).sum();
    assert_eq!(lanes, p.watchdog_packets_dropped);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"watchdog_triggers\""));
    // `compare` and sweep CSVs carry the findings too (not only the JSON)
    assert_eq!(r.pfc_watchdog_triggers(), Some(p.watchdog_triggers));
    let fires = p.watchdog_triggers.to_string();
    let t = fabricsim::report::compare::table(&[r.clone(), r.clone()], &["a".into(), "b".into()]);
    let row = t
        .lines()
        .find(|l| l.starts_with("# PFC watchdog fires "))
        .unwrap_or_else(|| panic!("no watchdog row in\n{t}"));
    assert!(row.contains(&fires), "{row}");
    // … with what the watchdog dropped, and the headroom drops (none here)
    let row_of = |name: &str| {
        t.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{t}"))
            .to_string()
    };
    let drops = row_of("# PFC watchdog drops ");
    assert!(
        drops.contains(&p.watchdog_packets_dropped.to_string()),
        "{drops}"
    );
    let hdrm = row_of("# PFC headroom drops ");
    assert_eq!(hdrm.split_whitespace().nth(4), Some("0"), "{hdrm}");
    // `--out DIR`'s pfc_watchdog.csv: a row per lane, their drops add up
    let csv = fabricsim::report::csv::pfc_watchdog(&r);
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), p.watchdog_lanes.len(), "{csv}");
    let summed: u64 = rows.iter().map(|r| r[8].parse::<u64>().unwrap()).sum();
    assert_eq!(summed, p.watchdog_packets_dropped, "{csv}");
}

#[test]
fn a_headroom_pool_too_small_for_the_fan_in_drops_and_the_bytes_still_add_up() {
    // 16 senders × 256 KiB into one 400G port, XOFF 128 KiB per ingress lane
    // and a shared headroom pool of one link's `pfc_headroom_needed` (the
    // least the configuration accepts): after XOFF each paused lane still
    // receives up to that much before its PAUSE takes effect (the headroom
    // rule: (2 × latency + pipeline) × rate + 3 packets + 84 B), so 16 lanes
    // crossing XOFF together need up to 16 × it. A switch's MMU drops what
    // its headroom cannot take; so must the model: drops of their own cause,
    // every data packet accepted, counted dropped or a duplicate
    // (conservation), and the transport resends what was dropped. With a
    // pool of 16 × the need, nothing may be dropped (the same rule).
    let topo = single_switch(17);
    let dag = incast(16, 256 << 10);
    for (pool, drops_expected) in [(HEADROOM, true), (16 * HEADROOM, false)] {
        let cfg = PacketConfig {
            pfc_headroom_pool: pool,
            ..pfc()
        };
        let (out, st) = checked(&dag, &topo, &cfg);
        let p = out.fabric.pfc.clone();
        eprintln!(
            "headroom pool {pool} B: {} headroom drops ({} retransmitted), {} PAUSE frames, most held on a lane {} B, makespan {:.2} us",
            st.drops_headroom,
            st.retransmitted_packets,
            st.pfc_pause_frames,
            st.pfc_max_ingress_bytes,
            out.makespan.0 as f64 / 1e6
        );
        assert_eq!(st.pfc_headroom_overflows, st.drops_headroom);
        assert_eq!(st.drops_total(), st.drops_headroom, "no other cause");
        assert_eq!(p.headroom_packets_dropped, st.drops_headroom);
        let per_link: u64 = out.links.iter().map(|l| l.drops).sum();
        assert_eq!(per_link, st.drops_headroom);
        if drops_expected {
            assert!(st.drops_headroom > 0);
            assert!(st.retransmitted_packets >= st.drops_headroom);
            // a lane never holds more than XOFF + what the pool gave it
            assert!(st.pfc_max_ingress_bytes <= (128 << 10) + pool);
        } else {
            assert_eq!(st.drops_headroom, 0);
        }
    }
}

/// The watchdog lanes of the shipped dragonfly deadlock under a 100 µs
/// detection period and recovery period `restore` (`None`: the default).
fn watchdog_lanes(restore: Option<&str>) -> (fabricsim::report::Report, Vec<WatchdogLane>) {
    let mut keys = "cc = \"none\"\npfc_watchdog = \"100us\"".to_string();
    if let Some(r) = restore {
        keys += &format!("\npfc_watchdog_restore = \"{r}\"");
    }
    let text = example("pfc-deadlock-dragonfly.toml").replace("cc = \"none\"", &keys);
    let r = packet_run(&text);
    assert!(r.deadlock.is_none(), "{:?}", r.deadlock);
    assert_eq!(r.fabric.bytes_delivered, r.fabric.bytes_sent);
    let lanes = r.pfc.as_ref().expect("PFC findings").watchdog_lanes.clone();
    (r, lanes)
}

#[test]
fn the_watchdog_recovery_period_is_its_own_key() {
    // SONiC's PFC watchdog (sonic-utilities pfcwd/main.py) has a detection
    // time and a separate restoration time (`pfcwd start … --restoration-time`,
    // `start_default` 200 ms / 200 ms); Arista's has a timeout and a recovery
    // time. A lane the watchdog fired on drops (and ignores PAUSE) for the
    // recovery period, then honours PAUSE again. So every drop of a lane
    // falls within the recovery period after its last trigger, and a lane
    // fires again no sooner than the recovery period plus a whole detection
    // period paused after the trigger before: last − first ≥ (triggers − 1)
    // × (restore + detect). On the shipped dragonfly deadlock the resends
    // that reach a lane still in recovery are dropped too: a 1 ms recovery
    // drops some later than the default's 100 µs window would, and more per
    // trigger. Not more in all: a short recovery can let the cycle form
    // again and fire more lanes, more often (measured, main until issue 16:
    // 18 triggers on 18 lanes both ways, 6,712 vs 7,977 drops; with issue
    // 16's event order 31 triggers on 29 lanes, 10,056 drops, vs 20 on 20,
    // 9,097: 324 vs 455 per trigger, 373 vs 443 before), so the total is
    // the luck of which lanes the run deadlocks again, the per-trigger
    // figure the recovery period's own effect.
    let detect = 100_000_000u64; // 100 µs in ps
    let mut latest = Vec::new();
    let mut dropped = Vec::new();
    for (restore, restore_ps) in [(None, detect), (Some("1ms"), 1_000_000_000u64)] {
        let (r, lanes) = watchdog_lanes(restore);
        let p = r.pfc.as_ref().unwrap();
        let late = lanes
            .iter()
            .map(|w| w.last_drop_at_ps.saturating_sub(w.last_at_ps))
            .max()
            .unwrap_or(0);
        eprintln!(
            "restore {restore:?}: {} triggers on {} lanes, {} packets dropped, latest drop {:.1} us after its trigger, makespan {:.1} us",
            p.watchdog_triggers,
            lanes.len(),
            p.watchdog_packets_dropped,
            late as f64 / 1e6,
            r.makespan_us
        );
        for w in &lanes {
            assert!(w.last_at_ps >= w.first_at_ps, "{restore:?}: {w:?}");
            // a trigger on a paused lane with nothing queued drops nothing
            // (SONiC fires on those too), so a lane's last drop may belong
            // to an earlier trigger; a drop after the last trigger falls
            // within its recovery period
            assert!(w.packets_dropped > 0 || w.last_drop_at_ps == 0, "{w:?}");
            if w.last_drop_at_ps >= w.last_at_ps {
                assert!(
                    w.last_drop_at_ps - w.last_at_ps <= restore_ps,
                    "{restore:?}: {w:?}"
                );
            }
            assert!(
                w.last_at_ps - w.first_at_ps >= (w.triggers - 1) * (restore_ps + detect),
                "{restore:?}: {w:?}"
            );
        }
        latest.push(late);
        dropped.push(p.watchdog_packets_dropped as f64 / p.watchdog_triggers as f64);
    }
    // the longer recovery period dropped past the default's window, and more
    // per trigger
    assert!(latest[1] > detect, "{latest:?}");
    assert!(dropped[1] > dropped[0], "drops per trigger {dropped:?}");
    // a zero recovery period is refused at its line
    let text = example("pfc-deadlock-dragonfly.toml").replace(
        "cc = \"none\"",
        "cc = \"none\"\npfc_watchdog = \"100us\"\npfc_watchdog_restore = 0",
    );
    let e = config::parse("pfc_full.toml", &text).unwrap_err();
    let d = e
        .diagnostics
        .iter()
        .find(|d| d.field == "fabric.pfc_watchdog_restore")
        .unwrap_or_else(|| panic!("{e}"));
    assert!(d.expected.contains("above zero"), "{d}");
}

#[test]
fn a_deadlock_confined_to_three_groups_is_reported_with_its_cycle_while_other_flows_finish() {
    // The example's dragonfly (5 groups of 4 routers, 2 hosts per router):
    // an all-to-all among groups 0–2 (hosts 0–23) deadlocks under PFC on one
    // lane (Hu et al., HotNets 2016), while four 4 MiB flows inside group 4
    // (hosts 32–39) touch none of its links. The cycle is found once a lane
    // has been paused for deadlock_timeout (20 µs) and the run goes on: the
    // group-4 flows finish (none is in flight when the fabric finally stops),
    // and transmissions continue after the finding.
    let base = example("pfc-deadlock-dragonfly.toml");
    let head = base
        .split("[workload]")
        .next()
        .unwrap()
        .replace("deadlock_timeout = \"500us\"", "");
    let mut text = format!("{head}[workload]\nkind = \"flows\"\n");
    for s in 0..24 {
        for d in 0..24 {
            if s / 8 != d / 8 {
                text += &format!(
                    "[[workload.flows]]\nid = \"x{s}_{d}\"\nsrc = {s}\ndst = {d}\nbytes = \"128KiB\"\n"
                );
            }
        }
    }
    for (i, (s, d)) in [(32, 34), (35, 37), (36, 38), (39, 33)].iter().enumerate() {
        text +=
            &format!("[[workload.flows]]\nid = \"o{i}\"\nsrc = {s}\ndst = {d}\nbytes = \"4MiB\"\n");
    }
    text += "[simulation]\nfidelity = \"packet\"\ndeadlock_timeout = \"20us\"\n";
    let r = packet_run(&text);
    let stop = r
        .deadlock
        .as_ref()
        .expect("the deadlocked flows never finish");
    let p = r.pfc.as_ref().expect("a cycle reported");
    let c = &p.deadlock_cycles[0];
    eprintln!(
        "cycle found at {} ps: {:?}; fabric stopped at {} us, last transmission {} us",
        c.detected_at_ps, c.cycle, stop.detected_at_us, stop.stalled_since_us
    );
    // a closed cycle of a few links, each entering the node the next leaves
    assert!(c.cycle.len() >= 2 && c.cycle.len() <= 12, "{:?}", c.cycle);
    for (i, h) in c.cycle.iter().enumerate() {
        assert_eq!(h.2, c.cycle[(i + 1) % c.cycle.len()].1, "{:?}", c.cycle);
    }
    // found while traffic still moved, and the group-4 flows all finished
    assert!((c.detected_at_ps as f64) / 1e6 < stop.stalled_since_us);
    assert!(!stop.ops_in_flight.is_empty());
    assert!(
        stop.ops_in_flight.iter().all(|o| o.starts_with('x')),
        "{:?}",
        stop.ops_in_flight
    );
    // `--out DIR`'s pfc_cycles.csv: one row per link of each cycle, in order
    let csv = fabricsim::report::csv::pfc_cycles(&r);
    let links: usize = p.deadlock_cycles.iter().map(|c| c.cycle.len()).sum();
    assert_eq!(csv.lines().count(), 1 + links, "{csv}");
    let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(first[0], "0");
    assert_eq!(first[4], c.cycle[0].0.to_string(), "{csv}");
}

#[test]
fn red_marks_with_pmax_at_exactly_kmax() {
    // Three hosts each send one 4096 B packet to a fourth at once, 2000
    // rounds. Of the three, the second leaves the switch with exactly one
    // packet (4174 B) behind it. With Kmin = 4173 B, Kmax = 4174 B, Pmax = 0.2
    // it is marked with probability Pmax (the others see an empty queue): a
    // Binomial(2000, 0.2) count, mean 400, σ = √(2000 · 0.2 · 0.8) = 17.9;
    // ±4σ = ±72 fails by chance with probability 6e-5 (and the seed is fixed).
    // Marking with 1 at Kmax would give 2000.
    let topo = single_switch(4);
    let mut d = Dag::new();
    d.begin_op("rounds");
    let mut prev: Vec<Dep> = Vec::new();
    for _ in 0..2000 {
        let round: Vec<Dep> = (1..=3)
            .map(|s| Dep::Done(d.transfer(GpuId(s), GpuId(0), 4096, &prev)))
            .collect();
        prev = round;
    }
    let cfg = PacketConfig {
        ecn: Some(Ecn {
            kmin: PKT - 1,
            kmax: PKT,
            pmax: 0.2,
        }),
        ..pfc()
    };
    let (out, _) = checked(&d, &topo, &cfg);
    let marks = out.fabric.ecn_marks as f64;
    eprintln!("{marks} marks in 2000 rounds (expected 400 ± 72)");
    assert!((marks - 400.0).abs() <= 72.0, "{marks}");
}

#[test]
fn bad_pfc_settings_are_located_errors() {
    // Each new key's bad value is refused before the run, naming the field,
    // its line, what was found and what would fit.
    let base = example("incast-roce-pfc-only.toml");
    for (extra, field, expected) in [
        (
            "pfc_threshold = \"fast\"",
            "fabric.pfc_threshold",
            "dynamic",
        ),
        ("pfc_alpha = -1.0", "fabric.pfc_alpha", "positive"),
        ("pfc_watchdog = 5", "fabric.pfc_watchdog", ""),
        (
            "pfc_threshold = \"dynamic\"",
            "fabric.pfc_threshold",
            "shared_buffer",
        ),
        (
            "pfc_headroom_pool = \"8KiB\"",
            "fabric.pfc_headroom_pool",
            "at least",
        ),
    ] {
        let text = base.replace("pfc = true", &format!("pfc = true\n{extra}"));
        let e = config::parse("bad.toml", &text).expect_err(extra);
        let d = e
            .diagnostics
            .iter()
            .find(|d| d.field == field)
            .unwrap_or_else(|| panic!("{extra}: {e}"));
        let line = text.lines().position(|l| l == extra).unwrap() + 1;
        assert_eq!(d.line, line, "{extra}: {d}");
        assert!(d.expected.contains(expected), "{extra}: {d}");
    }
}
