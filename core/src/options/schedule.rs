//! How training runs ([`ScheduleConfig`]) and the choices it names: latent initialisation,
//! normal-map targets and loss weight, quantisation-aware training or not.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How training runs, by concern as burn nests `AdamConfig`: the steps, batch and seed at the
/// top; the optimiser ([`OptimiserConfig`]), the quantisation schedule ([`QuantisationConfig`]),
/// the texels drawn ([`SamplingConfig`]) and the loss ([`LossConfig`]) each a struct of its own.
/// Part of what [`CompressOptions::fingerprint`](super::CompressOptions::fingerprint) hashes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScheduleConfig {
    /// Training steps. Default [`DEFAULT_PRESET_STEPS`](super::DEFAULT_PRESET_STEPS), the default
    /// preset's. Set them with [`ScheduleConfig::give_steps`] where a person or a measurement
    /// chose them, so `steps_origin` says so.
    pub steps: u32,
    /// Where `steps` came from: a preset's ([`StepsOrigin::Preset`], the default), which `auto`
    /// scales on a hardware GPU, or given ([`StepsOrigin::Given`]), trained as they are whatever
    /// their value.
    pub steps_origin: StepsOrigin,
    /// Texels per training step. Default 8192.
    pub batch_texels: usize,
    /// Random seed: equal seeds give bit-identical bundles. Default 1.
    pub seed: u64,
    /// Where the latent grids start. Default [`LatentInit::Normal`] (the classic recipe's
    /// [`LatentInit::Noise`]).
    pub latent_init: LatentInit,
    /// Learning rates, their decay and Adam.
    pub optimiser: OptimiserConfig,
    /// How the latents and the decoder's weights meet their bits, and when.
    pub quantisation: QuantisationConfig,
    /// Which texels each step draws.
    pub sampling: SamplingConfig,
    /// What each output's error weighs.
    pub loss: LossConfig,
}

/// The optimiser: learning rates, their cosine decay and Adam ([`ScheduleConfig::optimiser`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OptimiserConfig {
    /// Adam learning rate of the latent grids, when `grid_learning_rate_steps` is `None`.
    /// Default 0.02 (the default schedule gives its rate in quantisation steps instead).
    pub grid_learning_rate: f32,
    /// The grids' learning rate in quantisation steps of the finest grid's bits, in place of
    /// `grid_learning_rate` (NTC's 0.1 on latents in [0, 1] at 4 bits is 1.5 steps). Default
    /// [`NTC_GRID_LEARNING_RATE_STEPS`] (the classic recipe's `None`).
    pub grid_learning_rate_steps: Option<f32>,
    /// Adam learning rate of the MLP. Default [`NTC_MLP_LEARNING_RATE`], 0.005 (the classic
    /// recipe's 0.004).
    pub mlp_learning_rate: f32,
    /// Where the learning rates' cosine decay ends, as a fraction of their peak. Default 0, as
    /// NTC's (the classic recipe's 0.05).
    pub learning_rate_floor: f32,
    /// Adam's β2. Default 0.999, NTC's (the classic recipe's 0.99).
    pub adam_beta2: f32,
    /// Sparse Adam: a parameter whose gradient is exactly zero in a step (a latent no texel of
    /// the batch read) keeps its value and its moments, as in NTC. Default true (the classic
    /// recipe's false: every parameter moves every step on its moments).
    pub sparse_updates: bool,
}

/// The quantisation schedule ([`ScheduleConfig::quantisation`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QuantisationConfig {
    /// How the latents meet their bits. [`Quantisation::Qat`]: trained with uniform noise of ±½
    /// step, rounded and frozen at `freeze_latents_at`, the decoder fine-tuned on them.
    /// [`Quantisation::Ptq`]: trained in float to the end and rounded once, at pack. Default
    /// [`Quantisation::Auto`], the measured winner: QAT when a grid has at most
    /// [`AUTO_QAT_MAX_LATENT_BITS`] bits, PTQ otherwise ([`CompressOptions::resolved_latent_quantisation`](super::CompressOptions::resolved_latent_quantisation)).
    pub latents: Quantisation,
    /// How the decoder's weights meet their format. [`Quantisation::Qat`]: fine-tuned through
    /// fake-quantisation from `quantize_weights_at`. [`Quantisation::Ptq`]: trained in float to
    /// the end and quantised once, at pack. Default [`Quantisation::Auto`], the measured winner:
    /// QAT for E4M3 (3 mantissa bits), PTQ for the others ([`CompressOptions::resolved_weight_quantisation`](super::CompressOptions::resolved_weight_quantisation)).
    pub weights: Quantisation,
    /// How QAT's ±½-step noise meets the latents ([`LatentNoise`]). Default
    /// [`LatentNoise::PerRead`].
    pub latent_noise: LatentNoise,
    /// Fraction of the steps after which latents are rounded and frozen. Default 0.95 (the
    /// classic recipe's 0.8).
    pub freeze_latents_at: f32,
    /// Fraction of the steps after which MLP weights train through int8 fake-quantisation. Default 0.9.
    pub quantize_weights_at: f32,
    /// With QAT weights: the fraction of the steps from which the decoder trains through E4M3
    /// fake-quantisation, until `quantize_weights_at` takes it to its own format (NTC's staged
    /// weight QAT: float to 96 %, FP8 to 98 %, int8 to the end). Default `None`: no FP8 stage.
    pub fp8_weights_at: Option<f32>,
}

/// Which texels each step draws ([`ScheduleConfig::sampling`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplingConfig {
    /// [`Sampling::Uniform`], every texel alike, or error-driven ([`Sampling::Error`],
    /// [`Sampling::RmsError`]), tiles of high error more often, each draw's loss weight scaled so
    /// that the expected loss stays the uniform one. Default [`Sampling::Uniform`]
    /// (docs/decisions/003-error-driven-sampling.md).
    pub mode: Sampling,
    /// With error-driven sampling: the share of the draws that follow the error map, the rest
    /// uniform (it bounds each draw's loss-weight factor by `1 / (1 − mix)`); 0 to
    /// [`MAX_SAMPLING_MIX`]. Default 0.5.
    pub mix: f32,
    /// With error-driven sampling: the fraction of the steps after which the draws are uniform
    /// again (1: error-driven to the end). Default 0.9.
    pub uniform_after: f32,
    /// With `mips`: how much more often a texel of each coarser level is drawn in training than
    /// one of the level above (1: every texel of the chain alike, each level's share its area,
    /// level `k` `4^-k` of level 0's; 2: level `k` gets `2^-k`). Default 1.5, the measured
    /// winner with `mip_group` 2: area alone left levels 2–10 1–5 dB below level 0
    /// (docs/decisions/018-mip-chain-sampling.md).
    pub mip_sample_boost: f32,
    /// With `mips`: grow the batch by the chain's draws so level 0 trains on as many texels per
    /// step as without mips (1.6× the texels per step at boost 1.5). Default true.
    pub mip_level0_batch: bool,
}

/// What each output's error weighs ([`ScheduleConfig::loss`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LossConfig {
    /// Loss weight per map kind (`kind` → weight). Default [`NORMAL_LOSS_WEIGHT`] for normal
    /// maps, 1 for every other kind.
    pub weights: BTreeMap<String, f32>,
    /// What a normal map is trained towards: [`NormalTargets::Stored`], its stored values
    /// whatever their length, or [`NormalTargets::Unit`], its normals renormalised to unit length
    /// (what a renderer sees: shading normalises). Default [`NormalTargets::Stored`].
    pub normal_targets: NormalTargets,
    /// Loss weight of a normal map's z channel relative to its x and y (for a nearly flat
    /// normal, z changes the shaded direction least). Default 1.
    pub normal_z_weight: f32,
}

/// Where [`ScheduleConfig::steps`] came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepsOrigin {
    /// A preset's: `--backend auto` trains 2.5 times as many on a hardware GPU
    /// (docs/decisions/004-gpu-steps-rule.md).
    #[default]
    Preset,
    /// Given: `--steps`, the studio's steps, a time budget's fit, a driver's short runs. Trained
    /// as given on every backend.
    Given,
}

/// [`OptimiserConfig::learning_rate_floor`] in the classic recipe ([`Recipe::Classic`]).
pub const CLASSIC_LEARNING_RATE_FLOOR: f32 = 0.05;
/// [`OptimiserConfig::adam_beta2`] in the classic recipe ([`Recipe::Classic`]).
pub const CLASSIC_ADAM_BETA2: f32 = 0.99;
/// NTC's Adam β2 ([`RecipePiece::Adam`]).
pub const NTC_ADAM_BETA2: f32 = 0.999;

/// How QAT's uniform noise of ±½ step meets the latents ([`QuantisationConfig::latent_noise`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum LatentNoise {
    /// A fresh draw at every read: each bilinear corner of each texel of the batch.
    #[default]
    PerRead,
    /// One draw per latent per step, shared by every texel that reads it, the noisy value kept
    /// in the latent range (NTC's).
    PerLatent,
}

/// A training recipe: a named set of schedule choices ([`ScheduleConfig::apply_recipe`]), each
/// a set of [`RecipePiece`]s at NTC's value, the others at the classic recipe's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Recipe {
    /// texset's schedule, the default (docs/decisions/034-ntc-recipe-default.md): NTC's
    /// freeze point, rates, decay, Adam and initialisation; texset's quantisation (`auto`
    /// latents, PTQ int8 weights), which measured ahead of NTC's noise and staged weight QAT.
    #[default]
    Texset,
    /// NVIDIA RTXNTC v0.9.2's recipe (docs/decisions/028-ntc-recipe.md): every piece of
    /// [`RecipePiece`] at NTC's value.
    Ntc,
    /// texset's schedule before decision 034: no piece of NTC's (freeze at 80 %, rates 0.02 and
    /// 0.004 decayed to 5 %, Adam β2 0.99 dense, latents from uniform ±0.25).
    Classic,
}

impl Recipe {
    /// The pieces this recipe takes at NTC's value.
    #[must_use]
    pub fn pieces(self) -> &'static [RecipePiece] {
        match self {
            Self::Texset => &[RecipePiece::Freeze, RecipePiece::Rates, RecipePiece::Decay, RecipePiece::Adam, RecipePiece::Init],
            Self::Ntc => &RecipePiece::ALL,
            Self::Classic => &[],
        }
    }
}

/// One piece of NTC's recipe, to leave out of a recipe one at a time (`--recipe-without`): the
/// run takes the classic recipe's choice for that piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum RecipePiece {
    /// QAT latents with noise drawn per latent per step ([`LatentNoise::PerLatent`]).
    Noise,
    /// Latents rounded and frozen at 95 % of the steps (classic: 80 %).
    Freeze,
    /// NTC's learning rates: the grids' 1.5 quantisation steps, the decoder's 0.005.
    Rates,
    /// The cosine decay down to 0 (classic: to 5 %).
    Decay,
    /// Adam with β2 0.999 and sparse updates.
    Adam,
    /// Staged weight QAT: float to 96 %, E4M3 to 98 %, the bundle's format to the end.
    Weights,
    /// Latents initialised from N(0, 0.5) (NTC's N(0.5, 0.25) on latents in [0, 1]).
    Init,
}

impl RecipePiece {
    /// Every piece, in the order the recipe's table lists them.
    pub const ALL: [Self; 7] = [Self::Noise, Self::Freeze, Self::Rates, Self::Decay, Self::Adam, Self::Weights, Self::Init];
}

/// NTC's grid learning rate in quantisation steps: 0.1 on latents in [0, 1] at 4 bits (a step of
/// 1/15).
pub const NTC_GRID_LEARNING_RATE_STEPS: f32 = 1.5;
/// NTC's decoder learning rate.
pub const NTC_MLP_LEARNING_RATE: f32 = 0.005;

impl ScheduleConfig {
    /// texset's schedule before decision 034 ([`Recipe::Classic`]): what
    /// `ScheduleConfig::default()` was, but for the normal maps' loss weight.
    #[must_use]
    pub fn classic() -> Self {
        Self {
            steps: super::DEFAULT_PRESET_STEPS,
            steps_origin: StepsOrigin::Preset,
            batch_texels: 8192,
            seed: 1,
            latent_init: LatentInit::Noise,
            optimiser: OptimiserConfig {
                grid_learning_rate: 0.02,
                grid_learning_rate_steps: None,
                mlp_learning_rate: 0.004,
                learning_rate_floor: CLASSIC_LEARNING_RATE_FLOOR,
                adam_beta2: CLASSIC_ADAM_BETA2,
                sparse_updates: false,
            },
            quantisation: QuantisationConfig {
                latents: Quantisation::Auto,
                weights: Quantisation::Auto,
                latent_noise: LatentNoise::PerRead,
                freeze_latents_at: 0.8,
                quantize_weights_at: 0.9,
                fp8_weights_at: None,
            },
            sampling: SamplingConfig {
                mode: Sampling::Uniform,
                mix: DEFAULT_SAMPLING_MIX,
                uniform_after: DEFAULT_SAMPLING_UNIFORM_AFTER,
                mip_sample_boost: 1.5,
                mip_level0_batch: true,
            },
            loss: LossConfig {
                weights: [(crate::set::MapKind::Normal.token().to_owned(), NORMAL_LOSS_WEIGHT)].into(),
                normal_targets: NormalTargets::Stored,
                normal_z_weight: 1.0,
            },
        }
    }

    /// Sets the steps as given ([`StepsOrigin::Given`]): trained as they are on every backend.
    pub fn give_steps(&mut self, steps: u32) {
        self.steps = steps;
        self.steps_origin = StepsOrigin::Given;
    }

    /// Sets `recipe`'s choices over this schedule (steps, batch, seed and loss weights stay),
    /// leaving each piece in `without` at the classic recipe's choice.
    pub fn apply_recipe(&mut self, recipe: Recipe, without: &[RecipePiece]) {
        let classic = Self::classic();
        let has = |piece| recipe.pieces().contains(&piece) && !without.contains(&piece);
        let (quantisation, optimiser) = (&mut self.quantisation, &mut self.optimiser);
        if has(RecipePiece::Noise) {
            quantisation.latents = Quantisation::Qat;
            quantisation.latent_noise = LatentNoise::PerLatent;
        } else {
            quantisation.latents = classic.quantisation.latents;
            quantisation.latent_noise = classic.quantisation.latent_noise;
        }
        quantisation.freeze_latents_at = if has(RecipePiece::Freeze) { 0.95 } else { classic.quantisation.freeze_latents_at };
        if has(RecipePiece::Rates) {
            optimiser.grid_learning_rate_steps = Some(NTC_GRID_LEARNING_RATE_STEPS);
            optimiser.mlp_learning_rate = NTC_MLP_LEARNING_RATE;
        } else {
            optimiser.grid_learning_rate_steps = None;
            optimiser.grid_learning_rate = classic.optimiser.grid_learning_rate;
            optimiser.mlp_learning_rate = classic.optimiser.mlp_learning_rate;
        }
        optimiser.learning_rate_floor = if has(RecipePiece::Decay) { 0.0 } else { classic.optimiser.learning_rate_floor };
        (optimiser.adam_beta2, optimiser.sparse_updates) =
            if has(RecipePiece::Adam) { (NTC_ADAM_BETA2, true) } else { (classic.optimiser.adam_beta2, false) };
        if has(RecipePiece::Weights) {
            quantisation.weights = Quantisation::Qat;
            quantisation.fp8_weights_at = Some(0.96);
            quantisation.quantize_weights_at = 0.98;
        } else {
            quantisation.weights = classic.quantisation.weights;
            quantisation.fp8_weights_at = None;
            quantisation.quantize_weights_at = classic.quantisation.quantize_weights_at;
        }
        self.latent_init = if has(RecipePiece::Init) { LatentInit::Normal } else { classic.latent_init };
    }
}

/// Default of [`SamplingConfig::mix`].
const DEFAULT_SAMPLING_MIX: f32 = 0.5;
/// Default of [`SamplingConfig::uniform_after`].
const DEFAULT_SAMPLING_UNIFORM_AFTER: f32 = 0.9;

/// The largest [`SamplingConfig::mix`]: every tile keeps at least 5 % of its uniform
/// share of the draws, so no draw's loss weight grows more than 20-fold.
pub const MAX_SAMPLING_MIX: f32 = 0.95;

/// How training draws its texels ([`SamplingConfig::mode`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Every texel of every map (and mip level) alike.
    #[default]
    Uniform,
    /// Tiles of 8×8 texels drawn by a mix of their uniform share and their share of the
    /// weighted squared error, from an error map refreshed every 5 % of the steps.
    Error,
    /// As [`Sampling::Error`], by the square root of each tile's mean weighted squared error
    /// (its RMS error): a milder emphasis.
    RmsError,
}

/// How the latent grids are initialised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum LatentInit {
    /// Uniform noise of ±0.25.
    #[default]
    Noise,
    /// The principal components of the maps' channels, box-filtered to each grid's cells.
    Pca,
    /// Normal noise, N(0, 0.5) kept in the latent range: NTC's N(0.5, 0.25) on latents in
    /// [0, 1].
    Normal,
}

/// Latent grids of at most this many bits train with QAT under [`Quantisation::Auto`]: at 2 bits
/// (4 levels) QAT measured 2.9–3.6 dB ahead of PTQ, at 4 and 8 bits PTQ 0.1–0.4 dB ahead
/// (docs/decisions/002-qat-schedules.md).
pub const AUTO_QAT_MAX_LATENT_BITS: u32 = 2;

/// Batches of at least this many texels train their latents with QAT under
/// [`Quantisation::Auto`], whatever their bits. Large batches leave latents tuned to values
/// rounding undoes: on `painted_wooden_cabinet` at 4 bits per texel, 30,000 steps of 65,536
/// texels (the max preset, an H100) shipped at 36.33 dB with PTQ against 38.26 dB with QAT, while
/// 30,000 steps of 8,192 texels gave 38.33 and 38.29 dB (docs/decisions/002-qat-schedules.md).
pub const AUTO_QAT_MIN_BATCH_TEXELS: usize = 65_536;

/// The default loss weight of normal maps ([`LossConfig::weights`]): the renders
/// (`texset eval`'s lit PSNR) see a normal's error most. 6 gained the most lit PSNR at about
/// the same pooled map PSNR under the classic recipe (docs/decisions/013-normal-loss-weight.md);
/// with NTC's rates and the 64-64-64 decoder, 5 gained on both on every set measured
/// (docs/decisions/028-ntc-recipe.md).
pub const NORMAL_LOSS_WEIGHT: f32 = 5.0;

/// What a normal map is trained towards ([`LossConfig::normal_targets`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum NormalTargets {
    /// The stored values, whatever the length of the normal they encode.
    #[default]
    Stored,
    /// The stored normals renormalised to unit length: a source that does not store unit
    /// normals (a JPEG, a box filter) spends no bits on a length the renderer throws away.
    Unit,
}

/// Quantisation-aware training or post-training quantisation (docs/decisions/002-qat-schedules.md compares them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Quantisation {
    /// Whichever of the two measured better for these bits or this format
    /// (docs/decisions/002-qat-schedules.md): see [`CompressOptions::resolved_latent_quantisation`](super::CompressOptions::resolved_latent_quantisation) and
    /// [`CompressOptions::resolved_weight_quantisation`](super::CompressOptions::resolved_weight_quantisation).
    #[default]
    #[cfg_attr(feature = "clap", value(help = "The mode measured better for the bits or format (docs/decisions/002-qat-schedules.md)"))]
    Auto,
    /// Quantisation-aware training: the model trains against what quantisation will do to it.
    Qat,
    /// Post-training quantisation: the model trains in float and is quantised once at the end.
    Ptq,
}

impl Quantisation {
    /// `QAT`, `PTQ` or `auto`, for reports.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Qat => "QAT",
            Self::Ptq => "PTQ",
        }
    }
}

impl Default for ScheduleConfig {
    /// The classic schedule with [`Recipe::Texset`]'s pieces of NTC's recipe.
    fn default() -> Self {
        let mut schedule = Self::classic();
        schedule.apply_recipe(Recipe::Texset, &[]);
        schedule
    }
}

impl Default for OptimiserConfig {
    /// The default schedule's ([`ScheduleConfig::default`]).
    fn default() -> Self {
        ScheduleConfig::default().optimiser
    }
}

impl Default for QuantisationConfig {
    /// The default schedule's ([`ScheduleConfig::default`]).
    fn default() -> Self {
        ScheduleConfig::default().quantisation
    }
}

impl Default for SamplingConfig {
    /// The default schedule's ([`ScheduleConfig::default`]).
    fn default() -> Self {
        ScheduleConfig::default().sampling
    }
}

impl Default for LossConfig {
    /// The default schedule's ([`ScheduleConfig::default`]).
    fn default() -> Self {
        ScheduleConfig::default().loss
    }
}
