//! Traffic classes (`[[fabric.classes]]`, issue 14) at the packet level.
//!
//! * Two backlogged classes of DWRR weights 3 and 1 through one bottleneck
//!   share it 3/4 and 1/4: deficit round robin gives each backlogged queue
//!   its quantum per round, so over a busy period its share is its weight
//!   over the weights' sum, within one quantum plus one packet per round
//!   (Shreedhar & Varghese, "Efficient fair queuing using deficit round
//!   robin", ToN 4(3), 1996, Theorem 2). The issue asks for 75% / 25% ± 3%.
//! * Strict priority serves the higher class whenever it has a packet: the
//!   lower class gets nothing while the higher one is backlogged.
//! * A lossy class on a PFC fabric drops at its buffer limit while a
//!   lossless class beside it pauses its senders and drops nothing.
//! * CNPs in a strict high class overtake the data queued in the receiving
//!   host's NIC, so DCQCN reacts sooner than with CNPs in the data class.
//! * Classes that change nothing leave the run as without them (and are
//!   listed); bad class tables are located errors.
//!
//! Shares are measured from completion times: a flow of B bytes alone on
//! the idle path takes T_alone = B / C (+ the path's latency, a few µs of
//! hundreds); sharing at rate s·C it takes T = B / (s·C), so s = T_alone / T.
//! The other flow's share over the same period follows from its own
//! completion: it still has C·(T_b − T) bytes to send once the first is
//! done, so s_b = (T_alone_b − (T_b − T)) / T.

use fabricsim::backend::packet::{
    self, CongestionControl, DcqcnParams, Ecn, FlowControl, PacketConfig, PacketStats,
    TrafficClass, TrafficClasses,
};
use fabricsim::config::{self, Fidelity};
use fabricsim::dag::{Dag, Dep, TaskId};
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::{build, ClusterSpec, FabricLinkSpec, GpuId, Topology, TopologySpec};
use fabricsim::units::{Rate, SimTime};

fn single_switch(hosts: u32) -> Topology {
    hosts_of(hosts, 1)
}

/// `hosts` hosts of `gpus` GPUs sharing one 400G NIC each, on one switch.
fn hosts_of(hosts: u32, gpus: u32) -> Topology {
    let cluster = ClusterSpec {
        hosts,
        gpus_per_host: gpus,
        nics_per_host: 1,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(10),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(100),
    };
    let fabric = FabricLinkSpec {
        link_rate: Rate::gbps(400),
        link_latency: SimTime::from_ns(100),
        switch_latency: SimTime::from_ns(300),
        ..Default::default()
    };
    build(&cluster, &fabric, &TopologySpec::SingleSwitch).unwrap()
}

fn class(name: &str, priority: u8, weight: Option<u32>) -> TrafficClass {
    TrafficClass {
        name: name.into(),
        priority,
        weight,
        lossless: true,
        ecn: None,
    }
}

/// Completion time of each listed transfer (src, dst, bytes, class), ps.
fn fcts(
    cfg: &PacketConfig,
    topo: &Topology,
    flows: &[(u32, u32, u64, u8)],
) -> (Vec<u64>, PacketStats) {
    let timed: Vec<_> = flows.iter().map(|&(s, t, b, c)| (s, t, b, c, 0)).collect();
    fcts_from(cfg, topo, &timed)
}

/// Like [`fcts`], each transfer starting at its own time (µs).
fn fcts_from(
    cfg: &PacketConfig,
    topo: &Topology,
    flows: &[(u32, u32, u64, u8, u64)],
) -> (Vec<u64>, PacketStats) {
    let mut d = Dag::new();
    d.begin_op("flows");
    let ids: Vec<TaskId> = flows
        .iter()
        .map(|&(s, t, b, c, start)| {
            let deps = if start > 0 {
                vec![Dep::Done(d.compute(GpuId(s), SimTime::from_us(start), &[]))]
            } else {
                Vec::new()
            };
            let id = d.transfer(GpuId(s), GpuId(t), b, &deps);
            d.set_class(id, c);
            id
        })
        .collect();
    let (out, stats) = packet::run_detailed(&d, topo, cfg).unwrap();
    stats.check_conservation().unwrap();
    let done = ids
        .iter()
        .map(|t| out.task_done[t.0 as usize].0)
        .collect::<Vec<_>>();
    (done, stats)
}

/// The two shares (s_a, s_b) of flows a (8 MiB) and b (32 MiB) from hosts 1
/// and 2 into host 0, in classes 0 and 1 of `classes`, under `cfg`.
fn shares(cfg: &PacketConfig, classes: Vec<TrafficClass>) -> (f64, f64) {
    shares_between(cfg, classes, (1, 0), (2, 0))
}

/// Like [`shares`], flow a from `ea.0` to `ea.1` and b from `eb.0` to `eb.1`.
fn shares_between(
    cfg: &PacketConfig,
    classes: Vec<TrafficClass>,
    ea: (u32, u32),
    eb: (u32, u32),
) -> (f64, f64) {
    let topo = single_switch(3);
    let (a, b) = (8u64 << 20, 32u64 << 20);
    let cfg = PacketConfig {
        vls: 3,
        classes: Some(TrafficClasses {
            classes,
            data: 0,
            ack: None,
            cnp: None,
        }),
        ..cfg.clone()
    };
    let fa = (ea.0, ea.1, a, 0);
    let fb = (eb.0, eb.1, b, 1);
    let alone_a = fcts(&cfg, &topo, &[fa]).0[0] as f64;
    let alone_b = fcts(&cfg, &topo, &[fb]).0[0] as f64;
    let (t, _) = fcts(&cfg, &topo, &[fa, fb]);
    let (ta, tb) = (t[0] as f64, t[1] as f64);
    let sa = alone_a / ta;
    let sb = (alone_b - (tb - ta)) / ta;
    (sa, sb)
}

fn credit_cfg() -> PacketConfig {
    PacketConfig::default()
}

/// RoCE with PFC and no congestion control: nothing but the scheduler
/// decides the shares. PFC thresholds as the bench's RoCE case.
fn pfc_cfg() -> PacketConfig {
    PacketConfig {
        header_bytes: 78,
        ack_bytes: 82,
        cnp_bytes: 94,
        port_buffer_bytes: 256 << 10,
        flow_control: FlowControl::Pfc {
            xoff: 128 << 10,
            xon: 120 << 10,
            headroom: 64 << 10,
        },
        rto: SimTime::from_us(200),
        ..PacketConfig::default()
    }
}

#[test]
fn weights_3_to_1_share_a_bottleneck_75_25() {
    for (fc, cfg) in [("credits", credit_cfg()), ("PFC", pfc_cfg())] {
        let (sa, sb) = shares(
            &cfg,
            vec![class("gold", 0, Some(3)), class("bronze", 0, Some(1))],
        );
        println!("{fc}: weights 3:1 -> shares {sa:.4} / {sb:.4}");
        // Shreedhar & Varghese 1996: w_i / sum w for backlogged queues; issue 14: ± 3%
        assert!((sa - 0.75).abs() <= 0.03, "{fc}: gold share {sa:.4}");
        assert!((sb - 0.25).abs() <= 0.03, "{fc}: bronze share {sb:.4}");
        // equal weights: the fair half each (same bound)
        let (ea, eb) = shares(
            &cfg,
            vec![class("gold", 0, Some(1)), class("bronze", 0, Some(1))],
        );
        println!("{fc}: weights 1:1 -> shares {ea:.4} / {eb:.4}");
        assert!((ea - 0.5).abs() <= 0.03 && (eb - 0.5).abs() <= 0.03);
    }
}

#[test]
fn the_sending_nic_schedules_its_classes_too() {
    // both flows leave host 1 (to hosts 0 and 2): the bottleneck is host 1's
    // NIC uplink, fed over PCIe (512 Gb/s) into a buffer per lane; the same
    // DWRR bound applies there
    let (sa, sb) = shares_between(
        &credit_cfg(),
        vec![class("gold", 0, Some(3)), class("bronze", 0, Some(1))],
        (1, 0),
        (1, 2),
    );
    println!("one sending NIC, weights 3:1 -> shares {sa:.4} / {sb:.4}");
    assert!((sa - 0.75).abs() <= 0.03, "gold share {sa:.4}");
    assert!((sb - 0.25).abs() <= 0.03, "bronze share {sb:.4}");
}

#[test]
fn strict_priority_starves_the_lower_class() {
    let (sa, sb) = shares(
        &credit_cfg(),
        vec![class("high", 1, None), class("low", 0, None)],
    );
    println!("strict: shares {sa:.4} / {sb:.4}");
    // the high class runs as if alone (its completion within 2% of alone: the
    // one low packet in flight when it starts, and ACK interleaving)
    assert!(sa >= 0.98, "high class share {sa:.4}");
    // the low class moves nothing while the high one is backlogged
    assert!(sb <= 0.02, "low class share {sb:.4}");
}

#[test]
fn a_lossy_class_drops_while_a_lossless_class_pauses() {
    // 8:1 incast on one PFC fabric, four senders per class, equal weights:
    // the receiver's port is oversubscribed 8×, so both classes back up to it.
    let topo = single_switch(9);
    let mut lossy = class("bulk", 0, Some(1));
    lossy.lossless = false;
    let cfg = PacketConfig {
        vls: 3,
        classes: Some(TrafficClasses {
            classes: vec![class("storage", 0, Some(1)), lossy],
            data: 0,
            ack: None,
            cnp: None,
        }),
        ..pfc_cfg()
    };
    let flows: Vec<_> = (1..=8).map(|s| (s, 0, 1u64 << 20, (s % 2) as u8)).collect();
    let (_, st) = fcts(&cfg, &topo, &flows);
    println!(
        "drops per lane {:?}, PAUSE frames per lane {:?}, payload per lane {:?}",
        &st.lane_data_dropped[..3],
        &st.lane_pause_frames[..3],
        &st.lane_payload_accepted[..3]
    );
    assert_eq!(st.lane_data_dropped[0], 0, "the lossless class dropped");
    assert!(
        st.lane_pause_frames[0] > 0,
        "the lossless class never paused"
    );
    assert!(st.lane_data_dropped[1] > 0, "the lossy class never dropped");
    assert_eq!(st.lane_pause_frames[1], 0, "the lossy class paused");
    // every byte arrives in the end (go-back-N repairs the drops)
    assert_eq!(st.lane_payload_accepted[0], 4 << 20);
    assert_eq!(st.lane_payload_accepted[1], 4 << 20);
}

/// DCQCN's reaction time (first ECN mark to the first rate cut, ps) on an
/// 8:1 incast into GPU 0 while both GPUs of its host (two GPUs share one
/// 400G NIC) send 16 MiB each to other hosts: DCQCN paces each at the NIC's
/// line rate, so the NIC's uplink is offered 800 Gb/s and holds up to
/// 256 KiB per GPU (its PCIe-side buffers) of that data; CNPs in the data
/// class wait behind it. The NIC's own queue is not marked (switches mark),
/// so the first mark is the incast's.
fn reaction(cnp_in_data_class: bool) -> (u64, PacketStats) {
    let topo = hosts_of(11, 2);
    let cfg = PacketConfig {
        vls: 2,
        ecn: Some(Ecn {
            kmin: 16 << 10,
            kmax: 96 << 10,
            pmax: 0.2,
        }),
        cc: CongestionControl::Dcqcn(DcqcnParams::for_line_rate(Rate::gbps(400))),
        classes: Some(TrafficClasses {
            classes: vec![class("data", 0, None), class("control", 1, None)],
            data: 0,
            ack: None,
            cnp: Some(if cnp_in_data_class { 0 } else { 1 }),
        }),
        ..pfc_cfg()
    };
    // the incast starts at 40 us, once host 0's NIC holds its background
    // data (800 Gb/s in, 400 Gb/s out: 512 KiB after ~10 us)
    let mut flows: Vec<_> = (1..=8).map(|h| (2 * h, 0, 1u64 << 20, 0, 40)).collect();
    flows.push((0, 18, 16 << 20, 0, 0));
    flows.push((1, 20, 16 << 20, 0, 0));
    let (_, st) = fcts_from(&cfg, &topo, &flows);
    assert!(st.first_ecn_mark_ps < u64::MAX && st.first_rate_cut_ps < u64::MAX);
    (st.first_rate_cut_ps - st.first_ecn_mark_ps, st)
}

#[test]
fn cnps_in_a_high_class_cut_dcqcns_reaction_time() {
    let (slow, s1) = reaction(true);
    let (fast, s2) = reaction(false);
    println!(
        "DCQCN reaction (first mark -> first rate cut): CNPs in the data class {:.2} us, in a strict high class {:.2} us (first CNP at a sender {:.2} / {:.2} us after the first mark)",
        slow as f64 / 1e6,
        fast as f64 / 1e6,
        (s1.first_cnp_at_sender_ps - s1.first_ecn_mark_ps) as f64 / 1e6,
        (s2.first_cnp_at_sender_ps - s2.first_ecn_mark_ps) as f64 / 1e6,
    );
    // the data ahead of a CNP in host 0's NIC: up to 2 × 256 KiB of payload,
    // 537 KB on the wire (78 B per 4 KiB packet), 10.7 us at 400 Gb/s; the
    // high class skips it. The CNP joins a queue that is full or nearly so
    // (a packet leaves, the PCIe side refills it), hence 8 to 11.5 us.
    let gained = slow - fast;
    assert!(
        (8_000_000..=11_500_000).contains(&gained),
        "high class {fast} ps, data class {slow} ps"
    );
}

const BASE: &str = r#"
[cluster]
nodes = 3
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
[topology]
kind = "single_switch"
[fabric]
preset = "ib-ndr-400"
virtual_lanes = 3
[workload]
kind = "flows"
[[workload.flows]]
id = "a"
src = 1
dst = 0
bytes = "1MiB"
[[workload.flows]]
id = "b"
src = 2
dst = 0
bytes = "2MiB"
[simulation]
fidelity = "packet"
"#;

fn with_classes(classes: &str) -> String {
    BASE.replace(
        "virtual_lanes = 3\n",
        &format!("virtual_lanes = 3\n{classes}"),
    )
}

fn result(text: &str, f: Fidelity) -> (String, Vec<String>) {
    let s = config::parse("classes.toml", text).unwrap();
    let r = run(
        &s,
        &RunOptions {
            fidelity: Some(f),
            flow_records: true,
            ..RunOptions::default()
        },
    )
    .unwrap();
    let ignored = r.ignored_settings.iter().map(|i| i.key.clone()).collect();
    let mut v = serde_json::to_value(&r).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["sim", "scenario_hash", "ignored_settings", "scenario"] {
        o.remove(k);
    }
    (v.to_string(), ignored)
}

#[test]
fn classes_that_change_nothing_leave_the_result_and_are_listed() {
    let (base, _) = result(BASE, Fidelity::Packet);
    // one class carrying everything, strict or weighted, lossless on a credit fabric
    for table in [
        "classes = [{ name = \"all\", weight = 5 }]\n",
        "classes = [{ name = \"all\" }, { name = \"spare\", priority = 3 }]\n",
        "classes = [{ name = \"all\", pfc = false }]\n",
    ] {
        let (r, ignored) = result(&with_classes(table), Fidelity::Packet);
        assert_eq!(r, base, "{table}");
        assert!(
            ignored.iter().any(|k| k.starts_with("fabric.classes")),
            "{table}: {ignored:?}"
        );
    }
    // a class that moves a flow changes the run and is used
    let moved = with_classes(
        "classes = [{ name = \"gold\", weight = 3 }, { name = \"bronze\", weight = 1 }]\n",
    )
    .replace(
        "bytes = \"2MiB\"\n",
        "bytes = \"2MiB\"\nclass = \"bronze\"\n",
    );
    let (r, ignored) = result(&moved, Fidelity::Packet);
    assert_ne!(r, base);
    assert!(!ignored.iter().any(|k| k.contains("class")), "{ignored:?}");
    // the result says what each class carried: every delivered byte in one
    let v: serde_json::Value = serde_json::from_str(&r).unwrap();
    let classes = v["classes"].as_array().expect("a classes section");
    assert_eq!(classes.len(), 2);
    assert_eq!(
        (classes[0]["name"].as_str(), classes[1]["weight"].as_u64()),
        (Some("gold"), Some(1))
    );
    let per_class: u64 = classes
        .iter()
        .map(|c| c["payload_delivered"].as_u64().unwrap())
        .sum();
    assert_eq!(per_class, v["fabric"]["bytes_delivered"].as_u64().unwrap());
    assert_eq!(
        classes[1]["payload_delivered"].as_u64(),
        Some(2 << 20),
        "flow b, 2 MiB, is bronze"
    );
    // the classes that change nothing reported no section (their result equals base)
    assert!(!base.contains("\"classes\""));
    // and the HTML report shows them, each class's share of the bytes
    let s = config::parse("classes.toml", &moved).unwrap();
    let rep = run(&s, &RunOptions::default()).unwrap();
    let html = fabricsim::report::html::render(&rep, Some(&s));
    assert!(html.contains("<section id=\"sec-classes\">"));
    assert!(html.contains("<td>gold</td>") && html.contains("<td>bronze</td>"));
    // the flow level shares links among the two classes it rides
    // (tests/flow_classes.rs): the class keys are read there, not listed
    let (_, ignored) = result(&moved, Fidelity::Flow);
    for k in ["fabric.classes.0.name", "workload.flows.1.class"] {
        assert!(!ignored.iter().any(|i| i == k), "{k} in {ignored:?}");
    }
}

#[test]
fn bad_class_tables_are_located_errors() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "classes = [{ name = \"a\" }, { name = \"a\", priority = 1 }]\n",
            "fabric.classes.1.name",
            "again",
        ),
        (
            "classes = [{ name = \"a\", weight = 0 }]\n",
            "fabric.classes.0.weight",
            "0",
        ),
        (
            "classes = [{ name = \"a\", weight = -3 }]\n",
            "fabric.classes.0.weight",
            "-3",
        ),
        (
            "classes = [{ name = \"a\", priority = 99 }]\n",
            "fabric.classes.0.priority",
            "99",
        ),
        (
            "classes = [{ name = \"a\" }, { name = \"b\" }]\n",
            "fabric.classes.1.weight",
            "priority 0",
        ),
        (
            "classes = [{ name = \"a\" }, { name = \"b\", priority = 1 }, { name = \"c\", priority = 2 }, { name = \"d\", priority = 3 }]\n",
            "fabric.classes",
            "4 classes with virtual_lanes = 3",
        ),
        (
            "classes = [{ name = \"a\", ecn_kmin = \"4KiB\" }]\n",
            "fabric.classes.0.ecn_kmin",
            "ECN marking off",
        ),
        (
            "classes = [{ name = \"a\" }]\nack_class = \"nope\"\n",
            "fabric.ack_class",
            "\"nope\"",
        ),
        (
            "classes = [{ name = \"a\" }]\nvl_escalation = true\n",
            "fabric.vl_escalation",
            "classes",
        ),
        ("cnp_class = \"a\"\n", "fabric.cnp_class", "no [[fabric.classes]]"),
        ("classes = []\n", "fabric.classes", "empty"),
    ];
    for (table, field, found) in cases {
        let text = with_classes(table);
        let err = config::parse("classes.toml", &text).unwrap_err();
        let d = err
            .diagnostics
            .iter()
            .find(|d| d.field == *field)
            .unwrap_or_else(|| panic!("{table}: no diagnostic on {field}: {err}"));
        assert!(d.line > 0, "{table}: not located: {d:?}");
        assert!(d.found.contains(found), "{table}: found {:?}", d.found);
    }
    // hostile numbers (tests/hostile.rs's kinds): huge, negative, NaN,
    // infinite, wrong type; each a located error, never a panic
    for (key, value) in [
        ("weight", "1e300"),
        ("weight", "9223372036854775807"),
        ("weight", "\"x\""),
        ("priority", "-1"),
        ("priority", "1e30"),
        ("ecn_kmin", "-5"),
        ("ecn_kmax", "\"1e30GiB\""),
        ("ecn_pmax", "nan"),
        ("ecn_pmax", "inf"),
        ("ecn_pmax", "-0.5"),
        ("pfc", "3"),
        ("name", "7"),
    ] {
        let text = with_classes(&format!(
            "classes = [{{ name = \"a\", weight = 1, {key} = {value} }}]\n"
        ))
        .replace("preset = \"ib-ndr-400\"", "preset = \"roce-400\"")
        .replace(", weight = 1, weight", ", weight");
        let text = if key == "name" {
            text.replace("name = \"a\", ", "")
        } else {
            text
        };
        match config::parse("classes.toml", &text) {
            Err(e) => assert!(
                e.diagnostics.iter().all(|d| d.line > 0),
                "{key} = {value}: {e}"
            ),
            Ok(_) => panic!("{key} = {value} accepted"),
        }
    }
    // a flow naming an unknown class
    let text = with_classes("classes = [{ name = \"a\" }]\n")
        .replace("bytes = \"2MiB\"\n", "bytes = \"2MiB\"\nclass = \"b\"\n");
    let err = config::parse("classes.toml", &text).unwrap_err();
    assert!(
        err.diagnostics
            .iter()
            .any(|d| d.field == "workload.flows.1.class" && d.line > 0),
        "{err}"
    );
}

#[test]
fn a_class_s_ecn_thresholds_override_the_fabric_s() {
    // Issue 14: ECN thresholds per class. Two 2 MiB flows from hosts 1 and 2
    // into host 0 queue at the switch's port to host 0 (2:1, PFC, no CC, so
    // marks change nothing else). The fabric marks everything above 8 KiB
    // (a DCTCP step, Kmin = Kmax); a class of its own thresholds 1 GiB (a
    // queue of at most XOFF + headroom per ingress never reaches it) marks
    // nothing on the same traffic, and a class with the fabric's thresholds
    // marks as the fabric does.
    let topo = single_switch(3);
    let step = |k: u64| Ecn {
        kmin: k,
        kmax: k,
        pmax: 1.0,
    };
    let flows = [(1, 0, 2u64 << 20, 0), (2, 0, 2u64 << 20, 0)];
    let marks = |ecn: Option<Ecn>| {
        let cfg = PacketConfig {
            ecn: Some(step(8 << 10)),
            vls: 3,
            classes: Some(TrafficClasses {
                classes: vec![TrafficClass {
                    ecn,
                    ..class("data", 0, None)
                }],
                data: 0,
                ack: None,
                cnp: None,
            }),
            ..pfc_cfg()
        };
        fcts(&cfg, &topo, &flows).1.ecn_marks
    };
    let fabric = marks(None);
    let own_high = marks(Some(step(1 << 30)));
    let own_same = marks(Some(step(8 << 10)));
    println!("ECN marks: fabric's 8 KiB step {fabric}, class's 1 GiB step {own_high}, class's 8 KiB step {own_same}");
    assert!(fabric > 0);
    assert_eq!(own_high, 0);
    assert_eq!(own_same, fabric);
}
