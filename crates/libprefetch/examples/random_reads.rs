//! The README's Rust example: 2,000 random 4 KiB reads of a file whose order is handed to libprefetch
//! first (the paper's Figure 2 pattern, section 3.2, from Rust). Run it from the repository with
//! `cargo run -p libprefetch --example random_reads`; it writes a 64 MiB scratch file in the system's
//! temporary directory and removes it at the end.
//!
//! A Rust program does not link the read interposers of `libprefetch.so`, so it reports each read
//! with `note_read` just before making it (a C program linked with `-lprefetch` needs no such call).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use libprefetch::{note_read, AccessEntry, Client, Config, Mode};

const PAGE: u64 = 4096;
const FILE_BYTES: u64 = 64 << 20;
const READS: u64 = 2_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("libprefetch-example-{}", std::process::id()));
    std::fs::write(&path, vec![7u8; FILE_BYTES as usize])?;
    let file = File::open(&path)?;
    let fd = file.as_raw_fd();

    // The pages this program will read, in order: a fixed pseudo-random walk over the file.
    let pages: Vec<u64> = (0..READS).map(|i| i * 7919 % (FILE_BYTES / PAGE)).collect();

    // No callback: the whole list is handed over up front, and PF_DONE starts prefetching.
    let client = Client::register(Config::default(), |_, _| {})?;
    let region = client.register_region(fd, 0, FILE_BYTES)?;
    let entries: Vec<AccessEntry> = pages
        .iter()
        .map(|&page| AccessEntry {
            offset: page * PAGE,
            fd,
            mark: false,
        })
        .collect();
    let accepted = client.request_prefetching(&entries, Mode::SET | Mode::DONE)?;

    let mut buf = vec![0u8; PAGE as usize];
    for &page in &pages {
        note_read(fd, page * PAGE, PAGE);
        file.read_exact_at(&mut buf, page * PAGE)?;
        assert!(
            buf.iter().all(|&byte| byte == 7),
            "the bytes read are the file's"
        );
    }
    let stats = client.stats();
    println!(
        "{accepted} entries listed, {} reads tracked, {} divergences",
        stats.tracked_reads, stats.divergences
    );
    client.unregister_region(region)?;
    std::fs::remove_file(&path)?;
    Ok(())
}
