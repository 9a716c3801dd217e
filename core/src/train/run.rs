//! The one training entry ([`train`]: starting point, time budget, announcement, checkpoints and
//! report, for the trainers a backend's factory builds) and the one training loop ([`run`]:
//! cancel, pause, status, snapshots, checkpoints and resume, for any [`Trainer`]).

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::options::{CheckpointOptions, CompressOptions, Sampling};
use crate::progress::{Cancel, Progress, TrainPhase, TrainStatus};
use crate::set::TextureSet;
use crate::train::TrainError;
use crate::train::gates::LearnedCut;
use crate::train::sampler::Sampler;
use crate::train::schedule::{SamplingChange, Schedule};
pub use crate::train::time_budget::{ANNOUNCE_ABOVE_TEXELS, TimeBudget};
use crate::train::time_budget::{announce_duration, fit_time_budget};
use std::borrow::Cow;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a trainer can train. [`crate::compress`] asks [`Capabilities::missing`] once, before it
/// picks a trainer; a trainer asked for more refuses with the same words.
#[allow(clippy::struct_excessive_bools, reason = "a set of independent yes/no capabilities")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// A latent pyramid (mip chain).
    pub mip_chain: bool,
    /// Removing channels part-way (`BudgetConfig::prune`).
    pub channel_pruning: bool,
    /// Learned budgets (`BudgetConfig::learned`).
    pub learned_budgets: bool,
    /// Periodic checkpoints and resume.
    pub checkpoints: bool,
    /// Error-driven sampling (`SamplingConfig::mode`): its draws come from the shared
    /// [`crate::train::Sampler`] on the CPU.
    pub error_sampling: bool,
    /// The pieces of NTC's recipe ([`crate::options::Recipe::Ntc`]) burn's trainer lacks:
    /// per-latent noise and the staged FP8 weight QAT.
    pub ntc_optimiser: bool,
}

impl Capabilities {
    /// The fused CPU trainer: everything.
    pub const FUSED_CPU: Self = Self {
        mip_chain: true,
        channel_pruning: true,
        learned_budgets: true,
        checkpoints: true,
        error_sampling: true,
        ntc_optimiser: true,
    };
    /// The fused GPU trainer (train/gpu): a mip chain and checkpoints, no channel masks that
    /// change in training, and uniform draws only (it draws on the device from the draw table).
    pub const FUSED_GPU: Self = Self {
        mip_chain: true,
        channel_pruning: false,
        learned_budgets: false,
        checkpoints: true,
        error_sampling: false,
        ntc_optimiser: true,
    };
    /// burn's autodiff trainer (wgpu or flex).
    pub const BURN: Self = Self {
        mip_chain: false,
        channel_pruning: false,
        learned_budgets: false,
        checkpoints: false,
        error_sampling: true,
        ntc_optimiser: false,
    };

    /// Whether a schedule asks for per-latent noise or the FP8 weight stage.
    fn asks_ntc_optimiser(schedule: &crate::options::ScheduleConfig) -> bool {
        schedule.quantisation.latent_noise != crate::options::LatentNoise::PerRead || schedule.quantisation.fp8_weights_at.is_some()
    }

    /// The first thing `options` and the analysed `layout` ask that this trainer cannot train,
    /// as (what, why); `None` when it can train them all. Checkpoints are not asked here: the
    /// loop warns and goes on without.
    #[must_use]
    pub fn missing(self, options: &CompressOptions, layout: &ModelLayout) -> Option<(&'static str, &'static str)> {
        if layout.mip_levels > 1 && !self.mip_chain {
            Some(("a mip chain", "this trainer has no latent pyramid"))
        } else if options.budgets.prune.is_some() && !self.channel_pruning {
            Some(("channel pruning", "this trainer has no channel masks"))
        } else if options.budgets.learned.is_some() && !self.learned_budgets {
            Some(("learned budgets", "this trainer has no budget gates"))
        } else if options.schedule.sampling.mode != Sampling::Uniform && !self.error_sampling {
            Some(("error-driven sampling", "this trainer draws its texels uniformly on the device"))
        } else if Self::asks_ntc_optimiser(&options.schedule) && !self.ntc_optimiser {
            Some((
                "NTC's quantisation pieces (per-latent noise, FP8 weight QAT)",
                "burn's reference trainer draws its noise per read and has no FP8 stage",
            ))
        } else {
            None
        }
    }
}

/// One implementation of training: the loop ([`run`]) drives it a step at a time. The fused CPU
/// trainer (also for `texset add`, with frozen parameters) and burn's trainer implement it; a GPU
/// trainer is another implementation, keeping its state on the device and reading back only
/// when asked for a snapshot or a checkpoint.
pub trait Trainer {
    /// What it can train.
    fn capabilities(&self) -> Capabilities;
    /// The backend it trains on, as [`TrainReport::backend`] names it.
    fn backend(&self) -> String;
    /// Its run: the sampler, the schedule and the steps done.
    fn state(&self) -> &RunState<'_>;
    /// The schedule it follows.
    fn schedule(&self) -> &Schedule {
        &self.state().schedule
    }
    /// Steps done so far (after a resume, counting the resumed ones).
    fn steps_done(&self) -> u32 {
        self.state().step
    }
    /// Runs one step (a device trainer may only queue it).
    fn run_step(&mut self) -> Result<StepStats, TrainError>;
    /// Waits until every step queued so far has run (timing a device trainer); the CPU's steps
    /// have run when they return.
    fn wait(&self) -> Result<(), TrainError> {
        Ok(())
    }
    /// The layout a snapshot of the model now decodes with, given the analysed `layout`; `None`
    /// while no single layout expresses the model (budget gates before their cut).
    fn snapshot_layout<'l>(&self, layout: &'l ModelLayout) -> Option<Cow<'l, ModelLayout>> {
        Some(Cow::Borrowed(layout))
    }
    /// The model as it would ship now: latents rounded, weights in their format (an error when
    /// it cannot be read back from where it trains).
    fn final_params(&self) -> Result<ModelParams, TrainError>;
    /// Writes a checkpoint (atomically) to `path`.
    fn save_checkpoint(&self, path: &Path, fingerprint: &str) -> Result<(), TrainError> {
        let _ = (path, fingerprint);
        Err(TrainError::Backend("this trainer writes no checkpoints".into()))
    }
    /// With error-driven sampling ([`Capabilities::error_sampling`]): draws by the error map of
    /// `model` (the model as it would ship now, [`Trainer::final_params`]) from the next step
    /// on, or uniformly again with `None`. A trainer without the capability refuses.
    fn refresh_sampling(&mut self, model: Option<&ModelParams>) -> Result<(), TrainError> {
        let _ = model;
        Err(TrainError::Backend("this trainer draws its texels uniformly".into()))
    }
    /// Changes the run's length to `steps` part-way (a time budget re-fitted to the machine's
    /// speed now, [`LoopOptions::deadline`]); false when this trainer or its run cannot, and
    /// the length stays.
    fn refit_steps(&mut self, steps: u32) -> bool {
        let _ = steps;
        false
    }
    /// Restores a checkpoint of the same run (`fingerprint`); `layout` is the analysed one.
    fn load_checkpoint(&mut self, path: &Path, fingerprint: &str, layout: &ModelLayout) -> Result<(), TrainError> {
        let _ = (path, fingerprint, layout);
        Err(TrainError::Backend("this trainer resumes from no checkpoints".into()))
    }
    /// Latent channels removed in training (indices in the analysed layout,
    /// [`TrainReport::pruned_channels`]); none unless the trainer prunes.
    fn pruned_channels(&self) -> Vec<u32> {
        Vec::new()
    }
    /// The budgets learned in training, once cut ([`TrainReport::learned_budgets`]); none unless
    /// the trainer learns budgets.
    fn learned_cut(&self) -> Option<&LearnedCut> {
        None
    }
}

/// What every trainer keeps of its run ([`Trainer::state`]): the texels it draws from, the
/// schedule it follows and the steps done.
pub struct RunState<'a> {
    /// The texel sampler (a device trainer uploads its draw table and draws on the device).
    pub sampler: Sampler<'a>,
    /// The schedule (a time budget's re-fit changes its length part-way).
    pub schedule: Schedule,
    /// Steps done so far, the next step to run (after a resume, counting the resumed ones).
    pub step: u32,
}

impl<'a> RunState<'a> {
    /// A run of `schedule` drawing from `sampler`, at step 0.
    #[must_use]
    pub fn new(sampler: Sampler<'a>, schedule: Schedule) -> Self {
        Self { sampler, schedule, step: 0 }
    }

    /// [`Trainer::refit_steps`] of a trainer that reads its schedule step by step (the device
    /// holds no length): the run becomes `steps` long; false when no step would be left.
    pub fn refit_steps(&mut self, steps: u32) -> bool {
        self.schedule.with_steps(steps, self.step).map(|s| self.schedule = s).is_some()
    }

    /// [`Trainer::refresh_sampling`] of a trainer that draws from the sampler on the CPU
    /// ([`Sampler::refresh_for`] at the step it is at).
    pub fn refresh_sampling(&mut self, model: Option<&ModelParams>) {
        self.sampler.refresh_for(model, &self.schedule, self.step);
    }
}

/// Trains `set` in the one loop ([`run`]) with the trainers `make` builds from options and the
/// starting parameters: the time budget's probe ([`fit_time_budget`]), a long run's announcement
/// ([`announce_duration`], saying it trains on `announce_on`; none with `None`) and the run's
/// own, each gone before the next is made. A trainer without [`Capabilities::checkpoints`] is
/// given no checkpoints and no resume. The one entry of every backend's training.
pub(crate) fn train<'t>(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    announce_on: Option<&str>,
    make: impl Fn(&CompressOptions, &ModelParams) -> Result<Box<dyn Trainer + 't>, TrainError>,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    // The starting point does not depend on the steps: the time-budget probe and the run share it
    // (a fine-tune's bundle is read once).
    let start = crate::train::init::starting_params(set, layout, options)?;
    let (options, time_budget) = fit_time_budget(options, |o| make(o, &start), cancel)?;
    let options = options.as_ref();
    if let Some(on) = announce_on {
        announce_duration(options, |o| make(o, &start), on, progress, cancel)?;
    }
    let mut trainer = make(options, &start)?;
    let checkpoints = trainer.capabilities().checkpoints;
    let fingerprint = if checkpoints { crate::train::checkpoint::fingerprint(set, layout, options) } else { String::new() };
    let loop_options = LoopOptions {
        checkpoint: options.run.checkpoint.as_ref().filter(|_| checkpoints),
        resume_from: options.run.resume_from.as_deref().filter(|_| checkpoints),
        fingerprint: &fingerprint,
        layout: Some(layout),
        deadline: time_budget.as_ref().map(TimeBudget::deadline_from_now),
    };
    let outcome = run(trainer.as_mut(), &loop_options, progress, cancel)?;
    let report = TrainReport {
        pruned_channels: trainer.pruned_channels(),
        learned_budgets: trainer.learned_cut().cloned(),
        time_budget: time_budget.map(|b| b.with_refits(&outcome)),
        // The schedule as it ended: a time budget's run may have changed its length.
        ..TrainReport::new(trainer.backend(), trainer.schedule(), &outcome)
    };
    Ok((trainer.final_params()?, report))
}

/// What the loop does around the steps.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoopOptions<'a> {
    /// Periodic checkpoints.
    pub checkpoint: Option<&'a CheckpointOptions>,
    /// Resume from this checkpoint when it exists.
    pub resume_from: Option<&'a Path>,
    /// What a checkpoint must match ([`crate::train::checkpoint::fingerprint`]).
    pub fingerprint: &'a str,
    /// The analysed layout: snapshots decode with it and a resume restores against it. `None`:
    /// no snapshots and no resume (`texset add`, whose model is the grown library's).
    pub layout: Option<&'a ModelLayout>,
    /// When training must end (a time budget): at [`REFIT_AT`] of the run the loop times the
    /// steps since the last look and, when the steps left would end more than
    /// [`REFIT_TOLERANCE`] of the run away from it, asks the trainer for the length that ends
    /// there ([`Trainer::refit_steps`]). Other load on the machine changes a step's time after
    /// the budget's probe.
    pub deadline: Option<Instant>,
}

/// Fractions of the run at which a time budget's length is looked at again.
pub(crate) const REFIT_AT: [f32; 2] = [0.25, 0.5];
/// A re-fit changes the length only when it moves the end by more than this share of the run.
pub(crate) const REFIT_TOLERANCE: f64 = 0.05;
/// A re-fit never makes a run longer than this many times the length it started with.
pub(crate) const REFIT_MAX_GROWTH: f64 = 2.0;

/// A time budget's run re-fitted part-way ([`LoopOptions::deadline`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Refit {
    /// Steps done when the length changed.
    pub at_step: u32,
    /// Seconds per step measured since the last look.
    pub secs_per_step: f64,
    /// The run's length before.
    pub from_steps: u32,
    /// The length after.
    pub to_steps: u32,
}

/// The length that ends a run at its deadline: `done` steps run, `left_secs` to go at
/// `secs_per_step`, at least one more step and at most [`REFIT_MAX_GROWTH`] × `first_steps`;
/// `None` when that moves the end by no more than [`REFIT_TOLERANCE`] of `steps`.
#[must_use]
pub(crate) fn refit_length(done: u32, steps: u32, first_steps: u32, left_secs: f64, secs_per_step: f64) -> Option<u32> {
    let fit = f64::from(done) + (left_secs.max(0.0) / secs_per_step.max(1e-9)).floor();
    let wanted = fit.clamp(f64::from(done) + 1.0, (REFIT_MAX_GROWTH * f64::from(first_steps)).max(f64::from(done) + 1.0)) as u32;
    ((f64::from(wanted) - f64::from(steps)).abs() > REFIT_TOLERANCE * f64::from(steps)).then_some(wanted)
}

/// What the loop did.
#[derive(Debug)]
pub struct LoopOutcome {
    /// Step the run resumed from, if any.
    pub resumed_from_step: Option<u32>,
    /// Steps run in this call.
    pub steps_run: u32,
    /// Its timing and loss.
    pub status: StatusReporter,
    /// Error-map refreshes of error-driven sampling, and their seconds in all (reading the model
    /// back and measuring it).
    pub sampling_refreshes: u32,
    /// Seconds the refreshes took.
    pub sampling_refresh_secs: f64,
    /// Changes of length under a deadline.
    pub refits: Vec<Refit>,
}

/// How often a paused run looks at its controls.
const PAUSE_POLL: Duration = Duration::from_millis(25);

/// Runs `trainer` to the end of its schedule: resume, then per step cancel and pause, the step,
/// status, snapshots and checkpoints. The one loop every trainer runs in.
pub fn run(
    trainer: &mut dyn Trainer,
    options: &LoopOptions<'_>,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<LoopOutcome, TrainError> {
    let can_checkpoint = trainer.capabilities().checkpoints;
    let mut resumed_from_step = None;
    if let Some(path) = options.resume_from
        && path.exists()
    {
        if can_checkpoint {
            let layout = options.layout.ok_or_else(|| TrainError::Backend("resuming needs the analysed layout".into()))?;
            trainer.load_checkpoint(path, options.fingerprint, layout)?;
            resumed_from_step = Some(trainer.steps_done());
        } else {
            progress.warning(&format!("this trainer cannot resume; {} is not read", path.display()));
        }
    }
    let checkpoint = options.checkpoint.filter(|_| can_checkpoint);
    if options.checkpoint.is_some() && checkpoint.is_none() {
        progress.warning("this trainer writes no checkpoints; training goes on without");
    }
    let first_steps = trainer.schedule().steps;
    let start_step = trainer.steps_done();
    let mut status = StatusReporter::new(start_step);
    let mut last_checkpoint = Instant::now();
    let (mut sampling_refreshes, mut sampling_refresh_secs) = (0u32, 0.0f64);
    // Under a deadline: the looks at the length still to come, and when and where the last was.
    let mut looks = REFIT_AT.iter().copied().filter(|_| options.deadline.is_some()).peekable();
    let mut last_look = (Instant::now(), start_step);
    let mut refits = Vec::new();
    // The length is the schedule's: a re-fit under a deadline changes it part-way.
    while trainer.steps_done() < trainer.schedule().steps {
        let steps = trainer.schedule().steps;
        while cancel.is_paused() && !cancel.is_cancelled() {
            std::thread::sleep(PAUSE_POLL);
        }
        if cancel.is_cancelled() {
            return Err(TrainError::Cancelled);
        }
        let step = trainer.steps_done();
        match trainer.schedule().sampling_change(step, resumed_from_step == Some(step)) {
            Some(SamplingChange::Refresh) => {
                let started = Instant::now();
                let model = trainer.final_params()?;
                trainer.refresh_sampling(Some(&model))?;
                sampling_refreshes += 1;
                sampling_refresh_secs += started.elapsed().as_secs_f64();
            }
            Some(SamplingChange::Uniform) => trainer.refresh_sampling(None)?,
            None => {}
        }
        let stats = trainer.run_step()?;
        let done = trainer.steps_done();
        status.record(progress, trainer.schedule(), done, stats.phase, stats.mse);
        // Asked every step (progress implementations count steps with it).
        if progress.snapshot_due()
            && let Some(layout) = options.layout
            && let Some(current) = trainer.snapshot_layout(layout)
        {
            progress.snapshot(&current, &trainer.final_params()?);
        }
        if let Some(cp) = checkpoint
            && done < steps
            && last_checkpoint.elapsed().as_secs_f64() >= cp.every_secs
        {
            trainer.save_checkpoint(&cp.path, options.fingerprint)?;
            last_checkpoint = Instant::now();
        }
        if let (Some(deadline), Some(&fraction)) = (options.deadline, looks.peek())
            && f64::from(done) >= f64::from(fraction) * f64::from(steps)
            && done > last_look.1
            && done < steps
        {
            trainer.wait()?;
            let now = Instant::now();
            let secs_per_step = now.duration_since(last_look.0).as_secs_f64() / f64::from(done - last_look.1);
            let left_secs = deadline.saturating_duration_since(now).as_secs_f64();
            if let Some(wanted) = refit_length(done, steps, first_steps, left_secs, secs_per_step)
                && trainer.refit_steps(wanted)
            {
                progress.note(&format!(
                    "time budget: steps now take {:.1} ms, so the run is {wanted} steps instead of {steps}",
                    secs_per_step * 1e3
                ));
                refits.push(Refit { at_step: done, secs_per_step, from_steps: steps, to_steps: wanted });
            }
            // The next look comes at a fraction of the length now still ahead.
            let steps = trainer.schedule().steps;
            while looks.next_if(|&f| f64::from(f) * f64::from(steps) <= f64::from(done)).is_some() {}
            last_look = (Instant::now(), done);
        }
    }
    Ok(LoopOutcome {
        resumed_from_step,
        steps_run: trainer.steps_done() - start_step,
        status,
        sampling_refreshes,
        sampling_refresh_secs,
        refits,
    })
}

/// What one step did.
#[derive(Clone, Copy, Debug)]
pub struct StepStats {
    /// Mean squared error per targeted channel value.
    pub mse: f32,
    /// Phase of the step.
    pub phase: TrainPhase,
}

/// Smooths the per-step loss and reports [`TrainStatus`] at most twice a second (and at the last
/// step): the bookkeeping every trainer shares.
#[derive(Debug)]
pub struct StatusReporter {
    start: Instant,
    last_report: Instant,
    start_step: u32,
    mse_ema: Option<f32>,
}

impl StatusReporter {
    /// Starts timing a run that begins at `start_step` (non-zero after a resume).
    #[must_use]
    pub fn new(start_step: u32) -> Self {
        Self { start: Instant::now(), last_report: Instant::now(), start_step, mse_ema: None }
    }

    /// Records a finished step (`step` steps done in all) with its per-channel MSE.
    pub fn record(&mut self, progress: &dyn Progress, schedule: &Schedule, step: u32, phase: TrainPhase, mse: f32) {
        let smoothed = self.mse_ema.map_or(mse, |e| 0.9 * e + 0.1 * mse);
        self.mse_ema = Some(smoothed);
        if step != schedule.steps && self.last_report.elapsed().as_secs_f64() <= 0.5 {
            return;
        }
        self.last_report = Instant::now();
        let elapsed = self.elapsed_secs();
        let steps_here = f64::from(step - self.start_step);
        progress.train_status(&TrainStatus {
            step,
            total_steps: schedule.steps,
            phase,
            phase_label: schedule.phase_label(phase),
            loss: smoothed,
            psnr_estimate_db: -10.0 * smoothed.max(1e-12).log10(),
            texels_per_sec: steps_here * schedule.batch_texels as f64 / elapsed.max(1e-9),
            elapsed_secs: elapsed,
            eta_secs: elapsed / steps_here.max(1.0) * f64::from(schedule.steps - step),
        });
    }

    /// Seconds since the run started.
    #[must_use]
    pub fn elapsed_secs(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The smoothed MSE of the last steps (0 before any step).
    #[must_use]
    pub fn mse(&self) -> f32 {
        self.mse_ema.unwrap_or(0.0)
    }
}

/// What training did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TrainReport {
    /// Backend that ran.
    pub backend: String,
    /// Steps run in this call (fewer than `total_steps` after a resume).
    pub steps_run: u32,
    /// Steps in all.
    pub total_steps: u32,
    /// Texels per step.
    pub batch_texels: usize,
    /// Wall time of training, seconds.
    pub train_secs: f64,
    /// Training throughput.
    pub texels_per_sec: f64,
    /// Final per-channel MSE estimate (last steps).
    pub final_mse: f32,
    /// Step the run resumed from, if any.
    pub resumed_from_step: Option<u32>,
    /// Latent channels removed during training (indices in the analysed layout).
    pub pruned_channels: Vec<u32>,
    /// The budgets learned in training ([`LearnedBudgets`](crate::options::LearnedBudgets)), when they were.
    pub learned_budgets: Option<LearnedCut>,
    /// How a time budget set the steps, when one did.
    pub time_budget: Option<TimeBudget>,
    /// Why GPU training was given up for the CPU trainer, when it was (no adapter, no device,
    /// device lost mid-run).
    pub gpu_fallback: Option<String>,
    /// How texels were drawn (`SamplingConfig::mode`).
    pub sampling: Sampling,
    /// Error-map refreshes of error-driven sampling (0 with uniform draws).
    pub sampling_refreshes: u32,
    /// Seconds the error-map refreshes took in all, within `train_secs`: the overhead of
    /// error-driven sampling.
    pub sampling_refresh_secs: f64,
}

impl TrainReport {
    /// The report of a run the loop timed (`outcome`).
    pub(crate) fn new(backend: String, schedule: &Schedule, outcome: &LoopOutcome) -> Self {
        let (steps_run, status) = (outcome.steps_run, &outcome.status);
        let train_secs = status.elapsed_secs();
        Self {
            backend,
            steps_run,
            total_steps: schedule.steps,
            batch_texels: schedule.batch_texels,
            train_secs,
            texels_per_sec: f64::from(steps_run) * schedule.batch_texels as f64 / train_secs.max(1e-9),
            final_mse: status.mse(),
            resumed_from_step: outcome.resumed_from_step,
            pruned_channels: Vec::new(),
            learned_budgets: None,
            time_budget: None,
            gpu_fallback: None,
            sampling: schedule.sampling,
            sampling_refreshes: outcome.sampling_refreshes,
            sampling_refresh_secs: outcome.sampling_refresh_secs,
        }
    }
}

#[cfg(test)]
mod tests;
