//! The schedule every trainer follows: steps, learning-rate decay, the QAT phases (noisy latents,
//! frozen latents, weight fake-quantisation), and the rounding a model ships with.

use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::model::quant::{self};
use crate::options::{CompressOptions, LatentNoise, Quantisation, Sampling};
use crate::progress::TrainPhase;
use crate::train::init::{FINE_TUNE_LEARNING_RATE_SCALE, FINE_TUNE_MAX_GRID_LEARNING_RATE};
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
    /// Step from which weights train through E4M3 fake-quantisation until `int8_step` (NTC's
    /// staged weight QAT; `steps`: never).
    pub fp8_step: u32,
    /// Whether latents train with uniform noise of ±½ step (QAT) or in float (PTQ).
    pub latent_noise: bool,
    /// With `latent_noise`: one draw per latent per step ([`LatentNoise::PerLatent`]) rather than
    /// one per read.
    pub noise_per_latent: bool,
    /// Where the cosine decay of the learning rates ends, as a fraction of their peak.
    pub learning_rate_floor: f32,
    /// Adam's β2.
    pub adam_beta2: f32,
    /// Sparse Adam: parameters with a zero gradient in a step keep their value and moments.
    pub sparse_updates: bool,
    /// Bits of each grid.
    pub grid_bits: Vec<u32>,
    /// The format weights fake-quantise to (and ship in).
    pub weight_format: quant::WeightFormat,
    /// Seed.
    pub seed: u64,
    /// How texels are drawn ([`crate::options::SamplingConfig::mode`]).
    pub sampling: Sampling,
    /// Share of the draws that follow the error map ([`crate::options::SamplingConfig::mix`]).
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
        let grid_bits: Vec<u32> = layout.grids.iter().map(|g| g.bits).collect();
        // In quantisation steps: of the finest grid's bits, as the noise's amplitude is.
        let grid_learning_rate = match options.schedule.optimiser.grid_learning_rate_steps {
            Some(steps) => steps * quant::latent_step(grid_bits.first().copied().unwrap_or(8)),
            None => options.schedule.optimiser.grid_learning_rate,
        };
        // A fine-tune moves the grids no faster than the classic recipe's fine-tune did: NTC's
        // rates (10× the classic's at 4 bits) at the fine-tune's scale lost 0.9 dB in 40 steps
        // on the test set, the classic's kept the bundle's quality.
        let grid_learning_rate = if options.run.init_from.is_some() {
            grid_learning_rate.min(FINE_TUNE_MAX_GRID_LEARNING_RATE / lr_scale)
        } else {
            grid_learning_rate
        };
        let int8_step = if qat_weights { (steps as f32 * options.schedule.quantisation.quantize_weights_at) as u32 } else { steps };
        let fp8_step = match options.schedule.quantisation.fp8_weights_at {
            Some(at) if qat_weights => ((steps as f32 * at) as u32).min(int8_step),
            _ => steps,
        };
        Self {
            steps,
            batch_texels: options.schedule.batch_texels.div_ceil(CHUNK_TEXELS) * CHUNK_TEXELS,
            grid_learning_rate: grid_learning_rate * lr_scale,
            mlp_learning_rate: options.schedule.optimiser.mlp_learning_rate * lr_scale,
            freeze_step: if qat_latents { (steps as f32 * options.schedule.quantisation.freeze_latents_at) as u32 } else { steps },
            int8_step,
            fp8_step,
            latent_noise: qat_latents,
            noise_per_latent: options.schedule.quantisation.latent_noise == LatentNoise::PerLatent,
            learning_rate_floor: options.schedule.optimiser.learning_rate_floor,
            adam_beta2: options.schedule.optimiser.adam_beta2,
            sparse_updates: options.schedule.optimiser.sparse_updates,
            grid_bits,
            weight_format: layout.weight_format,
            seed: options.schedule.seed,
            sampling: options.schedule.sampling.mode,
            sampling_mix: options.schedule.sampling.mix,
            sampling_refresh_every: sampling_refresh_every(steps),
            sampling_uniform_step: (steps as f32 * options.schedule.sampling.uniform_after) as u32,
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
            TrainPhase::FrozenLatents if self.fp8_step < self.int8_step => {
                "latents rounded and frozen, decoder in float, then through E4M3 (QAT)".to_owned()
            }
            TrainPhase::FrozenLatents => "latents rounded and frozen, decoder in float".to_owned(),
            TrainPhase::Int8Weights => format!("decoder through {} (QAT)", self.weight_format.label()),
        }
    }

    /// The format the decoder's weights train through at `step` (fake-quantisation), `None` in
    /// float: the bundle's format in [`TrainPhase::Int8Weights`], E4M3 in a staged run's FP8
    /// window before it ([`Schedule::fp8_step`]).
    #[must_use]
    pub fn weight_fake_quant(&self, step: u32) -> Option<quant::WeightFormat> {
        // As the bundle's format, the FP8 stage waits for QAT latents to freeze.
        let phase = self.phase(step);
        let latents_settled = !self.latent_noise || phase != TrainPhase::NoisyLatents;
        if phase == TrainPhase::Int8Weights {
            Some(self.weight_format)
        } else if step >= self.fp8_step && latents_settled {
            Some(quant::WeightFormat::Fp8E4m3)
        } else {
            None
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
            fp8_step: moved(self.fp8_step),
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

    /// Cosine decay factor at a step (1 → [`Schedule::learning_rate_floor`]).
    #[must_use]
    pub fn decay(&self, step: u32) -> f32 {
        let t = self.decay_progress(step);
        let floor = self.learning_rate_floor;
        floor + (1.0 - floor) * 0.5 * (1.0 + (std::f32::consts::PI * t).cos())
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

#[cfg(test)]
mod tests {
    use super::Schedule;
    use crate::model::quant::{self, WeightFormat};
    use crate::options::{CompressOptions, LatentInit, LatentNoise, Recipe, RecipePiece, ScheduleConfig};
    use crate::progress::TrainPhase;

    fn ntc(without: &[RecipePiece]) -> CompressOptions {
        let mut options = CompressOptions::default();
        options.schedule.steps = 1000;
        options.schedule.apply_recipe(Recipe::Ntc, without);
        options
    }

    /// The recipe's values become the run's schedule: rates in quantisation steps of the grids'
    /// bits, the decay to 0, the staged weight QAT, Adam's β2 and sparse updates.
    #[test]
    fn ntc_recipe_schedules_its_pieces() {
        let options = ntc(&[]);
        options.validate().expect("valid");
        let set = crate::train::sampler::tests_support::set();
        let (layout, _) = crate::analyse::analyse(&set, &options).expect("layout");
        let s = Schedule::new(&options, &layout);
        let bits = layout.grids[0].bits;
        assert!((s.grid_learning_rate - 1.5 * quant::latent_step(bits)).abs() < 1e-7, "{} at {bits} bits", s.grid_learning_rate);
        assert_eq!(s.mlp_learning_rate.to_bits(), 0.005f32.to_bits());
        assert!(s.latent_noise && s.noise_per_latent && s.sparse_updates);
        assert_eq!(s.adam_beta2.to_bits(), 0.999f32.to_bits());
        assert_eq!((s.freeze_step, s.fp8_step, s.int8_step), (950, 960, 980));
        assert!((s.decay(0) - 1.0).abs() < 1e-7, "starts at the peak: {}", s.decay(0));
        assert!(s.decay(1000).abs() < 1e-7, "decays to 0: {}", s.decay(1000));
        assert_eq!(s.phase(0), TrainPhase::NoisyLatents);
        let formats: Vec<Option<WeightFormat>> = [0, 949, 950, 959, 960, 979, 980, 999].iter().map(|&t| s.weight_fake_quant(t)).collect();
        let e4m3 = Some(WeightFormat::Fp8E4m3);
        let int8 = Some(WeightFormat::Int8);
        assert_eq!(formats, [None, None, None, None, e4m3, e4m3, int8, int8]);
        assert!(s.phase_label(TrainPhase::FrozenLatents).contains("E4M3"));
    }

    /// The fields where two schedules differ (a field serialised in one only counts too).
    fn differing(a: &ScheduleConfig, b: &ScheduleConfig) -> std::collections::BTreeSet<String> {
        // Fields by their path (`optimiser.adam_beta2`): the schedule nests by concern.
        fn leaves(prefix: &str, value: &serde_json::Value, out: &mut std::collections::BTreeMap<String, serde_json::Value>) {
            match value {
                serde_json::Value::Object(fields) if !prefix.ends_with("weights") => {
                    for (key, field) in fields {
                        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                        leaves(&path, field, out);
                    }
                }
                other => {
                    out.insert(prefix.to_owned(), other.clone());
                }
            }
        }
        let (serde_json::Value::Object(a), serde_json::Value::Object(b)) =
            (serde_json::to_value(a).expect("json"), serde_json::to_value(b).expect("json"))
        else {
            panic!("a schedule serialises as an object")
        };
        let (mut a_leaves, mut b_leaves) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
        leaves("", &serde_json::Value::Object(a), &mut a_leaves);
        leaves("", &serde_json::Value::Object(b), &mut b_leaves);
        a_leaves.keys().chain(b_leaves.keys()).filter(|k| a_leaves.get(*k) != b_leaves.get(*k)).cloned().collect()
    }

    /// Each piece left out keeps the classic recipe's choice for it and nothing else: the
    /// pieces change disjoint fields, two left out change both pieces' fields. Every piece left
    /// out (or the classic recipe) is the classic schedule. The default is texset's recipe: NTC's
    /// without its noise and weight stages.
    #[test]
    fn a_piece_left_out_keeps_the_classic_choice() {
        let classic = ScheduleConfig { steps: 1000, ..ScheduleConfig::classic() };
        let all = ntc(&[]).schedule;
        for a in RecipePiece::ALL {
            let da = differing(&all, &ntc(&[a]).schedule);
            assert!(!da.is_empty(), "{a:?} changes nothing");
            for b in RecipePiece::ALL.into_iter().filter(|&b| b != a) {
                let db = differing(&all, &ntc(&[b]).schedule);
                assert!(da.is_disjoint(&db), "{a:?} and {b:?} both change {:?}", da.intersection(&db).collect::<Vec<_>>());
                let both = differing(&all, &ntc(&[a, b]).schedule);
                assert_eq!(both, da.union(&db).cloned().collect(), "{a:?} and {b:?} left out together");
            }
        }
        assert_eq!(ntc(&[RecipePiece::Noise]).schedule.quantisation.latent_noise, LatentNoise::PerRead);
        assert_eq!(ntc(&[RecipePiece::Init]).schedule.latent_init, LatentInit::Noise);
        let mut none = all.clone();
        none.apply_recipe(Recipe::Ntc, &RecipePiece::ALL);
        assert_eq!(none, classic);
        let mut applied = all.clone();
        applied.apply_recipe(Recipe::Classic, &[]);
        assert_eq!(applied, classic);
        let json = serde_json::to_string(&classic).expect("json");
        let default = ScheduleConfig { steps: 1000, ..ScheduleConfig::default() };
        assert_eq!(ntc(&[RecipePiece::Noise, RecipePiece::Weights]).schedule, default);
        let mut reapplied = classic;
        reapplied.apply_recipe(Recipe::Texset, &[]);
        assert_eq!(reapplied, default);
        // The default's fingerprint differs from the classic one's: a checkpoint of the one
        // never resumes the other.
        assert_ne!(serde_json::to_string(&default).expect("json"), json);
    }
}
