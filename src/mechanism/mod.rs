//! Mechanism parameters shared by the scenario (`config`) and the backends:
//! what a user chooses (a congestion-control law and its constants, ECN
//! thresholds, the flow control of network links), without the machinery that
//! runs it. `config` builds and validates these types; `backend::packet`
//! re-exports them and owns the state machines, so neither layer imports the
//! other for them.

pub mod cc;
pub mod classes;
pub mod defaults;
pub mod flow_control;
pub mod recovery;

pub use cc::{
    alpha_in_range, gain_in_range, pmax_in_range, CongestionControl, DcqcnParams, DcqcnProfile,
    Ecn, EcnMarkAt, HpccParams, IbCcParams, MinRtt, SwiftParams, TimelyParams, TimelyUpdate,
};
pub use classes::{TrafficClass, TrafficClasses, MAX_CLASS_PRIORITY, MAX_CLASS_WEIGHT};
pub use flow_control::{
    pfc_fits_buffer, pfc_headroom_needed, FlowControl, PfcThreshold, PFC_FRAME_WIRE_BYTES,
};
pub use recovery::LossRecovery;
