//! Progress reporting and cancellation, shared by the CLI, the studio and the tests.

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A pass of the compression pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pass {
    /// Channel budgets and set statistics.
    Analyse,
    /// Training the latents and decoder.
    Train,
    /// Removing latent channels no texture reads.
    Prune,
    /// Quantising latents and weights.
    Quantise,
    /// Writing the bundle layout.
    Pack,
}

/// The part of training a step is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrainPhase {
    /// Latents train, continuous: with ±½-step uniform noise under QAT, in float under PTQ
    /// ([`crate::train::Schedule::latent_noise`]).
    NoisyLatents,
    /// Latents rounded and frozen; decoder trains in float.
    FrozenLatents,
    /// Decoder trains through its weight format's fake-quantisation (QAT weights; int8 by name,
    /// whichever format the run ships).
    Int8Weights,
}

/// A training status update.
#[derive(Clone, Debug, Serialize)]
pub struct TrainStatus {
    /// Steps done.
    pub step: u32,
    /// Steps in all.
    pub total_steps: u32,
    /// Current phase.
    pub phase: TrainPhase,
    /// What the phase does under this run's schedule, in words
    /// ([`crate::train::Schedule::phase_label`]): a progress line shows this, not the name.
    pub phase_label: String,
    /// Mean squared error per target channel over recent steps.
    pub loss: f32,
    /// PSNR estimate from that loss, in dB (values in [0, 1]; before output clamping and rounding).
    pub psnr_estimate_db: f32,
    /// Training throughput, texels per second.
    pub texels_per_sec: f64,
    /// Seconds since training started.
    pub elapsed_secs: f64,
    /// Estimated seconds to the end.
    pub eta_secs: f64,
}

/// Receives progress. Every method has an empty default.
pub trait Progress: Sync {
    /// A pass starts.
    fn pass_started(&self, _pass: Pass) {}
    /// Training moved on (called a few times per second at most).
    fn train_status(&self, _status: &TrainStatus) {}
    /// A pass finished; `summary` says what it did in one line.
    fn pass_finished(&self, _pass: Pass, _summary: &str) {}
    /// Something went wrong and the pass went on another way (a GPU failure fell back to the
    /// CPU); `message` says what, in one line.
    fn warning(&self, _message: &str) {}
    /// Something to know before a long pass (how long a run will take); one line.
    fn note(&self, _message: &str) {}
    /// Whether the receiver wants the current model now (asked after every training step; keep
    /// it cheap). The studio says yes every few seconds to refresh its previews.
    fn snapshot_due(&self) -> bool {
        false
    }
    /// The current model, as it would ship if training stopped now (latents rounded, weights
    /// int8-quantised): sent when [`Progress::snapshot_due`] said yes. Pack it with
    /// [`crate::pipeline::snapshot_bundle`].
    fn snapshot(&self, _layout: &crate::model::layout::ModelLayout, _params: &crate::model::params::ModelParams) {}
}

/// Ignores progress.
pub struct NoProgress;
impl Progress for NoProgress {}

/// The controls of a running job: cancel, and pause/resume of training. Cheap to clone and share
/// with a worker thread; the training loop looks at them before every step.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    cancelled: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
}

impl Cancel {
    /// Controls that ask for nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks the work to stop at the next step.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
    /// Whether cancellation was asked for.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
    /// Holds training before its next step until [`Self::resume`] (or a cancel).
    pub fn pause(&self) {
        self.paused.store(true, Ordering::Relaxed);
    }
    /// Lets paused training go on.
    pub fn resume(&self) {
        self.paused.store(false, Ordering::Relaxed);
    }
    /// Whether training is asked to wait.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
}
