//! Long work off the UI thread: training (the engine's `compress` front door) on the named thread
//! `texset-train`, which streams its progress, and decoding and scoring previews, one
//! [`Task`] per bundle on `texset-decode`. The UI drains both once a frame; neither ever blocks a
//! frame.

use super::task::{Repaint, Task, TaskError};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use texset_core::{
    Cancel, CompressError, Compressed, Pass, Progress, TrainStatus,
    bundle::Bundle,
    compress,
    decode::{DecodedMap, Decoder},
    drivers::{RateError, RateTarget, compress_to_psnr},
    eval::{EvalReport, decode_set, score},
    model::{ModelLayout, ModelParams},
    options::CompressOptions,
    set::TextureSet,
    snapshot_bundle,
    train::TrainError,
};

/// How far below the UI thread the studio's background threads run: the `nice` value Linux gives
/// them (the UI's is 0; 19 is the lowest). The UI then wins the cores whenever it has a frame to
/// draw, and background work gets every cycle a frame leaves. On lavapipe (Mesa 22.3) the
/// rasteriser's threads are the screen's: made by the first device, at the UI's priority, and
/// shared by every device on the adapter, one scene at a time. What the preview draws runs there
/// whatever its thread's value, so the preview bounds its scenes instead
/// (docs/decisions/051-viewport-moves-on-decoded-textures.md). The measurements:
/// docs/benchmarks.md, "bench ui", and docs/decisions/020-studio-background-priority.md.
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (Linux; elsewhere nothing). Threads
/// it starts afterwards inherit it.
pub fn lower_thread_priority() {
    set_nice(BACKGROUND_NICE);
}

/// Moves the calling thread to Linux's `SCHED_IDLE` class (elsewhere: nothing): it runs only on
/// cycles no normal thread wants. Falls back to [`BACKGROUND_NICE`] where the class cannot be set.
///
/// For the training pool when the window renders on a software GPU ([`Background::below_frames`]).
/// A nice value alone was not enough on two cores: with the UI's two software-rasteriser threads
/// on one core and a nice +10 trainer alone on the other, the scheduler left them there, and frames
/// took twice as long for a second at a time. A core running only `SCHED_IDLE` threads counts as
/// idle when a waking thread picks its core, so the rasteriser takes it
/// (docs/decisions/020-studio-background-priority.md). Short work the user waits on (ingest, analysis) stays at
/// [`BACKGROUND_NICE`]: in `SCHED_IDLE` any other busy process on the machine starves it.
pub fn run_below_everything() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // On Linux pid 0 names the calling thread, not the whole process.
        #[expect(unsafe_code, reason = "sched_setscheduler(2) has no safe wrapper in std; it reads only `param`, a local")]
        // SAFETY: `param` is a valid, initialised `sched_param` that outlives the call.
        let status = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &raw const param) };
        if status == 0 {
            return;
        }
    }
    lower_thread_priority();
}

/// Sets the calling thread's nice value (Linux; elsewhere nothing). Failing leaves the thread at
/// the UI's priority: slower frames, nothing wrong.
fn set_nice(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // On Linux `PRIO_PROCESS` with id 0 names the calling thread, not the whole process.
        #[expect(unsafe_code, reason = "setpriority(2) has no safe wrapper in std; its arguments are plain integers")]
        // SAFETY: setpriority reads only its integer arguments and touches no memory of ours.
        let status = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        let _ = status;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Starts a named background thread at [`BACKGROUND_NICE`].
pub fn spawn_background<T: Send + 'static>(name: &str, work: impl FnOnce() -> T + Send + 'static) -> std::io::Result<JoinHandle<T>> {
    std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        lower_thread_priority();
        work()
    })
}

/// Where the studio's background CPU work (training, decoding, block compression) runs: a pool
/// of threads at [`BACKGROUND_NICE`] as large as the machine or, when the window renders on a
/// software GPU ([`Background::below_frames`]), one thread smaller and in `SCHED_IDLE`, so the UI
/// thread and the software rasteriser keep the cores while training runs; there the decodes of
/// snapshots run on a thread of their own beside it ([`Background::for_decodes`]).
/// Results do not depend on it (training is deterministic per seed for any thread count).
#[derive(Clone, Default)]
pub struct Background {
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Where decodes run when not on `pool`.
    decodes: Option<Arc<rayon::ThreadPool>>,
}

impl Background {
    /// A pool with a thread per core at [`BACKGROUND_NICE`] (rayon's global pool if it cannot be
    /// made).
    #[must_use]
    pub fn all_cores() -> Self {
        Self::with_threads(std::thread::available_parallelism().map_or(1, std::num::NonZero::get), lower_thread_priority)
    }

    /// For a window on a software GPU: a pool that leaves one core free (one thread on a one-core
    /// machine), its threads in `SCHED_IDLE` ([`run_below_everything`]).
    #[must_use]
    pub fn below_frames() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let decodes = pool("texset-decode", 1, run_below_everything);
        Self { decodes, ..Self::with_threads(cores.saturating_sub(1).max(1), run_below_everything) }
    }

    fn with_threads(threads: usize, priority: fn()) -> Self {
        Self { pool: pool("texset-work", threads, priority), decodes: None }
    }

    /// Where the decodes of snapshots run: on this pool, or (a window on a software GPU) on a
    /// thread of their own in `SCHED_IDLE`. The training run holds that pool's one thread for
    /// the whole run: a decode queued behind it waited for the run to end, so neither Compare
    /// nor the viewport showed a snapshot's decoded maps while training.
    #[must_use]
    pub fn for_decodes(&self) -> Self {
        Self { pool: self.decodes.clone().or_else(|| self.pool.clone()), decodes: None }
    }

    /// Threads the work runs on.
    #[must_use]
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or_else(rayon::current_num_threads, |p| p.current_num_threads())
    }

    /// Runs `work` (on the calling thread) with its parallel parts on this pool.
    pub fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }
}

/// A pool of `threads` named `name-i` at `priority` (`None` where it cannot be made).
fn pool(name: &'static str, threads: usize, priority: fn()) -> Option<Arc<rayon::ThreadPool>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(move |_| priority())
        .build();
    pool.ok().map(Arc::new)
}

/// What the training thread reports.
pub enum TrainEvent {
    /// A pass started.
    PassStarted(Pass),
    /// A pass finished, with its one-line summary.
    PassFinished(Pass, String),
    /// Training moved on.
    Status(TrainStatus),
    /// The engine went on another way (a GPU failure fell back to the CPU).
    Warning(String),
    /// A line for the run's log (rate control's trials).
    Note(String),
    /// The model as it stands, packed (sent every `snapshot_every`).
    Snapshot(Arc<Bundle>),
    /// The run ended: the bundle, or why not (cancelled included).
    Finished(Box<Result<Compressed, TrainFailure>>),
}

/// Why a training run gave no bundle, typed: the panels tell a cancellation from a failure by
/// its variant.
#[derive(Debug, thiserror::Error)]
pub enum TrainFailure {
    /// The artist cancelled it.
    #[error("training was cancelled")]
    Cancelled,
    /// The engine refused or failed.
    #[error(transparent)]
    Compress(CompressError),
    /// Rate control failed (a bad target, or scoring a trial).
    #[error(transparent)]
    Rate(RateError),
    /// The training thread died (a bug).
    #[error(transparent)]
    Died(TaskError),
}

impl From<CompressError> for TrainFailure {
    fn from(error: CompressError) -> Self {
        match error {
            CompressError::Train(TrainError::Cancelled) => Self::Cancelled,
            other => Self::Compress(other),
        }
    }
}

impl From<RateError> for TrainFailure {
    fn from(error: RateError) -> Self {
        match error {
            RateError::Compress(compress) => compress.into(),
            other => Self::Rate(other),
        }
    }
}

/// Sends the engine's progress to the UI (pausing is the training loop's, through [`Cancel`]).
struct ChannelProgress {
    events: Mutex<Sender<TrainEvent>>,
    set: Arc<TextureSet>,
    snapshot_every: Duration,
    last_snapshot: Mutex<Instant>,
    repaint: Arc<dyn Fn() + Send + Sync>,
}

impl ChannelProgress {
    fn send(&self, event: TrainEvent) {
        if let Ok(events) = self.events.lock() {
            // The UI may have dropped the receiver (job replaced): nothing to tell then.
            let _ = events.send(event);
        }
        (self.repaint)();
    }
}

impl Progress for ChannelProgress {
    fn pass_started(&self, pass: Pass) {
        self.send(TrainEvent::PassStarted(pass));
    }
    fn train_status(&self, status: &TrainStatus) {
        self.send(TrainEvent::Status(status.clone()));
    }
    fn pass_finished(&self, pass: Pass, summary: &str) {
        self.send(TrainEvent::PassFinished(pass, summary.to_owned()));
    }
    fn warning(&self, message: &str) {
        self.send(TrainEvent::Warning(message.to_owned()));
    }
    fn snapshot_due(&self) -> bool {
        self.last_snapshot.lock().is_ok_and(|t| t.elapsed() >= self.snapshot_every)
    }
    fn snapshot(&self, layout: &ModelLayout, params: &ModelParams) {
        if let Ok(mut t) = self.last_snapshot.lock() {
            *t = Instant::now();
        }
        if let Ok(bundle) = snapshot_bundle(&self.set, layout, params) {
            self.send(TrainEvent::Snapshot(Arc::new(bundle)));
        }
    }
}

/// A training run on its own thread.
pub struct TrainJob {
    events: Receiver<TrainEvent>,
    cancel: Cancel,
    thread: Option<JoinHandle<()>>,
}

impl TrainJob {
    /// Starts `compress(set, options)` on the thread `texset-train` or, when `target` gives one,
    /// rate control (`compress_to_psnr`: whole trainings at rates searched in log space, each trial a log line). `repaint` is called after each event so the UI wakes up to show it.
    pub fn start(
        set: Arc<TextureSet>,
        options: CompressOptions,
        target: impl FnOnce(&TextureSet) -> Option<RateTarget> + Send + 'static,
        snapshot_every: Duration,
        repaint: Repaint,
        background: &Background,
    ) -> std::io::Result<Self> {
        let background = background.clone();
        let (sender, events) = channel();
        let cancel = Cancel::new();
        let progress = ChannelProgress {
            events: Mutex::new(sender),
            set: Arc::clone(&set),
            snapshot_every,
            last_snapshot: Mutex::new(Instant::now()),
            repaint,
        };
        let thread_cancel = cancel.clone();
        let thread = spawn_background("texset-train", move || {
            // Measuring a target (block-compressing the set for `--match-bc`) is work for this
            // thread too, not the UI's. A panic is caught and reported as the run's failure.
            let run = || match &target(&set) {
                None => compress(&set, &options, &progress, &thread_cancel).map_err(TrainFailure::from),
                Some(target) => {
                    let on_trial = |t: &texset_core::drivers::RateTrial| {
                        progress.send(TrainEvent::Note(format!(
                            "rate trial: {:.3} bits per texel -> {:.2} dB ({} bytes, {:.1} s)",
                            t.bits_per_texel, t.pooled_psnr_db, t.bundle_bytes, t.train_secs
                        )));
                    };
                    compress_to_psnr(&set, &options, target, &progress, &thread_cancel, &on_trial)
                        .map(|(compressed, report)| {
                            let chosen = report.trials.get(report.chosen);
                            progress.send(TrainEvent::Note(format!(
                                "target {:.2} dB {}: kept {:.3} bits per texel after {} trials",
                                report.target.psnr_db,
                                if report.reached { "reached" } else { "not reached (the best trial is kept)" },
                                chosen.map_or(0.0, |t| t.bits_per_texel),
                                report.trials.len()
                            )));
                            compressed
                        })
                        .map_err(TrainFailure::from)
                }
            };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| background.run(run))).unwrap_or_else(|panic| {
                Err(TrainFailure::Died(TaskError::Died { task: "texset-train", message: super::task::panic_message(&*panic) }))
            });
            progress.send(TrainEvent::Finished(Box::new(result)));
        })?;
        Ok(Self { events, cancel, thread: Some(thread) })
    }

    /// Events since the last call (never blocks).
    #[must_use]
    pub fn drain(&self) -> Vec<TrainEvent> {
        let mut out = Vec::new();
        loop {
            match self.events.try_recv() {
                Ok(event) => out.push(event),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }

    /// Holds training before its next step.
    pub fn pause(&self) {
        self.cancel.pause();
    }
    /// Lets it go on.
    pub fn resume(&self) {
        self.cancel.resume();
    }
    /// Whether it is held.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.cancel.is_paused()
    }
    /// Asks it to stop; it reports `Finished(Err(TrainFailure::Cancelled))`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl Drop for TrainJob {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(thread) = self.thread.take() {
            // The trainer checks the flag every step: this returns within one step.
            let _ = thread.join();
        }
    }
}

/// Decoded maps of a bundle and their scores against the set.
pub struct Decoded {
    /// Which bundle generation this is (to drop stale results).
    pub generation: u64,
    /// Per material, per map (in the set's order); shared with the viewport, which draws from
    /// them while its view moves.
    pub maps: Arc<Vec<Vec<DecodedMap>>>,
    /// PSNR/SSIM per map and pooled.
    pub scores: Option<EvalReport>,
    /// Rendered error per material (with the slow metrics: the final bundle, not snapshots).
    pub rendered: Vec<crate::rendered::RenderedScore>,
}

/// One bundle to decode and score.
struct DecodeRequest {
    generation: u64,
    bundle: Arc<Bundle>,
    set: Arc<TextureSet>,
    with_ssim: bool,
}

/// How many times as long as a snapshot's decode took the next one waits, so that decodes beside
/// a training run (each the whole library) take a quarter of a core at most. On a software GPU
/// they run in `SCHED_IDLE` beside training, and where other work leaves the studio little CPU
/// they share what is left with it. On 2-core lavapipe, back to back, they made 600 training steps
/// of the shoe 1.45× slower. Resting as long as the decode took, the studio's `--capture` beside
/// one busy core and one half-busy reached its first run's end in 43.9 and 60.3 s; resting three
/// times as long, in 36.0 and 36.1 s (decision 051's amendment).
const DECODE_REST: u32 = 3;

/// Decodes bundles one at a time, each on a [`Task`] (`texset-decode`); a bundle sent while one
/// decodes waits, and only the newest waiting one is decoded.
pub struct DecodeQueue {
    running: Option<Task<Result<Decoded, String>>>,
    /// When the running decode started.
    started: Instant,
    /// A snapshot's decode waits until then: [`DECODE_REST`] times as long as the last decode
    /// took.
    rest_until: Instant,
    waiting: Option<DecodeRequest>,
    background: Background,
    repaint: Repaint,
}

impl DecodeQueue {
    /// A queue whose tasks run their parallel parts on `background` and wake the UI with `repaint`.
    #[must_use]
    pub fn new(repaint: Repaint, background: Background) -> Self {
        Self { running: None, started: Instant::now(), rest_until: Instant::now(), waiting: None, background, repaint }
    }

    /// Queues a bundle (replacing one still waiting).
    pub fn request(&mut self, generation: u64, bundle: Arc<Bundle>, set: Arc<TextureSet>, with_ssim: bool) {
        self.waiting = Some(DecodeRequest { generation, bundle, set, with_ssim });
        self.start_next();
    }

    fn start_next(&mut self) {
        // A finished bundle's decode (scored with SSIM) does not wait.
        let resting = Instant::now() < self.rest_until && self.waiting.as_ref().is_some_and(|w| !w.with_ssim);
        if self.running.is_some() || resting {
            return;
        }
        let Some(request) = self.waiting.take() else { return };
        self.started = Instant::now();
        let background = self.background.clone();
        self.running = Some(Task::spawn("texset-decode", Arc::clone(&self.repaint), move || {
            let DecodeRequest { generation, bundle, set, with_ssim } = request;
            background.run(|| decode_and_score(generation, &bundle, &set, with_ssim))
        }));
    }

    /// The finished result, if any (a task that died is an `Err` naming it); starts the next
    /// waiting bundle.
    pub fn poll(&mut self) -> Option<Result<Decoded, String>> {
        let result = super::task::take_finished(&mut self.running).map(|r| r.unwrap_or_else(|died| Err(died.to_string())));
        if result.is_some() {
            self.rest_until = Instant::now() + self.started.elapsed() * DECODE_REST;
        }
        self.start_next();
        result
    }

    /// Whether a decode is running or waiting.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.running.is_some() || self.waiting.is_some()
    }
}

/// Decodes every map of `bundle` in the set's order (rounded to each file's format, as exported)
/// and scores it: one decode serves both.
pub fn decode_and_score(generation: u64, bundle: &Bundle, set: &TextureSet, with_ssim: bool) -> Result<Decoded, String> {
    let maps = decode_set(set, &Decoder::new(bundle)).map_err(|e| e.to_string())?;
    let scores = Some(score(set, &maps, with_ssim));
    // As `texset eval` measures it (8 lights, 256²), so the two agree.
    let rendered = if with_ssim { crate::rendered::rendered_scores(set, &bundle.manifest, &maps, 8, 256) } else { Vec::new() };
    Ok(Decoded { generation, maps: Arc::new(maps), scores, rendered })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn decodes_beside_a_software_windows_training_do_not_wait_for_it() {
        let background = Background::below_frames();
        let decodes = background.for_decodes();
        assert_eq!(decodes.threads(), 1, "a thread of their own");
        // Training holds every thread of its pool for the whole run.
        let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (started, training_started) = channel();
        let (training_pool, held) = (background.clone(), Arc::clone(&released));
        let training = std::thread::spawn(move || {
            training_pool.run(|| {
                rayon::broadcast(|_| {
                    let _ = started.send(());
                    let since = Instant::now();
                    while !held.load(std::sync::atomic::Ordering::Acquire) && since.elapsed() < Duration::from_secs(30) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                });
            });
        });
        training_started.recv_timeout(Duration::from_secs(30)).expect("training started");
        // A decode still runs meanwhile (before, it queued behind the run on the same pool).
        let (done, decoded) = channel();
        let decode = std::thread::spawn(move || decodes.run(|| done.send(rayon::current_num_threads()).is_ok()));
        let threads = decoded.recv_timeout(Duration::from_secs(30)).expect("the decode ran while training held its pool");
        assert_eq!(threads, 1);
        released.store(true, std::sync::atomic::Ordering::Release);
        assert!(decode.join().is_ok_and(|sent| sent));
        assert!(training.join().is_ok());
    }

    #[test]
    fn a_window_on_a_hardware_gpu_decodes_on_the_training_pool() {
        let background = Background::all_cores();
        let decodes = background.for_decodes();
        let (pool, decode_pool) = (background.pool.as_ref().map(Arc::as_ptr), decodes.pool.as_ref().map(Arc::as_ptr));
        assert!(pool.is_some());
        assert_eq!(pool, decode_pool);
    }
}
