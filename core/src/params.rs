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
//!    The features of all grids are concatenated (grid 0 first) into `latent_channels()` values.
//! 2. **Channel budget.** Feature `i` is multiplied by `mask[i]` (1.0 if texture `t` reads latent
//!    channel `i`, else 0.0). This is how a texture reads only its subset of the shared channels.
//! 3. **Positional encoding.** With `px = u * grids[0].width`, `py = v * grids[0].height` (in
//!    grid-0 cells) and for `k in 0..pe_frequencies`, `a = 2π · 2^k / 2`, append
//!    `sin(a·px), cos(a·px), sin(a·py), cos(a·py)` (in that order), `4 · pe_frequencies` values.
//! 4. **MLP.** `h = relu(W·h + b)` for every layer but the last, which is linear. `W` is stored
//!    `[outputs][inputs]` row-major. The output vector has one value per channel of every texture
//!    of the library (`output_channels`), in library order; texture `t` uses its own slice.
//! 5. **Output.** Clamp to `[0, 1]`: this is the stored (encoded) value of the channel (sRGB for
//!    colour maps, linear for data maps, `n * 0.5 + 0.5` for normal maps).
//!
//! Training minimises `Σ weight · (y - target)²` over the output channels a sample targets,
//! divided by the batch size.

use serde::{Deserialize, Serialize};

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
}

impl GridParams {
    /// A grid of zeros.
    #[must_use]
    pub fn zeros(width: u32, height: u32, channels: u32) -> Self {
        Self { width, height, channels, values: vec![0.0; width as usize * height as usize * channels as usize] }
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
}

impl ModelParams {
    /// Total latent channels over all grids (the width of a channel mask).
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(|g| g.channels as usize).sum()
    }

    /// Width of the MLP input: latent channels plus positional encoding.
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        self.latent_channels() + 4 * self.pe_frequencies as usize
    }

    /// Width of the MLP output (all channels of all textures).
    #[must_use]
    pub fn output_channels(&self) -> usize {
        self.layers.last().map_or(0, |l| l.outputs)
    }

    /// Number of scalar parameters (grids + weights + biases).
    #[must_use]
    pub fn parameter_count(&self) -> usize {
        self.grids.iter().map(GridParams::len).sum::<usize>() + self.layers.iter().map(|l| l.weights.len() + l.biases.len()).sum::<usize>()
    }

    /// A copy with every value set to zero (same shapes): the shape of a gradient.
    #[must_use]
    pub fn zeros_like(&self) -> Self {
        Self {
            grids: self.grids.iter().map(|g| GridParams::zeros(g.width, g.height, g.channels)).collect(),
            pe_frequencies: self.pe_frequencies,
            layers: self.layers.iter().map(|l| LayerParams::zeros(l.inputs, l.outputs)).collect(),
        }
    }
}

/// The positional-encoding angular frequency of band `k` (radians per grid-0 cell).
#[must_use]
pub fn pe_angular_frequency(k: u32) -> f32 {
    std::f32::consts::TAU * (1u32 << k) as f32 * 0.5
}
