//! Where training starts: the seeded initialisation, or a bundle's model for a fine-tune.

use crate::base::rng::Rng;
use crate::model::layout::ModelLayout;
use crate::model::params::ModelParams;
use crate::options::CompressOptions;
use crate::set::TextureSet;
use crate::train::TrainError;

/// Initial parameters: latents uniform in ±0.25, He-uniform weights, output biases at each
/// channel's mean value. A grid that reads its corners starts with the four columns of each of
/// its channels equal, the column the bilinear model draws: training starts at that model.
#[must_use]
pub fn initial_params(set: &TextureSet, layout: &ModelLayout, seed: u64) -> ModelParams {
    let mut bilinear = layout.clone();
    for g in bilinear.grids.iter_mut().chain(&mut bilinear.mip_grids) {
        g.corners = false;
    }
    with_corner_reads(bilinear_params(set, &bilinear, seed), layout)
}

/// `params` (a bilinear model's) with the grids of `layout` that read their corners doing so, each
/// of their channels' first-layer column repeated for its four corners (the same decoded values).
fn with_corner_reads(mut params: ModelParams, layout: &ModelLayout) -> ModelParams {
    if !layout.grids.iter().any(|g| g.corners) {
        return params;
    }
    let lc = params.latent_channels();
    let old_inputs = params.mlp_inputs();
    for (grid, shape) in params.all_grids_mut().zip(layout.grids.iter().chain(&layout.mip_grids)) {
        grid.corners = shape.corners;
    }
    let (inputs, lf) = (params.mlp_inputs(), params.latent_features());
    // Each old input's new columns: a channel's one or four, then the positional encoding's and
    // the LOD input's, moved past the new latent features.
    let columns: Vec<std::ops::Range<usize>> =
        (0..old_inputs).map(|i| if i < lc { params.channel_inputs(i) } else { i - lc + lf..i - lc + lf + 1 }).collect();
    if let Some(first) = params.layers.first_mut() {
        let mut weights = vec![0.0; first.outputs * inputs];
        for o in 0..first.outputs {
            for (i, to) in columns.iter().enumerate() {
                for j in to.clone() {
                    weights[o * inputs + j] = first.weights[o * old_inputs + i];
                }
            }
        }
        first.inputs = inputs;
        first.weights = weights;
    }
    params
}

/// [`initial_params`] of a layout whose grids all read bilinear values.
fn bilinear_params(set: &TextureSet, layout: &ModelLayout, seed: u64) -> ModelParams {
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
                let ch = texture.info.channels as usize;
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

/// Learning rates of a fine-tune (`CompressOptions::init_from`), relative to the options'.
pub(crate) const FINE_TUNE_LEARNING_RATE_SCALE: f32 = 0.3;

/// The largest grid learning rate of a fine-tune: the classic recipe's 0.02 at
/// [`FINE_TUNE_LEARNING_RATE_SCALE`]. A fine-tune starts from latents already placed for their
/// rounding; on `sample_textures/bricks` (400 steps, then 40 from the bundle) NTC's rate at that
/// scale lost 0.15 dB, this one gained 0.05 dB (docs/decisions/034-ntc-recipe-default.md).
pub(crate) const FINE_TUNE_MAX_GRID_LEARNING_RATE: f32 = 0.02 * FINE_TUNE_LEARNING_RATE_SCALE;

/// The parameters training starts from: `options.init_from`'s model (dequantised) when given, a
/// fine-tune, else the seeded initialisation.
pub fn starting_params(set: &TextureSet, layout: &ModelLayout, options: &CompressOptions) -> Result<ModelParams, TrainError> {
    let mut fresh = initial_params(set, layout, options.schedule.seed);
    match options.schedule.latent_init {
        crate::options::LatentInit::Noise => {}
        crate::options::LatentInit::Pca => pca_latents(set, layout, &mut fresh, PCA_LATENT_STD),
        crate::options::LatentInit::Normal => normal_latents(&mut fresh, options.schedule.seed, NORMAL_LATENT_STD),
    }
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

/// Standard deviation of [`crate::options::LatentInit::Normal`]'s latents: NTC's N(0.5, 0.25) on
/// latents in [0, 1] is N(0, 0.5) on texset's [−1, 1].
const NORMAL_LATENT_STD: f32 = 0.5;

/// Every latent of every level drawn from N(0, `std`) (Box–Muller on its own stream of the seed),
/// kept in the latent range.
fn normal_latents(params: &mut ModelParams, seed: u64, std: f32) {
    let mut rng = Rng::new(seed, 0x0004_0E4A, 0);
    let [lo, hi] = crate::model::quant::LATENT_RANGE;
    for grid in params.all_grids_mut() {
        for pair in grid.values.chunks_mut(2) {
            // 1 − u is in (0, 1]: its logarithm is finite.
            let radius = (-2.0 * (1.0 - rng.next_f64()).ln()).sqrt();
            let angle = std::f64::consts::TAU * rng.next_f64();
            let normals = [radius * angle.cos(), radius * angle.sin()];
            for (v, n) in pair.iter_mut().zip(normals) {
                *v = (n as f32 * std).clamp(lo, hi);
            }
        }
    }
}

/// Standard deviation of each principal-component latent channel at the start.
const PCA_LATENT_STD: f32 = 0.25;

/// Principal directions weaker than this fraction of the leading one's standard deviation keep
/// the noise initialisation.
const PCA_MIN_RELATIVE_SD: f64 = 0.05;

/// Replaces level 0 of every latent grid with the content's principal components: each cell's
/// feature vector is every stored map's channels (duplicates and variants once), box-filtered over
/// the cell's footprint; a grid's channel `k` starts as the projection on the `k`-th principal
/// direction of those vectors, scaled to a standard deviation of `target_std` and clamped to the
/// latent range. Channels beyond the content's dimensions, or whose direction is weaker than
/// `PCA_MIN_RELATIVE_SD` (5 %) of the leading one, keep their initial values.
pub(crate) fn pca_latents(set: &TextureSet, layout: &ModelLayout, params: &mut ModelParams, target_std: f32) {
    let stored: Vec<&crate::set::Texture> = set
        .materials
        .iter()
        .zip(&layout.textures)
        .flat_map(|(m, slots)| m.textures.iter().zip(slots).filter(|(_, s)| s.duplicate_of.is_none()).map(|(t, _)| t))
        .collect();
    let dims: usize = stored.iter().map(|t| t.info.channels as usize).sum();
    if dims == 0 {
        return;
    }
    for grid in &mut params.grids {
        let (w, h, ch) = (grid.width as usize, grid.height as usize, grid.channels as usize);
        let cells = w * h;
        // Box-filtered features, [cell][dims].
        let mut features = vec![0.0f64; cells * dims];
        let mut offset = 0;
        for t in &stored {
            let (tw, th, tc) = (t.info.width as usize, t.info.height as usize, t.info.channels as usize);
            for y in 0..h {
                let (y0, y1) = (y * th / h, ((y + 1) * th).div_ceil(h).max(y * th / h + 1).min(th));
                for x in 0..w {
                    let (x0, x1) = (x * tw / w, ((x + 1) * tw).div_ceil(w).max(x * tw / w + 1).min(tw));
                    let n = ((y1 - y0) * (x1 - x0)) as f64;
                    let cell = &mut features[(y * w + x) * dims + offset..(y * w + x) * dims + offset + tc];
                    for ty in y0..y1 {
                        for tx in x0..x1 {
                            for (c, f) in cell.iter_mut().enumerate() {
                                *f += f64::from(t.texels[(ty * tw + tx) * tc + c]) / n;
                            }
                        }
                    }
                }
            }
            offset += tc;
        }
        let mut mean = vec![0.0f64; dims];
        for cell in features.chunks_exact(dims) {
            for (m, f) in mean.iter_mut().zip(cell) {
                *m += f / cells as f64;
            }
        }
        let mut cov = vec![0.0f64; dims * dims];
        for cell in features.chunks_exact(dims) {
            for i in 0..dims {
                let di = cell[i] - mean[i];
                for j in i..dims {
                    cov[i * dims + j] += di * (cell[j] - mean[j]) / cells as f64;
                }
            }
        }
        for i in 0..dims {
            for j in 0..i {
                cov[i * dims + j] = cov[j * dims + i];
            }
        }
        let (values, vectors) = symmetric_eigen(&cov, dims);
        let mut order: Vec<usize> = (0..dims).collect();
        order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
        let leading_sd = order.first().map_or(0.0, |&e| values[e].max(0.0).sqrt());
        for (k, &e) in order.iter().take(ch).enumerate() {
            let sd = values[e].max(0.0).sqrt();
            // A direction far weaker than the leading one is rounding noise or a trace of
            // content: scaled up it would start the channel on noise, so it keeps its own.
            if sd < 1e-6 || sd < PCA_MIN_RELATIVE_SD * leading_sd {
                break;
            }
            let scale = f64::from(target_std) / sd;
            for (cell, out) in features.chunks_exact(dims).zip(grid.values.chunks_exact_mut(ch)) {
                let p: f64 = (0..dims).map(|i| (cell[i] - mean[i]) * vectors[i * dims + e]).sum();
                out[k] = ((p * scale) as f32).clamp(crate::model::quant::LATENT_RANGE[0], crate::model::quant::LATENT_RANGE[1]);
            }
        }
    }
}

/// Eigenvalues and eigenvectors (columns of `[n][n]`) of a symmetric `n × n` matrix, by cyclic
/// Jacobi rotations.
fn symmetric_eigen(matrix: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut a = matrix.to_vec();
    let mut v = vec![0.0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..64 {
        let off: f64 = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).map(|(i, j)| a[i * n + j].powi(2)).sum();
        if off < 1e-22 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-30 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    use super::{ModelParams, normal_latents, symmetric_eigen};

    /// NTC's initialisation: N(0, 0.5), kept in the latent range, the same for a seed.
    #[test]
    fn normal_latents_have_ntcs_spread() {
        let grid = |side: u32| crate::model::params::GridParams {
            width: side,
            height: side,
            channels: 8,
            values: vec![0.0; 8 * (side * side) as usize],
            corners: false,
        };
        let zero = ModelParams {
            grids: vec![grid(64), grid(33)],
            pe_frequencies: 0,
            layers: Vec::new(),
            mip_grids: Vec::new(),
            mip_group: 1,
            ..ModelParams::default()
        };
        let mut params = zero.clone();
        normal_latents(&mut params, 3, 0.5);
        let values: Vec<f32> = params.all_grids().flat_map(|g| g.values.iter().copied()).collect();
        assert!(values.len() > 1000 && values.iter().all(|v| (-1.0..=1.0).contains(v)));
        let n = values.len() as f64;
        let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let sd = (values.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / n - mean * mean).sqrt();
        // Clamping at ±2σ takes the standard deviation of N(0, 0.5) to about 0.48.
        assert!(mean.abs() < 0.05 && (0.45..0.50).contains(&sd), "mean {mean}, sd {sd}");
        let mut again = zero;
        normal_latents(&mut again, 3, 0.5);
        assert_eq!(again, params);
    }

    /// A · v = λ · v for every pair, on a matrix with known eigenvalues 1, 4 and 5.
    #[test]
    fn jacobi_finds_the_eigenpairs_of_a_symmetric_matrix() {
        let a = [4.0, 1.0, 1.0, 1.0, 2.0, -1.0, 1.0, -1.0, 4.0];
        let (values, vectors) = symmetric_eigen(&a, 3);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for (got, want) in sorted.iter().zip([1.0, 4.0, 5.0]) {
            assert!((got - want).abs() < 1e-9, "{sorted:?}");
        }
        for e in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|j| a[i * 3 + j] * vectors[j * 3 + e]).sum();
                assert!((av - values[e] * vectors[i * 3 + e]).abs() < 1e-9);
            }
        }
    }
}
