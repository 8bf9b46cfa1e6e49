//! The one way every workload kind runs a DAG: [`run`] takes the fidelity, the
//! seed, the link events and the packet settings ([`BackendConfig`]) and the
//! observers ([`Observers`]), and returns a [`RunOutput`] or a [`BackendError`].
//! Collective sweeps, traffic patterns, training steps and inference batches all
//! come through here, so a PFC deadlock, progress and link faults behave the same
//! whatever generated the DAG.
//!
//! Observers never change results: each is either off or records what the
//! backend computes anyway. Which fidelity feeds which observer:
//!
//! | observer | analytical | flow | packet |
//! |---|---|---|---|
//! | [`Observers::progress`] | once, at the end (one pass, no events) | every [`PROGRESS_EVERY`] events | every [`PROGRESS_EVERY`] events |
//! | [`Observers::link_timeline`] | — (no link occupancy: an idle-fabric closed form) | bytes per link and bucket | wire bytes per link and bucket (data, ACKs, CNPs, PAUSE frames; each spread over its serialization) |
//! | [`Observers::sampling`] | — (no queues) | — (no queues) | queue depth of the busiest ports |

use std::fmt;
use std::sync::Arc;

use super::analytical::{self, AnalyticalError};
use super::flow::{self, FlowError};
use super::packet::{self, PacketConfig, PacketError};
use super::{FabricCounters, LinkCounters, LinkEvent, LinkEventKind, RunOutput};
use crate::config::Fidelity;
use crate::dag::Dag;
use crate::topology::Topology;
use crate::units::SimTime;

/// Events between two calls of [`Observers::progress`]: rare enough that the
/// call costs nothing measurable, frequent enough for a live line (tens of
/// calls per second at millions of events per second).
pub const PROGRESS_EVERY: u64 = 65_536;

/// Where a run is, passed to the progress observer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProgressTick {
    /// Events processed so far in this backend run (it restarts with each run).
    pub events: u64,
    /// Simulated time reached, picoseconds.
    pub sim_time: SimTime,
}

/// A progress callback; called every [`PROGRESS_EVERY`] events, never per event.
pub type ProgressHook = Arc<dyn Fn(ProgressTick) + Send + Sync>;

/// The per-link byte timeline (flow and packet backends), when asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimelineRequest {
    /// A guess of how long the run sends (e.g. the analytical time), to size the
    /// buckets; zero when unknown. Any value gives the same totals.
    pub horizon: SimTime,
    /// Keep the rows of only this many links, the busiest by busy time (0 = all).
    pub links: usize,
}

/// Time series of the packet level's busiest ports (queue depth), when asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Sampling interval, picoseconds (above zero).
    pub interval: SimTime,
    /// Ports reported (the ones with the largest queues).
    pub ports: u32,
    /// Samples kept per port; when full, every other one is dropped and the
    /// interval doubles, so memory stays bounded.
    pub max_samples: u32,
}

/// What watches a run without changing it (see the module doc for which
/// fidelity feeds which).
#[derive(Clone, Default)]
pub struct Observers {
    /// Called every [`PROGRESS_EVERY`] events with the simulated time reached.
    pub progress: Option<ProgressHook>,
    /// Record the bytes each link carries per time bucket
    /// ([`RunOutput::link_timeline`]).
    pub link_timeline: Option<TimelineRequest>,
    /// Sample port queues into [`RunOutput::series`]; `None` keeps the packet
    /// settings' own (`PacketConfig::sample_interval`, off by default).
    pub sampling: Option<Sampling>,
    /// The caller does not read [`RunOutput::task_start`] and
    /// [`RunOutput::task_done`]: the flow level may leave them empty and keep
    /// 8 B per task less ([`flow::FlowConfig::skip_task_spans`]); the other
    /// backends fill them anyway.
    pub skip_task_spans: bool,
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observers")
            .field("progress", &self.progress.is_some())
            .field("link_timeline", &self.link_timeline)
            .field("sampling", &self.sampling)
            .field("skip_task_spans", &self.skip_task_spans)
            .finish()
    }
}

/// How to run a DAG: everything that changes results.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendConfig {
    /// Which backend.
    pub fidelity: Fidelity,
    /// Seed of the run's randomness (ECMP hashing; packet-level jitter, marking).
    pub seed: u64,
    /// Timed link changes, in any order for analytical and flow; the packet
    /// level applies events of equal time in list order.
    pub link_events: Vec<LinkEvent>,
    /// The packet level's settings (`None`: [`PacketConfig::default`]); their
    /// own `seed` and `link_events` are replaced by the fields above. Unused at
    /// the other fidelities.
    pub packet: Option<PacketConfig>,
    /// Traffic classes the flow level shares links among (the packet level
    /// reads its own, [`PacketConfig::classes`]); `None` elsewhere, or when
    /// the transfers all ride one class.
    pub classes: Option<crate::mechanism::TrafficClasses>,
}

impl BackendConfig {
    /// `fidelity` with `seed`, no link events and default packet settings.
    pub fn new(fidelity: Fidelity, seed: u64) -> BackendConfig {
        BackendConfig {
            fidelity,
            seed,
            link_events: Vec::new(),
            packet: None,
            classes: None,
        }
    }
}

/// A PFC deadlock that stopped a packet-level run: lanes paused on a cycle of
/// links, each waiting for the next to drain, and nothing transmitted for
/// `PacketConfig::deadlock_timeout`. A finding about the fabric, not a failure
/// of the simulator: it keeps what the run did up to it.
#[derive(Clone, Debug, PartialEq)]
pub struct Deadlock {
    /// What froze: PFC pauses or InfiniBand credits.
    pub kind: DeadlockKind,
    /// When the watchdog declared it, picoseconds.
    pub at: SimTime,
    /// Last transmission anywhere in the fabric, picoseconds.
    pub since: SimTime,
    /// The cycle of paused links, as (link id, sending node, receiving node);
    /// empty if paused links exist but no cycle was found among them.
    pub cycle: Vec<(u32, u32, u32)>,
    /// Labels of the DAG's operations that had a task started and not done
    /// (each once, in operation order): the phase the fabric froze in.
    pub ops_in_flight: Vec<String>,
    /// Fabric counters up to the deadlock (PAUSE frames, queues, bytes).
    pub fabric: FabricCounters,
    /// Per-link counters up to the deadlock (links that carried traffic).
    pub links: Vec<LinkCounters>,
    /// Events simulated up to the deadlock.
    pub events: u64,
}

/// The lossless mechanism whose buffer dependencies closed a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeadlockKind {
    /// Lanes paused by PFC (lossless Ethernet).
    Pfc,
    /// Links out of InfiniBand credits.
    Credit,
}

impl std::fmt::Display for DeadlockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeadlockKind::Pfc => "PFC",
            DeadlockKind::Credit => "credit",
        })
    }
}

/// Why a backend stopped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// The analytical backend cannot give a finite time (a transfer has no path).
    #[error("analytical backend: {0}")]
    Analytical(AnalyticalError),
    /// The flow backend stopped (no route, a path too long, a stalled DAG).
    #[error("flow backend: {0}")]
    Flow(FlowError),
    /// The packet backend stopped (a bad setting, an unreachable destination,
    /// the time limit); a PFC or credit deadlock is [`BackendError::Deadlock`].
    #[error("packet backend: {0}")]
    Packet(PacketError),
    /// A PFC or credit deadlock stopped the packet level.
    #[error(
        "packet backend: {} deadlock at {}: nothing transmitted since {}; {} form the cycle {}",
        .0.kind,
        .0.at,
        .0.since,
        match .0.kind { DeadlockKind::Pfc => "paused links", DeadlockKind::Credit => "links waiting for credits" },
        packet::fmt_cycle(&.0.cycle)
    )]
    Deadlock(Box<Deadlock>),
    /// A link event this fidelity cannot model without changing what was asked
    /// (a link coming back up, below the packet level).
    #[error("{0}")]
    Unsupported(String),
}

impl BackendError {
    /// The transfer task that had no path, whichever backend found it.
    pub fn unreachable_task(&self) -> Option<u32> {
        match self {
            BackendError::Analytical(AnalyticalError::Unreachable { task, .. })
            | BackendError::Flow(FlowError::Unreachable { task, .. })
            | BackendError::Packet(PacketError::Unreachable { task, .. }) => Some(*task),
            _ => None,
        }
    }
}

/// Runs `dag` on `topo` as `cfg` says, with `observers` watching.
///
/// # Errors
/// [`BackendError`]: no path for a transfer, a stalled DAG, a PFC deadlock
/// (with the counters up to it), the packet level's time limit, or an `Up`
/// link event below the packet level.
pub fn run(
    dag: &Dag,
    topo: &Topology,
    cfg: &BackendConfig,
    observers: &Observers,
) -> Result<RunOutput, BackendError> {
    if let Some(e) = cfg
        .link_events
        .iter()
        .find(|e| e.kind == LinkEventKind::Up && !e.kind.modelled_at(cfg.fidelity))
    {
        return Err(BackendError::Unsupported(format!(
            "link {} coming back up at {}: only the packet fidelity models a link's return (the {} fidelity would keep it down)",
            e.link.0,
            e.at,
            cfg.fidelity.name()
        )));
    }
    match cfg.fidelity {
        Fidelity::Analytical => {
            let out = analytical::run_with_events(dag, topo, &cfg.link_events)
                .map_err(BackendError::Analytical)?;
            // one pass with no event loop: the only tick there is, at the end
            if let Some(p) = &observers.progress {
                p(ProgressTick {
                    events: out.events,
                    sim_time: out.makespan,
                });
            }
            Ok(out)
        }
        Fidelity::Flow => {
            let timeline = observers.link_timeline;
            let fc = flow::FlowConfig {
                seed: cfg.seed,
                full_recompute: false,
                link_events: cfg.link_events.clone(),
                link_timeline: timeline.is_some(),
                timeline_horizon: timeline.map_or(SimTime::ZERO, |t| t.horizon),
                timeline_links: timeline.map_or(0, |t| t.links),
                progress: observers.progress.clone(),
                classes: cfg.classes.clone(),
                skip_task_spans: observers.skip_task_spans,
            };
            flow::run(dag, topo, &fc).map_err(BackendError::Flow)
        }
        Fidelity::Packet => {
            let mut pc = cfg.packet.clone().unwrap_or_default();
            pc.seed = cfg.seed;
            pc.link_events = cfg.link_events.clone();
            if let Some(s) = observers.sampling {
                pc.sample_interval = s.interval;
                pc.series_ports = s.ports;
                pc.series_max_samples = s.max_samples;
            }
            packet::run_observed(
                dag,
                topo,
                &pc,
                observers.progress.as_ref(),
                observers.link_timeline,
            )
            .map(|(out, _)| out)
        }
    }
}
