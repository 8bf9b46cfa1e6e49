//! The event queue: small `Copy` events ordered by (time in picoseconds,
//! insertion sequence number), so events at equal times are processed in the
//! order they were scheduled, identically on every run.

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
    /// A compute task finished.
    TaskDone {
        /// Task index.
        task: u32,
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
            Event::TaskDone { task } => 5 | (task as u64) << 4,
            Event::Link { index } => 6 | (index as u64) << 4,
            Event::Sample => 7,
            Event::Pfc { link, vl, kind } => {
                8 | (vl as u64) << 4 | (kind as u64) << 8 | (link.0 as u64) << 32
            }
            Event::CcTimer { qp } => 9 | (qp.0 as u64) << 4,
            Event::DelAck { qp } => 10 | (qp.0 as u64) << 4,
        }
    }

    #[inline]
    fn decode(x: u64) -> Event {
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
            5 => Event::TaskDone { task: lo },
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

/// A far-heap entry: (time ps, sequence number, packed event).
type Entry = (u64, u64, u64);

/// A wheel entry: (key, packed event). Within a bucket the time is
/// `bucket start + (key >> SEQ_BITS)` and the key orders by (time, sequence)
/// in one integer comparison; 16 bytes instead of 24.
type Slot = (u64, u64);

/// Bits of the sequence number in a wheel key: 2^53 events is centuries of
/// simulation at any speed this engine reaches.
const SEQ_BITS: u32 = 64 - BUCKET_BITS;

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

/// The pending events of a run, popped in (time, sequence number) order.
///
/// A calendar queue (Brown, CACM 1988) with a fixed bucket width: a wheel of
/// unsorted buckets covering the next ≈ 4.2 µs, and a binary heap for events
/// beyond it (timeouts, compute tasks) that migrate into the wheel as it turns.
/// A bucket is sorted once when the wheel reaches it; events pushed into the
/// current bucket after that wait in a small side heap, merged on pop. Wheel
/// entries are 16 bytes: a key packing the time within the bucket above the
/// sequence number, and the packed event.
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
    /// Absolute index (time >> BUCKET_BITS) of the current bucket.
    cur: u64,
    /// The current bucket is sorted in descending order (pop from its end).
    cur_sorted: bool,
    /// Events pushed into the current bucket after it was sorted. Measured
    /// (perf, 1,024-GPU hierarchical all-reduce): inserting them in place was
    /// 9% of the run in `memmove`; NVLink serializes a 4 KiB packet in 0.6 ns,
    /// so many events land in the bucket being drained, which holds hundreds.
    late: BinaryHeap<Reverse<Slot>>,
    in_wheel: usize,
    far: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    len: usize,
    high: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..N_BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            cur: 0,
            cur_sorted: false,
            late: BinaryHeap::new(),
            in_wheel: 0,
            far: BinaryHeap::new(),
            seq: 0,
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
        self.seq += 1;
        debug_assert!(self.seq < 1 << SEQ_BITS);
        self.len += 1;
        self.high = self.high.max(self.len);
        let b = time >> BUCKET_BITS;
        debug_assert!(
            b >= self.cur || self.len == 1,
            "event scheduled in the past"
        );
        if b < self.cur + N_BUCKETS {
            self.insert(time, self.seq, ev.encode());
        } else {
            self.far.push(Reverse((time, self.seq, ev.encode())));
        }
    }

    #[inline(always)]
    fn insert(&mut self, time: u64, seq: u64, ev: u64) {
        let b = time >> BUCKET_BITS;
        let key = (time & ((1 << BUCKET_BITS) - 1)) << SEQ_BITS | seq;
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
        self.in_wheel += 1;
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

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        if self.len == 0 {
            return None;
        }
        loop {
            let slot = &mut self.buckets[(self.cur & (N_BUCKETS - 1)) as usize];
            if !slot.is_empty() || !self.late.is_empty() {
                if !self.cur_sorted {
                    // `late` is empty until the bucket is sorted; keys are unique
                    slot.sort_unstable_by_key(|&(key, _)| Reverse(key));
                    self.cur_sorted = true;
                }
                let (from_late, _) = self.front().expect("bucket or late not empty");
                let (key, e) = if from_late {
                    self.late.pop().expect("late is not empty").0
                } else {
                    self.buckets[(self.cur & (N_BUCKETS - 1)) as usize]
                        .pop()
                        .expect("bucket is not empty")
                };
                self.in_wheel -= 1;
                self.len -= 1;
                let t = self.cur << BUCKET_BITS | key >> SEQ_BITS;
                return Some((t, Event::decode(e)));
            }
            // the bucket is left empty
            let i = (self.cur & (N_BUCKETS - 1)) as usize;
            self.occupied[i / 64] &= !(1 << (i % 64));
            if self.in_wheel == 0 {
                // Nothing near: jump straight to the earliest far event.
                let Reverse(top) = self.far.peek().expect("len > 0");
                self.cur = top.0 >> BUCKET_BITS;
            } else {
                // Far events lie at or beyond the old horizon, so none is
                // due before the next occupied bucket.
                self.cur = self.next_occupied(self.cur + 1);
            }
            self.cur_sorted = false;
            while let Some(&Reverse((t, seq, ev))) = self.far.peek() {
                if t >> BUCKET_BITS >= self.cur + N_BUCKETS {
                    break;
                }
                self.far.pop();
                self.insert(t, seq, ev);
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
            (Some(&a), Some(&Reverse(b))) => Some(if b.0 < a.0 { (true, b) } else { (false, a) }),
            (Some(&a), None) => Some((false, a)),
            (None, Some(&Reverse(b))) => Some((true, b)),
            (None, None) => None,
        }
    }

    /// Most events ever pending at once.
    pub fn high_water(&self) -> usize {
        self.high
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

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::Sample);
        q.push(3, Event::TxDone { port: PortId(1) });
        q.push(3, Event::TxDone { port: PortId(2) });
        q.push(3, Event::TxDone { port: PortId(0) });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::TxDone { port: PortId(1) }),
                (3, Event::TxDone { port: PortId(2) }),
                (3, Event::TxDone { port: PortId(0) }),
                (5, Event::Sample)
            ]
        );
    }

    #[test]
    fn heap_order_matches_a_sort_and_events_round_trip() {
        let mut q = EventQueue::default();
        let mut x = 12345u64;
        let mut want = Vec::new();
        for i in 0..2000u32 {
            x = crate::topology::mix64(x);
            let t = x % 97;
            let ev = match i % 11 {
                9 => Event::DelAck { qp: QpId(i) },
                8 => Event::CcTimer { qp: QpId(i) },
                7 => Event::Pfc {
                    link: PortId(i),
                    vl: (i % 8) as u8,
                    kind: (i % 4) as u8,
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
                5 => Event::TaskDone { task: i },
                6 => Event::Link { index: i },
                _ => Event::Sample,
            };
            q.push(t, ev);
            want.push((t, i, ev));
        }
        want.sort_by_key(|&(t, i, _)| (t, i));
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
        let mut seq = 0u64;
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
                seq += 1;
                reference.push(Reverse((now + delay, seq, ev.encode())));
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
    fn events_are_small() {
        // Keeps the queue cache-friendly: a wheel entry is 8 (key) + 8 (packed event).
        assert!(std::mem::size_of::<Event>() <= 16);
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        // Two packets per cache line.
        assert_eq!(std::mem::size_of::<super::super::slab::Packet>(), 32);
    }
}
