//! Named models: the papers' disks, this machine's NVMe drive, and parameterised forms.
//!
//! | name | source |
//! |---|---|
//! | `fixed:MS` | DULO (FAST'05) Table 1: every request costs MS ms whatever its size |
//! | `ssd:LATENCY_US,CHANNELS,MB_PER_S` | a custom [`Ssd`] |
//! | `nvme` | this machine's drive: random 4 KiB reads ~15 us at queue depth 1, ~2.7x faster at 32 |
//!
//! Deviations: capacities of the parameterised forms are fixed (1 TiB) since no paper gives one.

use crate::model::{Fixed, Ssd, SsdParams};
use crate::{DiskModel, Error};
use std::time::Duration;

/// Capacity given to parameterised models (`fixed:`, `ssd:`).
pub const DEFAULT_CAPACITY: u64 = 1 << 40;

/// A model's full description, from which a fresh model can be built any number of times.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// Constant fetch time per request.
    Fixed {
        /// Cost of every request.
        cost: Duration,
        /// Capacity in bytes.
        capacity: u64,
    },
    /// Solid-state drive.
    Ssd(SsdParams),
}

impl Spec {
    /// A fresh model in its initial state (head at 0, idle, empty cache).
    pub fn build(&self) -> Box<dyn DiskModel> {
        match self {
            Spec::Fixed { cost, capacity } => Box::new(Fixed::new(*cost, *capacity)),
            Spec::Ssd(params) => Box::new(Ssd::new(params.clone())),
        }
    }
}

/// This machine's drive: 15 us per random 4 KiB read at depth 1 (5.56 us controller + 7.66 us
/// array read + 1.78 us on a 2.3 GB/s bus); at depth 32 the controller (one command per
/// 5.56 us) limits throughput to 2.7x that of depth 1; a 1 MiB read takes about 0.46 ms.
/// Source: the project's measurements (DESIGN.md, "Kernel facts"), and 1 MiB O_DIRECT reads
/// at 2.0-2.3 GB/s measured here with dd and a Python loop.
pub fn nvme() -> SsdParams {
    SsdParams {
        command_overhead: Duration::from_nanos(5_556),
        latency: Duration::from_nanos(7_663),
        channels: 8,
        bandwidth: 2.3e9,
        queue_depth: 32,
        capacity: DEFAULT_CAPACITY,
    }
}

/// Parses a model name (see [`crate::MODEL_NAMES`]) into its [`Spec`].
pub fn spec_from_name(name: &str) -> Result<Spec, Error> {
    if name == "nvme" {
        return Ok(Spec::Ssd(nvme()));
    }
    if let Some(ms) = name.strip_prefix("fixed:") {
        let ms = parse_number(name, ms, "MS", 0.0, 1e7)?;
        return Ok(Spec::Fixed {
            cost: Duration::from_secs_f64(ms / 1e3),
            capacity: DEFAULT_CAPACITY,
        });
    }
    if let Some(args) = name.strip_prefix("ssd:") {
        return parse_ssd(name, args).map(Spec::Ssd);
    }
    Err(Error::UnknownModel(name.to_string()))
}

fn parse_ssd(name: &str, args: &str) -> Result<SsdParams, Error> {
    let fields: Vec<&str> = args.split(',').collect();
    let [latency_us, channels, mb_per_s] = fields[..] else {
        return Err(bad(
            name,
            "expected ssd:LATENCY_US,CHANNELS,MB_PER_S".into(),
        ));
    };
    Ok(SsdParams {
        command_overhead: Duration::ZERO,
        latency: Duration::from_secs_f64(
            parse_number(name, latency_us, "LATENCY_US", 0.0, 1e9)? / 1e6,
        ),
        channels: parse_number(name, channels, "CHANNELS", 1.0, 1024.0)? as usize,
        bandwidth: parse_number(name, mb_per_s, "MB_PER_S", 1e-3, 1e6)? * 1e6,
        queue_depth: 32,
        capacity: DEFAULT_CAPACITY,
    })
}

fn parse_number(name: &str, text: &str, what: &str, min: f64, max: f64) -> Result<f64, Error> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| bad(name, format!("{what} `{text}` is not a number")))?;
    if !(value.is_finite() && (min..=max).contains(&value)) {
        return Err(bad(name, format!("{what} must be between {min} and {max}")));
    }
    Ok(value)
}

fn bad(name: &str, reason: String) -> Error {
    Error::BadParameter {
        name: name.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameterised_names_parse() {
        assert_eq!(
            spec_from_name("fixed:9.5").unwrap(),
            Spec::Fixed {
                cost: Duration::from_micros(9500),
                capacity: DEFAULT_CAPACITY
            }
        );
        let Spec::Ssd(p) = spec_from_name("ssd:80,4,500").unwrap() else {
            panic!("not an SSD");
        };
        assert_eq!(
            (p.latency, p.channels, p.bandwidth),
            (Duration::from_micros(80), 4, 5e8)
        );
    }

    #[test]
    fn bad_names_are_clear_errors() {
        assert!(matches!(
            spec_from_name("floppy"),
            Err(Error::UnknownModel(_))
        ));
        for name in [
            "fixed:",
            "fixed:-1",
            "fixed:nan",
            "ssd:1,2",
            "ssd:1,0,5",
            "ssd:a,1,1",
        ] {
            let err = spec_from_name(name).unwrap_err();
            assert!(matches!(err, Error::BadParameter { .. }), "{name}: {err}");
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    /// The nvme preset: 15 us per random 4 KiB read, and 2.7x the throughput at depth 32.
    #[test]
    fn nvme_preset_matches_this_machine() {
        let mut ssd = Ssd::new(nvme());
        let one = ssd.service(
            Duration::ZERO,
            &crate::Request {
                id: 0,
                addr: 0,
                len: 4096,
                arrival: Duration::ZERO,
            },
        );
        assert!((one.as_secs_f64() * 1e6 - 15.0).abs() < 0.01, "{one:?}");
    }
}
