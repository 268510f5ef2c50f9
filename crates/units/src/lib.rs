//! Helpers every crate of the workspace shares, written once: byte sizes as people type them
//! and as reports print them ([`parse_size`], [`format_bytes`], [`scale`]), medians ([`median`], and
//! [`median_by`] for the median run of a benchmark), and,
//! with the `svg` feature, the line charts of the reports (`svg`).

mod size;
#[cfg(feature = "svg")]
pub mod svg;

pub use size::{format_bytes, parse_size, scale, SizeError};

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

/// The item whose `key` is the median of `items`, for measurements whose other fields must stay
/// those of one real run (its page counters beside its time): the middle one, or the lower
/// middle one for an even count, since two runs cannot be averaged; None for none.
pub fn median_by<T: Copy>(items: &[T], key: impl Fn(&T) -> f64) -> Option<T> {
    let mut sorted = items.to_vec();
    sorted.sort_by(|a, b| key(a).total_cmp(&key(b)));
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
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

    #[test]
    fn median_by_keeps_the_lower_middle_item_whole() {
        let runs = [(3.0, 'c'), (1.0, 'a'), (2.0, 'b')];
        assert_eq!(median_by(&runs, |r| r.0), Some((2.0, 'b')));
        assert_eq!(median_by(&runs[..2], |r| r.0), Some((1.0, 'a')));
        assert_eq!(median_by(&[] as &[(f64, char)], |r| r.0), None);
    }
}
