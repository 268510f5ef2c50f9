//! Seek time against seek distance (in cylinders), after Ruemmler and Wilkes ("An introduction
//! to disk drive modeling", 1994): `a + b * sqrt(d)` for short seeks (the arm accelerates then
//! decelerates) and `c + e * d` for long ones (it coasts at full speed).
//!
//! The curve is fitted to three datasheet numbers: the track-to-track time (d = 1), the
//! full-stroke time (d = cylinders - 1) and the average seek time between two random byte
//! addresses. The two pieces meet smoothly (equal value and slope) at a boundary `x0`; for each
//! `x0` the four coefficients follow from the end points and the joint, and `x0` is bisected
//! until the curve's mean over the disk's distribution of random seek distances equals the
//! average. A smaller `x0` makes the curve more linear (lower mean), a larger one more like a
//! square root (higher mean); an average outside that range is reported as an error.
//! Deviations: Ruemmler and Wilkes fit the pieces to measured seeks; with only three numbers the
//! smooth joint is this model's choice. Distance 0 costs nothing (settling is in the overhead).

/// Fitted seek curve.
#[derive(Clone, Debug, PartialEq)]
pub struct SeekCurve {
    a: f64,
    b: f64,
    c: f64,
    e: f64,
    boundary: f64,
}

/// A random seek distance and its probability, describing how far apart two random byte
/// addresses are in cylinders.
pub type DistanceMass = (f64, f64);

/// Why a seek curve cannot be fitted.
#[derive(Clone, Debug, PartialEq)]
pub enum FitError {
    /// The average is not between the linear and the square-root extremes.
    AverageOutOfRange {
        /// Lowest reachable average, seconds.
        min: f64,
        /// Highest reachable average, seconds.
        max: f64,
    },
    /// Times are not increasing (track-to-track < full stroke) or there are fewer than 3
    /// cylinders.
    Degenerate,
}

impl SeekCurve {
    /// Fits the curve (times in seconds) for a disk of `cylinders` cylinders whose random seek
    /// distances are distributed as `distances`.
    pub fn fit(
        track_to_track: f64,
        average: f64,
        full_stroke: f64,
        cylinders: u64,
        distances: &[DistanceMass],
    ) -> Result<SeekCurve, FitError> {
        let full = cylinders.saturating_sub(1) as f64;
        if cylinders < 3 || !(0.0 < track_to_track && track_to_track < full_stroke) {
            return Err(FitError::Degenerate);
        }
        let curve = |x0: f64| Self::through(track_to_track, full_stroke, full, x0);
        let mean = |x0: f64| curve(x0).mean(distances);
        let (mut lo, mut hi) = (1.0_f64, full);
        let (min, max) = (mean(lo), mean(hi));
        if !(min..=max).contains(&average) {
            return Err(FitError::AverageOutOfRange { min, max });
        }
        for _ in 0..200 {
            let mid = (lo * hi).sqrt();
            if mean(mid) < average {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(curve((lo * hi).sqrt()))
    }

    /// The smooth two-piece curve through (1, t1) and (full, tfull) with its joint at `x0`.
    fn through(t1: f64, tfull: f64, full: f64, x0: f64) -> SeekCurve {
        let root = x0.sqrt();
        let b = (tfull - t1) / (root / 2.0 + full / (2.0 * root) - 1.0);
        let a = t1 - b;
        SeekCurve {
            a,
            b,
            c: a + b * root / 2.0,
            e: b / (2.0 * root),
            boundary: x0,
        }
    }

    /// Seek time in seconds for a distance of `cylinders` (0 costs nothing).
    pub fn time(&self, cylinders: f64) -> f64 {
        if cylinders <= 0.0 {
            0.0
        } else if cylinders < self.boundary {
            self.a + self.b * cylinders.sqrt()
        } else {
            self.c + self.e * cylinders
        }
    }

    /// Mean seek time over a distance distribution.
    pub fn mean(&self, distances: &[DistanceMass]) -> f64 {
        distances.iter().map(|&(d, p)| p * self.time(d)).sum()
    }

    /// Cylinder distance where the square-root piece hands over to the linear one.
    pub fn boundary(&self) -> f64 {
        self.boundary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distances of two uniform random cylinders on a 1001-cylinder disk, in 1000 bins.
    fn uniform(cylinders: u64) -> Vec<DistanceMass> {
        let n = 1000;
        let width = (cylinders - 1) as f64 / n as f64;
        (0..n)
            .map(|k| {
                let mass = if k == 0 { 1.0 } else { 2.0 * (n - k) as f64 } / (n * n) as f64;
                let d = if k == 0 {
                    width / 3.0
                } else {
                    k as f64 * width
                };
                (d, mass)
            })
            .collect()
    }

    #[test]
    fn fitted_curve_hits_the_three_datasheet_numbers() {
        let dist = uniform(100_001);
        let curve = SeekCurve::fit(0.8e-3, 8.5e-3, 17e-3, 100_001, &dist).unwrap();
        assert!((curve.time(1.0) - 0.8e-3).abs() < 1e-12);
        assert!((curve.time(100_000.0) - 17e-3).abs() < 1e-12);
        assert!((curve.mean(&dist) - 8.5e-3).abs() < 1e-9);
        assert!(curve.boundary() > 1.0 && curve.boundary() < 100_000.0);
    }

    #[test]
    fn pieces_meet_smoothly() {
        let dist = uniform(10_001);
        let curve = SeekCurve::fit(1e-3, 7e-3, 14e-3, 10_001, &dist).unwrap();
        let x0 = curve.boundary();
        let (below, above) = (curve.time(x0 - 1e-6), curve.time(x0 + 1e-6));
        assert!((below - above).abs() < 1e-9);
        let slope_sqrt = curve.b / (2.0 * x0.sqrt());
        assert!((slope_sqrt - curve.e).abs() < 1e-15);
    }

    /// The mean of a straight line from 0.8 to 17 ms over uniform distances is about
    /// 0.8 + 16.2/3 = 6.2 ms; asking for 5 ms cannot be fitted.
    #[test]
    fn impossible_average_is_an_error() {
        let dist = uniform(100_001);
        let err = SeekCurve::fit(0.8e-3, 5e-3, 17e-3, 100_001, &dist).unwrap_err();
        let FitError::AverageOutOfRange { min, .. } = err else {
            panic!("{err:?}");
        };
        assert!((min - 6.2e-3).abs() < 0.1e-3, "{min}");
    }

    #[test]
    fn zero_distance_is_free_and_time_grows_with_distance() {
        let dist = uniform(100_001);
        let curve = SeekCurve::fit(0.8e-3, 8.5e-3, 17e-3, 100_001, &dist).unwrap();
        assert_eq!(curve.time(0.0), 0.0);
        let times: Vec<f64> = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
            .iter()
            .map(|&d| curve.time(d))
            .collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    }
}
