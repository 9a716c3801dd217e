//! Plain-Rust model parameters: the one description of the neural texture model that the trainer,
//! the burn model, the bundle and the CPU reference decoder all agree on.
//!
//! # The model (the specification every implementation follows)
//!
//! A texel of texture `t` (a map of a material) at texture coordinates `(u, v)` in `[0, 1]²`
//! (texel centres at `(x + 0.5) / width`) is decoded as:
//!
//! 1. **Latent fetch.** For each latent grid `g` (in order), bilinear sample with clamp-to-edge:
//!    `gx = u * grid.width - 0.5`, `x0 = floor(gx)`, `fx = gx - x0`, `x1 = x0 + 1`, both clamped to
//!    `[0, width - 1]` (same for `y`), and per channel
//!    `f = (1-fx)(1-fy)·G[y0][x0] + fx(1-fy)·G[y0][x1] + (1-fx)fy·G[y1][x0] + fx·fy·G[y1][x1]`.
//!    The features of all grids are concatenated (grid 0 first) into `latent_features()` values.
//!    A grid that reads its **corners** ([`GridParams::corners`], NTC v0.5–0.7's learned
//!    interpolation) gives four features per channel instead of one, each corner's value times its
//!    weight, channel-major: `(1-fx)(1-fy)·G[y0][x0], fx(1-fy)·G[y0][x1], (1-fx)fy·G[y1][x0],
//!    fx·fy·G[y1][x1]` for channel 0, then channel 1, …; their sum is the bilinear value, so a first
//!    layer whose four columns of a channel are equal decodes as the bilinear model does.
//! 2. **Channel budget.** The features of latent channel `i` are multiplied by `mask[i]` (1.0 if
//!    texture `t` reads latent channel `i`, else 0.0). This is how a texture reads only its subset
//!    of the shared channels.
//! 3. **Positional encoding.** With `px = u * grids[0].width`, `py = v * grids[0].height` (in
//!    grid-0 cells) and for `k in 0..pe_frequencies`, `a = 2π · 2^k / 2`, append
//!    `sin(a·px), cos(a·px), sin(a·py), cos(a·py)` (in that order), `4 · pe_frequencies` values.
//! 4. **MLP.** `h = act(W·h + b)` for every layer but the last, which is linear; `act` is the
//!    model's [`Activation`], `ReLU` (`max(z, 0)`) or NTC's `HGELUClamp`
//!    (`min(z, 3) · clamp(z / 3 + 0.5, 0, 1)`). `W` is stored
//!    `[outputs][inputs]` row-major. The output vector has one value per channel of every texture
//!    of the library (`output_channels`), in library order; texture `t` uses its own slice.
//! 5. **Output.** Clamp to `[0, 1]`: this is the stored (encoded) value of the channel (sRGB for
//!    colour maps, linear for data maps, `n * 0.5 + 0.5` for normal maps).
//!
//! Training minimises `Σ weight · (y - target)²` over the output channels a sample targets,
//! divided by the batch size. The weight is per map kind and channel
//! (`LossConfig::weights`, `normal_z_weight`); a normal map's target is its stored value
//! or, with `NormalTargets::Unit`, its normal renormalised to unit length.
//!
//! # Mip levels
//!
//! A model with a mip chain (`pyramid_levels() > 1`) stores a *latent pyramid*: level `k ≥ 1` has its
//! own copy of every grid, with the same channels but fewer cells (at most level 0's; texset
//! makes them with [`mip_grid_side`]), in [`ModelParams::mip_grids`]. Each pyramid level serves
//! a group of `G = mip_group` consecutive mip levels ([`ModelParams::mip_group`]; 1 in bundles
//! before format version 5). Mip level `m` of a map (its `m`-th 2×2 box reduction) decodes at the
//! **LOD level** `l = min(m, P·G − 1)` for `P` pyramid levels ([`lod_level`]), as above with the
//! grids of pyramid level `k = l / G` ([`pyramid_level`]) in steps 1 and 3 (the positional
//! encoding counts that level's grid-0 cells) and one more MLP input after the positional
//! encoding, the **LOD input** `l · LOD_INPUT_SCALE`: the mips of one group sample the same grids
//! at their own texel centres and the LOD input tells the MLP which of them to produce. Every
//! level shares the MLP. A fractional LOD blends the decoded outputs of its two neighbouring
//! levels (trilinear filtering of decoded texels).

use super::input::InputLayout;
use serde::{Deserialize, Serialize};

/// Widest MLP a texset decoder may have: its inputs (`mlp_inputs`) and every hidden layer's
/// outputs are at most this many values. Training refuses wider options
/// (`CompressOptions::validate`, the CLI's `--decoder`) and the GPU decoder wider bundles
/// (texset-shaders' `GpuModel::new`), so every bundle texset makes also decodes on the GPU and
/// exports as a shader. The WGSL decoder keeps a layer's outputs per texel as `width / 4` `vec4`s
/// (2 KiB at 512, for each of its `BLOCK` texels): 8 KiB is what WGSL guarantees for a function's
/// variables, and private memory that large already spills to slow memory on most GPUs. (The bundle reader accepts wider layers,
/// [`crate::bundle::limits::MAX_LAYER_WIDTH`], for other decoders.)
pub const MAX_MLP_WIDTH: usize = 512;

/// One latent feature grid: `height × width` cells of `channels` values, stored `[y][x][c]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridParams {
    /// Cells across (u direction).
    pub width: u32,
    /// Cells down (v direction).
    pub height: u32,
    /// Feature channels per cell.
    pub channels: u32,
    /// `width * height * channels` values, `[y][x][c]` row-major.
    pub values: Vec<f32>,
    /// The MLP reads each channel's four weighted corners (four inputs) instead of their bilinear
    /// sum (one); see the module docs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub corners: bool,
}

impl GridParams {
    /// A grid of zeros.
    #[must_use]
    pub fn zeros(width: u32, height: u32, channels: u32) -> Self {
        Self { width, height, channels, values: vec![0.0; width as usize * height as usize * channels as usize], corners: false }
    }

    /// MLP inputs each channel gives ([`inputs_per_channel`]).
    #[must_use]
    pub fn reads(&self) -> usize {
        inputs_per_channel(self.corners)
    }

    /// Number of values (`width * height * channels`).
    #[must_use]
    pub fn len(&self) -> usize {
        self.width as usize * self.height as usize * self.channels as usize
    }

    /// True when the grid holds no values.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One dense layer: `y = W·x + b`, `W` stored `[outputs][inputs]` row-major.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerParams {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// `outputs * inputs` weights, row `o` holds the weights of output `o`.
    pub weights: Vec<f32>,
    /// `outputs` biases.
    pub biases: Vec<f32>,
}

impl LayerParams {
    /// A layer of zeros.
    #[must_use]
    pub fn zeros(inputs: usize, outputs: usize) -> Self {
        Self { inputs, outputs, weights: vec![0.0; inputs * outputs], biases: vec![0.0; outputs] }
    }
}

/// The activation of every hidden layer (the last layer is linear).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Activation {
    /// `max(z, 0)`.
    #[default]
    Relu,
    /// NVIDIA RTXNTC's `HGELUClamp`: `min(z, 3) · clamp(z / 3 + 0.5, 0, 1)`, a hard GELU whose
    /// outputs lie in `[−3/16, 3]` (0 below −1.5, a parabola with its minimum −3/16 at −0.75, `z`
    /// from 1.5 to 3, then 3).
    Hgelu,
}

impl Activation {
    /// The activation of pre-activation `z`.
    #[must_use]
    #[inline]
    pub fn apply(self, z: f32) -> f32 {
        match self {
            Self::Relu => z.max(0.0),
            Self::Hgelu => {
                // A comparison, not `min` (which drops a NaN), and `clamp` (which keeps one and
                // -0.0, as its two comparisons do): the batched kernels' vector selects give these
                // bits lane for lane (NaN included).
                let top = if z > HGELU_MAX { HGELU_MAX } else { z };
                let gate = (z * (1.0 / 3.0) + 0.5).clamp(0.0, 1.0);
                top * gate
            }
        }
    }

    /// Its derivative at pre-activation `z` (the one-sided value at the kinks: 0 at `z = 0` for
    /// `ReLU`; at −1.5 and 3 for `HGELUClamp`, the flat side's).
    #[must_use]
    #[inline]
    pub fn derivative(self, z: f32) -> f32 {
        match self {
            Self::Relu => {
                if z > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Self::Hgelu => {
                if z <= -1.5 || z >= HGELU_MAX {
                    0.0
                } else if z >= 1.5 {
                    1.0
                } else {
                    z * (2.0 / 3.0) + 0.5
                }
            }
        }
    }

    /// Its name in a bundle's manifest (`LayerEntry::activation`) and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Relu => "relu",
            Self::Hgelu => "hgelu",
        }
    }

    /// The activation a manifest names (`"relu"`, `"hgelu"`), if any.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Relu, Self::Hgelu].into_iter().find(|a| a.name() == name)
    }

    /// True for the default (`ReLU`): what serialised parameters leave out.
    #[must_use]
    pub fn is_relu(&self) -> bool {
        *self == Self::Relu
    }
}

pub(crate) use super::input::inputs_per_channel;

/// `HGELUClamp`'s upper clamp (NTC's `maxval`).
pub const HGELU_MAX: f32 = 3.0;

/// Every learned value of a neural texture model, as plain `f32`s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelParams {
    /// Latent grids, finest first. Grid 0 also sets the positional-encoding period.
    pub grids: Vec<GridParams>,
    /// Number of positional-encoding frequencies (`4 ·` this many inputs).
    pub pe_frequencies: u32,
    /// MLP layers, first to last. The first takes [`ModelParams::mlp_inputs`] values, the last
    /// gives `output_channels` values.
    pub layers: Vec<LayerParams>,
    /// The latent pyramid's levels 1 and up (empty without a mip chain): level `k` is
    /// `mip_grids[(k − 1)·G .. k·G]` for the `G` grids of level 0, each with its grid's channels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mip_grids: Vec<GridParams>,
    /// Consecutive mip levels each pyramid level serves (see the module docs); 0 reads as 1.
    #[serde(default)]
    pub mip_group: u32,
    /// The hidden layers' activation (left out when `ReLU`, so parameters serialised before it
    /// read back the same).
    #[serde(default, skip_serializing_if = "Activation::is_relu")]
    pub activation: Activation,
}

/// The LOD input of LOD level `l` ([`lod_level`]) is `l ·` this.
pub const LOD_INPUT_SCALE: f32 = 0.25;

/// Cells a side of a grid of `side` cells (at level 0) for mip level `level` when each mip level
/// has `growth` times the cells per texel of the one above (1: the grid halves with the texture;
/// 2: it halves every other level), at most `texture_side` (the level's texels: one cell per
/// texel is the most that helps) and `side`, at least 1: `ceil(side · growth^(level/2) / 2^level)`.
/// A pyramid level is sized for the first mip level it serves.
#[must_use]
pub fn mip_grid_side(side: u32, level: u32, growth: f32, texture_side: u32) -> u32 {
    let shrink = 2f64.powi(level.min(64) as i32) / f64::from(growth.max(1.0)).powf(f64::from(level) / 2.0);
    let cells = (f64::from(side) / shrink).ceil().min(f64::from(u32::MAX)) as u32;
    cells.min(texture_side).min(side).max(1)
}

/// Cells `(x, y)` of pyramid level `k ≥ 1` of a grid of `cells` at level 0, for a chain of maps
/// up to `extent` cut into pyramid levels of `group` mip levels: [`mip_grid_side`] at the first
/// mip level it serves, `k · group`, with `growth`. The analyse pass builds the pyramid with it
/// and the rate estimate counts its bits with it.
#[must_use]
#[cfg(feature = "train")]
pub(crate) fn pyramid_grid_cells(cells: (u32, u32), k: u32, group: u32, growth: f32, extent: (u32, u32)) -> (u32, u32) {
    let first_mip = k.saturating_mul(group.max(1));
    let (texels_x, texels_y) = crate::model::mips::level_size(extent.0, extent.1, first_mip);
    (mip_grid_side(cells.0, first_mip, growth, texels_x), mip_grid_side(cells.1, first_mip, growth, texels_y))
}

/// The LOD level mip level `mip` decodes at with `pyramid_levels` pyramid levels of `group` mip
/// levels each (0 reads as 1): `min(mip, pyramid_levels · group − 1)`. Its LOD input is this
/// `· LOD_INPUT_SCALE`; [`pyramid_level`] says whose grids it reads. Every decoder and trainer
/// (the WGSL ones through the same expression) maps a mip level with these two functions.
#[must_use]
pub fn lod_level(mip: u32, pyramid_levels: u32, group: u32) -> u32 {
    mip.min(pyramid_levels.max(1).saturating_mul(group.max(1)) - 1)
}

/// The pyramid level whose grids mip level `mip` reads: [`lod_level`]` / group`.
#[must_use]
pub fn pyramid_level(mip: u32, pyramid_levels: u32, group: u32) -> u32 {
    lod_level(mip, pyramid_levels, group) / group.max(1)
}

/// Mip levels of a full chain down to 1×1 for a map of `width × height` (each level halves,
/// rounding down, as GPUs do).
#[must_use]
pub fn full_mip_count(width: u32, height: u32) -> u32 {
    32 - width.max(height).max(1).leading_zeros()
}

impl ModelParams {
    /// Total latent channels over all grids (the width of a channel mask).
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(|g| g.channels as usize).sum()
    }

    /// The MLP's input layout ([`InputLayout`]).
    #[must_use]
    pub fn input_layout(&self) -> InputLayout {
        InputLayout::new(self.grids.iter().map(|g| (g.channels, g.corners)), self.pe_frequencies, self.pyramid_levels() > 1)
    }

    /// MLP inputs the latents give ([`InputLayout::latent_features`]).
    #[must_use]
    pub fn latent_features(&self) -> usize {
        self.input_layout().latent_features()
    }

    /// The MLP inputs that read latent channel `c` ([`InputLayout::channel_inputs`]).
    #[must_use]
    pub fn channel_inputs(&self, c: usize) -> std::ops::Range<usize> {
        self.input_layout().channel_inputs(c)
    }

    /// Width of the MLP input ([`InputLayout::width`]).
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        self.input_layout().width()
    }

    /// Levels of the latent pyramid (1 without a mip chain); each serves [`Self::mip_group`] mip
    /// levels.
    #[must_use]
    pub fn pyramid_levels(&self) -> u32 {
        if self.grids.is_empty() { 1 } else { 1 + (self.mip_grids.len() / self.grids.len()) as u32 }
    }

    /// Mip levels each pyramid level serves (at least 1).
    #[must_use]
    pub fn mip_group(&self) -> u32 {
        self.mip_group.max(1)
    }

    /// The LOD level mip level `mip` decodes at ([`lod_level`] of this pyramid).
    #[must_use]
    pub fn lod_level(&self, mip: u32) -> u32 {
        lod_level(mip, self.pyramid_levels(), self.mip_group())
    }

    /// The pyramid level mip level `mip` reads ([`pyramid_level`] of this pyramid).
    #[must_use]
    pub fn pyramid_level(&self, mip: u32) -> u32 {
        pyramid_level(mip, self.pyramid_levels(), self.mip_group())
    }

    /// The pyramid level whose grids `level` decodes with: `level`, or the last for any beyond it.
    #[must_use]
    pub fn grids_level(&self, level: u32) -> usize {
        level.min(self.pyramid_levels().saturating_sub(1)) as usize
    }

    /// The grids pyramid level `level` decodes with (the last level for any beyond it).
    #[must_use]
    pub fn level_grids(&self, level: u32) -> &[GridParams] {
        let k = self.grids_level(level);
        if k == 0 {
            return &self.grids;
        }
        let g = self.grids.len();
        &self.mip_grids[(k - 1) * g..k * g]
    }

    /// The grids of pyramid level `level`, mutably (the last level for any beyond it).
    pub fn level_grids_mut(&mut self, level: u32) -> &mut [GridParams] {
        let k = self.grids_level(level);
        if k == 0 {
            return &mut self.grids;
        }
        let g = self.grids.len();
        &mut self.mip_grids[(k - 1) * g..k * g]
    }

    /// Every grid of every level: level 0 first.
    pub fn all_grids(&self) -> impl Iterator<Item = &GridParams> {
        self.grids.iter().chain(&self.mip_grids)
    }

    /// Every grid of every level, mutably: level 0 first.
    pub fn all_grids_mut(&mut self) -> impl Iterator<Item = &mut GridParams> {
        self.grids.iter_mut().chain(&mut self.mip_grids)
    }

    /// Width of the MLP output (all channels of all textures).
    #[must_use]
    pub fn output_channels(&self) -> usize {
        self.layers.last().map_or(0, |l| l.outputs)
    }

    /// Number of scalar parameters (grids + weights + biases).
    #[must_use]
    pub fn parameter_count(&self) -> usize {
        self.all_grids().map(GridParams::len).sum::<usize>() + self.layers.iter().map(|l| l.weights.len() + l.biases.len()).sum::<usize>()
    }

    /// A copy with every value set to zero (same shapes): the shape of a gradient.
    #[must_use]
    pub fn zeros_like(&self) -> Self {
        Self {
            grids: self
                .grids
                .iter()
                .map(|g| GridParams { corners: g.corners, ..GridParams::zeros(g.width, g.height, g.channels) })
                .collect(),
            pe_frequencies: self.pe_frequencies,
            layers: self.layers.iter().map(|l| LayerParams::zeros(l.inputs, l.outputs)).collect(),
            mip_grids: self
                .mip_grids
                .iter()
                .map(|g| GridParams { corners: g.corners, ..GridParams::zeros(g.width, g.height, g.channels) })
                .collect(),
            mip_group: self.mip_group,
            activation: self.activation,
        }
    }
}

/// The positional-encoding angular frequency of band `k` (radians per grid-0 cell).
#[must_use]
pub(crate) fn pe_angular_frequency(k: u32) -> f32 {
    std::f32::consts::TAU * (1u32 << k) as f32 * 0.5
}
