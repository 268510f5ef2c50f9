//! The advice thread: one per process (in the process state, `registry.rs`),
//! started on the first job, that runs the rounds' advice and the closes of
//! retired private descriptors (`descriptors.rs`) in the order they were
//! queued, off the reading threads.

use std::sync::mpsc::Sender;
use std::sync::OnceLock;

/// Work for the advice thread.
pub type AdviceJob = Box<dyn FnOnce() + Send>;

/// The advice thread's queue, started on the first job.
#[derive(Default)]
pub struct AdviceThread {
    queue: OnceLock<Sender<AdviceJob>>,
}

impl AdviceThread {
    /// Runs `job` on this process's advice thread (started on first use);
    /// gives the job back if no thread can be had.
    pub fn run_in_background(&self, job: AdviceJob) -> Result<(), AdviceJob> {
        let queue = self.queue.get_or_init(|| {
            let (sender, receiver) = std::sync::mpsc::channel::<AdviceJob>();
            // If the thread cannot start, the receiver is dropped with the
            // closure, every send fails, and rounds run in the caller.
            let _ = std::thread::Builder::new()
                .name("libprefetch-advice".into())
                .spawn(move || {
                    let _inside = crate::guard::Reentry::enter();
                    for job in receiver {
                        job();
                    }
                });
            sender
        });
        queue.send(job).map_err(|failed| failed.0)
    }
}
