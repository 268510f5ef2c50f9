//! Byte sizes as people type them ("512M", "1.5G", "4096", "64KiB") and as reports print them.
//!
//! Grammar: blanks, a non-negative decimal number (`12`, `1.5`), blanks, and an optional
//! binary suffix, case-insensitive: `K`, `M`, `G`, `T`, `P`, `E` (powers of 1024), each with an
//! optional `iB` or `B`, or a bare `B`. A fraction is allowed when it makes a whole number of
//! bytes (`1.5M` is 1,572,864 bytes; `1.5` is refused). The value must fit in 64 bits.

use thiserror::Error;

/// Why a size was refused. Each message quotes the input.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SizeError {
    /// The text was empty or only blanks.
    #[error("empty size: expected a number with an optional K/M/G/T suffix, e.g. 512M")]
    Empty,
    /// The number part is not a non-negative decimal number, or a fraction leaves part of a
    /// byte.
    #[error(
        "bad size {0:?}: expected a number of bytes with an optional K/M/G/T suffix, e.g. 512M or 1.5G"
    )]
    BadNumber(String),
    /// The suffix is not one of K, M, G, T, P, E (with optional iB or B) or B.
    #[error("bad size {0:?}: unknown suffix {1:?} (use K, M, G or T, e.g. 512M)")]
    BadSuffix(String, String),
    /// The value does not fit in 64 bits.
    #[error("size {0:?} is too large for 64 bits")]
    Overflow(String),
}

/// Parses a size such as "512M", "1.5G", "64k", "4096" or "2GiB" into bytes.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(SizeError::Empty);
    }
    let number_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let bad_number = || SizeError::BadNumber(text.to_string());
    if whole.is_empty() || fraction.contains('.') || number.ends_with('.') {
        return Err(bad_number());
    }
    let shift = suffix_shift(suffix.trim())
        .ok_or_else(|| SizeError::BadSuffix(text.to_string(), suffix.to_string()))?;
    let overflow = || SizeError::Overflow(text.to_string());
    let whole: u128 = whole.parse().map_err(|_| overflow())?;
    let mut bytes = whole.checked_shl(shift).ok_or_else(overflow)?;
    if !fraction.is_empty() {
        // The fraction's digits beyond u64's 20 cannot make a whole byte of a 64-bit size.
        if fraction.len() > 20 {
            return Err(bad_number());
        }
        let numerator: u128 = fraction.parse().map_err(|_| bad_number())?;
        let scaled = numerator << shift;
        let denominator = 10u128.pow(fraction.len() as u32);
        let (part, rest) = (scaled / denominator, scaled % denominator);
        if rest > 0 {
            return Err(bad_number());
        }
        bytes += part;
    }
    u64::try_from(bytes).map_err(|_| overflow())
}

/// The power of two of a suffix ("", "K", "KiB", "kb", "B", ...), or None if unknown.
fn suffix_shift(suffix: &str) -> Option<u32> {
    let lower = suffix.to_ascii_lowercase();
    if lower.is_empty() || lower == "b" {
        return Some(0);
    }
    let unit = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let power = ["k", "m", "g", "t", "p", "e"]
        .iter()
        .position(|u| *u == unit)?;
    Some(10 * (power as u32 + 1))
}

/// `value` in the largest of `units` units (each `base` times the one before) that keeps it below
/// `carry_at`: the scaled value and the unit's index. Every byte formatter of the workspace prints
/// from it, each in its own style.
pub fn scale(value: f64, base: f64, carry_at: f64, units: usize) -> (f64, usize) {
    let (mut value, mut unit) = (value, 0);
    while value >= carry_at && unit + 1 < units {
        value /= base;
        unit += 1;
    }
    (value, unit)
}

/// Formats a byte count for tables: "512 B", "4.0 KiB", "390.6 MiB", "2.00 GiB".
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let (value, unit) = scale(bytes as f64 / 1024.0, 1024.0, 1024.0, UNITS.len());
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
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("64kb"), Ok(64 << 10));
        assert_eq!(parse_size("32KB"), Ok(32 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size(" 3T "), Ok(3 << 40));
        assert_eq!(parse_size("1.5M"), Ok(3 << 19));
        assert_eq!(parse_size("0K"), Ok(0));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn refuses_bad_input_with_a_message_quoting_it() {
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        for bad in ["M", "-1G", "1.5", "1..5M", "1.M", ".5M", "0x10"] {
            assert!(
                matches!(
                    parse_size(bad),
                    Err(SizeError::BadNumber(_) | SizeError::BadSuffix(..))
                ),
                "{bad:?}: {:?}",
                parse_size(bad)
            );
        }
        for garbage in ["banana", "12Q", "1 2 3 K B x", "32K;"] {
            assert!(parse_size(garbage).is_err(), "{garbage:?} was accepted");
        }
        for huge in [
            "16E",
            "18446744073709551616",
            "99999999999T",
            "1.84467440737095516156E",
        ] {
            assert!(
                matches!(
                    parse_size(huge),
                    Err(SizeError::Overflow(_) | SizeError::BadNumber(_))
                ),
                "{huge:?}: {:?}",
                parse_size(huge)
            );
        }
        assert_eq!(parse_size("16E"), Err(SizeError::Overflow("16E".into())));
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
