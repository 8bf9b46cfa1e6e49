//! Link rates per tier and per NIC, topology files and the HPCC-simulator
//! converter (issue 14): closed forms for single flows, oversubscribed tiers
//! and slow receivers; packet and flow agreement on mixed-rate fabrics; every
//! malformed topology file or converter input a located error; same JSON twice.

use std::path::PathBuf;

use fabricsim::config::{self, Fidelity, Scenario};
use fabricsim::report::Report;
use fabricsim::run::{run, RunOptions};
use fabricsim::topology::import;

fn scenario(text: &str) -> Scenario {
    config::parse("link_rates.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

fn at(s: &Scenario, f: Fidelity) -> Report {
    run(
        s,
        &RunOptions {
            fidelity: Some(f),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{f:?}: {e}"))
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// One-GPU hosts with fast PCIe (so the network binds), headers off (so a
/// link carries its line rate), InfiniBand (lossless), `flows` between them.
fn flows_on(hosts: u32, topology: &str, fabric: &str, flows: &str) -> String {
    format!(
        r#"
[cluster]
nodes = {hosts}
gpus_per_node = 1
nics_per_node = 1
nvlink_bandwidth = "450GB/s"
pcie_bandwidth = "256GB/s"
pcie_latency = "100ns"
[topology]
{topology}
[fabric]
kind = "infiniband"
header_bytes = 0
link_latency = "1us"
switch_latency = "100ns"
{fabric}
[workload]
kind = "flows"
{flows}
"#
    )
}

/// `n` flows of `bytes` starting at 0 from GPU `src0 + i` to `dst(i)`.
fn flow_list(n: u32, bytes: u64, src0: u32, dst: impl Fn(u32) -> u32) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[[workload.flows]]\nid = {i}\nsrc = {}\ndst = {}\nbytes = {bytes}\n",
                src0 + i,
                dst(i)
            )
        })
        .collect()
}

/// Goodput of each listed flow, Gb/s (payload bits over end − start).
fn goodputs(r: &Report) -> Vec<f64> {
    r.listed_flows
        .iter()
        .map(|f| f.bytes as f64 * 8.0 / (f.fct_us * 1e3))
        .collect()
}

#[test]
fn a_single_flow_over_a_100g_host_and_400g_uplink_path_takes_bytes_over_100g_plus_latency() {
    // Leaf-spine radix 4: hosts 0, 1 on leaf 0, hosts 2, 3 on leaf 1, two
    // spines. Host links 100 Gb/s, leaf ↔ spine 400 Gb/s. GPU 0 → GPU 2 crosses
    // PCIe, NIC → leaf, leaf → spine, spine → leaf, leaf → NIC, PCIe: the
    // bottleneck is the 100G host link, so the idle closed form is
    //   S·8/100e9 + 2·pcie_latency + 4·link_latency + 3·switch_latency
    //   = 8 388 608 bits / 100 Gb/s + 0.2 + 4 + 0.3 us = 83.886 + 4.5 = 88.386 us.
    let s = scenario(&flows_on(
        4,
        "kind = \"leaf_spine\"\nradix = 4",
        "link_rate = \"100Gbps\"\nuplink_rate = \"400Gbps\"",
        &flow_list(1, 1 << 20, 0, |_| 2),
    ));
    let expected = 8_388_608.0 / 100e3 + 4.5;
    for f in [Fidelity::Analytical, Fidelity::Flow] {
        let r = at(&s, f);
        let fct = r.listed_flows[0].fct_us;
        println!("single flow, {f:?}: {fct:.3} us (closed form {expected:.3} us)");
        assert!(
            (fct / expected - 1.0).abs() < 1e-4,
            "{f:?}: {fct} us, closed form {expected:.3} us"
        );
    }
    // packets add store-and-forward: one 4 KiB MTU per extra hop at the
    // hop's rate (0.33 us at 100G, 0.08 us at 400G), under 1 us in all
    let r = at(&s, Fidelity::Packet);
    let fct = r.listed_flows[0].fct_us;
    println!("single flow, Packet: {fct:.3} us (closed form {expected:.3} us)");
    assert!(
        fct >= expected * 0.999 && fct < expected + 1.5,
        "packet: {fct} us, closed form {expected:.3} us"
    );
    // the summary reports the tiers: 4 host links at 100G, 4 uplinks at 400G;
    // a leaf brings 2 × 100G to 2 × 400G up: 0.25:1
    let t = &r.topology;
    assert_eq!(
        t.tiers_line(),
        "host 4 x 100Gbps, uplink 4 x 400Gbps; oversubscription tier 0 0.25:1"
    );
}

#[test]
fn four_cross_leaf_flows_through_one_100g_uplink_get_25g_each() {
    // Leaf-spine radix 5 at 4:1: 4 host ports and 1 uplink per leaf, so 8
    // hosts make 2 leaves and 1 spine. Hosts at 400G, the uplink at 100G
    // (fabric.uplink_rate): 4 flows from leaf 0 to leaf 1 share the uplink,
    // max-min fair 100/4 = 25 Gb/s each (at uniform 400G each would get 100).
    // Flow level: every flow ends at S·8/25e9 + latency, exactly.
    let s = scenario(&flows_on(
        8,
        "kind = \"leaf_spine\"\nradix = 5\noversubscription = 4.0",
        "link_rate = \"400Gbps\"\nuplink_rate = \"100Gbps\"",
        &flow_list(4, 1 << 20, 0, |i| 4 + i),
    ));
    let flow = at(&s, Fidelity::Flow);
    for g in goodputs(&flow) {
        // latency (4.5 us) over the 335.5 us transfer costs 1.3%
        assert!(g > 24.5 && g <= 25.0, "flow level: {g} Gb/s, expected 25");
    }
    println!("one 100G uplink, flow level: {:?} Gb/s", goodputs(&flow));
    let packet = at(&s, Fidelity::Packet);
    let g = goodputs(&packet);
    println!("one 100G uplink, packet level: {g:?} Gb/s");
    for &x in &g {
        assert!(
            x > 22.5 && x < 27.5,
            "packet level: {g:?} Gb/s, expected ≈ 25 each"
        );
    }
    let total: f64 = g.iter().sum();
    assert!(
        total > 95.0 && total < 100.5,
        "packet level: {total} Gb/s in all"
    );
    // each leaf: 4 × 400G down over 1 × 100G up (the spine has no tier above)
    assert_eq!(
        flow.topology.tiers_line(),
        "host 8 x 400Gbps, uplink 2 x 100Gbps; oversubscription tier 0 16.00:1"
    );
    // with the uplink at the host rate (400G, no uplink_rate) the four flows
    // share 400G: 100 Gb/s each, less the 4.5 us latency over an 84 us transfer
    let uniform = scenario(&flows_on(
        8,
        "kind = \"leaf_spine\"\nradix = 5\noversubscription = 4.0",
        "link_rate = \"400Gbps\"",
        &flow_list(4, 1 << 20, 0, |i| 4 + i),
    ));
    for g in goodputs(&at(&uniform, Fidelity::Flow)) {
        assert!(
            g > 90.0 && g <= 100.0,
            "uniform 400G: {g} Gb/s, expected 100"
        );
    }
}

#[test]
fn a_slow_receiver_nic_bounds_an_incast_at_its_rate() {
    // 4 senders at 100G into node 0, whose NIC is overridden to 25G: the
    // receiver's link is the bottleneck, 25/4 = 6.25 Gb/s per flow at flow
    // level, and all four end at 4·S·8/25e9 + latency. At packet level the
    // aggregate goodput is bounded by 25 Gb/s too.
    let s = scenario(&flows_on(
        5,
        "kind = \"single_switch\"",
        "link_rate = \"100Gbps\"\n[[fabric.nic_overrides]]\nnodes = [0]\nrate = \"25Gbps\"",
        &flow_list(4, 1 << 20, 1, |_| 0),
    ));
    let span = |r: &Report| {
        r.listed_flows.iter().map(|f| f.end_us).fold(0.0, f64::max)
            - r.listed_flows
                .iter()
                .map(|f| f.start_us)
                .fold(f64::MAX, f64::min)
    };
    let bits = 4.0 * 8_388_608.0;
    for f in [Fidelity::Flow, Fidelity::Packet] {
        let r = at(&s, f);
        let aggregate = bits / (span(&r) * 1e3);
        println!("incast into a 25G NIC, {f:?}: {aggregate:.3} Gb/s");
        assert!(
            aggregate <= 25.0 && aggregate > 24.0,
            "{f:?}: {aggregate} Gb/s into the 25G receiver"
        );
    }
    // without the override the receiver's 100G link carries 4× as much
    let fast = scenario(&flows_on(
        5,
        "kind = \"single_switch\"",
        "link_rate = \"100Gbps\"",
        &flow_list(4, 1 << 20, 1, |_| 0),
    ));
    let r = at(&fast, Fidelity::Flow);
    assert!(bits / (span(&r) * 1e3) > 95.0);
}

/// An idle ring all-reduce of `size` on one-GPU H100 hosts.
fn allreduce(hosts: u32, topology: &str, fabric: &str, size: &str) -> String {
    format!(
        r#"
[cluster]
preset = "dgx-h100-node"
nodes = {hosts}
gpus_per_node = 1
nics_per_node = 1
[topology]
{topology}
[fabric]
kind = "infiniband"
{fabric}
[workload]
kind = "collective"
op = "all_reduce"
algorithm = "ring"
sizes = ["{size}"]
"#
    )
}

/// Runs `s` at every fidelity; packet and flow agree within 5%.
fn agree(s: &Scenario) -> [f64; 3] {
    let t = [Fidelity::Analytical, Fidelity::Flow, Fidelity::Packet]
        .map(|f| at(s, f).collectives[0].time_us);
    assert!(t.iter().all(|&x| x > 0.0), "{t:?}");
    println!("{}: analytical, flow, packet {t:?} us", s.name());
    assert!(
        (t[2] / t[1] - 1.0).abs() < 0.05,
        "packet {} us vs flow {} us",
        t[2],
        t[1]
    );
    t
}

#[test]
fn a_fat_tree_with_400g_hosts_and_800g_spines_runs_at_every_fidelity() {
    // k = 4 fat-tree, 16 hosts: 16 host links at 400G, 16 edge ↔ aggregation
    // and 16 aggregation ↔ core links at 800G. Each edge brings 2 × 400G to
    // 2 × 800G up (0.5:1), each aggregation 2 × 800G to 2 × 800G (1:1).
    let fabric = "link_rate = \"400Gbps\"\nuplink_rate = \"800Gbps\"\nspine_rate = \"800Gbps\"";
    let s = scenario(&allreduce(16, "kind = \"fat_tree\"\nk = 4", fabric, "4MiB"));
    let t = agree(&s);
    let r = at(&s, Fidelity::Flow);
    assert_eq!(
        r.topology.tiers_line(),
        "host 16 x 400Gbps, uplink 16 x 800Gbps, spine 16 x 800Gbps; oversubscription tier 0 0.50:1, tier 1 1.00:1"
    );
    // the ring's idle bottleneck is the 400G host link, so faster tiers above
    // it change nothing (the flow level is then the same as at 400G
    // everywhere) while a 100G core, below the host rate, slows it
    let uniform = scenario(&allreduce(
        16,
        "kind = \"fat_tree\"\nk = 4",
        "link_rate = \"400Gbps\"",
        "4MiB",
    ));
    assert_eq!(at(&uniform, Fidelity::Flow).collectives[0].time_us, t[1]);
    let thin = scenario(&allreduce(
        16,
        "kind = \"fat_tree\"\nk = 4",
        "link_rate = \"400Gbps\"\nspine_rate = \"100Gbps\"",
        "4MiB",
    ));
    let slow = at(&thin, Fidelity::Flow).collectives[0].time_us;
    assert!(slow > 1.5 * t[1], "100G core: {slow} us vs {} us", t[1]);
}

#[test]
fn the_converted_hpcc_topology_runs_at_every_fidelity_and_twice_the_same() {
    // The committed topology file is what the converter makes of the
    // committed HPCC topology.txt, byte for byte.
    let txt = std::fs::read_to_string(data("hpcc-leaf-spine.txt")).unwrap();
    let conv = import::hpcc(&txt, "tests/data/hpcc-leaf-spine.txt").unwrap();
    let committed = std::fs::read_to_string(data("hpcc-leaf-spine.toml")).unwrap();
    assert_eq!(conv.text, committed);
    assert_eq!((conv.hosts, conv.switches, conv.links), (8, 4, 12));
    let path = data("file-allreduce.toml");
    let s = config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let t = agree(&s);
    let r = at(&s, Fidelity::Flow);
    // 8 × 100G host links, 4 × 200G leaf ↔ spine: each leaf 4 × 100 down,
    // 2 × 200 up (1:1)
    assert_eq!(
        r.topology.tiers_line(),
        "host 8 x 100Gbps, uplink 4 x 200Gbps; oversubscription tier 0 1.00:1"
    );
    // a ring's busiest link is a 100G host link (header overhead and NIC
    // goodput aside): 2·(N−1)/N · S over 100G bounds the time from below
    let bound_us = 2.0 * 7.0 / 8.0 * 4_194_304.0 * 8.0 / 100e3;
    assert!(t.iter().all(|&x| x > bound_us), "{t:?} vs {bound_us}");
    // determinism: the same JSON twice, at flow and packet level
    for f in [Fidelity::Flow, Fidelity::Packet] {
        let mut a = at(&s, f);
        let mut b = at(&s, f);
        a.sim = Default::default();
        b.sim = Default::default();
        assert_eq!(a.to_json(), b.to_json(), "{f:?}");
    }
}

/// A scenario over topology file `topo` written next to it in a fresh
/// directory; the parse error's text.
fn file_error(topo: &str, nodes: u32, nics: u32, tag: &str) -> String {
    let dir =
        std::env::temp_dir().join(format!("fabricsim-link-rates-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.toml"), topo).unwrap();
    let text = format!(
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = {nodes}\ngpus_per_node = 1\nnics_per_node = {nics}\n\
         [topology]\nkind = \"file\"\nfile = \"t.toml\"\n[fabric]\nkind = \"infiniband\"\n[workload]\nop = \"allreduce\"\n"
    );
    let path = dir.join("s.toml");
    std::fs::write(&path, &text).unwrap();
    let e = config::load(&path).expect_err(topo).to_string();
    let _ = std::fs::remove_dir_all(&dir);
    e
}

/// Two hosts on two switches joined by one link; lines 1–2 name the nodes,
/// 3–5 the defaults, the links start on lines 6, 9 and 12.
const GOOD: &str = "switches = [\"s0\", \"s1\"]\nhosts = [\"h0\", \"h1\"]\n\
[defaults]\nrate = \"100Gbps\"\nlatency = \"1us\"\n\
[[links]]\na = \"h0\"\nb = \"s0\"\n\
[[links]]\na = \"h1\"\nb = \"s1\"\n\
[[links]]\na = \"s0\"\nb = \"s1\"\n";

#[test]
fn every_malformed_topology_file_is_a_located_error() {
    // (file, nodes, NICs per node, field, what the message says, line)
    let unlinked = GOOD.replace("[[links]]\na = \"h1\"\nb = \"s1\"\n", "");
    let split = GOOD.replace("[[links]]\na = \"s0\"\nb = \"s1\"\n", "");
    let cases: Vec<(String, u32, u32, &str, &str, usize)> = vec![
        (
            GOOD.replace(
                "b = \"s1\"\n[[links]]\na = \"s0\"",
                "b = \"s9\"\n[[links]]\na = \"s0\"",
            ),
            2,
            1,
            "`links.1.b`",
            "\"s9\", which is no switch or host",
            11,
        ),
        (
            format!("{GOOD}[[links]]\na = \"s1\"\nb = \"s0\"\n"),
            2,
            1,
            "`links.3`",
            "a second link between \"s1\" and \"s0\" (the first is links.2, line 12)",
            0,
        ),
        (
            unlinked,
            2,
            1,
            "`hosts.1`",
            "host \"h1\" with no link (disconnected)",
            2,
        ),
        (split, 2, 1, "`hosts.1`", "no path to host \"h0\"", 2),
        (GOOD.to_string(), 3, 1, "`hosts`", "2 hosts", 2),
        (
            GOOD.to_string(),
            2,
            2,
            "`hosts.0`",
            "host \"h0\" with 1 links",
            2,
        ),
        (
            GOOD.replace("hosts = [\"h0\", \"h1\"]", "hosts = [\"h0\", \"s1\"]"),
            2,
            1,
            "`hosts.1`",
            "\"s1\" again (first as `switches.1`, line 1)",
            2,
        ),
        (
            GOOD.replace("a = \"s0\"\nb = \"s1\"", "a = \"h0\"\nb = \"h1\""),
            2,
            1,
            "`links.2.b`",
            "host \"h0\" linked to host \"h1\"",
            14,
        ),
        (
            GOOD.replace("a = \"s0\"\nb = \"s1\"", "a = \"s0\"\nb = \"s0\""),
            2,
            1,
            "`links.2.b`",
            "the same node as `a`",
            14,
        ),
        (
            GOOD.replace("rate = \"100Gbps\"\n", ""),
            2,
            1,
            "`links.0.rate`",
            "found nothing",
            0,
        ),
        (
            GOOD.replace("\"100Gbps\"", "\"fast\""),
            2,
            1,
            "`defaults.rate`",
            "\"fast\"",
            4,
        ),
        (
            GOOD.replace("\"1us\"", "5"),
            2,
            1,
            "`defaults.latency`",
            "5 (no unit)",
            5,
        ),
        (
            GOOD.replace("a = \"h0\"", "a = 7"),
            2,
            1,
            "`links.0.a`",
            "integer",
            7,
        ),
        (
            GOOD.replace("[[links]]\na = \"h0\"", "[[links]]\nspeed = 1\na = \"h0\""),
            2,
            1,
            "`links.0.speed`",
            "unknown field",
            7,
        ),
    ];
    for (i, (topo, nodes, nics, field, found, line)) in cases.iter().enumerate() {
        let e = file_error(topo, *nodes, *nics, &i.to_string());
        assert!(e.contains(field), "case {i}: expected {field} in:\n{e}");
        assert!(e.contains(found), "case {i}: expected {found:?} in:\n{e}");
        assert!(
            e.contains("t.toml:"),
            "case {i}: not located in the topology file:\n{e}"
        );
        if *line > 0 {
            assert!(
                e.contains(&format!("t.toml:{line}:")),
                "case {i}: expected line {line}:\n{e}"
            );
        }
        assert!(e.contains("expected"), "case {i}: {e}");
    }
    // a missing file is located on topology.file in the scenario
    let e = config::parse(
        "/nonexistent/s.toml",
        "[cluster]\npreset = \"dgx-h100-node\"\nnodes = 2\n[topology]\nkind = \"file\"\nfile = \"nope.toml\"\n[fabric]\nkind = \"infiniband\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("s.toml:6:") && e.contains("topology.file") && e.contains("cannot be read"),
        "{e}"
    );
}

#[test]
fn every_malformed_rate_key_is_a_located_error() {
    let base = |fabric: &str| {
        format!("[cluster]\npreset = \"dgx-h100-node\"\nnodes = 4\n[topology]\nkind = \"leaf_spine\"\nradix = 4\n[fabric]\nkind = \"infiniband\"\nlink_rate = \"100Gbps\"\n{fabric}")
    };
    for (fabric, field, found) in [
        (
            "uplink_rate = \"0Gbps\"\n",
            "fabric.uplink_rate",
            "\"0Gbps\"",
        ),
        ("spine_rate = 800\n", "fabric.spine_rate", "800 (no unit)"),
        ("global_rate = \"x\"\n", "fabric.global_rate", "\"x\""),
        (
            "[[fabric.nic_overrides]]\nnodes = [4]\nrate = \"25Gbps\"\n",
            "fabric.nic_overrides.0.nodes",
            "found 4",
        ),
        (
            "[[fabric.nic_overrides]]\nnodes = []\nrate = \"25Gbps\"\n",
            "fabric.nic_overrides.0.nodes",
            "found []",
        ),
        (
            "[[fabric.nic_overrides]]\nnodes = [1]\n",
            "fabric.nic_overrides.0.rate",
            "found nothing",
        ),
        (
            "[[fabric.nic_overrides]]\nnode = [1]\nrate = \"1Gbps\"\n",
            "fabric.nic_overrides.0.node",
            "unknown field",
        ),
    ] {
        let e = config::parse("r.toml", &base(fabric))
            .expect_err(fabric)
            .to_string();
        assert!(
            e.contains(&format!("`{field}`")) && e.contains(found),
            "{fabric}:\n{e}"
        );
        assert!(e.contains("r.toml:1") || e.contains("r.toml:"), "{e}");
    }
}

#[test]
fn every_malformed_hpcc_topology_is_a_located_error() {
    let good = "4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n2 3 100Gbps 0.001ms 0\n";
    assert!(import::hpcc(good, "g").is_ok());
    // (input, line, field, found)
    for (text, line, field, found) in [
        ("", 0, "header", "an empty file"),
        ("4 1\n3\n", 1, "header", "\"4 1\""),
        ("4 x 3\n3\n", 1, "switch_num", "\"x\""),
        ("4 1 3\n3 2\n", 2, "switch ids", "2 ids"),
        ("4 1 3\n9\n", 2, "switch ids", "\"9\""),
        ("4 1 3\n3\n0 3 100Gbps 0.001ms\n", 3, "link", "4 fields"),
        ("4 1 3\n3\n0 7 100Gbps 0.001ms 0\n", 3, "dst", "\"7\""),
        ("4 1 3\n3\n0 3 fast 0.001ms 0\n", 3, "rate", "\"fast\""),
        ("4 1 3\n3\n0 3 100Gbps soon 0\n", 3, "delay", "\"soon\""),
        ("4 1 3\n3\n0 3 100Gbps 1us 2\n", 3, "error_rate", "\"2\""),
        (
            "4 1 3\n3\n0 1 100Gbps 1us 0\n",
            3,
            "dst",
            "host 1 linked to host 0",
        ),
        ("4 1 3\n3\n3 3 100Gbps 1us 0\n", 3, "dst", "3"),
        (
            "4 1 3\n3\n0 3 100Gbps 1us 0\n3 0 100Gbps 1us 0\n",
            4,
            "link",
            "first on line 3",
        ),
        (
            "4 1 3\n3\n0 3 100Gbps 1us 0\n1 3 100Gbps 1us 0\n",
            1,
            "link_num",
            "the file has 2 link lines",
        ),
        (
            "4 1 2\n3\n0 3 100Gbps 1us 0\n1 3 100Gbps 1us 0\n",
            0,
            "links",
            "host 2 with no link",
        ),
    ] {
        let e = import::hpcc(text, "t").expect_err(text);
        assert_eq!((e.line, e.field.as_str()), (line, field), "{text:?}: {e}");
        assert!(e.to_string().contains(found), "{text:?}: {e}");
    }
    // a non-zero error rate converts, with a note
    let lossy = good.replace("0.001ms 0\n2", "0.001ms 0.01\n2");
    let t = import::hpcc(&lossy, "l").unwrap();
    assert_eq!(t.notes.len(), 1, "{:?}", t.notes);
    assert!(t.notes[0].contains("line 4") && t.notes[0].contains("bit_error_rate"));
}

/// A ring all-reduce of 4 MiB on 100G hosts with 1 us links over the
/// converted htsim topology file `topo` (copied into a fresh directory), or
/// over the built `shape` when `topo` is empty.
fn htsim_allreduce(hosts: u32, topo: &str, shape: &str, tag: &str) -> Scenario {
    let topology = if topo.is_empty() {
        shape.to_string()
    } else {
        "kind = \"file\"\nfile = \"t.toml\"".to_string()
    };
    let text = allreduce(
        hosts,
        &topology,
        "link_rate = \"100Gbps\"\nlink_latency = \"1us\"",
        "4MiB",
    );
    let dir = std::env::temp_dir().join(format!("fabricsim-htsim-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.toml"), topo).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, &text).unwrap();
    config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn converted_htsim_fat_trees_are_the_shapes_they_describe() {
    // tests/data/htsim-fat-tree.topo is a k = 4 fat tree in csg-htsim's
    // -topo format: 16 hosts, 4 pods of 2 ToRs + 2 aggregation switches, 4
    // cores: 5k²/4 = 20 switches, 3·k³/4 = 48 links (Al-Fares et al. 2008).
    // htsim-leaf-spine.topo: 2 leaves of 2 hosts, 2 spines, each leaf a
    // bundle of two 50G links to each spine: 4 switches, 8 links, the
    // bundles one 100G link each (with a note).
    for (name, counts, notes) in [
        ("htsim-fat-tree", (16, 20, 48), 0),
        ("htsim-leaf-spine", (4, 4, 8), 1),
    ] {
        let src = format!("tests/data/{name}.topo");
        let txt = std::fs::read_to_string(data(&format!("{name}.topo"))).unwrap();
        let conv = import::htsim(&txt, &src).unwrap_or_else(|e| panic!("{name}: {e}"));
        // the committed topology file is the converter's output, byte for byte
        let committed = std::fs::read_to_string(data(&format!("{name}.toml"))).unwrap();
        assert_eq!(conv.text, committed, "{name}");
        assert_eq!((conv.hosts, conv.switches, conv.links), counts, "{name}");
        assert_eq!(conv.notes.len(), notes, "{name}: {:?}", conv.notes);
    }
    // the same graphs as fabricsim's own shapes: with the same link figures
    // a ring all-reduce takes the same time at the analytical fidelity (paths
    // of the same hops and rates), and the flow level agrees within 1%
    for (hosts, name, shape) in [
        (16, "htsim-fat-tree", "kind = \"fat_tree\"\nk = 4"),
        (4, "htsim-leaf-spine", "kind = \"leaf_spine\"\nradix = 4"),
    ] {
        let topo = std::fs::read_to_string(data(&format!("{name}.toml"))).unwrap();
        let file = htsim_allreduce(hosts, &topo, "", name);
        let built = htsim_allreduce(hosts, "", shape, &format!("{name}-built"));
        let a = at(&file, Fidelity::Analytical).collectives[0].time_us;
        let b = at(&built, Fidelity::Analytical).collectives[0].time_us;
        println!("{name}: analytical {a} us, built {shape:?} {b} us");
        assert!((a / b - 1.0).abs() < 1e-9, "{name}: {a} vs {b}");
        let fa = at(&file, Fidelity::Flow).collectives[0].time_us;
        let fb = at(&built, Fidelity::Flow).collectives[0].time_us;
        println!("{name}: flow {fa} us, built {fb} us");
        assert!((fa / fb - 1.0).abs() < 0.01, "{name}: flow {fa} vs {fb}");
    }
}

#[test]
fn every_malformed_htsim_topology_is_a_located_error() {
    let good = "Nodes 4\nTiers 2\nPodsize 4\nTier 0\nDownlink_speed_Gbps 100\nRadix_Down 2\nRadix_Up 2\nDownlink_Latency_ns 1000\nTier 1\nDownlink_speed_Gbps 100\nRadix_Down 2\nDownlink_Latency_ns 1000\n";
    let t = import::htsim(good, "g").unwrap();
    assert_eq!((t.hosts, t.switches, t.links), (4, 4, 8));
    let with = |old: &str, new: &str| {
        assert!(good.contains(old), "{old}");
        good.replacen(old, new, 1)
    };
    // (input, line, field, found)
    for (text, line, field, found) in [
        (String::new(), 0, "Nodes", "nothing"),
        (with("Nodes 4", "Nodes four"), 1, "Nodes", "\"four\""),
        (with("Nodes 4", "Nodes"), 1, "Nodes", "no value"),
        (
            with("Nodes 4", "Nodes 4 5"),
            1,
            "Nodes",
            "\"5\" after the value",
        ),
        (
            with("Nodes 4\n", "Nodes 4\nNodes 8\n"),
            2,
            "Nodes",
            "first on line 1",
        ),
        (
            with("Podsize 4\n", "Podsize 4\nColour 3\n"),
            4,
            "Colour",
            "the key",
        ),
        (with("Tiers 2", "Tiers 4"), 2, "Tiers", "4"),
        (with("Tier 1\n", "Tier 2\n"), 9, "Tier", "2"),
        (with("Tier 1\n", "Tier 0\n"), 9, "Tier", "first on line 4"),
        (
            with("Radix_Up 2\n", "Radix_Up 2\nRadix_up 2\n"),
            8,
            "Radix_up",
            "first on line 7",
        ),
        (
            with("Radix_Up 2\n", "Radix_Up 2\nSpeed 2\n"),
            8,
            "Speed",
            "the key",
        ),
        (
            with("Tier 1\n", "Tier 1\nRadix_Up 2\n"),
            10,
            "Radix_Up",
            "the top tier",
        ),
        (
            with("Radix_Down 2\nRadix_Up", "Radix_Down 0\nRadix_Up"),
            6,
            "Radix_Down",
            "0",
        ),
        (
            with("Podsize 4\n", "Podsize 4\nTier 0\nNodes 4\n"),
            5,
            "Nodes",
            "inside a tier",
        ),
        (
            with("Radix_Up 2\n", ""),
            4,
            "Radix_Up",
            "no Radix_Up in tier 0",
        ),
        (
            with("Tier 1\nDownlink_speed_Gbps 100\n", "Tier 1\n"),
            9,
            "Downlink_speed_Gbps",
            "no Downlink_speed_Gbps in tier 1",
        ),
        (with("Podsize 4", "Podsize 3"), 3, "Podsize", "4 over 3"),
        (
            with("Radix_Down 2\nRadix_Up", "Radix_Down 4\nRadix_Up"),
            7,
            "Radix_Up",
            "2 uplinks per ToR",
        ),
        (
            with("Radix_Up 2\n", "Radix_Up 2\nOversubscribed 3\n"),
            8,
            "Oversubscribed",
            "400 over 300",
        ),
        (
            with("Radix_Up 2\n", "Radix_Up 2\nBundle 2\n"),
            8,
            "Bundle",
            "2",
        ),
        // 4·10⁹ hosts on 2·10⁹ ToRs, 2 spines of 2·10⁹ ports: a valid tree,
        // refused before a link is written
        (
            with("Nodes 4", "Nodes 4000000000")
                .replace("Podsize 4", "Podsize 4000000000")
                .replace(
                    "Radix_Down 2\nDownlink_Latency_ns 1000\n",
                    "Radix_Down 2000000000\nDownlink_Latency_ns 1000\n",
                ),
            0,
            "Nodes",
            "8000000000 links",
        ),
    ] {
        let e = import::htsim(&text, "t").expect_err(&text);
        assert_eq!((e.line, e.field.as_str()), (line, field), "{text:?}: {e}");
        assert!(e.to_string().contains(found), "{text:?}: {e}");
    }
    // a 3-tier tree whose aggregation uplinks point past the last core
    let fat = std::fs::read_to_string(data("htsim-fat-tree.topo")).unwrap();
    let tier1 = fat.find("Tier 1").unwrap();
    let (head, tail) = fat.split_at(tier1);
    let broken = format!("{head}{}", tail.replacen("Radix_Up 2", "Radix_Up 4", 1));
    let e = import::htsim(&broken, "t").unwrap_err();
    assert_eq!(e.field, "Radix_Up", "{e}");
    assert!(e.found.contains("core 7 of 4"), "{e}");
    // switch latencies convert, with a note naming fabric.switch_latency
    let slow = with(
        "Downlink_Latency_ns 1000\nTier 1",
        "Downlink_Latency_ns 1000\nSwitch_Latency_ns 300\nTier 1",
    );
    let t = import::htsim(&slow, "s").unwrap();
    assert!(
        t.notes
            .iter()
            .any(|n| n.contains("tier 0 300 ns") && n.contains("fabric.switch_latency")),
        "{:?}",
        t.notes
    );
}

/// Two leaves of 8 hosts each joined through two spines, one at 100G and one
/// at 25G (host links 100G, 1 µs everywhere): every cross-leaf route has two
/// equal-hop paths that differ fourfold in rate.
const UNEQUAL_ECMP: &str = "switches = [\"l0\", \"l1\", \"fast\", \"slow\"]\n\
hosts = [\"h0\", \"h1\", \"h2\", \"h3\", \"h4\", \"h5\", \"h6\", \"h7\", \"h8\", \"h9\", \"h10\", \"h11\", \"h12\", \"h13\", \"h14\", \"h15\"]\n\
[defaults]\nrate = \"100Gbps\"\nlatency = \"1us\"\n";

/// The scenario over [`UNEQUAL_ECMP`] (header overhead off, so a path carries
/// its line rate) with `workload`, written with its topology file into a
/// fresh directory named by `tag`.
fn unequal_ecmp(workload: &str, fast: &str, slow: &str, tag: &str) -> Scenario {
    let mut topo = UNEQUAL_ECMP.to_string();
    for h in 0..16 {
        let leaf = if h < 8 { "l0" } else { "l1" };
        topo += &format!("[[links]]\na = \"h{h}\"\nb = \"{leaf}\"\n");
    }
    for (spine, rate) in [("fast", fast), ("slow", slow)] {
        for leaf in ["l0", "l1"] {
            topo += &format!("[[links]]\na = \"{leaf}\"\nb = \"{spine}\"\nrate = \"{rate}\"\n");
        }
    }
    let dir = std::env::temp_dir().join(format!("fabricsim-ecmp-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.toml"), topo).unwrap();
    let text = format!(
        "[cluster]\nnodes = 16\ngpus_per_node = 1\nnics_per_node = 1\nnvlink_bandwidth = \"450GB/s\"\n\
         pcie_bandwidth = \"256GB/s\"\npcie_latency = \"100ns\"\n\
         [topology]\nkind = \"file\"\nfile = \"t.toml\"\n\
         [fabric]\nkind = \"infiniband\"\nheader_bytes = 0\nswitch_latency = \"100ns\"\n{workload}"
    );
    let path = dir.join("s.toml");
    std::fs::write(&path, &text).unwrap();
    let s = config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
    s
}

#[test]
fn unequal_ecmp_paths_cost_their_expectation_over_the_hash_not_the_first_path() {
    // 128 transfers of 1 MiB one after another (no contention), every
    // cross-leaf pair both ways. The flow fidelity routes each by its queue
    // pair's hash: over the 100G spine it takes S/100G + α, over the 25G one
    // S/25G + α (same hops, same α). ECMP picks either with probability 1/2,
    // so a transfer's expected time is S·(½/100G + ½/25G) + α = S/40G + α
    // (the harmonic mean of the path rates), which the analytical fidelity
    // must charge each transfer; the first path alone would charge S/100G or
    // S/25G to every one (off by 40% or 60% of the total).
    const S: u64 = 1 << 20;
    let mut flows = String::from("[workload]\nkind = \"flows\"\n");
    let mut n = 0;
    for a in 0..8u32 {
        for b in 8..16u32 {
            for (src, dst) in [(a, b), (b, a)] {
                flows += &format!(
                    "[[workload.flows]]\nid = {n}\nsrc = {src}\ndst = {dst}\nbytes = {S}\n"
                );
                if n > 0 {
                    flows += &format!("after = [{}]\n", n - 1);
                }
                n += 1;
            }
        }
    }
    let s = unequal_ecmp(&flows, "100Gbps", "25Gbps", "chain");
    let tx = |gbps: f64| S as f64 * 8.0 / (gbps * 1e3); // µs
    let flow = at(&s, Fidelity::Flow);
    let ana = at(&s, Fidelity::Analytical);
    let fcts: Vec<f64> = flow.listed_flows.iter().map(|f| f.fct_us).collect();
    assert_eq!(fcts.len(), n);
    // every flow-level FCT is one of the two paths' costs
    let alpha = fcts.iter().cloned().fold(f64::MAX, f64::min) - tx(100.0);
    let slow = fcts
        .iter()
        .filter(|&&t| (t - (tx(25.0) + alpha)).abs() < 1e-3)
        .count();
    let fast = fcts
        .iter()
        .filter(|&&t| (t - (tx(100.0) + alpha)).abs() < 1e-3)
        .count();
    assert_eq!(slow + fast, n, "{fcts:?}");
    // the hash spreads them: within 3σ of n/2 (Binomial(128, ½), σ = 5.7)
    assert!(
        (slow as f64 - n as f64 / 2.0).abs() <= 3.0 * (n as f64 / 4.0).sqrt(),
        "{slow} of {n} slow"
    );
    // analytical: each transfer S/40G + the same α, to the nanosecond
    for f in &ana.listed_flows {
        assert!(
            (f.fct_us - (tx(40.0) + alpha)).abs() < 1e-3,
            "{f:?} vs {}",
            tx(40.0) + alpha
        );
    }
    // the makespans differ only by the hash's draw: (slow − n/2) × (S/25G − S/100G)
    let draw = (slow as f64 - n as f64 / 2.0) * (tx(25.0) - tx(100.0));
    println!(
        "unequal ECMP chain: flow {:.3} us ({slow} of {n} on the 25G spine), analytical {:.3} us (each S/40G + α), difference {:.3} us = the draw {draw:.3} us",
        flow.makespan_us, ana.makespan_us, flow.makespan_us - ana.makespan_us
    );
    assert!((flow.makespan_us - ana.makespan_us - draw).abs() < 1e-2 * n as f64);
}

#[test]
fn a_collective_model_sees_unequal_ecmp_paths_as_their_harmonic_mean() {
    // A ring all-reduce over the 16 hosts: the closed form costs each ring
    // edge by ECMP's expectation, so 100G and 25G spines (harmonic mean 40G)
    // cost exactly what two 40G spines cost (same hops, same latencies),
    // and neither what two 100G nor two 25G spines cost.
    let ring = "[workload]\nkind = \"collective\"\nop = \"all_reduce\"\nalgorithm = \"ring\"\nsizes = [\"64MiB\"]\n";
    let time = |fast: &str, slow: &str, tag: &str| {
        at(&unequal_ecmp(ring, fast, slow, tag), Fidelity::Analytical).collectives[0].time_us
    };
    let mixed = time("100Gbps", "25Gbps", "mixed");
    let even = time("40Gbps", "40Gbps", "even");
    let fastest = time("100Gbps", "100Gbps", "fastest");
    let slowest = time("25Gbps", "25Gbps", "slowest");
    println!("ring all-reduce 64 MiB, analytical: 100G+25G spines {mixed:.3} us, 40G+40G {even:.3}, 100G+100G {fastest:.3}, 25G+25G {slowest:.3}");
    assert!((mixed - even).abs() <= 1e-3 * even, "{mixed} vs {even}");
    assert!(fastest < mixed && mixed < slowest);
    // the flow fidelity hashes each ring edge onto one spine: its time lies
    // between the all-fast and the all-slow fabric's
    let s = unequal_ecmp(ring, "100Gbps", "25Gbps", "flowring");
    let flow = at(&s, Fidelity::Flow).collectives[0].time_us;
    println!("  flow fidelity on 100G+25G: {flow:.3} us");
    assert!(flow >= 0.99 * fastest && flow <= 1.01 * slowest);
}
