//! The event queue: small `Copy` events ordered by (time in picoseconds, a
//! tie key that is a function of the event alone), so events at equal times
//! are processed in the same order on every run, whatever order they were
//! pushed in: the order a partitioned (parallel) run will reproduce (issue 16).
//!
//! The tie key of an event at time `t`, pushed while the event at time `now`
//! is handled, is (most significant first):
//! - the **delay rank**: the leading zeros of the delay `t − now` (64 for
//!   none), so among simultaneous events one scheduled in an earlier octave
//!   of delay goes first (what the global insertion sequence of earlier
//!   versions mostly did: an arrival after a 1 µs link before a
//!   transmission end 325 ns after its start) and one scheduled for "now"
//!   goes after every event already due. Delays within one octave tie here.
//!   A float-like class with 6 mantissa bits (exact below 64 ps) cost 8
//!   instructions more per push, 1.0% of the 128-host permutation's
//!   instructions (callgrind), for an order no physics asks for;
//! - the **identity mix**: the event's identity (its kind and the ids its
//!   handler reads: port, link and lane, queue pair, task; never the packet's
//!   slab index, which depends on the allocation order of the whole fabric)
//!   XOR a hash of the time, times that hash made odd, modulo 2^46: a
//!   bijection of the identity at each instant, so two events that differ in identity
//!   never tie, and the port that wins a tie changes from instant to instant
//!   instead of the lowest id always winning (ties are switch arbitration in
//!   lockstep scenarios).
//!
//! Two events with equal time and key are identical to their handlers (an
//! `Arrive` on one link at one time would need two packets serialized at once
//! on it; a `Credit`'s lane and blocks are informational), so which pops
//! first does not matter, except two `TaskDone` on one node (identified by
//! the node, so that the order does not follow how the DAG was numbered):
//! entries are ordered by (key, packed event), which puts the lower task id
//! first. The key needs no state per node: no counters, no
//! node lookup per push. A run's order still depends on the queue-pair ids
//! (queue-pair events name them): they are assigned in the order queue pairs
//! are created, which follows this event order, and the report lists queue
//! pairs in that order too.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::ids::{PktIdx, PortId, QpId};

/// Everything that can happen. Twelve bytes of payload: ids, never pointers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port (= directed link id) finished serializing its current packet.
    TxDone {
        /// Port / link.
        port: PortId,
    },
    /// Packet `pkt` is through `link` and the receiving node's forwarding pipeline.
    Arrive {
        /// Packet slab index.
        pkt: PktIdx,
        /// Link it travelled on.
        link: PortId,
    },
    /// Credits have reached the starved sender of `link` (`vl` and `blocks` are
    /// informational; the amounts wait in the link's credit FIFO).
    Credit {
        /// Link whose sender gets the credit.
        link: PortId,
        /// Virtual lane.
        vl: u8,
        /// Credit blocks returned.
        blocks: u32,
    },
    /// A queue pair paced by its host path may send again.
    QpWake {
        /// Queue pair.
        qp: QpId,
    },
    /// Retransmission timer of a queue pair.
    Rto {
        /// Queue pair.
        qp: QpId,
    },
    /// A timer of a queue pair's congestion control is due (DCQCN's α update,
    /// rate increase, deferred cut).
    CcTimer {
        /// Queue pair.
        qp: QpId,
    },
    /// The delayed-ACK timer of a queue pair's receiver (TCP with
    /// `tcp_delayed_ack`).
    DelAck {
        /// Queue pair.
        qp: QpId,
    },
    /// A compute task finished, or a transfer's receiver software did.
    TaskDone {
        /// Task index.
        task: u32,
        /// Node it finished on (the GPU's; the receiver's for a transfer).
        node: u32,
    },
    /// Apply `PacketConfig::link_events[index]`.
    Link {
        /// Index into the configured link events.
        index: u32,
    },
    /// Take a time-series sample.
    Sample,
    /// PFC on `link` and lane `vl`: a PAUSE (`kind` 1) or RESUME (0) frame
    /// reaches the link's sender; 2 = the receiver's refresh timer of a PAUSE
    /// with quanta; 3 = a PAUSE with quanta expires at the sender; 4 = the
    /// PFC watchdog looks at the lane; 5 = the lane's deadlock-cycle check;
    /// 6 = the watchdog's drop period ends (`flow_control::pfc::kind`).
    Pfc {
        /// Link whose sender is (un)paused.
        link: PortId,
        /// Lane.
        vl: u8,
        /// 0 RESUME, 1 PAUSE, 2 refresh, 3 expiry, 4 watchdog, 5 cycle check, 6 restore.
        kind: u8,
    },
}

// The id newtypes are `repr(transparent)`: an event stays twelve bytes, as
// with bare `u32`s (the wheel stores it packed into 64 bits anyway, see
// `encode`, but handlers pass it by value).
const _: () = assert!(std::mem::size_of::<Event>() == 12);

impl Event {
    /// Packs the event into 64 bits (4-bit tag, payload above), so a wheel entry
    /// is 16 bytes (key, event): the queue is the hottest structure of a run.
    #[inline]
    fn encode(self) -> u64 {
        match self {
            Event::TxDone { port } => (port.0 as u64) << 4,
            Event::Arrive { pkt, link } => {
                // The link is also stored in the packet; keep both ids anyway
                // (32 + 28 bits): link ids stay below 2^28 in any buildable fabric.
                debug_assert!(link.0 < 1 << 28);
                1 | (pkt.0 as u64) << 4 | (link.0 as u64) << 36
            }
            Event::Credit { link, vl, blocks } => {
                debug_assert!(blocks < 1 << 20 && vl < 8);
                2 | (vl as u64) << 4 | (blocks as u64) << 8 | (link.0 as u64) << 32
            }
            Event::QpWake { qp } => 3 | (qp.0 as u64) << 4,
            Event::Rto { qp } => 4 | (qp.0 as u64) << 4,
            Event::TaskDone { task, node } => {
                debug_assert!(node < 1 << 28);
                5 | (task as u64) << 4 | (node as u64) << 36
            }
            Event::Link { index } => 6 | (index as u64) << 4,
            Event::Sample => 7,
            Event::Pfc { link, vl, kind } => {
                8 | (vl as u64) << 4 | (kind as u64) << 8 | (link.0 as u64) << 32
            }
            Event::CcTimer { qp } => 9 | (qp.0 as u64) << 4,
            Event::DelAck { qp } => 10 | (qp.0 as u64) << 4,
        }
    }

    /// What tells this event apart for its handler, below 2^[`MIX_BITS`]: the
    /// 4-bit tag of [`Event::encode`] and the ids, without a packet's slab
    /// index (`Arrive` is told apart by its link and time) or a credit's
    /// informational lane and blocks. Inlined at each push site, where the
    /// kind is known, it compiles to a shift and an or.
    #[inline(always)]
    fn identity(self) -> u64 {
        match self {
            Event::TxDone { port } => (port.0 as u64) << 4,
            Event::Arrive { link, .. } => 1 | (link.0 as u64) << 4,
            Event::Credit { link, .. } => 2 | (link.0 as u64) << 4,
            Event::QpWake { qp } => 3 | (qp.0 as u64) << 4,
            Event::Rto { qp } => 4 | (qp.0 as u64) << 4,
            // the node, not the task id: the order of simultaneous
            // completions does not follow how a DAG was numbered (a Chakra
            // trace of a training step replays it exactly); two on one node
            // at one time and delay are told apart by the task id, in the
            // wheel's and heaps' (key, packed event) order
            Event::TaskDone { node, .. } => 5 | (node as u64) << 4,
            Event::Link { index } => 6 | (index as u64) << 4,
            Event::Sample => 7,
            Event::Pfc { link, vl, kind } => {
                // link ids stay below 2^28 (see `encode`): 38 bits
                debug_assert!(link.0 < 1 << 28 && vl < 8 && kind < 8);
                8 | (vl as u64) << 4 | (kind as u64) << 7 | (link.0 as u64) << 10
            }
            Event::CcTimer { qp } => 9 | (qp.0 as u64) << 4,
            Event::DelAck { qp } => 10 | (qp.0 as u64) << 4,
        }
    }

    /// The event [`Event::encode`] packed (a packed event of
    /// [`EventQueue::peek`]).
    #[inline]
    pub(super) fn decode(x: u64) -> Event {
        let lo = (x >> 4) as u32;
        match x & 15 {
            0 => Event::TxDone { port: PortId(lo) },
            1 => Event::Arrive {
                pkt: PktIdx(lo),
                link: PortId((x >> 36) as u32),
            },
            2 => Event::Credit {
                link: PortId((x >> 32) as u32),
                vl: ((x >> 4) & 15) as u8,
                blocks: ((x >> 8) & 0xF_FFFF) as u32,
            },
            3 => Event::QpWake { qp: QpId(lo) },
            4 => Event::Rto { qp: QpId(lo) },
            5 => Event::TaskDone {
                task: lo,
                node: (x >> 36) as u32,
            },
            6 => Event::Link { index: lo },
            8 => Event::Pfc {
                link: PortId((x >> 32) as u32),
                vl: ((x >> 4) & 15) as u8,
                kind: ((x >> 8) & 15) as u8,
            },
            9 => Event::CcTimer { qp: QpId(lo) },
            10 => Event::DelAck { qp: QpId(lo) },
            _ => Event::Sample,
        }
    }
}

/// A far-heap entry: (time ps, tie key, packed event).
type Entry = (u64, u64, u64);

/// A wheel entry: (key, packed event). Within a bucket the time is
/// `bucket start + (key >> TIE_BITS)` and the key orders by (time, tie key)
/// in one integer comparison; 16 bytes instead of 24.
type Slot = (u64, u64);

/// Bits of the tie key (module doc) in a wheel key.
const TIE_BITS: u32 = 64 - BUCKET_BITS;
/// Bits of the delay rank: the leading zeros of the delay, 0 to 64.
const RANK_BITS: u32 = 7;
/// Bits of the identity mix (46); every [`Event::identity`] is below 2^38.
const MIX_BITS: u32 = TIE_BITS - RANK_BITS;
const MIX_MASK: u64 = (1 << MIX_BITS) - 1;
/// The tie key's bits in a wheel key.
const TIE_MASK: u64 = (1 << TIE_BITS) - 1;
/// Multiplier of the time into the hash that mixes identities (the second
/// constant of SplitMix64's finalizer).
const TIME_MUL: u64 = 0xBF58_476D_1CE4_E5B9;

/// The tie key (module doc) of an event at `time` ps with identity `id`,
/// scheduled at `now` ps. About 9 instructions, no memory access.
#[inline(always)]
fn tie_key(time: u64, now: u64, id: u64) -> u64 {
    // (a past event is refused by `push`'s debug assertion; wrapping keeps a
    // release build from panicking on one)
    let rank = time.wrapping_sub(now).leading_zeros() as u64;
    // h: the product's top 46 bits, which depend on every bit of the time
    // (lockstep instants are multiples of a packet time, often of 2^9 ps).
    // The identity XOR h, times h made odd, modulo 2^46: both steps are
    // bijections. Measured (test `no_port_wins_every_tie`, and 8 to 32 ids,
    // aligned or scattered, at instants 1, 4,096 or 3,251,200 ps apart):
    // every id wins the first place within 3.3 sd of its share. XORing the
    // raw time, then a fixed multiplier, let 3 of 8 ports win 1.6% of the
    // ties instead of 12.5%; XORing h, then the fixed multiplier, let one
    // of 8 scattered ids win 17.5% and another 10%.
    let h = time.wrapping_mul(TIME_MUL) >> (64 - MIX_BITS);
    rank << MIX_BITS | ((id ^ h).wrapping_mul(h | 1) & MIX_MASK)
}

/// log2 of a bucket's width in picoseconds: 2.048 ns. Measured (callgrind,
/// permutation bench): 16.4 ns buckets held ~100+ events each at 10 k events per
/// simulated µs and sorting them cost 8% more instructions than 2 ns buckets.
const BUCKET_BITS: u32 = 11;
/// Buckets in the wheel: a horizon of 2048 × 2.048 ns ≈ 4.2 µs, beyond the
/// serialization, propagation and forwarding delay of one hop in a data-center
/// fabric; timers, compute tasks and pacing wake-ups beyond it wait in the far
/// heap. Measured: 2048 buckets ran 9–12 M events/s where 8192 ran 8–9 M on the
/// permutation bench (the bucket headers alone were 196 KB of cache at 8192).
const N_BUCKETS: u64 = 2048;
/// Words of the wheel's occupancy bitmap.
const WORDS: usize = N_BUCKETS as usize / 64;

/// The pending events of a run, popped in (time, tie key) order (module doc).
///
/// A calendar queue (Brown, CACM 1988) with a fixed bucket width: a wheel of
/// unsorted buckets covering the next ≈ 4.2 µs, and a binary heap for events
/// beyond it (timeouts, compute tasks) that migrate into the wheel as it turns.
/// A bucket is sorted once when the wheel reaches it; events pushed into the
/// current bucket after that wait in a small side heap, merged on pop. Wheel
/// entries are 16 bytes: a key packing the time within the bucket above the
/// tie key, and the packed event.
///
/// Measured (callgrind, 128-host permutation bench): the std binary heap spent
/// about 30% of all instructions sifting (≈ 12 levels for 4 k pending events);
/// a hand-written 4-ary heap was worse than std (1.96 G vs 1.51 G instructions);
/// this wheel makes push and pop O(1) for the near-future events that dominate.
/// A test checks that it pops exactly what a binary heap would.
pub struct EventQueue {
    buckets: Vec<Vec<Slot>>,
    /// One bit per bucket (ring position): it may hold events. Set by every
    /// insert, cleared when the wheel leaves the bucket empty; the wheel
    /// turns straight to the next set bit instead of stepping through empty
    /// buckets. Measured (callgrind, htsim 127→1 incast: one 100 Gb/s
    /// bottleneck, ~60 events per simulated µs, so ~8 empty 2 ns buckets per
    /// event): `pop` was 26% of the run's instructions, stepping; with the
    /// bitmap 10%, and the run 30% fewer instructions.
    occupied: [u64; WORDS],
    /// One bit per bucket: a `TaskDone` was inserted. Only then can two
    /// entries have equal keys and differ (two completions on one node), and
    /// the bucket is sorted by (key, packed event); otherwise by the key
    /// alone. Measured (callgrind, 128-host permutation): sorting every
    /// bucket by the pair cost 2.0% of the run's instructions.
    task_done: [u64; WORDS],
    /// Absolute index (time >> BUCKET_BITS) of the current bucket.
    cur: u64,
    /// The current bucket is sorted in descending order (pop from its end).
    cur_sorted: bool,
    /// Events pushed into the current bucket after it was sorted. Measured
    /// (perf, 1,024-GPU hierarchical all-reduce): inserting them in place was
    /// 9% of the run in `memmove`; NVLink serializes a 4 KiB packet in 0.6 ns,
    /// so many events land in the bucket being drained, which holds hundreds.
    late: BinaryHeap<Reverse<Slot>>,
    far: BinaryHeap<Reverse<Entry>>,
    /// Time of the last popped event, ps: the schedule time of every push
    /// (pushes happen while that event is handled), for the delay rank.
    now: u64,
    len: usize,
    /// Most events pending at once, up to the last pop (`high_water`
    /// completes it): updated per pop, not per push, since pops and pushes
    /// alternate and the length peaks just before a pop.
    high: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..N_BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            task_done: [0; WORDS],
            cur: 0,
            cur_sorted: false,
            late: BinaryHeap::new(),
            far: BinaryHeap::new(),
            now: 0,
            len: 0,
            high: 0,
        }
    }
}

impl EventQueue {
    /// Schedules `ev` at `time` picoseconds (never earlier than the last popped time).
    ///
    /// Always inlined: measured (callgrind, 1,024-host permutation), the
    /// out-of-line call saved and restored registers for 12 of its ~40
    /// instructions, at 1.7 pushes per event from a dozen call sites.
    #[inline(always)]
    pub fn push(&mut self, time: u64, ev: Event) {
        self.len += 1;
        let b = time >> BUCKET_BITS;
        debug_assert!(
            b >= self.cur || self.len == 1,
            "event scheduled in the past"
        );
        let tie = tie_key(time, self.now, ev.identity());
        self.place(time, tie, ev);
    }

    /// Schedules `ev` at `time`, as pushed while an event at `sched` ps was
    /// handled (its tie key's delay rank counts from `sched`, not from this
    /// queue's last pop): how a partitioned run ([`super::window`]) delivers
    /// an event that another partition scheduled, at a barrier, with the key
    /// a one-queue run gives it. `time` may lie before the bucket the wheel
    /// has turned to (never before the last popped time): the wheel turns
    /// back.
    #[inline(always)]
    pub fn push_from(&mut self, time: u64, sched: u64, ev: Event) {
        self.push_keyed(time, sched, ev, ev);
    }

    /// [`EventQueue::push_from`] with the tie key of `key` (`ev` with
    /// other ids): a partitioned run keys a queue pair's events by the id
    /// the one-queue run gives the pair ([`super::window`]).
    #[inline(always)]
    pub fn push_keyed(&mut self, time: u64, sched: u64, ev: Event, key: Event) {
        debug_assert!(
            time >= self.now && time >= sched,
            "event scheduled in the past"
        );
        if time >> BUCKET_BITS < self.cur {
            self.rewind(time >> BUCKET_BITS);
        }
        self.len += 1;
        let tie = tie_key(time, sched, key.identity());
        self.place(time, tie, ev);
    }

    /// Files an event whose tie key is computed: into the wheel or the far heap.
    #[inline(always)]
    fn place(&mut self, time: u64, tie: u64, ev: Event) {
        let b = time >> BUCKET_BITS;
        if b < self.cur + N_BUCKETS {
            if matches!(ev, Event::TaskDone { .. }) {
                // (resolved where `push` is inlined: other kinds pay nothing)
                self.mark_task_done(b);
            }
            self.insert(time, tie, ev.encode());
        } else {
            self.far.push(Reverse((time, tie, ev.encode())));
        }
    }

    #[inline(always)]
    fn insert(&mut self, time: u64, tie: u64, ev: u64) {
        let b = time >> BUCKET_BITS;
        let key = (time & ((1 << BUCKET_BITS) - 1)) << TIE_BITS | tie;
        if b == self.cur && self.cur_sorted {
            self.late.push(Reverse((key, ev)));
        } else {
            let i = (b & (N_BUCKETS - 1)) as usize;
            let bucket = &mut self.buckets[i];
            if bucket.is_empty() {
                // once per bucket and turn: a bucket holds ~18 events at
                // 1,024 hosts, and setting the bit on every push cost 1% of
                // the 128-host permutation's instructions
                self.occupied[i / 64] |= 1 << (i % 64);
            }
            bucket.push((key, ev));
        }
    }

    /// Marks bucket `b` (absolute index) as holding a `TaskDone`, unless it
    /// is the current, sorted one (its late pushes are ordered by (key,
    /// packed event) in `late`).
    #[cold]
    fn mark_task_done(&mut self, b: u64) {
        if b != self.cur || !self.cur_sorted {
            let i = (b & (N_BUCKETS - 1)) as usize;
            self.task_done[i / 64] |= 1 << (i % 64);
        }
    }

    /// The first bucket at or after absolute index `from` (within the
    /// horizon) whose bit is set; `from` itself if none is (the wheel then
    /// steps as it did without the bitmap).
    #[inline]
    fn next_occupied(&self, from: u64) -> u64 {
        let n = N_BUCKETS as usize;
        let p = (from & (N_BUCKETS - 1)) as usize;
        let mut w = p / 64;
        let mut bits = self.occupied[w] & (!0u64 << (p % 64));
        // WORDS + 1 words: the first one's bits below `p` come last
        for _ in 0..=WORDS {
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                return from + ((i + n - p) % n) as u64;
            }
            w = (w + 1) % WORDS;
            bits = self.occupied[w];
        }
        from
    }

    /// Turns the wheel back to absolute bucket `b` (before the current one):
    /// a partitioned run's barrier delivers an event to a queue that has
    /// already turned to its next pending event, beyond the delivered one
    /// ([`EventQueue::push_from`]). The late pushes go back into the current
    /// bucket (sorted again when the wheel reaches it), and the buckets
    /// beyond the new horizon `b + N_BUCKETS` go to the far heap. Cold: at
    /// most once per delivered event, never in a one-queue run.
    #[cold]
    #[inline(never)]
    fn rewind(&mut self, b: u64) {
        let ci = (self.cur & (N_BUCKETS - 1)) as usize;
        if !self.late.is_empty() {
            let late = std::mem::take(&mut self.late);
            self.buckets[ci].extend(late.into_iter().map(|Reverse(s)| s));
            // (a late TaskDone may need the pair order: a set bit only
            // costs a pair sort)
            self.task_done[ci / 64] |= 1 << (ci % 64);
            self.occupied[ci / 64] |= 1 << (ci % 64);
        }
        self.cur_sorted = false;
        // the wheel holds absolute buckets [cur, cur + N); after the turn
        // back it holds [b, b + N): what lies at or beyond b + N moves out
        let lo = self.cur.max(b + N_BUCKETS);
        for x in lo..self.cur + N_BUCKETS {
            let i = (x & (N_BUCKETS - 1)) as usize;
            if self.occupied[i / 64] & 1 << (i % 64) == 0 {
                continue;
            }
            for (key, ev) in std::mem::take(&mut self.buckets[i]) {
                let t = x << BUCKET_BITS | key >> TIE_BITS;
                self.far.push(Reverse((t, key & TIE_MASK, ev)));
            }
            self.occupied[i / 64] &= !(1 << (i % 64));
            self.task_done[i / 64] &= !(1 << (i % 64));
        }
        self.cur = b;
    }

    /// The earliest pending event as (time, tie key, packed event), the
    /// order of pops, without removing it; turns the wheel to it. Comparing
    /// these triples orders the events of several queues as one queue would
    /// ([`super::window`]).
    pub fn peek(&mut self) -> Option<(u64, u64, u64)> {
        let (_, (key, e)) = self.settle()?;
        Some((self.cur << BUCKET_BITS | key >> TIE_BITS, key & TIE_MASK, e))
    }

    /// Removes and returns the earliest event if it is due before `end` ps.
    #[inline]
    pub fn pop_before(&mut self, end: u64) -> Option<(u64, Event)> {
        let (_, (key, _)) = self.settle()?;
        if self.cur << BUCKET_BITS | key >> TIE_BITS >= end {
            return None;
        }
        self.pop()
    }

    /// Removes and returns the earliest event. Always inlined, as it was
    /// before `settle` was split out of it (callgrind, htsim 127→1 incast:
    /// +6% instructions for the run as a call).
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        if self.len == 0 {
            return None;
        }
        self.high = self.high.max(self.len);
        let (from_late, _) = self.settle()?;
        let (key, e) = if from_late {
            self.late.pop().expect("late is not empty").0
        } else {
            self.buckets[(self.cur & (N_BUCKETS - 1)) as usize]
                .pop()
                .expect("bucket is not empty")
        };
        self.len -= 1;
        let t = self.cur << BUCKET_BITS | key >> TIE_BITS;
        self.now = t;
        Some((t, Event::decode(e)))
    }

    /// Turns the wheel to the earliest pending event and sorts its bucket;
    /// returns the front entry (and whether it is a late push), or `None`
    /// when nothing is pending. Inlined into `pop`, whose loop it was.
    #[inline(always)]
    fn settle(&mut self) -> Option<(bool, Slot)> {
        if self.len == 0 {
            return None;
        }
        loop {
            let slot = &mut self.buckets[(self.cur & (N_BUCKETS - 1)) as usize];
            if !slot.is_empty() || !self.late.is_empty() {
                if !self.cur_sorted {
                    // `late` is empty until the bucket is sorted; sorted by
                    // (key, packed event): entries with equal keys are the
                    // same event to their handlers (module doc) or two task
                    // completions on one node, told apart by the task id
                    // (a bucket of one, most of them in an incast, needs
                    // neither the sort nor the bit: testing it anyway was
                    // 1.0% of the 127→1 incast's instructions; a bit left
                    // set costs one pair sort, which is always right)
                    if slot.len() > 1 {
                        let i = (self.cur & (N_BUCKETS - 1)) as usize;
                        if self.task_done[i / 64] & 1 << (i % 64) != 0 {
                            self.task_done[i / 64] &= !(1 << (i % 64));
                            slot.sort_unstable_by(|a, b| b.cmp(a));
                        } else {
                            slot.sort_unstable_by_key(|&(key, _)| Reverse(key));
                        }
                    }
                    self.cur_sorted = true;
                }
                return self.front();
            }
            // the bucket is left empty
            let i = (self.cur & (N_BUCKETS - 1)) as usize;
            self.occupied[i / 64] &= !(1 << (i % 64));
            // (the wheel's count is `len` less the far heap's: one counter
            // fewer to keep per push and pop, measured 0.3% of the
            // 128-host permutation's instructions)
            if self.len == self.far.len() {
                // Nothing near: jump straight to the earliest far event.
                let Reverse(top) = self.far.peek().expect("len > 0");
                self.cur = top.0 >> BUCKET_BITS;
            } else {
                // Far events lie at or beyond the old horizon, so none is
                // due before the next occupied bucket.
                self.cur = self.next_occupied(self.cur + 1);
            }
            self.cur_sorted = false;
            while let Some(&Reverse((t, tie, ev))) = self.far.peek() {
                if t >> BUCKET_BITS >= self.cur + N_BUCKETS {
                    break;
                }
                self.far.pop();
                if ev & 15 == 5 {
                    self.mark_task_done(t >> BUCKET_BITS);
                }
                self.insert(t, tie, ev);
            }
        }
    }

    /// The next event to pop, when it is known without work (the current bucket
    /// is sorted): a hint for prefetching its data, which may be overtaken by an
    /// event scheduled meanwhile.
    #[inline]
    pub fn peek_hint(&self) -> Option<Event> {
        if !self.cur_sorted {
            return None;
        }
        self.front().map(|(_, (_, e))| Event::decode(e))
    }

    /// The earliest entry of the sorted current bucket and its late pushes, and
    /// whether it is a late one.
    #[inline]
    fn front(&self) -> Option<(bool, Slot)> {
        let slot = &self.buckets[(self.cur & (N_BUCKETS - 1)) as usize];
        match (slot.last(), self.late.peek()) {
            (Some(&a), Some(&Reverse(b))) => Some(if b < a { (true, b) } else { (false, a) }),
            (Some(&a), None) => Some((false, a)),
            (None, Some(&Reverse(b))) => Some((true, b)),
            (None, None) => None,
        }
    }

    /// Time of the last popped event, ps.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Most events ever pending at once.
    pub fn high_water(&self) -> usize {
        self.high.max(self.len)
    }
    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event of every kind, ids from `i`.
    fn any_event(i: u32) -> Event {
        match i % 11 {
            9 => Event::DelAck { qp: QpId(i) },
            8 => Event::CcTimer { qp: QpId(i) },
            7 => Event::Pfc {
                link: PortId(i),
                vl: (i % 8) as u8,
                kind: (i % 7) as u8,
            },
            0 => Event::TxDone { port: PortId(i) },
            1 => Event::Arrive {
                pkt: PktIdx(i),
                link: PortId(i % 1000),
            },
            2 => Event::Credit {
                link: PortId(i),
                vl: (i % 8) as u8,
                blocks: i * 7,
            },
            3 => Event::QpWake { qp: QpId(i) },
            4 => Event::Rto { qp: QpId(i) },
            5 => Event::TaskDone {
                task: i,
                node: i % 5000,
            },
            6 => Event::Link { index: i },
            _ => Event::Sample,
        }
    }

    /// A seeded Fisher-Yates shuffle.
    fn shuffle<T>(v: &mut [T], seed: u64) {
        let mut x = seed;
        for i in (1..v.len()).rev() {
            x = crate::topology::mix64(x);
            v.swap(i, (x % (i as u64 + 1)) as usize);
        }
    }

    #[test]
    fn equal_times_pop_in_the_same_order_whatever_the_push_order() {
        // 3,000 events of every kind at 7 distinct times (hundreds per
        // instant), pushed in 5 orders: one pop order, the sorted reference
        let events: Vec<(u64, Event)> = (0..3000u32)
            .map(|i| (1000 * (i as u64 % 7), any_event(i)))
            .collect();
        let mut want: Vec<_> = events
            .iter()
            .map(|&(t, e)| (t, tie_key(t, 0, e.identity()), e))
            .collect();
        want.sort_by_key(|&(t, k, _)| (t, k));
        let want: Vec<_> = want.into_iter().map(|(t, _, e)| (t, e)).collect();
        for seed in 0..5 {
            let mut order = events.clone();
            shuffle(&mut order, seed);
            let mut q = EventQueue::default();
            for &(t, e) in &order {
                q.push(t, e);
            }
            let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            assert_eq!(got, want, "push order {seed}");
        }
    }

    /// Runs a model of a simulation: every popped event (a port id) schedules
    /// up to three more from itself (delays of 0, a few ps, a link's ~1 µs,
    /// beyond the wheel), many at equal times, pushed in an order shuffled by
    /// `seed`. Returns the pop sequence.
    fn model_run(seed: u64) -> Vec<(u64, Event)> {
        let mut q = EventQueue::default();
        let mut order = Vec::new();
        for p in 0..64u32 {
            q.push(0, Event::TxDone { port: PortId(p) });
        }
        let mut out = Vec::new();
        let mut round = 0u64;
        while let Some((t, e)) = q.pop() {
            out.push((t, e));
            if out.len() > 40_000 {
                continue;
            }
            let Event::TxDone { port } = e else {
                unreachable!()
            };
            // children depend on the event only (as handlers do)
            let h = crate::topology::mix64(t ^ (port.0 as u64) << 40);
            order.clear();
            for c in 0..(h % 4) {
                let d = match (h >> (8 + 2 * c)) % 4 {
                    0 => 0,
                    1 => 64 * ((h >> 20) % 3),
                    2 => 1_000_000 + 325_000 * ((h >> 24) % 2),
                    _ => 9_000_000 * (1 + c),
                };
                let next = PortId((port.0 + 1 + c as u32 * 7) % 64);
                order.push((t + d, Event::TxDone { port: next }));
            }
            round += 1;
            shuffle(&mut order, seed ^ round);
            for &(at, ev) in &order {
                q.push(at, ev);
            }
        }
        out
    }

    #[test]
    fn handlers_pushing_in_any_order_give_one_pop_order() {
        // The property a partitioned run relies on: what pops next is a
        // function of the events, not of the order pushes happened in. The
        // model's rounds differ in push order only; on a queue that breaks
        // ties by insertion sequence they diverge at the first tie.
        let a = model_run(1);
        assert!(a.len() > 10_000, "the model runs: {}", a.len());
        let ties = a.windows(2).filter(|w| w[0].0 == w[1].0).count();
        assert!(ties > 1000, "the model has simultaneous events: {ties}");
        assert_eq!(a, model_run(2));
        assert_eq!(a, model_run(3));
    }

    #[test]
    fn among_simultaneous_events_the_one_scheduled_longest_ago_pops_first() {
        let mut q = EventQueue::default();
        let t = 1_000_000;
        // scheduled at 0 (delay 1 µs), 600,000 (400 ns), then at t itself
        q.push(t, Event::TxDone { port: PortId(1) });
        q.push(600_000, Event::Sample);
        assert_eq!(q.pop(), Some((600_000, Event::Sample)));
        q.push(t, Event::TxDone { port: PortId(2) });
        q.push(t - 10, Event::Sample);
        assert_eq!(q.pop(), Some((t - 10, Event::Sample)));
        // delays 10 and 1 ps: octaves 8–15 and 1
        q.push(t, Event::TxDone { port: PortId(3) });
        q.push(t - 1, Event::Sample);
        assert_eq!(q.pop(), Some((t - 1, Event::Sample)));
        q.push(t, Event::TxDone { port: PortId(4) });
        let first = q.pop();
        assert_eq!(first, Some((t, Event::TxDone { port: PortId(1) })));
        // scheduled at t, while t's events are handled: after all of them
        q.push(t, Event::TxDone { port: PortId(0) });
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        let ports = |v: &[u32]| {
            v.iter()
                .map(|&p| Event::TxDone { port: PortId(p) })
                .collect::<Vec<_>>()
        };
        assert_eq!(rest, ports(&[2, 3, 4, 0]));
    }

    #[test]
    fn delay_rank_is_monotone_by_octave_and_fits() {
        let rank = |d: u64| tie_key(d, 0, 0) >> MIX_BITS;
        // no delay last, then 1 ps, 2–3 ps, 4–7 ps, …
        assert_eq!(rank(0), 64);
        assert_eq!(rank(1), 63);
        assert_eq!((rank(2), rank(3), rank(4)), (62, 62, 61));
        let mut x = 7u64;
        let mut ds: Vec<u64> = (0..20_000)
            .map(|i| {
                x = crate::topology::mix64(x);
                x >> (x % 64) >> (i % 2)
            })
            .chain([0, 1, 63, 64, 65, 127, 128, u64::MAX - 1, u64::MAX])
            .collect();
        ds.sort_unstable();
        for w in ds.windows(2) {
            assert!(rank(w[0]) >= rank(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(rank(u64::MAX), 0);
        assert!(rank(64) < 1 << RANK_BITS);
        // a 100 Gb/s link: an arrival 1 µs + 325 ns after its start goes
        // before a transmission end 325 ns after it
        assert!(rank(1_325_120) < rank(325_120));
    }

    #[test]
    fn distinct_events_never_tie() {
        // identities are below 2^MIX_BITS and the mix is a bijection of them
        // at every instant, so the largest ids the encoding allows still
        // give one key each
        let big = [0, 1, 2, 1 << 27, (1 << 28) - 1];
        let qps = [0, 1, u32::MAX - 1, u32::MAX];
        let mut evs = vec![Event::Sample];
        for &l in &big {
            evs.push(Event::TxDone { port: PortId(l) });
            evs.push(Event::Arrive {
                pkt: PktIdx(0),
                link: PortId(l),
            });
            evs.push(Event::Credit {
                link: PortId(l),
                vl: 0,
                blocks: 0,
            });
            for vl in 0..8 {
                for kind in 0..7 {
                    evs.push(Event::Pfc {
                        link: PortId(l),
                        vl,
                        kind,
                    });
                }
            }
        }
        for &q in &qps {
            evs.push(Event::QpWake { qp: QpId(q) });
            evs.push(Event::Rto { qp: QpId(q) });
            evs.push(Event::CcTimer { qp: QpId(q) });
            evs.push(Event::DelAck { qp: QpId(q) });
            evs.push(Event::TaskDone {
                task: q,
                node: q & ((1 << 28) - 1),
            });
            evs.push(Event::Link { index: q });
        }
        for &t in &[0u64, 1, 4095, 123_456_789, u64::MAX >> 1] {
            let mut keys: Vec<u64> = evs
                .iter()
                .map(|e| {
                    assert!(e.identity() < 1 << 38, "{e:?}");
                    tie_key(t, t / 2, e.identity())
                })
                .collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), evs.len(), "at {t}");
        }
        // what the identity leaves out: a packet's slab index, a credit's amounts
        let a = Event::Arrive {
            pkt: PktIdx(1),
            link: PortId(5),
        };
        let b = Event::Arrive {
            pkt: PktIdx(9),
            link: PortId(5),
        };
        assert_eq!(a.identity(), b.identity());
        let c = Event::Credit {
            link: PortId(5),
            vl: 1,
            blocks: 3,
        };
        let d = Event::Credit {
            link: PortId(5),
            vl: 2,
            blocks: 8,
        };
        assert_eq!(c.identity(), d.identity());
    }

    #[test]
    fn simultaneous_completions_on_one_node_pop_in_task_order() {
        // Identified by the node, two completions on one node at one time
        // and delay share a key; the (key, packed event) order puts the
        // lower task id first whatever the push order: in a bucket, in the
        // far heap and its migration (10 µs ahead), among late pushes (0 ahead).
        for delay in [5_000u64, 10_000_000, 0] {
            let mut orders = Vec::new();
            for reversed in [false, true] {
                let mut q = EventQueue::default();
                q.push(1, Event::Sample);
                q.push(1, Event::TxDone { port: PortId(1) });
                assert_eq!(q.pop().map(|(t, _)| t), Some(1));
                let mut evs: Vec<Event> = [9, 2, 5]
                    .iter()
                    .map(|&task| Event::TaskDone { task, node: 3 })
                    .collect();
                evs.push(Event::TaskDone { task: 4, node: 8 });
                if reversed {
                    evs.reverse();
                }
                for &e in &evs {
                    q.push(1 + delay, e);
                }
                let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
                let node3: Vec<u32> = got
                    .iter()
                    .filter_map(|&(_, e)| match e {
                        Event::TaskDone { task, node: 3 } => Some(task),
                        _ => None,
                    })
                    .collect();
                assert_eq!(node3, vec![2, 5, 9], "delay {delay}");
                orders.push(got);
            }
            assert_eq!(orders[0], orders[1], "delay {delay}");
        }
    }

    #[test]
    fn no_port_wins_every_tie() {
        // Eight input ports deliver at the same instant, at 4,000 instants
        // 3,251,200 ps apart (a 4,064 B packet at 10 Gb/s: multiples of
        // 2^9 ps): each should pop first in about 1/8 of them.
        // Binomial(4000, 1/8): mean 500, sd 20.9; 400..600 is ±4.8 sd; a
        // fixed winner gives 4000 or 0 (as insertion or port order would).
        // A switch's ports (an aligned block of ids), and scattered links.
        for links in [
            [96, 97, 98, 99, 100, 101, 102, 103],
            [0, 1, 2, 3, 4, 5, 6, 7],
            [3, 17, 18, 40, 41, 42, 999, 70_001],
            [1, 2, 4, 8, 16, 32, 64, 128],
            [1000, 1064, 1128, 1192, 1256, 1320, 1384, 1448],
        ] {
            let mut wins = [0u32; 8];
            let mut q = EventQueue::default();
            for i in 0..4000u64 {
                let t = (i + 1) * 3_251_200;
                for (p, &l) in links.iter().enumerate() {
                    let (pkt, link) = (PktIdx(p as u32), PortId(l));
                    q.push(t, Event::Arrive { pkt, link });
                }
                let Some((_, Event::Arrive { pkt, .. })) = q.pop() else {
                    panic!("eight arrivals are due")
                };
                wins[pkt.0 as usize] += 1;
                for _ in 0..7 {
                    q.pop();
                }
            }
            for w in wins {
                assert!((400..=600).contains(&w), "{links:?}: {wins:?}");
            }
        }
    }

    #[test]
    fn heap_order_matches_a_sort_and_events_round_trip() {
        let mut q = EventQueue::default();
        let mut x = 12345u64;
        let mut want = Vec::new();
        for i in 0..2000u32 {
            x = crate::topology::mix64(x);
            let t = x % 97;
            let ev = any_event(i);
            q.push(t, ev);
            want.push((t, tie_key(t, 0, ev.identity()), ev));
        }
        want.sort_by_key(|&(t, k, _)| (t, k));
        for (t, _, ev) in want {
            assert_eq!(q.pop(), Some((t, ev)));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn wheel_pops_exactly_what_a_binary_heap_pops() {
        // Interleaved pushes and pops with monotone time, delays from 0 to far
        // beyond the wheel's horizon, many ties.
        let mut q = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let mut x = 99u64;
        let mut now = 0u64;
        for i in 0..200_000u32 {
            x = crate::topology::mix64(x);
            if x % 3 != 0 || reference.is_empty() {
                let delay = match x % 7 {
                    0 => 0,
                    1 => x % 1000,
                    2..=4 => x % 300_000,
                    5 => x % 100_000_000,
                    _ => (x >> 8) % 5_000_000_000,
                };
                let ev = Event::TxDone { port: PortId(i) };
                q.push(now + delay, ev);
                let tie = tie_key(now + delay, now, ev.identity());
                reference.push(Reverse((now + delay, tie, ev.encode())));
            } else {
                let Reverse((t, _, e)) = reference.pop().unwrap();
                assert_eq!(q.pop(), Some((t, Event::decode(e))));
                now = t;
            }
        }
        while let Some(Reverse((t, _, e))) = reference.pop() {
            assert_eq!(q.pop(), Some((t, Event::decode(e))));
        }
        assert!(q.is_empty() && q.pop().is_none());
    }

    #[test]
    fn occupancy_bitmap_finds_the_next_bucket_across_the_ring_end() {
        let mut q = EventQueue::default();
        let w = 1u64 << BUCKET_BITS;
        // the wheel starts at bucket 0; one event in the ring's last bucket
        q.push((N_BUCKETS - 1) * w + 5, Event::Sample);
        assert_eq!(q.next_occupied(1), N_BUCKETS - 1);
        assert_eq!(q.pop(), Some(((N_BUCKETS - 1) * w + 5, Event::Sample)));
        // now at bucket N-1: the next events wrap to ring positions 0 and 3,
        // a far one lies beyond the horizon, a near one in the current bucket
        let (a, b) = ((N_BUCKETS + 3) * w, N_BUCKETS * w + 1);
        let far = (3 * N_BUCKETS + 7) * w;
        q.push(a, Event::TxDone { port: PortId(3) });
        q.push(far, Event::TxDone { port: PortId(9) });
        q.push(b, Event::TxDone { port: PortId(0) });
        q.push((N_BUCKETS - 1) * w + 6, Event::TxDone { port: PortId(1) });
        assert_eq!(q.next_occupied(N_BUCKETS), N_BUCKETS);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                ((N_BUCKETS - 1) * w + 6, Event::TxDone { port: PortId(1) }),
                (b, Event::TxDone { port: PortId(0) }),
                (a, Event::TxDone { port: PortId(3) }),
                (far, Event::TxDone { port: PortId(9) }),
            ]
        );
        // every bucket the wheel left has its bit cleared (the current one's
        // is cleared when the wheel leaves it)
        let i = (q.cur & (N_BUCKETS - 1)) as usize;
        let mut rest = q.occupied;
        rest[i / 64] &= !(1 << (i % 64));
        assert!(rest.iter().all(|&x| x == 0));
    }

    #[test]
    fn a_push_behind_the_turned_wheel_pops_in_order() {
        // A partitioned run delivers events at a barrier into queues that
        // have turned to their next event, up to beyond the horizon: the
        // queue pops what a binary heap of the same entries pops.
        let w = 1u64 << BUCKET_BITS;
        for gap in [3, N_BUCKETS - 1, N_BUCKETS + 5, 3 * N_BUCKETS] {
            let mut q = EventQueue::default();
            let mut reference = BinaryHeap::new();
            let mut put = |q: &mut EventQueue, t: u64, sched: u64, port: u32| {
                let ev = Event::TxDone { port: PortId(port) };
                q.push_from(t, sched, ev);
                reference.push(Reverse((t, tie_key(t, sched, ev.identity()), ev.encode())));
            };
            put(&mut q, 10, 0, 0);
            assert_eq!(q.pop().map(|(t, _)| t), Some(10));
            // pending: one in the current bucket's late heap, one far ahead
            // the wheel turns to, a few across the horizon
            put(&mut q, 20, 10, 1);
            put(&mut q, gap * w + 7, 10, 2);
            put(&mut q, (gap + N_BUCKETS - 1) * w, 10, 3);
            put(&mut q, (gap + 2 * N_BUCKETS) * w, 10, 4);
            assert_eq!(q.pop().map(|(t, _)| t), Some(20));
            assert_eq!(q.peek().map(|h| h.0), Some(gap * w + 7));
            // delivered behind it, in the current bucket and the next ones
            put(&mut q, 30, 5, 5);
            put(&mut q, 2 * w + 1, 10, 6);
            put(&mut q, 2 * w + 1, 20, 7);
            put(&mut q, (N_BUCKETS + 1) * w, 20, 8);
            let mut got = Vec::new();
            while let Some((t, e)) = q.pop() {
                got.push((t, e));
            }
            let mut want = Vec::new();
            while let Some(Reverse((t, _, e))) = reference.pop() {
                want.push((t, Event::decode(e)));
            }
            assert_eq!(got, want[2..], "gap {gap}");
        }
    }

    #[test]
    fn events_are_small() {
        // Keeps the queue cache-friendly: a wheel entry is 8 (key) + 8 (packed event).
        assert!(std::mem::size_of::<Event>() <= 16);
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        // Two packets per cache line.
        assert_eq!(std::mem::size_of::<super::super::slab::Packet>(), 32);
    }
}
