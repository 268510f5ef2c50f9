//! Whether a file starts as a snapshot this machine can restore, from its first bytes only: the
//! check `prefetch run --restore` makes in front of the program, whose restorer reads and checks
//! the whole snapshot beside it (a parse takes time in proportion to the snapshot, which the
//! program would wait for).
//!
//! [`Snapshot::save`](crate::Snapshot::save) writes the format, version and page size ahead of the
//! files (docs/residency.md); a file that does not start with them is not a snapshot of
//! `prefetch snapshot`.
//!
//! No paper section (the snapshot format is this project's).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::Deserialize;

use crate::snapshot::check_head;
use crate::Error;

/// How far into the file the format, version and page size must have been said.
const HEAD_BYTES: usize = 512;

/// The members ahead of `files`.
#[derive(Deserialize)]
struct Head {
    format: String,
    version: u32,
    page_size: u64,
}

/// Fails with one line unless the regular `file` (named `path` in messages) starts with a
/// snapshot's format, version and page size, all this machine's. Reads at offset 0 without
/// moving the file's offset.
pub fn check_start(file: &File, path: &Path) -> Result<(), Error> {
    let mut bytes = [0; HEAD_BYTES];
    let read = file
        .read_at(&mut bytes, 0)
        .map_err(|source| Error::reading(path, source))?;
    head_reason(&bytes[..read]).map_err(|reason| Error::Malformed {
        path: path.to_path_buf(),
        reason,
    })
}

/// Why `start`, the first bytes of a file, is not the start of a snapshot of this machine.
fn head_reason(start: &[u8]) -> Result<(), String> {
    let missing = || {
        format!(
            "no format, version and page size ahead of the files in its first {HEAD_BYTES} bytes"
        )
    };
    let at = find(start, b"\"files\"").ok_or_else(missing)?;
    let members = start[..at].trim_ascii_end();
    let members = members.strip_suffix(b",").ok_or_else(missing)?;
    let mut object = members.to_vec();
    object.push(b'}');
    let head: Head = serde_json::from_slice(&object).map_err(|_| missing())?;
    check_head(&head.format, head.version, head.page_size)
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::head_reason;
    use crate::probe::page_size;

    fn start(format: &str, version: u32, page_size: u64) -> String {
        format!(
            r#"{{"format":"{format}","version":{version},"page_size":{page_size},"files":[{{"path":"/a""#
        )
    }

    #[test]
    fn a_snapshots_start_passes() {
        let ok = start("prefetch-residency-snapshot", 1, page_size());
        assert_eq!(head_reason(ok.as_bytes()), Ok(()));
        let spaced =
            "{ \"format\": \"prefetch-residency-snapshot\", \"version\": 1,\n  \"page_size\": "
                .to_string()
                + &format!("{},\n  \"files\": [", page_size());
        assert_eq!(head_reason(spaced.as_bytes()), Ok(()));
    }

    #[test]
    fn another_format_version_or_page_size_says_which() {
        let format = head_reason(start("vmtouch", 1, page_size()).as_bytes()).unwrap_err();
        assert!(format.contains("format is \"vmtouch\""), "{format}");
        let version = head_reason(start("prefetch-residency-snapshot", 9, page_size()).as_bytes());
        assert!(version.unwrap_err().contains("version 9"));
        let page = head_reason(start("prefetch-residency-snapshot", 1, 65536 + 1).as_bytes());
        assert!(page.unwrap_err().contains("65537-byte pages"));
    }

    #[test]
    fn anything_else_is_not_a_snapshot() {
        for text in [
            "",
            "hello",
            "{\"files\":[]}",
            "[1,2,3]",
            "{\"format\":1,\"files\":[]}",
        ] {
            let reason = head_reason(text.as_bytes()).unwrap_err();
            assert!(reason.starts_with("no format, version"), "{text}: {reason}");
        }
    }
}
