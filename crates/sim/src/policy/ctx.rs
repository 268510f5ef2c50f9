//! What a policy sees when it is asked for a decision (Cao et al. section 2.1: the cache and
//! its fetches in flight, the time, the program's position in its reference string, and for
//! offline policies the future), given by the loop at each call of [`super::AtIdle`].

use crate::cache::{Block, CacheView, Interner};
use crate::future::{Oracle, Pos};
use crate::time::Time;

/// What a policy sees when it is asked for a decision.
pub struct Ctx<'a> {
    cache: CacheView<'a>,
    oracle: Option<&'a Oracle<'a>>,
    ids: &'a mut Interner,
    now: Time,
    cursor: Pos,
    pinned: Option<Block>,
}

impl<'a> Ctx<'a> {
    /// What the loop shows the policy now.
    pub(crate) fn new(
        cache: CacheView<'a>,
        oracle: Option<&'a Oracle<'a>>,
        ids: &'a mut Interner,
        (now, cursor): (Time, Pos),
        pinned: Option<Block>,
    ) -> Self {
        Ctx {
            cache,
            oracle,
            ids,
            now,
            cursor,
            pinned,
        }
    }

    /// The cache: where each block is, its free slots, its unreferenced prefetches.
    pub fn cache(&self) -> CacheView<'a> {
        self.cache
    }

    /// The current time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Position of the next reference to be served (references before it are done).
    pub fn cursor(&self) -> Pos {
        self.cursor
    }

    /// The block the program is about to reference, which a prefetch must not evict; `None`
    /// when the decision is made in the middle of a reference.
    pub fn pinned(&self) -> Option<Block> {
        self.pinned
    }

    /// The future, for policies registered with `needs_future`.
    ///
    /// # Panics
    /// If the policy was registered without `needs_future` (a programming error: the runner
    /// loads the future for every policy that declares it).
    pub fn oracle(&self) -> &Oracle<'_> {
        self.oracle
            .expect("policy uses the future but is registered without needs_future")
    }

    /// The dense id of trace block number `raw` (given a new id if never seen).
    pub fn block_of(&mut self, raw: u64) -> Block {
        self.ids.intern(raw)
    }

    /// The trace block number of `block`.
    pub fn raw_of(&self, block: Block) -> u64 {
        self.ids.raw(block)
    }
}
