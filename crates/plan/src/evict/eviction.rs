//! The replacement-order trait every order of `evict` implements ([`Eviction`]) and the block
//! numbers it orders. Apart from the orders' catalog (`mod.rs`, [`super::by_name`]) so that the
//! orders import it without importing the catalog that builds them.

/// A block number: adjacent numbers are adjacent on disk.
pub type Block = u64;

/// A replacement order. The caller owns residency: it calls [`Eviction::insert`] only for a
/// block not cached, [`Eviction::hit`] only for a cached one, and [`Eviction::evict`] returns
/// a cached block and forgets it. Not thread-safe by itself (one owner drives it).
pub trait Eviction: Send {
    /// A cached block was referenced.
    fn hit(&mut self, block: Block);
    /// A block entered the cache; `young` if it was demanded (DULO's Figure 2 places a missed
    /// block at the top "as a young block"), not if it was prefetched.
    fn insert(&mut self, block: Block, young: bool);
    /// The cached `blocks` were referenced, in order (one step where the order can take one).
    fn hit_range(&mut self, blocks: std::ops::Range<Block>) {
        for block in blocks {
            self.hit(block);
        }
    }
    /// The `blocks`, none cached, entered the cache in order, as [`Eviction::insert`] each.
    fn insert_range(&mut self, blocks: std::ops::Range<Block>, young: bool) {
        for block in blocks {
            self.insert(block, young);
        }
    }
    /// Chooses a victim, forgets it and returns it; `None` only if nothing is cached.
    fn evict(&mut self) -> Option<Block>;
    /// The cached blocks from the most to the least protected end, for tests and traces.
    fn order(&self) -> Vec<Block>;
}
