//! Loss recovery as a scenario states it: which law a queue pair's transport
//! runs when a packet is lost, and whether switches trim instead of dropping.
//! The state machines live in `backend::packet::recovery`.

/// How a queue pair's sender finds and resends what the fabric lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LossRecovery {
    /// Go-back-N (IBA vol. 1 §9.7; RoCE NICs before IRN): a gap or a timeout
    /// rewinds the sender to the oldest unacknowledged packet and everything
    /// from there is sent again.
    #[default]
    GoBackN,
    /// Selective repeat as IRN (Mittal et al., SIGCOMM 2018) and ConnectX-6
    /// and later run it: the receiver keeps what arrives beyond a gap (a
    /// bitmap of one window) and NACKs each out-of-order arrival with the
    /// cumulative ACK and the PSN it got; the sender resends only the PSNs
    /// below the highest one selectively acknowledged, with a short timeout
    /// (`rto_low`) when few packets are outstanding.
    SelectiveRepeat,
    /// Go-back-0: a loss restarts the whole message from its first packet
    /// (the contrast case of IRN's paper, §2).
    GoBack0,
    /// TCP's: the receiver keeps what arrives beyond a gap and sends a
    /// duplicate ACK for each such arrival; three duplicates resend the hole
    /// (fast retransmit, RFC 5681 §3.2) and partial ACKs the next ones
    /// (NewReno, RFC 6582); the timer is RFC 6298's (SRTT, RTTVAR, Karn's
    /// rule, backoff) between `tcp_min_rto` and `tcp_max_rto`. The default
    /// of the TCP transport.
    Tcp,
}

impl LossRecovery {
    /// The scenario's name of the law (`fabric.loss_recovery`).
    pub fn name(self) -> &'static str {
        match self {
            LossRecovery::GoBackN => "go-back-n",
            LossRecovery::SelectiveRepeat => "selective-repeat",
            LossRecovery::GoBack0 => "go-back-0",
            LossRecovery::Tcp => "tcp",
        }
    }

    /// The law a scenario names: `go-back-n`, `selective-repeat`, `go-back-0`,
    /// `tcp`
    /// (issue 13's spellings `go_back_n`, `selective`, `selective_repeat` and
    /// `go_back_0` too).
    pub fn parse(s: &str) -> Option<LossRecovery> {
        match s {
            "go-back-n" | "go_back_n" => Some(LossRecovery::GoBackN),
            "selective-repeat" | "selective_repeat" | "selective" => {
                Some(LossRecovery::SelectiveRepeat)
            }
            "go-back-0" | "go_back_0" => Some(LossRecovery::GoBack0),
            "tcp" | "newreno" => Some(LossRecovery::Tcp),
            _ => None,
        }
    }
}
