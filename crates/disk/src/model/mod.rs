//! The disk models, one per module: a seek-bound HDD, an SSD with parallel channels, and a
//! constant fetch time.

pub mod fixed;
pub mod ssd;

pub use fixed::Fixed;
pub use ssd::{Ssd, SsdParams};
