//! SSTF (shortest seek time first): serve the queued request nearest the head, measured in
//! bytes of address distance; ties go forward.
//! Deviations: distance in addresses, not in modelled seek time (the usual approximation).

use crate::sched::{SeekOrder, Sorted, SortedKey, SortedQueue};

/// Nearest request first.
pub type Sstf = Sorted<SstfOrder>;

/// SSTF's choice: the nearer of the requests on either side of the head, the one ahead on a tie.
#[derive(Debug)]
pub struct SstfOrder;

impl SeekOrder for SstfOrder {
    fn pick(queue: &SortedQueue, head: u64) -> Option<SortedKey> {
        match (queue.at_or_after(head), queue.before(head)) {
            (Some(a), Some(b)) if head - b.0 < a.0 - head => Some(b),
            (Some(a), _) => Some(a),
            (None, b) => b,
        }
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
