//! The request log: one line per request the emulated disk served, in the
//! order the actuator started them, so that a run can be read request by
//! request (when each arrived, waited, was served, where on the disk).
//! The emulator follows no paper; the log shows the disk behaviour of
//! libprefetch (ATC'09) s3.1-3.5 (sweeps, seeks, idle time) for one run.
//!
//! Format: a header line starting with `#`, then per request
//! `ARRIVAL START DONE ADDRESS BYTES`: three times in model seconds since
//! the mount (multiply by the time scale for wall seconds), the disk address
//! and the length in bytes. The queue's wait is `START - ARRIVAL`, the
//! service time `DONE - START`; an address lower than the one before marks
//! a new sweep under `clook`.
//!
//! Lines are buffered and written when the buffer fills and when the disk
//! stops (unmount), so the log costs the actuator no system call per request.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

/// The header line: what each column holds.
pub const HEADER: &str = "# arrival_s start_s done_s address bytes (model seconds since the mount)";

/// An open request log.
#[derive(Debug)]
pub struct RequestLog {
    /// `None` once a write failed.
    out: Option<BufWriter<File>>,
}

impl RequestLog {
    /// Creates (or truncates) the log at `path` and writes its header.
    pub fn create(path: &Path) -> io::Result<RequestLog> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{HEADER}")?;
        Ok(RequestLog { out: Some(out) })
    }

    /// Records one request served from `start` to `done` (model times), which
    /// arrived at `arrival`. A failed write is reported once and ends the log;
    /// the disk goes on serving.
    pub fn record(
        &mut self,
        arrival: Duration,
        start: Duration,
        done: Duration,
        addr: u64,
        len: u64,
    ) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let line = writeln!(
            out,
            "{:.6} {:.6} {:.6} {addr} {len}",
            arrival.as_secs_f64(),
            start.as_secs_f64(),
            done.as_secs_f64()
        );
        if let Err(error) = line {
            self.fail(&error);
        }
    }

    /// Writes out what is buffered (the disk is stopping).
    pub fn flush(&mut self) {
        if let Some(Err(error)) = self.out.as_mut().map(|out| out.flush()) {
            self.fail(&error);
        }
    }

    fn fail(&mut self, error: &io::Error) {
        eprintln!("emulate: writing the request log failed ({error}); no more requests are logged");
        self.out = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_one_line_after_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut log = RequestLog::create(&path).unwrap();
        let ms = Duration::from_millis;
        log.record(ms(0), ms(1), ms(9), 4096, 8192);
        log.record(ms(2), ms(9), ms(12), 0, 4096);
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                HEADER,
                "0.000000 0.001000 0.009000 4096 8192",
                "0.002000 0.009000 0.012000 0 4096"
            ]
        );
    }
}
