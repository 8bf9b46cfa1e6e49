//! NCCL's double binary tree (Sanders, Speck & Träff, "Two-tree algorithms for full
//! bandwidth broadcast, reduction and scan", Parallel Computing 2009; NCCL 2.4,
//! "Massively Scale Your Deep Learning Training with NCCL 2.4", NVIDIA blog 2019).
//!
//! **Trees.** Tree 0 is NCCL's `ncclGetBtree` over positions 0..N−1: position r > 0
//! with lowest set bit b has parent `(r ^ b) | 2b`, or `r ^ b` if that is ≥ N;
//! position 0 is the root (one child). Depth ⌈log2 N⌉. Tree 1 is its mirror
//! (r ↦ N−1−r) for even N, its shift by one for odd N (`ncclGetDtree`), so the
//! leaves of one tree are the inner nodes of the other. Children are served in
//! ascending position.
//!
//! **All-reduce** (S per rank): tree t carries half t of the buffer, cut into C
//! chunks. Reduce up: a node sends chunk c to its parent (a reduction) once its
//! children's chunk c is `Done` and its previous up chunk is `Sent`. Broadcast
//! down: the root sends chunk c to its children once its children's chunk c is
//! `Done`; any other node once its parent's chunk c is `Done`; children one after
//! the other (each after the previous is `Sent`), so a node with m children spends
//! m·β per chunk. Each rank has one up and one down channel per tree.
//! **Broadcast** (S): tree 0 re-rooted at `root` (position p is rank
//! (root + p) mod N) carries the whole buffer down.
//!
//! **Closed form.** With β = tx_time of the largest chunk at the tree's slowest rate
//! and one latency per edge, the critical path of that lattice is, for tree t,
//! `T_t = max_{leaf ℓ} Σ_{edges on ℓ→root} (β + α_up)
//!        + max_v [ Σ_{senders u on root→v} (p_u·β + α_down) + (C−1)·m_v·β ]`
//! where p_u is the rank of the path's child among u's children and m_v the largest
//! number of children of a sender on that path (the pipeline's slowest stage; at
//! least 1); with one α and tree height H the first term is H·(β + α). All-reduce
//! takes `max(T_0, T_1)`, broadcast the down part only. The latency term therefore
//! grows as 2·log2 N·α (log2 N for broadcast); the bandwidth term is ≈ 2·(S/2)/B
//! for a node with two children. 4(N−1) path-cost lookups, O(N) arithmetic. Exact
//! when the tree's edges share one rate and the chunks are equal (2C divides S),
//! an upper bound otherwise.
//!
//! **Over nodes** (NCCL's tree for multi-node all-reduce): on whole hosts the
//! double binary tree spans the nodes and each node's GPUs form an NVLink chain
//! to the node's head ([`node_layout`], [`node_tree_parent`]); the same lattice
//! and closed form apply to that tree, and the analytical fidelity adds the
//! busiest link's load ([`node_load_bound`]).
//!
//! **Limitation (stated on purpose).** The idle α-β model has no contention, so a
//! rank's four streams (up and down in two trees) each get the whole path rate:
//! the bandwidth term is ≈ S/B, whereas one NIC shared by the streams gives ≈ 2S/B
//! (NCCL's tuner uses algbw = busbw/2 for trees). The flow and packet backends, which
//! share links, see that; the closed form does not.
//!
//! N = 1 or S = 0: a marker, time 0. Traffic: 2(N−1)·S (all-reduce), (N−1)·S (broadcast).
use super::{
    chunks_at, path_cost, piece, precheck, times, ChunkTimes, CollectiveError, CollectiveOp,
    CollectiveSpec, Emitter,
};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::Rate;
use crate::units::SimTime;

/// Lowers the collective into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation, bad communicator.
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

/// Parent of position `r` in NCCL's binary tree over `n` positions (None for the root 0).
pub fn btree_parent(n: usize, r: usize) -> Option<usize> {
    if r == 0 || r >= n {
        return None;
    }
    let bit = 1usize << r.trailing_zeros();
    let up = (r ^ bit) | (bit << 1);
    Some(if up >= n { r ^ bit } else { up })
}

/// Parent of position `r` in tree `t` (0 or 1) of NCCL's double binary tree.
pub fn dtree_parent(n: usize, t: usize, r: usize) -> Option<usize> {
    match t {
        0 => btree_parent(n, r),
        _ if n % 2 == 0 => btree_parent(n, n - 1 - r).map(|p| n - 1 - p),
        _ => btree_parent(n, (r + n - 1) % n).map(|p| (p + 1) % n),
    }
}

/// A tree over positions: parent and children (ascending) of each, and the
/// positions in breadth-first order (by depth).
struct Tree {
    root: usize,
    children: Vec<Vec<usize>>,
    parent: Vec<Option<usize>>,
    by_depth: Vec<usize>,
}

impl Tree {
    fn new(n: usize, parent: impl Fn(usize) -> Option<usize>) -> Tree {
        let parent: Vec<Option<usize>> = (0..n).map(parent).collect();
        let mut children = vec![Vec::new(); n];
        let mut root = 0;
        for (r, p) in parent.iter().enumerate() {
            match p {
                Some(p) => children[*p].push(r),
                None => root = r,
            }
        }
        let mut by_depth = vec![root];
        let mut i = 0;
        while i < by_depth.len() {
            let v = by_depth[i];
            for &c in &children[v] {
                by_depth.push(c);
            }
            i += 1;
        }
        Tree {
            root,
            children,
            parent,
            by_depth,
        }
    }

    /// Critical path of the lattice (module doc) with `count` chunks and one
    /// latency and one chunk time per edge: `up_alpha[v]`/`up_beta[v]` for
    /// v → parent, `down_alpha[v]`/`down_beta[v]` for parent → v. The up part (if
    /// `up`) is the heaviest leaf-to-root path of `β + α` stages; the down part
    /// the heaviest root-to-node path, plus the other chunks through the
    /// slowest stage on that path (a sender serves its children one after the
    /// other). With one rate this is the module doc's form.
    fn time(
        &self,
        count: u64,
        up_beta: &[SimTime],
        down_beta: &[SimTime],
        up_alpha: &[SimTime],
        down_alpha: &[SimTime],
        up: bool,
    ) -> SimTime {
        let n = self.parent.len();
        // acc[v]: Σ (sends before v's + α) over the senders above v; stage[v]:
        // the slowest per-chunk stage on that path.
        let mut acc = vec![SimTime::ZERO; n];
        let mut stage = vec![SimTime::ZERO; n];
        let mut best = SimTime::ZERO;
        for &v in &self.by_depth {
            let serve: SimTime = self.children[v]
                .iter()
                .fold(SimTime::ZERO, |a, &c| a.saturating_add(down_beta[c]));
            let mut before = SimTime::ZERO;
            for &c in &self.children[v] {
                before = before.saturating_add(down_beta[c]);
                acc[c] = acc[v].saturating_add(before).saturating_add(down_alpha[c]);
                stage[c] = stage[v]
                    .max(serve)
                    .max(if up { up_beta[c] } else { SimTime::ZERO });
                best = best.max(acc[c].saturating_add(times(count - 1, stage[c])));
            }
        }
        if up {
            // height[v]: heaviest path from a leaf below v up to v.
            let mut height = vec![SimTime::ZERO; n];
            for &v in self.by_depth.iter().rev() {
                if let Some(p) = self.parent[v] {
                    let h = height[v]
                        .saturating_add(up_beta[v])
                        .saturating_add(up_alpha[v]);
                    height[p] = height[p].max(h);
                }
            }
            best = best.saturating_add(height[self.root]);
        }
        best
    }
}

/// NCCL's trees over nodes: when the communicator is made of whole hosts (at
/// least two, several GPUs each), the double binary tree spans the *nodes*, and
/// inside each node the GPUs form a chain that ends at the node's tree member
/// (its head). Each channel has its own tree (trees 0 and 1 alternate) and its
/// own head, local GPU c mod g, so the channels leave a node through
/// different NICs. Returns the ranks host by host (the positions the
/// trees are laid over), or `None` for a flat tree.
pub fn node_layout(ranks: &[GpuId], topo: &Topology) -> Option<(Vec<GpuId>, usize, usize)> {
    let hosts = super::hierarchical::hosts_of(ranks, topo).ok()?;
    let (h, g) = (hosts.len(), hosts.first().map_or(0, Vec::len));
    (h >= 2 && g >= 2).then(|| (hosts.into_iter().flatten().collect(), h, g))
}

/// Parent of position `pos` (host `pos / g`, local `pos % g`) in the tree of
/// channel `c` ([`node_layout`]): tree t = c mod 2 of the double binary tree
/// over the `hosts` nodes, whose node members (heads) are local GPU `c mod g`,
/// so channels leave through different NICs. A non-head's parent is the next
/// GPU of its node's chain towards the head; a head's, the head of its parent
/// node.
pub fn node_tree_parent(hosts: usize, g: usize, c: usize, pos: usize) -> Option<usize> {
    let (h, j) = (pos / g, pos % g);
    let (t, head) = (c % 2, c % g);
    let k = (j + g - head) % g;
    if k > 0 {
        Some(h * g + (head + k - 1) % g)
    } else {
        dtree_parent(hosts, t, h).map(|ph| ph * g + head)
    }
}

/// Trees of a node-aware all-reduce: one per channel, at least the two of the
/// double binary tree.
fn tree_channels(spec: &CollectiveSpec) -> usize {
    (spec.channels as usize).max(2)
}

/// Emits the transfers of `spec`; returns the dependencies that mark the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    if spec.op == CollectiveOp::AllReduce && spec.bytes > 0 {
        if let Some((rank_of, hosts, g)) = node_layout(ranks, topo) {
            let mut ends = Vec::new();
            let chans = tree_channels(spec);
            for c in 0..chans {
                let (off, len) = piece(spec.bytes, chans as u64, c as u64);
                if len == 0 {
                    continue;
                }
                let tree = Tree::new(rank_of.len(), |r| node_tree_parent(hosts, g, c, r));
                emit_tree(
                    &tree,
                    &rank_of,
                    off,
                    len,
                    spec.chunk_bytes,
                    true,
                    em,
                    after,
                    &mut ends,
                );
            }
            return Ok(ends);
        }
    }
    Ok(emit_op(
        spec.op,
        spec.bytes,
        0,
        spec.chunk_bytes,
        spec.root as usize,
        ranks,
        em,
        after,
    ))
}

/// Emits one tree collective on the buffer bytes `[base, base + bytes)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_op(
    op: CollectiveOp,
    bytes: u64,
    base: u64,
    chunk: u64,
    root: usize,
    ranks: &[GpuId],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let n = ranks.len();
    if n <= 1 || bytes == 0 {
        return after.to_vec();
    }
    let mut ends = Vec::new();
    if op == CollectiveOp::Broadcast {
        let tree = Tree::new(n, |r| btree_parent(n, r));
        let rank_of: Vec<GpuId> = (0..n).map(|p| ranks[(root + p) % n]).collect();
        emit_tree(
            &tree, &rank_of, base, bytes, chunk, false, em, after, &mut ends,
        );
    } else {
        for t in 0..2 {
            let (off, len) = piece(bytes, 2, t as u64);
            if len == 0 {
                continue;
            }
            let tree = Tree::new(n, |r| dtree_parent(n, t, r));
            emit_tree(
                &tree,
                ranks,
                base + off,
                len,
                chunk,
                true,
                em,
                after,
                &mut ends,
            );
        }
    }
    ends
}

/// Emits reduce-up (if `up`) and broadcast-down over one tree.
#[allow(clippy::too_many_arguments)]
fn emit_tree(
    tree: &Tree,
    rank_of: &[GpuId],
    off: u64,
    len: u64,
    chunk: u64,
    up: bool,
    em: &mut Emitter<'_>,
    after: &[Dep],
    ends: &mut Vec<Dep>,
) {
    let chunks = chunks_at(off, len, chunk);
    emit_tree_chunks(tree, rank_of, &chunks, up, em, after, None, ends);
}

/// A pipelined all-reduce over a tree whose inputs arrive chunk by chunk (NCCL's
/// NVLS-tree and hierarchical schedules feed it): position v may send chunk c
/// up once `starts[v][c]` holds (and, as always, its children's chunk c is
/// reduced and its previous chunk has left). Returns, per position and chunk,
/// the dependencies that mark the fully reduced chunk c at v: the root's
/// children's up transfers and its own input, or the transfer that brought
/// chunk c down to v.
pub(crate) fn emit_chunked_allreduce(
    n: usize,
    t: usize,
    rank_of: &[GpuId],
    chunks: &[(u64, u64)],
    starts: &[Vec<Vec<Dep>>],
    em: &mut Emitter<'_>,
) -> Vec<Vec<Vec<Dep>>> {
    let tree = Tree::new(n, |r| dtree_parent(n, t, r));
    let mut ends = Vec::new();
    let mut finals = Vec::new();
    emit_tree_chunks(
        &tree,
        rank_of,
        chunks,
        true,
        em,
        &[],
        Some((starts, &mut finals)),
        &mut ends,
    );
    finals
}

/// The tree lattice of [`emit_tree`] over explicit `chunks`; with `fed`, chunk
/// inputs come per position and the per-position results are returned in it.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn emit_tree_chunks(
    tree: &Tree,
    rank_of: &[GpuId],
    chunks: &[(u64, u64)],
    up: bool,
    em: &mut Emitter<'_>,
    after: &[Dep],
    mut fed: Option<(&[Vec<Vec<Dep>>], &mut Vec<Vec<Vec<Dep>>>)>,
    ends: &mut Vec<Dep>,
) {
    let n = rank_of.len();
    let start = |v: usize, c: usize| -> &[Dep] {
        match &fed {
            Some((s, _)) => &s[v][c],
            None => &[],
        }
    };
    // up_sent[v][c]: v's up transfer of chunk c.
    let mut up_sent: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    if up {
        let mut last: Vec<Option<TaskId>> = vec![None; n];
        // each chunk's n − 1 sends are the previous chunk's shifted by n − 1
        // tasks (from the second chunk on; the first waits for `after`): as
        // blocks, the DAG stores one per run (see `Dag::begin_block`)
        for &(o, b) in chunks {
            em.dag.begin_block();
            for &v in tree.by_depth.iter().rev() {
                let Some(p) = tree.parent[v] else { continue };
                let c = up_sent[v].len();
                let mut deps: Vec<Dep> = match last[v] {
                    Some(t) => vec![Dep::Sent(t)],
                    None => after.to_vec(),
                };
                deps.extend_from_slice(start(v, c));
                deps.extend(tree.children[v].iter().map(|&ch| Dep::Done(up_sent[ch][c])));
                let t = em.send(rank_of[v], rank_of[p], o, b, true, &deps);
                last[v] = Some(t);
                up_sent[v].push(t);
            }
        }
        em.dag.end_blocks();
    }
    // down_recv[v][c]: the transfer bringing chunk c to v.
    let mut down_recv: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    let mut last: Vec<Option<TaskId>> = vec![None; n];
    for (c, &(o, b)) in chunks.iter().enumerate() {
        em.dag.begin_block();
        for &v in &tree.by_depth {
            for &ch in &tree.children[v] {
                let mut deps: Vec<Dep> = Vec::with_capacity(3);
                match last[v] {
                    Some(t) => deps.push(Dep::Sent(t)),
                    None if v == tree.root => deps.extend_from_slice(after),
                    None => {}
                }
                if v == tree.root {
                    if up {
                        deps.extend(tree.children[v].iter().map(|&x| Dep::Done(up_sent[x][c])));
                        deps.extend_from_slice(start(v, c));
                    }
                } else {
                    deps.push(Dep::Done(down_recv[v][c]));
                }
                let t = em.send(rank_of[v], rank_of[ch], o, b, false, &deps);
                last[v] = Some(t);
                down_recv[ch].push(t);
            }
        }
    }
    em.dag.end_blocks();
    // A later chunk's arrival does not imply an earlier one's in the DAG, so the
    // end waits for every chunk.
    ends.extend(down_recv.iter().flatten().map(|&t| Dep::Done(t)));
    if let Some((starts, finals)) = fed.as_mut() {
        **finals = (0..n)
            .map(|v| {
                (0..chunks.len())
                    .map(|c| {
                        if v == tree.root {
                            let mut d: Vec<Dep> = tree.children[v]
                                .iter()
                                .map(|&x| Dep::Done(up_sent[x][c]))
                                .collect();
                            d.extend_from_slice(&starts[v][c]);
                            d
                        } else {
                            vec![Dep::Done(down_recv[v][c])]
                        }
                    })
                    .collect()
            })
            .collect();
    }
}

/// Closed-form time (see the module doc). O(N) path-cost lookups.
///
/// # Errors
/// Unsupported operation, bad communicator or unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    if spec.op == CollectiveOp::AllReduce && spec.bytes > 0 {
        if let Some((rank_of, hosts, g)) = node_layout(ranks, topo) {
            let mut t = SimTime::ZERO;
            let chans = tree_channels(spec);
            for tr in 0..chans {
                let len = piece(spec.bytes, chans as u64, tr as u64).1;
                if len > 0 {
                    let tree = Tree::new(rank_of.len(), |r| node_tree_parent(hosts, g, tr, r));
                    // NVLink chain and network edges each at their own rate
                    let c = tree_costs(
                        &tree,
                        &rank_of,
                        topo,
                        &spec.proto,
                        len,
                        spec.chunk_bytes,
                        false,
                    )?;
                    t = t.max(tree.time_of(&c, true));
                }
            }
            return Ok(t);
        }
    }
    time_with(
        spec.op,
        spec.bytes,
        spec.chunk_bytes,
        spec.root as usize,
        ranks,
        topo,
        &spec.proto,
    )
}

/// The contention bound of the node-aware trees ([`node_layout`]): every edge
/// carries its tree's half of the buffer up and down at once, spread over its
/// equal-cost paths ([`super::busiest_link_time`]); heads share their NIC and
/// NVLink with the chain. `None` for a flat tree (see [`injection_bound`]).
///
/// # Errors
/// Unreachable ranks.
pub fn node_load_bound(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<Option<SimTime>, CollectiveError> {
    let Some((rank_of, hosts, g)) = node_layout(ranks, topo) else {
        return Ok(None);
    };
    let n = rank_of.len();
    let chans = tree_channels(spec);
    let mut flows = Vec::with_capacity(2 * chans * n);
    for t in 0..chans {
        let half = spec
            .proto
            .protocol
            .wire_bytes(piece(spec.bytes, chans as u64, t as u64).1);
        for v in 0..n {
            if let Some(p) = node_tree_parent(hosts, g, t, v) {
                flows.push((rank_of[v], rank_of[p], half));
                flows.push((rank_of[p], rank_of[v], half));
            }
        }
    }
    super::busiest_link_time(topo, flows.into_iter()).map(Some)
}

/// The (source, destination, bytes) of every edge of the double binary tree
/// over `ranks` carrying `bytes` (half per tree, up and down), for the
/// contention bound ([`super::busiest_link_time`]) of trees that share links.
pub(crate) fn edge_flows(ranks: &[GpuId], bytes: u64) -> Vec<(GpuId, GpuId, u64)> {
    let n = ranks.len();
    let mut flows = Vec::with_capacity(4 * n);
    for t in 0..2 {
        let half = piece(bytes, 2, t as u64).1;
        for v in 0..n {
            if let Some(p) = dtree_parent(n, t, v) {
                flows.push((ranks[v], ranks[p], half));
                flows.push((ranks[p], ranks[v], half));
            }
        }
    }
    flows
}

/// Lower bound set by a rank's own NIC: in the double binary tree an inner rank sends
/// S/2 up and S/2 to each of two children in one tree and S/2 up as a leaf of the
/// other, 2·S in all (broadcast: S to each of two children). The lowered schedule's
/// four streams are independent in the DAG, so the idle critical path ([`time`])
/// lets them overlap at full rate each; the flow and packet fidelities share the NIC
/// and find about 2·S/B, as NCCL's own tuner assumes for trees. The analytical
/// fidelity reports `max(time, injection_bound)`. N ≤ 2 has no inner rank with two
/// children: the bound is S/B.
///
/// # Errors
/// Unreachable ranks.
pub fn injection_bound(
    bytes: u64,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let n = ranks.len();
    if n <= 1 || bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let out = if n <= 2 {
        bytes
    } else {
        bytes.saturating_mul(2)
    };
    let cost = super::worst_cost(topo, (1..n).map(|j| (ranks[0], ranks[j])))?;
    Ok(cost.alpha.saturating_add(cost.rate.tx_time(out)))
}

/// Per-edge latencies of a tree (up: v → parent, down: parent → v, indexed by v)
/// and the slowest rate over its edges in both directions. 2(N−1) lookups.
/// The per-edge costs of a tree for `len` bytes in chunks of `chunk` (indexed
/// by the child v of edge v–parent).
struct EdgeCosts {
    count: u64,
    up_beta: Vec<SimTime>,
    down_beta: Vec<SimTime>,
    up_alpha: Vec<SimTime>,
    down_alpha: Vec<SimTime>,
}

/// Per-edge latencies (with the step's software latency) and chunk times of a
/// tree. With `uniform`, every edge takes the slowest edge's chunk time (the
/// flat tree's closed form, exact on one rate); else each edge its own.
/// 2(N−1) lookups.
#[allow(clippy::too_many_arguments)]
fn tree_costs(
    tree: &Tree,
    rank_of: &[GpuId],
    topo: &Topology,
    pc: &super::ProtoCost,
    len: u64,
    chunk: u64,
    uniform: bool,
) -> Result<EdgeCosts, CollectiveError> {
    let n = rank_of.len();
    let mut c = EdgeCosts {
        count: ChunkTimes::new(len, chunk, Rate(u64::MAX)).count,
        up_beta: vec![SimTime::ZERO; n],
        down_beta: vec![SimTime::ZERO; n],
        up_alpha: vec![SimTime::ZERO; n],
        down_alpha: vec![SimTime::ZERO; n],
    };
    let mut slowest = Rate(u64::MAX);
    let mut rates = vec![(Rate(u64::MAX), Rate(u64::MAX)); n];
    for v in 0..n {
        if let Some(p) = tree.parent[v] {
            let u = path_cost(topo, rank_of[v], rank_of[p])?;
            let d = path_cost(topo, rank_of[p], rank_of[v])?;
            let sw = pc.step(topo, rank_of[v], rank_of[p]);
            c.up_alpha[v] = u.alpha + sw;
            c.down_alpha[v] = d.alpha + sw;
            rates[v] = (pc.payload_rate(u.rate), pc.payload_rate(d.rate));
            slowest = slowest.min(rates[v].0).min(rates[v].1);
        }
    }
    for (v, &(ru, rd)) in rates.iter().enumerate() {
        if tree.parent[v].is_some() {
            let (ru, rd) = if uniform {
                (slowest, slowest)
            } else {
                (ru, rd)
            };
            c.up_beta[v] = ChunkTimes::new(len, chunk, ru).max;
            c.down_beta[v] = ChunkTimes::new(len, chunk, rd).max;
        }
    }
    Ok(c)
}

impl Tree {
    /// [`Tree::time`] on `costs`.
    fn time_of(&self, c: &EdgeCosts, up: bool) -> SimTime {
        self.time(
            c.count,
            &c.up_beta,
            &c.down_beta,
            &c.up_alpha,
            &c.down_alpha,
            up,
        )
    }
}

/// [`time`] for one tree collective of `bytes` under a protocol (software
/// latency per edge, payload share of the rate).
pub(crate) fn time_with(
    op: CollectiveOp,
    bytes: u64,
    chunk: u64,
    root: usize,
    ranks: &[GpuId],
    topo: &Topology,
    pc: &super::ProtoCost,
) -> Result<SimTime, CollectiveError> {
    let n = ranks.len();
    if n <= 1 || bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let eval = |tree: &Tree, rank_of: &[GpuId], len: u64, up: bool| {
        let c = tree_costs(tree, rank_of, topo, pc, len, chunk, true)?;
        Ok::<_, CollectiveError>(tree.time_of(&c, up))
    };
    if op == CollectiveOp::Broadcast {
        let tree = Tree::new(n, |r| btree_parent(n, r));
        let rank_of: Vec<GpuId> = (0..n).map(|p| ranks[(root + p) % n]).collect();
        return eval(&tree, &rank_of, bytes, false);
    }
    let mut t = SimTime::ZERO;
    for tr in 0..2 {
        let len = piece(bytes, 2, tr as u64).1;
        if len > 0 {
            let tree = Tree::new(n, |r| dtree_parent(n, tr, r));
            t = t.max(eval(&tree, ranks, len, true)?);
        }
    }
    Ok(t)
}

/// Total payload bytes moved: 2(N−1)·S for all-reduce, (N−1)·S for broadcast.
///
/// # Errors
/// Unsupported operation or bad communicator.
pub fn traffic(spec: &CollectiveSpec, ranks: &[GpuId]) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    Ok(super::ring::traffic_of(
        spec.op,
        spec.bytes,
        ranks.len() as u64,
    ))
}

/// [`time`] bounded below by what the hosts can inject: the node-load bound
/// for all-reduce when it applies, else the injection bound of the wire bytes
/// (the analytical fidelity's tree time).
///
/// # Errors
/// See [`CollectiveError`].
pub fn time_bounded(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let t = time(spec, ranks, topo)?;
    if spec.op == CollectiveOp::AllReduce {
        if let Some(bound) = node_load_bound(spec, ranks, topo)? {
            return Ok(t.max(bound));
        }
    }
    Ok(t.max(injection_bound(
        spec.proto.protocol.wire_bytes(spec.bytes),
        ranks,
        topo,
    )?))
}

/// This algorithm's registration ([`super::REGISTRY`]). NCCL's double binary tree: up and down both trees, a chain inside each host.
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::Tree,
        name: "tree",
        ops: &[O::AllReduce, O::Broadcast],
        nccl: true,
        uses_protocol: true,
        splits_channels: true,
        shaped_by_channels: true,
        uses_nvlink: true,
        reduces_in_switches: false,
        budget_steps: |s| 4.0 * (s.ranks.log2().ceil() + s.gpus_per_host),
        inter_host_steps: Some(|s| 4.0 * s.log_hosts()),
        available: super::registry::always,
        emit,
        time: time_bounded,
        traffic: |s, r, _| traffic(s, r),
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL's trees for 8 ranks: 0→4→{2,6}→{1,3,5,7}; the mirror has the odd
    /// positions inside, so every rank is a leaf in at least one tree.
    #[test]
    fn double_tree_shapes() {
        let p: Vec<_> = (0..8).map(|r| btree_parent(8, r)).collect();
        assert_eq!(
            p,
            [
                None,
                Some(2),
                Some(4),
                Some(2),
                Some(0),
                Some(6),
                Some(4),
                Some(6)
            ]
        );
        for n in 2..40 {
            let t0 = Tree::new(n, |r| dtree_parent(n, 0, r));
            let t1 = Tree::new(n, |r| dtree_parent(n, 1, r));
            assert_eq!(t0.by_depth.len(), n, "tree 0 spans {n}");
            assert_eq!(t1.by_depth.len(), n, "tree 1 spans {n}");
            let h = u32::BITS - (n as u32 - 1).leading_zeros();
            let depth = |mut v: usize| {
                let mut d = 0;
                while let Some(p) = t0.parent[v] {
                    v = p;
                    d += 1;
                }
                d
            };
            assert!((0..n).map(depth).max().unwrap() <= h);
            if n % 2 == 0 {
                for r in 0..n {
                    assert!(
                        t0.children[r].is_empty() || t1.children[r].is_empty(),
                        "rank {r} of {n} inner in both trees"
                    );
                }
            }
        }
    }

    /// A pipelined tree's chunks after the second are stored once: the first
    /// chunk waits for the start, the second for the first, and each later
    /// one repeats the one before shifted by n − 1 tasks (the n − 1 edges of
    /// the tree). Double tree over 8 ranks, 5 equal chunks per tree: 2 trees
    /// × (up + down) × 5 chunks × 7 sends = 140 tasks, of which
    /// 2 × 2 × (5 − 2) × 7 = 84 are repeats. The DAG reads as a flat copy.
    #[test]
    fn tree_chunks_are_stored_once() {
        let topo = crate::collective::test_topo(8, 1);
        let ranks: Vec<GpuId> = (0..8).map(GpuId).collect();
        let mut dag = Dag::new();
        dag.begin_op("tree");
        let chunk = 1 << 20;
        let mut em = Emitter::new(&mut dag, &topo);
        let ends = emit_op(
            CollectiveOp::AllReduce,
            10 * chunk,
            0,
            chunk,
            0,
            &ranks,
            &mut em,
            &[],
        );
        assert_eq!(ends.len(), 2 * 5 * 7);
        assert_eq!(dag.len(), 140);
        assert_eq!(dag.stored_tasks(), 140 - 84);
        let mut flat = Dag::new();
        flat.append(&dag, |g| g, &[], "");
        assert_eq!(flat.stored_tasks(), 140);
        assert!(dag.tasks().eq(flat.tasks()));
        for t in 0..140 {
            assert!(dag.deps_of(TaskId(t)).eq(flat.deps_of(TaskId(t))));
        }
    }
}
