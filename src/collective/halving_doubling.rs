//! Recursive halving and doubling (Rabenseifner's algorithm; Thakur, Rabenseifner &
//! Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA
//! 2005, §4.2 reduce-scatter by recursive halving, §4.1 all-gather by recursive
//! doubling, §4.4 all-reduce as the two in sequence).
//!
//! **N must be a power of two**; otherwise every entry point returns
//! [`CollectiveError::BadCommunicator`] ("halving-doubling needs a power-of-two
//! number of ranks …"). The buffer is cut into N segments ([`super::piece`]).
//!
//! **Reduce-scatter** (S = total), log2 N steps: at step s (mask = N/2^(s+1)) rank r
//! and its partner r XOR mask share the block of 2·mask segments containing r; each
//! sends the half it does not keep (the one not containing itself) as partial sums,
//! which the partner adds. Messages S/2, S/4, …, S/N. Rank r ends with segment r.
//! **All-gather** (S = total), log2 N steps: at step s (mask = 2^s) rank r sends the
//! block of `mask` segments it holds to r XOR mask. Messages S/N, 2S/N, …, S/2.
//! **All-reduce** (S per rank): reduce-scatter then all-gather, 2·log2 N steps.
//!
//! **DAG.** Each step's message is cut into chunks (`chunk_bytes`) sent back to back
//! on the rank's channel (`Sent` of the previous chunk); the first chunk of a step
//! also waits until everything received in the previous step is `Done` (a step
//! combines the whole message, so there is no pipelining across steps).
//!
//! **Closed form.** On a uniform fabric every rank starts each step together, so
//! with β_c the chunk times of the step's message:
//! `T = Σ_steps (Σβ_c + α)`, i.e. unchunked
//! reduce-scatter / all-gather `log2 N·α + (N−1)/N·S/B` and all-reduce
//! `2·log2 N·α + 2(N−1)/N·S/B` (Thakur et al., eq. for Rabenseifner's algorithm).
//! The implementation follows each rank through the steps (one partner each), which
//! is exact on any fabric: rank r starts step s+1 at
//! `max(t_s(r) + Σβ(r→p), t_s(p) + Σβ(p→r) + α(p→r))`, p = r XOR mask, and the
//! collective ends at the last arrival. Message sizes are counted in whole segments
//! of ⌈S/N⌉ bytes, so the time is exact when N divides S and an upper bound
//! otherwise. N·log2 N path-cost lookups (each mask once), O(N·log2 N) arithmetic.
//! N = 1 or S = 0: a marker, time 0. Traffic: (N−1)·S for reduce-scatter and
//! all-gather, 2(N−1)·S for all-reduce (as the ring).
use super::{
    chunks_at, path_cost, piece, precheck, ChunkTimes, CollectiveError, CollectiveOp,
    CollectiveSpec, Emitter, PathCost,
};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;
use std::collections::hash_map::{Entry, HashMap};

/// Lowers the collective into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation, N not a power of two, bad communicator.
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

/// The error for a communicator that is not a power of two.
pub(crate) fn check_pow2(n: usize) -> Result<(), CollectiveError> {
    if n.is_power_of_two() {
        Ok(())
    } else {
        Err(CollectiveError::BadCommunicator(format!(
            "halving-doubling needs a power-of-two number of ranks, found {n}; use ring or tree"
        )))
    }
}

/// One exchange step: the mask and whether it is a reduction step.
fn steps(op: CollectiveOp, n: usize) -> Vec<(usize, bool)> {
    let m = n.trailing_zeros();
    let rs = (0..m).map(|s| (n >> (s + 1), true));
    let ag = (0..m).map(|s| (1usize << s, false));
    match op {
        CollectiveOp::AllReduce => rs.chain(ag).collect(),
        CollectiveOp::ReduceScatter => rs.collect(),
        _ => ag.collect(),
    }
}

/// Segments `[lo, hi)` rank `r` sends at a step with `mask`.
fn block(r: usize, mask: usize, reduce: bool) -> (usize, usize) {
    if reduce {
        let lo = r / (2 * mask) * (2 * mask);
        if r & mask == 0 {
            (lo + mask, lo + 2 * mask)
        } else {
            (lo, lo + mask)
        }
    } else {
        let lo = r / mask * mask;
        (lo, lo + mask)
    }
}

/// Emits the transfers of `spec`; returns the dependencies that mark the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    emit_op(spec.op, spec.bytes, 0, spec.chunk_bytes, ranks, em, after)
}

/// Emits one collective on the buffer bytes `[base, base + bytes)`.
pub(crate) fn emit_op(
    op: CollectiveOp,
    bytes: u64,
    base: u64,
    chunk: u64,
    ranks: &[GpuId],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    let n = ranks.len();
    check_pow2(n)?;
    if n <= 1 || bytes == 0 {
        return Ok(after.to_vec());
    }
    let nn = n as u64;
    let mut last: Vec<Option<TaskId>> = vec![None; n];
    let mut recv: Vec<Vec<Dep>> = vec![Vec::new(); n];
    for (mask, reduce) in steps(op, n) {
        let mut next: Vec<Vec<Dep>> = vec![Vec::new(); n];
        for r in 0..n {
            let (glo, ghi) = block(r, mask, reduce);
            let off = piece(bytes, nn, glo as u64).0;
            let end = if ghi == n {
                bytes
            } else {
                piece(bytes, nn, ghi as u64).0
            };
            let p = r ^ mask;
            for (o, b) in chunks_at(base + off, end - off, chunk) {
                let deps: Vec<Dep> = match last[r] {
                    Some(t) => {
                        let mut d = vec![Dep::Sent(t)];
                        d.append(&mut recv[r]);
                        d
                    }
                    None => after.to_vec(),
                };
                let t = em.send(ranks[r], ranks[p], o, b, reduce, &deps);
                last[r] = Some(t);
                next[p].push(Dep::Done(t));
            }
        }
        recv = next;
    }
    Ok(recv.into_iter().flatten().collect())
}

/// Closed-form time (see the module doc).
///
/// # Errors
/// Unsupported operation, N not a power of two, bad communicator or unreachable ranks.
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
        ranks,
        topo,
        &spec.proto,
    )
}

/// [`time`] for one collective of `bytes`; each step's α includes its
/// software latency (`pc`).
pub(crate) fn time_of(
    op: CollectiveOp,
    bytes: u64,
    chunk: u64,
    ranks: &[GpuId],
    topo: &Topology,
    pc: &super::ProtoCost,
) -> Result<SimTime, CollectiveError> {
    let n = ranks.len();
    check_pow2(n)?;
    if n <= 1 || bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let seg = bytes.div_ceil(n as u64);
    // start[r]: when rank r begins the step (its first chunk may leave).
    let mut start = vec![SimTime::ZERO; n];
    let mut end = SimTime::ZERO;
    // The all-reduce uses every mask twice: look each up once.
    let mut costs: HashMap<usize, Vec<PathCost>> = HashMap::new();
    for (mask, _) in steps(op, n) {
        let cost: &Vec<PathCost> = match costs.entry(mask) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(
                (0..n)
                    .map(|r| {
                        path_cost(topo, ranks[r], ranks[r ^ mask]).map(|c| PathCost {
                            alpha: c.alpha + pc.step(topo, ranks[r], ranks[r ^ mask]),
                            rate: c.rate,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let sent: Vec<SimTime> = (0..n)
            .map(|r| {
                let ct = ChunkTimes::new(seg.saturating_mul(mask as u64), chunk, cost[r].rate);
                start[r].saturating_add(ct.sum)
            })
            .collect();
        end = SimTime::ZERO;
        for r in 0..n {
            let p = r ^ mask;
            let arrived = sent[p].saturating_add(cost[p].alpha);
            end = end.max(arrived);
            start[r] = sent[r].max(arrived);
        }
    }
    Ok(end)
}

/// Total payload bytes moved: (N−1)·S, doubled for all-reduce.
///
/// # Errors
/// Unsupported operation, N not a power of two, bad communicator.
pub fn traffic(spec: &CollectiveSpec, ranks: &[GpuId]) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    check_pow2(ranks.len())?;
    Ok(super::ring::traffic_of(
        spec.op,
        spec.bytes,
        ranks.len() as u64,
    ))
}

/// This algorithm's registration ([`super::REGISTRY`]). Rabenseifner's recursive halving and doubling (MPI's; `auto` leaves it out).
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::HalvingDoubling,
        name: "halving_doubling",
        ops: &[O::AllReduce, O::AllGather, O::ReduceScatter],
        nccl: false,
        uses_protocol: false,
        splits_channels: true,
        shaped_by_channels: false,
        uses_nvlink: true,
        reduces_in_switches: false,
        budget_steps: |s| 2.0 * s.ranks.log2().ceil() + 2.0,
        inter_host_steps: Some(|s| 2.0 * s.log_hosts() + 2.0),
        available: super::registry::always,
        emit: |s, r, _, em, a| emit(s, r, em, a),
        time,
        traffic: |s, r, _| traffic(s, r),
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    /// N = 8: reduce-scatter halves towards the rank's own segment, all-gather
    /// doubles the held block.
    #[test]
    fn blocks_halve_and_double() {
        assert_eq!(
            steps(CollectiveOp::ReduceScatter, 8),
            vec![(4, true), (2, true), (1, true)]
        );
        assert_eq!(block(5, 4, true), (0, 4)); // 5 keeps [4, 8), sends [0, 4) to 1
        assert_eq!(block(5, 2, true), (6, 8)); // then keeps [4, 6)
        assert_eq!(block(5, 1, true), (4, 5)); // then keeps [5, 6)
        assert_eq!(block(5, 1, false), (5, 6));
        assert_eq!(block(5, 2, false), (4, 6));
        assert_eq!(block(5, 4, false), (4, 8));
        assert!(check_pow2(12).is_err());
        assert!(check_pow2(1).is_ok());
    }
}
