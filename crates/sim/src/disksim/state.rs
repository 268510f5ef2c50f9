//! The disk-timed loop's per-block state and its event queue, built for speed on one stream:
//! the cache's entries in a vector indexed by disk block when the disk's blocks are few next
//! to the workload (or numbered densely, as Cao's adapter numbers them), and events in a
//! binary heap fronted by one slot holding the earliest, so a stream that pushes its next
//! wake-up and pops it at once (one stream, or the stream due first) never touches the heap.
//!
//! Neither changes what the loop computes: a table answers as a hash map would, and the queue
//! pops events in exactly the heap's order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZeroU64;
use std::time::Duration;

use rustc_hash::FxHashMap;

use super::workload::{DiskBlock, FileBlock, Layout};
use crate::cache::{Block, CacheState, Residency};

/// Most table slots a run may allocate per reference of its workload (plus its cache): a
/// vector past that would cost more memory than the workload itself, so a hash map holds it.
const SLOTS_PER_REFERENCE: u64 = 4;
/// Most slots of a vector table at all (16 M blocks: 64 GiB of 4 KiB blocks).
const MOST_SLOTS: u64 = 1 << 24;

/// Values by disk block: a vector over the whole disk, or a hash map for a disk too large.
pub(super) enum BlockTable<V> {
    /// Slot `b` holds block `b`'s value; `len` counts the occupied slots.
    Dense { slots: Vec<Option<V>>, len: usize },
    /// Only the blocks present.
    Sparse(FxHashMap<DiskBlock, V>),
}

impl<V> BlockTable<V> {
    /// A table for the disk blocks of `layout`, read by `references` references with a cache
    /// of `cache_blocks`.
    pub(super) fn for_layout(
        layout: &Layout,
        references: u64,
        cache_blocks: usize,
    ) -> BlockTable<V> {
        let end = layout
            .files
            .iter()
            .map(|e| e.start.saturating_add(e.blocks))
            .max()
            .unwrap_or(0);
        let budget = references
            .saturating_add(cache_blocks as u64)
            .saturating_mul(SLOTS_PER_REFERENCE)
            .min(MOST_SLOTS);
        match end <= budget {
            true => BlockTable::Dense {
                slots: std::iter::repeat_with(|| None).take(end as usize).collect(),
                len: 0,
            },
            false => BlockTable::Sparse(FxHashMap::default()),
        }
    }

    /// A vector that grows to the largest block inserted, for blocks numbered densely from 0
    /// (Cao's adapter numbers them in order of first sight, so no block is far past the others).
    pub(super) fn growing() -> BlockTable<V> {
        BlockTable::Dense {
            slots: Vec::new(),
            len: 0,
        }
    }

    /// Blocks present.
    pub(super) fn len(&self) -> usize {
        match self {
            BlockTable::Dense { len, .. } => *len,
            BlockTable::Sparse(map) => map.len(),
        }
    }

    pub(super) fn get(&self, block: DiskBlock) -> Option<&V> {
        match self {
            BlockTable::Dense { slots, .. } => slots.get(block as usize)?.as_ref(),
            BlockTable::Sparse(map) => map.get(&block),
        }
    }

    pub(super) fn get_mut(&mut self, block: DiskBlock) -> Option<&mut V> {
        match self {
            BlockTable::Dense { slots, .. } => slots.get_mut(block as usize)?.as_mut(),
            BlockTable::Sparse(map) => map.get_mut(&block),
        }
    }

    pub(super) fn contains(&self, block: DiskBlock) -> bool {
        self.get(block).is_some()
    }

    /// Asks the processor to bring `block`'s slot into its cache (a reference a few steps
    /// ahead: the table's random reads are the loop's largest cost on a large disk).
    pub(super) fn warm(&self, block: DiskBlock) {
        if let BlockTable::Dense { slots, .. } = self {
            crate::cache::warm(slots, block as usize);
        }
    }

    /// Sets `block`'s value (a block of the layout: the engine checks it before); a vector
    /// grows to hold it.
    pub(super) fn insert(&mut self, block: DiskBlock, value: V) {
        match self {
            BlockTable::Dense { slots, len } => {
                let index = block as usize;
                if index >= slots.len() {
                    let size = (index + 1).next_power_of_two();
                    slots.resize_with(size, || None);
                }
                let slot = &mut slots[index];
                *len += usize::from(slot.is_none());
                *slot = Some(value);
            }
            BlockTable::Sparse(map) => {
                map.insert(block, value);
            }
        }
    }

    pub(super) fn remove(&mut self, block: DiskBlock) -> Option<V> {
        match self {
            BlockTable::Dense { slots, len } => {
                let value = slots.get_mut(block as usize)?.take();
                *len -= usize::from(value.is_some());
                value
            }
            BlockTable::Sparse(map) => map.remove(&block),
        }
    }
}

/// A cached block, in one word so that the table of a large disk stays small (a table of
/// a million blocks fits a processor's last-level cache): the request bringing it in while in
/// flight, whether it was prefetched and not referenced yet, and whether a prefetcher dropped
/// it while in flight (it is removed when it arrives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry(NonZeroU64);

/// The bit every entry has set (so an absent slot costs no more than a present one).
const PRESENT_WORD: NonZeroU64 = NonZeroU64::MIN;
const UNUSED_PREFETCH: u64 = 2;
const DROP_ON_ARRIVAL: u64 = 4;
/// Bits below the request id plus one (0: arrived).
const FLAG_BITS: u32 = 3;

impl Entry {
    /// A block that has arrived and is not an unused prefetch.
    pub(super) fn arrived() -> Entry {
        Entry(PRESENT_WORD)
    }

    /// A block brought in by request `id` (ids count up from 0 a run, so never reach the
    /// 2^61 the word holds), `prefetched` or on demand.
    pub(super) fn in_flight(id: u64, prefetched: bool) -> Entry {
        let flags = if prefetched { UNUSED_PREFETCH } else { 0 };
        Entry(PRESENT_WORD | ((id + 1) << FLAG_BITS) | flags)
    }

    /// The request bringing it in, while in flight.
    pub(super) fn pending(self) -> Option<u64> {
        (self.0.get() >> FLAG_BITS).checked_sub(1)
    }

    /// Prefetched and not referenced yet.
    pub(super) fn unused_prefetch(self) -> bool {
        self.0.get() & UNUSED_PREFETCH != 0
    }

    /// To be removed when it arrives.
    pub(super) fn drop_on_arrival(self) -> bool {
        self.0.get() & DROP_ON_ARRIVAL != 0
    }

    /// It was referenced.
    pub(super) fn referenced(&mut self) {
        self.set(self.0.get() & !UNUSED_PREFETCH);
    }

    /// Its request completed.
    pub(super) fn arrive(&mut self) {
        self.set(self.0.get() & ((1 << FLAG_BITS) - 1));
    }

    /// Remove it when it arrives.
    pub(super) fn drop_when_arrived(&mut self) {
        self.set(self.0.get() | DROP_ON_ARRIVAL);
    }

    fn set(&mut self, word: u64) {
        self.0 = PRESENT_WORD | word;
    }
}

/// The loop's cache as a policy deciding for it reads it ([`crate::cache::CacheView`]): its
/// blocks, its free slots, its blocks prefetched and not referenced since.
pub(super) struct LoopCache<'c> {
    blocks: &'c BlockTable<Entry>,
    free_slots: usize,
    unreferenced_prefetches: usize,
}

impl<'c> LoopCache<'c> {
    /// The cache of `capacity` slots holding `blocks`, `unreferenced_prefetches` of them
    /// prefetched and not referenced since.
    pub(super) fn new(
        blocks: &'c BlockTable<Entry>,
        capacity: usize,
        unreferenced_prefetches: usize,
    ) -> LoopCache<'c> {
        LoopCache {
            blocks,
            free_slots: capacity.saturating_sub(blocks.len()),
            unreferenced_prefetches,
        }
    }
}

impl CacheState for LoopCache<'_> {
    /// Where disk block `block` is: absent, in flight (its request pending) or resident.
    fn residency(&self, block: Block) -> Residency {
        match self
            .blocks
            .get(u64::from(block))
            .map(|entry| entry.pending())
        {
            None => Residency::Absent,
            Some(Some(_)) => Residency::InFlight,
            Some(None) => Residency::Resident,
        }
    }

    fn free_slots(&self) -> usize {
        self.free_slots
    }

    fn unreferenced_prefetches(&self) -> usize {
        self.unreferenced_prefetches
    }

    fn is_unreferenced_prefetch(&self, block: Block) -> bool {
        self.blocks
            .get(u64::from(block))
            .is_some_and(|entry| entry.unused_prefetch())
    }
}

/// Which file a disk block belongs to, by binary search over the files sorted by start.
pub(super) struct FileIndex<'l> {
    layout: &'l Layout,
    /// Numbers of the files holding blocks, in order of their first disk block.
    by_start: Vec<u32>,
}

impl<'l> FileIndex<'l> {
    pub(super) fn new(layout: &'l Layout) -> FileIndex<'l> {
        let mut by_start: Vec<u32> = (0..layout.files.len() as u32)
            .filter(|&file| layout.files[file as usize].blocks > 0)
            .collect();
        by_start.sort_by_key(|&file| layout.files[file as usize].start);
        FileIndex { layout, by_start }
    }

    /// The file block at disk block `disk`, if a file lies there.
    pub(super) fn file_block(&self, disk: DiskBlock) -> Option<FileBlock> {
        let extent = |file: u32| self.layout.files[file as usize];
        let after = self
            .by_start
            .partition_point(|&file| extent(file).start <= disk);
        let file = *self.by_start.get(after.checked_sub(1)?)?;
        let block = disk - extent(file).start;
        (block < extent(file).blocks).then_some(FileBlock { file, block })
    }
}

/// An event: its time, its kind (the order at equal times) and whom it concerns.
pub(super) type Event = (Duration, u8, u64);

/// An event packed in one number ordered as the tuple (times in nanoseconds below 2^64, 584
/// years; whom below 2^56: stream indices and request ids), so that it moves in two
/// registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Packed(u128);

impl Packed {
    #[inline(always)]
    fn new((at, kind, who): Event) -> Packed {
        let nanos = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
        debug_assert!(who < 1 << 56, "event for {who} past 2^56");
        Packed((u128::from(nanos) << 64) | (u128::from(kind) << 56) | u128::from(who))
    }

    #[inline(always)]
    fn event(self) -> Event {
        let at = Duration::from_nanos((self.0 >> 64) as u64);
        (at, (self.0 >> 56) as u8, (self.0 as u64) & ((1 << 56) - 1))
    }
}

/// Events in time order: the earliest in a slot (when it was pushed last or is the only one
/// left), the rest in a heap; the slot's event, when there is one, is never later than the
/// heap's.
#[derive(Default)]
pub(super) struct Events {
    first: Option<Packed>,
    rest: BinaryHeap<Reverse<Packed>>,
}

impl Events {
    /// Inlined where the queue is empty (one stream pushing its next wake-up), so that the
    /// event goes from the caller's registers to the slot.
    #[inline(always)]
    pub(super) fn push(&mut self, event: Event) {
        let event = Packed::new(event);
        match self.first.is_none() && self.rest.is_empty() {
            true => self.first = Some(event),
            false => self.push_behind(event),
        }
    }

    fn push_behind(&mut self, event: Packed) {
        match self.first {
            Some(first) if first <= event => self.rest.push(Reverse(event)),
            Some(first) => {
                self.rest.push(Reverse(first));
                self.first = Some(event);
            }
            None => match self.rest.peek() {
                Some(Reverse(earliest)) if *earliest < event => self.rest.push(Reverse(event)),
                _ => self.first = Some(event),
            },
        }
    }

    /// Whether no event is due.
    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// The earliest event, removed.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<Event> {
        let first = match self.first.take() {
            Some(first) => first,
            None => self.rest.pop()?.0,
        };
        Some(first.event())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_entry_keeps_its_request_and_flags_apart() {
        let mut entry = Entry::in_flight(41, true);
        assert_eq!(entry.pending(), Some(41));
        assert!(entry.unused_prefetch() && !entry.drop_on_arrival());
        entry.drop_when_arrived();
        entry.arrive();
        assert_eq!(entry.pending(), None);
        assert!(entry.unused_prefetch() && entry.drop_on_arrival());
        entry.referenced();
        assert!(!entry.unused_prefetch() && entry.drop_on_arrival());
        assert_eq!(Entry::in_flight(0, false).pending(), Some(0));
        assert_eq!(Entry::arrived().pending(), None);
    }

    #[test]
    fn a_growing_table_holds_blocks_past_its_end() {
        let mut table = BlockTable::growing();
        assert_eq!(table.get(5), None);
        table.insert(5, 'a');
        table.insert(1000, 'b');
        assert_eq!(
            (table.get(5), table.get(1000), table.get(6)),
            (Some(&'a'), Some(&'b'), None)
        );
        assert_eq!(table.remove(5), Some('a'));
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn the_file_index_agrees_with_the_layout() {
        let mut layout = Layout::contiguous(&[4, 0, 1, 0, 3], 2, 4096);
        layout.files[3].start = 8;
        layout.files.swap(0, 4);
        let index = FileIndex::new(&layout);
        for disk in 0..20 {
            assert_eq!(
                index.file_block(disk),
                layout.file_block(disk),
                "disk block {disk}"
            );
        }
    }

    proptest! {
        /// Pushes and pops in any interleaving come out as a plain binary heap gives them.
        #[test]
        fn events_pop_in_the_heaps_order(ops in proptest::collection::vec((any::<bool>(), 0u64..6, 0u8..3, 0u64..3), 0..64)) {
            let (mut events, mut heap) = (Events::default(), BinaryHeap::new());
            for (pop, time, kind, who) in ops {
                match pop {
                    true => prop_assert_eq!(events.pop(), heap.pop().map(|Reverse(e)| e)),
                    false => {
                        let event = (Duration::from_nanos(time), kind, who);
                        events.push(event);
                        heap.push(Reverse(event));
                    }
                }
            }
            while let Some(Reverse(event)) = heap.pop() {
                prop_assert_eq!(events.pop(), Some(event));
            }
            prop_assert_eq!(events.pop(), None);
        }
    }
}
