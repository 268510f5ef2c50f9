//! The benchmark's data file: real pseudo-random bytes, written once and reused.
//!
//! A sparse or all-zero file would be served without disk I/O (holes read as zeros without touching
//! the device), so the file is filled with seeded pseudo-random data and written to disk. It is reused
//! when a file of the right size already exists and has all its blocks allocated. A missing file is
//! written to a temporary name and renamed, so an interrupted write never leaves a short file behind.
//! An existing file that does not fit is replaced only where the caller allows it (the benchmark's
//! own directory), never a file the user named, which may hold data of its own. A file larger than
//! the free space of its file system is refused before a byte is written, and of the directories
//! only the benchmark's own is created: a user's path with a missing directory is a typo to report.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cache::{advise, Eviction};
use crate::progress;
use crate::room::free_disk;
use crate::size::format_bytes;

/// Directory of the default data files.
pub const DEFAULT_DIR: &str = "/tmp/libprefetch-bench";

/// Seed of the file contents (fixed, so every run of every mode reads the same bytes).
const CONTENT_SEED: u64 = 0x6c69_6270_7265_6665;

/// Bytes generated and written per write call.
const CHUNK_BYTES: usize = 4 << 20;

/// The default data file for a file size: `/tmp/libprefetch-bench/data-SIZE.bin`.
pub fn default_path(size: u64) -> PathBuf {
    Path::new(DEFAULT_DIR).join(format!("data-{size}.bin"))
}

/// Whether the data file was found or had to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// An existing file of the right size was reused.
    Reused,
    /// The file was written now.
    Written,
}

/// True for paths in the benchmark's own directory, whose files `ensure` may replace.
pub fn is_own(path: &Path) -> bool {
    path.parent() == Some(Path::new(DEFAULT_DIR))
}

/// Makes sure `path` holds `size` bytes of allocated pseudo-random data, writing it if it is missing.
/// An existing file of another size (or sparse) is replaced if `replace_unfit`, else refused.
///
/// Blocks while writing (about a second per GiB here); shows a progress bar when `show_progress`.
pub fn ensure(
    path: &Path,
    size: u64,
    replace_unfit: bool,
    show_progress: bool,
) -> Result<Provenance> {
    if size == 0 {
        bail!("the data file size must be more than 0 bytes");
    }
    match inspect(path, size)? {
        Fit::Reusable => return Ok(Provenance::Reused),
        Fit::Unfit(len) if !replace_unfit => bail!(
            "{} exists with {len} bytes (or holes) and is not replaced: pass --file-size {len} to use it \
             as it is, or remove it to have {size} bytes of data written there",
            path.display()
        ),
        Fit::Missing | Fit::Unfit(_) => {}
    }
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if is_own(path) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating directory {}", dir.display()))?;
    } else if !dir.is_dir() {
        bail!(
            "directory {} does not exist: create it or give another --file",
            dir.display()
        );
    }
    check_free_space(dir, size)?;
    let temporary = path.with_extension(format!("partial-{}", std::process::id()));
    let bar = progress::bytes_bar(size, "writing data file", show_progress);
    let written = write_random(&temporary, size, &bar);
    bar.finish_and_clear();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    std::fs::rename(&temporary, path)
        .with_context(|| format!("renaming {} to {}", temporary.display(), path.display()))?;
    Ok(Provenance::Written)
}

/// Refuses to write `size` bytes into `dir` when its file system has less free space.
fn check_free_space(dir: &Path, size: u64) -> Result<()> {
    let free = free_disk(dir).with_context(|| format!("free space of {}", dir.display()))?;
    if size > free {
        bail!(
            "--file-size {} is more than the {} free in {}: choose a smaller --file-size or another --file",
            format_bytes(size),
            format_bytes(free),
            dir.display()
        );
    }
    Ok(())
}

/// What is at a data file's path.
enum Fit {
    Missing,
    /// A regular file of exactly the size with every block allocated (not sparse).
    Reusable,
    /// A regular file of another size (its length), or with holes.
    Unfit(u64),
}

fn inspect(path: &Path, size: u64) -> Result<Fit> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Fit::Missing),
        Err(error) => return Err(error).with_context(|| format!("inspecting {}", path.display())),
    };
    if !metadata.is_file() {
        bail!("{} exists and is not a regular file", path.display());
    }
    if metadata.len() == size && metadata.blocks() * 512 >= size {
        Ok(Fit::Reusable)
    } else {
        Ok(Fit::Unfit(metadata.len()))
    }
}

/// Writes `size` seeded pseudo-random bytes to a new file at `path`, flushes them to disk and
/// drops them from the cache.
fn write_random(path: &Path, size: u64, bar: &ProgressBar) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut rng = StdRng::seed_from_u64(CONTENT_SEED);
    let mut chunk = vec![0u8; CHUNK_BYTES];
    let mut remaining = size;
    while remaining > 0 {
        let len = remaining.min(CHUNK_BYTES as u64) as usize;
        rng.fill_bytes(&mut chunk[..len]);
        file.write_all(&chunk[..len])
            .with_context(|| format!("writing {}", path.display()))?;
        remaining -= len as u64;
        bar.inc(len as u64);
    }
    file.sync_all()
        .with_context(|| format!("flushing {} to disk", path.display()))?;
    drop_from_cache(&file, path)
}

/// Evicts a freshly written file, so that writing it does not leave gigabytes of page cache behind.
fn drop_from_cache(file: &File, path: &Path) -> Result<()> {
    advise(file, 0, None, rustix::fs::Advice::DontNeed)
        .with_context(|| format!("{}: {}", path.display(), Eviction::Fadvise.describe()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_random_data_once_and_then_reuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.bin");
        assert_eq!(
            ensure(&path, 100_000, false, false).unwrap(),
            Provenance::Written
        );
        let first = std::fs::read(&path).unwrap();
        assert_eq!(first.len(), 100_000);
        let zeros = first.iter().filter(|&&byte| byte == 0).count();
        assert!(
            zeros < 2_000,
            "pseudo-random data, not zeros: {zeros} zero bytes"
        );
        assert_eq!(
            ensure(&path, 100_000, false, false).unwrap(),
            Provenance::Reused
        );
    }

    #[test]
    fn rewrites_a_file_of_the_wrong_size_or_a_sparse_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.bin");
        std::fs::write(&path, b"short").unwrap();
        assert_eq!(
            ensure(&path, 8192, true, false).unwrap(),
            Provenance::Written
        );
        let sparse = File::create(&path).unwrap();
        sparse.set_len(1 << 20).unwrap();
        assert_eq!(
            ensure(&path, 1 << 20, true, false).unwrap(),
            Provenance::Written
        );
        let contents = std::fs::read(&path).unwrap();
        assert!(contents.iter().any(|&byte| byte != 0));
    }

    #[test]
    fn a_file_of_the_users_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("precious.db");
        std::fs::write(&path, b"user data").unwrap();
        let error = ensure(&path, 8192, false, false).unwrap_err().to_string();
        assert!(
            error.contains("exists with 9 bytes") && error.contains("--file-size 9"),
            "{error}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"user data");
        assert!(is_own(&default_path(1 << 30)));
        assert!(!is_own(&path));
    }

    #[test]
    fn a_missing_directory_of_the_users_is_refused_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let error = ensure(&missing.join("x"), 4096, false, false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("does not exist"), "{error}");
        assert!(!missing.exists());
    }

    #[test]
    fn a_file_larger_than_the_free_disk_is_refused_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.bin");
        let too_big = free_disk(dir.path()).unwrap() + (1 << 30);
        let error = ensure(&path, too_big, false, false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("free in"), "{error}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing written: {left:?}");
    }

    #[test]
    fn same_size_gives_same_contents() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        ensure(&a, 50_000, false, false).unwrap();
        ensure(&b, 50_000, false, false).unwrap();
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }

    #[test]
    fn refuses_a_directory_and_a_zero_size() {
        let dir = tempfile::tempdir().unwrap();
        let error = ensure(dir.path(), 4096, true, false).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        assert!(ensure(&dir.path().join("x"), 0, true, false).is_err());
    }
}
