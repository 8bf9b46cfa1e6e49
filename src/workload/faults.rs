//! Stragglers and failures applied to a workload DAG and its fabric.
//!
//! - `slow_gpu`: every compute task of the GPU that starts at or after `at` takes
//!   `factor` times longer. Whether a task starts after `at` is decided on the
//!   healthy idle schedule (the analytical critical path), so the DAG stays
//!   static and the same slowed DAG runs at every fidelity.
//! - `link_down`, `switch_down`: timed link events ([`crate::backend::LinkEvent`]):
//!   the links stop at `at`, routes are recomputed and, at the flow and packet
//!   fidelities, traffic on them moves to a new path (flow: with its remaining
//!   bytes; packet: packets on the wire or queued are lost and recovered by the
//!   transport). At the analytical fidelity a transfer that starts at or after
//!   `at` sees the failed fabric ([`crate::backend::analytical`]).
//! - Collective sweeps and traffic patterns have no compute: their slow GPUs are
//!   listed as ignored, their link and switch faults apply to every run, `at`
//!   counted from the start of each size's collective (each size starts on the
//!   healthy fabric at time zero, as nccl-tests runs sizes one after another).
//! - `link_degraded`: the link's line rate drops to `rate` at `at` (both
//!   directions), with the same timing rule. Its `bit_error_rate` is a
//!   [`LinkEventKind::Ber`] event that only the packet fidelity models, where each packet crossing the
//!   link is corrupted with probability 1 − (1 − BER)^(wire bits), dropped by the
//!   receiver and recovered by go-back-N or the retransmission timeout; the other
//!   fidelities do not model bit errors and list the key in `ignored_settings`.

use std::borrow::Cow;

use crate::backend::{LinkEvent, LinkEventKind};
use crate::collective::critical_path;
use crate::config::workload::{links_of, switch_links, FaultKind, FaultSpec};
use crate::dag::{Dag, TaskKind};
use crate::topology::Topology;
use crate::units::SimTime;

/// Records in `usage` the `[[faults]]` keys a run at `fidelity` consumes: every
/// link and switch fault, its bit-error rate at the packet level only, and a
/// `slow_gpu` only where the workload has compute to slow (`no_compute` names a
/// workload without any, such as "a collective sweep", whose slow GPUs are
/// skipped with that reason).
pub fn read_keys(
    faults: &[FaultSpec],
    fidelity: crate::config::Fidelity,
    no_compute: Option<&str>,
    usage: &mut crate::config::usage::Usage,
) {
    for (i, f) in faults.iter().enumerate() {
        if let (FaultKind::SlowGpu { .. }, Some(what)) = (&f.kind, no_compute) {
            usage.skip(&format!("faults.{i}"), || {
                format!("a slow GPU stretches compute tasks, and {what} has none: its transfers run at the fabric's pace")
            });
            continue;
        }
        let ber = format!("faults.{i}.bit_error_rate");
        if let FaultKind::LinkDegraded {
            bit_error_rate: Some(_),
            ..
        } = f.kind
        {
            usage.read_if(&ber, fidelity == crate::config::Fidelity::Packet, || {
                format!(
                    "bit errors corrupt packets, which only the packet fidelity models; the {} fidelity applies the degraded rate only",
                    fidelity.name()
                )
            });
        }
        for key in [
            "kind", "name", "at", "gpu", "factor", "nic", "link", "switch", "rate",
        ] {
            usage.read(&format!("faults.{i}.{key}"));
        }
    }
}

/// Faults turned into what the DAG and the backends consume.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Applied {
    /// Timed link changes for every backend: downs and rate changes sorted by
    /// time, then the bit-error rates of `link_degraded` faults (both directions
    /// of the cable) sorted by time. The packet engine applies events of equal
    /// time in list order, so this order is part of its results.
    pub link_events: Vec<LinkEvent>,
    /// (GPU, slowdown factor, from time).
    pub slow_gpus: Vec<(u32, f64, SimTime)>,
}

impl Applied {
    /// No fault.
    pub fn none() -> Applied {
        Applied::default()
    }

    /// The faults of `faults` on `topo`.
    pub fn new(faults: &[FaultSpec], topo: &Topology) -> Applied {
        let mut a = Applied::default();
        let mut bit_errors = Vec::new();
        for f in faults {
            match &f.kind {
                FaultKind::SlowGpu { gpu, factor } => a.slow_gpus.push((*gpu, *factor, f.at)),
                FaultKind::LinkDown { link } => {
                    for l in links_of(*link, topo) {
                        a.link_events.push(LinkEvent {
                            at: f.at,
                            link: l,
                            kind: LinkEventKind::Down,
                        });
                    }
                }
                FaultKind::LinkDegraded {
                    link,
                    rate,
                    bit_error_rate,
                } => {
                    for l in links_of(*link, topo) {
                        a.link_events.push(LinkEvent {
                            at: f.at,
                            link: l,
                            kind: LinkEventKind::Rate(*rate),
                        });
                        if let Some(b) = bit_error_rate.filter(|&b| b > 0.0) {
                            bit_errors.push(LinkEvent {
                                at: f.at,
                                link: l,
                                kind: LinkEventKind::Ber(b),
                            });
                        }
                    }
                }
                FaultKind::SwitchDown { switch } => {
                    for l in switch_links(*switch, topo) {
                        a.link_events.push(LinkEvent {
                            at: f.at,
                            link: l,
                            kind: LinkEventKind::Down,
                        });
                    }
                }
            }
        }
        a.link_events.sort_by_key(|e| e.at);
        bit_errors.sort_by_key(|e| e.at);
        a.link_events.extend(bit_errors);
        a
    }

    /// `topo` with every link change applied from the start (a fabric that was
    /// already degraded when the step began). The analytical backend applies
    /// each change at its time instead ([`crate::backend::analytical::run_with_events`]).
    pub fn static_topology<'t>(&self, topo: &'t Topology) -> Cow<'t, Topology> {
        if self.link_events.is_empty() {
            return Cow::Borrowed(topo);
        }
        let mut t = topo.clone();
        for e in &self.link_events {
            match e.kind {
                LinkEventKind::Down => {
                    if t.is_link_up(e.link) {
                        t.set_link_up(e.link, false);
                    }
                }
                LinkEventKind::Rate(r) => {
                    if let Some(l) = t.links.get_mut(e.link.0 as usize) {
                        l.rate = r;
                    }
                }
                LinkEventKind::Up => {
                    if !t.is_link_up(e.link) {
                        t.set_link_up(e.link, true);
                    }
                }
                // a bit error changes no route and no rate
                LinkEventKind::Ber(_) => {}
            }
        }
        Cow::Owned(t)
    }

    /// `dag` with the compute of slow GPUs stretched (see the module doc);
    /// borrowed unchanged when no GPU is slow.
    pub fn slow_dag<'d>(&self, dag: &'d Dag, topo: &Topology) -> Cow<'d, Dag> {
        if self.slow_gpus.is_empty() {
            return Cow::Borrowed(dag);
        }
        let starts = if self.slow_gpus.iter().any(|s| s.2 > SimTime::ZERO) {
            Some(critical_path::idle_schedule(dag, topo))
        } else {
            None
        };
        let mut d = dag.clone();
        for i in 0..d.len() {
            if let TaskKind::Compute { gpu, mut duration } = d.kind(i) {
                for &(g, factor, at) in &self.slow_gpus {
                    let after = starts.as_ref().is_none_or(|s| s[i].start >= at);
                    if g == gpu.0 && after {
                        duration = SimTime::from_secs_f64(duration.as_secs_f64() * factor);
                    }
                }
                d.set_kind(i, TaskKind::Compute { gpu, duration });
            }
        }
        Cow::Owned(d)
    }
}
