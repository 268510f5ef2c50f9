//! Measures the three residency probes of `residency.rs` on this machine:
//! cost per probe of a cached page, and what each says about a page whose
//! WILLNEED read is still in flight. Run:
//! `cargo run --release -p libprefetch --example probe_cost [FILE]`
//! (FILE defaults to a 256 MiB scratch file in /tmp).

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Instant;

use libprefetch::residency::{cachestat, Probe};

const PAGE: u64 = 4096;
const PROBES: u64 = 100_000;

fn nowait_hit(fd: i32, offset: u64) -> bool {
    let mut byte = [0u8; 1];
    let iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    // SAFETY: one iovec over a live one-byte buffer.
    unsafe { libc::preadv2(fd, &iov, 1, offset as libc::off_t, libc::RWF_NOWAIT) == 1 }
}

fn time_per_probe(label: &str, mut probe: impl FnMut(u64) -> bool) {
    let start = Instant::now();
    let mut hits = 0u64;
    for i in 0..PROBES {
        hits += u64::from(probe((i * 7919 % 1024) * PAGE));
    }
    let micros = start.elapsed().as_secs_f64() * 1e6 / PROBES as f64;
    println!("{label:<22} {micros:>7.2} us/probe  ({hits} of {PROBES} said cached)");
}

fn main() -> std::io::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/libprefetch-probe.dat".into());
    if std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) < 256 << 20 {
        let mut file = File::create(&path)?;
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 251) as u8).collect();
        for _ in 0..256 {
            file.write_all(&chunk)?;
        }
        file.sync_all()?;
    }
    let file = File::open(&path)?;
    let fd = file.as_raw_fd();
    // SAFETY: plain fadvise calls on an open descriptor.
    unsafe { libc::posix_fadvise(fd, 0, 4 << 20, libc::POSIX_FADV_WILLNEED) };
    std::thread::sleep(std::time::Duration::from_millis(200));
    println!("setting: this machine's disk; probes of cached pages of {path}");
    time_per_probe("cachestat", |off| {
        Probe::Cachestat.resident_pages(fd, off, PAGE, PAGE) == Some((1, 1))
    });
    time_per_probe("mmap+mincore+munmap", |off| {
        Probe::Mincore.resident_pages(fd, off, PAGE, PAGE) == Some((1, 1))
    });
    time_per_probe("preadv2 RWF_NOWAIT", |off| nowait_hit(fd, off));

    println!("right after WILLNEED of a cold page (read still in flight):");
    let mut agree = [0u32; 3];
    let trials = 50u64;
    for i in 0..trials {
        let off = (200 << 20) + i * (256 << 10);
        // SAFETY: as above.
        unsafe {
            libc::posix_fadvise(fd, off as i64, PAGE as i64, libc::POSIX_FADV_DONTNEED);
            libc::posix_fadvise(fd, off as i64, PAGE as i64, libc::POSIX_FADV_WILLNEED);
        }
        agree[0] += u32::from(
            cachestat(fd, off, PAGE)
                .map(|c| c.nr_cache == 1)
                .unwrap_or(false),
        );
        agree[1] += u32::from(Probe::Mincore.resident_pages(fd, off, PAGE, PAGE) == Some((1, 1)));
        agree[2] += u32::from(nowait_hit(fd, off));
    }
    println!(
        "  cachestat said cached {}/{trials}, mincore {}/{trials}, preadv2 NOWAIT {}/{trials}",
        agree[0], agree[1], agree[2]
    );
    Ok(())
}
