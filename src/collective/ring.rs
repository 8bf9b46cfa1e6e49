//! Ring algorithms (Thakur, Rabenseifner & Gropp, "Optimization of Collective
//! Communication Operations in MPICH", IJHPCA 2005, §4; NCCL's rings).
//!
//! Ranks form a ring in communicator order: position i sends to i+1 (mod N). The
//! buffer of S bytes is cut into N segments ([`super::piece`]); segment g is
//! `[offset_g, offset_g + S_g)`.
//!
//! **All-gather** (S = total): N−1 steps; at step k position i forwards segment
//! (i − k) mod N (its own at k = 0, then what it received at step k−1).
//! **Reduce-scatter** (S = total): N−1 steps; at step k position i sends its
//! partial sum of segment (i − k − 1) mod N, which the receiver adds to its own;
//! after the last step position i holds the full sum of segment i.
//! **All-reduce** (S per rank): reduce-scatter followed by all-gather, one chain of
//! K = 2(N−1) steps in which position i sends segment (i − k − 1) mod N at step k
//! (a reduction for k < N−1, a copy after).
//!
//! **DAG.** Each step's message is cut into chunks ([`super::chunk_sizes`] of the
//! segment with `chunk_bytes`). `send(k, c)` depends on `Sent(send(k, c−1))`
//! (`Sent(send(k−1, C−1))` for c = 0: one channel per rank) and on
//! `Done(recv(k−1, c))` (the same chunk of the same segment arrived at step k−1).
//!
//! **Closed form.** With β_c = tx_time(chunk c) at the ring's slowest rate, C chunks
//! per step and a uniform latency α, the critical path of that lattice is the
//! heavier of the two extreme paths — all K·C chunks through one sender, or the
//! wavefront through K hops ([`super::chained_pipeline_time`]):
//!
//! `T = max(K·Σβ_c + α, Σβ_c + (K−1)·max β_c + K·α)`
//!
//! The implementation keeps one α per ring edge ([`ring_pipeline_time`]): a path
//! that moves to the next rank d times crosses d+1 consecutive edges, so with
//! δ = Σβ − max β, `T = K·Σβ + δ + max_W Σ_{e∈W}(α_e − δ)` over windows W of 1..K
//! consecutive edges. That is exact whenever the ring's edges share one rate, even
//! if their latencies differ (hops inside a leaf vs across a spine), and an upper
//! bound when rates differ (NVLink and network hops in one ring). N path lookups.
//!
//! For C = 1 that is the textbook K·(α + S_g/B), i.e. 2(N−1)·(α + S/(N·B)) for
//! all-reduce and (N−1)·(α + S/(N·B)) for all-gather / reduce-scatter (Thakur et al.,
//! eq. for the ring; nccl-tests `doc/PERFORMANCE.md` bus bandwidth 2(N−1)/N·S/t).
//! Note: the shorter `K·α + (K+C−1)·β` sometimes quoted for chunked rings ignores
//! that every rank sends all K·C chunks on one channel; it is only the second term.
//!
//! **Broadcast** is a chunked pipeline along the ring from `root` (position
//! root, root+1, …): hop h forwards chunk c once it has arrived and its previous
//! chunk left; N−1 hops, one channel each, so
//! `T = (N−1)·α + Σβ_c + (N−2)·max β_c` ([`super::chain_time`]); with one α per
//! edge, (N−1)·α is the sum over the N−1 edges the chain crosses.
//!
//! The time uses the largest segment, so it is exact when N divides S and an upper
//! bound (by at most one byte per step) otherwise. N = 1 or S = 0 lowers to a
//! marker only and costs 0. Traffic: 2(N−1)·S (all-reduce), (N−1)·S (others).
use super::{
    chunks_at, piece, precheck, times, ChunkTimes, CollectiveError, CollectiveOp, CollectiveSpec,
    Emitter,
};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Lowers the collective into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation, bad communicator or unreachable ranks.
pub fn lower(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    dag: &mut Dag,
    after: &[Dep],
) -> Result<TaskId, CollectiveError> {
    let mut em = Emitter { dag, trace: None };
    super::lower_with(spec, ranks, topo, &mut em, after)
}

/// Emits the transfers of `spec` and returns the dependencies that mark its end.
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
        spec.root,
        ranks,
        em,
        after,
    ))
}

/// Emits one ring collective on the buffer bytes `[base, base + bytes)`; returns
/// the dependencies that mark its end (`after` itself when there is nothing to move).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_op(
    op: CollectiveOp,
    bytes: u64,
    base: u64,
    chunk: u64,
    root: u32,
    ranks: &[GpuId],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let n = ranks.len();
    if n <= 1 || bytes == 0 {
        return after.to_vec();
    }
    if op == CollectiveOp::Broadcast {
        return emit_broadcast(bytes, base, chunk, root as usize, ranks, em, after);
    }
    let nn = n as u64;
    let (steps, shift) = match op {
        CollectiveOp::AllReduce => (2 * (n - 1), 1),
        CollectiveOp::ReduceScatter => (n - 1, 1),
        _ => (n - 1, 0),
    };
    let mut last: Vec<Option<TaskId>> = vec![None; n];
    let mut recv: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    for k in 0..steps {
        let reduce = match op {
            CollectiveOp::AllReduce => k < n - 1,
            CollectiveOp::ReduceScatter => true,
            _ => false,
        };
        let mut next_recv: Vec<Vec<TaskId>> = vec![Vec::new(); n];
        for i in 0..n {
            let seg = ((i + 2 * n - k % n - shift) % n) as u64;
            let (off, len) = piece(bytes, nn, seg);
            let dst = (i + 1) % n;
            for (c, (o, b)) in chunks_at(base + off, len, chunk).into_iter().enumerate() {
                let mut deps: Vec<Dep> = Vec::with_capacity(2);
                match last[i] {
                    Some(t) => deps.push(Dep::Sent(t)),
                    None => deps.extend_from_slice(after),
                }
                if k > 0 {
                    deps.push(Dep::Done(recv[i][c]));
                }
                let t = em.send(ranks[i], ranks[dst], o, b, reduce, &deps);
                last[i] = Some(t);
                next_recv[dst].push(t);
            }
        }
        recv = next_recv;
    }
    recv.into_iter().flatten().map(Dep::Done).collect()
}

/// Pipelined chain from `root` along the ring.
fn emit_broadcast(
    bytes: u64,
    base: u64,
    chunk: u64,
    root: usize,
    ranks: &[GpuId],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let n = ranks.len();
    let chunks = chunks_at(base, bytes, chunk);
    let mut recv: Vec<TaskId> = Vec::new();
    for h in 0..n - 1 {
        let src = ranks[(root + h) % n];
        let dst = ranks[(root + h + 1) % n];
        let mut prev: Option<TaskId> = None;
        let mut out = Vec::with_capacity(chunks.len());
        for (c, &(o, b)) in chunks.iter().enumerate() {
            let mut deps: Vec<Dep> = Vec::with_capacity(2);
            if let Some(p) = prev {
                deps.push(Dep::Sent(p));
            } else if h == 0 {
                deps.extend_from_slice(after);
            }
            if h > 0 {
                deps.push(Dep::Done(recv[c]));
            }
            let t = em.send(src, dst, o, b, false, &deps);
            prev = Some(t);
            out.push(t);
        }
        recv = out;
    }
    recv.into_iter().map(Dep::Done).collect()
}

/// Closed-form time on an idle fabric (see the module doc). N path-cost lookups.
///
/// # Errors
/// Unsupported operation, bad communicator or unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    time_of(
        spec.op,
        spec.bytes,
        spec.chunk_bytes,
        spec.root,
        ranks,
        topo,
    )
}

/// [`time`] for one ring collective of `bytes` (nccl-tests meaning for `op`).
pub(crate) fn time_of(
    op: CollectiveOp,
    bytes: u64,
    chunk: u64,
    root: u32,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let n = ranks.len();
    if n <= 1 || bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    // Edge i: position i → i+1. Per-edge α, worst rate.
    let mut alphas = Vec::with_capacity(n);
    let mut rates = Vec::with_capacity(n);
    let mut rate = crate::units::Rate(u64::MAX);
    for i in 0..n {
        let c = super::path_cost(topo, ranks[i], ranks[(i + 1) % n])?;
        alphas.push(c.alpha);
        rates.push(c.rate);
        rate = rate.min(c.rate);
    }
    let nn = n as u64;
    if op != CollectiveOp::Broadcast && rates.iter().any(|&r| r != rate) {
        let k = if op == CollectiveOp::AllReduce {
            2 * nn - 2
        } else {
            nn - 1
        };
        let chunks = bytes.div_ceil(nn).div_ceil(chunk.max(1)).max(1);
        if k.saturating_mul(nn).saturating_mul(chunks) <= EXACT_RECURRENCE_LIMIT {
            return Ok(mixed_edge_time(op, bytes, chunk, &alphas, &rates));
        }
    }
    Ok(match op {
        CollectiveOp::Broadcast => {
            // The chain crosses every edge but the one into the root.
            let skip = (root as usize + n - 1) % n;
            let chain: u64 = (0..n).filter(|&e| e != skip).map(|e| alphas[e].0).sum();
            SimTime(chain)
                .saturating_add(ChunkTimes::new(bytes, chunk, rate).sum)
                .saturating_add(times(nn - 2, ChunkTimes::new(bytes, chunk, rate).max))
        }
        _ => {
            let k = if op == CollectiveOp::AllReduce {
                2 * (nn - 1)
            } else {
                nn - 1
            };
            let seg = bytes.div_ceil(nn);
            ring_pipeline_time(k, ChunkTimes::new(seg, chunk, rate), &alphas)
        }
    })
}

/// [`super::chained_pipeline_time`] with one α per ring edge (edge i from position i to
/// i+1): the critical path of the chained ring pipeline when every edge has the
/// rate used for `ct` and its own latency. A path through the lattice that moves
/// to the next rank d times crosses d+1 consecutive edges and skips all chunks but
/// one at each move, so with δ = Σβ − max β:
///
/// `T = K·Σβ + δ + max over windows W of 1..K consecutive edges (wrapping) of Σ_{e∈W}(α_e − δ)`.
///
/// With one α this is `max(K·Σβ + α, Σβ + (K−1)·max β + K·α)`
/// ([`super::chained_pipeline_time`]). O(N + K) with a sliding-window minimum.
pub fn ring_pipeline_time(k: u64, ct: ChunkTimes, alphas: &[SimTime]) -> SimTime {
    let n = alphas.len();
    if k == 0 || n == 0 {
        return SimTime::ZERO;
    }
    let delta = i128::from(ct.sum.0 - ct.max.0);
    let kk = k as usize;
    // Windows start at s < n and have 1..=k edges: positions s..s+len over the
    // repeated ring; prefix sums P over positions 0..n+k−1.
    let len = n + kk - 1;
    let mut prefix = Vec::with_capacity(len + 1);
    prefix.push(0i128);
    for p in 0..len {
        let v = i128::from(alphas[p % n].0) - delta;
        prefix.push(prefix[p] + v);
    }
    // best = max_{j} P[j] − min{P[s] : s < n, j − k ≤ s ≤ j − 1}.
    let mut best = i128::MIN;
    let mut dq: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for j in 1..=len {
        let s = j - 1;
        if s < n {
            while dq.back().is_some_and(|&b| prefix[b] >= prefix[s]) {
                dq.pop_back();
            }
            dq.push_back(s);
        }
        while dq.front().is_some_and(|&f| f + kk < j) {
            dq.pop_front();
        }
        if let Some(&f) = dq.front() {
            best = best.max(prefix[j] - prefix[f]);
        }
    }
    let t = i128::from(k) * i128::from(ct.sum.0) + delta + best;
    SimTime(t.clamp(0, i128::from(u64::MAX)) as u64)
}

/// Largest K·N·C (steps × ranks × chunks) for which a ring whose edges run at
/// different rates (NVLink inside a host, the network between hosts) is timed by
/// its exact recurrence; larger rings use the worst-edge form, an upper bound.
const EXACT_RECURRENCE_LIMIT: u64 = 50_000_000;

/// Exact idle time of a ring (all-reduce, reduce-scatter, all-gather) whose edges
/// differ in rate: the recurrence of the lowered DAG itself. Rank i sends step k,
/// chunk c once its previous message is *sent* and its upstream neighbour's step
/// k−1, chunk c is *done*: start = max(sent(k, i, c−1), done(k−1, i−1, c)),
/// sent = start + β_i(c), done = sent + α_i. O(K·N·C) time, O(N·C) memory.
fn mixed_edge_time(
    op: CollectiveOp,
    bytes: u64,
    chunk: u64,
    alphas: &[SimTime],
    rates: &[crate::units::Rate],
) -> SimTime {
    let n = alphas.len();
    let nn = n as u64;
    let (steps, shift) = match op {
        CollectiveOp::AllReduce => (2 * (n - 1), 1),
        CollectiveOp::ReduceScatter => (n - 1, 1),
        _ => (n - 1, 0),
    };
    // done of what each rank received at the previous step, per chunk
    let mut recv_done: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut next_done: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut channel_free = vec![0u64; n];
    let mut end = 0u64;
    for k in 0..steps {
        for i in 0..n {
            let seg = ((i + 2 * n - k % n - shift) % n) as u64;
            let (_, len) = super::piece(bytes, nn, seg);
            let dst = (i + 1) % n;
            let out = &mut next_done[dst];
            out.clear();
            for (c, b) in super::chunk_sizes(len, chunk).enumerate() {
                let mut start = channel_free[i];
                if k > 0 {
                    start = start.max(recv_done[i][c]);
                }
                let sent = start + rates[i].tx_time(b).0;
                channel_free[i] = sent;
                let done = sent + alphas[i].0;
                out.push(done);
                end = end.max(done);
            }
        }
        std::mem::swap(&mut recv_done, &mut next_done);
    }
    SimTime(end)
}

/// Total payload bytes moved: 2(N−1)·S for all-reduce, (N−1)·S otherwise.
///
/// # Errors
/// Unsupported operation or bad communicator.
pub fn traffic(spec: &CollectiveSpec, ranks: &[GpuId]) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    Ok(traffic_of(spec.op, spec.bytes, ranks.len() as u64))
}

/// [`traffic`] for `n` ranks.
pub(crate) fn traffic_of(op: CollectiveOp, bytes: u64, n: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    match op {
        CollectiveOp::AllReduce => (2 * (n - 1)).saturating_mul(bytes),
        _ => (n - 1).saturating_mul(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{lower_traced, test_topo, Algorithm};
    use crate::dag::TaskKind;

    /// All-reduce on 3 ranks, one chunk: step k position i sends segment (i−k−1) mod 3
    /// to i+1, reductions for the first N−1 steps, copies after.
    #[test]
    fn allreduce_segment_schedule() {
        let t = test_topo(3, 1);
        let spec = CollectiveSpec {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Ring,
            bytes: 3000,
            chunk_bytes: u64::MAX,
            inter_host: Algorithm::Ring,
            root: 0,
        };
        let ranks = [GpuId(0), GpuId(1), GpuId(2)];
        let mut dag = Dag::new();
        let mut tr = Vec::new();
        lower_traced(&spec, &ranks, &t, &mut dag, &[], &mut tr).unwrap();
        assert_eq!(tr.len(), 4 * 3);
        let got: Vec<(u32, u32, u64, bool)> = tr
            .iter()
            .map(|c| match dag.tasks[c.task.0 as usize].kind {
                TaskKind::Transfer { src, dst, .. } => (src.0, dst.0, c.offset, c.reduce),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            &got[..3],
            &[(0, 1, 2000, true), (1, 2, 0, true), (2, 0, 1000, true)]
        );
        assert_eq!(
            &got[6..9],
            &[(0, 1, 0, false), (1, 2, 1000, false), (2, 0, 2000, false)]
        );
        assert_eq!(traffic(&spec, &ranks), Ok(4 * 3000));
    }

    /// The per-edge closed form equals a direct evaluation of the chained ring
    /// recurrence (start = max(own previous sent, previous step's chunk done)) for
    /// random per-edge latencies, unequal chunks and both ring lengths K.
    #[test]
    fn per_edge_closed_form_matches_recurrence() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let rate = crate::units::Rate::gbps(400);
        for _ in 0..200 {
            let n = 2 + rnd(7) as usize;
            let k = if rnd(2) == 0 { n - 1 } else { 2 * (n - 1) };
            let seg = 1 + rnd(5000);
            let chunk = 1 + rnd(2000);
            let alphas: Vec<SimTime> = (0..n).map(|_| SimTime(rnd(40_000))).collect();
            let sizes: Vec<u64> = crate::collective::chunk_sizes(seg, chunk).collect();
            // sent/done of rank i's latest sends, per chunk of the previous step.
            let mut done_prev = vec![vec![SimTime::ZERO; sizes.len()]; n];
            let mut chan = vec![SimTime::ZERO; n];
            let mut end = SimTime::ZERO;
            for step in 0..k {
                let mut done_now = vec![vec![SimTime::ZERO; sizes.len()]; n];
                for i in 0..n {
                    for (c, &b) in sizes.iter().enumerate() {
                        let mut start = chan[i];
                        if step > 0 {
                            start = start.max(done_prev[(i + n - 1) % n][c]);
                        }
                        let sent = start + rate.tx_time(b);
                        chan[i] = sent;
                        done_now[i][c] = sent + alphas[i];
                        end = end.max(done_now[i][c]);
                    }
                }
                done_prev = done_now;
            }
            let ct = ChunkTimes::new(seg, chunk, rate);
            assert_eq!(
                ring_pipeline_time(k as u64, ct, &alphas),
                end,
                "n={n} k={k} seg={seg} chunk={chunk} alphas={alphas:?}"
            );
        }
    }

    #[test]
    fn one_rank_costs_nothing() {
        let t = test_topo(2, 1);
        assert_eq!(
            time_of(CollectiveOp::AllReduce, 1 << 20, 1024, 0, &[GpuId(1)], &t),
            Ok(SimTime::ZERO)
        );
    }
}
