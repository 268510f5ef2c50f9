//! Every request scheduler the engine runs, by name: the stream-aware ones of this crate (one
//! line each in [`IO_SCHEDULERS`]) and, through [`Plain`], the `disk` crate's (FIFO, C-LOOK,
//! SSTF, deadline).

use super::anticipatory;
use super::iosched::{IoScheduler, Plain};

/// Builds a stream-aware scheduler from its name (see [`IO_SCHEDULERS`]), or wraps the `disk`
/// crate's scheduler of that name.
pub fn io_scheduler_from_name(name: &str) -> Result<Box<dyn IoScheduler>, disk::Error> {
    match IO_SCHEDULERS
        .iter()
        .find(|(n, _)| name.split(':').next() == Some(n))
    {
        Some((_, build)) => build(name),
        None => Ok(Box::new(Plain(disk::scheduler_from_name(name)?))),
    }
}

/// Builds an engine-aware scheduler from its full name (with parameters).
pub type IoSchedulerCtor = fn(&str) -> Result<Box<dyn IoScheduler>, disk::Error>;

/// Schedulers that need to know streams (one line each); the `disk` crate's are reached
/// through [`Plain`].
pub const IO_SCHEDULERS: &[(&str, IoSchedulerCtor)] = &[("anticipatory", anticipatory::build)];
