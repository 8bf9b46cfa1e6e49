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
//! A rail starts once its own GPUs hold their host's sums and a host's last
//! phase once its GPUs hold their rails' results (no global barrier), so in a
//! symmetric cluster the **closed form is the sum of the three phases**:
//! `T = T_ring_RS(g, S) + max_rails T_inter_AR(H, S/g) + T_ring_AG(g, S)`, each from
//! its module's formula on its own (uniform) edges: exact on a single switch with
//! whole hosts when g divides S. One host: phases 1 and 3 only; one GPU per host:
//! phase 2 only. Traffic: H·2(g−1)·S + 2(H−1)·S = 2(N−1)·S, the same as a flat ring
//! (with sharp between hosts: H·2(g−1)·S plus each rail's [`super::sharp`] traffic).
//! When the rails share NICs or uplinks, the inter-host phase is at least the
//! busiest link's bytes over its rate ([`super::busiest_link_time`]), which the
//! analytical time takes when it binds (ring between hosts).
//!
//! **Reduce-scatter and all-gather** run in two levels on *rail blocks* (GPU l
//! of every host is responsible, inside its host, for the pieces of all of rail
//! l's ranks): reduce-scatter is an intra-host ring, then each rail's ring;
//! all-gather the reverse. Half an all-reduce's bytes, (N−1)·S.
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
    let mut em = Emitter::new(dag, topo);
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

/// Emits the phases of `spec.op` (see the module doc); returns the
/// dependencies that mark the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    let algo = inter(spec, Some(topo))?;
    let hosts = hosts_of(ranks, topo)?;
    if ranks.len() <= 1 || spec.bytes == 0 {
        return Ok(after.to_vec());
    }
    match spec.op {
        CollectiveOp::ReduceScatter | CollectiveOp::AllGather => {
            Ok(emit_two_level(spec, ranks, &hosts, em, after))
        }
        _ => emit_allreduce(spec, algo, &hosts, topo, em, after),
    }
}

/// A plain ring over `gpus` in the given order.
fn plain(gpus: &[GpuId]) -> ring::ChannelRing {
    ring::ChannelRing {
        order: gpus.to_vec(),
        proxy: vec![None; gpus.len()],
    }
}

/// Runs `op` as a plain ring over `gpus` on `segs`, position p starting after
/// `starts[p]`; returns per position what marks it holding its result (its
/// start when nothing moves: one GPU, or no bytes).
pub(crate) fn ring_from(
    op: CollectiveOp,
    segs: &[ring::Ranges],
    chunk: u64,
    gpus: &[GpuId],
    em: &mut Emitter<'_>,
    starts: Vec<Vec<Dep>>,
) -> Vec<Vec<Dep>> {
    ring::emit_ring_ranges(op, segs, chunk, &plain(gpus), em, &starts).unwrap_or(starts)
}

/// [`ring_from`] inside every host, GPU l of host h starting after
/// `starts[h][l]`; indexed `[host][local GPU]`.
fn in_every_host(
    op: CollectiveOp,
    segs: &[ring::Ranges],
    chunk: u64,
    hosts: &[Vec<GpuId>],
    em: &mut Emitter<'_>,
    starts: Vec<Vec<Vec<Dep>>>,
) -> Vec<Vec<Vec<Dep>>> {
    hosts
        .iter()
        .zip(starts)
        .map(|(gpus, st)| ring_from(op, segs, chunk, gpus, em, st))
        .collect()
}

/// GPU l of every host: rail l.
fn rail(hosts: &[Vec<GpuId>], l: usize) -> Vec<GpuId> {
    hosts.iter().map(|h| h[l]).collect()
}

/// All-reduce: intra-host reduce-scatter, one inter-host all-reduce per rail,
/// intra-host all-gather. A rail starts once its own GPUs hold their host's
/// sums, and a host's all-gather once its GPUs hold their rails' results: the
/// phases overlap across rails and hosts instead of waiting on a barrier.
fn emit_allreduce(
    spec: &CollectiveSpec,
    algo: Algorithm,
    hosts: &[Vec<GpuId>],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    let (s, chunk) = (spec.bytes, spec.chunk_bytes);
    let g = hosts[0].len();
    if algo == Algorithm::HalvingDoubling {
        halving_doubling::check_pow2(hosts.len())?;
    }
    let pieces: Vec<ring::Ranges> = (0..g as u64)
        .map(|l| vec![super::piece(s, g as u64, l)])
        .collect();
    // phase 1: ready[h][l] = what GPU l of host h waits for before its rail starts
    let starts = vec![vec![after.to_vec(); g]; hosts.len()];
    let ready = in_every_host(
        CollectiveOp::ReduceScatter,
        &pieces,
        chunk,
        hosts,
        em,
        starts,
    );
    // phase 2: per rail; rail_done[h][l] = what GPU l of host h waits for next
    let mut rail_done: Vec<Vec<Vec<Dep>>> = vec![vec![Vec::new(); g]; hosts.len()];
    let algos = rail_algorithms(algo, hosts, topo)?;
    for (l, &algo) in algos.iter().enumerate() {
        let rail = rail(hosts, l);
        let (off, len) = super::piece(s, g as u64, l as u64);
        let op = CollectiveOp::AllReduce;
        let starts: Vec<Vec<Dep>> = ready.iter().map(|r| r[l].clone()).collect();
        if algo == Algorithm::Ring {
            let n = rail.len() as u64;
            let segs: Vec<ring::Ranges> = (0..n)
                .map(|p| {
                    let (o, b) = super::piece(len, n, p);
                    vec![(off + o, b)]
                })
                .collect();
            let ends = ring_from(op, &segs, chunk, &rail, em, starts);
            for (h, e) in ends.into_iter().enumerate() {
                rail_done[h][l] = e;
            }
            continue;
        }
        let all: Vec<Dep> = starts.into_iter().flatten().collect();
        let ends = match algo {
            Algorithm::Tree => tree::emit_op(op, len, off, chunk, 0, &rail, em, &all),
            Algorithm::HalvingDoubling => {
                halving_doubling::emit_op(op, len, off, chunk, &rail, em, &all)?
            }
            _ => sharp::emit_op(len, off, chunk, l, &rail, topo, em, &all)?,
        };
        for row in rail_done.iter_mut() {
            row[l] = ends.clone();
        }
    }
    // phase 3: intra-host all-gather, each GPU starting from its rail's result
    let done = in_every_host(
        CollectiveOp::AllGather,
        &pieces,
        chunk,
        hosts,
        em,
        rail_done,
    );
    Ok(done.into_iter().flatten().flatten().collect())
}

/// Reduce-scatter (intra-host first, then per rail) and all-gather (per rail
/// first, then intra-host) in two levels. Rank r owns `piece(S, N, r)`; GPU l
/// of every host is responsible, inside its host, for the *rail block* l: the
/// pieces of all the ranks of rail l (H ranges of the buffer). Reduce-scatter:
/// an intra-host ring leaves GPU l with its host's sum of rail block l, then
/// rail l's ring between hosts leaves each rank with its piece summed over all
/// hosts. All-gather runs the same in reverse. Each moves (g−1)/g·S over NVLink
/// and (H−1)/H·S/g over each rail per GPU: half an all-reduce's bytes.
fn emit_two_level(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    hosts: &[Vec<GpuId>],
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let (s, chunk) = (spec.bytes, spec.chunk_bytes);
    let n = ranks.len() as u64;
    let g = hosts[0].len();
    let idx: std::collections::HashMap<GpuId, u64> = ranks
        .iter()
        .enumerate()
        .map(|(i, &r)| (r, i as u64))
        .collect();
    let own = |gpu: GpuId| super::piece(s, n, idx[&gpu]);
    // rail block l of host h's GPUs: every rail-l rank's piece, in buffer order
    let blocks: Vec<ring::Ranges> = (0..g)
        .map(|l| {
            let mut r: ring::Ranges = rail(hosts, l).into_iter().map(own).collect();
            r.sort_unstable();
            r
        })
        .collect();
    let inter_segs = |l: usize| -> Vec<ring::Ranges> {
        rail(hosts, l)
            .into_iter()
            .map(|gpu| vec![own(gpu)])
            .collect()
    };
    let hosts_n = hosts.len();
    if spec.op == CollectiveOp::ReduceScatter {
        let starts = vec![vec![after.to_vec(); g]; hosts_n];
        let ready = in_every_host(
            CollectiveOp::ReduceScatter,
            &blocks,
            chunk,
            hosts,
            em,
            starts,
        );
        let mut out = Vec::new();
        for l in 0..g {
            let starts: Vec<Vec<Dep>> = ready.iter().map(|r| r[l].clone()).collect();
            let op = CollectiveOp::ReduceScatter;
            out.extend(
                ring_from(op, &inter_segs(l), chunk, &rail(hosts, l), em, starts)
                    .into_iter()
                    .flatten(),
            );
        }
        return out;
    }
    // all-gather: rails first (by_rail[l][h]), then inside each host
    let by_rail: Vec<Vec<Vec<Dep>>> = (0..g)
        .map(|l| {
            let starts = vec![after.to_vec(); hosts_n];
            let op = CollectiveOp::AllGather;
            ring_from(op, &inter_segs(l), chunk, &rail(hosts, l), em, starts)
        })
        .collect();
    let rail_done: Vec<Vec<Vec<Dep>>> = (0..hosts_n)
        .map(|h| by_rail.iter().map(|r| r[h].clone()).collect())
        .collect();
    let done = in_every_host(
        CollectiveOp::AllGather,
        &blocks,
        chunk,
        hosts,
        em,
        rail_done,
    );
    done.into_iter().flatten().flatten().collect()
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
    if matches!(
        spec.op,
        CollectiveOp::ReduceScatter | CollectiveOp::AllGather
    ) {
        // intra-host ring on the whole buffer (rail blocks of S/g), then each
        // rail's ring on S/g (reduce-scatter), or the reverse (all-gather)
        let op = spec.op;
        let (intra, inter) = if op == CollectiveOp::ReduceScatter {
            (0, 1)
        } else {
            (2, 1)
        };
        for h in &hosts {
            t[intra] = t[intra].max(ring::time_with(op, s, chunk, 0, h, topo, &spec.proto)?);
        }
        for l in 0..g {
            let rail: Vec<GpuId> = hosts.iter().map(|h| h[l]).collect();
            let seg = s.div_ceil(g as u64);
            t[inter] = t[inter].max(ring::time_with(
                op,
                seg,
                chunk,
                0,
                &rail,
                topo,
                &spec.proto,
            )?);
        }
        t[inter] = t[inter].max(rails_load_bound(op, s, &hosts, topo)?);
        return Ok(t);
    }
    for h in &hosts {
        t[0] = t[0].max(ring::time_with(
            CollectiveOp::ReduceScatter,
            s,
            chunk,
            0,
            h,
            topo,
            &spec.proto,
        )?);
        t[2] = t[2].max(ring::time_with(
            CollectiveOp::AllGather,
            s,
            chunk,
            0,
            h,
            topo,
            &spec.proto,
        )?);
    }
    let seg = s.div_ceil(g as u64);
    let op = CollectiveOp::AllReduce;
    let algos = rail_algorithms(algo, &hosts, topo)?;
    for (l, &algo) in algos.iter().enumerate() {
        let rail: Vec<GpuId> = hosts.iter().map(|h| h[l]).collect();
        let r = match algo {
            Algorithm::Tree => tree::time_with(op, seg, chunk, 0, &rail, topo, &spec.proto)?
                .max(tree::injection_bound(seg, &rail, topo)?),
            Algorithm::HalvingDoubling => {
                halving_doubling::time_of(op, seg, chunk, &rail, topo, &spec.proto)?
            }
            Algorithm::Sharp => {
                sharp::time_of(seg, chunk, l, &rail, topo)?.saturating_add(spec.proto.collnet)
            }
            _ => ring::time_with(op, seg, chunk, 0, &rail, topo, &spec.proto)?,
        };
        t[1] = t[1].max(r);
    }
    if algos.iter().all(|&a| a == Algorithm::Ring) {
        t[1] = t[1].max(rails_load_bound(op, s, &hosts, topo)?);
    }
    Ok(t)
}

/// The rails' rings run at once: when they share NICs or uplinks, the busiest
/// link bounds the inter-host phase ([`super::busiest_link_time`]). Each ring
/// edge carries K/H of rail l's piece (K = 2(H−1) for all-reduce, H−1 else).
fn rails_load_bound(
    op: CollectiveOp,
    s: u64,
    hosts: &[Vec<GpuId>],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let h = hosts.len();
    if h < 2 {
        return Ok(SimTime::ZERO);
    }
    let g = hosts[0].len();
    let k = if op == CollectiveOp::AllReduce {
        2 * (h as u64 - 1)
    } else {
        h as u64 - 1
    };
    let flows = (0..g * h).map(|x| {
        let (l, p) = (x / h, x % h);
        let bytes = super::piece(s, g as u64, l as u64).1 * k / h as u64;
        (hosts[p][l], hosts[(p + 1) % h][l], bytes)
    });
    super::busiest_link_time(topo, flows)
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
    if matches!(
        spec.op,
        CollectiveOp::ReduceScatter | CollectiveOp::AllGather
    ) {
        // (g−1)·S/g per GPU inside hosts plus (H−1)·S/N per GPU between them:
        // (N−1)·S/N per GPU, as a flat ring
        return Ok(ring::traffic_of(spec.op, spec.bytes, ranks.len() as u64));
    }
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
