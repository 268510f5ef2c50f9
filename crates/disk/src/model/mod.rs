//! The disk models, one per module: a seek-bound HDD, an SSD with parallel channels, and a
//! constant fetch time.

pub mod fixed;
pub mod hdd;
pub mod ssd;

pub use fixed::Fixed;
pub use hdd::{Hdd, HddParams, ReadAhead};
pub use ssd::{Ssd, SsdParams};
