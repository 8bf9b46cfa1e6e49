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
    let mut em = Emitter::new(dag, topo);
    super::lower_with(spec, ranks, topo, &mut em, after)
}

/// Emits the transfers of `spec` and returns the dependencies that mark its end.
pub(crate) fn emit(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Result<Vec<Dep>, CollectiveError> {
    if spec.channels <= 1 {
        return Ok(emit_op(
            spec.op,
            spec.bytes,
            0,
            spec.chunk_bytes,
            spec.root,
            ranks,
            em,
            after,
        ));
    }
    let rings = channel_rings(ranks, topo, spec.channels, spec.pxn);
    let mut ends = Vec::new();
    for (c, ring) in rings.iter().enumerate() {
        let segs = channel_segments(spec.op, spec.bytes, ranks, ring, spec.channels, c as u32);
        ends.extend(emit_ring(
            spec.op,
            &segs,
            spec.chunk_bytes,
            spec.root,
            ranks,
            ring,
            em,
            after,
        ));
    }
    Ok(ends)
}

/// The ring of one channel: the ranks in ring order, and for each position the
/// GPU that relays its send to the next position through that GPU's NIC (NCCL's
/// PXN: an NVLink hop to the GPU whose NIC sits on the channel's rail), if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRing {
    /// Ranks in ring order: position p sends to p + 1 (mod N).
    pub order: Vec<GpuId>,
    /// `proxy[p]`: the GPU that forwards position p's messages into the network.
    pub proxy: Vec<Option<GpuId>>,
}

/// The rings of `channels` channels over `ranks`, as NCCL's ring search lays
/// them on multi-NIC hosts: when the communicator is made of whole hosts (at
/// least two, several GPUs each), channel c enters every host at the first GPU
/// of rail r = c mod (NICs per host), visits the host's GPUs over NVLink from
/// there, and leaves from the GPU before it, through rail r's NIC: with `pxn`
/// that GPU hands its data over NVLink to the rail's GPU, which sends it, so a
/// channel uses one rail end to end and the channels spread over every NIC.
/// Without `pxn` the last GPU sends through its own NIC. Any other communicator
/// runs every channel on the plain ring in communicator order.
pub fn channel_rings(
    ranks: &[GpuId],
    topo: &Topology,
    channels: u32,
    pxn: bool,
) -> Vec<ChannelRing> {
    let plain = ChannelRing {
        order: ranks.to_vec(),
        proxy: vec![None; ranks.len()],
    };
    let hosts = match super::hierarchical::hosts_of(ranks, topo) {
        Ok(h) if h.len() >= 2 && h[0].len() >= 2 => h,
        _ => return vec![plain; channels.max(1) as usize],
    };
    let g = hosts[0].len();
    // The NIC of each local GPU, numbered by first appearance.
    let nic_of = |gpu: GpuId| topo.gpus[gpu.0 as usize].nic;
    let mut rails: Vec<crate::topology::NodeId> = Vec::new();
    for &gpu in &hosts[0] {
        if !rails.contains(&nic_of(gpu)) {
            rails.push(nic_of(gpu));
        }
    }
    // Every host is wired alike: local GPU l uses the rail of host 0's GPU l.
    let rail_of = |l: usize| {
        rails
            .iter()
            .position(|&n| n == nic_of(hosts[0][l]))
            .unwrap_or(0)
    };
    (0..channels.max(1))
        .map(|c| {
            let r = c as usize % rails.len();
            let entry = (0..g).find(|&l| rail_of(l) == r).unwrap_or(0);
            let exit = (entry + g - 1) % g;
            let mut order = Vec::with_capacity(ranks.len());
            let mut proxy = Vec::with_capacity(ranks.len());
            for h in &hosts {
                for j in 0..g {
                    let l = (entry + j) % g;
                    order.push(h[l]);
                    let relay = j == g - 1 && pxn && rail_of(exit) != r;
                    proxy.push(relay.then_some(h[entry]));
                }
            }
            ChannelRing { order, proxy }
        })
        .collect()
}

/// The buffer bytes `(offset, len)` each ring position of channel `c` (of
/// `channels`) is responsible for: all-reduce and broadcast split the buffer
/// into one contiguous piece per channel and that piece into one segment per
/// position; all-gather and reduce-scatter give channel c the c-th part of
/// every rank's own segment, so each rank still owns `piece(S, N, rank)`.
fn channel_segments(
    op: CollectiveOp,
    bytes: u64,
    ranks: &[GpuId],
    ring: &ChannelRing,
    channels: u32,
    c: u32,
) -> Vec<(u64, u64)> {
    let n = ranks.len() as u64;
    let chans = u64::from(channels.max(1));
    match op {
        CollectiveOp::AllGather | CollectiveOp::ReduceScatter => ring
            .order
            .iter()
            .map(|g| {
                let idx = ranks.iter().position(|r| r == g).unwrap_or(0) as u64;
                let (o, b) = piece(bytes, n, idx);
                let (so, sb) = piece(b, chans, u64::from(c));
                (o + so, sb)
            })
            .collect(),
        CollectiveOp::Broadcast => vec![piece(bytes, chans, u64::from(c))],
        _ => {
            let (o, b) = piece(bytes, chans, u64::from(c));
            (0..n)
                .map(|p| {
                    let (so, sb) = piece(b, n, p);
                    (o + so, sb)
                })
                .collect()
        }
    }
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
    let n = ranks.len() as u64;
    let ring = ChannelRing {
        order: ranks.to_vec(),
        proxy: vec![None; ranks.len()],
    };
    let segs: Vec<(u64, u64)> = if op == CollectiveOp::Broadcast {
        vec![(base, bytes)]
    } else {
        (0..n)
            .map(|p| {
                let (o, b) = piece(bytes, n, p);
                (base + o, b)
            })
            .collect()
    };
    emit_ring(op, &segs, chunk, root, ranks, &ring, em, after)
}

/// A segment made of several ranges of the buffer, `(offset, bytes)` each.
pub(crate) type Ranges = Vec<(u64, u64)>;

/// Emits one ring of `ring.order` where position p's segment is `segs[p]`
/// (broadcast: `segs` holds one range, the buffer); see the module doc.
#[allow(clippy::too_many_arguments)]
fn emit_ring(
    op: CollectiveOp,
    segs: &[(u64, u64)],
    chunk: u64,
    root: u32,
    ranks: &[GpuId],
    ring: &ChannelRing,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    if op == CollectiveOp::Broadcast {
        let n = ring.order.len();
        let (base, bytes) = segs.first().copied().unwrap_or((0, 0));
        if n <= 1 || bytes == 0 {
            return after.to_vec();
        }
        let root_gpu = ranks.get(root as usize).copied().unwrap_or(ring.order[0]);
        let start = ring.order.iter().position(|&g| g == root_gpu).unwrap_or(0);
        let mut link = Link::new(n);
        return emit_broadcast(bytes, base, chunk, start, ring, &mut link, em, after);
    }
    let segs: Vec<Ranges> = segs.iter().map(|&r| vec![r]).collect();
    let afters = vec![after.to_vec(); ring.order.len()];
    match emit_ring_ranges(op, &segs, chunk, ring, em, &afters) {
        Some(ends) => ends.into_iter().flatten().collect(),
        None => after.to_vec(),
    }
}

/// Emits a reduce-scatter, all-gather or all-reduce ring where position p's
/// segment is the ranges `segs[p]` and position p's first send waits for
/// `after[p]`. Returns, per position, the dependencies that mean it holds its
/// result (`None` when nothing moves: one rank, or no bytes): the arrival of
/// its last receives, and its last send having left, which implies that every
/// earlier receive it forwarded had arrived.
pub(crate) fn emit_ring_ranges(
    op: CollectiveOp,
    segs: &[Ranges],
    chunk: u64,
    ring: &ChannelRing,
    em: &mut Emitter<'_>,
    after: &[Vec<Dep>],
) -> Option<Vec<Vec<Dep>>> {
    let n = ring.order.len();
    let total: u64 = segs.iter().flatten().map(|r| r.1).sum();
    if n <= 1 || total == 0 {
        return None;
    }
    let mut link = Link::new(n);
    let (steps, shift) = match op {
        CollectiveOp::AllReduce => (2 * (n - 1), 1),
        CollectiveOp::ReduceScatter => (n - 1, 1),
        _ => (n - 1, 0),
    };
    let chunked: Vec<Vec<Ranges>> = segs.iter().map(|r| chunk_ranges(r, chunk)).collect();
    let mut recv: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    for k in 0..steps {
        let reduce = match op {
            CollectiveOp::AllReduce => k < n - 1,
            CollectiveOp::ReduceScatter => true,
            _ => false,
        };
        let mut next_recv: Vec<Vec<TaskId>> = vec![Vec::new(); n];
        for i in 0..n {
            let seg = (i + 2 * n - k % n - shift) % n;
            let dst = (i + 1) % n;
            for (c, piece) in chunked[seg].iter().enumerate() {
                let data = (k > 0).then(|| recv[i][c]);
                let t = link.send(ring, i, piece, reduce, data, em, &after[i]);
                next_recv[dst].push(t);
            }
        }
        recv = next_recv;
    }
    Some(
        recv.into_iter()
            .enumerate()
            .map(|(p, r)| {
                let mut v: Vec<Dep> = r.into_iter().map(Dep::Done).collect();
                v.extend(link.last[p].map(Dep::Sent));
                v
            })
            .collect(),
    )
}

/// Cuts the ranges of a segment into chunks of at most `chunk` bytes (as
/// [`super::chunk_sizes`] cuts their total), each chunk a list of ranges.
fn chunk_ranges(ranges: &[(u64, u64)], chunk: u64) -> Vec<Ranges> {
    let total: u64 = ranges.iter().map(|r| r.1).sum();
    let mut out = Vec::new();
    let mut it = ranges.iter().copied().filter(|r| r.1 > 0);
    let mut cur = it.next();
    for size in super::chunk_sizes(total, chunk) {
        let mut left = size;
        let mut piece = Vec::with_capacity(1);
        while left > 0 {
            let Some((o, b)) = cur else { break };
            let take = b.min(left);
            piece.push((o, take));
            left -= take;
            cur = if take == b {
                it.next()
            } else {
                Some((o + take, b - take))
            };
        }
        if piece.is_empty() {
            piece.push((ranges.first().map_or(0, |r| r.0), 0));
        }
        out.push(piece);
    }
    out
}

/// The send side of every ring edge: the sender's channel (its previous message
/// must have left before the next one goes) and, for an edge relayed by PXN,
/// the relay's own channel into the network.
struct Link {
    last: Vec<Option<TaskId>>,
    relay_last: Vec<Option<TaskId>>,
}

impl Link {
    fn new(n: usize) -> Link {
        Link {
            last: vec![None; n],
            relay_last: vec![None; n],
        }
    }

    /// Sends the ranges `piece` from position `i` to `i + 1` once `data` (the
    /// chunk it forwards, if any) has arrived; returns the task whose completion
    /// delivers it.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        ring: &ChannelRing,
        i: usize,
        piece: &[(u64, u64)],
        reduce: bool,
        data: Option<TaskId>,
        em: &mut Emitter<'_>,
        after: &[Dep],
    ) -> TaskId {
        let n = ring.order.len();
        let (src, dst) = (ring.order[i], ring.order[(i + 1) % n]);
        let mut deps: Vec<Dep> = Vec::with_capacity(2);
        match self.last[i] {
            Some(t) => deps.push(Dep::Sent(t)),
            None => deps.extend_from_slice(after),
        }
        if let Some(d) = data {
            deps.push(Dep::Done(d));
        }
        match ring.proxy[i] {
            None => {
                let t = em.send_ranges(src, dst, None, piece, reduce, &deps);
                self.last[i] = Some(t);
                t
            }
            Some(relay) => {
                // PXN: an NVLink copy into the relay GPU's staging buffer, then the
                // relay's NIC sends it on; the data is the sender's, as traced.
                let bytes = piece.iter().map(|r| r.1).sum();
                let hop = em.relay_hop(src, relay, bytes, &deps);
                self.last[i] = Some(hop);
                let mut deps = vec![Dep::Done(hop)];
                if let Some(t) = self.relay_last[i] {
                    deps.push(Dep::Sent(t));
                }
                let t = em.send_ranges(relay, dst, Some(src), piece, reduce, &deps);
                self.relay_last[i] = Some(t);
                t
            }
        }
    }
}

/// Pipelined chain along the channel's ring from position `start`.
#[allow(clippy::too_many_arguments)]
fn emit_broadcast(
    bytes: u64,
    base: u64,
    chunk: u64,
    start: usize,
    ring: &ChannelRing,
    link: &mut Link,
    em: &mut Emitter<'_>,
    after: &[Dep],
) -> Vec<Dep> {
    let n = ring.order.len();
    let chunks = chunks_at(base, bytes, chunk);
    let mut recv: Vec<TaskId> = Vec::new();
    for h in 0..n - 1 {
        let i = (start + h) % n;
        let mut out = Vec::with_capacity(chunks.len());
        for (c, &r) in chunks.iter().enumerate() {
            let data = (h > 0).then(|| recv[c]);
            let first = if h == 0 { after } else { &[] };
            out.push(link.send(ring, i, &[r], false, data, em, first));
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
    if spec.channels > 1 && ranks.len() > 1 && spec.bytes > 0 {
        return channels_time(spec, ranks, topo);
    }
    time_with(
        spec.op,
        spec.bytes,
        spec.chunk_bytes,
        spec.root,
        ranks,
        topo,
        &spec.proto,
    )
}

/// Closed form of a ring collective on `spec.channels` channels
/// ([`channel_rings`]), a lower bound of the fluid schedule: the larger of
/// - the slowest channel alone on an idle fabric (the single-ring form,
///   [`ring_pipeline_time`], on its share of the bytes; a PXN edge adds the
///   NVLink leg's latency and one chunk's store-and-forward time to its α), and
/// - the busiest link's bytes over its payload rate, every channel's edges
///   spread evenly over their equal-cost paths ([`Topology::spread`]), plus the
///   shortest edge latency: channels share links (every GPU's NVLink carries an
///   edge of each channel), which no schedule can beat.
///
/// The first binds for small messages, the second for large ones.
fn channels_time(
    spec: &CollectiveSpec,
    ranks: &[GpuId],
    topo: &Topology,
) -> Result<SimTime, CollectiveError> {
    let rings = channel_rings(ranks, topo, spec.channels, spec.pxn);
    let n = ranks.len();
    let nn = n as u64;
    let chans = u64::from(spec.channels);
    let k = match spec.op {
        CollectiveOp::AllReduce => 2 * (nn - 1),
        _ => nn - 1,
    };
    let root_gpu = ranks[spec.root as usize];
    let mut load = vec![0f64; topo.links.len()];
    let mut slowest = SimTime::ZERO;
    let mut shortest = SimTime::MAX;
    let mut shares = Vec::new();
    for (c, ring) in rings.iter().enumerate() {
        let segs = channel_segments(spec.op, spec.bytes, ranks, ring, spec.channels, c as u32);
        let seg = segs.iter().map(|s| s.1).max().unwrap_or(0);
        let channel_bytes = piece(spec.bytes, chans, c as u64).1;
        let relay_chunk = if spec.op == CollectiveOp::Broadcast {
            channel_bytes
        } else {
            seg
        }
        .min(spec.chunk_bytes.max(1));
        let mut rate = crate::units::Rate(u64::MAX);
        let mut alphas = Vec::with_capacity(n);
        let mut rates = Vec::with_capacity(n);
        for i in 0..n {
            let (src, dst) = (ring.order[i], ring.order[(i + 1) % n]);
            let hops: [(GpuId, GpuId); 2];
            let legs: &[(GpuId, GpuId)] = match ring.proxy[i] {
                Some(relay) => {
                    hops = [(src, relay), (relay, dst)];
                    &hops
                }
                None => {
                    hops = [(src, dst), (src, dst)];
                    &hops[..1]
                }
            };
            // bytes this edge carries over the whole collective
            let carried = if spec.op == CollectiveOp::Broadcast {
                if dst == root_gpu {
                    0
                } else {
                    channel_bytes
                }
            } else {
                segs.iter().map(|s| s.1).sum::<u64>() * k / nn
            };
            let mut alpha = SimTime::ZERO;
            let mut edge_rate = crate::units::Rate(u64::MAX);
            for (j, &(a, b)) in legs.iter().enumerate() {
                // what ECMP gives in expectation where equal-cost paths differ
                let Some((lat, bottleneck)) = topo.path_cost(a, b) else {
                    return Err(CollectiveError::Unreachable(a.0, b.0));
                };
                let r = spec.proto.payload_rate(bottleneck);
                rate = rate.min(r);
                edge_rate = edge_rate.min(r);
                alpha += lat;
                if j + 1 < legs.len() {
                    // the relay forwards a chunk once it has all arrived
                    alpha += r.tx_time(relay_chunk);
                }
                shares.clear();
                topo.spread(a, b, &mut shares);
                let wire = spec.proto.protocol.wire_bytes(carried);
                for &(l, f) in &shares {
                    load[l.0 as usize] += f * wire as f64;
                }
            }
            // the step's software latency, once per edge (not for the relay hop)
            alpha += spec.proto.step(topo, src, dst);
            shortest = shortest.min(alpha);
            alphas.push(alpha);
            rates.push(edge_rate);
        }
        let t = if spec.op == CollectiveOp::Broadcast {
            let start = ring.order.iter().position(|&g| g == root_gpu).unwrap_or(0);
            let chain: u64 = (0..n - 1).map(|h| alphas[(start + h) % n].0).sum();
            let ct = ChunkTimes::new(channel_bytes, spec.chunk_bytes, rate);
            SimTime(chain)
                .saturating_add(ct.sum)
                .saturating_add(times(nn - 2, ct.max))
        } else {
            mixed_ring_lower_bound(k, seg, spec.chunk_bytes, &alphas, &rates)
        };
        slowest = slowest.max(t);
    }
    let busiest = super::busiest_of(&load, topo);
    Ok(slowest.max(busiest.saturating_add(shortest)))
}

/// A lower bound of the chained ring pipeline ([`ring_pipeline_time`]) whose
/// edges differ in rate as well as latency, for K steps of `seg` bytes cut into
/// chunks of `chunk`: the larger of two paths through the DAG,
/// - one sender's K·C chunks back to back, then the last one's latency
///   (the slowest edge: K·seg/B_e + α_e), and
/// - the wavefront: K consecutive edges, each adding its α and one chunk's
///   time, plus the C−1 other chunks on the slowest edge of that window.
///
/// O(N + K) with prefix sums; exact when all edges share one rate and one α.
pub fn mixed_ring_lower_bound(
    k: u64,
    seg: u64,
    chunk: u64,
    alphas: &[SimTime],
    rates: &[crate::units::Rate],
) -> SimTime {
    let n = alphas.len();
    if k == 0 || n == 0 {
        return SimTime::ZERO;
    }
    let c = seg.div_ceil(chunk.max(1)).max(1);
    let piece_bytes = seg.div_ceil(c);
    let beta: Vec<u64> = rates.iter().map(|r| r.tx_time(piece_bytes).0).collect();
    let serial = (0..n)
        .map(|e| times(k, rates[e].tx_time(seg)).saturating_add(alphas[e]))
        .max()
        .unwrap_or(SimTime::ZERO);
    // windows of k consecutive edges over the repeated ring
    let kk = k as usize;
    let len = n + kk;
    let mut prefix = Vec::with_capacity(len + 1);
    prefix.push(0u128);
    for p in 0..len {
        let e = p % n;
        prefix.push(prefix[p] + u128::from(alphas[e].0) + u128::from(beta[e]));
    }
    // the largest two chunk times, for windows that leave one edge out
    let (mut top, mut second) = (0u64, 0u64);
    for &b in &beta {
        if b > top {
            second = top;
            top = b;
        } else if b > second {
            second = b;
        }
    }
    let mut best = 0u128;
    for s in 0..n {
        let max_beta = if kk >= n {
            top
        } else if kk + 1 == n {
            // the window is every edge but s − 1
            let out = beta[(s + n - 1) % n];
            if out == top {
                second
            } else {
                top
            }
        } else {
            (0..kk).map(|j| beta[(s + j) % n]).max().unwrap_or(0)
        };
        let w = prefix[s + kk] - prefix[s] + u128::from(c - 1) * u128::from(max_beta);
        best = best.max(w);
    }
    let wave = SimTime(best.min(u128::from(u64::MAX)) as u64);
    serial.max(wave)
}

/// [`time`] for one ring collective of `bytes` (nccl-tests meaning for `op`)
/// under a protocol: each edge's α gains the step's software latency and its
/// rate the protocol's payload share.
pub(crate) fn time_with(
    op: CollectiveOp,
    bytes: u64,
    chunk: u64,
    root: u32,
    ranks: &[GpuId],
    topo: &Topology,
    pc: &super::ProtoCost,
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
        let (a, b) = (ranks[i], ranks[(i + 1) % n]);
        let c = super::path_cost(topo, a, b)?;
        alphas.push(c.alpha + pc.step(topo, a, b));
        let r = pc.payload_rate(c.rate);
        rates.push(r);
        rate = rate.min(r);
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

/// This algorithm's registration ([`super::REGISTRY`]). Ring: every rank sends to its successor; 2N messages per all-reduce.
pub(crate) const ENTRY: super::AlgorithmEntry = {
    use super::CollectiveOp as O;
    super::AlgorithmEntry {
        algorithm: super::Algorithm::Ring,
        name: "ring",
        ops: &[O::AllReduce, O::AllGather, O::ReduceScatter, O::Broadcast],
        nccl: true,
        uses_protocol: true,
        splits_channels: true,
        shaped_by_channels: true,
        uses_nvlink: true,
        reduces_in_switches: false,
        budget_steps: |s| 2.0 * s.ranks,
        inter_host_steps: Some(|s| 2.0 * s.hosts),
        available: super::registry::always,
        emit,
        time,
        traffic: |s, r, _| traffic(s, r),
    }
};

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
            channels: 1,
            pxn: true,
            proto: crate::collective::ProtoCost::NONE,
        };
        let ranks = [GpuId(0), GpuId(1), GpuId(2)];
        let mut dag = Dag::new();
        let mut tr = Vec::new();
        lower_traced(&spec, &ranks, &t, &mut dag, &[], &mut tr).unwrap();
        assert_eq!(tr.len(), 4 * 3);
        let got: Vec<(u32, u32, u64, bool)> = tr
            .iter()
            .map(|c| match dag.kind(c.task.0 as usize) {
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
            time_with(
                CollectiveOp::AllReduce,
                1 << 20,
                1024,
                0,
                &[GpuId(1)],
                &t,
                &crate::collective::ProtoCost::NONE
            ),
            Ok(SimTime::ZERO)
        );
    }
}
