//! Byte sizes as people type them ("512M", "1G", "4096") and as the reports print them.
//!
//! Suffixes are binary (K = 1024), case-insensitive, with an optional "iB" or "B" ("512MiB", "1gb").
//! Deviations: none (no paper section; plumbing for `--memory-limit`, `--file-size`, `--window`).

use thiserror::Error;

/// Why a size string was rejected.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SizeError {
    /// The string was empty or only blanks.
    #[error("empty size: expected a number with an optional K/M/G/T suffix, e.g. 512M")]
    Empty,
    /// The number part was not a whole non-negative number.
    #[error(
        "bad size {0:?}: expected a whole number with an optional K/M/G/T suffix, e.g. 512M or 1G"
    )]
    BadNumber(String),
    /// The suffix was not one of K, M, G, T (with optional iB/B).
    #[error("bad size {0:?}: unknown suffix {1:?} (use K, M, G or T, e.g. 512M)")]
    BadSuffix(String, String),
    /// The value does not fit in 64 bits.
    #[error("size {0:?} is too large")]
    Overflow(String),
}

/// Parses a size such as "512M", "1G", "64k", "4096" or "2GiB" into bytes.
///
/// Returns the number of bytes, or a [`SizeError`] that quotes the input.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(SizeError::Empty);
    }
    let digits_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(digits_end);
    if number.is_empty() {
        return Err(SizeError::BadNumber(text.to_string()));
    }
    let value: u64 = number
        .parse()
        .map_err(|_| SizeError::Overflow(text.to_string()))?;
    let multiplier = suffix_multiplier(suffix.trim())
        .ok_or_else(|| SizeError::BadSuffix(text.to_string(), suffix.to_string()))?;
    value
        .checked_mul(multiplier)
        .ok_or_else(|| SizeError::Overflow(text.to_string()))
}

/// The multiplier of a binary suffix ("", "K", "KiB", "kb", ...), or None if unknown.
fn suffix_multiplier(suffix: &str) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    let unit = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let power = match unit {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        _ => return None,
    };
    if lower == "b" || lower.is_empty() || power > 0 {
        Some(1u64 << (10 * power))
    } else {
        None
    }
}

/// Formats a byte count for tables: "512 B", "4.0 KiB", "390.6 MiB", "2.00 GiB".
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit >= 2 {
        format!("{value:.2} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_spellings() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("64kb"), Ok(64 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size(" 3T "), Ok(3 << 40));
    }

    #[test]
    fn rejects_bad_input_with_a_message_quoting_it() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert_eq!(parse_size("M"), Err(SizeError::BadNumber("M".into())));
        assert_eq!(parse_size("-1G"), Err(SizeError::BadNumber("-1G".into())));
        assert_eq!(
            parse_size("12Q"),
            Err(SizeError::BadSuffix("12Q".into(), "Q".into()))
        );
        assert_eq!(
            parse_size("1.5G"),
            Err(SizeError::BadSuffix("1.5G".into(), ".5G".into()))
        );
        assert_eq!(
            parse_size("99999999999T"),
            Err(SizeError::Overflow("99999999999T".into()))
        );
        let message = parse_size("12Q").unwrap_err().to_string();
        assert!(
            message.contains("\"12Q\"") && message.contains("512M"),
            "{message}"
        );
    }

    #[test]
    fn formats_sizes_for_tables() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(4096), "4.0 KiB");
        assert_eq!(format_bytes(100_000 * 4096), "390.6 MiB");
        assert_eq!(format_bytes(2 << 30), "2.00 GiB");
    }
}
