//! SSTF (shortest seek time first): serve the queued request nearest the head, measured in
//! bytes of address distance; ties go forward.
//! Deviations: distance in addresses, not in modelled seek time (the usual approximation).

use crate::sched::SortedQueue;
use crate::{Request, Scheduler};
use std::time::Duration;

/// Nearest request first.
#[derive(Debug, Default)]
pub struct Sstf {
    queue: SortedQueue,
}

impl Scheduler for Sstf {
    fn push(&mut self, req: Request) {
        self.queue.insert(req);
    }

    fn pop(&mut self, head: u64, _now: Duration) -> Option<Request> {
        let ahead = self.queue.at_or_after(head);
        let behind = self.queue.before(head);
        let key = match (ahead, behind) {
            (Some(a), Some(b)) if head - b.0 < a.0 - head => b,
            (Some(a), _) => a,
            (None, b) => b?,
        };
        self.queue.remove(key)
    }

    fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::tests::{drain, req};

    /// Head at 400 KiB; after each request the head sits at its end (addr + 4 KiB).
    #[test]
    fn serves_nearest_first() {
        let reqs = [
            req(1, 900, 0),
            req(2, 350, 0),
            req(3, 460, 0),
            req(4, 100, 0),
        ];
        // head 400: 350 is 50 behind, 460 is 60 ahead -> 2; head 354: 460 (106) vs 100 (254)
        // -> 3; head 464: 900 (436) vs 100 (364) -> 4; then 1.
        assert_eq!(drain(&mut Sstf::default(), &reqs, 400 * 1024), [2, 3, 4, 1]);
    }

    #[test]
    fn ties_go_forward() {
        let reqs = [req(1, 300, 0), req(2, 500, 0)];
        assert_eq!(drain(&mut Sstf::default(), &reqs, 400 * 1024), [2, 1]);
    }
}
