//! The emulator's two time bases and the precise sleep that joins them.
//!
//! Model time is the disk model's clock (it starts at zero when the disk is
//! mounted); wall time is `Instant`. With time scale S, one second of model
//! time lasts S seconds of wall time, so S = 0.1 runs the disk ten times faster
//! than the drive it models, with every duration shrunk alike.
//!
//! The sleep is the usual
//! "sleep, then spin the last stretch" of soft real-time loops.

use std::time::{Duration, Instant};

/// The stretch before a deadline that `sleep_until` spins instead of sleeping:
/// a Linux timer sleep wakes tens of microseconds late on a busy machine, so
/// sleeping to within this distance and spinning the rest lands on the
/// deadline. The emulator's counters report how late completions really were.
pub const SPIN: Duration = Duration::from_micros(150);

/// Converts between model time and wall time for one mounted disk.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
    scale: f64,
}

impl Clock {
    /// A clock whose model time is zero now; `scale` is wall seconds per model
    /// second (must be finite and positive; `Config::validate` checks it).
    pub fn start(scale: f64) -> Self {
        Clock {
            start: Instant::now(),
            scale,
        }
    }

    /// The current model time.
    pub fn model_now(&self) -> Duration {
        self.to_model(self.start.elapsed())
    }

    /// The wall-clock instant at which model time reaches `model`.
    pub fn wall_at(&self, model: Duration) -> Instant {
        self.start + self.to_wall(model)
    }

    /// A model-time span expressed in wall time.
    pub fn to_wall(&self, model: Duration) -> Duration {
        model.mul_f64(self.scale)
    }

    /// A wall-time span expressed in model time.
    pub fn to_model(&self, wall: Duration) -> Duration {
        wall.div_f64(self.scale)
    }
}

/// Blocks the calling thread until `deadline`: sleeps until `SPIN` before it,
/// then spins. Returns at once when the deadline has passed.
pub fn sleep_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Asks the kernel to wake this thread's timed sleeps without the default
/// 50 us timer slack. Best effort: on failure the sleeps are only less precise.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only changes
    // the calling thread's timer slack; no memory is passed.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Asks for real-time scheduling (SCHED_FIFO, lowest priority) for the calling
/// thread and the threads it creates afterwards, so that on a busy machine the
/// emulator wakes at its deadlines instead of waiting behind compilers. Best
/// effort: refused to users without CAP_SYS_NICE (then timing is only less
/// precise under load); the kernel's real-time throttling still leaves other
/// tasks 5% of each core, and these threads sleep between requests. Returns
/// whether it was granted.
pub fn prefer_realtime() -> bool {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler reads the sched_param it is given, which lives
    // for the call; pid 0 means the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_converts_both_ways() {
        let clock = Clock::start(0.1);
        assert_eq!(
            clock.to_wall(Duration::from_millis(10)),
            Duration::from_millis(1)
        );
        assert_eq!(
            clock.to_model(Duration::from_millis(1)),
            Duration::from_millis(10)
        );
        assert_eq!(
            clock.wall_at(Duration::from_secs(10)) - clock.wall_at(Duration::ZERO),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn sleep_until_never_returns_early() {
        tighten_timer_slack();
        for micros in [0u64, 50, 300, 2_000] {
            let deadline = Instant::now() + Duration::from_micros(micros);
            sleep_until(deadline);
            assert!(
                Instant::now() >= deadline,
                "woke before a {micros} us deadline"
            );
        }
    }
}
