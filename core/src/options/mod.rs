//! Compression options: model shape, training schedule, budgets, backend. `Default` is the
//! measured default preset; [`CompressOptions::fit_bits_per_texel_for`] sizes the latents for a rate.

mod error;
mod rate;
mod schedule;

use crate::model::params::MAX_MLP_WIDTH;
pub use error::OptionsError;
pub use rate::{ExplicitShape, RATE_SHAPES, RateShape, ShapeChoice, rate_shape};
pub use schedule::{
    AUTO_QAT_MAX_LATENT_BITS, AUTO_QAT_MIN_BATCH_TEXELS, CLASSIC_ADAM_BETA2, CLASSIC_LEARNING_RATE_FLOOR, LatentInit, LatentNoise,
    LossConfig, MAX_SAMPLING_MIX, NORMAL_LOSS_WEIGHT, NTC_ADAM_BETA2, NTC_GRID_LEARNING_RATE_STEPS, NTC_MLP_LEARNING_RATE, NormalTargets,
    OptimiserConfig, Quantisation, QuantisationConfig, Recipe, RecipePiece, Sampling, SamplingConfig, ScheduleConfig, StepsOrigin,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One latent grid: its resolution relative to the library's largest map, channels and bits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridOptions {
    /// Texels per grid cell along each axis (4: a 1024² map gets a 256² grid).
    pub texels_per_cell: u32,
    /// Feature channels.
    pub channels: u32,
    /// Bits per stored latent value (2, 4 or 8).
    pub bits: u32,
}

impl GridOptions {
    /// Cells across and down for a library whose largest map is `max_width × max_height`
    /// (at least 2×2, so bilinear fetches always have two cells per axis).
    #[must_use]
    pub fn cells(&self, (max_width, max_height): (u32, u32)) -> (u32, u32) {
        (max_width.div_ceil(self.texels_per_cell).max(2), max_height.div_ceil(self.texels_per_cell).max(2))
    }
}

/// Where training runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The fused GPU trainer on a hardware (not software) adapter, with 2.5× a preset's steps;
    /// else the fused CPU trainer.
    #[default]
    Auto,
    /// The hand-fused CPU trainer (the fastest CPU path).
    Cpu,
    /// The fused GPU trainer (WGSL through wgpu: any Vulkan, Metal or DX12 adapter, lavapipe
    /// included).
    Gpu,
    /// burn's autodiff on wgpu: the reference the GPU trainer's gradients are tested against.
    #[serde(rename = "burn_wgpu", alias = "wgpu")]
    #[cfg_attr(feature = "clap", value(name = "burn-wgpu", alias = "wgpu"))]
    BurnWgpu,
    /// burn's autodiff on its `flex` CPU backend (the reference for the fused CPU trainer).
    #[serde(rename = "burn_flex", alias = "flex")]
    #[cfg_attr(feature = "clap", value(name = "burn-flex", alias = "flex"))]
    BurnFlex,
}

impl Backend {
    /// The name `--backend` takes.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
            Self::BurnWgpu => "burn-wgpu",
            Self::BurnFlex => "burn-flex",
        }
    }
}

/// How the materials of a library share latent channels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum LibrarySharing {
    /// Every material reads every channel (budgets aside).
    All,
    /// Materials related by a duplicate or colour-variant map form a group; each group reads its
    /// own channels, split in proportion to the groups' content. The default: on three shoe
    /// colourways plus an unrelated tea set it gives +1.58 dB pooled over `All` at equal bytes
    /// (docs/benchmarks.md).
    #[default]
    Related,
}

/// How channels are chosen for removal during training.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum PruneMethod {
    /// Keep the channels whose first-layer weight columns have the largest L1 norm.
    #[default]
    L1,
    /// Keep a random subset (the baseline L1 must beat).
    Random,
}

/// Removing latent channels part-way through training ("train wide, prune, fine-tune"): the
/// removed channels are masked for every texture from then on, and the prune pass drops them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelPruning {
    /// Channels each grid keeps.
    pub keep_per_grid: Vec<u32>,
    /// How the kept channels are chosen.
    pub method: PruneMethod,
    /// Fraction of the steps after which channels are removed (before latents freeze).
    pub at: f32,
    /// Group-lasso strength on each latent channel's first-layer column before the removal
    /// (pushes unneeded channels towards zero so the removal costs less). 0 turns it off.
    pub group_lasso: f32,
}

/// Budgets learned in training: a gate per (texture, latent channel of its budget) scales what
/// the texture reads of the channel, so the texture's own first-layer columns are `gate · column`.
/// A group lasso on each of them (`strength · |gate| · ‖column‖₂`) pulls the gates of channels a
/// texture does not need towards zero. At `at` of the steps a channel whose importance for a
/// texture (`|gate| · ‖column‖₂`) is under `drop_below` of the largest in the library leaves that
/// texture's budget; the kept gates return to 1, training goes on with the new budgets, and the
/// prune pass removes channels no texture reads any more.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearnedBudgets {
    /// Group-lasso strength per (texture, channel).
    pub strength: f32,
    /// Fraction of the steps at which the budgets are cut (before the latents freeze).
    pub at: f32,
    /// Importance, relative to the library's largest, under which a channel leaves a budget.
    pub drop_below: f32,
}

impl Default for LearnedBudgets {
    fn default() -> Self {
        Self { strength: 1e-5, at: 0.3, drop_below: 0.05 }
    }
}

/// Training checkpoints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointOptions {
    /// Checkpoint file (written atomically).
    pub path: PathBuf,
    /// Seconds between checkpoints. Default 60.
    pub every_secs: f64,
}

/// The model a bundle stores: latent grids, decoder shape, weight format and mip chain. Part of
/// what [`CompressOptions::fingerprint`] hashes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    /// Latent grids, finest first. Default: 4 texels/cell × 12 channels and 8 texels/cell × 16
    /// channels, 4 bits each (about 4 bits per texel at 1024²).
    pub grids: Vec<GridOptions>,
    /// Positional-encoding frequencies. Default 3.
    pub pe_frequencies: u32,
    /// Hidden layer widths of the decoder MLP. Default `[64, 64, 64]`, NTC v0.7's: 0.24–0.40 dB
    /// lit over `[64, 48, 32]` at 4 bits per texel, for 1.5× the decoder's multiply-adds
    /// (docs/decisions/034-ntc-recipe-default.md).
    pub hidden_widths: Vec<usize>,
    /// How the decoder's weights are stored: int8 per row (the default), fp16, E4M3 or MXINT8.
    /// QAT fine-tunes through the chosen format.
    pub weight_format: crate::model::quant::WeightFormat,
    /// Store a full mip chain: a latent pyramid (a third more latent bits) and the LOD input,
    /// trained on texels drawn across every mip level of box-filtered references. Default off.
    pub mips: bool,
    /// With `mips`: how much denser, in cells per texel, the grids of each mip level are than
    /// those of the level above (1: they halve with the texture; 2: they halve every other
    /// level). Coarse levels hold less redundant detail per texel and need the extra cells.
    /// Default 2.
    pub mip_cell_growth: f32,
    /// With `mips`: consecutive mip levels each pyramid level serves (NTC's sharing: with 2, mips
    /// 0 and 1 read level 0's grids, mips 2 and 3 pyramid level 1's, …; the LOD input tells the
    /// decoder which). With `mip_cell_growth` 2 each pyramid level has half the cells a side of
    /// the one above, so the chain costs about a third more latent bits. Default 2.
    pub mip_group: u32,
    /// The decoder's hidden activation: NTC's `HGELUClamp` (the default: 0.2–0.7 dB over `ReLU`
    /// on the six shared sets, docs/decisions/038-hgelu-default.md) or `ReLU`. Left out of the
    /// serialised options at `ReLU`, and read as `ReLU` where absent: options serialised before it
    /// (fingerprints, the studio's saved state) keep the decoder they had.
    #[serde(default, skip_serializing_if = "crate::model::Activation::is_relu")]
    pub activation: crate::model::Activation,
    /// The decoder reads grid 0's four corners, each times its bilinear weight, as four inputs
    /// per channel instead of their sum (NTC v0.5–0.7's learned interpolation), initialised to
    /// decode as the bilinear model does. Default off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corner_reads: bool,
    /// What was given explicitly, which a rate's shape keeps (not serialised).
    #[serde(skip)]
    pub explicit: ExplicitShape,
    /// What the last rate fitted chose for the shape, and why (not serialised: the shape itself
    /// is in `grids`). The analyse pass reports it.
    #[serde(skip)]
    pub shape_choice: Option<ShapeChoice>,
}

/// Which latent channels each texture reads: manual overrides, the analyse pass's graded budgets,
/// learned budgets, channel pruning and how a library's materials share. Part of what
/// [`CompressOptions::fingerprint`] hashes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetConfig {
    /// Channel budgets: `kind` or `material/kind` → number of latent channels the texture reads.
    /// Textures not named read every channel. Default empty.
    pub overrides: BTreeMap<String, u32>,
    /// Apply the graded budgets the analyse pass proposes from its content estimate (a texture
    /// with a fraction of the busiest texture's content reads half or a quarter of the channels).
    /// Off: they are only reported, and every texture not named in `budgets` and not flat reads
    /// every channel. Default off: with the fused trainer a material whose maps have different
    /// budgets trains each budget group on its own texels, which cost 1.1 dB on `tea_set_01`
    /// (docs/decisions/017-channel-budgets.md).
    pub auto: bool,
    /// Learn each texture's budget in training (gates with a group lasso per texture and
    /// channel, cut part-way). Default none: budgets are the analyse pass's.
    pub learned: Option<LearnedBudgets>,
    /// How a library's materials share channels. Default [`LibrarySharing::Related`].
    pub sharing: LibrarySharing,
    /// Remove latent channels during training. Default none.
    pub prune: Option<ChannelPruning>,
}

/// How one run executes, not what it makes: the backend, checkpoints, resume and a starting
/// model. Not hashed: a new checkpoint path or backend does not make a bundle out of date.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOptions {
    /// Where training runs. Default [`Backend::Auto`].
    pub backend: Backend,
    /// Periodic checkpoints. Default none.
    pub checkpoint: Option<CheckpointOptions>,
    /// Resume training from this checkpoint. Default none.
    pub resume_from: Option<PathBuf>,
    /// Start from this bundle's model instead of a fresh one (a fine-tune: the studio uses it
    /// when a source map changes). Its grids and layers must have this library's shapes.
    /// Default none.
    pub init_from: Option<PathBuf>,
    /// Train for about this many seconds: a short timed probe of the trainer sets the steps, so
    /// the whole schedule (freeze points, decay) fits the time. The bundle then depends on the
    /// machine's speed; the report says how many steps were chosen. Default none (the steps).
    pub time_budget_secs: Option<f64>,
}

/// Everything `compress` needs besides the set, by concern.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressOptions {
    /// What the bundle stores.
    pub model: ModelConfig,
    /// How training runs.
    pub schedule: ScheduleConfig,
    /// Which channels each texture reads.
    pub budgets: BudgetConfig,
    /// How this run executes (not hashed).
    pub run: RunOptions,
}

/// What a set's header and manifest take in a bundle, bytes: an estimate with room to spare.
fn manifest_bytes_estimate(set: &crate::set::TextureSet) -> usize {
    600 + 400 * set.textures().count()
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            grids: vec![
                GridOptions { texels_per_cell: 4, channels: 12, bits: 4 },
                GridOptions { texels_per_cell: 8, channels: 16, bits: 4 },
            ],
            pe_frequencies: 3,
            hidden_widths: vec![64, 64, 64],
            weight_format: crate::model::quant::WeightFormat::Int8,
            mips: false,
            mip_cell_growth: 2.0,
            mip_group: 2,
            activation: crate::model::Activation::Hgelu,
            corner_reads: false,
            explicit: ExplicitShape::default(),
            shape_choice: None,
        }
    }
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self { overrides: BTreeMap::new(), auto: false, learned: None, sharing: LibrarySharing::Related, prune: None }
    }
}

impl BudgetConfig {
    /// What of these budgets corner reads ([`ModelConfig::corner_reads`]) do not combine with
    /// yet: both gate whole input columns, which corner reads split in four.
    #[must_use]
    pub fn refuses_corner_reads(&self) -> Option<&'static str> {
        if self.prune.is_some() {
            Some("channel pruning")
        } else if self.learned.is_some() {
            Some("learned budgets")
        } else {
            None
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        Self { backend: Backend::Auto, checkpoint: None, resume_from: None, init_from: None, time_budget_secs: None }
    }
}

/// Named speed/quality presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// A first result in seconds: 1,500 steps.
    Fast,
    /// The default: 12,000 steps, about a minute on two CPU cores for a 1024² material.
    Default,
    /// More steps for the last fraction of a dB: 16,000.
    High,
    /// NTC's scale, for a GPU: 65,536 texels × 30,000 steps (20× the default's samples; about a
    /// minute of training for a 1024² material on an H100, hours on two CPU cores). Its batch
    /// takes QAT latents under `auto` ([`AUTO_QAT_MIN_BATCH_TEXELS`]).
    Max,
}

impl ModelConfig {
    /// Latent bits per texel these grids cost for a square map of `side` texels (weights excluded).
    #[must_use]
    pub fn latent_bits_per_texel(&self) -> f64 {
        self.grids.iter().map(|g| f64::from(g.channels * g.bits) / f64::from(g.texels_per_cell * g.texels_per_cell)).sum()
    }

    /// Bundle size for a library whose largest map is `max_width × max_height` (grid shapes as
    /// the analyse pass makes them) and whose maps have `output_channels` channels in all.
    #[must_use]
    pub fn estimated_bundle_bytes(&self, max_extent: (u32, u32), output_channels: usize, manifest_bytes: usize) -> usize {
        let levels = if self.mips { crate::model::params::full_mip_count(max_extent.0, max_extent.1) } else { 1 };
        let group = self.effective_mip_group(levels);
        let latent_bits: f64 = self
            .grids
            .iter()
            .map(|g| {
                let (cells_x, cells_y) = g.cells(max_extent);
                (0..levels.div_ceil(group))
                    .map(|k| {
                        let (x, y) = if k == 0 {
                            (cells_x, cells_y)
                        } else {
                            crate::model::params::pyramid_grid_cells((cells_x, cells_y), k, group, self.mip_cell_growth, max_extent)
                        };
                        // Each grid's levels start on a byte boundary.
                        (f64::from(x) * f64::from(y) * f64::from(g.channels * g.bits) / 8.0).ceil() * 8.0
                    })
                    .sum::<f64>()
            })
            .sum();
        let weight_bytes: usize =
            self.decoder_layers(output_channels, levels > 1).map(|(inputs, outputs)| self.weight_format.layer_bytes(inputs, outputs)).sum();
        (latent_bits / 8.0).ceil() as usize + weight_bytes + manifest_bytes + 100
    }

    /// The mip group a chain of `mip_levels` levels gets: `mip_group` (at least 1), or 1 when the
    /// chain has no more levels than that (one pyramid level cannot hold a chain: its grids would
    /// have no LOD input).
    #[must_use]
    pub fn effective_mip_group(&self, mip_levels: u32) -> u32 {
        let group = self.mip_group.max(1);
        if mip_levels > group { group } else { 1 }
    }

    /// The bytes a rate (`--bpp`) counts: [`Self::estimated_bundle_bytes`] of the model without
    /// its mip chain. A chain's pyramid comes on top, as block-compression rates are quoted for
    /// level 0 (BC7's 8 bits per texel, a third more with mips), so a bundle with mips has the
    /// latents of level 0 that one without would have at the same rate.
    #[must_use]
    pub fn estimated_rate_bytes(&self, max_extent: (u32, u32), output_channels: usize, manifest_bytes: usize) -> usize {
        Self { mips: false, ..self.clone() }.estimated_bundle_bytes(max_extent, output_channels, manifest_bytes)
    }

    /// Multiply-adds of the decoder MLP per texel, every output of the library decoded (latent
    /// channels, positional encoding and LOD input in; `output_channels` out): what a shader pays
    /// per texel besides the latent fetches.
    #[must_use]
    pub fn decoder_macs_per_texel(&self, output_channels: usize) -> usize {
        self.decoder_layers(output_channels, self.mips).map(|(inputs, outputs)| inputs * outputs).sum()
    }

    /// The decoder MLP's layers as `(inputs, outputs)`, first to last: latent features (grid 0's
    /// four per channel with `corner_reads`), positional encoding and (`lod_input`) the LOD input
    /// in, `output_channels` out.
    fn decoder_layers(&self, output_channels: usize, lod_input: bool) -> impl Iterator<Item = (usize, usize)> + '_ {
        let inputs = std::iter::once(self.decoder_inputs(lod_input)).chain(self.hidden_widths.iter().copied());
        inputs.zip(self.hidden_widths.iter().copied().chain(std::iter::once(output_channels)))
    }

    /// The decoder's first-layer inputs: every latent channel (grid 0's four with
    /// `corner_reads`), the positional encoding and (`lod_input`) the LOD input.
    fn decoder_inputs(&self, lod_input: bool) -> usize {
        let grids = self.grids.iter().enumerate().map(|(i, g)| (g.channels, self.corner_reads && i == 0));
        crate::model::InputLayout::new(grids, self.pe_frequencies, lod_input).width()
    }
}

/// Training steps of [`Preset::Default`].
pub const DEFAULT_PRESET_STEPS: u32 = 12_000;

impl CompressOptions {
    /// What decides a bundle's content besides the set and the starting model: the model, the
    /// schedule and the budgets, as JSON. The run options are left out, so a new checkpoint path
    /// or backend neither invalidates a checkpoint nor redoes a `--batch` material.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        serde_json::to_string(&(&self.model, &self.schedule, &self.budgets)).unwrap_or_default()
    }

    /// The options of a preset.
    #[must_use]
    pub fn preset(preset: Preset) -> Self {
        let base = Self::default();
        match preset {
            Preset::Fast => Self { schedule: ScheduleConfig { steps: 1500, ..base.schedule }, ..base },
            // `CompressOptions::default()` itself: 12,000 steps, twice the 6,000 it had before
            // the batched CPU kernels took that command on `painted_wooden_cabinet` from about 70
            // to 30 s on two cores (docs/decisions/014-default-preset-steps.md).
            Preset::Default => base,
            Preset::High => Self { schedule: ScheduleConfig { steps: 16_000, ..base.schedule }, ..base },
            Preset::Max => Self { schedule: ScheduleConfig { steps: 30_000, batch_texels: 65_536, ..base.schedule }, ..base },
        }
    }

    /// The latents' mode with [`Quantisation::Auto`] decided: QAT when any grid has at most
    /// [`AUTO_QAT_MAX_LATENT_BITS`] bits (one freeze step serves every grid) or the batch has at
    /// least [`AUTO_QAT_MIN_BATCH_TEXELS`] texels, PTQ otherwise.
    #[must_use]
    pub fn resolved_latent_quantisation(&self) -> Quantisation {
        let low_bits = self.model.grids.iter().any(|g| g.bits <= AUTO_QAT_MAX_LATENT_BITS);
        let large_batch = self.schedule.batch_texels >= AUTO_QAT_MIN_BATCH_TEXELS;
        match self.schedule.quantisation.latents {
            Quantisation::Auto if low_bits || large_batch => Quantisation::Qat,
            Quantisation::Auto => Quantisation::Ptq,
            chosen => chosen,
        }
    }

    /// The weights' mode with [`Quantisation::Auto`] decided: QAT for E4M3, whose 3-bit mantissa
    /// PTQ rounds by up to 1/16 of each weight (0.42 dB measured), PTQ for int8, fp16 and MXINT8
    /// (within 0.12 dB either way; PTQ ahead at the default preset).
    #[must_use]
    pub fn resolved_weight_quantisation(&self) -> Quantisation {
        match self.schedule.quantisation.weights {
            Quantisation::Auto if self.model.weight_format == crate::model::quant::WeightFormat::Fp8E4m3 => Quantisation::Qat,
            Quantisation::Auto => Quantisation::Ptq,
            chosen => chosen,
        }
    }

    /// The rate's shape ([`rate_shape`]: grids' cells, split and bits, the decoder, a preset's steps, but for what
    /// [`ModelConfig::explicit`] keeps), then [`Self::fit_bits_per_texel`] for a library: its texel
    /// count, extent and outputs, with the manifest's size estimated from its map count (small
    /// next to the latents).
    pub fn fit_bits_per_texel_for(&mut self, bits_per_texel: f64, set: &crate::set::TextureSet) -> Result<(), OptionsError> {
        self.take_rate_shape(bits_per_texel);
        self.fit_bits_per_texel(bits_per_texel, set.texel_count(), set.max_extent(), set.output_channels(), manifest_bytes_estimate(set))
    }

    /// The smallest rate [`Self::fit_bits_per_texel_for`] can reach on `set`: one latent channel
    /// per grid of the lowest rate's shape, the decoder and the manifest, bits per texel.
    #[must_use]
    pub fn smallest_bits_per_texel_for(&self, set: &crate::set::TextureSet) -> f64 {
        let mut one = self.clone();
        one.take_rate_shape(0.0);
        for g in &mut one.model.grids {
            g.channels = 1;
        }
        one.model.estimated_rate_bytes(set.max_extent(), set.output_channels(), manifest_bytes_estimate(set)) as f64 * 8.0
            / set.texel_count().max(1) as f64
    }

    /// Scales the grids' channel counts so the whole bundle (latents + int8 MLP + manifest) of a
    /// library with `texel_count` texels (the bits-per-texel denominator), whose largest map is
    /// `max_extent` (width, height; the grids' extent), and `output_channels` outputs fits
    /// `bits_per_texel`; with a mip chain its level 0 does, the pyramid above it on top
    /// ([`ModelConfig::estimated_rate_bytes`]). Keeps the ratio between grids, then adds single channels while they fit;
    /// errors when even one channel per grid does not fit.
    pub fn fit_bits_per_texel(
        &mut self,
        bits_per_texel: f64,
        texel_count: usize,
        max_extent: (u32, u32),
        output_channels: usize,
        manifest_bytes: usize,
    ) -> Result<(), OptionsError> {
        if !(bits_per_texel.is_finite() && bits_per_texel > 0.0) {
            return Err(OptionsError::BitsPerTexel { bits_per_texel });
        }
        let budget_bits = bits_per_texel * texel_count as f64;
        let base: Vec<u32> = self.model.grids.iter().map(|g| g.channels.max(1)).collect();
        let base_total: u32 = base.iter().sum();
        // Try scale factors from large to small; take the first whose bundle fits.
        let mut best = None;
        for step in (1..=400).rev() {
            let factor = f64::from(step) / 50.0;
            let channels: Vec<u32> = base.iter().map(|&c| ((f64::from(c) * factor).round() as u32).clamp(1, 256)).collect();
            let mut candidate = self.clone();
            for (g, c) in candidate.model.grids.iter_mut().zip(&channels) {
                g.channels = *c;
            }
            let bits = candidate.model.estimated_rate_bytes(max_extent, output_channels, manifest_bytes) as f64 * 8.0;
            if bits <= budget_bits {
                best = Some(channels);
                break;
            }
        }
        let Some(channels) = best else {
            return Err(OptionsError::RateTooLow { bits_per_texel, channels: base_total });
        };
        for (g, c) in self.model.grids.iter_mut().zip(channels) {
            g.channels = c;
        }
        // Spend what rounding left: add single channels, finest grid first, while they fit.
        loop {
            let mut grew = false;
            for g in 0..self.model.grids.len() {
                let mut candidate = self.clone();
                candidate.model.grids[g].channels += 1;
                if candidate.model.grids[g].channels <= 256
                    && candidate.model.estimated_rate_bytes(max_extent, output_channels, manifest_bytes) as f64 * 8.0 <= budget_bits
                {
                    *self = candidate;
                    grew = true;
                    break;
                }
            }
            if !grew {
                break;
            }
        }
        Ok(())
    }

    /// Checks the options for values training cannot use.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.model.grids.is_empty() {
            return Err(OptionsError::NoGrids);
        }
        for (i, g) in self.model.grids.iter().enumerate() {
            if !(1..=8).contains(&g.bits) {
                return Err(OptionsError::LatentBits { grid: i, bits: g.bits });
            }
            if g.channels == 0 || g.channels > 256 || g.texels_per_cell == 0 {
                return Err(OptionsError::GridShape { grid: i });
            }
        }
        if self.model.hidden_widths.iter().any(|&w| w == 0 || w > MAX_MLP_WIDTH) {
            return Err(OptionsError::HiddenWidth);
        }
        let inputs = self.model.decoder_inputs(self.model.mips);
        if inputs > MAX_MLP_WIDTH {
            return Err(OptionsError::DecoderInputs { inputs });
        }
        if self.model.corner_reads
            && let Some(with) = self.budgets.refuses_corner_reads()
        {
            return Err(OptionsError::CornerReads { with });
        }
        // The output layer is one of the bundle's layers too.
        let max_hidden = crate::bundle::limits::MAX_LAYERS - 1;
        if self.model.hidden_widths.len() > max_hidden {
            return Err(OptionsError::HiddenLayers { layers: self.model.hidden_widths.len(), max: max_hidden });
        }
        if let Some(secs) = self.run.time_budget_secs
            && !(secs.is_finite() && secs > 0.0)
        {
            return Err(OptionsError::TimeBudget { secs });
        }
        if self.schedule.steps == 0 || self.schedule.batch_texels == 0 {
            return Err(OptionsError::EmptySchedule);
        }
        let weights = self.schedule.loss.weights.iter().map(|(kind, &w)| (kind.clone(), w));
        for (what, weight) in weights.chain([("normal z".to_owned(), self.schedule.loss.normal_z_weight)]) {
            if !(weight.is_finite() && weight >= 0.0) {
                return Err(OptionsError::LossWeight { what, weight });
            }
        }
        if !(0.0..=1.0).contains(&self.schedule.quantisation.freeze_latents_at)
            || !(0.0..=1.0).contains(&self.schedule.quantisation.quantize_weights_at)
        {
            return Err(OptionsError::ScheduleFractions);
        }
        let (q, o) = (&self.schedule.quantisation, &self.schedule.optimiser);
        let checks = [
            ("fp8_weights_at", "a fraction no later than quantize_weights_at", q.fp8_weights_at.unwrap_or(0.0), {
                let at = q.fp8_weights_at.unwrap_or(0.0);
                (0.0..=q.quantize_weights_at).contains(&at)
            }),
            ("learning_rate_floor", "in 0..=1", o.learning_rate_floor, (0.0..=1.0).contains(&o.learning_rate_floor)),
            ("adam_beta2", "in 0..1", o.adam_beta2, (0.0..1.0).contains(&o.adam_beta2)),
            ("grid_learning_rate_steps", "finite and above 0", o.grid_learning_rate_steps.unwrap_or(1.0), {
                let steps = o.grid_learning_rate_steps.unwrap_or(1.0);
                steps.is_finite() && steps > 0.0
            }),
        ];
        if let Some(&(what, range, value, _)) = checks.iter().find(|c| !c.3) {
            return Err(OptionsError::ScheduleValue { what, range, value });
        }
        if let Some(p) = &self.budgets.prune {
            if p.keep_per_grid.len() != self.model.grids.len() {
                return Err(OptionsError::PruneGrids { keep: p.keep_per_grid.len(), grids: self.model.grids.len() });
            }
            if p.keep_per_grid.iter().zip(&self.model.grids).any(|(&k, g)| k == 0 || k > g.channels) {
                return Err(OptionsError::PruneKeep);
            }
            if !(p.at > 0.0 && p.at < self.schedule.quantisation.freeze_latents_at) {
                return Err(OptionsError::PruneAt);
            }
            if !(p.group_lasso.is_finite() && p.group_lasso >= 0.0) {
                return Err(OptionsError::Lasso);
            }
        }
        if let Some(b) = &self.budgets.learned {
            if self.budgets.prune.is_some() {
                return Err(OptionsError::LearnedWithPrune);
            }
            if !(b.at > 0.0 && b.at < self.schedule.quantisation.freeze_latents_at) {
                return Err(OptionsError::LearnedAt);
            }
            if !(b.strength.is_finite() && b.strength >= 0.0) {
                return Err(OptionsError::Lasso);
            }
            if !(0.0..1.0).contains(&b.drop_below) {
                return Err(OptionsError::DropBelow { drop_below: b.drop_below });
            }
        }
        if self.model.pe_frequencies > 8 {
            return Err(OptionsError::PeFrequencies);
        }
        if !(self.model.mip_cell_growth.is_finite() && (1.0..=4.0).contains(&self.model.mip_cell_growth)) {
            return Err(OptionsError::MipCellGrowth { growth: self.model.mip_cell_growth });
        }
        if !(1..=4).contains(&self.model.mip_group) {
            return Err(OptionsError::MipGroup { group: self.model.mip_group });
        }
        if !(self.schedule.sampling.mip_sample_boost.is_finite() && (1.0..=4.0).contains(&self.schedule.sampling.mip_sample_boost)) {
            return Err(OptionsError::MipSampleBoost { boost: self.schedule.sampling.mip_sample_boost });
        }
        let (mix, after) = (self.schedule.sampling.mix, self.schedule.sampling.uniform_after);
        if !((0.0..=MAX_SAMPLING_MIX).contains(&mix) && (0.0..=1.0).contains(&after)) {
            return Err(OptionsError::Sampling { mix, after });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
