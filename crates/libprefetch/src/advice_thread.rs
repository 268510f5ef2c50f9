//! The advice thread: one per process (in the process state, `registry.rs`),
//! started on the first job, that runs the rounds' advice and the closes of
//! retired private descriptors (`descriptors.rs`) in the order they were
//! queued, off the reading threads.
//!
//! It ends once no job came for [`IDLE_EXIT`], and the next job starts it
//! again: while a second thread lives, every system call on a descriptor
//! takes and drops a reference to its file (the kernel's `fdget` shortcut
//! holds only while the process's descriptor table has one user), and a
//! cached 4 KiB `pread` cost 7.6% more CPU time (median of 30 alternated
//! pairs of 100,000 reads, 1.59 us against 1.48; 1.51 once the thread has
//! exited, glibc's cancellation checks staying on). A client at rest (or
//! whose rounds find nothing to advise) queues no job, so a warm pass reads
//! single-threaded after its first rounds; a cold one, advising every few
//! milliseconds, keeps its thread.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Duration;

/// Work for the advice thread.
pub type AdviceJob = Box<dyn FnOnce() + Send>;

/// How long the advice thread waits for a job before it ends: starting it
/// again (about 50 us) costs at most 0.5% of the wait it follows.
pub const IDLE_EXIT: Duration = Duration::from_millis(10);

/// The advice thread's queue while the thread runs.
#[derive(Default)]
pub struct AdviceThread {
    queue: Mutex<Option<Sender<AdviceJob>>>,
}

impl AdviceThread {
    /// Runs `job` on this process's advice thread (started if none runs);
    /// gives the job back if no thread can be had.
    pub fn run_in_background(&'static self, job: AdviceJob) -> Result<(), AdviceJob> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let sender = queue.get_or_insert_with(|| self.start());
        // Sent under the lock: the thread ends only with the queue empty
        // under it, so no job is left behind.
        let sent = sender.send(job).map_err(|failed| failed.0);
        if sent.is_err() {
            *queue = None;
        }
        sent
    }

    /// Whether the thread runs now.
    #[cfg(test)]
    fn running(&self) -> bool {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Starts the thread; its queue's sender. If the thread cannot start,
    /// the receiver is dropped with the closure, the send fails, and the
    /// job runs in the caller.
    fn start(&'static self) -> Sender<AdviceJob> {
        let (sender, receiver) = std::sync::mpsc::channel::<AdviceJob>();
        let _ = std::thread::Builder::new()
            .name("libprefetch-advice".into())
            .spawn(move || {
                let _inside = crate::guard::Reentry::enter();
                self.serve(&receiver);
            });
        sender
    }

    /// Runs the jobs in order until none came for [`IDLE_EXIT`] and none
    /// is queued once the queue is locked.
    fn serve(&self, receiver: &Receiver<AdviceJob>) {
        loop {
            match receiver.recv_timeout(IDLE_EXIT) {
                Ok(job) => job(),
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                    match receiver.try_recv() {
                        Ok(job) => {
                            drop(queue);
                            job();
                        }
                        Err(_) => {
                            *queue = None;
                            return;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    fn leaked() -> &'static AdviceThread {
        Box::leak(Box::default())
    }

    #[test]
    fn the_thread_ends_when_idle_and_the_next_job_starts_it_again_in_order() {
        let advice = leaked();
        let (done, finished) = channel();
        for i in 0..3 {
            let done = done.clone();
            advice
                .run_in_background(Box::new(move || done.send(i).unwrap()))
                .unwrap_or_else(|_| panic!("no thread"));
        }
        assert_eq!(finished.iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
        while advice.running() {
            std::thread::sleep(IDLE_EXIT);
        }
        let again = done.clone();
        advice
            .run_in_background(Box::new(move || again.send(3).unwrap()))
            .unwrap_or_else(|_| panic!("no thread"));
        assert!(advice.running());
        assert_eq!(finished.recv().unwrap(), 3);
    }

    #[test]
    fn jobs_queued_while_the_thread_works_all_run() {
        let advice = leaked();
        let (done, finished) = channel();
        for i in 0..200u32 {
            let done = done.clone();
            let job: AdviceJob = Box::new(move || {
                if i % 50 == 0 {
                    std::thread::sleep(IDLE_EXIT * 2);
                }
                done.send(i).unwrap();
            });
            advice
                .run_in_background(job)
                .unwrap_or_else(|_| panic!("no thread"));
        }
        let got: Vec<u32> = finished.iter().take(200).collect();
        assert_eq!(got, (0..200).collect::<Vec<_>>());
    }
}
