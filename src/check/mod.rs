//! Measured numbers in: hold nccl-tests output against the simulated fabric
//! (`fabricsim check`) and fit scenario parameters to it (`fabricsim calibrate`).
//!
//! - [`nccltests`]: the parser of nccl-tests text and `-J` JSON output.
//! - [`cluster`]: the scenario a command-line run starts from (`--scenario FILE` or
//!   `--preset P --nodes N`), shared with `fabricsim collective`.
//! - [`compare`]: simulate the measured sizes and lay both side by side.
//! - [`calibrate`]: least squares on log time over chosen scenario keys.

pub mod calibrate;
pub mod cluster;
pub mod compare;
pub mod nccltests;
