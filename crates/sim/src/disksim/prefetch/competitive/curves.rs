//! The disk numbers competitive prefetching needs (TR840 s3: `C_switch = f_seek + f_rotation`,
//! `R_tr = f_transfer`), read off a disk model as the paper measures them at boot: the seek
//! curve and rotation from the model's parameters, the sequential transfer rate by timing reads
//! at evenly spaced locations. `plan::competitive` turns them into the depth `S_p`; the
//! simulator's devices build them once ([`super::super::Disk`]).

use std::sync::Arc;
use std::time::Duration;

use disk::model::Hdd;
use disk::{DiskModel as _, Spec};
use plan::competitive::DiskCurves;

/// Points at which the sequential rate of a hard disk model is measured.
const RATE_SAMPLES: u64 = 64;
/// Length of each rate-measuring read.
const RATE_READ: u64 = 4 << 20;

/// The disk numbers competitive prefetching needs, read off a disk model as the paper measures
/// them at boot: the seek curve and rotation from the model's parameters, the sequential
/// transfer rate by timing reads at evenly spaced locations (it includes head and cylinder
/// switches, which the media rate alone does not). Built once per device ([`super::super::Disk`]);
/// a clone shares the model and the rates.
#[derive(Clone, Debug)]
pub enum ModelCurves {
    /// A hard disk: seek curve over cylinders, measured rates, half a revolution.
    Hdd {
        /// The model (for its geometry and seek curve).
        hdd: Arc<Hdd>,
        /// Sequential rate (bytes per second) of each of `RATE_SAMPLES` equal slices of
        /// the disk, outer first.
        rates: Arc<[f64]>,
    },
    /// A device without seeks: a constant per-request cost and a rate.
    Flat {
        /// Cost of one switch.
        switch: Duration,
        /// Transfer rate, bytes per second.
        rate: f64,
    },
}

impl ModelCurves {
    /// The curves of the disk model named `name` (see `disk::MODEL_NAMES`). Models with no
    /// transfer rate (`fixed:`) have no competitive depth and are an error.
    pub fn from_model_name(name: &str) -> Result<ModelCurves, String> {
        let spec = disk::spec_from_name(name).map_err(|e| e.to_string())?;
        ModelCurves::from_spec(&spec).map_err(|e| format!("disk model `{name}`: {e}"))
    }

    /// The curves of the disk described by `spec`, parsed once by the caller.
    pub fn from_spec(spec: &Spec) -> Result<ModelCurves, String> {
        match spec.clone() {
            Spec::Hdd(params) => {
                let hdd = Hdd::new(params).map_err(|e| e.to_string())?;
                let rates = sequential_rates(&hdd).into();
                Ok(ModelCurves::Hdd {
                    hdd: Arc::new(hdd),
                    rates,
                })
            }
            Spec::Ssd(p) => Ok(ModelCurves::Flat {
                switch: p.command_overhead + p.latency,
                rate: p.bandwidth,
            }),
            Spec::Fixed { .. } => {
                Err("a fixed-time disk has no transfer rate, so no competitive depth".to_string())
            }
        }
    }
}

/// `f_transfer` measured: one read at the start of each slice of the disk, on a copy of the
/// model; the rate counts transfer only (not the seek and rotation to reach the slice).
fn sequential_rates(hdd: &Hdd) -> Vec<f64> {
    let mut probe = hdd.clone();
    let capacity = probe.capacity();
    let slice = capacity / RATE_SAMPLES;
    let mut now = Duration::ZERO;
    (0..RATE_SAMPLES)
        .map(|i| {
            let req = disk::Request {
                id: i,
                addr: i * slice,
                len: RATE_READ.min(capacity - i * slice),
                arrival: now,
            };
            now += probe.service(now, &req);
            let access = probe.last_access();
            req.len as f64 / (access.transfer + access.overhead).as_secs_f64()
        })
        .collect()
}

impl ModelCurves {
    /// Mean sequential rate over the whole disk, bytes per second.
    pub fn mean_rate(&self) -> f64 {
        match self {
            ModelCurves::Hdd { rates, .. } => rates.iter().sum::<f64>() / rates.len() as f64,
            ModelCurves::Flat { rate, .. } => *rate,
        }
    }
}

impl DiskCurves for ModelCurves {
    fn seek_time(&self, distance: u64, at: u64) -> Duration {
        match self {
            ModelCurves::Hdd { hdd, .. } => {
                let last = hdd.capacity() - 1;
                let geometry = hdd.geometry();
                let from = geometry.locate(at.min(last)).cyl;
                let to = geometry.locate(at.saturating_add(distance).min(last)).cyl;
                match from.abs_diff(to) {
                    0 => Duration::ZERO,
                    cylinders => Duration::from_secs_f64(hdd.seek_curve().time(cylinders as f64)),
                }
            }
            ModelCurves::Flat { .. } => Duration::ZERO,
        }
    }

    fn transfer_rate(&self, addr: u64) -> f64 {
        match self {
            ModelCurves::Hdd { hdd, rates } => {
                let slice = (hdd.capacity() / RATE_SAMPLES).max(1);
                rates[((addr / slice) as usize).min(rates.len() - 1)]
            }
            ModelCurves::Flat { rate, .. } => *rate,
        }
    }

    fn rotational_delay(&self) -> Duration {
        match self {
            ModelCurves::Hdd { hdd, .. } => hdd.revolution() / 2,
            ModelCurves::Flat { switch, .. } => *switch,
        }
    }

    fn average_seek(&self) -> Duration {
        match self {
            ModelCurves::Hdd { hdd, .. } => hdd.params().average_seek,
            ModelCurves::Flat { .. } => Duration::ZERO,
        }
    }
}
