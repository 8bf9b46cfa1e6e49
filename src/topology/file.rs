//! A fabric read from a topology file (`topology.kind = "file"`): named
//! switches and hosts and the links between them, each with its own rate and
//! latency. The file format and its checks live in `config::topology_file`;
//! this module holds the checked graph and wires it into a [`Topology`].
//!
//! Host `i` of the file is cluster node `i`; its links to switches, in file
//! order, cable its NICs 0, 1, … (so a host needs exactly
//! `cluster.nics_per_node` links). Every switch takes `fabric.switch_latency`.
//! A switch with a host cabled to it is an edge switch (tier 0); every other
//! switch's tier is its hop distance from the nearest edge switch, which is
//! what the tier summary and the oversubscription figures count by.
//!
//! Routing is the same as on every other shape: shortest switch-hop paths
//! with ECMP over equal-cost next hops ([`Topology::next_hops`]), from the
//! per-leaf distance tables the builder computes.

use std::collections::VecDeque;

use super::builder::{Multipath, ShapeCounts, ShapeEntry, ShapeKeys};
use super::{NodeId, TopologyBuilder, TopologyError, TopologySpec};
use crate::units::{Rate, SimTime};

/// One end of a link in a topology file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Endpoint {
    /// The `i`-th host of the file (cluster node `i`).
    Host(u32),
    /// The `i`-th switch of the file.
    Switch(u32),
}

/// A duplex link of a topology file: both directions at `rate` and `latency`.
#[derive(Clone, Debug, PartialEq)]
pub struct FileLink {
    /// One end.
    pub a: Endpoint,
    /// The other end (a switch when `a` is a host).
    pub b: Endpoint,
    /// Line rate each way, bits/s.
    pub rate: Rate,
    /// Propagation delay each way, picoseconds.
    pub latency: SimTime,
}

/// A checked topology file: names and links, every name known, no duplicate
/// link, every host connected (`config::topology_file` checks all of it).
#[derive(Clone, Debug, PartialEq)]
pub struct FileTopology {
    /// The file as the scenario names it, resolved against the scenario's
    /// directory (shown in results and errors).
    pub path: String,
    /// Switch names, in file order.
    pub switches: Vec<String>,
    /// Host names, in file order: host `i` is cluster node `i`.
    pub hosts: Vec<String>,
    /// The links, in file order.
    pub links: Vec<FileLink>,
}

impl FileTopology {
    /// Links of each host to its switches, in file order: entry `h` lists
    /// (switch index, rate, latency) of host `h`'s NICs 0, 1, ….
    pub fn host_links(&self) -> Vec<Vec<(u32, Rate, SimTime)>> {
        let mut per = vec![Vec::new(); self.hosts.len()];
        for l in &self.links {
            match (l.a, l.b) {
                (Endpoint::Host(h), Endpoint::Switch(s))
                | (Endpoint::Switch(s), Endpoint::Host(h)) => {
                    if let Some(v) = per.get_mut(h as usize) {
                        v.push((s, l.rate, l.latency));
                    }
                }
                _ => {}
            }
        }
        per
    }

    /// The tier of every switch: 0 for a switch with a host, else the hop
    /// count to the nearest such switch (`u8::MAX` when no edge switch is
    /// reachable, capped below it otherwise).
    pub fn switch_tiers(&self) -> Vec<u8> {
        let n = self.switches.len();
        let mut adj = vec![Vec::new(); n];
        let mut tier = vec![u8::MAX; n];
        let mut queue = VecDeque::new();
        for l in &self.links {
            match (l.a, l.b) {
                (Endpoint::Switch(a), Endpoint::Switch(b)) => {
                    adj[a as usize].push(b);
                    adj[b as usize].push(a);
                }
                (Endpoint::Host(_), Endpoint::Switch(s))
                | (Endpoint::Switch(s), Endpoint::Host(_))
                    if tier[s as usize] != 0 =>
                {
                    tier[s as usize] = 0;
                    queue.push_back(s);
                }
                _ => {}
            }
        }
        while let Some(s) = queue.pop_front() {
            let next = tier[s as usize].saturating_add(1).min(u8::MAX - 1);
            for &o in &adj[s as usize] {
                if tier[o as usize] == u8::MAX {
                    tier[o as usize] = next;
                    queue.push_back(o);
                }
            }
        }
        tier
    }

    /// Duplex switch-to-switch links.
    pub fn switch_links(&self) -> usize {
        self.links
            .iter()
            .filter(|l| matches!((l.a, l.b), (Endpoint::Switch(_), Endpoint::Switch(_))))
            .count()
    }
}

/// Wires the file's switches and links: `nics` host-major (`nics[h * per + i]`,
/// `per` NICs per host) as [`TopologyBuilder::add_hosts`] returns them.
///
/// # Errors
/// Fails on `cluster.nodes` when the file's hosts are not the cluster's nodes
/// or a host has not one link per NIC (a checked scenario never does).
pub fn build(
    b: &mut TopologyBuilder,
    nics: &[NodeId],
    per: u32,
    f: &FileTopology,
) -> Result<(), TopologyError> {
    let per = per.max(1) as usize;
    if f.hosts.len() * per != nics.len() {
        return Err(TopologyError::new(
            "cluster.nodes",
            format!(
                "the topology file {} has {} hosts, the cluster {} nodes",
                f.path,
                f.hosts.len(),
                nics.len() / per
            ),
        ));
    }
    let tiers = f.switch_tiers();
    let sw: Vec<NodeId> = tiers.iter().map(|&t| b.add_switch(t)).collect();
    // NICs host-major, as the topology's NIC table requires
    for (h, links) in f.host_links().iter().enumerate() {
        if links.len() != per {
            return Err(TopologyError::new(
                "cluster.nics_per_node",
                format!(
                    "host {:?} of {} has {} links to switches, the cluster {per} NICs per node",
                    f.hosts[h],
                    f.path,
                    links.len()
                ),
            ));
        }
        for (i, &(s, rate, latency)) in links.iter().enumerate() {
            b.attach_nic_with(nics[h * per + i], sw[s as usize], rate, latency);
        }
    }
    for l in &f.links {
        if let (Endpoint::Switch(a), Endpoint::Switch(c)) = (l.a, l.b) {
            b.add_duplex(
                sw[a as usize],
                sw[c as usize],
                l.rate,
                l.latency,
                super::LinkKind::Network,
            );
        }
    }
    Ok(())
}

/// `topology.kind = "file"`: `file`, the path of a topology file relative
/// to the scenario; it gives every link itself (one plane, its own rates and
/// latencies).
pub(crate) const ENTRY: ShapeEntry = ShapeEntry {
    kind: "file",
    keys: &["file"],
    multipath: Multipath {
        planes: false,
        dual_tor: false,
    },
    own_link_figures: true,
    parse,
};

fn parse(k: &mut dyn ShapeKeys) -> Option<TopologySpec> {
    k.file()
}

/// Every tier rate key: a file gives each link its own rate.
pub(crate) fn tier_unused() -> Option<String> {
    Some("a topology file gives every link its rate".into())
}

/// The file's switches, switch-to-switch links and edge switches (tier 0,
/// at least one).
pub(crate) fn counts(f: &FileTopology) -> ShapeCounts {
    let leaves = f.switch_tiers().iter().filter(|&&t| t == 0).count();
    ShapeCounts {
        switches: f.switches.len() as f64,
        fabric_links: f.switch_links() as f64,
        leaves: leaves.max(1) as f64,
    }
}

/// Links on the longest GPU-to-GPU path: up to the highest tier and down
/// again, plus a hop across it (a file's tiers count hops from the edge; a
/// flat mesh of edge switches is costed like a leaf-spine).
pub(crate) fn path_links(f: &FileTopology) -> f64 {
    let top = f
        .switch_tiers()
        .into_iter()
        .filter(|&t| t < u8::MAX)
        .max()
        .unwrap_or(0);
    6.0 + 2.0 * f64::from(top)
}

/// The key to blame when the switches cost more than the hosts.
pub(crate) fn size_key() -> &'static str {
    "topology.file"
}
