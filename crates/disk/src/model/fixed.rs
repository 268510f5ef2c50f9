//! Constant fetch time: every request costs the same whatever its size or position.
//!
//! This is the cost model of DULO (FAST'05) Table 1 (9.5 ms per disk request, one block or
//! four) and of Cao et al.'s simplified model (fetch time F).
//! The head is reported at the end of the last request so that schedulers
//! still have a position to order by.

use crate::{DiskModel, Request};
use std::time::Duration;

/// A device whose every request takes `cost`.
#[derive(Clone, Debug)]
pub struct Fixed {
    cost: Duration,
    capacity: u64,
    head: u64,
}

impl Fixed {
    /// A device of `capacity` bytes serving every request in `cost`.
    pub fn new(cost: Duration, capacity: u64) -> Self {
        Fixed {
            cost,
            capacity,
            head: 0,
        }
    }
}

impl DiskModel for Fixed {
    fn service(&mut self, _now: Duration, req: &Request) -> Duration {
        self.head = req.end().min(self.capacity);
        self.cost
    }

    fn head(&self) -> u64 {
        self.head
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::req;

    /// DULO Table 1: a one-block and a four-block request both cost 9.5 ms.
    #[test]
    fn every_request_costs_the_same() {
        let mut disk = Fixed::new(Duration::from_micros(9500), 1 << 30);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        assert_eq!(ms(disk.service(Duration::ZERO, &req(0, 4096))), 9.5);
        assert_eq!(
            ms(disk.service(Duration::ZERO, &req(1 << 20, 4 * 4096))),
            9.5
        );
        assert_eq!(disk.head(), (1 << 20) + 4 * 4096);
    }
}
