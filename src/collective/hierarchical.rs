//! Hierarchical all-reduce: NVLink inside each host, one inter-host all-reduce per
//! rail, NVLink again (the two-level scheme of NCCL's CollNet/“NVLS + tree” and of
//! Horovod's hierarchical all-reduce; each level is a Thakur et al. IJHPCA 2005
//! algorithm).
//!
//! The communicator must be made of **whole hosts** (every GPU of each host it
//! touches, in any order); otherwise [`CollectiveError::BadCommunicator`]. With H
//! hosts of g GPUs and S bytes per rank (segments `piece(S, g, l)`):
//! 1. intra-host ring reduce-scatter over NVLink: local GPU l of every host ends with
//!    the host's sum of segment l (S/g bytes), all hosts at once;
//! 2. per rail l (the GPUs with local index l), an all-reduce of segment l between
//!    the H hosts with `spec.inter_host` (ring, tree, halving_doubling or sharp), all
//!    rails at once; with `sharp` this is NCCL CollNet: each GPU sends its reduced
//!    shard S/g through its own NIC into an in-network reduction, rail l on the
//!    l-th of the tied roots ([`super::sharp::SharpTree::build_nth`]) so the rails'
//!    trees do not share switch links (a fabric without SHARP runs the ring, and
//!    so does a rail refused a tree by [`super::sharp::grant_trees`]);
//! 3. intra-host ring all-gather of the g segments.
//!
//! Phases are separated by a barrier marker (a phase starts when the previous one
//! has ended everywhere), so the **closed form is the sum of the three phases**:
//! `T = T_ring_RS(g, S) + max_rails T_inter_AR(H, S/g) + T_ring_AG(g, S)`, each from
//! its module's formula on its own (uniform) edges: exact on a single switch with
//! whole hosts when g divides S. One host: phases 1 and 3 only; one GPU per host:
//! phase 2 only. Traffic: H·2(g−1)·S + 2(H−1)·S = 2(N−1)·S, the same as a flat ring
//! (with sharp between hosts: H·2(g−1)·S plus each rail's [`super::sharp`] traffic).
//! All-gather and reduce-scatter are not offered (their hierarchical forms need
//! non-contiguous pieces; use ring or halving-doubling).
use super::{
    halving_doubling, precheck, ring, sharp, tree, CollectiveError, CollectiveOp, CollectiveSpec,
    Emitter,
};
use crate::collective::Algorithm;
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// Lowers the collective into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation or inter-host algorithm, communicator not of whole hosts.
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

/// The communicator's hosts, each listing its GPUs by local index.
///
/// # Errors
/// [`CollectiveError::BadCommunicator`] if a host is only partly in the communicator.
pub fn hosts_of(ranks: &[GpuId], topo: &Topology) -> Result<Vec<Vec<GpuId>>, CollectiveError> {
    let g = topo.gpus_per_host;
    let mut order: Vec<u32> = Vec::new();
    let mut count = std::collections::HashMap::new();
    for &r in ranks {
        let h = topo.host_of(r);
        let e = count.entry(h).or_insert(0u32);
        if *e == 0 {
            order.push(h);
        }
        *e += 1;
    }
    for &h in &order {
        if count[&h] != g {
            return Err(CollectiveError::BadCommunicator(format!(
                "hierarchical needs whole hosts: host {h} has {} of its {g} GPUs in the communicator",
                count[&h]
            )));
        }
    }
    Ok(order
        .iter()
        .map(|&h| (0..g).map(|l| GpuId(h * g + l)).collect())
        .collect())
}

/// The inter-host algorithm, checked (sharp without SHARP switches is the ring).
fn inter(spec: &CollectiveSpec, topo: Option<&Topology>) -> Result<Algorithm, CollectiveError> {
    match spec.inter_host {
        Algorithm::Sharp if topo.is_some_and(|t| !sharp::available(t)) => Ok(Algorithm::Ring),
        a @ (Algorithm::Ring | Algorithm::Tree | Algorithm::HalvingDoubling | Algorithm::Sharp) => {
            Ok(a)
        }
        a => Err(CollectiveError::BadCommunicator(format!(
            "hierarchical runs ring, tree, halving_doubling or sharp between hosts, not {}",
            a.name()
        ))),
    }
}

/// The algorithm of each rail: `algo`, except that with sharp a rail refused an
/// aggregation tree ([`sharp::grant_trees`]) runs the ring.
fn rail_algorithms(
    algo: Algorithm,
    hosts: &[Vec<GpuId>],
    topo: &Topology,
) -> Result<Vec<Algorithm>, CollectiveError> {
    let g = hosts.first().map_or(0, Vec::len);
    if algo != Algorithm::Sharp {
        return Ok(vec![algo; g]);
    }
    let rails: Vec<Vec<GpuId>> = (0..g)
        .map(|l| hosts.iter().map(|h| h[l]).collect())
        .collect();
    Ok(sharp::grant_trees(topo, &rails)?
        .into_iter()
        .map(|ok| {
            if ok {
                Algorithm::Sharp
            } else {
                Algorithm::Ring
            }
        })
        .collect())
}

/// Emits the three phases; returns the dependencies that mark the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    let algo = inter(spec, Some(topo))?;
    let hosts = hosts_of(ranks, topo)?;
    let (s, chunk) = (spec.bytes, spec.chunk_bytes);
    if ranks.len() <= 1 || s == 0 {
        return Ok(after.to_vec());
    }
    let g = hosts[0].len();
    if algo == Algorithm::HalvingDoubling {
        halving_doubling::check_pow2(hosts.len())?;
    }
    let barrier = |em: &mut Emitter<'_>, ends: Vec<Dep>| vec![Dep::Done(em.dag.marker(&ends))];
    let mut ends = Vec::new();
    for h in &hosts {
        ends.extend(ring::emit_op(
            CollectiveOp::ReduceScatter,
            s,
            0,
            chunk,
            0,
            h,
            em,
            after,
        ));
    }
    let after1 = barrier(em, ends);
    let mut ends = Vec::new();
    let algos = rail_algorithms(algo, &hosts, topo)?;
    for (l, &algo) in algos.iter().enumerate() {
        let rail: Vec<GpuId> = hosts.iter().map(|h| h[l]).collect();
        let (off, len) = super::piece(s, g as u64, l as u64);
        let op = CollectiveOp::AllReduce;
        ends.extend(match algo {
            Algorithm::Tree => tree::emit_op(op, len, off, chunk, 0, &rail, em, &after1),
            Algorithm::HalvingDoubling => {
                halving_doubling::emit_op(op, len, off, chunk, &rail, em, &after1)?
            }
            Algorithm::Sharp => sharp::emit_op(len, off, chunk, l, &rail, topo, em, &after1)?,
            _ => ring::emit_op(op, len, off, chunk, 0, &rail, em, &after1),
        });
    }
    let after2 = barrier(em, ends);
    let mut ends = Vec::new();
    for h in &hosts {
        ends.extend(ring::emit_op(
            CollectiveOp::AllGather,
            s,
            0,
            chunk,
            0,
            h,
            em,
            &after2,
        ));
    }
    Ok(ends)
}

/// The three phase times (intra reduce-scatter, inter all-reduce, intra all-gather).
///
/// # Errors
/// As [`time`].
pub fn phase_times(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<[SimTime; 3], CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    let algo = inter(spec, Some(topo))?;
    let hosts = hosts_of(ranks, topo)?;
    let (s, chunk) = (spec.bytes, spec.chunk_bytes);
    if ranks.len() <= 1 || s == 0 {
        return Ok([SimTime::ZERO; 3]);
    }
    let g = hosts[0].len();
    let mut t = [SimTime::ZERO; 3];
    for h in &hosts {
        t[0] = t[0].max(ring::time_of(
            CollectiveOp::ReduceScatter,
            s,
            chunk,
            0,
            h,
            topo,
        )?);
        t[2] = t[2].max(ring::time_of(
            CollectiveOp::AllGather,
            s,
            chunk,
            0,
            h,
            topo,
        )?);
    }
    let seg = s.div_ceil(g as u64);
    let op = CollectiveOp::AllReduce;
    let algos = rail_algorithms(algo, &hosts, topo)?;
    for (l, &algo) in algos.iter().enumerate() {
        let rail: Vec<GpuId> = hosts.iter().map(|h| h[l]).collect();
        let r = match algo {
            Algorithm::Tree => tree::time_of(op, seg, chunk, 0, &rail, topo)?
                .max(tree::injection_bound(seg, &rail, topo)?),
            Algorithm::HalvingDoubling => halving_doubling::time_of(op, seg, chunk, &rail, topo)?,
            Algorithm::Sharp => sharp::time_of(seg, chunk, l, &rail, topo)?,
            _ => ring::time_of(op, seg, chunk, 0, &rail, topo)?,
        };
        t[1] = t[1].max(r);
    }
    Ok(t)
}

/// Closed-form time: the sum of [`phase_times`]. O(N) path-cost lookups
/// (N·log2 H with halving-doubling between hosts).
///
/// # Errors
/// Unsupported operation or inter-host algorithm, communicator not of whole hosts,
/// unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let [a, b, c] = phase_times(spec, ranks, topo)?;
    Ok(a.saturating_add(b).saturating_add(c))
}

/// Total payload bytes moved: 2(N−1)·S whatever the host size; with sharp between
/// hosts, the intra-host rings plus each rail's tree (see the module doc).
///
/// # Errors
/// Unsupported operation or bad communicator.
pub fn traffic(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    if inter(spec, Some(topo))? == Algorithm::Sharp {
        let hosts = hosts_of(ranks, topo)?;
        let (s, g) = (spec.bytes, hosts[0].len() as u64);
        if ranks.len() <= 1 || s == 0 {
            return Ok(0);
        }
        let intra = 2 * ring::traffic_of(CollectiveOp::ReduceScatter, s, g);
        let mut total = intra.saturating_mul(hosts.len() as u64);
        let algos = rail_algorithms(Algorithm::Sharp, &hosts, topo)?;
        for (l, &a) in algos.iter().enumerate() {
            let rail: Vec<GpuId> = hosts.iter().map(|h| h[l]).collect();
            let (_, len) = super::piece(s, g, l as u64);
            total = total.saturating_add(if a == Algorithm::Sharp {
                sharp::traffic_of(len, l, &rail, topo)?
            } else {
                ring::traffic_of(CollectiveOp::AllReduce, len, rail.len() as u64)
            });
        }
        return Ok(total);
    }
    Ok(ring::traffic_of(
        CollectiveOp::AllReduce,
        spec.bytes,
        ranks.len() as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::test_topo;

    #[test]
    fn hosts_in_order_of_appearance() {
        let t = test_topo(3, 2);
        let ranks = [GpuId(5), GpuId(0), GpuId(4), GpuId(1)];
        assert_eq!(
            hosts_of(&ranks, &t).unwrap(),
            vec![vec![GpuId(4), GpuId(5)], vec![GpuId(0), GpuId(1)]]
        );
        assert!(hosts_of(&[GpuId(0), GpuId(1), GpuId(2)], &t).is_err());
    }
}
