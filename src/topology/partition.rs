//! Splitting a fabric into partitions for conservative parallel simulation
//! (docs/parallel-engine.md): each partition is simulated by one thread or
//! one MPI rank, and what one does reaches another only over a **cut link**,
//! no sooner than that link's latency. The smallest such latency is the
//! **lookahead**: the width of the time windows in which partitions run
//! without hearing from each other (Nicol's YAWNS; ns-3's distributed
//! simulator uses the minimum cross-rank link delay the same way).
//!
//! Hosts stay whole: a host's GPUs, NVSwitch and NICs are joined by NVLink and
//! PCIe links of a few hundred nanoseconds, and cutting one would shrink the
//! lookahead for every window. Hosts are ordered by the edge switch their
//! first NIC hangs from (builders number switches pod by pod, group by group),
//! then dealt into `parts` contiguous runs of equal host count (± 1), so a
//! pod or a dragonfly group lands in one partition when the counts divide.
//! Each switch then joins the partition it has the most links to, edge tier
//! first; ties go to the partition with the fewest nodes so far, which spreads
//! a fat-tree's cores and a leaf-spine's spines evenly.

use super::{LinkId, LinkKind, NodeId, NodeKind, Topology};
use crate::units::SimTime;

/// Nodes assigned to partitions, with the links that cross between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partitioning {
    /// Number of partitions.
    pub parts: u32,
    /// Per node ([`NodeId`] index): its partition, `0..parts`.
    pub of_node: Vec<u32>,
    /// Directed links whose two ends lie in different partitions, by id.
    pub cut: Vec<LinkId>,
    /// Smallest propagation latency over the cut links, ps; `None` without a
    /// cut (one partition, or partitions that share no link).
    pub lookahead: Option<SimTime>,
    /// Hosts per partition.
    pub hosts: Vec<u32>,
}

impl Partitioning {
    /// The partition of node `n`.
    pub fn of(&self, n: NodeId) -> u32 {
        self.of_node[n.0 as usize]
    }
}

/// Why a fabric cannot be split as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// Zero partitions.
    #[error("0 partitions asked for; expected at least 1")]
    NoParts,
    /// More partitions than hosts: a partition without a host has no work of
    /// its own and hosts are never split.
    #[error("{parts} partitions asked for but the fabric has {hosts} hosts; expected at most one partition per host")]
    MoreThanHosts {
        /// Partitions asked for.
        parts: u32,
        /// Hosts in the fabric.
        hosts: u32,
    },
    /// A cut link has no latency: the partitions on its two ends could not
    /// run a window without hearing from each other.
    #[error("link {link} ({from} -> {to}) joins two partitions and has zero latency; a conservative parallel run needs every cut link to take time")]
    ZeroLatencyCut {
        /// The link's id.
        link: u32,
        /// Its sending node.
        from: u32,
        /// Its receiving node.
        to: u32,
    },
}

/// The host a node belongs to, or `None` for a switch.
fn host_of_node(topo: &Topology, kind: &NodeKind) -> Option<u32> {
    match *kind {
        NodeKind::Gpu { gpu } => Some(topo.host_of(gpu)),
        NodeKind::NvSwitch { host } | NodeKind::Nic { host, .. } => Some(host),
        NodeKind::Switch { .. } => None,
    }
}

/// Splits `topo` into `parts` partitions (see the module doc).
pub fn partition(topo: &Topology, parts: u32) -> Result<Partitioning, PartitionError> {
    if parts == 0 {
        return Err(PartitionError::NoParts);
    }
    let hosts = topo.hosts;
    if parts > hosts.max(1) {
        return Err(PartitionError::MoreThanHosts { parts, hosts });
    }
    let n = topo.nodes.len();
    // Each host's home: the lowest-numbered switch one of its NICs links to.
    let mut home = vec![u32::MAX; hosts as usize];
    for (i, node) in topo.nodes.iter().enumerate() {
        if let NodeKind::Nic { host, .. } = node.kind {
            for &l in topo.out_links(NodeId(i as u32)) {
                let to = topo.links[l.0 as usize].to;
                if matches!(topo.nodes[to.0 as usize].kind, NodeKind::Switch { .. }) {
                    let h = &mut home[host as usize];
                    *h = (*h).min(to.0);
                }
            }
        }
    }
    let mut order: Vec<u32> = (0..hosts).collect();
    order.sort_by_key(|&h| (home[h as usize], h));
    let mut part_of_host = vec![0u32; hosts as usize];
    let mut host_count = vec![0u32; parts as usize];
    for (i, &h) in order.iter().enumerate() {
        // i·parts/hosts deals equal runs, the first ones a host longer
        let p = (i as u64 * parts as u64 / hosts.max(1) as u64) as u32;
        part_of_host[h as usize] = p;
        host_count[p as usize] += 1;
    }
    const NONE: u32 = u32::MAX;
    let mut of_node = vec![NONE; n];
    let mut load = vec![0u64; parts as usize];
    let mut switches: Vec<(u8, u32)> = Vec::new();
    for (i, node) in topo.nodes.iter().enumerate() {
        match host_of_node(topo, &node.kind) {
            Some(h) => {
                let p = part_of_host[h as usize];
                of_node[i] = p;
                load[p as usize] += 1;
            }
            None => {
                let NodeKind::Switch { tier } = node.kind else {
                    unreachable!("host_of_node is None only for switches")
                };
                switches.push((tier, i as u32));
            }
        }
    }
    switches.sort_unstable();
    // Switches join the partition they have the most links to; passes in
    // (tier, id) order until every switch with an assigned neighbour is placed
    // (file topologies may number tiers any way), the rest to the lightest.
    let mut votes = vec![0u32; parts as usize];
    let mut pending = switches;
    loop {
        let before = pending.len();
        pending.retain(|&(_, s)| {
            votes.iter_mut().for_each(|v| *v = 0);
            let mut any = false;
            for &l in topo.out_links(NodeId(s)) {
                let far = topo.links[l.0 as usize].to.0 as usize;
                if of_node[far] != NONE {
                    votes[of_node[far] as usize] += 1;
                    any = true;
                }
            }
            if !any {
                return true;
            }
            let p = (0..parts as usize)
                .max_by(|&a, &b| {
                    votes[a]
                        .cmp(&votes[b])
                        .then(load[b].cmp(&load[a]))
                        .then(b.cmp(&a))
                })
                .expect("parts >= 1");
            of_node[s as usize] = p as u32;
            load[p] += 1;
            false
        });
        if pending.is_empty() || pending.len() == before {
            break;
        }
    }
    for (_, s) in pending {
        let p = (0..parts as usize)
            .min_by_key(|&p| (load[p], p))
            .expect("parts >= 1");
        of_node[s as usize] = p as u32;
        load[p] += 1;
    }
    let mut cut = Vec::new();
    let mut lookahead: Option<SimTime> = None;
    for (i, l) in topo.links.iter().enumerate() {
        if of_node[l.from.0 as usize] == of_node[l.to.0 as usize] {
            continue;
        }
        if l.latency == SimTime::ZERO {
            return Err(PartitionError::ZeroLatencyCut {
                link: i as u32,
                from: l.from.0,
                to: l.to.0,
            });
        }
        debug_assert_eq!(l.kind, LinkKind::Network, "hosts are never split");
        cut.push(LinkId(i as u32));
        lookahead = Some(lookahead.map_or(l.latency, |a| a.min(l.latency)));
    }
    Ok(Partitioning {
        parts,
        of_node,
        cut,
        lookahead,
        hosts: host_count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    fn topo(hosts: u32, gpus: u32, spec: TopologySpec) -> Topology {
        crate::topology::test_cluster(hosts, gpus, &spec)
    }

    /// Every node's partition agrees with its host's, and the cut is exactly
    /// the links whose ends disagree.
    fn check_invariants(t: &Topology, p: &Partitioning) {
        let mut host_part = vec![u32::MAX; t.hosts as usize];
        for (i, node) in t.nodes.iter().enumerate() {
            assert!(p.of_node[i] < p.parts);
            if let Some(h) = host_of_node(t, &node.kind) {
                let hp = &mut host_part[h as usize];
                if *hp == u32::MAX {
                    *hp = p.of_node[i];
                }
                assert_eq!(*hp, p.of_node[i], "host {h} split across partitions");
            }
        }
        let cut: Vec<LinkId> = (0..t.links.len() as u32)
            .map(LinkId)
            .filter(|l| {
                let k = &t.links[l.0 as usize];
                p.of(k.from) != p.of(k.to)
            })
            .collect();
        assert_eq!(cut, p.cut);
        assert_eq!(p.hosts.iter().sum::<u32>(), t.hosts);
        let (lo, hi) = (p.hosts.iter().min().unwrap(), p.hosts.iter().max().unwrap());
        assert!(hi - lo <= 1, "host counts {:?}", p.hosts);
    }

    #[test]
    fn a_fat_tree_splits_by_pod_and_spreads_its_cores() {
        // k = 4: 4 pods of 2 edge + 2 aggregation switches and 4 hosts, 4 cores.
        // Four partitions are the four pods; each takes one core (ties go to the
        // lightest), so the cut is the 16 aggregation-core cables minus the 4
        // inside a partition, both directions: 24 directed links, all 50 ns.
        let t = topo(16, 1, TopologySpec::FatTree { k: 4 });
        let p = partition(&t, 4).unwrap();
        check_invariants(&t, &p);
        assert_eq!(p.hosts, vec![4, 4, 4, 4]);
        let mut tiers = vec![[0u32; 3]; 4];
        for (i, node) in t.nodes.iter().enumerate() {
            if let NodeKind::Switch { tier } = node.kind {
                tiers[p.of_node[i] as usize][tier as usize] += 1;
            }
        }
        assert_eq!(tiers, vec![[2, 2, 1]; 4]);
        // every edge switch sits with its own hosts: no NIC link is cut
        assert!(p
            .cut
            .iter()
            .all(|l| matches!(t.nodes[t.links[l.0 as usize].from.0 as usize].kind, NodeKind::Switch { tier } if tier >= 1)));
        assert_eq!(p.cut.len(), 24);
        assert_eq!(p.lookahead, Some(SimTime::from_ns(50)));
    }

    #[test]
    fn one_partition_cuts_nothing() {
        let t = topo(8, 2, TopologySpec::FatTree { k: 4 });
        let p = partition(&t, 1).unwrap();
        check_invariants(&t, &p);
        assert!(p.cut.is_empty());
        assert_eq!(p.lookahead, None);
        assert!(p.of_node.iter().all(|&x| x == 0));
    }

    #[test]
    fn a_dragonfly_splits_by_group() {
        // 4 groups of 2 routers with 2 hosts each: 4 partitions, one group each
        // (routers are numbered group by group); only global links are cut.
        let t = topo(
            16,
            1,
            TopologySpec::Dragonfly {
                groups: 4,
                routers_per_group: 2,
                hosts_per_router: 2,
                global_links_per_router: 2,
            },
        );
        let p = partition(&t, 4).unwrap();
        check_invariants(&t, &p);
        let routers: Vec<u32> = t
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.kind, NodeKind::Switch { .. }))
            .map(|(i, _)| p.of_node[i])
            .collect();
        assert_eq!(routers, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        for l in &p.cut {
            let k = &t.links[l.0 as usize];
            assert!(matches!(
                t.nodes[k.from.0 as usize].kind,
                NodeKind::Switch { .. }
            ));
            assert!(matches!(
                t.nodes[k.to.0 as usize].kind,
                NodeKind::Switch { .. }
            ));
        }
    }

    #[test]
    fn uneven_counts_stay_balanced_and_hosts_whole() {
        // 8 GPUs per host (NVSwitch, PCIe, 8 NICs): 3 partitions of 16 hosts
        // on a leaf-spine cut leaves, never hosts.
        let t = topo(
            16,
            8,
            TopologySpec::LeafSpine {
                radix: 16,
                oversubscription: 1.0,
            },
        );
        let p = partition(&t, 3).unwrap();
        check_invariants(&t, &p);
        assert_eq!(p.hosts, vec![6, 5, 5]);
        assert_eq!(p.lookahead, Some(SimTime::from_ns(50)));
        // a single switch: hosts split, the switch in one partition, the
        // other partition's NIC links cut
        let s = topo(8, 1, TopologySpec::SingleSwitch);
        let p = partition(&s, 2).unwrap();
        check_invariants(&s, &p);
        assert_eq!(
            p.cut.len(),
            8,
            "4 NICs away from the switch, both directions"
        );
    }

    #[test]
    fn impossible_splits_are_refused_with_the_reason() {
        let t = topo(4, 1, TopologySpec::SingleSwitch);
        assert_eq!(partition(&t, 0), Err(PartitionError::NoParts));
        let e = partition(&t, 5).unwrap_err();
        assert_eq!(e, PartitionError::MoreThanHosts { parts: 5, hosts: 4 });
        assert!(e.to_string().contains("at most one partition per host"));
        let mut z = topo(4, 1, TopologySpec::SingleSwitch);
        for l in z.links.iter_mut() {
            l.latency = SimTime::ZERO;
        }
        assert!(matches!(
            partition(&z, 2),
            Err(PartitionError::ZeroLatencyCut { .. })
        ));
    }
}
