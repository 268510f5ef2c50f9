//! Helpers every crate of the workspace shares, written once: byte sizes as people type them
//! and as reports print them ([`parse_size`], [`format_bytes`], [`scale`]), medians ([`median`], and
//! [`median_by`] for the median run of a benchmark, [`median_interval`] for how far it can be
//! trusted), and,
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

/// A distribution-free confidence interval of the median of `values` at `level` (0.95 for 95%):
/// the k-th smallest and k-th largest value, for the largest k whose two tails each hold at most
/// (1 - level) / 2 of the binomial(n, 1/2) law (the sign test's interval). None when there are too
/// few values for that level (fewer than 6 at 95%).
pub fn median_interval(values: &[f64], level: f64) -> Option<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let tail = (1.0 - level) / 2.0;
    // P(B <= j) for B ~ binomial(n, 1/2), summed term by term: C(n, j) / 2^n.
    let (mut term, mut below, mut k) = (0.5f64.powi(n as i32), 0.0, 0);
    for j in 0..n / 2 {
        below += term;
        if below > tail {
            break;
        }
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    (k > 0).then(|| (sorted[k - 1], sorted[n - k]))
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

    /// The sign test's 95% interval: none below 6 values; for 6 the extremes (2 / 64 = 3.1% outside);
    /// for 21 the 6th smallest and 6th largest (2.7% in each tail), the published table's values.
    #[test]
    fn the_medians_interval_is_the_sign_tests() {
        let values = |n: usize| (1..=n).map(|v| v as f64).rev().collect::<Vec<_>>();
        assert_eq!(median_interval(&values(5), 0.95), None);
        assert_eq!(median_interval(&values(6), 0.95), Some((1.0, 6.0)));
        assert_eq!(median_interval(&values(21), 0.95), Some((6.0, 16.0)));
        assert_eq!(median_interval(&values(41), 0.95), Some((14.0, 28.0)));
        assert_eq!(median_interval(&[], 0.95), None);
    }

    #[test]
    fn median_by_keeps_the_lower_middle_item_whole() {
        let runs = [(3.0, 'c'), (1.0, 'a'), (2.0, 'b')];
        assert_eq!(median_by(&runs, |r| r.0), Some((2.0, 'b')));
        assert_eq!(median_by(&runs[..2], |r| r.0), Some((1.0, 'a')));
        assert_eq!(median_by(&[] as &[(f64, char)], |r| r.0), None);
    }
}
