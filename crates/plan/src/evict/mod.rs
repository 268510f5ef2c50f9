//! Replacement orders for a cache of blocks: which cached block leaves next. The simulator's
//! `dulo` replacement and the live page-cache budget (`libprefetch`'s `cache_budget.rs`) both
//! call these, so what `prefetch sim --policy dulo` predicts is what the budget evicts.
//!
//! - [`dulo`]: DULO over CLOCK (Jiang et al., FAST'05, sections 3-4): long sequences of
//!   disk-adjacent blocks leave first, random blocks stay.
//! - [`clock`]: CLOCK as DULO's Figure 2 builds on it (the base DULO degenerates to).
//! - [`lru`]: strict LRU.
//! - [`drop_behind`]: blocks that continue a sequential run leave first, oldest first; the
//!   others by CLOCK.
//! - [`partly_read`]: the planner's held pages a read covered only in part, left to the kernel,
//!   not dropped, on lists whose edge pages other processes read too (`PF_SHARED_EDGES`).
//! - [`budget`]: a set of cached blocks kept within a capacity by one of the orders above.
//!
//! A block is a `u64` whose neighbours on disk are the numbers one apart (a disk block, or a
//! file's page index under a per-file prefix).

pub mod budget;
pub mod clock;
pub mod drop_behind;
pub mod dulo;
mod eviction;
pub mod lru;
pub mod partly_read;

pub use eviction::{Block, Eviction};

/// The orders the live budget offers, by name: `dulo`, `lru`, `clock`, `drop-behind`.
pub const POLICIES: [&str; 4] = ["dulo", "lru", "clock", "drop-behind"];

/// The order named `name` for a cache of `capacity` blocks of `block_size` bytes (DULO's bank
/// and evicting section take their default byte sizes, [`dulo::BANK_BYTES`] and
/// [`dulo::EVICTING_BYTES`]), or `None` for an unknown name.
pub fn by_name(name: &str, capacity: usize, block_size: u64) -> Option<Box<dyn Eviction>> {
    let blocks = |bytes: u64| usize::try_from(bytes / block_size.max(1)).unwrap_or(usize::MAX);
    Some(match name {
        "dulo" => Box::new(dulo::Dulo::new(
            capacity,
            blocks(dulo::BANK_BYTES),
            blocks(dulo::EVICTING_BYTES),
        )),
        "lru" => Box::new(lru::Lru::default()),
        "clock" => Box::new(clock::Clock::default()),
        "drop-behind" => Box::new(drop_behind::DropBehind::default()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_builds_and_others_do_not() {
        for name in POLICIES {
            let mut order = by_name(name, 4, 4096).unwrap();
            order.insert(7, true);
            assert_eq!(order.evict(), Some(7), "{name}");
        }
        assert!(by_name("arc", 4, 4096).is_none());
    }
}
