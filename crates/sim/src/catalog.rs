//! Every policy the simulator runs, in one table with one line per policy ([`CATALOG`]), and
//! the devices they run on ([`Device`]): what `prefetch sim --policy NAME[:key=value,...]
//! --device DEVICE` names, and `prefetch sim --list` prints.
//!
//! One loop runs them all, the disk-timed event loop ([`crate::disksim`]), through one
//! interface, [`crate::Policy`], which policies implement in one of two ways. Cao et al.'s
//! policies, and the demand-paging baselines LRU, FIFO and CLOCK, decide every fetch when the
//! device is idle (the future at hand, Cao's fetch device, [`crate::disksim::cao`]); DULO,
//! Linux read-ahead, TR840's AP, CP and CPEM, and libprefetch's reorder buffer and planner
//! decide at each reference, as a replacement policy plus a prefetcher joined by
//! [`crate::disksim::Paired`]. Either kind runs on either kind of device:
//!
//! - `unit:F` (Cao's simplified model): a reference takes one time unit, a fetch F units. For a
//!   replacement and prefetcher this is a disk whose every request costs F units, whatever its
//!   length (`fixed:F` in milliseconds, one reference taking 1 ms; microseconds in the
//!   realistic model), so a read-ahead of 16 blocks costs one fetch time, and CP and CPEM,
//!   which weigh a switch against the transfer rate, take their depth as an option there.
//! - `MODEL[:SCHEDULER]`: a disk model of the `disk` crate (`st3500320as`, `fixed:MS`, ...)
//!   and, for a replacement and prefetcher, its request scheduler (default `clook`); times are
//!   in microseconds and a reference takes 1 us (or its compute time in the trace, realistic
//!   model). For Cao's policies each fetch is one one-block request to the model.
//!
//! Both kinds take their fetch times from a `disk::DiskModel`, report one [`Metrics`] (a
//! reference to a block still in flight is a *miss*, as in Cao et al.) and fail with one
//! [`SimError`]; on demand LRU over `unit:F` they agree exactly (`tests/one_loop.rs`).
//!
//! Each line of the table gives a policy's name, paper section, options and constructor; the
//! constructor gives a [`Configured`] policy, which a sweep runs on any trace, cache size and
//! device. It refuses options where the policy takes none (Cao's) and hands the others to the
//! part that takes them, whose own constructor checks their keys and values when a run builds
//! it.
//!
//! The lines themselves are written once, in `catalog/lines.rs`, which also declares the file
//! each line brings in its parent module (`policy/`, `disksim/replace/`,
//! `disksim/prefetch/`): adding a policy is its file plus its line.
//!
//! `REPLACEMENT+PREFETCHER` ([`Choice`](crate::choice::Choice)) pairs the replacement of any
//! line (a pair's, or a demand-paging policy's through [`replace::demand`]) with the prefetcher
//! of any pair's line (or `none`), so a replacement or a prefetcher added with its line pairs
//! with all the others.
//!
//! Deviations: Cao's integrated policies cannot be split into the other kind's parts (e.g.
//! `aggressive`'s replacement with a read-ahead prefetcher), and Cao's policies give a disk
//! model one one-block request at a time without its scheduler.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::disksim::engine::EngineConfig;
use crate::disksim::prefetch::{self, Disk, MakePrefetcher};
use crate::disksim::replace::{self, MakeReplacement};
use crate::disksim::schedulers::io_scheduler_from_name;
use crate::disksim::{run_pair, Pair, PolicySpec, Workload};
use crate::metrics::Metrics;
use crate::policy::{self, PolicyInfo};
use crate::time::{DiskFetch, Time};
use crate::SimError;

pub(crate) mod lines;

/// A policy's options, `key=value` in the order given.
pub type Options = [(String, String)];

/// Builds a policy from its options: what it will run as, before any run.
pub type Constructor = fn(&Options) -> Result<Configured, SimError>;

/// One registered policy: one line of [`CATALOG`].
#[derive(Debug)]
pub struct Entry {
    /// Name on the command line.
    pub name: &'static str,
    /// Where it comes from (paper and section).
    pub section: &'static str,
    /// Its `key=value` options and defaults ("-" when none).
    pub params: &'static str,
    /// Builds it from its options.
    pub build: Constructor,
}

/// A policy built from its options, ready to run on any trace, cache size and device.
#[derive(Clone, Debug)]
pub struct Configured(pub(crate) Form);

/// How a configured policy drives the loop.
#[derive(Clone, Debug)]
pub(crate) enum Form {
    /// A [`crate::Policy`] deciding when the device is idle ([`crate::disksim::cao`]).
    AtIdle(&'static PolicyInfo),
    /// A replacement policy and a prefetcher, configured.
    Pair(Pair),
}

impl Configured {
    /// Whether the policy needs the whole trace in memory.
    pub fn needs_future(&self) -> bool {
        match &self.0 {
            Form::AtIdle(info) => info.needs_future,
            Form::Pair(_) => false,
        }
    }

    /// The [`crate::Policy`] it runs, if it is one of Cao's.
    pub fn cao_policy(&self) -> Option<&'static PolicyInfo> {
        match self.0 {
            Form::AtIdle(info) => Some(info),
            Form::Pair(_) => None,
        }
    }

    /// The replacement policy and prefetcher it runs, if it is a pair.
    pub fn pair(&self) -> Option<&Pair> {
        match &self.0 {
            Form::Pair(pair) => Some(pair),
            Form::AtIdle(_) => None,
        }
    }

    /// Its replacement, for the left side of `REPLACEMENT+PREFETCHER`: a pair's replacement
    /// part, or a demand-paging policy as a replacement ([`replace::demand`]); an error for
    /// a policy that prefetches by itself or needs the whole trace.
    pub(crate) fn replacement(&self) -> Result<Arc<dyn MakeReplacement>, SimError> {
        match &self.0 {
            Form::Pair(pair) => Ok(Arc::clone(&pair.replacement)),
            Form::AtIdle(info) => Ok(Arc::new(replace::demand::Options::of(info)?)),
        }
    }

    /// Its prefetcher, for the right side of `REPLACEMENT+PREFETCHER`: a pair's prefetcher
    /// part; an error for one of Cao's policies, which has no prefetcher of its own.
    pub(crate) fn prefetcher(&self, name: &str) -> Result<Arc<dyn MakePrefetcher>, SimError> {
        match &self.0 {
            Form::Pair(pair) => Ok(Arc::clone(&pair.prefetcher)),
            Form::AtIdle(_) => Err(SimError::Config(format!(
                "{name} is not a prefetcher; after `+` name one of: {}",
                prefetcher_names().join(", ")
            ))),
        }
    }
}

/// The constructor of one of Cao's policies: it takes no options.
fn at_idle(info: &'static PolicyInfo, options: &Options) -> Result<Configured, SimError> {
    match options.is_empty() {
        true => Ok(Configured(Form::AtIdle(info))),
        false => Err(SimError::Config("takes no options".into())),
    }
}

/// The options `given` to the part `name`, to be read into its typed configuration.
pub(crate) fn to(name: &str, given: &Options) -> PolicySpec {
    PolicySpec::with(name, given)
}

/// No options: a part's defaults.
fn defaults() -> PolicySpec {
    PolicySpec::named("")
}

/// The constructor of a replacement policy and a prefetcher, each configured.
fn pair(
    replacement: impl MakeReplacement + 'static,
    prefetcher: impl MakePrefetcher + 'static,
) -> Result<Configured, SimError> {
    Ok(Configured(Form::Pair(Pair::new(replacement, prefetcher))))
}

/// CPEM: the prefetch memory's options go to its replacement policy, `depth` to CP.
fn cpem(given: &Options) -> Result<Configured, SimError> {
    let (depth, memory): (Vec<_>, Vec<_>) = given.iter().cloned().partition(|(k, _)| k == "depth");
    pair(
        prefetch::cpem::Options::parse(&to("cpem", &memory))?,
        prefetch::competitive::Options::parse(&to("competitive", &depth))?,
    )
}

/// The live planner over CLOCK with the schedule `schedule` (the user's options after it).
fn planner(schedule: &str, given: &Options) -> Result<Configured, SimError> {
    let mut options = vec![("schedule".to_string(), schedule.to_string())];
    options.extend_from_slice(given);
    let prefetcher = prefetch::planner::Options::parse(&to("planner", &options))?;
    pair(replace::clock::Options, prefetcher)
}

const fn line(
    name: &'static str,
    section: &'static str,
    params: &'static str,
    build: Constructor,
) -> Entry {
    Entry {
        name,
        section,
        params,
        build,
    }
}

/// A prefetcher over CLOCK, the replacement of the prefetchers' lines.
fn over_clock(prefetcher: impl MakePrefetcher + 'static) -> Result<Configured, SimError> {
    pair(replace::clock::Options, prefetcher)
}

/// A replacement policy with no prefetcher, demand fetching.
fn alone(replacement: impl MakeReplacement + 'static) -> Result<Configured, SimError> {
    pair(replacement, prefetch::none::Options)
}

/// Writes [`CATALOG`] from the lines of `lines!`, in their order.
macro_rules! table {
    ($($(mod $kind:ident::$file:ident)? ($name:literal, $section:literal, $params:literal,
        $build:expr $(,)?),)*) => {
        /// Every policy, one line each: name, paper and section, options, constructor, in
        /// the order of the lines (`catalog/lines.rs`).
        pub const CATALOG: &[Entry] = &[$(line($name, $section, $params, $build)),*];
    };
}
lines::lines!(table);

/// Cao's policies, each once (aliases such as `lru` left out), in the order of
/// the table: Cao et al.'s Figure 3 legend, the exact optimum, then demand FIFO and CLOCK.
pub fn reference_policies() -> impl Iterator<Item = &'static PolicyInfo> {
    CATALOG.iter().filter_map(|e| {
        let info = (e.build)(&[]).ok()?.cao_policy()?;
        (info.name == e.name).then_some(info)
    })
}

/// Cao's policy registered as `name` in the [`catalog`](crate::catalog).
pub fn find(name: &str) -> Result<&'static PolicyInfo, SimError> {
    let entry = entry(name)?;
    (entry.build)(&[])?.cao_policy().ok_or_else(|| {
        SimError::Config(format!(
            "{name} is a replacement policy and a prefetcher, not a policy of Cao's"
        ))
    })
}

/// The entry named `name`, or an error listing the names.
pub fn entry(name: &str) -> Result<&'static Entry, SimError> {
    CATALOG.iter().find(|e| e.name == name).ok_or_else(|| {
        let known: Vec<_> = CATALOG.iter().map(|e| e.name).collect();
        SimError::Config(format!(
            "unknown policy {name:?}; known: {} (prefetch sim --list)",
            known.join(", ")
        ))
    })
}

/// Splits a `--device` list, `unit:10,st3500320as:fifo,ssd:100,8,500`, into devices: an item
/// starting with a digit is a parameter of the device before it
/// (`ssd:LATENCY_US,CHANNELS,MB_PER_S`, `hdd:RPM,AVG_SEEK_MS,MB_PER_S`), since every device's
/// name starts with a letter.
pub fn parse_devices(list: &str) -> Result<Vec<Device>, SimError> {
    let mut texts: Vec<String> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match texts.last_mut() {
            Some(last) if item.starts_with(|c: char| c.is_ascii_digit() || c == '.') => {
                last.push(',');
                last.push_str(item);
            }
            _ => texts.push(item.to_string()),
        }
    }
    texts.iter().map(|t| t.parse()).collect()
}

/// Where fetches go.
#[derive(Clone, Debug)]
pub enum Device {
    /// Cao's simplified model: references take 1 unit, fetches `fetch` units.
    Unit {
        /// The fetch time F in units.
        fetch: Time,
    },
    /// A disk model of the `disk` crate with a request scheduler; times in microseconds.
    Disk {
        /// The model's name, as given.
        model: String,
        /// The model, described and measured once (its curves), shared by every run on it.
        disk: Disk,
        /// The request scheduler (for a replacement policy and a prefetcher).
        scheduler: String,
    },
}

impl Device {
    /// How the device is written on the command line.
    pub fn label(&self) -> String {
        match self {
            Device::Unit { fetch } => format!("unit:{fetch}"),
            Device::Disk {
                model, scheduler, ..
            } => format!("{model}:{scheduler}"),
        }
    }

    /// The unit of the times reported on this device.
    pub fn time_unit(&self) -> &'static str {
        match self {
            Device::Unit { .. } => "units",
            Device::Disk { .. } => "us",
        }
    }
}

impl FromStr for Device {
    type Err = SimError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let config = |e: String| SimError::Config(format!("device {text:?}: {e}"));
        if let Some(fetch) = text.strip_prefix("unit:") {
            let fetch: Time = fetch
                .parse()
                .map_err(|_| config("unit:F takes a whole number of units".into()))?;
            return match fetch {
                0 => Err(config("the fetch time must be at least 1".into())),
                fetch => Ok(Device::Unit { fetch }),
            };
        }
        let (model, scheduler) = split_device(text).map_err(|e| config(e.to_string()))?;
        let spec = disk::spec_from_name(model).map_err(|e| config(e.to_string()))?;
        spec.build().map_err(|e| config(e.to_string()))?;
        io_scheduler_from_name(scheduler).map_err(|e| config(e.to_string()))?;
        Ok(Device::Disk {
            model: model.to_string(),
            disk: Disk::new(Arc::new(spec)),
            scheduler: scheduler.to_string(),
        })
    }
}

/// The model and scheduler of a device, `MODEL[:SCHEDULER]` (`clook` if none): the longest prefix
/// that names a model. Where none does, the error of a model given with a bad parameter and
/// followed by a scheduler or nothing (`ssd:100,0,500`: CHANNELS and its range), else the whole
/// text's as a model name.
fn split_device(text: &str) -> Result<(&str, &str), disk::Error> {
    let whole = std::iter::once((text, ""));
    let splits = whole.chain(
        text.rmatch_indices(':')
            .map(|(at, _)| (&text[..at], &text[at + 1..])),
    );
    let mut parameter = None;
    let mut first = None;
    for (model, scheduler) in splits {
        match disk::spec_from_name(model) {
            Ok(_) if scheduler.is_empty() => return Ok((model, "clook")),
            Ok(_) => return Ok((model, scheduler)),
            Err(error @ disk::Error::BadParameter { .. })
                if parameter.is_none()
                    && (scheduler.is_empty() || io_scheduler_from_name(scheduler).is_ok()) =>
            {
                parameter = Some(error)
            }
            Err(error) => {
                first.get_or_insert(error);
            }
        }
    }
    Err(parameter
        .or(first)
        .unwrap_or_else(|| disk::Error::UnknownModel(text.to_string())))
}

impl Device {
    /// The fetch time model of Cao's policies on this device.
    pub(crate) fn fetch_time(&self, block_size: u64) -> crate::time::FetchTime {
        match self {
            Device::Unit { fetch } => crate::time::FetchTime::Constant(*fetch),
            Device::Disk { disk, .. } => crate::time::FetchTime::Disk(DiskFetch {
                spec: Arc::clone(&disk.spec),
                block_size,
            }),
        }
    }
}

/// Runs a replacement policy and a prefetcher over `workload` with a cache of `capacity`
/// blocks on `device`; times in the device's unit. With the `realistic` model's compute
/// times (microseconds), `unit:F` is a fetch of F microseconds, as for Cao's policies.
pub(crate) fn run_parts(
    pair: &Pair,
    workload: &Workload,
    capacity: usize,
    (device, realistic): (&Device, bool),
) -> Result<Metrics, SimError> {
    let fixed;
    let (disk, scheduler, tick) = match device {
        Device::Unit { fetch } => {
            let (cost, tick) = match realistic {
                true => (Duration::from_micros(*fetch), Duration::from_micros(1)),
                false => (Duration::from_millis(*fetch), Duration::from_millis(1)),
            };
            fixed = Disk::new(Arc::new(disk::Spec::Fixed {
                cost,
                capacity: disk::preset::DEFAULT_CAPACITY,
            }));
            (&fixed, "fifo", tick)
        }
        Device::Disk {
            disk, scheduler, ..
        } => (disk, scheduler.as_str(), Duration::from_micros(1)),
    };
    // A reference takes one tick, or, in the realistic model, the compute time in the trace
    // alone (the workload's think times), as for Cao's policies.
    let config = EngineConfig {
        hit_time: match realistic {
            true => Duration::ZERO,
            false => tick,
        },
        ..EngineConfig::with_cache(capacity)
    };
    let metrics = run_pair(pair, workload, (disk, scheduler), config)?;
    Ok(metrics.in_ticks_of(crate::metrics::nanos(tick)))
}

/// The names that may follow `+`: `none` and every entry that pairs a prefetcher with a
/// replacement, whose prefetcher it names.
pub fn prefetcher_names() -> Vec<&'static str> {
    let pairs = CATALOG
        .iter()
        .filter(|e| (e.build)(&[]).is_ok_and(|c| matches!(c.0, Form::Pair(_))));
    let mut names = vec![NO_PREFETCHER];
    names.extend(pairs.map(|e| e.name));
    names
}

/// The names that may precede `+`: every line whose replacement pairs (a pair's, or a demand
/// policy's).
pub fn replacement_names() -> Vec<&'static str> {
    let pairs = CATALOG
        .iter()
        .filter(|e| (e.build)(&[]).is_ok_and(|c| c.replacement().is_ok()));
    pairs.map(|e| e.name).collect()
}

/// The prefetcher `+none`: demand fetching.
pub(crate) const NO_PREFETCHER: &str = "none";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_alias_names_a_listed_policy() {
        let mut names: Vec<_> = CATALOG.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CATALOG.len());
        for entry in CATALOG {
            if let Some(info) = (entry.build)(&[]).unwrap().cao_policy() {
                assert!(
                    reference_policies().any(|p| p.name == info.name),
                    "{} is not in the catalog under its own name",
                    info.name
                );
            }
        }
        assert_eq!(reference_policies().count(), 11);
    }

    /// In both models a demand LRU paired with no prefetcher takes as long as Cao's LRU-demand
    /// on `unit:F`: a reference costs one unit, or, realistic, its compute time in the trace
    /// (microseconds, F too), and the two kinds of policy agree on the time they report.
    #[test]
    fn demand_lru_of_either_kind_takes_the_same_time_in_both_models() {
        use crate::time::{FetchTime, ReferenceTime, Timing};
        use crate::trace::Reference;
        let blocks = [1u64, 2, 3, 1, 4, 2, 5, 1, 3, 6, 2, 1];
        let references: Vec<Reference> = blocks
            .iter()
            .enumerate()
            .map(|(i, &block)| Reference {
                block,
                // No compute time after the last reference, as trace readers give it.
                think: Some(if i + 1 < blocks.len() {
                    100 + 37 * i as u64
                } else {
                    0
                }),
            })
            .collect();
        let pair = Pair::new(replace::lru::Options, prefetch::none::Options);
        for realistic in [false, true] {
            let workload =
                Workload::from_references(references.iter().cloned().map(Ok), 8192, realistic)
                    .unwrap();
            let device = Device::Unit { fetch: 250 };
            let paired = run_parts(&pair, &workload, 3, (&device, realistic)).unwrap();
            let setup = crate::RunSetup {
                timing: Timing {
                    reference: match realistic {
                        true => ReferenceTime::FromTrace,
                        false => ReferenceTime::Uniform(1),
                    },
                    fetch: FetchTime::Constant(250),
                },
                ..crate::RunSetup::simplified(3, 250)
            };
            let stream = references.iter().cloned().map(Ok);
            let cao = crate::run_stream(&policy::lru_demand::INFO, stream, &setup).unwrap();
            assert_eq!(
                (paired.elapsed, paired.stall, paired.misses),
                (cao.elapsed, cao.stall, cao.misses),
                "realistic: {realistic}"
            );
        }
    }

    /// A demand policy paired with no prefetcher (`lru+none`) is the same policy: its misses
    /// on `unit:1` equal its own run's at every size, for each demand policy of the catalog.
    #[test]
    fn devices_parse_with_and_without_a_scheduler() {
        assert!(matches!(
            "unit:10".parse::<Device>(),
            Ok(Device::Unit { fetch: 10 })
        ));
        assert!("unit:0".parse::<Device>().is_err());
        let d: Device = "fixed:9.5".parse().unwrap();
        assert_eq!(d.label(), "fixed:9.5:clook");
        let d: Device = "st3500320as:fifo".parse().unwrap();
        assert_eq!(d.label(), "st3500320as:fifo");
        assert!("st3500320as:nope".parse::<Device>().is_err());
        assert!("nodisk".parse::<Device>().is_err());
    }

    #[test]
    fn a_bad_device_parameter_is_named_with_its_range() {
        let error = |text: &str| text.parse::<Device>().err().unwrap().to_string();
        for (text, says) in [
            ("ssd:100,0,500", "CHANNELS must be between 1 and 1024"),
            ("hdd:0,5,100", "RPM must be between 1000 and 30000"),
            ("hdd:0,5,100:fifo", "RPM must be between 1000 and 30000"),
            ("fixed:-5", "MS must be between 0 and"),
            ("nvme:deadline:-1", "expiry must be between 0 and 1e9 ms"),
            ("nodisk", "unknown disk model `nodisk`"),
        ] {
            assert!(error(text).contains(says), "{text}: {}", error(text));
        }
        let d: Device = "nvme:deadline:0".parse().unwrap();
        assert_eq!(d.label(), "nvme:deadline:0");
    }

    #[test]
    fn a_device_list_keeps_a_models_parameters_together() {
        let devices = parse_devices("unit:10,ssd:100,8,500,hdd:7200,8.5,100:fifo,nvme").unwrap();
        let labels: Vec<String> = devices.iter().map(Device::label).collect();
        assert_eq!(
            labels,
            [
                "unit:10",
                "ssd:100,8,500:clook",
                "hdd:7200,8.5,100:fifo",
                "nvme:clook"
            ]
        );
        assert!(parse_devices("ssd:100,8").is_err());
    }
}
