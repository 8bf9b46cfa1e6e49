//! NVLink SHARP (NVLS): the NVSwitch reduces and multicasts, the way NCCL's
//! `NVLS` algorithm runs all-reduce on H100 and B200 nodes (NVIDIA, "NVLink
//! SHARP"; NCCL 2.17+, `NCCL_NVLS_ENABLE`).
//!
//! **Inside a host** (g GPUs, S bytes per rank, shard j = `piece(S, g, j)`):
//! 1. *reduce*: every GPU sends its part of shard j to the NVSwitch, which sums
//!    the g contributions and hands the result to GPU j (NCCL's
//!    `multimem.ld_reduce`);
//! 2. *multicast*: GPU j stores its reduced shard into the switch, which writes
//!    it to all g GPUs (`multimem.st`).
//!
//! Each GPU's NVLink carries S + S/g each way, against 2(g−1)/g·S for a ring, and
//! the latency does not grow with g. Every move is a
//! [`crate::dag::TaskKind::NetTransfer`] between a GPU and its NVSwitch, chunked
//! by `chunk_bytes`; a GPU sends its contributions one after the other (one
//! channel), and a shard's multicast starts as soon as that chunk is reduced, so
//! the two directions overlap.
//!
//! **Across hosts** (NCCL's `NVLS_TREE`, which NCCL runs on multi-node H100
//! when the network does not aggregate): shard j is halved, and half t is
//! all-reduced over tree t of the double binary tree spanning rail j (GPU j of
//! every host, so each rail leaves through its own NIC). The three stages
//! pipeline by chunk: a chunk enters its tree as soon as the switch has
//! reduced it ([`super::tree`]'s chunk-fed lattice), and its multicast starts
//! as soon as the tree has reduced it over every host. NCCL's tuner credits
//! this with the NVLink rate on two nodes and half the network rate beyond
//! (`bwInter/2`, `src/graph/tuning.cc`): an inner tree node's NIC carries its
//! part twice each way. Its NVLink stages carry 10/7 of their payload
//! ([`tree_wire_bytes`]) where one host's carry 6/5: NCCL's 0.70 bus
//! bandwidth share for NVLS_TREE against 5/6 for NVLS.
//!
//! **Bandwidth.** NCCL's tuning model (`src/graph/tuning.cc`) credits NVLS with
//! 5/6 of the NVLink bandwidth; NVLS moves data in multimem transactions whose
//! requests and responses cost that share. Here every NVLS transfer carries
//! 6/5 of its payload on the wire ([`wire_bytes`]). With NVLink at 370 GB/s (the
//! H100 preset's efficiency) that gives 8 GPUs 575 × 5/6 ≈ 480 GB/s busbw, the
//! figure NVIDIA's nccl-tests maintainers quote for NVLS on 8 x H100.
//!
//! **Capability.** NVSwitches of NVLink 4 and later ([`Topology::nvls`], from
//! `cluster.nvls`). Without it, and at the packet fidelity (which has no switch
//! endpoints), this algorithm lowers, costs and counts exactly as the ring.
//! Only all-reduce is implemented.
//!
//! **Closed form.** On one host the phases overlap:
//! `T = (1 + 1/g)·wire(S)/B + 2·(α_up + α_down) + wire(chunk)/B`.
//! Across hosts, with `head` the first chunk's trip into the switch and back
//! (α + δ_NVLS + wire(chunk)/B) and `tail` the last chunk's store and
//! multicast: `T = max(head + max_j T_tree(j) + tail, head + (1 + 1/g)·wire(S)/B)`,
//! where T_tree(j) is the larger of the tree's lattice ([`super::tree`]), its
//! busiest NIC (2·S/g each way for an inner node) and the busiest link when
//! rails share NICs or uplinks. A lower bound of the flow fidelity; the flow
//! fidelity's tree pipeline leaves the busiest NIC idle a little (about 12%
//! on four hosts).

use super::{
    chunks_at, hierarchical, piece, precheck, ring, tree, CollectiveError, CollectiveOp,
    CollectiveSpec, Emitter,
};
use crate::dag::{Dag, Dep, TaskId};
use crate::topology::{GpuId, NodeId, Topology};
use crate::units::SimTime;

/// Whether the NVSwitches of `topo` reduce and multicast (and a host has GPUs to
/// reduce over).
pub fn available(topo: &Topology) -> bool {
    topo.nvls && topo.gpus_per_host >= 2
}

/// Software latency of an NVLS delivery to a GPU (the reduced shard, a
/// multicast copy): NCCL's tuning model charges NVLS 25 us inside a node
/// (`hwLat[NVLINK][NVLS][Simple]`, `src/graph/tuning.cc`), half here on each
/// of the two deliveries a chunk's critical path crosses.
pub const DELIVERY_LATENCY: SimTime = SimTime(12_500_000);

/// Wire bytes of an NVLS transfer of `payload` bytes inside one host: 6/5 of
/// it (NCCL's NVLS bandwidth share, see the module doc), rounded up.
pub fn wire_bytes(payload: u64) -> u64 {
    payload.saturating_add(payload.div_ceil(5))
}

/// Wire bytes of an NVLS transfer of `payload` bytes when the hosts are joined
/// by NVLS-tree: 10/7 of it, rounded up. NCCL's tuning model credits
/// NVLS_TREE with 0.70 of its bus bandwidth on two nodes where NVLS alone
/// gets 5/6 (`src/graph/tuning.cc`): the head GPUs also feed and drain the
/// network, so the NVLink stages run at 0.84 of their single-host pace. With
/// the single-host 480 GB/s that is ~400 GB/s busbw on 2 x 8 H100, the peak
/// NVIDIA's maintainers state for 8 x 400G InfiniBand (nccl-tests#309).
pub fn tree_wire_bytes(payload: u64) -> u64 {
    (payload as u128 * 10).div_ceil(7).min(u64::MAX as u128) as u64
}

/// Lowers the collective into transfers (see the module doc); returns the final marker.
///
/// # Errors
/// Unsupported operation, bad communicator (NVLS needs whole hosts) or unreachable ranks.
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

/// The NVSwitch node of the host of `gpu`.
fn switch_of(topo: &Topology, gpu: GpuId) -> NodeId {
    topo.link(topo.gpus[gpu.0 as usize].nvlink_up).to
}

/// Emits NVLS (or the ring fallback); returns the dependencies that mark the end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    if !available(topo) {
        return ring::emit(spec, ranks, topo, em, after);
    }
    let hosts = hierarchical::hosts_of(ranks, topo)?;
    let (s, chunk) = (spec.bytes, spec.chunk_bytes);
    if ranks.len() <= 1 || s == 0 {
        return Ok(after.to_vec());
    }
    let g = hosts[0].len();
    // Across hosts each shard is halved over the two trees of its rail (NCCL's
    // double binary tree); inside one host a shard is one piece.
    let trees = if hosts.len() > 1 { 2 } else { 1 };
    let parts: Vec<Vec<Vec<(u64, u64)>>> = (0..g as u64)
        .map(|j| {
            let (o, b) = piece(s, g as u64, j);
            (0..trees)
                .map(|t| {
                    let (to, tb) = piece(b, trees, t);
                    chunks_at(o + to, tb, chunk)
                })
                .collect()
        })
        .collect();
    let rounds = parts.iter().flatten().map(Vec::len).max().unwrap_or(0);
    let node = |gpu: GpuId| topo.gpus[gpu.0 as usize].node;
    let wire_bytes = if hosts.len() > 1 {
        tree_wire_bytes
    } else {
        wire_bytes
    };
    // 1. reduce: reduced[h][j][t][c] = the transfer bringing reduced chunk c of
    // part t of shard j to GPU j
    let mut reduced: Vec<Vec<Vec<Vec<TaskId>>>> = Vec::with_capacity(hosts.len());
    for gpus in &hosts {
        let sw = switch_of(topo, gpus[0]);
        let mut last_up: Vec<Option<TaskId>> = vec![None; g];
        let mut out = vec![vec![Vec::new(); trees as usize]; g];
        for c in 0..rounds {
            for (j, shard) in parts.iter().enumerate() {
                for (t, chunks) in shard.iter().enumerate() {
                    let Some(&(o, b)) = chunks.get(c) else {
                        continue;
                    };
                    let mut contributions = Vec::with_capacity(g);
                    for (i, &gpu) in gpus.iter().enumerate() {
                        let deps: Vec<Dep> = match last_up[i] {
                            Some(t) => vec![Dep::Sent(t)],
                            None => after.to_vec(),
                        };
                        let t = em.net_send(node(gpu), sw, o, wire_bytes(b), true, &deps);
                        last_up[i] = Some(t);
                        contributions.push(Dep::Done(t));
                    }
                    let r = em.net_send(sw, node(gpus[j]), o, wire_bytes(b), false, &contributions);
                    let delivery = em.proto.nvls;
                    em.dag.set_software(r, delivery);
                    out[j][t].push(r);
                }
            }
        }
        reduced.push(out);
    }
    // 2. between hosts (NCCL's NVLS-tree): part t of shard j is all-reduced over
    // tree t of rail j (GPU j of every host), chunk by chunk as the chunks come
    // out of the switch. ready[h][j][t][c]: chunk c reduced over every host.
    let ready: Vec<Vec<Vec<Vec<Vec<Dep>>>>> = if hosts.len() > 1 {
        let h = hosts.len();
        let mut ready = vec![vec![Vec::new(); g]; h];
        for (j, shard) in parts.iter().enumerate() {
            let rail: Vec<GpuId> = hosts.iter().map(|host| host[j]).collect();
            for (t, chunks) in shard.iter().enumerate() {
                let starts: Vec<Vec<Vec<Dep>>> = reduced
                    .iter()
                    .map(|r| r[j][t].iter().map(|&x| vec![Dep::Done(x)]).collect())
                    .collect();
                let finals = tree::emit_chunked_allreduce(h, t, &rail, chunks, &starts, em);
                for (pos, f) in finals.into_iter().enumerate() {
                    ready[pos][j].push(f);
                }
            }
        }
        ready
    } else {
        reduced
            .iter()
            .map(|r| {
                r.iter()
                    .map(|parts| {
                        parts
                            .iter()
                            .map(|chunks| chunks.iter().map(|&x| vec![Dep::Done(x)]).collect())
                            .collect()
                    })
                    .collect()
            })
            .collect()
    };
    // 3. multicast: GPU j stores each reduced chunk; the switch writes it to all
    let mut ends = Vec::new();
    for (h, gpus) in hosts.iter().enumerate() {
        let sw = switch_of(topo, gpus[0]);
        for (j, shard) in parts.iter().enumerate() {
            let mut last_store: Option<TaskId> = None;
            for c in 0..rounds {
                for (t, chunks) in shard.iter().enumerate() {
                    let (Some(&(o, b)), Some(reduced_everywhere)) =
                        (chunks.get(c), ready[h][j][t].get(c))
                    else {
                        continue;
                    };
                    let mut deps = reduced_everywhere.clone();
                    deps.extend(last_store.map(Dep::Sent));
                    let store = em.net_send(node(gpus[j]), sw, o, wire_bytes(b), false, &deps);
                    last_store = Some(store);
                    for &gpu in gpus {
                        let x = em.net_send(
                            sw,
                            node(gpu),
                            o,
                            wire_bytes(b),
                            false,
                            &[Dep::Done(store)],
                        );
                        ends.push(Dep::Done(x));
                    }
                }
            }
        }
    }
    Ok(ends)
}

/// Closed-form time on an idle fabric (see the module doc).
///
/// # Errors
/// Unsupported operation, bad communicator or unreachable ranks.
pub fn time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    precheck(spec, ranks, Some(topo))?;
    if !available(topo) {
        return ring::time(spec, ranks, topo);
    }
    let hosts = hierarchical::hosts_of(ranks, topo)?;
    let s = spec.bytes;
    if ranks.len() <= 1 || s == 0 {
        return Ok(SimTime::ZERO);
    }
    let g = hosts[0].len() as u64;
    let gpu = hosts[0][0];
    let p = &topo.gpus[gpu.0 as usize];
    let (up, down) = (p.nvlink_up, p.nvlink_down);
    let rate = topo.effective_rate(up).min(topo.effective_rate(down));
    let sw = topo.link(up).to;
    let hop = topo.link(up).latency + topo.node(sw).latency + topo.link(down).latency;
    let chunk = wire_bytes(spec.chunk_bytes.min(s.div_ceil(g)));
    if hosts.len() == 1 {
        // both directions carry (1 + 1/g)·wire(S); the last chunk's reduce and
        // multicast trips follow the busiest link
        let busiest = wire_bytes(s).saturating_add(wire_bytes(s.div_ceil(g)));
        return Ok(rate
            .tx_time(busiest)
            .saturating_add(rate.tx_time(chunk))
            .saturating_add(SimTime(2 * (hop.0 + spec.proto.nvls.0))));
    }
    // Across hosts the three stages pipeline by chunk: the first chunk is
    // reduced in the switch before the network sees it, the rails' trees run
    // at the pace of their busiest NIC, and the last chunk is stored and
    // multicast after the network is done; the NVLinks carry their
    // (1 + 1/g)·wire(S) meanwhile.
    let chunk = tree_wire_bytes(spec.chunk_bytes.min(s.div_ceil(g)));
    let nvlink_busy =
        rate.tx_time(tree_wire_bytes(s).saturating_add(tree_wire_bytes(s.div_ceil(g))));
    let head = hop
        .saturating_add(spec.proto.nvls)
        .saturating_add(rate.tx_time(chunk));
    let tail = hop.saturating_add(rate.tx_time(chunk));
    let mut rails = SimTime::ZERO;
    let mut flows = Vec::new();
    for j in 0..g as usize {
        let rail: Vec<GpuId> = hosts.iter().map(|h| h[j]).collect();
        let len = piece(s, g, j as u64).1;
        let lattice = tree::time_with(
            CollectiveOp::AllReduce,
            len,
            spec.chunk_bytes,
            0,
            &rail,
            topo,
            &spec.proto,
        )?;
        let nic = tree::injection_bound(spec.proto.protocol.wire_bytes(len), &rail, topo)?;
        rails = rails.max(lattice).max(nic);
        flows.extend(tree::edge_flows(&rail, spec.proto.protocol.wire_bytes(len)));
    }
    // rails that share a NIC (fewer NICs than GPUs) or an uplink
    let shared = super::busiest_link_time(topo, flows.into_iter())?;
    let network = head.saturating_add(rails.max(shared)).saturating_add(tail);
    Ok(network.max(nvlink_busy.saturating_add(head)))
}

/// Total wire bytes moved: per host, g·wire(S) up and wire(S) down for the
/// reduce, wire(S) up and g·wire(S) down for the multicast (shard by shard;
/// wire is [`wire_bytes`] on one host, [`tree_wire_bytes`] across hosts),
/// plus each rail's tree between hosts.
///
/// # Errors
/// Unsupported operation or bad communicator.
pub fn traffic(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<u64, CollectiveError> {
    precheck(spec, ranks, None)?;
    if !available(topo) {
        return ring::traffic(spec, ranks);
    }
    let hosts = hierarchical::hosts_of(ranks, topo)?;
    let s = spec.bytes;
    if ranks.len() <= 1 || s == 0 {
        return Ok(0);
    }
    let g = hosts[0].len() as u64;
    let h = hosts.len() as u64;
    // the chunks as lowered: a shard whole on one host, halved over the two
    // trees across hosts
    let (halves, wire): (u64, fn(u64) -> u64) = if h > 1 {
        (2, tree_wire_bytes)
    } else {
        (1, wire_bytes)
    };
    let chunked = |len: u64| -> u64 {
        (0..halves)
            .flat_map(|t| chunks_at(0, piece(len, halves, t).1, spec.chunk_bytes))
            .map(|(_, b)| wire(b))
            .sum()
    };
    let per_host: u64 = (0..g)
        .map(|j| {
            let w = chunked(piece(s, g, j).1);
            // g contributions + 1 reduced + 1 store + g multicast copies
            (2 * g + 2) * w
        })
        .sum();
    // each rail's double binary tree: every non-root position sends its part
    // up and receives it down, 2(h−1)·len
    let rails: u64 = (0..g)
        .map(|j| (2 * (h - 1)).saturating_mul(piece(s, g, j).1))
        .sum();
    Ok(per_host.saturating_mul(h).saturating_add(rails))
}

/// This algorithm's registration ([`super::REGISTRY`]). NVLink SHARP in the host, a tree per rail across hosts.
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::Nvls,
        name: "nvls",
        ops: &[O::AllReduce],
        nccl: true,
        uses_protocol: false,
        splits_channels: false,
        shaped_by_channels: false,
        uses_nvlink: true,
        reduces_in_switches: false,
        budget_steps: super::hierarchical::steps_of_rails,
        inter_host_steps: None,
        available: |_, t| available(t),
        emit,
        time,
        traffic,
    }
};
