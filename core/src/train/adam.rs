//! Adam, the one optimiser: its constants are shared with burn's tensor form
//! ([`crate::train::burn::model`]).

use crate::model::params::ModelParams;
use crate::model::quant::{self};
use rayon::prelude::*;

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

pub(crate) const ADAM_BETA1: f32 = 0.9;
pub(crate) const ADAM_BETA2: f32 = 0.99;
pub(crate) const ADAM_EPS: f32 = 1e-8;

/// One Adam update of a parameter array, gradients scaled by `grad_scale` as they are read; latent
/// grids (`clamp_latents`) are projected back into the quantisation range in the same pass.
pub(crate) fn adam_update(
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
