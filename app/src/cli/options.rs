//! The engine options as argument groups, one per part of [`CompressOptions`]: each group's
//! `apply` writes its flags over a preset's values, so the flag → option mapping reads in one place.

use anyhow::{Context as _, Result, bail};
use std::collections::BTreeMap;
use std::path::PathBuf;
use texset_core::{
    model::{Activation, MAX_MLP_WIDTH, WeightFormat},
    options::{
        Backend, BudgetConfig, ChannelPruning, CheckpointOptions, ExplicitShape, GridOptions, LatentInit, LearnedBudgets, LibrarySharing,
        ModelConfig, NormalTargets, PruneMethod, Quantisation, Recipe, RecipePiece, RunOptions, Sampling, ScheduleConfig,
    },
    set::MapKind,
};

use super::common::{parse_channel_counts, parse_latent_bits, parse_learning_rate};

// The model: latent grids, decoder shape and weight format, mip chain.
#[derive(clap::Args)]
#[command(next_help_heading = "Model")]
pub(super) struct ModelArgs {
    /// The latent grids, finest first: `TEXELSxCHANNELS@BITS`, comma separated, e.g.
    /// `2x8@2,4x16@4` (a grid of one cell per 2×2 texels with 8 two-bit channels, then one per
    /// 4×4 with 16 four-bit channels). Overrides the shape a rate picks; with `--bpp` the channel
    /// counts are scaled to the rate, keeping their ratio.
    #[arg(long, value_parser = parse_grids)]
    pub grids: Option<Grids>,
    /// Bits per latent value, every grid.
    #[arg(long, value_parser = parse_latent_bits)]
    pub latent_bits: Option<u32>,
    /// How the decoder's weights are stored: `int8` with a scale per row, `fp16`, `e4m3`
    /// (8-bit minifloat, a scale per row) or `mxint8` (int8, a power-of-two scale per 32).
    #[arg(long, value_enum, default_value_t = WeightFormat::Int8)]
    pub weight_format: WeightFormat,
    /// Hidden layer widths of the decoder MLP, input side first, e.g. `96-64-32` (default
    /// `64-64-64`). A wider decoder reaches higher PSNR at high rates and costs more
    /// multiply-adds per decoded texel; `--bpp` leaves fewer bits to the latents for it.
    #[arg(long)]
    pub decoder: Option<String>,
    /// The decoder's hidden activation: `hgelu` (the default), NVIDIA RTXNTC's `HGELUClamp`
    /// (`min(x, 3) · clamp(x / 3 + 0.5, 0, 1)`), or `relu` (the default before decision 038).
    #[arg(long, value_enum)]
    pub activation: Option<Activation>,
    /// The decoder reads grid 0's four corners, each times its bilinear weight, as four inputs
    /// per channel (NTC v0.5–0.7's learned interpolation), starting from the bilinear decoder.
    /// Every trainer and decoder (CPU, WGSL, exported shaders) takes it; pruning and learned
    /// budgets do not yet. `--bpp` from 5 to 10 turns it on unless given
    /// (`--corner-reads=false`) or pruning or learned budgets are asked for.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub corner_reads: Option<bool>,
    /// Store a full mip chain: a latent pyramid (about a third more latent bits) trained on
    /// every level of box-filtered references, decoded at any level of detail.
    #[arg(long)]
    pub mips: bool,
    /// With `--mips`: how much denser in cells per texel each mip level's grids are than those
    /// of the level above (1: the grids halve with the texture; 2: they halve every other
    /// level).
    #[arg(long, default_value_t = 2.0, requires = "mips")]
    pub mip_growth: f32,
    /// With `--mips`: mip levels each pyramid level of latents serves (2: mips 0–1 share level
    /// 0's grids, 2–3 pyramid level 1's, …, a third more latent bits with growth 2; 1: a
    /// pyramid level per mip level, about twice the latent bits with growth 2).
    #[arg(long, default_value_t = 2, requires = "mips")]
    pub mip_group: u32,
}

impl ModelArgs {
    /// Writes these flags over `model` (a preset's).
    pub(super) fn apply(&self, model: &mut ModelConfig) -> Result<()> {
        if let Some(Grids(grids)) = &self.grids {
            model.grids.clone_from(grids);
            model.explicit.grids = true;
        }
        if let Some(bits) = self.latent_bits {
            for g in &mut model.grids {
                g.bits = bits;
            }
            model.explicit.latent_bits = true;
        }
        model.weight_format = self.weight_format;
        if let Some(text) = &self.decoder {
            model.hidden_widths = parse_decoder_widths(text)?;
            model.explicit.decoder = true;
        }
        if let Some(activation) = self.activation {
            model.activation = activation;
        }
        if let Some(corner_reads) = self.corner_reads {
            model.corner_reads = corner_reads;
            model.explicit.corner_reads = true;
        }
        model.mips = self.mips;
        model.mip_cell_growth = self.mip_growth;
        model.mip_group = self.mip_group;
        Ok(())
    }
}

// The training schedule: steps, seed, quantisation modes, mip sampling.
#[derive(clap::Args)]
#[command(next_help_heading = "Training")]
pub(super) struct ScheduleArgs {
    /// Training steps (overrides the preset). Trained as given on every backend: `auto` scales
    /// only a preset's steps on a hardware GPU.
    #[arg(long)]
    pub steps: Option<u32>,
    /// Random seed (equal seeds give identical bundles).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The training recipe. `texset` (the default): NTC's pieces `freeze`, `rates`, `decay`,
    /// `adam` and `init`, with texset's quantisation (`--latent-quant auto`, PTQ weights).
    /// `ntc`: NVIDIA RTXNTC's whole recipe (QAT latents with noise per latent per step from step
    /// 0, frozen at 95 %; learning rates in quantisation steps, decayed to 0; Adam β2 0.999 with
    /// sparse updates; weights through E4M3 from 96 %, their format from 98 %; latents from
    /// N(0, 0.5)). `classic`: texset's schedule before it took NTC's pieces (frozen at 80 %;
    /// rates 0.02 and 0.004 decayed to 5 %; Adam β2 0.99, dense; latents from uniform ±0.25).
    /// The flags below override its choices.
    #[arg(long, value_enum, default_value_t = Recipe::Texset)]
    pub recipe: Recipe,
    /// Pieces of the recipe's to leave at the classic recipe's choice, comma separated (one at
    /// a time measures what each is worth).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub recipe_without: Vec<RecipePiece>,
    /// How latents meet their bits: `qat` trains them with ±½-step noise, then rounds and
    /// freezes them and fine-tunes the decoder; `ptq` trains them in float and rounds at pack;
    /// `auto` (the default), the measured winner: `qat` for 2-bit latents and for batches of
    /// 65,536 texels (the max preset), `ptq` otherwise.
    #[arg(long, value_enum)]
    pub latent_quant: Option<Quantisation>,
    /// How the decoder's weights meet their format: `qat` fine-tunes through it
    /// (fake-quantisation); `ptq` quantises the float weights at pack; `auto` (the default), the
    /// measured winner: `qat` for `e4m3`, `ptq` for the others.
    #[arg(long, value_enum)]
    pub weight_quant: Option<Quantisation>,
    /// With `--mips`: how much more often training draws a texel of each coarser level than
    /// one of the level above (1: every texel of the chain alike, each level by its area).
    #[arg(long, default_value_t = 1.5, requires = "mips")]
    pub mip_boost: f32,
    /// With `--mips`: train on the preset's batch as is, level 0 getting only its share of it
    /// (by default the batch grows by the chain's draws, 1.6× at `--mip-boost 1.5`, so level 0
    /// trains on as many texels as without mips).
    #[arg(long, requires = "mips")]
    pub mip_fixed_batch: bool,
    /// Where the latent grids start: `normal` (the default, N(0, 0.5), NTC's), `noise`
    /// (uniform in ±0.25, the classic recipe's) or `pca` (the principal components of the maps'
    /// channels, box-filtered to each grid).
    #[arg(long, value_enum)]
    pub latent_init: Option<LatentInit>,
    /// How training draws its texels: `uniform`, every texel alike; `error`, 8×8-texel tiles
    /// of high error more often (by a mix of their share and their weighted squared error,
    /// measured every 5 % of the steps), each draw's loss weight scaled so the expected loss is
    /// the uniform one; `rms-error`, by the square root of that error. CPU and burn trainers.
    #[arg(long, value_enum)]
    pub sampling: Option<Sampling>,
    /// With `--sampling error|rms-error`: the share of the draws that follow the error map, 0
    /// to 0.95 (default 0.5; the rest are uniform).
    #[arg(long)]
    pub sampling_mix: Option<f32>,
    /// With `--sampling error|rms-error`: the fraction of the steps after which the draws are
    /// uniform again (default 0.9; 1: never).
    #[arg(long)]
    pub sampling_uniform_after: Option<f32>,
    /// Adam learning rate of the latent grids, decayed along a cosine (default 1.5 quantisation
    /// steps of the finest grid's bits, 0.2 at 4 bits; the classic recipe's 0.02).
    #[arg(long, value_parser = parse_learning_rate)]
    pub grid_lr: Option<f32>,
    /// Adam learning rate of the decoder MLP, decayed along a cosine (default 0.005; the
    /// classic recipe's 0.004; a rate's row may scale the default for its decoder, as `--bpp`
    /// from 5 does by 2.4). Given, it is trained as given at every rate.
    #[arg(long, value_parser = parse_learning_rate)]
    pub mlp_lr: Option<f32>,
    /// Loss weight per map kind, `kind=W` comma separated (default `normal=5`, 1 for the others),
    /// e.g. `normal=3,orm=0.5`.
    #[arg(long, value_parser = parse_loss_weights)]
    pub loss_weight: Option<BTreeMap<String, f32>>,
    /// What a normal map trains towards: its `stored` values, or `unit`, its normals
    /// renormalised to unit length (renders normalise them). Default `stored`.
    #[arg(long, value_enum)]
    pub normal_targets: Option<NormalTargets>,
    /// Loss weight of a normal map's z channel relative to its x and y (default 1).
    #[arg(long)]
    pub normal_z_weight: Option<f32>,
}

/// A value's name on the command line.
fn value_name(value: &impl clap::ValueEnum) -> String {
    value.to_possible_value().map_or_else(String::new, |v| v.get_name().to_owned())
}

/// Parses `kind=W[,kind=W…]` into loss weights per map kind.
fn parse_loss_weights(text: &str) -> Result<BTreeMap<String, f32>> {
    let mut weights = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (kind, weight) = item.split_once('=').with_context(|| format!("expected kind=W, got {item:?}"))?;
        let kind = MapKind::from_token(kind.trim()).with_context(|| format!("unknown map kind {kind:?}"))?;
        let weight: f32 = weight.trim().parse().with_context(|| format!("loss weight of {kind}: {weight:?} is not a number"))?;
        if !(weight.is_finite() && weight >= 0.0) {
            bail!("loss weight of {kind}: must be finite and at least 0, got {weight}");
        }
        weights.insert(kind.token().to_owned(), weight);
    }
    Ok(weights)
}

impl ScheduleArgs {
    /// Writes these flags over `schedule` (a preset's), marking in `explicit` what a rate's row
    /// must then keep as given.
    pub(super) fn apply(&self, schedule: &mut ScheduleConfig, explicit: &mut ExplicitShape) -> Result<()> {
        if let Some(piece) = self.recipe_without.iter().find(|p| !self.recipe.pieces().contains(p)) {
            bail!("--recipe-without {}: the {} recipe has no such piece of NTC's", value_name(piece), value_name(&self.recipe));
        }
        if let Some(steps) = self.steps {
            schedule.give_steps(steps);
        }
        if let Some(seed) = self.seed {
            schedule.seed = seed;
        }
        if self.recipe != Recipe::Texset || !self.recipe_without.is_empty() {
            schedule.apply_recipe(self.recipe, &self.recipe_without);
        }
        if let Some(mode) = self.latent_quant {
            schedule.quantisation.latents = mode;
        }
        if let Some(mode) = self.weight_quant {
            schedule.quantisation.weights = mode;
        }
        schedule.sampling.mip_sample_boost = self.mip_boost;
        schedule.sampling.mip_level0_batch = !self.mip_fixed_batch;
        if let Some(init) = self.latent_init {
            schedule.latent_init = init;
        }
        if let Some(sampling) = self.sampling {
            schedule.sampling.mode = sampling;
        }
        if let Some(mix) = self.sampling_mix {
            schedule.sampling.mix = mix;
        }
        if let Some(after) = self.sampling_uniform_after {
            schedule.sampling.uniform_after = after;
        }
        if let Some(lr) = self.grid_lr {
            schedule.optimiser.grid_learning_rate = lr;
            // A rate given in units overrides one in quantisation steps.
            schedule.optimiser.grid_learning_rate_steps = None;
        }
        if let Some(lr) = self.mlp_lr {
            schedule.optimiser.mlp_learning_rate = lr;
            // A decoder learning rate given is trained as given at every rate.
            explicit.mlp_learning_rate = true;
        }
        if let Some(weights) = &self.loss_weight {
            // Over the preset's weights: a kind not named keeps its own.
            schedule.loss.weights.extend(weights.iter().map(|(k, &w)| (k.clone(), w)));
        }
        if let Some(targets) = self.normal_targets {
            schedule.loss.normal_targets = targets;
        }
        if let Some(weight) = self.normal_z_weight {
            schedule.loss.normal_z_weight = weight;
        }
        Ok(())
    }
}

// Channel budgets: given, proposed by the analysis, learned, pruned, shared between materials.
#[derive(clap::Args)]
#[command(next_help_heading = "Channel budgets")]
pub(super) struct BudgetArgs {
    /// Channel budgets: `kind=N` or `material/kind=N`, comma separated.
    #[arg(long)]
    pub budget: Option<String>,
    /// Apply the graded budgets the content analysis proposes (otherwise they are only
    /// reported; flat maps get no channels either way).
    #[arg(long)]
    pub auto_budgets: bool,
    /// How a library's materials share latent channels: `all` read every channel; `related`
    /// gives each group of related materials (a duplicate or colour-variant map between them)
    /// its own channels.
    #[arg(long, value_enum, default_value_t = LibrarySharing::Related)]
    pub sharing: LibrarySharing,
    /// Train with more channels, then keep this many per grid (comma separated) part-way
    /// through training; the prune pass drops the others.
    #[arg(long)]
    pub prune_to: Option<String>,
    /// How `--prune-to` chooses the channels it keeps.
    #[arg(long, value_enum, default_value_t = PruneMethod::L1)]
    pub prune_method: PruneMethod,
    /// Fraction of the steps at which `--prune-to` removes channels.
    #[arg(long, default_value_t = 0.5)]
    pub prune_at: f32,
    /// Group-lasso strength on each channel's first-layer column before `--prune-to`.
    #[arg(long, default_value_t = 0.0)]
    pub group_lasso: f32,
    /// Learn each texture's budget in training: a gate per (texture, channel) under a group
    /// lasso, cut part-way (`--budget-cut-at`); a channel whose importance is under
    /// `--budget-drop-below` of the largest leaves that texture's budget (CPU trainer).
    #[arg(long, conflicts_with = "prune_to")]
    pub learn_budgets: bool,
    /// Group-lasso strength per (texture, channel) of `--learn-budgets`.
    #[arg(long, default_value_t = LearnedBudgets::default().strength, requires = "learn_budgets")]
    pub budget_lasso: f32,
    /// Fraction of the steps at which `--learn-budgets` cuts the budgets.
    #[arg(long, default_value_t = LearnedBudgets::default().at, requires = "learn_budgets")]
    pub budget_cut_at: f32,
    /// Importance (relative to the library's largest) under which `--learn-budgets` drops a
    /// channel from a texture's budget.
    #[arg(long, default_value_t = LearnedBudgets::default().drop_below, requires = "learn_budgets")]
    pub budget_drop_below: f32,
}

impl BudgetArgs {
    /// Writes these flags over `budgets` (a preset's).
    pub(super) fn apply(&self, budgets: &mut BudgetConfig) -> Result<()> {
        if let Some(text) = &self.budget {
            budgets.overrides = parse_budgets(text)?;
        }
        budgets.auto = self.auto_budgets;
        if self.learn_budgets {
            budgets.learned =
                Some(LearnedBudgets { strength: self.budget_lasso, at: self.budget_cut_at, drop_below: self.budget_drop_below });
        }
        budgets.sharing = self.sharing;
        if let Some(text) = &self.prune_to {
            budgets.prune = Some(ChannelPruning {
                keep_per_grid: parse_channel_counts(text, "--prune-to")?,
                method: self.prune_method,
                at: self.prune_at,
                group_lasso: self.group_lasso,
            });
        }
        Ok(())
    }
}

// Where and how the run goes: backend, checkpoints, fine-tuning from a bundle.
#[derive(clap::Args)]
#[command(next_help_heading = "Run")]
pub(super) struct RunArgs {
    /// Training backend.
    #[arg(long, value_enum, default_value_t = Backend::Auto)]
    pub backend: Backend,
    /// Checkpoint file (written every `--checkpoint-secs`); with `--resume`, continue from it.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Seconds between checkpoints.
    #[arg(long, default_value_t = 60.0)]
    pub checkpoint_secs: f64,
    /// Continue from `--checkpoint` if it exists.
    #[arg(long, requires = "checkpoint")]
    pub resume: bool,
    /// Fine-tune: start from this bundle's model (a bundle of the same library's shape) at
    /// lower learning rates, e.g. after a source map changed.
    #[arg(long)]
    pub init_from: Option<PathBuf>,
    /// Train for about this many seconds: a short timed probe sets the steps (instead of
    /// `--steps`), so the whole schedule fits; training looks again a quarter and half of the
    /// way and changes the length when other load changed its speed. The bundle then depends
    /// on the machine's speed. Also `--train-secs`.
    #[arg(long, value_name = "SECS", alias = "train-secs")]
    pub time_budget: Option<f64>,
}

impl RunArgs {
    /// Writes these flags over `run`.
    pub(super) fn apply(&self, run: &mut RunOptions) -> Result<()> {
        run.backend = self.backend;
        let secs = self.checkpoint_secs;
        if !(secs.is_finite() && secs >= 0.0) {
            bail!("--checkpoint-secs must be a non-negative number of seconds, got {secs}");
        }
        if let Some(path) = &self.checkpoint {
            if self.resume {
                run.resume_from = Some(path.clone());
            }
            run.checkpoint = Some(CheckpointOptions { path: path.clone(), every_secs: secs });
        }
        run.init_from.clone_from(&self.init_from);
        run.time_budget_secs = self.time_budget;
        Ok(())
    }
}

/// `--decoder`: hidden layer widths separated by `-` or `,` (`96-64-32`), 1 to `MAX_MLP_WIDTH`
/// each (the layer count is checked with the other options).
pub(super) fn parse_decoder_widths(text: &str) -> Result<Vec<usize>> {
    text.split(['-', ','])
        .map(|w| match w.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_MLP_WIDTH).contains(&n) => Ok(n),
            _ => Err(anyhow::anyhow!("--decoder: '{w}' is not a layer width (1 to {MAX_MLP_WIDTH}) in '{text}'")),
        })
        .collect()
}

/// `--grids`' value: the latent grids, finest first.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Grids(pub Vec<GridOptions>);

/// `--grids`: `TEXELSxCHANNELS@BITS`, comma separated (`2x8@2,4x16@4`): texels per cell 1 to 64
/// along each axis, channels 1 to 256, bits 1 to 8.
fn parse_grids(text: &str) -> Result<Grids, String> {
    let grid = |item: &str| -> Option<GridOptions> {
        let (cell, rest) = item.trim().split_once('x')?;
        let (channels, bits) = rest.split_once('@')?;
        let grid = GridOptions {
            texels_per_cell: cell.trim().parse().ok()?,
            channels: channels.trim().parse().ok()?,
            bits: bits.trim().parse().ok()?,
        };
        ((1..=64).contains(&grid.texels_per_cell) && (1..=256).contains(&grid.channels) && (1..=8).contains(&grid.bits)).then_some(grid)
    };
    let grids: Vec<GridOptions> = text
        .split(',')
        .map(|item| {
            grid(item).ok_or_else(|| format!("'{item}' is not a grid TEXELSxCHANNELS@BITS (texels 1-64, channels 1-256, bits 1-8)"))
        })
        .collect::<Result<_, _>>()?;
    if grids.is_empty() {
        return Err("--grids needs at least one grid".into());
    }
    Ok(Grids(grids))
}

/// `--budget`: `kind=N` or `material/kind=N`, comma separated.
fn parse_budgets(text: &str) -> Result<BTreeMap<String, u32>> {
    let mut out = BTreeMap::new();
    for item in text.split(',').filter(|s| !s.trim().is_empty()) {
        let (key, value) = item.split_once('=').with_context(|| format!("budget '{item}' is not kind=N"))?;
        let n: u32 = value.trim().parse().with_context(|| format!("budget '{item}': '{value}' is not a channel count"))?;
        out.insert(key.trim().to_owned(), n);
    }
    Ok(out)
}
