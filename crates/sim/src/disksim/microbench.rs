//! The competitive-prefetching paper's microbenchmarks (TR840 s5.1): request handlers of a
//! data-intensive server reading 64 KB blocks from a dataset of 4 MB files.
//!
//! | name | one request |
//! |---|---|
//! | `One-Whole-0` | one random file, read whole in 64 KB blocks |
//! | `One-Rand-10` | one file from its start up to 64 KB-4 MB (uniform), 10 ms pauses at 4 points |
//! | `Two-Rand-0` | two random files, alternating 64 KB blocks, each up to its own random size |
//! | `Four-64KB-0` | four random files, one random 64 KB block from each |
//!
//! A request is a list of [`Action`]s; a server at concurrency N runs N handlers, each taking a
//! new request as soon as its previous one ends (a closed loop). [`Dataset::workload`] turns
//! that into the engine's [`Workload`]: one stream per handler, one reference per 4 KiB block,
//! think times carried by the next reference; run it with a time limit for the steady state.
//!
//! Deviations: the paper says handlers read "a random portion" of a file; we read from the
//! file's start, which gives the min-mean-max stream sizes of the paper's Table 1 (64 KB - 2 MB -
//! 4 MB). Random sizes are whole 64 KB blocks. The dataset is 6000 files laid out back to back
//! (24 GB) unless configured otherwise.

use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::time::Duration;

use super::workload::{FileBlock, Layout, Step, Workload};

/// One action of a request handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Read `len` bytes of file `file` at byte `offset`.
    Read {
        /// File number, `0..files`.
        file: u32,
        /// Byte offset in the file.
        offset: u64,
        /// Bytes to read.
        len: u64,
    },
    /// Compute (or wait) without I/O.
    Think(Duration),
}

/// Which microbenchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Microbench {
    /// Whole files, one at a time, no think time.
    OneWhole0,
    /// A random prefix of one file, four 10 ms think times.
    OneRand10,
    /// Random prefixes of two files, interleaved block by block.
    TwoRand0,
    /// One random 64 KB block from each of four files.
    Four64Kb0,
}

impl Microbench {
    /// All four, in the paper's order.
    pub const ALL: [Microbench; 4] = [
        Microbench::OneWhole0,
        Microbench::OneRand10,
        Microbench::TwoRand0,
        Microbench::Four64Kb0,
    ];

    /// The paper's name.
    pub fn name(self) -> &'static str {
        match self {
            Microbench::OneWhole0 => "One-Whole-0",
            Microbench::OneRand10 => "One-Rand-10",
            Microbench::TwoRand0 => "Two-Rand-0",
            Microbench::Four64Kb0 => "Four-64KB-0",
        }
    }

    /// Parses the paper's name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Microbench> {
        Microbench::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }
}

/// Sizes of the dataset and of the reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dataset {
    /// Number of files.
    pub files: u32,
    /// Size of each file, bytes.
    pub file_size: u64,
    /// Size of each application read, bytes.
    pub read_size: u64,
    /// Think time of `One-Rand-10` at each of its pauses.
    pub think: Duration,
    /// Number of pauses in a `One-Rand-10` request.
    pub pauses: usize,
}

impl Default for Dataset {
    /// The paper's: 6000 files of 4 MB, 64 KB reads, four 10 ms pauses.
    fn default() -> Self {
        Dataset {
            files: 6000,
            file_size: 4 << 20,
            read_size: 64 << 10,
            think: Duration::from_millis(10),
            pauses: 4,
        }
    }
}

impl Dataset {
    /// Blocks of `read_size` per file (at least one).
    fn blocks(&self) -> u64 {
        (self.file_size / self.read_size).max(1)
    }

    fn random_file(&self, rng: &mut impl Rng) -> u32 {
        rng.gen_range(0..self.files.max(1))
    }

    /// A random prefix length in whole blocks, 1 to all of them.
    fn random_blocks(&self, rng: &mut impl Rng) -> u64 {
        rng.gen_range(1..=self.blocks())
    }

    fn read(&self, file: u32, block: u64) -> Action {
        Action::Read {
            file,
            offset: block * self.read_size,
            len: self.read_size,
        }
    }

    /// Files back to back from disk block 0, in blocks of `block_size` bytes.
    pub fn layout(&self, block_size: u64) -> Layout {
        let blocks = self.file_size.div_ceil(block_size.max(1));
        Layout::contiguous(&vec![blocks; self.files as usize], 0, block_size.max(1))
    }

    /// `handlers` streams running requests of `bench` back to back, each until it has read
    /// `bytes_per_handler` bytes, in blocks of `block_size`; deterministic for `seed`.
    pub fn workload(
        &self,
        bench: Microbench,
        handlers: usize,
        bytes_per_handler: u64,
        block_size: u64,
        seed: u64,
    ) -> Workload {
        let mut rng = SmallRng::seed_from_u64(seed);
        let block_size = block_size.max(1);
        let streams = (0..handlers)
            .map(|_| self.handler(bench, bytes_per_handler, block_size, &mut rng))
            .collect();
        Workload {
            layout: self.layout(block_size),
            streams,
        }
    }

    /// One handler's references: whole requests until `budget` bytes are read.
    fn handler(
        &self,
        bench: Microbench,
        budget: u64,
        block_size: u64,
        rng: &mut SmallRng,
    ) -> Vec<Step> {
        let (mut steps, mut bytes, mut think) = (Vec::new(), 0, Duration::ZERO);
        while bytes < budget.max(1) {
            for action in self.request(bench, rng) {
                match action {
                    Action::Think(t) => think += t,
                    Action::Read { file, offset, len } => {
                        let blocks = offset / block_size..(offset + len).div_ceil(block_size);
                        steps.extend(blocks.map(|block| Step {
                            block: FileBlock { file, block },
                            think: std::mem::take(&mut think),
                        }));
                        bytes += len;
                    }
                }
            }
        }
        steps
    }

    /// The actions of one request of `bench`.
    pub fn request(&self, bench: Microbench, rng: &mut impl Rng) -> Vec<Action> {
        match bench {
            Microbench::OneWhole0 => self.prefix(self.random_file(rng), self.blocks()),
            Microbench::OneRand10 => {
                let blocks = self.random_blocks(rng);
                let reads = self.prefix(self.random_file(rng), blocks);
                self.with_pauses(reads, rng)
            }
            Microbench::TwoRand0 => {
                let (a, b) = (self.random_file(rng), self.random_file(rng));
                let (na, nb) = (self.random_blocks(rng), self.random_blocks(rng));
                interleave(self.prefix(a, na), self.prefix(b, nb))
            }
            Microbench::Four64Kb0 => (0..4)
                .map(|_| {
                    let file = self.random_file(rng);
                    self.read(file, rng.gen_range(0..self.blocks()))
                })
                .collect(),
        }
    }

    fn prefix(&self, file: u32, blocks: u64) -> Vec<Action> {
        (0..blocks).map(|b| self.read(file, b)).collect()
    }

    /// Inserts `pauses` think steps at random points (before any read but the first).
    fn with_pauses(&self, reads: Vec<Action>, rng: &mut impl Rng) -> Vec<Action> {
        let mut at: Vec<usize> = (0..self.pauses)
            .map(|_| rng.gen_range(1..=reads.len()))
            .collect();
        at.sort_unstable();
        let mut steps = Vec::with_capacity(reads.len() + at.len());
        let mut pauses = at.into_iter().peekable();
        for (i, read) in reads.into_iter().enumerate() {
            while pauses.next_if(|&p| p == i).is_some() {
                steps.push(Action::Think(self.think));
            }
            steps.push(read);
        }
        steps.extend(pauses.map(|_| Action::Think(self.think)));
        steps
    }
}

/// `a` and `b` alternately, then the rest of the longer one.
fn interleave(a: Vec<Action>, b: Vec<Action>) -> Vec<Action> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    loop {
        match (a.next(), b.next()) {
            (None, None) => return out,
            (x, y) => out.extend(x.into_iter().chain(y)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, SeedableRng};

    fn reads(steps: &[Action]) -> Vec<(u32, u64)> {
        steps
            .iter()
            .filter_map(|s| match *s {
                Action::Read { file, offset, .. } => Some((file, offset)),
                Action::Think(_) => None,
            })
            .collect()
    }

    /// One-Whole-0 reads all 64 blocks of one file in order.
    #[test]
    fn one_whole_reads_a_whole_file() {
        let mut rng = SmallRng::seed_from_u64(1);
        let steps = Dataset::default().request(Microbench::OneWhole0, &mut rng);
        let r = reads(&steps);
        assert_eq!(r.len(), 64);
        assert!(r.iter().all(|&(f, _)| f == r[0].0));
        assert!(r
            .iter()
            .enumerate()
            .all(|(i, &(_, o))| o == i as u64 * 65536));
    }

    /// One-Rand-10: a prefix with exactly four 10 ms pauses, and the first step a read.
    #[test]
    fn one_rand_has_four_pauses() {
        let mut rng = SmallRng::seed_from_u64(2);
        for _ in 0..100 {
            let steps = Dataset::default().request(Microbench::OneRand10, &mut rng);
            let pauses = steps
                .iter()
                .filter(|s| matches!(s, Action::Think(_)))
                .count();
            assert_eq!(pauses, 4);
            assert!(matches!(steps[0], Action::Read { offset: 0, .. }));
            assert!((1..=64).contains(&reads(&steps).len()));
        }
    }

    /// Two-Rand-0 streams average 32.5 blocks of 64 KiB (the paper's ~2 MB).
    #[test]
    fn two_rand_streams_average_2_mb() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut total = 0;
        let requests = 2000;
        for _ in 0..requests {
            let steps = Dataset::default().request(Microbench::TwoRand0, &mut rng);
            let r = reads(&steps);
            total += r.len() as u64 * 65536;
        }
        let mean_stream = total as f64 / (2.0 * requests as f64);
        assert!(
            (mean_stream / 2_129_920.0 - 1.0).abs() < 0.05,
            "{mean_stream}"
        );
    }

    /// Interleaving alternates while both lists last, then finishes the longer one.
    #[test]
    fn interleave_alternates() {
        let think = |ms| Action::Think(Duration::from_millis(ms));
        let out = interleave(vec![think(1), think(2), think(3)], vec![think(10)]);
        assert_eq!(out, [think(1), think(10), think(2), think(3)]);
    }

    /// Four-64KB-0: four single aligned blocks.
    #[test]
    fn four_64kb_reads_four_blocks() {
        let mut rng = SmallRng::seed_from_u64(4);
        let steps = Dataset::default().request(Microbench::Four64Kb0, &mut rng);
        let r = reads(&steps);
        assert_eq!(r.len(), 4);
        assert!(r.iter().all(|&(_, o)| o % 65536 == 0 && o < 4 << 20));
    }

    /// The engine workload: one reference per block, a 10 ms pause carried by the next block,
    /// and every reference inside the layout.
    #[test]
    fn workload_has_one_reference_per_block() {
        let data = Dataset {
            files: 8,
            ..Dataset::default()
        };
        let w = data.workload(Microbench::OneRand10, 3, 1 << 20, 4096, 7);
        assert_eq!(w.streams.len(), 3);
        assert_eq!(w.layout.file_blocks(0), 1024);
        assert!(w.validate().is_ok());
        for steps in &w.streams {
            assert!(steps.len() as u64 * 4096 >= 1 << 20);
            let pauses: Duration = steps.iter().map(|s| s.think).sum();
            assert_eq!(pauses.as_millis() % 10, 0);
            assert!(
                pauses >= Duration::from_millis(40),
                "at least one request's four pauses"
            );
        }
    }

    /// Names round-trip.
    #[test]
    fn names_parse() {
        for m in Microbench::ALL {
            assert_eq!(Microbench::from_name(m.name()), Some(m));
        }
        assert_eq!(
            Microbench::from_name("one-whole-0"),
            Some(Microbench::OneWhole0)
        );
        assert_eq!(Microbench::from_name("x"), None);
    }
}
