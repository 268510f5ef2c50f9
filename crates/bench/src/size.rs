//! Byte sizes as people type them ("512M", "1G", "4096") and as the reports print them: the
//! workspace's one grammar, `units` (binary suffixes, case-insensitive, optional "iB" or "B").

pub use units::{format_bytes, parse_size, SizeError};
