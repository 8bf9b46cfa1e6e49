//! Link-level flow control: InfiniBand credits, lossy drop-tail, or PFC.
//!
//! **Credits** (InfiniBand, and every PCIe and NVLink link) are in
//! [`credit`], **lossy** drop-tail admission in [`lossy`], **PFC** in [`pfc`].
//! Each file holds its law's state (an owned part of the simulator:
//! [`Credits`], [`SharedBuffers`], [`PfcState`]) and the simulator's handlers
//! for it. A port's flags (`credit_fc`, `pfc`) say which law its link obeys:
//! host links are credit-controlled whatever [`FlowControl`] the network runs.
//! A new law (e.g. credit-based Ethernet) is a file here with its state part,
//! an arm in [`FlowControl`] (in [`crate::mechanism::flow_control`]) and a port
//! flag where `switch.rs` admits and schedules packets.

pub mod credit;
pub mod lossy;
pub mod pfc;

pub use crate::mechanism::flow_control::FlowControl;
pub use credit::{blocks, CreditLane, Credits};
pub use lossy::SharedBuffers;
pub use pfc::{DeadlockCycle, PfcFrameRecord, PfcState, WatchdogLane};

impl super::sim::Sim<'_> {
    /// A cycle of blocked links each waiting on the next, as (link id, sending
    /// node, receiving node): link `a` waits on link `b` when both are
    /// `blocked` (paused by PFC, or out of credits), `b` leaves the node `a`
    /// enters, and `b`'s queues hold packets that arrived over `a` — so `a`'s
    /// buffer space downstream comes back only once `b` moves (the buffer
    /// dependency graph of Dally & Seitz 1987; Hu et al., HotNets 2016, for
    /// PFC). Empty if the blocked links form no cycle. Only run when a
    /// deadlock is suspected, so its allocations are off the hot path.
    pub(in crate::backend::packet) fn wait_cycle(
        &self,
        blocked: impl Fn(usize) -> bool,
    ) -> Vec<(u32, u32, u32)> {
        use super::ids::PortId;
        let n = self.ports.len();
        let vls = self.vls;
        let mut out_of: Vec<Vec<u32>> = vec![Vec::new(); self.topo.nodes.len()];
        for (i, p) in self.ports.iter().enumerate() {
            if blocked(i) {
                out_of[p.from as usize].push(i as u32);
            }
        }
        let holds_from = |b: usize, a: u32| {
            (0..vls).any(|v| {
                self.ports
                    .queued(PortId(b as u32).lane(v as u8, vls))
                    .any(|k| self.pkts[k].link == PortId(a))
            })
        };
        // Iterative DFS with colours; `parent` rebuilds the cycle.
        let mut colour = vec![0u8; n];
        let mut parent = vec![u32::MAX; n];
        for s in 0..n {
            if colour[s] != 0 || !blocked(s) {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(s, 0)];
            colour[s] = 1;
            while let Some(&mut (a, ref mut i)) = stack.last_mut() {
                let next = out_of[self.ports[PortId(a as u32)].to as usize]
                    .get(*i)
                    .copied();
                *i += 1;
                match next {
                    None => {
                        colour[a] = 2;
                        stack.pop();
                    }
                    Some(b) => {
                        let b = b as usize;
                        if !holds_from(b, a as u32) {
                            continue;
                        }
                        if colour[b] == 1 {
                            let mut cyc = vec![b];
                            let mut x = a;
                            while x != b {
                                cyc.push(x);
                                x = parent[x] as usize;
                            }
                            cyc.reverse();
                            return cyc
                                .into_iter()
                                .map(|p| {
                                    let port = &self.ports[PortId(p as u32)];
                                    (p as u32, port.from, port.to)
                                })
                                .collect();
                        }
                        if colour[b] == 0 {
                            colour[b] = 1;
                            parent[b] = a as u32;
                            stack.push((b, 0));
                        }
                    }
                }
            }
        }
        Vec::new()
    }
}
