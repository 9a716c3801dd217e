//! Training: the texel sampler every backend shares, and the hand-fused CPU trainer (latent
//! gather + MLP forward/backward through sgemm + Adam), with burn as its reference in tests.
//!
//! Determinism: a step's batch is split into fixed chunks of [`CHUNK_TEXELS`]; each chunk draws its
//! texels and noise from a generator seeded by `(seed, step, chunk)` and the gradients are summed
//! in chunk order, so results do not depend on the number of threads.

use crate::model::layout::ModelLayout;
use crate::model::params::{LOD_INPUT_SCALE, LayerParams, ModelParams, pe_angular_frequency};
use crate::model::quant::{self, QuantizedLayer};
use crate::model::reference::bilinear_corners;
use crate::options::{ChannelPruning, CompressOptions, LearnedBudgets, PruneMethod, Quantisation};
use crate::progress::{Cancel, Progress, TrainPhase, TrainStatus};
use crate::set::TextureSet;
use crate::train::gemm::{Strides, gemm};
use rayon::prelude::*;
use std::borrow::Cow;
use std::time::Instant;

/// Texels per deterministic work chunk.
pub const CHUNK_TEXELS: usize = 256;

/// A training failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// Cancelled through [`Cancel`].
    #[error("training was cancelled")]
    Cancelled,
    /// A checkpoint could not be written or read.
    #[error("checkpoint {path:?}: {message}")]
    Checkpoint {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The training backend failed.
    #[error("training backend failed: {0}")]
    Backend(String),
    /// GPU training could not start or went on no further (no adapter, no device, device lost);
    /// [`crate::compress`] falls back to the CPU trainer.
    #[error("GPU training failed: {0}")]
    Gpu(String),
    /// The bundle to start from (`CompressOptions::init_from`) does not fit this library's model.
    #[error("cannot start from {path:?}: {message}")]
    InitFrom {
        /// The bundle.
        path: std::path::PathBuf,
        /// What does not fit.
        message: String,
    },
}

pub use crate::rng::Rng;

/// A batch in dense form: what every backend consumes.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Texels in the batch.
    pub len: usize,
    /// `[len][2]` texture coordinates.
    pub uv: Vec<f32>,
    /// `[len][latent_channels]` channel masks.
    pub mask: Vec<f32>,
    /// `[len][output_channels]` targets (0 where not targeted).
    pub target: Vec<f32>,
    /// `[len][output_channels]` loss weights (0 where not targeted).
    pub weight: Vec<f32>,
    /// `[len]` mip level of each texel (empty: all level 0).
    pub level: Vec<u32>,
    /// `[len]` the texture (flat slot index) whose budget gates each texel's mask, while budgets
    /// are learned (empty otherwise: no gate gradients).
    pub gate: Vec<u32>,
}

struct TargetRef<'a> {
    data: Cow<'a, [f32]>,
    channels: usize,
    output_offset: usize,
    weight: f32,
    /// Flat index of its texture's slot (over `layout.textures`, materials in order).
    slot: usize,
}

/// Textures of one material that share a resolution and a channel mask, at one mip level: one MLP
/// evaluation per texel serves all of them.
struct Group<'a> {
    material: usize,
    width: u32,
    height: u32,
    level: u32,
    mask: Vec<f32>,
    /// While budgets are learned each texture is a group of its own, gated by its slot's gates.
    gate: Option<u32>,
    targets: Vec<TargetRef<'a>>,
}

/// Draws training texels uniformly over every texel of every texture group of the library (and,
/// with a mip chain, of every level of their box-filtered chains), so each map and level is
/// trained in proportion to its size.
pub struct Sampler<'a> {
    groups: Vec<Group<'a>>,
    /// Per group, how many times each of its texels counts in the draw (coarse mip levels more).
    repeats: Vec<u64>,
    cumulative_texels: Vec<u64>,
    latent_channels: usize,
    output_channels: usize,
    level_boost: f32,
}

impl<'a> Sampler<'a> {
    /// Groups the set's textures by (material, resolution, mask) and, with a mip chain, builds
    /// every level's reference ([`crate::model::mips::box_chain`]).
    #[must_use]
    pub fn new(set: &'a TextureSet, layout: &ModelLayout) -> Self {
        let mut groups: Vec<Group<'a>> = Vec::new();
        let mut flat_slot = 0usize;
        for (material_index, (material, slots)) in set.materials.iter().zip(&layout.textures).enumerate() {
            let first_group = groups.len();
            for (texture, slot) in material.textures.iter().zip(slots) {
                let slot_index = flat_slot;
                flat_slot += 1;
                if slot.duplicate_of.is_some() {
                    // Stored once: its original is sampled.
                    continue;
                }
                let mask = layout.mask(slot);
                let chain = if layout.mip_levels > 1 {
                    crate::model::mips::box_chain(
                        &texture.texels,
                        texture.width,
                        texture.height,
                        texture.channels,
                        texture.kind,
                        texture.color_space,
                    )
                } else {
                    Vec::new()
                };
                let levels = std::iter::once((texture.width, texture.height, Cow::Borrowed(texture.texels.as_slice())))
                    .chain(chain.into_iter().map(|l| (l.width, l.height, Cow::Owned(l.values))));
                for (level, (width, height, data)) in levels.enumerate() {
                    let level = level as u32;
                    let target = TargetRef {
                        data,
                        channels: texture.channels as usize,
                        output_offset: slot.output_offset,
                        weight: slot.loss_weight,
                        slot: slot_index,
                    };
                    if let Some(g) = groups[first_group..]
                        .iter_mut()
                        .find(|g| g.width == width && g.height == height && g.level == level && g.mask == mask)
                    {
                        g.targets.push(target);
                    } else {
                        groups.push(Group {
                            material: material_index,
                            width,
                            height,
                            level,
                            mask: mask.clone(),
                            gate: None,
                            targets: vec![target],
                        });
                    }
                }
            }
        }
        let mut sampler = Self {
            groups,
            repeats: Vec::new(),
            cumulative_texels: Vec::new(),
            latent_channels: layout.latent_channels(),
            output_channels: layout.output_channels(),
            level_boost: 1.0,
        };
        sampler.weigh_levels(1.0);
        sampler
    }

    /// Splits the groups so that every texture is sampled on its own, its texels tagged with its
    /// slot (`Batch::gate`): what learning its budget's gates needs.
    pub fn split_for_gates(&mut self) {
        let mut groups = Vec::new();
        for g in std::mem::take(&mut self.groups) {
            for t in g.targets {
                groups.push(Group {
                    material: g.material,
                    width: g.width,
                    height: g.height,
                    level: g.level,
                    mask: g.mask.clone(),
                    gate: Some(t.slot as u32),
                    targets: vec![t],
                });
            }
        }
        self.groups = groups;
        self.weigh_levels(self.level_boost);
    }

    /// Per flat slot (up to `slots`), the share of draws that land on its texels while gated
    /// (0 for slots no gated group samples).
    #[must_use]
    pub fn gate_shares(&self, slots: usize) -> Vec<f32> {
        let total = self.texel_count().max(1) as f64;
        let mut shares = vec![0.0f32; slots];
        let mut previous = 0u64;
        for (g, &c) in self.groups.iter().zip(&self.cumulative_texels) {
            if let Some(share) = g.gate.and_then(|s| shares.get_mut(s as usize)) {
                *share += ((c - previous) as f64 / total) as f32;
            }
            previous = c;
        }
        shares
    }

    /// Gives each texture the mask of its slot in `masks` (flat slot order) and groups again the
    /// textures of a material that share a resolution, a level and a mask; ends gating.
    pub fn set_masks(&mut self, masks: &[Vec<f32>]) {
        let mut groups: Vec<Group<'a>> = Vec::new();
        for g in std::mem::take(&mut self.groups) {
            for t in g.targets {
                let mask = masks.get(t.slot).cloned().unwrap_or_else(|| g.mask.clone());
                if let Some(found) = groups.iter_mut().find(|h| {
                    h.material == g.material && h.width == g.width && h.height == g.height && h.level == g.level && h.mask == mask
                }) {
                    found.targets.push(t);
                } else {
                    groups.push(Group {
                        material: g.material,
                        width: g.width,
                        height: g.height,
                        level: g.level,
                        mask,
                        gate: None,
                        targets: vec![t],
                    });
                }
            }
        }
        self.groups = groups;
        self.weigh_levels(self.level_boost);
    }

    /// Draws each texel of mip level `k` `boost^k` times as often as one of level 0
    /// ([`crate::options::CompressOptions::mip_sample_boost`]; 1: every texel alike).
    #[must_use]
    pub fn with_level_boost(mut self, boost: f32) -> Self {
        self.level_boost = boost;
        self.weigh_levels(boost);
        self
    }

    fn weigh_levels(&mut self, boost: f32) {
        // 16 × boost^k draws per texel, rounded, so fractional boosts keep their ratios; without
        // a mip chain one each (the draws of a run without mips are what they always were).
        let boost = f64::from(boost.max(1.0));
        let scale = if self.groups.iter().any(|g| g.level > 0) { 16.0 } else { 1.0 };
        self.repeats = self.groups.iter().map(|g| (scale * boost.powi(g.level.min(64) as i32)).round().max(1.0) as u64).collect();
        let mut total = 0u64;
        self.cumulative_texels = self
            .groups
            .iter()
            .zip(&self.repeats)
            .map(|(g, r)| {
                total = total.saturating_add((u64::from(g.width) * u64::from(g.height)).saturating_mul(*r));
                total
            })
            .collect();
    }

    /// Total draws over all groups and levels (texels times their level's weight).
    #[must_use]
    pub fn texel_count(&self) -> u64 {
        self.cumulative_texels.last().copied().unwrap_or(0)
    }

    /// Masks these latent channels (`true`: removed) for every texture group from now on.
    pub fn drop_channels(&mut self, dropped: &[bool]) {
        for g in &mut self.groups {
            for (m, d) in g.mask.iter_mut().zip(dropped) {
                if *d {
                    *m = 0.0;
                }
            }
        }
    }

    /// Fills `batch` with `len` random texels.
    pub fn fill(&self, rng: &mut Rng, len: usize, batch: &mut Batch) {
        let (lc, oc) = (self.latent_channels, self.output_channels);
        batch.len = len;
        batch.uv.clear();
        batch.uv.resize(len * 2, 0.0);
        batch.mask.clear();
        batch.mask.resize(len * lc, 0.0);
        batch.target.clear();
        batch.target.resize(len * oc, 0.0);
        batch.weight.clear();
        batch.weight.resize(len * oc, 0.0);
        batch.level.clear();
        batch.level.resize(len, 0);
        batch.gate.clear();
        if self.groups.iter().any(|g| g.gate.is_some()) {
            batch.gate.resize(len, 0);
        }
        let total = self.texel_count();
        if total == 0 {
            return;
        }
        for i in 0..len {
            let r = rng.below(total);
            let g = self.cumulative_texels.partition_point(|&c| c <= r);
            let Some(group) = self.groups.get(g) else { continue };
            let start = if g == 0 { 0 } else { self.cumulative_texels[g - 1] };
            let texel = ((r - start) / self.repeats[g]) as usize;
            let (x, y) = (texel % group.width as usize, texel / group.width as usize);
            batch.uv[2 * i] = (x as f32 + 0.5) / group.width as f32;
            batch.uv[2 * i + 1] = (y as f32 + 0.5) / group.height as f32;
            batch.level[i] = group.level;
            if let (Some(gate), Some(b)) = (group.gate, batch.gate.get_mut(i)) {
                *b = gate;
            }
            batch.mask[i * lc..(i + 1) * lc].copy_from_slice(&group.mask);
            for t in &group.targets {
                for c in 0..t.channels {
                    let o = i * oc + t.output_offset + c;
                    batch.target[o] = t.data.get(texel * t.channels + c).copied().unwrap_or(0.0);
                    batch.weight[o] = t.weight;
                }
            }
        }
    }
}

/// Gradients and statistics of one chunk.
pub struct ChunkGrads {
    /// `Σ weight · (y − t)²` over the chunk (not yet divided by the batch size).
    pub weighted_sq_err: f64,
    /// `Σ (y − t)²` over targeted channels, and their count (for the PSNR estimate).
    pub sq_err: f64,
    /// Number of targeted channel values.
    pub targeted: f64,
    /// Per layer, `d loss / d W` and `d loss / d b` (unscaled by the batch size).
    pub layers: Vec<LayerParams>,
    /// `[len][latent_channels]` gradient of the masked latent features (unscaled).
    pub d_features: Vec<f32>,
    /// `[len][grids]` bilinear corner cells and weights of each texel.
    pub corners: Vec<([usize; 4], [f32; 4])>,
    /// `[len]` pyramid level each texel read (empty: all level 0).
    pub levels: Vec<u32>,
    /// `[slot][latent_channels]` gradient of the mask entries (the budget gates) of each gated
    /// texture, up to the largest slot in the batch (empty when the batch has no gates).
    pub gate_grads: Vec<f32>,
}

/// Forward and backward of the model on a batch (the fused CPU kernel). `mlp` are the layers to
/// run (the float ones, or their int8 fake-quantised copies); `noise` adds uniform noise of the
/// given amplitude to every gathered latent corner value.
#[must_use]
pub fn forward_backward(params: &ModelParams, mlp: &[LayerParams], batch: &Batch, noise: Option<(f32, &mut Rng)>) -> ChunkGrads {
    let n = batch.len;
    let lc = params.latent_channels();
    let inputs = params.mlp_inputs();
    let oc = params.output_channels();
    let grid_count = params.grids.len();
    let mut noise = noise;

    // Features (and, with gates, the unmasked latent values the gate gradients need).
    let gated = batch.gate.len() == n && n > 0;
    let mut raw = if gated { vec![0.0f32; n * lc] } else { Vec::new() };
    let mut x = vec![0.0f32; n * inputs];
    let mut corners = Vec::with_capacity(n * grid_count);
    let top_level = params.mip_levels() - 1;
    let levels: Vec<u32> = (0..n).map(|i| batch.level.get(i).map_or(0, |&l| l.min(top_level))).collect();
    for i in 0..n {
        let (u, v) = (batch.uv[2 * i], batch.uv[2 * i + 1]);
        let row = &mut x[i * inputs..(i + 1) * inputs];
        let mut offset = 0;
        let grids = params.level_grids(levels[i]);
        for grid in grids {
            let ch = grid.channels as usize;
            let (cells, weights) = bilinear_corners(u, v, grid.width, grid.height);
            for c in 0..ch {
                let mut value = 0.0;
                for k in 0..4 {
                    let mut g = grid.values[cells[k] * ch + c];
                    if let Some((amplitude, rng)) = noise.as_mut() {
                        g += (rng.next_f32() * 2.0 - 1.0) * *amplitude;
                    }
                    value += weights[k] * g;
                }
                row[offset + c] = value * batch.mask[i * lc + offset + c];
                if let Some(r) = raw.get_mut(i * lc + offset + c) {
                    *r = value;
                }
            }
            offset += ch;
            corners.push((cells, weights));
        }
        let (w0, h0) = grids.first().map_or((1, 1), |g| (g.width, g.height));
        let (px, py) = (u * w0 as f32, v * h0 as f32);
        for k in 0..params.pe_frequencies {
            let a = pe_angular_frequency(k);
            let j = offset + 4 * k as usize;
            row[j] = (a * px).sin();
            row[j + 1] = (a * px).cos();
            row[j + 2] = (a * py).sin();
            row[j + 3] = (a * py).cos();
        }
        if top_level > 0 {
            row[offset + 4 * params.pe_frequencies as usize] = levels[i] as f32 * LOD_INPUT_SCALE;
        }
    }

    // Forward: z_l = a_{l-1} · W_lᵀ + b_l; a_l = relu(z_l) except the last.
    let mut activations: Vec<Vec<f32>> = vec![x];
    let mut pre: Vec<Vec<f32>> = Vec::with_capacity(mlp.len());
    let last = mlp.len().saturating_sub(1);
    for (l, layer) in mlp.iter().enumerate() {
        let mut z = Vec::with_capacity(n * layer.outputs);
        for _ in 0..n {
            z.extend_from_slice(&layer.biases);
        }
        gemm(
            &activations[l],
            Strides::row_major(n, layer.inputs),
            &layer.weights,
            Strides::transposed(layer.outputs, layer.inputs),
            1.0,
            &mut z,
            Strides::row_major(n, layer.outputs),
        );
        let a = if l == last { z.clone() } else { z.iter().map(|v| v.max(0.0)).collect() };
        pre.push(z);
        activations.push(a);
    }

    // Loss gradient.
    let y = &activations[mlp.len()];
    let mut dz = vec![0.0f32; n * oc];
    let (mut weighted_sq_err, mut sq_err, mut targeted) = (0.0f64, 0.0f64, 0.0f64);
    for j in 0..n * oc {
        let w = batch.weight[j];
        if w != 0.0 {
            let d = y[j] - batch.target[j];
            weighted_sq_err += f64::from(w * d * d);
            sq_err += f64::from(d * d);
            targeted += 1.0;
            dz[j] = 2.0 * w * d;
        }
    }

    // Backward.
    let mut layer_grads: Vec<LayerParams> = mlp.iter().map(|l| LayerParams::zeros(l.inputs, l.outputs)).collect();
    let mut d_features = Vec::new();
    let mut gate_grads = Vec::new();
    for l in (0..mlp.len()).rev() {
        let layer = &mlp[l];
        let grad = &mut layer_grads[l];
        gemm(
            &dz,
            Strides::transposed(n, layer.outputs),
            &activations[l],
            Strides::row_major(n, layer.inputs),
            0.0,
            &mut grad.weights,
            Strides::row_major(layer.outputs, layer.inputs),
        );
        for row in dz.chunks_exact(layer.outputs) {
            for (b, d) in grad.biases.iter_mut().zip(row) {
                *b += d;
            }
        }
        let mut da = vec![0.0f32; n * layer.inputs];
        gemm(
            &dz,
            Strides::row_major(n, layer.outputs),
            &layer.weights,
            Strides::row_major(layer.outputs, layer.inputs),
            0.0,
            &mut da,
            Strides::row_major(n, layer.inputs),
        );
        if l == 0 {
            d_features = Vec::with_capacity(n * lc);
            for i in 0..n {
                for c in 0..lc {
                    d_features.push(da[i * inputs + c] * batch.mask[i * lc + c]);
                }
            }
            if gated {
                let slots = batch.gate.iter().max().map_or(0, |&g| g as usize + 1);
                gate_grads = vec![0.0f32; slots * lc];
                for (i, &g) in batch.gate.iter().enumerate() {
                    let row = &mut gate_grads[g as usize * lc..(g as usize + 1) * lc];
                    for (c, r) in row.iter_mut().enumerate() {
                        *r += da[i * inputs + c] * raw[i * lc + c];
                    }
                }
            }
        } else {
            for (d, z) in da.iter_mut().zip(&pre[l - 1]) {
                if *z <= 0.0 {
                    *d = 0.0;
                }
            }
            dz = da;
        }
    }
    ChunkGrads { weighted_sq_err, sq_err, targeted, layers: layer_grads, d_features, corners, levels, gate_grads }
}

/// Adds a chunk's latent-feature gradients into the grid gradients (bilinear scatter).
pub fn scatter_grid_grads(params: &ModelParams, chunk: &ChunkGrads, grads: &mut ModelParams) {
    let lc = params.latent_channels();
    let grid_count = params.grids.len();
    let n = chunk.d_features.len() / lc.max(1);
    for i in 0..n {
        let mut offset = 0;
        let level = chunk.levels.get(i).copied().unwrap_or(0);
        for (g, grid) in grads.level_grids_mut(level).iter_mut().enumerate() {
            let ch = grid.channels as usize;
            let (cells, weights) = chunk.corners[i * grid_count + g];
            let d = &chunk.d_features[i * lc + offset..i * lc + offset + ch];
            for k in 0..4 {
                let base = cells[k] * ch;
                for (c, dv) in d.iter().enumerate() {
                    grid.values[base + c] += weights[k] * dv;
                }
            }
            offset += ch;
        }
    }
}

/// Loss and gradient of every parameter on one batch, without noise: the fused kernel's answer to
/// what burn's autodiff computes (`loss = Σ weight·(y − t)² / len`).
#[must_use]
pub fn loss_and_grads(params: &ModelParams, batch: &Batch) -> (f32, ModelParams) {
    let chunk = forward_backward(params, &params.layers, batch, None);
    let mut grads = params.zeros_like();
    scatter_grid_grads(params, &chunk, &mut grads);
    let scale = 1.0 / batch.len.max(1) as f32;
    for (g, c) in grads.layers.iter_mut().zip(&chunk.layers) {
        g.weights = c.weights.iter().map(|v| v * scale).collect();
        g.biases = c.biases.iter().map(|v| v * scale).collect();
    }
    for g in &mut grads.grids {
        for v in &mut g.values {
            *v *= scale;
        }
    }
    ((chunk.weighted_sq_err / batch.len.max(1) as f64) as f32, grads)
}

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

    /// Cosine decay factor at a step (1 → 0.05).
    #[must_use]
    pub fn decay(&self, step: u32) -> f32 {
        let t = step as f32 / self.steps.max(1) as f32;
        0.05 + 0.95 * 0.5 * (1.0 + (std::f32::consts::PI * t).cos())
    }
}

/// Initial parameters: latents uniform in ±0.25, He-uniform weights, output biases at each
/// channel's mean value.
#[must_use]
pub fn initial_params(set: &TextureSet, layout: &ModelLayout, seed: u64) -> ModelParams {
    let mut params = layout.zero_params();
    let mut rng = Rng::new(seed, 0xA11CE, 0);
    for grid in params.all_grids_mut() {
        for v in &mut grid.values {
            *v = (rng.next_f32() * 2.0 - 1.0) * 0.25;
        }
    }
    let last = params.layers.len().saturating_sub(1);
    for (l, layer) in params.layers.iter_mut().enumerate() {
        let bound = (6.0 / layer.inputs.max(1) as f32).sqrt() * if l == last { 0.1 } else { 1.0 };
        for w in &mut layer.weights {
            *w = (rng.next_f32() * 2.0 - 1.0) * bound;
        }
    }
    // Channels no texture reads get zero first-layer weights: they never receive a gradient, so
    // they stay zero, and pruning them later changes nothing (not even int8 row scales).
    let read = layout.read_channels();
    if let Some(first) = params.layers.first_mut() {
        for o in 0..first.outputs {
            for (c, r) in read.iter().enumerate() {
                if !r {
                    first.weights[o * first.inputs + c] = 0.0;
                }
            }
        }
    }
    if let Some(out) = params.layers.last_mut() {
        for (material, slots) in set.materials.iter().zip(&layout.textures) {
            // A duplicate or colour variant shares its original's outputs: the original's mean.
            for (texture, slot) in material.textures.iter().zip(slots).filter(|(_, s)| s.duplicate_of.is_none()) {
                let ch = texture.channels as usize;
                for c in 0..ch {
                    let sum: f64 = texture.texels.iter().skip(c).step_by(ch).map(|&v| f64::from(v)).sum();
                    if let Some(b) = out.biases.get_mut(slot.output_offset + c) {
                        *b = (sum / texture.texel_count().max(1) as f64) as f32;
                    }
                }
            }
        }
    }
    params
}

/// Adam state for [`ModelParams`].
#[derive(Clone, Debug)]
pub struct Adam {
    /// First moments.
    pub m: ModelParams,
    /// Second moments.
    pub v: ModelParams,
    /// Updates done (for bias correction).
    pub t: u32,
}

const ADAM_BETA1: f32 = 0.9;
const ADAM_BETA2: f32 = 0.99;
const ADAM_EPS: f32 = 1e-8;

/// One Adam update of a parameter array, gradients scaled by `grad_scale` as they are read; latent
/// grids (`clamp_latents`) are projected back into the quantisation range in the same pass.
fn adam_update(
    theta: &mut [f32],
    grad: &[f32],
    m: &mut [f32],
    v: &mut [f32],
    lr: f32,
    c1: f32,
    c2: f32,
    grad_scale: f32,
    clamp_latents: bool,
) {
    theta.par_chunks_mut(4096).zip(grad.par_chunks(4096)).zip(m.par_chunks_mut(4096)).zip(v.par_chunks_mut(4096)).for_each(
        |(((theta, grad), m), v)| {
            for j in 0..theta.len() {
                let g = grad[j] * grad_scale;
                m[j] = ADAM_BETA1 * m[j] + (1.0 - ADAM_BETA1) * g;
                v[j] = ADAM_BETA2 * v[j] + (1.0 - ADAM_BETA2) * g * g;
                theta[j] -= lr * (m[j] / c1) / ((v[j] / c2).sqrt() + ADAM_EPS);
                if clamp_latents {
                    theta[j] = theta[j].clamp(quant::LATENT_RANGE[0], quant::LATENT_RANGE[1]);
                }
            }
        },
    );
}

impl Adam {
    /// Zero moments for these parameters.
    #[must_use]
    pub fn new(params: &ModelParams) -> Self {
        Self { m: params.zeros_like(), v: params.zeros_like(), t: 0 }
    }

    /// One update. Grids update only when `grid_lr` is `Some`.
    /// `grads` are multiplied by `grad_scale` as they are read (the fused `1 / batch` scale).
    pub fn step(&mut self, params: &mut ModelParams, grads: &ModelParams, grad_scale: f32, grid_lr: Option<f32>, mlp_lr: f32) {
        self.t += 1;
        let c1 = 1.0 - ADAM_BETA1.powi(self.t as i32);
        let c2 = 1.0 - ADAM_BETA2.powi(self.t as i32);
        if let Some(lr) = grid_lr {
            for (((p, g), m), v) in params.all_grids_mut().zip(grads.all_grids()).zip(self.m.all_grids_mut()).zip(self.v.all_grids_mut()) {
                adam_update(&mut p.values, &g.values, &mut m.values, &mut v.values, lr, c1, c2, grad_scale, true);
            }
        }
        for (((p, g), m), v) in params.layers.iter_mut().zip(&grads.layers).zip(&mut self.m.layers).zip(&mut self.v.layers) {
            adam_update(&mut p.weights, &g.weights, &mut m.weights, &mut v.weights, mlp_lr, c1, c2, grad_scale, false);
            adam_update(&mut p.biases, &g.biases, &mut m.biases, &mut v.biases, mlp_lr, c1, c2, grad_scale, false);
        }
    }
}

/// Which parameters a run may change; everything else stays bit-identical. Used to add materials
/// to a trained library: the new latent channels, the first layer's columns that read them and
/// the last layer's rows of the new maps train; the shared decoder is frozen.
#[derive(Clone, Debug)]
pub struct Trainable {
    /// Per grid, the first channel that trains (channels before it are frozen).
    pub grid_first_channel: Vec<u32>,
    /// Per first-layer input, whether its column trains (first-layer biases are frozen).
    pub first_layer_columns: Vec<bool>,
    /// First row of the last layer that trains (weights and biases); earlier rows are frozen.
    pub last_layer_first_row: usize,
    /// Per layer, per row, a scale that row's int8 quantisation must keep (`None`: free).
    pub fixed_row_scales: Vec<Vec<Option<f32>>>,
}

impl Trainable {
    /// Zeroes the gradient of every frozen parameter (Adam then leaves it exactly unchanged).
    pub fn mask_grads(&self, grads: &mut ModelParams) {
        for (grid, &first) in grads.grids.iter_mut().zip(&self.grid_first_channel) {
            let ch = grid.channels as usize;
            for cell in grid.values.chunks_exact_mut(ch.max(1)) {
                cell[..(first as usize).min(ch)].fill(0.0);
            }
        }
        let last = grads.layers.len().saturating_sub(1);
        for (l, layer) in grads.layers.iter_mut().enumerate() {
            for o in 0..layer.outputs {
                let row_trains = l == last && o >= self.last_layer_first_row;
                for i in 0..layer.inputs {
                    let trains = row_trains || (l == 0 && self.first_layer_columns.get(i).copied().unwrap_or(false));
                    if !trains {
                        layer.weights[o * layer.inputs + i] = 0.0;
                    }
                }
                if !row_trains {
                    layer.biases[o] = 0.0;
                }
            }
        }
    }

    /// The int8 values of the layers as they will ship, dequantised (fixed scales kept).
    #[must_use]
    pub fn quantise_layers(&self, layers: &[LayerParams]) -> Vec<QuantizedLayer> {
        layers
            .iter()
            .enumerate()
            .map(|(l, layer)| QuantizedLayer::quantize_with_scales(layer, self.fixed_row_scales.get(l).map_or(&[], Vec::as_slice)))
            .collect()
    }
}

/// The fused CPU trainer.
pub struct FusedTrainer<'a> {
    /// Current parameters.
    pub params: ModelParams,
    /// Optimiser state.
    pub adam: Adam,
    /// Next step to run.
    pub step: u32,
    sampler: Sampler<'a>,
    schedule: Schedule,
    /// Gradient buffer, reused across steps.
    grads: ModelParams,
    /// Parameters that train (all when `None`).
    trainable: Option<Trainable>,
    /// Channel removal during training, and the step it happens at.
    pruning: Option<(ChannelPruning, u32)>,
    /// Per latent channel, whether it was removed.
    pruned: Vec<bool>,
    /// Budgets being learned (gates per texture and channel), or learned.
    gates: Option<BudgetGates>,
}

/// The step a part-way event (a prune, the learned-budget cut) runs at: `fraction` of the run,
/// but not before one step has trained, unless the run is a single step.
fn step_at_fraction(steps: u32, fraction: f32) -> u32 {
    ((steps as f32 * fraction) as u32).max(1).min(steps.saturating_sub(1))
}

/// Budgets learned in training ([`LearnedBudgets`]): the gates, their optimiser state, and the
/// cut once it happened.
#[derive(Clone, Debug)]
pub struct BudgetGates {
    options: LearnedBudgets,
    /// Step of the cut.
    at: u32,
    /// `[slot][latent_channels]` gate values (flat slots in layout order; 0 outside a budget).
    pub values: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    t: u32,
    /// Per slot, the budget training started with.
    start: Vec<Vec<u32>>,
    /// `[slot][latent_channels]`: 1 where a gate trains (a sampled texture's starting budget).
    trains: Vec<f32>,
    /// Per slot, the share of a batch's texels that are its own (the lasso rides on them like
    /// the loss does, so its strength does not depend on how many textures share the batch).
    shares: Vec<f32>,
    /// Per slot, the flat slot of the original it duplicates.
    duplicate_of: Vec<Option<usize>>,
    latent_channels: usize,
    /// The budgets after the cut.
    pub cut: Option<LearnedCut>,
}

/// What the cut of learned budgets decided.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LearnedCut {
    /// Step it happened at.
    pub step: u32,
    /// Per texture (flat slots in layout order), the latent channels it reads from then on.
    pub budgets: Vec<Vec<u32>>,
    /// Per texture, per channel of its starting budget (in that order), its importance
    /// `|gate| · ‖first-layer column‖₂` relative to the library's largest.
    pub importance: Vec<Vec<f32>>,
    /// The threshold it was cut at (relative importance).
    pub drop_below: f32,
}

impl LearnedCut {
    /// The layout with these budgets (every texture's channels; channels no texture reads stay
    /// in the grids until the prune pass).
    #[must_use]
    pub fn apply(&self, layout: &ModelLayout) -> ModelLayout {
        let mut layout = layout.clone();
        for (slot, budget) in layout.textures.iter_mut().flatten().zip(&self.budgets) {
            slot.latent_channels.clone_from(budget);
        }
        layout
    }
}

impl BudgetGates {
    fn new(options: LearnedBudgets, steps: u32, layout: &ModelLayout) -> Self {
        let lc = layout.latent_channels();
        let material_start: Vec<usize> = layout
            .textures
            .iter()
            .scan(0usize, |n, m| {
                let start = *n;
                *n += m.len();
                Some(start)
            })
            .collect();
        let slots: Vec<_> = layout.textures.iter().flatten().collect();
        let mut values = vec![0.0f32; slots.len() * lc];
        for (s, slot) in slots.iter().enumerate() {
            for &c in &slot.latent_channels {
                if let Some(v) = values.get_mut(s * lc + c as usize) {
                    *v = 1.0;
                }
            }
        }
        let duplicate_of: Vec<Option<usize>> =
            slots.iter().map(|s| s.duplicate_of.and_then(|(m, k)| material_start.get(m).map(|o| o + k))).collect();
        let mut trains = values.clone();
        for (s, d) in duplicate_of.iter().enumerate() {
            if d.is_some() {
                trains[s * lc..(s + 1) * lc].fill(0.0);
            }
        }
        Self {
            at: step_at_fraction(steps, options.at),
            trains,
            shares: vec![0.0; slots.len()],
            options,
            m: vec![0.0; values.len()],
            v: vec![0.0; values.len()],
            values,
            t: 0,
            start: slots.iter().map(|s| s.latent_channels.clone()).collect(),
            duplicate_of,
            latent_channels: lc,
            cut: None,
        }
    }

    /// The gates' Adam moments and update count (for checkpoints).
    #[must_use]
    pub fn moments(&self) -> (&[f32], &[f32], u32) {
        (&self.m, &self.v, self.t)
    }

    /// Whether the gates still train.
    fn active(&self) -> bool {
        self.cut.is_none()
    }

    /// The cut: importance per (texture, channel), the budgets that keep what clears the bar.
    fn decide(&self, first: &LayerParams, step: u32) -> LearnedCut {
        let lc = self.latent_channels;
        let norms = column_norms(first, lc);
        let raw: Vec<Vec<f32>> = self
            .start
            .iter()
            .enumerate()
            .map(|(s, budget)| budget.iter().map(|&c| self.values[s * lc + c as usize].abs() * norms[c as usize]).collect())
            .collect();
        let largest = raw
            .iter()
            .zip(&self.duplicate_of)
            .filter(|(_, d)| d.is_none())
            .flat_map(|(r, _)| r.iter().copied())
            .fold(0.0f32, f32::max)
            .max(f32::MIN_POSITIVE);
        let mut importance: Vec<Vec<f32>> = raw.iter().map(|r| r.iter().map(|v| v / largest).collect()).collect();
        for (s, d) in self.duplicate_of.iter().enumerate() {
            if let Some(o) = *d
                && let Some(i) = importance.get(o).cloned()
            {
                importance[s] = i;
            }
        }
        let mut budgets: Vec<Vec<u32>> = self
            .start
            .iter()
            .zip(&importance)
            .map(|(budget, imp)| budget.iter().zip(imp).filter(|(_, i)| **i >= self.options.drop_below).map(|(&c, _)| c).collect())
            .collect();
        // A duplicate is never sampled: it reads what its original reads.
        for (s, d) in self.duplicate_of.iter().enumerate() {
            if let Some(o) = *d
                && let Some(b) = budgets.get(o).cloned()
            {
                budgets[s] = b;
            }
        }
        LearnedCut { step, budgets, importance, drop_below: self.options.drop_below }
    }

    /// Per slot, its mask under the cut.
    fn masks(cut: &LearnedCut, lc: usize) -> Vec<Vec<f32>> {
        cut.budgets
            .iter()
            .map(|b| {
                let mut mask = vec![0.0; lc];
                for &c in b {
                    if let Some(m) = mask.get_mut(c as usize) {
                        *m = 1.0;
                    }
                }
                mask
            })
            .collect()
    }
}

/// ‖column c‖₂ of a first layer, for its first `lc` inputs.
fn column_norms(first: &LayerParams, lc: usize) -> Vec<f32> {
    (0..lc).map(|c| (0..first.outputs).map(|o| first.weights[o * first.inputs + c].powi(2)).sum::<f32>().sqrt()).collect()
}

/// What one step did.
#[derive(Clone, Copy, Debug)]
pub struct StepStats {
    /// Mean squared error per targeted channel value.
    pub mse: f32,
    /// Phase of the step.
    pub phase: TrainPhase,
}

impl<'a> FusedTrainer<'a> {
    /// A trainer starting from `params` at step 0.
    #[must_use]
    pub fn new(sampler: Sampler<'a>, schedule: Schedule, params: ModelParams) -> Self {
        let adam = Adam::new(&params);
        let grads = params.zeros_like();
        let pruned = vec![false; params.latent_channels()];
        Self { params, adam, step: 0, sampler, schedule, grads, trainable: None, pruning: None, pruned, gates: None }
    }

    /// Learns the textures' budgets ([`LearnedBudgets`]): every texture is sampled on its own,
    /// gated, until the cut.
    #[must_use]
    pub fn with_learned_budgets(mut self, options: LearnedBudgets, layout: &ModelLayout) -> Self {
        self.sampler.split_for_gates();
        let mut gates = BudgetGates::new(options, self.schedule.steps, layout);
        gates.shares = self.sampler.gate_shares(gates.start.len());
        self.gates = Some(gates);
        self
    }

    /// The learned budgets, once cut.
    #[must_use]
    pub fn learned_cut(&self) -> Option<&LearnedCut> {
        self.gates.as_ref().and_then(|g| g.cut.as_ref())
    }

    /// The gates (for checkpoints).
    #[must_use]
    pub fn budget_gates(&self) -> Option<&BudgetGates> {
        self.gates.as_ref()
    }

    /// Restores the gates (and the cut, when it happened) from a checkpoint.
    pub fn restore_gates(&mut self, values: Vec<f32>, moments: (Vec<f32>, Vec<f32>, u32), cut: Option<LearnedCut>) -> Result<(), String> {
        let Some(gates) = &mut self.gates else { return Err("the checkpoint has budget gates, this run learns no budgets".into()) };
        let (m, v, t) = moments;
        let n = gates.values.len();
        if values.len() != n || m.len() != n || v.len() != n || cut.as_ref().is_some_and(|c| c.budgets.len() != gates.start.len()) {
            return Err("its budget gates do not fit this library".into());
        }
        if values.iter().chain(&m).chain(&v).any(|x| !x.is_finite()) {
            return Err("its budget gates hold a non-finite value".into());
        }
        gates.values = values;
        (gates.m, gates.v, gates.t) = (m, v, t);
        if let Some(cut) = cut {
            let masks = BudgetGates::masks(&cut, gates.latent_channels);
            self.sampler.set_masks(&masks);
            gates.cut = Some(cut);
        }
        Ok(())
    }

    /// The cut of learned budgets: decide, fold each kept channel's mean gate into its
    /// first-layer column (the gates return to 1 with the least change to what the textures
    /// read) and regroup the sampler by the new masks.
    fn cut_budgets(&mut self) {
        let Some(gates) = &mut self.gates else { return };
        let Some(first) = self.params.layers.first_mut() else { return };
        let lc = gates.latent_channels;
        let cut = gates.decide(first, self.step);
        let mut sum = vec![0.0f32; lc];
        let mut count = vec![0u32; lc];
        for (s, budget) in cut.budgets.iter().enumerate() {
            if gates.duplicate_of[s].is_some() {
                continue;
            }
            for &c in budget {
                sum[c as usize] += gates.values[s * lc + c as usize];
                count[c as usize] += 1;
            }
        }
        for c in 0..lc {
            if count[c] > 0 {
                let mean = sum[c] / count[c] as f32;
                for o in 0..first.outputs {
                    first.weights[o * first.inputs + c] *= mean;
                }
            }
        }
        self.sampler.set_masks(&BudgetGates::masks(&cut, lc));
        gates.cut = Some(cut);
    }

    /// Adds the per-(texture, channel) group lasso `λ · share · |g| · ‖column‖₂` to the gates' and
    /// the first layer's gradients (unscaled sums, like the loss's; `share`: the texture's share
    /// of the batch, so the penalty weighs like the loss of its texels).
    fn add_budget_lasso(&self, grads: &mut ModelParams, gate_grads: &mut [f32]) {
        let Some(gates) = &self.gates else { return };
        let (Some(w), Some(g)) = (self.params.layers.first(), grads.layers.first_mut()) else { return };
        let lc = gates.latent_channels;
        let k = gates.options.strength * self.schedule.batch_texels as f32;
        let norms = column_norms(w, lc);
        let mut readers = vec![0.0f32; lc];
        for (s, budget) in gates.start.iter().enumerate() {
            if gates.duplicate_of[s].is_some() {
                continue;
            }
            let ks = k * gates.shares[s];
            for &c in budget {
                let c = c as usize;
                let value = gates.values[s * lc + c];
                readers[c] += gates.shares[s] * value.abs();
                gate_grads[s * lc + c] += ks * value.signum() * norms[c];
            }
        }
        for c in 0..lc {
            if norms[c] > 1e-12 && readers[c] > 0.0 {
                for o in 0..w.outputs {
                    g.weights[o * g.inputs + c] += k * readers[c] * w.weights[o * w.inputs + c] / norms[c];
                }
            }
        }
    }

    /// Removes latent channels part-way through training.
    #[must_use]
    pub fn with_pruning(mut self, pruning: ChannelPruning) -> Self {
        let at = step_at_fraction(self.schedule.steps, pruning.at);
        self.pruning = Some((pruning, at));
        self
    }

    /// Latent channels removed so far (indices in the layout the trainer started with).
    #[must_use]
    pub fn pruned_channels(&self) -> Vec<u32> {
        self.pruned.iter().enumerate().filter(|(_, p)| **p).map(|(c, _)| c as u32).collect()
    }

    /// After a resume past the pruning step: the removed channels are the read channels whose
    /// first-layer columns are exactly zero (removal zeroes them and they get no gradient after).
    pub fn restore_pruning(&mut self, read: &[bool]) {
        let Some((_, at)) = &self.pruning else { return };
        if self.step <= *at {
            return;
        }
        let Some(first) = self.params.layers.first() else { return };
        let dropped: Vec<bool> = (0..self.pruned.len())
            .map(|c| read.get(c).copied().unwrap_or(false) && (0..first.outputs).all(|o| first.weights[o * first.inputs + c] == 0.0))
            .collect();
        self.sampler.drop_channels(&dropped);
        self.pruned = dropped;
    }

    /// Chooses the channels to keep per grid and masks the others for every texture.
    fn prune_channels(&mut self, pruning: &ChannelPruning) {
        let Some(first) = self.params.layers.first() else { return };
        let mut dropped = vec![false; self.pruned.len()];
        let mut offset = 0usize;
        let mut rng = Rng::new(self.schedule.seed, 0x0091_21E5, 0);
        for (grid, &keep) in self.params.grids.iter().zip(&pruning.keep_per_grid) {
            let ch = grid.channels as usize;
            let mut order: Vec<usize> = (0..ch).collect();
            match pruning.method {
                PruneMethod::L1 => {
                    let norm = |c: usize| (0..first.outputs).map(|o| first.weights[o * first.inputs + offset + c].abs()).sum::<f32>();
                    order.sort_by(|&a, &b| norm(b).total_cmp(&norm(a)).then(a.cmp(&b)));
                }
                PruneMethod::Random => {
                    for i in (1..ch).rev() {
                        order.swap(i, rng.below(i as u64 + 1) as usize);
                    }
                }
            }
            for &c in order.iter().skip(keep as usize) {
                dropped[offset + c] = true;
            }
            offset += ch;
        }
        for layers in [&mut self.params.layers, &mut self.adam.m.layers, &mut self.adam.v.layers] {
            if let Some(first) = layers.first_mut() {
                for o in 0..first.outputs {
                    for (c, d) in dropped.iter().enumerate() {
                        if *d {
                            first.weights[o * first.inputs + c] = 0.0;
                        }
                    }
                }
            }
        }
        self.sampler.drop_channels(&dropped);
        self.pruned = dropped;
    }

    /// Adds the group-lasso subgradient `λ · w / ‖column‖₂` on every latent channel's first-layer
    /// column to `grads` (unscaled sums, so multiplied by the batch size).
    fn add_group_lasso(&self, grads: &mut ModelParams, strength: f32) {
        let lc = self.params.latent_channels();
        let (Some(w), Some(g)) = (self.params.layers.first(), grads.layers.first_mut()) else { return };
        let k = strength * self.schedule.batch_texels as f32;
        for c in 0..lc {
            let norm = (0..w.outputs).map(|o| w.weights[o * w.inputs + c].powi(2)).sum::<f32>().sqrt();
            if norm > 1e-12 {
                for o in 0..w.outputs {
                    g.weights[o * g.inputs + c] += k * w.weights[o * w.inputs + c] / norm;
                }
            }
        }
    }

    /// Trains only these parameters; the rest stay bit-identical.
    #[must_use]
    pub fn with_trainable(mut self, trainable: Trainable) -> Self {
        self.trainable = Some(trainable);
        self
    }

    /// The layers with int8 fake-quantisation (fixed row scales kept when some rows are frozen).
    fn fake_quantised_layers(&self) -> Vec<LayerParams> {
        match &self.trainable {
            Some(t) => t.quantise_layers(&self.params.layers).iter().map(QuantizedLayer::dequantize).collect(),
            None => self.params.layers.iter().map(|l| quant::fake_quantize(l, self.schedule.weight_format)).collect(),
        }
    }

    /// The schedule.
    #[must_use]
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Runs one step.
    pub fn run_step(&mut self) -> StepStats {
        let step = self.step;
        if let Some((pruning, at)) = self.pruning.clone()
            && step == at
        {
            self.prune_channels(&pruning);
        }
        if self.gates.as_ref().is_some_and(|g| g.active() && step == g.at) {
            self.cut_budgets();
        }
        let gating = self.gates.as_ref().filter(|g| g.active()).map(|g| (g.values.as_slice(), g.latent_channels));
        let phase = self.schedule.phase(step);
        if self.schedule.latent_noise && (step == self.schedule.freeze_step || (phase != TrainPhase::NoisyLatents && self.adam.t == 0)) {
            round_grids(&mut self.params, &self.schedule.grid_bits);
        }
        let mlp: Vec<LayerParams> =
            if phase == TrainPhase::Int8Weights { self.fake_quantised_layers() } else { self.params.layers.clone() };
        let train_grids = phase == TrainPhase::NoisyLatents;
        let chunks = self.schedule.batch_texels / CHUNK_TEXELS;
        let params = &self.params;
        let sampler = &self.sampler;
        let seed = self.schedule.seed;
        let bits = &self.schedule.grid_bits;
        let latent_noise = self.schedule.latent_noise;
        // One noise amplitude for all grids would be wrong when their bits differ; the kernel takes
        // one amplitude, so use the finest grid's half step (grids share bits in every preset).
        let amplitude = 0.5 * quant::latent_step(bits.first().copied().unwrap_or(8));
        let results: Vec<ChunkGrads> = (0..chunks)
            .into_par_iter()
            .map(|chunk| {
                let mut rng = Rng::new(seed, u64::from(step), chunk as u64);
                let mut batch = Batch::default();
                sampler.fill(&mut rng, CHUNK_TEXELS, &mut batch);
                if let Some((values, lc)) = gating {
                    for (i, &g) in batch.gate.iter().enumerate() {
                        let gate = &values[g as usize * lc..(g as usize + 1) * lc];
                        for (m, v) in batch.mask[i * lc..(i + 1) * lc].iter_mut().zip(gate) {
                            *m *= v;
                        }
                    }
                }
                let noise = if train_grids && latent_noise { Some((amplitude, &mut rng)) } else { None };
                forward_backward(params, &mlp, &batch, noise)
            })
            .collect();
        let mut grads = std::mem::take(&mut self.grads);
        for g in &mut grads.layers {
            g.weights.fill(0.0);
            g.biases.fill(0.0);
        }
        if train_grids {
            for g in grads.all_grids_mut() {
                g.values.par_chunks_mut(1 << 16).for_each(|c| c.fill(0.0));
            }
        }
        let (mut sq_err, mut targeted) = (0.0f64, 0.0f64);
        let mut gate_grads = vec![0.0f32; gating.map_or(0, |(values, _)| values.len())];
        for r in &results {
            sq_err += r.sq_err;
            targeted += r.targeted;
            for (a, b) in gate_grads.iter_mut().zip(&r.gate_grads) {
                *a += b;
            }
            for (g, c) in grads.layers.iter_mut().zip(&r.layers) {
                for (a, b) in g.weights.iter_mut().zip(&c.weights) {
                    *a += b;
                }
                for (a, b) in g.biases.iter_mut().zip(&c.biases) {
                    *a += b;
                }
            }
            if train_grids {
                scatter_grid_grads(&self.params, r, &mut grads);
            }
        }
        if let Some(t) = &self.trainable {
            t.mask_grads(&mut grads);
        }
        if let Some((pruning, at)) = &self.pruning
            && step < *at
            && pruning.group_lasso > 0.0
        {
            self.add_group_lasso(&mut grads, pruning.group_lasso);
        }
        let gating = !gate_grads.is_empty();
        if gating {
            self.add_budget_lasso(&mut grads, &mut gate_grads);
        }
        let scale = 1.0 / self.schedule.batch_texels as f32;
        let decay = self.schedule.decay(step);
        let grid_lr = train_grids.then_some(self.schedule.grid_learning_rate * decay);
        self.adam.step(&mut self.params, &grads, scale, grid_lr, self.schedule.mlp_learning_rate * decay);
        if gating && let Some(gates) = &mut self.gates {
            gates.t += 1;
            let c1 = 1.0 - ADAM_BETA1.powi(gates.t as i32);
            let c2 = 1.0 - ADAM_BETA2.powi(gates.t as i32);
            // Gates are few scalars that must travel from 1 towards 0 within the gated steps:
            // they take the grids' (larger) learning rate.
            let lr = self.schedule.grid_learning_rate * decay;
            for (g, t) in gate_grads.iter_mut().zip(&gates.trains) {
                *g *= t;
            }
            adam_update(&mut gates.values, &gate_grads, &mut gates.m, &mut gates.v, lr, c1, c2, scale, false);
            // Gates are magnitudes; outside a budget they stay 0 (no gradient reaches them).
            for v in &mut gates.values {
                *v = v.max(0.0);
            }
        }
        self.grads = grads;
        self.step += 1;
        StepStats { mse: (sq_err / targeted.max(1.0)) as f32, phase }
    }

    /// The final model: latents rounded, weights int8-quantised (dequantised values).
    #[must_use]
    pub fn final_params(&self) -> ModelParams {
        let mut params = self.params.clone();
        round_grids(&mut params, &self.schedule.grid_bits);
        params.layers = self.fake_quantised_layers();
        params
    }
}

/// Rounds every grid to its bits' levels (in place).
pub fn round_grids(params: &mut ModelParams, grid_bits: &[u32]) {
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
pub fn finalize(mut params: ModelParams, grid_bits: &[u32], format: quant::WeightFormat) -> ModelParams {
    round_grids(&mut params, grid_bits);
    params.layers = params.layers.iter().map(|l| quant::fake_quantize(l, format)).collect();
    params
}

/// Smooths the per-step loss and reports [`TrainStatus`] at most twice a second (and at the last
/// step): the bookkeeping every trainer shares.
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
    /// The budgets learned in training ([`LearnedBudgets`]), when they were.
    pub learned_budgets: Option<LearnedCut>,
    /// Why GPU training was given up for the CPU trainer, when it was (no adapter, no device,
    /// device lost mid-run).
    pub gpu_fallback: Option<String>,
}

impl TrainReport {
    /// The report of a run of `steps_run` steps that `status` timed.
    pub(crate) fn new(backend: String, schedule: &Schedule, steps_run: u32, status: &StatusReporter) -> Self {
        let train_secs = status.elapsed_secs();
        Self {
            backend,
            steps_run,
            total_steps: schedule.steps,
            batch_texels: schedule.batch_texels,
            train_secs,
            texels_per_sec: f64::from(steps_run) * schedule.batch_texels as f64 / train_secs.max(1e-9),
            final_mse: status.mse(),
            resumed_from_step: None,
            pruned_channels: Vec::new(),
            learned_budgets: None,
            gpu_fallback: None,
        }
    }
}

/// Learning rates of a fine-tune (`CompressOptions::init_from`), relative to the options'.
pub const FINE_TUNE_LEARNING_RATE_SCALE: f32 = 0.3;

/// The parameters training starts from: `options.init_from`'s model (dequantised) when given, a
/// fine-tune, else the seeded initialisation.
pub fn starting_params(set: &TextureSet, layout: &ModelLayout, options: &CompressOptions) -> Result<ModelParams, TrainError> {
    let fresh = initial_params(set, layout, options.schedule.seed);
    let Some(path) = &options.run.init_from else { return Ok(fresh) };
    let error = |message: String| TrainError::InitFrom { path: path.clone(), message };
    let bundle = crate::bundle::Bundle::read(path).map_err(|e| error(e.to_string()))?;
    let params = crate::decode::Decoder::new(&bundle).params().clone();
    let grid_shape = |p: &ModelParams| p.all_grids().map(|g| (g.width, g.height, g.channels)).collect::<Vec<_>>();
    let layer_shape = |p: &ModelParams| p.layers.iter().map(|l| (l.inputs, l.outputs)).collect::<Vec<_>>();
    if grid_shape(&params) != grid_shape(&fresh)
        || layer_shape(&params) != layer_shape(&fresh)
        || params.pe_frequencies != fresh.pe_frequencies
    {
        return Err(error(format!(
            "its model (grids {:?}, layers {:?}) is not this library's (grids {:?}, layers {:?})",
            grid_shape(&params),
            layer_shape(&params),
            grid_shape(&fresh),
            layer_shape(&fresh)
        )));
    }
    Ok(params)
}

/// Runs the fused trainer to the end with progress, cancellation and checkpoints.
pub fn train_fused(
    set: &TextureSet,
    layout: &ModelLayout,
    options: &CompressOptions,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<(ModelParams, TrainReport), TrainError> {
    let schedule = Schedule::new(options, layout);
    let sampler = Sampler::new(set, layout).with_level_boost(options.schedule.mip_sample_boost);
    let fingerprint = crate::train::checkpoint::fingerprint(set, layout, options);
    let mut trainer = FusedTrainer::new(sampler, schedule.clone(), starting_params(set, layout, options)?);
    if let Some(pruning) = &options.budgets.prune {
        trainer = trainer.with_pruning(pruning.clone());
    }
    if let Some(learned) = &options.budgets.learned {
        trainer = trainer.with_learned_budgets(learned.clone(), layout);
    }
    let mut resumed_from_step = None;
    if let Some(path) = &options.run.resume_from
        && path.exists()
    {
        crate::train::checkpoint::load(path, &fingerprint, &mut trainer)?;
        trainer.restore_pruning(&layout.read_channels());
        resumed_from_step = Some(trainer.step);
    }
    // What a snapshot decodes with: the budgets as they stand.
    let mut snapshot_layout = trainer.learned_cut().map(|cut| cut.apply(layout));
    let start_step = trainer.step;
    let mut status = StatusReporter::new(start_step);
    let mut last_checkpoint = Instant::now();
    while trainer.step < schedule.steps {
        if cancel.is_cancelled() {
            return Err(TrainError::Cancelled);
        }
        let stats = trainer.run_step();
        status.record(progress, &schedule, trainer.step, stats.phase, stats.mse);
        if snapshot_layout.is_none()
            && let Some(cut) = trainer.learned_cut()
        {
            snapshot_layout = Some(cut.apply(layout));
        }
        // Before the learned-budget cut every texture reads the latents through its own gates,
        // which no one layout can express: a snapshot then would show another model than the one
        // training, so previews wait for the cut (`snapshot_due` is still asked every step).
        let gated = trainer.budget_gates().is_some_and(BudgetGates::active);
        if progress.snapshot_due() && !gated {
            progress.snapshot(snapshot_layout.as_ref().unwrap_or(layout), &trainer.final_params());
        }
        let done = trainer.step == schedule.steps;
        if let Some(cp) = &options.run.checkpoint
            && !done
            && last_checkpoint.elapsed().as_secs_f64() >= cp.every_secs
        {
            crate::train::checkpoint::save(&cp.path, &fingerprint, &trainer)?;
            last_checkpoint = Instant::now();
        }
    }
    let report = TrainReport {
        resumed_from_step,
        pruned_channels: trainer.pruned_channels(),
        learned_budgets: trainer.learned_cut().cloned(),
        ..TrainReport::new("cpu (fused)".into(), &schedule, trainer.step - start_step, &status)
    };
    Ok((trainer.final_params(), report))
}
