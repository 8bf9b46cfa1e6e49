//! **DCTCP** ([`CongestionControl::Dctcp`](crate::mechanism::CongestionControl::Dctcp), Alizadeh et al., SIGCOMM 2010,
//! §3.1): window-based. The receiver echoes on every ACK how many of the
//! packets it covers arrived marked; the sender keeps F = marked / acked over
//! each window of data (one round trip), updates α ← (1 − g) α + g F at the
//! window's end (g = 1/16), and cuts cwnd ← cwnd (1 − α/2) when marks arrive,
//! at most once per window of data: after a cut the sender is in congestion
//! window reduction (Linux's `TCP_CA_CWR`, which DCTCP's `ssthresh` hook runs
//! under) until everything it had sent at the cut is acknowledged, and neither
//! cuts again nor grows meanwhile. The α observation window is separate: a cut
//! late in one α window does not allow another early in the next, which would
//! cut twice per congestion event and double the queue's swing. Without marks the
//! window grows by one packet per round trip (slow start, from 10 packets as RFC
//! 6928, until the first mark); it never exceeds [`PacketConfig::window_bytes`](crate::backend::packet::PacketConfig::window_bytes). A timeout halves it.

use super::{AckInfo, AckReaction, CcLaw, QpStart};

/// DCTCP sender state of one queue pair (window in packets).
#[derive(Clone, Copy, Debug, Default)]
pub struct DctcpState {
    /// Congestion window, packets.
    pub cwnd: f64,
    /// Slow-start threshold, packets.
    pub ssthresh: f64,
    /// α.
    pub alpha: f64,
    /// PSN that ends the current observation window.
    pub win_end: u32,
    /// Packets acknowledged in this window.
    pub acked: u32,
    /// Of those, packets that arrived marked.
    pub marked: u32,
    /// In congestion window reduction after a cut (no cut, no growth) until
    /// `cwr_end` is acknowledged.
    pub cut: bool,
    /// The next PSN to send at the last cut: the reduction ends when the oldest
    /// unacknowledged PSN reaches it (Linux's `high_seq`).
    pub cwr_end: u32,
    /// Receiver: CE-marked data packets since the last ACK.
    pub ce_unacked: u32,
}

impl DctcpState {
    /// A new sender capped at `max_pkts`.
    pub fn new(max_pkts: u32) -> DctcpState {
        DctcpState {
            cwnd: 10f64.min(max_pkts as f64),
            ssthresh: max_pkts as f64,
            alpha: 1.0,
            ..DctcpState::default()
        }
    }

    /// `n` packets newly acknowledged, `m` of them marked; `una` is the new
    /// oldest unacknowledged PSN and `nxt` the next to send; `loss`: TCP's
    /// loss recovery started a fast retransmit on this ACK. Returns the
    /// window in whole packets.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack(
        &mut self,
        g: f64,
        n: u32,
        m: u32,
        una: u32,
        nxt: u32,
        max_pkts: u32,
        loss: bool,
    ) -> u32 {
        self.acked += n;
        self.marked += m.min(n.max(m));
        if self.cut && una >= self.cwr_end {
            self.cut = false;
        }
        if loss {
            // a fast retransmit: halve as TCP does (RFC 8257 §3.4), once
            // per window of data like a cut for marks
            if !self.cut {
                self.cwnd = (self.cwnd / 2.0).max(1.0);
                self.ssthresh = self.cwnd;
                self.cut = true;
                self.cwr_end = nxt.max(una + 1);
            }
        } else if m > 0 {
            if !self.cut {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(1.0);
                self.ssthresh = self.cwnd;
                self.cut = true;
                self.cwr_end = nxt.max(una + 1);
            }
        } else if self.cut {
            // Linux's tcp_may_raise_cwnd: no growth during the reduction
        } else if self.cwnd < self.ssthresh {
            self.cwnd += n as f64;
        } else if n > 0 {
            self.cwnd += n as f64 / self.cwnd;
        }
        self.cwnd = self.cwnd.min(max_pkts as f64);
        if una >= self.win_end {
            if self.acked > 0 {
                let f = (self.marked as f64 / self.acked as f64).min(1.0);
                self.alpha = (1.0 - g) * self.alpha + g * f;
            }
            self.acked = 0;
            self.marked = 0;
            self.win_end = nxt.max(una + 1);
        }
        self.window()
    }

    /// A retransmission timeout: halve the window.
    pub fn on_timeout(&mut self) -> u32 {
        self.cwnd = (self.cwnd / 2.0).max(1.0);
        self.ssthresh = self.cwnd;
        self.window()
    }

    /// The window in whole packets, rounded to nearest (at least 1): truncating
    /// would lose up to a packet per flow, which under a 16-flow fan-in at
    /// 400 Gb/s is a third of the bandwidth-delay product.
    pub fn window(&self) -> u32 {
        (self.cwnd.round() as u32).max(1)
    }
}

impl CcLaw for DctcpState {
    /// The α gain g.
    type Params = f64;
    // DCTCP windows shrink to a few packets per flow under fan-in; a
    // receiver that waited for `ack_every` packets would then stall the
    // sender until its timeout, so DCTCP ACKs every packet (as the HPCC
    // simulator does for every scheme: `L2_ACK_INTERVAL 1` in run.py).
    const ACK_EVERY: Option<u32> = Some(1);

    fn new(_g: &f64, start: &QpStart) -> Self {
        DctcpState::new(start.max_pkts)
    }

    #[inline]
    fn on_ack(&mut self, g: &f64, a: &AckInfo) -> AckReaction {
        // A cut sets `cwr_end` past the ACK's `una`, so a reduction that ends
        // and restarts on one ACK (leaving `cut` set) is a cut too.
        let (was_cut, was_end) = (self.cut, self.cwr_end);
        let w = DctcpState::on_ack(
            self,
            *g,
            a.newly_acked,
            a.ce,
            a.una,
            a.nxt,
            a.max_pkts,
            a.loss,
        );
        AckReaction {
            window: Some(w),
            window_cut: self.cut && (!was_cut || self.cwr_end != was_end),
        }
    }

    #[inline]
    fn on_timeout(&mut self, _g: &f64) -> Option<u32> {
        Some(DctcpState::on_timeout(self))
    }

    #[inline]
    fn on_ce(&mut self, _g: &f64, _now: u64) -> bool {
        self.ce_unacked += 1;
        false
    }

    #[inline]
    fn take_ce_echo(&mut self) -> u32 {
        std::mem::take(&mut self.ce_unacked)
    }

    #[inline]
    fn window(&self) -> Option<u32> {
        Some(DctcpState::window(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dctcp_cuts_by_half_alpha_once_per_window() {
        let mut d = DctcpState::new(100);
        d.alpha = 0.5;
        d.cwnd = 40.0;
        d.ssthresh = 40.0;
        d.win_end = 40;
        d.on_ack(1.0 / 16.0, 4, 4, 4, 40, 100, false);
        assert!((d.cwnd - 30.0).abs() < 1e-9);
        d.on_ack(1.0 / 16.0, 4, 4, 8, 40, 100, false);
        assert!((d.cwnd - 30.0).abs() < 1e-9, "one cut per window");
    }

    #[test]
    fn a_cut_late_in_an_alpha_window_blocks_cuts_until_its_data_is_acknowledged() {
        // The α window ends at PSN 40. Marks at PSN 38 cut (40 → 30) with PSNs up
        // to 70 sent; the α window then rolls over at 40, but marked ACKs for
        // PSNs 40..70 (sent before the cut reached the sender, so reflecting the
        // same congestion) must not cut again: one cut per window of data
        // (Alizadeh et al. 2010, §3.1; Linux CWR until high_seq).
        let g = 1.0 / 16.0;
        let mut d = DctcpState::new(100);
        d.alpha = 0.5;
        d.cwnd = 40.0;
        d.ssthresh = 40.0;
        d.win_end = 40;
        d.on_ack(g, 2, 2, 38, 70, 100, false);
        assert!((d.cwnd - 30.0).abs() < 1e-9);
        assert!(d.cut && d.cwr_end == 70);
        d.on_ack(g, 4, 4, 42, 70, 100, false);
        assert!(d.win_end >= 70, "the α window rolled over");
        assert!((d.cwnd - 30.0).abs() < 1e-9, "no second cut");
        // no growth during the reduction either
        d.on_ack(g, 10, 0, 52, 70, 100, false);
        assert!((d.cwnd - 30.0).abs() < 1e-9, "{}", d.cwnd);
        // data sent after the cut acknowledged: the next marks cut again
        let before = d.cwnd;
        d.on_ack(g, 20, 1, 72, 100, 100, false);
        assert!(d.cwnd < before && d.cwr_end == 100);
    }

    #[test]
    fn a_reduction_that_ends_and_restarts_on_one_ack_counts_as_a_cut() {
        // The ACK that acknowledges the end of one reduction can carry marks
        // for data sent after it: a new cut on that ACK leaves `cut` set, and
        // the law must still report it (the run's `dctcp_window_cuts`).
        let ack = |ce, una, nxt| AckInfo {
            now: 0,
            newly_acked: 10,
            ce,
            echo: Some(ce),
            una,
            nxt,
            nack: false,
            max_pkts: 100,
            dupack: false,
            loss: false,
            in_recovery: false,
            sack: false,
        };
        let g = 1.0 / 16.0;
        let mut d = DctcpState::new(100);
        d.cwnd = 40.0;
        d.ssthresh = 40.0;
        assert!(CcLaw::on_ack(&mut d, &g, &ack(1, 10, 50)).window_cut);
        assert!(!CcLaw::on_ack(&mut d, &g, &ack(1, 20, 50)).window_cut);
        // PSN 50 acknowledged, marked: the reduction ends and a new one starts
        assert!(CcLaw::on_ack(&mut d, &g, &ack(1, 50, 80)).window_cut);
        assert!(d.cut && d.cwr_end == 80);
        assert!(!CcLaw::on_ack(&mut d, &g, &ack(0, 60, 80)).window_cut);
    }
}
