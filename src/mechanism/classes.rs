//! Traffic classes (`[[fabric.classes]]`): how a port's virtual lanes are
//! scheduled and admitted when a scenario names classes, as switches run
//! IEEE 802.1Qaz ETS: strict-priority classes first (higher `priority`
//! first), deficit weighted round robin (Shreedhar & Varghese, SIGCOMM 1995 /
//! ToN 1996) among the weighted classes of one priority level; each class
//! lossless under PFC or lossy, with its own ECN thresholds. Class `i` rides
//! virtual lane `i`. The scenario (`config`) builds and checks these; the
//! packet backend runs them.

use super::cc::Ecn;

/// One traffic class.
#[derive(Clone, Debug, PartialEq)]
pub struct TrafficClass {
    /// Its unique name (what flows and workloads refer to).
    pub name: String,
    /// Strict-priority level, higher served first; classes of one level
    /// share it by their weights.
    pub priority: u8,
    /// DWRR weight among the classes of its priority level (quantum =
    /// weight × one full packet's wire bytes), or `None` for a strict class
    /// (alone on its level).
    pub weight: Option<u32>,
    /// Lossless under a PFC fabric (pauses its sender); a lossy class drops
    /// at its buffer limit instead. No effect on credit or lossy fabrics.
    pub lossless: bool,
    /// ECN thresholds of this class's queues, overriding the fabric's
    /// (`None`: the fabric's).
    pub ecn: Option<Ecn>,
}

/// The classes of a fabric and which traffic rides which.
#[derive(Clone, Debug, PartialEq)]
pub struct TrafficClasses {
    /// Class `i` is virtual lane `i`; at most the fabric's lane count.
    pub classes: Vec<TrafficClass>,
    /// The class of a workload's transfers that do not name one
    /// (`workload.class`; default the first).
    pub data: u8,
    /// Class of ACKs and NACKs, or `None` for the highest lane (as without classes).
    pub ack: Option<u8>,
    /// Class of CNPs, or `None` for the highest lane (as without classes).
    pub cnp: Option<u8>,
}

/// Largest DWRR weight of a class: quanta stay far below `u32` bytes.
pub const MAX_CLASS_WEIGHT: u32 = 1000;

/// Largest strict-priority level of a class (levels above are the unclassed
/// lanes', which keep their strict order above every class).
pub const MAX_CLASS_PRIORITY: u8 = 7;
