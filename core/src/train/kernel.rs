//! The fused CPU kernel: the latent gather straight into the feature-major layout of
//! [`crate::model::batched`], the MLP forward and backward through its packing-free SIMD kernels,
//! and the bilinear scatter of latent gradients. Gradients are summed in chunk order
//! (deterministic).

use crate::base::rng::Rng;
use crate::model::batched::{Gate, backward_inputs, forward_layer, padded_len, weight_grads};
use crate::model::params::{Activation, LOD_INPUT_SCALE, LayerParams, ModelParams, pe_angular_frequency};
use crate::model::reference::bilinear_corners;
use crate::train::sampler::Batch;
use rayon::prelude::*;

/// QAT's uniform noise on the gathered latents ([`forward_backward`]).
pub enum Noise<'r> {
    /// A fresh draw from `rng` for every corner value each texel reads.
    PerRead {
        /// Half a quantisation step.
        amplitude: f32,
        /// The chunk's generator.
        rng: &'r mut Rng,
    },
    /// One draw per latent per step ([`latent_noise`]), the noisy value kept in the latent range
    /// (NTC's): every texel that reads a latent in a step sees the same noisy value.
    PerLatent {
        /// Half a quantisation step.
        amplitude: f32,
        /// The run's seed.
        seed: u64,
        /// The step.
        step: u32,
    },
}

/// lowbias32 (Chris Wellons), the GPU trainer's `hash` (train.wgsl).
#[must_use]
fn hash32(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^ (h >> 16)
}

/// The per-latent noise of latent `j` (its index among every grid value, all pyramid levels in
/// [`ModelParams::all_grids`]' order) at `step`, uniform in [−1, 1): a pure function of the seed,
/// the step and the latent, so any thread count and a resumed run draw the same. train.wgsl's
/// `latent_noise` is the same function, bit for bit.
#[must_use]
pub fn latent_noise(seed: u64, step: u32, j: u32) -> f32 {
    let s = hash32(seed as u32 ^ hash32((seed >> 32) as u32 ^ 0x9e37_79b9));
    let h =
        hash32(hash32(s ^ hash32(step.wrapping_mul(0x85eb_ca6b).wrapping_add(0x632b_e5ab))) ^ j.wrapping_mul(0x27d4_eb2f) ^ 0x2c1b_3c6d);
    (h >> 8) as f32 * (1.0 / 16_777_216.0) * 2.0 - 1.0
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
    /// `[len][latent_features]` gradient of the masked latent features (unscaled): one per channel,
    /// four (its corners') per channel of a grid that reads its corners.
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
/// run (the float ones, or their fake-quantised copies); `noise` adds QAT's uniform noise to the
/// gathered latent corner values.
///
/// Internally every activation is feature-major, `[feature][texel]` with the texels padded to a
/// whole tile (padding columns are zero in the input and in every output gradient, so they add
/// nothing to any gradient).
#[must_use]
pub fn forward_backward(params: &ModelParams, mlp: &[LayerParams], batch: &Batch, noise: Option<Noise<'_>>) -> ChunkGrads {
    let n = batch.len;
    let np = padded_len(n);
    let lc = params.latent_channels();
    let oc = params.output_channels();
    let gated = batch.gate.len() == n && n > 0;
    let Gathered { x, raw, corners, levels } = gather(params, batch, noise, gated);
    let Forward { activations, pre } = forward_layers(mlp, params.activation, x, np, true);

    // Loss gradient, `[oc][np]` (zero in the padding).
    let y = &activations[mlp.len()];
    let mut dz = vec![0.0f32; oc * np];
    let (mut weighted_sq_err, mut sq_err, mut targeted) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..n {
        for o in 0..oc {
            let j = i * oc + o;
            let w = batch.weight[j];
            if w != 0.0 {
                let d = y[o * np + i] - batch.target[j];
                weighted_sq_err += f64::from(w * d * d);
                sq_err += f64::from(d * d);
                targeted += 1.0;
                dz[o * np + i] = 2.0 * w * d;
            }
        }
    }

    // Backward. A ReLU layer's output is zero exactly where its pre-activation was ≤ 0, so the
    // activations themselves gate the gradient; another activation's derivative needs the values
    // before it (`pre`).
    let mut layer_grads: Vec<LayerParams> = mlp.iter().map(|l| LayerParams::zeros(l.inputs, l.outputs)).collect();
    let mut d_features = Vec::new();
    let mut gate_grads = Vec::new();
    for l in (0..mlp.len()).rev() {
        let layer = &mlp[l];
        let grad = &mut layer_grads[l];
        weight_grads(&dz, &activations[l], layer.inputs, np, &mut grad.weights, &mut grad.biases);
        if l == 0 {
            // Only the latent inputs need a gradient (the positional encoding is fixed): one per
            // latent feature, through the mask of its channel.
            let layout = params.input_layout();
            let lf = layout.latent_features();
            let mut da = vec![0.0f32; lf * np];
            backward_inputs(&layer.weights, layer.inputs, layer.outputs, &dz, np, lf, None, &mut da);
            d_features = vec![0.0f32; n * lf];
            for c in 0..lc {
                for f in layout.channel_inputs(c) {
                    for (i, &d) in da[f * np..f * np + n].iter().enumerate() {
                        d_features[i * lf + f] = d * batch.mask[i * lc + c];
                    }
                }
            }
            // (Options refuse budget gates with corner reads: a gate's gradient here is the
            // bilinear feature's.)
            if gated {
                let slots = batch.gate.iter().max().map_or(0, |&g| g as usize + 1);
                gate_grads = vec![0.0f32; slots * lc];
                for (i, &g) in batch.gate.iter().enumerate() {
                    let row = &mut gate_grads[g as usize * lc..(g as usize + 1) * lc];
                    for (c, r) in row.iter_mut().enumerate() {
                        *r += da[c * np + i] * raw[i * lc + c];
                    }
                }
            }
        } else {
            let mut da = vec![0.0f32; layer.inputs * np];
            let gate = match params.activation {
                Activation::Relu => Gate::Relu(&activations[l]),
                act @ Activation::Hgelu => Gate::Derivative(act, &pre[l - 1]),
            };
            backward_inputs(&layer.weights, layer.inputs, layer.outputs, &dz, np, layer.inputs, Some(gate), &mut da);
            dz = da;
        }
    }
    ChunkGrads { weighted_sq_err, sq_err, targeted, layers: layer_grads, d_features, corners, levels, gate_grads }
}

/// The gathered first-layer input of a batch: what the forward pass and the backward scatter
/// share.
struct Gathered {
    /// `[inputs][np]` features, feature-major.
    x: Vec<f32>,
    /// `[len][latent_channels]` unmasked latent values (empty unless gated).
    raw: Vec<f32>,
    /// `[len][grids]` bilinear corner cells and weights of each texel.
    corners: Vec<([usize; 4], [f32; 4])>,
    /// `[len]` pyramid level each texel read.
    levels: Vec<u32>,
}

/// The gather: features (and, with `gated`, the unmasked latent values the gate gradients need),
/// written feature-major for the first layer; `noise` adds QAT's uniform noise to the gathered
/// latent corner values.
fn gather(params: &ModelParams, batch: &Batch, noise: Option<Noise<'_>>, gated: bool) -> Gathered {
    let n = batch.len;
    let np = padded_len(n);
    let layout = params.input_layout();
    let lc = layout.latent_channels();
    let inputs = layout.width();
    let grid_count = params.grids.len();
    let mut noise = noise;
    let mut raw = if gated { vec![0.0f32; n * lc] } else { Vec::new() };
    let mut x = vec![0.0f32; inputs * np];
    let mut corners = Vec::with_capacity(n * grid_count);
    // Where each grid's values start among every grid value (the per-latent noise's index).
    let grid_bases: Vec<u32> = params
        .all_grids()
        .scan(0u32, |at, g| {
            let base = *at;
            *at += g.values.len() as u32;
            Some(base)
        })
        .collect();
    // Per texel its LOD level (the LOD input) and the pyramid level whose grids it reads.
    let lods: Vec<u32> = (0..n).map(|i| params.lod_level(batch.level.get(i).copied().unwrap_or(0))).collect();
    let levels: Vec<u32> = (0..n).map(|i| params.pyramid_level(batch.level.get(i).copied().unwrap_or(0))).collect();
    // First the corners of every texel and grid, touching each corner's cells: these loads do not
    // depend on each other, so the CPU keeps many cache misses in flight, and the gather below
    // (whose adds wait on its loads) finds the cells in cache.
    let mut touched = 0.0f32;
    for (uv, &level) in batch.uv.chunks_exact(2).zip(&levels) {
        let (u, v) = (uv[0], uv[1]);
        for grid in params.level_grids(level) {
            let ch = grid.channels as usize;
            let (cells, weights) = bilinear_corners(u, v, grid.width, grid.height);
            for cell in cells {
                touched += grid.values.get(cell * ch).copied().unwrap_or(0.0);
            }
            corners.push((cells, weights));
        }
    }
    std::hint::black_box(touched);
    for i in 0..n {
        let (u, v) = (batch.uv[2 * i], batch.uv[2 * i + 1]);
        let mask = &batch.mask[i * lc..(i + 1) * lc];
        let grids = params.level_grids(levels[i]);
        let first_grid = params.grids_level(levels[i]) * grid_count;
        for (gi, ((grid, slot), &(cells, weights))) in
            grids.iter().zip(layout.grids()).zip(&corners[i * grid_count..(i + 1) * grid_count]).enumerate()
        {
            let (ch, channel) = (slot.channels, slot.first_channel);
            let corner_values: [&[f32]; 4] = std::array::from_fn(|k| &grid.values[cells[k] * ch..(cells[k] + 1) * ch]);
            let base = grid_bases.get(first_grid + gi).copied().unwrap_or(0);
            for c in 0..ch {
                let mut value = 0.0;
                let m = mask[channel + c];
                for k in 0..4 {
                    let mut g = corner_values[k][c];
                    match noise.as_mut() {
                        Some(Noise::PerRead { amplitude, rng }) => g += (rng.next_f32() * 2.0 - 1.0) * *amplitude,
                        Some(Noise::PerLatent { amplitude, seed, step }) => {
                            let j = base + (cells[k] * ch + c) as u32;
                            g = (g + latent_noise(*seed, *step, j) * *amplitude)
                                .clamp(crate::model::quant::LATENT_RANGE[0], crate::model::quant::LATENT_RANGE[1]);
                        }
                        None => {}
                    }
                    let weighted = weights[k] * g;
                    if slot.corners {
                        x[slot.input(c, k) * np + i] = weighted * m;
                    }
                    value += weighted;
                }
                if !slot.corners {
                    x[slot.input(c, 0) * np + i] = value * m;
                }
                if let Some(r) = raw.get_mut(i * lc + channel + c) {
                    *r = value;
                }
            }
        }
        let (w0, h0) = grids.first().map_or((1, 1), |g| (g.width, g.height));
        let (px, py) = (u * w0 as f32, v * h0 as f32);
        for k in 0..layout.pe_frequencies() {
            let a = pe_angular_frequency(k as u32);
            for (j, value) in [(a * px).sin(), (a * px).cos(), (a * py).sin(), (a * py).cos()].into_iter().enumerate() {
                x[layout.pe_input(k, j) * np + i] = value;
            }
        }
        if let Some(lod) = layout.lod_input() {
            x[lod * np + i] = lods[i] as f32 * LOD_INPUT_SCALE;
        }
    }

    Gathered { x, raw, corners, levels }
}

/// What [`forward_layers`] computes.
struct Forward {
    /// Every layer's activations, the features first, each `[outputs][np]`.
    activations: Vec<Vec<f32>>,
    /// Every hidden layer's values before its activation, `[outputs][np]` (empty for `ReLU`,
    /// whose backward pass gates on its outputs, and unless asked).
    pre: Vec<Vec<f32>>,
}

/// The forward pass of `mlp` with `act` on its hidden layers, on feature-major `[inputs][np]`
/// features `x`; with `keep_pre`, a non-`ReLU` activation's inputs too.
fn forward_layers(mlp: &[LayerParams], act: Activation, x: Vec<f32>, np: usize, keep_pre: bool) -> Forward {
    // Forward: a_l = act(W_l · a_{l-1} + b_l), except the last layer (linear).
    let mut activations: Vec<Vec<f32>> = Vec::with_capacity(mlp.len() + 1);
    let mut pre = Vec::new();
    activations.push(x);
    let last = mlp.len().saturating_sub(1);
    for (l, layer) in mlp.iter().enumerate() {
        let mut z = vec![0.0f32; layer.outputs * np];
        let hidden = l != last;
        let mut p = (hidden && keep_pre && act != Activation::Relu).then(|| vec![0.0f32; layer.outputs * np]);
        forward_layer(&layer.weights, &layer.biases, layer.inputs, &activations[l], np, hidden.then_some(act), p.as_deref_mut(), &mut z);
        pre.extend(p);
        activations.push(z);
    }
    Forward { activations, pre }
}

/// Per texel of `batch`, its weighted squared error `Σ weight · (y − t)²` over its outputs under
/// the model `params` with the layers `mlp` (no noise, no gradients): what the error-driven
/// sampler's error map measures. `[len]`.
#[must_use]
pub(crate) fn weighted_texel_errors(params: &ModelParams, mlp: &[LayerParams], batch: &Batch) -> Vec<f32> {
    let n = batch.len;
    let np = padded_len(n);
    let oc = params.output_channels();
    let Gathered { x, .. } = gather(params, batch, None, false);
    let Forward { activations, .. } = forward_layers(mlp, params.activation, x, np, false);
    let Some(y) = activations.last() else { return vec![0.0; n] };
    (0..n)
        .map(|i| {
            (0..oc)
                .map(|o| {
                    let j = i * oc + o;
                    let d = y[o * np + i] - batch.target[j];
                    batch.weight[j] * d * d
                })
                .sum()
        })
        .collect()
}

/// Cell bands per grid and per thread that [`scatter_grid_grads`] adds into in parallel. The
/// count changes which thread adds into a cell, never the order of its terms: every cell receives
/// them in chunk, texel and corner order, as a serial scatter would (the same bits for any thread
/// count).
const SCATTER_BANDS_PER_THREAD: usize = 2;

/// Adds the chunks' latent-feature gradients into the grid gradients (bilinear scatter), chunk
/// after chunk. Each grid's cells are split into bands added in parallel; within a cell the terms
/// arrive in chunk, texel and corner order, as in a serial scatter (the same bits).
pub(crate) fn scatter_grid_grads(params: &ModelParams, chunks: &[ChunkGrads], grads: &mut ModelParams) {
    let layout = params.input_layout();
    let lf = layout.latent_features();
    let grid_count = params.grids.len();
    if grid_count == 0 || lf == 0 || chunks.iter().all(|c| c.d_features.is_empty()) {
        return;
    }
    let levels = params.pyramid_levels();
    let bands_per_grid = (rayon::current_num_threads() * SCATTER_BANDS_PER_THREAD).max(2);
    // (level, grid within the level, its first feature, first cell of the band, the band).
    let mut bands: Vec<(u32, usize, usize, usize, &mut [f32])> = Vec::new();
    // Every grid of every level, level 0 first (`all_grids_mut`'s order); a level's grid g reads
    // the inputs of level 0's grid g.
    for (j, grid) in grads.all_grids_mut().enumerate() {
        let (level, g) = ((j / grid_count) as u32, j % grid_count);
        let offset = layout.grids().get(g).map_or(lf, |slot| slot.first_input);
        let ch = (grid.channels as usize).max(1);
        let cells = grid.values.len() / ch;
        let band_cells = cells.div_ceil(bands_per_grid).max(1);
        for (b, band) in grid.values.chunks_mut(band_cells * ch).enumerate() {
            bands.push((level, g, offset, b * band_cells, band));
        }
    }
    let spans = chunk_cell_spans(chunks, grid_count, levels, lf);
    bands.par_iter_mut().for_each(|(level, g, offset, first_cell, band)| {
        let (ch, reads) = layout.grids().get(*g).map_or((1, 1), |slot| (slot.channels.max(1), slot.reads()));
        let band_cells = band.len() / ch.max(1);
        for (chunk, spans) in chunks.iter().zip(&spans) {
            // A chunk none of whose corners fall in the band adds nothing to it.
            let (lo, hi) = spans[*level as usize * grid_count + *g];
            if hi <= *first_cell || lo >= *first_cell + band_cells {
                continue;
            }
            let n = chunk.d_features.len() / lf;
            for i in 0..n {
                if chunk.levels.get(i).copied().unwrap_or(0).min(levels - 1) != *level {
                    continue;
                }
                let (cells, weights) = chunk.corners[i * grid_count + *g];
                let d = &chunk.d_features[i * lf + *offset..i * lf + *offset + ch * reads];
                for k in 0..4 {
                    let Some(local) = cells[k].checked_sub(*first_cell).filter(|&c| c < band_cells) else { continue };
                    let values = band[local * ch..(local + 1) * ch].iter_mut();
                    if reads == 4 {
                        // Corner k's own feature of each channel.
                        for (value, dv) in values.zip(d.iter().skip(k).step_by(4)) {
                            *value += weights[k] * dv;
                        }
                    } else {
                        for (value, dv) in values.zip(d) {
                            *value += weights[k] * dv;
                        }
                    }
                }
            }
        }
    });
}

/// Per chunk, per (pyramid level, grid) in level-major order, the cells its corners touch as
/// `[first, last + 1)` (`(usize::MAX, 0)` where it touches none): a bilinear read's corners are
/// row-major, its first corner the lowest cell and its fourth the highest.
fn chunk_cell_spans(chunks: &[ChunkGrads], grid_count: usize, levels: u32, lf: usize) -> Vec<Vec<(usize, usize)>> {
    chunks
        .par_iter()
        .map(|chunk| {
            let mut spans = vec![(usize::MAX, 0); levels as usize * grid_count];
            for i in 0..chunk.d_features.len() / lf {
                let level = chunk.levels.get(i).copied().unwrap_or(0).min(levels - 1) as usize;
                for g in 0..grid_count {
                    let (cells, _) = chunk.corners[i * grid_count + g];
                    let span = &mut spans[level * grid_count + g];
                    *span = (span.0.min(cells[0]), span.1.max(cells[3] + 1));
                }
            }
            spans
        })
        .collect()
}

/// Adds the chunks' weight and bias gradients into `grads` (zeroed by the caller), chunk after
/// chunk for every value: the same bits as a serial sum, with the values split across threads.
pub(crate) fn sum_layer_grads(chunks: &[ChunkGrads], grads: &mut [LayerParams]) {
    for (l, g) in grads.iter_mut().enumerate() {
        sum_in_chunk_order(&mut g.weights, chunks, |c| c.layers.get(l).map(|layer| layer.weights.as_slice()));
        sum_in_chunk_order(&mut g.biases, chunks, |c| c.layers.get(l).map(|layer| layer.biases.as_slice()));
    }
}

/// Adds `part` of every chunk into `out`, in chunk order for each value, spans of `out` in
/// parallel.
fn sum_in_chunk_order(out: &mut [f32], chunks: &[ChunkGrads], part: impl Fn(&ChunkGrads) -> Option<&[f32]> + Sync) {
    const SPAN: usize = 1024;
    out.par_chunks_mut(SPAN).enumerate().for_each(|(s, out)| {
        for src in chunks.iter().filter_map(&part) {
            for (a, b) in out.iter_mut().zip(src.get(s * SPAN..).unwrap_or(&[])) {
                *a += b;
            }
        }
    });
}

/// Loss and gradient of every parameter on one batch, without noise: the fused kernel's answer to
/// what burn's autodiff computes (`loss = Σ weight·(y − t)² / len`).
#[must_use]
pub fn loss_and_grads(params: &ModelParams, batch: &Batch) -> (f32, ModelParams) {
    loss_and_grads_with(params, batch, None)
}

/// [`loss_and_grads`] with QAT's noise on the latents.
#[must_use]
pub fn loss_and_grads_with(params: &ModelParams, batch: &Batch, noise: Option<Noise<'_>>) -> (f32, ModelParams) {
    let chunk = forward_backward(params, &params.layers, batch, noise);
    let mut grads = params.zeros_like();
    scatter_grid_grads(params, std::slice::from_ref(&chunk), &mut grads);
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

/// The features the gather writes for `batch`, texel-major (`[len][inputs]`): what the
/// input-layout consumer test (`train::input_consumers`) reads.
#[cfg(test)]
pub(crate) fn gathered_features(params: &ModelParams, batch: &Batch) -> Vec<f32> {
    let inputs = params.mlp_inputs();
    let np = padded_len(batch.len);
    let Gathered { x, .. } = gather(params, batch, None, false);
    (0..batch.len).flat_map(|i| (0..inputs).map(move |f| (f, i))).map(|(f, i)| x[f * np + i]).collect()
}

#[cfg(test)]
mod tests {
    use super::{ChunkGrads, forward_backward, latent_noise, scatter_grid_grads};
    use crate::base::rng::Rng;
    use crate::options::CompressOptions;
    use crate::train::sampler::{Batch, Sampler};

    /// The scatter of a sorted batch's chunks, whose bands skip the chunks that touch none of
    /// their cells, adds what each chunk's own scatter adds.
    #[test]
    fn the_scatter_of_sorted_chunks_adds_each_chunks_own_scatter() {
        let set = crate::train::sampler::tests_support::set();
        let (layout, _) = crate::analyse::analyse(&set, &CompressOptions::default()).expect("layout");
        let params = crate::train::init::initial_params(&set, &layout, 1);
        let sampler = Sampler::new(&set, &layout);
        let mut draws = sampler.draw(&mut Rng::new(1, 2, 3), 4 * 64);
        draws.sort_unstable();
        let chunks: Vec<ChunkGrads> = draws
            .chunks(64)
            .map(|d| {
                let mut batch = Batch::default();
                sampler.fill_draws(d, 64, &mut batch);
                forward_backward(&params, &params.layers, &batch, None)
            })
            .collect();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().expect("pool");
        let mut together = params.zeros_like();
        pool.install(|| scatter_grid_grads(&params, &chunks, &mut together));
        let mut summed = params.zeros_like();
        for chunk in &chunks {
            let mut one = params.zeros_like();
            scatter_grid_grads(&params, std::slice::from_ref(chunk), &mut one);
            for (s, o) in summed.all_grids_mut().zip(one.all_grids()) {
                s.values.iter_mut().zip(&o.values).for_each(|(s, o)| *s += o);
            }
        }
        let (mut largest, mut moved) = (0.0f32, 0);
        for (t, s) in together.all_grids().zip(summed.all_grids()) {
            for (a, b) in t.values.iter().zip(&s.values) {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} against {b}");
                largest = largest.max(b.abs());
                moved += usize::from(*b != 0.0);
            }
        }
        assert!(largest > 0.0 && moved > 10, "{moved} cells received gradients, the largest {largest}");
    }

    /// The per-latent noise is a function of (seed, step, latent): uniform in [−1, 1), another
    /// draw at another step, seed or latent.
    #[test]
    fn per_latent_noise_is_uniform_and_a_function_of_its_inputs() {
        let draws: Vec<f32> = (0..100_000).map(|j| latent_noise(7, 3, j)).collect();
        assert!(draws.iter().all(|d| (-1.0..1.0).contains(d)));
        let mean = draws.iter().map(|&d| f64::from(d)).sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|&d| f64::from(d).powi(2)).sum::<f64>() / draws.len() as f64 - mean * mean;
        assert!(mean.abs() < 0.01 && (var - 1.0 / 3.0).abs() < 0.01, "mean {mean}, variance {var}");
        assert_eq!(latent_noise(7, 3, 11).to_bits(), draws[11].to_bits());
        let others = [latent_noise(7, 4, 11), latent_noise(8, 3, 11), latent_noise(7, 3, 12), latent_noise(7 | 1 << 40, 3, 11)];
        assert!(others.iter().all(|&o| o.to_bits() != draws[11].to_bits()), "{others:?} vs {}", draws[11]);
    }
}
