//! Counters of the emulated disk: what the actuator served, readable while
//! mounted (as JSON in `.emulate-stats` at the mount root) and printed at
//! unmount.
//!
//! "Seek" here means any request that starts where the head
//! is not (distance > 0), as the libprefetch paper's Figure 2 counts seek
//! distance; busy time is model time, so it does not depend on the time scale.

use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// Counters since the disk was mounted.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Disk model name, as given to `--model`.
    pub model: String,
    /// Scheduler name, as given to `--scheduler`.
    pub scheduler: String,
    /// Wall seconds per model second.
    pub time_scale: f64,
    /// Requests served.
    pub requests: u64,
    /// Bytes served.
    pub bytes: u64,
    /// Requests that started away from the head position.
    pub seeks: u64,
    /// Sum of the distances the head moved, in bytes.
    pub seek_distance_bytes: u64,
    /// Sum of the model's service times, in seconds: the time the actuator
    /// was busy (for a model serving several requests at once, overlapping
    /// service times add up, so this can exceed `elapsed_seconds`).
    pub busy_seconds: f64,
    /// Model time since mount, in seconds.
    pub elapsed_seconds: f64,
    /// Sum over requests of the model time from arrival to completion, in seconds.
    pub response_seconds: f64,
    /// Most requests queued at once (waiting, not counting the one in service).
    pub max_queue_depth: u64,
    /// Largest wall-clock delay past a completion deadline, in microseconds
    /// (how precisely the emulator kept the model's time).
    pub max_late_micros: f64,
    /// Sum of those delays, in microseconds.
    pub late_micros: f64,
}

impl Stats {
    /// Mean head movement per seek, in bytes (0 before the first seek).
    pub fn average_seek_distance(&self) -> f64 {
        ratio(self.seek_distance_bytes as f64, self.seeks)
    }

    /// Mean model service time per request, in seconds.
    pub fn mean_service_seconds(&self) -> f64 {
        ratio(self.busy_seconds, self.requests)
    }

    /// Mean model time from arrival to completion per request, in seconds.
    pub fn mean_response_seconds(&self) -> f64 {
        ratio(self.response_seconds, self.requests)
    }

    /// Mean wall-clock delay past completion deadlines, in microseconds.
    pub fn mean_late_micros(&self) -> f64 {
        ratio(self.late_micros, self.requests)
    }

    /// Counts one served request.
    pub fn record(&mut self, served: &Served) {
        self.requests += 1;
        self.bytes += served.len;
        if served.seek_distance > 0 {
            self.seeks += 1;
            self.seek_distance_bytes += served.seek_distance;
        }
        self.busy_seconds += served.service.as_secs_f64();
        self.response_seconds += served.response.as_secs_f64();
        let late = served.late.as_secs_f64() * 1e6;
        self.late_micros += late;
        self.max_late_micros = self.max_late_micros.max(late);
    }

    /// The counters as a JSON object, with the derived means added.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).expect("Stats serializes to a JSON object");
        let derived = [
            ("average_seek_distance_bytes", self.average_seek_distance()),
            ("mean_service_seconds", self.mean_service_seconds()),
            ("mean_response_seconds", self.mean_response_seconds()),
            ("mean_late_micros", self.mean_late_micros()),
        ];
        for (key, number) in derived {
            value[key] = serde_json::json!(number);
        }
        let mut text = serde_json::to_string_pretty(&value).expect("JSON value prints");
        text.push('\n');
        text
    }
}

/// What the actuator reports for one completed request.
#[derive(Clone, Copy, Debug, Default)]
pub struct Served {
    /// Bytes transferred.
    pub len: u64,
    /// Head movement before the transfer, in bytes.
    pub seek_distance: u64,
    /// Model service time.
    pub service: Duration,
    /// Model time from arrival to completion.
    pub response: Duration,
    /// Wall-clock delay past the completion deadline.
    pub late: Duration,
}

/// `bytes` in the largest binary unit that keeps the number at least 1.
fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let (value, unit) = units::scale(bytes, 1024.0, 1024.0, UNITS.len());
    format!("{value:.1} {}", UNITS[unit])
}

fn ratio(total: f64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        total / count as f64
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.bytes as f64 / (1024.0 * 1024.0);
        writeln!(
            f,
            "emulated disk: model {}, scheduler {}, time scale {}",
            self.model, self.scheduler, self.time_scale
        )?;
        writeln!(f, "  requests          {}", self.requests)?;
        writeln!(f, "  bytes             {} ({mib:.1} MiB)", self.bytes)?;
        writeln!(f, "  seeks             {}", self.seeks)?;
        writeln!(
            f,
            "  avg seek distance {}",
            human_bytes(self.average_seek_distance())
        )?;
        writeln!(
            f,
            "  busy              {:.3} s of {:.3} s (model time)",
            self.busy_seconds, self.elapsed_seconds
        )?;
        writeln!(
            f,
            "  mean service      {:.3} ms (model time)",
            self.mean_service_seconds() * 1e3
        )?;
        writeln!(
            f,
            "  mean response     {:.3} ms (model time)",
            self.mean_response_seconds() * 1e3
        )?;
        writeln!(f, "  max queue depth   {}", self.max_queue_depth)?;
        write!(
            f,
            "  completion delay  mean {:.1} us, max {:.1} us (wall clock)",
            self.mean_late_micros(),
            self.max_late_micros
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_counts_seeks_only_when_the_head_moves() {
        let mut stats = Stats::default();
        let ms = Duration::from_millis;
        stats.record(&Served {
            len: 4096,
            seek_distance: 1 << 20,
            service: ms(12),
            response: ms(12),
            late: Duration::from_micros(10),
        });
        stats.record(&Served {
            len: 4096,
            seek_distance: 0,
            service: ms(2),
            response: ms(14),
            late: Duration::from_micros(30),
        });
        assert_eq!(stats.requests, 2);
        assert_eq!(stats.bytes, 8192);
        assert_eq!(stats.seeks, 1);
        assert_eq!(stats.average_seek_distance(), (1 << 20) as f64);
        assert!((stats.mean_service_seconds() - 0.007).abs() < 1e-12);
        assert!((stats.mean_response_seconds() - 0.013).abs() < 1e-12);
        assert!((stats.mean_late_micros() - 20.0).abs() < 1e-9);
        assert!((stats.max_late_micros - 30.0).abs() < 1e-9);
    }

    #[test]
    fn byte_counts_print_in_readable_units() {
        assert_eq!(human_bytes(512.0), "512.0 B");
        assert_eq!(human_bytes(112.0 * 1024.0), "112.0 KiB");
        assert_eq!(human_bytes(5.2 * 1024.0 * 1024.0), "5.2 MiB");
        assert_eq!(human_bytes(3.0 * (1u64 << 40) as f64), "3072.0 GiB");
    }

    #[test]
    fn json_has_counters_and_derived_means() {
        let stats = Stats {
            requests: 4,
            busy_seconds: 0.04,
            ..Stats::default()
        };
        let value: serde_json::Value = serde_json::from_str(&stats.to_json()).unwrap();
        assert_eq!(value["requests"], 4);
        assert_eq!(value["mean_service_seconds"], 0.01);
        assert_eq!(value["average_seek_distance_bytes"], 0.0);
    }
}
