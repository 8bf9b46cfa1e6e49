//! Packet storage: a slab of fixed-size records with a free list.
//!
//! Packets are created at the source NIC and destroyed when delivered or dropped;
//! between the two they are referred to by a [`PktIdx`], so events stay small and
//! `Copy` and a run allocates only while the slab grows to its high-water mark
//! (bounded by the windows and buffers), never per packet in steady state.

use super::ids::{PktIdx, PortId, QpId};

/// Sentinel for "no task / no GPU / no node" in `u32` fields (ports have
/// [`PortId::NONE`]).
pub const NONE: u32 = u32::MAX;

/// What a packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PktKind {
    /// Payload of a message, sequence number `psn`.
    #[default]
    Data,
    /// Cumulative acknowledgement: every PSN below `psn` was received.
    Ack,
    /// Negative acknowledgement: expected `psn`, saw a later one (go-back-N).
    Nack,
    /// Congestion notification packet (DCQCN): the receiver saw CE marks.
    Cnp,
}

/// Flag: the packet was corrupted on its current link (bit error).
pub const F_CORRUPT: u8 = 1;
/// Flag: Congestion Experienced (ECN mark); stays set to the receiver.
pub const F_ECN: u8 = 2;
/// Flag: the packet is counted in its receiving node's PFC ingress bytes of
/// (`link`, lane it arrived on).
pub const F_PFC_HELD: u8 = 16;
/// Flag: the packet sits in a buffer that is accounted drop-tail (lossy ingress).
pub const F_LOSSY_HELD: u8 = 4;
/// Flag: a data packet whose payload a full queue trimmed (packet trimming,
/// NDP): only its header travels on, on the highest lane. On a NACK: `hash`
/// is the PSN of a trimmed packet the receiver wants again.
pub const F_TRIMMED: u8 = 32;
/// Flag: a selective NACK (IRN); `hash` is the PSN the receiver got beyond its gap.
pub const F_SACK: u8 = 64;
/// Flag: a TCP ACK whose SACK block is a D-SACK (RFC 2883): `sack_end` is
/// then the block's end as a signed (`i16`) offset from `psn`, since a
/// duplicate may lie below the cumulative ACK.
pub const F_DSACK: u8 = 128;
/// Flag: on a TCP data packet (the bit [`F_DSACK`] has on an ACK), CWR
/// (RFC 3168 §6.1.2): the first new segment the sender sends after it
/// reduced its window; the receiver stops demanding one.
pub const F_CWR: u8 = F_DSACK;
/// Flag: the packet's lane was raised at this node; it arrived (and holds
/// credits) on lane `vl − 1`.
pub const F_VL_RAISED: u8 = 8;

/// One packet in flight or in a buffer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// Queue pair the packet belongs to.
    pub qp: QpId,
    /// Packet sequence number (data) or acknowledged PSN (ACK/NACK).
    pub psn: u32,
    /// Bytes on the wire: payload plus headers (the payload of a data packet is
    /// `wire − header_bytes`; ACK/NACK carry none). Kept as the one size field
    /// so a packet fits in 32 bytes.
    pub wire: u32,
    /// Data: flow hash (informational; ECMP hashes the queue pair's). ACK/NACK
    /// under DCTCP: the number of CE-marked data packets the ACK echoes.
    pub hash: u32,
    /// Link the packet arrived on or is travelling on ([`PortId::NONE`] at its source).
    pub link: PortId,
    /// Epoch of `link` when transmission started (a link-down bumps it: the
    /// packet is lost). 16 bits: only equality matters, and 65 536 flaps of one
    /// link during one packet's flight do not happen.
    pub epoch: u16,
    /// Destination GPU.
    pub dst: u32,
    /// Data, ACK or NACK.
    pub kind: PktKind,
    /// Virtual lane / priority.
    pub vl: u8,
    /// `F_*` bits.
    pub flags: u8,
    /// A TCP ACK's SACK block (RFC 2018), when `sack_len` > 0: the receiver
    /// holds PSNs `[psn + sack_end − sack_len, psn + sack_end)`. The two
    /// fields fill the record's padding (it stays 32 bytes).
    pub sack_end: u16,
    /// Length of the SACK block, PSNs (0: none).
    pub sack_len: u8,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 32);

/// The slab.
#[derive(Default)]
pub struct Slab {
    slots: Vec<Packet>,
    free: Vec<PktIdx>,
    live: u32,
    /// Beside the slots, by index: the regular SACK blocks `[lo, hi)` a
    /// TCP ACK with a D-SACK block ([`F_DSACK`]) carries after it (RFC 2883
    /// §4), which the 32-byte record has no room for. Written when such an
    /// ACK is built, read only while its slot holds one; grows to the
    /// highest slot written (no allocation per packet in steady state).
    sack_extra: Vec<[(u32, u32); 2]>,
}

impl Slab {
    /// Stores `p`, reusing a freed slot when there is one.
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktIdx {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i.idx()] = p;
            i
        } else {
            self.slots.push(p);
            PktIdx(self.slots.len() as u32 - 1)
        }
    }
    /// Releases slot `i`.
    #[inline]
    pub fn free(&mut self, i: PktIdx) {
        self.live -= 1;
        self.free.push(i);
    }
    /// Stores the regular SACK blocks of D-SACK ACK `i` (see `sack_extra`).
    pub fn set_sack_extra(&mut self, i: PktIdx, blocks: [(u32, u32); 2]) {
        if self.sack_extra.len() <= i.idx() {
            self.sack_extra.resize(i.idx() + 1, [(0, 0); 2]);
        }
        self.sack_extra[i.idx()] = blocks;
    }
    /// The regular SACK blocks of D-SACK ACK `i` (none if never stored).
    pub fn sack_extra(&self, i: PktIdx) -> [(u32, u32); 2] {
        self.sack_extra.get(i.idx()).copied().unwrap_or([(0, 0); 2])
    }
    /// Adds `n` free slots handed out last first (a test of index
    /// independence, [`super::PERTURB_ORDERS`]); counts in
    /// [`Slab::capacity_used`].
    pub fn scramble(&mut self, n: u32) {
        let base = self.slots.len() as u32;
        self.slots
            .extend(std::iter::repeat_n(Packet::default(), n as usize));
        self.free.extend((base..base + n).map(PktIdx));
    }
    /// Packets currently alive.
    pub fn live(&self) -> u32 {
        self.live
    }
    /// High-water mark of simultaneously alive packets.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

/// Asks the CPU to start loading `r`'s cache line (a hint: no effect on results).
///
/// The packet level is bound by cache misses on packets and ports that were
/// last touched thousands of events ago; the main loop prefetches the data of
/// the next event while it handles the current one.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint; it never faults and writes nothing, and
    // `r` is a valid reference in any case. SSE is part of the x86_64 baseline.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

impl std::ops::Index<PktIdx> for Slab {
    type Output = Packet;
    #[inline]
    fn index(&self, i: PktIdx) -> &Packet {
        &self.slots[i.idx()]
    }
}
impl std::ops::IndexMut<PktIdx> for Slab {
    #[inline]
    fn index_mut(&mut self, i: PktIdx) -> &mut Packet {
        &mut self.slots[i.idx()]
    }
}
