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
    let mut em = Emitter {
        dag,
        trace: None,
        proto: super::ProtoCost::NONE,
        gpus_per_host: topo.gpus_per_host,
        wire: false,
    };
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

    /// Critical path of the lattice (module doc) with `count` chunks of time `beta`
    /// and one latency per edge: `up_alpha[v]` for v → parent, `down_alpha[v]` for
    /// parent → v. The up part (if `up`) is the heaviest leaf-to-root path of
    /// `beta + α` stages; the down part the heaviest root-to-node path.
    fn time(
        &self,
        count: u64,
        beta: SimTime,
        up_alpha: &[SimTime],
        down_alpha: &[SimTime],
        up: bool,
    ) -> SimTime {
        let n = self.parent.len();
        // acc[v]: Σ (p·β + α) over the senders above v; widest[v]: max children of them.
        let mut acc = vec![SimTime::ZERO; n];
        let mut widest = vec![1u64; n];
        let mut best = SimTime::ZERO;
        for &v in &self.by_depth {
            let m = self.children[v].len() as u64;
            for (i, &c) in self.children[v].iter().enumerate() {
                acc[c] = acc[v]
                    .saturating_add(times(i as u64 + 1, beta))
                    .saturating_add(down_alpha[c]);
                widest[c] = widest[v].max(m);
                best = best
                    .max(acc[c].saturating_add(times((count - 1).saturating_mul(widest[c]), beta)));
            }
        }
        if up {
            // height[v]: heaviest path from a leaf below v up to v.
            let mut height = vec![SimTime::ZERO; n];
            for &v in self.by_depth.iter().rev() {
                if let Some(p) = self.parent[v] {
                    let h = height[v].saturating_add(beta).saturating_add(up_alpha[v]);
                    height[p] = height[p].max(h);
                }
            }
            best = best.saturating_add(height[self.root]);
        }
        best
    }
}

/// Emits the transfers of `spec`; returns the dependencies that mark the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    _topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
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
    let n = rank_of.len();
    let chunks = chunks_at(off, len, chunk);
    // up_sent[v][c]: v's up transfer of chunk c.
    let mut up_sent: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    if up {
        let mut last: Vec<Option<TaskId>> = vec![None; n];
        for &(o, b) in &chunks {
            for &v in tree.by_depth.iter().rev() {
                let Some(p) = tree.parent[v] else { continue };
                let c = up_sent[v].len();
                let mut deps: Vec<Dep> = match last[v] {
                    Some(t) => vec![Dep::Sent(t)],
                    None => after.to_vec(),
                };
                deps.extend(tree.children[v].iter().map(|&ch| Dep::Done(up_sent[ch][c])));
                let t = em.send(rank_of[v], rank_of[p], o, b, true, &deps);
                last[v] = Some(t);
                up_sent[v].push(t);
            }
        }
    }
    // down_recv[v][c]: the transfer bringing chunk c to v.
    let mut down_recv: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    let mut last: Vec<Option<TaskId>> = vec![None; n];
    for (c, &(o, b)) in chunks.iter().enumerate() {
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
    // A later chunk's arrival does not imply an earlier one's in the DAG, so the
    // end waits for every chunk.
    ends.extend(down_recv.iter().flatten().map(|&t| Dep::Done(t)));
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
fn tree_costs(
    tree: &Tree,
    rank_of: &[GpuId],
    topo: &Topology,
    pc: &super::ProtoCost,
) -> Result<(Vec<SimTime>, Vec<SimTime>, Rate), CollectiveError> {
    let n = rank_of.len();
    let mut up = vec![SimTime::ZERO; n];
    let mut down = vec![SimTime::ZERO; n];
    let mut rate = Rate(u64::MAX);
    for v in 0..n {
        if let Some(p) = tree.parent[v] {
            let u = path_cost(topo, rank_of[v], rank_of[p])?;
            let d = path_cost(topo, rank_of[p], rank_of[v])?;
            let sw = pc.step(topo, rank_of[v], rank_of[p]);
            up[v] = u.alpha + sw;
            down[v] = d.alpha + sw;
            rate = rate
                .min(pc.payload_rate(u.rate))
                .min(pc.payload_rate(d.rate));
        }
    }
    Ok((up, down, rate))
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
        let (ua, da, rate) = tree_costs(tree, rank_of, topo, pc)?;
        let ct = ChunkTimes::new(len, chunk, rate);
        Ok::<_, CollectiveError>(tree.time(ct.count, ct.max, &ua, &da, up))
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
}
