//! The neural texture model in [burn](https://burn.dev) 0.22: the same math as the specification
//! in [`crate::model::params`], as tensors on any burn [`Device`] (Flex on the CPU, wgpu on a GPU), with
//! autodiff for training.
//!
//! Pieces:
//!
//! - [`NtcModelConfig`] / [`NtcModel`]: the burn module (latent grids as `[height·width, channels]`
//!   parameters, the MLP as [`burn::nn::Linear`] layers) and its config, with exact conversion
//!   from and to [`ModelParams`] ([`NtcModel::from_params`], [`NtcModel::to_params`]).
//! - [`NtcModel::forward`]: spec steps 1–4 (latent fetch, channel mask, positional encoding, MLP)
//!   giving the *unclamped* MLP output; [`NtcModel::decode`] adds step 5 (clamp to `[0, 1]`).
//! - [`loss`] and [`loss_and_grads`](super::trainer::loss_and_grads): the training objective and its gradient laid out like
//!   [`ModelParams`], the reference the hand-written CPU trainer is tested against.
//! - [`BurnTrainer`](super::trainer::BurnTrainer): Adam training on a device, with separate grid / MLP learning rates and
//!   optional quantisation-aware-training noise.
//!
//! # Conventions and deviations from the brief
//!
//! - **Loss on the unclamped output.** Training (and [`loss`], [`loss_and_grads`](super::trainer::loss_and_grads),
//!   [`BurnTrainer`](super::trainer::BurnTrainer)) uses the raw output of the last (linear) layer, *not* the `[0, 1]`-clamped
//!   value of spec step 5: a clamp would zero the gradient of any output outside `[0, 1]` and leave
//!   it stuck there. Since targets lie in `[0, 1]`, the clamped error is never larger than the
//!   unclamped one.
//! - **Linear weights are `[inputs, outputs]`.** [`burn::nn::Linear`] stores `W` transposed with
//!   respect to [`crate::model::params::LayerParams`] (`[outputs][inputs]`); the conversions transpose on
//!   the host.
//! - **Noise layout.** The optional noise of [`NtcModel::forward`] is one `[4, B, latent_channels]`
//!   tensor: index 0..4 along the first axis is the corner `(x0,y0)`, `(x1,y0)`, `(x0,y1)`,
//!   `(x1,y1)` (the order of the bilinear formula), channels are the concatenated latent channels.
//!   When noise is given, grid values are first clamped to `[-1, 1]` (the quantisation range), so
//!   values outside that range get no gradient in noisy steps.
//! - **`grid_lr_scale` scales only the grid learning rate** in [`BurnTrainer::step`](super::trainer::BurnTrainer::step); the MLP
//!   learning rate is set with [`BurnTrainer::set_learning_rates`](super::trainer::BurnTrainer::set_learning_rates) (for an MLP schedule).
//!
//! - **Grid range.** [`BurnTrainer`](super::trainer::BurnTrainer) clamps grid values to `[-1, 1]` after every grid update,
//!   like the fused CPU trainer.
//!
//! Every `forward` documents its tensor shapes; `B` is the batch size.

use burn::module::Param;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::Gradients;
use burn::tensor::activation::relu;

use crate::model::InputLayout;
use crate::model::params::{Activation, GridParams, HGELU_MAX, LayerParams, ModelParams, pe_angular_frequency};

/// Grid values are kept in the latent quantisation range after every update (the same range as
/// `crate::model::quant::LATENT_RANGE`, as the fused CPU trainer does).
pub(super) const LATENT_RANGE: [f32; 2] = [-1.0, 1.0];

/// Shape of one latent grid.
#[derive(Config, Debug)]
pub struct LatentGridConfig {
    /// Cells across (u direction).
    pub width: usize,
    /// Cells down (v direction).
    pub height: usize,
    /// Feature channels per cell.
    pub channels: usize,
}

/// Configuration of an [`NtcModel`]: grid shapes, positional encoding and MLP widths.
#[derive(Config, Debug)]
pub struct NtcModelConfig {
    /// Latent grids, finest first (grid 0 sets the positional-encoding period). At least one.
    pub grids: Vec<LatentGridConfig>,
    /// Widths of the hidden layers (each followed by a `ReLU`), first to last.
    pub hidden_widths: Vec<usize>,
    /// Width of the output layer (all channels of all textures).
    pub output_channels: usize,
    /// Number of positional-encoding frequencies (`4 ·` this many MLP inputs).
    #[config(default = 3)]
    pub pe_frequencies: usize,
    /// Grid values are initialised uniformly in `[-a, a)` with this `a`.
    #[config(default = 0.5)]
    pub grid_init_amplitude: f64,
}

impl NtcModelConfig {
    /// The config describing the shapes of `params` (its hidden widths, outputs, grids).
    #[must_use]
    pub fn for_params(params: &ModelParams) -> Self {
        let grids = params.grids.iter().map(|g| LatentGridConfig::new(g.width as usize, g.height as usize, g.channels as usize)).collect();
        let hidden = params.layers.iter().rev().skip(1).rev().map(|l| l.outputs).collect();
        Self::new(grids, hidden, params.output_channels()).with_pe_frequencies(params.pe_frequencies as usize)
    }

    /// Total latent channels over all grids.
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(|g| g.channels).sum()
    }

    /// Width of the MLP input ([`InputLayout::width`] of grids without corner reads or a
    /// pyramid: latent channels plus `4 · pe_frequencies`).
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        InputLayout::new(self.grids.iter().map(|g| (g.channels as u32, false)), self.pe_frequencies as u32, false).width()
    }

    /// A freshly initialised model: grids uniform in `±grid_init_amplitude`, layers with burn's
    /// default [`Linear`] initialisation (Kaiming uniform weights and biases).
    #[must_use]
    pub fn init(&self, device: &Device) -> NtcModel {
        let amplitude = self.grid_init_amplitude;
        let grids = self
            .grids
            .iter()
            .map(|g| LatentGrid {
                values: Initializer::Uniform { min: -amplitude, max: amplitude }.init([g.height * g.width, g.channels], device),
                width: g.width,
                height: g.height,
                corners: false,
            })
            .collect();
        let mut widths = vec![self.mlp_inputs()];
        widths.extend(&self.hidden_widths);
        widths.push(self.output_channels);
        let layers = widths.windows(2).map(|w| LinearConfig::new(w[0], w[1]).init(device)).collect();
        NtcModel { grids, layers, pe_frequencies: self.pe_frequencies, hgelu: false }
    }
}

/// One latent grid as a burn module.
#[derive(Module, Debug)]
pub struct LatentGrid {
    /// Values `[height * width, channels]`; row `y * width + x` is the cell at `(x, y)`.
    pub values: Param<Tensor<2>>,
    /// Cells across.
    pub width: usize,
    /// Cells down.
    pub height: usize,
    /// The decoder reads each channel's four weighted corners as inputs of their own
    /// ([`GridParams::corners`]).
    pub corners: bool,
}

impl LatentGrid {
    /// Feature channels per cell.
    #[must_use]
    pub fn channels(&self) -> usize {
        self.values.shape().dims::<2>()[1]
    }

    /// Bilinear clamp-to-edge fetch (spec step 1) of this grid.
    ///
    /// - `u`, `v`: `[B, 1]` texture coordinates.
    /// - `noise`: `[4, B, channels]`, added to the four gathered corners (see the module docs);
    ///   when present the grid values are clamped to `[-1, 1]` first.
    /// - `trainable`: false fetches from a constant copy of the values (no gradient).
    /// - returns `[B, channels]`, or `[B, 4 · channels]` channel-major (each corner's value
    ///   times its weight) for a grid that reads its corners.
    fn fetch(&self, u: Tensor<2>, v: Tensor<2>, noise: Option<Tensor<3>>, trainable: bool) -> Tensor<2> {
        let [batch, _] = u.dims();
        let (x0, x1, fx) = bilinear_axis(u, self.width);
        let (y0, y1, fy) = bilinear_axis(v, self.height);
        let width = self.width as f32;
        // Row indices as exact small integers in f32 (grids are far below 2^24 cells), then Int.
        let row = |y: &Tensor<2>, x: &Tensor<2>| -> Tensor<1, Int> { y.clone().mul_scalar(width).add(x.clone()).int().reshape([batch]) };
        let rows = [row(&y0, &x0), row(&y0, &x1), row(&y1, &x0), row(&y1, &x1)];

        let mut values = if trainable { self.values.val() } else { self.values.val().inner() };
        if noise.is_some() {
            values = values.clamp(-1.0, 1.0);
        }
        let one_fx = fx.clone().neg().add_scalar(1.0);
        let one_fy = fy.clone().neg().add_scalar(1.0);
        // [B, 1] weights, same order as the spec formula.
        let weights = [one_fx.clone().mul(one_fy.clone()), fx.clone().mul(one_fy), one_fx.mul(fy.clone()), fx.mul(fy)];
        // Four [B, C] noise tensors, one per corner.
        let mut corner_noise = noise.map(|n| n.chunk(4, 0).into_iter());
        let mut terms: Vec<Tensor<2>> = Vec::with_capacity(4);
        for (rows, weight) in rows.into_iter().zip(weights) {
            // `select` records a scatter-add backward: gradients flow back into the grid rows.
            let mut gathered = values.clone().select(0, rows); // [B, C]
            if let Some(n) = corner_noise.as_mut().and_then(Iterator::next) {
                gathered = gathered + n.squeeze_dim::<2>(0);
            }
            terms.push(gathered.mul(weight));
        }
        if self.corners {
            // [B, C, 4] → [B, 4C]: channel c's corner k at 4c + k.
            return Tensor::stack::<3>(terms, 2).reshape([batch, 4 * self.channels()]);
        }
        terms.into_iter().reduce(|acc, term| acc + term).unwrap_or_else(|| Tensor::zeros([batch, self.channels()], &self.values.device()))
    }
}

/// Clamp-to-edge bilinear taps along one axis.
///
/// `coord`: `[B, 1]` in `[0, 1]`; returns `(i0, i1, frac)`, each `[B, 1]`: the two clamped cell
/// indices (as whole-number floats) and the interpolation weight of `i1`.
fn bilinear_axis(coord: Tensor<2>, size: usize) -> (Tensor<2>, Tensor<2>, Tensor<2>) {
    let g = coord.mul_scalar(size as f32).sub_scalar(0.5);
    let i0 = g.clone().floor();
    let frac = g - i0.clone();
    let max = size.saturating_sub(1) as f32;
    let c0 = i0.clone().clamp(0.0, max);
    let c1 = i0.add_scalar(1.0).clamp(0.0, max);
    (c0, c1, frac)
}

/// The neural texture model as a burn module (see [`crate::model::params`] for the math).
#[derive(Module, Debug)]
pub struct NtcModel {
    /// Latent grids, finest first.
    pub grids: Vec<LatentGrid>,
    /// MLP layers, first to last ([`Linear`] weights are `[inputs, outputs]`).
    pub layers: Vec<Linear>,
    /// Number of positional-encoding frequencies.
    pub pe_frequencies: usize,
    /// The hidden layers take `HGELUClamp` instead of `ReLU` ([`Activation`]).
    pub hgelu: bool,
}

impl NtcModel {
    /// Builds the model holding exactly the values of `params` on `device` (an autodiff device
    /// makes every value a trainable leaf).
    #[must_use]
    pub fn from_params(params: &ModelParams, device: &Device) -> Self {
        let grids = params
            .grids
            .iter()
            .map(|g| LatentGrid {
                values: Param::from_data(
                    TensorData::new(g.values.clone(), [g.height as usize * g.width as usize, g.channels as usize]),
                    device,
                ),
                width: g.width as usize,
                height: g.height as usize,
                corners: g.corners,
            })
            .collect();
        let layers = params
            .layers
            .iter()
            .map(|l| Linear {
                weight: Param::from_data(TensorData::new(transpose(&l.weights, l.outputs, l.inputs), [l.inputs, l.outputs]), device),
                bias: Some(Param::from_data(TensorData::new(l.biases.clone(), [l.outputs]), device)),
            })
            .collect();
        Self { grids, layers, pe_frequencies: params.pe_frequencies as usize, hgelu: params.activation == Activation::Hgelu }
    }

    /// Reads every value back into plain [`ModelParams`] (exact inverse of [`Self::from_params`]).
    ///
    /// # Panics
    ///
    /// Panics if the device fails to read a tensor back.
    #[must_use]
    pub fn to_params(&self) -> ModelParams {
        ModelParams {
            grids: self
                .grids
                .iter()
                .map(|g| GridParams {
                    width: g.width as u32,
                    height: g.height as u32,
                    channels: g.channels() as u32,
                    values: read_f32(g.values.val()),
                    corners: g.corners,
                })
                .collect(),
            pe_frequencies: self.pe_frequencies as u32,
            layers: self
                .layers
                .iter()
                .map(|l| {
                    let [inputs, outputs] = l.weight.shape().dims::<2>();
                    LayerParams {
                        inputs,
                        outputs,
                        weights: transpose(&read_f32(l.weight.val()), inputs, outputs),
                        biases: l.bias.as_ref().map_or_else(|| vec![0.0; outputs], |b| read_f32(b.val())),
                    }
                })
                .collect(),
            mip_grids: Vec::new(),
            mip_group: 1,
            activation: if self.hgelu { Activation::Hgelu } else { Activation::Relu },
        }
    }

    /// Total latent channels (the width of a mask).
    #[must_use]
    pub fn latent_channels(&self) -> usize {
        self.grids.iter().map(LatentGrid::channels).sum()
    }

    /// Spec steps 1–4: the unclamped MLP output.
    ///
    /// - `uv`: `[B, 2]` texture coordinates `(u, v)`.
    /// - `mask`: `[B, latent_channels]` channel mask (1.0 = read, 0.0 = ignore).
    /// - `noise`: optional `[4, B, latent_channels]` quantisation noise added to the four gathered
    ///   corners (see the module docs); when present grid values are clamped to `[-1, 1]` first.
    /// - returns `[B, output_channels]`.
    ///
    /// # Panics
    ///
    /// Panics if the model has no grid or no layer, or on shape mismatches.
    #[must_use]
    pub fn forward(&self, uv: Tensor<2>, mask: Tensor<2>, noise: Option<Tensor<3>>) -> Tensor<2> {
        self.forward_with(uv, mask, noise, true)
    }

    /// Spec steps 1–5: [`Self::forward`] clamped to `[0, 1]` (the stored, encoded channel value).
    ///
    /// - `uv`: `[B, 2]`, `mask`: `[B, latent_channels]`; returns `[B, output_channels]`.
    #[must_use]
    pub fn decode(&self, uv: Tensor<2>, mask: Tensor<2>) -> Tensor<2> {
        self.forward(uv, mask, None).clamp(0.0, 1.0)
    }

    /// [`Self::forward`] with the grids optionally frozen (`train_grids == false` fetches from
    /// constant copies so no gradient is computed for them).
    ///
    /// Shapes as in [`Self::forward`].
    pub(super) fn forward_with(&self, uv: Tensor<2>, mask: Tensor<2>, noise: Option<Tensor<3>>, train_grids: bool) -> Tensor<2> {
        assert!(!self.grids.is_empty(), "the model needs at least one latent grid");
        assert!(!self.layers.is_empty(), "the model needs at least one layer");
        let mut h = self.inputs(uv, mask, noise, train_grids);

        // 4. MLP, ReLU (or HGELUClamp) on all but the last layer.
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(h);
            if i < last {
                h = if self.hgelu {
                    h.clone().clamp_max(HGELU_MAX) * h.mul_scalar(1.0 / 3.0).add_scalar(0.5).clamp(0.0, 1.0)
                } else {
                    relu(h)
                };
            }
        }
        h
    }

    /// The model's input layout ([`InputLayout`]): its grids' channels and corner reads and its
    /// positional encoding (burn's model has no latent pyramid, so no LOD input).
    #[must_use]
    pub fn input_layout(&self) -> InputLayout {
        InputLayout::new(self.grids.iter().map(|g| (g.channels() as u32, g.corners)), self.pe_frequencies as u32, false)
    }

    /// Spec steps 1–3, the MLP's input `[B, width]`, each value at its slot of
    /// [`Self::input_layout`]: every grid's features through its channels' budget (grid 0
    /// first), then the positional encoding. Shapes as in [`Self::forward`].
    pub(crate) fn inputs(&self, uv: Tensor<2>, mask: Tensor<2>, noise: Option<Tensor<3>>, train_grids: bool) -> Tensor<2> {
        let layout = self.input_layout();
        let u = uv.clone().narrow(1, 0, 1); // [B, 1]
        let v = uv.narrow(1, 1, 1); // [B, 1]

        // 1. Latent fetch, grid 0 first. Noise split per grid: [4, B, channels of grid g].
        let sizes = layout.grids().iter().map(|slot| slot.channels).collect();
        let mut grid_noise = noise.map(|n| n.split_with_sizes(sizes, 2).into_iter());
        // 2. Channel budget, per grid: a corner grid's four inputs of a channel take its mask.
        let [batch, _] = mask.dims();
        let masks = mask.split_with_sizes(layout.grids().iter().map(|slot| slot.channels).collect(), 1);
        // The layout's slots, in order: each grid's inputs, then the positional encoding.
        let mut slots = Vec::with_capacity(self.grids.len() + 1);
        for ((grid, slot), m) in self.grids.iter().zip(layout.grids()).zip(masks) {
            let n = grid_noise.as_mut().and_then(Iterator::next);
            let m =
                if slot.corners { m.unsqueeze_dim::<3>(2).repeat_dim(2, slot.reads()).reshape([batch, slot.inputs().len()]) } else { m };
            slots.push(grid.fetch(u.clone(), v.clone(), n, train_grids).mul(m));
        }
        // 3. Positional encoding: [B, 4 · pe_frequencies] from `pe_input(0, 0)` on.
        slots.extend(self.positional_encoding(u, v));
        let h = Tensor::cat(slots, 1);
        debug_assert_eq!(h.dims()[1], layout.width(), "the inputs fill the layout");
        h
    }

    /// Positional encoding (spec step 3).
    ///
    /// `u`, `v`: `[B, 1]`; returns `[B, 4 · pe_frequencies]` ordered
    /// `sin(a·px), cos(a·px), sin(a·py), cos(a·py)` per frequency, or `None` without frequencies.
    fn positional_encoding(&self, u: Tensor<2>, v: Tensor<2>) -> Option<Tensor<2>> {
        let k = self.pe_frequencies;
        if k == 0 {
            return None;
        }
        let [batch, _] = u.dims();
        let device = u.device();
        let freqs: Vec<f32> = (0..k as u32).map(pe_angular_frequency).collect();
        let freqs = Tensor::<2>::from_data(TensorData::new(freqs, [1, k]), &device); // [1, K]
        let grid0 = &self.grids[0];
        let ax = u.mul_scalar(grid0.width as f32).mul(freqs.clone()); // [B, K]
        let ay = v.mul_scalar(grid0.height as f32).mul(freqs); // [B, K]
        let stacked: Tensor<3> = Tensor::stack(vec![ax.clone().sin(), ax.cos(), ay.clone().sin(), ay.cos()], 2); // [B, K, 4]
        Some(stacked.reshape([batch, 4 * k]))
    }

    /// Reads the gradient of every parameter from `grads` into a [`ModelParams`] layout
    /// (parameters without a gradient read as zeros).
    pub(super) fn gradients_to_params(&self, grads: &Gradients) -> ModelParams {
        let mut out = self.to_params_shapes();
        for (g, grid) in out.grids.iter_mut().zip(&self.grids) {
            if let Some(grad) = grid.values.val().grad(grads) {
                g.values = read_f32(grad);
            }
        }
        for (l, layer) in out.layers.iter_mut().zip(&self.layers) {
            if let Some(grad) = layer.weight.val().grad(grads) {
                l.weights = transpose(&read_f32(grad), l.inputs, l.outputs);
            }
            if let Some(grad) = layer.bias.as_ref().and_then(|b| b.val().grad(grads)) {
                l.biases = read_f32(grad);
            }
        }
        out
    }

    /// Zero-valued [`ModelParams`] with this model's shapes (no device read).
    fn to_params_shapes(&self) -> ModelParams {
        ModelParams {
            grids: self.grids.iter().map(|g| GridParams::zeros(g.width as u32, g.height as u32, g.channels() as u32)).collect(),
            pe_frequencies: self.pe_frequencies as u32,
            layers: self
                .layers
                .iter()
                .map(|l| {
                    let [inputs, outputs] = l.weight.shape().dims::<2>();
                    LayerParams::zeros(inputs, outputs)
                })
                .collect(),
            mip_grids: Vec::new(),
            mip_group: 1,
            activation: if self.hgelu { Activation::Hgelu } else { Activation::Relu },
        }
    }
}

/// The training loss `Σ weight · (output - target)² / B`.
///
/// - `output`, `target`, `weight`: `[B, output_channels]`.
/// - returns `[1]`.
#[must_use]
pub(crate) fn loss(output: Tensor<2>, target: Tensor<2>, weight: Tensor<2>) -> Tensor<1> {
    let [batch, _] = output.dims();
    output.sub(target).square().mul(weight).sum().div_scalar(batch.max(1) as f32)
}

/// Reads a float tensor back to the host as `f32`s.
pub(super) fn read_f32<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.try_into_vec_as::<f32>().unwrap_or_else(|err| panic!("reading a float tensor back from the device failed: {err}"))
}

/// Transposes a row-major `rows × cols` matrix.
pub(super) fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}
