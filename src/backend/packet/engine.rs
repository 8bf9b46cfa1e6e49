//! The event queue: one binary min-heap of small `Copy` events ordered by
//! (time in picoseconds, insertion sequence number), so events at equal times
//! are processed in the order they were scheduled, identically on every run.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Everything that can happen. Twelve bytes of payload: ids, never pointers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port (= directed link id) finished serializing its current packet.
    TxDone {
        /// Port / link.
        port: u32,
    },
    /// Packet `pkt` is through `link` and the receiving node's forwarding pipeline.
    Arrive {
        /// Packet slab index.
        pkt: u32,
        /// Link it travelled on.
        link: u32,
    },
    /// Credits for `blocks` on `vl` come back to the sender of `link`.
    Credit {
        /// Link whose sender gets the credit.
        link: u32,
        /// Virtual lane.
        vl: u8,
        /// Credit blocks returned.
        blocks: u32,
    },
    /// A queue pair paced by its host path may send again.
    QpWake {
        /// Queue pair.
        qp: u32,
    },
    /// Retransmission timer of a queue pair.
    Rto {
        /// Queue pair.
        qp: u32,
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
}

#[derive(Clone, Copy)]
struct Entry {
    time: u64,
    seq: u64,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed, so `BinaryHeap` (a max-heap) pops the earliest (time, seq) first.
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then(o.seq.cmp(&self.seq))
    }
}

/// The pending events of a run.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

impl EventQueue {
    /// Schedules `ev` at `time` picoseconds.
    #[inline]
    pub fn push(&mut self, time: u64, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            time,
            seq: self.seq,
            ev,
        });
    }
    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|e| (e.time, e.ev))
    }
    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Event::Sample);
        q.push(3, Event::TxDone { port: 1 });
        q.push(3, Event::TxDone { port: 2 });
        q.push(3, Event::TxDone { port: 0 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (3, Event::TxDone { port: 1 }),
                (3, Event::TxDone { port: 2 }),
                (3, Event::TxDone { port: 0 }),
                (5, Event::Sample)
            ]
        );
    }

    #[test]
    fn events_are_small() {
        // Keeps the heap cache-friendly: 8 (time) + 8 (seq) + 16 (event).
        assert!(std::mem::size_of::<Event>() <= 16);
    }
}
