//! Every policy the simulator runs, in one table with one line per policy ([`CATALOG`]), and
//! the devices they run on ([`Device`]): what `prefetch sim --policy NAME[:key=value,...]
//! --device DEVICE` names, and `prefetch sim --list` prints.
//!
//! One loop runs them all, the disk-timed event loop ([`crate::disksim`]), and policies come in
//! two kinds. Cao et al.'s policies, and the demand-paging baselines LRU, FIFO and CLOCK,
//! implement [`crate::Policy`] (decisions at every opportunity, the future at hand) and run
//! through [`crate::disksim::cao`] (decisions when the device is idle, Cao's fetch device);
//! DULO, Linux read-ahead, TR840's AP, CP and CPEM, and libprefetch's reorder buffer and
//! planner are a replacement policy plus a prefetcher. Either kind runs on either kind of
//! device:
//!
//! - `unit:F` (Cao's simplified model): a reference takes one time unit, a fetch F units. For a
//!   replacement and prefetcher this is a disk whose every request costs F units, whatever its
//!   length (`fixed:F` in milliseconds, one reference taking 1 ms), so a read-ahead of 16
//!   blocks costs one fetch time.
//! - `MODEL[:SCHEDULER]`: a disk model of the `disk` crate (`st3500320as`, `fixed:MS`, ...)
//!   and, for a replacement and prefetcher, its request scheduler (default `clook`); times are
//!   in microseconds and a reference takes 1 us (or its compute time in the trace, realistic
//!   model). For Cao's policies each fetch is one one-block request to the model.
//!
//! Both kinds take their fetch times from a `disk::DiskModel`, report one [`Metrics`] (a
//! reference to a block still in flight is a *miss*, as in Cao et al.) and fail with one
//! [`SimError`]; on demand LRU over `unit:F` they agree exactly (`tests/one_loop.rs`).
//!
//! Deviations: the two kinds are not yet one policy interface, so a policy of one kind cannot
//! be combined with the other's parts (e.g. Cao's `aggressive` replacement with a read-ahead
//! prefetcher), and Cao's policies give a disk model one one-block request at a time without
//! its scheduler. The `engine` column and field still name the kind as the two loops did
//! (`reference` for Cao's policies, `disk-timed` for the others).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::disksim::engine::{run, EngineConfig, Parts};
use crate::disksim::iosched::io_scheduler_from_name;
use crate::disksim::prefetch::{prefetcher_from, PrefetchSetup};
use crate::disksim::replace::{replacement_from, CacheGeometry};
use crate::disksim::{PolicySpec, Workload};
use crate::metrics::Metrics;
use crate::policy::{self, PolicyInfo};
use crate::time::{DiskFetch, Time};
use crate::SimError;

/// Which kind of policy it is, and what runs it on the loop.
#[derive(Debug)]
pub enum Engine {
    /// One of Cao et al.'s policies.
    Unit(&'static PolicyInfo),
    /// A replacement policy and a prefetcher (specs with their
    /// fixed options); the user's options go to the part named by `options`.
    Disk {
        /// Replacement spec (`disksim::replace::REPLACEMENTS`).
        replacement: &'static str,
        /// Prefetcher spec (`disksim::prefetch::PREFETCHERS`).
        prefetcher: &'static str,
        /// Which part takes the `key=value` options given on the command line.
        options: Part,
    },
}

/// A part of a disk-timed policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The replacement policy.
    Replacement,
    /// The prefetcher.
    Prefetcher,
}

/// One registered policy.
#[derive(Debug)]
pub struct Entry {
    /// Name on the command line.
    pub name: &'static str,
    /// Where it comes from (paper and section).
    pub section: &'static str,
    /// Its `key=value` options and defaults ("-" when none).
    pub params: &'static str,
    /// How it runs.
    pub engine: Engine,
}

const fn unit(name: &'static str, section: &'static str, info: &'static PolicyInfo) -> Entry {
    Entry {
        name,
        section,
        params: "-",
        engine: Engine::Unit(info),
    }
}

const fn disk(
    name: &'static str,
    section: &'static str,
    params: &'static str,
    (replacement, prefetcher, options): (&'static str, &'static str, Part),
) -> Entry {
    Entry {
        name,
        section,
        params,
        engine: Engine::Disk {
            replacement,
            prefetcher,
            options,
        },
    }
}

use Part::{Prefetcher as P, Replacement as R};

/// Every policy, one line each.
pub const CATALOG: &[Entry] = &[
    unit(
        "lru",
        "demand LRU (Cao s4.1 LRU-demand; libCacheSim LRU)",
        &policy::lru_demand::INFO,
    ),
    unit(
        "lru-demand",
        "Cao et al. SIGMETRICS'95 s4.1",
        &policy::lru_demand::INFO,
    ),
    unit(
        "opt-demand",
        "Cao s4.1 (Belady's MIN)",
        &policy::opt_demand::INFO,
    ),
    unit(
        "lru-obl",
        "Cao s4.1 (one-block lookahead)",
        &policy::lru_obl::INFO,
    ),
    unit("opt-obl", "Cao s4.1", &policy::opt_obl::INFO),
    unit("lru-sensible", "Cao s4.1", &policy::lru_sensible::INFO),
    unit(
        "lru-throttled",
        "Cao s4.1 (informed prefetching)",
        &policy::lru_throttled::INFO,
    ),
    unit("aggressive", "Cao s2.5", &policy::aggressive::INFO),
    unit("conservative", "Cao s2.4", &policy::conservative::INFO),
    unit(
        "optimal",
        "Cao s3 (exhaustive search; small traces)",
        &policy::optimal::INFO,
    ),
    unit(
        "fifo",
        "demand FIFO (libCacheSim FIFO)",
        &policy::fifo::INFO,
    ),
    unit(
        "clock",
        "demand CLOCK, second chance (libCacheSim Clock)",
        &policy::clock::INFO,
    ),
    disk(
        "dulo",
        "DULO FAST'05 s3 (+ Linux read-ahead)",
        "bank=8M, evict=64M",
        ("dulo", "readahead", R),
    ),
    disk(
        "linux-readahead",
        "Linux read-ahead over CLOCK (TR840 s2.1)",
        "init=16, max=32",
        ("clock", "readahead", P),
    ),
    disk(
        "ap",
        "aggressive prefetching, TR840 s5.2",
        "depth=256",
        ("clock", "ap", P),
    ),
    disk(
        "cp",
        "competitive prefetching, TR840 s3",
        "-",
        ("clock", "competitive", P),
    ),
    disk(
        "cpem",
        "CP + CPEM prefetch memory, TR840 s4",
        "ceiling, unit, threshold=5, region",
        ("cpem", "competitive", R),
    ),
    disk(
        "reorder",
        "libprefetch reorder buffer, ATC'09 s3",
        "buffer, infill",
        ("clock", "reorder", P),
    ),
    disk(
        "libprefetch",
        "libprefetch planner, ATC'09 s4 (the live default schedule, by-shape)",
        "buffer, infill, batch, reserve, schedule",
        ("clock", "planner", P),
    ),
    disk(
        "libprefetch-window",
        "libprefetch planner, ATC'09 s3 window",
        "buffer, infill, batch",
        ("clock", "planner:schedule=window", P),
    ),
    disk(
        "libprefetch-aggressive",
        "libprefetch planner, Cao s2.5 schedule",
        "buffer, infill, batch",
        ("clock", "planner:schedule=aggressive", P),
    ),
    disk(
        "libprefetch-conservative",
        "libprefetch planner, Cao s2.4 schedule",
        "buffer, infill, batch, reserve",
        ("clock", "planner:schedule=conservative", P),
    ),
];

/// Cao's policies, each once (aliases such as `lru` left out), in the order of
/// the table: Cao et al.'s Figure 3 legend, the exact optimum, then demand FIFO and CLOCK.
pub fn reference_policies() -> impl Iterator<Item = &'static PolicyInfo> {
    CATALOG.iter().filter_map(|e| match e.engine {
        Engine::Unit(info) if info.name == e.name => Some(info),
        _ => None,
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

/// A policy as named on the command line: an entry and its options.
#[derive(Clone, Debug)]
pub struct Choice {
    /// The entry.
    pub entry: &'static Entry,
    /// `key=value` options, in the order given.
    pub options: Vec<(String, String)>,
}

impl Choice {
    /// The name with its options, as given (`dulo:bank=4M`).
    pub fn label(&self) -> String {
        let options: Vec<String> = self
            .options
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        match options.is_empty() {
            true => self.entry.name.to_string(),
            false => format!("{}:{}", self.entry.name, options.join(",")),
        }
    }

    /// Whether the policy needs the whole trace in memory.
    pub fn needs_future(&self) -> bool {
        match self.entry.engine {
            Engine::Unit(info) => info.needs_future,
            Engine::Disk { .. } => false,
        }
    }
}

impl FromStr for Choice {
    type Err = SimError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let entry = entry(name.trim())?;
        let mut options = Vec::new();
        for item in rest.split(',').filter(|s| !s.trim().is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(SimError::Config(format!(
                    "policy {text:?}: option {item:?} is not key=value"
                )));
            };
            options.push((key.trim().to_string(), value.trim().to_string()));
        }
        if matches!(entry.engine, Engine::Unit(_)) && !options.is_empty() {
            return Err(SimError::Config(format!(
                "policy {}: takes no options",
                entry.name
            )));
        }
        Ok(Choice { entry, options })
    }
}

/// Splits a `--policy` list, `a,b:k=v,k2=v2,c`, into policies: an item holding `=` is an
/// option of the policy before it.
pub fn parse_choices(list: &str) -> Result<Vec<Choice>, SimError> {
    let mut texts: Vec<String> = Vec::new();
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        match texts.last_mut() {
            Some(last) if item.contains('=') && !item.contains(':') => {
                last.push(',');
                last.push_str(item);
            }
            _ => texts.push(item.trim().to_string()),
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
        /// The model, described once.
        spec: Arc<disk::Spec>,
        /// The request scheduler of the disk-timed engine.
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
        let (model, scheduler) = match disk::spec_from_name(text) {
            Ok(_) => (text, "clook"),
            Err(_) => text.rsplit_once(':').unwrap_or((text, "clook")),
        };
        let spec = disk::spec_from_name(model).map_err(|e| config(e.to_string()))?;
        spec.build().map_err(|e| config(e.to_string()))?;
        io_scheduler_from_name(scheduler).map_err(|e| config(e.to_string()))?;
        Ok(Device::Disk {
            model: model.to_string(),
            spec: Arc::new(spec),
            scheduler: scheduler.to_string(),
        })
    }
}

impl Device {
    /// The fetch time model of Cao's policies on this device.
    pub(crate) fn fetch_time(&self, block_size: u64) -> crate::time::FetchTime {
        match self {
            Device::Unit { fetch } => crate::time::FetchTime::Constant(*fetch),
            Device::Disk { spec, .. } => crate::time::FetchTime::Disk(DiskFetch {
                spec: Arc::clone(spec),
                block_size,
            }),
        }
    }
}

/// Runs a disk-timed policy over `workload` with a cache of `capacity` blocks on `device`;
/// times in the device's unit.
pub(crate) fn run_disk(
    choice: &Choice,
    workload: &Workload,
    capacity: usize,
    device: &Device,
) -> Result<Metrics, SimError> {
    let Engine::Disk {
        replacement,
        prefetcher,
        options,
    } = choice.entry.engine
    else {
        return Err(SimError::Config(format!(
            "{} does not run on the disk-timed engine",
            choice.entry.name
        )));
    };
    let with_options = |base: &str, part: Part| -> Result<PolicySpec, SimError> {
        let mut text = base.to_string();
        if part == options {
            for (i, (k, v)) in choice.options.iter().enumerate() {
                let sep = if i == 0 && !base.contains(':') {
                    ':'
                } else {
                    ','
                };
                text.push_str(&format!("{sep}{k}={v}"));
            }
        }
        PolicySpec::parse(&text)
    };
    let fixed;
    let (disk, scheduler, tick) = match device {
        Device::Unit { fetch } => {
            fixed = disk::Spec::Fixed {
                cost: Duration::from_millis(*fetch),
                capacity: disk::preset::DEFAULT_CAPACITY,
            };
            (&fixed, "fifo", Duration::from_millis(1))
        }
        Device::Disk {
            spec, scheduler, ..
        } => (spec.as_ref(), scheduler.as_str(), Duration::from_micros(1)),
    };
    let geometry = CacheGeometry {
        capacity,
        block_size: workload.layout.block_size,
    };
    let mut replacement =
        replacement_from(&with_options(replacement, Part::Replacement)?, geometry)?;
    let setup = PrefetchSetup {
        workload,
        cache_blocks: capacity,
        disk,
    };
    let mut prefetcher = prefetcher_from(&with_options(prefetcher, Part::Prefetcher)?, &setup)?;
    let mut scheduler = io_scheduler_from_name(scheduler)?;
    let mut model = disk.build()?;
    let config = EngineConfig {
        hit_time: tick,
        ..EngineConfig::with_cache(capacity)
    };
    let parts = Parts {
        replacement: replacement.as_mut(),
        prefetcher: prefetcher.as_mut(),
        scheduler: scheduler.as_mut(),
        model: model.as_mut(),
    };
    let metrics = run(workload, config, parts, &mut |_| {})?;
    Ok(metrics.in_ticks_of(crate::metrics::nanos(tick)))
}

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
            if let Engine::Unit(info) = entry.engine {
                assert!(
                    reference_policies().any(|p| p.name == info.name),
                    "{} is not in the catalog under its own name",
                    info.name
                );
            }
        }
        assert_eq!(reference_policies().count(), 11);
    }

    #[test]
    fn a_policy_list_keeps_options_with_their_policy() {
        let choices = parse_choices("lru,dulo:bank=4M,evict=32M,ap:depth=64,clock").unwrap();
        let labels: Vec<_> = choices.iter().map(Choice::label).collect();
        assert_eq!(
            labels,
            ["lru", "dulo:bank=4M,evict=32M", "ap:depth=64", "clock"]
        );
        assert!(parse_choices("lru:x=1").is_err());
        assert!(parse_choices("nope").is_err());
    }

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
}
