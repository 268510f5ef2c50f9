//! The probability-graph prefetcher (PG) of libCacheSim (`prefetch/PG.c`, after Griffioen and
//! Appleton's probability graph, USENIX Summer'94): a graph whose node for block A
//! counts, for every block B referenced within the `lookahead-range` references after A, how
//! often B followed A. On a reference to A it prefetches every B whose count over A's total is
//! above `prefetch-threshold`. Timed here and free to pair with any replacement
//! (`--policy lru+pg`).
//!
//! It mirrors PG.c step by step so that, paired with LRU, FIFO, CLOCK, SIEVE, LFU or LFU-DA
//! on the shipped traces, it misses and prefetches exactly as libCacheSim's PG
//! (`tests/libcachesim_prefetch.rs`, reference counts from `scripts/libcachesim_prefetch.py`):
//!
//! - one history of the last `lookahead-range` references for the whole trace (a ring); a
//!   reference overwrites the oldest slot, and the block that slot held (the reference
//!   `lookahead-range` ago) gains an arc to every block in the ring, walked in slot order up
//!   to the first empty slot, its total counting one per slot looked at;
//! - the metadata budget is `block-size` x the cache in blocks x `max-metadata-size` bytes,
//!   32 bytes per node and per arc; once a reference ends over it, no node or arc is added
//!   (existing arcs still count), and an arc that would be added ends that reference's update;
//! - each node's arcs sit in libCacheSim's binary heap (`dataStructure/pqueue.c`), copied
//!   here slot for slot: an arc's count grows *before* the heap re-sifts it, so it only ever
//!   sinks, and the prefetch list pops arcs while they pass the threshold, prefetches them in
//!   the reverse order of the pops, pushes them back in that order, and drops the first arc that
//!   fails from the heap for good (it keeps counting, and its stale slot is re-sifted).
//!
//! Options, libCacheSim's names and defaults: `lookahead-range` 20 (1 to 100), `block-size` 1,
//! `max-metadata-size` 0.1 and `prefetch-threshold` 0.05 (both strictly between 0 and 1). With
//! `block-size` 1 the budget is a tenth of a byte per cached block, so at the sizes of the
//! shipped traces no arc is ever kept and PG prefetches nothing, as in libCacheSim; give the
//! block size in bytes (`pg:block-size=4096`) for the budget of a byte-counted cache.
//!
//! Deviations: libCacheSim takes object id 0 for an empty history slot (a trace's object 0 is
//! never recorded); here every block is recorded. PG.c's test for an empty slot (the first
//! `lookahead-range` references) reads a label it never initialises, so what those references
//! record depends on the stack; here they record nothing, what PG.c means and what it does with
//! the label zeroed (the reference build zeroes it). A prefetch list never holds the block just
//! referenced (libCacheSim looks it up, finds it cached and skips it).

use rustc_hash::FxHashMap;

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::SimError;

/// Bytes PG.c charges for a node and for an arc.
const ENTRY_BYTES: u64 = 8 + 8 * 3;

/// One arc A -> B: B, how often it followed A, and its slot in A's heap.
#[derive(Clone, Copy, Debug)]
struct Arc {
    to: FileBlock,
    count: u64,
    pos: usize,
}

/// libCacheSim's `pqueue_t` of one node's arcs: a max-heap from slot 1, whose slots past
/// `size` keep what they last held (a dropped arc's stale slot is re-sifted there).
#[derive(Clone, Debug, Default)]
struct Heap {
    slots: Vec<usize>,
    size: usize,
}

/// A node: its arcs by target, their heap, and the slots looked at for it.
#[derive(Clone, Debug)]
struct Node {
    arcs: Vec<Arc>,
    by_target: FxHashMap<FileBlock, usize>,
    heap: Heap,
    total: u64,
}

impl Node {
    fn new() -> Node {
        Node {
            arcs: Vec::new(),
            by_target: FxHashMap::default(),
            heap: Heap {
                slots: vec![0],
                size: 1,
            },
            total: 0,
        }
    }

    fn count_at(&self, slot: usize) -> u64 {
        self.arcs[self.heap.slots[slot]].count
    }

    fn place(&mut self, slot: usize, arc: usize) {
        self.heap.slots[slot] = arc;
        self.arcs[arc].pos = slot;
    }

    /// pqueue.c's `bubble_up`.
    fn bubble_up(&mut self, mut slot: usize) {
        let moving = self.heap.slots[slot];
        let count = self.arcs[moving].count;
        while slot > 1 && self.count_at(slot / 2) < count {
            self.place(slot, self.heap.slots[slot / 2]);
            slot /= 2;
        }
        self.place(slot, moving);
    }

    /// pqueue.c's `maxchild`: 0 for none.
    fn max_child(&self, slot: usize) -> usize {
        let child = slot * 2;
        if child >= self.heap.size {
            return 0;
        }
        match child + 1 < self.heap.size && self.count_at(child) < self.count_at(child + 1) {
            true => child + 1,
            false => child,
        }
    }

    /// pqueue.c's `percolate_down`.
    fn percolate_down(&mut self, mut slot: usize) {
        let moving = self.heap.slots[slot];
        let count = self.arcs[moving].count;
        loop {
            let child = self.max_child(slot);
            if child == 0 || count >= self.count_at(child) {
                break;
            }
            self.place(slot, self.heap.slots[child]);
            slot = child;
        }
        self.place(slot, moving);
    }

    /// pqueue.c's `pqueue_insert`.
    fn push(&mut self, arc: usize) {
        let slot = self.heap.size;
        match slot < self.heap.slots.len() {
            true => self.heap.slots[slot] = arc,
            false => self.heap.slots.push(arc),
        }
        self.heap.size += 1;
        self.bubble_up(slot);
    }

    /// pqueue.c's `pqueue_pop`.
    fn pop(&mut self) -> Option<usize> {
        if self.heap.size == 1 {
            return None;
        }
        let head = self.heap.slots[1];
        self.heap.size -= 1;
        self.heap.slots[1] = self.heap.slots[self.heap.size];
        self.percolate_down(1);
        Some(head)
    }

    /// One more reference of `to` after this node; false if the arc is new and there is no room.
    fn count(&mut self, to: FileBlock, room: bool) -> Option<bool> {
        if let Some(&arc) = self.by_target.get(&to) {
            // PG.c raises the count, then `pqueue_change_priority` compares it with itself.
            self.arcs[arc].count += 1;
            self.percolate_down(self.arcs[arc].pos);
            return Some(false);
        }
        if !room {
            return None;
        }
        self.arcs.push(Arc {
            to,
            count: 1,
            pos: 0,
        });
        self.by_target.insert(to, self.arcs.len() - 1);
        self.push(self.arcs.len() - 1);
        Some(true)
    }

    /// PG.c's `_PG_get_prefetch_list`: the arcs over `threshold`, in prefetch order.
    fn prefetch_list(&mut self, threshold: f64) -> Vec<FileBlock> {
        let mut passed = Vec::new();
        while let Some(arc) = self.pop() {
            if self.arcs[arc].count as f64 / self.total as f64 <= threshold {
                break;
            }
            passed.push(arc);
        }
        passed.reverse();
        for &arc in &passed {
            self.push(arc);
        }
        passed.iter().map(|&arc| self.arcs[arc].to).collect()
    }
}

/// The PG prefetcher: the history ring, the graph and its metadata budget.
#[derive(Debug)]
pub struct Pg {
    options: Options,
    history: Vec<Option<FileBlock>>,
    next: usize,
    graph: FxHashMap<FileBlock, Node>,
    metadata: u64,
    budget: u64,
    full: bool,
}

impl Pg {
    fn new(options: Options, cache_blocks: usize) -> Pg {
        let bytes = u64::from(options.block_size) * cache_blocks as u64;
        Pg {
            history: vec![None; usize::from(options.lookahead)],
            next: 0,
            graph: FxHashMap::default(),
            metadata: 0,
            budget: (bytes as f64 * options.max_metadata) as u64,
            full: false,
            options,
        }
    }

    /// PG.c's `_PG_add_to_graph`: records `block` and the arcs of the block it replaces.
    fn record(&mut self, block: FileBlock) {
        let oldest = self.history[self.next].replace(block);
        self.next = (self.next + 1) % self.history.len();
        let Some(from) = oldest else { return };
        if !self.graph.contains_key(&from) {
            if self.full {
                return;
            }
            self.graph.insert(from, Node::new());
            self.metadata += ENTRY_BYTES;
        }
        let node = self.graph.get_mut(&from).expect("inserted above");
        for slot in &self.history {
            node.total += 1;
            let Some(to) = *slot else { break };
            match node.count(to, !self.full) {
                Some(true) => self.metadata += ENTRY_BYTES,
                Some(false) => {}
                None => return,
            }
        }
        if self.budget <= self.metadata {
            self.full = true;
        }
    }
}

impl Prefetcher for Pg {
    fn on_evict(&mut self, _block: FileBlock, _unused: bool) {}

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        self.record(access.block);
        let Some(node) = self.graph.get_mut(&access.block) else {
            return Vec::new();
        };
        node.prefetch_list(self.options.threshold)
            .into_iter()
            .filter(|&b| b != access.block)
            .map(|b| FetchRange {
                file: b.file,
                start: b.block,
                len: 1,
            })
            .collect()
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// PG's configuration, libCacheSim's parameters (module header).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// `lookahead-range`: references after a block that count as following it (1 to 100).
    pub lookahead: u8,
    /// `block-size`: bytes per cached block in the metadata budget.
    pub block_size: u32,
    /// `max-metadata-size`: the budget's share of the cache's bytes.
    pub max_metadata: f64,
    /// `prefetch-threshold`: the share of a node's total an arc must pass.
    pub threshold: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            lookahead: 20,
            block_size: 1,
            max_metadata: 0.1,
            threshold: 0.05,
        }
    }
}

/// `given`'s share `key` strictly between 0 and 1.
fn open_share(given: &PolicySpec, key: &str, default: f64) -> Result<f64, SimError> {
    let share = given.ratio(key, default)?;
    match share > 0.0 && share < 1.0 {
        true => Ok(share),
        false => Err(SimError::Config(format!(
            "PG's {key} is a share strictly between 0 and 1 (libCacheSim's default is {default})"
        ))),
    }
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&[
            "lookahead-range",
            "block-size",
            "max-metadata-size",
            "prefetch-threshold",
        ])?;
        let lookahead = match given.count("lookahead-range", 20)? {
            n @ 1..=100 => n as u8,
            _ => {
                return Err(SimError::Config(
                    "PG's lookahead-range is 1 to 100 references (libCacheSim's default is 20)"
                        .into(),
                ))
            }
        };
        let block_size = match u32::try_from(given.count("block-size", 1)?) {
            Ok(b) if b >= 1 => b,
            _ => {
                return Err(SimError::Config(
                    "PG's block-size is the bytes of a cached block: give 1 to 4294967295 \
                     (libCacheSim's default is 1)"
                        .into(),
                ))
            }
        };
        Ok(Options {
            lookahead,
            block_size,
            max_metadata: open_share(given, "max-metadata-size", 0.1)?,
            threshold: open_share(given, "prefetch-threshold", 0.05)?,
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        Ok(Box::new(Pg::new(*self, setup.cache_blocks)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(lookahead: u8, cache_blocks: usize) -> Pg {
        let options = Options {
            lookahead,
            block_size: 4096,
            ..Options::default()
        };
        Pg::new(options, cache_blocks)
    }

    fn starts(ranges: Vec<FetchRange>) -> Vec<u64> {
        ranges.into_iter().map(|r| r.start).collect()
    }

    /// With a range of 2, block 1 of `1 2 3` gains arcs to 3 (slot 0) and 2 (slot 1). Its
    /// next reference pops 3 then 2 (equal counts: heap order) and prefetches them in reverse,
    /// 2 and 3, pushing them back so that 2 tops the heap; the one after pops 2 first.
    #[test]
    fn a_block_prefetches_what_followed_it() {
        let mut pg = pg(2, 100);
        let asked: Vec<Vec<u64>> = [1, 2, 3, 1, 2, 3, 1]
            .into_iter()
            .map(|b| starts(pg.on_access(&Access::miss(b))))
            .collect();
        let node = &pg.graph[&FileBlock { file: 0, block: 1 }];
        assert_eq!(
            node.total, 4,
            "two references of 1 recorded, two slots each"
        );
        assert!(asked[..3].iter().all(Vec::is_empty));
        assert_eq!(asked[3], [2, 3]);
        assert_eq!(asked[6], [3, 2]);
    }

    /// The budget: 4096 x 1 block x 0.1 = 409 bytes. Nodes 1 and 2 with 5 arcs each take 384;
    /// the reference that records node 3 ends at 576, over it, and closes the graph.
    #[test]
    fn the_metadata_budget_stops_recording() {
        let mut pg = pg(5, 1);
        for b in 1..=40 {
            pg.on_access(&Access::miss(b));
        }
        assert!(pg.full);
        assert_eq!(pg.graph.len(), 3, "nodes 1, 2 and 3, then full");
        assert_eq!(pg.metadata, 18 * ENTRY_BYTES);
    }

    /// An arc's count grows before it is re-sifted, so a grown arc below the top stays there:
    /// the heap pops by slot, not by count, as libCacheSim's does.
    #[test]
    fn grown_arcs_only_sink() {
        let mut node = Node::new();
        for b in [1, 2, 3] {
            node.count(FileBlock { file: 0, block: b }, true);
        }
        node.count(FileBlock { file: 0, block: 3 }, true);
        node.total = 4;
        let popped: Vec<usize> = std::iter::from_fn(|| node.pop()).collect();
        let popped: Vec<u64> = popped.iter().map(|&a| node.arcs[a].to.block).collect();
        assert_eq!(
            popped,
            [1, 3, 2],
            "3 (count 2) is not lifted above 1 (count 1)"
        );
    }

    #[test]
    fn options_are_libcachesims() {
        let parse = |text: &str| Options::parse(&PolicySpec::parse(text).unwrap());
        assert_eq!(parse("pg").unwrap(), Options::default());
        let given = parse("pg:lookahead-range=5,block-size=4096,prefetch-threshold=0.2").unwrap();
        assert_eq!((given.lookahead, given.block_size), (5, 4096));
        assert_eq!(given.threshold, 0.2);
        for (text, says) in [
            ("pg:lookahead-range=0", "1 to 100"),
            ("pg:lookahead-range=101", "1 to 100"),
            ("pg:block-size=0", "bytes of a cached block"),
            ("pg:max-metadata-size=1", "strictly between"),
            ("pg:prefetch-threshold=0", "strictly between"),
            ("pg:depth=3", "unknown option"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
