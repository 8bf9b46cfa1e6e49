//! No congestion control ([`CongestionControl::None`](crate::mechanism::CongestionControl::None)):
//! the queue pair sends at line rate within its configured window; ECN marks,
//! if any, are ignored.

use super::{CcLaw, QpStart};

/// State of a queue pair without congestion control: none.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCc;

impl CcLaw for NoCc {
    type Params = ();

    fn new(_p: &(), _start: &QpStart) -> Self {
        NoCc
    }
}
