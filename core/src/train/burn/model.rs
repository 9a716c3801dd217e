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
//! - [`loss`] and [`loss_and_grads`]: the training objective and its gradient laid out like
//!   [`ModelParams`], the reference the hand-written CPU trainer is tested against.
//! - [`BurnTrainer`]: Adam training on a device, with separate grid / MLP learning rates and
//!   optional quantisation-aware-training noise.
//!
//! # Conventions and deviations from the brief
//!
//! - **Loss on the unclamped output.** Training (and [`loss`], [`loss_and_grads`],
//!   [`BurnTrainer`]) uses the raw output of the last (linear) layer, *not* the `[0, 1]`-clamped
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
//! - **`grid_lr_scale` scales only the grid learning rate** in [`BurnTrainer::step`]; the MLP
//!   learning rate is set with [`BurnTrainer::set_learning_rates`] (for an MLP schedule).
//!
//! - **Grid range.** [`BurnTrainer`] clamps grid values to `[-1, 1]` after every grid update,
//!   like the fused CPU trainer.
//!
//! Every `forward` documents its tensor shapes; `B` is the batch size.

use burn::module::Param;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::relu;
use burn::tensor::{Distribution, Gradients};

use crate::model::params::{GridParams, LayerParams, ModelParams, pe_angular_frequency};

/// Adam first-moment decay.
const ADAM_BETA1: f32 = 0.9;
/// Adam second-moment decay.
const ADAM_BETA2: f32 = 0.99;
/// Adam denominator epsilon.
const ADAM_EPSILON: f32 = 1e-8;
/// Grid values are kept in the latent quantisation range after every update (the same range as
/// `crate::model::quant::LATENT_RANGE`, as the fused CPU trainer does).
const LATENT_RANGE: [f32; 2] = [-1.0, 1.0];

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

    /// Width of the MLP input: latent channels plus `4 · pe_frequencies`.
    #[must_use]
    pub fn mlp_inputs(&self) -> usize {
        self.latent_channels() + 4 * self.pe_frequencies
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
            })
            .collect();
        let mut widths = vec![self.mlp_inputs()];
        widths.extend(&self.hidden_widths);
        widths.push(self.output_channels);
        let layers = widths.windows(2).map(|w| LinearConfig::new(w[0], w[1]).init(device)).collect();
        NtcModel { grids, layers, pe_frequencies: self.pe_frequencies }
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
    /// - returns `[B, channels]`.
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
        let mut out: Option<Tensor<2>> = None;
        for (rows, weight) in rows.into_iter().zip(weights) {
            // `select` records a scatter-add backward: gradients flow back into the grid rows.
            let mut gathered = values.clone().select(0, rows); // [B, C]
            if let Some(n) = corner_noise.as_mut().and_then(Iterator::next) {
                gathered = gathered + n.squeeze_dim::<2>(0);
            }
            let term = gathered.mul(weight);
            out = Some(match out {
                Some(acc) => acc + term,
                None => term,
            });
        }
        out.unwrap_or_else(|| Tensor::zeros([batch, self.channels()], &self.values.device()))
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
        Self { grids, layers, pe_frequencies: params.pe_frequencies as usize }
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
    fn forward_with(&self, uv: Tensor<2>, mask: Tensor<2>, noise: Option<Tensor<3>>, train_grids: bool) -> Tensor<2> {
        assert!(!self.grids.is_empty(), "the model needs at least one latent grid");
        assert!(!self.layers.is_empty(), "the model needs at least one layer");
        let u = uv.clone().narrow(1, 0, 1); // [B, 1]
        let v = uv.narrow(1, 1, 1); // [B, 1]

        // 1. Latent fetch, grid 0 first: [B, latent_channels].
        // Noise split per grid: [4, B, channels of grid g].
        let sizes = self.grids.iter().map(LatentGrid::channels).collect();
        let mut grid_noise = noise.map(|n| n.split_with_sizes(sizes, 2).into_iter());
        let mut features = Vec::with_capacity(self.grids.len());
        for grid in &self.grids {
            let n = grid_noise.as_mut().and_then(Iterator::next);
            features.push(grid.fetch(u.clone(), v.clone(), n, train_grids));
        }
        // 2. Channel budget.
        let latent = Tensor::cat(features, 1).mul(mask);

        // 3. Positional encoding: [B, 4 · pe_frequencies].
        let mut h = match self.positional_encoding(u, v) {
            Some(pe) => Tensor::cat(vec![latent, pe], 1),
            None => latent,
        };

        // 4. MLP, ReLU on all but the last layer.
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            h = layer.forward(h);
            if i < last {
                h = relu(h);
            }
        }
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
    fn gradients_to_params(&self, grads: &Gradients) -> ModelParams {
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
        }
    }
}

/// The training loss `Σ weight · (output - target)² / B`.
///
/// - `output`, `target`, `weight`: `[B, output_channels]`.
/// - returns `[1]`.
#[must_use]
pub fn loss(output: Tensor<2>, target: Tensor<2>, weight: Tensor<2>) -> Tensor<1> {
    let [batch, _] = output.dims();
    output.sub(target).square().mul(weight).sum().div_scalar(batch.max(1) as f32)
}

/// Host batch converted to tensors.
struct Batch {
    /// `[B, 2]`.
    uv: Tensor<2>,
    /// `[B, latent_channels]`.
    mask: Tensor<2>,
    /// `[B, output_channels]`.
    target: Tensor<2>,
    /// `[B, output_channels]`.
    weight: Tensor<2>,
}

impl Batch {
    /// Uploads host slices (`uv` `[B][2]`, `mask` `[B][latent]`, `target`/`weight` `[B][outputs]`,
    /// row-major) after checking their lengths.
    fn new(latent: usize, outputs: usize, uv: &[f32], mask: &[f32], target: &[f32], weight: &[f32], device: &Device) -> Self {
        assert!(uv.len().is_multiple_of(2), "uv holds (u, v) pairs");
        let batch = uv.len() / 2;
        assert_eq!(mask.len(), batch * latent, "mask must be [B][latent_channels]");
        assert_eq!(target.len(), batch * outputs, "target must be [B][output_channels]");
        assert_eq!(weight.len(), batch * outputs, "weight must be [B][output_channels]");
        let upload = |data: &[f32], cols: usize| Tensor::<2>::from_data(TensorData::new(data.to_vec(), [batch, cols]), device);
        Self { uv: upload(uv, 2), mask: upload(mask, latent), target: upload(target, outputs), weight: upload(weight, outputs) }
    }
}

/// The loss of `params` on a batch and the gradient of every parameter, laid out exactly like
/// [`ModelParams`] (grids `[y][x][c]`, weights `[outputs][inputs]`).
///
/// Runs on the autodiff version of `device`. Host slices are row-major: `uv` `[B][2]`, `mask`
/// `[B][latent_channels]`, `target` and `weight` `[B][output_channels]`. No noise, no clamping.
///
/// # Panics
///
/// Panics if the slice lengths disagree with `params`, or if the device fails.
#[must_use]
pub fn loss_and_grads(
    params: &ModelParams,
    uv: &[f32],
    mask: &[f32],
    target: &[f32],
    weight: &[f32],
    device: &Device,
) -> (f32, ModelParams) {
    let device = device.clone().autodiff();
    let model = NtcModel::from_params(params, &device);
    let batch = Batch::new(params.latent_channels(), params.output_channels(), uv, mask, target, weight, &device);
    let output = model.forward(batch.uv, batch.mask, None);
    let loss = loss(output, batch.target, batch.weight);
    let grads = loss.backward();
    let value = read_f32(loss).first().copied().unwrap_or(0.0);
    (value, model.gradients_to_params(&grads))
}

/// Adam moments of one parameter tensor (on the non-autodiff device).
struct Moments<const D: usize> {
    /// First moment.
    m: Tensor<D>,
    /// Second moment.
    v: Tensor<D>,
}

impl<const D: usize> Moments<D> {
    /// Zero moments shaped like `param`.
    fn zeros_like(param: &Param<Tensor<D>>) -> Self {
        let zeros = param.val().inner().zeros_like();
        Self { m: zeros.clone(), v: zeros }
    }

    /// One Adam update of `param` with `grad` (`step` counts from 1), the result clamped to
    /// `range` when given; returns the new leaf.
    fn update(&mut self, param: &Param<Tensor<D>>, grad: Tensor<D>, lr: f32, step: i32, range: Option<[f32; 2]>) -> Param<Tensor<D>> {
        let m = self.m.clone().mul_scalar(ADAM_BETA1).add(grad.clone().mul_scalar(1.0 - ADAM_BETA1));
        let v = self.v.clone().mul_scalar(ADAM_BETA2).add(grad.square().mul_scalar(1.0 - ADAM_BETA2));
        let bias1 = 1.0 - ADAM_BETA1.powi(step);
        let bias2 = 1.0 - ADAM_BETA2.powi(step);
        let delta = m.clone().div_scalar(bias1).div(v.clone().div_scalar(bias2).sqrt().add_scalar(ADAM_EPSILON)).mul_scalar(lr);
        self.m = m;
        self.v = v;
        param.clone().map(|p| {
            let updated = p.inner().sub(delta);
            let updated = match range {
                Some([lo, hi]) => updated.clamp(lo, hi),
                None => updated,
            };
            updated.autodiff().require_grad()
        })
    }
}

/// Adam trainer of an [`NtcModel`] on one device (Flex or wgpu), with its own learning rates for
/// the latent grids and the MLP.
///
/// Adam: betas `(0.9, 0.99)`, epsilon `1e-8`, bias-corrected; the grids count their own steps
/// (steps with `train_grids == false` neither move them nor advance their Adam state). After each
/// update grid values are clamped to the latent quantisation range `[-1, 1]`, like the fused CPU
/// trainer.
pub struct BurnTrainer {
    /// The model on the autodiff device.
    model: NtcModel,
    /// The autodiff device everything runs on.
    device: Device,
    /// Base grid learning rate (scaled per step by `grid_lr_scale`).
    grid_lr: f32,
    /// MLP learning rate.
    mlp_lr: f32,
    /// Adam state per grid.
    grid_moments: Vec<Moments<2>>,
    /// Adam state per layer weight.
    weight_moments: Vec<Moments<2>>,
    /// Adam state per layer bias (layers built here always have one).
    bias_moments: Vec<Option<Moments<1>>>,
    /// Adam steps taken by the grids.
    grid_steps: i32,
    /// Adam steps taken by the MLP.
    mlp_steps: i32,
}

impl BurnTrainer {
    /// A trainer starting from `params` on (the autodiff version of) `device`.
    #[must_use]
    pub fn new(params: &ModelParams, device: &Device, grid_lr: f32, mlp_lr: f32) -> Self {
        let device = device.clone().autodiff();
        let model = NtcModel::from_params(params, &device);
        let grid_moments = model.grids.iter().map(|g| Moments::zeros_like(&g.values)).collect();
        let weight_moments = model.layers.iter().map(|l| Moments::zeros_like(&l.weight)).collect();
        let bias_moments = model.layers.iter().map(|l| l.bias.as_ref().map(Moments::zeros_like)).collect();
        Self { model, device, grid_lr, mlp_lr, grid_moments, weight_moments, bias_moments, grid_steps: 0, mlp_steps: 0 }
    }

    /// Changes the base learning rates (e.g. for an MLP schedule).
    pub fn set_learning_rates(&mut self, grid_lr: f32, mlp_lr: f32) {
        self.grid_lr = grid_lr;
        self.mlp_lr = mlp_lr;
    }

    /// The model being trained (on the autodiff device).
    #[must_use]
    pub fn model(&self) -> &NtcModel {
        &self.model
    }

    /// One Adam step on a batch; returns the loss *before* the update.
    ///
    /// - `uv` `[B][2]`, `mask` `[B][latent_channels]`, `target`/`weight` `[B][output_channels]`,
    ///   row-major host slices.
    /// - `grid_lr_scale`: multiplies the grid learning rate this step (cosine schedule factor).
    /// - `noise_amplitude`: `Some(a)` adds uniform noise in `[-a, a)` to each gathered corner
    ///   latent (and clamps grid values to `[-1, 1]` in the forward), for quantisation-aware
    ///   training with half a quantisation step as `a`.
    /// - `train_grids`: false freezes the grids (only the MLP moves).
    ///
    /// # Panics
    ///
    /// Panics if the slice lengths disagree with the model, or if the device fails.
    pub fn step(
        &mut self,
        uv: &[f32],
        mask: &[f32],
        target: &[f32],
        weight: &[f32],
        grid_lr_scale: f32,
        noise_amplitude: Option<f32>,
        train_grids: bool,
    ) -> f32 {
        let latent = self.model.latent_channels();
        let outputs = self.model.layers.last().map_or(0, |l| l.weight.shape().dims::<2>()[1]);
        let batch = Batch::new(latent, outputs, uv, mask, target, weight, &self.device);
        let b = uv.len() / 2;
        let noise = noise_amplitude.map(|a| {
            let a = f64::from(a.abs());
            Tensor::<3>::random([4, b, latent], Distribution::Uniform(-a, a), &self.device.clone().inner())
        });
        let output = self.model.forward_with(batch.uv, batch.mask, noise, train_grids);
        let loss = loss(output, batch.target, batch.weight);
        let mut grads = loss.backward();

        if train_grids {
            self.grid_steps += 1;
            let lr = self.grid_lr * grid_lr_scale;
            for (grid, moments) in self.model.grids.iter_mut().zip(&mut self.grid_moments) {
                if let Some(grad) = grid.values.val().grad_remove(&mut grads) {
                    grid.values = moments.update(&grid.values, grad, lr, self.grid_steps, Some(LATENT_RANGE));
                }
            }
        }
        self.mlp_steps += 1;
        let lr = self.mlp_lr;
        let moments = self.weight_moments.iter_mut().zip(&mut self.bias_moments);
        for (layer, (weight_moments, bias_moments)) in self.model.layers.iter_mut().zip(moments) {
            if let Some(grad) = layer.weight.val().grad_remove(&mut grads) {
                layer.weight = weight_moments.update(&layer.weight, grad, lr, self.mlp_steps, None);
            }
            if let (Some(bias), Some(bias_moments)) = (&layer.bias, bias_moments)
                && let Some(grad) = bias.val().grad_remove(&mut grads)
            {
                layer.bias = Some(bias_moments.update(bias, grad, lr, self.mlp_steps, None));
            }
        }
        read_f32(loss).first().copied().unwrap_or(0.0)
    }

    /// The current parameters.
    ///
    /// # Panics
    ///
    /// Panics if the device fails to read a tensor back.
    #[must_use]
    pub fn params(&self) -> ModelParams {
        self.model.to_params()
    }
}

/// Reads a float tensor back to the host as `f32`s.
fn read_f32<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.try_into_vec_as::<f32>().unwrap_or_else(|err| panic!("reading a float tensor back from the device failed: {err}"))
}

/// Transposes a row-major `rows × cols` matrix.
fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::rng::Rng;

    /// Uniform in `[-a, a)`.
    fn sym(rng: &mut Rng, a: f32) -> f32 {
        (rng.next_f32() * 2.0 - 1.0) * a
    }

    /// A random model: grids `(w, h, c)`, PE frequencies, hidden widths, outputs.
    fn random_params(rng: &mut Rng, grids: &[(u32, u32, u32)], pe: u32, hidden: &[usize], outputs: usize) -> ModelParams {
        let grids: Vec<GridParams> = grids
            .iter()
            .map(|&(w, h, c)| {
                let mut g = GridParams::zeros(w, h, c);
                g.values.iter_mut().for_each(|x| *x = sym(rng, 1.2));
                g
            })
            .collect();
        let latent: usize = grids.iter().map(|g| g.channels as usize).sum();
        let mut widths = vec![latent + 4 * pe as usize];
        widths.extend(hidden);
        widths.push(outputs);
        let layers = widths
            .windows(2)
            .map(|w| {
                let mut l = LayerParams::zeros(w[0], w[1]);
                let k = 1.5 / (w[0] as f32).sqrt();
                l.weights.iter_mut().for_each(|x| *x = sym(rng, k));
                l.biases.iter_mut().for_each(|x| *x = sym(rng, 0.2));
                l
            })
            .collect();
        ModelParams { grids, pe_frequencies: pe, layers, mip_grids: Vec::new() }
    }

    fn small_params(rng: &mut Rng) -> ModelParams {
        random_params(rng, &[(5, 4, 3), (3, 2, 2)], 2, &[8, 6], 5)
    }

    /// `n` random uv pairs, with the edges 0.0 and 1.0 (and corners) forced in.
    fn random_uv(rng: &mut Rng, n: usize) -> Vec<f32> {
        let mut uv: Vec<f32> = (0..2 * n).map(|_| rng.next_f32()).collect();
        let edges = [(0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (0.0, 0.37), (0.81, 1.0)];
        for (i, (u, v)) in edges.iter().enumerate().take(n) {
            uv[2 * i] = *u;
            uv[2 * i + 1] = *v;
        }
        uv
    }

    /// Scalar reference of spec steps 1–4 for one texel, in f64 after the f32 texel-coordinate
    /// arithmetic. `noise[corner][channel]` (with grid clamping to [-1, 1]) when given.
    fn reference(p: &ModelParams, u: f32, v: f32, mask: &[f32], noise: Option<&[Vec<f32>; 4]>) -> Vec<f64> {
        let mut h: Vec<f64> = Vec::new();
        for g in &p.grids {
            let (w, gh, c) = (g.width as usize, g.height as usize, g.channels as usize);
            let gx = u * g.width as f32 - 0.5;
            let gy = v * g.height as f32 - 0.5;
            let (x0f, y0f) = (gx.floor(), gy.floor());
            let (fx, fy) = (f64::from(gx - x0f), f64::from(gy - y0f));
            let clampi = |i: f32, n: usize| (i.max(0.0) as usize).min(n - 1);
            let (x0, x1) = (clampi(x0f, w), clampi(x0f + 1.0, w));
            let (y0, y1) = (clampi(y0f, gh), clampi(y0f + 1.0, gh));
            let base = h.len();
            for ch in 0..c {
                let at = |x: usize, y: usize, corner: usize| {
                    let raw = g.values[(y * w + x) * c + ch];
                    match noise {
                        Some(n) => f64::from(raw.clamp(-1.0, 1.0)) + f64::from(n[corner][base + ch]),
                        None => f64::from(raw),
                    }
                };
                let f = (1.0 - fx) * (1.0 - fy) * at(x0, y0, 0)
                    + fx * (1.0 - fy) * at(x1, y0, 1)
                    + (1.0 - fx) * fy * at(x0, y1, 2)
                    + fx * fy * at(x1, y1, 3);
                h.push(f);
            }
        }
        for (f, m) in h.iter_mut().zip(mask) {
            *f *= f64::from(*m);
        }
        let px = f64::from(u * p.grids[0].width as f32);
        let py = f64::from(v * p.grids[0].height as f32);
        for k in 0..p.pe_frequencies {
            let a = f64::from(pe_angular_frequency(k));
            h.extend([(a * px).sin(), (a * px).cos(), (a * py).sin(), (a * py).cos()]);
        }
        for (i, l) in p.layers.iter().enumerate() {
            let mut next = Vec::with_capacity(l.outputs);
            for o in 0..l.outputs {
                let mut s = f64::from(l.biases[o]);
                for (x, w) in h.iter().zip(&l.weights[o * l.inputs..(o + 1) * l.inputs]) {
                    s += x * f64::from(*w);
                }
                next.push(if i + 1 < p.layers.len() { s.max(0.0) } else { s });
            }
            h = next;
        }
        h
    }

    fn reference_loss(p: &ModelParams, uv: &[f32], mask: &[f32], target: &[f32], weight: &[f32]) -> f64 {
        let b = uv.len() / 2;
        let (lc, oc) = (p.latent_channels(), p.output_channels());
        let mut sum = 0.0;
        for i in 0..b {
            let y = reference(p, uv[2 * i], uv[2 * i + 1], &mask[i * lc..(i + 1) * lc], None);
            for o in 0..oc {
                let d = y[o] - f64::from(target[i * oc + o]);
                sum += f64::from(weight[i * oc + o]) * d * d;
            }
        }
        sum / b as f64
    }

    /// A mask that drops a few channels per sample.
    fn random_mask(rng: &mut Rng, b: usize, lc: usize) -> Vec<f32> {
        (0..b * lc).map(|_| if rng.next_f32() < 0.3 { 0.0 } else { 1.0 }).collect()
    }

    fn tensor2(data: &[f32], rows: usize, cols: usize, device: &Device) -> Tensor<2> {
        Tensor::from_data(TensorData::new(data.to_vec(), [rows, cols]), device)
    }

    #[test]
    fn params_round_trip_exactly() {
        let mut rng = Rng::from_state(1);
        let params = small_params(&mut rng);
        let device = Device::flex();
        assert_eq!(NtcModel::from_params(&params, &device).to_params(), params);
        assert_eq!(NtcModel::from_params(&params, &device.clone().autodiff()).to_params(), params);
        // The config describes the same shapes.
        let config = NtcModelConfig::for_params(&params);
        let fresh = config.init(&device).to_params();
        assert_eq!(fresh.zeros_like(), params.zeros_like());
    }

    #[test]
    fn forward_matches_scalar_reference() {
        let mut rng = Rng::from_state(2);
        let params = small_params(&mut rng);
        let device = Device::flex();
        let model = NtcModel::from_params(&params, &device);
        let b = 40;
        let lc = params.latent_channels();
        let oc = params.output_channels();
        let uv = random_uv(&mut rng, b);
        let mask = random_mask(&mut rng, b, lc);
        assert!(mask.contains(&0.0));
        let noise: Vec<f32> = (0..4 * b * lc).map(|_| sym(&mut rng, 0.1)).collect();

        for with_noise in [false, true] {
            let noise_tensor = with_noise.then(|| Tensor::<3>::from_data(TensorData::new(noise.clone(), [4, b, lc]), &device));
            let out = model.forward(tensor2(&uv, b, 2, &device), tensor2(&mask, b, lc, &device), noise_tensor);
            assert_eq!(out.dims(), [b, oc]);
            let out = read_f32(out);
            let mut max_diff = 0.0f64;
            for i in 0..b {
                let corner_noise: [Vec<f32>; 4] = std::array::from_fn(|k| noise[(k * b + i) * lc..(k * b + i + 1) * lc].to_vec());
                let expect = reference(&params, uv[2 * i], uv[2 * i + 1], &mask[i * lc..(i + 1) * lc], with_noise.then_some(&corner_noise));
                for o in 0..oc {
                    max_diff = max_diff.max((f64::from(out[i * oc + o]) - expect[o]).abs());
                }
            }
            assert!(max_diff <= 1e-5, "noise {with_noise}: max abs diff {max_diff}");
        }

        // decode = clamp(forward).
        let decoded = read_f32(model.decode(tensor2(&uv, b, 2, &device), tensor2(&mask, b, lc, &device)));
        assert!(decoded.iter().all(|x| (0.0..=1.0).contains(x)));
    }

    #[test]
    fn loss_and_grads_match_finite_differences() {
        let mut rng = Rng::from_state(3);
        let params = small_params(&mut rng);
        let b = 24;
        let lc = params.latent_channels();
        let oc = params.output_channels();
        let uv = random_uv(&mut rng, b);
        let mask = random_mask(&mut rng, b, lc);
        let target: Vec<f32> = (0..b * oc).map(|_| rng.next_f32()).collect();
        let weight: Vec<f32> = (0..b * oc).map(|_| if rng.next_f32() < 0.2 { 0.0 } else { 0.5 + rng.next_f32() }).collect();

        let (loss_value, grads) = loss_and_grads(&params, &uv, &mask, &target, &weight, &Device::flex());
        let expect_loss = reference_loss(&params, &uv, &mask, &target, &weight);
        assert!((f64::from(loss_value) - expect_loss).abs() <= 1e-5 * expect_loss.max(1.0), "loss {loss_value} vs {expect_loss}");

        // Central differences of the f64 reference loss, over *every* parameter. The perturbed
        // value is an f32, so the actual step (p+ - p-) is used as the denominator.
        let h = 1e-3f32;
        let fd = |p: &ModelParams, get: &dyn Fn(&mut ModelParams) -> &mut f32| -> f64 {
            let mut plus = p.clone();
            let mut minus = p.clone();
            let x = *get(&mut plus);
            *get(&mut plus) = x + h;
            *get(&mut minus) = x - h;
            let step = f64::from(*get(&mut plus)) - f64::from(*get(&mut minus));
            (reference_loss(&plus, &uv, &mask, &target, &weight) - reference_loss(&minus, &uv, &mask, &target, &weight)) / step
        };
        // Tolerance: burn accumulates in f32 (≈1e-6 relative), the FD of the f64 reference has
        // O(h²) truncation error; 1e-4 absolute + 1e-3 relative covers both with margin while
        // catching any layout or indexing error (those are O(gradient)).
        let check = |what: String, analytic: f32, numeric: f64| {
            let tol = 1e-4 + 1e-3 * numeric.abs();
            assert!((f64::from(analytic) - numeric).abs() <= tol, "{what}: autodiff {analytic} vs finite difference {numeric}");
        };
        let mut checked = 0;
        let mut nonzero = 0;
        for gi in 0..params.grids.len() {
            for i in 0..params.grids[gi].values.len() {
                let n = fd(&params, &|p: &mut ModelParams| &mut p.grids[gi].values[i]);
                check(format!("grid {gi} value {i}"), grads.grids[gi].values[i], n);
                checked += 1;
                nonzero += usize::from(n != 0.0);
            }
        }
        for li in 0..params.layers.len() {
            for i in 0..params.layers[li].weights.len() {
                let n = fd(&params, &|p: &mut ModelParams| &mut p.layers[li].weights[i]);
                check(format!("layer {li} weight {i}"), grads.layers[li].weights[i], n);
                checked += 1;
                nonzero += usize::from(n != 0.0);
            }
            for i in 0..params.layers[li].biases.len() {
                let n = fd(&params, &|p: &mut ModelParams| &mut p.layers[li].biases[i]);
                check(format!("layer {li} bias {i}"), grads.layers[li].biases[i], n);
                checked += 1;
                nonzero += usize::from(n != 0.0);
            }
        }
        assert_eq!(checked, params.parameter_count());
        assert!(nonzero > checked / 2, "too few non-zero gradients ({nonzero}/{checked})");
    }

    #[test]
    fn trainer_lowers_the_loss() {
        let mut rng = Rng::from_state(4);
        let shapes = [(6, 6, 4), (3, 3, 4)];
        let teacher = random_params(&mut rng, &shapes, 2, &[16], 3);
        let mut student = random_params(&mut rng, &shapes, 2, &[16], 3);
        student.grids.iter_mut().for_each(|g| g.values.iter_mut().for_each(|x| *x *= 0.3));
        let device = Device::flex();
        let b = 128;
        let lc = teacher.latent_channels();
        let oc = teacher.output_channels();
        let uv = random_uv(&mut rng, b);
        let mask = vec![1.0; b * lc];
        let target: Vec<f32> =
            (0..b).flat_map(|i| reference(&teacher, uv[2 * i], uv[2 * i + 1], &mask[..lc], None)).map(|x| x as f32).collect();
        let weight = vec![1.0; b * oc];

        let mut trainer = BurnTrainer::new(&student, &device, 1e-2, 5e-3);
        let first = trainer.step(&uv, &mask, &target, &weight, 1.0, None, true);
        let mut last = first;
        for i in 0..300 {
            let noise = (i % 3 == 2).then_some(0.01);
            let train_grids = i % 5 != 4;
            last = trainer.step(&uv, &mask, &target, &weight, 1.0, noise, train_grids);
        }
        let (final_loss, _) = loss_and_grads(&trainer.params(), &uv, &mask, &target, &weight, &device);
        assert!(last.is_finite() && final_loss.is_finite());
        assert!(final_loss < 0.25 * first, "loss {first} -> {final_loss}");

        // Grid values stay in the quantisation range.
        assert!(trainer.params().grids.iter().flat_map(|g| &g.values).all(|x| x.abs() <= 1.0));

        // Frozen grids stay put.
        let before = trainer.params();
        trainer.step(&uv, &mask, &target, &weight, 1.0, None, false);
        let after = trainer.params();
        assert_eq!(before.grids, after.grids);
        assert_ne!(before.layers, after.layers);
    }

    /// Throughput at the default-ish shapes (run with `--ignored --nocapture`).
    #[test]
    #[ignore = "benchmark"]
    fn bench_flex_b4096() {
        let mut rng = Rng::from_state(5);
        let params = random_params(&mut rng, &[(128, 128, 8), (64, 64, 8)], 3, &[64, 48, 32], 9);
        assert_eq!(params.mlp_inputs(), 28);
        let device = Device::flex();
        let b = 4096;
        let lc = params.latent_channels();
        let oc = params.output_channels();
        let uv = random_uv(&mut rng, b);
        let mask = vec![1.0; b * lc];
        let target: Vec<f32> = (0..b * oc).map(|_| rng.next_f32()).collect();
        let weight = vec![1.0; b * oc];

        let _ = loss_and_grads(&params, &uv, &mask, &target, &weight, &device);
        let n = 10;
        let start = std::time::Instant::now();
        for _ in 0..n {
            let _ = loss_and_grads(&params, &uv, &mask, &target, &weight, &device);
        }
        let per = start.elapsed().as_secs_f64() / f64::from(n);
        println!("loss_and_grads B={b}: {:.1} ms ({:.1}/s)", per * 1e3, 1.0 / per);

        let mut trainer = BurnTrainer::new(&params, &device, 1e-2, 5e-3);
        trainer.step(&uv, &mask, &target, &weight, 1.0, None, true);
        for (noise, label) in [(None, "no noise"), (Some(0.05), "noise")] {
            let start = std::time::Instant::now();
            for _ in 0..n {
                trainer.step(&uv, &mask, &target, &weight, 1.0, noise, true);
            }
            let per = start.elapsed().as_secs_f64() / f64::from(n);
            println!("BurnTrainer::step B={b} ({label}): {:.1} ms ({:.1} steps/s)", per * 1e3, 1.0 / per);
        }
    }
}
