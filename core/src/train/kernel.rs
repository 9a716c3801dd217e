//! The fused CPU kernel: latent gather, MLP forward and backward through sgemm, and the bilinear
//! scatter of latent gradients. Gradients are summed in chunk order (deterministic).

use crate::model::params::{LOD_INPUT_SCALE, LayerParams, ModelParams, pe_angular_frequency};
use crate::model::reference::bilinear_corners;
use crate::rng::Rng;
use crate::train::gemm::{Strides, gemm};
use crate::train::sampler::Batch;

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
    for g in grads.all_grids_mut() {
        for v in &mut g.values {
            *v *= scale;
        }
    }
    ((chunk.weighted_sq_err / batch.len.max(1) as f64) as f32, grads)
}
