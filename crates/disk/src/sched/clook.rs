//! C-LOOK (circular LOOK): serve requests in increasing address order from the head; when none
//! is left past the head, jump back to the lowest queued address and sweep forward again.
//! libprefetch paper s3.1: forward seeks are cheaper than backward ones, hence C-LOOK.

use crate::sched::{SeekOrder, Sorted, SortedKey, SortedQueue};

/// One-directional elevator with wrap-around.
pub type CLook = Sorted<CLookOrder>;

/// C-LOOK's choice: the first request at or after the head, else the lowest address.
#[derive(Debug)]
pub struct CLookOrder;

impl SeekOrder for CLookOrder {
    fn pick(queue: &SortedQueue, head: u64) -> Option<SortedKey> {
        queue.at_or_after(head).or_else(|| queue.lowest())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::tests::{drain, req};

    /// Head at 400 KiB: 500, 900, then wrap to 100, 300.
    #[test]
    fn sweeps_forward_then_wraps_to_lowest() {
        let reqs = [
            req(1, 900, 0),
            req(2, 100, 0),
            req(3, 500, 0),
            req(4, 300, 0),
        ];
        assert_eq!(
            drain(&mut CLook::default(), &reqs, 400 * 1024),
            [3, 1, 2, 4]
        );
    }

    #[test]
    fn equal_addresses_leave_in_arrival_order() {
        let reqs = [req(7, 100, 0), req(5, 100, 0), req(6, 50, 0)];
        assert_eq!(drain(&mut CLook::default(), &reqs, 0), [6, 7, 5]);
    }
}
