//! Direct all-to-all (`Algorithm::Direct`; the pairwise/linear exchange of
//! Thakur, Rabenseifner & Gropp, IJHPCA 2005 §3.4, in NCCL's send/recv form).
//!
//! Each rank's send buffer of S bytes is cut into N pieces ([`super::piece`]);
//! piece j goes to rank j. Like NCCL's grouped send/recv, rank r posts all N−1
//! messages at once (peers r+1, r+2, …, r+N−1 mod N); the chunks of one message
//! follow each other on its queue pair (each after the previous is **Sent**). The
//! messages of a rank therefore share its NIC, which the flow and packet fidelities
//! model; posting them one after another instead would line every rank's flows up
//! on the same ECMP paths at the same moment and understate the fabric.
//!
//! **Closed form** on an idle fabric, with the worst edge (max α, min B) over the
//! edges from rank 0 and the last edges (r, r−1), and β_c the chunk times of the
//! largest piece ⌈S/N⌉: `T = (N−1)·Σβ_c + α`, i.e. (N−1)·S/(N·B) + α unchunked:
//! the NIC injects (N−1)/N of the buffer at rate B. It equals the flow fidelity on a
//! non-blocking fabric when N divides S; the idle critical path of the DAG (which
//! lets the N−1 messages overlap at full rate each) is a lower bound.
//! The analytical time is the larger of that and the busiest link's load when
//! every piece spreads evenly over its equal-cost paths
//! ([`super::busiest_link_time`]): GPUs sharing a NIC, oversubscribed uplinks
//! and the bisection bind there (up to 2,048 ranks).
//! O(N) path-cost lookups plus O(N²) spreads. N = 1 or S = 0: a marker, time 0.
//! Traffic: every rank sends all but its own piece, (N−1)·S in total.
use super::{chunks_at, piece, precheck, ChunkTimes, CollectiveError, CollectiveSpec, Emitter};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Lowers the all-to-all into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation or bad communicator.
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

/// The GPU that relays `src`'s messages to `dst` under NCCL's PXN: the GPU of
/// `src`'s host on `dst`'s rail (the same local index), when `src` and `dst`
/// are on different hosts and different rails and the communicator is made of
/// whole hosts; `None` for a direct send.
pub fn pxn_relay(src: GpuId, dst: GpuId, topo: &Topology) -> Option<GpuId> {
    let g = topo.gpus_per_host;
    let (hs, hd) = (topo.host_of(src), topo.host_of(dst));
    if g < 2 || hs == hd {
        return None;
    }
    let relay = GpuId(hs * g + dst.0 % g);
    let nic = |x: GpuId| topo.gpus[x.0 as usize].nic;
    let rail = |x: GpuId| topo.nic_of_node(nic(x)).map(|n| n.leaf);
    (relay != src && nic(relay) != nic(src) && rail(relay) == rail(dst)).then_some(relay)
}

/// Emits the transfers and returns the dependencies that mark the end. With
/// `spec.pxn` on whole hosts, a message to another host's GPU on a different
/// rail first crosses NVLink to the local GPU on the destination's rail, which
/// sends it through its own NIC ([`pxn_relay`]): the network sees rail-local
/// traffic only, as NCCL's PXN arranges.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let n = ranks.len() as u64;
    emit_split(spec, ranks, topo, em, after, &|_, peer| {
        piece(spec.bytes, n, peer as u64)
    })
}

/// How an all-to-allv ([`lower_v`]) sizes the piece rank `r` sends rank `j`,
/// from one weight per rank (the shares of a mixture-of-experts layer's token
/// copies each rank's experts receive; they sum to 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Split<'a> {
    /// Dispatch: every rank sends rank `j` the share `w[j]` of its S bytes
    /// (its tokens routed to `j`'s experts); rank `j` receives N·S·w[j].
    ToDestination(&'a [f64]),
    /// Combine: rank `r` returns to every rank what it received from it,
    /// S·w[r] bytes each (the transpose of the dispatch); rank `r` sends
    /// (N−1)·S·w[r] over the network.
    FromSource(&'a [f64]),
}

impl<'a> Split<'a> {
    /// The per-rank weights, checked to be one per rank of an `n`-rank
    /// communicator.
    fn weights(self, n: usize) -> Result<&'a [f64], CollectiveError> {
        let (Split::ToDestination(w) | Split::FromSource(w)) = self;
        if w.len() != n {
            return Err(CollectiveError::BadCommunicator(format!(
                "an all-to-allv over {n} ranks needs {n} weights, found {}",
                w.len()
            )));
        }
        Ok(w)
    }
}

/// `total` bytes cut in proportion to `weights` (non-negative, not all zero),
/// in whole bytes that sum to `total` exactly (largest remainder; ties to the
/// lower index, so the cut is deterministic).
pub fn split_bytes(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 || !sum.is_finite() {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut out: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    // past 2^53 bytes the floors can overshoot by f64 rounding: take the
    // excess from the largest piece
    let given = out.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if given > total {
        if let Some(big) = out.iter_mut().max() {
            *big = big.saturating_sub(given - total);
        }
    }
    let given = out.iter().fold(0u64, |a, &b| a.saturating_add(b));
    let mut rest = total.saturating_sub(given);
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for &i in order.iter().cycle().take(weights.len() * 2) {
        if rest == 0 {
            break;
        }
        out[i] += 1;
        rest -= 1;
    }
    out
}

/// Lowers an all-to-allv: `spec` as for [`lower`] (its `bytes` are each
/// rank's S), the pieces sized by `split` instead of S/N each. Returns the
/// final marker.
///
/// # Errors
/// Bad communicator, or a weight per rank missing.
pub fn lower_v(
    spec: &CollectiveSpec,
    split: Split<'_>,
    ranks: &[GpuId],
    topo: &Topology,
    dag: &mut Dag,
    after: &[Dep],
) -> Result<TaskId, CollectiveError> {
    let n = ranks.len();
    split.weights(n)?;
    super::check_ranks(ranks, Some(topo))?;
    let mut em = Emitter::new(dag, topo);
    em.gpus_per_host = topo.gpus_per_host;
    em.qps = topo.qps_per_connection;
    em.proto = spec.proto;
    em.wire = false;
    let pieces = Pieces::new(spec.bytes, split);
    let piece_of = |r: usize, j: usize| pieces.of(r, j);
    let ends = emit_split(spec, ranks, topo, &mut em, after, &piece_of);
    Ok(em.dag.marker(&ends))
}

/// The pieces of an all-to-allv: the byte cut of S by the weights, one
/// share per rank, and where each share starts in a sender's buffer.
struct Pieces {
    cut: Vec<u64>,
    start: Vec<u64>,
    to_destination: bool,
}

impl Pieces {
    fn new(bytes: u64, split: Split<'_>) -> Pieces {
        let (w, to_destination) = match split {
            Split::ToDestination(w) => (w, true),
            Split::FromSource(w) => (w, false),
        };
        // rank j's share of S (dispatch: what every rank sends j; combine:
        // what j returns to each rank)
        let cut = split_bytes(bytes, w);
        let start = cut
            .iter()
            .scan(0u64, |at, &b| {
                let o = *at;
                *at += b;
                Some(o)
            })
            .collect();
        Pieces {
            cut,
            start,
            to_destination,
        }
    }

    /// (offset, bytes) of the piece rank `r` sends rank `j`.
    fn of(&self, r: usize, j: usize) -> (u64, u64) {
        if self.to_destination {
            (self.start[j], self.cut[j])
        } else {
            (j as u64 * self.cut[r], self.cut[r])
        }
    }
}

/// Closed-form time of an all-to-allv ([`lower_v`]) on an idle fabric, the
/// uneven form of [`time`]: the busiest sender's injection or the busiest
/// receiver's drain, whichever is longer (Σ of its pieces' chunk times at
/// the worst edge's rate), plus α and the software step; never less than the
/// busiest link's load when every piece spreads evenly over its equal-cost
/// paths ([`super::busiest_link_time`], up to 2,048 ranks). On a
/// non-blocking switch with one GPU per NIC a dispatch takes
/// (N−1)·S·max w / B + α: N·max w times the uniform exchange.
///
/// # Errors
/// Bad communicator, unreachable ranks, or a weight per rank missing.
pub fn time_v(
    spec: &CollectiveSpec,
    split: Split<'_>,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let n = ranks.len();
    split.weights(n)?;
    precheck(spec, ranks, Some(topo))?;
    if n <= 1 || spec.bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let pieces = Pieces::new(spec.bytes, split);
    let pairs = (1..n)
        .map(|j| (ranks[0], ranks[j]))
        .chain((0..n).map(|r| (ranks[r], ranks[(r + n - 1) % n])));
    let cost = super::worst_cost(topo, pairs)?;
    let software = if (1..n).any(|j| topo.host_of(ranks[0]) != topo.host_of(ranks[j])) {
        spec.proto.inter
    } else {
        spec.proto.intra
    };
    let chunks = |b: u64| ChunkTimes::new(b, spec.chunk_bytes, cost.rate);
    // per rank: the chunk times it sends and receives; the longest piece's last chunk
    let mut send = vec![SimTime::ZERO; n];
    let mut recv = vec![SimTime::ZERO; n];
    let mut last = SimTime::ZERO;
    for (r, sent) in send.iter_mut().enumerate() {
        for j in (0..n).filter(|&j| j != r) {
            let (_, b) = pieces.of(r, j);
            if b == 0 {
                continue;
            }
            let ct = chunks(b);
            *sent = sent.saturating_add(ct.sum);
            recv[j] = recv[j].saturating_add(ct.sum);
            last = last.max(ct.max);
        }
    }
    let busiest = send
        .iter()
        .chain(recv.iter())
        .copied()
        .max()
        .unwrap_or_default();
    let endpoint = busiest.saturating_add(cost.alpha);
    let bound = if n.saturating_mul(n) > super::LOAD_BOUND_PAIRS {
        SimTime::ZERO
    } else {
        let whole = spec.pxn && super::hierarchical::hosts_of(ranks, topo).is_ok();
        let mut flows = Vec::with_capacity(2 * n * n);
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let (a, b) = (ranks[i], ranks[j]);
                let bytes = pieces.of(i, j).1;
                match if whole { pxn_relay(a, b, topo) } else { None } {
                    Some(x) => {
                        flows.push((a, x, bytes));
                        flows.push((x, b, bytes));
                    }
                    None => flows.push((a, b, bytes)),
                }
            }
        }
        super::busiest_link_time(topo, flows.into_iter())?.max(cost.alpha.saturating_add(last))
    };
    Ok(endpoint.max(bound).saturating_add(software))
}

/// [`emit`] with the piece (offset, bytes) rank `r` sends rank `j` given by `piece_of`.
fn emit_split(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
    piece_of: &dyn Fn(usize, usize) -> (u64, u64),
) -> Vec<Dep> {
    let n = ranks.len();
    if n <= 1 || spec.bytes == 0 {
        return after.to_vec();
    }
    let whole = super::hierarchical::hosts_of(ranks, topo).is_ok();
    let mut ends = Vec::with_capacity(n);
    for r in 0..n {
        for j in 1..n {
            let peer = (r + j) % n;
            let (src, dst) = (ranks[r], ranks[peer]);
            let relay = if spec.pxn && whole {
                pxn_relay(src, dst, topo)
            } else {
                None
            };
            // each peer's message starts at once, on its own queue pair
            let mut prev: Option<TaskId> = None;
            let mut prev_leg: Option<TaskId> = None;
            let (off, len) = piece_of(r, peer);
            for (o, b) in chunks_at(off, len, spec.chunk_bytes) {
                let deps: Vec<Dep> = match prev {
                    Some(p) => vec![Dep::Sent(p)],
                    None => after.to_vec(),
                };
                let t = match relay {
                    None => em.send(src, dst, o, b, false, &deps),
                    Some(x) => {
                        let hop = em.relay_hop(src, x, b, &deps);
                        let mut leg_deps = vec![Dep::Done(hop)];
                        leg_deps.extend(prev_leg.map(Dep::Sent));
                        let leg = em.send_ranges(x, dst, Some(src), &[(o, b)], false, &leg_deps);
                        prev_leg = Some(leg);
                        prev = Some(hop);
                        ends.push(Dep::Done(leg));
                        continue;
                    }
                };
                prev = Some(t);
                ends.push(Dep::Done(t));
            }
        }
    }
    ends
}

/// Closed-form time `(N−1)·Σβ_c + α` (see the module doc).
///
/// # Errors
/// Unsupported operation, bad communicator or unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    let n = ranks.len();
    if n <= 1 || spec.bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let pairs = (1..n)
        .map(|j| (ranks[0], ranks[j]))
        .chain((0..n).map(|r| (ranks[r], ranks[(r + n - 1) % n])));
    let cost = super::worst_cost(topo, pairs)?;
    let ct = ChunkTimes::new(spec.bytes.div_ceil(n as u64), spec.chunk_bytes, cost.rate);
    // the last message's software latency (a step between hosts when any is)
    let software = if (1..n).any(|j| topo.host_of(ranks[0]) != topo.host_of(ranks[j])) {
        spec.proto.inter
    } else {
        spec.proto.intra
    };
    let injection = super::times(n as u64 - 1, ct.sum)
        .saturating_add(cost.alpha)
        .saturating_add(software);
    // shared NICs, oversubscribed uplinks, the bisection: the busiest link
    let nn = n as u64;
    if n.saturating_mul(n) > super::LOAD_BOUND_PAIRS {
        // past the bound's budget: the worst-edge injection alone
        return Ok(injection);
    }
    let whole = spec.pxn && super::hierarchical::hosts_of(ranks, topo).is_ok();
    let mut flows = Vec::with_capacity(2 * n * n);
    for i in 0..n {
        for j in 0..n {
            let (a, b) = (ranks[i], ranks[j]);
            let bytes = piece(spec.bytes, nn, j as u64).1;
            match if whole { pxn_relay(a, b, topo) } else { None } {
                Some(x) => {
                    flows.push((a, x, bytes));
                    flows.push((x, b, bytes));
                }
                None => flows.push((a, b, bytes)),
            }
        }
    }
    // the busiest link is the honest bound (a GPU's pieces to its own host go
    // over NVLink, not its NIC); the worst-edge injection stands in only where
    // the bound is left out (past LOAD_BOUND_PAIRS)
    let bound = super::busiest_link_time(topo, flows.into_iter())?;
    Ok(if bound > SimTime::ZERO {
        let last = ChunkTimes::new(spec.bytes.div_ceil(nn), spec.chunk_bytes, cost.rate).max;
        bound
            .max(cost.alpha.saturating_add(last))
            .saturating_add(software)
    } else {
        injection
    })
}

/// Total payload bytes moved: (N−1)·S.
///
/// # Errors
/// Unsupported operation or bad communicator.
pub fn traffic(spec: &CollectiveSpec, ranks: &[GpuId]) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    Ok((ranks.len() as u64 - 1).saturating_mul(spec.bytes))
}

/// This algorithm's registration ([`super::REGISTRY`]). Point-to-point all-to-all: every rank sends to every other.
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::Direct,
        name: "direct",
        ops: &[O::AllToAll],
        nccl: true,
        uses_protocol: false,
        splits_channels: true,
        shaped_by_channels: false,
        uses_nvlink: true,
        reduces_in_switches: false,
        budget_steps: |s| s.ranks,
        inter_host_steps: None,
        available: super::registry::always,
        emit: |s, r, t, em, a| Ok(emit(s, r, t, em, a)),
        time,
        traffic: |s, r, _| traffic(s, r),
    }
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{test_topo, Algorithm, CollectiveOp};
    use crate::dag::TaskKind;

    /// Rank r sends piece j to rank j, peers in the order r+1, r+2, …, chained on Sent.
    #[test]
    fn peers_in_rotating_order() {
        let t = test_topo(4, 1);
        let spec = CollectiveSpec {
            op: CollectiveOp::AllToAll,
            algorithm: Algorithm::Direct,
            bytes: 4000,
            chunk_bytes: u64::MAX,
            inter_host: Algorithm::Ring,
            root: 0,
            channels: 1,
            pxn: true,
            proto: crate::collective::ProtoCost::NONE,
        };
        let ranks: Vec<GpuId> = (0..4).map(GpuId).collect();
        let mut dag = Dag::new();
        lower(&spec, &ranks, &t, &mut dag, &[]).unwrap();
        let dsts: Vec<u32> = dag
            .tasks()
            .skip(3)
            .take(3)
            .map(|t| match t.kind {
                TaskKind::Transfer { src, dst, bytes } => {
                    assert_eq!((src.0, bytes), (1, 1000));
                    dst.0
                }
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(dsts, [2, 3, 0]);
        assert_eq!(traffic(&spec, &ranks), Ok(3 * 4000));
    }
}
