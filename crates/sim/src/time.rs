//! The time model: how long a reference and a fetch take.
//!
//! Cao et al. section 2.1 (the *simplified* model): every reference takes one time unit and
//! every fetch takes F units. Section 4.3 (the *realistic* model): each reference takes the
//! compute time measured in the trace, and a fetch takes the trace's average disk time (here a
//! constant or a seeded uniform distribution around a mean). A fetch's duration comes from a
//! device, a `disk::DiskModel` as on the disk-timed engine: a fixed-time device
//! (`disk::model::Fixed`, Cao's F), a seeded distribution, or a disk model of the `disk` crate
//! (seek, rotation, transfer; [`DiskFetch`]).
//!
//! Deviations: time is an integer number of ticks. In the simplified model a reference is
//! `reference` ticks (1 by default) so that F can be made small relative to a reference (the
//! "F -> 0" limit) without fractions. The paper's realistic model used a measured average
//! fetch time; we take it as a setting.

use std::time::Duration;

use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::SimError;

/// Simulated time, in ticks (one reference = 1 tick in the simplified model by default;
/// microseconds in the realistic model).
pub type Time = u64;

/// The longest reference or fetch time accepted (2^40 ticks, 12 days in microseconds), so that
/// sums over billions of references stay far from overflowing.
pub const MAX_DURATION: Time = 1 << 40;

/// How long one reference's computation takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReferenceTime {
    /// Every reference takes the same number of ticks (the simplified model).
    Uniform(Time),
    /// Each reference takes the compute time recorded in the trace (the realistic model);
    /// traces without timestamps are rejected.
    FromTrace,
}

/// How long one fetch takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchTime {
    /// Every fetch takes this many ticks.
    Constant(Time),
    /// Each fetch takes a duration drawn uniformly from `mean - spread ..= mean + spread`,
    /// from a generator seeded with `seed` (so runs repeat exactly).
    Uniform {
        /// Average fetch time in ticks.
        mean: Time,
        /// Half-width of the range; must be below `mean`.
        spread: Time,
        /// Seed of the generator.
        seed: u64,
    },
    /// Each fetch takes what a disk model says (ticks are microseconds).
    Disk(DiskFetch),
}

/// Fetch times from a disk model of the `disk` crate: block `b` lies at byte
/// `(b mod blocks on the disk) x block_size`, and each fetch is one request of one block.
///
/// Deviations: a trace block's place on the disk is its number (file numbers in the top bits
/// wrap round the disk), as the reference traces number adjacent blocks consecutively.
#[derive(Clone, Debug)]
pub struct DiskFetch {
    /// The disk, described once; each run builds a fresh model from it.
    pub spec: std::sync::Arc<disk::Spec>,
    /// Bytes per block.
    pub block_size: u64,
}

impl PartialEq for DiskFetch {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.spec, &other.spec) && self.block_size == other.block_size
    }
}

impl Eq for DiskFetch {}

/// The time model of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Duration of a reference.
    pub reference: ReferenceTime,
    /// Duration of a fetch.
    pub fetch: FetchTime,
}

impl Timing {
    /// The simplified model of section 2.1: references take 1 tick, fetches take `fetch`.
    pub fn simplified(fetch: Time) -> Self {
        Timing {
            reference: ReferenceTime::Uniform(1),
            fetch: FetchTime::Constant(fetch),
        }
    }

    /// Checks the settings: every duration at least one tick, spread below mean.
    pub fn validate(&self) -> Result<(), SimError> {
        if let ReferenceTime::Uniform(t) = self.reference {
            if !(1..=MAX_DURATION).contains(&t) {
                return Err(SimError::Config(format!(
                    "reference time {t} is not in 1..=2^40 ticks"
                )));
            }
        }
        match self.fetch {
            FetchTime::Constant(f) | FetchTime::Uniform { mean: f, .. }
                if !(1..=MAX_DURATION).contains(&f) =>
            {
                Err(SimError::Config(format!(
                    "fetch time {f} is not in 1..=2^40 ticks"
                )))
            }
            FetchTime::Uniform { mean, spread, .. } if spread >= mean => Err(SimError::Config(
                format!("fetch time spread {spread} must be below its mean {mean}"),
            )),
            FetchTime::Disk(DiskFetch {
                ref spec,
                block_size,
            }) => match spec.build() {
                Ok(_) if block_size > 0 => Ok(()),
                Ok(_) => Err(SimError::Config(
                    "block size must be at least 1 byte".into(),
                )),
                Err(e) => Err(SimError::Config(e.to_string())),
            },
            _ => Ok(()),
        }
    }

    /// The average fetch time in ticks (the F of the paper's normalisation).
    pub fn mean_fetch(&self) -> Time {
        match self.fetch {
            FetchTime::Constant(f) => f,
            FetchTime::Uniform { mean, .. } => mean,
            FetchTime::Disk(_) => 0,
        }
    }

    /// Whether this is the simplified model with unit references and a constant fetch time.
    pub fn unit_constant(&self) -> Option<Time> {
        match (&self.reference, &self.fetch) {
            (ReferenceTime::Uniform(1), FetchTime::Constant(f)) => Some(*f),
            _ => None,
        }
    }

    /// The device that serves this model's fetches.
    pub(crate) fn device(&self) -> FetchDevice {
        match self.fetch {
            FetchTime::Constant(f) => FetchDevice::unaddressed(Box::new(disk::model::Fixed::new(
                Duration::from_nanos(f),
                disk::preset::DEFAULT_CAPACITY,
            ))),
            FetchTime::Uniform { mean, spread, seed } => {
                FetchDevice::unaddressed(Box::new(UniformModel {
                    low: mean - spread,
                    high: mean + spread,
                    rng: SmallRng::seed_from_u64(seed),
                }))
            }
            FetchTime::Disk(ref fetch) => {
                let model = fetch
                    .spec
                    .build()
                    .expect("a disk spec that built in Timing::validate builds again");
                FetchDevice {
                    blocks_on_disk: Some((model.capacity() / fetch.block_size).max(1)),
                    model,
                    nanos_per_tick: 1_000,
                    block_size: fetch.block_size,
                }
            }
        }
    }
}

/// Where fetches go: a disk model of the `disk` crate, the device seam of the disk-timed
/// engine too. Each fetch is one request of one block; block `b` lies at byte
/// `(b mod blocks on the disk) x block_size` (see [`DiskFetch`]). One fetch is in progress at
/// a time per fetch slot (the engine serialises them), so the model sees its requests in issue
/// order. Ticks are nanoseconds of the model (microseconds for a disk of [`FetchTime::Disk`]).
pub(crate) struct FetchDevice {
    model: Box<dyn disk::DiskModel>,
    nanos_per_tick: u64,
    block_size: u64,
    /// Blocks the disk holds, for a model whose time depends on the place; `None` otherwise.
    blocks_on_disk: Option<u64>,
}

impl FetchDevice {
    /// A model whose fetch time does not depend on the block, with ticks of one nanosecond.
    fn unaddressed(model: Box<dyn disk::DiskModel>) -> FetchDevice {
        FetchDevice {
            model,
            nanos_per_tick: 1,
            block_size: 1,
            blocks_on_disk: None,
        }
    }

    /// Duration of a fetch of trace block `block` issued at time `now`; at least one tick.
    pub(crate) fn fetch_time(&mut self, block: u64, now: Time) -> Time {
        let at = Duration::from_nanos(now.saturating_mul(self.nanos_per_tick));
        let request = disk::Request {
            id: block,
            addr: self
                .blocks_on_disk
                .map_or(0, |n| (block % n) * self.block_size),
            len: self.block_size,
            arrival: at,
        };
        let service = self.model.service(at, &request);
        let nanos = service
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(service.subsec_nanos()));
        match self.nanos_per_tick {
            1 => nanos,
            n => nanos / n,
        }
        .max(1)
    }

    /// Bytes of a block, as the device places blocks (1 for a device that ignores the place).
    pub(crate) fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Whether the duration depends on the block (a disk's place); the engine looks up a
    /// block's trace number only for devices that read it.
    pub(crate) fn addressed(&self) -> bool {
        self.blocks_on_disk.is_some()
    }
}

/// The device as a model whose durations are ticks (one nanosecond of a returned duration a
/// tick, `now` in ticks too), for the disk-timed loop running Cao's policies: a request of
/// any length at byte `b x block_size` is the fetch of block `b`, timed as Cao's model times a
/// fetch of block `b`.
impl disk::DiskModel for FetchDevice {
    fn service(&mut self, now: Duration, request: &disk::Request) -> Duration {
        let block = request.addr / self.block_size;
        Duration::from_nanos(self.fetch_time(block, now.as_nanos() as Time))
    }

    fn head(&self) -> u64 {
        self.model.head()
    }

    fn capacity(&self) -> u64 {
        u64::MAX
    }
}

/// Fetch times drawn uniformly around a mean (the realistic model's measured disk time), as a
/// disk model whose ticks are nanoseconds.
struct UniformModel {
    low: Time,
    high: Time,
    rng: SmallRng,
}

impl disk::DiskModel for UniformModel {
    fn service(&mut self, _now: Duration, _req: &disk::Request) -> Duration {
        Duration::from_nanos(self.rng.gen_range(self.low..=self.high))
    }

    fn head(&self) -> u64 {
        0
    }

    fn capacity(&self) -> u64 {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_fetch_times_stay_in_range_and_repeat_for_a_seed() {
        let timing = Timing {
            reference: ReferenceTime::FromTrace,
            fetch: FetchTime::Uniform {
                mean: 10,
                spread: 3,
                seed: 5,
            },
        };
        let draw = || {
            let mut device = timing.device();
            (0..200)
                .map(|i| device.fetch_time(i, 0))
                .collect::<Vec<_>>()
        };
        let times = draw();
        assert!(times.iter().all(|t| (7..=13).contains(t)));
        assert!(times.iter().any(|&t| t != times[0]));
        assert_eq!(times, draw());
    }

    #[test]
    fn absurd_durations_are_rejected() {
        for (reference, fetch) in [(0, 1), (1, 0), (1 << 41, 1), (1, u64::MAX)] {
            let timing = Timing {
                reference: ReferenceTime::Uniform(reference),
                fetch: FetchTime::Constant(fetch),
            };
            assert!(timing.validate().is_err(), "{reference} {fetch}");
        }
    }

    #[test]
    fn a_spread_as_large_as_the_mean_is_rejected() {
        let timing = Timing {
            reference: ReferenceTime::Uniform(1),
            fetch: FetchTime::Uniform {
                mean: 4,
                spread: 4,
                seed: 0,
            },
        };
        assert!(timing.validate().is_err());
    }
}
