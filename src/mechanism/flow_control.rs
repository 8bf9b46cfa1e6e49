//! Link-level flow control as a scenario states it: which law network links
//! run (credits, lossy drop-tail, PFC) with its thresholds, and the PFC
//! headroom rule `config` checks a scenario against. The mechanics live in
//! `backend::packet::flow_control`.

use crate::units::{Rate, SimTime};

/// Flow control on network links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlowControl {
    /// InfiniBand link-level credits per virtual lane: lossless.
    #[default]
    Credit,
    /// Ethernet drop-tail without PFC: lossy.
    Lossy,
    /// Ethernet with Priority Flow Control (IEEE 802.1Qbb): lossless. The
    /// receiver of every network link counts the bytes it buffers per (ingress
    /// link, priority); above `xoff` it sends PAUSE upstream, at or below `xon`
    /// RESUME. Nothing is dropped for lack of buffer.
    Pfc {
        /// Pause threshold, bytes buffered per ingress port and priority.
        xoff: u64,
        /// Resume threshold, bytes (≤ `xoff`).
        xon: u64,
        /// Bytes reserved above `xoff` for what is in flight while the PAUSE
        /// takes effect; must cover [`pfc_headroom_needed`] of every
        /// network link, and `xoff + headroom` must fit `port_buffer_bytes`
        /// (unused when a shared headroom pool is set, which must cover it
        /// instead).
        headroom: u64,
    },
}

/// Bytes a PFC PAUSE or RESUME frame occupies on the wire: a 64-byte minimum
/// MAC control frame (IEEE 802.1Qbb §36.1.3) plus the 8-byte preamble and
/// start delimiter and the 12-byte inter-frame gap (IEEE 802.3 §4.4.2).
pub const PFC_FRAME_WIRE_BYTES: u64 = 64 + 8 + 12;

/// How a PFC receiver sets the XOFF of an ingress lane.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum PfcThreshold {
    /// A fixed XOFF and XON per ingress port and priority (`FlowControl::Pfc`'s
    /// `xoff` and `xon`, bytes).
    #[default]
    Static,
    /// Dynamic threshold (Choudhury & Hahne, ToN 1998), as Broadcom and
    /// Mellanox switch ASICs and the HPCC simulator (`switch-mmu.cc`,
    /// `GetPfcThreshold`) set it: an ingress lane pauses its sender once the
    /// bytes it holds in the switch's shared buffer would exceed `alpha` ×
    /// the shared buffer still free, and resumes it once they are two
    /// maximum packets below that (the hysteresis of the static default XON).
    /// A lone busy lane may take α/(1+α) of the buffer; with N busy lanes
    /// each gets α/(1+Nα).
    Dynamic {
        /// α, a positive factor (dimensionless).
        alpha: f64,
    },
}

/// Whether PFC thresholds fit the buffer: XOFF plus the headroom above it
/// within the buffer per port and priority. The one statement of the rule
/// that `config` and the packet backend both enforce.
pub fn pfc_fits_buffer(xoff: u64, headroom: u64, buffer: u64) -> bool {
    xoff.saturating_add(headroom) <= buffer
}

/// Bytes a PFC receiver must still absorb after it decides to pause a link of
/// `rate`, one-way `latency`, whose receiving node forwards in `fwd_latency`,
/// carrying packets of at most `max_packet` wire bytes. The usual rule is
/// 2 × latency × rate (the PAUSE travelling up while data keeps coming down)
/// plus 2 × MTU (the packet the sender is serializing when the PAUSE lands,
/// and the one that crossed XOFF); Cisco, "Priority Flow Control: Build
/// Reliable Layer 2 Infrastructure" (white paper, 2009) and IEEE 802.1Qbb
/// Annex N. This model adds what it also has in flight: the receiver counts a
/// packet once it is through its forwarding pipeline (`fwd_latency × rate`
/// more bytes), the PAUSE waits on the reverse link for the frame already in
/// serialization there (one more `max_packet`: control frames go ahead of
/// queued data but never preempt, Annex N's "maximum frame on the reverse
/// link"), and the PAUSE frame itself takes [`PFC_FRAME_WIRE_BYTES`].
pub fn pfc_headroom_needed(
    rate: Rate,
    latency: SimTime,
    fwd_latency: SimTime,
    max_packet: u32,
) -> u64 {
    let t = 2 * latency.0 as u128 + fwd_latency.0 as u128;
    let bytes = (rate.0 as u128 * t).div_ceil(8_000_000_000_000) as u64;
    bytes + 3 * max_packet as u64 + PFC_FRAME_WIRE_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    // config and the packet backend both call this: its edge is the rule
    #[test]
    fn xoff_and_headroom_may_fill_the_buffer_exactly() {
        assert!(pfc_fits_buffer(100, 28, 128));
        assert!(!pfc_fits_buffer(100, 29, 128));
        // a sum past u64 must not wrap round to something small
        assert!(!pfc_fits_buffer(2, u64::MAX, 100));
    }
}
