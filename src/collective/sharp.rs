//! In-network all-reduce: InfiniBand SHARP (Graham et al., "Scalable Hierarchical
//! Aggregation Protocol (SHArP): A Hardware Architecture for Efficient Data
//! Reduction", COMHPC 2016; NVIDIA SHARP documentation, "aggregation trees").
//!
//! **Tree.** The switches reduce. For a communicator, the *leaves* are the edge
//! switches of the ranks' NICs. The **root** is the switch whose farthest leaf is
//! the fewest hops away (ties: lowest node index) — a spine of a leaf-spine or rail
//! fabric, a core (or a pod's aggregation switch when every rank is in one pod) of
//! a fat-tree, the edge switch itself when every rank hangs off one switch. The
//! tree is the breadth-first tree from the root over switch links (a switch's
//! parent is the first, lowest-index switch that reaches it), pruned to the paths
//! of the leaves; its **depth** d is the largest leaf-to-root hop count. No
//! switch reaches every leaf → [`CollectiveError::BadCommunicator`].
//!
//! **Contributions.** Every GPU sends its *whole* buffer to the edge switch of its
//! own NIC and receives the result from it — the flat SHARP model (one SHARP
//! contribution per rank, as MPI/UCC SHARP with one process per GPU), not NCCL
//! CollNet's intra-host reduce-scatter first. Chosen because every hop of the
//! schedule is then the same chunked store-and-forward step, so the closed form is
//! exact, and because with one NIC per GPU (DGX rails) it is also what loads the
//! host links least: each NIC link carries S each way, against 2(N−1)/N·S for a
//! ring. Several GPUs sharing a NIC share its link (the flow level sees that; the
//! closed form does not).
//!
//! **DAG** (chunks c of `chunk_bytes`, [`super::chunks_at`]; all moves are
//! [`crate::dag::TaskKind::NetTransfer`]s):
//! - up: GPU → leaf sends chunk c after its chunk c−1 left (one channel per GPU);
//!   a switch has chunk c aggregated (a marker) once chunk c arrived (`Done`) from
//!   every child; a non-root switch then sends it to its parent after its own
//!   chunk c−1 left;
//! - down: the root, and every switch once chunk c arrived from its parent, sends
//!   chunk c to each child (switch or GPU) after chunk c−1 left on that port —
//!   the multicast replicates on separate ports.
//!
//! **Closed form.** A chunk crosses H = 2(d + 1) hops: GPU → leaf, d switch hops up,
//! d down, leaf → GPU. With β_c = tx_time(chunk c) at the slowest rate of the hops,
//! the critical path is that of a store-and-forward chain ([`super::chain_time`]):
//!
//! `T = α_up + α_down + Σβ_c + (H − 1)·max β_c`  (≈ 2(d+1)·α + (C + 2d + 1)·β)
//!
//! where α_up (α_down) is the largest sum of hop latencies ([`Topology::hop_latency`]:
//! links, the NIC, and the receiving switch's pipeline) from a GPU to the root (from
//! the root to a GPU). Exact when every hop shares one rate and every leaf has
//! depth d (leaf-spine, rail, fat-tree); an upper bound otherwise. Unlike the
//! ring's 2(N−1)·α, the latency term does not grow with N, and the bandwidth term
//! is S/B, not 2(N−1)/N·S/B.
//!
//! **Capability.** SHARP needs switches that aggregate: [`Topology::sharp`], set
//! from `fabric.sharp = true` on an InfiniBand fabric. Without it this algorithm
//! lowers, costs and counts exactly as [`super::ring`] (the fallback), and the
//! scenario's notes say so. Only all-reduce is implemented.
//!
//! **Aggregation state.** A switch serves at most [`Topology::sharp_groups`]
//! trees at once (`fabric.sharp_groups`; no limit by default, 0 = none). One
//! collective here needs one tree — or one per rail in [`super::hierarchical`]
//! with `inter_host = sharp`, where rails are granted trees in order and a rail
//! whose tree would touch a full switch runs the ring instead ([`grant_trees`]).
//! Trees of different collectives running at the same time are not counted.
//!
//! **Traffic.** 2·S·(N + s − 1) bytes for s tree switches: every GPU sends and
//! receives S, every non-root tree switch sends S up and receives S down.

use super::{
    chunks_at, precheck, times, ChunkTimes, CollectiveError, CollectiveOp, CollectiveSpec, Emitter,
};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, NodeId, NodeKind, Topology};
use crate::units::{Rate, SimTime};
use std::collections::{HashMap, VecDeque};

/// Host-side latency of one SHARP operation, paid when the result reaches a
/// GPU: NCCL's tuning model charges CollNet (SHARP) 31 us over the network
/// (`hwLat[NET][CollNetDirect][Simple]`, `src/graph/tuning.cc`): posting to the
/// SHARP daemon's queue, completion polling, the proxy thread. It makes SHARP's
/// small-message advantage over NCCL's tree about 2x, as published
/// measurements show, instead of an order of magnitude.
pub const HOST_LATENCY: SimTime = SimTime(31_000_000);

/// An aggregation tree over the switches for one communicator.
#[derive(Clone, Debug, PartialEq)]
pub struct SharpTree {
    /// The switch where the reduction completes and the multicast starts.
    pub root: NodeId,
    /// Tree switches, root first, in breadth-first order (parents before children).
    pub switches: Vec<NodeId>,
    /// The parent of each tree switch but the root.
    pub parent: HashMap<NodeId, NodeId>,
    /// Hops from each tree switch to the root.
    pub level: HashMap<NodeId, u32>,
    /// The edge switch of each rank's NIC, in communicator order.
    pub leaf_of: Vec<NodeId>,
    /// Largest leaf-to-root hop count d.
    pub depth: u32,
}

impl SharpTree {
    /// Builds the tree for `ranks` (see the module doc).
    ///
    /// # Errors
    /// [`CollectiveError::BadCommunicator`] when a rank has no NIC on a switch or no
    /// switch reaches every leaf.
    pub fn build(topo: &Topology, ranks: &[GpuId]) -> Result<SharpTree, CollectiveError> {
        SharpTree::build_nth(topo, ranks, 0)
    }

    /// Like [`SharpTree::build`], rooted at the `pick`-th (mod their number) of the
    /// switches that tie for the root, by node index: concurrent trees (one per
    /// rail in [`super::hierarchical`]) then use different roots, as a subnet
    /// manager spreads SHARP trees over the spines.
    ///
    /// # Errors
    /// As [`SharpTree::build`].
    pub fn build_nth(
        topo: &Topology,
        ranks: &[GpuId],
        pick: usize,
    ) -> Result<SharpTree, CollectiveError> {
        let mut leaf_of = Vec::with_capacity(ranks.len());
        for &g in ranks {
            let p = topo.gpus.get(g.0 as usize).ok_or_else(|| {
                CollectiveError::BadCommunicator(format!("GPU {} is not in the topology", g.0))
            })?;
            let nic = topo.nic_of_node(p.nic).ok_or_else(|| {
                CollectiveError::BadCommunicator(format!(
                    "GPU {} has no NIC on a switch, so SHARP cannot reduce its data",
                    g.0
                ))
            })?;
            leaf_of.push(nic.leaf);
        }
        let mut leaves = leaf_of.clone();
        leaves.sort_unstable();
        leaves.dedup();
        // Root: the switch whose farthest leaf is nearest; ties in node-index order.
        let mut best: Option<u32> = None;
        let mut tied: Vec<NodeId> = Vec::new();
        for (i, n) in topo.nodes.iter().enumerate() {
            if !matches!(n.kind, NodeKind::Switch { .. }) {
                continue;
            }
            let sw = NodeId(i as u32);
            let mut far = 0;
            let mut ok = true;
            for &l in &leaves {
                match topo.switch_hops(sw, l) {
                    Some(h) => far = far.max(h),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok || best.is_some_and(|f| far > f) {
                continue;
            }
            if best != Some(far) {
                best = Some(far);
                tied.clear();
            }
            tied.push(sw);
        }
        let Some(&root) = tied.get(pick % tied.len().max(1)) else {
            return Err(CollectiveError::BadCommunicator(format!(
                "no switch reaches all {} edge switches of the communicator, so SHARP has no aggregation root",
                leaves.len()
            )));
        };
        // Breadth-first tree from the root over up switch links.
        let mut bfs_parent: HashMap<NodeId, NodeId> = HashMap::new();
        let mut bfs_level: HashMap<NodeId, u32> = HashMap::from([(root, 0)]);
        let mut queue = VecDeque::from([root]);
        while let Some(s) = queue.pop_front() {
            let lv = bfs_level[&s];
            for &l in topo.out_links(s) {
                let to = topo.link(l).to;
                if !topo.is_link_up(l)
                    || !matches!(topo.node(to).kind, NodeKind::Switch { .. })
                    || bfs_level.contains_key(&to)
                {
                    continue;
                }
                bfs_level.insert(to, lv + 1);
                bfs_parent.insert(to, s);
                queue.push_back(to);
            }
        }
        // Prune to the leaves' paths.
        let mut parent = HashMap::new();
        let mut level = HashMap::from([(root, 0)]);
        let mut depth = 0;
        for &l in &leaves {
            let Some(&d) = bfs_level.get(&l) else {
                return Err(CollectiveError::BadCommunicator(format!(
                    "edge switch {} cannot reach the SHARP root {} over switch links",
                    l.0, root.0
                )));
            };
            depth = depth.max(d);
            let mut s = l;
            while let Some(&p) = bfs_parent.get(&s) {
                level.insert(s, bfs_level[&s]);
                if parent.insert(s, p).is_some() {
                    break;
                }
                s = p;
            }
        }
        let mut switches: Vec<NodeId> = level.keys().copied().collect();
        switches.sort_unstable_by_key(|s| (level[s], *s));
        Ok(SharpTree {
            root,
            switches,
            parent,
            level,
            leaf_of,
            depth,
        })
    }

    /// Children of every tree switch: switches first (by index), then the
    /// positions of the ranks it serves (communicator order).
    fn children(&self) -> HashMap<NodeId, (Vec<NodeId>, Vec<usize>)> {
        let mut ch: HashMap<NodeId, (Vec<NodeId>, Vec<usize>)> = self
            .switches
            .iter()
            .map(|&s| (s, (Vec::new(), Vec::new())))
            .collect();
        for &s in &self.switches {
            if let Some(p) = self.parent.get(&s) {
                if let Some(e) = ch.get_mut(p) {
                    e.0.push(s);
                }
            }
        }
        for (i, l) in self.leaf_of.iter().enumerate() {
            if let Some(e) = ch.get_mut(l) {
                e.1.push(i);
            }
        }
        for e in ch.values_mut() {
            e.0.sort_unstable();
        }
        ch
    }
}

/// Whether SHARP runs (rather than falling back to the ring) on `topo`: the
/// switches reduce and may hold at least one aggregation tree.
pub fn available(topo: &Topology) -> bool {
    topo.sharp && topo.sharp_groups > 0
}

/// Lowers the collective into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation, bad communicator or no aggregation root.
pub fn lower(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    dag: &mut Dag,
    after: &[Dep],
) -> Result<TaskId, CollectiveError> {
    let mut em = Emitter::new(dag, topo);
    super::lower_with(spec, ranks, topo, &mut em, after)
}

/// Emits the tasks of `spec` and returns the dependencies that mark its end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    if !available(topo) {
        return super::ring::emit(spec, ranks, topo, em, after);
    }
    emit_op(spec.bytes, 0, spec.chunk_bytes, 0, ranks, topo, em, after)
}

/// Emits one SHARP all-reduce of the buffer bytes `[base, base + bytes)` over the
/// tree [`SharpTree::build_nth`]`(pick)`; returns the dependencies that mark its
/// end (`after` itself when there is nothing to move). Needs [`available`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_op(
    bytes: u64,
    base: u64,
    chunk: u64,
    pick: usize,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    if ranks.len() <= 1 || bytes == 0 {
        return Ok(after.to_vec());
    }
    let chunks = chunks_at(base, bytes, chunk);
    let results = emit_chunks(&chunks, pick, ranks, topo, em, &|_, c| {
        if c == 0 {
            after.to_vec()
        } else {
            Vec::new()
        }
    })?;
    Ok(results.into_iter().flatten().map(Dep::Done).collect())
}

/// The SHARP all-reduce of `chunks` over the tree [`SharpTree::build_nth`]`(pick)`,
/// rank i sending chunk c once `start(i, c)` holds (and its chunk c − 1 has
/// left). Returns, per rank and chunk, the transfer that brings the reduced
/// chunk back to the rank (NCCL's CollNet chain feeds it chunk by chunk).
pub(crate) fn emit_chunks(
    chunks: &[(u64, u64)],
    pick: usize,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    start: &dyn Fn(usize, usize) -> Vec<Dep>,
) -> Result<Vec<Vec<TaskId>>, CollectiveError> {
    let tree = SharpTree::build_nth(topo, ranks, pick)?;
    let children = tree.children();
    let nc = chunks.len();
    let node_of = |i: usize| topo.gpus[ranks[i].0 as usize].node;
    // Up: what arrives from each child (switch or rank), per chunk.
    let mut up_rank: Vec<Vec<TaskId>> = Vec::with_capacity(ranks.len());
    for (i, leaf) in tree.leaf_of.iter().enumerate() {
        let mut prev: Option<TaskId> = None;
        let mut out = Vec::with_capacity(nc);
        for (c, &(o, b)) in chunks.iter().enumerate() {
            let mut deps = start(i, c);
            deps.extend(prev.map(Dep::Sent));
            let t = em.net_send(node_of(i), *leaf, o, b, true, &deps);
            prev = Some(t);
            out.push(t);
        }
        up_rank.push(out);
    }
    let mut up_switch: HashMap<NodeId, Vec<TaskId>> = HashMap::new();
    let mut have: HashMap<NodeId, Vec<TaskId>> = HashMap::new();
    for &s in tree.switches.iter().rev() {
        let (sw_ch, rank_ch) = &children[&s];
        let mut agg = Vec::with_capacity(nc);
        for c in 0..nc {
            let deps: Vec<Dep> = sw_ch
                .iter()
                .map(|x| Dep::Done(up_switch[x][c]))
                .chain(rank_ch.iter().map(|&r| Dep::Done(up_rank[r][c])))
                .collect();
            agg.push(em.dag.marker(&deps));
        }
        if let Some(&p) = tree.parent.get(&s) {
            let mut prev: Option<TaskId> = None;
            let mut out = Vec::with_capacity(nc);
            for (c, &(o, b)) in chunks.iter().enumerate() {
                let mut deps = vec![Dep::Done(agg[c])];
                deps.extend(prev.map(Dep::Sent));
                let t = em.net_send(s, p, o, b, true, &deps);
                prev = Some(t);
                out.push(t);
            }
            up_switch.insert(s, out);
        }
        have.insert(s, agg);
    }
    // Down: each switch, once it has chunk c (aggregated at the root, received
    // from the parent elsewhere), multicasts it on every child port.
    let mut results: Vec<Vec<TaskId>> = vec![Vec::new(); ranks.len()];
    for &s in &tree.switches {
        let (sw_ch, rank_ch) = &children[&s];
        let src_have = have[&s].clone();
        let dests: Vec<(NodeId, Option<usize>)> = sw_ch
            .iter()
            .map(|&x| (x, None))
            .chain(rank_ch.iter().map(|&r| (node_of(r), Some(r))))
            .collect();
        for (d, rank) in dests {
            let is_gpu = rank.is_some();
            let mut prev: Option<TaskId> = None;
            let mut out = Vec::with_capacity(nc);
            for (c, &(o, b)) in chunks.iter().enumerate() {
                let mut deps = vec![Dep::Done(src_have[c])];
                deps.extend(prev.map(Dep::Sent));
                let t = em.net_send(s, d, o, b, false, &deps);
                if is_gpu {
                    // the host's software sees the result
                    let host = em.proto.collnet;
                    em.dag.set_software(t, host);
                }
                prev = Some(t);
                out.push(t);
            }
            match rank {
                Some(r) => results[r] = out,
                None => {
                    have.insert(d, out);
                }
            }
        }
    }
    Ok(results)
}

/// Latency and payload rate of one hop, or `BadCommunicator` if it does not exist.
fn hop_cost(topo: &Topology, a: NodeId, b: NodeId) -> Result<(SimTime, Rate), CollectiveError> {
    let mut p = Vec::with_capacity(2);
    if !topo.hop_path(a, b, &mut p) {
        return Err(CollectiveError::BadCommunicator(format!(
            "SHARP tree hop from node {} to node {} has no usable link",
            a.0, b.0
        )));
    }
    Ok((topo.hop_latency(&p), topo.path_bottleneck(&p)))
}

/// Closed-form time on an idle fabric (see the module doc); the ring's when the
/// fabric has no SHARP capability.
///
/// # Errors
/// Unsupported operation, bad communicator or no aggregation root.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    if !available(topo) {
        return super::ring::time(spec, ranks, topo);
    }
    // plus the host's software latency on the final delivery
    Ok(time_of(spec.bytes, spec.chunk_bytes, 0, ranks, topo)?.saturating_add(spec.proto.collnet))
}

/// [`time`] of one SHARP all-reduce of `bytes` over [`SharpTree::build_nth`]`(pick)`.
///
/// # Errors
/// Bad communicator or no aggregation root.
pub(crate) fn time_of(
    bytes: u64,
    chunk: u64,
    pick: usize,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    if ranks.len() <= 1 || bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let tree = SharpTree::build_nth(topo, ranks, pick)?;
    let mut rate = Rate(u64::MAX);
    // α from each tree switch up to the root and down from it.
    let mut up_to_root: HashMap<NodeId, SimTime> = HashMap::from([(tree.root, SimTime::ZERO)]);
    let mut down_from_root = up_to_root.clone();
    for &s in &tree.switches {
        if let Some(&p) = tree.parent.get(&s) {
            let (au, ru) = hop_cost(topo, s, p)?;
            let (ad, rd) = hop_cost(topo, p, s)?;
            rate = rate.min(ru).min(rd);
            up_to_root.insert(s, up_to_root[&p] + au);
            down_from_root.insert(s, down_from_root[&p] + ad);
        }
    }
    let (mut a_up, mut a_down) = (SimTime::ZERO, SimTime::ZERO);
    for (i, &g) in ranks.iter().enumerate() {
        let leaf = tree.leaf_of[i];
        let node = topo.gpus[g.0 as usize].node;
        let (au, ru) = hop_cost(topo, node, leaf)?;
        let (ad, rd) = hop_cost(topo, leaf, node)?;
        rate = rate.min(ru).min(rd);
        a_up = a_up.max(au + up_to_root[&leaf]);
        a_down = a_down.max(ad + down_from_root[&leaf]);
    }
    let hops = 2 * (u64::from(tree.depth) + 1);
    let ct = ChunkTimes::new(bytes, chunk, rate);
    Ok(a_up
        .saturating_add(a_down)
        .saturating_add(ct.sum)
        .saturating_add(times(hops - 1, ct.max)))
}

/// Payload bytes of all the tasks (see the module doc); the ring's without SHARP.
///
/// # Errors
/// Unsupported operation, bad communicator or no aggregation root.
pub fn traffic(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    if !available(topo) {
        return super::ring::traffic(spec, ranks);
    }
    traffic_of(spec.bytes, 0, ranks, topo)
}

/// [`traffic`] of one SHARP all-reduce of `bytes` over [`SharpTree::build_nth`]`(pick)`.
///
/// # Errors
/// Bad communicator or no aggregation root.
pub(crate) fn traffic_of(
    bytes: u64,
    pick: usize,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    if ranks.len() <= 1 || bytes == 0 {
        return Ok(0);
    }
    let tree = SharpTree::build_nth(topo, ranks, pick)?;
    let hops = ranks.len() as u64 + tree.switches.len() as u64 - 1;
    Ok(bytes.saturating_mul(2).saturating_mul(hops))
}

/// True for the operations SHARP implements here (all-reduce).
pub fn implements(op: CollectiveOp) -> bool {
    op == CollectiveOp::AllReduce
}

/// For concurrent SHARP all-reduces over `comms` (communicator `i` on
/// [`SharpTree::build_nth`]`(i)`), whether each gets an aggregation tree: granted
/// in order while every switch of its tree holds fewer than
/// [`Topology::sharp_groups`] trees. A communicator of one rank needs no tree
/// (granted). Without [`available`] none is granted.
///
/// # Errors
/// Bad communicator or no aggregation root.
pub fn grant_trees(topo: &Topology, comms: &[Vec<GpuId>]) -> Result<Vec<bool>, CollectiveError> {
    if !available(topo) {
        return Ok(vec![false; comms.len()]);
    }
    let mut held: HashMap<NodeId, u32> = HashMap::new();
    let mut out = Vec::with_capacity(comms.len());
    for (i, c) in comms.iter().enumerate() {
        if c.len() <= 1 {
            out.push(true);
            continue;
        }
        let tree = SharpTree::build_nth(topo, c, i)?;
        let room = tree
            .switches
            .iter()
            .all(|s| held.get(s).copied().unwrap_or(0) < topo.sharp_groups);
        if room {
            for s in &tree.switches {
                *held.entry(*s).or_insert(0) += 1;
            }
        }
        out.push(room);
    }
    Ok(out)
}

/// This algorithm's registration ([`super::REGISTRY`]). In-network reduction by the switches (one trip up and down per channel).
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::Sharp,
        name: "sharp",
        ops: &[O::AllReduce],
        nccl: true,
        uses_protocol: false,
        splits_channels: true,
        shaped_by_channels: false,
        uses_nvlink: false,
        reduces_in_switches: true,
        budget_steps: |s| 4.0 + 2.0 * s.gpus_per_host,
        inter_host_steps: Some(|_| 4.0),
        available: |_, t| available(t),
        emit,
        time,
        traffic,
    }
};
