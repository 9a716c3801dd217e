//! One shape for the studio's background work. A [`Task`] runs one job on a named thread at
//! background priority ([`super::worker::BACKGROUND_NICE`]), asks for a repaint when it is done,
//! and hands its result to the UI thread through [`Task::poll`], which never blocks. A job that
//! panicked, or whose thread could not start, is reported once, as a [`TaskError`]: never a
//! silent hole where a result should be.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError, channel};

/// Asks the window for a frame (egui's `request_repaint`).
pub type Repaint = Arc<dyn Fn() + Send + Sync>;

/// Why a task gave no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// Its thread could not be started.
    #[error("the background job '{task}' could not start: {message}")]
    NotStarted {
        /// The thread's name.
        task: &'static str,
        /// The OS's reason.
        message: String,
    },
    /// It panicked (a bug): the message is the panic's.
    #[error("the background job '{task}' died: {message}")]
    Died {
        /// The thread's name.
        task: &'static str,
        /// The panic's message.
        message: String,
    },
}

/// One job on its own thread, and its result once it is done.
pub struct Task<T> {
    name: &'static str,
    results: Receiver<Result<T, TaskError>>,
    /// The result (or the failure) has been handed out: `poll` returns `None` from then on.
    reported: bool,
}

impl<T: Send + 'static> Task<T> {
    /// Starts `work` on the thread `name` at background priority; `repaint` is called once it is
    /// done (or has died), so the UI polls the result on its next frame.
    pub fn spawn(name: &'static str, repaint: Repaint, work: impl FnOnce() -> T + Send + 'static) -> Self {
        let (sender, results) = channel();
        let thread_sender = sender.clone();
        let spawned = super::worker::spawn_background(name, move || {
            let result =
                catch_unwind(AssertUnwindSafe(work)).map_err(|panic| TaskError::Died { task: name, message: panic_message(&*panic) });
            // The UI may have dropped the task (its result is no longer wanted): nothing to tell.
            let _ = thread_sender.send(result);
            repaint();
        });
        if let Err(e) = spawned {
            let _ = sender.send(Err(TaskError::NotStarted { task: name, message: e.to_string() }));
        }
        Self { name, results, reported: false }
    }
}

impl<T> Task<T> {
    /// The result, once, when the job is done (`Err` if it died); `None` while it runs and after
    /// the result was taken. Never blocks.
    pub fn poll(&mut self) -> Option<Result<T, TaskError>> {
        if self.reported {
            return None;
        }
        let result = match self.results.try_recv() {
            Ok(result) => result,
            Err(TryRecvError::Empty) => return None,
            // The thread ended without sending: it cannot (the send is after `catch_unwind`), but
            // an abort-on-panic build or a killed thread would get here. Said once.
            Err(TryRecvError::Disconnected) => {
                Err(TaskError::Died { task: self.name, message: "its thread ended without a result".to_owned() })
            }
        };
        self.reported = true;
        Some(result)
    }

    /// The thread's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// Polls an optional task: its result once it is done, clearing the slot.
pub fn take_finished<T>(slot: &mut Option<Task<T>>) -> Option<Result<T, TaskError>> {
    let result = slot.as_mut()?.poll()?;
    *slot = None;
    Some(result)
}

/// A panic's message (`panic!` with a string or a format), or a placeholder.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    fn wait<T>(task: &mut Task<T>) -> Result<T, TaskError> {
        let start = Instant::now();
        loop {
            if let Some(result) = task.poll() {
                return result;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the task never finished");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_task_hands_over_its_result_once_and_repaints() {
        let repaints = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&repaints);
        let mut task = Task::spawn("texset-test", Arc::new(move || _ = counter.fetch_add(1, Ordering::SeqCst)), || 6 * 7);
        assert_eq!(wait(&mut task), Ok(42));
        assert_eq!(task.poll(), None, "a result is handed out once");
        assert_eq!(repaints.load(Ordering::SeqCst), 1);
        assert_eq!(task.name(), "texset-test");
    }

    #[test]
    fn a_task_that_panics_is_reported_once_with_its_message() {
        let repaints = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&repaints);
        let mut task: Task<u32> = Task::spawn("texset-doomed", Arc::new(move || _ = counter.fetch_add(1, Ordering::SeqCst)), || {
            panic!("map {} has no texels", 3)
        });
        let error = wait(&mut task).unwrap_err();
        assert_eq!(error, TaskError::Died { task: "texset-doomed", message: "map 3 has no texels".into() });
        assert!(error.to_string().contains("texset-doomed"), "{error}");
        assert_eq!(task.poll(), None, "a death is said once");
        assert_eq!(repaints.load(Ordering::SeqCst), 1, "a dead task still wakes the UI");
    }

    #[test]
    fn take_finished_clears_the_slot_only_when_done() {
        let (go, gate) = channel::<()>();
        let mut slot = Some(Task::spawn("texset-gated", Arc::new(|| {}), move || gate.recv().is_ok()));
        assert!(take_finished(&mut slot).is_none());
        assert!(slot.is_some(), "a running task stays");
        go.send(()).unwrap();
        let start = Instant::now();
        let result = loop {
            if let Some(result) = take_finished(&mut slot) {
                break result;
            }
            assert!(start.elapsed() < Duration::from_secs(30));
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(result, Ok(true));
        assert!(slot.is_none());
    }
}
