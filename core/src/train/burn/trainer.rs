//! [`BurnTrainer`]: Adam on a burn device (the shared constants of [`crate::train::adam`], in
//! tensor form), with separate grid / MLP learning rates and optional QAT noise; and
//! [`loss_and_grads`], the gradient the fused CPU kernel is tested against.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::Distribution;

use crate::model::params::ModelParams;
use crate::train::adam::{ADAM_BETA1, ADAM_BETA2, ADAM_EPS as ADAM_EPSILON};
use crate::train::burn::model::{LATENT_RANGE, NtcModel, loss, read_f32};

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
    /// `range` when given; returns the new leaf. With `adam.sparse`, a value whose gradient is
    /// exactly zero keeps its value and moments, as the fused trainers' sparse updates.
    fn update(
        &mut self,
        param: &Param<Tensor<D>>,
        grad: Tensor<D>,
        lr: f32,
        step: i32,
        range: Option<[f32; 2]>,
        adam: AdamOptions,
    ) -> Param<Tensor<D>> {
        let beta2 = adam.beta2;
        let untouched = adam.sparse.then(|| grad.clone().equal_elem(0.0));
        let mut m = self.m.clone().mul_scalar(ADAM_BETA1).add(grad.clone().mul_scalar(1.0 - ADAM_BETA1));
        let mut v = self.v.clone().mul_scalar(beta2).add(grad.square().mul_scalar(1.0 - beta2));
        let bias1 = 1.0 - ADAM_BETA1.powi(step);
        let bias2 = 1.0 - beta2.powi(step);
        let mut delta = m.clone().div_scalar(bias1).div(v.clone().div_scalar(bias2).sqrt().add_scalar(ADAM_EPSILON)).mul_scalar(lr);
        if let Some(untouched) = untouched {
            m = m.mask_where(untouched.clone(), self.m.clone());
            v = v.mask_where(untouched.clone(), self.v.clone());
            delta = delta.mask_fill(untouched, 0.0);
        }
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

/// Adam's β2 and sparse updates ([`crate::options::OptimiserConfig::adam_beta2`],
/// [`crate::options::OptimiserConfig::sparse_updates`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamOptions {
    /// β2.
    pub beta2: f32,
    /// Whether a value without a gradient keeps its value and moments.
    pub sparse: bool,
}

impl Default for AdamOptions {
    /// The classic recipe's: β2 0.99, dense.
    fn default() -> Self {
        Self { beta2: ADAM_BETA2, sparse: false }
    }
}

/// Adam trainer of an [`NtcModel`] on one device (Flex or wgpu), with its own learning rates for
/// the latent grids and the MLP.
///
/// Adam: β1 0.9, β2 and sparse updates as [`AdamOptions`] (by default 0.99, dense), epsilon
/// `1e-8`, bias-corrected; the grids count their own steps
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
    /// β2 and sparse updates.
    adam: AdamOptions,
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
        let adam = AdamOptions::default();
        Self { model, device, grid_lr, mlp_lr, grid_moments, weight_moments, bias_moments, grid_steps: 0, mlp_steps: 0, adam }
    }

    /// With Adam's β2 and sparse updates from `adam`.
    #[must_use]
    pub fn with_adam(mut self, adam: AdamOptions) -> Self {
        self.adam = adam;
        self
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
                    grid.values = moments.update(&grid.values, grad, lr, self.grid_steps, Some(LATENT_RANGE), self.adam);
                }
            }
        }
        self.mlp_steps += 1;
        let lr = self.mlp_lr;
        let moments = self.weight_moments.iter_mut().zip(&mut self.bias_moments);
        for (layer, (weight_moments, bias_moments)) in self.model.layers.iter_mut().zip(moments) {
            if let Some(grad) = layer.weight.val().grad_remove(&mut grads) {
                layer.weight = weight_moments.update(&layer.weight, grad, lr, self.mlp_steps, None, self.adam);
            }
            if let (Some(bias), Some(bias_moments)) = (&layer.bias, bias_moments)
                && let Some(grad) = bias.val().grad_remove(&mut grads)
            {
                layer.bias = Some(bias_moments.update(bias, grad, lr, self.mlp_steps, None, self.adam));
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
