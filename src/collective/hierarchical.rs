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
//! phase once its GPUs hold their rails' results (no global barrier).
//!
//! **Pipelining.** The buffer is cut into B pipeline blocks
//! ([`pipeline_blocks`]: the power of two up to [`MAX_PIPELINE_BLOCKS`], at
//! most one per chunk of each GPU of a host, with the lowest closed form; 1
//! when there is nothing to overlap). Every phase takes the blocks in order, a
//! GPU starting block b + 1 once it holds its result of block b (NCCL's loop
//! over slices on a channel), and a phase starts a block as soon as the phase
//! before has delivered it, so NVLink and the network work on different blocks
//! at once. On 4 DGX H100 this takes a 1 GiB all-reduce from 225 to 408 GB/s
//! busbw, the NVLink bound (409.6).
//!
//! **Closed form.** With one block, the sum of the three phases,
//! `T = T_ring_RS(g, S) + max_rails T_inter_AR(H, S/g) + T_ring_AG(g, S)`, each
//! from its module's formula on its own (uniform) edges: exact on a single
//! switch with whole hosts when g divides S. With B blocks, a flow shop of
//! identical jobs: phase i needs B·max(t_i, w_i) (t_i: one block's phase time,
//! w_i: one block's bytes over the phase's busiest link), plus one block
//! through the phases before and after it, and never less than the NVLinks'
//! time for both intra-host phases. Measured against the flow and packet
//! fidelities: within 0.5% (4 and 64 DGX H100; 4 × 4 GPUs on a fat-tree at
//! packet level). One host: phases 1 and 3 only; one GPU per host: phase 2
//! only. Traffic: H·2(g−1)·S + 2(H−1)·S = 2(N−1)·S, the same as a flat ring
//! (with sharp between hosts: H·2(g−1)·S plus each rail's [`super::sharp`]
//! traffic). When the rails share NICs or uplinks, the inter-host phase is at
//! least the busiest link's bytes over its rate ([`super::busiest_link_time`]),
//! which the analytical time takes when it binds (ring between hosts).
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
            let blocks = pipeline_blocks(spec, ranks, topo)?;
            Ok(emit_two_level(spec, ranks, blocks, &hosts, em, after))
        }
        _ => {
            let blocks = pipeline_blocks(spec, ranks, topo)?;
            emit_allreduce(spec, algo, blocks, &hosts, topo, em, after)
        }
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
    // each host's ring is the one before shifted by a host's GPUs: marked as
    // blocks, the DAG stores one (87.5% of the tasks at 8 GPUs per host)
    let out = hosts
        .iter()
        .zip(starts)
        .map(|(gpus, st)| {
            em.dag.begin_block();
            ring_from(op, segs, chunk, gpus, em, st)
        })
        .collect();
    em.dag.end_blocks();
    out
}

/// GPU l of every host: rail l.
fn rail(hosts: &[Vec<GpuId>], l: usize) -> Vec<GpuId> {
    hosts.iter().map(|h| h[l]).collect()
}

/// All-reduce: intra-host reduce-scatter, one inter-host all-reduce per rail,
/// intra-host all-gather, on each of `blocks` consecutive blocks of the buffer.
/// The reduce-scatters take the blocks in order (a GPU starts block b + 1 once
/// it holds its sum of block b), so blocks reach the network one after the
/// other; a rail starts a block once its own GPUs hold their host's sums of
/// it, and a host's all-gather once its GPUs hold their rails' results (no
/// barrier). NVLink and the network thus work on different blocks at the same
/// time, and the rails' rings of successive blocks overlap their step
/// latencies, as NCCL's pipelined slices do.
fn emit_allreduce(
    spec: &CollectiveSpec,
    algo: Algorithm,
    blocks: u64,
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
    let algos = rail_algorithms(algo, hosts, topo)?;
    // what each GPU's stages wait for before their next block
    let fresh = || vec![vec![after.to_vec(); g]; hosts.len()];
    let (mut prev_rs, mut prev_rail, mut prev_ag) = (fresh(), fresh(), fresh());
    let mut ends = Vec::new();
    for b in 0..blocks {
        let (block_off, block_len) = super::piece(s, blocks, b);
        let segment = |l: usize| {
            let (o, len) = super::piece(block_len, g as u64, l as u64);
            (block_off + o, len)
        };
        let pieces: Vec<ring::Ranges> = (0..g).map(|l| vec![segment(l)]).collect();
        // stage 1: ready[h][l] = GPU l of host h holds its host's sum of segment l
        let ready = in_every_host(
            CollectiveOp::ReduceScatter,
            &pieces,
            chunk,
            hosts,
            em,
            prev_rs,
        );
        // stage 2, per rail: rail_done[h][l] = GPU l of host h holds the rail's sum
        let mut rail_done: Vec<Vec<Vec<Dep>>> = vec![vec![Vec::new(); g]; hosts.len()];
        for (l, &algo) in algos.iter().enumerate() {
            let rail = rail(hosts, l);
            let (off, len) = segment(l);
            let op = CollectiveOp::AllReduce;
            let starts: Vec<Vec<Dep>> = ready
                .iter()
                .zip(&prev_rail)
                .map(|(r, p)| [r[l].as_slice(), p[l].as_slice()].concat())
                .collect();
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
            // One zero-time marker gathers every host's readiness, and one its
            // end: handing the H hosts' dependencies to each of the rail's H
            // positions (and its ends to each host) made O(H²) edges per rail
            // and block — 1e9 edges, 4 GiB, at 512 GPUs (heaptrack: Dag::add).
            let all: Vec<Dep> = starts.into_iter().flatten().collect();
            let gate = [Dep::Done(em.dag.marker(&all))];
            let ends = match algo {
                Algorithm::Tree => tree::emit_op(op, len, off, chunk, 0, &rail, em, &gate),
                Algorithm::HalvingDoubling => {
                    halving_doubling::emit_op(op, len, off, chunk, &rail, em, &gate)?
                }
                _ => sharp::emit_op(len, off, chunk, l, &rail, topo, em, &gate)?,
            };
            let end = vec![Dep::Done(em.dag.marker(&ends))];
            for row in rail_done.iter_mut() {
                row[l] = end.clone();
            }
        }
        // stage 3: intra-host all-gather, each GPU starting from its rail's result
        let starts: Vec<Vec<Vec<Dep>>> = rail_done
            .iter()
            .zip(&prev_ag)
            .map(|(r, p)| {
                r.iter()
                    .zip(p)
                    .map(|(a, b)| [a.as_slice(), b.as_slice()].concat())
                    .collect()
            })
            .collect();
        let done = in_every_host(CollectiveOp::AllGather, &pieces, chunk, hosts, em, starts);
        ends.extend(done.iter().flatten().flatten().cloned());
        prev_rs = ready;
        prev_rail = rail_done;
        prev_ag = done;
    }
    Ok(ends)
}

/// Reduce-scatter (intra-host first, then per rail) and all-gather (per rail
/// first, then intra-host) in two levels. Rank r owns `piece(S, N, r)`; GPU l
/// of every host is responsible, inside its host, for the *rail block* l: the
/// pieces of all the ranks of rail l (H ranges of the buffer). Reduce-scatter:
/// an intra-host ring leaves GPU l with its host's sum of rail block l, then
/// rail l's ring between hosts leaves each rank with its piece summed over all
/// hosts. All-gather runs the same in reverse. Each moves (g−1)/g·S over NVLink
/// and (H−1)/H·S/g over each rail per GPU: half an all-reduce's bytes. Cut
/// into `slices` pipeline slices (slice b of every rank's piece), the first
/// level takes them in order and the second as they come, as the all-reduce.
fn emit_two_level(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    slices: u64,
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
    let hosts_n = hosts.len();
    let mut first_level = vec![vec![after.to_vec(); g]; hosts_n];
    let mut out = Vec::new();
    for b in 0..slices {
        // slice b of rank r's own piece
        let own = |gpu: GpuId| {
            let (o, len) = super::piece(s, n, idx[&gpu]);
            let (so, sl) = super::piece(len, slices, b);
            (o + so, sl)
        };
        // rail block l of host h's GPUs: every rail-l rank's slice, in buffer order
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
        if spec.op == CollectiveOp::ReduceScatter {
            let ready = in_every_host(
                CollectiveOp::ReduceScatter,
                &blocks,
                chunk,
                hosts,
                em,
                first_level,
            );
            for l in 0..g {
                let starts: Vec<Vec<Dep>> = ready.iter().map(|r| r[l].clone()).collect();
                let op = CollectiveOp::ReduceScatter;
                out.extend(
                    ring_from(op, &inter_segs(l), chunk, &rail(hosts, l), em, starts)
                        .into_iter()
                        .flatten(),
                );
            }
            first_level = ready;
            continue;
        }
        // all-gather: rails first (by_rail[l][h]), then inside each host
        let by_rail: Vec<Vec<Vec<Dep>>> = (0..g)
            .map(|l| {
                let starts: Vec<Vec<Dep>> = first_level.iter().map(|f| f[l].clone()).collect();
                let op = CollectiveOp::AllGather;
                ring_from(op, &inter_segs(l), chunk, &rail(hosts, l), em, starts)
            })
            .collect();
        let rail_done: Vec<Vec<Vec<Dep>>> = (0..hosts_n)
            .map(|h| by_rail.iter().map(|r| r[h].clone()).collect())
            .collect();
        first_level = rail_done.clone();
        let done = in_every_host(
            CollectiveOp::AllGather,
            &blocks,
            chunk,
            hosts,
            em,
            rail_done,
        );
        out.extend(done.into_iter().flatten().flatten());
    }
    out
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

/// Most pipeline blocks a hierarchical all-reduce is cut into: past 16 the
/// blocks' per-step latencies outweigh the overlap they buy on the sizes
/// collectives run at (NCCL's loops run a few slices per channel in flight).
pub const MAX_PIPELINE_BLOCKS: u64 = 16;

/// Closed-form time of a collective cut into `blocks` pipeline blocks: a flow
/// shop of identical jobs. Every phase takes the blocks in order, a GPU
/// starting block b + 1 once it holds its result of block b, which for a ring
/// is its last step: with t_i one block's phase time ([`phase_times`] on S/B)
/// and w_i one block's bytes over the phase's busiest link ([`stage_loads`]),
/// phase i needs `total_i = B·max(t_i, w_i)` for all blocks, and the whole is
/// the slowest phase's total plus one block through the phases before and
/// after it, `max_i(Σ_{j<i} t_j + total_i + Σ_{j>i} t_j)`, never
/// below the time the NVLinks need for both intra-host phases' bytes of the
/// whole buffer, which share the links. `rail_latency` (the rail phase's
/// step latencies, when choosing the number of blocks) is added to each
/// block's shared rail bytes. `whole`: [`stage_loads`] of the whole buffer,
/// the same for every number of blocks (computed once by the caller: it
/// routes every rail's ring, a quarter of the lowering's closed-form time at
/// 16,384 GPUs).
fn pipelined_time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    blocks: u64,
    rail_latency: Option<SimTime>,
    whole: [SimTime; 3],
) -> Result<SimTime, CollectiveError> {
    let block = CollectiveSpec {
        bytes: spec.bytes.div_ceil(blocks),
        ..spec.clone()
    };
    let mut t = phase_times(&block, ranks, topo)?;
    let w = stage_loads(&block, ranks, topo)?;
    if let Some(latency) = rail_latency {
        t[1] = t[1].max(w[1].saturating_add(latency));
    }
    let total = |i: usize| super::times(blocks, t[i].max(w[i]));
    let mut best = SimTime::ZERO;
    for i in 0..3 {
        let before = t[..i]
            .iter()
            .fold(SimTime::ZERO, |a, &x| a.saturating_add(x));
        let after = t[i + 1..]
            .iter()
            .fold(SimTime::ZERO, |a, &x| a.saturating_add(x));
        best = best.max(before.saturating_add(total(i)).saturating_add(after));
    }
    Ok(best.max(whole[0].saturating_add(whole[2])))
}

/// The time each stage's busiest link needs for its bytes, no latency: the
/// intra-host rings move (g−1)/g·S over each GPU's NVLink; the rails move at
/// least 2(H−1)/H·S/g through each NIC for an all-reduce ((H−1)/H·S/g for
/// reduce-scatter and all-gather; S/g with SHARP, which reduces in the
/// switches), more where rails share NICs or uplinks (the busiest link of the
/// rails' rings, [`super::busiest_link_time`], less its path latency).
fn stage_loads(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<[SimTime; 3], CollectiveError> {
    let hosts = hosts_of(ranks, topo)?;
    let (h, g) = (hosts.len() as u64, hosts[0].len() as u64);
    let wire = |b: u64| spec.proto.protocol.wire_bytes(b);
    let mut loads = [SimTime::ZERO; 3];
    if g >= 2 {
        let cost = super::worst_cost(topo, hosts.iter().map(|x| (x[0], x[1])))?;
        let nvlink = cost.rate.tx_time(wire(spec.bytes / g * (g - 1)));
        if spec.op != CollectiveOp::AllGather {
            loads[0] = nvlink;
        }
        if spec.op != CollectiveOp::ReduceScatter {
            loads[2] = nvlink;
        }
    }
    if h >= 2 {
        let rings = rails_load_bound(spec.op, wire(spec.bytes), &hosts, topo)?;
        let shortest =
            super::worst_cost(topo, (1..hosts.len()).map(|x| (hosts[0][0], hosts[x][0])))?;
        let mut bytes_only = rings.0.saturating_sub(shortest.alpha.0);
        if inter(spec, Some(topo))? == Algorithm::Sharp {
            // one contribution up and one result down per NIC: H/(2(H−1)) of a ring's
            bytes_only = (bytes_only as u128 * h as u128 / (2 * (h - 1)) as u128) as u64;
        }
        loads[1] = SimTime(bytes_only);
    }
    Ok(loads)
}

/// The number of pipeline blocks of a hierarchical all-reduce, reduce-scatter
/// or all-gather: the power of two up to [`MAX_PIPELINE_BLOCKS`] (and at most
/// one per chunk of each GPU of a host) whose closed-form time is the lowest,
/// the way NCCL sizes its slices to keep every stage busy without paying too
/// many step latencies. One block for one host or one GPU per host, where
/// there is nothing to overlap.
///
/// # Errors
/// As [`time`].
pub fn pipeline_blocks(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    let two_level = matches!(
        spec.op,
        CollectiveOp::AllReduce | CollectiveOp::ReduceScatter | CollectiveOp::AllGather
    );
    if !two_level || ranks.len() <= 1 || spec.bytes == 0 {
        return Ok(1);
    }
    let hosts = hosts_of(ranks, topo)?;
    let g = hosts[0].len() as u64;
    if hosts.len() < 2 || g < 2 {
        return Ok(1);
    }
    // Rails that share a NIC step together: each of a block's ring steps pays
    // its latency while the NIC idles, on top of the shared bytes (8 rails
    // through one NIC: 14 µs per step against 45 µs of bytes at 16 blocks of
    // 256 MiB). Not a lower bound (large steps hide it in their chunk
    // pipeline), so it only steers the number of blocks: the rail phase's
    // time on one byte per rank.
    let tiny = CollectiveSpec {
        bytes: (ranks.len() as u64).min(spec.bytes),
        ..spec.clone()
    };
    // The candidates are independent closed forms, each O(N) routes (~10% of
    // flow131k's run: three protocols tuned, then the lowering): they run on
    // the threads `with_threads` gave (`run` gives the simulation's), and
    // the first smallest wins, in candidate order, whatever the count.
    let (latency, whole) = super::join_on_threads(
        || phase_times(&tiny, ranks, topo),
        || stage_loads(spec, ranks, topo),
    );
    let (latency, whole) = (Some(latency?[1]), whole?);
    let mut blocks = vec![1];
    let mut b = 2;
    // a block is at least one chunk per GPU of a host: the unit a ring step
    // moves inside a host (NCCL's loop iterations are g chunks per channel)
    let smallest = (ranks.len() as u64).max(g.saturating_mul(spec.chunk_bytes));
    while b <= MAX_PIPELINE_BLOCKS && spec.bytes / b >= smallest {
        blocks.push(b);
        b *= 2;
    }
    let times = super::map_on_threads(&blocks, |&b| {
        pipelined_time(spec, ranks, topo, b, latency, whole)
    });
    let mut best: Option<(SimTime, u64)> = None;
    for (t, &b) in times.into_iter().zip(&blocks) {
        let t = t?;
        if best.is_none_or(|(bt, _)| t < bt) {
            best = Some((t, b));
        }
    }
    Ok(best.map_or(1, |(_, b)| b))
}

/// Closed-form time: the pipelined stages of [`pipeline_blocks`] for an
/// all-reduce, the sum of [`phase_times`] otherwise. O(N) path-cost lookups
/// per candidate block count (N·log2 H with halving-doubling between hosts).
///
/// # Errors
/// Unsupported operation or inter-host algorithm, communicator not of whole hosts,
/// unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let blocks = pipeline_blocks(spec, ranks, topo)?;
    if blocks > 1 {
        let whole = stage_loads(spec, ranks, topo)?;
        return pipelined_time(spec, ranks, topo, blocks, None, whole);
    }
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

/// The budget's messages per rank of an algorithm that runs NVLink steps in
/// the host and one inter-host algorithm per rail (hierarchical, NVLS): the
/// NVLink steps plus the inter-host algorithm's own count over the hosts.
pub(crate) fn steps_of_rails(s: &super::StepShape) -> f64 {
    let inter = super::entry(s.inter_host)
        .inter_host_steps
        .map_or(2.0 * s.hosts, |f| f(s));
    2.0 * s.gpus_per_host + inter
}

/// This algorithm's registration ([`super::REGISTRY`]). NVLink inside the host, one inter-host algorithm per rail (Horovod's; `auto` leaves it out).
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::Hierarchical,
        name: "hierarchical",
        ops: &[O::AllReduce, O::AllGather, O::ReduceScatter],
        nccl: false,
        uses_protocol: true,
        splits_channels: false,
        shaped_by_channels: false,
        uses_nvlink: true,
        reduces_in_switches: false,
        budget_steps: steps_of_rails,
        inter_host_steps: None,
        available: super::registry::always,
        emit,
        time,
        traffic,
    }
};

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

    /// The intra-host rings of a hierarchical all-reduce are stored once per
    /// pipeline block and stage: 16 hosts × 8 GPUs, a tree between hosts,
    /// one chunk per step. A ring reduce-scatter (and all-gather) of g GPUs
    /// is g − 1 steps of g transfers (Patarasuk & Yuan 2009), so each block
    /// and stage holds H·g(g−1) intra-host transfers of which (H − 1)·g(g−1)
    /// are repeats: stored = tasks − 2·blocks·(H − 1)·g(g − 1). The DAG reads
    /// as the same DAG copied flat (`Dag::append` stores every task).
    #[test]
    fn pipeline_blocks_are_stored_once() {
        let (h, g) = (16u64, 8u64);
        let topo = test_topo(h as u32, g as u32);
        let spec = CollectiveSpec {
            op: CollectiveOp::AllReduce,
            algorithm: Algorithm::Hierarchical,
            bytes: 1 << 26,
            chunk_bytes: u64::MAX,
            inter_host: Algorithm::Tree,
            root: 0,
            channels: 1,
            pxn: false,
            proto: crate::collective::ProtoCost::NONE,
        };
        let ranks: Vec<GpuId> = (0..(h * g) as u32).map(GpuId).collect();
        let mut dag = Dag::new();
        lower(&spec, &ranks, &topo, &mut dag, &[]).unwrap();
        let blocks = pipeline_blocks(&spec, &ranks, &topo).unwrap();
        let intra = dag
            .tasks()
            .filter(|t| match t.kind {
                crate::dag::TaskKind::Transfer { src, dst, .. } => {
                    topo.host_of(src) == topo.host_of(dst)
                }
                _ => false,
            })
            .count() as u64;
        assert_eq!(intra, 2 * blocks * h * g * (g - 1));
        let want = dag.len() as u64 - 2 * blocks * (h - 1) * g * (g - 1);
        assert_eq!(dag.stored_tasks() as u64, want, "{} tasks", dag.len());
        let mut flat = Dag::new();
        flat.append(&dag, |g| g, &[], "");
        assert_eq!(flat.stored_tasks(), dag.len());
        assert!(dag.tasks().eq(flat.tasks()));
        for t in 0..dag.len() as u32 {
            assert!(dag.deps_of(TaskId(t)).eq(flat.deps_of(TaskId(t))));
        }
    }
}
