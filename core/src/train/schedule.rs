//! The schedule every trainer follows: steps, learning-rate decay, the QAT phases (noisy latents,
//! frozen latents, weight fake-quantisation), and the rounding a model ships with.

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::model::quant::{self};
use crate::options::{CompressOptions, Quantisation, Sampling};
use crate::progress::TrainPhase;
use crate::train::init::FINE_TUNE_LEARNING_RATE_SCALE;
use crate::train::sampler::CHUNK_TEXELS;

/// The schedule a trainer follows.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Total steps.
    pub steps: u32,
    /// Texels per step.
    pub batch_texels: usize,
    /// Grid learning rate.
    pub grid_learning_rate: f32,
    /// MLP learning rate.
    pub mlp_learning_rate: f32,
    /// Step at which latents are rounded and frozen (`steps`: never, PTQ: rounded at pack).
    pub freeze_step: u32,
    /// Step from which weights train through int8 fake-quantisation (`steps`: never, PTQ).
    pub int8_step: u32,
    /// Whether latents train with uniform noise of ±½ step (QAT) or in float (PTQ).
    pub latent_noise: bool,
    /// Bits of each grid.
    pub grid_bits: Vec<u32>,
    /// The format weights fake-quantise to (and ship in).
    pub weight_format: quant::WeightFormat,
    /// Seed.
    pub seed: u64,
    /// How texels are drawn ([`crate::options::ScheduleConfig::sampling`]).
    pub sampling: Sampling,
    /// Share of the draws that follow the error map ([`crate::options::ScheduleConfig::sampling_mix`]).
    pub sampling_mix: f32,
    /// With error-driven sampling, the error map is refreshed every this many steps.
    pub sampling_refresh_every: u32,
    /// Step from which the draws are uniform again (`steps`: never).
    pub sampling_uniform_step: u32,
    /// After a change of length ([`Schedule::with_steps`]): the step it happened at and how far
    /// along the learning rates' decay was there, so the decay goes on from there to the new end
    /// instead of jumping.
    pub decay_anchor: Option<(u32, f32)>,
}

/// With error-driven sampling, the error map is refreshed every this fraction of the steps (the
/// first refresh after as many steps: the starting model's error says little).
pub(crate) const SAMPLING_REFRESH_FRACTION: f32 = 0.05;

/// [`Schedule::sampling_refresh_every`] for a run of `steps` steps.
fn sampling_refresh_every(steps: u32) -> u32 {
    ((steps as f32 * SAMPLING_REFRESH_FRACTION) as u32).max(1)
}

/// What the loop does to the sampler before a step ([`Schedule::sampling_change`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SamplingChange {
    /// Measure the error map of the model as it is now and draw by it.
    Refresh,
    /// Draw uniformly again.
    Uniform,
}

impl Schedule {
    /// The schedule of some options for a layout.
    #[must_use]
    pub fn new(options: &CompressOptions, layout: &ModelLayout) -> Self {
        // A fine-tune starts from a trained model: full learning rates (and a fresh Adam) would
        // first undo much of it.
        let lr_scale = if options.run.init_from.is_some() { FINE_TUNE_LEARNING_RATE_SCALE } else { 1.0 };
        let steps = options.schedule.steps;
        let qat_latents = options.resolved_latent_quantisation() == Quantisation::Qat;
        let qat_weights = options.resolved_weight_quantisation() == Quantisation::Qat;
        Self {
            steps,
            batch_texels: options.schedule.batch_texels.div_ceil(CHUNK_TEXELS) * CHUNK_TEXELS,
            grid_learning_rate: options.schedule.grid_learning_rate * lr_scale,
            mlp_learning_rate: options.schedule.mlp_learning_rate * lr_scale,
            freeze_step: if qat_latents { (steps as f32 * options.schedule.freeze_latents_at) as u32 } else { steps },
            int8_step: if qat_weights { (steps as f32 * options.schedule.quantize_weights_at) as u32 } else { steps },
            latent_noise: qat_latents,
            grid_bits: layout.grids.iter().map(|g| g.bits).collect(),
            weight_format: layout.weight_format,
            seed: options.schedule.seed,
            sampling: options.schedule.sampling,
            sampling_mix: options.schedule.sampling_mix,
            sampling_refresh_every: sampling_refresh_every(steps),
            sampling_uniform_step: (steps as f32 * options.schedule.sampling_uniform_after) as u32,
            decay_anchor: None,
        }
    }

    /// What changes in the sampler before `step` runs: with error-driven sampling a refresh of
    /// the error map every [`Schedule::sampling_refresh_every`] steps (not at step 0) until
    /// [`Schedule::sampling_uniform_step`], where the draws turn uniform again. `resumed`: the
    /// first step after a resume, whose error map was not saved, so it is measured again.
    #[must_use]
    pub fn sampling_change(&self, step: u32, resumed: bool) -> Option<SamplingChange> {
        if self.sampling == Sampling::Uniform || step == 0 || step > self.sampling_uniform_step {
            return None;
        }
        if step == self.sampling_uniform_step {
            Some(SamplingChange::Uniform)
        } else if step.is_multiple_of(self.sampling_refresh_every) || (resumed && step > self.sampling_refresh_every) {
            Some(SamplingChange::Refresh)
        } else {
            None
        }
    }

    /// Phase of a step.
    #[must_use]
    pub fn phase(&self, step: u32) -> TrainPhase {
        // QAT latents: weights fake-quantise only once the latents are rounded and frozen. PTQ
        // latents are never rounded in training: they stop training (in float) where the weights'
        // fake-quantisation starts, and are rounded at pack.
        let int8_from = if self.latent_noise { self.int8_step.max(self.freeze_step) } else { self.int8_step };
        if step >= int8_from {
            TrainPhase::Int8Weights
        } else if step >= self.freeze_step {
            TrainPhase::FrozenLatents
        } else {
            TrainPhase::NoisyLatents
        }
    }

    /// What a phase does under this schedule, in words for a progress line: the phases' names
    /// alone mislead under PTQ (no noise on the latents) and with weight formats other than int8.
    #[must_use]
    pub fn phase_label(&self, phase: TrainPhase) -> String {
        match phase {
            TrainPhase::NoisyLatents if self.latent_noise => "latents with ±½-step noise (QAT)".to_owned(),
            TrainPhase::NoisyLatents => "latents and decoder in float (PTQ)".to_owned(),
            TrainPhase::FrozenLatents => "latents rounded and frozen, decoder in float".to_owned(),
            TrainPhase::Int8Weights => format!("decoder through {} (QAT)", self.weight_format.label()),
        }
    }

    /// The schedule of the same run at `steps` steps in all, `done` of them run (a time budget
    /// re-fitted part-way, [`crate::train::run::LoopOptions::deadline`]): the events still ahead
    /// (latents frozen, weights fake-quantised, uniform draws again) keep their fraction of the
    /// run, or come at the next step when that fraction is past; those past stay past. The
    /// learning rates' decay goes on from where it was to the new end. `None` when `steps`
    /// leaves no step to run.
    #[must_use]
    pub fn with_steps(&self, steps: u32, done: u32) -> Option<Self> {
        if steps <= done {
            return None;
        }
        let old = u64::from(self.steps.max(1));
        let moved = |event: u32| {
            if event >= self.steps {
                steps // never
            } else if event < done {
                event // already past
            } else {
                ((u64::from(event) * u64::from(steps) / old) as u32).max(done)
            }
        };
        let schedule = Self {
            steps,
            freeze_step: moved(self.freeze_step),
            int8_step: moved(self.int8_step),
            sampling_uniform_step: moved(self.sampling_uniform_step),
            sampling_refresh_every: sampling_refresh_every(steps),
            decay_anchor: Some((done, self.decay_progress(done))),
            ..self.clone()
        };
        Some(schedule)
    }

    /// How far along its decay a step is, 0 to 1: `step / steps`, or after a change of length
    /// from the anchor's progress to 1 over the steps left ([`Schedule::decay_anchor`]).
    #[must_use]
    pub fn decay_progress(&self, step: u32) -> f32 {
        match self.decay_anchor {
            Some((at, progress)) if step >= at && self.steps > at => {
                progress + (1.0 - progress) * (step - at) as f32 / (self.steps - at) as f32
            }
            _ => step as f32 / self.steps.max(1) as f32,
        }
    }

    /// Cosine decay factor at a step (1 → 0.05).
    #[must_use]
    pub fn decay(&self, step: u32) -> f32 {
        let t = self.decay_progress(step);
        0.05 + 0.95 * 0.5 * (1.0 + (std::f32::consts::PI * t).cos())
    }
}

/// The step a part-way event (a prune, the learned-budget cut) runs at: `fraction` of the run,
/// but not before one step has trained, unless the run is a single step.
pub(crate) fn step_at_fraction(steps: u32, fraction: f32) -> u32 {
    ((steps as f32 * fraction) as u32).max(1).min(steps.saturating_sub(1))
}

/// Rounds every grid to its bits' levels (in place).
pub(crate) fn round_grids(params: &mut ModelParams, grid_bits: &[u32]) {
    // Every pyramid level has the bits of its level-0 grid.
    let per_level = params.grids.len().max(1);
    for (i, grid) in params.all_grids_mut().enumerate() {
        if let Some(&bits) = grid_bits.get(i % per_level) {
            quant::round_grid(grid, bits);
        }
    }
}

/// The model as it ships: latents rounded, weights quantised in `format` (dequantised values).
#[must_use]
pub(crate) fn finalize(mut params: ModelParams, grid_bits: &[u32], format: quant::WeightFormat) -> ModelParams {
    round_grids(&mut params, grid_bits);
    params.layers = params.layers.iter().map(|l| quant::fake_quantize(l, format)).collect();
    params
}
