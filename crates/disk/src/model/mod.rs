//! The disk models, one per module: a seek-bound HDD, an SSD with parallel channels, and a
//! constant fetch time.

pub mod fixed;
pub mod hdd;
pub mod ssd;

pub use fixed::Fixed;
pub use hdd::{Hdd, HddParams, ReadAhead};
pub use ssd::{Ssd, SsdParams};

#[cfg(test)]
pub(crate) mod tests {
    use crate::Request;
    use std::time::Duration;

    /// A request of `len` bytes at byte `addr`, queued at time zero.
    pub fn req(addr: u64, len: u64) -> Request {
        Request {
            id: 0,
            addr,
            len,
            arrival: Duration::ZERO,
        }
    }
}
