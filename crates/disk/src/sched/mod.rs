//! Request schedulers, one per module, all behind [`crate::Scheduler`]; registered in
//! [`from_name`]. [`SortedQueue`] is the address-ordered queue the seek-aware ones share;
//! [`Sorted`] is the scheduler core of those that only choose from it by the head position
//! (C-LOOK, SSTF), each supplying a [`SeekOrder`].

pub mod clook;
pub mod deadline;
pub mod fifo;
mod sorted;
pub mod sstf;

pub use clook::CLook;
pub use deadline::Deadline;
pub use fifo::Fifo;
pub use sorted::{SeekOrder, Sorted, SortedKey, SortedQueue};
pub use sstf::Sstf;

use crate::{Error, Scheduler};
use std::time::Duration;

/// Builds a scheduler from its name: `fifo`, `clook`, `sstf`, `deadline` or `deadline:EXPIRE_MS`.
pub fn from_name(name: &str) -> Result<Box<dyn Scheduler>, Error> {
    match name {
        "fifo" => Ok(Box::new(Fifo::default())),
        "clook" | "c-look" => Ok(Box::new(CLook::default())),
        "sstf" => Ok(Box::new(Sstf::default())),
        "deadline" => Ok(Box::new(Deadline::default())),
        _ => match name.strip_prefix("deadline:") {
            Some(ms) => Ok(Box::new(Deadline::new(
                parse_expire(name, ms)?,
                deadline::FIFO_BATCH,
            ))),
            None => Err(Error::UnknownScheduler(name.to_string())),
        },
    }
}

fn parse_expire(name: &str, ms: &str) -> Result<Duration, Error> {
    let bad = |reason: &str| Error::BadParameter {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let ms: f64 = ms.parse().map_err(|_| bad("expiry is not a number"))?;
    if !(0.0..1e9).contains(&ms) {
        return Err(bad("expiry must be between 0 and 1e9 ms"));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Request;

    /// A request with id `id` at address `addr` KiB arriving at `arrival_ms`.
    pub fn req(id: u64, addr_kib: u64, arrival_ms: u64) -> Request {
        Request {
            id,
            addr: addr_kib * 1024,
            len: 4096,
            arrival: Duration::from_millis(arrival_ms),
        }
    }

    /// Pushes `reqs`, then pops them all with the head following each request's end, and
    /// returns the ids in service order.
    pub fn drain(sched: &mut dyn Scheduler, reqs: &[Request], start_head: u64) -> Vec<u64> {
        for r in reqs {
            sched.push(r.clone());
        }
        let mut head = start_head;
        let mut order = Vec::new();
        while let Some(r) = sched.pop(head, Duration::ZERO) {
            head = r.end();
            order.push(r.id);
        }
        order
    }

    #[test]
    fn names_build_schedulers_and_bad_names_are_errors() {
        for name in ["fifo", "clook", "sstf", "deadline", "deadline:50"] {
            assert!(from_name(name).is_ok(), "{name}");
        }
        assert!(matches!(from_name("noop"), Err(Error::UnknownScheduler(_))));
        assert!(matches!(
            from_name("deadline:-3"),
            Err(Error::BadParameter { .. })
        ));
    }
}
