//! Mithril, libCacheSim's association prefetcher (`prefetch/Mithril.c`), after Yang et al.,
//! "Mithril: Mining Sporadic Associations for Cache Prefetching" (SoCC'17): section 3.1 (the
//! recording table, where a block waits for `min-support` references, and the mining table,
//! where it gathers up to `max-support` timestamps; a block referenced more is frequent and
//! dropped), section 3.2 (mining: two blocks are associated when their timestamps lie
//! pairwise within `lookahead-range` and one pair is adjacent) and section 3.3 (the
//! prefetching table: each block's last `pf-list-size` associated blocks, prefetched on its
//! next reference). Timed here and free to pair with any replacement (`--policy lru+mithril`).
//!
//! It mirrors Mithril.c step by step so that, paired with LRU, FIFO, CLOCK, SIEVE, LFU or LFU-DA
//! on the shipped traces, it misses and prefetches exactly as libCacheSim's Mithril with the
//! same options (`tests/libcachesim_prefetch.rs`, reference counts from
//! `scripts/libcachesim_prefetch.py`), quirks included:
//!
//! - a reference is recorded on a miss (`rec-trigger=miss`), on every reference (`each_req`),
//!   on an eviction (`evict`) or on both (`miss_evict`), with the reference's number as its
//!   timestamp, kept to 15 bits, four to a 64-bit word behind a 4-bit count;
//! - the recording table holds the cache's `block-size` bytes x 2% / 14 rows (at min-support
//!   2), a ring from row 1; a block moving to the mining table leaves its row to the table's
//!   last row;
//! - mining runs when the mining table holds `mining-threshold` / `min-support` blocks: sorted
//!   by first timestamp, each block is compared with those whose first timestamp is at most
//!   `lookahead-range` later; the first of them with a close enough count of timestamps is
//!   associated at once, and Mithril.c's n-th timestamp reads the count field for n = 4 and 8;
//! - the prefetching table grows in shards of 2000 rows while its metadata (counted as
//!   Mithril.c counts it) fits `block-size` x the cache x `max-metadata-size`; full, it
//!   reuses the first shard's rows in order, forgetting their blocks.
//!
//! Options, libCacheSim's names and defaults: `lookahead-range` 20 (1 to 100), `max-support`
//! 8, `min-support` 2, `confidence` 1 (1 to 100), `pf-list-size` 2 (1 to 100), `rec-trigger`
//! miss, `max-metadata-size` 0.1 (strictly between 0 and 1), `mining-threshold` 5120 and
//! `block-size`, the bytes of a cached block in the budgets. libCacheSim's default block size,
//! 1, is for a cache counted in bytes (Mithril.c says to give the block size when the cache
//! counts objects); the simulator's cache counts blocks, so the default here is the run's
//! block size. A budget with fewer than two recording rows is refused (libCacheSim crashes).
//!
//! Deviations: where the metadata budget holds no prefetching-table shard, libCacheSim crashes;
//! here the table keeps the first shard, which Mithril.c allocates in any case. libCacheSim's
//! `cycle-time` (default 2) re-inserts a prefetched block evicted
//! unreferenced, at once, inside the eviction; the simulator's engine has no such re-insertion,
//! so only `cycle-time=1` (no second chance) is offered, and it is the default here. Its
//! `sequential-type` 1 and 2 (sequential prefetching inside Mithril, which looks the cache up)
//! and `min-support=1` (a debugging path of Mithril.c that aborts on one block id) are not
//! offered. With `rec-trigger` evict or miss_evict, an eviction by the demand fetch is recorded
//! after the reference's prefetch list is read, libCacheSim records it before. Mithril.c takes
//! object 0 for an empty slot (and aborts when it meets it in a row); here every block is
//! recorded.

use rustc_hash::FxHashMap;

use super::{Access, FetchRange, MakePrefetcher, PrefetchSetup, Prefetcher};
use crate::disksim::spec::PolicySpec;
use crate::disksim::workload::FileBlock;
use crate::SimError;

/// Mithril.h's `PREFETCH_TABLE_SHARD_SIZE`: rows per prefetching-table shard.
const SHARD: usize = 2000;
/// Mithril.h's `RECORDING_TABLE_MAXIMAL`: the recording table's share of the cache's bytes.
const RECORDING_SHARE: f64 = 0.02;
/// Bits of one timestamp.
const TS_MASK: u64 = (1 << 15) - 1;

/// Timestamps in a word (Mithril.h's `NUM_OF_TS`).
fn num_ts(word: u64) -> u64 {
    word >> 60
}

/// `word` with `ts` appended (Mithril.h's `ADD_TS`).
fn add_ts(word: u64, ts: u64) -> u64 {
    let n = num_ts(word) + 1;
    let shift = 15 * (4 - n);
    let set = (word & !(TS_MASK << shift)) | ((ts & TS_MASK) << shift);
    (set & ((1 << 60) - 1)) | (n << 60)
}

/// Mithril.h's `GET_NTH_TS(row, n)`: word `1 + n / 5`, position `n % 4` (position 0 is the
/// count field, so n = 4 and n = 8 read counts).
fn nth_ts(row: &[u64], n: usize) -> i32 {
    let shift = 15 * (4 - (n % 4) as u32);
    ((row[1 + n / 5] >> shift) & TS_MASK) as i32
}

/// Timestamps in a row, up to its first empty word (`_Mithril_get_total_num_of_ts`).
fn total_ts(row: &[u64]) -> i32 {
    row[1..]
        .iter()
        .map(|&w| num_ts(w))
        .take_while(|&n| n != 0)
        .sum::<u64>() as i32
}

/// Appends `ts` to the first word of `row` with room; the timestamps counted up to it.
fn append_ts(row: &mut [u64], ts: u64) -> u64 {
    let mut counted = 0;
    for word in &mut row[1..] {
        counted += num_ts(*word);
        if num_ts(*word) < 4 {
            *word = add_ts(*word, ts);
            break;
        }
    }
    counted
}

/// When a reference is recorded (`rec-trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// On a miss.
    Miss,
    /// On an eviction.
    Evict,
    /// On a miss and on an eviction.
    MissEvict,
    /// On every reference.
    EachReq,
}

/// The recording and mining tables (Mithril.h's `rec_mining_t`).
#[derive(Debug)]
struct Tables {
    /// Block -> row: positive in the recording table, -(row + 1) in the mining table.
    rows: FxHashMap<u64, i64>,
    recording: Vec<u64>,
    recording_row: usize,
    recording_rows: usize,
    current: usize,
    mining: Vec<Vec<u64>>,
    mining_row: usize,
    available: usize,
}

/// The prefetching table: rows of a block and its associated blocks, in shards.
#[derive(Debug)]
struct PrefetchTable {
    row_of: FxHashMap<u64, usize>,
    shards: Vec<Vec<u64>>,
    current: usize,
    full: bool,
    metadata: i64,
    budget: i64,
}

/// The Mithril prefetcher.
#[derive(Debug)]
pub struct Mithril {
    options: Options,
    tables: Tables,
    table: PrefetchTable,
    mining_size: usize,
    ts: u64,
    references: u64,
}

/// A block as Mithril.c's object id: never 0 (its empty slot).
fn key(block: FileBlock) -> u64 {
    (u64::from(block.file) << 40 | block.block) + 1
}

fn block_of(key: u64) -> FileBlock {
    let k = key - 1;
    FileBlock {
        file: (k >> 40) as u32,
        block: k & ((1 << 40) - 1),
    }
}

impl Mithril {
    /// `set_Mithril_params` for a cache of `cache_blocks` blocks of `block_size` bytes (unless
    /// the options give one); an error where the recording table has no row to use.
    fn new(options: Options, cache_blocks: usize, block_size: u64) -> Result<Mithril, SimError> {
        let block_size = options.block_size.map_or(block_size, u64::from);
        let o = &options;
        let pf = o.pf_list_size as i64;
        let cache = cache_blocks as u64;
        let mining_size = (o.mining_threshold / o.min_support) as usize;
        let budget = (block_size * cache) as f64 * o.max_metadata;
        let budget = budget as i64;
        let shards = budget / (SHARD as i64 * pf);
        let min = f64::from(o.min_support);
        let recording_rows = ((cache * block_size) as f64 * RECORDING_SHARE
            / ((min / 2.0).ceil() * 2.0 + 12.0)) as usize;
        if recording_rows < 2 {
            return Err(SimError::Config(format!(
                "Mithril's recording table, 2% of block-size x {cache_blocks} blocks, holds \
                 fewer than two rows (libCacheSim crashes): give a larger block-size in bytes, \
                 e.g. mithril:block-size=4096"
            )));
        }
        let mut metadata = (i64::from(o.max_support) * 2 + 12) * mining_size as i64
            + shards * 8
            + SHARD as i64 * (pf * 8 + 12);
        metadata += ((min / 4.0 + 1.0).ceil() as i64 * 8 + 4) * recording_rows as i64;
        let recording_row = (min / 4.0).ceil() as usize + 1;
        let mining_row = (f64::from(o.max_support) / 4.0).ceil() as usize + 1;
        Ok(Mithril {
            tables: Tables {
                rows: FxHashMap::default(),
                recording: vec![0; recording_rows * recording_row],
                recording_row,
                recording_rows,
                current: 1,
                mining: Vec::new(),
                mining_row,
                available: 0,
            },
            table: PrefetchTable {
                row_of: FxHashMap::default(),
                shards: vec![vec![0; SHARD * (o.pf_list_size as usize + 1)]],
                current: 1,
                full: false,
                metadata,
                budget,
            },
            mining_size,
            ts: 0,
            references: 0,
            options,
        })
    }

    fn pf(&self) -> usize {
        self.options.pf_list_size as usize
    }

    /// Row `row` of the prefetching table.
    fn ptable_row(&mut self, row: usize) -> &mut [u64] {
        let width = self.pf() + 1;
        let at = row % SHARD * width;
        &mut self.table.shards[row / SHARD][at..at + width]
    }

    /// `_Mithril_record_entry` with min-support of 2 or more.
    fn record(&mut self, id: u64) {
        match self.tables.rows.get(&id).copied().unwrap_or(0) {
            0 => self.record_new(id),
            index if index < 0 => self.record_mining(id, (-index - 1) as usize),
            index => self.record_recording(id, index as usize),
        }
        if self.tables.available >= self.mining_size {
            self.mine();
            self.tables.available = 0;
        }
    }

    fn rrow(&mut self, row: usize) -> &mut [u64] {
        let width = self.tables.recording_row;
        &mut self.tables.recording[row * width..(row + 1) * width]
    }

    /// A block in neither table enters the recording table's current row.
    fn record_new(&mut self, id: u64) {
        let (row, ts) = (self.tables.current, self.ts);
        let slot = self.rrow(row);
        slot[0] = id;
        slot[1] = add_ts(slot[1], ts);
        self.tables.rows.insert(id, row as i64);
        self.tables.current += 1;
        if self.tables.current >= self.tables.recording_rows {
            self.tables.current = 1;
        }
        let next = self.tables.current;
        let old = self.rrow(next)[0];
        if old != 0 {
            self.tables.rows.remove(&old);
            self.rrow(next).fill(0);
        }
    }

    /// A block of the mining table gains a timestamp, or leaves it as frequent.
    fn record_mining(&mut self, id: u64, row: usize) {
        let ts = self.ts;
        let counted = append_ts(&mut self.tables.mining[row], ts);
        if counted != u64::from(self.options.max_support) {
            return;
        }
        self.tables.rows.remove(&id);
        self.tables.mining.swap_remove(row);
        if row != self.tables.mining.len() {
            let moved = self.tables.mining[row][0];
            self.tables.rows.insert(moved, -(row as i64) - 1);
        }
        self.tables.available -= 1;
    }

    /// A block of the recording table gains a timestamp, and with `min-support` of them moves
    /// to the mining table, the table's last row taking its place.
    fn record_recording(&mut self, id: u64, row: usize) {
        let ts = self.ts;
        let counted = append_ts(self.rrow(row), ts);
        if counted != u64::from(self.options.min_support) - 1 {
            return;
        }
        let mut mined = vec![0; self.tables.mining_row];
        let width = self.tables.recording_row;
        mined[..width].copy_from_slice(self.rrow(row));
        self.tables.mining.push(mined);
        self.tables.available += 1;
        let current = self.tables.current;
        let last = current.wrapping_sub(1);
        let moves = row != last && current >= 2;
        if moves {
            self.tables
                .recording
                .copy_within(last * width..current * width, row * width);
        }
        let cleared = if current >= 2 { last } else { row };
        self.rrow(cleared).fill(0);
        let mined_row = self.tables.mining.len() as i64;
        self.tables.rows.insert(id, -mined_row);
        if moves {
            let moved = self.rrow(row)[0];
            self.tables.rows.insert(moved, row as i64);
        }
        if current >= 2 {
            self.tables.current -= 1;
        }
    }

    /// `_Mithril_mining`: associates the blocks of the mining table and empties it.
    fn mine(&mut self) {
        for row in &self.tables.mining {
            self.tables.rows.remove(&row[0]);
        }
        let mut mining = std::mem::take(&mut self.tables.mining);
        // g_array_sort is a stable merge sort, as sort_by is.
        mining.sort_by_key(|row| nth_ts(row, 1));
        let (range, confidence) = (
            self.options.lookahead as i32,
            self.options.confidence as i32,
        );
        for i in 0..mining.len().saturating_sub(1) {
            let first = &mining[i];
            let n1 = total_ts(first);
            let mut first_found = true;
            for second in &mining[i + 1..] {
                if nth_ts(second, 1) - nth_ts(first, 1) > range {
                    break;
                }
                let n2 = total_ts(second);
                if (n1 - n2).abs() > confidence {
                    continue;
                }
                if associated(first, second, n1.min(n2), range, confidence, first_found) {
                    self.associate(first[0], second[0]);
                }
                first_found = false;
            }
        }
    }

    /// `_Mithril_add_to_prefetch_table`: `to` joins `from`'s row (its oldest leaves a full
    /// row), or `from` takes the next row.
    fn associate(&mut self, from: u64, to: u64) {
        let pf = self.pf();
        if let Some(&row) = self.table.row_of.get(&from) {
            let slots = self.ptable_row(row);
            let mut i = 1;
            let mut insert = true;
            while i <= pf && slots[i] != 0 {
                insert &= slots[i] != to;
                i += 1;
            }
            if insert {
                if i == pf + 1 {
                    slots.copy_within(2..=pf, 1);
                    i = pf;
                }
                slots[i] = to;
            }
            return;
        }
        self.table.current += 1;
        let row = self.table.current;
        if self.table.full {
            let old = self.ptable_row(row)[0];
            self.table.row_of.remove(&old);
            self.ptable_row(row).fill(0);
        }
        let slots = self.ptable_row(row);
        slots[1] = to;
        slots[0] = from;
        self.table.row_of.insert(from, row);
        if (row + 1).is_multiple_of(SHARD) {
            let shard = SHARD as i64 * (pf as i64 * 8 + 12);
            if self.table.metadata + shard < self.table.budget {
                self.table.shards.push(vec![0; SHARD * (pf + 1)]);
                self.table.metadata += shard;
            } else {
                self.table.full = true;
                self.table.current = 1;
            }
        }
    }

    /// `Mithril_prefetch`'s list: `id`'s associated blocks.
    fn prefetch_list(&mut self, id: u64) -> Vec<FetchRange> {
        let Some(&row) = self.table.row_of.get(&id) else {
            return Vec::new();
        };
        self.ptable_row(row)[1..]
            .iter()
            .take_while(|&&to| to != 0)
            .map(|&to| {
                let b = block_of(to);
                FetchRange {
                    file: b.file,
                    start: b.block,
                    len: 1,
                }
            })
            .collect()
    }
}

/// Mining's test of two blocks whose counts differ by at most `confidence`: the first such
/// block after `first` is associated unless too many timestamps lie apart; any other needs
/// one pair of timestamps one apart.
fn associated(
    first: &[u64],
    second: &[u64],
    shorter: i32,
    range: i32,
    confidence: i32,
    first_found: bool,
) -> bool {
    let mut flag =
        first_found || (shorter == 1 && (nth_ts(first, 1) - nth_ts(second, 1)).abs() == 1);
    let mut error = 0;
    for k in 1..shorter as usize {
        let gap = (nth_ts(first, k) - nth_ts(second, k)).abs();
        if gap > range {
            error += 1;
            if error > confidence {
                return false;
            }
        }
        flag |= gap == 1;
    }
    flag
}

impl Prefetcher for Mithril {
    fn on_evict(&mut self, block: FileBlock, _unused: bool) {
        if matches!(self.options.trigger, Trigger::Evict | Trigger::MissEvict) {
            self.record(key(block));
        }
    }

    fn on_stream_end(&mut self, _stream: usize) {}

    fn on_served(&mut self, _request: &disk::Request, _seek_bytes: Option<u64>) {}

    fn drops(&mut self) -> Vec<FetchRange> {
        Vec::new()
    }

    fn on_access(&mut self, access: &Access) -> Vec<FetchRange> {
        // Mithril.c's timestamp is the reference's number, raised after its prefetches.
        self.ts = self.references;
        self.references += 1;
        let id = key(access.block);
        let records = match self.options.trigger {
            Trigger::EachReq => true,
            Trigger::Evict => false,
            Trigger::Miss | Trigger::MissEvict => !access.found,
        };
        if records {
            self.record(id);
        }
        self.prefetch_list(id)
    }

    fn demand_only(&self) -> bool {
        false
    }
}

/// Mithril's configuration, libCacheSim's parameters (module header).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// `lookahead-range`: how far apart associated references may be.
    pub lookahead: u32,
    /// `max-support`: timestamps past which a block is frequent and dropped.
    pub max_support: u32,
    /// `min-support`: references before a block is mined.
    pub min_support: u32,
    /// `confidence`: timestamps that may lie too far apart.
    pub confidence: u32,
    /// `pf-list-size`: associated blocks kept per block.
    pub pf_list_size: u32,
    /// `rec-trigger`: when a reference is recorded.
    pub trigger: Trigger,
    /// `block-size`: bytes per cached block in the budgets; `None`: the run's block size.
    pub block_size: Option<u32>,
    /// `max-metadata-size`: the budget's share of the cache's bytes.
    pub max_metadata: f64,
    /// `mining-threshold`: mining runs at this / `min-support` blocks.
    pub mining_threshold: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            lookahead: 20,
            max_support: 8,
            min_support: 2,
            confidence: 1,
            pf_list_size: 2,
            trigger: Trigger::Miss,
            block_size: None,
            max_metadata: 0.1,
            mining_threshold: 5120,
        }
    }
}

/// `given`'s count `key` within `range`, or one error line naming the range.
fn ranged(
    given: &PolicySpec,
    key: &str,
    default: u32,
    range: std::ops::RangeInclusive<u32>,
) -> Result<u32, SimError> {
    match u32::try_from(given.count(key, u64::from(default))?) {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(SimError::Config(format!(
            "Mithril's {key} is {} to {} (libCacheSim's default is {default})",
            range.start(),
            range.end()
        ))),
    }
}

impl Options {
    /// Reads `given`.
    pub fn parse(given: &PolicySpec) -> Result<Options, SimError> {
        given.only(&[
            "lookahead-range",
            "max-support",
            "min-support",
            "confidence",
            "pf-list-size",
            "rec-trigger",
            "block-size",
            "max-metadata-size",
            "cycle-time",
            "mining-threshold",
            "sequential-type",
        ])?;
        let config = |text: &str| Err(SimError::Config(text.into()));
        if given.count("cycle-time", 1)? != 1 {
            return config(
                "Mithril's cycle-time here is 1: the simulator does not re-insert an evicted \
                 block (libCacheSim's default 2 gives a prefetched block a second chance)",
            );
        }
        if given.count("sequential-type", 0)? != 0 {
            return config(
                "Mithril's sequential-type here is 0: for sequential prefetching pair the \
                 replacement with obl instead",
            );
        }
        let trigger = match given.text("rec-trigger", "miss").as_str() {
            "miss" => Trigger::Miss,
            "evict" => Trigger::Evict,
            "miss_evict" => Trigger::MissEvict,
            "each_req" => Trigger::EachReq,
            _ => return config("Mithril's rec-trigger is miss, evict, miss_evict or each_req"),
        };
        let max_support = ranged(given, "max-support", 8, 2..=u32::MAX)?;
        let min_support = ranged(given, "min-support", 2, 2..=max_support)?;
        let max_metadata = given.ratio("max-metadata-size", 0.1)?;
        if max_metadata <= 0.0 || max_metadata >= 1.0 {
            return config(
                "Mithril's max-metadata-size is a share strictly between 0 and 1 \
                 (libCacheSim's default is 0.1)",
            );
        }
        let mining_threshold = ranged(given, "mining-threshold", 5120, 1..=i32::MAX as u32)?;
        if mining_threshold < min_support {
            return config("Mithril's mining-threshold must be at least its min-support");
        }
        Ok(Options {
            lookahead: ranged(given, "lookahead-range", 20, 1..=100)?,
            max_support,
            min_support,
            confidence: ranged(given, "confidence", 1, 1..=100)?,
            pf_list_size: ranged(given, "pf-list-size", 2, 1..=100)?,
            trigger,
            block_size: match given.count_given("block-size")? {
                None => None,
                Some(_) => Some(ranged(given, "block-size", 1, 1..=u32::MAX)?),
            },
            max_metadata,
            mining_threshold,
        })
    }
}

impl MakePrefetcher for Options {
    fn build(&self, setup: &PrefetchSetup) -> Result<Box<dyn Prefetcher>, SimError> {
        let block_size = setup.workload.layout.block_size;
        Ok(Box::new(Mithril::new(
            *self,
            setup.cache_blocks,
            block_size,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mithril(options: Options) -> Mithril {
        Mithril::new(options, 100, 4096).unwrap()
    }

    fn starts(ranges: Vec<FetchRange>) -> Vec<u64> {
        ranges.into_iter().map(|r| r.start).collect()
    }

    /// Four timestamps fill a word behind their count; Mithril.c's fourth timestamp of a row
    /// reads that count, its fifth the next word's first.
    #[test]
    fn timestamps_pack_four_to_a_word() {
        let mut row = vec![7, 0, 0];
        for ts in [10, 11, 12, 13, 40_000] {
            append_ts(&mut row, ts);
        }
        assert_eq!((num_ts(row[1]), num_ts(row[2])), (4, 1));
        assert_eq!([1, 2, 3].map(|n| nth_ts(&row, n)), [10, 11, 12]);
        assert_eq!(nth_ts(&row, 4), 4, "the count field, as Mithril.c reads it");
        assert_eq!(
            nth_ts(&row, 5),
            (40_000 & TS_MASK) as i32,
            "kept to 15 bits"
        );
        assert_eq!(total_ts(&row), 5);
    }

    /// A at 0 and 2, B at 1 and 3: both reach min-support 2 and fill the mining table of
    /// 4 / 2 rows, mining associates A (first by timestamp) with B, and A's next reference
    /// prefetches B; B, second, has no row of its own.
    #[test]
    fn blocks_referenced_together_are_associated_after_mining() {
        let mut m = mithril(Options {
            mining_threshold: 4,
            ..Options::default()
        });
        let asked: Vec<Vec<u64>> = [1, 2, 1, 2, 1, 2]
            .into_iter()
            .map(|b| starts(m.on_access(&Access::miss(b))))
            .collect();
        assert_eq!(asked, [vec![], vec![], vec![], vec![], vec![2], vec![]]);
    }

    /// A block referenced more than max-support times while in the mining table is frequent:
    /// it leaves the tables.
    #[test]
    fn a_frequent_block_is_dropped() {
        let mut m = mithril(Options {
            max_support: 2,
            ..Options::default()
        });
        for b in [1, 1] {
            m.on_access(&Access::miss(b));
        }
        assert_eq!(m.tables.mining.len(), 1);
        m.on_access(&Access::miss(1));
        assert!(m.tables.mining.is_empty() && m.tables.rows.is_empty());
    }

    /// Hits are not recorded under the default trigger.
    #[test]
    fn hits_are_not_recorded_on_miss() {
        let mut m = mithril(Options::default());
        m.on_access(&Access {
            found: true,
            ..Access::miss(1)
        });
        assert!(m.tables.rows.is_empty());
        m.on_access(&Access::miss(1));
        assert_eq!(m.tables.rows.len(), 1);
    }

    #[test]
    fn options_are_libcachesims_and_errors_say_the_range() {
        let parse = |text: &str| Options::parse(&PolicySpec::parse(text).unwrap());
        assert_eq!(parse("mithril").unwrap(), Options::default());
        let given = parse("mithril:pf-list-size=3,rec-trigger=each_req").unwrap();
        assert_eq!((given.pf_list_size, given.trigger), (3, Trigger::EachReq));
        for (text, says) in [
            ("mithril:lookahead-range=0", "1 to 100"),
            ("mithril:min-support=1", "2 to 8"),
            ("mithril:min-support=9", "2 to 8"),
            ("mithril:cycle-time=2", "second chance"),
            ("mithril:sequential-type=1", "obl"),
            ("mithril:rec-trigger=often", "each_req"),
            ("mithril:max-metadata-size=1", "strictly between"),
            ("mithril:depth=3", "unknown option"),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
        let bytes = Options {
            block_size: Some(1),
            ..Options::default()
        };
        let error = Mithril::new(bytes, 100, 4096).unwrap_err();
        assert!(error.to_string().contains("block-size=4096"), "{error}");
        let tiny = Mithril::new(Options::default(), 4, 4096).unwrap();
        assert_eq!(
            tiny.table.shards.len(),
            1,
            "no shard in the budget: the first is kept"
        );
    }
}
