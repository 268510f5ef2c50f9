//! Sequential one-block lookahead (OBL), Cao et al. section 4.1 after Smith (its reference 22):
//! prefetch block K+2 of a file whenever the last two references to that file were K and K+1.
//!
//! The pair is seen when the program *requests* K+1 (`AtIdle::on_request`), so the prefetch of
//! K+2 overlaps the reference to K+1 (it starts as soon as K+1 is available and the disk is
//! free), as a file system's read-ahead does. Watching served references instead would arm the
//! prefetch only when the program already wants K+2, turning it into a demand fetch.
//!
//! Deviations: the reference traces carry no file names; a trace block number encodes its file
//! in its top bits (`trace::FILE_SHIFT`), and traces without files are one file. The trigger is
//! remembered until a fetch slot is free; a newer trigger replaces an older one, and a trigger whose
//! block got cached meanwhile is dropped.

use rustc_hash::FxHashMap;

use crate::cache::{Block, Interner};
use crate::policy::compose::{fetch_into, Order, Prefetch};
use crate::policy::Ctx;
use crate::policy::Fetch;
use crate::trace::FILE_SHIFT;

/// The last block referenced in each file: whether a reference continues its file's run
/// (K after K-1). Shared by Cao's OBL here and the disk-timed OBL prefetcher
/// ([`crate::disksim::prefetch::obl`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct LastBlock {
    /// The file referenced last and its last block (most references stay in one file, so they
    /// need no hashing).
    current: Option<(u64, u64)>,
    /// The last block of every other file.
    others: FxHashMap<u64, u64>,
}

impl LastBlock {
    /// Records `block` as the last block of `file`; returns the one before it.
    fn replace_last(&mut self, file: u64, block: u64) -> Option<u64> {
        let previous = match self.current {
            Some((current, last)) if current == file => Some(last),
            other => {
                if let Some((current, last)) = other {
                    self.others.insert(current, last);
                }
                self.others.remove(&file)
            }
        };
        self.current = Some((file, block));
        previous
    }

    /// Records a reference to `block` of `file`; true if the file's last block was the one
    /// before it (OBL's trigger: K, K+1 seen, so K+2 is next).
    pub(crate) fn continues(&mut self, file: u64, block: u64) -> bool {
        self.replace_last(file, block) == Some(block.wrapping_sub(1))
    }
}

/// Detects K, K+1 pairs per file and remembers the block to prefetch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Obl {
    last: LastBlock,
    pending: Option<Block>,
}

impl Obl {
    /// Notes a request for `block`; arms a prefetch of K+2 after K, K+1.
    pub(crate) fn observe(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        let raw = ctx.raw_of(block);
        let next = raw.wrapping_add(1);
        if self.last.continues(raw >> FILE_SHIFT, raw) && next >> FILE_SHIFT == raw >> FILE_SHIFT {
            self.pending = Some(ctx.block_of(next));
        }
    }

    /// The armed block, if it still needs fetching.
    pub(crate) fn take(&mut self, ctx: &Ctx<'_>) -> Option<Block> {
        self.pending.take().filter(|&b| ctx.cache().is_absent(b))
    }
}

/// Prefetch the armed block, discarding the order's prefetch victim when the cache is full.
impl<O: Order> Prefetch<O> for Obl {
    fn on_request(&mut self, block: Block, ctx: &mut Ctx<'_>) {
        self.observe(block, ctx);
    }

    fn warm(&self, block: Block, ids: &Interner) {
        ids.warm_raw(block);
    }

    fn prefetch(&mut self, order: &mut O, ctx: &Ctx<'_>) -> Option<Fetch> {
        let block = self.take(ctx)?;
        fetch_into(block, ctx, || order.prefetch_victim(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_block_of_every_file() {
        let mut last = LastBlock::default();
        let seen: Vec<_> = [(0, 1), (1, 5), (0, 2), (1, 6), (1, 7), (2, 9), (0, 3)]
            .into_iter()
            .map(|(file, raw)| last.replace_last(file, raw))
            .collect();
        assert_eq!(seen, [None, None, Some(1), Some(5), Some(6), None, Some(2)]);
    }
}
