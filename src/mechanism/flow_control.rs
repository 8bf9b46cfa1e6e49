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
        /// network link, and `xoff + headroom` must fit `port_buffer_bytes`.
        headroom: u64,
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
/// more bytes), and the PAUSE frame itself takes 64 bytes of serialization.
pub fn pfc_headroom_needed(
    rate: Rate,
    latency: SimTime,
    fwd_latency: SimTime,
    max_packet: u32,
) -> u64 {
    let t = 2 * latency.0 as u128 + fwd_latency.0 as u128;
    let bytes = (rate.0 as u128 * t).div_ceil(8_000_000_000_000) as u64;
    bytes + 2 * max_packet as u64 + 64
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
