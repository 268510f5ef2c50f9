//! Helpers every crate of the workspace shares, written once: byte sizes as people type them
//! and as reports print them ([`parse_size`], [`format_bytes`]), medians ([`median`]), and,
//! with the `svg` feature, the line charts of the reports (`svg`).
//!
//! Deviations: none (no paper section; plumbing).

mod size;
#[cfg(feature = "svg")]
pub mod svg;

pub use size::{format_bytes, parse_size, SizeError};

/// The median of `values`: the middle value, or the mean of the middle two for an even count;
/// 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty_lists() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
