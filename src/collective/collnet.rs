//! NCCL's CollNet chain (`NCCL_ALGO=CollNetChain`): all-reduce through the
//! network's in-switch reduction (InfiniBand SHARP) with a chain inside each
//! node (NCCL 2.15+, `src/device/all_reduce.h`, `runCollNetChain`).
//!
//! **Schedule.** Channel c (of `channels`, default one per NIC) carries
//! `piece(S, C, c)`. In every host the GPUs form a chain that ends at the
//! channel's head, local GPU c mod g, so the channels leave a host through
//! different NICs: the chain's tail sends chunk i to its neighbour, which adds
//! its own and passes it on, up to the head (g − 1 NVLink hops, reductions);
//! the head sends its host's sum into the SHARP tree spanning the heads of all
//! hosts ([`super::sharp`], tree `c` of the tied roots, so the channels' trees
//! do not share switch links), and passes the result back down the chain
//! (g − 1 NVLink copies). Every stage runs chunk by chunk: a chunk enters the
//! tree as soon as it reached the head, and goes down the chain as soon as it
//! came back. Each GPU has one up and one down stream per channel.
//!
//! Against CollNet direct (`hierarchical` with `inter_host = "sharp"`, which
//! reduce-scatters over NVLink first and sends S/g per GPU into the network),
//! the chain sends the whole channel share through one head: fewer network
//! flows, but each NVLink carries S up and S down, the ring's 2(g−1)/g·S twice.
//!
//! **Closed form.** Per channel, the first chunk climbs the chain and the last
//! one descends it, around the SHARP pipeline of the channel's share:
//! `T_c = 2(g−1)·(α_NVLink + β_chunk) + T_SHARP(S/C)`; the collective takes
//! `max(max_c T_c, NVLink load)`, the NVLink load being the busiest NVLink's
//! bytes over its rate when every channel's chain runs at once
//! ([`super::busiest_link_time`]). Channels that share a NIC are not charged
//! for it (the flow fidelity shares it).
//!
//! **Capability.** Needs whole hosts, at least two of them, and switches that
//! reduce ([`super::sharp::available`]); otherwise it lowers, costs and counts
//! as the ring, as [`super::sharp`] does. All-reduce only. Traffic: per
//! channel, 2(g−1)·S/C per host over NVLink plus the SHARP tree's traffic.
use super::{
    chunks_at, hierarchical, piece, precheck, ring, sharp, ChunkTimes, CollectiveError,
    CollectiveSpec, Emitter,
};
use crate::dag::{Dep, TaskId};
use crate::topology::{GpuId, Topology};
use crate::units::SimTime;

/// The hosts of `ranks` when the chain can run on them: whole hosts, two or
/// more, on a fabric whose switches reduce.
fn chain_hosts(ranks: &[GpuId], topo: &Topology) -> Option<Vec<Vec<GpuId>>> {
    if !sharp::available(topo) {
        return None;
    }
    let hosts = hierarchical::hosts_of(ranks, topo).ok()?;
    (hosts.len() >= 2).then_some(hosts)
}

/// Whether `collnet_chain` runs as itself on `ranks` (else it is the ring).
pub fn runs(ranks: &[GpuId], topo: &Topology) -> bool {
    chain_hosts(ranks, topo).is_some()
}

/// Channels of the chain: `spec.channels`, at least one.
fn channels(spec: &CollectiveSpec) -> usize {
    (spec.channels as usize).max(1)
}

/// Host h's chain for channel c, tail first, ending at the head (local GPU
/// c mod g).
fn chain(host: &[GpuId], c: usize) -> Vec<GpuId> {
    let g = host.len();
    let head = c % g;
    (0..g).rev().map(|k| host[(head + k) % g]).collect()
}

/// Emits the chain (or the ring fallback); returns the dependencies that mark
/// the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    let Some(hosts) = chain_hosts(ranks, topo) else {
        return ring::emit(spec, ranks, topo, em, after);
    };
    if spec.bytes == 0 {
        return Ok(after.to_vec());
    }
    let mut ends = Vec::new();
    let chans = channels(spec);
    for c in 0..chans {
        let (off, len) = piece(spec.bytes, chans as u64, c as u64);
        if len == 0 {
            continue;
        }
        let chunks = chunks_at(off, len, spec.chunk_bytes);
        let chains: Vec<Vec<GpuId>> = hosts.iter().map(|h| chain(h, c)).collect();
        // up the chain: at_head[h][i] = the transfer bringing chunk i to the head
        let mut at_head: Vec<Vec<Option<TaskId>>> = Vec::with_capacity(hosts.len());
        for ch in &chains {
            let mut arrived: Vec<Option<TaskId>> = vec![None; chunks.len()];
            for k in 0..ch.len() - 1 {
                let mut last: Option<TaskId> = None;
                for (i, &(o, b)) in chunks.iter().enumerate() {
                    // the chunk from the neighbour below, this stream's
                    // previous chunk, and the collective's start once
                    let mut deps: Vec<Dep> = arrived[i].map(Dep::Done).into_iter().collect();
                    match last {
                        Some(p) => deps.push(Dep::Sent(p)),
                        None => deps.extend_from_slice(after),
                    }
                    let t = em.send(ch[k], ch[k + 1], o, b, true, &deps);
                    last = Some(t);
                    arrived[i] = Some(t);
                }
            }
            at_head.push(arrived);
        }
        // the heads' SHARP all-reduce, fed chunk by chunk
        let heads: Vec<GpuId> = chains.iter().map(|ch| ch[ch.len() - 1]).collect();
        let start = |h: usize, i: usize| -> Vec<Dep> {
            match at_head[h][i] {
                Some(t) => vec![Dep::Done(t)],
                None => after.to_vec(),
            }
        };
        let back = sharp::emit_chunks(&chunks, c, &heads, topo, em, &start)?;
        // down the chain
        for (ch, results) in chains.iter().zip(back) {
            let mut have: Vec<TaskId> = results;
            ends.extend(have.iter().map(|&t| Dep::Done(t)));
            for k in (1..ch.len()).rev() {
                let mut last: Option<TaskId> = None;
                let mut next = Vec::with_capacity(chunks.len());
                for (i, &(o, b)) in chunks.iter().enumerate() {
                    let mut deps = vec![Dep::Done(have[i])];
                    deps.extend(last.map(Dep::Sent));
                    let t = em.send(ch[k], ch[k - 1], o, b, false, &deps);
                    last = Some(t);
                    next.push(t);
                }
                ends.extend(next.iter().map(|&t| Dep::Done(t)));
                have = next;
            }
        }
    }
    Ok(ends)
}

/// Closed-form time on an idle fabric (see the module doc); the ring's when
/// the chain cannot run.
///
/// # Errors
/// Unsupported operation, bad communicator, no aggregation root or
/// unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    let Some(hosts) = chain_hosts(ranks, topo) else {
        return ring::time(spec, ranks, topo);
    };
    if spec.bytes == 0 {
        return Ok(SimTime::ZERO);
    }
    let chans = channels(spec);
    let mut slowest = SimTime::ZERO;
    let mut flows = Vec::new();
    for c in 0..chans {
        let len = piece(spec.bytes, chans as u64, c as u64).1;
        if len == 0 {
            continue;
        }
        let chains: Vec<Vec<GpuId>> = hosts.iter().map(|h| chain(h, c)).collect();
        let heads: Vec<GpuId> = chains.iter().map(|ch| ch[ch.len() - 1]).collect();
        let sharp_time = sharp::time_of(len, spec.chunk_bytes, c, &heads, topo)?
            .saturating_add(spec.proto.collnet);
        // the first chunk up the chain and the last one down it, at the
        // slowest hop of any host's chain
        let mut hop = SimTime::ZERO;
        for ch in &chains {
            for w in ch.windows(2) {
                let cost = super::path_cost(topo, w[0], w[1])?;
                let step = spec.proto.step(topo, w[0], w[1]);
                let beta = ChunkTimes::new(len, spec.chunk_bytes, cost.rate).max;
                hop = hop.max(cost.alpha.saturating_add(step).saturating_add(beta));
                flows.push((w[0], w[1], len));
                flows.push((w[1], w[0], len));
            }
        }
        let g = hosts[0].len() as u64;
        let fill = super::times(2 * (g - 1), hop);
        slowest = slowest.max(fill.saturating_add(sharp_time));
    }
    let nvlink = super::busiest_link_time(topo, flows.into_iter())?;
    Ok(slowest.max(nvlink))
}

/// Payload bytes moved: per channel and host, the chain up and down
/// (2(g−1)·S/C), plus the SHARP tree of the heads; the ring's when the chain
/// cannot run.
///
/// # Errors
/// Unsupported operation, bad communicator or no aggregation root.
pub fn traffic(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    let Some(hosts) = chain_hosts(ranks, topo) else {
        return ring::traffic(spec, ranks);
    };
    let chans = channels(spec);
    let g = hosts[0].len() as u64;
    let mut total = 0u64;
    for c in 0..chans {
        let len = piece(spec.bytes, chans as u64, c as u64).1;
        if len == 0 {
            continue;
        }
        let heads: Vec<GpuId> = hosts
            .iter()
            .map(|h| *chain(h, c).last().unwrap_or(&h[0]))
            .collect();
        let chain_bytes = (2 * (g - 1))
            .saturating_mul(len)
            .saturating_mul(hosts.len() as u64);
        total = total
            .saturating_add(chain_bytes)
            .saturating_add(sharp::traffic_of(len, c, &heads, topo)?);
    }
    Ok(total)
}

/// This algorithm's registration ([`super::REGISTRY`]). NCCL's CollNet chain: a chain in each node into the switches' reduction.
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::CollnetChain,
        name: "collnet_chain",
        ops: &[O::AllReduce],
        nccl: true,
        uses_protocol: false,
        splits_channels: true,
        shaped_by_channels: true,
        uses_nvlink: true,
        reduces_in_switches: true,
        budget_steps: |s| 4.0 + 2.0 * s.gpus_per_host,
        inter_host_steps: None,
        available: runs,
        emit,
        time,
        traffic,
    }
};
