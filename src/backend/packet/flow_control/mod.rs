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
