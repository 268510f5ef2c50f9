//! SSD: a serial controller cost per command, a fixed array-read latency per flash page, pages
//! striped over parallel channels, and one shared host transfer bus of limited bandwidth. No seek
//! or rotation: position matters only through which channel a page lives on.
//!
//! A command first holds the controller for `command_overhead` (one command at a time). Then
//! each 4 KiB page is read on channel `page % channels` (busy `latency` per page) and crosses
//! the bus (busy `PAGE_BYTES / bandwidth` per page) in order. Overlapping requests (up to
//! [`DiskModel::parallelism`], the device queue depth) contend for all three, which is what
//! makes random 4 KiB reads faster at queue depth 32 than at depth 1, but only up to the
//! controller's rate.
//! Deviations: no paper models SSDs. The issue names latency, channels and bandwidth; the
//! controller cost is added because no integer channel count reproduces this machine's
//! measured 2.7x gain at depth 32 together with its 2 GB/s large reads. No FTL, garbage
//! collection or write costs.

use crate::{DiskModel, Request};
use std::time::Duration;

/// Size of a flash page, the unit of striping.
pub const PAGE_BYTES: u64 = 4096;

/// Parameters of an [`Ssd`].
#[derive(Clone, Debug, PartialEq)]
pub struct SsdParams {
    /// Controller time per command, served one command at a time.
    pub command_overhead: Duration,
    /// Array read time of one page on its channel.
    pub latency: Duration,
    /// Number of channels pages are striped over (at least 1).
    pub channels: usize,
    /// Bandwidth of the shared host bus, bytes per second (positive).
    pub bandwidth: f64,
    /// Requests the device serves at once (at least 1).
    pub queue_depth: usize,
    /// Capacity in bytes.
    pub capacity: u64,
}

/// An SSD timing model (see the module documentation).
#[derive(Clone, Debug)]
pub struct Ssd {
    params: SsdParams,
    channel_free: Vec<Duration>,
    controller_free: Duration,
    bus_free: Duration,
    head: u64,
}

impl Ssd {
    /// A fresh device with all channels idle. `channels` and `queue_depth` below 1 count as 1.
    pub fn new(mut params: SsdParams) -> Self {
        params.channels = params.channels.max(1);
        params.queue_depth = params.queue_depth.max(1);
        Ssd {
            channel_free: vec![Duration::ZERO; params.channels],
            params,
            controller_free: Duration::ZERO,
            bus_free: Duration::ZERO,
            head: 0,
        }
    }

    /// The model's parameters.
    pub fn params(&self) -> &SsdParams {
        &self.params
    }

    fn page_transfer(&self) -> Duration {
        Duration::from_secs_f64(PAGE_BYTES as f64 / self.params.bandwidth)
    }
}

impl DiskModel for Ssd {
    fn service(&mut self, now: Duration, req: &Request) -> Duration {
        let end = req.end().min(self.params.capacity).max(req.addr + 1);
        let first_page = req.addr / PAGE_BYTES;
        let last_page = (end - 1) / PAGE_BYTES;
        let transfer = self.page_transfer();
        let issued = self.controller_free.max(now) + self.params.command_overhead;
        self.controller_free = issued;
        let mut done = issued;
        for page in first_page..=last_page {
            let channel = (page % self.params.channels as u64) as usize;
            let read_done = self.channel_free[channel].max(issued) + self.params.latency;
            self.channel_free[channel] = read_done;
            self.bus_free = self.bus_free.max(read_done) + transfer;
            done = done.max(self.bus_free);
        }
        self.head = end;
        done - now
    }

    fn head(&self) -> u64 {
        self.head
    }

    fn capacity(&self) -> u64 {
        self.params.capacity
    }

    fn parallelism(&self) -> usize {
        self.params.queue_depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::req;

    fn params() -> SsdParams {
        SsdParams {
            command_overhead: Duration::ZERO,
            latency: Duration::from_micros(10),
            channels: 4,
            bandwidth: 4096.0 / 5e-6,
            queue_depth: 32,
            capacity: 1 << 30,
        }
    }

    /// One page: 10 us on its channel, then 5 us on the bus.
    #[test]
    fn one_page_costs_latency_plus_transfer() {
        let mut ssd = Ssd::new(params());
        assert_eq!(
            ssd.service(Duration::ZERO, &req(8192, 4096)),
            Duration::from_micros(15)
        );
    }

    /// Four pages on four channels read together in 10 us, then cross the bus one after the
    /// other: 10 + 4 * 5 = 30 us.
    #[test]
    fn striped_pages_overlap_on_channels_and_queue_on_the_bus() {
        let mut ssd = Ssd::new(params());
        assert_eq!(
            ssd.service(Duration::ZERO, &req(0, 4 * 4096)),
            Duration::from_micros(30)
        );
    }

    /// Two overlapping requests on the same channel: the second waits for the first's array read
    /// (10 us), reads (10 us), then crosses the bus (5 us): 25 us.
    #[test]
    fn overlapping_requests_contend_for_a_channel() {
        let mut ssd = Ssd::new(params());
        ssd.service(Duration::ZERO, &req(0, 4096));
        assert_eq!(
            ssd.service(Duration::ZERO, &req(4 * 4096, 4096)),
            Duration::from_micros(25)
        );
    }

    /// With a 2 us controller cost, a second command issued at the same time is issued at 4 us,
    /// its page (on an idle channel) is read by 14 us, then waits for the bus until the first
    /// request's transfer ends at 17 us: done at 22 us.
    #[test]
    fn controller_serialises_commands() {
        let mut ssd = Ssd::new(SsdParams {
            command_overhead: Duration::from_micros(2),
            ..params()
        });
        assert_eq!(
            ssd.service(Duration::ZERO, &req(0, 4096)),
            Duration::from_micros(17)
        );
        assert_eq!(
            ssd.service(Duration::ZERO, &req(4096, 4096)),
            Duration::from_micros(22)
        );
    }

    /// Requests that do not overlap in time pay only their own cost.
    #[test]
    fn idle_device_forgets_past_contention() {
        let mut ssd = Ssd::new(params());
        ssd.service(Duration::ZERO, &req(0, 4096));
        let later = Duration::from_millis(1);
        assert_eq!(ssd.service(later, &req(0, 4096)), Duration::from_micros(15));
    }
}
