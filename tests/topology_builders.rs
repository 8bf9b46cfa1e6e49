//! Tests of every topology builder against textbook figures: element counts,
//! bisection bandwidth measured on the built graph with an independent max-flow,
//! routing (reachability, path shapes, ECMP diversity, link faults) and the error
//! paths of bad parameters.

use std::collections::HashSet;

use fabricsim::topology::{
    build, ClusterSpec, FabricLinkSpec, GpuId, LinkId, LinkKind, NodeId, NodeKind, Topology,
    TopologyError, TopologySpec,
};
use fabricsim::units::{Rate, SimTime};

/// Network link rate used throughout: 400 Gb/s (NDR InfiniBand / 400GbE).
const B: u64 = 400_000_000_000;

/// A cluster of `hosts` hosts with `gpus` GPUs and `nics` NICs each; NVLink 3.6 Tb/s,
/// PCIe 512 Gb/s (figures of a DGX H100-class node).
fn cluster(hosts: u32, gpus: u32, nics: u32) -> ClusterSpec {
    ClusterSpec {
        hosts,
        gpus_per_host: gpus,
        nics_per_host: nics,
        nvlink_rate: Rate::gbps(3600),
        nvlink_latency: SimTime::from_ns(100),
        pcie_rate: Rate::gbps(512),
        pcie_latency: SimTime::from_ns(200),
    }
}

/// 8 GPUs and 8 NICs per host, as in a DGX node.
fn dgx(hosts: u32) -> ClusterSpec {
    cluster(hosts, 8, 8)
}

/// 400 Gb/s links with 500 ns propagation, 300 ns switch forwarding.
fn fabric() -> FabricLinkSpec {
    FabricLinkSpec {
        link_rate: Rate(B),
        link_latency: SimTime::from_ns(500),
        switch_latency: SimTime::from_ns(300),
        ..Default::default()
    }
}

fn ok(c: &ClusterSpec, spec: TopologySpec) -> Topology {
    match build(c, &fabric(), &spec) {
        Ok(t) => t,
        Err(e) => panic!("{spec:?} failed on field {}: {}", e.field, e.message),
    }
}

fn err(c: &ClusterSpec, spec: TopologySpec) -> TopologyError {
    match build(c, &fabric(), &spec) {
        Ok(_) => panic!("{spec:?} should not build for {} hosts", c.hosts),
        Err(e) => e,
    }
}

fn fat_tree(k: u32) -> TopologySpec {
    TopologySpec::FatTree { k }
}

fn rail(radix: u32, spine_radix: u32) -> TopologySpec {
    TopologySpec::RailOptimized { radix, spine_radix }
}

fn leaf_spine(radix: u32, oversubscription: f64) -> TopologySpec {
    TopologySpec::LeafSpine {
        radix,
        oversubscription,
    }
}

fn dragonfly(g: u32, a: u32, p: u32, h: u32) -> TopologySpec {
    TopologySpec::Dragonfly {
        groups: g,
        routers_per_group: a,
        hosts_per_router: p,
        global_links_per_router: h,
    }
}

// ---------------------------------------------------------------------------
// Counting
// ---------------------------------------------------------------------------

/// What a built graph holds, counted from its nodes and links.
#[derive(Debug, PartialEq)]
struct Counts {
    /// Switches per tier, index = tier.
    switches: Vec<usize>,
    /// Duplex network links between two switches.
    switch_links: usize,
    /// Duplex network links between a NIC and a switch.
    nic_links: usize,
    /// Hosts.
    hosts: u32,
}

fn is_switch(t: &Topology, n: NodeId) -> bool {
    matches!(t.node(n).kind, NodeKind::Switch { .. })
}

fn counts(t: &Topology) -> Counts {
    let mut switches = Vec::new();
    for n in &t.nodes {
        if let NodeKind::Switch { tier } = n.kind {
            let tier = tier as usize;
            if switches.len() <= tier {
                switches.resize(tier + 1, 0);
            }
            switches[tier] += 1;
        }
    }
    let (mut switch_links, mut nic_links) = (0, 0);
    for (i, l) in t.links.iter().enumerate() {
        assert_eq!(
            t.link(t.reverse(LinkId(i as u32))).from,
            l.to,
            "duplex pairs"
        );
        if i % 2 == 1 || l.kind != LinkKind::Network {
            continue;
        }
        assert_eq!(l.rate, Rate(B), "network links run at the fabric rate");
        match (is_switch(t, l.from), is_switch(t, l.to)) {
            (true, true) => switch_links += 1,
            (true, false) | (false, true) => nic_links += 1,
            (false, false) => panic!("network link between two non-switches"),
        }
    }
    Counts {
        switches,
        switch_links,
        nic_links,
        hosts: t.hosts,
    }
}

#[test]
fn single_switch_counts() {
    // One crossbar, one port per NIC: 4 hosts × 8 NICs = 32 NIC links.
    let t = ok(&dgx(4), TopologySpec::SingleSwitch);
    assert_eq!(
        counts(&t),
        Counts {
            switches: vec![1],
            switch_links: 0,
            nic_links: 32,
            hosts: 4
        }
    );
    assert_eq!(t.num_gpus(), 32);
}

#[test]
fn leaf_spine_counts() {
    // radix 8, 3:1 → 6 down + 2 up per leaf. 24 NICs → ⌈24/6⌉ = 4 leaves,
    // 2 spines (one per leaf uplink), 4 × 2 leaf–spine links (folded Clos).
    let t = ok(&dgx(3), leaf_spine(8, 3.0));
    assert_eq!(
        counts(&t),
        Counts {
            switches: vec![4, 2],
            switch_links: 8,
            nic_links: 24,
            hosts: 3
        }
    );
    // Non-blocking radix 8: 4 down / 4 up; 32 NICs → 8 leaves, 4 spines, 32 links.
    let t = ok(&dgx(4), leaf_spine(8, 1.0));
    assert_eq!(
        counts(&t),
        Counts {
            switches: vec![8, 4],
            switch_links: 32,
            nic_links: 32,
            hosts: 4
        }
    );
}

#[test]
fn fat_tree_counts() {
    // Al-Fares et al., SIGCOMM 2008: k pods of k/2 edge + k/2 agg, (k/2)² cores
    // = 5k²/4 switches; k³/4 hosts; k³/4 edge–agg + k³/4 agg–core = k³/2 links.
    for (k, c) in [
        (4u32, dgx(2)),
        (6, cluster(9, 6, 6)),
        (8, cluster(32, 4, 4)),
    ] {
        let t = ok(&c, fat_tree(k));
        let kk = k as usize;
        assert_eq!(
            counts(&t),
            Counts {
                switches: vec![kk * kk / 2, kk * kk / 2, kk * kk / 4],
                switch_links: kk * kk * kk / 2,
                nic_links: kk * kk * kk / 4,
                hosts: c.hosts
            },
            "k = {k}"
        );
        assert_eq!(5 * kk * kk / 4, t.num_switches());
        assert_eq!(t.leaves.len(), kk * kk / 2, "every edge switch has NICs");
    }
    // Partly filled: the full k = 4 tree is still built; 8 NICs fill 4 edges.
    let t = ok(&dgx(1), fat_tree(4));
    let c = counts(&t);
    assert_eq!(c.switches, vec![8, 8, 4]);
    assert_eq!((c.switch_links, c.nic_links), (32, 8));
    assert_eq!(t.leaves.len(), 4);
}

#[test]
fn fat_tree_switch_degrees_are_k() {
    // Every switch of a full k-ary fat-tree uses exactly k ports (Al-Fares et al. 2008).
    let k = 4;
    let t = ok(&dgx(2), fat_tree(k));
    for (i, n) in t.nodes.iter().enumerate() {
        if let NodeKind::Switch { .. } = n.kind {
            assert_eq!(
                t.out_links(NodeId(i as u32)).len(),
                k as usize,
                "switch {i}"
            );
        }
    }
}

#[test]
fn rail_counts() {
    // 8 hosts × 8 rails, radix 8 → 4 host ports per leaf → ⌈8/4⌉ = 2 leaves per rail,
    // 16 leaves; radix/2 = 4 spines, each with one link to each of the 16 leaves.
    let t = ok(&dgx(8), rail(8, 16));
    assert_eq!(
        counts(&t),
        Counts {
            switches: vec![16, 4],
            switch_links: 64,
            nic_links: 64,
            hosts: 8
        }
    );
    // Rail purity: every leaf carries NICs of a single rail index, ≤ radix/2 of them.
    let mut per_leaf: std::collections::HashMap<NodeId, (HashSet<u32>, usize)> = Default::default();
    for nic in &t.nics {
        let NodeKind::Nic { index, .. } = t.node(nic.node).kind else {
            panic!("NIC record on a non-NIC node")
        };
        let e = per_leaf.entry(nic.leaf).or_default();
        e.0.insert(index);
        e.1 += 1;
    }
    assert_eq!(per_leaf.len(), 16);
    for (rails, n) in per_leaf.values() {
        assert_eq!(rails.len(), 1);
        assert_eq!(*n, 4);
    }
    // Every leaf: 4 NIC ports + 4 uplinks = radix 8.
    for &leaf in &t.leaves {
        assert_eq!(t.out_links(leaf).len(), 8);
    }
}

#[test]
fn dragonfly_counts() {
    // Kim et al., ISCA 2008: g = a·h + 1 = 9 groups of a = 4 routers, h = 2, p = 1:
    // g·a = 36 routers, g·a·(a−1)/2 = 54 local links, g·a·h/2 = 36 global links,
    // exactly one global link per group pair (g·(g−1)/2 = 36).
    let (g, a, p, h) = (9usize, 4usize, 1u32, 2usize);
    let t = ok(
        &cluster(9, 4, 4),
        dragonfly(g as u32, a as u32, p, h as u32),
    );
    let c = counts(&t);
    assert_eq!(c.switches, vec![g * a]);
    assert_eq!(c.nic_links, 36);
    assert_eq!(c.switch_links, g * a * (a - 1) / 2 + g * a * h / 2);
    let group = router_groups(&t, a);
    let (mut local, mut pairs) = (0, Vec::new());
    for l in t.links.iter().step_by(2) {
        if let (Some(&x), Some(&y)) = (group.get(&l.from), group.get(&l.to)) {
            if x == y {
                local += 1;
            } else {
                pairs.push((x.min(y), x.max(y)));
            }
        }
    }
    assert_eq!(local, g * a * (a - 1) / 2);
    assert_eq!(pairs.len(), g * a * h / 2);
    pairs.sort_unstable();
    pairs.dedup();
    assert_eq!(pairs.len(), g * (g - 1) / 2, "one link per group pair");
    // Every router: p NIC ports + (a−1) local + h global.
    for &r in group.keys() {
        assert_eq!(t.out_links(r).len(), p as usize + (a - 1) + h);
    }
}

/// Group of each dragonfly router: routers are created in order, `a` per group.
fn router_groups(t: &Topology, a: usize) -> std::collections::HashMap<NodeId, usize> {
    (0..t.nodes.len() as u32)
        .map(NodeId)
        .filter(|&n| is_switch(t, n))
        .enumerate()
        .map(|(i, n)| (n, i / a))
        .collect()
}

#[test]
fn dragonfly_fewer_groups_use_every_port() {
    // g = 3 < a·h + 1 = 5 (a = 2, h = 2): every pair linked at least once and all
    // g·a·h = 12 global ports used → 6 global links (2 per pair).
    let t = ok(&cluster(3, 4, 4), dragonfly(3, 2, 2, 2));
    let group = router_groups(&t, 2);
    let mut pairs = Vec::new();
    for l in t.links.iter().step_by(2) {
        if let (Some(&x), Some(&y)) = (group.get(&l.from), group.get(&l.to)) {
            if x != y {
                pairs.push((x.min(y), x.max(y)));
            }
        }
    }
    pairs.sort_unstable();
    assert_eq!(pairs, vec![(0, 1), (0, 1), (0, 2), (0, 2), (1, 2), (1, 2)]);
}

// ---------------------------------------------------------------------------
// Bisection bandwidth by max-flow
// ---------------------------------------------------------------------------

/// Dinic's max-flow on a directed graph with u64 capacities.
struct MaxFlow {
    adj: Vec<Vec<usize>>,
    to: Vec<usize>,
    cap: Vec<u64>,
}

impl MaxFlow {
    fn new(n: usize) -> MaxFlow {
        MaxFlow {
            adj: vec![Vec::new(); n],
            to: Vec::new(),
            cap: Vec::new(),
        }
    }

    fn add_edge(&mut self, u: usize, v: usize, c: u64) {
        self.adj[u].push(self.to.len());
        self.to.push(v);
        self.cap.push(c);
        self.adj[v].push(self.to.len());
        self.to.push(u);
        self.cap.push(0);
    }

    fn bfs(&self, s: usize, level: &mut [i32]) {
        level.fill(-1);
        level[s] = 0;
        let mut q = std::collections::VecDeque::from([s]);
        while let Some(u) = q.pop_front() {
            for &e in &self.adj[u] {
                let v = self.to[e];
                if self.cap[e] > 0 && level[v] < 0 {
                    level[v] = level[u] + 1;
                    q.push_back(v);
                }
            }
        }
    }

    fn dfs(&mut self, u: usize, t: usize, f: u64, level: &[i32], it: &mut [usize]) -> u64 {
        if u == t {
            return f;
        }
        while it[u] < self.adj[u].len() {
            let e = self.adj[u][it[u]];
            let v = self.to[e];
            if self.cap[e] > 0 && level[v] == level[u] + 1 {
                let d = self.dfs(v, t, f.min(self.cap[e]), level, it);
                if d > 0 {
                    self.cap[e] -= d;
                    self.cap[e ^ 1] += d;
                    return d;
                }
            }
            it[u] += 1;
        }
        0
    }

    fn run(&mut self, s: usize, t: usize) -> u64 {
        let n = self.adj.len();
        let (mut level, mut total) = (vec![-1; n], 0);
        loop {
            self.bfs(s, &mut level);
            if level[t] < 0 {
                return total;
            }
            let mut it = vec![0; n];
            loop {
                let f = self.dfs(s, t, u64::MAX, &level, &mut it);
                if f == 0 {
                    break;
                }
                total += f;
            }
        }
    }
}

/// Max-flow (bits/s) over the network links of `t` (capacity = link rate, in the
/// direction of each link) from a super-source feeding the first half of the NICs
/// (in host-major order) to a super-sink draining the second half.
fn bisection(t: &Topology) -> u64 {
    let n = t.nodes.len();
    let (s, sink) = (n, n + 1);
    let mut mf = MaxFlow::new(n + 2);
    for (i, l) in t.links.iter().enumerate() {
        if l.kind == LinkKind::Network && t.is_link_up(LinkId(i as u32)) {
            mf.add_edge(l.from.0 as usize, l.to.0 as usize, l.rate.bps());
        }
    }
    let half = t.nics.len() / 2;
    for (i, nic) in t.nics.iter().enumerate() {
        if i < half {
            mf.add_edge(s, nic.node.0 as usize, u64::MAX / 4);
        } else {
            mf.add_edge(nic.node.0 as usize, sink, u64::MAX / 4);
        }
    }
    mf.run(s, sink)
}

#[test]
fn max_flow_sanity() {
    // Two 400G parallel paths s→a→t, s→b→t with a 100G middle: flow = 400 + 100.
    let mut mf = MaxFlow::new(4);
    mf.add_edge(0, 1, 400);
    mf.add_edge(1, 3, 400);
    mf.add_edge(0, 2, 400);
    mf.add_edge(2, 3, 100);
    assert_eq!(mf.run(0, 3), 500);
    // Single switch: N NICs, the crossbar is not a bottleneck → N·B/2.
    let t = ok(&dgx(2), TopologySpec::SingleSwitch);
    assert_eq!(bisection(&t), 16 * B / 2);
}

#[test]
fn leaf_spine_bisection() {
    // Oversubscribed Clos: N·B/(2·oversub) for an even number of full leaves.
    // 3:1 at radix 8: 24 NICs on 4 full leaves of 6 → 24·B/6 = 4·B (the 4 uplinks
    // of the 2 source-side leaves).
    let t = ok(&dgx(3), leaf_spine(8, 3.0));
    assert_eq!(bisection(&t), 24 * B / (2 * 3));
    // Non-blocking (1:1) at radix 8: 32 NICs on 8 full leaves → 32·B/2.
    let t = ok(&dgx(4), leaf_spine(8, 1.0));
    assert_eq!(bisection(&t), 32 * B / 2);
}

#[test]
fn fat_tree_bisection() {
    // Full bisection bandwidth: k³/8·B (Al-Fares et al., SIGCOMM 2008: the fat-tree
    // is rearrangeably non-blocking, k³/4 hosts at line rate). k = 4 → 8·B,
    // k = 6 → 27·B (the first half of the NICs is exactly the first k/2 pods).
    let t = ok(&dgx(2), fat_tree(4));
    assert_eq!(bisection(&t), 4 * 4 * 4 / 8 * B);
    let t = ok(&cluster(9, 6, 6), fat_tree(6));
    assert_eq!(bisection(&t), 6 * 6 * 6 / 8 * B);
}

#[test]
fn rail_bisection() {
    // Rail-optimized, 2 leaves per rail, full leaves, radix/2 uplinks per leaf:
    // non-blocking → N_nics·B/2 = 64·B/2 (NVIDIA DGX SuperPOD: full fat-tree per rail).
    let t = ok(&dgx(8), rail(8, 16));
    assert_eq!(bisection(&t), 64 * B / 2);
}

#[test]
fn dragonfly_bisection() {
    // g even, one global link per group pair (g = a·h + 1): cutting the groups in
    // halves crosses (g/2)² global links → (g/2)²·B (Kim et al. 2008). The globals
    // are the bottleneck here: each half injects (g/2)·a·p·B > (g/2)²·B.
    // g = 4, a = 3, h = 1, p = 2: 24 NICs, 12·B injected per half, 4·B bisection.
    let t = ok(&cluster(3, 8, 8), dragonfly(4, 3, 2, 1));
    assert_eq!(bisection(&t), 2 * 2 * B);
    // g = 6, a = 5, h = 1, p = 2: 60 NICs, 30·B injected per half, 9·B bisection.
    let t = ok(&cluster(15, 4, 4), dragonfly(6, 5, 2, 1));
    assert_eq!(bisection(&t), 3 * 3 * B);
}

// ---------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------

/// Routes `src → dst` with `hash`, checking the path is a connected chain of up links
/// from the source GPU's node to the destination's. None if unreachable.
fn path(t: &Topology, src: u32, dst: u32, hash: u64) -> Option<Vec<LinkId>> {
    let mut p = Vec::new();
    if !t.route(GpuId(src), GpuId(dst), hash, &mut p) {
        return None;
    }
    let mut at = t.gpus[src as usize].node;
    for &l in &p {
        assert!(t.is_link_up(l), "route uses a down link");
        assert_eq!(t.link(l).from, at, "route is not a chain");
        at = t.link(l).to;
    }
    assert_eq!(at, t.gpus[dst as usize].node);
    Some(p)
}

/// Every ordered GPU pair is reachable; returns the paths (hash = pair index).
fn all_pairs(t: &Topology) -> Vec<Vec<LinkId>> {
    let n = t.num_gpus();
    let mut out = Vec::new();
    for s in 0..n {
        for d in 0..n {
            if s == d {
                continue;
            }
            let h = u64::from(s) * 1_000_003 + u64::from(d);
            match path(t, s, d, h) {
                Some(p) => out.push(p),
                None => panic!("{}: GPU {s} → {d} unreachable", t.shape),
            }
        }
    }
    out
}

fn small_instances() -> Vec<(ClusterSpec, TopologySpec)> {
    vec![
        (dgx(2), TopologySpec::SingleSwitch),
        (dgx(3), leaf_spine(8, 3.0)),
        (dgx(2), fat_tree(4)),
        (cluster(8, 2, 2), fat_tree(4)),
        (dgx(8), rail(8, 16)),
        (cluster(5, 4, 4), rail(4, 12)),
        (cluster(3, 8, 8), dragonfly(4, 3, 2, 1)),
        (cluster(9, 4, 4), dragonfly(9, 4, 1, 2)),
        (cluster(3, 4, 4), dragonfly(3, 2, 2, 2)),
    ]
}

#[test]
fn every_gpu_pair_reachable() {
    // Shortest-path routing on a connected graph reaches every pair.
    for (c, spec) in small_instances() {
        let t = ok(&c, spec);
        assert_eq!(
            all_pairs(&t).len() as u32,
            t.num_gpus() * (t.num_gpus() - 1)
        );
    }
}

/// Kinds of the nodes a path visits, start included.
fn node_kinds(t: &Topology, p: &[LinkId]) -> Vec<String> {
    let mut v = vec![kind_name(t, t.link(p[0]).from)];
    v.extend(p.iter().map(|&l| kind_name(t, t.link(l).to)));
    v
}

fn kind_name(t: &Topology, n: NodeId) -> String {
    match t.node(n).kind {
        NodeKind::Gpu { .. } => "gpu".into(),
        NodeKind::NvSwitch { .. } => "nvs".into(),
        NodeKind::Nic { .. } => "nic".into(),
        NodeKind::Switch { tier } => format!("t{tier}"),
    }
}

#[test]
fn fat_tree_path_shapes() {
    // k = 4, 2 DGX hosts: host 0's NICs fill pods 0–1, host 1's pods 2–3.
    let t = ok(&dgx(2), fat_tree(4));
    // Inter-pod (GPU 0 in pod 0 → GPU 8 in pod 2), Al-Fares et al. 2008 (k = 4 example):
    // GPU→PCIe→NIC→edge→agg→core→agg→edge→NIC→GPU, 8 links.
    let p = path(&t, 0, 8, 7).unwrap();
    assert_eq!(
        node_kinds(&t, &p),
        ["gpu", "nic", "t0", "t1", "t2", "t1", "t0", "nic", "gpu"]
    );
    // Latency: 2 PCIe + 6 network links + 5 switch traversals.
    let want = 2 * 200 + 6 * 500 + 5 * 300;
    assert_eq!(t.path_latency(&p), SimTime::from_ns(want));
    // Intra-pod, other edge: 2 NICs per host → host h alone on edge h, so host 0
    // (edge 0) → host 1 (edge 1) goes up to an agg and down.
    let t2 = ok(&cluster(8, 2, 2), fat_tree(4));
    let p = path(&t2, 0, 2, 7).unwrap();
    assert_eq!(
        node_kinds(&t2, &p),
        ["gpu", "nic", "t0", "t1", "t0", "nic", "gpu"]
    );
    // Same host: NVLink through the NVSwitch.
    let p = path(&t, 0, 1, 7).unwrap();
    assert_eq!(node_kinds(&t, &p), ["gpu", "nvs", "gpu"]);
    // Same edge, other host (1 NIC per host: hosts 0 and 1 share edge 0): turn at edge.
    let t = ok(&cluster(16, 1, 1), fat_tree(4));
    let p = path(&t, 0, 1, 7).unwrap();
    assert_eq!(node_kinds(&t, &p), ["gpu", "nic", "t0", "nic", "gpu"]);
}

fn distinct_paths(t: &Topology, s: u32, d: u32, hashes: u64) -> usize {
    (0..hashes)
        .map(|h| path(t, s, d, fabricsim::topology::mix64(h)).unwrap())
        .collect::<HashSet<_>>()
        .len()
}

#[test]
fn fat_tree_ecmp_diversity() {
    // Inter-pod in a k = 4 fat-tree: (k/2)² = 4 shortest paths (one per core);
    // intra-pod across edges: k/2 = 2 (one per agg). 256 flow hashes find them all.
    let t = ok(&dgx(2), fat_tree(4));
    assert_eq!(distinct_paths(&t, 0, 8, 256), 4);
    // 2 NICs per host: host 0 on edge 0, host 1 on edge 1 of pod 0.
    let t = ok(&cluster(8, 2, 2), fat_tree(4));
    assert_eq!(distinct_paths(&t, 0, 2, 256), 2);
    assert_eq!(distinct_paths(&t, 0, 4, 256), 4);
    // k = 6: (k/2)² = 9 inter-pod paths.
    let t = ok(&cluster(9, 6, 6), fat_tree(6));
    assert_eq!(distinct_paths(&t, 0, 53, 1024), 9);
}

#[test]
fn rail_same_rail_stays_under_one_leaf() {
    // 8 DGX hosts, radix 8: hosts 0–3 share the rail-r leaf 0, hosts 4–7 leaf 1.
    let t = ok(&dgx(8), rail(8, 16));
    for r in 0..8u32 {
        for (hs, hd) in [(0u32, 1u32), (0, 3), (5, 6)] {
            let (s, d) = (hs * 8 + r, hd * 8 + r);
            for h in 0..32 {
                let p = path(&t, s, d, h).unwrap();
                assert_eq!(node_kinds(&t, &p), ["gpu", "nic", "t0", "nic", "gpu"]);
                let leaf = t.link(p[1]).to;
                assert_eq!(leaf, t.nics[(hs * 8 + r) as usize].leaf);
                assert_eq!(leaf, t.nics[(hd * 8 + r) as usize].leaf);
            }
        }
    }
    // Same rail, other leaf (host 0 → host 4): via a spine; 4 spines → 4 ECMP paths.
    let p = path(&t, 0, 32, 1).unwrap();
    assert_eq!(
        node_kinds(&t, &p),
        ["gpu", "nic", "t0", "t1", "t0", "nic", "gpu"]
    );
    assert_eq!(distinct_paths(&t, 0, 32, 256), 4);
    // Cross-rail (GPU 0 of host 0 → GPU 1 of host 1): also over a spine.
    let p = path(&t, 0, 9, 1).unwrap();
    assert_eq!(
        node_kinds(&t, &p),
        ["gpu", "nic", "t0", "t1", "t0", "nic", "gpu"]
    );
}

#[test]
fn dragonfly_minimal_paths() {
    // g = 4, a = 3, h = 1, p = 2 (global links as in the module doc's rounds).
    // Minimal routing between groups: at most local–global–local, i.e. 4 routers.
    let t = ok(&cluster(3, 8, 8), dragonfly(4, 3, 2, 1));
    for p in all_pairs(&t) {
        let switches = node_kinds(&t, &p)
            .iter()
            .filter(|k| k.starts_with('t'))
            .count();
        assert!(
            switches <= 4,
            "{switches} routers on a minimal dragonfly path"
        );
    }
}

/// Takes down the switch–switch link `down` (both directions): every pair stays
/// reachable and no route uses it; bringing it back restores every route.
fn check_fault(t: &mut Topology, down: LinkId) {
    let before = all_pairs(t);
    assert!(before.iter().any(|p| p.contains(&down)), "link was in use");
    t.set_link_up(down, false);
    let rev = t.reverse(down);
    let during = all_pairs(t);
    for p in &during {
        assert!(!p.contains(&down) && !p.contains(&rev));
    }
    t.set_link_up(down, true);
    assert_eq!(
        all_pairs(t),
        before,
        "set_link_up(true) restores the routes"
    );
}

/// First switch→switch link of the route `s → d`.
fn first_uplink(t: &Topology, s: u32, d: u32) -> LinkId {
    let p = path(t, s, d, 3).unwrap();
    *p.iter()
        .find(|&&l| is_switch(t, t.link(l).from) && is_switch(t, t.link(l).to))
        .expect("route crosses a switch-switch link")
}

#[test]
fn link_fault_reroutes_and_restores() {
    // Fat-tree k = 4: an edge→agg uplink on an inter-pod route.
    let mut t = ok(&dgx(2), fat_tree(4));
    let l = first_uplink(&t, 0, 8);
    check_fault(&mut t, l);
    // Leaf-spine 1:1, rail, dragonfly: the uplink of a cross-leaf route.
    let mut t = ok(&dgx(4), leaf_spine(8, 1.0));
    let l = first_uplink(&t, 0, 31);
    check_fault(&mut t, l);
    let mut t = ok(&dgx(8), rail(8, 16));
    let l = first_uplink(&t, 0, 63);
    check_fault(&mut t, l);
    // Dragonfly with one global link per group pair: losing it forces a detour
    // through a third group (two global hops), still reachable.
    let mut t = ok(&cluster(3, 8, 8), dragonfly(4, 3, 2, 1));
    let (s, d) = (0, 12); // router 0 (group 0) → router 6 (group 2)
    let before = path(&t, s, d, 3).unwrap().len();
    let group = router_groups(&t, 3);
    let global = *path(&t, s, d, 3)
        .unwrap()
        .iter()
        .find(
            |&&l| match (group.get(&t.link(l).from), group.get(&t.link(l).to)) {
                (Some(x), Some(y)) => x != y,
                _ => false,
            },
        )
        .unwrap();
    t.set_link_up(global, false);
    let detour = path(&t, s, d, 3).expect("reachable around a failed global link");
    assert!(detour.len() > before);
    t.set_link_up(global, true);
    let mut t2 = t.clone();
    check_fault(&mut t2, global);
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn fat_tree_errors() {
    for k in [0, 1, 3, 5] {
        assert_eq!(err(&dgx(1), fat_tree(k)).field, "topology.k", "k = {k}");
    }
    // 17 NICs > 4³/4 = 16: k = 6 (54 ports) is the smallest that fits.
    let e = err(&cluster(17, 1, 1), fat_tree(4));
    assert_eq!(e.field, "topology.k");
    assert!(e.message.contains("k = 6"), "{}", e.message);
    // Absurd k: an error, not an allocation of 5k²/4 switches.
    assert_eq!(err(&dgx(1), fat_tree(u32::MAX)).field, "topology.k");
    assert_eq!(err(&dgx(1), fat_tree(u32::MAX - 1)).field, "topology.k");
    assert_eq!(err(&dgx(1), fat_tree(1 << 16)).field, "topology.k");
}

#[test]
fn rail_errors() {
    for radix in [0, 1, 7] {
        assert_eq!(err(&dgx(2), rail(radix, 64)).field, "topology.radix");
    }
    // 8 rails × ⌈8/4⌉ = 16 leaves, but the spines have 15 ports.
    let e = err(&dgx(8), rail(8, 15));
    assert_eq!(e.field, "topology.spine_radix");
    assert!(e.message.contains("16"), "{}", e.message);
    assert_eq!(
        err(&dgx(2), rail(u32::MAX - 1, u32::MAX)).field,
        "topology.radix"
    );
}

#[test]
fn dragonfly_errors() {
    let c = cluster(3, 8, 8);
    for (spec, field) in [
        (dragonfly(0, 3, 2, 1), "topology.groups"),
        (dragonfly(4, 0, 2, 1), "topology.routers_per_group"),
        (dragonfly(4, 3, 0, 1), "topology.hosts_per_router"),
        (dragonfly(4, 3, 2, 0), "topology.global_links_per_router"),
        // g = 5 > a·h + 1 = 4: some group pair could not be linked.
        (dragonfly(5, 3, 2, 1), "topology.groups"),
    ] {
        assert_eq!(err(&c, spec.clone()).field, field, "{spec:?}");
    }
    // 24 NICs > g·a·p = 4·3·1 = 12 ports; hosts_per_router = 2 would fit.
    let e = err(&c, dragonfly(4, 3, 1, 1));
    assert_eq!(e.field, "topology.hosts_per_router");
    assert!(
        e.message.contains("12") && e.message.contains("= 2"),
        "{}",
        e.message
    );
    // Absurd sizes are refused, not allocated.
    let e = err(&c, dragonfly(1, u32::MAX, u32::MAX, u32::MAX));
    assert_eq!(e.field, "topology.routers_per_group");
    assert_eq!(
        err(&c, dragonfly(u32::MAX, u32::MAX, 1, 1)).field,
        "topology.routers_per_group"
    );
}

#[test]
fn leaf_spine_and_cluster_errors() {
    assert_eq!(err(&dgx(1), leaf_spine(1, 1.0)).field, "topology.radix");
    assert_eq!(
        err(&dgx(1), leaf_spine(8, 0.0)).field,
        "topology.oversubscription"
    );
    // 72 NICs need 18 leaves of 4 host ports, but an 8-port spine reaches 8.
    assert_eq!(err(&dgx(9), leaf_spine(8, 1.0)).field, "topology.radix");
    // Absurd radix: an error, not 2³¹ spines.
    assert_eq!(
        err(&dgx(1), leaf_spine(u32::MAX, 1.0)).field,
        "topology.radix"
    );
    assert_eq!(
        err(&dgx(1), leaf_spine(1 << 26, 1.0)).field,
        "topology.radix"
    );
    assert_eq!(
        err(&cluster(0, 8, 8), TopologySpec::SingleSwitch).field,
        "cluster.nodes"
    );
}

// ---------------------------------------------------------------------------
// Robustness: random small parameters never panic, and whatever builds routes.
// ---------------------------------------------------------------------------

mod random {
    use super::*;
    use proptest::prelude::*;

    fn spec() -> impl Strategy<Value = TopologySpec> {
        prop_oneof![
            Just(TopologySpec::SingleSwitch),
            (0u32..11, prop::sample::select(vec![0.5, 1.0, 2.0, 3.0]))
                .prop_map(|(r, o)| leaf_spine(r, o)),
            (0u32..9).prop_map(fat_tree),
            (0u32..11, 0u32..25).prop_map(|(r, s)| rail(r, s)),
            (0u32..8, 0u32..5, 0u32..4, 0u32..4).prop_map(|(g, a, p, h)| dragonfly(g, a, p, h)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn builds_or_errs_and_routes(hosts in 0u32..7, gpus in 1u32..5, nics in 1u32..5, spec in spec()) {
            let c = cluster(hosts, gpus, nics);
            match build(&c, &fabric(), &spec) {
                Ok(t) => {
                    prop_assert_eq!(t.nics.len() as u32, hosts * nics);
                    prop_assert_eq!(t.num_gpus(), hosts * gpus);
                    all_pairs(&t);
                }
                Err(e) => {
                    prop_assert!(e.field.starts_with("topology.") || e.field.starts_with("cluster."));
                    prop_assert!(!e.message.is_empty());
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Kim et al., ISCA 2008: with g ≤ a·h + 1 every pair of groups gets a global link;
        /// any NIC count up to g·a·p builds and every GPU pair routes.
        #[test]
        fn valid_dragonfly_links_every_group_pair(
            a in 1u32..5, h in 1u32..4, p in 1u32..4, gsel in 0u32..1000, nics in 1u32..4, fill in 0u32..1000,
        ) {
            let g = 1 + gsel % (a * h + 1);
            let hosts = 1 + fill % (g * a * p / nics).max(1);
            prop_assume!(hosts * nics <= g * a * p);
            let t = ok(&cluster(hosts, 2, nics), dragonfly(g, a, p, h));
            let group = router_groups(&t, a as usize);
            let mut pairs = HashSet::new();
            let mut global_ports = vec![0u32; (g * a) as usize];
            for l in t.links.iter().step_by(2) {
                if let (Some(&x), Some(&y)) = (group.get(&l.from), group.get(&l.to)) {
                    if x != y {
                        pairs.insert((x.min(y), x.max(y)));
                        for n in [l.from, l.to] {
                            let r = t.nodes[..n.0 as usize].iter().filter(|m| matches!(m.kind, NodeKind::Switch { .. })).count();
                            global_ports[r] += 1;
                        }
                    }
                }
            }
            prop_assert_eq!(pairs.len() as u32, g * (g - 1) / 2);
            prop_assert!(global_ports.iter().all(|&n| n <= h), "a router exceeds h global ports");
            all_pairs(&t);
        }
    }
}
