//! The CPU reference of the model math in [`crate::model::params`], one texel at a time. Plain Rust, no
//! burn: this is what the GPU shader and the trainers are checked against.

use crate::model::input::InputLayout;
use crate::model::params::{LOD_INPUT_SCALE, ModelParams, pe_angular_frequency};

/// Bilinear clamp-to-edge fetch: the four corner cell indices (`y * width + x`) and their weights,
/// in the order `(x0,y0), (x1,y0), (x0,y1), (x1,y1)`.
#[must_use]
pub(crate) fn bilinear_corners(u: f32, v: f32, width: u32, height: u32) -> ([usize; 4], [f32; 4]) {
    let gx = u * width as f32 - 0.5;
    let gy = v * height as f32 - 0.5;
    let fx0 = gx.floor();
    let fy0 = gy.floor();
    let fx = gx - fx0;
    let fy = gy - fy0;
    let max_x = width.saturating_sub(1) as f32;
    let max_y = height.saturating_sub(1) as f32;
    let x0 = fx0.clamp(0.0, max_x) as usize;
    let x1 = (fx0 + 1.0).clamp(0.0, max_x) as usize;
    let y0 = fy0.clamp(0.0, max_y) as usize;
    let y1 = (fy0 + 1.0).clamp(0.0, max_y) as usize;
    let w = width as usize;
    ([y0 * w + x0, y0 * w + x1, y1 * w + x0, y1 * w + x1], [(1.0 - fx) * (1.0 - fy), fx * (1.0 - fy), (1.0 - fx) * fy, fx * fy])
}

/// Writes the MLP input for texel `(u, v)` at mip level `level`: the grids of its pyramid level
/// ([`ModelParams::pyramid_level`]), their positional encoding and the LOD input of its LOD level
/// ([`ModelParams::lod_level`]).
pub fn features_at_level(params: &ModelParams, u: f32, v: f32, level: u32, mask: &[f32], features: &mut [f32]) {
    features_in(&params.input_layout(), params, u, v, level, mask, features);
}

/// [`features_at_level`] with the model's input layout given (`layout`:
/// [`ModelParams::input_layout`], made once by a caller that decodes many texels).
pub(crate) fn features_in(layout: &InputLayout, params: &ModelParams, u: f32, v: f32, level: u32, mask: &[f32], features: &mut [f32]) {
    let grids = params.level_grids(params.pyramid_level(level));
    for (slot, grid) in layout.grids().iter().zip(grids) {
        // The grid's inputs: channel c's at `slot.input(c, k)`, `c · reads + k` into its range.
        let Some(inputs) = features.get_mut(slot.inputs()) else { continue };
        let (cells, weights) = bilinear_corners(u, v, grid.width, grid.height);
        for c in 0..slot.channels {
            let m = mask.get(slot.first_channel + c).copied().unwrap_or(0.0);
            let corner = |k: usize| weights[k] * grid.values.get(cells[k] * slot.channels + c).copied().unwrap_or(0.0);
            if slot.corners {
                for (k, input) in inputs[c * 4..c * 4 + 4].iter_mut().enumerate() {
                    *input = corner(k) * m;
                }
            } else {
                let mut value = 0.0;
                for k in 0..4 {
                    value += corner(k);
                }
                inputs[c] = value * m;
            }
        }
    }
    let (w0, h0) = grids.first().map_or((1, 1), |g| (g.width, g.height));
    let px = u * w0 as f32;
    let py = v * h0 as f32;
    let first_pe = layout.pe_input(0, 0);
    if let Some(pe) = features.get_mut(first_pe..first_pe + 4 * layout.pe_frequencies()) {
        // Frequency k's values at `pe_input(k, 0..4)`: `4 · k + j` into the range.
        for (k, values) in pe.chunks_exact_mut(4).enumerate() {
            let a = pe_angular_frequency(k as u32);
            values.copy_from_slice(&[(a * px).sin(), (a * px).cos(), (a * py).sin(), (a * py).cos()]);
        }
    }
    if let Some(slot) = layout.lod_input().and_then(|i| features.get_mut(i)) {
        *slot = params.lod_level(level) as f32 * LOD_INPUT_SCALE;
    }
}

/// Scratch buffers for [`mlp_forward`], reused across texels.
#[derive(Default)]
pub(crate) struct MlpScratch {
    a: Vec<f32>,
    b: Vec<f32>,
}

/// Runs the MLP on `features`; returns all output channels (unclamped) in `scratch`'s buffer.
pub(crate) fn mlp_forward<'s>(params: &ModelParams, features: &[f32], scratch: &'s mut MlpScratch) -> &'s [f32] {
    scratch.a.clear();
    scratch.a.extend_from_slice(features);
    let last = params.layers.len().saturating_sub(1);
    for (index, layer) in params.layers.iter().enumerate() {
        scratch.b.clear();
        for o in 0..layer.outputs {
            let row = &layer.weights[o * layer.inputs..(o + 1) * layer.inputs];
            let mut z = layer.biases[o];
            for (w, x) in row.iter().zip(&scratch.a) {
                z += w * x;
            }
            scratch.b.push(if index == last { z } else { params.activation.apply(z) });
        }
        std::mem::swap(&mut scratch.a, &mut scratch.b);
    }
    &scratch.a
}
