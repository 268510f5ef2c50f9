//! FIFO: requests leave in arrival (push) order, ignoring the head.
//! The order the libprefetch paper's "stock" runs see when the queue holds one request.

use crate::{Request, Scheduler};
use std::collections::VecDeque;
use std::time::Duration;

/// First in, first out.
#[derive(Debug, Default)]
pub struct Fifo {
    queue: VecDeque<Request>,
}

impl Scheduler for Fifo {
    fn push(&mut self, req: Request) {
        self.queue.push_back(req);
    }

    fn pop(&mut self, _head: u64, _now: Duration) -> Option<Request> {
        self.queue.pop_front()
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::tests::{drain, req};

    #[test]
    fn serves_in_push_order() {
        let reqs = [req(1, 900, 0), req(2, 100, 0), req(3, 500, 0)];
        assert_eq!(drain(&mut Fifo::default(), &reqs, 400 * 1024), [1, 2, 3]);
    }
}
