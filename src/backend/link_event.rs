//! The one timed link change every backend consumes: faults (`link_down`,
//! `switch_down`, `link_degraded`) become a list of [`LinkEvent`]s, and the same
//! list goes to whichever fidelity runs ([`crate::backend::run`]).
//!
//! What each fidelity does with each kind is decided in one place,
//! [`LinkEventKind::modelled_at`]: the analytical and flow fidelities have no
//! packets, so a bit-error rate means nothing to them (a scenario lists the key
//! in `ignored_settings`), and neither models a link coming back.

use crate::config::Fidelity;
use crate::topology::LinkId;
use crate::units::{Rate, SimTime};

/// What happens to a link at a [`LinkEvent`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinkEventKind {
    /// The link and its reverse fail: routes are recomputed without them; traffic
    /// on them moves (flow: with its remaining bytes; packet: packets on the wire
    /// or queued are lost and recovered by the transport).
    Down,
    /// The link and its reverse come back (packet fidelity only).
    Up,
    /// The link (this direction) now runs at this line rate, bits/s.
    Rate(Rate),
    /// The link (this direction) now corrupts each bit with this probability
    /// (packet fidelity only: a corrupted packet is dropped by its receiver).
    Ber(f64),
}

impl LinkEventKind {
    /// Whether `fidelity` models this change. An unmodelled `Ber` is skipped
    /// (the scenario reports the key as ignored); an unmodelled `Up` is refused
    /// by [`crate::backend::run`], because skipping it would leave the link down
    /// for the rest of the run, a different fabric from the one asked for.
    pub fn modelled_at(self, fidelity: Fidelity) -> bool {
        match self {
            LinkEventKind::Down | LinkEventKind::Rate(_) => true,
            LinkEventKind::Up | LinkEventKind::Ber(_) => fidelity == Fidelity::Packet,
        }
    }
}

/// A timed change of one directed link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkEvent {
    /// When, picoseconds of simulated time from the start of the run.
    pub at: SimTime,
    /// Which directed link (`Down` and `Up` take its reverse too).
    pub link: LinkId,
    /// What happens.
    pub kind: LinkEventKind,
}
